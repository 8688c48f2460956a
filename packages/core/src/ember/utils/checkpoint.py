"""ember.utils.checkpoint (torch.utils.checkpoint): activation checkpointing. A checkpointed
function keeps none of the tensors its backward needs; backward runs the function again to get
them, trading compute for memory.

Two ways, as in PyTorch (`use_reentrant`):

- reentrant (True, PyTorch's default): `CheckpointFunction`, an autograd Function whose forward
  runs the function under no_grad and whose backward reruns it with grad and calls backward on
  that inner graph; the parameters it reaches get their gradients from that inner backward, so it
  works with `.backward()` only (not autograd.grad or backward(inputs=)), and takes no kwargs;
- non-reentrant (False, recommended): the function runs under saved-tensor hooks that keep only
  a placeholder for each tensor saved for backward (Note [saved-tensor hooks] in the engine); the
  first placeholder unpacked reruns the function under hooks that collect the same tensors, in
  order, and stops as soon as all are in (early_stop). The graph is the ordinary one, so
  autograd.grad, kwargs and nested checkpoints work. With determinism_check="default" a
  recomputed tensor whose shape, dtype or device differs from the original raises CheckpointError.
  Inside a `GraphExecGroup` block, several backward calls over disjoint parts of the graph share
  one rerun.

Both restore the CPU random state (preserve_rng_state) and the autocast state for the rerun, and
run `context_fn`'s second context around it. `debug=True` adds the full list of saved tensors,
forward and rerun, to CheckpointError.

Selective checkpointing (`create_selective_checkpoint_contexts`, as PyTorch 2.4+): a context_fn
whose two contexts are dispatch modes (ember.utils._python_dispatch). In the forward, each op the
policy says to save (CheckpointPolicy.MUST_SAVE / PREFER_SAVE, or True) keeps its output; in the
rerun those ops hand back the kept output instead of running, and every other op runs again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum as _enum  # (private names: this module's namespace holds its API, as the coverage page counts it)
import threading as _threading
import warnings
import weakref as _weakref
from collections import defaultdict as _defaultdict
from collections.abc import Callable as _Callable

import ember

from .. import _C
from .._ops import OpOverload, _find
from ..autograd import _engine
from ..autograd.function import Function
from ..autograd.graph import saved_tensors_hooks
from ._python_dispatch import TorchDispatchMode
from ._pytree import tree_map_only

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "DefaultDeviceType",
           "check_backward_validity", "detach_variable", "get_device_states", "set_device_states",
           "noop_context_fn", "set_checkpoint_debug_enabled", "set_checkpoint_early_stop", "CheckpointPolicy",
           "SelectiveCheckpointContext", "create_selective_checkpoint_contexts", "SAC_IGNORED_OPS",
           "GraphExecGroup"]


class CheckpointError(RuntimeError):
    """A non-reentrant checkpoint's rerun did not save what the first run saved."""


def noop_context_fn():
    """The default context_fn: no context around the forward or the rerun."""
    return contextlib.nullcontext(), contextlib.nullcontext()


class DefaultDeviceType:
    """The device type whose random state a checkpoint preserves beside the CPU's. Ember runs on
    the CPU only, so there is no other state to preserve; the setting is kept for code that sets
    and reads it."""

    _default_device_type = "cpu"

    @staticmethod
    def set_device_type(device: str = "cuda") -> None:
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type() -> str:
        return DefaultDeviceType._default_device_type


def detach_variable(inputs: tuple) -> tuple:
    """The tensors of `inputs` detached, each keeping its requires_grad (other values as they are)."""
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for value in inputs:
        if not isinstance(value, _C.Tensor):
            out.append(value)
            continue
        detached = value.detach()
        detached.requires_grad = value.requires_grad
        out.append(detached)
    return tuple(out)


def check_backward_validity(inputs) -> None:
    if not any(isinstance(value, _C.Tensor) and value.requires_grad for value in inputs):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


def get_device_states(*args) -> tuple[list, list]:
    """The accelerator devices among args' tensors and their random states: none, on the CPU."""
    devices = sorted({a.device for a in args if isinstance(a, _C.Tensor) and a.device.type != "cpu"}, key=str)
    if devices:
        raise RuntimeError(f"get_device_states: Ember has no random state for {devices[0]}")
    return [], []


def set_device_states(devices, states, *, device_type=None) -> None:
    if list(devices) or list(states):
        raise RuntimeError("set_device_states: Ember runs on the CPU only and has no device random states to set")


# ---- the rerun's surroundings: random and autocast state ------------------------------------------


