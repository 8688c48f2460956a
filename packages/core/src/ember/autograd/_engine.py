"""backward and grad: the Python entry points to the C++ reverse-mode engine (native/, ember/autograd.h).

Below every other part of ember.autograd (and of ember.func, which builds on it); ember.autograd
re-exports these names.
"""

from __future__ import annotations

from .. import _C


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    return tuple(x) if isinstance(x, (list, tuple)) else (x,)


def _make_grads(outputs: tuple, grad_outputs: tuple) -> list:
    grads = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if i < len(grad_outputs) else None
        if g is None:
            if out.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = _C.ones_like(out)
        elif not isinstance(g, _C.Tensor):
            raise TypeError(f"gradients must be Tensors or None, but got {type(g).__name__}")
        grads.append(g)
    return grads


# The backward() calls under way, innermost last: None when every leaf accumulates into .grad, else
# the list of `inputs`. A backward that makes a sparse gradient for a dense leaf hands it straight
# to .grad when that leaf is accumulating (Note [sparse .grad] in ember/sparse/__init__.py);
# autograd.grad() is not listed, so there it returns a dense gradient instead.
_GRAD_SINKS: list = []


def _accumulates_into_grad(t) -> bool:
    if not _GRAD_SINKS:
        return False
    wanted = _GRAD_SINKS[-1]
    return wanted is None or any(t is w for w in wanted)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None) -> None:
    """Accumulates d(tensors)/d(leaf) into each leaf's .grad (only `inputs`' when given)."""
    outputs = _as_tuple(tensors)
    grads = _make_grads(outputs, _as_tuple(grad_tensors))
    keep = create_graph if retain_graph is None else retain_graph
    wanted = list(_as_tuple(inputs))
    if inputs is not None and not wanted:
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    _GRAD_SINKS.append(wanted or None)
    try:
        if not wanted:
            _C._run_backward(list(outputs), grads, keep, create_graph, [], True)
            return
        # backward(inputs=...): gradients reach only these tensors, accumulated into their .grad
        received = _C._run_backward(list(outputs), grads, keep, create_graph, wanted, False)
    finally:
        _GRAD_SINKS.pop()
    for tensor, g in zip(wanted, received, strict=True):
        if g is not None:
            g = g if create_graph else g.detach().clone()
            tensor.grad = g if tensor.grad is None else g + tensor.grad  # dense + a sparse .grad works too


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False) -> tuple:
    """The gradients of `outputs` with respect to `inputs` (a tuple), leaving .grad untouched."""
    outs = _as_tuple(outputs)
    if is_grads_batched:  # dim 0 of every grad_output is a batch: one vmapped backward
        return _batched_grad(outs, _as_tuple(inputs), _as_tuple(grad_outputs), retain_graph, create_graph,
                             allow_unused, materialize_grads)
    ins = _as_tuple(inputs)
    if not ins:
        raise RuntimeError("grad requires at least one input")
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    if materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True")
    keep = create_graph if retain_graph is None else retain_graph
    result = _C._run_backward(list(outs), _make_grads(outs, _as_tuple(grad_outputs)), keep, create_graph,
                              list(ins), False)
    for i, g in enumerate(result):
        if g is None:
            if materialize_grads:
                result[i] = _C.zeros_like(ins[i])
            elif not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                                   "Set allow_unused=True if this is the desired behavior.")
    return tuple(result)


def _batched_grad(outs: tuple, ins: tuple, grad_outputs: tuple, retain_graph, create_graph, allow_unused,
                  materialize_grads) -> tuple:
    from ..func._vmap import vmap

    if len(grad_outputs) != len(outs) or any(g is None for g in grad_outputs):
        raise RuntimeError("If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the "
                           "batch dimension. The sizes of the remaining dimensions are expected to match the shape of "
                           "corresponding output, but a grad_output was None or missing.")
    for i, (o, g) in enumerate(zip(outs, grad_outputs, strict=True)):
        if g.dim() == 0 or tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(f"If `is_grads_batched=True`, we interpret the first dimension of each grad_output as "
                               f"the batch dimension. The sizes of the remaining dimensions are expected to match the "
                               f"shape of corresponding output, but a mismatch was detected: grad_output[{i}] has a "
                               f"shape of {list(g.shape)} and output[{i}] has a shape of {list(o.shape)}.")
    size = grad_outputs[0].shape[0] if grad_outputs else 0
    if size == 0:  # nothing to map over: empty results of the inputs' shapes
        return tuple(_C.zeros([0] + list(x.shape), dtype=x.dtype) for x in ins)

    unused: list = []

    def one(*gs):
        result = grad(outs, ins, gs, retain_graph=retain_graph, create_graph=create_graph, allow_unused=True)
        unused[:] = [r is None for r in result]
        return tuple(_C.zeros_like(x) if r is None else r for r, x in zip(result, ins, strict=True))

    results = vmap(one)(*grad_outputs)  # batching sits below autograd: one backward for the whole batch
    allow = materialize_grads if allow_unused is None else allow_unused
    if any(unused) and not (allow or materialize_grads):
        raise RuntimeError("One of the differentiated Tensors appears to not have been used in the graph. "
                           "Set allow_unused=True if this is the desired behavior.")
    return tuple(None if was_unused and not materialize_grads else r
                 for r, was_unused in zip(results, unused, strict=True))
