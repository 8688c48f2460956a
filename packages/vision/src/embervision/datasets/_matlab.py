"""A small, strict reader of MATLAB level-5 MAT-files (what SVHN, Flowers102 and StanfordCars ship),
so the datasets need no SciPy.

`loadmat(path_or_bytes)` returns ``{name: value}`` for the file's variables:

- numeric and logical arrays -> NumPy arrays of the array's class, in MATLAB's shape (column-major
  data reordered), complex ones complex;
- char arrays -> a str when they hold at most one row, else a NumPy array of the row strings;
- cell arrays -> NumPy object arrays of the elements;
- structs -> NumPy object arrays (the struct's shape) of ``{field: value}`` dicts.

With ``squeeze_me=True`` (SciPy's option) size-1 dimensions are dropped and 1x1 arrays become their
element. Every length is checked against the bytes that remain; sparse, object and function arrays,
unknown types and truncated or inconsistent data raise ValueError.
"""

from __future__ import annotations

import os
import struct
import zlib
from typing import Any

import numpy as np

__all__ = ["loadmat"]

# data element types
_MI_INT8, _MI_UINT8, _MI_INT16, _MI_UINT16, _MI_INT32, _MI_UINT32 = 1, 2, 3, 4, 5, 6
_MI_SINGLE, _MI_DOUBLE, _MI_INT64, _MI_UINT64 = 7, 9, 12, 13
_MI_MATRIX, _MI_COMPRESSED, _MI_UTF8, _MI_UTF16, _MI_UTF32 = 14, 15, 16, 17, 18
_MI_NUMERIC = {_MI_INT8: "i1", _MI_UINT8: "u1", _MI_INT16: "i2", _MI_UINT16: "u2", _MI_INT32: "i4",
               _MI_UINT32: "u4", _MI_SINGLE: "f4", _MI_DOUBLE: "f8", _MI_INT64: "i8", _MI_UINT64: "u8"}

# array classes
_MX_CELL, _MX_STRUCT, _MX_OBJECT, _MX_CHAR, _MX_SPARSE = 1, 2, 3, 4, 5
_MX_NUMERIC = {6: np.float64, 7: np.float32, 8: np.int8, 9: np.uint8, 10: np.int16, 11: np.uint16, 12: np.int32,
               13: np.uint32, 14: np.int64, 15: np.uint64}
_MX_NAMES = {_MX_OBJECT: "object", _MX_SPARSE: "sparse", 16: "function handle", 17: "opaque"}

# a decompressed miCOMPRESSED element may not grow past this (guards against zlib bombs)
_MAX_INFLATED = 1 << 31
# a struct array without fields holds no data to check its size against
_MAX_EMPTY_STRUCTS = 1 << 20


class _Reader:
    def __init__(self, data: bytes, endian: str, where: str) -> None:
        self.data, self.endian, self.where = data, endian, where
        self.pos = 0

    def error(self, what: str) -> ValueError:
        return ValueError(f"{self.where}: {what}")

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def tag(self) -> tuple[int, int, bytes]:
        """(type, nbytes, payload) of the next data element, padding skipped."""
        if self.remaining() < 8:
            raise self.error(f"truncated data element tag at byte {self.pos}")
        first, second = struct.unpack_from(self.endian + "II", self.data, self.pos)
        if first >> 16:  # small data element: type and size share 4 bytes, data in the next 4
            mtype, nbytes = first & 0xFFFF, first >> 16
            if nbytes > 4:
                raise self.error(f"small data element claims {nbytes} bytes (at most 4)")
            payload = self.data[self.pos + 4:self.pos + 4 + nbytes]
            self.pos += 8
            return mtype, nbytes, payload
        mtype, nbytes = first, second
        start = self.pos + 8
        if nbytes > len(self.data) - start:
            raise self.error(f"data element of {nbytes} bytes at byte {self.pos} runs past the end "
                             f"({len(self.data) - start} bytes remain)")
        payload = self.data[start:start + nbytes]
        # elements are padded to 8 bytes, except a compressed one (its stream ends where it ends)
        padded = nbytes if mtype == _MI_COMPRESSED else (nbytes + 7) // 8 * 8
        self.pos = min(len(self.data), start + padded)
        return mtype, nbytes, payload

    def numeric(self, what: str) -> np.ndarray:
        mtype, nbytes, payload = self.tag()
        if mtype not in _MI_NUMERIC:
            raise self.error(f"{what}: expected a numeric data element, got type {mtype}")
        dtype = np.dtype(self.endian + _MI_NUMERIC[mtype])
        if nbytes % dtype.itemsize:
            raise self.error(f"{what}: {nbytes} bytes is not a whole number of {dtype.itemsize}-byte values")
        return np.frombuffer(payload, dtype=dtype)


