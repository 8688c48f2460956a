"""Fused modules (torch.ao.nn.intrinsic): a float layer and the activation after it as one
Sequential, which ember.ao.quantization.fuse_modules makes and convert turns into one quantized
module (ember.ao.nn.intrinsic.quantized) with the activation applied inside its kernel.

ConvBn1d/2d/3d, ConvBnReLU1d/2d/3d and LinearBn1d keep a conv/linear and the BatchNorm after it
unfolded: fuse_modules_qat (or prepare_qat_fx) makes them for quantization-aware training, and
prepare_qat swaps them for their QAT forms (ember.ao.nn.intrinsic.qat), which train with the
BatchNorm folded into the fake-quantized weight."""

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


class ConvBn1d(_FusedModule):
    _TYPES = ("Conv1d", "BatchNorm1d")


class ConvBn2d(_FusedModule):
    _TYPES = ("Conv2d", "BatchNorm2d")


class ConvBn3d(_FusedModule):
    _TYPES = ("Conv3d", "BatchNorm3d")


class ConvBnReLU1d(_FusedModule):
    _TYPES = ("Conv1d", "BatchNorm1d", "ReLU")


class ConvBnReLU2d(_FusedModule):
    _TYPES = ("Conv2d", "BatchNorm2d", "ReLU")


class ConvBnReLU3d(_FusedModule):
    _TYPES = ("Conv3d", "BatchNorm3d", "ReLU")


class LinearBn1d(_FusedModule):
    _TYPES = ("Linear", "BatchNorm1d")


class BNReLU2d(_FusedModule):
    _TYPES = ("BatchNorm2d", "ReLU")


class BNReLU3d(_FusedModule):
    _TYPES = ("BatchNorm3d", "ReLU")


from . import qat, quantized  # noqa: E402 - needs the classes above

__all__ = ["BNReLU2d", "BNReLU3d", "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d",
           "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearBn1d", "LinearReLU", "qat", "quantized"]
