"""Reading services: how DataLoader2 runs a pipeline (``torchdata.dataloader2.reading_service``).

A reading service adapts the graph once (``initialize``), prepares every epoch from the
epoch's SeedGenerator (``initialize_iteration``), and cleans up after an epoch
(``finalize_iteration``) and at the end (``finalize``).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import queue
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import Any

from emberdata._seeds import SeedGenerator
from emberdata.dataloader2 import _workers
from emberdata.dataloader2._channel import RankChannel
from emberdata.dataloader2.utils import WorkerInfo
from emberdata.datapipes._base import IterDataPipe
from emberdata.datapipes.iter._prefetch import Prefetcher
from emberdata.datapipes.iter._sharding import SHARDING_PRIORITIES
from emberdata.datapipes.utils import apply_sharding, set_graph_random_seed

__all__ = [
    "CheckpointableReadingServiceInterface",
    "DistributedReadingService",
    "InProcessReadingService",
    "MultiProcessingReadingService",
    "ReadingServiceInterface",
    "SequentialReadingService",
]

ResetFn = Callable[[Any], Any]


class ReadingServiceInterface(ABC):
    @abstractmethod
    def initialize(self, datapipe: Any) -> Any:
        """Adapt the graph once, when DataLoader2 is first iterated; return the graph to run."""

    def finalize(self) -> None:
        """Release everything (processes, connections); called by DataLoader2.shutdown."""
        return  # an optional hook: nothing to release by default

    def initialize_iteration(
        self, seed_generator: SeedGenerator, iter_reset_fn: ResetFn | None = None
    ) -> ResetFn | None:
        """Prepare an epoch; may return a function DataLoader2 applies to the graph first."""
        return iter_reset_fn

    def finalize_iteration(self) -> None:
        """Called when an epoch's iterator is exhausted."""
        return  # an optional hook


class CheckpointableReadingServiceInterface(ReadingServiceInterface):
    @abstractmethod
    def checkpoint(self) -> bytes:
        """The service's state, for DataLoader2.state_dict."""

    @abstractmethod
    def restore(self, datapipe: Any, serialized_state: bytes) -> Any:
        """Return to a checkpointed state; called instead of ``initialize``."""


