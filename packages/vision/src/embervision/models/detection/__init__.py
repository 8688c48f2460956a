"""Object detection, instance segmentation and person keypoint models (Faster/Mask/Keypoint R-CNN,
RetinaNet, FCOS, SSD, SSDlite), in the shape of torchvision.models.detection."""

from .faster_rcnn import *  # noqa: F403
from .fcos import *  # noqa: F403
from .keypoint_rcnn import *  # noqa: F403
from .mask_rcnn import *  # noqa: F403
from .retinanet import *  # noqa: F403
from .ssd import *  # noqa: F403
from .ssdlite import *  # noqa: F403
