"""More PyTorch names composed in Python from declared ops (issue 18, item 1): segment_reduce,
embedding_bag's four outputs (torch.embedding_bag), set_flush_denormal, Tensor.output_nr, and
lobpcg (ember/_lobpcg.py).
"""

from __future__ import annotations

import builtins

from . import _C
from ._lobpcg import lobpcg  # noqa: F401 - listed in _FUNCTIONS
from .autograd.grad_mode import enable_grad, no_grad

# ---- segment_reduce --------------------------------------------------------------------------------

_SEGMENT_REDUCTIONS = {"sum": "sum", "mean": "sum", "max": "amax", "min": "amin", "prod": "prod"}


def _segment_lengths(data, lengths, offsets, axis: int, unsafe: builtins.bool):
    """(lengths as int64, first row): the segments from `lengths` or `offsets`, checked."""
    given = lengths if lengths is not None else offsets
    if given.dtype.is_floating_point or given.dtype.is_complex or given.dtype == _C.bool:
        raise NotImplementedError(f'"segment_reduce" not implemented for lengths or offsets of dtype {given.dtype}')
    if axis != given.dim() - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}.")
    if given.dim() != 1:
        raise NotImplementedError("ember.segment_reduce: lengths and offsets with more than one dimension (a reduction "
                                  "along a later axis) are not supported; reduce along axis 0 with 1-D lengths")
    rows = data.shape[0]
    if lengths is not None:
        lengths = lengths.long()
        if lengths.numel() and builtins.bool((lengths < 0).any()):
            raise RuntimeError("lengths contains negative value!")
        total = builtins.int(lengths.sum())
        if total > rows or (not unsafe and total != rows):
            # Unlike PyTorch, unsafe=True still refuses lengths that run past the data (a wild read there).
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum to "
                               "data.size(lengths.dim()-1) when !unsafe.")
        return lengths, 0
    offsets = offsets.long()
    if offsets.numel() == 0:
        raise RuntimeError("segment_reduce(): offsets must have at least one element")
    lengths = offsets[1:] - offsets[:-1]
    first, last = builtins.int(offsets[0]), builtins.int(offsets[-1])
    # PyTorch reads offsets unchecked; Ember refuses ones that leave the data or run backwards.
    if first < 0 or last > rows or (lengths.numel() and builtins.bool((lengths < 0).any())):
        raise RuntimeError(f"segment_reduce(): offsets must be non-decreasing and within [0, {rows}] (the size of "
                           f"data along axis), got {offsets.tolist()}")
    return lengths, first


def segment_reduce(data, reduce: str, *, lengths=None, indices=None, offsets=None, axis: builtins.int = 0,
                   unsafe: builtins.bool = False, initial=None):
    """Reduces each segment of `data` along `axis` (torch.segment_reduce): the segments are given by
    `lengths` (their sizes) or `offsets` (their boundaries, one more than segments). reduce is
    "sum", "mean", "max", "min" or "prod"; an empty segment gives `initial`, else 0, NaN, -inf,
    +inf and 1 respectively. `initial` also joins every non-empty segment's reduction (the mean
    divides by the count of data rows only, as PyTorch does). Differentiable in `data`; tied
    maxima and minima share the gradient equally."""
    if reduce not in _SEGMENT_REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if not (data.dtype.is_floating_point and not data.dtype.is_complex):
        raise NotImplementedError(f'"segment_reduce" not implemented for \'{data.dtype}\'')
    axis = axis + data.dim() if axis < 0 else axis
    lengths, first = _segment_lengths(data, lengths, offsets, axis, unsafe)
    segments = lengths.shape[0]
    total = builtins.int(lengths.sum()) if segments else 0
    rows = data.narrow(0, first, total)
    seg = _C.repeat_interleave(_C.arange(0, segments, 1, dtype=_C.int64), lengths)
    index = seg.reshape([total] + [1] * (data.dim() - 1)).expand(list(rows.shape))
    out_shape = [segments] + list(data.shape[1:])
    fill = {"sum": 0.0, "mean": 0.0, "max": float("-inf"), "min": float("inf"), "prod": 1.0}[reduce]
    start = _C.full(out_shape, fill if initial is None else initial, dtype=data.dtype)
    out = start.scatter_reduce(0, index, rows, _SEGMENT_REDUCTIONS[reduce], include_self=True)
    if reduce == "mean":
        counts = lengths.to(data.dtype).reshape([segments] + [1] * (data.dim() - 1))
        empty_value = float("nan") if initial is None else initial
        out = _C.where(counts > 0, out / counts.clamp(min=1), _C.full([], empty_value, dtype=data.dtype))
    return out


# ---- embedding_bag: the four outputs of torch.embedding_bag ----------------------------------------

