from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Iterator
from enum import IntEnum
from typing import TypeVar

from emberdata.datapipes._base import IterDataPipe, functional_datapipe

T = TypeVar("T")


class SHARDING_PRIORITIES(IntEnum):
    """Sharding groups; a pipeline sharded across ranks and workers combines both."""

    DEFAULT = 1
    DISTRIBUTED = 2
    MULTIPROCESSING = 3


@functional_datapipe("sharding_filter")
class ShardingFilter(IterDataPipe[T]):
    """Keeps every ``num_of_instances``-th item (functional name: ``sharding_filter``).

    After ``apply_sharding(n, k)`` this instance yields the items at positions ``i`` with
    ``i % n == k``; before it, everything passes. Sharding in several groups (DISTRIBUTED then
    MULTIPROCESSING) combines them: worker ``w`` of ``W`` on rank ``r`` of ``R`` becomes
    instance ``w + W * r`` of ``R * W``.

    Shuffle *before* this pipe with one seed shared by all instances, so the instances split
    one common order into disjoint shards (see
    :func:`emberdata.datapipes.utils.apply_random_seed`).
    """

    def __init__(
        self,
        source_datapipe: IterDataPipe[T],
        sharding_group_filter: SHARDING_PRIORITIES | None = None,
    ) -> None:
        self.source_datapipe = source_datapipe
        self.sharding_group_filter = sharding_group_filter
        self.groups: dict[int, tuple[int, int]] = {}
        self.num_of_instances = 1
        self.instance_id = 0
        self._block_size = 1

    def apply_sharding(
        self,
        num_of_instances: int,
        instance_id: int,
        sharding_group: SHARDING_PRIORITIES = SHARDING_PRIORITIES.DEFAULT,
    ) -> None:
        name = type(self).__name__
        if num_of_instances < 1:
            raise ValueError(f"{name} expected num_of_instances >= 1, but got {num_of_instances}")
        if not 0 <= instance_id < num_of_instances:
            raise ValueError(
                f"{name} expected 0 <= instance_id < num_of_instances, but got "
                f"instance_id({instance_id}) and num_of_instances({num_of_instances})"
            )
        default = SHARDING_PRIORITIES.DEFAULT
        if sharding_group == default:
            mixed = bool(self.groups) and default not in self.groups
        else:
            mixed = default in self.groups
        if mixed:
            raise RuntimeError(f"{name} cannot mix DEFAULT and non DEFAULT groups")
        self.groups[sharding_group] = (num_of_instances, instance_id)
        self._update_num_of_instances()

    def _update_num_of_instances(self) -> None:
        self.num_of_instances, self.instance_id = 1, 0
        for key in sorted(self.groups, reverse=True):
            if self.sharding_group_filter is None or key == self.sharding_group_filter:
                group_num, group_id = self.groups[key]
                self.instance_id += self.num_of_instances * group_id
                self.num_of_instances *= group_num

    def _set_block_size(self, block_size: int) -> None:
        """Shard whole runs of ``block_size`` consecutive items: instance ``k`` keeps item ``i``
        when ``(i // block_size) % n == k``. The DataLoader sets its ``batch_size`` here so each
        worker's batches are the batches of the unsharded order (Note [DataLoader pipeline
        protocol])."""
        if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
            raise ValueError(
                f"{type(self).__name__} expected a block size >= 1, but got {block_size!r}"
            )
        self._block_size = block_size

    def __iter__(self) -> Iterator[T]:
        # Plain iterators where possible: no generator frame per item on the hot path.
        n, k, block = self.num_of_instances, self.instance_id, self._block_size
        if n == 1:
            return iter(self.source_datapipe)
        if block == 1:
            return itertools.islice(self.source_datapipe, k, None, n)  # the skipping runs in C
        return self._blocks(n, k, block)

    def _blocks(self, n: int, k: int, block: int) -> Iterator[T]:
        source = iter(self.source_datapipe)
        deque(itertools.islice(source, k * block), maxlen=0)
        while True:
            kept = list(itertools.islice(source, block))
            yield from kept
            if len(kept) < block:
                return
            deque(itertools.islice(source, (n - 1) * block), maxlen=0)

    def __len__(self) -> int:
        size = self._source_len(self.source_datapipe)
        n, k, block = self.num_of_instances, self.instance_id, self._block_size
        blocks, rest = divmod(size, block)
        mine = blocks // n + int(k < blocks % n)
        return mine * block + (rest if blocks % n == k else 0)
