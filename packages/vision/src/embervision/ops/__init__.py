"""Detection and box ops, in the shape of ``torchvision.ops``.

Box ops and IoU losses live here (``boxes``, ``focal_loss``); the layers of ``misc`` and
``stochastic_depth``, the native RoI ops and ``deform_conv2d`` (kernels in ``embervision._C``), the
multi-scale pooler and the FPN are written separately, so their names load lazily on first use and
the package imports whether or not those modules are present.
"""

from __future__ import annotations

import importlib

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
from .focal_loss import sigmoid_focal_loss

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
    "RoIAlign": "roi_align",
    "roi_align": "roi_align",
    "RoIPool": "roi_pool",
    "roi_pool": "roi_pool",
    "PSRoIAlign": "ps_roi_align",
    "ps_roi_align": "ps_roi_align",
    "PSRoIPool": "ps_roi_pool",
    "ps_roi_pool": "ps_roi_pool",
    "MultiScaleRoIAlign": "poolers",
    "FeaturePyramidNetwork": "feature_pyramid_network",
}

__all__ = [
    "batched_nms", "box_area", "box_convert", "box_iou", "clip_boxes_to_image", "complete_box_iou",
    "complete_box_iou_loss", "distance_box_iou", "distance_box_iou_loss", "generalized_box_iou",
    "generalized_box_iou_loss", "masks_to_boxes", "nms", "remove_small_boxes", "sigmoid_focal_loss",
    "roi_align", "RoIAlign", "roi_pool", "RoIPool", "ps_roi_align", "PSRoIAlign", "ps_roi_pool", "PSRoIPool",
    "MultiScaleRoIAlign", "FeaturePyramidNetwork",
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
    value = getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
