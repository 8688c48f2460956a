"""Adam and AdamW (torch.optim.Adam / AdamW): bias-corrected first and second moments,
amsgrad, maximize, L2 or decoupled weight decay."""

from __future__ import annotations

import math

from .. import _C
from .optimizer import Optimizer, _check, _scalar_dtype

__all__ = ["Adam", "AdamW"]


def _check_adam_args(lr, betas, eps, weight_decay) -> None:
    _check(lr >= 0.0, f"Invalid learning rate: {lr}")
    _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
    _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
    _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
    _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")


def _step_count(state: dict, param) -> float:
    """Advance and return the step counter, kept as a 0-dim tensor as PyTorch keeps it."""
    if "step" not in state:
        state["step"] = _C.zeros([], dtype=_scalar_dtype())
    state["step"].add_(1)
    return float(state["step"].item())


def _moments(state: dict, param, grad, beta1: float, beta2: float, amsgrad: bool = False):
    """Update (and create on first use) exp_avg and exp_avg_sq; return them."""
    if "exp_avg" not in state:
        state["exp_avg"] = _C.zeros_like(param)
        state["exp_avg_sq"] = _C.zeros_like(param)
        if amsgrad:
            state["max_exp_avg_sq"] = _C.zeros_like(param)
    exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
    exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
    exp_avg_sq.mul_(beta2).add_(grad * grad, alpha=1 - beta2)
    return exp_avg, exp_avg_sq


class Adam(Optimizer):
    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0,
                 amsgrad: bool = False, *, foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused=None, decoupled_weight_decay: bool = False) -> None:
        _check_adam_args(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                                      amsgrad=amsgrad, maximize=maximize, foreach=foreach, capturable=capturable,
                                      differentiable=differentiable, fused=fused,
                                      decoupled_weight_decay=decoupled_weight_decay))

    def _sparse_grad_error(self) -> str:
        return f"{type(self).__name__} does not support sparse gradients, please consider SparseAdam instead"

    def _update(self, param, grad, state, group) -> None:
        lr, (beta1, beta2), wd = group["lr"], group["betas"], group["weight_decay"]
        g = -grad if group["maximize"] else grad
        step = _step_count(state, param)
        if wd != 0:
            if group["decoupled_weight_decay"]:
                param.mul_(1 - lr * wd)
            else:
                g = g + wd * param
        exp_avg, exp_avg_sq = _moments(state, param, g, beta1, beta2, group["amsgrad"])
        bias_correction1 = 1 - beta1 ** step
        bias_correction2_sqrt = math.sqrt(1 - beta2 ** step)
        if group["amsgrad"]:
            state["max_exp_avg_sq"].copy_(_C.maximum(state["max_exp_avg_sq"], exp_avg_sq))
            second = state["max_exp_avg_sq"]
        else:
            second = exp_avg_sq
        denom = second.sqrt() / bias_correction2_sqrt + group["eps"]
        param.add_(exp_avg / denom, alpha=-lr / bias_correction1)


    def _multi_update(self, params, group) -> None:
        """Note [multi-tensor step]: every parameter of the group in one native call."""
        for p in params:
            state = self.state[p]
            if "step" not in state:
                state["step"] = _C.zeros([], dtype=_scalar_dtype())
            if "exp_avg" not in state:
                state["exp_avg"], state["exp_avg_sq"] = _C.zeros_like(p), _C.zeros_like(p)
            if group["amsgrad"] and "max_exp_avg_sq" not in state:
                state["max_exp_avg_sq"] = _C.zeros_like(p)
        states = [self.state[p] for p in params]
        beta1, beta2 = group["betas"]
        _C._fused_adam_(params, [p.grad for p in params], [s["exp_avg"] for s in states],
                        [s["exp_avg_sq"] for s in states],
                        [s["max_exp_avg_sq"] for s in states] if group["amsgrad"] else [],
                        [s["step"] for s in states], lr=group["lr"], beta1=beta1, beta2=beta2,
                        weight_decay=group["weight_decay"], eps=group["eps"], amsgrad=group["amsgrad"],
                        maximize=group["maximize"], decoupled_weight_decay=group["decoupled_weight_decay"])


class AdamW(Adam):
    """Adam with decoupled weight decay (the parameter shrinks by lr * weight_decay each step)."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
                 amsgrad: bool = False, *, maximize: bool = False, foreach=None, capturable: bool = False,
                 differentiable: bool = False, fused=None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)
