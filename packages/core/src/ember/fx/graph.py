"""An FX graph: a list of Nodes in program order, and the Python code it stands for
(torch.fx.graph)."""

from __future__ import annotations

import builtins
import copy
import inspect
import keyword
import math
import operator
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .node import Node, _format_arg, _format_target, _qualified_name, _resolve, map_aggregate, map_arg

__all__ = ["CodeGen", "Graph", "PythonCode"]

# Binary operators written infix in generated code (operator.add(a, b) -> a + b).
_INFIX = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/", operator.floordiv: "//",
    operator.mod: "%", operator.pow: "**", operator.matmul: "@", operator.lshift: "<<", operator.rshift: ">>",
    operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.eq: "==", operator.ne: "!=",
    operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">=",
}
_PREFIX = {operator.neg: "-", operator.pos: "+", operator.invert: "~"}

# Names generated code uses for its own globals; nodes never take them.
_CODEGEN_NAMES = {"self", "ember", "operator", "math", "device", "inf", "nan", "NoneType"}
_RESERVED = set(keyword.kwlist) | set(dir(builtins)) | _CODEGEN_NAMES


def _snake_case(name: str) -> str:
    name = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    return name.lower()


class _Namespace:
    """Unique Python identifiers: ``add``, then ``add_1``, ``add_2`` ..."""

    def __init__(self, reserved: set[str] = _RESERVED) -> None:
        self._reserved = reserved
        self._taken: set[str] = set()
        self._next_suffix: dict[str, int] = {}

    def create_name(self, candidate: str) -> str:
        name = re.sub(r"[^0-9a-zA-Z_]+", "_", candidate) or "_unnamed"
        if name[0].isdigit():
            name = f"_{name}"
        match = re.fullmatch(r"(.*)_(\d+)", name)
        base = match.group(1) if match and match.group(1) else name
        if name in self._taken or name in self._reserved:
            suffix = self._next_suffix.get(base, 1)
            while f"{base}_{suffix}" in self._taken or f"{base}_{suffix}" in self._reserved:
                suffix += 1
            self._next_suffix[base] = suffix + 1
            name = f"{base}_{suffix}"
        self._taken.add(name)
        return name

    def release(self, name: str) -> None:
        self._taken.discard(name)


@dataclass
class PythonCode:
    """Generated source and the globals it is to be run with."""

    src: str
    globals: dict[str, Any]


