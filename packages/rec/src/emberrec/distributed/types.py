"""Sharding vocabulary shared by the planner and sharded execution.

A ``ShardingPlan`` maps a module path to a ``ModuleShardingPlan``: for an embedding collection
an ``EmbeddingModuleShardingPlan``, a dict of table name -> ``ParameterSharding``. A
``ParameterSharding`` says how one table is split (``sharding_type``), which kernel looks it up
(``compute_kernel``), the rank of each shard and, except for data parallel, an
``EnumerableShardingSpec``: one ``ShardMetadata`` (offsets, sizes, placement) per shard.
``ShardMetadata`` and ``EnumerableShardingSpec`` are ``torch.distributed._shard``'s in TorchRec;
ember has no such module, so they live here.
"""

from __future__ import annotations

import abc
import enum
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import ember
from ember import nn
from ember.tbe import BoundsCheckMode, CacheAlgorithm
from emberrec.modules.embedding_configs import DataType

__all__ = [
    "BoundsCheckMode",
    "CacheAlgorithm",
    "CacheParams",
    "CacheStatistics",
    "ComputeKernel",
    "EmbeddingModuleShardingPlan",
    "EnumerableShardingSpec",
    "ModuleSharder",
    "ModuleShardingPlan",
    "ParameterSharding",
    "ParameterStorage",
    "ShardMetadata",
    "ShardingPlan",
    "ShardingPlanner",
    "ShardingType",
    "get_tensor_size_bytes",
]


@enum.unique
class ShardingType(enum.Enum):
    """How a table is split across ranks."""

    # a full copy on every rank; gradients are all-reduced
    DATA_PARALLEL = "data_parallel"
    # the whole table on one rank
    TABLE_WISE = "table_wise"
    # column blocks, each placed on some rank like a table of its own
    COLUMN_WISE = "column_wise"
    # row ranges over all ranks
    ROW_WISE = "row_wise"
    # row ranges over the ranks of one host (row-wise inside a host, table-wise across hosts)
    TABLE_ROW_WISE = "table_row_wise"
    # column blocks on the ranks of one host
    TABLE_COLUMN_WISE = "table_column_wise"


@enum.unique
class ParameterStorage(enum.Enum):
    """The memories a planner budgets: device memory (HBM) and host memory (DDR)."""

    HBM = "hbm"
    DDR = "ddr"


@enum.unique
class ComputeKernel(enum.Enum):
    DEFAULT = "default"


class CacheStatistics(abc.ABC):
    """Access statistics of a table, for sizing its UVM cache."""

    @property
    @abc.abstractmethod
    def expected_lookups(self) -> float:
        """Distinct ids expected in one global batch."""

    @abc.abstractmethod
    def expected_miss_rate(self, clf: float) -> float:
        """Miss rate of a cache holding ``clf`` (0..1) of the table's rows."""

    @property
    @abc.abstractmethod
    def cacheability(self) -> float:
        """0 for a very cacheable access pattern, 1 for one no cache helps."""


@dataclass
class CacheParams:
    """Settings of a UVM-cached table (``fused_uvm_caching``): the cache holds ``load_factor``
    of the rows in device memory."""

    algorithm: CacheAlgorithm | None = None
    load_factor: float | None = None
    reserved_memory: float | None = None
    precision: DataType | None = None
    prefetch_pipeline: bool | None = None
    stats: CacheStatistics | None = None

    def __post_init__(self) -> None:
        if self.load_factor is not None and not 0 < self.load_factor <= 1:
            raise ValueError(f"CacheParams.load_factor must be in (0, 1], got {self.load_factor}")

    def __hash__(self) -> int:
        return hash((self.algorithm, self.load_factor, self.reserved_memory, self.precision, self.prefetch_pipeline))


@dataclass
class ShardMetadata:
    """One shard of a 2-D table: rows ``[o0, o0 + s0)`` and columns ``[o1, o1 + s1)``, living
    at ``placement`` (``"rank:<r>/<device>"``)."""

    shard_offsets: list[int]
    shard_sizes: list[int]
    placement: str | None = None

    def __post_init__(self) -> None:
        self.shard_offsets = [int(v) for v in self.shard_offsets]
        self.shard_sizes = [int(v) for v in self.shard_sizes]
        if len(self.shard_offsets) != len(self.shard_sizes):
            raise ValueError(
                f"ShardMetadata: shard_offsets {self.shard_offsets} and shard_sizes {self.shard_sizes} "
                "have different lengths"
            )
        if any(v < 0 for v in self.shard_offsets + self.shard_sizes):
            raise ValueError(
                f"ShardMetadata: offsets and sizes must be >= 0, got offsets {self.shard_offsets}, "
                f"sizes {self.shard_sizes}"
            )

    @property
    def rank(self) -> int | None:
        if self.placement is None or not self.placement.startswith("rank:"):
            return None
        return int(self.placement[len("rank:"):].split("/")[0])


def _overlap(a: ShardMetadata, b: ShardMetadata) -> bool:
    return all(
        oa < ob + sb and ob < oa + sa
        for oa, sa, ob, sb in zip(a.shard_offsets, a.shard_sizes, b.shard_offsets, b.shard_sizes, strict=True)
    )


