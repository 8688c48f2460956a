"""Graph utilities: walk a DataPipe graph and configure sharding, shuffling and seeds.

These do what DataLoader2's reading services do to every worker's copy of a pipeline
(``torch.utils.data.graph_settings`` and ``torchdata.dataloader2.graph``).

A graph is a nested dict keyed by ``id(datapipe)``, rooted at the pipe you iterate::

    {id(batch): (batch, {id(shard): (shard, {id(shuffle): (shuffle, {id(src): (src, {})})})})}

Each pipe's children are its ``source_datapipes()``.
"""

from __future__ import annotations

import inspect
import random
import warnings
from collections import deque
from collections.abc import Iterable
from typing import Any, TypeVar

from emberdata._seeds import SeedGenerator
from emberdata.datapipes._base import IterDataPipe, MapDataPipe
from emberdata.datapipes.iter._sharding import SHARDING_PRIORITIES

__all__ = [
    "DataPipeGraph",
    "apply_random_seed",
    "apply_sharding",
    "apply_shuffle_settings",
    "find_dps",
    "list_dps",
    "set_graph_random_seed",
    "traverse_dps",
]

DataPipe = IterDataPipe[Any] | MapDataPipe[Any]
DataPipeGraph = dict[int, tuple[DataPipe, "DataPipeGraph"]]
_D = TypeVar("_D")


def traverse_dps(datapipe: DataPipe) -> DataPipeGraph:
    """The graph of ``datapipe`` and everything it reads from (a pipe reached through a cycle
    is listed without its sources again)."""

    def walk(dp: DataPipe, path: frozenset[int]) -> DataPipeGraph:
        if id(dp) in path:
            return {id(dp): (dp, {})}
        inner = path | {id(dp)}
        sources: DataPipeGraph = {}
        for source in dp.source_datapipes():
            sources.update(walk(source, inner))
        return {id(dp): (dp, sources)}

    if not isinstance(datapipe, (IterDataPipe, MapDataPipe)):
        raise TypeError(
            f"traverse_dps expected an IterDataPipe or a MapDataPipe, but got "
            f"{type(datapipe).__name__}"
        )
    return walk(datapipe, frozenset())


def list_dps(
    graph: DataPipeGraph,
    exclude_dps: DataPipe | Iterable[DataPipe] | None = None,
) -> list[DataPipe]:
    """Every pipe of ``graph`` once, breadth-first from the root, leaving out ``exclude_dps``
    and everything they read from."""
    cache: set[int] = set()
    if exclude_dps is not None:
        if isinstance(exclude_dps, (IterDataPipe, MapDataPipe)):
            exclude_dps = [exclude_dps]
        for excluded in exclude_dps:
            if id(excluded) not in cache:
                cache.update(id(dp) for dp in list_dps(traverse_dps(excluded)))
    pipes: list[DataPipe] = []
    queue: deque[DataPipeGraph] = deque([graph])
    while queue:
        for dp_id, (dp, sources) in queue.popleft().items():
            if dp_id not in cache:
                cache.add(dp_id)
                pipes.append(dp)
                queue.append(sources)
    return pipes


def find_dps(graph: DataPipeGraph, dp_type: type[_D]) -> list[_D]:
    """The pipes of ``graph`` that are instances of ``dp_type``."""
    return [dp for dp in list_dps(graph) if isinstance(dp, dp_type)]


def _is_sharding(dp: object) -> bool:
    return callable(getattr(dp, "apply_sharding", None))


def _is_shuffle(dp: object) -> bool:
    return callable(getattr(dp, "set_shuffle", None)) and callable(getattr(dp, "set_seed", None))


def _is_random(dp: object) -> bool:
    return callable(getattr(dp, "set_seed", None))


def apply_sharding(
    datapipe: DataPipe,
    num_of_instances: int,
    instance_id: int,
    sharding_group: SHARDING_PRIORITIES = SHARDING_PRIORITIES.DEFAULT,
) -> DataPipe:
    """Make every sharding pipe in the graph (e.g. ShardingFilter) keep shard ``instance_id`` of
    ``num_of_instances``.

    Raises RuntimeError if one sharding pipe reads from another: sharding twice on one path
    would keep only ``1 / n**2`` of the data.
    """

    def walk(graph: DataPipeGraph, applied: DataPipe | None) -> None:
        for dp, sources in graph.values():
            here = applied
            if _is_sharding(dp):
                if applied is not None:
                    raise RuntimeError(
                        "Sharding twice on a single pipeline is likely unintended and will cause "
                        f"data loss. Sharding already applied to {applied!r} while trying to "
                        f"apply to {dp!r}"
                    )
                if len(inspect.signature(dp.apply_sharding).parameters) < 3:
                    dp.apply_sharding(num_of_instances, instance_id)
                else:
                    dp.apply_sharding(num_of_instances, instance_id, sharding_group=sharding_group)
                here = dp
            walk(sources, here)

    walk(traverse_dps(datapipe), None)
    return datapipe


