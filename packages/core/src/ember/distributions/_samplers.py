"""Samplers and special functions the distributions need and the core has no native op for:
standard gamma (with its implicit reparameterization gradient) and the
regularized lower incomplete gamma function. All compose existing ops; the rejection samplers run
vectorized over the elements still pending, drawing from the default generator (so
`ember.manual_seed` makes them reproducible). Internals run in float64.

Note [implicit reparameterization]
A gamma sample x ~ Gamma(a, 1) is not a smooth function of a and the random numbers drawn by the
rejection sampler, but it is one of a and u = F(x; a), the CDF: x = F⁻¹(u; a). Holding u fixed,
    dx/da = -(∂F/∂a) / (∂F/∂x) = -(∂P(a, x)/∂a) / pdf(x; a),
with P the regularized lower incomplete gamma function (Figurnov et al., 2018). P comes from its
power series for x < a + 1 and from its continued fraction otherwise; both carry dS/da along, so
the gradient is exact to float64 rounding rather than a fitted approximation. Beyond a = 1e4 (where
the sums would need thousands of terms) the Wilson-Hilferty normal approximation gives dx/da.
"""

from __future__ import annotations

import math

import ember
from ember.autograd import Function

_F64 = ember.float64
_TINY64 = ember.finfo(_F64).tiny
_EPS64 = ember.finfo(_F64).eps
_WILSON_HILFERTY_ABOVE = 1e4
_MAX_TERMS = 100_000


def _open_rand(n: int):
    """Uniform on (0, 1]: safe to take the log of."""
    return 1.0 - ember.rand(n, dtype=_F64)


def _rejection(n: int, propose) -> ember.Tensor:
    """Runs `propose(pending_indices) -> (accepted_mask, values)` on the elements still pending
    until every element has a value; returns the values (float64, flat)."""
    out = ember.zeros(n, dtype=_F64)
    pending = ember.arange(n)
    while pending.numel() > 0:
        ok, values = propose(pending)
        out[pending[ok]] = values[ok]
        pending = pending[~ok]
    return out


def _sample_standard_gamma(alpha) -> ember.Tensor:
    """Gamma(alpha, 1) samples (Marsaglia & Tsang, 2000), in alpha's dtype and shape."""
    a = alpha.detach().to(_F64).reshape(-1)
    boost = a < 1  # Gamma(a) = Gamma(a + 1) * U^(1/a) for a < 1
    d = ember.where(boost, a + 1, a) - 1.0 / 3.0
    c = (9.0 * d).rsqrt()

    def propose(pending):
        dp, cp = d[pending], c[pending]
        z = ember.randn(pending.numel(), dtype=_F64)
        v = (1.0 + cp * z) ** 3
        log_u = ember.log(_open_rand(pending.numel()))
        # log(v) is NaN for v <= 0, and NaN compares False: those are rejected.
        ok = (v > 0) & (log_u < 0.5 * z * z + dp - dp * v + dp * ember.log(v))
        return ok, dp * v

    x = _rejection(a.numel(), propose)
    log_boost = ember.where(boost, ember.log(_open_rand(a.numel())) / a, ember.zeros_like(a))
    x = ember.exp(ember.log(x) + log_boost)
    tiny = ember.finfo(alpha.dtype).tiny  # as PyTorch: never exactly zero, so log_prob stays finite
    return x.clamp(min=tiny).to(alpha.dtype).reshape(tuple(alpha.shape))


def _series(a, x):
    """S = Σ_n x^n / ((a+1)...(a+n)) and dS/da, for P(a, x) = x^a e^-x S / Γ(a+1) (x < a + 1)."""
    term, h = ember.ones_like(x), ember.zeros_like(x)
    s, ds = ember.ones_like(x), ember.zeros_like(x)
    for n in range(1, _MAX_TERMS):
        term = term * x / (a + n)
        h = h - 1.0 / (a + n)  # d log(term)/da
        s = s + term
        ds = ds + term * h
        if n % 8 == 0 and bool(((term <= _EPS64 * s) & ((term * h).abs() <= _EPS64 * ds.abs() + _TINY64)).all()):
            break
    return s, ds


def _continued_fraction(a, x):
    """CF and dCF/da, for Q(a, x) = x^a e^-x CF / Γ(a) (x >= a + 1), CF = 1/(b0 + a1/(b1 + a2/(b2 + ...)))
    with b_n = x + 2n + 1 - a, a_n = -n(n - a); evaluated from a fixed depth back to the front."""
    depth = 40 + 10 * math.ceil(math.sqrt(float(a.max()))) if a.numel() else 0
    t = x + 2 * depth + 1 - a  # T_depth = b_depth
    dt = -ember.ones_like(x)
    for n in range(depth, 0, -1):
        a_n = -n * (n - a)
        t, dt = x + 2 * (n - 1) + 1 - a + a_n / t, -1.0 + (n * t - a_n * dt) / (t * t)
    return 1.0 / t, -dt / (t * t)


def _split(a, x):
    """Indices of the elements summed by the series (x < a + 1) and by the continued fraction."""
    use_series = x < a + 1
    return use_series.nonzero().reshape(-1), (~use_series).nonzero().reshape(-1)


