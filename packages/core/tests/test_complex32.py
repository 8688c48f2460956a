"""complex32 (chalf): a complex of two halves that holds values, converts and views, as PyTorch's
CPU build has it; arithmetic on it raises (Ember has none)."""

from __future__ import annotations

import io

import numpy as np
import pytest

import ember


def halves(z: np.ndarray) -> np.ndarray:
    """The float64 reference of a conversion to complex32: each part rounded to a half."""
    z = np.asarray(z, dtype=np.complex128)
    with np.errstate(over="ignore"):  # past half's max: inf, as the conversion gives
        return z.real.astype(np.float16).astype(np.float64) + 1j * z.imag.astype(np.float16).astype(np.float64)


def test_names_and_dtype_facts():
    assert ember.chalf is ember.complex32
    assert ember.complex32.itemsize == 4
    assert ember.complex32.is_complex and not ember.complex32.is_floating_point
    assert ember.complex32.to_real() == ember.float16
    assert ember.float16.to_complex() == ember.complex32
    assert repr(ember.complex32) == "ember.complex32"
    info = ember.finfo(ember.chalf)
    assert (info.max, info.eps, info.dtype) == (65504.0, 2.0**-10, "float16")
    assert ember.finfo(ember.complex64).dtype == "float32"


@pytest.mark.parametrize("case", ["contiguous", "non-contiguous", "0-dim", "zero-size"])
def test_conversions_round_each_part_to_half(case):
    rng = np.random.default_rng(0)
    z = (rng.standard_normal((4, 6)) * 300 + 1j * rng.standard_normal((4, 6)) * 1e-3)
    z[0, :3] = [70000.0 + 1j, np.nan + 0j, 1e-8 - 1e-8j]  # past half's max, NaN, below its subnormals
    source = {"contiguous": z, "non-contiguous": z.T[::2], "0-dim": z[1, 1], "zero-size": z[:0]}[case]
    x = ember.from_numpy(np.array(source, dtype=np.complex128, copy=True))
    if case == "non-contiguous":
        x = ember.from_numpy(z).t()[::2]
        assert not x.is_contiguous()
    c = x.to(ember.chalf)
    assert c.dtype == ember.complex32 and c.shape == x.shape
    expected = halves(np.asarray(source))
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(c.to(ember.complex128).numpy(), expected)
        np.testing.assert_array_equal(c.to(ember.float32).numpy(), expected.real.astype(np.float32))
    np.testing.assert_array_equal(x.to(ember.complex64).chalf().to(ember.complex64).numpy(),
                                  halves(np.asarray(source).astype(np.complex64)).astype(np.complex64))


def test_real_inputs_convert_with_a_zero_imaginary_part():
    for values, dtype in [([1.5, -2.0], ember.float32), ([3, -7], ember.int64), ([True, False], ember.bool),
                          ([0.1, 1e5], ember.float64)]:
        c = ember.tensor(values, dtype=dtype).to(ember.chalf)
        np.testing.assert_array_equal(c.to(ember.complex128).numpy(), halves(np.asarray(values, dtype=np.float64)))


def test_factories_fill_and_copies():
    np.testing.assert_array_equal(ember.zeros(2, 3, dtype=ember.chalf).to(ember.complex64).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(ember.ones(2, dtype=ember.chalf).to(ember.complex64).numpy(), [1, 1])
    full = ember.full((2,), 1.5 - 2j, dtype=ember.chalf)
    np.testing.assert_array_equal(full.to(ember.complex64).numpy(), [1.5 - 2j, 1.5 - 2j])
    assert ember.empty(3, dtype=ember.chalf).shape == (3,)
    x = ember.tensor([[1 + 2j, 3 - 4j], [5j, -6]], dtype=ember.complex64).chalf()
    t = x.t()
    np.testing.assert_array_equal(t.contiguous().to(ember.complex64).numpy(), [[1 + 2j, 5j], [3 - 4j, -6]])
    np.testing.assert_array_equal(ember.cat([x, x]).to(ember.complex64).numpy()[2:], x.to(ember.complex64).numpy())
    y = ember.empty(2, 2, dtype=ember.chalf)
    y.copy_(ember.tensor([[1, 2], [3, 4]]))
    np.testing.assert_array_equal(y.to(ember.complex64).numpy(), [[1, 2], [3, 4]])
    with pytest.raises(RuntimeError, match="value cannot be converted to type c10::complex<c10::Half> without overflow"):
        ember.full((1,), 1e5 + 0j, dtype=ember.chalf)


def test_views_share_memory_with_half_tensors():
    c = ember.tensor([1 + 2j, 3 - 4j], dtype=ember.complex64).chalf()
    r = ember.view_as_real(c)
    assert r.dtype == ember.float16 and r.shape == (2, 2)
    np.testing.assert_array_equal(r.numpy(), np.array([[1, 2], [3, -4]], dtype=np.float16))
    r[0, 1] = 7.0  # writes through to c
    assert c[0].item() == 1 + 7j
    assert c.real.dtype == ember.float16 and c.imag.tolist() == [7.0, -4.0]
    back = ember.view_as_complex(r)
    assert back.dtype == ember.complex32
    np.testing.assert_array_equal(c.conj().to(ember.complex64).numpy(), [1 - 7j, 3 + 4j])
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        ember.view_as_complex(ember.zeros(3, 3, dtype=ember.float16))


def test_promotion_matches_pytorch():
    expect = {ember.float32: ember.complex64, ember.float64: ember.complex128, ember.bfloat16: ember.complex64,
              ember.float16: ember.complex32, ember.int64: ember.complex32, ember.bool: ember.complex32,
              ember.complex64: ember.complex64, ember.complex128: ember.complex128}
    for other, result in expect.items():
        assert ember.promote_types(ember.complex32, other) == result, other
        assert ember.promote_types(other, ember.complex32) == result, other
    # unchanged for the wider complex dtypes
    assert ember.promote_types(ember.complex64, ember.float64) == ember.complex128
    assert ember.promote_types(ember.complex64, ember.float16) == ember.complex64
    assert ember.result_type(ember.ones(2, dtype=ember.float16), 1j) == ember.complex32


def test_item_print_randn_and_checkpoints():
    c = ember.tensor([1.5 + 2j], dtype=ember.complex64).chalf()
    assert c.item() == 1.5 + 2j and c.tolist() == [1.5 + 2j]
    assert repr(c) == "tensor([1.5000+2.j], dtype=ember.complex32)"
    ember.manual_seed(0)
    r = ember.randn(1000, dtype=ember.chalf)
    assert r.dtype == ember.complex32
    parts = ember.view_as_real(r).to(ember.float64).numpy()
    assert abs(parts.std() - 0.5**0.5) < 0.05 and abs(parts.mean()) < 0.05
    buf = io.BytesIO()
    ember.save({"z": c}, buf)
    buf.seek(0)
    loaded = ember.load(buf)["z"]
    assert loaded.dtype == ember.complex32 and loaded.item() == 1.5 + 2j


def chalf_of(z: np.ndarray) -> ember.Tensor:
    return ember.from_numpy(np.array(z, dtype=np.complex64, copy=True)).chalf()


def operands(case: str):
    """Two complex32 operands (already exact halves) and their float64 values."""
    rng = np.random.default_rng(1)
    a = halves(rng.standard_normal((3, 4)) * 8 + 1j * rng.standard_normal((3, 4)))
    b = halves(rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4)) * 8)
    if case == "contiguous":
        return chalf_of(a), chalf_of(b), a, b
    if case == "non-contiguous":
        return chalf_of(a.T.copy()).t(), chalf_of(b), a, b
    if case == "broadcast":
        return chalf_of(a), chalf_of(b[0]), a, b[0]
    if case == "zero-size":
        return chalf_of(a[:0]), chalf_of(b[:0]), a[:0], b[:0]
    return chalf_of(a[1, 2]), chalf_of(b[2, 1]), a[1, 2], b[2, 1]  # 0-dim


