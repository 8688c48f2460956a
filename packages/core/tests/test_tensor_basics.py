"""Tensors, dtypes and devices as far as the runtime has them; NumPy is the float64 reference."""

import numpy as np
import pytest

import ember

ALL_DTYPES = [
    "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
    "float64", "complex64", "complex128", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
    "complex32", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2", "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
]


def test_one_dtype_list():
    assert [repr(d) for d in ember._C._all_dtypes] == [f"ember.{n}" for n in ALL_DTYPES]
    assert ember.float32.is_floating_point and not ember.int64.is_floating_point
    assert ember.complex64.is_complex and ember.complex128.itemsize == 16
    assert ember.half == ember.float16 and ember.long == ember.int64 and ember.double == ember.float64
    assert len({hash(d) for d in ember._C._all_dtypes}) == len(ALL_DTYPES)


def test_dtypes_pickle_by_name():
    import pickle

    assert pickle.loads(pickle.dumps(ember.bfloat16)) == ember.bfloat16


@pytest.mark.parametrize(
    "spec, text, index",
    [("cpu", "cpu", None), ("cuda", "cuda", None), ("cuda:1", "cuda:1", 1), ("mps:0", "mps:0", 0)],
)
def test_devices_parse(spec, text, index):
    d = ember.device(spec)
    assert str(d) == text and d.index == index
    assert ember.device(d) == d


def test_device_with_index_argument():
    assert ember.device("cuda", 2) == ember.device("cuda:2")
    assert repr(ember.device("cuda", 2)) == "device(type='cuda', index=2)"


@pytest.mark.parametrize(
    "spec, error, message",
    [
        ("gpu", RuntimeError, "expected one of cpu, cuda, mps"),
        ("cuda:", RuntimeError, "device index"),
        ("cuda:01", RuntimeError, "device index"),
        ("cpu:1", RuntimeError, "index 0 or none"),
        (3, TypeError, "expected a device string"),
    ],
)
def test_bad_devices(spec, error, message):
    with pytest.raises(error, match=message):
        ember.device(spec)


def test_absent_backend_raises_not_implemented():
    assert ember._C._has_backend("cpu")
    if not ember._C._has_backend("cuda"):
        with pytest.raises(NotImplementedError, match=r"not implemented for cuda"):
            ember.empty(2, device="cuda")


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    t = ember.from_numpy(a)
    a[1, 2] = -7.0
    assert t.numpy()[1, 2] == -7.0
    t.numpy()[0, 0] = 99.0
    assert a[0, 0] == 99.0
    assert t.data_ptr() == a.ctypes.data
    assert t.stride() == (4, 1) and t.shape == (3, 4)
    view = ember.from_numpy(a[:, 1::2])
    assert view.stride() == (4, 2) and not view.is_contiguous()
    np.testing.assert_array_equal(view.numpy(), a[:, 1::2])
    del a
    assert t.numpy()[0, 0] == 99.0  # the tensor keeps the array alive


def test_from_numpy_rejects_what_it_cannot_share():
    with pytest.raises(ValueError, match=r"non-negative strides"):
        ember.from_numpy(np.arange(4.0)[::-1])
    with pytest.raises(TypeError, match=r"but got dtype >f8"):
        ember.from_numpy(np.arange(4.0).astype(">f8"))
    with pytest.raises(TypeError, match=r"but got dtype <U1"):
        ember.from_numpy(np.array(["a"]))


def test_numpy_refuses_dtypes_numpy_lacks():
    with pytest.raises(TypeError, match=r"unsupported ScalarType bfloat16"):
        ember.tensor([1.0], dtype=ember.bfloat16).numpy()


@pytest.mark.parametrize(
    "data, dtype",
    [([1.5, 2.0], ember.float32), ([1, 2], ember.int64), ([True], ember.bool),
     ([1 + 2j], ember.complex64), (3.0, ember.float32), (np.arange(3, dtype=np.int16), ember.int16)],
)
def test_tensor_infers_pytorch_dtypes(data, dtype):
    t = ember.tensor(data)
    assert t.dtype == dtype
    assert t.shape == np.shape(data)
    np.testing.assert_array_equal(t.numpy(), np.asarray(data))


def test_tensor_copies():
    a = np.zeros(3)
    t = ember.tensor(a)
    a[0] = 1
    assert t.numpy()[0] == 0
    u = ember.tensor(t)
    assert u.data_ptr() != t.data_ptr()


def test_tensor_rejects_ragged_and_text():
    with pytest.raises(TypeError, match=r"\[tensor\] expected numbers"):
        ember.tensor(["a", "b"])
    with pytest.raises((TypeError, ValueError)):
        ember.tensor([[1, 2], [3]])


