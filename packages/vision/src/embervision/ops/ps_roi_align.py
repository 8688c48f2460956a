"""Position-sensitive RoIAlign (R-FCN, torchvision.ops.ps_roi_align), with native forward and backward
kernels (embervision._C)."""

from __future__ import annotations

from ember import nn
from ember.autograd.function import Function, once_differentiable

from ._utils import from_numpy, native, num_threads, positive_pair, rois_for, to_numpy


class _PSRoIAlign(Function):
    @staticmethod
    def forward(ctx, input, rois, output_size, spatial_scale, sampling_ratio):
        ctx.save_for_backward(rois)
        ctx.args = (tuple(input.shape), output_size, float(spatial_scale), int(sampling_ratio))
        out = native().ps_roi_align_forward(to_numpy(input), to_numpy(rois), float(spatial_scale), *output_size,
                                            int(sampling_ratio), num_threads())
        return from_numpy(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (rois,) = ctx.saved_tensors
        shape, (ph, pw), scale, sampling_ratio = ctx.args
        grad_input = native().ps_roi_align_backward(to_numpy(grad), to_numpy(rois), *shape, scale, ph, pw,
                                                    sampling_ratio, num_threads())
        return from_numpy(grad_input), None, None, None, None


def ps_roi_align(input, boxes, output_size, spatial_scale: float = 1.0, sampling_ratio: int = -1):
    """Position-sensitive RoIAlign of ``boxes`` on ``input`` ``[N, C, H, W]`` (float32/float64, CPU).

    ``C`` must be a multiple of ``oh * ow``; output channel ``c``'s bin ``(i, j)`` averages bilinear
    samples of input channel ``(c * oh + i) * ow + j`` (boxes shifted by half a pixel, as RoIAlign's
    ``aligned=True``). Returns ``[K, C / (oh * ow), oh, ow]``; differentiable with respect to ``input``.
    """
    rois = rois_for("ps_roi_align", input, boxes)
    output_size = positive_pair("ps_roi_align", "output_size", output_size)
    return _PSRoIAlign.apply(input, rois, output_size, spatial_scale, sampling_ratio)


class PSRoIAlign(nn.Module):
    """Module form of :func:`ps_roi_align`."""

    def __init__(self, output_size, spatial_scale: float, sampling_ratio: int):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio

    def forward(self, input, rois):
        return ps_roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio})")


__all__ = ["PSRoIAlign", "ps_roi_align"]
