"""ember.inference_mode (torch.inference_mode): no_grad, plus tensors made inside are inference
tensors, which Ember never tracks. Outside inference mode they cannot be written in place, saved
for backward or made to require grad (each raises PyTorch's error); clone() one to get a normal
tensor. The mode and the flag live in C++ (ember::InferenceMode)."""

from __future__ import annotations

import functools

from .. import _C


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
