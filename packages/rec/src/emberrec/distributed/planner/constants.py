"""Defaults and empirical factors of the planner's estimates.

Bandwidths are in bytes per millisecond, so perf estimates come out in milliseconds. The values
are TorchRec's (measured on its A100 clusters); a ``Topology`` overrides the bandwidths.
"""

from __future__ import annotations

MAX_SIZE: int = (1 << 63) - 1

INTRA_NODE_BANDWIDTH: float = 600 * 1024**3 / 1000  # bytes/ms
CROSS_NODE_BANDWIDTH: float = 12.5 * 1024**3 / 1000  # bytes/ms

MIN_CW_DIM: int = 128
POOLING_FACTOR: float = 1.0
NUM_POOLINGS: float = 1.0

BIGINT_DTYPE: int = 8  # bytes of an id (int64)

HBM_CAP: int = 32 * 1024**3
DDR_CAP: int = 128 * 1024**3
DDR_MEM_BW: float = 51 * 1024**3 / 1000  # bytes/ms
HBM_MEM_BW: float = 897 * 1024**3 / 1000  # bytes/ms
UVM_CACHING_RATIO: float = 0.2
BATCH_SIZE: int = 512

BATCHED_COPY_PERF_FACTOR: float = 2.455
FULL_BLOCK_EMB_DIM: int = 128  # the GPU kernel reads rows 128 floats at a time
HALF_BLOCK_PENALTY: float = 1.15
QUARTER_BLOCK_PENALTY: float = 1.75
BWD_COMPUTE_MULTIPLIER: float = 2
WEIGHTED_KERNEL_MULTIPLIER: float = 1.1
DP_ELEMENTWISE_KERNELS_PERF_FACTOR: float = 9.22


def kernel_bw_lookup(
    compute_device: str,
    compute_kernel: str,
    hbm_mem_bw: float,
    ddr_mem_bw: float,
    caching_ratio: float | None = None,
    prefetch_pipeline: bool = False,
) -> float | None:
    """Memory bandwidth (bytes/ms) a kernel sees on a device; None for a pair that does not run.

    Dense kernels reach half the bandwidth of fused ones (a separate optimizer pass). UVM reads
    host memory over the bus (a tenth of DDR bandwidth); a UVM cache mixes the two by its hit
    share, and a prefetch pipeline hides the host reads entirely.
    """
    ratio = caching_ratio if caching_ratio else UVM_CACHING_RATIO
    if compute_device == "cpu":
        table = {"dense": 0.5 * ddr_mem_bw, "fused": ddr_mem_bw, "quant": ddr_mem_bw}
    elif compute_device == "cuda":
        cached = (ratio * hbm_mem_bw + (1 - ratio) * ddr_mem_bw) / 10
        table = {
            "dense": 0.5 * hbm_mem_bw,
            "fused": hbm_mem_bw,
            "fused_uvm": ddr_mem_bw / 10,
            "fused_uvm_caching": hbm_mem_bw if prefetch_pipeline else cached,
            "quant": hbm_mem_bw,
            "quant_uvm": ddr_mem_bw / 10,
            "quant_uvm_caching": cached,
        }
    else:
        return None
    return table.get(compute_kernel)
