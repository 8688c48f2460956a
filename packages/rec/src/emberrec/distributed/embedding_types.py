"""Embedding compute kernels and the base of the embedding sharders (planning side)."""

from __future__ import annotations

import enum
from typing import Any

import ember
from emberrec.distributed.types import (
    ModuleSharder,
    ParameterStorage,
    ShardingType,
    _device_storage,
    get_tensor_size_bytes,
)

__all__ = ["BaseEmbeddingSharder", "EmbeddingComputeKernel"]


@enum.unique
class EmbeddingComputeKernel(enum.Enum):
    """How a shard is looked up: ``dense`` (an autograd parameter, data parallel), ``fused``
    (TBE with the optimizer fused into backward, rows in device memory), ``fused_uvm`` (rows in
    host memory reached through unified memory), ``fused_uvm_caching`` (host rows behind a device
    cache), and the ``quant`` kernels of inference."""

    DENSE = "dense"
    FUSED = "fused"
    FUSED_UVM = "fused_uvm"
    FUSED_UVM_CACHING = "fused_uvm_caching"
    QUANT = "quant"
    QUANT_UVM = "quant_uvm"
    QUANT_UVM_CACHING = "quant_uvm_caching"


_UVM_KERNELS = {
    EmbeddingComputeKernel.FUSED_UVM.value,
    EmbeddingComputeKernel.FUSED_UVM_CACHING.value,
    EmbeddingComputeKernel.QUANT_UVM.value,
    EmbeddingComputeKernel.QUANT_UVM_CACHING.value,
}


class BaseEmbeddingSharder(ModuleSharder[Any]):
    """Sharding types and kernels shared by the embedding collections' sharders.

    ``fused_params`` are the TBE settings (optimizer, learning rate, cache load factor...) the
    fused kernels will be built with; the planner reads ``optimizer`` and ``cache_load_factor``.
    """

    def __init__(self, fused_params: dict[str, Any] | None = None, qcomm_codecs_registry: dict[str, Any] | None = None) -> None:
        super().__init__(qcomm_codecs_registry=qcomm_codecs_registry)
        self._fused_params = fused_params

    @property
    def fused_params(self) -> dict[str, Any] | None:
        return self._fused_params

    def sharding_types(self, compute_device_type: str) -> list[str]:
        _device_storage(compute_device_type)  # validates the device
        # TorchRec offers row-wise and table-row-wise on cuda only; ember's sharded execution
        # runs on CPU (Gloo), where row-wise is as real as on GPUs, so both devices get all six.
        return [
            ShardingType.DATA_PARALLEL.value,
            ShardingType.TABLE_WISE.value,
            ShardingType.COLUMN_WISE.value,
            ShardingType.TABLE_COLUMN_WISE.value,
            ShardingType.ROW_WISE.value,
            ShardingType.TABLE_ROW_WISE.value,
        ]

    def compute_kernels(self, sharding_type: str, compute_device_type: str) -> list[str]:
        _device_storage(compute_device_type)
        if sharding_type == ShardingType.DATA_PARALLEL.value:
            # a replicated table is an ordinary parameter that DDP-style all-reduce updates
            return [EmbeddingComputeKernel.DENSE.value]
        kernels = [EmbeddingComputeKernel.FUSED.value]
        if compute_device_type == "cuda":
            kernels += [EmbeddingComputeKernel.FUSED_UVM.value, EmbeddingComputeKernel.FUSED_UVM_CACHING.value]
        return kernels

    def storage_usage(self, tensor: ember.Tensor, compute_device_type: str, compute_kernel: str) -> dict[str, int]:
        """Bytes of the table's rows: in host memory for the UVM kernels (the cache's device
        share is added by the storage estimator), otherwise in the compute device's memory."""
        if compute_kernel in _UVM_KERNELS:
            if compute_device_type != "cuda":
                raise ValueError(f"compute kernel {compute_kernel!r} needs a cuda device, got {compute_device_type!r}")
            return {ParameterStorage.DDR.value: get_tensor_size_bytes(tensor)}
        return super().storage_usage(tensor, compute_device_type, compute_kernel)