CASES = ["contiguous", "non-contiguous", "broadcast", "zero-size", "0-dim"]


@pytest.mark.parametrize("case", CASES)
def test_add_sub_mul_compute_in_complex64_and_round_to_halves(case):
    x, y, a, b = operands(case)
    # with alpha, alpha * y is rounded to complex32 before the sum, as PyTorch does
    for got, want in [(x + y, a + b), (x - y, a - b), (ember.add(x, y, alpha=3), a + halves(3 * b)), (-x, -a)]:
        assert got.dtype == ember.complex32
        # sums of two halves are exact in float32, so only the final rounding to half is left
        np.testing.assert_array_equal(got.to(ember.complex128).numpy(), halves(want))
    prod = x * y
    assert prod.dtype == ember.complex32
    np.testing.assert_allclose(prod.to(ember.complex128).numpy(), halves(a * b), rtol=2.0**-10, atol=2.0**-24)
    np.testing.assert_array_equal((x == y).numpy(), a == b)
    np.testing.assert_array_equal((x != x).numpy(), np.zeros(np.shape(a), dtype=bool))
    mag = x.abs()
    assert mag.dtype == ember.float16
    np.testing.assert_allclose(mag.to(ember.float64).numpy(), np.abs(a), rtol=2.0**-10)


def test_scalars_promotion_and_moving_values():
    c = chalf_of(np.array([1 + 2j, 3 - 4j]))
    np.testing.assert_array_equal((c * 2).to(ember.complex64).numpy(), [2 + 4j, 6 - 8j])
    assert (c + 1j).dtype == ember.complex32
    wide = c + ember.ones(2)
    assert wide.dtype == ember.complex64
    np.testing.assert_array_equal(wide.numpy(), [2 + 2j, 4 - 4j])
    keep = ember.tensor([True, False])
    np.testing.assert_array_equal(ember.where(keep, c, -c).to(ember.complex64).numpy(), [1 + 2j, -3 + 4j])
    np.testing.assert_array_equal(c[ember.tensor([1, 0])].to(ember.complex64).numpy(), [3 - 4j, 1 + 2j])
    np.testing.assert_array_equal(c.gather(0, ember.tensor([1, 1])).to(ember.complex64).numpy(), [3 - 4j, 3 - 4j])
    d = c.clone()
    d[ember.tensor([0])] = chalf_of(np.array([5j]))
    np.testing.assert_array_equal(d.to(ember.complex64).numpy(), [5j, 3 - 4j])
    np.testing.assert_array_equal(c.masked_fill(keep, 0).to(ember.complex64).numpy(), [0, 3 - 4j])
    z = chalf_of(np.array([np.nan + 1j, np.inf, 1]))
    np.testing.assert_array_equal(z.isnan().numpy(), [True, False, False])
    np.testing.assert_array_equal(z.isfinite().numpy(), [False, False, True])
    with pytest.raises(RuntimeError, match="index 5 is out of bounds"):
        c.gather(0, ember.tensor([5]))


def test_arithmetic_without_a_complex32_kernel_raises_a_clear_error():
    c = ember.ones(2, dtype=ember.chalf)
    with pytest.raises(NotImplementedError, match="complex32"):
        c / c
    with pytest.raises(NotImplementedError, match="complex32"):
        c.sum()
    with pytest.raises(NotImplementedError, match="complex32"):
        c.exp()
    with pytest.raises(TypeError):
        c.numpy()
