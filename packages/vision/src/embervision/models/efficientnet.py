"""EfficientNet B0-B7 (Tan and Le) and EfficientNetV2 S/M/L (Tan and Le, 2021)."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import ember
from ember import nn

from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ..ops.stochastic_depth import StochasticDepth
from ._api import WeightsEnum, register_model
from ._utils import _imagenet_weights, _make_divisible, _ovewrite_named_param, handle_legacy_interface

__all__ = [
    "EfficientNet", "EfficientNet_B0_Weights", "EfficientNet_B1_Weights", "EfficientNet_B2_Weights",
    "EfficientNet_B3_Weights", "EfficientNet_B4_Weights", "EfficientNet_B5_Weights", "EfficientNet_B6_Weights",
    "EfficientNet_B7_Weights", "EfficientNet_V2_S_Weights", "EfficientNet_V2_M_Weights", "EfficientNet_V2_L_Weights",
    "efficientnet_b0", "efficientnet_b1", "efficientnet_b2", "efficientnet_b3", "efficientnet_b4", "efficientnet_b5",
    "efficientnet_b6", "efficientnet_b7", "efficientnet_v2_s", "efficientnet_v2_m", "efficientnet_v2_l",
]


@dataclass
class _MBConvConfig:
    expand_ratio: float
    kernel: int
    stride: int
    input_channels: int
    out_channels: int
    num_layers: int
    block: Callable[..., nn.Module]

    @staticmethod
    def adjust_channels(channels: int, width_mult: float, min_value: int | None = None) -> int:
        return _make_divisible(channels * width_mult, 8, min_value)


class MBConvConfig(_MBConvConfig):
    """A stage of MBConv blocks (Table 1 of EfficientNet, Table 4 of EfficientNetV2); widths scale by
    width_mult (rounded to multiples of 8) and the block count by depth_mult (rounded up)."""

    def __init__(self, expand_ratio: float, kernel: int, stride: int, input_channels: int, out_channels: int,
                 num_layers: int, width_mult: float = 1.0, depth_mult: float = 1.0,
                 block: Callable[..., nn.Module] | None = None) -> None:
        input_channels = self.adjust_channels(input_channels, width_mult)
        out_channels = self.adjust_channels(out_channels, width_mult)
        num_layers = self.adjust_depth(num_layers, depth_mult)
        if block is None:
            block = MBConv
        super().__init__(expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block)

    @staticmethod
    def adjust_depth(num_layers: int, depth_mult: float) -> int:
        return int(math.ceil(num_layers * depth_mult))


class FusedMBConvConfig(_MBConvConfig):
    """A stage of FusedMBConv blocks (Table 4 of EfficientNetV2)."""

    def __init__(self, expand_ratio: float, kernel: int, stride: int, input_channels: int, out_channels: int,
                 num_layers: int, block: Callable[..., nn.Module] | None = None) -> None:
        if block is None:
            block = FusedMBConv
        super().__init__(expand_ratio, kernel, stride, input_channels, out_channels, num_layers, block)


class MBConv(nn.Module):
    """1x1 expand → depthwise → squeeze-excitation → 1x1 project, SiLU activations, a stochastic-depth
    residual when shapes allow."""

    def __init__(self, cnf: MBConvConfig, stochastic_depth_prob: float, norm_layer: Callable[..., nn.Module],
                 se_layer: Callable[..., nn.Module] = SqueezeExcitation) -> None:
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels

        layers: list[nn.Module] = []
        activation_layer = nn.SiLU
        expanded_channels = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=activation_layer))
        layers.append(Conv2dNormActivation(expanded_channels, expanded_channels, kernel_size=cnf.kernel,
                                           stride=cnf.stride, groups=expanded_channels, norm_layer=norm_layer,
                                           activation_layer=activation_layer))
        squeeze_channels = max(1, cnf.input_channels // 4)
        # torchvision's SE uses SiLU(inplace=True): Note [in-place activations] in embervision/ops/misc.py.
        layers.append(se_layer(expanded_channels, squeeze_channels, activation=nn.SiLU))
        layers.append(Conv2dNormActivation(expanded_channels, cnf.out_channels, kernel_size=1, norm_layer=norm_layer,
                                           activation_layer=None))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result) + input
        return result


class FusedMBConv(nn.Module):
    """EfficientNetV2's early block: the expand and depthwise convolutions fused into one k×k conv."""

    def __init__(self, cnf: FusedMBConvConfig, stochastic_depth_prob: float,
                 norm_layer: Callable[..., nn.Module]) -> None:
        super().__init__()
        if not (1 <= cnf.stride <= 2):
            raise ValueError("illegal stride value")
        self.use_res_connect = cnf.stride == 1 and cnf.input_channels == cnf.out_channels

        layers: list[nn.Module] = []
        activation_layer = nn.SiLU
        expanded_channels = cnf.adjust_channels(cnf.input_channels, cnf.expand_ratio)
        if expanded_channels != cnf.input_channels:
            layers.append(Conv2dNormActivation(cnf.input_channels, expanded_channels, kernel_size=cnf.kernel,
                                               stride=cnf.stride, norm_layer=norm_layer,
                                               activation_layer=activation_layer))
            layers.append(Conv2dNormActivation(expanded_channels, cnf.out_channels, kernel_size=1,
                                               norm_layer=norm_layer, activation_layer=None))
        else:
            layers.append(Conv2dNormActivation(cnf.input_channels, cnf.out_channels, kernel_size=cnf.kernel,
                                               stride=cnf.stride, norm_layer=norm_layer,
                                               activation_layer=activation_layer))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cnf.out_channels

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result) + input
        return result


