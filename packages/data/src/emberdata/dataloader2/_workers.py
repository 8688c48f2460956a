"""The worker processes of MultiProcessingReadingService.

Protocol (per worker): the main process sends ``(epoch, seed_generator)`` on the worker's
control queue to start an epoch, and None to stop it. The worker answers on its own result
queue with ``("item", epoch, pickled_item)``, then ``("end", epoch, None)``, or
``("error", epoch, WorkerFailure)``. A shared epoch counter tells a worker that the main
process abandoned an epoch (a new one started), so it stops producing the old one; the main
process drops messages of old epochs. Items are pickled in the worker, so an item that cannot
be pickled becomes an error the main process sees instead of a silent hang in a queue's feeder
thread.
"""

from __future__ import annotations

import multiprocessing
import pickle
import queue
import traceback
from collections.abc import Callable
from multiprocessing.reduction import ForkingPickler
from typing import Any

from emberdata.dataloader2.utils import WorkerInfo
from emberdata.datapipes.iter._sharding import SHARDING_PRIORITIES
from emberdata.datapipes.utils import apply_sharding, set_graph_random_seed

_POLL = 0.1  # seconds between liveness / abandonment checks while blocked


class WorkerFailure:
    """An exception raised in a worker, carried to the main process as its type and formatted
    traceback (exceptions do not always pickle)."""

    def __init__(self, worker_id: int, error: BaseException) -> None:
        self.exc_type = type(error)
        self.message = (
            f"Caught {type(error).__name__} in DataLoader2 worker process {worker_id}.\n"
            f"Original {''.join(traceback.format_exception(error))}"
        )

    def reraise(self) -> None:
        try:
            error = self.exc_type(self.message)
        except Exception:  # noqa: BLE001 (an exception type that takes other arguments)
            error = RuntimeError(self.message)
        raise error


def _put(results: Any, message: tuple[Any, ...], current_epoch: Any, epoch: int) -> bool:
    """Put, unless the epoch is abandoned or the main process died first."""
    parent = multiprocessing.parent_process()
    while current_epoch.value == epoch:
        try:
            results.put(message, timeout=_POLL)
            return True
        except queue.Full:
            if parent is not None and not parent.is_alive():
                return False
    return False


def worker_loop(
    datapipe: Any,
    worker_id: int,
    num_workers: int,
    control: Any,
    results: Any,
    current_epoch: Any,
    worker_init_fn: Callable[[Any, WorkerInfo], Any] | None,
    worker_reset_fn: Callable[[Any, WorkerInfo, Any], Any] | None,
) -> None:
    import ember

    ember.set_num_threads(1)  # the workers run in parallel already
    info = WorkerInfo(num_workers=num_workers, worker_id=worker_id)
    init_error = None
    try:
        apply_sharding(datapipe, num_workers, worker_id, SHARDING_PRIORITIES.MULTIPROCESSING)
        if worker_init_fn is not None:
            datapipe = worker_init_fn(datapipe, info)
    except Exception as error:  # noqa: BLE001 (reported to the main process)
        init_error = WorkerFailure(worker_id, error)
    parent = multiprocessing.parent_process()
    while True:
        try:
            message = control.get(timeout=1.0)
        except queue.Empty:
            if parent is not None and not parent.is_alive():
                return  # the main process died without stopping us
            continue
        except KeyboardInterrupt:
            continue  # Ctrl-C is the main process's to handle; it stops us by message
        if message is None:
            return
        epoch, seed_generator = message
        if init_error is not None:
            _put(results, ("error", epoch, init_error), current_epoch, epoch)
            continue
        try:
            set_graph_random_seed(datapipe, seed_generator)
            if worker_reset_fn is not None:
                datapipe = worker_reset_fn(datapipe, info, seed_generator)
            for item in datapipe:
                payload = bytes(ForkingPickler.dumps(item))
                if not _put(results, ("item", epoch, payload), current_epoch, epoch):
                    break
            else:
                _put(results, ("end", epoch, None), current_epoch, epoch)
        except Exception as error:  # noqa: BLE001 (reported to the main process)
            _put(results, ("error", epoch, WorkerFailure(worker_id, error)), current_epoch, epoch)


def load_item(payload: bytes) -> Any:
    return pickle.loads(payload)
