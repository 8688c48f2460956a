"""FSDP's configuration types (torch.distributed.fsdp's 1.12 API)."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import ember

__all__ = ["BackwardPrefetch", "CPUOffload", "FullStateDictConfig", "LocalStateDictConfig", "MixedPrecision",
           "ShardedStateDictConfig", "ShardingStrategy", "StateDictConfig", "StateDictType"]


class ShardingStrategy(enum.Enum):
    """FULL_SHARD: parameters, gradients (and so optimizer state) sharded; the gathered parameters
    are released after forward. SHARD_GRAD_OP: as FULL_SHARD, but the gathered parameters are kept
    from forward until backward. NO_SHARD: every rank holds everything; gradients all-reduced (DDP)."""

    FULL_SHARD = enum.auto()
    SHARD_GRAD_OP = enum.auto()
    NO_SHARD = enum.auto()


class BackwardPrefetch(enum.Enum):
    """Accepted for PyTorch's API; collectives here run in backward's order, without prefetching."""

    BACKWARD_PRE = enum.auto()
    BACKWARD_POST = enum.auto()


@dataclass
class MixedPrecision:
    """param_dtype: the dtype the gathered parameters (and floating-point inputs) compute in; the
    sharded parameters and the optimizer stay in their own dtype. reduce_dtype: the dtype gradients
    are reduced in (default: param_dtype). buffer_dtype: floating-point buffers are cast to it."""

    param_dtype: ember.dtype | None = None
    reduce_dtype: ember.dtype | None = None
    buffer_dtype: ember.dtype | None = None


@dataclass
class CPUOffload:
    """offload_params=True keeps parameters and gradients on the CPU between uses, and the optimizer
    steps there. ember.distributed runs on CPU tensors only, so they are always there: the flag is
    kept (and reported) but moves nothing."""

    offload_params: bool = False


class StateDictType(enum.Enum):
    """FULL_STATE_DICT: the unsharded parameters under their original names (gathered on every rank).
    SHARDED_STATE_DICT: the original names, each parameter's rows chunked across the ranks (this
    rank's chunk, a plain tensor where PyTorch has a ShardedTensor). LOCAL_STATE_DICT: each unit's
    local shard of its flat parameter."""

    FULL_STATE_DICT = enum.auto()
    LOCAL_STATE_DICT = enum.auto()
    SHARDED_STATE_DICT = enum.auto()


@dataclass
class StateDictConfig:
    pass


@dataclass
class FullStateDictConfig(StateDictConfig):
    """offload_to_cpu: the gathered tensors go to the CPU (where they already are). rank0_only: only
    rank 0 gets the dictionary; the other ranks take part in the gathers and get an empty one."""

    offload_to_cpu: bool = False
    rank0_only: bool = False


@dataclass
class LocalStateDictConfig(StateDictConfig):
    pass


@dataclass
class ShardedStateDictConfig(StateDictConfig):
    pass
