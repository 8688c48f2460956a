"""Pipes that combine or split streams: Concater, Zipper, Multiplexer, Forker, Demultiplexer,
IterKeyZipper, MapKeyZipper."""

from __future__ import annotations

import copy as copymodule
import warnings
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from typing import Any

from emberdata.datapipes._base import IterDataPipe, MapDataPipe, functional_datapipe
from emberdata.datapipes.iter._grouping import _check_callable, _check_int


def _check_datapipes(pipe: str, datapipes: tuple[object, ...]) -> None:
    if not datapipes:
        raise ValueError(f"{pipe} expected at least one DataPipe, but got nothing")
    for position, dp in enumerate(datapipes):
        if not isinstance(dp, IterDataPipe):
            raise TypeError(
                f"{pipe} expected all inputs to be `IterDataPipe`, but input {position} is "
                f"{type(dp).__name__} ({dp!r})"
            )


@functional_datapipe("zip")
class Zipper(IterDataPipe[tuple[Any, ...]]):
    """Yields tuples of one item from each input, stopping with the shortest (functional name:
    ``zip``).

    >>> list(IterableWrapper(range(3)).zip(IterableWrapper("ab")))
    [(0, 'a'), (1, 'b')]
    """

    def __init__(self, *datapipes: IterDataPipe[Any]) -> None:
        _check_datapipes(type(self).__name__, datapipes)
        self.datapipes = datapipes

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return zip(*self.datapipes, strict=False)

    def __len__(self) -> int:
        return min(self._source_len(dp) for dp in self.datapipes)


@functional_datapipe("concat")
class Concater(IterDataPipe[Any]):
    """Yields every item of each input in turn (functional name: ``concat``).

    >>> list(IterableWrapper(range(2)).concat(IterableWrapper("ab")))
    [0, 1, 'a', 'b']
    """

    def __init__(self, *datapipes: IterDataPipe[Any]) -> None:
        _check_datapipes(type(self).__name__, datapipes)
        self.datapipes = datapipes

    def __iter__(self) -> Iterator[Any]:
        for dp in self.datapipes:
            yield from dp

    def __len__(self) -> int:
        return sum(self._source_len(dp) for dp in self.datapipes)


@functional_datapipe("mux")
class Multiplexer(IterDataPipe[Any]):
    """Yields one item from each input in turn (functional name: ``mux``), stopping at the
    first round in which an input runs out; that round's items are dropped.

    >>> list(IterableWrapper([0, 1, 2]).mux(IterableWrapper([10, 11]), IterableWrapper("ab")))
    [0, 10, 'a', 1, 11, 'b']
    """

    def __init__(self, *datapipes: IterDataPipe[Any]) -> None:
        _check_datapipes(type(self).__name__, datapipes)
        self.datapipes = datapipes

    def __iter__(self) -> Iterator[Any]:
        for round_ in zip(*self.datapipes, strict=False):
            yield from round_

    def __len__(self) -> int:
        return min(self._source_len(dp) for dp in self.datapipes) * len(self.datapipes)


def _check_hub_args(cls: type, datapipe: object, num_instances: object, buffer_size: object) -> None:
    _check_datapipes(cls.__name__, (datapipe,))
    _check_int(cls, "num_instances", num_instances, 1)
    if isinstance(buffer_size, bool) or not isinstance(buffer_size, int):
        raise TypeError(
            f"{cls.__name__} expected an int buffer_size, but got {type(buffer_size).__name__} "
            f"({buffer_size!r})"
        )
    if buffer_size < 0:
        warnings.warn(
            f"{cls.__name__}: unlimited buffer size is set; the buffer may grow until memory "
            "runs out.",
            UserWarning,
            stacklevel=4,
        )


