"""Lite R-ASPP (Howard et al., "Searching for MobileNetV3") on MobileNetV3-Large."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

from .._api import WeightsEnum, register_model
from .._utils import IntermediateLayerGetter, _ovewrite_value_param, handle_legacy_interface
from ..mobilenetv3 import MobileNet_V3_Large_Weights, MobileNetV3, mobilenet_v3_large
from ._utils import _segmentation_weights, _stage_indices

__all__ = ["LRASPP", "LRASPP_MobileNet_V3_Large_Weights", "lraspp_mobilenet_v3_large"]


class LRASPP(nn.Module):
    """backbone returns {"low", "high"} feature maps (low_channels and high_channels wide); the head's
    logits are upsampled to the input size. Returns {"out": logits}."""

    def __init__(self, backbone: nn.Module, low_channels: int, high_channels: int, num_classes: int,
                 inter_channels: int = 128) -> None:
        super().__init__()
        self.backbone = backbone
        self.classifier = LRASPPHead(low_channels, high_channels, num_classes, inter_channels)

    def forward(self, input: ember.Tensor) -> dict[str, ember.Tensor]:
        features = self.backbone(input)
        out = self.classifier(features)
        out = F.interpolate(out, size=tuple(input.shape[-2:]), mode="bilinear", align_corners=False)
        result = OrderedDict()
        result["out"] = out
        return result


class LRASPPHead(nn.Module):
    """The high features through 1x1 conv-BN-ReLU, gated by a global-pool sigmoid attention, upsampled to
    the low features' size; each path gets its own 1x1 classifier and the logits add."""

    def __init__(self, low_channels: int, high_channels: int, num_classes: int, inter_channels: int) -> None:
        super().__init__()
        self.cbr = nn.Sequential(nn.Conv2d(high_channels, inter_channels, 1, bias=False),
                                 nn.BatchNorm2d(inter_channels), nn.ReLU(inplace=True))
        self.scale = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(high_channels, inter_channels, 1, bias=False),
                                   nn.Sigmoid())
        self.low_classifier = nn.Conv2d(low_channels, num_classes, 1)
        self.high_classifier = nn.Conv2d(inter_channels, num_classes, 1)

    def forward(self, input: dict[str, ember.Tensor]) -> ember.Tensor:
        low, high = input["low"], input["high"]
        x = self.cbr(high) * self.scale(high)
        x = F.interpolate(x, size=tuple(low.shape[-2:]), mode="bilinear", align_corners=False)
        return self.low_classifier(low) + self.high_classifier(x)


def _lraspp_mobilenetv3(backbone: MobileNetV3, num_classes: int) -> LRASPP:
    features = backbone.features
    stage_indices = _stage_indices(features)
    low_pos = stage_indices[-4]  # C2, output stride 8
    high_pos = stage_indices[-1]  # C5, output stride 16
    low_channels = features[low_pos].out_channels
    high_channels = features[high_pos].out_channels
    body = IntermediateLayerGetter(features, return_layers={str(low_pos): "low", str(high_pos): "high"})
    return LRASPP(body, low_channels, high_channels, num_classes)


class LRASPP_MobileNet_V3_Large_Weights(WeightsEnum):
    COCO_WITH_VOC_LABELS_V1 = _segmentation_weights(
        "https://download.pytorch.org/models/lraspp_mobilenet_v3_large-d234d4ea.pth", 3221538,
        "https://github.com/pytorch/vision/tree/main/references/segmentation#lraspp_mobilenet_v3_large", 57.9, 91.2,
        2.086, 12.49)
    DEFAULT = COCO_WITH_VOC_LABELS_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", LRASPP_MobileNet_V3_Large_Weights.COCO_WITH_VOC_LABELS_V1),
                         weights_backbone=("pretrained_backbone", MobileNet_V3_Large_Weights.IMAGENET1K_V1))
def lraspp_mobilenet_v3_large(
        *, weights: LRASPP_MobileNet_V3_Large_Weights | None = None, progress: bool = True,
        num_classes: int | None = None,
        weights_backbone: MobileNet_V3_Large_Weights | None = MobileNet_V3_Large_Weights.IMAGENET1K_V1,
        **kwargs: Any) -> LRASPP:
    """LR-ASPP with a MobileNetV3-Large backbone (last stage dilated). It has no auxiliary head:
    aux_loss=True is a NotImplementedError. Other arguments as fcn_resnet50."""
    if kwargs.pop("aux_loss", False):
        raise NotImplementedError("This model does not use auxiliary loss")
    weights = LRASPP_MobileNet_V3_Large_Weights.verify(weights)
    weights_backbone = MobileNet_V3_Large_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
        num_classes = _ovewrite_value_param("num_classes", num_classes, len(weights.meta["categories"]))
    elif num_classes is None:
        num_classes = 21
    backbone = mobilenet_v3_large(weights=weights_backbone, dilated=True)
    model = _lraspp_mobilenetv3(backbone, num_classes)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model
