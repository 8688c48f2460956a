"""Adagrad (torch.optim.Adagrad): per-element learning rates from the sum of squared gradients."""

from __future__ import annotations

from .. import _C
from ..sparse import SparseTensor, _dense_add_
from .adam import _step_count
from .optimizer import Optimizer, _check, _scalar_dtype

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    _takes_sparse_grads = True  # as PyTorch's, except with weight_decay

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach=None, *, maximize: bool = False,
                 differentiable: bool = False, fused=None) -> None:
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(lr_decay >= 0.0, f"Invalid lr_decay value: {lr_decay}")
        _check(weight_decay >= 0.0, f"Invalid weight_decay value: {weight_decay}")
        _check(initial_accumulator_value >= 0.0, f"Invalid initial_accumulator_value value: {initial_accumulator_value}")
        _check(eps >= 0.0, f"Invalid epsilon value: {eps}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))
        # PyTorch creates the accumulators eagerly, so a fresh optimizer's state_dict already holds them.
        for group in self.param_groups:
            for p in group["params"]:
                init = group["initial_accumulator_value"]
                self.state[p]["step"] = _C.zeros([], dtype=_scalar_dtype())
                self.state[p]["sum"] = _C.full_like(p, complex(init, init) if p.is_complex() else init)

    def _update(self, param, grad, state, group) -> None:
        g = -grad if group["maximize"] else grad
        if "sum" not in state:
            # A parameter from a group added after construction (PyTorch would raise a KeyError here).
            state["sum"] = _C.full_like(param, group["initial_accumulator_value"])
        step = _step_count(state, param)
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        if isinstance(g, SparseTensor):
            self._sparse_update(param, g.coalesce(), state["sum"], clr, group)
            return
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * param
        state["sum"].add_(g * g)
        param.add_(g / (state["sum"].sqrt() + group["eps"]), alpha=-clr)

    @staticmethod
    def _sparse_update(param, g: SparseTensor, state_sum, clr: float, group) -> None:
        """PyTorch's sparse Adagrad: only the gradient's rows of the sum and the parameter change."""
        if group["weight_decay"] != 0:
            raise RuntimeError("weight_decay option is not compatible with sparse gradients")
        values = g._values()
        _dense_add_(state_sum, g._with_values(values * values))
        std = state_sum.sparse_mask(g)._values().sqrt() + group["eps"]
        _dense_add_(param, g._with_values(values / std), alpha=-clr)

    def _multi_update(self, params, group) -> None:
        """Note [multi-tensor step]: every parameter of the group in one native call."""
        for p in params:
            state = self.state[p]
            if "sum" not in state:
                state["sum"] = _C.full_like(p, group["initial_accumulator_value"])
            if "step" not in state:
                state["step"] = _C.zeros([], dtype=_scalar_dtype())
        states = [self.state[p] for p in params]
        _C._fused_adagrad_(params, [p.grad for p in params], [s["sum"] for s in states], [s["step"] for s in states],
                           lr=group["lr"], lr_decay=group["lr_decay"], weight_decay=group["weight_decay"],
                           eps=group["eps"], maximize=group["maximize"])
