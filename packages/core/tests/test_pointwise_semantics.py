"""Pointwise and reduction semantics beyond the op database: out=, in-place, errors, threads."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import ember


def test_operators_and_reflected_operators():
    x = ember.tensor([1.0, 2.0, 4.0])
    assert (x + 1).tolist() == [2, 3, 5] and (1 + x).tolist() == [2, 3, 5]
    assert (2 - x).tolist() == [1, 0, -2] and (8 / x).tolist() == [8, 4, 2]
    assert (x ** 2).tolist() == [1, 4, 16] and (2 ** x).tolist() == [2, 4, 16]
    assert (7 // x).tolist() == [7, 3, 1] and (x % 3).tolist() == [1, 2, 1]
    assert (-x).tolist() == [-1, -2, -4] and abs(-x).tolist() == [1, 2, 4]
    assert (x == 2).tolist() == [False, True, False] and (x >= 2).dtype == ember.bool
    b = ember.tensor([True, False])
    assert (~b).tolist() == [False, True] and (b & True).tolist() == [True, False]
    assert len({x, x}) == 1  # hashed by identity


def test_integer_division_semantics_follow_python():
    a = ember.tensor([7, -7, 7, -7])
    b = ember.tensor([2, 2, -2, -2])
    assert ember.div(a, b, rounding_mode="floor").tolist() == [7 // 2, -7 // 2, 7 // -2, -7 // -2]
    assert ember.div(a, b, rounding_mode="trunc").tolist() == [3, -3, -3, 3]
    assert ember.remainder(a, b).tolist() == [7 % 2, -7 % 2, 7 % -2, -7 % -2]
    assert ember.fmod(a, b).tolist() == [1, -1, 1, -1]
    assert ember.div(a, b).dtype == ember.float32
    m = ember.tensor([-(2**63)])
    assert ember.div(m, -1, rounding_mode="trunc").tolist() == [-(2**63)]  # wraps, no trap
    with pytest.raises(RuntimeError, match=r"ZeroDivisionError"):
        ember.div(a, ember.tensor([1, 0, 1, 1]), rounding_mode="floor")
    assert ember.pow(ember.tensor([2, -1, 3]), ember.tensor([10, -3, -1])).tolist() == [1024, -1, 0]


def test_out_and_in_place():
    x = ember.tensor([1.0, 2.0])
    out = ember.empty(2)
    r = ember.add(x, x, alpha=3, out=out)
    assert r.data_ptr() == out.data_ptr() and out.tolist() == [4.0, 8.0]
    wide = ember.empty(2, dtype=ember.float64)
    ember.mul(x, x, out=wide)
    assert wide.tolist() == [1.0, 4.0]
    resized = ember.empty(0)
    ember.exp(ember.zeros(2, 2), out=resized)
    assert resized.shape == (2, 2)
    v = x._version
    x.mul_(3).add_(1)
    assert x.tolist() == [4.0, 7.0] and x._version > v
    m = ember.zeros(2, 3)
    m.t().add_(ember.tensor([1.0, 2.0]))  # in place through a transposed view
    assert m.tolist() == [[1, 1, 1], [2, 2, 2]]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: ember.add(ember.zeros(2, 3), ember.zeros(4)), RuntimeError,
         r"The size of tensor a \(3\) must match the size of tensor b \(4\) at non-singleton dimension 1"),
        (lambda: ember.zeros(2).add_(ember.zeros(3, 2)), RuntimeError,
         r"output with shape \[2\] doesn't match the broadcast shape \[3, 2\]"),
        (lambda: ember.zeros(2, dtype=ember.int64).add_(1.5), RuntimeError,
         r"result type float32 can't be cast to the desired output type int64"),
        (lambda: ember.add(ember.tensor([1]), 1, alpha=0.5), RuntimeError,
         r"For integral input tensors, argument alpha must not be a floating point number"),
        (lambda: ember.tensor([True]) - ember.tensor([False]), RuntimeError, r"Subtraction, the `-` operator, with two bool"),
        (lambda: -ember.tensor([True]), RuntimeError, r"Negation, the `-` operator, on a bool tensor"),
        (lambda: ember.bitwise_and(ember.zeros(1), ember.zeros(1)), RuntimeError,
         r"\[bitwise_and\] expected integral or bool tensors, but got float32"),
        (lambda: ember.div(ember.zeros(1), 1, rounding_mode="round"), ValueError,
         r"rounding_mode to be one of None, 'trunc', or 'floor', but got 'round'"),
        (lambda: ember.lt(ember.zeros(1, dtype=ember.complex64), 0), NotImplementedError, r"\[lt\] not implemented for complex"),
        (lambda: ember.erf(ember.zeros(1, dtype=ember.complex64)), NotImplementedError, r"\[erf\] not implemented for complex"),
        (lambda: ember.mean(ember.tensor([1, 2])), RuntimeError, r"Input dtype must be either a floating point or complex dtype. Got: int64"),
        (lambda: ember.amax(ember.zeros(0, 3), 0), IndexError, r"Expected reduction dim 0 to have non-zero size"),
        (lambda: ember.argmax(ember.zeros(0)), RuntimeError, r"Expected reduction dim to be specified for input.numel\(\) == 0"),
        (lambda: ember.sum(ember.zeros(2, 3), dim=(0, 0)), RuntimeError, r"dim 0 appears multiple times"),
        (lambda: ember.sum(ember.zeros(2, 3), dim=2), IndexError, r"Dimension out of range"),
        (lambda: ember.var(ember.tensor([1, 2])), RuntimeError, r"std and var only support floating point"),
        (lambda: ember.clamp(ember.zeros(1)), RuntimeError, r"At least one of 'min' or 'max' must not be None"),
        (lambda: ember.where(ember.zeros(1), ember.zeros(1), 0), TypeError, r"expected condition to be a boolean tensor"),
        (lambda: ember.add(ember.zeros(1), "a"), TypeError, r"incompatible function arguments"),
        (lambda: ember.zeros(1, dtype=ember.float8_e5m2) + 1, NotImplementedError, r"not implemented for dtype float8_e5m2"),
    ],
)
def test_bad_inputs(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_clamp_and_where():
    x = ember.tensor([-2.0, 0.5, float("nan"), 3.0])
    np.testing.assert_array_equal(ember.clamp(x, -1, 1).numpy(), [-1, 0.5, np.nan, 1])
    np.testing.assert_array_equal(x.clamp(max=0).numpy(), [-2, 0, np.nan, 0])
    assert ember.clamp(ember.tensor([1, 5]), 2.5).dtype == ember.float32
    assert ember.where(ember.tensor([True, False]), ember.tensor([1, 2]), 9.5).tolist() == [1.0, 9.5]


def test_var_std_correction_and_logsumexp_stability():
    x = np.random.default_rng(0).standard_normal((5, 7))
    t = ember.tensor(x, dtype=ember.float64)
    np.testing.assert_allclose(t.var(1, correction=0).numpy(), x.var(1), rtol=1e-12)
    np.testing.assert_allclose(t.std(0, keepdim=True).numpy(), x.std(0, ddof=1, keepdims=True), rtol=1e-12)
    big = ember.tensor([1000.0, 1000.0], dtype=ember.float64)
    assert abs(ember.logsumexp(big, 0).item() - (1000 + np.log(2))) < 1e-9
    assert ember.logsumexp(ember.tensor([-float("inf")] * 2), 0).item() == -float("inf")


def test_results_are_bitwise_identical_for_one_and_two_threads():
    x = ember.tensor(np.random.default_rng(1).standard_normal(3_000_000).astype(np.float32))
    results = []
    for n in (1, 2):
        ember.set_num_threads(n)
        results.append((ember.sum(x).numpy().tobytes(), ember.exp(x).numpy().tobytes(),
                        ember.sum(x.view(1000, 3000), dim=1).numpy().tobytes()))
    ember.set_num_threads(os.cpu_count() or 1)
    assert results[0] == results[1]
    with pytest.raises(ValueError, match=r"expected a positive number of threads, but got 0"):
        ember.set_num_threads(0)


SNIPPET = """
import numpy as np, ember
x = ember.tensor(np.linspace(-3, 3, 1001), dtype=ember.float32)
y = ember.tensor(np.linspace(1, 2, 1001), dtype=ember.float32)
outs = [ember.add(x, y, alpha=0.3), ember.exp(x), ember.sum(x.view(7, 143), dim=1), ember.tanh(x), x / y,
        ember.maximum(x, y), ember.tensor(np.arange(20), dtype=ember.int32) * 3]