class _Hub(IterDataPipe[Any]):
    """Shared state of the outputs of one Forker or Demultiplexer.

    Note [child pipes and epochs]
    ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
    The children read one source iterator through buffers. An epoch starts when a child starts
    iterating and has already iterated in the current epoch (or no epoch is running): the hub
    then restarts the source and clears its buffers. Iterators of the other children that
    belong to the old epoch are invalidated and raise RuntimeError if used again, instead of
    silently reading from the new epoch.
    """

    public_name = "Forker"

    def __init__(self, datapipe: IterDataPipe[Any], num_instances: int, buffer_size: int) -> None:
        self.datapipe = datapipe
        self.num_instances = num_instances
        self.buffer_size = buffer_size
        self._epoch = 0
        self._started: set[int] = set()
        self._source: Iterator[Any] | None = None
        self._clear()

    def _clear(self) -> None:
        raise NotImplementedError

    def reset(self) -> None:
        self._epoch += 1
        self._started = set()
        self._source = None
        self._clear()

    def _join(self, instance_id: int) -> int:
        """Called when a child starts iterating; returns the epoch its iterator belongs to."""
        if self._source is None or instance_id in self._started:
            self.reset()
            self._source = iter(self.datapipe)
        self._started.add(instance_id)
        return self._epoch

    def _check_epoch(self, epoch: int) -> None:
        if epoch != self._epoch:
            raise RuntimeError(
                f"This iterator of a {self.public_name} output has been "
                "invalidated, because another output started a new iteration (epoch)"
            )

    def _overflow(self) -> BufferError:
        return BufferError(
            f"{self.public_name} buffer overflow, buffer size {self.buffer_size} "
            "is insufficient: one output is read much further than another"
        )

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_source"] = None  # a live iterator does not pickle; a copy starts a new epoch
        state["_started"] = set()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._clear()


class _ForkHub(_Hub):
    def __init__(
        self,
        datapipe: IterDataPipe[Any],
        num_instances: int,
        buffer_size: int,
        copy: str | None,
    ) -> None:
        self.copy = copy
        super().__init__(datapipe, num_instances, buffer_size)

    def _clear(self) -> None:
        self._buffer: deque[Any] = deque()
        self._offset = 0  # source position of _buffer[0]
        self._positions = [0] * self.num_instances
        self._done = False

    def _copy(self, item: Any) -> Any:
        if self.copy == "shallow":
            return copymodule.copy(item)
        if self.copy == "deep":
            return copymodule.deepcopy(item)
        return item

    def read(self, instance_id: int) -> Iterator[Any]:
        epoch = self._join(instance_id)
        while True:
            self._check_epoch(epoch)
            position = self._positions[instance_id]
            index = position - self._offset
            if index < len(self._buffer):
                item = self._buffer[index]
            else:
                if self._done:
                    return
                assert self._source is not None
                try:
                    item = next(self._source)
                except StopIteration:
                    self._done = True
                    return
                self._buffer.append(item)
                if 0 <= self.buffer_size < len(self._buffer):
                    raise self._overflow()
            self._positions[instance_id] = position + 1
            # Items every child has read leave the buffer.
            while self._buffer and min(self._positions) > self._offset:
                self._buffer.popleft()
                self._offset += 1
            yield self._copy(item)


class _ChildDataPipe(IterDataPipe[Any]):
    """Output ``instance_id`` of a Forker or Demultiplexer."""

    def __init__(self, main_datapipe: _Hub, instance_id: int) -> None:
        self.main_datapipe = main_datapipe
        self.instance_id = instance_id

    def __iter__(self) -> Iterator[Any]:
        return self.main_datapipe.read(self.instance_id)

    def __len__(self) -> int:
        if isinstance(self.main_datapipe, _ForkHub):
            return self._source_len(self.main_datapipe.datapipe)
        raise TypeError(f"{type(self).__name__} instance doesn't have valid length")

    def __repr__(self) -> str:
        return f"{self.main_datapipe.public_name}[{self.instance_id}]"


@functional_datapipe("fork")
class Forker(IterDataPipe[Any]):
    """Copies a stream into ``num_instances`` outputs (functional name: ``fork``).

    The outputs share one iteration of the source; items wait in a buffer until every output
    has read them, and reading one output more than ``buffer_size`` items ahead of another
    raises BufferError (``buffer_size=-1``: no limit). ``copy`` (``"shallow"`` or ``"deep"``)
    gives each output its own copy of every item. See Note [child pipes and epochs].

    >>> a, b = IterableWrapper(range(3)).fork(num_instances=2)
    >>> list(a), list(b)
    ([0, 1, 2], [0, 1, 2])
    """

    def __new__(  # type: ignore[misc]
        cls,
        datapipe: IterDataPipe[Any],
        num_instances: int,
        buffer_size: int = 1000,
        copy: str | None = None,
    ) -> list[_ChildDataPipe]:
        _check_hub_args(cls, datapipe, num_instances, buffer_size)
        if copy not in (None, "shallow", "deep"):
            raise ValueError(
                f"Unknown copy method `{copy}` requested, choose one of None, `shallow` or `deep`."
            )
        hub = _ForkHub(datapipe, num_instances, buffer_size, copy)
        return [_ChildDataPipe(hub, i) for i in range(num_instances)]


