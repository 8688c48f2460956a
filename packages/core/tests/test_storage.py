"""Storage objects (ember.storage: UntypedStorage, TypedStorage, the legacy FloatStorage & co.),
Tensor.untyped_storage / storage / set_(storage), ember.from_file and Tensor.view(dtype), checked
against NumPy on contiguous, transposed, sliced (offset), zero-size and 0-dim tensors, with
aliasing checked both ways and every bad input's exception type and message."""

from __future__ import annotations

import copy
import itertools
import pickle
import sys
import warnings

import numpy as np
import pytest

import ember
from ember import storage as ember_storage

DTYPES = {"uint8": np.uint8, "int16": np.int16, "float32": np.float32, "float64": np.float64,
          "complex128": np.complex128}
RNG = np.random.default_rng(7)


@pytest.fixture
def always_warn():
    """TypedStorage warns once per process, as PyTorch; these tests want every warning."""
    ember_storage._set_always_warn_typed_storage_removal(True)
    yield
    ember_storage._set_always_warn_typed_storage_removal(False)


@pytest.fixture(autouse=True)
def quiet_deprecation():
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "TypedStorage is deprecated", UserWarning)
        yield


def _raw(array: np.ndarray) -> np.ndarray:
    """An array's elements as bytes, row-major (NaN payloads compare exactly)."""
    return np.ascontiguousarray(array).view(np.uint8).reshape(-1)


def _base(dtype_name: str, shape=(4, 2, 64)):
    """A NumPy array of random bytes read as dtype, and the ember tensor over the same memory."""
    array = RNG.integers(0, 256, size=int(np.prod(shape)) * np.dtype(DTYPES[dtype_name]).itemsize,
                         dtype=np.uint8).view(DTYPES[dtype_name]).reshape(shape)
    return array, ember.from_numpy(array)


# Geometries where both NumPy's and PyTorch's rules allow every pair of the item sizes above.
GEOMETRIES = {
    "contiguous": lambda t: t,
    "transposed": lambda t: np.swapaxes(t, 0, 1) if isinstance(t, np.ndarray) else t.transpose(0, 1),
    "sliced_offset": lambda t: t[1:3, :, 16:48],
    "zero_size": lambda t: t[:, :, :0],
    "zero_rows": lambda t: t[:0],
}


# ---- Tensor.view(dtype) ----------------------------------------------------------------------------


@pytest.mark.parametrize("geometry", sorted(GEOMETRIES))
@pytest.mark.parametrize(("source", "target"), list(itertools.product(DTYPES, DTYPES)))
def test_view_dtype_matches_numpy(source, target, geometry):
    array, tensor = _base(source)
    array, tensor = GEOMETRIES[geometry](array), GEOMETRIES[geometry](tensor)
    expected = array.view(DTYPES[target])
    got = tensor.view(getattr(ember, target))
    assert got.dtype == getattr(ember, target)
    assert tuple(got.shape) == expected.shape
    assert tuple(s * expected.itemsize for s in got.stride()) == expected.strides
    assert got.data_ptr() == expected.ctypes.data  # the same memory, at the same place
    assert np.array_equal(_raw(got.numpy()), _raw(expected))


@pytest.mark.parametrize("name", list(DTYPES))
def test_view_dtype_zero_dim_same_itemsize(name):
    array, tensor = _base(name, shape=(3,))
    got, expected = tensor[1].view(getattr(ember, name)), array[1:2].reshape(())
    assert got.dim() == 0 and got.storage_offset() == 1
    assert np.array_equal(_raw(got.numpy()), _raw(expected))


def test_view_dtype_bool_and_bytes():
    values = np.array([[0, 1, 1, 0], [1, 0, 0, 1]], dtype=np.uint8)
    as_bool = ember.from_numpy(values.copy()).view(ember.bool)
    assert as_bool.dtype == ember.bool and as_bool.tolist() == values.view(np.bool_).tolist()
    flags = ember.tensor([[True, False], [False, True]])
    assert flags.view(ember.int8).tolist() == np.array([[1, 0], [0, 1]], dtype=np.int8).tolist()
    assert flags.t().view(ember.uint8).stride() == (1, 2)  # same item size: any layout
    packed = flags.view(ember.int16)
    expected = np.array([[True, False], [False, True]]).view(np.int16)
    assert packed.tolist() == expected.tolist()


def test_view_dtype_aliases_both_ways_and_keyword_form():
    x = ember.zeros(4, dtype=ember.float32)
    bits = x.view(dtype=ember.int32)
    bits[1] = 0x3F800000  # 1.0f
    assert x.tolist() == [0.0, 1.0, 0.0, 0.0]
    x[2] = -2.0
    assert bits[2].item() == np.array([-2.0], dtype=np.float32).view(np.int32)[0]
    assert x.view(ember.float32).data_ptr() == x.data_ptr()


def test_view_dtype_has_no_autograd_history():
    leaf = ember.ones(4, requires_grad=True)
    for target in (ember.int32, ember.float32, ember.float16, ember.float64):
        for source in (leaf, leaf * 2):
            out = source.view(target)
            assert not out.requires_grad and out.grad_fn is None


