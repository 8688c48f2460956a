"""ResNet, ResNeXt and Wide ResNet, with torchvision's architecture and state-dict names."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ember
from ember import nn

from ._api import WeightsEnum, register_model
from ._utils import _imagenet_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = [
    "ResNet", "ResNet18_Weights", "ResNet34_Weights", "ResNet50_Weights", "ResNet101_Weights", "ResNet152_Weights",
    "ResNeXt50_32X4D_Weights", "ResNeXt101_32X8D_Weights", "ResNeXt101_64X4D_Weights", "Wide_ResNet50_2_Weights",
    "Wide_ResNet101_2_Weights", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "resnext50_32x4d",
    "resnext101_32x8d", "resnext101_64x4d", "wide_resnet50_2", "wide_resnet101_2",
]


def conv3x3(in_planes: int, out_planes: int, stride: int = 1, groups: int = 1, dilation: int = 1) -> nn.Conv2d:
    """3x3 convolution with padding"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=dilation, groups=groups,
                     bias=False, dilation=dilation)


def conv1x1(in_planes: int, out_planes: int, stride: int = 1) -> nn.Conv2d:
    """1x1 convolution"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion: int = 1

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError("BasicBlock only supports groups=1 and base_width=64")
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        # conv1 and downsample both stride when stride != 1.
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    # The stride sits on the 3x3 convolution (conv2), as in ResNet V1.5, not on conv1 as in the paper.
    expansion: int = 4

    def __init__(self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None,
                 groups: int = 1, base_width: int = 64, dilation: int = 1,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        width = int(planes * (base_width / 64.0)) * groups
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, block: type[BasicBlock | Bottleneck], layers: list[int], num_classes: int = 1000,
                 zero_init_residual: bool = False, groups: int = 1, width_per_group: int = 64,
                 replace_stride_with_dilation: list[bool] | None = None,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer

        self.inplanes = 64
        self.dilation = 1
        if replace_stride_with_dilation is None:
            # Each element says whether to replace that stage's 2x2 stride with a dilated convolution.
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None "
                             f"or a 3-element tuple, got {replace_stride_with_dilation}")
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2, dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2, dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2, dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

        # Zero the last BN of each residual branch, so every block starts as the identity
        # (Goyal et al., "Accurate, Large Minibatch SGD").
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck) and m.bn3.weight is not None:
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock) and m.bn2.weight is not None:
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block: type[BasicBlock | Bottleneck], planes: int, blocks: int, stride: int = 1,
                    dilate: bool = False) -> nn.Sequential:
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(conv1x1(self.inplanes, planes * block.expansion, stride),
                                       norm_layer(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample, self.groups, self.base_width, previous_dilation,
                        norm_layer)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups, base_width=self.base_width,
                                dilation=self.dilation, norm_layer=norm_layer))
        return nn.Sequential(*layers)

    def _forward_impl(self, x: ember.Tensor) -> ember.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        x = ember.flatten(self.avgpool(x), 1)
        return self.fc(x)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self._forward_impl(x)


def _resnet(block: type[BasicBlock | Bottleneck], layers: list[int], weights: WeightsEnum | None, progress: bool,
            **kwargs: Any) -> ResNet:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = ResNet(block, layers, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


_V1_DOCS = "These weights reproduce closely the results of the paper using a simple training recipe."
_V2_DOCS = """
    These weights improve upon the results of the original paper by using TorchVision's `new training recipe
    <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
