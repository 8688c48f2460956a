"""DLPack exchange, print options and pickling through the checkpoint record."""

import copy
import gc
import pickle
import struct

import numpy as np
import pytest

import ember
from ember import serialization

DTYPES = [ember.bool, ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64, ember.float16,
          ember.float32, ember.float64, ember.complex64, ember.complex128]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dlpack_to_numpy_shares_memory(dtype):
    x = ember.arange(12).reshape(3, 4).to(dtype)
    for view in (x, x.t(), x[:, ::2], x[1], x[1, 2]):
        arr = np.from_dlpack(view)
        np.testing.assert_array_equal(arr, view.numpy())
        assert arr.__array_interface__["data"][0] == view.data_ptr()


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, np.int16, np.int32, np.int64, np.float16, np.float32,
                                   np.float64, np.complex128])
def test_from_dlpack_of_numpy_shares_memory(dtype):
    a = np.arange(12).reshape(3, 4).astype(dtype)
    for view in (a, a.T, a[:, 1::2], a[0, 0, ...]):
        t = ember.from_dlpack(view)
        np.testing.assert_array_equal(t.numpy(), view)
        assert t.data_ptr() == view.__array_interface__["data"][0]
    b = np.zeros(3)
    t = ember.from_dlpack(b)
    t[1] = 5.0
    assert b[1] == 5.0  # writes reach the producer's memory


def test_dlpack_round_trip_keeps_producer_alive_and_handles_empty():
    t = ember.from_dlpack(np.arange(5.0) * 2)  # the temporary array must outlive its NumPy name
    gc.collect()
    assert t.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0]
    x = ember.ones(2, 3)
    y = ember.from_dlpack(x)
    assert y.data_ptr() == x.data_ptr()
    del x
    gc.collect()
    assert y.sum().item() == 6.0
    assert tuple(ember.from_dlpack(np.zeros((0, 3))).shape) == (0, 3)
    bf = ember.tensor([1.5, -2.0]).to(ember.bfloat16)
    assert ember.from_dlpack(bf).tolist() == [1.5, -2.0] and ember.from_dlpack(bf).dtype == ember.bfloat16


def test_dlpack_capsule_is_used_once_and_copy_flag():
    x = ember.arange(3.0)
    capsule = x.__dlpack__()
    assert ember.from_dlpack(capsule).tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match=r"unconsumed DLPack capsule named 'dltensor'"):
        ember.from_dlpack(capsule)
    unused = x.__dlpack__()  # dropped without a consumer: its destructor frees the export
    del unused
    gc.collect()
    copied = ember.from_dlpack(x.__dlpack__(copy=True))
    assert copied.data_ptr() != x.data_ptr() and copied.tolist() == x.tolist()
    assert x.__dlpack_device__() == (1, 0)


def test_dlpack_errors():
    with pytest.raises(BufferError, match=r"float8_e4m3fn has no code in DLPack"):
        ember.zeros(2).to(ember.float8_e4m3fn).__dlpack__()
    with pytest.raises(BufferError, match=r"stream must be None"):
        ember.zeros(2).__dlpack__(stream=1)
    with pytest.raises(BufferError, match=r"can only export to the cpu device"):
        ember.zeros(2).__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError, match=r"expected an object with __dlpack__ or a DLPack capsule, but got list"):
        ember.from_dlpack([1, 2])
    with pytest.raises(ValueError, match=r"negative strides are not supported"):
        ember.from_dlpack(np.arange(4.0)[::-1])


