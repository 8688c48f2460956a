"""Memory other processes can map: what Tensor.share_memory_ moves a storage into, and what
ember.multiprocessing sends to another process so that both use the same bytes.

A shared block is a file in memory (a memfd, or a file in /dev/shm), mapped with MAP_SHARED and
wrapped as a NumPy array, which ember._C.from_numpy makes a native storage's owner. Moving a
storage there is a copy and a swap: the block's storage takes the storage's bytes, then
_C._storage_swap_memory exchanges the two buffers, so the storage and every view of it use the
block from then on, in place.

The sharing strategy (PyTorch's, per process) decides what names a block:
- "file_descriptor" (the default): an anonymous memfd; ember.multiprocessing passes its file
  descriptor to the other process (over a Unix socket, or to a spawned child at its start). Each
  block keeps its descriptor open as long as its storage lives, so that it can be sent again: a
  process holding many shared storages holds as many descriptors (see `ulimit -n`).
- "file_system": a named file in /dev/shm (ember_<pid>_<n>_<random>); the other process opens it by
  name, so no descriptor stays open. The process that created the file unlinks it when its
  storage is freed, and at exit (also in a multiprocessing child) the files it still holds; so
  the sender must keep the tensor alive until the receiver has it (PyTorch's file_system has a
  daemon, torch_shm_manager, that counts users instead). A process killed by a signal leaves its
  files in /dev/shm.

Differences from PyTorch, on purpose:
- the memory a storage had before the move stays allocated until the storage is freed: a NumPy
  array or DLPack capsule taken from the tensor earlier still points at it, and PyTorch frees it
  under them;
- the block is reserved (posix_fallocate) before the copy, so a full /dev/shm is a RuntimeError
  instead of a SIGBUS in the middle of the copy; a received memfd is sealed against shrinking, and
  a received file shorter than announced is refused, for the same reason.
"""

from __future__ import annotations

import ctypes
import fcntl
import itertools
import mmap
import multiprocessing.util
import os
import secrets
import threading
import weakref

import numpy as np

from . import _C

_STRATEGIES = ("file_descriptor", "file_system")
_strategy = "file_descriptor"
_SHM_DIR = "/dev/shm"
_PREFIX = "ember_"


def get_all_sharing_strategies() -> set[str]:
    """The sharing strategies this system supports (torch.multiprocessing.get_all_sharing_strategies)."""
    return set(_STRATEGIES)


def get_sharing_strategy() -> str:
    """The current strategy for sharing CPU tensors: "file_descriptor" or "file_system"."""
    return _strategy


def set_sharing_strategy(new_strategy: str) -> None:
    """Set the strategy for sharing CPU tensors: one of get_all_sharing_strategies(). (PyTorch
    asserts; Ember raises ValueError, which `python -O` does not strip.)"""
    global _strategy
    if new_strategy not in _STRATEGIES:
        raise ValueError(f"unknown sharing strategy {new_strategy!r}: expected one of "
                         f"{', '.join(repr(s) for s in _STRATEGIES)}")
    _strategy = new_strategy


# ---- blocks ----------------------------------------------------------------------------------------


class _Block:
    """One shared mapping, the buffer of a native storage. `fd` is an open descriptor of its file
    (always for a memfd; opened on demand for a named file), `name` the file's name in /dev/shm or
    None, `owner` the pid that unlinks that file, `previous` the storage's memory before the move."""

    __slots__ = ("fd", "name", "nbytes", "owner", "previous")

    def __init__(self, fd: int | None, name: str | None, nbytes: int, owner: int | None) -> None:
        self.fd, self.name, self.nbytes, self.owner, self.previous = fd, name, nbytes, owner, None


_lock = threading.Lock()  # a Queue's feeder thread shares tensors beside the main thread
_BLOCKS: dict[int, _Block] = {}  # mapping address -> its block, while the mapping lives
# the array over each file mapped here, by the file's identity, so a storage received twice is
# mapped once (the two tensors then share one address, and one UntypedStorage object)
_MAPPED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
_OWN_FILES: set[str] = set()  # /dev/shm names this process created and has not unlinked
_exit_hook_pid: int | None = None
_counter = itertools.count()


def _after_fork_in_child() -> None:
    # The parent's files stay the parent's to unlink, and a lock another thread held at the fork
    # would never be released here.
    global _lock
    _lock = threading.Lock()
    _OWN_FILES.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _path(name: str) -> str:
    return os.path.join(_SHM_DIR, name)


