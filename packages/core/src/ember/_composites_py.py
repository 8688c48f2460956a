"""PyTorch functions and Tensor methods that Ember composes in Python from declared ops
(issue 18, item 1): float_power, cov, corrcoef, quantile, nanquantile, block_diag,
cartesian_prod, combinations, isin, histogram, dist, adjoint, hsplit/vsplit/dsplit, frexp,
det/logdet/slogdet, the in-place forms addcdiv_ ... cumprod_ and fill_diagonal_, and the random
in-place fills exponential_, geometric_, cauchy_, log_normal_ and random_.

Everything here calls declared ops (native/ops/declarations.py), so gradients come from theirs.
An in-place form computes the out-of-place result and copies it into self (copy_ records it for
autograd); when self takes part in the graph it is read through a clone, so the history saved for
the result is not the memory being overwritten. The random fills draw from ember's generators
(the default one, or generator=) through rand/randint, as uniform_ and normal_ do.
"""

from __future__ import annotations

import builtins
import itertools
import math
import warnings
from collections import namedtuple

from . import _C
from ._autocast_policy import autocast_policy
from ._inplace import _dtype_name, _graph_source, _write_inplace

# ---- helpers ------------------------------------------------------------------------------------


def _tensor(data: object, dtype: _C.dtype) -> _C.Tensor:
    from ._tensor import tensor

    return tensor(data, dtype=dtype)


def _tensor_arg(obj: object, who: str, name: str = "input", position: int = 1) -> _C.Tensor:
    if not isinstance(obj, _C.Tensor):
        raise TypeError(f"{who}(): argument '{name}' (position {position}) must be Tensor, not {type(obj).__name__}")
    return obj


def _is_float(dtype: _C.dtype) -> builtins.bool:
    return dtype.is_floating_point


def _wrap_dim(dim: int, ndim: int) -> int:
    rank = builtins.max(ndim, 1)
    if not -rank <= dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got {dim})")
    return dim % rank


def _return_type(name: str, fields: tuple[str, ...]):
    from . import return_types

    cls = getattr(return_types, name, None)
    if cls is None:
        cls = return_types._register(namedtuple(name, fields))
    return cls


# ---- float_power --------------------------------------------------------------------------------


def _float_power_dtype(*operands: object) -> _C.dtype:
    complex_ = builtins.any((isinstance(o, _C.Tensor) and o.dtype.is_complex) or isinstance(o, complex)
                            for o in operands)
    return _C.complex128 if complex_ else _C.float64


def float_power(input: object, exponent: object) -> _C.Tensor:  # noqa: A002 - PyTorch's argument name
    """input ** exponent computed in double precision (torch.float_power): both operands are
    converted to float64, or complex128 when either is complex (then the principal value
    exp(exponent * log(input)), nonzero bases only)."""
    if not isinstance(input, _C.Tensor) and not isinstance(exponent, _C.Tensor):
        raise TypeError(f"float_power(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    dtype = _float_power_dtype(input, exponent)
    base = _C.to_dtype(input, dtype, False) if isinstance(input, _C.Tensor) else input
    exp = _C.to_dtype(exponent, dtype, False) if isinstance(exponent, _C.Tensor) else exponent
    if not isinstance(base, _C.Tensor):
        base = _C.full([], base, dtype=dtype)
    if dtype.is_complex:  # pow has no complex kernel: exp(exponent * log(base)), the principal value
        return _C.exp(_C.mul(_C.log(base), exp))
    return _C.pow(base, exp)


def float_power_(self: _C.Tensor, exponent: object) -> _C.Tensor:
    """In-place float_power: self must already have the result's dtype (float64 or complex128)."""
    dtype = _float_power_dtype(self, exponent)
    if self.dtype != dtype:
        raise RuntimeError(f"the base given to float_power_ has dtype {_dtype_name(self.dtype)} but the "
                           f"operation's result requires dtype {_dtype_name(dtype)}")
    return _write_inplace(self, float_power(_graph_source(self), exponent), "float_power_")


# ---- cov, corrcoef ------------------------------------------------------------------------------


def cov(input: _C.Tensor, *, correction: int = 1, fweights: _C.Tensor | None = None,  # noqa: A002
        aweights: _C.Tensor | None = None) -> _C.Tensor:
    """The covariance of the variables in input's rows (observations in columns), as torch.cov:
    correction=1 is Bessel's correction, fweights are integer repeat counts of the observations,
    aweights observation weights. A 1-D input is one variable (the result is 0-dim)."""
    x = _tensor_arg(input, "cov")
    if x.dim() > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{x.dim()} dimensions")
    if x.dim() < 2:
        x = x.reshape(1, -1)
    num_obs = x.shape[1]
    for name, w, integral in (("fweights", fweights, True), ("aweights", aweights, False)):
        if w is None:
            continue
        _tensor_arg(w, "cov", name)
        if w.dim() > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                               f"{w.dim()} dimensions")
        if integral and (w.dtype.is_floating_point or w.dtype.is_complex):
            raise RuntimeError(f"cov(): expected fweights to have integral dtype but got fweights with "
                               f"{_dtype_name(w.dtype)} dtype")
        if not integral and not w.dtype.is_floating_point:
            raise RuntimeError(f"cov(): expected aweights to have floating point dtype but got aweights with "
                               f"{_dtype_name(w.dtype)} dtype")
        if w.numel() != num_obs:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                               f"input but got {w.numel()} != {num_obs}")
        if w.numel() and builtins.bool(_C.any(_C.lt(w.detach(), 0)).item()):
            raise RuntimeError(f"cov(): {name} cannot be negative")
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = _C.to_dtype(x, _C.get_default_dtype(), False)
    w = fweights
    if aweights is not None:
        w = aweights if w is None else _C.mul(w, aweights)
    if w is None:
        avg = _C.mean(x, [1])
        norm_factor = float(num_obs - correction)
    else:
        w = w.reshape(-1)
        w_sum = _C.sum(w)
        avg = _C.div(_C.sum(_C.mul(x, w), [1]), w_sum)
        if correction == 0:
            norm_factor = w_sum
        elif aweights is None:
            norm_factor = _C.sub(w_sum, correction)
        else:
            norm_factor = _C.sub(w_sum, _C.div(_C.mul(_C.sum(_C.mul(w, aweights)), correction), w_sum))
    if (norm_factor if w is None else norm_factor.detach().item()) <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", UserWarning, stacklevel=2)
        norm_factor = 0.0
    centered = _C.sub(x, _C.unsqueeze(avg, 1))
    weighted = centered if w is None else _C.mul(centered, w)
    c = _C.matmul(weighted, _C.conj(_C.transpose(centered, 0, 1)))
    c = _C.div(c, norm_factor)
    return _C.squeeze(c) if input.dim() < 2 else c


