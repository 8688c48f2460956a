"""Max and average pooling, adaptive average/max pooling, power-average (Lp) pooling and max unpooling
(torch.nn.functional). Adaptive pooling (the native adaptive_avg_pool / adaptive_max_pool ops)
splits a dim of size L into `out` windows [floor(i L / out), ceil((i + 1) L / out)), which may
overlap and differ in length by one.
"""

from __future__ import annotations

import math

from .. import _C
from .._autocast_policy import autocast_policy
from ._activation import relu
from ._functional_utils import _batched, _ntuple

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "adaptive_max_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d",
           "max_unpool2d", "max_unpool3d"]


def _pool_args(kernel_size, stride, padding, dilation, n):
    kernel = _ntuple(kernel_size, n, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else _ntuple(stride, n, "stride")
    return kernel, stride, _ntuple(padding, n, "padding"), _ntuple(dilation, n, "dilation")


def _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, n):
    _batched(input, n, f"max_pool{n}d")  # the rank check, with PyTorch's message
    kernel, stride, padding, dilation = _pool_args(kernel_size, stride, padding, dilation, n)
    out, indices = _C.max_pool_with_indices(input, list(kernel), list(stride), list(padding), list(dilation),
                                            ceil_mode)
    return (out, indices) if return_indices else out


def _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, n):
    _batched(input, n, f"avg_pool{n}d")
    kernel, stride, padding, _ = _pool_args(kernel_size, stride, padding, 1, n)
    return _C.avg_pool(input, list(kernel), list(stride), list(padding), ceil_mode, count_include_pad,
                       divisor_override)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2)


@autocast_policy("fp32")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    return _max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 3)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2)


@autocast_policy("fp32")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    return _avg_pool(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 3)


def _adaptive_sizes(x, output_size, n: int, name: str) -> list[int]:
    sizes = _ntuple(output_size, n, "output_size")
    sizes = [x.shape[2 + i] if s is None else int(s) for i, s in enumerate(sizes)]
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to 0 but received "
                           f"{sizes}")
    for size in x.shape[2:]:
        if size == 0 and any(sizes):
            raise RuntimeError(f"{name}: Expected input to have non-zero size for non-batch dimensions, but input "
                               f"has sizes {list(x.shape)} with dimension {2 + list(x.shape[2:]).index(0)} being "
                               f"empty")
    return sizes


def _adaptive_avg(input, output_size, n: int):
    name = f"adaptive_avg_pool{n}d"
    x, _ = _batched(input, n, name)
    return _C.adaptive_avg_pool(input, _adaptive_sizes(x, output_size, n, name))


def _adaptive_max(input, output_size, return_indices: bool, n: int):
    name = f"adaptive_max_pool{n}d"
    x, _ = _batched(input, n, name)
    out, indices = _C.adaptive_max_pool(input, _adaptive_sizes(x, output_size, n, name))
    return (out, indices) if return_indices else out


def adaptive_avg_pool1d(input, output_size):
    return _adaptive_avg(input, output_size, 1)


def adaptive_avg_pool2d(input, output_size):
    return _adaptive_avg(input, output_size, 2)


@autocast_policy("fp32")
def adaptive_avg_pool3d(input, output_size):
    return _adaptive_avg(input, output_size, 3)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 1)


def adaptive_max_pool2d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 2)


@autocast_policy("fp32")
def adaptive_max_pool3d(input, output_size, return_indices=False):
    return _adaptive_max(input, output_size, return_indices, 3)


def _lp_pool(input, norm_type: float, kernel_size, stride, ceil_mode: bool, n: int):
    """(sum over the window of x^p)^(1/p): the average of x^p times the window size, with the sign
    and relu keeping odd powers of negative sums out of the root, as PyTorch does."""
    kernel = _ntuple(kernel_size, n, "kernel_size")
    if norm_type == 0:  # PyTorch divides by it and raises ZeroDivisionError
        raise ValueError(f"lp_pool{n}d: norm_type must be non-zero, but got {norm_type}")
    pool = (avg_pool1d, avg_pool2d, avg_pool3d)[n - 1]
    mean = pool(input.pow(norm_type), kernel, stride, 0, ceil_mode)
    return (_C.sign(mean) * relu(mean.abs())).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, n: int):
    """Places each value at its index in a zero [N, C, *output] tensor: the partial inverse of
    max_pool with return_indices (the default output size undoes the pooling's shape)."""
    name = f"max_unpool{n}d"
    x, unbatched = _batched(input, n, name)
    if indices.dtype != _C.int64:
        raise RuntimeError(f"{name}: expected 'indices' to be an int64 tensor, but got {indices.dtype}")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"{name}: Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    kernel = _ntuple(kernel_size, n, "kernel_size")
    stride = kernel if stride is None else _ntuple(stride, n, "stride")
    padding = _ntuple(padding, n, "padding")
    if min(kernel) <= 0 or min(stride) <= 0:  # PyTorch 2.13 checks this in max_unpool3d only
        raise RuntimeError(f"{name}: kernel_size and strides should be greater than zero, but got kernel_size: "
                           f"{list(kernel)}, stride: {list(stride)}")
    if min(padding) < 0:
        raise RuntimeError(f"{name}: padding should be non-negative, but got padding: {list(padding)}")
    default = [(size - 1) * s - 2 * p + k for size, k, s, p in zip(x.shape[2:], kernel, stride, padding, strict=True)]
    if output_size is None:
        sizes = default
    else:
        sizes = [int(s) for s in output_size][-n:]
        for size, want, s in zip(sizes, default, stride, strict=True):
            if not want - s < size < want + s:
                raise ValueError(f"invalid output_size {list(output_size)} (dim should be between "
                                 f"{[d - s for d, s in zip(default, stride, strict=True)]} and "
                                 f"{[d + s for d, s in zip(default, stride, strict=True)]})")
    count = math.prod(sizes)
    where = _C.reshape(indices if not unbatched else _C.unsqueeze(indices, 0), [x.shape[0], x.shape[1], -1])
    if where.numel() and (int(where.min()) < 0 or int(where.max()) >= count):
        raise RuntimeError(f"{name}: Found an invalid max index: {int(where.max())} (output volumes are of size "
                           f"{'x'.join(str(s) for s in sizes)})")
    flat = _C.zeros([x.shape[0], x.shape[1], count], dtype=x.dtype)
    out = _C.reshape(_C.scatter(flat, 2, where, _C.reshape(x, [x.shape[0], x.shape[1], -1])),
                     [x.shape[0], x.shape[1]] + sizes)
    return _C.squeeze(out, [0]) if unbatched else out


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


@autocast_policy("fp32")
def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


@autocast_policy("fp32")
def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)
