"""ember.distributions API: validation and its errors, shapes and expand, constraints, transforms
and the constraint registry, the KL registry (values and dispatch), and a REINFORCE policy."""

import math

import numpy as np
import pytest

import ember
import ember.distributions as D
from ember.distributions import constraints, transforms


def v(*values):
    return ember.tensor(np.asarray(values, dtype=np.float64))


# Validation.

def test_invalid_parameter_message():
    with pytest.raises(ValueError) as info:
        D.Normal(v(0.0, 1.0), v(1.0, -1.0))
    message = str(info.value)
    assert message.startswith("Expected parameter scale (Tensor of shape (2,)) of distribution Normal(loc: (2,), "
                              "scale: (2,)) to satisfy the constraint GreaterThan(lower_bound=0.0), but found invalid "
                              "values:\ntensor([ 1., -1.]")
    with pytest.raises(ValueError, match=r"^Expected parameter loc \(Tensor of shape \(\)\) of distribution "
                                         r"Normal\(loc: nan, scale: 1.0\) to satisfy the constraint Real\(\)"):
        D.Normal(float("nan"), 1.0)
    with pytest.raises(ValueError, match=r"parameter probs .* to satisfy the constraint Interval\(lower_bound=0.0, "
                                         r"upper_bound=1.0\)"):
        D.Bernoulli(probs=v(1.5))
    with pytest.raises(ValueError, match=r"parameter probs .* to satisfy the constraint Simplex\(\)"):
        D.Categorical(probs=v(0.5, -0.2, 0.7))
    with pytest.raises(ValueError, match=r"parameter concentration .* IndependentConstraint\(GreaterThan\("
                                         r"lower_bound=0.0\), 1\)"):
        D.Dirichlet(v(1.0, 0.0))
    with pytest.raises(ValueError, match=r"parameter covariance_matrix .* PositiveDefinite\(\)"):
        D.MultivariateNormal(v(0.0, 0.0), covariance_matrix=v(1.0, 2.0, 2.0, 1.0).reshape(2, 2))
    with pytest.raises(ValueError, match=r"parameter scale_tril .* LowerCholesky\(\)"):
        D.MultivariateNormal(v(0.0, 0.0), scale_tril=v(1.0, 0.5, 0.0, 1.0).reshape(2, 2))
    with pytest.raises(ValueError, match=r"parameter total_count .* IntegerGreaterThan\(lower_bound=0\)"):
        D.Binomial(v(2.5), v(0.5))
    with pytest.raises(ValueError, match=r"^Expected parameter probs \(Tensor of shape \(2,\)\) of distribution "
                                         r"Geometric\(probs: \(2,\)\) to be positive but found invalid values:"):
        D.Geometric(v(0.5, 0.0))
    with pytest.raises(ValueError, match=r"^Uniform is not defined when low>= high$"):
        D.Uniform(v(1.0), v(1.0))


def test_out_of_support_message():
    with pytest.raises(ValueError) as info:
        D.Exponential(v(2.0)).log_prob(v(-1.0))
    assert str(info.value).startswith("Expected value argument (Tensor of shape (1,)) to be within the support "
                                      "(GreaterThanEq(lower_bound=0.0)) of the distribution Exponential(rate: "
                                      "tensor([2.], dtype=ember.float64)), but found invalid values:\n")
    with pytest.raises(ValueError, match=r"within the support \(Boolean\(\)\)"):
        D.Bernoulli(0.3).log_prob(ember.tensor(0.5))
    with pytest.raises(ValueError, match=r"within the support \(IntegerInterval\(lower_bound=0, upper_bound=2\)\)"):
        D.Categorical(logits=ember.zeros(3)).log_prob(ember.tensor(3))
    with pytest.raises(ValueError, match=r"within the support \(Simplex\(\)\)"):
        D.Dirichlet(v(1.0, 1.0)).log_prob(v(0.5, 0.6))
    with pytest.raises(ValueError, match=r"within the support \(Interval\(lower_bound=0.0, upper_bound=1.0\)\)"):
        D.Beta(2.0, 2.0).log_prob(ember.tensor(1.5))
    with pytest.raises(ValueError, match=r"^The value argument to log_prob must be a Tensor$"):
        D.Normal(0.0, 1.0).log_prob(0.5)
    with pytest.raises(ValueError, match=r"^The right-most size of value must match event_shape: \(2, 3\) vs \(2,\)\.$"):
        D.MultivariateNormal(ember.zeros(2), ember.eye(2)).log_prob(ember.zeros(2, 3))
    with pytest.raises(ValueError, match=r"^Value is not broadcastable with batch_shape\+event_shape: \(3,\) vs "
                                         r"\(2,\)\.$"):
        D.Normal(ember.zeros(2), ember.ones(2)).log_prob(ember.zeros(3))


