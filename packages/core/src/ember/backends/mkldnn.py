"""ember.backends.mkldnn (torch.backends.mkldnn): oneDNN's switches. Ember does not link oneDNN
(its CPU kernels are its own and OpenBLAS), so is_available() is False and no kernel reads the
flags; they hold PyTorch's defaults so that scripts setting them run and read back what they set."""

from __future__ import annotations

import contextlib

__all__ = ["VERBOSE_OFF", "VERBOSE_ON", "VERBOSE_ON_CREATION", "deterministic", "enabled", "flags", "is_available",
           "verbose"]

VERBOSE_OFF = 0
VERBOSE_ON = 1
VERBOSE_ON_CREATION = 2

enabled = True
deterministic = False


def is_available() -> bool:
    """Whether oneDNN can be used: no, Ember does not link it."""
    return False


@contextlib.contextmanager
def flags(enabled: bool = False, deterministic: bool = False):  # noqa: A002 - PyTorch's names
    """Sets the flags for the duration (torch.backends.mkldnn.flags)."""
    module = globals()
    previous = (module["enabled"], module["deterministic"])
    module["enabled"], module["deterministic"] = enabled, deterministic
    try:
        yield
    finally:
        module["enabled"], module["deterministic"] = previous


class verbose:
    """oneDNN's verbose logging for the duration: VERBOSE_OFF does nothing; any other level raises,
    there being no oneDNN to log."""

    def __init__(self, level: int) -> None:
        self.level = level

    def __enter__(self) -> verbose:
        if self.level != VERBOSE_OFF:
            raise RuntimeError("oneDNN verbose mode: Ember does not link oneDNN (ember.backends.mkldnn.is_available() "
                               "is False)")
        return self

    def __exit__(self, *exc) -> bool:
        return False
