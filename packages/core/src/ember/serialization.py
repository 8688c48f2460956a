"""ember.serialization: checkpoints (as torch.serialization), and the tensor record plain pickling uses.

Checkpoints: `save`/`load` (also `ember.save`/`ember.load`, see _checkpoint.py), the
`weights_only` allowlist (`add_safe_globals`, `get_safe_globals`, `clear_safe_globals`,
`safe_globals`, `get_unsafe_globals_in_checkpoint`), and `save_safetensors` for the
safetensors layout, which `load` also reads.

The tensor record, below, is what `pickle.dumps(tensor)` stores (DataLoader workers, deepcopy).

A record is plain data, so loading one can never run code:

    b"EMBERTNS"                      8-byte magic
    uint32 little-endian             length of the JSON header
    JSON header                      {"format": 1, "dtype": "float32", "shape": [2, 3], "byteorder": "little"}
    raw element bytes                row-major (C order), little-endian

pickle.dumps(tensor) stores exactly this record (never storage internals or strides), and
pickle.loads rebuilds a fresh contiguous tensor from it; a view pickles as its values.
"""

from __future__ import annotations

import json
import struct
import sys

from . import _C
from ._checkpoint import DEFAULT_PROTOCOL, get_unsafe_globals_in_checkpoint, load, save
from ._safetensors import save_safetensors
from ._weights_only_unpickler import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["save", "load", "DEFAULT_PROTOCOL", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint", "save_safetensors", "tensor_to_bytes",
           "tensor_from_bytes"]

MAGIC = b"EMBERTNS"
FORMAT_VERSION = 1
_MAX_HEADER = 1 << 16


def tensor_to_bytes(tensor: _C.Tensor) -> bytes:
    """One tensor as a checkpoint record (its values, dtype and shape)."""
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"[serialize] expected a Tensor, but got {type(tensor).__name__}")
    header = json.dumps({"format": FORMAT_VERSION, "dtype": str(tensor.dtype).removeprefix("ember."),
                         "shape": list(tensor.shape), "byteorder": sys.byteorder}, separators=(",", ":")).encode()
    return MAGIC + struct.pack("<I", len(header)) + header + _C._to_bytes(tensor)


def tensor_from_bytes(record: bytes) -> _C.Tensor:
    """The tensor a record holds; ValueError naming the problem for anything malformed."""
    if not isinstance(record, (bytes, bytearray, memoryview)):
        raise TypeError(f"[deserialize] expected bytes, but got {type(record).__name__}")
    record = bytes(record)
    if record[:8] != MAGIC:
        raise ValueError("[deserialize] not an Ember tensor record (bad magic)")
    if len(record) < 12:
        raise ValueError("[deserialize] truncated tensor record")
    (size,) = struct.unpack("<I", record[8:12])
    if size > _MAX_HEADER or 12 + size > len(record):
        raise ValueError("[deserialize] truncated or oversized tensor record header")
    try:
        header = json.loads(record[12:12 + size].decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"[deserialize] unreadable tensor record header: {err}") from None
    if not isinstance(header, dict):
        raise ValueError(f"[deserialize] the tensor record header must be an object, but got {header!r}")
    if header.get("format") != FORMAT_VERSION:
        raise ValueError(f"[deserialize] unsupported tensor record format {header.get('format')!r}")
    if header.get("byteorder") != "little":
        raise ValueError(f"[deserialize] unsupported byte order {header.get('byteorder')!r}")
    dtype = getattr(_C, str(header.get("dtype")), None)
    if not isinstance(dtype, _C.dtype):
        raise ValueError(f"[deserialize] unknown dtype {header.get('dtype')!r}")
    shape = header.get("shape")
    # int64 range here (a 2**70 size would escape as TypeError); negative sizes are named by _from_bytes
    if not isinstance(shape, list) or not all(type(s) is int and -(1 << 63) <= s < 1 << 63 for s in shape):
        raise ValueError(f"[deserialize] shape must be a list of integers in int64's range, but got {str(shape)[:80]}")
    return _C._from_bytes(record[12 + size:], shape, dtype)


def _reduce_ex(self: _C.Tensor, protocol: int) -> tuple:
    return tensor_from_bytes, (tensor_to_bytes(self),)


def _reduce_device(self: _C.device) -> tuple:
    return _C.device, (str(self),)


def tensor_methods() -> dict[str, object]:
    """Tensor.__reduce_ex__ (tensors pickle as checkpoint records), for ember/_tensor_methods.py to attach."""
    return {"__reduce_ex__": _reduce_ex}


_C.device.__reduce__ = _reduce_device  # pickles as ember.device("cuda:0"), which ember.load allows
