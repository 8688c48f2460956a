"""ember.masked.maskedtensor (torch.masked.maskedtensor): where the MaskedTensor prototype lives."""

from ._tensor import MaskedTensor, as_masked_tensor, is_masked_tensor, masked_tensor

__all__ = ["MaskedTensor", "as_masked_tensor", "is_masked_tensor", "masked_tensor"]
