"""The autocast policy of an op written in Python (a composite with no native declaration).

A native op declares its policy in native/ops/declarations.py and its generated entry point casts
(Note [autocast] in ember/autocast.h). A Python composite that PyTorch's CPU lists name (F.linear,
the losses, ...) declares the same policy with this decorator at its definition: the decorator
casts the floating tensor arguments through the same native casts (and cache), then runs the body
with autocast excluded, so the ops inside it are not cast a second time.
"""

from __future__ import annotations

import functools

from . import _C

__all__ = ["autocast_policy"]

_POLICIES = ("lower_precision_fp", "fp32", "promote")


def _cast_arguments(args: tuple, kwargs: dict, policy: str) -> tuple[tuple, dict]:
    # Tensors at the top level or inside a list/tuple argument, cast in one call so "promote"
    # sees them all.
    slots, found = [], []
    items = [(False, i, v) for i, v in enumerate(args)] + [(True, k, v) for k, v in kwargs.items()]
    for is_kw, key, value in items:
        if isinstance(value, _C.Tensor):
            slots.append((is_kw, key, None))
            found.append(value)
        elif isinstance(value, (list, tuple)):
            for j, elem in enumerate(value):
                if isinstance(elem, _C.Tensor):
                    slots.append((is_kw, key, j))
                    found.append(elem)
    if not found:
        return args, kwargs
    cast = _C._autocast_cast(found, policy)
    args, kwargs = list(args), dict(kwargs)
    for (is_kw, key, j), tensor in zip(slots, cast, strict=True):
        target = kwargs if is_kw else args
        if j is None:
            target[key] = tensor
        else:
            seq = list(target[key])
            seq[j] = tensor
            target[key] = type(target[key])(seq) if isinstance(target[key], tuple) else seq
    return tuple(args), kwargs


def autocast_policy(policy: str):
    """Decorates a Python op with an autocast policy: "lower_precision_fp", "fp32" or "promote"."""
    if policy not in _POLICIES:
        raise ValueError(f"autocast_policy: expected one of {_POLICIES}, but got {policy!r}")

    def wrap(fn):
        @functools.wraps(fn)
        def run(*args, **kwargs):
            # an out= call is not cast, as PyTorch's autocast leaves out= overloads alone
            if not _C._autocast_active() or kwargs.get("out") is not None:
                return fn(*args, **kwargs)
            args, kwargs = _cast_arguments(args, kwargs, policy)
            previous = _C._autocast_set_excluded(True)
            try:
                return fn(*args, **kwargs)
            finally:
                _C._autocast_set_excluded(previous)

        return run

    return wrap
