"""Multi-scale RoIAlign over a feature pyramid (torchvision.ops.poolers): each box is pooled from the
pyramid level that its size selects (FPN paper, eq. 1)."""

from __future__ import annotations

import math

import ember
from ember import nn

from .boxes import box_area
from .roi_align import roi_align


class LevelMapper:
    """Maps boxes to pyramid levels: ``floor(canonical_level + log2(sqrt(area) / canonical_scale) + eps)``,
    clamped to ``[k_min, k_max]``, returned as ``level - k_min`` (int64)."""

    def __init__(self, k_min: int, k_max: int, canonical_scale: int = 224, canonical_level: int = 4,
                 eps: float = 1e-6):
        self.k_min = k_min
        self.k_max = k_max
        self.s0 = canonical_scale
        self.lvl0 = canonical_level
        self.eps = eps

    def __call__(self, boxlists):
        s = ember.sqrt(ember.cat([box_area(b) for b in boxlists]))
        target = ember.floor(self.lvl0 + ember.log2(s / self.s0) + ember.tensor(self.eps, dtype=s.dtype))
        target = ember.clamp(target, min=self.k_min, max=self.k_max)
        return target.to(ember.int64) - self.k_min


def initLevelMapper(k_min: int, k_max: int, canonical_scale: int = 224, canonical_level: int = 4,
                    eps: float = 1e-6) -> LevelMapper:  # noqa: N802 (torchvision's name)
    return LevelMapper(k_min, k_max, canonical_scale, canonical_level, eps)


def _convert_to_roi_format(boxes):
    rows = [ember.cat([ember.full((b.shape[0], 1), float(i), dtype=b.dtype), b], dim=1) for i, b in enumerate(boxes)]
    return ember.cat(rows, dim=0)


def _infer_scale(feature, original_size) -> float:
    # The feature map's stride as the nearest power of two of (feature side / image side); the height's.
    scales = [2.0 ** round(math.log2(float(s1) / float(s2))) for s1, s2 in zip(feature.shape[-2:], original_size, strict=True)]
    return scales[0]


def _setup_scales(features, image_shapes, canonical_scale: int, canonical_level: int):
    if not image_shapes:
        raise ValueError("images list should not be empty")
    original_size = (max(s[0] for s in image_shapes), max(s[1] for s in image_shapes))
    scales = [_infer_scale(f, original_size) for f in features]
    lvl_min = -math.log2(scales[0])
    lvl_max = -math.log2(scales[-1])
    return scales, initLevelMapper(int(lvl_min), int(lvl_max), canonical_scale=canonical_scale,
                                   canonical_level=canonical_level)


def _filter_input(x: dict, featmap_names: list[str]) -> list:
    return [v for k, v in x.items() if k in featmap_names]


def _multiscale_roi_align(x_filtered, boxes, output_size, sampling_ratio: int, scales, mapper):
    if scales is None or mapper is None:
        raise ValueError("scales and mapper should not be None")
    rois = _convert_to_roi_format([b.to(x_filtered[0].dtype) for b in boxes])
    if len(x_filtered) == 1:
        return roi_align(x_filtered[0], rois, output_size, spatial_scale=scales[0], sampling_ratio=sampling_ratio)
    levels = mapper(boxes)
    # Each level pools its own boxes; the pieces are put back in box order by one gather (autograd
    # flows through it, where an in-place scatter into a zeros tensor would need index_put's).
    pieces, order = [], []
    for level, (feature, scale) in enumerate(zip(x_filtered, scales, strict=True)):
        idx = ember.where(levels == level)[0]
        pieces.append(roi_align(feature, rois[idx], output_size, spatial_scale=scale, sampling_ratio=sampling_ratio))
        order.append(idx)
    return ember.cat(pieces, dim=0)[ember.argsort(ember.cat(order))]


class MultiScaleRoIAlign(nn.Module):
    """RoIAlign over several feature maps (a dict, of which ``featmap_names`` are used), each box on
    the level that :class:`LevelMapper` picks. The levels' scales are inferred on the first call from
    the feature shapes and ``image_shapes`` (the images' sizes before batching)."""

    def __init__(self, featmap_names: list[str], output_size, sampling_ratio: int, *, canonical_scale: int = 224,
                 canonical_level: int = 4):
        super().__init__()
        if isinstance(output_size, int):
            output_size = (output_size, output_size)
        self.featmap_names = featmap_names
        self.sampling_ratio = sampling_ratio
        self.output_size = tuple(output_size)
        self.scales = None
        self.map_levels = None
        self.canonical_scale = canonical_scale
        self.canonical_level = canonical_level

    def forward(self, x: dict, boxes: list, image_shapes: list[tuple[int, int]]):
        """``x``: name → ``[N, C, H_l, W_l]``; ``boxes``: one ``[L_i, 4]`` xyxy tensor per image;
        returns ``[sum L_i, C, oh, ow]``."""
        x_filtered = _filter_input(x, self.featmap_names)
        if not x_filtered:
            raise ValueError(f"[MultiScaleRoIAlign] expected at least one feature map named in featmap_names "
                             f"{self.featmap_names}, but got {list(x)}")
        if self.scales is None or self.map_levels is None:
            self.scales, self.map_levels = _setup_scales(x_filtered, image_shapes, self.canonical_scale,
                                                         self.canonical_level)
        return _multiscale_roi_align(x_filtered, boxes, self.output_size, self.sampling_ratio, self.scales,
                                     self.map_levels)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(featmap_names={self.featmap_names}, "
                f"output_size={self.output_size}, sampling_ratio={self.sampling_ratio})")


__all__ = ["LevelMapper", "MultiScaleRoIAlign", "initLevelMapper"]
