"""Random pipes: Shuffler, InBatchShuffler, SampleMultiplexer, RandomSplitter.

Each owns a ``random.Random`` and never touches the global ``random`` state. ``set_seed(seed)``
takes effect at the start of the next iteration; DataLoader2 and the DataLoader call it every
epoch (Note [shared and local seeds] in ``emberdata.datapipes.utils``).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any, TypeVar

from emberdata.datapipes._base import DataChunk, IterDataPipe, functional_datapipe
from emberdata.datapipes.iter._grouping import _check_int

T = TypeVar("T")


class _Seeded:
    """A generator that is reseeded at the start of the next iteration after ``set_seed``, and
    otherwise continues its stream (so an unseeded pipe gets a new order every epoch)."""

    _rng: random.Random
    _seed: int | None

    def set_seed(self, seed: int) -> Any:
        self._seed = seed
        return self

    def _start_epoch(self) -> random.Random:
        if self._seed is not None:
            self._rng.seed(self._seed)
            self._seed = None
        return self._rng


@functional_datapipe("shuffle")
class Shuffler(_Seeded, IterDataPipe[T]):
    """Shuffles with a buffer (functional name: ``shuffle``).

    The buffer is filled with the first ``buffer_size`` items; after that each new item
    replaces a randomly chosen buffered one, which is yielded. When the source ends, the
    remaining buffer comes out in random order. ``buffer_size=1`` does not shuffle; a buffer at
    least as long as the source shuffles uniformly. ``unbatch_level`` unbatches the source first
    (as ``.unbatch(unbatch_level)``).

    ``set_seed(seed)`` reseeds at the start of the next iteration only; without a new seed, the
    next iteration continues the generator's stream and so gets a new order.
    ``set_shuffle(False)`` passes items through unchanged.
    """

    def __init__(
        self, datapipe: IterDataPipe[T], *, buffer_size: int = 10000, unbatch_level: int = 0
    ) -> None:
        _check_int(self, "buffer_size", buffer_size, 1)
        _check_int(self, "unbatch_level", unbatch_level, -1)
        if unbatch_level != 0:
            from emberdata.datapipes.iter._grouping import UnBatcher

            datapipe = UnBatcher(datapipe, unbatch_level=unbatch_level)
        self.datapipe = datapipe
        self.buffer_size = buffer_size
        self.unbatch_level = unbatch_level
        self._enabled = True
        self._seed: int | None = None
        self._rng = random.Random()

    def set_shuffle(self, shuffle: bool = True) -> Shuffler[T]:
        self._enabled = shuffle
        return self

    def __iter__(self) -> Iterator[T]:
        if not self._enabled:
            return iter(self.datapipe)
        return self._shuffled(self._start_epoch())

    def _shuffled(self, rng: random.Random) -> Iterator[T]:
        source = iter(self.datapipe)
        buffer = list(itertools.islice(source, self.buffer_size))
        size = len(buffer)
        if size == self.buffer_size:
            # rand() * size picks uniformly up to a bias below size / 2**53; randint costs 3x.
            rand = rng.random
            for item in source:
                idx = int(rand() * size)
                yield buffer[idx]
                buffer[idx] = item
        # Draining by popping uniform picks is a uniform permutation: shuffle once instead.
        rng.shuffle(buffer)
        yield from buffer

    def __len__(self) -> int:
        return self._source_len(self.datapipe)


@functional_datapipe("in_batch_shuffle")
class InBatchShuffler(_Seeded, IterDataPipe[list[T]]):
    """Shuffles the items inside each batch (functional name: ``in_batch_shuffle``); the batches
    keep their order.

    >>> dp = IterableWrapper(range(6)).batch(3).in_batch_shuffle().set_seed(0)
    >>> sorted(map(sorted, dp))
    [[0, 1, 2], [3, 4, 5]]
    """

    def __init__(self, datapipe: IterDataPipe[list[T]]) -> None:
        self.datapipe = datapipe
        self._enabled = True
        self._seed: int | None = None
        self._rng = random.Random()

    def set_shuffle(self, shuffle: bool = True) -> InBatchShuffler[T]:
        self._enabled = shuffle
        return self

    def __iter__(self) -> Iterator[list[T]]:
        if not self._enabled:
            yield from self.datapipe
            return
        rng = self._start_epoch()
        for batch in self.datapipe:
            shuffled = list(batch)
            rng.shuffle(shuffled)
            yield DataChunk(shuffled) if isinstance(batch, DataChunk) else shuffled

    def __len__(self) -> int:
        return self._source_len(self.datapipe)


class SampleMultiplexer(_Seeded, IterDataPipe[Any]):
    """Yields items drawn from several pipes at random, each with probability proportional to
    its weight; an exhausted pipe drops out and the rest are renormalized.

    Args:
        pipes_to_weights_dict: ``{datapipe: weight}`` with positive weights
        seed: seeds the generator once, at construction (``set_seed`` reseeds per epoch)

    >>> a, b = IterableWrapper([0] * 3), IterableWrapper([1] * 3)
    >>> sorted(SampleMultiplexer({a: 0.5, b: 0.5}, seed=0))
    [0, 0, 0, 1, 1, 1]
    """

    def __init__(
        self, pipes_to_weights_dict: dict[IterDataPipe[Any], float], seed: int | None = None
    ) -> None:
        if not isinstance(pipes_to_weights_dict, dict) or not pipes_to_weights_dict:
            raise ValueError(
                "SampleMultiplexer expected a non-empty dict of {IterDataPipe: weight}, but got "
                f"{pipes_to_weights_dict!r}"
            )
        for dp, weight in pipes_to_weights_dict.items():
            if not isinstance(dp, IterDataPipe):
                raise TypeError(
                    f"SampleMultiplexer expected IterDataPipe keys, but got {type(dp).__name__}"
                )
            if isinstance(weight, bool) or not isinstance(weight, (int, float)) or weight <= 0:
                raise ValueError(f"Expecting a positive and non-zero weight, got {weight!r}")
        self.pipes_and_weights = list(pipes_to_weights_dict.items())
        self._seed: int | None = None
        self._rng = random.Random(seed)

    def source_datapipes(self) -> tuple[IterDataPipe[Any], ...]:
        return tuple(dp for dp, _ in self.pipes_and_weights)

    def __iter__(self) -> Iterator[Any]:
        rng = self._start_epoch()
        active = [(iter(dp), weight) for dp, weight in self.pipes_and_weights]
        while active:
            (idx,) = rng.choices(range(len(active)), weights=[w for _, w in active])
            try:
                yield next(active[idx][0])
            except StopIteration:
                del active[idx]

    def __len__(self) -> int:
        return sum(self._source_len(dp) for dp, _ in self.pipes_and_weights)


def _split_counts(weights: dict[Any, int | float], total_length: int) -> dict[Any, int]:
    """Weights scaled to whole counts summing to ``total_length`` (largest remainders)."""
    total_weight = sum(weights.values())
    exact = {k: w * total_length / total_weight for k, w in weights.items()}
    counts = {k: int(v) for k, v in exact.items()}
    by_remainder = sorted(exact, key=lambda k: exact[k] - counts[k], reverse=True)
    for k in by_remainder[: total_length - sum(counts.values())]:
        counts[k] += 1
    return counts


class _RandomSplitterContainer(IterDataPipe[Any]):
    """The shared state of RandomSplitter's outputs: one generator replayed for each output."""

    def __init__(
        self, source_datapipe: IterDataPipe[Any], weights: dict[Any, Any], seed: int,
        total_length: int,
    ) -> None:
        self.source_datapipe = source_datapipe
        self.total_length = total_length
        self.counts = _split_counts(weights, total_length)
        self.keys = list(weights)
        self._seed = seed

    def override_seed(self, seed: int) -> None:
        self._seed = seed

    def split_of(self, target: Any) -> Iterator[Any]:
        # Drawing without replacement from the remaining counts gives every split its exact
        # count, and replaying one seeded generator gives every output the same assignment.
        rng = random.Random(self._seed)
        remaining = [self.counts[k] for k in self.keys]
        position = -1
        for position, item in enumerate(self.source_datapipe):
            if position >= self.total_length:
                raise ValueError(
                    f"RandomSplitter was told total_length={self.total_length}, but the source "
                    "yields more items"
                )
            (idx,) = rng.choices(range(len(self.keys)), weights=remaining)
            remaining[idx] -= 1
            if self.keys[idx] == target:
                yield item


