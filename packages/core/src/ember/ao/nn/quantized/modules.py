"""Quantized modules (torch.ao.nn.quantized): quint8 activations in and out, qint8 weights.

Each is made from its float twin by `from_float` (what ember.ao.quantization.convert calls): the
weight quantized by the qconfig's weight observer, the output's scale and zero point read from
the activation observer `prepare` attached. They compute with the native kernels of
native/src/ops/quantization/quantized_kernels.cpp (Note [integer GEMM through float BLAS]), whose
results equal PyTorch 2.13's x86 ones bit for bit. State dicts use PyTorch's keys
(`_packed_params._packed_params` for Linear; weight, bias, scale, zero_point for Conv), so
checkpoints load in either library.
"""

from __future__ import annotations

from .... import _C
from ...._quantized import (
    integer_range,
    per_channel_affine,
    per_channel_affine_float_qparams,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
)
from ...._tensor import tensor
from ....nn import functional as F
from ....nn.modules.module import Module
from ....nn.modules.utils import _ntuple


def _quantize_weight(float_wt, observer):
    """The float weight quantized with the parameters its observer chose (PyTorch's _quantize_weight)."""
    scale, zero_point = observer.calculate_qparams()
    if observer.qscheme in (per_tensor_affine, per_tensor_symmetric):
        return _C.quantize_per_tensor(float_wt.detach().float(), float(scale.reshape(-1)[0]),
                                      int(zero_point.reshape(-1)[0]), _C.qint8)
    if observer.qscheme in (per_channel_affine, per_channel_symmetric):
        return _C.quantize_per_channel(float_wt.detach().float(), scale.to(_C.float64), zero_point.to(_C.int64),
                                       observer.ch_axis, _C.qint8)
    if observer.qscheme == per_channel_affine_float_qparams:  # embedding tables: quint8 / quint4x2 rows
        return _C.quantize_per_channel(float_wt.detach().float(), scale.to(_C.float32), zero_point.to(_C.float32),
                                       observer.ch_axis, observer.dtype)
    raise ValueError(f"Unexpected qscheme {observer.qscheme}")


def _activation_qparams(mod) -> tuple[float, int]:
    observer = getattr(mod, "activation_post_process", None)
    if observer is None:
        raise AssertionError(f"{type(mod).__name__} has no activation_post_process: run ember.ao.quantization.prepare "
                             "and calibrate before convert")
    scale, zero_point = observer.calculate_qparams()
    return float(scale.reshape(-1)[0]), int(zero_point.reshape(-1)[0])


def _weight_observer(mod, observe: bool = True):
    """The observer that quantizes a float (or QAT) module's weight: a QAT module's fake quantizer,
    else a fresh one from the qconfig, run on the weight. PyTorch runs a QAT module's fake
    quantizer on the weight once more too (its moving averages take the final weight), unless
    observe is False (Linear's use_precomputed_fake_quant)."""
    if hasattr(mod, "weight_fake_quant"):
        if observe:
            mod.weight_fake_quant(mod.weight)
        return mod.weight_fake_quant
    observer = mod.qconfig.weight()
    observer(mod.weight)
    return observer


def _check_quint8(op: str, input) -> None:
    if input.dtype != _C.quint8:
        raise RuntimeError(f"{op}: expected a quint8 input (put an ember.ao.quantization.QuantStub before the "
                           f"quantized part of the model), but got {input.dtype}")


class _OutputQParamsState(Module):
    """Saves and loads the output's scale and zero_point as PyTorch's quantized modules do (0-d
    tensors `<prefix>scale`, `<prefix>zero_point`)."""

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "scale"] = tensor(self.scale)
        destination[prefix + "zero_point"] = tensor(self.zero_point)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        for name, kind in (("scale", float), ("zero_point", int)):
            key = prefix + name
            if key in state_dict:
                setattr(self, name, kind(state_dict[key]))
            elif strict:
                missing_keys.append(key)
        super()._load_from_state_dict(state_dict, prefix, local_metadata, False, missing_keys, unexpected_keys,
                                      error_msgs)


