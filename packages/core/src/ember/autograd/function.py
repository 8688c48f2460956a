"""ember.autograd.Function: ops written in Python with their own backward (torch.autograd.Function).

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * y

    y = Exp.apply(x)

forward runs without recording; when an input requires grad, a node calling `backward` becomes the
outputs' grad_fn (see _C._record_function).
"""

from __future__ import annotations

from .. import _C
from .grad_mode import no_grad
from .graph import _current_hooks


class FunctionCtx:
    """The `ctx` of forward/backward: saved tensors and flags."""

    def __init__(self) -> None:
        self._saved: tuple = ()
        self._saved_versions: tuple = ()
        self._dirty: tuple = ()
        self._non_differentiable: tuple = ()
        self.materialize_grads = True
        self.needs_input_grad: tuple = ()

    def save_for_backward(self, *tensors) -> None:
        for t in tensors:
            if t is not None and not isinstance(t, _C.Tensor):
                raise TypeError(f"save_for_backward can only save tensors or None, but got {type(t).__name__}")
        hooks = _current_hooks()  # autograd.graph.saved_tensors_hooks in effect: pack now, unpack on use
        if hooks is None:
            self._saved = tensors
            self._saved_versions = tuple(None if t is None else t._version for t in tensors)
            return
        # as in PyTorch, no version check under hooks: what they keep is what backward reads
        pack, unpack = hooks
        self._saved = tuple(None if t is None else _Packed(pack(t), unpack) for t in tensors)
        self._saved_versions = (None,) * len(tensors)

    @property
    def saved_tensors(self) -> tuple:
        for t, version in zip(self._saved, self._saved_versions, strict=True):
            if version is not None and t._version != version:
                raise RuntimeError(f"one of the variables needed for gradient computation has been modified by an "
                                   f"inplace operation: [{t.dtype} tensor of shape {list(t.shape)}], saved by "
                                   f"{type(self).__name__}, is at version {t._version}; expected version {version} "
                                   f"instead.")
        return tuple(s.unpacked() if isinstance(s, _Packed) else s for s in self._saved)

    def mark_dirty(self, *tensors) -> None:
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        self._non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        self.materialize_grads = bool(value)


class _Packed:
    """A tensor saved under saved_tensors_hooks: what pack_hook made of it, and the unpack_hook."""

    def __init__(self, packed, unpack) -> None:
        self.packed = packed
        self.unpack = unpack

    def unpacked(self):
        t = self.unpack(self.packed)
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                            f"{type(t).__name__}")
        return t


def _contains(group: tuple, t) -> bool:
    return any(t is g for g in group)


class Function:
    """Subclass with staticmethods forward(ctx, *args) and backward(ctx, *grads); call .apply().
    forward may instead take (*args) with a separate setup_context(ctx, inputs, output)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use it "
                                  "with forward mode AD.")

    # vmap: generate_vmap_rule=True runs forward/backward/jvp on the batched tensors themselves
    # (every op inside batches itself); otherwise the vmap staticmethod says how to batch.
    generate_vmap_rule = False

    @staticmethod
    def vmap(info, in_dims, *args):
        raise NotImplementedError("To use autograd.Function with vmap, you must either override the vmap staticmethod "
                                  "or set generate_vmap_rule=True.")

    @classmethod
    def apply(cls, *args, **kwargs):
        level = max((_C._vmap_info(a)[0] for a in args if isinstance(a, _C.Tensor) and _C._vmap_info(a) is not None),
                    default=0)
        if level and not cls.generate_vmap_rule:
            return _apply_vmap_staticmethod(cls, level, args, kwargs)
        return cls._apply_unbatched(*args, **kwargs)

    @classmethod
    def _apply_unbatched(cls, *args, **kwargs):
        ctx = type(cls.__name__ + "Backward", (FunctionCtx,), {})()
        ctx.needs_input_grad = tuple(isinstance(a, _C.Tensor) and a.requires_grad for a in args)
        separate_setup = getattr(cls, "setup_context", None) is not None  # Function itself has none
        prev = _C._is_grad_enabled()
        # forward sees primals only (its ops neither record nor propagate tangents); jvp does that
        tangents = [_C._unpack_dual(a)[1] if isinstance(a, _C.Tensor) else None for a in args]
        was_paused = _C._set_forward_ad_paused(True)
        try:
            with no_grad():
                output = cls.forward(*args, **kwargs) if separate_setup else cls.forward(ctx, *args, **kwargs)
        finally:
            _C._set_forward_ad_paused(was_paused)
        if separate_setup:
            cls.setup_context(ctx, args, output)
        single = not isinstance(output, tuple)
        outputs = (output,) if single else output
        if any(t is not None for t in tangents):
            outputs = _forward_tangents(cls, ctx, args, outputs, tangents)
            output = outputs[0] if single else outputs
        tensor_inputs = [a for a in args if isinstance(a, _C.Tensor)]
        if not (prev and any(t.requires_grad for t in tensor_inputs)):
            return output
        out_tensors = [o for o in outputs if isinstance(o, _C.Tensor)]
        n_out = len(out_tensors)
        dirty = [_contains(ctx._dirty, o) for o in out_tensors]
        non_diff = [_contains(ctx._non_differentiable, o) for o in out_tensors]

        def run_backward(grads):
            # An output that received no gradient arrives as zeros, or as None after
            # ctx.set_materialize_grads(False) (the node is recorded with that flag).
            result = cls.backward(ctx, *grads[:n_out])
            result = result if isinstance(result, tuple) else (result,)
            if len(result) != len(args):
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients "
                                   f"(expected {len(args)}, got {len(result)})")
            picked = [g for g, a in zip(result, args, strict=True) if isinstance(a, _C.Tensor)]
            for g in picked:
                if g is not None and not isinstance(g, _C.Tensor):
                    raise TypeError(f"function {cls.__name__}Backward returned a gradient of type "
                                    f"{type(g).__name__}, expected a Tensor or None")
            return picked

        recorded = _C._record_function(cls.__name__ + "Backward", run_backward, tensor_inputs, out_tensors, dirty,
                                       non_diff, materialize_grads=ctx.materialize_grads)
        it = iter(recorded)
        wrapped = tuple(next(it) if isinstance(o, _C.Tensor) else o for o in outputs)
        return wrapped[0] if single else wrapped


class VmapInfo:
    """What a Function's vmap staticmethod learns about the vmap it runs under."""

    def __init__(self, batch_size: int, randomness: str) -> None:
        self.batch_size = batch_size
        self.randomness = randomness