class EfficientNet(nn.Module):
    """EfficientNet V1 and V2 from a list of stage configs.

    stochastic_depth_prob grows linearly with block depth up to this value; last_channel is the width
    of the final 1x1 conv (default 4x the last stage's).
    """

    def __init__(self, inverted_residual_setting: Sequence[MBConvConfig | FusedMBConvConfig], dropout: float,
                 stochastic_depth_prob: float = 0.2, num_classes: int = 1000,
                 norm_layer: Callable[..., nn.Module] | None = None, last_channel: int | None = None) -> None:
        super().__init__()
        if not inverted_residual_setting:
            raise ValueError("The inverted_residual_setting should not be empty")
        if not (isinstance(inverted_residual_setting, Sequence)
                and all(isinstance(s, _MBConvConfig) for s in inverted_residual_setting)):
            raise TypeError("The inverted_residual_setting should be List[MBConvConfig]")
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d

        firstconv_output_channels = inverted_residual_setting[0].input_channels
        layers: list[nn.Module] = [Conv2dNormActivation(3, firstconv_output_channels, kernel_size=3, stride=2,
                                                        norm_layer=norm_layer, activation_layer=nn.SiLU)]
        total_stage_blocks = sum(cnf.num_layers for cnf in inverted_residual_setting)
        stage_block_id = 0
        for cnf in inverted_residual_setting:
            stage: list[nn.Module] = []
            for _ in range(cnf.num_layers):
                block_cnf = copy.copy(cnf)
                # Only a stage's first block changes the width and the stride.
                if stage:
                    block_cnf.input_channels = block_cnf.out_channels
                    block_cnf.stride = 1
                sd_prob = stochastic_depth_prob * float(stage_block_id) / total_stage_blocks
                stage.append(block_cnf.block(block_cnf, sd_prob, norm_layer))
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))

        lastconv_input_channels = inverted_residual_setting[-1].out_channels
        lastconv_output_channels = last_channel if last_channel is not None else 4 * lastconv_input_channels
        layers.append(Conv2dNormActivation(lastconv_input_channels, lastconv_output_channels, kernel_size=1,
                                           norm_layer=norm_layer, activation_layer=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        # Dropout runs out of place: Note [in-place activations] in embervision/ops/misc.py.
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(lastconv_output_channels, num_classes))

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                init_range = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -init_range, init_range)
                nn.init.zeros_(m.bias)

    def _forward_impl(self, x: ember.Tensor) -> ember.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self._forward_impl(x)


