"""DeepLabV3 (Chen et al., "Rethinking Atrous Convolution for Semantic Image Segmentation") on dilated
ResNets and MobileNetV3-Large."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

from .._api import WeightsEnum, register_model
from .._utils import IntermediateLayerGetter, handle_legacy_interface
from ..mobilenetv3 import MobileNet_V3_Large_Weights, MobileNetV3, mobilenet_v3_large
from ..resnet import ResNet, ResNet50_Weights, ResNet101_Weights, resnet50, resnet101
from ._utils import _segmentation_weights, _SimpleSegmentationModel, _stage_indices
from .fcn import FCNHead, _segmentation_args

__all__ = ["DeepLabV3", "DeepLabV3_ResNet50_Weights", "DeepLabV3_ResNet101_Weights",
           "DeepLabV3_MobileNet_V3_Large_Weights", "deeplabv3_mobilenet_v3_large", "deeplabv3_resnet50",
           "deeplabv3_resnet101"]


class DeepLabV3(_SimpleSegmentationModel):
    """DeepLabV3: a backbone returning {"out"[, "aux"]}, the ASPP head and an optional FCN auxiliary head."""


class DeepLabHead(nn.Sequential):
    """ASPP (rates 12, 24, 36) → 3x3 conv, BN, ReLU → 1x1 conv to num_classes logits."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__(
            ASPP(in_channels, [12, 24, 36]),
            nn.Conv2d(256, 256, 3, padding=1, bias=False),
            nn.BatchNorm2d(256),
            nn.ReLU(),
            nn.Conv2d(256, num_classes, 1),
        )


class ASPPConv(nn.Sequential):
    """3x3 atrous conv (padding = dilation keeps the size), BN, ReLU."""

    def __init__(self, in_channels: int, out_channels: int, dilation: int) -> None:
        super().__init__(
            nn.Conv2d(in_channels, out_channels, 3, padding=dilation, dilation=dilation, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )


class ASPPPooling(nn.Sequential):
    """Image-level features: global average pool, 1x1 conv, BN, ReLU, upsampled back to the input size."""

    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
        )

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        size = tuple(x.shape[-2:])
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    """Atrous spatial pyramid pooling: a 1x1 branch, one ASPPConv per rate and ASPPPooling, concatenated
    and projected to out_channels (with dropout 0.5)."""

    def __init__(self, in_channels: int, atrous_rates: Sequence[int], out_channels: int = 256) -> None:
        super().__init__()
        modules: list[nn.Module] = [nn.Sequential(nn.Conv2d(in_channels, out_channels, 1, bias=False),
                                                  nn.BatchNorm2d(out_channels), nn.ReLU())]
        for rate in tuple(atrous_rates):
            modules.append(ASPPConv(in_channels, out_channels, rate))
        modules.append(ASPPPooling(in_channels, out_channels))
        self.convs = nn.ModuleList(modules)
        self.project = nn.Sequential(
            nn.Conv2d(len(self.convs) * out_channels, out_channels, 1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(),
            nn.Dropout(0.5),
        )

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.project(ember.cat([conv(x) for conv in self.convs], dim=1))


def _deeplabv3_resnet(backbone: ResNet, num_classes: int, aux: bool | None) -> DeepLabV3:
    return_layers = {"layer4": "out"}
    if aux:
        return_layers["layer3"] = "aux"
    backbone = IntermediateLayerGetter(backbone, return_layers=return_layers)
    aux_classifier = FCNHead(1024, num_classes) if aux else None
    classifier = DeepLabHead(2048, num_classes)
    return DeepLabV3(backbone, classifier, aux_classifier)


def _deeplabv3_mobilenetv3(backbone: MobileNetV3, num_classes: int, aux: bool | None) -> DeepLabV3:
    features = backbone.features
    stage_indices = _stage_indices(features)
    out_pos = stage_indices[-1]  # C5, output stride 16 with the dilated last stage
    aux_pos = stage_indices[-4]  # C2, output stride 8
    out_inplanes = features[out_pos].out_channels
    aux_inplanes = features[aux_pos].out_channels
    return_layers = {str(out_pos): "out"}
    if aux:
        return_layers[str(aux_pos)] = "aux"
    body = IntermediateLayerGetter(features, return_layers=return_layers)
    aux_classifier = FCNHead(aux_inplanes, num_classes) if aux else None
    classifier = DeepLabHead(out_inplanes, num_classes)
    return DeepLabV3(body, classifier, aux_classifier)


_RECIPE = "https://github.com/pytorch/vision/tree/main/references/segmentation#"


class DeepLabV3_ResNet50_Weights(WeightsEnum):
    COCO_WITH_VOC_LABELS_V1 = _segmentation_weights(
        "https://download.pytorch.org/models/deeplabv3_resnet50_coco-cd0a2569.pth", 42004074,
        _RECIPE + "deeplabv3_resnet50", 66.4, 92.4, 178.722, 160.515)
    DEFAULT = COCO_WITH_VOC_LABELS_V1


class DeepLabV3_ResNet101_Weights(WeightsEnum):
    COCO_WITH_VOC_LABELS_V1 = _segmentation_weights(
        "https://download.pytorch.org/models/deeplabv3_resnet101_coco-586e9e4e.pth", 60996202,
        _RECIPE + "fcn_resnet101", 67.4, 92.4, 258.743, 233.217)
    DEFAULT = COCO_WITH_VOC_LABELS_V1


class DeepLabV3_MobileNet_V3_Large_Weights(WeightsEnum):
    COCO_WITH_VOC_LABELS_V1 = _segmentation_weights(
        "https://download.pytorch.org/models/deeplabv3_mobilenet_v3_large-fc3c493d.pth", 11029328,
        _RECIPE + "deeplabv3_mobilenet_v3_large", 60.3, 91.2, 10.452, 42.301)
    DEFAULT = COCO_WITH_VOC_LABELS_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", DeepLabV3_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1),
                         weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1))
