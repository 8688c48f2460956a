"""ember.ao.nn.quantized.functional (torch.ao.nn.quantized.functional): functions over quantized
tensors, with PyTorch 2.13's signatures, checks and messages.

Pooling, clamp, hardtanh and the nearest/bilinear resampling keep the input's scale and zero
point; elu, celu, hardswish and leaky_relu (when given them) take the output's. The elementwise
functions are computed as PyTorch's x86 kernels compute them in effect: the codes dequantized to
float32, the float function applied, the result quantized with the output parameters (multiplied by
the float32 reciprocal of the scale, rounded half to even). Where PyTorch's vectorized kernels
dequantize with a fused multiply-add or take their own exp, a value that falls within a float32
rounding of a half step can round the other way: such codes are one apart at most (see
tests/test_quantized_more_modules_torch_parity.py for what is equal bit for bit).

avg_pool2d/avg_pool3d use Ember's quantized pooling kernel, which rounds an exact half of the
centered average to even where PyTorch rounds the whole code (the zero point added first): with
an odd zero point such codes are one apart. adaptive_avg_pool2d/3d compute PyTorch's way.

inplace=True (leaky_relu, hardtanh, hardsigmoid) raises NotImplementedError: Ember's quantized
tensors cannot be written in place (their copy_ is not implemented).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .... import _C
from ...._quantized import integer_range
from ...._tensor import tensor
from ....nn import functional as F
from ....nn.modules.utils import _ntuple

__all__ = ["adaptive_avg_pool2d", "adaptive_avg_pool3d", "avg_pool2d", "avg_pool3d", "celu", "clamp", "conv1d",
           "conv2d", "conv3d", "elu", "hardsigmoid", "hardswish", "hardtanh", "interpolate", "leaky_relu", "linear",
           "max_pool1d", "max_pool2d", "threshold", "upsample", "upsample_bilinear", "upsample_nearest"]


def _require_quantized(input, name: str) -> None:
    if not getattr(input, "is_quantized", False):
        raise ValueError(f"Input to 'quantized.{name}' must be quantized!")


def _requantize(values, scale: float, zero_point: int, dtype):
    """Float32 values quantized per tensor (PyTorch's quantize_val: value * (1 / scale) in float32,
    rounded half to even, plus the zero point, clamped to the dtype's range)."""
    return _C.quantize_per_tensor(values.contiguous(), float(scale), int(zero_point), dtype)


def _no_inplace(name: str) -> None:
    raise NotImplementedError(f"quantized.{name}(inplace=True): Ember's quantized tensors are not written in place; "
                              f"use inplace=False (the default) and the returned tensor")


def _elementwise(input, fn, scale: float, zero_point: int):
    return _requantize(fn(input.dequantize()), scale, zero_point, input.dtype)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """2-d average pooling of a quantized tensor; the input's scale and zero point kept."""
    if not getattr(input, "is_quantized", False):
        raise ValueError("Input to 'quantized.avg_pool2d' must be quantized!")
    return F.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """3-d average pooling of a quantized tensor; the input's scale and zero point kept."""
    if not getattr(input, "is_quantized", False):
        raise ValueError("Input to 'quantized.avg_pool3d' must be quantized!")
    return F.avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)


