"""VGG 11/13/16/19, with and without batch norm (Simonyan and Zisserman)."""

from __future__ import annotations

from functools import partial
from typing import Any

import ember
from ember import nn

from ..transforms._presets import ImageClassification
from ._api import Weights, WeightsEnum, register_model
from ._utils import _imagenet_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = [
    "VGG", "VGG11_Weights", "VGG11_BN_Weights", "VGG13_Weights", "VGG13_BN_Weights", "VGG16_Weights",
    "VGG16_BN_Weights", "VGG19_Weights", "VGG19_BN_Weights", "vgg11", "vgg11_bn", "vgg13", "vgg13_bn", "vgg16",
    "vgg16_bn", "vgg19", "vgg19_bn",
]


class VGG(nn.Module):
    def __init__(self, features: nn.Module, num_classes: int = 1000, init_weights: bool = True,
                 dropout: float = 0.5) -> None:
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, 4096),
            nn.ReLU(True),
            nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes),
        )
        if init_weights:
            for m in self.modules():
                if isinstance(m, nn.Conv2d):
                    nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                    if m.bias is not None:
                        nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.BatchNorm2d):
                    nn.init.constant_(m.weight, 1)
                    nn.init.constant_(m.bias, 0)
                elif isinstance(m, nn.Linear):
                    nn.init.normal_(m.weight, 0, 0.01)
                    nn.init.constant_(m.bias, 0)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.avgpool(self.features(x))
        return self.classifier(ember.flatten(x, 1))


def make_layers(cfg: list[str | int], batch_norm: bool = False) -> nn.Sequential:
    """3x3 convolutions of the widths in cfg, "M" being a 2x2 max pool."""
    layers: list[nn.Module] = []
    in_channels = 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1)
            layers.extend([conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)] if batch_norm
                          else [conv2d, nn.ReLU(inplace=True)])
            in_channels = v
    return nn.Sequential(*layers)


cfgs: dict[str, list[str | int]] = {
    "A": [64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "B": [64, 64, "M", 128, 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"],
    "D": [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"],
    "E": [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"],
}


def _vgg(cfg: str, batch_norm: bool, weights: WeightsEnum | None, progress: bool, **kwargs: Any) -> VGG:
    if weights is not None:
        kwargs["init_weights"] = False
        # The SSD feature weights have no classifier, hence no categories to fix num_classes.
        if weights.meta["categories"] is not None:
            _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = VGG(make_layers(cfgs[cfg], batch_norm=batch_norm), **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


_RECIPE = "https://github.com/pytorch/vision/tree/main/references/classification#alexnet-and-vgg"
_DOCS = "These weights were trained from scratch by using a simplified training recipe."
_URL = "https://download.pytorch.org/models/"
_vgg_entry = partial(_imagenet_weights, recipe=_RECIPE, docs=_DOCS, min_size=(32, 32))


class VGG11_Weights(WeightsEnum):
    IMAGENET1K_V1 = _vgg_entry(_URL + "vgg11-8a719046.pth", 132863336, acc1=69.020, acc5=88.628)
    DEFAULT = IMAGENET1K_V1


class VGG11_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _vgg_entry(_URL + "vgg11_bn-6002323d.pth", 132868840, acc1=70.370, acc5=89.810)
    DEFAULT = IMAGENET1K_V1


class VGG13_Weights(WeightsEnum):
    IMAGENET1K_V1 = _vgg_entry(_URL + "vgg13-19584684.pth", 133047848, acc1=69.928, acc5=89.246)
    DEFAULT = IMAGENET1K_V1


class VGG13_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _vgg_entry(_URL + "vgg13_bn-abd245e5.pth", 133053736, acc1=71.586, acc5=90.374)
    DEFAULT = IMAGENET1K_V1


class VGG16_Weights(WeightsEnum):
    IMAGENET1K_V1 = _vgg_entry(_URL + "vgg16-397923af.pth", 138357544, acc1=71.592, acc5=90.382)
    # The features of VGG-16 trained with SSD (amdegroot's port): inputs scaled to 0..255 and only
    # mean-subtracted, no classifier categories.
    IMAGENET1K_FEATURES = Weights(
        url=_URL + "vgg16_features-amdegroot-88682ab5.pth",
        transforms=partial(ImageClassification, crop_size=224, mean=(0.48235, 0.45882, 0.40784),
                           std=(1.0 / 255.0, 1.0 / 255.0, 1.0 / 255.0)),
        meta={
            "min_size": (32, 32),
            "categories": None,
            "num_params": 138357544,
            "recipe": "https://github.com/amdegroot/ssd.pytorch#training-ssd",
            "_metrics": {"ImageNet-1K": {"acc@1": float("nan"), "acc@5": float("nan")}},
            "_docs": """
    These weights can't be used for classification because they are missing values in the `classifier`
    module. Only the `features` module has valid values and can be used for feature extraction. The weights
    were trained using the original input standardization method as described in the paper.
""",
        },
    )
    DEFAULT = IMAGENET1K_V1


class VGG16_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _vgg_entry(_URL + "vgg16_bn-6c64b313.pth", 138365992, acc1=73.360, acc5=91.516)
    DEFAULT = IMAGENET1K_V1


class VGG19_Weights(WeightsEnum):
    IMAGENET1K_V1 = _vgg_entry(_URL + "vgg19-dcbb9e9d.pth", 143667240, acc1=72.376, acc5=90.876)
    DEFAULT = IMAGENET1K_V1


class VGG19_BN_Weights(WeightsEnum):
    IMAGENET1K_V1 = _vgg_entry(_URL + "vgg19_bn-c79401a0.pth", 143678248, acc1=74.218, acc5=91.842)
    DEFAULT = IMAGENET1K_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG11_Weights.IMAGENET1K_V1))
def vgg11(*, weights: VGG11_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 (configuration "A"). kwargs go to VGG (num_classes, init_weights, dropout)."""
    return _vgg("A", False, VGG11_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG11_BN_Weights.IMAGENET1K_V1))
def vgg11_bn(*, weights: VGG11_BN_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-11 with batch norm."""
    return _vgg("A", True, VGG11_BN_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG13_Weights.IMAGENET1K_V1))
def vgg13(*, weights: VGG13_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-13 (configuration "B")."""
    return _vgg("B", False, VGG13_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG13_BN_Weights.IMAGENET1K_V1))
def vgg13_bn(*, weights: VGG13_BN_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-13 with batch norm."""
    return _vgg("B", True, VGG13_BN_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG16_Weights.IMAGENET1K_V1))
def vgg16(*, weights: VGG16_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 (configuration "D")."""
    return _vgg("D", False, VGG16_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG16_BN_Weights.IMAGENET1K_V1))
def vgg16_bn(*, weights: VGG16_BN_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-16 with batch norm."""
    return _vgg("D", True, VGG16_BN_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG19_Weights.IMAGENET1K_V1))
def vgg19(*, weights: VGG19_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-19 (configuration "E")."""
    return _vgg("E", False, VGG19_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", VGG19_BN_Weights.IMAGENET1K_V1))
def vgg19_bn(*, weights: VGG19_BN_Weights | None = None, progress: bool = True, **kwargs: Any) -> VGG:
    """VGG-19 with batch norm."""
    return _vgg("E", True, VGG19_BN_Weights.verify(weights), progress, **kwargs)
