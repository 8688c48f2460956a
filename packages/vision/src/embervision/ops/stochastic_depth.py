"""Stochastic depth (Huang et al., "Deep Networks with Stochastic Depth"), as torchvision.ops."""

from __future__ import annotations

import ember
from ember import nn

__all__ = ["stochastic_depth", "StochasticDepth"]


def stochastic_depth(input: ember.Tensor, p: float, mode: str, training: bool = True) -> ember.Tensor:
    """Zero a residual branch with probability `p` and scale what survives by 1 / (1 - p).

    mode="row" draws once per sample (dim 0), mode="batch" once for the whole batch. Identity when
    not training or p == 0.
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ("batch", "row"):
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input
    survival_rate = 1.0 - p
    size = [input.shape[0]] + [1] * (input.dim() - 1) if mode == "row" else [1] * input.dim()
    noise = ember.empty(size, dtype=input.dtype, device=input.device).bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise = noise / survival_rate
    return input * noise


class StochasticDepth(nn.Module):
    """Module form of stochastic_depth; active only in training mode."""

    def __init__(self, p: float, mode: str) -> None:
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        return stochastic_depth(input, self.p, self.mode, self.training)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p}, mode={self.mode})"
