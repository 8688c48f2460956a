"""DistributedDataParallel: one model replica per process, gradients averaged by bucketed all-reduces.

Note [DDP buckets]: the parameters that require grad are grouped into buckets of at most
bucket_cap_mb (one dtype each), in reverse registration order, which roughly follows the order
in which backward produces their gradients. A post-accumulate-grad hook marks a parameter ready;
once a bucket is all ready its gradients are flattened and averaged by an asynchronous all-reduce
(Note [DDP communication hooks]) while backward goes on. Buckets start strictly in index order on
every rank (a later bucket that is ready first waits for the earlier ones), so the collectives
match across ranks. The hook that completes
the last bucket waits for them all and writes the averages back into .grad.

Note [DDP communication hooks]: "average a bucket" is itself a hook, hook(state, GradBucket) ->
Future, called once per bucket in index order (from the backward thread, with grad mode off); the
Future's value is the reduced flat buffer. Without register_comm_hook it is
default_hooks.allreduce_hook on the process group (each rank divides by the world size, then a SUM
all-reduce, as PyTorch's reducer does), so registering that hook reproduces the default bit for
bit. A hook may chain further collectives on its future (Note [collectives from callbacks] in
distributed_c10d.py keeps them in the same order on every rank).

With find_unused_parameters, forward walks the autograd graph from the outputs: parameters it does
not reach are ready at once (their slot is zero), and a second all-reduce of "used" flags decides
which parameters get a gradient: one no rank used keeps the .grad it had (None stays None), as in PyTorch.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import ember
import ember.distributed as dist
from ember.distributed.algorithms.ddp_comm_hooks import default_hooks
from ember.futures import Future

from ..modules.module import Module

__all__ = ["DistributedDataParallel"]


class _Bucket:
    def __init__(self, params: list) -> None:
        self.params = params
        self.index = 0
        self.pending = 0
        self.flat: ember.Tensor | None = None
        self.future: Future | None = None


def _tensors_in(obj: Any) -> Iterator[ember.Tensor]:
    if isinstance(obj, ember.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o)


class DistributedDataParallel(Module):
    """Wraps `module`: its parameters and buffers are broadcast from rank 0 at construction, and
    every backward leaves each replica with the gradients averaged over the process group.

    static_graph is accepted as PyTorch's optimization hint; the graph is analyzed every iteration
    (only with find_unused_parameters), so the results are the same either way. device_ids and
    output_device must be None (CPU)."""

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group: Any = None, bucket_cap_mb: float = 25,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"DistributedDataParallel: expected an ember.nn.Module, but got {type(module).__name__}")
        if device_ids or output_device is not None:
            raise ValueError("DistributedDataParallel: device_ids and output_device are for CUDA modules; "
                             "ember.distributed runs on CPU, so leave them None")
        self.module = module
        self.process_group = process_group
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self._comm_hook: Any = None
        self._comm_state: Any = None
        self._backward_ran = False  # register_comm_hook must come before the first backward
        self._world = dist.get_world_size(process_group)
        if self._world < 0:
            raise ValueError("DistributedDataParallel: this rank is not part of process_group")
        self._src = dist.get_global_rank(process_group, 0) if process_group is not None else 0
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise RuntimeError("DistributedDataParallel: the module has no parameter that requires grad")
        self._names = {id(p): n for n, p in named}
        self._sync_module_states()
        self._buckets = self._make_buckets([p for _, p in named], bucket_cap_mb * 1024 * 1024)
        for i, b in enumerate(self._buckets):
            b.index = i
        self._bucket_of = {id(p): b for b in self._buckets for p in b.params}
        self._expecting = False  # a backward of a synced forward is due
        self._next_bucket = 0
        self._ready: set[int] = set()
        self._used: set[int] = set()
        self._grads_seen = False  # some hook fired since the last forward
        # The hook is handed a tensor, not necessarily the same Python object: bind the parameter.
        self._hooks = [p.register_post_accumulate_grad_hook(lambda _, p=p: self._on_grad(p)) for _, p in named]
        self._accumulators = {}  # parameter id -> its AccumulateGrad node (find_unused_parameters)
        if find_unused_parameters:
            for _, p in named:
                self._accumulators[id(p)] = p.view_as(p).grad_fn.next_functions[0][0]

    # --- set-up ------------------------------------------------------------------------------

    def _sync_module_states(self) -> None:
        with ember.no_grad():
            for t in list(self.module.parameters()) + list(self.module.buffers()):
                dist.broadcast(t.detach(), self._src, group=self.process_group)

    @staticmethod
    def _make_buckets(params: list, cap_bytes: float) -> list[_Bucket]:
        buckets: list[_Bucket] = []
        open_by_dtype: dict[Any, tuple[list, int]] = {}
        for p in reversed(params):
            members, size = open_by_dtype.get(p.dtype, ([], 0))
            if members and size + p.numel() * p.element_size() > cap_bytes:
                buckets.append(_Bucket(members))
                members, size = [], 0
            members.append(p)
            open_by_dtype[p.dtype] = (members, size + p.numel() * p.element_size())
        buckets += [_Bucket(members) for members, _ in open_by_dtype.values() if members]
        return buckets

    # --- forward -----------------------------------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Within it, backward accumulates gradients locally; the first synced backward after it
        averages the accumulated gradients."""
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state: Any, hook: Callable[[Any, dist.GradBucket], Future]) -> None:
        """Replaces how each bucket of gradients is averaged (Note [DDP communication hooks]):
        hook(state, bucket) is called with a dist.GradBucket once the bucket's gradients are all
        ready and returns an ember.futures.Future holding the reduced bucket buffer (a tensor of the
        same size). Built-ins live in ember.distributed.algorithms.ddp_comm_hooks. Register once,
        before the first backward."""
        if not callable(hook):
            raise TypeError(f"DistributedDataParallel.register_comm_hook: expected hook to be callable, but got "
                            f"{type(hook).__name__}")
        try:
            inspect.signature(hook).bind(state, None)
        except TypeError as e:
            raise TypeError("DistributedDataParallel.register_comm_hook: the hook must take two arguments, "
                            f"(state, bucket): {e}") from None
        except ValueError:
            pass  # a builtin without a signature: let the first call tell
        if self._comm_hook is not None:
            raise RuntimeError("DistributedDataParallel.register_comm_hook: a communication hook is already "
                               "registered; register_comm_hook can only be called once")
        if self._backward_ran:
            raise RuntimeError("DistributedDataParallel.register_comm_hook: the hook must be registered before "
                               "the first backward pass")
        self._comm_state, self._comm_hook = state, hook

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if self._expecting and self._grads_seen:
            missing = [name for pid, name in self._names.items() if pid not in self._ready]
            raise RuntimeError(
                "DistributedDataParallel: expected to have finished reduction in the prior iteration before "
                f"starting a new one; parameters that received no gradient: {missing}. Pass "
                "find_unused_parameters=True if some parameters do not take part in the loss.")
        if self.broadcast_buffers and ember.is_grad_enabled():
            with ember.no_grad():
                for b in self.module.buffers():
                    dist.broadcast(b, self._src, group=self.process_group)
        output = self.module(*inputs, **kwargs)
        sync = self.require_backward_grad_sync and ember.is_grad_enabled()
        self._expecting = sync
        if sync:
            self._prepare_for_backward(output)
        return output

    def _prepare_for_backward(self, output: Any) -> None:
        self._next_bucket = 0
        self._ready = set()
        self._grads_seen = False
        for b in self._buckets:
            b.pending, b.flat, b.future = len(b.params), None, None
        if not self.find_unused_parameters:
            self._used = set(self._bucket_of)
            return
        self._used = self._reached_parameters(output)
        for b in self._buckets:
            for p in b.params:
                if id(p) not in self._used:
                    self._mark_ready(p)

    def _reached_parameters(self, output: Any) -> set[int]:
        # Node wrappers are kept alive in `seen`, so the same node is the same Python object.
        by_node = {id(node): pid for pid, node in self._accumulators.items()}
        seen, stack, reached = {}, [t.grad_fn for t in _tensors_in(output) if t.grad_fn is not None], set()
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen[id(node)] = node
            if id(node) in by_node:
                reached.add(by_node[id(node)])
            stack.extend(n for n, _ in node.next_functions if n is not None)
        return reached

    # --- backward (Note [DDP buckets]) -------------------------------------------------------

    def _on_grad(self, param: ember.Tensor) -> None:
        self._backward_ran = True
        if not self._expecting or id(param) in self._ready:
            return
        self._grads_seen = True
        self._mark_ready(param)

    def _mark_ready(self, param: ember.Tensor) -> None:
        self._ready.add(id(param))
        bucket = self._bucket_of[id(param)]
        bucket.pending -= 1
        while self._next_bucket < len(self._buckets) and self._buckets[self._next_bucket].pending == 0:
            self._launch(self._buckets[self._next_bucket])
            self._next_bucket += 1
        if self._next_bucket == len(self._buckets):
            self._finish()

    def _launch(self, bucket: _Bucket) -> None:
        with ember.no_grad():
            parts = [(p.grad if p.grad is not None and id(p) in self._used else ember.zeros_like(p)).reshape(-1)
                     for p in bucket.params]
            bucket.flat = ember.cat(parts)
        index = bucket.index
        grad_bucket = dist.GradBucket(index, bucket.flat, bucket.params, index == len(self._buckets) - 1)
        with ember.no_grad():
            if self._comm_hook is None:
                future = default_hooks.allreduce_hook(self.process_group, grad_bucket)
            else:
                future = self._comm_hook(self._comm_state, grad_bucket)
        if not isinstance(future, Future):
            raise TypeError(f"DistributedDataParallel: the communication hook must return an ember.futures.Future, "
                            f"but it returned {type(future).__name__}")
        bucket.future = future

    def _hook_result(self, bucket: _Bucket) -> ember.Tensor:
        value = bucket.future.wait()
        # PyTorch 1.8's hooks return a list holding the tensor; later ones the tensor itself.
        if isinstance(value, (list, tuple)) and len(value) == 1:
            value = value[0]
        if not isinstance(value, ember.Tensor) or value.numel() != bucket.flat.numel():
            got = (f"a tensor of {value.numel()} elements" if isinstance(value, ember.Tensor)
                   else type(value).__name__)
            raise RuntimeError(f"DistributedDataParallel: the communication hook's future must hold the reduced "
                               f"bucket, a tensor of {bucket.flat.numel()} elements, but it holds {got}")
        return value

    def _finish(self) -> None:
        self._expecting = False
        used_anywhere = None
        if self.find_unused_parameters:
            flags = ember.tensor([1 if id(p) in self._used else 0 for b in self._buckets for p in b.params],
                                 dtype=ember.int32)
            dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self.process_group)
            used_anywhere = flags.tolist()
        i = 0
        with ember.no_grad():
            for b in self._buckets:
                reduced = self._hook_result(b)
                at = 0
                for p in b.params:
                    n = p.numel()
                    if used_anywhere is None or used_anywhere[i]:
                        avg = reduced[at:at + n].view(p.shape)
                        if p.grad is None:
                            p.grad = avg.clone()
                        else:
                            p.grad.copy_(avg)
                    at += n
                    i += 1
                b.flat, b.future = None, None
