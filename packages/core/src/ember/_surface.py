"""More of PyTorch's public surface, composed in Python from declared ops (issue 18, item 1):
the constants (pi, e, inf, nan, newaxis) and memory formats, the top-level in-place forms of the
unary ops (ember.sin_(x), ...), Tensor in-place forms that had none (logit_, tril_, ...), the
top-level functional forms PyTorch exposes with ATen's signatures (ember.conv2d, ember.layer_norm,
ember.kl_div with an integer reduction, ...), Tensor methods such as addr, put_, index_reduce_,
renorm and sum_to_size, and the legacy linear-algebra functions (inverse, qr, svd, lu, ...).

Everything here calls declared ops or ember.nn.functional, so gradients come from theirs; the
in-place forms go through _composites_py's helpers (PyTorch's in-place casting rules, and a clone
of self as the graph's input when autograd records).
"""

from __future__ import annotations

import builtins
import math

from . import _C
from ._composites_py import _return_type, _tensor_arg, _wrap_dim
from ._inplace import _dtype_name, _graph_source, _write_inplace
from ._memory_format import (
    channels_last,
    channels_last_3d,
    contiguous,  # noqa: F401 - Tensor.contiguous, attached from METHODS by name
    contiguous_format,
    is_contiguous,
    laid_out,
    legacy_contiguous_format,
    memory_format,
    preserve_format,
    resolve,
)
from ._memory_format import check as _check_format  # noqa: F401 - _surface_legacy's resize_ uses it

# ---- constants -------------------------------------------------------------------------------

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None

_clone = _C.Tensor.clone


def clone(input: _C.Tensor, *, memory_format: memory_format = preserve_format) -> _C.Tensor:  # noqa: A002
    """A copy of input (torch.clone), laid out in memory_format (preserve_format: the layout input
    suggests, see ember._memory_format)."""
    _tensor_arg(input, "clone")
    fmt = resolve(input, memory_format, "clone")
    return _clone(input) if fmt._code == 0 else _C.to_memory_format(input, fmt._code, True)


def with_memory_format(factory):
    """A *_like factory that also takes memory_format= (preserve_format: the layout input suggests)
    and device= (the input's own, the CPU)."""
    def like(input: _C.Tensor, *args: object, memory_format: memory_format = preserve_format,  # noqa: A002
             requires_grad: builtins.bool = False, device: object = None, **kwargs: object) -> _C.Tensor:
        # device=: the result is on input's device (the CPU), which is all Ember has
        if device is not None and _C.device(device).type != _tensor_arg(input, factory.__name__).device.type:
            raise RuntimeError(f"{factory.__name__}(): Ember creates tensors on the CPU only, but got device={device}")
        out = laid_out(factory(input, *args, **kwargs), resolve(input, memory_format, factory.__name__))
        return out.requires_grad_() if requires_grad else out
    like.__name__ = factory.__name__
    like.__doc__ = factory.__doc__
    return like


def empty_strided(size: object, stride: object, *, dtype: _C.dtype | None = None, device: object = None,
                  requires_grad: builtins.bool = False) -> _C.Tensor:
    """An uninitialized tensor with the given sizes and strides (torch.empty_strided)."""
    size, stride = _int_list(size), _int_list(stride)
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of strides "
                           f"({len(stride)})")
    if builtins.any(s < 0 for s in stride):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={size} and strides={stride}")
    if builtins.any(s < 0 for s in size):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(size)}: {size}")
    # The storage spans the farthest element plus one; none at all when a size is 0.
    extent = 0 if 0 in size else 1 + builtins.sum((n - 1) * s for n, s in zip(size, stride, strict=True))
    from . import empty

    base = empty([extent], dtype=dtype, device=device)
    out = _C.as_strided(base, size, stride, 0)
    return out.requires_grad_() if requires_grad else out


def new_empty_strided(self: _C.Tensor, size: object, stride: object, *, dtype: _C.dtype | None = None,
                      device: object = None, requires_grad: builtins.bool = False) -> _C.Tensor:
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


def _int_list(value: object) -> list[builtins.int]:
    return [builtins.int(value)] if isinstance(value, builtins.int) else [builtins.int(v) for v in value]


# ---- in-place forms ------------------------------------------------------------------------------

# Top-level in-place functions PyTorch has, each the Tensor method of the same name.
INPLACE_FUNCTIONS = [
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "asin_",
    "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "conj_physical_",
    "cos_", "cosh_", "deg2rad_", "detach_", "erf_", "erfc_", "exp2_", "exp_", "expm1_", "fix_", "floor_",
    "frac_", "gcd_", "i0_", "lcm_", "ldexp_", "log10_", "log1p_", "log2_", "log_", "logit_", "nan_to_num_",
    "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_",
    "sinh_", "sqrt_", "square_", "tan_", "tanh_", "trunc_", "xlogy_", "addmv_",
]


def _inplace_function(name: str):
    def function(input: _C.Tensor, *args: object, **kwargs: object) -> _C.Tensor:  # noqa: A002
        return getattr(_tensor_arg(input, name), name)(*args, **kwargs)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"ember.{name}(x, ...) is x.{name}(...): {name[:-1]} written into x."
    return function


