"""ember.special against torch.special's surface: every name, the new kernels' accuracy on dense
grids against the independent float64 references of special_refs.py, their special values,
the (Number, Tensor) overloads, derivatives where PyTorch has them (and none where it has none),
and bad input. The op database (test_opdb.py) runs the layouts, broadcasting, zero-size, 0-dim
and dtype checks of each op.
"""

from __future__ import annotations

import importlib.util
import inspect
import math
import pathlib
import zlib

import numpy as np
import pytest

import ember
import ember.special as S
from ember.autograd import gradcheck

_SPEC = importlib.util.spec_from_file_location("special_refs", pathlib.Path(__file__).with_name("special_refs.py"))
R = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(R)

# torch.special.__all__ of PyTorch 2.13 (the module's other attributes are its imports)
TORCH_SPECIAL = [
    "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u",
    "chebyshev_polynomial_v", "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
    "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h", "hermite_polynomial_he", "i0",
    "i0e", "i1", "i1e", "laguerre_polynomial_l", "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax",
    "logit", "logsumexp", "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1",
    "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
    "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "sinc", "softmax", "spherical_bessel_j0", "xlog1py",
    "xlogy", "zeta",
]
POLYNOMIALS = [n for n in TORCH_SPECIAL if "polynomial" in n]


def t(values, dtype=ember.float64):
    return ember.tensor(values, dtype=dtype)


def test_names_cover_torch_special():
    assert len(TORCH_SPECIAL) == 56
    assert sorted(S.__all__) == sorted(TORCH_SPECIAL)
    for name in TORCH_SPECIAL:
        assert callable(getattr(S, name)), name


def test_aliases_are_the_ember_ops():
    assert S.psi is S.digamma is ember.digamma
    assert S.expit is ember.sigmoid and S.gammaln is ember.lgamma and S.erfinv is ember.erfinv
    x = t([0.2, 0.7, 1.5])
    np.testing.assert_array_equal(S.gammainc(x, x).numpy(), ember.igamma(x, x).numpy())
    np.testing.assert_array_equal(S.gammaincc(x, x).numpy(), ember.igammac(x, x).numpy())
    np.testing.assert_array_equal(S.multigammaln(x + 2, 3).numpy(), ember.mvlgamma(x + 2, 3).numpy())
    np.testing.assert_array_equal(S.polygamma(2, x).numpy(), ember.polygamma(2, x).numpy())
    np.testing.assert_array_equal(S.xlogy(2, x).numpy(), ember.xlogy(t(2.0), x).numpy())
    np.testing.assert_array_equal(S.round(t([0.5, 1.5, 2.456]), decimals=1).numpy(), [0.5, 1.5, 2.5])
    # torch.special's signatures: dtype keyword-only for the softmaxes, eps and out for logit
    assert list(inspect.signature(S.softmax).parameters) == ["input", "dim", "dtype"]
    assert inspect.signature(S.softmax).parameters["dtype"].kind is inspect.Parameter.KEYWORD_ONLY
    m = t([[1.0, 2.0], [3.0, 5.0]], dtype=ember.float32)
    assert S.softmax(m, 1, dtype=ember.float64).dtype == ember.float64
    np.testing.assert_allclose(S.log_softmax(m, 0).numpy(), ember.log_softmax(m, 0).numpy())
    out = ember.empty(3, dtype=ember.float64)
    assert S.logit(t([0.0, 0.5, 1.0]), 0.25, out=out) is out
    np.testing.assert_allclose(out.numpy(), np.log([1 / 3, 1.0, 3.0]))
    out = ember.empty(2, dtype=ember.float32)
    S.logsumexp(m, 1, out=out)
    np.testing.assert_allclose(out.numpy(), np.log(np.exp(m.numpy()).sum(1)), rtol=1e-6)
    with pytest.raises(TypeError):
        S.softmax(m, 1, ember.float64)  # dtype is keyword-only, as in torch.special


# ---- accuracy on dense grids (float64 within ~1e-13 of the references; float32 rounded from them)

def _grid(lo, hi, n=301):
    return np.linspace(lo, hi, n)


