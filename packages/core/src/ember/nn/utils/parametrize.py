"""ember.nn.utils.parametrize (torch.nn.utils.parametrize): a module attribute computed from
stored tensors by a small module, e.g. a weight kept as direction and magnitude.

register_parametrization moves the attribute's tensor to `module.parametrizations.<name>.original`
(or original0, original1, ... when the first parametrization's right_inverse splits it) and
gives the module's class a property of that name which runs the parametrizations on every
read. The state-dict keys are PyTorch's, so checkpoints move between the two."""

from __future__ import annotations

import contextlib

from ... import _C
from ...autograd.grad_mode import no_grad
from ..modules.container import ModuleDict, ModuleList
from ..modules.module import Module
from ..parameter import Parameter

__all__ = ["register_parametrization", "remove_parametrizations", "is_parametrized", "cached",
           "ParametrizationList", "type_before_parametrizations", "transfer_parametrizations_and_params"]

_cache_depth = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Inside, each parametrized attribute is computed once and reused (useful when a weight is
    read many times per step, as in an RNN)."""
    global _cache_depth
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if _cache_depth == 0:
            _cache.clear()


def _as_stored(tensor, like):
    """A value to store as `original`: a Parameter when the attribute was one."""
    if isinstance(like, Parameter):
        return tensor if isinstance(tensor, Parameter) else Parameter(tensor.detach(), like.requires_grad)
    return tensor.detach() if tensor.requires_grad else tensor


class ParametrizationList(ModuleList):
    """The parametrizations of one attribute, applied in order, and the tensor(s) they start from."""

    def __init__(self, modules, original, unsafe: bool = False):
        super().__init__(modules)
        self.unsafe = unsafe
        first = modules[0]
        stored = original
        with no_grad():
            try:
                stored = first.right_inverse(original) if hasattr(first, "right_inverse") else original
            except NotImplementedError:
                pass  # as PyTorch: a right_inverse that cannot invert counts as the identity here
        self.is_tensor = isinstance(stored, _C.Tensor)
        if self.is_tensor:
            self.ntensors = 1
            self._store("original", stored, original)
        else:
            if not isinstance(stored, (list, tuple)) or not all(isinstance(t, _C.Tensor) for t in stored):
                raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors (list, tuple...). "
                                 f"Got {type(stored).__name__}")
            self.ntensors = len(stored)
            for i, t in enumerate(stored):
                self._store(f"original{i}", t, original)
        if not unsafe:
            self._check(original)

    def _store(self, name, value, like):
        stored = _as_stored(value, like)
        if isinstance(stored, Parameter):
            self.register_parameter(name, stored)
        else:
            self.register_buffer(name, stored)

    def _originals(self):
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def _check(self, original) -> None:
        value = self()
        if not isinstance(value, _C.Tensor):
            raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
        if value.dtype != original.dtype:
            raise ValueError("Registering a parametrization may not change the dtype of the tensor, unless "
                             f"`unsafe` flag is enabled.\nunparametrized dtype: {original.dtype}\n"
                             f"parametrized dtype: {value.dtype}")
        if tuple(value.shape) != tuple(original.shape):
            raise ValueError("Registering a parametrization may not change the shape of the tensor, unless "
                             f"`unsafe` flag is enabled.\nunparametrized shape: {tuple(original.shape)}\n"
                             f"parametrized shape: {tuple(value.shape)}")

    def forward(self):
        first, *rest = list(self)
        value = first(*self._originals())
        for p in rest:
            value = p(value)
        return value

    def right_inverse(self, value) -> None:
        """Assigning to the attribute: each parametrization's right_inverse, last to first, gives
        the new stored tensor(s), which are updated in place."""
        with no_grad():
            for p in reversed(list(self)[1:]):
                if not hasattr(p, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(p).__name__} does not implement right_inverse.")
                value = p.right_inverse(value)
            first = self[0]
            stored = first.right_inverse(value) if hasattr(first, "right_inverse") else value
            targets = self._originals()
            values = (stored,) if self.is_tensor else tuple(stored)
            if len(values) != len(targets):
                raise ValueError(f"'right_inverse' must return {len(targets)} tensors, got {len(values)}")
            for target, new in zip(targets, values, strict=True):
                if tuple(target.shape) != tuple(new.shape) or target.dtype != new.dtype:
                    raise ValueError(f"assigning to a parametrized tensor must keep the stored shape "
                                     f"{tuple(target.shape)} and dtype {target.dtype}, got {tuple(new.shape)} "
                                     f"and {new.dtype}")
                target.copy_(new)


def _property(name: str) -> property:
    def get(module):
        plist = module.parametrizations[name]
        if _cache_depth == 0:
            return plist()
        key = (id(module), name)
        if key not in _cache:
            _cache[key] = plist()
        return _cache[key]

    def set_(module, value):
        module.parametrizations[name].right_inverse(value)

    return property(get, set_)


def _give_own_class(module: Module) -> None:
    """Properties live on classes, so a parametrized module gets a subclass of its own."""
    cls = type(module)
    subclass = type(f"Parametrized{cls.__name__}", (cls,), {"__module__": cls.__module__})
    subclass._ember_unparametrized = cls
    module.__class__ = subclass


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    plists = module.__dict__.get("_modules", {}).get("parametrizations")
    if plists is None or not isinstance(plists, ModuleDict):
        return False
    return len(plists) > 0 if tensor_name is None else tensor_name in plists


def type_before_parametrizations(module: Module) -> type:
    return getattr(type(module), "_ember_unparametrized", type(module))


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Makes `module.<tensor_name>` read as parametrization(original); a second registration on
    the same name chains after the first."""
    if not isinstance(parametrization, Module):
        raise TypeError(f"parametrization must be an ember.nn.Module, got {type(parametrization).__name__}")
    if is_parametrized(module, tensor_name):
        plist = module.parametrizations[tensor_name]
        if not unsafe:
            current = getattr(module, tensor_name)
            value = parametrization(current)
            if not isinstance(value, _C.Tensor) or tuple(value.shape) != tuple(current.shape) \
                    or value.dtype != current.dtype:
                raise ValueError("Registering a parametrization may not change the shape or dtype of the tensor, "
                                 "unless `unsafe` flag is enabled.")
        plist.append(parametrization)
        plist.unsafe = plist.unsafe or unsafe
        return module
    if tensor_name in module._parameters:
        original = module._parameters.pop(tensor_name)
    elif tensor_name in module._buffers:
        original = module._buffers.pop(tensor_name)
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    try:
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
    except Exception:
        (module._parameters if isinstance(original, Parameter) else module._buffers)[tensor_name] = original
        raise
    if not is_parametrized(module):
        _give_own_class(module)
        module.parametrizations = ModuleDict()
    module.parametrizations[tensor_name] = plist
    setattr(type(module), tensor_name, _property(tensor_name))
    return module


