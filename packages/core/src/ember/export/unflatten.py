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

A module called more than once is one submodule called at each place when its calls ran the same
graph, as PyTorch's; calls that ran different graphs (another branch, other arguments) each get a
module, the later ones at ``<name>@<n>`` beside it, sharing its parameters and buffers.

Not in Ember (NotImplementedError): a submodule shared under two paths, a preserved submodule
called more than once, and a preserved submodule that reads values other than its inputs and
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
        outline.place(outline.root)
        self._place_modules_and_state(export_module, outline)

    def type_name(self) -> str | None:
        return self._ty

    def _place_modules_and_state(self, ep: ExportedProgram, outline: _Outline) -> None:
        made: dict[str, nn.Module] = {"": self}

        def module_at(path: str) -> nn.Module:
            if path not in made:
                parent, _, name = path.rpartition(".")
                frame = outline.modules.get(path)
                if path in outline.same:
                    made[path] = module_at(outline.same[path])
                else:
                    made[path] = InterpreterModule(frame.graph, frame.ty) if frame is not None else nn.Module()
                module_at(parent).add_module(name, made[path])
            return made[path]

        for entry in self.module_call_graph:
            module_at(entry.fqn)
        for path in (*outline.modules, *outline.same):
            module_at(path)
        # a module's later calls that ran another graph (at <name>@<n>) share its state
        copies = {path: frame.fqn for path, frame in outline.modules.items() if path != frame.fqn}
        # parameters, buffers and constants, copied (as PyTorch copies them) to their paths; a
        # tied weight's other names get the same tensor, placed after the name the graph uses
        placed: dict[str, Any] = {}
        aliases: dict[str, list[str]] = {}
        for alias, name in ep._state_aliases.items():
            aliases.setdefault(name, []).append(alias)
        for spec in self.graph_signature.input_specs:
            if spec.kind is InputKind.USER_INPUT:
                continue
            if spec.kind is InputKind.PARAMETER:
                param = ep.state_dict[spec.target]
                placed[spec.target] = nn.Parameter(param.detach().clone(), requires_grad=param.requires_grad)
                for path in _state_paths(spec.target, aliases.get(spec.target, ()), copies):
                    prefix, _, leaf = path.rpartition(".")
                    if getattr(module_at(prefix), leaf, None) is not placed[spec.target]:
                        module_at(prefix).register_parameter(leaf, placed[spec.target])
            elif spec.kind is InputKind.BUFFER:
                placed[spec.target] = ep._lifted(spec.target).clone()
                for path in _state_paths(spec.target, aliases.get(spec.target, ()), copies):
                    prefix, _, leaf = path.rpartition(".")
                    if getattr(module_at(prefix), leaf, None) is not placed[spec.target]:
                        module_at(prefix).register_buffer(leaf, placed[spec.target],
                                                          persistent=spec.persistent is not False)
            else:
                placed[spec.target] = ep.constants[spec.target].clone()
                for path in _state_paths(spec.target, (), copies):
                    prefix, _, leaf = path.rpartition(".")
                    setattr(module_at(prefix), leaf, placed[spec.target])
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