def _check_count(owner: str, name: str, value: object, minimum: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{owner} expected an int {name} >= {minimum}, but got {value!r}")


class InProcessReadingService(ReadingServiceInterface):
    """Runs the pipeline in the calling process: seeds its random pipes every epoch and,
    with ``prefetch_cnt > 0``, reads ahead in a thread.

    ``init_fn(datapipe, WorkerInfo)`` runs once and ``reset_fn(datapipe, WorkerInfo,
    seed_generator)`` every epoch; each returns the pipeline to use.
    """

    def __init__(
        self,
        prefetch_cnt: int = 0,
        init_fn: Callable[[Any, WorkerInfo], Any] | None = None,
        reset_fn: Callable[[Any, WorkerInfo, SeedGenerator], Any] | None = None,
    ) -> None:
        _check_count("InProcessReadingService", "prefetch_cnt", prefetch_cnt)
        self.prefetch_cnt = prefetch_cnt
        self.init_fn = init_fn
        self.reset_fn = reset_fn
        self._pipe: Any = None

    def initialize(self, datapipe: Any) -> Any:
        if self.init_fn is not None:
            datapipe = self.init_fn(datapipe, WorkerInfo(num_workers=1, worker_id=0))
        self._pipe = datapipe
        return Prefetcher(datapipe, self.prefetch_cnt) if self.prefetch_cnt else datapipe

    def initialize_iteration(
        self, seed_generator: SeedGenerator, iter_reset_fn: ResetFn | None = None
    ) -> ResetFn | None:
        set_graph_random_seed(self._pipe, seed_generator)
        if self.reset_fn is not None:
            self._pipe = self.reset_fn(self._pipe, WorkerInfo(1, 0), seed_generator)
        return iter_reset_fn


class _WorkerOutputs(IterDataPipe[Any]):
    """The main process's view of the workers: their items, one from each in turn (so a
    sharded order comes back as it was before sharding), skipping workers that have ended."""

    def __init__(self, service: MultiProcessingReadingService) -> None:
        self.service = service

    def __iter__(self) -> Iterator[Any]:
        service = self.service
        epoch = service._epoch
        active = list(range(service.num_workers))
        turn = 0
        while active:
            worker_id = active[turn % len(active)]
            kind, payload = service._receive(worker_id, epoch)
            if kind == "item":
                turn += 1
                yield _workers.load_item(payload)
            elif kind == "end":
                active.remove(worker_id)  # the next worker takes this turn
            elif kind == "abandoned":
                return
            else:
                payload.reraise()

    def source_datapipes(self) -> tuple[Any, ...]:
        return ()  # the graph runs in the workers; nothing here to seed or shard


class MultiProcessingReadingService(ReadingServiceInterface):
    """Runs the pipeline in ``num_workers`` processes.

    Each worker holds a copy of the graph with its ShardingFilter keeping shard ``worker_id``
    of ``num_workers`` (MULTIPROCESSING group); every epoch it is seeded from the epoch's
    SeedGenerator spawned for the worker (Note [shared and local seeds]). The main process
    takes one item from each worker in turn. ``worker_prefetch_cnt`` bounds how far each worker
    runs ahead; ``main_prefetch_cnt > 0`` adds a read-ahead thread in the main process.

    A worker's exception is raised in the main process with the worker id and the original
    traceback; a worker that dies is detected within a fraction of a second and raises
    RuntimeError (the other workers are stopped). ``worker_init_fn(datapipe, WorkerInfo)``
    runs once per worker and ``worker_reset_fn(datapipe, WorkerInfo, seed_generator)`` every
    epoch; each returns the pipeline to use. ``num_workers=0`` runs in the main process, without
    the read-ahead thread (there is no worker to overlap with).
    """

    def __init__(
        self,
        num_workers: int = 0,
        multiprocessing_context: str | None = None,
        worker_prefetch_cnt: int = 10,
        main_prefetch_cnt: int = 10,
        worker_init_fn: Callable[[Any, WorkerInfo], Any] | None = None,
        worker_reset_fn: Callable[[Any, WorkerInfo, SeedGenerator], Any] | None = None,
    ) -> None:
        name = "MultiProcessingReadingService"
        _check_count(name, "num_workers", num_workers)
        _check_count(name, "worker_prefetch_cnt", worker_prefetch_cnt)
        _check_count(name, "main_prefetch_cnt", main_prefetch_cnt)
        if multiprocessing_context is not None:
            methods = multiprocessing.get_all_start_methods()
            if multiprocessing_context not in methods:
                raise ValueError(
                    f"{name}: multiprocessing_context must be one of {methods}, but got "
                    f"{multiprocessing_context!r}"
                )
        self.num_workers = num_workers
        self.multiprocessing_context = multiprocessing_context
        self.worker_prefetch_cnt = worker_prefetch_cnt
        self.main_prefetch_cnt = main_prefetch_cnt
        self.worker_init_fn = worker_init_fn
        self.worker_reset_fn = worker_reset_fn
        self._in_process: InProcessReadingService | None = None
        self._processes: list[Any] = []
        self._controls: list[Any] = []
        self._results: list[Any] = []
        self._current_epoch: Any = None
        self._epoch = 0
        self._lock = threading.Lock()

    def initialize(self, datapipe: Any) -> Any:
        if self.num_workers == 0:
            # No worker to overlap with: a read-ahead thread would only contend for the GIL
            # with the pipeline itself (it doubled an epoch's time in bench_datapipes.py).
            self._in_process = InProcessReadingService(
                0, self.worker_init_fn, self.worker_reset_fn
            )
            return self._in_process.initialize(datapipe)
        context = multiprocessing.get_context(self.multiprocessing_context)
        self._current_epoch = context.Value("q", 0, lock=False)
        for worker_id in range(self.num_workers):
            control = context.Queue()
            results = context.Queue(maxsize=max(self.worker_prefetch_cnt, 1))
            process = context.Process(
                target=_workers.worker_loop,
                args=(datapipe, worker_id, self.num_workers, control, results,
                      self._current_epoch, self.worker_init_fn, self.worker_reset_fn),
                daemon=True,
                name=f"emberdata-worker-{worker_id}",
            )
            process.start()
            self._processes.append(process)
            self._controls.append(control)
            self._results.append(results)
        outputs = _WorkerOutputs(self)
        return Prefetcher(outputs, self.main_prefetch_cnt) if self.main_prefetch_cnt else outputs

    def initialize_iteration(
        self, seed_generator: SeedGenerator, iter_reset_fn: ResetFn | None = None
    ) -> ResetFn | None:
        if self._in_process is not None:
            return self._in_process.initialize_iteration(seed_generator, iter_reset_fn)
        if not self._processes:
            raise RuntimeError("MultiProcessingReadingService is not running (finalized?)")
        with self._lock:
            self._epoch += 1
            self._current_epoch.value = self._epoch
        for worker_id, control in enumerate(self._controls):
            control.put((self._epoch, seed_generator.spawn(worker_id)))
        return iter_reset_fn

    def _receive(self, worker_id: int, epoch: int) -> tuple[str, Any]:
        """The next message of ``epoch`` from a worker, or ``("abandoned", None)`` once a newer
        epoch has started. The lock makes "check the epoch, then take a message" one step
        against initialize_iteration, so a reader of an old epoch never takes (and drops) a
        message of the new one."""
        while True:
            with self._lock:
                if self._epoch != epoch or not self._processes:
                    return "abandoned", None
                results, process = self._results[worker_id], self._processes[worker_id]
                try:
                    kind, message_epoch, payload = results.get(timeout=_workers._POLL)
                except queue.Empty:
                    if process.is_alive():
                        continue
                    exitcode = process.exitcode
                else:
                    if message_epoch == epoch:
                        return kind, payload
                    continue  # left over from an abandoned epoch
            self.finalize()
            raise RuntimeError(
                f"DataLoader2 worker {worker_id} (pid {process.pid}) exited unexpectedly with "
                f"exit code {exitcode}"
            )

    def finalize(self) -> None:
        for control in self._controls:
            try:
                control.put(None)
            except (OSError, ValueError):
                pass
        if self._current_epoch is not None:
            self._current_epoch.value = -1  # unblocks workers waiting to put
        for process in self._processes:
            process.join(timeout=2)
            if process.is_alive():
                process.terminate()
                process.join()
        for q in (*self._controls, *self._results):
            q.cancel_join_thread()
            q.close()
        self._processes, self._controls, self._results = [], [], []

    def __getstate__(self) -> dict[str, Any]:
        if self._processes:
            raise TypeError("a running MultiProcessingReadingService cannot be pickled")
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _dist_setting(value: int | None, variable: str, default: int) -> int:
    if value is not None:
        return value
    raw = os.environ.get(variable)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"environment variable {variable}={raw!r} is not an integer") from None


