"""ember.compile: PyTorch 2's torch.compile entry point.

Ember has no graph compiler. With one of the backends PyTorch ships by default ("inductor", the
default, "eager", "aot_eager", "cudagraphs"), `ember.compile(model)` checks its arguments as
torch.compile does and returns `model` itself, unchanged - the same object, so parameters,
state_dict keys (no "_orig_mod." prefix) and hooks stay as they were, and every call runs eagerly.
A script written for torch.compile therefore runs, without the speed-up. Any other backend name
raises RuntimeError, as PyTorch's unknown-backend error does.

A callable backend is called as torch.compile calls one: `backend(gm, example_inputs)`, with `gm`
an `ember.fx.GraphModule` of the model's forward (captured by `ember.fx.symbolic_trace`) and
`example_inputs` the tensors of the first call; what it returns runs every later call. As Dynamo
does, non-tensor arguments (and a module's training flag) are fixed in the graph, and a new value
of them captures a new graph. A forward that cannot be captured whole (control flow on a tensor's
value, tensors inside containers, `*args`) runs eagerly with a warning, or raises with
`fullgraph=True`; Ember has no partial graphs. A compiled module is wrapped, as PyTorch's
`OptimizedModule` is: its state_dict keys carry the "_orig_mod." prefix.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["compile", "list_backends"]

_BACKENDS = ("aot_eager", "cudagraphs", "eager", "inductor")
_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The backend names ember.compile accepts (all of them run eagerly)."""
    return sorted(_BACKENDS)


class _Uncapturable(Exception):
    """Why a call's forward cannot be captured as one graph."""


_EAGER = object()  # a cache entry: this kind of call runs eagerly


class _Capture:
    """Captures ``fn`` (a module or a function) per kind of call and runs what the backend made."""

    def __init__(self, fn: Callable, backend: Callable, fullgraph: bool) -> None:
        from . import nn

        self.fn = fn
        self.backend = backend
        self.fullgraph = fullgraph
        self.is_module = isinstance(fn, nn.Module)
        self.signature = inspect.signature(fn.forward if self.is_module else fn)
        self.cache: dict[Any, Any] = {}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError:
            return self.fn(*args, **kwargs)  # the eager call raises the user's own error
        bound.apply_defaults()
        try:
            key, tensors = self._guard(bound)
            entry = self.cache.get(key)
            if entry is None:
                entry = self._capture(bound, tensors)
                self.cache[key] = entry
        except _Uncapturable as why:
            entry = self._eager_for(why)
        if entry is _EAGER:
            return self.fn(*args, **kwargs)
        compiled, names = entry
        return compiled(*[bound.arguments[n] for n in names])

    def _eager_for(self, why: Exception) -> object:
        if self.fullgraph:
            raise RuntimeError(f"ember.compile(fullgraph=True): the forward cannot be captured as one graph: {why}")
        warnings.warn(f"ember.compile: running eagerly: the forward cannot be captured as one graph ({why})",
                      stacklevel=3)
        return _EAGER

    def _guard(self, bound: inspect.BoundArguments) -> tuple[tuple, list[str]]:
        """The cache key (the fixed non-tensor values) and the names of the tensor arguments."""
        from . import Tensor
        from .utils._pytree import tree_leaves

        fixed, tensors = [], []
        for name, value in bound.arguments.items():
            kind = self.signature.parameters[name].kind
            if kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise _Uncapturable("*args and **kwargs are not captured")
            if isinstance(value, Tensor):
                tensors.append(name)
            elif any(isinstance(leaf, Tensor) for leaf in tree_leaves(value)):
                raise _Uncapturable(f"argument {name!r} holds tensors inside a container")
            else:
                try:
                    hash(value)
                except TypeError:
                    raise _Uncapturable(f"argument {name!r} is not hashable") from None
                fixed.append((name, type(value), value))
        training = self.fn.training if self.is_module else None
        return (tuple(fixed), training), tensors

    def _capture(self, bound: inspect.BoundArguments, tensors: list[str]) -> Any:
        from .fx import symbolic_trace
        from .fx.proxy import TraceError

        concrete = {n: v for n, v in bound.arguments.items() if n not in tensors}
        try:
            gm = symbolic_trace(self.fn, concrete_args=concrete)
        except (TraceError, RuntimeError, NotImplementedError, TypeError, AttributeError) as e:
            raise _Uncapturable(f"{type(e).__name__}: {e}") from None
        # The fixed values are the cache key: drop their placeholders and the checks of them, so
        # the graph takes exactly the tensors, as a Dynamo graph does.
        fixed = {f"{n}_1" for n in concrete}
        for node in reversed(list(gm.graph.nodes)):
            if node.op == "placeholder" and node.target in fixed:
                _erase_with_users(gm.graph, node)
        gm.recompile()
        example_inputs = [bound.arguments[n] for n in tensors]
        compiled = self.backend(gm, example_inputs)
        if not callable(compiled):
            raise TypeError(f"the compile backend returned {type(compiled).__name__}, not a callable")
        return compiled, tensors


def _erase_with_users(graph: Any, node: Any) -> None:
    for user in list(node.users):
        _erase_with_users(graph, user)
    graph.erase_node(node)


def _optimized_module(model: Any, capture: _Capture) -> Any:
    from . import nn

    class OptimizedModule(nn.Module):
        """A compiled module (torch._dynamo's OptimizedModule): the original is ``_orig_mod``."""

        def __init__(self) -> None:
            super().__init__()
            self._orig_mod = model

        def forward(self, *args: Any, **kwargs: Any) -> Any:
            return capture(*args, **kwargs)

        def __getattr__(self, name: str) -> Any:
            if name == "_orig_mod":
                return super().__getattr__(name)
            return getattr(self._orig_mod, name)

    return OptimizedModule()


def compile(model=None, *, fullgraph: bool = False, dynamic: bool | None = None, backend="inductor",  # noqa: A001
            mode: str | None = None, options: dict | None = None, disable: bool = False):
    """`model` itself for a named backend; for a callable backend, `model` captured for it (see
    the module docstring). With `model=None`, a decorator that does the same."""
    if isinstance(backend, str):
        if backend not in _BACKENDS:
            raise RuntimeError(f"Invalid backend: {backend!r}, see `ember.compile.list_backends()` for available "
                               f"backends.")
    elif not callable(backend):
        raise TypeError(f"backend must be a backend name or a callable, but got {type(backend).__name__}")
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"options must be a dict, but got {type(options).__name__}")
    if model is None:
        def decorator(fn):
            return compile(fn, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode, options=options,
                           disable=disable)
        return decorator
    if not callable(model):
        raise RuntimeError("model must be a callable (an nn.Module or a function)")
    if disable or isinstance(backend, str):
        return model
    from . import nn

    capture = _Capture(model, backend, fullgraph)
    if isinstance(model, nn.Module):
        return _optimized_module(model, capture)
    return functools.wraps(model)(lambda *args, **kwargs: capture(*args, **kwargs))


compile.list_backends = list_backends  # discoverable from the error message