def _state_paths(target: str, aliases, copies: dict[str, str]) -> list[str]:
    """Every path a parameter, buffer or constant is placed at: its own, a tied weight's other
    names, and the same name in each copy of a module holding it (a later call's ``<name>@<n>``)."""
    paths = [target, *aliases]
    for copy_path, fqn in copies.items():
        paths += [copy_path + p[len(fqn):] for p in list(paths) if p.startswith(fqn + ".")]
    return list(dict.fromkeys(paths))


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

    def __init__(self, fqn: str, ty: str | None, parent: _Frame | None, call: str = "") -> None:
        self.fqn = fqn
        self.call = call or fqn  # "<fqn>@<n>" for the module's call after its first
        self.ty = ty
        self.parent = parent
        self.items: list[Node | _Frame] = []
        self.targets: dict[_Frame, str] = {}  # each call it makes -> the submodule it calls (relative)
        self.nodes: set[Node] = set()  # its own and its calls' nodes
        self.signature: ModuleCallSignature | None = None
        self.inputs: list[Node] = []
        self.outputs: list[Node] = []
        self.graph: Graph | None = None
        self.form: tuple = ()  # _graph_form of its graph

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
        self.frames: dict[str, _Frame] = {}  # by call ("a", "a@1")
        self.modules: dict[str, _Frame] = {}  # module path -> the call whose graph it runs (set by place)
        self.same: dict[str, str] = {}  # module path -> the path of the module it is (set by place)
        self._forms: dict[tuple, str] = {}
        self.attached: dict[str, list[str]] = {}
        self._cut(graph)
        signatures = {e.fqn: e.signature for e in entries}
        for fqn, signature in signatures.items():
            if fqn and signature is not None:
                if "@" in fqn or f"{fqn}@1" in self.frames:
                    raise NotImplementedError(f"unflatten: the preserved submodule {fqn.split('@')[0]!r} is called "
                                              "more than once, which Ember's unflatten does not rebuild")
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
            levels = [(_call_of(key, fqn), fqn, ty) for key, (fqn, ty) in stack.items()]
            if self.root.ty is None:
                self.root.ty = levels[0][2]
            path = levels[1:]
            depth = 0
            while depth < len(path) and depth + 1 < len(chain) and chain[depth + 1].call == path[depth][0]:
                depth += 1
            for frame in chain[depth + 1:]:
                ended.add(frame.call)
            del chain[depth + 1:]
            for call, fqn, ty in path[depth:]:
                parent = chain[-1]
                if call in ended or call in self.frames:
                    raise NotImplementedError(f"unflatten: the nodes of the call {call!r} are not contiguous in the "
                                              "graph, which Ember's unflatten does not rebuild")
                if not parent.in_scope(fqn):
                    raise NotImplementedError(f"unflatten: the submodule {fqn!r} is called from {parent.fqn!r}, "
                                              "which does not hold it; Ember's unflatten does not rebuild such calls")
                frame = _Frame(fqn, ty, parent, call)
                parent.items.append(frame)
                self.frames[call] = frame
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

        calls: dict[str, list[tuple[str, tuple]]] = {}  # submodule -> (target, graph's form) of its calls so far
        for item in frame.items:
            if isinstance(item, Node):
                env[item] = graph.node_copy(item, value)
                continue
            item.graph = self.build(item)
            name = frame.relative(item.fqn)
            form = item.form = _graph_form(item.graph)
            # a later call that ran the same graph calls the same submodule; another graph gets its own
            earlier = calls.setdefault(name, [])
            target = next((t for t, f in earlier if f == form), None)
            if target is None:
                target = name if not earlier else f"{name}@{len(earlier)}"
                earlier.append((target, form))
            frame.targets[item] = target
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


    def place(self, frame: _Frame, path: str = "") -> None:
        """Records ``frame`` as the graph the module at ``path`` runs, and its calls' modules below
        it; a module whose graph an earlier module of the same path ran is that module again (the
        submodules of a module's ``@<n>`` copy that ran as in its first call)."""
        key = (frame.fqn, frame.form)
        if path and key in self._forms:
            self.same[path] = self._forms[key]
            return
        self._forms.setdefault(key, path)
        self.modules[path] = frame
        for item, target in frame.targets.items():
            child = f"{path}.{target}" if path else target
            if child not in self.modules and child not in self.same:
                self.place(item, child)


def _call_of(key: str, fqn: str) -> str:
    """The call an ``nn_module_stack`` key names: the module path, with ``@<n>`` from the key for
    its (n+1)-th call."""
    _, at, n = key.rpartition("@")
    return f"{fqn}@{n}" if at and n.isdigit() else fqn


def _graph_form(graph: Graph) -> tuple:
    """A graph's ops and how they connect, without node names: equal for two calls of a module
    that ran the same computation."""
    index: dict[Node, int] = {}
    form = []
    for i, node in enumerate(graph.nodes):
        index[node] = i
        ref = lambda n: ("node", index[n])  # noqa: E731
        form.append((node.op, node.target if node.op != "placeholder" else None,
                     repr(map_arg(node.args, ref)), repr(map_arg(node.kwargs, ref))))
    return tuple(form)
