"""ember.ao.nn (torch.ao.nn): the QAT modules (qat), the quantized ones (quantized, and
quantized.dynamic) and the fused ones (intrinsic)."""

from . import intrinsic, qat, quantized

__all__ = ["intrinsic", "qat", "quantized"]
