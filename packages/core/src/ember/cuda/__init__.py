"""ember.cuda: torch.cuda's names, honest about the build.

Ember's CUDA backend is compiled in only on CUDA builds. In a CPU-only build (the usual wheel) the
queries answer truthfully - `is_available()` is False, `device_count()` is 0, the memory counters are
0 - and everything that needs a GPU raises AssertionError("Ember not compiled with CUDA enabled ..."),
the type and shape of PyTorch's "Torch not compiled with CUDA enabled". Seeding calls are queued, as
PyTorch queues them until CUDA initializes, so a script that seeds every device runs unchanged.

    device = "cuda" if ember.cuda.is_available() else "cpu"
"""

from __future__ import annotations

import contextlib

from .. import _C

__all__ = [
    "OutOfMemoryError", "Event", "Stream", "current_device", "current_stream", "default_stream", "device", "device_count", "device_of",
    "empty_cache", "get_arch_list", "get_device_capability", "get_device_name", "get_device_properties",
    "get_rng_state", "get_rng_state_all", "init", "initial_seed", "ipc_collect", "is_available", "is_bf16_supported",
    "is_initialized", "manual_seed", "manual_seed_all", "max_memory_allocated", "max_memory_reserved",
    "mem_get_info", "memory_allocated", "memory_reserved", "memory_summary", "reset_peak_memory_stats", "seed",
    "seed_all", "set_device", "set_rng_state", "set_rng_state_all", "stream", "synchronize",
]

_NOT_COMPILED = ("Ember not compiled with CUDA enabled: this build of ember has the CPU backend only "
                 "(ember.cuda.is_available() is False)")
_NO_RUNTIME = ("Ember's CUDA runtime hooks are missing from this build (ember._C has no _cuda_* functions), "
               "so CUDA devices cannot be queried")

# torch.cuda.OutOfMemoryError is torch.OutOfMemoryError; `except` clauses naming either catch a
# failed allocation
OutOfMemoryError = _C.OutOfMemoryError

_queued_seed: tuple | None = None  # ("manual_seed" | "manual_seed_all", seed), applied when CUDA initializes


def _is_compiled() -> bool:
    """Whether this build of ember includes the CUDA backend."""
    return _C._has_backend("cuda")


def _lazy_init() -> None:
    """What every GPU-needing call goes through: raises unless a CUDA device can be used."""
    if not _is_compiled():
        raise AssertionError(_NOT_COMPILED)
    if getattr(_C, "_cuda_device_count", None) is None:
        raise RuntimeError(_NO_RUNTIME)
    if device_count() == 0:
        raise RuntimeError("Found no NVIDIA driver on your system, or no CUDA device is visible "
                           "(CUDA_VISIBLE_DEVICES)")


def is_available() -> bool:
    """Whether a CUDA device can be used: False on a CPU-only build."""
    return device_count() > 0


def device_count() -> int:
    """The number of CUDA devices: 0 on a CPU-only build."""
    count = getattr(_C, "_cuda_device_count", None) if _is_compiled() else None
    return int(count()) if count is not None else 0


def is_initialized() -> bool:
    return False if not _is_compiled() else bool(getattr(_C, "_cuda_is_initialized", lambda: False)())


def init() -> None:
    """Initializes CUDA (raises on a CPU-only build, as torch.cuda.init does without CUDA)."""
    _lazy_init()


def is_bf16_supported() -> bool:
    """Whether bfloat16 runs on the current CUDA device: False without one (PyTorch raises instead)."""
    return is_available()


def get_arch_list() -> list:
    """The CUDA architectures this build was compiled for: none on a CPU-only build."""
    return []


def _gpu_only(name: str):
    """A torch.cuda function that needs a CUDA device: raises on a CPU-only build."""

    def call(*args, **kwargs):
        _lazy_init()
        raise RuntimeError(_NO_RUNTIME)  # a CUDA build has to bind this one; none does yet

    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"As torch.cuda.{name}; needs a CUDA device, so it raises on a CPU-only build."
    return call


