"""Checkpoints in the safetensors layout, which loading never executes.

    uint64 little-endian N            length of the header
    N bytes of JSON                   {"__metadata__": {str: str},
                                       name: {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...}
                                      padded with spaces to a multiple of 8
    the data buffer                   each tensor's row-major little-endian bytes at [b, e)

`save_safetensors` writes any nesting of dicts/lists/tuples holding tensors and plain scalars
and strings (state dicts, optimizer states), recorded as JSON in
`__metadata__["ember.structure"]` that names its tensors. A file without that record (one
written by the safetensors library) loads as a dict of tensors. `ember.load` recognises this
layout by itself.

Every malformed file raises ValueError naming the problem (Note [safetensors validation]).
"""

from __future__ import annotations

import json
import math
import os
import re
import struct
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np

from . import _C
from ._buffers import dtype_name, tensor_from_buffer

__all__ = ["save_safetensors", "read", "looks_like_safetensors", "MAX_HEADER_BYTES", "MAX_JSON_DEPTH"]

# safetensors' own cap: a header larger than this is refused before it is read.
MAX_HEADER_BYTES = 100_000_000
# JSON nesting allowed in the header and in the structure record: each container level of the
# saved object costs two or three JSON levels, so this admits ~80 levels of Python nesting.
MAX_JSON_DEPTH = 256
_MAX_INT64 = (1 << 63) - 1
STRUCTURE_KEY = "ember.structure"
FORMAT_KEY = "format"

_DTYPE_CODES = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64", "complex64": "C64",
    "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
}
_DTYPES_BY_CODE = {code: getattr(_C, name) for name, code in _DTYPE_CODES.items()}
_ITEMSIZE = {code: dtype.itemsize for code, dtype in _DTYPES_BY_CODE.items()}


class _Writer:
    """Walks the object, naming each tensor once and encoding everything else as JSON."""

    def __init__(self) -> None:
        self.tensors: dict[str, _C.Tensor] = {}
        self._names_by_id: dict[int, str] = {}

    def encode(self, obj: Any, path: str) -> Any:
        if isinstance(obj, _C.Tensor):
            return {"tensor": self._name(obj, path)}
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return obj
        if isinstance(obj, float):
            return obj if math.isfinite(obj) else {"float": repr(obj)}
        if isinstance(obj, dict):
            return {"dict": [[self.encode(k, path), self.encode(v, _join(path, k))] for k, v in obj.items()]}
        if isinstance(obj, list):
            return {"list": [self.encode(v, _join(path, i)) for i, v in enumerate(obj)]}
        if isinstance(obj, tuple):
            return {"tuple": [self.encode(v, _join(path, i)) for i, v in enumerate(obj)]}
        if isinstance(obj, _C.dtype):
            return {"dtype": dtype_name(obj)}
        raise TypeError(
            f"[save_safetensors] cannot store an object of type {type(obj).__name__} at "
            f"{repr(path) if path else 'the top level'}: the safetensors layout holds tensors, dicts, lists, "
            "tuples, None, bool, int, float, str and dtypes (ember.save stores any picklable object)")

    def _name(self, tensor: _C.Tensor, path: str) -> str:
        # The same tensor object saved twice (tied weights) is stored once and loads as one tensor.
        if id(tensor) in self._names_by_id:
            return self._names_by_id[id(tensor)]
        name, n = path or "tensor", 1
        while name in self.tensors:
            n += 1
            name = f"{path or 'tensor'}#{n}"
        self._names_by_id[id(tensor)] = name
        self.tensors[name] = tensor if tensor.device.type == "cpu" else tensor.to("cpu")
        return name


