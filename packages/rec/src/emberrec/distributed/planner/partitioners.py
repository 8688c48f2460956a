"""Partitioners: put every shard of a proposal on a rank with room for it."""

from __future__ import annotations

import copy
import enum
import heapq
import logging
from dataclasses import dataclass

from emberrec.distributed.planner.perf_models import NoopPerfModel
from emberrec.distributed.planner.types import (
    DeviceHardware,
    PartitionByType,
    Partitioner,
    PlannerError,
    PlannerErrorType,
    Shard,
    ShardingOption,
    Storage,
    Topology,
)
from emberrec.distributed.planner.utils import bytes_to_gb, reset_shard_rank, storage_repr_in_bytes
from emberrec.distributed.types import ShardingType

logger: logging.Logger = logging.getLogger(__name__)


def _no_room(option: ShardingOption, shard: Shard, devices: list[DeviceHardware], where: str) -> PlannerError:
    # Users asked for the table and the memory it needs by name (TorchRec PR 1192).
    assert shard.storage is not None
    index = option.shards.index(shard)
    rows = f"rows [{shard.offset[0]}, {shard.offset[0] + shard.size[0]})"
    cols = f"cols [{shard.offset[1]}, {shard.offset[1] + shard.size[1]})"
    largest = max((d.storage for d in devices), default=Storage(0, 0))
    return PlannerError(
        error_type=PlannerErrorType.PARTITION,
        message=(
            f"table {option.fqn!r} ({option.sharding_type}, {option.compute_kernel}): shard {index} of "
            f"{option.num_shards} ({rows}, {cols}) needs {storage_repr_in_bytes(shard.storage)} but no {where} "
            f"has room; the most free storage on one of them is {storage_repr_in_bytes(largest)}"
        ),
    )


@enum.unique
class SortBy(enum.Enum):
    STORAGE = "storage"
    PERF = "perf"


@dataclass
class ShardingOptionGroup:
    sharding_options: list[ShardingOption]
    storage_sum: Storage
    perf_sum: float
    param_count: int


def _group_and_sort_non_uniform_sharding_options(
    sharding_options: list[ShardingOption],
    sort_by: SortBy = SortBy.STORAGE,
    balance_modules: bool = False,
) -> list[ShardingOptionGroup]:
    """Groups options that must go together (same ``dependency``, else each alone), largest
    first; with ``balance_modules``, tables of smaller modules first."""
    param_count: dict[str, int] = {}
    for option in sharding_options:
        param_count[option.path] = param_count.get(option.path, 0) + 1
    groups: dict[str, ShardingOptionGroup] = {}
    for option in sharding_options:
        if option.partition_by == PartitionByType.UNIFORM.value:
            continue
        key = option.dependency or option.fqn
        if key not in groups:
            groups[key] = ShardingOptionGroup([option], option.total_storage, option.total_perf, -param_count[option.path])
        else:
            groups[key].sharding_options.append(option)
            groups[key].storage_sum += option.total_storage
            groups[key].perf_sum += option.total_perf
    attributes = (["param_count"] if balance_modules else []) + ["storage_sum" if sort_by == SortBy.STORAGE else "perf_sum"]
    return sorted(groups.values(), key=lambda g: [getattr(g, a) for a in attributes], reverse=True)


@dataclass
class OrderedDeviceHardware:
    device: DeviceHardware
    local_world_size: int

    def __lt__(self, other: OrderedDeviceHardware) -> bool:
        # least loaded first; ties go to the lowest local rank, spreading shards across hosts
        # so that no one host's DDR fills up first
        return (self.device.perf.total, self.device.rank % self.local_world_size, self.device.rank) < (
            other.device.perf.total, other.device.rank % self.local_world_size, other.device.rank
        )


