"""Shard shapes of each sharding type, placement strings, and plans written by hand.

``construct_module_sharding_plan`` builds one module's plan from a generator per table
(``data_parallel()``, ``table_wise(rank)``, ``row_wise()``, ``column_wise(ranks)``,
``table_row_wise(host_index)``), for when the layout is chosen rather than planned::

    plan = construct_module_sharding_plan(
        ebc, {"t0": table_wise(rank=1), "t1": row_wise(), "t2": column_wise(ranks=[0, 1])},
        world_size=2, local_size=2, device_type="cpu",
    )
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import ember
from ember import nn
from emberrec.distributed.planner.constants import MIN_CW_DIM
from emberrec.distributed.types import (
    EmbeddingModuleShardingPlan,
    EnumerableShardingSpec,
    ModuleSharder,
    ParameterSharding,
    ShardingType,
    ShardMetadata,
)

__all__ = [
    "ParameterShardingGenerator",
    "apply_to_all",
    "calculate_shard_sizes_and_offsets",
    "column_wise",
    "construct_module_sharding_plan",
    "data_parallel",
    "get_default_sharders",
    "get_module_to_default_sharders",
    "placement",
    "row_wise",
    "table_row_wise",
    "table_wise",
]


def get_default_sharders() -> list[ModuleSharder[nn.Module]]:
    from emberrec.distributed.embedding import EmbeddingCollectionSharder
    from emberrec.distributed.embeddingbag import EmbeddingBagCollectionSharder

    return [EmbeddingBagCollectionSharder(), EmbeddingCollectionSharder()]


def get_module_to_default_sharders() -> dict[type[nn.Module], ModuleSharder[nn.Module]]:
    return {sharder.module_type: sharder for sharder in get_default_sharders()}


def placement(compute_device: str, rank: int, local_size: int) -> str:
    """``"rank:<r>/<device>"``; a GPU is the rank's local index on its host."""
    device = f"cuda:{rank % local_size}" if compute_device == "cuda" else compute_device
    return f"rank:{rank}/{device}"


def calculate_shard_sizes_and_offsets(
    tensor: object,
    world_size: int,
    local_world_size: int,
    sharding_type: str,
    col_wise_shard_dim: int | None = None,
) -> tuple[list[list[int]], list[list[int]]]:
    """Sizes and offsets of the shards of a ``(rows, columns)`` table.

    data_parallel: one full copy per rank. table_wise: one shard, the table. row_wise: one row
    block per rank; table_row_wise: one per rank of a host. column_wise and table_column_wise:
    column blocks of a width that divides the table's and is a multiple of 4, the smallest such
    width >= ``col_wise_shard_dim`` (default ``MIN_CW_DIM``), or the whole width if none is.
    ``tensor`` is anything with a 2-D ``shape``.
    """
    rows, columns = (int(v) for v in tensor.shape)  # type: ignore[attr-defined]
    if sharding_type == ShardingType.DATA_PARALLEL.value:
        return [[rows, columns] for _ in range(world_size)], [[0, 0] for _ in range(world_size)]
    if sharding_type == ShardingType.TABLE_WISE.value:
        return [[rows, columns]], [[0, 0]]
    if sharding_type == ShardingType.ROW_WISE.value:
        return _row_blocks(rows, world_size, columns)
    if sharding_type == ShardingType.TABLE_ROW_WISE.value:
        return _row_blocks(rows, local_world_size, columns)
    if sharding_type in (ShardingType.COLUMN_WISE.value, ShardingType.TABLE_COLUMN_WISE.value):
        return _column_blocks(columns, rows, col_wise_shard_dim)
    raise ValueError(f"Unrecognized or unsupported sharding type provided: {sharding_type}")


def _row_blocks(rows: int, num_devices: int, columns: int) -> tuple[list[list[int]], list[list[int]]]:
    # Blocks of ceil(rows / n) rows, as the row-wise lookup buckets ids by id // block; so the
    # last non-empty block is smaller and trailing ranks may get none (5 rows on 4 ranks: 2,2,1,0).
    block = math.ceil(rows / num_devices)
    sizes, offsets, start = [], [], 0
    for _ in range(num_devices):
        count = min(block, rows - start)
        sizes.append([count, columns])
        offsets.append([start, 0])
        start += count
    return sizes, offsets


