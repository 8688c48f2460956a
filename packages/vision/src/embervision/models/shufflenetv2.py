"""ShuffleNetV2 (Ma et al., "ShuffleNet V2: Practical Guidelines for Efficient CNN Architecture Design")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember import nn

from ._api import WeightsEnum, register_model
from ._utils import _imagenet_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["ShuffleNetV2", "ShuffleNet_V2_X0_5_Weights", "ShuffleNet_V2_X1_0_Weights", "ShuffleNet_V2_X1_5_Weights",
           "ShuffleNet_V2_X2_0_Weights", "shufflenet_v2_x0_5", "shufflenet_v2_x1_0", "shufflenet_v2_x1_5",
           "shufflenet_v2_x2_0"]


def channel_shuffle(x: ember.Tensor, groups: int) -> ember.Tensor:
    """Interleave the channels of `groups` groups: [g0c0, g0c1, g1c0, g1c1] → [g0c0, g1c0, g0c1, g1c1]."""
    batchsize, num_channels, height, width = x.shape
    x = x.reshape(batchsize, groups, num_channels // groups, height, width)
    x = ember.transpose(x, 1, 2).contiguous()
    return x.reshape(batchsize, -1, height, width)


class InvertedResidual(nn.Module):
    """At stride 1 half the channels pass through and half go through branch2; at stride 2 both
    branches see the whole input. The halves are concatenated and shuffled."""

    def __init__(self, inp: int, oup: int, stride: int) -> None:
        super().__init__()
        if not (1 <= stride <= 3):
            raise ValueError("illegal stride value")
        self.stride = stride
        branch_features = oup // 2
        if (self.stride == 1) and (inp != branch_features << 1):
            raise ValueError(f"Invalid combination of stride {stride}, inp {inp} and oup {oup} values. If stride == 1 "
                             "then inp should be equal to oup // 2 << 1.")
        if self.stride > 1:
            self.branch1 = nn.Sequential(
                self.depthwise_conv(inp, inp, kernel_size=3, stride=self.stride, padding=1),
                nn.BatchNorm2d(inp),
                nn.Conv2d(inp, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
                nn.BatchNorm2d(branch_features),
                nn.ReLU(inplace=True),
            )
        else:
            self.branch1 = nn.Sequential()
        self.branch2 = nn.Sequential(
            nn.Conv2d(inp if (self.stride > 1) else branch_features, branch_features, kernel_size=1, stride=1,
                      padding=0, bias=False),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
            self.depthwise_conv(branch_features, branch_features, kernel_size=3, stride=self.stride, padding=1),
            nn.BatchNorm2d(branch_features),
            nn.Conv2d(branch_features, branch_features, kernel_size=1, stride=1, padding=0, bias=False),
            nn.BatchNorm2d(branch_features),
            nn.ReLU(inplace=True),
        )

    @staticmethod
    def depthwise_conv(i: int, o: int, kernel_size: int, stride: int = 1, padding: int = 0,
                       bias: bool = False) -> nn.Conv2d:
        return nn.Conv2d(i, o, kernel_size, stride, padding, bias=bias, groups=i)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = ember.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = ember.cat((self.branch1(x), self.branch2(x)), dim=1)
        return channel_shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    """stages_repeats: blocks in stages 2-4; stages_out_channels: widths of conv1, stages 2-4, conv5."""

    def __init__(self, stages_repeats: list[int], stages_out_channels: list[int], num_classes: int = 1000,
                 inverted_residual: Callable[..., nn.Module] = InvertedResidual) -> None:
        super().__init__()
        if len(stages_repeats) != 3:
            raise ValueError("expected stages_repeats as list of 3 positive ints")
        if len(stages_out_channels) != 5:
            raise ValueError("expected stages_out_channels as list of 5 positive ints")
        self._stage_out_channels = stages_out_channels

        input_channels = 3
        output_channels = self._stage_out_channels[0]
        self.conv1 = nn.Sequential(
            nn.Conv2d(input_channels, output_channels, 3, 2, 1, bias=False),
            nn.BatchNorm2d(output_channels),
            nn.ReLU(inplace=True),
        )
        input_channels = output_channels
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)

        for name, repeats, output_channels in zip(("stage2", "stage3", "stage4"), stages_repeats,
                                                  self._stage_out_channels[1:], strict=False):
            seq = [inverted_residual(input_channels, output_channels, 2)]
            seq += [inverted_residual(output_channels, output_channels, 1) for _ in range(repeats - 1)]
            setattr(self, name, nn.Sequential(*seq))
            input_channels = output_channels

        output_channels = self._stage_out_channels[-1]
        self.conv5 = nn.Sequential(
            nn.Conv2d(input_channels, output_channels, 1, 1, 0, bias=False),
            nn.BatchNorm2d(output_channels),
            nn.ReLU(inplace=True),
        )
        self.fc = nn.Linear(output_channels, num_classes)

    def _forward_impl(self, x: ember.Tensor) -> ember.Tensor:
        x = self.maxpool(self.conv1(x))
        x = self.stage4(self.stage3(self.stage2(x)))
        x = self.conv5(x).mean([2, 3])  # global pool
        return self.fc(x)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self._forward_impl(x)


def _shufflenetv2(weights: WeightsEnum | None, progress: bool, *args: Any, **kwargs: Any) -> ShuffleNetV2:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = ShuffleNetV2(*args, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


_PORTED = "https://github.com/ericsun99/Shufflenet-v2-Pytorch"
_PORTED_DOCS = "These weights were trained from scratch to reproduce closely the results of the paper."
_NEW_DOCS = """
    These weights were trained from scratch by using TorchVision's `new training recipe
    <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
