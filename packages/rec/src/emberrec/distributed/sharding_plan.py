"""Shard shapes of each sharding type, and the placement strings of a plan."""

from __future__ import annotations

import math

from emberrec.distributed.planner.constants import MIN_CW_DIM
from emberrec.distributed.types import ShardingType

__all__ = ["calculate_shard_sizes_and_offsets", "placement"]


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