def remove_parametrizations(module: Module, tensor_name: str, leave_parametrized: bool = True) -> Module:
    """Back to a plain attribute: the current parametrized value (leave_parametrized) or the
    stored original, which must then be a single tensor."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    if leave_parametrized:
        with no_grad():
            value = getattr(module, tensor_name)
        if plist.is_tensor and value.dtype == plist.original.dtype and tuple(value.shape) == tuple(
                plist.original.shape):
            with no_grad():
                plist.original.copy_(value)
            value = plist.original
        elif plist.is_tensor and isinstance(plist.original, Parameter):
            value = Parameter(value.detach(), plist.original.requires_grad)
        elif not plist.is_tensor:
            value = Parameter(value.detach(), plist.original0.requires_grad) \
                if isinstance(plist.original0, Parameter) else value.detach()
    else:
        if not plist.is_tensor:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is "
                             "parametrized in terms of a sequence of tensors.")
        value = plist.original
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    if isinstance(value, Parameter):
        module.register_parameter(tensor_name, value)
    else:
        module.register_buffer(tensor_name, value)
    if not is_parametrized(module):
        del module.parametrizations
        module.__class__ = type_before_parametrizations(module)
    return module


def transfer_parametrizations_and_params(from_module: Module, to_module: Module, tensor_name: str | None = None):
    """Registers from_module's parametrizations on to_module and copies their stored tensors."""
    names = [tensor_name] if tensor_name is not None else list(from_module.parametrizations.keys())
    for name in names:
        source = from_module.parametrizations[name]
        if not is_parametrized(to_module, name):
            if not hasattr(to_module, name):
                to_module.register_parameter(name, Parameter(getattr(from_module, name).detach().clone()))
            for p in source:
                register_parametrization(to_module, name, p)
        target = to_module.parametrizations[name]
        with no_grad():
            for a, b in zip(target._originals(), source._originals(), strict=True):
                a.copy_(b)
    return to_module
