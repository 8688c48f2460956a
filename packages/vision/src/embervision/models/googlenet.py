"""GoogLeNet (Inception v1; Szegedy et al., "Going Deeper with Convolutions")."""

from __future__ import annotations

import warnings
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

from ._api import WeightsEnum, register_model
from ._utils import _imagenet_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["GoogLeNet", "GoogLeNetOutputs", "_GoogLeNetOutputs", "GoogLeNet_Weights", "googlenet"]

# What a GoogLeNet with auxiliary heads returns in training mode.
GoogLeNetOutputs = namedtuple("GoogLeNetOutputs", ["logits", "aux_logits2", "aux_logits1"])
_GoogLeNetOutputs = GoogLeNetOutputs


class BasicConv2d(nn.Module):
    """Conv (no bias) → BatchNorm (eps 1e-3) → ReLU."""

    def __init__(self, in_channels: int, out_channels: int, **kwargs: Any) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return F.relu(self.bn(self.conv(x)))


class Inception(nn.Module):
    """Four parallel branches (1x1; 1x1→3x3; 1x1→"5x5"; 3x3 max pool→1x1) concatenated."""

    def __init__(self, in_channels: int, ch1x1: int, ch3x3red: int, ch3x3: int, ch5x5red: int, ch5x5: int,
                 pool_proj: int, conv_block: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.branch1 = conv_block(in_channels, ch1x1, kernel_size=1)
        self.branch2 = nn.Sequential(conv_block(in_channels, ch3x3red, kernel_size=1),
                                     conv_block(ch3x3red, ch3x3, kernel_size=3, padding=1))
        # The "5x5" branch uses a 3x3 kernel: a known defect of the original port that the checkpoints
        # carry (pytorch/vision#906), kept so that they load.
        self.branch3 = nn.Sequential(conv_block(in_channels, ch5x5red, kernel_size=1),
                                     conv_block(ch5x5red, ch5x5, kernel_size=3, padding=1))
        self.branch4 = nn.Sequential(nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=True),
                                     conv_block(in_channels, pool_proj, kernel_size=1))

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return ember.cat([self.branch1(x), self.branch2(x), self.branch3(x), self.branch4(x)], 1)


class InceptionAux(nn.Module):
    """Auxiliary classifier on an intermediate map: 4x4 average pool → 1x1 conv → two linears."""

    def __init__(self, in_channels: int, num_classes: int, conv_block: Callable[..., nn.Module] | None = None,
                 dropout: float = 0.7) -> None:
        super().__init__()
        if conv_block is None:
            conv_block = BasicConv2d
        self.conv = conv_block(in_channels, 128, kernel_size=1)
        self.fc1 = nn.Linear(2048, 1024)
        self.fc2 = nn.Linear(1024, num_classes)
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.conv(F.adaptive_avg_pool2d(x, (4, 4)))
        x = F.relu(self.fc1(ember.flatten(x, 1)))
        return self.fc2(self.dropout(x))


