"""Object detection models (SSD, SSDlite, RetinaNet, FCOS, ...), in the shape of torchvision.models.detection."""

from .fcos import *  # noqa: F403
from .retinanet import *  # noqa: F403
from .ssd import *  # noqa: F403
from .ssdlite import *  # noqa: F403