"""
_URL = "https://download.pytorch.org/models/"


class ShuffleNet_V2_X0_5_Weights(WeightsEnum):
    # Ported from https://github.com/ericsun99/Shufflenet-v2-Pytorch
    IMAGENET1K_V1 = _imagenet_weights(_URL + "shufflenetv2_x0.5-f707e7126e.pth", 1366792, _PORTED, 60.552, 81.746,
                                      _PORTED_DOCS)
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(_URL + "shufflenetv2_x1-5666bf0f80.pth", 2278604, _PORTED, 69.362, 88.316,
                                      _PORTED_DOCS)
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X1_5_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(_URL + "shufflenetv2_x1_5-3c479a10.pth", 3503624,
                                      "https://github.com/pytorch/vision/pull/5906", 72.996, 91.086, _NEW_DOCS,
                                      resize_size=232)
    DEFAULT = IMAGENET1K_V1


class ShuffleNet_V2_X2_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(_URL + "shufflenetv2_x2_0-8be3c8ee.pth", 7393996,
                                      "https://github.com/pytorch/vision/pull/5906", 76.230, 93.006, _NEW_DOCS,
                                      resize_size=232)
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", ShuffleNet_V2_X0_5_Weights.IMAGENET1K_V1))
def shufflenet_v2_x0_5(*, weights: ShuffleNet_V2_X0_5_Weights | None = None, progress: bool = True,
                       **kwargs: Any) -> ShuffleNetV2:
    """ShuffleNetV2 with 0.5x output channels; kwargs go to ShuffleNetV2."""
    weights = ShuffleNet_V2_X0_5_Weights.verify(weights)
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 48, 96, 192, 1024], **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ShuffleNet_V2_X1_0_Weights.IMAGENET1K_V1))
def shufflenet_v2_x1_0(*, weights: ShuffleNet_V2_X1_0_Weights | None = None, progress: bool = True,
                       **kwargs: Any) -> ShuffleNetV2:
    """ShuffleNetV2 with 1.0x output channels."""
    weights = ShuffleNet_V2_X1_0_Weights.verify(weights)
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 116, 232, 464, 1024], **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ShuffleNet_V2_X1_5_Weights.IMAGENET1K_V1))
def shufflenet_v2_x1_5(*, weights: ShuffleNet_V2_X1_5_Weights | None = None, progress: bool = True,
                       **kwargs: Any) -> ShuffleNetV2:
    """ShuffleNetV2 with 1.5x output channels."""
    weights = ShuffleNet_V2_X1_5_Weights.verify(weights)
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 176, 352, 704, 1024], **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ShuffleNet_V2_X2_0_Weights.IMAGENET1K_V1))
def shufflenet_v2_x2_0(*, weights: ShuffleNet_V2_X2_0_Weights | None = None, progress: bool = True,
                       **kwargs: Any) -> ShuffleNetV2:
    """ShuffleNetV2 with 2.0x output channels."""
    weights = ShuffleNet_V2_X2_0_Weights.verify(weights)
    return _shufflenetv2(weights, progress, [4, 8, 4], [24, 244, 488, 976, 2048], **kwargs)
