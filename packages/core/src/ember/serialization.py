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

A quantized tensor (quint8, qint8, qint32, quint4x2, quint2x4) adds its quantizer to the header, and for a
per-channel one its scales and zero points to the bytes, so a copy has the same integers,
qscheme, scale(s), zero point(s) and axis:

    header "quantizer"  {"qscheme": "per_tensor_affine", "scale": 0.1, "zero_point": 3}
                     or {"qscheme": "per_channel_affine", "axis": 0,
                         "scales_dtype": "float64", "zero_points_dtype": "int64"}
    raw bytes           integers (uint8 / int8 / int32; quint4x2 / quint2x4: their packed
                        bytes, ceil(numel / 2 or 4)), then, per channel only, the scales
                        and the zero points (shape[axis] elements each)

The native constructors check what they rebuild (scales positive and finite, zero points in
the dtype's range, axis in range), so a record cannot make an invalid quantized tensor.
"""

from __future__ import annotations

import json
import struct
import sys

from . import _C
from ._checkpoint import DEFAULT_PROTOCOL, get_unsafe_globals_in_checkpoint, load, save
from ._quantized import SUB_BYTE_BITS, codes_from_packed
from ._safetensors import save_safetensors
from ._weights_only_unpickler import add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals

__all__ = ["save", "load", "DEFAULT_PROTOCOL", "add_safe_globals", "get_safe_globals", "clear_safe_globals",
           "safe_globals", "get_unsafe_globals_in_checkpoint", "save_safetensors", "tensor_to_bytes",
           "tensor_from_bytes"]

MAGIC = b"EMBERTNS"
FORMAT_VERSION = 1
_MAX_HEADER = 1 << 16


def _dtype_name(dtype: _C.dtype) -> str:
    return str(dtype).removeprefix("ember.")


def tensor_to_bytes(tensor: _C.Tensor) -> bytes:
    """One tensor as a checkpoint record (its values, dtype and shape; a quantized tensor's quantizer)."""
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"[serialize] expected a Tensor, but got {type(tensor).__name__}")
    fields = {"format": FORMAT_VERSION, "dtype": _dtype_name(tensor.dtype), "shape": list(tensor.shape),
              "byteorder": sys.byteorder}
    body = _C._to_bytes(tensor)  # a quantized tensor's integers
    quantizer = _C._quantizer(tensor)
    if quantizer is not None:
        from ._quantized import _QSCHEMES

        code, scale, zero_point, scales, points, axis = quantizer
        if scales is None:
            fields["quantizer"] = {"qscheme": _QSCHEMES[code].name, "scale": scale, "zero_point": zero_point}
        else:
            fields["quantizer"] = {"qscheme": _QSCHEMES[code].name, "axis": axis,
                                   "scales_dtype": _dtype_name(scales.dtype),
                                   "zero_points_dtype": _dtype_name(points.dtype)}
            body += _C._to_bytes(scales) + _C._to_bytes(points)
    header = json.dumps(fields, separators=(",", ":")).encode()
    return MAGIC + struct.pack("<I", len(header)) + header + body


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
    if dtype in _QUANTIZED_INTS:
        return _quantized_from_record(header, record[12 + size:], shape, dtype)
    if "quantizer" in header:
        raise ValueError(f"[deserialize] a {header['dtype']} tensor record cannot have a quantizer")
    return _C._from_bytes(record[12 + size:], shape, dtype)


# quantized dtype -> the integer dtype its record's bytes hold
_QUANTIZED_INTS = {_C.quint8: _C.uint8, _C.qint8: _C.int8, _C.qint32: _C.int32, _C.quint4x2: _C.uint8,
                   _C.quint2x4: _C.uint8}
_PER_CHANNEL = ("per_channel_affine", "per_channel_affine_float_qparams")


def _quantized_from_record(header: dict, body: bytes, shape: list, dtype: _C.dtype) -> _C.Tensor:
    """A quantized tensor from its record (module docstring); the native constructors check the values."""
    quantizer = header.get("quantizer")
    if not isinstance(quantizer, dict):
        raise ValueError(f"[deserialize] a {header['dtype']} tensor record must hold its quantizer "
                         f"(qscheme, scale(s), zero point(s)), but got {str(quantizer)[:80]}")
    ints_dtype = _QUANTIZED_INTS[dtype]
    qscheme = quantizer.get("qscheme")
    numel = 1
    for s in shape:  # a negative size is named by _from_bytes or the byte count below
        numel *= max(s, 0)
    # the bytes of the integers: packed for the sub-byte dtypes (Note [sub-byte quantized tensors])
    per_byte = 8 // SUB_BYTE_BITS.get(dtype, 8)
    n_ints = -(-numel // per_byte) if per_byte > 1 else numel * ints_dtype.itemsize

    def integers(raw: bytes) -> _C.Tensor:
        if per_byte == 1:
            return _C._from_bytes(raw, shape, ints_dtype)
        try:
            return codes_from_packed(_C._from_bytes(raw, [len(raw)], _C.uint8), shape, dtype)
        except ValueError as err:
            raise ValueError(f"[deserialize] {err}") from None

    if qscheme == "per_tensor_affine":
        scale, zero_point = quantizer.get("scale"), quantizer.get("zero_point")
        if type(scale) not in (int, float) or type(zero_point) is not int:
            raise ValueError(f"[deserialize] a per-tensor quantizer needs a number scale and an integer zero_point, "
                             f"but got {scale!r} and {zero_point!r}")
        return _C._make_per_tensor_quantized_tensor(integers(body), float(scale), zero_point, dtype=dtype)
    if qscheme not in _PER_CHANNEL:
        raise ValueError(f"[deserialize] unknown qscheme {str(qscheme)[:40]!r} in a quantized tensor record")
    axis = quantizer.get("axis")
    if type(axis) is not int or not 0 <= axis < len(shape) or any(s < 0 for s in shape):
        raise ValueError(f"[deserialize] a per-channel quantizer's axis must index the shape {shape}, but got {axis!r}")
    scales_dtype = getattr(_C, str(quantizer.get("scales_dtype")), None)
    points_dtype = getattr(_C, str(quantizer.get("zero_points_dtype")), None)
    if scales_dtype not in (_C.float32, _C.float64) or points_dtype not in (_C.int32, _C.int64, _C.float32,
                                                                           _C.float64):
        raise ValueError(f"[deserialize] a per-channel quantizer's scales must be float32 or float64 and its zero "
                         f"points int32, int64, float32 or float64, but got {quantizer.get('scales_dtype')!r} and "
                         f"{quantizer.get('zero_points_dtype')!r}")
    channels = shape[axis]
    n_scales = channels * scales_dtype.itemsize
    expected = n_ints + n_scales + channels * points_dtype.itemsize
    if len(body) != expected:
        raise ValueError(f"[deserialize] expected {expected} bytes of integers, scales and zero points for a "
                         f"per-channel {header['dtype']} tensor of shape {shape}, but the record holds {len(body)}")
    ints = integers(body[:n_ints])
    scales = _C._from_bytes(body[n_ints:n_ints + n_scales], [channels], scales_dtype)
    points = _C._from_bytes(body[n_ints + n_scales:], [channels], points_dtype)
    return _C._make_per_channel_quantized_tensor(ints, scales, points, axis, dtype=dtype)


def _reduce_ex(self: _C.Tensor, protocol: int) -> tuple:
    return tensor_from_bytes, (tensor_to_bytes(self),)


def _reduce_device(self: _C.device) -> tuple:
    return _C.device, (str(self),)


def tensor_methods() -> dict[str, object]:
    """Tensor.__reduce_ex__ (tensors pickle as checkpoint records), for ember/_tensor_methods.py to attach."""
    return {"__reduce_ex__": _reduce_ex}


_C.device.__reduce__ = _reduce_device  # pickles as ember.device("cuda:0"), which ember.load allows
