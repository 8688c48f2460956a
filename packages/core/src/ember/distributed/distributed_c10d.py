"""Process groups and collectives on Gloo (torch.distributed.distributed_c10d's API, CPU tensors).

Note [collective execution]: each process group owns one Gloo context (a TCP full mesh) and one
worker thread. Every collective, sync or async, is queued on that thread, so all ranks run them in
the order they were issued (the order is what makes Gloo's tags match), and `async_op=True` just
returns the Work instead of waiting on it. Send/recv are posted at once (Gloo matches them by peer
and tag) and waited on by a second thread, as in PyTorch's ProcessGroupGloo.

Note [collectives from callbacks]: a Work's future runs its callbacks on the thread that completes
it: the group's worker thread, or the thread that registers the callback if the Work is already
done. A collective issued from such a callback (DDP communication hooks chain them:
`all_reduce(...).get_future().then(lambda f: all_reduce(...) ...)`) runs at once, on the calling
worker thread, instead of being queued behind it (which would deadlock once the callback waits on
it). Either way it runs right after the collective whose callback issued it and before anything
the issuing rank queues later, so every rank still runs collectives in the same order.

Note [tensor buffers]: Gloo sees raw memory. A contiguous tensor is handed over as is (so
all_reduce works in place); a non-contiguous one through a contiguous copy that is copied back
into it when the collective is done. The Work keeps every tensor alive until then. Every tensor
a collective writes goes through _writable first, before any rank communicates, which refuses the
memory of a read-only NumPy array as the in-place ops do. No version is bumped, though:
FSDP gathers parameters into buffers that autograd has saved.

Differences from PyTorch, on purpose: ReduceOp.AVG works on Gloo (SUM, then a division);
bool tensors reduce logically (SUM is "any", PRODUCT "all"); the object collectives serialize
through ember.save / ember.load(weights_only=True), so a received object can never run code
(register your own classes with ember.serialization.add_safe_globals).
"""

from __future__ import annotations

import enum
import importlib
import io
import os
import socket
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from urllib.parse import parse_qs, urlparse

import numpy as np

import ember

from ..futures import Future
from ._errors import DistBackendError, DistStoreError
from ._store import FileStore, PrefixStore, Store, TCPStore

__all__ = [
    "Backend", "GroupMember", "group", "P2POp", "ProcessGroup", "ReduceOp", "Work",
    "init_process_group", "destroy_process_group", "is_initialized", "is_available", "is_gloo_available",
    "is_mpi_available", "is_nccl_available", "is_torchelastic_launched", "new_group", "get_rank",
    "get_world_size", "get_backend", "get_global_rank", "get_group_rank", "get_process_group_ranks",
    "barrier", "monitored_barrier", "all_reduce", "broadcast", "reduce", "all_gather",
    "all_gather_into_tensor", "gather", "scatter", "reduce_scatter", "reduce_scatter_tensor", "all_to_all",
    "all_to_all_single", "send", "recv", "isend", "irecv", "batch_isend_irecv", "broadcast_object_list",
    "all_gather_object",
]

default_pg_timeout = timedelta(minutes=30)

# --- the engine, loaded on first use (Note [gloo binding] in csrc/distributed/gloo_py.cpp) ---

_gloo_module: Any = None
_gloo_problem: str | None = None


def _load_gloo() -> Any:
    global _gloo_module, _gloo_problem
    if _gloo_module is None and _gloo_problem is None:
        try:
            _gloo_module = importlib.import_module("ember._C_gloo")
        except ModuleNotFoundError as e:
            if e.name != "ember._C_gloo":
                raise
            _gloo_problem = ("this ember was built without Gloo (libgloo was not found when it was built; "
                             "on Debian/Ubuntu install libgloo-dev and rebuild ember)")
        except ImportError as e:  # the module is there but libgloo.so is not
            _gloo_problem = f"ember._C_gloo could not load the Gloo library libgloo: {e}"
    return _gloo_module


def is_gloo_available() -> bool:
    """True when the Gloo backend (ember._C_gloo and libgloo) can be loaded."""
    return _load_gloo() is not None


def is_available() -> bool:
    """True when ember.distributed can run collectives (Gloo is its only backend)."""
    return is_gloo_available()


def is_mpi_available() -> bool:
    return False


def is_nccl_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    """True in a process started by `python -m ember.distributed.run`."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def _gloo() -> Any:
    module = _load_gloo()
    if module is None:
        raise RuntimeError(f"ember.distributed: the gloo backend is not available: {_gloo_problem}")
    return module


# --- enums ---------------------------------------------------------------------------------

class ReduceOp(enum.IntEnum):
    """Reductions, numbered as torch.distributed.ReduceOp.RedOpType."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7


ReduceOp.RedOpType = ReduceOp  # type: ignore[attr-defined]  # torch spells members ReduceOp.RedOpType.SUM too
# The C++ side's numbering (csrc/distributed/reduce.h); AVG is SUM followed by a division.
_CPP_OP = {ReduceOp.SUM: 0, ReduceOp.AVG: 0, ReduceOp.PRODUCT: 1, ReduceOp.MIN: 2, ReduceOp.MAX: 3,
           ReduceOp.BAND: 4, ReduceOp.BOR: 5, ReduceOp.BXOR: 6}


class Backend(str):
    """Backend names: Backend("GLOO") == "gloo"; unknown names raise ValueError."""

    UNDEFINED = "undefined"
    GLOO = "gloo"
    NCCL = "nccl"
    MPI = "mpi"

    def __new__(cls, name: str) -> Backend:
        if not isinstance(name, str):
            raise TypeError(f"Backend name must be a string, but got {type(name).__name__}")
        value = name.lower()
        if value not in ("gloo", "nccl", "mpi", "undefined"):
            raise ValueError(f"Unknown backend {name!r}; ember.distributed supports 'gloo'")
        return super().__new__(cls, value)


