"""ember.special: special functions under torch.special's names and signatures.

Most are ops declared in native/ops/declarations.py (`special_<name>`), computed in double by the
scalar kernels of native/src/backend/cpu/special_math.cpp (Note [special functions] there: methods,
accuracy and special values); the rest are torch.special's aliases of Ember ops (digamma, erf,
gammaln, softmax, ...). Derivatives are PyTorch's: entr, erfcx, ndtr, ndtri, log_ndtr and xlog1py
are differentiable, zeta in its second argument only; the Bessel and Airy functions and the
orthogonal polynomials are not differentiable (their results never require grad), as in PyTorch.

Differences from PyTorch, where it returns NaN for a limit that exists or ignores a NaN: the Bessel
functions and Ai at +-inf give their limits (0, or +-inf for I0 and I1), zeta(inf, q) and
zeta(x, inf) theirs, a NaN degree n or zeta argument x gives NaN, a polynomial at x = +-inf gives
its signed infinity, and a polynomial degree above 2^24 that only a recurrence of that length
could give (Hermite; Laguerre for x > 0; Legendre for |x| < 1) gives NaN.
"""

from __future__ import annotations

import builtins
import numbers

from .. import _C

__all__ = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t",
    "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc",
    "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h",
    "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p",
    "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
    "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "sinc", "softmax",
    "spherical_bessel_j0", "xlog1py", "xlogy", "zeta",
]

# ---- the modified Bessel functions of the first kind (with derivatives) ----------------------------
i0 = _C.i0
i0e = _C.special_i0e
i1 = _C.special_i1
i1e = _C.special_i1e

# ---- functions of one tensor with kernels of their own ------------------------------------------------
entr = _C.special_entr
erfcx = _C.special_erfcx
ndtr = _C.special_ndtr
ndtri = _C.special_ndtri
log_ndtr = _C.special_log_ndtr
bessel_j0 = _C.special_bessel_j0
bessel_j1 = _C.special_bessel_j1
bessel_y0 = _C.special_bessel_y0
bessel_y1 = _C.special_bessel_y1
modified_bessel_i0 = _C.special_modified_bessel_i0
modified_bessel_i1 = _C.special_modified_bessel_i1
modified_bessel_k0 = _C.special_modified_bessel_k0
modified_bessel_k1 = _C.special_modified_bessel_k1
scaled_modified_bessel_k0 = _C.special_scaled_modified_bessel_k0
scaled_modified_bessel_k1 = _C.special_scaled_modified_bessel_k1
spherical_bessel_j0 = _C.special_spherical_bessel_j0
airy_ai = _C.special_airy_ai

# ---- aliases of Ember ops, as torch.special's -------------------------------------------------------
digamma = _C.digamma
psi = _C.digamma
erf = _C.erf
erfc = _C.erfc
erfinv = _C.erfinv
exp2 = _C.exp2
expit = _C.sigmoid
expm1 = _C.expm1
log1p = _C.log1p
gammaln = _C.lgamma
sinc = _C.sinc
round = _C.round  # noqa: A001 - torch.special's name


def _number_first(input, other):  # noqa: A002 - PyTorch's argument name
    """torch.special's (Number, Tensor) overloads: a number first is a wrapped 0-dim tensor, so it
    ranks lowest in type promotion, as PyTorch's Scalar argument does."""
    if isinstance(input, (builtins.bool, numbers.Number)) and isinstance(other, _C.Tensor):
        return _C._wrap_number(input)
    return input


def _binary(op):
    def fn(input, other, *, out=None):  # noqa: A002 - PyTorch's argument name
        return op(_number_first(input, other), other, out=out)
    return fn


def _polynomial(op):
    def fn(input, n, *, out=None):  # noqa: A002 - PyTorch's argument name
        return op(_number_first(input, n), n, out=out)
    return fn


def _named(fn, name: str, doc: str):
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


xlog1py = _named(_binary(_C.special_xlog1py), "xlog1py",
                 "input * log1p(other), 0 where input is 0 and other is not NaN (torch.special.xlog1py).")
