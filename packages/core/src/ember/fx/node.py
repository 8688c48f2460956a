"""One operation of an FX graph (torch.fx.node).

A Node's ``op`` says what it does; its ``target`` says to what:

- ``placeholder``: an input of the graph, ``target`` the parameter's name;
- ``get_attr``: an attribute of the owning module, ``target`` its dotted path;
- ``call_function``: ``target(*args, **kwargs)``, ``target`` a Python callable;
- ``call_method``: ``args[0].<target>(*args[1:], **kwargs)``, ``target`` a method name;
- ``call_module``: the submodule at the dotted path ``target`` called on the arguments;
- ``output``: the graph's result, ``args[0]``.

Arguments may nest Nodes inside tuples, lists, dicts and slices; a node records the nodes it reads
(``all_input_nodes``) and the nodes that read it (``users``), kept right by the ``args``/``kwargs``
setters.
"""

from __future__ import annotations

import builtins
import math  # noqa: F401 - generated code names math's functions
import operator  # noqa: F401 - and operator's
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .immutable_collections import immutable_dict, immutable_list

if TYPE_CHECKING:
    from .graph import Graph
    from .operator_schemas import ArgsKwargsPair

__all__ = ["Node", "has_side_effect", "map_aggregate", "map_arg"]

_OPS = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output", "root")

# Functions whose calls a dead-code pass keeps although nothing reads their result.
_side_effectful_functions: set = {builtins.print}


def has_side_effect(fn: Callable) -> Callable:
    """Marks ``fn`` as having a side effect, so ``Graph.eliminate_dead_code`` keeps its calls;
    returns ``fn`` (usable as a decorator)."""
    _side_effectful_functions.add(fn)
    return fn


def map_aggregate(a: Any, fn: Callable[[Any], Any]) -> Any:
    """Applies ``fn`` to every leaf of ``a``, rebuilding its tuples (named ones too), lists,
    dicts and slices; lists and dicts come back immutable, as node arguments are kept."""
    if isinstance(a, tuple):
        items = tuple(map_aggregate(elem, fn) for elem in a)
        return type(a)(*items) if hasattr(a, "_fields") else items
    if isinstance(a, list):
        return immutable_list(map_aggregate(elem, fn) for elem in a)
    if isinstance(a, dict):
        return immutable_dict((key, map_aggregate(value, fn)) for key, value in a.items())
    if isinstance(a, slice):
        return slice(map_aggregate(a.start, fn), map_aggregate(a.stop, fn), map_aggregate(a.step, fn))
    return fn(a)


def map_arg(a: Any, fn: Callable[[Node], Any]) -> Any:
    """Applies ``fn`` to every Node inside ``a``, leaving other leaves as they are."""
    if not callable(fn):
        raise TypeError("map_arg(a, fn): fn must be a callable")
    return map_aggregate(a, lambda x: fn(x) if isinstance(x, Node) else x)


def _type_repr(t: Any) -> str:
    if isinstance(t, type) and t.__module__ != "builtins":
        return f"{t.__module__}.{t.__qualname__}"
    return t.__name__ if isinstance(t, type) else repr(t)


def _resolve(module: str, name: str) -> Any:
    found = sys.modules.get(module)
    if found is None:
        parts = module.split(".")
        found = sys.modules.get(parts[0])
        for part in parts[1:]:
            found = getattr(found, part, None)
    return getattr(found, name, None)


def _qualified_name(fn: Any) -> str | None:
    """The dotted name generated code reaches ``fn`` by (``getattr``, ``operator.add``,
    ``math.sqrt``, ``ember.relu``, ``ember.nn.functional.gelu``), or None when it has none."""
    name = getattr(fn, "__name__", None)
    if not isinstance(name, str):
        return None
    op_name = getattr(fn, "name", None)
    if type(fn).__name__ == "OpOverload" and isinstance(op_name, str) and "::" in op_name:
        namespace, short = op_name.split("::", 1)
        return f"ember.ops.{namespace}.{short}"
    if getattr(builtins, name, None) is fn:
        return name
    for module in ("operator", "math", "ember"):
        if _resolve(module, name) is fn:
            return f"{module}.{name}"
    module = getattr(fn, "__module__", None)
    if isinstance(module, str) and module.startswith("ember.") and _resolve(module, name) is fn:
        return f"{module}.{name}"
    return None


def _format_target(target: Any) -> str:
    if isinstance(target, str):
        return target
    qualified = _qualified_name(target)
    if qualified is not None:
        return qualified
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__qualname__", None) or getattr(target, "__name__", None) or repr(target)
    return f"{module}.{name}" if module else name


