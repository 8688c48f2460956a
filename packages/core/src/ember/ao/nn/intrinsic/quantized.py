"""Quantized fused modules (torch.ao.nn.intrinsic.quantized): the quantized layer with the relu
applied to its integers before they are stored (relu clamps at the output zero point)."""

from __future__ import annotations

from ..quantized import batchnorm as _qbn
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


class BNReLU2d(_qbn.BatchNorm2d):
    """Quantized BatchNorm2d followed by relu (PyTorch's quantized::batch_norm2d_relu): the batch
    norm's integers clamped below at the output zero point."""

    _relu = True

    def _get_name(self) -> str:
        return "QuantizedBNReLU2d"


class BNReLU3d(_qbn.BatchNorm3d):
    """Quantized BatchNorm3d followed by relu (PyTorch's quantized::batch_norm3d_relu)."""

    _relu = True

    def _get_name(self) -> str:
        return "QuantizedBNReLU3d"


__all__ = ["BNReLU2d", "BNReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "LinearReLU"]
