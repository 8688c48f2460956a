"""torch.autograd.Variable: the pre-0.4 wrapper, kept by PyTorch for old scripts. Calling it gives
a new tensor sharing data's memory, detached from data's history, a leaf that requires grad
when asked; every tensor is an instance of it."""

from __future__ import annotations

from .. import _C


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, _C.Tensor)


class Variable(metaclass=_VariableMeta):
    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if data is None:
            return _C.zeros([0])
        if not isinstance(data, _C.Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        return out.requires_grad_() if requires_grad else out
