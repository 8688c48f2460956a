"""Derivatives of whole functions (torch.autograd.functional's API): vjp, jvp, jacobian, hessian,
vhp and hvp, built on reverse mode (ember.autograd.grad).

Inputs and outputs are a Tensor or a tuple of Tensors, and results keep that structure: a tuple
where the user gave one, a bare Tensor where not, and for jacobian/hessian a tuple of tuples
indexed [output][input]. With strict=False, an input that an output does not depend on gets a
zero result; strict=True raises instead. create_graph=True makes the results differentiable with
respect to inputs that require grad; otherwise results carry no graph.

jvp and hvp use the double-backward trick: the vector-Jacobian product u -> J^T u is linear in u,
so differentiating it with respect to a dummy u (any value; zeros here) in direction v gives J v.
jacobian/hessian with vectorize=True run one batched backward per output (grad with
is_grads_batched, on vmap); strategy="forward-mode" (vectorize=True only, as in PyTorch) uses
ember.func.jacfwd.
"""

from __future__ import annotations

from .. import _C
from . import _engine, grad_mode

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _tensors(value, arg_name: str, fn_name: str) -> tuple[bool, tuple]:
    """(whether value was a tuple, value as a tuple of Tensors); TypeError for anything else."""
    is_tuple = isinstance(value, tuple)
    items = value if is_tuple else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, _C.Tensor):
            where = f"the value at index {i}" if is_tuple else f"the given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                            f"{where} has type {type(item)}.")
    return is_tuple, items


def _prepare(tensors: tuple, create_graph: bool, need_graph: bool) -> tuple:
    """New tensor objects for the user's function. Always new ones, so that a tensor the function
    captures from outside is told apart from the same tensor passed as an input; a differentiable
    alias when create_graph keeps the link to the caller's graph, else a detached copy. A tangent
    (forward mode around this call, as in forward-over-reverse Hessians) stays on the copy."""
    def prepared(t):
        if create_graph and t.requires_grad:
            return t.view_as(t)
        copy = t.detach().requires_grad_(need_graph)
        tangent = _C._unpack_dual(t)[1]
        if tangent is not None:
            _C._set_tangent(copy, tangent)
        return copy
    return tuple(prepared(t) for t in tensors)


def _finish(results: tuple, create_graph: bool) -> tuple:
    """Without create_graph nothing returned carries history (nested tuples included)."""
    if create_graph:
        return results
    return tuple(r.detach() if isinstance(r, _C.Tensor) else _finish(r, False) for r in results)


def _unpack(results: tuple, was_tuple):
    """Undoes _tensors: was_tuple is one flag, or (outputs were a tuple, inputs were a tuple)."""
    if isinstance(was_tuple, tuple):
        outer, inner = was_tuple
        if not inner:
            results = tuple(r[0] for r in results)
        return results if outer else results[0]
    return results if was_tuple else results[0]


