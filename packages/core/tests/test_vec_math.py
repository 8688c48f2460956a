"""Accuracy of the vectorized elementary functions (native/src/backend/cpu/vec_math.h).

float32 results must lie within 2 ulp of the correctly rounded value over the whole float32
range: inputs are random bit patterns (every exponent, subnormals included) plus dense uniform
ranges and the edge cases, against float64 references (NumPy and the math module, accurate far
below a float32 ulp). Special values (NaN, infinities, -0.0) must come out exactly.
"""

from __future__ import annotations

import decimal
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn.functional as F

RNG = np.random.default_rng(20261125)


def _float32_inputs(n_bits: int = 400_000) -> np.ndarray:
    bits = RNG.integers(0, 2**32, n_bits, dtype=np.uint64).astype(np.uint32)
    x = bits.view(np.float32)
    x = x[np.isfinite(x)]
    edges = np.array([0.0, 1e-45, 1e-40, 1.1754942e-38, 1.17549435e-38, 1e-8, 0.5, 0.625, 0.9999, 1.0, 1.5707964,
                      3.1415927, 9.0, 10.0, 20.0, 20.5, 87.3, 88.72, 88.7228, 88.73, 89.0, 103.9, 104.1, 8192.0,
                      1e6, 1e7, 3.4e38], dtype=np.float32)
    return np.concatenate([x, edges, -edges, RNG.uniform(-25, 25, 200_000).astype(np.float32),
                           RNG.uniform(-1, 1, 100_000).astype(np.float32)])


X = _float32_inputs()


def _ulp_error(ours: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """|ours - ref| in units of the float32 ulp at ref (subnormal spacing below 2^-126); exact
    agreement (NaN with NaN, an overflow rounded to inf) counts 0."""
    ref = ref.astype(np.float64)
    with np.errstate(all="ignore"):
        ref32 = ref.astype(np.float32)
        a = np.abs(ref)
        ulp = np.maximum(2.0 ** (np.floor(np.log2(np.where(a > 0, a, 1.0))) - 23), 2.0**-149)
        err = np.abs(ours.astype(np.float64) - ref) / ulp
    same = (ours.astype(np.float64) == ref) | (np.isnan(ours) & np.isnan(ref)) | (np.isinf(ref32) & (ours == ref32))
    return np.where(same, 0.0, err)


def _sigmoid(v):
    with np.errstate(all="ignore"):
        return np.where(v < 0, np.exp(v) / (1 + np.exp(v)), 1 / (1 + np.exp(-v)))


def _softplus(v):
    with np.errstate(all="ignore"):
        return np.maximum(v, 0) + np.log1p(np.exp(-np.abs(v)))


_erf = np.vectorize(math.erf, otypes=[float])
_erfc = np.vectorize(math.erfc, otypes=[float])
_K = math.sqrt(2 / math.pi)

# name: (ember function, float64 reference, True if the function is odd (keeps -0.0))
FUNCTIONS = {
    "exp": (ember.exp, np.exp, False),
    "expm1": (ember.expm1, np.expm1, True),
    "log": (ember.log, np.log, False),
    "log1p": (ember.log1p, np.log1p, True),
    "tanh": (ember.tanh, np.tanh, True),
    "sigmoid": (ember.sigmoid, _sigmoid, False),
    "sin": (ember.sin, np.sin, True),
    "cos": (ember.cos, np.cos, False),
    "erf": (ember.erf, _erf, True),
    "erfc": (ember.erfc, _erfc, False),
    "silu": (F.silu, lambda v: v * _sigmoid(v), True),
    "softplus": (F.softplus, lambda v: np.where(v > 20, v, _softplus(v)), False),
    "mish": (F.mish, lambda v: v * np.tanh(np.where(v > 20, v, _softplus(v))), True),
    "gelu": (F.gelu, lambda v: 0.5 * v * _erfc(-v / math.sqrt(2)), True),
    "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"), lambda v: v * _sigmoid(2 * _K * (v + 0.044715 * v**3)),
                  True),
}
SLOW_REFERENCE = {"erf", "erfc", "gelu"}  # np.vectorize over math: a sparser sample


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_float32_within_two_ulp_over_the_whole_range(name):
    fn, ref, _ = FUNCTIONS[name]
    x = X[::6] if name in SLOW_REFERENCE else X
    with np.errstate(all="ignore"):
        expected = ref(x.astype(np.float64))
    ours = fn(ember.from_numpy(x.copy())).numpy()
    err = _ulp_error(ours, expected)
    worst = int(np.argmax(err))
    assert err[worst] <= 2.0, f"{name}({x[worst]!r}) = {ours[worst]!r}, reference {expected[worst]!r}: {err[worst]:.2f} ulp"


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_special_values_are_exact(name):
    fn, ref, odd = FUNCTIONS[name]
    x = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype=np.float32)
    ours = fn(ember.from_numpy(x.copy())).numpy()
    with np.errstate(all="ignore"):
        expected = ref(x.astype(np.float64)).astype(np.float32)
    assert np.isnan(ours[0])
    np.testing.assert_array_equal(ours[1:], expected[1:])
    if odd:
        assert np.signbit(ours[4]), f"{name}(-0.0) lost the sign of zero"


