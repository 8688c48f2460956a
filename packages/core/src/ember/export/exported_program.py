"""ExportedProgram, export, save and load (torch.export.exported_program)."""

from __future__ import annotations

import dataclasses
import inspect
import operator
from typing import Any

from .. import _C, Tensor, nn
from ..fx.experimental.proxy_tensor import _OpRecorder, _plain_structure, _PyTreeCodeGen
from ..fx.graph import Graph
from ..fx.graph_module import GraphModule
from ..fx.immutable_collections import immutable_list
from ..fx.interpreter import Interpreter
from ..fx.node import Node, has_side_effect, map_aggregate
from ..utils._pytree import LeafSpec, TreeSpec, tree_flatten, tree_unflatten
from .decomp_utils import CustomDecompTable
from .graph_signature import (
    ConstantArgument,
    ExportGraphSignature,
    InputKind,
    InputSpec,
    OutputKind,
    OutputSpec,
    TensorArgument,
)

__all__ = ["DEFAULT_PICKLE_PROTOCOL", "ExportedProgram", "ModuleCallEntry", "ModuleCallSignature",
           "default_decompositions", "export", "load", "register_dataclass", "save"]

_FORMAT = "ember.export/1"
DEFAULT_PICKLE_PROTOCOL = 2


def register_dataclass(cls: type, *, serialized_type_name: str | None = None) -> None:
    """Lets instances of the dataclass ``cls`` be inputs and outputs of exported programs (and
    pytree nodes generally): flattened to their fields' values, rebuilt by keyword."""
    import dataclasses

    from ..utils._pytree import register_pytree_node

    if not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
        raise TypeError(f"register_dataclass expects a dataclass type, got {cls!r}")
    names = [f.name for f in dataclasses.fields(cls)]
    register_pytree_node(cls, lambda obj: ([getattr(obj, n) for n in names], names),
                         lambda values, context: cls(**dict(zip(context, values, strict=True))))


def default_decompositions() -> CustomDecompTable:
    """The decompositions ``run_decompositions()`` applies by default, as a ``CustomDecompTable``:
    empty, since Ember's ops are its own core set (add an op -> function entry to decompose it)."""
    return CustomDecompTable()


@dataclasses.dataclass
class ModuleCallSignature:
    """How a module was called during export: the graph values (``TensorArgument`` by node name,
    or ``ConstantArgument``) of its flattened inputs and outputs, the structure of its
    ``(args, kwargs)`` (``in_spec``) and of its result (``out_spec``), and for the root module
    the names of ``forward``'s arguments."""

    inputs: list[TensorArgument | ConstantArgument]
    outputs: list[TensorArgument | ConstantArgument]
    in_spec: TreeSpec
    out_spec: TreeSpec
    forward_arg_names: list[str] | None = None

    def replace_all_uses_with(self, original_node: Node, new_node: Node) -> None:
        for arg in (*self.inputs, *self.outputs):
            if arg.name == original_node.name:
                arg.name = new_node.name


@dataclasses.dataclass
class ModuleCallEntry:
    """A module the exported forward called (``fqn`` is its path, ``""`` the root), with its call
    signature where export kept it (the root, and the modules of ``preserve_module_call_signature``)."""

    fqn: str
    signature: ModuleCallSignature | None = None