def test_view_shape_forms_still_work():
    x = ember.arange(6.0)
    assert x.view(2, 3).shape == (2, 3) and x.view((3, 2)).shape == (3, 2) and x.view(-1).shape == (6,)
    assert x.view(size=(2, 3)).shape == (2, 3)


@pytest.mark.parametrize(("make", "dtype", "message"), [
    (lambda: ember.zeros(6)[::2], ember.uint8,
     r"^self.stride\(-1\) must be 1 to view Float as Byte \(different element sizes\), but got 2$"),
    (lambda: ember.zeros(2, 3).t(), ember.float64,
     r"^self.stride\(-1\) must be 1 to view Float as Double \(different element sizes\), but got 3$"),
    (lambda: ember.zeros(6)[1:], ember.float64,
     r"^self.size\(-1\) must be divisible by 2 to view Float as Double \(different element sizes\), but got 5$"),
    (lambda: ember.zeros(6)[1:5], ember.float64,
     r"^self.storage_offset\(\) must be divisible by 2 to view Float as Double \(different element sizes\), but "
     r"got 1$"),
    (lambda: ember.zeros(3, 5)[:, :4], ember.float64,
     r"^self.stride\(0\) must be divisible by 2 to view Float as Double \(different element sizes\), but got 5$"),
    (lambda: ember.zeros(3, 6, dtype=ember.uint8)[:, :4], ember.int32,
     r"^self.stride\(0\) must be divisible by 4 to view Byte as Int \(different element sizes\), but got 6$"),
    (lambda: ember.tensor(1.0), ember.uint8,
     r"^self.dim\(\) cannot be 0 to view Float as Byte \(different element sizes\)$"),
])
def test_view_dtype_bad_geometry(make, dtype, message):
    with pytest.raises(RuntimeError, match=message):
        make().view(dtype)


def test_view_dtype_bad_arguments():
    x = ember.zeros(4)
    with pytest.raises(TypeError, match=r"view\(\) received an invalid combination of arguments - got \(dtype, int\)"):
        x.view(ember.uint8, 3)
    with pytest.raises(TypeError, match=r"view\(\) received an invalid combination of arguments"):
        x.view(4, ember.uint8)
    with pytest.raises(TypeError, match=r"got \(dtype=dtype, size=int\)"):
        x.view(dtype=ember.int32, size=4)
    with pytest.raises(TypeError, match=r"got \(\), but expected one of"):
        x.view()


# ---- UntypedStorage --------------------------------------------------------------------------------


def test_untyped_storage_construction():
    assert ember.UntypedStorage().nbytes() == 0
    fresh = ember.UntypedStorage(5)
    assert (fresh.nbytes(), fresh.size(), len(fresh), fresh.element_size()) == (5, 5, 5, 1)
    assert ember.UntypedStorage([1, 2, 255]).tolist() == [1, 2, 255]
    assert ember.UntypedStorage(b"abc").tolist() == list(b"abc")
    assert ember.UntypedStorage(bytearray(b"\x00\xff")).tolist() == [0, 255]
    assert ember.UntypedStorage([1, 2], device="cpu").device == ember.device("cpu")


@pytest.mark.parametrize(("args", "error", "message"), [
    ((-1,), RuntimeError, r"^ember.UntypedStorage\(\): expected a non-negative size, but got -1$"),
    (([1, 2.5],), RuntimeError, r"from a sequence \(list\), but one of the items was of type float instead of int$"),
    (([300],), RuntimeError, r"^value cannot be converted to type uint8 without overflow"),
    (([-1],), RuntimeError, r"^value cannot be converted to type uint8 without overflow"),
    ((True,), RuntimeError, r"Expected a sequence type, but got bool$"),
    ((2, 3), TypeError, r"received an invalid combination of arguments - got \(int, int\)"),
    (("abc",), TypeError, r"received an invalid combination of arguments - got \(str\)"),
    ((ember.zeros(2),), TypeError, r"received an invalid combination of arguments - got \(Tensor\)"),
])
def test_untyped_storage_bad_construction(args, error, message):
    with pytest.raises(error, match=message):
        ember.UntypedStorage(*args)


def test_untyped_storage_attributes():
    s = ember.UntypedStorage([1, 2, 3])
    assert s.device.type == "cpu" and not s.is_cuda and s.get_device() is None
    assert not s.is_pinned() and not s.is_sparse and not s.resizable()
    assert s.type() == "ember.storage.UntypedStorage" and s.untyped() is s and s.cpu() is s
    assert not hasattr(s, "dtype")  # as PyTorch: only a TypedStorage has one
    assert s.data_ptr() != 0 and ember.is_storage(s) and not ember.is_storage(ember.zeros(1))
    assert not ember.is_storage(ember.UntypedStorage)
    assert str(s) == repr(s) == " 1\n 2\n 3\n[ember.storage.UntypedStorage(device=cpu) of size 3]"
    assert repr(ember.UntypedStorage()) == " \n[ember.storage.UntypedStorage(device=cpu) of size 0]"
    assert list(s) == [1, 2, 3]
    other = ember.UntypedStorage([1, 2, 3])
    assert s == s and s != other  # identity, not contents
    assert type(s).__module__ == "ember.storage" and ember.storage.UntypedStorage is ember.UntypedStorage


