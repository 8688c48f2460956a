"""Fake quantization (torch.fake_quantize_per_tensor_affine & co.): float in, float out, the values
snapped to the grid a quantized tensor would hold. Quantization-aware training puts these in the
forward pass; the quantized tensors themselves are in ember/_quantized.py.

The ops are native (native/ops/declarations.py; the arithmetic and the LSQ gradients in Note [fake
quant arithmetic], native/src/ops/quantization/fake_quantize.cpp). This module adds what PyTorch's
Python layer accepts on top: one-element tensors for the per-tensor op's scale and zero_point (its
`tensor_qparams` overload) and PyTorch's TypeErrors for non-integer arguments, the qscheme
constants and the fused observer op. (fake_quantize_per_channel_affine is the native op itself.)

Differences from PyTorch, deliberate: a scale that is not positive raises (PyTorch returns
meaningless values), and a tensor zero_point outside [quant_min, quant_max] raises in the per-tensor
op as the number form does (PyTorch checks only the number form).
"""

from __future__ import annotations

import builtins
import math
import struct

from . import _C
from ._quantized import (  # noqa: F401 - the qscheme constants are exported from here too
    _check_int,
    _number,
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qscheme,
)
from ._tensor import tensor


def _check_range(quant_min: int, quant_max: int) -> None:
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or equal to `quant_max`.")


def _f32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min: int, quant_max: int):
    """Fake-quantizes every element with one scale and zero_point (numbers, or one-element tensors
    as PyTorch's tensor overload takes), as torch.fake_quantize_per_tensor_affine; the gradient is
    the straight-through estimator."""
    _check_int("quant_min", quant_min)
    _check_int("quant_max", quant_max)
    scale, zero_point = _number(scale, "scale", builtins.float), _number(zero_point, "zero_point", builtins.int)
    return _C.fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min, quant_max)


# ---- fused observer + fake quant --------------------------------------------------------------

_SMALL_SCALE = _f32(6.1e-5)  # the smallest scale the fused op's qparams allow


def choose_qparams_fused(lo: float, hi: float, quant_min: int, quant_max: int, symmetric: bool) -> tuple:
    """(scale, zero_point) the fused op derives from a running min/max (not the Python observers'
    formula): the range is widened to hold 0 (and, symmetric, to qmin/qmax's proportions), scale is
    (hi - lo) / (qmax - qmin), at least 6.1e-5 (0 becomes 0.1), and the zero point comes from
    whichever end loses less, rounded half to even and clamped. Float32 where PyTorch's is."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    levels = quant_max - quant_min
    if symmetric and lo < 0 < hi:
        sym_min, sym_max = -(levels // 2 + 1), levels // 2
        step = max(abs(_f32(lo / sym_min)), abs(_f32(hi / sym_max)))
        lo, hi = _f32(step * sym_min), _f32(step * sym_max)
    scale = (hi - lo) / levels if levels else math.inf
    if _f32(scale) == 0.0 or math.isinf(_f32(scale)) or math.isinf(1.0 / _f32(scale)):
        scale = 0.1
    if scale < _SMALL_SCALE:
        if lo == 0.0:
            hi = _f32(_SMALL_SCALE * levels)
        elif hi == 0.0:
            lo = _f32(-_SMALL_SCALE * levels)
        else:
            grow = _f32(_SMALL_SCALE / _f32(scale))
            lo, hi = _f32(lo * grow), _f32(hi * grow)
        scale = _SMALL_SCALE
    from_min, from_max = quant_min - lo / scale, quant_max - hi / scale
    err_min, err_max = abs(quant_min) - abs(lo / scale), abs(quant_max) - abs(hi / scale)
    zero_point = from_min if err_min < err_max else from_max
    zero_point = min(max(zero_point, quant_min), quant_max)
    return _f32(scale), builtins.int(round(zero_point))


def _moving_average(running, current, averaging_const: float):
    """running <- current where running is still +-inf (never observed), else the moving average."""
    fresh = running.isinf()
    running.copy_(_C.where(fresh, current, running + averaging_const * (current - running)))


def fused_moving_avg_obs_fake_quant(self, observer_on, fake_quant_on, running_min, running_max, scale, zero_point,
                                    averaging_const: float, quant_min: int, quant_max: int, ch_axis: int,
                                    per_row_fake_quant: bool = False, symmetric_quant: bool = False):
    """torch.fused_moving_avg_obs_fake_quant: when observer_on[0] is 1, folds self's min/max into
    running_min/running_max (moving average; per row along axis 0 with per_row_fake_quant) and
    writes the derived qparams into scale and zero_point, all in place; when fake_quant_on[0] is
    1, returns self fake-quantized with them, else a copy of self."""
    if per_row_fake_quant and ch_axis != 0:
        raise RuntimeError("Per-channel FakeQuant in fused_moving_avg_obs_fake_quant is only supported on axis == 0")
    _check_range(quant_min, quant_max)
    if builtins.int(observer_on.reshape(-1)[0].item()) == 1 and self.numel():
        x = self.detach().to(running_min.dtype)
        if per_row_fake_quant:
            rows = x.reshape(x.shape[0], -1)
            lo, hi = rows.amin(1), rows.amax(1)
            if running_min.numel() == 0:  # first call with the per-channel observer's empty buffers
                for buffer, start in ((running_min, math.inf), (running_max, -math.inf)):
                    buffer.resize_(lo.shape).fill_(start)
                scale.resize_(lo.shape)
                zero_point.resize_(lo.shape)
        else:
            lo, hi = x.amin(), x.amax()
        _moving_average(running_min, lo, averaging_const)
        _moving_average(running_max, hi, averaging_const)
        pairs = [choose_qparams_fused(a, b, quant_min, quant_max, symmetric_quant)
                 for a, b in zip(running_min.reshape(-1).tolist(), running_max.reshape(-1).tolist(), strict=True)]
        scale.copy_(tensor([p[0] for p in pairs], dtype=scale.dtype).reshape(scale.shape))
        zero_point.copy_(tensor([p[1] for p in pairs], dtype=zero_point.dtype).reshape(zero_point.shape))
    if builtins.int(fake_quant_on.reshape(-1)[0].item()) != 1:
        return self.clone()
    if per_row_fake_quant:
        return _C.fake_quantize_per_channel_affine(self, scale, zero_point, 0, quant_min, quant_max)
    return fake_quantize_per_tensor_affine(self, scale, zero_point, quant_min, quant_max)


NAMES = ["fake_quantize_per_tensor_affine", "fused_moving_avg_obs_fake_quant", "qscheme", "per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric", "per_channel_affine_float_qparams"]
