"""Sparse input types: JaggedTensor, KeyedJaggedTensor, KeyedTensor (``torchrec.sparse``)."""

from emberrec.sparse.jagged_tensor import JaggedTensor, KeyedJaggedTensor, KeyedTensor

__all__ = ["JaggedTensor", "KeyedJaggedTensor", "KeyedTensor"]