def test_untyped_storage_indexing():
    s = ember.UntypedStorage([10, 20, 30, 40])
    assert (s[0], s[-1], s[np.int64(2)]) == (10, 40, 30) and isinstance(s[0], int)
    part = s[1:3]
    assert isinstance(part, ember.UntypedStorage) and part.tolist() == [20, 30]
    assert part.data_ptr() == s.data_ptr() + 1
    part[0] = 99  # a slice shares the memory
    assert s.tolist() == [10, 99, 30, 40]
    s[3] = 7
    s[-4] = True
    s[0:2] = 5
    assert s.tolist() == [5, 5, 30, 7] and part.tolist() == [5, 30]
    assert s[4:].nbytes() == 0 and s[3:1].nbytes() == 0


@pytest.mark.parametrize(("action", "error", "message"), [
    (lambda s: s[4], IndexError, r"^index 4 out of range for storage of size 4$"),
    (lambda s: s[-5], IndexError, r"^index -5 out of range for storage of size 4$"),
    (lambda s: s[::2], RuntimeError, r"^Trying to slice with a step of 2, but only a step of 1 is supported$"),
    (lambda s: s[1.0], TypeError, r"^can't index a ember.UntypedStorage with float$"),
    (lambda s: s["a"], TypeError, r"^can't index a ember.UntypedStorage with str$"),
    (lambda s: s.__setitem__(4, 1), RuntimeError, r"^index 4 out of range for storage of size 4$"),
    (lambda s: s.__setitem__(0, 2.5), RuntimeError, r"^can only set storage content with a int types, but got float"),
    (lambda s: s.__setitem__(0, 256), RuntimeError, r"^value cannot be converted to type uint8 without overflow"),
    (lambda s: s.__setitem__(slice(None), [1, 2, 3, 4]), RuntimeError, r"but got list instead$"),
    (lambda s: s.fill_(-1), RuntimeError, r"^value cannot be converted to type uint8 without overflow"),
    (lambda s: s.copy_(ember.UntypedStorage(3)), RuntimeError,
     r"^size does not match, self was 4 bytes but src was 3 bytes$"),
    (lambda s: s.copy_(ember.zeros(4, dtype=ember.uint8)), TypeError,
     r"^copy_\(\): argument 'src' \(position 1\) must be a storage, not Tensor$"),
])
def test_untyped_storage_bad_access(action, error, message):
    s = ember.UntypedStorage([1, 2, 3, 4])
    with pytest.raises(error, match=message):
        action(s)
    assert s.tolist() == [1, 2, 3, 4]  # nothing written


def test_untyped_storage_fill_copy_clone():
    s = ember.UntypedStorage(4)
    assert s.fill_(3) is s and s.tolist() == [3, 3, 3, 3]
    assert s.copy_(ember.UntypedStorage([1, 2, 3, 4])) is s and s.tolist() == [1, 2, 3, 4]
    s.copy_(ember.FloatStorage([1.0]))  # the bytes of a typed storage of the same byte size
    assert s.tolist() == list(np.float32(1.0).tobytes())
    twin = s.clone()
    assert twin.tolist() == s.tolist() and twin.data_ptr() != s.data_ptr()
    twin[0] = 42
    assert s[0] != 42
    assert copy.copy(s).data_ptr() != s.data_ptr() and copy.deepcopy(s).tolist() == s.tolist()
    assert pickle.loads(pickle.dumps(s)).tolist() == s.tolist()
    assert s.new().nbytes() == 0 and s.to("cpu") is s


@pytest.mark.parametrize(("method", "dtype"), [
    ("byte", "uint8"), ("char", "int8"), ("short", "int16"), ("int", "int32"), ("long", "int64"), ("half", "float16"),
    ("float", "float32"), ("double", "float64"), ("bool", "bool"), ("complex_float", "complex64"),
    ("complex_double", "complex128")])
def test_storage_conversions_convert_values(method, dtype):
    values = np.array([0, 1, 7, 200], dtype=np.uint8)
    typed = getattr(ember.UntypedStorage(values.tolist()), method)()
    assert isinstance(typed, ember.TypedStorage) and typed.size() == 4 and typed.dtype == getattr(ember, dtype)
    assert typed.tolist() == values.astype(dtype).tolist()
    again = getattr(typed, method)()  # already that dtype: still a copy, as PyTorch
    assert again.tolist() == typed.tolist() and again.data_ptr() != typed.data_ptr()
    assert typed.long().tolist() == np.real(values.astype(dtype)).astype(np.int64).tolist()


def test_bfloat16_conversion():
    assert ember.UntypedStorage([0, 1, 7, 200]).bfloat16().tolist() == [0.0, 1.0, 7.0, 200.0]