class ExportedProgram:
    """A module's forward as a graph of registered ops, with the values it reads."""

    def __init__(self, root: Any, graph: Graph, graph_signature: ExportGraphSignature, state_dict: dict[str, Any],
                 range_constraints: dict | None = None, module_call_graph: list | None = None,
                 example_inputs: tuple | None = None, constants: dict[str, Any] | None = None, *,
                 in_spec: TreeSpec | None = None, out_spec: TreeSpec | None = None,
                 arg_names: list[str] | None = None, keyword_only: tuple[str, ...] = ()) -> None:
        self._graph_module = GraphModule(root if root is not None else {}, graph)
        self._graph_signature = graph_signature
        self._state_dict = state_dict
        self._constants = constants or {}
        self._range_constraints = range_constraints or {}
        self._module_call_graph = module_call_graph or []
        self._example_inputs = example_inputs
        self._in_spec = in_spec
        self._out_spec = out_spec
        self._arg_names = arg_names or []
        self._keyword_only = tuple(keyword_only)
        # other names of the same parameter or buffer (tied weights), and of the same submodule,
        # as {alias: name the graph uses}: unflatten() restores the first and refuses the second
        self._state_aliases: dict[str, str] = {}
        self._module_aliases: dict[str, str] = {}

    graph_module = property(lambda self: self._graph_module, doc="The graph, taking every lifted input.")
    graph = property(lambda self: self._graph_module.graph)
    graph_signature = property(lambda self: self._graph_signature)
    state_dict = property(lambda self: self._state_dict, doc="The parameters and buffers, by module path.")
    constants = property(lambda self: self._constants, doc="The lifted tensor constants, by name.")
    tensor_constants = constants
    range_constraints = property(lambda self: self._range_constraints)
    module_call_graph = property(lambda self: self._module_call_graph)
    example_inputs = property(lambda self: self._example_inputs)
    dialect = "ATEN"

    def named_parameters(self) -> Any:
        for name in self._graph_signature.parameters:
            yield name, self._state_dict[name]

    def parameters(self) -> Any:
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self) -> Any:
        for name in self._graph_signature.buffers:
            yield name, self._lifted(name)

    def _lifted(self, target: str) -> Any:
        # parameters and persistent buffers are in state_dict; other buffers and constants are not
        return self._state_dict[target] if target in self._state_dict else self._constants[target]

    def buffers(self) -> Any:
        for _, b in self.named_buffers():
            yield b

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("Unable to call ExportedProgram directly. You should use `exported_program.module()` "
                           "instead.")

    def module(self) -> GraphModule:
        """An ``nn.Module`` running the graph on the user's inputs, holding the parameters,
        buffers and constants as attributes at their module paths."""
        specs = {s.arg.name: s for s in self._graph_signature.input_specs}
        graph = Graph()
        env: dict[Node, Any] = {}
        attrs: dict[str, Any] = {}
        for node in self.graph.nodes:
            if node.op == "placeholder":
                spec = specs[node.name]
                if spec.kind is InputKind.USER_INPUT and isinstance(spec.arg, ConstantArgument):
                    # a non-tensor input was fixed at export time: it defaults to that value and
                    # any other value is an error, as in PyTorch
                    env[node] = graph.placeholder(node.name, default_value=spec.arg.value)
                    if node.name in self._keyword_only:
                        env[node].meta["keyword_only"] = True
                    graph.call_function(_check_constant_input, (env[node], spec.arg.value, node.name))
                elif spec.kind is InputKind.USER_INPUT:
                    env[node] = graph.placeholder(node.name)
                    if node.name in self._keyword_only:
                        env[node].meta["keyword_only"] = True
                else:
                    attrs[spec.target] = self._lifted(spec.target)
                    env[node] = graph.get_attr(spec.target)
            elif node.op == "output":
                flat = [map_aggregate(v, lambda n: env[n] if isinstance(n, Node) else n) for v in node.args[0]]
                plain = self._out_spec is None or _plain_structure(self._out_spec)
                graph.output(tuple(flat) if not plain or self._out_spec is None else
                             tree_unflatten(flat, self._out_spec))
            else:
                env[node] = graph.node_copy(node, lambda n: env[n])
        nested_in = self._in_spec is not None and not _is_flat(self._in_spec)
        custom_out = self._out_spec is not None and not _plain_structure(self._out_spec)
        if nested_in or custom_out:
            graph.set_codegen(_PyTreeCodeGen(self._arg_names, self._in_spec if nested_in else None,
                                             self._out_spec if custom_out else None))
        return GraphModule(attrs, graph)

    def run_decompositions(self, decomp_table: dict | CustomDecompTable | None = None,
                           decompose_custom_triton_ops: bool = False) -> ExportedProgram:
        """The program re-traced with ``decomp_table``'s functions in place of their ops (a dict
        or the ``CustomDecompTable`` of ``default_decompositions()``, the default). Each new node
        keeps the module stack of the node it came from, and the module call graph is carried
        over with its signatures' values renamed to the new nodes. (Ember has no Triton ops:
        ``decompose_custom_triton_ops`` changes nothing.)"""
        if self._example_inputs is None:
            raise RuntimeError("run_decompositions needs the example inputs the program was exported with")
        if decomp_table is None:
            decomp_table = default_decompositions()
        table = decomp_table.materialize() if isinstance(decomp_table, CustomDecompTable) else dict(decomp_table)
        args, kwargs = self._example_inputs
        program = _export(self.module(), args, kwargs, table, forward_names=self._arg_names, source=self)
        program._state_aliases = dict(self._state_aliases)
        program._module_aliases = dict(self._module_aliases)
        return program

    def validate(self) -> None:
        self.graph.lint()
        names = [n.name for n in self.graph.nodes if n.op == "placeholder"]
        if names != [s.arg.name for s in self._graph_signature.input_specs]:
            raise RuntimeError("ExportedProgram: the graph's inputs do not match its signature")

    def __str__(self) -> str:
        code = "\n".join(f"        {line}" if line else "" for line in self._graph_module.code.rstrip().split("\n"))
        signature = "\n".join(f"    {line}" for line in str(self._graph_signature).split("\n"))
        return (f"ExportedProgram:\n    class GraphModule(ember.nn.Module):\n{code}\n\nGraph signature:\n{signature}\n"
                f"Range constraints: {self._range_constraints}\n")

    __repr__ = __str__


