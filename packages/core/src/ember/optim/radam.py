"""RAdam (torch.optim.RAdam): Adam whose adaptive step is switched on, and rectified, once the
variance of the second moment is tractable (rho_t > 5)."""

from __future__ import annotations

import math

from .adam import _check_adam_args, _moments, _step_count
from .optimizer import Optimizer

__all__ = ["RAdam"]


class RAdam(Optimizer):
    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                                      foreach=foreach, capturable=capturable, differentiable=differentiable))

    def _update(self, param, grad, state, group) -> None:
        lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
        g = -grad if group["maximize"] else grad
        step = _step_count(state, param)
        if wd != 0:
            if group["decoupled_weight_decay"]:
                param.mul_(1 - lr * wd)
            else:
                g = g + wd * param
        exp_avg, exp_avg_sq = _moments(state, param, g, beta1, beta2)
        bias_correction2 = 1 - beta2 ** step
        corrected = exp_avg / (1 - beta1 ** step)
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * beta2 ** step / bias_correction2
        if rho_t > 5.0:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            adaptive = math.sqrt(bias_correction2) / (exp_avg_sq.sqrt() + group["eps"])
            param.add_(corrected * adaptive, alpha=-lr * rect)
        else:
            param.add_(corrected, alpha=-lr)
