"""Activation modules (torch.nn's names, arguments and reprs), each calling nn.functional."""

from __future__ import annotations

from ... import _C
from ...autograd.grad_mode import no_grad
from .. import functional as F
from ..parameter import Parameter
from .module import Module

__all__ = ["ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh",
           "Softplus", "Hardtanh", "Hardswish", "Hardsigmoid", "LogSigmoid", "Softsign", "Tanhshrink", "Threshold",
           "Softmax", "LogSoftmax", "Softmin", "Softmax2d", "GLU", "Hardshrink", "Softshrink", "PReLU", "RReLU"]


class _Inplace(Module):
    """An activation with only an `inplace` flag; repr shows it when set, as PyTorch's does."""

    _fn = None

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_Inplace):
    _fn = staticmethod(F.relu)


class SELU(_Inplace):
    _fn = staticmethod(F.selu)


class SiLU(_Inplace):
    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    _fn = staticmethod(F.mish)


class Hardswish(_Inplace):
    _fn = staticmethod(F.hardswish)


class Hardsigmoid(_Inplace):
    _fn = staticmethod(F.hardsigmoid)


class _Stateless(Module):
    _fn = None

    def forward(self, input):
        return type(self)._fn(input)


class Sigmoid(_Stateless):
    _fn = staticmethod(F.sigmoid)


class Tanh(_Stateless):
    _fn = staticmethod(F.tanh)


class LogSigmoid(_Stateless):
    _fn = staticmethod(F.logsigmoid)


class Softsign(_Stateless):
    _fn = staticmethod(F.softsign)


class Tanhshrink(_Stateless):
    _fn = staticmethod(F.tanhshrink)


class Hardtanh(Module):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        if max_val <= min_val:
            raise ValueError(f"max_val ({max_val}) must be greater than min_val ({min_val})")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + (", inplace=True" if self.inplace else "")


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class LeakyReLU(Module):
    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    _fn = staticmethod(F.elu)

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return type(self)._fn(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class CELU(ELU):
    _fn = staticmethod(F.celu)


class GELU(Module):
    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softplus(Module):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Threshold(Module):
    def __init__(self, threshold: float, value: float, inplace: bool = False) -> None:
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class Softmax(Module):
    _fn = staticmethod(F.softmax)

    def __init__(self, dim: int | None = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return type(self)._fn(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    _fn = staticmethod(F.log_softmax)


class Softmin(Softmax):
    _fn = staticmethod(F.softmin)


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of [N, C, H, W] or [C, H, W] inputs."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead")
        return F.softmax(input, -3)


class GLU(Module):
    def __init__(self, dim: int = -1) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class _Shrink(Module):
    _fn = None

    def __init__(self, lambd: float = 0.5) -> None:
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return type(self)._fn(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Hardshrink(_Shrink):
    _fn = staticmethod(F.hardshrink)


class Softshrink(_Shrink):
    _fn = staticmethod(F.softshrink)


class PReLU(Module):
    """Leaky ReLU with a learned slope: one shared (num_parameters=1) or one per channel."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        kwargs = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            kwargs["device"] = device
        self.weight = Parameter(_C.full([num_parameters], init, **kwargs))

    def reset_parameters(self) -> None:
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")
