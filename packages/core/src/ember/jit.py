"""ember.jit: PyTorch's torch.jit as it behaves with TorchScript disabled.

Ember has no TorchScript compiler. PyTorch has a documented mode without one - the environment
variable `PYTORCH_JIT=0` (or `torch.jit._state.disable()`) - in which code written for TorchScript
runs eagerly, and `ember.jit` is that mode:

- `script`, `script_method`, `trace` and `trace_module` return what they are given, unchanged (the
  same object: its parameters, state_dict and hooks stay as they were), so every call runs eagerly.
  A model code base that scripts or traces its models therefore runs, without TorchScript's
  graph. `ScriptModule` and `RecursiveScriptModule` are plain `ember.nn.Module` subclasses, as in
  that mode, so nothing is one unless a class derives from it.
- The annotations model code carries are what they are in eager PyTorch: `ignore`, `unused`,
  `export`, `interface`, `Attribute`, `annotate` and `Final` mark or return their argument;
  `is_scripting()` and `is_tracing()` are False; `isinstance` checks a value against a typing
  annotation (`List[Tensor]`, `Dict[str, int]`, `Optional[...]`, ...) element by element;
  `script_if_tracing` calls the function.
- `fork` runs the call at once, in the calling thread, and returns a completed `ember.futures.Future`
  (an error raises from `fork` itself); `wait` returns its value. PyTorch does the same outside
  TorchScript.
- TorchScript archives are absent: `save` and `load` raise NotImplementedError (ember.save stores a
  whole model, and ember.export an exported graph), and `freeze`/`optimize_for_inference` raise
  PyTorch's RuntimeError for a module that is not a ScriptModule - which, here, none is.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import types
import typing
import warnings
from collections.abc import Callable
from typing import Any, Final  # torch.jit.Final is typing.Final

from .futures import Future
from .nn import Module

__all__ = [
    "Attribute", "Error", "Final", "Future", "RecursiveScriptModule", "ScriptFunction", "ScriptModule", "annotate",
    "export", "fork", "freeze", "ignore", "interface", "is_scripting", "is_tracing", "isinstance", "load",
    "optimize_for_inference", "save", "script", "script_if_tracing", "script_method", "trace", "trace_module",
    "unused", "wait",
]

_builtin_isinstance = isinstance


class Error(RuntimeError):
    """torch.jit.Error: what a TorchScript program raises. Ember runs no TorchScript, so nothing
    raises it; it exists for `except torch.jit.Error` clauses."""


class ScriptModule(Module):
    """A plain Module (as PyTorch's ScriptModule is with TorchScript disabled)."""

    def __init__(self, arg: Any = None) -> None:
        super().__init__()


class RecursiveScriptModule(ScriptModule):
    pass


class ScriptFunction:
    """The type of a scripted function in PyTorch. Ember's `script` returns the function itself, so
    no value is a ScriptFunction; the class exists for isinstance checks."""

    def __init__(self) -> None:
        raise TypeError("ember.jit.ScriptFunction cannot be created: Ember has no TorchScript compiler")


# ---- compiling and tracing: the identity, as with PYTORCH_JIT=0 ---------------------------------


def script(obj: Any, optimize: Any = None, _frames_up: int = 0, _rcb: Any = None,
           example_inputs: Any = None) -> Any:
    """Returns `obj` unchanged: Ember has no TorchScript compiler, and this is torch.jit.script with
    TorchScript disabled (PYTORCH_JIT=0). Calls run eagerly."""
    return obj


def script_method(fn: Callable) -> Callable:
    return fn


def trace(func: Any, example_inputs: Any = None, optimize: Any = None, check_trace: bool = True,
          check_inputs: Any = None, check_tolerance: float = 1e-5, strict: bool = True,
          _force_outplace: bool = False, _module_class: Any = None, _compilation_unit: Any = None,
          example_kwarg_inputs: Any = None, _store_inputs: bool = True) -> Any:
    """Returns `func` unchanged (torch.jit.trace with TorchScript disabled): no graph is recorded,
    so control flow stays live. For a graph of a model's operations, see ember.fx.symbolic_trace
    and ember.export.export."""
    return func


def trace_module(mod: Any, inputs: Any = None, optimize: Any = None, check_trace: bool = True,
                 check_inputs: Any = None, check_tolerance: float = 1e-5, strict: bool = True,
                 _force_outplace: bool = False, _module_class: Any = None, _compilation_unit: Any = None,
                 example_inputs_is_kwarg: bool = False, _store_inputs: bool = True) -> Any:
    return mod


def script_if_tracing(fn: Callable) -> Callable:
    """Calls fn (it would be scripted only while tracing, which never happens here)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    wrapper.__original_fn = fn  # type: ignore[attr-defined]
    wrapper.__script_if_tracing_wrapper = True  # type: ignore[attr-defined]
    return wrapper


_script_if_tracing = script_if_tracing


def is_scripting() -> bool:
    """False: Ember never runs code as TorchScript (code under `if not is_scripting():` runs)."""
    return False


def is_tracing() -> bool:
    """False: Ember has no TorchScript tracer (ember.fx's tracer is not one, as in PyTorch)."""
    return False


# ---- annotations: marks for the compiler, their argument in eager code ---------------------------


class FunctionModifiers:
    """The marks PyTorch's decorators leave on a function (`fn._torchscript_modifier`)."""

    UNUSED = "unused (ignored and replaced with raising of an exception)"
    IGNORE = "ignore (leave as a call to Python, cannot be torch.jit.save'd)"
    EXPORT = "export (compile this function even if nothing calls it)"
    DEFAULT = "default (compile if called from a exported function / forward)"
    COPY_TO_SCRIPT_WRAPPER = "if this method is not scripted, copy the python method onto the scripted model"
    _DROP = "_drop (function is fully ignored, declaration can be unscriptable)"


def export(fn: Callable) -> Callable:
    fn._torchscript_modifier = FunctionModifiers.EXPORT  # type: ignore[attr-defined]
    return fn


def unused(fn: Any) -> Any:
    if _builtin_isinstance(fn, property):
        if fn.fget is not None:
            fn.fget._torchscript_modifier = FunctionModifiers.UNUSED
        if fn.fset is not None:
            fn.fset._torchscript_modifier = FunctionModifiers.UNUSED
        return fn
    fn._torchscript_modifier = FunctionModifiers.UNUSED
    return fn


def ignore(drop: Any = False, **kwargs: Any) -> Any:
    """`@ignore`, `@ignore()` or `@ignore(drop=True)`: marks the function and returns it."""
    if callable(drop):  # used bare: @ember.jit.ignore
        drop._torchscript_modifier = FunctionModifiers.IGNORE
        return drop
    if not _builtin_isinstance(drop, bool):
        raise RuntimeError(f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}")
    if "drop_on_export" in kwargs:
        warnings.warn("ignore(drop_on_export=True) has been deprecated. TorchScript will now drop the function "
                      "call on compilation. Use torch.jit.unused now.", FutureWarning, stacklevel=2)
        drop = kwargs.pop("drop_on_export")
    if kwargs:
        raise TypeError(f"ignore() got an unexpected keyword argument {next(iter(kwargs))!r}")

    def decorator(fn: Callable) -> Callable:
        fn._torchscript_modifier = FunctionModifiers.UNUSED if drop else FunctionModifiers.IGNORE
        return fn

    return decorator


def interface(obj: Any) -> Any:
    if not inspect.isclass(obj):
        raise RuntimeError("interface must be applied to a class")
    obj.__torch_script_interface__ = True
    return obj


def annotate(the_type: Any, the_value: Any) -> Any:
    """The value: the type is for the TorchScript compiler."""
    return the_value


def Attribute(value: Any, type: Any) -> Any:  # noqa: A002, N802 - PyTorch's names
    """The value: the type is for the TorchScript compiler."""
    return value


def isinstance(obj: Any, target_type: Any) -> bool:  # noqa: A001 - torch.jit.isinstance
    """Whether obj is of target_type, a class or a typing annotation whose containers are checked
    element by element (List[Tensor] is a list of tensors; an empty container matches any element
    type, with a warning, as in PyTorch)."""
    return _matches(obj, target_type)


def _matches(obj: Any, target: Any) -> bool:
    origin = typing.get_origin(target)
    args = typing.get_args(target)
    if target is Any:
        return True
    if target is None or target is type(None):
        return obj is None
    if origin is None:
        if not _builtin_isinstance(target, type):
            raise TypeError(f"ember.jit.isinstance: {target!r} is not a type")
        return _builtin_isinstance(obj, target)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(obj, a) for a in args)
    if origin in (list, collections.abc.Sequence, collections.abc.MutableSequence):
        if not _builtin_isinstance(obj, list if origin is list else collections.abc.Sequence):
            return False
        return _elements(obj, lambda v: _matches(v, args[0]) if args else True)
    if origin is dict or origin in (collections.abc.Mapping, collections.abc.MutableMapping):
        if not _builtin_isinstance(obj, dict if origin is dict else collections.abc.Mapping):
            return False
        if not args:
            return True
        return _elements(list(obj.items()), lambda kv: _matches(kv[0], args[0]) and _matches(kv[1], args[1]))
    if origin is tuple:
        if not _builtin_isinstance(obj, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_matches(v, args[0]) for v in obj)
        return len(obj) == len(args) and all(_matches(v, a) for v, a in zip(obj, args, strict=True))
    return _builtin_isinstance(obj, origin)


def _elements(values: list, check: Callable[[Any], bool]) -> bool:
    if not values:
        warnings.warn("The inner type of a container is lost when calling torch.jit.isinstance in eager "
                      "mode. For example, List[int] would become list and therefore falsely return True "
                      "for List[float] or List[str].", stacklevel=3)
        return True
    return all(check(v) for v in values)


# ---- futures: run at once, as outside TorchScript ----------------------------------------------------


def fork(func: Callable, *args: Any, **kwargs: Any) -> Future:
    """Calls func(*args, **kwargs) now, in this thread, and returns a completed Future holding the
    result (PyTorch's fork does the same outside TorchScript). An exception raises here."""
    result = func(*args, **kwargs)
    future = Future()
    future.set_result(result)
    return future


def wait(future: Future) -> Any:
    if not _builtin_isinstance(future, Future):
        raise TypeError(f"ember.jit.wait expects a Future, got {type(future).__name__}")
    return future.wait()


# ---- what needs TorchScript itself ---------------------------------------------------------------------


def _not_script_module(what: str) -> RuntimeError:
    return RuntimeError(f"{what} expects a ScriptModule as input. Please use torch.jit.script or torch.jit.trace "
                        "to script your 'nn.Module'. (Ember has no TorchScript compiler: ember.jit.script returns "
                        "the module itself, so no module is a ScriptModule.)")


def freeze(mod: Any, preserved_attrs: Any = None, optimize_numerics: bool = True) -> Any:
    raise _not_script_module("Freezing")


def optimize_for_inference(mod: Any, other_methods: Any = None) -> Any:
    raise _not_script_module("optimize_for_inference")


def save(m: Any, f: Any, _extra_files: Any = None) -> None:
    raise NotImplementedError("ember.jit.save: TorchScript archives are not supported (Ember has no TorchScript "
                              "compiler). Save the model with ember.save(model, f) - loaded again with "
                              "ember.load(f, weights_only=False) - or its state_dict(), or an exported graph "
                              "with ember.export.save.")


def load(f: Any, map_location: Any = None, _extra_files: Any = None, _restore_shapes: bool = False) -> Any:
    raise NotImplementedError("ember.jit.load: TorchScript archives cannot be loaded (Ember has no TorchScript "
                              "interpreter). A checkpoint written by torch.save loads with ember.load, and a "
                              "program saved by torch.export.save with ember.export.load.")

