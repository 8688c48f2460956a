"""The masked reductions and normalizations of ember.masked (torch.masked's functions with a `mask`).

Each function computes its plain counterpart over the elements where `mask` is True: the others
are replaced by the operation's identity first (0 for sum, 1 for prod, -inf for amax and
logsumexp, +inf for amin, ...), so gradients reach the unmasked elements only. `mask` broadcasts
to the input (any dtype, read as bool); None means every element. `dtype` casts the input first.
Where nothing is left to reduce the result is the identity (sum 0, amax -inf) or NaN (mean, var,
median, softmax), as in PyTorch. ember.masked re-exports them, accepting a MaskedTensor too."""

from __future__ import annotations

import math

import ember

__all__ = ["sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm", "var", "std",
           "logsumexp", "logaddexp", "cumsum", "cumprod", "softmax", "log_softmax", "softmin", "normalize"]


def _extreme(dtype, high: bool):
    """+inf / -inf, or the integer dtype's largest / smallest value."""
    if dtype.is_floating_point or dtype.is_complex:
        return math.inf if high else -math.inf
    if dtype == ember.bool:
        return high
    info = ember.iinfo(dtype)
    return info.max if high else info.min


def _input_mask(input, mask):  # noqa: A002
    """The mask as a bool tensor of the input's shape."""
    if mask is None:
        return ember.ones_like(input, dtype=ember.bool)
    mask = mask if isinstance(mask, ember.Tensor) else ember.tensor(mask)
    if mask.dim() > input.dim():
        raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of the "
                         "input)")
    return mask.to(ember.bool).expand(input.shape)


def _filled(input, mask, identity, dtype=None):  # noqa: A002
    """The input (cast to dtype) with its masked-out elements replaced by `identity`."""
    if dtype is not None:
        input = input.to(dtype)  # noqa: A001
    return ember.where(_input_mask(input, mask), input, ember.full((), identity, dtype=input.dtype))


def _dims(input, dim):  # noqa: A002
    if dim is None:
        return list(range(input.dim()))
    return [dim] if isinstance(dim, int) else list(dim)


