"""SparseAdam (torch.optim.SparseAdam): Adam for sparse gradients (nn.Embedding(sparse=True)),
updating the moments and the parameter only at the gradient's rows."""

from __future__ import annotations

import math

from .. import _C
from ..sparse import SparseTensor, _dense_add_
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    _takes_sparse_grads = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        if not 0.0 < lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, maximize=maximize))
        complex_params = [[i, j] for i, group in enumerate(self.param_groups)
                          for j, p in enumerate(group["params"]) if p.is_complex()]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             f"parameters")

    def _multi_tensor(self, group: dict) -> bool:
        return False

    def _update(self, param, grad, state, group) -> None:
        if not isinstance(grad, SparseTensor):
            raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        beta1, beta2 = group["betas"]
        grad = (-grad if group["maximize"] else grad).coalesce()  # one update per row
        if not state:
            state["step"] = 0
            state["exp_avg"] = _C.zeros_like(param)
            state["exp_avg_sq"] = _C.zeros_like(param)
        state["step"] += 1
        step = state["step"]
        values = grad._values()
        # the moments move toward the gradient only at its rows: m += (1 - beta1) * (g - m) there
        old_avg = state["exp_avg"].sparse_mask(grad)._values()
        avg_step = (values - old_avg) * (1 - beta1)
        _dense_add_(state["exp_avg"], grad._with_values(avg_step))
        old_sq = state["exp_avg_sq"].sparse_mask(grad)._values()
        sq_step = (values * values - old_sq) * (1 - beta2)
        _dense_add_(state["exp_avg_sq"], grad._with_values(sq_step))
        numer = avg_step + old_avg
        denom = (sq_step + old_sq).sqrt() + group["eps"]
        step_size = float(group["lr"]) * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
        _dense_add_(param, grad._with_values(numer / denom), alpha=-step_size)
