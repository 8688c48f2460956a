"""ember.ao.nn (torch.ao.nn): the QAT modules (qat), the quantized ones (quantized, and
quantized.dynamic), the fused ones (intrinsic) and the observable LSTM / attention (quantizable)."""

from . import intrinsic, qat, quantizable, quantized

__all__ = ["intrinsic", "qat", "quantizable", "quantized"]