def sum(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A001, A002
    return ember.sum(_filled(input, mask, 0, dtype), _dims(input, dim), keepdim=bool(keepdim))


def prod(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    x = _filled(input, mask, 1, dtype)
    for d in sorted((d % max(x.dim(), 1) for d in _dims(x, dim)), reverse=True):
        x = ember.prod(x, d, keepdim=bool(keepdim))
    return x


def amax(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    x = _filled(input, mask, _extreme(dtype or input.dtype, False), dtype)
    return ember.amax(x, _dims(x, dim), keepdim=bool(keepdim))


def amin(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    x = _filled(input, mask, _extreme(dtype or input.dtype, True), dtype)
    return ember.amin(x, _dims(x, dim), keepdim=bool(keepdim))


def argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """The index of the largest unmasked element, in `dtype` (the input's by default, as PyTorch)."""
    dtype = dtype or input.dtype
    x = _filled(input, mask, _extreme(input.dtype, False))
    return ember.argmax(x, dim, keepdim=bool(keepdim)).to(dtype)


def argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    dtype = dtype or input.dtype
    x = _filled(input, mask, _extreme(input.dtype, True))
    return ember.argmin(x, dim, keepdim=bool(keepdim)).to(dtype)


def _count(input, dim, keepdim, mask):  # noqa: A002
    return ember.sum(_input_mask(input, mask).to(ember.int64), _dims(input, dim), keepdim=bool(keepdim))


def _floating(name, dtype):
    if not (dtype.is_floating_point or dtype.is_complex):
        raise ValueError(f"{name}(): Could not infer output dtype. Input dtype must be either a floating point or "
                         f"complex dtype. Got: {dtype}")


def mean(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """The unmasked elements' mean; NaN where there are none."""
    _floating("mean", dtype or input.dtype)
    total = sum(input, dim, keepdim=keepdim, dtype=dtype, mask=mask)
    return total / _count(input, dim, keepdim, mask).to(total.dtype)


def median(input, dim=-1, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """The lower median of the unmasked elements along one dim; NaN where there are none."""
    _floating("median", dtype or input.dtype)
    x = _filled(input, mask, math.nan, dtype)
    return ember.nanmedian(x, dim, keepdim=bool(keepdim))[0]


def norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """The vector norm of the unmasked elements (masked ones count as 0; as +inf for ord=-inf)."""
    ord = 2.0 if ord is None else ord  # noqa: A001
    x = _filled(input, mask, math.inf if ord == -math.inf else 0, dtype)
    return ember.linalg.vector_norm(x, ord, _dims(x, dim), keepdim=bool(keepdim))


def var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):  # noqa: A002
    """The unmasked elements' variance, divided by (count - correction); `unbiased` picks a
    correction of 1 or 0, the default is 1. NaN where the divisor is not positive."""
    _floating("var", dtype or input.dtype)
    if unbiased is not None and correction is not None:
        raise ValueError("var(): only one of unbiased and correction may be given")
    correction = (1 if unbiased else 0) if unbiased is not None else (1 if correction is None else correction)
    count = _count(input, dim, True, mask)
    center = sum(input, dim, keepdim=True, dtype=dtype, mask=mask) / count
    x = input.to(dtype) if dtype is not None else input
    deviation = ember.where(_input_mask(x, mask), x - center, ember.zeros((), dtype=x.dtype))
    squares = ember.sum((deviation * deviation.conj()).real if x.is_complex() else deviation * deviation,
                        _dims(x, dim), keepdim=bool(keepdim))
    divisor = (count if keepdim else count.reshape(squares.shape)) - correction
    divisor = divisor.to(squares.dtype)
    positive = divisor > 0
    # (a non-positive divisor is swapped for 1 before dividing, so no inf reaches the gradient)
    safe = ember.where(positive, divisor, ember.ones((), dtype=divisor.dtype))
    return ember.where(positive, squares / safe, ember.full((), math.nan, dtype=squares.dtype))


def std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None):  # noqa: A002
    return ember.sqrt(var(input, dim, unbiased, correction=correction, keepdim=keepdim, dtype=dtype, mask=mask))


def logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None):  # noqa: A002
    x = _filled(input, mask, -math.inf, dtype)
    return ember.logsumexp(x, _dims(x, dim), keepdim=bool(keepdim))


def logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None):  # noqa: A002
    """log(exp(input) + exp(other)) with masked-out elements of either taken as -inf."""
    return ember.logaddexp(_filled(input, input_mask, -math.inf, dtype), _filled(other, other_mask, -math.inf, dtype))


def cumsum(input, dim, *, dtype=None, mask=None):  # noqa: A002
    return ember.cumsum(_filled(input, mask, 0, dtype), dim)


def cumprod(input, dim, *, dtype=None, mask=None):  # noqa: A002
    return ember.cumprod(_filled(input, mask, 1, dtype), dim)


def softmax(input, dim, *, dtype=None, mask=None):  # noqa: A002
    """Softmax over the unmasked elements: 0 at masked positions, NaN where a slice is all masked."""
    return ember.softmax(_filled(input, mask, -math.inf, dtype), dim)


def log_softmax(input, dim, *, dtype=None, mask=None):  # noqa: A002
    return ember.log_softmax(_filled(input, mask, -math.inf, dtype), dim)


def softmin(input, dim, *, dtype=None, mask=None):  # noqa: A002
    return ember.softmax(-_filled(input, mask, math.inf, dtype), dim)


def normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None):  # noqa: A002
    """input / max(norm, eps) over the unmasked elements; masked positions give 0."""
    x = _filled(input, mask, 0, dtype)
    n = ember.linalg.vector_norm(x, ord, [dim], keepdim=True)
    return x / n.clamp(min=eps)
