"""make_fx: the graph of registered ops (``ember.ops.aten.*``) a function runs, recorded below
autograd by a dispatch mode (torch.fx.experimental.proxy_tensor).

The function runs once on the real inputs (PyTorch's ``tracing_mode="real"``); every op it reaches
becomes a ``call_function`` node, each tensor value keyed by its native tensor so that a value is
found again however it reaches Python. Tensors the function did not get as inputs nor make
(closures, a module's parameters) become ``_tensor_constant<i>`` attributes. Python values read
from tensors (``item()``, a shape used in a branch) are fixed at their traced values, as in
PyTorch's real mode. The ops autograd's engine runs directly, without dispatch, during a backward
inside the function are not seen.
"""

from __future__ import annotations

import functools
import inspect
import operator
from collections.abc import Callable
from typing import Any

from ... import _C, Tensor
from ...utils._python_dispatch import TorchDispatchMode
from ...utils._pytree import tree_flatten, tree_unflatten
from ..graph import CodeGen, Graph
from ..graph_module import GraphModule
from ..node import Node, map_aggregate

__all__ = ["make_fx"]


def _flatten_spec(args: list, spec: Any) -> list:
    leaves, found = tree_flatten(args)
    if found != spec:
        raise TypeError(f"the inputs' structure differs from the traced one: expected {spec}, got {found}")
    return leaves


class _PyTreeCodeGen(CodeGen):
    """Generated code that takes the traced function's own (nested) inputs and flattens them
    (``in_spec``), and rebuilds outputs of any pytree type from the graph's flat ones (``out_spec``)."""

    def __init__(self, arg_names: list[str], in_spec: Any = None, out_spec: Any = None) -> None:
        self.arg_names = arg_names
        self.in_spec = in_spec
        self.out_spec = out_spec

    def gen_fn_def(self, free_vars: list[str], root_module: str) -> str:
        if self.in_spec is None:
            return super().gen_fn_def(free_vars, root_module)
        args = ", ".join(n.lstrip("*") for n in self.arg_names)  # (*args and **kwargs keep their stars)
        flat = "".join(f"{v}, " for v in free_vars)
        return (f"def forward({', '.join([root_module, *self.arg_names])}):\n"
                f"    {flat}= _flatten_spec([{args}], _in_spec)")

    def generate_output(self, output_repr: str) -> str:
        if self.out_spec is None:
            return super().generate_output(output_repr)
        return f"return _tree_unflatten({output_repr}, _out_spec)"

    def _gen_python_code(self, nodes: list[Node], root_module: str) -> Any:
        code = super()._gen_python_code(nodes, root_module)
        code.globals.update({"_flatten_spec": _flatten_spec, "_in_spec": self.in_spec,
                             "_tree_unflatten": tree_unflatten, "_out_spec": self.out_spec})
        return code


def _plain_structure(spec: Any) -> bool:
    """Whether a pytree is made of tuples, lists and dicts only (a graph's output holds those)."""
    return spec.is_leaf() or spec.type in (tuple, list, dict) and all(_plain_structure(c)
                                                                      for c in spec.children_specs)


class _OpRecorder(TorchDispatchMode):
    def __init__(self, graph: Graph, decompositions: dict) -> None:
        super().__init__()
        self.graph = graph
        self.decompositions = decompositions
        self.nodes: dict[int, Node] = {}
        self.alive: list[Tensor] = []  # every keyed tensor lives until the trace ends: no key is reused
        self.constants: dict[str, Tensor] = {}

    def bind(self, t: Tensor, node: Node) -> None:
        self.nodes[_C._tensor_id(t)] = node
        self.alive.append(t)

    def node_of(self, t: Tensor) -> Node:
        node = self.nodes.get(_C._tensor_id(t))
        if node is None:
            name = f"_tensor_constant{len(self.constants)}"
            self.constants[name] = t
            node = self.graph.get_attr(name)
            self.bind(t, node)
        return node

    def as_argument(self, value: Any, numbers: bool = True) -> Any:
        def convert(a: Any) -> Any:
            if not isinstance(a, Tensor):
                return a
            if numbers and _C._is_wrapped_number(a):  # a Python number the op wrapped: recorded as one
                return a.item()
            return self.node_of(a)

        return map_aggregate(value, convert)

    def __torch_dispatch__(self, func: Callable, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        if func in self.decompositions:
            with self:  # the decomposition's own ops are recorded
                return self.decompositions[func](*args, **kwargs)
        out = func(*args, **kwargs)
        # ops by name take a number for a tensor argument after the first only (as torch.ops does):
        # a wrapped number in first place (a formula's saved scalar) stays a tensor constant
        node_args = (*self.as_argument(args[:1], numbers=False), *self.as_argument(args[1:]))
        node = self.graph.call_function(func, node_args, dict(self.as_argument(kwargs)))
        if isinstance(out, Tensor):
            self.bind(out, node)
        elif isinstance(out, (tuple, list)):
            for i, item in enumerate(out):
                if isinstance(item, Tensor):
                    self.bind(item, self.graph.call_function(operator.getitem, (node, i)))
        return out


def make_fx(f: Callable, decomposition_table: dict | None = None, tracing_mode: str = "real",
            _allow_non_fake_inputs: bool = False, *, pre_dispatch: bool = False, record_module_stack: bool = False,
            _allow_fake_constant: bool = False, _error_on_data_dependent_ops: bool = True) -> Callable[..., GraphModule]:
    """Returns a function that runs ``f`` on its arguments and returns a GraphModule of the ops
    ``f`` ran (``decomposition_table`` maps an op to a function run, and recorded, in its place).
    The GraphModule takes the same (nested) arguments as ``f``. Only ``tracing_mode="real"``
    exists: Ember has no fake or symbolic tensors."""
    if tracing_mode != "real":
        raise NotImplementedError(f"make_fx: tracing_mode={tracing_mode!r} needs fake or symbolic tensors, which Ember "
                                  "does not have; use tracing_mode='real'")
    if pre_dispatch:
        raise NotImplementedError("make_fx: pre_dispatch tracing (above autograd) is not in Ember")
    decompositions = dict(decomposition_table or {})

    @functools.wraps(f)
    def wrapped(*args: Any) -> GraphModule:
        leaves, in_spec = tree_flatten(list(args))
        try:
            params = [p for p in inspect.signature(f).parameters.values()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        except (TypeError, ValueError):
            params = []
        arg_names = [p.name for p in params] if len(params) == len(args) else [f"arg{i}" for i in range(len(args))]
        simple = all(not isinstance(a, (list, tuple, dict)) for a in args)
        graph = Graph()
        recorder = _OpRecorder(graph, decompositions)
        for i, leaf in enumerate(leaves):
            node = graph.placeholder(f"{arg_names[i]}_1" if simple else f"arg{i}_1")
            if isinstance(leaf, Tensor):
                recorder.bind(leaf, node)
        with recorder:
            result = f(*args)
        out_leaves, out_spec = tree_flatten(result)
        if _plain_structure(out_spec):
            graph.output(recorder.as_argument(result))
            out_spec = None
        else:  # a dataclass or other registered type: the graph returns its leaves
            graph.output(tuple(recorder.as_argument(v) for v in out_leaves))
        if not simple or out_spec is not None:
            graph.set_codegen(_PyTreeCodeGen(arg_names, None if simple else in_spec, out_spec))
        return GraphModule(recorder.constants, graph)

    return wrapped
