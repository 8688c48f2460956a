"""ember.save / ember.load: PyTorch's checkpoint archive, loaded safely by default.

`ember.save(obj, f)` writes what `torch.save` writes (PyTorch >= 1.6, and as PyTorch 2.6 reads
it), so either library reads the other's files:

    archive/data.pkl             the object, pickled; each tensor pickled as
                                 torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
                                 requires_grad, OrderedDict()), its storage a persistent id
                                 ("storage", torch.FloatStorage, key, location, numel)
    archive/.format_version      "1"
    archive/.storage_alignment   "64"
    archive/byteorder            "little"
    archive/data/<key>           each storage's raw bytes, uncompressed, aligned to 64 bytes
    archive/version              "3"

A sparse tensor is pickled as PyTorch pickles one: torch._utils._rebuild_sparse_tensor(layout,
parts), the layout torch.serialization._get_layout("torch.sparse_csc") and the parts (indices,
values, torch.Size, is_coalesced) for sparse_coo or (compressed indices, plain indices, values,
torch.Size) for sparse_csr/csc/bsr/bsc; loading rebuilds it through the checking constructors.

The pickle names PyTorch's vocabulary (torch._utils._rebuild_tensor_v2, torch.FloatStorage,
torch.float32, torch.device, ...): names, not code. Ember's loader maps them to its own
rebuild functions and never imports torch. Tensors that view one memory block share one
storage record (saved once, only the span the views reach), and load as views of one block.

`ember.load(f)` reads those archives, PyTorch's format before 1.6 (a run of pickles followed by
the storages' bytes; `ember.save(..., _use_new_zipfile_serialization=False)` writes it too) and
safetensors files (see _safetensors.py). With the default weights_only=True the pickle is
interpreted by _weights_only_unpickler.py, which only builds data; weights_only=False runs
Python's unpickler, which can run any code the file names.

Errors (Note [checkpoint errors]):
- RuntimeError: the container around the pickle is broken (for a zip: not a zip, truncated,
  entries compressed, encrypted, repeated, overlapping or out of bounds, CRC mismatch, no
  data.pkl, unknown byte order; for the legacy format: its header pickles, key list or storage
  bytes), the file is in no format Ember reads (a bare pickle included), or a storage's device
  is unavailable (CUDA on a CPU-only build), as in PyTorch;
- pickle.UnpicklingError: what data.pkl says is not allowed or not valid: an unsupported
  global (with PyTorch 2.6's guidance), a malformed opcode stream, repeated dict keys, nesting
  deeper than MAX_DEPTH, a tensor whose size, stride or offset is invalid or does not fit its
  storage, a storage reference to a missing or mis-sized record. Under weights_only=True every
  error raised while data.pkl is interpreted arrives as UnpicklingError ("Weights only load
  failed. ..."), its cause chained, except the device error above and whatever the caller's
  map_location function raises;
- ValueError: a malformed safetensors file.
Wrong arguments (not the file's fault) are TypeError or ValueError before anything is read.
"""

from __future__ import annotations

import _compat_pickle
import collections
import contextlib
import io
import math
import mmap as _mmap
import os
import pickle
import pickletools
import struct
import sys
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from . import _C, _safetensors
from . import _weights_only_unpickler as _wo
from ._buffers import dtype_name, tensor_from_buffer

__all__ = ["save", "load", "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL"]

DEFAULT_PROTOCOL = 2  # torch.save's default, the only protocol PyTorch's weights_only loader reads
_ALIGNMENT = 64
_MAX_INT64 = (1 << 63) - 1
_ARCHIVE = "archive"

# dtype -> PyTorch's typed storage class. float8 has none: PyTorch stores it as an
# UntypedStorage (numel counts bytes) and passes the dtype to _rebuild_tensor_v3.
_STORAGE_CLASSES = {
    "float32": "FloatStorage", "float64": "DoubleStorage", "float16": "HalfStorage",
    "bfloat16": "BFloat16Storage", "int64": "LongStorage", "int32": "IntStorage",
    "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage", "bool": "BoolStorage",
    "complex64": "ComplexFloatStorage", "complex128": "ComplexDoubleStorage",
}
_DTYPES = {dtype_name(d): d for d in _C._all_dtypes}
# PyTorch dtypes Ember lacks: named in the error rather than reported as unknown globals.
# A quantized tensor's storage: PyTorch's typed class, and the integer dtype its bytes load as
# (torch._utils._rebuild_qtensor then puts the quantizer back).
# quint4x2 / quint2x4: the packed bytes (Note [sub-byte quantized tensors]), as PyTorch stores them.
_QUANTIZED_STORAGES = {"quint8": ("QUInt8Storage", "uint8"), "qint8": ("QInt8Storage", "int8"),
                       "qint32": ("QInt32Storage", "int32"), "quint4x2": ("QUInt4x2Storage", "uint8"),
                       "quint2x4": ("QUInt2x4Storage", "uint8")}
_SUB_BYTE_STORAGES = {"QUInt4x2Storage": _DTYPES["quint4x2"], "QUInt2x4Storage": _DTYPES["quint2x4"]}
_TORCH_ONLY_DTYPES = ("uint16", "uint32", "uint64", "float8_e8m0fnu", "float4_e2m1fn_x2", "int1", "int2", "int3", "int4", "int5", "int6", "int7", "uint1", "uint2",
                      "uint3", "uint4", "uint5", "uint6", "uint7")


def _parameter_class() -> type:
    from .nn.parameter import Parameter  # imported late: ember.nn imports this package's top level
    return Parameter


# ============================================================================= saving