@has_side_effect
def _check_constant_input(value: Any, expected: Any, name: str) -> None:
    if type(value) is not type(expected) or value != expected:
        raise ValueError(f"input {name} was fixed to {expected!r} when the program was exported, but got {value!r}")


def _is_flat(spec: TreeSpec) -> bool:
    return all(c.is_leaf() for c in spec.children_specs)


def export(mod: nn.Module, args: tuple, kwargs: dict | None = None, *, dynamic_shapes: Any = None,
           strict: bool = False, preserve_module_call_signature: tuple[str, ...] = ()) -> ExportedProgram:
    """Runs ``mod(*args, **kwargs)`` once and returns its ExportedProgram (see the module's
    docstring). Shapes are those of the example inputs. Each op node's
    ``meta["nn_module_stack"]`` names the modules it ran in; ``module_call_graph`` lists the
    modules called, with the call signature of the root and of each submodule named in
    ``preserve_module_call_signature`` (so that ``unflatten`` can let it be swapped)."""
    if not isinstance(mod, nn.Module):
        raise TypeError(f"Expected `mod` to be an instance of `ember.nn.Module`, got {type(mod).__name__}.")
    if not isinstance(args, tuple):
        raise ValueError(f"Expecting `args` to be a tuple of example positional inputs, got {type(args).__name__}")
    if kwargs is not None and not isinstance(kwargs, dict):
        raise ValueError(f"Expecting `kwargs` to be a dict of example keyword inputs, got {type(kwargs).__name__}")
    if dynamic_shapes is not None:
        raise NotImplementedError("export: dynamic_shapes needs symbolic shapes, which Ember does not have; the "
                                  "program is traced with the example inputs' shapes")
    if isinstance(preserve_module_call_signature, str):
        raise TypeError("export: preserve_module_call_signature takes a tuple of module paths, got a str")
    for fqn in preserve_module_call_signature:
        _submodule(mod, fqn)
    return _export(mod, args, kwargs or {}, {}, preserve=tuple(preserve_module_call_signature))


def _submodule(mod: nn.Module, fqn: str) -> nn.Module:
    """The submodule at ``fqn``, raising AttributeError as PyTorch's lookup does."""
    if not isinstance(fqn, str) or not fqn:
        raise ValueError(f"export: preserve_module_call_signature names submodules by path, got {fqn!r}")
    found = mod
    for atom in fqn.split("."):
        child = getattr(found, atom, None)
        if not isinstance(child, nn.Module):
            raise AttributeError(f"'{type(found).__name__}' object has no attribute '{atom}'")
        found = child
    return found


def _type_name(module: Any) -> str:
    cls = type(module)
    return f"{cls.__module__}.{cls.__qualname__}"


_ROOT_KEY = "L__self__"


