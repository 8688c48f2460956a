"""unflatten (torch.export.unflatten): an exported program as a module hierarchy like the one it
was exported from.

``unflatten(ep)`` returns an ``UnflattenedModule`` whose submodules sit at the original paths and
hold the parameters, buffers and constants at the original names (so ``state_dict()`` has the
original's keys); each submodule that ran ops is an ``InterpreterModule`` running its part of the
graph, found from the ``nn_module_stack`` export writes on each node, and its parent calls it.
The parts are cut where PyTorch cuts them: a submodule takes the values it reads from outside
(its own state it reads as attributes) and returns the ones read after it. A submodule named in
``export(..., preserve_module_call_signature=...)`` instead takes the arguments and returns the
result its forward had, so ``unflat.sub = Other()`` swaps in another module. Parameters, buffers
and constants are copies of the program's; a tied weight is one tensor at each of its names.

Where Ember differs: a module path that ran no op (a container such as a ModuleList, an Identity)
is a plain ``nn.Module``; lifted constants sit at the root under Ember's names
(``lifted_tensor_<i>``), and a preserved submodule reading one holds it too; inputs' shapes are
not checked against the exported ones (as ``ep.module()`` does not check them), and adapting the
inputs prints nothing.

Not in Ember (NotImplementedError): a module called more than once in the forward, a submodule
shared under two paths, and a preserved submodule that reads values other than its inputs and
state, or returns a value it did not compute.
"""

from __future__ import annotations

import abc
import copy
import operator
from typing import Any

from .. import nn
from ..fx.graph import Graph
from ..fx.interpreter import Interpreter
from ..fx.node import Node, has_side_effect, map_arg
from ..utils._pytree import TreeSpec, tree_flatten, tree_unflatten
from .exported_program import ExportedProgram, ModuleCallSignature, _check_constant_input
from .graph_signature import ConstantArgument, InputKind, TensorArgument

__all__ = ["FlatArgsAdapter", "InterpreterModule", "UnflattenedModule", "unflatten"]


class FlatArgsAdapter(abc.ABC):
    """Adapts the flat inputs of a call whose structure (``input_spec``) differs from the one the
    program was exported with (``target_spec``) to that one's."""

    @abc.abstractmethod
    def adapt(self, target_spec: TreeSpec, input_spec: TreeSpec, input_args: list[Any],
              metadata: dict[str, Any] | None = None, obj: Any | None = None) -> list[Any]:
        """The flat inputs for ``target_spec`` (may change ``input_args``)."""

    def get_flat_arg_paths(self) -> list[str]:
        """The paths the flat inputs are read from, for error messages."""
        return []


class InterpreterModule(nn.Module):
    """A submodule of an unflattened program: runs its part of the graph node by node (an
    ``ember.fx.Interpreter`` on this module, so ``get_attr`` and ``call_module`` nodes read its
    attributes and submodules as they are at the call)."""

    def __init__(self, graph: Graph, ty: str | None = None) -> None:
        super().__init__()
        self.graph = graph
        self._ty = ty
        self.arg_names = [n.target for n in graph.nodes if n.op == "placeholder"]

    def type_name(self) -> str | None:
        """The type of the module this one stands for, as ``module.__qualname__`` with its module."""
        return self._ty

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # keywords fill the placeholders of those names, after the positional ones
            names = self.arg_names[len(args):]
            unknown = [k for k in kwargs if k not in names]
            if unknown:
                raise TypeError(f"{type(self).__name__}.forward() got an unexpected keyword argument '{unknown[0]}'")
            missing = [n for n in names if n not in kwargs]
            if missing:
                raise TypeError(f"{type(self).__name__}.forward() missing required argument '{missing[0]}'")
            args = (*args, *(kwargs[n] for n in names))
        if len(args) != len(self.arg_names):
            raise TypeError(f"{type(self).__name__}.forward() takes {len(self.arg_names)} arguments but "
                            f"{len(args)} were given")
        return Interpreter(self, graph=self.graph).run(*args, enable_io_processing=False)


