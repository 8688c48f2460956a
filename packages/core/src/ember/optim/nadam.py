"""NAdam (torch.optim.NAdam): Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

from .. import _C
from .adam import _check_adam_args, _moments, _step_count
from .optimizer import Optimizer, _check, _scalar_dtype

__all__ = ["NAdam"]


class NAdam(Optimizer):
    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        _check(momentum_decay >= 0.0, f"Invalid momentum_decay value: {momentum_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable))

    def _update(self, param, grad, state, group) -> None:
        lr, (beta1, beta2), wd, psi = group["lr"], group["betas"], group["weight_decay"], group["momentum_decay"]
        g = -grad if group["maximize"] else grad
        step = _step_count(state, param)
        if "mu_product" not in state:
            state["mu_product"] = _C.ones([], dtype=_scalar_dtype())
        if wd != 0:
            if group["decoupled_weight_decay"]:
                param.mul_(1 - lr * wd)
            else:
                g = g + wd * param
        mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * psi))
        mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
        # The running product of the mu's is a 0-dim tensor in the step counter's dtype, as in PyTorch.
        mu_product = float(state["mu_product"].mul_(mu).item())
        exp_avg, exp_avg_sq = _moments(state, param, g, beta1, beta2)
        denom = (exp_avg_sq / (1 - beta2 ** step)).sqrt() + group["eps"]
        param.add_(g / denom, alpha=-lr * (1 - mu) / (1 - mu_product))
        param.add_(exp_avg / denom, alpha=-lr * mu_next / (1 - mu_product * mu_next))
