"""Forward-mode automatic differentiation (torch.autograd.forward_ad's API).

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, tangent)
        y = f(x)
        primal_out, jvp = forward_ad.unpack_dual(y)

Inside a dual level, every differentiable op called on a tensor that carries a tangent computes
its result's tangent with the op's JVP formula (native/ops/declarations.py, next to its VJP). As
in PyTorch, one level is active at a time and exiting it drops every tangent it made.
"""

from __future__ import annotations

from typing import NamedTuple

from .. import _C

_current_level = -1  # PyTorch's level index: 0 inside the (only) active level
_engine_level = 0  # the C++ engine's id of the active level


def enter_dual_level() -> int:
    """Starts a dual level and returns its index (prefer the dual_level context manager)."""
    global _current_level, _engine_level
    _engine_level = _C._enter_dual_level()  # raises if one is active: levels do not nest
    _current_level += 1
    return _current_level


def exit_dual_level(*, level: int | None = None) -> None:
    """Ends the current dual level; tensors made in it lose their tangents."""
    global _current_level
    level = _current_level if level is None else level
    if level != _current_level or level < 0:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    _C._exit_dual_level(_engine_level)
    _current_level -= 1


def _check_level(level: int | None, what: str) -> None:
    if _current_level < 0:
        raise RuntimeError(f"{what} can only be used inside a dual level; use `with forward_ad.dual_level():`")
    if level is not None and level != _current_level:
        raise RuntimeError(f"{what}: level {level} is not the active dual level ({_current_level})")


def make_dual(tensor, tangent, *, level: int | None = None):
    """A view of `tensor` carrying `tangent` (same shape, dtype and device) at the active level."""
    if not isinstance(tensor, _C.Tensor) or not isinstance(tangent, _C.Tensor):
        raise TypeError(f"make_dual expects two Tensors, but got {type(tensor).__name__} and "
                        f"{type(tangent).__name__}")
    _check_level(level, "make_dual")
    return _C._make_dual(tensor, tangent)


class UnpackedDualTensor(NamedTuple):
    """What unpack_dual returns: the primal (a view without the tangent) and the tangent (or None)."""

    primal: object
    tangent: object


def unpack_dual(tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """(primal, tangent) of a dual tensor; the tangent is None when it has none at the level."""
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"unpack_dual expects a Tensor, but got {type(tensor).__name__}")
    if _current_level < 0 or (level is not None and level != _current_level):
        return UnpackedDualTensor(tensor, None)
    primal, tangent = _C._unpack_dual(tensor)
    return UnpackedDualTensor(primal, tangent)


class dual_level:
    """Context manager for a forward AD level: tangents made inside are dropped on exit."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"]