def _join(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _tensor_bytes(tensor: _C.Tensor) -> tuple[str, list[int], bytes]:
    """(safetensors dtype code, shape, bytes); complex128, which safetensors lacks, as F64 pairs."""
    name = dtype_name(tensor.dtype)
    data = tensor.detach()
    if name == "complex128":
        data = _C.view_as_real(data)
        name = "float64"
    if name not in _DTYPE_CODES:
        raise TypeError(f"[save_safetensors] cannot store a tensor of dtype {tensor.dtype}")
    if sys.byteorder != "little" and data.element_size() > 1:
        raise NotImplementedError("[save_safetensors] writing checkpoints on a big-endian machine is not supported")
    return _DTYPE_CODES[name], list(data.shape), _C._to_bytes(data)


def save_safetensors(obj: Any, f: str | os.PathLike | BinaryIO, metadata: dict[str, str] | None = None) -> None:
    """Write `obj` to `f` (a path or a writable binary file) in the safetensors layout.

    `metadata` adds string pairs to the header's `__metadata__`, as safetensors' save_file does.
    """
    writer = _Writer()
    structure = writer.encode(obj, "")
    header: dict[str, Any] = {}
    complex_names = []
    chunks, offset = [], 0
    for name, tensor in writer.tensors.items():
        if tensor.dtype == _C.complex128:
            complex_names.append(name)
        code, shape, raw = _tensor_bytes(tensor)
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    meta = {FORMAT_KEY: "ember", STRUCTURE_KEY: json.dumps({"object": structure, "complex128": complex_names})}
    if metadata is not None:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise TypeError("[save_safetensors] metadata must map str to str, as safetensors requires")
        meta = {**metadata, **meta}
    header = {"__metadata__": meta, **header}
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    payload = [struct.pack("<Q", len(encoded)), encoded, *chunks]
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            out.writelines(payload)
    elif hasattr(f, "write"):
        for part in payload:
            f.write(part)
    else:
        raise TypeError(f"[save_safetensors] expected a path or a writable binary file, but got {type(f).__name__}")


# Note [safetensors validation]: a checkpoint is untrusted input. Before any data is read the
# header must be JSON of bounded size and nesting (measured before parsing, so the parser never
# recurses deeply), without repeated keys, whose entries each name a known dtype, a shape of
# integers in [0, 2**63) whose product fits in int64, and byte offsets with end - begin = numel *
# itemsize; the entries, sorted by offset, must tile the data buffer exactly (no overlap, no gap,
# nothing past its end), which is also what safetensors requires. The structure record passes
# the same JSON checks and may only name tensors the header holds; its dict keys must be
# hashable and distinct.

def _bad(message: str) -> ValueError:
    return ValueError(f"[load] invalid checkpoint: {message}")


def looks_like_safetensors(head: bytes) -> bool:
    """The first bytes of a safetensors file: an 8-byte length, then the JSON header's '{'."""
    return head[8:9] == b"{"


_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _json_depth(text: bytes) -> int:
    """The deepest nesting of [ and { outside strings, found without a recursive parser."""
    bare = np.frombuffer(_JSON_STRING.sub(b"", text), dtype=np.uint8)
    steps = (bare == ord("[")).astype(np.int64) + (bare == ord("{")) - (bare == ord("]")) - (bare == ord("}"))
    return int(np.cumsum(steps).max()) if steps.size else 0


def _no_repeated_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _bad(f"the key {key[:80]!r} appears twice in one JSON object")
        out[key] = value
    return out


def _parse_json(text: bytes, what: str) -> Any:
    if _json_depth(text) > MAX_JSON_DEPTH:
        raise _bad(f"{what} nests deeper than {MAX_JSON_DEPTH} levels")
    try:
        return json.loads(text.decode("utf-8"), object_pairs_hook=_no_repeated_keys)
    except UnicodeDecodeError as err:
        raise _bad(f"{what} is not UTF-8 ({err})") from None
    except json.JSONDecodeError as err:
        raise _bad(f"{what} is not JSON ({err})") from None


def _is_int(value: Any, low: int = 0) -> bool:
    return type(value) is int and low <= value <= _MAX_INT64


def parse_header(data: Any) -> tuple[dict[str, str], dict[str, dict], int]:
    """(metadata, entries, start of the data buffer) of a safetensors file held by `data`."""
    if len(data) < 8:
        raise _bad(f"the file holds {len(data)} bytes, fewer than the 8-byte header length")
    (size,) = struct.unpack("<Q", data[:8])
    if size > MAX_HEADER_BYTES:
        raise _bad(f"header length {size} exceeds the {MAX_HEADER_BYTES}-byte limit")
    if 8 + size > len(data):
        raise _bad(f"header length {size} runs past the end of the file ({len(data)} bytes)")
    header = _parse_json(bytes(data[8:8 + size]), "the header")
    if not isinstance(header, dict):
        raise _bad("the header must be a JSON object")
    metadata = header.pop("__metadata__", {})
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _bad("__metadata__ must map strings to strings")
    buffer_size = len(data) - 8 - size
    spans = []
    for name, entry in header.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise _bad(f"entry {name!r} must hold exactly dtype, shape and data_offsets")
        code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if not isinstance(code, str) or code not in _DTYPES_BY_CODE:
            raise _bad(f"entry {name!r} has unsupported dtype {str(code)[:40]!r}")
        if not isinstance(shape, list) or not all(_is_int(s) for s in shape):
            raise _bad(f"entry {name!r} has shape {str(shape)[:80]}; expected a list of integers in [0, 2**63)")
        if math.prod(max(s, 1) for s in shape) > _MAX_INT64:
            raise _bad(f"entry {name!r} has shape {str(shape)[:80]}, whose size overflows int64")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(_is_int(o) for o in offsets) or offsets[0] > offsets[1]):
            raise _bad(f"entry {name!r} has data_offsets {str(offsets)[:80]}; expected [begin, end] with 0 <= begin <= end")
        nbytes = math.prod(shape) * _ITEMSIZE[code]
        if offsets[1] - offsets[0] != nbytes:
            raise _bad(f"entry {name!r} of dtype {code} and shape {shape} needs {nbytes} bytes, "
                       f"but its data_offsets {offsets} span {offsets[1] - offsets[0]}")
        if offsets[1] > buffer_size:
            raise _bad(f"entry {name!r} ends at byte {offsets[1]}, past the {buffer_size}-byte data buffer")
        spans.append((offsets[0], offsets[1], name))
    end = 0
    for begin, stop, name in sorted(spans):
        if begin < end:
            raise _bad(f"entry {name!r} at bytes [{begin}, {stop}) overlaps the entry before it")
        if begin > end:
            raise _bad(f"bytes [{end}, {begin}) before entry {name!r} belong to no tensor")
        end = stop
    if end != buffer_size:
        raise _bad(f"bytes [{end}, {buffer_size}) at the end of the data buffer belong to no tensor")
    return metadata, header, 8 + size


