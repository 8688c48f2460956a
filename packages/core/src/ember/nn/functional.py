"""ember.nn.functional (torch.nn.functional): the functions the layers call.

linear, batch_norm, the convolutions, pooling and the losses are written with Ember's registered
ops (matmul, einsum, unfold, mean, var, log_softmax, ...), so they differentiate in every mode and
batch under vmap through those ops' derivatives and batching rules. Fused kernels for them belong
to the neural-network kernels of issue "Core runtime II"; until then these compositions are the
implementation. The activations are the registered ops.
"""

from __future__ import annotations

from .. import _C
from .._autocast_policy import autocast_policy
from .._products import einsum

__all__ = ["linear", "batch_norm", "relu", "gelu", "silu", "sigmoid", "tanh", "softmax", "log_softmax",
           "leaky_relu", "elu", "softplus", "one_hot", "cosine_similarity", "pairwise_distance",
           "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "nll_loss", "cross_entropy",
           "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "poisson_nll_loss",
           "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss", "soft_margin_loss",
           "multilabel_soft_margin_loss", "cosine_embedding_loss", "triplet_margin_loss", "multi_margin_loss",
           "conv1d", "conv2d", "conv3d", "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d",
           "avg_pool3d", "relu6", "hardtanh", "selu", "celu", "mish", "hardswish", "hardsigmoid", "threshold",
           "logsigmoid", "softsign", "tanhshrink", "softmin", "dropout", "dropout1d", "dropout2d", "dropout3d",
           "alpha_dropout", "feature_alpha_dropout", "ctc_loss", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "unfold", "fold", "cdist", "pdist", "bilinear", "glu", "prelu", "rrelu",
           "hardshrink", "softshrink", "gumbel_softmax"]


@autocast_policy("lower_precision_fp")
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
    if training and input.numel() // max(channels, 1) <= 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(input.shape)}")
    if not training and (running_mean is None or running_var is None):
        raise RuntimeError("running_mean and running_var must be defined in evaluation mode")
    # one fused kernel each way; in training it also moves the running statistics (unbiased variance)
    return _C.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def _written_back(input, result, inplace: bool):
    """inplace=True: the result is written into input (as PyTorch's in-place activations)."""
    return input.copy_(result) if inplace else result


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


def relu6(input, inplace=False):
    return _written_back(input, _C.relu6(input), inplace)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    return _written_back(input, _C.hardtanh(input, min_val, max_val), inplace)


def selu(input, inplace=False):
    return _written_back(input, _C.selu(input), inplace)


def celu(input, alpha=1.0, inplace=False):
    return _written_back(input, _C.celu(input, alpha), inplace)


def mish(input, inplace=False):
    return _written_back(input, _C.mish(input), inplace)


def hardswish(input, inplace=False):
    return _written_back(input, _C.hardswish(input), inplace)


def hardsigmoid(input, inplace=False):
    return _written_back(input, _C.hardsigmoid(input), inplace)


def threshold(input, threshold, value, inplace=False):
    return _written_back(input, _C.threshold(input, threshold, value), inplace)


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
    if training:
        slope = _C.empty_like(input).uniform_(lower, upper)
        result = _C.where(input >= 0, input, input * slope)
    else:
        result = leaky_relu(input, (lower + upper) / 2)
    return _written_back(input, result, inplace)


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


# ---- dropout ----------------------------------------------------------------------------------------
# The mask is a Bernoulli(1 - p) draw from ember's generator; kept values are scaled by 1 / (1 - p) so
# the expectation is unchanged. The feature forms drop whole channels (one draw per [N, C]).

def _check_p(p: float) -> None:
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p: float, feature_dims: int | None):
    """0/1 mask in input's dtype; feature_dims = number of spatial dims for the channel forms.
    Drawn as PyTorch draws its noise (an empty tensor's bernoulli_(1 - p)), so a seeded script
    drops the same units as under PyTorch."""
    if feature_dims is None:
        shape = list(input.shape)
    else:
        batched = input.dim() == feature_dims + 2
        if input.dim() not in (feature_dims + 1, feature_dims + 2):
            raise RuntimeError(f"dropout{feature_dims}d: Expected {feature_dims + 1}D or {feature_dims + 2}D input, "
                               f"but received a {input.dim()}D input")
        shape = list(input.shape[:2 if batched else 1]) + [1] * feature_dims
    return _C.zeros(shape, dtype=input.dtype).bernoulli_(1.0 - p)


