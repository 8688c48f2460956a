"""Linear and Identity (torch.nn.Linear / Identity)."""

from __future__ import annotations

import math

from ... import _C
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear"]


class Identity(Module):
    """Returns its input; takes (and ignores) any arguments, as PyTorch's does."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """y = x W^T + b, with W of shape (out_features, in_features). Both start uniform in
    (-1/sqrt(in_features), 1/sqrt(in_features)): PyTorch's kaiming_uniform_(a=sqrt(5)) default."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        kwargs = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            kwargs["device"] = device
        self.weight = Parameter(_C.zeros([out_features, in_features], **kwargs))
        if bias:
            self.bias = Parameter(_C.zeros([out_features], **kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # kaiming_uniform_ with a = sqrt(5) is uniform(-1/sqrt(in_features), 1/sqrt(in_features)).
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"
