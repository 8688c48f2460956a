"""``ember.overrides``: the ``__torch_function__`` protocol, as ``torch.overrides``.

A type that defines ``__torch_function__(cls, func, types, args=(), kwargs=None)`` (a Tensor
subclass, or any class standing in for a tensor) takes over every op it is passed to: the op's
public function ``func`` is handed to the first such argument (subclasses before their bases, then
left to right) until one answers something other than ``NotImplemented``. A
``TorchFunctionMode`` entered with ``with`` sees every op of its thread first. ``ember.Tensor``'s
own ``__torch_function__`` runs the op and returns tensors as the caller's subclass, so a subclass
keeps its type through ops unless it opts out with
``__torch_function__ = ember._C._disabled_torch_function_impl`` (as ``nn.Parameter`` does).

Ops bound natively (every op of ``native/ops/declarations.py``, as function and as Tensor method,
and the Tensor operators) dispatch in their binding (Note [__torch_function__] in
``csrc/op_binding_support.h``); Python-level functions of ``ember``, ``ember.nn.functional``,
``ember.linalg``, ``ember.fft`` and ``ember.special`` through ``_overridable`` wrappers. Two
differences from PyTorch for modes: a native op whose arguments hold no tensor and no size
(``ember.tril_indices(3, 3)``) runs without the mode, and ``ember.tensor`` / ``as_tensor`` show the
mode the ops they run rather than themselves.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from . import _C

__all__ = [
    "BaseTorchFunctionMode",
    "TorchFunctionMode",
    "get_ignored_functions",
    "get_overridable_functions",
    "get_testing_overrides",
    "handle_torch_function",
    "has_torch_function",
    "has_torch_function_unary",
    "has_torch_function_variadic",
    "is_tensor_like",
    "is_tensor_method_or_property",
    "resolve_name",
    "wrap_torch_function",
]

_disabled_torch_function_impl = _C._disabled_torch_function_impl

# _C's per-thread switch (Note [__torch_function__]): 0 enabled, 1 subclasses disabled, 2 all disabled
_ENABLED, _SUBCLASSES_DISABLED, _ALL_DISABLED = 0, 1, 2


class _Switch:
    """A context manager raising this thread's __torch_function__ switch to `level` (never lowering it)."""

    _level = _ENABLED

    def __init__(self) -> None:
        self._previous: list[int] = []

    def __enter__(self) -> _Switch:
        current = _C._get_torch_function_state()
        self._previous.append(current)
        _C._set_torch_function_state(builtins.max(current, self._level))
        return self

    def __exit__(self, *exc: object) -> None:
        _C._set_torch_function_state(self._previous.pop())


class DisableTorchFunctionSubclass(_Switch):
    """Within it, this thread's ops ignore the ``__torch_function__`` of their arguments (modes
    still run): what ``Tensor.__torch_function__`` runs the op under (``torch._C.DisableTorchFunctionSubclass``)."""

    _level = _SUBCLASSES_DISABLED


class DisableTorchFunction(_Switch):
    """Within it, this thread's ops ignore ``__torch_function__`` altogether, modes included
    (``torch._C.DisableTorchFunction``)."""

    _level = _ALL_DISABLED


def _is_torch_function_enabled() -> bool:
    return _C._get_torch_function_state() == _ENABLED


def _is_torch_function_all_disabled() -> bool:
    return _C._get_torch_function_state() == _ALL_DISABLED


# ---- modes -------------------------------------------------------------------------------------


class _ModeStack(threading.local):
    def __init__(self) -> None:
        self.modes: list[TorchFunctionMode] = []


_stack = _ModeStack()


def _sync_mode_depth() -> None:
    _C._set_torch_function_mode_depth(len(_stack.modes))


def _push_mode(mode: TorchFunctionMode) -> None:
    _stack.modes.append(mode)
    _sync_mode_depth()


def _pop_mode() -> TorchFunctionMode:
    if not _stack.modes:
        raise RuntimeError("Trying to pop from an empty mode stack")
    mode = _stack.modes.pop()
    _sync_mode_depth()
    return mode


@contextlib.contextmanager
def _pop_mode_temporarily() -> Iterator[TorchFunctionMode]:
    """The innermost mode, off the stack while its handler runs (so that the ops it calls reach
    the modes below it, then the arguments' overrides)."""
    mode = _pop_mode()
    try:
        yield mode
    finally:
        _push_mode(mode)


def _len_torch_function_stack() -> int:
    return len(_stack.modes)


def _get_current_function_mode() -> TorchFunctionMode | None:
    return _stack.modes[-1] if _stack.modes else None


def _get_current_function_mode_stack() -> list[TorchFunctionMode]:
    return list(_stack.modes)


