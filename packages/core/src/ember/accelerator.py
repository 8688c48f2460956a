"""ember.accelerator: the device-agnostic accelerator API (torch.accelerator).

The accelerator is the one non-CPU device type this build can use (CUDA on a CUDA build). On a
CPU-only build there is none: `is_available()` is False, `current_accelerator()` is None,
`device_count()` is 0, and the calls that act on a device raise RuntimeError.

    device = ember.accelerator.current_accelerator() if ember.accelerator.is_available() else "cpu"
"""

from __future__ import annotations

from . import _C, cuda

__all__ = ["current_accelerator", "current_device_idx", "current_device_index", "current_stream", "device_count",
           "device_index", "empty_cache", "get_device_capability", "get_memory_info", "is_available",
           "max_memory_allocated", "max_memory_reserved", "memory_allocated", "memory_reserved",
           "reset_peak_memory_stats", "set_device_idx", "set_device_index", "synchronize"]

_NO_ACCELERATOR = ("ember.accelerator: no accelerator is available (this build of ember runs on the CPU only; "
                   "check ember.accelerator.is_available() first)")


def current_accelerator(check_available: bool = False):
    """The accelerator's device type as an ember.device ("cuda"), or None when there is none; with
    check_available=True, None also when it is compiled in but has no usable device."""
    if not cuda._is_compiled():
        return None
    if check_available and not cuda.is_available():
        return None
    return _C.device("cuda")


def is_available() -> bool:
    """Whether an accelerator device can be used."""
    return current_accelerator(check_available=True) is not None


def device_count() -> int:
    """How many accelerator devices can be used (0 without one)."""
    return cuda.device_count() if current_accelerator() is not None else 0


def _require() -> None:
    if not is_available():
        raise RuntimeError(_NO_ACCELERATOR)


def current_device_index() -> int:
    _require()
    return cuda.current_device()


def set_device_index(device) -> None:
    _require()
    cuda.set_device(device)


def synchronize(device=None) -> None:
    """Waits for all work queued on the accelerator."""
    _require()
    cuda.synchronize(device)


def _on_accelerator(name: str, cuda_name: str | None = None):
    """torch.accelerator.<name>: the accelerator's own function (ember.cuda's), after checking
    that there is one."""

    def call(*args, **kwargs):
        _require()
        return getattr(cuda, cuda_name or name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"ember.cuda.{cuda_name or name} on the accelerator; RuntimeError without one."
    return call


memory_allocated = _on_accelerator("memory_allocated")
max_memory_allocated = _on_accelerator("max_memory_allocated")
memory_reserved = _on_accelerator("memory_reserved")
max_memory_reserved = _on_accelerator("max_memory_reserved")
empty_cache = _on_accelerator("empty_cache")
reset_peak_memory_stats = _on_accelerator("reset_peak_memory_stats")
get_memory_info = _on_accelerator("get_memory_info", "mem_get_info")
current_stream = _on_accelerator("current_stream")
get_device_capability = _on_accelerator("get_device_capability")
device_index = _on_accelerator("device_index", "device")  # a context manager selecting a device


# The names PyTorch 2.6 first shipped.
current_device_idx = current_device_index
set_device_idx = set_device_index
