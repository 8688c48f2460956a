"""Backbones of the detection models: ResNet/MobileNet with an FPN, and the trainable-layers rule
(torchvision.models.detection.backbone_utils)."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import ember
from ember import nn

from ...ops.misc import FrozenBatchNorm2d
from .. import mobilenetv2, mobilenetv3, resnet
from .._api import WeightsEnum, _get_enum_from_fn
from .._utils import IntermediateLayerGetter, handle_legacy_interface

# FeaturePyramidNetwork and its extra blocks live in embervision.ops.feature_pyramid_network; they are
# imported where used, so the models that need none of them (SSD) import without it.


def _validate_trainable_layers(is_trained: bool, trainable_backbone_layers: int | None, max_value: int,
                               default_value: int) -> int:
    """How many backbone stages (from the top) train: default_value, or all of them when nothing is
    pretrained (a requested value then only warns); outside [0, max_value] is a ValueError."""
    if not is_trained:
        if trainable_backbone_layers is not None:
            warnings.warn("Changing trainable_backbone_layers has no effect if neither pretrained nor "
                          f"pretrained_backbone have been set to True, falling back to "
                          f"trainable_backbone_layers={max_value} so that all layers are trainable", stacklevel=2)
        trainable_backbone_layers = max_value
    if trainable_backbone_layers is None:
        trainable_backbone_layers = default_value
    if trainable_backbone_layers < 0 or trainable_backbone_layers > max_value:
        raise ValueError(f"Trainable backbone layers should be in the range [0,{max_value}], "
                         f"found {trainable_backbone_layers}")
    return trainable_backbone_layers



class BackboneWithFPN(nn.Module):
    """`backbone`'s layers named in return_layers ({layer name: output name}), run through a
    FeaturePyramidNetwork: an OrderedDict of out_channels-wide maps (plus extra_blocks' levels)."""

    def __init__(self, backbone: nn.Module, return_layers: dict[str, str], in_channels_list: list[int],
                 out_channels: int, extra_blocks=None, norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        from ...ops.feature_pyramid_network import FeaturePyramidNetwork, LastLevelMaxPool
        if extra_blocks is None:
            extra_blocks = LastLevelMaxPool()
        self.body = IntermediateLayerGetter(backbone, return_layers=return_layers)
        self.fpn = FeaturePyramidNetwork(in_channels_list=in_channels_list, out_channels=out_channels,
                                         extra_blocks=extra_blocks, norm_layer=norm_layer)
        self.out_channels = out_channels

    def forward(self, x: ember.Tensor) -> dict[str, ember.Tensor]:
        return self.fpn(self.body(x))


@handle_legacy_interface(
    weights=("pretrained", lambda kwargs: _get_enum_from_fn(resnet.__dict__[kwargs["backbone_name"]])["IMAGENET1K_V1"]))
def resnet_fpn_backbone(*, backbone_name: str, weights: WeightsEnum | None,
                        norm_layer: Callable[..., nn.Module] = FrozenBatchNorm2d, trainable_layers: int = 3,
                        returned_layers: list[int] | None = None, extra_blocks=None) -> BackboneWithFPN:
    """A ResNet (by name, e.g. "resnet50") with an FPN on top; the stem and the first
    5 - trainable_layers stages are frozen. returned_layers: which of layer1..layer4 feed the FPN
    (default all); extra_blocks: default one max-pooled level ("pool")."""
    backbone = resnet.__dict__[backbone_name](weights=weights, norm_layer=norm_layer)
    return _resnet_fpn_extractor(backbone, trainable_layers, returned_layers, extra_blocks)


def _resnet_fpn_extractor(backbone: resnet.ResNet, trainable_layers: int, returned_layers: list[int] | None = None,
                          extra_blocks=None, norm_layer: Callable[..., nn.Module] | None = None) -> BackboneWithFPN:
    if trainable_layers < 0 or trainable_layers > 5:
        raise ValueError(f"Trainable layers should be in the range [0,5], got {trainable_layers}")
    layers_to_train = ["layer4", "layer3", "layer2", "layer1", "conv1"][:trainable_layers]
    if trainable_layers == 5:
        layers_to_train.append("bn1")
    for name, parameter in backbone.named_parameters():
        if all(not name.startswith(layer) for layer in layers_to_train):
            parameter.requires_grad_(False)
    if returned_layers is None:
        returned_layers = [1, 2, 3, 4]
    if min(returned_layers) <= 0 or max(returned_layers) >= 5:
        raise ValueError(f"Each returned layer should be in the range [1,4]. Got {returned_layers}")
    return_layers = {f"layer{k}": str(v) for v, k in enumerate(returned_layers)}
    in_channels_stage2 = backbone.inplanes // 8
    in_channels_list = [in_channels_stage2 * 2 ** (i - 1) for i in returned_layers]
    return BackboneWithFPN(backbone, return_layers, in_channels_list, 256, extra_blocks=extra_blocks,
                           norm_layer=norm_layer)


@handle_legacy_interface(
    weights=("pretrained",
             lambda kwargs: _get_enum_from_fn(mobilenetv3.__dict__.get(kwargs["backbone_name"])
                                              or mobilenetv2.__dict__[kwargs["backbone_name"]])["IMAGENET1K_V1"]))
def mobilenet_backbone(*, backbone_name: str, weights: WeightsEnum | None, fpn: bool,
                       norm_layer: Callable[..., nn.Module] = FrozenBatchNorm2d, trainable_layers: int = 2,
                       returned_layers: list[int] | None = None, extra_blocks=None) -> nn.Module:
    """A MobileNetV2/V3 (by name) as a detection backbone: with an FPN over the stages in
    returned_layers (default the last two), or (fpn=False) its features and a 1x1 conv to 256 channels."""
    builder = mobilenetv3.__dict__.get(backbone_name) or mobilenetv2.__dict__[backbone_name]
    backbone = builder(weights=weights, norm_layer=norm_layer)
    return _mobilenet_extractor(backbone, fpn, trainable_layers, returned_layers, extra_blocks)


def _mobilenet_extractor(backbone: nn.Module, fpn: bool, trainable_layers: int,
                         returned_layers: list[int] | None = None, extra_blocks=None,
                         norm_layer: Callable[..., nn.Module] | None = None) -> nn.Module:
    features = backbone.features
    # The first and last layers, and every block that strides, start the stages C0..Cn.
    stage_indices = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
    num_stages = len(stage_indices)
    if trainable_layers < 0 or trainable_layers > num_stages:
        raise ValueError(f"Trainable layers should be in the range [0,{num_stages}], got {trainable_layers} ")
    freeze_before = len(features) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    for b in features[:freeze_before]:
        for parameter in b.parameters():
            parameter.requires_grad_(False)
    out_channels = 256
    if fpn:
        if returned_layers is None:
            returned_layers = [num_stages - 2, num_stages - 1]
        if min(returned_layers) < 0 or max(returned_layers) >= num_stages:
            raise ValueError(f"Each returned layer should be in the range [0,{num_stages - 1}], got {returned_layers} ")
        return_layers = {f"{stage_indices[k]}": str(v) for v, k in enumerate(returned_layers)}
        in_channels_list = [features[stage_indices[i]].out_channels for i in returned_layers]
        return BackboneWithFPN(features, return_layers, in_channels_list, out_channels, extra_blocks=extra_blocks,
                               norm_layer=norm_layer)
    # A 1x1 conv mixes the last layer's channels down to out_channels.
    m = nn.Sequential(features, nn.Conv2d(features[-1].out_channels, out_channels, 1))
    m.out_channels = out_channels
    return m

