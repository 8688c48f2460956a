"""Type aliases for annotations (torch.types): what an Ember function accepts as a number, a
device, a file, a shape."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from . import Tensor
from ._C import Size
from ._C import device as _device_cls
from ._C import dtype as _dtype_cls

if TYPE_CHECKING:
    from typing import TypeAlias
else:
    TypeAlias = object

__all__ = ["BoolLikeType", "Device", "FileLike", "FloatLikeType", "IntLikeType", "Number", "Size", "Tensor"]

# Ember has no symbolic ints, so the "-like" types are the plain Python ones.
IntLikeType = int
FloatLikeType = float
BoolLikeType = bool
Number = int | float | bool
# A device as functions accept it: a device, its name ("cpu", "cpu:0"), an index, or None.
Device = _device_cls | str | int | None
FileLike = str | os.PathLike | IO[bytes]

# The private spellings torch's own signatures use.
_TensorOrTensors = Tensor | Sequence[Tensor]
_int = int
_float = float
_bool = bool
_complex = complex
_dtype = _dtype_cls
_device = _device_cls
_size = Size | list[int] | tuple[int, ...]