zeta = _named(_binary(_C.special_zeta), "zeta",
              "The Hurwitz zeta function sum_k (other + k)^-input (torch.special.zeta); differentiable in "
              "other only.")
xlogy = _named(_binary(_C.xlogy), "xlogy",
               "input * log(other), 0 where input is 0 and other is not NaN (torch.special.xlogy).")

_POLYNOMIAL_DOCS = {
    "chebyshev_polynomial_t": "the Chebyshev polynomial of the first kind T_n",
    "chebyshev_polynomial_u": "the Chebyshev polynomial of the second kind U_n",
    "chebyshev_polynomial_v": "the Chebyshev polynomial of the third kind V_n",
    "chebyshev_polynomial_w": "the Chebyshev polynomial of the fourth kind W_n",
    "shifted_chebyshev_polynomial_t": "the shifted Chebyshev polynomial T_n(2x - 1)",
    "shifted_chebyshev_polynomial_u": "the shifted Chebyshev polynomial U_n(2x - 1)",
    "shifted_chebyshev_polynomial_v": "the shifted Chebyshev polynomial V_n(2x - 1)",
    "shifted_chebyshev_polynomial_w": "the shifted Chebyshev polynomial W_n(2x - 1)",
    "hermite_polynomial_h": "the physicists' Hermite polynomial H_n",
    "hermite_polynomial_he": "the probabilists' Hermite polynomial He_n",
    "laguerre_polynomial_l": "the Laguerre polynomial L_n",
    "legendre_polynomial_p": "the Legendre polynomial P_n",
}
for _name, _what in _POLYNOMIAL_DOCS.items():
    globals()[_name] = _named(_polynomial(getattr(_C, f"special_{_name}")), _name,
                              f"{_what[0].upper()}{_what[1:]} at input (torch.special.{_name}); n is truncated "
                              "toward zero, and a negative n gives 0. Either argument may be a number.")
del _name, _what


def gammainc(input, other, *, out=None):  # noqa: A002 - PyTorch's argument name
    """The regularized lower incomplete gamma function (torch.special.gammainc, ember.igamma)."""
    from .. import igamma

    return igamma(input, other, out=out)


def gammaincc(input, other, *, out=None):  # noqa: A002 - PyTorch's argument name
    """The regularized upper incomplete gamma function (torch.special.gammaincc, ember.igammac)."""
    from .. import igammac

    return igammac(input, other, out=out)


def multigammaln(input, p, *, out=None):  # noqa: A002 - PyTorch's argument name
    """The multivariate log-gamma function of dimension p (torch.special.multigammaln, ember.mvlgamma)."""
    from .. import mvlgamma

    return mvlgamma(input, p, out=out)


def polygamma(n, input, *, out=None):  # noqa: A002 - PyTorch's argument name
    """The n-th derivative of digamma (torch.special.polygamma, ember.polygamma)."""
    from .. import polygamma as _polygamma

    return _polygamma(n, input, out=out)


def logit(input, eps=None, *, out=None):  # noqa: A002 - PyTorch's argument name
    """log(p / (1 - p)), p clamped to [eps, 1 - eps] when eps is given (torch.special.logit)."""
    from .._surface import _out

    return _out(_C.logit(input, eps), out)


def logsumexp(input, dim, keepdim=False, *, out=None):  # noqa: A002 - PyTorch's argument name
    """log(sum(exp(input), dim)), computed stably (torch.special.logsumexp)."""
    from .._surface import _out

    return _out(_C.logsumexp(input, dim, keepdim), out)


def softmax(input, dim, *, dtype=None):  # noqa: A002 - PyTorch's argument name
    """softmax along dim, computed in dtype when given (torch.special.softmax)."""
    return _C.softmax(input, dim, dtype)


def log_softmax(input, dim, *, dtype=None):  # noqa: A002 - PyTorch's argument name
    """log of softmax along dim, computed in dtype when given (torch.special.log_softmax)."""
    return _C.log_softmax(input, dim, dtype)