def _adaptive_avg_pool(input, output_size, n: int):
    """Adaptive average pooling of the last n dimensions in codes, as PyTorch's quantized kernel:
    window i of a dimension of size L into O spans [floor(i L / O), ceil((i + 1) L / O)); with
    acc = sum(codes) - zp * size, q = round_half_even(float32(acc * float32(1 / size)) + zp)
    (the zero point added in float32 before rounding, which decides exact halves)."""
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"adaptive_avg_pool{n}d(): Expected {n + 1}D or {n + 2}D tensor, but got {input.dim()}D")
    sizes = list(output_size) if isinstance(output_size, (list, tuple)) else [output_size] * n
    if len(sizes) != n:
        raise RuntimeError(f"adaptive_avg_pool{n}d: output_size must be {n}")
    in_sizes = list(input.shape[-n:])
    sizes = [in_sizes[k] if sizes[k] is None else int(sizes[k]) for k in range(n)]
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"adaptive_avg_pool{n}d: elements of output_size must be greater than or equal to 0 but "
                           f"received {tuple(sizes)}")
    codes = input.int_repr().numpy().astype(np.int64)
    lead = codes.shape[:-n]
    zp = input.q_zero_point()
    lo, hi = integer_range(input.dtype)
    f32 = np.float32
    result = np.zeros(lead + tuple(sizes), dtype=np.int64)
    for index in np.ndindex(*sizes):
        window = tuple(slice((i * size_in) // size_out, -((-(i + 1) * size_in) // size_out))
                       for i, size_in, size_out in zip(index, in_sizes, sizes, strict=True))
        block = codes[(Ellipsis, *window)]
        count = int(np.prod([w.stop - w.start for w in window]))
        if count == 0:
            continue
        acc = block.reshape(lead + (-1,)).sum(axis=-1) - zp * count
        value = (acc.astype(f32) * f32(f32(1.0) / f32(count))).astype(f32) + f32(zp)
        result[(Ellipsis, *index)] = np.clip(np.rint(value.astype(f32)).astype(np.int64), lo, hi)
    raw = result.astype(input.int_repr().numpy().dtype)
    return _C._make_per_tensor_quantized_tensor(tensor(np.ascontiguousarray(raw)), input.q_scale(), zp)


def adaptive_avg_pool2d(input, output_size):
    """2-d adaptive average pooling of a quantized tensor; the input's parameters kept (the codes
    as PyTorch's kernel computes them, see _adaptive_avg_pool)."""
    if not getattr(input, "is_quantized", False):
        raise ValueError("Input to 'quantized.functional.adaptive_avg_pool2d' must be quantized!")
    return _adaptive_avg_pool(input, output_size, 2)


def adaptive_avg_pool3d(input, output_size):
    """3-d adaptive average pooling of a quantized tensor; the input's parameters kept."""
    if not getattr(input, "is_quantized", False):
        raise ValueError("Input to 'quantized.functional.adaptive_avg_pool3d' must be quantized!")
    return _adaptive_avg_pool(input, output_size, 3)


def _conv(n: int, input, weight, bias, stride, padding, dilation, groups, padding_mode, scale, zero_point, dtype):
    if padding_mode != "zeros":
        raise NotImplementedError("Only zero-padding is supported!")
    if input.dtype != _C.quint8:
        raise NotImplementedError("Only torch.quint8 is supported for activation tensor!")
    if weight.dtype != _C.qint8:
        raise NotImplementedError("Only torch.qint8 is supported for weight tensor!")
    if input.dim() != n + 2:
        raise ValueError("Input shape must be `(N, C, " + ("L", "H, W", "D, H, W")[n - 1] + ")`!")
    if weight.dim() != n + 2:
        raise RuntimeError(f"quantized::conv{n}d_prepack: the weight must be {n + 2}-d, but is {weight.dim()}-d")
    if bias is not None:
        if bias.dtype != _C.float32:
            raise RuntimeError(f"quantized::conv{n}d_prepack: the bias must be float32, but is {bias.dtype}")
        if tuple(bias.shape) != (weight.shape[0],):
            raise RuntimeError(f"quantized::conv{n}d_prepack: the bias must have {weight.shape[0]} elements (the "
                               f"output channels), but has shape {tuple(bias.shape)}")
    if input.shape[1] != weight.shape[1] * groups:
        raise RuntimeError(f"quantized::conv{n}d: the input has {input.shape[1]} channels, but the weight expects "
                           f"{weight.shape[1] * groups}")
    ntuple = _ntuple(n)
    return _C._quantized_conv(input, weight, bias, list(ntuple(stride)), list(ntuple(padding)),
                              list(ntuple(dilation)), int(groups), float(scale), int(zero_point), False)


def conv1d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1, padding_mode="zeros", scale=1.0,
           zero_point=0, dtype=_C.quint8):
    """1-d convolution of a quint8 (N, C, L) input with a qint8 weight and a float bias; the
    result quantized with scale and zero_point."""
    return _conv(1, input, weight, bias, stride, padding, dilation, groups, padding_mode, scale, zero_point, dtype)


