"""ember.nn.functional (torch.nn.functional): the functions the layers call.

linear and batch_norm are written with Ember's registered ops (matmul, mean, var, ...), so they
differentiate in every mode and batch under vmap through those ops' derivatives and batching
rules. Fused kernels for them belong to the neural-network kernels of issue "Core runtime II";
until then these composites are the implementation. The activations are the registered ops.
"""

from __future__ import annotations

from .. import _C
from .. import autograd as _autograd

__all__ = ["linear", "batch_norm", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
           "leaky_relu", "elu", "softplus", "mse_loss"]


def linear(input, weight, bias=None):
    """y = input @ weight^T + bias, over any leading dims of input (weight: [out, in] or [in])."""
    if weight.dim() not in (1, 2):
        raise RuntimeError(f"linear(): weight must be 1-D or 2-D, but got {weight.dim()}-D")
    out = _C.matmul(input, weight.t() if weight.dim() == 2 else weight)
    return out if bias is None else out + bias


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
    dims = [0] + list(range(2, input.dim()))
    shape = [1, channels] + [1] * (input.dim() - 2)  # per-channel values broadcast over the others
    if training:
        count = input.numel() // channels
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size "
                             f"{list(input.shape)}")
        mean = _C.mean(input, dims, True)
        var = _C.var(input, dims, correction=0, keepdim=True)
        if running_mean is not None or running_var is not None:
            with _autograd.no_grad():
                if running_mean is not None:
                    running_mean.mul_(1 - momentum).add_(mean.detach().reshape([channels]) * momentum)
                if running_var is not None:
                    unbiased = var.detach().reshape([channels]) * (count / (count - 1))
                    running_var.mul_(1 - momentum).add_(unbiased * momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
        mean, var = running_mean.reshape(shape), running_var.reshape(shape)
    out = (input - mean) * _C.rsqrt(var + eps)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _written_back(input, result, inplace: bool):
    """inplace=True: the result is written into input (as PyTorch's in-place activations)."""
    return _C.copy_(input, result) if inplace else result


def relu(input, inplace=False):
    return _written_back(input, _C.relu(input), inplace)


def gelu(input, approximate="none"):
    return _C.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return _written_back(input, _C.silu(input), inplace)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _written_back(input, _C.leaky_relu(input, negative_slope), inplace)


def elu(input, alpha=1.0, inplace=False):
    return _written_back(input, _C.elu(input, alpha), inplace)


def softplus(input, beta=1.0, threshold=20.0):
    return _C.softplus(input, beta, threshold)


def _softmax_dim(ndim: int) -> int:
    return 0 if ndim in (0, 1, 3) else 1  # PyTorch's implicit-dim rule (deprecated there too)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C.softmax(input, _softmax_dim(input.dim()) if dim is None else dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C.log_softmax(input, _softmax_dim(input.dim()) if dim is None else dim, dtype)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    diff = (input - target) ** 2
    if reduction == "mean":
        return diff.mean()
    return diff.sum() if reduction == "sum" else diff