def corrcoef(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """Pearson correlation coefficients of input's rows (torch.corrcoef), clipped to [-1, 1]."""
    x = _tensor_arg(input, "corrcoef")
    if x.dim() > 2:
        raise RuntimeError(f"corrcoef(): expected input to have two or fewer dimensions but got an input with "
                           f"{x.dim()} dimensions")
    c = cov(x)
    if c.dim() == 0:
        return _C.div(c, c)
    d = _C.diagonal(c, 0, 0, 1)
    std = _C.sqrt(_C.real(d) if d.dtype.is_complex else d)
    c = _C.div(c, _C.unsqueeze(std, 1))
    c = _C.div(c, _C.unsqueeze(std, 0))
    if c.dtype.is_complex:
        return _C.complex(_C.clamp(_C.real(c), min=-1, max=1), _C.clamp(_C.imag(c), min=-1, max=1))
    return _C.clamp(c, min=-1, max=1)


# ---- quantile, nanquantile ----------------------------------------------------------------------

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(x: object, q: object, dim: int | None, keepdim: builtins.bool, interpolation: str,
              ignore_nan: builtins.bool) -> _C.Tensor:
    x = _tensor_arg(x, "nanquantile" if ignore_nan else "quantile")
    if x.dtype not in (_C.float32, _C.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, _C.Tensor)
    if scalar_q:
        if not 0 <= q <= 1:
            raise RuntimeError(f"quantile() q must be in the range [0, 1] but got {q}")
        qt = _C.full([1], float(q), dtype=x.dtype)
    else:
        if q.dim() > 1:
            raise RuntimeError("quantile() q must be a scalar or 1D tensor")
        if q.dtype != x.dtype:
            raise RuntimeError("quantile() q tensor must be same dtype as the input tensor")
        scalar_q = q.dim() == 0
        qt = q.detach().reshape(-1)
        if qt.numel() and not builtins.bool(_C.all(_C.logical_and(_C.ge(qt, 0), _C.le(qt, 1))).item()):
            raise RuntimeError("quantile() q values must be in the range [0, 1]")
    if x.numel() == 0:
        raise RuntimeError("quantile() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    ndim = x.dim()
    if dim is None:
        rows = x.reshape(1, -1)
    else:
        dim = _wrap_dim(dim, ndim)
        rows = _C.movedim(x, dim, -1) if ndim else x.reshape(1)
    values = _C.sort(rows, -1, False)[0]  # NaN sorts last
    n = values.shape[-1]
    nan_last = _C.isnan(_C.narrow(values, -1, n - 1, 1))  # (..., 1): the row holds a NaN
    if ignore_nan:
        count = _C.sum(_C.logical_not(_C.isnan(values.detach())), [-1], True)  # (..., 1)
        ranks = _C.mul(_C.sub(_C.to_dtype(count, x.dtype, False), 1), qt)  # (..., Q)
    else:
        ranks = _C.mul(qt, n - 1).expand(list(values.shape[:-1]) + [qt.numel()])
    if interpolation == "lower":
        ranks = _C.floor(ranks)
    elif interpolation == "higher":
        ranks = _C.ceil(ranks)
    elif interpolation == "nearest":
        ranks = _C.round(ranks)
    low = _C.clamp(_C.floor(ranks), min=0, max=n - 1)
    high = _C.clamp(_C.ceil(ranks), min=0, max=n - 1)
    v_low = _C.gather(values, -1, _C.to_dtype(low, _C.int64, False))
    v_high = _C.gather(values, -1, _C.to_dtype(high, _C.int64, False))
    if interpolation == "midpoint":
        weight = _C.full([], 0.5, dtype=x.dtype).expand(list(v_low.shape))
    else:
        weight = _C.sub(ranks, low)
    out = _C.lerp(v_low, v_high, weight)
    invalid = _C.lt(count, 1).expand(list(out.shape)) if ignore_nan else nan_last.expand(list(out.shape))
    out = _C.where(invalid, _C.full([], math.nan, dtype=x.dtype), out)
    out = _C.movedim(out, -1, 0)  # (Q, ...)
    if dim is None:
        out = out.reshape([qt.numel()] + ([1] * ndim if keepdim else []))
    elif keepdim and ndim:
        out = _C.unsqueeze(out, dim + 1)
    if scalar_q:
        out = out.reshape(list(out.shape[1:]))
    return out


@autocast_policy("fp32")
def quantile(input: _C.Tensor, q: object, dim: int | None = None, keepdim: builtins.bool = False,  # noqa: A002
             *, interpolation: str = "linear") -> _C.Tensor:
    """The q-th quantiles of input (over all elements, or along dim), as torch.quantile: q a float
    or a 1-D tensor of them (its values lead the result's shape); a NaN in a row makes that row's
    quantiles NaN. interpolation: linear, lower, higher, midpoint or nearest."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=False)


@autocast_policy("fp32")
def nanquantile(input: _C.Tensor, q: object, dim: int | None = None, keepdim: builtins.bool = False,  # noqa: A002
                *, interpolation: str = "linear") -> _C.Tensor:
    """quantile ignoring NaN values (torch.nanquantile); a row of only NaN gives NaN."""
    return _quantile(input, q, dim, keepdim, interpolation, ignore_nan=True)


# ---- block_diag, cartesian_prod, combinations ---------------------------------------------------


def block_diag(*tensors: _C.Tensor) -> _C.Tensor:
    """A block-diagonal matrix of the given 0-, 1- and 2-dim tensors (torch.block_diag); a 1-D
    tensor is one row, a 0-dim one a 1x1 block."""
    for i, t in enumerate(tensors):
        _tensor_arg(t, "block_diag", "tensors", i + 1)
        if t.dim() > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {i} has "
                               f"{t.dim()} dimensions")
    if not tensors:
        return _C.zeros([1, 0])
    dtype = _C.result_type(list(tensors)) if len(tensors) > 1 else tensors[0].dtype
    blocks = [_C.to_dtype(t.reshape(1, -1) if t.dim() < 2 else t, dtype, False) for t in tensors]
    total = builtins.sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    for b in blocks:
        cols = b.shape[1]
        parts = [_C.zeros([b.shape[0], left], dtype=dtype), b, _C.zeros([b.shape[0], total - left - cols], dtype=dtype)]
        rows.append(_C.cat(parts, 1))
        left += cols
    return _C.cat(rows, 0)


def _vector_arg(t: object, who: str) -> _C.Tensor:
    _tensor_arg(t, who)
    if t.dim() != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    return t


def cartesian_prod(*tensors: _C.Tensor) -> _C.Tensor:
    """The Cartesian product of 1-D tensors, one row per combination (torch.cartesian_prod, as
    itertools.product); a single tensor is returned as it is."""
    for t in tensors:
        _vector_arg(t, "cartesian_prod")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    if len(tensors) == 1:
        return tensors[0]
    if builtins.any(t.dtype != tensors[0].dtype for t in tensors):
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    grids = _C.meshgrid(list(tensors), indexing="ij")
    return _C.stack([g.reshape(-1) for g in grids], 1)


def combinations(input: _C.Tensor, r: int = 2, with_replacement: builtins.bool = False) -> _C.Tensor:  # noqa: A002
    """The length-r combinations of a 1-D tensor's elements, one row each, in
    itertools.combinations order (with_replacement: combinations_with_replacement)."""
    x = _vector_arg(input, "combinations")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return _C.zeros([0], dtype=x.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    index = [i for combo in pick(builtins.range(x.shape[0]), r) for i in combo]
    if not index:
        return _C.zeros([0, r], dtype=x.dtype)
    return _C.index_select(x, 0, _tensor(index, dtype=_C.int64)).reshape(-1, r)


# ---- isin ---------------------------------------------------------------------------------------


def isin(elements: object, test_elements: object, *, assume_unique: builtins.bool = False,
         invert: builtins.bool = False) -> _C.Tensor:
    """For each element of `elements`, whether it is among `test_elements` (torch.isin); either
    may be a number. Compares in the promoted dtype; NaN is in nothing. assume_unique is accepted
    and changes nothing (the answer does not depend on it)."""
    if not isinstance(elements, _C.Tensor) and not isinstance(test_elements, _C.Tensor):
        raise TypeError(f"isin() received an invalid combination of arguments - got ({type(elements).__name__}, "
                        f"{type(test_elements).__name__})")
    dtype = _C.result_type([elements, test_elements])
    for v in (elements, test_elements):
        vt = v.dtype if isinstance(v, _C.Tensor) else dtype
        if vt.is_complex or vt == _C.bool:
            raise RuntimeError(f"Unsupported input type encountered for isin(): {_dtype_name(vt)}")
    e = _C.to_dtype(elements.detach(), dtype, False) if isinstance(elements, _C.Tensor) \
        else _C.full([], elements, dtype=dtype)
    t = _C.to_dtype(test_elements.detach(), dtype, False).reshape(-1) if isinstance(test_elements, _C.Tensor) \
        else _C.full([1], test_elements, dtype=dtype)
    if t.numel() == 0:
        found = _C.zeros(list(e.shape), dtype=_C.bool)
    else:
        ordered = _C.sort(t, 0, False)[0]
        flat = e.reshape(-1)
        at = _C.clamp(_C.searchsorted(ordered, flat), max=t.numel() - 1)
        found = _C.eq(_C.index_select(ordered, 0, at), flat).reshape(list(e.shape))
    return _C.logical_not(found) if invert else found


# ---- histogram ----------------------------------------------------------------------------------


def _fmt(v: float) -> str:
    return str(builtins.int(v)) if math.isfinite(v) and v == builtins.int(v) else str(v)


def histogram(input: _C.Tensor, bins: object = 100, *, range: tuple | None = None,  # noqa: A002
              weight: _C.Tensor | None = None, density: builtins.bool = False) -> tuple:
    """(hist, bin_edges) of input's values (torch.histogram). bins: a count of equal-width bins
    over `range` (default: the values' min and max) or a 1-D tensor of increasing edges. Every bin
    is half-open but the last, which includes its right edge; values outside are not counted.
    weight: each value's weight (default 1); density: normalize to a probability density."""
    x = _tensor_arg(input, "histogram")
    if not x.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogram\" not implemented for '{_dtype_name(x.dtype)}'")
    if weight is not None:
        _tensor_arg(weight, "histogram", "weight")
        if tuple(weight.shape) != tuple(x.shape):
            raise RuntimeError("torch.histogram: if weight tensor is provided it should have the same shape as the "
                               f"input tensor, but got input with shape {list(x.shape)} and weight with shape "
                               f"{list(weight.shape)}")
        if weight.dtype != x.dtype:
            raise RuntimeError("torch.histogram: if weight tensor is provided, input tensor and weight tensor should "
                               f"have the same dtype, but got input({_dtype_name(x.dtype)}), and "
                               f"weight({_dtype_name(weight.dtype)})")
    values = x.detach().reshape(-1)
    if isinstance(bins, _C.Tensor):
        if bins.dim() != 1:
            raise RuntimeError("torch.histogram: bins tensor should have one dimension, but got "
                               f"{bins.dim()} dimensions in the bins tensor")
        if bins.dtype != x.dtype:
            raise RuntimeError("torch.histogram: input tensor and bins tensors should have the same dtype, but got "
                               f"input with dtype {_dtype_name(x.dtype)} and bins with dtype "
                               f"{_dtype_name(bins.dtype)}")
        if bins.numel() < 2:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins.numel() - 1} for dimension 0")
        edges = bins.detach().clone()
    else:
        if builtins.int(bins) <= 0:
            raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
        if range is not None:
            left, right = float(range[0]), float(range[1])
            if left > right:
                raise RuntimeError(f"torch.histogram: min should not exceed max, but got min {_fmt(left)} "
                                   f"max {_fmt(right)}")
        elif values.numel():
            left, right = float(_C.amin(values).item()), float(_C.amax(values).item())
        else:
            left, right = 0.0, 1.0
        if not (math.isfinite(left) and math.isfinite(right)):
            raise RuntimeError(f"torch.histogram: range [{_fmt(left)}, {_fmt(right)}] is not finite")
        if left == right:
            left, right = left - 0.5, right + 0.5
        edges = _C.linspace(left, right, builtins.int(bins) + 1, dtype=x.dtype)
    count = edges.numel() - 1
    lo, hi = _C.select(edges, 0, 0), _C.select(edges, 0, count)
    at = _C.sub(_C.searchsorted(edges, values, right=True), 1)
    at = _C.where(_C.eq(values, hi), _C.full([], count - 1, dtype=_C.int64), at)
    inside = _C.logical_and(_C.ge(values, lo), _C.le(values, hi))
    at = _C.where(inside, at, _C.full([], count, dtype=_C.int64))
    w = None if weight is None else _C.to_dtype(weight.detach().reshape(-1), _C.float64, False)
    hist = _C.bincount(at, weights=w, minlength=count + 1)
    hist = _C.to_dtype(_C.narrow(hist, 0, 0, count), x.dtype, False)
    if density:
        widths = _C.sub(_C.narrow(edges, 0, 1, count), _C.narrow(edges, 0, 0, count))
        hist = _C.div(hist, _C.mul(_C.sum(hist), widths))
    return _return_type("histogram", ("hist", "bin_edges"))(hist, edges)


# ---- dist, adjoint, hsplit/vsplit/dsplit --------------------------------------------------------


def dist(input: _C.Tensor, other: _C.Tensor, p: float = 2) -> _C.Tensor:  # noqa: A002
    """The p-norm of input - other, broadcast (torch.dist)."""
    a, b = _tensor_arg(input, "dist"), _tensor_arg(other, "dist", "other", 2)
    diff = _C.sub(a, b)
    if not (diff.dtype.is_floating_point or diff.dtype.is_complex):
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. Got "
                           f"{_dtype_name(diff.dtype)} instead.")
    from .linalg import vector_norm

    return vector_norm(diff, ord=float(p))


