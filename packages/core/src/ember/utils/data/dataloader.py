r"""DataLoader, as torch.utils.data.dataloader: combines a dataset and a sampler and iterates over
batches, in the main process (``num_workers=0``) or with worker processes.

Multi-process loading follows PyTorch's design::

    main process --(index_queue, one per worker)--> workers --(one shared result queue)--> main

The main process sends ``(task_idx, indices)`` round-robin to the workers, keeps at most
``prefetch_factor * num_workers`` tasks outstanding, and returns results in task order, holding
results that arrive early in a reorder buffer. Workers are daemonic; an iterator shuts its workers
down when it is exhausted, deleted or garbage-collected (``None`` on every index queue, join with
a timeout, terminate stragglers), and with ``persistent_workers=True`` the loader keeps one
iterator whose workers serve every epoch.

Differences from PyTorch, each on the safe side:

* worker death is noticed at once (the main process waits on the workers' process sentinels
  together with the result queue) rather than through a SIGCHLD handler;
* results are pickled in the worker, so a batch that cannot be pickled is re-raised in the main
  process instead of leaving it waiting forever;
* NumPy's global generator is seeded in every worker (see :func:`get_worker_info`).
"""

from __future__ import annotations

import itertools
import multiprocessing as python_multiprocessing
import multiprocessing.connection as mp_connection
import os
import pickle
import queue
import sys
import warnings
from collections.abc import Iterable
from typing import Generic, TypeVar

import ember

from . import _utils
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, _random_seed

__all__ = [
    "DataLoader",
    "get_worker_info",
    "default_collate",
    "default_convert",
]

T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")

# These functions used to be defined in this file in PyTorch; the aliases keep
# `ember.utils.data.dataloader.default_collate` working as `torch.utils.data.dataloader.default_collate` does.
default_collate = _utils.collate.default_collate
default_convert = _utils.collate.default_convert

get_worker_info = _utils.worker.get_worker_info


class _DatasetKind:
    Map = 0
    Iterable = 1

    @staticmethod
    def create_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
        if kind == _DatasetKind.Map:
            return _utils.fetch._MapDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)
        return _utils.fetch._IterableDatasetFetcher(dataset, auto_collation, collate_fn, drop_last)


class _InfiniteConstantSampler(Sampler):
    r"""Analogous to ``itertools.repeat(None, None)``: the sampler of an IterableDataset."""

    def __iter__(self):
        while True:
            yield None


def _cpu_count() -> int | None:
    if hasattr(os, "sched_getaffinity"):
        try:
            return len(os.sched_getaffinity(0))
        except Exception:  # pragma: no cover - platform dependent
            pass
    return os.cpu_count()


def _default_context():
    r"""'fork' on Linux unless the program chose a start method with
    ``multiprocessing.set_start_method``; Python's default elsewhere.

    Python 3.14 made 'forkserver' the Linux default, which needs a picklable dataset and an
    importable ``__main__``; Ember keeps 'fork' there, as PyTorch users have always had.
    """
    if (
        sys.platform.startswith("linux")
        and python_multiprocessing.get_start_method(allow_none=True) is None
        and "fork" in python_multiprocessing.get_all_start_methods()
    ):
        return python_multiprocessing.get_context("fork")
    return python_multiprocessing.get_context()


def _accelerator_available() -> bool:
    cuda = getattr(ember, "cuda", None)
    is_available = getattr(cuda, "is_available", None)
    return bool(is_available()) if callable(is_available) else False


def _pin_memory(data):
    r"""Pins every tensor of a (nested) batch whose type offers ``pin_memory()``, as PyTorch's
    ``_utils.pin_memory.pin_memory``; other objects are returned unchanged."""
    if hasattr(data, "pin_memory") and callable(data.pin_memory):
        return data.pin_memory()
    if isinstance(data, (str, bytes)):
        return data
    if isinstance(data, dict):
        return {k: _pin_memory(v) for k, v in data.items()}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return type(data)(*(_pin_memory(sample) for sample in data))
    if isinstance(data, tuple):
        return [_pin_memory(sample) for sample in data]  # Backwards compatibility.
    if isinstance(data, list):
        return [_pin_memory(sample) for sample in data]
    return data


