"""batch_norm, layer_norm, group_norm, instance_norm, rms_norm, local_response_norm and normalize
(torch.nn.functional). layer_norm, rms_norm and group_norm call the fused native ops (one pass
each way); the others compose registered reductions. Variances are biased (correction=0), as
PyTorch's."""

from __future__ import annotations

from .. import _C
from .._info import finfo
from ..autograd.grad_mode import no_grad

__all__ = ["batch_norm", "layer_norm", "group_norm", "instance_norm", "rms_norm", "local_response_norm", "normalize"]


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1,
               eps=1e-5):
    """Normalizes each channel (dim 1) over the batch and the remaining dims. In training the
    batch statistics are used and the running ones (when given) move towards them by `momentum`
    (the running variance takes the unbiased batch variance, as PyTorch); otherwise the running
    statistics are used."""
    if input.dim() < 2:
        raise ValueError(f"Expected 2D or more input (got {input.dim()}D input)")
    channels = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and tuple(t.shape) != (channels,):
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
    if training and input.numel() // max(channels, 1) <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(input.shape)}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    # one fused kernel each way; in training it also moves the running statistics (unbiased variance)
    return _C.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def _trailing_shape(input, normalized_shape, name: str) -> list[int]:
    shape = [normalized_shape] if isinstance(normalized_shape, int) else [int(s) for s in normalized_shape]
    k = len(shape)
    if k == 0 or input.dim() < k or list(input.shape[input.dim() - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape [*, "
                           f"{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}")
    return shape


def _check_affine(t, shape: list[int], name: str) -> None:
    if t is not None and list(t.shape) != shape:
        raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                           f"{list(t.shape)} and normalized_shape = {shape}")


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) over the trailing normalized_shape dims, then * weight + bias
    (one fused kernel each way: native_layer_norm)."""
    shape = _trailing_shape(input, normalized_shape, "layer_norm")
    _check_affine(weight, shape, "weight")
    _check_affine(bias, shape, "bias")
    return _C.native_layer_norm(input, shape, weight, bias, eps)[0]


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """x / sqrt(mean(x^2) + eps) over the trailing dims (eps None: the dtype's machine epsilon)."""
    shape = _trailing_shape(input, normalized_shape, "rms_norm")
    _check_affine(weight, shape, "weight")
    if eps is None:
        eps = finfo(input.dtype).eps
    return _C._fused_rms_norm(input, shape, weight, eps)[0]


def _channel_view(t, input):
    return _C.reshape(t, [1, input.shape[1]] + [1] * (input.dim() - 2))


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Normalizes each sample over groups of num_channels / num_groups channels (and all spatial
    positions), then applies a per-channel affine map."""
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    batch, channels = input.shape[0], input.shape[1]
    if num_groups <= 0 or channels % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.shape[0] != channels):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, "
                               f"but got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    spatial = input.numel() // (batch * channels) if batch * channels else 0
    return _C.native_group_norm(input, weight, bias, batch, channels, spatial, num_groups, eps)[0]


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True,
                  momentum=0.1, eps=1e-5):
    """Normalizes each (sample, channel) over its spatial positions. With use_input_stats the
    running statistics (when given) move toward the batch's mean over samples of the
    per-instance statistics (the variance unbiased, as batch_norm's); otherwise they are used."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher input to instance_norm (got {input.dim()}D input)")
    channels = input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight),
                    ("bias", bias)):
        if t is not None and tuple(t.shape) != (channels,):
            raise RuntimeError(f"{name} should contain {channels} elements not {t.numel()}")
    dims = list(range(2, input.dim()))
    if use_input_stats:
        count = 1
        for d in dims:
            count *= input.shape[d]
        if count <= 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                             f"{list(input.shape)}")
        mean = _C.mean(input, dims, True)
        var = _C.var(input, dims, correction=0, keepdim=True)
        if running_mean is not None or running_var is not None:
            with no_grad():
                if running_mean is not None:
                    batch_mean = _C.mean(_C.reshape(mean, [input.shape[0], channels]), [0], False)
                    running_mean.mul_(1 - momentum).add_(batch_mean.to(running_mean.dtype) * momentum)
                if running_var is not None:
                    unbiased = _C.var(input, dims, correction=1, keepdim=False)
                    batch_var = _C.mean(unbiased, [0], False)
                    running_var.mul_(1 - momentum).add_(batch_var.to(running_var.dtype) * momentum)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("Expected running_mean and running_var to be defined when use_input_stats is false")
        mean, var = _channel_view(running_mean, input), _channel_view(running_var, input)
    out = (input - mean) * _C.rsqrt(var + eps)
    if weight is not None:
        out = out * _channel_view(weight, input)
    return out if bias is None else out + _channel_view(bias, input)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """x / (k + alpha / size * sum of x^2 over `size` neighbouring channels)^beta, the window
    centred on each channel and zero-padded at the ends (size // 2 before, (size - 1) // 2 after)."""
    if input.dim() < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    squares = input * input
    before, after = size // 2, (size - 1) // 2
    shape = list(squares.shape)
    pieces = []
    if before:
        pieces.append(_C.zeros([shape[0], before] + shape[2:], dtype=input.dtype))
    pieces.append(squares)
    if after:
        pieces.append(_C.zeros([shape[0], after] + shape[2:], dtype=input.dtype))
    padded = _C.cat(pieces, 1) if len(pieces) > 1 else squares
    windows = padded.unfold(1, size, 1)  # [N, C, *, size]
    total = windows.sum(-1)
    return input / (k + alpha / size * total).pow(beta)


def normalize(input, p=2.0, dim=1, eps=1e-12, out=None):
    """input / max(||input||_p along dim, eps)."""
    norm = _C.norm(input, float(p), [dim], True)
    result = input / _C.clamp(norm, eps, None).expand(list(input.shape))
    if out is not None:
        out.copy_(result)
        return out
    return result