def logit_(self: _C.Tensor, eps: float | None = None) -> _C.Tensor:
    return _write_inplace(self, _C.logit(_graph_source(self), eps), "logit_")


def nan_to_num_(self: _C.Tensor, nan: float = 0.0, posinf: float | None = None,
                neginf: float | None = None) -> _C.Tensor:
    return _write_inplace(self, _C.nan_to_num(_graph_source(self), nan, posinf, neginf), "nan_to_num_")


def conj_physical_(self: _C.Tensor) -> _C.Tensor:
    if not self.dtype.is_complex:
        return self  # the conjugate of a real tensor is itself
    return _write_inplace(self, _C.conj_physical(_graph_source(self)), "conj_physical_")


def heaviside_(self: _C.Tensor, values: _C.Tensor) -> _C.Tensor:
    return _write_inplace(self, _C.heaviside(_graph_source(self), values), "heaviside_")


def lerp_(self: _C.Tensor, end: _C.Tensor, weight: object) -> _C.Tensor:
    return _write_inplace(self, _C.lerp(_graph_source(self), end, weight), "lerp_")


def sgn_(self: _C.Tensor) -> _C.Tensor:
    return _write_inplace(self, _C.sgn(_graph_source(self)), "sgn_")


def tril_(self: _C.Tensor, diagonal: builtins.int = 0) -> _C.Tensor:
    if self.dim() < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return _write_inplace(self, _C.tril(_graph_source(self), diagonal), "tril_")


def triu_(self: _C.Tensor, diagonal: builtins.int = 0) -> _C.Tensor:
    if self.dim() < 2:
        raise RuntimeError("triu: input tensor must have at least 2 dimensions")
    return _write_inplace(self, _C.triu(_graph_source(self), diagonal), "triu_")


def addmv_(self: _C.Tensor, mat: _C.Tensor, vec: _C.Tensor, *, beta: object = 1, alpha: object = 1) -> _C.Tensor:
    return _write_inplace(self, _C.addmv(_graph_source(self), mat, vec, beta=beta, alpha=alpha), "addmv_",
                          exact=True)


def _nn_inplace(fn_name: str, positional: tuple[str, ...], defaults: dict[str, object]):
    """ember.<fn_name>_ (celu_, selu_, ...) as nn.functional's inplace=True form."""
    def function(input: _C.Tensor, *args: object, **kwargs: object) -> _C.Tensor:  # noqa: A002
        from .nn import functional as F

        _tensor_arg(input, fn_name + "_")
        if len(args) > len(positional):
            raise TypeError(f"{fn_name}_() takes at most {len(positional) + 1} positional arguments but "
                            f"{len(args) + 1} were given")
        bound = dict(defaults)
        bound.update(zip(positional, args, strict=False))
        bound.update(kwargs)
        return _write_inplace(input, getattr(F, fn_name)(_graph_source(input), **bound), fn_name + "_")
    function.__name__ = function.__qualname__ = fn_name + "_"
    function.__doc__ = f"nn.functional.{fn_name}(input, ...) written into input."
    return function


_NN_INPLACE = {
    "celu": (("alpha",), {}), "selu": ((), {}), "relu": ((), {}), "elu": (("alpha",), {}),
    "hardtanh": (("min_val", "max_val"), {}), "leaky_relu": (("negative_slope",), {}),
    "threshold": (("threshold", "value"), {}),
    "rrelu": (("lower", "upper", "training"), {}),
}
# ATen's dropout_(input, p, train): p and train have no defaults there.
_DROPOUT_INPLACE = {"dropout": "dropout", "alpha_dropout": "alpha_dropout",
                    "feature_alpha_dropout": "feature_alpha_dropout"}


def _dropout_inplace(name: str):
    def function(input: _C.Tensor, p: float, train: builtins.bool) -> _C.Tensor:  # noqa: A002
        from .nn import functional as F

        _tensor_arg(input, name + "_")
        return _write_inplace(input, getattr(F, name)(_graph_source(input), p, train), name + "_")
    function.__name__ = function.__qualname__ = name + "_"
    return function


def feature_dropout_(input: _C.Tensor, p: float, train: builtins.bool) -> _C.Tensor:  # noqa: A002
    return _write_inplace(input, feature_dropout(_graph_source(input), p, train), "feature_dropout_")


# ---- top-level functional forms, with ATen's signatures -------------------------------------------

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _reduction(value: object) -> str:
    """ATen's integer reduction (0 none, 1 mean, 2 sum) as nn.functional's name."""
    if isinstance(value, builtins.bool) or value not in _REDUCTIONS:
        raise ValueError(f"{value} is not a valid value for reduction")
    return _REDUCTIONS[value]


def _reduce(loss: _C.Tensor, reduction: object) -> _C.Tensor:
    how = _reduction(reduction)
    return loss if how == "none" else (loss.mean() if how == "mean" else loss.sum())


def _stride_or_none(stride: object) -> object:
    # ATen's stride=[] means "the kernel size", nn.functional's None.
    return None if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else stride