# --- Work ----------------------------------------------------------------------------------

class Work:
    """The handle of one collective or send/recv: wait(), is_completed(), get_future()."""

    def __init__(self, name: str, outputs: list) -> None:
        self.name = name
        self._outputs = outputs
        self._future = Future()
        self.source_rank: int | None = None  # a completed recv's sender

    def wait(self, timeout: timedelta | None = None) -> bool:
        """Blocks until the operation completes and raises its error, if any. The collective's
        own timeout (the group's) always applies; `timeout` bounds only this wait."""
        if timeout is not None and not self._future._done.wait(timeout.total_seconds()):
            raise DistBackendError(f"{self.name}: Work.wait timed out after {timeout.total_seconds():g} s")
        self._future.wait()
        return True

    def is_completed(self) -> bool:
        return self._future.done()

    def is_success(self) -> bool:
        return self._future.done() and self._future._error is None

    def exception(self) -> BaseException | None:
        return self._future._error

    def result(self) -> list:
        """The output tensors (after wait())."""
        self.wait()
        return self._outputs

    def get_future(self) -> Future:
        """A Future completed with the list of output tensors."""
        return self._future


class _Worker:
    """One thread that runs queued jobs in order (Note [collective execution])."""

    def __init__(self, name: str) -> None:
        self._jobs: list = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Callable[[], None]) -> None:
        with self._cond:
            self._jobs.append(job)
            self._cond.notify()

    def stop(self) -> None:
        self.submit(None)

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._jobs)
                job = self._jobs.pop(0)
            if job is None:
                return
            job()


# --- process groups ------------------------------------------------------------------------

class ProcessGroup:
    """A set of ranks with their own Gloo context; made by init_process_group and new_group."""

    def __init__(self, name: str, store: Store, rank: int, ranks: list[int], timeout: timedelta, hostname: str,
                 iface: str) -> None:
        self._ranks = ranks  # global ranks, in group-rank order
        self._rank = rank
        self._timeout = timeout
        # Join through the store first, so that a rank that never comes is named (Gloo's own
        # rendezvous would only time out).
        store.set(f"joined/{rank}", b"1")
        try:
            store.wait([f"joined/{r}" for r in range(len(ranks))], timeout)
        except DistStoreError as e:
            missing = [g for r, g in enumerate(ranks) if not store.check([f"joined/{r}"])]
            raise DistStoreError(f"{name}: timed out after {timeout.total_seconds():g} s waiting for rank(s) "
                                 f"{missing} to join (rank {ranks[rank]} is here)") from e
        try:
            self._ctx = _gloo().Context(store, rank, len(ranks), hostname, iface, timeout)
        except _gloo().GlooError as e:
            raise DistBackendError(f"{name}: rank {ranks[rank]} could not connect to its peers: {e}") from e
        self._collectives = _Worker(f"ember-dist-pg{id(self):x}")
        self._p2p = _Worker(f"ember-dist-p2p{id(self):x}")

    def rank(self) -> int:
        return self._rank

    def size(self) -> int:
        return len(self._ranks)

    def name(self) -> str:
        return "gloo"

    def _fail(self, name: str, e: BaseException) -> BaseException:
        """The error a failed collective raises: it names the collective, the rank and the cause."""
        gloo = _gloo()
        if not isinstance(e, gloo.GlooError) and not str(e).startswith("[enforce fail"):
            return e
        where = f"on rank {self._rank} (of a group of {self.size()})"
        msg = str(e)
        if "Timed out" in msg:
            return DistBackendError(f"{name} timed out after {self._timeout.total_seconds():g} s {where}: a peer "
                                    f"did not take part in time (Gloo: {msg})")
        if "closed" in msg.lower() or "reset" in msg.lower() or "broken pipe" in msg.lower():
            return DistBackendError(f"{name} failed {where}: the connection to a peer was lost (did its process "
                                    f"exit?) (Gloo: {msg})")
        return DistBackendError(f"{name} failed {where}: {msg}")

    def _run(self, name: str, body: Callable[[], None], outputs: list, async_op: bool,
             worker: _Worker | None = None) -> Work | None:
        work = Work(name, outputs)

        def job() -> None:
            try:
                with ember.no_grad():  # collectives write tensors' memory, outside autograd (as PyTorch's)
                    body()
            except BaseException as e:  # noqa: BLE001 - re-raised by whoever waits on the Work
                work._future.set_exception(self._fail(name, e))
                return
            work._future.set_result(outputs)

        worker = worker or self._collectives
        if threading.current_thread() is worker._thread:
            job()  # issued by a callback of an earlier collective's future (Note [collectives from callbacks])
        else:
            worker.submit(job)
        if async_op:
            return work
        work.wait()
        return None

    def _shutdown(self) -> None:
        self._collectives.stop()
        self._p2p.stop()


class _WorldMeta(type):
    @property
    def WORLD(cls) -> ProcessGroup | None:  # noqa: N802 - torch's name
        return _world.default_pg


class GroupMember(metaclass=_WorldMeta):
    """GroupMember.WORLD is the default group; new_group returns NON_GROUP_MEMBER to non-members."""

    NON_GROUP_MEMBER = object()


class group(metaclass=_WorldMeta):  # noqa: N801 - torch's name: torch.distributed.group.WORLD
    pass


class _World:
    def __init__(self) -> None:
        self.default_pg: ProcessGroup | None = None
        self.store: Store | None = None
        self.groups: list[ProcessGroup] = []
        self.world_size = 0
        self.hostname = ""
        self.iface = ""
        self.generation = 0  # init_process_group calls so far: keeps re-inits apart in a reused store
        self.group_count = 0


_world = _World()


