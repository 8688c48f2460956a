"""DenseNet 121/161/169/201 (Huang et al., "Densely Connected Convolutional Networks")."""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

from ._api import WeightsEnum, register_model
from ._utils import _imagenet_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["DenseNet", "DenseNet121_Weights", "DenseNet161_Weights", "DenseNet169_Weights", "DenseNet201_Weights",
           "densenet121", "densenet161", "densenet169", "densenet201"]


class _DenseLayer(nn.Module):
    """BN-ReLU-1x1 conv (bottleneck to bn_size * growth_rate) then BN-ReLU-3x3 conv to growth_rate
    channels, over the concatenation of every earlier feature map of the block."""

    def __init__(self, num_input_features: int, growth_rate: int, bn_size: int, drop_rate: float,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        if memory_efficient:
            # torchvision recomputes the bottleneck in backward (activation checkpointing); ember has
            # no checkpointing yet, and silently using the memory-hungry path would not be what was asked.
            raise NotImplementedError("memory_efficient=True needs activation checkpointing, which ember does not "
                                      "provide yet; build with memory_efficient=False")
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, kernel_size=1, stride=1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, kernel_size=3, stride=1, padding=1, bias=False)
        self.drop_rate = float(drop_rate)
        self.memory_efficient = memory_efficient

    def bn_function(self, inputs: list[ember.Tensor]) -> ember.Tensor:
        concated_features = ember.cat(inputs, 1)
        return self.conv1(self.relu1(self.norm1(concated_features)))

    def forward(self, input: ember.Tensor | list[ember.Tensor]) -> ember.Tensor:
        prev_features = [input] if isinstance(input, ember.Tensor) else input
        bottleneck_output = self.bn_function(prev_features)
        new_features = self.conv2(self.relu2(self.norm2(bottleneck_output)))
        if self.drop_rate > 0:
            new_features = F.dropout(new_features, p=self.drop_rate, training=self.training)
        return new_features


class _DenseBlock(nn.ModuleDict):
    _version = 2

    def __init__(self, num_layers: int, num_input_features: int, bn_size: int, growth_rate: int, drop_rate: float,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        for i in range(num_layers):
            layer = _DenseLayer(num_input_features + i * growth_rate, growth_rate=growth_rate, bn_size=bn_size,
                                drop_rate=drop_rate, memory_efficient=memory_efficient)
            self.add_module(f"denselayer{i + 1}", layer)

    def forward(self, init_features: ember.Tensor) -> ember.Tensor:
        features = [init_features]
        for _, layer in self.items():
            features.append(layer(features))
        return ember.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, num_input_features: int, num_output_features: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, kernel_size=1, stride=1, bias=False)
        self.pool = nn.AvgPool2d(kernel_size=2, stride=2)


class DenseNet(nn.Module):
    """growth_rate: channels each layer adds; block_config: layers per dense block; bn_size: the
    bottleneck's width as a multiple of growth_rate; drop_rate: dropout after each layer."""

    def __init__(self, growth_rate: int = 32, block_config: tuple[int, int, int, int] = (6, 12, 24, 16),
                 num_init_features: int = 64, bn_size: int = 4, drop_rate: float = 0, num_classes: int = 1000,
                 memory_efficient: bool = False) -> None:
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, kernel_size=7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(kernel_size=3, stride=2, padding=1)),
        ]))
        num_features = num_init_features
        for i, num_layers in enumerate(block_config):
            block = _DenseBlock(num_layers=num_layers, num_input_features=num_features, bn_size=bn_size,
                                growth_rate=growth_rate, drop_rate=drop_rate, memory_efficient=memory_efficient)
            self.features.add_module(f"denseblock{i + 1}", block)
            num_features = num_features + num_layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module(f"transition{i + 1}", _Transition(num_features, num_features // 2))
                num_features = num_features // 2
        self.features.add_module("norm5", nn.BatchNorm2d(num_features))
        self.classifier = nn.Linear(num_features, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        out = F.relu(self.features(x))
        out = ember.flatten(F.adaptive_avg_pool2d(out, (1, 1)), 1)
        return self.classifier(out)


# The original checkpoints name a dense layer's modules "norm.1", "conv.2", ...; module names can no
# longer hold dots, so those keys become "norm1", "conv2".
_LEGACY_KEY = re.compile(r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$")


def _load_state_dict(model: nn.Module, weights: WeightsEnum, progress: bool) -> None:
    state_dict = weights.get_state_dict(progress=progress, check_hash=True)
    for key in list(state_dict.keys()):
        res = _LEGACY_KEY.match(key)
        if res:
            state_dict[res.group(1) + res.group(2)] = state_dict.pop(key)
    model.load_state_dict(state_dict)


def _densenet(growth_rate: int, block_config: tuple[int, int, int, int], num_init_features: int,
              weights: WeightsEnum | None, progress: bool, **kwargs: Any) -> DenseNet:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = DenseNet(growth_rate, block_config, num_init_features, **kwargs)
    if weights is not None:
        _load_state_dict(model=model, weights=weights, progress=progress)
    return model


_RECIPE = "https://github.com/pytorch/vision/pull/116"
_DOCS = "These weights are ported from LuaTorch."
_URL = "https://download.pytorch.org/models/"


class DenseNet121_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(_URL + "densenet121-a639ec97.pth", 7978856, _RECIPE, 74.434, 91.972, _DOCS,
                                      min_size=(29, 29))
    DEFAULT = IMAGENET1K_V1


class DenseNet161_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(_URL + "densenet161-8d451a50.pth", 28681000, _RECIPE, 77.138, 93.560, _DOCS,
                                      min_size=(29, 29))
    DEFAULT = IMAGENET1K_V1


class DenseNet169_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(_URL + "densenet169-b2777c0a.pth", 14149480, _RECIPE, 75.600, 92.806, _DOCS,
                                      min_size=(29, 29))
    DEFAULT = IMAGENET1K_V1


class DenseNet201_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(_URL + "densenet201-c1103571.pth", 20013928, _RECIPE, 76.896, 93.370, _DOCS,
                                      min_size=(29, 29))
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", DenseNet121_Weights.IMAGENET1K_V1))
def densenet121(*, weights: DenseNet121_Weights | None = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-121; kwargs go to DenseNet."""
    return _densenet(32, (6, 12, 24, 16), 64, DenseNet121_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", DenseNet161_Weights.IMAGENET1K_V1))
def densenet161(*, weights: DenseNet161_Weights | None = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-161."""
    return _densenet(48, (6, 12, 36, 24), 96, DenseNet161_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", DenseNet169_Weights.IMAGENET1K_V1))
def densenet169(*, weights: DenseNet169_Weights | None = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-169."""
    return _densenet(32, (6, 12, 32, 32), 64, DenseNet169_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", DenseNet201_Weights.IMAGENET1K_V1))
def densenet201(*, weights: DenseNet201_Weights | None = None, progress: bool = True, **kwargs: Any) -> DenseNet:
    """DenseNet-201."""
    return _densenet(32, (6, 12, 48, 32), 64, DenseNet201_Weights.verify(weights), progress, **kwargs)
