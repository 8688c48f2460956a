"""DataLoader: batches from a dataset, loaded in the main process or in worker processes.

The loader turns its sampler into a stream of tasks (one per batch). With num_workers=0 the main
process fetches each task itself; otherwise tasks go round-robin to the workers, at most
prefetch_factor per worker in flight, and results are handed out in task order (in_order=True)
or as they arrive. Both paths fetch through the same Fetcher and draw the same base seed from
the loader's generator before the sampler does, so a shuffled epoch visits the same samples in
the same order whatever num_workers is.

Note [DataLoader pipeline protocol]
An iterable dataset may take part in shuffling and sharding, as torchdata's DataPipes do in
PyTorch's DataLoader, by defining two optional methods (emberdata's IterDataPipe does):
- `_dataloader_shuffle(shuffle) -> dataset`, called once at construction when `shuffle` is not
  None; the loader keeps the dataset it returns. Without it, shuffle=True is an error for an
  iterable dataset, as in PyTorch.
- `_dataloader_start_epoch(seed, worker_id, num_workers, batch_size)`, called in the process
  that iterates the dataset (worker_id 0 and num_workers 0 in the main process) before each
  epoch's iterator is made. `seed` is drawn from the loader's generator once per epoch, like
  the base seed, so it is the same in every worker and for any num_workers, and differs between
  epochs; `batch_size` is None without auto-batching.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import queue
import weakref

import ember

from . import _worker
from ._fetch import Exhausted, Fetcher
from .collate import default_collate, default_convert
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler

get_worker_info = _worker.get_worker_info

# Fixed once the loader is built, as in PyTorch: the iterators read them.
_FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")

_POLL_SECONDS = 1.0  # how often a waiting main process checks that its workers are alive


def _positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")


class DataLoader:
    """Batches of `dataset`, as torch.utils.data.DataLoader."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None, batch_sampler=None, num_workers=0,
                 collate_fn=None, pin_memory=False, drop_last=False, timeout=0, worker_init_fn=None,
                 multiprocessing_context=None, generator=None, *, prefetch_factor=None, persistent_workers=False,
                 pin_memory_device="", in_order=True):
        if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             f"multiprocessing, got {num_workers}")
        if timeout < 0:
            raise ValueError(f"timeout option should be non-negative, got {timeout}")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing. "
                             "let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None.")
        if prefetch_factor is None:
            prefetch_factor = 2 if num_workers > 0 else None
        else:
            _positive_int("prefetch_factor", prefetch_factor)
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        iterable = isinstance(dataset, IterableDataset)
        configure_shuffle = getattr(dataset, "_dataloader_shuffle", None) if iterable else None
        if iterable:
            if callable(configure_shuffle):
                if shuffle is not None:
                    dataset = configure_shuffle(bool(shuffle))
            elif shuffle not in (None, False):
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                                 f"but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified sampler option, "
                                 f"but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError(f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                                 f"but got batch_sampler={batch_sampler}")
        else:
            if sampler is not None and shuffle:
                raise ValueError("sampler option is mutually exclusive with shuffle")
            if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None or drop_last):
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                                 "and drop_last")
            if batch_sampler is not None:
                batch_size, drop_last = None, False
            elif batch_size is None and drop_last:
                raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with "
                                 "drop_last")
            if sampler is None:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
            if batch_size is not None and batch_sampler is None:
                batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if batch_size is not None:
            _positive_int("batch_size", batch_size)
        batching = batch_size is not None or batch_sampler is not None
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.collate_fn = collate_fn if collate_fn is not None else (default_collate if batching else default_convert)
        self.pin_memory = pin_memory  # a no-op: there is no page-locked host memory to pin into on CPU
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.generator = generator
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._iterable = iterable
        self._batching = batching
        self._persistent_iterator = None
        self._initialized = True

    def __setattr__(self, name, value):
        if getattr(self, "_initialized", False) and name in _FROZEN:
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    def _fetcher_args(self) -> dict:
        return dict(iterable=self._iterable, batching=self._batching, batch_size=self.batch_size,
                    drop_last=self.drop_last, collate_fn=self.collate_fn)

    def _tasks(self, seed: int):
        """One task per batch: index lists, single indices, or for iterable data the epoch's seed."""
        if self._iterable:
            return itertools.repeat(seed)
        return iter(self.batch_sampler if self._batching else self.sampler)

    def _base_seed(self) -> int:
        source = self.generator if self.generator is not None else ember.default_generator
        return int(ember.randint(0, 2**62, (), generator=source))

    def __iter__(self):
        if self.num_workers == 0:
            return _SingleProcessIterator(self)
        if not self.persistent_workers:
            return _MultiProcessIterator(self)
        if self._persistent_iterator is None:
            self._persistent_iterator = _MultiProcessIterator(self)
        else:
            self._persistent_iterator._start_epoch()
        return self._persistent_iterator

    def __len__(self):
        if not self._iterable:
            return len(self.batch_sampler if self._batching else self.sampler)
        n = len(self.dataset)  # an IterableDataset without __len__ raises TypeError, as in PyTorch
        if self.batch_size is None:
            return n
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)