class Node:
    """A node of a ``Graph``; made by the Graph's ``create_node`` and its helpers, never directly."""

    def __init__(self, graph: Graph, name: str, op: str, target: Any, args: tuple, kwargs: dict,
                 return_type: Any = None) -> None:
        if op not in _OPS:
            raise ValueError(f"Node op must be one of {_OPS[:-1]}, got {op!r}")
        if op in ("call_method", "call_module", "get_attr", "placeholder") and not isinstance(target, str):
            raise ValueError(f"Node target for op {op!r} must be a string, got {type(target).__name__}")
        if op == "call_function" and not callable(target):
            raise ValueError(f"Node target for call_function must be callable, got {target!r}")
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.type = return_type
        self.meta: dict[str, Any] = {}
        self.users: dict[Node, None] = {}
        self._input_nodes: dict[Node, None] = {}
        self._args: tuple = ()
        self._kwargs: dict = immutable_dict()
        self._prev: Node = self
        self._next: Node = self
        self._erased = False
        self._update_args_kwargs(args, kwargs)

    # ---- the list of nodes -------------------------------------------------------------------

    @property
    def next(self) -> Node:
        """The node after this one (the graph's root sentinel after the last)."""
        return self._next

    @property
    def prev(self) -> Node:
        """The node before this one (the graph's root sentinel before the first)."""
        return self._prev

    def prepend(self, x: Node) -> None:
        """Moves ``x`` to just before this node (both in one graph)."""
        if x.graph is not self.graph:
            raise RuntimeError("Attempting to move a Node into a different Graph")
        if self is x:
            raise RuntimeError("Trying to prepend a node to itself")
        x._remove_from_list()
        p = self._prev
        p._next, x._prev = x, p
        x._next, self._prev = self, x

    def append(self, x: Node) -> None:
        """Moves ``x`` to just after this node."""
        self._next.prepend(x)

    def _remove_from_list(self) -> None:
        p, n = self._prev, self._next
        p._next, n._prev = n, p
        self._prev = self._next = self

    # ---- arguments and uses ------------------------------------------------------------------

    @property
    def args(self) -> tuple:
        """The positional arguments; assigning them updates the use lists."""
        return self._args

    @args.setter
    def args(self, value: tuple) -> None:
        self._update_args_kwargs(value, self._kwargs)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments; assigning them updates the use lists."""
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value: dict) -> None:
        self._update_args_kwargs(self._args, value)

    @property
    def all_input_nodes(self) -> list[Node]:
        """The nodes this one reads, each once, in the order they appear in its arguments."""
        return list(self._input_nodes)

    def _update_args_kwargs(self, args: Any, kwargs: Any) -> None:
        if not isinstance(args, tuple):
            raise TypeError(f"Node args must be a tuple, got {type(args).__name__}")
        if not isinstance(kwargs, dict):
            raise TypeError(f"Node kwargs must be a dict, got {type(kwargs).__name__}")
        for old in self._input_nodes:
            old.users.pop(self, None)
        self._input_nodes = {}
        self._args = map_arg(args, self._record_input)
        self._kwargs = map_arg(kwargs, self._record_input)

    def _record_input(self, n: Node) -> Node:
        if n.graph is not self.graph:
            raise RuntimeError(f"Node '{self.name}' cannot take '{n.name}' as an argument: it belongs to another "
                               "Graph")
        self._input_nodes.setdefault(n)
        n.users.setdefault(self)
        return n

    def update_arg(self, idx: int, arg: Any) -> None:
        """Replaces positional argument ``idx``."""
        args = list(self._args)
        args[idx] = arg
        self.args = tuple(args)

    def update_kwarg(self, key: str, arg: Any) -> None:
        """Sets keyword argument ``key``."""
        self.kwargs = {**self._kwargs, key: arg}

    def replace_all_uses_with(self, replace_with: Node, delete_user_cb: Callable[[Node], bool] = lambda user: True,
                              *, propagate_meta: bool = False) -> list[Node]:
        """Makes every user of this node (those ``delete_user_cb`` accepts) read ``replace_with``
        instead; returns the users changed. ``propagate_meta`` copies this node's ``meta`` to
        ``replace_with``, which must have none of its own."""
        if propagate_meta:
            if replace_with.meta:
                raise RuntimeError("Called node.replace_all_uses_with(replace_with, propagate_meta=True), but "
                                   "replace_with already has .meta keys")
            replace_with.meta.update(self.meta)
        changed = [user for user in list(self.users) if delete_user_cb(user)]
        for user in changed:
            user.replace_input_with(self, replace_with)
        return changed

    def replace_input_with(self, old_input: Node, new_input: Any) -> None:
        """Makes this node read ``new_input`` wherever it read ``old_input``."""
        swap = lambda n: new_input if n is old_input else n  # noqa: E731
        self._update_args_kwargs(map_arg(self._args, swap), map_arg(self._kwargs, swap))

    def normalized_arguments(self, root: Any, arg_types: tuple | None = None, kwarg_types: dict | None = None,
                             normalize_to_only_use_kwargs: bool = False) -> ArgsKwargsPair | None:
        """This call's arguments matched to its target's signature (``operator_schemas``): for a
        ``call_function`` node normalize_function's answer, for a ``call_module`` node
        normalize_module's on `root`; None for the other ops or when no signature fits.
        `arg_types` / `kwarg_types` pick among overloads that all match."""
        from .operator_schemas import normalize_function, normalize_module

        if self.op == "call_function":
            if not callable(self.target):
                raise AssertionError(f"Expected callable target, got {type(self.target)}")
            return normalize_function(self.target, self.args, self.kwargs, arg_types, kwarg_types,
                                      normalize_to_only_use_kwargs=normalize_to_only_use_kwargs)
        if self.op == "call_module":
            if not isinstance(self.target, str):
                raise AssertionError(f"Expected str target for call_module, got {type(self.target)}")
            return normalize_module(root, self.target, self.args, self.kwargs,
                                    normalize_to_only_use_kwargs=normalize_to_only_use_kwargs)
        return None

    # ---- properties --------------------------------------------------------------------------

    @property
    def stack_trace(self) -> str | None:
        """Where the traced program made this node, when the tracer recorded it."""
        return self.meta.get("stack_trace")

    @stack_trace.setter
    def stack_trace(self, trace: str | None) -> None:
        self.meta["stack_trace"] = trace

    def is_impure(self) -> bool:
        """Whether removing this node could change what the program does even when nothing reads
        its result: inputs and output, calls of side-effectful functions, in-place methods and
        functions (a trailing underscore, as PyTorch names them), calls writing into an ``out=``
        node, and modules marked ``_is_impure``."""
        if self.op in ("placeholder", "output"):
            return True
        if self.op == "call_function":
            name = getattr(self.target, "__name__", "")
            writes_out = isinstance(self.kwargs.get("out"), Node)  # a registered op writing into out=
            return self.target in _side_effectful_functions or _is_inplace_name(name) or writes_out
        if self.op == "call_method":
            return _is_inplace_name(self.target)
        if self.op == "call_module":
            root = self.graph.owning_module
            if root is None:
                return False
            try:
                module = root.get_submodule(self.target)
            except AttributeError:
                return False
            return bool(getattr(module, "_is_impure", False))
        return False

    def format_node(self) -> str:
        """A one-line description: ``%name : [num_users=N] = op[target=...](args = ..., kwargs = ...)``."""
        if self.op == "root":
            return ""
        head = f"%{self.name} : "
        if self.type is not None:
            head += f"{_type_repr(self.type)} "
        head += f"[num_users={len(self.users)}] = "
        if self.op == "placeholder":
            default = f" default={self.args[0]!r}" if self.args else ""
            return f"{head}placeholder[target={self.target}]{default}"
        if self.op == "output":
            return f"return {self.args[0]!r}"
        return (f"{head}{self.op}[target={_format_target(self.target)}](args = {_format_arg(self.args)}, "
                f"kwargs = {_format_arg(self.kwargs)})")

    def __repr__(self) -> str:
        return self.name


def _is_inplace_name(name: str) -> bool:
    return name.endswith("_") and not name.endswith("__") and name != "_"


def _format_arg(arg: Any) -> str:
    if isinstance(arg, Node):
        return f"%{arg.name}"
    if isinstance(arg, tuple):
        inner = ", ".join(_format_arg(a) for a in arg)
        return f"({inner},)" if len(arg) == 1 else f"({inner})"
    if isinstance(arg, list):
        return "[" + ", ".join(_format_arg(a) for a in arg) + "]"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {_format_arg(v)}" for k, v in arg.items()) + "}"
    if callable(arg) and _qualified_name(arg) is not None or isinstance(arg, types.FunctionType):
        return _format_target(arg)
    return repr(arg)