UNARY = {
    "entr": (R.entr_ref, np.concatenate([_grid(0, 5), np.geomspace(1e-300, 1e300, 60)])),
    "erfcx": (R.erfcx_ref, np.concatenate([_grid(-26, 40), np.geomspace(1e-8, 1e12, 60)])),
    "ndtr": (R.ndtr_ref, _grid(-37, 9)),
    "log_ndtr": (R.log_ndtr_ref, np.concatenate([_grid(-60, 12), -np.geomspace(60, 1e150, 40)])),
    "ndtri": (R.ndtri_ref, np.concatenate([_grid(0.001, 0.999), np.geomspace(1e-300, 0.2, 60),
                                           1 - np.geomspace(1e-15, 0.2, 30)])),
    "bessel_j0": (lambda a: R.bessel_j_ref(0, a), np.concatenate([_grid(-60, 60, 601), np.geomspace(1e-9, 1e9, 40)])),
    "bessel_j1": (lambda a: R.bessel_j_ref(1, a), np.concatenate([_grid(-60, 60, 601), np.geomspace(1e-9, 1e9, 40)])),
    "bessel_y0": (lambda a: R.bessel_y_ref(0, a), np.concatenate([_grid(0.01, 60, 301), np.geomspace(1e-9, 1e9, 40)])),
    "bessel_y1": (lambda a: R.bessel_y_ref(1, a), np.concatenate([_grid(0.01, 60, 301), np.geomspace(1e-9, 1e9, 40)])),
    "modified_bessel_i0": (lambda a: R.bessel_i_ref(0, a), _grid(-700, 700, 401)),
    "modified_bessel_i1": (lambda a: R.bessel_i_ref(1, a), _grid(-700, 700, 401)),
    "modified_bessel_k0": (lambda a: R.bessel_k_ref(0, a, False),
                           np.concatenate([_grid(0.01, 20), np.geomspace(1e-12, 700, 50)])),
    "modified_bessel_k1": (lambda a: R.bessel_k_ref(1, a, False),
                           np.concatenate([_grid(0.01, 20), np.geomspace(1e-12, 700, 50)])),
    "scaled_modified_bessel_k0": (lambda a: R.bessel_k_ref(0, a, True),
                                  np.concatenate([_grid(0.01, 20), np.geomspace(1e-12, 1e12, 50)])),
    "scaled_modified_bessel_k1": (lambda a: R.bessel_k_ref(1, a, True),
                                  np.concatenate([_grid(0.01, 20), np.geomspace(1e-12, 1e12, 50)])),
    "spherical_bessel_j0": (R.spherical_j0_ref, np.concatenate([_grid(-30, 30), np.geomspace(1e-12, 1e8, 40)])),
    "airy_ai": (R.airy_ai_ref, np.concatenate([_grid(-40, 20, 401), -np.geomspace(40, 1e8, 30)])),
}
# the oscillating functions are judged against their envelope (absolute error near their zeros)
ENVELOPE = {
    "bessel_j0": lambda x: np.minimum(1, np.sqrt(2 / (np.pi * np.abs(x) + 1e-300))),
    "bessel_j1": lambda x: np.minimum(1, np.sqrt(2 / (np.pi * np.abs(x) + 1e-300))),
    "bessel_y0": lambda x: np.sqrt(2 / (np.pi * x)),
    "bessel_y1": lambda x: np.sqrt(2 / (np.pi * x)),
    "spherical_bessel_j0": lambda x: np.minimum(1, 1 / np.abs(x)),
    "airy_ai": lambda x: np.where(x < 0, 0.6 * np.abs(x) ** -0.25, 0),
}


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_accuracy(name):
    ref, xs = UNARY[name]
    fn = getattr(S, name)
    got = fn(t(xs)).numpy()
    with np.errstate(all="ignore"):
        expected = ref(xs)
        scale = np.maximum(np.abs(expected), ENVELOPE[name](xs)) if name in ENVELOPE else np.abs(expected)
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(np.isfinite(got), finite, err_msg=name)
    err = np.abs(got[finite] - expected[finite]) / np.maximum(scale[finite], 1e-300)
    # the Airy function's phase (2/3)|x|^1.5 is an ill-conditioned argument far out
    # (and the trapezoidal references of I lose ~1e-14 to their exp() arguments' rounding)
    bound = 5e-13 if name == "airy_ai" else 3e-14 if name in ENVELOPE or "bessel_i" in name else 1e-14
    assert err.max() <= bound, (name, xs[finite][err.argmax()], err.max())
    # float32 is the float64 result rounded once
    x32 = xs.astype(np.float32)
    got32 = fn(ember.from_numpy(x32)).numpy()
    with np.errstate(all="ignore"):
        exp32 = ref(x32.astype(np.float64)).astype(np.float32)
    ok = np.isfinite(exp32) & (np.abs(exp32) > 1e-37)
    ulps = np.abs(got32[ok].astype(np.float64) - exp32[ok]) / np.spacing(np.abs(exp32[ok]))
    if name in ENVELOPE:
        ulps = np.abs(got32[ok].astype(np.float64) - exp32[ok]) / np.spacing(
            np.maximum(np.abs(exp32[ok]), ENVELOPE[name](x32[ok].astype(np.float64))).astype(np.float32))
    assert ulps.max() <= 2, (name, x32[ok][ulps.argmax()], ulps.max())