class DistributedReadingService(ReadingServiceInterface):
    """Shards the pipeline across ranks and gives all ranks the same shared seeds.

    There is no ``ember.distributed`` process group yet, so the rank and world size are given
    as arguments or read from the ``RANK`` and ``WORLD_SIZE`` environment variables (as
    torchrun sets them), and rank 0 shares each epoch's seeds with the others over TCP at
    ``MASTER_ADDR:MASTER_PORT`` (arguments or environment; address default 127.0.0.1).
    ``timeout`` bounds every wait for another rank, in seconds.

    The ShardingFilter keeps shard ``rank`` of ``world_size`` (DISTRIBUTED group; with a
    MultiProcessingReadingService after it in a SequentialReadingService, worker ``w`` of ``W``
    on rank ``r`` keeps shard ``w + W * r``). Unlike torchdata, no ``fullsync`` is added: ranks
    whose shards differ in length by one item see different epoch lengths.
    """

    def __init__(
        self,
        timeout: float = 30 * 60,
        *,
        rank: int | None = None,
        world_size: int | None = None,
        master_addr: str | None = None,
        master_port: int | None = None,
    ) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"DistributedReadingService expected a positive timeout, got {timeout!r}")
        self.timeout = timeout
        self.world_size = _dist_setting(world_size, "WORLD_SIZE", 1)
        self.rank = _dist_setting(rank, "RANK", 0)
        if self.world_size < 1 or not 0 <= self.rank < self.world_size:
            raise ValueError(
                f"DistributedReadingService expected 0 <= rank < world_size, but got "
                f"rank={self.rank} and world_size={self.world_size}"
            )
        self.master_addr = master_addr or os.environ.get("MASTER_ADDR", "127.0.0.1")
        port = master_port if master_port is not None else os.environ.get("MASTER_PORT")
        if self.world_size > 1 and port is None:
            raise ValueError(
                "DistributedReadingService with world_size > 1 needs master_port (or "
                "MASTER_PORT) for rank 0 to share the seeds"
            )
        self.master_port = int(port) if port is not None else None
        self._channel: RankChannel | None = None
        self._datapipe: Any = None

    def initialize(self, datapipe: Any) -> Any:
        apply_sharding(datapipe, self.world_size, self.rank, SHARDING_PRIORITIES.DISTRIBUTED)
        self._datapipe = datapipe
        if self.world_size > 1:
            assert self.master_port is not None
            self._channel = RankChannel(self.rank, self.world_size, self.master_addr,
                                        self.master_port, self.timeout)
        return datapipe

    def initialize_iteration(
        self, seed_generator: SeedGenerator, iter_reset_fn: ResetFn | None = None
    ) -> ResetFn | None:
        if self._channel is not None:
            state = seed_generator.__dict__ if self.rank == 0 else None
            seed_generator.__dict__.update(self._channel.broadcast(state))
        seed_generator.spawn(self.rank, inplace=True)
        # Seeds the graph when it runs in this process; a copy, so services after this one
        # (worker processes) draw from the generator as it is now.
        set_graph_random_seed(self._datapipe, seed_generator._copy())
        return iter_reset_fn

    def finalize(self) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None


