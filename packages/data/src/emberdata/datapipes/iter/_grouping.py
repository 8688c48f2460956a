"""Grouping pipes: Batcher, UnBatcher, BucketBatcher, MaxTokenBucketizer, Grouper."""

from __future__ import annotations

import heapq
import itertools
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterator, Sized
from typing import Any, TypeVar

from emberdata.datapipes._base import DataChunk, IterDataPipe, _ArgumentError, functional_datapipe

T = TypeVar("T")


def _name(owner: object) -> str:
    return owner.__name__ if isinstance(owner, type) else type(owner).__name__


def _check_int(owner: object, name: str, value: object, minimum: int) -> None:
    """TypeError unless ``value`` is an int; ValueError (an AssertionError too, where torchdata
    asserted) unless it is at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{_name(owner)} expected an int {name}, but got {type(value).__name__} ({value!r})"
        )
    if value < minimum:
        bound = f"{name} > 0" if minimum == 1 else f"{name} >= {minimum}"
        raise _ArgumentError(f"{_name(owner)} expected {bound}, but got {value}")


def _check_callable(owner: object, name: str, fn: object) -> None:
    if not callable(fn):
        raise TypeError(
            f"{_name(owner)} expected a callable {name}, but got {type(fn).__name__} ({fn!r})"
        )


@functional_datapipe("batch")
class Batcher(IterDataPipe[list[T]]):
    """Groups consecutive items into batches of ``batch_size`` (functional name: ``batch``).

    The last batch is shorter when the length is not a multiple of ``batch_size``, or dropped
    when ``drop_last`` is True. Batches are ``wrapper_class`` instances (a list subclass,
    :class:`DataChunk`, by default).

    >>> list(IterableWrapper(range(7)).batch(3))
    [[0, 1, 2], [3, 4, 5], [6]]
    """

    def __init__(
        self,
        datapipe: IterDataPipe[T],
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

    def __iter__(self) -> Iterator[list[T]]:
        source, size, wrap = iter(self.datapipe), self.batch_size, self.wrapper_class
        # A list subclass is filled straight from the source (in C); others wrap a list.
        fill = wrap if isinstance(wrap, type) and issubclass(wrap, list) else None
        while True:
            batch = fill(itertools.islice(source, size)) if fill else list(
                itertools.islice(source, size))
            if len(batch) < size:
                if batch and not self.drop_last:
                    yield batch if fill else wrap(batch)
                return
            yield batch if fill else wrap(batch)

    def __len__(self) -> int:
        n = self._source_len(self.datapipe)
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size


@functional_datapipe("unbatch")
class UnBatcher(IterDataPipe[Any]):
    """Undoes batching (functional name: ``unbatch``): yields the items of each batch,
    ``unbatch_level`` levels deep; ``-1`` flattens every level of lists.

    >>> list(IterableWrapper([[[0, 1], [2]], [[3]]]).unbatch(unbatch_level=2))
    [0, 1, 2, 3]
    """

    def __init__(self, datapipe: IterDataPipe[Any], unbatch_level: int = 1) -> None:
        _check_int(self, "unbatch_level", unbatch_level, -1)
        self.datapipe = datapipe
        self.unbatch_level = unbatch_level

    def __iter__(self) -> Iterator[Any]:
        for element in self.datapipe:
            yield from self._dive(element, self.unbatch_level)

    def _dive(self, element: Any, level: int) -> Iterator[Any]:
        if level == -1:
            if isinstance(element, list):
                for item in element:
                    yield from self._dive(item, -1)
            else:
                yield element
        elif level == 0:
            yield element
        elif isinstance(element, list):
            for item in element:
                yield from self._dive(item, level - 1)
        else:
            raise IndexError(
                f"unbatch_level {self.unbatch_level} exceeds the depth of the DataPipe "
                f"(met a {type(element).__name__}: {element!r})"
            )


@functional_datapipe("bucketbatch")
class BucketBatcher(IterDataPipe[list[T]]):
    """Batches items that are close in order after an optional sort (functional name:
    ``bucketbatch``): padding-friendly batches of similar-length samples.

    Items are first shuffled in pools of ``batch_size * batch_num * bucket_num`` (unless a
    ``sort_key`` is given and ``bucket_num == 1``); then each bucket of
    ``batch_size * batch_num`` items is passed to ``sort_key`` (a function from a list of items
    to the same list, sorted) and cut into batches; finally the batches are shuffled across
    ``bucket_num`` buckets. ``use_in_batch_shuffle`` shuffles inside fixed pools
    (``in_batch_shuffle``) instead of with a running buffer (``shuffle``).

    >>> dp = IterableWrapper(range(10)).bucketbatch(batch_size=3, sort_key=sorted)
    >>> sorted(x for batch in dp for x in batch)
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    """

    def __init__(
        self,
        datapipe: IterDataPipe[T],
        batch_size: int,
        drop_last: bool = False,
        batch_num: int = 100,
        bucket_num: int = 1,
        sort_key: Callable[[list[T]], list[T]] | None = None,
        use_in_batch_shuffle: bool = True,
    ) -> None:
        _check_int(self, "batch_size", batch_size, 1)
        _check_int(self, "batch_num", batch_num, 1)
        _check_int(self, "bucket_num", bucket_num, 1)
        if sort_key is not None:
            _check_callable(self, "sort_key", sort_key)
        self.datapipe = datapipe
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.batch_num = batch_num
        self.bucket_num = bucket_num
        self.sort_key = sort_key
        self.use_in_batch_shuffle = use_in_batch_shuffle
        self._pipeline = self._compose()

    def _compose(self) -> IterDataPipe[list[T]]:
        # The stages are ordinary pipes, so their shufflers are seeded like any other.
        from emberdata.datapipes.iter._callable import Mapper
        from emberdata.datapipes.iter._combinatorics import InBatchShuffler, Shuffler

        bucket_size = self.batch_size * self.batch_num
        pool_size = bucket_size * self.bucket_num
        dp: IterDataPipe[Any] = self.datapipe
        if self.bucket_num > 1 or self.sort_key is None:
            if self.use_in_batch_shuffle:
                dp = UnBatcher(InBatchShuffler(Batcher(dp, pool_size)))
            else:
                dp = Shuffler(dp, buffer_size=pool_size)
        if self.sort_key is not None:
            dp = UnBatcher(Mapper(Batcher(dp, bucket_size), self.sort_key))
        dp = Batcher(dp, self.batch_size, drop_last=self.drop_last)
        if self.sort_key is not None:
            if self.use_in_batch_shuffle:
                dp = UnBatcher(InBatchShuffler(Batcher(dp, self.bucket_num)))
            else:
                dp = Shuffler(dp, buffer_size=bucket_size)
        return dp

    def source_datapipes(self) -> tuple[IterDataPipe[Any], ...]:
        return (self._pipeline,)

    def __iter__(self) -> Iterator[list[T]]:
        return iter(self._pipeline)

    def __len__(self) -> int:
        n = self._source_len(self.datapipe)
        if self.drop_last:
            return n // self.batch_size
        return (n + self.batch_size - 1) // self.batch_size


def _default_len_fn(token: Sized) -> int:
    return len(token)


@functional_datapipe("max_token_bucketize")
class MaxTokenBucketizer(IterDataPipe[list[T]]):
    """Batches items of similar length so each batch holds at most ``max_token_count`` tokens
    (functional name: ``max_token_bucketize``).

    Items pass through a min-heap of ``buffer_size`` ordered by ``len_fn``; the shortest leave
    first, and a batch closes when the next item would take it past ``max_token_count``. Items
    with a length outside ``[min_len, max_len]`` are dropped. With ``include_padding`` a batch
    counts ``longest * size`` tokens (what it holds after padding) instead of the sum.

    >>> list(IterableWrapper(["a", "bbb", "cc", "dddd"]).max_token_bucketize(5))
    [['a', 'cc'], ['bbb'], ['dddd']]
    """

    def __init__(
        self,
        datapipe: IterDataPipe[T],
        max_token_count: int,
        len_fn: Callable[[T], int] = _default_len_fn,
        min_len: int = 0,
        max_len: int | None = None,
        buffer_size: int = 1000,
        include_padding: bool = False,
    ) -> None:
        _check_int(self, "max_token_count", max_token_count, 1)
        _check_callable(self, "len_fn", len_fn)
        _check_int(self, "buffer_size", buffer_size, 1)
        if max_len is None:
            max_len = max_token_count
        _check_int(self, "min_len", min_len, 0)
        _check_int(self, "max_len", max_len, 0)
        if min_len > max_len:
            raise ValueError(
                f"MaxTokenBucketizer expected 0 <= min_len <= max_len, but got min_len={min_len} "
                f"and max_len={max_len}"
            )
        if max_len > max_token_count:
            raise ValueError(
                f"MaxTokenBucketizer expected max_token_count >= max_len, but got "
                f"max_token_count={max_token_count} and max_len={max_len}"
            )
        self.datapipe = datapipe
        self.max_token_count = max_token_count
        self.len_fn = len_fn
        self.min_len = min_len
        self.max_len = max_len
        self.buffer_size = buffer_size
        self.include_padding = include_padding

    def __iter__(self) -> Iterator[list[T]]:
        heap: list[tuple[int, int, T]] = []  # (length, arrival, item): stable among equals
        batch: DataChunk = DataChunk()
        tokens = longest = 0

        def add(length: int, item: T) -> DataChunk | None:
            nonlocal batch, tokens, longest
            if self.include_padding:
                grown = max(longest, length) * (len(batch) + 1)
            else:
                grown = tokens + length
            full = None
            if batch and grown > self.max_token_count:
                full, batch, tokens, longest = batch, DataChunk(), 0, 0
            batch.append(item)
            tokens += length
            longest = max(longest, length)
            return full

        for arrival, item in enumerate(self.datapipe):
            length = self.len_fn(item)
            if not self.min_len <= length <= self.max_len:
                continue
            heapq.heappush(heap, (length, arrival, item))
            if len(heap) >= self.buffer_size:
                length, _, smallest = heapq.heappop(heap)
                full = add(length, smallest)
                if full is not None:
                    yield full
        while heap:
            length, _, smallest = heapq.heappop(heap)
            full = add(length, smallest)
            if full is not None:
                yield full
        if batch:
            yield batch


@functional_datapipe("groupby")
class Grouper(IterDataPipe[Any]):
    """Groups items by ``group_key_fn(item)`` (functional name: ``groupby``).

    A group is yielded as soon as it holds ``group_size`` items. When ``buffer_size`` items are
    buffered, the largest group is yielded (or dropped, with ``drop_remaining``, if it is
    smaller than ``guaranteed_group_size``; without ``drop_remaining`` that raises
    RuntimeError). Whatever is left at the end is yielded group by group. With ``keep_key``
    each output is ``(key, group)``.

    >>> dp = IterableWrapper(range(7)).groupby(lambda x: x % 3, buffer_size=7)
    >>> list(dp)
    [[0, 3, 6], [1, 4], [2, 5]]
    """

    def __init__(
        self,
        datapipe: IterDataPipe[T],
        group_key_fn: Callable[[T], Hashable],
        *,
        keep_key: bool = False,
        buffer_size: int = 10000,
        group_size: int | None = None,
        guaranteed_group_size: int | None = None,
        drop_remaining: bool = False,
    ) -> None:
        _check_callable(self, "group_key_fn", group_key_fn)
        _check_int(self, "buffer_size", buffer_size, 1)
        guaranteed = None
        if group_size is not None:
            _check_int(self, "group_size", group_size, 1)
            if group_size > buffer_size:
                raise _ArgumentError(
                    f"Grouper expected group_size <= buffer_size, but got group_size={group_size} "
                    f"and buffer_size={buffer_size}"
                )
            guaranteed = group_size
        if guaranteed_group_size is not None:
            if group_size is None:
                raise _ArgumentError("Grouper expected group_size with guaranteed_group_size")
            _check_int(self, "guaranteed_group_size", guaranteed_group_size, 1)
            if guaranteed_group_size > group_size:
                raise _ArgumentError(
                    "Grouper expected guaranteed_group_size <= group_size, but got "
                    f"guaranteed_group_size={guaranteed_group_size} and group_size={group_size}"
                )
            guaranteed = guaranteed_group_size
        self.datapipe = datapipe
        self.group_key_fn = group_key_fn
        self.keep_key = keep_key
        self.max_buffer_size = buffer_size
        self.group_size = group_size
        self.guaranteed_group_size = guaranteed
        self.drop_remaining = drop_remaining

    def _out(self, key: Hashable, group: list[T]) -> Any:
        return (key, DataChunk(group)) if self.keep_key else DataChunk(group)

    def __iter__(self) -> Iterator[Any]:
        groups: defaultdict[Hashable, list[T]] = defaultdict(list)
        buffered = 0
        for item in self.datapipe:
            key = self.group_key_fn(item)
            groups[key].append(item)
            buffered += 1
            if self.group_size is not None and len(groups[key]) == self.group_size:
                buffered -= self.group_size
                yield self._out(key, groups.pop(key))
            if buffered == self.max_buffer_size:
                biggest = max(groups, key=lambda k: len(groups[k]))
                group = groups.pop(biggest)
                buffered -= len(group)
                if self.guaranteed_group_size is None or len(group) >= self.guaranteed_group_size:
                    yield self._out(biggest, group)
                elif not self.drop_remaining:
                    raise RuntimeError(
                        f"Failed to group items: the buffer of {self.max_buffer_size} is full and "
                        f"its largest group ({biggest!r}, {len(group)} items) is smaller than "
                        f"guaranteed_group_size={self.guaranteed_group_size}"
                    )
        for key in list(groups):
            yield self._out(key, groups.pop(key))
