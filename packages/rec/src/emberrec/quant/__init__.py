"""Quantized inference collections (TorchRec's ``torchrec.quant``)."""

from emberrec.quant.embedding_modules import EmbeddingBagCollection, quantize_embeddings

__all__ = ["EmbeddingBagCollection", "quantize_embeddings"]