EXTREMES = np.array([0.0, -0.0, 1.0, -2.5, 1e-8, 6e-8, 3e-5, 65504.0, 65520.0, 1e5, np.inf, -np.inf,
                     np.nan, 0.1, 1 / 3, 448.0, 500.0, 2.0**-9, 2.0**-10, 57344.0])


def test_float16_conversion_matches_numpy():
    rng = np.random.default_rng(0)
    values = np.concatenate([EXTREMES, rng.standard_normal(2000) * 1000, rng.standard_normal(2000) * 1e-6])
    out = ember.tensor(values.astype(np.float32), dtype=ember.float16).numpy()
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(out, values.astype(np.float32).astype(np.float16))


def _round_to_grid(values, mant_bits, min_exp, max_finite, overflow):
    """float64 reference for a small float format with round-half-to-even."""
    out = []
    for v in values:
        if np.isnan(v):
            out.append(np.nan)
            continue
        a = abs(v)
        if np.isinf(a):
            out.append(np.copysign(overflow, v))
            continue
        e = max(int(np.floor(np.log2(a))) if a > 0 else min_exp, min_exp)
        step = 2.0 ** (e - mant_bits)
        q = np.round(a / step) * step  # numpy rounds half to even
        out.append(np.copysign(q if q <= max_finite else overflow, v))
    return np.array(out)


@pytest.mark.parametrize(
    "dtype, mant_bits, min_exp, max_finite, overflow",
    [
        (ember.bfloat16, 7, -126, 3.3895313892515355e38, np.inf),
        (ember.float8_e4m3fn, 3, -6, 448.0, 448.0),
        (ember.float8_e5m2, 2, -14, 57344.0, np.inf),
    ],
)
def test_reduced_float_conversion_matches_reference(dtype, mant_bits, min_exp, max_finite, overflow):
    rng = np.random.default_rng(1)
    values = np.concatenate([EXTREMES, rng.standard_normal(500) * 100]).astype(np.float32).astype(np.float64)
    out = ember.to_dtype(ember.tensor(values.astype(np.float32)), dtype, False)
    got = ember._C.to_dtype(out, ember.float64, False).numpy()
    ref = _round_to_grid(values, mant_bits, min_exp, max_finite, overflow)
    # e4m3fn has no infinity: as PyTorch 2.13, values past 448 and +-inf saturate to +-448
    np.testing.assert_array_equal(got, ref)


def test_int_casts_follow_pytorch():
    t = ember._C.to_dtype(ember.tensor([1.9, -1.9, 300.0, -0.5]), ember.uint8, False)
    np.testing.assert_array_equal(t.numpy(), np.array([1, 255, 44, 0], dtype=np.uint8))
    b = ember._C.to_dtype(ember.tensor([0.0, -0.0, 0.1, np.nan]), ember.bool, False)
    np.testing.assert_array_equal(b.numpy(), [False, False, True, True])
    z = ember._C.to_dtype(ember.tensor([1 + 2j]), ember.float64, False)
    assert z.numpy()[0] == 1.0


def test_sizes_are_checked():
    with pytest.raises(ValueError, match=r"overflow"):
        ember.empty(2**40, 2**40)
    with pytest.raises(ValueError, match=r"non-negative sizes"):
        ember.empty(-1)


def test_as_strided_stays_in_bounds():
    t = ember.empty(4)
    with pytest.raises(RuntimeError, match=r"fit in its storage of 16 bytes"):
        ember._C._as_strided(t, [5], [1], 0)


def test_size_and_stride_errors():
    t = ember.empty(2, 3)
    assert t.size(-1) == 3 and t.size() == (2, 3) and t.stride(0) == 3
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        t.size(2)
    with pytest.raises(IndexError, match=r"no dimensions"):
        ember.tensor(1.0).size(0)


def test_python_protocols():
    t = ember.tensor([[1, 2], [3, 4]])
    assert len(t) == 2 and t.tolist() == [[1, 2], [3, 4]]
    assert ember.tensor(2.5).item() == 2.5
    assert np.asarray(t).shape == (2, 2)
    with pytest.raises(TypeError, match=r"len\(\) of a 0-d tensor"):
        len(ember.tensor(1.0))
    with pytest.raises(RuntimeError, match=r"cannot be converted to Scalar"):
        t.item()
    assert repr(ember.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert repr(ember.tensor([1.0, -2.0])) == "tensor([ 1., -2.])"
    assert repr(ember.tensor([1e-5, 1.0])) == "tensor([1.0000e-05, 1.0000e+00])"
    assert repr(ember.tensor(3.5)) == "tensor(3.5000)"
    assert repr(ember.tensor([float("nan"), 1.5])) == "tensor([   nan, 1.5000])"
    assert repr(ember.tensor([1, 2], dtype=ember.int32)) == "tensor([1, 2], dtype=ember.int32)"
