"""Per-shard estimates of step time (``EmbeddingPerfEstimator``) and memory
(``EmbeddingStorageEstimator``).

Both start from the ids a rank's batch brings to a table: with, per feature f of the table,
pooling factor ``pf_f`` (ids per sample), ``np_f`` poolings per sample and batch size ``bs_f``,

    ids    = sum_f pf_f * np_f * bs_f                       (per rank)
    rows   = sum_f np_f * bs_f   if pooled, else ids         (output rows per rank)

Storage of a shard of ``r x c`` out of an ``R x C`` table of ``e``-byte elements, W ranks in
hosts of L, ids of 8 bytes:

    weights   = ceil(R*C*e * r*c / (R*C))            (data parallel: the whole table)
    optimizer = ceil(weights * m)                    m: 0 SGD, 1 Adagrad, 1/C row-wise Adagrad,
                                                     2 Adam/LAMB (unknown optimizer: 0)
    input     = ids * 8 * k,   output = rows * w * e * k
                data parallel: k = 1, w = C;      table-wise: k = W, w = C;
                column-wise, table-column-wise: k = W, w = c;
                row-wise: input ids/W * W, output k = W, w = c (a row block sees 1/W of the ids
                of the global batch and returns partial sums for all of it);
                table-row-wise: as row-wise with ids/L.  An empty shard costs nothing.

Weights and optimizer state take device memory (HBM) for the fused and dense kernels on cuda,
host memory (DDR) for the UVM kernels and on cpu; a UVM cache adds ``load_factor`` of them to
HBM. The input/output buffers live where the compute runs: HBM on cuda, DDR on cpu. This is
TorchRec's model; it does not count the lookup kernels' workspace.

Perf (milliseconds) models memory traffic over bandwidth: forward compute reads the ids, the
looked-up rows and writes the outputs at the kernel's bandwidth (``kernel_bw_lookup``);
backward compute is ``bwd_compute_multiplier`` times that (plus a weighted-kernel term for
weighted features); comms move the outputs over the intra- or inter-host bandwidth (all-to-all,
or reduce-scatter for pooled row-wise); data parallel pays an all-reduce of the table's gradient
and the optimizer's elementwise passes instead.
"""

from __future__ import annotations

import logging
import math

import ember
from ember import nn
from ember.tbe import EmbOptimType
from emberrec.distributed.embedding_types import EmbeddingComputeKernel
from emberrec.distributed.planner.constants import (
    BATCHED_COPY_PERF_FACTOR,
    BIGINT_DTYPE,
    DP_ELEMENTWISE_KERNELS_PERF_FACTOR,
    FULL_BLOCK_EMB_DIM,
    HALF_BLOCK_PENALTY,
    QUARTER_BLOCK_PENALTY,
    UVM_CACHING_RATIO,
    WEIGHTED_KERNEL_MULTIPLIER,
    kernel_bw_lookup,
)
from emberrec.distributed.planner.types import (
    ParameterConstraints,
    Perf,
    PlannerError,
    ShardEstimator,
    ShardingOption,
    Storage,
    Topology,
)
from emberrec.distributed.planner.utils import prod, sharder_name
from emberrec.distributed.types import ModuleSharder, ShardingType

logger: logging.Logger = logging.getLogger(__name__)

_TW, _RW, _CW = ShardingType.TABLE_WISE.value, ShardingType.ROW_WISE.value, ShardingType.COLUMN_WISE.value
_TWRW, _TWCW, _DP = ShardingType.TABLE_ROW_WISE.value, ShardingType.TABLE_COLUMN_WISE.value, ShardingType.DATA_PARALLEL.value