def _gammainc_and_grad(a, x):
    """P(a, x) and ∂P/∂a, elementwise, for float64 flat tensors with a > 0, x >= 0."""
    p, dp = ember.zeros_like(x), ember.zeros_like(x)
    si, ci = _split(a, x)
    a_s, x_s = a[si], x[si]
    s, ds = _series(a_s, x_s)
    log_x = ember.log(x_s)
    pref = ember.exp(a_s * log_x - x_s - ember.lgamma(a_s + 1))
    p[si] = pref * s
    dp[si] = ember.where(x_s > 0, pref * (s * (log_x - ember.digamma(a_s + 1)) + ds), ember.zeros_like(x_s))
    a_c, x_c = a[ci], x[ci]
    cf, dcf = _continued_fraction(a_c, x_c)
    log_x = ember.log(x_c)
    pref = ember.exp(a_c * log_x - x_c - ember.lgamma(a_c))
    q = pref * cf
    p[ci] = 1.0 - q
    dp[ci] = -(q * (log_x - ember.digamma(a_c)) + pref * dcf)
    return p, dp


def _standard_gamma_grad(alpha, x) -> ember.Tensor:
    """dx/dalpha of a Gamma(alpha, 1) sample x (Note [implicit reparameterization])."""
    a, xv = alpha.detach().to(_F64).reshape(-1), x.detach().to(_F64).reshape(-1)
    grad = ember.zeros_like(xv)
    big = a > _WILSON_HILFERTY_ABOVE
    exact = (~big).nonzero().reshape(-1)
    si, ci = _split(a[exact], xv[exact])
    si, ci = exact[si], exact[ci]
    a_s, x_s = a[si], xv[si]
    s, ds = _series(a_s, x_s)
    g = -(x_s / a_s) * (s * (ember.log(x_s) - ember.digamma(a_s + 1)) + ds)
    grad[si] = ember.where(x_s > 0, g, ember.zeros_like(g))  # x = 0 only by underflow: no gradient
    a_c, x_c = a[ci], xv[ci]
    cf, dcf = _continued_fraction(a_c, x_c)
    grad[ci] = x_c * (cf * (ember.log(x_c) - ember.digamma(a_c)) + dcf)
    # Wilson-Hilferty: x ≈ a (1 - 1/(9a) + z/(3√a))³ with z ~ N(0, 1); hold z fixed.
    bi = big.nonzero().reshape(-1)
    a_b, x_b = a[bi], xv[bi]
    w = (x_b / a_b) ** (1.0 / 3.0)
    z = (w - 1.0 + 1.0 / (9.0 * a_b)) * 3.0 * a_b.sqrt()
    grad[bi] = w ** 3 + 3.0 * a_b * w * w * (1.0 / (9.0 * a_b * a_b) - z / (6.0 * a_b ** 1.5))
    return grad.to(x.dtype).reshape(tuple(x.shape))


class _StandardGamma(Function):
    """Gamma(alpha, 1) samples, differentiable in alpha by implicit reparameterization."""

    @staticmethod
    def forward(ctx, alpha):
        x = _sample_standard_gamma(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad):
        alpha, x = ctx.saved_tensors
        return grad * _standard_gamma_grad(alpha, x)


def standard_gamma(alpha) -> ember.Tensor:
    """Gamma(alpha, 1) samples of alpha's shape; gradients flow to alpha (as torch._standard_gamma)."""
    return _StandardGamma.apply(alpha)


class _GammaInc(Function):
    """The regularized lower incomplete gamma function P(a, x), differentiable in both arguments."""

    @staticmethod
    def forward(ctx, a, x):
        a64, x64 = ember.broadcast_tensors(a.detach().to(_F64), x.detach().to(_F64))
        shape = tuple(a64.shape)
        p, dp = _gammainc_and_grad(a64.reshape(-1), x64.clamp(min=0).reshape(-1))
        ctx.save_for_backward(a, x)
        ctx.dp_da = dp.reshape(shape)
        return p.reshape(shape).to(ember.promote_types(a.dtype, x.dtype))

    @staticmethod
    def backward(ctx, grad):
        a, x = ctx.saved_tensors
        a64, x64 = a.detach().to(_F64), x.detach().to(_F64)
        log_pdf = (a64 - 1) * ember.log(x64) - x64 - ember.lgamma(a64)
        dp_dx = ember.where(x64 > 0, ember.exp(log_pdf), ember.zeros_like(log_pdf))
        grad64 = grad.to(_F64)
        return _reduce_to(grad64 * ctx.dp_da, a), _reduce_to(grad64 * dp_dx, x)


def _reduce_to(g, like):
    """Sums a broadcast gradient back to the shape of `like`, in its dtype."""
    extra = g.dim() - like.dim()
    if extra:
        g = g.sum(tuple(range(extra)))
    dims = tuple(i for i, n in enumerate(like.shape) if n == 1 and g.shape[i] != 1)
    if dims:
        g = g.sum(dims, keepdim=True)
    return g.to(like.dtype)


def gammainc(a, x) -> ember.Tensor:
    """P(a, x) = γ(a, x) / Γ(a), as torch.special.gammainc (and differentiable in a as well)."""
    return _GammaInc.apply(a, x)