class _ExportRecorder(_OpRecorder):
    """_OpRecorder that stamps each node it adds with the module stack it ran in:
    ``node.meta["nn_module_stack"]``, key -> (module path, module type), from the root down."""

    def __init__(self, graph: Graph, decompositions: dict, root_type: str) -> None:
        super().__init__(graph, decompositions)
        self.stack: dict[str, tuple[str, str]] = {_ROOT_KEY: ("", root_type)}

    def __torch_dispatch__(self, func: Any, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        out = super().__torch_dispatch__(func, types, args, kwargs)
        root = self.graph._root
        node = root.prev
        while node is not root and node.op != "placeholder" and "nn_module_stack" not in node.meta:
            node.meta["nn_module_stack"] = dict(self.stack)
            node = node.prev
        return out

    def argument_of(self, value: Any) -> Node | ConstantArgument:
        """The node standing for a call's input or output ``value``, or a ConstantArgument."""
        if isinstance(value, Tensor):
            return self.node_of(value)
        return ConstantArgument("", value)


class _CallTracker:
    """Hooks on every submodule while export runs the forward: they keep the recorder's module
    stack, list the modules called (first calls, in order) and record the inputs and outputs of
    the calls of the modules whose signature is preserved."""

    def __init__(self, mod: nn.Module, recorder: _ExportRecorder, preserve: tuple[str, ...]) -> None:
        from functools import partial

        self.recorder = recorder
        self.preserve = set(preserve)
        self.called: list[str] = [""]
        self.counts: dict[str, int] = {}
        self.open: list[tuple[str, Any]] = []
        self.signatures: list[tuple[str, list, TreeSpec, list, TreeSpec]] = []
        self.handles: list[tuple[Any, dict]] = []  # (handle, the module's with_kwargs table of it)
        for name, sub in mod.named_modules():
            if name:
                handle = sub.register_forward_pre_hook(partial(self.enter, name), prepend=True, with_kwargs=True)
                self.handles.append((handle, sub._forward_pre_hooks_with_kwargs))
                handle = sub.register_forward_hook(partial(self.leave, name), with_kwargs=True)
                self.handles.append((handle, sub._forward_hooks_with_kwargs))

    def remove(self) -> None:
        for handle, with_kwargs in self.handles:
            handle.remove()
            with_kwargs.pop(handle.id, None)

    def enter(self, name: str, module: nn.Module, args: tuple, kwargs: dict) -> None:
        index = self.counts.get(name, 0)
        self.counts[name] = index + 1
        key = f"{_ROOT_KEY}{name}" + (f"@{index}" if index else "")
        self.recorder.stack[key] = (name, _type_name(module))
        if index == 0:
            self.called.append(name)
        inputs = None
        if name in self.preserve:
            leaves, in_spec = tree_flatten((args, kwargs))
            inputs = ([self.recorder.argument_of(v) for v in leaves], in_spec)
        self.open.append((key, inputs))

    def leave(self, name: str, module: nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
        key, inputs = self.open.pop()
        del self.recorder.stack[key]
        if inputs is not None:
            leaves, out_spec = tree_flatten(output)
            index = self.counts[name] - 1
            fqn = f"{name}@{index}" if index else name
            self.signatures.append((fqn, inputs[0], inputs[1], [self.recorder.argument_of(v) for v in leaves],
                                    out_spec))


class _StackInterpreter(Interpreter):
    """Runs an exported program's module() graph under the recorder (run_decompositions): the
    nodes each old node gives keep its module stack, and each old node's new node is noted."""

    def __init__(self, module: GraphModule, recorder: _ExportRecorder) -> None:
        super().__init__(module, garbage_collect_values=False)
        self.recorder = recorder
        self.root_stack = dict(recorder.stack)
        self.new_nodes: dict[str, Node] = {}

    def output(self, target: str, args: tuple, kwargs: dict) -> Any:
        # the graph holds its output's containers as immutable ones, which are no pytree nodes
        return _mutable(args[0])

    def run_node(self, n: Node) -> Any:
        self.recorder.stack = dict(n.meta.get("nn_module_stack") or self.root_stack)
        value = super().run_node(n)
        if isinstance(value, Tensor):
            found = self.recorder.nodes.get(_C._tensor_id(value))
            if found is not None:
                self.new_nodes[n.name] = found
        return value


def _mutable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _mutable(v) for k, v in value.items()}
    if type(value) in (list, immutable_list):
        return [_mutable(v) for v in value]
    if type(value) is tuple:
        return tuple(_mutable(v) for v in value)
    return value


def _call_in_spec(args: tuple, kwargs: dict, bound: inspect.BoundArguments) -> TreeSpec:
    """The structure of ``(args, kwargs)`` with the keywords in the order the graph takes them
    (forward's parameter order, then ``**kwargs``'s own), so that its leaves are the graph's
    user inputs in order."""
    order: list[str] = []
    for name, value in bound.arguments.items():
        if name in kwargs:
            order.append(name)
        elif bound.signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            order.extend(value)
    return tree_flatten((tuple(args), {k: kwargs[k] for k in order}))[1]


def _export(mod: nn.Module, args: tuple, kwargs: dict, decompositions: dict,
            forward_names: list[str] | None = None, *, preserve: tuple[str, ...] = (),
            source: ExportedProgram | None = None) -> ExportedProgram:
    try:
        bound = inspect.signature(mod.forward).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"export: the example inputs do not fit {type(mod).__name__}.forward: {e}") from None
    # *args and **kwargs keep their stars, so that module()'s forward takes them the same way
    stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    parameters = inspect.signature(mod.forward).parameters
    arg_names = forward_names or [stars.get(parameters[n].kind, "") + n for n in bound.arguments]
    leaves, in_spec = tree_flatten(list(bound.arguments.values()))
    flat_inputs = _is_flat(in_spec)
    # One tensor given as two inputs is still two inputs: each repeat runs as an alias of its own.
    # (PyTorch binds both to the last one's placeholder, so its program reads that input twice.)
    seen_inputs: set[int] = set()
    repeated = False
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, Tensor):
            if _C._tensor_id(leaf) in seen_inputs:
                leaves[i], repeated = leaf.view_as(leaf), True
            seen_inputs.add(_C._tensor_id(leaves[i]))
    if repeated:
        for key, value in zip(list(bound.arguments), tree_unflatten(leaves, in_spec), strict=True):
            bound.arguments[key] = value

    graph = Graph()
    recorder = _ExportRecorder(graph, dict(decompositions), _root_type(source) if source else _type_name(mod))
    input_specs: list[InputSpec] = []
    state_dict: dict[str, Any] = {}
    seen: dict[int, str] = {}
    for name, p in mod.named_parameters():
        node = graph.placeholder(f"p_{name.replace('.', '_')}")
        recorder.bind(p, node)
        seen[id(p)] = name
        state_dict[name] = p
        input_specs.append(InputSpec(InputKind.PARAMETER, TensorArgument(node.name), name))
    non_persistent = {f"{prefix}.{b}" if prefix else b for prefix, m in mod.named_modules()
                      for b in m._non_persistent_buffers_set}
    constants: dict[str, Any] = {}
    buffer_nodes: dict[str, Node] = {}
    working: dict[str, Any] = {}
    for name, b in mod.named_buffers():
        node = graph.placeholder(f"b_{name.replace('.', '_')}")
        buffer_nodes[name] = node
        persistent = name not in non_persistent
        (state_dict if persistent else constants)[name] = b
        input_specs.append(InputSpec(InputKind.BUFFER, TensorArgument(node.name), name, persistent))
    user_nodes = []
    for i, leaf in enumerate(leaves):
        name = arg_names[i] if flat_inputs and i < len(arg_names) else f"arg{i}"
        node = graph.placeholder(name)
        user_nodes.append(node)
        if isinstance(leaf, Tensor):
            recorder.bind(leaf, node)
            input_specs.append(InputSpec(InputKind.USER_INPUT, TensorArgument(node.name), None))
        else:
            input_specs.append(InputSpec(InputKind.USER_INPUT, ConstantArgument(node.name, leaf), None))

    # The forward runs on copies of the buffers, so exporting a module in training mode leaves its
    # running statistics as they were (PyTorch traces on fake tensors for the same effect).
    from ..func import functional_call

    for name, b in mod.named_buffers():
        copy = b.clone()
        recorder.bind(copy, buffer_nodes[name])
        working[name] = copy
    tracker = interpreter = None
    if source is None:
        tracker = _CallTracker(mod, recorder, preserve)
    else:  # the module() graph, run node by node so that the new nodes keep their module stacks
        interpreter = _StackInterpreter(mod, recorder)
        mod.forward = lambda *_args, **_kwargs: interpreter.run(*leaves)
    try:
        with recorder:
            result = functional_call(mod, working, bound.args, bound.kwargs)
    finally:
        if tracker is not None:
            tracker.remove()
    if source is None:
        out_leaves, out_spec = tree_flatten(result)
    else:  # the graph gives the flat outputs (or their plain structure): the program's own out_spec
        out_leaves, out_spec = tree_flatten(result)[0], source._out_spec
    outputs = [recorder.as_argument(v) for v in out_leaves]
    graph.output(tuple(outputs))
    output_specs = [OutputSpec(OutputKind.USER_OUTPUT,
                               TensorArgument(v.name) if isinstance(v, Node) else ConstantArgument("", v), None)
                    for v in outputs]

    # tensors the forward read that are neither inputs nor parameters/buffers: lifted constants
    first_user = user_nodes[0] if user_nodes else None
    lifted_specs = []
    lifted: dict[Node, Node] = {}
    for i, node in enumerate(graph.find_nodes(op="get_attr")):
        tensor = recorder.constants[node.target]
        name = f"lifted_tensor_{i}"
        with graph.inserting_before(first_user if first_user is not None else _first_non_placeholder(graph)):
            placeholder = graph.placeholder(f"c_{name}")
        node.replace_all_uses_with(placeholder)
        lifted[node] = placeholder
        graph.erase_node(node)
        constants[name] = tensor
        lifted_specs.append(InputSpec(InputKind.CONSTANT_TENSOR, TensorArgument(placeholder.name), name))
    n_lifted_before = len([s for s in input_specs if s.kind is not InputKind.USER_INPUT])
    input_specs[n_lifted_before:n_lifted_before] = lifted_specs
    signature = ExportGraphSignature(input_specs, output_specs)
    keyword_only = tuple(name for name, p in parameters.items()
                         if p.kind is inspect.Parameter.KEYWORD_ONLY and name in arg_names)
    if source is None:
        root = ModuleCallEntry("", ModuleCallSignature([], [], _call_in_spec(args, kwargs, bound), out_spec,
                                                       [n.lstrip("*") for n in arg_names]))
        module_call_graph = [root, *_call_entries(tracker, lifted)]
    else:
        module_call_graph = _renamed_call_graph(source.module_call_graph, interpreter.new_nodes, lifted)
    program = ExportedProgram({}, graph, signature, state_dict, module_call_graph=module_call_graph,
                              example_inputs=(args, kwargs), constants=constants, in_spec=in_spec, out_spec=out_spec,
                              arg_names=arg_names, keyword_only=keyword_only)
    if source is None:
        program._state_aliases, program._module_aliases = _aliases(mod)
    program.validate()
    return program


