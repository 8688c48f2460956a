"""ember.cpu: the CPU device namespace (torch.cpu's basics, ember.cpu.amp.autocast) and the CPU caching
allocator.

Large CPU buffers (1 MiB and up) are kept on free and handed out again, so a loop that allocates
the same shapes does not page-fault fresh memory each step (Note [caching CPU allocator] in
native/src/core/allocator.cpp). The cache is bounded: it keeps at most ``get_cache_limit()`` bytes,
by default the ``EMBER_CPU_CACHE_LIMIT`` environment variable (bytes, or with a K/M/G suffix,
read at start-up) or else 1/32 of physical memory, at most 1 GiB; freeing into a full cache
releases the oldest cached blocks first, and a failed system allocation releases the whole cache
and tries again. PyTorch's CPU allocator has no cache, hence no such API; these are Ember's.
"""

from __future__ import annotations

import os
import re
import warnings

from .. import _C
from . import amp

__all__ = ["amp", "is_available", "device_count", "current_device", "synchronize", "empty_cache", "memory_stats",
           "memory_allocated", "memory_reserved", "max_memory_allocated", "reset_peak_memory_stats",
           "get_cache_limit", "set_cache_limit", "Stream", "StreamContext", "current_stream", "stream", "set_device",
           "is_initialized"]


# ---- streams, for device-agnostic code (torch.cpu's): CPU ops run in order on the calling thread,
# so a stream orders nothing and waiting on one returns at once --------------------------------


class Stream:
    """A CPU stream: the one order CPU ops already run in. Exists so that code written for
    ``getattr(torch, device_type).Stream`` runs on the CPU."""

    def __init__(self, priority: int = -1) -> None:
        self.priority = priority

    def wait_stream(self, stream) -> None:
        pass

    def record_event(self) -> None:
        pass

    def wait_event(self, event) -> None:
        pass

    def query(self) -> bool:
        return True  # nothing is ever pending

    def synchronize(self) -> None:
        pass


_default_stream = Stream()
_current_stream = _default_stream


class StreamContext:
    """Makes `stream` the current CPU stream for the duration (None: leaves it as it is)."""

    def __init__(self, stream: Stream | None) -> None:
        self.stream = stream
        self.prev_stream = _default_stream

    def __enter__(self) -> None:
        global _current_stream
        if self.stream is not None:
            self.prev_stream, _current_stream = _current_stream, self.stream

    def __exit__(self, *exc) -> None:
        global _current_stream
        if self.stream is not None:
            _current_stream = self.prev_stream


def current_stream(device=None) -> Stream:
    """The current CPU stream (`device` is ignored: there is one CPU device)."""
    return _current_stream


def stream(stream: Stream | None) -> StreamContext:
    return StreamContext(stream)


def set_device(device) -> None:
    """There is one CPU device: nothing to select."""


def is_initialized() -> bool:
    """The CPU needs no initialization: always True."""
    return True


def is_available() -> bool:
    """Always True, as torch.cpu.is_available."""
    return True


def device_count() -> int:
    return 1


def current_device() -> str:
    return "cpu"


def synchronize(device=None) -> None:
    """CPU ops finish before they return: nothing to wait for."""


def empty_cache() -> None:
    """Returns every cached (free) block to the system; live tensors are untouched."""
    _C._cpu_empty_cache()


def memory_stats() -> dict[str, int]:
    """The CPU allocator's counters, named as torch.cuda.memory_stats names its own:

    - ``allocated_bytes.all.current`` / ``.peak``: bytes of live tensor buffers, as requested;
    - ``reserved_bytes.all.current`` / ``.peak``: bytes held from the system: live buffers
      (rounded up to their allocation size) plus the cache;
    - ``cached_bytes.all.current``: free blocks kept for reuse (``reserved - in use``);
    - ``cache_limit_bytes``: the most the cache keeps (``get_cache_limit()``);
    - ``num_cache_hits`` / ``num_cache_misses``: large allocations served from the cache or not;
    - ``num_cache_evictions``: cached blocks freed to stay under the limit;
    - ``num_alloc_retries``: system allocations that failed and were retried after emptying the cache.
    """
    return _C._cpu_memory_stats()


def memory_allocated(device=None) -> int:
    return memory_stats()["allocated_bytes.all.current"]


def max_memory_allocated(device=None) -> int:
    return memory_stats()["allocated_bytes.all.peak"]


def memory_reserved(device=None) -> int:
    return memory_stats()["reserved_bytes.all.current"]


def reset_peak_memory_stats(device=None) -> None:
    """Sets both peaks to the current values."""
    _C._cpu_reset_peak_memory_stats()


def get_cache_limit() -> int:
    """The most bytes the CPU cache keeps."""
    return _C._cpu_cache_limit()


def set_cache_limit(nbytes: int) -> None:
    """Bounds the CPU cache to ``nbytes`` (0 turns caching off); cached blocks over it are freed now."""
    if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
        raise ValueError(f"[set_cache_limit] expected a non-negative int number of bytes, but got {nbytes!r}")
    _C._cpu_set_cache_limit(nbytes)


# The runtime reads EMBER_CPU_CACHE_LIMIT once; a value it cannot parse falls back to the default,
# which is said here rather than passed over in silence.
_LIMIT = os.environ.get("EMBER_CPU_CACHE_LIMIT")
if _LIMIT is not None and not re.fullmatch(r"\s*\d+\s*[kKmMgG]?[bB]?\s*", _LIMIT):
    warnings.warn(f"EMBER_CPU_CACHE_LIMIT={_LIMIT!r} is not a number of bytes (such as 536870912, 512M or 2G); "
                  f"the CPU cache keeps its default limit of {get_cache_limit()} bytes", RuntimeWarning, stacklevel=2)
