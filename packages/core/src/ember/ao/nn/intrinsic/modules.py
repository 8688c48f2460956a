"""The float fused modules of ember.ao.nn.intrinsic (torch.ao.nn.intrinsic.modules): what
fuse_modules / fuse_modules_qat make, and what the QAT and quantized forms convert from."""

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
