"""Linear and Identity (torch.nn.Linear / Identity)."""

from __future__ import annotations

import math

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear", "LazyLinear"]


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


class NonDynamicallyQuantizableLinear(Linear):
    """MultiheadAttention's output projection in PyTorch, here so repr, state-dict keys and
    pickled class names (nn.modules.linear.NonDynamicallyQuantizableLinear) match."""


class Bilinear(Module):
    """y = x1^T A x2 + b with A of shape (out_features, in1_features, in2_features); weight and
    bias start uniform in +-1/sqrt(in1_features), as PyTorch's."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        kwargs = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            kwargs["device"] = device
        self.weight = Parameter(_C.zeros([out_features, in1_features, in2_features], **kwargs))
        if bias:
            self.bias = Parameter(_C.zeros([out_features], **kwargs))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] > 0 else 0.0
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LazyLinear(Linear):
    """A Linear whose in_features is taken from the first input it sees; until then its weight
    is an empty [out_features, 0] placeholder (has_uninitialized_params() is True). After the
    first forward it is a plain Linear, as PyTorch's lazy modules become their base class."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None) -> None:
        super().__init__(0, out_features, bias, device=device, dtype=dtype)
        self._lazy_factory = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            self._lazy_factory["device"] = device

    def has_uninitialized_params(self) -> bool:
        return self.in_features == 0

    def reset_parameters(self) -> None:
        if self.in_features != 0:
            super().reset_parameters()

    def initialize_parameters(self, input) -> None:
        if input.dim() == 0:
            raise RuntimeError("LazyLinear: the input must have at least one dimension (its last is in_features)")
        self.in_features = input.shape[-1]
        with no_grad():
            self.weight = Parameter(_C.zeros([self.out_features, self.in_features], **self._lazy_factory))
            if self.bias is not None:
                self.bias = Parameter(_C.zeros([self.out_features], **self._lazy_factory))
        self.reset_parameters()
        del self._lazy_factory
        self.__class__ = self.cls_to_become

    def forward(self, input):
        self.initialize_parameters(input)
        return Linear.forward(self, input)  # the instance is a Linear now, so not super()