class _SingleProcessIterator:
    def __init__(self, loader: DataLoader):
        seed = loader._base_seed()  # drawn here too, so the generator advances as with workers
        self._tasks = loader._tasks(seed)
        self._fetch = Fetcher(loader.dataset, **loader._fetcher_args())

    def __iter__(self):
        return self

    def __next__(self):
        task = next(self._tasks)
        try:
            return self._fetch(task)
        except Exhausted:
            raise StopIteration from None


class _MultiProcessIterator:
    def __init__(self, loader: DataLoader):
        # A persistent iterator belongs to its loader (loader._persistent_iterator): a strong reference
        # back would be a cycle, keeping the workers alive (and polling) until a garbage-collector pass.
        self._loader = weakref.proxy(loader) if loader.persistent_workers else loader
        self._n = loader.num_workers
        self._persistent = loader.persistent_workers
        base_seed = self._epoch_seed = loader._base_seed()
        context = loader.multiprocessing_context
        if isinstance(context, str):
            context = multiprocessing.get_context(context)
        elif context is None:
            context = multiprocessing.get_context()
        self._results = context.Queue()
        self._task_queues = []
        self._workers = []
        for worker_id in range(self._n):
            tasks = context.Queue()
            worker = context.Process(
                target=_worker.worker_loop, daemon=True,
                args=(loader.dataset, loader._fetcher_args(), tasks, self._results, worker_id, self._n,
                      base_seed + worker_id, loader.worker_init_fn))
            worker.start()
            self._task_queues.append(tasks)
            self._workers.append(worker)
        self._shut = False
        self._epoch = -1
        self._start_epoch(first=True)

    def _start_epoch(self, first: bool = False) -> None:
        if not first:
            # Persistent workers keep their seeds; the draw is the new epoch's seed.
            self._epoch_seed = self._loader._base_seed()
        self._epoch += 1
        self._tasks = self._loader._tasks(self._epoch_seed)
        self._sent = 0  # tasks handed out this epoch (their seq numbers are 0 .. sent-1)
        self._next_seq = 0  # the next result to hand out in order
        self._ready = {}  # seq -> ("batch", payload) | ("exhausted", None) | ("error", WorkerError)
        self._in_flight = 0
        self._owner = {}  # seq -> worker id, for the tasks in flight
        self._turn = 0  # whose turn it is in the round-robin
        self._active = set(range(self._n))  # workers whose iterable data is not exhausted
        self._no_more_tasks = False
        for _ in range(self._loader.prefetch_factor * self._n):
            self._send_one()

    def _send_one(self) -> None:
        if self._no_more_tasks or not self._active:
            return
        try:
            task = next(self._tasks)
        except StopIteration:
            self._no_more_tasks = True
            return
        while self._turn % self._n not in self._active:
            self._turn += 1
        worker_id = self._turn % self._n
        self._turn += 1
        self._task_queues[worker_id].put((self._epoch, self._sent, task))
        self._owner[self._sent] = worker_id
        self._sent += 1
        self._in_flight += 1

    def __iter__(self):
        return self

    def __next__(self):
        while True:
            outcome = self._take_ready()
            if outcome is not None:
                kind, payload = outcome
                self._send_one()
                if kind == "batch":
                    return _worker.load_batch(payload)
                if kind == "error":
                    self._shutdown_if_transient()
                    payload.reraise()
                continue  # an exhausted iterable worker: its slot yields nothing
            if self._in_flight == 0:
                self._shutdown_if_transient()
                raise StopIteration
            self._receive()

    def _take_ready(self):
        if not self._loader.in_order:
            return self._ready.pop(next(iter(self._ready))) if self._ready else None
        if self._next_seq not in self._ready:
            return None
        self._next_seq += 1
        return self._ready.pop(self._next_seq - 1)

    def _receive(self) -> None:
        waited = 0.0
        while True:
            try:
                epoch, seq, kind, payload = self._results.get(timeout=_POLL_SECONDS)
            except queue.Empty:
                waited += _POLL_SECONDS
                self._check_workers()
                if self._loader.timeout and waited >= self._loader.timeout:
                    self._shutdown(wait=False)
                    raise RuntimeError(f"DataLoader timed out after {self._loader.timeout} seconds") from None
                continue
            if epoch != self._epoch:
                continue  # prefetched for an epoch that was abandoned
            self._in_flight -= 1
            worker_id = self._owner.pop(seq)
            if kind == "exhausted":
                self._active.discard(worker_id)
            self._ready[seq] = (kind, payload)
            return

    def _check_workers(self) -> None:
        dead = [w for w in self._workers if not w.is_alive()]
        if dead:
            self._shutdown(wait=False)
            w = dead[0]
            raise RuntimeError(f"DataLoader worker (pid {w.pid}) exited unexpectedly with exit code {w.exitcode}")

    def _shutdown_if_transient(self) -> None:
        if not self._persistent:
            self._shutdown()

    def _shutdown(self, wait: bool = True) -> None:
        """Stops the workers: by message, giving each a few seconds to finish its task, or at once
        (wait=False) when something already went wrong."""
        if self._shut:
            return
        self._shut = True
        for tasks in self._task_queues:
            try:
                tasks.put(None)
            except (OSError, ValueError):
                pass
        for w in self._workers:
            w.join(timeout=5 if wait else 0)
            if w.is_alive():
                w.terminate()
                w.join()
        for q in (*self._task_queues, self._results):
            q.cancel_join_thread()  # unread batches must not block our exit
            q.close()

    def __del__(self):
        try:
            self._shutdown()
        except Exception:
            pass
