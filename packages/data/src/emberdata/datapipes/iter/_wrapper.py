from __future__ import annotations

import copy
import warnings
from collections.abc import Iterable, Iterator, Sized
from typing import TypeVar

from emberdata.datapipes._base import IterDataPipe

T = TypeVar("T")


class IterableWrapper(IterDataPipe[T]):
    """Wraps an iterable object to create an IterDataPipe.

    Args:
        iterable: the iterable to wrap
        deepcopy: deep-copy ``iterable`` at the start of every iteration, so in-place changes
            made downstream never leak into the next epoch. When the object cannot be
            deep-copied, a warning is issued and the object itself is iterated.

    >>> list(IterableWrapper(range(4)))
    [0, 1, 2, 3]
    """

    def __init__(self, iterable: Iterable[T], deepcopy: bool = True) -> None:
        self.iterable = iterable
        self.deepcopy = deepcopy

    def __iter__(self) -> Iterator[T]:
        source = self.iterable
        if self.deepcopy:
            try:
                source = copy.deepcopy(self.iterable)
            except TypeError:
                warnings.warn(
                    "The input iterable can not be deepcopied, please be aware of in-place "
                    "modification would affect source data.",
                    stacklevel=2,
                )
        return iter(source)

    def __len__(self) -> int:
        if isinstance(self.iterable, Sized):
            return len(self.iterable)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")