def adjoint(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """The conjugate transpose of the last two dimensions, a view (torch.adjoint)."""
    x = _tensor_arg(input, "adjoint")
    if x.dim() == 0:
        warnings.warn("adjoint() is deprecated on 0-D tensors. Consider using x.conj().", UserWarning, stacklevel=2)
        return _C.conj(x)
    if x.dim() == 1:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of matrices. Got 1-D tensor.")
    return _C.conj(_C.transpose(x, -2, -1))


def _directional_split(who: str, x: _C.Tensor, sections: object, dim: int, min_dims: int) -> tuple:
    _tensor_arg(x, who)
    if x.dim() < min_dims:
        raise RuntimeError(f"torch.{who} requires a tensor with at least {min_dims} dimension, but got a tensor "
                           f"with {x.dim()} dimensions!")
    if isinstance(sections, builtins.int):
        size = x.shape[dim]
        if sections == 0 or size % sections != 0:
            raise RuntimeError(f"torch.{who} attempted to split along dimension {dim}, but the size of the "
                               f"dimension {size} is not divisible by the split_size {sections}!")
    from ._overloads import tensor_split

    return tensor_split(x, sections, dim)


def hsplit(input: _C.Tensor, indices_or_sections: object) -> tuple:  # noqa: A002
    """Split along dimension 1 (dimension 0 of a 1-D tensor), as numpy.hsplit (torch.hsplit)."""
    dim = 0 if isinstance(input, _C.Tensor) and input.dim() == 1 else 1
    return _directional_split("hsplit", input, indices_or_sections, dim, 1)


def vsplit(input: _C.Tensor, indices_or_sections: object) -> tuple:  # noqa: A002
    """Split along dimension 0 of a tensor of 2 or more dimensions (torch.vsplit)."""
    return _directional_split("vsplit", input, indices_or_sections, 0, 2)


def dsplit(input: _C.Tensor, indices_or_sections: object) -> tuple:  # noqa: A002
    """Split along dimension 2 of a tensor of 3 or more dimensions (torch.dsplit)."""
    return _directional_split("dsplit", input, indices_or_sections, 2, 3)


# ---- frexp --------------------------------------------------------------------------------------


def frexp(input: _C.Tensor) -> tuple:  # noqa: A002
    """(mantissa, exponent) with input = mantissa * 2**exponent, |mantissa| in [0.5, 1), exponent
    int32 (torch.frexp); 0, infinities and NaN keep their value with exponent 0. The mantissa's
    gradient is grad / 2**exponent."""
    x = _tensor_arg(input, "frexp")
    if not x.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    work = _C.float64 if x.dtype == _C.float64 else _C.float32
    v = _C.to_dtype(x, work, False)
    a = _C.abs(v.detach())
    regular = _C.logical_and(_C.isfinite(a), _C.ne(a, 0))
    safe = _C.where(regular, a, _C.ones([], dtype=work))
    e = _C.add(_C.floor(_C.log2(safe)), 1)
    for _ in builtins.range(2):  # log2 may be off by one next to a power of two
        m = _C.div(_C.div(safe, _C.exp2(_C.floor(_C.div(e, 2)))), _C.exp2(_C.sub(e, _C.floor(_C.div(e, 2)))))
        e = _C.where(_C.ge(m, 1), _C.add(e, 1), _C.where(_C.lt(m, 0.5), _C.sub(e, 1), e))
    e = _C.where(regular, e, _C.zeros([], dtype=work))
    half = _C.floor(_C.div(e, 2))
    mantissa = _C.div(_C.div(v, _C.exp2(half)), _C.exp2(_C.sub(e, half)))
    return _return_type("frexp", ("mantissa", "exponent"))(_C.to_dtype(mantissa, x.dtype, False),
                                                            _C.to_dtype(e, _C.int32, False))


# ---- det, logdet, slogdet -----------------------------------------------------------------------


def det(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """linalg.det (torch.det)."""
    from .linalg import det as _det

    return _det(_tensor_arg(input, "det"))


def slogdet(input: _C.Tensor) -> tuple:  # noqa: A002
    """(sign, logabsdet) of linalg.slogdet (torch.slogdet)."""
    from .linalg import slogdet as _slogdet

    sign, logabsdet = _slogdet(_tensor_arg(input, "slogdet"))
    return _return_type("slogdet", ("sign", "logabsdet"))(sign, logabsdet)


def logdet(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """log(det(input)) (torch.logdet): NaN for a negative real determinant, -inf for a zero one."""
    x = _tensor_arg(input, "logdet")
    if x.dim() < 2:
        raise RuntimeError("logdet: The input tensor A must have at least 2 dimensions.")
    sign, logabsdet = slogdet(x)
    if x.dtype.is_complex:
        return _C.add(_C.log(sign), logabsdet)
    return _C.where(_C.lt(sign, 0), _C.full([], math.nan, dtype=logabsdet.dtype), logabsdet)


# ---- in-place forms of out-of-place ops ---------------------------------------------------------


def addcdiv_(self: _C.Tensor, tensor1: _C.Tensor, tensor2: _C.Tensor, *, value: object = 1) -> _C.Tensor:
    """self += value * tensor1 / tensor2 in place."""
    return _write_inplace(self, _C.addcdiv(_graph_source(self), tensor1, tensor2, value=value), "addcdiv_")


def addcmul_(self: _C.Tensor, tensor1: _C.Tensor, tensor2: _C.Tensor, *, value: object = 1) -> _C.Tensor:
    """self += value * tensor1 * tensor2 in place."""
    return _write_inplace(self, _C.addcmul(_graph_source(self), tensor1, tensor2, value=value), "addcmul_")


def addmm_(self: _C.Tensor, mat1: _C.Tensor, mat2: _C.Tensor, *, beta: object = 1, alpha: object = 1) -> _C.Tensor:
    """self = beta * self + alpha * (mat1 @ mat2) in place."""
    return _write_inplace(self, _C.addmm(_graph_source(self), mat1, mat2, beta=beta, alpha=alpha), "addmm_",
                          exact=True)


def addbmm_(self: _C.Tensor, batch1: _C.Tensor, batch2: _C.Tensor, *, beta: object = 1,
            alpha: object = 1) -> _C.Tensor:
    """self = beta * self + alpha * sum_i(batch1[i] @ batch2[i]) in place."""
    return _write_inplace(self, _C.addbmm(_graph_source(self), batch1, batch2, beta=beta, alpha=alpha), "addbmm_",
                          exact=True)


def baddbmm_(self: _C.Tensor, batch1: _C.Tensor, batch2: _C.Tensor, *, beta: object = 1,
             alpha: object = 1) -> _C.Tensor:
    """self = beta * self + alpha * (batch1 @ batch2) in place."""
    return _write_inplace(self, _C.baddbmm(_graph_source(self), batch1, batch2, beta=beta, alpha=alpha),
                          "baddbmm_", exact=True)


def _scan_(name: str):
    op = getattr(_C, name)

    def scan_(self: _C.Tensor, dim: int, *, dtype: _C.dtype | None = None) -> _C.Tensor:
        if dtype is not None and dtype != self.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype {_dtype_name(self.dtype)} and output tensor "
                               f"dtype {_dtype_name(dtype)} should match")
        _wrap_dim(dim, self.dim())
        return self.copy_(op(_graph_source(self), dim, dtype=self.dtype))

    scan_.__name__ = name + "_"
    scan_.__doc__ = f"{name} along dim, in place (the result keeps self's dtype)."
    return scan_


cumsum_ = _scan_("cumsum")
cumprod_ = _scan_("cumprod")


def fill_diagonal_(self: _C.Tensor, fill_value: object, wrap: builtins.bool = False) -> _C.Tensor:
    """Fill the main diagonal (elements whose indices are all equal) with fill_value, in place
    (torch.Tensor.fill_diagonal_). A tall matrix with wrap=True restarts the diagonal every
    columns + 1 rows, as numpy.fill_diagonal."""
    if self.dim() < 2:
        raise RuntimeError("dimensions must larger than 1")
    shape = list(self.shape)
    if self.dim() > 2 and builtins.any(s != shape[0] for s in shape):
        raise RuntimeError("all dimensions of input must be of equal length")
    numel = self.numel()
    if numel == 0:
        return self
    if self.dim() == 2:
        rows, cols = shape
        step = cols + 1
        limit = numel if (wrap and rows > cols) else builtins.min(rows, cols) * step
    else:
        step = builtins.sum(shape[0] ** k for k in builtins.range(self.dim()))
        limit = numel
    flat = _C.arange(numel, dtype=_C.int64)
    mask = _C.logical_and(_C.eq(_C.remainder(flat, step), 0), _C.lt(flat, limit)).reshape(shape)
    return self.masked_fill_(mask, fill_value)


# ---- random in-place fills ----------------------------------------------------------------------


def _uniform(self: _C.Tensor, generator: object) -> _C.Tensor:
    """Uniform [0, 1) draws in float64, self's shape, from `generator` (default: ember's)."""
    return _C.rand(list(self.shape), generator=generator, dtype=_C.float64)


def _fill_random(self: _C.Tensor, values: _C.Tensor) -> _C.Tensor:
    """Write draws (no history of their own) into self; copy_ converts to self's dtype."""
    return self.copy_(values)


def _continuous(self: _C.Tensor, name: str) -> None:
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{name} distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {_dtype_name(self.dtype)}")


def exponential_(self: _C.Tensor, lambd: float = 1.0, *, generator: object = None) -> _C.Tensor:
    """Fill with draws of the exponential distribution of rate lambd (density lambd * exp(-lambd * x))."""
    if not lambd > 0.0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={_fmt(lambd)}")
    _continuous(self, "Exponential")
    u = _uniform(self, generator)
    return _fill_random(self, _C.div(_C.neg(_C.log1p(_C.neg(u))), lambd))


def geometric_(self: _C.Tensor, p: float, *, generator: object = None) -> _C.Tensor:
    """Fill with draws of the geometric distribution: the number of Bernoulli(p) trials up to and
    including the first success (values 1, 2, ...)."""
    if not 0.0 < p < 1.0:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={_fmt(p)}")
    if self.dtype == _C.bool or self.dtype.is_complex:
        raise NotImplementedError(f"\"geometric_\" not implemented for '{_dtype_name(self.dtype)}'")
    u = _uniform(self, generator)
    # 1 - u lies in (0, 1]; ceil(log(1-u) / log(1-p)) >= 1 except for 1 - u == 1, mapped to 1.
    k = _C.ceil(_C.div(_C.log1p(_C.neg(u)), math.log1p(-p)))
    return _fill_random(self, _C.clamp(k, min=1))


def cauchy_(self: _C.Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: object = None) -> _C.Tensor:
    """Fill with draws of the Cauchy distribution median + sigma * tan(pi * (u - 1/2))."""
    _continuous(self, "Cauchy")
    if not sigma > 0.0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={_fmt(sigma)}")
    u = _uniform(self, generator)
    return _fill_random(self, _C.add(_C.mul(_C.tan(_C.mul(_C.sub(u, 0.5), math.pi)), sigma), median))


def log_normal_(self: _C.Tensor, mean: float = 1.0, std: float = 2.0, *, generator: object = None) -> _C.Tensor:
    """Fill with exp of draws of the normal distribution (mean, std)."""
    if not std > 0.0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={_fmt(std)}")
    if not self.dtype.is_floating_point:
        raise NotImplementedError(f"\"log_normal_\" not implemented for '{_dtype_name(self.dtype)}'")
    z = _C.normal(float(mean), float(std), list(self.shape), generator=generator, dtype=_C.float64)
    return _fill_random(self, _C.exp(z))


# PyTorch's C names for the integral dtypes in random_'s bounds messages.
_C_TYPE_NAMES = {"uint8": "unsigned char", "int8": "signed char", "int16": "short", "int32": "int",
                 "int64": "long int", "bool": "bool"}
_FLOAT_DIGITS = {"float16": 11, "bfloat16": 8, "float32": 24, "float64": 53}


def _integral_bounds(dtype: _C.dtype) -> tuple[int, int]:
    if dtype == _C.bool:
        return 0, 1
    from ._info import iinfo

    info = iinfo(dtype)
    return builtins.int(info.min), builtins.int(info.max)


def random_(self: _C.Tensor, *args: object, generator: object = None, **kwargs: object) -> _C.Tensor:
    """Fill with integers drawn uniformly (torch.Tensor.random_): random_() over [0, top] with
    top the dtype's largest value (2**mantissa_digits for a floating dtype), random_(to) over
    [0, to - 1], random_(from, to) over [from, to - 1] (to=None: up to top)."""
    if self.dtype.is_complex:
        raise NotImplementedError(f"\"random_\" not implemented for '{_dtype_name(self.dtype)}'")
    bounds = list(args)
    if "from" in kwargs:
        if bounds:
            raise TypeError("random_() got multiple values for argument 'from'")
        bounds = [kwargs.pop("from")]
        if "to" not in kwargs:
            raise TypeError("random_() received an invalid combination of arguments - got (from=int, ), but "
                            "expected (), (to) or (from, to)")
    if "to" in kwargs:
        if len(bounds) > 1:
            raise TypeError("random_() got multiple values for argument 'to'")
        bounds = [bounds[0], kwargs.pop("to")] if bounds else [kwargs.pop("to")]
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    if len(bounds) > 2:
        raise TypeError(f"random_() takes at most 2 positional arguments ({len(bounds)} given)")
    name = _dtype_name(self.dtype)
    if self.dtype.is_floating_point:
        top = 2 ** _FLOAT_DIGITS.get(name, 24)
        low_limit = -top
    else:
        low_limit, top = _integral_bounds(self.dtype)
    if not bounds:
        low, high = 0, top + 1
    elif len(bounds) == 1:
        low, high = 0, builtins.int(bounds[0])
    else:
        low = builtins.int(bounds[0])
        high = top + 1 if bounds[1] is None else builtins.int(bounds[1])
    if bounds and not low < high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    if self.dtype.is_floating_point:
        if not (low_limit <= low <= top and low_limit <= high - 1 <= top):
            which = "from" if not low_limit <= low <= top else "to - 1"
            digits = _FLOAT_DIGITS.get(name, 24)
            warnings.warn(f"{which} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision limitations "
                          f"{name} can support discrete uniform distribution only within this range.",
                          UserWarning, stacklevel=2)
    else:
        ctype = _C_TYPE_NAMES.get(name, name)
        if not low_limit <= low <= top:
            raise RuntimeError(f"from is out of bounds for {ctype}")
        if not low_limit <= high - 1 <= top:
            raise RuntimeError(f"to - 1 is out of bounds for {ctype}")
    int64_max = 2 ** 63 - 1
    # randint takes int64 bounds: [0, 2**63 - 1] (random_() on int64) is drawn as [-1, 2**63 - 1) + 1.
    shift = 1 if high > int64_max else 0
    values = _C.randint(low - shift, high - shift, list(self.shape), generator=generator, dtype=_C.int64)
    if shift:
        values = _C.add(values, shift)
    return _fill_random(self, values)


# ---- registration -------------------------------------------------------------------------------

NAMES = ["float_power", "cov", "corrcoef", "quantile", "nanquantile", "block_diag", "cartesian_prod", "combinations",
         "isin", "histogram", "dist", "adjoint", "hsplit", "vsplit", "dsplit", "frexp", "det", "logdet", "slogdet"]

# Tensor methods PyTorch's Tensor has, each the function above with self as its first argument.
METHODS = ["float_power", "float_power_", "cov", "corrcoef", "quantile", "nanquantile", "histogram", "dist",
           "adjoint", "hsplit", "vsplit", "dsplit", "frexp", "det", "logdet", "slogdet", "addcdiv_", "addcmul_",
           "addmm_", "addbmm_", "baddbmm_", "cumsum_", "cumprod_", "fill_diagonal_", "exponential_", "geometric_",
           "cauchy_", "log_normal_", "random_"]


def tensor_methods() -> dict[str, object]:
    """The METHODS that Tensor lacks, for ember/_tensor_methods.py to attach."""
    return {name: globals()[name] for name in METHODS if not hasattr(_C.Tensor, name)}
