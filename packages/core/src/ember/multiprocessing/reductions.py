"""How multiprocessing's pickler (multiprocessing.reduction.ForkingPickler: Queue, Pipe, a spawned
Process's arguments) sends Ember tensors and storages: by shared memory, as torch.multiprocessing.

A tensor pickles as its UntypedStorage plus its geometry (dtype, storage offset, size, stride,
requires_grad, and whether it is an nn.Parameter); a storage moves into shared memory
(share_memory_) and pickles as a handle to that memory, and the receiver maps it: one memory, two
processes. Under the "file_descriptor" strategy the handle is the block's descriptor wrapped in
multiprocessing.reduction.DupFd (passed over a Unix socket, or to a spawned child at its start),
under "file_system" the block's name in /dev/shm. Storages that arrive twice (two views of one
storage, or the same tensor sent again) are mapped once, so the received views share memory too.
Only these exact classes are registered, as in PyTorch; other Tensor subclasses pickle by copy.
"""

from __future__ import annotations

import io
import multiprocessing.reduction
from multiprocessing.reduction import ForkingPickler

from .. import _C, _shared_memory
from ..nn.parameter import Parameter
from ..storage import _LIVE, TypedStorage, UntypedStorage, _key, _share, tensor_over, untyped_storage

try:
    # Loaded now so that a fork never copies it half-initialized: a Queue pickles (and may first
    # import it, through DupFd) in its feeder thread, which can run during a fork.
    import multiprocessing.resource_sharer  # noqa: F401
except ImportError:
    pass


def reduce_storage(storage: UntypedStorage) -> tuple:
    if storage.device.type != "cpu":
        raise NotImplementedError(f"sharing {storage.device.type} memory between processes is not implemented in "
                                  f"Ember (PyTorch uses CUDA IPC); move it to the CPU first")
    strategy = _shared_memory.get_sharing_strategy()
    _share(storage._bytes, strategy)  # storage.share_memory_(), under the strategy the handle is for
    handle = _shared_memory.handle(storage._bytes, strategy)
    if handle[0] == "fd":
        handle = ("fd", multiprocessing.reduction.DupFd(handle[1]), handle[2])
    return (rebuild_storage, handle)


def rebuild_storage(kind: str, *handle: object) -> UntypedStorage:
    """The UntypedStorage over the memory a handle names (reduce_storage), in this process."""
    if kind == "empty":
        storage = UntypedStorage(0)
        _C._storage_set_shared(storage._bytes, True)
        return storage
    if kind == "fd":
        dup, nbytes = handle
        array = _shared_memory.attach_fd(dup.detach(), nbytes)
    elif kind == "file":
        name, nbytes = handle
        array = _shared_memory.attach_file(name, nbytes)
    else:
        raise ValueError(f"unknown shared-memory handle kind {kind!r}")
    raw = _C.from_numpy(array)
    _C._storage_set_shared(raw, True)
    live = _LIVE.get(_key(raw))  # the storage object already over this memory, if any
    return live if live is not None else UntypedStorage._wrap(raw)


def reduce_typed_storage(storage: TypedStorage) -> tuple:
    return (rebuild_typed_storage, (storage._untyped_storage, storage.dtype))


def rebuild_typed_storage(untyped: UntypedStorage, dtype: _C.dtype) -> TypedStorage:
    return TypedStorage(wrap_storage=untyped, dtype=dtype, _internal=True)


def reduce_tensor(tensor: _C.Tensor) -> tuple:
    if tensor.requires_grad and not tensor.is_leaf:
        raise RuntimeError("Cowardly refusing to serialize non-leaf tensor which requires_grad, since autograd does "
                           "not support crossing process boundaries.  If you just want to transfer the data, call "
                           "detach() on the tensor before serializing (e.g., putting it on the queue).")
    if tensor.device.type != "cpu":
        raise NotImplementedError(f"sending a {tensor.device.type} tensor to another process is not implemented in "
                                  f"Ember (PyTorch uses CUDA IPC); send tensor.cpu() instead")
    metadata = (tensor.dtype, tensor.storage_offset(), tuple(tensor.shape), tuple(tensor.stride()),
                tensor.requires_grad)
    return (rebuild_tensor, (type(tensor), untyped_storage(tensor), metadata))


def rebuild_tensor(cls: type, storage: UntypedStorage, metadata: tuple) -> _C.Tensor:
    """The tensor reduce_tensor described, over the received storage (bounds-checked)."""
    dtype, storage_offset, size, stride, requires_grad = metadata
    tensor = tensor_over(storage, dtype, storage_offset, size, stride)
    if cls is Parameter:
        return Parameter(tensor, requires_grad=requires_grad)
    return tensor.requires_grad_() if requires_grad else tensor


def init_reductions() -> None:
    """Register the reducers on ForkingPickler (done when ember.multiprocessing is imported)."""
    ForkingPickler.register(_C.Tensor, reduce_tensor)
    ForkingPickler.register(Parameter, reduce_tensor)
    ForkingPickler.register(UntypedStorage, reduce_storage)
    ForkingPickler.register(TypedStorage, reduce_typed_storage)


def dumps_by_copy(obj: object) -> bytes:
    """obj pickled as ForkingPickler would, except that Ember tensors and storages are copied
    into the pickle instead of shared (for a payload kept for later, whose sender may be gone by
    the time it is loaded: DataLoader's batches)."""
    buffer = io.BytesIO()
    pickler = ForkingPickler(buffer)
    for cls in (_C.Tensor, Parameter, UntypedStorage, TypedStorage):
        pickler.dispatch_table.pop(cls, None)
    pickler.dump(obj)
    return buffer.getvalue()
