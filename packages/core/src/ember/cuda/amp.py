"""ember.cuda.amp (torch.cuda.amp): autocast with device type "cuda". Ember casts CPU tensors only:
on a build without CUDA a region warns and is disabled, as PyTorch's is without a GPU."""

from __future__ import annotations

import warnings

import ember

from ..amp.autocast_mode import autocast as _autocast
from ..amp.autocast_mode import custom_bwd as _custom_bwd
from ..amp.autocast_mode import custom_fwd as _custom_fwd
from ..amp.grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


class autocast(_autocast):  # noqa: N801 - PyTorch's name
    """ember.autocast("cuda", ...), with torch.cuda.amp.autocast's defaults."""

    def __init__(self, enabled: bool = True, dtype: ember.dtype = ember.float16, cache_enabled: bool = True) -> None:
        super().__init__("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """torch.cuda.amp.custom_fwd: ember.amp.custom_fwd with device_type="cuda"."""
    return _custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd=None):
    """torch.cuda.amp.custom_bwd: ember.amp.custom_bwd with device_type="cuda"."""
    return _custom_bwd(bwd, device_type="cuda")


class GradScaler(_GradScaler):
    """torch.cuda.amp.GradScaler: ember.amp.GradScaler("cuda", ...), deprecated as PyTorch's is.
    Without CUDA an enabled scaler warns and disables itself, so `enabled=(dtype == "float16")`
    scripts (nanoGPT's train.py) run with every method a pass-through."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        warnings.warn("`ember.cuda.amp.GradScaler(args...)` is deprecated. Please use "
                      "`ember.amp.GradScaler('cuda', args...)` instead.", FutureWarning, stacklevel=2)
        super().__init__("cuda", init_scale=init_scale, growth_factor=growth_factor, backoff_factor=backoff_factor,
                         growth_interval=growth_interval, enabled=enabled)