def _root_type(program: ExportedProgram) -> str:
    for node in program.graph.nodes:
        stack = node.meta.get("nn_module_stack")
        if stack:
            return next(iter(stack.values()))[1]
    return "ember.nn.modules.module.Module"


def _call_entries(tracker: _CallTracker, lifted: dict[Node, Node]) -> list[ModuleCallEntry]:
    """The submodules called, in call order, with the signatures recorded for the preserved ones
    (a second call of a preserved module is its own entry, ``fqn@1``, as in PyTorch)."""

    def arguments(values: list) -> list[TensorArgument | ConstantArgument]:
        return [TensorArgument(lifted.get(v, v).name) if isinstance(v, Node) else v for v in values]

    signatures = {fqn: ModuleCallSignature(arguments(inputs), arguments(outputs), in_spec, out_spec)
                  for fqn, inputs, in_spec, outputs, out_spec in tracker.signatures}
    entries = [ModuleCallEntry(fqn, signatures.pop(fqn, None)) for fqn in tracker.called[1:]]
    return entries + [ModuleCallEntry(fqn, signature) for fqn, signature in signatures.items()]


def _renamed_call_graph(entries: list[ModuleCallEntry], new_nodes: dict[str, Node],
                        lifted: dict[Node, Node]) -> list[ModuleCallEntry]:
    """``entries`` with each signature's values renamed to the nodes that stand for them now."""
    import copy

    renamed = copy.deepcopy(entries)
    for entry in renamed:
        if entry.signature is None:
            continue
        for arg in (*entry.signature.inputs, *entry.signature.outputs):
            node = new_nodes.get(arg.name) if isinstance(arg, TensorArgument) else None
            if node is not None:
                arg.name = lifted.get(node, node).name
    return renamed


