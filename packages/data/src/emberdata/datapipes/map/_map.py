"""Map-style pipes: SequenceWrapper, Mapper, Batcher, Concater, Zipper."""

from __future__ import annotations

import bisect
import copy
import itertools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from emberdata.datapipes._base import DataChunk, MapDataPipe, functional_datapipe
from emberdata.datapipes.iter._grouping import _check_callable, _check_int

T = TypeVar("T")


class SequenceWrapper(MapDataPipe[T]):
    """Wraps a sequence or mapping (anything with ``__getitem__`` and ``__len__``) as a
    MapDataPipe. With ``deepcopy`` it is deep-copied once, at construction, so later changes to
    the original do not show through.

    >>> dp = SequenceWrapper(range(10))
    >>> dp[3], len(dp)
    (3, 10)
    """

    def __init__(self, sequence: Any, deepcopy: bool = True) -> None:
        if not (hasattr(sequence, "__getitem__") and hasattr(sequence, "__len__")):
            raise TypeError(
                f"SequenceWrapper expected a sequence or mapping (with __getitem__ and __len__), "
                f"but got {type(sequence).__name__}"
            )
        if deepcopy:
            try:
                sequence = copy.deepcopy(sequence)
            except TypeError:
                warnings.warn(
                    "The input sequence can not be deepcopied, please be aware of in-place "
                    "modification would affect source data.",
                    stacklevel=2,
                )
        self.sequence = sequence

    def __getitem__(self, index: Any) -> T:
        return self.sequence[index]

    def __len__(self) -> int:
        return len(self.sequence)


@functional_datapipe("map")
class Mapper(MapDataPipe[Any]):
    """``dp.map(fn)[i]`` is ``fn(dp[i])`` (functional name: ``map``).

    >>> SequenceWrapper(range(5)).map(lambda x: x * 10)[2]
    20
    """

    def __init__(self, datapipe: MapDataPipe[Any], fn: Callable[[Any], Any]) -> None:
        _check_callable(self, "fn", fn)
        self.datapipe = datapipe
        self.fn = fn

    def __getitem__(self, index: Any) -> Any:
        return self.fn(self.datapipe[index])

    def __len__(self) -> int:
        return self._source_len(self.datapipe)


@functional_datapipe("batch")
class Batcher(MapDataPipe[Any]):
    """``dp.batch(n)[i]`` is the batch of items ``i*n .. i*n+n-1`` (functional name:
    ``batch``); the last batch is shorter unless ``drop_last``.

    >>> SequenceWrapper(range(7)).batch(3)[2]
    [6]
    """

    def __init__(
        self,
        datapipe: MapDataPipe[T],
        batch_size: int,
        drop_last: bool = False,
        wrapper_class: Callable[[list[T]], Any] = DataChunk,
    ) -> None:
        _check_int(self, "batch_size", batch_size, 1)
        _check_callable(self, "wrapper_class", wrapper_class)
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.wrapper_class = wrapper_class

    def __getitem__(self, index: int) -> Any:
        n = len(self)
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"Batcher indices must be integers, not {type(index).__name__}")
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError(f"Index {index} is out of bound for a Batcher of length {n}")
        start = index * self.batch_size
        stop = min(start + self.batch_size, self._source_len(self.datapipe))
        return self.wrapper_class([self.datapipe[i] for i in range(start, stop)])

    def __len__(self) -> int:
        n = self._source_len(self.datapipe)
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size


def _check_map_datapipes(pipe: str, datapipes: tuple[object, ...]) -> None:
    if not datapipes:
        raise ValueError(f"{pipe} expected at least one DataPipe, but got nothing")
    for position, dp in enumerate(datapipes):
        if not isinstance(dp, MapDataPipe):
            raise TypeError(
                f"{pipe} expected all inputs to be `MapDataPipe`, but input {position} is "
                f"{type(dp).__name__}"
            )


@functional_datapipe("concat")
class Concater(MapDataPipe[Any]):
    """Indexes several MapDataPipes one after another (functional name: ``concat``).

    >>> dp = SequenceWrapper(range(3)).concat(SequenceWrapper("ab"))
    >>> [dp[i] for i in range(len(dp))]
    [0, 1, 2, 'a', 'b']
    """

    def __init__(self, *datapipes: MapDataPipe[Any]) -> None:
        _check_map_datapipes(type(self).__name__, datapipes)
        self.datapipes = datapipes

    def __getitem__(self, index: int) -> Any:
        ends = list(itertools.accumulate(self._source_len(dp) for dp in self.datapipes))
        if isinstance(index, bool) or not isinstance(index, int):
            raise TypeError(f"Concater indices must be integers, not {type(index).__name__}")
        if index < 0:
            index += ends[-1]
        if not 0 <= index < ends[-1]:
            raise IndexError(f"Index {index} is out of range for a Concater of length {ends[-1]}")
        which = bisect.bisect_right(ends, index)
        start = ends[which - 1] if which else 0
        return self.datapipes[which][index - start]

    def __len__(self) -> int:
        return sum(self._source_len(dp) for dp in self.datapipes)


@functional_datapipe("zip")
class Zipper(MapDataPipe[tuple[Any, ...]]):
    """``dp.zip(other)[i]`` is ``(dp[i], other[i])`` (functional name: ``zip``); the length is
    the shortest input's.

    >>> SequenceWrapper(range(3)).zip(SequenceWrapper("abcd"))[1]
    (1, 'b')
    """

    def __init__(self, *datapipes: MapDataPipe[Any]) -> None:
        _check_map_datapipes(type(self).__name__, datapipes)
        self.datapipes = datapipes

    def __getitem__(self, index: Any) -> tuple[Any, ...]:
        return tuple(dp[index] for dp in self.datapipes)

    def __len__(self) -> int:
        return min(self._source_len(dp) for dp in self.datapipes)