def deeplabv3_resnet50(*, weights: DeepLabV3_ResNet50_Weights | None = None, progress: bool = True,
                       num_classes: int | None = None, aux_loss: bool | None = None,
                       weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
                       **kwargs: Any) -> DeepLabV3:
    """DeepLabV3 with a ResNet-50 backbone (layers 3 and 4 dilated); arguments as fcn_resnet50."""
    weights = DeepLabV3_ResNet50_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes, aux_loss = _segmentation_args(weights, num_classes, aux_loss)
    backbone = resnet50(weights=weights_backbone, replace_stride_with_dilation=[False, True, True])
    model = _deeplabv3_resnet(backbone, num_classes, aux_loss)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


@register_model()
@handle_legacy_interface(weights=("pretrained", DeepLabV3_ResNet101_Weights.COCO_WITH_VOC_LABELS_V1),
                         weights_backbone=("pretrained_backbone", ResNet101_Weights.IMAGENET1K_V1))
def deeplabv3_resnet101(*, weights: DeepLabV3_ResNet101_Weights | None = None, progress: bool = True,
                        num_classes: int | None = None, aux_loss: bool | None = None,
                        weights_backbone: ResNet101_Weights | None = ResNet101_Weights.IMAGENET1K_V1,
                        **kwargs: Any) -> DeepLabV3:
    """DeepLabV3 with a ResNet-101 backbone; arguments as fcn_resnet50."""
    weights = DeepLabV3_ResNet101_Weights.verify(weights)
    weights_backbone = ResNet101_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes, aux_loss = _segmentation_args(weights, num_classes, aux_loss)
    backbone = resnet101(weights=weights_backbone, replace_stride_with_dilation=[False, True, True])
    model = _deeplabv3_resnet(backbone, num_classes, aux_loss)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


@register_model()
@handle_legacy_interface(weights=("pretrained", DeepLabV3_MobileNet_V3_Large_Weights.COCO_WITH_VOC_LABELS_V1),
                         weights_backbone=("pretrained_backbone", MobileNet_V3_Large_Weights.IMAGENET1K_V1))
def deeplabv3_mobilenet_v3_large(
        *, weights: DeepLabV3_MobileNet_V3_Large_Weights | None = None, progress: bool = True,
        num_classes: int | None = None, aux_loss: bool | None = None,
        weights_backbone: MobileNet_V3_Large_Weights | None = MobileNet_V3_Large_Weights.IMAGENET1K_V1,
        **kwargs: Any) -> DeepLabV3:
    """DeepLabV3 with a MobileNetV3-Large backbone (last stage dilated); arguments as fcn_resnet50."""
    weights = DeepLabV3_MobileNet_V3_Large_Weights.verify(weights)
    weights_backbone = MobileNet_V3_Large_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes, aux_loss = _segmentation_args(weights, num_classes, aux_loss)
    backbone = mobilenet_v3_large(weights=weights_backbone, dilated=True)
    model = _deeplabv3_mobilenetv3(backbone, num_classes, aux_loss)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model