def test_validation_switches():
    assert D.Normal(0.0, -1.0, validate_args=False).scale.item() == -1.0
    # without validation an out-of-support value just gets a (meaningless) number
    assert not math.isnan(D.Exponential(2.0, validate_args=False).log_prob(ember.tensor(-1.0)).item())
    try:
        D.Distribution.set_default_validate_args(False)
        assert D.Normal(0.0, -1.0).scale.item() == -1.0
        with pytest.raises(ValueError):
            D.Normal(0.0, -1.0, validate_args=True)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_constructor_errors():
    with pytest.raises(ValueError, match=r"^Either `probs` or `logits` must be specified, but not both\.$"):
        D.Bernoulli()
    with pytest.raises(ValueError, match=r"^Either `probs` or `logits` must be specified, but not both\.$"):
        D.Categorical(probs=v(0.5, 0.5), logits=v(0.0, 0.0))
    with pytest.raises(ValueError, match=r"^`probs` parameter must be at least one-dimensional\.$"):
        D.Categorical(probs=ember.tensor(1.0))
    with pytest.raises(ValueError, match=r"^Exactly one of covariance_matrix or precision_matrix or scale_tril may "
                                         r"be specified\.$"):
        D.MultivariateNormal(ember.zeros(2))
    with pytest.raises(ValueError, match=r"^loc must be at least one-dimensional\.$"):
        D.MultivariateNormal(ember.tensor(0.0), ember.eye(1))
    with pytest.raises(ValueError, match=r"^Expected reinterpreted_batch_ndims <= len\(base_distribution.batch_shape\), "
                                         r"actual 2 vs 1$"):
        D.Independent(D.Normal(ember.zeros(3), ember.ones(3)), 2)
    with pytest.raises(NotImplementedError, match=r"^inhomogeneous total_count is not supported$"):
        D.Multinomial(ember.tensor(3), v(0.5, 0.5))
    with pytest.raises(ValueError, match=r"^Input arguments must all be instances of numbers.Number or ember.Tensor"):
        D.Normal([0.0], 1.0)
    with pytest.raises(ValueError, match=r"^transforms must be a Transform or a list of Transforms$"):
        D.TransformedDistribution(D.Normal(0.0, 1.0), [D.ExpTransform(), "exp"])
    with pytest.raises(NotImplementedError, match=r"^Inhomogeneous total count not supported by `entropy`\.$"):
        D.Binomial(v(2.0, 3.0), v(0.5, 0.5)).entropy()
    with pytest.raises(NotImplementedError, match=r"^Enumeration over cartesian product is not implemented$"):
        D.Independent(D.Bernoulli(v(0.5, 0.5)), 1).enumerate_support()


# Shapes.

def test_shapes_expand_and_repr():
    d = D.Normal(ember.zeros(3), ember.ones(3))
    assert d.batch_shape == (3,) and d.event_shape == ()
    assert d.sample().shape == (3,) and d.sample((4, 2)).shape == (4, 2, 3)
    assert d.log_prob(ember.zeros(5, 1)).shape == (5, 3)  # broadcasting against the batch
    e = d.expand((2, 3))
    assert e.batch_shape == (2, 3) and e.loc.shape == (2, 3) and e.sample((4,)).shape == (4, 2, 3)
    scalar = D.Normal(0.0, 1.0)
    assert scalar.batch_shape == () and scalar.sample().shape == () and scalar.loc.dtype == ember.float32
    assert repr(scalar) == "Normal(loc: 0.0, scale: 1.0)"
    assert repr(D.Categorical(logits=ember.zeros(2, 3))) == "Categorical(logits: (2, 3))"
    assert repr(D.Independent(D.Normal(ember.zeros(3), ember.ones(3)), 1)) == \
        "Independent(Normal(loc: (3,), scale: (3,)), 1)"
    with pytest.warns(UserWarning, match=r"sample_n will be deprecated. Use .sample\(\(n,\)\) instead"):
        assert d.sample_n(4).shape == (4, 3)
    with pytest.raises(TypeError):
        d.sample(4)  # a shape is a tuple, as in PyTorch
    assert D.Normal(0.0, 1.0).perplexity().item() == pytest.approx(math.exp(0.5 + 0.5 * math.log(2 * math.pi)))
    for dist in (D.Bernoulli(v(0.3, 0.6)), D.Categorical(probs=ember.ones(2, 3)), D.Binomial(3, v(0.2, 0.5)),
                 D.OneHotCategorical(probs=ember.ones(2, 3)), D.Dirichlet(ember.ones(2, 3)),
                 D.MultivariateNormal(ember.zeros(2, 3), ember.eye(3)), D.Gumbel(v(0.0, 1.0), v(1.0, 1.0)),
                 D.LogNormal(v(0.0, 1.0), v(1.0, 1.0)), D.StudentT(v(3.0, 4.0)), D.Beta(v(1.0, 2.0), v(2.0, 2.0)),
                 D.Chi2(v(1.0, 2.0)), D.HalfNormal(v(1.0, 2.0)), D.Multinomial(4, probs=ember.ones(2, 3))):
        expanded = dist.expand((5, 2))
        assert type(expanded) is type(dist)
        assert expanded.batch_shape == (5, 2) and expanded.event_shape == dist.event_shape
        assert expanded.sample().shape == (5, 2) + dist.event_shape
        assert expanded.log_prob(expanded.sample()).shape == (5, 2)