def _per_feature(constraints: dict[str, ParameterConstraints] | None, option: ShardingOption) -> tuple[list[float], list[int]]:
    """The option's (num_poolings, batch_sizes), one per feature."""
    c = constraints.get(option.name) if constraints else None
    num_poolings = list(c.num_poolings) if c and c.num_poolings else [1.0] * option.num_inputs
    batch_sizes = list(c.batch_sizes) if c and c.batch_sizes else [option.batch_size] * option.num_inputs
    if not len(option.input_lengths) == len(num_poolings) == len(batch_sizes):
        raise ValueError(
            f"table {option.name!r}: pooling_factors ({len(option.input_lengths)}), num_poolings "
            f"({len(num_poolings)}) and batch_sizes ({len(batch_sizes)}) must have one entry per feature"
        )
    return num_poolings, batch_sizes


def _batch_ids_and_rows(
    input_lengths: list[float], num_poolings: list[float], batch_sizes: list[int], is_pooled: bool
) -> tuple[float, float]:
    ids = sum(pf * n * b for pf, n, b in zip(input_lengths, num_poolings, batch_sizes, strict=True))
    rows = sum(n * b for n, b in zip(num_poolings, batch_sizes, strict=True)) if is_pooled else ids
    return ids, rows


def _caching_ratio(option: ShardingOption, sharder: ModuleSharder[nn.Module]) -> float | None:
    if option.cache_params and option.cache_params.load_factor is not None:
        return option.cache_params.load_factor
    fused = getattr(sharder, "fused_params", None)
    return fused.get("cache_load_factor") if fused else None


def _is_weighted(option: ShardingOption, constraints: dict[str, ParameterConstraints] | None) -> bool:
    module = option.module[1]
    if callable(getattr(module, "is_weighted", None)):
        return bool(module.is_weighted())
    c = constraints.get(option.name) if constraints else None
    return bool(c and c.is_weighted)


class EmbeddingPerfEstimator(ShardEstimator):
    """Estimates each shard's step time (see the module docstring)."""

    def __init__(
        self,
        topology: Topology,
        constraints: dict[str, ParameterConstraints] | None = None,
        is_inference: bool = False,
    ) -> None:
        self._topology = topology
        self._constraints = constraints
        self._is_inference = is_inference

    def estimate(
        self,
        sharding_options: list[ShardingOption],
        sharder_map: dict[str, ModuleSharder[nn.Module]] | None = None,
    ) -> None:
        if not sharding_options:
            return
        if not sharder_map:
            raise ValueError("EmbeddingPerfEstimator.estimate needs the sharder_map of the sharding options")
        topo = self._topology
        for option in sharding_options:
            sharder = sharder_map[sharder_name(type(option.module[1]))]
            num_poolings, batch_sizes = _per_feature(self._constraints, option)
            option.is_weighted = _is_weighted(option, self._constraints)
            fused = getattr(sharder, "fused_params", None) or {}
            prefetch = bool(option.cache_params.prefetch_pipeline if option.cache_params else None) or bool(
                fused.get("prefetch_pipeline", False)
            )
            perfs = perf_func_emb_wall_time(
                shard_sizes=[shard.size for shard in option.shards],
                compute_kernel=option.compute_kernel,
                compute_device=topo.compute_device,
                sharding_type=option.sharding_type,
                batch_sizes=batch_sizes,
                world_size=topo.world_size,
                local_world_size=topo.local_world_size,
                input_lengths=option.input_lengths,
                input_data_type_size=BIGINT_DTYPE,
                table_data_type_size=option.tensor.element_size(),
                num_poolings=num_poolings,
                hbm_mem_bw=topo.hbm_mem_bw,
                ddr_mem_bw=topo.ddr_mem_bw,
                intra_host_bw=topo.intra_host_bw,
                inter_host_bw=topo.inter_host_bw,
                bwd_compute_multiplier=topo.bwd_compute_multiplier,
                is_pooled=option.is_pooled,
                is_weighted=option.is_weighted,
                caching_ratio=_caching_ratio(option, sharder),
                is_inference=self._is_inference,
                prefetch_pipeline=prefetch,
            )
            for shard, perf in zip(option.shards, perfs, strict=True):
                shard.perf = perf


