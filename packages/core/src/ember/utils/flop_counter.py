"""ember.utils.flop_counter (torch.utils.flop_counter): counting the floating-point operations of
a region, by op and by module, forward and backward::

    with FlopCounterMode(display=False) as counter:
        model(x).sum().backward()
    counter.get_total_flops()          # every counted op
    counter.get_flop_counts()          # {"Global": {aten.matmul: n, ...}, "Net": {...}, "Net.fc1": ...}
    print(counter.get_table(depth=2))

It is a dispatch mode (ember.utils._python_dispatch): each op the region runs below autograd is
looked up in ``flop_registry``, and a registered formula gives its count from the shapes of its
arguments and output. As in PyTorch, the matrix products and the convolutions are counted
(a multiply-add is 2 FLOPs); elementwise ops, reductions and products with a 1-d operand (which
PyTorch lowers to mv/dot and does not count either) count nothing. Ember computes `x @ w` as the
one op ``aten.matmul`` (PyTorch: mm/bmm after reshaping) and attention from matmuls, so those
counts come under ``aten.matmul``; the totals agree with PyTorch's, except the weight gradient
of a grouped convolution, which PyTorch's formula counts `groups` times over (here it is what
the forward takes).

Modules are tracked through the global module hooks: a module's name is its class name at the
root, then the attribute path (``Net.fc1``); an op counts toward every module it runs inside of,
and toward ``Global``. In backward, a module is entered when the gradient of its output arrives
and left when those of its inputs are computed (a module whose inputs need no gradient, usually
the first, stays entered to the end of backward, as with PyTorch's ModuleTracker).
"""

from __future__ import annotations

import functools
import warnings
import weakref
from collections import defaultdict
from collections.abc import Callable
from math import prod
from typing import Any

from .. import _C
from .._ops import OpOverload, ops
from ..autograd.graph import register_multi_grad_hook
from ..nn.modules.module import register_module_forward_hook, register_module_forward_pre_hook
from ._python_dispatch import TorchDispatchMode
from ._pytree import tree_leaves, tree_map

__all__ = ["FlopCounterMode", "register_flop_formula"]  # and the formula helpers, as PyTorch's module has

aten = ops.aten
flop_registry: dict[OpOverload, Callable] = {}


def get_shape(value):
    """A tensor's shape (other values as they are): what a formula made with shape_wrapper sees."""
    return tuple(value.shape) if isinstance(value, _C.Tensor) else value


def shape_wrapper(formula: Callable) -> Callable:
    """Turns formula(*shapes, out_shape=..., **kwargs) into a formula over the op's own arguments
    and output (``out_val``), as the registry calls it."""

    @functools.wraps(formula)
    def over_values(*args, out_val=None, **kwargs):
        args, kwargs, out_shape = tree_map(get_shape, (args, kwargs, out_val))
        return formula(*args, out_shape=out_shape, **kwargs)

    return over_values


def register_flop_formula(targets, get_raw: bool = False) -> Callable:
    """Decorator: registers `formula` for the op(s) `targets` (``ember.ops.aten.<op>``). It gets
    the shapes of the op's tensor arguments (other arguments as they are) and ``out_shape``; with
    get_raw=True it gets the values themselves and ``out_val``."""

    def register(formula: Callable) -> Callable:
        wrapped = formula if get_raw else shape_wrapper(formula)
        for target in targets if isinstance(targets, (list, tuple)) else (targets,):
            if not isinstance(target, OpOverload):
                raise ValueError(f"register_flop_formula(targets): expected ember.ops ops, but got {target!r} of "
                                 f"type {type(target).__name__}")
            flop_registry[target] = wrapped
        return formula

    return register


@register_flop_formula(aten.mm)
def mm_flop(a_shape, b_shape, *args, out_shape=None, **kwargs) -> int:
    """(m, k) @ (k, n): m * n multiply-adds of length k."""
    m, k = a_shape
    k2, n = b_shape
    if k != k2:
        raise ValueError(f"mm_flop: inner sizes differ ({k} and {k2})")
    return 2 * m * n * k


@register_flop_formula(aten.addmm)
def addmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    return mm_flop(a_shape, b_shape)


@register_flop_formula(aten.bmm)
def bmm_flop(a_shape, b_shape, out_shape=None, **kwargs) -> int:
    b, m, k = a_shape
    b2, k2, n = b_shape
    if b != b2 or k != k2:
        raise ValueError(f"bmm_flop: shapes {a_shape} and {b_shape} do not multiply")
    return 2 * b * m * n * k