def _is_torch_function_mode_enabled() -> bool:
    return bool(_stack.modes) and not _is_torch_function_all_disabled()


class TorchFunctionMode:
    """A context manager that sees every op of its thread before the arguments do: while it is
    entered, ``ops`` call its ``__torch_function__(func, types, args=(), kwargs=None)``, during
    which it is off the stack (calling ``func`` again runs the op). Modes nest; the innermost runs
    first. Subclass it and override ``__torch_function__`` (``torch.overrides.TorchFunctionMode``)."""

    def __torch_function__(self, func: Callable, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        raise NotImplementedError

    def __enter__(self) -> TorchFunctionMode:
        _push_mode(self)
        return self

    def __exit__(self, exc_type: object, exc_val: object, exc_tb: object) -> None:
        _pop_mode()

    @classmethod
    def push(cls, *args: Any, **kwargs: Any) -> TorchFunctionMode:
        warnings.warn("`Mode.push()` is no longer necessary and can be replaced with just `with Mode()`",
                      stacklevel=2)
        return cls(*args, **kwargs)


class BaseTorchFunctionMode(TorchFunctionMode):
    """A mode whose handler runs the op unchanged: the base to override selectively."""

    def __torch_function__(self, func: Callable, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        return func(*args, **(kwargs or {}))


# ---- dispatch ----------------------------------------------------------------------------------


def _type_overrides(arg_type: type) -> bool:
    # a plain ember.Tensor never takes a call (its handler only matters to its subclasses)
    impl = getattr(arg_type, "__torch_function__", None)
    return arg_type is not _C.Tensor and impl is not None and impl is not _disabled_torch_function_impl


def _get_overloaded_args(relevant_args: Iterable[Any], get_type_fn: Callable[[Any], type] | None = None) -> list:
    """The arguments whose type has a __torch_function__ (plain tensors aside), one per type, each
    subclass before its bases, otherwise in order (torch.overrides._get_overloaded_args)."""
    if not _is_torch_function_enabled():
        return []
    get_type = get_type_fn or type
    types: set[type] = set()
    overloaded: list = []
    for arg in relevant_args:
        arg_type = get_type(arg)
        if arg_type in types or not _type_overrides(arg_type):
            continue
        types.add(arg_type)
        index = len(overloaded)
        for i, earlier in enumerate(overloaded):
            if issubclass(arg_type, get_type(earlier)):
                index = i
                break
        overloaded.insert(index, arg)
    return overloaded


def handle_torch_function(public_api: Callable, relevant_args: Iterable[Any], /, *args: Any, **kwargs: Any) -> Any:
    """Runs ``public_api(*args, **kwargs)`` through the active mode and the ``__torch_function__``
    of ``relevant_args``; raises TypeError when every one answers ``NotImplemented``. Its own two
    parameters are positional-only, so an op's keyword arguments may take any name."""
    overloaded = _get_overloaded_args(relevant_args)
    types = tuple(builtins.map(type, overloaded))
    if _is_torch_function_mode_enabled():
        with _pop_mode_temporarily() as mode:
            result = mode.__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    for arg in overloaded:
        impl = arg.__torch_function__
        if getattr(impl, "__self__", None) is arg and impl is not _disabled_torch_function_impl:
            warnings.warn("Defining your `__torch_function__` as a plain method is deprecated and will be an "
                          "error in future, please define it as a classmethod.", DeprecationWarning, stacklevel=2)
        result = impl(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = resolve_name(public_api) or repr(public_api)
    message = (f"no implementation found for '{name}' on types that implement __torch_function__: "
               f"{[type(arg) for arg in overloaded]}")
    if _is_torch_function_mode_enabled():
        message += f" nor in mode {_get_current_function_mode()}"
    raise TypeError(message)


def has_torch_function(relevant_args: Iterable[Any]) -> bool:
    """Whether an argument (or the active mode) takes the call: a plain ember.Tensor never does."""
    return _C._has_torch_function(tuple(relevant_args), None)


def has_torch_function_unary(arg: Any) -> bool:
    return _C._has_torch_function((arg,), None)


def has_torch_function_variadic(*args: Any) -> bool:
    return _C._has_torch_function(args, None)


def _relevant_args(args: tuple, kwargs: dict) -> list:
    """The arguments __torch_function__ may come from: each argument, and the items of list or
    tuple arguments (a list of tensors), one level deep."""
    found = []
    for arg in (*args, *kwargs.values()):
        if isinstance(arg, (list, tuple)):
            found.extend(arg)
        else:
            found.append(arg)
    return found


def _dispatch_binding(public_api: Callable, args: tuple, kwargs: dict) -> Any:
    # Called by a native binding's fallback overload, or an _OverridableFunction, when an argument or
    # a mode asked for dispatch.
    return handle_torch_function(public_api, _relevant_args(args, kwargs), *args, **kwargs)


_C._set_torch_function_handler(_dispatch_binding)


def _overridable(func: Callable) -> Callable:
    """A Python-level public function, dispatching to __torch_function__ under its own name as the
    native ops do (a C type: Note [overridable Python functions] in csrc/torch_function_py.cpp)."""
    wrapper = functools.update_wrapper(_C._OverridableFunction(func), func)
    wrapper._ember_overridable = True
    return wrapper


def wrap_torch_function(dispatcher: Callable[..., Iterable[Any]]) -> Callable[[Callable], Callable]:
    """A decorator making a Python function overridable: ``dispatcher`` (same signature) returns
    the arguments to look for ``__torch_function__`` on (torch.overrides.wrap_torch_function)."""

    def inner(func: Callable) -> Callable:
        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            relevant = dispatcher(*args, **kwargs)
            if has_torch_function(relevant):
                return handle_torch_function(wrapped, relevant, *args, **kwargs)
            return func(*args, **kwargs)

        return wrapped

    return inner


def is_tensor_like(inp: Any) -> bool:
    """Whether ``inp`` is a tensor or stands in for one (its type defines __torch_function__)."""
    return type(inp) is _C.Tensor or hasattr(inp, "__torch_function__")


# ---- what can be overridden --------------------------------------------------------------------


def _namespaces() -> dict[Any, str]:
    import sys

    ember = sys.modules["ember"]  # the package, loaded by then (not an import: ember imports this module)
    return {ember: "ember", ember.nn.functional: "ember.nn.functional", ember.linalg: "ember.linalg",
            ember.fft: "ember.fft", ember.special: "ember.special"}


@functools.lru_cache(maxsize=1)
def _classified() -> tuple[dict[Any, list[Callable]], frozenset]:
    native = {id(getattr(scope, name)) for scope, name in _C._overridable_bindings()}

    def _dispatches(func: Any) -> bool:
        # a native binding with the fallback overload, or a function wrapped by _overridable
        return id(func) in native or getattr(func, "_ember_overridable", False)

    overridable: dict[Any, list[Callable]] = {}
    ignored: set = set()
    for module in _namespaces():
        found = []
        for name in dir(module):
            if name.startswith("_"):
                continue
            obj = getattr(module, name, None)
            if isinstance(obj, type) or not callable(obj) or type(obj).__name__ == "module":
                continue
            (found.append if _dispatches(obj) else ignored.add)(obj)
        overridable[module] = found
    methods = []
    for name in dir(_C.Tensor):
        obj = getattr(_C.Tensor, name, None)
        if callable(obj) and _dispatches(obj):
            methods.append(obj)
    overridable[_C.Tensor] = methods
    return overridable, frozenset(ignored)


def get_overridable_functions() -> dict[Any, list[Callable]]:
    """{namespace: [its public functions that dispatch to __torch_function__]}, for ember,
    ember.Tensor, ember.nn.functional, ember.linalg, ember.fft and ember.special."""
    return {k: list(v) for k, v in _classified()[0].items()}


def get_ignored_functions() -> set[Callable]:
    """The public functions of those namespaces that never dispatch (ember.is_tensor,
    ember.set_grad_enabled, ...): they take no tensor, or inspect one without computing."""
    return set(_classified()[1])


def get_testing_overrides() -> dict[Callable, Callable]:
    """{overridable function: a stand-in taking any arguments and returning -1}: the table
    PyTorch's tests of the protocol use to check that each function dispatches."""
    def dummy(*args: Any, **kwargs: Any) -> int:
        return -1

    return {f: dummy for funcs in _classified()[0].values() for f in funcs}


def is_tensor_method_or_property(func: Callable) -> bool:
    """Whether ``func`` is a method of ember.Tensor or a property's getter."""
    return func in _classified()[0][_C.Tensor] or getattr(func, "__name__", None) == "__get__"


def resolve_name(f: Callable) -> str | None:
    """The dotted public name of an overridable function (``ember.add``, ``ember.Tensor.add``), or
    None."""
    for module, prefix in _namespaces().items():
        name = getattr(f, "__name__", None)
        if name is not None and getattr(module, name, None) is f:
            return f"{prefix}.{name}"
    name = getattr(f, "__name__", None)
    if name is not None and getattr(_C.Tensor, name, None) is f:
        return f"ember.Tensor.{name}"
    return None


# ---- ember.Tensor's own handler ----------------------------------------------------------------


def _convert(ret: Any, cls: type) -> Any:
    """Tensors in an op's result as `cls` (the caller's subclass), through lists and tuples."""
    if cls is _C.Tensor:
        return ret
    if isinstance(ret, _C.Tensor) and not isinstance(ret, cls):
        return ret.as_subclass(cls)
    if isinstance(ret, (tuple, list)):
        converted = [_convert(r, cls) for r in ret]
        return type(ret)(*converted) if hasattr(ret, "_fields") else type(ret)(converted)
    return ret


def _tensor_torch_function(cls: type, func: Callable, types: tuple, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
    """ember.Tensor.__torch_function__: runs the op with subclass dispatch off and returns its
    tensors as ``cls``, so a subclass keeps its type through ops (torch.Tensor.__torch_function__)."""
    if not builtins.all(issubclass(cls, t) for t in types):
        return NotImplemented
    with DisableTorchFunctionSubclass():
        return _convert(func(*args, **(kwargs or {})), cls)


def tensor_methods() -> dict[str, object]:
    """ember.Tensor.__torch_function__ (attached by ember/_tensor_methods.py)."""
    return {"__torch_function__": classmethod(_tensor_torch_function)}


_PybindType = type(_C.Tensor)
_InstanceMethod = type(vars(_C.Tensor)["dim"])


class TensorType(_PybindType):
    """ember.Tensor's metaclass. pybind11's answers ``Tensor.add`` with the class dict's
    ``instancemethod``, which is unhashable; PyTorch code keys dicts and sets by Tensor methods
    (``{torch.Tensor.clone, torch.Tensor.to}``, a __torch_function__'s table), so class access
    answers the method's function instead, hashable and the same object each time (what
    ``__torch_function__`` is handed). Instances still bind methods through the instancemethod."""

    def __getattribute__(cls, name: str) -> Any:
        found = _PybindType.__getattribute__(cls, name)
        return found.__func__ if type(found) is _InstanceMethod else found

    def __setattr__(cls, name: str, value: Any) -> None:
        # Tensor.clip = Tensor.clamp: the method's function gets its binding back
        own = vars(_C.Tensor).get(getattr(value, "__name__", None))
        if type(own) is _InstanceMethod and own.__func__ is value:
            value = _C._instancemethod(value)
        _PybindType.__setattr__(cls, name, value)


# torch._C's names for these
_C.DisableTorchFunctionSubclass = DisableTorchFunctionSubclass
_C.DisableTorchFunction = DisableTorchFunction
_C._is_torch_function_enabled = _is_torch_function_enabled
_C._is_torch_function_mode_enabled = _is_torch_function_mode_enabled
_C._is_torch_function_all_disabled = _is_torch_function_all_disabled
_C._len_torch_function_stack = _len_torch_function_stack
_C._get_function_stack_at = lambda i: _stack.modes[i]
_C._push_on_torch_function_stack = _push_mode
_C._pop_torch_function_stack = _pop_mode


# ---- Python-level public functions -------------------------------------------------------------

# Names that configure or inspect rather than compute: they never dispatch (PyTorch ignores them too).
_NEVER_DISPATCH_PREFIXES = ("set_", "get_", "use_", "are_", "is_autocast", "is_grad", "is_inference", "is_anomaly")
_NEVER_DISPATCH = frozenset({
    "is_tensor", "is_storage", "manual_seed", "seed", "initial_seed", "compile", "load", "save", "typename",
    "tensor", "as_tensor", "asarray", "from_numpy", "from_dlpack", "frombuffer", "is_deterministic_algorithms_warn_only_enabled",
})


def _wrap_namespaces() -> None:
    """Makes the Python-level public functions of the overridable namespaces dispatch (ember's
    import calls it last). An alias stays one function: a function object is wrapped once."""
    import sys
    import types

    wrapped: dict[int, tuple[Callable, Callable]] = {}  # id(function) -> (function, its wrapper)
    for module in _namespaces():
        names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
        for name in names:
            func = vars(module).get(name)
            if (not isinstance(func, types.FunctionType) or not func.__module__.startswith("ember")
                    or name in _NEVER_DISPATCH or name.startswith(_NEVER_DISPATCH_PREFIXES) or id(func) in wrapped):
                continue
            wrapper = _overridable(func)
            wrapper.__module__ = module.__name__  # where pickle finds it, as torch.nn.functional.relu
            wrapped[id(func)] = (func, wrapper)
    # every ember module that re-exports one (ember.functional, ember.utils.dlpack, ...) gets the same
    # wrapper, so `ember.to_dlpack is ember.utils.dlpack.to_dlpack` still holds
    for module_name, module in list(sys.modules.items()):
        if not (module_name == "ember" or module_name.startswith("ember.")) or module is None or module_name == __name__:
            continue
        for name, value in list(vars(module).items()):
            found = wrapped.get(id(value))
            if found is not None and found[0] is value:
                setattr(module, name, found[1])
    _classified.cache_clear()
