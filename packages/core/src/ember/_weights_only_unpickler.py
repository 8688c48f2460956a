"""The unpickler behind `ember.load(weights_only=True)`: a pickle interpreter that can only build data.

Python's own unpickler imports and calls whatever a pickle names, so loading a file can run any
code. This one interprets the opcodes itself (Note [weights-only unpickling]) and resolves a
GLOBAL only from an allowlist:

- containers and primitives: dict, `collections.OrderedDict`/`Counter`, list, tuple, set,
  frozenset, str, bytes, bytearray, int, float, complex, bool, None;
- NumPy arrays, scalars and dtypes, rebuilt here from their validated parts, never through
  NumPy's own pickle hooks;
- what the loader adds: the tensor vocabulary of the checkpoint format (rebuild functions,
  storage types, dtypes, devices, `Size`, `Parameter`);
- what the user registers with `add_safe_globals` or the `safe_globals` context manager.

Every problem raises `pickle.UnpicklingError` naming it; nothing else escapes `load`.
"""

from __future__ import annotations

import _compat_pickle
import codecs
import collections
import pickle
import re
import struct
from collections.abc import Callable, Iterable
from typing import Any

__all__ = ["Unpickler", "Builtin", "Refused", "add_safe_globals", "clear_safe_globals", "get_safe_globals", "safe_globals", "MAX_DEPTH"]

# Deeper containers are refused: Python's pickler cannot write nesting much deeper than its
# recursion limit (1000), and consumers of the result (repr, ==, hashing) recurse per level.
MAX_DEPTH = 1000
_MAX_INT64 = (1 << 63) - 1

_UnpicklingError = pickle.UnpicklingError


# ----------------------------------------------------------------------------- the user's allowlist

_user_globals: list[Any] = []


def _check_safe_global(entry: Any) -> None:
    if isinstance(entry, tuple):
        if len(entry) != 2 or not isinstance(entry[1], str) or not callable(entry[0]):
            raise TypeError("[add_safe_globals] expected a class or function, or a (class or function, "
                            f"'module.name') pair, but got {entry!r}")
    elif not callable(entry) or not hasattr(entry, "__module__") or not hasattr(entry, "__qualname__"):
        raise TypeError(f"[add_safe_globals] expected a class or function, but got {type(entry).__name__}")


def add_safe_globals(safe_globals: list[Any]) -> None:
    """Allow `weights_only=True` loads to build these classes and call these functions.

    Each entry is a class or function, allowed under its own `module.qualname`, or a pair
    (class or function, "module.name") for a name it was pickled under elsewhere.
    """
    if not isinstance(safe_globals, (list, tuple)):
        raise TypeError(f"[add_safe_globals] expected a list, but got {type(safe_globals).__name__}")
    for entry in safe_globals:
        _check_safe_global(entry)
    for entry in safe_globals:
        if entry not in _user_globals:
            _user_globals.append(entry)


def get_safe_globals() -> list[Any]:
    """The entries `add_safe_globals` registered, in order."""
    return list(_user_globals)


def clear_safe_globals() -> None:
    """Forget every entry `add_safe_globals` registered."""
    _user_globals.clear()


class safe_globals:  # noqa: N801 - PyTorch's name for this context manager
    """`with safe_globals([Foo]): ember.load(f)` allows Foo inside the block only."""

    def __init__(self, safe_globals: list[Any]) -> None:
        if not isinstance(safe_globals, (list, tuple)):
            raise TypeError(f"[safe_globals] expected a list, but got {type(safe_globals).__name__}")
        for entry in safe_globals:
            _check_safe_global(entry)
        self.safe_globals = list(safe_globals)
        self._added: list[Any] = []

    def __enter__(self) -> safe_globals:
        # only what this block adds is removed on exit, as PyTorch's context manager does
        self._added = [entry for entry in self.safe_globals if entry not in _user_globals]
        add_safe_globals(self.safe_globals)
        return self

    def __exit__(self, *exc: object) -> None:
        for entry in self._added:
            if entry in _user_globals:
                _user_globals.remove(entry)


def _user_allowed() -> dict[str, Any]:
    allowed = {}
    for entry in _user_globals:
        if isinstance(entry, tuple):
            allowed[entry[1]] = entry[0]
        else:
            allowed[f"{entry.__module__}.{entry.__qualname__}"] = entry
    return allowed


# ----------------------------------------------------------------------------- built-in vocabulary

class Builtin:
    """A global the allowlist provides: REDUCE may call it, and nothing else can."""

    __slots__ = ("name", "fn")

    def __init__(self, name: str, fn: Callable[..., Any]) -> None:
        self.name, self.fn = name, fn

    def __repr__(self) -> str:
        return f"<allowlisted {self.name}>"