def _apply_vmap_staticmethod(cls, level: int, args, kwargs):
    """Takes the batch of `level` off the arguments (differentiably), calls cls.vmap(info,
    in_dims, *args) -> (outputs, out_dims), and puts the batch back on the outputs."""
    from ..func._vmap import RANDOMNESS_OF_LEVEL

    if cls.vmap is Function.vmap:
        raise RuntimeError("To use autograd.Function with vmap, you must either override the vmap staticmethod or "
                           "set generate_vmap_rule=True.")
    unwrapped, in_dims, size = [], [], None
    for a in args:
        info = _C._vmap_info(a) if isinstance(a, _C.Tensor) else None
        if info is not None and info[0] == level:
            _, bdim, value = info
            size = value.shape[bdim]
            unwrapped.append(_C._remove_batch_dim(a, level, size, 0))
            in_dims.append(0)
        else:
            unwrapped.append(a)
            in_dims.append(None)
    result = cls.vmap(VmapInfo(size, RANDOMNESS_OF_LEVEL.get(level, "error")), tuple(in_dims), *unwrapped, **kwargs)
    return _rebatch(f"{cls.__name__}.vmap", result, level, size)


def _rebatch(what: str, result, level: int, size: int):
    """A vmap rule's (outputs, out_dims) with the batch of `level` put back on the outputs (an
    output whose out_dim is None is the same for every element: expanded)."""
    if not (isinstance(result, tuple) and len(result) == 2):
        raise RuntimeError(f"{what} must return a tuple (outputs, out_dims), got {type(result).__name__}")
    outputs, out_dims = result
    single = not isinstance(outputs, tuple)
    outs = (outputs,) if single else outputs
    dims = (out_dims,) * len(outs) if out_dims is None or isinstance(out_dims, int) else tuple(out_dims)
    if len(dims) != len(outs):
        raise RuntimeError(f"{what} returned {len(outs)} outputs but {len(dims)} out_dims")
    wrapped = []
    for out, d in zip(outs, dims, strict=True):
        if not isinstance(out, _C.Tensor):
            wrapped.append(out)
            continue
        if d is None:  # the same for every element of the batch
            out = _C.expand(_C.unsqueeze(out, 0), [size] + list(out.shape))
            d = 0
        wrapped.append(_C._add_batch_dim(out, d, level))
    return wrapped[0] if single else tuple(wrapped)


def _forward_tangents(cls, ctx, args, outputs, tangents):
    """Forward mode: gives the outputs the tangents cls.jvp computes from the inputs' tangents."""
    if ctx.materialize_grads:
        tangents = [_C.zeros_like(a) if t is None and isinstance(a, _C.Tensor) and (a.dtype.is_floating_point or
                                                                                   a.dtype.is_complex) else t
                    for a, t in zip(args, tangents, strict=True)]
    result = cls.jvp(ctx, *tangents)
    result = result if isinstance(result, tuple) else (result,)
    if len(result) != len(outputs):
        raise RuntimeError(f"function {cls.__name__}.jvp returned an incorrect number of tangents (expected "
                           f"{len(outputs)}, got {len(result)})")
    marked = []
    for out, tangent in zip(outputs, result, strict=True):
        if isinstance(out, _C.Tensor) and not _contains(ctx._dirty, out) and any(out is a for a in args):
            out = out.view_as(out)  # an input returned as is: the tangent goes on a new view
        if isinstance(out, _C.Tensor) and tangent is not None and not _contains(ctx._non_differentiable, out):
            if not isinstance(tangent, _C.Tensor) or list(tangent.shape) != list(out.shape):
                raise RuntimeError(f"function {cls.__name__}.jvp returned an invalid tangent: expected a Tensor of "
                                   f"shape {list(out.shape)}")
            _C._set_tangent(out, tangent)
        marked.append(out)
    return tuple(marked)


def once_differentiable(fn):
    """Runs backward without recording, so differentiating it again raises instead of being wrong."""
    return no_grad()(fn)
