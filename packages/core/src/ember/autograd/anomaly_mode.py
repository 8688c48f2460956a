"""Anomaly detection (torch.autograd.detect_anomaly / set_detect_anomaly). While on, every backward
node records the Python stack of the forward call that created it; an error raised in a node's
backward names that stack, and (with check_nan) a node returning NaN raises
"Function 'XBackward0' returned nan values in its 0th output." It slows everything down: use it
to debug. Process-wide, as in PyTorch."""

from __future__ import annotations

import functools

from .. import _C


class detect_anomaly:
    """Context manager and decorator that switches anomaly detection on."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self):
        self._prev = (_C._is_anomaly_enabled(), _C._is_anomaly_check_nan_enabled())
        _C._set_anomaly_enabled(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(*self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


class set_detect_anomaly:
    """set_detect_anomaly(mode, check_nan=True): switches detection now, or for a `with` block."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        self._prev = (_C._is_anomaly_enabled(), _C._is_anomaly_check_nan_enabled())
        _C._set_anomaly_enabled(bool(mode), check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _C._set_anomaly_enabled(*self._prev)
        return False


def is_anomaly_enabled() -> bool:
    return _C._is_anomaly_enabled()


def is_anomaly_check_nan_enabled() -> bool:
    return _C._is_anomaly_check_nan_enabled()