class _SplitterIterator(IterDataPipe[Any]):
    def __init__(self, main_datapipe: _RandomSplitterContainer, target: Any) -> None:
        self.main_datapipe = main_datapipe
        self.target = target

    def __iter__(self) -> Iterator[Any]:
        return self.main_datapipe.split_of(self.target)

    def override_seed(self, seed: int) -> _SplitterIterator:
        """Change the split (for every output) from the next iteration on."""
        self.main_datapipe.override_seed(seed)
        return self

    def __len__(self) -> int:
        return self.main_datapipe.counts[self.target]


@functional_datapipe("random_split")
class RandomSplitter(IterDataPipe[Any]):
    """Splits a source at random into groups of sizes proportional to ``weights`` (functional
    name: ``random_split``). Returns one pipe per key of ``weights``, or the pipe of ``target``.

    Every iteration gives the same split (the split is part of the data, not of the epoch);
    ``override_seed(seed)`` on any output changes it. Each output reads the whole source.

    Args:
        source_datapipe: the pipe to split
        weights: ``{key: weight}``; counts are the weights scaled to ``total_length``, rounded
            so they sum to it exactly
        seed: seeds the split
        total_length: the source's length (default: ``len(source_datapipe)``)
        target: return only this key's pipe

    >>> train, valid = IterableWrapper(range(10)).random_split(
    ...     weights={"train": 0.8, "valid": 0.2}, seed=0)
    >>> len(list(train)), len(list(valid))
    (8, 2)
    """

    def __new__(  # type: ignore[misc]
        cls,
        source_datapipe: IterDataPipe[Any],
        weights: dict[Any, int | float],
        seed: int,
        total_length: int | None = None,
        target: Any = None,
    ) -> Any:
        if not isinstance(weights, dict) or not weights:
            raise ValueError(f"RandomSplitter expected a non-empty dict of weights, got {weights!r}")
        if any(isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0
               for w in weights.values()) or sum(weights.values()) <= 0:
            raise ValueError(
                f"RandomSplitter expected non-negative weights with a positive sum, got {weights!r}"
            )
        if total_length is None:
            try:
                total_length = len(source_datapipe)
            except TypeError:
                raise TypeError(
                    "RandomSplitter needs `total_length`, but it is unable to infer it from the "
                    f"`source_datapipe`: {source_datapipe!r}."
                ) from None
        _check_int(cls, "total_length", total_length, 0)
        container = _RandomSplitterContainer(source_datapipe, weights, seed, total_length)
        if target is None:
            return [_SplitterIterator(container, k) for k in weights]
        if target not in weights:
            raise KeyError(f"`target={target!r}` does not match any key in `weights`.")
        return _SplitterIterator(container, target)