def test_enumerate_support_and_modes():
    b = D.Bernoulli(v(0.2, 0.5, 0.8))
    assert b.enumerate_support().shape == (2, 3) and b.enumerate_support(expand=False).shape == (2, 1)
    modes = b.mode.tolist()
    assert modes[0] == 0.0 and math.isnan(modes[1]) and modes[2] == 1.0
    c = D.Categorical(probs=ember.ones(2, 4))
    assert c.enumerate_support().shape == (4, 2) and c.enumerate_support().dtype == ember.int64
    assert D.Binomial(4, v(0.5)).enumerate_support().reshape(-1).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert D.OneHotCategorical(probs=ember.ones(3)).enumerate_support().tolist() == np.eye(3).tolist()
    assert D.Binomial(10, v(0.33)).mode.item() == 3.0
    assert D.Gamma(v(0.5), v(1.0)).mode.item() == 0.0 and D.Gamma(v(3.0), v(2.0)).mode.item() == 1.0
    assert D.Poisson(v(3.7)).mode.item() == 3.0
    assert D.Beta(v(2.0), v(4.0)).mode.item() == pytest.approx(0.25)
    assert math.isnan(D.Uniform(0.0, 1.0).mode.item())
    st = D.StudentT(v(0.5, 1.5, 3.0))
    assert math.isnan(st.mean[0].item()) and st.mean[2].item() == 0.0
    assert math.isnan(st.variance[0].item()) and math.isinf(st.variance[1].item())
    assert st.variance[2].item() == pytest.approx(3.0)
    with pytest.raises(NotImplementedError, match="does not implement mode"):
        D.Multinomial(3, v(0.5, 0.5)).mode  # noqa: B018


def test_has_rsample_flags():
    reparameterized = [D.Normal(0.0, 1.0), D.LogNormal(0.0, 1.0), D.Uniform(0.0, 1.0), D.Exponential(1.0),
                       D.Laplace(0.0, 1.0), D.Gumbel(0.0, 1.0), D.Gamma(1.0, 1.0), D.Beta(1.0, 1.0),
                       D.Dirichlet(ember.ones(2)), D.StudentT(3.0), D.MultivariateNormal(ember.zeros(2), ember.eye(2)),
                       D.Cauchy(0.0, 1.0), D.Chi2(2.0)]
    assert all(d.has_rsample for d in reparameterized)
    for d in (D.Bernoulli(0.5), D.Categorical(logits=ember.zeros(2)), D.Poisson(1.0), D.Geometric(0.5),
              D.Binomial(3, v(0.5)), D.Multinomial(3, v(0.5, 0.5))):
        assert not d.has_rsample
        with pytest.raises(NotImplementedError):
            d.rsample()
    st = D.OneHotCategoricalStraightThrough(logits=v(0.2, 0.5).requires_grad_())
    s = st.rsample((3,))
    assert s.requires_grad and s.detach().sum(-1).tolist() == [1.0, 1.0, 1.0]


# Constraints.

