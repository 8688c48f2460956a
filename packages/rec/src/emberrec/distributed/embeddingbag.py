"""The sharder of ``EmbeddingBagCollection`` (planning side: what may be sharded and how)."""

from __future__ import annotations

from typing import Any

from ember import nn
from emberrec.distributed.embedding_types import BaseEmbeddingSharder

__all__ = ["EmbeddingBagCollectionSharder"]


class EmbeddingBagCollectionSharder(BaseEmbeddingSharder):
    """Plans ``EmbeddingBagCollection``s: each table (``embedding_bags.<table>.weight``) is
    sharded on its own, under its table name."""

    @property
    def module_type(self) -> type[Any]:
        from emberrec.modules.embedding_modules import EmbeddingBagCollection

        return EmbeddingBagCollection

    def shardable_parameters(self, module: Any) -> dict[str, nn.Parameter]:
        return {name.split(".")[0]: param for name, param in module.embedding_bags.named_parameters()}
