"""``ember.utils._python_dispatch``: dispatch modes, as ``torch.utils._python_dispatch``.

A :class:`TorchDispatchMode` sees every op its thread runs *below* autograd, the way PyTorch's
Python dispatch key does (Note [dispatch modes] in ``ember/dispatch_mode.h``)::

    class Log(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            print(func)                      # aten.mm, aten.add, ...
            return func(*args, **(kwargs or {}))

    with Log():
        loss = (x @ w).sum()
        loss.backward()                      # the backward's ops too

How it differs from :class:`ember.overrides.TorchFunctionMode`: that one sees the public
functions users call (``ember.nn.functional.linear``); this one sees the registered ops they reach
(``func`` is ``ember.ops.aten.<op>``), after autograd has recorded the call and vmap has unbatched
it. ``func(*args, **kwargs)`` runs the op (below autograd: no graph is recorded, no tangent
computed, nothing autocast again). While the handler runs its mode is off the stack, so the ops it
calls reach the modes below it, then the kernels. The arguments come as PyTorch's dispatcher passes
them: positional ones by position, keyword-only ones by keyword, those at their schema defaults left
out.

Where Ember differs from PyTorch:
  - Ember's ops have no overloads: ``func`` is the op itself (``func.overloadpacket`` and
    ``func.default`` are ``func``; ``str(func)`` is ``"aten.mm"``, ``func.__name__`` ``"mm"``).
  - An in-place or ``out=`` call reaches the mode as the op with ``out=`` (``x.add_(y)`` is
    ``aten.add(x, y, out=x)``), since that is how Ember declares in-place forms.
  - An op Ember implements in one kernel reaches the mode whole, where PyTorch may first decompose
    it into the ops of its CompositeImplicitAutograd definition.

Tensor subclasses take part as in PyTorch (``ember/_python_tensor.py``): an op with a tensor of a
subclass defining ``__torch_dispatch__`` among its arguments, and no mode left to run, calls the
subclass's ``__torch_dispatch__`` (subclasses before their bases, then left to right; the next is
tried when one returns ``NotImplemented``).
"""

from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator
from typing import Any

from .. import _C
from .._ops import _find
from .._python_tensor import _dispatches
from ..library import _torch_dispatch_rule
from ._pytree import tree_leaves

__all__ = ["TorchDispatchMode", "is_traceable_wrapper_subclass"]


class _ModeStack(threading.local):
    def __init__(self) -> None:
        self.modes: list[TorchDispatchMode] = []


_stack = _ModeStack()


def _sync() -> None:
    # the native side only needs to know whether this thread has a mode to hand ops to
    _C._set_dispatch_mode_active(bool(_stack.modes))


def _push_mode(mode: TorchDispatchMode) -> None:
    if not isinstance(mode, TorchDispatchMode):
        raise TypeError(f"expected a TorchDispatchMode, but got {type(mode).__name__}")
    _stack.modes.append(mode)
    _sync()


def _pop_mode() -> TorchDispatchMode:
    if not _stack.modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = _stack.modes.pop()
    _sync()
    return mode


@contextlib.contextmanager
def _pop_mode_temporarily() -> Iterator[TorchDispatchMode]:
    """The innermost mode, off the stack for the duration."""
    mode = _pop_mode()
    try:
        yield mode
    finally:
        _push_mode(mode)


@contextlib.contextmanager
def _disable_current_modes() -> Iterator[list[TorchDispatchMode]]:
    """Every mode of this thread off the stack for the duration (outermost first in the list)."""
    modes = list(_stack.modes)
    _stack.modes.clear()
    _sync()
    try:
        yield modes
    finally:
        _stack.modes[:0] = modes
        _sync()


def _get_current_dispatch_mode() -> TorchDispatchMode | None:
    return _stack.modes[-1] if _stack.modes else None


def _get_current_dispatch_mode_stack() -> list[TorchDispatchMode]:
    return list(_stack.modes)