def test_constraint_checks_and_reprs():
    x = v(-1.0, 0.0, 0.5, 1.0, float("nan"), float("inf"))
    assert constraints.real.check(x).tolist() == [True, True, True, True, False, True]
    assert constraints.positive.check(x).tolist() == [False, False, True, True, False, True]
    assert constraints.nonnegative.check(x).tolist() == [False, True, True, True, False, True]
    assert constraints.unit_interval.check(x).tolist() == [False, True, True, True, False, False]
    assert constraints.half_open_interval(0.0, 1.0).check(x).tolist() == [False, True, True, False, False, False]
    assert constraints.less_than(0.5).check(x).tolist() == [True, True, False, False, False, False]
    assert constraints.boolean.check(x).tolist() == [False, True, False, True, False, False]
    assert constraints.integer_interval(0, 3).check(v(-1.0, 0.0, 2.0, 2.5, 3.0, 4.0)).tolist() == \
        [False, True, True, False, True, False]
    assert constraints.nonnegative_integer.check(v(-1.0, 0.0, 2.5, 7.0)).tolist() == [False, True, False, True]
    assert constraints.simplex.check(v(0.2, 0.8, 0.3, 0.7).reshape(2, 2)).tolist() == [True, True]
    assert constraints.simplex.check(v(-0.2, 1.2)).item() is False
    assert constraints.one_hot.check(v(0.0, 1.0, 0.0, 1.0, 1.0, 0.0).reshape(2, 3)).tolist() == [True, False]
    assert constraints.multinomial(3).check(v(1.0, 2.0, 2.0, 2.0).reshape(2, 2)).tolist() == [True, False]
    lower = v(2.0, 0.0, 1.0, 3.0).reshape(2, 2)
    assert constraints.lower_cholesky.check(lower).item() is True
    assert constraints.lower_cholesky.check(lower.mT).item() is False
    assert constraints.lower_triangular.check(lower).item() is True
    assert constraints.positive_definite.check(lower @ lower.mT).item() is True
    assert constraints.positive_definite.check(v(1.0, 2.0, 2.0, 1.0).reshape(2, 2)).item() is False
    assert constraints.positive_semidefinite.check(v(1.0, 1.0, 1.0, 1.0).reshape(2, 2)).item() is True
    assert constraints.symmetric.check(lower).item() is False
    assert constraints.square.check(ember.zeros(4, 2, 3)).tolist() == [False] * 4
    assert constraints.corr_cholesky.check(v(1.0, 0.0, 0.6, 0.8).reshape(2, 2)).item() is True
    ind = constraints.independent(constraints.positive, 1)
    assert ind.event_dim == 1 and ind.check(v(1.0, 2.0, 3.0, -1.0).reshape(2, 2)).tolist() == [True, False]
    assert constraints.cat([constraints.positive, constraints.real], 0, [1, 2]).check(v(1.0, -1.0, -2.0)).tolist() \
        == [True, True, True]
    assert constraints.stack([constraints.positive, constraints.real], 1).check(
        v(1.0, -1.0, -2.0, 0.0).reshape(2, 2)).tolist() == [[True, True], [False, True]]
    assert repr(constraints.real) == "Real()"
    assert repr(constraints.positive) == "GreaterThan(lower_bound=0.0)"
    assert repr(constraints.interval(-1, 2)) == "Interval(lower_bound=-1, upper_bound=2)"
    assert repr(constraints.real_vector) == "IndependentConstraint(Real(), 1)"
    assert repr(constraints.simplex) == "Simplex()"
    assert constraints.is_dependent(constraints.dependent) and constraints.is_dependent(D.Uniform.support)
    assert not constraints.is_dependent(constraints.real)
    assert constraints.is_dependent(D.Categorical.support) and D.Categorical.support.is_discrete
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        constraints.dependent.check(v(1.0))
    with pytest.raises(NotImplementedError, match=".is_discrete cannot be determined statically"):
        constraints.dependent.is_discrete  # noqa: B018
    assert constraints.dependent(is_discrete=True, event_dim=1).event_dim == 1


# Transforms.

BIJECTIONS = [
    (transforms.ExpTransform(), v(-1.0, 0.3, 2.0)),
    (transforms.AffineTransform(1.5, -2.0), v(-1.0, 0.3, 2.0)),
    (transforms.AffineTransform(v(0.0, 1.0, 2.0), v(0.5, 2.0, 3.0)), v(-1.0, 0.3, 2.0)),
    (transforms.SigmoidTransform(), v(-3.0, 0.3, 2.0)),
    (transforms.TanhTransform(), v(-1.5, 0.3, 2.0)),
    (transforms.SoftplusTransform(), v(-1.5, 0.3, 2.0)),
    (transforms.PowerTransform(2.5), v(0.4, 1.3, 2.0)),
    (transforms.ExpTransform().inv, v(0.4, 1.3, 2.0)),
    (transforms.ComposeTransform([transforms.AffineTransform(0.5, 2.0), transforms.SigmoidTransform()]),
     v(-1.0, 0.3, 2.0)),
]


@pytest.mark.parametrize("index", range(len(BIJECTIONS)))
def test_elementwise_bijections(index):
    t, x = BIJECTIONS[index]
    y = t(x)
    assert t.bijective and bool(t.codomain.check(y).all())
    np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-10)
    assert t.inv.inv is t
    # log |dy/dx| against autograd's derivative
    xg = x.detach().requires_grad_()
    (dydx,) = ember.autograd.grad(t(xg).sum(), [xg])
    np.testing.assert_allclose(t.log_abs_det_jacobian(x, y).numpy(), np.log(np.abs(dydx.numpy())), rtol=1e-9)
    np.testing.assert_allclose(t.inv.log_abs_det_jacobian(y, x).numpy(), -np.log(np.abs(dydx.numpy())), rtol=1e-9)


def _jacobian_log_det(fn, x):
    """log |det J| of fn: R^n -> R^n at x, by autograd, row by row."""
    xg = x.detach().requires_grad_()
    y = fn(xg)
    rows = [ember.autograd.grad(y[i], [xg], retain_graph=True)[0].numpy() for i in range(y.shape[0])]
    return np.linalg.slogdet(np.stack(rows))[1]


