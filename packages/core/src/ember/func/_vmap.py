"""vmap: run a function written for one example over a batch of them.

Inside vmap, f sees each mapped input without its batch dimension (a batched tensor, Note [batched
tensors] in native/include/ember/vmap.h); every op runs its batching rule on the whole batch at
once, or, for an op without one, a loop over the batch with a one-time performance warning.
"""

from __future__ import annotations

import functools
import warnings

from .. import _C
from ._pytree import _flatten, _unflatten

__all__ = ["vmap"]

_RANDOMNESS = ("error", "different", "same")


def _name(func) -> str:
    return getattr(func, "__name__", repr(func))


def _prefix_dims(dims, tree, what: str, api: str) -> list:
    """One dim (int or None) per leaf of tree: dims is an int/None for the whole subtree, or a
    container of tree's type and length holding the dims of each child."""
    if dims is None or isinstance(dims, int):
        return [dims] * len(_flatten(tree)[0])
    same_kind = (isinstance(dims, dict) and isinstance(tree, dict) and set(dims) == set(tree)) or (
        isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)) and len(dims) == len(tree))
    if not same_kind:
        side = "inputs" if what == "in_dims" else "outputs"
        raise ValueError(f"{api}: {what} is not compatible with the structure of `{side}`. {what} has structure "
                         f"{_flatten(dims)[1]} but the {side} have structure {_flatten(tree)[1]}.")
    if isinstance(dims, dict):
        return [d for k in tree for d in _prefix_dims(dims[k], tree[k], what, api)]
    return [d for sub_dims, sub in zip(dims, tree, strict=True) for d in _prefix_dims(sub_dims, sub, what, api)]


def _check_dims_arg(dims, what: str, api: str) -> None:
    if not (dims is None or isinstance(dims, (int, tuple))) or isinstance(dims, bool):
        raise ValueError(f"{api}: expected `{what}` to be int or a (potentially nested) tuple matching the structure "
                         f"of {'inputs' if what == 'in_dims' else 'outputs'}, got: {type(dims)}.")


def _batch_size(flat_args: list, flat_dims: list, api: str) -> int:
    sizes = []
    for x, d in zip(flat_args, flat_dims, strict=True):
        if d is None:
            continue
        if not isinstance(d, int) or isinstance(d, bool):
            raise ValueError(f"{api}: Got in_dim={d!r} of type {type(d)} for an input; in_dim must be either an "
                             "integer dimension or None.")
        if not isinstance(x, _C.Tensor):
            raise ValueError(f"{api}: Got in_dim={d} for an input but the input is of type {type(x)}. We cannot vmap "
                             "over non-Tensor arguments, please use None as the respective in_dim")
        if not -x.dim() <= d < x.dim():
            raise ValueError(f"{api}: Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{x.dim()} so expected in_dim to satisfy -{x.dim()} <= in_dim < {x.dim()}.")
        sizes.append(x.shape[d])
    if not sizes:
        raise ValueError(f"{api}: at least one Tensor input must be mapped over, but every in_dim is None (or no "
                         "input is a Tensor).")
    if len(set(sizes)) != 1:
        raise ValueError(f"{api}: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    return sizes[0]


def _warn_fallbacks() -> None:
    for op in _C._vmap_take_fallbacks():
        warnings.warn(f"vmap: there is no batching rule for ember op '{op}', so it ran as a loop over the batch: "
                      "the result is right, but slower than a batching rule would be.", UserWarning, stacklevel=3)


# level -> the randomness it was entered with (autograd.Function's vmap staticmethod reads it)
RANDOMNESS_OF_LEVEL: dict[int, str] = {}


def _run(func, flat_args, flat_dims, args_spec, kwargs, size, out_dims, randomness, api):
    level = _C._vmap_enter_level(size, randomness)
    RANDOMNESS_OF_LEVEL[level] = randomness
    try:
        batched = [x if d is None else _C._add_batch_dim(x, d, level) for x, d in zip(flat_args, flat_dims,
                                                                                     strict=True)]
        output = func(*_unflatten(args_spec, batched), **kwargs)
        flat_out, out_spec = _flatten(output)
        _check_dims_arg(out_dims, "out_dims", api)
        dims = _prefix_dims(out_dims, output, "out_dims", api)
        results = []
        for out, d in zip(flat_out, dims, strict=True):
            if d is None:
                if isinstance(out, _C.Tensor) and _C._vmap_info(out) is not None and _C._vmap_info(out)[0] == level:
                    raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` can not return a BatchedTensor "
                                     "when out_dim is None")
                results.append(out)
                continue
            if not isinstance(out, _C.Tensor):
                raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return Tensors, got type "
                                 f"{type(out)}. Did you mean to set out_dims= to None for output?")
            results.append(_C._remove_batch_dim(out, level, size, d))
        return results, out_spec, dims
    finally:
        RANDOMNESS_OF_LEVEL.pop(level, None)
        _C._vmap_exit_level(level)
        _warn_fallbacks()


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """torch.vmap: a function that maps func over dimension in_dims of its inputs and stacks the
    results along out_dims. in_dims/out_dims are an int or None (not mapped) for every input /
    output, or tuples matching the structure of the positional arguments / outputs (nested
    containers as prefixes). randomness says how random ops draw inside: 'error' (raise),
    'different' (independently per batch element) or 'same' (one draw shared by the batch).
    chunk_size runs the batch in pieces of at most that many elements (less memory)."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        api = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
        _check_dims_arg(in_dims, "in_dims", api)
        if not args:
            raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you "
                             "are trying to vmap over a function with no inputs. The latter is unsupported.")
        flat_args, args_spec = _flatten(args)
        if isinstance(in_dims, tuple) and len(in_dims) != len(args):
            raise ValueError(f"{api}: in_dims is not compatible with the structure of `inputs`. in_dims has structure "
                             f"{_flatten(in_dims)[1]} but inputs has structure {args_spec}.")
        flat_dims = _prefix_dims(in_dims, args, "in_dims", api)
        size = _batch_size(flat_args, flat_dims, api)
        if chunk_size is None or chunk_size >= size:
            results, out_spec, _ = _run(func, flat_args, flat_dims, args_spec, kwargs, size, out_dims, randomness, api)
            return _unflatten(out_spec, results)
        # In chunks: each runs on a narrow slice of the mapped inputs; 'same' randomness replays the
        # generator so every chunk draws what the first did.
        start_state = _C.default_generator.get_state() if randomness == "same" else None
        pieces, out_spec, dims = [], None, None
        for start in range(0, size, chunk_size):
            n = min(chunk_size, size - start)
            chunk = [x if d is None else x.narrow(d, start, n) for x, d in zip(flat_args, flat_dims, strict=True)]
            if start_state is not None:
                _C.default_generator.set_state(start_state)
            results, out_spec, dims = _run(func, chunk, flat_dims, args_spec, kwargs, n, out_dims, randomness, api)
            pieces.append(results)
        joined = [pieces[0][i] if d is None else _C.cat([p[i] for p in pieces], d) for i, d in enumerate(dims)]
        return _unflatten(out_spec, joined)

    return wrapped