def _efficientnet(inverted_residual_setting: Sequence[MBConvConfig | FusedMBConvConfig], dropout: float,
                  last_channel: int | None, weights: WeightsEnum | None, progress: bool,
                  **kwargs: Any) -> EfficientNet:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = EfficientNet(inverted_residual_setting, dropout, last_channel=last_channel, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


def _efficientnet_conf(arch: str, **kwargs: Any) -> tuple[list[MBConvConfig | FusedMBConvConfig], int | None]:
    """The stage table of `arch`; the B series takes width_mult and depth_mult."""
    if arch.startswith("efficientnet_b"):
        bneck_conf = partial(MBConvConfig, width_mult=kwargs.pop("width_mult"), depth_mult=kwargs.pop("depth_mult"))
        setting: list[MBConvConfig | FusedMBConvConfig] = [
            bneck_conf(1, 3, 1, 32, 16, 1),
            bneck_conf(6, 3, 2, 16, 24, 2),
            bneck_conf(6, 5, 2, 24, 40, 2),
            bneck_conf(6, 3, 2, 40, 80, 3),
            bneck_conf(6, 5, 1, 80, 112, 3),
            bneck_conf(6, 5, 2, 112, 192, 4),
            bneck_conf(6, 3, 1, 192, 320, 1),
        ]
        last_channel = None
    elif arch.startswith("efficientnet_v2_s"):
        setting = [
            FusedMBConvConfig(1, 3, 1, 24, 24, 2),
            FusedMBConvConfig(4, 3, 2, 24, 48, 4),
            FusedMBConvConfig(4, 3, 2, 48, 64, 4),
            MBConvConfig(4, 3, 2, 64, 128, 6),
            MBConvConfig(6, 3, 1, 128, 160, 9),
            MBConvConfig(6, 3, 2, 160, 256, 15),
        ]
        last_channel = 1280
    elif arch.startswith("efficientnet_v2_m"):
        setting = [
            FusedMBConvConfig(1, 3, 1, 24, 24, 3),
            FusedMBConvConfig(4, 3, 2, 24, 48, 5),
            FusedMBConvConfig(4, 3, 2, 48, 80, 5),
            MBConvConfig(4, 3, 2, 80, 160, 7),
            MBConvConfig(6, 3, 1, 160, 176, 14),
            MBConvConfig(6, 3, 2, 176, 304, 18),
            MBConvConfig(6, 3, 1, 304, 512, 5),
        ]
        last_channel = 1280
    elif arch.startswith("efficientnet_v2_l"):
        setting = [
            FusedMBConvConfig(1, 3, 1, 32, 32, 4),
            FusedMBConvConfig(4, 3, 2, 32, 64, 7),
            FusedMBConvConfig(4, 3, 2, 64, 96, 7),
            MBConvConfig(4, 3, 2, 96, 192, 10),
            MBConvConfig(6, 3, 1, 192, 224, 19),
            MBConvConfig(6, 3, 2, 224, 384, 25),
            MBConvConfig(6, 3, 1, 384, 640, 7),
        ]
        last_channel = 1280
    else:
        raise ValueError(f"Unsupported model type {arch}")
    return setting, last_channel


_V1_RECIPE = "https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v1"
_V2_RECIPE = "https://github.com/pytorch/vision/tree/main/references/classification#efficientnet-v2"
_PORTED = "These weights are ported from the original paper."
_IMPROVED = """
    These weights improve upon the results of the original paper by using a modified version of TorchVision's
    `new training recipe
    <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
"""
_URL = "https://download.pytorch.org/models/"


def _v1(file: str, num_params: int, acc1: float, acc5: float, crop: int, resize: int) -> Any:
    # Ported B-series weights: bicubic preset at the paper's resolution.
    return _imagenet_weights(_URL + file, num_params, _V1_RECIPE, acc1, acc5, _PORTED, crop_size=crop,
                             resize_size=resize, interpolation="bicubic")


def _v2(file: str, num_params: int, acc1: float, acc5: float, docs: str, size: int, **preset: Any) -> Any:
    return _imagenet_weights(_URL + file, num_params, _V2_RECIPE, acc1, acc5, docs, crop_size=size,
                             resize_size=size, min_size=(33, 33), **preset)


class EfficientNet_B0_Weights(WeightsEnum):
    # Ported from https://github.com/rwightman/pytorch-image-models/
    IMAGENET1K_V1 = _v1("efficientnet_b0_rwightman-7f5810bc.pth", 5288548, 77.692, 93.532, 224, 256)
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B1_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("efficientnet_b1_rwightman-bac287d4.pth", 7794184, 78.642, 94.186, 240, 256)
    IMAGENET1K_V2 = _imagenet_weights(
        _URL + "efficientnet_b1-c27df63c.pth", 7794184,
        "https://github.com/pytorch/vision/issues/3995#new-recipe-with-lr-wd-crop-tuning", 79.838, 94.934, _IMPROVED,
        crop_size=240, resize_size=255, interpolation="bilinear")
    DEFAULT = IMAGENET1K_V2


class EfficientNet_B2_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("efficientnet_b2_rwightman-c35c1473.pth", 9109994, 80.608, 95.310, 288, 288)
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B3_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("efficientnet_b3_rwightman-b3899882.pth", 12233232, 82.008, 96.054, 300, 320)
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B4_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("efficientnet_b4_rwightman-23ab8bcd.pth", 19341616, 83.384, 96.594, 380, 384)
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B5_Weights(WeightsEnum):
    # Ported from https://github.com/lukemelas/EfficientNet-PyTorch/
    IMAGENET1K_V1 = _v1("efficientnet_b5_lukemelas-1a07897c.pth", 30389784, 83.444, 96.628, 456, 456)
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B6_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("efficientnet_b6_lukemelas-24a108a5.pth", 43040704, 84.008, 96.916, 528, 528)
    DEFAULT = IMAGENET1K_V1


class EfficientNet_B7_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("efficientnet_b7_lukemelas-c5b4e57e.pth", 66347960, 84.122, 96.908, 600, 600)
    DEFAULT = IMAGENET1K_V1


class EfficientNet_V2_S_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v2("efficientnet_v2_s-dd5fe13b.pth", 21458488, 84.228, 96.878, _IMPROVED, 384)
    DEFAULT = IMAGENET1K_V1


class EfficientNet_V2_M_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v2("efficientnet_v2_m-dc08266a.pth", 54139356, 85.112, 97.156, _IMPROVED, 480)
    DEFAULT = IMAGENET1K_V1


class EfficientNet_V2_L_Weights(WeightsEnum):
    # Ported from https://github.com/google/automl/tree/master/efficientnetv2
    IMAGENET1K_V1 = _v2("efficientnet_v2_l-59c71312.pth", 118515272, 85.808, 97.788, _PORTED, 480,
                        interpolation="bicubic", mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
    DEFAULT = IMAGENET1K_V1


def _build_b(arch: str, width_mult: float, depth_mult: float, default_dropout: float, weights: WeightsEnum | None,
             progress: bool, **kwargs: Any) -> EfficientNet:
    setting, last_channel = _efficientnet_conf(arch, width_mult=width_mult, depth_mult=depth_mult)
    return _efficientnet(setting, kwargs.pop("dropout", default_dropout), last_channel, weights, progress, **kwargs)


# B5-B7 were ported with TensorFlow's batch-norm settings.
_TF_BN = partial(nn.BatchNorm2d, eps=0.001, momentum=0.01)
# EfficientNetV2 uses eps 1e-3 throughout.
_V2_BN = partial(nn.BatchNorm2d, eps=1e-03)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B0_Weights.IMAGENET1K_V1))
def efficientnet_b0(*, weights: EfficientNet_B0_Weights | None = None, progress: bool = True,
                    **kwargs: Any) -> EfficientNet:
    """EfficientNet-B0; kwargs go to EfficientNet (dropout, stochastic_depth_prob, num_classes, norm_layer)."""
    return _build_b("efficientnet_b0", 1.0, 1.0, 0.2, EfficientNet_B0_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B1_Weights.IMAGENET1K_V1))
