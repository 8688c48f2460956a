"""GraphModule: a Module whose ``forward`` is generated from a Graph (torch.fx.graph_module)."""

from __future__ import annotations

import copy
import itertools
import linecache
from typing import Any

from ..nn import Module
from .graph import Graph, PythonCode

__all__ = ["GraphModule"]

_source_keys = itertools.count()


def _forward_from_src(src: str, globals_: dict) -> Any:
    # The source is registered with linecache so tracebacks through generated code show its lines.
    key = f"<eval_with_key>.{next(_source_keys)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    namespace = dict(globals_)
    exec(compile(src, key, "exec"), namespace)  # noqa: S102 (code generated from the graph, not loaded data)
    return namespace["forward"]


def _walk_to_parent(to_module: Module, target: str,
                    from_module: Module | None = None) -> tuple[Module, Module | None, str] | None:
    """The modules ``to_module`` and ``from_module`` hold at ``target``'s parent path (the first
    made as empty Modules where missing) and the last atom; None when that parent is already
    ``from_module``'s own, so nothing is left to copy."""
    *path, field = target.split(".")
    for item in path:
        source = getattr(from_module, item) if from_module is not None else None
        existing = getattr(to_module, item, None)
        if source is not None and source is existing:
            return None
        if existing is None:
            existing = Module()
            setattr(to_module, item, existing)
        from_module, to_module = source, existing
    return to_module, from_module, field


def _assign_attr(value: Any, to_module: Module, target: str) -> None:
    parent, _, field = _walk_to_parent(to_module, target)
    _assign_attr_to_parent(value, parent, field)


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    """Copies (by reference) the attribute at ``target`` from one module tree to another; a plain
    tensor becomes a buffer, as in PyTorch."""
    walked = _walk_to_parent(to_module, target, from_module)
    if walked is not None:
        parent, source, field = walked
        _assign_attr_to_parent(getattr(source, field), parent, field)


def _assign_attr_to_parent(value: Any, parent: Module, field: str) -> None:
    from .. import Tensor
    from ..nn import Parameter

    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        parent.register_buffer(field, value)
    else:
        setattr(parent, field, value)


class GraphModule(Module):
    """A Module made from a Graph and the attributes it reads (taken from ``root``: a Module, or
    a dict from dotted path to value). ``code`` is the generated ``forward``; after changing
    ``graph`` in place, call ``recompile()``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphModule:
        # Each instance gets a class of its own, so its generated forward is set on that class
        # without touching other GraphModules.
        base = next(t for t in cls.__mro__ if t.__name__ != "GraphModuleImpl")

        class GraphModuleImpl(base):  # type: ignore[valid-type, misc]
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict[str, Any], graph: Graph, class_name: str = "GraphModule") -> None:
        super().__init__()
        type(self).__name__ = class_name
        type(self).__qualname__ = class_name
        if not isinstance(graph, Graph):
            raise TypeError(f"GraphModule expects a Graph, got {type(graph).__name__}")
        if isinstance(root, Module):
            self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if not isinstance(node.target, str):
                        raise TypeError(f"Node {node.name} has a {node.op} target that is not a string")
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError(f"Node {node.name} referenced target {node.target} but that target was "
                                           "not provided in ``root``!")
                    targets.append(node.target)
            for target in sorted(set(targets), key=lambda t: t.count(".")):
                _assign_attr(root[target], self, target)
        else:
            raise RuntimeError(f"Unsupported type {type(root).__name__} passed for root!")
        self.meta: dict[str, Any] = {}
        self.graph = graph

    @property
    def graph(self) -> Graph:
        """The graph ``forward`` is generated from; assigning one regenerates it."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise TypeError(f"GraphModule.graph must be a Graph, got {type(g).__name__}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The source of the generated ``forward``."""
        return self._code

    def recompile(self) -> PythonCode:
        """Regenerates ``forward`` from the graph (after in-place edits of it)."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        type(self).forward = _forward_from_src(self._code, python_code.globals)
        return python_code

    def print_readable(self, print_output: bool = True) -> str:
        """The module as a class definition around its generated code."""
        body = "\n".join(f"    {line}" if line else line for line in self._code.rstrip("\n").split("\n"))
        text = f"class {type(self).__name__}(ember.nn.Module):\n{body}\n"
        if print_output:
            print(text)
        return text

    def add_submodule(self, target: str, m: Module) -> bool:
        """Installs ``m`` at the dotted path ``target``, making empty parent modules as needed;
        False when a parent on the path exists but is not a Module."""
        *path, field = target.split(".")
        mod: Module = self
        for item in path:
            nxt = getattr(mod, item, None)
            if nxt is None:
                nxt = Module()
                mod.add_module(item, nxt)
            if not isinstance(nxt, Module):
                return False
            mod = nxt
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Removes the submodule at ``target``; False when there is none."""
        *path, field = target.split(".")
        mod: Any = self
        for item in path:
            mod = getattr(mod, item, None)
            if not isinstance(mod, Module):
                return False
        if field not in mod._modules:
            return False
        delattr(mod, field)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Removes the submodules no ``call_module`` or ``get_attr`` node reaches."""
        used: set[str] = set()
        for node in self._graph.nodes:
            if node.op in ("call_module", "get_attr"):
                atoms = node.target.split(".")
                used.update(".".join(atoms[:i]) for i in range(1, len(atoms) + 1))
                if node.op == "call_module":
                    try:
                        module = self.get_submodule(node.target)
                    except AttributeError:
                        continue
                    used.update(f"{node.target}.{name}" for name, _ in module.named_modules() if name)
        for name, _ in list(self.named_modules()):
            if name and name not in used:
                self.delete_submodule(name)

    def __deepcopy__(self, memo: dict) -> GraphModule:
        holder = Module()
        state = copy.deepcopy({k: v for k, v in self.__dict__.items() if k != "_graph"}, memo)
        holder.__dict__.update(state)
        graph = copy.deepcopy(self._graph, memo)
        result = GraphModule(holder, graph, type(self).__name__)
        result.meta = state.get("meta", {})
        for key in ("_forward_hooks", "_forward_pre_hooks"):
            if key in state:
                result.__dict__[key] = state[key]
        return result

    def __reduce__(self) -> tuple:
        # The instance's class is made per instance and cannot be pickled by name: rebuild it.
        state = {k: v for k, v in self.__dict__.items() if k not in ("_graph", "_code")}
        return (_rebuild_graph_module, (state, self._graph, type(self).__name__))

    def __copy__(self) -> GraphModule:
        result = GraphModule(self, self._graph, type(self).__name__)
        result.meta = copy.copy(getattr(self, "meta", {}))
        return result

    def __str__(self) -> str:
        return f"{super().__str__()}\n\n{self._code}"


def _rebuild_graph_module(state: dict, graph: Graph, class_name: str) -> GraphModule:
    gm = GraphModule.__new__(GraphModule)
    type(gm).__name__ = type(gm).__qualname__ = class_name
    gm.__dict__.update(state)
    gm.graph = graph
    return gm