def test_stick_breaking_and_softmax():
    t = transforms.StickBreakingTransform()
    x = v(0.3, -1.2, 2.0)
    y = t(x)
    assert y.shape == (4,) and y.sum().item() == pytest.approx(1.0) and bool(constraints.simplex.check(y))
    np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-10)
    assert t(ember.zeros(3, dtype=ember.float64)).tolist() == pytest.approx([0.25] * 4)  # centred
    # the Jacobian of the first K coordinates (the last one is determined by them)
    ref = _jacobian_log_det(lambda z: t(z)[:3], x)
    assert t.log_abs_det_jacobian(x, y).item() == pytest.approx(ref, rel=1e-9)
    assert t.forward_shape((5, 3)) == (5, 4) and t.inverse_shape((5, 4)) == (5, 3)
    s = transforms.SoftmaxTransform()
    assert np.allclose(s(v(1.0, 2.0, 3.0)).numpy(), np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())
    assert not s.bijective
    np.testing.assert_allclose(s(s.inv(v(0.2, 0.3, 0.5))).numpy(), [0.2, 0.3, 0.5])


def test_matrix_and_structural_transforms():
    x = v(0.3, 5.0, -1.2, 0.4).reshape(2, 2)
    lc = transforms.LowerCholeskyTransform()
    y = lc(x)
    assert bool(constraints.lower_cholesky.check(y)) and y[0, 1].item() == 0.0
    np.testing.assert_allclose(lc.inv(y).numpy(), np.tril(x.numpy()), rtol=1e-12)
    pd = transforms.PositiveDefiniteTransform()
    assert bool(constraints.positive_definite.check(pd(x)))
    np.testing.assert_allclose(pd.inv(pd(x)).numpy(), np.tril(x.numpy()), rtol=1e-10)
    cc = transforms.CorrCholeskyTransform()
    z = v(0.4, -0.8, 1.5)
    corr_l = cc(z)
    assert corr_l.shape == (3, 3) and bool(constraints.corr_cholesky.check(corr_l))
    np.testing.assert_allclose(cc.inv(corr_l).numpy(), z.numpy(), rtol=1e-10)
    from ember.distributions.utils import tril_matrix_to_vec
    ref = _jacobian_log_det(lambda u: tril_matrix_to_vec(cc(u), diag=-1), z)
    assert cc.log_abs_det_jacobian(z, corr_l).item() == pytest.approx(ref, rel=1e-9)
    r = transforms.ReshapeTransform((4,), (2, 2))
    assert r(ember.arange(8.0).reshape(2, 4)).shape == (2, 2, 2) and r.forward_shape((3, 4)) == (3, 2, 2)
    with pytest.raises(ValueError, match="in_shape, out_shape have different numbers of elements"):
        transforms.ReshapeTransform((3,), (2, 2))
    it = transforms.IndependentTransform(transforms.ExpTransform(), 1)
    assert it.log_abs_det_jacobian(v(1.0, 2.0), None).item() == pytest.approx(3.0)
    assert repr(it) == "IndependentTransform(ExpTransform(), 1)"
    cat = transforms.CatTransform([transforms.ExpTransform(), transforms.identity_transform], 0, [1, 2])
    assert cat(v(0.0, 5.0, 6.0)).tolist() == [1.0, 5.0, 6.0]
    assert cat.inv(v(1.0, 5.0, 6.0)).tolist() == [0.0, 5.0, 6.0]
    stack = transforms.StackTransform([transforms.ExpTransform(), transforms.AffineTransform(1.0, 2.0)], 1)
    assert stack(v(0.0, 1.0, 0.0, 2.0).reshape(2, 2)).tolist() == [[1.0, 3.0], [1.0, 5.0]]
    cdf_t = transforms.CumulativeDistributionTransform(D.Normal(0.0, 1.0))
    assert cdf_t(ember.tensor(0.0)).item() == pytest.approx(0.5)


def test_transform_caching_equality_and_errors():
    t = transforms.SigmoidTransform(cache_size=1)
    x = v(40.0)  # saturates: the inverse of the rounded value is not x
    y = t(x)
    assert t.inv(y) is x
    assert transforms.SigmoidTransform().inv(y).item() != 40.0
    assert transforms.ExpTransform() == transforms.ExpTransform()
    assert transforms.AffineTransform(1.0, 2.0) == transforms.AffineTransform(1.0, 2.0)
    assert transforms.AffineTransform(1.0, 2.0) != transforms.AffineTransform(1.0, 3.0)
    assert transforms.ExpTransform().with_cache(1)._cache_size == 1
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        transforms.ExpTransform(cache_size=2)
    assert transforms.AffineTransform(0.0, -2.0).sign == -1
    assert transforms.ComposeTransform([transforms.ExpTransform(), transforms.AffineTransform(0.0, -1.0)]).sign == -1
    assert transforms.StickBreakingTransform().event_dim == 1
    with pytest.raises(ValueError, match="Please use either .domain.event_dim or .codomain.event_dim"):
        transforms.CorrCholeskyTransform().event_dim  # noqa: B018 - vector in, matrix out
    composed = transforms.ComposeTransform([transforms.ExpTransform(), transforms.StickBreakingTransform()])
    assert composed.domain.event_dim == 1 and composed.codomain.event_dim == 1
    assert transforms.identity_transform(v(1.0)).item() == 1.0


