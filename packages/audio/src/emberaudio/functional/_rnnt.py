"""RNN-T loss (``rnnt_loss``), computed natively by emberaudio._C and wired into ember autograd."""

from __future__ import annotations

import numpy as np

import ember

from .. import _native

__all__ = ["rnnt_loss"]


def _host_array(tensor: ember.Tensor, name: str) -> np.ndarray:
    if tensor.device.type != "cpu":
        raise RuntimeError(f"{name} must be on CPU, found {tensor.device}")
    return np.ascontiguousarray(tensor.detach().numpy())


class _RNNTLoss(ember.autograd.Function):
    # The kernel produces the gradient with the costs (as torchaudio's does); backward scales it.

    @staticmethod
    def forward(ctx, logits, targets, logit_lengths, target_lengths, blank, clamp, fused, need_grad):
        native = _native.load("_C")
        x = _host_array(logits, "logits")
        kernel = native.rnnt_loss_f64 if x.dtype == np.float64 else native.rnnt_loss_f32
        # float16 is computed in float32 (as torchaudio does), then cast back.
        costs, grads = kernel(x.astype(np.float32) if x.dtype == np.float16 else x, _host_array(targets, "targets"),
                              _host_array(logit_lengths, "logit_lengths"),
                              _host_array(target_lengths, "target_lengths"), blank, clamp, fused, need_grad)
        if x.dtype == np.float16:
            costs = costs.astype(np.float16)
            grads = grads.astype(np.float16) if grads is not None else None
        ctx.save_for_backward(ember.from_numpy(grads) if grads is not None else None)
        return ember.from_numpy(costs)

    @staticmethod
    def backward(ctx, grad_costs):
        (grads,) = ctx.saved_tensors
        return grads * grad_costs.reshape(-1, 1, 1, 1), None, None, None, None, None, None, None


def rnnt_loss(logits: ember.Tensor, targets: ember.Tensor, logit_lengths: ember.Tensor,
              target_lengths: ember.Tensor, blank: int = -1, clamp: float = -1, reduction: str = "mean",
              fused_log_softmax: bool = True) -> ember.Tensor:
    """The RNN Transducer loss (Graves 2012), as ``torchaudio.functional.rnnt_loss``.

    Args:
        logits: (batch, max time, max target length + 1, classes) joiner output (float16/32/64);
            log-probabilities when ``fused_log_softmax`` is False.
        targets: (batch, max target length) int32, zero padded.
        logit_lengths: (batch,) int32 time lengths; their maximum must be ``logits.shape[1]``.
        target_lengths: (batch,) int32 target lengths; their maximum + 1 must be ``logits.shape[2]``.
        blank: blank index; negative counts from the end (default: the last class).
        clamp: clamps each gradient element to [-clamp, clamp] when positive.
        reduction: "none" (per-sequence costs), "mean" (over the batch) or "sum".
        fused_log_softmax: apply log-softmax over classes inside the loss.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError("reduction should be one of 'none', 'mean', or 'sum'")
    for name, t in (("logits", logits), ("targets", targets), ("logit_lengths", logit_lengths),
                    ("target_lengths", target_lengths)):
        if not isinstance(t, ember.Tensor):
            raise TypeError(f"{name} must be an ember.Tensor, got {type(t).__name__}")
    if logits.dtype not in (ember.float16, ember.float32, ember.float64):
        raise RuntimeError(f"logits must be float16, float32 or float64, got {logits.dtype}")
    for name, t in (("targets", targets), ("logit_lengths", logit_lengths), ("target_lengths", target_lengths)):
        if t.dtype != ember.int32:
            raise RuntimeError(f"{name} must be int32 type, got {t.dtype}")
    if logits.ndim != 4:
        raise ValueError(f"logits must be 4-D (batch, time, target, class), got shape {tuple(logits.shape)}")
    if blank < 0:  # counted from the end, as torchaudio does
        blank = logits.shape[-1] + blank
    need_grad = logits.requires_grad and ember.is_grad_enabled()
    costs = _RNNTLoss.apply(logits, targets, logit_lengths, target_lengths, int(blank), float(clamp),
                            bool(fused_log_softmax), need_grad)
    if reduction == "mean":
        return costs.mean()
    if reduction == "sum":
        return costs.sum()
    return costs
