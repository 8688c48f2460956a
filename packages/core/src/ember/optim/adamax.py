"""Adamax (torch.optim.Adamax): Adam with an infinity-norm second moment."""

from __future__ import annotations

from .. import _C
from .adam import _check_adam_args, _step_count
from .optimizer import Optimizer

__all__ = ["Adamax"]


class Adamax(Optimizer):
    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 foreach=None, *, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _update(self, param, grad, state, group) -> None:
        beta1, beta2 = group["betas"]
        g = -grad if group["maximize"] else grad
        step = _step_count(state, param)
        if "exp_avg" not in state:
            state["exp_avg"] = _C.zeros_like(param)
            state["exp_inf"] = _C.zeros_like(param)
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * param
        exp_avg = state["exp_avg"].mul_(beta1).add_(g, alpha=1 - beta1)
        exp_inf = state["exp_inf"]
        exp_inf.copy_(_C.maximum(exp_inf * beta2, g.abs() + group["eps"]))
        param.add_(exp_avg / exp_inf, alpha=-group["lr"] / (1 - beta1 ** step))
