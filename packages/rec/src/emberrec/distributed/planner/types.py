"""The planner's data: topology, constraints, sharding options with their shards, and the
interfaces of its stages (storage reservation, enumerator, estimators, proposer, partitioner,
perf model, stats).

How a plan is made: the storage reservation takes the dense model's share off each rank; the
enumerator lists every (table, sharding type, compute kernel) as a ``ShardingOption`` whose
``Shard``s the estimators fill with ``Perf`` and ``Storage``; proposers pick one option per
table; the partitioner puts each shard on a rank that has room, or raises ``PlannerError``; the
perf model rates the placed proposal and the best one becomes the ``ShardingPlan``.
"""

from __future__ import annotations

import abc
import enum
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

import ember
from ember import nn
from emberrec.distributed.embedding_types import EmbeddingComputeKernel
from emberrec.distributed.planner.constants import (
    BATCH_SIZE,
    BWD_COMPUTE_MULTIPLIER,
    CROSS_NODE_BANDWIDTH,
    DDR_CAP,
    DDR_MEM_BW,
    HBM_CAP,
    HBM_MEM_BW,
    INTRA_NODE_BANDWIDTH,
    POOLING_FACTOR,
)
from emberrec.distributed.types import (
    BoundsCheckMode,
    CacheParams,
    ModuleSharder,
    ShardingPlan,
    ShardingType,
)

__all__ = [
    "DeviceHardware",
    "Enumerator",
    "ParameterConstraints",
    "PartitionByType",
    "Partitioner",
    "Perf",
    "PerfModel",
    "PlannerError",
    "PlannerErrorType",
    "Proposer",
    "Shard",
    "ShardEstimator",
    "ShardingOption",
    "Stats",
    "Storage",
    "StorageReservation",
    "Topology",
]


@dataclass(eq=True)
class Perf:
    """Estimated milliseconds of one shard (or one rank) per training step."""

    fwd_compute: float
    fwd_comms: float
    bwd_compute: float
    bwd_comms: float

    @property
    def total(self) -> float:
        return self.fwd_compute + self.fwd_comms + self.bwd_compute + self.bwd_comms

    def __add__(self, other: Perf) -> Perf:
        return Perf(
            self.fwd_compute + other.fwd_compute,
            self.fwd_comms + other.fwd_comms,
            self.bwd_compute + other.bwd_compute,
            self.bwd_comms + other.bwd_comms,
        )

    def __hash__(self) -> int:
        return hash((self.fwd_compute, self.fwd_comms, self.bwd_compute, self.bwd_comms))


@dataclass(order=True, eq=True)
class Storage:
    """Bytes of device memory (``hbm``) and host memory (``ddr``)."""

    hbm: int
    ddr: int

    def __add__(self, other: Storage) -> Storage:
        return Storage(self.hbm + other.hbm, self.ddr + other.ddr)

    def __sub__(self, other: Storage) -> Storage:
        return Storage(self.hbm - other.hbm, self.ddr - other.ddr)

    def __hash__(self) -> int:
        return hash((self.hbm, self.ddr))

    def fits_in(self, other: Storage) -> bool:
        return self.hbm <= other.hbm and self.ddr <= other.ddr


@dataclass
class DeviceHardware:
    """One rank: the storage still free on it and the perf already placed on it."""

    rank: int
    storage: Storage
    perf: Perf


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"Topology: {name} must be a positive int, got {value!r}")
    return value


