"""The planner's report: per-rank memory, perf, input/output sizes and shards, then per table."""

from __future__ import annotations

import logging
from typing import Any

from ember import nn
from emberrec.distributed.planner.constants import BIGINT_DTYPE, NUM_POOLINGS
from emberrec.distributed.planner.shard_estimators import _calculate_shard_io_sizes, _per_feature
from emberrec.distributed.planner.storage_reservations import (
    FixedPercentageStorageReservation,
    HeuristicalStorageReservation,
)
from emberrec.distributed.planner.types import (
    ParameterConstraints,
    Perf,
    ShardingOption,
    Stats,
    Storage,
    StorageReservation,
    Topology,
)
from emberrec.distributed.planner.utils import bytes_to_gb, bytes_to_mb, sharder_name
from emberrec.distributed.types import ModuleSharder, ShardingPlan, ShardingType

logger: logging.Logger = logging.getLogger(__name__)

MIN_WIDTH = 90

_ABBREVIATIONS = {
    ShardingType.DATA_PARALLEL.value: "DP",
    ShardingType.TABLE_WISE.value: "TW",
    ShardingType.COLUMN_WISE.value: "CW",
    ShardingType.ROW_WISE.value: "RW",
    ShardingType.TABLE_ROW_WISE.value: "TWRW",
    ShardingType.TABLE_COLUMN_WISE.value: "TWCW",
}


def _get_sharding_type_abbr(sharding_type: str) -> str:
    try:
        return _ABBREVIATIONS[sharding_type]
    except KeyError:
        raise ValueError(f"Unrecognized or unsupported sharding type provided: {sharding_type}") from None


def round_to_one_sigfig(x: float) -> str:
    return f'{float(f"{x:.1g}"):g}'


def _format_perf_breakdown(perf: Perf) -> str:
    parts = [perf.fwd_compute, perf.fwd_comms, perf.bwd_compute, perf.bwd_comms]
    breakdown = ",".join(str(round(p)) if p >= 1 else round_to_one_sigfig(p) for p in parts)
    return f"{round(perf.total, 3)} ({breakdown})"


def _format_storage_breakdown(storage: Storage) -> str:
    return f"({round(bytes_to_gb(storage.hbm), 3)} GB, {round(bytes_to_gb(storage.ddr), 3)} GB)"


def _format_table(table: list[list[Any]]) -> list[str]:
    widths = [max(len(str(row[i])) for row in table) + 3 for i in range(len(table[0]))]
    return ["".join(str(value).rjust(width) for value, width in zip(row, widths, strict=True)) for row in table]


def _collapse_consecutive_ranks(ranks: list[int]) -> list[str]:
    if len(ranks) > 1 and ranks == list(range(min(ranks), max(ranks) + 1)):
        return [f"{min(ranks)}-{max(ranks)}"]
    return [str(rank) for rank in ranks]


def _max_text(values: list[float], unit: str) -> str:
    top = max(values)
    ranks = [i for i, v in enumerate(values) if v == top]
    return f"{round(top, 3)} {unit} on {'ranks' if len(ranks) > 1 else 'rank'} {','.join(_collapse_consecutive_ranks(ranks))}"


