"""Quantized activations and normalizations (torch.ao.nn.quantized's ELU, LeakyReLU, Sigmoid,
Softmax, PReLU, LayerNorm, GroupNorm, InstanceNorm1d/2d/3d): quantized tensors in, quantized
tensors out with the scale and zero point the activation observer chose at prepare time.

Each subclasses its float twin (as PyTorch's do), so its constructor arguments, attributes and
repr follow the float module's, with the output parameters added. The float function is applied
to the float32 dequantized input and its result quantized with the module's output parameters
(see ember.ao.nn.quantized.functional for the rounding). The normalizations take float32
weight and bias and compute their statistics in float32, as PyTorch's x86 kernels do; their
codes can differ from PyTorch's by one where a value falls within float32 rounding of a half
step (tests/test_quantized_more_modules_torch_parity.py counts them).
"""

from __future__ import annotations

import warnings

import numpy as np

from .... import _C
from ...._quantized import integer_range
from ...._tensor import tensor
from ....nn import functional as F
from ....nn.modules.activation import ELU as _FloatELU
from ....nn.modules.activation import LeakyReLU as _FloatLeakyReLU
from ....nn.modules.activation import Sigmoid as _FloatSigmoid
from ....nn.modules.activation import Softmax as _FloatSoftmax
from ....nn.modules.module import Module
from . import functional as qF


def _observed(mod) -> tuple[float, int]:
    observer = getattr(mod, "activation_post_process", None)
    if observer is None:
        raise AttributeError(f"'{type(mod).__name__}' object has no attribute 'activation_post_process'")
    scale, zero_point = observer.calculate_qparams()
    return float(scale.reshape(-1)[0]), int(zero_point.reshape(-1)[0])


def _requantize(values, scale, zero_point, dtype):
    return _C.quantize_per_tensor(values.contiguous(), float(scale), int(zero_point), dtype)


def _require_quantized(op: str, input) -> None:
    if not getattr(input, "is_quantized", False):
        raise RuntimeError(f"quantized::{op}: expected a quantized input, but got {input.dtype}")


class _ScaleZeroPointBuffers:
    """scale and zero_point kept as 0-d buffers (so in the state dict, as PyTorch's)."""

    def _register_output_qparams(self, scale, zero_point) -> None:
        self.register_buffer("scale", tensor(float(scale)))
        self.register_buffer("zero_point", tensor(int(zero_point)))


class ELU(_FloatELU):
    """Quantized ELU: scale and zero_point (plain attributes, as PyTorch's) are the output's."""

    def __init__(self, scale, zero_point, alpha=1.0) -> None:
        super().__init__(alpha)
        self.scale = scale
        self.zero_point = zero_point

    def forward(self, input):
        return qF.elu(input, self.scale, self.zero_point, self.alpha)

    def _get_name(self) -> str:
        return "QuantizedELU"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant: bool = False):
        scale, zero_point = _observed(mod)
        return ELU(scale, zero_point, mod.alpha)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(float(scale), int(zero_point), mod.alpha)


class LeakyReLU(_ScaleZeroPointBuffers, _FloatLeakyReLU):
    """Quantized LeakyReLU; scale and zero_point are 0-d buffers."""

    def __init__(self, scale: float, zero_point: int, negative_slope: float = 1e-2, inplace: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__(negative_slope, inplace)
        self._register_output_qparams(scale, zero_point)

    def forward(self, input):
        _require_quantized("leaky_relu", input)
        return qF.leaky_relu(input, self.negative_slope, False, float(self.scale), int(self.zero_point))

    def _get_name(self) -> str:
        return "QuantizedLeakyReLU"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        scale, zero_point = _observed(mod)
        return cls(scale, zero_point, mod.negative_slope, mod.inplace)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(float(scale), int(zero_point), mod.negative_slope, mod.inplace)


class Sigmoid(_FloatSigmoid):
    """Quantized Sigmoid with the output parameters output_scale and output_zero_point."""

    def __init__(self, output_scale: float, output_zero_point: int) -> None:
        super().__init__()
        self.output_scale = output_scale
        self.output_zero_point = output_zero_point

    def forward(self, input):
        _require_quantized("sigmoid", input)
        return _requantize(_C.sigmoid(input.dequantize()), self.output_scale, self.output_zero_point, input.dtype)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        return cls(*_observed(mod))


def _softmax_dim(ndim: int) -> int:
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X as "
                  "an argument.", stacklevel=3)
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(_FloatSoftmax):
    """Quantized Softmax along dim; scale and zero_point (plain attributes) are the output's."""

    def __init__(self, dim=None, scale=1.0, zero_point=0) -> None:
        super().__init__()
        self.dim = dim
        self.scale = scale
        self.zero_point = zero_point

    def forward(self, input):
        _require_quantized("softmax", input)
        dim = self.dim if self.dim is not None else _softmax_dim(input.dim())
        return _requantize(F.softmax(input.dequantize(), dim), self.scale, self.zero_point, input.dtype)

    def _get_name(self) -> str:
        return "QuantizedSoftmax"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant: bool = False):
        scale, zero_point = _observed(mod)
        return Softmax(mod.dim, scale, zero_point)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.dim, float(scale), int(zero_point))


