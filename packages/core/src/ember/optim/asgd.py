"""ASGD (torch.optim.ASGD): averaged stochastic gradient descent (Polyak and Juditsky, 1992),
with PyTorch's step-size schedule eta_t = lr / (1 + lambd * lr * t) ** alpha and averaging that
starts after t0 steps."""

from __future__ import annotations

from .. import _C
from .optimizer import Optimizer, _check, _scalar_dtype

__all__ = ["ASGD"]


class ASGD(Optimizer):
    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach=None, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, capturable=capturable,
                                      differentiable=differentiable))

    def _update(self, param, grad, state, group) -> None:
        lr = float(group["lr"])
        lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
        if not state:
            # PyTorch's state, in its order: step, eta (the current step size), mu (the averaging
            # weight), ax (the average). step, eta and mu are 0-dim tensors of the scalar dtype.
            state["step"] = _C.zeros([], dtype=_scalar_dtype())
            state["eta"] = _C.full([], lr, dtype=_scalar_dtype())
            state["mu"] = _C.ones([], dtype=_scalar_dtype())
            state["ax"] = _C.zeros_like(param)
        g = -grad if group["maximize"] else grad
        state["step"].add_(1)
        step = float(state["step"].item())
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * param
        eta = float(state["eta"].item())
        param.mul_(1 - lambd * eta)  # the decay term
        param.add_(g, alpha=-eta)
        ax, mu = state["ax"], float(state["mu"].item())
        if mu != 1:
            ax.add_((param - ax) * mu)
        else:
            ax.copy_(param)
        state["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
        state["mu"].fill_(1 / max(1, step - t0))