class CodeGen:
    """Turns a Graph into the source of a ``forward`` function (a subclass may change how)."""

    def gen_fn_def(self, free_vars: list[str], root_module: str) -> str:
        return f"def forward({', '.join([root_module, *free_vars])}):"

    def generate_output(self, output_repr: str) -> str:
        return f"return {output_repr}"

    def _gen_python_code(self, nodes: list[Node], root_module: str) -> PythonCode:
        import ember

        globals_: dict[str, Any] = {"ember": ember, "operator": operator, "math": math, "device": ember.device,
                                    "inf": math.inf, "nan": math.nan, "NoneType": type(None)}
        namespace = _Namespace()
        for node in nodes:
            namespace._taken.add(node.name)
        global_names: dict[int, str] = {}

        def add_global(hint: str, obj: Any) -> str:
            if id(obj) in global_names:
                return global_names[id(obj)]
            name = namespace.create_name(hint)
            globals_[name] = obj
            global_names[id(obj)] = name
            return name

        def callable_name(fn: Any) -> str:
            qualified = _qualified_name(fn)
            if qualified is not None:
                return qualified
            name = getattr(fn, "__name__", None) or type(fn).__name__
            module = getattr(fn, "__module__", None)
            return add_global(f"{module}_{name}" if isinstance(module, str) else name, fn)

        def value_repr(arg: Any) -> str:
            if isinstance(arg, Node):
                return arg.name
            if isinstance(arg, tuple):
                items = [value_repr(a) for a in arg]
                if hasattr(arg, "_fields"):
                    return f"{add_global(type(arg).__name__, type(arg))}({', '.join(items)})"
                return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"
            if isinstance(arg, list):
                return f"[{', '.join(value_repr(a) for a in arg)}]"
            if isinstance(arg, dict):
                return "{" + ", ".join(f"{value_repr(k)}: {value_repr(v)}" for k, v in arg.items()) + "}"
            if isinstance(arg, slice):
                return f"slice({value_repr(arg.start)}, {value_repr(arg.stop)}, {value_repr(arg.step)})"
            if arg is None or arg is Ellipsis or isinstance(arg, (bool, int, str, bytes, complex)):
                return repr(arg)
            if isinstance(arg, float):
                if math.isnan(arg):
                    return "nan"
                if math.isinf(arg):
                    return "inf" if arg > 0 else "-inf"
                return repr(arg)
            if isinstance(arg, type):
                return add_global(arg.__name__, arg)
            if callable(arg) and not isinstance(arg, ember.Tensor):
                return callable_name(arg)
            if isinstance(arg, ember.device):
                return repr(arg)
            text = repr(arg)
            if text.startswith("ember.") and _resolve(*text.rsplit(".", 1)) is arg:
                return text
            return add_global(_snake_case(type(arg).__name__), arg)

        def type_repr(t: Any) -> str:
            if isinstance(t, type) and getattr(builtins, t.__name__, None) is t:
                return t.__name__
            if isinstance(t, str):
                return repr(t)
            if isinstance(t, type):
                return add_global(t.__name__, t)
            return add_global("annotation", t)

        def call_args(args: tuple, kwargs: dict) -> str:
            parts = [value_repr(a) for a in args] + [f"{k} = {value_repr(v)}" for k, v in kwargs.items()]
            return ", ".join(parts)

        def attr_path(base: str, path: str) -> str:
            out = base
            for atom in path.split("."):
                out = f"{out}.{atom}" if atom.isidentifier() and not keyword.iskeyword(atom) else \
                    f'getattr({out}, "{atom}")'
            return out

        # Each value is dropped right after its last use, so the generated code frees memory as the
        # graph's interpreter does.
        last_use: dict[Node, Node] = {}
        for node in reversed(nodes):
            for source in node.all_input_nodes:
                last_use.setdefault(source, node)
        to_free: dict[Node, list[Node]] = {}
        for source, user in last_use.items():
            to_free.setdefault(user, []).append(source)

        free_vars: list[str] = []
        keyword_only: list[str] = []
        body: list[str] = []
        for node in nodes:
            line = None
            if node.op == "placeholder":
                default = f" = {value_repr(node.args[0])}" if node.args else ""
                annotation = f" : {type_repr(node.type)}" if node.type is not None else ""
                text = f"{node.target}{annotation}{default}"
                (keyword_only if node.meta.get("keyword_only") else free_vars).append(text)
                bare = node.target.lstrip("*")
                if bare != node.name:
                    line = f"{node.name} = {bare}"
            elif node.op == "get_attr":
                line = f"{node.name} = {attr_path(root_module, node.target)}"
            elif node.op == "call_module":
                line = f"{node.name} = {attr_path(root_module, node.target)}({call_args(node.args, node.kwargs)})"
            elif node.op == "call_method":
                receiver, *rest = node.args
                line = f"{node.name} = {value_repr(receiver)}.{node.target}({call_args(tuple(rest), node.kwargs)})"
            elif node.op == "call_function":
                line = f"{node.name} = {self._call_function_repr(node, value_repr, call_args, callable_name)}"
            elif node.op == "output":
                body.append(self.generate_output(value_repr(node.args[0])))
                continue
            freed = [n.name for n in to_free.get(node, ())]
            if node.op != "placeholder" and not node.users:
                freed.append(node.name)
            if line is None:
                continue
            if freed:
                line += ";  " + " = ".join(freed) + " = None"
            body.append(line)
        if not body or not body[-1].startswith("return"):
            body.append("pass")
        if keyword_only:  # Python's order: positional, *args, keyword-only, **kwargs
            double = [v for v in free_vars if v.startswith("**")]
            single = [v for v in free_vars if v.startswith("*") and not v.startswith("**")] or ["*"]
            plain = [v for v in free_vars if not v.startswith("*")]
            free_vars = plain + single + keyword_only + double
        src = "\n".join([self.gen_fn_def(free_vars, root_module), *(f"    {line}" for line in body)]) + "\n"
        return PythonCode(src, globals_)

    @staticmethod
    def _call_function_repr(node: Node, value_repr: Callable, call_args: Callable, callable_name: Callable) -> str:
        target, args, kwargs = node.target, node.args, node.kwargs
        if not kwargs:
            if target in _INFIX and len(args) == 2:
                return f"{value_repr(args[0])} {_INFIX[target]} {value_repr(args[1])}"
            if target in _PREFIX and len(args) == 1:
                return f"{_PREFIX[target]}{value_repr(args[0])}"
            if target is operator.getitem and len(args) == 2:
                return f"{value_repr(args[0])}[{value_repr(args[1])}]"
            if target is builtins.getattr and len(args) == 2 and isinstance(args[1], str) \
                    and args[1].isidentifier() and not keyword.iskeyword(args[1]):
                return f"{value_repr(args[0])}.{args[1]}"
        return f"{callable_name(target)}({call_args(args, kwargs)})"


