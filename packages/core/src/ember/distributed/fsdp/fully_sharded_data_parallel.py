"""FullyShardedDataParallel on CPU (torch.distributed.fsdp's 1.12 API).

Note [FSDP flat parameter]: each unit (an FSDP instance) takes the parameters of its module that
no nested unit took, flattens them in module order into one 1-D tensor, pads it to a multiple of
the world size and keeps only its rank's equal slice, as the unit's FlatParameter (the only
parameter the optimizer sees). The original parameters leave their modules' _parameters; during
forward each name holds a view into the gathered flat tensor:

    flat (padded):  [ w0 ....... | b0 .. | w1 ......... | b1 | pad ]
    rank 0 shard:   [ ................. ]
    rank 1 shard:                       [ .......................... ]

Note [FSDP autograd]: the gather is one autograd Function. Forward all-gathers the shards (cast to
MixedPrecision.param_dtype); its backward gets the gradient of the whole flat tensor, once every
use of every view has contributed, reduce-scatters it (SUM, in reduce_dtype), divides by the world
size and hands this rank's slice to the FlatParameter's .grad. Averaging per rank makes N ranks on
N equal batches equal one process on their concatenation. NO_SHARD keeps the whole flat tensor on
every rank and all-reduces instead.

Note [FSDP re-shard]: under FULL_SHARD, forward's operations save views of the gathered tensor for
backward, so dropping references cannot free it (ember's autograd has no saved-tensor hooks). The
gathered tensor therefore lives in its own private anonymous memory map: after forward its pages
are handed back to the OS (madvise(MADV_DONTNEED); the views stay valid and read zeros, never
out-of-bounds memory), and a hook on each output of the unit all-gathers into the same pages again
when backward reaches it, before any of the unit's own backward steps run. The gather's backward
checks that this happened (a tensor that left the unit other than through its outputs would
otherwise see zeros) and releases the pages again. Dtypes NumPy cannot map (bfloat16, float8) keep
an ordinary allocation, so with those as MixedPrecision.param_dtype FULL_SHARD holds the gathered
parameters from forward to backward as SHARD_GRAD_OP does.
"""

from __future__ import annotations

import contextlib
import functools
import math
import mmap
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

import ember
import ember.distributed as dist
from ember import nn

from .api import (
    BackwardPrefetch,
    CPUOffload,
    FullStateDictConfig,
    LocalStateDictConfig,
    MixedPrecision,
    ShardedStateDictConfig,
    ShardingStrategy,
    StateDictConfig,
    StateDictType,
)
from .wrap import _recursive_wrap

__all__ = ["FlatParameter", "FullyShardedDataParallel"]


class FlatParameter(nn.Parameter):
    """A unit's parameters flattened into one 1-D tensor; this rank's shard of it (Note [FSDP flat parameter])."""


@dataclass
class _ParamInfo:
    module: nn.Module
    name: str
    shape: tuple
    offset: int
    numel: int


_NUMPY_DTYPES = {ember.float16: np.float16, ember.float32: np.float32, ember.float64: np.float64,
                 ember.complex64: np.complex64, ember.complex128: np.complex128}


