"""RoIPool (Fast R-CNN, torchvision.ops.roi_pool): max pooling of boxes rounded to the feature grid,
with native forward and backward kernels (embervision._C)."""

from __future__ import annotations

from ember import nn
from ember.autograd.function import Function, once_differentiable

from ._utils import from_numpy, native, num_threads, positive_pair, rois_for, to_numpy


class _RoIPool(Function):
    @staticmethod
    def forward(ctx, input, rois, output_size, spatial_scale):
        out, argmax = native().roi_pool_forward(to_numpy(input), to_numpy(rois), float(spatial_scale),
                                                *output_size, num_threads())
        argmax = from_numpy(argmax)
        ctx.save_for_backward(rois, argmax)
        ctx.input_shape = tuple(input.shape)
        return from_numpy(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        rois, argmax = ctx.saved_tensors
        grad_input = native().roi_pool_backward(to_numpy(grad), to_numpy(argmax), to_numpy(rois), *ctx.input_shape,
                                                num_threads())
        return from_numpy(grad_input), None, None, None


def roi_pool(input, boxes, output_size, spatial_scale: float = 1.0):
    """RoIPool of ``boxes`` on ``input`` ``[N, C, H, W]`` (float32/float64, CPU).

    ``boxes`` is a ``Tensor[K, 5]`` of ``(batch index, x1, y1, x2, y2)`` or a list of ``Tensor[L, 4]``.
    Each box, scaled by ``spatial_scale`` and rounded (halves away from zero) to whole pixels including
    its end pixel, is split into ``output_size`` bins; each bin is the maximum of its cells (0 when it
    is empty). Returns ``[K, C, oh, ow]``; the gradient goes to each bin's maximum.
    """
    rois = rois_for("roi_pool", input, boxes)
    output_size = positive_pair("roi_pool", "output_size", output_size)
    return _RoIPool.apply(input, rois, output_size, spatial_scale)


class RoIPool(nn.Module):
    """Module form of :func:`roi_pool`."""

    def __init__(self, output_size, spatial_scale: float):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale

    def forward(self, input, rois):
        return roi_pool(input, rois, self.output_size, self.spatial_scale)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale})"


__all__ = ["RoIPool", "roi_pool"]