def _aliases(mod: nn.Module) -> tuple[dict[str, str], dict[str, str]]:
    """({other name: first name} of tied parameters and buffers, same of shared submodules)."""
    state: dict[str, str] = {}
    first: dict[int, str] = {}
    for name, t in [*mod.named_parameters(remove_duplicate=False), *mod.named_buffers(remove_duplicate=False)]:
        if id(t) in first and first[id(t)] != name:
            state[name] = first[id(t)]
        first.setdefault(id(t), name)
    modules: dict[str, str] = {}
    first = {}
    for name, m in mod.named_modules(remove_duplicate=False):
        if id(m) in first:
            modules[name] = first[id(m)]
        first.setdefault(id(m), name)
    return state, modules


def _first_non_placeholder(graph: Graph) -> Node:
    for node in graph.nodes:
        if node.op != "placeholder":
            return node
    return graph.output_node()


# ---- save / load: the program as plain data ---------------------------------------------------


def _encode(value: Any) -> Any:
    import ember

    if isinstance(value, Node):
        return {"node": value.name}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return {"tuple": [_encode(v) for v in value]}
    if isinstance(value, list):
        return {"list": [_encode(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, slice):
        return {"slice": [_encode(value.start), _encode(value.stop), _encode(value.step)]}
    if isinstance(value, complex):
        return {"complex": [value.real, value.imag]}
    if isinstance(value, ember.dtype):
        return {"dtype": str(value).removeprefix("ember.")}
    if isinstance(value, ember.device):
        return {"device": str(value)}
    if isinstance(value, ember.memory_format):
        return {"memory_format": str(value).removeprefix("ember.")}
    if isinstance(value, ember.layout):
        return {"layout": str(value).removeprefix("ember.")}
    raise ValueError(f"export.save: cannot store an argument of type {type(value).__name__}")


def _decode(value: Any, env: dict[str, Node]) -> Any:
    import ember

    if not isinstance(value, dict):
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        raise ValueError(f"export.load: unexpected value of type {type(value).__name__}")
    if len(value) != 1:
        raise ValueError("export.load: malformed argument record")
    (tag, body), = value.items()
    if tag == "node":
        if body not in env:
            raise ValueError(f"export.load: argument refers to unknown node {body!r}")
        return env[body]
    if tag in ("tuple", "list"):
        items = [_decode(v, env) for v in _as_list(body)]
        return tuple(items) if tag == "tuple" else items
    if tag == "dict":
        return {_decode(k, env): _decode(v, env) for k, v in (_pair(p) for p in _as_list(body))}
    if tag == "slice":
        start, stop, step = (_decode(v, env) for v in _as_list(body, 3))
        return slice(start, stop, step)
    if tag == "complex":
        real, imag = _as_list(body, 2)
        return complex(float(real), float(imag))
    kinds = {"dtype": ember.dtype, "memory_format": ember.memory_format, "layout": ember.layout}
    if tag in kinds:
        found = getattr(ember, str(body), None)
        if not isinstance(found, kinds[tag]):
            raise ValueError(f"export.load: unknown {tag} {body!r}")
        return found
    if tag == "device":
        return ember.device(str(body))
    raise ValueError(f"export.load: unknown argument tag {tag!r}")


def _as_list(body: Any, length: int | None = None) -> list:
    if not isinstance(body, list) or (length is not None and len(body) != length):
        raise ValueError("export.load: malformed argument record")
    return body


def _pair(p: Any) -> tuple:
    items = _as_list(p, 2)
    return items[0], items[1]


def _encode_spec(spec: TreeSpec) -> Any:
    if spec.is_leaf():
        return "*"
    if spec.type not in (tuple, list, dict):
        raise ValueError(f"export.save: cannot store inputs or outputs nested in {spec.type.__name__}")
    context = list(spec.context) if spec.type is dict else None
    return {"type": spec.type.__name__, "context": context, "children": [_encode_spec(c) for c in spec.children_specs]}


def _decode_spec(data: Any) -> TreeSpec:
    if data == "*":
        return LeafSpec()
    if not isinstance(data, dict) or data.get("type") not in ("tuple", "list", "dict"):
        raise ValueError("export.load: malformed tree structure")
    kind = {"tuple": tuple, "list": list, "dict": dict}[data["type"]]
    children = [_decode_spec(c) for c in _as_list(data.get("children"))]
    return TreeSpec(kind, list(data["context"]) if kind is dict else None, children)


def _target_name(target: Any) -> str:
    if target is operator.getitem:
        return "operator.getitem"
    name = getattr(target, "name", None)
    if type(target).__name__ == "OpOverload" and isinstance(name, str):
        return name
    raise ValueError(f"export.save: cannot store a call of {target!r} (only registered ops and operator.getitem)")


def _resolve_target(name: Any) -> Any:
    from .._ops import ops

    if name == "operator.getitem":
        return operator.getitem
    if not isinstance(name, str) or "::" not in name:
        raise ValueError(f"export.load: unknown call target {name!r}")
    namespace, op = name.split("::", 1)
    try:
        return getattr(getattr(ops, namespace), op)
    except (AttributeError, RuntimeError) as e:
        raise ValueError(f"export.load: {name} is not a registered op") from e


def save(ep: ExportedProgram, f: Any, *, extra_files: dict | None = None, opset_version: dict | None = None,
         pickle_protocol: int = DEFAULT_PICKLE_PROTOCOL) -> None:
    """Writes ``ep`` to ``f`` (a path or binary file) as plain data and tensors (``ember.save``)."""
    if extra_files or opset_version:
        raise NotImplementedError("export.save: extra_files and opset_version are not in Ember's format")
    import ember

    if not isinstance(ep, ExportedProgram):
        raise TypeError(f"export.save expects an ExportedProgram, got {type(ep).__name__}")
    nodes = []
    for node in ep.graph.nodes:
        target = node.target if node.op in ("placeholder", "output", "get_attr") else _target_name(node.target)
        record = {"name": node.name, "op": node.op, "target": target, "args": _encode(node.args),
                  "kwargs": _encode(node.kwargs)}
        stack = node.meta.get("nn_module_stack")
        if stack:
            record["nn_module_stack"] = [[key, fqn, ty] for key, (fqn, ty) in stack.items()]
        nodes.append(record)
    signature = {
        "inputs": [[s.kind.name, s.arg.name, s.target, s.persistent,
                    _encode(s.arg.value) if isinstance(s.arg, ConstantArgument) else None,
                    isinstance(s.arg, ConstantArgument)] for s in ep.graph_signature.input_specs],
        "outputs": [[s.kind.name, s.arg.name, s.target,
                     _encode(s.arg.value) if isinstance(s.arg, ConstantArgument) else None,
                     isinstance(s.arg, ConstantArgument)] for s in ep.graph_signature.output_specs],
    }
    ember.save({"format": _FORMAT, "nodes": nodes, "signature": signature,
                "state_dict": {k: v.detach() for k, v in ep.state_dict.items()},
                "parameters": list(ep.graph_signature.parameters),
                "constants": dict(ep.constants), "in_spec": _encode_spec(ep._in_spec) if ep._in_spec else None,
                "out_spec": _encode_spec(ep._out_spec) if ep._out_spec else None, "arg_names": ep._arg_names,
                "keyword_only": list(ep._keyword_only),
                "module_call_graph": [_encode_call_entry(e) for e in ep.module_call_graph],
                "state_aliases": dict(ep._state_aliases), "module_aliases": dict(ep._module_aliases)},
               f, pickle_protocol=pickle_protocol)


def _encode_call_entry(entry: ModuleCallEntry) -> dict:
    sig = entry.signature
    if sig is None:
        return {"fqn": entry.fqn, "signature": None}

    def arguments(args: list) -> list:
        return [[a.name, True, _encode(a.value)] if isinstance(a, ConstantArgument) else [a.name, False, None]
                for a in args]

    return {"fqn": entry.fqn, "signature": {
        "inputs": arguments(sig.inputs), "outputs": arguments(sig.outputs), "in_spec": _encode_spec(sig.in_spec),
        "out_spec": _encode_spec(sig.out_spec),
        "forward_arg_names": None if sig.forward_arg_names is None else list(sig.forward_arg_names)}}


def _decode_call_entry(data: Any) -> ModuleCallEntry:
    if not isinstance(data, dict) or not isinstance(data.get("fqn"), str):
        raise ValueError("export.load: malformed module call graph")
    sig = data.get("signature")
    if sig is None:
        return ModuleCallEntry(data["fqn"])
    if not isinstance(sig, dict):
        raise ValueError("export.load: malformed module call signature")

    def arguments(records: Any) -> list:
        found = []
        for record in _as_list(records):
            name, is_constant, value = _as_list(record, 3)
            if not isinstance(name, str):
                raise ValueError("export.load: malformed module call signature")
            found.append(ConstantArgument(name, _decode(value, {})) if is_constant else TensorArgument(name))
        return found

    names = sig.get("forward_arg_names")
    if names is not None and not all(isinstance(n, str) for n in _as_list(names)):
        raise ValueError("export.load: malformed module call signature")
    return ModuleCallEntry(data["fqn"], ModuleCallSignature(
        arguments(sig.get("inputs")), arguments(sig.get("outputs")), _decode_spec(sig.get("in_spec")),
        _decode_spec(sig.get("out_spec")), None if names is None else list(names)))


def _decode_stack(data: Any) -> dict[str, tuple[str, str]]:
    stack = {}
    for record in _as_list(data):
        key, fqn, ty = _as_list(record, 3)
        if not all(isinstance(v, str) for v in (key, fqn, ty)):
            raise ValueError("export.load: malformed nn_module_stack")
        stack[key] = (fqn, ty)
    return stack


def _string_map(data: Any) -> dict[str, str]:
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError("export.load: malformed alias table")
    return dict(data)


def load(f: Any) -> ExportedProgram:
    """Reads a program ``save`` wrote. Loading runs no code: the file is read with
    ``weights_only=True`` and calls resolve only to registered ops and ``operator.getitem``."""
    import ember

    data = ember.load(f, weights_only=True)
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise ValueError("export.load: not an Ember exported program (missing or unknown format)")
    graph = Graph()
    env: dict[str, Node] = {}
    for record in _as_list(data.get("nodes")):
        if not isinstance(record, dict):
            raise ValueError("export.load: malformed node record")
        op, name = record.get("op"), record.get("name")
        if op not in ("placeholder", "call_function", "output") or not isinstance(name, str):
            raise ValueError(f"export.load: unexpected node op {op!r}")
        target = record.get("target") if op != "call_function" else _resolve_target(record.get("target"))
        args = _decode(record.get("args"), env)
        kwargs = _decode(record.get("kwargs"), env)
        if not isinstance(args, tuple) or not isinstance(kwargs, dict):
            raise ValueError("export.load: malformed node arguments")
        env[name] = graph.create_node(op, target, args, kwargs, name)
        if record.get("nn_module_stack") is not None:
            env[name].meta["nn_module_stack"] = _decode_stack(record["nn_module_stack"])
    signature = data.get("signature")
    if not isinstance(signature, dict):
        raise ValueError("export.load: missing graph signature")

    def arg(name: str, is_constant: bool, value: Any) -> Any:
        return ConstantArgument(name, _decode(value, env)) if is_constant else TensorArgument(name)

    try:
        inputs = [InputSpec(InputKind[k], arg(n, c, v), t, p) for k, n, t, p, v, c in _as_list(signature["inputs"])]
        outputs = [OutputSpec(OutputKind[k], arg(n, c, v), t) for k, n, t, v, c in _as_list(signature["outputs"])]
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"export.load: malformed graph signature ({e})") from None
    state_dict = dict(data.get("state_dict") or {})
    for name in data.get("parameters") or []:
        if name in state_dict:
            state_dict[name] = nn.Parameter(state_dict[name])
    program = ExportedProgram({}, graph, ExportGraphSignature(inputs, outputs), state_dict,
                              constants=dict(data.get("constants") or {}),
                              in_spec=_decode_spec(data["in_spec"]) if data.get("in_spec") else None,
                              out_spec=_decode_spec(data["out_spec"]) if data.get("out_spec") else None,
                              arg_names=list(data.get("arg_names") or []),
                              keyword_only=tuple(data.get("keyword_only") or ()),
                              module_call_graph=[_decode_call_entry(e) for e in _as_list(data.get("module_call_graph",
                                                                                                  []))])
    program._state_aliases = _string_map(data.get("state_aliases", {}))
    program._module_aliases = _string_map(data.get("module_aliases", {}))
    program.validate()
    return program
