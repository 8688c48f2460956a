"""ember.distributions added for issue 18 (Pareto, Weibull, InverseGamma, Kumaraswamy,
GeneralizedPareto, FisherSnedecor, NegativeBinomial, ContinuousBernoulli, VonMises, ...):
log-densities, moments, CDFs and KL divergences against float64 formulas written here with math and
NumPy (no SciPy, no torch); sample moments within standard-error bounds under a fixed seed;
rsample gradients by gradcheck; validation errors; batch shapes, broadcasting and expand."""

import math
import warnings

import numpy as np
import pytest

import ember
import ember.distributions as D
from ember.autograd import gradcheck

lgamma = np.vectorize(math.lgamma)
gamma_fn = np.vectorize(math.gamma)
EULER = 0.57721566490153286060


def t(*values):
    return ember.tensor(np.asarray(values, dtype=np.float64))


def digamma(x):
    """psi(x) for x > 0: recurrence up to x >= 8, then the asymptotic series."""
    x = np.asarray(x, dtype=np.float64).copy()
    result = np.zeros_like(x)
    while (x < 8).any():
        small = x < 8
        result[small] -= 1 / x[small]
        x[small] += 1
    inv2 = 1 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return result + np.log(x) - 0.5 / x - series


def bessel_i(n, k):
    """I_n(k) = (1/π) ∫_0^π exp(k cos θ) cos(nθ) dθ, by the trapezoid rule (spectrally accurate: periodic)."""
    theta = np.linspace(0, math.pi, 20001)
    y = np.exp(k * np.cos(theta)) * np.cos(n * theta)
    return float(np.sum((y[1:] + y[:-1]) / 2) * (theta[1] - theta[0]) / math.pi)


