"""Anchor generators: AnchorGenerator (R-CNN, RetinaNet, FCOS) and DefaultBoxGenerator (SSD)."""

from __future__ import annotations

import math

import ember
from ember import nn

from .image_list import ImageList

__all__ = ["AnchorGenerator", "DefaultBoxGenerator"]


class AnchorGenerator(nn.Module):
    """Anchors for a set of feature maps: for feature map i, len(sizes[i]) * len(aspect_ratios[i])
    boxes centred on every cell (spaced by the map's stride in the padded batch), xyxy in pixels.

    sizes and aspect_ratios hold one tuple per feature map (a flat `sizes` means one size per map,
    and a flat `aspect_ratios` is shared by all maps). aspect_ratio = height / width.
    """

    def __init__(self, sizes=((128, 256, 512),), aspect_ratios=((0.5, 1.0, 2.0),)) -> None:
        super().__init__()
        if not isinstance(sizes[0], (list, tuple)):
            sizes = tuple((s,) for s in sizes)
        if not isinstance(aspect_ratios[0], (list, tuple)):
            aspect_ratios = (aspect_ratios,) * len(sizes)
        self.sizes = sizes
        self.aspect_ratios = aspect_ratios
        # Mismatched lengths are reported by grid_anchors, on use (as torchvision).
        self.cell_anchors = [self.generate_anchors(size, ar) for size, ar in zip(sizes, aspect_ratios, strict=False)]

    def generate_anchors(self, scales, aspect_ratios, dtype=ember.float32, device=None) -> ember.Tensor:
        """The zero-centred anchors of one cell, [len(aspect_ratios) * len(scales), 4], ratio-major,
        rounded to whole pixels: area scale², height/width = aspect ratio."""
        scales = ember.as_tensor(scales, dtype=dtype)
        aspect_ratios = ember.as_tensor(aspect_ratios, dtype=dtype)
        h_ratios = ember.sqrt(aspect_ratios)
        w_ratios = 1 / h_ratios
        ws = (w_ratios[:, None] * scales[None, :]).reshape(-1)
        hs = (h_ratios[:, None] * scales[None, :]).reshape(-1)
        return (ember.stack([-ws, -hs, ws, hs], dim=1) / 2).round()

    def set_cell_anchors(self, dtype, device=None) -> None:
        self.cell_anchors = [a.to(dtype=dtype) for a in self.cell_anchors]

    def num_anchors_per_location(self) -> list[int]:
        return [len(s) * len(a) for s, a in zip(self.sizes, self.aspect_ratios, strict=False)]

    def grid_anchors(self, grid_sizes: list[list[int]], strides: list[list[int]]) -> list[ember.Tensor]:
        """Per feature map, the cell anchors shifted to every cell: [H * W * A, 4], location-major."""
        if not (len(grid_sizes) == len(strides) == len(self.cell_anchors)):
            raise ValueError("Anchors should be Tuple[Tuple[int]] because each feature map could potentially have "
                             "different sizes and aspect ratios. There needs to be a match between the number of "
                             "feature maps passed and the number of sizes / aspect ratios specified.")
        anchors = []
        for (grid_h, grid_w), (stride_h, stride_w), base in zip(grid_sizes, strides, self.cell_anchors, strict=True):
            shifts_x = ember.arange(0, grid_w, dtype=base.dtype) * stride_w
            shifts_y = ember.arange(0, grid_h, dtype=base.dtype) * stride_h
            shift_y, shift_x = ember.meshgrid(shifts_y, shifts_x, indexing="ij")
            shift_x, shift_y = shift_x.reshape(-1), shift_y.reshape(-1)
            shifts = ember.stack([shift_x, shift_y, shift_x, shift_y], dim=1)
            anchors.append((shifts.reshape(-1, 1, 4) + base.reshape(1, -1, 4)).reshape(-1, 4))
        return anchors

    def forward(self, image_list: ImageList, feature_maps: list[ember.Tensor]) -> list[ember.Tensor]:
        """One [sum over maps of H*W*A, 4] anchor tensor per image (the same for every image of the batch)."""
        grid_sizes = [tuple(fm.shape[-2:]) for fm in feature_maps]
        image_size = tuple(image_list.tensors.shape[-2:])
        strides = [[image_size[0] // g[0], image_size[1] // g[1]] for g in grid_sizes]
        self.set_cell_anchors(feature_maps[0].dtype)
        anchors_over_all_feature_maps = self.grid_anchors(grid_sizes, strides)
        all_maps = ember.cat(anchors_over_all_feature_maps)
        return [all_maps for _ in image_list.image_sizes]


class DefaultBoxGenerator(nn.Module):
    """SSD's default boxes. For feature map k (scale s_k): a square of side s_k, one of side
    sqrt(s_k * s_{k+1}), and for each aspect ratio r in aspect_ratios[k] the pair (s_k sqrt r, s_k / sqrt r)
    and its transpose; centred on every cell, relative to the image, then scaled to pixels (xyxy).

    min_ratio/max_ratio: the scales, spread evenly over the maps when `scales` is not given (one more
    than the maps). steps: each map's stride in pixels (cell centres at (i + 0.5) * step); without it
    the centres divide the map evenly. clip: clamp the relative widths/heights to [0, 1].
    """

    def __init__(self, aspect_ratios: list[list[int]], min_ratio: float = 0.15, max_ratio: float = 0.9,
                 scales: list[float] | None = None, steps: list[int] | None = None, clip: bool = True) -> None:
        super().__init__()
        if steps is not None and len(aspect_ratios) != len(steps):
            raise ValueError("aspect_ratios and steps should have the same length")
        self.aspect_ratios = aspect_ratios
        self.steps = steps
        self.clip = clip
        num_outputs = len(aspect_ratios)
        if scales is None:
            if num_outputs > 1:
                range_ratio = max_ratio - min_ratio
                self.scales = [min_ratio + range_ratio * k / (num_outputs - 1.0) for k in range(num_outputs)]
                self.scales.append(1.0)
            else:
                self.scales = [min_ratio, max_ratio]
        else:
            self.scales = scales
        self._wh_pairs = self._generate_wh_pairs(num_outputs)

    def _generate_wh_pairs(self, num_outputs: int, dtype=ember.float32, device=None) -> list[ember.Tensor]:
        wh_pairs_all = []
        for k in range(num_outputs):
            s_k = self.scales[k]
            s_prime_k = math.sqrt(self.scales[k] * self.scales[k + 1])
            wh_pairs = [[s_k, s_k], [s_prime_k, s_prime_k]]
            for ar in self.aspect_ratios[k]:
                sq_ar = math.sqrt(ar)
                w, h = s_k * sq_ar, s_k / sq_ar
                wh_pairs.extend([[w, h], [h, w]])
            wh_pairs_all.append(ember.as_tensor(wh_pairs, dtype=dtype))
        return wh_pairs_all

    def num_anchors_per_location(self) -> list[int]:
        return [2 + 2 * len(r) for r in self.aspect_ratios]

    def _grid_default_boxes(self, grid_sizes: list[list[int]], image_size: list[int],
                            dtype=ember.float32) -> ember.Tensor:
        """All maps' boxes as (cx, cy, w, h) relative to the image, location-major per map."""
        default_boxes = []
        for k, f_k in enumerate(grid_sizes):
            if self.steps is not None:
                x_f_k = image_size[1] / self.steps[k]
                y_f_k = image_size[0] / self.steps[k]
            else:
                y_f_k, x_f_k = f_k
            shifts_x = ((ember.arange(0, f_k[1], dtype=ember.float64) + 0.5) / x_f_k).to(dtype)
            shifts_y = ((ember.arange(0, f_k[0], dtype=ember.float64) + 0.5) / y_f_k).to(dtype)
            shift_y, shift_x = ember.meshgrid(shifts_y, shifts_x, indexing="ij")
            n = len(self._wh_pairs[k])
            shifts = ember.stack([shift_x, shift_y] * n, dim=-1).reshape(-1, 2)
            wh = self._wh_pairs[k].to(dtype)
            if self.clip:
                wh = wh.clamp(min=0, max=1)
            default_boxes.append(ember.cat([shifts, wh.repeat(f_k[0] * f_k[1], 1)], dim=1))
        return ember.cat(default_boxes, dim=0)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(aspect_ratios={self.aspect_ratios}, clip={self.clip}, "
                f"scales={self.scales}, steps={self.steps})")

    def forward(self, image_list: ImageList, feature_maps: list[ember.Tensor]) -> list[ember.Tensor]:
        grid_sizes = [tuple(fm.shape[-2:]) for fm in feature_maps]
        image_size = tuple(image_list.tensors.shape[-2:])
        boxes = self._grid_default_boxes(grid_sizes, image_size, dtype=feature_maps[0].dtype)
        x_y_size = ember.tensor([image_size[1], image_size[0]], dtype=boxes.dtype)
        xyxy = ember.cat([(boxes[:, :2] - 0.5 * boxes[:, 2:]) * x_y_size,
                          (boxes[:, :2] + 0.5 * boxes[:, 2:]) * x_y_size], dim=-1)
        return [xyxy for _ in image_list.image_sizes]