def adaptive_avg_pool1d(input: _C.Tensor, output_size: object) -> _C.Tensor:  # noqa: A002
    from .nn import functional as F

    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input: _C.Tensor, output_size: object) -> tuple[_C.Tensor, _C.Tensor]:  # noqa: A002
    from .nn import functional as F

    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def avg_pool1d(input: _C.Tensor, kernel_size: object, stride: object = (), padding: object = 0,  # noqa: A002
               ceil_mode: builtins.bool = False, count_include_pad: builtins.bool = True) -> _C.Tensor:
    from .nn import functional as F

    return F.avg_pool1d(input, kernel_size, _stride_or_none(stride), padding, ceil_mode, count_include_pad)


def _max_pool(n: builtins.int, with_indices: builtins.bool = False):
    def pool(input: _C.Tensor, kernel_size: object, stride: object = (), padding: object = 0,  # noqa: A002
             dilation: object = 1, ceil_mode: builtins.bool = False) -> object:
        from .nn import functional as F

        return getattr(F, f"max_pool{n}d")(input, kernel_size, _stride_or_none(stride), padding, dilation, ceil_mode,
                                           return_indices=with_indices)
    pool.__name__ = pool.__qualname__ = f"max_pool{n}d" + ("_with_indices" if with_indices else "")
    return pool


def batch_norm(input: _C.Tensor, weight: _C.Tensor | None, bias: _C.Tensor | None,  # noqa: A002
               running_mean: _C.Tensor | None, running_var: _C.Tensor | None, training: builtins.bool,
               momentum: float, eps: float, cudnn_enabled: builtins.bool) -> _C.Tensor:
    """ATen's batch_norm (its argument order, not nn.functional's); cudnn_enabled is ignored on CPU."""
    from .nn import functional as F

    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: _C.Tensor, weight: _C.Tensor | None, bias: _C.Tensor | None,  # noqa: A002
                  running_mean: _C.Tensor | None, running_var: _C.Tensor | None, use_input_stats: builtins.bool,
                  momentum: float, eps: float, cudnn_enabled: builtins.bool) -> _C.Tensor:
    from .nn import functional as F

    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def group_norm(input: _C.Tensor, num_groups: builtins.int, weight: _C.Tensor | None = None,  # noqa: A002
               bias: _C.Tensor | None = None, eps: float = 1e-05, cudnn_enabled: builtins.bool = True) -> _C.Tensor:
    from .nn import functional as F

    return F.group_norm(input, num_groups, weight, bias, eps)


def layer_norm(input: _C.Tensor, normalized_shape: object, weight: _C.Tensor | None = None,  # noqa: A002
               bias: _C.Tensor | None = None, eps: float = 1e-05, cudnn_enable: builtins.bool = True) -> _C.Tensor:
    from .nn import functional as F

    return F.layer_norm(input, _int_list(normalized_shape), weight, bias, eps)


def rms_norm(input: _C.Tensor, normalized_shape: object, weight: _C.Tensor | None = None,  # noqa: A002
             eps: float | None = None) -> _C.Tensor:
    from .nn import functional as F

    return F.rms_norm(input, _int_list(normalized_shape), weight, eps)


def binary_cross_entropy_with_logits(input: _C.Tensor, target: _C.Tensor, weight: _C.Tensor | None = None,  # noqa: A002
                                     pos_weight: _C.Tensor | None = None, reduction: builtins.int = 1) -> _C.Tensor:
    from .nn import functional as F

    return F.binary_cross_entropy_with_logits(input, target, weight, reduction=_reduction(reduction),
                                              pos_weight=pos_weight)


def cosine_embedding_loss(input1: _C.Tensor, input2: _C.Tensor, target: _C.Tensor, margin: float = 0.0,
                          reduction: builtins.int = 1) -> _C.Tensor:
    from .nn import functional as F

    return F.cosine_embedding_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input: _C.Tensor, target: _C.Tensor, margin: float = 1.0,  # noqa: A002
                         reduction: builtins.int = 1) -> _C.Tensor:
    from .nn import functional as F

    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def margin_ranking_loss(input1: _C.Tensor, input2: _C.Tensor, target: _C.Tensor, margin: float = 0.0,
                        reduction: builtins.int = 1) -> _C.Tensor:
    from .nn import functional as F

    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def triplet_margin_loss(anchor: _C.Tensor, positive: _C.Tensor, negative: _C.Tensor, margin: float = 1.0,
                        p: float = 2.0, eps: float = 1e-06, swap: builtins.bool = False,
                        reduction: builtins.int = 1) -> _C.Tensor:
    from .nn import functional as F

    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap, reduction=_reduction(reduction))


def poisson_nll_loss(input: _C.Tensor, target: _C.Tensor, log_input: builtins.bool, full: builtins.bool,  # noqa: A002
                     eps: float, reduction: builtins.int) -> _C.Tensor:
    from .nn import functional as F

    return F.poisson_nll_loss(input, target, log_input, full, eps=eps, reduction=_reduction(reduction))