def is_initialized() -> bool:
    return _world.default_pg is not None


def _default_pg(name: str) -> ProcessGroup:
    if _world.default_pg is None:
        raise ValueError(f"{name}: the default process group has not been initialized; call "
                         "ember.distributed.init_process_group first")
    return _world.default_pg


def _pg(group: Any, name: str) -> ProcessGroup | None:
    """The group to run on, or None when this rank is not in it (the call then does nothing)."""
    default = _default_pg(name)
    if group is None:
        return default
    if group is GroupMember.NON_GROUP_MEMBER:
        return None
    if not isinstance(group, ProcessGroup) or group not in _world.groups:
        raise ValueError(f"{name}: expected a process group from init_process_group or new_group, but got "
                         f"{group!r} (destroyed, or not a group)")
    return group


def _group_rank(pg: ProcessGroup, rank: Any, name: str, what: str) -> int:
    """The group rank of global rank `rank`, checked."""
    if not isinstance(rank, int) or isinstance(rank, bool):
        raise TypeError(f"{name}: expected {what} to be an int rank, but got {type(rank).__name__}")
    if not 0 <= rank < _world.world_size:
        raise ValueError(f"{name}: expected {what} to be a rank in [0, {_world.world_size}), but got {rank}")
    if rank not in pg._ranks:
        raise ValueError(f"{name}: rank {rank} ({what}) is not part of the group {pg._ranks}")
    return pg._ranks.index(rank)


def _local_address(master_addr: str | None) -> tuple[str, str]:
    """(hostname, iface) for Gloo's TCP device: GLOO_SOCKET_IFNAME if set, else the local address
    that routes to the master (a UDP connect sends nothing), else this host's name."""
    iface = os.environ.get("GLOO_SOCKET_IFNAME", "")
    if iface:
        return "", iface.split(",")[0]
    if master_addr:
        try:
            family = socket.AF_INET6 if ":" in master_addr else socket.AF_INET
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((master_addr, 9))
                return s.getsockname()[0], ""
        except OSError:
            pass
    try:
        return socket.gethostbyname(socket.gethostname()), ""
    except OSError:
        return "127.0.0.1", ""


def _rendezvous(init_method: str, rank: int, world_size: int, timeout: timedelta) -> tuple[Store, int, int, str | None]:
    url = urlparse(init_method)
    query = {k: v[-1] for k, v in parse_qs(url.query).items()}

    def need(value: int, env: str, what: str) -> int:
        if value is not None and value >= 0:
            return value
        if env in query:
            return int(query[env])
        if url.scheme == "env" and env.upper() in os.environ:
            return int(os.environ[env.upper()])
        raise ValueError(f"init_process_group: {init_method} needs {what} (pass {env}= or set {env.upper()})")

    if url.scheme not in ("env", "tcp", "file"):
        raise ValueError(f"init_process_group: unknown init_method {init_method!r}; expected env://, "
                         "tcp://host:port or file:///path")
    rank = need(rank, "rank", "the rank")
    world_size = need(world_size, "world_size", "the world size")
    _check_world(rank, world_size)
    if url.scheme == "file":
        if not url.path or url.netloc:
            raise ValueError(f"init_process_group: expected file:///absolute/path, but got {init_method!r}")
        return FileStore(url.path, world_size), rank, world_size, None
    if url.scheme == "env":
        host = os.environ.get("MASTER_ADDR")
        port = os.environ.get("MASTER_PORT")
        if host is None or port is None:
            raise ValueError("init_process_group: env:// needs the MASTER_ADDR and MASTER_PORT environment variables")
    else:
        host, port = url.hostname, url.port
        if host is None or port is None:
            raise ValueError(f"init_process_group: expected tcp://host:port, but got {init_method!r}")
    store = TCPStore(host, int(port), world_size, is_master=rank == 0, timeout=timeout)
    return store, rank, world_size, host


def _check_world(rank: int, world_size: int) -> None:
    if world_size < 1:
        raise ValueError(f"init_process_group: expected world_size >= 1, but got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"init_process_group: expected rank in [0, {world_size}), but got {rank}")


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: timedelta | None = None, world_size: int = -1, rank: int = -1,
                       store: Store | None = None, group_name: str = "", pg_options: Any = None,
                       device_id: Any = None) -> None:
    """Joins this process to the default group: rendezvous through `store` or `init_method`
    (env:// by default: MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), then a Gloo full mesh."""
    if _world.default_pg is not None:
        raise RuntimeError("init_process_group: trying to initialize the default process group twice")
    backend = Backend(backend or "gloo")
    if backend != Backend.GLOO:
        raise RuntimeError(f"init_process_group: backend {backend!r} is not available in ember.distributed; "
                           "use 'gloo'")
    _gloo()  # names the missing library before any rendezvous
    timeout = default_pg_timeout if timeout is None else timeout
    if not isinstance(timeout, timedelta):
        raise TypeError(f"init_process_group: expected timeout to be a datetime.timedelta, but got "
                        f"{type(timeout).__name__}")
    if store is not None:
        if init_method is not None:
            raise ValueError("init_process_group: pass either init_method or store, not both")
        if rank < 0 or world_size < 1:
            raise ValueError("init_process_group: with a store, rank and world_size must be given")
        _check_world(rank, world_size)
        master = getattr(store, "host", None)
    else:
        store, rank, world_size, master = _rendezvous(init_method or "env://", rank, world_size, timeout)
    _world.hostname, _world.iface = _local_address(master)
    _world.generation += 1
    _world.group_count = 0
    _world.store = store
    _world.world_size = world_size
    pg = _new_pg("init_process_group", list(range(world_size)), rank, timeout)
    _world.default_pg = pg