class _RunState:
    """What a rerun must see as the first run did: the CPU random state (when preserved) and the
    CPU autocast state."""

    def __init__(self, preserve_rng_state: bool) -> None:
        self.rng = ember.get_rng_state() if preserve_rng_state else None
        self.autocast = (ember.is_autocast_cpu_enabled(), ember.get_autocast_cpu_dtype(),
                         ember.is_autocast_cache_enabled())

    @contextlib.contextmanager
    def restored(self):
        enabled, dtype, cache = self.autocast
        with ember.random.fork_rng(enabled=self.rng is not None), \
                ember.autocast("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache):
            if self.rng is not None:
                ember.set_rng_state(self.rng)
            yield


# ---- reentrant ----------------------------------------------------------------------------------


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward without a graph, backward by rerunning with one."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.state = _RunState(preserve_rng_state)
        ctx.inputs = [None if isinstance(a, _C.Tensor) else a for a in args]
        ctx.tensor_positions = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, _C.Tensor)))
        with ember.no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        task = _engine._TASKS.stack[-1] if _engine._TASKS.stack else None
        if task is not None and task.inputs is not None:
            raise RuntimeError("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                               "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
                               "set use_reentrant=False, or call .backward() without passing the `inputs` argument.")
        inputs = list(ctx.inputs)
        for i, tensor in zip(ctx.tensor_positions, ctx.saved_tensors, strict=True):
            inputs[i] = tensor
        detached = detach_variable(tuple(inputs))
        with ctx.state.restored(), ember.enable_grad():
            outputs = ctx.run_function(*detached)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [(out, g) for out, g in zip(outputs, grads, strict=False)
                 if isinstance(out, _C.Tensor) and out.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        ember.autograd.backward([out for out, _ in pairs], [g for _, g in pairs])
        return (None, None, *(d.grad if isinstance(d, _C.Tensor) else None for d in detached))


# ---- non-reentrant ------------------------------------------------------------------------------


class _Switches:
    """set_checkpoint_early_stop / set_checkpoint_debug_enabled overrides (None: per call)."""

    early_stop: bool | None = None
    debug: bool | None = None


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Within it, non-reentrant checkpoints stop (True) or do not stop (False) their rerun as soon
    as every saved tensor is recomputed, whatever their early_stop argument says."""
    prev, _Switches.early_stop = _Switches.early_stop, bool(enable)
    try:
        yield
    finally:
        _Switches.early_stop = prev


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Within it, non-reentrant checkpoints run with debug on (True) or off (False); None leaves it
    to each call's debug argument."""
    prev, _Switches.debug = _Switches.debug, enabled
    try:
        yield
    finally:
        _Switches.debug = prev


class GraphExecGroup:
    """Backward calls made inside one ``with GraphExecGroup():`` block rerun each non-reentrant
    checkpointed region at most once between them, as torch.utils.checkpoint.GraphExecGroup
    (PyTorch 2.9+): the calls must use disjoint saved activations (a second use raises
    CheckpointError), e.g. ``autograd.grad`` of one output and then of another with
    ``retain_graph=True``. Blocks do not nest; the current one is per thread. Reentrant
    checkpoints ignore it."""

    def __enter__(self) -> GraphExecGroup:
        current = GraphExecGroup._get_current_group()
        if current is not None:
            raise RuntimeError(f"GraphExecGroup contexts cannot be nested. Already inside group {current}")
        _current_group.value = self
        return self

    def __exit__(self, *args: object) -> None:
        _current_group.value = None

    @classmethod
    def _get_current_group(cls) -> GraphExecGroup | None:
        return getattr(_current_group, "value", None)


_current_group = _threading.local()


class _StopRecomputation(Exception):  # noqa: N818 - a signal, not an error
    pass


class _Placeholder:
    """What a checkpointed forward keeps instead of a saved tensor: its position in save order."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index


def _metadata(t) -> tuple:
    return tuple(t.shape), t.dtype, t.device


class _Frame:
    """One non-reentrant checkpoint call: the metadata of the tensors its forward saved and, after
    a rerun, the recomputed tensors not yet handed to backward."""

    def __init__(self, rerun, early_stop: bool, check: bool, debug: bool) -> None:
        self.rerun = rerun
        self.early_stop = early_stop
        self.check = check
        self.debug = debug
        self.saved: list = []
        self.recomputed: dict = {}
        # a GraphExecGroup's rerun, kept while the group lives
        self.by_group: _weakref.WeakKeyDictionary = _weakref.WeakKeyDictionary()

    def pack(self, tensor) -> _Placeholder:
        self.saved.append(_metadata(tensor))
        return _Placeholder(len(self.saved) - 1)

    def unpack(self, placeholder: _Placeholder):
        group = GraphExecGroup._get_current_group()
        if group is None:
            if placeholder.index not in self.recomputed:
                self.recomputed = self._recompute()
            return self.recomputed.pop(placeholder.index)
        # Inside a GraphExecGroup every backward call shares one rerun, and each tensor it kept
        # is handed out once.
        kept = self.by_group.get(group)
        if kept is None:
            kept = self.by_group[group] = self._recompute()
        if placeholder.index not in kept:
            raise CheckpointError(
                "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already unpacked once. "
                "Performing two backward calls that overlap (i.e. require the same saved activation in order to "
                "compute gradients) is not allowed while under the torch.utils.checkpoint.GraphExecGroup context. "
                "If you are calling ctx.saved_tensors in backward, make sure to do so only once. Otherwise please "
                "open an issue with details on your use case.")
        return kept.pop(placeholder.index)

    def _recompute(self) -> dict:
        got: list = []

        def pack(tensor):
            if len(got) >= len(self.saved):
                raise CheckpointError("torch.utils.checkpoint: trying to save more tensors during recomputation than "
                                      "during the original forward pass." + self._listing(got))
            got.append(tensor.detach())
            if self.early_stop and len(got) == len(self.saved):
                raise _StopRecomputation
            return None

        def unpack(_):
            raise CheckpointError("torch.utils.checkpoint: a tensor saved during the recomputation was used by it")

        try:
            with saved_tensors_hooks(pack, unpack):
                self.rerun()
        except _StopRecomputation:
            pass
        if len(got) != len(self.saved):
            raise CheckpointError("torch.utils.checkpoint: A different number of tensors was saved during the original "
                                  f"forward and recomputation.\nNumber of tensors saved during forward: "
                                  f"{len(self.saved)}\nNumber of tensors saved during recomputation: {len(got)}"
                                  + self._listing(got))
        if self.check:
            wrong = [i for i, t in enumerate(got) if _metadata(t) != self.saved[i]]
            if wrong:
                lines = "".join(f"\ntensor at position {i}:\nsaved metadata: {self._describe(self.saved[i])}\n"
                                f"recomputed metadata: {self._describe(_metadata(got[i]))}" for i in wrong)
                raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                      "different metadata than during the forward pass." + lines + self._listing(got))
        return dict(enumerate(got))

    @staticmethod
    def _describe(meta) -> str:
        shape, dtype, device = meta
        return f"{{'shape': {list(shape)}, 'dtype': {dtype}, 'device': {device}}}"

    def _listing(self, got) -> str:
        if not self.debug:
            return ("\nTo see the tensors saved by both runs, pass debug=True to checkpoint() or use "
                    "set_checkpoint_debug_enabled(True).")
        forward = "".join(f"\n  {i}: {self._describe(m)}" for i, m in enumerate(self.saved))
        rerun = "".join(f"\n  {i}: {self._describe(_metadata(t))}" for i, t in enumerate(got))
        return f"\nSaved during the forward pass:{forward}\nSaved during the recomputation:{rerun}"


def _checkpoint_without_reentrant(function, preserve_rng_state, context_fn, determinism_check, debug, early_stop,
                                  args, kwargs):
    forward_context, recompute_context = context_fn()
    state = _RunState(preserve_rng_state)

    def rerun():
        # The inputs detached (keeping requires_grad), so the rerun's graph is a separate one.
        detached = detach_variable(tuple(args))
        with state.restored(), ember.enable_grad(), recompute_context:
            function(*detached, **kwargs)

    frame = _Frame(rerun, early_stop if _Switches.early_stop is None else _Switches.early_stop,
                   determinism_check == "default", debug if _Switches.debug is None else _Switches.debug)
    with saved_tensors_hooks(frame.pack, frame.unpack), forward_context:
        return function(*args, **kwargs)


def _resolve_reentrant(use_reentrant):
    if use_reentrant is None:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
                      "use_reentrant=False is recommended (Ember's checkpoint defaults to True, as PyTorch 2.13 does).",
                      stacklevel=3)
        return True
    return bool(use_reentrant)


def checkpoint(function, *args, use_reentrant: bool | None = None, context_fn=noop_context_fn,
               determinism_check: str = "default", debug: bool = False, early_stop: bool = True, **kwargs):
    """function(*args, **kwargs), keeping none of the tensors its backward needs: backward reruns it
    (see this module's docstring). preserve_rng_state (a keyword, default True) replays the CPU
    random state, so dropout draws the same mask in the rerun."""
    preserve = kwargs.pop("preserve_rng_state", True)
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be one of ['default', 'none'], but got {determinism_check}")
    if _resolve_reentrant(use_reentrant):
        if context_fn is not noop_context_fn or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return CheckpointFunction.apply(function, preserve, *args)
    return _checkpoint_without_reentrant(function, preserve, context_fn, determinism_check, debug, early_stop, args,
                                         kwargs)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs):  # noqa: A002
    """Runs the modules (or functions) in order, as `segments` pieces: every piece but the last is
    checkpointed, the last runs normally."""
    use_reentrant = _resolve_reentrant(use_reentrant)
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if isinstance(functions, ember.nn.Sequential):
        functions = list(functions.children())
    functions = list(functions)

    def run(start: int, stop: int):
        def forward(x):
            for fn in functions[start:stop]:
                x = fn(x)
            return x
        return forward

    size = len(functions) // segments
    start = 0
    for _ in range(segments - 1):
        input = checkpoint(run(start, start + size), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
        start += size
    return run(start, len(functions))(input)


# ---- selective checkpointing -------------------------------------------------------------------


class CheckpointPolicy(_enum.Enum):
    """What selective checkpointing does with one op's output: keep it from the forward (SAVE) or
    compute it again in the rerun (RECOMPUTE). MUST_ and PREFER_ differ only to a compiler; eagerly
    both are followed."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3


@dataclasses.dataclass
class SelectiveCheckpointContext:
    """The first argument of a selective-checkpoint policy: whether the op runs in the rerun."""

    is_recompute: bool


# Ops that never take part: they make no values worth keeping.
SAC_IGNORED_OPS = {op for op in (_find("aten::detach"),) if op is not None}


def _saves(policy) -> bool:
    if isinstance(policy, bool):  # True keeps the output, as PyTorch reads a bool
        return policy
    if not isinstance(policy, CheckpointPolicy):
        raise TypeError(f"a selective checkpoint policy must return a CheckpointPolicy or a bool, but got "
                        f"{type(policy).__name__}")
    return policy in (CheckpointPolicy.MUST_SAVE, CheckpointPolicy.PREFER_SAVE)


class _Kept:
    """One kept tensor and its version when kept: a write to it before the rerun is an error
    unless the caller allows it (allow_cache_entry_mutation)."""

    __slots__ = ("tensor", "version")

    def __init__(self, tensor) -> None:
        self.tensor = tensor.detach()  # its own alias: the rerun's autograd records onto that, not the forward's
        self.version = tensor._version

    def get(self, allow_mutation: bool):
        if not allow_mutation and self.tensor._version != self.version:
            raise RuntimeError("Tensor cached during selective activation checkpoint has been mutated")
        return self.tensor.detach()


class _CachingMode(TorchDispatchMode):
    """The forward's context: runs each op and keeps the outputs the policy saves."""

    def __init__(self, policy_fn: _Callable, storage: dict) -> None:
        super().__init__()
        self.policy_fn = policy_fn
        self.storage = storage

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in SAC_IGNORED_OPS:
            return func(*args, **kwargs)
        keep = _saves(self.policy_fn(SelectiveCheckpointContext(is_recompute=False), func, *args, **kwargs))
        out = func(*args, **kwargs)
        if keep:
            self.storage[func].append(tree_map_only(_C.Tensor, _Kept, out))
        return out


class _CachedMode(TorchDispatchMode):
    """The rerun's context: ops the policy saves hand back the forward's outputs, in order."""

    def __init__(self, policy_fn: _Callable, storage: dict, allow_cache_entry_mutation: bool) -> None:
        super().__init__()
        self.policy_fn = policy_fn
        self.storage = storage
        self.allow_mutation = allow_cache_entry_mutation

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in SAC_IGNORED_OPS:
            return func(*args, **kwargs)
        if not _saves(self.policy_fn(SelectiveCheckpointContext(is_recompute=True), func, *args, **kwargs)):
            return func(*args, **kwargs)
        kept = self.storage.get(func)
        if kept is None:
            raise RuntimeError(f"{func} encountered during backward, but not found in storage")
        if not kept:
            raise RuntimeError("Trying to backward an extra time. You are only allowed to backward once on any region "
                               "computed under selective activation checkpoint.")
        return tree_map_only(_Kept, lambda k: k.get(self.allow_mutation), kept.pop(0))


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation: bool = False):
    """The (forward, rerun) contexts of selective checkpointing, for checkpoint(...,
    use_reentrant=False, context_fn=lambda: create_selective_checkpoint_contexts(...)).

    `policy_fn_or_list` is a list of ops to save (``ember.ops.aten.mm``, ...; every other op is
    recomputed) or a function ``policy(ctx, func, *args, **kwargs)`` returning a CheckpointPolicy
    (or a bool, True meaning save). A kept output written to before the rerun raises, unless
    `allow_cache_entry_mutation`."""
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not isinstance(op, OpOverload):
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got {op} of type {type(op)}. "
                                 "If providing an OpOverloadPacket, use its .default overload instead.")
        saved_ops = list(policy_fn_or_list)

        def policy_fn(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in saved_ops else CheckpointPolicy.PREFER_RECOMPUTE
    elif callable(policy_fn_or_list):
        policy_fn = policy_fn_or_list
    else:
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    storage: dict = _defaultdict(list)
    return _CachingMode(policy_fn, storage), _CachedMode(policy_fn, storage, allow_cache_entry_mutation)