class Quantize(Module):
    """Quantizes a float input with fixed parameters (the convert of QuantStub)."""

    def __init__(self, scale, zero_point, dtype, factory_kwargs=None) -> None:
        super().__init__()
        self.register_buffer("scale", tensor([float(scale)]))
        self.register_buffer("zero_point", tensor([int(zero_point)], dtype=_C.int64))
        self.dtype = dtype

    def forward(self, X):
        return _C.quantize_per_tensor(X, float(self.scale), int(self.zero_point), self.dtype)

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant: bool = False):
        scale, zero_point = _activation_qparams(mod)
        return Quantize(scale, zero_point, mod.activation_post_process.dtype)

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}, dtype={self.dtype}"


class DeQuantize(Module):
    """Dequantizes its input (the convert of DeQuantStub)."""

    def forward(self, Xq):
        return Xq.dequantize()

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant: bool = False):
        return DeQuantize()


class LinearPackedParams(Module):
    """The weight and bias of a quantized Linear, saved as PyTorch saves its packed parameters:
    `<prefix>dtype` and `<prefix>_packed_params` = (weight, bias)."""

    _version = 3

    def __init__(self, dtype=_C.qint8) -> None:
        super().__init__()
        if dtype not in (_C.qint8, _C.float16):
            raise RuntimeError(f"Unsupported dtype on quantized linear: {dtype} (qint8 or float16)")
        self.dtype = dtype
        self.weight = None
        self.bias = None

    def set_weight_bias(self, weight, bias) -> None:
        if self.dtype == _C.qint8 and (weight.dtype != _C.qint8 or weight.dim() != 2):
            raise RuntimeError(f"a quantized Linear takes a 2-d qint8 weight, but got a {weight.dim()}-d {weight.dtype}")
        if self.dtype == _C.float16 and weight.dtype != _C.float32 and weight.dtype != _C.float16:
            raise RuntimeError(f"a float16 dynamic Linear takes a floating weight, but got {weight.dtype}")
        self.weight = weight if self.dtype == _C.qint8 else weight.detach().to(_C.float16)
        self.bias = None if bias is None else bias.detach().float()

    def _weight_bias(self):
        return self.weight, self.bias

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "dtype"] = self.dtype
        destination[prefix + "_packed_params"] = self._weight_bias()

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        for name in ("dtype", "_packed_params"):
            if prefix + name not in state_dict:
                missing_keys.append(prefix + name)
        if prefix + "dtype" in state_dict:
            self.dtype = state_dict[prefix + "dtype"]
        if prefix + "_packed_params" in state_dict:
            weight, bias = state_dict[prefix + "_packed_params"]
            self.set_weight_bias(weight, bias)

    def extra_repr(self) -> str:
        return f"dtype={self.dtype}"


