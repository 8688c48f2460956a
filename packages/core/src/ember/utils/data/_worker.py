"""The loop each DataLoader worker process runs, and the per-worker information it exposes.

Protocol. The main process sends `(epoch, seq, task)` on the worker's own task queue (for an
iterable dataset the task is the epoch's seed) and `None` to stop it; the worker answers
`(epoch, seq, kind, payload)` on the shared result queue, where kind is "batch", "exhausted" (its
iterable dataset ran out this epoch) or "error" (payload is a WorkerError). The epoch tags let persistent workers skip prefetched work of an abandoned epoch.
"""

from __future__ import annotations

import multiprocessing
import pickle
import queue
import random
import traceback
from dataclasses import dataclass

import numpy as np

import ember

from ...multiprocessing.reductions import dumps_by_copy
from ._fetch import Exhausted, Fetcher

_current: WorkerInfo | None = None  # set in a worker process only


@dataclass(frozen=True)
class WorkerInfo:
    """What get_worker_info() returns inside a worker: its id (0 .. num_workers-1), the number of
    workers, the seed its generators were given and its own copy of the dataset."""

    id: int
    num_workers: int
    seed: int
    dataset: object


def get_worker_info() -> WorkerInfo | None:
    """The current worker's WorkerInfo, or None in the main process."""
    return _current


class WorkerError:
    """An exception raised in a worker, carried to the main process as its type and the formatted
    traceback (exceptions themselves do not always pickle)."""

    def __init__(self, worker_id: int, exc: BaseException):
        self.exc_type = type(exc)
        self.message = (f"Caught {type(exc).__name__} in DataLoader worker process {worker_id}.\n"
                        f"Original {traceback.format_exc()}")

    def reraise(self):
        try:
            error = self.exc_type(self.message)
        except Exception:  # an exception type that takes other arguments
            error = RuntimeError(self.message)
        raise error


def seed_worker(seed: int) -> None:
    """Every source of randomness a dataset may use gets the worker's own seed."""
    ember.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed % 2**32)


def load_batch(payload: bytes):
    return pickle.loads(payload)


def worker_loop(dataset, fetcher_args: dict, task_queue, result_queue, worker_id: int, num_workers: int,
                seed: int, worker_init_fn) -> None:
    global _current
    ember.set_num_threads(1)  # the workers already run in parallel; a pool per worker oversubscribes
    seed_worker(seed)
    _current = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    init_error = None
    try:
        if worker_init_fn is not None:
            worker_init_fn(worker_id)
        fetcher = Fetcher(dataset, **fetcher_args, worker_id=worker_id, num_workers=num_workers)
    except Exception as exc:
        init_error = WorkerError(worker_id, exc)
    epoch = None
    parent = multiprocessing.parent_process()
    while True:
        try:
            message = task_queue.get(timeout=1.0)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                return  # the main process died without stopping us
            continue
        except KeyboardInterrupt:
            continue  # Ctrl-C is the main process's to handle; it stops us by message
        if message is None:
            return
        task_epoch, seq, task = message
        if init_error is not None:
            result_queue.put((task_epoch, seq, "error", init_error))
            continue
        if task_epoch != epoch:
            epoch = task_epoch
            fetcher.restart()
        try:
            # Pickled here rather than by the queue's feeder thread, so that a batch which cannot
            # be pickled becomes an error the main process sees instead of a silent hang. Tensors
            # are copied in, not shared: the main process may load the payload after this worker
            # has exited, or drop it unread (an abandoned epoch), and a shared block's descriptor
            # would then be gone, or held until the worker exits.
            result_queue.put((task_epoch, seq, "batch", dumps_by_copy(fetcher(task))))
        except Exhausted:
            result_queue.put((task_epoch, seq, "exhausted", None))
        except Exception as exc:
            result_queue.put((task_epoch, seq, "error", WorkerError(worker_id, exc)))
