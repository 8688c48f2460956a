"""Rprop (torch.optim.Rprop): resilient backpropagation. Each element keeps its own step size,
multiplied by etaplus while its gradient keeps its sign and by etaminus when the sign flips
(clamped to step_sizes); the parameter moves by the step size against the gradient's sign, and
not at all on a step where the sign flipped."""

from __future__ import annotations

from .. import _C
from .adam import _step_count
from .optimizer import Optimizer, _check

__all__ = ["Rprop"]


class Rprop(Optimizer):
    def __init__(self, params, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        if isinstance(lr, _C.Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        _check(lr >= 0.0, f"Invalid learning rate: {lr}")
        _check(0.0 < etas[0] < 1.0 < etas[1], f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def _update(self, param, grad, state, group) -> None:
        etaminus, etaplus = group["etas"]
        step_size_min, step_size_max = group["step_sizes"]
        _step_count(state, param)
        if "prev" not in state:
            state["prev"] = _C.zeros_like(param)
            # A complex parameter's step sizes are lr + lr*1j: each real component starts at lr.
            state["step_size"] = _C.full_like(param, float(group["lr"]))
        g = -grad if group["maximize"] else grad
        prev, step_size = state["prev"], state["step_size"]
        sign = (g * prev).sign()
        flipped = sign.lt(0)
        # the factor in the parameter's dtype, as PyTorch writes etaplus / etaminus / 1 into sign
        factor = sign.masked_fill(sign.gt(0), etaplus).masked_fill(flipped, etaminus).masked_fill(sign.eq(0), 1)
        step_size.mul_(factor).clamp_(step_size_min, step_size_max)
        g = g.masked_fill(flipped, 0)  # no move, and no memory of the gradient, where the sign flipped
        param.addcmul_(g.sign(), step_size, value=-1)
        prev.copy_(g)
