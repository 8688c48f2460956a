"""SqueezeNet 1.0 and 1.1 (Iandola et al.)."""

from __future__ import annotations

from typing import Any

import ember
from ember import nn

from ._api import WeightsEnum, register_model
from ._utils import _imagenet_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["SqueezeNet", "SqueezeNet1_0_Weights", "SqueezeNet1_1_Weights", "squeezenet1_0", "squeezenet1_1"]


class Fire(nn.Module):
    """1x1 squeeze, then 1x1 and 3x3 expands concatenated along channels."""

    def __init__(self, inplanes: int, squeeze_planes: int, expand1x1_planes: int, expand3x3_planes: int) -> None:
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.squeeze_activation(self.squeeze(x))
        return ember.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    def __init__(self, version: str = "1_0", num_classes: int = 1000, dropout: float = 0.5) -> None:
        super().__init__()
        self.num_classes = num_classes
        if version == "1_0":
            self.features = nn.Sequential(
                nn.Conv2d(3, 96, kernel_size=7, stride=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(96, 16, 64, 64),
                Fire(128, 16, 64, 64),
                Fire(128, 32, 128, 128),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(256, 32, 128, 128),
                Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(512, 64, 256, 256),
            )
        elif version == "1_1":
            self.features = nn.Sequential(
                nn.Conv2d(3, 64, kernel_size=3, stride=2),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(64, 16, 64, 64),
                Fire(128, 16, 64, 64),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(128, 32, 128, 128),
                Fire(256, 32, 128, 128),
                nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
                Fire(256, 48, 192, 192),
                Fire(384, 48, 192, 192),
                Fire(384, 64, 256, 256),
                Fire(512, 64, 256, 256),
            )
        else:
            raise ValueError(f"Unsupported SqueezeNet version {version}: 1_0 or 1_1 expected")

        # The classifier is a 1x1 convolution to num_classes maps, averaged over space.
        final_conv = nn.Conv2d(512, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), final_conv, nn.ReLU(inplace=True),
                                        nn.AdaptiveAvgPool2d((1, 1)))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    nn.init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    nn.init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.classifier(self.features(x))
        return ember.flatten(x, 1)


def _squeezenet(version: str, weights: WeightsEnum | None, progress: bool, **kwargs: Any) -> SqueezeNet:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = SqueezeNet(version, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


_RECIPE = "https://github.com/pytorch/vision/pull/49#issuecomment-277560717"
_DOCS = "These weights reproduce closely the results of the paper using a simple training recipe."


class SqueezeNet1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights("https://download.pytorch.org/models/squeezenet1_0-b66bff10.pth", 1248424,
                                      _RECIPE, 58.092, 80.420, _DOCS, min_size=(21, 21))
    DEFAULT = IMAGENET1K_V1


class SqueezeNet1_1_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights("https://download.pytorch.org/models/squeezenet1_1-b8a52dc0.pth", 1235496,
                                      _RECIPE, 58.178, 80.624, _DOCS, min_size=(17, 17))
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", SqueezeNet1_0_Weights.IMAGENET1K_V1))
def squeezenet1_0(*, weights: SqueezeNet1_0_Weights | None = None, progress: bool = True,
                  **kwargs: Any) -> SqueezeNet:
    """SqueezeNet 1.0 ("AlexNet-level accuracy with 50x fewer parameters")."""
    return _squeezenet("1_0", SqueezeNet1_0_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", SqueezeNet1_1_Weights.IMAGENET1K_V1))
def squeezenet1_1(*, weights: SqueezeNet1_1_Weights | None = None, progress: bool = True,
                  **kwargs: Any) -> SqueezeNet:
    """SqueezeNet 1.1: 2.4x less computation than 1.0 at the same accuracy."""
    return _squeezenet("1_1", SqueezeNet1_1_Weights.verify(weights), progress, **kwargs)
