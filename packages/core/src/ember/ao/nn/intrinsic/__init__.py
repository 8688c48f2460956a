"""Fused modules (torch.ao.nn.intrinsic): a float layer and the activation after it as one
Sequential, which ember.ao.quantization.fuse_modules makes and convert turns into one quantized
module (ember.ao.nn.intrinsic.quantized) with the activation applied inside its kernel.

ConvBn1d/2d/3d, ConvBnReLU1d/2d/3d and LinearBn1d keep a conv/linear and the BatchNorm after it
unfolded: fuse_modules_qat (or prepare_qat_fx) makes them for quantization-aware training, and
prepare_qat swaps them for their QAT forms (ember.ao.nn.intrinsic.qat), which train with the
BatchNorm folded into the fake-quantized weight."""

from __future__ import annotations

from . import qat, quantized
from .modules import (
    BNReLU2d,
    BNReLU3d,
    ConvBn1d,
    ConvBn2d,
    ConvBn3d,
    ConvBnReLU1d,
    ConvBnReLU2d,
    ConvBnReLU3d,
    ConvReLU1d,
    ConvReLU2d,
    ConvReLU3d,
    LinearBn1d,
    LinearReLU,
    _FusedModule,  # noqa: F401 - the passes read nni._FusedModule
)

__all__ = ["BNReLU2d", "BNReLU3d", "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d",
           "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearBn1d", "LinearReLU", "qat", "quantized"]
