"""transforms v1 functional API (torchvision.transforms.functional) on ember tensors.

The kernels are v2's (``v2.functional``), which take the same arguments; what v1 has of its own is
here: ``to_tensor`` for NumPy arrays, ``get_image_size`` (``[width, height]``, v1's order),
``get_image_num_channels``. PIL images are not supported (no PIL dependency).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import ember

from ._modes import InterpolationMode
from .v2.functional import (
    adjust_brightness,
    adjust_contrast,
    adjust_gamma,
    adjust_hue,
    adjust_saturation,
    adjust_sharpness,
    affine,
    autocontrast,
    center_crop,
    convert_image_dtype,
    crop,
    elastic_transform,
    equalize,
    erase,
    five_crop,
    gaussian_blur,
    get_dimensions,
    hflip,
    invert,
    normalize,
    pad,
    perspective,
    posterize,
    resize,
    resized_crop,
    rgb_to_grayscale,
    rotate,
    solarize,
    ten_crop,
    to_grayscale,
    vflip,
)

__all__ = [
    "InterpolationMode", "adjust_brightness", "adjust_contrast", "adjust_gamma", "adjust_hue", "adjust_saturation",
    "adjust_sharpness", "affine", "autocontrast", "center_crop", "convert_image_dtype", "crop", "elastic_transform",
    "equalize", "erase", "five_crop", "gaussian_blur", "get_dimensions", "get_image_num_channels", "get_image_size",
    "hflip", "invert", "normalize", "pad", "perspective", "posterize", "resize", "resized_crop", "rgb_to_grayscale",
    "rotate", "solarize", "ten_crop", "to_grayscale", "to_tensor", "vflip",
]


def to_tensor(pic: Any) -> ember.Tensor:
    """An ``[H, W, C]`` (or ``[H, W]``) NumPy array as a ``[C, H, W]`` tensor; uint8 values become
    floats in [0, 1] (in the default dtype), other dtypes are kept."""
    if not isinstance(pic, np.ndarray):
        raise TypeError(f"pic should be PIL Image or ndarray. Got {type(pic)}")
    if pic.ndim not in (2, 3):
        raise ValueError(f"pic should be 2/3 dimensional. Got {pic.ndim} dimensions.")
    if pic.ndim == 2:
        pic = pic[:, :, None]
    img = ember.from_numpy(np.ascontiguousarray(pic.transpose((2, 0, 1))))
    if img.dtype == ember.uint8:
        return img.to(ember.get_default_dtype()) / 255
    return img.clone()


def get_image_size(img: ember.Tensor) -> list[int]:
    """``[width, height]`` (v1's order; ``v2.functional.get_size`` is ``[height, width]``)."""
    _, height, width = get_dimensions(img)
    return [width, height]


def get_image_num_channels(img: ember.Tensor) -> int:
    return get_dimensions(img)[0]
