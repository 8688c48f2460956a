"""torch.quantized_max_pool1d/2d/3d: max pooling of a quantized tensor (its parameters kept). Apart
from ember/_quantized.py because they reach ember.nn.functional, which reaches back to _tensor."""

from __future__ import annotations

from . import _C
from .nn import functional as F


def _quantized_max_pool(n: int):
    pool_fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[n - 1]

    def pool(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        if _C._quantizer(input) is None:
            raise RuntimeError(f"quantized_max_pool{n}d expects a quantized input, but got {input.dtype}")
        return pool_fn(input, kernel_size, stride or None, padding, dilation, ceil_mode)

    pool.__name__ = pool.__qualname__ = f"quantized_max_pool{n}d"
    pool.__doc__ = f"torch.quantized_max_pool{n}d: max_pool{n}d of a quantized tensor (its parameters kept)."
    return pool


NAMES = {f"quantized_max_pool{n}d": _quantized_max_pool(n) for n in (1, 2, 3)}
