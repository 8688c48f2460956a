"""ember.distributions: densities, moments, entropies and CDFs against float64 formulas written here
with math and NumPy (no SciPy): log-densities in closed form, and the moments, entropy and CDF of
each by numerical integration (or summation) of that closed form. Sampling is checked against the
same moments with a fixed seed, and continuous samples by a Kolmogorov-Smirnov bound."""

import math

import numpy as np
import pytest

import ember
import ember.distributions as D

lgamma = np.vectorize(math.lgamma)
N_SAMPLES = 20000


def t(*values):
    return ember.tensor(np.asarray(values, dtype=np.float64))


def digamma(x):
    """psi(x) for x > 0: recurrence up to x >= 8, then the asymptotic series (error < 1e-13)."""
    x = np.asarray(x, dtype=np.float64).copy()
    result = np.zeros_like(x)
    while (x < 8).any():
        small = x < 8
        result[small] -= 1 / x[small]
        x[small] += 1
    inv2 = 1 / (x * x)
    series = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (1 / 240 - inv2 / 132))))
    return result + np.log(x) - 0.5 / x - series


def _trapz(y, x):
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2))


# Grids for numerical integration: dense where the mass is, reaching far into the tails.
def _real_grid(center, width, reach=1e7):
    u = np.linspace(-math.asinh(reach), math.asinh(reach), 400001)
    return center + width * np.sinh(u)


def _positive_grid(width, reach=1e6):
    return width * np.exp(np.linspace(math.log(1e-14), math.log(reach), 400001))


def _unit_grid():
    return 1 / (1 + np.exp(-np.linspace(-36, 36, 400001)))


# Each case: a distribution built from float64 parameters (batch of two), its log-density written
# out here, and per batch element an integration grid.
CONTINUOUS = {
    "Normal": (lambda loc, scale: D.Normal(t(*loc), t(*scale)), ([-1.0, 0.5], [0.5, 2.0]),
               lambda x, loc, scale: -((x - loc) ** 2) / (2 * scale ** 2) - np.log(scale) - 0.5 * math.log(2 * math.pi),
               lambda loc, scale: _real_grid(loc, scale)),
    "Laplace": (lambda loc, scale: D.Laplace(t(*loc), t(*scale)), ([-1.0, 0.5], [0.5, 2.0]),
                lambda x, loc, scale: -np.log(2 * scale) - np.abs(x - loc) / scale,
                lambda loc, scale: _real_grid(loc, scale)),
    "Uniform": (lambda low, high: D.Uniform(t(*low), t(*high)), ([-1.0, 2.0], [1.0, 5.0]),
                lambda x, low, high: np.where((x >= low) & (x <= high), -np.log(high - low), -np.inf),
                lambda low, high: np.linspace(low, high, 400001)),
    "Exponential": (lambda rate: D.Exponential(t(*rate)), ([0.5, 2.0],),
                    lambda x, rate: np.log(rate) - rate * x,
                    lambda rate: _positive_grid(1 / rate)),
    "Gamma": (lambda c, r: D.Gamma(t(*c), t(*r)), ([2.5, 4.0], [1.0, 3.0]),
              lambda x, c, r: c * np.log(r) + (c - 1) * np.log(x) - r * x - lgamma(c),
              lambda c, r: _positive_grid(1 / r)),
    "Chi2": (lambda df: D.Chi2(t(*df)), ([3.0, 7.0],),
             lambda x, df: (df / 2 - 1) * np.log(x) - x / 2 - (df / 2) * math.log(2) - lgamma(df / 2),
             lambda df: _positive_grid(1.0)),
    "Beta": (lambda a, b: D.Beta(t(*a), t(*b)), ([2.0, 3.5], [1.5, 5.0]),
             lambda x, a, b: (a - 1) * np.log(x) + (b - 1) * np.log1p(-x) + lgamma(a + b) - lgamma(a) - lgamma(b),
             lambda a, b: _unit_grid()),
    "Gumbel": (lambda loc, scale: D.Gumbel(t(*loc), t(*scale)), ([0.0, 1.0], [1.0, 2.0]),
               lambda x, loc, scale: -(x - loc) / scale - np.exp(-(x - loc) / scale) - np.log(scale),
               lambda loc, scale: loc + scale * np.sinh(np.linspace(-math.asinh(5.0), math.asinh(1e4), 400001))),
    "LogNormal": (lambda loc, scale: D.LogNormal(t(*loc), t(*scale)), ([0.0, 0.5], [0.5, 0.25]),
                  lambda x, loc, scale: (-((np.log(x) - loc) ** 2) / (2 * scale ** 2) - np.log(scale * x)
                                         - 0.5 * math.log(2 * math.pi)),
                  lambda loc, scale: _positive_grid(1.0)),
    "StudentT": (lambda df, loc, scale: D.StudentT(t(*df), t(*loc), t(*scale)), ([5.0, 10.0], [0.0, 1.0], [1.0, 2.0]),
                 lambda x, df, loc, scale: (lgamma((df + 1) / 2) - lgamma(df / 2) - 0.5 * np.log(df * math.pi)
                                            - np.log(scale) - (df + 1) / 2 * np.log1p(((x - loc) / scale) ** 2 / df)),
                 lambda df, loc, scale: _real_grid(loc, scale)),
    "HalfNormal": (lambda scale: D.HalfNormal(t(*scale)), ([1.0, 2.0],),
                   lambda x, scale: math.log(2) - x ** 2 / (2 * scale ** 2) - np.log(scale) - 0.5 * math.log(2 * math.pi),
                   lambda scale: _positive_grid(scale)),
    "Cauchy": (lambda loc, scale: D.Cauchy(t(*loc), t(*scale)), ([0.0, 1.0], [1.0, 2.0]),
               lambda x, loc, scale: -math.log(math.pi) - np.log(scale) - np.log1p(((x - loc) / scale) ** 2),
               lambda loc, scale: _real_grid(loc, scale, 1e13)),
    "HalfCauchy": (lambda scale: D.HalfCauchy(t(*scale)), ([1.0, 2.0],),
                   lambda x, scale: math.log(2 / math.pi) - np.log(scale) - np.log1p((x / scale) ** 2),
                   lambda scale: _positive_grid(scale, 1e13)),
}
HEAVY_TAILED = {"Cauchy", "HalfCauchy"}  # no mean or variance