"""
_entry = _imagenet_weights
_RESNET_RECIPE = "https://github.com/pytorch/vision/tree/main/references/classification#resnet"
_RESNEXT_RECIPE = "https://github.com/pytorch/vision/tree/main/references/classification#resnext"
_NEW_RECIPE = "https://github.com/pytorch/vision/issues/3995#new-recipe"
_FIXRES_RECIPE = "https://github.com/pytorch/vision/issues/3995#new-recipe-with-fixres"
_URL = "https://download.pytorch.org/models/"


class ResNet18_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry(_URL + "resnet18-f37072fd.pth", 11689512, _RESNET_RECIPE, 69.758, 89.078, _V1_DOCS)
    DEFAULT = IMAGENET1K_V1


class ResNet34_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry(_URL + "resnet34-b627a593.pth", 21797672, _RESNET_RECIPE, 73.314, 91.420, _V1_DOCS)
    DEFAULT = IMAGENET1K_V1


class ResNet50_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry(_URL + "resnet50-0676ba61.pth", 25557032, _RESNET_RECIPE, 76.130, 92.862, _V1_DOCS)
    IMAGENET1K_V2 = _entry(_URL + "resnet50-11ad3fa6.pth", 25557032,
                           "https://github.com/pytorch/vision/issues/3995#issuecomment-1013906621", 80.858, 95.434,
                           _V2_DOCS, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNet101_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry(_URL + "resnet101-63fe2227.pth", 44549160, _RESNET_RECIPE, 77.374, 93.546, _V1_DOCS)
    IMAGENET1K_V2 = _entry(_URL + "resnet101-cd907fc2.pth", 44549160, _NEW_RECIPE, 81.886, 95.780, _V2_DOCS,
                           resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNet152_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry(_URL + "resnet152-394f9c45.pth", 60192808, _RESNET_RECIPE, 78.312, 94.046, _V1_DOCS)
    IMAGENET1K_V2 = _entry(_URL + "resnet152-f82ba261.pth", 60192808, _NEW_RECIPE, 82.284, 96.002, _V2_DOCS,
                           resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNeXt50_32X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry(_URL + "resnext50_32x4d-7cdf4587.pth", 25028904, _RESNEXT_RECIPE, 77.618, 93.698,
                           _V1_DOCS)
    IMAGENET1K_V2 = _entry(_URL + "resnext50_32x4d-1a0047aa.pth", 25028904, _NEW_RECIPE, 81.198, 95.340, _V2_DOCS,
                           resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_32X8D_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry(_URL + "resnext101_32x8d-8ba56ff5.pth", 88791336, _RESNEXT_RECIPE, 79.312, 94.526,
                           _V1_DOCS)
    IMAGENET1K_V2 = _entry(_URL + "resnext101_32x8d-110c445d.pth", 88791336, _FIXRES_RECIPE, 82.834, 96.228,
                           _V2_DOCS, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class ResNeXt101_64X4D_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry(_URL + "resnext101_64x4d-173b62eb.pth", 83455272,
                           "https://github.com/pytorch/vision/pull/5935", 83.246, 96.454,
                           """
    These weights were trained from scratch by using TorchVision's `new training recipe
    <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
""", resize_size=232)
    DEFAULT = IMAGENET1K_V1


class Wide_ResNet50_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry(_URL + "wide_resnet50_2-95faca4d.pth", 68883240,
                           "https://github.com/pytorch/vision/pull/912#issue-445437439", 78.468, 94.086, _V1_DOCS)
    IMAGENET1K_V2 = _entry(_URL + "wide_resnet50_2-9ba9bcbe.pth", 68883240, _FIXRES_RECIPE, 81.602, 95.758,
                           _V2_DOCS, resize_size=232)
    DEFAULT = IMAGENET1K_V2


class Wide_ResNet101_2_Weights(WeightsEnum):
    IMAGENET1K_V1 = _entry(_URL + "wide_resnet101_2-32ee1156.pth", 126886696,
                           "https://github.com/pytorch/vision/pull/912#issue-445437439", 78.848, 94.284, _V1_DOCS)
    IMAGENET1K_V2 = _entry(_URL + "wide_resnet101_2-d733dc28.pth", 126886696, _NEW_RECIPE, 82.510, 96.020,
                           _V2_DOCS, resize_size=232)
    DEFAULT = IMAGENET1K_V2


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet18_Weights.IMAGENET1K_V1))
def resnet18(*, weights: ResNet18_Weights | None = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-18 (He et al., "Deep Residual Learning for Image Recognition").

    weights: a ResNet18_Weights member or its name; None builds a randomly initialized model.
    progress: draw a download progress bar. kwargs go to ResNet.
    """
    weights = ResNet18_Weights.verify(weights)
    return _resnet(BasicBlock, [2, 2, 2, 2], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet34_Weights.IMAGENET1K_V1))