# ---- float64: references in 60-digit decimal arithmetic (the standard library's decimal) ----

_CTX = decimal.Context(prec=60)
_PI = decimal.Decimal("3.14159265358979323846264338327950288419716939937510582097494459")


def _dexp(v):
    return _CTX.exp(v)


def _dsin(v):
    v = _CTX.remainder(v, 2 * _PI)
    term, total, n = v, v, 1
    while abs(term) > decimal.Decimal(10) ** -70:
        term = _CTX.multiply(term, -v * v / ((2 * n) * (2 * n + 1)))
        total += term
        n += 1
    return total


def _derf_series(v):
    term, total, n = v, v, 0
    while abs(term) > decimal.Decimal(10) ** -70 * abs(total):
        n += 1
        term = _CTX.multiply(term, -v * v / n)
        total += term / (2 * n + 1)
    return total * 2 / _CTX.sqrt(_PI)


def _derfc_large(v):  # v >= 3: continued fraction erfc(v) = e^(-v^2)/sqrt(pi) / (v + 1/2 / (v + 1 / (v + 3/2 / ...)))
    tail = decimal.Decimal(0)
    for k in range(400, 0, -1):
        tail = (decimal.Decimal(k) / 2) / (v + tail)
    return _dexp(-v * v) / _CTX.sqrt(_PI) / (v + tail)


def _derfc(v):
    if v >= 3:
        return _derfc_large(v)
    if v <= -3:
        return 2 - _derfc_large(-v)
    return 1 - _derf_series(v)


def _dsigmoid(v):
    return 1 / (1 + _dexp(-v))


_DECIMAL = {
    "exp": _dexp,
    "expm1": lambda v: _dexp(v) - 1,
    "log": lambda v: _CTX.ln(v),
    "log1p": lambda v: _CTX.ln(1 + v),
    "tanh": lambda v: (_dexp(2 * v) - 1) / (_dexp(2 * v) + 1),
    "sigmoid": _dsigmoid,
    "sin": _dsin,
    "cos": lambda v: _dsin(v + _PI / 2),
    "erf": lambda v: 1 - _derfc(v) if abs(v) >= 3 else _derf_series(v),
    "erfc": _derfc,
    "silu": lambda v: v * _dsigmoid(v),
    "gelu": lambda v: v / 2 * _derfc(-v / _CTX.sqrt(decimal.Decimal(2))),
}
# The C library's functions are within 1 ulp; the activations composed from them in float64
# (sigmoid, silu, gelu: an exp or erfc, then a division or product) within 2.
_FLOAT64_ULP = {"sigmoid": 2, "silu": 2, "gelu": 2}


