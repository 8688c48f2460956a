"""FCN (Long et al., "Fully Convolutional Networks for Semantic Segmentation") on dilated ResNets."""

from __future__ import annotations

from typing import Any

from ember import nn

from .._api import WeightsEnum, register_model
from .._utils import IntermediateLayerGetter, _ovewrite_value_param, handle_legacy_interface
from ..resnet import ResNet, ResNet50_Weights, ResNet101_Weights, resnet50, resnet101
from ._utils import _segmentation_weights, _SimpleSegmentationModel

__all__ = ["FCN", "FCN_ResNet50_Weights", "FCN_ResNet101_Weights", "fcn_resnet50", "fcn_resnet101"]


class FCN(_SimpleSegmentationModel):
    """FCN: a backbone returning {"out"[, "aux"]}, a classifier head and an optional auxiliary head."""


class FCNHead(nn.Sequential):
    """3x3 conv to in_channels // 4, BN, ReLU, dropout 0.1, then 1x1 conv to `channels` logits."""

    def __init__(self, in_channels: int, channels: int) -> None:
        inter_channels = in_channels // 4
        super().__init__(
            nn.Conv2d(in_channels, inter_channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(inter_channels),
            nn.ReLU(),
            nn.Dropout(0.1),
            nn.Conv2d(inter_channels, channels, 1),
        )


_RECIPE = "https://github.com/pytorch/vision/tree/main/references/segmentation#"


class FCN_ResNet50_Weights(WeightsEnum):
    COCO_WITH_VOC_LABELS_V1 = _segmentation_weights(
        "https://download.pytorch.org/models/fcn_resnet50_coco-1167a1af.pth", 35322218,
        _RECIPE + "fcn_resnet50", 60.5, 91.4, 152.717, 135.009)
    DEFAULT = COCO_WITH_VOC_LABELS_V1


class FCN_ResNet101_Weights(WeightsEnum):
    # torchvision's table links FCN-101 to the DeepLabV3-101 recipe and vice versa; kept as published.
    COCO_WITH_VOC_LABELS_V1 = _segmentation_weights(
        "https://download.pytorch.org/models/fcn_resnet101_coco-7ecb50ca.pth", 54314346,
        _RECIPE + "deeplabv3_resnet101", 63.7, 91.9, 232.738, 207.711)
    DEFAULT = COCO_WITH_VOC_LABELS_V1


def _fcn_resnet(backbone: ResNet, num_classes: int, aux: bool | None) -> FCN:
    # layer4 (stride 8 with the dilations) feeds the head, layer3 the auxiliary head.
    return_layers = {"layer4": "out"}
    if aux:
        return_layers["layer3"] = "aux"
    backbone = IntermediateLayerGetter(backbone, return_layers=return_layers)
    aux_classifier = FCNHead(1024, num_classes) if aux else None
    classifier = FCNHead(2048, num_classes)
    return FCN(backbone, classifier, aux_classifier)


def _segmentation_args(weights: WeightsEnum | None, num_classes: int | None,
                       aux_loss: bool | None) -> tuple[int, bool | None]:
    """num_classes and aux_loss as the weights fix them (a conflicting value is a ValueError); 21
    classes (VOC) without weights."""
    if weights is not None:
        num_classes = _ovewrite_value_param("num_classes", num_classes, len(weights.meta["categories"]))
        aux_loss = _ovewrite_value_param("aux_loss", aux_loss, True)
    elif num_classes is None:
        num_classes = 21
    return num_classes, aux_loss


@register_model()
@handle_legacy_interface(weights=("pretrained", FCN_ResNet50_Weights.COCO_WITH_VOC_LABELS_V1),
                         weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1))
def fcn_resnet50(*, weights: FCN_ResNet50_Weights | None = None, progress: bool = True,
                 num_classes: int | None = None, aux_loss: bool | None = None,
                 weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1, **kwargs: Any) -> FCN:
    """FCN with a ResNet-50 backbone (layers 3 and 4 dilated, output stride 8).

    weights: FCN_ResNet50_Weights (fix num_classes=21 and aux_loss=True; the backbone weights are then
    not loaded). num_classes: including the background (default 21). aux_loss: add the auxiliary head
    on layer3. weights_backbone: ImageNet weights for the ResNet.
    """
    weights = FCN_ResNet50_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes, aux_loss = _segmentation_args(weights, num_classes, aux_loss)
    backbone = resnet50(weights=weights_backbone, replace_stride_with_dilation=[False, True, True])
    model = _fcn_resnet(backbone, num_classes, aux_loss)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


@register_model()
@handle_legacy_interface(weights=("pretrained", FCN_ResNet101_Weights.COCO_WITH_VOC_LABELS_V1),
                         weights_backbone=("pretrained_backbone", ResNet101_Weights.IMAGENET1K_V1))
def fcn_resnet101(*, weights: FCN_ResNet101_Weights | None = None, progress: bool = True,
                  num_classes: int | None = None, aux_loss: bool | None = None,
                  weights_backbone: ResNet101_Weights | None = ResNet101_Weights.IMAGENET1K_V1,
                  **kwargs: Any) -> FCN:
    """FCN with a ResNet-101 backbone; arguments as fcn_resnet50."""
    weights = FCN_ResNet101_Weights.verify(weights)
    weights_backbone = ResNet101_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes, aux_loss = _segmentation_args(weights, num_classes, aux_loss)
    backbone = resnet101(weights=weights_backbone, replace_stride_with_dilation=[False, True, True])
    model = _fcn_resnet(backbone, num_classes, aux_loss)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model
