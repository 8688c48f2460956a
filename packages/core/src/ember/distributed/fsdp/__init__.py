"""ember.distributed.fsdp: FullyShardedDataParallel on CPU (torch.distributed.fsdp's 1.12 API)."""

from .api import (
    BackwardPrefetch,
    CPUOffload,
    FullStateDictConfig,
    LocalStateDictConfig,
    MixedPrecision,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictConfig,
    StateDictType,
)
from .fully_sharded_data_parallel import FlatParameter, FullyShardedDataParallel

__all__ = ["BackwardPrefetch", "CPUOffload", "FlatParameter", "FullStateDictConfig", "FullyShardedDataParallel",
           "LocalStateDictConfig", "MixedPrecision", "ShardedStateDictConfig", "ShardingStrategy",
           "StateDictConfig", "StateDictType"]
