"""The tv_tensors names the transforms use (one import point, so kernels read as torchvision's)."""

from ..tv_tensors import BoundingBoxes, BoundingBoxFormat, Image, Mask, TVTensor, Video, wrap

BUILTIN = (Image, Video, Mask, BoundingBoxes)

__all__ = ["BUILTIN", "BoundingBoxFormat", "BoundingBoxes", "Image", "Mask", "TVTensor", "Video", "wrap"]
