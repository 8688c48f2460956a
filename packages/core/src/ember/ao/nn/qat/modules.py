"""qat.Linear and qat.Conv2d: nn.Linear / nn.Conv2d that fake-quantize their weight with
qconfig.weight() (as torch.ao.nn.qat); activations are left to the caller's FakeQuantize."""

from __future__ import annotations

from .... import nn
from ....nn import functional as F


class _FakeQuantWeight:
    """The shared QAT parts: the qconfig check, from_float and to_float."""

    _FLOAT_MODULE: type
    _SHAPE_ARGUMENTS: tuple  # the float module's constructor arguments, read back from its attributes

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
            raise AssertionError(f" qat.{cls.__name__}.from_float only works for {cls._FLOAT_MODULE.__name__}")
        if not getattr(mod, "qconfig", None):
            raise AssertionError("Input float module must have a valid qconfig")
        qat = cls(**cls._arguments(mod), bias=mod.bias is not None, qconfig=mod.qconfig)
        qat.weight, qat.bias = mod.weight, mod.bias
        return qat

    def to_float(self):
        """The plain float module, sharing this one's weight and bias."""
        float_mod = self._FLOAT_MODULE(**self._arguments(self), bias=self.bias is not None)
        float_mod.weight, float_mod.bias = self.weight, self.bias
        return float_mod


class Linear(_FakeQuantWeight, nn.Linear):
    _FLOAT_MODULE = nn.Linear
    _SHAPE_ARGUMENTS = ("in_features", "out_features")

    def __init__(self, in_features: int, out_features: int, bias: bool = True, qconfig=None, device=None,
                 dtype=None) -> None:
        super().__init__(in_features, out_features, bias, device=device, dtype=dtype)
        self._attach(qconfig, {"device": device, "dtype": dtype})

    def forward(self, input):
        return F.linear(input, self.weight_fake_quant(self.weight), self.bias)


class Conv2d(_FakeQuantWeight, nn.Conv2d):
    _FLOAT_MODULE = nn.Conv2d
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
