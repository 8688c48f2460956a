"""Transforms v2 (torchvision.transforms.v2): transforms that act jointly on images, videos,
masks and bounding boxes, dispatching per input type (Note [v2 input rules] in ``_transform.py``).
"""

from .._modes import InterpolationMode
from . import functional
from ._augment import CutMix, MixUp, RandomErasing
from ._auto_augment import AugMix, AutoAugment, AutoAugmentPolicy, RandAugment, TrivialAugmentWide
from ._color import (
    ColorJitter,
    Grayscale,
    RandomAdjustSharpness,
    RandomAutocontrast,
    RandomChannelPermutation,
    RandomEqualize,
    RandomGrayscale,
    RandomInvert,
    RandomPhotometricDistort,
    RandomPosterize,
    RandomSolarize,
)
from ._container import Compose, RandomApply, RandomChoice, RandomOrder
from ._geometry import (
    CenterCrop,
    ElasticTransform,
    FiveCrop,
    Pad,
    RandomAffine,
    RandomCrop,
    RandomHorizontalFlip,
    RandomIoUCrop,
    RandomPerspective,
    RandomResize,
    RandomResizedCrop,
    RandomRotation,
    RandomShortestSize,
    RandomVerticalFlip,
    RandomZoomOut,
    Resize,
    ScaleJitter,
    TenCrop,
)
from ._meta import ClampBoundingBoxes, ConvertBoundingBoxFormat
from ._misc import (
    ConvertImageDtype,
    GaussianBlur,
    Identity,
    Lambda,
    LinearTransformation,
    Normalize,
    SanitizeBoundingBoxes,
    ToDtype,
    UniformTemporalSubsample,
)
from ._transform import Transform
from ._type_conversion import ToImage, ToPureTensor

__all__ = [
    "Identity", "RandomChannelPermutation", "RandomIoUCrop", "RandomPhotometricDistort", "RandomResize",
    "RandomShortestSize", "RandomZoomOut", "ScaleJitter", "UniformTemporalSubsample",
    "FiveCrop", "LinearTransformation", "RandomErasing", "TenCrop",
    "AugMix", "AutoAugment", "AutoAugmentPolicy", "CutMix", "MixUp", "RandAugment", "TrivialAugmentWide",
    "CenterCrop", "ClampBoundingBoxes", "ColorJitter", "Compose", "ConvertBoundingBoxFormat",
    "ConvertImageDtype", "ElasticTransform", "GaussianBlur", "Grayscale", "InterpolationMode", "Lambda",
    "Normalize", "Pad", "RandomAdjustSharpness", "RandomAffine", "RandomApply", "RandomAutocontrast",
    "RandomChoice", "RandomCrop", "RandomEqualize", "RandomGrayscale", "RandomHorizontalFlip", "RandomInvert",
    "RandomOrder", "RandomPerspective", "RandomPosterize", "RandomResizedCrop", "RandomRotation",
    "RandomSolarize", "RandomVerticalFlip", "Resize", "SanitizeBoundingBoxes", "ToDtype", "ToImage",
    "ToPureTensor", "Transform", "functional"
]
