"""The convolutions, transposed convolutions, unfold and fold (torch.nn.functional).
Sliding windows come from Tensor.unfold (a view per spatial dim), so these compose registered ops
and differentiate (and batch under vmap) through them."""

from __future__ import annotations

from .. import _C
from ._functional_utils import _batched, _ntuple, _pad_spatial, _windows

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "unfold",
           "fold"]


def _conv(input, weight, bias, stride, padding, dilation, groups: int, n: int):
    name = f"conv{n}d"
    x, unbatched = _batched(input, n, name)
    if weight.dim() != n + 2:
        raise RuntimeError(f"{name}: weight must be {n + 2}-D, but got {weight.dim()}-D")
    stride, dilation = _ntuple(stride, n, "stride"), _ntuple(dilation, n, "dilation")
    kernel = tuple(weight.shape[2:])
    out_channels, per_group = weight.shape[0], weight.shape[1]
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if x.shape[1] != per_group * groups or out_channels % groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, expected input"
                           f"{list(x.shape)} to have {per_group * groups} channels, but got {x.shape[1]} channels "
                           f"instead")
    if isinstance(padding, str):
        if padding == "valid":
            pads = [(0, 0)] * n
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
            pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for d, k in zip(dilation, kernel, strict=True)]
        else:
            raise ValueError(f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}")
    else:
        pads = [(p, p) for p in _ntuple(padding, n, "padding")]
    if any(lo != hi for lo, hi in pads):  # 'same' with an even kernel: the extra padding goes right
        x = _pad_spatial(x, [(0, hi - lo) for lo, hi in pads], 0.0)
    # one native op (Note [convolution kernels]), differentiable and batched over images
    out = _C.convolution(x, weight, bias, list(stride), [lo for lo, _ in pads], list(dilation), False, [0] * n, groups)
    return _C.squeeze(out, [0]) if unbatched else out


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3)


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups: int, dilation, n: int):
    """The adjoint of the strided convolution (aten::convolution with transposed=True)."""
    name = f"conv_transpose{n}d"
    x, unbatched = _batched(input, n, name)
    if weight.dim() != n + 2:
        raise RuntimeError(f"{name}: weight must be {n + 2}-D, but got {weight.dim()}-D")
    stride, dilation = _ntuple(stride, n, "stride"), _ntuple(dilation, n, "dilation")
    padding, output_padding = _ntuple(padding, n, "padding"), _ntuple(output_padding, n, "output_padding")
    in_channels = weight.shape[0]
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if x.shape[1] != in_channels or in_channels % groups:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected input{list(x.shape)} "
                           f"to have {in_channels} channels, but got {x.shape[1]} channels instead")
    for op, s, d in zip(output_padding, stride, dilation, strict=True):
        if op >= max(s, d) or op < 0:
            raise RuntimeError(f"output padding must be smaller than either stride or dilation, but got "
                               f"output_padding={output_padding}, stride={stride}, dilation={dilation}")
    out = _C.convolution(x, weight, bias, list(stride), list(padding), list(dilation), True, list(output_padding),
                         groups)
    return _C.squeeze(out, [0]) if unbatched else out


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3)