def close(actual, expected, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(np.asarray(actual.tolist(), dtype=np.float64), np.asarray(expected, dtype=np.float64),
                               rtol=rtol, atol=atol)


# ---------------------------------------------------------------------------------------------
# Each case: the distribution from float64 parameter arrays, values in the support, and the
# reference log-density, mean and variance written from the textbook definitions.

def _pareto_logpdf(x, scale, alpha):
    return np.log(alpha) + alpha * np.log(scale) - (alpha + 1) * np.log(x)


def _weibull_logpdf(x, scale, k):
    return np.log(k / scale) + (k - 1) * np.log(x / scale) - (x / scale) ** k


def _invgamma_logpdf(x, a, b):
    return a * np.log(b) - lgamma(a) - (a + 1) * np.log(x) - b / x


def _kumaraswamy_logpdf(x, a, b):
    return np.log(a * b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-x ** a)


def _gpd_logpdf(x, loc, scale, xi):
    z = (x - loc) / scale
    out = np.empty_like(z)
    zero = xi == 0
    out[zero] = -np.log(scale[zero]) - z[zero]
    nz = ~zero
    out[nz] = -np.log(scale[nz]) - (1 / xi[nz] + 1) * np.log1p(xi[nz] * z[nz])
    return out


def _f_logpdf(x, d1, d2):
    return (0.5 * d1 * np.log(d1 * x) + 0.5 * d2 * np.log(d2) - 0.5 * (d1 + d2) * np.log(d1 * x + d2)
            - np.log(x) - (lgamma(d1 / 2) + lgamma(d2 / 2) - lgamma((d1 + d2) / 2)))


def _cb_log_norm(p):
    """log C(p), C(p) = 2 artanh(1 - 2p) / (1 - 2p), and 2 at p = 1/2."""
    p = np.asarray(p, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        c = np.where(p == 0.5, 2.0, 2 * np.arctanh(1 - 2 * p) / (1 - 2 * p))
    return np.log(c)


def _cb_logpdf(x, p):
    return x * np.log(p) + (1 - x) * np.log1p(-p) + _cb_log_norm(p)


def _cb_moments(p):
    """Mean and variance by integrating the density on a fine grid (independent of the closed forms)."""
    x = np.linspace(0, 1, 200001)
    means, variances = [], []
    for pi in np.atleast_1d(p):
        dens = np.exp(_cb_logpdf(x, pi))
        w = np.full_like(x, x[1] - x[0])
        w[0] = w[-1] = w[0] / 2
        m = np.sum(w * x * dens)
        means.append(m)
        variances.append(np.sum(w * (x - m) ** 2 * dens))
    return np.array(means), np.array(variances)


def _vonmises_logpdf(x, loc, k):
    return k * np.cos(x - loc) - np.log(2 * math.pi * np.array([bessel_i(0, ki) for ki in k]))


def _kumaraswamy_moment(a, b, n):
    return b * gamma_fn(1 + n / a) * gamma_fn(b) / gamma_fn(1 + n / a + b)


CONTINUOUS = {
    "Pareto": (D.Pareto, ([1.0, 2.0], [3.0, 5.0]), [1.5, 4.0], _pareto_logpdf,
               lambda s, a: a * s / (a - 1), lambda s, a: s ** 2 * a / ((a - 1) ** 2 * (a - 2))),
    "Weibull": (D.Weibull, ([1.0, 2.0], [3.0, 0.7]), [1.5, 4.0], _weibull_logpdf,
                lambda s, k: s * gamma_fn(1 + 1 / k),
                lambda s, k: s ** 2 * (gamma_fn(1 + 2 / k) - gamma_fn(1 + 1 / k) ** 2)),
    "InverseGamma": (D.InverseGamma, ([3.5, 4.5], [3.0, 0.7]), [1.5, 0.2], _invgamma_logpdf,
                     lambda a, b: b / (a - 1), lambda a, b: b ** 2 / ((a - 1) ** 2 * (a - 2))),
    "Kumaraswamy": (D.Kumaraswamy, ([2.0, 0.5], [3.0, 1.7]), [0.3, 0.9], _kumaraswamy_logpdf,
                    lambda a, b: _kumaraswamy_moment(a, b, 1),
                    lambda a, b: _kumaraswamy_moment(a, b, 2) - _kumaraswamy_moment(a, b, 1) ** 2),
    "GeneralizedPareto": (D.GeneralizedPareto, ([0.5, 0.5, 0.1], [2.0, 1.0, 1.5], [0.3, 0.0, -0.4]),
                          [1.5, 2.0, 1.0], _gpd_logpdf,
                          lambda loc, s, xi: loc + s / (1 - xi),
                          lambda loc, s, xi: s ** 2 / ((1 - xi) ** 2 * (1 - 2 * xi))),
    "FisherSnedecor": (D.FisherSnedecor, ([3.0, 7.0], [5.0, 9.0]), [1.5, 0.4], _f_logpdf,
                       lambda d1, d2: d2 / (d2 - 2),
                       lambda d1, d2: 2 * d2 ** 2 * (d1 + d2 - 2) / (d1 * (d2 - 2) ** 2 * (d2 - 4))),
    "ContinuousBernoulli": (D.ContinuousBernoulli, ([0.2, 0.5, 0.5004, 0.9],), [0.3, 0.9, 0.1, 0.7], _cb_logpdf,
                            lambda p: _cb_moments(p)[0], lambda p: _cb_moments(p)[1]),
    "VonMises": (D.VonMises, ([0.5, -1.0], [2.0, 30.0]), [0.3, 4.0], _vonmises_logpdf,
                 lambda loc, k: loc,
                 lambda loc, k: 1 - np.array([bessel_i(1, ki) / bessel_i(0, ki) for ki in k])),
}


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_log_prob_mean_variance_match_formulas(name):
    cls, params, x, logpdf, mean, variance = CONTINUOUS[name]
    params = [np.asarray(p, dtype=np.float64) for p in params]
    d = cls(*[t(*p) for p in params])
    assert d.batch_shape == (len(x),)
    x = np.asarray(x, dtype=np.float64)
    # ContinuousBernoulli switches to a Taylor expansion near 1/2; that is accurate to ~1e-9 there
    tol = 1e-8 if name == "ContinuousBernoulli" else 1e-10
    close(d.log_prob(t(*x)), logpdf(x, *params), rtol=tol, atol=tol)
    close(d.mean, mean(*params), rtol=tol, atol=tol)
    close(d.variance, variance(*params), rtol=tol, atol=tol)
    assert d.log_prob(t(*x)).dtype == ember.float64


def _simpson_cdf(logpdf, lower, x, *params):
    grid = np.linspace(lower, x, 20001)
    y = np.exp(logpdf(grid, *[np.full_like(grid, p) for p in params]))
    h = (x - lower) / 20000
    return h / 3 * (y[0] + y[-1] + 4 * y[1:-1:2].sum() + 2 * y[2:-1:2].sum())


def test_cdf_and_icdf_match_integrated_density():
    # Each: distribution, float64 parameters (scalars), lower end of the support, a point.
    cases = [
        (D.GeneralizedPareto, (0.5, 2.0, 0.3), 0.5, 1.7, _gpd_logpdf),
        (D.GeneralizedPareto, (0.1, 1.5, -0.4), 0.1, 2.0, _gpd_logpdf),
        (D.GeneralizedPareto, (0.5, 1.0, 0.0), 0.5, 2.0, _gpd_logpdf),
        (D.ContinuousBernoulli, (0.2,), 0.0, 0.6, _cb_logpdf),
        (D.ContinuousBernoulli, (0.8,), 0.0, 0.3, _cb_logpdf),
        (D.Pareto, (1.5, 2.5), 1.5, 3.0, _pareto_logpdf),
        (D.Weibull, (2.0, 3.0), 1e-300, 1.2, _weibull_logpdf),
        (D.Kumaraswamy, (2.0, 3.0), 1e-300, 0.5, _kumaraswamy_logpdf),
    ]
    for cls, params, lower, x, logpdf in cases:
        d = cls(*[t(p).reshape(()) for p in params])
        expected = _simpson_cdf(lambda g, *ps, logpdf=logpdf: logpdf(g, *[np.asarray(p) for p in ps]), lower, x, *params)
        value = t(x).reshape(())
        cdf = d.cdf(value)
        close(cdf, expected, rtol=1e-8, atol=1e-9)
        close(d.icdf(cdf), x, rtol=1e-8, atol=1e-9)
    # Inside `lims` around 1/2 the CDF is the uniform one, as in PyTorch: within 1e-3 of the true CDF.
    d = D.ContinuousBernoulli(t(0.5002).reshape(()))
    close(d.cdf(t(0.3).reshape(())), 0.3)
    close(d.cdf(t(0.3).reshape(())), _simpson_cdf(_cb_logpdf, 0.0, 0.3, 0.5002), rtol=1e-3)
    close(d.icdf(t(0.3).reshape(())), 0.3)


def test_entropy_matches_numerical_integral():
    cases = [
        (D.Pareto(t(1.5), t(2.5)), lambda x: _pareto_logpdf(x, 1.5, 2.5), 1.5 * np.exp(np.linspace(0, 40, 400001))),
        (D.Weibull(t(2.0), t(1.5)), lambda x: _weibull_logpdf(x, 2.0, 1.5), np.exp(np.linspace(-40, 3, 400001))),
        (D.InverseGamma(t(2.5), t(1.5)), lambda x: _invgamma_logpdf(x, 2.5, 1.5), np.exp(np.linspace(-6, 40, 400001))),
        (D.Kumaraswamy(t(2.0), t(3.0)), lambda x: _kumaraswamy_logpdf(x, 2.0, 3.0), np.linspace(1e-12, 1 - 1e-12, 400001)),
        (D.GeneralizedPareto(t(0.5), t(2.0), t(0.3)),
         lambda x: _gpd_logpdf(x, *(np.full_like(x, v) for v in (0.5, 2.0, 0.3))), 0.5 + np.exp(np.linspace(-30, 60, 400001))),
        (D.ContinuousBernoulli(t(0.2)), lambda x: _cb_logpdf(x, 0.2), np.linspace(0, 1, 400001)),
    ]
    for d, logpdf, grid in cases:
        lp = logpdf(grid)
        y = -np.exp(lp) * lp
        expected = float(np.sum(np.diff(grid) * (y[1:] + y[:-1]) / 2))
        close(d.entropy().reshape(-1), [expected], rtol=1e-6, atol=1e-7)


def test_negative_binomial_pmf_and_moments():
    r, p = np.array([3.0, 0.5, 2.5]), np.array([0.3, 0.4, 0.8])
    d = D.NegativeBinomial(t(*r), probs=t(*p))
    k = np.arange(0, 400, dtype=np.float64)
    for i in range(3):
        logpmf = lgamma(k + r[i]) - lgamma(k + 1) - math.lgamma(r[i]) + k * math.log(p[i]) + r[i] * math.log1p(-p[i])
        lp = D.NegativeBinomial(t(r[i]).reshape(()), probs=t(p[i]).reshape(())).log_prob(t(*k))
        close(lp, logpmf, rtol=1e-10, atol=1e-10)
        pmf = np.exp(logpmf)
        mean = np.sum(k * pmf)
        assert abs(np.sum(pmf) - 1) < 1e-10
        close(d.mean[i], mean, rtol=1e-9)
        close(d.variance[i], np.sum((k - mean) ** 2 * pmf), rtol=1e-9)
    # the logits parameterization: p = sigmoid(logits)
    logits = np.log(p / (1 - p))
    close(D.NegativeBinomial(t(*r), logits=t(*logits)).log_prob(t(2.0, 0.0, 5.0)),
          D.NegativeBinomial(t(*r), probs=t(*p)).log_prob(t(2.0, 0.0, 5.0)), rtol=1e-12)
    # total_count 0 is a point mass at 0
    close(D.NegativeBinomial(t(0.0, 0.0), probs=t(0.3, 0.3)).log_prob(t(0.0, 1.0)), [0.0, -np.inf])
    close(d.mode, np.maximum(np.floor((r - 1) * p / (1 - p)), 0))


def test_modes():
    close(D.Pareto(t(1.5), t(2.0)).mode, [1.5])
    close(D.Weibull(t(2.0), t(3.0)).mode, [2.0 * (2 / 3) ** (1 / 3)])
    close(D.InverseGamma(t(3.0), t(2.0)).mode, [0.5])
    close(D.Kumaraswamy(t(2.0, 0.5), t(3.0, 2.0)).mode, [(1 / 5) ** 0.5, np.nan])
    close(D.GeneralizedPareto(t(0.5), t(2.0), t(0.3)).mode, [0.5])
    close(D.FisherSnedecor(t(4.0, 1.0), t(6.0, 6.0)).mode, [0.5 * 6 / 8, np.nan])
    close(D.VonMises(t(0.7), t(2.0)).mode, [0.7])


def test_undefined_moments():
    close(D.Pareto(t(1.0, 1.0), t(0.5, 1.5)).mean, [np.inf, 3.0])
    close(D.Pareto(t(1.0), t(1.5)).variance, [np.inf])
    close(D.InverseGamma(t(0.5, 1.5), t(1.0, 1.0)).mean, [np.inf, 2.0])
    close(D.InverseGamma(t(1.5), t(1.0)).variance, [np.inf])
    close(D.GeneralizedPareto(t(0.0, 0.0), t(1.0, 1.0), t(1.0, 0.6)).mean, [np.nan, 2.5])
    close(D.GeneralizedPareto(t(0.0), t(1.0), t(0.6)).variance, [np.nan])
    close(D.FisherSnedecor(t(3.0, 3.0), t(2.0, 4.0)).mean, [np.nan, 2.0])
    close(D.FisherSnedecor(t(3.0), t(4.0)).variance, [np.nan])


# ---------------------------------------------------------------------------------------------
# Sampling: sample mean (and second moment where the fourth moment is finite) within 5 standard errors.

N = 40000
SAMPLED = {
    "Pareto": lambda: D.Pareto(t(1.0, 2.0), t(6.0, 9.0)),
    "Weibull": lambda: D.Weibull(t(1.0, 2.0), t(3.0, 0.7)),
    "InverseGamma": lambda: D.InverseGamma(t(6.0, 9.0), t(3.0, 0.7)),
    "Kumaraswamy": lambda: D.Kumaraswamy(t(2.0, 0.5), t(3.0, 1.7)),
    "GeneralizedPareto": lambda: D.GeneralizedPareto(t(0.5, 0.5, 0.1), t(2.0, 1.0, 1.5), t(0.1, 0.0, -0.4)),
    "FisherSnedecor": lambda: D.FisherSnedecor(t(3.0, 7.0), t(12.0, 15.0)),
    "NegativeBinomial": lambda: D.NegativeBinomial(t(3.0, 0.5, 2.5), probs=t(0.3, 0.4, 0.8)),
    "ContinuousBernoulli": lambda: D.ContinuousBernoulli(t(0.2, 0.5, 0.9)),
}


@pytest.mark.parametrize("name", sorted(SAMPLED))
def test_sample_moments(name):
    d = SAMPLED[name]()
    ember.manual_seed(1234)
    x = np.asarray(d.sample((N,)).tolist())
    assert x.shape == (N,) + d.batch_shape
    assert np.all(np.asarray(d.support.check(t(*x.ravel()).reshape(x.shape)).tolist()))
    mean, var = np.asarray(d.mean.tolist()), np.asarray(d.variance.tolist())
    np.testing.assert_array_less(np.abs(x.mean(0) - mean), 5 * np.sqrt(var / N))
    # the sample variance's standard error, from the sample's own fourth central moment
    m4 = ((x - x.mean(0)) ** 4).mean(0)
    np.testing.assert_array_less(np.abs(x.var(0) - var), 5 * np.sqrt((m4 - var ** 2) / N) + 1e-12)


def test_vonmises_sample_circular_moments():
    loc, k = np.array([0.5, -3.0, 2.0]), np.array([2.0, 30.0, 1e-6])
    d = D.VonMises(t(*loc), t(*k))
    ember.manual_seed(7)
    x = np.asarray(d.sample((N,)).tolist())
    assert np.all((x >= -math.pi) & (x < math.pi))
    # E[cos(x - loc)] = I1(k) / I0(k), E[sin(x - loc)] = 0
    ratio = np.array([bessel_i(1, ki) / bessel_i(0, ki) for ki in k])
    c, s = np.cos(x - loc), np.sin(x - loc)
    np.testing.assert_array_less(np.abs(c.mean(0) - ratio), 5 * c.std(0) / math.sqrt(N) + 1e-12)
    np.testing.assert_array_less(np.abs(s.mean(0)), 5 * s.std(0) / math.sqrt(N) + 1e-12)
    assert d.sample().dtype == ember.float64
    assert D.VonMises(ember.tensor([0.0]), ember.tensor([1e-4])).sample((100,)).dtype == ember.float32
    assert not D.VonMises(t(0.0), t(1.0)).has_rsample
    # κ beyond the rejection sampler's precision (drawn as N(loc, 1/κ)), and values that cannot be drawn
    # with validation off: NaN rather than an endless loop
    x = np.asarray(D.VonMises(t(1.0, 0.5, 0.0, math.nan), t(1e200, 1e14, math.nan, 1.0), validate_args=False)
                   .sample((4000,)).tolist())
    assert np.all(x[:, 0] == 1.0) and np.all(np.isnan(x[:, 2:]))
    sd = 1e-7  # 1 / sqrt(κ)
    assert abs(x[:, 1].mean() - 0.5) < 5 * sd / math.sqrt(4000) and abs(x[:, 1].std() / sd - 1) < 5 / math.sqrt(2 * 4000)


# ---------------------------------------------------------------------------------------------
# rsample gradients: the sample as a function of the parameters, at a fixed seed.

RSAMPLED = {
    "Pareto": (D.Pareto, (t(1.0, 2.0), t(3.0, 5.0))),
    "Weibull": (D.Weibull, (t(1.0, 2.0), t(3.0, 0.7))),
    # the rate is a pathwise scale; the concentration's gradient is the gamma sampler's implicit one (below)
    "InverseGamma": (lambda rate: D.InverseGamma(t(3.0, 2.5), rate), (t(3.0, 0.7),)),
    "Kumaraswamy": (D.Kumaraswamy, (t(2.0, 0.5), t(3.0, 1.7))),
    "GeneralizedPareto": (D.GeneralizedPareto, (t(0.5, 0.5), t(2.0, 1.0), t(0.3, -0.4))),
    "ContinuousBernoulli": (D.ContinuousBernoulli, (t(0.2, 0.9),)),
}


@pytest.mark.parametrize("name", sorted(RSAMPLED))
def test_rsample_gradcheck(name):
    cls, params = RSAMPLED[name]
    params = [p.clone().requires_grad_() for p in params]
    assert cls(*params).has_rsample

    def draw(*ps):
        ember.manual_seed(3)
        return cls(*ps).rsample((3,))

    assert gradcheck(draw, params)
    ember.manual_seed(3)
    drawn = cls(*params).sample((3,))  # the same draw, without history
    assert not drawn.requires_grad
    close(drawn, np.asarray(draw(*params).tolist()))


def test_gamma_based_rsample_gradients_are_unbiased():
    """InverseGamma and FisherSnedecor differentiate through the gamma sampler's implicit gradient,
    which is not the derivative of a fixed-seed draw: check d E[x] / d parameter instead."""
    n = 40000
    ember.manual_seed(5)
    a = t(6.0).requires_grad_()
    x = D.InverseGamma(a.expand(n), t(2.0).expand(n)).rsample()
    (g,) = ember.autograd.grad(x.mean(), [a])
    assert g.item() == pytest.approx(-2.0 / 25.0, rel=0.05)  # E[x] = b / (a - 1)
    d1, d2 = t(5.0).requires_grad_(), t(9.0).requires_grad_()
    x = D.FisherSnedecor(d1.expand(n), d2.expand(n)).rsample()
    g1, g2 = ember.autograd.grad(x.mean(), [d1, d2])
    # E[x] = d2 / (d2 - 2): no dependence on d1, d/dd2 = -2 / (d2 - 2)^2
    assert g2.item() == pytest.approx(-2.0 / 49.0, rel=0.15)
    assert abs(g1.item()) < 0.01


def test_log_prob_gradcheck():
    cases = [
        (D.Pareto, (t(1.0, 2.0), t(3.0, 5.0)), t(1.5, 4.0)),
        (D.Weibull, (t(1.0, 2.0), t(3.0, 0.7)), t(1.5, 4.0)),
        (D.InverseGamma, (t(3.0, 2.5), t(3.0, 0.7)), t(1.5, 4.0)),
        (D.Kumaraswamy, (t(2.0, 0.5), t(3.0, 1.7)), t(0.3, 0.9)),
        (D.GeneralizedPareto, (t(0.5, 0.5), t(2.0, 1.0), t(0.3, -0.4)), t(1.5, 1.0)),
        (D.FisherSnedecor, (t(3.0, 7.0), t(5.0, 9.0)), t(1.5, 0.4)),
        (D.ContinuousBernoulli, (t(0.2, 0.9),), t(0.3, 0.6)),
        (D.VonMises, (t(0.5, -1.0), t(2.0, 30.0)), t(0.3, 4.0)),
        (lambda r, p: D.NegativeBinomial(r, probs=p), (t(3.0, 2.5), t(0.3, 0.8)), t(2.0, 5.0)),
    ]
    for cls, params, value in cases:
        params = [p.clone().requires_grad_() for p in params]
        assert gradcheck(lambda *ps, cls=cls, value=value: cls(*ps).log_prob(value), params)


# ---------------------------------------------------------------------------------------------
# KL divergences against numerical integration of p log(p / q).

def _kl_numeric(logp, logq, grid):
    lp, lq = logp(grid), logq(grid)
    y = np.exp(lp) * (lp - lq)
    return float(np.sum(np.diff(grid) * (y[1:] + y[:-1]) / 2))


def _normal_logpdf(x, loc, scale):
    return -((x - loc) ** 2) / (2 * scale ** 2) - math.log(scale) - 0.5 * math.log(2 * math.pi)


def test_kl_closed_forms():
    unit = np.linspace(0, 1, 400001)
    tail = 1.0 * np.exp(np.linspace(0, 60, 600001))
    cases = [
        (D.ContinuousBernoulli(t(0.2)), D.ContinuousBernoulli(t(0.7)),
         lambda x: _cb_logpdf(x, 0.2), lambda x: _cb_logpdf(x, 0.7), unit),
        (D.Pareto(t(1.0), t(3.0)), D.Pareto(t(0.5), t(2.0)),
         lambda x: _pareto_logpdf(x, 1.0, 3.0), lambda x: _pareto_logpdf(x, 0.5, 2.0), tail),
        (D.Beta(t(2.0), t(3.0)), D.ContinuousBernoulli(t(0.3)),
         lambda x: math.log(12) + np.log(x) + 2 * np.log1p(-x), lambda x: _cb_logpdf(x, 0.3), unit[1:-1]),
        (D.ContinuousBernoulli(t(0.3)), D.Exponential(t(2.0)),
         lambda x: _cb_logpdf(x, 0.3), lambda x: math.log(2.0) - 2.0 * x, unit),
        (D.ContinuousBernoulli(t(0.3)), D.Normal(t(0.2), t(1.5)),
         lambda x: _cb_logpdf(x, 0.3), lambda x: _normal_logpdf(x, 0.2, 1.5), unit),
        (D.ContinuousBernoulli(t(0.3)), D.Uniform(t(-0.1), t(1.5)),
         lambda x: _cb_logpdf(x, 0.3), lambda x: np.full_like(x, -math.log(1.6)), unit),
        (D.Uniform(t(0.1), t(0.5)), D.ContinuousBernoulli(t(0.3)),
         lambda x: np.full_like(x, -math.log(0.4)), lambda x: _cb_logpdf(x, 0.3), np.linspace(0.1, 0.5, 100001)),
        (D.Pareto(t(1.0), t(3.0)), D.Exponential(t(2.0)),
         lambda x: _pareto_logpdf(x, 1.0, 3.0), lambda x: math.log(2.0) - 2.0 * x, tail[:400000]),
        (D.Pareto(t(1.0), t(3.0)), D.Gamma(t(2.0), t(1.5)),
         lambda x: _pareto_logpdf(x, 1.0, 3.0), lambda x: 2 * math.log(1.5) + np.log(x) - 1.5 * x, tail[:400000]),
        (D.Pareto(t(1.0), t(3.0)), D.Normal(t(2.0), t(1.5)),
         lambda x: _pareto_logpdf(x, 1.0, 3.0), lambda x: _normal_logpdf(x, 2.0, 1.5), tail[:300000]),
        (D.Uniform(t(1.5), t(3.0)), D.Pareto(t(1.0), t(2.0)),
         lambda x: np.full_like(x, -math.log(1.5)), lambda x: _pareto_logpdf(x, 1.0, 2.0), np.linspace(1.5, 3.0, 100001)),
    ]
    for p, q, logp, logq, grid in cases:
        close(D.kl_divergence(p, q).reshape(-1), [_kl_numeric(logp, logq, grid)], rtol=1e-6, atol=1e-8)


def test_kl_infinite_where_supports_do_not_nest():
    inf = [np.inf, np.inf]
    close(D.kl_divergence(D.Pareto(t(1.0, 1.0), t(2.0, 2.0)), D.Pareto(t(2.0, 0.5), t(2.0, 2.0))),
          [np.inf, math.log(2.0) * 2])
    close(D.kl_divergence(D.Pareto(t(1.0, 1.0), t(0.5, 1.5)), D.Exponential(t(1.0, 1.0)))[0:1], [np.inf])
    close(D.kl_divergence(D.Pareto(t(1.0, 1.0), t(1.5, 2.5)), D.Normal(t(0.0, 0.0), t(1.0, 1.0)))[0:1], [np.inf])
    close(D.kl_divergence(D.Normal(t(0.0, 1.0), t(1.0, 1.0)), D.Pareto(t(1.0, 1.0), t(1.0, 1.0))), inf)
    close(D.kl_divergence(D.Pareto(t(1.0, 1.0), t(3.0, 1.0)), D.ContinuousBernoulli(t(0.3, 0.3))), inf)
    close(D.kl_divergence(D.Gamma(t(1.0, 1.0), t(3.0, 1.0)), D.ContinuousBernoulli(t(0.3, 0.3))), inf)
    close(D.kl_divergence(D.ContinuousBernoulli(t(0.3)), D.Uniform(t(0.1), t(1.0))), [np.inf])
    close(D.kl_divergence(D.Uniform(t(0.5), t(1.5)), D.ContinuousBernoulli(t(0.3))), [np.inf])
    close(D.kl_divergence(D.Uniform(t(0.5), t(1.5)), D.Pareto(t(1.0), t(2.0))), [np.inf])


# ---------------------------------------------------------------------------------------------
# Validation.

def test_invalid_parameters_raise():
    # (construct, parameter, distribution named in the message): as PyTorch, a TransformedDistribution's
    # base distribution validates first, so an invalid Pareto alpha is reported as an Exponential rate.
    bad = [
        (lambda: D.Pareto(t(-1.0), t(1.0)), "scale", "Pareto"),
        (lambda: D.Pareto(t(1.0), t(0.0)), "rate", "Exponential"),
        (lambda: D.Weibull(t(1.0), t(-2.0)), "concentration", "Weibull"),
        (lambda: D.InverseGamma(t(0.0), t(1.0)), "concentration", "Gamma"),
        (lambda: D.Kumaraswamy(t(1.0), t(-1.0)), "concentration0", "Kumaraswamy"),
        (lambda: D.GeneralizedPareto(t(0.0), t(0.0), t(0.1)), "scale", "GeneralizedPareto"),
        (lambda: D.FisherSnedecor(t(1.0), t(-1.0)), "df2", "FisherSnedecor"),
        (lambda: D.NegativeBinomial(t(-1.0), probs=t(0.5)), "total_count", "NegativeBinomial"),
        (lambda: D.NegativeBinomial(t(1.0), probs=t(1.0)), "probs", "NegativeBinomial"),
        (lambda: D.VonMises(t(0.0), t(0.0)), "concentration", "VonMises"),
        (lambda: D.ContinuousBernoulli(logits=t(math.nan)), "logits", "ContinuousBernoulli"),
    ]
    for make, param, owner in bad:
        with pytest.raises(ValueError, match=rf"Expected parameter {param} \(Tensor of shape \(1,\)\) of distribution "
                                             rf"{owner}\(.* to satisfy the constraint"):
            make()
    with pytest.raises(ValueError, match="The parameter probs has invalid values"):
        D.ContinuousBernoulli(t(1.5), validate_args=True)
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        D.NegativeBinomial(t(1.0))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        D.ContinuousBernoulli(probs=t(0.5), logits=t(0.0))
    D.Pareto(t(-1.0), t(1.0), validate_args=False)  # no check when validation is off


def test_values_outside_support_raise():
    outside = [
        (D.Pareto(t(2.0), t(1.0)), t(1.5)),
        (D.Weibull(t(1.0), t(1.0)), t(0.0)),
        (D.InverseGamma(t(1.0), t(1.0)), t(-1.0)),
        (D.Kumaraswamy(t(1.0), t(1.0)), t(1.5)),
        (D.GeneralizedPareto(t(0.0), t(1.0), t(-0.5)), t(2.5)),  # above loc - scale / concentration = 2
        (D.GeneralizedPareto(t(1.0), t(1.0), t(0.5)), t(0.5)),
        (D.FisherSnedecor(t(1.0), t(1.0)), t(0.0)),
        (D.NegativeBinomial(t(3.0), probs=t(0.5)), t(1.5)),
        (D.ContinuousBernoulli(t(0.3)), t(1.1)),
    ]
    for d, value in outside:
        with pytest.raises(ValueError, match=r"Expected value argument \(Tensor of shape \(1,\)\) to be within the support"):
            d.log_prob(value)
    with pytest.raises(ValueError, match="The value argument to log_prob must be a Tensor"):
        D.Pareto(t(1.0), t(1.0)).log_prob(2.0)
    # VonMises is periodic: every real value is in its support
    assert np.isfinite(D.VonMises(t(0.0), t(1.0)).log_prob(t(10.0)).tolist()).all()


# ---------------------------------------------------------------------------------------------
# Shapes.

MAKERS = {
    "Pareto": lambda a, b: D.Pareto(a, b + 1),
    "Weibull": lambda a, b: D.Weibull(a, b),
    "InverseGamma": lambda a, b: D.InverseGamma(a, b),
    "Kumaraswamy": lambda a, b: D.Kumaraswamy(a, b),
    "GeneralizedPareto": lambda a, b: D.GeneralizedPareto(a, b, 0.2),
    "FisherSnedecor": lambda a, b: D.FisherSnedecor(a, b),
    "NegativeBinomial": lambda a, b: D.NegativeBinomial(a, probs=b / (b + 1)),
    "ContinuousBernoulli": lambda a, b: D.ContinuousBernoulli(a / (a + b)),
    "VonMises": lambda a, b: D.VonMises(a, b),
}


@pytest.mark.parametrize("name", sorted(MAKERS))
def test_broadcast_and_expand(name):
    a = ember.tensor([[0.5], [1.5], [2.5]], dtype=ember.float64)  # (3, 1)
    b = ember.tensor([1.0, 2.0], dtype=ember.float64)  # (2,)
    d = MAKERS[name](a, b)
    assert d.batch_shape == (3, 2) and d.event_shape == ()
    assert tuple(d.sample((4,)).shape) == (4, 3, 2)
    assert tuple(d.mean.shape) == (3, 2)
    x = d.sample()
    assert tuple(d.log_prob(x).shape) == (3, 2)
    e = d.expand((5, 3, 2))
    assert type(e) is type(d) and e.batch_shape == (5, 3, 2)
    assert tuple(e.sample((2,)).shape) == (2, 5, 3, 2)
    close(e.log_prob(x), np.broadcast_to(np.asarray(d.log_prob(x).tolist()), (5, 3, 2)), rtol=1e-12)
    close(e.variance, np.broadcast_to(np.asarray(d.variance.tolist()), (5, 3, 2)), rtol=1e-12)
    # a 0-dim parameter set gives batch shape ()
    s = MAKERS[name](ember.tensor(1.5, dtype=ember.float64), ember.tensor(2.0, dtype=ember.float64))
    assert s.batch_shape == () and tuple(s.sample((3,)).shape) == (3,)
    # non-contiguous (transposed) parameters give the same values as contiguous copies
    at = ember.tensor([[0.5, 1.5], [2.5, 3.5]], dtype=ember.float64).t()
    bt = ember.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ember.float64).t()
    assert not at.is_contiguous()
    x = MAKERS[name](at.contiguous(), bt.contiguous()).sample()
    close(MAKERS[name](at, bt).log_prob(x), np.asarray(MAKERS[name](at.contiguous(), bt.contiguous()).log_prob(x).tolist()))
    # zero-size batches
    z = MAKERS[name](ember.ones((0, 1), dtype=ember.float64), b)
    assert z.batch_shape == (0, 2) and tuple(z.sample((4,)).shape) == (4, 0, 2)
    assert tuple(z.log_prob(z.sample()).shape) == (0, 2)


def test_python_number_parameters():
    assert D.Pareto(1.0, 2.0).batch_shape == ()
    assert D.FisherSnedecor(3.0, 4.0).batch_shape == ()
    assert D.GeneralizedPareto(0.0, 1.0, 0.1).batch_shape == ()
    assert D.ContinuousBernoulli(0.3).batch_shape == ()
    assert D.VonMises(0.0, 1.0).batch_shape == ()
    assert D.Pareto(1.0, 2.0).sample().dtype == ember.get_default_dtype()


def test_module_paths_match_torch():
    from ember.distributions.continuous_bernoulli import ContinuousBernoulli
    from ember.distributions.fishersnedecor import FisherSnedecor
    from ember.distributions.generalized_pareto import GeneralizedPareto
    from ember.distributions.inverse_gamma import InverseGamma
    from ember.distributions.kumaraswamy import Kumaraswamy
    from ember.distributions.negative_binomial import NegativeBinomial
    from ember.distributions.pareto import Pareto
    from ember.distributions.von_mises import VonMises
    from ember.distributions.weibull import Weibull
    assert (Pareto, Weibull, InverseGamma, Kumaraswamy, GeneralizedPareto, FisherSnedecor, NegativeBinomial,
            ContinuousBernoulli, VonMises) == (D.Pareto, D.Weibull, D.InverseGamma, D.Kumaraswamy,
                                               D.GeneralizedPareto, D.FisherSnedecor, D.NegativeBinomial,
                                               D.ContinuousBernoulli, D.VonMises)


# ---------------------------------------------------------------------------------------------
# Relaxed (Concrete) distributions, LogisticNormal, MixtureSameFamily, LowRankMultivariateNormal.

def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _logit_relaxed_logpdf(y, temperature, logits):
    """Y = (L + logits) / T with L standard logistic: T times the logistic density at T y - logits."""
    u = temperature * y - logits
    return math.log(temperature) - u - 2 * np.log1p(np.exp(-u))


def _concrete_logpdf(x, temperature, probs):
    """Maddison et al. (2017), eq. 1: (k-1)! T^(k-1) Π π_i x_i^(-T-1) / (Σ π_i x_i^(-T))^k."""
    k = x.shape[-1]
    return (math.lgamma(k) + (k - 1) * math.log(temperature) + np.sum(np.log(probs) - (temperature + 1) * np.log(x), -1)
            - k * np.log(np.sum(probs * x ** -temperature, -1)))


def test_relaxed_bernoulli():
    temperature, probs = 0.7, np.array([0.3, 0.8])
    logits = np.log(probs / (1 - probs))
    y = np.array([0.4, -1.3])
    base = D.relaxed_bernoulli.LogitRelaxedBernoulli(t(temperature), probs=t(*probs))
    close(base.log_prob(t(*y)), _logit_relaxed_logpdf(y, temperature, logits))
    d = D.RelaxedBernoulli(t(temperature), logits=t(*logits))
    z = np.array([0.2, 0.6])
    # change of variables through the sigmoid: p(z) = p_Y(logit z) / (z (1 - z))
    close(d.log_prob(t(*z)), _logit_relaxed_logpdf(np.log(z / (1 - z)), temperature, logits) - np.log(z * (1 - z)))
    close(d.probs, probs)
    close(d.temperature, temperature)
    assert d.has_rsample and not base.has_rsample  # as PyTorch's classes declare
    assert d.batch_shape == (2,) and d.event_shape == ()
    # P(Z > 1/2) = P(L > -logits) = probs, whatever the temperature
    ember.manual_seed(11)
    x = np.asarray(d.sample((N,)).tolist())
    assert np.all((x >= 0) & (x <= 1))
    np.testing.assert_array_less(np.abs((x > 0.5).mean(0) - probs), 5 * np.sqrt(probs * (1 - probs) / N))


def test_relaxed_one_hot_categorical():
    temperature, probs = 0.7, np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    x = np.array([[0.1, 0.6, 0.3], [0.25, 0.25, 0.5]])
    d = D.RelaxedOneHotCategorical(t(temperature), probs=t(*probs.ravel()).reshape(2, 3))
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    close(d.log_prob(t(*x.ravel()).reshape(2, 3)), _concrete_logpdf(x, temperature, probs))
    base = D.relaxed_categorical.ExpRelaxedCategorical(t(temperature), logits=t(*np.log(probs).ravel()).reshape(2, 3))
    # the log-space density: the Concrete density times the Jacobian Π x_i of x = exp(y)
    close(base.log_prob(t(*np.log(x).ravel()).reshape(2, 3)), _concrete_logpdf(x, temperature, probs) + np.log(x).sum(-1))
    # Gumbel-max: the largest coordinate is i with probability π_i
    ember.manual_seed(12)
    s = np.asarray(d.sample((N,)).tolist())
    np.testing.assert_allclose(s.sum(-1), 1, atol=1e-12)
    freq = np.stack([(s.argmax(-1) == i).mean(0) for i in range(3)], -1)
    np.testing.assert_array_less(np.abs(freq - probs), 5 * np.sqrt(probs * (1 - probs) / N))


def _stick_breaking_inverse(x):
    """y with StickBreakingTransform(y) = x, and log|det dx/dy| (x: (..., n+1) on the simplex)."""
    n = x.shape[-1] - 1
    remaining = 1 - np.concatenate([np.zeros(x.shape[:-1] + (1,)), np.cumsum(x[..., :-1], -1)], -1)[..., :n]
    z = x[..., :n] / remaining
    y = np.log(z / (1 - z)) + np.log(n - np.arange(n))  # the transform offsets by log(n - i) so y = 0 is the centre
    return y, np.sum(np.log(z * (1 - z)) + np.log(remaining), -1)


def test_logistic_normal():
    loc, scale = np.array([0.2, -0.5]), np.array([0.7, 1.3])
    d = D.LogisticNormal(t(*loc), t(*scale))
    assert d.batch_shape == () and d.event_shape == (3,)
    x = np.array([[0.1, 0.6, 0.3], [0.5, 0.2, 0.3]])
    y, log_det = _stick_breaking_inverse(x)
    normal = np.sum(-((y - loc) ** 2) / (2 * scale ** 2) - np.log(scale) - 0.5 * math.log(2 * math.pi), -1)
    close(d.log_prob(t(*x.ravel()).reshape(2, 3)), normal - log_det)
    close(d.loc, loc)
    close(d.scale, scale)
    # a scalar loc and scale: a 2-simplex
    assert D.LogisticNormal(0.0, 1.0).event_shape == (2,)
    # samples map back to Normal(loc, scale)
    ember.manual_seed(13)
    s = np.asarray(d.sample((N,)).tolist())
    np.testing.assert_allclose(s.sum(-1), 1, atol=1e-12)
    y, _ = _stick_breaking_inverse(s)
    np.testing.assert_array_less(np.abs(y.mean(0) - loc), 5 * scale / math.sqrt(N))
    np.testing.assert_array_less(np.abs(y.var(0) - scale ** 2), 5 * scale ** 2 * math.sqrt(2 / N))
    with pytest.raises(NotImplementedError):
        d.mean  # noqa: B018 - PyTorch has no closed form either


def _normal_cdf(x, loc, scale):
    return 0.5 * (1 + np.vectorize(math.erf)((x - loc) / (scale * math.sqrt(2))))


def test_mixture_same_family_scalar_components():
    w, mu, sd = np.array([0.2, 0.3, 0.5]), np.array([-1.0, 0.0, 2.0]), np.array([0.5, 1.0, 2.0])
    d = D.MixtureSameFamily(D.Categorical(probs=t(*w)), D.Normal(t(*mu), t(*sd)))
    assert d.batch_shape == () and d.event_shape == () and not d.has_rsample
    x = np.array([0.3, 1.5, -4.0])
    dens = np.sum(w * np.exp(-((x[:, None] - mu) ** 2) / (2 * sd ** 2)) / (sd * math.sqrt(2 * math.pi)), -1)
    close(d.log_prob(t(*x)), np.log(dens))
    close(d.cdf(t(*x)), np.sum(w * _normal_cdf(x[:, None], mu, sd), -1))
    mean = np.sum(w * mu)
    close(d.mean, mean)
    close(d.variance, np.sum(w * (sd ** 2 + mu ** 2)) - mean ** 2)
    assert repr(d).startswith("MixtureSameFamily(\n  Categorical(")
    ember.manual_seed(14)
    s = np.asarray(d.sample((N,)).tolist())
    var = np.sum(w * (sd ** 2 + mu ** 2)) - mean ** 2
    assert abs(s.mean() - mean) < 5 * math.sqrt(var / N)
    m4 = ((s - s.mean()) ** 4).mean()
    assert abs(s.var() - var) < 5 * math.sqrt((m4 - var ** 2) / N)


def test_mixture_same_family_vector_components_and_batches():
    # batch of 2 mixtures of 3 two-dimensional diagonal normals
    w = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]])
    mu = np.arange(12, dtype=np.float64).reshape(2, 3, 2) / 4 - 1
    sd = 0.5 + np.arange(12, dtype=np.float64).reshape(2, 3, 2) / 10
    comp = D.Independent(D.Normal(t(*mu.ravel()).reshape(2, 3, 2), t(*sd.ravel()).reshape(2, 3, 2)), 1)
    d = D.MixtureSameFamily(D.Categorical(probs=t(*w.ravel()).reshape(2, 3)), comp)
    assert d.batch_shape == (2,) and d.event_shape == (2,)
    x = np.array([[0.3, -0.2], [1.0, 2.0]])
    comp_logpdf = np.sum(-((x[:, None, :] - mu) ** 2) / (2 * sd ** 2) - np.log(sd) - 0.5 * math.log(2 * math.pi), -1)
    close(d.log_prob(t(*x.ravel()).reshape(2, 2)), np.log(np.sum(w * np.exp(comp_logpdf), -1)))
    mean = np.sum(w[..., None] * mu, 1)
    close(d.mean, mean)
    close(d.variance, np.sum(w[..., None] * (sd ** 2 + mu ** 2), 1) - mean ** 2)
    assert tuple(d.sample((5,)).shape) == (5, 2, 2)
    e = d.expand((4, 2))
    assert e.batch_shape == (4, 2) and tuple(e.sample((3,)).shape) == (3, 4, 2, 2)
    close(e.log_prob(t(*x.ravel()).reshape(2, 2)),
          np.broadcast_to(np.asarray(d.log_prob(t(*x.ravel()).reshape(2, 2)).tolist()), (4, 2)))
    # the support checks the value against the component support
    assert isinstance(d.support, D.constraints.MixtureSameFamilyConstraint)
    with pytest.raises(ValueError, match="Expected value argument"):
        D.MixtureSameFamily(D.Categorical(probs=t(0.5, 0.5)), D.Gamma(t(1.0, 2.0), t(1.0, 1.0))).log_prob(t(-1.0))


