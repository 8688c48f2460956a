"""MNASNet B1 (Tan et al., "MnasNet: Platform-Aware Neural Architecture Search for Mobile")."""

from __future__ import annotations

import warnings
from typing import Any

import ember
from ember import nn

from ._api import WeightsEnum, register_model
from ._utils import _imagenet_weights, _ovewrite_named_param, handle_legacy_interface

__all__ = ["MNASNet", "MNASNet0_5_Weights", "MNASNet0_75_Weights", "MNASNet1_0_Weights", "MNASNet1_3_Weights",
           "mnasnet0_5", "mnasnet0_75", "mnasnet1_0", "mnasnet1_3"]

# The paper's TensorFlow momentum 0.9997 in PyTorch's convention (1 - TF momentum).
_BN_MOMENTUM = 1 - 0.9997


class _InvertedResidual(nn.Module):
    def __init__(self, in_ch: int, out_ch: int, kernel_size: int, stride: int, expansion_factor: int,
                 bn_momentum: float = 0.1) -> None:
        super().__init__()
        if stride not in (1, 2):
            raise ValueError(f"stride should be 1 or 2 instead of {stride}")
        if kernel_size not in (3, 5):
            raise ValueError(f"kernel_size should be 3 or 5 instead of {kernel_size}")
        mid_ch = in_ch * expansion_factor
        self.apply_residual = in_ch == out_ch and stride == 1
        self.layers = nn.Sequential(
            # Pointwise
            nn.Conv2d(in_ch, mid_ch, 1, bias=False),
            nn.BatchNorm2d(mid_ch, momentum=bn_momentum),
            nn.ReLU(inplace=True),
            # Depthwise
            nn.Conv2d(mid_ch, mid_ch, kernel_size, padding=kernel_size // 2, stride=stride, groups=mid_ch,
                      bias=False),
            nn.BatchNorm2d(mid_ch, momentum=bn_momentum),
            nn.ReLU(inplace=True),
            # Linear pointwise: no activation.
            nn.Conv2d(mid_ch, out_ch, 1, bias=False),
            nn.BatchNorm2d(out_ch, momentum=bn_momentum),
        )

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        if self.apply_residual:
            return self.layers(input) + input
        return self.layers(input)


def _stack(in_ch: int, out_ch: int, kernel_size: int, stride: int, exp_factor: int, repeats: int,
           bn_momentum: float) -> nn.Sequential:
    """`repeats` inverted residuals; only the first changes shape (so it has no skip)."""
    if repeats < 1:
        raise ValueError(f"repeats should be >= 1, instead got {repeats}")
    first = _InvertedResidual(in_ch, out_ch, kernel_size, stride, exp_factor, bn_momentum=bn_momentum)
    remaining = [_InvertedResidual(out_ch, out_ch, kernel_size, 1, exp_factor, bn_momentum=bn_momentum)
                 for _ in range(1, repeats)]
    return nn.Sequential(first, *remaining)


def _round_to_multiple_of(val: float, divisor: int, round_up_bias: float = 0.9) -> int:
    """Round to a multiple of divisor, up unless that is no more than 10% above val: (83, 8) → 80,
    (84, 8) → 88."""
    if not 0.0 < round_up_bias < 1.0:
        raise ValueError(f"round_up_bias should be greater than 0.0 and smaller than 1.0 instead of {round_up_bias}")
    new_val = max(divisor, int(val + divisor / 2) // divisor * divisor)
    return new_val if new_val >= round_up_bias * val else new_val + divisor


def _get_depths(alpha: float) -> list[int]:
    depths = [32, 16, 24, 40, 80, 96, 192, 320]
    return [_round_to_multiple_of(depth * alpha, 8) for depth in depths]


class MNASNet(nn.Module):
    """MNASNet B1 with every width scaled by `alpha`."""

    # Version 2 scales the stem too; version 1 checkpoints (fixed 32/16 stem) are patched on load.
    _version = 2

    def __init__(self, alpha: float, num_classes: int = 1000, dropout: float = 0.2) -> None:
        super().__init__()
        if alpha <= 0.0:
            raise ValueError(f"alpha should be greater than 0.0 instead of {alpha}")
        self.alpha = alpha
        self.num_classes = num_classes
        depths = _get_depths(alpha)
        layers = [
            # Stem: a regular conv, then a depthwise separable one without skip.
            nn.Conv2d(3, depths[0], 3, padding=1, stride=2, bias=False),
            nn.BatchNorm2d(depths[0], momentum=_BN_MOMENTUM),
            nn.ReLU(inplace=True),
            nn.Conv2d(depths[0], depths[0], 3, padding=1, stride=1, groups=depths[0], bias=False),
            nn.BatchNorm2d(depths[0], momentum=_BN_MOMENTUM),
            nn.ReLU(inplace=True),
            nn.Conv2d(depths[0], depths[1], 1, padding=0, stride=1, bias=False),
            nn.BatchNorm2d(depths[1], momentum=_BN_MOMENTUM),
            _stack(depths[1], depths[2], 3, 2, 3, 3, _BN_MOMENTUM),
            _stack(depths[2], depths[3], 5, 2, 3, 3, _BN_MOMENTUM),
            _stack(depths[3], depths[4], 5, 2, 6, 3, _BN_MOMENTUM),
            _stack(depths[4], depths[5], 3, 1, 6, 2, _BN_MOMENTUM),
            _stack(depths[5], depths[6], 5, 2, 6, 4, _BN_MOMENTUM),
            _stack(depths[6], depths[7], 3, 1, 6, 1, _BN_MOMENTUM),
            nn.Conv2d(depths[7], 1280, 1, padding=0, stride=1, bias=False),
            nn.BatchNorm2d(1280, momentum=_BN_MOMENTUM),
            nn.ReLU(inplace=True),
        ]
        self.layers = nn.Sequential(*layers)
        # Dropout runs out of place: Note [in-place activations] in embervision/ops/misc.py.
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(1280, num_classes))

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.kaiming_uniform_(m.weight, mode="fan_out", nonlinearity="sigmoid")
                nn.init.zeros_(m.bias)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.layers(x).mean([2, 3])  # global average pool
        return self.classifier(x)

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        version = local_metadata.get("version", None)
        if version not in (1, 2):
            raise ValueError(f"version shluld be set to 1 or 2 instead of {version}")
        if version == 1 and not self.alpha == 1.0:
            # Version 1 had a fixed-width stem; rebuild it so the old checkpoint fits (alpha 1.0 is the same).
            depths = _get_depths(self.alpha)
            v1_stem = [
                nn.Conv2d(3, 32, 3, padding=1, stride=2, bias=False),
                nn.BatchNorm2d(32, momentum=_BN_MOMENTUM),
                nn.ReLU(inplace=True),
                nn.Conv2d(32, 32, 3, padding=1, stride=1, groups=32, bias=False),
                nn.BatchNorm2d(32, momentum=_BN_MOMENTUM),
                nn.ReLU(inplace=True),
                nn.Conv2d(32, 16, 1, padding=0, stride=1, bias=False),
                nn.BatchNorm2d(16, momentum=_BN_MOMENTUM),
                _stack(16, depths[2], 3, 2, 3, 3, _BN_MOMENTUM),
            ]
            for idx, layer in enumerate(v1_stem):
                self.layers[idx] = layer
            # The model is now version 1 and saves as such.
            self._version = 1
            warnings.warn("A new version of MNASNet model has been implemented. Your checkpoint was saved using the "
                          "previous version. This checkpoint will load and work as before, but you may want to "
                          "upgrade by training a newer model or transfer learning from an updated ImageNet "
                          "checkpoint.", UserWarning, stacklevel=2)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)


