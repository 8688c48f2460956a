"""ember.save / ember.load: checkpoints in the safetensors layout, which loading never executes.

A file is what the safetensors format specifies, so either tool reads the other's files:

    uint64 little-endian N            length of the header
    N bytes of JSON                   {"__metadata__": {str: str},
                                       name: {"dtype": "F32", "shape": [2, 3], "data_offsets": [b, e]}, ...}
                                      padded with spaces to a multiple of 8
    the data buffer                   each tensor's row-major little-endian bytes at [b, e)

The object saved (a tensor, or dicts/lists/tuples nesting tensors and plain scalars and strings,
such as state dicts and optimizer states) is recorded as JSON in `__metadata__["ember.structure"]`,
naming its tensors. A file without it (one written by safetensors) loads as a dict of tensors.

Loading checks everything before it reads data (Note [checkpoint validation]); a pickle (what
torch.save writes) is refused, never unpickled.
"""

from __future__ import annotations

import json
import math
import os
import struct
import sys
from typing import Any, BinaryIO

from . import _C

# safetensors' own cap: a header larger than this is refused before it is read.
MAX_HEADER_BYTES = 100_000_000
STRUCTURE_KEY = "ember.structure"
FORMAT_KEY = "format"

_DTYPE_CODES = {
    "bool": "BOOL", "uint8": "U8", "int8": "I8", "int16": "I16", "int32": "I32", "int64": "I64",
    "float16": "F16", "bfloat16": "BF16", "float32": "F32", "float64": "F64", "complex64": "C64",
    "float8_e4m3fn": "F8_E4M3", "float8_e5m2": "F8_E5M2",
}
_DTYPES_BY_CODE = {code: getattr(_C, name) for name, code in _DTYPE_CODES.items()}
_ITEMSIZE = {code: dtype.itemsize for code, dtype in _DTYPES_BY_CODE.items()}


def _dtype_name(dtype: _C.dtype) -> str:
    return repr(dtype).removeprefix("ember.")


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
            return {"dtype": _dtype_name(obj)}
        raise TypeError(
            f"[save] cannot store an object of type {type(obj).__name__} at {repr(path) if path else 'the top level'}: "
            "checkpoints hold tensors, dicts, lists, tuples, None, bool, int, float, str and dtypes")

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
    name = _dtype_name(tensor.dtype)
    data = tensor.detach()
    if name == "complex128":
        data = _C.view_as_real(data)
        name = "float64"
    if name not in _DTYPE_CODES:
        raise TypeError(f"[save] cannot store a tensor of dtype {tensor.dtype}")
    raw = _C._to_bytes(data)
    if sys.byteorder != "little" and data.element_size() > 1:
        raise NotImplementedError("[save] writing checkpoints on a big-endian machine is not supported")
    return _DTYPE_CODES[name], list(data.shape), raw


def save(obj: Any, f: str | os.PathLike | BinaryIO, metadata: dict[str, str] | None = None) -> None:
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
            raise TypeError("[save] metadata must map str to str, as safetensors requires")
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
        raise TypeError(f"[save] expected a path or a writable binary file, but got {type(f).__name__}")


# Note [checkpoint validation]: a checkpoint is untrusted input. Before any data is read the
# header must be JSON of bounded size whose entries each name a known dtype, a shape of
# non-negative ints and byte offsets with end - begin = numel * itemsize; the entries, sorted by
# offset, must tile the data buffer exactly (no overlap, no gap, nothing past its end), which is
# also what safetensors requires. The structure record may only name tensors the header holds.

def _bad(message: str) -> ValueError:
    return ValueError(f"[load] invalid checkpoint: {message}")


def _read_all(f: str | os.PathLike | BinaryIO) -> bytes:
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as src:
            return src.read()
    if hasattr(f, "read"):
        data = f.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError("[load] expected a file opened in binary mode")
        return bytes(data)
    raise TypeError(f"[load] expected a path or a readable binary file, but got {type(f).__name__}")


