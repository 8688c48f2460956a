"""Quantized LayerNorm, GroupNorm and InstanceNorm1d/2d/3d (torch.ao.nn.quantized's): quantized
input, float32 weight and bias, output quantized with the module's scale and zero_point (0-d
buffers, so in the state dict with weight and bias, as PyTorch's).

The statistics are taken in float32 over the dequantized input and the normalized, affine result
quantized per tensor; PyTorch's x86 kernel sums the codes and folds the affine into one multiply-
add per element, so a value within float32 rounding of a half step can land one code apart (see
tests/test_quantized_more_modules_torch_parity.py).
"""

from __future__ import annotations

from ...._tensor import tensor
from ....nn import functional as F
from ....nn.modules.normalization import GroupNorm as _FloatGroupNorm
from ....nn.modules.normalization import InstanceNorm1d as _FloatInstanceNorm1d
from ....nn.modules.normalization import InstanceNorm2d as _FloatInstanceNorm2d
from ....nn.modules.normalization import InstanceNorm3d as _FloatInstanceNorm3d
from ....nn.modules.normalization import LayerNorm as _FloatLayerNorm
from .more_modules import _observed, _requantize, _require_quantized


def _float32(t):
    return None if t is None else t.detach().float()


def _register_output_qparams(mod, scale, zero_point) -> None:
    mod.register_buffer("scale", tensor(float(scale)))
    mod.register_buffer("zero_point", tensor(int(zero_point)))


def quantized_layer_norm(input, normalized_shape, weight, bias, eps, output_scale, output_zero_point):
    _require_quantized("layer_norm", input)
    value = F.layer_norm(input.dequantize(), list(normalized_shape), _float32(weight), _float32(bias), float(eps))
    return _requantize(value, output_scale, output_zero_point, input.dtype)


def quantized_group_norm(input, num_groups, weight, bias, eps, output_scale, output_zero_point):
    _require_quantized("group_norm", input)
    value = F.group_norm(input.dequantize(), int(num_groups), _float32(weight), _float32(bias), float(eps))
    return _requantize(value, output_scale, output_zero_point, input.dtype)


def quantized_instance_norm(input, weight, bias, eps, output_scale, output_zero_point):
    """Instance norm is group norm with one group per channel (as PyTorch computes it)."""
    _require_quantized("instance_norm", input)
    if input.dim() < 2:
        raise RuntimeError(f"quantized::instance_norm: expected an (N, C, ...) input, but got {input.dim()} "
                           f"dimensions")
    return quantized_group_norm(input, input.shape[1], weight, bias, eps, output_scale, output_zero_point)


class LayerNorm(_FloatLayerNorm):
    """Quantized LayerNorm over the last len(normalized_shape) dimensions."""

    def __init__(self, normalized_shape, weight, bias, scale, zero_point, eps=1e-5, elementwise_affine=True,
                 device=None, dtype=None) -> None:
        super().__init__(normalized_shape, eps=eps, elementwise_affine=elementwise_affine)
        self.weight = weight
        self.bias = bias
        _register_output_qparams(self, scale, zero_point)

    def forward(self, input):
        return quantized_layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps,
                                    float(self.scale), int(self.zero_point))

    def _get_name(self) -> str:
        return "QuantizedLayerNorm"

    def extra_repr(self) -> str:  # PyTorch 2.13's LayerNorm repr, bias included
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        scale, zero_point = _observed(mod)
        return cls(mod.normalized_shape, mod.weight, mod.bias, scale, zero_point, mod.eps, mod.elementwise_affine)

    @classmethod
    def from_reference(cls, mod, scale, zero_point):
        return cls(mod.normalized_shape, mod.weight, mod.bias, float(scale), int(zero_point), mod.eps,
                   mod.elementwise_affine)


class GroupNorm(_FloatGroupNorm):
    """Quantized GroupNorm of an (N, C, ...) input in num_groups groups of channels."""

    __constants__ = ["num_groups", "num_channels", "eps", "affine"]

    def __init__(self, num_groups, num_channels, weight, bias, scale, zero_point, eps=1e-5, affine=True,
                 device=None, dtype=None) -> None:
        super().__init__(num_groups, num_channels, eps, affine)
        self.weight = weight
        self.bias = bias
        _register_output_qparams(self, scale, zero_point)

    def forward(self, input):
        return quantized_group_norm(input, self.num_groups, self.weight, self.bias, self.eps, float(self.scale),
                                    int(self.zero_point))

    def _get_name(self) -> str:
        return "QuantizedGroupNorm"

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, bias={self.bias is not None}"

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        scale, zero_point = _observed(mod)
        return cls(mod.num_groups, mod.num_channels, mod.weight, mod.bias, scale, zero_point, mod.eps, mod.affine)


def _instance_norm(float_cls, name: str):
    class _QuantizedInstanceNorm(float_cls):
        def __init__(self, num_features, weight, bias, scale, zero_point, eps=1e-5, momentum=0.1, affine=False,
                     track_running_stats=False, device=None, dtype=None) -> None:
            super().__init__(num_features, eps, momentum, affine, track_running_stats)
            self.weight = weight
            self.bias = bias
            _register_output_qparams(self, scale, zero_point)

        def forward(self, input):
            return quantized_instance_norm(input, self.weight, self.bias, self.eps, float(self.scale),
                                           int(self.zero_point))

        def _get_name(self) -> str:
            return f"Quantized{name}"

        def extra_repr(self) -> str:
            return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                    f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")

        @classmethod
        def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
            scale, zero_point = _observed(mod)
            return cls(mod.num_features, mod.weight, mod.bias, scale, zero_point, mod.eps, mod.affine)

        @classmethod
        def from_reference(cls, mod, scale, zero_point):
            return cls(mod.num_features, mod.weight, mod.bias, float(scale), int(zero_point), mod.eps, mod.affine)

    _QuantizedInstanceNorm.__name__ = _QuantizedInstanceNorm.__qualname__ = name
    _QuantizedInstanceNorm.__doc__ = f"Quantized {name}: per-sample, per-channel normalization."
    return _QuantizedInstanceNorm


InstanceNorm1d = _instance_norm(_FloatInstanceNorm1d, "InstanceNorm1d")
InstanceNorm2d = _instance_norm(_FloatInstanceNorm2d, "InstanceNorm2d")
InstanceNorm3d = _instance_norm(_FloatInstanceNorm3d, "InstanceNorm3d")