@register_flop_formula(aten.baddbmm)
def baddbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    return bmm_flop(a_shape, b_shape)


@register_flop_formula(aten.addbmm)
def addbmm_flop(self_shape, a_shape, b_shape, out_shape=None, **kwargs) -> int:
    return bmm_flop(a_shape, b_shape)


@register_flop_formula(aten.matmul)
def matmul_flop(a_shape, b_shape, out_shape=None, **kwargs) -> int:
    """Ember's one matmul op: every output element is a dot product over the shared size. With a
    1-d operand, nothing: PyTorch lowers those to mv/dot, which it does not count."""
    if len(a_shape) < 2 or len(b_shape) < 2:
        return 0
    return 2 * prod(out_shape) * a_shape[-1]


def conv_flop_count(x_shape, w_shape, out_shape, transposed: bool = False) -> int:
    """A convolution's FLOPs: each output (input, when transposed) position of each image takes
    one multiply-add per weight of a group: 2 * N * positions * weight.numel()."""
    positions = prod((x_shape if transposed else out_shape)[2:])
    return 2 * x_shape[0] * positions * prod(w_shape)


@register_flop_formula(aten.convolution)
def conv_flop(x_shape, w_shape, bias, stride, padding, dilation, transposed, *args, out_shape=None, **kwargs) -> int:
    return conv_flop_count(x_shape, w_shape, out_shape, transposed=transposed)


@register_flop_formula(aten.convolution_backward)
def conv_backward_flop(grad_out_shape, x_shape, w_shape, stride, padding, dilation, transposed, output_padding,
                       groups, input_grad=True, weight_grad=True, bias_grad=True, out_shape=None, **kwargs) -> int:
    """The input gradient (a transposed convolution of grad_out) and the weight gradient (a
    correlation of the input with grad_out) each take as many multiply-adds as the forward."""
    forward = conv_flop_count(x_shape, w_shape, grad_out_shape, transposed=transposed)
    return forward * (bool(input_grad) + bool(weight_grad))


def sdpa_flop_count(query_shape, key_shape, value_shape) -> int:
    """Scaled dot-product attention on (batch, heads, length, dim) shapes: the scores q @ k^T and
    their product with v (Ember computes attention from these matmuls, counted as aten.matmul)."""
    b, h, s_q, d_q = query_shape
    b_k, h_k, s_k, d_k = key_shape
    b_v, h_v, s_v, d_v = value_shape
    if not (b == b_k == b_v and h == h_k == h_v and d_q == d_k and s_k == s_v):
        raise ValueError(f"sdpa_flop_count: shapes {query_shape}, {key_shape}, {value_shape} do not match")
    return bmm_flop((b * h, s_q, d_q), (b * h, d_q, s_k)) + bmm_flop((b * h, s_q, s_k), (b * h, s_k, d_v))


def sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape) -> int:
    """Its backward: the scores again, then the gradients of the scores (dO @ v^T), of v
    (scores^T @ dO), of q (dScores @ k) and of k (dScores^T @ q)."""
    b, h, s_q, d_q = query_shape
    s_k, d_v = key_shape[2], value_shape[3]
    if tuple(grad_out_shape) != (b, h, s_q, d_v):
        raise ValueError(f"sdpa_backward_flop_count: grad_out shape {grad_out_shape} is not {(b, h, s_q, d_v)}")
    n = b * h
    return (sdpa_flop_count(query_shape, key_shape, value_shape) - bmm_flop((n, s_q, s_k), (n, s_k, d_v))
            + bmm_flop((n, s_q, d_v), (n, d_v, s_k)) + bmm_flop((n, s_k, s_q), (n, s_q, d_v))
            + bmm_flop((n, s_q, s_k), (n, s_k, d_q)) + bmm_flop((n, s_k, s_q), (n, s_q, d_q)))


def normalize_tuple(x) -> tuple:
    """x as a tuple (a lone value in a 1-tuple)."""
    return x if isinstance(x, tuple) else (x,)


suffixes = ["", "K", "M", "B", "T"]


