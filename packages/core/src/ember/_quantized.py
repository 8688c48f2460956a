"""Quantized tensors (torch.quint8, qint8, qint32, quint4x2, quint2x4): the Python half of Note [quantized tensors]
(native/include/ember/quantizer.h).

The native ops (declarations.py) quantize, dequantize and read the integers; this module adds what
PyTorch's Python surface has on top: quantize_per_tensor's one-element-tensor and list forms,
dequantize of a list, the Tensor accessors (qscheme(), q_scale(), ...), is_quantized, and the
repr that prints the dequantized values with the quantization parameters.

A quantized tensor is a value, not a number type: only the views, clone/contiguous and the
quantized kernels (ember.ao.nn.quantized) take one; any other op raises NotImplementedError, and
it never requires grad.
"""

from __future__ import annotations

import builtins

from . import _C


class qscheme:
    """Stand-in for torch.qscheme: ember.per_tensor_affine & co. name a quantization scheme
    (observers' qscheme=). Plain Ember objects, compared by identity."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"ember.{self.name}"

    def __reduce__(self):  # pickles as a reference to the module constant
        return self.name


per_tensor_affine = qscheme("per_tensor_affine")
per_tensor_symmetric = qscheme("per_tensor_symmetric")
per_channel_affine = qscheme("per_channel_affine")
per_channel_symmetric = qscheme("per_channel_symmetric")
per_channel_affine_float_qparams = qscheme("per_channel_affine_float_qparams")


# qscheme codes of the native Quantizer (ember/quantizer.h, PyTorch's numbering)
_QSCHEMES = (per_tensor_affine, per_channel_affine, per_tensor_symmetric, per_channel_symmetric,
             per_channel_affine_float_qparams)


def _check_int(name: str, value: object) -> None:
    if isinstance(value, builtins.bool) or not isinstance(value, builtins.int):
        raise TypeError(f"{name} must be int, not {type(value).__name__}")


def _number(value: object, name: str, kind: type):
    """scale / zero_point given as a Python number or a one-element tensor, as PyTorch accepts."""
    if isinstance(value, _C.Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"a Tensor with {value.numel()} elements cannot be converted to Scalar ({name})")
        value = value.reshape(-1)[0].item()
    elif kind is builtins.int:
        _check_int(name, value)
    elif isinstance(value, builtins.bool) or not isinstance(value, (builtins.int, builtins.float)):
        raise TypeError(f"{name} must be float, not {type(value).__name__}")
    return kind(value)  # int() truncates a floating zero_point tensor, as PyTorch's cast does



def _quantizer(t: _C.Tensor, what: str) -> tuple:
    info = _C._quantizer(t)
    if info is None:
        raise NotImplementedError(f"{what}() expects a quantized tensor (ember.quint8, qint8, qint32, quint4x2 "
                                  f"or quint2x4), "
                                  f"but got ember.{t.dtype.__repr__().split('.')[-1]}")
    return info


def quantize_per_tensor(input, scale, zero_point, dtype):
    """torch.quantize_per_tensor: q = clamp(round(input / scale) + zero_point) stored as `dtype`.
    `scale` and `zero_point` are numbers or one-element tensors; `input` may be a list of tensors
    (then scale and zero_point are tensors of one value per tensor, and a list comes back)."""
    if isinstance(input, (list, tuple)):
        if not isinstance(scale, _C.Tensor) or not isinstance(zero_point, _C.Tensor):
            raise TypeError("quantize_per_tensor of a list of tensors takes tensors of scales and zero_points")
        if scale.numel() != len(input) or zero_point.numel() != len(input):
            raise RuntimeError(f"quantize_per_tensor: expected {len(input)} scales and zero_points, but got "
                               f"{scale.numel()} and {zero_point.numel()}")
        scales, points = scale.reshape(-1).tolist(), zero_point.reshape(-1).tolist()
        return [_C.quantize_per_tensor(t, builtins.float(s), builtins.int(z), dtype)
                for t, s, z in zip(input, scales, points, strict=True)]
    return _C.quantize_per_tensor(input, _number(scale, "scale", builtins.float),
                                  _number(zero_point, "zero_point", builtins.int), dtype)


def dequantize(tensor):
    """torch.dequantize: the float32 values of a quantized tensor (or of each in a list)."""
    if isinstance(tensor, (list, tuple)):
        return [_C.dequantize(t) for t in tensor]
    return _C.dequantize(tensor)


_UNDERLYING = {_C.quint8: _C.uint8, _C.qint8: _C.int8, _C.qint32: _C.int32, _C.quint4x2: _C.uint8,
               _C.quint2x4: _C.uint8}
# Note [sub-byte quantized tensors] (native/include/ember/quantizer.h): bits per packed code
SUB_BYTE_BITS = {_C.quint4x2: 4, _C.quint2x4: 2}


def integer_range(dtype) -> tuple[int, int]:
    """(min, max) of the integers a quantized dtype stores (quint8: 0..255, qint8, qint32, quint4x2:
    0..15, quint2x4: 0..3)."""
    from ._info import iinfo

    if dtype in SUB_BYTE_BITS:
        return 0, (1 << SUB_BYTE_BITS[dtype]) - 1
    info = iinfo(_UNDERLYING[dtype])
    return info.min, info.max


def codes_from_packed(packed: _C.Tensor, shape: list, dtype, padded: bool = False) -> _C.Tensor:
    """The codes, one per uint8 element in `shape`, that a sub-byte dtype's packed bytes hold (what
    `_make_per_*_quantized_tensor(..., dtype=dtype)` takes back); ValueError for a wrong byte count.
    padded: the bytes may run past the codes (PyTorch allocates ceil(cols / 2 or 4) bytes per row
    of the last dim, and packs the codes from the start)."""
    bits = SUB_BYTE_BITS[dtype]
    per_byte = 8 // bits
    if any(s < 0 for s in shape):
        raise ValueError(f"negative size in the shape {list(shape)} of a {dtype} tensor")
    numel = 1
    for s in shape:
        numel *= s
    packed = packed.reshape(-1)
    if padded and packed.numel() > -(-numel // per_byte):
        packed = packed[:-(-numel // per_byte)]
    if packed.numel() != -(-numel // per_byte):
        raise ValueError(f"{-(-numel // per_byte)} bytes hold the {numel} codes of a {dtype} tensor of shape "
                         f"{list(shape)}, but got {packed.numel()}")
    shifts = _C.arange(0, 8, bits, dtype=_C.uint8)
    codes = (packed.reshape(-1, 1) >> shifts) & ((1 << bits) - 1)
    return codes.reshape(-1)[:numel].reshape(list(shape))


def empty_quantized(size, qtensor, *, dtype=None, layout=None, device=None, pin_memory=False,
                    memory_format=None) -> _C.Tensor:
    """torch.empty_quantized: a quantized tensor of `size` read through qtensor's quantizer (its
    integers zero here, where PyTorch leaves them unset)."""
    code, scale, zero_point, scales, points, axis = _quantizer(qtensor, "empty_quantized")
    if dtype is not None and dtype != qtensor.dtype:
        raise RuntimeError(f"empty_quantized: dtype {dtype} differs from the quantizer's {qtensor.dtype}")
    ints = _C.zeros(list(size), dtype=_UNDERLYING[qtensor.dtype])
    if scales is None:
        return _C._make_per_tensor_quantized_tensor(ints, scale, zero_point, dtype=qtensor.dtype)
    return _C._make_per_channel_quantized_tensor(ints, scales, points, axis, dtype=qtensor.dtype)


def _qscheme(self: _C.Tensor):
    return _QSCHEMES[_quantizer(self, "qscheme")[0]]


def _q_scale(self: _C.Tensor) -> float:
    info = _quantizer(self, "q_scale")
    if info[1] is None:
        raise RuntimeError("q_scale() expects a per-tensor quantized tensor; this one is quantized per channel "
                           "(q_per_channel_scales())")
    return info[1]


def _q_zero_point(self: _C.Tensor) -> int:
    info = _quantizer(self, "q_zero_point")
    if info[2] is None:
        raise RuntimeError("q_zero_point() expects a per-tensor quantized tensor; this one is quantized per "
                           "channel (q_per_channel_zero_points())")
    return info[2]


def _per_channel(self: _C.Tensor, what: str, index: int):
    info = _quantizer(self, what)
    if info[3] is None:
        raise RuntimeError(f"{what}() expects a per-channel quantized tensor; this one is quantized per tensor")
    return info[index]


def q_per_channel_scales(self: _C.Tensor) -> _C.Tensor:
    return _per_channel(self, "q_per_channel_scales", 3)


def q_per_channel_zero_points(self: _C.Tensor) -> _C.Tensor:
    return _per_channel(self, "q_per_channel_zero_points", 4)


def q_per_channel_axis(self: _C.Tensor) -> int:
    return _per_channel(self, "q_per_channel_axis", 5)


def repr_extras(self: _C.Tensor) -> list:
    """What PyTorch's repr prints after a quantized tensor's values."""
    code, scale, zero_point, scales, points, axis = _C._quantizer(self)
    extras = [f"size={tuple(self.shape)}", f"dtype={self.dtype!r}", f"quantization_scheme={_QSCHEMES[code]!r}"]
    if scales is None:
        return extras + [f"scale={scale}", f"zero_point={zero_point}"]
    return extras + [f"scale={scales!r}", f"zero_point={points!r}", f"axis={axis}"]


def tensor_methods() -> dict[str, object]:
    """Tensor's quantization accessors (attached by ember/_tensor_methods.py)."""
    return {
    "qscheme": _qscheme, "q_scale": _q_scale, "q_zero_point": _q_zero_point,
    "q_per_channel_scales": q_per_channel_scales, "q_per_channel_zero_points": q_per_channel_zero_points,
    "q_per_channel_axis": q_per_channel_axis,
    "is_quantized": property(lambda self: _C._quantizer(self) is not None),
    }
# the module-level functions ember exports (torch.q_scale(t) & co. exist too)
NAMES = {"quantize_per_tensor": quantize_per_tensor, "dequantize": dequantize, "q_scale": _q_scale,
         "q_zero_point": _q_zero_point, "q_per_channel_scales": q_per_channel_scales,
         "q_per_channel_zero_points": q_per_channel_zero_points, "q_per_channel_axis": q_per_channel_axis,
         "qint8": _C.qint8, "quint8": _C.quint8, "qint32": _C.qint32, "quint4x2": _C.quint4x2,
         "quint2x4": _C.quint2x4, "empty_quantized": empty_quantized}