def kl_div(input: _C.Tensor, target: _C.Tensor, reduction: builtins.int = 1, *,  # noqa: A002
           log_target: builtins.bool = False) -> _C.Tensor:
    """ATen's kl_div: reduction 1 is the mean over all elements (not batchmean), without
    nn.functional's warning about it."""
    from .nn import functional as F

    how = _reduction(reduction)
    return _reduce(F.kl_div(input, target, reduction="none", log_target=log_target), reduction) if how != "none" \
        else F.kl_div(input, target, reduction="none", log_target=log_target)


def ctc_loss(log_probs: _C.Tensor, targets: _C.Tensor, input_lengths: object, target_lengths: object,
             blank: builtins.int = 0, reduction: builtins.int = 1, zero_infinity: builtins.bool = False) -> _C.Tensor:
    from .nn import functional as F

    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank, _reduction(reduction), zero_infinity)


def dropout(input: _C.Tensor, p: float, train: builtins.bool) -> _C.Tensor:  # noqa: A002
    from .nn import functional as F

    return F.dropout(input, p, train)


def alpha_dropout(input: _C.Tensor, p: float, train: builtins.bool) -> _C.Tensor:  # noqa: A002
    from .nn import functional as F

    return F.alpha_dropout(input, p, train)


def feature_alpha_dropout(input: _C.Tensor, p: float, train: builtins.bool) -> _C.Tensor:  # noqa: A002
    from .nn import functional as F

    return F.feature_alpha_dropout(input, p, train)


def feature_dropout(input: _C.Tensor, p: float, train: builtins.bool) -> _C.Tensor:  # noqa: A002
    """Zero whole channels (dim 1 of an (N, C, *) input) with probability p, scaling the kept
    ones by 1 / (1 - p) (torch.feature_dropout)."""
    from . import ones
    from .nn import functional as F

    _tensor_arg(input, "feature_dropout")
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if input.dim() < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    if not train or p == 0:
        return input
    noise_shape = list(input.shape[:2]) + [1] * (input.dim() - 2)
    mask = F.dropout(ones(noise_shape, dtype=input.dtype, device=input.device), p, True)
    return _C.mul(input, mask)


def constant_pad_nd(input: _C.Tensor, pad: object, value: object = 0) -> _C.Tensor:  # noqa: A002
    from .nn import functional as F

    return F.pad(input, _int_list(pad), "constant", value)


def rrelu(input: _C.Tensor, lower: float = 0.125, upper: float = 1.0 / 3.0, training: builtins.bool = False,  # noqa: A002
          generator: object = None) -> _C.Tensor:
    from .nn import functional as F

    if generator is not None:
        raise NotImplementedError("rrelu(): generator= is not supported; it draws from the default generator")
    return F.rrelu(input, lower, upper, training)


def _delegate(name: str, f_name: str | None = None):
    def function(*args: object, **kwargs: object) -> object:
        from .nn import functional as F

        return getattr(F, f_name or name)(*args, **kwargs)
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"nn.functional.{f_name or name} (torch.{name})."
    return function


# Names whose ATen signature is nn.functional's own.
_SAME_AS_F = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "bilinear",
              "pixel_shuffle", "pixel_unshuffle", "prelu", "hardshrink", "channel_shuffle"]

# ---- Tensor methods and functions ----------------------------------------------------------------


def _out(result: _C.Tensor, out: _C.Tensor | None) -> _C.Tensor:
    if out is None:
        return result
    from ._args import write_out

    return write_out(result, out)


def _outs(fn: str, results: tuple, out: object) -> tuple:
    """out= for a function returning several tensors: each result copied into its out tensor, and
    the out tensors returned in the results' (named) tuple type, as PyTorch does."""
    if out is None:
        return results
    if not isinstance(out, (tuple, list)) or len(out) != len(results):
        raise TypeError(f"{fn}(): argument 'out' must be a tuple of {len(results)} Tensors")
    from ._args import write_out

    written = [write_out(r, o) for r, o in zip(results, out, strict=True)]
    return type(results)(*written) if hasattr(results, "_fields") else tuple(written)


def addr(input: _C.Tensor, vec1: _C.Tensor, vec2: _C.Tensor, *, beta: object = 1, alpha: object = 1,  # noqa: A002
         out: _C.Tensor | None = None) -> _C.Tensor:
    """beta * input + alpha * outer(vec1, vec2) (torch.addr); beta = 0 ignores input's values."""
    for name, vec in (("vec1", vec1), ("vec2", vec2)):
        if _tensor_arg(vec, "addr", name).dim() != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {name}, but got {vec.dim()}-D")
    if vec1.dtype == _C.bool and vec2.dtype == _C.bool and _tensor_arg(input, "addr").dtype == _C.bool:
        # bool: the product is "and", beta and alpha act as "and", + as "or"
        outer = _C.logical_and(_C.unsqueeze(vec1, 1), _C.unsqueeze(vec2, 0))
    else:
        outer = _C.outer(vec1, vec2)
    base = _tensor_arg(input, "addr").expand(list(outer.shape))  # input must broadcast to the outer product
    if outer.dtype == _C.bool and base.dtype == _C.bool:
        product = outer if alpha else _C.zeros_like(outer)
        result = _C.logical_or(base, product) if beta else product.clone()
    else:
        scaled = _C.mul(outer, alpha) if alpha != 1 else outer
        if beta == 0:  # input's values are ignored, NaN included; its dtype still takes part
            result = _C.where(_C.ones_like(base, dtype=_C.bool), scaled, base)
        else:
            result = _C.add(_C.mul(base, beta) if beta != 1 else base, scaled)
    return _out(result, out)