class _NodeName:
    """A node argument in a pickled graph: the name of the node it reads."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> tuple:
        return (_NodeName, (self.name,))


class _TargetName:
    """A call_function target in a pickled graph, by the dotted name generated code uses: native
    functions have no importable qualified name of their own."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __reduce__(self) -> tuple:
        return (_TargetName, (self.name,))

    def resolve(self) -> Any:
        import importlib

        atoms = self.name.split(".")
        if len(atoms) == 1:
            return getattr(builtins, atoms[0])
        if atoms[0] not in ("ember", "operator", "math"):  # only the roots _qualified_name gives
            raise RuntimeError(f"cannot resolve function {self.name!r} of a pickled graph")
        found: Any = importlib.import_module(atoms[0])
        for atom in atoms[1:]:
            found = getattr(found, atom)
        return found


def _graph_from_nodes(nodes: list) -> Graph:
    graph = Graph()
    env: dict[str, Node] = {}

    def load(a: Any) -> Any:
        return env[a.name] if isinstance(a, _NodeName) else a

    for name, op, target, args, kwargs, type_expr, meta in nodes:
        if isinstance(target, _TargetName):
            target = target.resolve()
        node = graph.create_node(op, target, map_aggregate(args, load), dict(map_aggregate(kwargs, load)), name,
                                 type_expr)
        node.meta = meta
        env[name] = node
    return graph


class _NodeList:
    """The nodes of a graph, in order or reversed; iteration survives erasing the current node."""

    def __init__(self, graph: Graph, reverse: bool = False) -> None:
        self._graph = graph
        self._reverse = reverse

    def __len__(self) -> int:
        return self._graph._len

    def __iter__(self) -> Iterator[Node]:
        root = self._graph._root
        step = "_prev" if self._reverse else "_next"
        cur = getattr(root, step)
        while cur is not root:
            nxt = getattr(cur, step)
            if not cur._erased:
                yield cur
            cur = nxt

    def __reversed__(self) -> Iterator[Node]:
        return iter(_NodeList(self._graph, not self._reverse))


class _InsertPoint:
    def __init__(self, graph: Graph, insert: Callable[[Node], None]) -> None:
        self._graph = graph
        self._saved, graph._insert = graph._insert, insert

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self._graph._insert = self._saved


