"""nn.Parameter: a Tensor that a Module registers as a parameter when assigned as an attribute.

It is a subclass of ember.Tensor sharing the given tensor's memory (and version counter) without
its history, and requiring grad by default, as torch.nn.Parameter. Ops on a Parameter return
plain Tensors (its __torch_function__ is _disabled_torch_function_impl).
"""

from __future__ import annotations

from .. import _C


class Parameter(_C.Tensor):
    # ops on a Parameter return plain Tensors (as torch.nn.Parameter, Note [__torch_function__])
    __torch_function__ = _C._disabled_torch_function_impl

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


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (a lazy module's weight before its first input),
    as torch.nn.UninitializedParameter: it holds no elements until materialize() gives it a shape,
    after which it is a plain Parameter. Like Parameter it opts out of __torch_function__, so using
    it before then computes on an empty tensor (shape [0]) instead of raising as PyTorch's override
    does."""

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device=None, dtype=None) -> None:
        kwargs = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            kwargs["device"] = device
        super().__init__(_C.zeros([0], **kwargs), requires_grad)
        self._factory = kwargs

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Give the parameter `shape` (uninitialized values) and turn it into a Parameter, in place."""
        kwargs = dict(self._factory)
        if device is not None:
            kwargs["device"] = device
        if dtype is not None:
            kwargs["dtype"] = dtype
        shape = [shape] if isinstance(shape, int) else list(shape)
        with _no_grad():
            self.data = _C.zeros(shape, **kwargs)  # reset_parameters fills it next
        del self._factory
        self.__class__ = self.cls_to_become

    def __repr__(self) -> str:
        return "<UninitializedParameter>"

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = UninitializedParameter(self.requires_grad, **self._factory)
        return memo[id(self)]


def is_lazy(param) -> bool:
    """Whether param is still an UninitializedParameter or UninitializedBuffer
    (torch.nn.parameter.is_lazy)."""
    return isinstance(param, (UninitializedParameter, UninitializedBuffer))


class Buffer(_C.Tensor):
    """A tensor that a Module registers as a buffer when assigned as an attribute, persistent
    (saved in state_dict) unless persistent=False, as torch.nn.Buffer. It shares data's memory
    and keeps data's requires_grad."""

    __torch_function__ = _C._disabled_torch_function_impl

    def __init__(self, data=None, *, persistent: bool = True) -> None:
        source = data if data is not None else _C.zeros([0])
        super().__init__(source.detach())
        if source.requires_grad:
            self.requires_grad_(True)
        self.persistent = persistent


def _no_grad():
    from ..autograd.grad_mode import no_grad

    return no_grad()


class UninitializedBuffer(Buffer):
    """A buffer whose shape is not known yet, as torch.nn.UninitializedBuffer: it holds no
    elements until materialize() gives it a shape. Assigned to a Module it registers as a buffer
    (persistent unless persistent=False). Materialized, it becomes an nn.Buffer (PyTorch's becomes
    a plain Tensor; Ember cannot change a Python subclass into its native base class in place).
    As UninitializedParameter, using it before then computes on an empty tensor."""

    cls_to_become = Buffer

    def __init__(self, requires_grad: bool = False, device=None, dtype=None, persistent: bool = True) -> None:
        kwargs = {"dtype": dtype if dtype is not None else _C.get_default_dtype()}
        if device is not None:
            kwargs["device"] = device
        super().__init__(_C.zeros([0], **kwargs).requires_grad_(requires_grad), persistent=persistent)
        self._factory = kwargs

    materialize = UninitializedParameter.materialize

    def __repr__(self) -> str:
        return "<UninitializedBuffer>"

    def __deepcopy__(self, memo):
        if id(self) not in memo:
            memo[id(self)] = UninitializedBuffer(self.requires_grad, persistent=self.persistent, **self._factory)
        return memo[id(self)]