class Refused:
    """A name the allowlist knows but refuses, with the reason (a PyTorch dtype Ember lacks)."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message


def _describe(obj: Any) -> str:
    """A short, bounded description for messages: never a full repr of hostile data."""
    if isinstance(obj, (bool, type(None))):
        return repr(obj)
    if isinstance(obj, int):
        return str(obj) if obj.bit_length() < 128 else f"an integer of {obj.bit_length()} bits"
    if isinstance(obj, float):
        return repr(obj)
    if isinstance(obj, (str, bytes)) and len(obj) <= 40:
        return repr(obj)
    return f"a {type(obj).__name__}"


def _unique_set(items: Iterable[Any], what: str) -> set:
    items = list(items)
    out = set(items)  # unhashable items raise TypeError, turned into UnpicklingError by load()
    if len(out) != len(items):
        raise _UnpicklingError(f"duplicate entries in a {what}")
    return out


def _ordered_dict(*args: Any) -> collections.OrderedDict:
    out: collections.OrderedDict = collections.OrderedDict()
    if args:
        if len(args) != 1 or not isinstance(args[0], (list, tuple)):
            raise _UnpicklingError("collections.OrderedDict expects no arguments or a list of pairs")
        for pair in args[0]:
            if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                raise _UnpicklingError("collections.OrderedDict expects a list of (key, value) pairs")
            _set_new_item(out, pair[0], pair[1])
    return out


def _counter(*args: Any) -> collections.Counter:
    if len(args) > 1 or (args and not isinstance(args[0], dict)):
        raise _UnpicklingError("collections.Counter expects no arguments or a dict")
    return collections.Counter(args[0] if args else {})


def _set(*args: Any) -> set:
    if len(args) > 1 or (args and not isinstance(args[0], (list, tuple))):
        raise _UnpicklingError("builtins.set expects no arguments or a list")
    return _unique_set(args[0] if args else (), "set")


def _frozenset(*args: Any) -> frozenset:
    if len(args) > 1 or (args and not isinstance(args[0], (list, tuple))):
        raise _UnpicklingError("builtins.frozenset expects no arguments or a list")
    return frozenset(_unique_set(args[0] if args else (), "frozenset"))


def _complex(*args: Any) -> complex:
    if not 1 <= len(args) <= 2 or not all(type(a) in (int, float) for a in args):
        raise _UnpicklingError("builtins.complex expects one or two real numbers")
    return complex(*args)


def _encode_latin1(*args: Any) -> bytes:
    # Protocol 2 has no bytes opcode: bytes b pickle as _codecs.encode(b.decode("latin1"), "latin1").
    if len(args) == 1 and isinstance(args[0], str):
        return args[0].encode("utf-8")
    if len(args) != 2 or not isinstance(args[0], str) or args[1] not in ("latin1", "latin-1"):
        raise _UnpicklingError("_codecs.encode is only allowed as encode(str, 'latin1'), which pickles bytes")
    return args[0].encode("latin1")


def _bytes(*args: Any) -> bytes:
    # Protocol 2 writes b"" as bytes(); any other bytes goes through _codecs.encode.
    if args:
        raise _UnpicklingError("builtins.bytes is only allowed without arguments, which pickles b''")
    return b""


def _bytearray(*args: Any) -> bytearray:
    if not args:
        return bytearray()
    if len(args) == 1 and isinstance(args[0], (bytes, bytearray)):
        return bytearray(args[0])
    if len(args) == 2 and isinstance(args[0], str) and args[1] in ("latin1", "latin-1"):
        return bytearray(args[0].encode("latin1"))
    raise _UnpicklingError("builtins.bytearray expects bytes, or a str and 'latin-1'")


# NumPy: an ndarray pickles as _reconstruct(ndarray, (0,), b'b') followed by BUILD with
# (version, shape, dtype, is_fortran, raw bytes); a dtype as dtype(code, align, copy) then BUILD
# with its byte order and fields; a scalar as scalar(dtype, raw bytes). Each is rebuilt here from
# checked parts with np.frombuffer / np.dtype, so NumPy's __setstate__ never sees the file's data.

class _Pending:
    """An object whose REDUCE has run but whose BUILD has not yet filled it in."""

    __slots__ = ("kind", "args", "result")

    def __init__(self, kind: str, args: tuple) -> None:
        self.kind, self.args, self.result = kind, args, None


def _np() -> Any:
    import numpy
    return numpy


_NP_CODE = re.compile(r"(b1|[iu][1248]|f(2|4|8|12|16)|c(8|16|24|32)|[SUV][0-9]{1,9}|[Mm]8|O[48])\Z")
_NP_DATETIME_UNITS = {"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as", "generic"}


def _np_reconstruct(*args: Any) -> _Pending:
    np = _np()
    if (len(args) != 3 or args[0] is not np.ndarray or args[1] != (0,) or args[2] not in (b"b", "b")
            or type(args[1]) is not tuple):
        raise _UnpicklingError("numpy _reconstruct is only allowed as _reconstruct(numpy.ndarray, (0,), b'b')")
    return _Pending("ndarray", ())


def _flag(value: Any) -> bool | None:
    """A dtype(code, align, copy) flag: a bool, or the int 0 / 1 that Python 2 era NumPy pickles
    (CIFAR's batches) carry; None for anything else."""
    if type(value) is bool:
        return value
    if type(value) is int and value in (0, 1):
        return bool(value)
    return None


def _np_dtype(*args: Any) -> _Pending:
    flags = tuple(_flag(a) for a in args[1:])
    if (len(args) != 3 or not isinstance(args[0], str) or not _NP_CODE.match(args[0])
            or None in flags):
        raise _UnpicklingError(f"numpy.dtype arguments {tuple(_describe(a) for a in args)} are not a plain dtype code")
    return _Pending("dtype", (args[0], *flags))


def _check_shape(shape: Any, what: str) -> tuple[int, ...]:
    if type(shape) not in (tuple, list) or not all(type(s) is int and 0 <= s <= _MAX_INT64 for s in shape):
        raise _UnpicklingError(f"{what} shape must be a tuple of integers in [0, 2**63), but got {_describe(shape)}")
    numel = 1
    for s in shape:
        numel *= s
    if numel > _MAX_INT64:
        raise _UnpicklingError(f"{what} of shape {tuple(shape)} has more than 2**63 elements")
    return tuple(shape)


def _build_np_dtype(pending: _Pending, state: Any) -> Any:
    np = _np()
    code, align, _ = pending.args
    if type(state) is not tuple or len(state) not in (8, 9) or state[0] not in (3, 4):
        raise _UnpicklingError("numpy.dtype state must be a version 3 or 4 tuple")
    endian, subarray, names, fields, elsize = state[1], state[2], state[3], state[4], state[5]
    if endian not in ("<", ">", "|", "="):
        raise _UnpicklingError(f"numpy.dtype byte order {_describe(endian)} is not one of <, >, |, =")
    if names is not None:
        if (type(names) is not tuple or not all(isinstance(n, str) for n in names) or type(fields) is not dict
                or set(fields) != set(names) or type(elsize) is not int or not 0 <= elsize < 1 << 31):
            raise _UnpicklingError("numpy structured dtype state must hold names, matching fields and an item size")
        formats, offsets, titles = [], [], []
        for name in names:
            field = fields[name]
            if (type(field) is not tuple or len(field) not in (2, 3) or not isinstance(field[0], np.dtype)
                    or type(field[1]) is not int or not 0 <= field[1] < 1 << 31):
                raise _UnpicklingError(f"numpy structured dtype field {name!r} must be (dtype, offset[, title])")
            formats.append(field[0])
            offsets.append(field[1])
            titles.append(field[2] if len(field) == 3 else None)
        spec = {"names": list(names), "formats": formats, "offsets": offsets, "itemsize": elsize}
        if any(t is not None for t in titles):
            spec["titles"] = titles
        return np.dtype(spec, align=align)
    if subarray is not None:
        if type(subarray) is not tuple or len(subarray) != 2 or not isinstance(subarray[0], np.dtype):
            raise _UnpicklingError("numpy subarray dtype state must be (dtype, shape)")
        return np.dtype((subarray[0], _check_shape(subarray[1], "numpy subarray dtype")))
    if code[0] in "Mm":
        unit, num = "generic", 1
        if len(state) == 9 and state[8] is not None:
            meta = state[8]
            if (type(meta) is not tuple or len(meta) != 2 or type(meta[1]) is not tuple or len(meta[1]) != 4
                    or not isinstance(meta[1][0], bytes) or type(meta[1][1]) is not int):
                raise _UnpicklingError("numpy datetime dtype metadata must be (None, (unit, num, den, events))")
            unit, num = meta[1][0].decode("ascii", "replace"), meta[1][1]
        if unit not in _NP_DATETIME_UNITS or not 1 <= num < 1 << 31:
            raise _UnpicklingError(f"numpy datetime unit {unit!r} x {_describe(num)} is not a known unit")
        dtype = np.dtype(code if unit == "generic" else f"{code}[{num}{unit}]")
    else:
        dtype = np.dtype(code)
    if endian in "<>" and dtype.byteorder not in ("|",):
        dtype = dtype.newbyteorder(endian)
    return dtype


def _array_from(raw: Any, dtype: Any, shape: tuple[int, ...], fortran: bool, what: str) -> Any:
    np = _np()
    numel = 1
    for s in shape:
        numel *= s
    order = "F" if fortran else "C"
    if dtype.hasobject:
        if dtype != np.dtype(object):
            raise _UnpicklingError(f"{what}: structured dtypes holding Python objects are not supported")
        if type(raw) is not list or len(raw) != numel:
            raise _UnpicklingError(f"{what}: an object array of {numel} elements needs a list of {numel} items")
        flat = np.empty(numel, dtype=object)
        for i, item in enumerate(raw):
            flat[i] = item
        return flat.reshape(shape, order=order)
    if isinstance(raw, str):  # written by Python 2, decoded with encoding='latin1'
        raw = raw.encode("latin1")
    if not isinstance(raw, (bytes, bytearray)):
        raise _UnpicklingError(f"{what}: array data must be bytes, but got {_describe(raw)}")
    if dtype.itemsize == 0:
        raise _UnpicklingError(f"{what}: dtype {dtype} has no item size")
    if len(raw) != numel * dtype.itemsize:
        raise _UnpicklingError(f"{what}: shape {shape} of {dtype} needs {numel * dtype.itemsize} bytes, "
                               f"but the data holds {len(raw)}")
    if dtype.kind == "b" and numel and max(raw) > 1:
        # NumPy would keep the byte; handed on to Ember (from_numpy) a bool other than 0 or 1 is UB in C++
        raise _UnpicklingError(f"{what}: a bool array's bytes must be 0 or 1")
    return np.frombuffer(raw, dtype=dtype, count=numel).reshape(shape, order=order).copy(order="K")


def _build_np_array(state: Any) -> Any:
    np = _np()
    if type(state) is not tuple or len(state) != 5 or state[0] != 1:
        raise _UnpicklingError("numpy.ndarray state must be (1, shape, dtype, is_fortran, data)")
    _, shape, dtype, fortran, raw = state
    if not isinstance(dtype, np.dtype) or type(fortran) is not bool:
        raise _UnpicklingError("numpy.ndarray state must hold a dtype and an is_fortran flag")
    return _array_from(raw, dtype, _check_shape(shape, "numpy array"), fortran, "numpy array")


def _np_frombuffer(*args: Any) -> Any:
    # What ndarray.__reduce_ex__ writes for pickle protocol 5: _frombuffer(buffer, dtype, shape, order).
    np = _np()
    if len(args) != 4 or not isinstance(args[1], np.dtype) or args[3] not in ("C", "F"):
        raise _UnpicklingError("numpy _frombuffer expects (data, dtype, shape, 'C' or 'F')")
    if args[1].hasobject:
        raise _UnpicklingError("numpy _frombuffer cannot hold Python objects")
    return _array_from(args[0], args[1], _check_shape(args[2], "numpy array"), args[3] == "F", "numpy array")


def _np_scalar(*args: Any) -> Any:
    np = _np()
    if len(args) not in (1, 2) or not isinstance(args[0], np.dtype):
        raise _UnpicklingError("numpy scalar expects (dtype, data)")
    dtype = args[0]
    if dtype == np.dtype(object):
        return args[1] if len(args) == 2 else None
    if dtype.hasobject:
        raise _UnpicklingError("numpy scalars of structured dtypes holding Python objects are not supported")
    raw = args[1] if len(args) == 2 else b""
    return _array_from(raw, dtype, (), False, "numpy scalar")[()]


def _common_globals() -> dict[str, Any]:
    table: dict[str, Any] = {
        "collections.OrderedDict": Builtin("collections.OrderedDict", _ordered_dict),
        "collections.Counter": Builtin("collections.Counter", _counter),
        "builtins.set": Builtin("builtins.set", _set),
        "builtins.frozenset": Builtin("builtins.frozenset", _frozenset),
        "builtins.complex": Builtin("builtins.complex", _complex),
        "builtins.bytes": Builtin("builtins.bytes", _bytes),
        "builtins.bytearray": Builtin("builtins.bytearray", _bytearray),
        "_codecs.encode": Builtin("_codecs.encode", _encode_latin1),
    }
    try:
        np = _np()
    except ImportError:  # no NumPy: its names are simply not allowed
        return table
    for core in ("numpy.core", "numpy._core"):
        table[f"{core}.multiarray._reconstruct"] = Builtin(f"{core}.multiarray._reconstruct", _np_reconstruct)
        table[f"{core}.multiarray.scalar"] = Builtin(f"{core}.multiarray.scalar", _np_scalar)
        table[f"{core}.numeric._frombuffer"] = Builtin(f"{core}.numeric._frombuffer", _np_frombuffer)
    table["numpy.ndarray"] = np.ndarray
    table["numpy.dtype"] = Builtin("numpy.dtype", _np_dtype)
    return table


# ----------------------------------------------------------------------------- the interpreter

def _set_new_item(target: dict, key: Any, value: Any) -> None:
    # A dict's pickle never repeats a key: a repeated one is a crafted file trying to make an
    # earlier entry (one a reviewer saw) silently lose to a later one.
    if key in target:
        raise _UnpicklingError(f"duplicate key {_describe(key)} in a {type(target).__name__}")
    target[key] = value


def _unsupported_global(full_name: str, api: str) -> _UnpicklingError:
    return _UnpicklingError(
        f"Unsupported global: GLOBAL {full_name} was not an allowed global by default. Please use "
        f"`{api}.add_safe_globals([{full_name}])` or the `{api}.safe_globals([{full_name}])` context manager "
        "to allowlist this global if you trust this class/function.")


# Note [weights-only unpickling]: the interpreter runs the opcodes Python's pickle defines, with
# these differences, each to keep a crafted file from doing more than describe data:
# - GLOBAL and STACK_GLOBAL resolve names from the allowlist, never by importing;
# - REDUCE calls only allowlisted functions and classes; NEWOBJ builds only allowlisted
#   classes (and Parameter); BUILD fills in only OrderedDicts (their attributes, such as a
#   state dict's _metadata), NumPy objects and instances of allowlisted classes;
# - a dict or set never takes the same key twice (see _set_new_item);
# - tuples and frozensets, the containers that hash their items, are built no deeper than
#   MAX_DEPTH (hashing a deeper one would exhaust the C stack), and the finished object is
#   walked without recursion to hold every container to MAX_DEPTH;
# - every length is checked against the bytes that remain before anything is allocated;
# - INST, OBJ, PERSID (text), EXT1/2/4 and out-of-band buffers, which checkpoints never use,
#   are refused.

class Unpickler:
    """Interprets one pickle. `extra_globals` adds the loader's vocabulary to the allowlist;
    `persistent_load` turns a BINPERSID id into an object (a storage); `encoding` decodes the
    8-bit strings of Python 2 pickles, as pickle.Unpickler's argument does."""

    def __init__(self, data: bytes | bytearray | memoryview, *, extra_globals: dict[str, Any] | None = None,
                 persistent_load: Callable[[Any], Any] | None = None, encoding: str = "utf-8",
                 api: str = "ember.serialization", constructors: dict[type, Callable[..., Any]] | None = None,
                 start: int = 0) -> None:
        # `start`: where this pickle begins in `data` (a legacy checkpoint holds several in a row);
        # after load(), `pos` is just past its STOP.
        self.data = data if isinstance(data, bytes) else bytes(data)
        self.pos = start
        self.encoding = encoding
        self.globals = {**_common_globals(), **(extra_globals or {})}
        self.user = _user_allowed()
        self._user_ids = {id(v) for v in self.user.values()}
        self.persistent_load = persistent_load
        self.api = api
        # classes NEWOBJ may build although not registered by the user (nn.Parameter)
        self.constructors = constructors or {}
        self.stack: list[Any] = []
        self.metastack: list[list[Any]] = []
        self.memo: dict[int, Any] = {}
        self.proto = 0
        self._hash_depth: dict[int, tuple[Any, int]] = {}

    # -- reading
    def _read(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise _UnpicklingError(f"pickle data was truncated: {n} bytes wanted at byte {self.pos}, "
                                   f"{len(self.data) - self.pos} remain")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def _readline(self) -> bytes:
        end = self.data.find(b"\n", self.pos)
        if end < 0:
            raise _UnpicklingError("pickle data was truncated: a line opcode has no newline")
        line = self.data[self.pos:end]
        self.pos = end + 1
        return line

    # -- the stacks
    def _pop(self) -> Any:
        if not self.stack:
            raise _UnpicklingError("unpickling stack underflow")
        return self.stack.pop()

    def _top(self) -> Any:
        if not self.stack:
            raise _UnpicklingError("unpickling stack underflow")
        return self.stack[-1]

    def _pop_mark(self) -> list[Any]:
        if not self.metastack:
            raise _UnpicklingError("could not find MARK")
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def _push_hashable(self, obj: Any, items: Iterable[Any]) -> None:
        depth = 1 + max((self._hash_depth[id(i)][1] for i in items if id(i) in self._hash_depth), default=0)
        if depth > MAX_DEPTH:
            raise _UnpicklingError(f"tuples nested deeper than {MAX_DEPTH} levels")
        self._hash_depth[id(obj)] = (obj, depth)  # holding obj keeps its id unique
        self.stack.append(obj)

    def _tuple(self, items: list[Any]) -> None:
        self._push_hashable(tuple(items), items)

    # -- globals
    def _find_global(self, module: str, name: str) -> Any:
        if self.proto < 3:  # Python 2 names, as pickle.Unpickler's fix_imports maps them
            if (module, name) in _compat_pickle.NAME_MAPPING:
                module, name = _compat_pickle.NAME_MAPPING[(module, name)]
            elif module in _compat_pickle.IMPORT_MAPPING:
                module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        if full in self.globals:
            value = self.globals[full]
            if isinstance(value, Refused):
                raise _UnpicklingError(value.message)
            return value
        if full in self.user:
            return self.user[full]
        # PyTorch's names for the same classes (torch.nn.modules.linear.Linear and so on)
        if module == "torch" or module.startswith("torch."):
            ember_name = "ember" + full[len("torch"):]
            if ember_name in self.user:
                return self.user[ember_name]
        raise _unsupported_global(full, self.api)

    def _is_user(self, obj: Any) -> bool:
        return id(obj) in self._user_ids

    # -- the main loop
    def load(self) -> Any:
        dispatch = self._dispatch
        data = self.data
        while True:
            if self.pos >= len(data):
                raise _UnpicklingError("pickle data was truncated: no STOP opcode")
            op = data[self.pos]
            self.pos += 1
            handler = dispatch.get(op)
            if handler is None:
                raise _UnpicklingError(f"unsupported pickle opcode {bytes([op])!r} at byte {self.pos - 1}")
            if handler(self):
                break
        if len(self.stack) != 1 or self.metastack:
            raise _UnpicklingError("pickle data ended with a malformed stack")
        result = self._resolve(self.stack.pop())
        _check_depth(result)
        return result

    def _resolve(self, obj: Any) -> Any:
        if isinstance(obj, _Pending):
            if obj.result is None:
                raise _UnpicklingError(f"a numpy {obj.kind} was never given its state (no BUILD)")
            return obj.result
        return obj

    # opcode handlers: return True at STOP
    def op_proto(self) -> None:
        self.proto = self._read(1)[0]
        if self.proto > pickle.HIGHEST_PROTOCOL:
            raise _UnpicklingError(f"unsupported pickle protocol {self.proto}")

    def op_frame(self) -> None:
        (size,) = struct.unpack("<Q", self._read(8))
        if size > len(self.data) - self.pos:
            raise _UnpicklingError("pickle data was truncated: a frame runs past the end")

    def op_stop(self) -> bool:
        return True

    def op_mark(self) -> None:
        self.metastack.append(self.stack)
        self.stack = []

    def op_pop(self) -> None:
        if self.stack:
            self.stack.pop()
        else:
            self._pop_mark()

    def op_pop_mark(self) -> None:
        self._pop_mark()

    def op_dup(self) -> None:
        self.stack.append(self._top())

    # scalars
    def op_none(self) -> None:
        self.stack.append(None)

    def op_true(self) -> None:
        self.stack.append(True)

    def op_false(self) -> None:
        self.stack.append(False)

    def op_int(self) -> None:
        line = self._readline()
        if line == b"00":
            self.stack.append(False)
        elif line == b"01":
            self.stack.append(True)
        else:
            self.stack.append(self._parse_int(line))

    def op_long(self) -> None:
        line = self._readline()
        self.stack.append(self._parse_int(line[:-1] if line.endswith(b"L") else line))

    @staticmethod
    def _parse_int(text: bytes) -> int:
        try:
            return int(text)
        except ValueError:
            raise _UnpicklingError(f"malformed integer {text[:40]!r}") from None

    def op_binint(self) -> None:
        self.stack.append(struct.unpack("<i", self._read(4))[0])

    def op_binint1(self) -> None:
        self.stack.append(self._read(1)[0])

    def op_binint2(self) -> None:
        self.stack.append(struct.unpack("<H", self._read(2))[0])

    def op_long1(self) -> None:
        n = self._read(1)[0]
        self.stack.append(int.from_bytes(self._read(n), "little", signed=True))

    def op_long4(self) -> None:
        (n,) = struct.unpack("<i", self._read(4))
        if n < 0:
            raise _UnpicklingError("LONG4 byte count is negative")
        self.stack.append(int.from_bytes(self._read(n), "little", signed=True))

    def op_float(self) -> None:
        line = self._readline()
        try:
            self.stack.append(float(line))
        except ValueError:
            raise _UnpicklingError(f"malformed float {line[:40]!r}") from None

    def op_binfloat(self) -> None:
        self.stack.append(struct.unpack(">d", self._read(8))[0])

    # strings and bytes
    def _decode8(self, raw: bytes) -> str | bytes:
        if self.encoding == "bytes":
            return raw
        return raw.decode(self.encoding)

    def op_string(self) -> None:
        line = self._readline()
        if len(line) < 2 or line[0] != line[-1] or line[:1] not in (b"'", b'"'):
            raise _UnpicklingError("the STRING opcode argument must be quoted")
        self.stack.append(self._decode8(codecs.escape_decode(line[1:-1])[0]))

    def op_binstring(self) -> None:
        (n,) = struct.unpack("<i", self._read(4))
        self.stack.append(self._decode8(self._read(n)))

    def op_short_binstring(self) -> None:
        self.stack.append(self._decode8(self._read(self._read(1)[0])))

    def op_unicode(self) -> None:
        self.stack.append(str(self._readline(), "raw-unicode-escape"))

    def op_binunicode(self) -> None:
        (n,) = struct.unpack("<I", self._read(4))
        self.stack.append(str(self._read(n), "utf-8", "surrogatepass"))

    def op_short_binunicode(self) -> None:
        self.stack.append(str(self._read(self._read(1)[0]), "utf-8", "surrogatepass"))

    def op_binunicode8(self) -> None:
        (n,) = struct.unpack("<Q", self._read(8))
        self.stack.append(str(self._read(n), "utf-8", "surrogatepass"))

    def op_binbytes(self) -> None:
        (n,) = struct.unpack("<I", self._read(4))
        self.stack.append(self._read(n))

    def op_short_binbytes(self) -> None:
        self.stack.append(self._read(self._read(1)[0]))

    def op_binbytes8(self) -> None:
        (n,) = struct.unpack("<Q", self._read(8))
        self.stack.append(self._read(n))

    def op_bytearray8(self) -> None:
        (n,) = struct.unpack("<Q", self._read(8))
        self.stack.append(bytearray(self._read(n)))

    # containers
    def op_empty_tuple(self) -> None:
        self.stack.append(())

    def op_tuple(self) -> None:
        self._tuple(self._pop_mark())

    def op_tuple1(self) -> None:
        self._tuple([self._pop()])

    def op_tuple2(self) -> None:
        b, a = self._pop(), self._pop()
        self._tuple([a, b])

    def op_tuple3(self) -> None:
        c, b, a = self._pop(), self._pop(), self._pop()
        self._tuple([a, b, c])

    def op_empty_list(self) -> None:
        self.stack.append([])

    def op_list(self) -> None:
        self.stack.append(self._pop_mark())

    def op_append(self) -> None:
        item = self._pop()
        target = self._top()
        if type(target) is not list:
            raise _UnpicklingError(f"APPEND needs a list, but got {_describe(target)}")
        target.append(item)

    def op_appends(self) -> None:
        items = self._pop_mark()
        target = self._top()
        if type(target) is not list:
            raise _UnpicklingError(f"APPENDS needs a list, but got {_describe(target)}")
        target.extend(items)

    def op_empty_dict(self) -> None:
        self.stack.append({})

    def op_dict(self) -> None:
        items = self._pop_mark()
        if len(items) % 2:
            raise _UnpicklingError("DICT needs key/value pairs")
        out: dict = {}
        for i in range(0, len(items), 2):
            _set_new_item(out, items[i], items[i + 1])
        self.stack.append(out)

    def _dict_target(self, opcode: str) -> dict:
        target = self._top()
        if type(target) not in (dict, collections.OrderedDict, collections.Counter):
            raise _UnpicklingError(f"{opcode} needs a dict, OrderedDict or Counter, but got {_describe(target)}")
        return target

    def op_setitem(self) -> None:
        value, key = self._pop(), self._pop()
        _set_new_item(self._dict_target("SETITEM"), key, value)

    def op_setitems(self) -> None:
        items = self._pop_mark()
        if len(items) % 2:
            raise _UnpicklingError("SETITEMS needs key/value pairs")
        target = self._dict_target("SETITEMS")
        for i in range(0, len(items), 2):
            _set_new_item(target, items[i], items[i + 1])

    def op_empty_set(self) -> None:
        self.stack.append(set())

    def op_additems(self) -> None:
        items = self._pop_mark()
        target = self._top()
        if type(target) is not set:
            raise _UnpicklingError(f"ADDITEMS needs a set, but got {_describe(target)}")
        for item in items:
            if item in target:
                raise _UnpicklingError(f"duplicate entry {_describe(item)} in a set")
            target.add(item)

    def op_frozenset(self) -> None:
        items = self._pop_mark()
        self._push_hashable(frozenset(_unique_set(items, "frozenset")), items)

    # memo
    def _get(self, index: int) -> None:
        if index not in self.memo:
            raise _UnpicklingError(f"memo key {index} was never stored")
        self.stack.append(self._resolve_if_built(self.memo[index]))

    @staticmethod
    def _resolve_if_built(obj: Any) -> Any:
        return obj.result if isinstance(obj, _Pending) and obj.result is not None else obj

    def op_get(self) -> None:
        self._get(self._parse_int(self._readline()))

    def op_binget(self) -> None:
        self._get(self._read(1)[0])

    def op_long_binget(self) -> None:
        self._get(struct.unpack("<I", self._read(4))[0])

    def _put(self, index: int) -> None:
        if index < 0:
            raise _UnpicklingError("negative memo key")
        self.memo[index] = self._top()

    def op_put(self) -> None:
        self._put(self._parse_int(self._readline()))

    def op_binput(self) -> None:
        self._put(self._read(1)[0])

    def op_long_binput(self) -> None:
        self._put(struct.unpack("<I", self._read(4))[0])

    def op_memoize(self) -> None:
        self.memo[len(self.memo)] = self._top()

    # the risky ones
    def op_global(self) -> None:
        module = self._readline().decode("utf-8")
        name = self._readline().decode("utf-8")
        self.stack.append(self._find_global(module, name))

    def op_stack_global(self) -> None:
        name, module = self._pop(), self._pop()
        if type(name) is not str or type(module) is not str:
            raise _UnpicklingError("STACK_GLOBAL needs a module name and a name")
        self.stack.append(self._find_global(module, name))

    def op_reduce(self) -> None:
        args = self._pop()
        func = self._pop()
        if type(args) is not tuple:
            raise _UnpicklingError(f"REDUCE needs a tuple of arguments, but got {_describe(args)}")
        args = tuple(self._resolve_if_built(a) for a in args)
        if isinstance(func, Builtin):
            self.stack.append(func.fn(*args))
        elif self._is_user(func):
            self.stack.append(func(*args))
        else:
            raise _UnpicklingError(f"REDUCE may only call allowlisted functions and classes, but got {_describe(func)}")

    def _newobj(self, cls: Any, args: Any, kwargs: Any) -> None:
        if type(args) is not tuple or type(kwargs) is not dict:
            raise _UnpicklingError("NEWOBJ needs a tuple of arguments")
        if isinstance(cls, type) and cls in self.constructors:
            self.stack.append(self.constructors[cls](*args, **kwargs))
        elif isinstance(cls, type) and self._is_user(cls):
            self.stack.append(cls.__new__(cls, *args, **kwargs))
        else:
            raise _UnpicklingError(f"NEWOBJ may only build allowlisted classes, but got {_describe(cls)}")

    def op_newobj(self) -> None:
        args = self._pop()
        self._newobj(self._pop(), args, {})

    def op_newobj_ex(self) -> None:
        kwargs, args = self._pop(), self._pop()
        self._newobj(self._pop(), args, kwargs)

    def op_build(self) -> None:
        state = self._resolve_if_built(self._pop())
        inst = self._top()
        if isinstance(inst, _Pending):
            if inst.result is not None:
                raise _UnpicklingError(f"a numpy {inst.kind} was given its state twice")
            inst.result = _build_np_array(state) if inst.kind == "ndarray" else _build_np_dtype(inst, state)
            self.stack[-1] = inst.result
        elif type(inst) is collections.OrderedDict:
            # a state dict's attributes, such as _metadata
            _set_attributes(inst, state)
        elif self._is_user(type(inst)):
            setstate = getattr(inst, "__setstate__", None)
            if setstate is not None:
                setstate(state)
            else:
                _set_attributes(inst, state)
        else:
            raise _UnpicklingError("BUILD may only fill in OrderedDicts, NumPy objects and allowlisted classes, "
                                   f"but got {_describe(inst)}")

    def op_binpersid(self) -> None:
        pid = self._pop()
        if self.persistent_load is None:
            raise _UnpicklingError("this pickle refers to external data (a persistent id), which it may not")
        self.stack.append(self.persistent_load(pid))

    def op_refused(self) -> None:
        op = self.data[self.pos - 1:self.pos]
        raise _UnpicklingError(f"pickle opcode {op!r} ({_REFUSED[op[0]]}) is not allowed with weights_only=True")

    _dispatch: dict[int, Callable[[Unpickler], Any]] = {}


def _set_attributes(inst: Any, state: Any) -> None:
    """BUILD's default, as pickle's load_build applies it: a dict state goes into the instance's
    __dict__ (no __setattr__ runs), a (dict state, slot state) pair sets the slots by setattr."""
    slots = None
    if type(state) is tuple and len(state) == 2:
        state, slots = state
    for part, into_dict in ((state, True), (slots, False)):
        if part is None:
            continue
        if not isinstance(part, dict) or not all(type(k) is str for k in part):
            raise _UnpicklingError(f"BUILD state must be a dict with str keys, but got {_describe(part)}")
        if into_dict:
            inst.__dict__.update(part)
            continue
        for key, value in part.items():
            if key.startswith("__"):
                raise _UnpicklingError(f"BUILD may not set attribute {key!r}")
            setattr(inst, key, value)


_REFUSED = {ord("i"): "INST", ord("o"): "OBJ", ord("P"): "PERSID", 0x82: "EXT1", 0x83: "EXT2", 0x84: "EXT4",
            0x97: "NEXT_BUFFER", 0x98: "READONLY_BUFFER"}

Unpickler._dispatch = {
    pickle.PROTO[0]: Unpickler.op_proto, pickle.FRAME[0]: Unpickler.op_frame, pickle.STOP[0]: Unpickler.op_stop,
    pickle.MARK[0]: Unpickler.op_mark, pickle.POP[0]: Unpickler.op_pop, pickle.POP_MARK[0]: Unpickler.op_pop_mark,
    pickle.DUP[0]: Unpickler.op_dup,
    pickle.NONE[0]: Unpickler.op_none, pickle.NEWTRUE[0]: Unpickler.op_true, pickle.NEWFALSE[0]: Unpickler.op_false,
    pickle.INT[0]: Unpickler.op_int, pickle.LONG[0]: Unpickler.op_long, pickle.BININT[0]: Unpickler.op_binint,
    pickle.BININT1[0]: Unpickler.op_binint1, pickle.BININT2[0]: Unpickler.op_binint2,
    pickle.LONG1[0]: Unpickler.op_long1, pickle.LONG4[0]: Unpickler.op_long4,
    pickle.FLOAT[0]: Unpickler.op_float, pickle.BINFLOAT[0]: Unpickler.op_binfloat,
    pickle.STRING[0]: Unpickler.op_string, pickle.BINSTRING[0]: Unpickler.op_binstring,
    pickle.SHORT_BINSTRING[0]: Unpickler.op_short_binstring, pickle.UNICODE[0]: Unpickler.op_unicode,
    pickle.BINUNICODE[0]: Unpickler.op_binunicode, pickle.SHORT_BINUNICODE[0]: Unpickler.op_short_binunicode,
    pickle.BINUNICODE8[0]: Unpickler.op_binunicode8, pickle.BINBYTES[0]: Unpickler.op_binbytes,
    pickle.SHORT_BINBYTES[0]: Unpickler.op_short_binbytes, pickle.BINBYTES8[0]: Unpickler.op_binbytes8,
    pickle.BYTEARRAY8[0]: Unpickler.op_bytearray8,
    pickle.EMPTY_TUPLE[0]: Unpickler.op_empty_tuple, pickle.TUPLE[0]: Unpickler.op_tuple,
    pickle.TUPLE1[0]: Unpickler.op_tuple1, pickle.TUPLE2[0]: Unpickler.op_tuple2,
    pickle.TUPLE3[0]: Unpickler.op_tuple3,
    pickle.EMPTY_LIST[0]: Unpickler.op_empty_list, pickle.LIST[0]: Unpickler.op_list,
    pickle.APPEND[0]: Unpickler.op_append, pickle.APPENDS[0]: Unpickler.op_appends,
    pickle.EMPTY_DICT[0]: Unpickler.op_empty_dict, pickle.DICT[0]: Unpickler.op_dict,
    pickle.SETITEM[0]: Unpickler.op_setitem, pickle.SETITEMS[0]: Unpickler.op_setitems,
    pickle.EMPTY_SET[0]: Unpickler.op_empty_set, pickle.ADDITEMS[0]: Unpickler.op_additems,
    pickle.FROZENSET[0]: Unpickler.op_frozenset,
    pickle.GET[0]: Unpickler.op_get, pickle.BINGET[0]: Unpickler.op_binget,
    pickle.LONG_BINGET[0]: Unpickler.op_long_binget, pickle.PUT[0]: Unpickler.op_put,
    pickle.BINPUT[0]: Unpickler.op_binput, pickle.LONG_BINPUT[0]: Unpickler.op_long_binput,
    pickle.MEMOIZE[0]: Unpickler.op_memoize,
    pickle.GLOBAL[0]: Unpickler.op_global, pickle.STACK_GLOBAL[0]: Unpickler.op_stack_global,
    pickle.REDUCE[0]: Unpickler.op_reduce, pickle.NEWOBJ[0]: Unpickler.op_newobj,
    pickle.NEWOBJ_EX[0]: Unpickler.op_newobj_ex, pickle.BUILD[0]: Unpickler.op_build,
    pickle.BINPERSID[0]: Unpickler.op_binpersid,
    **{op: Unpickler.op_refused for op in _REFUSED},
}


# ----------------------------------------------------------------------------- the depth walk

def _children(obj: Any) -> list[Any]:
    out: list[Any] = []
    if isinstance(obj, dict):
        for key, value in obj.items():
            out.append(key)
            out.append(value)
    elif isinstance(obj, (list, tuple, set, frozenset)):
        out.extend(obj)
    else:
        np_mod = _np_if_loaded()
        if np_mod is not None and isinstance(obj, np_mod.ndarray):
            if obj.dtype == object:
                out.extend(obj.ravel(order="K").tolist())
            return out
    attributes = getattr(obj, "__dict__", None)
    if isinstance(attributes, dict) and not isinstance(obj, type):
        out.extend(attributes.values())
    return out


def _np_if_loaded() -> Any:
    import sys
    return sys.modules.get("numpy")


_LEAVES = (str, bytes, bytearray, int, float, complex, bool, type(None), type, Builtin)


def _check_depth(root: Any) -> None:
    """Holds the longest chain of containers in `root` to MAX_DEPTH, without recursing: heights
    are computed bottom-up on an explicit stack. A reference back to a container still being
    walked (a cycle, which pickle allows) adds nothing."""
    if isinstance(root, _LEAVES):
        return
    height: dict[int, int] = {}
    best: dict[int, int] = {id(root): 0}
    keep = [root]  # ids stay unique while the objects are alive
    stack: list[tuple[Any, Any]] = [(root, iter(_children(root)))]
    while stack:
        node, items = stack[-1]
        child = next(items, _END)
        if child is _END:
            stack.pop()
            h = best.pop(id(node)) + 1
            if h > MAX_DEPTH:
                raise _UnpicklingError(f"the object nests containers deeper than {MAX_DEPTH} levels")
            height[id(node)] = h
            if stack:
                parent = id(stack[-1][0])
                best[parent] = max(best[parent], h)
            continue
        if isinstance(child, _LEAVES):
            continue
        if isinstance(child, _Pending):
            raise _UnpicklingError(f"a numpy {child.kind} was never given its state (no BUILD)")
        cid = id(child)
        if cid in height:
            best[id(node)] = max(best[id(node)], height[cid])
        elif cid not in best:  # not on the current path
            if len(stack) >= MAX_DEPTH:
                raise _UnpicklingError(f"the object nests containers deeper than {MAX_DEPTH} levels")
            keep.append(child)
            best[cid] = 0
            stack.append((child, iter(_children(child))))


_END = object()