def _dropout(input, p, training, inplace, feature_dims):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _written_back(input, input * 0.0, inplace)
    # input * (mask / (1 - p)), rounded as PyTorch rounds it (the mask is scaled first)
    return _written_back(input, input * (_keep_mask(input, p, feature_dims) / (1.0 - p)), inplace)


def dropout(input, p=0.5, training=True, inplace=False):
    return _dropout(input, p, training, inplace, None)


def dropout1d(input, p=0.5, training=True, inplace=False):
    return _dropout(input, p, training, inplace, 1)


def dropout2d(input, p=0.5, training=True, inplace=False):
    return _dropout(input, p, training, inplace, 2)


def dropout3d(input, p=0.5, training=True, inplace=False):
    return _dropout(input, p, training, inplace, 3)


# SELU's saturation value -scale * alpha: dropped units are set to it, then an affine map restores
# zero mean and unit variance (Klambauer et al., 2017), as PyTorch's alpha dropout does.
_SELU_SATURATION = 1.7580993408473766


def _alpha_dropout(input, p, training, inplace, feature_dims):
    _check_p(p)
    if not training or p == 0.0:
        return input
    if p == 1.0:
        return _written_back(input, input * 0.0, inplace)
    a = 1.0 / ((_SELU_SATURATION ** 2 * p + 1) * (1 - p)) ** 0.5
    mask = _keep_mask(input, p, feature_dims)
    b = (mask - 1.0) * (_SELU_SATURATION * a) + _SELU_SATURATION * a * p
    return _written_back(input, input * (mask * a) + b, inplace)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    return _alpha_dropout(input, p, training, inplace, None)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    if input.dim() < 2:
        raise RuntimeError("feature_alpha_dropout: Expected at least 2D input")
    return _alpha_dropout(input, p, training, inplace, input.dim() - 2)


# ---- convolution and pooling ----------------------------------------------------------------------
# Sliding windows come from Tensor.unfold (a view per spatial dim), so these compose registered ops
# and differentiate (and batch under vmap) through them.

def _ntuple(value, n: int, name: str) -> tuple:
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * n
    if len(values) != n:
        raise RuntimeError(f"{name} must be an int or a tuple of {n} ints, but got {value!r}")  # PyTorch's type
    return values


def _pad_spatial(x, pads: list[tuple[int, int]], value: float):
    """Pads the trailing len(pads) dims by (before, after) each with `value`, by concatenation."""
    first = x.dim() - len(pads)
    for i, (before, after) in enumerate(pads):
        dim = first + i
        parts = []
        for size in (before, after):
            shape = list(x.shape)
            shape[dim] = size
            parts.append(_C.full(shape, value, dtype=x.dtype) if size else None)
        pieces = [p for p in (parts[0], x, parts[1]) if p is not None]
        x = _C.cat(pieces, dim) if len(pieces) > 1 else x
    return x


def _windows(x, kernel: tuple, stride: tuple, dilation: tuple):
    """[N, C, *spatial] -> [N, C, *out, *kernel]: every window, its taps spaced by dilation."""
    n = len(kernel)
    for i in range(n):
        x = x.unfold(2 + i, dilation[i] * (kernel[i] - 1) + 1, stride[i])
    if any(d != 1 for d in dilation):
        x = x[(Ellipsis,) + tuple(slice(None, None, d) for d in dilation)]
    return x


def _batched(input, n: int, name: str):
    if input.dim() == n + 1:
        return _C.unsqueeze(input, 0), True
    if input.dim() != n + 2:
        raise RuntimeError(f"Expected {n + 1}D (unbatched) or {n + 2}D (batched) input to {name}, but got input of "
                           f"size: {list(input.shape)}")
    return input, False


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


def one_hot(tensor, num_classes=-1):
    """int64 one-hot rows: a new last dim of size num_classes (-1: max + 1)."""
    if tensor.dtype != _C.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if num_classes == -1:
        num_classes = int(tensor.max().item()) + 1 if tensor.numel() else 0
    if tensor.numel() and int(tensor.min().item()) < 0:
        raise RuntimeError("Class values must be non-negative.")
    if tensor.numel() and int(tensor.max().item()) >= num_classes:
        raise RuntimeError("Class values must be smaller than num_classes.")
    classes = _C.arange(0, num_classes, 1, dtype=_C.int64)
    return _C.eq(_C.unsqueeze(tensor, -1), classes).to(_C.int64)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1.x2 / max(|x1| |x2|, eps) along dim, broadcasting."""
    dot = (x1 * x2).sum(dim)
    norms = _C.sqrt((x1 * x1).sum(dim) * (x2 * x2).sum(dim))
    return dot / _C.clamp(norms, eps, None)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dim."""
    diff = _C.abs(x1 - x2 + eps)
    if p == float("inf"):
        return diff.amax(-1, keepdim)
    return (diff ** p).sum(-1, keepdim) ** (1.0 / p)