class _Gathered:
    """One forward's gathered flat parameter under FULL_SHARD (Note [FSDP re-shard])."""

    def __init__(self, numel: int, dtype: ember.dtype) -> None:
        np_dtype = _NUMPY_DTYPES.get(dtype)
        if np_dtype is None:
            self._map = None
            self.tensor = ember.empty(numel, dtype=dtype)
        else:
            self._map = mmap.mmap(-1, max(numel * np.dtype(np_dtype).itemsize, 1),
                                  flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            self.tensor = ember.from_numpy(np.frombuffer(self._map, dtype=np_dtype, count=numel))
        self.live = True  # holds the gathered values

    def release(self) -> None:
        if self._map is not None:
            self._map.madvise(mmap.MADV_DONTNEED)
            self.live = False


class _Unshard(ember.autograd.Function):
    """Note [FSDP autograd]."""

    @staticmethod
    def forward(ctx: Any, shard: ember.Tensor, unit: FullyShardedDataParallel, gathered: _Gathered | None) -> ember.Tensor:
        ctx.unit, ctx.gathered = unit, gathered
        if gathered is None:
            return unit._gather(shard, unit._param_dtype)
        unit._gather(shard, unit._param_dtype, out=gathered.tensor)
        return gathered.tensor

    @staticmethod
    def backward(ctx: Any, grad: ember.Tensor) -> tuple:
        return ctx.unit._reduce_grad(grad, ctx.gathered), None, None


_STATE_DICT_CONFIGS = {StateDictType.FULL_STATE_DICT: FullStateDictConfig,
                       StateDictType.LOCAL_STATE_DICT: LocalStateDictConfig,
                       StateDictType.SHARDED_STATE_DICT: ShardedStateDictConfig}


def _rows(rows: int, world: int, rank: int) -> tuple[int, int]:
    """[start, stop) of the rows rank keeps when Tensor.chunk(world) splits `rows` rows."""
    size = -(-rows // world)
    start = min(rank * size, rows)
    return start, min(start + size, rows)


def _tensors_in(obj: Any) -> Iterator[ember.Tensor]:
    if isinstance(obj, ember.Tensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from _tensors_in(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from _tensors_in(o)


def _cast_inputs(obj: Any, dtype: ember.dtype) -> Any:
    if isinstance(obj, ember.Tensor):
        return obj.to(dtype) if obj.is_floating_point() else obj
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a namedtuple
        return type(obj)(*(_cast_inputs(o, dtype) for o in obj))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_cast_inputs(o, dtype) for o in obj)
    if isinstance(obj, dict):
        return {k: _cast_inputs(v, dtype) for k, v in obj.items()}
    return obj


class FullyShardedDataParallel(nn.Module):
    """Shards `module`'s parameters across the process group (Note [FSDP flat parameter]).

    With auto_wrap_policy (see ember.distributed.fsdp.wrap) the submodules it picks become units of
    their own, each gathered only around its own forward; the root takes what remains. Build the
    optimizer on fsdp_model.parameters() (the shards). device_id must be None or the CPU, and
    param_init_fn is not supported (ember has no meta device)."""

    def __init__(self, module: nn.Module, process_group: Any = None, sharding_strategy: ShardingStrategy | None = None,
                 cpu_offload: CPUOffload | None = None, auto_wrap_policy: Callable[..., bool] | None = None,
                 backward_prefetch: BackwardPrefetch | None = None, mixed_precision: MixedPrecision | None = None,
                 ignored_modules: Any = None, param_init_fn: Any = None, device_id: Any = None,
                 sync_module_states: bool = False, forward_prefetch: bool = False,
                 limit_all_gathers: bool = False) -> None:
        super().__init__()
        self._check_args(module, sharding_strategy, cpu_offload, auto_wrap_policy, backward_prefetch,
                         mixed_precision, param_init_fn, device_id)
        ignored_modules = [] if ignored_modules is None else list(ignored_modules)
        for ig in ignored_modules:
            if not isinstance(ig, nn.Module):
                raise TypeError(f"FullyShardedDataParallel: expected ignored_modules to hold nn.Modules, but got "
                                f"{type(ig).__name__}")
        ignored = {id(m) for ig in ignored_modules for m in ig.modules()}
        if auto_wrap_policy is not None:
            child_args = dict(process_group=process_group, sharding_strategy=sharding_strategy,
                              cpu_offload=cpu_offload, backward_prefetch=backward_prefetch,
                              mixed_precision=mixed_precision, ignored_modules=ignored_modules,
                              sync_module_states=sync_module_states, forward_prefetch=forward_prefetch,
                              limit_all_gathers=limit_all_gathers)
            _recursive_wrap(module, auto_wrap_policy, functools.partial(FullyShardedDataParallel, **child_args),
                            lambda m: isinstance(m, FullyShardedDataParallel) or id(m) in ignored,
                            only_children=True)
        self._fsdp_wrapped_module = module
        self.process_group = process_group
        self.sharding_strategy = sharding_strategy or ShardingStrategy.FULL_SHARD
        self.cpu_offload = cpu_offload or CPUOffload()
        self.backward_prefetch = backward_prefetch
        self.forward_prefetch = forward_prefetch
        self.limit_all_gathers = limit_all_gathers
        self.mixed_precision = mixed_precision
        self._world = dist.get_world_size(process_group)
        if self._world < 0:
            raise ValueError("FullyShardedDataParallel: this rank is not part of process_group")
        self._rank = dist.get_rank(process_group)
        self._param_dtype = mixed_precision.param_dtype if mixed_precision else None
        self._reduce_dtype = (mixed_precision.reduce_dtype or mixed_precision.param_dtype) if mixed_precision else None
        self._state_dict_type = StateDictType.FULL_STATE_DICT
        self._state_dict_config: StateDictConfig = FullStateDictConfig()
        if sync_module_states:
            self._broadcast_states(module, ignored)
        if mixed_precision is not None and mixed_precision.buffer_dtype is not None:
            for _, m in self._unit_modules(module, ignored):
                for name, b in list(m._buffers.items()):
                    if b is not None and b.is_floating_point():
                        m._buffers[name] = b.to(mixed_precision.buffer_dtype)
        self._sync_grads = True
        self._all_gathers = 0  # collectives this unit ran to gather its parameters
        self._last_gathered: Callable[[], _Gathered | None] = lambda: None  # a weak reference
        self._pending_grad: ember.Tensor | None = None  # gradients accumulated under no_sync(), unsharded
        self._is_root = True
        self._flatten(module, ignored)
        for m in module.modules():
            if isinstance(m, FullyShardedDataParallel):
                m._is_root = False

    # --- construction ------------------------------------------------------------------------

    @staticmethod
    def _check_args(module: Any, sharding_strategy: Any, cpu_offload: Any, auto_wrap_policy: Any,
                    backward_prefetch: Any, mixed_precision: Any, param_init_fn: Any, device_id: Any) -> None:
        name = "FullyShardedDataParallel"
        if not isinstance(module, nn.Module):
            raise TypeError(f"{name}: expected an ember.nn.Module, but got {type(module).__name__}")
        if isinstance(module, FullyShardedDataParallel) and auto_wrap_policy is not None:
            raise ValueError(f"{name}: the module is already wrapped in FSDP; auto_wrap_policy can only wrap "
                             f"an unwrapped module")
        for arg, value, kind in (("sharding_strategy", sharding_strategy, ShardingStrategy),
                                 ("cpu_offload", cpu_offload, CPUOffload),
                                 ("backward_prefetch", backward_prefetch, BackwardPrefetch),
                                 ("mixed_precision", mixed_precision, MixedPrecision)):
            if value is not None and not isinstance(value, kind):
                raise TypeError(f"{name}: expected {arg} to be a {kind.__name__}, but got {value!r}")
        if auto_wrap_policy is not None and not callable(auto_wrap_policy):
            raise TypeError(f"{name}: expected auto_wrap_policy to be callable, but got "
                            f"{type(auto_wrap_policy).__name__}")
        if mixed_precision is not None:
            for field in ("param_dtype", "reduce_dtype", "buffer_dtype"):
                dtype = getattr(mixed_precision, field)
                if dtype is not None and not (isinstance(dtype, ember.dtype) and dtype.is_floating_point):
                    raise ValueError(f"{name}: expected MixedPrecision.{field} to be a floating-point dtype, "
                                     f"but got {dtype!r}")
        if param_init_fn is not None:
            raise NotImplementedError(f"{name}: param_init_fn materializes modules on the meta device, which "
                                      f"ember does not have; build the module on the CPU")
        if device_id is not None and str(device_id) != "cpu":
            raise ValueError(f"{name}: device_id is for CUDA modules; ember.distributed runs on CPU, so leave "
                             f"it None (got {device_id!r})")

    @staticmethod
    def _unit_modules(module: nn.Module, ignored: set) -> Iterator[tuple[str, nn.Module]]:
        """(path, module) for the modules whose parameters this unit owns: module and its
        descendants, in module order, stopping at nested units and ignored modules."""
        stack = [("", module)]
        while stack:
            path, m = stack.pop(0)
            if id(m) in ignored:
                continue
            yield path, m
            stack[:0] = [(f"{path}{name}.", c) for name, c in m._modules.items()
                         if c is not None and not isinstance(c, FullyShardedDataParallel)]

    def _broadcast_states(self, module: nn.Module, ignored: set) -> None:
        src = dist.get_global_rank(self.process_group, 0) if self.process_group is not None else 0
        with ember.no_grad():
            for _, m in self._unit_modules(module, ignored):
                for t in list(m._parameters.values()) + list(m._buffers.values()):
                    if t is not None:
                        dist.broadcast(t.detach(), src, group=self.process_group)

    def _flatten(self, module: nn.Module, ignored: set) -> None:
        infos: list[_ParamInfo] = []
        shared: list[tuple[nn.Module, str, int]] = []  # a tied parameter: (module, name, index in infos)
        index_of: dict[int, int] = {}
        tensors, paths = [], []
        offset = 0
        for path, m in self._unit_modules(module, ignored):
            for name, p in list(m._parameters.items()):
                if p is None:
                    continue
                if id(p) in index_of:
                    shared.append((m, name, index_of[id(p)]))
                    continue
                if tensors and (p.dtype != tensors[0].dtype or p.requires_grad != tensors[0].requires_grad):
                    raise ValueError(
                        f"FullyShardedDataParallel: the parameters flattened into one unit must share dtype and "
                        f"requires_grad, but {path}{name} is {p.dtype} (requires_grad={p.requires_grad}) and "
                        f"{paths[0]} is {tensors[0].dtype} (requires_grad={tensors[0].requires_grad}); "
                        f"wrap them in separate units or pass the module in ignored_modules")
                index_of[id(p)] = len(infos)
                infos.append(_ParamInfo(m, name, tuple(p.shape), offset, p.numel()))
                tensors.append(p)
                paths.append(path + name)
                offset += p.numel()
        self._infos, self._shared = infos, shared
        self._numel = offset
        if not infos:
            self.flat_param = None
            return
        n = 1 if self.sharding_strategy == ShardingStrategy.NO_SHARD else self._world
        self._shard_numel = -(-offset // n)
        self._padded_numel = self._shard_numel * n
        with ember.no_grad():
            flat = ember.cat([p.detach().reshape(-1) for p in tensors])
            if self._padded_numel > offset:
                flat = ember.cat([flat, ember.zeros(self._padded_numel - offset, dtype=flat.dtype)])
            rank = 0 if n == 1 else self._rank
            shard = flat[rank * self._shard_numel:(rank + 1) * self._shard_numel].clone()
        self.flat_param = FlatParameter(shard, requires_grad=tensors[0].requires_grad)
        for info in infos:
            del info.module._parameters[info.name]
        for m, name, _ in shared:
            del m._parameters[name]
        self._free_params()

    # --- gathering and reducing (Note [FSDP autograd]) ---------------------------------------

    def _gather(self, shard: ember.Tensor, dtype: ember.dtype | None, out: ember.Tensor | None = None) -> ember.Tensor:
        src = shard.detach()
        cast = dtype is not None and dtype != src.dtype
        if cast:
            src = src.to(dtype)
        if self.sharding_strategy == ShardingStrategy.NO_SHARD:
            return src if cast else src.clone()  # never the parameter's own memory
        full = ember.empty(self._padded_numel, dtype=src.dtype) if out is None else out
        dist.all_gather_into_tensor(full, src.contiguous(), group=self.process_group)
        self._all_gathers += 1
        return full

    def _pre_backward(self, gathered: _Gathered) -> None:
        """Output hook (Note [FSDP re-shard]): the parameters come back before the unit's backward."""
        if not gathered.live:
            with ember.no_grad():
                self._gather(self.flat_param, self._param_dtype, out=gathered.tensor)
            gathered.live = True

    def _reduce_grad(self, grad: ember.Tensor, gathered: _Gathered | None = None) -> ember.Tensor | None:
        if gathered is not None:
            if not gathered.live:
                raise RuntimeError(
                    "FullyShardedDataParallel (FULL_SHARD): backward reached the unit's parameters without passing "
                    "through the unit's outputs, so they were never gathered again and its gradients were computed "
                    "from released memory; return every tensor that backward must reach from the wrapped module's "
                    "forward, or use ShardingStrategy.SHARD_GRAD_OP")
            gathered.release()  # the unit's backward is done (Note [FSDP re-shard])
        if self.sharding_strategy == ShardingStrategy.SHARD_GRAD_OP:
            self._free_params()  # kept from forward for this backward; done now
        if not self._sync_grads:
            # no_sync(): keep the unsharded gradient here; the next synchronized backward reduces it
            self._pending_grad = grad.clone() if self._pending_grad is None else self._pending_grad.add_(grad)
            return None
        if self._pending_grad is not None:
            grad, self._pending_grad = grad + self._pending_grad, None
        grad = grad.contiguous()
        if self._reduce_dtype is not None and grad.dtype != self._reduce_dtype:
            grad = grad.to(self._reduce_dtype)
        if self.sharding_strategy == ShardingStrategy.NO_SHARD:
            out = grad.clone()
            dist.all_reduce(out, group=self.process_group)
        else:
            out = ember.empty(self._shard_numel, dtype=grad.dtype)
            dist.reduce_scatter_tensor(out, grad, group=self.process_group)
        out.div_(self._world)
        return out.to(self.flat_param.dtype)

    def _use_params(self, full: ember.Tensor) -> None:
        for info in self._infos:
            setattr(info.module, info.name, full[info.offset:info.offset + info.numel].view(info.shape))
        for m, name, i in self._shared:
            setattr(m, name, getattr(self._infos[i].module, self._infos[i].name))

    def _free_params(self) -> None:
        # An empty tensor, not a stale view, so that the gathered memory is released (as far as
        # the unit is concerned) and a use outside forward fails loudly; not None, which modules
        # read as "this parameter does not exist" (a bias, in extra_repr).
        released = ember.empty(0, dtype=self.flat_param.dtype)
        for info in self._infos:
            setattr(info.module, info.name, released)
        for m, name, _ in self._shared:
            setattr(m, name, released)

    # --- forward -----------------------------------------------------------------------------

    @property
    def module(self) -> nn.Module:
        """The wrapped module."""
        return self._fsdp_wrapped_module

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self._param_dtype is not None:
            args, kwargs = _cast_inputs(args, self._param_dtype), _cast_inputs(kwargs, self._param_dtype)
        if self.flat_param is None:
            return self._fsdp_wrapped_module(*args, **kwargs)
        track = ember.is_grad_enabled() and self.flat_param.requires_grad
        gathered = None
        if track and self.sharding_strategy == ShardingStrategy.FULL_SHARD:
            gathered = _Gathered(self._padded_numel, self._param_dtype or self.flat_param.dtype)
            self._last_gathered = weakref.ref(gathered)
        if track:
            full = _Unshard.apply(self.flat_param, self, gathered)
        else:
            with ember.no_grad():
                full = self._gather(self.flat_param, self._param_dtype)
        self._use_params(full)
        try:
            out = self._fsdp_wrapped_module(*args, **kwargs)
        except BaseException:
            self._free_params()
            raise
        if not track or self.sharding_strategy != ShardingStrategy.SHARD_GRAD_OP:
            self._free_params()
        if gathered is not None:
            hooked = [t for t in _tensors_in(out) if t.requires_grad]
            for t in hooked:
                t.register_hook(lambda grad, g=gathered: self._pre_backward(g))
            if hooked:  # else backward cannot reach the unit, and its pages can go with it
                gathered.release()
        return out

    def _check_root(self, what: str) -> None:
        if not self._is_root:
            raise RuntimeError(f"FullyShardedDataParallel.{what} must be called on the root FSDP instance (the "
                               f"outermost one), not on a nested unit")

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Within it, backward reduces no gradients: each unit keeps its unsharded gradient (full
        size, so more memory) and the first backward after it reduces their sum. Root only."""
        self._check_root("no_sync")
        units = self._units()
        for u in units:
            u._sync_grads = False
        try:
            yield
        finally:
            for u in units:
                u._sync_grads = True

    def clip_grad_norm_(self, max_norm: float, norm_type: float = 2.0) -> ember.Tensor:
        """Scales every unit's gradient shard so that the norm of the whole (unsharded) gradient is
        at most max_norm; returns that norm before clipping (the same on every rank). Root only."""
        self._check_root("clip_grad_norm_")
        p = float(norm_type)
        params = [u.flat_param for u in self._units() if u.flat_param is not None and u.flat_param.grad is not None]
        sharded = [q.grad for u in self._units() for q in [u.flat_param]
                   if q is not None and q.grad is not None and u.sharding_strategy != ShardingStrategy.NO_SHARD]
        replicated = [q.grad for u in self._units() for q in [u.flat_param]
                      if q is not None and q.grad is not None and u.sharding_strategy == ShardingStrategy.NO_SHARD]
        with ember.no_grad():
            if p == float("inf"):
                part = ember.zeros((), dtype=ember.float64)
                for g in sharded:
                    part = ember.maximum(part, g.abs().max().to(ember.float64))
                dist.all_reduce(part, op=dist.ReduceOp.MAX, group=self.process_group)
                for g in replicated:
                    part = ember.maximum(part, g.abs().max().to(ember.float64))
                total = part
            else:
                # sum of |g|^p over this rank's shards, summed over ranks (the padding's gradient is zero)
                part = ember.zeros((), dtype=ember.float64)
                for g in sharded:
                    part = part + g.to(ember.float64).abs().pow(p).sum()
                dist.all_reduce(part, group=self.process_group)
                for g in replicated:
                    part = part + g.to(ember.float64).abs().pow(p).sum()
                total = part.pow(1.0 / p)
            coef = (float(max_norm) / (total + 1e-6)).clamp(max=1.0)
            for q in params:
                q.grad.mul_(coef.to(q.grad.dtype))
        return total

    @staticmethod
    @contextlib.contextmanager
    def summon_full_params(module: nn.Module, recurse: bool = True, writeback: bool = True, rank0_only: bool = False,
                           offload_to_cpu: bool = False) -> Iterator[None]:
        """Within it, the modules inside `module`'s FSDP units hold their full parameters (gathered,
        in full precision) under their original names; with writeback, changes made to them in place
        go back into the shards on exit. Every rank must enter it. rank0_only: only rank 0's modules
        get the full parameters (no writeback then); offload_to_cpu: they are on the CPU already."""
        if rank0_only and writeback:
            raise ValueError("FullyShardedDataParallel.summon_full_params: writeback=True is not supported with "
                             "rank0_only=True (the other ranks would have nothing to write back)")
        if isinstance(module, FullyShardedDataParallel) and not recurse:
            units = [module]
        else:
            units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        gathered = []
        with ember.no_grad():
            for u in units:
                if u.flat_param is None:
                    continue
                full = u._gather(u.flat_param, None)
                gathered.append((u, full))
                if not rank0_only or u._rank == 0:
                    u._use_params(full)
        try:
            yield
        finally:
            with ember.no_grad():
                for u, full in gathered:
                    if writeback:
                        rank = 0 if u.sharding_strategy == ShardingStrategy.NO_SHARD else u._rank
                        u.flat_param.copy_(full[rank * u._shard_numel:(rank + 1) * u._shard_numel])
                    u._free_params()

    # --- optimizer state ---------------------------------------------------------------------

    def _original_params(self) -> list[tuple[Any, nn.Module, str]]:
        """(owner, module, name) for each parameter of the original model, in module order, once
        each (a tied parameter at its first place): owner is the unit whose flat parameter holds
        it, or None for a parameter no unit holds (ignored_modules)."""
        primary = {(id(i.module), i.name): u for u in self._units() for i in u._infos}
        out, seen = [], set()
        for _, kind, m, name in self._entries():
            if kind == "owned" and (id(m), name) in primary:
                out.append((primary[(id(m), name)], m, name))
            elif kind == "param" and id(m._parameters[name]) not in seen:
                seen.add(id(m._parameters[name]))
                out.append((None, m, name))
        return out

    @staticmethod
    def full_optim_state_dict(model: FullyShardedDataParallel, optim: Any, optim_input: Any = None,
                              rank0_only: bool = True, group: Any = None) -> dict:
        """The optimizer's state for the original, unflattened parameters: {"state": {id: ...},
        "param_groups": [...]} with ids numbering model's original parameters in order, the state
        tensors gathered from every rank and shaped like their parameters. Every rank must call
        it; with rank0_only only rank 0 gets the result (the others get {})."""
        model._check_root("full_optim_state_dict")
        if optim_input is not None:
            raise NotImplementedError("full_optim_state_dict: optim_input is not supported; the optimizer's own "
                                      "parameter order is used")
        osd = optim.state_dict()
        flat_index = {id(p): i for i, p in enumerate(p for g in optim.param_groups for p in g["params"])}
        originals = model._original_params()
        state: dict[int, dict] = {}
        with ember.no_grad():
            for uid, (owner, m, name) in enumerate(originals):
                if owner is None:
                    i = flat_index.get(id(m._parameters[name]))
                    if i is not None and i in osd["state"]:
                        state[uid] = dict(osd["state"][i])
            for unit in model._units():  # the same order on every rank: each gather is a collective
                i = flat_index.get(id(unit.flat_param)) if unit.flat_param is not None else None
                if i is None or i not in osd["state"]:
                    continue
                full: dict[str, Any] = {}
                sharded = set()  # state shaped like the flat shard (momenta), not per step (step)
                for key, value in sorted(osd["state"][i].items()):
                    if isinstance(value, ember.Tensor) and value.dim() == 1 and value.numel() == unit._shard_numel:
                        full[key] = unit._gather(value, None)
                        sharded.add(key)
                    else:
                        full[key] = value
                for uid, (owner, m, name) in enumerate(originals):
                    if owner is not unit:
                        continue
                    info = next(x for x in unit._infos if x.module is m and x.name == name)
                    state[uid] = {k: (v[info.offset:info.offset + info.numel].view(info.shape).clone()
                                      if k in sharded else v) for k, v in full.items()}
        if rank0_only and model._rank != 0:
            return {}
        groups = []
        for g, packed in zip(optim.param_groups, osd["param_groups"], strict=True):
            members = {id(p) for p in g["params"]}
            ids = [uid for uid, (owner, m, name) in enumerate(originals)
                   if id(owner.flat_param if owner is not None else m._parameters[name]) in members]
            groups.append({**{k: v for k, v in packed.items() if k != "params"}, "params": ids})
        return {"state": state, "param_groups": groups}

    @staticmethod
    def shard_full_optim_state_dict(full_optim_state_dict: dict, model: FullyShardedDataParallel,
                                    optim_input: Any = None) -> dict:
        """This rank's share of full_optim_state_dict(), keyed like an optimizer built on
        model.parameters() (each group's parameters in that order): pass it to that optimizer's
        load_state_dict."""
        model._check_root("shard_full_optim_state_dict")
        if optim_input is not None:
            raise NotImplementedError("shard_full_optim_state_dict: optim_input is not supported; the optimizer "
                                      "must be built on model.parameters()")
        if not isinstance(full_optim_state_dict, dict) or set(full_optim_state_dict) != {"state", "param_groups"}:
            raise ValueError("shard_full_optim_state_dict: expected the dictionary full_optim_state_dict returned "
                             "(keys 'state' and 'param_groups')")
        originals = model._original_params()
        full_state = full_optim_state_dict["state"]
        flat_params = list(model.parameters())
        flat_index = {id(p): i for i, p in enumerate(flat_params)}
        owner_index = [flat_index[id(owner.flat_param if owner is not None else m._parameters[name])]
                       for owner, m, name in originals]
        state: dict[int, dict] = {}
        with ember.no_grad():
            for uid, (owner, _, _) in enumerate(originals):
                if owner is None and uid in full_state:
                    state[owner_index[uid]] = dict(full_state[uid])
            for unit in model._units():
                if unit.flat_param is None:
                    continue
                uids = [uid for uid, (owner, _, _) in enumerate(originals) if owner is unit]
                present = [uid for uid in uids if uid in full_state]
                if not present:
                    continue
                if len(present) != len(uids):
                    raise ValueError(f"shard_full_optim_state_dict: parameters {sorted(set(uids) - set(present))} have "
                                     f"no state but share a flat parameter with parameters that do")
                entry = {}
                for key, value in full_state[present[0]].items():
                    # Tensors of positive rank are per-element state (flattened and sharded like the
                    # parameters); anything else (step) must be the same for the whole unit.
                    if isinstance(value, ember.Tensor) and value.dim() > 0:
                        parts = []
                        for uid, info in zip(uids, unit._infos, strict=True):
                            v = full_state[uid][key]
                            if tuple(v.shape) != info.shape:
                                raise ValueError(f"shard_full_optim_state_dict: state {key!r} of parameter {uid} has "
                                                 f"shape {tuple(v.shape)}, but the parameter has {info.shape}")
                            parts.append(v.reshape(-1).to(value.dtype))
                        flat = ember.cat(parts)
                        if unit._padded_numel > unit._numel:
                            flat = ember.cat([flat, ember.zeros(unit._padded_numel - unit._numel, dtype=flat.dtype)])
                        rank = 0 if unit.sharding_strategy == ShardingStrategy.NO_SHARD else unit._rank
                        entry[key] = flat[rank * unit._shard_numel:(rank + 1) * unit._shard_numel].clone()
                    else:
                        for uid in uids:
                            other = full_state[uid][key]
                            equal = (bool((other == value).all()) if isinstance(value, ember.Tensor)
                                     and isinstance(other, ember.Tensor) and other.shape == value.shape
                                     else other == value)
                            if not equal:
                                raise ValueError(f"shard_full_optim_state_dict: state {key!r} differs between "
                                                 f"parameters {present[0]} and {uid}, which share a flat parameter")
                        entry[key] = value
                state[flat_index[id(unit.flat_param)]] = entry
        groups = []
        for g in full_optim_state_dict["param_groups"]:
            ids = []
            for uid in g["params"]:
                if not 0 <= uid < len(originals):
                    raise ValueError(f"shard_full_optim_state_dict: parameter id {uid} is out of range for a model "
                                     f"with {len(originals)} parameters")
                if owner_index[uid] not in ids:
                    ids.append(owner_index[uid])
            # load_state_dict pairs ids with the group's parameters by position: model.parameters() order
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": sorted(ids)})
        return {"state": state, "param_groups": groups}

    @staticmethod
    def scatter_full_optim_state_dict(full_optim_state_dict: dict | None, model: FullyShardedDataParallel,
                                      optim_input: Any = None, group: Any = None) -> dict:
        """shard_full_optim_state_dict for a dictionary that only rank 0 has (the others pass None):
        rank 0 broadcasts it (through the weights-only object path, so every rank receives the whole
        dictionary for a moment) and each rank keeps its share."""
        model._check_root("scatter_full_optim_state_dict")
        group = model.process_group if group is None else group
        src = dist.get_global_rank(group, 0) if group is not None else 0
        if dist.get_rank() == src and full_optim_state_dict is None:
            raise ValueError("scatter_full_optim_state_dict: rank 0 must pass the full optimizer state dict")
        holder = [full_optim_state_dict]
        dist.broadcast_object_list(holder, src=src, group=group)
        return FullyShardedDataParallel.shard_full_optim_state_dict(holder[0], model, optim_input)

    # --- state dicts -------------------------------------------------------------------------

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module: nn.Module, state_dict_type: StateDictType,
                        state_dict_config: StateDictConfig | None = None) -> Iterator[None]:
        """Within it, state_dict() and load_state_dict() of every FSDP unit in `module` use
        state_dict_type (with its config: FullStateDictConfig for FULL_STATE_DICT, ...)."""
        if not isinstance(state_dict_type, StateDictType):
            raise TypeError(f"FullyShardedDataParallel.state_dict_type: expected a StateDictType, but got "
                            f"{state_dict_type!r}")
        kind = _STATE_DICT_CONFIGS[state_dict_type]
        if state_dict_config is None:
            state_dict_config = kind()
        elif type(state_dict_config) is not kind:
            raise ValueError(f"FullyShardedDataParallel.state_dict_type: {state_dict_type.name} takes a "
                             f"{kind.__name__}, but got {type(state_dict_config).__name__}")
        units = [m for m in module.modules() if isinstance(m, FullyShardedDataParallel)]
        if not units:
            raise ValueError("FullyShardedDataParallel.state_dict_type: the module contains no FSDP unit")
        saved = [(u._state_dict_type, u._state_dict_config) for u in units]
        for u in units:
            u._state_dict_type, u._state_dict_config = state_dict_type, state_dict_config
        try:
            yield
        finally:
            for u, (t, c) in zip(units, saved, strict=True):
                u._state_dict_type, u._state_dict_config = t, c

    def state_dict(self, *args: Any, destination: Any = None, prefix: str = "", keep_vars: bool = False) -> Any:
        """FULL_STATE_DICT (the default): the original parameter names and full values, gathered
        from every rank (every rank must call it); SHARDED_STATE_DICT: the original names, each
        parameter's rows chunked across the ranks as Tensor.chunk(world_size) splits them, this
        rank's chunk as a plain tensor (PyTorch wraps it in a ShardedTensor, which ember does not
        have); LOCAL_STATE_DICT: the units' flat shards under the wrappers' names."""
        if self._state_dict_type == StateDictType.LOCAL_STATE_DICT:
            return super().state_dict(*args, destination=destination, prefix=prefix, keep_vars=keep_vars)
        if args:
            raise TypeError("state_dict() takes its arguments by keyword: destination, prefix, keep_vars")
        full = self._gather_full_params()
        out = OrderedDict() if destination is None else destination
        if getattr(self._state_dict_config, "rank0_only", False) and self._rank != 0:
            return out  # it took part in the gathers
        sharded = self._state_dict_type == StateDictType.SHARDED_STATE_DICT
        for key, kind, m, name in self._entries(prefix):
            if kind == "owned":
                t = full[(id(m), name)]
                if sharded and t.dim() > 0:
                    start, stop = _rows(t.shape[0], self._world, self._rank)
                    t = t[start:stop].clone()
                out[key] = t
            else:
                t = m._parameters[name] if kind == "param" else m._buffers[name]
                out[key] = t if keep_vars else t.detach()
        return out

    def _units(self) -> list[FullyShardedDataParallel]:
        return [m for m in self.modules() if isinstance(m, FullyShardedDataParallel)]

    def _gather_full_params(self) -> dict[tuple[int, str], ember.Tensor]:
        """(id(module), name) -> the full value of every parameter the units in this tree own."""
        values: dict[tuple[int, str], ember.Tensor] = {}
        with ember.no_grad():
            for unit in self._units():  # the same order on every rank: each gather is a collective
                if unit.flat_param is None:
                    continue
                flat = unit._gather(unit.flat_param, None)
                for info in unit._infos:
                    values[(id(info.module), info.name)] = flat[info.offset:info.offset + info.numel].view(info.shape).clone()
                for m, name, i in unit._shared:
                    values[(id(m), name)] = values[(id(unit._infos[i].module), unit._infos[i].name)]
        return values

    def _unchunk(self, chunks: dict[tuple[int, str], ember.Tensor]) -> dict[tuple[int, str], ember.Tensor]:
        """The full parameters from every rank's SHARDED_STATE_DICT chunks: per unit, each rank's
        chunks, flattened and padded to the largest rank's share, travel in one all-gather."""
        full: dict[tuple[int, str], ember.Tensor] = {}
        world, rank = self._world, self._rank
        for unit in self._units():  # the same order on every rank
            if unit.flat_param is None or not all((id(i.module), i.name) in chunks for i in unit._infos):
                continue
            dtype = unit.flat_param.dtype
            rows = [i for i in unit._infos if len(i.shape) > 0]
            for info in unit._infos:
                value = chunks[(id(info.module), info.name)]
                expect = info.shape
                if len(info.shape) > 0:
                    start, stop = _rows(info.shape[0], world, rank)
                    expect = (stop - start, *info.shape[1:])
                if tuple(value.shape) != expect:
                    raise RuntimeError(f"load_state_dict (SHARDED_STATE_DICT): {info.name} of "
                                       f"{type(info.module).__name__} on rank {rank} has shape {tuple(value.shape)}, "
                                       f"but its chunk of a {info.shape} parameter over {world} ranks is {expect}")
                if len(info.shape) == 0:
                    full[(id(info.module), info.name)] = value.to(dtype)
            row_numel = [math.prod(i.shape[1:]) for i in rows]
            share = [sum((_rows(i.shape[0], world, r)[1] - _rows(i.shape[0], world, r)[0]) * n
                         for i, n in zip(rows, row_numel, strict=True)) for r in range(world)]
            width = max(share)
            if width == 0:
                continue
            mine = [chunks[(id(i.module), i.name)].reshape(-1).to(dtype) for i in rows]
            mine.append(ember.zeros(width - share[rank], dtype=dtype))
            gathered = ember.empty(world * width, dtype=dtype)
            dist.all_gather_into_tensor(gathered, ember.cat(mine), group=unit.process_group)
            at = [r * width for r in range(world)]
            pieces: list[list[ember.Tensor]] = [[] for _ in rows]
            for r in range(world):
                for k, (info, n) in enumerate(zip(rows, row_numel, strict=True)):
                    start, stop = _rows(info.shape[0], world, r)
                    pieces[k].append(gathered[at[r]:at[r] + (stop - start) * n])
                    at[r] += (stop - start) * n
            for info, parts in zip(rows, pieces, strict=True):
                full[(id(info.module), info.name)] = ember.cat(parts).view(info.shape)
        return full

    def _entries(self, prefix: str = "") -> list[tuple[str, str, nn.Module, str]]:
        """(original name, kind, module, attribute) for the parameters and buffers of the original
        model, in module order, FSDP wrappers left out of the names. kind: "owned" (in a flat
        parameter), "param" (left out of every unit: ignored_modules), "buffer" (persistent)."""
        owned: dict[int, list[str]] = {}
        for unit in self._units():
            for info in unit._infos:
                owned.setdefault(id(info.module), []).append(info.name)
            for m, name, _ in unit._shared:
                owned.setdefault(id(m), []).append(name)
        out = []

        def visit(m: nn.Module, pre: str) -> None:
            if isinstance(m, FullyShardedDataParallel):
                visit(m._fsdp_wrapped_module, pre)
                return
            out.extend((pre + name, "owned", m, name) for name in owned.get(id(m), []))
            out.extend((pre + name, "param", m, name) for name, p in m._parameters.items() if p is not None)
            out.extend((pre + name, "buffer", m, name) for name, b in m._buffers.items()
                       if b is not None and name not in m._non_persistent_buffers_set)
            for name, c in m._modules.items():
                if c is not None:
                    visit(c, pre + name + ".")

        visit(self, prefix)
        return out

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        """Loads what state_dict() gave under the same StateDictType; under FULL_STATE_DICT every
        rank passes the full dictionary and keeps its shard of it; under SHARDED_STATE_DICT each
        rank passes its own chunks (the same world size), which are all-gathered."""
        if self._state_dict_type == StateDictType.LOCAL_STATE_DICT:
            return super().load_state_dict(state_dict, strict=strict, assign=assign)
        entries = self._entries()
        names = {key for key, *_ in entries}
        missing = [key for key in names if key not in state_dict]
        unexpected = [key for key in state_dict if key not in names]
        if strict and (missing or unexpected):
            raise RuntimeError(f"Error(s) in loading state_dict for FullyShardedDataParallel: missing keys "
                               f"{sorted(missing)}, unexpected keys {unexpected}")
        values: dict[tuple[int, str], ember.Tensor] = {}
        with ember.no_grad():
            for key, kind, m, name in entries:
                if key not in state_dict:
                    continue
                value = state_dict[key]
                if not isinstance(value, ember.Tensor):
                    raise TypeError(f"load_state_dict: expected a tensor for {key}, but got {type(value).__name__}")
                if kind == "owned":
                    values[(id(m), name)] = value
                    continue
                target = m._parameters[name] if kind == "param" else m._buffers[name]
                if tuple(value.shape) != tuple(target.shape):
                    raise RuntimeError(f"load_state_dict: {key} has shape {tuple(value.shape)}, but the model's "
                                       f"has {tuple(target.shape)}")
                target.copy_(value)
            if self._state_dict_type == StateDictType.SHARDED_STATE_DICT:
                values = self._unchunk(values)
            for unit in self._units():
                if unit.flat_param is None or not all((id(i.module), i.name) in values for i in unit._infos):
                    continue  # a unit with a missing entry (strict=False) keeps its values
                parts = []
                for info in unit._infos:
                    value = values[(id(info.module), info.name)]
                    if tuple(value.shape) != info.shape:
                        raise RuntimeError(f"load_state_dict: {info.name} of {type(info.module).__name__} has "
                                           f"shape {tuple(value.shape)}, but the model's has {info.shape}")
                    parts.append(value.reshape(-1).to(unit.flat_param.dtype))
                flat = ember.cat(parts)
                if unit._padded_numel > unit._numel:
                    flat = ember.cat([flat, ember.zeros(unit._padded_numel - unit._numel, dtype=flat.dtype)])
                rank = 0 if unit.sharding_strategy == ShardingStrategy.NO_SHARD else unit._rank
                unit.flat_param.copy_(flat[rank * unit._shard_numel:(rank + 1) * unit._shard_numel])
        return None
