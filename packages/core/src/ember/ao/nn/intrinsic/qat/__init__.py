"""ember.ao.nn.intrinsic.qat (torch.ao.nn.intrinsic.qat): the fused modules for
quantization-aware training. ConvBn1d/2d/3d, ConvBnReLU1d/2d/3d and LinearBn1d train with the
BatchNorm folded into the fake-quantized weight (freeze_bn_stats / update_bn_stats switch its
statistics between running and batch ones); ConvReLU1d/2d/3d and LinearReLU are the QAT layers with
a relu after them. prepare_qat (and prepare_qat_fx) make them from the float fused modules of
ember.ao.nn.intrinsic; convert folds the BatchNorm and quantizes them."""

from .conv_fused import (
    ConvBn1d,
    ConvBn2d,
    ConvBn3d,
    ConvBnReLU1d,
    ConvBnReLU2d,
    ConvBnReLU3d,
    ConvReLU1d,
    ConvReLU2d,
    ConvReLU3d,
    freeze_bn_stats,
    update_bn_stats,
)
from .linear_fused import LinearBn1d, LinearReLU

__all__ = ["ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d", "ConvBnReLU3d", "ConvReLU1d",
           "ConvReLU2d", "ConvReLU3d", "LinearBn1d", "LinearReLU", "freeze_bn_stats", "update_bn_stats"]