@autocast_policy("fp32")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows of x1 [*, P, M] and x2 [*, R, M] -> [*, P, R] (batch
    dims broadcast). For p = 2 the matrix-product form |a|^2 + |b|^2 - 2 a.b is used when
    compute_mode asks for it (or, by default, past 25 rows), as PyTorch does."""
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, but got p={p}")
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == modes[0] and (x1.shape[-2] > 25 or x2.shape[-2] > 25)))
    if use_mm:
        square1 = (x1 * x1).sum(-1, True)
        square2 = _C.transpose((x2 * x2).sum(-1, True), -1, -2)
        cross = _C.matmul(x1, _C.transpose(x2, -1, -2))
        return _C.sqrt(_C.clamp(square1 + square2 - 2 * cross, 1e-30, None))
    diff = _C.unsqueeze(x1, -2) - _C.unsqueeze(x2, -3)  # [*, P, R, M]
    return _C.norm(diff, float(p), [-1], False)


def pdist(input, p=2.0):
    """The p-norm distance of every pair of rows i < j of input [N, M], in row-major order of
    the strict upper triangle: N (N - 1) / 2 values."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows = input.shape[0]
    pairs = _C.triu_indices(rows, rows, 1)
    diff = _C.index_select(input, 0, pairs[0]) - _C.index_select(input, 0, pairs[1])
    return _C.norm(diff, float(p), [-1], False)


def bilinear(input1, input2, weight, bias=None):
    """y_k = x1^T A_k x2 + b_k for weight A [out, in1, in2], over any shared leading dims."""
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D [out, in1, in2], but got {weight.dim()}-D")
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input1 size {input1.shape[-1]} and input2 size {input2.shape[-1]} do not "
                           f"match weight size {list(weight.shape)}")
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} and "
                           f"{list(input2.shape[:-1])}")
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias


# ---- losses ------------------------------------------------------------------------------------

from ._ctc_loss import ctc_loss  # noqa: E402 - its forward recursion is long enough for a file of its own

_REDUCTIONS = ("none", "mean", "sum")


def _reduction(size_average, reduce, reduction: str) -> str:
    """The legacy size_average / reduce flags, as PyTorch maps them."""
    if size_average is not None or reduce is not None:
        size_average = True if size_average is None else size_average
        reduce = True if reduce is None else reduce
        return "none" if not reduce else ("mean" if size_average else "sum")
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return loss.mean()
    return loss.sum() if reduction == "sum" else loss


def _check_same_size(name: str, input, target) -> None:
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"Using a target size ({list(target.shape)}) that is different to the input size "
                         f"({list(input.shape)}) is deprecated. Please ensure they have the same size.")