def test_untyped_from_buffer_matches_numpy():
    data = bytes(range(1, 17))
    assert ember.UntypedStorage.from_buffer(data).tolist() == list(data)
    for order, prefix in (("little", "<"), ("big", ">"), ("native", "=")):
        for name in ("int16", "float32", "float64", "complex128"):
            dtype = getattr(ember, name)
            got = ember.UntypedStorage.from_buffer(data, order, dtype=dtype)
            expected = np.frombuffer(data, dtype=np.dtype(DTYPES.get(name, name)).newbyteorder(prefix))
            assert got.nbytes() == len(data)
            assert bytes(got.tolist()) == expected.astype(expected.dtype.newbyteorder("=")).tobytes()
    part = ember.UntypedStorage.from_buffer(data, "big", count=2, offset=4, dtype=ember.int16)
    assert bytes(part.tolist()) == np.frombuffer(data[4:8], dtype=">i2").astype(np.int16).tobytes()


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"byte_order": "middle", "dtype": ember.int16}, ValueError,
     r"^invalid byte_order 'middle' \(expected 'big', 'little', or 'native'\)$"),
    ({"dtype": ember.int16}, RuntimeError, r"^from_buffer\(\): byte_order \('big', 'little' or 'native'\) is required"),
    ({"byte_order": "little", "dtype": ember.int16, "offset": 1}, ValueError,
     r"^buffer size \(3\) must be a multiple of element size \(2\)$"),
    ({"byte_order": "little", "dtype": ember.int16, "count": 3}, ValueError,
     r"^buffer has only 2 elements after offset 0, but specified a size of 3$"),
    ({"byte_order": "little", "dtype": ember.int16, "offset": 5}, ValueError,
     r"^offset must be non-negative and no greater than buffer length \(4\), but got 5$"),
])
def test_from_buffer_bad_arguments(kwargs, error, message):
    with pytest.raises(error, match=message):
        ember.UntypedStorage.from_buffer(b"\x01\x02\x03\x04", **kwargs)


def test_byteswap():
    s = ember.UntypedStorage(bytes(range(8)))
    s.byteswap(ember.int32)
    assert s.tolist() == [3, 2, 1, 0, 7, 6, 5, 4]
    s.byteswap(ember.complex64)  # each 4-byte part on its own
    assert s.tolist() == list(range(8))
    with pytest.raises(RuntimeError, match=r"^byteswap\(\): the storage's 8 bytes are not whole ember.complex128"):
        s.byteswap(ember.complex128)


# ---- tensors and their storages --------------------------------------------------------------------

LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.t(),
    "sliced_offset": lambda t: t[1:, 1:],
    "zero_size": lambda t: t[:0],
    "zero_dim": lambda t: t[1, 2],
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", ["uint8", "int16", "float32", "float64", "complex128"])
def test_untyped_storage_of_a_tensor(name, layout):
    array = RNG.integers(0, 100, size=(3, 4)).astype(DTYPES[name])
    base = ember.from_numpy(array)
    view = LAYOUTS[layout](base)
    storage = view.untyped_storage()
    assert storage.nbytes() == array.nbytes and storage.data_ptr() == base.data_ptr()
    assert bytes(storage.tolist()) == array.tobytes()
    assert storage is base.untyped_storage()  # one object per storage while it lives
    typed = view.storage()
    assert isinstance(typed, ember.TypedStorage) and typed.dtype == view.dtype and typed.size() == array.size
    assert typed.tolist() == array.reshape(-1).tolist()
    assert typed._untyped_storage is storage
    assert view.storage_type() is getattr(ember, ember_storage._legacy_name(view.dtype) + "Storage")


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_storage_aliasing_both_ways(layout):
    base = ember.zeros(3, 4, dtype=ember.int16)
    view = LAYOUTS[layout](base)
    storage = view.untyped_storage()
    storage[2] = 7  # element 1, low byte (little-endian)
    assert base.reshape(-1)[1].item() == 7 * (1 if sys.byteorder == "little" else 256)
    base[2, 3] = 0x0102
    low, high = storage[2 * 11], storage[2 * 11 + 1]
    assert (low, high) == ((2, 1) if sys.byteorder == "little" else (1, 2))
    typed = view.storage()
    typed[5] = 9
    assert base.reshape(-1)[5].item() == 9
    base[0, 0] = -3
    assert typed[0] == -3


def test_untyped_storage_of_empty_and_grad_tensors():
    assert ember.zeros(0).untyped_storage().nbytes() == 0
    assert ember.zeros(3, requires_grad=True).untyped_storage().nbytes() == 12
    x = ember.arange(4.0)
    assert x.untyped_storage().data_ptr() == x[1:].untyped_storage().data_ptr()
    assert x[1:].storage().size() == 4 and x[1:].storage()[0] == 0.0


def test_writes_through_a_storage_count_as_tensor_writes():
    x = ember.arange(4.0)
    before = x._version
    x.untyped_storage().fill_(0)
    assert x._version > before and x.tolist() == [0.0] * 4


