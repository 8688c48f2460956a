"""Batch (TorchRec's ``torchrec.datasets.utils.Batch``), kept apart from the readers so that the
models use it without emberdata installed; ``emberrec.datasets.utils`` re-exports it."""

from __future__ import annotations

from dataclasses import dataclass

import ember
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor


@dataclass
class Batch:
    """One training batch: ``dense_features`` (B, num_dense) float, ``sparse_features`` a KJT with
    stride B, ``labels`` (B,)."""

    dense_features: ember.Tensor
    sparse_features: KeyedJaggedTensor
    labels: ember.Tensor

    def to(self, device: ember.device | str, non_blocking: bool = False) -> Batch:
        return Batch(
            dense_features=self.dense_features.to(device=device, non_blocking=non_blocking),
            sparse_features=self.sparse_features.to(device=device, non_blocking=non_blocking),
            labels=self.labels.to(device=device, non_blocking=non_blocking),
        )

    def pin_memory(self) -> Batch:
        # ember has no page-locked host tensors, so there is nothing to pin: the batch itself.
        return self