def efficientnet_b1(*, weights: EfficientNet_B1_Weights | None = None, progress: bool = True,
                    **kwargs: Any) -> EfficientNet:
    """EfficientNet-B1 (depth 1.1)."""
    return _build_b("efficientnet_b1", 1.0, 1.1, 0.2, EfficientNet_B1_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B2_Weights.IMAGENET1K_V1))
def efficientnet_b2(*, weights: EfficientNet_B2_Weights | None = None, progress: bool = True,
                    **kwargs: Any) -> EfficientNet:
    """EfficientNet-B2 (width 1.1, depth 1.2)."""
    return _build_b("efficientnet_b2", 1.1, 1.2, 0.3, EfficientNet_B2_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B3_Weights.IMAGENET1K_V1))
def efficientnet_b3(*, weights: EfficientNet_B3_Weights | None = None, progress: bool = True,
                    **kwargs: Any) -> EfficientNet:
    """EfficientNet-B3 (width 1.2, depth 1.4)."""
    return _build_b("efficientnet_b3", 1.2, 1.4, 0.3, EfficientNet_B3_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B4_Weights.IMAGENET1K_V1))
def efficientnet_b4(*, weights: EfficientNet_B4_Weights | None = None, progress: bool = True,
                    **kwargs: Any) -> EfficientNet:
    """EfficientNet-B4 (width 1.4, depth 1.8)."""
    return _build_b("efficientnet_b4", 1.4, 1.8, 0.4, EfficientNet_B4_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B5_Weights.IMAGENET1K_V1))
