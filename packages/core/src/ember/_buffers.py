"""Tensors over the raw bytes of a checkpoint: sharing the buffer where NumPy can view it, copied otherwise."""

from __future__ import annotations

from typing import Any

import numpy as np

from . import _C

# Ember dtypes NumPy can view in place (little-endian, as checkpoints store them). bfloat16 and
# the float8 types have no NumPy dtype, so their bytes are copied by _C._from_bytes.
_NUMPY_CODES = {
    "bool": "?", "uint8": "u1", "int8": "i1", "int16": "<i2", "int32": "<i4", "int64": "<i8",
    "float16": "<f2", "float32": "<f4", "float64": "<f8", "complex64": "<c8", "complex128": "<c16",
}


def dtype_name(dtype: _C.dtype) -> str:
    return repr(dtype).removeprefix("ember.")


def byteswapped(raw: Any, dtype: _C.dtype) -> bytes:
    """Bytes written on a big-endian machine, in little-endian order: each scalar reversed
    (a complex number's two halves separately)."""
    width = dtype.itemsize // 2 if dtype.is_complex else dtype.itemsize
    if width == 1:
        return bytes(raw)
    return np.frombuffer(raw, dtype=f">u{width}").astype(f"<u{width}").tobytes()


def tensor_from_buffer(buffer: Any, numel: int, dtype: _C.dtype, *, share: bool, swap: bool = False) -> _C.Tensor:
    """A 1-D tensor of `numel` elements of `dtype` from `buffer`, which holds exactly their bytes.

    share=True lets the tensor use `buffer`'s memory (a private bytearray, or a copy-on-write
    file mapping) when NumPy can view it aligned; otherwise, and for share=False, the bytes are
    copied. A bool tensor's bytes must each be 0 or 1 (other values are undefined behaviour in
    C++), checked here for the shared path; _C._from_bytes checks the copied one.
    """
    name = dtype_name(dtype)
    if swap and dtype.itemsize > 1:
        buffer, share = byteswapped(buffer, dtype), False
    code = _NUMPY_CODES.get(name)
    if share and code is not None:
        array = np.frombuffer(buffer, dtype=code, count=numel)
        if array.flags.aligned and array.flags.writeable:
            if name == "bool" and numel and np.frombuffer(buffer, dtype=np.uint8, count=numel).max() > 1:
                raise ValueError("[load] a bool tensor's bytes must be 0 or 1")
            return _C.from_numpy(array)
    return _C._from_bytes(bytes(buffer), [numel], dtype)