def addr_(self: _C.Tensor, vec1: _C.Tensor, vec2: _C.Tensor, *, beta: object = 1, alpha: object = 1) -> _C.Tensor:
    return _write_inplace(self, addr(_graph_source(self), vec1, vec2, beta=beta, alpha=alpha), "addr_", exact=True)


def ravel(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """input flattened to 1-D: a view when input is contiguous, else a copy (torch.ravel)."""
    return _tensor_arg(input, "ravel").reshape(-1)


def nelement(self: _C.Tensor) -> builtins.int:
    return self.numel()


def positive(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """input itself (unary +); bool tensors are refused, as PyTorch does."""
    if _tensor_arg(input, "positive").dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def is_signed(self: _C.Tensor) -> builtins.bool:
    return self.dtype.is_signed


def isposinf(input: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    return _out(_signed_inf(input, "isposinf", 1), out)


def isneginf(input: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    return _out(_signed_inf(input, "isneginf", -1), out)


def _signed_inf(input: _C.Tensor, who: str, sign: builtins.int) -> _C.Tensor:  # noqa: A002
    if _tensor_arg(input, who).dtype.is_complex:
        raise RuntimeError(f"{who} does not support complex inputs.")
    if not input.dtype.is_floating_point:
        return _C.zeros_like(input, dtype=_C.bool)  # integers are never infinite
    return _C.eq(input, sign * math.inf)


def isreal(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """True where an element's imaginary part is zero (every element of a real tensor)."""
    if not _tensor_arg(input, "isreal").dtype.is_complex:
        return _C.ones_like(input, dtype=_C.bool)
    return _C.eq(_C.imag(input), 0)


def ldexp(input: _C.Tensor, other: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    """input * 2 ** other (torch.ldexp); integer operands give the default float dtype."""
    return _out(_C.mul(_tensor_arg(input, "ldexp"), 2.0 ** other), out)


def ldexp_(self: _C.Tensor, other: _C.Tensor) -> _C.Tensor:
    return _write_inplace(self, ldexp(_graph_source(self), other), "ldexp_")


def renorm(input: _C.Tensor, p: float, dim: builtins.int, maxnorm: float, *,  # noqa: A002
           out: _C.Tensor | None = None) -> _C.Tensor:
    """Each slice input.select(dim, i) whose p-norm exceeds maxnorm scaled down to norm maxnorm
    (torch.renorm; the factor is maxnorm / (norm + 1e-7), as PyTorch's)."""
    _tensor_arg(input, "renorm")
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.dim() < 2:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.dim()} dimensions")
    dim = _wrap_dim(dim, input.dim())
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. "
                           f"Got {_legacy_name(input.dtype)}")
    from .linalg import vector_norm

    others = [d for d in range(input.dim()) if d != dim]
    norm = vector_norm(input, p, dim=others, keepdim=True)
    factor = _C.where(_C.gt(norm, maxnorm), maxnorm / (norm + 1e-7), _C.ones_like(norm))
    return _out(_C.mul(input, factor.to(input.dtype) if factor.dtype != input.dtype else factor), out)


def renorm_(self: _C.Tensor, p: float, dim: builtins.int, maxnorm: float) -> _C.Tensor:
    return _write_inplace(self, renorm(_graph_source(self), p, dim, maxnorm), "renorm_")


def sum_to_size(self: _C.Tensor, *size: object) -> _C.Tensor:
    """self summed down to `size`, which self must be expandable from (the reduction that
    undoes a broadcast, torch.Tensor.sum_to_size)."""
    shape = _int_list(size[0] if len(size) == 1 and not isinstance(size[0], builtins.int) else size)
    mine = list(self.shape)
    lead = len(mine) - len(shape)
    expandable = lead >= 0 and builtins.all(s == m or s == 1 for s, m in zip(shape, mine[lead:], strict=True))
    if not expandable:
        raise RuntimeError(f"size {{{shape}}} is not expandable to size {{{mine}}}.")
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and mine[lead + i] != 1]
    if not dims:
        return self
    return _C.sum(self, dims, True).reshape(shape)


def where(self: _C.Tensor, condition: _C.Tensor, y: object) -> _C.Tensor:
    """self where condition holds, else y (the method form of ember.where)."""
    from ._overloads import where as where_fn

    return where_fn(condition, self, y)


def _flat_coordinates(index: _C.Tensor, shape: list[builtins.int]) -> tuple[_C.Tensor, ...]:
    """Row-major coordinates of the flat positions in index (already wrapped and in range)."""
    coords = []
    rest = index
    for size in reversed(shape):
        coords.append(_C.remainder(rest, size))
        rest = _C.div(rest, size, rounding_mode="floor")
    return tuple(reversed(coords))


def put_(self: _C.Tensor, index: _C.Tensor, source: _C.Tensor, accumulate: builtins.bool = False) -> _C.Tensor:
    """Write source's elements at the flat (row-major) positions index of self, or add them
    with accumulate=True (torch.Tensor.put_)."""
    if index.dtype != _C.int64:
        raise RuntimeError(f"put_(): Expected a long tensor for index, but got {_legacy_name(index.dtype)}")
    if source.dtype != self.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got self.dtype = "
                           f"{_legacy_name(self.dtype)} and source.dtype = {_legacy_name(source.dtype)}")
    if index.numel() != source.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of elements, but got "
                         f"source.numel() = {source.numel()}, index.numel() = {index.numel()}")
    numel = self.numel()
    flat = index.reshape(-1)
    if flat.numel() == 0:
        return self
    low, high = _C.amin(flat).item(), _C.amax(flat).item()
    for bad in (low, high):
        if bad < -numel or bad >= numel:
            raise IndexError(f"out of range: tried to access index {bad} on a tensor of {numel} elements.")
    flat = _C.where(_C.lt(flat, 0), _C.add(flat, numel), flat)
    target = self if self.dim() > 0 else self.unsqueeze(0)  # a view: writes land in self
    target.index_put_(list(_flat_coordinates(flat, list(target.shape))), source.reshape(-1), accumulate)
    return self


def put(input: _C.Tensor, index: _C.Tensor, source: _C.Tensor, accumulate: builtins.bool = False) -> _C.Tensor:  # noqa: A002
    return put_(_tensor_arg(input, "put").clone(), index, source, accumulate)


_LEGACY_NAMES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16", "int64": "Long",
                 "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool",
                 "complex64": "ComplexFloat", "complex128": "ComplexDouble"}