def _new_pg(name: str, ranks: list[int], rank: int, timeout: timedelta) -> ProcessGroup:
    prefix = f"ember/{_world.generation}/pg{_world.group_count}"
    _world.group_count += 1
    pg = ProcessGroup(name, PrefixStore(prefix, _world.store), rank, ranks, timeout, _world.hostname, _world.iface)
    _world.groups.append(pg)
    return pg


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Destroys `group`, or every group (and the default one) when group is None."""
    if group is None:
        for pg in _world.groups:
            pg._shutdown()
        _world.groups = []
        _world.default_pg = None
        _world.store = None
        return
    if group is GroupMember.NON_GROUP_MEMBER:
        return
    if group not in _world.groups:
        raise ValueError("destroy_process_group: this group is not a live process group")
    if group is _world.default_pg:
        destroy_process_group(None)
        return
    group._shutdown()
    _world.groups.remove(group)


def new_group(ranks: list[int] | None = None, timeout: timedelta | None = None, backend: str | None = None,
              pg_options: Any = None, use_local_synchronization: bool = False) -> Any:
    """A group of `ranks` (all by default). Every rank of the default group must call it, in the same
    order; ranks outside the group get GroupMember.NON_GROUP_MEMBER."""
    default = _default_pg("new_group")
    if backend is not None and Backend(backend) != Backend.GLOO:
        raise RuntimeError(f"new_group: backend {backend!r} is not available in ember.distributed; use 'gloo'")
    ranks = list(range(_world.world_size)) if ranks is None else sorted(ranks)
    for r in ranks:
        if not isinstance(r, int) or not 0 <= r < _world.world_size:
            raise ValueError(f"new_group: expected ranks in [0, {_world.world_size}), but got {r!r}")
    if len(set(ranks)) != len(ranks):
        raise ValueError(f"new_group: ranks must be distinct, but got {ranks}")
    me = default.rank()
    if me not in ranks:
        _world.group_count += 1  # keep the store prefixes of later groups in step with the members
        return GroupMember.NON_GROUP_MEMBER
    return _new_pg("new_group", ranks, ranks.index(me), default._timeout if timeout is None else timeout)


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in `group` (the default group's rank when None); -1 outside the group."""
    pg = _pg(group, "get_rank")
    return -1 if pg is None else pg.rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    pg = _pg(group, "get_world_size")
    return -1 if pg is None else pg.size()


def get_backend(group: ProcessGroup | None = None) -> str:
    _pg(group, "get_backend")
    return Backend.GLOO


def get_process_group_ranks(group: ProcessGroup) -> list[int]:
    pg = _pg(group, "get_process_group_ranks")
    return [] if pg is None else list(pg._ranks)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    pg = _pg(group, "get_global_rank")
    if pg is None or not 0 <= group_rank < pg.size():
        raise ValueError(f"get_global_rank: group rank {group_rank} is not in the group")
    return pg._ranks[group_rank]


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    pg = _pg(group, "get_group_rank")
    if pg is None:
        raise ValueError("get_group_rank: this process is not in the group")
    return _group_rank(pg, global_rank, "get_group_rank", "global_rank")


# --- tensor checks and buffers (Note [tensor buffers]) -------------------------------------

def _dtype_name(t: ember.Tensor) -> str:
    return str(t.dtype).rsplit(".", 1)[-1]


def _check_tensor(name: str, what: str, t: Any) -> ember.Tensor:
    if not isinstance(t, ember.Tensor):
        raise TypeError(f"{name}: expected {what} to be an ember.Tensor, but got {type(t).__name__}")
    if t.device.type != "cpu":
        raise ValueError(f"{name}: the gloo backend works on CPU tensors, but {what} is on {t.device}")
    return t


def _check_list(name: str, what: str, tensors: Any, n: int) -> list:
    if not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{name}: expected {what} to be a list of tensors, but got {type(tensors).__name__}")
    if len(tensors) != n:
        raise ValueError(f"{name}: expected {what} to hold {n} tensors (one per rank), but got {len(tensors)}")
    for i, t in enumerate(tensors):
        _check_tensor(name, f"{what}[{i}]", t)
    return list(tensors)


def _check_like(name: str, what: str, t: ember.Tensor, ref: ember.Tensor, numel: int | None = None) -> None:
    if t.dtype != ref.dtype:
        raise TypeError(f"{name}: expected {what} to have dtype {ref.dtype} like the input, but got {t.dtype}")
    if numel is not None and t.numel() != numel:
        raise ValueError(f"{name}: expected {what} to have {numel} elements, but got {t.numel()}")


def _check_op(name: str, op: Any, t: ember.Tensor) -> ReduceOp:
    try:
        op = ReduceOp(op)
    except ValueError:
        raise ValueError(f"{name}: expected a ReduceOp, but got {op!r}") from None
    if op in (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR) and (t.is_floating_point() or t.is_complex()):
        raise ValueError(f"{name}: ReduceOp.{op.name} needs an integer or bool tensor, but got {_dtype_name(t)}")
    if op in (ReduceOp.MIN, ReduceOp.MAX) and t.is_complex():
        raise ValueError(f"{name}: ReduceOp.{op.name} is not defined for complex tensors, but got {_dtype_name(t)}")
    if op == ReduceOp.AVG and not (t.is_floating_point() or t.is_complex()):
        raise ValueError(f"{name}: ReduceOp.AVG needs a floating-point or complex tensor, but got {_dtype_name(t)}")
    return op


def _writable(tensors: list[ember.Tensor]) -> None:
    """The tensors a collective writes, checked as an in-place op checks its target (Note [tensor
    buffers]): RuntimeError for read-only memory, before any rank communicates."""
    for t in tensors:
        ember._C._check_writable(t)


def _contig(t: ember.Tensor) -> ember.Tensor:
    return t if t.is_contiguous() else t.contiguous()