class SequentialReadingService(CheckpointableReadingServiceInterface):
    """Runs several reading services in turn: ``initialize`` and ``initialize_iteration`` in
    the given order, ``finalize_iteration`` and ``finalize`` in reverse. The usual pair is
    ``SequentialReadingService(DistributedReadingService(), MultiProcessingReadingService(n))``.
    """

    def __init__(self, *reading_services: ReadingServiceInterface) -> None:
        for rs in reading_services:
            if not isinstance(rs, ReadingServiceInterface):
                raise TypeError(
                    f"SequentialReadingService expected ReadingServiceInterface instances, but "
                    f"got {type(rs).__name__}"
                )
        self.reading_services = reading_services

    def initialize(self, datapipe: Any) -> Any:
        for rs in self.reading_services:
            datapipe = rs.initialize(datapipe)
        return datapipe

    def finalize(self) -> None:
        for rs in reversed(self.reading_services):
            rs.finalize()

    def initialize_iteration(
        self, seed_generator: SeedGenerator, iter_reset_fn: ResetFn | None = None
    ) -> ResetFn | None:
        for rs in self.reading_services:
            iter_reset_fn = rs.initialize_iteration(seed_generator, iter_reset_fn)
        return iter_reset_fn

    def finalize_iteration(self) -> None:
        for rs in reversed(self.reading_services):
            rs.finalize_iteration()

    def checkpoint(self) -> bytes:
        states = [
            rs.checkpoint() if isinstance(rs, CheckpointableReadingServiceInterface) else None
            for rs in self.reading_services
        ]
        return pickle.dumps(states)

    def restore(self, datapipe: Any, serialized_state: bytes) -> Any:
        states = pickle.loads(serialized_state)
        for rs, state in zip(self.reading_services, states, strict=True):
            if isinstance(rs, CheckpointableReadingServiceInterface) and state is not None:
                datapipe = rs.restore(datapipe, state)
            else:
                datapipe = rs.initialize(datapipe)
        return datapipe