def test_tensor_storage_warns(always_warn):
    x = ember.zeros(2)
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        x.storage()
    with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
        assert x.storage_type() is ember.FloatStorage
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x.untyped_storage()  # the supported accessor does not warn
    assert ember.empty(2, dtype=ember.float8_e4m3fn).storage_type() is None


# ---- set_ ------------------------------------------------------------------------------------------


def test_set_untyped_storage_reads_bytes():
    data = np.arange(16, dtype=np.uint8)
    storage = ember.UntypedStorage(data.tolist())
    for name in ("uint8", "int16", "float32", "float64", "complex128"):
        t = ember.empty(0, dtype=getattr(ember, name)).set_(storage)
        expected = data.view(DTYPES[name])
        assert t.shape == expected.shape and np.array_equal(_raw(t.numpy()), _raw(expected))
        assert t.untyped_storage() is storage


def test_set_storage_with_geometry():
    s = ember.FloatStorage([1, 2, 3, 4, 5, 6])
    assert ember.empty(0).set_(s, 1, (2,)).tolist() == [2.0, 3.0]
    t = ember.empty(0).set_(s, 0, (2, 2), (1, 2))
    assert t.tolist() == [[1.0, 3.0], [2.0, 4.0]] and t.stride() == (1, 2)
    assert ember.empty(0).set_(s, 2, ember.Size([2, 2])).stride() == (2, 1)
    assert ember.empty(0).set_(s, 0, (2, 2), ()).stride() == (2, 1)
    kw = ember.empty(0).set_(source=s, storage_offset=4, size=[2], stride=[1])
    assert kw.tolist() == [5.0, 6.0] and kw.storage_offset() == 4
    kw[0] = 50.0
    assert s[4] == 50.0  # the tensor views the storage
    s[5] = 60.0
    assert kw[1].item() == 60.0
    assert ember.empty(0).set_(s, 6, (0,)).numel() == 0
    t = ember.zeros(2)
    assert t.set_(s) is t and t.shape == (6,)


def test_set_storage_slice_and_tensor_geometry():
    base = ember.UntypedStorage(np.arange(4, dtype=np.float32).tobytes())
    t = ember.empty(0).set_(base[4:], 0, (2,))
    assert t.tolist() == [1.0, 2.0] and t.untyped_storage().nbytes() == 12
    src = ember.arange(6.0)
    part = ember.empty(0).set_(src, 1, (2, 2), (2, 1))
    assert part.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    part[0, 0] = -1.0
    assert src[1].item() == -1.0


@pytest.mark.parametrize(("call", "error", "message"), [
    (lambda t, s: t.set_(s, 0, (10,)), RuntimeError, r"expected the view to fit in its storage of 16 bytes"),
    (lambda t, s: t.set_(s, 3, (2,)), RuntimeError, r"expected the view to fit in its storage of 16 bytes"),
    (lambda t, s: t.set_(s, 0, (3,), (2,)), RuntimeError, r"expected the view to fit in its storage"),
    (lambda t, s: t.set_(s[1:], 0, (4,)), RuntimeError, r"expected the view to fit in its storage of 15 bytes"),
    (lambda t, s: t.set_(s, -1, (2,)), RuntimeError, r"^Tensor: invalid storage offset -1$"),
    (lambda t, s: t.set_(s, 0, (-1,)), RuntimeError, r"^Trying to create tensor with negative dimension -1: \[-1\]$"),
    (lambda t, s: t.set_(s, 0, (2,), (-1,)), RuntimeError, r"negative strides are not supported"),
    (lambda t, s: t.set_(s, 0, (2, 2), (1,)), RuntimeError, r"^unequal size length \(2\) and stride length \(1\)$"),
    (lambda t, s: t.set_(s, 0, 2), TypeError, r"^size must be a tuple of ints, but got int$"),
    (lambda t, s: t.set_(s, 1.0, (2,)), TypeError, r"^storage_offset must be an int, but got float$"),
    (lambda t, s: t.set_(s, 0, (2, "a")), TypeError, r"^each entry of size must be an int, but got str$"),
    (lambda t, s: t.set_(s, 0, (2,), 1), TypeError, r"^stride must be a tuple of ints, but got int$"),
    (lambda t, s: t.set_(s, 1), TypeError, r"storage_offset and size go together"),
    (lambda t, s: t.set_(s, size=(2,)), TypeError, r"storage_offset and size go together"),
    (lambda t, s: t.set_(None, 0, (1,)), TypeError, r"need a source"),
    (lambda t, s: t.set_("abc"), TypeError, r"^set_\(\): expected source to be a Tensor or a storage, but got str$"),
    (lambda t, s: t.set_(ember.DoubleStorage([1.0])), RuntimeError,
     r"^Expected a Storage of type Float or an UntypedStorage, but got type Double for argument 1 'storage'$"),
    (lambda t, s: t.set_(ember.zeros(2, dtype=ember.float64)), RuntimeError,
     r"^Could not set tensor of type ember.float64 to a tensor of type ember.float32$"),
    (lambda t, s: ember.zeros(2, requires_grad=True).set_(s), RuntimeError, r"set_ is not allowed on a Tensor"),
])
def test_set_bad_inputs(call, error, message):
    target = ember.zeros(2)
    with pytest.raises(error, match=message):
        call(target, ember.UntypedStorage(16))
    assert target.shape == (2,)  # left as it was


