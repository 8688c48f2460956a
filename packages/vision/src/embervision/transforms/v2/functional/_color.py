"""Color kernels on RGB (or one-channel) images ``[..., C, H, W]``, uint8 or float in [0, 1].

Integer results follow torchvision: blends truncate (a cast) while grayscale rounds. CPU images of
dtype uint8, float32 or float64 that autograd does not track run on the native kernels of
``embervision._transforms`` (see ``_native``), which do the same arithmetic as the code here.
"""

from __future__ import annotations

import math
from typing import Any

import ember
import ember.nn.functional as nnF

from ... import _tv_tensors as tvt
from . import _native
from ._misc import to_dtype_image
from ._utils import _dispatch, _max_value, _num_value_bits, _register_kernel_internal

_FLOATS = (ember.float16, ember.bfloat16, ember.float32, ember.float64)


def _register(functional, kernel) -> None:
    for t in (ember.Tensor, tvt.Image, tvt.Video):
        _register_kernel_internal(functional, t)(kernel)


def _is_fp(image: ember.Tensor) -> bool:
    return image.dtype in _FLOATS


def _check_channels(image: ember.Tensor) -> int:
    c = image.shape[-3] if image.ndim >= 3 else 1
    if c not in (1, 3):
        raise TypeError(f"Input image tensor permitted channel values are 1 or 3, but found {c}")
    return c


def _rgb_to_grayscale_image(image: ember.Tensor, num_output_channels: int = 1, preserve_dtype: bool = True):
    r, g, b = image.unbind(-3)
    gray = (r * 0.2989 + g * 0.587 + b * 0.114) if _is_fp(image) else (r.float() * 0.2989 + g.float() * 0.587 + b.float() * 0.114)
    if preserve_dtype:
        if not _is_fp(image):
            gray = gray.round()
        gray = gray.to(image.dtype)
    gray = gray.unsqueeze(-3)
    if num_output_channels == 3:
        gray = gray.expand(*image.shape)
    return gray


def rgb_to_grayscale(inpt: Any, num_output_channels: int = 1) -> Any:
    """ITU-R 601-2 luma (0.2989 R + 0.587 G + 0.114 B), in 1 or 3 channels."""
    return _dispatch(rgb_to_grayscale, inpt, num_output_channels=num_output_channels)


def rgb_to_grayscale_image(image: ember.Tensor, num_output_channels: int = 1) -> ember.Tensor:
    if num_output_channels not in (1, 3):
        raise ValueError(f"num_output_channels must be 1 or 3, got {num_output_channels}.")
    c = _check_channels(image)
    if c == 1:
        return image.expand(*image.shape[:-3], num_output_channels, *image.shape[-2:]).clone()
    if _native.applies(image):
        gray = _native.call("rgb_to_grayscale", image)
        return gray if num_output_channels == 1 else gray.expand(*image.shape).contiguous()
    return _rgb_to_grayscale_image(image, num_output_channels).contiguous()


_register(rgb_to_grayscale, rgb_to_grayscale_image)
to_grayscale = rgb_to_grayscale


def grayscale_to_rgb(inpt: Any) -> Any:
    return _dispatch(grayscale_to_rgb, inpt)


def grayscale_to_rgb_image(image: ember.Tensor) -> ember.Tensor:
    if image.shape[-3] >= 3:
        return image
    return image.expand(*image.shape[:-3], 3, *image.shape[-2:]).clone()


_register(grayscale_to_rgb, grayscale_to_rgb_image)


def _blend(image1: ember.Tensor, image2: ember.Tensor, ratio: float) -> ember.Tensor:
    fp = _is_fp(image1)
    bound = _max_value(image1.dtype)
    out = (image1.to(ember.float32) if not fp else image1) * ratio + (image2 if fp else image2.float()) * (1.0 - ratio)
    out = out.clamp(0, bound)
    return out if fp else out.to(image1.dtype)


def adjust_brightness(inpt: Any, brightness_factor: float) -> Any:
    return _dispatch(adjust_brightness, inpt, brightness_factor=brightness_factor)


