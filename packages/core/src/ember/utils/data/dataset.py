"""Map-style and iterable datasets and the ways of combining and splitting them."""

from __future__ import annotations

import bisect
import itertools
import math

import ember


class Dataset:
    """A map-style dataset: `dataset[i]` gives sample i. Subclasses define __getitem__ and
    usually __len__ (samplers need the length); `a + b` concatenates."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__")

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A stream of samples: subclasses define __iter__. Under a multi-worker DataLoader every
    worker iterates its own copy, so a dataset that should not repeat samples splits its work
    with get_worker_info()."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")

    def __add__(self, other):
        return ChainDataset([self, other])


class TensorDataset(Dataset):
    """Sample i is the tuple of each tensor's row i; the tensors must share their first dim."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset needs at least one tensor")
        sizes = {t.shape[0] if t.dim() > 0 else None for t in tensors}
        if None in sizes:
            raise ValueError("TensorDataset: every tensor needs a first dimension to index samples by")
        if len(sizes) != 1:
            raise ValueError(f"Size mismatch between tensors: first dimensions {[t.shape[0] for t in tensors]}")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]


class ConcatDataset(Dataset):
    """The samples of several map-style datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset needs at least one dataset")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset does not support IterableDataset (use ChainDataset)")
        self.cumulative_sizes = list(itertools.accumulate(len(d) for d in self.datasets))

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise IndexError(f"index {index} is out of range for a dataset of length {len(self)}")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        if which == len(self.datasets):
            raise IndexError(f"index {index} is out of range for a dataset of length {len(self)}")
        start = self.cumulative_sizes[which - 1] if which > 0 else 0
        return self.datasets[which][index - start]


class ChainDataset(IterableDataset):
    """The streams of several iterable datasets one after another."""

    def __init__(self, datasets):
        self.datasets = list(datasets)

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise TypeError(f"ChainDataset only chains IterableDatasets, got {type(d).__name__}")
            yield from d

    def __len__(self):
        return sum(len(d) for d in self.datasets)


class Subset(Dataset):
    """The samples of `dataset` at `indices`, renumbered from 0."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.__getitems__(index)
        return self.dataset[self.indices[index]]

    def __getitems__(self, indices):
        # A dataset that fetches a whole batch at once keeps that ability through the subset.
        if callable(getattr(self.dataset, "__getitems__", None)):
            return self.dataset.__getitems__([self.indices[i] for i in indices])
        return [self.dataset[self.indices[i]] for i in indices]

    def __len__(self):
        return len(self.indices)


def _split_lengths(total: int, lengths) -> list[int]:
    """Fractions summing to 1 become counts; the remainder of the flooring goes one each to the
    first parts, so the counts sum to the dataset's length."""
    lengths = list(lengths)
    if lengths and math.isclose(sum(lengths), 1) and sum(lengths) <= total:
        if any(not 0 <= f <= 1 for f in lengths):
            raise ValueError(f"random_split: fractions must lie in [0, 1], got {lengths}")
        counts = [math.floor(total * f) for f in lengths]
        for i in range(total - sum(counts)):
            counts[i % len(counts)] += 1
        return counts
    if any(x < 0 for x in lengths):
        raise ValueError(f"random_split: lengths must be non-negative, got {lengths}")
    if sum(lengths) != total:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    return [int(x) for x in lengths]


def random_split(dataset, lengths, generator=None):
    """Disjoint random Subsets of the given lengths (or fractions of the length)."""
    counts = _split_lengths(len(dataset), lengths)
    order = ember.randperm(sum(counts), generator=generator if generator is not None else ember.default_generator)
    order = order.tolist()
    starts = itertools.accumulate([0] + counts)
    return [Subset(dataset, order[s:s + n]) for s, n in zip(starts, counts, strict=False)]


class StackDataset(Dataset):
    """Sample i gathers sample i of each dataset: a tuple for datasets given positionally, a dict
    for datasets given by keyword (torch.utils.data.StackDataset). All must have the same length."""

    def __init__(self, *args, **kwargs):
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via ``kwargs``) like "
                             "input/output, but both types are given.")
        datasets = args or tuple(kwargs.values())
        if not datasets:
            raise ValueError("At least one dataset should be passed")
        self._length = len(datasets[0])
        if any(len(d) != self._length for d in datasets):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {name: dataset[index] for name, dataset in self.datasets.items()}
        return tuple(dataset[index] for dataset in self.datasets)

    def __getitems__(self, indices: list):
        """A batch of samples at once, using each dataset's own __getitems__ where it has one."""
        def column(dataset):
            if callable(getattr(dataset, "__getitems__", None)):
                items = dataset.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, got "
                                     f"{len(items)}")
                return items
            return [dataset[i] for i in indices]

        if isinstance(self.datasets, dict):
            columns = {name: column(d) for name, d in self.datasets.items()}
            return [{name: columns[name][j] for name in columns} for j in range(len(indices))]
        columns = [column(d) for d in self.datasets]
        return [tuple(c[j] for c in columns) for j in range(len(indices))]

    def __len__(self):
        return self._length
