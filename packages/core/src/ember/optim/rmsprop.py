"""RMSprop (torch.optim.RMSprop): gradients scaled by a running RMS, optionally centered, with momentum."""

from __future__ import annotations

from .. import _C
from .adam import _step_count
from .optimizer import Optimizer, _check, _scalar_dtype

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0,
                 momentum: float = 0, centered: bool = False, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        _check(alpha >= 0.0, f"Invalid alpha value: {alpha}")
        super().__init__(params, dict(lr=lr, momentum=momentum, alpha=alpha, eps=eps, centered=centered,
                                      weight_decay=weight_decay, capturable=capturable, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable))

    def _update(self, param, grad, state, group) -> None:
        alpha, momentum = group["alpha"], group["momentum"]
        g = -grad if group["maximize"] else grad
        _step_count(state, param)
        if "square_avg" not in state:
            state["square_avg"] = _C.zeros_like(param)
            if momentum > 0:
                state["momentum_buffer"] = _C.zeros_like(param)
            if group["centered"]:
                state["grad_avg"] = _C.zeros_like(param)
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * param
        square_avg = state["square_avg"].mul_(alpha).add_(g * g, alpha=1 - alpha)
        if group["centered"]:
            grad_avg = state["grad_avg"].mul_(alpha).add_(g, alpha=1 - alpha)
            avg = (square_avg - grad_avg * grad_avg).sqrt() + group["eps"]
        else:
            avg = square_avg.sqrt() + group["eps"]
        if momentum > 0:
            buf = state["momentum_buffer"].mul_(momentum).add_(g / avg)
            param.add_(buf, alpha=-group["lr"])
        else:
            param.add_(g / avg, alpha=-group["lr"])

    def _multi_update(self, params, group) -> None:
        """Note [multi-tensor step]: every parameter of the group in one native call."""
        momentum, centered = group["momentum"], group["centered"]
        for p in params:
            state = self.state[p]
            if "step" not in state:
                state["step"] = _C.zeros([], dtype=_scalar_dtype())
            if "square_avg" not in state:
                state["square_avg"] = _C.zeros_like(p)
                if momentum > 0:
                    state["momentum_buffer"] = _C.zeros_like(p)
                if centered:
                    state["grad_avg"] = _C.zeros_like(p)
        states = [self.state[p] for p in params]
        _C._fused_rmsprop_(params, [p.grad for p in params], [s["square_avg"] for s in states],
                           [s["grad_avg"] for s in states] if centered else [],
                           [s["momentum_buffer"] for s in states] if momentum > 0 else [],
                           [s["step"] for s in states], lr=group["lr"], alpha=group["alpha"], eps=group["eps"],
                           weight_decay=group["weight_decay"], momentum=momentum, centered=centered,
                           maximize=group["maximize"])
