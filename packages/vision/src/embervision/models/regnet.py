"""RegNetX and RegNetY (Radosavovic et al., "Designing Network Design Spaces")."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

import ember
from ember import nn

from ..ops.misc import Conv2dNormActivation, SqueezeExcitation
from ._api import Weights, WeightsEnum, register_model
from ._utils import _imagenet_weights, _make_divisible, _ovewrite_named_param, handle_legacy_interface

__all__ = [
    "RegNet", "RegNet_Y_400MF_Weights", "RegNet_Y_800MF_Weights", "RegNet_Y_1_6GF_Weights", "RegNet_Y_3_2GF_Weights",
    "RegNet_Y_8GF_Weights", "RegNet_Y_16GF_Weights", "RegNet_Y_32GF_Weights", "RegNet_Y_128GF_Weights",
    "RegNet_X_400MF_Weights", "RegNet_X_800MF_Weights", "RegNet_X_1_6GF_Weights", "RegNet_X_3_2GF_Weights",
    "RegNet_X_8GF_Weights", "RegNet_X_16GF_Weights", "RegNet_X_32GF_Weights", "regnet_y_400mf", "regnet_y_800mf",
    "regnet_y_1_6gf", "regnet_y_3_2gf", "regnet_y_8gf", "regnet_y_16gf", "regnet_y_32gf", "regnet_y_128gf",
    "regnet_x_400mf", "regnet_x_800mf", "regnet_x_1_6gf", "regnet_x_3_2gf", "regnet_x_8gf", "regnet_x_16gf",
    "regnet_x_32gf",
]


class SimpleStemIN(Conv2dNormActivation):
    """Simple stem for ImageNet: 3x3 stride-2 conv, BN, ReLU."""

    def __init__(self, width_in: int, width_out: int, norm_layer: Callable[..., nn.Module],
                 activation_layer: Callable[..., nn.Module]) -> None:
        super().__init__(width_in, width_out, kernel_size=3, stride=2, norm_layer=norm_layer,
                         activation_layer=activation_layer)


class BottleneckTransform(nn.Sequential):
    """1x1 ("a"), grouped 3x3 ("b"), optional squeeze-excitation ("se"), 1x1 ("c")."""

    def __init__(self, width_in: int, width_out: int, stride: int, norm_layer: Callable[..., nn.Module],
                 activation_layer: Callable[..., nn.Module], group_width: int, bottleneck_multiplier: float,
                 se_ratio: float | None) -> None:
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        w_b = int(round(width_out * bottleneck_multiplier))
        g = w_b // group_width
        layers["a"] = Conv2dNormActivation(width_in, w_b, kernel_size=1, stride=1, norm_layer=norm_layer,
                                           activation_layer=activation_layer)
        layers["b"] = Conv2dNormActivation(w_b, w_b, kernel_size=3, stride=stride, groups=g, norm_layer=norm_layer,
                                           activation_layer=activation_layer)
        if se_ratio:
            # The SE width is relative to the block's input width.
            width_se_out = int(round(se_ratio * width_in))
            layers["se"] = SqueezeExcitation(input_channels=w_b, squeeze_channels=width_se_out,
                                             activation=activation_layer)
        layers["c"] = Conv2dNormActivation(w_b, width_out, kernel_size=1, stride=1, norm_layer=norm_layer,
                                           activation_layer=None)
        super().__init__(layers)


class ResBottleneckBlock(nn.Module):
    """x + F(x), x projected by a strided 1x1 conv when the shape changes."""

    def __init__(self, width_in: int, width_out: int, stride: int, norm_layer: Callable[..., nn.Module],
                 activation_layer: Callable[..., nn.Module], group_width: int = 1,
                 bottleneck_multiplier: float = 1.0, se_ratio: float | None = None) -> None:
        super().__init__()
        self.proj = None
        if (width_in != width_out) or (stride != 1):
            self.proj = Conv2dNormActivation(width_in, width_out, kernel_size=1, stride=stride, norm_layer=norm_layer,
                                             activation_layer=None)
        self.f = BottleneckTransform(width_in, width_out, stride, norm_layer, activation_layer, group_width,
                                     bottleneck_multiplier, se_ratio)
        self.activation = activation_layer(inplace=activation_layer is nn.ReLU)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.proj(x) + self.f(x) if self.proj is not None else x + self.f(x)
        return self.activation(x)


class AnyStage(nn.Sequential):
    """A stage of blocks of one output width; children are named "block<stage>-<i>"."""

    def __init__(self, width_in: int, width_out: int, stride: int, depth: int,
                 block_constructor: Callable[..., nn.Module], norm_layer: Callable[..., nn.Module],
                 activation_layer: Callable[..., nn.Module], group_width: int, bottleneck_multiplier: float,
                 se_ratio: float | None = None, stage_index: int = 0) -> None:
        super().__init__()
        for i in range(depth):
            block = block_constructor(width_in if i == 0 else width_out, width_out, stride if i == 0 else 1,
                                      norm_layer, activation_layer, group_width, bottleneck_multiplier, se_ratio)
            self.add_module(f"block{stage_index}-{i}", block)


class BlockParams:
    """Per-stage depths, widths, group widths, bottleneck multipliers and strides."""

    def __init__(self, depths: list[int], widths: list[int], group_widths: list[int],
                 bottleneck_multipliers: list[float], strides: list[int], se_ratio: float | None = None) -> None:
        self.depths = depths
        self.widths = widths
        self.group_widths = group_widths
        self.bottleneck_multipliers = bottleneck_multipliers
        self.strides = strides
        self.se_ratio = se_ratio

    @classmethod
    def from_init_params(cls, depth: int, w_0: int, w_a: float, w_m: float, group_width: int,
                         bottleneck_multiplier: float = 1.0, se_ratio: float | None = None,
                         **kwargs: Any) -> BlockParams:
        """The stages of a RegNet from its design-space parameters: block j has the linear width
        w_0 + w_a * j, snapped in log space to w_0 * w_m**k (k an integer) and quantized to multiples
        of 8; consecutive blocks of equal width form a stage. Computed in float32, as torchvision
        does, so that the rounding (and hence the architecture) is the same."""
        quant, stride = 8, 2
        if w_a < 0 or w_0 <= 0 or w_m <= 1 or w_0 % 8 != 0:
            raise ValueError("Invalid RegNet settings")
        f32 = np.float32
        widths_cont = np.arange(depth).astype(f32) * f32(w_a) + f32(w_0)
        block_capacity = np.round(np.log(widths_cont / f32(w_0)) / f32(math.log(w_m)))
        block_widths = (np.round(f32(w_0) * np.power(f32(w_m), block_capacity) / f32(quant)) * quant)
        block_widths = block_widths.astype(np.int64).tolist()
        num_stages = len(set(block_widths))

        # A stage starts wherever the width changes.
        split_helper = zip(block_widths + [0], [0] + block_widths, block_widths + [0], [0] + block_widths,
                           strict=True)
        splits = [w != wp or r != rp for w, wp, r, rp in split_helper]
        stage_widths = [w for w, t in zip(block_widths, splits[:-1], strict=True) if t]
        stage_depths = np.diff([d for d, t in enumerate(splits) if t]).astype(np.int64).tolist()

        strides = [stride] * num_stages
        bottleneck_multipliers = [bottleneck_multiplier] * num_stages
        group_widths = [group_width] * num_stages
        stage_widths, group_widths = cls._adjust_widths_groups_compatibilty(stage_widths, bottleneck_multipliers,
                                                                            group_widths)
        return cls(depths=stage_depths, widths=stage_widths, group_widths=group_widths,
                   bottleneck_multipliers=bottleneck_multipliers, strides=strides, se_ratio=se_ratio)

    def _get_expanded_params(self) -> Any:
        return zip(self.widths, self.strides, self.depths, self.group_widths, self.bottleneck_multipliers,
                   strict=True)

    @staticmethod
    def _adjust_widths_groups_compatibilty(stage_widths: list[int], bottleneck_ratios: list[float],
                                           group_widths: list[int]) -> tuple[list[int], list[int]]:
        """Make each bottleneck width a multiple of its (capped) group width."""
        widths = [int(w * b) for w, b in zip(stage_widths, bottleneck_ratios, strict=True)]
        group_widths_min = [min(g, w_bot) for g, w_bot in zip(group_widths, widths, strict=True)]
        ws_bot = [_make_divisible(w_bot, g) for w_bot, g in zip(widths, group_widths_min, strict=True)]
        stage_widths = [int(w_bot / b) for w_bot, b in zip(ws_bot, bottleneck_ratios, strict=True)]
        return stage_widths, group_widths_min


class RegNet(nn.Module):
    def __init__(self, block_params: BlockParams, num_classes: int = 1000, stem_width: int = 32,
                 stem_type: Callable[..., nn.Module] | None = None, block_type: Callable[..., nn.Module] | None = None,
                 norm_layer: Callable[..., nn.Module] | None = None,
                 activation: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        stem_type = stem_type or SimpleStemIN
        norm_layer = norm_layer or nn.BatchNorm2d
        block_type = block_type or ResBottleneckBlock
        activation = activation or nn.ReLU

        self.stem = stem_type(3, stem_width, norm_layer, activation)
        current_width = stem_width
        blocks = []
        for i, (width_out, stride, depth, group_width, bottleneck_multiplier) in enumerate(
                block_params._get_expanded_params()):
            blocks.append((f"block{i + 1}", AnyStage(current_width, width_out, stride, depth, block_type, norm_layer,
                                                     activation, group_width, bottleneck_multiplier,
                                                     block_params.se_ratio, stage_index=i + 1)))
            current_width = width_out
        self.trunk_output = nn.Sequential(OrderedDict(blocks))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(in_features=current_width, out_features=num_classes)

        # ResNet-style initialization (the convolutions have no bias: BN follows).
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                fan_out = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                nn.init.normal_(m.weight, mean=0.0, std=math.sqrt(2.0 / fan_out))
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, mean=0.0, std=0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.trunk_output(self.stem(x))
        x = self.avgpool(x).flatten(start_dim=1)
        return self.fc(x)


def _regnet(block_params: BlockParams, weights: WeightsEnum | None, progress: bool, **kwargs: Any) -> RegNet:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    norm_layer = kwargs.pop("norm_layer", partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1))
    model = RegNet(block_params, norm_layer=norm_layer, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


_URL = "https://download.pytorch.org/models/"
_REF = "https://github.com/pytorch/vision/tree/main/references/classification#"
_V1_DOCS = "These weights reproduce closely the results of the paper using a simple training recipe."
_V2_DOCS = """
    These weights improve upon the results of the original paper by using a modified version of TorchVision's
    `new training recipe
    <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
"""
_SWAG_E2E_DOCS = """
    These weights are learnt via transfer learning by end-to-end fine-tuning the original
    `SWAG <https://arxiv.org/abs/2201.08371>`_ weights on ImageNet-1K data.