_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def embedding_bag(weight, indices, offsets, scale_grad_by_freq: builtins.bool = False, mode: builtins.int = 0,
                  sparse: builtins.bool = False, per_sample_weights=None, include_last_offset: builtins.bool = False,
                  padding_idx=None):
    """torch.embedding_bag: (output, offset2bag, bag_size, max_indices) for 1-D `indices` in bags
    starting at `offsets`; mode 0 sums, 1 means, 2 maxes. output is F.embedding_bag's (with its
    gradients); the other three are the bookkeeping PyTorch's kernel returns:
      offset2bag   the bag of each entry of indices (empty in mode 0 for a contiguous float32,
                   float16 or bfloat16 weight without padding_idx, where PyTorch skips it)
      bag_size     entries per bag without padding (zeros in mode 0)
      max_indices  mode 2: the row of weight each maximum came from (0 for an empty bag);
                   mode 1: bag_size again; mode 0: zeros.
    Unlike PyTorch, the last bag of include_last_offset=True ends at offsets[-1] (as in
    F.embedding_bag), which is len(indices) whenever offsets are the CSR offsets they should be."""
    from .nn import functional as F

    if mode not in _BAG_MODES:
        raise RuntimeError("`mode` must be sum, mean, or max.")
    if per_sample_weights is not None and mode != 0:
        raise RuntimeError("embedding_bag: per_sample_weights only supported with mode='sum'")
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{rows} through {rows - 1}, "
                               f"but got {padding_idx}")
        padding_idx = padding_idx + rows if padding_idx < 0 else padding_idx
    if indices.dim() != 1 or offsets.dim() != 1:
        raise RuntimeError(f"embedding_bag: expected 1-D indices and offsets, got {indices.dim()}-D indices and "
                           f"{offsets.dim()}-D offsets")
    if include_last_offset and offsets.numel() < 1:
        raise RuntimeError("include_last_offset: number of offset should be at least 1")
    output = F.embedding_bag(indices, weight, offsets, scale_grad_by_freq=scale_grad_by_freq, mode=_BAG_MODES[mode],
                             sparse=sparse, per_sample_weights=per_sample_weights,
                             include_last_offset=include_last_offset, padding_idx=padding_idx)
    index_dtype = _C.promote_types(indices.dtype, offsets.dtype)
    with no_grad():
        bags = offsets.shape[0] - (1 if include_last_offset else 0)
        entries = indices.shape[0]
        starts = offsets.long()
        positions = _C.arange(0, entries, 1, dtype=_C.int64)
        bag = _C.searchsorted(starts, positions, right=True) - 1
        offset2bag = bag.clamp(min=0, max=builtins.max(bags - 1, 0)) if bags else bag.clamp(min=0)
        fast_path = (mode == 0 and padding_idx is None and weight.dtype in (_C.float32, _C.float16, _C.bfloat16)
                     and (weight.dim() < 2 or weight.stride(1) == 1))
        zeros = _C.zeros([bags], dtype=index_dtype)
        if mode == 0:
            bag_size, max_indices = zeros, zeros.clone()
        else:
            member = (bag >= 0) & (bag < bags)  # the entries inside a bag (see the docstring's last lines)
            if padding_idx is not None:
                member = member & (indices.long() != padding_idx)
            bag_size = _C.bincount(bag[member], minlength=bags).to(index_dtype) if bags else zeros
            if mode == 1:
                max_indices = bag_size.clone()
            else:
                _, native_max = _C._embedding_bag(weight.detach(), indices, offsets, False, 2, False, None,
                                                  include_last_offset, -1 if padding_idx is None else padding_idx)
                max_indices = native_max.clamp(min=0).to(index_dtype)  # an empty bag: 0, as PyTorch's CPU kernel
        offset2bag = (_C.zeros([0], dtype=index_dtype) if fast_path else offset2bag.to(index_dtype))
    return output, offset2bag, bag_size, max_indices


# ---- set_flush_denormal ------------------------------------------------------------------------------


def set_flush_denormal(mode) -> builtins.bool:
    """torch.set_flush_denormal: with True, the CPU flushes denormal float results to zero and reads
    denormal inputs as zero (x86's FTZ and DAZ bits); False restores IEEE behaviour. The bits are
    the calling thread's, as in PyTorch, and Ember's pool workers take them for every parallel op
    that thread starts. Returns whether the CPU supports the mode (False off x86, changing nothing)."""
    if not isinstance(mode, builtins.bool):
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return _C._set_flush_denormal(mode)


# ---- Tensor.output_nr ---------------------------------------------------------------------------------


def _output_nr(self) -> builtins.int:
    """Which output of its grad_fn this tensor is (0 for a leaf or a tensor without history): read
    off the edge that a fresh alias of it records back to its grad_fn."""
    if self.grad_fn is None:
        return 0
    with enable_grad():
        edges = self.view_as(self).grad_fn.next_functions
    return builtins.int(edges[0][1]) if edges else 0


_FUNCTIONS = ["segment_reduce", "embedding_bag", "set_flush_denormal", "lobpcg"]


def namespace() -> dict[str, object]:
    return {name: globals()[name] for name in _FUNCTIONS}


def tensor_methods() -> dict[str, object]:
    return {"output_nr": property(_output_nr)}
