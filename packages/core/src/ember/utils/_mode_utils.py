"""``ember.utils._mode_utils``, as ``torch.utils._mode_utils``: ``no_dispatch()``, within which this
thread's ops run their kernels, seen by neither dispatch modes nor ``__torch_dispatch__``
subclasses; ``all_same_mode(modes)``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from .._python_tensor import DisableTorchDispatch

__all__ = ["no_dispatch", "all_same_mode"]


def all_same_mode(modes) -> bool:
    modes = list(modes)
    return all(mode == modes[0] for mode in modes)


@contextlib.contextmanager
def no_dispatch() -> Iterator[None]:
    with DisableTorchDispatch():
        yield