def test_zeta_and_xlog1py_accuracy():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(1.001, 40, 300), np.arange(2, 12, dtype=np.float64).repeat(10)])
    q = np.concatenate([np.exp(rng.uniform(np.log(1e-3), np.log(1e4), 300)), -rng.uniform(0, 20, 100)])
    got, expected = S.zeta(t(x), t(q)).numpy(), R.zeta_ref(x, q)
    np.testing.assert_allclose(got, expected, rtol=2e-14, atol=0)
    x, y = rng.uniform(-5, 5, 200), np.exp(rng.uniform(-30, 5, 200)) - 1
    np.testing.assert_allclose(S.xlog1py(t(x), t(y)).numpy(), R.xlog1py_ref(x, y), rtol=1e-15)


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_values(name):
    rng = np.random.default_rng(zlib.crc32(name.encode()))  # str hash() changes per process
    lo, hi = (0.0, 1.0) if name.startswith("shifted") else (-1.0, 1.0)
    x = np.concatenate([rng.uniform(lo, hi, 200), rng.uniform(-6, 6, 100), [lo, hi, 0.5, -0.0]])
    n = np.concatenate([rng.integers(0, 80, 300), [5, 7, 9, 11]]).astype(np.float64)
    got, expected = getattr(S, name)(t(x), t(n)).numpy(), R.polynomial_ref(name, x, n)
    # the error of a polynomial of degree n scales with the sum of its terms' sizes, not its value:
    # judge it against the polynomial's size at |x| + 1 (an upper bound of that sum)
    # (Laguerre's terms alternate in sign: at -|x| they all add, so that is their sum's size)
    size = np.abs(R.polynomial_ref(name, -np.abs(x) if "laguerre" in name else np.abs(x) + 1, n))
    size = np.where(np.isfinite(size), size, np.abs(expected))
    # a three-term recurrence of degree n loses about n roundings of that size (near a zero of the
    # polynomial, e.g. Laguerre's smallest at ~1.44/n, that is all of the value's accuracy)
    bound = 1e-12 * np.abs(expected) + 4 * (n + 1) * np.finfo(np.float64).eps * size
    excess = np.abs(got - expected) / bound
    assert excess.max() <= 1, (name, x[excess.argmax()], n[excess.argmax()], excess.max())


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_conventions(name):
    fn = getattr(S, name)
    x = t([0.3, -0.5, math.nan, math.inf])
    np.testing.assert_array_equal(fn(x, -1).numpy(), [0.0] * 4)  # n < 0
    np.testing.assert_array_equal(fn(x, -0.5).numpy(), [1.0] * 4)  # truncated to 0: 1, even at NaN
    np.testing.assert_array_equal(fn(x, 2.9).numpy(), fn(x, 2).numpy())  # truncated toward zero
    assert math.isnan(fn(t([0.3]), math.nan).item()) and math.isnan(fn(t([0.3]), math.inf).item())
    assert fn(t([math.inf]), 3).item() == (-math.inf if name == "laguerre_polynomial_l" else math.inf)
    assert math.isnan(fn(t([math.nan]), 3).item())
    # (Number, Tensor) and (Tensor, Number) overloads, integer inputs computing in the default dtype
    n = ember.tensor([0, 1, 2, 3])
    np.testing.assert_array_equal(fn(0.25, n).numpy(), fn(t([0.25] * 4, ember.float32), n).numpy())
    assert fn(ember.tensor([1, 2]), 3).dtype == ember.float32
    assert fn(t([0.5]), ember.tensor([3], dtype=ember.float32)).dtype == ember.float64
    # huge degrees: closed forms for Chebyshev, surely-overflowed infinities, NaN where unknown
    huge = fn(t([1e30]), 1e30).item()
    assert math.isnan(huge) if name == "laguerre_polynomial_l" else huge == math.inf


