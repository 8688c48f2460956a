"""Adadelta (torch.optim.Adadelta): steps scaled by the ratio of running RMS of updates and gradients."""

from __future__ import annotations

from .. import _C
from .adam import _step_count
from .optimizer import Optimizer, _check

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach=None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(0.0 <= rho <= 1.0, f"Invalid rho value: {rho}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      capturable=capturable, maximize=maximize, differentiable=differentiable))

    def _update(self, param, grad, state, group) -> None:
        rho, eps = group["rho"], group["eps"]
        g = -grad if group["maximize"] else grad
        _step_count(state, param)
        if "square_avg" not in state:
            state["square_avg"] = _C.zeros_like(param)
            state["acc_delta"] = _C.zeros_like(param)
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * param
        square_avg = state["square_avg"].mul_(rho).add_(g * g, alpha=1 - rho)
        delta = (state["acc_delta"] + eps).sqrt() / (square_avg + eps).sqrt() * g
        state["acc_delta"].mul_(rho).add_(delta * delta, alpha=1 - rho)
        param.add_(delta, alpha=-group["lr"])