def _len_torch_dispatch_stack() -> int:
    return len(_stack.modes)


class TorchDispatchMode:
    """A context manager whose ``__torch_dispatch__(func, types, args=(), kwargs=None)`` runs in
    place of every op its thread calls while it is entered (see the module's docstring). Modes
    nest; the innermost runs first. Subclass it and override ``__torch_dispatch__``."""

    def __init__(self, _dispatch_key: object = None) -> None:
        if _dispatch_key is not None:
            raise ValueError("Ember's dispatch modes run at one place, below autograd: _dispatch_key must be None")

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not override __torch_dispatch__")

    def __enter__(self) -> TorchDispatchMode:
        _push_mode(self)
        return self

    def __exit__(self, exc_type: object, exc_val: object, exc_tb: object) -> None:
        _pop_mode()

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> TorchDispatchMode:
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
                      stacklevel=2)
        return cls(*args, **kwargs)

    @classmethod
    def is_infra_mode(cls) -> bool:
        return False


def _tensor_types(args: tuple, kwargs: dict) -> tuple[type, ...]:
    found: list[type] = []
    for item in tree_leaves((args, kwargs)):
        if isinstance(item, _C.Tensor) and type(item) not in found:
            found.append(type(item))
    return tuple(found)


def _subclass_types(args: tuple, kwargs: dict) -> list[type]:
    """The classes of the arguments' Python tensors that define __torch_dispatch__, in PyTorch's
    order: first appearance, except that a subclass goes before its bases."""
    found: list[type] = []
    for item in tree_leaves((args, kwargs)):
        if isinstance(item, _C.Tensor) and _C._is_python_tensor(item):
            cls = type(item)
            if cls in found or not _dispatches(cls):
                continue
            at = next((i for i, seen in enumerate(found) if issubclass(cls, seen)), len(found))
            found.insert(at, cls)
    return found


def _dispatch_to_subclasses(func: Any, args: tuple, kwargs: dict) -> Any:
    types = _subclass_types(args, kwargs)
    if not types:
        raise TypeError(f"'{func}' got a tensor of a subclass made by _make_wrapper_subclass or _make_subclass "
                        "that no longer has a __torch_dispatch__ to run it")
    for cls in types:
        result = cls.__torch_dispatch__(func, tuple(types), args, kwargs)
        if result is not NotImplemented:
            return result
    names = ", ".join(cls.__qualname__ for cls in types)
    raise TypeError(f"Multiple dispatch failed for '{func}'; all __torch_dispatch__ handlers returned "
                    f"NotImplemented: {names}")


def is_traceable_wrapper_subclass(t: object) -> bool:
    """Whether t is a tensor of a wrapper subclass that declares its inner tensors
    (__tensor_flatten__ / __tensor_unflatten__), as torch.utils._python_dispatch's."""
    return (isinstance(t, _C.Tensor) and _C._is_python_tensor(t) and hasattr(t, "__tensor_flatten__")
            and hasattr(type(t), "__tensor_unflatten__"))


def _dispatch(name: str, args: tuple, kwargs: dict) -> Any:
    """Called by the native side, for the op `name` reaching below autograd while a mode is entered
    or with a Python tensor among its arguments (Note [Python tensors]): modes first."""
    func = _find(name)
    if not _stack.modes:
        return _dispatch_to_subclasses(func, args, kwargs)
    with _pop_mode_temporarily() as mode:
        rule = _torch_dispatch_rule(name, type(mode))  # ember.library.register_torch_dispatch
        if rule is not None:
            result = rule(mode, func, _tensor_types(args, kwargs), args, kwargs)
        else:
            result = mode.__torch_dispatch__(func, _tensor_types(args, kwargs), args, kwargs)
    if result is NotImplemented:
        raise TypeError(f"Multiple dispatch failed for '{func}': {type(mode).__name__}.__torch_dispatch__ "
                        "returned NotImplemented")
    return result
