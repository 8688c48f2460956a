"""The transforms themselves: grad, grad_and_value, vjp, jacrev, jvp, jacfwd and hessian
(Note [Nesting transforms on one graph] in ember/func/__init__.py). ember.func re-exports them."""

from __future__ import annotations

import functools

from .. import _C
from ..autograd import _engine, forward_ad
from ..autograd import grad_mode as _grad_mode
from ..utils._pytree import treespec_pprint
from ._pytree import _flatten, _tree_map, _unflatten
from ._vmap import vmap

# --- argnums -----------------------------------------------------------------------------------

def _positions(argnums, num_args: int) -> tuple[int, ...]:
    """argnums (an int or a tuple of ints, negative counting from the end) as positions."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    numbers = argnums if isinstance(argnums, tuple) else (argnums,)
    if not numbers:
        raise RuntimeError("argnums must be non-empty")
    positions = []
    for n in numbers:
        if not isinstance(n, int):
            raise RuntimeError(f"argnum must be int, got: {type(n)}")
        if not -num_args <= n < num_args:
            raise RuntimeError(f"Got argnum={n}, but only {num_args} positional inputs")
        positions.append(n % num_args)
    if len(set(positions)) != len(positions):
        raise RuntimeError(f"argnums elements must be unique, got {argnums}")
    return tuple(positions)


# --- one transform's inputs (Note [Nesting transforms on one graph]) ----------------------------

class _Inputs:
    """The differentiated arguments of one transform call: their structures, the aliases that f
    receives, and whether the caller's graph tracks them."""

    def __init__(self, trees: tuple, grad_mode: bool) -> None:
        self.grad_mode = grad_mode  # the caller's, from before the transform enabled grad
        self.specs, self.aliases, self.tracked = [], [], False
        for tree in trees:
            leaves, spec = _flatten(tree)
            for leaf in leaves:
                if not isinstance(leaf, _C.Tensor):
                    raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}")
            self.specs.append(spec)
            self.aliases.append([self._alias(leaf) for leaf in leaves])
        self.flat = [a for group in self.aliases for a in group]
        self.own_nodes = [a.grad_fn for a in self.flat]  # kept alive, so their ids stay theirs

    def _alias(self, x):
        if self.grad_mode and x.requires_grad:
            self.tracked = True
            return x.view_as(x)
        local = _detach(x).requires_grad_()
        return local.view_as(local)

    def trees(self) -> list:
        """The differentiated arguments rebuilt from the aliases, for calling f."""
        return [_unflatten(spec, group) for spec, group in zip(self.specs, self.aliases, strict=True)]

    def outside_tracks(self, outputs) -> bool:
        """Whether anything outside this transform can differentiate these outputs of f."""
        if not self.grad_mode:
            return False
        if self.tracked:
            return True
        own = {id(node) for node in self.own_nodes}
        seen, visited = set(), []  # visited keeps each node's wrapper alive, so ids are not reused
        stack = []
        for out in outputs:
            if isinstance(out, _C.Tensor) and out.requires_grad:
                if out.grad_fn is None:
                    return True  # a leaf f closed over
                stack.append(out.grad_fn)
        while stack:
            node = stack.pop()
            if id(node) in own or id(node) in seen:
                continue
            seen.add(id(node))
            visited.append(node)
            if node.name() == "AccumulateGrad":
                return True
            stack.extend(n for n, _ in node.next_functions if n is not None)
        return False

    def group(self, flat_results, argnums) -> object:
        """Per-leaf results arranged as the differentiated arguments: one argument's structure
        for an int argnums, a tuple of them for a tuple."""
        results = iter(flat_results)
        trees = [_unflatten(spec, [next(results) for _ in group]) for spec, group in
                 zip(self.specs, self.aliases, strict=True)]
        return tuple(trees) if isinstance(argnums, tuple) else trees[0]


