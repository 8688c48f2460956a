"""Inception v3 (Szegedy et al., "Rethinking the Inception Architecture for Computer Vision")."""

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

__all__ = ["Inception3", "InceptionOutputs", "_InceptionOutputs", "Inception_V3_Weights", "inception_v3"]

# What an Inception3 with its auxiliary head returns in training mode.
InceptionOutputs = namedtuple("InceptionOutputs", ["logits", "aux_logits"])
_InceptionOutputs = InceptionOutputs


class BasicConv2d(nn.Module):
    """Conv (no bias) → BatchNorm (eps 1e-3) → ReLU."""

    def __init__(self, in_channels: int, out_channels: int, **kwargs: Any) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, bias=False, **kwargs)
        self.bn = nn.BatchNorm2d(out_channels, eps=0.001)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return F.relu(self.bn(self.conv(x)))


def _block(conv_block: Callable[..., nn.Module] | None) -> Callable[..., nn.Module]:
    return BasicConv2d if conv_block is None else conv_block


class InceptionA(nn.Module):
    """35x35 module: 1x1 | 1x1→5x5 | 1x1→3x3→3x3 | avg pool→1x1."""

    def __init__(self, in_channels: int, pool_features: int, conv_block: Callable[..., nn.Module] | None = None):
        super().__init__()
        conv_block = _block(conv_block)
        self.branch1x1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch5x5_1 = conv_block(in_channels, 48, kernel_size=1)
        self.branch5x5_2 = conv_block(48, 64, kernel_size=5, padding=2)
        self.branch3x3dbl_1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv_block(96, 96, kernel_size=3, padding=1)
        self.branch_pool = conv_block(in_channels, pool_features, kernel_size=1)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        b1 = self.branch1x1(x)
        b5 = self.branch5x5_2(self.branch5x5_1(x))
        b3 = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return ember.cat([b1, b5, b3, bp], 1)