# ---- TypedStorage and the legacy classes -----------------------------------------------------------

LEGACY = [("FloatStorage", np.float32), ("DoubleStorage", np.float64), ("HalfStorage", np.float16),
          ("LongStorage", np.int64), ("IntStorage", np.int32), ("ShortStorage", np.int16), ("CharStorage", np.int8),
          ("ByteStorage", np.uint8), ("BoolStorage", np.bool_), ("ComplexFloatStorage", np.complex64),
          ("ComplexDoubleStorage", np.complex128)]


@pytest.mark.parametrize(("name", "np_dtype"), LEGACY)
def test_legacy_storage_classes(name, np_dtype):
    cls = getattr(ember, name)
    values = np.array([0, 1, 1, 5]).astype(np_dtype)
    s = cls(values.tolist())
    assert type(s) is ember.TypedStorage and isinstance(s, cls) and issubclass(cls, ember.TypedStorage)
    assert not isinstance(s, ember.FloatStorage if cls is not ember.FloatStorage else ember.DoubleStorage)
    assert s.dtype == cls.dtype and s.tolist() == values.tolist()
    assert (s.size(), len(s), s.element_size(), s.nbytes()) == (4, 4, values.itemsize, values.nbytes)
    assert type(s[1]) is type(values[1].item()) and s[-1] == values[-1].item()
    assert cls(3).size() == 3 and cls().size() == 0
    assert s.type() == f"ember.{name}" and s.pickle_storage_type() == name
    assert repr(cls) == f"<class 'ember.{name}'>"
    wrapped = cls(wrap_storage=s.untyped())
    assert wrapped.data_ptr() == s.data_ptr() and wrapped.tolist() == values.tolist()
    assert bytes(s.untyped().tolist()) == values.tobytes()


def test_bfloat16_storage():
    s = ember.BFloat16Storage([1.5, -2.0])
    assert s.dtype == ember.bfloat16 and s.tolist() == [1.5, -2.0] and s.element_size() == 2


def test_typed_storage_constructor_forms():
    assert ember.TypedStorage(3).dtype == ember.get_default_dtype()
    s = ember.TypedStorage([1, 2], dtype=ember.int32)
    assert s.tolist() == [1, 2] and s.dtype == ember.int32
    raw = ember.UntypedStorage(8)
    view = ember.TypedStorage(wrap_storage=raw, dtype=ember.int16)
    assert view.size() == 4 and view.untyped() is raw
    view[0] = 258
    assert raw[0] + 256 * raw[1] == 258 if sys.byteorder == "little" else raw[1] + 256 * raw[0] == 258
    assert ember.TypedStorage(wrap_storage=ember.UntypedStorage(7), dtype=ember.int16).size() == 3


@pytest.mark.parametrize(("make", "error", "message"), [
    (lambda: ember.FloatStorage(-1), RuntimeError, r"expected a non-negative size, but got -1$"),
    (lambda: ember.TypedStorage(-2, dtype=ember.int16), RuntimeError, r"expected a non-negative size, but got -2$"),
    (lambda: ember.FloatStorage(2, device="cpu"), RuntimeError, r"keyword argument 'device' cannot be specified$"),
    (lambda: ember.FloatStorage(ember.UntypedStorage(8)), TypeError, r"invalid combination of arguments"),
    (lambda: ember.FloatStorage(2.0), TypeError, r"invalid combination of arguments - got \(float\)"),
    (lambda: ember.TypedStorage(3, dtype="float"), RuntimeError, r"^expected ember.dtype, but got <class 'str'>$"),
    (lambda: ember.TypedStorage(2, wrap_storage=ember.UntypedStorage(2)), TypeError, r"invalid combination"),
    (lambda: ember.TypedStorage(wrap_storage=b"ab", dtype=ember.uint8), TypeError,
     r"^expected wrap_storage to be an UntypedStorage, but got bytes$"),
    (lambda: ember.ByteStorage([300]), RuntimeError, r"^value cannot be converted to type uint8 without overflow"),
    (lambda: ember.storage._LegacyStorage(2), TypeError, r"_LegacyStorage is abstract"),
])
def test_typed_storage_bad_construction(make, error, message):
    with pytest.raises(error, match=message):
        make()