"""
_SWAG_LINEAR_DOCS = """
    These weights are composed of the original frozen `SWAG <https://arxiv.org/abs/2201.08371>`_ trunk
    weights and a linear classifier learnt on top of them trained on ImageNet-1K data.
"""


def _v1(file: str, num_params: int, recipe: str, acc1: float, acc5: float) -> Weights:
    return _imagenet_weights(_URL + file, num_params, _REF + recipe, acc1, acc5, _V1_DOCS)


def _v2(file: str, num_params: int, recipe: str, acc1: float, acc5: float) -> Weights:
    return _imagenet_weights(_URL + file, num_params, "https://github.com/pytorch/vision/issues/3995#" + recipe,
                             acc1, acc5, _V2_DOCS, resize_size=232)


def _swag(file: str, num_params: int, acc1: float, acc5: float, linear: bool) -> Weights:
    # SWAG weights (Singh et al.): end-to-end fine-tuned at 384, or a linear classifier at 224.
    size = 224 if linear else 384
    return _imagenet_weights(
        _URL + file, num_params,
        "https://github.com/pytorch/vision/pull/5793" if linear else "https://github.com/facebookresearch/SWAG",
        acc1, acc5, _SWAG_LINEAR_DOCS if linear else _SWAG_E2E_DOCS, crop_size=size, resize_size=size,
        interpolation="bicubic", license="https://github.com/facebookresearch/SWAG/blob/main/LICENSE")


class RegNet_Y_400MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_y_400mf-c65dace8.pth", 4344144, "small-models", 74.046, 91.716)
    IMAGENET1K_V2 = _v2("regnet_y_400mf-e6988f5f.pth", 4344144, "new-recipe", 75.804, 92.742)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_800MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_y_800mf-1b27b58c.pth", 6432512, "small-models", 76.420, 93.136)
    IMAGENET1K_V2 = _v2("regnet_y_800mf-58fc7688.pth", 6432512, "new-recipe", 78.828, 94.502)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_1_6GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_y_1_6gf-b11a554e.pth", 11202430, "small-models", 77.950, 93.966)
    IMAGENET1K_V2 = _v2("regnet_y_1_6gf-0d7bc02a.pth", 11202430, "new-recipe", 80.876, 95.444)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_3_2GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_y_3_2gf-b5a9779c.pth", 19436338, "medium-models", 78.948, 94.576)
    IMAGENET1K_V2 = _v2("regnet_y_3_2gf-9180c971.pth", 19436338, "new-recipe", 81.982, 95.972)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_8GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_y_8gf-d0d0e4a8.pth", 39381472, "medium-models", 80.032, 95.048)
    IMAGENET1K_V2 = _v2("regnet_y_8gf-dc2b1b54.pth", 39381472, "new-recipe", 82.828, 96.330)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_16GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_y_16gf-9e6ed7dd.pth", 83590140, "large-models", 80.424, 95.240)
    IMAGENET1K_V2 = _v2("regnet_y_16gf-3e4a00f9.pth", 83590140, "new-recipe", 82.886, 96.328)
    IMAGENET1K_SWAG_E2E_V1 = _swag("regnet_y_16gf_swag-43afe44d.pth", 83590140, 86.012, 98.054, linear=False)
    IMAGENET1K_SWAG_LINEAR_V1 = _swag("regnet_y_16gf_lc_swag-f3ec0043.pth", 83590140, 83.976, 97.244, linear=True)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_32GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_y_32gf-4dee3f7a.pth", 145046770, "large-models", 80.878, 95.340)
    IMAGENET1K_V2 = _v2("regnet_y_32gf-8db6d4b5.pth", 145046770, "new-recipe", 83.368, 96.498)
    IMAGENET1K_SWAG_E2E_V1 = _swag("regnet_y_32gf_swag-04fdfa75.pth", 145046770, 86.838, 98.362, linear=False)
    IMAGENET1K_SWAG_LINEAR_V1 = _swag("regnet_y_32gf_lc_swag-e1583746.pth", 145046770, 84.622, 97.480, linear=True)
    DEFAULT = IMAGENET1K_V2


class RegNet_Y_128GF_Weights(WeightsEnum):
    IMAGENET1K_SWAG_E2E_V1 = _swag("regnet_y_128gf_swag-c8ce3e52.pth", 644812894, 88.228, 98.682, linear=False)
    IMAGENET1K_SWAG_LINEAR_V1 = _swag("regnet_y_128gf_lc_swag-cbe8ce12.pth", 644812894, 86.068, 97.844, linear=True)
    DEFAULT = IMAGENET1K_SWAG_E2E_V1


class RegNet_X_400MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_x_400mf-adf1edd5.pth", 5495976, "small-models", 72.834, 90.950)
    IMAGENET1K_V2 = _v2("regnet_x_400mf-62229a5f.pth", 5495976, "new-recipe-with-fixres", 74.864, 92.322)
    DEFAULT = IMAGENET1K_V2


class RegNet_X_800MF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_x_800mf-ad17e45c.pth", 7259656, "small-models", 75.212, 92.348)
    IMAGENET1K_V2 = _v2("regnet_x_800mf-94a99ebd.pth", 7259656, "new-recipe-with-fixres", 77.522, 93.826)
    DEFAULT = IMAGENET1K_V2


class RegNet_X_1_6GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_x_1_6gf-e3633e7f.pth", 9190136, "small-models", 77.040, 93.440)
    IMAGENET1K_V2 = _v2("regnet_x_1_6gf-a12f2b72.pth", 9190136, "new-recipe-with-fixres", 79.668, 94.922)
    DEFAULT = IMAGENET1K_V2


class RegNet_X_3_2GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_x_3_2gf-f342aeae.pth", 15296552, "medium-models", 78.364, 93.992)
    IMAGENET1K_V2 = _v2("regnet_x_3_2gf-7071aa85.pth", 15296552, "new-recipe", 81.196, 95.430)
    DEFAULT = IMAGENET1K_V2


class RegNet_X_8GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_x_8gf-03ceed89.pth", 39572648, "medium-models", 79.344, 94.686)
    IMAGENET1K_V2 = _v2("regnet_x_8gf-2b70d774.pth", 39572648, "new-recipe", 81.682, 95.678)
    DEFAULT = IMAGENET1K_V2


class RegNet_X_16GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_x_16gf-2007eb11.pth", 54278536, "medium-models", 80.058, 94.944)
    IMAGENET1K_V2 = _v2("regnet_x_16gf-ba3796d7.pth", 54278536, "new-recipe", 82.716, 96.196)
    DEFAULT = IMAGENET1K_V2


class RegNet_X_32GF_Weights(WeightsEnum):
    IMAGENET1K_V1 = _v1("regnet_x_32gf-9d47f8d0.pth", 107811560, "large-models", 80.622, 95.248)
    IMAGENET1K_V2 = _v2("regnet_x_32gf-6eb8fdc6.pth", 107811560, "new-recipe", 83.014, 96.288)
    DEFAULT = IMAGENET1K_V2


def _builder(name: str, enum: type[WeightsEnum], legacy: WeightsEnum | None, design: dict[str, Any]) -> Callable:
    """A registered builder for one RegNet: `design` holds its from_init_params arguments; a caller's
    kwargs go to BlockParams.from_init_params (which ignores the others) and to RegNet."""

    def build(*, weights: enum | None = None, progress: bool = True, **kwargs: Any) -> RegNet:
        weights = enum.verify(weights)
        params = BlockParams.from_init_params(**design, **kwargs)
        return _regnet(params, weights, progress, **kwargs)

    build.__name__ = build.__qualname__ = name
    build.__module__ = __name__
    build.__doc__ = (f"{name} (RegNet{name[7].upper()} {name[9:].upper().replace('_', '.')}) from "
                     f"\"Designing Network Design Spaces\"; weights: a {enum.__name__} member or its name.")
    # The annotation names the weights enum for get_model_weights.
    build.__annotations__ = {"weights": enum | None, "progress": bool, "return": RegNet}
    return register_model(name)(handle_legacy_interface(weights=("pretrained", legacy))(build))


_Y = {"se_ratio": 0.25}
regnet_y_400mf = _builder("regnet_y_400mf", RegNet_Y_400MF_Weights, RegNet_Y_400MF_Weights.IMAGENET1K_V1,
                          dict(depth=16, w_0=48, w_a=27.89, w_m=2.09, group_width=8, **_Y))
regnet_y_800mf = _builder("regnet_y_800mf", RegNet_Y_800MF_Weights, RegNet_Y_800MF_Weights.IMAGENET1K_V1,
                          dict(depth=14, w_0=56, w_a=38.84, w_m=2.4, group_width=16, **_Y))
regnet_y_1_6gf = _builder("regnet_y_1_6gf", RegNet_Y_1_6GF_Weights, RegNet_Y_1_6GF_Weights.IMAGENET1K_V1,
                          dict(depth=27, w_0=48, w_a=20.71, w_m=2.65, group_width=24, **_Y))
regnet_y_3_2gf = _builder("regnet_y_3_2gf", RegNet_Y_3_2GF_Weights, RegNet_Y_3_2GF_Weights.IMAGENET1K_V1,
                          dict(depth=21, w_0=80, w_a=42.63, w_m=2.66, group_width=24, **_Y))
regnet_y_8gf = _builder("regnet_y_8gf", RegNet_Y_8GF_Weights, RegNet_Y_8GF_Weights.IMAGENET1K_V1,
                        dict(depth=17, w_0=192, w_a=76.82, w_m=2.19, group_width=56, **_Y))
regnet_y_16gf = _builder("regnet_y_16gf", RegNet_Y_16GF_Weights, RegNet_Y_16GF_Weights.IMAGENET1K_V1,
                         dict(depth=18, w_0=200, w_a=106.23, w_m=2.48, group_width=112, **_Y))
regnet_y_32gf = _builder("regnet_y_32gf", RegNet_Y_32GF_Weights, RegNet_Y_32GF_Weights.IMAGENET1K_V1,
                         dict(depth=20, w_0=232, w_a=115.89, w_m=2.53, group_width=232, **_Y))
# No legacy pretrained= weights: RegNetY-128GF came with the multi-weight API.
regnet_y_128gf = _builder("regnet_y_128gf", RegNet_Y_128GF_Weights, None,
                          dict(depth=27, w_0=456, w_a=160.83, w_m=2.52, group_width=264, **_Y))
regnet_x_400mf = _builder("regnet_x_400mf", RegNet_X_400MF_Weights, RegNet_X_400MF_Weights.IMAGENET1K_V1,
                          dict(depth=22, w_0=24, w_a=24.48, w_m=2.54, group_width=16))
regnet_x_800mf = _builder("regnet_x_800mf", RegNet_X_800MF_Weights, RegNet_X_800MF_Weights.IMAGENET1K_V1,
                          dict(depth=16, w_0=56, w_a=35.73, w_m=2.28, group_width=16))
regnet_x_1_6gf = _builder("regnet_x_1_6gf", RegNet_X_1_6GF_Weights, RegNet_X_1_6GF_Weights.IMAGENET1K_V1,
                          dict(depth=18, w_0=80, w_a=34.01, w_m=2.25, group_width=24))
regnet_x_3_2gf = _builder("regnet_x_3_2gf", RegNet_X_3_2GF_Weights, RegNet_X_3_2GF_Weights.IMAGENET1K_V1,
                          dict(depth=25, w_0=88, w_a=26.31, w_m=2.25, group_width=48))
regnet_x_8gf = _builder("regnet_x_8gf", RegNet_X_8GF_Weights, RegNet_X_8GF_Weights.IMAGENET1K_V1,
                        dict(depth=23, w_0=80, w_a=49.56, w_m=2.88, group_width=120))
regnet_x_16gf = _builder("regnet_x_16gf", RegNet_X_16GF_Weights, RegNet_X_16GF_Weights.IMAGENET1K_V1,
                         dict(depth=22, w_0=216, w_a=55.59, w_m=2.1, group_width=128))
regnet_x_32gf = _builder("regnet_x_32gf", RegNet_X_32GF_Weights, RegNet_X_32GF_Weights.IMAGENET1K_V1,
                         dict(depth=23, w_0=320, w_a=69.86, w_m=2.0, group_width=168))
