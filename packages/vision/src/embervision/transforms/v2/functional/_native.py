"""The hand-off of image kernels to the native module ``embervision._transforms``.

A kernel runs natively for CPU images of dtype uint8, float32 or float64 that autograd does not
track; everything else (other dtypes and devices, tensors that require grad) keeps the Python path
on ember ops, which stays the reference the native kernels are tested against.
"""

from __future__ import annotations

import ember

_DTYPES = (ember.uint8, ember.float32, ember.float64)
_FLOATS = (ember.float32, ember.float64)

# False routes every kernel to the Python path (the tests compare the two, and time them).
enabled = True


def kernels():
    """The ``embervision._transforms`` module, checked against the installed core."""
    from embervision import _native as loader
    return loader.load("_transforms")


def applies(image: ember.Tensor, min_ndim: int = 3, dtypes: tuple = _DTYPES) -> bool:
    """Whether ``image`` takes the native path."""
    return (enabled and image.device.type == "cpu" and image.dtype in dtypes and image.ndim >= min_ndim
            and not (image.requires_grad and ember.is_grad_enabled()))


def threads() -> int:
    return max(1, ember.get_num_threads())


def call(name: str, image: ember.Tensor, *args) -> ember.Tensor:
    """``_transforms.<name>(image, *args)`` on a NumPy view of ``image``, as a tensor."""
    out = getattr(kernels(), name)(image.detach().contiguous().numpy(), *args, threads())
    return ember.from_numpy(out)
