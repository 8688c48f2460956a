r"""The DataLoader's worker processes, as torch.utils.data._utils.worker.

A worker takes ``(task_idx, index)`` pairs from its index queue, fetches and collates the data, and
puts ``(task_idx, data)`` on the shared result queue. An exception becomes an
:class:`~ember.utils.data._utils.ExceptionWrapper` carrying the worker's traceback text, re-raised
by the main process. ``None`` on the index queue ends the worker; a ``_ResumeIteration`` marker
starts a new epoch in a persistent worker.
"""

from __future__ import annotations

import os
import pickle
import queue
import random
from dataclasses import dataclass

import ember

from . import MP_STATUS_CHECK_INTERVAL, ExceptionWrapper

__all__ = ["WorkerInfo", "get_worker_info"]


class ManagerWatchdog:
    r"""Tells a worker whether the process that started it is still alive."""

    def __init__(self) -> None:
        self.manager_pid = os.getppid()
        self.manager_dead = False

    def is_alive(self) -> bool:
        if not self.manager_dead:
            self.manager_dead = os.getppid() != self.manager_pid
        return not self.manager_dead


_worker_info: WorkerInfo | None = None


class WorkerInfo:
    r"""Information about the current DataLoader worker process (read-only).

    Attributes:
        id (int): the worker id, in ``[0, num_workers - 1]``.
        num_workers (int): the total number of workers.
        seed (int): the seed of this worker: ``base_seed + id``, where ``base_seed`` is drawn by
            the main process from the loader's ``generator`` (or ember's default generator) when
            an iterator is created, i.e. each epoch unless workers are persistent.
        dataset: this worker's copy of the dataset object.
    """

    id: int
    num_workers: int
    seed: int
    dataset: object
    __initialized = False

    def __init__(self, **kwargs) -> None:
        for k, v in kwargs.items():
            setattr(self, k, v)
        self.__keys = tuple(kwargs.keys())
        self.__initialized = True

    def __setattr__(self, key, val):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {self.__class__.__name__} objects")
        return super().__setattr__(key, val)

    def __repr__(self) -> str:
        items = [f"{k}={getattr(self, k)}" for k in self.__keys]
        return f"{self.__class__.__name__}({', '.join(items)})"


def get_worker_info() -> WorkerInfo | None:
    r"""Return the :class:`WorkerInfo` of the current DataLoader worker, or ``None`` in the main
    process.

    It has the attributes ``id``, ``num_workers``, ``seed`` and ``dataset`` (this worker's copy of
    the dataset object, distinct from the main process's). Use it in ``worker_init_fn`` or in an
    :class:`~ember.utils.data.IterableDataset`'s ``__iter__`` to configure each copy, e.g. to
    shard a stream so that every sample is produced once.

    Seeding: each worker calls ``ember.manual_seed(seed)`` and ``random.seed(seed)`` with
    ``seed = base_seed + worker_id`` before ``worker_init_fn`` runs, and seeds NumPy's global
    generator (``np.random.seed``) from ``(base_seed, worker_id)`` through NumPy's
    ``SeedSequence`` (the same state PyTorch >= 1.9 derives). PyTorch before 1.9 left NumPy
    unseeded, so with ``fork`` every worker inherited the parent's NumPy state and drew
    *identical* "random" augmentations; Ember never has that defect.

    Generator *objects* the dataset created in the main process (``np.random.default_rng()``,
    ``random.Random()``, an ``ember.Generator``) are copied into every worker as they are, so
    they still repeat across workers: reseed them in ``worker_init_fn`` from ``info.seed``.
    """
    return _worker_info


@dataclass(frozen=True)
class _IterableDatasetStopIteration:
    r"""Dummy class used to signal the end of an IterableDataset."""

    worker_id: int


@dataclass(frozen=True)
class _ResumeIteration:
    r"""Dummy class used to resume the fetching when worker reuse is enabled."""

    seed: int | None = None


def _numpy_seed_state(base_seed: int, worker_id: int) -> list[int]:
    r"""Four 32-bit words seeding NumPy's legacy generator in a worker.

    NumPy's ``SeedSequence`` over the entropy words ``[worker_id, base_seed & 0xFFFFFFFF,
    base_seed >> 32, 0]``: the state PyTorch's ``_generate_state`` computes (it reimplements this
    algorithm in pure Python), so a worker's NumPy stream matches PyTorch's for the same
    ``base_seed``. Distinct workers get decorrelated states, not consecutive seeds.
    """
    import numpy as np

    mask32 = 0xFFFFFFFF
    entropy = [worker_id, base_seed & mask32, base_seed >> 32, 0]
    return np.random.SeedSequence(entropy).generate_state(4).tolist()


