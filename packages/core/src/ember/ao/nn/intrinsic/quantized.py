"""Quantized fused modules (torch.ao.nn.intrinsic.quantized): the quantized layer with the relu
applied to its integers before they are stored (relu clamps at the output zero point)."""

from __future__ import annotations

from ..quantized import modules as nnq


class LinearReLU(nnq.Linear):
    _relu = True

    def _get_name(self) -> str:
        return "QuantizedLinearReLU"


class ConvReLU1d(nnq.Conv1d):
    _relu = True

    def _get_name(self) -> str:
        return "QuantizedConvReLU1d"


class ConvReLU2d(nnq.Conv2d):
    _relu = True

    def _get_name(self) -> str:
        return "QuantizedConvReLU2d"


class ConvReLU3d(nnq.Conv3d):
    _relu = True

    def _get_name(self) -> str:
        return "QuantizedConvReLU3d"


__all__ = ["ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU"]
