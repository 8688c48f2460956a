"""float8_e4m3fnuz and float8_e5m2fnuz: every code decoded against a float64 reference written
here, conversions rounding to the nearest code (ties to even) with PyTorch's special cases, and
the dtype's place in finfo, promotion, printing, storages and checkpoints."""

from __future__ import annotations

import io
import math

import numpy as np
import pytest

import ember

FORMATS = {"float8_e4m3fnuz": (4, 3), "float8_e5m2fnuz": (5, 2)}


def decode(code: int, exp_bits: int, mant_bits: int) -> float:
    """The value of an fnuz code: bias 2^(exp_bits-1), no infinities, 0x80 the only NaN."""
    if code == 0x80:
        return math.nan
    bias = 1 << (exp_bits - 1)
    exp = (code >> mant_bits) & ((1 << exp_bits) - 1)
    mant = code & ((1 << mant_bits) - 1)
    value = mant * 2.0 ** (1 - bias - mant_bits) if exp == 0 else (mant + (1 << mant_bits)) * 2.0 ** (exp - bias - mant_bits)
    return -value if code & 0x80 else value


def codes_of(x: ember.Tensor) -> list[int]:
    return x.view(ember.uint8).tolist()


@pytest.mark.parametrize("name", list(FORMATS))
def test_every_code_decodes_and_round_trips(name):
    dtype = getattr(ember, name)
    exp_bits, mant_bits = FORMATS[name]
    codes = ember.arange(256, dtype=ember.int64).to(ember.uint8)
    values = codes.view(dtype).to(ember.float64).numpy()
    want = np.array([decode(c, exp_bits, mant_bits) for c in range(256)])
    np.testing.assert_array_equal(values, want)  # NaN where want is NaN
    finite = [c for c in range(256) if c != 0x80]
    back = ember.tensor(want[finite], dtype=ember.float32).to(dtype)
    assert codes_of(back) == finite


@pytest.mark.parametrize("name", list(FORMATS))
def test_conversion_rounds_to_the_nearest_code(name):
    dtype = getattr(ember, name)
    exp_bits, mant_bits = FORMATS[name]
    table = np.array([decode(c, exp_bits, mant_bits) for c in range(256)])
    finite = np.array([c for c in range(256) if c != 0x80])
    largest = table[finite].max()
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-largest, largest, 3000), rng.uniform(-1e-4, 1e-4, 1000),
                        (table[finite][:-1] + table[finite][1:]) / 2]).astype(np.float32)  # midpoints too
    got = codes_of(ember.tensor(x).to(dtype))
    for value, code in zip(x.astype(np.float64), got, strict=True):
        distance = np.abs(table[finite] - value)
        nearest = finite[distance == distance.min()]
        if len(nearest) > 1:  # a tie: the even mantissa (zero is +0 only)
            nearest = [c for c in nearest if c % 2 == 0]
        expected = 0 if table[nearest[0]] == 0 else nearest[0]
        assert code == expected, (value, code, expected)


def test_special_values_as_pytorch_converts():
    x = ember.tensor([0.0, -0.0, 1.0, -1.5, 240.0, 250.0, 1000.0, 1e6, math.inf, -math.inf, math.nan, 2.0**-10,
                      2.0**-11, 57344.0, 61440.0, 1e-8, -1e-8])
    # the codes PyTorch 2.13 gives for the same values (overflow and infinities are NaN, no -0)
    assert codes_of(x.to(ember.float8_e4m3fnuz)) == [0, 0, 64, 196, 127, 128, 128, 128, 128, 128, 128, 1, 0, 128,
                                                      128, 0, 0]
    assert codes_of(x.to(ember.float8_e5m2fnuz)) == [0, 0, 64, 194, 96, 96, 104, 128, 128, 128, 128, 24, 20, 127,
                                                      128, 0, 0]


def test_the_older_float8_dtypes_fill_too():
    for dtype in (ember.float8_e4m3fn, ember.float8_e5m2):
        assert ember.ones(2, dtype=dtype).to(ember.float32).tolist() == [1.0, 1.0]
        assert ember.full((1,), 1000.0, dtype=ember.float8_e4m3fn).to(ember.float32).tolist() == [448.0]  # saturates


def test_the_dtypes_around_the_runtime():
    for name in FORMATS:
        dtype = getattr(ember, name)
        assert dtype.is_floating_point and dtype.itemsize == 1 and repr(dtype) == f"ember.{name}"
        assert ember.zeros(3, dtype=dtype).to(ember.float32).tolist() == [0.0, 0.0, 0.0]
        assert codes_of(ember.full((2,), 300.0, dtype=dtype)) == codes_of(ember.tensor([300.0, 300.0]).to(dtype))
        assert "1.5000" in repr(ember.tensor([1.5]).to(dtype))
        with pytest.raises(TypeError, match="Promotion for Float8 Types is not supported"):
            ember.promote_types(dtype, ember.float32)
        with pytest.raises(RuntimeError, match="expected a floating point dtype"):
            ember.randn(2, dtype=dtype)
        storage = ember.tensor([1.0, 2.0]).to(dtype).untyped_storage()
        assert getattr(storage, name)().dtype == dtype
        buffer = io.BytesIO()
        t = ember.tensor([0.5, -3.0, 100.0]).to(dtype)
        ember.save({"t": t}, buffer)
        buffer.seek(0)
        loaded = ember.load(buffer)["t"]
        assert loaded.dtype == dtype and codes_of(loaded) == codes_of(t)
    assert ember.float8_e4m3fnuz.abbr == "f8e4m3fnuz" and ember.float8_e5m2fnuz.abbr == "f8e5m2fnuz"
    e4, e5 = ember.finfo(ember.float8_e4m3fnuz), ember.finfo(ember.float8_e5m2fnuz)
    assert (e4.max, e4.min, e4.eps, e4.tiny, e4.bits) == (240.0, -240.0, 0.125, 2.0**-7, 8)
    assert (e5.max, e5.tiny, e5.eps) == (57344.0, 2.0**-15, 0.125)  # eps as PyTorch's finfo reports it
