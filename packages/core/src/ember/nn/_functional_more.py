"""nn.functional names PyTorch has beside the main families (torch.nn.functional): the in-place
activations (relu_, elu_, ...), the *_with_indices pooling forms, multilabel_margin_loss and
triplet_margin_with_distance_loss. All are composed from the other families' functions."""

from __future__ import annotations

from .. import _C
from .._autocast_policy import autocast_policy
from .._inplace import _graph_source, _write_inplace
from ._activation import celu, elu, hardtanh, leaky_relu, relu, rrelu, selu
from ._activation import threshold as _threshold  # threshold_'s argument has the name
from ._conv import conv_tbc
from ._distance import pairwise_distance
from ._loss import _reduce, _reduction
from ._pooling import (
    adaptive_max_pool1d,
    adaptive_max_pool2d,
    adaptive_max_pool3d,
    max_pool1d,
    max_pool2d,
    max_pool3d,
)
from ._resampling import channel_shuffle

__all__ = ["relu_", "elu_", "celu_", "selu_", "hardtanh_", "leaky_relu_", "threshold_", "rrelu_",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d_with_indices",
           "multilabel_margin_loss", "triplet_margin_with_distance_loss", "native_channel_shuffle", "conv_tbc",
           "GRID_SAMPLE_INTERPOLATION_MODES", "GRID_SAMPLE_PADDING_MODES", "assert_int_or_pair"]

# grid_sample's mode names and the integers ATen's grid_sampler takes for them.
GRID_SAMPLE_INTERPOLATION_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
GRID_SAMPLE_PADDING_MODES = {"zeros": 0, "border": 1, "reflection": 2}


def native_channel_shuffle(input, groups):
    """channel_shuffle under ATen's other name (torch.nn.functional.native_channel_shuffle)."""
    return channel_shuffle(input, groups)


# The activation computed out of place and written into input (autograd records the copy; the
# graph reads a clone of input, so nothing it saved is overwritten).
def relu_(input):
    return _write_inplace(input, relu(_graph_source(input)), "relu_")


def elu_(input, alpha=1.0):
    return _write_inplace(input, elu(_graph_source(input), alpha), "elu_")


def celu_(input, alpha=1.0):
    return _write_inplace(input, celu(_graph_source(input), alpha), "celu_")


def selu_(input):
    return _write_inplace(input, selu(_graph_source(input)), "selu_")


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return _write_inplace(input, hardtanh(_graph_source(input), min_val, max_val), "hardtanh_")


def leaky_relu_(input, negative_slope=0.01):
    return _write_inplace(input, leaky_relu(_graph_source(input), negative_slope), "leaky_relu_")


def threshold_(input, threshold, value):
    return _write_inplace(input, _threshold(_graph_source(input), threshold, value), "threshold_")


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    return _write_inplace(input, rrelu(_graph_source(input), lower, upper, training), "rrelu_")