def _seed_worker(base_seed: int, worker_id: int) -> int:
    seed = base_seed + worker_id
    random.seed(seed)
    ember.manual_seed(seed)
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is optional
        pass
    else:
        np.random.seed(_numpy_seed_state(base_seed, worker_id))
    return seed


def _serialize(idx, data, worker_id) -> bytes:
    r"""Pickle a result in the worker, so that a batch which cannot be pickled becomes an error
    re-raised by the main process (``mp.Queue`` pickles in a feeder thread that only prints such
    errors, which leaves the main process waiting forever, as in PyTorch)."""
    try:
        return pickle.dumps((idx, data), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        if not isinstance(data, ExceptionWrapper):
            data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
    try:
        return pickle.dumps((idx, data), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:
        # the exception's class itself cannot be pickled (e.g. defined in a function): it is
        # re-raised as a RuntimeError whose message still names it and holds the traceback
        data.exc_type = RuntimeError
        return pickle.dumps((idx, data), protocol=pickle.HIGHEST_PROTOCOL)


def _worker_loop(
    dataset_kind,
    dataset,
    index_queue,
    data_queue,
    done_event,
    auto_collation,
    collate_fn,
    drop_last,
    base_seed,
    init_fn,
    worker_id,
    num_workers,
    persistent_workers,
    shared_seed,
):
    # See NOTE [ Data Loader Multiprocessing Shutdown Logic ] in dataloader.py for details on the
    # logic of this function.
    try:
        # Intra-op parallelism would oversubscribe the cores the workers already share.
        ember.set_num_threads(1)
        seed = _seed_worker(base_seed, worker_id)

        global _worker_info
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        from ..dataloader import _DatasetKind

        init_exception = None

        try:
            if init_fn is not None:
                init_fn(worker_id)

            fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
        except Exception:
            init_exception = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        # When using Iterable mode, some worker can exit earlier than others due
        # to the IterableDataset behaving differently for different workers.
        # When such things happen, an `_IterableDatasetStopIteration` object is
        # sent over to the main process with the ID of this worker, so that the
        # main process won't send more tasks to this worker, and will send
        # `None` to this worker to properly exit it.
        #
        # Note that we cannot set `done_event` from a worker as it is shared
        # among all processes. Instead, we set the `iteration_end` flag to
        # signify that the iterator is exhausted. When either `done_event` or
        # `iteration_end` is set, we skip all processing step and just wait for
        # `None`.
        iteration_end = False

        watchdog = ManagerWatchdog()

        while watchdog.is_alive():
            try:
                r = index_queue.get(timeout=MP_STATUS_CHECK_INTERVAL)
            except queue.Empty:
                continue
            if isinstance(r, _ResumeIteration):
                # Acknowledge the main process
                data_queue.put((r, None))
                iteration_end = False
                # Recreate the fetcher for worker-reuse policy
                fetcher = _DatasetKind.create_fetcher(dataset_kind, dataset, auto_collation, collate_fn, drop_last)
                continue
            elif r is None:
                # Received the final signal
                assert done_event.is_set() or iteration_end
                break
            elif done_event.is_set() or iteration_end:
                # `done_event` is set. But I haven't received the final signal
                # (None) yet. I will keep continuing until get it, and skip the
                # processing steps.
                continue
            idx, index = r
            if init_exception is not None:
                data = init_exception
                init_exception = None
            else:
                try:
                    data = fetcher.fetch(index)  # type: ignore[possibly-undefined]
                except Exception as e:
                    if isinstance(e, StopIteration) and dataset_kind == _DatasetKind.Iterable:
                        data = _IterableDatasetStopIteration(worker_id)
                        # Set `iteration_end`
                        #   (1) to save future `next(...)` calls, and
                        #   (2) to avoid sending multiple `_IterableDatasetStopIteration`s.
                        iteration_end = True
                    else:
                        # It is important that we don't store exc_info in a variable.
                        # `ExceptionWrapper` does the correct thing.
                        # See NOTE [ Python Traceback Reference Cycle Problem ]
                        data = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
            data_queue.put(_serialize(idx, data, worker_id))
            del data, idx, index, r  # save memory
    except KeyboardInterrupt:
        # Main process will raise KeyboardInterrupt anyways.
        pass
    if done_event.is_set():
        data_queue.cancel_join_thread()
        data_queue.close()
