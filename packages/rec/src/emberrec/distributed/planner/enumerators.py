"""Listing the sharding options of every shardable table."""

from __future__ import annotations

import logging

from ember import nn
from emberrec.distributed.embedding_types import EmbeddingComputeKernel
from emberrec.distributed.planner.constants import BATCH_SIZE, POOLING_FACTOR
from emberrec.distributed.planner.shard_estimators import EmbeddingPerfEstimator, EmbeddingStorageEstimator
from emberrec.distributed.planner.types import (
    Enumerator,
    ParameterConstraints,
    PartitionByType,
    Shard,
    ShardEstimator,
    ShardingOption,
    Topology,
)
from emberrec.distributed.planner.utils import sharder_name
from emberrec.distributed.sharding_plan import calculate_shard_sizes_and_offsets
from emberrec.distributed.types import ModuleSharder, ShardingType

logger: logging.Logger = logging.getLogger(__name__)


class EmbeddingEnumerator(Enumerator):
    """Lists, for every table of every module a sharder handles, each allowed pair of sharding
    type and compute kernel as a ``ShardingOption`` with its shards, then estimates them.

    Modules are found by walking the model from the root; a module a sharder handles is planned
    whole and not walked into. Constraints (keyed by table name) narrow the sharding types and
    kernels and give the pooling factors and column-block width.
    """

    def __init__(
        self,
        topology: Topology,
        batch_size: int = BATCH_SIZE,
        constraints: dict[str, ParameterConstraints] | None = None,
        estimator: ShardEstimator | list[ShardEstimator] | None = None,
    ) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError(f"EmbeddingEnumerator: batch_size must be a positive int, got {batch_size!r}")
        self._compute_device = topology.compute_device
        self._world_size = topology.world_size
        self._local_world_size = topology.local_world_size
        self._batch_size = batch_size
        self._constraints = constraints
        self._sharder_map: dict[str, ModuleSharder[nn.Module]] = {}
        if estimator is None:
            self._estimators: list[ShardEstimator] = [
                EmbeddingPerfEstimator(topology=topology, constraints=constraints),
                EmbeddingStorageEstimator(topology=topology, constraints=constraints),
            ]
        else:
            self._estimators = estimator if isinstance(estimator, list) else [estimator]

    def enumerate(self, module: nn.Module, sharders: list[ModuleSharder[nn.Module]]) -> list[ShardingOption]:
        self._sharder_map = {sharder_name(sharder.module_type): sharder for sharder in sharders}
        sharding_options: list[ShardingOption] = []
        for path, child in _shardable_modules(module, self._sharder_map):
            sharder = self._sharder_map[sharder_name(type(child))]
            is_pooled = ShardingOption.module_pooled(child, path)
            for name, param in sharder.shardable_parameters(child).items():
                c = self._constraints.get(name) if self._constraints else None
                input_lengths = list(c.pooling_factors) if c else [POOLING_FACTOR]
                options_of_table = 0
                for sharding_type in self._filter_sharding_types(name, sharder.sharding_types(self._compute_device)):
                    kernels = sharder.compute_kernels(sharding_type, self._compute_device)
                    for compute_kernel in self._filter_compute_kernels(name, kernels):
                        sizes, offsets = calculate_shard_sizes_and_offsets(
                            tensor=param,
                            world_size=self._world_size,
                            local_world_size=self._local_world_size,
                            sharding_type=sharding_type,
                            col_wise_shard_dim=c.min_partition if c else None,
                        )
                        sharding_options.append(
                            ShardingOption(
                                name=name,
                                tensor=param,
                                module=(path, child),
                                input_lengths=input_lengths,
                                batch_size=self._batch_size,
                                sharding_type=sharding_type,
                                partition_by=get_partition_by_type(sharding_type),
                                compute_kernel=compute_kernel,
                                shards=[Shard(size=s, offset=o) for s, o in zip(sizes, offsets, strict=True)],
                                cache_params=c.cache_params if c else None,
                                enforce_hbm=c.enforce_hbm if c else None,
                                stochastic_rounding=c.stochastic_rounding if c else None,
                                bounds_check_mode=c.bounds_check_mode if c else None,
                                is_pooled=is_pooled,
                            )
                        )
                        options_of_table += 1
                if not options_of_table:
                    raise RuntimeError(
                        "No available sharding type and compute kernel combination after applying user "
                        f"provided constraints for {name} (sharder {type(sharder).__name__}, compute device "
                        f"{self._compute_device}: sharding types {sharder.sharding_types(self._compute_device)})"
                    )
        self.populate_estimates(sharding_options)
        return sharding_options

    def populate_estimates(self, sharding_options: list[ShardingOption]) -> None:
        for estimator in self._estimators:
            estimator.estimate(sharding_options, self._sharder_map)

    def _filter_sharding_types(self, name: str, allowed: list[str]) -> list[str]:
        c = self._constraints.get(name) if self._constraints else None
        if not c or not c.sharding_types:
            return list(allowed)
        kept = [t for t in allowed if t in c.sharding_types]
        if not kept:
            logger.warning(
                f"No available sharding types after applying user provided constraints for {name}: "
                f"constrained to {c.sharding_types}, the sharder allows {allowed}"
            )
        return kept

    def _filter_compute_kernels(self, name: str, allowed: list[str]) -> list[str]:
        c = self._constraints.get(name) if self._constraints else None
        kept = [k for k in allowed if k in c.compute_kernels] if c and c.compute_kernels else list(allowed)
        # where both run, fused beats dense (the optimizer runs inside backward)
        if EmbeddingComputeKernel.DENSE.value in kept and EmbeddingComputeKernel.FUSED.value in kept:
            kept.remove(EmbeddingComputeKernel.DENSE.value)
        if not kept:
            logger.warning(f"No available compute kernels after applying user provided constraints for {name}")
        return kept


def _shardable_modules(module: nn.Module, sharder_map: dict[str, ModuleSharder[nn.Module]]) -> list[tuple[str, nn.Module]]:
    """(path, module) of each module a sharder handles, in model order, not looking inside them."""
    found: list[tuple[str, nn.Module]] = []

    def walk(path: str, m: nn.Module) -> None:
        if sharder_name(type(m)) in sharder_map:
            found.append((path, m))
            return
        for child_name, child in m.named_children():
            walk(f"{path}.{child_name}" if path else child_name, child)

    walk("", module)
    return found


def get_partition_by_type(sharding_type: str) -> str:
    """The ``PartitionByType`` value of a sharding type."""
    if sharding_type in (ShardingType.TABLE_WISE.value, ShardingType.COLUMN_WISE.value):
        return PartitionByType.DEVICE.value
    if sharding_type in (ShardingType.TABLE_ROW_WISE.value, ShardingType.TABLE_COLUMN_WISE.value):
        return PartitionByType.HOST.value
    if sharding_type in (ShardingType.ROW_WISE.value, ShardingType.DATA_PARALLEL.value):
        return PartitionByType.UNIFORM.value
    raise ValueError(f"Unrecognized or unsupported sharding type provided: {sharding_type}")