def _check_v(v: tuple, other: tuple, other_is_tuple: bool) -> None:
    if len(v) != len(other):
        if other_is_tuple:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(other)} but got {len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (vi, oi) in enumerate(zip(v, other, strict=True)):
        if tuple(vi.shape) != tuple(oi.shape):
            entry = f"Entry {i} in " if other_is_tuple else ""
            raise RuntimeError(f"{entry}v has invalid size: should be {tuple(oi.shape)} but got {tuple(vi.shape)}.")


def _strict_requires_grad(tensors: tuple, what: str, strict: bool) -> None:
    """In strict mode, every tensor of `what` (one stage of the computation) must carry a graph."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(f"The output of the user-provided function is independent of input {i}. "
                               "This is not allowed in strict mode.")
        if t.requires_grad:
            continue
        if what == "outputs":
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The "
                               "outputs must be computed in a differentiable manner from the input when running "
                               "in strict mode.")
        if what == "grad_inputs":
            raise RuntimeError(f"The gradient with respect to input {i} is independent of the inputs of the "
                               "user-provided function. This is not allowed in strict mode.")
        raise RuntimeError("While computing the hessian, found that the jacobian of the user-provided function with "
                           f"respect to input {i} is independent of the input. This is not allowed in strict mode. "
                           "You should ensure that your function is twice differentiable and that the jacobian "
                           "depends on the inputs (this would be violated by a linear function for example).")


def _grad(outputs: tuple, inputs: tuple, grad_outputs: tuple | None = None, create_graph: bool = False,
          retain_graph: bool | None = None) -> tuple:
    """autograd.grad over the outputs that carry a graph (None entries allowed); None for each input
    no output depends on."""
    seeds = grad_outputs if grad_outputs is not None else (None,) * len(outputs)
    live = [(o, s) for o, s in zip(outputs, seeds, strict=True) if o is not None and o.requires_grad]
    if not live:
        return (None,) * len(inputs)
    outs, seeds = zip(*live, strict=True)
    return _engine.grad(list(outs), list(inputs), list(seeds), retain_graph=retain_graph,
                          create_graph=create_graph, allow_unused=True)


# Why a result can be missing, per stage, for strict mode's error messages.
_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the grad_outputs when using "
                  "the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This is not allowed in "
                   "strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} in the grad_jacobian. "
                         "This is not allowed in strict mode as it prevents from using the double backward trick to "
                         "replace forward mode AD.",
}


def _zeros_for_missing(grads: tuple, refs: tuple, strict: bool, create_graph: bool, stage: str) -> tuple:
    """Zeros shaped like refs[i] where grads[i] is None; strict mode raises instead, and with
    create_graph also where a result carries no graph."""
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = _C.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            which = "hessian" if stage.startswith("double") else "jacobian"
            raise RuntimeError(f"The {which} of the user-provided function is independent of input {i}. This is not "
                               "allowed in strict mode when create_graph=True.")
        out.append(g)
    return tuple(out)


def _prepare_v(v, against: tuple, against_is_tuple: bool, create_graph: bool, fn_name: str, none_message: str):
    if v is None:
        if len(against) != 1 or against[0].numel() != 1:
            raise RuntimeError(none_message)
        return None
    _, v = _tensors(v, "v", fn_name)
    v = _prepare(v, create_graph, need_graph=False)
    _check_v(v, against, against_is_tuple)
    return v


_V_NONE_OUTPUT = ("The vector v can only be None if the user-provided function returns a single Tensor with a single "
                  "element.")
_V_NONE_INPUT = ("The vector v can only be None if the input to the user-provided function is a single Tensor with a "
                 "single element.")


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T J): the vector-Jacobian product at `inputs`, shaped like the inputs.
    v may be None when func returns a single one-element tensor."""
    with grad_mode.enable_grad():
        inputs_tuple, inputs = _tensors(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function", "vjp")
        _strict_requires_grad(outputs, "outputs", strict)
        v = _prepare_v(v, outputs, outputs_tuple, create_graph, "vjp", _V_NONE_OUTPUT)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        result = _grad(outputs, inputs, v, create_graph=create_graph)
        result = _zeros_for_missing(result, inputs, strict, create_graph, "back")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(_finish(result, create_graph), inputs_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), J v): the Jacobian-vector product at `inputs`, shaped like the outputs.
    Computed by the double-backward trick (see the module docstring), so func must be twice
    differentiable in reverse mode. v may be None when the input is a single one-element tensor."""
    with grad_mode.enable_grad():
        inputs_tuple, inputs = _tensors(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _prepare_v(v, inputs, inputs_tuple, create_graph, "jvp", _V_NONE_INPUT)
        outputs_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function", "jvp")
        _strict_requires_grad(outputs, "outputs", strict)
        # J^T u is linear in u, so u's value never enters d(J^T u)/du; zeros cannot bring in inf or nan.
        dummies = tuple(_C.zeros_like(o).requires_grad_() for o in outputs)
        grad_inputs = _grad(outputs, inputs, dummies, create_graph=True)
        _strict_requires_grad(grad_inputs, "grad_inputs", strict)
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        result = _grad(grad_inputs, dummies, v, create_graph=create_graph)
        result = _zeros_for_missing(result, outputs, strict, create_graph, "back_trick")
    return _unpack(_finish(outputs, create_graph), outputs_tuple), _unpack(_finish(result, create_graph), outputs_tuple)


def _check_strategy(strategy: str, name: str) -> None:
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(f'[{name}] expected strategy to be either "forward-mode" or "reverse-mode", but got '
                         f"{strategy!r}. Hint: if your function has more outputs than inputs, \"forward-mode\" tends "
                         'to be more performant; otherwise prefer "reverse-mode".')


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at `inputs`: for output i and input j a tensor of shape
    outputs[i].shape + inputs[j].shape, nested as tuple[i][j] when outputs/inputs are tuples.
    One backward pass per output element (reverse mode, not vectorized)."""
    _check_strategy(strategy, "jacobian")
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('ember.autograd.functional.jacobian: `create_graph=True` and `strategy="forward-'
                                      'mode"` are not supported together (yet). Please either set `create_graph=False` '
                                      'or `strategy="reverse-mode"`.')
        if strict:
            raise RuntimeError('ember.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are '
                               'not supported together (yet). Please either set `strict=False` or '
                               '`strategy="reverse-mode"`.')
        if not vectorize:
            raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                                      "implemented for `vectorize=True`.")
        return _forward_jacobian(func, inputs)
    if vectorize:
        if strict:
            raise RuntimeError("ember.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                               "supported together. Please either set `strict=False` or `vectorize=False`.")
        return _vectorized_jacobian(func, inputs, create_graph)
    with grad_mode.enable_grad():
        inputs_tuple, inputs = _tensors(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function", "jacobian")
        _strict_requires_grad(outputs, "outputs", strict)
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]  # rows[j][k]: d out.flat[k] / d inputs[j]
            flat = out.reshape(-1)
            for k in range(out.numel()):
                for j, (g, x) in enumerate(zip(_grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph),
                                               inputs, strict=True)):
                    if g is None:
                        if strict:
                            raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}. "
                                               "This is not allowed in strict mode.")
                        g = _C.zeros_like(x)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(f"The jacobian of the user-provided function is independent of input {j}. "
                                           "This is not allowed in strict mode when create_graph=True.")
                    rows[j].append(g)
            shape = list(out.shape)
            # A zero-size output has no rows to stack: its Jacobian is empty, of the same shape.
            jac.append(tuple(_C.stack(r, 0).reshape(shape + list(x.shape)) if r else
                             _C.zeros(shape + list(x.shape), dtype=x.dtype, device=x.device)
                             for r, x in zip(rows, inputs, strict=True)))
    return _unpack(_finish(tuple(jac), create_graph), (outputs_tuple, inputs_tuple))


