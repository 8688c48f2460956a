"""SGD with momentum, dampening, Nesterov momentum, weight decay and maximize (torch.optim.SGD)."""

from __future__ import annotations

from .. import _C
from ..sparse import SparseTensor, _dense_add_
from .optimizer import Optimizer, _check

__all__ = ["SGD"]


class SGD(Optimizer):
    def __init__(self, params, lr: float = 1e-3, momentum: float = 0, dampening: float = 0, weight_decay: float = 0,
                 nesterov: bool = False, *, maximize: bool = False, foreach=None, differentiable: bool = False,
                 fused=None) -> None:
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(momentum >= 0.0, f"Invalid momentum value: {momentum}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        _check(not nesterov or (momentum > 0 and dampening == 0),
               "Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                                      nesterov=nesterov, maximize=maximize, foreach=foreach,
                                      differentiable=differentiable, fused=fused))

    _takes_sparse_grads = True  # PyTorch's SGD takes them too, except with weight_decay

    def _update(self, param, grad, state, group) -> None:
        g = -grad if group["maximize"] else grad
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * param  # a sparse g raises, as PyTorch's add(sparse, dense)
        momentum = group["momentum"]
        if momentum != 0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = g.clone()
            else:
                buf.mul_(momentum).add_(g, alpha=1 - group["dampening"])
            if isinstance(buf, SparseTensor):  # merges the rows, or the buffer would grow every step
                buf = state["momentum_buffer"] = buf.coalesce()
            g = g + momentum * buf if group["nesterov"] else buf
        if isinstance(g, SparseTensor):
            _dense_add_(param, g, alpha=-group["lr"])
        else:
            param.add_(g, alpha=-group["lr"])

    def _multi_update(self, params, group) -> None:
        """Note [multi-tensor step]: the parameters with a momentum buffer already and those on their
        first step (whose buffer starts as the gradient) in at most two native calls."""
        options = dict(weight_decay=group["weight_decay"], momentum=group["momentum"], lr=group["lr"],
                       dampening=group["dampening"], nesterov=group["nesterov"], maximize=group["maximize"])
        if group["momentum"] == 0:
            _C._fused_sgd_(params, [p.grad for p in params], [], is_first_step=False, **options)
            return
        started = [p for p in params if self.state[p].get("momentum_buffer") is not None]
        fresh = [p for p in params if self.state[p].get("momentum_buffer") is None]
        for p in fresh:
            self.state[p]["momentum_buffer"] = _C.empty_like(p)
        for chosen, first in ((started, False), (fresh, True)):
            if chosen:
                _C._fused_sgd_(chosen, [p.grad for p in chosen], [self.state[p]["momentum_buffer"] for p in chosen],
                               is_first_step=first, **options)
