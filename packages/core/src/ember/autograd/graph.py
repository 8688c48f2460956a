"""ember.autograd.graph (torch.autograd.graph): the autograd graph's node type, gradient edges,
multi-tensor gradient hooks, version bumps and saved-tensor hooks.

    Node                           abstract base; every grad_fn (ember._C.Node) is an instance
    GradientEdge, get_gradient_edge (node, output_nr) of a tensor's gradient
    increment_version              marks a tensor as modified in place
    register_multi_grad_hook       one hook over several tensors' gradients ("all" or "any")
    saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks
                                   pack/unpack hooks over saved tensors
    allow_mutation_on_saved_tensors
                                   in-place writes to tensors saved for backward are allowed:
                                   backward reads the values they had when saved

The saved-tensor hooks see every tensor saved for backward: the native ops' (their C++
SavedVariable calls them, Note [saved-tensor hooks] in native/src/autograd/engine.cpp) and those
of ember.autograd.Function (ctx.save_for_backward). A saved output reaches pack_hook without its
history (which would lead back to the node saving it); the unpacked tensor gets its place in the
graph back. As in PyTorch, a tensor saved through hooks has no version check: what the hooks keep
is what backward reads. save_on_cpu keeps its meaning on a CPU-only build (every saved tensor
already lives in CPU memory).

allow_mutation_on_saved_tensors copies a saved tensor just before the first in-place write to its
memory (the native write hook every in-place op and out= passes, Note [write hooks]), so it sees
writes through any view, `.data` or `out=` alike, where PyTorch's version, a dispatch mode, keys on
the written tensor's data pointer and version.

Node.metadata is absent: a grad_fn's Python object does not live as long as its node.
"""

from __future__ import annotations

import abc
import contextlib
import itertools
import threading
import weakref
from typing import NamedTuple

from .. import _C
from . import _engine
from .grad_mode import no_grad

__all__ = ["Node", "GradientEdge", "get_gradient_edge", "increment_version", "register_multi_grad_hook",
           "saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks", "allow_mutation_on_saved_tensors"]


class Node(abc.ABC):
    """The type of a tensor's grad_fn: isinstance(t.grad_fn, Node) holds for every node of the
    graph (native ops' nodes, autograd.Function's, AccumulateGrad)."""

    @abc.abstractmethod
    def name(self) -> str:
        """The node's name, e.g. 'MulBackward0'."""

    @property
    @abc.abstractmethod
    def next_functions(self) -> tuple:
        """((node, input_nr), ...): where this node's gradients go."""

    @abc.abstractmethod
    def register_hook(self, fn):
        """fn(grad_inputs, grad_outputs) after the node ran; returns a handle."""

    @abc.abstractmethod
    def register_prehook(self, fn):
        """fn(grad_outputs) before the node runs; returns a handle."""

    @classmethod
    def __subclasshook__(cls, subclass):
        if cls is Node and issubclass(subclass, _C.Node):
            return True
        return NotImplemented


Node.register(_C.Node)


class GradientEdge(NamedTuple):
    """An edge of the graph: the gradient of output `output_nr` of `node`."""

    node: Node
    output_nr: int