@dataclass
class EnumerableShardingSpec:
    """A table's shards listed one by one; shards must not overlap."""

    shards: list[ShardMetadata] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.shards:
            return
        dims = len(self.shards[0].shard_sizes)
        for shard in self.shards:
            if len(shard.shard_sizes) != dims:
                raise ValueError(f"EnumerableShardingSpec: shards of different ranks ({dims} and "
                                 f"{len(shard.shard_sizes)} dims)")
        for i, a in enumerate(self.shards):
            for b in self.shards[i + 1:]:
                if _overlap(a, b):
                    raise ValueError(f"EnumerableShardingSpec: shards {a} and {b} overlap")


@dataclass
class ParameterSharding:
    """How one parameter (a table) is sharded.

    ``ranks``: the rank of each shard (for data parallel, every rank). ``sharding_spec``: the
    shards' offsets, sizes and placements; None for data parallel, which keeps whole copies.
    """

    sharding_type: str
    compute_kernel: str
    ranks: list[int] | None = None
    sharding_spec: EnumerableShardingSpec | None = None
    cache_params: CacheParams | None = None
    enforce_hbm: bool | None = None
    stochastic_rounding: bool | None = None
    bounds_check_mode: BoundsCheckMode | None = None


class ModuleShardingPlan:
    """Base of a per-module plan."""


def _tabulate(rows: list[list[Any]], headers: list[str]) -> str:
    widths = [max([len(h)] + [len(str(row[i])) for row in rows]) for i, h in enumerate(headers)]
    lines = [" | ".join(h.center(w) for h, w in zip(headers, widths, strict=True)), " | ".join("-" * w for w in widths)]
    lines += [" | ".join(str(v).ljust(w) for v, w in zip(row, widths, strict=True)) for row in rows]
    return "\n".join(lines)


class EmbeddingModuleShardingPlan(ModuleShardingPlan, dict):
    """Table name -> ``ParameterSharding`` for one embedding collection."""

    def __str__(self) -> str:
        params = [[name, ps.sharding_type, ps.compute_kernel, ps.ranks] for name, ps in self.items()]
        shards = [
            [name, shard.shard_offsets, shard.shard_sizes, shard.placement]
            for name, ps in self.items()
            if ps.sharding_spec is not None
            for shard in ps.sharding_spec.shards
        ]
        return (
            "\n\n" + _tabulate(params, ["param", "sharding type", "compute kernel", "ranks"])
            + "\n\n" + _tabulate(shards, ["param", "shard offsets", "shard sizes", "placement"])
        )


@dataclass
class ShardingPlan:
    """Module path (in the model being sharded) -> the plan of that module."""

    plan: dict[str, ModuleShardingPlan]

    def get_plan_for_module(self, module_path: str) -> ModuleShardingPlan | None:
        return self.plan.get(module_path, None)

    def __str__(self) -> str:
        return "\n\n".join(f"module: {path}{module_plan}" for path, module_plan in self.plan.items())


def get_tensor_size_bytes(t: ember.Tensor) -> int:
    return t.numel() * t.element_size()


M = TypeVar("M", bound=nn.Module)


class ModuleSharder(abc.ABC, Generic[M]):
    """Says how a module type may be sharded: which parameters, sharding types and kernels.

    The planner asks a sharder for ``shardable_parameters``, ``sharding_types``,
    ``compute_kernels`` and ``storage_usage``; ``module_type`` matches it to modules.
    """

    def __init__(self, qcomm_codecs_registry: dict[str, Any] | None = None) -> None:
        self._qcomm_codecs_registry = qcomm_codecs_registry

    @property
    @abc.abstractmethod
    def module_type(self) -> type[M]:
        ...

    @property
    def qcomm_codecs_registry(self) -> dict[str, Any] | None:
        return self._qcomm_codecs_registry

    def shardable_parameters(self, module: M) -> dict[str, nn.Parameter]:
        return dict(module.named_parameters())

    def sharding_types(self, compute_device_type: str) -> list[str]:
        return [ShardingType.DATA_PARALLEL.value]

    def compute_kernels(self, sharding_type: str, compute_device_type: str) -> list[str]:
        return [ComputeKernel.DEFAULT.value]

    def storage_usage(self, tensor: ember.Tensor, compute_device_type: str, compute_kernel: str) -> dict[str, int]:
        """Bytes the tensor takes in each memory: device memory on cuda, host memory on cpu."""
        return {_device_storage(compute_device_type).value: get_tensor_size_bytes(tensor)}


def _device_storage(compute_device_type: str) -> ParameterStorage:
    if compute_device_type == "cuda":
        return ParameterStorage.HBM
    if compute_device_type == "cpu":
        return ParameterStorage.DDR
    raise ValueError(f"unsupported compute device {compute_device_type!r}; expected 'cpu' or 'cuda'")


class ShardingPlanner(abc.ABC):
    """Plans how to shard a module."""

    @abc.abstractmethod
    def plan(self, module: nn.Module, sharders: list[ModuleSharder[nn.Module]]) -> ShardingPlan:
        ...

    @abc.abstractmethod
    def collective_plan(self, module: nn.Module, sharders: list[ModuleSharder[nn.Module]]) -> ShardingPlan:
        ...