@pytest.mark.parametrize("constraint", [constraints.real, constraints.positive, constraints.nonnegative,
                                        constraints.greater_than(2.0), constraints.less_than(-1.0),
                                        constraints.unit_interval, constraints.interval(-2.0, 5.0),
                                        constraints.half_open_interval(0.0, 3.0), constraints.simplex,
                                        constraints.real_vector, constraints.independent(constraints.positive, 1),
                                        constraints.corr_cholesky])
def test_biject_to_round_trip(constraint):
    t = D.biject_to(constraint)
    assert t.bijective
    x = v(-1.3, 0.2, 0.9)
    y = t(x)
    assert bool(constraint.check(y).all())
    np.testing.assert_allclose(t.inv(y).numpy(), x.numpy(), rtol=1e-9, atol=1e-12)
    assert bool(constraint.check(D.transform_to(constraint)(x)).all())


def test_transform_to_and_registry_errors():
    x = v(0.3, 5.0, -1.2, 0.4).reshape(2, 2)
    assert bool(constraints.lower_cholesky.check(D.transform_to(constraints.lower_cholesky)(x)))
    assert bool(constraints.positive_definite.check(D.transform_to(constraints.positive_definite)(x)))
    assert isinstance(D.transform_to(constraints.simplex), transforms.SoftmaxTransform)
    assert isinstance(D.biject_to(constraints.simplex), transforms.StickBreakingTransform)
    assert isinstance(D.biject_to(constraints.positive), transforms.ExpTransform)
    with pytest.raises(NotImplementedError, match=r"^Cannot transform _Boolean constraints$"):
        D.biject_to(constraints.boolean)
    with pytest.raises(TypeError, match="Expected constraint to be either a Constraint subclass or instance"):
        D.biject_to.register(int, lambda c: None)
    # optimization in the unconstrained space, mapped onto the positive reals
    u = ember.zeros(1, dtype=ember.float64, requires_grad=True)
    opt = ember.optim.SGD([u], lr=0.05)
    for _ in range(200):
        scale = D.transform_to(constraints.positive)(u)
        loss = -D.Normal(0.0, scale).log_prob(v(2.0, -2.0, 2.0, -2.0)).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert D.transform_to(constraints.positive)(u).item() == pytest.approx(2.0, rel=1e-3)


# KL divergence.

def _kl_by_quadrature(p, q, grid):
    x = ember.tensor(grid)
    lp, lq = p.log_prob(x).numpy(), q.log_prob(x).numpy()
    dens = np.exp(lp)
    with np.errstate(invalid="ignore"):  # -inf - -inf where p has no mass: masked out
        f = np.where(dens > 0, dens * (lp - lq), 0.0)
    return float(np.sum(np.diff(grid) * (f[1:] + f[:-1]) / 2))


REAL = np.sinh(np.linspace(-math.asinh(1e4), math.asinh(1e4), 400001))
POSITIVE = np.exp(np.linspace(math.log(1e-12), math.log(1e4), 400001))
UNIT = 1 / (1 + np.exp(-np.linspace(-30, 30, 400001)))
CONTINUOUS_KL = [
    (D.Normal(v(0.3), v(0.8)), D.Normal(v(-0.5), v(1.7)), REAL),
    (D.Laplace(v(0.3), v(0.8)), D.Laplace(v(-0.5), v(1.7)), REAL),
    (D.Gumbel(v(0.3), v(0.8)), D.Gumbel(v(-0.5), v(1.7)), REAL),
    (D.Cauchy(v(0.3), v(0.8)), D.Cauchy(v(-0.5), v(1.7)), np.sinh(np.linspace(-math.asinh(1e9), math.asinh(1e9),
                                                                                 800001))),
    (D.Gamma(v(2.5), v(1.5)), D.Gamma(v(1.5), v(0.5)), POSITIVE),
    (D.Exponential(v(2.5)), D.Exponential(v(0.7)), POSITIVE),
    (D.Beta(v(2.5), v(1.5)), D.Beta(v(1.2), v(3.0)), UNIT),
    (D.Uniform(v(0.2), v(0.7)), D.Uniform(v(0.0), v(1.0)), np.linspace(0.2, 0.7, 200001)),
    (D.HalfNormal(v(0.8)), D.HalfNormal(v(1.9)), POSITIVE),
    (D.LogNormal(v(0.2), v(0.6)), D.LogNormal(v(-0.1), v(0.9)), POSITIVE),
    (D.Chi2(v(3.0)), D.Chi2(v(5.0)), POSITIVE),
    (D.Exponential(v(2.5)), D.Gamma(v(1.5), v(0.5)), POSITIVE),
    (D.Exponential(v(2.5)), D.Normal(v(0.3), v(1.1)), POSITIVE),
    (D.Uniform(v(0.2), v(0.7)), D.Normal(v(0.3), v(1.1)), np.linspace(0.2, 0.7, 200001)),
    (D.Uniform(v(0.2), v(0.7)), D.Exponential(v(1.3)), np.linspace(0.2, 0.7, 200001)),
    (D.Normal(v(0.3), v(0.8)), D.Laplace(v(-0.5), v(1.7)), REAL),
    (D.Normal(v(0.3), v(0.8)), D.Gumbel(v(-0.5), v(1.7)), REAL),
    (D.Beta(v(2.5), v(1.5)), D.Uniform(v(0.0), v(1.0)), UNIT),
]


