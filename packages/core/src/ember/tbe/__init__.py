"""Table-batched embeddings: fbgemm_gpu's TBE modules and enums under its names, so FBGEMM code
ports by changing `fbgemm_gpu.split_table_batched_embeddings_ops_*` to `ember.tbe`. The kernels
are the core's fbgemm:: ops (native/src/ops/fbgemm/)."""

from ._enums import (
    BoundsCheckMode,
    CacheAlgorithm,
    ComputeDevice,
    EmbeddingLocation,
    EmbOptimType,
    PoolingMode,
    SparseType,
    WeightDecayMode,
)
from ._inference import IntNBitTableBatchedEmbeddingBagsCodegen
from ._training import OPTIMIZERS, SplitTableBatchedEmbeddingBagsCodegen

__all__ = ["OPTIMIZERS", "BoundsCheckMode", "CacheAlgorithm", "ComputeDevice", "EmbOptimType", "EmbeddingLocation",
           "IntNBitTableBatchedEmbeddingBagsCodegen", "PoolingMode", "SparseType", "SplitTableBatchedEmbeddingBagsCodegen",
           "WeightDecayMode"]
