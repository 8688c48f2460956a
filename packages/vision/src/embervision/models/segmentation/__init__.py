"""Semantic segmentation models (FCN, DeepLabV3, LR-ASPP), in the shape of torchvision.models.segmentation."""

from .deeplabv3 import *  # noqa: F403
from .fcn import *  # noqa: F403
from .lraspp import *  # noqa: F403
