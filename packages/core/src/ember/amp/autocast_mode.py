"""ember.autocast (torch.autocast): regions of mixed precision on CPU.

    with ember.autocast("cpu", dtype=ember.bfloat16):
        y = model(x)            # matmul, linear, conv run in bfloat16; losses, reductions in float32
    loss = loss_fn(y.float(), target)
    loss.backward()             # gradients reach the float32 weights as float32

The state (enabled, dtype, nesting depth, cache switch) is per thread and lives in the native
dispatcher (Note [autocast] in native/include/ember/autocast.h); each op's cast policy is part of
its declaration. The functions here are PyTorch's names for that state. As PyTorch: CPU autocast
takes bfloat16 or float16 (another dtype warns and disables the region); "cuda" on a build without
CUDA warns and disables. Ember implements the casts for CPU tensors only, so "cuda" on a CUDA
build raises NotImplementedError rather than silently not casting.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any

import ember

from .. import _C

__all__ = ["autocast", "custom_fwd", "custom_bwd", "is_autocast_enabled", "set_autocast_enabled",
           "is_autocast_cpu_enabled", "set_autocast_cpu_enabled", "get_autocast_cpu_dtype", "set_autocast_cpu_dtype",
           "get_autocast_gpu_dtype", "set_autocast_gpu_dtype", "get_autocast_dtype", "set_autocast_dtype",
           "autocast_increment_nesting", "autocast_decrement_nesting", "clear_autocast_cache",
           "is_autocast_cache_enabled", "set_autocast_cache_enabled", "is_autocast_available"]

_CPU_DTYPES = (ember.bfloat16, ember.float16)


def _device_type(device_type: Any) -> str:
    if not isinstance(device_type, str):
        raise ValueError(f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in ("cpu", "cuda"):
        raise RuntimeError(f"User specified an unsupported autocast device_type '{device_type}'")
    return device_type


def is_autocast_available(device_type: str) -> bool:
    """Whether ember.autocast can cast on `device_type` (CPU only in Ember)."""
    return device_type == "cpu"


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Autocast's switch for `device_type`; without one, CUDA's (as torch.is_autocast_enabled())."""
    return _C._autocast_is_enabled(_device_type("cuda" if device_type is None else device_type))


def set_autocast_enabled(*args: Any) -> None:
    """set_autocast_enabled(enabled) sets CUDA's switch (PyTorch 2.2);
    set_autocast_enabled(device_type, enabled) that of a device type (PyTorch 2.4)."""
    if len(args) == 1:
        device_type, enabled = "cuda", args[0]
    elif len(args) == 2:
        device_type, enabled = args
    else:
        raise TypeError(f"set_autocast_enabled() takes 1 or 2 arguments ({len(args)} given)")
    _C._autocast_set_enabled(_device_type(device_type), bool(enabled))


def is_autocast_cpu_enabled() -> bool:
    return _C._autocast_is_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    _C._autocast_set_enabled("cpu", bool(enabled))


def get_autocast_dtype(device_type: str) -> ember.dtype:
    return _C._autocast_get_dtype(_device_type(device_type))


def set_autocast_dtype(device_type: str, dtype: ember.dtype) -> None:
    _C._autocast_set_dtype(_device_type(device_type), dtype)


def get_autocast_cpu_dtype() -> ember.dtype:
    return _C._autocast_get_dtype("cpu")


def set_autocast_cpu_dtype(dtype: ember.dtype) -> None:
    _C._autocast_set_dtype("cpu", dtype)


def get_autocast_gpu_dtype() -> ember.dtype:
    return _C._autocast_get_dtype("cuda")


def set_autocast_gpu_dtype(dtype: ember.dtype) -> None:
    _C._autocast_set_dtype("cuda", dtype)


def autocast_increment_nesting() -> int:
    """Enters one level of autocast region; returns the new depth."""
    return _C._autocast_increment_nesting()


