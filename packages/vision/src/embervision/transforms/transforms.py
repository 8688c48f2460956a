"""transforms v1 (torchvision.transforms): one image in, one image out.

The v1 classes are the v2 ones, which torchvision documents as drop-in replacements: on a single
image (a tensor) they do the same thing. v1's own ``ToTensor`` converts NumPy HWC arrays.
"""

from __future__ import annotations

from typing import Any

import ember

from . import functional as F
from ._modes import InterpolationMode
from .v2 import (
    AugMix,
    AutoAugment,
    AutoAugmentPolicy,
    CenterCrop,
    ColorJitter,
    Compose,
    ConvertImageDtype,
    ElasticTransform,
    FiveCrop,
    GaussianBlur,
    Grayscale,
    Lambda,
    LinearTransformation,
    Normalize,
    Pad,
    RandAugment,
    RandomAdjustSharpness,
    RandomAffine,
    RandomApply,
    RandomAutocontrast,
    RandomChoice,
    RandomCrop,
    RandomEqualize,
    RandomErasing,
    RandomGrayscale,
    RandomHorizontalFlip,
    RandomInvert,
    RandomOrder,
    RandomPerspective,
    RandomPosterize,
    RandomResizedCrop,
    RandomRotation,
    RandomSolarize,
    RandomVerticalFlip,
    Resize,
    TenCrop,
    TrivialAugmentWide,
)

__all__ = [
    "AugMix", "AutoAugment", "AutoAugmentPolicy", "CenterCrop", "ColorJitter", "Compose", "ConvertImageDtype",
    "ElasticTransform", "FiveCrop", "GaussianBlur", "Grayscale", "InterpolationMode", "Lambda",
    "LinearTransformation", "Normalize", "Pad", "RandAugment", "RandomAdjustSharpness", "RandomAffine",
    "RandomApply", "RandomAutocontrast", "RandomChoice", "RandomCrop", "RandomEqualize", "RandomErasing",
    "RandomGrayscale", "RandomHorizontalFlip", "RandomInvert", "RandomOrder", "RandomPerspective",
    "RandomPosterize", "RandomResizedCrop", "RandomRotation", "RandomSolarize", "RandomVerticalFlip", "Resize",
    "TenCrop", "ToTensor", "TrivialAugmentWide",
]


class ToTensor:
    """NumPy ``[H, W, C]`` uint8 array -> float ``[C, H, W]`` tensor in [0, 1] (see F.to_tensor)."""

    def __call__(self, pic: Any) -> ember.Tensor:
        return F.to_tensor(pic)

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