def _integrals(name):
    """Per batch element: (grid, density, mean, variance, 4th central moment, entropy, cdf on grid)."""
    _, params, logpdf, grid = CONTINUOUS[name]
    out = []
    for i in range(2):
        p = [np.float64(v[i]) for v in params]
        x = grid(*p)
        lp = logpdf(x, *p)
        dens = np.exp(lp)
        cdf = np.concatenate([[0.0], np.cumsum(np.diff(x) * (dens[1:] + dens[:-1]) / 2)])
        plogp = np.where(dens > 0, dens * np.where(np.isfinite(lp), lp, 0.0), 0.0)
        entropy = -_trapz(plogp, x)
        if name in HEAVY_TAILED:
            out.append((x, dens, None, None, None, entropy, cdf))
            continue
        mean = _trapz(x * dens, x)
        var = _trapz((x - mean) ** 2 * dens, x)
        m4 = _trapz((x - mean) ** 4 * dens, x)
        out.append((x, dens, mean, var, m4, entropy, cdf))
    return out


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_log_prob_matches_formula(name):
    make, params, logpdf, grid = CONTINUOUS[name]
    dist = make(*params)
    per_element = [[np.float64(v[i]) for v in params] for i in range(2)]
    x = np.stack([grid(*p)[100000:300001:20000] for p in per_element], 1)  # the bulk and the tails
    got = dist.log_prob(ember.tensor(x)).numpy()
    for i, p in enumerate(per_element):
        np.testing.assert_allclose(got[:, i], logpdf(x[:, i], *p), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_moments_entropy_cdf(name):
    make, params, _, _ = CONTINUOUS[name]
    dist = make(*params)
    refs = _integrals(name)
    np.testing.assert_allclose(dist.entropy().numpy(), [r[5] for r in refs], rtol=1e-6, atol=1e-6)
    if name in HEAVY_TAILED:
        assert np.isnan(dist.mean.numpy()).all() or np.isinf(dist.mean.numpy()).all()
        assert np.isinf(dist.variance.numpy()).all()
    else:
        np.testing.assert_allclose(dist.mean.numpy(), [r[2] for r in refs], rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(dist.variance.numpy(), [r[3] for r in refs], rtol=1e-5, atol=1e-8)
        np.testing.assert_allclose(dist.stddev.numpy(), np.sqrt([r[3] for r in refs]), rtol=1e-5)
    if type(dist).cdf is D.Distribution.cdf:
        return  # Beta and StudentT have no CDF, as in PyTorch
    points = np.stack([r[0][120000:280001:20000] for r in refs], 1)
    got = dist.cdf(ember.tensor(points)).numpy()
    for i, (x, _, _, _, _, _, cdf) in enumerate(refs):
        np.testing.assert_allclose(got[:, i], np.interp(points[:, i], x, cdf), atol=2e-6)


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_continuous_sampling_statistics(name):
    make, params, _, _ = CONTINUOUS[name]
    dist = make(*params)
    ember.manual_seed(1234)
    samples = dist.sample((N_SAMPLES,))
    assert samples.shape == (N_SAMPLES, 2) and samples.dtype == ember.float64
    assert bool(dist.support.check(samples).all())
    s = samples.numpy()
    for i, (x, _, mean, var, m4, _, cdf) in enumerate(_integrals(name)):
        # Kolmogorov-Smirnov: sup |F_n - F| < 2.23 / sqrt(n) at the 0.01% level (low enough that the
        # test survives a change of the random stream, not only this seed).
        sorted_s = np.sort(s[:, i])
        ref = np.interp(sorted_s, x, cdf)
        empirical = np.arange(1, N_SAMPLES + 1) / N_SAMPLES
        assert np.max(np.maximum(empirical - ref, ref - (empirical - 1 / N_SAMPLES))) < 2.23 / math.sqrt(N_SAMPLES)
        if mean is None:
            continue
        assert abs(s[:, i].mean() - mean) < 5 * math.sqrt(var / N_SAMPLES)
        if np.isfinite(m4):
            assert abs(s[:, i].var() - var) < 5 * math.sqrt((m4 - var ** 2) / N_SAMPLES)
    ember.manual_seed(1234)
    assert ember.equal(dist.sample((N_SAMPLES,)), samples) if hasattr(ember, "equal") else \
        np.array_equal(dist.sample((N_SAMPLES,)).numpy(), s)


@pytest.mark.parametrize("name", ["Normal", "Laplace", "Uniform", "Exponential", "Cauchy", "HalfNormal", "LogNormal",
                                  "Gumbel", "HalfCauchy"])
def test_icdf_inverts_cdf(name):
    make, params, _, _ = CONTINUOUS[name]
    dist = make(*params)
    q = ember.tensor(np.array([[0.01, 0.01], [0.3, 0.3], [0.5, 0.5], [0.9, 0.9], [0.999, 0.999]]))
    x = dist.icdf(q)
    np.testing.assert_allclose(dist.cdf(x).numpy(), q.numpy(), rtol=1e-9, atol=1e-12)


# Discrete distributions: the pmf written out, moments and entropy by summation over the support.
DISCRETE = {
    "Bernoulli": (lambda p: D.Bernoulli(t(*p)), ([0.2, 0.9],), lambda k, p: np.where(k == 1, np.log(p), np.log1p(-p)),
                  np.arange(2)),
    "Geometric": (lambda p: D.Geometric(t(*p)), ([0.2, 0.7],), lambda k, p: k * np.log1p(-p) + np.log(p),
                  np.arange(400)),
    "Poisson": (lambda r: D.Poisson(t(*r)), ([0.7, 23.0],), lambda k, r: k * np.log(r) - r - lgamma(k + 1),
                np.arange(200)),
    "Binomial": (lambda p: D.Binomial(12, t(*p)), ([0.3, 0.85],),
                 lambda k, p: (lgamma(13) - lgamma(k + 1) - lgamma(13 - k) + k * np.log(p) + (12 - k) * np.log1p(-p)),
                 np.arange(13)),
    "BinomialLarge": (lambda p: D.Binomial(t(400.0, 1000.0), t(*p)), ([0.3, 0.04],),
                      None, None),
}


@pytest.mark.parametrize("name", ["Bernoulli", "Geometric", "Poisson", "Binomial"])
def test_discrete_pmf_moments_entropy(name):
    make, params, logpmf, support = DISCRETE[name]
    dist = make(*params)
    k = ember.tensor(np.stack([support, support], 1).astype(np.float64))
    got = dist.log_prob(k).numpy()
    for i in range(2):
        p = [np.float64(v[i]) for v in params]
        ref = logpmf(support.astype(np.float64), *p)
        np.testing.assert_allclose(got[:, i], ref, rtol=1e-10, atol=1e-10)
        pmf = np.exp(ref)
        mean = (support * pmf).sum()
        var = ((support - mean) ** 2 * pmf).sum()
        assert abs(dist.mean.numpy()[i] - mean) < 1e-9 * max(1, mean)
        assert abs(dist.variance.numpy()[i] - var) < 1e-9 * max(1, var)
        if name != "Poisson":  # PyTorch's Poisson has no entropy
            assert abs(dist.entropy().numpy()[i] - (-(pmf * ref).sum())) < 1e-9
    if name == "Poisson":
        with pytest.raises(NotImplementedError):
            dist.entropy()


@pytest.mark.parametrize("name", sorted(DISCRETE))
def test_discrete_sampling_statistics(name):
    make, params, _, _ = DISCRETE[name]
    dist = make(*params)
    ember.manual_seed(99)
    s = dist.sample((N_SAMPLES,))
    assert s.shape == (N_SAMPLES, 2) and s.dtype == ember.float64
    assert bool(dist.support.check(s).all())
    s = s.numpy()
    mean, var = dist.mean.numpy(), dist.variance.numpy()
    for i in range(2):
        assert abs(s[:, i].mean() - mean[i]) < 5 * math.sqrt(var[i] / N_SAMPLES)
        assert abs(s[:, i].var() - var[i]) < 0.08 * var[i]


def test_binomial_and_poisson_sample_frequencies():
    """Frequencies of each count against the pmf (chi-square bound), for both sampling algorithms."""
    ember.manual_seed(5)
    for dist, support in ((D.Binomial(t(20.0, 60.0), t(0.3, 0.5), validate_args=False), np.arange(61)),
                          (D.Poisson(t(4.0, 30.0)), np.arange(120))):
        s = dist.sample((N_SAMPLES,)).numpy()
        pmf = np.exp(dist.log_prob(ember.tensor(np.stack([support, support], 1).astype(np.float64))).numpy())
        for i in range(2):
            expected = pmf[:, i] * N_SAMPLES
            keep = expected > 20
            observed = np.array([(s[:, i] == k).sum() for k in support])
            chi2 = ((observed[keep] - expected[keep]) ** 2 / expected[keep]).sum()
            assert chi2 < keep.sum() + 5 * math.sqrt(2 * keep.sum())


def test_categorical_and_one_hot():
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    cat = D.Categorical(probs=ember.tensor(probs * 3))  # normalized by the constructor
    np.testing.assert_allclose(cat.probs.numpy(), probs, rtol=1e-12)
    np.testing.assert_allclose(cat.logits.numpy(), np.log(probs), rtol=1e-12)
    np.testing.assert_allclose(cat.log_prob(ember.tensor([2, 0])).numpy(), np.log([0.7, 0.5]), rtol=1e-12)
    np.testing.assert_allclose(cat.entropy().numpy(), -(probs * np.log(probs)).sum(1), rtol=1e-12)
    assert cat.mode.tolist() == [2, 0]
    assert np.isnan(cat.mean.numpy()).all() and cat.mean.shape == (2,)
    by_logits = D.Categorical(logits=ember.tensor(np.log(probs) + 5.0))
    np.testing.assert_allclose(by_logits.probs.numpy(), probs, rtol=1e-12)
    ember.manual_seed(3)
    s = cat.sample((N_SAMPLES,))
    assert s.shape == (N_SAMPLES, 2) and s.dtype == ember.int64
    freq = np.stack([(s.numpy() == k).mean(0) for k in range(3)], 1)
    assert np.abs(freq - probs).max() < 5 * math.sqrt(0.25 / N_SAMPLES)
    one_hot = D.OneHotCategorical(probs=ember.tensor(probs))
    oh = one_hot.sample((5,))
    assert oh.shape == (5, 2, 3) and oh.dtype == ember.float64 and (oh.sum(-1).numpy() == 1).all()
    np.testing.assert_allclose(one_hot.log_prob(ember.tensor(np.eye(3)[[2, 1]])).numpy(), np.log([0.7, 0.25]))
    np.testing.assert_allclose(one_hot.entropy().numpy(), cat.entropy().numpy())
    np.testing.assert_allclose(one_hot.variance.numpy(), probs * (1 - probs))
    assert one_hot.mode.tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]
    # a zero probability: entropy stays finite, log_prob of that category is -inf
    zero = D.Categorical(probs=t(0.0, 0.5, 0.5))
    assert zero.entropy().item() == pytest.approx(math.log(2))
    # as PyTorch: logits come from probabilities clamped to [eps, 1 - eps]
    assert zero.log_prob(ember.tensor(0)).item() == pytest.approx(math.log(ember.finfo(ember.float64).eps))


def test_multinomial():
    probs = np.array([0.2, 0.3, 0.5])
    dist = D.Multinomial(6, ember.tensor(probs))
    counts = np.array([[1, 2, 3], [6, 0, 0], [0, 0, 6]], dtype=np.float64)
    ref = lgamma(7) - lgamma(counts + 1).sum(1) + (counts * np.log(probs)).sum(1)
    np.testing.assert_allclose(dist.log_prob(ember.tensor(counts)).numpy(), ref, rtol=1e-12)
    # entropy by enumerating every count vector of total 6
    all_counts = np.array([[a, b, 6 - a - b] for a in range(7) for b in range(7 - a)], dtype=np.float64)
    lp = lgamma(7) - lgamma(all_counts + 1).sum(1) + (all_counts * np.log(probs)).sum(1)
    assert np.exp(lp).sum() == pytest.approx(1.0)
    assert dist.entropy().item() == pytest.approx(-(np.exp(lp) * lp).sum(), rel=1e-10)
    np.testing.assert_allclose(dist.mean.numpy(), 6 * probs)
    np.testing.assert_allclose(dist.variance.numpy(), 6 * probs * (1 - probs))
    ember.manual_seed(11)
    s = dist.sample((N_SAMPLES,))
    assert s.shape == (N_SAMPLES, 3) and (s.sum(-1).numpy() == 6).all()
    assert np.abs(s.numpy().mean(0) - 6 * probs).max() < 5 * math.sqrt(6 * 0.25 / N_SAMPLES)
    # a zero-probability category counted zero times contributes nothing
    zero = D.Multinomial(2, logits=ember.tensor([0.0, -math.inf]))
    assert zero.log_prob(t(2.0, 0.0)).item() == pytest.approx(0.0)


def test_dirichlet():
    alpha = np.array([[0.7, 2.0, 3.5], [1.5, 1.5, 4.0]])
    dist = D.Dirichlet(ember.tensor(alpha))
    x = np.array([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    a0 = alpha.sum(1)
    ref = ((alpha - 1) * np.log(x)).sum(1) + lgamma(a0) - lgamma(alpha).sum(1)
    np.testing.assert_allclose(dist.log_prob(ember.tensor(x)).numpy(), ref, rtol=1e-12)
    log_b = lgamma(alpha).sum(1) - lgamma(a0)
    entropy = log_b + (a0 - 3) * digamma(a0) - ((alpha - 1) * digamma(alpha)).sum(1)
    np.testing.assert_allclose(dist.entropy().numpy(), entropy, rtol=1e-10)
    mean = alpha / a0[:, None]
    np.testing.assert_allclose(dist.mean.numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(dist.variance.numpy(), mean * (1 - mean) / (a0[:, None] + 1), rtol=1e-12)
    np.testing.assert_allclose(dist.mode.numpy()[1], (alpha[1] - 1) / (a0[1] - 3), rtol=1e-12)
    ember.manual_seed(8)
    s = dist.sample((N_SAMPLES,)).numpy()
    np.testing.assert_allclose(s.sum(-1), 1.0, rtol=1e-12)
    assert np.abs(s.mean(0) - mean).max() < 5 * math.sqrt(0.25 / N_SAMPLES)
    np.testing.assert_allclose(s.var(0), mean * (1 - mean) / (a0[:, None] + 1), rtol=0.06)


def test_multivariate_normal_three_parameterizations():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 3))
    cov = a @ a.T + 3 * np.eye(3)
    loc = np.array([1.0, -2.0, 0.5])
    x = rng.standard_normal((4, 3))
    diff = x - loc
    ref = (-0.5 * np.einsum("ni,ij,nj->n", diff, np.linalg.inv(cov), diff)
           - 0.5 * np.log(np.linalg.det(2 * math.pi * cov)))
    entropy = 0.5 * np.log(np.linalg.det(2 * math.pi * math.e * cov))
    lower = np.linalg.cholesky(cov)
    for kwargs in ({"covariance_matrix": ember.tensor(cov)}, {"precision_matrix": ember.tensor(np.linalg.inv(cov))},
                   {"scale_tril": ember.tensor(lower)}):
        dist = D.MultivariateNormal(ember.tensor(loc), **kwargs)
        np.testing.assert_allclose(dist.log_prob(ember.tensor(x)).numpy(), ref, rtol=1e-10)
        assert dist.entropy().item() == pytest.approx(entropy, rel=1e-10)
        np.testing.assert_allclose(dist.covariance_matrix.numpy(), cov, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(dist.precision_matrix.numpy(), np.linalg.inv(cov), rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(dist.scale_tril.numpy(), lower, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(dist.variance.numpy(), np.diag(cov), rtol=1e-10)
    ember.manual_seed(21)
    s = dist.sample((N_SAMPLES,)).numpy()
    assert s.shape == (N_SAMPLES, 3)
    assert np.abs(s.mean(0) - loc).max() < 5 * math.sqrt(np.diag(cov).max() / N_SAMPLES)
    np.testing.assert_allclose(np.cov(s.T), cov, atol=0.05 * np.abs(cov).max())
    # batches broadcast between loc and the matrix
    batched = D.MultivariateNormal(ember.zeros(2, 1, 3, dtype=ember.float64), covariance_matrix=ember.tensor(cov))
    assert batched.batch_shape == (2, 1) and batched.event_shape == (3,)
    assert batched.log_prob(ember.tensor(x)).shape == (2, 4)


def test_independent_and_transformed_distributions():
    loc, scale = np.array([[0.0, 1.0], [2.0, -1.0]]), np.array([[1.0, 0.5], [2.0, 1.5]])
    base = D.Normal(ember.tensor(loc), ember.tensor(scale))
    ind = D.Independent(base, 1)
    assert ind.batch_shape == (2,) and ind.event_shape == (2,)
    x = ember.tensor(np.array([[0.3, 0.4], [1.0, 1.0]]))
    np.testing.assert_allclose(ind.log_prob(x).numpy(), base.log_prob(x).numpy().sum(-1))
    np.testing.assert_allclose(ind.entropy().numpy(), base.entropy().numpy().sum(-1))
    # exp(2 * N(loc, scale) + 1) is LogNormal(2 loc + 1, 2 scale)
    td = D.TransformedDistribution(D.Normal(t(0.2), t(0.7)), [D.AffineTransform(1.0, 2.0), D.ExpTransform()])
    ln = D.LogNormal(t(1.4), t(1.4))
    v = t(0.5, 3.0, 10.0)
    np.testing.assert_allclose(td.log_prob(v).numpy(), ln.log_prob(v).numpy(), rtol=1e-12)
    np.testing.assert_allclose(td.cdf(v).numpy(), ln.cdf(v).numpy(), rtol=1e-12)
    # a decreasing transform flips the CDF
    flipped = D.TransformedDistribution(D.Exponential(t(2.0)), [D.AffineTransform(0.0, -1.0)])
    np.testing.assert_allclose(flipped.cdf(t(-0.5)).numpy(), [math.exp(-1.0)], rtol=1e-12)
    np.testing.assert_allclose(flipped.icdf(t(math.exp(-1.0))).numpy(), [-0.5], rtol=1e-12)
    # logit-normal: sigmoid of a normal, density by change of variables written out
    logit_normal = D.TransformedDistribution(D.Normal(t(0.3), t(0.8)), D.SigmoidTransform())
    y = np.array([0.1, 0.5, 0.95])
    z = np.log(y / (1 - y))
    ref = -((z - 0.3) ** 2) / (2 * 0.64) - math.log(0.8) - 0.5 * math.log(2 * math.pi) - np.log(y * (1 - y))
    np.testing.assert_allclose(logit_normal.log_prob(ember.tensor(y)).numpy(), ref, rtol=1e-10)
    # stick breaking of a 2-d normal is a distribution on the 3-simplex: event_shape grows by one
    sb = D.TransformedDistribution(D.Normal(ember.zeros(2, dtype=ember.float64), ember.ones(2, dtype=ember.float64)),
                                   D.StickBreakingTransform())
    assert sb.batch_shape == () and sb.event_shape == (3,)
    sample = sb.sample((4,))
    assert sample.shape == (4, 3) and np.allclose(sample.sum(-1).numpy(), 1)
    assert sb.log_prob(sample).shape == (4,)