def perf_func_emb_wall_time(
    shard_sizes: list[list[int]],
    compute_kernel: str,
    compute_device: str,
    sharding_type: str,
    batch_sizes: list[int],
    world_size: int,
    local_world_size: int,
    input_lengths: list[float],
    input_data_type_size: float,
    table_data_type_size: float,
    num_poolings: list[float],
    hbm_mem_bw: float,
    ddr_mem_bw: float,
    intra_host_bw: float,
    inter_host_bw: float,
    bwd_compute_multiplier: float,
    is_pooled: bool,
    is_weighted: bool = False,
    caching_ratio: float | None = None,
    is_inference: bool = False,
    prefetch_pipeline: bool = False,
    comm_data_type_size: float | None = None,
) -> list[Perf]:
    """The ``Perf`` of each shard of one sharding option.

    Outputs cross the wire in the table's element size unless ``comm_data_type_size`` says
    otherwise (quantized comms).
    """
    device_bw = kernel_bw_lookup(compute_device, compute_kernel, hbm_mem_bw, ddr_mem_bw, caching_ratio, prefetch_pipeline)
    if device_bw is None:
        raise PlannerError(
            f"No kernel bandwidth exists for this combo of compute device: {compute_device}, compute kernel: {compute_kernel}"
        )
    comm_size = comm_data_type_size or table_data_type_size
    ids, rows = _batch_ids_and_rows(input_lengths, num_poolings, batch_sizes, is_pooled)
    W, L = world_size, local_world_size
    cross_host = W > L
    comms_bw = inter_host_bw if cross_host else intra_host_bw

    def finish(fwd_compute: float, fwd_comms: float, bwd_comms: float, bwd_extra: float = 0.0) -> Perf:
        if is_inference:
            return Perf(fwd_compute, fwd_comms, 0.0, 0.0)
        weighted = fwd_compute * WEIGHTED_KERNEL_MULTIPLIER if is_weighted else 0.0
        return Perf(fwd_compute, fwd_comms, fwd_compute * bwd_compute_multiplier + weighted, bwd_comms + bwd_extra)

    perfs = []
    for hash_size, emb_dim in shard_sizes:
        if sharding_type in (_TW, _CW, _TWCW):
            input_read = math.ceil(ids * W * input_data_type_size) * (2 if is_weighted else 1)
            # the lookup kernel reads at least 32 columns of a row
            lookup = ids * W * max(emb_dim, 32) * table_data_type_size
            output = rows * W * emb_dim * comm_size
            penalty = 1.0
            if emb_dim < FULL_BLOCK_EMB_DIM:
                penalty = HALF_BLOCK_PENALTY if emb_dim >= 64 else QUARTER_BLOCK_PENALTY
            fwd = (input_read + lookup + output) * penalty / device_bw
            perfs.append(finish(fwd, output / comms_bw, output / comms_bw))
        elif sharding_type in (_RW, _TWRW):
            # a row block sees its share of the ids of the ranks it serves
            local_ids = ids / (W if sharding_type == _RW else L)
            local_rows = rows if is_pooled else local_ids
            input_read = math.ceil(local_ids * W * input_data_type_size) * (2 if is_weighted else 1)
            lookup = local_ids * W * emb_dim * table_data_type_size
            output = local_rows * W * emb_dim * comm_size
            fwd = (input_read + lookup + output) / device_bw
            if sharding_type == _RW:
                fwd_comms = output / comms_bw
                bwd_comms = output / comms_bw
            else:
                # reduce-scatter inside the host, then an all-to-all of a host's share across hosts
                fwd_comms = output / intra_host_bw + (output * L / W / inter_host_bw if cross_host else 0.0)
                bwd_comms = output / intra_host_bw
            perfs.append(finish(fwd, fwd_comms, bwd_comms, output * BATCHED_COPY_PERF_FACTOR / device_bw))
        elif sharding_type == _DP:
            input_read = math.ceil(ids * input_data_type_size) * (2 if is_weighted else 1)
            lookup = ids * emb_dim * table_data_type_size
            output = rows * emb_dim * table_data_type_size
            table_bytes = hash_size * emb_dim * table_data_type_size
            fwd = (input_read + lookup + output) / device_bw
            # ring all-reduce of the gradient, one NIC per device; beyond two hosts it halves again
            num_nodes = min(W / L, 2)
            all_reduce = table_bytes * (2 * num_nodes - 1) / num_nodes / (inter_host_bw * L)
            if W > 2 * L:
                all_reduce *= 2
            optimizer = table_bytes * DP_ELEMENTWISE_KERNELS_PERF_FACTOR / device_bw
            perfs.append(finish(fwd, 0.0, all_reduce + optimizer))
        else:
            raise ValueError(f"Unrecognized or unsupported sharding type provided: {sharding_type}")
    return perfs


