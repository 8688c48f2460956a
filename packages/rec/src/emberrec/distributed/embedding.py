"""The sharder of ``EmbeddingCollection`` (planning side: what may be sharded and how)."""

from __future__ import annotations

from typing import Any

from ember import nn
from emberrec.distributed.embedding_types import BaseEmbeddingSharder
from emberrec.distributed.types import ShardingType

__all__ = ["EmbeddingCollectionSharder"]


class EmbeddingCollectionSharder(BaseEmbeddingSharder):
    """Plans ``EmbeddingCollection``s (unpooled lookups): each table
    (``embeddings.<table>.weight``) is sharded on its own, under its table name."""

    @property
    def module_type(self) -> type[Any]:
        from emberrec.modules.embedding_modules import EmbeddingCollection

        return EmbeddingCollection

    def shardable_parameters(self, module: Any) -> dict[str, nn.Parameter]:
        return {name.split(".")[0]: param for name, param in module.embeddings.named_parameters()}

    def sharding_types(self, compute_device_type: str) -> list[str]:
        super().sharding_types(compute_device_type)  # validates the device
        # Sequence outputs are not pooled, so the host-level (table-row/column-wise) layouts
        # that save a cross-host pooled exchange do not apply, as in TorchRec.
        return [
            ShardingType.DATA_PARALLEL.value,
            ShardingType.TABLE_WISE.value,
            ShardingType.COLUMN_WISE.value,
            ShardingType.ROW_WISE.value,
        ]
