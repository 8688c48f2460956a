"""ember.utils.hooks (torch.utils.hooks): RemovableHandle (the one class every Ember hook
registration returns, from ember._hooks), unserializable_hook, warn_if_has_hooks, and
BackwardHook, the machinery behind Module.register_full_backward_hook / _pre_hook."""

from __future__ import annotations

import warnings

from .. import _C
from .._hooks import RemovableHandle
from ..autograd.function import Function

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks", "BackwardHook"]


def unserializable_hook(f):
    """Mark f as a hook that is not expected to be serialized: warn_if_has_hooks stays quiet about it."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor) -> None:
    """Warn once per backward hook in tensor._backward_hooks that is not marked unserializable.

    Ember tensors keep their hooks natively, without a Python _backward_hooks table, so for them
    (and for anything else without one) this is a no-op."""
    hooks = getattr(tensor, "_backward_hooks", None)
    if not hooks:
        return
    for k in hooks:
        hook = hooks[k]
        if not hasattr(hook, "__torch_unserializable__"):
            warnings.warn(f"backward hook {hook!r} on tensor will not be serialized.  If this is expected, you can "
                          "decorate the function with @torch.utils.hooks.unserializable_hook to suppress this warning",
                          stacklevel=2)


# ---- module backward hooks ---------------------------------------------------------------------


class _Identity(Function):
    """Passes a module's input or output tensors through unchanged; its backward is where the
    gradients with respect to them are seen (and may be replaced) by the module's hooks."""

    @staticmethod
    def forward(ctx, reached, *tensors):
        ctx.reached = reached
        ctx.set_materialize_grads(False)  # an output backward does not reach stays None, as in PyTorch
        ctx.mark_non_differentiable(*[t for t in tensors if not t.requires_grad])
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return (None, *ctx.reached(grads))


def _pack_with_none(positions: list[int], values, size: int) -> tuple:
    out = [None] * size
    for i, v in zip(positions, values, strict=True):
        out[i] = v
    return tuple(out)


class BackwardHook:
    """A module call's backward hooks (torch.utils.hooks.BackwardHook): setup_input_hook and
    setup_output_hook pass the call's tensors through an identity autograd Function. In backward,
    the gradients with respect to the outputs reach the backward pre-hooks,
    ``hook(module, grad_output) -> new grad_output or None``, then those with respect to the
    inputs reach the full backward hooks, ``hook(module, grad_input, grad_output) -> new
    grad_input or None``. Both tuples have one entry per positional argument / output, None
    where it is not a tensor or gets no gradient, zeros for a tensor input that needs no gradient
    beside one that does (as PyTorch gives). When no input needs a gradient, the full hooks
    run with grad_input all None as soon as grad_output is known."""

    def __init__(self, module, user_hooks, user_pre_hooks) -> None:
        self.module = module
        self.user_hooks = list(user_hooks)
        self.user_pre_hooks = list(user_pre_hooks)
        self.grad_outputs = None
        self.n_inputs = 0
        self.input_tensors_index: list[int] = []
        self.inputs_hooked = False
        self.constant_inputs: dict = {}
        self.n_outputs = 0
        self.output_tensors_index: list[int] = []

    @staticmethod
    def _through(values: tuple, positions: list[int], reached) -> tuple:
        passed = _Identity.apply(reached, *[values[i] for i in positions])
        out = list(values)
        for i, t in zip(positions, passed, strict=True):
            out[i] = t
        return tuple(out)

    def setup_input_hook(self, args: tuple) -> tuple:
        self.n_inputs = len(args)
        self.input_tensors_index = [i for i, a in enumerate(args) if isinstance(a, _C.Tensor)]
        self.inputs_hooked = bool(self.user_hooks) and _C._is_grad_enabled() and any(
            args[i].requires_grad for i in self.input_tensors_index)
        if not self.inputs_hooked:
            return args
        # a tensor input that needs no gradient gets zeros in grad_input, as in PyTorch
        self.constant_inputs = {i: args[i] for i in self.input_tensors_index if not args[i].requires_grad}
        return self._through(args, self.input_tensors_index, self._inputs_reached)

    def setup_output_hook(self, result):
        single = not isinstance(result, tuple)
        outputs = (result,) if single else result
        self.n_outputs = len(outputs)
        self.output_tensors_index = [i for i, o in enumerate(outputs) if isinstance(o, _C.Tensor)]
        if not (_C._is_grad_enabled() and any(outputs[i].requires_grad for i in self.output_tensors_index)):
            return result
        outputs = self._through(outputs, self.output_tensors_index, self._outputs_reached)
        return outputs[0] if single else outputs

    @staticmethod
    def _through_hooks(hooks: list, call, grads: tuple, what: str) -> tuple:
        """grads passed through each hook in turn: call(hook, grads) gives None (keep them) or their
        replacement, which must be as many."""
        for hook in hooks:
            result = call(hook, grads)
            if result is not None:
                result = result if isinstance(result, tuple) else (result,)
                if len(result) != len(grads):
                    raise RuntimeError(f"{what}, got {len(result)}, but expected {len(grads)}")
                grads = result
        return grads

    def _outputs_reached(self, grads: tuple) -> tuple:
        grad_outputs = self._through_hooks(
            self.user_pre_hooks, lambda hook, g: hook(self.module, g),
            _pack_with_none(self.output_tensors_index, grads, self.n_outputs),
            "Backward pre hook returned an invalid number of grad_output")
        self.grad_outputs = grad_outputs
        if not self.inputs_hooked:
            nothing = (None,) * self.n_inputs
            for hook in self.user_hooks:
                result = hook(self.module, nothing, grad_outputs)
                if result is not None and not all(r is None for r in result):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(grad_outputs[i] for i in self.output_tensors_index)

    def _inputs_reached(self, grads: tuple) -> tuple:
        grads = [_C.zeros_like(self.constant_inputs[i]) if g is None and i in self.constant_inputs else g
                 for i, g in zip(self.input_tensors_index, grads, strict=True)]
        grad_inputs = self._through_hooks(
            self.user_hooks, lambda hook, g: hook(self.module, g, self.grad_outputs),
            _pack_with_none(self.input_tensors_index, grads, self.n_inputs),
            "Backward hook returned an invalid number of grad_input")
        self.grad_outputs = None
        return tuple(grad_inputs[i] for i in self.input_tensors_index)