class Topology:
    """The ranks a model is sharded over.

    ``world_size`` ranks in hosts of ``local_world_size`` (default: one host). Each rank has
    ``hbm_cap`` bytes of device memory (cuda only; 0 on cpu) and ``ddr_cap`` bytes of host
    memory. On ``"cpu"`` the tables live in host memory, so DDR is the budget. Bandwidths are
    bytes/ms: ``hbm_mem_bw``/``ddr_mem_bw`` for lookups, ``intra_host_bw``/``inter_host_bw``
    for the exchanges.
    """

    def __init__(
        self,
        world_size: int,
        compute_device: str,
        hbm_cap: int | None = None,
        ddr_cap: int | None = None,
        local_world_size: int | None = None,
        hbm_mem_bw: float = HBM_MEM_BW,
        ddr_mem_bw: float = DDR_MEM_BW,
        intra_host_bw: float = INTRA_NODE_BANDWIDTH,
        inter_host_bw: float = CROSS_NODE_BANDWIDTH,
        bwd_compute_multiplier: float = BWD_COMPUTE_MULTIPLIER,
    ) -> None:
        if compute_device not in ("cpu", "cuda"):
            raise ValueError(f"Topology: unsupported compute device {compute_device!r}; expected 'cpu' or 'cuda'")
        self._world_size = _positive_int("world_size", world_size)
        self._local_world_size = _positive_int("local_world_size", local_world_size) if local_world_size else world_size
        if world_size % self._local_world_size:
            raise ValueError(
                f"Topology: world_size {world_size} is not a whole number of hosts of local_world_size "
                f"{self._local_world_size}"
            )
        for name, cap in (("hbm_cap", hbm_cap), ("ddr_cap", ddr_cap)):
            if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
                raise ValueError(f"Topology: {name} must be a non-negative int of bytes, got {cap!r}")
        for name, bw in (("hbm_mem_bw", hbm_mem_bw), ("ddr_mem_bw", ddr_mem_bw),
                         ("intra_host_bw", intra_host_bw), ("inter_host_bw", inter_host_bw)):
            if not bw > 0:
                raise ValueError(f"Topology: {name} must be positive, got {bw!r}")
        self._compute_device = compute_device
        hbm = (HBM_CAP if hbm_cap is None else hbm_cap) if compute_device == "cuda" else 0
        ddr = DDR_CAP if ddr_cap is None else ddr_cap
        self._devices = [DeviceHardware(rank, Storage(hbm=hbm, ddr=ddr), Perf(0, 0, 0, 0)) for rank in range(world_size)]
        self._hbm_mem_bw = hbm_mem_bw
        self._ddr_mem_bw = ddr_mem_bw
        self._intra_host_bw = intra_host_bw
        self._inter_host_bw = inter_host_bw
        self._bwd_compute_multiplier = bwd_compute_multiplier

    @property
    def compute_device(self) -> str:
        return self._compute_device

    @property
    def devices(self) -> list[DeviceHardware]:
        return self._devices

    @property
    def world_size(self) -> int:
        return self._world_size

    @property
    def local_world_size(self) -> int:
        return self._local_world_size

    @property
    def hbm_mem_bw(self) -> float:
        return self._hbm_mem_bw

    @property
    def ddr_mem_bw(self) -> float:
        return self._ddr_mem_bw

    @property
    def intra_host_bw(self) -> float:
        return self._intra_host_bw

    @property
    def inter_host_bw(self) -> float:
        return self._inter_host_bw

    @property
    def bwd_compute_multiplier(self) -> float:
        return self._bwd_compute_multiplier

    def __repr__(self) -> str:
        lines = [f"world_size={self._world_size}", f"compute_device={self._compute_device}", "devices="]
        lines += [f"\tdevice {i} {device}" for i, device in enumerate(self._devices)]
        lines += [f"local_world_size={self._local_world_size}", f"intra_host_bw={self._intra_host_bw}",
                  f"inter_host_bw={self._inter_host_bw}"]
        return "\n".join(lines)


@dataclass
class Shard:
    """A block of a table (``size`` rows x columns at ``offset``), its estimated ``storage`` and
    ``perf``, and the ``rank`` the partitioner put it on."""

    size: list[int]
    offset: list[int]
    storage: Storage | None = None
    perf: Perf | None = None
    rank: int | None = None

    def __hash__(self) -> int:
        return hash((tuple(self.size), tuple(self.offset), self.storage, self.perf, self.rank))