def _header(data: bytes, where: str) -> str:
    if len(data) < 128:
        raise ValueError(f"{where}: not a MAT-file (shorter than the 128-byte header)")
    if data[:4] == b"\x00\x00\x00\x00" or b"MATLAB 7.3" in data[:116] or data[:8] == b"\x89HDF\r\n\x1a\n":
        raise ValueError(f"{where}: MAT-file v4 or v7.3 (HDF5) is not supported, only level 5")
    indicator = data[126:128]
    if indicator == b"IM":
        endian = "<"
    elif indicator == b"MI":
        endian = ">"
    else:
        raise ValueError(f"{where}: not a level-5 MAT-file (endian indicator {indicator!r})")
    version = struct.unpack_from(endian + "H", data, 124)[0]
    if version != 0x0100:
        raise ValueError(f"{where}: unsupported MAT-file version 0x{version:04x}")
    return endian


def _column_major(flat: np.ndarray, dims: tuple[int, ...]) -> np.ndarray:
    return flat.reshape(dims, order="F")


def _matrix(payload: bytes, endian: str, where: str, depth: int) -> tuple[str, Any]:
    """Parse the contents of one miMATRIX element: (name, value)."""
    if depth > 64:
        raise ValueError(f"{where}: arrays nested deeper than 64 levels")  # also bounds the recursion
    r = _Reader(payload, endian, where)
    if not payload:  # an empty miMATRIX is an empty cell element
        return "", np.zeros((0, 0))
    flags = r.numeric("array flags")
    if flags.size < 2 or flags.dtype != np.dtype(endian + "u4"):
        raise r.error("array flags must be two uint32 values")
    mxclass = int(flags[0]) & 0xFF
    is_complex, is_logical = bool(int(flags[0]) & 0x0800), bool(int(flags[0]) & 0x0200)
    dims_arr = r.numeric("dimensions")
    if dims_arr.dtype.kind != "i" or dims_arr.size < 2 or (dims_arr < 0).any():
        raise r.error("dimensions must be at least two non-negative int32 values")
    dims = tuple(int(d) for d in dims_arr)
    count = int(np.prod(dims, dtype=object))
    name_type, _, name_bytes = r.tag()
    if name_type not in (_MI_INT8, _MI_UINT8):
        raise r.error(f"array name must be an int8 element, got type {name_type}")
    name = name_bytes.decode("ascii", errors="replace")
    where_name = f"{where}: variable {name!r}" if name else where

    if mxclass in _MX_NUMERIC:
        real = r.numeric(f"{where_name} real part")
        if real.size != count:
            raise r.error(f"{where_name}: {real.size} values for dimensions {dims}")
        out = real.astype(_MX_NUMERIC[mxclass])
        if is_complex:
            imag = r.numeric(f"{where_name} imaginary part")
            if imag.size != count:
                raise r.error(f"{where_name}: {imag.size} imaginary values for dimensions {dims}")
            out = out.astype(np.complex128 if out.dtype.itemsize == 8 else np.complex64) + 1j * imag
        if is_logical:
            out = out != 0
        return name, _column_major(out, dims)
    if mxclass == _MX_CHAR:
        mtype, nbytes, data = r.tag()
        if mtype in (_MI_UINT16, _MI_UTF16):
            if nbytes % 2:
                raise r.error(f"{where_name}: odd byte count for 16-bit characters")
            codes = np.frombuffer(data, dtype=endian + "u2")
            chars = [chr(c) for c in codes]
        elif mtype in (_MI_UINT8, _MI_INT8, _MI_UTF8):
            chars = list(data.decode("utf-8" if mtype == _MI_UTF8 else "latin-1"))
        elif mtype in (_MI_UINT32, _MI_UTF32):
            if nbytes % 4:
                raise r.error(f"{where_name}: byte count not a multiple of 4 for 32-bit characters")
            codes = np.frombuffer(data, dtype=endian + "u4")
            if (codes > 0x10FFFF).any():
                raise r.error(f"{where_name}: character code past U+10FFFF")
            chars = [chr(c) for c in codes]
        else:
            raise r.error(f"{where_name}: char data of type {mtype}")
        if len(chars) != count:
            raise r.error(f"{where_name}: {len(chars)} characters for dimensions {dims}")
        grid = np.array(chars, dtype=object).reshape(dims, order="F") if count else np.zeros(dims, dtype=object)
        if len(dims) != 2:
            raise r.error(f"{where_name}: char arrays of {len(dims)} dimensions are not supported")
        rows = ["".join(grid[i]) for i in range(dims[0])]
        if dims[0] <= 1:
            return name, rows[0] if rows else ""
        return name, np.array(rows, dtype=object)
    if mxclass == _MX_CELL:
        if count * 8 > r.remaining():  # each element is at least a tag: never allocate for a lying header
            raise r.error(f"{where_name}: {count} cells cannot fit in the {r.remaining()} bytes that remain")
        cells = np.empty(count, dtype=object)
        for i in range(count):
            cells[i] = _element(r, depth + 1, f"{where_name} cell {i}")[1]
        return name, _column_major(cells, dims)
    if mxclass == _MX_STRUCT:
        length = r.numeric("field name length")
        if length.size != 1 or length.dtype.kind not in "iu" or not 1 <= int(length[0]) <= 4096:
            raise r.error(f"{where_name}: bad struct field name length")
        width = int(length[0])
        ftype, fbytes, fdata = r.tag()
        if ftype not in (_MI_INT8, _MI_UINT8) or fbytes % width:
            raise r.error(f"{where_name}: struct field names must be int8 data in {width}-byte slots")
        fields = [fdata[i:i + width].split(b"\x00", 1)[0].decode("ascii", errors="replace")
                  for i in range(0, fbytes, width)]
        if (count * len(fields) * 8 > r.remaining()) if fields else count > _MAX_EMPTY_STRUCTS:
            raise r.error(f"{where_name}: {count} struct elements cannot fit in the {r.remaining()} bytes that remain")
        records = np.empty(count, dtype=object)
        for i in range(count):
            records[i] = {field: _element(r, depth + 1, f"{where_name}.{field}")[1] for field in fields}
        return name, _column_major(records, dims)
    kind = _MX_NAMES.get(mxclass, f"class {mxclass}")
    raise ValueError(f"{where_name}: {kind} arrays are not supported")