class GreedyPerfPartitioner(Partitioner):
    """Places row-wise and data-parallel shards one per rank first; then the other tables,
    largest first (``sort_by`` storage or perf), each shard on the least loaded rank that has
    room; table-row-wise and table-column-wise tables on the least loaded host that takes them
    whole.

    ``balance_modules``: place the tables of smaller modules first.
    """

    def __init__(self, sort_by: SortBy = SortBy.STORAGE, balance_modules: bool = False) -> None:
        self._sort_by = sort_by
        self._balance_modules = balance_modules

    def partition(self, proposal: list[ShardingOption], storage_constraint: Topology) -> list[ShardingOption]:
        topology = copy.deepcopy(storage_constraint)
        hosts = self._get_host_level_devices(topology)
        self._uniform_partition(
            [o for o in proposal if o.partition_by == PartitionByType.UNIFORM.value], topology.devices, "rank"
        )
        minheap: list[OrderedDeviceHardware] | None = None
        for group in _group_and_sort_non_uniform_sharding_options(proposal, self._sort_by, self._balance_modules):
            first = group.sharding_options[0]
            if first.partition_by == PartitionByType.HOST.value:
                self._cohost_partition(group, hosts)
                minheap = None  # the hosts' devices changed under the heap
            elif first.partition_by == PartitionByType.DEVICE.value:
                if minheap is None:
                    minheap = self._establish_minheap(topology.devices, topology.local_world_size)
                for option in group.sharding_options:
                    self._device_partition(option, minheap)
            else:
                raise RuntimeError(f"unexpected partition_by {first.partition_by!r} of {first.fqn}")
        self._topology = topology
        return proposal

    @staticmethod
    def _establish_minheap(devices: list[DeviceHardware], local_world_size: int) -> list[OrderedDeviceHardware]:
        heap = [OrderedDeviceHardware(d, local_world_size) for d in devices]
        heapq.heapify(heap)
        return heap

    @staticmethod
    def _device_partition(option: ShardingOption, minheap: list[OrderedDeviceHardware]) -> None:
        for shard in option.shards:
            assert shard.storage is not None and shard.perf is not None
            skipped, placed = [], False
            while minheap and not placed:
                candidate = minheap[0]
                if shard.storage.fits_in(candidate.device.storage):
                    shard.rank = candidate.device.rank
                    candidate.device.storage -= shard.storage
                    candidate.device.perf += shard.perf
                    heapq.heapreplace(minheap, candidate)  # its load changed: sift it
                    placed = True
                else:
                    skipped.append(heapq.heappop(minheap))
            for ordered in skipped:
                heapq.heappush(minheap, ordered)
            if not placed:
                raise _no_room(option, shard, [o.device for o in minheap], "rank")

    @staticmethod
    def _cohost_partition(group: ShardingOptionGroup, hosts: list[list[DeviceHardware]]) -> None:
        for devices in sorted(hosts, key=lambda ds: sum(d.perf.total for d in ds)):
            free = Storage(0, 0)
            for d in devices:
                free += d.storage
            if not group.storage_sum.fits_in(free):
                continue
            trial = copy.deepcopy(devices)
            try:
                minheap = None
                for option in group.sharding_options:
                    if option.sharding_type == ShardingType.TABLE_ROW_WISE.value:
                        GreedyPerfPartitioner._uniform_partition([option], trial, "rank of the host")
                        minheap = None
                    elif option.sharding_type == ShardingType.TABLE_COLUMN_WISE.value:
                        if minheap is None:
                            minheap = GreedyPerfPartitioner._establish_minheap(trial, len(trial))
                        GreedyPerfPartitioner._device_partition(option, minheap)
                    else:
                        raise RuntimeError(f"unexpected host-level sharding type {option.sharding_type}")
            except PlannerError:
                for option in group.sharding_options:
                    for shard in option.shards:
                        shard.rank = None
                continue
            trial.sort(key=lambda d: d.rank)
            for device, placed in zip(devices, trial, strict=True):
                device.storage, device.perf = placed.storage, placed.perf
            return
        option = max(group.sharding_options, key=lambda o: o.total_storage)
        needed = group.storage_sum
        most = max((sum((d.storage for d in ds), Storage(0, 0)) for ds in hosts), default=Storage(0, 0))
        raise PlannerError(
            error_type=PlannerErrorType.PARTITION,
            message=(
                f"table {option.fqn!r} ({option.sharding_type}, {option.compute_kernel}) needs "
                f"{storage_repr_in_bytes(needed)} on the ranks of one host, and no host has room for its "
                f"shards; the most free storage on one host is {storage_repr_in_bytes(most)}"
            ),
        )

    @staticmethod
    def _get_host_level_devices(topology: Topology) -> list[list[DeviceHardware]]:
        L = topology.local_world_size
        return [topology.devices[i:i + L] for i in range(0, topology.world_size, L)]

    @staticmethod
    def _uniform_partition(options: list[ShardingOption], devices: list[DeviceHardware], where: str) -> None:
        for option in options:
            if option.num_shards != len(devices):
                raise RuntimeError(
                    f"For a uniform partition, the number of shards ({option.num_shards}) of {option.fqn} must "
                    f"equal the number of devices ({len(devices)})"
                )
            for shard, device in zip(option.shards, devices, strict=True):
                assert shard.storage is not None and shard.perf is not None
                if not shard.storage.fits_in(device.storage):
                    raise _no_room(option, shard, [device], f"{where} ({device.rank})")
                shard.rank = device.rank
                device.storage -= shard.storage
                device.perf += shard.perf


