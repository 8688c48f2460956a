"""ember.masked (torch.masked's reductions): every function against a float64 NumPy reference over
the unmasked elements, on contiguous, non-contiguous, broadcast-mask, zero-size and 0-dim inputs;
PyTorch 2.13's values on a fixed example; gradients by gradcheck; the errors."""

import math

import numpy as np
import pytest

import ember
import ember.masked as M
from ember.autograd import gradcheck

RNG = np.random.default_rng(3)
X = RNG.standard_normal((4, 5))
MASK = RNG.random((4, 5)) < 0.6
MASK[1] = False  # a row with nothing left


def _ref(name, x, m, dim):
    """The float64 reference of `name` along `dim` (None: all) over x's elements where m holds."""
    x = np.broadcast_to(x, np.broadcast_shapes(x.shape, m.shape))
    m = np.broadcast_to(m, x.shape)
    keep = lambda fill: np.where(m, x, fill)  # noqa: E731
    axis = None if dim is None else dim
    count = m.sum(axis=axis)
    with np.errstate(all="ignore"):
        if name == "sum":
            return keep(0).sum(axis=axis)
        if name == "prod":
            return keep(1).prod(axis=axis)
        if name == "amax":
            return keep(-np.inf).max(axis=axis)
        if name == "amin":
            return keep(np.inf).min(axis=axis)
        if name == "mean":
            return keep(0).sum(axis=axis) / count
        if name == "logsumexp":
            return np.log(np.exp(keep(-np.inf)).sum(axis=axis))
        if name == "norm":
            return np.sqrt((keep(0) ** 2).sum(axis=axis))
        if name == "var":
            mean = keep(0).sum(axis=axis, keepdims=True) / m.sum(axis=axis, keepdims=True)
            sq = np.where(m, (x - mean) ** 2, 0).sum(axis=axis)
            return np.where(count - 1 > 0, sq / np.maximum(count - 1, 1), np.nan)
    raise AssertionError(name)


REDUCTIONS = ["sum", "prod", "amax", "amin", "mean", "logsumexp", "norm", "var"]


def _call(name):
    """The function, with norm's ord (2, its default) bound so dim comes second for all."""
    f = getattr(M, name)
    return (lambda x, *args, **kw: f(x, 2.0, *args, **kw)) if name == "norm" else f


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("dim", [None, 0, 1, (0, 1)])
def test_reductions_match_the_masked_reference(name, dim):
    x, m = ember.tensor(X), ember.tensor(MASK)
    got = _call(name)(x, dim, mask=m)
    np.testing.assert_allclose(got.numpy(), _ref(name, X, MASK, dim if not isinstance(dim, tuple) else None),
                               rtol=1e-12, atol=1e-12, equal_nan=True)
    kept = _call(name)(x, dim, keepdim=True, mask=m)
    assert kept.dim() == 2 and kept.numel() == got.numel()


@pytest.mark.parametrize("name", REDUCTIONS)
def test_non_contiguous_input_broadcast_mask_zero_size_and_0_dim(name):
    f = _call(name)
    xt = ember.tensor(X.T.copy()).t()  # non-contiguous, the same values
    assert not xt.is_contiguous()
    np.testing.assert_allclose(f(xt, 1, mask=ember.tensor(MASK)).numpy(), _ref(name, X, MASK, 1), rtol=1e-12,
                               equal_nan=True)
    row = MASK[0]  # (5,) mask broadcast over the rows
    np.testing.assert_allclose(f(ember.tensor(X), 1, mask=ember.tensor(row)).numpy(),
                               _ref(name, X, np.broadcast_to(row, X.shape), 1), rtol=1e-12, equal_nan=True)
    assert f(ember.zeros(0, 3, dtype=ember.float64), 1, mask=ember.zeros(0, 3, dtype=ember.bool)).shape == (0,)
    scalar = f(ember.tensor(2.5, dtype=ember.float64), mask=ember.tensor(True))
    assert scalar.shape == () and (math.isnan(float(scalar)) if name == "var" else
                                   float(scalar) == pytest.approx(_ref(name, np.array(2.5), np.array(True), None)))
    # no mask: the plain reduction
    np.testing.assert_allclose(f(ember.tensor(X), 0).numpy(), _ref(name, X, np.ones_like(MASK), 0), rtol=1e-12)


