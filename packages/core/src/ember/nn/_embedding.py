"""one_hot, embedding and embedding_bag (torch.nn.functional). embedding and embedding_bag are
argument handling over the native ops ember.embedding and ember._embedding_bag (native/src/ops/embedding), which check every index and
offset, reduce each bag in one pass and send gradients back to the table by sorted segment sums."""

from __future__ import annotations

from .. import _C
from ..autograd._engine import _accumulates_into_grad
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled, no_grad

__all__ = ["embedding", "embedding_bag", "one_hot"]


def one_hot(tensor, num_classes=-1):
    """int64 one-hot rows: a new last dim of size num_classes (-1: max + 1)."""
    if tensor.dtype != _C.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel() and int(tensor.min().item()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if tensor.numel() and int(tensor.max().item()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = _C.arange(0, num_classes, 1, dtype=_C.int64)
    return _C.eq(_C.unsqueeze(tensor, -1), classes).to(_C.int64)

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
    with no_grad():
        _C.embedding_renorm_(weight, indices, float(max_norm), float(norm_type))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` at `input`'s indices: output shape input.shape + (embedding_dim,).

    padding_idx rows get no gradient; max_norm renormalizes the looked-up rows of weight in
    place first; scale_grad_by_freq divides each row's gradient by its count in the batch."""
    _check_weight(weight)
    padding_row = _padding_row(padding_idx, weight)
    if max_norm is not None:
        _renorm(weight, input, max_norm, norm_type)
    if not (sparse and weight.requires_grad and is_grad_enabled()):
        return _C.embedding(weight, input, padding_row, scale_grad_by_freq, False)
    out = _C.embedding(weight.detach(), input, padding_row, scale_grad_by_freq, False)
    rows = _C.reshape(input, [-1]).long()
    sources = _C.arange(0, rows.shape[0], 1, dtype=_C.int64)
    if padding_row >= 0:  # the padding row gets no gradient: its entries are left out
        sources = sources[rows != padding_row]
        rows = rows.index_select(0, sources)
    return _SparseRowGrad.apply(out, weight, rows, sources, None, scale_grad_by_freq)


def _embedding_op(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """torch.embedding (ember.embedding): the native lookup, whose sparse=True gives `weight` a
    sparse gradient as F.embedding does; a negative padding_idx means none."""
    if not sparse:
        return _C.embedding(weight, indices, padding_idx, scale_grad_by_freq, False)
    return embedding(indices, weight, padding_idx if padding_idx >= 0 else None,
                     scale_grad_by_freq=scale_grad_by_freq, sparse=True)


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
    if sparse and mode == "max":
        raise ValueError("max mode does not support sparse weights")
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
    sparse_grad = sparse and weight.requires_grad and is_grad_enabled()
    out, _ = _C._embedding_bag(weight.detach() if sparse_grad else weight, input, offsets, scale_grad_by_freq,
                               _MODES[mode], False, per_sample_weights, include_last_offset, padding_row)
    if not sparse_grad:
        return out
    # entry i of `input` sends out[bag[i]] (times its per-sample weight, over the bag's size for
    # mean) to row input[i]; padding entries and entries past the last bag send nothing
    rows = input.long()
    bags = out.shape[0]
    bag = _C.searchsorted(offsets.long(), _C.arange(0, rows.shape[0], 1, dtype=_C.int64), right=True) - 1
    keep = (bag >= 0) & (bag < bags)
    if padding_row >= 0:
        keep = keep & (rows != padding_row)
    sources = _C.arange(0, rows.shape[0], 1, dtype=_C.int64)[keep]
    rows, bag = rows.index_select(0, sources), bag.index_select(0, sources)
    scale = None
    if per_sample_weights is not None:
        scale = per_sample_weights.detach().index_select(0, sources)
    if mode == "mean":
        counts = _C.bincount(bag, minlength=bags).to(weight.dtype)
        share = 1.0 / counts.index_select(0, bag)
        scale = share if scale is None else scale * share
    return _SparseRowGrad.apply(out, weight, rows, bag, scale, scale_grad_by_freq)


class _SparseRowGrad(Function):
    """Passes `out` through; its backward gives `weight` the sparse gradient PyTorch's sparse
    embedding backward gives: one row per looked-up index, row i = grad_out[sources[i]] * scale[i],
    uncoalesced. It goes straight into weight.grad when backward() accumulates into that leaf
    (Note [sparse .grad]); elsewhere (autograd.grad, a non-leaf weight) it is returned dense."""

    @staticmethod
    def forward(ctx, out, weight, rows, sources, scale, scale_grad_by_freq):
        ctx.weight, ctx.rows, ctx.sources, ctx.scale = weight, rows, sources, scale
        ctx.scale_grad_by_freq = scale_grad_by_freq
        return out.view_as(out)

    @staticmethod
    def backward(ctx, grad):
        from .. import sparse

        weight = ctx.weight
        if ctx.needs_input_grad[1]:
            if ctx.scale_grad_by_freq:
                raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
            values = _C.reshape(grad, [-1, weight.shape[1]]).index_select(0, ctx.sources)
            if ctx.scale is not None:
                values = values * ctx.scale.unsqueeze(1)
            if weight.is_leaf and _accumulates_into_grad(weight):
                sparse._accumulate_grad(weight, sparse.SparseTensor._coo(
                    ctx.rows.unsqueeze(0), values.detach(), tuple(weight.shape)))
                weight_grad = None
            else:
                weight_grad = _C.zeros_like(weight).index_add(0, ctx.rows, values)
        else:
            weight_grad = None
        return grad, weight_grad, None, None, None, None
