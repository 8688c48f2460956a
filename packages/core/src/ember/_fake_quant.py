"""Fake quantization (torch.fake_quantize_per_tensor_affine & co.): float in, float out, the values
snapped to the grid a quantized tensor would hold. Quantization-aware training puts these in the
forward pass; Ember has no quantized dtypes (quint8, qint8, ...), so only this half exists.

Note [fake quant arithmetic]: PyTorch's kernels compute, in float32 (float64 for a float64 input;
float16/bfloat16 inputs are computed in float32 and cast back),

    inv_scale = 1.0f / scale                        (float32, never x / scale)
    q = nearbyint(x * inv_scale) + zero_point       (integer zero_point; round half to even)
    q = nearbyint(x * inv_scale + zero_point)       (floating zero_point, per-channel only)
    out = (clamp(q, quant_min, quant_max) - zero_point) * scale
                                                    (float32 per tensor, float64 per channel)

and the gradient is the straight-through estimator: grad where quant_min <= q <= quant_max, else 0.
The learnable variants also give scale and zero_point the LSQ gradients (Esser et al., 2020), where
rounding counts as the identity: inside the range d/dscale = (out - x) / scale and d/dzero_point = 0;
below (above) it d/dscale = quant_min - zp (quant_max - zp) and d/dzero_point = -scale, both times
grad_factor and summed per scale entry.

Differences from PyTorch, deliberate: a scale that is not positive raises (PyTorch returns
meaningless values), and a tensor zero_point outside [quant_min, quant_max] raises in the per-tensor
op as the number form does (PyTorch checks only the number form).
"""

from __future__ import annotations

import builtins
import math
import struct

from . import _C
from ._tensor import tensor
from .autograd.function import Function


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


def _check_range(quant_min: int, quant_max: int) -> None:
    if quant_min > quant_max:
        raise RuntimeError("`quant_min` should be less than or equal to `quant_max`.")


def _check_zero_point(zero_point: int, quant_min: int, quant_max: int) -> None:
    if not quant_min <= zero_point <= quant_max:
        raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")


def _check_scale(scale: float) -> None:
    if not scale > 0:  # NaN fails too
        raise RuntimeError(f"`scale` must be positive, but got {scale}")


def _check_int(name: str, value: object) -> None:
    if isinstance(value, builtins.bool) or not isinstance(value, builtins.int):
        raise TypeError(f"{name} must be int, not {type(value).__name__}")


def _compute_dtype(x):
    if not x.is_floating_point():
        raise NotImplementedError(f"fake quantization expects a floating point input, but got {x.dtype}")
    return _C.float64 if x.dtype == _C.float64 else _C.float32


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


def _f32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def _qparams_along(x, scale, zero_point, axis: int):
    """(scale, 1/scale computed in float32, zero_point), shaped to broadcast against x: per-tensor
    from numbers, per-channel from 1-D tensors along axis. 1/scale and zero_point are in x's compute
    dtype; scale's dtype is the one the output (q - zero_point) * scale is computed in, as PyTorch's
    kernels do: float32 per tensor (even for a float64 input), float64 per channel."""
    dtype = _compute_dtype(x)
    if isinstance(scale, _C.Tensor):
        shape = [1] * x.dim()
        shape[axis] = scale.numel()
        scale32 = scale.detach().to(_C.float32).reshape(shape)
        return scale32.double(), scale32.reciprocal().to(dtype), zero_point.detach().reshape(shape).to(dtype)
    scale32 = tensor(scale, dtype=_C.float32)
    return scale32, scale32.reciprocal().to(dtype), tensor(float(zero_point), dtype=dtype)


def _fake_quant(x, scale, inv_scale, zero_point, quant_min, quant_max, float_zero_point):
    """(out, q): Note [fake quant arithmetic] with broadcastable qparams; q is unclamped."""
    y = x.to(inv_scale.dtype) * inv_scale
    q = (y + zero_point).round() if float_zero_point else y.round() + zero_point
    out = (q.clamp(quant_min, quant_max).to(scale.dtype) - zero_point.to(scale.dtype)) * scale
    return out.to(x.dtype), q