def test_mixture_same_family_errors():
    with pytest.raises(ValueError, match="The Mixture distribution needs to be an  instance of "):
        D.MixtureSameFamily(D.Normal(0.0, 1.0), D.Normal(t(0.0, 1.0), t(1.0, 1.0)))
    with pytest.raises(ValueError, match="The Component distribution needs to be an instance of "):
        D.MixtureSameFamily(D.Categorical(probs=t(0.5, 0.5)), t(0.0, 1.0))
    with pytest.raises(ValueError, match=r"`mixture_distribution component` \(2\) does not equal "
                                         r"`component_distribution.batch_shape\[-1\]` \(3\)"):
        D.MixtureSameFamily(D.Categorical(probs=t(0.5, 0.5)), D.Normal(t(0.0, 1.0, 2.0), t(1.0, 1.0, 1.0)))
    with pytest.raises(ValueError, match=r"`mixture_distribution.batch_shape` \(\(3,\)\) is not compatible"):
        D.MixtureSameFamily(D.Categorical(probs=ember.ones(3, 2, dtype=ember.float64)),
                            D.Normal(ember.zeros(4, 2, dtype=ember.float64), ember.ones(4, 2, dtype=ember.float64)))


LR_W = np.array([[0.5, -0.2], [0.3, 1.0], [-0.7, 0.1]])
LR_D = np.array([0.4, 1.2, 0.9])
LR_MU = np.array([0.1, -0.3, 0.5])


