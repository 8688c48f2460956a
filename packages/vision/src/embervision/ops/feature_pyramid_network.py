"""Feature Pyramid Network (torchvision.ops.feature_pyramid_network): top-down pathway with lateral
1x1 and output 3x3 convolutions, and the extra blocks that add coarser levels (``LastLevelMaxPool``,
``LastLevelP6P7``)."""

from __future__ import annotations

from collections import OrderedDict

from ember import nn
from ember.nn import functional as F

from .misc import Conv2dNormActivation


class ExtraFPNBlock(nn.Module):
    """Base of the blocks run on the FPN's outputs: ``forward(results, x, names)`` takes the FPN levels,
    the original features and the names, and returns the extended ``(results, names)``."""

    def forward(self, results: list, x: list, names: list[str]) -> tuple[list, list[str]]:
        raise NotImplementedError


class FeaturePyramidNetwork(nn.Module):
    """FPN over an ordered dict of feature maps (highest resolution first) with ``in_channels_list``
    channels; every output has ``out_channels`` channels and keeps its input's name."""

    _version = 2

    def __init__(self, in_channels_list: list[int], out_channels: int, extra_blocks: ExtraFPNBlock | None = None,
                 norm_layer=None):
        super().__init__()
        self.inner_blocks = nn.ModuleList()
        self.layer_blocks = nn.ModuleList()
        for in_channels in in_channels_list:
            if in_channels == 0:
                raise ValueError("in_channels=0 is currently not supported")
            self.inner_blocks.append(Conv2dNormActivation(in_channels, out_channels, kernel_size=1, padding=0,
                                                          norm_layer=norm_layer, activation_layer=None))
            self.layer_blocks.append(Conv2dNormActivation(out_channels, out_channels, kernel_size=3,
                                                          norm_layer=norm_layer, activation_layer=None))
        # initialized here, before extra_blocks, so that their own initialization is left alone
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_uniform_(m.weight, a=1)
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
        if extra_blocks is not None and not isinstance(extra_blocks, ExtraFPNBlock):
            raise TypeError(f"extra_blocks should be of type ExtraFPNBlock not {type(extra_blocks)}")
        self.extra_blocks = extra_blocks

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        # Version 1 checkpoints held bare convolutions: inner_blocks.0.weight is now inner_blocks.0.0.weight.
        version = local_metadata.get("version", None)
        if version is None or version < 2:
            for block in ("inner_blocks", "layer_blocks"):
                for i in range(len(self.inner_blocks)):
                    for kind in ("weight", "bias"):
                        old = f"{prefix}{block}.{i}.{kind}"
                        if old in state_dict:
                            state_dict[f"{prefix}{block}.{i}.0.{kind}"] = state_dict.pop(old)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def get_result_from_inner_blocks(self, x, idx: int):
        """``self.inner_blocks[idx](x)`` (negative ``idx`` counts from the end)."""
        return self.inner_blocks[idx % len(self.inner_blocks)](x)

    def get_result_from_layer_blocks(self, x, idx: int):
        """``self.layer_blocks[idx](x)`` (negative ``idx`` counts from the end)."""
        return self.layer_blocks[idx % len(self.layer_blocks)](x)

    def forward(self, x: dict) -> dict:
        names = list(x.keys())
        feats = list(x.values())
        if len(feats) != len(self.inner_blocks):
            raise ValueError(f"[FeaturePyramidNetwork] expected {len(self.inner_blocks)} feature maps, but got "
                             f"{len(feats)}")
        last_inner = self.get_result_from_inner_blocks(feats[-1], -1)
        results = [self.get_result_from_layer_blocks(last_inner, -1)]
        for idx in range(len(feats) - 2, -1, -1):
            inner_lateral = self.get_result_from_inner_blocks(feats[idx], idx)
            top_down = F.interpolate(last_inner, size=tuple(inner_lateral.shape[-2:]), mode="nearest")
            last_inner = inner_lateral + top_down
            results.insert(0, self.get_result_from_layer_blocks(last_inner, idx))
        if self.extra_blocks is not None:
            results, names = self.extra_blocks(results, feats, names)
        return OrderedDict(zip(names, results, strict=True))


class LastLevelMaxPool(ExtraFPNBlock):
    """Adds a level ``"pool"``: the last level subsampled by 2 (max-pool of kernel 1, stride 2)."""

    def forward(self, x: list, y: list, names: list[str]) -> tuple[list, list[str]]:
        names.append("pool")
        x.append(F.max_pool2d(x[-1], kernel_size=1, stride=2, padding=0))
        return x, names


class LastLevelP6P7(ExtraFPNBlock):
    """Adds levels ``"p6"`` and ``"p7"`` (RetinaNet): stride-2 3x3 convolutions of P5 (when
    ``in_channels == out_channels``) or of C5, the second after a ReLU."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.p6 = nn.Conv2d(in_channels, out_channels, 3, 2, 1)
        self.p7 = nn.Conv2d(out_channels, out_channels, 3, 2, 1)
        for module in (self.p6, self.p7):
            nn.init.kaiming_uniform_(module.weight, a=1)
            nn.init.constant_(module.bias, 0)
        self.use_P5 = in_channels == out_channels

    def forward(self, p: list, c: list, names: list[str]) -> tuple[list, list[str]]:
        p6 = self.p6(p[-1] if self.use_P5 else c[-1])
        p7 = self.p7(F.relu(p6))
        p.extend([p6, p7])
        names.extend(["p6", "p7"])
        return p, names


__all__ = ["ExtraFPNBlock", "FeaturePyramidNetwork", "LastLevelMaxPool", "LastLevelP6P7"]