np.save(__import__('sys').argv[1], np.concatenate([o.numpy().astype(np.float64).ravel() for o in outs]))
print(ember._C._cpu_capability())
"""


def test_avx2_and_baseline_builds_agree(tmp_path):
    results = {}
    for capability in ("default", "auto"):
        env = dict(os.environ)
        env.pop("EMBER_CPU_CAPABILITY", None)
        if capability == "default":
            env["EMBER_CPU_CAPABILITY"] = "default"
        path = tmp_path / f"{capability}.npy"
        done = subprocess.run([sys.executable, "-c", SNIPPET, str(path)], env=env, capture_output=True, text=True,
                              check=True)
        results[capability] = (done.stdout.strip(), np.load(path))
    assert results["default"][0] == "default"
    np.testing.assert_allclose(results["auto"][1], results["default"][1], rtol=1e-6, atol=1e-6)


def test_caching_allocator_reuses_large_blocks():
    ember._C._cpu_empty_cache()
    a = ember.empty(4_000_000)
    ptr = a.data_ptr()
    del a
    assert ember._C._cpu_cached_bytes() >= 16_000_000
    b = ember.empty(4_000_000)
    assert b.data_ptr() == ptr
    ember._C._cpu_empty_cache()


def test_integer_overflow_wraps_like_numpy():
    big = np.array([2**62, 2**62, -(2**63)], dtype=np.int64)
    t = ember.from_numpy(big)
    with np.errstate(over="ignore"):
        assert ember.prod(t[:2]).item() == int(np.prod(big[:2]))
        assert ember.sum(t).item() == int(np.sum(big))
        assert (t + t).tolist() == (big + big).tolist()
        assert (t * 4).tolist() == (big * 4).tolist()
        assert (-t).tolist() == (-big).tolist()
        assert ember.abs(t).tolist() == np.abs(big).tolist()
        assert ember.cumsum(t, 0).tolist() == np.cumsum(big).tolist()


EULER_GAMMA = 0.57721566490153286061
RNG_DECIMALS = np.random.default_rng(5)


def test_digamma_exact_values_and_poles():
    n = np.arange(1, 30)
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / n[:-1])])  # H_{n-1}
    got = ember.digamma(ember.tensor(n.astype(np.float64))).numpy()
    np.testing.assert_allclose(got, harmonic - EULER_GAMMA, rtol=1e-14, atol=1e-15)
    half = ember.digamma(ember.tensor([0.5, 1.5, -0.5], dtype=ember.float64)).numpy()
    psi_half = -EULER_GAMMA - 2 * math.log(2)  # psi(1.5) = psi(0.5) + 2 = psi(-0.5)
    np.testing.assert_allclose(half, [psi_half, psi_half + 2, psi_half + 2], rtol=1e-14, atol=1e-15)
    special = ember.digamma(ember.tensor([0.0, -0.0, -1.0, -3.0, math.inf, -math.inf, math.nan])).numpy()
    assert special[0] == -math.inf and special[1] == math.inf
    assert np.isnan(special[2:4]).all() and special[4] == math.inf and np.isnan(special[5:]).all()
    # the recurrence psi(x + 1) = psi(x) + 1/x holds across the kernel's branch points
    x = np.linspace(-3.7, 12.3, 41)
    lhs = ember.digamma(ember.tensor(x + 1)).numpy()
    rhs = ember.digamma(ember.tensor(x)).numpy() + 1 / x
    np.testing.assert_allclose(lhs, rhs, rtol=1e-11, atol=1e-11)


def test_erfinv_inverts_erf_to_the_tails():
    y = np.concatenate([np.linspace(-0.999999, 0.999999, 101), [1 - 2.0**-52, -(1 - 2.0**-52), 1e-300]])
    x = ember.erfinv(ember.tensor(y)).numpy()
    back = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(back, y, rtol=4e-16, atol=0)
    assert ember.erfinv(ember.tensor(0.5, dtype=ember.float64)).item() == pytest.approx(0.4769362762044699, rel=1e-15)
    edge = ember.erfinv(ember.tensor([1.0, -1.0, 1.5, -0.0])).numpy()
    assert edge[0] == math.inf and edge[1] == -math.inf and np.isnan(edge[2]) and np.signbit(edge[3])
    with pytest.raises(NotImplementedError, match=r"\[erfinv\] not implemented for complex dtype complex64"):
        ember.erfinv(ember.tensor([1j]))


@pytest.mark.parametrize("decimals", [-2, -1, 0, 1, 3])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_decimals_matches_numpy(decimals, dtype):
    a = (RNG_DECIMALS.standard_normal((4, 5)) * 1000).astype(dtype)
    got = ember.round(ember.from_numpy(a).t(), decimals=decimals)
    np.testing.assert_array_equal(got.numpy(), np.round(a.T, decimals))
    x = ember.from_numpy(a.copy())
    x.round_(decimals=decimals)
    np.testing.assert_array_equal(x.numpy(), np.round(a, decimals))
    assert ember.tensor(2.5).round(decimals=0).item() == 2.0  # half to even
    with pytest.raises(NotImplementedError, match=r"round with decimals is not implemented for int64"):
        ember.round(ember.tensor([1, 2]), decimals=1)


def test_as_tensor_shares_memory_when_it_can():
    a = np.arange(6.0)
    t = ember.as_tensor(a)
    a[0] = 42.0
    assert t[0].item() == 42.0 and t.dtype == ember.float64
    converted = ember.as_tensor(a, dtype=ember.float32)
    a[1] = -1.0
    assert converted[1].item() == 1.0 and converted.dtype == ember.float32
    x = ember.ones(3)
    assert ember.as_tensor(x).data_ptr() == x.data_ptr()
    assert ember.as_tensor(x, dtype=ember.float32).data_ptr() == x.data_ptr()
    assert ember.as_tensor([1, 2]).dtype == ember.int64
    assert ember.as_tensor(3.5).dim() == 0
    with pytest.raises(NotImplementedError, match=r"\[as_tensor\] not implemented for cuda:0"):
        ember.as_tensor([1.0], device="cuda:0")


def test_in_place_methods_return_self():
    x = ember.zeros(4)
    assert x.add_(1) is x and x.mul_(2) is x and x.clamp_(max=1.5) is x and x.fill_(3) is x
    assert x.copy_(ember.ones(4)) is x and x.uniform_() is x and x.round_(decimals=1) is x
    assert x.index_put_([ember.tensor([0])], ember.tensor(1.0)) is x
    assert x.scatter_(0, ember.tensor([1]), ember.tensor([2.0])) is x
    assert x.masked_fill_(x > 1, 0.0) is x and x.zero_() is x
    assert x.tolist() == [0.0, 0.0, 0.0, 0.0]
    with pytest.raises(TypeError):
        x.add_("a")


RNG_LAYOUT = np.random.default_rng(7)


def _order(t):
    """Dims from outermost to innermost by stride (PyTorch's memory order of a dense tensor)."""
    return sorted(range(t.dim()), key=lambda d: -t.stride()[d])


def test_results_follow_the_memory_order_of_their_inputs():
    # As PyTorch's TensorIterator: a result is laid out like its (first ordering) input, so an op
    # on a transposed or permuted view walks memory forwards; values are unchanged.
    a = RNG_LAYOUT.standard_normal((4, 5, 6)).astype(np.float32)
    x = ember.from_numpy(a).permute(2, 0, 1)  # strides (1, 30, 6)
    ref = a.transpose(2, 0, 1)
    for fn, np_fn in ((ember.exp, np.exp), (ember.abs, np.abs), (ember.neg, np.negative),
                      (lambda t: t * 2, lambda v: v * 2), (lambda t: t + t, lambda v: v + v),
                      (lambda t: t > 0, lambda v: v > 0)):
        out = fn(x)
        assert _order(out) == _order(x) and out.is_contiguous() is False
        np.testing.assert_allclose(out.numpy(), np_fn(ref.astype(np.float64)), rtol=2e-7)
    # a contiguous first input decides for a binary op; a broadcast input leaves the order to the other
    y = ember.from_numpy(np.ascontiguousarray(ref))
    assert (y + x).is_contiguous() and not (x + y).is_contiguous()
    col = ember.from_numpy(np.ones((6, 1, 1), np.float32))
    assert _order(x * col) == _order(x)
    np.testing.assert_allclose((x * col).numpy(), ref, rtol=0)
    # dtype-changing ops (int -> float, the cast of an operand) keep the order too
    xi = ember.from_numpy(np.arange(12, dtype=np.int64).reshape(3, 4)).t()
    assert _order(ember.sqrt(xi)) == [1, 0] and _order(xi + 0.5) == [1, 0]
    np.testing.assert_allclose(ember.sqrt(xi).numpy(), np.sqrt(np.arange(12.0).reshape(3, 4).T), rtol=1e-7)
    # contiguous, 0-dim, zero-size and out= keep their layouts
    assert ember.exp(ember.from_numpy(a)).is_contiguous()
    assert ember.exp(ember.tensor(1.0)).shape == ()
    assert ember.exp(ember.from_numpy(a[:, :0]).permute(2, 0, 1)).shape == (6, 4, 0)
    out = ember.empty(6, 4, 5)
    ember.exp(x, out=out)
    assert out.is_contiguous()
    np.testing.assert_allclose(out.numpy(), np.exp(ref), rtol=2e-7)
    # in place on a transposed view writes through it
    z = ember.from_numpy(a.copy())
    z.permute(2, 0, 1).mul_(3)
    np.testing.assert_allclose(z.numpy(), a * 3, rtol=0)


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_abs_on_strided_views_and_edge_values(dtype):
    # complex64 |z| is computed in double (no hypot); both must stay within 1 ulp of the float64 /
    # extended reference, with hypot's special values (inf beats nan), on stft's frequency-major
    # layout and on the parts of a permuted view.
    re = RNG_LAYOUT.standard_normal((201, 61)) * np.exp(RNG_LAYOUT.uniform(-40, 40, (201, 61)))
    im = RNG_LAYOUT.standard_normal((201, 61)) * np.exp(RNG_LAYOUT.uniform(-40, 40, (201, 61)))
    z = (re + 1j * im).astype(dtype)
    real = np.float32 if dtype == np.complex64 else np.float64
    with np.errstate(over="ignore"):  # 1.7e308 is inf in complex64
        edge = np.array([0, -0.0, 1e-45 + 1e-45j, 3e38 + 3e38j, complex(np.inf, np.nan), complex(np.nan, -np.inf),
                         complex(np.nan, 1), complex(-np.inf, 0), 1.7e308 + 1.7e308j, 1e-310 + 3e-310j], dtype=dtype)
    z.reshape(-1)[: edge.size] = edge
    t = ember.from_numpy(z.T.copy()).t()  # (201, 61) with strides (1, 201)
    ours = t.abs()
    assert ours.dtype == (ember.float32 if dtype == np.complex64 else ember.float64)
    assert _order(ours) == [1, 0]
    zl = z.astype(np.clongdouble)
    expected = np.hypot(zl.real, zl.imag)
    with np.errstate(all="ignore"):
        rounded = expected.astype(real)  # inf where the modulus overflows the result type
        ulp = np.spacing(np.abs(rounded))
        err = np.abs(ours.numpy().astype(np.longdouble) - expected) / np.where(ulp > 0, ulp, 1)
    finite = np.isfinite(rounded)
    assert np.max(err[finite]) <= 1.0
    np.testing.assert_array_equal(ours.numpy()[~finite], rounded[~finite])
    # contiguous, a slice with a step, and zero-size
    np.testing.assert_array_equal(ember.from_numpy(z).abs().numpy(), ours.numpy())
    np.testing.assert_array_equal(ember.from_numpy(z)[::3, 1::2].abs().numpy(), ours.numpy()[::3, 1::2])
    assert ember.from_numpy(z[:0]).abs().shape == (0, 61)
    # the power spectrum from the parts of the view (values whose squares stay in range), against float64
    zs = (RNG_LAYOUT.standard_normal((201, 61)) + 1j * RNG_LAYOUT.standard_normal((201, 61))).astype(dtype)
    ts = ember.from_numpy(zs.T.copy()).t()
    power = ts.real**2 + ts.imag**2
    assert _order(power) == [1, 0]
    ref = zs.real.astype(np.float64) ** 2 + zs.imag.astype(np.float64) ** 2
    np.testing.assert_allclose(power.numpy(), ref, rtol=4 * np.finfo(real).eps)


@pytest.mark.parametrize("ndim", [1, 8, 9, 12])
def test_elementwise_loops_over_many_dims(ndim):
    # The strided loop keeps up to 8 dims inline and more on the heap (DimArray in loops.h): both
    # paths, on permuted (non-contiguous) and broadcast operands, against NumPy.
    rng = np.random.default_rng(ndim)
    a = rng.standard_normal([2] * ndim)
    b = rng.standard_normal([2] + [1] * max(ndim - 2, 0) + ([2] if ndim > 1 else []))
    cond = rng.random([2] * ndim) > 0.5
    order = tuple(reversed(range(ndim)))
    ea, eb = ember.from_numpy(a).permute(*order), ember.from_numpy(b)
    at = a.transpose(order)
    np.testing.assert_array_equal((ea + eb).numpy(), at + b)
    np.testing.assert_array_equal(ember.neg(ea).numpy(), -at)
    np.testing.assert_array_equal(ember.where(ember.from_numpy(cond), ea, eb).numpy(), np.where(cond, at, b))
