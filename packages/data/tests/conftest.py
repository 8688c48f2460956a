"""Shared fixtures."""

import signal
from contextlib import contextmanager

import pytest


@contextmanager
def _deadline(seconds):
    """Fail instead of hanging: a block that takes longer than `seconds` raises TimeoutError."""

    def expire(signum, frame):
        raise TimeoutError(f"the test did not finish within {seconds} s (a hang?)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def deadline():
    return _deadline
