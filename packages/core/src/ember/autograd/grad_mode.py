"""Grad modes: no_grad, enable_grad, set_grad_enabled and is_grad_enabled (the recording switch
lives in C++), and ember.inference_mode (torch.inference_mode): no_grad, plus tensors made inside are inference
tensors, which Ember never tracks. Outside inference mode they cannot be written in place, saved
for backward or made to require grad (each raises PyTorch's error); clone() one to get a normal
tensor. The mode and the flag live in C++ (ember::InferenceMode). Also the thread-local switches
set_multithreading_enabled, enforce_grad_layout_policy and _force_original_view_tracking."""

from __future__ import annotations

import functools
import threading

from .. import _C


class _GradModeContext:
    """A context manager that is also a decorator (as torch's grad-mode classes are)."""

    mode: bool

    def __enter__(self):
        self._prev = _C._is_grad_enabled()
        _C._set_grad_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = _C._is_grad_enabled()
            _C._set_grad_enabled(mode)
            try:
                return fn(*args, **kwargs)
            finally:
                _C._set_grad_enabled(prev)
        return wrapper


class no_grad(_GradModeContext):
    """Ops inside record no graph (their results do not require grad)."""

    mode = False


class enable_grad(_GradModeContext):
    mode = True


class set_grad_enabled(_GradModeContext):
    """set_grad_enabled(False) switches recording off now, or for a `with` block, or (as a
    decorator) while a function runs."""

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._prev = _C._is_grad_enabled()
        _C._set_grad_enabled(self.mode)

    def __enter__(self):
        return self

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)  # used as a decorator: only while fn runs
        return super().__call__(fn)


def is_grad_enabled() -> bool:
    return _C._is_grad_enabled()


class inference_mode:
    """Context manager and decorator (with or without parentheses); inference_mode(False) turns
    the mode off inside an enclosing one. Thread-local, as grad mode is."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):  # bare @inference_mode
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self.mode = bool(mode)

    def __enter__(self):
        self._prev = (_C._set_inference_mode(self.mode), _C._is_grad_enabled())
        if self.mode:
            _C._set_grad_enabled(False)
        return self

    def __exit__(self, *exc):
        inference, grad = self._prev
        _C._set_inference_mode(inference)
        _C._set_grad_enabled(grad)
        return False

    def __call__(self, fn):
        mode = self.mode

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(mode):
                return fn(*args, **kwargs)
        return wrapper

    def clone(self) -> inference_mode:
        return inference_mode(self.mode)


def is_inference_mode_enabled() -> bool:
    return _C._is_inference_mode_enabled()


# torch.autograd.set_multithreading_enabled: with accelerators, PyTorch runs a backward on
# per-device worker threads unless this thread-local mode is off. Ember's engine has no device
# threads and runs every backward on the calling thread (what PyTorch does on CPU either way), so
# the mode changes nothing in how a backward runs; it is kept, per thread, for code that sets and
# reads it.
_multithreading = threading.local()


def is_multithreading_enabled() -> bool:
    """Whether this thread's multithreaded-backward mode is on (True by default)."""
    return getattr(_multithreading, "mode", True)


class _ThreadSwitch:
    """A thread-local on/off switch set now (a function call); as a context manager the previous
    setting comes back on exit, and as a decorator it applies only while the function runs.
    Subclasses give the switch's reader and writer."""

    @staticmethod
    def _get() -> bool:
        raise NotImplementedError

    @staticmethod
    def _set(mode: bool) -> None:
        raise NotImplementedError

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self.prev = self._get()
        self._set(self.mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> bool:
        self._set(self.prev)
        return False

    def __call__(self, fn):
        self._set(self.prev)  # as a decorator it applies only while fn runs

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)(self.mode):
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return type(self)(self.mode)


def _set_multithreading(mode: bool) -> None:
    _multithreading.mode = mode


class set_multithreading_enabled(_ThreadSwitch):
    """Sets this thread's multithreaded-backward mode (see above)."""

    _get = staticmethod(is_multithreading_enabled)
    _set = staticmethod(_set_multithreading)


def is_view_replay_enabled() -> bool:
    """Whether views made now record their view ops for replay (Note [view replay] in
    ember/autograd.h; thread-local, off by default)."""
    return _C._is_view_replay_enabled()


class _force_original_view_tracking(_ThreadSwitch):
    """torch.autograd._force_original_view_tracking(mode): while on, a view records the view ops
    that made it, and when it must be regenerated (its memory was written in place through another
    alias, or it was written itself) those ops are replayed on its base instead of an as_strided
    of the base: its grad_fn is then the last view op's backward (TransposeBackward0, ...), not
    AsStridedBackward0, and a view_as_real / view_as_complex view can be regenerated. Set now;
    a context manager restores the previous mode on exit, a decorator applies it while the
    function runs. Thread-local."""

    _get = staticmethod(is_view_replay_enabled)
    _set = staticmethod(_C._set_view_replay_enabled)


class enforce_grad_layout_policy(_ThreadSwitch):
    """torch.autograd.enforce_grad_layout_policy: whether a leaf's first gradient is made to follow
    the leaf's layout (on, the default) or, off, is kept as .grad however it is laid out when
    nothing else holds it, saving the copy (Note [stolen gradient] in the engine). A gradient that
    must be copied is still copied into the leaf's layout. Thread-local."""

    _get = staticmethod(_C._is_grad_layout_enforcement_enabled)
    _set = staticmethod(_C._set_grad_layout_enforcement_enabled)

    def __init__(self, enable: bool = True) -> None:
        super().__init__(enable)
