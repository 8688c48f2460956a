"""torch.func's helpers around transforms: stack_module_state (the parameters and buffers of
identical models stacked for vmap over models), replace_all_batch_norm_modules_, linearize,
functionalize and debug_unwrap."""

from __future__ import annotations

import functools

__all__ = ["stack_module_state", "replace_all_batch_norm_modules_", "linearize", "functionalize", "debug_unwrap"]


def stack_module_state(models) -> tuple[dict, dict]:
    """(params, buffers): each name mapped to the models' tensors stacked along a new first dim,
    for functional_call under vmap. The stacked parameters are new leaves that require grad
    (detached from the models), as torch.func.stack_module_state."""
    from .. import stack

    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")

    def gather(named):
        names = [n for n, _ in named(models[0])]
        stacked = {}
        for name in names:
            tensors = [dict(named(m))[name] for m in models]
            stacked[name] = stack([t.detach() for t in tensors])
        return stacked

    params = gather(lambda m: m.named_parameters())
    for name, value in params.items():
        params[name] = value.requires_grad_()
    buffers = gather(lambda m: m.named_buffers())
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """Stop every BatchNorm in root from tracking running statistics, in place (they would be
    updated in place under vmap): running_mean / running_var become None and
    track_running_stats False, as torch.func.replace_all_batch_norm_modules_. Returns root."""
    from ..nn.modules.batchnorm import _BatchNorm

    for module in root.modules():
        if isinstance(module, _BatchNorm):
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root


def linearize(func, *primals):
    """(func(*primals), jvp_fn) where jvp_fn(*tangents) is the Jacobian-vector product of func at
    primals (torch.func.linearize); each call of jvp_fn runs forward-mode AD at the fixed primals."""
    from ._transforms import jvp

    output = func(*primals)

    def jvp_fn(*tangents):
        if len(tangents) != len(primals):
            raise RuntimeError(f"linearize: expected {len(primals)} tangents, one per primal, but got {len(tangents)}")
        for p, t in zip(primals, tangents, strict=True):
            if tuple(t.shape) != tuple(p.shape):
                raise RuntimeError(f"linearize: a tangent of shape {list(t.shape)} was given for a primal of shape "
                                   f"{list(p.shape)}")
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


def functionalize(func, *, remove: str = "mutations"):
    """func itself, wrapped (torch.func.functionalize): functionalization rewrites mutations and
    views for graph capture, leaving what eager execution computes unchanged, and Ember runs
    eagerly, so the wrapped function returns exactly what func does, mutations included."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n"
                           "     remove='mutations_and_views': In addition to the above, all aliasing operators "
                           "{view} will be replaced with their non-aliasing counterparts, {view}_copy.\n")

    @functools.wraps(func)
    def wrapped(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapped


def debug_unwrap(tensor, *, recurse: bool = True):
    """tensor itself: Ember's transforms do not wrap tensors in levels (Note [Nesting transforms
    on one graph]), so there is nothing to unwrap."""
    return tensor