def adjust_brightness_image(image: ember.Tensor, brightness_factor: float) -> ember.Tensor:
    if brightness_factor < 0:
        raise ValueError("brightness_factor is not non-negative.")
    _check_channels(image)
    if _native.applies(image):
        return _native.call("adjust_brightness", image, float(brightness_factor))
    fp = _is_fp(image)
    out = (image if fp else image.float()) * brightness_factor
    out = out.clamp(0, _max_value(image.dtype))
    return out if fp else out.to(image.dtype)


def adjust_saturation(inpt: Any, saturation_factor: float) -> Any:
    return _dispatch(adjust_saturation, inpt, saturation_factor=saturation_factor)


def adjust_saturation_image(image: ember.Tensor, saturation_factor: float) -> ember.Tensor:
    if saturation_factor < 0:
        raise ValueError("saturation_factor is not non-negative.")
    if _check_channels(image) == 1:
        return image
    if _native.applies(image):
        return _native.call("adjust_saturation", image, float(saturation_factor))
    gray = _rgb_to_grayscale_image(image, 1, preserve_dtype=False)
    if not _is_fp(image):
        gray = gray.floor()
    return _blend(image, gray, saturation_factor)


def adjust_contrast(inpt: Any, contrast_factor: float) -> Any:
    return _dispatch(adjust_contrast, inpt, contrast_factor=contrast_factor)


def adjust_contrast_image(image: ember.Tensor, contrast_factor: float) -> ember.Tensor:
    if contrast_factor < 0:
        raise ValueError("contrast_factor is not non-negative.")
    c = _check_channels(image)
    if _native.applies(image):
        return _native.call("adjust_contrast", image, float(contrast_factor))
    fp = _is_fp(image)
    if c == 3:
        gray = _rgb_to_grayscale_image(image, 1, preserve_dtype=False)
        if not fp:
            gray = gray.floor()
    else:
        gray = image if fp else image.float()
    mean = gray.mean(dim=(-3, -2, -1), keepdim=True)
    return _blend(image, mean, contrast_factor)


def adjust_sharpness(inpt: Any, sharpness_factor: float) -> Any:
    return _dispatch(adjust_sharpness, inpt, sharpness_factor=sharpness_factor)


def adjust_sharpness_image(image: ember.Tensor, sharpness_factor: float) -> ember.Tensor:
    c = _check_channels(image)
    height, width = image.shape[-2:]
    if sharpness_factor < 0:
        raise ValueError("sharpness_factor is not non-negative.")
    if image.numel() == 0 or height <= 2 or width <= 2:
        return image
    if _native.applies(image):
        return _native.call("adjust_sharpness", image, float(sharpness_factor))
    fp = _is_fp(image)
    bound = _max_value(image.dtype)
    shape = tuple(image.shape)
    x = image.reshape(-1, c, height, width)
    x = x.clone() if fp else x.float()
    # PIL's SMOOTH filter (1s around a 5, over 13); the border pixels stay as they are.
    a, b = 1.0 / 13.0, 5.0 / 13.0
    kernel = ember.tensor([[a, a, a], [a, b, a], [a, a, a]], dtype=x.dtype).expand(c, 1, 3, 3).contiguous()
    blurred = nnF.conv2d(x, kernel, groups=c)
    if not fp:
        blurred = blurred.round()
    inner = x[..., 1:-1, 1:-1]
    x[..., 1:-1, 1:-1] = inner + (blurred - inner) * (1.0 - sharpness_factor)
    x = x.clamp(0, bound).reshape(shape)
    return x if fp else x.to(image.dtype)


def _rgb_to_hsv(image: ember.Tensor) -> ember.Tensor:
    r, g, b = image.unbind(-3)
    maxc, minc = image.amax(-3), image.amin(-3)
    eqc = maxc == minc
    crange = maxc - minc
    ones = ember.ones_like(maxc)
    s = crange / ember.where(eqc, ones, maxc)
    div = ember.where(eqc, ones, crange)
    rc, gc, bc = (maxc - r) / div, (maxc - g) / div, (maxc - b) / div
    h = ember.where(maxc == r, bc - gc, ember.where(maxc == g, 2.0 + rc - bc, 4.0 + gc - rc))
    h = ember.fmod(h / 6.0 + 1.0, 1.0)
    return ember.stack([h, s, maxc], dim=-3)


