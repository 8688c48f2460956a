"""Function transforms (torch.func's API): grad, grad_and_value, vjp, jacrev and hessian over
Ember's reverse-mode engine; jvp and jacfwd over forward mode (ember.autograd.forward_ad).

Arguments are pytrees: a Tensor, or tuples, lists and dicts of them (nested); the differentiated
arguments must hold only Tensors, and each derivative has its argument's structure.

Note [Nesting transforms on one graph]
torch.func gives every transform its own level of wrapped tensors. Ember has one autograd graph,
so each transform instead works out whether anything outside it can differentiate its results:
  - an input that already requires grad (an outer transform, or the user, tracks it) reaches f as
    a differentiable alias, so f's output stays connected to the outer graph;
  - any other input reaches f as an alias of a detached copy; if f's output still reaches a leaf
    other than through those aliases (f closes over a tracked tensor), the outside is tracking too.
If something outside tracks, derivatives are taken with create_graph=True and stay differentiable
(grad(grad(f)) and jacrev(jacrev(f)) work); if nothing does, create_graph=False and every returned
tensor (derivatives, values, aux) is free of graph, as torch.func's results are. Under no_grad
nothing outside tracks, but the transform still differentiates (torch.func ignores an outer no_grad).
"""

from __future__ import annotations

from ._functional_call import functional_call
from ._module_utils import (
    debug_unwrap,
    functionalize,
    linearize,
    replace_all_batch_norm_modules_,
    stack_module_state,
)
from ._rearrange import rearrange
from ._transforms import grad, grad_and_value, hessian, jacfwd, jacrev, jvp, vjp
from ._vmap import vmap

__all__ = ["rearrange", "grad", "grad_and_value", "vjp", "jacrev", "jvp", "jacfwd", "hessian", "vmap", "functional_call",
           "stack_module_state", "replace_all_batch_norm_modules_", "linearize", "functionalize", "debug_unwrap"]
