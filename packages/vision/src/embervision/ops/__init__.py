"""Detection and box ops, in the shape of ``torchvision.ops``.

Box ops, IoU losses, the native RoI ops and ``deform_conv2d`` (kernels in ``embervision._C``, loaded
on first call) and the multi-scale pooler are imported here; the layers of ``misc``,
``stochastic_depth``, ``drop_block`` and the FPN are written separately, so their names load lazily on first use and
the package imports whether or not those modules are present.
"""

from __future__ import annotations

import importlib

# The RoI ops are imported eagerly: importing a submodule binds its name on this package, and
# roi_align.py & co. share their function's name (ops.roi_align must stay the function).
from .boxes import (
    batched_nms,
    box_area,
    box_convert,
    box_iou,
    clip_boxes_to_image,
    complete_box_iou,
    complete_box_iou_loss,
    distance_box_iou,
    distance_box_iou_loss,
    generalized_box_iou,
    generalized_box_iou_loss,
    masks_to_boxes,
    nms,
    remove_small_boxes,
)
from .deform_conv import DeformConv2d, deform_conv2d
from .focal_loss import sigmoid_focal_loss
from .poolers import MultiScaleRoIAlign
from .ps_roi_align import PSRoIAlign, ps_roi_align
from .ps_roi_pool import PSRoIPool, ps_roi_pool
from .roi_align import RoIAlign, roi_align
from .roi_pool import RoIPool, roi_pool

# name -> submodule, imported on first access (Note [lazy ops names]).
_LAZY = {
    "Conv2dNormActivation": "misc",
    "Conv3dNormActivation": "misc",
    "FrozenBatchNorm2d": "misc",
    "MLP": "misc",
    "Permute": "misc",
    "SqueezeExcitation": "misc",
    "StochasticDepth": "stochastic_depth",
    "stochastic_depth": "stochastic_depth",
    "FeaturePyramidNetwork": "feature_pyramid_network",
    "DropBlock2d": "drop_block",
    "DropBlock3d": "drop_block",
    "drop_block2d": "drop_block",
    "drop_block3d": "drop_block",
}

__all__ = [
    "batched_nms", "box_area", "box_convert", "box_iou", "clip_boxes_to_image", "complete_box_iou",
    "complete_box_iou_loss", "distance_box_iou", "distance_box_iou_loss", "generalized_box_iou",
    "generalized_box_iou_loss", "masks_to_boxes", "nms", "remove_small_boxes", "sigmoid_focal_loss",
    "roi_align", "RoIAlign", "roi_pool", "RoIPool", "ps_roi_align", "PSRoIAlign", "ps_roi_pool", "PSRoIPool",
    "deform_conv2d", "DeformConv2d", "MultiScaleRoIAlign", "FeaturePyramidNetwork",
    "drop_block2d", "DropBlock2d", "drop_block3d", "DropBlock3d",
]


def __getattr__(name: str) -> object:
    # Note [lazy ops names]: a name whose module is absent is an AttributeError, so hasattr() and
    # `from embervision.ops import X` fail the ordinary way.
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'embervision.ops' has no attribute '{name}'")
    try:
        mod = importlib.import_module(f"embervision.ops.{module}")
    except ModuleNotFoundError as error:
        if error.name != f"embervision.ops.{module}":
            raise
        raise AttributeError(f"module 'embervision.ops' has no attribute '{name}' "
                             f"(embervision.ops.{module} is not available)") from error
    # Bind every lazy name of that module now: the import itself bound the module's own name here
    # (ops.stochastic_depth would otherwise stay the submodule, not the function).
    for lazy_name, lazy_module in _LAZY.items():
        if lazy_module == module:
            globals()[lazy_name] = getattr(mod, lazy_name)
    return globals()[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
