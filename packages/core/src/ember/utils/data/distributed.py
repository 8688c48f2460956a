"""DistributedSampler, as torch.utils.data.distributed.

Ember has no ``ember.distributed`` package yet, so ``num_replicas`` and ``rank`` must be given
explicitly; leaving either out raises PyTorch's error for a build without the distributed package.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import TypeVar

import ember

from .dataset import Dataset
from .sampler import Sampler

__all__ = ["DistributedSampler"]

T_co = TypeVar("T_co", covariant=True)


class DistributedSampler(Sampler[T_co]):
    r"""Sampler that restricts data loading to a subset of the dataset (one replica's share).

    Args:
        dataset: Dataset used for sampling.
        num_replicas (int): Number of processes participating in distributed training.
        rank (int): Rank of the current process within :attr:`num_replicas`.
        shuffle (bool, optional): If ``True`` (default), sampler will shuffle the indices.
        seed (int, optional): random seed used to shuffle the sampler if :attr:`shuffle=True`.
            This number should be identical across all processes. Default: ``0``.
        drop_last (bool, optional): if ``True``, drop the tail of the data to make it evenly
            divisible across replicas; if ``False``, add extra indices (wrapping around).

    Call :meth:`set_epoch` at the beginning of each epoch so that shuffling differs per epoch.
    """

    def __init__(
        self,
        dataset: Dataset,
        num_replicas: int | None = None,
        rank: int | None = None,
        shuffle: bool = True,
        seed: int = 0,
        drop_last: bool = False,
    ) -> None:
        if num_replicas is None or rank is None:
            raise RuntimeError("Requires distributed package to be available")
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if self.drop_last and len(self.dataset) % self.num_replicas != 0:  # type: ignore[arg-type]
            self.num_samples = math.ceil((len(self.dataset) - self.num_replicas) / self.num_replicas)  # type: ignore[arg-type]
        else:
            self.num_samples = math.ceil(len(self.dataset) / self.num_replicas)  # type: ignore[arg-type]
        self.total_size = self.num_samples * self.num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[T_co]:
        if self.shuffle:
            g = ember.Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = ember.randperm(len(self.dataset), generator=g).tolist()  # type: ignore[arg-type]
        else:
            indices = list(range(len(self.dataset)))  # type: ignore[arg-type]

        if not self.drop_last:
            padding_size = self.total_size - len(indices)
            if padding_size <= len(indices):
                indices += indices[:padding_size]
            else:
                indices += (indices * math.ceil(padding_size / len(indices)))[:padding_size]
        else:
            indices = indices[: self.total_size]
        assert len(indices) == self.total_size

        indices = indices[self.rank : self.total_size : self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        r"""Set the epoch for this sampler; with shuffle, it seeds the permutation (seed + epoch)."""
        self.epoch = epoch