def _legacy_name(dtype: _C.dtype) -> str:
    name = _dtype_name(dtype)
    return _LEGACY_NAMES.get(name, name)


def index_reduce_(self: _C.Tensor, dim: builtins.int, index: _C.Tensor, source: _C.Tensor, reduce: str, *,
                  include_self: builtins.bool = True) -> _C.Tensor:
    """Reduce source's slices into self's slices picked by index along dim, with reduce one of
    prod, mean, amax or amin (torch.Tensor.index_reduce_)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got {reduce}.")
    if index.dtype not in (_C.int32, _C.int64):
        raise RuntimeError(f"index_reduce_(): Expected dtype int32/int64 for index but got: {_legacy_name(index.dtype)}")
    if index.dim() > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    if source.dtype != self.dtype:
        raise RuntimeError(f"index_reduce_(): self ({_legacy_name(self.dtype)}) and source "
                           f"({_legacy_name(source.dtype)}) must have the same scalar type")
    dim = _wrap_dim(dim, self.dim())
    src = source if source.dim() > 0 else source.reshape([1])
    count = index.numel()
    if src.dim() != builtins.max(self.dim(), 1) or src.shape[dim] != count:
        raise RuntimeError(f"index_reduce_(): Number of indices ({count}) should be equal to source.size(dim): "
                           f"({src.shape[dim] if src.dim() > dim else 1}), for dim: {dim}")
    target = self if self.dim() > 0 else self.unsqueeze(0)
    for d in range(target.dim()):
        if d != dim and src.shape[d] != target.shape[d]:
            raise RuntimeError(f"index_reduce_(): source and self must have the same size at every dimension "
                               f"but dim {dim}, but got {list(src.shape)} and {list(target.shape)}")
    if count:
        limit = target.shape[dim]
        if _C.amin(index).item() < -limit or _C.amax(index).item() >= limit:
            raise IndexError("index out of range in self")
    wrapped = _C.where(_C.lt(index, 0), _C.add(index, target.shape[dim]), index).to(_C.int64).reshape(-1)
    shape = [1] * src.dim()
    shape[dim] = count
    positions = wrapped.reshape(shape).expand(list(src.shape))
    result = _C.scatter_reduce(_graph_source(target), dim, positions, src, reduce, include_self=include_self)
    _write_inplace(target, result, "index_reduce_")
    return self


def index_reduce(input: _C.Tensor, dim: builtins.int, index: _C.Tensor, source: _C.Tensor, reduce: str, *,  # noqa: A002
                 include_self: builtins.bool = True) -> _C.Tensor:
    return index_reduce_(_tensor_arg(input, "index_reduce").clone(), dim, index, source, reduce,
                         include_self=include_self)


def get_device(self: _C.Tensor) -> builtins.int:
    """The CUDA device index, or -1 for a CPU tensor (torch.Tensor.get_device)."""
    return -1 if self.device.type == "cpu" else (self.device.index or 0)


def is_same_size(self: _C.Tensor, other: _C.Tensor) -> builtins.bool:
    return tuple(self.shape) == tuple(_tensor_arg(other, "is_same_size", "other").shape)


def mvlgamma(input: _C.Tensor, p: builtins.int, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    """The multivariate log-gamma of dimension p: p(p-1)/4 log(pi) + sum_i lgamma(input - i/2),
    i = 0 .. p-1 (torch.mvlgamma, a composite there too)."""
    _tensor_arg(input, "mvlgamma")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    if input.numel() and not _C.all(_C.gt(input, (p - 1) / 2)).item():
        raise RuntimeError("All elements must be greater than (p-1)/2")
    x = input if input.dtype.is_floating_point else input.to(_C.get_default_dtype())
    total = _C.lgamma(x)
    for i in range(1, p):
        total = _C.add(total, _C.lgamma(_C.sub(x, i / 2)))
    return _out(_C.add(total, p * (p - 1) / 4 * math.log(math.pi)), out)


def mvlgamma_(self: _C.Tensor, p: builtins.int) -> _C.Tensor:
    return _write_inplace(self, mvlgamma(_graph_source(self), p), "mvlgamma_")


# ---- legacy linear algebra ----------------------------------------------------------------------


def inverse(input: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    from . import linalg

    return _out(linalg.inv(input), out)


def pinverse(input: _C.Tensor, rcond: float = 1e-15) -> _C.Tensor:  # noqa: A002
    """The pseudo-inverse, singular values below rcond * the largest ignored (torch.pinverse)."""
    from . import linalg

    return linalg.pinv(input, rtol=rcond)


def qr(input: _C.Tensor, some: builtins.bool = True, *, out: object = None) -> tuple[_C.Tensor, _C.Tensor]:  # noqa: A002
    """(Q, R): reduced with some=True, complete otherwise (torch.qr)."""
    from . import linalg

    q, r = linalg.qr(input, mode="reduced" if some else "complete")
    return _outs("qr", _return_type("qr", ("Q", "R"))(q, r), out)


def svd(input: _C.Tensor, some: builtins.bool = True, compute_uv: builtins.bool = True, *,  # noqa: A002
        out: object = None) -> tuple[_C.Tensor, _C.Tensor, _C.Tensor]:
    """(U, S, V) with input = U diag(S) V^H: V, not V^H as linalg.svd gives (torch.svd).
    compute_uv=False gives zero-filled U (m x m) and V (n x n)."""
    from . import linalg, zeros

    result = _return_type("svd", ("U", "S", "V"))
    if not compute_uv:
        m, n = input.shape[-2], input.shape[-1]
        batch = list(input.shape[:-2])
        s = linalg.svdvals(input)
        return _outs("svd", result(zeros(batch + [m, m], dtype=input.dtype), s,
                                   zeros(batch + [n, n], dtype=input.dtype)), out)
    u, s, vh = linalg.svd(input, full_matrices=not some)
    return _outs("svd", result(u, s, vh.mH), out)


def cholesky(input: _C.Tensor, upper: builtins.bool = False, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    from . import linalg

    return _out(linalg.cholesky(input, upper=upper), out)


def cholesky_solve(input: _C.Tensor, input2: _C.Tensor, upper: builtins.bool = False, *,  # noqa: A002
                   out: _C.Tensor | None = None) -> _C.Tensor:
    """X with A X = input, A = L L^H given its Cholesky factor input2 (L, or U = L^H with
    upper=True): two triangular solves (torch.cholesky_solve)."""
    from . import linalg

    if input.dim() < 2 or input2.dim() < 2:
        raise RuntimeError(f"b should have at least 2 dimensions, but has {input.dim()} dimensions instead"
                           if input.dim() < 2 else
                           f"u should have at least 2 dimensions, but has {input2.dim()} dimensions instead")
    lower = input2.mH if upper else input2
    y = linalg.solve_triangular(lower, input, upper=False)
    return _out(linalg.solve_triangular(lower.mH, y, upper=True), out)


def cholesky_inverse(input: _C.Tensor, upper: builtins.bool = False, *,  # noqa: A002
                     out: _C.Tensor | None = None) -> _C.Tensor:
    """The inverse of A = L L^H (or U^H U with upper=True) from its Cholesky factor."""
    from . import eye

    if input.dim() < 2:
        raise RuntimeError("cholesky_inverse: The input tensor A must have at least 2 dimensions.")
    n = input.shape[-1]
    identity = eye(n, dtype=input.dtype).expand(list(input.shape))
    return _out(cholesky_solve(identity, input, upper), out)


def lu(A: _C.Tensor, pivot: builtins.bool = True, get_infos: builtins.bool = False,  # noqa: N803
       out: object = None) -> tuple[_C.Tensor, ...]:
    """(LU, pivots) of A, or (LU, pivots, infos) with get_infos=True (torch.lu). Without infos a
    singular A raises, as linalg.lu_factor does."""
    from . import linalg

    lu_, pivots, info = linalg.lu_factor_ex(A, pivot=pivot, check_errors=not get_infos)
    return _outs("lu", (lu_, pivots, info) if get_infos else (lu_, pivots), out)


def lu_solve(b: _C.Tensor, LU_data: _C.Tensor, LU_pivots: _C.Tensor, *,  # noqa: N803
             out: _C.Tensor | None = None) -> _C.Tensor:
    from . import linalg

    return _out(linalg.lu_solve(LU_data, LU_pivots, b), out)


def triangular_solve(b: _C.Tensor, A: _C.Tensor, upper: builtins.bool = True, transpose: builtins.bool = False,  # noqa: N803
                     unitriangular: builtins.bool = False, *, out: object = None) -> tuple[_C.Tensor, _C.Tensor]:
    """(X, A's copy) with op(A) X = b, op the transpose when transpose=True (torch.triangular_solve)."""
    from . import linalg

    if b.dim() < 2 or A.dim() < 2:
        raise RuntimeError(f"torch.triangular_solve: Expected b to have at least 2 dimensions, but it has {b.dim()} "
                           "dimensions instead" if b.dim() < 2 else
                           f"torch.triangular_solve: Expected A to have at least 2 dimensions, but it has {A.dim()} "
                           "dimensions instead")
    coeff = A.mT if transpose else A
    solution = linalg.solve_triangular(coeff, b, upper=upper != transpose, unitriangular=unitriangular)
    return _outs("triangular_solve",
                 _return_type("triangular_solve", ("solution", "cloned_coefficient"))(solution, A.clone()), out)


# ---- exports ------------------------------------------------------------------------------------

_F_FORMS = {name: _delegate(name) for name in _SAME_AS_F}
_FUNCTIONS = [
    "empty_strided", "adaptive_avg_pool1d", "adaptive_max_pool1d", "avg_pool1d", "batch_norm", "instance_norm",
    "group_norm", "layer_norm", "rms_norm", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
    "hinge_embedding_loss", "margin_ranking_loss", "triplet_margin_loss", "poisson_nll_loss", "kl_div", "ctc_loss",
    "dropout", "alpha_dropout", "feature_alpha_dropout", "feature_dropout", "feature_dropout_", "constant_pad_nd",
    "rrelu", "addr", "ravel", "positive", "isposinf", "isneginf", "isreal", "ldexp", "renorm", "put", "index_reduce",
    "mvlgamma", "inverse", "pinverse", "qr", "svd", "cholesky", "cholesky_solve", "cholesky_inverse", "lu",
    "lu_solve", "triangular_solve", "clone",
]


def namespace() -> dict[str, object]:
    """{name: object} for the top-level names this module adds to ember."""
    names: dict[str, object] = {"pi": pi, "e": e, "inf": inf, "nan": nan, "newaxis": newaxis,
                                "memory_format": memory_format, "contiguous_format": contiguous_format,
                                "preserve_format": preserve_format, "channels_last": channels_last,
                                "channels_last_3d": channels_last_3d,
                                "legacy_contiguous_format": legacy_contiguous_format}
    names.update({name: globals()[name] for name in _FUNCTIONS})
    names.update(_F_FORMS)
    names.update({f"max_pool{n}d": _max_pool(n) for n in (1, 2, 3)})
    names["max_pool1d_with_indices"] = _max_pool(1, True)
    names["native_channel_shuffle"] = _delegate("native_channel_shuffle", "channel_shuffle")
    for name in INPLACE_FUNCTIONS:
        names[name] = _inplace_function(name)
    for base, (positional, defaults) in _NN_INPLACE.items():
        if base not in ("elu", "hardtanh", "leaky_relu", "relu"):  # not top-level in PyTorch
            names[base + "_"] = _nn_inplace(base, positional, defaults)
    for base in _DROPOUT_INPLACE:
        names[base + "_"] = _dropout_inplace(base)
    return names


def functional_inplace() -> dict[str, object]:
    """nn.functional's in-place forms (relu_, elu_, ...)."""
    return {base + "_": _nn_inplace(base, positional, defaults) for base, (positional, defaults) in _NN_INPLACE.items()}


# Tensor methods PyTorch's Tensor has, each a function above with self first.
METHODS = ["logit_", "nan_to_num_", "conj_physical_", "heaviside_", "lerp_", "sgn_", "tril_", "triu_", "addmv_",
           "addr", "addr_", "ravel", "nelement", "positive", "is_signed", "isposinf", "isneginf", "isreal", "ldexp",
           "ldexp_", "renorm", "renorm_", "sum_to_size", "where", "put_", "put", "index_reduce_", "index_reduce",
           "new_empty_strided", "get_device", "is_same_size", "mvlgamma", "mvlgamma_", "inverse", "pinverse", "qr",
           "svd", "cholesky", "cholesky_solve", "cholesky_inverse", "lu", "lu_solve", "triangular_solve",
           "hardshrink", "contiguous", "clone"]


def tensor_methods() -> dict[str, object]:
    """The METHODS that Tensor lacks (contiguous, clone and is_contiguous replace the native ones), for
    ember/_tensor_methods.py to attach."""
    from . import _products

    methods = {name: globals().get(name) for name in METHODS}
    methods["hardshrink"] = _F_FORMS["hardshrink"]
    methods["inner"] = _products.inner
    methods["kron"] = _products.kron
    # Replace contiguous/clone/is_contiguous: they gain memory_format=.
    methods["clone"] = lambda self, *, memory_format=preserve_format: clone(self, memory_format=memory_format)
    methods["is_contiguous"] = is_contiguous
    methods = {name: fn for name, fn in methods.items()
               if name in ("contiguous", "clone", "is_contiguous") or not hasattr(_C.Tensor, name)}
    methods["lu"] = lambda self, pivot=True, get_infos=False: lu(self, pivot, get_infos)
    methods["lu_solve"] = lambda self, LU_data, LU_pivots: lu_solve(self, LU_data, LU_pivots)  # noqa: N803
    return methods