def test_set_printoptions():
    x = ember.tensor([1.23456789, 2.5])
    try:
        ember.set_printoptions(precision=2)
        assert repr(x) == "tensor([1.23, 2.50])"
        ember.set_printoptions(sci_mode=True)
        assert repr(x) == "tensor([1.23e+00, 2.50e+00])"
        ember.set_printoptions(profile="default")
        assert repr(x) == "tensor([1.2346, 2.5000])"
        ember.set_printoptions(threshold=5, edgeitems=2)
        assert repr(ember.arange(10)) == "tensor([0, 1, ..., 8, 9])"
        ember.set_printoptions(profile="full")
        assert "..." not in repr(ember.arange(2000))
        ember.set_printoptions(profile="default", linewidth=20)
        assert max(len(line) for line in repr(ember.arange(12)).splitlines()) <= 20
        ember.set_printoptions(profile="short")
        assert repr(x) == "tensor([1.23, 2.50])"
        with pytest.raises(ValueError, match=r"profile must be one of"):
            ember.set_printoptions(profile="long")
        with pytest.raises(ValueError, match=r"precision must be a non-negative number"):
            ember.set_printoptions(precision=-1)
    finally:
        ember.set_printoptions(profile="default")
    assert repr(ember.tensor([1.0, 2000.0])) == "tensor([1.0000e+00, 2.0000e+03])"  # PyTorch's int-mode rule


@pytest.mark.parametrize("dtype", DTYPES + [ember.bfloat16, ember.float8_e4m3fn, ember.float8_e5m2])
def test_pickle_goes_through_the_checkpoint_record(dtype):
    x = (ember.arange(12).reshape(3, 4) % 5).to(dtype)
    for view in (x, x.t(), x[:, 1::2], x[0, 0], x[:0]):
        data = pickle.dumps(view)
        assert b"EMBERTNS" in data and b"ember._C" not in data  # no storage internals pickled
        back = pickle.loads(data)
        assert back.dtype == view.dtype and tuple(back.shape) == tuple(view.shape) and back.is_contiguous()
        assert back.to(ember.float64).tolist() == view.to(ember.float64).tolist()
        assert back.data_ptr() != view.data_ptr() or view.numel() == 0
    deep = copy.deepcopy(x)
    assert deep.data_ptr() != x.data_ptr()


def _record(header: bytes, payload: bytes) -> bytes:
    return serialization.MAGIC + struct.pack("<I", len(header)) + header + payload


@pytest.mark.parametrize(
    "record, message",
    [
        (b"NOTEMBER", r"bad magic"),
        (serialization.MAGIC + b"\x01", r"truncated tensor record"),
        (serialization.MAGIC + struct.pack("<I", 999) + b"{}", r"truncated or oversized"),
        (_record(b"{not json", b""), r"unreadable tensor record header"),
        (_record(b"[1]", b""), r"header must be an object"),
        (_record(b'{"format":2,"dtype":"float32","shape":[],"byteorder":"little"}', b"\0" * 4),
         r"unsupported tensor record format 2"),
        (_record(b'{"format":1,"dtype":"float32","shape":[],"byteorder":"big"}', b"\0" * 4),
         r"unsupported byte order 'big'"),
        (_record(b'{"format":1,"dtype":"Tensor","shape":[],"byteorder":"little"}', b""), r"unknown dtype 'Tensor'"),
        (_record(b'{"format":1,"dtype":"float32","shape":["2"],"byteorder":"little"}', b""),
         r"shape must be a list of integers"),
        (_record(b'{"format":1,"dtype":"float32","shape":[2],"byteorder":"little"}', b"\0" * 4),
         r"expected 8 bytes of float32 data for shape \[2\], but the record holds 4"),
        (_record(b'{"format":1,"dtype":"float32","shape":[-1],"byteorder":"little"}', b""), r"negative size -1"),
        (_record(b'{"format":1,"dtype":"float32","shape":[4611686018427387904,4],"byteorder":"little"}', b""),
         r"overflow"),
        (_record(b'{"format":1,"dtype":"bool","shape":[2],"byteorder":"little"}', b"\x00\x07"),
         r"a bool tensor's bytes must be 0 or 1"),
    ],
)
def test_malformed_records_raise_value_error(record, message):
    with pytest.raises(ValueError, match=message):
        serialization.tensor_from_bytes(record)