class Linear(_OutputQParamsState):
    """y = x W^T + b on quint8 x, with a qint8 W (per tensor or per output channel) and a float b;
    the result quint8 with this module's scale and zero_point."""

    _version = 3
    _FLOAT_MODULE = None  # set below: nn.Linear and its QAT twin

    def __init__(self, in_features: int, out_features: int, bias_: bool = True, dtype=_C.qint8) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        bias = _C.zeros(out_features, dtype=_C.float32) if bias_ else None
        if dtype == _C.qint8:
            weight = _C._make_per_tensor_quantized_tensor(_C.zeros([out_features, in_features], dtype=_C.int8), 1.0, 0)
        else:
            weight = _C.zeros([out_features, in_features], dtype=_C.float32)
        self._packed_params = LinearPackedParams(dtype)
        self._packed_params.set_weight_bias(weight, bias)
        self.scale = 1.0
        self.zero_point = 0

    def _get_name(self) -> str:
        return "QuantizedLinear"

    def extra_repr(self) -> str:
        qscheme = self.weight().qscheme() if self._packed_params.dtype == _C.qint8 else None
        return (f"in_features={self.in_features}, out_features={self.out_features}, scale={self.scale}, "
                f"zero_point={self.zero_point}, qscheme={qscheme}")

    def __repr__(self) -> str:  # PyTorch hides the packed parameters' module
        return f"{self._get_name()}({self.extra_repr()})"

    def weight(self):
        return self._packed_params.weight

    def bias(self):
        return self._packed_params.bias

    def set_weight_bias(self, w, b) -> None:
        self._packed_params.set_weight_bias(w, b)

    def forward(self, x):
        _check_quint8("QuantizedLinear", x)
        return _C._quantized_linear(x, self.weight(), self.bias(), float(self.scale), int(self.zero_point),
                                    self._relu)

    _relu = False

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The quantized twin of a prepared and calibrated nn.Linear (or QAT / fused LinearReLU)."""
        float_linear = mod[0] if _is_fused(mod) else mod
        if type(float_linear).__name__ != "Linear" or not hasattr(float_linear, "weight"):
            raise AssertionError(f"nnq.{cls.__name__}.from_float only works for Linear, but got {type(mod).__name__}")
        if not hasattr(mod, "qconfig") and not hasattr(float_linear, "weight_fake_quant"):
            raise AssertionError("Input float module must have qconfig defined")
        observer = _weight_observer(float_linear if hasattr(float_linear, "weight_fake_quant") else _with_qconfig(
            float_linear, mod), observe=not use_precomputed_fake_quant)
        if observer.dtype not in (_C.qint8, _C.int8, "qint8"):
            raise AssertionError("Weight observer must have dtype torch.qint8")
        scale, zero_point = _activation_qparams(mod)
        qlinear = cls(float_linear.in_features, float_linear.out_features)
        qlinear.set_weight_bias(_quantize_weight(float_linear.weight, observer), float_linear.bias)
        qlinear.scale, qlinear.zero_point = scale, zero_point
        return qlinear


def _is_fused(mod) -> bool:
    """An ember.ao.nn.intrinsic fused module (a layer and its activation), marked by its class."""
    return getattr(type(mod), "_TYPES", None) is not None


def _with_qconfig(inner, outer):
    if not hasattr(inner, "qconfig"):
        inner.qconfig = outer.qconfig
    return inner


class _ConvNd(_OutputQParamsState):
    _n = 0
    _relu = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", device=None, dtype=None) -> None:
        super().__init__()
        if padding_mode != "zeros":
            raise NotImplementedError(f"a quantized convolution pads with zeros only, but got padding_mode="
                                      f"{padding_mode!r}")
        if in_channels % groups or out_channels % groups:
            raise ValueError("in_channels and out_channels must be divisible by groups")
        n = _ntuple(self._n)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size, self.stride, self.padding, self.dilation = n(kernel_size), n(stride), n(padding), n(dilation)
        self.padding_mode = padding_mode
        self.transposed, self.output_padding = False, n(0)
        weight = _C._make_per_tensor_quantized_tensor(
            _C.zeros([out_channels, in_channels // groups, *self.kernel_size], dtype=_C.int8), 1.0, 0)
        self.set_weight_bias(weight, _C.zeros(out_channels, dtype=_C.float32) if bias else None)
        self.scale = 1.0
        self.zero_point = 0

    def set_weight_bias(self, w, b) -> None:
        if w.dtype != _C.qint8 or w.dim() != self._n + 2:
            raise RuntimeError(f"a quantized Conv{self._n}d takes a {self._n + 2}-d qint8 weight, but got a "
                               f"{w.dim()}-d {w.dtype}")
        self._weight, self._bias = w, None if b is None else b.detach().float()

    def weight(self):
        return self._weight

    def bias(self):
        return self._bias

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
             f"scale={self.scale}, zero_point={self.zero_point}")
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if getattr(self, "output_padding", (0,) * self._n) != (0,) * self._n:  # the transposed ones'
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self._bias is None:
            s += ", bias=False"
        return s

    def forward(self, input):
        _check_quint8(self._get_name(), input)
        if input.dim() != self._n + 2:
            raise ValueError(f"Input shape must be `(N, C, {', '.join('LHW'[-self._n:] if self._n < 3 else 'DHW')})`!")
        return _C._quantized_conv(input, self._weight, self._bias, list(self.stride), list(self.padding),
                                  list(self.dilation), self.groups, float(self.scale), int(self.zero_point), self._relu)

    def _save_to_state_dict(self, destination, prefix, keep_vars) -> None:
        super()._save_to_state_dict(destination, prefix, keep_vars)
        destination[prefix + "weight"] = self._weight
        destination[prefix + "bias"] = self._bias

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs) -> None:
        for name in ("weight", "bias"):
            if prefix + name not in state_dict and strict:
                missing_keys.append(prefix + name)
        if prefix + "weight" in state_dict:
            self.set_weight_bias(state_dict[prefix + "weight"], state_dict.get(prefix + "bias"))
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The quantized twin of a prepared and calibrated nn.Conv (or QAT / fused ConvReLU)."""
        conv = mod[0] if _is_fused(mod) else mod
        if not hasattr(conv, "weight") or getattr(conv, "_n", None) != cls._n or conv.transposed:
            raise AssertionError(f"nnq.{cls.__name__}.from_float only works for Conv{cls._n}d, but got "
                                 f"{type(mod).__name__}")
        if not hasattr(mod, "qconfig") and not hasattr(conv, "weight_fake_quant"):
            raise AssertionError("Input float module must have qconfig defined.")
        observer = _weight_observer(conv if hasattr(conv, "weight_fake_quant") else _with_qconfig(conv, mod))
        scale, zero_point = _activation_qparams(mod)
        qconv = cls(conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, conv.dilation,
                    conv.groups, conv.bias is not None, conv.padding_mode)
        qconv.set_weight_bias(_quantize_weight(conv.weight, observer), conv.bias)
        qconv.scale, qconv.zero_point = scale, zero_point
        return qconv


