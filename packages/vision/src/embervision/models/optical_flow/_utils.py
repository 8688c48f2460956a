"""Helpers of the optical flow models: sampling with pixel coordinates, coordinate grids, flow upsampling."""

from __future__ import annotations

import ember
from ember.nn import functional as F


def grid_sample(img: ember.Tensor, absolute_grid: ember.Tensor, mode: str = "bilinear",
                align_corners: bool | None = None) -> ember.Tensor:
    """F.grid_sample with the grid in pixel coordinates (x in [0, W-1], y in [0, H-1]) instead of [-1, 1]."""
    h, w = img.shape[-2:]
    xgrid, ygrid = absolute_grid.split([1, 1], dim=-1)
    xgrid = 2 * xgrid / (w - 1) - 1
    # A single row (h == 1) keeps y as given, so the function also serves 1-pixel-high inputs.
    if h > 1:
        ygrid = 2 * ygrid / (h - 1) - 1
    return F.grid_sample(img, ember.cat([xgrid, ygrid], dim=-1), mode=mode, align_corners=align_corners)


def make_coords_grid(batch_size: int, h: int, w: int, device: str = "cpu") -> ember.Tensor:
    """[batch_size, 2, h, w] float pixel coordinates: channel 0 is x (column), channel 1 is y (row)."""
    ys, xs = ember.meshgrid(ember.arange(h), ember.arange(w), indexing="ij")
    coords = ember.stack([xs, ys], dim=0).float()
    return coords[None].repeat(batch_size, 1, 1, 1)


def upsample_flow(flow: ember.Tensor, up_mask: ember.Tensor | None = None, factor: int = 8) -> ember.Tensor:
    """Flow at 1/factor resolution → full resolution (values times factor): bilinear without up_mask,
    else each fine pixel is a convex (softmax-weighted) combination of its coarse pixel's 3x3
    neighbourhood, the weights given by up_mask [N, 9 * factor², h, w]."""
    batch_size, num_channels, h, w = flow.shape
    new_h, new_w = h * factor, w * factor
    if up_mask is None:
        return factor * F.interpolate(flow, size=(new_h, new_w), mode="bilinear", align_corners=True)
    up_mask = ember.softmax(up_mask.reshape(batch_size, 1, 9, factor, factor, h, w), dim=2)
    neighbours = F.unfold(factor * flow, kernel_size=3, padding=1).reshape(batch_size, num_channels, 9, 1, 1, h, w)
    upsampled = ember.sum(up_mask * neighbours, dim=2)  # [N, C, factor, factor, h, w]
    return upsampled.permute(0, 1, 4, 2, 5, 3).reshape(batch_size, num_channels, new_h, new_w)