def _unlink(name: str) -> None:
    _OWN_FILES.discard(name)
    try:
        os.unlink(_path(name))
    except FileNotFoundError:
        pass


def _unlink_own_files() -> None:
    for name in list(_OWN_FILES):
        _unlink(name)


def _release(address: int, block: _Block) -> None:
    """The mapping's array is gone (its storage was freed): forget the block, close its descriptor
    and unlink its file if this process made it."""
    if _BLOCKS.get(address) is block:
        del _BLOCKS[address]
    if block.fd is not None:
        try:
            os.close(block.fd)
        except OSError:
            pass
    if block.name is not None and block.owner == os.getpid():
        _unlink(block.name)
    block.previous = None
    _libc.munmap(address, block.nbytes)


# mmap(2) through libc: Python's mmap.mmap keeps a duplicate of the descriptor open for as long as
# the mapping lives, which would cost the file_system strategy the descriptors it exists to save.
_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


def _map(fd: int, nbytes: int, block: _Block, identity: tuple) -> np.ndarray:
    """A writable uint8 array over the first nbytes of the file, tracked as `block`; the array's
    end unmaps it (the array is the storage's owner, so nothing else uses the memory then)."""
    address = _libc.mmap(None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
    if address == _MAP_FAILED:
        err = ctypes.get_errno()
        raise RuntimeError(f"unable to map {nbytes} bytes of shared memory: {os.strerror(err)} ({err})")
    array = np.frombuffer((ctypes.c_uint8 * nbytes).from_address(address), dtype=np.uint8)
    _BLOCKS[address] = block
    _MAPPED[identity] = array
    finalizer = weakref.finalize(array, _release, address, block)
    finalizer.atexit = False  # at exit the descriptors close anyway; the files go in _unlink_own_files
    return array


def _reserve(fd: int, nbytes: int) -> None:
    os.ftruncate(fd, nbytes)
    try:
        os.posix_fallocate(fd, 0, nbytes)
    except OSError as e:
        raise RuntimeError(f"unable to allocate {nbytes} bytes of shared memory: {e.strerror} (is {_SHM_DIR} full? "
                           f"a container may need a larger --shm-size)") from None


def _open_new_file(name: str) -> int:
    return os.open(_path(name), os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)


def _new_name() -> str:
    return f"{_PREFIX}{os.getpid()}_{next(_counter)}_{secrets.token_hex(4)}"


def _new_fd_block(nbytes: int) -> np.ndarray:
    """A new anonymous block: a memfd sealed at its size, else a /dev/shm file unlinked at once."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("ember-shared", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        sealed = True
    else:
        name = _new_name()
        fd = _open_new_file(name)
        os.unlink(_path(name))
        sealed = False
    try:
        _reserve(fd, nbytes)
        if sealed:  # no process can shrink it under another's mapping (a SIGBUS there)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        info = os.fstat(fd)
        return _map(fd, nbytes, _Block(fd, None, nbytes, None), ("fd", info.st_dev, info.st_ino))
    except BaseException:
        os.close(fd)
        raise


def _new_file_block(nbytes: int) -> np.ndarray:
    """A new named block in /dev/shm, which this process unlinks (see the module docstring)."""
    global _exit_hook_pid
    if _exit_hook_pid != os.getpid():
        # multiprocessing runs these at exit in the main process and in its children alike (a
        # child ends by os._exit, which skips atexit); a forked child starts with none.
        multiprocessing.util.Finalize(None, _unlink_own_files, exitpriority=0)
        _exit_hook_pid = os.getpid()
    name = _new_name()
    fd = _open_new_file(name)
    _OWN_FILES.add(name)
    try:
        _reserve(fd, nbytes)
        return _map(fd, nbytes, _Block(None, name, nbytes, os.getpid()), ("file", name))
    except BaseException:
        _unlink(name)
        raise
    finally:
        os.close(fd)


# ---- moving a storage -----------------------------------------------------------------------------


def _storage_bytes(tensor: _C.Tensor) -> _C.Tensor:
    return _C._reinterpret(tensor.detach(), _C.uint8, [_C._storage_nbytes(tensor)], [1], 0)


def block_of(tensor: _C.Tensor) -> _Block | None:
    """The shared block that is tensor's storage's buffer, if any."""
    if tensor.device.type != "cpu" or _C._storage_nbytes(tensor) == 0:
        return None
    block = _BLOCKS.get(_storage_bytes(tensor).data_ptr())
    return block if block is not None and block.nbytes == _C._storage_nbytes(tensor) else None


def is_shared(tensor: _C.Tensor) -> bool:
    # As PyTorch: a CUDA storage counts as shared (other processes reach it through CUDA IPC).
    return tensor.device.type == "cuda" or _C._storage_is_shared(tensor)


def _check_movable(tensor: _C.Tensor, raw: _C.Tensor) -> None:
    if not raw.numpy().flags.writeable:
        # The swap would hand the read-only flag to the old buffer and make the tensor writable.
        raise RuntimeError("[share_memory_] expected a writable tensor, but this one shares the memory of a "
                           "read-only NumPy array (from_numpy); copy it first (tensor.clone()) or pass a "
                           "writable array")


def share(tensor: _C.Tensor, strategy: str | None = None) -> bool:
    """Move tensor's whole storage into a shared block of the strategy's kind (the current one by
    default), in place; True when it moved (its data_ptr changed). A storage already in a block
    stays, except a memfd under "file_system", which needs a name (as PyTorch, it moves again)."""
    device = tensor.device.type
    if device == "cuda":
        return False  # as PyTorch: CUDA memory is shared through CUDA IPC, not moved
    if device != "cpu":
        raise NotImplementedError(f"share_memory_ is not implemented for {device} tensors")
    strategy = strategy or _strategy
    nbytes = _C._storage_nbytes(tensor)
    with _lock:
        if nbytes == 0:  # nothing to map; the flag alone says shared
            _C._storage_set_shared(tensor, True)
            return False
        block = block_of(tensor)
        if block is not None and (block.name is not None or strategy == "file_descriptor"):
            return False
        raw = _storage_bytes(tensor)
        _check_movable(tensor, raw)
        array = _new_file_block(nbytes) if strategy == "file_system" else _new_fd_block(nbytes)
        fresh = _C.from_numpy(array)
        fresh.copy_(raw)
        _C._storage_set_shared(fresh, True)
        _C._storage_swap_memory(tensor, fresh)
        # `fresh` now owns the old buffer: kept while the block lives (see the module docstring)
        _BLOCKS[array.ctypes.data].previous = fresh
        return True


def handle(tensor: _C.Tensor, strategy: str | None = None) -> tuple:
    """What another process needs to map tensor's storage, which share() has moved: ("empty",),
    ("fd", descriptor, nbytes) or ("file", name, nbytes). The descriptor stays this process's."""
    if _C._storage_nbytes(tensor) == 0:
        return ("empty",)
    block = block_of(tensor)
    if (strategy or _strategy) == "file_system":
        return ("file", block.name, block.nbytes)
    with _lock:
        if block.fd is None:  # a named block sent as a descriptor: open it once, keep it with the block
            block.fd = os.open(_path(block.name), os.O_RDWR | os.O_CLOEXEC)
    return ("fd", block.fd, block.nbytes)


def attach_fd(fd: int, nbytes: int) -> np.ndarray:
    """The array over a block received as a descriptor, which this process now owns (it is kept
    with the block, or closed when the block is already mapped here)."""
    try:
        info = os.fstat(fd)
        identity = ("fd", info.st_dev, info.st_ino)
        with _lock:
            mapped = _MAPPED.get(identity)
            if mapped is not None:
                _check_size(mapped.size, nbytes, "the shared memory it was sent")
                os.close(fd)  # this process has it already
                return mapped
            _check_size(info.st_size, nbytes, "the shared memory it was sent")
            return _map(fd, nbytes, _Block(fd, None, nbytes, None), identity)
    except BaseException:
        os.close(fd)
        raise


def attach_file(name: str, nbytes: int) -> np.ndarray:
    """The array over a named block in /dev/shm that another process created."""
    if os.path.basename(name) != name or not name.startswith(_PREFIX):
        raise ValueError(f"expected the name of an Ember shared-memory file, but got {name!r}")
    with _lock:
        mapped = _MAPPED.get(("file", name))
        if mapped is not None:
            _check_size(mapped.size, nbytes, _path(name))
            return mapped
        try:
            fd = os.open(_path(name), os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            raise RuntimeError(f"shared memory {_path(name)} no longer exists: with the file_system strategy the "
                               f"sending process must keep the tensor alive until it is received") from None
        try:
            _check_size(os.fstat(fd).st_size, nbytes, _path(name))
            return _map(fd, nbytes, _Block(None, name, nbytes, None), ("file", name))
        finally:
            os.close(fd)


def _check_size(size: int, nbytes: int, what: str) -> None:
    if size < nbytes:  # a mapping past the file's end would SIGBUS on first touch
        raise RuntimeError(f"expected {what} to hold {nbytes} bytes, but it has {size}")
