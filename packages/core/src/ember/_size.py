"""ember.Size: the type of a tensor's shape in PyTorch (torch.Size), a tuple of ints."""

from __future__ import annotations

import operator
from collections.abc import Iterable


class Size(tuple):
    """A tuple of dimension sizes. Indexing with a slice, ``+`` and ``*`` give a Size again, and
    ``numel()`` is the number of elements a tensor of this shape holds."""

    __slots__ = ()

    def __new__(cls, sizes: Iterable = ()) -> Size:
        items = []
        for i, item in enumerate(sizes):
            # As torch.Size: anything with __index__ (int, bool, NumPy and 0-dim integer tensors)
            # counts as an int; a float or a str is refused rather than truncated.
            try:
                items.append(operator.index(item))
            except TypeError:
                raise TypeError(f"ember.Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(item).__name__}')") from None
        return super().__new__(cls, items)

    def numel(self) -> int:
        """The number of elements of a tensor of this shape (1 for the empty shape)."""
        count = 1
        for n in self:
            count *= n
        return count

    def __getitem__(self, index):  # noqa: ANN001, ANN204 - int -> int, slice -> Size
        item = super().__getitem__(index)
        return tuple.__new__(Size, item) if isinstance(index, slice) else item

    def __add__(self, other: tuple) -> Size:
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to ember.Size")
        return Size(tuple.__add__(self, other))

    def __radd__(self, other: tuple) -> Size:
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, count: int) -> Size:
        if not hasattr(count, "__index__"):
            raise TypeError(f"can't multiply sequence by non-int of type '{type(count).__name__}'")
        return tuple.__new__(Size, tuple.__mul__(self, count))

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"ember.Size({list(self)})"

    __str__ = __repr__

    def __reduce__(self) -> tuple:
        return (Size, (tuple(self),))


Size.__module__ = "ember"
