"""pad (torch.nn.functional.pad): constant, reflect, replicate and circular padding.

Constant padding concatenates blocks of the fill value (negative widths crop); the other modes
gather the border rows with index_select along each padded dim, so the gradient of a repeated
row sums over every place it was copied to.
"""

from __future__ import annotations

from .. import _C, _memory_format
from .._autocast_policy import autocast_policy
from .._tensor import tensor

__all__ = ["pad"]

_MODES = ("constant", "reflect", "replicate", "circular")


def _source_rows(size: int, before: int, after: int, mode: str) -> list[int]:
    """For each output position along one dim, the input position it copies."""
    rows = []
    for i in range(-before, size + after):
        if mode == "reflect":  # mirror about the edge rows, which are not repeated
            period = 2 * (size - 1)
            j = i % period if period else 0
            rows.append(j if j < size else period - j)
        elif mode == "replicate":
            rows.append(min(max(i, 0), size - 1))
        else:  # circular
            rows.append(i % size)
    return rows


def _pad_constant(input, pairs, value: float):
    x = input
    for dim, (before, after) in pairs:
        # negative widths crop first, so the fill blocks below see the cropped size
        start, stop = max(-before, 0), x.shape[dim] - max(-after, 0)
        if start or stop != x.shape[dim]:
            if stop < start:
                raise RuntimeError(f"The input size {x.shape[dim]}, plus negative padding {before} and {after} "
                                   f"resulted in a negative output size, which is invalid. Check dimension {dim} of "
                                   f"your input.")
            x = _C.narrow(x, dim, start, stop - start)
        pieces = []
        for width in (before, after):
            shape = list(x.shape)
            shape[dim] = max(width, 0)
            pieces.append(_C.full(shape, value, dtype=x.dtype, device=x.device) if width > 0 else None)
        parts = [p for p in (pieces[0], x, pieces[1]) if p is not None]
        x = _C.cat(parts, dim) if len(parts) > 1 else x
    return x


def pad(input, pad, mode: str = "constant", value=None):
    """Pads the last len(pad) // 2 dims of input: pad = (last_before, last_after, second_last_before, ...).

    reflect/replicate/circular pad 1 to 3 trailing dims of a batched (N, C, ...) or unbatched
    (C, ...) input, as PyTorch does; constant pads any number of dims with `value` (default 0).
    """
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise ValueError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise ValueError(f"Padding length should be less than or equal to two times the input dimension but got "
                         f"padding length {len(pad)} and input of dimension {input.dim()}")
    if mode not in _MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    n = len(pad) // 2
    pairs = [(input.dim() - 1 - i, (pad[2 * i], pad[2 * i + 1])) for i in range(n)]
    if mode == "constant":  # a channels-last input stays so (Note [memory formats])
        return _memory_format.laid_out(_pad_constant(input, pairs, 0.0 if value is None else value),
                                       _memory_format.suggest(input))
    if value is not None and value != 0:
        raise ValueError(f"Padding mode \"{mode}\" doesn't take in value argument.")
    if not 1 <= n <= 3 or input.dim() not in (n + 1, n + 2):
        raise NotImplementedError(f"Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now "
                                  f"(got {input.dim()}-D input and {len(pad)} padding values in mode {mode})")
    # PyTorch's CPU autocast runs reflection and replication pads in float32, circular as is
    out = (_pad_indexed_float32 if mode in ("reflect", "replicate") else _pad_indexed)(input, pairs, mode)
    return _memory_format.laid_out(out, _memory_format.suggest(input))


def _pad_indexed(input, pairs, mode):
    x = input
    for dim, (before, after) in pairs:
        size = x.shape[dim]
        if mode == "reflect" and (before >= size or after >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({before}, {after}) at dimension {dim} of input "
                               f"{list(input.shape)}")
        if mode == "circular" and (before > size or after > size):
            raise RuntimeError(f"Padding value causes wrapping around more than once (padding ({before}, {after}) "
                               f"for a dimension of size {size})")
        if mode == "replicate" and size == 0 and (before or after):
            raise RuntimeError(f"Expected a non-empty dimension {dim} to pad in replicate mode, but input has shape "
                               f"{list(input.shape)}")
        if before < 0 or after < 0:  # negative widths crop, then the positive part pads
            x = _pad_constant(x, [(dim, (min(before, 0), min(after, 0)))], 0.0)
            before, after, size = max(before, 0), max(after, 0), x.shape[dim]
        if before or after:
            index = tensor(_source_rows(size, before, after, mode), dtype=_C.int64)
            x = _C.index_select(x, dim, index)
    return x


_pad_indexed_float32 = autocast_policy("fp32")(_pad_indexed)
