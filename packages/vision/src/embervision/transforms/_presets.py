"""Inference presets that weights carry (`weights.transforms()`), as torchvision.transforms._presets.

They work on ember tensors only (uint8 with values 0..255, or floating point in [0, 1]), shaped
[..., C, H, W]; the resize and crop steps are private here so the presets depend on nothing but ember.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

__all__ = ["ObjectDetection", "ImageClassification", "SemanticSegmentation", "OpticalFlow"]

# The interpolation modes a tensor resize supports, by torchvision's InterpolationMode value.
_INTERPOLATIONS = ("nearest", "nearest-exact", "bilinear", "bicubic")


def _mode_name(interpolation: Any) -> str:
    # Accepts an InterpolationMode member (its value is the mode's name) or the name itself.
    mode = getattr(interpolation, "value", interpolation)
    if mode not in _INTERPOLATIONS:
        raise ValueError(f"interpolation must be one of {list(_INTERPOLATIONS)} (or the InterpolationMode "
                         f"member of that name) for tensor images, but got {interpolation!r}")
    return mode


def _check_image(img: Any) -> None:
    if not isinstance(img, ember.Tensor):
        raise TypeError(f"img should be Tensor Image. Got {type(img)}")
    if img.dim() < 3:
        raise ValueError(f"Expected tensor to be a tensor image of size (..., C, H, W). Got {tuple(img.shape)}.")
    if not (img.dtype == ember.uint8 or img.dtype.is_floating_point):
        raise TypeError(f"Expected a uint8 or floating point image, but got {img.dtype}")


def _as_batch(img: ember.Tensor) -> tuple[ember.Tensor, tuple[int, ...]]:
    # interpolate and pad want [N, C, H, W]: fold every leading dim into N.
    lead = tuple(img.shape[:-3])
    return img.reshape(-1, *img.shape[-3:]), lead


def _resize(img: ember.Tensor, size: int, mode: str, antialias: bool | None) -> ember.Tensor:
    """Resize so that the shorter side is `size`, keeping the aspect ratio (torchvision's rule: the
    longer side is int(size * long / short))."""
    h, w = img.shape[-2:]
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = size, int(size * long / short)
    new_h, new_w = (new_long, new_short) if w <= h else (new_short, new_long)
    if (new_h, new_w) == (h, w):
        return img
    x, lead = _as_batch(img)
    dtype = x.dtype
    if dtype == ember.uint8:
        x = x.to(ember.float32)
    interpolating = mode in ("bilinear", "bicubic")
    x = F.interpolate(x, size=[new_h, new_w], mode=mode, align_corners=False if interpolating else None,
                      antialias=bool(antialias) and interpolating)
    if dtype == ember.uint8:
        # Bicubic overshoots; uint8 images round back into 0..255 as torchvision's resize does.
        x = x.round().clamp(0, 255).to(ember.uint8)
    return x.reshape(*lead, *x.shape[-3:])


def _center_crop(img: ember.Tensor, size: int) -> ember.Tensor:
    """The central size×size window; an image smaller than that is first zero-padded around."""
    h, w = img.shape[-2:]
    if size > h or size > w:
        pad_w, pad_h = max(size - w, 0), max(size - h, 0)
        x, lead = _as_batch(img)
        # F.pad takes (left, right, top, bottom); the odd pixel goes right and bottom.
        x = F.pad(x, [pad_w // 2, (pad_w + 1) // 2, pad_h // 2, (pad_h + 1) // 2], value=0)
        img = x.reshape(*lead, *x.shape[-3:])
        h, w = img.shape[-2:]
    top = int(round((h - size) / 2.0))
    left = int(round((w - size) / 2.0))
    return img[..., top:top + size, left:left + size]


class ImageClassification(nn.Module):
    """Resize the shorter side to `resize_size`, crop the central `crop_size` square, scale to float
    [0, 1] and normalize each channel with `mean` and `std`.

    Takes [..., C, H, W] ember tensors, uint8 (0..255) or floating point (already in [0, 1]);
    returns float32 (float64 input stays float64).
    """

    def __init__(self, *, crop_size: int, resize_size: int = 256,
                 mean: Sequence[float] = (0.485, 0.456, 0.406), std: Sequence[float] = (0.229, 0.224, 0.225),
                 interpolation: Any = "bilinear", antialias: bool | None = True) -> None:
        super().__init__()
        _mode_name(interpolation)
        if min(crop_size, resize_size) <= 0:
            raise ValueError(f"crop_size and resize_size must be positive, but got {crop_size} and {resize_size}")
        if len(mean) != len(std):
            raise ValueError(f"mean and std must have one value per channel, but got {len(mean)} and {len(std)}")
        if any(s == 0 for s in std):
            raise ValueError(f"std evaluated to zero, leading to division by zero: {list(std)}")
        self.crop_size = [crop_size]
        self.resize_size = [resize_size]
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img: ember.Tensor) -> ember.Tensor:
        _check_image(img)
        channels = img.shape[-3]
        if len(self.mean) not in (1, channels):
            raise ValueError(f"the image has {channels} channels but mean and std have {len(self.mean)} values")
        img = _resize(img, self.resize_size[0], _mode_name(self.interpolation), self.antialias)
        img = _center_crop(img, self.crop_size[0])
        if img.dtype == ember.uint8:
            img = img.to(ember.float32) / 255.0
        mean = ember.tensor(self.mean, dtype=img.dtype).reshape(-1, 1, 1)
        std = ember.tensor(self.std, dtype=img.dtype).reshape(-1, 1, 1)
        return (img - mean) / std

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(\n    crop_size={self.crop_size}\n    resize_size={self.resize_size}\n"
                f"    mean={self.mean}\n    std={self.std}\n    interpolation={self.interpolation}\n)")

    def describe(self) -> str:
        return ("Accepts batched ``(B, C, H, W)`` and single ``(C, H, W)`` image ``ember.Tensor`` objects. "
                f"The images are resized to ``resize_size={self.resize_size}`` using "
                f"``interpolation={self.interpolation}``, followed by a central crop of "
                f"``crop_size={self.crop_size}``. Finally the values are first rescaled to ``[0.0, 1.0]`` and "
                f"then normalized using ``mean={self.mean}`` and ``std={self.std}``.")


def _to_float(img: ember.Tensor) -> ember.Tensor:
    # convert_image_dtype(img, float): uint8 0..255 becomes float32 0..1; float images pass through.
    if img.dtype == ember.uint8:
        return img.to(ember.float32) / 255.0
    return img


class ObjectDetection(nn.Module):
    """The detection models' preset: only rescales uint8 images to float [0, 1] (the models resize
    and normalize inside, in GeneralizedRCNNTransform)."""

    def forward(self, img: ember.Tensor) -> ember.Tensor:
        _check_image(img)
        return _to_float(img)

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def describe(self) -> str:
        return ("Accepts batched ``(B, C, H, W)`` and single ``(C, H, W)`` image ``ember.Tensor`` objects. "
                "The images are rescaled to ``[0.0, 1.0]``.")


class SemanticSegmentation(nn.Module):
    """Resize the shorter side to `resize_size` (None: no resize), scale to float [0, 1] and normalize
    each channel with `mean` and `std`."""

    def __init__(self, *, resize_size: int | None, mean: Sequence[float] = (0.485, 0.456, 0.406),
                 std: Sequence[float] = (0.229, 0.224, 0.225), interpolation: Any = "bilinear",
                 antialias: bool | None = True) -> None:
        super().__init__()
        _mode_name(interpolation)
        if resize_size is not None and resize_size <= 0:
            raise ValueError(f"resize_size must be positive, but got {resize_size}")
        if len(mean) != len(std):
            raise ValueError(f"mean and std must have one value per channel, but got {len(mean)} and {len(std)}")
        if any(s == 0 for s in std):
            raise ValueError(f"std evaluated to zero, leading to division by zero: {list(std)}")
        self.resize_size = [resize_size] if resize_size is not None else None
        self.mean = list(mean)
        self.std = list(std)
        self.interpolation = interpolation
        self.antialias = antialias

    def forward(self, img: ember.Tensor) -> ember.Tensor:
        _check_image(img)
        channels = img.shape[-3]
        if len(self.mean) not in (1, channels):
            raise ValueError(f"the image has {channels} channels but mean and std have {len(self.mean)} values")
        if isinstance(self.resize_size, list):
            img = _resize(img, self.resize_size[0], _mode_name(self.interpolation), self.antialias)
        img = _to_float(img)
        mean = ember.tensor(self.mean, dtype=img.dtype).reshape(-1, 1, 1)
        std = ember.tensor(self.std, dtype=img.dtype).reshape(-1, 1, 1)
        return (img - mean) / std

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(\n    resize_size={self.resize_size}\n    mean={self.mean}\n"
                f"    std={self.std}\n    interpolation={self.interpolation}\n)")

    def describe(self) -> str:
        return ("Accepts batched ``(B, C, H, W)`` and single ``(C, H, W)`` image ``ember.Tensor`` objects. "
                f"The images are resized to ``resize_size={self.resize_size}`` using "
                f"``interpolation={self.interpolation}``. Finally the values are first rescaled to ``[0.0, 1.0]`` "
                f"and then normalized using ``mean={self.mean}`` and ``std={self.std}``.")


class OpticalFlow(nn.Module):
    """The optical flow models' preset: both images scaled to float and mapped from [0, 1] to [-1, 1]."""

    def forward(self, img1: ember.Tensor, img2: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
        _check_image(img1)
        _check_image(img2)
        img1 = _to_float(img1) * 2 - 1
        img2 = _to_float(img2) * 2 - 1
        return img1.contiguous(), img2.contiguous()

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"

    def describe(self) -> str:
        return ("Accepts batched ``(B, C, H, W)`` and single ``(C, H, W)`` image ``ember.Tensor`` objects. "
                "The images are rescaled to ``[-1.0, 1.0]``.")
