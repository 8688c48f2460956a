"""The tensor record of Ember's checkpoint format, and pickling through it.

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
    if not isinstance(shape, list) or not all(isinstance(s, int) and not isinstance(s, bool) for s in shape):
        raise ValueError(f"[deserialize] shape must be a list of integers, but got {shape!r}")
    return _C._from_bytes(record[12 + size:], shape, dtype)


def _reduce_ex(self: _C.Tensor, protocol: int) -> tuple:
    return tensor_from_bytes, (tensor_to_bytes(self),)


_C.Tensor.__reduce_ex__ = _reduce_ex
