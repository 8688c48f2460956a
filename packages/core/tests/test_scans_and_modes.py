"""cummax, cummin, logcumsumexp, nanmedian, mode and unique(dim=) against float64 NumPy /
plain-Python references, over contiguous, transposed, zero-size and 0-dim inputs."""

import math
from collections import Counter

import numpy as np
import pytest

import ember

RNG = np.random.default_rng(21)


def layouts(a):
    """(name, ember tensor, numpy array with the same values) for several memory layouts."""
    yield "contiguous", ember.tensor(a), a
    if a.ndim >= 2:
        reversed_dims = list(range(a.ndim))[::-1]
        yield "transposed", ember.tensor(np.ascontiguousarray(a.transpose(reversed_dims))).permute(reversed_dims), a
    yield "stepped", ember.tensor(np.repeat(a, 2, axis=-1))[..., ::2], a


def running_extreme(row, is_max):
    """PyTorch's cummax/cummin rule: ties and NaNs take the newer position; NaN, once seen, stays."""
    values, indices, best, at = [], [], None, 0
    for i, x in enumerate(row):
        better = best is None or (x >= best if is_max else x <= best)
        if math.isnan(x) or (not (best is not None and math.isnan(best)) and better):
            best, at = x, i
        values.append(best)
        indices.append(at)
    return values, indices


def along(a, dim, fn):
    """Applies fn(row) -> (values, indices) to every 1-d slice of a along dim."""
    moved = np.moveaxis(a, dim, -1)
    vals = np.empty(moved.shape, dtype=np.float64)
    idx = np.empty(moved.shape, dtype=np.int64)
    for pos in np.ndindex(moved.shape[:-1]):
        v, i = fn(list(moved[pos].astype(np.float64)))
        vals[pos], idx[pos] = v, i
    return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cummax_cummin(op, dtype, dim):
    a = RNG.integers(-3, 4, (4, 6)).astype(dtype)  # small range: plenty of ties
    if dtype.startswith("float"):
        a[1, 2] = np.nan
        a[2, 0] = -np.inf
    want_v, want_i = along(a, dim, lambda r: running_extreme(r, op == "cummax"))
    for name, x, _ in layouts(a):
        values, indices = getattr(ember, op)(x, dim)
        assert values.dtype == x.dtype and indices.dtype == ember.int64, name
        np.testing.assert_array_equal(values.numpy().astype(np.float64), want_v, err_msg=name)
        np.testing.assert_array_equal(indices.numpy(), want_i, err_msg=name)
    result = getattr(ember.tensor(a), op)(dim)
    assert result.values.shape == result.indices.shape == a.shape


def test_scans_on_zero_size_and_zero_dim():
    assert tuple(ember.cummax(ember.zeros(0, 3), 0).values.shape) == (0, 3)
    assert tuple(ember.logcumsumexp(ember.zeros(2, 0), 1).shape) == (2, 0)
    v, i = ember.cummin(ember.tensor(2.5), 0)
    assert v.item() == 2.5 and i.item() == 0 and v.dim() == 0
    assert ember.logcumsumexp(ember.tensor(-1.5, dtype=ember.float64), 0).item() == -1.5


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("dim", [0, 1])
def test_logcumsumexp_matches_numpy(dtype, dim):
    a = (RNG.standard_normal((5, 7)) * 30).astype(dtype)
    want = np.logaddexp.accumulate(a.astype(np.float64), axis=dim)
    tol = 1e-12 if dtype == np.float64 else 2e-5
    for name, x, _ in layouts(a):
        np.testing.assert_allclose(ember.logcumsumexp(x, dim).numpy(), want, rtol=tol, atol=tol, err_msg=name)


def test_logcumsumexp_extremes():
    x = ember.tensor([-math.inf, -math.inf, 0.0, math.inf, 1.0, math.nan, 2.0], dtype=ember.float64)
    got = ember.logcumsumexp(x, 0).numpy()
    assert got[0] == -math.inf and got[1] == -math.inf and got[2] == 0.0
    assert got[3] == math.inf and got[4] == math.inf and np.isnan(got[5:]).all()
    big = ember.tensor([1000.0, 1000.0])
    assert ember.logcumsumexp(big, 0).tolist() == pytest.approx([1000.0, 1000.0 + math.log(2)])


