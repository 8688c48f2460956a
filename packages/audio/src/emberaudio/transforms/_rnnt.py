"""``RNNTLoss``: the module form of :func:`emberaudio.functional.rnnt_loss`."""

from __future__ import annotations

import ember

from ..functional._rnnt import rnnt_loss

__all__ = ["RNNTLoss"]


class RNNTLoss(ember.nn.Module):
    """RNN Transducer loss, as ``torchaudio.transforms.RNNTLoss``; see ``rnnt_loss`` for arguments."""

    def __init__(self, blank: int = -1, clamp: float = -1.0, reduction: str = "mean",
                 fused_log_softmax: bool = True):
        super().__init__()
        if reduction not in ("none", "mean", "sum"):
            raise ValueError("reduction should be one of 'none', 'mean', or 'sum'")
        self.blank = blank
        self.clamp = clamp
        self.reduction = reduction
        self.fused_log_softmax = fused_log_softmax

    def forward(self, logits: ember.Tensor, targets: ember.Tensor, logit_lengths: ember.Tensor,
                target_lengths: ember.Tensor) -> ember.Tensor:
        return rnnt_loss(logits, targets, logit_lengths, target_lengths, self.blank, self.clamp,
                         self.reduction, self.fused_log_softmax)