def test_typed_storage_access():
    s = ember.FloatStorage([1, 2, 3])
    s[0] = 5.5
    s[1:3] = 7
    assert s.tolist() == [5.5, 7.0, 7.0] and list(s) == [5.5, 7.0, 7.0]
    s[0:2] = ember.tensor([1.0, 2.0])
    assert s.tolist() == [1.0, 2.0, 7.0]
    assert s.fill_(2) is s and s.tolist() == [2.0] * 3
    assert s.copy_(ember.FloatStorage([4, 5, 6])) is s and s.tolist() == [4.0, 5.0, 6.0]
    s.copy_(ember.UntypedStorage(np.array([1, 2, 3], dtype=np.float32).tobytes()))  # copies bytes
    assert s.tolist() == [1.0, 2.0, 3.0]
    twin = s.clone()
    twin[0] = 9.0
    assert s[0] == 1.0 and twin.dtype == s.dtype
    assert s.cpu() is s and s.to("cpu") is s and s.untyped() is s._untyped_storage
    assert s.double().tolist() == [1.0, 2.0, 3.0] and s.double().dtype == ember.float64
    assert s.int().tolist() == [1, 2, 3] and s.float().data_ptr() != s.data_ptr()
    assert s.type("ember.DoubleStorage").dtype == ember.float64 and s.type(ember.IntStorage).dtype == ember.int32
    assert s.type("torch.storage.UntypedStorage") is s.untyped()
    assert repr(s) == " 1.0\n 2.0\n 3.0\n[ember.storage.TypedStorage(dtype=ember.float32, device=cpu) of size 3]"
    restored = pickle.loads(pickle.dumps(s))
    assert restored.dtype == ember.float32 and restored.tolist() == s.tolist()
    assert copy.deepcopy(s).tolist() == s.tolist()
    assert ember.TypedStorage(1, dtype=ember.float8_e4m3fn).type() == "ember.storage.TypedStorage"


@pytest.mark.parametrize(("action", "error", "message"), [
    (lambda s: s[3], IndexError, r"^index 3 out of range for storage of size 3$"),
    (lambda s: s[-4], IndexError, r"^index -4 out of range for storage of size 3$"),
    (lambda s: s[1:], RuntimeError, r"^slices are only supported in UntypedStorage.__getitem__$"),
    (lambda s: s["a"], RuntimeError, r"can't index a .*TypedStorage.* with <class 'str'>$"),
    (lambda s: s.__setitem__(3, 1.0), IndexError, r"^index 3 out of range for storage of size 3$"),
    (lambda s: s.__setitem__(0, "a"), TypeError, r"^can't assign a str to a storage of ember.float32$"),
    (lambda s: s.__setitem__(slice(0, 2), [1.0, 2.0]), TypeError, r"^can't assign a list"),
    (lambda s: s.copy_(ember.DoubleStorage([4, 5, 6])), RuntimeError,
     r"^size does not match, self was 12 bytes but src was 24 bytes$"),
    (lambda s: s.copy_(ember.zeros(3)), TypeError, r"must be a storage, not Tensor$"),
    (lambda s: s.type(ember.float64), ValueError, r"^type\(\): expected a storage class or its name"),
    (lambda s: ember.TypedStorage(1, dtype=ember.float8_e5m2).pickle_storage_type(), KeyError,
     r"dtype ember.float8_e5m2 is not recognized"),
])
def test_typed_storage_bad_access(action, error, message):
    s = ember.FloatStorage([1, 2, 3])
    with pytest.raises(error, match=message):
        action(s)
    assert s.tolist() == [1.0, 2.0, 3.0]


def test_typed_storage_from_buffer():
    data = np.array([1.5, -2.0], dtype=">f4").tobytes()
    assert ember.FloatStorage.from_buffer(data, "big").tolist() == [1.5, -2.0]
    assert ember.ByteStorage.from_buffer(b"\x01\x02").tolist() == [1, 2]
    assert ember.FloatStorage.from_buffer(data, "big", 1, 4).tolist() == [-2.0]
    typed = ember.TypedStorage.from_buffer(np.array([7], dtype="<i2").tobytes(), "little", dtype=ember.int16)
    assert typed.dtype == ember.int16 and typed.tolist() == [7]
    with pytest.raises(RuntimeError, match=r"^from_buffer: 'dtype' can only be specified in UntypedStorage"):
        ember.FloatStorage.from_buffer(data, "big", dtype=ember.int16)
    with pytest.raises(RuntimeError, match=r"byte_order .* is required for ember.float32"):
        ember.FloatStorage.from_buffer(data)


