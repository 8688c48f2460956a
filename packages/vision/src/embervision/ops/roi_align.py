"""RoIAlign (Mask R-CNN, torchvision.ops.roi_align): bilinear-sampled average pooling of boxes, with
native forward and backward kernels (embervision._C)."""

from __future__ import annotations

from ember import nn
from ember.autograd.function import Function, once_differentiable

from ._utils import from_numpy, native, num_threads, positive_pair, rois_for, to_numpy


class _RoIAlign(Function):
    @staticmethod
    def forward(ctx, input, rois, output_size, spatial_scale, sampling_ratio, aligned):
        ctx.save_for_backward(rois)
        ctx.args = (tuple(input.shape), output_size, float(spatial_scale), int(sampling_ratio), bool(aligned))
        out = native().roi_align_forward(to_numpy(input), to_numpy(rois), float(spatial_scale), *output_size,
                                         int(sampling_ratio), bool(aligned), num_threads())
        return from_numpy(out)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        (rois,) = ctx.saved_tensors
        shape, (ph, pw), scale, sampling_ratio, aligned = ctx.args
        grad_input = native().roi_align_backward(to_numpy(grad), to_numpy(rois), *shape, scale, ph, pw,
                                                 sampling_ratio, aligned, num_threads())
        return from_numpy(grad_input), None, None, None, None, None


def roi_align(input, boxes, output_size, spatial_scale: float = 1.0, sampling_ratio: int = -1,
              aligned: bool = False):
    """RoIAlign pooling of ``boxes`` on ``input`` ``[N, C, H, W]`` (float32/float64, CPU).

    ``boxes`` is a ``Tensor[K, 5]`` of ``(batch index, x1, y1, x2, y2)`` or a list of ``Tensor[L, 4]``,
    one per image, in input-image coordinates that ``spatial_scale`` maps onto the feature map.
    Each of the ``output_size`` bins averages ``sampling_ratio`` x ``sampling_ratio`` bilinear samples
    (``ceil(box side / output side)`` per side when ``sampling_ratio <= 0``). ``aligned=True`` shifts the
    boxes by half a pixel so that sample points fall on pixel centres. Returns ``[K, C, oh, ow]``;
    differentiable with respect to ``input``.
    """
    rois = rois_for("roi_align", input, boxes)
    output_size = positive_pair("roi_align", "output_size", output_size)
    return _RoIAlign.apply(input, rois, output_size, spatial_scale, sampling_ratio, aligned)


class RoIAlign(nn.Module):
    """Module form of :func:`roi_align`."""

    def __init__(self, output_size, spatial_scale: float, sampling_ratio: int, aligned: bool = False):
        super().__init__()
        self.output_size = output_size
        self.spatial_scale = spatial_scale
        self.sampling_ratio = sampling_ratio
        self.aligned = aligned

    def forward(self, input, rois):
        return roi_align(input, rois, self.output_size, self.spatial_scale, self.sampling_ratio, self.aligned)

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(output_size={self.output_size}, spatial_scale={self.spatial_scale}, "
                f"sampling_ratio={self.sampling_ratio}, aligned={self.aligned})")


__all__ = ["RoIAlign", "roi_align"]
