"""Deformable convolution v1/v2 (torchvision.ops.deform_conv2d, ``DeformConv2d``): a convolution whose
taps sample the input at learned offsets, optionally modulated by a mask. The sampling (deformable
im2col and its gradients) is native (embervision._C); the per-group products are ember matmuls, so
the weight and bias gradients come from ember's autograd."""

from __future__ import annotations

import math

import ember
from ember import nn
from ember.autograd.function import Function, once_differentiable
from ember.nn import init

from ._utils import check_cpu, from_numpy, native, num_threads, pair, to_numpy

_OP = "deform_conv2d"


class _DeformIm2col(Function):
    """columns [B, C * kh * kw, out_h * out_w] of input, offset and mask (Note [deformable im2col])."""

    @staticmethod
    def forward(ctx, input, offset, mask, args):
        ctx.save_for_backward(input, offset, mask)
        ctx.args = args
        m = None if mask is None else to_numpy(mask)
        return from_numpy(native().deform_im2col(to_numpy(input), to_numpy(offset), m, native().DeformArgs(*args),
                                                 num_threads()))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_columns):
        input, offset, mask = ctx.saved_tensors
        C, args = native(), native().DeformArgs(*ctx.args)
        g, off, m = to_numpy(grad_columns), to_numpy(offset), None if mask is None else to_numpy(mask)
        grad_input = grad_offset = grad_mask = None
        if ctx.needs_input_grad[0]:
            grad_input = from_numpy(C.deform_col2im(g, off, m, *input.shape, args, num_threads()))
        if ctx.needs_input_grad[1] or ctx.needs_input_grad[2]:
            go, gm = C.deform_col2im_coord(g, to_numpy(input), off, m, args, num_threads())
            grad_offset = from_numpy(go)
            grad_mask = None if gm is None else from_numpy(gm)
        return grad_input, grad_offset, grad_mask, None


def _check(input, offset, weight, bias, mask, stride, padding, dilation):
    for name, t in (("input", input), ("offset", offset), ("weight", weight)):
        if not isinstance(t, ember.Tensor):
            raise TypeError(f"[{_OP}] expected {name} to be a Tensor, but got {type(t).__name__}")
        if t.dim() != 4:
            raise ValueError(f"[{_OP}] expected {name} to have 4 dimensions, but got shape {tuple(t.shape)}")
    if input.dtype not in (ember.float32, ember.float64):
        raise TypeError(f"[{_OP}] expected input of dtype float32 or float64, but got {input.dtype}")
    for name, t in (("offset", offset), ("weight", weight), ("bias", bias), ("mask", mask)):
        if t is not None and t.dtype != input.dtype:
            raise TypeError(f"[{_OP}] expected {name} of the input's dtype {input.dtype}, but got {t.dtype}")
    check_cpu(_OP, input, offset, weight, bias, mask)
    stride, padding, dilation = pair(_OP, "stride", stride), pair(_OP, "padding", padding), pair(_OP, "dilation", dilation)
    if min(stride) <= 0 or min(dilation) <= 0 or min(padding) < 0:
        raise ValueError(f"[{_OP}] expected positive stride and dilation and non-negative padding, but got "
                         f"stride={stride}, padding={padding}, dilation={dilation}")
    batch, channels, height, width = input.shape
    out_channels, group_channels, kh, kw = weight.shape
    if group_channels == 0 or channels % group_channels != 0:
        raise RuntimeError(f"[{_OP}] expected the input channels ({channels}) to be a multiple of weight.shape[1] "
                           f"({group_channels})")
    groups = channels // group_channels
    if out_channels % groups != 0:
        raise RuntimeError(f"[{_OP}] expected the output channels ({out_channels}) to be a multiple of the weight "
                           f"groups ({groups})")
    if offset.shape[1] == 0 or offset.shape[1] % (2 * kh * kw) != 0:
        raise RuntimeError(f"[{_OP}] expected offset.shape[1] to be a positive multiple of 2 * weight.shape[2] * "
                           f"weight.shape[3] = {2 * kh * kw}, but got {offset.shape[1]}")
    offset_groups = offset.shape[1] // (2 * kh * kw)
    if channels % offset_groups != 0:
        raise RuntimeError(f"[{_OP}] expected the input channels ({channels}) to be a multiple of the offset groups "
                           f"({offset_groups})")
    out_h = (height + 2 * padding[0] - (dilation[0] * (kh - 1) + 1)) // stride[0] + 1
    out_w = (width + 2 * padding[1] - (dilation[1] * (kw - 1) + 1)) // stride[1] + 1
    if out_h <= 0 or out_w <= 0:
        raise RuntimeError(f"[{_OP}] expected the kernel ({kh}x{kw}, dilation {dilation}) to fit the padded input "
                           f"({height}x{width}, padding {padding}), but the output would be {out_h}x{out_w}")
    if tuple(offset.shape) != (batch, offset.shape[1], out_h, out_w):
        raise RuntimeError(f"[{_OP}] expected offset of shape [{batch}, {offset.shape[1]}, {out_h}, {out_w}], but got "
                           f"{tuple(offset.shape)}")
    if mask is not None and tuple(mask.shape) != (batch, offset_groups * kh * kw, out_h, out_w):
        raise RuntimeError(f"[{_OP}] expected mask of shape [{batch}, {offset_groups * kh * kw}, {out_h}, {out_w}], "
                           f"but got {tuple(mask.shape)}")
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(f"[{_OP}] expected bias of shape [{out_channels}], but got {tuple(bias.shape)}")
    return stride, padding, dilation, groups, out_h, out_w