def test_typed_storage_warnings(always_warn):
    for action in (lambda: ember.FloatStorage(2), lambda: ember.TypedStorage(2), lambda: ember.FloatStorage([1]).size(),
                   lambda: ember.FloatStorage([1])[0], lambda: ember.FloatStorage([1]).tolist(),
                   lambda: ember.UntypedStorage(2).float()):
        with pytest.warns(UserWarning, match="TypedStorage is deprecated"):
            action()
    s = ember.FloatStorage([1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert s.dtype == ember.float32 and s._untyped_storage.nbytes() == 4  # attributes do not warn


def test_typed_storage_warns_once_per_process():
    ember_storage._set_always_warn_typed_storage_removal(False)
    ember_storage._has_warned = False
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ember.FloatStorage(2).size()
        ember.FloatStorage(2).tolist()
    assert len([w for w in seen if "TypedStorage is deprecated" in str(w.message)]) == 1
    assert not ember_storage._get_always_warn_typed_storage_removal()


def test_storage_is_the_default_dtype_class():
    assert ember.Storage is ember.FloatStorage
    previous = ember.get_default_dtype()
    ember.set_default_dtype(ember.float64)
    try:
        assert ember.Storage is ember.DoubleStorage
        assert ember.TypedStorage(1).dtype == ember.float64
    finally:
        ember.set_default_dtype(previous)
    from ember import Storage
    assert Storage is ember.FloatStorage


# ---- legacy tensor constructors --------------------------------------------------------------------


def test_legacy_tensor_constructors_view_storages():
    s = ember.FloatStorage([1, 2, 3])
    t = ember.Tensor(s)
    assert t.tolist() == [1.0, 2.0, 3.0] and t.data_ptr() == s.data_ptr()
    t[0] = 10.0
    assert s[0] == 10.0
    raw = ember.UntypedStorage(np.array([4, 5], dtype=np.int64).tobytes())
    assert ember.LongTensor(raw).tolist() == [4, 5]
    assert ember.FloatTensor(ember.UntypedStorage(7)).shape == (1,)  # whole elements only
    with pytest.raises(RuntimeError, match=r"^Expected a Storage of type Double or an UntypedStorage, but got type "
                                           r"Float for argument 1 'storage'$"):
        ember.DoubleTensor(s)


# ---- from_file ---------------------------------------------------------------------------------------


def test_from_file_private_and_shared(tmp_path):
    path = tmp_path / "data.bin"
    values = np.arange(6, dtype=np.float32)
    values.tofile(path)
    t = ember.from_file(str(path), size=6, dtype=ember.float32)
    assert t.tolist() == np.fromfile(path, dtype=np.float32).tolist() and t.dim() == 1
    t[0] = 100.0  # shared=False: the file keeps its bytes
    assert np.fromfile(path, dtype=np.float32)[0] == 0.0
    shared = ember.from_file(path, True, 4, dtype=ember.float32)
    shared[1] = -1.0
    del shared
    assert np.fromfile(path, dtype=np.float32).tolist() == [0.0, -1.0, 2.0, 3.0, 4.0, 5.0]
    assert ember.from_file(path, size=2, dtype=ember.int16).tolist() == np.fromfile(path, dtype=np.int16)[:2].tolist()
    assert ember.from_file(path).shape == (0,)
    assert ember.from_file(path, size=1, requires_grad=True).requires_grad


def test_storage_from_file(tmp_path):
    path = tmp_path / "bytes.bin"
    path.write_bytes(bytes(range(8)))
    s = ember.UntypedStorage.from_file(str(path), False, 8)
    assert s.tolist() == list(range(8))
    s[0] = 100
    assert path.read_bytes()[0] == 0
    assert ember.UntypedStorage.from_file(path, shared=False, nbytes=4).tolist() == [0, 1, 2, 3]
    assert ember.UntypedStorage.from_file(path).nbytes() == 0
    shared = ember.UntypedStorage.from_file(path, True, 8)
    shared[0] = 100
    assert path.read_bytes()[0] == 100
    created = tmp_path / "new.bin"
    assert ember.UntypedStorage.from_file(created, True, 16).tolist() == [0] * 16
    assert created.stat().st_size == 16
    floats = ember.FloatStorage.from_file(str(path), False, 2)
    assert floats.dtype == ember.float32 and floats.tolist() == np.fromfile(path, dtype=np.float32).tolist()


@pytest.mark.parametrize(("call", "message"), [
    (lambda p: ember.from_file(str(p / "missing.bin"), size=4),
     r"^unable to open file <.*missing.bin> in read-only mode: No such file or directory \(2\)$"),
    (lambda p: ember.UntypedStorage.from_file(p / "missing.bin", False, 4), r"^unable to open file <.*missing.bin>"),
    (lambda p: ember.from_file(p / "small.bin", size=4, dtype=ember.int32),
     r"^file <.*small.bin> size <8> is smaller than the required mapping size <16>$"),
    (lambda p: ember.UntypedStorage.from_file(p / "small.bin", False, 9),
     r"^file <.*small.bin> size <8> is smaller than the required mapping size <9>$"),
    (lambda p: ember.from_file(p / "small.bin", size=-1), r"^from_file\(\): expected a non-negative size, but got -1$"),
    (lambda p: ember.UntypedStorage.from_file(p / "small.bin", False, -1), r"expected a non-negative size, but got -1"),
    (lambda p: ember.TypedStorage.from_file(p / "small.bin", False, 1), r"^from_file can only be called on derived"),
    (lambda p: ember.from_file(p / "small.bin", size=1, device="mps"), r"can only be mapped into CPU memory"),
])
def test_from_file_errors(tmp_path, call, message):
    (tmp_path / "small.bin").write_bytes(bytes(8))
    with pytest.raises(RuntimeError, match=message):
        call(tmp_path)