class ShardingOption:
    """One way to shard one table: a sharding type, a compute kernel and the shards they make."""

    def __init__(
        self,
        name: str,
        tensor: ember.Tensor,
        module: tuple[str, nn.Module],
        input_lengths: list[float],
        batch_size: int,
        sharding_type: str,
        partition_by: str,
        compute_kernel: str,
        shards: list[Shard],
        cache_params: CacheParams | None = None,
        enforce_hbm: bool | None = None,
        stochastic_rounding: bool | None = None,
        bounds_check_mode: BoundsCheckMode | None = None,
        dependency: str | None = None,
        is_pooled: bool | None = None,
    ) -> None:
        self.name = name
        self._tensor = tensor
        self._module = module
        self.input_lengths = input_lengths
        self.batch_size = batch_size
        self.sharding_type = sharding_type
        self.partition_by = partition_by
        self.compute_kernel = compute_kernel
        self.shards = shards
        self.cache_params = cache_params
        self.enforce_hbm = enforce_hbm
        self.stochastic_rounding = stochastic_rounding
        self.bounds_check_mode = bounds_check_mode
        self.dependency = dependency
        self._is_pooled = is_pooled
        self.is_weighted: bool | None = None

    @property
    def tensor(self) -> ember.Tensor:
        return self._tensor

    @property
    def module(self) -> tuple[str, nn.Module]:
        return self._module

    @property
    def fqn(self) -> str:
        return f"{self.module[0]}.{self.name}" if self.module[0] else self.name

    @property
    def path(self) -> str:
        return self.module[0]

    @property
    def num_shards(self) -> int:
        return len(self.shards)

    @property
    def num_inputs(self) -> int:
        return len(self.input_lengths)

    @property
    def total_storage(self) -> Storage:
        total = Storage(0, 0)
        for shard in self.shards:
            assert shard.storage is not None, "shard storage is estimated before it is summed"
            total += shard.storage
        return total

    @property
    def total_perf(self) -> float:
        return sum(shard.perf.total for shard in self.shards if shard.perf is not None)

    @property
    def is_pooled(self) -> bool:
        if self._is_pooled is None:
            self._is_pooled = ShardingOption.module_pooled(self.module[1], self.name)
        return self._is_pooled

    @staticmethod
    def module_pooled(module: nn.Module, sharding_option_name: str) -> bool:
        """Whether the module pools its lookups (bags) or returns one row per id (sequences).

        An embedding collection (unpooled) is recognised by its ``embedding_configs()``, a bag
        collection by ``embedding_bag_configs()``, so every collection of either interface
        (plain, fused, quantized) counts.
        """
        def unpooled(m: nn.Module) -> bool:
            return callable(getattr(m, "embedding_configs", None)) and not callable(getattr(m, "embedding_bag_configs", None))

        if unpooled(module):
            return False
        for _, submodule in module.named_modules():
            if unpooled(submodule) and any(sharding_option_name in n for n, _ in submodule.named_parameters()):
                return False
        return True

    def __hash__(self) -> int:
        return hash((self.fqn, self.sharding_type, self.compute_kernel, tuple(self.shards), self.cache_params))

    def __deepcopy__(self, memo: dict[int, Any] | None) -> ShardingOption:
        # the table and its module are shared, never copied
        result = self.__class__.__new__(self.__class__)
        for key, value in self.__dict__.items():
            setattr(result, key, value if key in ("_tensor", "_module") else deepcopy(value, memo))
        return result

    def __repr__(self) -> str:
        return (f"ShardingOption(fqn={self.fqn!r}, sharding_type={self.sharding_type!r}, "
                f"compute_kernel={self.compute_kernel!r}, shards={self.shards})")


@enum.unique
class PartitionByType(enum.Enum):
    """How a sharding type's shards are placed: each on any rank (``device``), all on the ranks
    of one host (``host``), or one per rank in rank order (``uniform``)."""

    DEVICE = "device"
    HOST = "host"
    UNIFORM = "uniform"


_SHARDING_TYPES = {t.value for t in ShardingType}
_COMPUTE_KERNELS = {k.value for k in EmbeddingComputeKernel}


def _names(field_name: str, values: list[Any] | None, known: set[str]) -> list[str] | None:
    if values is None:
        return None
    names = [v.value if isinstance(v, enum.Enum) else v for v in values]
    unknown = [v for v in names if v not in known]
    if unknown:
        raise ValueError(f"ParameterConstraints.{field_name}: unknown {unknown}; expected some of {sorted(known)}")
    return names


@dataclass
class ParameterConstraints:
    """What the user fixes about one table (constraints are keyed by table name).

    ``sharding_types``/``compute_kernels``: the allowed ones. ``min_partition``: the smallest
    column-block width for column-wise sharding. ``pooling_factors``: average ids per sample of
    each feature of the table (their count is the number of features); ``num_poolings`` and
    ``batch_sizes``, if given, one per feature too.
    """

    sharding_types: list[str] | None = None
    compute_kernels: list[str] | None = None
    min_partition: int | None = None
    pooling_factors: list[float] = field(default_factory=lambda: [POOLING_FACTOR])
    num_poolings: list[float] | None = None
    batch_sizes: list[int] | None = None
    is_weighted: bool = False
    cache_params: CacheParams | None = None
    enforce_hbm: bool | None = None
    stochastic_rounding: bool | None = None
    bounds_check_mode: BoundsCheckMode | None = None

    def __post_init__(self) -> None:
        self.sharding_types = _names("sharding_types", self.sharding_types, _SHARDING_TYPES)
        self.compute_kernels = _names("compute_kernels", self.compute_kernels, _COMPUTE_KERNELS)
        if self.min_partition is not None and (
            isinstance(self.min_partition, bool) or not isinstance(self.min_partition, int) or self.min_partition <= 0
        ):
            raise ValueError(f"ParameterConstraints.min_partition must be a positive int, got {self.min_partition!r}")
        if not self.pooling_factors or any(not p >= 0 for p in self.pooling_factors):
            raise ValueError(
                f"ParameterConstraints.pooling_factors must be a non-empty list of numbers >= 0, got {self.pooling_factors!r}"
            )
        for name in ("num_poolings", "batch_sizes"):
            values = getattr(self, name)
            if values is not None and len(values) != len(self.pooling_factors):
                raise ValueError(
                    f"ParameterConstraints: {name} has {len(values)} entries but pooling_factors has "
                    f"{len(self.pooling_factors)}; give one per feature"
                )