def deform_conv2d(input, offset, weight, bias=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), mask=None):
    """Deformable 2-D convolution (v2 with ``mask``) of ``input`` ``[B, C_in, H, W]``.

    ``offset`` ``[B, 2 * offset_groups * kh * kw, out_h, out_w]`` holds a ``(dy, dx)`` pair per offset
    group and kernel tap; ``weight`` ``[C_out, C_in / groups, kh, kw]``; ``mask`` (optional)
    ``[B, offset_groups * kh * kw, out_h, out_w]`` scales each sample. Samples are bilinear, zero
    outside the input. Differentiable with respect to input, offset, mask, weight and bias.
    """
    stride, padding, dilation, groups, out_h, out_w = _check(input, offset, weight, bias, mask, stride, padding,
                                                             dilation)
    batch, channels = input.shape[:2]
    out_channels, group_channels, kh, kw = weight.shape
    args = (kh, kw, stride[0], stride[1], padding[0], padding[1], dilation[0], dilation[1])
    columns = _DeformIm2col.apply(input, offset, mask, args)
    # [G, C_out/G, C_in/G * kk] @ [B, G, C_in/G * kk, L]: column rows are ordered (channel, tap) like the weight's.
    w = weight.reshape(groups, out_channels // groups, group_channels * kh * kw)
    out = ember.matmul(w, columns.reshape(batch, groups, group_channels * kh * kw, out_h * out_w))
    out = out.reshape(batch, out_channels, out_h, out_w)
    if bias is not None:
        out = out + bias.reshape(1, out_channels, 1, 1)
    return out


class DeformConv2d(nn.Module):
    """Module form of :func:`deform_conv2d`; ``forward(input, offset, mask=None)``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True):
        super().__init__()
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = pair("DeformConv2d", "kernel_size", kernel_size)
        self.stride = pair("DeformConv2d", "stride", stride)
        self.padding = pair("DeformConv2d", "padding", padding)
        self.dilation = pair("DeformConv2d", "dilation", dilation)
        self.groups = groups
        self.weight = nn.Parameter(ember.empty(out_channels, in_channels // groups, *self.kernel_size))
        if bias:
            self.bias = nn.Parameter(ember.empty(out_channels))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * self.weight.shape[2] * self.weight.shape[3]
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input, offset, mask=None):
        return deform_conv2d(input, offset, self.weight, self.bias, stride=self.stride, padding=self.padding,
                             dilation=self.dilation, mask=mask)

    def __repr__(self) -> str:
        s = (f"{self.__class__.__name__}({self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        s += f", padding={self.padding}" if self.padding != (0, 0) else ""
        s += f", dilation={self.dilation}" if self.dilation != (1, 1) else ""
        s += f", groups={self.groups}" if self.groups != 1 else ""
        s += ", bias=False" if self.bias is None else ""
        return s + ")"


__all__ = ["DeformConv2d", "deform_conv2d"]