class _DemuxHub(_Hub):
    public_name = "Demultiplexer"

    def __init__(
        self,
        datapipe: IterDataPipe[Any],
        num_instances: int,
        classifier_fn: Callable[[Any], int | None],
        drop_none: bool,
        buffer_size: int,
    ) -> None:
        self.classifier_fn = classifier_fn
        self.drop_none = drop_none
        super().__init__(datapipe, num_instances, buffer_size)

    def _clear(self) -> None:
        self._queues: list[deque[Any]] = [deque() for _ in range(self.num_instances)]
        self._buffered = 0
        self._done = False

    def read(self, instance_id: int) -> Iterator[Any]:
        epoch = self._join(instance_id)
        while True:
            self._check_epoch(epoch)
            queue = self._queues[instance_id]
            if queue:
                self._buffered -= 1
                yield queue.popleft()
                continue
            if self._done:
                return
            assert self._source is not None
            try:
                item = next(self._source)
            except StopIteration:
                self._done = True
                return
            target = self.classifier_fn(item)
            if target is None and self.drop_none:
                continue
            if isinstance(target, bool) or not isinstance(target, int) or not (
                0 <= target < self.num_instances
            ):
                raise ValueError(
                    f"Output of the classification fn should be between 0 and "
                    f"{self.num_instances - 1}. {target!r} is returned."
                )
            if target == instance_id:
                yield item
            else:
                self._queues[target].append(item)
                self._buffered += 1
                if 0 <= self.buffer_size < self._buffered:
                    raise self._overflow()


@functional_datapipe("demux")
class Demultiplexer(IterDataPipe[Any]):
    """Splits a stream into ``num_instances`` outputs by ``classifier_fn(item)`` (functional
    name: ``demux``), which returns the output's index, or None to drop the item when
    ``drop_none`` is True.

    Items for other outputs wait in buffers; more than ``buffer_size`` waiting items raise
    BufferError (``-1``: no limit). See Note [child pipes and epochs].

    >>> even, odd = IterableWrapper(range(5)).demux(2, lambda x: x % 2)
    >>> list(even), list(odd)
    ([0, 2, 4], [1, 3])
    """

    def __new__(  # type: ignore[misc]
        cls,
        datapipe: IterDataPipe[Any],
        num_instances: int,
        classifier_fn: Callable[[Any], int | None],
        drop_none: bool = False,
        buffer_size: int = 1000,
    ) -> list[_ChildDataPipe]:
        _check_hub_args(cls, datapipe, num_instances, buffer_size)
        _check_callable(cls, "classifier_fn", classifier_fn)
        hub = _DemuxHub(datapipe, num_instances, classifier_fn, drop_none, buffer_size)
        return [_ChildDataPipe(hub, i) for i in range(num_instances)]