def conv2d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1, padding_mode="zeros", scale=1.0,
           zero_point=0, dtype=_C.quint8):
    """2-d convolution of a quint8 (N, C, H, W) input with a qint8 weight and a float bias."""
    return _conv(2, input, weight, bias, stride, padding, dilation, groups, padding_mode, scale, zero_point, dtype)


def conv3d(input, weight, bias, stride=1, padding=0, dilation=1, groups=1, padding_mode="zeros", scale=1.0,
           zero_point=0, dtype=_C.quint8):
    """3-d convolution of a quint8 (N, C, D, H, W) input with a qint8 weight and a float bias."""
    return _conv(3, input, weight, bias, stride, padding, dilation, groups, padding_mode, scale, zero_point, dtype)


def _source_scale(in_size: int, out_size: int, align_corners: bool, scale_factor) -> np.float32:
    """PyTorch's area_pixel_compute_scale in float32."""
    if align_corners:
        return np.float32(in_size - 1) / np.float32(out_size - 1) if out_size > 1 else np.float32(0)
    if scale_factor is not None and scale_factor > 0:
        return np.float32(1.0 / scale_factor)
    return np.float32(in_size) / np.float32(out_size)


def _nearest_index(in_size: int, out_size: int, scale_factor) -> np.ndarray:
    """The source index of each output position of nearest resampling (PyTorch's
    nearest_idx: floor(out_index * scale) in float32, clipped; the sizes' ratio when equal or
    2x up)."""
    out = np.arange(out_size)
    if out_size == in_size:
        return out
    if out_size == 2 * in_size:
        return out >> 1
    scale = _source_scale(in_size, out_size, False, scale_factor)
    return np.minimum(np.floor(out.astype(np.float32) * scale).astype(np.int64), in_size - 1)


def _bilinear_weights(in_size: int, out_size: int, align_corners: bool, scale_factor):
    """Per output position: the lower source index, the step to the upper one (0 at the edge) and
    the two float32 weights (PyTorch's area_pixel_compute_source_index in float32)."""
    scale = _source_scale(in_size, out_size, align_corners, scale_factor)
    dst = np.arange(out_size).astype(np.float32)
    if align_corners:
        real = scale * dst
    else:
        real = np.maximum(scale * (dst + np.float32(0.5)) - np.float32(0.5), np.float32(0))
    real = real.astype(np.float32)
    low = real.astype(np.int64)
    step = (low < in_size - 1).astype(np.int64)
    lam1 = (real - low.astype(np.float32)).astype(np.float32)
    lam0 = (np.float32(1) - lam1).astype(np.float32)
    return low, step, lam0, lam1


def _output_sizes(input, size, scale_factor, spatial: int) -> tuple[list[int], list]:
    if (size is None) == (scale_factor is None):
        raise ValueError("either size or scale_factor should be defined" if size is None else
                         "only one of size or scale_factor should be defined")
    in_sizes = list(input.shape[2:])
    if size is not None:
        sizes = list(size) if isinstance(size, (list, tuple)) else [size] * spatial
        if len(sizes) != spatial:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {in_sizes} and output size of {sizes}. Please provide input "
                             f"tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) format.")
        return [int(s) for s in sizes], [None] * spatial
    factors = list(scale_factor) if isinstance(scale_factor, (list, tuple)) else [scale_factor] * spatial
    if len(factors) != spatial:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                         f"with spatial dimensions of {in_sizes} and scale_factor of shape {factors}. Please provide "
                         f"input tensor in (N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
    return [math.floor(float(i) * float(f)) for i, f in zip(in_sizes, factors, strict=True)], [float(f) for f in factors]