class DataLoader(Generic[T_co]):
    r"""Data loader: combines a dataset and a sampler, and provides an iterable over the dataset.

    It supports map-style and iterable-style datasets with single- or multi-process loading,
    customizing loading order and optional automatic batching (collation), as
    ``torch.utils.data.DataLoader``.

    Args:
        dataset (Dataset): dataset from which to load the data.
        batch_size (int, optional): how many samples per batch to load (default: ``1``).
            ``None`` disables automatic batching: each sample is passed through ``collate_fn``
            (``default_convert`` by default) on its own.
        shuffle (bool, optional): set to ``True`` to have the data reshuffled at every epoch
            (default: ``False``).
        sampler (Sampler or Iterable, optional): defines the strategy to draw samples from the
            dataset. Can be any ``Iterable`` with ``__len__`` implemented. If specified,
            :attr:`shuffle` must not be specified.
        batch_sampler (Sampler or Iterable, optional): like :attr:`sampler`, but returns a batch
            of indices at a time. Mutually exclusive with :attr:`batch_size`, :attr:`shuffle`,
            :attr:`sampler`, and :attr:`drop_last`.
        num_workers (int, optional): how many subprocesses to use for data loading. ``0`` means
            that the data will be loaded in the main process. (default: ``0``)
        collate_fn (Callable, optional): merges a list of samples to form a mini-batch of
            Tensor(s) (default: :func:`default_collate`).
        pin_memory (bool, optional): copy tensors into pinned memory before returning them when
            an accelerator is available; on a CPU-only build it only warns and does nothing.
        drop_last (bool, optional): set to ``True`` to drop the last incomplete batch. (default:
            ``False``)
        timeout (numeric, optional): if positive, the timeout (seconds) for collecting a batch
            from workers; exceeding it raises ``RuntimeError``. Should always be non-negative.
            (default: ``0``)
        worker_init_fn (Callable, optional): if not ``None``, called in each worker subprocess
            with the worker id (an int in ``[0, num_workers - 1]``) as input, after seeding and
            before data loading. (default: ``None``)
        multiprocessing_context (str or multiprocessing.context.BaseContext, optional): if
            ``None``: the start method set with ``multiprocessing.set_start_method`` if any,
            else 'fork' on Linux (also on Python 3.14+, whose default became 'forkserver') and
            Python's default elsewhere. 'spawn' and 'forkserver' need a picklable dataset,
            ``collate_fn`` and ``worker_init_fn``, and the ``if __name__ == "__main__":`` idiom.
        generator (ember.Generator, optional): if not ``None``, this RNG is used by
            RandomSampler to generate random indexes and to draw the workers' ``base_seed``.
        prefetch_factor (int, optional, keyword-only arg): number of batches loaded in advance
            by each worker (default: ``None`` without workers, ``2`` with workers).
        persistent_workers (bool, optional): if ``True``, the data loader will not shut down the
            worker processes after a dataset has been consumed once, keeping the workers'
            `Dataset` instances alive. (default: ``False``)
        pin_memory_device (str, optional): accepted for compatibility; unused on CPU.

    Worker seeding: every iterator draws ``base_seed`` from ``generator`` (or ember's default
    generator), also without workers so that shuffling consumes the generator the same way
    whatever ``num_workers`` is. Worker ``i`` calls ``ember.manual_seed(base_seed + i)``,
    ``random.seed(base_seed + i)`` and seeds NumPy (see :func:`get_worker_info`).
    """

    dataset: Dataset[T_co]
    batch_size: int | None
    num_workers: int
    pin_memory: bool
    drop_last: bool
    timeout: float
    sampler: Sampler | Iterable
    pin_memory_device: str
    prefetch_factor: int | None
    _iterator: _BaseDataLoaderIter | None
    __initialized = False

    def __init__(
        self,
        dataset: Dataset[T_co],
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler[list] | Iterable[list] | None = None,
        num_workers: int = 0,
        collate_fn=None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn=None,
        multiprocessing_context=None,
        generator=None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
    ) -> None:
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable multiprocessing."
            )

        if timeout < 0:
            raise ValueError("timeout option should be non-negative")

        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing."
                "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        elif num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")

        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context

        # Arg-check dataset related before checking samplers because we want to
        # tell users that iterable-style datasets are incompatible with custom
        # samplers first, so that they don't learn that this combo doesn't work
        # after spending time fixing the custom sampler errors.
        if isinstance(dataset, IterableDataset):
            self._dataset_kind = _DatasetKind.Iterable
            # NOTE [ Custom Samplers and IterableDataset ]
            #
            # `IterableDataset` does not support custom `batch_sampler` or `sampler` since the
            # key is irrelevant. The sampler is always an infinite dummy sampler
            # (`_InfiniteConstantSampler`): the dataset decides when the stream ends.
            #
            # We cannot check `shuffle is not None` here, since previously `shuffle=False` was
            # the default.
            if shuffle not in {False, None}:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )

            if sampler is not None:
                # See NOTE [ Custom Samplers and IterableDataset ]
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            elif batch_sampler is not None:
                # See NOTE [ Custom Samplers and IterableDataset ]
                raise ValueError(
                    "DataLoader with IterableDataset: expected unspecified "
                    f"batch_sampler option, but got batch_sampler={batch_sampler}"
                )
        else:
            shuffle = bool(shuffle)
            self._dataset_kind = _DatasetKind.Map

        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")

        if batch_sampler is not None:
            # auto_collation with custom batch_sampler
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None:
            # no auto_collation
            if drop_last:
                raise ValueError(
                    "batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
                )

        if sampler is None:  # give default samplers
            if self._dataset_kind == _DatasetKind.Iterable:
                # See NOTE [ Custom Samplers and IterableDataset ]
                sampler = _InfiniteConstantSampler()
            else:  # map-style
                if shuffle:
                    sampler = RandomSampler(dataset, generator=generator)  # type: ignore[arg-type]
                else:
                    sampler = SequentialSampler(dataset)  # type: ignore[arg-type]

        if batch_size is not None and batch_sampler is None:
            # auto_collation without custom batch_sampler
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator

        if collate_fn is None:
            if self._auto_collation:
                collate_fn = _utils.collate.default_collate
            else:
                collate_fn = _utils.collate.default_convert

        self.collate_fn = collate_fn
        self.persistent_workers = persistent_workers

        self.__initialized = True
        self._IterableDataset_len_called = None  # See NOTE [ IterableDataset and __len__ ]

        self._iterator = None

        self.check_worker_number_rationality()

    def _get_iterator(self) -> _BaseDataLoaderIter:
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    @property
    def multiprocessing_context(self):
        return self.__multiprocessing_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, multiprocessing_context):
        if multiprocessing_context is not None:
            if self.num_workers > 0:
                if isinstance(multiprocessing_context, str):
                    valid_start_methods = python_multiprocessing.get_all_start_methods()
                    if multiprocessing_context not in valid_start_methods:
                        raise ValueError(
                            "multiprocessing_context option "
                            f"should specify a valid start method in {valid_start_methods!r}, but got "
                            f"multiprocessing_context={multiprocessing_context!r}"
                        )
                    multiprocessing_context = python_multiprocessing.get_context(multiprocessing_context)

                if not isinstance(multiprocessing_context, python_multiprocessing.context.BaseContext):
                    raise TypeError(
                        "multiprocessing_context option should be a valid context "
                        "object or a string specifying the start method, but got "
                        f"multiprocessing_context={multiprocessing_context}"
                    )
            else:
                raise ValueError(
                    "multiprocessing_context can only be used with "
                    "multi-process loading (num_workers > 0), but got "
                    f"num_workers={self.num_workers}"
                )

        self.__multiprocessing_context = multiprocessing_context

    def __setattr__(self, attr, val):
        if self.__initialized and attr in (
            "batch_size",
            "batch_sampler",
            "sampler",
            "drop_last",
            "dataset",
            "persistent_workers",
        ):
            raise ValueError(f"{attr} attribute should not be set after {self.__class__.__name__} is initialized")

        super().__setattr__(attr, val)

    def __iter__(self) -> _BaseDataLoaderIter:
        # When using a single worker the returned iterator should be created every time to avoid
        # resetting its state. With persistent workers the iterator is created once in the
        # lifetime of the DataLoader object so that workers can be reused.
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        # The actual sampler used for generating indices for `_DatasetFetcher` (see
        # _utils/fetch.py) to read data at each time. This would be `.batch_sampler` if in
        # auto-collation mode, and `.sampler` otherwise.
        if self._auto_collation:
            return self.batch_sampler
        return self.sampler

    def __len__(self) -> int:
        if self._dataset_kind == _DatasetKind.Iterable:
            # NOTE [ IterableDataset and __len__ ]
            #
            # For `IterableDataset`, `__len__` could be inaccurate when one naively does
            # multi-processing data loading, since the samples will be duplicated. We trust the
            # dataset's `__len__` (this still throws if the dataset does not implement one),
            # remember it, and warn if the iterator ends up yielding more than this number.
            length = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[assignment, arg-type]
            if self.batch_size is not None:  # IterableDataset doesn't allow custom sampler or batch_sampler
                from math import ceil

                if self.drop_last:
                    length = length // self.batch_size
                else:
                    length = ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)

    def check_worker_number_rationality(self):
        r"""Warn when more workers are requested than the CPUs this process may use."""

        def _create_warning_msg(num_worker_suggest, num_worker_created, cpuset_checked):
            suggested_max_worker_msg = (
                (
                    "Our suggested max number of worker in current system is {}{}, which is smaller "
                    "than what this DataLoader is going to create."
                ).format(
                    num_worker_suggest,
                    ("" if cpuset_checked else " (`cpuset` is not taken into account)"),
                )
                if num_worker_suggest is not None
                else ("DataLoader is not able to compute a suggested max number of worker in current system.")
            )

            return (
                f"This DataLoader will create {num_worker_created} worker processes in total. "
                f"{suggested_max_worker_msg} "
                "Please be aware that excessive worker creation might get DataLoader running slow or even freeze, "
                "lower the worker number to avoid potential slowness/freeze if necessary."
            )

        if not self.num_workers or self.num_workers == 0:
            return

        max_num_worker_suggest = _cpu_count()
        cpuset_checked = hasattr(os, "sched_getaffinity")

        if max_num_worker_suggest is None or self.num_workers > max_num_worker_suggest:
            warnings.warn(
                _create_warning_msg(max_num_worker_suggest, self.num_workers, cpuset_checked),
                stacklevel=2,
            )


