"""ember.distributions gradients: float64 gradcheck of log_prob, entropy, cdf and KL in every
parameter; of rsample with a fixed seed for the pathwise samplers; and the implicit
reparameterization gradient of the gamma family against finite differences of a float64
incomplete-gamma written here, plus unbiasedness of the composed (Beta, Dirichlet, StudentT) ones."""

import math

import numpy as np
import pytest

import ember
import ember.distributions as D
from ember.autograd import gradcheck

lgamma = np.vectorize(math.lgamma)


def p(*values):
    """A float64 leaf that requires grad."""
    return ember.tensor(np.asarray(values, dtype=np.float64)).requires_grad_()


def v(*values):
    return ember.tensor(np.asarray(values, dtype=np.float64))


LOG_PROB_CASES = {
    "Normal": (lambda loc, scale: D.Normal(loc, scale), (p(0.3, -1.0), p(0.7, 2.0)), v(0.1, 1.5)),
    "Laplace": (lambda loc, scale: D.Laplace(loc, scale), (p(0.3, -1.0), p(0.7, 2.0)), v(0.1, 1.5)),
    "Cauchy": (lambda loc, scale: D.Cauchy(loc, scale), (p(0.3, -1.0), p(0.7, 2.0)), v(0.1, 1.5)),
    "Gumbel": (lambda loc, scale: D.Gumbel(loc, scale), (p(0.3, -1.0), p(0.7, 2.0)), v(0.1, 1.5)),
    "LogNormal": (lambda loc, scale: D.LogNormal(loc, scale), (p(0.3, -1.0), p(0.7, 2.0)), v(0.4, 1.5)),
    "Uniform": (lambda low, high: D.Uniform(low, high), (p(0.0, -1.0), p(1.0, 2.0)), v(0.4, 1.5)),
    "Exponential": (lambda rate: D.Exponential(rate), (p(0.5, 2.0),), v(0.4, 1.5)),
    "HalfNormal": (lambda scale: D.HalfNormal(scale), (p(0.5, 2.0),), v(0.4, 1.5)),
    "HalfCauchy": (lambda scale: D.HalfCauchy(scale), (p(0.5, 2.0),), v(0.4, 1.5)),
    "Gamma": (lambda c, r: D.Gamma(c, r), (p(0.6, 3.0), p(1.5, 0.5)), v(0.4, 1.5)),
    "Chi2": (lambda df: D.Chi2(df), (p(0.6, 3.0),), v(0.4, 1.5)),
    "Beta": (lambda a, b: D.Beta(a, b), (p(0.6, 3.0), p(1.5, 0.5)), v(0.4, 0.7)),
    "StudentT": (lambda df, loc, scale: D.StudentT(df, loc, scale), (p(2.5, 8.0), p(0.3, -1.0), p(0.7, 2.0)),
                 v(0.1, 1.5)),
    "Dirichlet": (lambda c: D.Dirichlet(c), (p(0.6, 3.0, 1.5),), v(0.2, 0.5, 0.3)),
    "Bernoulli": (lambda probs: D.Bernoulli(probs), (p(0.3, 0.8),), v(1.0, 0.0)),
    "BernoulliLogits": (lambda logits: D.Bernoulli(logits=logits), (p(0.3, -2.0),), v(1.0, 0.0)),
    "Geometric": (lambda probs: D.Geometric(probs), (p(0.3, 0.8),), v(3.0, 0.0)),
    "Poisson": (lambda rate: D.Poisson(rate), (p(0.3, 8.0),), v(3.0, 0.0)),
    "Binomial": (lambda probs: D.Binomial(7, probs), (p(0.3, 0.8),), v(3.0, 7.0)),
    "Categorical": (lambda logits: D.Categorical(logits=logits), (p(0.3, -1.0, 2.0),), ember.tensor([2, 0])),
    "CategoricalProbs": (lambda probs: D.Categorical(probs=probs), (p(0.3, 0.2, 0.5),), ember.tensor([2, 0])),
    "OneHotCategorical": (lambda logits: D.OneHotCategorical(logits=logits), (p(0.3, -1.0, 2.0),), v(0.0, 1.0, 0.0)),
    "Multinomial": (lambda probs: D.Multinomial(5, probs=probs), (p(0.3, 0.2, 0.5),), v(1.0, 0.0, 4.0)),
}