def _gather(codes: np.ndarray, axis: int, index: np.ndarray) -> np.ndarray:
    return np.take(codes, index, axis=axis)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Nearest or bilinear resampling of a quantized (N, C, H, W) tensor (nearest also 3-d and
    5-d); the input's scale and zero point kept. Nearest copies codes. Bilinear mixes the four
    neighbouring codes with float32 weights and rounds half to even, as PyTorch's quantized kernel:
        q = round((h0 * (w0 * a + w1 * b) + h1 * (w0 * c + w1 * d) - zp) + zp)  (in float32)."""
    if not getattr(input, "is_quantized", False):
        raise ValueError("Input to 'quantized.interpolate' must be quantized!")
    if mode not in ("nearest", "bilinear"):
        raise NotImplementedError(f"Quantized interpolate supports the modes 'nearest' and 'bilinear' only, but got "
                                  f"{mode!r}")
    if mode == "nearest" and align_corners is not None:
        raise ValueError("align_corners option can only be set with the interpolating modes: linear | bilinear | "
                         "bicubic | trilinear")
    spatial = input.dim() - 2
    if mode == "bilinear" and spatial != 2:
        raise NotImplementedError(f"Got {input.dim()}D input, but bilinear mode needs 4D input")
    if spatial not in (1, 2, 3):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear (got {mode})")
    out_sizes, factors = _output_sizes(input, size, scale_factor, spatial)
    if any(s <= 0 for s in out_sizes) or any(s <= 0 for s in input.shape[2:]):
        raise RuntimeError(f"Input and output sizes should be greater than 0, but got input "
                           f"({', '.join(str(s) for s in input.shape[2:])}) and output "
                           f"({', '.join(str(s) for s in out_sizes)})")
    raw = input.int_repr()
    codes = raw.numpy()
    in_sizes = list(input.shape[2:])
    if mode == "nearest":
        for k in range(spatial):
            codes = _gather(codes, 2 + k, _nearest_index(in_sizes[k], out_sizes[k], factors[k]))
        result = codes
    else:
        corners = bool(align_corners)
        zp = input.q_zero_point()
        hl, hs, h0, h1 = _bilinear_weights(in_sizes[0], out_sizes[0], corners, factors[0])
        wl, ws, w0, w1 = _bilinear_weights(in_sizes[1], out_sizes[1], corners, factors[1])
        x = codes.astype(np.float32)
        top, bottom = x[:, :, hl, :], x[:, :, hl + hs, :]
        a, b = top[:, :, :, wl], top[:, :, :, wl + ws]
        c, d = bottom[:, :, :, wl], bottom[:, :, :, wl + ws]
        h0, h1 = h0[:, None], h1[:, None]
        value = (h0 * (w0 * a + w1 * b) + h1 * (w0 * c + w1 * d) - np.float32(zp)).astype(np.float32)
        # the zero point is added back in float32 before rounding (PyTorch's vectorized quantize
        # does so), which decides the halves (a weight of 0.5) by the parity of the whole code
        value = (value + np.float32(zp)).astype(np.float32)
        lo, hi = integer_range(input.dtype)
        result = np.clip(np.rint(value).astype(np.int64), lo, hi).astype(codes.dtype)
    return _C._make_per_tensor_quantized_tensor(tensor(np.ascontiguousarray(result)), input.q_scale(),
                                                input.q_zero_point())


def linear(input, weight, bias=None, scale=None, zero_point=None):
    """y = x W^T + b on a quint8 x with a qint8 weight and a float bias; the output quantized with
    scale and zero_point (the input's when not given)."""
    if scale is None:
        scale = input.q_scale()
    if zero_point is None:
        zero_point = input.q_zero_point()
    if weight.dtype != _C.qint8 or weight.dim() != 2:
        raise RuntimeError(f"quantized::linear_prepack: the weight must be a 2-d qint8 tensor, but is a "
                           f"{weight.dim()}-d {weight.dtype}")
    if input.dtype != _C.quint8:
        raise RuntimeError(f"quantized::linear: expected a quint8 input, but got {input.dtype}")
    if input.shape[-1] != weight.shape[1]:
        raise RuntimeError(f"quantized::linear: the input's last dimension is {input.shape[-1]}, but the weight "
                           f"expects {weight.shape[1]}")
    if bias is not None and tuple(bias.shape) != (weight.shape[0],):
        raise RuntimeError(f"quantized::linear_prepack: the bias must have {weight.shape[0]} elements, but has "
                           f"shape {tuple(bias.shape)}")
    return _C._quantized_linear(input, weight, None if bias is None else bias.detach().float(), float(scale),
                                int(zero_point), False)


def _max_pool(pool, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices):
    if return_indices:
        raise NotImplementedError("return_indices is not yet implemented!")
    return pool(input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """1-d max pooling of a quantized tensor (its parameters kept)."""
    return _max_pool(F.max_pool1d, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-d max pooling of a quantized tensor (its parameters kept)."""
    return _max_pool(F.max_pool2d, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def celu(input, scale: float, zero_point: int, alpha: float = 1.0):
    """celu(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), quantized with scale, zero_point."""
    _require_quantized(input, "celu")
    return _elementwise(input, lambda x: F.celu(x, alpha), scale, zero_point)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False, scale=None, zero_point=None):
    """max(0, x) + negative_slope * min(0, x); with scale and zero_point the result takes them,
    else the input's."""
    if scale is not None and zero_point is not None:
        if inplace:
            raise AssertionError("Cannot rescale with `inplace`")
        return _elementwise(input, lambda x: F.leaky_relu(x, negative_slope), scale, zero_point)
    if inplace:
        _no_inplace("leaky_relu")
    return _elementwise(input, lambda x: F.leaky_relu(x, negative_slope), input.q_scale(), input.q_zero_point())


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    """hardtanh of a quantized tensor (its parameters kept)."""
    _require_quantized(input, "hardtanh")
    if inplace:
        _no_inplace("hardtanh")
    return F.hardtanh(input, min_val, max_val)


def hardswish(input, scale: float, zero_point: int):
    """x * relu6(x + 3) / 6, quantized with scale and zero_point."""
    _require_quantized(input, "hardswish")
    return _elementwise(input, F.hardswish, scale, zero_point)


def threshold(input, threshold: float, value: float):
    """value where x <= threshold, else x; the input's parameters kept."""
    _require_quantized(input, "threshold")
    if threshold is None:
        raise ValueError("Input to 'threshold' must be specified!")
    if value is None:
        raise ValueError("Input to 'value' must be specified!")
    return _elementwise(input, lambda x: F.threshold(x, float(threshold), float(value)), input.q_scale(),
                        input.q_zero_point())


def elu(input, scale: float, zero_point: int, alpha: float = 1.0):
    """elu(x) = x if x > 0 else alpha * (exp(x) - 1), quantized with scale and zero_point."""
    _require_quantized(input, "elu")
    return _elementwise(input, lambda x: F.elu(x, alpha), scale, zero_point)


def hardsigmoid(input, inplace: bool = False):
    """relu6(x + 3) / 6, quantized as PyTorch fixes it: scale 1/256 (2^-32 for qint32) and zero
    point -128 for qint8, else 0."""
    _require_quantized(input, "hardsigmoid")
    scale = 2.0 ** -32 if input.dtype == _C.qint32 else 1.0 / 256.0
    if inplace:
        _no_inplace("hardsigmoid")
    return _elementwise(input, F.hardsigmoid, scale, -128 if input.dtype == _C.qint8 else 0)


def clamp(input, min_: float, max_: float):
    """The quantized tensor clamped to [min_, max_], in codes: min_ and max_ quantized with the
    input's parameters, the codes clamped between them (the input's parameters kept)."""
    if not getattr(input, "is_quantized", False):
        raise ValueError("Input to 'quantized.clamp' must be quantized!")
    bounds = _C.quantize_per_tensor(tensor([float(min_), float(max_)], dtype=_C.float32), input.q_scale(),
                                    input.q_zero_point(), input.dtype).int_repr()
    codes = input.int_repr().clamp(int(bounds[0]), int(bounds[1]))
    return _C._make_per_tensor_quantized_tensor(codes.contiguous(), input.q_scale(), input.q_zero_point())


def upsample(input, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Deprecated: interpolate(input, size, scale_factor, mode, align_corners)."""
    warnings.warn("nn.quantized.functional.upsample is deprecated. Use nn.quantized.functional.interpolate instead.",
                  stacklevel=2)
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_bilinear(input, size=None, scale_factor=None):
    """Deprecated: interpolate(input, size, scale_factor, mode='bilinear', align_corners=True)."""
    warnings.warn("nn.quantized.functional.upsample_bilinear is deprecated. Use nn.quantized.functional.interpolate "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def upsample_nearest(input, size=None, scale_factor=None):
    """Deprecated: interpolate(input, size, scale_factor, mode='nearest')."""
    warnings.warn("nn.quantized.functional.upsample_nearest is deprecated. Use nn.quantized.functional.interpolate "
                  "instead.", stacklevel=2)
    return interpolate(input, size, scale_factor, mode="nearest")