class Conv1d(_ConvNd):
    _n = 1

    def _get_name(self) -> str:
        return "QuantizedConv1d"


class Conv2d(_ConvNd):
    _n = 2

    def _get_name(self) -> str:
        return "QuantizedConv2d"


class Conv3d(_ConvNd):
    _n = 3

    def _get_name(self) -> str:
        return "QuantizedConv3d"


class _OutputQParams(Module):
    """A module whose output takes the scale and zero point its activation observer chose."""

    def __init__(self, scale: float = 1.0, zero_point: int = 0) -> None:
        super().__init__()
        self.scale, self.zero_point = float(scale), int(zero_point)

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        return cls(*_activation_qparams(mod))


class ReLU6(Module):
    """relu6 on a quantized tensor (its parameters kept)."""

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return _C.relu6(input)

    def _get_name(self) -> str:
        return "QuantizedReLU6"

    @staticmethod
    def from_float(mod, use_precomputed_fake_quant: bool = False):
        return ReLU6(mod.inplace)


class Hardswish(_OutputQParams):
    """hardswish, computed on the dequantized values and quantized with the observed parameters."""

    def forward(self, input):
        return _C.quantize_per_tensor(F.hardswish(input.dequantize()), self.scale, self.zero_point, input.dtype)

    def _get_name(self) -> str:
        return "QuantizedHardswish"


class Dropout(Module):
    """Dropout of an inference model: the identity (as PyTorch's quantized Dropout)."""

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return input

    def _get_name(self) -> str:
        return "QuantizedDropout"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        return cls(mod.p, mod.inplace)


class FloatFunctional(Module):
    """The float model's arithmetic as a module, so prepare can observe its output:
    `self.skip_add = FloatFunctional(); self.skip_add.add(a, b)`."""

    def __init__(self) -> None:
        super().__init__()
        from ...quantization.stubs import _Identity

        self.activation_post_process = _Identity()

    def forward(self, x):
        raise RuntimeError("FloatFunctional is not intended to use the 'forward'. Please use the underlying operation")

    def _observe(self, r):
        return self.activation_post_process(r)

    def add(self, x, y):
        return self._observe(_C.add(x, y))

    def add_scalar(self, x, y):
        return _C.add(x, y)  # not observed: the quantized version keeps the input's parameters

    def mul(self, x, y):
        return self._observe(_C.mul(x, y))

    def mul_scalar(self, x, y):
        return _C.mul(x, y)

    def cat(self, x, dim: int = 0):
        return self._observe(_C.cat(x, dim))

    def add_relu(self, x, y):
        return self._observe(_C.relu(_C.add(x, y)))