def test_large_degrees():
    np.testing.assert_allclose(S.chebyshev_polynomial_t(t([0.3]), 1000).item(), math.cos(1000 * math.acos(0.3)))
    assert S.chebyshev_polynomial_t(t([-1.0]), 1001).item() == -1.0
    assert S.chebyshev_polynomial_u(t([1.0]), 1000).item() == 1001.0
    assert math.isnan(S.legendre_polynomial_p(t([0.3]), 1e10).item())
    assert math.isnan(S.laguerre_polynomial_l(t([0.3]), 1e10).item())
    assert S.legendre_polynomial_p(t([-2.0]), 1e10 + 1).item() == -math.inf
    assert S.hermite_polynomial_h(t([1e6]), 1e9).item() == math.inf
    # the recurrences keep the sign past overflow: H_301(-30) = -H_301(30) = -inf
    assert S.hermite_polynomial_h(t([-30.0]), 301).item() == -math.inf


SPECIAL_VALUES = {
    # name: [(x, expected)]
    "entr": [(math.nan, math.nan), (math.inf, -math.inf), (-1.0, -math.inf), (0.0, 0.0), (-0.0, 0.0), (1.0, -0.0)],
    "erfcx": [(math.nan, math.nan), (math.inf, 0.0), (-math.inf, math.inf), (-30.0, math.inf), (0.0, 1.0)],
    "ndtr": [(math.nan, math.nan), (math.inf, 1.0), (-math.inf, 0.0), (0.0, 0.5), (-0.0, 0.5)],
    "ndtri": [(math.nan, math.nan), (0.0, -math.inf), (1.0, math.inf), (-0.1, math.nan), (1.5, math.nan),
              (0.5, 0.0)],
    "log_ndtr": [(math.nan, math.nan), (math.inf, -0.0), (-math.inf, -math.inf), (0.0, math.log(0.5))],
    "bessel_j0": [(math.nan, math.nan), (math.inf, 0.0), (-math.inf, 0.0), (0.0, 1.0)],
    "bessel_j1": [(math.nan, math.nan), (math.inf, 0.0), (0.0, 0.0), (-0.0, -0.0)],
    "bessel_y0": [(math.nan, math.nan), (math.inf, 0.0), (0.0, -math.inf), (-1.0, math.nan)],
    "bessel_y1": [(math.nan, math.nan), (math.inf, 0.0), (0.0, -math.inf), (-1.0, math.nan)],
    "modified_bessel_i0": [(math.nan, math.nan), (math.inf, math.inf), (-math.inf, math.inf), (0.0, 1.0)],
    "modified_bessel_i1": [(math.nan, math.nan), (math.inf, math.inf), (-math.inf, -math.inf), (0.0, 0.0)],
    "modified_bessel_k0": [(math.nan, math.nan), (math.inf, 0.0), (0.0, math.inf), (-1.0, math.nan)],
    "modified_bessel_k1": [(math.nan, math.nan), (math.inf, 0.0), (0.0, math.inf), (-1.0, math.nan)],
    "scaled_modified_bessel_k0": [(math.inf, 0.0), (0.0, math.inf), (-1.0, math.nan)],
    "scaled_modified_bessel_k1": [(math.inf, 0.0), (0.0, math.inf), (-1.0, math.nan)],
    "spherical_bessel_j0": [(math.nan, math.nan), (math.inf, 0.0), (-math.inf, 0.0), (0.0, 1.0), (-0.0, 1.0)],
    "airy_ai": [(math.nan, math.nan), (math.inf, 0.0), (-math.inf, 0.0), (0.0, 0.35502805388781723926),
                (200.0, 0.0), (-1e30, math.nan)],
}