def _element(r: _Reader, depth: int, where: str) -> tuple[str, Any]:
    mtype, nbytes, payload = r.tag()
    if mtype == _MI_COMPRESSED:
        inflater = zlib.decompressobj()
        try:
            payload = inflater.decompress(payload, _MAX_INFLATED)
        except zlib.error as error:
            raise r.error(f"{where}: corrupt compressed element ({error})") from error
        if inflater.unconsumed_tail:
            raise r.error(f"{where}: compressed element inflates past {_MAX_INFLATED} bytes")
        if not inflater.eof:
            raise r.error(f"{where}: compressed element is truncated")
        inner = _Reader(payload, r.endian, where)
        out = _element(inner, depth + 1, where)
        if inner.remaining():
            raise inner.error(f"{where}: {inner.remaining()} stray bytes after the compressed element")
        return out
    if mtype != _MI_MATRIX:
        raise r.error(f"{where}: expected a matrix element, got type {mtype}")
    return _matrix(payload, r.endian, where, depth)


def _squeeze(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _squeeze(v) for k, v in value.items()}
    if not isinstance(value, np.ndarray):
        return value
    if value.dtype == object:
        out = np.empty(value.shape, dtype=object)
        for index, item in np.ndenumerate(value):
            out[index] = _squeeze(item)
        value = out
    value = value.squeeze()
    if value.ndim == 0:
        return value[()]
    return value


def loadmat(file: str | os.PathLike | bytes, squeeze_me: bool = False) -> dict[str, Any]:
    """The variables of a level-5 MAT-file (a path or its bytes)."""
    if isinstance(file, (bytes, bytearray)):
        data, where = bytes(file), "MAT-file"
    else:
        where = os.fspath(file)
        with open(where, "rb") as f:
            data = f.read()
    endian = _header(data, where)
    r = _Reader(data, endian, where)
    r.pos = 128
    out: dict[str, Any] = {}
    while r.remaining() > 0:
        name, value = _element(r, 0, where)
        out[name] = _squeeze(value) if squeeze_me else value
    return out
