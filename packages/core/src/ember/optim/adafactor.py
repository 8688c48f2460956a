"""Adafactor (torch.optim.Adafactor; Shazeer and Stern, "Adafactor: Adaptive Learning Rates with
Sublinear Memory Cost"). The second moment of a matrix-shaped gradient is kept as its row and
column means only (a rank-one factorization), of a vector in full; the step is the gradient
scaled by that estimate's inverse square root, clipped to RMS d, times a relative step size
max(eps2, RMS(param)) * min(lr, 1 / sqrt(t)); the decay of the moments, 1 - t^beta2_decay,
follows the step count."""

from __future__ import annotations

import math

from .. import _C
from .adam import _step_count
from .optimizer import Optimizer, _check

__all__ = ["Adafactor"]


class Adafactor(Optimizer):
    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8, eps: tuple = (None, 1e-3),
                 d: float = 1.0, weight_decay: float = 0.0, *, foreach=None, maximize: bool = False) -> None:
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check(0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}")
        _check(0.0 >= beta2_decay, f"beta2_decay should be <= 0 but is: {beta2_decay}")
        _check(eps[0] is None or 0.0 <= eps[0], f"epsilon1 should be >= 0 but is: {eps[0]}")
        _check(0.0 <= eps[1], f"epsilon2 should be >= 0 but is: {eps[1]}")
        _check(1.0 <= d, f"Clipping threshold d should be >= 1 but is: {d}")
        _check(0.0 <= weight_decay, f"weight_decay should be >= 0 but is: {weight_decay}")
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize))

    def _update_param(self, p, group: dict) -> None:
        if p.is_complex():
            raise RuntimeError("Adafactor does not support complex parameters")
        super()._update_param(p, group)

    def _update(self, param, grad, state, group) -> None:
        lr = float(group["lr"])
        eps1, eps2 = group["eps"]
        if eps1 is None:
            from .. import finfo

            eps1 = finfo(param.dtype).eps
        g = -grad if group["maximize"] else grad
        if not state:
            if g.dim() > 1:  # the row and column means of the squared gradient
                state["row_var"] = _C.zeros(list(g.shape[:-1]) + [1], dtype=g.dtype)
                state["col_var"] = _C.zeros(list(g.shape[:-2]) + [1, g.shape[-1]], dtype=g.dtype)
            else:
                state["variance"] = _C.zeros_like(g)
        t = _step_count(state, param)
        weight = t ** group["beta2_decay"]  # 1 - beta2_t
        rho = min(lr, 1 / math.sqrt(t))
        rms_param = _rms(param)
        alpha = max(eps2, rms_param) * rho
        if group["weight_decay"] != 0:
            param.mul_(1 - lr * group["weight_decay"])
        squared = g * g
        if g.dim() > 1:
            row_var, col_var = state["row_var"], state["col_var"]
            row_var.lerp_(squared.mean(-1, True), weight)
            col_var.lerp_(squared.mean(-2, True), weight)
            estimate = _C.matmul(row_var, col_var) / row_var.mean(-2, True).clamp(min=eps1)
        else:
            state["variance"].lerp_(squared, weight)
            estimate = state["variance"].clone()
        update = estimate.clamp(min=eps1 * eps1).rsqrt() * g
        rms_update = _rms(update)
        denom = max(1.0, rms_update / group["d"])
        param.add_(update, alpha=-alpha / denom)


def _rms(t) -> float:
    """The root mean square of t's elements (0 for an empty tensor)."""
    from ..linalg import vector_norm

    return vector_norm(t, 2.0).item() / math.sqrt(t.numel()) if t.numel() else 0.0