class EmbeddingStats(Stats):
    """Writes the stats table of a plan to the ``logging`` logger of this module (INFO) and
    keeps it: ``text`` (one string) and ``_stats_table`` (its lines, as in TorchRec)."""

    def __init__(self) -> None:
        self._width = MIN_WIDTH
        self._stats_table: list[str] = []

    @property
    def text(self) -> str:
        """The table the last ``log`` wrote."""
        return "\n".join(self._stats_table)

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
        debug: bool = True,
    ) -> None:
        """Tabulates, per rank, the memory used (shards, dense part and input ids; HBM and DDR
        with the share of the rank's capacity), the perf, the input and output MB per step and
        the number of tables of each sharding type; with ``debug``, one row per table too."""
        world = topology.world_size
        placed = bool(sharding_plan.plan)
        reserved_percent = getattr(storage_reservation, "_percentage", 0.0) if isinstance(
            storage_reservation, (FixedPercentageStorageReservation, HeuristicalStorageReservation)) else 0.0
        dense = Storage(0, 0)
        kjt = Storage(0, 0)
        if isinstance(storage_reservation, HeuristicalStorageReservation):
            dense = storage_reservation._dense_storage or dense
            kjt = storage_reservation._kjt_storage or kjt

        types: list[dict[str, int]] = [{} for _ in range(world)]
        inputs, outputs = [0.0] * world, [0.0] * world
        used = [Storage(0, 0) for _ in range(world)]
        perf = [Perf(0, 0, 0, 0) for _ in range(world)]
        kernels: dict[str, int] = {}
        for option in best_plan:
            kernels[option.compute_kernel] = kernels.get(option.compute_kernel, 0) + 1
            if not placed:
                continue
            num_poolings, batch_sizes = _per_feature(constraints, option)
            ins, outs = _calculate_shard_io_sizes(
                option.sharding_type, batch_sizes, world, topology.local_world_size, option.input_lengths,
                option.tensor.shape[1], [s.size for s in option.shards], BIGINT_DTYPE, option.tensor.element_size(),
                num_poolings, option.is_pooled,
            )
            abbr = _get_sharding_type_abbr(option.sharding_type)
            for shard, i, o in zip(option.shards, ins, outs, strict=True):
                rank = shard.rank
                assert rank is not None and shard.storage is not None and shard.perf is not None
                types[rank][abbr] = types[rank].get(abbr, 0) + 1
                inputs[rank] += bytes_to_mb(i)
                outputs[rank] += bytes_to_mb(o)
                used[rank] += shard.storage
                perf[rank] += shard.perf
        used = [u + dense + kjt for u in used]
        all_types = sorted({t for per_rank in types for t in per_rank})

        table: list[list[Any]] = [
            ["Rank", "HBM (GB)", "DDR (GB)", "Perf (ms)", "Input (MB)", "Output (MB)", "Shards"],
            ["------", "----------", "----------", "-----------", "------------", "-------------", "--------"],
        ]
        for rank, device in enumerate(topology.devices):
            hbm_ratio = used[rank].hbm / device.storage.hbm if device.storage.hbm else 0
            ddr_ratio = used[rank].ddr / device.storage.ddr if device.storage.ddr else 0
            shards = " ".join(f"{t}: {types[rank].get(t, 0)}" for t in all_types)
            table.append([
                rank,
                f"{round(bytes_to_gb(used[rank].hbm), 3)} ({hbm_ratio:.0%})",
                f"{round(bytes_to_gb(used[rank].ddr), 3)} ({ddr_ratio:.0%})",
                _format_perf_breakdown(perf[rank]),
                f"{round(inputs[rank], 2)}",
                f"{round(outputs[rank], 2)}",
                shards,
            ])
        formatted = _format_table(table)
        self._width = max(self._width, len(formatted[0]) + 8)

        if debug:
            sharder_map = {sharder_name(s.module_type): s for s in sharders or []}
            param_table: list[list[Any]] = [
                ["FQN", "Sharding", "Compute Kernel", "Perf (ms)", "Storage (HBM, DDR)", "Cache Load Factor",
                 "Pooling Factor", "Num Poolings", "Output", "Weighing", "Sharder", "Features",
                 "Emb Dim (CW Dim)", "Hash Size", "Ranks"],
                ["-----", "----------", "----------------", "-----------", "--------------------",
                 "-------------------", "----------------", "--------------", "--------", "----------",
                 "---------", "----------", "------------------", "-----------", "-------"],
            ]
            for option in best_plan:
                option_perf = Perf(0, 0, 0, 0)
                for shard in option.shards:
                    option_perf += shard.perf or Perf(0, 0, 0, 0)
                c = constraints.get(option.name) if constraints else None
                num_poolings = c.num_poolings if c and c.num_poolings else [NUM_POOLINGS] * option.num_inputs
                columns = option.tensor.shape[1]
                cw = option.sharding_type in (ShardingType.COLUMN_WISE.value, ShardingType.TABLE_COLUMN_WISE.value)
                sharder = sharder_map.get(sharder_name(type(option.module[1])))
                ranks = sorted(s.rank for s in option.shards if s.rank is not None)
                load_factor = option.cache_params.load_factor if option.cache_params else None
                param_table.append([
                    option.fqn,
                    _get_sharding_type_abbr(option.sharding_type),
                    option.compute_kernel,
                    _format_perf_breakdown(option_perf),
                    _format_storage_breakdown(option.total_storage),
                    str(load_factor),
                    str(round(sum(option.input_lengths), 3)),
                    str(round(sum(num_poolings), 3)),
                    "pooled" if option.is_pooled else "sequence",
                    "weighted" if option.is_weighted else "unweighted",
                    type(sharder).__name__ if sharder else "None",
                    option.num_inputs,
                    f"{columns} ({option.shards[0].size[1]})" if cw else f"{columns}",
                    option.tensor.shape[0],
                    ",".join(_collapse_consecutive_ranks(ranks)) if placed else "None",
                ])
            formatted_params = _format_table(param_table)
            self._width = max(self._width, len(formatted_params[0]) + 6)

        width = self._width
        lines = self._stats_table
        lines.clear()

        def row(text: str, indent: int = 1) -> None:
            lines.append(f"#{' ' * indent}{text: <{width - 2 - indent}}#")

        def blank() -> None:
            lines.append(f"#{'': ^{width - 2}}#")

        lines.append("#" * width)
        lines.append(f"#{'--- Planner Statistics ---': ^{width - 2}}#")
        lines.append(f"#{f'--- Evaluated {num_proposals} proposal(s), found {num_plans} possible plan(s), ran for {run_time:.2f}s ---': ^{width - 2}}#")
        lines.append(f"#{'-' * (width - 4): ^{width - 2}}#")
        if placed:
            for text in formatted:
                row(text)
            blank()
            row("Perf: Total perf (Forward compute, Forward comms, Backward compute, Backward comms)")
            row("Input: MB/iteration, Output: MB/iteration, Shards: number of tables")
            row("HBM, DDR: estimated peak memory for shards, dense tensors and features (KJT), "
                "with the share of the rank's capacity")
        if debug:
            blank()
            row("Parameter Info:")
            for text in formatted_params:
                row(text)
        blank()
        row(f"Batch Size: {batch_size}")
        if not placed:
            blank()
            row(f"World Size: {world}")
        blank()
        row("Compute Kernels:")
        for kernel, count in sorted(kernels.items()):
            row(f"{kernel}: {count}", indent=4)
        if debug and placed:
            blank()
            row(f"Longest Critical Path (Maximum of Total Perf): {_max_text([p.total for p in perf], 'ms')}")
            row(f"Maximum of Forward Compute: {_max_text([p.fwd_compute for p in perf], 'ms')}")
            row(f"Maximum of Forward Comms: {_max_text([p.fwd_comms for p in perf], 'ms')}")
            row(f"Maximum of Backward Compute: {_max_text([p.bwd_compute for p in perf], 'ms')}")
            row(f"Maximum of Backward Comms: {_max_text([p.bwd_comms for p in perf], 'ms')}")
            memory = "hbm" if topology.compute_device == "cuda" else "ddr"
            peak = [bytes_to_gb(getattr(u, memory)) for u in used]
            blank()
            row(f"Peak Memory Pressure: {_max_text(peak, 'GB')} ({memory.upper()})")
        if debug:
            device = topology.devices[0].storage
            blank()
            row("Usable Memory:")
            hbm = device.hbm * (1 - reserved_percent) if topology.compute_device == "cuda" else device.hbm
            ddr = device.ddr * (1 - reserved_percent) if topology.compute_device == "cpu" else device.ddr
            row(f"HBM: {round(bytes_to_gb(hbm), 3)} GB, DDR: {round(bytes_to_gb(ddr), 3)} GB", indent=4)
            row(f"Percent of the compute device's memory: {1 - reserved_percent:.0%}", indent=4)
            if isinstance(storage_reservation, HeuristicalStorageReservation):
                blank()
                row("Dense Storage (per rank): ")
                row(f"HBM: {round(bytes_to_gb(dense.hbm), 3)} GB, DDR: {round(bytes_to_gb(dense.ddr), 3)} GB", indent=4)
                blank()
                row("KJT Storage (per rank): ")
                row(f"HBM: {round(bytes_to_gb(kjt.hbm), 3)} GB, DDR: {round(bytes_to_gb(kjt.ddr), 3)} GB", indent=4)
        lines.append("#" * width)
        for text in lines:
            logger.info(text)