_OPTIMIZER_MULTIPLIERS = {
    EmbOptimType.SGD: 0.0,
    EmbOptimType.EXACT_SGD: 0.0,
    EmbOptimType.LARS_SGD: 0.0,
    EmbOptimType.NONE: 0.0,
    EmbOptimType.EXACT_ADAGRAD: 1.0,
    EmbOptimType.ADAM: 2.0,
    EmbOptimType.LAMB: 2.0,
}
_ROW_WISE_OPTIMIZERS = {EmbOptimType.EXACT_ROWWISE_ADAGRAD, EmbOptimType.ROWWISE_ADAGRAD}
_PARTIAL_ROW_WISE = {EmbOptimType.PARTIAL_ROWWISE_ADAM, EmbOptimType.PARTIAL_ROWWISE_LAMB}


def _optimizer_multiplier(tensor: ember.Tensor, sharder: ModuleSharder[nn.Module]) -> float:
    """Optimizer state per byte of weights: from the table's in-backward optimizer class
    (``tensor._optimizer_class``) if set, else from the sharder's fused ``optimizer``."""
    columns = tensor.shape[-1]
    optimizer_class = getattr(tensor, "_optimizer_class", None)
    if optimizer_class is not None:
        name = optimizer_class.__name__
        if name == "SGD":
            return 0.0
        if name in ("Adam", "AdamW", "LAMB", "Lamb"):
            return 2.0
        if name in ("RowWiseAdagrad",):
            return 1.0 / columns
        return 1.0
    fused = getattr(sharder, "fused_params", None) or {}
    optimizer = fused.get("optimizer")
    if optimizer is None:
        return 0.0
    optimizer = EmbOptimType(optimizer)
    if optimizer in _ROW_WISE_OPTIMIZERS:
        return 1.0 / columns
    if optimizer in _PARTIAL_ROW_WISE:
        return 1.0 + 1.0 / columns  # a full first moment, a per-row second
    return _OPTIMIZER_MULTIPLIERS.get(optimizer, 1.0)


class EmbeddingStorageEstimator(ShardEstimator):
    """Estimates each shard's HBM and DDR bytes (see the module docstring)."""

    def __init__(self, topology: Topology, constraints: dict[str, ParameterConstraints] | None = None) -> None:
        self._topology = topology
        self._constraints = constraints

    def estimate(
        self,
        sharding_options: list[ShardingOption],
        sharder_map: dict[str, ModuleSharder[nn.Module]] | None = None,
    ) -> None:
        if not sharding_options:
            return
        if not sharder_map:
            raise ValueError("EmbeddingStorageEstimator.estimate needs the sharder_map of the sharding options")
        for option in sharding_options:
            sharder = sharder_map[sharder_name(type(option.module[1]))]
            num_poolings, batch_sizes = _per_feature(self._constraints, option)
            storages = calculate_shard_storages(
                sharder=sharder,
                sharding_type=option.sharding_type,
                tensor=option.tensor,
                compute_device=self._topology.compute_device,
                compute_kernel=option.compute_kernel,
                shard_sizes=[shard.size for shard in option.shards],
                batch_sizes=batch_sizes,
                world_size=self._topology.world_size,
                local_world_size=self._topology.local_world_size,
                input_lengths=option.input_lengths,
                num_poolings=num_poolings,
                caching_ratio=_caching_ratio(option, sharder) or UVM_CACHING_RATIO,
                is_pooled=option.is_pooled,
            )
            for shard, storage in zip(option.shards, storages, strict=True):
                shard.storage = storage