def lower_nanmedian(row):
    numbers = sorted((x, i) for i, x in enumerate(row) if not math.isnan(x))
    if not numbers:
        return math.nan, next(i for i, x in enumerate(row) if math.isnan(x))
    return numbers[(len(numbers) - 1) // 2]


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("keepdim", [False, True])
def test_nanmedian(dim, keepdim):
    a = RNG.standard_normal((5, 6))
    a[RNG.random(a.shape) < 0.3] = np.nan
    a[:, 0] = np.nan  # an all-NaN column
    moved = np.moveaxis(a, dim, -1)
    want = [lower_nanmedian(list(moved[p])) for p in np.ndindex(moved.shape[:-1])]
    want_v = np.array([w[0] for w in want]).reshape(moved.shape[:-1])
    for name, x, _ in layouts(a):
        values, indices = ember.nanmedian(x, dim, keepdim)
        got_v = values.numpy() if not keepdim else np.squeeze(values.numpy(), dim)
        got_i = indices.numpy() if not keepdim else np.squeeze(indices.numpy(), dim)
        np.testing.assert_array_equal(got_v, want_v, err_msg=name)
        # the index points at the value (any position holding it: ties are allowed)
        picked = np.take_along_axis(moved, got_i[..., None], -1)[..., 0]
        np.testing.assert_array_equal(picked, want_v, err_msg=name)
    all_values = a[~np.isnan(a)]
    assert ember.nanmedian(ember.tensor(a)).item() == np.sort(all_values)[(all_values.size - 1) // 2]
    assert math.isnan(ember.nanmedian(ember.tensor([math.nan])).item())
    assert ember.tensor([1.0, math.nan, 3.0]).nanmedian().item() == 1.0


def reference_mode(row):
    counts = Counter(row)
    best = max(counts.values())
    value = min(v for v, c in counts.items() if c == best)
    return value, max(i for i, v in enumerate(row) if v == value)


@pytest.mark.parametrize("dtype", ["int64", "float32", "float64", "uint8", "bool"])
@pytest.mark.parametrize("dim", [0, -1])
def test_mode(dtype, dim):
    a = RNG.integers(0, 3, (5, 8)).astype(dtype)
    moved = np.moveaxis(a, dim, -1)
    want = [reference_mode(list(moved[p])) for p in np.ndindex(moved.shape[:-1])]
    for name, x, _ in layouts(a):
        values, indices = ember.mode(x, dim)
        np.testing.assert_array_equal(values.numpy(), np.array([w[0] for w in want], dtype=dtype), err_msg=name)
        np.testing.assert_array_equal(indices.numpy(), [w[1] for w in want], err_msg=name)
    kept = ember.tensor(a).mode(dim, keepdim=True)
    assert kept.values.dim() == 2 and kept.values.shape[dim] == 1
    assert ember.mode(ember.tensor(4.0)).values.item() == 4.0
    assert tuple(ember.mode(ember.zeros(0, 3), 1).values.shape) == (0,)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_unique_dim_matches_numpy(dim):
    a = RNG.integers(0, 2, (4, 3, 2)).astype(np.float64)
    a[2] = a[0]  # repeated slices along dim 0
    want, inverse, counts = np.unique(a, axis=dim, return_inverse=True, return_counts=True)
    for name, x, _ in layouts(a):
        v, inv, cnt = ember.unique(x, dim=dim, return_inverse=True, return_counts=True)
        np.testing.assert_array_equal(v.numpy(), want, err_msg=name)
        np.testing.assert_array_equal(inv.numpy(), inverse.reshape(-1), err_msg=name)
        np.testing.assert_array_equal(cnt.numpy(), counts, err_msg=name)
    assert tuple(ember.unique(ember.zeros(0, 3), dim=0).shape) == (0, 3)


def test_unique_consecutive_dim():
    a = np.array([[1, 1, 2, 2, 1], [3, 3, 4, 4, 3]])
    v, inv, cnt = ember.unique_consecutive(ember.tensor(a), return_inverse=True, return_counts=True, dim=1)
    assert v.tolist() == [[1, 2, 1], [3, 4, 3]]
    assert inv.tolist() == [0, 0, 1, 1, 2] and cnt.tolist() == [2, 2, 1]
    v0 = ember.unique_consecutive(ember.tensor(a).t(), dim=0)
    assert v0.tolist() == [[1, 3], [2, 4], [1, 3]]


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: ember.cummax(ember.ones(2), 1), IndexError, r"Dimension out of range"),
        (lambda: ember.cummin(ember.ones(2, dtype=ember.complex64), 0), NotImplementedError,
         r"\[cummin\] not implemented for complex dtype complex64"),
        (lambda: ember.logcumsumexp(ember.tensor([1, 2]), 0), NotImplementedError,
         r"\[logcumsumexp\] not implemented for dtype int64"),
        (lambda: ember.nanmedian(ember.zeros(0, 2), 0), IndexError,
         r"nanmedian\(\): Expected reduction dim 0 to have non-zero size"),
        (lambda: ember.mode(ember.zeros(2, 0), 1), IndexError, r"mode\(\): Expected reduction dim 1 to have non-zero"),
        (lambda: ember.unique(ember.tensor(1.0), dim=0), IndexError, r"a 0-dim tensor has no dim 0"),
        (lambda: ember.unique(ember.ones(2, 2), dim=2), IndexError, r"Dimension out of range"),
    ],
)
def test_bad_arguments(call, error, message):
    with pytest.raises(error, match=message):
        call()
