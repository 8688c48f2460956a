"""Small helpers of the planner."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from emberrec.distributed.planner.types import ShardingOption, Storage


def sharder_name(t: type[Any]) -> str:
    """The key matching a sharder to modules: the module type's qualified name."""
    return f"{t.__module__}.{t.__name__}"


def bytes_to_gb(num_bytes: float) -> float:
    return float(num_bytes / 1024**3)


def bytes_to_mb(num_bytes: float) -> float:
    return float(num_bytes / 1024**2)


def gb_to_bytes(gb: float) -> int:
    return int(gb * 1024**3)


def prod(iterable: Iterable[int]) -> int:
    return math.prod(iterable)


def storage_repr_in_gb(storage: Storage | None) -> str:
    if storage is None:
        return ""
    return f"Storage(hbm = {round(bytes_to_gb(storage.hbm), 3)} GB, ddr = {round(bytes_to_gb(storage.ddr), 3)} GB)"


def storage_repr_in_bytes(storage: Storage) -> str:
    return f"Storage(hbm={storage.hbm} bytes, ddr={storage.ddr} bytes)"


def reset_shard_rank(proposal: list[ShardingOption]) -> None:
    for sharding_option in proposal:
        for shard in sharding_option.shards:
            shard.rank = None
