"""Turning one task of the DataLoader into one batch; shared by the main process (num_workers=0)
and the worker processes, so both produce identical batches."""

from __future__ import annotations

import itertools


class Exhausted(Exception):
    """An iterable dataset has no more samples for this epoch."""


class Fetcher:
    """Map-style datasets: a task is a list of indices (batching) or one index (batch_size=None).
    Iterable datasets: a task carries the epoch's seed; the next batch_size samples of the
    dataset's iterator make the batch, and a short last batch is dropped when drop_last. Before
    iterating an epoch, a dataset with `_dataloader_start_epoch` is told the seed, this process's
    worker id and the number of workers (Note [DataLoader pipeline protocol] in dataloader.py)."""

    def __init__(self, dataset, iterable: bool, batching: bool, batch_size, drop_last: bool, collate_fn,
                 worker_id: int = 0, num_workers: int = 0):
        self.dataset = dataset
        self.worker_id = worker_id
        self.num_workers = num_workers
        self.iterable = iterable
        self.batching = batching
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.collate_fn = collate_fn
        self._stream = None
        self._ended = False

    def restart(self) -> None:
        """A new epoch: iterable datasets are iterated afresh."""
        self._stream, self._ended = None, False

    def __call__(self, task):
        if self.iterable:
            return self.collate_fn(self._next_from_stream(task))
        if self.batching:
            getitems = getattr(self.dataset, "__getitems__", None)
            samples = getitems(task) if callable(getitems) else [self.dataset[i] for i in task]
            return self.collate_fn(samples)
        return self.collate_fn(self.dataset[task])

    def _next_from_stream(self, seed):
        if self._ended:
            raise Exhausted
        if self._stream is None:
            start_epoch = getattr(self.dataset, "_dataloader_start_epoch", None)
            if callable(start_epoch):
                start_epoch(seed, self.worker_id, self.num_workers, self.batch_size if self.batching else None)
            self._stream = iter(self.dataset)
        if not self.batching:
            try:
                return next(self._stream)
            except StopIteration:
                self._ended = True
                raise Exhausted from None
        samples = list(itertools.islice(self._stream, self.batch_size))
        if len(samples) < self.batch_size:
            self._ended = True
            if not samples or self.drop_last:
                raise Exhausted
        return samples