def _write_back(dst: ember.Tensor, buf: ember.Tensor) -> None:
    if buf is not dst:
        dst.copy_(buf.view(dst.shape))


def _nbytes(t: ember.Tensor) -> int:
    return t.numel() * t.element_size()


def _reduce_in_place(pg: ProcessGroup, buf: ember.Tensor, op: ReduceOp) -> None:
    """all-reduce of a contiguous buffer, AVG included."""
    if buf.numel():
        pg._ctx.allreduce(buf.data_ptr(), buf.numel(), buf.element_size(), _dtype_name(buf), _CPP_OP[op], pg._timeout)
    if op == ReduceOp.AVG:
        _divide(buf, pg.size())


def _divide(buf: ember.Tensor, n: int) -> None:
    if buf.dtype in (ember.float8_e4m3fn, ember.float8_e5m2, ember.float8_e4m3fnuz, ember.float8_e5m2fnuz):
        # no float8 arithmetic: divide in float32
        buf.copy_((buf.to(ember.float32) / n).to(buf.dtype))
    elif buf.dtype == ember.complex32:  # nor complex32 arithmetic: divide in complex64
        buf.copy_((buf.to(ember.complex64) / n).to(buf.dtype))
    else:
        buf.div_(n)


# --- collectives ---------------------------------------------------------------------------

