"""Position-sensitive RoIPool (R-FCN, torchvision.ops.ps_roi_pool), with native forward and backward
kernels (embervision._C)."""

from __future__ import annotations

from ember import nn
from ember.autograd.function import Function, once_differentiable

from ._utils import from_numpy, native, num_threads, positive_pair, rois_for, to_numpy


class _PSRoIPool(Function):
    @staticmethod
    def forward(ctx, input, rois, output_size, spatial_scale):
        ctx.save_for_backward(rois)
        ctx.args = (tuple(input.shape), output_size, float(spatial_scale))
        out = native().ps_roi_pool_forward(to_numpy(input), to_numpy(rois), float(spatial_scale), *output_size,
                                           num_threads())
        return from_numpy(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (rois,) = ctx.saved_tensors
        shape, (ph, pw), scale = ctx.args
        grad_input = native().ps_roi_pool_backward(to_numpy(grad), to_numpy(rois), *shape, scale, ph, pw,
                                                   num_threads())
        return from_numpy(grad_input), None, None, None


def ps_roi_pool(input, boxes, output_size, spatial_scale: float = 1.0):
    """Position-sensitive RoIPool of ``boxes`` on ``input`` ``[N, C, H, W]`` (float32/float64, CPU).

    ``C`` must be a multiple of ``oh * ow``; output channel ``c``'s bin ``(i, j)`` is the mean of input
    channel ``(c * oh + i) * ow + j`` over the bin's cells of the box rounded to whole pixels (0 for an
    empty bin). Returns ``[K, C / (oh * ow), oh, ow]``; differentiable with respect to ``input``.
    """
    rois = rois_for("ps_roi_pool", input, boxes)
    output_size = positive_pair("ps_roi_pool", "output_size", output_size)
    return _PSRoIPool.apply(input, rois, output_size, spatial_scale)


class PSRoIPool(nn.Module):
    """Module form of :func:`ps_roi_pool`."""

    def __init__(self, output_size, spatial_scale: float):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input, rois):
        return ps_roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale})"


__all__ = ["PSRoIPool", "ps_roi_pool"]
