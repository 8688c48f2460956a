"""Resampling (torch.nn.functional): interpolate / upsample, grid_sample, affine_grid,
pixel_shuffle / pixel_unshuffle and channel_shuffle.

interpolate is separable: each spatial dim is resampled in turn by an [out, in] matrix of
interpolation weights built here (nearest modes pick rows with index_select instead, which is
exact for every dtype). A matrix product along a dim differentiates into its transpose, which
is the scatter PyTorch's backward kernels perform.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import _C, _memory_format
from .._autocast_policy import autocast_policy
from ._functional_utils import _ntuple

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid",
           "pixel_shuffle", "pixel_unshuffle", "channel_shuffle"]

_MODE_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75  # PyTorch's bicubic coefficient; its antialiasing filter uses -0.5 (as PIL)


def _cubic(x: np.ndarray, a: float) -> np.ndarray:
    """Keys' cubic convolution kernel."""
    x = np.abs(x)
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x <= 1, near, np.where(x < 2, far, 0.0))


def _triangle(x: np.ndarray) -> np.ndarray:
    return np.maximum(0.0, 1.0 - np.abs(x))


def _ratio(size_in: int, size_out: int, align_corners: bool, scale: float | None) -> float:
    """Input pixels per output pixel, as PyTorch's area_pixel_compute_scale."""
    if align_corners:
        return (size_in - 1) / (size_out - 1) if size_out > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else size_in / size_out


def _nearest_rows(size_in: int, size_out: int, scale: float | None, exact: bool) -> np.ndarray:
    ratio = 1.0 / scale if scale is not None and scale > 0 else size_in / size_out
    offset = 0.5 if exact else 0.0
    return np.minimum(np.floor((np.arange(size_out) + offset) * ratio).astype(np.int64), size_in - 1)


def _linear_matrix(size_in, size_out, align_corners, scale, cubic: bool) -> np.ndarray:
    ratio = _ratio(size_in, size_out, align_corners, scale)
    dst = np.arange(size_out, dtype=np.float64)
    src = dst * ratio if align_corners else (dst + 0.5) * ratio - 0.5
    if not cubic:
        src = np.maximum(src, 0.0)  # linear clamps at the first pixel; cubic reads the border instead
    base = np.floor(src)
    frac = src - base
    matrix = np.zeros((size_out, size_in))
    taps = range(-1, 3) if cubic else range(0, 2)
    for tap in taps:
        weight = _cubic(frac - tap, _CUBIC_A) if cubic else (1 - frac if tap == 0 else frac)
        column = np.clip(base + tap, 0, size_in - 1).astype(np.int64)
        np.add.at(matrix, (np.arange(size_out), column), weight)
    return matrix


def _antialiased_matrix(size_in, size_out, align_corners, scale, cubic: bool) -> np.ndarray:
    """Each output pixel averages the input under a filter stretched by the downscaling ratio
    (so no input pixel is skipped), weights normalized over the taps inside the image."""
    ratio = _ratio(size_in, size_out, align_corners, scale)
    half_width = 2.0 if cubic else 1.0
    support = half_width * ratio if ratio >= 1.0 else half_width
    stretch = 1.0 / ratio if ratio >= 1.0 else 1.0
    matrix = np.zeros((size_out, size_in))
    for i in range(size_out):
        center = ratio * (i + 0.5)
        lo = max(int(center - support + 0.5), 0)
        hi = min(int(center + support + 0.5), size_in)
        offsets = (np.arange(lo, hi) - center + 0.5) * stretch
        weights = _cubic(offsets, -0.5) if cubic else _triangle(offsets)
        total = weights.sum()
        if total != 0:
            matrix[i, lo:hi] = weights / total
    return matrix


def _area_matrix(size_in: int, size_out: int) -> np.ndarray:
    matrix = np.zeros((size_out, size_in))
    for i in range(size_out):
        lo, hi = (i * size_in) // size_out, -((-(i + 1) * size_in) // size_out)
        matrix[i, lo:hi] = 1.0 / (hi - lo)
    return matrix


def _output_sizes(input, size, scale_factor, n: int, recompute_scale_factor):
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        sizes = [int(s) for s in _ntuple(size, n, "size")]
        return sizes, [None] * n
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = [float(s) for s in _ntuple(scale_factor, n, "scale_factor")]
    sizes = [int(math.floor(float(input.shape[2 + i]) * s)) for i, s in enumerate(scales)]
    # recompute_scale_factor: the coordinates use in/out, as if size had been given
    return sizes, ([None] * n if recompute_scale_factor else scales)