def _vectorized_jacobian(func, inputs, create_graph: bool):
    """Reverse mode, one batched backward per output: the seeds are the rows of an identity."""
    with grad_mode.enable_grad():
        inputs_tuple, inputs = _tensors(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        outputs_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function", "jacobian")
        jac = []
        for out in outputs:
            n, shape = out.numel(), list(out.shape)
            if n == 0 or not out.requires_grad:
                rows = (None,) * len(inputs)
            else:
                seeds = _C.reshape(_C.eye(n, dtype=out.dtype), [n] + shape)
                rows = _engine.grad([out], list(inputs), [seeds], retain_graph=True, create_graph=create_graph,
                                      allow_unused=True, is_grads_batched=True)
            jac.append(tuple(_C.zeros(shape + list(x.shape), dtype=x.dtype) if r is None else
                             _C.reshape(r, shape + list(x.shape)) for r, x in zip(rows, inputs, strict=True)))
    return _unpack(_finish(tuple(jac), create_graph), (outputs_tuple, inputs_tuple))


def _forward_jacobian(func, inputs):
    """Forward mode: ember.func.jacfwd (tangents of an identity, pushed through func by vmap)."""
    from ..func import jacfwd

    inputs_tuple, inputs = _tensors(inputs, "inputs", "jacobian")
    inputs = tuple(x.detach() for x in inputs)
    outputs_tuple, _ = _tensors(func(*inputs), "outputs of the user-provided function", "jacobian")
    jac = jacfwd(func, argnums=tuple(range(len(inputs))))(*inputs)
    jac = jac if outputs_tuple else (jac,)
    return _unpack(_finish(tuple(jac), False), (outputs_tuple, inputs_tuple))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function returning one element: for inputs i and j a tensor of shape
    inputs[i].shape + inputs[j].shape, nested as tuple[i][j] when the inputs are a tuple. The
    Jacobian of the (differentiable) Jacobian."""
    inputs_tuple, inputs = _tensors(inputs, "inputs", "hessian")
    _check_strategy(outer_jacobian_strategy, "hessian")

    def scalar_func(*args):
        out = func(*args)
        out_tuple, outs = _tensors(out, "outputs of the user-provided function", "hessian")
        _strict_requires_grad(outs, "outputs", strict)
        if out_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        return out.reshape([])  # so the inner Jacobian is shaped like the inputs

    def jac_func(*args):
        jac = jacobian(scalar_func, args, create_graph=True, vectorize=vectorize)
        _strict_requires_grad(jac, "jacobian", strict)
        return jac

    hess = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                    strategy=outer_jacobian_strategy)
    return _unpack(hess, (inputs_tuple, inputs_tuple))


def _scalar_output(func, inputs: tuple, strict: bool, name: str):
    outputs_tuple, outputs = _tensors(func(*inputs), "outputs of the user-provided function", name)
    _strict_requires_grad(outputs, "outputs", strict)
    if outputs_tuple:
        raise RuntimeError(f"The function given to {name} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {name} should contain a single element")
    return outputs


def _gradient_of_scalar(func, inputs, v, create_graph: bool, strict: bool, name: str):
    """vhp/hvp's first half (grad enabled by the caller): the checked inputs and v, the
    one-element output and its gradient with a graph (the second backward differentiates it)."""
    inputs_tuple, inputs = _tensors(inputs, "inputs", name)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    v = _prepare_v(v, inputs, inputs_tuple, create_graph, name, _V_NONE_INPUT)
    outputs = _scalar_output(func, inputs, strict, name)
    jac = _grad(outputs, inputs, create_graph=True)
    _strict_requires_grad(jac, "jacobian", strict)
    return inputs_tuple, inputs, v, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), v^T H): the vector-Hessian product of a one-element function, shaped like
    the inputs (equal to hvp when the Hessian is symmetric)."""
    with grad_mode.enable_grad():
        inputs_tuple, inputs, v, outputs, jac = _gradient_of_scalar(func, inputs, v, create_graph, strict, "vhp")
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        result = _grad(jac, inputs, v, create_graph=create_graph)
        result = _zeros_for_missing(result, inputs, strict, create_graph, "double_back")
    return _finish(outputs, create_graph)[0], _unpack(_finish(result, create_graph), inputs_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(*inputs), H v): the Hessian-vector product of a one-element function, shaped like the
    inputs, by the double-backward trick applied to v^T H (see the module docstring)."""
    with grad_mode.enable_grad():
        inputs_tuple, inputs, v, outputs, jac = _gradient_of_scalar(func, inputs, v, create_graph, strict, "hvp")
        dummies = tuple(_C.zeros_like(x).requires_grad_() for x in inputs)
        double_back = _grad(jac, inputs, dummies, create_graph=True)  # u^T H, linear in u
    with grad_mode.set_grad_enabled(create_graph or grad_mode.is_grad_enabled()):
        result = _grad(double_back, dummies, v, create_graph=create_graph)
        result = _zeros_for_missing(result, inputs, strict, create_graph, "double_back_trick")
    return _finish(outputs, create_graph)[0], _unpack(_finish(result, create_graph), inputs_tuple)