class UnflattenedModule(nn.Module):
    """An ExportedProgram rebuilt as a module hierarchy (see the module docstring). Called with
    the inputs of the original forward; returns its outputs."""

    def __init__(self, export_module: ExportedProgram, flat_args_adapter: FlatArgsAdapter | None = None) -> None:
        super().__init__()
        if not isinstance(export_module, ExportedProgram):
            raise TypeError(f"unflatten expects an ExportedProgram, got {type(export_module).__name__}")
        entries = export_module.module_call_graph
        if not entries or entries[0].fqn != "" or entries[0].signature is None:
            raise ValueError("unflatten: the program has no module call graph with the root's call signature "
                             "(programs from ember.export.export have one)")
        if export_module._module_aliases:
            alias, name = next(iter(export_module._module_aliases.items()))
            raise NotImplementedError(f"unflatten: the submodule at {alias!r} is the one at {name!r} (a module "
                                      "shared under two paths), which Ember's unflatten does not rebuild")
        self.graph_signature = copy.deepcopy(export_module.graph_signature)
        self.module_call_graph = copy.deepcopy(entries)
        self.flat_args_adapter = flat_args_adapter
        self.meta: dict[str, Any] = {}
        self.adapted = False
        self.range_constraints = export_module.range_constraints
        self.equality_constraints: list = []

        outline = _Outline(export_module, self.module_call_graph)
        self._ty = outline.root.ty
        self.graph = outline.build(outline.root)
        self._place_modules_and_state(export_module, outline)

    def type_name(self) -> str | None:
        return self._ty

    def _place_modules_and_state(self, ep: ExportedProgram, outline: _Outline) -> None:
        made: dict[str, nn.Module] = {"": self}

        def module_at(fqn: str) -> nn.Module:
            if fqn not in made:
                parent, _, name = fqn.rpartition(".")
                frame = outline.frames.get(fqn)
                made[fqn] = InterpreterModule(frame.graph, frame.ty) if frame is not None else nn.Module()
                module_at(parent).add_module(name, made[fqn])
            return made[fqn]

        for entry in self.module_call_graph:
            module_at(entry.fqn)
        for fqn in outline.frames:
            module_at(fqn)
        # parameters, buffers and constants, copied (as PyTorch copies them) to their paths; a
        # tied weight's other names get the same tensor, placed after the name the graph uses
        placed: dict[str, Any] = {}
        aliases: dict[str, list[str]] = {}
        for alias, name in ep._state_aliases.items():
            aliases.setdefault(name, []).append(alias)
        for spec in self.graph_signature.input_specs:
            if spec.kind is InputKind.USER_INPUT:
                continue
            prefix, _, name = spec.target.rpartition(".")
            owner = module_at(prefix)
            if spec.kind is InputKind.PARAMETER:
                param = ep.state_dict[spec.target]
                placed[spec.target] = nn.Parameter(param.detach().clone(), requires_grad=param.requires_grad)
                for path in (spec.target, *aliases.get(spec.target, ())):
                    prefix, _, leaf = path.rpartition(".")
                    module_at(prefix).register_parameter(leaf, placed[spec.target])
            elif spec.kind is InputKind.BUFFER:
                placed[spec.target] = ep._lifted(spec.target).clone()
                for path in (spec.target, *aliases.get(spec.target, ())):
                    prefix, _, leaf = path.rpartition(".")
                    module_at(prefix).register_buffer(leaf, placed[spec.target], persistent=spec.persistent is not False)
            else:
                placed[spec.target] = ep.constants[spec.target].clone()
                setattr(owner, name, placed[spec.target])
        for fqn, targets in outline.attached.items():  # constants a preserved submodule reads
            for target in targets:
                setattr(made[fqn], target, placed[target])

    def _adapt_flat_args(self, flat_args: list, in_spec: TreeSpec, input: Any) -> list:
        signature = self.module_call_graph[0].signature
        if in_spec == signature.in_spec:
            return flat_args
        if self.flat_args_adapter is None:
            raise TypeError("There is no flat args adapter specified. Are you sure you are calling this with the "
                            "right arguments? ")
        flat_args = self.flat_args_adapter.adapt(target_spec=signature.in_spec, input_spec=in_spec,
                                                 input_args=flat_args, metadata=self.meta, obj=input)
        if len(flat_args) != signature.in_spec.num_leaves:
            raise TypeError(f"Flat args adaption failed, number of args mismatch Adapted: {len(flat_args)} \n"
                            f"Exported module: {signature.in_spec.num_leaves}")
        return flat_args

    def process_forward_inputs(self, *args: Any, **kwargs: Any) -> list:
        """The flat inputs of the graph for a call with ``args`` and ``kwargs`` (keywords in any
        order; another structure goes through the flat args adapter)."""
        signature = self.module_call_graph[0].signature
        if kwargs:
            kwargs = _reorder_kwargs(kwargs, signature.in_spec)
        flat_args, in_spec = tree_flatten((args, kwargs))
        if in_spec != signature.in_spec:
            flat_args = self._adapt_flat_args(flat_args, in_spec, args)
            self.adapted = True
        return flat_args

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        flat_args = self.process_forward_inputs(*args, **kwargs)
        out = Interpreter(self, graph=self.graph).run(*flat_args, enable_io_processing=False)
        return tree_unflatten(list(out), self.module_call_graph[0].signature.out_spec)