def _fold_geometry(name, kernel_size, dilation, padding, stride):
    geometry = tuple(_ntuple(v, 2, f"{name} {label}") for v, label in
                     ((kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    kernel, dilation, padding, stride = geometry
    # PyTorch's im2col/col2im shape checks, with its messages
    if min(kernel) <= 0:
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: {kernel[0]} "
                           f"kernel_width: {kernel[1]}")
    if min(stride) <= 0:
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: {stride[0]} "
                           f"stride_width: {stride[1]}")
    if min(dilation) <= 0:
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: {dilation[0]} "
                           f"dilation_width: {dilation[1]}")
    if min(padding) < 0:
        raise RuntimeError(f"padding should be non-negative, but got pad_height: {padding[0]} "
                           f"pad_width: {padding[1]}")
    return geometry


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """im2col: [N, C, H, W] -> [N, C * kh * kw, L], one column per sliding block (L blocks)."""
    if input.dim() not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    x, unbatched = _batched(input, 2, "unfold")
    kernel, dilation, padding, stride = _fold_geometry("unfold", kernel_size, dilation, padding, stride)
    x = _pad_spatial(x, [(p, p) for p in padding], 0.0)
    blocks = [(size - d * (k - 1) - 1) // st + 1
              for size, k, d, st in zip(x.shape[2:], kernel, dilation, stride, strict=True)]
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {tuple(input.shape[-2:])}, kernel_size={kernel}, "
                           f"dilation={dilation}, padding={padding}, calculated shape of the array of sliding "
                           f"blocks as {tuple(blocks)}, but its components must be at least one.")
    win = _windows(x, kernel, stride, dilation)  # [N, C, oh, ow, kh, kw]
    blocks = win.shape[2] * win.shape[3]
    cols = _C.reshape(_C.permute(win, [0, 1, 4, 5, 2, 3]), [x.shape[0], x.shape[1] * kernel[0] * kernel[1], blocks])
    return _C.squeeze(cols, [0]) if unbatched else cols


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """col2im, the adjoint of unfold: sums each column's entries back into their block of an
    [N, C, *output_size] image (overlapping blocks add up)."""
    if input.dim() not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input Tensors are supported "
                                  f"(got {input.dim()}D)")
    cols = _C.unsqueeze(input, 0) if input.dim() == 2 else input
    output_size = _ntuple(output_size, 2, "fold output_size")
    kernel, dilation, padding, stride = _fold_geometry("fold", kernel_size, dilation, padding, stride)
    taps = kernel[0] * kernel[1]
    padded = [o + 2 * p for o, p in zip(output_size, padding, strict=True)]
    blocks = [(s - d * (k - 1) - 1) // st + 1 for s, k, d, st in zip(padded, kernel, dilation, stride, strict=True)]
    if cols.shape[1] % taps:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={cols.shape[1]} and kernel_size={kernel}")
    if min(blocks) <= 0 or cols.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(f"Given output_size={output_size}, kernel_size={kernel}, dilation={dilation}, "
                           f"padding={padding}, stride={stride}, expected size of input's dimension 2 to match the "
                           f"calculated number of sliding blocks {max(blocks[0], 0)} * {max(blocks[1], 0)} = "
                           f"{max(blocks[0], 0) * max(blocks[1], 0)}, but got input.size(2)={cols.shape[2]}.")
    channels = cols.shape[1] // taps
    # target offset in the padded image of every (tap, block) pair: row * width + col
    ki = _C.reshape(_C.arange(0, kernel[0], 1, dtype=_C.int64) * dilation[0], [-1, 1, 1, 1])
    kj = _C.reshape(_C.arange(0, kernel[1], 1, dtype=_C.int64) * dilation[1], [1, -1, 1, 1])
    bi = _C.reshape(_C.arange(0, blocks[0], 1, dtype=_C.int64) * stride[0], [1, 1, -1, 1])
    bj = _C.reshape(_C.arange(0, blocks[1], 1, dtype=_C.int64) * stride[1], [1, 1, 1, -1])
    target = _C.reshape((ki + bi) * padded[1] + (kj + bj), [-1])
    values = _C.reshape(cols, [cols.shape[0], channels, -1])
    image = _C.zeros([cols.shape[0], channels, padded[0] * padded[1]], dtype=cols.dtype)
    image = _C.index_add(image, 2, target, values)
    image = _C.reshape(image, [cols.shape[0], channels] + padded)
    image = image[:, :, padding[0]:padding[0] + output_size[0], padding[1]:padding[1] + output_size[1]]
    return _C.squeeze(image, [0]) if input.dim() == 2 else image


def conv_tbc(input, weight, bias, pad=0):
    """A 1-D convolution over inputs laid out (time, batch, channels) with weight (kernel, in,
    out) (torch.conv_tbc, torch.nn.functional.conv_tbc): the output is (time', batch, out)."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    out = conv1d(input.permute([1, 2, 0]), weight.permute([2, 1, 0]), bias, 1, pad)
    return out.permute([2, 0, 1]).contiguous()