def test_values_read_off_pytorch():
    # PyTorch 2.13's torch.masked on the same inputs
    x = ember.tensor([[1., -2., 3.], [4., 5., -6.]])
    m = ember.tensor([[True, False, True], [False, True, False]])
    assert M.var(x, 1, mask=m).tolist()[0] == 2.0 and math.isnan(M.var(x, 1, mask=m).tolist()[1])
    assert M.var(x, 1, correction=0, mask=m).tolist() == [1.0, 0.0]
    fractional = M.var(x, 1, correction=1.5, mask=m).tolist()  # row 0: 2 / (2 - 1.5); row 1: 1 - 1.5 < 0
    assert fractional[0] == 4.0 and math.isnan(fractional[1])
    assert M.std(x, 1, unbiased=False, mask=m).tolist() == [1.0, 0.0]
    assert M.norm(x, -math.inf, 1, mask=m).tolist() == [1.0, 5.0]
    assert M.norm(x, 0, 1, mask=m).tolist() == [2.0, 1.0]
    assert M.median(x, mask=m).tolist() == [1.0, 5.0] and M.median(x, 0, mask=m).tolist() == [1.0, 5.0, 3.0]
    assert M.argmax(x, mask=m).item() == 4.0 and M.argmax(x, mask=m).dtype == ember.float32
    assert M.argmax(x, 1, keepdim=True, mask=m).tolist() == [[2.0], [1.0]]
    assert M.argmin(x, 1, mask=m, dtype=ember.int64).tolist() == [0, 1]
    xi = ember.tensor([[1, -2, 3], [4, 5, -6]])
    none = ember.zeros(2, 3, dtype=ember.bool)
    assert M.amax(xi, 1, mask=none).tolist() == [-2 ** 63] * 2 and M.amin(xi, 1, mask=none).tolist() == [2 ** 63 - 1] * 2
    assert M.sum(xi, 1, dtype=ember.float64, mask=m).tolist() == [4.0, 5.0] and M.sum(xi, 1, mask=m).dtype == ember.int64
    assert M.prod(xi, 1, mask=m).tolist() == [3, 5]
    assert M.sum(x, 1, mask=ember.tensor([[1, 0, 1], [0, 1, 0]])).tolist() == [4.0, 5.0]  # any dtype, read as bool
    np.testing.assert_allclose(M.logaddexp(x, ember.zeros(3), input_mask=m,
                                           other_mask=ember.tensor([True, True, False])).numpy(),
                               [[1.3132616875, 0.0, 3.0], [0.0, 5.0067153485, -np.inf]], rtol=1e-6)
    np.testing.assert_allclose(M.cumsum(x, 1, dtype=ember.float64, mask=m).numpy(), [[1, 1, 4], [0, 5, 5]])
    np.testing.assert_allclose(M.cumprod(x, 1, mask=m).numpy(), [[1, 1, 3], [1, 5, 5]])


def test_normalizations():
    x, m = ember.tensor(X), ember.tensor(MASK)
    s = M.softmax(x, 1, mask=m).numpy()
    e = np.where(MASK, np.exp(X - X.max(axis=1, keepdims=True)), 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        np.testing.assert_allclose(s, e / e.sum(axis=1, keepdims=True), rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(M.log_softmax(x, 1, mask=m).numpy(), np.log(e / e.sum(axis=1, keepdims=True)),
                                   rtol=1e-12, equal_nan=True)
        em = np.where(MASK, np.exp(-X), 0)
        np.testing.assert_allclose(M.softmin(x, 1, mask=m).numpy(), em / em.sum(axis=1, keepdims=True), rtol=1e-12,
                                   equal_nan=True)
    assert np.isnan(s[1]).all()  # the all-masked row
    kept = np.where(MASK, X, 0)
    n = np.maximum(np.sqrt((kept ** 2).sum(axis=1, keepdims=True)), 1e-12)
    np.testing.assert_allclose(M.normalize(x, 2.0, 1, mask=m).numpy(), kept / n, rtol=1e-12)


def test_gradients_reach_only_unmasked_elements():
    x = ember.tensor(X, requires_grad=True)
    m = ember.tensor(MASK)
    full = ember.tensor(np.ones_like(MASK))
    for f in (lambda t: M.sum(t, 1, mask=m), lambda t: M.amax(t, 1, mask=full), lambda t: M.norm(t, 2.0, 1, mask=m),
              lambda t: M.softmax(t, 1, mask=full), lambda t: M.logsumexp(t, 0, mask=full),
              lambda t: M.var(t, 0, mask=full), lambda t: M.mean(t, 0, mask=full), lambda t: M.prod(t, 1, mask=m)):
        assert gradcheck(f, (x,))
    M.sum(x, mask=m).backward()
    np.testing.assert_array_equal(x.grad.numpy(), MASK.astype(np.float64))


def test_errors():
    x = ember.ones(2, 3)
    with pytest.raises(IndexError, match="mask dimensionality higher than of the input"):
        M.sum(x, 1, mask=ember.ones(1, 2, 3, dtype=ember.bool))
    with pytest.raises(RuntimeError):
        M.sum(x, 1, mask=ember.ones(2, 2, dtype=ember.bool))
    with pytest.raises(ValueError, match="mean\\(\\): Could not infer output dtype. Input dtype must be either a "
                                         "floating point or complex dtype. Got: ember.int64"):
        M.mean(ember.tensor([1, 2, 3]), 0)
    with pytest.raises(ValueError, match="only one of unbiased and correction"):
        M.var(x, 1, True, correction=1)
    with pytest.raises(IndexError):
        M.sum(x, 5)
