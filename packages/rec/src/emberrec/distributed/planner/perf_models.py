"""Rating a placed proposal."""

from __future__ import annotations

from emberrec.distributed.planner.types import PerfModel, ShardingOption, Topology


class NoopPerfModel(PerfModel):
    """The step time of the slowest rank: the sum of the perf of the shards it holds."""

    def __init__(self, topology: Topology) -> None:
        self._topology = topology

    def rate(self, plan: list[ShardingOption]) -> float:
        perfs = [0.0] * self._topology.world_size
        for sharding_option in plan:
            for shard in sharding_option.shards:
                assert shard.rank is not None and shard.perf is not None, "only placed, estimated shards are rated"
                perfs[shard.rank] += shard.perf.total
        return max(perfs)