# The *_with_indices forms return (output, indices) whatever return_indices says, as PyTorch's.
def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                            return_indices=False):
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices=True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool1d(input, output_size, return_indices=True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool2d(input, output_size, return_indices=True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    return adaptive_max_pool3d(input, output_size, return_indices=True)


@autocast_policy("fp32")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over target classes j and non-target classes i of max(0, 1 - (x[j] - x[i])), divided by
    the class count. Each row of target lists class indices, ended by the first -1."""
    how = _reduction(size_average, reduce, reduction)
    if input.dim() > 2 or (input.dim() == 2 and input.shape[1] == 0) or (input.dim() == 1 and input.shape[0] == 0):
        raise RuntimeError(f"Expected non-empty vector or matrix with optional 0-dim batch size, but got: "
                           f"{list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of size: {list(input.shape)}")
    if target.dtype != _C.int64:
        raise RuntimeError(f"multilabel_margin_loss: expected target of dtype int64, but got {target.dtype}")
    x = input.reshape([1, -1]) if input.dim() < 2 else input
    y = target.reshape([1, -1]) if target.dim() < 2 else target
    classes = x.shape[1]
    if y.numel() and (_C.amax(y).item() >= classes or _C.amin(y).item() < -1):
        raise RuntimeError(f"multilabel_margin_loss: target values must be in [-1, {classes - 1}]")
    # valid[n, j]: target entry j comes before row n's first -1.
    valid = _C.cumprod(_C.ne(y, -1).to(_C.int64), 1).to(_C.bool)
    y_safe = _C.where(valid, y, _C.zeros_like(y))
    is_target = _C.gt(_C.scatter_add(_C.zeros_like(x), 1, y_safe, valid.to(x.dtype)), 0)
    x_target = _C.gather(x, 1, y_safe)
    margins = _C.relu(1 - _C.unsqueeze(x_target, 2) + _C.unsqueeze(x, 1))
    counted = _C.logical_and(_C.unsqueeze(valid, 2), _C.logical_not(_C.unsqueeze(is_target, 1)))
    loss = _C.div(_C.sum(_C.mul(margins, counted.to(x.dtype)), [1, 2], False), classes)
    if input.dim() < 2:
        loss = loss.reshape([])
    return _reduce(loss, how)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False,
                                      reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with a distance function of the caller's choosing
    (pairwise_distance by default); swap uses min(d(a, n), d(p, n)) as the negative distance."""
    if margin <= 0:
        raise ValueError(f"triplet_margin_with_distance_loss: expected margin to be greater than 0, got {margin} "
                         "instead")
    how = _reduction(None, None, reduction)
    dims = (anchor.dim(), positive.dim(), negative.dim())
    if len(set(dims)) != 1:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the same number of "
                           f"dimensions, but got: anchor {dims[0]}D, positive {dims[1]}D, and negative {dims[2]}D "
                           "inputs")
    distance = distance_function if distance_function is not None else pairwise_distance
    d_pos = distance(anchor, positive)
    d_neg = distance(anchor, negative)
    if swap:
        d_neg = _C.minimum(d_neg, distance(positive, negative))
    return _reduce(_C.clamp(_C.add(_C.sub(d_pos, d_neg), margin), min=0), how)


# ---- fractional max pooling ---------------------------------------------------------------------

__all__ += ["fractional_max_pool2d", "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
            "fractional_max_pool3d_with_indices"]


def _intervals(samples, input_size, output_size, pool_size):
    """The window starts of one spatial dim for each plane, from its uniform sample u in [0, 1):
    floor((i + u) * alpha) - floor(u * alpha), alpha = (input - pool) / (output - 1), the last
    window ending at the input's end (PyTorch's generate_intervals, in the samples' dtype)."""
    from .. import arange

    last = _C.full(list(samples.shape) + [1], input_size - pool_size, dtype=_C.int64)
    if output_size == 1:
        return last
    alpha = (input_size - pool_size) / (output_size - 1)
    steps = arange(output_size - 1, dtype=samples.dtype)
    u = _C.unsqueeze(samples, -1)
    starts = _C.sub(_C.floor(_C.mul(_C.add(steps, u), alpha)), _C.floor(_C.mul(u, alpha))).to(_C.int64)
    return _C.cat([starts, last], -1)


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, random_samples, n):
    from .. import arange, rand

    name = f"fractional_max_pool{n}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    if input.dim() not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got: {list(input.shape)}")
    unbatched = input.dim() == n + 1
    x = _C.unsqueeze(input, 0) if unbatched else input
    spatial = list(x.shape[2:])
    kernel = [kernel_size] * n if isinstance(kernel_size, int) else list(kernel_size)
    if output_size is None:
        ratio = [output_ratio] * n if isinstance(output_ratio, (int, float)) else list(output_ratio)
        output_size = [int(s * r) for s, r in zip(spatial, ratio, strict=True)]
    out_size = [output_size] * n if isinstance(output_size, int) else list(output_size)
    if len(kernel) != n or len(out_size) != n:
        raise RuntimeError(f"{name}(): kernel_size and output_size must have {n} elements")
    for dim_name, size, pool, out in zip(("time", "height", "width")[3 - n:], spatial, kernel, out_size, strict=True):
        if out + pool - 1 > size:
            raise RuntimeError(f"{name}(): pool {dim_name} {pool} too large relative to input {dim_name} {size}")
    batch, channels = x.shape[0], x.shape[1]
    if random_samples is None:
        random_samples = rand(batch, channels, n, dtype=x.dtype)
    elif tuple(random_samples.shape) != (batch, channels, n):
        raise RuntimeError(f"{name}(): Expected _random_samples to have shape {[batch, channels, n]}, but got "
                           f"{list(random_samples.shape)}")
    # PyTorch draws the width's sample first: dims (H, W) use samples (1, 0); (T, H, W) use (0, 1, 2).
    order = [1, 0] if n == 2 else [0, 1, 2]
    # flat[b, c, o_1..o_n, k_1..k_n]: the row-major position in the plane of each window element.
    flat = None
    strides = [1] * n
    for d in range(n - 2, -1, -1):
        strides[d] = strides[d + 1] * spatial[d + 1]
    for d in range(n):
        starts = _intervals(random_samples[:, :, order[d]], spatial[d], out_size[d], kernel[d])
        pos = _C.add(_C.unsqueeze(starts, -1), arange(kernel[d], dtype=_C.int64))  # (B, C, out_d, k_d)
        shape = [batch, channels] + [1] * (2 * n)
        shape[2 + d], shape[2 + n + d] = out_size[d], kernel[d]
        term = _C.mul(pos.reshape(shape), strides[d])
        flat = term if flat is None else _C.add(flat, term)
    full = [batch, channels] + out_size + kernel
    flat = flat.expand(full).reshape([batch, channels, -1])
    plane = x.reshape([batch, channels, -1])
    values = _C.gather(plane, 2, flat).reshape([batch, channels] + out_size + [-1])
    flat = flat.reshape([batch, channels] + out_size + [-1])
    out, which = values.max(-1)
    indices = _C.gather(flat, -1, _C.unsqueeze(which, -1)).squeeze(-1)
    if unbatched:
        out, indices = _C.squeeze(out, [0]), _C.squeeze(indices, [0])
    return out, indices


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    """Max pooling over pseudo-random overlapping windows (Graham, Fractional Max-Pooling): each
    (sample, channel) plane gets its own window starts from a uniform sample."""
    out, indices = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)
    return (out, indices) if return_indices else out


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 2)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None, return_indices=False,
                          _random_samples=None):
    out, indices = _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)
    return (out, indices) if return_indices else out


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices=False, _random_samples=None):
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, _random_samples, 3)


def assert_int_or_pair(arg, arg_name: str, message: str) -> None:
    """PyTorch's argument check for fold/unfold sizes: AssertionError(message.format(arg_name))
    unless `arg` is an int or has two items."""
    if not (isinstance(arg, int) or len(arg) == 2):
        raise AssertionError(message.format(arg_name))