def efficientnet_b5(*, weights: EfficientNet_B5_Weights | None = None, progress: bool = True,
                    **kwargs: Any) -> EfficientNet:
    """EfficientNet-B5 (width 1.6, depth 2.2)."""
    return _build_b("efficientnet_b5", 1.6, 2.2, 0.4, EfficientNet_B5_Weights.verify(weights), progress,
                    norm_layer=_TF_BN, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B6_Weights.IMAGENET1K_V1))
def efficientnet_b6(*, weights: EfficientNet_B6_Weights | None = None, progress: bool = True,
                    **kwargs: Any) -> EfficientNet:
    """EfficientNet-B6 (width 1.8, depth 2.6)."""
    return _build_b("efficientnet_b6", 1.8, 2.6, 0.5, EfficientNet_B6_Weights.verify(weights), progress,
                    norm_layer=_TF_BN, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_B7_Weights.IMAGENET1K_V1))
def efficientnet_b7(*, weights: EfficientNet_B7_Weights | None = None, progress: bool = True,
                    **kwargs: Any) -> EfficientNet:
    """EfficientNet-B7 (width 2.0, depth 3.1)."""
    return _build_b("efficientnet_b7", 2.0, 3.1, 0.5, EfficientNet_B7_Weights.verify(weights), progress,
                    norm_layer=_TF_BN, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_V2_S_Weights.IMAGENET1K_V1))
def efficientnet_v2_s(*, weights: EfficientNet_V2_S_Weights | None = None, progress: bool = True,
                      **kwargs: Any) -> EfficientNet:
    """EfficientNetV2-S; kwargs go to EfficientNet."""
    weights = EfficientNet_V2_S_Weights.verify(weights)
    setting, last_channel = _efficientnet_conf("efficientnet_v2_s")
    return _efficientnet(setting, kwargs.pop("dropout", 0.2), last_channel, weights, progress, norm_layer=_V2_BN,
                         **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_V2_M_Weights.IMAGENET1K_V1))
def efficientnet_v2_m(*, weights: EfficientNet_V2_M_Weights | None = None, progress: bool = True,
                      **kwargs: Any) -> EfficientNet:
    """EfficientNetV2-M."""
    weights = EfficientNet_V2_M_Weights.verify(weights)
    setting, last_channel = _efficientnet_conf("efficientnet_v2_m")
    return _efficientnet(setting, kwargs.pop("dropout", 0.3), last_channel, weights, progress, norm_layer=_V2_BN,
                         **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", EfficientNet_V2_L_Weights.IMAGENET1K_V1))
def efficientnet_v2_l(*, weights: EfficientNet_V2_L_Weights | None = None, progress: bool = True,
                      **kwargs: Any) -> EfficientNet:
    """EfficientNetV2-L."""
    weights = EfficientNet_V2_L_Weights.verify(weights)
    setting, last_channel = _efficientnet_conf("efficientnet_v2_l")
    return _efficientnet(setting, kwargs.pop("dropout", 0.4), last_channel, weights, progress, norm_layer=_V2_BN,
                         **kwargs)