def apply_shuffle_settings(
    datapipe: DataPipe, shuffle: bool | None = None
) -> DataPipe:
    """Turn every Shuffler in the graph on or off; ``None`` leaves them as they are.

    ``shuffle=True`` on a graph without a Shuffler appends one (with a warning) and returns it.
    """
    if shuffle is None:
        return datapipe
    shufflers = [dp for dp in list_dps(traverse_dps(datapipe)) if _is_shuffle(dp)]
    if not shufflers and shuffle:
        warnings.warn(
            "`shuffle=True` was set, but the datapipe does not contain a `Shuffler`. Adding one "
            "at the end. Be aware that the default buffer size might not be sufficient for "
            "your task.",
            stacklevel=2,
        )
        datapipe = datapipe.shuffle()
        shufflers = [datapipe]
    for shuffler in shufflers:
        shuffler.set_shuffle(shuffle)
    return datapipe


def _random_pipes(datapipe: DataPipe) -> tuple[list[DataPipe], list[DataPipe], list[DataPipe]]:
    """(sharding pipes, random pipes upstream of one, the other random pipes), breadth-first."""
    graph = traverse_dps(datapipe)
    sharding = [dp for dp in list_dps(graph) if _is_sharding(dp)]
    shared: dict[int, DataPipe] = {}
    for sharding_dp in sharding:
        for dp in list_dps(traverse_dps(sharding_dp)):
            if _is_random(dp):
                shared.setdefault(id(dp), dp)
    local = [dp for dp in list_dps(graph, exclude_dps=sharding) if _is_random(dp)]
    return sharding, list(shared.values()), local


# Note [shared and local seeds]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Random pipes upstream of a sharding pipe must make the *same* choices on every instance:
# each instance then filters one common order, so the shards are disjoint and together hold
# every item. They are seeded first, in the graph's breadth-first order, from a source every
# instance holds in the same state. Random pipes downstream only reorder an instance's own
# shard; they are seeded from a source keyed by the instance, so instances differ and the same
# root seed still reproduces the same run (pytorch#77741, data#718).


def apply_random_seed(
    datapipe: DataPipe,
    rng: random.Random | int,
    *,
    instance_id: int | None = None,
) -> DataPipe:
    """Seed every random pipe (one with ``set_seed``, e.g. Shuffler) in the graph from ``rng``.

    See Note [shared and local seeds]. Call it on every instance with an ``rng`` in the same
    state (e.g. ``random.Random(epoch_seed)``), once per epoch. ``instance_id`` defaults to the
    one ``apply_sharding`` set on the graph's ShardingFilter (0 when there is none).
    """
    if isinstance(rng, int) and not isinstance(rng, bool):
        rng = random.Random(rng)
    if not isinstance(rng, random.Random):
        raise TypeError(
            f"apply_random_seed expected a random.Random or an int seed, but got "
            f"{type(rng).__name__}"
        )
    sharding, shared, local = _random_pipes(datapipe)
    for dp in shared:
        dp.set_seed(rng.getrandbits(64))
    if instance_id is None:
        instance_id = getattr(sharding[0], "instance_id", 0) if sharding else 0
    local_rng = random.Random(f"{rng.getrandbits(64)}:{instance_id}")
    for dp in local:
        dp.set_seed(local_rng.getrandbits(64))
    return datapipe


def set_graph_random_seed(datapipe: DataPipe, seed_generator: SeedGenerator) -> DataPipe:
    """Seed every random pipe from a :class:`~emberdata.dataloader2.random.SeedGenerator`:
    upstream of the sharding point from its shared stream, downstream from its worker stream
    (Note [shared and local seeds]); what DataLoader2 does at the start of every epoch."""
    if not isinstance(seed_generator, SeedGenerator):
        raise TypeError(
            f"set_graph_random_seed expected a SeedGenerator, but got "
            f"{type(seed_generator).__name__}"
        )
    _, shared, local = _random_pipes(datapipe)
    for dp in shared:
        dp.set_seed(seed_generator.generate_shared_seed())
    for dp in local:
        dp.set_seed(seed_generator.generate_seed())
    return datapipe
