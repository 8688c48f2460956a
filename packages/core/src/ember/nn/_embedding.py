"""embedding and embedding_bag (torch.nn.functional): table lookups built on index_select,
index_add and scatter_reduce, whose derivatives scatter the gradient back into the table rows."""

from __future__ import annotations

import numpy as np

from .. import _C
from .. import autograd as _autograd

__all__ = ["embedding", "embedding_bag"]

_INDEX_DTYPES = (_C.int64, _C.int32)


def _check_indices(indices, name: str) -> None:
    if indices.dtype not in _INDEX_DTYPES:
        raise RuntimeError(f"Expected tensor for argument #1 '{name}' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.dtype} instead (while checking arguments for embedding)")


def _padding_row(padding_idx, weight) -> int | None:
    if padding_idx is None:
        return None
    rows = weight.shape[0]
    if not -rows <= padding_idx < rows:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx + rows if padding_idx < 0 else padding_idx


def _renorm_rows(weight, flat, max_norm: float, norm_type: float) -> None:
    """Rescales, in place, every looked-up row whose norm exceeds max_norm to norm max_norm (the
    1e-7 keeps the new norm just under it, as PyTorch's embedding_renorm_)."""
    with _autograd.no_grad():
        rows = _C.unique(flat)[0]
        if rows.numel() == 0:
            return
        picked = _C.index_select(weight, 0, rows)
        norms = _C.norm(picked, norm_type, [1], True)
        scale = _C.where(norms > max_norm, max_norm / (norms + 1e-7), _C.ones_like(norms))
        weight.index_copy_(0, rows, picked * scale)


def _lookup(weight, flat, padding_row, scale_grad_by_freq: bool):
    rows = _C.index_select(weight, 0, flat)
    if scale_grad_by_freq and flat.numel():
        # value rows, gradient rows / (times the index occurs in this batch)
        _, inverse, counts = _C.unique(flat, return_inverse=True, return_counts=True)
        share = _C.unsqueeze(1.0 / _C.index_select(counts, 0, inverse).to(rows.dtype), 1)
        rows = rows * share + rows.detach() * (1 - share)
    if padding_row is not None:
        # the padding row takes no gradient: look it up detached
        rows = _C.where(_C.unsqueeze(flat == padding_row, 1), rows.detach(), rows)
    return rows


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` at `input`'s indices: output shape input.shape + (embedding_dim,).

    padding_idx rows get no gradient; max_norm renormalizes the looked-up rows of weight in
    place first; scale_grad_by_freq divides each row's gradient by its count in the batch."""
    _check_indices(input, "indices")
    if weight.dim() != 2:
        raise RuntimeError(f"'weight' must be 2-D, but got {weight.dim()}-D")
    if sparse:
        raise RuntimeError("embedding(sparse=True): Ember has no sparse tensors; use sparse=False")
    padding_row = _padding_row(padding_idx, weight)
    flat = _C.reshape(input, [-1]).to(_C.int64)
    if max_norm is not None:
        _renorm_rows(weight, flat, max_norm, norm_type)
    rows = _lookup(weight, flat, padding_row, scale_grad_by_freq)
    return _C.reshape(rows, list(input.shape) + [weight.shape[1]])


def _bag_of_each_index(input, offsets, include_last_offset: bool):
    """(flat indices, bag number of each, number of bags) from 2-D input or 1-D input + offsets."""
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a mini-batch of "
                             f"fixed length sequences. However, found offsets of type {type(offsets).__name__}")
        bags, length = input.shape
        flat = _C.reshape(input, [-1])
        return flat, np.repeat(np.arange(bags), length), bags
    if input.dim() != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.dim() != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    _check_indices(offsets, "offsets")
    starts = offsets.numpy().astype(np.int64)
    if starts.size and starts[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from "
                           f"position 0. However, got {starts[0]}")
    if np.any(np.diff(starts) < 0) or (starts.size and starts[-1] > input.shape[0]):
        raise RuntimeError(f"offsets must be non-decreasing and at most the input length {input.shape[0]}, but got "
                           f"{starts.tolist()}")
    if include_last_offset:
        if starts.size == 0:
            raise RuntimeError("include_last_offset: number of offsets should be at least 1")
        bags, ends = starts.size - 1, starts[-1]
    else:
        bags, ends = starts.size, input.shape[0]
    bag = np.searchsorted(starts[:bags], np.arange(ends), side="right") - 1 if bags else np.zeros(0, np.int64)
    flat = _C.narrow(input, 0, 0, int(ends))
    return flat, bag, bags


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, mode="mean",
                  sparse=False, per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxes of bags of embedding rows, without building the [indices, dim]
    intermediate per bag. Bags are input's rows (2-D input) or the runs starting at `offsets`
    (1-D input). padding_idx entries are left out of every bag (and of the mean's count); an
    empty bag gives zeros."""
    _check_indices(input, "indices")
    if weight.dim() != 2:
        raise RuntimeError(f"'weight' must be 2-D, but got {weight.dim()}-D")
    if mode not in ("sum", "mean", "max"):
        raise ValueError(f"mode has to be one of sum, mean or max, but got {mode}")
    if sparse:
        raise RuntimeError("embedding_bag(sparse=True): Ember has no sparse tensors; use sparse=False")
    if per_sample_weights is not None:
        if mode != "sum":
            raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. per_sample_weights is only "
                                      f"supported for mode='sum' (got mode='{mode}'). Please open a feature request "
                                      f"on GitHub.")
        if tuple(per_sample_weights.shape) != tuple(input.shape):
            raise ValueError(f"embedding_bag: If per_sample_weights ({list(per_sample_weights.shape)}) is not None, "
                             f"then it must have the same shape as the input ({list(input.shape)})")
    padding_row = _padding_row(padding_idx, weight)
    flat, bag, bags = _bag_of_each_index(input, offsets, include_last_offset)
    flat = flat.to(_C.int64)
    if max_norm is not None:
        _renorm_rows(weight, flat, max_norm, norm_type)
    keep = np.ones(flat.shape[0], dtype=bool) if padding_row is None else flat.numpy() != padding_row
    chosen = _C.from_numpy(np.flatnonzero(keep).astype(np.int64))
    bag_of = _C.from_numpy(bag[keep].astype(np.int64))
    rows = _lookup(weight, _C.index_select(flat, 0, chosen), None, scale_grad_by_freq)
    if per_sample_weights is not None:
        scales = _C.index_select(_C.reshape(per_sample_weights, [-1]), 0, chosen)
        rows = rows * _C.unsqueeze(scales, 1)
    out = _C.zeros([bags, weight.shape[1]], dtype=weight.dtype)
    if mode == "max":
        where = _C.unsqueeze(bag_of, 1).expand([bag_of.shape[0], weight.shape[1]])
        return _C.scatter_reduce(out, 0, where, rows, "amax", include_self=False)
    out = _C.index_add(out, 0, bag_of, rows)
    if mode == "mean":
        counts = np.maximum(np.bincount(bag[keep], minlength=bags), 1).astype(np.float64)
        out = out / _C.unsqueeze(_C.from_numpy(counts).to(out.dtype), 1)
    return out