def _mvn_logpdf(x, mu, cov):
    diff = x - mu
    return -0.5 * (len(mu) * math.log(2 * math.pi) + np.linalg.slogdet(cov)[1] + diff @ np.linalg.solve(cov, diff))


def _lowrank(mu=LR_MU, w=LR_W, d=LR_D, **kw):
    return D.LowRankMultivariateNormal(t(*mu), t(*w.ravel()).reshape(w.shape), t(*d), **kw)


def test_lowrank_multivariate_normal():
    d = _lowrank()
    cov = LR_W @ LR_W.T + np.diag(LR_D)
    assert d.batch_shape == () and d.event_shape == (3,)
    x = np.array([0.3, -0.1, 0.7])
    close(d.log_prob(t(*x)), _mvn_logpdf(x, LR_MU, cov))
    close(d.entropy(), 0.5 * (3 * (1 + math.log(2 * math.pi)) + np.linalg.slogdet(cov)[1]))
    close(d.mean, LR_MU)
    close(d.mode, LR_MU)
    close(d.variance, np.diag(cov))
    close(d.covariance_matrix, cov)
    close(d.precision_matrix, np.linalg.inv(cov))
    lower = np.asarray(d.scale_tril.tolist())
    np.testing.assert_allclose(np.triu(lower, 1), 0)
    close(d.scale_tril, np.linalg.cholesky(cov))
    # samples: mean and covariance within standard errors
    ember.manual_seed(15)
    s = np.asarray(d.sample((N,)).tolist())
    np.testing.assert_array_less(np.abs(s.mean(0) - LR_MU), 5 * np.sqrt(np.diag(cov) / N))
    sample_cov = np.cov(s.T)
    se = np.sqrt((cov ** 2 + np.outer(np.diag(cov), np.diag(cov))) / N)  # Gaussian: Var(s_ij) = (σ_ij² + σ_ii σ_jj)/N
    np.testing.assert_array_less(np.abs(sample_cov - cov), 5 * se)


