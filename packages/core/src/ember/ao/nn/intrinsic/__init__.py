"""Fused modules (torch.ao.nn.intrinsic): a float layer and the activation after it as one
Sequential, which ember.ao.quantization.fuse_modules makes and convert turns into one quantized
module (ember.ao.nn.intrinsic.quantized) with the activation applied inside its kernel."""

from __future__ import annotations

from ....nn.modules.container import Sequential


class _FusedModule(Sequential):
    # the class names of the parts, in order; also what marks a fused module to the quantized ones
    _TYPES: tuple = ()

    def __init__(self, *modules) -> None:
        names = tuple(type(m).__name__ for m in modules)
        if names != self._TYPES:
            raise AssertionError(f"Incorrect types for input modules{names}: {type(self).__name__} fuses "
                                 f"{' + '.join(self._TYPES)}")
        super().__init__(*modules)


class ConvReLU1d(_FusedModule):
    _TYPES = ("Conv1d", "ReLU")


class ConvReLU2d(_FusedModule):
    _TYPES = ("Conv2d", "ReLU")


class ConvReLU3d(_FusedModule):
    _TYPES = ("Conv3d", "ReLU")


class LinearReLU(_FusedModule):
    _TYPES = ("Linear", "ReLU")


class BNReLU2d(_FusedModule):
    _TYPES = ("BatchNorm2d", "ReLU")


class BNReLU3d(_FusedModule):
    _TYPES = ("BatchNorm3d", "ReLU")


from . import quantized  # noqa: E402 - needs the classes above

__all__ = ["BNReLU2d", "BNReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU", "quantized"]