def unflatten(module: ExportedProgram, flat_args_adapter: FlatArgsAdapter | None = None) -> UnflattenedModule:
    """The program as a module hierarchy like the original's (see ``UnflattenedModule``).
    ``flat_args_adapter`` adapts the inputs of calls whose structure differs from the exported
    one. A submodule can be swapped for another only if its call signature was preserved
    (``export(..., preserve_module_call_signature=(path,))``)."""
    return UnflattenedModule(module, flat_args_adapter)


def _reorder_kwargs(user_kwargs: dict[str, Any], spec: TreeSpec) -> dict[str, Any]:
    """``user_kwargs`` in the order of the keywords of ``spec``, the structure of ``(args, kwargs)``."""
    expected = spec.children_specs[1].context
    if set(user_kwargs) != set(expected):
        raise ValueError(f"Ran into a kwarg keyword mismatch: Got the following keywords {list(user_kwargs)} but "
                         f"expected {expected}")
    return {k: user_kwargs[k] for k in expected}


@has_side_effect
def _flatten_to_spec(value: Any, spec: TreeSpec, what: str) -> list:
    """The leaves of ``value``, which must have the structure ``spec``."""
    leaves, found = tree_flatten(value)
    if found != spec:
        raise TypeError(f"unflatten: the {what} have the structure {found}, but the program was exported with {spec}")
    return leaves


@has_side_effect
def _flatten_call_inputs(positional: tuple, keywords: dict, spec: TreeSpec, what: str) -> list:
    # the graph holds its arguments' containers as immutable ones: the call's own are a tuple and a dict
    return _flatten_to_spec((tuple(positional), dict(keywords)), spec, what)


class _Frame:
    """One module call in the exported graph: its nodes and the calls it made, in order."""

    def __init__(self, fqn: str, ty: str | None, parent: _Frame | None) -> None:
        self.fqn = fqn
        self.ty = ty
        self.parent = parent
        self.items: list[Node | _Frame] = []
        self.nodes: set[Node] = set()  # its own and its calls' nodes
        self.signature: ModuleCallSignature | None = None
        self.inputs: list[Node] = []
        self.outputs: list[Node] = []
        self.graph: Graph | None = None

    def in_scope(self, target: str) -> bool:
        return not self.fqn or target.startswith(self.fqn + ".")

    def relative(self, path: str) -> str:
        return path[len(self.fqn) + 1:] if self.fqn else path