class Graph:
    """The nodes of a program in order. Build one with ``placeholder``, ``get_attr``,
    ``call_function``, ``call_method``, ``call_module`` and ``output`` (or get one from
    ``symbolic_trace``); new nodes go at the end, or where ``inserting_before``/``inserting_after``
    say."""

    def __init__(self, owning_module: Any = None, tracer_cls: type | None = None,
                 tracer_extras: dict | None = None) -> None:
        self._root = Node(self, "", "root", "", (), {})
        self._namespace = _Namespace()
        self._len = 0
        self._insert: Callable[[Node], None] = self._root.prepend
        self._owning_module = owning_module
        self._tracer_cls = tracer_cls
        self._tracer_extras = tracer_extras
        self._codegen = CodeGen()

    @property
    def owning_module(self) -> Any:
        """The GraphModule this graph belongs to, if any."""
        return self._owning_module

    @owning_module.setter
    def owning_module(self, module: Any) -> None:
        self._owning_module = module

    @property
    def nodes(self) -> _NodeList:
        """The nodes in program order (``reversed(graph.nodes)`` walks back)."""
        return _NodeList(self)

    def find_nodes(self, *, op: str, target: Any = None) -> list[Node]:
        """The nodes with this ``op`` (and ``target``, when given), in order."""
        return [n for n in self.nodes if n.op == op and (target is None or n.target == target)]

    def output_node(self) -> Node:
        """The graph's output node."""
        for node in reversed(self.nodes):
            if node.op == "output":
                return node
        raise RuntimeError("Graph has no output node")

    # ---- building ----------------------------------------------------------------------------

    def create_node(self, op: str, target: Any, args: tuple | None = None, kwargs: dict | None = None,
                    name: str | None = None, type_expr: Any = None) -> Node:
        """Makes a node and inserts it at the insertion point."""
        args = () if args is None else args
        kwargs = {} if kwargs is None else kwargs
        if not isinstance(args, tuple):
            raise TypeError(f"args must be a tuple, got {type(args).__name__}")
        if not isinstance(kwargs, dict):
            raise TypeError(f"kwargs must be a dict, got {type(kwargs).__name__}")
        candidate = name if name is not None else self._target_to_name(target)
        node = Node(self, self._namespace.create_name(candidate), op, target, args, kwargs, type_expr)
        self._insert(node)
        self._len += 1
        return node

    @staticmethod
    def _target_to_name(target: Any) -> str:
        if isinstance(target, str):
            base = target.lstrip("*")
            return _snake_case(base.replace(".", "_"))
        name = getattr(target, "__name__", None) or type(target).__name__
        return _snake_case(name)

    def placeholder(self, name: str, type_expr: Any = None, default_value: Any = inspect.Signature.empty) -> Node:
        """An input named ``name`` (a default value makes it optional)."""
        args = () if default_value is inspect.Signature.empty else (default_value,)
        return self.create_node("placeholder", name, args, type_expr=type_expr)

    def get_attr(self, qualified_name: str, type_expr: Any = None) -> Node:
        """Reads the owning module's attribute at the dotted path ``qualified_name``."""
        return self.create_node("get_attr", qualified_name, type_expr=type_expr)

    def call_module(self, module_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:
        """Calls the owning module's submodule at the dotted path ``module_name``."""
        return self.create_node("call_module", module_name, args, kwargs, type_expr=type_expr)

    def call_method(self, method_name: str, args: tuple | None = None, kwargs: dict | None = None,
                    type_expr: Any = None) -> Node:
        """Calls method ``method_name`` of ``args[0]``."""
        return self.create_node("call_method", method_name, args, kwargs, type_expr=type_expr)

    def call_function(self, the_function: Callable, args: tuple | None = None, kwargs: dict | None = None,
                      type_expr: Any = None) -> Node:
        """Calls ``the_function``."""
        return self.create_node("call_function", the_function, args, kwargs, type_expr=type_expr)

    def output(self, result: Any, type_expr: Any = None) -> Node:
        """Makes ``result`` the graph's output."""
        return self.create_node("output", "output", (result,), type_expr=type_expr)

    def node_copy(self, node: Node, arg_transform: Callable[[Node], Any] = lambda x: x) -> Node:
        """A copy of ``node`` (from any graph) in this one, its input nodes mapped by ``arg_transform``."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        copied = self.create_node(node.op, node.target, args, kwargs, node.name, node.type)
        copied.meta = copy.copy(node.meta)
        return copied

    def graph_copy(self, g: Graph, val_map: dict[Node, Any], return_output_node: bool = False) -> Any:
        """Copies every node of ``g`` but its output into this graph, recording old -> new in
        ``val_map`` (pre-filled entries, e.g. for placeholders, are used as they are); returns the
        value ``g`` outputs, mapped (or the output node itself with ``return_output_node``)."""
        for node in g.nodes:
            if node in val_map:
                continue
            if node.op == "output":
                mapped = map_arg(node.args[0], lambda n: val_map[n])
                return node if return_output_node else mapped
            val_map[node] = self.node_copy(node, lambda n: val_map[n])
        return None

    def __deepcopy__(self, memo: dict) -> Graph:
        memo = memo if memo else {}
        g = Graph(tracer_cls=self._tracer_cls, tracer_extras=self._tracer_extras)
        g._codegen = copy.deepcopy(self._codegen)
        output_node = g.graph_copy(self, val_map=memo, return_output_node=True)
        if output_node is not None:
            g.output(map_arg(output_node.args[0], lambda n: memo[n]), type_expr=output_node.type)
        return g

    def __reduce__(self) -> tuple:
        # a flat list of nodes: pickling the linked nodes themselves would recurse once per node
        def save(a: Node) -> _NodeName:
            return _NodeName(a.name)

        nodes = []
        for n in self.nodes:
            target = n.target
            if not isinstance(target, str) and _qualified_name(target) is not None:
                target = _TargetName(_qualified_name(target))
            nodes.append((n.name, n.op, target, map_arg(n.args, save), map_arg(n.kwargs, save), n.type, n.meta))
        return (_graph_from_nodes, (nodes,))

    def erase_node(self, to_erase: Node) -> None:
        """Removes a node nothing reads."""
        if to_erase.graph is not self:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it does not belong to this Graph")
        if to_erase._erased:
            raise RuntimeError(f"Tried to erase Node {to_erase} twice")
        if to_erase.users:
            raise RuntimeError(f"Tried to erase Node {to_erase} but it still had {len(to_erase.users)} users in the "
                               f"graph: {to_erase.users}!")
        to_erase._remove_from_list()
        to_erase._erased = True
        self._len -= 1
        to_erase._update_args_kwargs((), {})
        self._namespace.release(to_erase.name)

    def inserting_before(self, n: Node | None = None) -> _InsertPoint:
        """A context in which new nodes go just before ``n`` (the start of the graph when None)."""
        if n is None:
            return self.inserting_after(self._root)
        if n.graph is not self:
            raise RuntimeError("Node to insert before is not in this graph")
        return _InsertPoint(self, n.prepend)

    def inserting_after(self, n: Node | None = None) -> _InsertPoint:
        """A context in which each new node goes just after ``n`` (the end of the graph when None);
        as in PyTorch, several new nodes thus come in reverse order."""
        if n is None:
            return self.inserting_before(self._root)
        if n.graph is not self:
            raise RuntimeError("Node to insert after is not in this graph")
        return _InsertPoint(self, n.append)

    # ---- passes ------------------------------------------------------------------------------

    def eliminate_dead_code(self) -> bool:
        """Removes nodes whose results nothing reads and that have no effect (``Node.is_impure``);
        returns whether anything was removed."""
        changed = False
        for node in reversed(self.nodes):
            if not node.users and not node.is_impure():
                self.erase_node(node)
                changed = True
        return changed

    def lint(self) -> None:
        """Checks the graph is well formed: linked in order, names unique, every argument a node of
        this graph defined earlier, use lists consistent, at most one output and nothing after it,
        and (with an owning module) every get_attr/call_module target present."""
        seen: set[Node] = set()
        names: set[str] = set()
        outputs = 0
        for node in self.nodes:
            if node.graph is not self:
                raise RuntimeError(f"Node '{node.name}' does not belong to this Graph")
            if node._next._prev is not node or node._prev._next is not node:
                raise RuntimeError(f"Node '{node.name}' is not linked consistently")
            if node.name in names:
                raise RuntimeError(f"Node redefined name {node.name}!")
            names.add(node.name)
            if outputs:
                raise RuntimeError(f"Node '{node.name}' comes after the graph's output")
            for source in node.all_input_nodes:
                if source.graph is not self:
                    raise RuntimeError(f"Argument '{source.name}' of Node '{node.name}' does not belong to this Graph")
                if source not in seen:
                    raise RuntimeError(f"Argument '{source.name}' of Node '{node.name}' was used before it has been "
                                       "defined! Please check that Nodes in the graph are topologically ordered")
                if node not in source.users:
                    raise RuntimeError(f"Node '{node.name}' reads '{source.name}' but is not among its users")
            if node.op == "output":
                outputs += 1
            seen.add(node)
        for node in seen:
            for user in node.users:
                if user not in seen:
                    raise RuntimeError(f"Node '{node.name}' has a user '{user.name}' outside the graph")
        if self._owning_module is not None:
            for node in seen:
                if node.op not in ("get_attr", "call_module"):
                    continue
                found: Any = self._owning_module
                for atom in node.target.split("."):
                    if not hasattr(found, atom):
                        raise RuntimeError(f"Node '{node.name}' target {node.target} references nonexistent "
                                           f"attribute {atom} of {type(found).__name__}")
                    found = getattr(found, atom)
                from ..nn import Module

                if node.op == "call_module" and not isinstance(found, Module):
                    raise RuntimeError(f"Node '{node.name}' target {node.target} {atom} is not a Module")

    # ---- code and printing -------------------------------------------------------------------

    def python_code(self, root_module: str = "self") -> PythonCode:
        """The source of ``forward(self, <inputs>)`` for this graph, with its globals."""
        return self._codegen._gen_python_code(list(self.nodes), root_module)

    def set_codegen(self, codegen: CodeGen) -> None:
        self._codegen = codegen

    def __str__(self) -> str:
        lines = ["graph():"]
        lines += [f"    {node.format_node()}" for node in self.nodes]
        return "\n".join(lines)

    def print_tabular(self) -> None:
        """Prints a table of the nodes: opcode, name, target, args, kwargs."""
        rows = [("opcode", "name", "target", "args", "kwargs")]
        for n in self.nodes:
            rows.append((n.op, n.name, _format_target(n.target), _format_arg(n.args), _format_arg(n.kwargs)))
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        for i, row in enumerate(rows):
            print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
            if i == 0:
                print("  ".join("-" * w for w in widths))
