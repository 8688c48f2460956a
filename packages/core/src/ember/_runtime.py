"""Process-wide switches of torch's top level: warn-always and the inter-op thread count."""

from __future__ import annotations

import os
import threading

_warn_always = False
_interop_threads: int | None = None  # None until set_num_interop_threads is called
_interop_lock = threading.Lock()


def set_warn_always(b: bool, /) -> None:
    """When True, warnings that PyTorch raises only once per process are raised every time.

    Ember's own warnings go through Python's ``warnings`` module, whose filters decide how often
    they show; the switch is kept so that code (and test helpers) that set and read it port.
    """
    global _warn_always
    _warn_always = bool(b)


def is_warn_always_enabled() -> bool:
    """Whether :func:`set_warn_always` was last given True."""
    return _warn_always


def get_num_interop_threads() -> int:
    """The number of threads for inter-op parallelism: the value given to
    :func:`set_num_interop_threads`, else one per hardware thread, as PyTorch's default."""
    return _interop_threads if _interop_threads is not None else (os.cpu_count() or 1)


def set_num_interop_threads(int: int, /) -> None:  # noqa: A002 - PyTorch's parameter name
    """Set the number of inter-op threads. As in PyTorch, it may be set once per process;
    a second call raises RuntimeError."""
    global _interop_threads
    if isinstance(int, bool) or not hasattr(int, "__index__"):
        raise RuntimeError(f"set_num_interop_threads expects an int, but got {type(int).__name__}")
    n = int.__index__()
    if n <= 0:
        raise RuntimeError("set_num_interop_threads expects a positive integer")
    with _interop_lock:
        if _interop_threads is not None:
            raise RuntimeError("Error: cannot set number of interop threads after parallel work has started "
                               "or set_num_interop_threads called")
        _interop_threads = n


def init_num_threads() -> None:
    """Initialise the intra-op thread count on the calling thread. PyTorch needs it on a new
    thread to copy :func:`set_num_threads`' value into the thread's OpenMP state; Ember keeps that
    count in one process-wide value every thread reads, so there is nothing to copy."""
