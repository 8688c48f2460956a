"""Row-wise Adagrad (TorchRec's ``torchrec.optim.RowWiseAdagrad``): Adagrad with one accumulator
per row of a 2-D parameter (the mean of the row's squared gradients), as the fused row-wise
Adagrad of table-batched embeddings keeps it; a 1-D parameter keeps one per element."""

from __future__ import annotations

import ember
from ember.optim import Optimizer


class RowWiseAdagrad(Optimizer):
    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, *, maximize: bool = False) -> None:
        for name, value in (("learning rate", lr), ("lr_decay", lr_decay), ("weight_decay", weight_decay),
                            ("initial_accumulator_value", initial_accumulator_value), ("epsilon", eps)):
            if value < 0.0:
                raise ValueError(f"Invalid {name}: {value}")
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                                      initial_accumulator_value=initial_accumulator_value, maximize=maximize))

    def _update(self, param, grad, state, group) -> None:
        if param.dim() > 2:
            raise ValueError(f"RowWiseAdagrad takes 1-D or 2-D parameters, got shape {tuple(param.shape)}")
        g = -grad if group["maximize"] else grad
        if "sum" not in state:
            rows = param.shape[0] if param.dim() == 2 else param.numel()
            state["sum"] = ember.full((rows,), group["initial_accumulator_value"], dtype=param.dtype)
            state["step"] = ember.zeros([])
        state["step"].add_(1)
        step = float(state["step"].item())
        if group["weight_decay"] != 0:
            g = g + group["weight_decay"] * param
        squared = (g * g).mean(1) if param.dim() == 2 else g * g
        state["sum"].add_(squared)
        std = state["sum"].sqrt() + group["eps"]
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        param.add_(g / (std.unsqueeze(1) if param.dim() == 2 else std), alpha=-clr)