class _Outline:
    """The exported graph cut into module calls (from each node's ``nn_module_stack``), and the
    graph of each call."""

    def __init__(self, ep: ExportedProgram, entries: list) -> None:
        self.ep = ep
        graph = ep.graph
        self.by_name = {n.name: n for n in graph.nodes}
        self.order = {n: i for i, n in enumerate(graph.nodes)}
        self.state: dict[Node, tuple[InputKind, str]] = {}
        self.user_inputs: list[tuple[Node, Any]] = []
        for spec in ep.graph_signature.input_specs:
            node = self.by_name[spec.arg.name]
            if spec.kind is InputKind.USER_INPUT:
                self.user_inputs.append((node, spec.arg))
            else:
                self.state[node] = (spec.kind, spec.target)
        self.output = graph.output_node()
        self.root = _Frame("", None, None)
        self.frames: dict[str, _Frame] = {}
        self.attached: dict[str, list[str]] = {}
        self._cut(graph)
        signatures = {e.fqn: e.signature for e in entries}
        for fqn in signatures:
            if "@" in fqn:
                raise NotImplementedError(_called_twice(fqn.split("@")[0]))
        for fqn, signature in signatures.items():
            if fqn and signature is not None:
                if fqn not in self.frames:
                    raise NotImplementedError(f"unflatten: the call of the preserved submodule {fqn!r} left no node "
                                              "in the graph (it only returns values it was given), which Ember's "
                                              "unflatten does not rebuild")
                self.frames[fqn].signature = signature
        self._connect(self.root)

    # ---- cutting the node list into calls -----------------------------------------------------

    def _cut(self, graph: Graph) -> None:
        chain = [self.root]
        ended: set[str] = set()
        for node in graph.nodes:
            if node.op in ("placeholder", "output"):
                continue
            stack = node.meta.get("nn_module_stack")
            if not stack:
                raise RuntimeError(f"Unable to find nn_module_stack for node {node}")
            for key, (fqn, _) in stack.items():
                if "@" in key:
                    raise NotImplementedError(_called_twice(fqn))
            levels = list(stack.values())
            if self.root.ty is None:
                self.root.ty = levels[0][1]
            path = levels[1:]
            depth = 0
            while depth < len(path) and depth + 1 < len(chain) and chain[depth + 1].fqn == path[depth][0]:
                depth += 1
            for frame in chain[depth + 1:]:
                ended.add(frame.fqn)
            del chain[depth + 1:]
            for fqn, ty in path[depth:]:
                parent = chain[-1]
                if fqn in ended or fqn in self.frames:
                    raise NotImplementedError(_called_twice(fqn))
                if not parent.in_scope(fqn):
                    raise NotImplementedError(f"unflatten: the submodule {fqn!r} is called from {parent.fqn!r}, "
                                              "which does not hold it; Ember's unflatten does not rebuild such calls")
                frame = _Frame(fqn, ty, parent)
                parent.items.append(frame)
                self.frames[fqn] = frame
                chain.append(frame)
            chain[-1].items.append(node)
            for frame in chain:
                frame.nodes.add(node)

    # ---- what each call takes and gives --------------------------------------------------------

    def _sunk(self, node: Node, frame: _Frame) -> bool:
        """Whether ``frame`` reads ``node`` as its own attribute rather than taking it as an input."""
        found = self.state.get(node)
        if found is None:
            return False
        kind, target = found
        if frame.in_scope(target):
            return True
        return frame.signature is not None and kind is InputKind.CONSTANT_TENSOR

    def _connect(self, frame: _Frame) -> None:
        """Works out the inputs and outputs of ``frame``'s calls, checking the preserved ones."""
        for item in frame.items:
            if isinstance(item, _Frame):
                self._connect(item)
        if frame is self.root:
            return
        used: list[Node] = []

        def use(node: Node) -> None:
            if node not in frame.nodes and node not in used and not self._sunk(node, frame):
                used.append(node)

        for item in frame.items:
            if isinstance(item, Node):
                for node in item.all_input_nodes:
                    use(node)
            else:
                for node in item.inputs:
                    use(node)
        outputs = sorted((n for n in frame.nodes if any(u not in frame.nodes for u in n.users)), key=self.order.get)
        if frame.signature is None:
            frame.inputs, frame.outputs = used, outputs
            return
        signature = frame.signature
        given = [self.by_name[a.name] for a in signature.inputs if isinstance(a, TensorArgument)]
        returned = [self.by_name[a.name] for a in signature.outputs if isinstance(a, TensorArgument)]
        for node in used:
            if node not in given:
                raise NotImplementedError(f"unflatten: the preserved submodule {frame.fqn!r} reads {node.name!r}, "
                                          "which is neither one of its inputs nor its own state; Ember's unflatten "
                                          "cannot keep its call signature")
        for node in returned:
            if node not in frame.nodes:
                raise NotImplementedError(f"unflatten: the preserved submodule {frame.fqn!r} returns {node.name!r}, "
                                          "which it did not compute (an input or a value from outside), so its "
                                          "output cannot be told apart from that value; Ember's unflatten cannot "
                                          "keep its call signature")
        for node in outputs:
            if node not in returned:
                raise NotImplementedError(f"unflatten: {node.name!r}, computed in the preserved submodule "
                                          f"{frame.fqn!r}, is read after the call but is not one of its outputs; "
                                          "Ember's unflatten cannot keep its call signature")
        frame.inputs = list(dict.fromkeys(given))
        for item in frame.nodes:
            for node in item.all_input_nodes:
                found = self.state.get(node)
                if found and found[0] is InputKind.CONSTANT_TENSOR and not frame.in_scope(found[1]):
                    targets = self.attached.setdefault(frame.fqn, [])
                    if found[1] not in targets:
                        targets.append(found[1])

    # ---- the graph of each call ----------------------------------------------------------------

    def build(self, frame: _Frame) -> Graph:
        graph = Graph()
        env: dict[Node, Any] = {}

        def value(node: Node) -> Any:
            if node not in env:
                if node not in self.state:
                    raise RuntimeError(f"unflatten: {node.name!r} is read in {frame.fqn or 'the root'!r} before it "
                                       "is computed")
                target = self.state[node][1]
                env[node] = graph.get_attr(frame.relative(target) if frame.in_scope(target) else target)
            return env[node]

        def flat(arguments: list) -> list:
            return [value(self.by_name[a.name]) if isinstance(a, TensorArgument) else a.value for a in arguments]

        signature = frame.signature
        if frame is self.root:
            for node, arg in self.user_inputs:
                env[node] = graph.placeholder(node.name)
                if isinstance(arg, ConstantArgument):
                    graph.call_function(_check_constant_input, (env[node], arg.value, node.name))
        elif signature is not None:
            args_spec, kwargs_spec = signature.in_spec.children_specs
            positional = tuple(graph.placeholder(f"_positional_arg_{i}") for i in range(args_spec.num_children))
            keywords = {k: graph.placeholder(k) for k in kwargs_spec.context}
            leaves = graph.call_function(_flatten_call_inputs, (positional, keywords, signature.in_spec,
                                                                f"inputs of {frame.fqn}"))
            for i, arg in enumerate(signature.inputs):
                if isinstance(arg, TensorArgument) and self.by_name[arg.name] not in env:
                    env[self.by_name[arg.name]] = graph.call_function(operator.getitem, (leaves, i))
        else:
            for node in frame.inputs:
                env[node] = graph.placeholder(node.name)

        for item in frame.items:
            if isinstance(item, Node):
                env[item] = graph.node_copy(item, value)
                continue
            item.graph = self.build(item)
            target = frame.relative(item.fqn)
            if item.signature is not None:
                tree = graph.call_function(tree_unflatten, (flat(item.signature.inputs), item.signature.in_spec))
                args_node = graph.call_function(operator.getitem, (tree, 0))
                kwargs_node = graph.call_function(operator.getitem, (tree, 1))
                args_spec, kwargs_spec = item.signature.in_spec.children_specs
                result = graph.call_module(
                    target, tuple(graph.call_function(operator.getitem, (args_node, i))
                                  for i in range(args_spec.num_children)),
                    {k: graph.call_function(operator.getitem, (kwargs_node, k)) for k in kwargs_spec.context})
                leaves = graph.call_function(_flatten_to_spec, (result, item.signature.out_spec,
                                                                f"outputs of {item.fqn}"))
                for i, arg in enumerate(item.signature.outputs):
                    if isinstance(arg, TensorArgument):
                        env[self.by_name[arg.name]] = graph.call_function(operator.getitem, (leaves, i))
            else:
                result = graph.call_module(target, tuple(value(n) for n in item.inputs))
                if len(item.outputs) == 1:
                    env[item.outputs[0]] = result
                else:
                    for i, node in enumerate(item.outputs):
                        env[node] = graph.call_function(operator.getitem, (result, i))

        if frame is self.root:
            graph.output(map_arg(self.output.args[0], value))
        elif signature is not None:
            graph.output(graph.call_function(tree_unflatten, (flat(signature.outputs), signature.out_spec)))
        elif len(frame.outputs) == 1:
            graph.output(value(frame.outputs[0]))
        else:
            graph.output(tuple(value(n) for n in frame.outputs))
        graph.lint()
        return graph


def _called_twice(fqn: str) -> str:
    return (f"unflatten: the submodule {fqn!r} is called more than once in the exported forward, which Ember's "
            "unflatten does not rebuild (PyTorch's shares one InterpreterModule between the calls)")