def _resample_dim(x, dim: int, matrix: np.ndarray):
    weights = _C.from_numpy(matrix).to(x.dtype)
    return _C.movedim(_C.matmul(_C.movedim(x, dim, -1), _C.transpose(weights, 0, 1)), -1, dim)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """Resizes the spatial dims of an [N, C, *spatial] input (1 to 3 spatial dims)."""
    modes = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
    if mode not in modes:
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    interpolating = mode in _MODE_DIMS
    if align_corners is not None and not interpolating:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    if antialias and mode not in ("bilinear", "bicubic"):
        raise ValueError(f"Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D tensor "
                         f"as input (got mode {mode!r})")
    if input.dim() not in (3, 4, 5):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    n = input.dim() - 2
    if interpolating and _MODE_DIMS[mode] != n:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {_MODE_DIMS[mode] + 2}D input")
    sizes, scales = _output_sizes(input, size, scale_factor, n, recompute_scale_factor)
    if any(s <= 0 for s in sizes) and input.numel():
        names = "DHW"[3 - n:]
        given = ", ".join(f"{d}: {v}" for d, v in zip(names, input.shape[2:], strict=True))
        wanted = ", ".join(f"{d}: {v}" for d, v in zip(names, sizes, strict=True))
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({given}) output ({wanted})")
    align = bool(align_corners)
    x = input
    for i, (size_out, scale) in enumerate(zip(sizes, scales, strict=True)):
        dim, size_in = 2 + i, x.shape[2 + i]
        if size_in == 0:
            raise RuntimeError(f"interpolate: input of size {list(input.shape)} has an empty spatial dim {dim}")
        if mode in ("nearest", "nearest-exact"):
            rows = _nearest_rows(size_in, size_out, scale, mode == "nearest-exact")
            x = _C.index_select(x, dim, _C.from_numpy(rows))
        elif mode == "area":
            x = _resample_dim(x, dim, _area_matrix(size_in, size_out))
        elif antialias:
            x = _resample_dim(x, dim, _antialiased_matrix(size_in, size_out, align, scale, mode == "bicubic"))
        else:
            x = _resample_dim(x, dim, _linear_matrix(size_in, size_out, align, scale, mode == "bicubic"))
    return _memory_format.laid_out(x, _memory_format.suggest(input))  # a channels-last input stays so


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    warnings.warn("nn.functional.upsample is deprecated. Use nn.functional.interpolate instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    warnings.warn("nn.functional.upsample_nearest is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    warnings.warn("nn.functional.upsample_bilinear is deprecated. Use nn.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- grid_sample / affine_grid -------------------------------------------------------------

def _unnormalize(coord, size: int, align_corners: bool):
    """[-1, 1] -> pixel coordinates: the corner pixels' centres (align_corners) or their outer edges."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord, low2: int, high2: int):
    """Reflects coord into [low2 / 2, high2 / 2] (bounds given doubled, so they stay integers)."""
    if low2 == high2:
        return _C.zeros_like(coord)
    low, span = low2 / 2, (high2 - low2) / 2
    dist = (coord - low).abs()
    flips = _C.floor(dist / span).detach()
    extra = dist - flips * span
    even = _C.remainder(flips, 2) == 0
    return _C.where(even, extra + low, span - extra + low)


def _pad_coord(coord, size: int, padding_mode: str, align_corners: bool):
    if padding_mode == "border":
        return _C.clamp(coord, 0, size - 1)
    if padding_mode == "reflection":
        coord = _reflect(coord, 0, 2 * (size - 1)) if align_corners else _reflect(coord, -1, 2 * size - 1)
        return _C.clamp(coord, 0, size - 1)
    return coord


def _gather_taps(flat, spatial: list[int], taps: list, n_out: int):
    """Sum over taps of weight * input[at tap's integer coords], zero where a tap is outside."""
    total = None
    batch, channels = flat.shape[0], flat.shape[1]
    for coords, weight in taps:
        inside = None
        linear = None
        for c, size in zip(coords, spatial, strict=True):
            ok = (c >= 0) & (c <= size - 1)
            inside = ok if inside is None else inside & ok
            clipped = _C.clamp(c, 0, size - 1).to(_C.int64)
            linear = clipped if linear is None else linear * size + clipped
        index = _C.reshape(linear, [batch, 1, n_out]).expand([batch, channels, n_out])
        values = _C.gather(flat, 2, index)
        scale = _C.reshape(_C.where(inside, weight, _C.zeros_like(weight)), [batch, 1, n_out])
        total = values * scale if total is None else total + values * scale
    return total


@autocast_policy("fp32")
def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    """Samples input [N, C, H, W] (or [N, C, D, H, W]) at grid [N, Ho, Wo, 2] ([..., 3]) of
    (x, y[, z]) coordinates in [-1, 1]; bilinear/nearest (and bicubic in 2-D), padding zeros,
    border or reflection. Differentiable in input and grid."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    n = input.dim() - 2
    if grid.shape[-1] != n or grid.shape[0] != input.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {n} in last dimension and the input's batch "
                           f"size {input.shape[0]}, but got grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and n != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    align = bool(align_corners)
    batch, channels = input.shape[:2]
    spatial = list(input.shape[2:])
    out_spatial = list(grid.shape[1:-1])
    n_out = math.prod(out_spatial)
    flat = _C.reshape(input, [batch, channels, -1])
    flat_grid = _C.reshape(grid, [batch, n_out, n])
    # grid's last dim is (x, y[, z]): x indexes the last spatial dim
    coords = [_unnormalize(_C.select(flat_grid, 2, n - 1 - i), spatial[i], align) for i in range(n)]
    if mode == "bicubic":
        base = [_C.floor(c).detach() for c in coords]
        fracs = [c - b for c, b in zip(coords, base, strict=True)]
        taps = []
        for dy in range(-1, 3):
            for dx in range(-1, 3):
                at = [_pad_coord(base[0] + dy, spatial[0], padding_mode, align),
                      _pad_coord(base[1] + dx, spatial[1], padding_mode, align)]
                weight = _cubic_weight(fracs[0], dy) * _cubic_weight(fracs[1], dx)
                taps.append((at, weight))
    else:
        coords = [_pad_coord(c, s, padding_mode, align) for c, s in zip(coords, spatial, strict=True)]
        if mode == "nearest":
            taps = [([_C.round(c).detach() for c in coords], _C.ones_like(coords[0]))]
        else:
            base = [_C.floor(c).detach() for c in coords]
            fracs = [c - b for c, b in zip(coords, base, strict=True)]
            taps = []
            for corner in np.ndindex(*([2] * n)):
                weight = None
                for f, bit in zip(fracs, corner, strict=True):
                    w = f if bit else 1 - f
                    weight = w if weight is None else weight * w
                taps.append(([b + bit for b, bit in zip(base, corner, strict=True)], weight))
    out = _gather_taps(flat, spatial, taps, n_out)
    return _C.reshape(out, [batch, channels] + out_spatial)


def _cubic_weight(frac, tap: int):
    """Keys' kernel (a = -0.75) at distance |frac - tap|, written with tensor ops so the grid
    gets its gradient."""
    a = _CUBIC_A
    x = (frac - tap).abs()
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return near if tap in (0, 1) else far


def affine_grid(theta, size, align_corners=None):
    """The sampling grid of an affine map: for output size [N, C, H, W] (theta [N, 2, 3]) or
    [N, C, D, H, W] (theta [N, 3, 4]), grid[n, ..., :] = theta[n] @ (x, y[, z], 1)."""
    size = [int(s) for s in size]
    n = len(size) - 2
    if n not in (2, 3):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {size}.")
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if theta.dim() != 3 or list(theta.shape[1:]) != [n, n + 1] or theta.shape[0] != size[0]:
        raise ValueError(f"Expected a batch of {n}D affine matrices of shape Nx{n}x{n + 1} for size {size}. Got "
                         f"{list(theta.shape)}.")
    if min(size[2:]) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    align = bool(align_corners)
    axes = []
    for s in reversed(size[2:]):  # x runs along the last dim
        line = np.linspace(-1.0, 1.0, s) if s > 1 else np.zeros(1)
        axes.append(line if align else line * (s - 1) / s)
    mesh = np.meshgrid(*reversed(axes), indexing="ij")  # spatial order
    base = np.stack([*reversed(mesh), np.ones_like(mesh[0])], axis=-1).reshape(-1, n + 1)
    base = _C.from_numpy(base).to(theta.dtype)
    grid = _C.matmul(base, _C.transpose(theta, 1, 2))  # [N, points, n]
    return _C.reshape(grid, [size[0]] + size[2:] + [n])


# ---- pixel and channel shuffles ------------------------------------------------------------

def pixel_shuffle(input, upscale_factor):
    """[*, C * r^2, H, W] -> [*, C, H * r, W * r]."""
    r = int(upscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, channels, height, width = input.shape
    if channels % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={channels} is not divisible by {r * r}")
    k = len(lead)
    x = _C.reshape(input, list(lead) + [channels // (r * r), r, r, height, width])
    x = _C.permute(x, list(range(k)) + [k, k + 3, k + 1, k + 4, k + 2])
    return _C.reshape(x, list(lead) + [channels // (r * r), height * r, width * r])


def pixel_unshuffle(input, downscale_factor):
    """[*, C, H * r, W * r] -> [*, C * r^2, H, W], the inverse of pixel_shuffle."""
    r = int(downscale_factor)
    if input.dim() < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, channels, height, width = input.shape
    for name, size, dim in (("height", height, -2), ("width", width, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({dim})={size} is not divisible by {r}")
    k = len(lead)
    x = _C.reshape(input, list(lead) + [channels, height // r, r, width // r, r])
    x = _C.permute(x, list(range(k)) + [k, k + 2, k + 4, k + 1, k + 3])
    return _C.reshape(x, list(lead) + [channels * r * r, height // r, width // r])


def channel_shuffle(input, groups):
    """[N, C, *] with C = g * k: reorders channels (g, k) -> (k, g), as in ShuffleNet."""
    groups = int(groups)
    if input.dim() < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.dim()} dimension(s)")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    batch, channels, *rest = input.shape
    if channels % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {channels} channels and {groups} "
                           f"groups.")
    x = _C.reshape(input, [batch, groups, channels // groups] + rest)
    return _C.reshape(_C.transpose(x, 1, 2), [batch, channels] + rest)
