"""Object detection models (SSD, SSDlite, ...), in the shape of torchvision.models.detection."""

from .ssd import *  # noqa: F403
from .ssdlite import *  # noqa: F403