_grad_node = _engine._grad_node


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge the gradient of `tensor` flows along: (grad_fn or accumulator, output_nr)."""
    return GradientEdge(_grad_node(tensor), tensor.output_nr)


def increment_version(tensor) -> None:
    """Marks `tensor` (or each tensor of a list) as modified in place, as an in-place op does, so
    a backward that saved it raises; for writes Ember cannot see (through data_ptr, say). Inference
    tensors have no version counter and are left alone."""
    tensors = (tensor,) if isinstance(tensor, _C.Tensor) else tuple(tensor)
    for t in tensors:
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"increment_version(): expected a Tensor or a list of Tensors, got {type(t).__name__}")
        if t.is_inference():
            continue
        with no_grad():  # an in-place fill through an all-false mask: bumps the counter, writes nothing
            t.masked_fill_(_C.zeros([], dtype=_C.bool), 0)


# ---- register_multi_grad_hook ---------------------------------------------------------------------


def register_multi_grad_hook(tensors, fn, *, mode: str = "all"):
    """One hook over the gradients of several tensors (torch.autograd.graph.register_multi_grad_hook).

    mode "all": fn(grads) runs once per backward, after the gradient of every tensor that this
    backward reaches was computed; grads holds None for the tensors it does not reach (not in the
    graph, or not needed for the `inputs` of .backward()/.grad()).
    mode "any": fn(grad) runs once per backward, with the first of the tensors' gradients.
    Returns a handle whose remove() takes the hook off."""
    supported_modes = ("all", "any")
    if mode not in supported_modes:
        raise ValueError(f"Expects mode to be one of {supported_modes} but got {mode}")
    tensors = tuple(tensors)
    lock = threading.Lock()
    if mode == "all":
        for t in tensors:
            if not t.requires_grad:
                raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        nodes = [_grad_node(t) for t in tensors]
        state: dict = {}  # task id -> [calls so far, calls expected, buffer]

        def get_inner_hook(idx: int):
            def inner_hook(grad):
                task = _engine._current_task()
                with lock:
                    entry = state.get(task.id)
                    if entry is None:
                        expected = sum(task.will_run(n) for n in nodes)
                        entry = state[task.id] = [0, expected, [None] * len(tensors)]
                    entry[2][idx] = grad
                    entry[0] += 1
                    done = entry[0] >= entry[1]
                    if done:
                        del state[task.id]
                if done:
                    fn(entry[2])

            return inner_hook

        handles = [t.register_hook(get_inner_hook(i)) for i, t in enumerate(tensors)]
    else:
        ran: set = set()

        def any_hook(grad):
            task = _engine._current_task()
            with lock:
                if task.id in ran:
                    return
                ran.add(task.id)
                task.on_exit(lambda: ran.discard(task.id))
            fn(grad)

        handles = [t.register_hook(any_hook) for t in tensors if t.requires_grad]
    return _MultiHandle(handles)


class _MultiHandle:
    """The handle of a multi-grad hook: remove() takes it off every tensor."""

    _ids = itertools.count()

    def __init__(self, handles) -> None:
        self.handles = tuple(handles)
        self.id = next(self._ids)

    def remove(self) -> None:
        for h in self.handles:
            h.remove()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


# ---- saved-tensor hooks -----------------------------------------------------------------------------

class _ThreadState(threading.local):
    """Per thread, as in PyTorch: the (pack, unpack) pairs in effect and the error messages of
    disable_saved_tensors_hooks in effect, innermost last."""

    def __init__(self) -> None:
        self.hooks: list = []
        self.disabled: list = []


_STATE = _ThreadState()


class saved_tensors_hooks:  # noqa: N801 - PyTorch's name
    """Context manager: tensors saved for backward are passed through pack_hook(tensor) -> any
    object when saved, and unpack_hook(that object) -> tensor when backward reads them. Per
    thread; the innermost pair applies; a hook's own ops save their tensors plainly."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        if _STATE.disabled:
            raise RuntimeError(_STATE.disabled[-1])
        _C._push_saved_tensors_hooks(self.pack_hook, self.unpack_hook)
        _STATE.hooks.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc) -> None:
        _STATE.hooks.pop()
        _C._pop_saved_tensors_hooks()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - PyTorch's name
    """Saved tensors are kept in CPU memory and moved back to their device for backward. On a
    CPU-only build every saved tensor already is in CPU memory, so this changes nothing but the
    copy made of Function-saved tensors on another device; pin_memory is accepted and unused."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        def pack(tensor):
            return tensor.device, tensor.to("cpu")

        def unpack(packed):
            device, tensor = packed
            return tensor.to(device)

        self.pin_memory = pin_memory
        self.device_type = device_type
        super().__init__(pack, unpack)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message: str):
    """Within it, entering saved_tensors_hooks (or save_on_cpu) raises RuntimeError(error_message)."""
    _STATE.disabled.append(error_message)
    try:
        yield
    finally:
        _STATE.disabled.pop()


def _current_hooks():
    """The innermost (pack, unpack) pair in effect, for FunctionCtx.save_for_backward; or None."""
    return _STATE.hooks[-1] if _STATE.hooks else None


class _Saved:
    """What allow_mutation_on_saved_tensors' pack hook returns: the saved tensor, replaced by a copy
    of it when a write first reaches its memory."""

    __slots__ = ("tensor", "__weakref__")

    def __init__(self, tensor) -> None:
        self.tensor = tensor


class _AllowMutationOnSavedContext:
    """What allow_mutation_on_saved_tensors yields: the tensors saved inside it and not yet copied,
    by the storage they view; one view saved twice at one version is kept once."""

    def __init__(self) -> None:
        self.active = True
        self.by_storage: dict[int, weakref.WeakSet] = {}
        self.by_view: weakref.WeakValueDictionary = weakref.WeakValueDictionary()

    def pack(self, tensor) -> _Saved:
        key = (_C._storage_id(tensor), tensor.storage_offset(), tuple(tensor.shape), tensor.stride(),
               tensor.dtype, tensor._version)
        saved = self.by_view.get(key)
        if saved is None:
            saved = self.by_view[key] = _Saved(tensor)
            self.by_storage.setdefault(key[0], weakref.WeakSet()).add(saved)
        return saved

    def unpack(self, saved: _Saved):
        if not self.active:
            raise RuntimeError("Trying to backward outside of the 'allow_mutation_on_saved_tensors' context in "
                               "which the graph was originally recorded.")
        return saved.tensor

    def before_write(self, tensor) -> None:
        pending = self.by_storage.pop(_C._storage_id(tensor), None)
        if pending:
            with no_grad():
                for saved in list(pending):
                    saved.tensor = saved.tensor.clone()

    def clear(self) -> None:
        self.active = False
        self.by_storage.clear()
        self.by_view.clear()


_mutation_context: _AllowMutationOnSavedContext | None = None


def _before_write(tensor) -> None:
    # Note [write hooks]: the native side calls this before every in-place write on a thread inside
    # allow_mutation_on_saved_tensors
    if _mutation_context is not None:
        _mutation_context.before_write(tensor)


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """Within it, tensors saved for backward may be modified in place: the first write to a saved
    tensor's memory copies it first, and backward (which must run inside the same context) reads
    the values it had when saved. Yields the context object; contexts cannot be nested."""
    global _mutation_context
    if _mutation_context is not None:
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    ctx = _mutation_context = _AllowMutationOnSavedContext()
    try:
        with saved_tensors_hooks(ctx.pack, ctx.unpack):
            _C._set_write_hook(_before_write)
            try:
                yield ctx
            finally:
                _C._set_write_hook(None)
    finally:
        ctx.clear()
        _mutation_context = None