class InceptionB(nn.Module):
    """Grid reduction 35 → 17: strided 3x3 | 1x1→3x3→strided 3x3 | max pool."""

    def __init__(self, in_channels: int, conv_block: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        conv_block = _block(conv_block)
        self.branch3x3 = conv_block(in_channels, 384, kernel_size=3, stride=2)
        self.branch3x3dbl_1 = conv_block(in_channels, 64, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(64, 96, kernel_size=3, padding=1)
        self.branch3x3dbl_3 = conv_block(96, 96, kernel_size=3, stride=2)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        b3 = self.branch3x3(x)
        bd = self.branch3x3dbl_3(self.branch3x3dbl_2(self.branch3x3dbl_1(x)))
        return ember.cat([b3, bd, F.max_pool2d(x, kernel_size=3, stride=2)], 1)


class InceptionC(nn.Module):
    """17x17 module with factorized 7x7 convolutions (1x7 and 7x1)."""

    def __init__(self, in_channels: int, channels_7x7: int, conv_block: Callable[..., nn.Module] | None = None):
        super().__init__()
        conv_block = _block(conv_block)
        c7 = channels_7x7
        self.branch1x1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch7x7_1 = conv_block(in_channels, c7, kernel_size=1)
        self.branch7x7_2 = conv_block(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7_3 = conv_block(c7, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_1 = conv_block(in_channels, c7, kernel_size=1)
        self.branch7x7dbl_2 = conv_block(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_3 = conv_block(c7, c7, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7dbl_4 = conv_block(c7, c7, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7dbl_5 = conv_block(c7, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch_pool = conv_block(in_channels, 192, kernel_size=1)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        b1 = self.branch1x1(x)
        b7 = self.branch7x7_3(self.branch7x7_2(self.branch7x7_1(x)))
        bd = self.branch7x7dbl_1(x)
        for conv in (self.branch7x7dbl_2, self.branch7x7dbl_3, self.branch7x7dbl_4, self.branch7x7dbl_5):
            bd = conv(bd)
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return ember.cat([b1, b7, bd, bp], 1)


class InceptionD(nn.Module):
    """Grid reduction 17 → 8."""

    def __init__(self, in_channels: int, conv_block: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        conv_block = _block(conv_block)
        self.branch3x3_1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch3x3_2 = conv_block(192, 320, kernel_size=3, stride=2)
        self.branch7x7x3_1 = conv_block(in_channels, 192, kernel_size=1)
        self.branch7x7x3_2 = conv_block(192, 192, kernel_size=(1, 7), padding=(0, 3))
        self.branch7x7x3_3 = conv_block(192, 192, kernel_size=(7, 1), padding=(3, 0))
        self.branch7x7x3_4 = conv_block(192, 192, kernel_size=3, stride=2)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        b3 = self.branch3x3_2(self.branch3x3_1(x))
        b7 = self.branch7x7x3_4(self.branch7x7x3_3(self.branch7x7x3_2(self.branch7x7x3_1(x))))
        return ember.cat([b3, b7, F.max_pool2d(x, kernel_size=3, stride=2)], 1)


class InceptionE(nn.Module):
    """8x8 module whose 3x3 branches split into parallel 1x3 and 3x1 convolutions."""

    def __init__(self, in_channels: int, conv_block: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        conv_block = _block(conv_block)
        self.branch1x1 = conv_block(in_channels, 320, kernel_size=1)
        self.branch3x3_1 = conv_block(in_channels, 384, kernel_size=1)
        self.branch3x3_2a = conv_block(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3_2b = conv_block(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch3x3dbl_1 = conv_block(in_channels, 448, kernel_size=1)
        self.branch3x3dbl_2 = conv_block(448, 384, kernel_size=3, padding=1)
        self.branch3x3dbl_3a = conv_block(384, 384, kernel_size=(1, 3), padding=(0, 1))
        self.branch3x3dbl_3b = conv_block(384, 384, kernel_size=(3, 1), padding=(1, 0))
        self.branch_pool = conv_block(in_channels, 192, kernel_size=1)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        b1 = self.branch1x1(x)
        b3 = self.branch3x3_1(x)
        b3 = ember.cat([self.branch3x3_2a(b3), self.branch3x3_2b(b3)], 1)
        bd = self.branch3x3dbl_2(self.branch3x3dbl_1(x))
        bd = ember.cat([self.branch3x3dbl_3a(bd), self.branch3x3dbl_3b(bd)], 1)
        bp = self.branch_pool(F.avg_pool2d(x, kernel_size=3, stride=1, padding=1))
        return ember.cat([b1, b3, bd, bp], 1)


class InceptionAux(nn.Module):
    """Auxiliary classifier on the 17x17 map."""

    def __init__(self, in_channels: int, num_classes: int, conv_block: Callable[..., nn.Module] | None = None):
        super().__init__()
        conv_block = _block(conv_block)
        self.conv0 = conv_block(in_channels, 128, kernel_size=1)
        self.conv1 = conv_block(128, 768, kernel_size=5)
        self.conv1.stddev = 0.01  # type: ignore[assignment]
        self.fc = nn.Linear(768, num_classes)
        self.fc.stddev = 0.001  # type: ignore[assignment]

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.conv1(self.conv0(F.avg_pool2d(x, kernel_size=5, stride=3)))
        x = F.adaptive_avg_pool2d(x, (1, 1))
        return self.fc(ember.flatten(x, 1))


class Inception3(nn.Module):
    """Inception v3 (inputs of at least 75x75; 299x299 as trained). aux_logits, transform_input and
    init_weights as GoogLeNet's."""

    def __init__(self, num_classes: int = 1000, aux_logits: bool = True, transform_input: bool = False,
                 inception_blocks: list[Callable[..., nn.Module]] | None = None, init_weights: bool | None = None,
                 dropout: float = 0.5) -> None:
        super().__init__()
        if inception_blocks is None:
            inception_blocks = [BasicConv2d, InceptionA, InceptionB, InceptionC, InceptionD, InceptionE, InceptionAux]
        if init_weights is None:
            warnings.warn("The default weight initialization of inception_v3 will be changed in future releases of "
                          "torchvision. If you wish to keep the old behavior (which leads to long initialization "
                          "times due to scipy/scipy#11299), please set init_weights=True.", FutureWarning,
                          stacklevel=2)
            init_weights = True
        if len(inception_blocks) != 7:
            raise ValueError(f"length of inception_blocks should be 7 instead of {len(inception_blocks)}")
        conv_block, inception_a, inception_b, inception_c, inception_d, inception_e, inception_aux = inception_blocks

        self.aux_logits = aux_logits
        self.transform_input = transform_input
        self.Conv2d_1a_3x3 = conv_block(3, 32, kernel_size=3, stride=2)
        self.Conv2d_2a_3x3 = conv_block(32, 32, kernel_size=3)
        self.Conv2d_2b_3x3 = conv_block(32, 64, kernel_size=3, padding=1)
        self.maxpool1 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Conv2d_3b_1x1 = conv_block(64, 80, kernel_size=1)
        self.Conv2d_4a_3x3 = conv_block(80, 192, kernel_size=3)
        self.maxpool2 = nn.MaxPool2d(kernel_size=3, stride=2)
        self.Mixed_5b = inception_a(192, pool_features=32)
        self.Mixed_5c = inception_a(256, pool_features=64)
        self.Mixed_5d = inception_a(288, pool_features=64)
        self.Mixed_6a = inception_b(288)
        self.Mixed_6b = inception_c(768, channels_7x7=128)
        self.Mixed_6c = inception_c(768, channels_7x7=160)
        self.Mixed_6d = inception_c(768, channels_7x7=160)
        self.Mixed_6e = inception_c(768, channels_7x7=192)
        self.AuxLogits: nn.Module | None = None
        if aux_logits:
            self.AuxLogits = inception_aux(768, num_classes)
        self.Mixed_7a = inception_d(768)
        self.Mixed_7b = inception_e(1280)
        self.Mixed_7c = inception_e(2048)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.dropout = nn.Dropout(p=dropout)
        self.fc = nn.Linear(2048, num_classes)

        if init_weights:
            for m in self.modules():
                if isinstance(m, (nn.Conv2d, nn.Linear)):
                    stddev = float(m.stddev) if hasattr(m, "stddev") else 0.1
                    nn.init.trunc_normal_(m.weight, mean=0.0, std=stddev, a=-2, b=2)
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

    def _forward(self, x: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor | None]:
        for layer in (self.Conv2d_1a_3x3, self.Conv2d_2a_3x3, self.Conv2d_2b_3x3, self.maxpool1, self.Conv2d_3b_1x1,
                      self.Conv2d_4a_3x3, self.maxpool2, self.Mixed_5b, self.Mixed_5c, self.Mixed_5d, self.Mixed_6a,
                      self.Mixed_6b, self.Mixed_6c, self.Mixed_6d, self.Mixed_6e):
            x = layer(x)
        aux = self.AuxLogits(x) if self.AuxLogits is not None and self.training else None
        x = self.Mixed_7c(self.Mixed_7b(self.Mixed_7a(x)))
        x = ember.flatten(self.dropout(self.avgpool(x)), 1)
        return self.fc(x), aux

    def forward(self, x: ember.Tensor) -> InceptionOutputs | ember.Tensor:
        x, aux = self._forward(self._transform_input(x))
        if self.training and self.aux_logits:
            return InceptionOutputs(x, aux)
        return x


class Inception_V3_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(
        "https://download.pytorch.org/models/inception_v3_google-0cc3c7bd.pth", 27161264,
        "https://github.com/pytorch/vision/tree/main/references/classification#inception-v3", 77.294, 93.450,
        "These weights are ported from the original paper.", crop_size=299, resize_size=342, min_size=(75, 75))
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", Inception_V3_Weights.IMAGENET1K_V1))
def inception_v3(*, weights: Inception_V3_Weights | None = None, progress: bool = True, **kwargs: Any) -> Inception3:
    """Inception v3. With weights: transform_input defaults to True; the auxiliary head is kept unless
    aux_logits=False."""
    weights = Inception_V3_Weights.verify(weights)
    original_aux_logits = kwargs.get("aux_logits", True)
    if weights is not None:
        if "transform_input" not in kwargs:
            _ovewrite_named_param(kwargs, "transform_input", True)
        _ovewrite_named_param(kwargs, "aux_logits", True)
        _ovewrite_named_param(kwargs, "init_weights", False)
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = Inception3(**kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
        if not original_aux_logits:
            model.aux_logits = False
            model.AuxLogits = None
    return model
