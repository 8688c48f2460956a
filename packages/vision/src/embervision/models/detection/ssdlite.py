"""SSDlite (Sandler et al., MobileNetV2; Howard et al., MobileNetV3) with a MobileNetV3-Large backbone."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import ember
from ember import nn

from ...ops.misc import Conv2dNormActivation
from .._api import WeightsEnum, register_model
from .._utils import _ovewrite_value_param, handle_legacy_interface
from ..mobilenetv3 import MobileNet_V3_Large_Weights, MobileNetV3, mobilenet_v3_large
from . import _utils as det_utils
from .anchor_utils import DefaultBoxGenerator
from .backbone_utils import _validate_trainable_layers
from .ssd import SSD, SSDScoringHead

__all__ = ["SSDLite320_MobileNet_V3_Large_Weights", "ssdlite320_mobilenet_v3_large"]


def _prediction_block(in_channels: int, out_channels: int, kernel_size: int,
                      norm_layer: Callable[..., nn.Module]) -> nn.Sequential:
    # A depthwise conv-BN-ReLU6, then a pointwise conv to the predictions.
    return nn.Sequential(
        Conv2dNormActivation(in_channels, in_channels, kernel_size=kernel_size, groups=in_channels,
                             norm_layer=norm_layer, activation_layer=nn.ReLU6),
        nn.Conv2d(in_channels, out_channels, 1),
    )


def _extra_block(in_channels: int, out_channels: int, norm_layer: Callable[..., nn.Module]) -> nn.Sequential:
    # A 1x1 bottleneck to half the output width, a strided depthwise 3x3, a 1x1 expansion.
    intermediate_channels = out_channels // 2
    return nn.Sequential(
        Conv2dNormActivation(in_channels, intermediate_channels, kernel_size=1, norm_layer=norm_layer,
                             activation_layer=nn.ReLU6),
        Conv2dNormActivation(intermediate_channels, intermediate_channels, kernel_size=3, stride=2,
                             groups=intermediate_channels, norm_layer=norm_layer, activation_layer=nn.ReLU6),
        Conv2dNormActivation(intermediate_channels, out_channels, kernel_size=1, norm_layer=norm_layer,
                             activation_layer=nn.ReLU6),
    )


def _normal_init(conv: nn.Module) -> None:
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, mean=0.0, std=0.03)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


class SSDLiteClassificationHead(SSDScoringHead):
    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int,
                 norm_layer: Callable[..., nn.Module]) -> None:
        cls_logits = nn.ModuleList([_prediction_block(c, num_classes * a, 3, norm_layer)
                                    for c, a in zip(in_channels, num_anchors, strict=True)])
        _normal_init(cls_logits)
        super().__init__(cls_logits, num_classes)


class SSDLiteRegressionHead(SSDScoringHead):
    def __init__(self, in_channels: list[int], num_anchors: list[int], norm_layer: Callable[..., nn.Module]) -> None:
        bbox_reg = nn.ModuleList([_prediction_block(c, 4 * a, 3, norm_layer)
                                  for c, a in zip(in_channels, num_anchors, strict=True)])
        _normal_init(bbox_reg)
        super().__init__(bbox_reg, 4)


class SSDLiteHead(nn.Module):
    """SSDHead with depthwise-separable prediction blocks."""

    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int,
                 norm_layer: Callable[..., nn.Module]) -> None:
        super().__init__()
        self.classification_head = SSDLiteClassificationHead(in_channels, num_anchors, num_classes, norm_layer)
        self.regression_head = SSDLiteRegressionHead(in_channels, num_anchors, norm_layer)

    def forward(self, x: list[ember.Tensor]) -> dict[str, ember.Tensor]:
        return {"bbox_regression": self.regression_head(x), "cls_logits": self.classification_head(x)}


class SSDLiteFeatureExtractorMobileNet(nn.Module):
    """MobileNet features split inside the C4 block (after its expansion conv, output stride 16) and at
    the end (C5), then four extra blocks halving the resolution: six feature maps."""

    def __init__(self, backbone: nn.Sequential, c4_pos: int, norm_layer: Callable[..., nn.Module],
                 width_mult: float = 1.0, min_depth: int = 16) -> None:
        super().__init__()
        if backbone[c4_pos].use_res_connect:
            raise ValueError("backbone[c4_pos].use_res_connect should be False")
        self.features = nn.Sequential(
            nn.Sequential(*backbone[:c4_pos], backbone[c4_pos].block[0]),  # up to C4's expansion layer
            nn.Sequential(backbone[c4_pos].block[1:], *backbone[c4_pos + 1:]),  # the rest, to C5
        )

        def get_depth(d: int) -> int:
            return max(min_depth, int(d * width_mult))

        extra = nn.ModuleList([
            _extra_block(backbone[-1].out_channels, get_depth(512), norm_layer),
            _extra_block(get_depth(512), get_depth(256), norm_layer),
            _extra_block(get_depth(256), get_depth(256), norm_layer),
            _extra_block(get_depth(256), get_depth(128), norm_layer),
        ])
        _normal_init(extra)
        self.extra = extra

    def forward(self, x: ember.Tensor) -> dict[str, ember.Tensor]:
        output = []
        for block in self.features:
            x = block(x)
            output.append(x)
        for block in self.extra:
            x = block(x)
            output.append(x)
        return OrderedDict([(str(i), v) for i, v in enumerate(output)])


def _mobilenet_extractor(backbone: MobileNetV3, trainable_layers: int,
                         norm_layer: Callable[..., nn.Module]) -> SSDLiteFeatureExtractorMobileNet:
    features = backbone.features
    stage_indices = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
    num_stages = len(stage_indices)
    if not 0 <= trainable_layers <= num_stages:
        raise ValueError(f"Trainable layers should be in the range [0,{num_stages}], found {trainable_layers}")
    freeze_before = len(features) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    for b in features[:freeze_before]:
        for parameter in b.parameters():
            parameter.requires_grad_(False)
    return SSDLiteFeatureExtractorMobileNet(features, stage_indices[-2], norm_layer)


class SSDLite320_MobileNet_V3_Large_Weights(WeightsEnum):
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/ssdlite320_mobilenet_v3_large_coco-a79551df.pth", 3440060,
        "https://github.com/pytorch/vision/tree/main/references/detection#ssdlite320-mobilenetv3-large",
        {"box_map": 21.3}, """These weights were produced by following a similar training recipe as on the paper.""",
        _ops=0.583, _file_size=13.418)
    DEFAULT = COCO_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", SSDLite320_MobileNet_V3_Large_Weights.COCO_V1),
                         weights_backbone=("pretrained_backbone", MobileNet_V3_Large_Weights.IMAGENET1K_V1))
def ssdlite320_mobilenet_v3_large(
        *, weights: SSDLite320_MobileNet_V3_Large_Weights | None = None, progress: bool = True,
        num_classes: int | None = None,
        weights_backbone: MobileNet_V3_Large_Weights | None = MobileNet_V3_Large_Weights.IMAGENET1K_V1,
        trainable_backbone_layers: int | None = None, norm_layer: Callable[..., nn.Module] | None = None,
        **kwargs: Any) -> SSD:
    """SSDlite at 320x320 with a MobileNetV3-Large backbone (its last stage halved when the backbone is
    not pretrained, as the COCO weights have it).

    weights, num_classes, weights_backbone: as ssd300_vgg16. trainable_backbone_layers: 0..6 (default
    6). norm_layer: default BatchNorm2d(eps=0.001, momentum=0.03). kwargs go to SSD and the backbone.
    """
    weights = SSDLite320_MobileNet_V3_Large_Weights.verify(weights)
    weights_backbone = MobileNet_V3_Large_Weights.verify(weights_backbone)
    if "size" in kwargs:
        warnings.warn("The size of the model is already fixed; ignoring the parameter.", stacklevel=2)
        kwargs.pop("size")
    if weights is not None:
        weights_backbone = None
        num_classes = _ovewrite_value_param("num_classes", num_classes, len(weights.meta["categories"]))
    elif num_classes is None:
        num_classes = 91
    trainable_backbone_layers = _validate_trainable_layers(weights is not None or weights_backbone is not None,
                                                           trainable_backbone_layers, 6, 6)
    # A backbone trained from scratch (or from the COCO weights) uses the reduced tail.
    reduce_tail = weights_backbone is None
    if norm_layer is None:
        norm_layer = partial(nn.BatchNorm2d, eps=0.001, momentum=0.03)
    backbone = mobilenet_v3_large(weights=weights_backbone, progress=progress, norm_layer=norm_layer,
                                  reduced_tail=reduce_tail, **kwargs)
    if weights_backbone is None:
        _normal_init(backbone)
    backbone = _mobilenet_extractor(backbone, trainable_backbone_layers, norm_layer)

    size = (320, 320)
    anchor_generator = DefaultBoxGenerator([[2, 3] for _ in range(6)], min_ratio=0.2, max_ratio=0.95)
    out_channels = det_utils.retrieve_out_channels(backbone, size)
    num_anchors = anchor_generator.num_anchors_per_location()
    if len(out_channels) != len(anchor_generator.aspect_ratios):
        raise ValueError(f"The length of the output channels from the backbone {len(out_channels)} do not match the "
                         f"length of the anchor generator aspect ratios {len(anchor_generator.aspect_ratios)}")
    defaults = {
        "score_thresh": 0.001,
        "nms_thresh": 0.55,
        "detections_per_img": 300,
        "topk_candidates": 300,
        # The backbone expects inputs in [-1, 1].
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
    }
    model = SSD(backbone, anchor_generator, size, num_classes,
                head=SSDLiteHead(out_channels, num_anchors, num_classes, norm_layer), **{**defaults, **kwargs})
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model
