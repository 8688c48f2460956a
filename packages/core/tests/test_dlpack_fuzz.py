"""Fuzzing DLPack import with hand-made DLManagedTensor structs (ctypes): every capsule either
imports as a tensor equal to NumPy's strided view of the same bytes, or raises the documented
ValueError/BufferError; none crashes, wraps an extent computation, or reads outside the buffer
(the sanitizer build catches that). The producer's deleter runs exactly once, when the tensor
(or the last view of it) dies, and never when the import is refused.

Each test runs EMBER_FUZZ_EXAMPLES examples (default 100; `nox -s fuzz` runs thousands).
"""

import ctypes
import gc
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember

EXAMPLES = int(os.environ.get("EMBER_FUZZ_EXAMPLES", "100"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow])


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

# (DLPack code, bits) -> NumPy dtype, for the dtypes both sides have
DTYPES = {(1, 8): np.uint8, (0, 8): np.int8, (0, 16): np.int16, (0, 32): np.int32, (0, 64): np.int64,
          (2, 16): np.float16, (2, 32): np.float32, (2, 64): np.float64, (5, 64): np.complex64,
          (5, 128): np.complex128, (6, 8): np.bool_}


class Producer:
    """A DLManagedTensor over `buffer`, with a deleter that counts its calls. Holds every ctypes
    object the struct points into, so they outlive the capsule."""

    def __init__(self, buffer, shape, strides, code, bits, lanes=1, byte_offset=0, device=(1, 0), data=True,
                 ndim=None):
        self.buffer = buffer
        self.deleted = 0
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.strides = None if strides is None else (ctypes.c_int64 * max(len(strides), 1))(*strides)
        self.managed = DLManagedTensor()
        dl = self.managed.dl_tensor
        dl.data = ctypes.addressof(buffer) if data else None
        dl.device = DLDevice(*device)
        dl.ndim = len(shape) if ndim is None else ndim
        dl.dtype = DLDataType(code, bits, lanes)
        dl.shape = self.shape
        dl.strides = self.strides if self.strides is not None else ctypes.POINTER(ctypes.c_int64)()
        dl.byte_offset = byte_offset

        def deleter(_):
            self.deleted += 1

        self.deleter = DELETER(deleter)
        self.managed.deleter = self.deleter

    def capsule(self):
        return _capsule_new(ctypes.addressof(self.managed), b"dltensor", None)


@st.composite
def valid_layouts(draw):
    """A dtype, shape, strides (None = compact) and byte offset that stay inside the buffer."""
    (code, bits), np_dtype = draw(st.sampled_from(sorted(DTYPES.items())))
    item = bits // 8
    shape = draw(st.lists(st.integers(0, 4), max_size=4))
    compact = draw(st.booleans())
    strides = None if compact else [draw(st.integers(0, 6)) for _ in shape]
    offset_items = draw(st.integers(0, 5))
    return code, bits, np_dtype, item, shape, strides, offset_items


@FUZZ
@given(valid_layouts(), st.binary(min_size=0, max_size=64))
def test_valid_capsules_import_as_numpy_views(layout, fill):
    code, bits, np_dtype, item, shape, strides, offset_items = layout
    eff = strides if strides is not None else list(np.cumprod([1, *shape[::-1]])[:-1][::-1].astype(int))
    extent = 1 + sum((s - 1) * t for s, t in zip(shape, eff, strict=True) if s > 0) if all(shape) else 0
    nbytes = (offset_items + extent) * item
    raw = (fill * (nbytes // max(len(fill), 1) + 1))[:nbytes] if fill else bytes(nbytes)
    if np_dtype is np.bool_:
        raw = bytes(b & 1 for b in raw)  # DLPack bools are bytes holding 0 or 1
    buffer = (ctypes.c_uint8 * max(nbytes, 1)).from_buffer_copy(raw.ljust(max(nbytes, 1), b"\0"))
    producer = Producer(buffer, shape, strides, code, bits, byte_offset=offset_items * item)
    tensor = ember.from_dlpack(producer.capsule())
    assert tuple(tensor.shape) == tuple(shape)
    expected = np.lib.stride_tricks.as_strided(
        np.frombuffer(buffer, dtype=np_dtype, count=max(nbytes, 1) // item if nbytes else 0,
                      offset=0)[offset_items:] if nbytes else np.zeros(0, np_dtype),
        shape=shape, strides=[t * item for t in eff]) if extent else np.zeros(shape, np_dtype)
    np.testing.assert_array_equal(tensor.numpy(), expected)
    assert producer.deleted == 0
    del tensor
    gc.collect()
    assert producer.deleted == 1


BAD = st.sampled_from([
    # (shape, strides, dtype (code, bits, lanes), device, data present, ndim override, error, message)
    ([2, -1], None, (2, 32, 1), (1, 0), True, None, ValueError, "size"),
    ([3, 2], [2, -1], (2, 32, 1), (1, 0), True, None, ValueError, "negative strides"),
    ([2**62, 8], None, (2, 32, 1), (1, 0), True, None, ValueError, "overflow"),
    ([0, 2**40, 2**40], None, (2, 32, 1), (1, 0), True, None, ValueError, "overflow"),
    ([2, 2], [2**62, 1], (2, 32, 1), (1, 0), True, None, ValueError, "overflow"),
    ([2**31, 2], [1, 2**62], (2, 64, 1), (1, 0), True, None, ValueError, "overflow"),
    ([4], None, (2, 32, 1), (1, 0), False, None, ValueError, "null data"),
    ([4], None, (2, 32, 2), (1, 0), True, None, BufferError, "unsupported DLPack dtype"),
    ([4], None, (2, 24, 1), (1, 0), True, None, BufferError, "unsupported DLPack dtype"),
    ([4], None, (9, 32, 1), (1, 0), True, None, BufferError, "unsupported DLPack dtype"),
    ([4], None, (2, 0, 0), (1, 0), True, None, BufferError, "unsupported DLPack dtype"),
    ([4], None, (2, 32, 1), (2, 0), True, None, BufferError, "only cpu memory"),
    ([4], None, (2, 32, 1), (1, 0), True, -1, ValueError, "negative ndim"),
])


@FUZZ
@given(BAD)
def test_malformed_capsules_are_refused_and_not_consumed(case):
    shape, strides, (code, bits, lanes), device, data, ndim, error, message = case
    buffer = (ctypes.c_uint8 * 64)()
    producer = Producer(buffer, shape, strides, code, bits, lanes=lanes, device=device, data=data, ndim=ndim)
    capsule = producer.capsule()
    with pytest.raises(error, match=message):
        ember.from_dlpack(capsule)
    gc.collect()
    assert producer.deleted == 0  # refused: the producer still owns it


def test_empty_tensor_with_null_data_imports():
    producer = Producer((ctypes.c_uint8 * 1)(), [0, 3], None, 2, 32, data=False)
    tensor = ember.from_dlpack(producer.capsule())
    assert tuple(tensor.shape) == (0, 3)
    del tensor
    gc.collect()
    assert producer.deleted == 1
