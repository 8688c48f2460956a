"""PyTorch's storage objects (torch.storage): the bytes a tensor views, as Python objects.

An UntypedStorage holds `_bytes`, a 1-d uint8 tensor over the whole of one native storage
(offset 0, every byte): ember._C._reinterpret of a tensor gives one for the tensor's storage, and a
fresh allocation or a file mapping gives a new one. Typed views of it come from the same
_reinterpret, so writes through a storage reach every tensor over it and the other way round.
A TypedStorage is PyTorch's deprecated dtype-typed wrapper of an UntypedStorage, and
ember.FloatStorage & co. are its legacy classes (constructors and isinstance checks by dtype).

Differences from PyTorch, on purpose:
- storages never grow: set_() with a view past the storage's end raises instead of resizing it,
  and there is no resize_ (a storage moved into shared memory by share_memory_ keeps its size;
  ember/_shared_memory.py says how, and where it differs from PyTorch);
- a value that does not fit a byte (storage[0] = 300, UntypedStorage([-1])) raises rather than
  wrapping around;
- from_file of a missing file raises even when asked for 0 bytes;
- writes through a storage count as writes to its tensors (their version counter moves), so a
  tensor saved for backward and changed through its storage is caught.
"""

from __future__ import annotations

import builtins
import operator
import os
import sys
import warnings
import weakref

import numpy as np

from . import _C, _shared_memory

# (conversion method, dtype), shared by UntypedStorage and TypedStorage.
_CONVERSIONS = [("byte", _C.uint8), ("char", _C.int8), ("short", _C.int16), ("int", _C.int32),
                ("long", _C.int64), ("half", _C.float16), ("float", _C.float32), ("double", _C.float64),
                ("bfloat16", _C.bfloat16), ("bool", _C.bool), ("complex_float", _C.complex64),
                ("complex_double", _C.complex128), ("float8_e4m3fn", _C.float8_e4m3fn),
                ("float8_e5m2", _C.float8_e5m2), ("float8_e4m3fnuz", _C.float8_e4m3fnuz),
                ("float8_e5m2fnuz", _C.float8_e5m2fnuz)]
# PyTorch's legacy name of each dtype that has a legacy class (ember.FloatStorage, ...), in its
# order; the names also appear in PyTorch's messages ("to view Float as Byte").
_LEGACY_NAMES = {_C.float64: "Double", _C.float32: "Float", _C.float16: "Half", _C.bfloat16: "BFloat16",
                 _C.int64: "Long", _C.int32: "Int", _C.int16: "Short", _C.int8: "Char", _C.uint8: "Byte",
                 _C.bool: "Bool", _C.complex128: "ComplexDouble", _C.complex64: "ComplexFloat"}
_BYTE_ORDERS = ("native", "little", "big")

# ---- the deprecation warning, once per process as PyTorch ------------------------------------------

_always_warn_typed_storage_removal = False
_has_warned = False


def _set_always_warn_typed_storage_removal(always_warn: builtins.bool) -> None:
    global _always_warn_typed_storage_removal
    _always_warn_typed_storage_removal = builtins.bool(always_warn)


def _get_always_warn_typed_storage_removal() -> builtins.bool:
    return _always_warn_typed_storage_removal


def _warn_typed_storage_removal(stacklevel: builtins.int = 2) -> None:
    global _has_warned
    if _has_warned and not _always_warn_typed_storage_removal:
        return
    _has_warned = True
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                  "storage class. This should only matter to you if you are using storages directly.  To access "
                  "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
                  UserWarning, stacklevel=stacklevel + 1)