@pytest.mark.parametrize("index", range(len(CONTINUOUS_KL)))
def test_kl_divergence_against_quadrature(index):
    p, q, grid = CONTINUOUS_KL[index]
    got = D.kl_divergence(p, q)
    assert got.shape == (1,)
    assert got.item() == pytest.approx(_kl_by_quadrature(p, q, grid), rel=1e-5, abs=1e-7)


def test_kl_divergence_discrete_and_multivariate():
    def exact(p, q, support):
        lp, lq = p.log_prob(support).numpy(), q.log_prob(support).numpy()
        return (np.exp(lp) * (lp - lq)).sum(0)

    cases = [
        (D.Bernoulli(v(0.3, 0.9)), D.Bernoulli(v(0.6, 0.2)), v(0.0, 1.0).reshape(2, 1)),
        (D.Categorical(probs=v(0.2, 0.3, 0.5)), D.Categorical(logits=v(1.0, -1.0, 0.5)), ember.tensor([0, 1, 2])),
        (D.Geometric(v(0.3)), D.Geometric(v(0.6)), ember.arange(0.0, 300.0, dtype=ember.float64).reshape(-1, 1)),
        (D.Poisson(v(3.0)), D.Poisson(v(5.5)), ember.arange(0.0, 100.0, dtype=ember.float64).reshape(-1, 1)),
        (D.Binomial(9, v(0.3)), D.Binomial(9, v(0.7)), ember.arange(0.0, 10.0, dtype=ember.float64).reshape(-1, 1)),
    ]
    for p, q, support in cases:
        np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), exact(p, q, support), rtol=1e-9)
    oh_p, oh_q = D.OneHotCategorical(probs=v(0.2, 0.3, 0.5)), D.OneHotCategorical(probs=v(0.5, 0.3, 0.2))
    assert D.kl_divergence(oh_p, oh_q).item() == pytest.approx(np.sum([0.2, 0.3, 0.5] * np.log(
        np.array([0.2, 0.3, 0.5]) / [0.5, 0.3, 0.2])))
    # infinite where q has no mass that p has
    assert math.isinf(D.kl_divergence(D.Bernoulli(v(0.5)), D.Bernoulli(v(0.0))).item())
    assert D.kl_divergence(D.Bernoulli(v(0.0)), D.Bernoulli(v(0.5))).item() == pytest.approx(math.log(2))
    assert math.isinf(D.kl_divergence(D.Uniform(v(0.0), v(2.0)), D.Uniform(v(0.0), v(1.0))).item())
    assert math.isinf(D.kl_divergence(D.Binomial(10, v(0.5)), D.Binomial(9, v(0.5))).item())
    with pytest.raises(NotImplementedError, match="q.total_count > p.total_count"):
        D.kl_divergence(D.Binomial(8, v(0.5)), D.Binomial(9, v(0.5)))
    # multivariate normal: the closed form, written out with NumPy
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((3, 3)), rng.standard_normal((3, 3))
    s1, s2 = a @ a.T + np.eye(3), b @ b.T + np.eye(3)
    m1, m2 = rng.standard_normal(3), rng.standard_normal(3)
    ref = 0.5 * (np.trace(np.linalg.solve(s2, s1)) + (m2 - m1) @ np.linalg.solve(s2, m2 - m1) - 3
                 + np.log(np.linalg.det(s2) / np.linalg.det(s1)))
    mvn_p = D.MultivariateNormal(ember.tensor(m1), covariance_matrix=ember.tensor(s1))
    mvn_q = D.MultivariateNormal(ember.tensor(m2), precision_matrix=ember.tensor(np.linalg.inv(s2)))
    assert D.kl_divergence(mvn_p, mvn_q).item() == pytest.approx(ref, rel=1e-9)
    with pytest.raises(ValueError, match="different event shapes"):
        D.kl_divergence(mvn_p, D.MultivariateNormal(ember.zeros(2, dtype=ember.float64), ember.eye(2,
                                                                                                  dtype=ember.float64)))
    # Dirichlet, Independent: Monte Carlo with a fixed seed, within a few standard errors
    ember.manual_seed(0)
    for p, q in ((D.Dirichlet(v(0.8, 2.0, 3.0)), D.Dirichlet(v(2.0, 1.0, 1.5))),
                 (D.Independent(D.Normal(v(0.0, 1.0), v(1.0, 2.0)), 1),
                  D.Independent(D.Normal(v(1.0, 0.0), v(2.0, 1.0)), 1))):
        x = p.sample((100000,))
        ratio = (p.log_prob(x) - q.log_prob(x)).numpy()
        assert abs(D.kl_divergence(p, q).item() - ratio.mean()) < 5 * ratio.std() / math.sqrt(len(ratio))
    # exponential families without a closed form registered: the Bregman divergence
    assert D.kl_divergence(D.Poisson(v(3.0)), D.Poisson(v(5.5))).item() == pytest.approx(
        3.0 * math.log(3.0 / 5.5) - 3.0 + 5.5)
    from ember.distributions.kl import _kl_expfamily_expfamily
    bregman = _kl_expfamily_expfamily(D.Gamma(v(2.5), v(1.5)), D.Gamma(v(1.5), v(0.5)))
    np.testing.assert_allclose(bregman.detach().numpy(),
                               D.kl_divergence(D.Gamma(v(2.5), v(1.5)), D.Gamma(v(1.5), v(0.5))).numpy(), rtol=1e-10)
    np.testing.assert_allclose(D.Gamma(v(2.5), v(1.5)).entropy().numpy(),
                               D.ExponentialFamily.entropy(D.Gamma(v(2.5), v(1.5))).detach().numpy(), rtol=1e-10)