@pytest.mark.parametrize("name", sorted(LOG_PROB_CASES))
def test_log_prob_gradcheck(name):
    make, params, value = LOG_PROB_CASES[name]
    assert gradcheck(lambda *ps: make(*ps).log_prob(value), params)
    dist = make(*params)
    if not dist.support.is_discrete and dist.event_shape == ():
        x = value.detach().requires_grad_()  # and in the value, for densities on the reals
        assert gradcheck(lambda x: make(*[q.detach() for q in params]).log_prob(x), (x,))


@pytest.mark.parametrize("name", sorted(set(LOG_PROB_CASES) - {"Poisson"}))
def test_entropy_gradcheck(name):
    make, params, _ = LOG_PROB_CASES[name]
    assert gradcheck(lambda *ps: make(*ps).entropy(), params)


def test_multivariate_normal_gradcheck():
    loc = p(0.5, -1.0)
    a = p(1.5, 0.3, 0.3, 1.0).reshape(2, 2)  # symmetric positive definite
    value = v(0.1, 0.4)
    assert gradcheck(lambda loc, c: D.MultivariateNormal(loc, covariance_matrix=(c + c.mT) / 2).log_prob(value),
                     (loc, a.detach().requires_grad_()))
    assert gradcheck(lambda loc, c: D.MultivariateNormal(loc, precision_matrix=(c + c.mT) / 2).log_prob(value),
                     (loc, a.detach().requires_grad_()))
    tril = v(1.2, 0.0, -0.4, 0.8).reshape(2, 2).requires_grad_()
    assert gradcheck(lambda loc, lower: D.MultivariateNormal(loc, scale_tril=lower.tril()).log_prob(value),
                     (loc, tril))
    assert gradcheck(lambda lower: D.MultivariateNormal(v(0.0, 0.0), scale_tril=lower.tril()).entropy(), (tril,))


CDF_CASES = ["Normal", "Laplace", "Cauchy", "Gumbel", "LogNormal", "Uniform", "Exponential", "HalfNormal", "HalfCauchy",
             "Gamma", "Chi2"]


@pytest.mark.parametrize("name", CDF_CASES)
def test_cdf_gradcheck(name):
    make, params, value = LOG_PROB_CASES[name]
    x = value.detach().requires_grad_()
    assert gradcheck(lambda x, *ps: make(*ps).cdf(x), (x, *params), atol=1e-6)


def _seeded(fn, seed=0):
    def call(*args):
        ember.manual_seed(seed)
        return fn(*args)
    return call


RSAMPLE_CASES = {
    "Normal": (lambda loc, scale: D.Normal(loc, scale), (p(0.3, -1.0), p(0.7, 2.0))),
    "Laplace": (lambda loc, scale: D.Laplace(loc, scale), (p(0.3, -1.0), p(0.7, 2.0))),
    "Cauchy": (lambda loc, scale: D.Cauchy(loc, scale), (p(0.3, -1.0), p(0.7, 2.0))),
    "Gumbel": (lambda loc, scale: D.Gumbel(loc, scale), (p(0.3, -1.0), p(0.7, 2.0))),
    "LogNormal": (lambda loc, scale: D.LogNormal(loc, scale), (p(0.3, -1.0), p(0.7, 2.0))),
    "Uniform": (lambda low, high: D.Uniform(low, high), (p(0.0, -1.0), p(1.0, 2.0))),
    "Exponential": (lambda rate: D.Exponential(rate), (p(0.5, 2.0),)),
    "HalfNormal": (lambda scale: D.HalfNormal(scale), (p(0.5, 2.0),)),
    "StudentT": (lambda loc, scale: D.StudentT(v(4.0, 9.0), loc, scale), (p(0.3, -1.0), p(0.7, 2.0))),
    "MultivariateNormal": (lambda loc, lower: D.MultivariateNormal(loc, scale_tril=lower.tril()),
                           (p(0.5, -1.0), v(1.2, 0.0, -0.4, 0.8).reshape(2, 2).requires_grad_())),
    "Independent": (lambda loc, scale: D.Independent(D.Normal(loc, scale), 1), (p(0.3, -1.0), p(0.7, 2.0))),
}


