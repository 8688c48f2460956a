"""sigmoid_focal_loss (Lin et al., RetinaNet), as torchvision.ops.sigmoid_focal_loss."""

from __future__ import annotations

import ember
import ember.nn.functional as F

from .boxes import _REDUCTION_ERROR


def sigmoid_focal_loss(inputs, targets, alpha: float = 0.25, gamma: float = 2, reduction: str = "none"):
    """Binary cross-entropy on logits ``inputs`` scaled by ``(1 - p_t) ** gamma``, which shrinks the
    loss of well-classified examples, and weighted by ``alpha`` for positives (``alpha = -1``: no
    weighting); ``reduction`` is ``'none'``, ``'mean'`` or ``'sum'``."""
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(_REDUCTION_ERROR.format(reduction))
    if not (0 <= alpha <= 1) and alpha != -1:
        raise ValueError(f"Invalid alpha value: {alpha}. alpha must be in the range [0,1] or -1 for ignore.")
    if inputs.shape != targets.shape:
        raise ValueError(f"[sigmoid_focal_loss] expected inputs and targets of the same shape, but got "
                         f"{tuple(inputs.shape)} and {tuple(targets.shape)}")
    p = ember.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(_REDUCTION_ERROR.format(reduction))
