"""Random recommendation batches (TorchRec's ``torchrec.datasets.random``), for benchmarks and
smoke tests: no signal, labels are coin flips."""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterator

import ember
from ember.utils.data import IterableDataset
from emberrec.datasets.utils import Batch
from emberrec.sparse.jagged_tensor import KeyedJaggedTensor


class _RandomRecBatch:
    def __init__(self, keys: list[str], batch_size: int, hash_sizes: list[int], ids_per_features: list[int],
                 num_dense: int, manual_seed: int | None = None, num_generated_batches: int = 10,
                 num_batches: int | None = None, *, min_ids_per_features: list[int] | None = None) -> None:
        self.keys = keys
        self.batch_size = batch_size
        self.hash_sizes = hash_sizes
        self.ids_per_features = ids_per_features
        self.min_ids_per_features = min_ids_per_features or [0] * len(ids_per_features)
        self.num_dense = num_dense
        self.num_batches = num_batches
        self.num_generated_batches = num_generated_batches
        self.generator: ember.Generator | None = None
        if manual_seed is not None:
            self.generator = ember.Generator()
            self.generator.manual_seed(manual_seed)
        # A negative num_generated_batches draws every batch afresh; otherwise these are cycled.
        self._generated_batches = [self._generate_batch() for _ in range(max(num_generated_batches, 0))]
        self.batch_index = 0

    def __iter__(self) -> _RandomRecBatch:
        self.batch_index = 0
        return self

    def __next__(self) -> Batch:
        if self.batch_index == self.num_batches:
            raise StopIteration
        if self._generated_batches:
            batch = self._generated_batches[self.batch_index % len(self._generated_batches)]
        else:
            batch = self._generate_batch()
        self.batch_index += 1
        return batch

    def _generate_batch(self) -> Batch:
        values, lengths = [], []
        for hash_size, low, high in zip(self.hash_sizes, self.min_ids_per_features, self.ids_per_features, strict=True):
            length = ember.randint(low, high + 1, (self.batch_size,), dtype=ember.int32, generator=self.generator)
            values.append(ember.randint(0, hash_size, (int(length.sum()),), generator=self.generator))
            lengths.append(length)
        sparse_features = KeyedJaggedTensor.from_lengths_sync(
            keys=self.keys, values=ember.cat(values), lengths=ember.cat(lengths))
        dense_features = ember.randn(self.batch_size, self.num_dense, generator=self.generator)
        labels = ember.randint(0, 2, (self.batch_size,), generator=self.generator)
        return Batch(dense_features=dense_features, sparse_features=sparse_features, labels=labels)


class RandomRecDataset(IterableDataset):
    """An iterable of random :class:`Batch` es.

    Per key, each sample gets between ``min_ids_per_feature(s)`` (default: 0, or
    ``ids_per_feature`` when only that is given) and ``ids_per_feature(s)`` ids (default 2), drawn
    below ``hash_size(s)`` (default 100); ``num_dense`` normal dense features; 0/1 labels.
    ``num_generated_batches`` batches are drawn once and cycled (negative: draw every batch);
    ``num_batches`` ends the iteration (default: endless).

    >>> dataset = RandomRecDataset(keys=["f1", "f2"], batch_size=16, hash_size=1000, ids_per_feature=1, num_dense=13)
    >>> next(iter(dataset)).dense_features.shape
    (16, 13)
    """

    def __init__(self, keys: list[str], batch_size: int, hash_size: int | None = None,
                 hash_sizes: list[int] | None = None, ids_per_feature: int | None = None,
                 ids_per_features: list[int] | None = None, num_dense: int = 50, manual_seed: int | None = None,
                 num_batches: int | None = None, num_generated_batches: int = 10,
                 min_ids_per_feature: int | None = None, min_ids_per_features: list[int] | None = None) -> None:
        super().__init__()
        if hash_sizes is None:
            hash_sizes = [hash_size if hash_size else 100] * len(keys)
        if ids_per_features is None:
            ids_per_features = [ids_per_feature if ids_per_feature else 2] * len(keys)
        if min_ids_per_features is None:
            low = min_ids_per_feature if min_ids_per_feature is not None else ids_per_feature
            min_ids_per_features = [low if low else 0] * len(keys)
        for name, per_key in (("hash_sizes", hash_sizes), ("ids_per_features", ids_per_features),
                              ("min_ids_per_features", min_ids_per_features)):
            if len(per_key) != len(keys):
                raise ValueError(f"length of {name} ({len(per_key)}) must be equal to the number of keys ({len(keys)})")
        for key, low, high, size in zip(keys, min_ids_per_features, ids_per_features, hash_sizes, strict=True):
            if not 0 <= low <= high or size <= 0:
                raise ValueError(f"key {key!r}: need 0 <= min ids ({low}) <= ids ({high}) and hash size ({size}) > 0")
        self.batch_generator = _RandomRecBatch(
            keys=list(keys), batch_size=batch_size, hash_sizes=list(hash_sizes),
            ids_per_features=list(ids_per_features), num_dense=num_dense, manual_seed=manual_seed,
            num_generated_batches=num_generated_batches, min_ids_per_features=list(min_ids_per_features))
        # TorchRec writes `num_batches if not None else sys.maxsize`, which never picks maxsize.
        self.num_batches: int = num_batches if num_batches is not None else sys.maxsize

    def __iter__(self) -> Iterator[Batch]:
        return itertools.islice(iter(self.batch_generator), self.num_batches)

    def __len__(self) -> int:
        return self.num_batches
