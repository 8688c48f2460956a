"""ember.compile: PyTorch 2's torch.compile entry point, running eagerly.

Ember has no graph compiler: `ember.compile(model)` checks its arguments as torch.compile does and
returns `model` itself, unchanged - the same object, so parameters, state_dict keys (no "_orig_mod."
prefix) and hooks stay as they were, and every call runs eagerly. A script written for
torch.compile therefore runs, without the speed-up. Backends PyTorch ships by default are
accepted ("inductor", the default, "eager", "aot_eager", "cudagraphs"), as is a callable backend
(it is never called); any other name raises RuntimeError, as PyTorch's unknown-backend error does.
"""

from __future__ import annotations

__all__ = ["compile", "list_backends"]

_BACKENDS = ("aot_eager", "cudagraphs", "eager", "inductor")
_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The backend names ember.compile accepts (all of them run eagerly)."""
    return sorted(_BACKENDS)


def compile(model=None, *, fullgraph: bool = False, dynamic: bool | None = None, backend="inductor",  # noqa: A001
            mode: str | None = None, options: dict | None = None, disable: bool = False):
    """Returns `model` unchanged (see the module docstring); with `model=None`, a decorator that does."""
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
    return model


compile.list_backends = list_backends  # discoverable from the error message