class _FormatName:
    """A name in the format's vocabulary, pickled as the GLOBAL `module name`."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def __call__(self, *args: Any) -> Any:  # pickle requires a reduce function to be callable
        raise TypeError(f"{self.module}.{self.name} is a name in the checkpoint format, not a function")


_REBUILD_TENSOR_V2 = _FormatName("torch._utils", "_rebuild_tensor_v2")
_REBUILD_TENSOR_V3 = _FormatName("torch._utils", "_rebuild_tensor_v3")
_REBUILD_PARAMETER = _FormatName("torch._utils", "_rebuild_parameter")
_REBUILD_PARAMETER_WITH_STATE = _FormatName("torch._utils", "_rebuild_parameter_with_state")
_REBUILD_FROM_TYPE_V2 = _FormatName("torch._tensor", "_rebuild_from_type_v2")
_REBUILD_SPARSE = _FormatName("torch._utils", "_rebuild_sparse_tensor")
_GET_LAYOUT = _FormatName("torch.serialization", "_get_layout")
_DEVICE = _FormatName("torch", "device")
_UNTYPED_STORAGE = _FormatName("torch.storage", "UntypedStorage")
_REBUILD_QTENSOR = _FormatName("torch._utils", "_rebuild_qtensor")
_TYPED_STORAGES = {name: _FormatName("torch", cls) for name, cls in _STORAGE_CLASSES.items()}
_TYPED_STORAGES.update({name: _FormatName("torch", cls) for name, (cls, _) in _QUANTIZED_STORAGES.items()})


class _Int64Slot:
    """An integer the pickle needs before it is known (a storage's size, a view's offset into
    it: both depend on every view of that storage). It is written as LONG1 with 8 bytes at a
    recorded position and filled in once pickling has seen every tensor."""

    __slots__ = ("compute", "positions")

    def __init__(self, compute: Callable[[], int]) -> None:
        self.compute, self.positions = compute, []


class _Storage:
    """One memory block, saved as the span [lo, hi) (in elements) its views reach."""

    def __init__(self, key: str, dtype: _C.dtype, source: _C.Tensor, lo: int, hi: int) -> None:
        self.key, self.dtype, self.source, self.lo, self.hi = key, dtype, source, lo, hi
        self.location = str(source.device)
        self.numel = _Int64Slot(lambda: self.hi - self.lo)

    def data(self) -> Any:
        """The span's bytes: a view of the tensor's memory where NumPy can give one."""
        n = self.hi - self.lo
        if n == 0:
            return b""
        flat = self.source.as_strided([n], [1], self.lo)
        if flat.device.type != "cpu":
            flat = flat.to("cpu")
        if dtype_name(self.dtype) in ("bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                                      "complex32", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2"):
            return _C._to_bytes(flat)
        return memoryview(flat.numpy()).cast("B")


class _StorageRef:
    __slots__ = ("storage",)

    def __init__(self, storage: _Storage) -> None:
        self.storage = storage


def _python_state(t: _C.Tensor) -> dict:
    return dict(vars(t)) if hasattr(t, "__dict__") else {}


class _Pickler(pickle._Pickler):  # type: ignore[name-defined] - the pure-Python pickler
    """Python's reference pickler, speaking the checkpoint format.

    The pure-Python pickler is used because only it lets a subclass write a GLOBAL for a name
    that is not importable here (torch._utils._rebuild_tensor_v2): the C pickler insists on
    importing every name it writes. Only the object graph is pickled; tensor data is not.
    Framing (protocol 4+) is off so that byte positions in the output are final, which the
    integer slots rely on.
    """

    dispatch = pickle._Pickler.dispatch.copy()  # type: ignore[attr-defined]

    def __init__(self, out: io.BytesIO, protocol: int, legacy: bool = False) -> None:
        super().__init__(out, protocol)
        self._out, self._legacy = out, legacy
        self._parameter = _parameter_class()
        self.storages: dict[Any, _Storage] = {}
        self.slots: list[_Int64Slot] = []
        self._class_names = {_C.Tensor: ("torch", "Tensor"), self._parameter: ("torch.nn.parameter", "Parameter"),
                             _C.Size: ("torch", "Size")}

    def dump(self, obj: Any) -> None:
        if self.proto >= 2:
            self.write(pickle.PROTO + struct.pack("<B", self.proto))
        self.save(obj)
        self.write(pickle.STOP)

    def _write_global(self, obj: Any, module: str, name: str) -> None:
        if self.proto >= 4:
            self.save(module)
            self.save(name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + f"{module}\n{name}\n".encode())
        self.memoize(obj)

    def save_global(self, obj: Any, name: str | None = None) -> None:
        spelled = self._class_names.get(obj) if isinstance(obj, type) else None
        if spelled is None:
            super().save_global(obj, name)
        else:
            self._write_global(obj, *spelled)

    def _save_format_name(self, obj: _FormatName) -> None:
        self._write_global(obj, obj.module, obj.name)

    def _save_dtype(self, obj: _C.dtype) -> None:
        self._write_global(obj, "torch", dtype_name(obj))

    def _save_slot(self, slot: _Int64Slot) -> None:
        self.write(pickle.LONG1 + b"\x08")
        slot.positions.append(self._out.tell())
        self.write(bytes(8))
        self.slots.append(slot)

    dispatch[_FormatName] = _save_format_name
    dispatch[_C.dtype] = _save_dtype
    dispatch[_Int64Slot] = _save_slot

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is not _StorageRef:
            return None
        storage = obj.storage
        name = dtype_name(storage.dtype)
        storage_type = _TYPED_STORAGES.get(name, _UNTYPED_STORAGE)
        numel = storage.numel
        if storage_type is _UNTYPED_STORAGE:  # counts bytes
            size = storage.dtype.itemsize
            numel = _Int64Slot(lambda: (storage.hi - storage.lo) * size)
        if self._legacy:  # PyTorch's format before 1.6 adds a view record, always None since 1.0
            return ("storage", storage_type, storage.key, storage.location, numel, None)
        return ("storage", storage_type, storage.key, storage.location, numel)

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, _C.Tensor):
            return self._reduce_tensor(obj)
        sparse = sys.modules.get("ember.sparse")
        if sparse is not None and isinstance(obj, sparse.SparseTensor):
            return _reduce_sparse(obj)
        if sparse is not None and isinstance(obj, sparse.layout):  # PyTorch: _get_layout("torch.sparse_coo")
            return (_GET_LAYOUT, ("torch." + repr(obj).removeprefix("ember."),))
        if isinstance(obj, _C.device):
            return (_DEVICE, (obj.type,) if obj.index is None else (obj.type, obj.index))
        return NotImplemented

    def _reduce_tensor(self, t: _C.Tensor) -> tuple:
        hooks = collections.OrderedDict()  # PyTorch never saves hooks: an empty dict
        if isinstance(t, self._parameter):
            state = _python_state(t)
            data = _C.Tensor.detach(t)
            if state:
                return (_REBUILD_PARAMETER_WITH_STATE, (data, t.requires_grad, hooks, state))
            return (_REBUILD_PARAMETER, (data, t.requires_grad, hooks))
        quantizer = _C._quantizer(t)
        if quantizer is not None:
            return self._reduce_quantized(t, quantizer, hooks)
        storage, offset = self._storage_of(t)
        args = (_StorageRef(storage), _Int64Slot(lambda: offset - storage.lo), tuple(t.shape), tuple(t.stride()),
                t.requires_grad, hooks)
        func = _REBUILD_TENSOR_V2
        if dtype_name(t.dtype) not in _STORAGE_CLASSES:
            func, args = _REBUILD_TENSOR_V3, (*args, t.dtype)
        state = _python_state(t)
        if type(t) is not _C.Tensor or state:
            return (_REBUILD_FROM_TYPE_V2, (func, type(t), args, state))
        return (func, args)

    def _reduce_quantized(self, t: _C.Tensor, quantizer: tuple, hooks: Any) -> tuple:
        """As PyTorch pickles a quantized tensor: _rebuild_qtensor(storage, offset, size, stride,
        (qscheme, scale, zero_point) or (qscheme, scales, zero_points, axis), requires_grad, hooks),
        its storage a QUInt8Storage (QInt8Storage, QInt32Storage) of the integers."""
        from ._quantized import _QSCHEMES, SUB_BYTE_BITS

        code, scale, zero_point, scales, points, axis = quantizer
        if t.dtype in SUB_BYTE_BITS:  # always contiguous at offset 0: its bytes are the storage
            per_byte = 8 // SUB_BYTE_BITS[t.dtype]
            ints = _C._reinterpret(t, _C.uint8, [-(-t.numel() // per_byte)], [1], 0)
        else:
            ints = _C._reinterpret(t, _DTYPES[_QUANTIZED_STORAGES[dtype_name(t.dtype)][1]], list(t.shape),
                                   list(t.stride()), t.storage_offset())
        storage, offset = self._storage_of(ints, t.dtype)
        qscheme = _FormatName("torch", _QSCHEMES[code].name)
        params = (qscheme, scale, zero_point) if scales is None else (qscheme, scales, points, axis)
        return (_REBUILD_QTENSOR, (_StorageRef(storage), _Int64Slot(lambda: offset - storage.lo), tuple(t.shape),
                                   tuple(t.stride()), params, False, hooks))

    def _storage_of(self, t: _C.Tensor, dtype: _C.dtype | None = None) -> tuple[_Storage, int]:
        """The storage record `t` is saved in, and `t`'s offset into the memory block; `dtype`, the
        record's dtype when it is not t's (a quantized tensor's integers)."""
        dtype = t.dtype if dtype is None else dtype
        source = _C.Tensor.detach(t)
        if t.numel() == 0:  # needs no bytes: one empty record per dtype and device
            key, lo, hi = ("empty", dtype_name(dtype), str(t.device)), 0, 0
        else:
            # The block's start identifies it: every view of it computes the same address.
            key = (str(t.device), t.data_ptr() - t.storage_offset() * dtype.itemsize)
            lo = t.storage_offset()
            hi = lo + sum((s - 1) * st for s, st in zip(t.shape, t.stride(), strict=True)) + 1
        storage = self.storages.get(key)
        if storage is None:
            storage = self.storages[key] = _Storage(str(len(self.storages)), dtype, source, lo, hi)
        elif storage.dtype != dtype:
            raise RuntimeError(
                f"[save] cannot save tensors that view the same memory as different dtypes ({storage.dtype} and "
                f"{dtype}, such as a complex tensor and its view_as_real), as PyTorch cannot either; "
                "save a clone of one of them")
        storage.lo, storage.hi = min(storage.lo, lo), max(storage.hi, hi)
        return storage, lo


def _reduce_sparse(t: Any) -> tuple:
    """A sparse tensor as PyTorch pickles one: _rebuild_sparse_tensor(layout, parts), the parts
    (indices, values, torch.Size, is_coalesced) for sparse_coo and (compressed_indices,
    plain_indices, values, torch.Size) for sparse_csr, sparse_csc, sparse_bsr and sparse_bsc
    (crow/col indices for the row-compressed layouts, ccol/row indices for the others)."""
    values = t._vals.detach()
    if t.requires_grad and t.is_leaf:
        values.requires_grad_(True)  # what makes the loaded tensor a leaf that requires grad again
    layout, size = t.layout, _C.Size(tuple(t.shape))
    if t.is_sparse:
        return (_REBUILD_SPARSE, (layout, (t._indices(), values, size, t.is_coalesced())))
    return (_REBUILD_SPARSE, (layout, (t._cidx, t._pidx, values, size)))


def _sparse_request(args: tuple) -> tuple:
    """The arguments of torch._utils._rebuild_sparse_tensor(layout, parts), checked for their
    types: (layout, index tensors, values, size, is_coalesced or None). The indices themselves
    are checked by _build_sparse, once the storages hold their bytes."""
    from . import sparse

    if len(args) != 2 or type(args[1]) is not tuple:
        raise _invalid("_rebuild_sparse_tensor takes a layout and a tuple of parts")
    layout, parts = args
    compressed = any(layout is c for c in (sparse.sparse_csr, sparse.sparse_csc, sparse.sparse_bsr, sparse.sparse_bsc))
    coalesced = None
    if layout is sparse.sparse_coo and len(parts) in (3, 4):  # (indices, values, size[, is_coalesced])
        *indices, values, size = parts[:3]
        coalesced = parts[3] if len(parts) == 4 else None
    elif compressed and len(parts) == 4:  # (compressed_indices, plain_indices, values, size)
        *indices, values, size = parts
    else:
        raise _invalid(f"_rebuild_sparse_tensor: Ember rebuilds sparse_coo (3 or 4 parts) and sparse_csr, sparse_csc, "
                       f"sparse_bsr and sparse_bsc (4 parts), but got {_wo._describe(layout)} with {len(parts)} parts")
    # the size is a torch.Size (a tuple subclass) in PyTorch's files, a plain tuple in older Ember files
    if not all(isinstance(p, _C.Tensor) for p in (*indices, values)) or not isinstance(size, (tuple, list)) or not all(
            type(n) is int for n in size) or not (coalesced is None or type(coalesced) is bool):
        raise _invalid("_rebuild_sparse_tensor: the parts must be tensors, a size of integers and a bool")
    return layout, tuple(indices), values, tuple(size), coalesced


def _build_sparse(request: tuple) -> Any:
    """A sparse tensor built through the public constructors, so every index is checked before
    anything uses it: a file cannot make a sparse tensor that reads or writes out of bounds
    (PyTorch checks the invariants of the sparse tensors it loads too)."""
    from . import sparse

    layout, indices, values, size, coalesced = request
    grad = values.requires_grad
    values = values.detach()
    try:
        if layout is sparse.sparse_coo:
            return sparse.sparse_coo_tensor(indices[0], values, size, requires_grad=grad, is_coalesced=coalesced)
        return sparse.sparse_compressed_tensor(*indices, values, size, layout=layout, requires_grad=grad)
    except (RuntimeError, NotImplementedError, ValueError, TypeError, IndexError) as err:
        raise _invalid(f"the checkpoint holds an invalid sparse tensor: {err}") from None


def _get_layout(*args: Any) -> Any:
    """torch.serialization._get_layout: a layout from its name."""
    from . import sparse

    layouts = {f"torch.{name}": getattr(sparse, name) for name in (
        "strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc")}
    if len(args) != 1 or type(args[0]) is not str or args[0] not in layouts:
        raise _invalid(f"_get_layout: Ember has the layouts {sorted(layouts)}, not {_wo._describe(args)}")
    return layouts[args[0]]


def _zip_records(out: BinaryIO, records: list[tuple[str, Any]]) -> None:
    """Write `records` into a zip archive: stored uncompressed, each entry's data aligned to
    _ALIGNMENT bytes (padding in the local header's extra field, as PyTorch does), so a
    mapped file gives aligned tensors."""
    with zipfile.ZipFile(out, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, data in records:
            info = zipfile.ZipInfo(f"{_ARCHIVE}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.file_size = len(data)
            zip64 = info.file_size * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own test, so it agrees
            fixed = 30 + len(info.filename.encode("ascii")) + (20 if zip64 else 0) + 4
            pad = -(zf.fp.tell() + fixed) % _ALIGNMENT
            info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # extra field "FB", as PyTorch's writer
            with zf.open(info, mode="w", force_zip64=zip64) as entry:
                entry.write(data)


def _write_legacy(out: BinaryIO, pickled: bytes, storages: list[_Storage], protocol: int) -> None:
    """PyTorch's format before 1.6 (_use_new_zipfile_serialization=False): pickles of the magic
    number, protocol version and sys_info, the object's pickle, the sorted storage keys, then
    each storage as an int64 element count and its bytes."""
    sys_info = {"protocol_version": _LEGACY_PROTOCOL, "little_endian": True,
                "type_sizes": {"short": 2, "int": 4, "long": 4}}
    for value in (_LEGACY_MAGIC, _LEGACY_PROTOCOL, sys_info):
        out.write(pickle.dumps(value, protocol=protocol))
    out.write(pickled)
    by_key = {s.key: s for s in storages}
    keys = sorted(by_key)  # PyTorch writes the storages in sorted key order
    out.write(pickle.dumps(keys, protocol=protocol))
    for key in keys:
        storage = by_key[key]
        count = storage.hi - storage.lo
        if dtype_name(storage.dtype) not in _STORAGE_CLASSES:
            count *= storage.dtype.itemsize  # an UntypedStorage counts bytes
        out.write(struct.pack("<q", count))
        out.write(storage.data())


def save(obj: Any, f: str | os.PathLike | BinaryIO, pickle_module: Any = pickle,
         pickle_protocol: int = DEFAULT_PROTOCOL, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save `obj` (anything picklable: tensors, state dicts, whole modules, NumPy arrays,
    optimizer states) to `f`, a path or a writable binary file, as torch.save does.

    Tensor data is stored outside the pickle, each memory block once. pickle_protocol 2 (the
    default) is the one PyTorch's weights_only loader reads; 2 to 5 are accepted.
    _use_new_zipfile_serialization=False writes PyTorch's format before 1.6 (not mmap-able).
    The safetensors layout is written by ember.serialization.save_safetensors.
    """
    if pickle_module is not pickle:
        raise ValueError("[save] pickle_module must be the standard pickle module: Ember pickles with its own "
                         "subclass of pickle's reference pickler")
    if type(pickle_protocol) is not int or not 2 <= pickle_protocol <= pickle.HIGHEST_PROTOCOL:
        raise ValueError(f"[save] pickle_protocol must be an integer from 2 to {pickle.HIGHEST_PROTOCOL}, "
                         f"but got {pickle_protocol!r}")
    if sys.byteorder != "little":
        raise NotImplementedError("[save] writing checkpoints on a big-endian machine is not supported")

    buffer = io.BytesIO()
    pickler = _Pickler(buffer, pickle_protocol, legacy=not _use_new_zipfile_serialization)
    pickler.dump(obj)
    data = buffer.getbuffer()
    for slot in pickler.slots:
        value = slot.compute().to_bytes(8, "little", signed=True)
        for position in slot.positions:
            data[position:position + 8] = value
    del data  # release the export so the buffer can be read as bytes
    pickled, storages = buffer.getvalue(), list(pickler.storages.values())
    if _use_new_zipfile_serialization:
        records: list[tuple[str, Any]] = [("data.pkl", pickled), (".format_version", b"1"),
                                          (".storage_alignment", str(_ALIGNMENT).encode())]
        if not _disable_byteorder_record:
            records.append(("byteorder", sys.byteorder.encode()))
        records += [(f"data/{s.key}", s.data()) for s in storages]
        records.append(("version", b"3\n"))

        def write(out: BinaryIO) -> None:
            _zip_records(out, records)
    else:
        def write(out: BinaryIO) -> None:
            _write_legacy(out, pickled, storages, pickle_protocol)

    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            write(out)
    elif hasattr(f, "write"):
        write(f)
    else:
        raise TypeError(f"[save] expected a path or a writable binary file, but got {type(f).__name__}")


# ============================================================================= the archive

def _broken(message: str) -> RuntimeError:
    return RuntimeError(f"[load] invalid checkpoint archive: {message}")


class _Archive:
    """The records of a checkpoint's zip archive, checked (Note [archive validation]).

    Note [archive validation]: the zip's central directory is read by zipfile, whose every
    error becomes RuntimeError; then each entry must be stored (not compressed or encrypted,
    so its bytes are its data and cannot expand), named once, and its local header must agree
    with the directory; the entries' spans must lie before the directory without overlapping
    one another. Exactly one `<prefix>/data.pkl` names the archive's folder. Data is read
    with its CRC-32 checked, except through a file mapping (mmap=True), whose point is not to
    read what is not used.
    """

    def __init__(self, file: BinaryIO, mapped: Any) -> None:
        self.file, self.mapped = file, mapped
        try:
            with zipfile.ZipFile(file) as zf:
                infos, directory = zf.infolist(), zf.start_dir
        except Exception as err:  # zipfile reports damage in many types; all mean the same here
            raise _broken(f"{type(err).__name__}: {err}") from None
        self.entries: dict[str, tuple[int, int, int]] = {}
        spans = []
        for info in infos:
            name = info.filename
            if name in self.entries:
                raise _broken(f"the entry {name!r} appears twice")
            if info.flag_bits & 0x1:
                raise _broken(f"the entry {name!r} is encrypted")
            if info.compress_type != zipfile.ZIP_STORED:
                raise _broken(f"the entry {name!r} is compressed (method {info.compress_type}); "
                              "checkpoint entries are stored uncompressed")
            if info.compress_size != info.file_size:
                raise _broken(f"the entry {name!r} has stored size {info.compress_size} but size {info.file_size}")
            start = self._data_start(info)
            end = start + info.file_size
            if end > directory:
                raise _broken(f"the entry {name!r} at bytes [{start}, {end}) runs past the central directory "
                              f"at byte {directory}")
            self.entries[name] = (start, info.file_size, info.CRC)
            spans.append((info.header_offset, end, name))
        previous_end, previous = 0, None
        for begin, end, name in sorted(spans):
            if begin < previous_end:
                raise _broken(f"the entries {previous!r} and {name!r} overlap")
            previous_end, previous = end, name
        prefixes = [n[:-len("/data.pkl")] for n in self.entries if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(prefixes) != 1:
            raise _broken("no data.pkl record" if not prefixes else f"{len(prefixes)} data.pkl records")
        self.prefix = prefixes[0] + "/"

    def _data_start(self, info: zipfile.ZipInfo) -> int:
        if not 0 <= info.header_offset:
            raise _broken(f"the entry {info.filename!r} has a negative offset")
        self.file.seek(info.header_offset)
        header = self.file.read(30)
        if len(header) != 30 or header[:4] != b"PK\x03\x04":
            raise _broken(f"the entry {info.filename!r} has no local header at byte {info.header_offset}")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        raw_name = self.file.read(name_length)
        encoding = "utf-8" if info.flag_bits & 0x800 else "cp437"
        if raw_name.decode(encoding, "replace") != info.orig_filename:
            raise _broken(f"the entry {info.filename!r} is named differently in its local header")
        return info.header_offset + 30 + name_length + extra_length

    def names(self) -> list[str]:
        return [n[len(self.prefix):] for n in self.entries if n.startswith(self.prefix)]

    def has(self, name: str) -> bool:
        return self.prefix + name in self.entries

    def read(self, name: str, checked: bool = True) -> Any:
        """A record's bytes: a writable bytearray read from the file (CRC-checked), or a view
        of the file mapping."""
        start, size, crc = self.entries[self.prefix + name]
        if self.mapped is not None:
            view = memoryview(self.mapped)[start:start + size]
            if checked and zlib.crc32(view) != crc:
                raise _broken(f"the record {name!r} fails its CRC-32 check")
            return view
        self.file.seek(start)
        data = bytearray(size)
        got = self.file.readinto(data) if hasattr(self.file, "readinto") else None
        if got is None:
            chunk = self.file.read(size)
            got = len(chunk)
            data[:got] = chunk
        if got != size:
            raise _broken(f"the record {name!r} is truncated ({got} of {size} bytes)")
        if zlib.crc32(data) != crc:
            raise _broken(f"the record {name!r} fails its CRC-32 check")
        return data


# ============================================================================= loading

class _DeviceUnavailable(RuntimeError):
    """A storage's device does not exist here: the file is fine, the machine lacks it."""


def _unavailable(device: _C.device) -> _DeviceUnavailable:
    kind = device.type
    return _DeviceUnavailable(
        f"Attempting to deserialize object on a {kind.upper()} device but ember.{kind}.is_available() is False. "
        "If you are running on a CPU-only machine, please use ember.load with map_location=ember.device('cpu') "
        "to map your storages to the CPU.")


def _target_device(spec: Any, *, from_file: bool) -> _C.device:
    """The device a map_location entry or a stored location names; errors say whose it is."""
    if isinstance(spec, _C.device):
        device = spec
    else:
        try:
            device = _C.device(spec)
        except (RuntimeError, ValueError, TypeError) as err:
            if from_file:
                raise pickle.UnpicklingError(f"[load] the storage location {str(spec)[:40]!r} is not a device") from err
            raise
    if device.type != "cpu" and not _C._has_backend(device.type):
        raise _unavailable(device)
    return device


def _check_map_location(map_location: Any) -> None:
    """Validated before reading, so a bad argument is the caller's error, not the file's."""
    if map_location is None or callable(map_location) and not isinstance(map_location, (str, _C.device, dict)):
        return
    if isinstance(map_location, (str, _C.device)):
        _target_device(map_location, from_file=False)
    elif isinstance(map_location, dict):
        for key, value in map_location.items():
            if not isinstance(key, str) or not isinstance(value, (str, _C.device)):
                raise TypeError("[load] a map_location dict must map location strings to devices or device strings")
            _target_device(value, from_file=False)
    else:
        raise TypeError("[load] map_location must be None, a device, a str, a dict or a callable, "
                        f"but got {type(map_location).__name__}")


class _StorageType:
    """A storage class of the format (torch.FloatStorage, ...): its dtype, None when untyped."""

    __slots__ = ("name", "dtype")

    def __init__(self, name: str, dtype: _C.dtype | None) -> None:
        self.name, self.dtype = name, dtype

    def __repr__(self) -> str:
        return f"<storage type {self.name}>"


class _Stored:
    """A storage the pickle referred to: which record, of which type, from which device."""

    __slots__ = ("key", "type", "location", "numel")

    def __init__(self, key: str, storage_type: _StorageType, location: str, numel: int) -> None:
        self.key, self.type, self.location, self.numel = key, storage_type, location, numel


def _invalid(message: str) -> pickle.UnpicklingError:
    return pickle.UnpicklingError(f"[load] {message}")


def _text(value: Any) -> Any:
    # Python 2 pickles (read with encoding="bytes") spell these strings as bytes.
    return value.decode("ascii", "replace") if isinstance(value, bytes) else value


def _dense(size: list[int], stride: list[int]) -> bool:
    """Whether (size, stride) lays the elements out row-major with no gaps (strides of size-1 dims free)."""
    expected = 1
    for s, st in zip(reversed(size), reversed(stride), strict=True):
        if s > 1 and st != expected:
            return False
        expected *= max(s, 1)
    return True


def _check_ints(values: Any, what: str) -> list[int]:
    if type(values) not in (tuple, list) or not all(type(v) is int for v in values):
        raise _invalid(f"a tensor's {what} must be a tuple of integers, but got {_wo._describe(values)}")
    for v in values:
        if v < 0:
            raise _invalid(f"a tensor's {what} {tuple(values)} holds a negative value"
                           + ("; negative strides are not supported" if what == "stride" else ""))
        if v > _MAX_INT64:
            raise _invalid(f"a tensor's {what} holds {_wo._describe(v)}, which does not fit in int64")
    return list(values)


class _Loader:
    """Turns the archive's storages and the pickle's tensor records into tensors.

    Its rebuild functions take PyTorch's arguments and check each one: a view must have
    integer sizes and strides in [0, 2**63) (Ember has no negative strides), a size whose
    product fits in int64, and must lie inside its storage, which must match its record's size.
    """

    def __init__(self, map_location: Any, buffers: dict[str, Any], swap: bool) -> None:
        self.map_location, self.buffers, self.swap = map_location, buffers, swap
        self.flats: dict[tuple[str, str], _C.Tensor] = {}
        self.caller_error: Exception | None = None
        self.parameter = _parameter_class()
        self.rebuilders = {self.rebuild_tensor, self.rebuild_tensor_v2, self.rebuild_tensor_v3,
                           self.rebuild_parameter, self.rebuild_parameter_with_state}

    @classmethod
    def for_archive(cls, archive: _Archive, map_location: Any) -> _Loader:
        byteorder = bytes(archive.read("byteorder")) if archive.has("byteorder") else b"little"
        if byteorder not in (b"little", b"big"):
            raise _broken(f"unknown byte order {byteorder[:20]!r}")
        mapped = archive.mapped is not None
        # Every storage record is read (and CRC-checked) before the pickle runs, so a damaged
        # record is a damaged archive, whatever the pickle says. Mapped records are views.
        buffers = {name[len("data/"):]: archive.read(name, checked=not mapped)
                   for name in archive.names() if name.startswith("data/")}
        return cls(map_location, buffers, byteorder.decode() != sys.byteorder)

    # -- storages
    def persistent_load(self, pid: Any) -> _Stored:
        if type(pid) is not tuple or len(pid) != 5 or _text(pid[0]) != "storage":
            raise _invalid(f"a persistent id must be ('storage', type, key, location, numel), but got {_wo._describe(pid)}")
        _, storage_type, key, location, numel = pid
        key, location = _text(key), _text(location)
        if not isinstance(storage_type, _StorageType):
            raise _invalid(f"a storage's type must be a storage class, but got {_wo._describe(storage_type)}")
        if not isinstance(key, str) or not isinstance(location, str) or type(numel) is not int or numel < 0:
            raise _invalid("a storage needs a str key, a str location and a non-negative numel")
        return _Stored(key, storage_type, location, numel)

    def flat(self, stored: Any, dtype: _C.dtype) -> _C.Tensor:
        """The storage as a 1-D tensor of `dtype`, on the device map_location chooses."""
        if not isinstance(stored, _Stored):
            raise _invalid(f"a tensor's storage must be a persistent storage, but got {_wo._describe(stored)}")
        cached = self.flats.get((stored.key, dtype_name(dtype)))
        if cached is not None:
            return cached
        buffer = self.buffers.get(stored.key)
        if buffer is None:
            raise _invalid(f"the storage record data/{stored.key[:40]} is missing from the archive")
        itemsize = dtype.itemsize if stored.type.dtype is not None else 1
        if stored.numel * itemsize != len(buffer) or len(buffer) % dtype.itemsize:
            raise _invalid(f"the storage data/{stored.key} of {stored.numel} {stored.type.name} elements needs "
                           f"{stored.numel * itemsize} bytes, but its record holds {len(buffer)}")
        try:
            flat = tensor_from_buffer(buffer, len(buffer) // dtype.itemsize, dtype, share=True, swap=self.swap)
        except ValueError as err:  # a bool storage holding other bytes than 0 and 1
            raise _invalid(f"the storage data/{stored.key}: {err}") from None
        flat = self._place(flat, stored.location)
        self.flats[(stored.key, dtype_name(dtype))] = flat
        return flat

    def _place(self, flat: _C.Tensor, location: str) -> _C.Tensor:
        target: Any = location
        ml = self.map_location
        if isinstance(ml, dict):
            target = ml.get(location, location)
        elif isinstance(ml, (str, _C.device)):
            target = ml
        elif ml is not None:  # callable(storage, location) -> storage or None, as torch.load's
            try:
                moved = ml(flat, location)
                if moved is not None and (not isinstance(moved, _C.Tensor) or moved.dtype != flat.dtype
                                          or tuple(moved.shape) != tuple(flat.shape)):
                    raise TypeError("[load] a map_location function must return None or the storage it was given "
                                    f"(a 1-D {dtype_name(flat.dtype)} tensor of {flat.numel()} elements), moved")
            except Exception as err:
                self.caller_error = err  # the caller's function failed, not the file: passed on as raised
                raise
            if moved is not None:
                return moved
        device = _target_device(target, from_file=target is location)
        return flat if device.type == "cpu" else flat.to(device)

    # -- tensors
    def _view(self, stored: Any, dtype: _C.dtype, offset: Any, size: Any, stride: Any) -> _C.Tensor:
        size, stride = _check_ints(size, "size"), _check_ints(stride, "stride")
        if len(size) != len(stride):
            raise _invalid(f"a tensor's size {tuple(size)} and stride {tuple(stride)} differ in length")
        if type(offset) is not int or not 0 <= offset <= _MAX_INT64:
            raise _invalid(f"a tensor's storage offset must be an integer in [0, 2**63), but got {_wo._describe(offset)}")
        if math.prod(max(s, 1) for s in size) > _MAX_INT64:
            raise _invalid(f"a tensor of size {tuple(size)} has more elements than int64 counts")
        flat = self.flat(stored, dtype)
        if 0 not in size:
            needed = offset + sum((s - 1) * st for s, st in zip(size, stride, strict=True)) + 1
            if needed > flat.numel():
                raise _invalid(f"a tensor of size {tuple(size)}, stride {tuple(stride)} and offset {offset} needs "
                               f"{needed} elements, but its storage data/{stored.key} holds {flat.numel()}")
        else:
            offset = 0  # an empty view reads nothing; keep its offset inside the storage
        return flat.as_strided(size, stride, offset)

    @staticmethod
    def _finish(t: _C.Tensor, requires_grad: Any, hooks: Any, metadata: Any = None) -> _C.Tensor:
        if type(requires_grad) is not bool:
            raise _invalid(f"requires_grad must be a bool, but got {_wo._describe(requires_grad)}")
        if not isinstance(hooks, dict) or hooks:
            raise _invalid("backward hooks are not restored from checkpoints (PyTorch saves an empty OrderedDict)")
        if metadata:
            if not isinstance(metadata, dict) or not set(metadata) <= {"conj", "neg"}:
                raise _invalid(f"tensor metadata may only hold 'conj' and 'neg', but got {_wo._describe(metadata)}")
            if metadata.get("conj"):  # PyTorch's lazy conjugate bit: Ember materializes it
                t = t.conj()
            if metadata.get("neg"):
                t = -t
        if requires_grad:
            t.requires_grad_(True)
        return t

    def rebuild_tensor(self, storage: Any, offset: Any, size: Any, stride: Any) -> _C.Tensor:
        dtype = self._typed(storage)
        return self._view(storage, dtype, offset, size, stride)

    def rebuild_tensor_v2(self, storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any,
                          hooks: Any, metadata: Any = None) -> _C.Tensor:
        dtype = self._typed(storage)
        return self._finish(self._view(storage, dtype, offset, size, stride), requires_grad, hooks, metadata)

    def rebuild_tensor_v3(self, storage: Any, offset: Any, size: Any, stride: Any, requires_grad: Any,
                          hooks: Any, dtype: Any, metadata: Any = None) -> _C.Tensor:
        if not isinstance(dtype, _C.dtype):
            raise _invalid(f"a tensor's dtype must be a dtype, but got {_wo._describe(dtype)}")
        if isinstance(storage, _Stored) and storage.type.dtype not in (None, dtype):
            raise _invalid(f"a {dtype_name(dtype)} tensor cannot view a {storage.type.name}")
        return self._finish(self._view(storage, dtype, offset, size, stride), requires_grad, hooks, metadata)

    @staticmethod
    def _typed(storage: Any) -> _C.dtype:
        if isinstance(storage, _Stored):
            if storage.type.dtype is None:
                raise _invalid("an untyped storage needs _rebuild_tensor_v3, which names the dtype")
            return storage.type.dtype
        raise _invalid(f"a tensor's storage must be a persistent storage, but got {_wo._describe(storage)}")

    def rebuild_parameter(self, data: Any, requires_grad: Any, hooks: Any) -> Any:
        if not isinstance(data, _C.Tensor):
            raise _invalid(f"a Parameter's data must be a tensor, but got {_wo._describe(data)}")
        if type(requires_grad) is not bool:
            raise _invalid(f"requires_grad must be a bool, but got {_wo._describe(requires_grad)}")
        if not isinstance(hooks, dict) or hooks:
            raise _invalid("backward hooks are not restored from checkpoints (PyTorch saves an empty OrderedDict)")
        return self.parameter(data, requires_grad)

    def rebuild_parameter_with_state(self, data: Any, requires_grad: Any, hooks: Any, state: Any) -> Any:
        return _set_state(self.rebuild_parameter(data, requires_grad, hooks), state)

    def rebuild_from_type_v2(self, func: Any, new_type: Any, args: Any, state: Any) -> Any:
        func = func.fn if isinstance(func, _wo.Builtin) else func
        if func not in self.rebuilders:
            raise _invalid(f"_rebuild_from_type_v2 may only call a tensor rebuild function, but got {_wo._describe(func)}")
        if type(args) is not tuple:
            raise _invalid("_rebuild_from_type_v2 needs a tuple of arguments")
        if not isinstance(new_type, type) or not issubclass(new_type, _C.Tensor):
            raise _invalid(f"_rebuild_from_type_v2 needs a Tensor class, but got {_wo._describe(new_type)}")
        t = func(*args)
        if type(t) is not new_type:
            if new_type is self.parameter:
                t = self.parameter(t, t.requires_grad)
            elif new_type is not _C.Tensor:
                sub = new_type.__new__(new_type)
                _C.Tensor.__init__(sub, t)  # shares t's memory, as Parameter does
                if t.requires_grad:
                    sub.requires_grad_(True)
                t = sub
        return _set_state(t, state)

    def rebuild_qtensor(self, storage: Any, offset: Any, size: Any, stride: Any, quantizer: Any, requires_grad: Any,
                        hooks: Any) -> _C.Tensor:
        """torch._utils._rebuild_qtensor: the integers (a copy, contiguous) read through the
        saved quantizer, which the native constructors check (scales positive, zero points in range)."""
        from ._quantized import _QSCHEMES, codes_from_packed

        if not (isinstance(storage, _Stored) and storage.type.name in {c for c, _ in _QUANTIZED_STORAGES.values()}):
            raise _invalid(f"a quantized tensor's storage must be a QUInt8Storage, QInt8Storage, QInt32Storage, "
                           f"QUInt4x2Storage or QUInt2x4Storage, but got {_wo._describe(storage)}")
        if requires_grad is not False:
            raise _invalid("a quantized tensor cannot require grad")
        if not isinstance(hooks, dict) or hooks:
            raise _invalid("backward hooks are not restored from checkpoints (PyTorch saves an empty OrderedDict)")
        dtype = _SUB_BYTE_STORAGES.get(storage.type.name)
        if dtype is None:
            ints = self._view(storage, storage.type.dtype, offset, size, stride)
        else:  # packed codes (Note [sub-byte quantized tensors]): contiguous from the storage's start
            size, stride = _check_ints(size, "size"), _check_ints(stride, "stride")
            if offset != 0 or not _dense(size, stride):
                raise _invalid(f"a {dtype_name(dtype)} tensor must be contiguous at storage offset 0, but got size "
                               f"{tuple(size)}, stride {tuple(stride)} and offset {_wo._describe(offset)}")
            try:
                ints = codes_from_packed(self.flat(storage, _C.uint8), size, dtype, padded=True)
            except ValueError as err:
                raise _invalid(str(err)) from None
        if type(quantizer) is tuple and len(quantizer) == 3 and quantizer[0] is _QSCHEMES[0] \
                and type(quantizer[1]) is float and type(quantizer[2]) is int:
            return _C._make_per_tensor_quantized_tensor(ints, quantizer[1], quantizer[2], dtype=dtype)
        if type(quantizer) is tuple and len(quantizer) == 4 and quantizer[0] in (_QSCHEMES[1], _QSCHEMES[4]) \
                and isinstance(quantizer[1], _C.Tensor) and isinstance(quantizer[2], _C.Tensor) \
                and type(quantizer[3]) is int:
            return _C._make_per_channel_quantized_tensor(ints, quantizer[1], quantizer[2], quantizer[3], dtype=dtype)
        raise _invalid(f"a quantized tensor's parameters must be (per_tensor_affine, scale, zero_point) or "
                       f"(per_channel_affine, scales, zero_points, axis), but got {_wo._describe(quantizer)}")

    def rebuild_sparse(self, *args: Any) -> Any:
        """torch._utils._rebuild_sparse_tensor(layout, parts): the storages already hold their bytes."""
        return _build_sparse(_sparse_request(args))

    def parameter_constructor(self, data: Any = None, requires_grad: Any = True) -> Any:
        # NEWOBJ(Parameter, args), which older PyTorch versions wrote
        if data is not None and not isinstance(data, _C.Tensor) or type(requires_grad) is not bool:
            raise _invalid("Parameter(data, requires_grad) needs a tensor and a bool")
        return self.parameter(data, requires_grad)

    def vocabulary(self) -> dict[str, Any]:
        """The format's names -> what they mean here (a Builtin is callable by REDUCE)."""
        table = dict(_static_vocabulary())
        for name, attribute in _REBUILDERS.items():
            table[name] = _wo.Builtin(name, getattr(self, attribute))
        table["torch.nn.parameter.Parameter"] = table["ember.nn.parameter.Parameter"] = self.parameter
        return table


class _LegacyLoader(_Loader):
    """PyTorch's format before 1.6 (and torch.save(_use_new_zipfile_serialization=False)): the
    storages' bytes follow the pickle, so each storage is allocated when the pickle names it and
    filled once the pickle is done. What is allocated is held to the file's size."""

    def __init__(self, map_location: Any, swap: bool, limit: int) -> None:
        super().__init__(map_location, {}, swap)
        self.limit, self.allocated = limit, 0
        self.pending: dict[str, list[tuple[_C.Tensor, _Stored]]] = {}
        self.sparse: list[tuple[Any, tuple]] = []

    def rebuild_sparse(self, *args: Any) -> Any:
        """Its storages are still empty: the sparse tensor is a placeholder over them, built (and
        its indices checked) by check_sparse once fill has copied their bytes in, as PyTorch
        validates the sparse tensors it loads once the load is done."""
        from . import sparse

        request = _sparse_request(args)
        layout, indices, values, size, _ = request
        if layout is sparse.sparse_coo:
            placeholder = sparse.SparseTensor._coo(indices[0], values, size)
        else:
            placeholder = sparse.SparseTensor._compressed(layout, *indices, values, size)
        self.sparse.append((placeholder, request))
        return placeholder

    def rebuild_qtensor(self, *args: Any) -> Any:
        raise _invalid("quantized tensors in PyTorch's format before 1.6 are not supported (its storages are filled "
                       "after the pickle, and a quantized tensor is built from its integers)")

    def check_sparse(self) -> None:
        """Build each placeholder's tensor from its filled parts, through the checking constructors."""
        for placeholder, request in self.sparse:
            vars(placeholder).update(vars(_build_sparse(request)))

    def persistent_load(self, pid: Any) -> Any:
        if type(pid) is tuple and len(pid) == 4 and _text(pid[0]) == "module" and isinstance(pid[1], type):
            return pid[1]  # a Module class with its source, which PyTorch once checked; already a vetted GLOBAL
        if type(pid) is not tuple or len(pid) != 6 or _text(pid[0]) != "storage":
            raise _invalid("a legacy persistent id must be ('storage', type, key, location, numel, view), "
                           f"but got {_wo._describe(pid)}")
        if pid[5] is not None:
            raise _invalid("storage views of PyTorch's pre-1.0 format are not supported")
        return super().persistent_load(pid[:5])

    def flat(self, stored: Any, dtype: _C.dtype) -> _C.Tensor:
        if not isinstance(stored, _Stored):
            raise _invalid(f"a tensor's storage must be a persistent storage, but got {_wo._describe(stored)}")
        cached = self.flats.get((stored.key, dtype_name(dtype)))
        if cached is not None:
            return cached
        nbytes = stored.numel * (dtype.itemsize if stored.type.dtype is not None else 1)
        if nbytes % dtype.itemsize:
            raise _invalid(f"the storage {stored.key[:40]} of {nbytes} bytes does not hold whole {dtype_name(dtype)} elements")
        self.allocated += nbytes
        if self.allocated > self.limit:  # its bytes must be in the file: never allocate more than it holds
            raise _invalid(f"the storages the pickle names need {self.allocated} bytes, more than the "
                           f"{self.limit}-byte file holds")
        flat = self._place(_C._empty([nbytes // dtype.itemsize], dtype, _C.device("cpu")), stored.location)
        self.flats[(stored.key, dtype_name(dtype))] = flat
        self.pending.setdefault(stored.key, []).append((flat, stored))
        return flat

    def fill(self, data: bytes, pos: int, keys: Any) -> None:
        """Copy each storage's bytes (int64 element count, then the elements) into its tensors."""
        if type(keys) is not list or not all(isinstance(k, (str, bytes)) for k in keys):
            raise _broken("the legacy storage key list is not a list of strings")
        keys = [_text(k) for k in keys]
        if set(keys) != set(self.pending) or len(keys) != len(set(keys)):
            raise _broken("the legacy storage key list does not match the storages the pickle names")
        for key in keys:
            flats = self.pending[key]
            first = flats[0][1]
            itemsize = first.type.dtype.itemsize if first.type.dtype is not None else 1
            if pos + 8 > len(data):
                raise _broken(f"the legacy data of storage {key[:40]} is truncated")
            (count,) = struct.unpack("<q", data[pos:pos + 8])
            nbytes = flats[0][0].numel() * flats[0][0].dtype.itemsize
            if count * itemsize != nbytes or pos + 8 + nbytes > len(data):
                raise _broken(f"the legacy data of storage {key[:40]} holds {count} elements where the pickle "
                              f"says {first.numel}, or is truncated")
            raw = memoryview(data)[pos + 8:pos + 8 + nbytes]
            for flat, _ in flats:
                try:
                    values = tensor_from_buffer(raw, flat.numel(), flat.dtype, share=False, swap=self.swap)
                except ValueError as err:
                    raise _broken(f"the legacy data of storage {key[:40]}: {err}") from None
                with _no_grad():
                    flat.copy_(values)
            pos += 8 + nbytes


def _no_grad() -> Any:
    from .autograd.grad_mode import no_grad  # imported late, as Parameter is
    return no_grad()


# The format's rebuild functions -> the _Loader methods that implement them.
_REBUILDERS = {
    "torch._utils._rebuild_tensor": "rebuild_tensor",
    "torch._utils._rebuild_tensor_v2": "rebuild_tensor_v2",
    "torch._utils._rebuild_tensor_v3": "rebuild_tensor_v3",
    "torch._utils._rebuild_parameter": "rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state": "rebuild_parameter_with_state",
    "torch._tensor._rebuild_from_type_v2": "rebuild_from_type_v2",
    "torch._utils._rebuild_sparse_tensor": "rebuild_sparse",
    "torch._utils._rebuild_qtensor": "rebuild_qtensor",
}


def _static_vocabulary() -> dict[str, Any]:
    """The format's names that mean the same in every archive: dtypes, storage types, devices."""
    table: dict[str, Any] = {
        "torch.device": _wo.Builtin("torch.device", _make_device),
        "ember.device": _wo.Builtin("ember.device", _make_device),
        "torch.Size": _wo.Builtin("torch.Size", _make_size),
        "ember._dtype_by_name": _wo.Builtin("ember._dtype_by_name", _dtype_by_name),
        "torch.Tensor": _C.Tensor, "ember.Tensor": _C.Tensor,
        "torch.storage.UntypedStorage": _StorageType("UntypedStorage", None),
        "torch.UntypedStorage": _StorageType("UntypedStorage", None),
    }
    for name, cls in _STORAGE_CLASSES.items():
        table[f"torch.{cls}"] = table[f"torch.cuda.{cls}"] = _StorageType(cls, _DTYPES[name])
    for name, dtype in _DTYPES.items():
        table[f"torch.{name}"] = dtype
    table["torch.serialization._get_layout"] = _wo.Builtin("torch.serialization._get_layout", _get_layout)
    for cls, underlying in _QUANTIZED_STORAGES.values():
        table[f"torch.{cls}"] = _StorageType(cls, _DTYPES[underlying])
    from ._quantized import _QSCHEMES

    for qscheme in _QSCHEMES:
        table[f"torch.{qscheme.name}"] = table[f"ember.{qscheme.name}"] = qscheme
    for name in _TORCH_ONLY_DTYPES:
        table[f"torch.{name}"] = _wo.Refused(f"the checkpoint holds dtype torch.{name}, which Ember does not have")
    return table


def _set_state(obj: Any, state: Any) -> Any:
    """Python attributes saved with a tensor (PyTorch's _set_obj_state): a dict, or (dict, slots)."""
    if state is None:
        return obj
    parts = state if type(state) is tuple and len(state) == 2 else (state,)
    for part in parts:
        if part is None:
            continue
        if not isinstance(part, dict) or not all(type(k) is str and not k.startswith("__") for k in part):
            raise _invalid(f"a tensor's Python state must be a dict of attribute names, but got {_wo._describe(part)}")
        for key, value in part.items():
            setattr(obj, key, value)
    return obj


def _make_device(*args: Any) -> _C.device:
    if not 1 <= len(args) <= 2 or not isinstance(args[0], str) or (
            len(args) == 2 and args[1] is not None and (type(args[1]) is not int or args[1] < 0)):
        raise _invalid(f"device() takes a device string and an optional index, but got {len(args)} arguments")
    spec = args[0] if len(args) == 1 or args[1] is None else f"{args[0]}:{args[1]}"
    try:
        return _C.device(spec)
    except (RuntimeError, ValueError, TypeError) as err:
        raise _invalid(f"{spec[:40]!r} is not a device: {err}") from None


def _make_size(*args: Any) -> _C.Size:
    if len(args) > 1 or args and (type(args[0]) not in (tuple, list) or not all(type(s) is int for s in args[0])):
        raise _invalid("Size() takes one tuple of integers")
    return _C.Size(args[0] if args else ())


def _dtype_by_name(*args: Any) -> _C.dtype:
    if len(args) != 1 or args[0] not in _DTYPES:
        raise _invalid(f"{_wo._describe(args[0] if args else None)} is not the name of an Ember dtype")
    return _DTYPES[args[0]]


class _TrustedUnpickler(pickle.Unpickler):
    """weights_only=False: Python's unpickler, which imports and calls what the file names.
    The format's names resolve to the loader's rebuild functions and PyTorch's module paths
    (torch.nn.modules.linear.Linear) to Ember's."""

    def __init__(self, file: BinaryIO, loader: _Loader, **kwargs: Any) -> None:
        super().__init__(file, **kwargs)
        self._loader = loader
        self._vocabulary = loader.vocabulary()

    def find_class(self, module: str, name: str) -> Any:
        value = self._vocabulary.get(f"{module}.{name}")
        if isinstance(value, _wo.Refused):
            raise pickle.UnpicklingError(value.message)
        if value is not None:
            return value.fn if isinstance(value, _wo.Builtin) else value
        if module == "torch" or module.startswith("torch."):
            module = "ember" + module[len("torch"):]
        return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        return self._loader.persistent_load(pid)


_UNSAFE_MESSAGE = ("Re-running `ember.load` with `weights_only` set to `False` will likely succeed, but it can "
                   "result in arbitrary code execution. Do it only if you got the file from a trusted source.")


def _weights_only_message(detail: str) -> str:
    if "was not an allowed global by default" in detail:
        return ("Weights only load failed. This file can still be loaded, to do so you have two options, do those "
                f"steps only if you trust the source of the checkpoint.\n\t(1) {_UNSAFE_MESSAGE}\n\t(2) Alternatively, "
                "to load with `weights_only=True` please check the recommended steps in the following error "
                f"message.\n\tWeightsUnpickler error: {detail}")
    return f"Weights only load failed. WeightsUnpickler error: {detail}"


@contextlib.contextmanager
def _source(f: Any, use_mmap: bool) -> Iterator[tuple[BinaryIO, Any]]:
    """(a seekable binary file, its copy-on-write mapping or None) for `f`."""
    if isinstance(f, (str, os.PathLike)):
        file: Any = open(f, "rb")  # noqa: SIM115 - closed below
        owned = True
    elif hasattr(f, "read"):
        file, owned = f, False
    else:
        raise TypeError(f"[load] expected a path or a readable binary file, but got {type(f).__name__}")
    try:
        mapped = None
        if use_mmap:
            try:
                fileno = file.fileno()
            except (AttributeError, OSError, io.UnsupportedOperation):
                raise TypeError("[load] mmap=True needs a path or a file opened from one") from None
            if os.fstat(fileno).st_size == 0:
                raise RuntimeError("[load] the file is empty")
            # ACCESS_COPY: pages are shared with the page cache until written; writes to a
            # loaded tensor stay private and never reach the file (PyTorch's MAP_PRIVATE).
            mapped = _mmap.mmap(fileno, 0, access=_mmap.ACCESS_COPY)
        elif not owned and not (getattr(file, "seekable", lambda: False)()):
            data = file.read()
            if not isinstance(data, (bytes, bytearray)):
                raise TypeError("[load] expected a file opened in binary mode")
            file = io.BytesIO(data)
        yield file, mapped
    finally:
        if owned:
            file.close()


def _sniff(file: BinaryIO) -> bytes:
    start = file.tell()
    head = file.read(16)
    if not isinstance(head, (bytes, bytearray)):
        raise TypeError("[load] expected a file opened in binary mode")
    file.seek(start)
    return bytes(head)


def load(f: str | os.PathLike | BinaryIO, map_location: Any = None, pickle_module: Any = None, *,
         weights_only: bool | None = True, mmap: bool | None = None, **pickle_load_args: Any) -> Any:
    """Load what `ember.save` or `torch.save` wrote (or a safetensors file) from `f`, a path or a
    readable binary file.

    weights_only=True (the default; None means the same): only tensors, containers,
    primitives, NumPy arrays and dtypes, Ember dtypes, devices and Parameters, and what
    `ember.serialization.add_safe_globals` allows, are built; nothing in the file runs.
    weights_only=False: Python's unpickler, which runs whatever the file names. Use it only for
    files you trust.
    map_location: None (where each storage was saved), a device or device string, a dict
    such as {"cuda:0": "cpu"}, or a function (storage, location) -> storage or None.
    mmap=True: map the file copy-on-write and let tensors use its pages instead of reading
    them (a path or a file opened from one).
    pickle_load_args: encoding= for Python 2 pickles ("latin1", "bytes").
    See this module's docstring for the exceptions each kind of damage raises.
    """
    if weights_only is None:
        weights_only = True
    encoding = pickle_load_args.pop("encoding", "utf-8")
    if pickle_load_args:
        raise TypeError(f"[load] got unexpected keyword argument {next(iter(pickle_load_args))!r}")
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is specified")
    _check_map_location(map_location)
    with _source(f, bool(mmap)) as (file, mapped):
        head = bytes(mapped[:16]) if mapped is not None else _sniff(file)
        if head[:2] == b"PK":
            archive = _Archive(file, mapped)
            loader = _Loader.for_archive(archive, map_location)
            data = archive.read("data.pkl")
            if weights_only:
                unpickler = _wo.Unpickler(data, extra_globals=loader.vocabulary(), persistent_load=loader.persistent_load,
                                          encoding=encoding, constructors={loader.parameter: loader.parameter_constructor})
                return _run_weights_only(unpickler.load, loader)
            return _trusted_unpickler(io.BytesIO(data), loader, pickle_module, encoding).load()
        if _safetensors.looks_like_safetensors(head):
            data = mapped if mapped is not None else file.read()
            if not isinstance(data, (bytes, bytearray, _mmap.mmap)):
                raise TypeError("[load] expected a file opened in binary mode")
            return _safetensors.read(data, _safetensors_placer(map_location), share=mapped is not None)
        if head[:1] == b"\x80":
            if mapped is not None:
                raise RuntimeError("[load] mmap=True needs the zip archive torch.save has written since PyTorch 1.6, "
                                   "not this older format")
            data = file.read()
            if not isinstance(data, bytes):
                raise TypeError("[load] expected a file opened in binary mode")
            return _load_legacy(data, map_location, weights_only, encoding, pickle_module)
        raise RuntimeError("[load] not a checkpoint: expected a zip archive (what ember.save and torch.save write) "
                           "or a safetensors file")


_LEGACY_MAGIC = 0x1950A86A20F9469CFC6C  # the first pickle of PyTorch's format before 1.6
_LEGACY_PROTOCOL = 1001
_BARE_PICKLE = ("[load] this file is a bare pickle (what pickle.dump writes), not a checkpoint: ember.load reads "
                "the zip archive torch.save writes (and PyTorch's format before 1.6) and safetensors files")


def _load_legacy(data: bytes, map_location: Any, weights_only: bool, encoding: str, pickle_module: Any) -> Any:
    """PyTorch's format before 1.6: pickles of the magic number, the protocol version and
    sys_info, then the object's pickle, then the list of storage keys, then each storage's bytes."""
    pos = 0

    def plain() -> Any:  # a pickle of plain data, always read by the weights-only interpreter
        nonlocal pos
        unpickler = _wo.Unpickler(data, start=pos, encoding=encoding)
        try:
            value = unpickler.load()
        except Exception as err:  # noqa: BLE001 - any failure here is a malformed header
            raise _broken(f"a legacy header pickle is malformed: {err}") from None
        pos = unpickler.pos
        return value

    try:
        magic = _wo.Unpickler(data, encoding=encoding).load()
    except Exception:  # noqa: BLE001 - whatever it is, it is not this format
        magic = None
    if type(magic) is not int or magic != _LEGACY_MAGIC:
        raise RuntimeError(_BARE_PICKLE)
    plain()
    if plain() != _LEGACY_PROTOCOL:
        raise _broken(f"the legacy protocol version is not {_LEGACY_PROTOCOL}")
    sys_info = plain()
    if not isinstance(sys_info, dict) or type(sys_info.get("little_endian")) is not bool:
        raise _broken("the legacy sys_info record is malformed")
    loader = _LegacyLoader(map_location, sys_info["little_endian"] != (sys.byteorder == "little"), len(data))
    if weights_only:
        unpickler = _wo.Unpickler(data, start=pos, extra_globals=loader.vocabulary(),
                                  persistent_load=loader.persistent_load, encoding=encoding,
                                  constructors={loader.parameter: loader.parameter_constructor})
        result = _run_weights_only(unpickler.load, loader)
        pos = unpickler.pos
    else:
        stream = io.BytesIO(data)
        stream.seek(pos)
        result = _trusted_unpickler(stream, loader, pickle_module, encoding).load()
        pos = stream.tell()
    keys, pos = _keys_after(data, pos, encoding)
    loader.fill(data, pos, keys)
    if weights_only:
        _run_weights_only(loader.check_sparse, loader)
    else:
        loader.check_sparse()
    return result


def _keys_after(data: bytes, pos: int, encoding: str) -> Any:
    unpickler = _wo.Unpickler(data, start=pos, encoding=encoding)
    try:
        keys = unpickler.load()
    except Exception as err:  # noqa: BLE001 - any failure here is a malformed key list
        raise _broken(f"the legacy storage key list is malformed: {err}") from None
    return keys, unpickler.pos


def _trusted_unpickler(stream: BinaryIO, loader: _Loader, pickle_module: Any, encoding: str) -> Any:
    base = pickle_module.Unpickler if pickle_module is not None else pickle.Unpickler
    return type("_Unpickler", (_TrustedUnpickler, base), {})(stream, loader, encoding=encoding)


def _run_weights_only(load_pickle: Callable[[], Any], loader: _Loader) -> Any:
    try:
        return load_pickle()
    except _DeviceUnavailable:
        raise
    except Exception as err:  # noqa: BLE001 - every failure of an untrusted pickle is reported as one type
        if err is loader.caller_error:
            raise
        detail = str(err) if isinstance(err, pickle.UnpicklingError) else f"{type(err).__name__}: {err}"
        raise pickle.UnpicklingError(_weights_only_message(detail)) from err


def _safetensors_placer(map_location: Any) -> Callable[[_C.Tensor], _C.Tensor]:
    """map_location for safetensors files, whose tensors are all stored on the CPU."""
    def place(t: _C.Tensor) -> _C.Tensor:
        target: Any = "cpu"
        if isinstance(map_location, dict):
            target = map_location.get("cpu", "cpu")
        elif isinstance(map_location, (str, _C.device)):
            target = map_location
        elif map_location is not None:
            moved = map_location(t, "cpu")
            if moved is not None:
                return moved
        device = _target_device(target, from_file=False)
        return t if device.type == "cpu" else t.to(device)
    return place


def get_unsafe_globals_in_checkpoint(f: str | os.PathLike | BinaryIO) -> list[str]:
    """The globals a checkpoint's pickle names that weights_only=True would refuse: what
    `add_safe_globals` would need, found without unpickling anything."""
    with _source(f, False) as (file, _):
        archive = _Archive(file, None)
        data = bytes(archive.read("data.pkl"))
    allowed = {*_wo._common_globals(), *_static_vocabulary(), *_REBUILDERS, *_wo._user_allowed(),
               "torch.nn.parameter.Parameter", "ember.nn.parameter.Parameter"}
    found: list[str] = []
    strings: list[str] = []
    try:
        for opcode, arg, _ in pickletools.genops(data):
            if opcode.name in ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE"):
                strings.append(arg)
            elif opcode.name == "GLOBAL":
                module, name = arg.split(" ", 1)
                if (module, name) in _compat_pickle.NAME_MAPPING:  # Python 2 names, as the unpickler maps them
                    module, name = _compat_pickle.NAME_MAPPING[(module, name)]
                found.append(f"{_compat_pickle.IMPORT_MAPPING.get(module, module)}.{name}")
            elif opcode.name == "STACK_GLOBAL" and len(strings) >= 2:
                found.append(f"{strings[-2]}.{strings[-1]}")
    except Exception as err:  # noqa: BLE001 - a malformed pickle, reported as such
        raise pickle.UnpicklingError(f"[load] data.pkl is not a valid pickle: {err}") from None
    unsafe = []
    for name in found:
        ember_name = "ember" + name[len("torch"):] if name.startswith("torch.") else None
        if name not in allowed and ember_name not in allowed and name not in unsafe:
            unsafe.append(name)
    return unsafe
