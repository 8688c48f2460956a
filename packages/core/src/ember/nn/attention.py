"""ember.nn.attention (torch.nn.attention): SDPBackend and the sdpa_kernel context manager that
chooses which scaled_dot_product_attention backends may run. On the CPU PyTorch has the math and
flash kernels, and Ember's one implementation stands for both (the same result); with only
backends the CPU lacks enabled (efficient, cuDNN, overrideable), attention raises, as PyTorch's."""

from __future__ import annotations

import contextlib
import enum

__all__ = ["SDPBackend", "sdpa_kernel"]


class SDPBackend(enum.IntEnum):
    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4

    __str__ = enum.Enum.__str__  # "SDPBackend.MATH", as PyTorch prints it


_ALL = frozenset(b for b in SDPBackend if b is not SDPBackend.ERROR)
_enabled: frozenset = _ALL
# The backends this CPU build can run (Ember's math implementation serves both).
_CPU_BACKENDS = frozenset({SDPBackend.MATH, SDPBackend.FLASH_ATTENTION})


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """Within the block, scaled_dot_product_attention may only use `backends` (one SDPBackend or
    a list of them)."""
    global _enabled
    chosen = [backends] if isinstance(backends, SDPBackend) else backends
    if not isinstance(chosen, (list, tuple)) or not all(isinstance(b, SDPBackend) for b in chosen):
        raise AssertionError(f"Backend must be an instance of SDPBackend or a list of SDPBackend instances, got "
                             f"{type(backends).__name__}")
    previous = _enabled
    _enabled = frozenset(chosen)
    try:
        yield
    finally:
        _enabled = previous


def _check_backend() -> None:
    """Raise unless an enabled backend can run on the CPU."""
    if not (_enabled & _CPU_BACKENDS):
        raise RuntimeError("No viable backend for scaled_dot_product_attention was found. This is likely due to "
                           "turning off both the math kernel and the fused kernels.")