_RECIPE = "https://github.com/1e100/mnasnet_trainer"
_PAPER_DOCS = "These weights reproduce closely the results of the paper."
_NEW_DOCS = """
    These weights were trained from scratch by using TorchVision's `new training recipe
    <https://pytorch.org/blog/how-to-train-state-of-the-art-models-using-torchvision-latest-primitives/>`_.
"""
_URL = "https://download.pytorch.org/models/"


class MNASNet0_5_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(_URL + "mnasnet0.5_top1_67.823-3ffadce67e.pth", 2218512, _RECIPE, 67.734,
                                      87.490, _PAPER_DOCS)
    DEFAULT = IMAGENET1K_V1


class MNASNet0_75_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(_URL + "mnasnet0_75-7090bc5f.pth", 3170208,
                                      "https://github.com/pytorch/vision/pull/6019", 71.180, 90.496, _NEW_DOCS,
                                      resize_size=232)
    DEFAULT = IMAGENET1K_V1


class MNASNet1_0_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(_URL + "mnasnet1.0_top1_73.512-f206786ef8.pth", 4383312, _RECIPE, 73.456,
                                      91.510, _PAPER_DOCS)
    DEFAULT = IMAGENET1K_V1


class MNASNet1_3_Weights(WeightsEnum):
    IMAGENET1K_V1 = _imagenet_weights(_URL + "mnasnet1_3-a4c69d6f.pth", 6282256,
                                      "https://github.com/pytorch/vision/pull/6019", 76.506, 93.522, _NEW_DOCS,
                                      resize_size=232)
    DEFAULT = IMAGENET1K_V1


def _mnasnet(alpha: float, weights: WeightsEnum | None, progress: bool, **kwargs: Any) -> MNASNet:
    if weights is not None:
        _ovewrite_named_param(kwargs, "num_classes", len(weights.meta["categories"]))
    model = MNASNet(alpha, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


@register_model()
@handle_legacy_interface(weights=("pretrained", MNASNet0_5_Weights.IMAGENET1K_V1))
def mnasnet0_5(*, weights: MNASNet0_5_Weights | None = None, progress: bool = True, **kwargs: Any) -> MNASNet:
    """MNASNet with depth multiplier 0.5; kwargs go to MNASNet."""
    return _mnasnet(0.5, MNASNet0_5_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", MNASNet0_75_Weights.IMAGENET1K_V1))
def mnasnet0_75(*, weights: MNASNet0_75_Weights | None = None, progress: bool = True, **kwargs: Any) -> MNASNet:
    """MNASNet with depth multiplier 0.75."""
    return _mnasnet(0.75, MNASNet0_75_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", MNASNet1_0_Weights.IMAGENET1K_V1))
def mnasnet1_0(*, weights: MNASNet1_0_Weights | None = None, progress: bool = True, **kwargs: Any) -> MNASNet:
    """MNASNet with depth multiplier 1.0."""
    return _mnasnet(1.0, MNASNet1_0_Weights.verify(weights), progress, **kwargs)


@register_model()
@handle_legacy_interface(weights=("pretrained", MNASNet1_3_Weights.IMAGENET1K_V1))
def mnasnet1_3(*, weights: MNASNet1_3_Weights | None = None, progress: bool = True, **kwargs: Any) -> MNASNet:
    """MNASNet with depth multiplier 1.3."""
    return _mnasnet(1.3, MNASNet1_3_Weights.verify(weights), progress, **kwargs)