# NOTE [ Queues outlive their iterator ]
#
# An iterator dropped while an exception's traceback refers to it is freed by the cycle
# collector, which runs the weakref callbacks of everything unreachable *before* any `__del__`.
# If the iterator's queues were unreachable too, multiprocessing's finalizer would close each
# queue's feeder thread first, and the `None` that `__del__` puts to stop a worker would never be
# written: the worker would have to be terminated after a timeout. The queues are therefore also
# held here, by iterator id, until that iterator has shut its workers down.
_queues_of_live_iterators: dict[int, tuple] = {}


class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._shared_seed = None
        self._dataset_kind = loader._dataset_kind
        self._IterableDataset_len_called = loader._IterableDataset_len_called
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._index_sampler = loader._index_sampler
        self._num_workers = loader.num_workers

        if loader.pin_memory and not _accelerator_available():
            warnings.warn(
                "'pin_memory' argument is set as true but no accelerator is found, "
                "then device pinned memory won't be used.",
                stacklevel=3,
            )
        self._pin_memory = loader.pin_memory and _accelerator_available()
        self._timeout = loader.timeout
        self._collate_fn = loader.collate_fn
        self._sampler_iter = iter(self._index_sampler)
        # Drawn whatever num_workers is, so that the loader's generator is consumed the same way
        # (and shuffling gives the same order) with and without workers.
        self._base_seed = _random_seed(loader.generator)
        self._persistent_workers = loader.persistent_workers
        self._num_yielded = 0

    def __iter__(self):
        return self

    def _reset(self, loader, first_iter=False):
        self._sampler_iter = iter(self._index_sampler)
        self._num_yielded = 0
        self._IterableDataset_len_called = loader._IterableDataset_len_called

    def _next_index(self):
        return next(self._sampler_iter)  # may raise StopIteration

    def _next_data(self):
        raise NotImplementedError

    def __next__(self):
        if self._sampler_iter is None:
            self._reset()  # type: ignore[call-arg]
        data = self._next_data()
        self._num_yielded += 1
        if (
            self._dataset_kind == _DatasetKind.Iterable
            and self._IterableDataset_len_called is not None
            and self._num_yielded > self._IterableDataset_len_called
        ):
            warn_msg = (
                f"Length of IterableDataset {self._dataset} was reported to be {self._IterableDataset_len_called}"
                f"(when accessing len(dataloader)), but {self._num_yielded} samples have been fetched. "
            )
            if self._num_workers > 0:
                warn_msg += (
                    "For multiprocessing data-loading, this could be caused by not properly configuring the "
                    "IterableDataset replica at each worker. Please see the IterableDataset documentation "
                    "(ember.utils.data.IterableDataset) for examples."
                )
            warnings.warn(warn_msg, stacklevel=2)
        return data

    def __len__(self) -> int:
        return len(self._index_sampler)

    def __getstate__(self):
        raise NotImplementedError(f"{self.__class__.__name__} cannot be pickled")


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    def __init__(self, loader) -> None:
        super().__init__(loader)
        assert self._timeout == 0
        assert self._num_workers == 0

        self._dataset_fetcher = _DatasetKind.create_fetcher(
            self._dataset_kind,
            self._dataset,
            self._auto_collation,
            self._collate_fn,
            self._drop_last,
        )

    def _next_data(self):
        index = self._next_index()  # may raise StopIteration
        data = self._dataset_fetcher.fetch(index)  # may raise StopIteration
        if self._pin_memory:
            data = _pin_memory(data)
        return data


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    r"""Iterates once over the DataLoader's dataset, as specified by the sampler.

    NOTE [ Data Loader Multiprocessing Shutdown Logic ] (after PyTorch's note of that name)

    * Workers are daemonic, so they never outlive a main process that exits normally, and each
      watches its parent (``ManagerWatchdog``) so it exits if the main process is killed.
    * ``_workers_done_event`` (a multiprocessing Event) tells workers the iterator is shutting
      down: they stop processing and wait for the final ``None`` on their index queue.
    * The main process calls ``cancel_join_thread()`` on every index queue, so exiting never
      blocks on a queue's feeder thread; workers do the same on the result queue once done.
    * ``_shutdown_workers`` (on exhaustion, ``__del__`` or error) sets the event, sends ``None``
      to each worker, joins each with a timeout and terminates any that is still alive. At
      interpreter exit it does nothing (``_utils.python_exit_status``): multiprocessing's own
      exit handler terminates daemonic children then, and queue locks may already be gone.
    """

    def __init__(self, loader) -> None:
        super().__init__(loader)

        self._prefetch_factor = loader.prefetch_factor

        assert self._num_workers > 0
        assert self._prefetch_factor > 0

        if loader.multiprocessing_context is None:
            multiprocessing_context = _default_context()
        else:
            multiprocessing_context = loader.multiprocessing_context

        self._worker_init_fn = loader.worker_init_fn

        self._worker_result_queue = multiprocessing_context.Queue()
        self._worker_pids_set = False
        self._shutdown = False
        self._workers_done_event = multiprocessing_context.Event()

        self._index_queues = []
        _queues_of_live_iterators[id(self)] = (self._worker_result_queue, self._index_queues)
        self._workers = []
        self._workers_status = [True for _ in range(self._num_workers)]
        for i in range(self._num_workers):
            index_queue = multiprocessing_context.Queue()
            # Need to `cancel_join_thread` here! See the shutdown note above.
            index_queue.cancel_join_thread()
            w = multiprocessing_context.Process(
                target=_utils.worker._worker_loop,
                args=(
                    self._dataset_kind,
                    self._dataset,
                    index_queue,
                    self._worker_result_queue,
                    self._workers_done_event,
                    self._auto_collation,
                    self._collate_fn,
                    self._drop_last,
                    self._base_seed,
                    self._worker_init_fn,
                    i,
                    self._num_workers,
                    self._persistent_workers,
                    self._shared_seed,
                ),
            )
            w.daemon = True
            # NB: Process.start() actually take some time as it needs to start a process and pass
            #     the arguments over via a pipe. Therefore, we only add a worker to self._workers
            #     list after it started, so that we do not call .join() if program dies before it
            #     starts, and __del__ tries to join but will get:
            #     AssertionError: can only join a started process.
            try:
                w.start()
            except BaseException:
                self._index_queues.append(index_queue)
                self._shutdown_workers()
                raise
            self._index_queues.append(index_queue)
            self._workers.append(w)

        self._data_queue = self._worker_result_queue
        self._worker_pids_set = True
        self._reset(loader, first_iter=True)

    def _reset(self, loader, first_iter=False):
        super()._reset(loader, first_iter)
        self._send_idx = 0  # idx of the next task to be sent to workers
        self._rcvd_idx = 0  # idx of the next task to be returned in __next__
        # information about data not yet yielded, i.e., tasks w/ indices in range [rcvd_idx, send_idx).
        # map: task idx => - (worker_id,)        if data isn't fetched (outstanding)
        #                  \ (worker_id, data)   if data is already fetched (out-of-order)
        self._task_info: dict[int, tuple] = {}
        self._tasks_outstanding = 0  # always equal to count(v for v in task_info.values() if len(v) == 1)
        # A list of booleans representing whether each worker still has work to do *for this
        # epoch*, i.e., not having exhausted its iterable dataset object. It always contains all
        # `True`s if not using an iterable-style dataset.
        self._workers_status = [True for _ in range(self._num_workers)]
        # Reset the worker queue cycle so it resumes next epoch at worker 0
        self._worker_queue_idx_cycle = itertools.cycle(range(self._num_workers))
        # We resume the prefetching in case it was enabled
        if not first_iter:
            for idx in range(self._num_workers):
                self._index_queues[idx].put(_utils.worker._ResumeIteration(self._shared_seed))
            resume_iteration_cnt = self._num_workers
            while resume_iteration_cnt > 0:
                return_idx, return_data = self._get_data()
                if isinstance(return_idx, _utils.worker._ResumeIteration):
                    assert return_data is None
                    resume_iteration_cnt -= 1
        # prime the prefetch loop
        for _ in range(self._prefetch_factor * self._num_workers):
            self._try_put_index()

    def _try_get_data(self, timeout=_utils.MP_STATUS_CHECK_INTERVAL):
        # Tries to fetch data from `self._data_queue` once for a given timeout.
        #
        # Waits on the queue's pipe together with the sentinels of the workers that still have
        # work, so that a worker that dies (killed, segfault, os._exit) is noticed at once. This
        # raises a `RuntimeError` if any worker died unexpectedly.
        #
        # Returns a 2-tuple:
        #   (bool: whether successfully get data, any: data if successful else None)
        try:
            reader = getattr(self._data_queue, "_reader", None)
            if reader is not None:
                sentinels = [w.sentinel for i, w in enumerate(self._workers) if self._workers_status[i]]
                ready = mp_connection.wait([reader, *sentinels], timeout)
                if reader not in ready:
                    raise queue.Empty
            data = self._data_queue.get(timeout=timeout)
            if isinstance(data, bytes):
                data = pickle.loads(data)
            return (True, data)
        except Exception as e:
            # At timeout and error, we manually check whether any worker has failed.
            failed_workers = []
            for worker_id, w in enumerate(self._workers):
                if self._workers_status[worker_id] and not w.is_alive():
                    failed_workers.append(w)
                    self._mark_worker_as_unavailable(worker_id)
            if len(failed_workers) > 0:
                pids_str = ", ".join(str(w.pid) for w in failed_workers)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids_str}) exited unexpectedly") from e
            if isinstance(e, queue.Empty):
                return (False, None)
            raise

    def _get_data(self):
        # Fetches data from `self._data_queue`, checking the workers' status every
        # `MP_STATUS_CHECK_INTERVAL` seconds (and whenever one of them exits).
        if self._timeout > 0:
            success, data = self._try_get_data(self._timeout)
            if success:
                return data
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
        while True:
            success, data = self._try_get_data()
            if success:
                return data

    def _next_data(self):
        while True:
            # If the worker responsible for `self._rcvd_idx` has already ended and was unable to
            # fulfill this task (due to exhausting an `IterableDataset`), we try to advance
            # `self._rcvd_idx` to find the next valid index.
            #
            # This part needs to run in the loop because both the `self._get_data()` call and
            # `_IterableDatasetStopIteration` check below can mark extra worker(s) as dead.
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx, None)
                if info:
                    worker_id = info[0]
                    if len(info) == 2 or self._workers_status[worker_id]:  # has data or is still active
                        break
                    del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                # no valid `self._rcvd_idx` is found (i.e., didn't break)
                if not self._persistent_workers:
                    self._shutdown_workers()
                raise StopIteration

            # Now `self._rcvd_idx` is the batch index we want to fetch

            # Check if the next sample has already been generated
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker_id, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process_data(data)

            assert not self._shutdown and self._tasks_outstanding > 0
            idx, data = self._get_data()
            self._tasks_outstanding -= 1
            if self._dataset_kind == _DatasetKind.Iterable:
                # Check for _IterableDatasetStopIteration
                if isinstance(data, _utils.worker._IterableDatasetStopIteration):
                    if self._persistent_workers:
                        self._workers_status[data.worker_id] = False
                    else:
                        self._mark_worker_as_unavailable(data.worker_id)
                    self._try_put_index()
                    continue

            if idx != self._rcvd_idx:
                # store out-of-order samples (the reorder buffer)
                self._task_info[idx] += (data,)
            else:
                del self._task_info[idx]
                self._rcvd_idx += 1
                return self._process_data(data)

    def _try_put_index(self):
        assert self._tasks_outstanding < self._prefetch_factor * self._num_workers

        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):  # find the next active worker, if any
            worker_queue_idx = next(self._worker_queue_idx_cycle)
            if self._workers_status[worker_queue_idx]:
                break
        else:
            # not found (i.e., didn't break)
            return

        self._index_queues[worker_queue_idx].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker_queue_idx,)
        self._tasks_outstanding += 1
        self._send_idx += 1

    def _process_data(self, data):
        self._try_put_index()
        if isinstance(data, _utils.ExceptionWrapper):
            data.reraise()
        if self._pin_memory:
            data = _pin_memory(data)
        return data

    def _mark_worker_as_unavailable(self, worker_id, shutdown=False):
        # Mark a worker as having finished its work e.g., due to exhausting an
        # `IterableDataset`. This should be used only when this `_MultiProcessingDataLoaderIter`
        # is going to continue running.

        assert self._workers_status[worker_id] or (self._persistent_workers and shutdown)

        # Signal termination to that specific worker.
        q = self._index_queues[worker_id]
        # Indicate that no more data will be put on this queue by the current process.
        q.put(None)

        # Note that we don't actually join the worker here: joining may be slow, and since we
        # don't join, the worker may still raise error, which we prefer capturing. Joining is
        # deferred to `_shutdown_workers`.

        self._workers_status[worker_id] = False

        assert self._workers_done_event.is_set() == shutdown

    def _shutdown_workers(self):
        # Called when shutting down this `_MultiProcessingDataLoaderIter`. See NOTE [ Data Loader
        # Multiprocessing Shutdown Logic ] for details on the logic of this function.
        if _utils is None or _utils.python_exit_status is True or _utils.python_exit_status is None:
            # If Python is shutting down, do no-op.
            return
        # Normal exit when last reference is gone / iterator is depleted.
        if not self._shutdown:
            self._shutdown = True
            try:
                # Exit workers now.
                self._workers_done_event.set()
                for worker_id in range(len(self._workers)):
                    # Get number of workers from `len(self._workers)` instead of
                    # `self._num_workers` in case we error before starting all workers.
                    # If we are using workers_status with persistent_workers we have to shut it
                    # down because the worker is paused.
                    if self._persistent_workers or self._workers_status[worker_id]:
                        self._mark_worker_as_unavailable(worker_id, shutdown=True)
                for w in self._workers:
                    # We should be able to join here, but in case anything went wrong, we set a
                    # timeout and if the workers fail to join, they are killed in the `finally`
                    # block.
                    w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
                for q in self._index_queues:
                    q.cancel_join_thread()
                    q.close()
            finally:
                self._worker_pids_set = False
                for w in self._workers:
                    if w.is_alive():
                        # Existing mechanisms try to make the workers exit peacefully, but in
                        # case that we unfortunately reach here, which we shouldn't, we kill the
                        # worker.
                        w.terminate()
                        w.join(timeout=_utils.MP_STATUS_CHECK_INTERVAL)
                # The main process never writes to the result queue; close its pipe now rather
                # than when the iterator is collected.
                self._worker_result_queue.cancel_join_thread()
                self._worker_result_queue.close()
                _queues_of_live_iterators.pop(id(self), None)

    def __del__(self):
        if "_shutdown" in self.__dict__:  # __init__ got as far as creating queues
            self._shutdown_workers()

