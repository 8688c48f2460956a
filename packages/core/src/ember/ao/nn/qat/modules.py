"""qat.Linear and qat.Conv1d/2d/3d: nn.Linear / nn.ConvNd that fake-quantize their weight with
qconfig.weight() (as torch.ao.nn.qat); activations are left to the caller's FakeQuantize.

from_float also takes the fused float modules whose first part is the layer (an
ember.ao.nn.intrinsic ConvReLU / LinearReLU, for the fused QAT subclasses in
ember.ao.nn.intrinsic.qat); to_float gives back the float layer (the fused float module for those
subclasses) on detached copies of the weight and bias, in this module's training mode."""

from __future__ import annotations

from .... import nn
from ....nn import functional as F
from ....nn.parameter import Parameter


def _is_fused_float(mod) -> bool:
    from ..intrinsic.modules import _FusedModule

    return isinstance(mod, _FusedModule)


class _FakeQuantWeight:
    """The shared QAT parts: the qconfig check, from_float and to_float."""

    _FLOAT_MODULE: type
    _FLOAT_LAYER: type  # the plain float layer to_float builds
    _FLOAT_RELU_MODULE = None  # nn.ReLU for the fused QAT ConvReLU / LinearReLU
    _SHAPE_ARGUMENTS: tuple  # the float layer's constructor arguments, read back from its attributes

    def _attach(self, qconfig, factory_kwargs: dict) -> None:
        if not qconfig:
            raise AssertionError("qconfig must be provided for QAT module")
        self.qconfig = qconfig
        self.weight_fake_quant = qconfig.weight(factory_kwargs=factory_kwargs)

    @classmethod
    def _arguments(cls, mod) -> dict:
        return {name: getattr(mod, name) for name in cls._SHAPE_ARGUMENTS}

    @classmethod
    def from_float(cls, mod, use_precomputed_fake_quant: bool = False):
        """The QAT twin of a float module that has a .qconfig, sharing its weight and bias."""
        if type(mod) is not cls._FLOAT_MODULE:
            raise AssertionError(f"qat.{cls.__name__}.from_float only works for {cls._FLOAT_MODULE.__name__}, "
                                 f"got {type(mod).__name__}")
        if not hasattr(mod, "qconfig"):
            raise AssertionError("Input float module must have qconfig defined")
        if not mod.qconfig:
            raise AssertionError("Input float module must have a valid qconfig")
        qconfig = mod.qconfig
        if _is_fused_float(mod):
            mod = mod[0]
        qat = cls(**cls._arguments(mod), bias=mod.bias is not None, qconfig=qconfig)
        qat.weight, qat.bias = mod.weight, mod.bias
        return qat

    def to_float(self):
        """The float layer (the fused float module for a fused QAT class) on detached copies of this
        one's weight and bias."""
        layer = self._FLOAT_LAYER(**self._arguments(self), bias=self.bias is not None)
        layer.weight = Parameter(self.weight.detach())
        if self.bias is not None:
            layer.bias = Parameter(self.bias.detach())
        if self._FLOAT_RELU_MODULE is None:
            layer.train(self.training)
            return layer
        fused = self._FLOAT_MODULE(layer, self._FLOAT_RELU_MODULE())
        fused.train(self.training)
        return fused


class Linear(_FakeQuantWeight, nn.Linear):
    _FLOAT_MODULE = nn.Linear
    _FLOAT_LAYER = nn.Linear
    _SHAPE_ARGUMENTS = ("in_features", "out_features")

    def __init__(self, in_features: int, out_features: int, bias: bool = True, qconfig=None, device=None,
                 dtype=None) -> None:
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        self._attach(qconfig, {"device": device, "dtype": dtype})

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)


class _ConvNd(_FakeQuantWeight):
    _SHAPE_ARGUMENTS = ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups",
                        "padding_mode")

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0, dilation=1,
                 groups: int = 1, bias: bool = True, padding_mode: str = "zeros", qconfig=None, device=None,
                 dtype=None) -> None:
        super().__init__(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation,
                         groups=groups, bias=bias, padding_mode=padding_mode, device=device, dtype=dtype)
        self._attach(qconfig, {"device": device, "dtype": dtype})

    def forward(self, input):
        return self._conv_forward(input, self.weight_fake_quant(self.weight), self.bias)


class Conv1d(_ConvNd, nn.Conv1d):
    _FLOAT_MODULE = nn.Conv1d
    _FLOAT_LAYER = nn.Conv1d


class Conv2d(_ConvNd, nn.Conv2d):
    _FLOAT_MODULE = nn.Conv2d
    _FLOAT_LAYER = nn.Conv2d


class Conv3d(_ConvNd, nn.Conv3d):
    _FLOAT_MODULE = nn.Conv3d
    _FLOAT_LAYER = nn.Conv3d