class _Reader:
    def __init__(self, data: Any, header: dict[str, dict], start: int, complex_names: set[str],
                 place: Callable[[_C.Tensor], _C.Tensor], share: bool):
        self.data, self.header, self.start = data, header, start
        self.complex_names, self.place, self.share = complex_names, place, share
        self._cache: dict[str, _C.Tensor] = {}

    def tensor(self, name: str) -> _C.Tensor:
        if name not in self._cache:
            entry = self.header[name]
            begin, end = entry["data_offsets"]
            dtype, shape = _DTYPES_BY_CODE[entry["dtype"]], entry["shape"]
            if name in self.complex_names and (entry["dtype"] != "F64" or not shape or shape[-1] != 2):
                raise _bad(f"complex128 entry {name!r} must be float64 pairs")
            view = memoryview(self.data)[self.start + begin:self.start + end]
            t = tensor_from_buffer(view, math.prod(shape), dtype, share=self.share).reshape(shape)
            if name in self.complex_names:
                t = _C.view_as_complex(t).clone()
            self._cache[name] = self.place(t)
        return self._cache[name]

    def decode(self, node: Any) -> Any:
        # Recursion is bounded: the record's JSON nesting was held to MAX_JSON_DEPTH, and each
        # call here consumes at least one JSON level.
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, dict) and len(node) == 1:
            (kind, value), = node.items()
            if kind == "tensor" and isinstance(value, str):
                if value not in self.header:
                    raise _bad(f"the structure names tensor {value[:80]!r}, which the header does not hold")
                return self.tensor(value)
            if kind == "list" and isinstance(value, list):
                return [self.decode(v) for v in value]
            if kind == "tuple" and isinstance(value, list):
                return tuple(self.decode(v) for v in value)
            if kind == "dict" and isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
                out = {}
                for k, v in value:
                    key = self.decode(k)
                    if isinstance(key, (list, dict, _C.Tensor)):
                        raise _bad(f"a dict key cannot be a {type(key).__name__}")
                    try:
                        repeated = key in out
                    except TypeError:  # a tuple holding a list
                        raise _bad(f"a dict key cannot be an unhashable {type(key).__name__}") from None
                    if repeated:
                        raise _bad(f"the dict key {str(key)[:80]!r} appears twice")
                    out[key] = self.decode(v)
                return out
            if kind == "float" and value in ("inf", "-inf", "nan"):
                return float(value)
            if kind == "dtype" and isinstance(value, str) and (value in _DTYPE_CODES or value == "complex128"):
                return getattr(_C, value)
        raise _bad(f"unreadable structure record {str(node)[:80]!r}")


def read(data: Any, place: Callable[[_C.Tensor], _C.Tensor], share: bool = False) -> Any:
    """What `save_safetensors` wrote (or any safetensors file, as a dict of tensors), from the
    file's bytes `data` (bytes or a file mapping; share=True lets tensors use its memory).
    `place` moves each tensor where map_location says."""
    metadata, header, start = parse_header(data)
    structure = metadata.get(STRUCTURE_KEY)
    if structure is None:  # a plain safetensors file: its tensors by name, in file order
        names = sorted(header, key=lambda n: header[n]["data_offsets"])
        reader = _Reader(data, header, start, set(), place, share)
        return {name: reader.tensor(name) for name in names}
    record = _parse_json(structure.encode("utf-8", "surrogatepass"), f"the {STRUCTURE_KEY} record")
    if (not isinstance(record, dict) or set(record) != {"object", "complex128"} or not isinstance(record["complex128"], list)
            or not all(isinstance(n, str) for n in record["complex128"])):
        raise _bad(f"the {STRUCTURE_KEY} record must hold 'object' and a 'complex128' list of names")
    reader = _Reader(data, header, start, set(record["complex128"]), place, share)
    return reader.decode(record["object"])