def _call(func, args: tuple, kwargs: dict, argnums) -> tuple[_Inputs, object]:
    """Runs func with grad enabled on aliases of the argnums arguments."""
    positions = _positions(argnums, len(args))
    grad_mode = _grad_mode.is_grad_enabled()
    with _grad_mode.enable_grad():
        inputs = _Inputs(tuple(args[p] for p in positions), grad_mode)
        call_args = list(args)
        for p, tree in zip(positions, inputs.trees(), strict=True):
            call_args[p] = tree
        return inputs, func(*call_args, **kwargs)


def _split_aux(output, has_aux: bool, api: str):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _detach(t):
    """t without reverse-mode history, keeping its forward-mode tangent (so jvp(grad(f)), forward
    over reverse, sees through the transform)."""
    out = t.detach()
    tangent = _C._unpack_dual(t)[1]
    if tangent is not None:
        _C._set_tangent(out, tangent)
    return out


def _detach_tree(tree, keep_graph: bool):
    if keep_graph:
        return tree
    return _tree_map(lambda t: _detach(t) if isinstance(t, _C.Tensor) else t, tree)


def _grads(outputs: list, inputs: list, seeds: list | None, create_graph: bool, retain_graph: bool) -> list:
    """d outputs / d inputs, zeros for an input no output depends on."""
    seeds = seeds if seeds is not None else [None] * len(outputs)
    live = [(o, s) for o, s in zip(outputs, seeds, strict=True) if o.requires_grad]
    got = [None] * len(inputs)
    if live:
        outs, live_seeds = zip(*live, strict=True)
        got = _engine.grad(list(outs), inputs, list(live_seeds), retain_graph=retain_graph,
                             create_graph=create_graph, allow_unused=True)
    return [_C.zeros_like(x) if g is None else g for g, x in zip(got, inputs, strict=True)]