def calculate_shard_storages(
    sharder: ModuleSharder[nn.Module],
    sharding_type: str,
    tensor: ember.Tensor,
    compute_device: str,
    compute_kernel: str,
    shard_sizes: list[list[int]],
    batch_sizes: list[int],
    world_size: int,
    local_world_size: int,
    input_lengths: list[float],
    num_poolings: list[float],
    caching_ratio: float,
    is_pooled: bool,
) -> list[Storage]:
    """The ``Storage`` of each shard: weights, optimizer state, input and output buffers."""
    input_sizes, output_sizes = _calculate_shard_io_sizes(
        sharding_type=sharding_type,
        batch_sizes=batch_sizes,
        world_size=world_size,
        local_world_size=local_world_size,
        input_lengths=input_lengths,
        emb_dim=tensor.shape[1],
        shard_sizes=shard_sizes,
        input_data_type_size=BIGINT_DTYPE,
        output_data_type_size=tensor.element_size(),
        num_poolings=num_poolings,
        is_pooled=is_pooled,
    )
    usage = sharder.storage_usage(tensor, compute_device, compute_kernel)
    hbm_table, ddr_table = usage.get("hbm", 0), usage.get("ddr", 0)
    if compute_kernel in (EmbeddingComputeKernel.FUSED_UVM_CACHING.value, EmbeddingComputeKernel.QUANT_UVM_CACHING.value):
        hbm_table = round(ddr_table * caching_ratio)
    multiplier = _optimizer_multiplier(tensor, sharder)
    table_elements = prod(tensor.shape)

    def specific(table_bytes: int) -> list[int]:
        sizes = []
        for size in shard_sizes:
            weights = table_bytes if sharding_type == _DP else math.ceil(table_bytes * prod(size) / table_elements)
            sizes.append(weights + math.ceil(weights * multiplier))
        return sizes

    io = [i + o for i, o in zip(input_sizes, output_sizes, strict=True)]
    on_cuda = compute_device == "cuda"
    return [
        Storage(hbm=h + (b if on_cuda else 0), ddr=d + (0 if on_cuda else b))
        for h, d, b in zip(specific(hbm_table), specific(ddr_table), io, strict=True)
    ]


def _calculate_shard_io_sizes(
    sharding_type: str,
    batch_sizes: list[int],
    world_size: int,
    local_world_size: int,
    input_lengths: list[float],
    emb_dim: int,
    shard_sizes: list[list[int]],
    input_data_type_size: int,
    output_data_type_size: int,
    num_poolings: list[float],
    is_pooled: bool,
) -> tuple[list[int], list[int]]:
    """Bytes of the ids each shard reads and of the embeddings it writes per step."""
    ids, rows = _batch_ids_and_rows(input_lengths, num_poolings, batch_sizes, is_pooled)
    W, n = world_size, len(shard_sizes)
    if sharding_type == _DP:
        return [math.ceil(ids * input_data_type_size)] * n, [math.ceil(rows * emb_dim * output_data_type_size)] * n
    if sharding_type == _TW:
        return [math.ceil(ids * W * input_data_type_size)], [math.ceil(rows * W * emb_dim * output_data_type_size)]
    if sharding_type in (_CW, _TWCW):
        return (
            [math.ceil(ids * W * input_data_type_size)] * n,
            [math.ceil(rows * W * size[1] * output_data_type_size) for size in shard_sizes],
        )
    if sharding_type in (_RW, _TWRW):
        local_ids = ids / (W if sharding_type == _RW else local_world_size)
        local_rows = rows if is_pooled else local_ids
        inputs = [math.ceil(local_ids * W * input_data_type_size) if prod(size) else 0 for size in shard_sizes]
        outputs = [math.ceil(local_rows * W * size[1] * output_data_type_size) if prod(size) else 0 for size in shard_sizes]
        return inputs, outputs
    raise ValueError(f"Unrecognized or unsupported sharding type provided: {sharding_type}")
