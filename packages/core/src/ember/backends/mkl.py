"""ember.backends.mkl (torch.backends.mkl): Intel MKL. Ember's BLAS and LAPACK are OpenBLAS's
(Note [BLAS provider]); MKL is not linked, so is_available() is False."""

from __future__ import annotations

__all__ = ["VERBOSE_OFF", "VERBOSE_ON", "is_available", "verbose"]

VERBOSE_OFF = 0
VERBOSE_ON = 1


def is_available() -> bool:
    """Whether MKL can be used: no, Ember links OpenBLAS instead."""
    return False


class verbose:
    """MKL's verbose logging for the duration: VERBOSE_OFF does nothing; VERBOSE_ON raises, there
    being no MKL to log."""

    def __init__(self, enable: int) -> None:
        self.enable = enable

    def __enter__(self) -> verbose:
        if self.enable != VERBOSE_OFF:
            raise RuntimeError("MKL verbose mode: Ember does not link MKL (ember.backends.mkl.is_available() is False)")
        return self

    def __exit__(self, *exc) -> bool:
        return False