def _refuse_pickles(data: bytes) -> None:
    # torch.save writes a zip archive holding a pickle; older files and pickle.dump start with
    # the PROTO opcode and a protocol number. Neither is ever unpickled: unpickling can run
    # arbitrary code. A safetensors header length can begin with the same byte, but its JSON
    # header then starts at byte 8.
    if data[8:9] == b"{":
        return
    if data[:4] == b"PK\x03\x04" or (data[:1] == b"\x80" and data[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05")):
        raise ValueError(
            "[load] this file is a pickle (what torch.save and pickle.dump write), and ember.load never "
            "unpickles, because unpickling can run arbitrary code. Convert it where you trust it, e.g. "
            "safetensors.torch.save_file(torch.load(path, weights_only=True), new_path), and load that")


def _parse_header(data: bytes) -> tuple[dict[str, str], dict[str, dict], int]:
    if len(data) < 8:
        raise _bad(f"the file holds {len(data)} bytes, fewer than the 8-byte header length")
    (size,) = struct.unpack("<Q", data[:8])
    if size > MAX_HEADER_BYTES:
        raise _bad(f"header length {size} exceeds the {MAX_HEADER_BYTES}-byte limit")
    if 8 + size > len(data):
        raise _bad(f"header length {size} runs past the end of the file ({len(data)} bytes)")
    try:
        header = json.loads(data[8:8 + size].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise _bad(f"the header is not JSON ({err})") from None
    if not isinstance(header, dict):
        raise _bad("the header must be a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise _bad("__metadata__ must map strings to strings")
    buffer_size = len(data) - 8 - size
    spans = []
    for name, entry in header.items():
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise _bad(f"entry {name!r} must hold exactly dtype, shape and data_offsets")
        code, shape, offsets = entry["dtype"], entry["shape"], entry["data_offsets"]
        if code not in _DTYPES_BY_CODE:
            raise _bad(f"entry {name!r} has unsupported dtype {code!r}")
        if not isinstance(shape, list) or not all(type(s) is int and s >= 0 for s in shape):
            raise _bad(f"entry {name!r} has shape {shape!r}; expected a list of non-negative integers")
        if (not isinstance(offsets, list) or len(offsets) != 2
                or not all(type(o) is int and o >= 0 for o in offsets) or offsets[0] > offsets[1]):
            raise _bad(f"entry {name!r} has data_offsets {offsets!r}; expected [begin, end] with 0 <= begin <= end")
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


def _resolve_device(map_location: Any, stored: str = "cpu") -> Any:
    if map_location is None:
        return None
    if isinstance(map_location, dict):
        return map_location.get(stored)
    if isinstance(map_location, (str, _C.device)):
        return map_location
    raise TypeError(f"[load] map_location must be None, a device, a str or a dict, but got {type(map_location).__name__}")


class _Reader:
    def __init__(self, data: bytes, header: dict[str, dict], start: int, complex_names: set[str], device: Any):
        self.data, self.header, self.start = data, header, start
        self.complex_names, self.device = complex_names, device
        self._cache: dict[str, _C.Tensor] = {}

    def tensor(self, name: str) -> _C.Tensor:
        if name not in self._cache:
            entry = self.header[name]
            begin, end = entry["data_offsets"]
            t = _C._from_bytes(self.data[self.start + begin:self.start + end], entry["shape"],
                               _DTYPES_BY_CODE[entry["dtype"]])
            if name in self.complex_names:
                if entry["dtype"] != "F64" or not entry["shape"] or entry["shape"][-1] != 2:
                    raise _bad(f"complex128 entry {name!r} must be float64 pairs")
                t = _C.view_as_complex(t).clone()
            if self.device is not None:
                t = t.to(self.device)
            self._cache[name] = t
        return self._cache[name]

    def decode(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, dict) and len(node) == 1:
            (kind, value), = node.items()
            if kind == "tensor" and isinstance(value, str):
                if value not in self.header:
                    raise _bad(f"the structure names tensor {value!r}, which the header does not hold")
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
                    out[key] = self.decode(v)
                return out
            if kind == "float" and value in ("inf", "-inf", "nan"):
                return float(value)
            if kind == "dtype" and (value in _DTYPE_CODES or value == "complex128"):
                return getattr(_C, value)
        raise _bad(f"unreadable structure record {str(node)[:80]!r}")


def load(f: str | os.PathLike | BinaryIO, map_location: Any = None, weights_only: bool | None = None,
         **kwargs: Any) -> Any:
    """Read what `save` wrote (or any safetensors file, as a dict of tensors) from `f`.

    map_location: None (CPU), a device or device string, or a dict such as {"cuda:0": "cpu"}.
    weights_only is accepted for torch.load compatibility; Ember only ever loads plain data.
    """
    if kwargs:
        raise TypeError(f"[load] got unexpected keyword argument {next(iter(kwargs))!r}")
    data = _read_all(f)
    _refuse_pickles(data)
    metadata, header, start = _parse_header(data)
    structure = metadata.get(STRUCTURE_KEY)
    if structure is None:  # a plain safetensors file: its tensors by name, in file order
        names = sorted(header, key=lambda n: header[n]["data_offsets"])
        reader = _Reader(data, header, start, set(), _resolve_device(map_location))
        return {name: reader.tensor(name) for name in names}
    try:
        record = json.loads(structure)
    except json.JSONDecodeError as err:
        raise _bad(f"the {STRUCTURE_KEY} record is not JSON ({err})") from None
    if not isinstance(record, dict) or set(record) != {"object", "complex128"} or not isinstance(record["complex128"], list):
        raise _bad(f"the {STRUCTURE_KEY} record must hold 'object' and a 'complex128' list")
    reader = _Reader(data, header, start, set(record["complex128"]), _resolve_device(map_location))
    return reader.decode(record["object"])
