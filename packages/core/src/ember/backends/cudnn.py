"""ember.backends.cudnn (torch.backends.cudnn): cuDNN's switches, with PyTorch's defaults.

Ember does not use cuDNN, so no kernel reads these; they are kept so that scripts which set them
(`cudnn.benchmark = True`, `cudnn.deterministic = True`) run, and read back what was set. For
reproducibility on Ember use `ember.use_deterministic_algorithms` - the CPU kernels are
deterministic in any case (Note [deterministic parallelism] in native/include/ember/parallel.h).
"""

from __future__ import annotations

import contextlib

__all__ = ["allow_tf32", "benchmark", "benchmark_limit", "deterministic", "enabled", "flags", "is_acceptable",
           "is_available", "version"]

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """Whether cuDNN can be used: no, Ember does not link it."""
    return False


def version():
    """cuDNN's version: None, as PyTorch reports without cuDNN."""
    return None


def is_acceptable(tensor) -> bool:
    """Whether cuDNN would take this tensor: never without cuDNN."""
    return False


@contextlib.contextmanager
def flags(enabled: bool = False, benchmark: bool = False, benchmark_limit: int = 10, deterministic: bool = False,
          allow_tf32: bool = True):
    """Sets the flags for the duration of a block, then restores them."""
    names = ("enabled", "benchmark", "benchmark_limit", "deterministic", "allow_tf32")
    module = globals()
    saved = {name: module[name] for name in names}
    module.update(zip(names, (enabled, benchmark, benchmark_limit, deterministic, allow_tf32), strict=True))
    try:
        yield
    finally:
        module.update(saved)