def get_suffix_str(number: int) -> str:
    """The suffix a table shows `number` with: K for thousands, M, B, T."""
    index = max(0, min(len(suffixes) - 1, (len(str(number)) - 2) // 3))
    return suffixes[index]


def convert_num_with_suffix(number: int, suffix: str) -> str:
    index = suffixes.index(suffix)
    return f"{number / 1000 ** index:.3f}{suffix}"


def convert_to_percent_str(num: int, denom: int) -> str:
    if denom == 0:
        return "0%"
    return f"{num / denom:.2%}"


def _tensors(value) -> list:
    """The tensors in value (a module's arguments or output) that need gradients."""
    return [v for v in tree_leaves(value) if isinstance(v, _C.Tensor) and v.requires_grad]


class FlopCounterMode(TorchDispatchMode):
    """Counts the FLOPs of the ops run inside it (see the module docstring). ``depth`` is how many
    levels of modules the table shows; with ``display`` the table is printed on exit;
    ``custom_mapping`` adds or replaces formulas ({op: formula}, a formula as register_flop_formula
    takes them). ``mods`` is accepted for PyTorch 2.2's signature and not needed: modules are
    tracked without it."""

    def __init__(self, mods=None, depth: int = 2, display: bool = True, custom_mapping: dict | None = None) -> None:
        super().__init__()
        if mods is not None:
            warnings.warn("mods argument is not needed anymore, you can stop passing it", stacklevel=2)
        self.depth = depth
        self.display = display
        self.flop_counts: dict = defaultdict(lambda: defaultdict(int))
        self.flop_registry = dict(flop_registry)
        for op, formula in (custom_mapping or {}).items():
            self.flop_registry[op] = formula if getattr(formula, "_get_raw", False) else shape_wrapper(formula)
        self._names: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
        self._active: list[str] = []
        self._handles: list = []

    # ---- counting ------------------------------------------------------------------------------

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        formula = self.flop_registry.get(func.overloadpacket)
        if formula is not None:
            flops = formula(*args, **kwargs, out_val=out)
            for name in dict.fromkeys(["Global", *self._active]):  # outer modules first, each once
                self.flop_counts[name][func.overloadpacket] += flops
        return out

    def get_total_flops(self) -> int:
        return sum(self.flop_counts["Global"].values())

    def get_flop_counts(self) -> dict[str, dict[Any, int]]:
        """{module name: {op: FLOPs}}, "Global" holding every counted op."""
        return {name: dict(counts) for name, counts in self.flop_counts.items()}

    def get_table(self, depth: int | None = None) -> str:
        depth = self.depth if depth is None else depth
        depth = 999999 if depth is None else depth
        total = self.get_total_flops()
        suffix = get_suffix_str(total)
        rows = [("Module", "FLOP", "% Total")]
        names = ["Global", *(n for n in self.flop_counts if n != "Global")]
        for name in names:
            level = name.count(".") + (name != "Global")
            if level > depth or name not in self.flop_counts:
                continue
            counts = self.flop_counts[name]
            module_total = sum(counts.values())
            indent = " " * level
            rows.append((indent + name, convert_num_with_suffix(module_total, suffix),
                         convert_to_percent_str(module_total, total)))
            for op, flops in counts.items():
                rows.append((indent + " - " + str(op), convert_num_with_suffix(flops, suffix),
                             convert_to_percent_str(flops, total)))
        widths = [max(len(r[i]) for r in rows) for i in range(3)]
        lines = [f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}" for r in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    # ---- module tracking -------------------------------------------------------------------------

    def _name_of(self, module) -> str:
        if module not in self._names:
            self._names[module] = type(module).__name__
        name = self._names[module]
        for child_name, child in module.named_children():  # a child is named under its first parent seen
            if child not in self._names:
                self._names[child] = f"{name}.{child_name}"
        return name

    def _enter_module(self, name: str) -> None:
        self._active.append(name)

    def _leave_module(self, name: str) -> None:
        if name in self._active:
            del self._active[len(self._active) - 1 - self._active[::-1].index(name)]

    def _forward_pre(self, module, args):
        name = self._name_of(module)
        self._enter_module(name)
        inputs = _tensors(args)
        if inputs:  # backward leaves the module once its inputs' gradients are computed
            register_multi_grad_hook(inputs, lambda _: self._leave_module(name), mode="any")

    def _forward_post(self, module, args, output):
        name = self._name_of(module)
        self._leave_module(name)
        outputs = _tensors(output)
        if outputs:  # and enters it when its output's gradient arrives
            register_multi_grad_hook(outputs, lambda _: self._enter_module(name), mode="any")

    def __enter__(self) -> FlopCounterMode:
        self.flop_counts.clear()
        self._active.clear()
        self._handles = [register_module_forward_pre_hook(self._forward_pre),
                         register_module_forward_hook(self._forward_post)]
        super().__enter__()
        return self

    def __exit__(self, *exc) -> None:
        super().__exit__(*exc)
        for handle in self._handles:
            handle.remove()
        self._handles = []
        self._active.clear()
        if self.display:
            print(self.get_table(self.depth))