@pytest.mark.parametrize("name", sorted(RSAMPLE_CASES))
def test_rsample_gradcheck_with_fixed_seed(name):
    make, params = RSAMPLE_CASES[name]
    assert make(*params).has_rsample
    assert gradcheck(_seeded(lambda *ps: make(*ps).rsample((3,))), params)
    # sample() is the same draw with no history
    ember.manual_seed(0)
    drawn = make(*params).sample((3,))
    assert not drawn.requires_grad
    np.testing.assert_allclose(drawn.numpy(), _seeded(lambda *ps: make(*ps).rsample((3,)))(*params).detach().numpy())


def _regularized_gamma_p(a, x):
    """P(a, x) in float64 by its series (x < a + 1) or Lentz's continued fraction for Q (NR 6.2)."""
    if x <= 0:
        return 0.0
    if x < a + 1:
        term = total = 1.0 / a
        n = 1
        while abs(term) > 1e-17 * abs(total):
            term *= x / (a + n)
            total += term
            n += 1
        return total * math.exp(-x + a * math.log(x) - math.lgamma(a))
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return 1 - math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


@pytest.mark.parametrize("alpha", [0.05, 0.4, 1.0, 2.5, 30.0, 400.0])
def test_gamma_rsample_gradient_is_the_implicit_one(alpha):
    """dx/dalpha = -(dP/dalpha) / pdf at every sample, P differentiated by central differences here."""
    ember.manual_seed(7)
    concentration = ember.full((40,), alpha, dtype=ember.float64, requires_grad=True)
    x = D.Gamma(concentration, ember.ones(40, dtype=ember.float64)).rsample()
    (grad,) = ember.autograd.grad(x.sum(), [concentration])
    xs = x.detach().numpy()
    xs_ok = xs > 1e-200  # underflowed draws have no useful gradient
    for xi, gi in zip(xs[xs_ok], grad.numpy()[xs_ok], strict=True):
        h = 1e-6 * alpha
        dp_da = (_regularized_gamma_p(alpha + h, xi) - _regularized_gamma_p(alpha - h, xi)) / (2 * h)
        pdf = math.exp((alpha - 1) * math.log(xi) - xi - math.lgamma(alpha))
        expected = -dp_da / pdf
        assert gi == pytest.approx(expected, rel=2e-5, abs=1e-9)


def test_gamma_rsample_gradient_in_rate_and_mean():
    concentration, rate = p(2.5, 0.5), p(1.5, 3.0)
    ember.manual_seed(2)
    x = D.Gamma(concentration.expand(20000, 2), rate.expand(20000, 2)).rsample()
    mean = x.mean(0)
    g_c = ember.autograd.grad(mean.sum(), [concentration], retain_graph=True)[0].numpy()
    g_r0 = ember.autograd.grad(mean[0], [rate])[0].numpy()
    # E[x] = c / r: d/dc = 1 / r, d/dr = -c / r^2, within a few standard errors
    np.testing.assert_allclose(g_c, [1 / 1.5, 1 / 3.0], rtol=0.03)
    assert g_r0[0] == pytest.approx(-2.5 / 1.5 ** 2, rel=0.03) and g_r0[1] == 0


