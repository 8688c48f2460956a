"""backward and grad: the Python entry points to the C++ reverse-mode engine (native/, ember/autograd.h).

Below every other part of ember.autograd (and of ember.func, which builds on it); ember.autograd
re-exports these names.
"""

from __future__ import annotations

import itertools
import threading

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


class _Task:
    """One backward()/grad() call under way, as autograd.graph's multi-grad hooks see it: its roots,
    the gradient nodes of its `inputs` (None when every leaf is wanted), and which nodes it runs."""

    _ids = itertools.count(1)

    def __init__(self, roots: tuple, inputs: tuple | None) -> None:
        self.id = next(self._ids)
        self.roots = roots
        self.inputs = inputs
        self._runs: set | None = None
        self._exit: list = []

    def on_exit(self, fn) -> None:
        self._exit.append(fn)

    def will_run(self, node) -> bool:
        """Whether this backward runs `node` (a grad_fn or a leaf's accumulator): it is reachable
        from the roots and, when `inputs` were given, on the way to one of theirs."""
        if self._runs is None:
            self._runs = self._find_runs()
        return node in self._runs

    def _find_runs(self) -> set:
        starts = [_grad_node(r) for r in self.roots if r.requires_grad]
        seen, parents, stack = set(), {}, list(starts)
        while stack:  # every node reachable from the roots, and who points at whom
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            for child, _ in node.next_functions:
                if child is not None:
                    parents.setdefault(child, []).append(node)
                    stack.append(child)
        if self.inputs is None:
            return seen
        # with `inputs`: the nodes on the way to one of theirs (walking back up from them)
        stack = [n for n in (_grad_node(t) for t in self.inputs if t.requires_grad) if n in seen]
        needed: set = set()
        while stack:
            node = stack.pop()
            if node not in needed:
                needed.add(node)
                stack.extend(parents.get(node, ()))
        # A leaf among `inputs` has its gradient captured, not accumulated, and Ember's engine runs no
        # hooks of that leaf then (PyTorch runs them): its accumulator does not count as run.
        return {n for n in needed if n.name() != "AccumulateGrad"}


def _grad_node(tensor):
    """A tensor's grad_fn, or for a leaf that requires grad its gradient accumulator (the node a
    fresh alias of it records an edge to)."""
    if tensor.grad_fn is not None:
        return tensor.grad_fn
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    prev = _C._is_grad_enabled()
    _C._set_grad_enabled(True)
    try:
        return tensor.view_as(tensor).grad_fn.next_functions[0][0]
    finally:
        _C._set_grad_enabled(prev)


class _Tasks(threading.local):
    """The backward()/grad() calls under way on this thread (the engine runs hooks on the thread
    that called backward), innermost last."""

    def __init__(self) -> None:
        self.stack: list = []


_TASKS = _Tasks()


def _current_task() -> _Task:
    if not _TASKS.stack:
        raise AssertionError("expected this hook to be called inside a backward call")
    return _TASKS.stack[-1]


def _run(outputs, grads, keep, create_graph, inputs, accumulate):
    """_C._run_backward, with the call listed in _TASKS while it runs."""
    task = _Task(tuple(outputs), tuple(inputs) if inputs else None)
    _TASKS.stack.append(task)
    try:
        return _C._run_backward(list(outputs), grads, keep, create_graph, list(inputs), accumulate)
    finally:
        _TASKS.stack.pop()
        for fn in task._exit:
            fn()


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
            _run(outputs, grads, keep, create_graph, [], True)
            return
        # backward(inputs=...): gradients reach only these tensors, accumulated into their .grad
        received = _run(outputs, grads, keep, create_graph, wanted, False)
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
    result = _run(outs, _make_grads(outs, _as_tuple(grad_outputs)), keep, create_graph, ins, False)
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
