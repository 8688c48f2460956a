"""tv_tensors: tensor subclasses that tell transforms v2 what each input is (torchvision.tv_tensors).

Ops on them return plain tensors unless ``set_return_type("TVTensor")`` (Note [TVTensor return type]
in ``_tv_tensor.py`` says how this maps onto ember, which has no ``__torch_function__``).
"""

from ._bounding_boxes import BoundingBoxes, BoundingBoxFormat
from ._image import Image, Mask, Video
from ._tv_tensor import TVTensor, set_return_type, wrap

__all__ = ["BoundingBoxFormat", "BoundingBoxes", "Image", "Mask", "TVTensor", "Video", "set_return_type", "wrap"]