@pytest.mark.parametrize("name", sorted(SPECIAL_VALUES))
def test_special_values(name):
    xs, expected = zip(*SPECIAL_VALUES[name], strict=True)
    for dtype, np_dtype in ((ember.float64, np.float64), (ember.float32, np.float32)):
        got = getattr(S, name)(t(list(xs), dtype)).numpy()
        want = np.array(expected).astype(np_dtype)
        np.testing.assert_array_equal(got, want, err_msg=f"{name} {dtype}")
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want), err_msg=f"{name} {dtype}")


def test_zeta_and_xlog1py_special_values():
    nan, inf = math.nan, math.inf
    x = t([1.0, 1.0, 0.5, nan, 2.0, 2.0, 2.0, 2.0, inf, inf, inf, 3.0, 2.5])
    q = t([nan, 2.0, 2.0, 1.0, -2.0, -inf, inf, nan, 2.0, 1.0, 0.5, -1.5, -1.5])
    expected = [inf, inf, nan, nan, inf, inf, 0.0, nan, 0.0, 1.0, inf, None, nan]
    got = S.zeta(x, q).numpy()
    for g, e in zip(got, expected, strict=True):
        if e is not None:
            assert (math.isnan(g) and math.isnan(e)) or g == e
    # zeta(3, -1.5) = (-1.5)^-3 + (-0.5)^-3 + zeta(3, 0.5) = -8/27 - 8 + 7 zeta(3)
    assert math.isclose(got[11], -8 / 27 - 8 + 7 * 1.2020569031595942854, rel_tol=1e-14)
    got = S.xlog1py(t([0.0, 0.0, -0.0, 2.0, 2.0, 1.0]), t([nan, -5.0, inf, -1.0, -2.0, inf])).numpy()
    np.testing.assert_array_equal(got, [nan, 0.0, 0.0, -inf, nan, inf])


def test_number_first_overloads_and_promotion():
    x = t([0.5, 2.0])
    np.testing.assert_array_equal(S.xlog1py(2, x).numpy(), S.xlog1py(t([2.0, 2.0]), x).numpy())
    np.testing.assert_array_equal(S.xlog1py(x, 3).numpy(), S.xlog1py(x, t([3.0, 3.0])).numpy())
    np.testing.assert_array_equal(S.zeta(2, x).numpy(), S.zeta(t([2.0, 2.0]), x).numpy())
    assert S.zeta(2, ember.tensor([1, 2])).dtype == ember.float32  # a number ranks below a tensor
    assert S.zeta(2.0, t([1.0], ember.float32)).dtype == ember.float32
    assert S.xlog1py(ember.tensor([1, 2]), ember.tensor([3, 4])).dtype == ember.float32
    assert S.entr(ember.tensor([1, 2])).dtype == ember.get_default_dtype()
    assert S.entr(ember.tensor([True])).dtype == ember.get_default_dtype()
    assert S.ndtr(t([0.0], ember.bfloat16)).dtype == ember.bfloat16
    out = ember.empty(2, dtype=ember.float64)
    result = S.chebyshev_polynomial_t(x, 3, out=out)
    np.testing.assert_allclose(out.numpy(), [4 * 0.125 - 1.5, 4 * 8 - 6])
    np.testing.assert_array_equal(result.numpy(), out.numpy())


# ---- derivatives -------------------------------------------------------------------------------------

def _leaf(values):
    return t(values).requires_grad_()