def test_kl_registry_dispatch():
    with pytest.raises(NotImplementedError, match=r"^No KL\(p \|\| q\) is implemented for p type Cauchy and q type "
                                                  r"Laplace$"):
        D.kl_divergence(D.Cauchy(0.0, 1.0), D.Laplace(0.0, 1.0))
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass but got <class 'int'>"):
        D.register_kl(int, D.Normal)

    class MyNormal(D.Normal):
        pass

    class MyOtherNormal(D.Normal):
        pass

    # a subclass uses its parent's implementation until it registers a more specific one
    p, q = MyNormal(0.0, 1.0), D.Normal(1.0, 1.0)
    assert D.kl_divergence(p, q).item() == pytest.approx(0.5)

    @D.register_kl(MyNormal, D.Normal)
    def _mine(p, q):
        return ember.tensor(-1.0)

    try:
        assert D.kl_divergence(p, q).item() == -1.0
        assert D.kl_divergence(p, MyOtherNormal(0.0, 1.0)).item() == -1.0

        @D.register_kl(D.Normal, MyOtherNormal)
        def _theirs(p, q):
            return ember.tensor(-2.0)

        # (MyNormal, Normal) and (Normal, MyOtherNormal) are each more specific on one side
        with pytest.warns(RuntimeWarning, match=r"Ambiguous kl_divergence\(MyNormal, MyOtherNormal\)"):
            D.kl_divergence(p, MyOtherNormal(0.0, 1.0))
    finally:
        from ember.distributions import kl
        kl._KL_REGISTRY.pop((MyNormal, D.Normal), None)
        kl._KL_REGISTRY.pop((D.Normal, MyOtherNormal), None)
        kl._KL_MEMOIZE.clear()
    # different exponential families have no Bregman form
    with pytest.raises(NotImplementedError, match="cross KL-divergence between different exponential families"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Beta(1.0, 1.0))


# A REINFORCE policy: a two-context, three-armed bandit where the best arm depends on the context.

def test_reinforce_policy_improves_reward():
    ember.manual_seed(0)
    policy = ember.nn.Sequential(ember.nn.Linear(2, 16), ember.nn.Tanh(), ember.nn.Linear(16, 3))
    optimizer = ember.optim.Adam(policy.parameters(), lr=0.05)
    best_arm = ember.tensor([2, 0])
    contexts = ember.eye(2)

    def expected_reward():
        with ember.no_grad():
            probs = D.Categorical(logits=policy(contexts)).probs
        return probs.gather(1, best_arm.unsqueeze(1)).mean().item()

    before = expected_reward()
    baseline = 0.0
    for _ in range(150):
        which = ember.randint(0, 2, (32,))
        dist = D.Categorical(logits=policy(contexts[which]))
        actions = dist.sample()
        rewards = (actions == best_arm[which]).to(ember.float32)
        loss = -(dist.log_prob(actions) * (rewards - baseline)).mean()
        baseline = 0.9 * baseline + 0.1 * rewards.mean().item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    after = expected_reward()
    assert before < 0.5
    assert after > 0.95
