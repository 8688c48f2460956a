"""Muon (torch.optim.Muon; Keller Jordan's "Muon: An optimizer for hidden layers in neural
networks"): for 2-D parameters only. The step is the momentum (an exponential average of the
gradients, or its Nesterov form) orthogonalized by a few quintic Newton-Schulz iterations in
bfloat16, which push its singular values towards 1 (into about [0.5, 1.5], not exactly to 1),
scaled by a shape-dependent learning rate; weight decay is decoupled, as in AdamW."""

from __future__ import annotations

import math

from .. import _C
from .optimizer import Optimizer, _check

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)
DEFAULT_NS_STEPS = 5
_ADJUST_LR_FNS = ("original", "match_rms_adamw")


def _newton_schulz(update, ns_coefficients: tuple, ns_steps: int, eps: float):
    """X <- a X + (b G + c G^2) X with G = X X^T, from X = update / ||update|| in bfloat16, on
    the wide orientation of the matrix (so G is the smaller Gram matrix)."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if update.dim() != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    tall = update.shape[0] > update.shape[1]
    x = update.bfloat16()
    if tall:
        x = x.T
    x = x / x.norm().clamp(min=eps)
    for _ in range(ns_steps):
        gram = x @ x.T
        polynomial = _C.addmm(gram, gram, gram, beta=b, alpha=c)
        x = _C.addmm(x, polynomial, x, beta=a)
    return x.T if tall else x


def _adjusted_lr(lr: float, adjust_lr_fn: str | None, shape) -> float:
    """Keller Jordan's sqrt(max(1, rows / cols)) ("original", the default), or Moonshot's
    0.2 sqrt(max(rows, cols)), which matches AdamW's update RMS ("match_rms_adamw")."""
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1, rows / cols))
    return lr * 0.2 * math.sqrt(max(rows, cols))


class Muon(Optimizer):
    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple = DEFAULT_NS_COEFFICIENTS, eps: float = EPS,
                 ns_steps: int = DEFAULT_NS_STEPS, adjust_lr_fn: str | None = None) -> None:
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check(0.0 <= lr, f"Learning rate should be >= 0 but is: {lr}")
        _check(0.0 <= momentum, f"momentum should be >= 0 but is: {momentum}")
        _check(0.0 <= weight_decay, f"weight decay should be >= 0 but is: {weight_decay}")
        _check(adjust_lr_fn is None or adjust_lr_fn in _ADJUST_LR_FNS,
               f"Adjust learning rate function {adjust_lr_fn} is not supported")
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                                      ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                                      adjust_lr_fn=adjust_lr_fn))
        for group in self.param_groups:
            for p in group["params"]:
                if p.dim() != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{p.size()}")

    def _update_param(self, p, group: dict) -> None:
        if p.is_complex():
            raise RuntimeError("Muon does not support complex parameters")
        super()._update_param(p, group)

    def _update(self, param, grad, state, group) -> None:
        if grad.dim() != 2:
            raise ValueError("Param gradient must be a 2D matrix")
        lr, momentum = float(group["lr"]), group["momentum"]
        if "momentum_buffer" not in state:
            state["momentum_buffer"] = _C.zeros_like(grad)
        buf = state["momentum_buffer"]
        buf.lerp_(grad, 1 - momentum)
        update = grad.lerp(buf, momentum) if group["nesterov"] else buf
        update = _newton_schulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
        param.mul_(1 - lr * group["weight_decay"])
        param.add_(update, alpha=-_adjusted_lr(lr, group["adjust_lr_fn"], param.shape))
