"""Helpers the torch.nn.functional families share: an int-or-tuple argument as an n-tuple, the
(unbatched or batched) rank check, constant padding of the trailing dims, sliding windows, and the
inplace=True write-back."""

from __future__ import annotations

from .. import _C
from .._inplace import _graph_source, _write_inplace


def _ntuple(value, n: int, name: str) -> tuple:
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(values) != n:
        raise RuntimeError(f"{name} must be an int or a tuple of {n} ints, but got {value!r}")  # PyTorch's type
    return values


def _pad_spatial(x, pads: list[tuple[int, int]], value: float):
    """Pads the trailing len(pads) dims by (before, after) each with `value`, by concatenation."""
    first = x.dim() - len(pads)
    for i, (before, after) in enumerate(pads):
        dim = first + i
        parts = []
        for size in (before, after):
            shape = list(x.shape)
            shape[dim] = size
            parts.append(_C.full(shape, value, dtype=x.dtype) if size else None)
        pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
        x = _C.cat(pieces, dim) if len(pieces) > 1 else x
    return x


def _windows(x, kernel: tuple, stride: tuple, dilation: tuple):
    """[N, C, *spatial] -> [N, C, *out, *kernel]: every window, its taps spaced by dilation."""
    n = len(kernel)
    for i in range(n):
        x = x.unfold(2 + i, dilation[i] * (kernel[i] - 1) + 1, stride[i])
    if any(d != 1 for d in dilation):
        x = x[(Ellipsis,) + tuple(slice(None, None, d) for d in dilation)]
    return x


def _batched(input, n: int, name: str):
    if input.dim() == n + 1:
        return _C.unsqueeze(input, 0), True
    if input.dim() != n + 2:
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got input of "
                           f"size: {list(input.shape)}")
    return input, False


def _written_back(input, inplace: bool, op, *args):
    """op(input, *args); with inplace=True written into input the one way Python in-place forms
    are (ember/_inplace.py: op runs on input's graph source, so backward still has what it saved)."""
    if not inplace:
        return op(input, *args)
    return _write_inplace(input, op(_graph_source(input), *args), getattr(op, "__name__", "op") + "_")