def resnet34(*, weights: ResNet34_Weights | None = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-34; arguments as resnet18."""
    weights = ResNet34_Weights.verify(weights)
    return _resnet(BasicBlock, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet50_Weights.IMAGENET1K_V1))
def resnet50(*, weights: ResNet50_Weights | None = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-50 (V1.5: stride on the 3x3 convolution); arguments as resnet18."""
    weights = ResNet50_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet101_Weights.IMAGENET1K_V1))
def resnet101(*, weights: ResNet101_Weights | None = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-101; arguments as resnet18."""
    weights = ResNet101_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNet152_Weights.IMAGENET1K_V1))
def resnet152(*, weights: ResNet152_Weights | None = None, progress: bool = True, **kwargs: Any) -> ResNet:
    """ResNet-152; arguments as resnet18."""
    weights = ResNet152_Weights.verify(weights)
    return _resnet(Bottleneck, [3, 8, 36, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNeXt50_32X4D_Weights.IMAGENET1K_V1))
def resnext50_32x4d(*, weights: ResNeXt50_32X4D_Weights | None = None, progress: bool = True,
                    **kwargs: Any) -> ResNet:
    """ResNeXt-50 32x4d (Xie et al., "Aggregated Residual Transformations"); arguments as resnet18."""
    weights = ResNeXt50_32X4D_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "groups", 32)
    _ovewrite_named_param(kwargs, "width_per_group", 4)
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNeXt101_32X8D_Weights.IMAGENET1K_V1))
def resnext101_32x8d(*, weights: ResNeXt101_32X8D_Weights | None = None, progress: bool = True,
                     **kwargs: Any) -> ResNet:
    """ResNeXt-101 32x8d; arguments as resnet18."""
    weights = ResNeXt101_32X8D_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "groups", 32)
    _ovewrite_named_param(kwargs, "width_per_group", 8)
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", ResNeXt101_64X4D_Weights.IMAGENET1K_V1))
def resnext101_64x4d(*, weights: ResNeXt101_64X4D_Weights | None = None, progress: bool = True,
                     **kwargs: Any) -> ResNet:
    """ResNeXt-101 64x4d; arguments as resnet18."""
    weights = ResNeXt101_64X4D_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "groups", 64)
    _ovewrite_named_param(kwargs, "width_per_group", 4)
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", Wide_ResNet50_2_Weights.IMAGENET1K_V1))
def wide_resnet50_2(*, weights: Wide_ResNet50_2_Weights | None = None, progress: bool = True,
                    **kwargs: Any) -> ResNet:
    """Wide ResNet-50-2 (Zagoruyko and Komodakis): ResNet-50 with twice the bottleneck width;
    arguments as resnet18."""
    weights = Wide_ResNet50_2_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "width_per_group", 64 * 2)
    return _resnet(Bottleneck, [3, 4, 6, 3], weights, progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", Wide_ResNet101_2_Weights.IMAGENET1K_V1))
def wide_resnet101_2(*, weights: Wide_ResNet101_2_Weights | None = None, progress: bool = True,
                     **kwargs: Any) -> ResNet:
    """Wide ResNet-101-2: ResNet-101 with twice the bottleneck width; arguments as resnet18."""
    weights = Wide_ResNet101_2_Weights.verify(weights)
    _ovewrite_named_param(kwargs, "width_per_group", 64 * 2)
    return _resnet(Bottleneck, [3, 4, 23, 3], weights, progress, **kwargs)
