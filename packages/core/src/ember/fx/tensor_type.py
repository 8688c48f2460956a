"""Gradual types for FX graphs (torch.fx.tensor_type): ``TensorType`` annotates a tensor with its
dimensions, each an int or ``Dyn`` (unknown), and ``Dyn`` alone stands for any type.

``is_consistent(t1, t2)`` (``~``) holds when the two types could describe the same value: equal
types, ``Dyn`` on either side, or TensorTypes of one rank whose dimensions are pairwise
consistent. ``is_more_precise(t1, t2)`` (``<=``) holds when t1 says at least what t2 says: t2 is
``Dyn``, the types are equal, or TensorTypes of one rank are so dimension by dimension.

Where Ember differs from PyTorch: PyTorch also counts its unification logic variables
(``torch.fx.experimental.unification.Var``) as consistent with anything; Ember has no unification
module, so there are none to count.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["Dyn", "TensorType", "is_consistent", "is_more_precise"]


class TensorType:
    """The type of a tensor of known rank: ``TensorType((1, 2, Dyn))`` or ``TensorType[1, 2, Dyn]``,
    usable as an annotation (``def forward(self, x: TensorType((2, Dyn)))``)."""

    def __init__(self, dim: Sequence[Any]) -> None:
        self.__origin__ = TensorType
        self.__args__ = dim

    @property
    def dims(self) -> Sequence[Any]:
        """The dimensions, as given."""
        return self.__args__

    def __repr__(self) -> str:
        return f"TensorType[{self.dims}]"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.__class__) and list(self.dims) == list(other.dims)

    @staticmethod
    def __class_getitem__(*args: Any) -> TensorType:
        if len(args) == 1 and isinstance(args[0], tuple):
            args = args[0]
        return TensorType(tuple(args))


class _DynType:
    """The absence of type information (``Dyn``): any type, or a dimension of any size."""

    def __init__(self) -> None:
        self.__name__ = "_DynType"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, self.__class__)

    def __str__(self) -> str:
        return "Dyn"

    __repr__ = __str__


Dyn = _DynType()


def is_consistent(t1: Any, t2: Any) -> bool:
    """``t1 ~ t2``: reflexive and symmetric, not transitive. ``Dyn ~ TensorType((1, 2))``,
    ``int ~ Dyn``, ``TensorType((1, Dyn)) ~ TensorType((1, 2))``; ``int ~ float`` does not hold."""
    if t1 == t2 or t1 == Dyn or t2 == Dyn:
        return True
    if isinstance(t1, TensorType) and isinstance(t2, TensorType):
        return len(t1.dims) == len(t2.dims) and all(is_consistent(a, b) for a, b in zip(t1.dims, t2.dims, strict=True))
    return False


def is_more_precise(t1: Any, t2: Any) -> bool:
    """``t1 <= t2``: reflexive and transitive. Everything is more precise than ``Dyn``;
    ``TensorType((1, 2)) <= TensorType((1, Dyn))`` but not the other way round."""
    if t1 == t2 or isinstance(t2, _DynType):
        return True
    if isinstance(t1, TensorType) and isinstance(t2, TensorType):
        return len(t1.dims) == len(t2.dims) and all(is_more_precise(a, b) for a, b in zip(t1.dims, t2.dims, strict=True))
    return False
