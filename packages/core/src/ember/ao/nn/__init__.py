"""ember.ao.nn (torch.ao.nn): the QAT modules (ember.ao.nn.qat)."""

from . import qat

__all__ = ["qat"]