def _base_dim(lower_bound: int, dim: int) -> int:
    for width in range(max(lower_bound, 1), dim):
        if dim % width == 0 and width % 4 == 0:
            return width
    return dim


def _column_blocks(columns: int, rows: int, col_wise_shard_dim: int | None) -> tuple[list[list[int]], list[list[int]]]:
    width = _base_dim(col_wise_shard_dim if col_wise_shard_dim else MIN_CW_DIM, columns)
    return [[rows, width] for _ in range(columns // width)], [[0, width * i] for i in range(columns // width)]


# (param, local_size, world_size, device_type, sharder) -> the table's ParameterSharding
ParameterShardingGenerator = Callable[[nn.Parameter, int, int, str, ModuleSharder[nn.Module]], ParameterSharding]


def _parameter_sharding(
    param: nn.Parameter,
    sharding_type: str,
    shards: list[tuple[list[int], list[int], int]],
    local_size: int,
    device_type: str,
    sharder: ModuleSharder[nn.Module],
) -> ParameterSharding:
    """A ``ParameterSharding`` of (size, offset, rank) shards, looked up by the first kernel the
    sharder offers for the sharding type (fused for sharded tables, dense for replicated ones)."""
    kernels = sharder.compute_kernels(sharding_type, device_type)
    spec = None
    if sharding_type != ShardingType.DATA_PARALLEL.value:
        spec = EnumerableShardingSpec(
            [ShardMetadata(offset, size, placement(device_type, rank, local_size)) for size, offset, rank in shards]
        )
    return ParameterSharding(
        sharding_type=sharding_type,
        compute_kernel=kernels[0],
        ranks=[rank for _, _, rank in shards],
        sharding_spec=spec,
    )


def _check_rank(what: str, rank: int, world_size: int) -> None:
    if not 0 <= rank < world_size:
        raise ValueError(f"{what}: rank {rank} is outside the world of {world_size} ranks")


def data_parallel() -> ParameterShardingGenerator:
    """A full copy of the table on every rank."""

    def generate(param: nn.Parameter, local_size: int, world_size: int, device_type: str,
                 sharder: ModuleSharder[nn.Module]) -> ParameterSharding:
        sizes, offsets = calculate_shard_sizes_and_offsets(param, world_size, local_size, ShardingType.DATA_PARALLEL.value)
        shards = [(s, o, r) for r, (s, o) in enumerate(zip(sizes, offsets, strict=True))]
        return _parameter_sharding(param, ShardingType.DATA_PARALLEL.value, shards, local_size, device_type, sharder)

    return generate


def table_wise(rank: int) -> ParameterShardingGenerator:
    """The whole table on ``rank``."""

    def generate(param: nn.Parameter, local_size: int, world_size: int, device_type: str,
                 sharder: ModuleSharder[nn.Module]) -> ParameterSharding:
        _check_rank("table_wise", rank, world_size)
        rows, cols = param.shape
        return _parameter_sharding(param, ShardingType.TABLE_WISE.value, [([rows, cols], [0, 0], rank)],
                                   local_size, device_type, sharder)

    return generate


def row_wise() -> ParameterShardingGenerator:
    """Row blocks of ``ceil(rows / world_size)`` on ranks 0, 1, ... (trailing ones may be empty)."""

    def generate(param: nn.Parameter, local_size: int, world_size: int, device_type: str,
                 sharder: ModuleSharder[nn.Module]) -> ParameterSharding:
        sizes, offsets = calculate_shard_sizes_and_offsets(param, world_size, local_size, ShardingType.ROW_WISE.value)
        shards = [(s, o, r) for r, (s, o) in enumerate(zip(sizes, offsets, strict=True))]
        return _parameter_sharding(param, ShardingType.ROW_WISE.value, shards, local_size, device_type, sharder)

    return generate


def column_wise(ranks: list[int]) -> ParameterShardingGenerator:
    """Equal column blocks, the i-th on ``ranks[i]`` (a rank may take several). The block
    width must be a multiple of 4, as the planner's are."""

    def generate(param: nn.Parameter, local_size: int, world_size: int, device_type: str,
                 sharder: ModuleSharder[nn.Module]) -> ParameterSharding:
        rows, cols = param.shape
        if not ranks:
            raise ValueError("column_wise: ranks is empty")
        for rank in ranks:
            _check_rank("column_wise", rank, world_size)
        width, rest = divmod(cols, len(ranks))
        if rest or width % 4:
            raise ValueError(
                f"column_wise: {cols} columns do not split into {len(ranks)} blocks of a width that is a multiple of 4"
            )
        shards = [([rows, width], [0, i * width], rank) for i, rank in enumerate(ranks)]
        return _parameter_sharding(param, ShardingType.COLUMN_WISE.value, shards, local_size, device_type, sharder)

    return generate


def table_row_wise(host_index: int) -> ParameterShardingGenerator:
    """Row blocks over the ranks of host ``host_index`` (ranks ``host_index * local_size ...``)."""

    def generate(param: nn.Parameter, local_size: int, world_size: int, device_type: str,
                 sharder: ModuleSharder[nn.Module]) -> ParameterSharding:
        hosts = world_size // local_size
        if not 0 <= host_index < hosts:
            raise ValueError(f"table_row_wise: host_index {host_index} is outside the {hosts} hosts")
        sizes, offsets = calculate_shard_sizes_and_offsets(param, world_size, local_size, ShardingType.TABLE_ROW_WISE.value)
        first = host_index * local_size
        shards = [(s, o, first + r) for r, (s, o) in enumerate(zip(sizes, offsets, strict=True))]
        return _parameter_sharding(param, ShardingType.TABLE_ROW_WISE.value, shards, local_size, device_type, sharder)

    return generate


def _sharder_for(module: nn.Module, sharder: ModuleSharder[nn.Module] | None) -> ModuleSharder[nn.Module]:
    if sharder is None:
        sharder = get_module_to_default_sharders().get(type(module))
        if sharder is None:
            raise ValueError(f"no default sharder for {type(module).__name__}; pass sharder=")
    elif not isinstance(module, sharder.module_type):
        raise TypeError(f"{type(sharder).__name__} shards {sharder.module_type.__name__}, not {type(module).__name__}")
    return sharder


def apply_to_all(
    module: nn.Module,
    parameter_sharding_generator: ParameterShardingGenerator,
    sharder: ModuleSharder[nn.Module] | None = None,
) -> dict[str, ParameterShardingGenerator]:
    """The same generator for every shardable table of ``module``."""
    return dict.fromkeys(_sharder_for(module, sharder).shardable_parameters(module), parameter_sharding_generator)


def construct_module_sharding_plan(
    module: nn.Module,
    per_param_sharding: dict[str, ParameterShardingGenerator],
    sharder: ModuleSharder[nn.Module] | None = None,
    local_size: int | None = None,
    world_size: int | None = None,
    device_type: str | None = None,
) -> EmbeddingModuleShardingPlan:
    """One module's plan from a generator per table; every shardable table needs one.

    ``world_size`` is required (TorchRec reads it from the default process group, which ember
    does not have yet); ``local_size`` defaults to ``world_size`` (one host) and ``device_type``
    to cuda when available, else cpu.
    """
    sharder = _sharder_for(module, sharder)
    if world_size is None:
        raise ValueError("construct_module_sharding_plan: pass world_size (there is no default process group)")
    local_size = local_size or world_size
    if world_size <= 0 or world_size % local_size:
        raise ValueError(f"world_size {world_size} is not a whole number of hosts of local_size {local_size}")
    if device_type is None:
        cuda: Any = getattr(ember, "cuda", None)
        device_type = "cuda" if cuda is not None and cuda.is_available() else "cpu"
    params = sharder.shardable_parameters(module)
    if params.keys() != per_param_sharding.keys():
        missing = sorted(params.keys() - per_param_sharding.keys())
        unknown = sorted(per_param_sharding.keys() - params.keys())
        raise ValueError(
            f"per_param_sharding must name every shardable table of the module: missing {missing}, unknown {unknown}"
        )
    plan = EmbeddingModuleShardingPlan()
    for name, generate in per_param_sharding.items():
        plan[name] = generate(params[name], local_size, world_size, device_type, sharder)
    return plan
