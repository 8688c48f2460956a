"""nn.Parameter: a Tensor that a Module registers as a parameter when assigned as an attribute.

It is a subclass of ember.Tensor sharing the given tensor's memory (and version counter) without
its history, and requiring grad by default, as torch.nn.Parameter. Ops on a Parameter return
plain Tensors.
"""

from __future__ import annotations

from .. import _C


class Parameter(_C.Tensor):
    def __init__(self, data=None, requires_grad: bool = True) -> None:
        super().__init__(data if data is not None else _C.zeros([0]))
        if requires_grad:
            self.requires_grad_(True)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = Parameter(self.detach().clone(), self.requires_grad)
        return memo[id(self)]

    def __reduce_ex__(self, protocol):
        return (Parameter, (self.detach(), self.requires_grad))