class _StraightThrough(Function):
    """Fake quantization with the straight-through gradient to x (none to the qparams)."""

    @staticmethod
    def forward(ctx, x, scale, inv_scale, zero_point, quant_min, quant_max, float_zero_point):
        out, q = _fake_quant(x, scale, inv_scale, zero_point, quant_min, quant_max, float_zero_point)
        ctx.save_for_backward((q >= quant_min) & (q <= quant_max))
        return out

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        return grad * mask, None, None, None, None, None, None


def fake_quantize_per_tensor_affine(input, scale, zero_point, quant_min: int, quant_max: int):
    """Fake-quantizes every element with one scale and zero_point (numbers, or one-element tensors
    as PyTorch's tensor overload takes), as torch.fake_quantize_per_tensor_affine."""
    _check_int("quant_min", quant_min)
    _check_int("quant_max", quant_max)
    scale, zero_point = _number(scale, "scale", builtins.float), _number(zero_point, "zero_point", builtins.int)
    _check_range(quant_min, quant_max)
    _check_zero_point(zero_point, quant_min, quant_max)
    _check_scale(scale)
    s, inv, zp = _qparams_along(input, scale, zero_point, 0)
    return _StraightThrough.apply(input, s, inv, zp, quant_min, quant_max, False)


def _check_per_channel(input, scale, zero_point, axis: int, quant_min: int, quant_max: int) -> int:
    """PyTorch's per-channel checks, in its order; the axis as a non-negative index."""
    _check_int("axis", axis)
    _check_int("quant_min", quant_min)
    _check_int("quant_max", quant_max)
    if input.dim() == 0:
        raise IndexError(f"Dimension specified as {axis} but tensor has no dimensions")
    if not -input.dim() <= axis < input.dim():
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.dim()}, "
                         f"{input.dim() - 1}], but got {axis})")
    if axis < 0:
        raise RuntimeError("`axis` must be between 0 and number of dimensions of input")
    _check_range(quant_min, quant_max)
    if scale.dim() != 1:
        raise RuntimeError("scale should be a 1-D tensor")
    if zero_point.dim() != 1:
        raise RuntimeError("zero point should be a 1-D tensor")
    if scale.numel() != zero_point.numel():
        raise RuntimeError("scale and zero-point need to have the same dimensions")
    if scale.numel() != input.shape[axis]:
        raise RuntimeError("dimensions of scale and zero-point are not consistent with input tensor")
    if not zero_point.is_floating_point():
        if zero_point.numel() and not builtins.bool(((zero_point >= quant_min) & (zero_point <= quant_max)).all()):
            raise RuntimeError("`zero_point` must be between `quant_min` and `quant_max`.")
    if scale.numel() and not builtins.bool((scale > 0).all()):
        raise RuntimeError(f"`scale` must be positive, but got {scale.tolist()}")
    return axis


def fake_quantize_per_channel_affine(input, scale, zero_point, axis: int, quant_min: int, quant_max: int):
    """Fake-quantizes slice i along `axis` with scale[i] and zero_point[i], as
    torch.fake_quantize_per_channel_affine. An integer zero_point must lie in [quant_min, quant_max];
    a floating one is added before rounding (the learnable op's path), unchecked as in PyTorch."""
    axis = _check_per_channel(input, scale, zero_point, axis, quant_min, quant_max)
    s, inv, zp = _qparams_along(input, scale, zero_point, axis)
    return _StraightThrough.apply(input, s, inv, zp, quant_min, quant_max, zero_point.is_floating_point())