def test_composed_reparameterized_gradients_are_unbiased():
    n = 20000
    ember.manual_seed(4)
    a, b = p(2.0), p(3.0)
    x = D.Beta(a.expand(n), b.expand(n)).rsample()
    ga, gb = ember.autograd.grad(x.mean(), [a, b])
    # E[x] = a / (a + b)
    assert ga.item() == pytest.approx(3.0 / 25.0, rel=0.05)
    assert gb.item() == pytest.approx(-2.0 / 25.0, rel=0.05)
    alpha = p(1.0, 2.0, 3.0)
    x = D.Dirichlet(alpha.expand(n, 3)).rsample()
    (g,) = ember.autograd.grad(x.mean(0)[0], [alpha])
    # E[x_0] = alpha_0 / alpha_sum
    np.testing.assert_allclose(g.numpy(), [5 / 36, -1 / 36, -1 / 36], rtol=0.08)
    df = p(8.0)
    x = D.StudentT(df.expand(n)).rsample()
    (g,) = ember.autograd.grad((x * x).mean(), [df])
    # E[x^2] = df / (df - 2): d/ddf = -2 / (df - 2)^2
    assert g.item() == pytest.approx(-2.0 / 36.0, rel=0.15)
    chi = p(3.0)
    x = D.Chi2(chi.expand(n)).rsample()
    (g,) = ember.autograd.grad(x.mean(), [chi])
    assert g.item() == pytest.approx(1.0, rel=0.03)


def test_gamma_cdf_gradient_in_concentration_matches_finite_differences():
    c, value = 2.5, 1.7
    concentration = p(c)
    cdf = D.Gamma(concentration, v(1.0)).cdf(v(value))
    (g,) = ember.autograd.grad(cdf.sum(), [concentration])
    h = 1e-6
    expected = (_regularized_gamma_p(c + h, value) - _regularized_gamma_p(c - h, value)) / (2 * h)
    assert g.item() == pytest.approx(expected, rel=1e-6)
    assert cdf.item() == pytest.approx(_regularized_gamma_p(c, value), rel=1e-12)


KL_GRAD_CASES = {
    "Normal": (lambda a, b: (D.Normal(a, b), D.Normal(b - 1.0, a + 1.0)), (p(0.3, 0.5), p(0.7, 2.0))),
    "Gamma": (lambda a, b: (D.Gamma(a, b), D.Gamma(b, a)), (p(0.6, 3.0), p(1.5, 0.5))),
    "Beta": (lambda a, b: (D.Beta(a, b), D.Beta(b, a + 1.0)), (p(0.6, 3.0), p(1.5, 0.5))),
    "Dirichlet": (lambda a, b: (D.Dirichlet(a), D.Dirichlet(b)), (p(0.6, 3.0, 1.0), p(1.5, 0.5, 2.0))),
    "Categorical": (lambda a, b: (D.Categorical(logits=a), D.Categorical(logits=b)), (p(0.6, 3.0, 1.0),
                                                                                      p(1.5, 0.5, 2.0))),
    "Bernoulli": (lambda a, b: (D.Bernoulli(a), D.Bernoulli(b)), (p(0.2, 0.6), p(0.5, 0.1))),
    "Laplace": (lambda a, b: (D.Laplace(a, b), D.Laplace(b, a + 1.0)), (p(0.3, 0.5), p(0.7, 2.0))),
    "MultivariateNormal": (lambda loc, lower: (D.MultivariateNormal(loc, scale_tril=lower.tril()),
                                               D.MultivariateNormal(loc * 2 + 1, scale_tril=lower.tril() * 1.5)),
                           (p(0.5, -1.0), v(1.2, 0.0, -0.4, 0.8).reshape(2, 2).requires_grad_())),
    "ExponentialFamily": (lambda a, b: (D.Poisson(a), D.Poisson(b)), (p(0.6, 3.0), p(1.5, 0.5))),
}


@pytest.mark.parametrize("name", sorted(KL_GRAD_CASES))
def test_kl_divergence_gradcheck(name):
    make, params = KL_GRAD_CASES[name]
    assert gradcheck(lambda *ps: D.kl_divergence(*make(*ps)), params)
