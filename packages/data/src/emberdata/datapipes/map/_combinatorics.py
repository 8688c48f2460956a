"""Shuffler over a MapDataPipe: an IterDataPipe that visits the indices in random order."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

from emberdata.datapipes._base import IterDataPipe, MapDataPipe
from emberdata.datapipes.iter._combinatorics import _Seeded

T = TypeVar("T")


class Shuffler(_Seeded, IterDataPipe[T]):
    """Yields ``datapipe[i]`` for ``i`` in ``indices`` (default ``range(len(datapipe))``) in a
    random order (functional name of MapDataPipe: ``shuffle``). Unlike the iterable Shuffler it
    needs no buffer: every permutation is equally likely.

    ``set_seed`` reseeds at the next iteration; otherwise each iteration continues the stream
    (a new order every epoch). ``set_shuffle(False)`` visits the indices in order.

    >>> sorted(SequenceWrapper(range(5)).shuffle())
    [0, 1, 2, 3, 4]
    """

    def __init__(self, datapipe: MapDataPipe[T], *, indices: Sequence[Any] | None = None) -> None:
        if not isinstance(datapipe, MapDataPipe):
            raise TypeError(
                f"Shuffler (map) expected a MapDataPipe, but got {type(datapipe).__name__}"
            )
        self.datapipe = datapipe
        self.indices = list(range(len(datapipe))) if indices is None else list(indices)
        self._enabled = True
        self._seed: int | None = None
        self._rng = random.Random()

    def set_shuffle(self, shuffle: bool = True) -> Shuffler[T]:
        self._enabled = shuffle
        return self

    def __iter__(self) -> Iterator[T]:
        order = list(self.indices)
        if self._enabled:
            self._start_epoch().shuffle(order)
        for i in order:
            yield self.datapipe[i]

    def __len__(self) -> int:
        return len(self.indices)


MapDataPipe.register_datapipe_as_function("shuffle", Shuffler)