def _tensor_outputs(leaves: list, api: str, what: str) -> None:
    if not leaves or (len(leaves) == 1 and leaves[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {leaves})")
    for leaf in leaves:
        if not isinstance(leaf, _C.Tensor):
            raise RuntimeError(f"{api}: expected {what} to return only tensors, got unsupported type {type(leaf)}")


# --- transforms --------------------------------------------------------------------------------

def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient, value) of func, which must return a 0-dim tensor (or
    (tensor, aux) with has_aux, giving (gradient, (value, aux))). The gradient is with respect to
    the argument(s) argnums: that argument's structure for an int, a tuple for a tuple."""
    api = "grad_and_value(f)(*args)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        inputs, output = _call(func, args, kwargs, argnums)
        output, aux = _split_aux(output, has_aux, api)
        if not isinstance(output, _C.Tensor):
            raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with "
                               f"{output.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        keep = inputs.outside_tracks([output, *_flatten(aux)[0]])
        flat = _grads([output], inputs.flat, None, create_graph=keep, retain_graph=keep)
        result = inputs.group(flat, argnums)
        value = output if keep else _detach(output)
        if has_aux:
            return result, (value, _detach_tree(aux, keep))
        return result, value

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of func (which must return a 0-dim tensor) with respect
    to the argument(s) argnums; with has_aux, func returns (tensor, aux) and this (gradient, aux).
    Nests: grad(grad(f)) is the second derivative (Note [Nesting transforms on one graph])."""
    inner = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        result, value = inner(*args, **kwargs)
        return (result, value[1]) if has_aux else result

    return wrapper


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn) [, aux]: vjp_fn(cotangents), with cotangents structured as the
    output, returns a tuple holding, per primal, the vector-Jacobian product in its structure.
    vjp_fn may be called more than once."""
    api = "vjp(f, *primals)"
    if not primals:
        raise RuntimeError(f"{api}: expected at least one primal to differentiate with respect to")
    argnums = tuple(range(len(primals)))
    inputs, output = _call(func, primals, {}, argnums)
    output, aux = _split_aux(output, has_aux, api)
    flat_out, out_spec = _flatten(output)
    _tensor_outputs(flat_out, api, "f(*primals)")
    keep = inputs.outside_tracks(flat_out + _flatten(aux)[0])

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        flat_ct, ct_spec = _flatten(cotangents)
        if ct_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {treespec_pprint(ct_spec)}, primal output: "
                               f"{treespec_pprint(out_spec)}")
        if create_graph is None:
            create_graph = _grad_mode.is_grad_enabled() and (
                keep or any(isinstance(c, _C.Tensor) and c.requires_grad for c in flat_ct))
        with _grad_mode.set_grad_enabled(create_graph or _grad_mode.is_grad_enabled()):
            flat = _grads(flat_out, inputs.flat, flat_ct, create_graph=create_graph, retain_graph=retain_graph)
        return inputs.group(flat, argnums)

    result = (_detach_tree(output, keep), vjp_fn)
    return (*result, _detach_tree(aux, keep)) if has_aux else result


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """A function returning the Jacobian of func with respect to the argument(s) argnums: for each
    output leaf, a tensor of shape output.shape + input.shape per differentiated leaf, arranged as
    the output's structure around the arguments' structure. With has_aux, (jacobian, aux).
    The rows are vjps along every output element, run together by vmap (batched gradients);
    chunk_size bounds how many run at once."""
    if chunk_size is not None and chunk_size <= 0:
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    api = "jacrev(f, ...)(*args)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        inputs, output = _call(func, args, kwargs, argnums)
        with _grad_mode.enable_grad():  # the rows are picked out of the output on the graph
            output, aux = _split_aux(output, has_aux, api)
            flat_out, out_spec = _flatten(output)
            _tensor_outputs(flat_out, api, "f(*args)")
            keep = inputs.outside_tracks(flat_out + _flatten(aux)[0])
            per_output = []
            for out in flat_out:
                shape = list(out.shape)
                if out.numel() == 0:  # no rows: the Jacobian is empty, of the same shape
                    jac = [_C.zeros(shape + list(x.shape), dtype=x.dtype, device=x.device) for x in inputs.flat]
                else:
                    basis = _C.eye(out.numel(), dtype=out.dtype, device=out.device).reshape([out.numel(), *shape])
                    rows = vmap(lambda v, out=out: _grads([out], inputs.flat, [v], create_graph=keep, retain_graph=True),
                                chunk_size=chunk_size)(basis)
                    jac = [r.reshape(shape + list(x.shape)) for r, x in zip(rows, inputs.flat, strict=True)]
                per_output.append(inputs.group(jac, argnums))
        result = _unflatten(out_spec, per_output)
        return (result, _detach_tree(aux, keep)) if has_aux else result

    return wrapper


# --- forward mode ------------------------------------------------------------------------------

