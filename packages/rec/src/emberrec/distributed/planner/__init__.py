"""The sharding planner (TorchRec's ``torchrec.distributed.planner``).

Given a model, the sharders of its embedding collections and a ``Topology``, it lists every way
to shard each table, estimates each shard's memory and step time, proposes combinations, places
the shards on ranks within their memory and returns the fastest plan as a ``ShardingPlan``, with
a stats table of what each rank holds. Users steer it with ``ParameterConstraints`` per table.
"""

from emberrec.distributed.planner.planners import EmbeddingShardingPlanner
from emberrec.distributed.planner.types import ParameterConstraints, PlannerError, Topology
from emberrec.distributed.planner.utils import bytes_to_gb, sharder_name

__all__ = ["EmbeddingShardingPlanner", "ParameterConstraints", "PlannerError", "Topology", "bytes_to_gb", "sharder_name"]
