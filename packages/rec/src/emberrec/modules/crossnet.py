"""Cross networks of Deep & Cross Network v1/v2 (TorchRec's ``torchrec.modules.crossnet``).

Each layer mixes the input ``x_0`` (B, N) into the running ``x_l`` (B, N):

    CrossNet               x_{l+1} = x_0 * (W_l x_l + b_l) + x_l             W_l: N x N
    LowRankCrossNet        x_{l+1} = x_0 * (U_l (V_l x_l) + b_l) + x_l       U_l: N x r, V_l: r x N
    VectorCrossNet         x_{l+1} = x_0 * (w_l . x_l) + b_l + x_l           w_l: N
    LowRankMixtureCrossNet x_{l+1} = sum_k g_k(x_l) E_k(x_l) + x_l,
                           E_k(x) = x_0 * (U_k act(C_k act(V_k x)) + b_l)     gates g = softmax

Output and input have the same shape (B, N).
"""

from __future__ import annotations

from collections.abc import Callable

import ember
from ember import nn


def _check(name: str, value: int, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")


def _xavier(*shape: int) -> nn.Parameter:
    return nn.Parameter(nn.init.xavier_normal_(ember.empty(*shape)))


def _zeros(*shape: int) -> nn.Parameter:
    return nn.Parameter(ember.zeros(*shape))


class CrossNet(nn.Module):
    """Full-rank cross layers (DCN v2): ``x_{l+1} = x_0 * (W_l x_l + b_l) + x_l``."""

    def __init__(self, in_features: int, num_layers: int) -> None:
        super().__init__()
        _check("in_features", in_features)
        _check("num_layers", num_layers)
        self._num_layers = num_layers
        self.kernels = nn.ParameterList([_xavier(in_features, in_features) for _ in range(num_layers)])
        self.bias = nn.ParameterList([_zeros(in_features, 1) for _ in range(num_layers)])

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        x_0 = input.unsqueeze(2)  # (B, N, 1)
        x_l = x_0
        for layer in range(self._num_layers):
            x_l = x_0 * (ember.matmul(self.kernels[layer], x_l) + self.bias[layer]) + x_l
        return x_l.squeeze(2)


class LowRankCrossNet(nn.Module):
    """Cross layers with ``W_l`` factored as ``U_l V_l`` of rank ``low_rank`` (DCN v2, DCN-M)."""

    def __init__(self, in_features: int, num_layers: int, low_rank: int = 1) -> None:
        super().__init__()
        _check("in_features", in_features)
        _check("num_layers", num_layers)
        _check("low_rank", low_rank)
        self._num_layers = num_layers
        self._low_rank = low_rank
        self.W_kernels = nn.ParameterList([_xavier(in_features, low_rank) for _ in range(num_layers)])
        self.V_kernels = nn.ParameterList([_xavier(low_rank, in_features) for _ in range(num_layers)])
        self.bias = nn.ParameterList([_zeros(in_features) for _ in range(num_layers)])

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        x_0 = input
        x_l = x_0
        for layer in range(self._num_layers):
            x_l_v = nn.functional.linear(x_l, self.V_kernels[layer])  # (B, r)
            x_l_w = nn.functional.linear(x_l_v, self.W_kernels[layer])  # (B, N)
            x_l = x_0 * (x_l_w + self.bias[layer]) + x_l
        return x_l


class VectorCrossNet(nn.Module):
    """Cross layers of DCN v1: a weight vector per layer, ``x_0 * (w_l . x_l) + b_l + x_l``."""

    def __init__(self, in_features: int, num_layers: int) -> None:
        super().__init__()
        _check("in_features", in_features)
        _check("num_layers", num_layers)
        self._num_layers = num_layers
        self.kernels = nn.ParameterList([_xavier(in_features, 1) for _ in range(num_layers)])
        self.bias = nn.ParameterList([_zeros(in_features, 1) for _ in range(num_layers)])

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        x_0 = input.unsqueeze(2)  # (B, N, 1)
        x_l = x_0
        for layer in range(self._num_layers):
            xl_w = ember.tensordot(x_l, self.kernels[layer], dims=([1], [0]))  # (B, 1, 1)
            x_l = ember.matmul(x_0, xl_w) + self.bias[layer] + x_l
        return x_l.squeeze(2)


class LowRankMixtureCrossNet(nn.Module):
    """A gated mixture of ``num_experts`` low-rank cross experts per layer (DCN-M)."""

    def __init__(
        self,
        in_features: int,
        num_layers: int,
        num_experts: int = 1,
        low_rank: int = 1,
        activation: nn.Module | Callable[[ember.Tensor], ember.Tensor] = ember.relu,
    ) -> None:
        super().__init__()
        _check("in_features", in_features)
        _check("num_layers", num_layers)
        _check("num_experts", num_experts)
        _check("low_rank", low_rank)
        self._num_layers = num_layers
        self._num_experts = num_experts
        self._low_rank = low_rank
        self._in_features = in_features
        K, N, r = num_experts, in_features, low_rank
        self.U_kernels = nn.ParameterList([_xavier(K, N, r) for _ in range(num_layers)])
        self.V_kernels = nn.ParameterList([_xavier(K, r, N) for _ in range(num_layers)])
        self.C_kernels = nn.ParameterList([_xavier(K, r, r) for _ in range(num_layers)])
        self.bias = nn.ParameterList([_zeros(N, 1) for _ in range(num_layers)])
        self.gates = nn.ModuleList([nn.Linear(N, 1, bias=False) for _ in range(K)]) if K > 1 else None
        self._activation = activation

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        x_0 = input.unsqueeze(2)  # (B, N, 1)
        x_l = x_0
        for layer in range(self._num_layers):
            experts = []
            for k in range(self._num_experts):
                expert = ember.matmul(self.V_kernels[layer][k], x_l)  # (B, r, 1)
                expert = ember.matmul(self.C_kernels[layer][k], self._activation(expert))  # (B, r, 1)
                expert = ember.matmul(self.U_kernels[layer][k], self._activation(expert))  # (B, N, 1)
                experts.append((x_0 * (expert + self.bias[layer])).squeeze(2))
            stacked = ember.stack(experts, 2)  # (B, N, K)
            if self.gates is not None:
                gating = ember.stack([gate(x_l.squeeze(2)) for gate in self.gates], 1)  # (B, K, 1)
                x_l = ember.matmul(stacked, ember.softmax(gating, 1)) + x_l
            else:
                x_l = stacked + x_l
        return x_l.squeeze(2)
