"""More names PyTorch scripts use (issue 18, item 1), composed in ember/_composites_py.py:
float_power, cov, corrcoef, quantile, nanquantile, block_diag, cartesian_prod, combinations,
isin, histogram, dist, adjoint, hsplit/vsplit/dsplit, frexp, det/logdet/slogdet, the in-place
addcdiv_ ... cumprod_, fill_diagonal_, and the random fills exponential_, geometric_, cauchy_,
log_normal_, random_. Each is checked against a float64 NumPy reference."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck

RNG = np.random.default_rng(18)


def t64(a, requires_grad=False):
    return ember.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def close(got, want, **kw):
    np.testing.assert_allclose(np.asarray(got.detach().numpy() if isinstance(got, ember.Tensor) else got),
                               np.asarray(want), **{"rtol": 1e-10, "atol": 1e-12, **kw})


def noncontig(a):
    """The same values as `a` (2-D) in a non-contiguous ember tensor (a transposed view)."""
    t = t64(np.ascontiguousarray(a.T)).t()
    assert not t.is_contiguous()
    return t


# ---- float_power --------------------------------------------------------------------------------


def test_float_power_values_broadcast_layouts():
    a, b = RNG.uniform(0.5, 2, (3, 4)), RNG.uniform(-2, 2, (4,))
    close(ember.float_power(t64(a), t64(b)), np.power(a, b))
    close(ember.float_power(noncontig(a), t64(b)), np.power(a, b))
    close(ember.float_power(t64(a), 2.5), a ** 2.5)
    close(ember.float_power(2, t64(b)), 2.0 ** b)
    assert ember.float_power(ember.zeros(0, 3), 2).shape == (0, 3)
    close(ember.float_power(t64(3.0), t64(2.0)), 9.0)
    out = ember.float_power(ember.arange(4, dtype=ember.int32), 2)
    assert out.dtype == ember.float64 and out.tolist() == [0.0, 1.0, 4.0, 9.0]
    f32 = ember.tensor([1.1], dtype=ember.float32)
    assert ember.float_power(f32, 3).dtype == ember.float64
    close(ember.float_power(f32, 3), np.float64(np.float32(1.1)) ** 3)  # computed in double
    assert ember.float_power(f32, ember.tensor(1j)).dtype == ember.complex128
    zc = np.array([1.5 + 0.5j, -2.0 + 0.0j, 0.3 - 1j])
    close(ember.float_power(ember.tensor(zc), 0.5 + 1j), np.power(zc, 0.5 + 1j))
    close(ember.float_power(t64([2.0, 3.0]), ember.tensor(1j, dtype=ember.complex64)), np.power([2.0, 3.0], 1j))
    assert f32.float_power(2).dtype == ember.float64


def test_float_power_in_place():
    a = RNG.uniform(0.5, 2, (2, 3))
    x = t64(a)
    assert x.float_power_(t64([1.0, 2.0, 3.0])) is x
    close(x, a ** np.array([1.0, 2.0, 3.0]))
    with pytest.raises(RuntimeError, match="the base given to float_power_ has dtype float32 but the operation's "
                                           "result requires dtype float64"):
        ember.ones(3).float_power_(2)
    with pytest.raises(RuntimeError, match="requires dtype complex128"):
        ember.ones(3, dtype=ember.float64).float_power_(ember.tensor(1j))
    with pytest.raises(TypeError, match="must be Tensor, not int"):
        ember.float_power(2, 3)


def test_float_power_gradcheck():
    a = t64(RNG.uniform(0.5, 2, (2, 3)), True)
    b = t64(RNG.uniform(-1, 1, (3,)), True)
    assert gradcheck(ember.float_power, (a, b))
    assert gradcheck(lambda x: x.clone().float_power_(1.7), (a,))


# ---- cov, corrcoef ------------------------------------------------------------------------------


def test_cov_matches_numpy():
    a = RNG.normal(size=(3, 7))
    close(ember.cov(t64(a)), np.cov(a))
    close(ember.cov(noncontig(a)), np.cov(a))
    close(ember.cov(t64(a), correction=0), np.cov(a, ddof=0))
    close(ember.cov(t64(a), correction=2), np.cov(a, ddof=2))
    fw = RNG.integers(0, 4, 7)
    fw[0] = 1
    aw = RNG.uniform(0.1, 2, 7)
    close(ember.cov(t64(a), fweights=ember.tensor(fw)), np.cov(a, fweights=fw))
    close(ember.cov(t64(a), aweights=t64(aw)), np.cov(a, aweights=aw))
    close(ember.cov(t64(a), fweights=ember.tensor(fw), aweights=t64(aw)), np.cov(a, fweights=fw, aweights=aw))
    close(ember.cov(t64(a), correction=0, aweights=t64(aw)), np.cov(a, aweights=aw, ddof=0))
    v = RNG.normal(size=5)
    c = ember.cov(t64(v))
    assert c.shape == () and np.isclose(c.item(), np.cov(v))
    assert t64(a).cov().shape == (3, 3)
    ints = ember.tensor([[1, 2, 4], [0, 3, 3]])
    assert ember.cov(ints).dtype == ember.float32
    close(ember.cov(ints), np.cov(np.array([[1, 2, 4], [0, 3, 3]])), rtol=1e-6)
    complex_ = RNG.normal(size=(2, 5)) + 1j * RNG.normal(size=(2, 5))
    close(ember.cov(ember.tensor(complex_)), np.cov(complex_))


def test_cov_degenerate_sizes():
    assert ember.cov(ember.zeros(0, 3)).shape == (0, 0)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        c = ember.cov(ember.zeros(2, 0))
    assert c.shape == (2, 2) and bool(ember.isnan(c).all())
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        c = ember.cov(t64(2.0))
    assert c.shape == ()


def test_cov_bad_input():
    x = ember.randn(3, 4)
    with pytest.raises(RuntimeError, match="cov\\(\\): expected input to have two or fewer dimensions but got an "
                                           "input with 3 dimensions"):
        ember.cov(ember.randn(2, 2, 2))
    with pytest.raises(RuntimeError, match="expected fweights to have integral dtype but got fweights with float32"):
        ember.cov(x, fweights=ember.ones(4))
    with pytest.raises(RuntimeError, match="expected fweights to have one or fewer dimensions"):
        ember.cov(x, fweights=ember.ones(4, 1, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="same numel as there are observations in the input but got 3 != 4"):
        ember.cov(x, fweights=ember.ones(3, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="cov\\(\\): fweights cannot be negative"):
        ember.cov(x, fweights=-ember.ones(4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="expected aweights to have floating point dtype"):
        ember.cov(x, aweights=ember.ones(4, dtype=ember.int64))
    with pytest.raises(RuntimeError, match="cov\\(\\): aweights cannot be negative"):
        ember.cov(x, aweights=-ember.ones(4))


def test_corrcoef_matches_numpy():
    a = RNG.normal(size=(4, 9))
    close(ember.corrcoef(t64(a)), np.corrcoef(a))
    close(ember.corrcoef(noncontig(a)), np.corrcoef(a))
    close(t64(a).corrcoef(), np.corrcoef(a))
    c = ember.corrcoef(t64(RNG.normal(size=6)))
    assert c.shape == () and c.item() == 1.0
    assert ember.corrcoef(ember.zeros(0, 3)).shape == (0, 0)
    got = ember.corrcoef(t64(np.vstack([a[0], 2 * a[0]]))).numpy()
    assert (np.abs(got) <= 1).all()
    with pytest.raises(RuntimeError, match="corrcoef\\(\\): expected input to have two or fewer dimensions"):
        ember.corrcoef(ember.randn(2, 2, 2))


def test_cov_corrcoef_gradcheck():
    a = t64(RNG.normal(size=(3, 5)), True)
    aw = t64(RNG.uniform(0.5, 2, 5), True)
    assert gradcheck(lambda x, w: ember.cov(x, aweights=w), (a, aw))
    assert gradcheck(lambda x: ember.cov(x, fweights=ember.tensor([1, 2, 1, 3, 1])), (a,))
    assert gradcheck(ember.corrcoef, (a,))


# ---- quantile, nanquantile ----------------------------------------------------------------------


@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile_matches_numpy(interpolation):
    a = RNG.normal(size=(4, 7))
    q = np.array([0.0, 0.1, 0.25, 0.5, 0.9, 1.0])
    kw = {"interpolation": interpolation}
    close(ember.quantile(t64(a), 0.3, **kw), np.quantile(a, 0.3, method=interpolation))
    close(ember.quantile(t64(a), t64(q), **kw), np.quantile(a, q, method=interpolation))
    for dim in (0, 1, -1):
        close(ember.quantile(t64(a), t64(q), dim=dim, **kw), np.quantile(a, q, axis=dim, method=interpolation))
        close(ember.quantile(noncontig(a), 0.4, dim=dim, keepdim=True, **kw),
              np.quantile(a, 0.4, axis=dim, keepdims=True, method=interpolation))
    got = ember.quantile(t64(a), t64(q), dim=1, keepdim=True, **kw)
    assert got.shape == (6, 4, 1)
    close(got, np.quantile(a, q, axis=1, keepdims=True, method=interpolation))
    assert ember.quantile(t64(a), t64(q), keepdim=True, **kw).shape == (6, 1, 1)
    close(t64(a).quantile(0.5, 0, **kw), np.quantile(a, 0.5, axis=0, method=interpolation))


def test_quantile_scalars_sizes_and_nan():
    close(ember.quantile(t64(2.5), 0.3), 2.5)
    assert ember.quantile(t64(2.5), 0.3, dim=0, keepdim=True).shape == ()
    assert ember.quantile(ember.randn(3, 4), ember.tensor([])).shape == (0,)
    assert ember.quantile(ember.randn(3, 4), ember.tensor(0.5)).shape == ()
    assert ember.quantile(ember.randn(3, 4), ember.tensor([0.5]), dim=0).shape == (1, 4)
    a = np.array([[1.0, np.nan, 3.0, 4.0], [2.0, 5.0, 1.0, 0.0], [np.nan] * 4])
    close(ember.quantile(t64(a), 0.5, dim=1), np.quantile(a, 0.5, axis=1))
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        want = np.nanquantile(a, [0.2, 0.75], axis=1)
    close(ember.nanquantile(t64(a), t64([0.2, 0.75]), dim=1), want)
    close(ember.nanquantile(t64(a[:2]), 0.5), np.nanquantile(a[:2], 0.5))
    close(t64(a).nanquantile(0.5, dim=0, interpolation="higher"), np.nanquantile(a, 0.5, axis=0, method="higher"))
    f32 = RNG.normal(size=(5, 3)).astype(np.float32)
    got = ember.quantile(ember.tensor(f32), 0.3, dim=0)
    assert got.dtype == ember.float32
    close(got, np.quantile(f32.astype(np.float64), 0.3, axis=0), rtol=1e-6, atol=1e-6)


def test_quantile_bad_input():
    x = ember.randn(3, 4)
    with pytest.raises(RuntimeError, match="quantile\\(\\) input tensor must be either float or double dtype"):
        ember.quantile(ember.arange(3), 0.5)
    with pytest.raises(RuntimeError, match="quantile\\(\\) q must be in the range \\[0, 1\\] but got 1.5"):
        ember.quantile(x, 1.5)
    with pytest.raises(RuntimeError, match="quantile\\(\\) q values must be in the range \\[0, 1\\]"):
        ember.quantile(x, ember.tensor([0.5, 1.5]))
    with pytest.raises(RuntimeError, match="q tensor must be same dtype as the input tensor"):
        ember.quantile(x, ember.tensor([0.5], dtype=ember.float64))
    with pytest.raises(RuntimeError, match="q must be a scalar or 1D tensor"):
        ember.quantile(x, ember.full((2, 2), 0.5))
    with pytest.raises(RuntimeError, match="quantile\\(\\) input tensor must be non-empty"):
        ember.nanquantile(ember.zeros(0), 0.5)
    with pytest.raises(RuntimeError, match="interpolation must be one of linear, lower, higher, midpoint or nearest, "
                                           "but got foo"):
        ember.quantile(x, 0.5, interpolation="foo")
    with pytest.raises(IndexError, match="Dimension out of range \\(expected to be in range of \\[-2, 1\\], but got 2\\)"):
        ember.quantile(x, 0.5, dim=2)


def test_quantile_gradcheck():
    a = t64(RNG.normal(size=(3, 5)), True)
    q = ember.tensor([0.1, 0.5, 0.85], dtype=ember.float64)
    assert gradcheck(lambda x: ember.quantile(x, q, dim=1), (a,))
    assert gradcheck(lambda x: ember.quantile(x, 0.3, interpolation="midpoint"), (a,))
    b = t64(RNG.normal(size=(3, 5)))
    b[0, 1] = math.nan
    b.requires_grad_()
    assert gradcheck(lambda x: ember.nanquantile(x, q, dim=1), (b,))


# ---- block_diag, cartesian_prod, combinations ---------------------------------------------------


def _block_diag_np(*arrays):
    blocks = [np.atleast_2d(a) for a in arrays]
    out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)))
    r = c = 0
    for b in blocks:
        out[r:r + b.shape[0], c:c + b.shape[1]] = b
        r, c = r + b.shape[0], c + b.shape[1]
    return out


def test_block_diag():
    a, b, c = RNG.normal(size=(2, 3)), RNG.normal(size=(4,)), np.float64(5.0)
    close(ember.block_diag(t64(a), t64(b), t64(c)), _block_diag_np(a, b, c))
    m = RNG.normal(size=(3, 2))
    close(ember.block_diag(noncontig(m), t64(a)), _block_diag_np(m, a))
    assert ember.block_diag(ember.ones(0, 2), ember.ones(2, 0)).shape == (2, 2)
    assert ember.block_diag().shape == (1, 0)
    mixed = ember.block_diag(ember.ones(2, dtype=ember.int32), ember.ones(1, 2))
    assert mixed.dtype == ember.float32 and mixed.shape == (2, 4)
    with pytest.raises(RuntimeError, match="torch.block_diag: Input tensors must have 2 or fewer dimensions. "
                                           "Input 1 has 3 dimensions"):
        ember.block_diag(ember.ones(2), ember.ones(2, 2, 2))
    x, y = t64(a, True), t64(b, True)
    assert gradcheck(ember.block_diag, (x, y))


def test_cartesian_prod_and_combinations():
    a, b, c = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0]), np.array([7.0])
    close(ember.cartesian_prod(t64(a), t64(b), t64(c)), list(itertools.product(a, b, c)))
    strided = t64(np.arange(6.0))[::2]
    close(ember.cartesian_prod(strided, t64(a)), list(itertools.product([0.0, 2.0, 4.0], a)))
    single = t64(a)
    assert ember.cartesian_prod(single) is single
    assert ember.cartesian_prod(t64(a), ember.zeros(0, dtype=ember.float64)).shape == (0, 2)
    with pytest.raises(RuntimeError, match="Expect a 1D vector, but got shape \\[2, 2\\]"):
        ember.cartesian_prod(ember.ones(2), ember.ones(2, 2))
    with pytest.raises(RuntimeError, match="meshgrid expects all tensors to have the same dtype"):
        ember.cartesian_prod(ember.ones(2, dtype=ember.int32), ember.ones(2))

    v = np.array([3.0, 1.0, 4.0, 1.5])
    for r in (1, 2, 3, 4, 5):
        got = ember.combinations(t64(v), r)
        want = list(itertools.combinations(v, r))
        assert got.shape == (len(want), r)
        if want:
            close(got, want)
        close_r = ember.combinations(t64(v), r, with_replacement=True)
        close(close_r, list(itertools.combinations_with_replacement(v, r)))
    assert ember.combinations(t64(v), 0).shape == (0,)
    assert ember.combinations(ember.zeros(0), 2).shape == (0, 2)
    close(ember.combinations(t64(np.arange(8.0))[::2]), list(itertools.combinations([0.0, 2.0, 4.0, 6.0], 2)))
    with pytest.raises(RuntimeError, match="Expect a 1D vector, but got shape \\[2, 2\\]"):
        ember.combinations(ember.ones(2, 2))
    with pytest.raises(RuntimeError, match="Expect a non-negative number, but got -1"):
        ember.combinations(ember.ones(2), -1)
    x, y = t64(a, True), t64(b, True)
    assert gradcheck(ember.cartesian_prod, (x, y))
    assert gradcheck(lambda z: ember.combinations(z, 3, with_replacement=True), (t64(v, True),))


# ---- isin ---------------------------------------------------------------------------------------


def test_isin_matches_numpy():
    e = RNG.integers(0, 10, (4, 5))
    t = RNG.integers(0, 10, (3, 2))
    got = ember.isin(ember.tensor(e), ember.tensor(t))
    assert got.dtype == ember.bool
    np.testing.assert_array_equal(got.numpy(), np.isin(e, t))
    np.testing.assert_array_equal(ember.isin(ember.tensor(e), ember.tensor(t), invert=True).numpy(),
                                  np.isin(e, t, invert=True))
    np.testing.assert_array_equal(ember.isin(ember.tensor(e).t(), ember.tensor(t)).numpy(), np.isin(e.T, t))
    np.testing.assert_array_equal(ember.isin(ember.tensor(e), 3).numpy(), e == 3)
    assert ember.isin(3, ember.tensor(t)).shape == () and ember.isin(3, ember.tensor(t)).item() == bool((t == 3).any())
    assert ember.isin(ember.tensor(4), ember.tensor([1, 4])).item() is True
    assert ember.isin(ember.zeros(0, 3), ember.ones(2)).shape == (0, 3)
    assert not ember.isin(ember.ones(3), ember.zeros(0)).any().item()
    mixed = ember.isin(ember.arange(4), ember.tensor([1.0, 2.5, 3.0]))  # compared in the promoted dtype
    assert mixed.tolist() == [False, True, False, True]
    nan = ember.isin(ember.tensor([math.nan, 1.0]), ember.tensor([math.nan, 1.0]))
    assert nan.tolist() == [False, True]
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin\\(\\): bool"):
        ember.isin(ember.ones(2, dtype=ember.bool), ember.ones(2, dtype=ember.bool))
    with pytest.raises(RuntimeError, match="Unsupported input type encountered for isin\\(\\): complex64"):
        ember.isin(ember.ones(2, dtype=ember.complex64), ember.ones(2))
    with pytest.raises(TypeError, match="isin\\(\\) received an invalid combination of arguments - got \\(int, int\\)"):
        ember.isin(1, 2)


# ---- histogram ----------------------------------------------------------------------------------


def test_histogram_matches_numpy():
    a = RNG.normal(size=(6, 7))
    for bins in (1, 5, 13):
        hist, edges = ember.histogram(t64(a), bins)
        want_h, want_e = np.histogram(a, bins)
        close(edges, want_e)
        np.testing.assert_array_equal(hist.numpy(), want_h)
        assert hist.dtype == ember.float64
    h = ember.histogram(noncontig(a), 4, range=(-1.0, 1.0))
    want_h, want_e = np.histogram(a, 4, range=(-1.0, 1.0))
    np.testing.assert_array_equal(h.hist.numpy(), want_h)
    close(h.bin_edges, want_e)
    w = RNG.uniform(0, 2, (6, 7))
    close(ember.histogram(t64(a), 6, weight=t64(w))[0], np.histogram(a, 6, weights=w)[0])
    close(ember.histogram(t64(a), 6, weight=t64(w), density=True)[0], np.histogram(a, 6, weights=w, density=True)[0])
    edges = np.array([-2.0, -0.5, 0.0, 0.1, 3.0])
    h = t64(a).histogram(t64(edges))
    np.testing.assert_array_equal(h.hist.numpy(), np.histogram(a, edges)[0])
    close(h.bin_edges, edges)
    # values on an edge: half-open bins, the last one closed
    on = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(ember.histogram(t64(on), 4)[0].numpy(), np.histogram(on, 4)[0])
    close(ember.histogram(t64([2.0, 2.0]), 4)[1], [1.5, 1.75, 2.0, 2.25, 2.5])
    hist, edges = ember.histogram(ember.zeros(0), 3)
    assert hist.tolist() == [0.0, 0.0, 0.0] and np.allclose(edges.numpy(), [0, 1 / 3, 2 / 3, 1])
    h0 = ember.histogram(t64(0.25), 2)
    np.testing.assert_array_equal(h0.hist.numpy(), np.histogram(0.25, 2)[0])
    f32 = ember.histogram(ember.tensor([0.0, 0.5, 1.0], dtype=ember.float32), 2)
    assert f32.hist.dtype == ember.float32 and f32.hist.tolist() == [1.0, 2.0]


def test_histogram_bad_input():
    x = ember.randn(3, 4)
    with pytest.raises(NotImplementedError, match="\"histogram\" not implemented for 'int64'"):
        ember.histogram(ember.arange(3), 3)
    with pytest.raises(RuntimeError, match="bins must be > 0, but got 0 for dimension 0"):
        ember.histogram(x, 0)
    with pytest.raises(RuntimeError, match="input tensor and bins tensors should have the same dtype"):
        ember.histogram(x, ember.tensor([0.0, 1.0], dtype=ember.float64))
    with pytest.raises(RuntimeError, match="min should not exceed max, but got min 1 max 0"):
        ember.histogram(x, 3, range=(1.0, 0.0))
    with pytest.raises(RuntimeError, match="range \\[1, inf\\] is not finite"):
        ember.histogram(ember.tensor([1.0, math.inf]), 3)
    with pytest.raises(RuntimeError, match="weight tensor is provided it should have the same shape as the input"):
        ember.histogram(x, 3, weight=ember.ones(3))
    with pytest.raises(RuntimeError, match="input tensor and weight tensor should have the same dtype"):
        ember.histogram(x, 3, weight=ember.ones(3, 4, dtype=ember.float64))
    with pytest.raises(RuntimeError, match="bins tensor should have one dimension, but got 2 dimensions"):
        ember.histogram(x, ember.ones(2, 2))


# ---- dist, adjoint, hsplit/vsplit/dsplit --------------------------------------------------------


@pytest.mark.parametrize("p", [0, 1, 2, 3.5, math.inf, -math.inf])
def test_dist_matches_numpy(p):
    a, b = RNG.normal(size=(3, 4)), RNG.normal(size=(4,))
    diff = (a - b).ravel()
    want = np.count_nonzero(diff) if p == 0 else np.linalg.norm(diff, p)
    close(ember.dist(t64(a), t64(b), p), want)
    close(ember.dist(noncontig(a), t64(b), p), want)
    close(t64(a).dist(t64(b), p), want)
    if abs(p) != math.inf:
        assert ember.dist(ember.zeros(0, 3), ember.zeros(3), p).item() == 0.0
    else:  # no identity for max/min: PyTorch raises too
        with pytest.raises(RuntimeError, match="cannot compute the -?inf norm on an empty tensor"):
            ember.dist(ember.zeros(0, 3), ember.zeros(3), p)
    close(ember.dist(t64(2.0), t64(-1.0), p), 1.0 if p == 0 else 3.0)
    if p not in (0,) and abs(p) != math.inf:
        assert gradcheck(lambda x, y: ember.dist(x, y, p), (t64(a, True), t64(b, True)))


def test_dist_bad_input():
    with pytest.raises(RuntimeError, match="norm\\(\\): input dtype should be either floating point or complex. "
                                           "Got int64 instead."):
        ember.dist(ember.arange(3), ember.arange(3))
    with pytest.raises(RuntimeError, match="size of tensor a \\(3\\) must match the size of tensor b \\(2\\)"):
        ember.dist(ember.ones(3), ember.ones(2))


def test_adjoint():
    a = RNG.normal(size=(2, 3, 4)) + 1j * RNG.normal(size=(2, 3, 4))
    got = ember.adjoint(ember.tensor(a))
    np.testing.assert_array_equal(got.numpy(), np.conj(np.swapaxes(a, -1, -2)))
    r = RNG.normal(size=(3, 2))
    np.testing.assert_array_equal(t64(r).adjoint().numpy(), r.T)
    assert ember.adjoint(ember.zeros(0, 3)).shape == (3, 0)
    with pytest.warns(UserWarning, match="adjoint\\(\\) is deprecated on 0-D tensors"):
        assert ember.adjoint(t64(2.0)).item() == 2.0
    with pytest.raises(RuntimeError, match="tensor.adjoint\\(\\) is only supported on matrices or batches of "
                                           "matrices. Got 1-D tensor."):
        ember.adjoint(ember.ones(3))
    assert gradcheck(ember.adjoint, (t64(r, True),))


def test_directional_splits_match_numpy():
    a = np.arange(48.0).reshape(4, 6, 2)
    for fn, np_fn in ((ember.hsplit, np.hsplit), (ember.vsplit, np.vsplit), (ember.dsplit, np.dsplit)):
        for spec in (2, [1, 3], [0, 5]):
            got = fn(t64(a), spec)
            want = np_fn(a, spec)
            assert isinstance(got, tuple) and len(got) == len(want)
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g.numpy(), w)
    v = np.arange(6.0)
    for g, w in zip(ember.hsplit(t64(v), 3), np.hsplit(v, 3), strict=True):
        np.testing.assert_array_equal(g.numpy(), w)
    m = np.arange(12.0).reshape(3, 4)
    for g, w in zip(noncontig(m).hsplit(2), np.hsplit(m, 2), strict=True):
        np.testing.assert_array_equal(g.numpy(), w)
    assert [g.shape for g in t64(np.zeros((0, 4))).vsplit([1])] == [(0, 4), (0, 4)]
    with pytest.raises(RuntimeError, match="torch.hsplit requires a tensor with at least 1 dimension, but got a "
                                           "tensor with 0 dimensions!"):
        ember.hsplit(t64(1.0), 2)
    with pytest.raises(RuntimeError, match="torch.hsplit attempted to split along dimension 1, but the size of the "
                                           "dimension 4 is not divisible by the split_size 3!"):
        ember.hsplit(ember.ones(3, 4), 3)
    with pytest.raises(RuntimeError, match="torch.vsplit requires a tensor with at least 2 dimension"):
        ember.vsplit(ember.ones(4), 2)
    with pytest.raises(RuntimeError, match="torch.dsplit attempted to split along dimension 2"):
        ember.dsplit(ember.ones(2, 2, 3), 2)
    x = t64(m, True)
    assert gradcheck(lambda z: ember.hsplit(z, [1, 3])[1], (x,))


# ---- frexp --------------------------------------------------------------------------------------


def test_frexp_matches_numpy():
    special = [0.0, -0.0, 1.0, 0.5, 3.0, -5.0, 2.0 ** -1074, 1e-310, 2.0 ** -1022, 1.7e308, np.finfo(np.float64).max,
               7.999999999999999, 1.0 - 2 ** -53]
    a = np.concatenate([np.array(special), RNG.normal(size=50) * 10.0 ** RNG.integers(-30, 30, 50)])
    m, e = ember.frexp(t64(a))
    wm, we = np.frexp(a)
    assert e.dtype == ember.int32 and m.dtype == ember.float64
    np.testing.assert_array_equal(m.numpy(), wm)
    np.testing.assert_array_equal(e.numpy(), we)
    m, e = ember.frexp(ember.tensor([math.inf, -math.inf, math.nan], dtype=ember.float64))
    assert m.tolist()[:2] == [math.inf, -math.inf] and math.isnan(m.tolist()[2]) and e.tolist() == [0, 0, 0]
    f = np.concatenate([RNG.normal(size=20), [1e-45, 3.4e38, 1.0, 0.75]]).astype(np.float32)
    m, e = ember.tensor(f).frexp()
    wm, we = np.frexp(f)
    assert m.dtype == ember.float32
    np.testing.assert_array_equal(m.numpy(), wm)
    np.testing.assert_array_equal(e.numpy(), we)
    b = RNG.normal(size=(4, 3))
    np.testing.assert_array_equal(ember.frexp(noncontig(b)).mantissa.numpy(), np.frexp(b)[0])
    assert ember.frexp(t64(12.0)).exponent.item() == 4 and ember.frexp(ember.zeros(0, 2))[0].shape == (0, 2)
    with pytest.raises(RuntimeError, match="torch.frexp\\(\\) only supports floating-point dtypes"):
        ember.frexp(ember.arange(3))
    assert gradcheck(lambda x: ember.frexp(x).mantissa, (t64(RNG.uniform(0.6, 7, (5,)), True),))


# ---- det, logdet, slogdet -----------------------------------------------------------------------


def test_det_logdet_slogdet():
    a = RNG.normal(size=(3, 4, 4))
    close(ember.det(t64(a)), np.linalg.det(a), rtol=1e-9)
    close(t64(a).det(), np.linalg.det(a), rtol=1e-9)
    sign, logabs = ember.slogdet(t64(a))
    wsign, wlog = np.linalg.slogdet(a)
    close(sign, wsign)
    close(logabs, wlog, rtol=1e-9)
    assert t64(a).slogdet().logabsdet.shape == (3,)
    d = np.linalg.det(a)
    got = ember.logdet(t64(a)).numpy()
    np.testing.assert_allclose(got[d > 0], np.log(d[d > 0]), rtol=1e-9)
    assert np.isnan(got[d < 0]).all()
    assert ember.logdet(ember.zeros(2, 2)).item() == -math.inf
    assert math.isnan(ember.logdet(ember.tensor([[0.0, 1.0], [1.0, 0.0]])).item())
    m = RNG.normal(size=(4, 4))
    close(ember.det(noncontig(m)), np.linalg.det(m), rtol=1e-9)
    c = RNG.normal(size=(3, 3)) + 1j * RNG.normal(size=(3, 3))
    close(ember.logdet(ember.tensor(c)), np.log(np.linalg.det(c)), rtol=1e-9)
    assert ember.det(ember.zeros(0, 3, 3)).shape == (0,)
    with pytest.raises(RuntimeError, match="logdet: The input tensor A must have at least 2 dimensions."):
        ember.logdet(ember.ones(3))
    with pytest.raises(RuntimeError, match="must have at least 2 dimensions"):
        ember.det(ember.ones(3))
    spd = m @ m.T + 4 * np.eye(4)
    assert gradcheck(ember.logdet, (t64(spd, True),))
    assert gradcheck(ember.det, (t64(m, True),))
    assert gradcheck(lambda x: ember.slogdet(x).logabsdet, (t64(m, True),))


# ---- in-place forms -----------------------------------------------------------------------------


def test_inplace_pointwise_and_products_match_numpy():
    s, t1, t2 = RNG.normal(size=(3, 4)), RNG.normal(size=(4,)), RNG.uniform(1, 2, (3, 1))
    for layout in (t64, noncontig):
        x = layout(s)
        assert x.addcdiv_(t64(t1), t64(t2), value=0.5) is x
        close(x, s + 0.5 * t1 / t2)
        x = layout(s)
        x.addcmul_(t64(t1), t64(t2), value=-2)
        close(x, s - 2 * t1 * t2)
        m1, m2 = RNG.normal(size=(3, 5)), RNG.normal(size=(5, 4))
        x = layout(s)
        x.addmm_(t64(m1), t64(m2), beta=0.5, alpha=2)
        close(x, 0.5 * s + 2 * m1 @ m2)
        b1, b2 = RNG.normal(size=(2, 3, 5)), RNG.normal(size=(2, 5, 4))
        x = layout(s)
        x.addbmm_(t64(b1), t64(b2), alpha=3)
        close(x, s + 3 * (b1 @ b2).sum(0))
        x = layout(s)
        x.cumsum_(1)
        close(x, np.cumsum(s, 1))
        x = layout(s)
        x.cumprod_(0)
        close(x, np.cumprod(s, 0))
    bs = RNG.normal(size=(2, 3, 4))
    x = t64(bs)
    x.baddbmm_(t64(b1), t64(b2), beta=2)
    close(x, 2 * bs + b1 @ b2)
    z = ember.zeros(0, 3, dtype=ember.float64)
    assert z.addcmul_(ember.zeros(3, dtype=ember.float64), ember.zeros(0, 1, dtype=ember.float64)).shape == (0, 3)
    scalar = t64(2.0)
    scalar.addcdiv_(t64(3.0), t64(4.0))
    scalar.cumsum_(0)
    assert scalar.item() == 2.75
    ints = ember.tensor([1, 2, 3], dtype=ember.int32)
    ints.cumsum_(0)
    assert ints.dtype == ember.int32 and ints.tolist() == [1, 3, 6]


def test_inplace_write_through_views_and_autograd():
    base = ember.zeros(3, 4, dtype=ember.float64)
    base[1].addcmul_(ember.ones(4, dtype=ember.float64), t64([1.0, 2.0, 3.0, 4.0]))
    assert base[1].tolist() == [1.0, 2.0, 3.0, 4.0] and base[0].tolist() == [0.0] * 4
    s, t1, t2 = t64(RNG.normal(size=(3, 4)), True), t64(RNG.normal(size=(4,)), True), t64(RNG.uniform(1, 2, (3, 1)), True)
    assert gradcheck(lambda a, b, c: (a * 1).addcdiv_(b, c, value=0.7), (s, t1, t2))
    assert gradcheck(lambda a, b, c: (a * 1).addcmul_(b, c), (s, t1, t2))
    m1, m2 = t64(RNG.normal(size=(3, 2)), True), t64(RNG.normal(size=(2, 4)), True)
    assert gradcheck(lambda a, b, c: (a * 1).addmm_(b, c, beta=0.5), (s, m1, m2))
    b1, b2 = t64(RNG.normal(size=(2, 3, 2)), True), t64(RNG.normal(size=(2, 2, 4)), True)
    assert gradcheck(lambda a, b, c: (a * 1).addbmm_(b, c), (s, b1, b2))
    bs = t64(RNG.normal(size=(2, 3, 4)), True)
    assert gradcheck(lambda a, b, c: (a * 1).baddbmm_(b, c), (bs, b1, b2))
    assert gradcheck(lambda a: (a * 1).cumsum_(1), (s,))
    assert gradcheck(lambda a: (a * 1).cumprod_(1), (s,))  # cumprod saves its input: read through a clone
    leaf = ember.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        leaf.addcmul_(ember.ones(3), ember.ones(3))


def test_inplace_bad_input():
    with pytest.raises(RuntimeError, match="output with shape \\[3\\] doesn't match the broadcast shape \\[2, 3\\]"):
        ember.ones(3).addcmul_(ember.ones(2, 3), ember.ones(3))
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type int64"):
        ember.ones(3, dtype=ember.int64).addcmul_(ember.ones(3), ember.ones(3))
    with pytest.raises(RuntimeError, match="Bad in-place call: input tensor size \\[3\\] and output tensor size "
                                           "\\[2, 3\\] should match"):
        ember.ones(3).addmm_(ember.ones(2, 2), ember.ones(2, 3))
    with pytest.raises(RuntimeError, match="Bad in-place call: input tensor size \\[3\\] and output tensor size "
                                           "\\[2, 2, 3\\] should match"):
        ember.ones(3).baddbmm_(ember.ones(2, 2, 2), ember.ones(2, 2, 3))
    with pytest.raises(RuntimeError, match="Bad in-place call: input tensor dtype int64 and output tensor dtype "
                                           "float32 should match"):
        ember.ones(3, dtype=ember.int64).cumsum_(0, dtype=ember.float32)
    with pytest.raises(IndexError, match="Dimension out of range \\(expected to be in range of \\[-1, 0\\], but got 1\\)"):
        ember.ones(3).cumsum_(1)


def test_fill_diagonal_matches_numpy():
    for shape, wrap in (((3, 3), False), ((5, 3), False), ((7, 3), True), ((7, 3), False), ((3, 5), True),
                        ((4, 4, 4), False), ((0, 0), False)):
        a = RNG.normal(size=shape)
        want = a.copy()
        np.fill_diagonal(want, 9.0, wrap=wrap)
        x = t64(a)
        assert x.fill_diagonal_(9.0, wrap=wrap) is x
        np.testing.assert_array_equal(x.numpy(), want)
    a = RNG.normal(size=(4, 3))
    x = noncontig(a)
    x.fill_diagonal_(-1.0)
    want = a.copy()
    np.fill_diagonal(want, -1.0)
    np.testing.assert_array_equal(x.numpy(), want)
    ints = ember.zeros(3, 3, dtype=ember.int64).fill_diagonal_(2)
    assert ints.tolist() == [[2, 0, 0], [0, 2, 0], [0, 0, 2]]
    with pytest.raises(RuntimeError, match="dimensions must larger than 1"):
        ember.ones(3).fill_diagonal_(2)
    with pytest.raises(RuntimeError, match="all dimensions of input must be of equal length"):
        ember.ones(3, 3, 2).fill_diagonal_(2)
    assert gradcheck(lambda z: (z * 1).fill_diagonal_(0.5), (t64(a, True),))


# ---- random fills -------------------------------------------------------------------------------


def _fill(method, *args, n=200_000, dtype=ember.float64, seed=5, **kw):
    g = ember.Generator().manual_seed(seed)
    x = ember.empty(n, dtype=dtype)
    assert getattr(x, method)(*args, generator=g, **kw) is x
    return x.numpy().astype(np.float64)


def test_random_fills_follow_their_distributions():
    e = _fill("exponential_", 2.0)
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.01 and abs(e.var() - 0.25) < 0.01
    g = _fill("geometric_", 0.25)
    assert g.min() == 1 and (g == np.round(g)).all()
    assert abs(g.mean() - 4.0) < 0.05 and abs(np.mean(g == 1) - 0.25) < 0.01
    c = _fill("cauchy_", 1.0, 2.0)
    assert abs(np.median(c) - 1.0) < 0.05 and abs(np.quantile(c, 0.75) - 3.0) < 0.08  # quartiles at median +- sigma
    ln = _fill("log_normal_", 0.5, 0.25)
    assert ln.min() > 0 and abs(np.log(ln).mean() - 0.5) < 0.005 and abs(np.log(ln).std() - 0.25) < 0.005
    assert _fill("exponential_", dtype=ember.float32).min() >= 0
    g32 = _fill("geometric_", 0.5, dtype=ember.int32, n=1000)
    assert g32.min() >= 1


def test_random_fills_use_the_generator_and_the_global_seed():
    assert np.array_equal(_fill("exponential_", seed=3, n=10), _fill("exponential_", seed=3, n=10))
    assert not np.array_equal(_fill("exponential_", seed=3, n=10), _fill("exponential_", seed=4, n=10))
    ember.manual_seed(11)
    first = ember.empty(5).cauchy_().tolist()
    ember.manual_seed(11)
    assert ember.empty(5).cauchy_().tolist() == first


def test_random_integers():
    r = _fill("random_", 3, 9)
    assert r.min() == 3 and r.max() == 8 and (r == np.round(r)).all()
    assert abs(np.mean(r == 5) - 1 / 6) < 0.01
    r = _fill("random_", 4)
    assert set(np.unique(r)) == {0, 1, 2, 3}
    r = _fill("random_", dtype=ember.float32)
    assert r.min() >= 0 and r.max() <= 2 ** 24 and r.max() > 2 ** 23
    r = _fill("random_", dtype=ember.uint8, n=5000)
    assert r.min() == 0 and r.max() == 255
    r = _fill("random_", dtype=ember.bool, n=1000)
    assert set(np.unique(r)) == {0, 1}
    r = _fill("random_", dtype=ember.int64, n=1000)
    assert r.min() >= 0 and r.max() > 2 ** 62
    r = _fill("random_", -5, None, dtype=ember.int8, n=5000)
    assert r.min() == -5 and r.max() == 127
    r = _fill("random_", dtype=ember.int64, n=1000, **{"from": -3, "to": 0})
    assert set(np.unique(r)) == {-3, -2, -1}
    assert set(np.unique(_fill("random_", n=1000, to=3))) == {0, 1, 2}
    assert set(np.unique(_fill("random_", 2, n=1000, dtype=ember.int8, to=5))) == {2, 3, 4}
    view = ember.zeros(4, 4)
    view[:, 1].random_(1, 2)
    assert view.sum(0).tolist() == [0.0, 4.0, 0.0, 0.0]
    assert ember.zeros(0).random_().shape == (0,) and ember.zeros([]).random_(7, 8).item() == 7.0


def test_random_fills_bad_input():
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0, but found lambda=0"):
        ember.ones(3).exponential_(0)
    with pytest.raises(RuntimeError, match="Exponential distribution is a continuous probability distribution. "
                                           "dtype must be a floating point but you specified int64"):
        ember.ones(3, dtype=ember.int64).exponential_()
    with pytest.raises(RuntimeError, match="geometric_ expects p to be in \\(0, 1\\), but got p=1"):
        ember.ones(3).geometric_(1)
    with pytest.raises(RuntimeError, match="cauchy_ expects sigma > 0.0, but found sigma=0"):
        ember.ones(3).cauchy_(0, 0)
    with pytest.raises(RuntimeError, match="Cauchy distribution is a continuous probability distribution"):
        ember.ones(3, dtype=ember.int64).cauchy_()
    with pytest.raises(RuntimeError, match="log_normal_ expects std > 0.0, but found std=0"):
        ember.ones(3).log_normal_(1, 0)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=5 >= to=3"):
        ember.ones(3).random_(5, 3)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to', but got from=0 >= to=0"):
        ember.ones(3).random_(0)
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for unsigned char"):
        ember.ones(3, dtype=ember.uint8).random_(0, 300)
    with pytest.raises(RuntimeError, match="from is out of bounds for unsigned char"):
        ember.ones(3, dtype=ember.uint8).random_(-1, 3)
    with pytest.raises(TypeError, match="random_\\(\\) received an invalid combination of arguments - got \\(from=int, \\)"):
        ember.ones(3).random_(**{"from": 2})
    with pytest.raises(RuntimeError, match="to - 1 is out of bounds for bool"):
        ember.ones(3, dtype=ember.bool).random_(0, 3)
    with pytest.warns(UserWarning, match="to - 1 is out of bounds \\[-\\(2\\^24\\), 2\\^24\\]"):
        ember.ones(3).random_(0, 2 ** 25)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        ember.ones(3, requires_grad=True).random_()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        ember.ones(3, requires_grad=True).exponential_()


def test_random_fill_on_a_graph_tensor_cuts_its_history():
    w = ember.ones(3, requires_grad=True)
    y = w * 2
    y.exponential_()
    (y * 3).sum().backward()
    assert w.grad.tolist() == [0.0, 0.0, 0.0]


def test_names_are_public():
    for name in ("float_power", "cov", "corrcoef", "quantile", "nanquantile", "block_diag", "cartesian_prod",
                 "combinations", "isin", "histogram", "dist", "adjoint", "hsplit", "vsplit", "dsplit", "frexp", "det",
                 "logdet", "slogdet"):
        assert callable(getattr(ember, name)) and name in ember.__all__
    for name in ("float_power_", "addcdiv_", "addcmul_", "addmm_", "addbmm_", "baddbmm_", "cumsum_", "cumprod_",
                 "fill_diagonal_", "exponential_", "geometric_", "cauchy_", "log_normal_", "random_"):
        assert callable(getattr(ember.Tensor, name))
    assert ember.return_types.histogram._fields == ("hist", "bin_edges")
    assert ember.return_types.frexp._fields == ("mantissa", "exponent")