class FXFloatFunctional(FloatFunctional):
    """FloatFunctional for FX graph mode, where the graph observes the outputs itself."""

    def _observe(self, r):
        return r


def _per_tensor_input(op: str, q) -> tuple[float, int]:
    if not q.is_quantized or q.qscheme() not in (per_tensor_affine, per_tensor_symmetric):
        raise RuntimeError(f"{op}: expected a tensor quantized per tensor, but got "
                           f"{q.qscheme() if q.is_quantized else q.dtype}")
    return q.q_scale(), q.q_zero_point()


def _add_scalar(q, c: float, relu: bool = False):
    """q + c with PyTorch's quantized add_scalar: the integers stay, and the zero point moves by
    c_q = round(c / s). Where z - c_q leaves the integer range, the zero point is pinned to that end,
    the scale grows to cover the range, and the integers are requantized (multiplier s / s' in
    float32, rounded half to even) - the parameters and integers PyTorch's x86 kernel gives."""
    s, z = _per_tensor_input("quantized::add_scalar", q)
    lo, hi = integer_range(q.dtype)
    shifted = z - round(c / s)
    ints = q.int_repr().to(_C.int64)
    if lo <= shifted <= hi:
        s_out, z_out = s, shifted
    else:
        z_out = lo if shifted < lo else hi
        s_out = (hi - shifted) / (hi - lo) * s if shifted < lo else (shifted - lo) / (hi - lo) * s
        moved = (ints - shifted).to(_C.float32) * tensor(s / s_out, dtype=_C.float32)
        ints = (moved.round().to(_C.int64) + z_out).clamp(lo, hi)
    if relu:
        ints = ints.clamp_min(z_out)
    return _C._make_per_tensor_quantized_tensor(ints.to(q.int_repr().dtype), s_out, z_out)


def _mul_scalar(q, c: float):
    """q * c with PyTorch's quantized mul_scalar: the scale becomes s |c|; a negative c mirrors the
    integers and the zero point within the range; c = 0 gives zeros with scale 1 and zero point 0."""
    s, z = _per_tensor_input("quantized::mul_scalar", q)
    lo, hi = integer_range(q.dtype)
    ints = q.int_repr()
    if c == 0:
        return _C._make_per_tensor_quantized_tensor(_C.zeros_like(ints), 1.0, 0)
    if c > 0:
        return _C._make_per_tensor_quantized_tensor(ints.clone(), s * c, z)
    mirrored = (hi + lo - ints.to(_C.int64)).to(ints.dtype)
    return _C._make_per_tensor_quantized_tensor(mirrored, s * -c, hi - (z - lo))


class QFunctional(_OutputQParamsState):
    """FloatFunctional's quantized twin: the results quantized with the observed scale and zero point."""

    def __init__(self) -> None:
        super().__init__()
        self.scale, self.zero_point = 1.0, 0
        from ...quantization.stubs import _Identity

        self.activation_post_process = _Identity()

    def forward(self, x):
        raise RuntimeError("Functional is not intended to use the 'forward'. Please use the underlying operation")

    def _get_name(self) -> str:
        return "QFunctional"

    def extra_repr(self) -> str:
        return f"scale={self.scale}, zero_point={self.zero_point}"

    def add(self, x, y):
        return _C._quantized_add(x, y, self.scale, self.zero_point)

    def add_relu(self, x, y):
        return _C._quantized_add(x, y, self.scale, self.zero_point, True)

    def mul(self, x, y):
        return _C._quantized_mul(x, y, self.scale, self.zero_point)

    def cat(self, x, dim: int = 0):
        return _C._quantized_cat(list(x), dim, self.scale, self.zero_point)

    # The scalar forms are not observed (as in PyTorch): their results carry parameters derived
    # from the input's, not this module's scale and zero point.
    def add_scalar(self, x, y):
        return _add_scalar(x, float(y))

    def mul_scalar(self, x, y):
        return _mul_scalar(x, float(y))

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        new = cls()
        new.scale, new.zero_point = _activation_qparams(mod)
        return new
