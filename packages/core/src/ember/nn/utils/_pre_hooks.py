"""The hook-based reparametrizations (prune, weight_norm, spectral_norm) keep their state in a
forward pre-hook object on the module; undoing one finds that hook by its class and tensor name."""

from __future__ import annotations


def pop_reparametrization(module, cls, name: str, name_of) -> bool:
    """Undoes module's forward pre-hook of class `cls` for the tensor `name` (name_of(hook) gives
    a hook's tensor name) and drops it; False when there is none."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, cls) and name_of(hook) == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return True
    return False
