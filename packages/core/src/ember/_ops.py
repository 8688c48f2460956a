"""``ember.ops``: every registered op by name, as ``torch.ops`` — ``ember.ops.<ns>.<op>(...)``."""

from __future__ import annotations

import os
from typing import Any

from . import _C

# ember.library.register_autocast's rules: op name -> {device type: dtype}. OpOverload.__call__
# applies them, where PyTorch's dispatcher runs the op's Autocast<device> kernel.
_AUTOCAST_RULES: dict[str, dict[str, Any]] = {}


def _autocast_cast(value: Any, device_type: str, dtype: Any) -> Any:
    """`value` with its floating tensors on `device_type` (float64 aside) cast to `dtype`, inside
    lists, tuples and dict values too (PyTorch's custom-op autocast cast)."""
    if isinstance(value, _C.Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype != _C.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (list, tuple)):
        return type(value)(_autocast_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _autocast_cast(v, device_type, dtype) for k, v in value.items()}
    return value


# ember.library.register_vmap's rules: op name -> rule(op, args, kwargs), which calls op itself
# unless an argument is batched by vmap, and then answers with the registered batching rule.
_VMAP_RULES: dict[str, Any] = {}


def _call_with_autocast(op: Any, rules: dict, args: tuple, kwargs: dict) -> Any:
    """Inside an autocast region of a device type the op has a rule for: its floating inputs cast
    to the rule's dtype, and the op run with autocast off (its inner ops are not cast again)."""
    from .amp.autocast_mode import autocast, is_autocast_enabled

    for device_type, dtype in rules.items():
        if is_autocast_enabled(device_type):
            with autocast(device_type, enabled=False):
                return op(*_autocast_cast(args, device_type, dtype), **_autocast_cast(kwargs, device_type, dtype))
    return op(*args, **kwargs)


class OpOverload:
    """One registered op, as ``torch.ops.<ns>.<op>``: calling it runs the op through the registry
    (autograd, then the kernel of the inputs' device). Ember's ops have no overloads, so an op is
    its own packet (``overloadpacket``) and its own ``default``; there is one object per op, so
    ``func is ember.ops.aten.mm`` holds inside a ``__torch_dispatch__`` handler. ``name``,
    ``schema``, ``defined_in`` and ``has_kernel(key)`` describe the registered op."""

    __slots__ = ("_op", "__name__", "_opname", "namespace", "__weakref__")

    def __init__(self, op: _C.Operator) -> None:
        self._op = op
        self.namespace, self._opname = op.name.split("::", 1)
        self.__name__ = self._opname

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _AUTOCAST_RULES:  # autocast first, then vmap, as PyTorch's dispatch keys order them
            rules = _AUTOCAST_RULES.get(self._op.name)
            if rules:
                return _call_with_autocast(self._batched_call, rules, args, kwargs)
        return self._batched_call(*args, **kwargs)

    def _batched_call(self, *args: Any, **kwargs: Any) -> Any:
        if _VMAP_RULES:
            rule = _VMAP_RULES.get(self._op.name)
            if rule is not None:
                return rule(self._op, args, kwargs)
        return self._op(*args, **kwargs)

    @property
    def name(self) -> str:
        return self._op.name

    @property
    def schema(self) -> str:
        return self._op.schema

    _schema = schema

    @property
    def defined_in(self) -> str:
        return self._op.defined_in

    def has_kernel(self, key: str) -> bool:
        return self._op.has_kernel(key)

    @property
    def overloadpacket(self) -> OpOverload:
        return self

    @property
    def default(self) -> OpOverload:
        return self

    def overloads(self) -> list[str]:
        return ["default"]

    def __str__(self) -> str:
        return f"{self.namespace}.{self._opname}"

    def __repr__(self) -> str:
        return repr(self._op)

    def __reduce__(self) -> tuple:
        return _find, (self._op.name,)


_found: dict[str, OpOverload] = {}


def _find(qualified_name: str) -> OpOverload | None:
    """The op registered as ``ns::name`` (one object per op), or None."""
    op = _found.get(qualified_name)
    if op is None:
        cxx = _C._find_op(qualified_name)
        if cxx is None:
            return None
        op = _found.setdefault(qualified_name, OpOverload(cxx))
    return op


class _OpNamespace:
    """Ops of one namespace; attribute access looks them up in the core's registry."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, op: str) -> OpOverload:
        if op.startswith("__"):
            raise AttributeError(op)
        found = _find(f"{self._name}::{op}")
        if found is None:
            raise AttributeError(
                f"'ember.ops.{self._name}' has no op '{op}' (is the library that defines it "
                "loaded? see ember.ops.load_library)"
            )
        return found

    def __dir__(self) -> list[str]:
        prefix = self._name + "::"
        return [n[len(prefix):] for n in _C._op_names() if n.startswith(prefix)]

    def __repr__(self) -> str:
        return f"<ember.ops namespace '{self._name}'>"


class _Ops:
    """The root of ``ember.ops``."""

    def __getattr__(self, ns: str) -> _OpNamespace:
        if ns.startswith("__"):
            raise AttributeError(ns)
        return _OpNamespace(ns)

    def __dir__(self) -> list[str]:
        return [*_C._op_namespaces(), "load_library"]

    @staticmethod
    def load_library(path: str | os.PathLike[str]) -> None:
        """Loads a shared library of ops built against this core (``torch.ops.load_library``).

        The core version the library was built for is read from the file before any of its code
        runs; a library built for another core minor raises ImportError naming both versions.
        """
        _C._load_library(os.fspath(os.path.abspath(path)))

    @staticmethod
    def extension_built_for(path: str | os.PathLike[str]) -> str:
        """The ember version a compiled extension was built against (read, never executed)."""
        return _C._extension_built_for(os.fspath(path))


ops = _Ops()