def autocast_decrement_nesting() -> int:
    """Leaves one level; returns the new depth (0: the outermost region has exited)."""
    return _C._autocast_decrement_nesting()


def clear_autocast_cache() -> None:
    """Drops the cached casts of weights (done when the outermost region exits)."""
    _C._autocast_clear_cache()


def is_autocast_cache_enabled() -> bool:
    return _C._autocast_is_cache_enabled()


def set_autocast_cache_enabled(enabled: bool) -> None:
    _C._autocast_set_cache_enabled(bool(enabled))


class autocast:  # noqa: N801 - PyTorch's name
    """Context manager and decorator: ops inside run in mixed precision (torch.autocast).

    device_type: "cpu" (or "cuda"); dtype: the lower precision (default: the device's current
    autocast dtype, bfloat16 on CPU); enabled: False makes a region that turns autocast off;
    cache_enabled: cache the casts of weights within the region (default: the current setting).
    """

    def __init__(self, device_type: str, dtype: ember.dtype | None = None, enabled: bool = True,
                 cache_enabled: bool | None = None) -> None:
        self.device = _device_type(device_type)
        self.fast_dtype = get_autocast_dtype(self.device)
        self._cache_enabled = is_autocast_cache_enabled()
        if enabled and self.device == "cuda" and not ember.cuda.is_available():
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling", stacklevel=2)
            enabled = False
        if dtype is not None:
            self.fast_dtype = dtype
        if cache_enabled is not None:
            self._cache_enabled = cache_enabled
        if self.device == "cpu" and enabled and self.fast_dtype not in _CPU_DTYPES:
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                          "CPU Autocast only supports dtype of " + ", ".join(str(d) for d in _CPU_DTYPES)
                          + " currently.", stacklevel=2)
            enabled = False
        if self.device == "cuda" and enabled:
            raise NotImplementedError("ember.autocast: device_type 'cuda' is not implemented (Ember casts CPU "
                                      "tensors only); use device_type='cpu'")
        self._enabled = bool(enabled)

    def __enter__(self) -> None:
        self.prev = _C._autocast_is_enabled(self.device)
        self.prev_fastdtype = _C._autocast_get_dtype(self.device)
        self.prev_cache_enabled = is_autocast_cache_enabled()
        _C._autocast_set_enabled(self.device, self._enabled)
        _C._autocast_set_dtype(self.device, self.fast_dtype)
        autocast_increment_nesting()
        set_autocast_cache_enabled(self._cache_enabled)

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        _C._autocast_set_enabled(self.device, self.prev)
        _C._autocast_set_dtype(self.device, self.prev_fastdtype)
        set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func):
        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        return decorate_autocast


def _cast(value: Any, device_type: str, dtype: ember.dtype) -> Any:
    """Floating tensors of `device_type` (not float64) in `value`, nested containers included, as `dtype`."""
    if isinstance(value, ember.Tensor):
        eligible = value.is_floating_point() and value.device.type == device_type and value.dtype != ember.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (str, bytes)):
        return value
    if isinstance(value, dict):
        return {_cast(k, device_type, dtype): _cast(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        out = [_cast(v, device_type, dtype) for v in value]
        if isinstance(value, list):
            return out
        return type(value)(*out) if hasattr(value, "_fields") else tuple(out)  # a namedtuple keeps its type
    return value


def custom_fwd(fwd=None, *, device_type: str, cast_inputs: ember.dtype | None = None):
    """Decorates the forward of an ember.autograd.Function (torch.amp.custom_fwd). Without
    `cast_inputs` the forward runs under the caller's autocast state and custom_bwd replays it;
    with it, inside an autocast region the forward runs with autocast off on inputs cast to
    `cast_inputs`."""
    _device_type(device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if is_autocast_enabled(device_type):
            with autocast(device_type, enabled=False):
                return fwd(*_cast(args, device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorates the backward of an ember.autograd.Function (torch.amp.custom_bwd): it runs under
    the autocast state its forward ran under."""
    _device_type(device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