def test_lowrank_batches_and_expand():
    mu = np.stack([LR_MU, -LR_MU])  # (2, 3), broadcast against one cov_factor
    d = D.LowRankMultivariateNormal(t(*mu.ravel()).reshape(2, 3), t(*LR_W.ravel()).reshape(3, 2), t(*LR_D))
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    cov = LR_W @ LR_W.T + np.diag(LR_D)
    x = np.array([0.3, -0.1, 0.7])
    close(d.log_prob(t(*x)), [_mvn_logpdf(x, m, cov) for m in mu])
    assert tuple(d.covariance_matrix.shape) == (2, 3, 3) and tuple(d.cov_factor.shape) == (2, 3, 2)
    e = d.expand((4, 2))
    assert e.batch_shape == (4, 2) and tuple(e.rsample((5,)).shape) == (5, 4, 2, 3)
    close(e.log_prob(t(*x)), np.broadcast_to([_mvn_logpdf(x, m, cov) for m in mu], (4, 2)))
    assert tuple(e.entropy().shape) == (4, 2)


def test_lowrank_errors():
    with pytest.raises(ValueError, match="loc must be at least one-dimensional."):
        D.LowRankMultivariateNormal(t(0.0).reshape(()), t(1.0).reshape(1, 1), t(1.0))
    with pytest.raises(ValueError, match="cov_factor must be at least two-dimensional, with optional leading batch"):
        D.LowRankMultivariateNormal(t(0.0, 1.0), t(1.0, 2.0), t(1.0, 1.0))
    with pytest.raises(ValueError, match="cov_factor must be a batch of matrices with shape 2 x m"):
        D.LowRankMultivariateNormal(t(0.0, 1.0), t(1.0, 2.0, 3.0).reshape(3, 1), t(1.0, 1.0))
    with pytest.raises(ValueError, match=r"cov_diag must be a batch of vectors with shape \(2,\)"):
        D.LowRankMultivariateNormal(t(0.0, 1.0), t(1.0, 2.0).reshape(2, 1), t(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match=r"Incompatible batch shapes: loc \(3, 2\), cov_factor \(4, 2, 1\)"):
        D.LowRankMultivariateNormal(ember.zeros(3, 2, dtype=ember.float64), ember.ones(4, 2, 1, dtype=ember.float64),
                                    ember.ones(2, dtype=ember.float64))
    with pytest.raises(ValueError, match=r"Expected value argument \(Tensor of shape \(2,\)\) to be within the support"):
        D.LowRankMultivariateNormal(t(0.0, 1.0), t(1.0, 2.0).reshape(2, 1), t(1.0, 1.0)).log_prob(t(0.0, math.nan))


def _kl_gauss(mu_p, cov_p, mu_q, cov_q):
    n = len(mu_p)
    diff = mu_q - mu_p
    return 0.5 * (np.linalg.slogdet(cov_q)[1] - np.linalg.slogdet(cov_p)[1] + np.trace(np.linalg.solve(cov_q, cov_p))
                  + diff @ np.linalg.solve(cov_q, diff) - n)


def test_lowrank_kl():
    w2, d2, mu2 = np.array([[0.1, 0.4], [-0.3, 0.2], [0.6, 0.0]]), np.array([0.8, 0.5, 1.1]), np.array([-0.2, 0.4, 0.0])
    lower = np.array([[1.0, 0, 0], [0.3, 0.8, 0], [-0.2, 0.4, 1.3]])
    p, q = _lowrank(), _lowrank(mu2, w2, d2)
    mvn = D.MultivariateNormal(t(*mu2), scale_tril=t(*lower.ravel()).reshape(3, 3))
    cov_p, cov_q, cov_m = LR_W @ LR_W.T + np.diag(LR_D), w2 @ w2.T + np.diag(d2), lower @ lower.T
    close(D.kl_divergence(p, q), _kl_gauss(LR_MU, cov_p, mu2, cov_q))
    close(D.kl_divergence(mvn, p), _kl_gauss(mu2, cov_m, LR_MU, cov_p))
    close(D.kl_divergence(p, mvn), _kl_gauss(LR_MU, cov_p, mu2, cov_m))
    close(D.kl_divergence(p, p), 0.0, atol=1e-12)
    with pytest.raises(ValueError, match="with different event shapes cannot be computed"):
        D.kl_divergence(p, D.LowRankMultivariateNormal(t(0.0, 1.0), t(1.0, 2.0).reshape(2, 1), t(1.0, 1.0)))


def test_more_rsample_gradcheck():
    cases = [
        (lambda temp, p: D.RelaxedBernoulli(temp, probs=p), (t(0.7), t(0.3, 0.8))),
        (lambda temp, lg: D.RelaxedOneHotCategorical(temp, logits=lg), (t(0.7), t(0.2, -0.3, 0.5))),
        (D.LogisticNormal, (t(0.2, -0.5), t(0.7, 1.3))),
        (D.LowRankMultivariateNormal, (t(*LR_MU), t(*LR_W.ravel()).reshape(3, 2), t(*LR_D))),
    ]
    for make, params in cases:
        params = [p.clone().requires_grad_() for p in params]
        assert make(*params).has_rsample

        def draw(*ps, make=make):
            ember.manual_seed(4)
            return make(*ps).rsample((3,))

        assert gradcheck(draw, params)
    # log_prob of the low-rank normal in its three parameters
    params = [t(*LR_MU).requires_grad_(), t(*LR_W.ravel()).reshape(3, 2).requires_grad_(), t(*LR_D).requires_grad_()]
    assert gradcheck(lambda *ps: D.LowRankMultivariateNormal(*ps).log_prob(t(0.3, -0.1, 0.7)), params)


def test_more_module_paths_match_torch():
    from ember.distributions.logistic_normal import LogisticNormal
    from ember.distributions.lowrank_multivariate_normal import LowRankMultivariateNormal
    from ember.distributions.mixture_same_family import MixtureSameFamily
    from ember.distributions.relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
    from ember.distributions.relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
    assert (LogisticNormal, LowRankMultivariateNormal, MixtureSameFamily, RelaxedBernoulli, RelaxedOneHotCategorical) == (
        D.LogisticNormal, D.LowRankMultivariateNormal, D.MixtureSameFamily, D.RelaxedBernoulli, D.RelaxedOneHotCategorical)
    assert issubclass(LogitRelaxedBernoulli, D.Distribution) and issubclass(ExpRelaxedCategorical, D.Distribution)


def test_relaxed_and_logistic_normal_shapes_and_validation():
    temp = t(0.5).reshape(())
    d = D.RelaxedBernoulli(temp, probs=ember.full((3, 1), 0.3, dtype=ember.float64))
    e = d.expand((3, 4))
    assert e.batch_shape == (3, 4) and tuple(e.rsample((2,)).shape) == (2, 3, 4)
    x = e.sample()
    close(e.log_prob(x), np.asarray(D.RelaxedBernoulli(temp, probs=ember.full((3, 4), 0.3, dtype=ember.float64))
                                    .log_prob(x).tolist()))
    c = D.RelaxedOneHotCategorical(temp, logits=ember.zeros(2, 1, 3, dtype=ember.float64)).expand((2, 5))
    assert c.batch_shape == (2, 5) and c.event_shape == (3,) and tuple(c.sample((4,)).shape) == (4, 2, 5, 3)
    ln = D.LogisticNormal(ember.zeros(4, 2, dtype=ember.float64), ember.ones(2, dtype=ember.float64))
    assert ln.batch_shape == (4,) and ln.event_shape == (3,)
    assert ln.expand((6, 4)).batch_shape == (6, 4) and tuple(ln.expand((6, 4)).sample().shape) == (6, 4, 3)
    assert D.RelaxedBernoulli(temp, probs=t(0.3)).sample().dtype == ember.float64
    with pytest.raises(ValueError, match=r"Expected parameter probs \(Tensor of shape \(1,\)\) of distribution "
                                         r"LogitRelaxedBernoulli\("):
        D.RelaxedBernoulli(temp, probs=t(1.5))
    with pytest.raises(ValueError, match="Either `probs` or `logits` must be specified, but not both."):
        D.RelaxedBernoulli(temp)
    with pytest.raises(ValueError, match=r"Expected parameter scale \(Tensor of shape \(1,\)\) of distribution Normal\("):
        D.LogisticNormal(t(0.0), t(-1.0))
    with pytest.raises(ValueError, match=r"Expected value argument \(Tensor of shape \(1,\)\) to be within the support "
                                         r"\(Interval\(lower_bound=0.0, upper_bound=1.0\)\) of the distribution RelaxedBernoulli"):
        D.RelaxedBernoulli(temp, probs=t(0.5)).log_prob(t(1.5))
    with pytest.raises(ValueError, match=r"to be within the support \(Simplex\(\)\) of the distribution LogisticNormal"):
        D.LogisticNormal(t(0.0), t(1.0)).log_prob(t(0.5, 0.6))


# ---------------------------------------------------------------------------------------------
# Wishart and LKJCholesky.

WS_COV = np.array([[2.0, 0.3, -0.4], [0.3, 1.5, 0.2], [-0.4, 0.2, 1.0]])
WS_X = np.array([[3.0, 0.5, 0.1], [0.5, 2.0, -0.3], [0.1, -0.3, 1.5]])


def _log_mvgamma(a, p):
    """log Γ_p(a) = p(p-1)/4 log π + Σ_{j<p} log Γ(a - j/2)."""
    return p * (p - 1) / 4 * math.log(math.pi) + sum(math.lgamma(a - j / 2) for j in range(p))


def _wishart_logpdf(x, nu, cov):
    p = cov.shape[-1]
    return ((nu - p - 1) / 2 * np.linalg.slogdet(x)[1] - np.trace(np.linalg.solve(cov, x)) / 2
            - nu * p / 2 * math.log(2) - nu / 2 * np.linalg.slogdet(cov)[1] - _log_mvgamma(nu / 2, p))


def _m(a):
    return t(*np.asarray(a).ravel()).reshape(np.asarray(a).shape)


@pytest.mark.parametrize("param", ["covariance_matrix", "precision_matrix", "scale_tril"])
def test_wishart_density_moments_entropy(param):
    given = {"covariance_matrix": WS_COV, "precision_matrix": np.linalg.inv(WS_COV),
             "scale_tril": np.linalg.cholesky(WS_COV)}[param]
    nus = np.array([4.5, 6.0])
    d = D.Wishart(t(*nus), **{param: _m(given)})
    assert d.batch_shape == (2,) and d.event_shape == (3, 3)
    close(d.log_prob(_m(WS_X)), [_wishart_logpdf(WS_X, nu, WS_COV) for nu in nus], rtol=1e-9)
    close(d.mean, [nu * WS_COV for nu in nus], rtol=1e-9)
    close(d.variance, [nu * (WS_COV ** 2 + np.outer(np.diag(WS_COV), np.diag(WS_COV))) for nu in nus], rtol=1e-9)
    close(d.mode, [(nu - 4) * WS_COV for nu in nus], rtol=1e-9)
    close(d.covariance_matrix, np.broadcast_to(WS_COV, (2, 3, 3)), rtol=1e-9)
    close(d.precision_matrix, np.broadcast_to(np.linalg.inv(WS_COV), (2, 3, 3)), rtol=1e-9)
    close(d.scale_tril, np.broadcast_to(np.linalg.cholesky(WS_COV), (2, 3, 3)), rtol=1e-9)
    # H = (p+1)/2 log det Σ + p(p+1)/2 log 2 + log Γ_p(ν/2) - (ν-p-1)/2 ψ_p(ν/2) + ν p / 2
    p = 3
    entropy = [(p + 1) / 2 * np.linalg.slogdet(WS_COV)[1] + p * (p + 1) / 2 * math.log(2) + _log_mvgamma(nu / 2, p)
               - (nu - p - 1) / 2 * float(np.sum(digamma(nu / 2 - np.arange(p) / 2))) + nu * p / 2 for nu in nus]
    close(d.entropy(), entropy, rtol=1e-9)


def test_wishart_sampling():
    nus = np.array([4.5, 8.0])
    d = D.Wishart(t(*nus), covariance_matrix=_m(WS_COV))
    ember.manual_seed(16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # positive definite draws are not redrawn, nor warned about
        s = np.asarray(d.sample((N,)).tolist())
    assert s.shape == (N, 2, 3, 3)
    assert np.all(np.linalg.eigvalsh(s) > 0)
    np.testing.assert_allclose(s, np.swapaxes(s, -1, -2))
    mean, var = np.asarray(d.mean.tolist()), np.asarray(d.variance.tolist())
    np.testing.assert_array_less(np.abs(s.mean(0) - mean), 5 * np.sqrt(var / N))
    m4 = ((s - s.mean(0)) ** 4).mean(0)
    np.testing.assert_array_less(np.abs(s.var(0) - var), 5 * np.sqrt((m4 - var ** 2) / N))
    # expand, and a scalar df against a batch of matrices
    e = d.expand((5, 2))
    assert e.batch_shape == (5, 2) and tuple(e.sample((3,)).shape) == (3, 5, 2, 3, 3)
    close(e.log_prob(_m(WS_X)), np.broadcast_to([_wishart_logpdf(WS_X, nu, WS_COV) for nu in nus], (5, 2)), rtol=1e-9)
    b = D.Wishart(5.0, covariance_matrix=_m(np.stack([WS_COV, 2 * WS_COV])))
    assert b.batch_shape == (2,) and tuple(b.df.shape) == ()
    close(b.log_prob(_m(WS_X)), [_wishart_logpdf(WS_X, 5.0, WS_COV), _wishart_logpdf(WS_X, 5.0, 2 * WS_COV)], rtol=1e-9)


def test_wishart_rsample_gradients():
    lower = _m(np.linalg.cholesky(WS_COV)).requires_grad_()

    def draw(scale_tril):
        ember.manual_seed(6)
        return D.Wishart(t(5.0), scale_tril=scale_tril.tril()).rsample((2,))  # the upper part is not a parameter

    assert gradcheck(draw, (lower,))
    # df enters through the Bartlett factor's Chi2 (implicit gradient): d E[X] / d df = Σ
    n = 20000
    df = t(5.0).requires_grad_()
    ember.manual_seed(9)
    x = D.Wishart(df.expand(n), covariance_matrix=_m(WS_COV)).rsample()
    (g,) = ember.autograd.grad(x[:, 0, 0].mean(), [df])
    assert g.item() == pytest.approx(WS_COV[0, 0], rel=0.06)
    assert gradcheck(lambda s: D.Wishart(t(5.0), scale_tril=s.tril()).log_prob(_m(WS_X)), (lower,))


def test_wishart_errors():
    eye = ember.eye(3, dtype=ember.float64)
    with pytest.raises(AssertionError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        D.Wishart(t(5.0))
    with pytest.raises(AssertionError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        D.Wishart(t(5.0), covariance_matrix=eye, scale_tril=eye)
    with pytest.raises(ValueError, match="scale_tril must be at least two-dimensional, with optional leading batch"):
        D.Wishart(t(5.0), covariance_matrix=ember.ones(3, dtype=ember.float64))
    with pytest.raises(ValueError, match=r"Value of df=1.0 expected to be greater than ndim - 1 = 2."):
        D.Wishart(1.0, covariance_matrix=eye)
    with pytest.warns(UserWarning, match="Low df values detected. Singular samples are highly likely"):
        D.Wishart(2.5, covariance_matrix=eye)
    with pytest.raises(ValueError, match=r"Expected parameter covariance_matrix \(Tensor of shape \(3, 3\)\) of "
                                         r"distribution Wishart\(.* to satisfy the constraint PositiveDefinite\(\)"):
        D.Wishart(5.0, covariance_matrix=_m(np.diag([1.0, -1.0, 1.0])), validate_args=True)
    with pytest.raises(ValueError, match=r"Expected value argument \(Tensor of shape \(3, 3\)\) to be within the "
                                         r"support \(PositiveDefinite\(\)\)"):
        D.Wishart(5.0, covariance_matrix=eye).log_prob(_m(np.diag([1.0, -1.0, 1.0])))


def _lkj_log_normalizer(dim, eta):
    """Row i (1-based, i >= 2) of L is free in the unit (i-1)-ball with weight (1 - |row|^2)^(a_i),
    a_i = (2(η-1) + dim - i) / 2, whose integral is π^((i-1)/2) Γ(a_i + 1) / Γ(a_i + 1 + (i-1)/2)."""
    total = 0.0
    for i in range(2, dim + 1):
        a = (2 * (eta - 1) + dim - i) / 2
        total += (i - 1) / 2 * math.log(math.pi) + math.lgamma(a + 1) - math.lgamma(a + 1 + (i - 1) / 2)
    return total


def _lkj_logpdf(lower, eta):
    dim = lower.shape[-1]
    diag = np.diagonal(lower, axis1=-2, axis2=-1)[..., 1:]
    powers = 2 * (eta - 1) + dim - np.arange(2, dim + 1)
    return np.sum(powers * np.log(diag), -1) - _lkj_log_normalizer(dim, eta)


def test_lkj_cholesky_log_prob():
    corr = np.array([[1.0, 0.3, -0.2, 0.1], [0.3, 1.0, 0.4, 0.0], [-0.2, 0.4, 1.0, 0.2], [0.1, 0.0, 0.2, 1.0]])
    lower = np.linalg.cholesky(corr)
    for dim in (2, 3, 4):
        sub = np.linalg.cholesky(corr[:dim, :dim])
        etas = np.array([0.5, 1.0, 2.5])
        d = D.LKJCholesky(dim, t(*etas))
        assert d.batch_shape == (3,) and d.event_shape == (dim, dim) and not d.has_rsample
        close(d.log_prob(_m(sub)), [_lkj_logpdf(sub, eta) for eta in etas], rtol=1e-10)
    # dim 2: L = [[1, 0], [r, sqrt(1 - r^2)]]; the density in r integrates to one
    r = np.linspace(-1, 1, 200001)[1:-1]
    mats = np.zeros((r.size, 2, 2))
    mats[:, 0, 0], mats[:, 1, 0], mats[:, 1, 1] = 1, r, np.sqrt(1 - r ** 2)
    dens = np.exp(np.asarray(D.LKJCholesky(2, t(2.5).reshape(())).log_prob(_m(mats)).tolist()))
    assert abs(np.sum(np.diff(r) * (dens[1:] + dens[:-1]) / 2) - 1) < 1e-6
    assert D.LKJCholesky(4, 1.5).batch_shape == ()
    # a Python number concentration is a default-dtype (float32) tensor, as in PyTorch
    assert D.LKJCholesky(4, 1.5).concentration.dtype == ember.float32
    close(D.LKJCholesky(4, 1.5).log_prob(_m(lower)), _lkj_logpdf(lower, 1.5), rtol=1e-6)


def test_lkj_cholesky_sampling():
    dim, etas = 4, np.array([0.7, 3.0])
    d = D.LKJCholesky(dim, t(*etas))
    ember.manual_seed(17)
    s = np.asarray(d.sample((N,)).tolist())
    assert s.shape == (N, 2, dim, dim)
    assert np.all(np.asarray(d.support.check(_m(s[:100])).tolist()))
    corr = s @ np.swapaxes(s, -1, -2)
    # LKJ(η) marginals: r_ij ~ 2 Beta(b, b) - 1 with b = η - 1 + dim/2: mean 0, variance 1 / (2 b + 1)
    rows, cols = np.tril_indices(dim, -1)
    r = corr[..., rows, cols]  # (N, 2, 6)
    var = np.broadcast_to((1 / (2 * (etas - 1 + dim / 2) + 1))[:, None], r.shape[1:])
    np.testing.assert_array_less(np.abs(r.mean(0)), 5 * np.sqrt(var / N))
    m4 = (r ** 4).mean(0)
    np.testing.assert_array_less(np.abs((r ** 2).mean(0) - var), 5 * np.sqrt((m4 - var ** 2) / N))
    e = d.expand((3, 2))
    assert e.batch_shape == (3, 2) and tuple(e.sample((5,)).shape) == (5, 3, 2, dim, dim)
    close(e.log_prob(_m(s[0])), np.broadcast_to(np.asarray(d.log_prob(_m(s[0])).tolist()), (3, 2)))


def test_lkj_cholesky_errors():
    with pytest.raises(ValueError, match="Expected dim to be an integer greater than or equal to 2. Found dim=1."):
        D.LKJCholesky(1)
    # as in PyTorch, the onion sampler's Beta (a Dirichlet) is built first and reports a bad concentration
    with pytest.raises(ValueError, match=r"Expected parameter concentration \(Tensor of shape \(1, 3, 2\)\) of "
                                         r"distribution Dirichlet\("):
        D.LKJCholesky(3, t(-1.0))
    with pytest.raises(ValueError, match=r"to be within the support \(CorrCholesky\(\)\)"):
        D.LKJCholesky(2, 1.0).log_prob(_m([[1.0, 0.0], [0.5, 0.5]]))
    assert gradcheck(lambda eta: D.LKJCholesky(3, eta).log_prob(_m(np.linalg.cholesky(WS_COV / np.sqrt(
        np.outer(np.diag(WS_COV), np.diag(WS_COV)))))), (t(0.5, 2.0).requires_grad_(),))


def test_wishart_lkj_module_paths_match_torch():
    from ember.distributions.lkj_cholesky import LKJCholesky
    from ember.distributions.wishart import Wishart
    assert (LKJCholesky, Wishart) == (D.LKJCholesky, D.Wishart)