def _hsv_to_rgb(image: ember.Tensor) -> ember.Tensor:
    h, s, v = image.unbind(-3)
    h6 = h * 6
    i = ember.floor(h6)
    f = h6 - i
    i = ember.remainder(i, 6)
    p = (v * (1.0 - s)).clamp(0.0, 1.0)
    q = (v * (1.0 - s * f)).clamp(0.0, 1.0)
    t = (v * (1.0 - s * (1.0 - f))).clamp(0.0, 1.0)
    # sector i -> (r, g, b) as (v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)
    table = [(v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v), (v, p, q)]
    out = [ember.zeros_like(v) for _ in range(3)]
    for k, channels in enumerate(table):
        sel = i == k
        out = [ember.where(sel, ch, o) for ch, o in zip(channels, out, strict=True)]
    return ember.stack(out, dim=-3)


def adjust_hue(inpt: Any, hue_factor: float) -> Any:
    return _dispatch(adjust_hue, inpt, hue_factor=hue_factor)


def adjust_hue_image(image: ember.Tensor, hue_factor: float) -> ember.Tensor:
    if not (-0.5 <= hue_factor <= 0.5):
        raise ValueError(f"hue_factor ({hue_factor}) is not in [-0.5, 0.5].")
    if _check_channels(image) == 1 or image.numel() == 0:
        return image
    if hue_factor == 0:
        return image
    if _native.applies(image):
        return _native.call("adjust_hue", image, float(hue_factor))
    orig_dtype = image.dtype
    x = to_dtype_image(image, ember.float32, scale=True) if not _is_fp(image) else image
    h, s, v = _rgb_to_hsv(x).unbind(-3)
    h = ember.remainder(h + hue_factor, 1.0)
    out = _hsv_to_rgb(ember.stack([h, s, v], dim=-3))
    return out if _is_fp(image) else to_dtype_image(out, orig_dtype, scale=True)


def adjust_gamma(inpt: Any, gamma: float, gain: float = 1) -> Any:
    return _dispatch(adjust_gamma, inpt, gamma=gamma, gain=gain)


def adjust_gamma_image(image: ember.Tensor, gamma: float, gain: float = 1.0) -> ember.Tensor:
    if gamma < 0:
        raise ValueError("Gamma should be a non-negative real number")
    x = image if _is_fp(image) else to_dtype_image(image, ember.float32, scale=True)
    out = (gain * x**gamma).clamp(0.0, 1.0)
    return out if _is_fp(image) else to_dtype_image(out, image.dtype, scale=True)


def posterize(inpt: Any, bits: int) -> Any:
    """Keeps the top ``bits`` bits of each value."""
    return _dispatch(posterize, inpt, bits=bits)


def posterize_image(image: ember.Tensor, bits: int) -> ember.Tensor:
    if _native.applies(image, min_ndim=1) and 0 <= bits <= 8:
        return _native.call("posterize", image, int(bits))
    if _is_fp(image):
        levels = 1 << bits
        return (image * levels).floor().clamp(0, levels - 1) * (1.0 / levels)
    num_value_bits = _num_value_bits(image.dtype)
    if bits >= num_value_bits:
        return image
    mask = ((1 << bits) - 1) << (num_value_bits - bits)
    return image & mask


def invert(inpt: Any) -> Any:
    return _dispatch(invert, inpt)


def invert_image(image: ember.Tensor) -> ember.Tensor:
    if _native.applies(image, min_ndim=1):
        return _native.call("invert", image)
    if image.dtype == ember.uint8:
        return ~image
    if _is_fp(image):
        return 1.0 - image
    return _max_value(image.dtype) - image


def solarize(inpt: Any, threshold: float) -> Any:
    """Inverts the values at or above ``threshold``."""
    return _dispatch(solarize, inpt, threshold=threshold)


def solarize_image(image: ember.Tensor, threshold: float) -> ember.Tensor:
    if threshold > _max_value(image.dtype):
        raise TypeError("Threshold should be less or equal the maximum value of the dtype")
    if _native.applies(image, min_ndim=1) and not math.isnan(threshold):
        return _native.call("solarize", image, float(threshold))
    return ember.where(image >= threshold, invert_image(image), image)