def _deprecated(method):  # noqa: ANN001, ANN202
    """A TypedStorage method that warns as PyTorch's does (its internal calls do not)."""
    def wrapper(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        _warn_typed_storage_removal(stacklevel=2)
        return method(self, *args, **kwargs)
    wrapper.__name__ = method.__name__
    wrapper.__qualname__ = method.__qualname__
    wrapper.__doc__ = method.__doc__
    return wrapper


# ---- helpers over byte tensors ---------------------------------------------------------------------


def _legacy_name(dtype: _C.dtype) -> str:
    return _LEGACY_NAMES.get(dtype) or repr(dtype).removeprefix("ember.")


def _bytes_of(tensor: _C.Tensor) -> _C.Tensor:
    """The whole storage under `tensor`, as a 1-d uint8 tensor sharing its memory."""
    return _C._reinterpret(tensor, _C.uint8, [_C._storage_nbytes(tensor)], [1], 0)


def _index(value: object, what: str) -> builtins.int:
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an int, but got {type(value).__name__}") from None


def _int_list(values: object, what: str) -> list[builtins.int]:
    if isinstance(values, (builtins.int, str, bytes, _C.Tensor)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{what} must be a tuple of ints, but got {type(values).__name__}")
    return [_index(v, f"each entry of {what}") for v in values]


def _check_size(size: builtins.int, who: str) -> builtins.int:
    if size < 0:
        raise RuntimeError(f"{who}: expected a non-negative size, but got {size}")
    return size


def _is_size(arg: object) -> builtins.bool:
    return isinstance(arg, (builtins.int, np.integer)) and not isinstance(arg, builtins.bool)


def _is_data(arg: object) -> builtins.bool:
    return hasattr(arg, "__len__") and hasattr(arg, "__getitem__") and not isinstance(arg, (str, _C.Tensor, Storages))


def _dtype_arg(dtype: object) -> _C.dtype:
    if dtype is None:
        return _C.get_default_dtype()
    if not isinstance(dtype, _C.dtype):
        raise RuntimeError(f"expected ember.dtype, but got {type(dtype)}")
    return dtype


def _device_of(device: object) -> _C.device | None:
    return None if device is None else _C.device(device)


def _combination_error(who: str, args: tuple, kwargs: dict) -> TypeError:
    got = [type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()]
    return TypeError(f"{who} received an invalid combination of arguments - got ({', '.join(got)}); it takes no "
                     f"argument, an int size, a sequence of values, or wrap_storage=UntypedStorage")


def _new_bytes(args: tuple, dtype: _C.dtype, device: object, who: str) -> _C.Tensor:
    """The byte tensor of a new storage of `dtype` elements: () empty, (size,) uninitialized,
    (sequence,) the values converted to dtype (PyTorch's storage constructors)."""
    from . import empty, tensor

    if len(args) > 1:
        raise _combination_error(who, args, {})
    arg = args[0] if args else 0
    if _is_size(arg):
        made = empty([_check_size(builtins.int(arg), who)], dtype=dtype)
    elif isinstance(arg, (bytes, bytearray, memoryview)) and dtype == _C.uint8:
        made = _C.from_numpy(np.frombuffer(arg, dtype=np.uint8).copy())
    elif _is_data(arg) and dtype == _C.uint8:
        wrong = next((v for v in arg if not isinstance(v, builtins.int)), None)
        if wrong is not None:
            raise RuntimeError(f"{who}: tried to construct a storage from a sequence ({type(arg).__name__}), but "
                               f"one of the items was of type {type(wrong).__name__} instead of int")
        outside = next((v for v in arg if not 0 <= v <= 255), None)
        if outside is not None:
            raise RuntimeError(f"value cannot be converted to type uint8 without overflow: {outside}")
        made = tensor(list(arg), dtype=_C.uint8)
    elif _is_data(arg):
        made = tensor(list(arg), dtype=dtype)
    else:
        raise _combination_error(who, args, {})
    device = _device_of(device)
    if device is not None and device.type != "cpu":
        made = made.to(device)
    return _bytes_of(made)


def _swap_byte_order(data: np.ndarray, dtype: _C.dtype) -> np.ndarray:
    """`data` (uint8, whole elements of dtype) with each element's bytes reversed; a complex
    number's two parts are swapped separately."""
    unit = dtype.itemsize // 2 if dtype.is_complex else dtype.itemsize
    return np.ascontiguousarray(data.reshape(-1, unit)[:, ::-1]).reshape(-1) if unit > 1 else data.copy()


def _native_order(byte_order: object, dtype: _C.dtype) -> builtins.bool:
    if byte_order is None:
        if dtype.itemsize > 1:
            raise RuntimeError(f"from_buffer(): byte_order ('big', 'little' or 'native') is required for {dtype}")
        return True
    if byte_order not in _BYTE_ORDERS:
        raise ValueError(f"invalid byte_order {byte_order!r} (expected 'big', 'little', or 'native')")
    return byte_order in ("native", sys.byteorder)


def _bytes_from_buffer(buffer: object, byte_order: object, count: object, offset: object,
                       dtype: _C.dtype) -> _C.Tensor:
    """The bytes of `count` elements of dtype read from `buffer` at byte `offset` in `byte_order`,
    copied and in native order (storage.from_buffer)."""
    raw = np.frombuffer(memoryview(buffer).cast("B"), dtype=np.uint8)
    count, offset = _index(count, "count"), _index(offset, "offset")
    native = _native_order(byte_order, dtype)
    if offset < 0 or offset > raw.size:
        raise ValueError(f"offset must be non-negative and no greater than buffer length ({raw.size}), but got "
                         f"{offset}")
    left = raw.size - offset
    if count < 0:
        if left % dtype.itemsize:
            raise ValueError(f"buffer size ({left}) must be a multiple of element size ({dtype.itemsize})")
        count = left // dtype.itemsize
    elif count * dtype.itemsize > left:
        raise ValueError(f"buffer has only {left // dtype.itemsize} elements after offset {offset}, but specified a "
                         f"size of {count}")
    data = raw[offset:offset + count * dtype.itemsize]
    return _bytes_of(_C.from_numpy(data.copy() if native else _swap_byte_order(data, dtype)))


def _map_file(filename: object, shared: builtins.bool, nbytes: builtins.int) -> _C.Tensor:
    """The first `nbytes` bytes of a file, mapped (from_file): with shared, writes reach the file
    and the file is created or lengthened as needed; without, writes stay private."""
    from . import empty

    path = os.fspath(filename)
    _check_size(nbytes, "from_file()")
    try:
        handle = open(path, "r+b" if shared else "rb")  # noqa: SIM115 - closed below; the mapping outlives it
    except FileNotFoundError:
        if not shared:
            raise RuntimeError(f"unable to open file <{path}> in read-only mode: No such file or directory (2)") from None
        handle = open(path, "w+b")  # noqa: SIM115
    except OSError as e:
        raise RuntimeError(f"unable to open file <{path}> in {'read-write' if shared else 'read-only'} mode: "
                           f"{e.strerror} ({e.errno})") from None
    with handle:
        size = os.fstat(handle.fileno()).st_size
        if size < nbytes:
            if not shared:
                raise RuntimeError(f"file <{path}> size <{size}> is smaller than the required mapping size <{nbytes}>")
            handle.truncate(nbytes)
        if nbytes == 0:
            return empty([0], dtype=_C.uint8)
        return _C.from_numpy(np.memmap(handle, dtype=np.uint8, mode="r+" if shared else "c", shape=(nbytes,)))


def _check_value_fits_byte(value: object) -> builtins.int:
    if not isinstance(value, builtins.int):
        raise RuntimeError(f"can only set storage content with a int types, but got {type(value).__name__} instead")
    if not 0 <= value <= 255:
        raise RuntimeError(f"value cannot be converted to type uint8 without overflow: {value}")
    return builtins.int(value)


# ---- what both storage kinds share -----------------------------------------------------------------


class _StorageCommon:
    """Methods written once over `self._untyped()` (the bytes) and `self._element()` (the dtype
    elements are read as)."""

    __slots__ = ()
    is_sparse = False
    is_sparse_csr = False

    def __len__(self) -> builtins.int:
        return self.size()

    def __iter__(self):  # noqa: ANN204
        return iter(self.tolist())

    def __copy__(self):  # noqa: ANN204
        return self.clone()

    def __deepcopy__(self, memo: dict):  # noqa: ANN204
        if id(self) not in memo:
            memo[id(self)] = self.clone()
        return memo[id(self)]

    def __str__(self) -> str:
        items = " " + "\n ".join(str(v) for v in self.tolist())
        return f"{items}\n[{self._describe()} of size {len(self)}]"

    __repr__ = __str__

    @property
    def device(self) -> _C.device:
        return self._untyped()._bytes.device

    @property
    def is_cuda(self) -> builtins.bool:
        return self.device.type == "cuda"

    def get_device(self) -> builtins.int | None:
        return self.device.index

    def is_pinned(self, device: object = "cuda") -> builtins.bool:
        return False  # Ember has no page-locked host memory

    def resizable(self) -> builtins.bool:
        return False  # Ember never resizes a storage

    def data_ptr(self) -> builtins.int:
        return self._untyped()._bytes.data_ptr()

    def cpu(self):  # noqa: ANN201
        return self if self.device.type == "cpu" else self.to("cpu")

    def _to(self, dtype: _C.dtype) -> TypedStorage:
        """A TypedStorage of this storage's elements converted to dtype, always a copy as PyTorch's."""
        _warn_typed_storage_removal(stacklevel=3)
        converted = _C.to_dtype(self._elements(), dtype, True)
        return TypedStorage(wrap_storage=UntypedStorage._wrap(_bytes_of(converted)), dtype=dtype, _internal=True)

    def type(self, dtype: object = None, non_blocking: builtins.bool = False) -> object:
        """The storage's type name; given a storage class or its name, a converted storage."""
        if dtype is None:
            return self._type_name()
        target = dtype
        if isinstance(dtype, str):
            short = dtype.removeprefix("ember.").removeprefix("torch.").removeprefix("storage.")
            target = UntypedStorage if short == "UntypedStorage" else _LEGACY_CLASSES.get(short)
        if target is UntypedStorage:
            return self._untyped()
        if isinstance(target, _LegacyStorageMeta) and target is not _LegacyStorage:
            return self._to(target.dtype)
        raise ValueError(f"type(): expected a storage class or its name, but got {dtype!r}")

    def _elements(self) -> _C.Tensor:
        """A 1-d tensor of this storage's elements over its memory."""
        raw = self._untyped()._bytes
        dtype = self._element()
        return raw if dtype == _C.uint8 else _C._reinterpret(raw, dtype, [raw.numel() // dtype.itemsize], [1], 0)


def _conversion(name: str, dtype: _C.dtype):  # noqa: ANN202
    def convert(self):  # noqa: ANN001, ANN202
        return self._to(dtype)
    convert.__name__ = name
    convert.__doc__ = f"A TypedStorage of this storage's elements converted to {dtype}."
    return convert


for _name, _dt in _CONVERSIONS:
    setattr(_StorageCommon, _name, _conversion(_name, _dt))


# ---- UntypedStorage --------------------------------------------------------------------------------


class UntypedStorage(_StorageCommon):
    """Bytes, on one device: what tensors view (torch.UntypedStorage). UntypedStorage(n) holds n
    uninitialized bytes, UntypedStorage(bytes or a sequence of ints) those values; indexing reads
    and writes bytes as ints, and a slice is an UntypedStorage over the same memory."""

    __slots__ = ("_bytes", "__weakref__")

    def __init__(self, *args: object, device: object = None) -> None:
        if builtins.len(args) == 1 and isinstance(args[0], builtins.bool):
            raise RuntimeError("ember.UntypedStorage(): Expected a sequence type, but got bool")
        self._bytes = _new_bytes(args, _C.uint8, device, "ember.UntypedStorage()")
        _register(self)

    @classmethod
    def _wrap(cls, raw: _C.Tensor) -> UntypedStorage:
        """The storage over `raw`, a 1-d uint8 tensor covering a whole native storage."""
        storage = cls.__new__(cls)
        storage._bytes = raw
        return _register(storage)

    def _untyped(self) -> UntypedStorage:
        return self

    def _element(self) -> _C.dtype:
        return _C.uint8

    def _describe(self) -> str:
        return f"ember.storage.UntypedStorage(device={self.device})"

    def _type_name(self) -> str:
        return "ember.storage.UntypedStorage"

    def nbytes(self) -> builtins.int:
        return self._bytes.numel()

    size = nbytes

    def element_size(self) -> builtins.int:
        return 1

    def untyped(self) -> UntypedStorage:
        return self

    def tolist(self) -> list[builtins.int]:
        return self._bytes.tolist()

    def _position(self, index: object) -> builtins.int | None:
        """index as a position in range, or None when out of range."""
        position = operator.index(index)
        position += self.nbytes() if position < 0 else 0
        return position if 0 <= position < self.nbytes() else None

    def _check_index(self, index: object) -> None:
        if not isinstance(index, (builtins.int, np.integer, builtins.slice)):
            raise TypeError(f"can't index a ember.UntypedStorage with {type(index).__name__}")
        if isinstance(index, builtins.slice) and index.step not in (None, 1):
            raise RuntimeError(f"Trying to slice with a step of {index.step}, but only a step of 1 is supported")

    def __getitem__(self, index: object) -> object:
        """A byte as an int, or for a slice an UntypedStorage over those bytes (the same memory)."""
        self._check_index(index)
        if isinstance(index, builtins.slice):
            return self._slice(index)
        position = self._position(index)
        if position is None:
            raise IndexError(f"index {index} out of range for storage of size {self.nbytes()}")
        return builtins.int(self._bytes[position].item())

    def _slice(self, index: builtins.slice) -> UntypedStorage:
        # A new native storage over the same memory (from_numpy keeps this one alive), so that its
        # bytes start at its own offset 0 as a PyTorch storage slice's do.
        if self.device.type != "cpu":
            raise NotImplementedError(f"slicing a storage on {self.device} is not implemented")
        start, stop, _ = index.indices(self.nbytes())
        return UntypedStorage._wrap(_C.from_numpy(self._bytes.numpy()[start:builtins.max(start, stop)]))

    def __setitem__(self, index: object, value: object) -> None:
        self._check_index(index)
        value = _check_value_fits_byte(value)
        if isinstance(index, builtins.slice):
            self._bytes[index] = value
            return
        position = self._position(index)
        if position is None:
            raise RuntimeError(f"index {index} out of range for storage of size {self.nbytes()}")
        self._bytes[position] = value

    def fill_(self, value: object) -> UntypedStorage:
        self._bytes.fill_(_check_value_fits_byte(value))
        return self

    def copy_(self, src: object, non_blocking: object = None) -> UntypedStorage:
        """Copy src's bytes (a storage of the same byte size) into this storage."""
        if not isinstance(src, Storages):
            raise TypeError(f"copy_(): argument 'src' (position 1) must be a storage, not {type(src).__name__}")
        other = src._untyped()
        if other.nbytes() != self.nbytes():
            raise RuntimeError(f"size does not match, self was {self.nbytes()} bytes but src was {other.nbytes()} bytes")
        self._bytes.copy_(other._bytes)
        return self

    def clone(self) -> UntypedStorage:
        return UntypedStorage._wrap(self._bytes.clone())

    def to(self, device: object = None, non_blocking: builtins.bool = False) -> UntypedStorage:
        device = _device_of(device)
        if device is None or device == self.device:
            return self
        return UntypedStorage._wrap(self._bytes.to(device))

    def new(self) -> UntypedStorage:
        """An empty storage on the same device."""
        return UntypedStorage(device=self.device)

    def byteswap(self, dtype: _C.dtype) -> None:
        """Reverse the bytes of each `dtype` element in place (a complex number's parts separately)."""
        if self.nbytes() % dtype.itemsize:
            raise RuntimeError(f"byteswap(): the storage's {self.nbytes()} bytes are not whole {dtype} elements")
        self._bytes.copy_(_C.from_numpy(_swap_byte_order(self._bytes.cpu().numpy(), dtype)))

    def share_memory_(self) -> UntypedStorage:
        """Move this storage into memory other processes can map, in place: every tensor over it
        follows. A no-op when it is there already and for CUDA storages, as in PyTorch."""
        _share(self._bytes)
        return self

    def is_shared(self) -> builtins.bool:
        return _shared_memory.is_shared(self._bytes)

    def __reduce__(self) -> tuple:
        return (_rebuild_untyped, (bytes(self._bytes.cpu().numpy()),))

    @classmethod
    def from_buffer(cls, buffer: object, byte_order: object = None, count: builtins.int = -1,
                    offset: builtins.int = 0, *, dtype: object = None) -> UntypedStorage:
        """A copy of `buffer`'s bytes; with dtype, of `count` dtype elements from byte `offset`,
        stored in native byte order (byte_order says the buffer's)."""
        dtype = _C.uint8 if dtype is None else _dtype_arg(dtype)
        return cls._wrap(_bytes_from_buffer(buffer, byte_order, count, offset, dtype))

    @classmethod
    def from_file(cls, filename: object, shared: builtins.bool = False, nbytes: builtins.int = 0) -> UntypedStorage:
        """The first `nbytes` bytes of a file, memory-mapped. shared=True writes changes back to the
        file (created or lengthened as needed); shared=False keeps them private."""
        return cls._wrap(_map_file(filename, builtins.bool(shared), _index(nbytes, "nbytes")))


# Each native storage's UntypedStorage while one is alive, so that x.untyped_storage() is
# x[1:].untyped_storage() as in PyTorch. An entry's object keeps its memory alive, so no other
# storage can start at that address meanwhile; empty storages get no entry.
_LIVE: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def _key(raw: _C.Tensor) -> tuple:
    return (str(raw.device), raw.data_ptr(), raw.numel())


def _register(storage: UntypedStorage) -> UntypedStorage:
    if storage._bytes.numel():
        _LIVE.setdefault(_key(storage._bytes), storage)
    return storage


def _share(tensor: _C.Tensor, strategy: str | None = None) -> None:
    """Move tensor's storage into shared memory; its live UntypedStorage follows it to the new key."""
    raw = _bytes_of(tensor)
    old = _key(raw)
    if _shared_memory.share(raw, strategy):
        live = _LIVE.pop(old, None)
        if live is not None:
            _LIVE[_key(raw)] = live


def _rebuild_untyped(data: bytes) -> UntypedStorage:
    return UntypedStorage(data)


# ---- TypedStorage and the legacy classes -----------------------------------------------------------


class TypedStorage(_StorageCommon):
    """An UntypedStorage read as elements of one dtype (torch.TypedStorage, deprecated there:
    its methods warn once per process). TypedStorage(n, dtype=...) holds n uninitialized
    elements, TypedStorage(sequence, dtype=...) those values, and
    TypedStorage(wrap_storage=untyped, dtype=...) views an UntypedStorage."""

    __slots__ = ("_untyped_storage", "dtype", "__weakref__")

    def __init__(self, *args: object, device: object = None, dtype: object = None, wrap_storage: object = None,
                 _internal: builtins.bool = False) -> None:
        if not _internal:
            _warn_typed_storage_removal(stacklevel=2)
        self.dtype = _dtype_arg(dtype)
        if wrap_storage is None:
            wrap_storage = UntypedStorage._wrap(_new_bytes(args, self.dtype, device, "TypedStorage.__init__"))
        elif args or device is not None:
            raise _combination_error("TypedStorage.__init__", args, {"wrap_storage": wrap_storage, "device": device})
        elif not isinstance(wrap_storage, UntypedStorage):
            raise TypeError(f"expected wrap_storage to be an UntypedStorage, but got {type(wrap_storage).__name__}")
        self._untyped_storage = wrap_storage

    def _untyped(self) -> UntypedStorage:
        return self._untyped_storage

    def _element(self) -> _C.dtype:
        return self.dtype

    def _describe(self) -> str:
        return f"ember.storage.TypedStorage(dtype={self.dtype}, device={self.device})"

    def _type_name(self) -> str:
        legacy = _LEGACY_BY_DTYPE.get(self.dtype)
        return f"ember.{legacy.__name__}" if legacy is not None else "ember.storage.TypedStorage"

    def _size(self) -> builtins.int:
        return self._untyped_storage.nbytes() // self.dtype.itemsize

    def _new_wrapped_storage(self, untyped_storage: UntypedStorage) -> TypedStorage:
        return TypedStorage(wrap_storage=untyped_storage, dtype=self.dtype, _internal=True)

    @_deprecated
    def size(self) -> builtins.int:
        return self._size()

    @_deprecated
    def __len__(self) -> builtins.int:
        return self._size()

    @_deprecated
    def nbytes(self) -> builtins.int:
        return self._untyped_storage.nbytes()

    @_deprecated
    def element_size(self) -> builtins.int:
        return self.dtype.itemsize

    @_deprecated
    def untyped(self) -> UntypedStorage:
        return self._untyped_storage

    @_deprecated
    def tolist(self) -> list:
        return self._elements().tolist()

    def _position(self, index: object) -> builtins.int:
        if isinstance(index, builtins.slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        if not isinstance(index, (builtins.int, np.integer)):
            raise RuntimeError(f"can't index a {type(self)} with {type(index)}")
        position = builtins.int(index) + (self._size() if index < 0 else 0)
        if not 0 <= position < self._size():
            raise IndexError(f"index {index} out of range for storage of size {self._size()}")
        return position

    @_deprecated
    def __getitem__(self, index: object) -> object:
        """The element at `index` as a Python number."""
        return self._elements()[self._position(index)].item()

    @_deprecated
    def __setitem__(self, index: object, value: object) -> None:
        """Write value (a number, or a tensor for a slice) at index (an int or a slice)."""
        if isinstance(value, (str, bytes, list, tuple)):
            raise TypeError(f"can't assign a {type(value).__name__} to a storage of {self.dtype}")
        if isinstance(index, builtins.slice):
            self._elements()[index] = value
        else:
            self._elements()[self._position(index)] = value

    @_deprecated
    def fill_(self, value: object) -> TypedStorage:
        self._elements().fill_(value)
        return self

    @_deprecated
    def copy_(self, source: object, non_blocking: object = None) -> TypedStorage:
        """Copy source's bytes (a storage of the same byte size) into this storage."""
        self._untyped_storage.copy_(source, non_blocking)
        return self

    @_deprecated
    def clone(self) -> TypedStorage:
        return self._new_wrapped_storage(self._untyped_storage.clone())

    @_deprecated
    def cpu(self) -> TypedStorage:
        return _StorageCommon.cpu(self)

    @_deprecated
    def to(self, device: object = None, non_blocking: builtins.bool = False) -> TypedStorage:
        moved = self._untyped_storage.to(device, non_blocking)
        return self if moved is self._untyped_storage else self._new_wrapped_storage(moved)

    @_deprecated
    def data_ptr(self) -> builtins.int:
        return self._untyped_storage.data_ptr()

    @_deprecated
    def type(self, dtype: object = None, non_blocking: builtins.bool = False) -> object:
        return _StorageCommon.type(self, dtype, non_blocking)

    @_deprecated
    def share_memory_(self) -> TypedStorage:
        self._untyped_storage.share_memory_()
        return self

    @_deprecated
    def is_shared(self) -> builtins.bool:
        return self._untyped_storage.is_shared()

    @_deprecated
    def pickle_storage_type(self) -> str:
        """The legacy class name a checkpoint records for this dtype ("FloatStorage")."""
        legacy = _LEGACY_BY_DTYPE.get(self.dtype)
        if legacy is None:
            raise KeyError(f"dtype {self.dtype} is not recognized")
        return legacy.__name__

    def __reduce__(self) -> tuple:
        return (_rebuild_typed, (bytes(self._untyped_storage._bytes.cpu().numpy()), repr(self.dtype)))

    @classmethod
    def _class_dtype(cls, given: object) -> _C.dtype:
        """A legacy class's own dtype, else the given one (the default dtype when None)."""
        if issubclass(cls, _LegacyStorage) and cls is not _LegacyStorage:
            if given is not None:
                raise RuntimeError("from_buffer: 'dtype' can only be specified in UntypedStorage.from_buffer and "
                                   "TypedStorage.from_buffer")
            return cls.dtype
        return _dtype_arg(given)

    @classmethod
    def from_buffer(cls, buffer: object, byte_order: object = None, count: builtins.int = -1,
                    offset: builtins.int = 0, *, dtype: object = None) -> TypedStorage:
        """A copy of `count` elements read from `buffer` at byte `offset` in `byte_order`."""
        _warn_typed_storage_removal(stacklevel=2)
        dtype = cls._class_dtype(dtype)
        raw = _bytes_from_buffer(buffer, byte_order, count, offset, dtype)
        return TypedStorage(wrap_storage=UntypedStorage._wrap(raw), dtype=dtype, _internal=True)

    @classmethod
    def from_file(cls, filename: object, shared: builtins.bool = False, size: builtins.int = 0) -> TypedStorage:
        """`size` elements of the class's dtype, memory-mapped from a file (see UntypedStorage.from_file)."""
        _warn_typed_storage_removal(stacklevel=2)
        if not issubclass(cls, _LegacyStorage) or cls is _LegacyStorage:
            raise RuntimeError("from_file can only be called on derived classes")
        raw = _map_file(filename, builtins.bool(shared), _index(size, "size") * cls.dtype.itemsize)
        return TypedStorage(wrap_storage=UntypedStorage._wrap(raw), dtype=cls.dtype, _internal=True)


def _rebuild_typed(data: bytes, dtype_name: str) -> TypedStorage:
    dtype = getattr(_C, dtype_name.removeprefix("ember."))
    return TypedStorage(wrap_storage=UntypedStorage(data), dtype=dtype, _internal=True)


class _LegacyStorageMeta(type):
    """ember.FloatStorage(...) makes a TypedStorage of float32; isinstance checks the dtype."""

    def __instancecheck__(cls, obj: object) -> builtins.bool:
        if cls is _LegacyStorage:
            return type.__instancecheck__(cls, obj)
        return isinstance(obj, TypedStorage) and obj.dtype == cls.dtype

    def __call__(cls, *args: object, **kwargs: object) -> TypedStorage:
        if cls is _LegacyStorage:
            raise TypeError("_LegacyStorage is abstract: use a dtype's class such as ember.FloatStorage")
        if "device" in kwargs:
            raise RuntimeError(f"{cls.__name__}(): keyword argument 'device' cannot be specified")
        wrap = kwargs.pop("wrap_storage", None)
        if kwargs or (wrap is not None and args):
            raise _combination_error(f"{cls.__name__}()", args, kwargs)
        _warn_typed_storage_removal(stacklevel=2)
        return TypedStorage(*args, dtype=cls.dtype, wrap_storage=wrap, _internal=True)

    def __repr__(cls) -> str:
        return f"<class 'ember.{cls.__name__}'>"


class _LegacyStorage(TypedStorage, metaclass=_LegacyStorageMeta):
    __slots__ = ()


def _legacy_class(dtype: _C.dtype) -> type:
    name = f"{_legacy_name(dtype)}Storage"
    return _LegacyStorageMeta(name, (_LegacyStorage,), {"dtype": dtype, "__module__": "ember", "__slots__": (),
                                                        "__doc__": f"ember.{name}(size or sequence): a storage of "
                                                                   f"{dtype} (a TypedStorage)."})


_LEGACY_BY_DTYPE = {dtype: _legacy_class(dtype) for dtype in _LEGACY_NAMES}
_LEGACY_CLASSES = {cls.__name__: cls for cls in _LEGACY_BY_DTYPE.values()}
Storages = (UntypedStorage, TypedStorage)


# ---- tensors over storages -------------------------------------------------------------------------


def is_storage(obj: object) -> builtins.bool:
    """Whether obj is a storage object (an UntypedStorage or a TypedStorage)."""
    return isinstance(obj, Storages)


def default_storage_class() -> type:
    """ember.Storage: the legacy class of the default dtype (ember.FloatStorage by default)."""
    return _LEGACY_BY_DTYPE[_C.get_default_dtype()]


def _storage_bytes(source: object, dtype: _C.dtype) -> _C.Tensor:
    """The bytes of `source`, a storage that tensors of dtype may view (an UntypedStorage, or a
    TypedStorage of that dtype)."""
    if isinstance(source, TypedStorage) and source.dtype != dtype:
        raise RuntimeError(f"Expected a Storage of type {_legacy_name(dtype)} or an UntypedStorage, but got type "
                           f"{_legacy_name(source.dtype)} for argument 1 'storage'")
    return source._untyped()._bytes


def tensor_over(source: object, dtype: _C.dtype, storage_offset: object = None, size: object = None,
                stride: object = None) -> _C.Tensor:
    """A tensor of dtype over a storage object, or over a tensor's storage: the whole storage as
    1-d elements, or the geometry given (elements of dtype, the offset from the storage's start,
    contiguous strides unless given). Raises where the view would reach past the storage."""
    base = source if isinstance(source, _C.Tensor) else _storage_bytes(source, dtype)
    if storage_offset is None and size is None and stride is None:
        return _C._reinterpret(base, dtype, [_C._storage_nbytes(base) // dtype.itemsize], [1], 0)
    if storage_offset is None or size is None:
        raise TypeError("set_(): storage_offset and size go together (source, storage_offset, size, stride=())")
    offset = _index(storage_offset, "storage_offset")
    sizes = _int_list(size, "size")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if builtins.any(s < 0 for s in sizes):
        raise RuntimeError(f"Trying to create tensor with negative dimension {builtins.min(sizes)}: {sizes}")
    strides = _int_list(stride, "stride") if stride is not None else []
    if not strides:
        strides = [1] * len(sizes)
        for i in range(len(sizes) - 2, -1, -1):
            strides[i] = strides[i + 1] * builtins.max(sizes[i + 1], 1)
    if len(strides) != len(sizes):
        raise RuntimeError(f"unequal size length ({len(sizes)}) and stride length ({len(strides)})")
    return _C._reinterpret(base, dtype, sizes, strides, offset)


def from_file(filename: object, shared: object = None, size: builtins.int = 0, *, dtype: object = None,
              layout: object = None, device: object = None, pin_memory: builtins.bool = False,
              requires_grad: builtins.bool = False) -> _C.Tensor:
    """A 1-d tensor of `size` elements of dtype over a memory-mapped file (torch.from_file):
    shared=True writes changes back to the file (created or lengthened as needed), otherwise
    they stay private and the file must hold size * itemsize bytes."""
    dtype = _dtype_arg(dtype)
    device = _device_of(device)
    if device is not None and device.type != "cpu":
        raise RuntimeError(f"from_file(): a file can only be mapped into CPU memory, but got device {device}")
    count = _index(size, "size")
    raw = _map_file(filename, builtins.bool(shared), _check_size(count, "from_file()") * dtype.itemsize)
    out = _C._reinterpret(raw, dtype, [count], [1], 0)
    return out.requires_grad_() if requires_grad else out


# ---- Tensor methods and view(dtype) ----------------------------------------------------------------

def untyped_storage(self: _C.Tensor) -> UntypedStorage:
    """The storage under this tensor, all of it, sharing its memory (torch.Tensor.untyped_storage)."""
    raw = _bytes_of(self)
    live = _LIVE.get(_key(raw))
    return live if live is not None else UntypedStorage._wrap(raw)


def share_memory_(self: _C.Tensor) -> _C.Tensor:
    """Move the tensor's whole storage into memory other processes can map, in place, so every
    view of it follows (torch.Tensor.share_memory_). A no-op when it is there already and for
    CUDA tensors."""
    _share(self)
    return self


def is_shared(self: _C.Tensor) -> builtins.bool:
    """Whether the tensor's storage is in shared memory (always True for CUDA, as in PyTorch)."""
    return _shared_memory.is_shared(self)


def storage(self: _C.Tensor) -> TypedStorage:
    """The storage under this tensor as a TypedStorage of its dtype (deprecated in PyTorch)."""
    _warn_typed_storage_removal(stacklevel=2)
    return TypedStorage(wrap_storage=untyped_storage(self), dtype=self.dtype, _internal=True)


def storage_type(self: _C.Tensor) -> type | None:
    """The legacy storage class of this tensor's dtype (ember.FloatStorage), None without one."""
    _warn_typed_storage_removal(stacklevel=2)
    return _LEGACY_BY_DTYPE.get(self.dtype)


def view_dtype(self: _C.Tensor, dtype: _C.dtype) -> _C.Tensor:
    """self's memory read as dtype (torch.Tensor.view(dtype)). With a different element size the
    last dim must be contiguous and is rescaled, as are the other strides and the offset; no
    autograd history, as in PyTorch."""
    old, new = self.dtype.itemsize, dtype.itemsize
    sizes, strides, offset = list(self.shape), list(self.stride()), self.storage_offset()
    if old != new:
        what = f"to view {_legacy_name(self.dtype)} as {_legacy_name(dtype)} (different element sizes)"
        if self.dim() == 0:
            raise RuntimeError(f"self.dim() cannot be 0 {what}")
        if new > old:
            ratio = new // old
            if sizes[-1] % ratio:
                raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {sizes[-1]}")
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
        if new > old:
            if offset % ratio:
                raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got {offset}")
            for d, s in enumerate(strides[:-1]):
                if s % ratio:
                    raise RuntimeError(f"self.stride({d}) must be divisible by {ratio} {what}, but got {s}")
            strides = [s // ratio for s in strides[:-1]] + [1]
            sizes[-1] //= ratio
            offset //= ratio
        else:
            ratio = old // new
            strides = [s * ratio for s in strides[:-1]] + [1]
            sizes[-1] *= ratio
            offset *= ratio
    return _C._reinterpret(self, dtype, sizes, strides, offset)


def tensor_methods() -> dict[str, object]:
    return {"untyped_storage": untyped_storage, "storage": storage, "storage_type": storage_type,
            "share_memory_": share_memory_, "is_shared": is_shared}


__all__ = ["TypedStorage", "UntypedStorage"]
