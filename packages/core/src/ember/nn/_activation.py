"""The activations, softmax, log_softmax and softmin (torch.nn.functional); most are the
registered ops, with inplace=True writing the result back into input."""

from __future__ import annotations

from .. import _C
from .._autocast_policy import autocast_policy
from ._functional_utils import _written_back

__all__ = ["relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax", "leaky_relu", "elu",
           "softplus", "relu6", "hardtanh", "selu", "celu", "mish", "hardswish", "hardsigmoid", "threshold",
           "logsigmoid", "softsign", "tanhshrink", "softmin", "glu", "prelu", "rrelu", "hardshrink",
           "softshrink", "gumbel_softmax"]


def relu(input, inplace=False):
    return _written_back(input, inplace, _C.relu)


def gelu(input, approximate="none"):
    return _C.gelu(input, approximate=approximate)


def silu(input, inplace=False):
    return _written_back(input, inplace, _C.silu)


def sigmoid(input):
    return _C.sigmoid(input)


def tanh(input):
    return _C.tanh(input)


def leaky_relu(input, negative_slope=0.01, inplace=False):
    return _written_back(input, inplace, _C.leaky_relu, negative_slope)


def elu(input, alpha=1.0, inplace=False):
    return _written_back(input, inplace, _C.elu, alpha)


def softplus(input, beta=1.0, threshold=20.0):
    return _C.softplus(input, beta, threshold)


def relu6(input, inplace=False):
    return _written_back(input, inplace, _C.relu6)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _written_back(input, inplace, _C.hardtanh, min_val, max_val)


def selu(input, inplace=False):
    return _written_back(input, inplace, _C.selu)


def celu(input, alpha=1.0, inplace=False):
    return _written_back(input, inplace, _C.celu, alpha)


def mish(input, inplace=False):
    return _written_back(input, inplace, _C.mish)


def hardswish(input, inplace=False):
    return _written_back(input, inplace, _C.hardswish)


def hardsigmoid(input, inplace=False):
    return _written_back(input, inplace, _C.hardsigmoid)


def threshold(input, threshold, value, inplace=False):
    return _written_back(input, inplace, _C.threshold, threshold, value)


def logsigmoid(input):
    return _C.logsigmoid(input)


def softsign(input):
    return _C.softsign(input)


def tanhshrink(input):
    return _C.tanhshrink(input)


def glu(input, dim=-1):
    """a * sigmoid(b) for the two halves a, b of input along dim."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.dim()} is size "
                           f"{input.shape[dim]}")
    a, b = _C.chunk(input, 2, dim)
    return a * _C.sigmoid(b)


@autocast_policy("lower_precision_fp")
def prelu(input, weight):
    """max(0, x) + weight * min(0, x), weight per channel (dim 1) or a single value."""
    if weight.numel() != 1:
        channels = input.shape[1] if input.dim() >= 2 else input.shape[0] if input.dim() == 1 else 1
        if weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
        if input.dim() >= 2:
            weight = _C.reshape(weight, [1, channels] + [1] * (input.dim() - 2))
    return _C.where(input > 0, input, weight * input)


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Leaky ReLU with a slope drawn uniformly from [lower, upper] per element while training,
    the mean slope (lower + upper) / 2 otherwise."""
    if not training:
        return leaky_relu(input, (lower + upper) / 2, inplace)

    def sampled(x):
        return _C.where(x >= 0, x, x * _C.empty_like(x).uniform_(lower, upper))
    return _written_back(input, inplace, sampled)


def hardshrink(input, lambd=0.5):
    """x where |x| > lambd, else 0."""
    return _C.where(input.abs() > lambd, input, _C.zeros_like(input))


def softshrink(input, lambd=0.5):
    """x - lambd above lambd, x + lambd below -lambd, 0 between."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    return _C.where(input > lambd, input - lambd, _C.where(input < -lambd, input + lambd, _C.zeros_like(input)))


def gumbel_softmax(logits, tau=1.0, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1); hard=True returns one-hot samples whose
    gradient is the soft sample's (the straight-through estimator). eps is unused, as in PyTorch
    (where it is deprecated)."""
    # -log(E) with E ~ Exp(1) = -log(U), U ~ U(0, 1]: 1 - uniform [0, 1) never takes the log of 0
    uniform = 1 - _C.empty_like(logits).uniform_(0.0, 1.0)
    gumbels = -_C.log(-_C.log(uniform))
    soft = _C.softmax((logits + gumbels) / tau, dim)
    if not hard:
        return soft
    index = soft.detach().argmax(dim=dim, keepdim=True)
    one_hot = _C.zeros_like(logits).scatter(dim, index, _C.ones_like(index).to(logits.dtype))
    return one_hot - soft.detach() + soft


def _softmax_dim(ndim: int) -> int:
    return 0 if ndim in (0, 1, 3) else 1  # PyTorch's implicit-dim rule (deprecated there too)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C.softmax(input, _softmax_dim(input.dim()) if dim is None else dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    return _C.log_softmax(input, _softmax_dim(input.dim()) if dim is None else dim, dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    return softmax(-input, dim, _stacklevel, dtype)
