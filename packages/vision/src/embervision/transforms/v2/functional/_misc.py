"""normalize, gaussian_blur, to_dtype (with value scaling between integer and float ranges)."""

from __future__ import annotations

import math
from typing import Any

import ember
import ember.nn.functional as nnF

from ... import _tv_tensors as tvt
from . import _native
from ._utils import _dispatch, _max_value, _num_value_bits, _register_kernel_internal


def normalize(inpt: Any, mean: list[float], std: list[float], inplace: bool = False) -> Any:
    """``(image - mean) / std`` per channel, on float images."""
    return _dispatch(normalize, inpt, mean=mean, std=std, inplace=inplace)


def _per_channel(value: Any, channels: int) -> list[float] | None:
    """``value`` (a number, or a sequence of 1 or ``channels`` numbers) as one float per channel, or
    None for anything else (the Python path then broadcasts it, or reports why it cannot)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [float(value)] * channels
    if isinstance(value, (list, tuple)) and len(value) in (1, channels) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return [float(v) for v in value] * (channels if len(value) == 1 else 1)
    return None


def normalize_image(image: ember.Tensor, mean: list[float], std: list[float], inplace: bool = False) -> ember.Tensor:
    if not image.is_floating_point():
        raise TypeError(f"Input tensor should be a float tensor. Got {image.dtype}.")
    if image.ndim < 3:
        raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got {tuple(image.shape)}.")
    if isinstance(std, (tuple, list)):
        divzero = not all(std)
    elif isinstance(std, (int, float)):
        divzero = std == 0
    else:
        divzero = False
    if divzero:
        raise ValueError("std evaluated to zero, leading to division by zero.")
    if _native.applies(image, dtypes=_native._FLOATS):
        per_channel = _per_channel(mean, image.shape[-3]), _per_channel(std, image.shape[-3])
        if None not in per_channel:
            # fused (x - mean) / std per channel, in C++
            out = _native.call("normalize", image, *per_channel)
            return image.copy_(out) if inplace else out
    mean_t = ember.as_tensor(mean, dtype=image.dtype)
    std_t = ember.as_tensor(std, dtype=image.dtype)
    if mean_t.ndim == 1:
        mean_t = mean_t.reshape(-1, 1, 1)
    if std_t.ndim == 1:
        std_t = std_t.reshape(-1, 1, 1)
    if inplace:
        return image.sub_(mean_t).div_(std_t)
    return (image - mean_t) / std_t


for _t in (ember.Tensor, tvt.Image, tvt.Video):
    _register_kernel_internal(normalize, _t)(normalize_image)


def _gaussian_kernel1d(kernel_size: int, sigma: float, dtype) -> ember.Tensor:
    lim = (kernel_size - 1) / (2.0 * math.sqrt(2.0) * sigma)
    x = ember.linspace(-lim, lim, steps=kernel_size, dtype=dtype)
    return ember.softmax(-(x**2), dim=0)


def gaussian_blur(inpt: Any, kernel_size: Any, sigma: Any = None) -> Any:
    """Blurs with a ``kernel_size`` (x, y) Gaussian of standard deviation ``sigma`` (x, y);
    borders reflect."""
    return _dispatch(gaussian_blur, inpt, kernel_size=kernel_size, sigma=sigma)


def gaussian_blur_image(image: ember.Tensor, kernel_size: Any, sigma: Any = None) -> ember.Tensor:
    if isinstance(kernel_size, int):
        kernel_size = [kernel_size, kernel_size]
    elif len(kernel_size) != 2:
        raise ValueError(f"If kernel_size is a sequence its length should be 2. Got {len(kernel_size)}")
    for ksize in kernel_size:
        if ksize % 2 == 0 or ksize < 0:
            raise ValueError(f"kernel_size should have odd and positive integers. Got {kernel_size}")
    if sigma is None:
        sigma = [ksize * 0.15 + 0.35 for ksize in kernel_size]
    elif isinstance(sigma, (list, tuple)):
        if len(sigma) == 1:
            sigma = [float(sigma[0])] * 2
        elif len(sigma) != 2:
            raise ValueError(f"If sigma is a sequence, its length should be 2. Got {len(sigma)}")
        sigma = [float(s) for s in sigma]
    elif isinstance(sigma, (int, float)):
        sigma = [float(sigma)] * 2
    else:
        raise TypeError(f"sigma should be either float or sequence of floats. Got {type(sigma)}")
    for s in sigma:
        if s <= 0.0:
            raise ValueError(f"sigma should have positive values. Got {sigma}")
    if image.numel() == 0:
        return image
    shape = tuple(image.shape)
    fp = image.dtype in (ember.float32, ember.float64)
    dtype = image.dtype if fp else ember.float32
    channels = shape[-3] if len(shape) >= 3 else 1
    x = image.reshape(-1, channels, shape[-2], shape[-1]).to(dtype)
    kx = _gaussian_kernel1d(kernel_size[0], sigma[0], dtype)
    ky = _gaussian_kernel1d(kernel_size[1], sigma[1], dtype)
    x = nnF.pad(x, [kernel_size[0] // 2, kernel_size[0] // 2, kernel_size[1] // 2, kernel_size[1] // 2],
                mode="reflect")
    # The 2-D Gaussian is the outer product of the two 1-D ones: two 1-D passes (kx + ky taps a
    # pixel instead of kx * ky) give the same result up to rounding order.
    x = nnF.conv2d(x, kx.reshape(1, 1, 1, -1).expand(channels, 1, 1, kernel_size[0]).contiguous(), groups=channels)
    out = nnF.conv2d(x, ky.reshape(1, 1, -1, 1).expand(channels, 1, kernel_size[1], 1).contiguous(),
                     groups=channels).reshape(shape)
    return out if fp else out.round().to(image.dtype)


for _t in (ember.Tensor, tvt.Image, tvt.Video):
    _register_kernel_internal(gaussian_blur, _t)(gaussian_blur_image)


def to_dtype(inpt: Any, dtype: Any = ember.float32, scale: bool = False) -> Any:
    """Converts to ``dtype``; ``scale=True`` also maps value ranges (uint8 [0, 255] <-> float
    [0, 1]; images and videos only)."""
    return _dispatch(to_dtype, inpt, dtype=dtype, scale=scale)


def to_dtype_image(image: ember.Tensor, dtype: Any = ember.float32, scale: bool = False) -> ember.Tensor:
    if not scale or image.dtype == dtype:
        return image.to(dtype)
    float_input = image.is_floating_point()
    float_output = dtype in (ember.float16, ember.bfloat16, ember.float32, ember.float64)
    if float_input:
        if float_output:
            return image.to(dtype)
        if (image.dtype == ember.float32 and dtype in (ember.int32, ember.int64)) or (
                image.dtype == ember.float64 and dtype == ember.int64):
            raise RuntimeError(f"The conversion from {image.dtype} to {dtype} cannot be performed safely.")
        # Scaling by (max + 1 - eps) then truncating spreads [0, 1] evenly over the integer range
        # (multiplying by max would give max only for exactly 1.0).
        eps = 1e-3
        return (image * (float(_max_value(dtype)) + 1.0 - eps)).to(dtype)
    if float_output:
        return image.to(dtype) * (1.0 / _max_value(image.dtype))
    bits_in, bits_out = _num_value_bits(image.dtype), _num_value_bits(dtype)
    if bits_in > bits_out:
        return ember.bitwise_right_shift(image, bits_in - bits_out).to(dtype)
    return ember.bitwise_left_shift(image.to(dtype), bits_out - bits_in)


def _to_dtype_plain(inpt: Any, dtype: Any = ember.float32, scale: bool = False) -> Any:
    return inpt.to(dtype)  # masks and boxes are never scaled


for _t in (ember.Tensor, tvt.Image, tvt.Video):
    _register_kernel_internal(to_dtype, _t)(to_dtype_image)
for _t in (tvt.Mask, tvt.BoundingBoxes):
    _register_kernel_internal(to_dtype, _t, tv_tensor_wrapper=False)(_to_dtype_plain)

def convert_image_dtype(image: ember.Tensor, dtype: Any = ember.float32) -> ember.Tensor:
    """The v1 name of ``to_dtype_image(image, dtype, scale=True)``."""
    return to_dtype_image(image, dtype, scale=True)


def erase(inpt: Any, i: int, j: int, h: int, w: int, v: ember.Tensor, inplace: bool = False) -> Any:
    """Sets the ``h x w`` window at ``(i, j)`` to ``v`` (broadcast over it)."""
    return _dispatch(erase, inpt, i=i, j=j, h=h, w=w, v=v, inplace=inplace)


def erase_image(image: ember.Tensor, i: int, j: int, h: int, w: int, v: ember.Tensor,
                inplace: bool = False) -> ember.Tensor:
    if not inplace:
        image = image.clone()
    image[..., i:i + h, j:j + w] = v
    return image


for _t in (ember.Tensor, tvt.Image, tvt.Video):
    _register_kernel_internal(erase, _t)(erase_image)