class GoogLeNet(nn.Module):
    """GoogLeNet. aux_logits: two auxiliary heads whose logits training mode also returns;
    transform_input: map inputs normalized with ImageNet's mean/std to the original port's
    normalization ((x - 0.5) / 0.5); init_weights=None keeps the truncated-normal initialization
    (with torchvision's FutureWarning)."""

    def __init__(self, num_classes: int = 1000, aux_logits: bool = True, transform_input: bool = False,
                 init_weights: bool | None = None, blocks: list[Callable[..., nn.Module]] | None = None,
                 dropout: float = 0.2, dropout_aux: float = 0.7) -> None:
        super().__init__()
        if blocks is None:
            blocks = [BasicConv2d, Inception, InceptionAux]
        if init_weights is None:
            warnings.warn("The default weight initialization of GoogleNet will be changed in future releases of "
                          "torchvision. If you wish to keep the old behavior (which leads to long initialization "
                          "times due to scipy/scipy#11299), please set init_weights=True.", FutureWarning,
                          stacklevel=2)
            init_weights = True
        if len(blocks) != 3:
            raise ValueError(f"blocks length should be 3 instead of {len(blocks)}")
        conv_block, inception_block, inception_aux_block = blocks

        self.aux_logits = aux_logits
        self.transform_input = transform_input
        self.conv1 = conv_block(3, 64, kernel_size=7, stride=2, padding=3)
        self.maxpool1 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.conv2 = conv_block(64, 64, kernel_size=1)
        self.conv3 = conv_block(64, 192, kernel_size=3, padding=1)
        self.maxpool2 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.inception3a = inception_block(192, 64, 96, 128, 16, 32, 32)
        self.inception3b = inception_block(256, 128, 128, 192, 32, 96, 64)
        self.maxpool3 = nn.MaxPool2d(3, stride=2, ceil_mode=True)
        self.inception4a = inception_block(480, 192, 96, 208, 16, 48, 64)
        self.inception4b = inception_block(512, 160, 112, 224, 24, 64, 64)
        self.inception4c = inception_block(512, 128, 128, 256, 24, 64, 64)
        self.inception4d = inception_block(512, 112, 144, 288, 32, 64, 64)
        self.inception4e = inception_block(528, 256, 160, 320, 32, 128, 128)
        self.maxpool4 = nn.MaxPool2d(2, stride=2, ceil_mode=True)
        self.inception5a = inception_block(832, 256, 160, 320, 32, 128, 128)
        self.inception5b = inception_block(832, 384, 192, 384, 48, 128, 128)
        if aux_logits:
            self.aux1 = inception_aux_block(512, num_classes, dropout=dropout_aux)
            self.aux2 = inception_aux_block(528, num_classes, dropout=dropout_aux)
        else:
            self.aux1 = None
            self.aux2 = None
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(1024, num_classes)

        if init_weights:
            for m in self.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    nn.init.trunc_normal_(m.weight, mean=0.0, std=0.01, a=-2, b=2)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)

    def _transform_input(self, x: ember.Tensor) -> ember.Tensor:
        if self.transform_input:
            x_ch0 = ember.unsqueeze(x[:, 0], 1) * (0.229 / 0.5) + (0.485 - 0.5) / 0.5
            x_ch1 = ember.unsqueeze(x[:, 1], 1) * (0.224 / 0.5) + (0.456 - 0.5) / 0.5
            x_ch2 = ember.unsqueeze(x[:, 2], 1) * (0.225 / 0.5) + (0.406 - 0.5) / 0.5
            x = ember.cat((x_ch0, x_ch1, x_ch2), 1)
        return x

    def _forward(self, x: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor | None, ember.Tensor | None]:
        x = self.maxpool1(self.conv1(x))
        x = self.maxpool2(self.conv3(self.conv2(x)))
        x = self.maxpool3(self.inception3b(self.inception3a(x)))
        x = self.inception4a(x)
        aux1 = self.aux1(x) if self.aux1 is not None and self.training else None
        x = self.inception4d(self.inception4c(self.inception4b(x)))
        aux2 = self.aux2(x) if self.aux2 is not None and self.training else None
        x = self.maxpool4(self.inception4e(x))
        x = self.inception5b(self.inception5a(x))
        x = self.dropout(ember.flatten(self.avgpool(x), 1))
        return self.fc(x), aux2, aux1

    def forward(self, x: ember.Tensor) -> GoogLeNetOutputs | ember.Tensor:
        x, aux2, aux1 = self._forward(self._transform_input(x))
        if self.training and self.aux_logits:
            return GoogLeNetOutputs(x, aux2, aux1)
        return x


class GoogLeNet_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(
        "https://download.pytorch.org/models/googlenet-1378be20.pth", 6624904,
        "https://github.com/pytorch/vision/tree/main/references/classification#googlenet", 69.778, 89.530,
        "These weights are ported from the original paper.", min_size=(15, 15))
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", GoogLeNet_Weights.IMAGENET1K_V1))
def googlenet(*, weights: GoogLeNet_Weights | None = None, progress: bool = True, **kwargs: Any) -> GoogLeNet:
    """GoogLeNet. With weights: transform_input defaults to True and the auxiliary heads (not
    pretrained) are dropped unless aux_logits=True is asked for."""
    weights = GoogLeNet_Weights.verify(weights)
    original_aux_logits = kwargs.get("aux_logits", False)
    if weights is not None:
        if "transform_input" not in kwargs:
            _ovewrite_named_param(kwargs, "transform_input", True)
        _ovewrite_named_param(kwargs, "aux_logits", True)
        _ovewrite_named_param(kwargs, "init_weights", False)
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = GoogLeNet(**kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
        if not original_aux_logits:
            model.aux_logits = False
            model.aux1 = None
            model.aux2 = None
        else:
            warnings.warn("auxiliary heads in the pretrained googlenet model are NOT pretrained, so make sure to "
                          "train them", stacklevel=2)
    return model