def _check_tuple(value, api: str, what: str) -> tuple:
    if not isinstance(value, (tuple, list)):
        raise RuntimeError(f"{api}: Expected {what} to be a tuple. E.g. it should be valid to call f(*{what}).")
    return tuple(value)


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), the Jacobian of func at primals applied to tangents), by forward-mode AD
    (one pass; tangents have the primals' structure). With has_aux, also the aux output. As in
    PyTorch, forward-mode levels do not nest: jvp inside jvp raises."""
    api = "jvp(f, primals, tangents)"
    if strict:
        raise RuntimeError(f"{api}: strict=True is not implemented")
    primals = _check_tuple(primals, api, "primals")
    tangents = _check_tuple(tangents, api, "tangents")
    flat_p, spec_p = _flatten(primals)
    flat_t, spec_t = _flatten(tangents)
    if spec_p != spec_t:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, "
                           f"if primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{spec_p} and tangents with structure {spec_t}")
    for p, t in zip(flat_p, flat_t, strict=True):
        if not isinstance(p, _C.Tensor) or not isinstance(t, _C.Tensor):
            raise RuntimeError(f"{api}: Expected primals and tangents to be tensors")
        if list(p.shape) != list(t.shape):
            raise RuntimeError(f"{api}: Expected primals and tangents to have the same shape, got {list(p.shape)} "
                               f"and {list(t.shape)}")
    fwd = forward_ad
    with fwd.dual_level():
        duals = _unflatten(spec_p, [fwd.make_dual(p, t) for p, t in zip(flat_p, flat_t, strict=True)])
        output = func(*duals)
        output, aux = _split_aux(output, has_aux, api)
        flat_out, spec_out = _flatten(output)
        _tensor_outputs(flat_out, api, "f(*primals)")
        unpacked = [fwd.unpack_dual(o) for o in flat_out]
        primals_out = [u.primal for u in unpacked]
        tangents_out = [_C.zeros_like(o) if u.tangent is None else u.tangent for o, u in zip(flat_out, unpacked,
                                                                                               strict=True)]
    result = (_unflatten(spec_out, primals_out), _unflatten(spec_out, tangents_out))
    return (*result, aux) if has_aux else result


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error", chunk_size=None):
    """Like jacrev, by forward mode: jvps along every input element, run together by vmap, give
    the columns of the Jacobian (output.shape + input.shape per differentiated leaf)."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    api = "jacfwd(f, ...)(*args)"

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        positions = _positions(argnums, len(args))
        specs, flat_inputs = [], []
        for p in positions:
            leaves, spec = _flatten(args[p])
            for leaf in leaves:
                if not isinstance(leaf, _C.Tensor):
                    raise ValueError(f"Thing passed to transform API must be Tensor, got {type(leaf)}")
            specs.append((p, spec, len(leaves)))
            flat_inputs.extend(leaves)

        def call(flat):
            call_args, it = list(args), iter(flat)
            for p, spec, n in specs:
                call_args[p] = _unflatten(spec, [next(it) for _ in range(n)])
            return func(*call_args, **kwargs)

        # One vmap per input leaf over the basis of its elements: column k is the jvp along e_k.
        columns = [None] * len(flat_inputs)  # per input leaf: the output tangents, batch first
        output = aux = None
        for j, x in enumerate(flat_inputs):
            if x.numel() == 0:
                continue

            def column(v, j=j):
                tangents = [v if i == j else _C.zeros_like(t) for i, t in enumerate(flat_inputs)]
                result = jvp(lambda *flat: call(flat), tuple(flat_inputs), tuple(tangents), has_aux=has_aux)
                return _flatten(result[1])[0], result[0], result[2] if has_aux else None

            basis = _C.eye(x.numel(), dtype=x.dtype, device=x.device).reshape([x.numel(), *x.shape])
            columns[j], output, aux = vmap(column, out_dims=(0, None, None), randomness=randomness,
                                           chunk_size=chunk_size)(basis)
        if output is None:  # no input element at all: evaluate once for the output's structure
            output = call(flat_inputs)
            output, aux = _split_aux(output, has_aux, api)
        flat_out, out_spec = _flatten(output)
        _tensor_outputs(flat_out, api, "f(*args)")
        per_output = []
        for i, out in enumerate(flat_out):
            jac = []
            for j, x in enumerate(flat_inputs):
                shape = list(out.shape) + list(x.shape)
                if columns[j] is not None:
                    jac.append(columns[j][i].reshape([x.numel(), -1]).t().reshape(shape))
                else:
                    jac.append(_C.zeros(shape, dtype=out.dtype, device=out.device))
            grouped, it = [], iter(jac)
            for _, spec, n in specs:
                grouped.append(_unflatten(spec, [next(it) for _ in range(n)]))
            per_output.append(tuple(grouped) if isinstance(argnums, tuple) else grouped[0])
        result = _unflatten(out_spec, per_output)
        return (result, aux) if has_aux else result

    return wrapper


def hessian(func, argnums=0):
    """The second derivatives of a scalar func: jacrev(jacrev(func)) (torch.func nests jacfwd over
    jacrev; on Ember's single graph, reverse over reverse gives the same matrix)."""
    return jacrev(jacrev(func, argnums), argnums)
