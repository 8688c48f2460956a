"""embedding and embedding_bag (torch.nn.functional): argument handling over the native ops
ember.embedding and ember._embedding_bag (native/src/ops/embedding), which check every index and
offset, reduce each bag in one pass and send gradients back to the table by sorted segment sums."""

from __future__ import annotations

from .. import _C
from .. import autograd as _autograd

__all__ = ["embedding", "embedding_bag"]

_MODES = {"sum": 0, "mean": 1, "max": 2}


def _check_weight(weight) -> None:
    if weight.dim() != 2:
        raise RuntimeError(f"'weight' must be 2-D, but got {weight.dim()}-D")


def _padding_row(padding_idx, weight) -> int:
    """padding_idx as the native ops take it: a row number, or -1 for none."""
    if padding_idx is None:
        return -1
    rows = weight.shape[0]
    if not -rows <= padding_idx < rows:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + rows if padding_idx < 0 else padding_idx


def _renorm(weight, indices, max_norm, norm_type) -> None:
    """Rescales, in place and untracked, every looked-up row whose norm exceeds max_norm (as
    PyTorch's embedding_renorm_: to max_norm / (norm + 1e-7) of itself)."""
    with _autograd.no_grad():
        _C.embedding_renorm_(weight, indices, float(max_norm), float(norm_type))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` at `input`'s indices: output shape input.shape + (embedding_dim,).

    padding_idx rows get no gradient; max_norm renormalizes the looked-up rows of weight in
    place first; scale_grad_by_freq divides each row's gradient by its count in the batch."""
    _check_weight(weight)
    if sparse:
        raise RuntimeError("embedding(sparse=True): Ember has no sparse tensors; use sparse=False")
    padding_row = _padding_row(padding_idx, weight)
    if max_norm is not None:
        _renorm(weight, input, max_norm, norm_type)
    return _C.embedding(weight, input, padding_row, scale_grad_by_freq, False)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxes of bags of embedding rows, one pass per bag. Bags are input's rows
    (2-D input) or the runs starting at `offsets` (1-D input). padding_idx entries are left out
    of every bag (and of the mean's count); an empty bag gives zeros.

    Unlike PyTorch, include_last_offset applies to 1-D input only (PyTorch drops the last row of a
    2-D input with it)."""
    _check_weight(weight)
    if mode not in _MODES:
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if sparse:
        raise RuntimeError("embedding_bag(sparse=True): Ember has no sparse tensors; use sparse=False")
    if per_sample_weights is not None and tuple(per_sample_weights.shape) != tuple(input.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not None, "
                         f"then it must have the same shape as the input ({list(input.shape)})")
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets).__name__}")
        bags, length = input.shape
        offsets = (_C.arange(0, bags * length, length, dtype=_C.int64) if length
                   else _C.zeros([bags], dtype=_C.int64))
        input = _C.reshape(input, [-1])
        if per_sample_weights is not None:
            per_sample_weights = _C.reshape(per_sample_weights, [-1])
        include_last_offset = False
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    padding_row = _padding_row(padding_idx, weight)
    if max_norm is not None:
        _renorm(weight, input, max_norm, norm_type)
    out, _ = _C._embedding_bag(weight, input, offsets, scale_grad_by_freq, _MODES[mode], False, per_sample_weights,
                               include_last_offset, padding_row)
    return out