@pytest.mark.parametrize("name", sorted(_DECIMAL))
def test_float64_against_sixty_digit_references(name):
    fn = FUNCTIONS[name][0]
    x = RNG.uniform(-12, 12, 400)
    if name in ("log", "log1p"):
        x = np.exp(RNG.uniform(-30, 30, 400)) - (1.0 if name == "log1p" else 0.0)
    if name in ("tanh", "exp", "expm1", "sigmoid", "silu"):
        x = RNG.uniform(-40, 40, 400)
    ours = fn(ember.from_numpy(x.copy())).numpy()
    expected = np.array([float(_DECIMAL[name](decimal.Decimal(float(v)))) for v in x])
    np.testing.assert_array_max_ulp(ours, expected, maxulp=_FLOAT64_ULP.get(name, 1))


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16])
@pytest.mark.parametrize("name", ["exp", "tanh", "gelu", "silu", "erf"])
def test_reduced_precision_rounds_the_float32_result(name, dtype):
    fn = FUNCTIONS[name][0]
    x = ember.from_numpy(RNG.uniform(-6, 6, 5000).astype(np.float32)).to(dtype)
    ours = fn(x)
    assert ours.dtype == dtype
    expected = fn(x.to(ember.float32)).to(dtype)
    np.testing.assert_array_equal(ours.to(ember.float32).numpy(), expected.to(ember.float32).numpy())


@pytest.mark.parametrize("name", ["erf", "erfc", "gelu"])
def test_erf_family_within_two_ulp_on_both_sides_of_the_polynomial_range(name):
    # erf/erfc use a polynomial for |x| < 2 and skip the tail when a whole vector lies there; gelu
    # takes float32 tables for |x| < 3 (16 intervals of 3/16, Note [float32 gelu]) and float64
    # lanes past that. Sorted dense inputs give vectors all inside, all outside and straddling the
    # bound, the values next to every bound are added, and the shuffled copy mixes lanes from both
    # ranges in one vector.
    fn, ref, _ = FUNCTIONS[name]
    bounds = [3.0] + [k * 0.1875 for k in range(1, 16)] if name == "gelu" else [2.0]
    near = [np.nextafter(np.float32(b), np.float32([0, 9])).astype(np.float64) for b in bounds]
    x = np.concatenate([np.linspace(-1.6 * bounds[0], 1.6 * bounds[0], 60_001), np.array(bounds), *near,
                        -np.array(bounds), *(-v for v in near)]).astype(np.float32)
    for data in (x, RNG.permutation(x)):
        ours = fn(ember.from_numpy(data.copy())).numpy()
        err = _ulp_error(ours, ref(data.astype(np.float64)))
        worst = int(np.argmax(err))
        assert err[worst] <= 2.0, f"{name}({data[worst]!r}) = {ours[worst]!r}: {err[worst]:.2f} ulp"


def test_strided_and_tail_elements_take_the_vector_path():
    # A strided view and a length that is no multiple of any vector width give the same bits
    # as the contiguous run: every element goes through the same vector code.
    x = ember.from_numpy(RNG.uniform(-5, 5, (37, 29)).astype(np.float32))
    for fn in (ember.exp, ember.tanh, F.gelu, ember.erf):
        np.testing.assert_array_equal(fn(x.t()).numpy(), fn(x.t().contiguous()).numpy())
        np.testing.assert_array_equal(fn(x[:, 3]).numpy(), fn(x).numpy()[:, 3])


def _run_under_capability(capability: str, calls: str) -> None:
    """Runs `calls` (this module's tests, as `t.<test>(...)` lines) in a fresh interpreter whose
    kernels are the `capability` build."""
    code = (
        "import ember, sys\n"
        f"assert ember._C._cpu_capability() == {capability!r}, ember._C._cpu_capability()\n"
        f"sys.path.insert(0, {os.path.dirname(__file__)!r})\n"
        "import test_vec_math as t\n" + calls + "print('ok')\n"
    )
    env = dict(os.environ, EMBER_CPU_CAPABILITY=capability)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


def test_avx2_build_of_the_erf_family_is_within_two_ulp_too():
    # On an AVX-512 machine the AVX2 build (8 lanes, gelu's table lookups from two halves) runs
    # only when asked for.
    if ember._C._cpu_capability() != "avx512":
        pytest.skip("the tests above already ran the AVX2 (or only the baseline) build here")
    _run_under_capability("avx2", "for name in ('erf', 'erfc', 'gelu'):\n"
                                  "    t.test_erf_family_within_two_ulp_on_both_sides_of_the_polynomial_range(name)\n"
                                  "t.test_strided_and_tail_elements_take_the_vector_path()\n")