@enum.unique
class PlannerErrorType(enum.Enum):
    INSUFFICIENT_STORAGE = "insufficient_storage"
    STRICT_CONSTRAINTS = "strict_constraints"
    PARTITION = "partition"
    OTHER = "other"


class PlannerError(Exception):
    """No plan: ``error_type`` says why; the message names the table and bytes at fault."""

    def __init__(self, message: str, error_type: PlannerErrorType = PlannerErrorType.OTHER) -> None:
        self.error_type = error_type
        super().__init__(message)


class StorageReservation(abc.ABC):
    """Takes the storage of the parts of the model that are not sharded off each rank."""

    @abc.abstractmethod
    def reserve(
        self,
        topology: Topology,
        batch_size: int,
        module: nn.Module,
        sharders: list[ModuleSharder[nn.Module]],
        constraints: dict[str, ParameterConstraints] | None = None,
    ) -> Topology:
        ...


class PerfModel(abc.ABC):
    """Rates a placed proposal; lower is better."""

    @abc.abstractmethod
    def rate(self, plan: list[ShardingOption]) -> float:
        ...


class ShardEstimator(abc.ABC):
    """Fills each shard of the sharding options with an estimate, in place."""

    @abc.abstractmethod
    def __init__(self, topology: Topology, constraints: dict[str, ParameterConstraints] | None = None) -> None:
        ...

    @abc.abstractmethod
    def estimate(
        self,
        sharding_options: list[ShardingOption],
        sharder_map: dict[str, ModuleSharder[nn.Module]] | None = None,
    ) -> None:
        ...


class Enumerator(abc.ABC):
    """Lists every sharding option of every shardable table, estimated."""

    @abc.abstractmethod
    def __init__(
        self,
        topology: Topology,
        batch_size: int = BATCH_SIZE,
        constraints: dict[str, ParameterConstraints] | None = None,
        estimator: ShardEstimator | list[ShardEstimator] | None = None,
    ) -> None:
        ...

    @abc.abstractmethod
    def enumerate(self, module: nn.Module, sharders: list[ModuleSharder[nn.Module]]) -> list[ShardingOption]:
        ...

    @abc.abstractmethod
    def populate_estimates(self, sharding_options: list[ShardingOption]) -> None:
        ...


class Proposer(abc.ABC):
    """Proposes one sharding option per table, learning from whether earlier proposals fit."""

    @abc.abstractmethod
    def load(self, search_space: list[ShardingOption], enumerator: Enumerator | None = None) -> None:
        ...

    @abc.abstractmethod
    def feedback(
        self,
        partitionable: bool,
        plan: list[ShardingOption] | None = None,
        perf_rating: float | None = None,
        storage_constraint: Topology | None = None,
    ) -> None:
        ...

    @abc.abstractmethod
    def propose(self) -> list[ShardingOption] | None:
        ...


class Partitioner(abc.ABC):
    """Sets the rank of every shard of a proposal, or raises ``PlannerError``."""

    @abc.abstractmethod
    def partition(self, proposal: list[ShardingOption], storage_constraint: Topology) -> list[ShardingOption]:
        ...


class Stats(abc.ABC):
    """Reports on a plan."""

    @abc.abstractmethod
    def log(
        self,
        sharding_plan: ShardingPlan,
        topology: Topology,
        batch_size: int,
        storage_reservation: StorageReservation,
        num_proposals: int,
        num_plans: int,
        run_time: float,
        best_plan: list[ShardingOption],
        constraints: dict[str, ParameterConstraints] | None = None,
        sharders: list[ModuleSharder[nn.Module]] | None = None,
        debug: bool = False,
    ) -> None:
        ...