def _dtype_name(dtype) -> str:
    return {_C.quint8: "QUInt8", _C.qint8: "QInt8", _C.qint32: "QInt32"}.get(dtype, str(dtype))


def quantized_prelu(input, weight, output_scale, output_zero_point):
    """PyTorch's quantized::prelu, in integers: with d = x - x_zp split into its positive part p
    and negative part n, and w1 the weight's code for 1.0 (quantize(1.0) with the weight's
    parameters, so clamped to the weight's range),
        y = out_zp + round_half_even(float32(p * (w1 - w_zp) + n * (w - w_zp)) * m)
    where m = float32(x_scale * w_scale * float32(1 / out_scale)); clamped to the output's range.
    The positive side is thus scaled by the weight's representation of 1.0, as PyTorch's is."""
    _require_quantized("prelu", input)
    if weight.dtype != input.dtype:
        raise RuntimeError(f"Found dtype {_dtype_name(weight.dtype)} but expected {_dtype_name(input.dtype)}")
    if input.dim() == 0:
        raise RuntimeError("qprelu: zero-dim input tensor is not allowed.")
    f32 = np.float32
    x_scale, x_zp = input.q_scale(), input.q_zero_point()
    w_scale, w_zp = weight.q_scale(), weight.q_zero_point()
    multiplier = f32(f32(x_scale) * f32(w_scale)) * f32(f32(1.0) / f32(output_scale))
    lo, hi = integer_range(input.dtype)
    w_one = min(max(int(np.rint(f32(1.0) * f32(f32(1.0) / f32(w_scale)))) + w_zp, lo), hi)
    w = weight.int_repr().numpy().astype(np.int64).reshape(-1)
    if w.size != 1:
        channels = input.shape[1] if input.dim() > 1 else 1
        if channels != w.size:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{w.size} and channel size = {channels}.")
        w = w.reshape([1, w.size] + [1] * (input.dim() - 2))
    d = input.int_repr().numpy().astype(np.int64) - x_zp
    acc = np.maximum(d, 0) * (w_one - w_zp) + np.minimum(d, 0) * (w - w_zp)
    codes = np.rint(acc.astype(f32) * multiplier).astype(np.int64) + int(output_zero_point)
    codes = np.clip(codes, lo, hi).astype(input.int_repr().numpy().dtype)
    return _C._make_per_tensor_quantized_tensor(tensor(np.ascontiguousarray(codes)), float(output_scale),
                                                int(output_zero_point))


class PReLU(Module):
    """Quantized PReLU: a quint8 per-tensor weight of num_parameters slopes (one, or one per
    channel, dim 1); scale and zero_point (plain attributes) are the output's."""

    def __init__(self, output_scale: float, output_zero_point: int, num_parameters: int = 1) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.scale = output_scale
        self.zero_point = output_zero_point
        w = _C.randn([num_parameters], dtype=_C.float32)
        self.set_weight(_C.quantize_per_tensor(w, 1.0, 0, _C.quint8))

    def set_weight(self, w) -> None:
        self.weight = w

    def forward(self, input):
        return quantized_prelu(input, self.weight, self.scale, self.zero_point)

    def _get_name(self) -> str:
        return "QuantizedPReLU"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        scale, zero_point = _observed(mod)
        qprelu = cls(scale, zero_point, mod.num_parameters)
        float_wt = mod.weight.detach().float()
        observer = mod.qconfig.weight()
        observer(float_wt)
        if observer.dtype != _C.quint8:
            warnings.warn(f"PReLU's weight observer should have dtype quint8 but got {observer.dtype}", stacklevel=2)
        wt_scale, wt_zp = observer.calculate_qparams()
        qprelu.set_weight(_C.quantize_per_tensor(float_wt, float(wt_scale.reshape(-1)[0]),
                                                 int(wt_zp.reshape(-1)[0]), _C.quint8))
        return qprelu

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        qprelu = cls(float(scale), int(zero_point), mod.num_parameters)
        float_wt = mod.weight.detach().float()
        observer = mod.qconfig.weight()
        observer(float_wt)
        wt_scale, wt_zp = observer.calculate_qparams()
        qprelu.set_weight(_C.quantize_per_tensor(float_wt, float(wt_scale.reshape(-1)[0]),
                                                 int(wt_zp.reshape(-1)[0]), _C.quint8))
        return qprelu