class _Learnable(Function):
    """Fake quantization with LSQ gradients to scale and zero_point (Note [fake quant arithmetic]).
    forward_zp is the zero point the forward uses, backward_zp the one the gradients use (PyTorch
    rounds them differently in the per-tensor op); reduce lists the dims summed into each scale
    entry's gradient (None: all of them, per tensor)."""

    @staticmethod
    def forward(ctx, x, scale, zero_point, s, inv, forward_zp, backward_zp, quant_min, quant_max, grad_factor, reduce):
        ctx.save_for_backward(x, s, inv, backward_zp)
        ctx.qparam_shapes = (scale.shape, zero_point.shape, scale.dtype, zero_point.dtype)
        ctx.args = (quant_min, quant_max, grad_factor, reduce)
        return _fake_quant(x, s, inv, forward_zp, quant_min, quant_max, False)[0]

    @staticmethod
    def backward(ctx, grad):
        x, s, inv, zp = ctx.saved_tensors
        quant_min, quant_max, grad_factor, reduce = ctx.args
        scale_shape, zp_shape, scale_dtype, zp_dtype = ctx.qparam_shapes
        s = s.to(inv.dtype)  # the gradients are computed in x's compute dtype
        grad = grad.to(s.dtype)
        q = (x.to(s.dtype) * inv + zp).round()
        below, above = q < quant_min, q > quant_max
        inside = ~(below | above)
        x_fq = (q.clamp(quant_min, quant_max) - zp) * s
        d_scale = _C.where(inside, (x_fq - x) * inv, _C.where(below, quant_min - zp, quant_max - zp))
        d_zero_point = _C.where(inside, _C.zeros_like(x_fq), -s.expand_as(x_fq))

        def total(d, shape, dtype):
            d = grad * d * grad_factor
            summed = d.sum() if reduce is None else d.sum(reduce) if reduce else d
            return summed.reshape(shape).to(dtype)

        return ((grad * inside).to(x.dtype), total(d_scale, scale_shape, scale_dtype),
                total(d_zero_point, zp_shape, zp_dtype), None, None, None, None, None, None, None, None)


def _fake_quantize_learnable_per_tensor_affine(input, scale, zero_point, quant_min: int, quant_max: int,
                                               grad_factor: float = 1.0):
    """Per-tensor fake quantization with gradients to the one-element tensors scale and zero_point,
    as torch._fake_quantize_learnable_per_tensor_affine. The forward rounds zero_point half to even;
    the backward, as PyTorch's, uses trunc(clamp(zero_point + 0.5)) (round half up)."""
    _check_range(quant_min, quant_max)
    zp = _number(zero_point, "zero_point", builtins.float)
    forward_zp = builtins.int(min(max(float(round(zp)), quant_min), quant_max))
    backward_zp = builtins.int(min(max(_f32(zp + 0.5), quant_min), quant_max))
    scale_value = _number(scale, "scale", builtins.float)
    _check_scale(scale_value)
    s, inv, zp_f = _qparams_along(input, scale_value, forward_zp, 0)
    zp_b = tensor(float(backward_zp), dtype=s.dtype)
    return _Learnable.apply(input, scale, zero_point, s, inv, zp_f, zp_b, quant_min, quant_max, grad_factor, None)


def _fake_quantize_learnable_per_channel_affine(input, scale, zero_point, axis: int, quant_min: int, quant_max: int,
                                                grad_factor: float = 1.0):
    """Per-channel fake quantization with gradients to scale and zero_point, as
    torch._fake_quantize_learnable_per_channel_affine: zero_point is rounded half to even and
    clamped into [quant_min, quant_max] first (forward and backward alike)."""
    rounded = zero_point.detach().round().clamp(quant_min, quant_max)
    axis = _check_per_channel(input, scale, rounded.to(_C.int32), axis, quant_min, quant_max)
    s, inv, zp = _qparams_along(input, scale, rounded, axis)
    reduce = [d for d in range(input.dim()) if d != axis]
    return _Learnable.apply(input, scale, zero_point, s, inv, zp, zp, quant_min, quant_max, grad_factor, reduce)


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
        return fake_quantize_per_channel_affine(self, scale, zero_point, 0, quant_min, quant_max)
    return fake_quantize_per_tensor_affine(self, scale, zero_point, quant_min, quant_max)


NAMES = ["fake_quantize_per_tensor_affine", "fake_quantize_per_channel_affine", "fused_moving_avg_obs_fake_quant",
         "_fake_quantize_learnable_per_tensor_affine", "_fake_quantize_learnable_per_channel_affine", "qscheme",
         "per_tensor_affine", "per_tensor_symmetric", "per_channel_affine", "per_channel_symmetric"]