class MemoryBalancedPartitioner(Partitioner):
    """Binary-searches the smallest per-rank memory bound under which the greedy partitioner
    (sorting by perf) still finds a plan whose perf is within ``tolerance`` of the unbounded
    plan, trying at most ``max_search_count`` bounds.

    The bounded memory is the compute device's: HBM on cuda, DDR on cpu (TorchRec bounds HBM
    only, which on cpu has nothing to balance).
    """

    def __init__(self, max_search_count: int = 10, tolerance: float = 0.02, balance_modules: bool = False) -> None:
        self._max_search_count = max_search_count
        self._tolerance = tolerance
        self._balance_modules = balance_modules

    def partition(self, proposal: list[ShardingOption], storage_constraint: Topology) -> list[ShardingOption]:
        perf_model = NoopPerfModel(storage_constraint)
        partitioner = GreedyPerfPartitioner(sort_by=SortBy.PERF, balance_modules=self._balance_modules)
        topology = copy.deepcopy(storage_constraint)
        memory = "hbm" if topology.compute_device == "cuda" else "ddr"

        best_plan = copy.deepcopy(partitioner.partition(proposal, topology))
        original_perf = perf_model.rate(best_plan)
        # Search between a perfect balance and the unbounded plan's peak (TorchRec starts from
        # the rank's capacity, which wastes most probes when the model is much smaller).
        used = [0] * topology.world_size
        for option in best_plan:
            for shard in option.shards:
                used[shard.rank] += getattr(shard.storage, memory)
        high = max(used)
        low = sum(used) // topology.world_size
        logger.info(f"searching a per-rank {memory} bound in ({bytes_to_gb(low):.3f}, {bytes_to_gb(high):.3f}) GB")

        searches = 0
        # stop within 10 MB, or within 1% of the balanced share for small models
        resolution = min(10 * 1024**2, max(1, low // 100))
        while searches < self._max_search_count and low + resolution < high:
            searches += 1
            reset_shard_rank(proposal)
            mid = (low + high) // 2
            bounded = copy.deepcopy(storage_constraint)
            for device in bounded.devices:
                setattr(device.storage, memory, min(mid, getattr(device.storage, memory)))
            try:
                plan = partitioner.partition(proposal, bounded)
            except PlannerError:
                low = mid
                continue
            if perf_model.rate(plan) > original_perf * (1 + self._tolerance):
                low = mid
            else:
                best_plan = copy.deepcopy(plan)
                high = mid
        # the caller reads ranks off the proposal's own shards
        for option, placed in zip(proposal, best_plan, strict=True):
            for shard, placed_shard in zip(option.shards, placed.shards, strict=True):
                shard.rank = placed_shard.rank
        return proposal