@functional_datapipe("zip_with_iter")
class IterKeyZipper(IterDataPipe[Any]):
    """Pairs each source item with the reference item of the same key (functional name:
    ``zip_with_iter``).

    Reference items are read ahead into a buffer until the key of the current source item
    turns up; each one is used once. A buffer of more than ``buffer_size`` unmatched reference
    items raises BufferError (None: no limit), and so does a key that never turns up.

    Args:
        source_datapipe: the driving pipe; the output has its length
        ref_datapipe: the reference pipe
        key_fn: the key of a source item
        ref_key_fn: the key of a reference item (default: ``key_fn``)
        keep_key: yield ``(key, merged)``
        buffer_size: the most reference items held while looking for a key
        merge_fn: ``merge_fn(item, ref_item)``; default ``(item, ref_item)``

    >>> names = IterableWrapper([(1, "a"), (2, "b")])
    >>> ages = IterableWrapper([(2, 30), (1, 20)])
    >>> list(names.zip_with_iter(ages, key_fn=lambda x: x[0]))
    [((1, 'a'), (1, 20)), ((2, 'b'), (2, 30))]
    """

    def __init__(
        self,
        source_datapipe: IterDataPipe[Any],
        ref_datapipe: IterDataPipe[Any],
        key_fn: Callable[[Any], Hashable],
        ref_key_fn: Callable[[Any], Hashable] | None = None,
        keep_key: bool = False,
        buffer_size: int | None = 10000,
        merge_fn: Callable[[Any, Any], Any] | None = None,
    ) -> None:
        _check_datapipes(type(self).__name__, (source_datapipe, ref_datapipe))
        _check_callable(self, "key_fn", key_fn)
        if ref_key_fn is not None:
            _check_callable(self, "ref_key_fn", ref_key_fn)
        if merge_fn is not None:
            _check_callable(self, "merge_fn", merge_fn)
        if buffer_size is not None:
            _check_int(self, "buffer_size", buffer_size, 1)
        self.source_datapipe = source_datapipe
        self.ref_datapipe = ref_datapipe
        self.key_fn = key_fn
        self.ref_key_fn = key_fn if ref_key_fn is None else ref_key_fn
        self.keep_key = keep_key
        self.buffer_size = buffer_size
        self.merge_fn = merge_fn

    def __iter__(self) -> Iterator[Any]:
        buffer: dict[Hashable, deque[Any]] = {}
        buffered = 0
        ref = iter(self.ref_datapipe)
        for item in self.source_datapipe:
            key = self.key_fn(item)
            while key not in buffer:
                try:
                    ref_item = next(ref)
                except StopIteration:
                    raise BufferError(
                        f"No matching key can be found from reference DataPipe for the data "
                        f"{item!r} (key {key!r})."
                    ) from None
                buffer.setdefault(self.ref_key_fn(ref_item), deque()).append(ref_item)
                buffered += 1
                if self.buffer_size is not None and buffered > self.buffer_size:
                    raise BufferError(
                        f"{type(self).__name__}: buffer_size={self.buffer_size} is insufficient "
                        f"to find the reference item of key {key!r}"
                    )
            matches = buffer[key]
            ref_item = matches.popleft()
            if not matches:
                del buffer[key]
            buffered -= 1
            merged = (item, ref_item) if self.merge_fn is None else self.merge_fn(item, ref_item)
            yield (key, merged) if self.keep_key else merged

    def __len__(self) -> int:
        return self._source_len(self.source_datapipe)


@functional_datapipe("zip_with_map")
class MapKeyZipper(IterDataPipe[Any]):
    """Pairs each source item with ``map_datapipe[key_fn(item)]`` (functional name:
    ``zip_with_map``); a missing key raises KeyError.

    >>> from emberdata.datapipes.map import SequenceWrapper
    >>> ages = SequenceWrapper({"a": 1, "b": 2})
    >>> list(IterableWrapper(["b", "a"]).zip_with_map(ages, key_fn=lambda x: x))
    [('b', 2), ('a', 1)]
    """

    def __init__(
        self,
        source_iterdatapipe: IterDataPipe[Any],
        map_datapipe: MapDataPipe[Any],
        key_fn: Callable[[Any], Any],
        merge_fn: Callable[[Any, Any], Any] | None = None,
        keep_key: bool = False,
    ) -> None:
        if not isinstance(source_iterdatapipe, IterDataPipe):
            raise TypeError(
                "MapKeyZipper expected source_iterdatapipe to be an IterDataPipe, but got "
                f"{type(source_iterdatapipe).__name__}"
            )
        if not isinstance(map_datapipe, MapDataPipe):
            raise TypeError(
                "MapKeyZipper expected map_datapipe to be a MapDataPipe, but got "
                f"{type(map_datapipe).__name__}"
            )
        _check_callable(self, "key_fn", key_fn)
        if merge_fn is not None:
            _check_callable(self, "merge_fn", merge_fn)
        self.source_iterdatapipe = source_iterdatapipe
        self.map_datapipe = map_datapipe
        self.key_fn = key_fn
        self.merge_fn = merge_fn
        self.keep_key = keep_key

    def __iter__(self) -> Iterator[Any]:
        for item in self.source_iterdatapipe:
            key = self.key_fn(item)
            try:
                map_item = self.map_datapipe[key]
            except (KeyError, IndexError):
                raise KeyError(
                    f"key {key!r} (of item {item!r}) is not in the MapDataPipe "
                    f"{self.map_datapipe!r}"
                ) from None
            merged = (item, map_item) if self.merge_fn is None else self.merge_fn(item, map_item)
            yield (key, merged) if self.keep_key else merged

    def __len__(self) -> int:
        return self._source_len(self.source_iterdatapipe)
