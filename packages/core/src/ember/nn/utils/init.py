"""ember.nn.utils.init (torch.nn.utils.init): skip_init."""

from __future__ import annotations

import inspect

from ..modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """An instance of module_cls(*args, **kwargs) on kwargs' device (cpu by default) whose
    parameters and buffers are left for the caller to fill. module_cls must take `device`.

    PyTorch builds the module on the meta device and allocates it uninitialized; Ember has no meta
    device, so the module is built directly on the final device: its initializers run, and the
    values are valid rather than uninitialized memory (only the time is not saved)."""
    if not issubclass(module_cls, Module):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    kwargs["device"] = kwargs.pop("device", "cpu")
    return module_cls(*args, **kwargs)
