"""Padding layers (torch.nn): ZeroPad, ConstantPad, ReflectionPad, ReplicationPad, CircularPad in
1, 2 and 3 dims, over F.pad. `padding` is an int (every side) or PyTorch's flat tuple
(left, right[, top, bottom[, front, back]])."""

from __future__ import annotations

from .. import functional as F
from .module import Module

__all__ = ["ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d",
           "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d"]


class _PadNd(Module):
    _n = 0
    _mode = "constant"

    def __init__(self, padding) -> None:
        super().__init__()
        sides = 2 * self._n
        padding = tuple(padding) if isinstance(padding, (tuple, list)) else (padding,) * sides
        if len(padding) != sides:
            raise ValueError(f"{type(self).__name__} expects padding as an int or a tuple of {sides} ints, but got "
                             f"{padding!r}")
        self.padding = padding

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float) -> None:
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pads the last 1 dim with zeros."""

    _n = 1


class ZeroPad2d(_ZeroPadNd):
    """Pads the last 2 dims with zeros."""

    _n = 2


class ZeroPad3d(_ZeroPadNd):
    """Pads the last 3 dims with zeros."""

    _n = 3


class ConstantPad1d(_ConstantPadNd):
    """Pads the last 1 dim with a constant value."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with a constant value."""

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with a constant value."""

    _n = 3


class ReflectionPad1d(_PadNd):
    """Pads the last 1 dim with the input's reflection about its edges."""

    _n = 1
    _mode = "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last 2 dims with the input's reflection about its edges."""

    _n = 2
    _mode = "reflect"


class ReflectionPad3d(_PadNd):
    """Pads the last 3 dims with the input's reflection about its edges."""

    _n = 3
    _mode = "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last 1 dim by repeating the edge values."""

    _n = 1
    _mode = "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last 2 dims by repeating the edge values."""

    _n = 2
    _mode = "replicate"


class ReplicationPad3d(_PadNd):
    """Pads the last 3 dims by repeating the edge values."""

    _n = 3
    _mode = "replicate"


class CircularPad1d(_PadNd):
    """Pads the last 1 dim by wrapping the input around."""

    _n = 1
    _mode = "circular"


class CircularPad2d(_PadNd):
    """Pads the last 2 dims by wrapping the input around."""

    _n = 2
    _mode = "circular"


class CircularPad3d(_PadNd):
    """Pads the last 3 dims by wrapping the input around."""

    _n = 3
    _mode = "circular"
