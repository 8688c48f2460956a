"""The backbone → classifier(s) → upsample skeleton that FCN and DeepLabV3 share."""

from __future__ import annotations

from collections import OrderedDict

import ember
from ember import nn
from ember.nn import functional as F


class _SimpleSegmentationModel(nn.Module):
    """backbone returns a dict with "out" (and "aux" when aux_classifier is given); each classifier's
    logits are upsampled bilinearly to the input's size. Returns {"out": ..., "aux": ...}."""

    def __init__(self, backbone: nn.Module, classifier: nn.Module, aux_classifier: nn.Module | None = None) -> None:
        super().__init__()
        self.backbone = backbone
        self.classifier = classifier
        self.aux_classifier = aux_classifier

    def forward(self, x: ember.Tensor) -> dict[str, ember.Tensor]:
        input_shape = tuple(x.shape[-2:])
        features = self.backbone(x)
        result = OrderedDict()
        out = self.classifier(features["out"])
        result["out"] = F.interpolate(out, size=input_shape, mode="bilinear", align_corners=False)
        if self.aux_classifier is not None:
            aux = self.aux_classifier(features["aux"])
            result["aux"] = F.interpolate(aux, size=input_shape, mode="bilinear", align_corners=False)
        return result


def _segmentation_weights(url: str, num_params: int, recipe: str, miou: float, pixel_acc: float, ops: float,
                          file_size: float):
    """A COCO-with-VOC-labels entry of a segmentation weights table."""
    from functools import partial

    from ...transforms._presets import SemanticSegmentation
    from .._api import Weights
    from .._meta import _VOC_CATEGORIES

    return Weights(
        url=url,
        transforms=partial(SemanticSegmentation, resize_size=520),
        meta={
            "categories": _VOC_CATEGORIES,
            "min_size": (1, 1),
            "num_params": num_params,
            "recipe": recipe,
            "_metrics": {"COCO-val2017-VOC-labels": {"miou": miou, "pixel_acc": pixel_acc}},
            "_ops": ops,
            "_file_size": file_size,
            "_docs": """
        These weights were trained on a subset of COCO, using only the 20 categories that are present in the Pascal VOC
        dataset.
    """,
        },
    )


def _stage_indices(features: nn.Sequential) -> list[int]:
    """Indices of a MobileNetV3 `features` whose block starts a stage (strides), with the first and
    the last layer: the places its C1..C5 feature maps come out."""
    return [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
