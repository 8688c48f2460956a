"""ember.utils.hooks (torch.utils.hooks): RemovableHandle (the one class every Ember hook
registration returns, from ember._hooks), unserializable_hook and warn_if_has_hooks.

torch's BackwardHook (the machinery behind Module.register_full_backward_hook) is not provided:
Ember's Module has no full backward hooks for it to serve."""

from __future__ import annotations

import warnings

from .._hooks import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f):
    """Mark f as a hook that is not expected to be serialized: warn_if_has_hooks stays quiet about it."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor) -> None:
    """Warn once per backward hook in tensor._backward_hooks that is not marked unserializable.

    Ember tensors keep their hooks natively, without a Python _backward_hooks table, so for them
    (and for anything else without one) this is a no-op."""
    hooks = getattr(tensor, "_backward_hooks", None)
    if not hooks:
        return
    for k in hooks:
        hook = hooks[k]
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is expected, you can "
                          "decorate the function with @torch.utils.hooks.unserializable_hook to suppress this warning",
                          stacklevel=2)