current_device = _gpu_only("current_device")
get_device_name = _gpu_only("get_device_name")
get_device_capability = _gpu_only("get_device_capability")
get_device_properties = _gpu_only("get_device_properties")
synchronize = _gpu_only("synchronize")
set_device = _gpu_only("set_device")
get_rng_state = _gpu_only("get_rng_state")
get_rng_state_all = _gpu_only("get_rng_state_all")
set_rng_state = _gpu_only("set_rng_state")
set_rng_state_all = _gpu_only("set_rng_state_all")
initial_seed = _gpu_only("initial_seed")
seed = _gpu_only("seed")
seed_all = _gpu_only("seed_all")
current_stream = _gpu_only("current_stream")
default_stream = _gpu_only("default_stream")
mem_get_info = _gpu_only("mem_get_info")
ipc_collect = _gpu_only("ipc_collect")


def manual_seed(seed: int) -> None:
    """Seeds the current CUDA device's generator; without CUDA the seed is queued (as PyTorch does)
    and has no effect on CPU random numbers."""
    global _queued_seed
    _queued_seed = ("manual_seed", int(seed))


def manual_seed_all(seed: int) -> None:
    """Seeds every CUDA device's generator; queued without CUDA, as manual_seed."""
    global _queued_seed
    _queued_seed = ("manual_seed_all", int(seed))


# The caching allocator's counters: nothing is allocated on a GPU without one, so they read 0, as
# PyTorch's do before CUDA initializes; clearing or resetting them has nothing to do.
def memory_allocated(device=None) -> int:
    return 0


def max_memory_allocated(device=None) -> int:
    return 0


def memory_reserved(device=None) -> int:
    return 0


def max_memory_reserved(device=None) -> int:
    return 0


def empty_cache() -> None:
    """Releases cached GPU memory; nothing is cached without CUDA."""


def reset_peak_memory_stats(device=None) -> None:
    """Resets the peak counters; they stay 0 without CUDA."""


def memory_summary(device=None, abbreviated: bool = False) -> str:
    return "No CUDA memory: this build of ember has the CPU backend only.\n" if not _is_compiled() else ""


class device:  # noqa: N801 - PyTorch's name
    """Context manager selecting a CUDA device; `device(None)` or a negative index does nothing."""

    def __init__(self, device) -> None:
        self.idx = _device_index(device)

    def __enter__(self):
        if self.idx is not None and self.idx >= 0:
            _lazy_init()
        return self

    def __exit__(self, *exc) -> bool:
        return False


class device_of(device):  # noqa: N801
    """Context manager selecting the device of a tensor: nothing to do for a CPU tensor."""

    def __init__(self, obj) -> None:
        super().__init__(obj.device.index if obj.device.type == "cuda" else -1)


def _device_index(dev) -> int | None:
    if dev is None or isinstance(dev, int):
        return dev
    d = _C.device(dev) if isinstance(dev, str) else dev
    if d.type != "cuda":
        raise ValueError(f"Expected a cuda device, but got: {d}")
    return d.index if d.index is not None else 0


@contextlib.contextmanager
def stream(stream):
    """Runs the block on `stream`; `stream(None)` is a no-op, as in PyTorch."""
    if stream is not None:
        _lazy_init()
    yield


class Stream:
    """A CUDA stream: needs a CUDA device."""

    def __init__(self, device=None, priority: int = 0, **kwargs) -> None:
        _lazy_init()


class Event:
    """A CUDA event: needs a CUDA device."""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        _lazy_init()


def _tensor_cuda(tensor, device=None, non_blocking: bool = False):
    """Tensor.cuda(): a copy on a CUDA device (the tensor itself if already there)."""
    _lazy_init()
    target = _C.device(f"cuda:{device}" if isinstance(device, int) else (device or "cuda"))
    return tensor if tensor.device == target else tensor.to(target, non_blocking=non_blocking)


def __getattr__(name: str):  # noqa: ANN202 - PEP 562
    # ember.cuda.amp loads on first use (it needs ember.amp, which loads after this module)
    if name == "amp":
        import importlib
        return importlib.import_module("ember.cuda.amp")
    raise AttributeError(f"module 'ember.cuda' has no attribute {name!r}")
