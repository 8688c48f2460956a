"""ConvNeXt tiny/small/base/large (Liu et al., "A ConvNet for the 2020s")."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

from ..ops.misc import Conv2dNormActivation, Permute
from ..ops.stochastic_depth import StochasticDepth
from ._api import Weights, WeightsEnum, register_model
from ._utils import _imagenet_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["ConvNeXt", "ConvNeXt_Tiny_Weights", "ConvNeXt_Small_Weights", "ConvNeXt_Base_Weights",
           "ConvNeXt_Large_Weights", "convnext_tiny", "convnext_small", "convnext_base", "convnext_large"]


class LayerNorm2d(nn.LayerNorm):
    """LayerNorm over the channels of an [N, C, H, W] tensor."""

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class CNBlock(nn.Module):
    """7x7 depthwise conv → LayerNorm → 4x MLP (GELU), scaled per channel by layer_scale, plus a
    stochastic-depth residual."""

    def __init__(self, dim: int, layer_scale: float, stochastic_depth_prob: float,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = partial(nn.LayerNorm, eps=1e-6)
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),
            norm_layer(dim),
            nn.Linear(in_features=dim, out_features=4 * dim, bias=True),
            nn.GELU(),
            nn.Linear(in_features=4 * dim, out_features=dim, bias=True),
            Permute([0, 3, 1, 2]),
        )
        self.layer_scale = nn.Parameter(ember.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        result = self.layer_scale * self.block(input)
        return self.stochastic_depth(result) + input


class CNBlockConfig:
    """A stage: its width, the width the downsampling layer after it maps to (None for the last
    stage) and its block count."""

    def __init__(self, input_channels: int, out_channels: int | None, num_layers: int) -> None:
        self.input_channels = input_channels
        self.out_channels = out_channels
        self.num_layers = num_layers

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(input_channels={self.input_channels}, out_channels={self.out_channels}, "
                f"num_layers={self.num_layers})")


class ConvNeXt(nn.Module):
    def __init__(self, block_setting: list[CNBlockConfig], stochastic_depth_prob: float = 0.0,
                 layer_scale: float = 1e-6, num_classes: int = 1000, block: Callable[..., nn.Module] | None = None,
                 norm_layer: Callable[..., nn.Module] | None = None, **kwargs: Any) -> None:
        super().__init__()
        if not block_setting:
            raise ValueError("The block_setting should not be empty")
        if not (isinstance(block_setting, Sequence) and all(isinstance(s, CNBlockConfig) for s in block_setting)):
            raise TypeError("The block_setting should be List[CNBlockConfig]")
        if block is None:
            block = CNBlock
        if norm_layer is None:
            norm_layer = partial(LayerNorm2d, eps=1e-6)

        # Stem: 4x4 "patchify" convolution.
        firstconv_output_channels = block_setting[0].input_channels
        layers: list[nn.Module] = [Conv2dNormActivation(3, firstconv_output_channels, kernel_size=4, stride=4,
                                                        padding=0, norm_layer=norm_layer, activation_layer=None,
                                                        bias=True)]
        total_stage_blocks = sum(cnf.num_layers for cnf in block_setting)
        stage_block_id = 0
        for cnf in block_setting:
            stage: list[nn.Module] = []
            for _ in range(cnf.num_layers):
                # Stochastic depth grows linearly from 0 to stochastic_depth_prob over the blocks.
                sd_prob = stochastic_depth_prob * stage_block_id / (total_stage_blocks - 1.0)
                stage.append(block(cnf.input_channels, layer_scale, sd_prob))
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))
            if cnf.out_channels is not None:
                layers.append(nn.Sequential(norm_layer(cnf.input_channels),
                                            nn.Conv2d(cnf.input_channels, cnf.out_channels, kernel_size=2,
                                                      stride=2)))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        lastblock = block_setting[-1]
        last_channels = lastblock.out_channels if lastblock.out_channels is not None else lastblock.input_channels
        self.classifier = nn.Sequential(norm_layer(last_channels), nn.Flatten(1), nn.Linear(last_channels, num_classes))

        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def _forward_impl(self, x: ember.Tensor) -> ember.Tensor:
        return self.classifier(self.avgpool(self.features(x)))

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self._forward_impl(x)


def _convnext(block_setting: list[CNBlockConfig], stochastic_depth_prob: float, weights: WeightsEnum | None,
              progress: bool, **kwargs: Any) -> ConvNeXt:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = ConvNeXt(block_setting, stochastic_depth_prob=stochastic_depth_prob, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


_DOCS = """
    These weights improve upon the results of the original paper by using a modified version of TorchVision's
    `new training recipe
    <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
"""


def _entry(file: str, num_params: int, acc1: float, acc5: float, resize: int) -> Weights:
    return _imagenet_weights("https://download.pytorch.org/models/" + file, num_params,
                             "https://github.com/pytorch/vision/tree/main/references/classification#convnext", acc1,
                             acc5, _DOCS, resize_size=resize, min_size=(32, 32))


class ConvNeXt_Tiny_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("convnext_tiny-983f1562.pth", 28589128, 82.520, 96.146, 236)
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Small_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("convnext_small-0c510722.pth", 50223688, 83.616, 96.650, 230)
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Base_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("convnext_base-6075fbad.pth", 88591464, 84.062, 96.870, 232)
    DEFAULT = IMAGENET1K_V1


class ConvNeXt_Large_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry("convnext_large-ea097f82.pth", 197767336, 84.414, 96.976, 232)
    DEFAULT = IMAGENET1K_V1


def _stages(widths: list[int], depths: list[int]) -> list[CNBlockConfig]:
    outs: list[int | None] = [*widths[1:], None]
    return [CNBlockConfig(w, o, d) for w, o, d in zip(widths, outs, depths, strict=True)]


@register_model()
@handle_legacy_interface(weights=("pretrained", ConvNeXt_Tiny_Weights.IMAGENET1K_V1))
def convnext_tiny(*, weights: ConvNeXt_Tiny_Weights | None = None, progress: bool = True,
                  **kwargs: Any) -> ConvNeXt:
    """ConvNeXt-Tiny; kwargs go to ConvNeXt (stochastic_depth_prob defaults to 0.1)."""
    weights = ConvNeXt_Tiny_Weights.verify(weights)
    return _convnext(_stages([96, 192, 384, 768], [3, 3, 9, 3]), kwargs.pop("stochastic_depth_prob", 0.1), weights,
                     progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ConvNeXt_Small_Weights.IMAGENET1K_V1))
def convnext_small(*, weights: ConvNeXt_Small_Weights | None = None, progress: bool = True,
                   **kwargs: Any) -> ConvNeXt:
    """ConvNeXt-Small (stochastic_depth_prob 0.4)."""
    weights = ConvNeXt_Small_Weights.verify(weights)
    return _convnext(_stages([96, 192, 384, 768], [3, 3, 27, 3]), kwargs.pop("stochastic_depth_prob", 0.4), weights,
                     progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ConvNeXt_Base_Weights.IMAGENET1K_V1))
def convnext_base(*, weights: ConvNeXt_Base_Weights | None = None, progress: bool = True,
                  **kwargs: Any) -> ConvNeXt:
    """ConvNeXt-Base (stochastic_depth_prob 0.5)."""
    weights = ConvNeXt_Base_Weights.verify(weights)
    return _convnext(_stages([128, 256, 512, 1024], [3, 3, 27, 3]), kwargs.pop("stochastic_depth_prob", 0.5),
                     weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ConvNeXt_Large_Weights.IMAGENET1K_V1))
def convnext_large(*, weights: ConvNeXt_Large_Weights | None = None, progress: bool = True,
                   **kwargs: Any) -> ConvNeXt:
    """ConvNeXt-Large (stochastic_depth_prob 0.5)."""
    weights = ConvNeXt_Large_Weights.verify(weights)
    return _convnext(_stages([192, 384, 768, 1536], [3, 3, 27, 3]), kwargs.pop("stochastic_depth_prob", 0.5),
                     weights, progress, **kwargs)
