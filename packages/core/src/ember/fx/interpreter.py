"""Running a graph node by node (Interpreter) and rewriting it while doing so (Transformer)
(torch.fx.interpreter). Override the method named after a node's op to change what that kind of
node does."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from ._symbolic_trace import Tracer
from .graph import Graph
from .graph_module import GraphModule
from .node import Node, map_aggregate, map_arg
from .proxy import Proxy

__all__ = ["Interpreter", "Transformer"]


class Interpreter:
    """Runs ``module``'s graph (or ``graph``) on real values. With ``garbage_collect_values``
    each value is dropped after its last use, as the generated code does."""

    def __init__(self, module: Any, garbage_collect_values: bool = True, graph: Graph | None = None) -> None:
        self.module = module
        self.submodules = dict(module.named_modules())
        self.graph = graph if graph is not None else module.graph
        self.env: dict[Node, Any] = {}
        self.name = "Interpreter"
        self.garbage_collect_values = garbage_collect_values
        self.extra_traceback = True
        self.args_iter: Iterator = iter(())
        self.user_to_last_uses: dict[Node, list[Node]] = {}
        if garbage_collect_values:
            seen: set[Node] = set()
            for node in reversed(self.graph.nodes):
                for source in node.all_input_nodes:
                    if source not in seen:
                        seen.add(source)
                        self.user_to_last_uses.setdefault(node, []).append(source)

    def run(self, *args: Any, initial_env: dict[Node, Any] | None = None, enable_io_processing: bool = True) -> Any:
        """Runs the graph on ``args`` and returns its output; ``initial_env`` gives values for
        nodes to skip."""
        self.env = initial_env if initial_env is not None else {}
        self.args_iter = iter(args)
        for node in self.graph.nodes:
            if node in self.env:
                continue
            try:
                self.env[node] = self.run_node(node)
            except Exception as e:
                if self.extra_traceback:
                    e.add_note(f"While executing {node.format_node()}")
                raise
            if self.garbage_collect_values:
                for dead in self.user_to_last_uses.get(node, ()):
                    self.env.pop(dead, None)
            if node.op == "output":
                return self.env[node]
        return None

    def boxed_run(self, args_list: list) -> Any:
        """``run`` on the items of ``args_list``, which is emptied first so values can be freed."""
        args = list(args_list)
        args_list.clear()
        return self.run(*args)

    def run_node(self, n: Node) -> Any:
        """Runs one node: its arguments fetched, then the method named after its op."""
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per op -------------------------------------------------------------------

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Any:
        if target.startswith("**"):
            raise RuntimeError(f"Interpreter.run takes positional arguments only; cannot fill {target}")
        if target.startswith("*"):
            return list(self.args_iter)
        try:
            return next(self.args_iter)
        except StopIteration:
            if args:
                return args[0]
            raise RuntimeError(f"Expected positional argument for parameter {target}, but one was not passed in!") \
                from None

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Any:
        return target(*args, **kwargs)

    def call_method(self, target: str, args: tuple, kwargs: dict) -> Any:
        self_obj, *rest = args
        return getattr(self_obj, target)(*rest, **kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        return self.fetch_attr(target)(*args, **kwargs)

    def output(self, target: str, args: tuple, kwargs: dict) -> Any:
        return args[0]

    # ---- helpers -----------------------------------------------------------------------------

    def fetch_attr(self, target: str) -> Any:
        """The module's attribute at the dotted path ``target``."""
        found = self.module
        for i, atom in enumerate(target.split(".")):
            if not hasattr(found, atom):
                raise RuntimeError(f"Node referenced nonexistent target {'.'.join(target.split('.')[:i + 1])}")
            found = getattr(found, atom)
        return found

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple[tuple, dict]:
        """The node's arguments with each input node replaced by its value."""
        return self.map_nodes_to_values(n.args, n), self.map_nodes_to_values(n.kwargs, n)

    def map_nodes_to_values(self, args: Any, n: Node) -> Any:
        def load(arg: Node) -> Any:
            if arg not in self.env:
                raise RuntimeError(f"Node {n} referenced nonexistent value {arg}! Run Graph.lint() to diagnose such "
                                   "issues")
            return self.env[arg]

        return map_arg(args, load)


class _TransformerTracer(Tracer):
    # every module call stays one node: the Transformer rewrites one level of the graph
    def __init__(self, graph: Graph) -> None:
        super().__init__()
        self.graph = graph

    def is_leaf_module(self, m: Any, module_qualified_name: str) -> bool:
        return True


class Transformer(Interpreter):
    """Runs the graph on Proxies to build a new one: override a node kind's method to change what
    it becomes; ``transform()`` returns the new GraphModule."""

    def __init__(self, module: GraphModule) -> None:
        super().__init__(module)
        self.new_graph = Graph()
        self.new_graph.set_codegen(module.graph._codegen)
        self.tracer = _TransformerTracer(self.new_graph)
        self.tracer.root = module

    def placeholder(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        default = args[0] if args else inspect.Signature.empty
        return Proxy(self.new_graph.placeholder(target, default_value=default), self.tracer)

    def get_attr(self, target: str, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("get_attr", target, args, kwargs)

    def call_module(self, target: str, args: tuple, kwargs: dict) -> Any:
        submod = self.fetch_attr(target)
        return self.tracer.call_module(submod, submod.forward, args, kwargs)

    def call_function(self, target: Any, args: tuple, kwargs: dict) -> Proxy:
        return self.tracer.create_proxy("call_function", target, args, kwargs)

    def transform(self) -> GraphModule:
        """The rewritten module."""
        result = super().run(enable_io_processing=False)
        if result is not None:
            self.new_graph.output(map_aggregate(result, lambda a: a.node if isinstance(a, Proxy) else a))
        return GraphModule(self.module, self.new_graph)