@pytest.mark.parametrize("name,values", [
    ("entr", [0.3, 1.7, 4.0]),
    ("erfcx", [-1.5, 0.2, 3.0, 30.0]),
    ("ndtr", [-6.0, -0.5, 0.4, 3.0]),
    ("ndtri", [1e-6, 0.3, 0.6, 0.99]),
    ("log_ndtr", [-30.0, -2.0, 0.5, 4.0]),
])
def test_unary_gradients(name, values):
    fn = getattr(S, name)
    assert gradcheck(fn, (_leaf(values),))
    # the formulas are PyTorch's: check one against its closed form
    x = _leaf([0.7])
    fn(x).sum().backward()
    closed = {"entr": -(1 + math.log(0.7)), "ndtr": math.exp(-0.245) / math.sqrt(2 * math.pi),
              "erfcx": 2 * 0.7 * R.erfcx_ref(0.7) - 2 / math.sqrt(math.pi),
              "ndtri": math.sqrt(2 * math.pi) * math.exp(R.ndtri_ref(0.7) ** 2 / 2),
              "log_ndtr": math.exp(-0.245) / math.sqrt(2 * math.pi) / R.ndtr_ref(0.7)}[name]
    assert math.isclose(x.grad.item(), float(closed), rel_tol=1e-12)


def test_binary_gradients():
    x, y = _leaf([0.5, -1.5, 2.0]), _leaf([0.3, 2.0, -0.5])
    assert gradcheck(S.xlog1py, (x, y))
    assert gradcheck(lambda v: S.xlog1py(2.0, v), (y,))
    assert gradcheck(lambda v: S.xlog1py(v, 3.0), (x,))
    # at self == 0, other <= -1 the gradient for self is 0, as PyTorch's masked formula gives
    a, b = _leaf([0.0]), t([-1.0])
    S.xlog1py(a, b).sum().backward()
    assert a.grad.item() == 0.0
    q = _leaf([0.5, 1.5, 7.0])
    assert gradcheck(lambda v: S.zeta(t([2.0, 3.0, 4.5]), v), (q,))
    s = _leaf([2.0, 3.0, 4.5])
    with pytest.raises(NotImplementedError, match=r"\[special_zeta\] the derivative for 'self' is not implemented"):
        S.zeta(s, q.detach()).sum().backward()


NONDIFFERENTIABLE = ["bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
                     "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
                     "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai"]


@pytest.mark.parametrize("name", NONDIFFERENTIABLE + POLYNOMIALS)
def test_no_derivative_as_in_pytorch(name):
    x = _leaf([0.3, 0.7])
    y = getattr(S, name)(x, _leaf([2.0, 3.0])) if name in POLYNOMIALS else getattr(S, name)(x)
    assert not y.requires_grad and y.grad_fn is None
    with pytest.raises(RuntimeError, match="does not require grad"):
        y.sum().backward()


# ---- bad input ----------------------------------------------------------------------------------------

def test_bad_input():
    z = ember.tensor([1 + 2j])
    with pytest.raises(NotImplementedError, match=r"\[special_entr\] not implemented for complex dtype complex64"):
        S.entr(z)
    with pytest.raises(NotImplementedError, match=r"\[special_zeta\] not implemented for complex dtype complex64"):
        S.zeta(z, z)
    with pytest.raises(RuntimeError, match=r"\[special_bessel_j0\] result type float32 can't be cast to the desired "
                                           r"output type int64"):
        S.bessel_j0(t([1.0], ember.float32), out=ember.empty(1, dtype=ember.int64))
    with pytest.raises(RuntimeError, match=r"\[special_chebyshev_polynomial_t\] The size of tensor a \(3\) must "
                                           r"match the size of tensor b \(2\)"):
        S.chebyshev_polynomial_t(t([0.1, 0.2, 0.3]), t([1.0, 2.0]))
    with pytest.raises(TypeError):
        S.hermite_polynomial_h(0.5, 3)  # two numbers: no tensor to compute on, as in PyTorch
    with pytest.raises(TypeError):
        S.ndtr([0.5])