def all_reduce(tensor: ember.Tensor, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """Reduces `tensor` across the group, in place on every rank."""
    pg = _pg(group, "all_reduce")
    _check_tensor("all_reduce", "tensor", tensor)
    op = _check_op("all_reduce", op, tensor)
    if pg is None:
        return None
    _writable([tensor])

    def body() -> None:
        buf = _contig(tensor)
        _reduce_in_place(pg, buf, op)
        _write_back(tensor, buf)

    return pg._run("all_reduce", body, [tensor], async_op)


def broadcast(tensor: ember.Tensor, src: int, group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Copies src's `tensor` into `tensor` on every rank."""
    pg = _pg(group, "broadcast")
    _check_tensor("broadcast", "tensor", tensor)
    if pg is None:
        return None
    root = _group_rank(pg, src, "broadcast", "src")
    _writable([tensor])

    def body() -> None:
        buf = _contig(tensor)
        if buf.numel():
            pg._ctx.broadcast(buf.data_ptr(), _nbytes(buf), root, pg._timeout)
        _write_back(tensor, buf)

    return pg._run("broadcast", body, [tensor], async_op)


def reduce(tensor: ember.Tensor, dst: int, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
           async_op: bool = False) -> Work | None:
    """Reduces `tensor` of every rank into dst's `tensor`; the other ranks' tensors are left as they were."""
    pg = _pg(group, "reduce")
    _check_tensor("reduce", "tensor", tensor)
    op = _check_op("reduce", op, tensor)
    if pg is None:
        return None
    root = _group_rank(pg, dst, "reduce", "dst")
    _writable([tensor] if pg.rank() == root else [])

    def body() -> None:
        # Gloo uses the non-root buffers as scratch space: give it copies there.
        buf = _contig(tensor) if pg.rank() == root else tensor.contiguous().clone()
        if buf.numel():
            pg._ctx.reduce(buf.data_ptr(), buf.numel(), buf.element_size(), _dtype_name(buf), _CPP_OP[op], root,
                           pg._timeout)
        if pg.rank() == root:
            if op == ReduceOp.AVG:
                _divide(buf, pg.size())
            _write_back(tensor, buf)

    return pg._run("reduce", body, [tensor], async_op)


def _allgatherv(pg: ProcessGroup, src: ember.Tensor, out: ember.Tensor, counts: list[int]) -> None:
    """Concatenates every rank's `src` (counts[r] elements from rank r) into the flat `out`."""
    size = src.element_size()
    if sum(counts):
        if len(set(counts)) == 1:
            pg._ctx.allgather(src.data_ptr(), out.data_ptr(), counts[0] * size, pg._timeout)
        else:
            pg._ctx.allgatherv(src.data_ptr(), out.data_ptr(), [c * size for c in counts], pg._timeout)


def all_gather(tensor_list: list[ember.Tensor], tensor: ember.Tensor, group: ProcessGroup | None = None,
               async_op: bool = False) -> Work | None:
    """tensor_list[r] receives rank r's `tensor` (sizes may differ between ranks; tensor_list
    gives them)."""
    pg = _pg(group, "all_gather")
    _check_tensor("all_gather", "tensor", tensor)
    if pg is None:
        return None
    outs = _check_list("all_gather", "tensor_list", tensor_list, pg.size())
    for i, t in enumerate(outs):
        _check_like("all_gather", f"tensor_list[{i}]", t, tensor, tensor.numel() if i == pg.rank() else None)
    _writable(outs)

    def body() -> None:
        counts = [t.numel() for t in outs]
        flat = ember.empty(sum(counts), dtype=tensor.dtype)
        _allgatherv(pg, _contig(tensor), flat, counts)
        at = 0
        for t, n in zip(outs, counts, strict=True):
            t.copy_(flat[at:at + n].view(t.shape))
            at += n

    return pg._run("all_gather", body, outs, async_op)


def all_gather_into_tensor(output_tensor: ember.Tensor, input_tensor: ember.Tensor,
                           group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """output_tensor (world_size x input's elements, e.g. stacked or concatenated along dim 0)
    receives every rank's input_tensor in rank order."""
    pg = _pg(group, "all_gather_into_tensor")
    _check_tensor("all_gather_into_tensor", "input_tensor", input_tensor)
    _check_tensor("all_gather_into_tensor", "output_tensor", output_tensor)
    if pg is None:
        return None
    _check_like("all_gather_into_tensor", "output_tensor", output_tensor, input_tensor,
                input_tensor.numel() * pg.size())
    _writable([output_tensor])

    def body() -> None:
        out = _contig(output_tensor)
        _allgatherv(pg, _contig(input_tensor), out, [input_tensor.numel()] * pg.size())
        _write_back(output_tensor, out)

    return pg._run("all_gather_into_tensor", body, [output_tensor], async_op)


def gather(tensor: ember.Tensor, gather_list: list[ember.Tensor] | None = None, dst: int = 0,
           group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """gather_list[r] on dst receives rank r's `tensor`."""
    pg = _pg(group, "gather")
    _check_tensor("gather", "tensor", tensor)
    if pg is None:
        return None
    root = _group_rank(pg, dst, "gather", "dst")
    if pg.rank() == root:
        outs = _check_list("gather", "gather_list", gather_list, pg.size())
        for i, t in enumerate(outs):
            _check_like("gather", f"gather_list[{i}]", t, tensor, tensor.numel())
    else:
        if gather_list:
            raise ValueError("gather: gather_list must be given on the destination rank only")
        outs = []
    _writable(outs)

    def body() -> None:
        n = tensor.numel()
        flat = ember.empty(n * pg.size() if outs else 0, dtype=tensor.dtype)
        if n:
            pg._ctx.gather(_contig(tensor).data_ptr(), flat.data_ptr(), _nbytes(tensor), root, pg._timeout)
        for r, t in enumerate(outs):
            t.copy_(flat[r * n:(r + 1) * n].view(t.shape))

    return pg._run("gather", body, outs, async_op)


def scatter(tensor: ember.Tensor, scatter_list: list[ember.Tensor] | None = None, src: int = 0,
            group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """Rank r's `tensor` receives src's scatter_list[r]."""
    pg = _pg(group, "scatter")
    _check_tensor("scatter", "tensor", tensor)
    if pg is None:
        return None
    root = _group_rank(pg, src, "scatter", "src")
    if pg.rank() == root:
        ins = _check_list("scatter", "scatter_list", scatter_list, pg.size())
        for i, t in enumerate(ins):
            _check_like("scatter", f"scatter_list[{i}]", t, tensor, tensor.numel())
    else:
        if scatter_list:
            raise ValueError("scatter: scatter_list must be given on the source rank only")
        ins = []
    _writable([tensor])

    def body() -> None:
        bufs = [_contig(t) for t in ins]
        out = _contig(tensor)
        if tensor.numel():
            pg._ctx.scatter([b.data_ptr() for b in bufs], out.data_ptr(), _nbytes(tensor), root, pg._timeout)
        _write_back(tensor, out)

    return pg._run("scatter", body, [tensor], async_op)


def _reduce_scatter_flat(pg: ProcessGroup, flat: ember.Tensor, counts: list[int], op: ReduceOp,
                         out: ember.Tensor) -> None:
    # Gloo 0.5 has no reduce-scatter over unbound buffers: all-reduce the concatenation, keep ours.
    _reduce_in_place(pg, flat, op)
    at = sum(counts[:pg.rank()])
    out.copy_(flat[at:at + counts[pg.rank()]].view(out.shape))


def reduce_scatter(output: ember.Tensor, input_list: list[ember.Tensor], op: ReduceOp = ReduceOp.SUM,
                   group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """output on rank r receives the reduction over ranks of input_list[r]."""
    pg = _pg(group, "reduce_scatter")
    _check_tensor("reduce_scatter", "output", output)
    op = _check_op("reduce_scatter", op, output)
    if pg is None:
        return None
    ins = _check_list("reduce_scatter", "input_list", input_list, pg.size())
    for i, t in enumerate(ins):
        _check_like("reduce_scatter", f"input_list[{i}]", t, output, output.numel() if i == pg.rank() else None)
    _writable([output])

    def body() -> None:
        flat = ember.cat([t.reshape(-1) for t in ins]) if ins else ember.empty(0, dtype=output.dtype)
        _reduce_scatter_flat(pg, flat, [t.numel() for t in ins], op, output)

    return pg._run("reduce_scatter", body, [output], async_op)


def reduce_scatter_tensor(output: ember.Tensor, input: ember.Tensor, op: ReduceOp = ReduceOp.SUM,  # noqa: A002
                          group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """input holds world_size blocks of output's size; output on rank r gets the reduction of block r."""
    pg = _pg(group, "reduce_scatter_tensor")
    _check_tensor("reduce_scatter_tensor", "output", output)
    _check_tensor("reduce_scatter_tensor", "input", input)
    op = _check_op("reduce_scatter_tensor", op, output)
    if pg is None:
        return None
    _check_like("reduce_scatter_tensor", "input", input, output, output.numel() * pg.size())
    _writable([output])

    def body() -> None:
        flat = input.reshape(-1).clone()
        _reduce_scatter_flat(pg, flat, [output.numel()] * pg.size(), op, output)

    return pg._run("reduce_scatter_tensor", body, [output], async_op)


def _splits(name: str, what: str, t: ember.Tensor, sizes: list[int] | None, n: int) -> list[int]:
    """Rows of dim 0 going to / coming from each rank."""
    rows = t.shape[0] if t.dim() else 1
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise ValueError(f"{name}: {what} has {rows} rows along dim 0, which do not split evenly over {n} "
                             "ranks; pass split sizes")
        return [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or any(s < 0 for s in sizes) or sum(sizes) != rows:
        raise ValueError(f"{name}: expected {what}_split_sizes to be {n} non-negative sizes summing to {rows} "
                         f"(dim 0 of {what}), but got {sizes}")
    return sizes


def all_to_all_single(output: ember.Tensor, input: ember.Tensor, output_split_sizes: list[int] | None = None,  # noqa: A002
                      input_split_sizes: list[int] | None = None, group: ProcessGroup | None = None,
                      async_op: bool = False) -> Work | None:
    """Rank r sends rows input_split_sizes[j] of input (dim 0) to rank j and receives
    output_split_sizes[j] rows from it into output, in rank order; splits may be uneven."""
    name = "all_to_all_single"
    pg = _pg(group, name)
    _check_tensor(name, "input", input)
    _check_tensor(name, "output", output)
    if pg is None:
        return None
    _check_like(name, "output", output, input)
    in_rows = _splits(name, "input", input, input_split_sizes, pg.size())
    out_rows = _splits(name, "output", output, output_split_sizes, pg.size())
    in_row = input.numel() // max(input.shape[0] if input.dim() else 1, 1)
    out_row = output.numel() // max(output.shape[0] if output.dim() else 1, 1)
    if input.dim() and output.dim() and tuple(input.shape[1:]) != tuple(output.shape[1:]):
        raise ValueError(f"{name}: expected input and output to have the same shape after dim 0, but got "
                         f"{tuple(input.shape)} and {tuple(output.shape)}")
    me = pg.rank()
    if in_rows[me] * in_row != out_rows[me] * out_row:
        raise ValueError(f"{name}: this rank sends itself {in_rows[me] * in_row} elements but receives "
                         f"{out_rows[me] * out_row} from itself; the split sizes must agree")
    _writable([output])

    def body() -> None:
        src, out = _contig(input), _contig(output)
        size = input.element_size()
        pg._ctx.alltoallv(src.data_ptr(), [r * in_row * size for r in in_rows], out.data_ptr(),
                          [r * out_row * size for r in out_rows], pg._timeout)
        _write_back(output, out)

    return pg._run(name, body, [output], async_op)


def all_to_all(output_tensor_list: list[ember.Tensor], input_tensor_list: list[ember.Tensor],
               group: ProcessGroup | None = None, async_op: bool = False) -> Work | None:
    """output_tensor_list[j] receives rank j's input_tensor_list[r] (r is this rank); sizes may differ."""
    name = "all_to_all"
    pg = _pg(group, name)
    if pg is None:
        return None
    ins = _check_list(name, "input_tensor_list", input_tensor_list, pg.size())
    outs = _check_list(name, "output_tensor_list", output_tensor_list, pg.size())
    for i, t in enumerate(ins + outs):
        _check_like(name, "input_tensor_list" if i < len(ins) else "output_tensor_list", t, ins[0])
    _writable(outs)

    def body() -> None:
        size = ins[0].element_size()
        src = ember.cat([t.reshape(-1) for t in ins])
        out = ember.empty(sum(t.numel() for t in outs), dtype=ins[0].dtype)
        pg._ctx.alltoallv(src.data_ptr(), [t.numel() * size for t in ins], out.data_ptr(),
                          [t.numel() * size for t in outs], pg._timeout)
        at = 0
        for t in outs:
            t.copy_(out[at:at + t.numel()].view(t.shape))
            at += t.numel()

    return pg._run(name, body, outs, async_op)


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Returns once every rank of the group has called barrier."""
    pg = _pg(group, "barrier")
    if pg is None:
        return None
    return pg._run("barrier", lambda: pg._ctx.barrier(pg._timeout), [], async_op)


# --- point to point ------------------------------------------------------------------------

_MAX_USER_TAG = 1 << 32
_MONITORED_BARRIER_TAG = 1 << 40  # above every user tag


def _p2p(name: str, tensor: ember.Tensor, peer: int | None, group: Any, tag: int, is_send: bool,
         internal_tag: int | None = None, timeout: timedelta | None = None) -> Work | None:
    pg = _pg(group, name)
    _check_tensor(name, "tensor", tensor)
    if pg is None:
        return None
    if internal_tag is None and (not isinstance(tag, int) or not 0 <= tag < _MAX_USER_TAG):
        raise ValueError(f"{name}: expected tag to be an int in [0, 2**32), but got {tag!r}")
    if peer is None:
        gpeer = -1  # recv from any source
    else:
        gpeer = _group_rank(pg, peer, name, "dst" if is_send else "src")
        if gpeer == pg.rank():
            raise ValueError(f"{name}: a rank cannot {'send to' if is_send else 'receive from'} itself (rank {peer})")
    _writable([] if is_send else [tensor])
    buf = _contig(tensor)
    slot = internal_tag if internal_tag is not None else tag
    post = pg._ctx.send if is_send else pg._ctx.recv
    handle = post(buf.data_ptr(), _nbytes(buf), gpeer, slot)
    work = Work(name, [tensor])
    wait_for = timeout or pg._timeout

    def job() -> None:  # on the group's p2p thread (Note [collective execution])
        try:
            peer_rank = handle.wait(wait_for)
            if not is_send:
                with ember.no_grad():
                    _write_back(tensor, buf)
            work.source_rank = pg._ranks[peer_rank] if peer_rank >= 0 else peer
        except BaseException as e:  # noqa: BLE001 - raised again by Work.wait
            work._future.set_exception(pg._fail(name, e))
            return
        work._future.set_result([tensor])

    pg._p2p.submit(job)
    return work


def isend(tensor: ember.Tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> Work | None:
    """Starts sending `tensor` to rank dst; the Work completes once it was delivered."""
    return _p2p("isend", tensor, dst, group, tag, True)


def irecv(tensor: ember.Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0) -> Work | None:
    """Starts receiving into `tensor` from rank src (any rank when None)."""
    return _p2p("irecv", tensor, src, group, tag, False)


def send(tensor: ember.Tensor, dst: int, group: ProcessGroup | None = None, tag: int = 0) -> None:
    work = _p2p("send", tensor, dst, group, tag, True)
    if work is not None:
        work.wait()


def recv(tensor: ember.Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0) -> int:
    """Receives into `tensor`; returns the sender's rank (-1 outside the group)."""
    work = _p2p("recv", tensor, src, group, tag, False)
    if work is None:
        return -1
    work.wait()
    return work.source_rank


class P2POp:
    """One send or receive of batch_isend_irecv: P2POp(ember.distributed.isend, tensor, peer)."""

    def __init__(self, op: Callable, tensor: ember.Tensor, peer: int, group: ProcessGroup | None = None,
                 tag: int = 0) -> None:
        if op not in (isend, irecv):
            raise ValueError("P2POp: op must be ember.distributed.isend or ember.distributed.irecv")
        self.op, self.tensor, self.peer, self.group, self.tag = op, tensor, peer, group, tag


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Posts every send and receive at once (so their order between ranks does not matter)."""
    if not isinstance(p2p_op_list, (list, tuple)) or not p2p_op_list:
        raise ValueError("batch_isend_irecv: expected a non-empty list of P2POp")
    for p in p2p_op_list:
        if not isinstance(p, P2POp):
            raise TypeError(f"batch_isend_irecv: expected P2POp items, but got {type(p).__name__}")
    return [p.op(p.tensor, p.peer, p.group, p.tag) for p in p2p_op_list]


def monitored_barrier(group: ProcessGroup | None = None, timeout: timedelta | None = None,
                      wait_all_ranks: bool = False) -> None:
    """A barrier that names the ranks that did not arrive: every rank reports to the group's rank 0,
    which raises naming the first missing rank (all of them with wait_all_ranks), then releases the others."""
    pg = _pg(group, "monitored_barrier")
    if pg is None:
        return
    timeout = pg._timeout if timeout is None else timeout
    token = ember.zeros(1, dtype=ember.uint8)
    tag = _MONITORED_BARRIER_TAG
    root = pg._ranks[0]
    if pg.rank() != 0:
        _p2p("monitored_barrier", token, root, pg, 0, True, tag, timeout).wait()
        try:
            _p2p("monitored_barrier", token, root, pg, 0, False, tag, timeout).wait()
        except DistBackendError as e:
            raise DistBackendError(f"monitored_barrier: rank {pg._ranks[0]} did not release rank "
                                   f"{pg._ranks[pg.rank()]} ({e})") from e
        return
    arrivals = [(r, _p2p("monitored_barrier", ember.zeros(1, dtype=ember.uint8), r, pg, 0, False, tag, timeout))
                for r in pg._ranks[1:]]
    missing = []
    for r, work in arrivals:
        try:
            work.wait()
        except DistBackendError:
            missing.append(r)
            if not wait_all_ranks:
                break
    if missing:
        which = f"Ranks {missing}" if wait_all_ranks else f"Rank {missing[0]}"
        raise DistBackendError(f"monitored_barrier: {which} failed to pass monitored_barrier in "
                               f"{timeout.total_seconds():g} s")
    for r in pg._ranks[1:]:
        _p2p("monitored_barrier", token, r, pg, 0, True, tag, timeout).wait()


# --- objects (through the weights-only checkpoint path, never plain pickle) ----------------

def _to_bytes_tensor(obj: Any) -> ember.Tensor:
    buf = io.BytesIO()
    ember.save(obj, buf)
    return ember.from_numpy(np.frombuffer(buf.getvalue(), dtype=np.uint8).copy())


def _from_bytes_tensor(t: ember.Tensor) -> Any:
    return ember.load(io.BytesIO(t.numpy().tobytes()), weights_only=True)


def broadcast_object_list(object_list: list[Any], src: int = 0, group: ProcessGroup | None = None,
                          device: Any = None) -> None:
    """Replaces object_list's items on every rank with src's (objects pass ember.load's
    weights_only allowlist)."""
    pg = _pg(group, "broadcast_object_list")
    if not isinstance(object_list, list):
        raise TypeError(f"broadcast_object_list: expected a list, but got {type(object_list).__name__}")
    if pg is None:
        return
    me_src = pg._ranks[pg.rank()] == src
    _group_rank(pg, src, "broadcast_object_list", "src")
    n = len(object_list)
    if me_src:
        parts = [_to_bytes_tensor(o) for o in object_list]
        sizes = ember.tensor([p.numel() for p in parts], dtype=ember.int64)
    else:
        sizes = ember.zeros(n, dtype=ember.int64)
    broadcast(sizes, src, group)
    data = ember.cat(parts) if me_src and n else ember.empty(int(sizes.sum().item()), dtype=ember.uint8)
    broadcast(data, src, group)
    if not me_src:
        at = 0
        for i, size in enumerate(sizes.tolist()):
            object_list[i] = _from_bytes_tensor(data[at:at + size])
            at += size


def all_gather_object(object_list: list[Any], obj: Any, group: ProcessGroup | None = None) -> None:
    """object_list[r] receives rank r's obj (objects pass ember.load's weights_only allowlist)."""
    pg = _pg(group, "all_gather_object")
    if pg is None:
        return
    if not isinstance(object_list, list) or len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: expected object_list to be a list of {pg.size()} items (one per "
                         f"rank), but got {len(object_list) if isinstance(object_list, list) else type(object_list).__name__}")
    mine = _to_bytes_tensor(obj)
    sizes = ember.zeros(pg.size(), dtype=ember.int64)
    all_gather_into_tensor(sizes, ember.tensor([mine.numel()], dtype=ember.int64), group)
    counts = sizes.tolist()
    flat = ember.empty(sum(counts), dtype=ember.uint8)
    all_gather([flat[sum(counts[:r]):sum(counts[:r + 1])] for r in range(pg.size())], mine, group)
    at = 0
    for r, size in enumerate(counts):
        object_list[r] = _from_bytes_tensor(flat[at:at + size])
        at += size