def autocontrast(inpt: Any) -> Any:
    """Stretches each channel to the full value range."""
    return _dispatch(autocontrast, inpt)


def autocontrast_image(image: ember.Tensor) -> ember.Tensor:
    _check_channels(image)
    if image.numel() == 0:
        return image
    if _native.applies(image):
        return _native.call("autocontrast", image)
    bound = _max_value(image.dtype)
    fp = _is_fp(image)
    x = image if fp else image.float()
    minimum = x.amin(dim=(-2, -1), keepdim=True)
    maximum = x.amax(dim=(-2, -1), keepdim=True)
    eq = maximum == minimum
    inv_scale = ember.where(eq, ember.ones_like(maximum), (maximum - minimum) / bound)
    minimum = ember.where(eq, ember.zeros_like(minimum), minimum)
    return ((x - minimum) / inv_scale).clamp(0, bound).to(image.dtype)


def equalize(inpt: Any) -> Any:
    """Histogram equalization per channel (PIL's look-up table, on the uint8 values)."""
    return _dispatch(equalize, inpt)


def equalize_image(image: ember.Tensor) -> ember.Tensor:
    if image.numel() == 0:
        return image
    output_dtype = image.dtype
    x = to_dtype_image(image, ember.uint8, scale=True)
    if _native.applies(x, min_ndim=2):
        # one 256-bin histogram and look-up table per plane, in C++
        return to_dtype_image(_native.call("equalize", x), output_dtype, scale=True)
    batch_shape = tuple(x.shape[:-2])
    flat = x.flatten(-2).long()  # [..., H*W]
    hist = ember.zeros(batch_shape + (256,), dtype=ember.int64)
    hist.scatter_add_(-1, flat, ember.ones_like(flat))
    cum_hist = hist.cumsum(-1)
    # PIL: step = (pixels not of the largest present value) // 255; lut[k] = (cum[k-1] + step // 2) // step
    last = cum_hist.argmax(-1, keepdim=True)  # first index reaching the total: the largest present value
    num_non_max = flat.shape[-1] - hist.gather(-1, last)
    step = ember.div(num_non_max, 255, rounding_mode="floor")
    valid = step != 0
    safe_step = ember.where(valid, step, ember.ones_like(step))
    lut = ember.div(cum_hist[..., :-1] + ember.div(safe_step, 2, rounding_mode="floor"), safe_step,
                    rounding_mode="floor").clamp(0, 255)
    lut = nnF.pad(lut, [1, 0])
    equalized = lut.gather(-1, flat).reshape(x.shape).to(ember.uint8)
    out = ember.where(valid.unsqueeze(-1), equalized, x)
    return to_dtype_image(out, output_dtype, scale=True)


for _f, _k in ((adjust_brightness, adjust_brightness_image), (adjust_saturation, adjust_saturation_image),
               (adjust_contrast, adjust_contrast_image), (adjust_sharpness, adjust_sharpness_image),
               (adjust_hue, adjust_hue_image), (adjust_gamma, adjust_gamma_image), (posterize, posterize_image),
               (invert, invert_image), (solarize, solarize_image), (autocontrast, autocontrast_image),
               (equalize, equalize_image)):
    _register(_f, _k)


def permute_channels(inpt: Any, permutation: list[int]) -> Any:
    """Reorders the channels: output channel i is input channel ``permutation[i]``."""
    return _dispatch(permute_channels, inpt, permutation=permutation)


def permute_channels_image(image: ember.Tensor, permutation: list[int]) -> ember.Tensor:
    shape = tuple(image.shape)
    num_channels, height, width = shape[-3:]
    if len(permutation) != num_channels:
        raise ValueError(f"Length of permutation does not match number of channels: {len(permutation)} != "
                         f"{num_channels}")
    if image.numel() == 0:
        return image
    index = ember.as_tensor(permutation, dtype=ember.int64) if not isinstance(permutation, ember.Tensor) else permutation
    return image.reshape(-1, num_channels, height, width).index_select(1, index.long()).reshape(shape)


_register(permute_channels, permute_channels_image)