@autocast_policy("fp32")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce((input - target) ** 2, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce(_C.abs(input - target), _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 d^2 / beta where |d| < beta, |d| - 0.5 beta elsewhere (beta = 0: L1)."""
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    d = _C.abs(input - target)
    loss = d if beta == 0 else _C.where(d < beta, 0.5 * d * d / beta, d - 0.5 * beta)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def huber_loss(input, target, reduction="mean", delta=1.0):
    """0.5 d^2 where |d| <= delta, delta (|d| - 0.5 delta) elsewhere."""
    if delta <= 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    d = _C.abs(input - target)
    return _reduce(_C.where(d <= delta, 0.5 * d * d, delta * (d - 0.5 * delta)), _reduction(None, None, reduction))


@autocast_policy("fp32")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """-input[n, target[n], ...] (times weight[target]) for log-probabilities over dim 1 (or dim 0
    for one unbatched sample); 'mean' divides by the summed weights of the targets not ignored."""
    reduction = _reduction(size_average, reduce, reduction)
    if input.dim() < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.dim()})")
    unbatched = input.dim() == 1
    if unbatched:
        input, target = _C.unsqueeze(input, 0), _C.unsqueeze(target, 0)
    if target.dtype != _C.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype}")
    if input.shape[0] != target.shape[0]:
        raise ValueError(f"Expected input batch_size ({input.shape[0]}) to match target batch_size "
                         f"({target.shape[0]}).")
    if input.dim() > 2 and tuple(target.shape[1:]) != tuple(input.shape[2:]):
        raise RuntimeError(f"size mismatch (got input: {list(input.shape)}, target: {list(target.shape)})")
    classes = input.shape[1]
    keep = _C.ne(target, ignore_index)
    safe = _C.where(keep, target, _C.zeros_like(target))
    if target.numel():
        lo, hi = int(safe.min().item()), int(safe.max().item())
        if lo < 0 or hi >= classes:
            raise IndexError(f"Target {hi if hi >= classes else lo} is out of bounds.")
    picked = _C.squeeze(_C.gather(input, 1, _C.unsqueeze(safe, 1)), [1])
    w = _C.ones_like(picked) if weight is None else _C.reshape(_C.index_select(weight, 0, _C.reshape(safe, [-1])),
                                                                list(safe.shape))
    w = w * keep.to(w.dtype)
    loss = -picked * w
    if unbatched and reduction == "none":
        return _C.squeeze(loss, [0])
    if reduction == "mean":
        return loss.sum() / w.sum()
    return loss.sum() if reduction == "sum" else loss


@autocast_policy("fp32")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over the class dim (1, or 0 unbatched) and nll_loss for class indices; for class
    probabilities (a floating target of input's shape), -sum(target * log_softmax). label_smoothing
    mixes the target with the uniform distribution, as PyTorch does."""
    reduction = _reduction(size_average, reduce, reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}")
    class_dim = 0 if input.dim() == 1 else 1
    logp = _C.log_softmax(input, class_dim, None)
    classes = input.shape[class_dim]
    wshape = [1] * input.dim()
    wshape[class_dim] = classes
    if target.dtype.is_floating_point:  # class probabilities
        _check_same_size("cross_entropy", input, target)
        if label_smoothing > 0:
            target = target * (1 - label_smoothing) + label_smoothing / classes
        per_class = logp * target if weight is None else logp * target * _C.reshape(weight, wshape)
        loss = -per_class.sum(class_dim)
        if reduction == "mean":
            return loss.sum() / (input.numel() // classes if input.numel() else 1)
        return _reduce(loss, reduction)
    nll = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing == 0:
        return nll
    # the smoothing term: -sum over classes of (weight *) logp, over the targets not ignored
    keep = _C.ne(target, ignore_index)
    terms = logp if weight is None else logp * _C.reshape(weight, wshape)
    smooth = -terms.sum(class_dim) * keep.to(logp.dtype)
    if reduction == "mean":
        if weight is None:
            denominator = keep.to(logp.dtype).sum()
        else:
            safe = _C.where(keep, target, _C.zeros_like(target))
            denominator = (_C.reshape(_C.index_select(weight, 0, _C.reshape(safe, [-1])), list(safe.shape))
                           * keep.to(logp.dtype)).sum()
        smooth = smooth.sum() / denominator
    elif reduction == "sum":
        smooth = smooth.sum()
    return (1 - label_smoothing) * nll + label_smoothing / classes * smooth


@autocast_policy("fp32")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(target log(input) + (1 - target) log(1 - input)), the logs clamped at -100 as PyTorch."""
    _check_same_size("binary_cross_entropy", input, target)
    if input.numel() and (float(input.min().item()) < 0 or float(input.max().item()) > 1):
        raise RuntimeError("all elements of input should be between 0 and 1")
    log_p = _C.clamp(_C.log(input), -100.0, None)
    log_q = _C.clamp(_C.log(1 - input), -100.0, None)
    loss = -(target * log_p + (1 - target) * log_q)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """binary_cross_entropy of sigmoid(input), computed stably: (1 - t) x + (1 + (pw - 1) t) softplus(-x)."""
    _check_same_size("binary_cross_entropy_with_logits", input, target)
    softplus_neg = _C.softplus(-input, 1.0, 20.0)
    if pos_weight is None:
        loss = (1 - target) * input + softplus_neg
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * softplus_neg
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """target (log target - input) pointwise (input: log-probabilities); 'batchmean' divides the
    sum by the batch size."""
    loss = _C.exp(target) * (target - input) if log_target else _xlogy(target) - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.dim() else 1)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def _xlogy(t):
    """t log t with 0 log 0 = 0."""
    return _C.where(t > 0, t * _C.log(_C.where(t > 0, t, _C.ones_like(t))), _C.zeros_like(t))


@autocast_policy("fp32")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8, reduce=None,
                     reduction="mean"):
    loss = _C.exp(input) - target * input if log_input else input - target * _C.log(input + eps)
    if full:  # Stirling's term for target > 1
        stirling = target * _C.log(_C.where(target > 1, target, _C.ones_like(target))) - target \
            + 0.5 * _C.log(2 * 3.141592653589793 * _C.where(target > 1, target, _C.ones_like(target)))
        loss = loss + _C.where(target > 1, stirling, _C.zeros_like(stirling))
    return _reduce(loss, _reduction(size_average, reduce, reduction))


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 (log max(var, eps) + (input - target)^2 / max(var, eps)) (+ 0.5 log 2 pi when full)."""
    if var.dim() == input.dim() - 1 and tuple(var.shape) == tuple(input.shape[:-1]):
        var = _C.unsqueeze(var, -1)
    if var.numel() and float(var.min().item()) < 0:
        raise ValueError("var has negative entry/entries")
    var = _C.clamp(var, eps, None) if eps else var
    loss = 0.5 * (_C.log(var) + (input - target) ** 2 / var)
    if full:
        loss = loss + 0.5 * 1.8378770664093453  # log(2 pi)
    return _reduce(loss, _reduction(None, None, reduction))


@autocast_policy("fp32")
def margin_ranking_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    return _reduce(_C.relu(-target * (input1 - input2) + margin), _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None, reduction="mean"):
    loss = _C.where(target == 1, input, _C.zeros_like(input)) + \
        _C.where(target == -1, _C.relu(margin - input), _C.zeros_like(input))
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    return _reduce(_C.softplus(-target * input, 1.0, 20.0), _reduction(size_average, reduce, reduction))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    loss = -(target * _C.logsigmoid(input) + (1 - target) * _C.logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    loss = loss.mean(input.dim() - 1)
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def cosine_embedding_loss(input1, input2, target, margin=0.0, size_average=None, reduce=None, reduction="mean"):
    cos = cosine_similarity(input1, input2, dim=-1, eps=1e-12)
    loss = _C.where(target == 1, 1 - cos, _C.relu(cos - margin))
    return _reduce(loss, _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False, size_average=None,
                        reduce=None, reduction="mean"):
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = _C.minimum(d_neg, pairwise_distance(positive, negative, p, eps))
    return _reduce(_C.relu(d_pos - d_neg + margin), _reduction(size_average, reduce, reduction))


@autocast_policy("fp32")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction="mean"):
    """sum over classes i != y of max(0, margin - x[y] + x[i])^p (times weight[y]) / classes."""
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    x = input if input.dim() == 2 else _C.unsqueeze(input, 0)
    y = target if target.dim() == 1 else _C.unsqueeze(target, 0)
    picked = _C.gather(x, 1, _C.unsqueeze(y, 1))
    margins = _C.relu(margin - picked + x) ** p
    others = _C.ne(_C.unsqueeze(y, 1), _C.arange(0, x.shape[1], 1, dtype=_C.int64)).to(x.dtype)
    loss = (margins * others)
    if weight is not None:
        loss = loss * _C.unsqueeze(_C.index_select(weight, 0, y), 1)
    loss = loss.sum(1) / x.shape[1]
    if input.dim() == 1:
        loss = _C.squeeze(loss, [0])
    return _reduce(loss, _reduction(size_average, reduce, reduction))


# Families long enough for files of their own; each lists its functions in __all__.
from . import _attention, _embedding, _functional_more, _normalization, _padding, _pooling, _resampling  # noqa: E402
from ._attention import *  # noqa: E402,F403
from ._embedding import *  # noqa: E402,F403
from ._functional_more import *  # noqa: E402,F403
from ._normalization import *  # noqa: E402,F403
from ._padding import *  # noqa: E402,F403
from ._pooling import *  # noqa: E402,F403
from ._resampling import *  # noqa: E402,F403

__all__ += [*_normalization.__all__, *_attention.__all__, *_padding.__all__, *_pooling.__all__,
            *_embedding.__all__, *_resampling.__all__, *_functional_more.__all__]