def test_baseline_build_is_within_two_ulp_too():
    # The SSE2 build (no FMA) computes the same functions with other roundings.
    _run_under_capability("default", "for name in ('exp', 'expm1', 'log', 'log1p', 'tanh', 'sigmoid', 'sin', "
                                     "'gelu_tanh'):\n"
                                     "    t.test_float32_within_two_ulp_over_the_whole_range(name)\n"
                                     "    t.test_special_values_are_exact(name)\n"
                                     "for name in ('erf', 'erfc', 'gelu'):\n"
                                     "    t.test_erf_family_within_two_ulp_on_both_sides_of_the_polynomial_range(name)\n")


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_fused_backward_matches_the_composed_formula(approximate):
    # Without create_graph the derivative runs the one-pass backward kernel; with it, composed
    # differentiable ops. Both must agree.
    x = ember.from_numpy(RNG.uniform(-8, 8, 4096)).requires_grad_()
    g = ember.from_numpy(RNG.standard_normal(4096))
    (fused,) = ember.autograd.grad(F.gelu(x, approximate=approximate), x, g)
    (composed,) = ember.autograd.grad(F.gelu(x, approximate=approximate), x, g, create_graph=True)
    np.testing.assert_allclose(fused.numpy(), composed.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("fn", [F.silu, F.mish, lambda t: F.softplus(t, beta=2.0, threshold=5.0), F.hardswish,
                                F.hardsigmoid])
def test_fused_backward_matches_the_composed_formula(fn):
    x = ember.from_numpy(RNG.uniform(-8, 8, 4096)).requires_grad_()
    g = ember.from_numpy(RNG.standard_normal(4096))
    (fused,) = ember.autograd.grad(fn(x), x, g)
    (composed,) = ember.autograd.grad(fn(x), x, g, create_graph=True)
    np.testing.assert_allclose(fused.numpy(), composed.detach().numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("op", ["gelu_backward", "silu_backward", "mish_backward", "hardswish_backward",
                                "hardsigmoid_backward"])
def test_backward_ops_check_their_inputs(op):
    f = getattr(ember.ops.aten, op)
    with pytest.raises(RuntimeError, match="The size of tensor a"):
        f(ember.ones(3), ember.ones(4))
    with pytest.raises(NotImplementedError, match="not implemented for complex"):
        f(ember.ones(3, dtype=ember.complex64), ember.ones(3, dtype=ember.complex64))


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
def test_hardswish_and_hardsigmoid_kernels_at_their_kinks_and_specials(dtype):
    # PyTorch's branches: hardswish' is 0 below -3, x/3 + 1/2 on [-3, 3], 1 above; hardsigmoid'
    # is 1/6 strictly inside (-3, 3). NaN stays NaN; the transposed view takes the strided loop.
    a = np.concatenate([np.linspace(-5, 5, 101), [-3.0, 3.0, np.nan, np.inf, -np.inf]])
    x = ember.tensor(np.stack([a, a[::-1]]), dtype=dtype).t()
    ref = x.double().numpy()
    g = np.linspace(0.5, 1.5, ref.size).reshape(ref.shape)
    with np.errstate(invalid="ignore"):
        cases = [(F.hardswish, ref * np.clip(ref + 3, 0, 6) / 6, np.where(ref < -3, 0, np.where(ref <= 3, g * (ref / 3 + 0.5), g))),
                 (F.hardsigmoid, np.clip(ref + 3, 0, 6) / 6, np.where((ref > -3) & (ref < 3), g / 6, 0.0))]
    tol = {"rtol": 1e-6, "atol": 1e-7} if dtype == ember.float32 else {"rtol": 1e-15, "atol": 0}
    for fn, want, want_grad in cases:
        np.testing.assert_allclose(fn(x).double().numpy(), want, equal_nan=True, **tol)
        xg = x.detach().requires_grad_()
        fn(xg).backward(ember.tensor(g, dtype=dtype))
        finite = np.isfinite(ref)
        np.testing.assert_allclose(xg.grad.double().numpy()[finite], want_grad[finite], **tol)
    assert F.hardswish(ember.zeros(0, 3, dtype=dtype)).shape == (0, 3)
    assert F.hardsigmoid(ember.tensor(-3.5, dtype=dtype)).item() == 0.0


def test_gelu_rejects_an_unknown_approximation():
    with pytest.raises(ValueError, match="approximate argument must be either none or tanh, but got 'erf'"):
        F.gelu(ember.ones(2), approximate="erf")
