"""ember.finfo / ember.iinfo: numeric limits of each dtype, as torch.finfo / torch.iinfo."""

from __future__ import annotations

from dataclasses import dataclass

from . import _C


@dataclass(frozen=True)
class finfo:  # noqa: N801 - PyTorch's name
    """Limits of a floating dtype: bits, eps, max, min, tiny (= smallest_normal), resolution."""

    bits: int
    eps: float
    max: float
    min: float
    tiny: float
    smallest_normal: float
    resolution: float
    dtype: str

    def __new__(cls, type: _C.dtype | None = None):  # noqa: A002 - torch.finfo(type)
        dtype = _C.get_default_dtype() if type is None else type
        if dtype not in _FLOAT_LIMITS:
            raise TypeError(f"torch.finfo() requires a floating point input type. Use torch.iinfo to handle "
                            f"'{dtype!r}'")
        return super().__new__(cls)

    def __init__(self, type: _C.dtype | None = None):  # noqa: A002
        dtype = _C.get_default_dtype() if type is None else type
        bits, eps, largest, tiny, resolution = _FLOAT_LIMITS[dtype]
        for name, value in [("bits", bits), ("eps", eps), ("max", largest), ("min", -largest), ("tiny", tiny),
                            ("smallest_normal", tiny), ("resolution", resolution),
                            ("dtype", repr(dtype.to_real()).removeprefix("ember."))]:  # complex: its parts
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class iinfo:  # noqa: N801
    """Limits of an integer dtype: bits, max, min."""

    bits: int
    max: int
    min: int
    dtype: str

    def __new__(cls, type: _C.dtype):  # noqa: A002
        if type not in _INT_BITS:
            raise TypeError(f"torch.iinfo() requires an integer input type. Use torch.finfo to handle '{type!r}'")
        return super().__new__(cls)

    def __init__(self, type: _C.dtype):  # noqa: A002
        bits, signed = _INT_BITS[type]
        object.__setattr__(self, "bits", bits)
        object.__setattr__(self, "min", -(2 ** (bits - 1)) if signed else 0)
        object.__setattr__(self, "max", 2 ** (bits - 1) - 1 if signed else 2**bits - 1)
        object.__setattr__(self, "dtype", repr(type).removeprefix("ember."))


# dtype: (bits, eps, max, smallest normal, resolution)
_FLOAT_LIMITS = {
    _C.float16: (16, 2.0**-10, 65504.0, 2.0**-14, 0.001),
    _C.bfloat16: (16, 2.0**-7, 3.3895313892515355e38, 2.0**-126, 0.01),
    _C.float32: (32, 2.0**-23, 3.4028234663852886e38, 2.0**-126, 1e-06),
    _C.float64: (64, 2.0**-52, 1.7976931348623157e308, 2.0**-1022, 1e-15),
    _C.complex32: (16, 2.0**-10, 65504.0, 2.0**-14, 0.001),
    _C.complex64: (32, 2.0**-23, 3.4028234663852886e38, 2.0**-126, 1e-06),
    _C.complex128: (64, 2.0**-52, 1.7976931348623157e308, 2.0**-1022, 1e-15),
    _C.float8_e4m3fn: (8, 0.125, 448.0, 2.0**-6, 1.0),
    _C.float8_e5m2: (8, 0.25, 57344.0, 2.0**-14, 1.0),
    # the fnuz formats' exponent bias is one more; eps as PyTorch's finfo reports it (0.125 for both)
    _C.float8_e4m3fnuz: (8, 0.125, 240.0, 2.0**-7, 1.0),
    _C.float8_e5m2fnuz: (8, 0.125, 57344.0, 2.0**-15, 1.0),
}
_INT_BITS = {_C.uint8: (8, False), _C.int8: (8, True), _C.int16: (16, True), _C.int32: (32, True),
             _C.int64: (64, True), _C.bool: (8, False)}
