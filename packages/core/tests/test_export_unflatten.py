"""ember.export's module call graph (nn_module_stack on each node, module_call_graph with
ModuleCallEntry / ModuleCallSignature, preserve_module_call_signature), unflatten (the module
hierarchy back, outputs against the eager module and ep.module() in float64, state_dict keys,
swapping a preserved submodule, the flat args adapter, PyTorch's errors, what Ember leaves out)
and CustomDecompTable; a parity test runs one scenario under PyTorch 2.13 and Ember."""

import copy
import dataclasses
import io

import numpy as np
import pytest

import ember
import ember.nn as nn
from ember.export import (
    CustomDecompTable,
    FlatArgsAdapter,
    ModuleCallEntry,
    ModuleCallSignature,
    UnflattenedModule,
    export,
    unflatten,
)
from ember.export.graph_signature import ConstantArgument, TensorArgument
from ember.export.unflatten import InterpreterModule


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.bn = nn.BatchNorm1d(4)

    def forward(self, x):
        return self.bn(self.lin(x)).relu()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([Block(), Block()])
        self.register_buffer("offset", ember.arange(4.0), persistent=False)
        self.scale = ember.tensor([0.5, 1.0, 1.5, 2.0])  # a plain tensor attribute: a lifted constant
        self.head = nn.Linear(4, 2)

    def forward(self, x, *, power=1):
        for layer in self.layers:
            x = layer(x)
        return {"out": self.head(x * self.scale + self.offset).pow(power), "mid": x}


def _net(train=False):
    ember.manual_seed(0)
    net = Net().double()
    net.scale = net.scale.double()
    return net.train(train)


def _x(rows=5):
    ember.manual_seed(1)
    return ember.randn(rows, 4, dtype=ember.float64)


def _same(got, want):
    assert set(got) == set(want)
    for key in want:
        assert ember.allclose(got[key], want[key], rtol=1e-14, atol=1e-15), key


def test_nodes_carry_their_module_stack_and_the_call_graph_lists_the_calls():
    net = _net()
    ep = export(net, (_x(),), {"power": 2})
    stacks = {n.name: n.meta.get("nn_module_stack") for n in ep.graph.nodes}
    assert all(stacks[n.name] is None for n in ep.graph.nodes if n.op in ("placeholder", "output"))
    ops = [n for n in ep.graph.nodes if n.op == "call_function"]
    assert all(list(stacks[n.name])[0] == "L__self__" for n in ops)
    assert all(stacks[n.name]["L__self__"] == ("", f"{__name__}.Net") for n in ops)
    # the first op is the first Linear's, three modules deep
    first = stacks[ops[0].name]
    assert list(first) == ["L__self__", "L__self__layers.0", "L__self__layers.0.lin"]
    assert first["L__self__layers.0"] == ("layers.0", f"{__name__}.Block")
    assert first["L__self__layers.0.lin"] == ("layers.0.lin", "ember.nn.modules.linear.Linear")
    # the last op (pow) runs in the root
    assert list(stacks[ops[-1].name]) == ["L__self__"]
    assert [e.fqn for e in ep.module_call_graph] == ["", "layers.0", "layers.0.lin", "layers.0.bn", "layers.1",
                                                     "layers.1.lin", "layers.1.bn", "head"]
    assert all(isinstance(e, ModuleCallEntry) for e in ep.module_call_graph)
    assert all(e.signature is None for e in ep.module_call_graph[1:])
    root = ep.module_call_graph[0].signature
    assert isinstance(root, ModuleCallSignature)
    assert root.inputs == [] and root.outputs == [] and root.forward_arg_names == ["x", "power"]
    assert root.in_spec == ember.utils._pytree.tree_structure(((_x(),), {"power": 2}))
    assert root.out_spec == ember.utils._pytree.tree_structure({"out": 0, "mid": 0})


def test_preserved_signature_names_the_graph_values_of_the_call():
    ep = export(_net(), (_x(),), preserve_module_call_signature=("layers.1", "head"))
    entries = {e.fqn: e.signature for e in ep.module_call_graph}
    assert entries["layers.0"] is None and entries["layers.1.lin"] is None
    block, head = entries["layers.1"], entries["head"]
    names = {n.name: n for n in ep.graph.nodes}
    # layers.1 takes the output of layers.0 (its ReLU) and gives its own ReLU's output
    (given,) = block.inputs
    (returned,) = block.outputs
    assert isinstance(given, TensorArgument) and isinstance(returned, TensorArgument)
    assert names[given.name].meta["nn_module_stack"].keys() >= {"L__self__layers.0"}
    assert list(names[returned.name].meta["nn_module_stack"]) == ["L__self__", "L__self__layers.1"]
    assert block.in_spec == ember.utils._pytree.tree_structure(((0,), {})) and block.forward_arg_names is None
    assert head.out_spec.is_leaf()
    assert names[head.outputs[0].name].op == "call_function"


def test_export_leaves_the_module_s_hooks_as_they_were():
    net = _net()
    handle = net.head.register_forward_hook(lambda module, args, output: output * 3)
    ep = export(net, (_x(),), preserve_module_call_signature=("head",))
    for module in net.modules():
        assert len(module._forward_pre_hooks) == len(module._forward_pre_hooks_with_kwargs) == 0
        assert len(module._forward_hooks_with_kwargs) == 0
    assert list(net.head._forward_hooks) == [handle.id]
    # the user's hook ran inside the head's call: its output is the signature's output
    head = {e.fqn: e.signature for e in ep.module_call_graph}["head"]
    last = {n.name: n for n in ep.graph.nodes}[head.outputs[0].name]
    assert last.target is ember.ops.aten.mul and last.args[1] == 3
    assert list(last.meta["nn_module_stack"]) == ["L__self__", "L__self__head"]
    _same(unflatten(ep)(_x()), net(_x()))


def test_preserve_module_call_signature_bad_paths():
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        export(_net(), (_x(),), preserve_module_call_signature=("nope",))
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'weight'"):
        export(_net(), (_x(),), preserve_module_call_signature=("head.weight",))
    with pytest.raises(TypeError, match="takes a tuple of module paths"):
        export(_net(), (_x(),), preserve_module_call_signature="head")


@pytest.mark.parametrize("train", [False, True])
@pytest.mark.parametrize("preserve", [(), ("layers.1",), ("layers.0.lin", "head")])
def test_unflatten_mirrors_the_module_and_runs_like_it(train, preserve):
    net = _net(train)
    eager = copy.deepcopy(net)
    ep = export(net, (_x(),), {"power": 2}, preserve_module_call_signature=preserve)
    unflat = unflatten(ep)
    assert isinstance(unflat, UnflattenedModule)
    assert list(unflat.state_dict()) == list(net.state_dict())
    assert [n for n, _ in unflat.named_buffers()] == [n for n, _ in net.named_buffers()]
    assert [n for n, _ in unflat.named_modules()] == [n for n, _ in net.named_modules()]
    block = unflat.get_submodule("layers.0")
    assert isinstance(block, InterpreterModule) and block.type_name() == f"{__name__}.Block"
    assert isinstance(unflat.head, InterpreterModule) and unflat.head.type_name() == "ember.nn.modules.linear.Linear"
    assert type(unflat.layers) is nn.Module  # never called itself: a plain container
    assert unflat.type_name() == f"{__name__}.Net"
    assert ember.equal(unflat.lifted_tensor_0, net.scale)
    got = unflat(_x(), power=2)
    _same(got, eager(_x(), power=2))
    if train:  # the batch norms' in-place updates land in the unflattened module's own buffers
        bn = unflat.get_submodule("layers.1.bn")
        assert bn.num_batches_tracked.item() == 1
        assert ember.allclose(bn.running_mean, eager.layers[1].bn.running_mean, rtol=1e-14, atol=0)
        assert net.layers[1].bn.num_batches_tracked.item() == 0
    _same(got, ep.module()(_x(), power=2))


def test_unflatten_copies_the_state():
    net = _net()
    ep = export(net, (_x(),))
    unflat = unflatten(ep)
    assert isinstance(unflat.head.weight, nn.Parameter) and unflat.head.weight.requires_grad
    with ember.no_grad():
        unflat.head.weight.zero_()
    assert not ember.equal(ep.state_dict["head.weight"], unflat.head.weight)
    assert ember.equal(unflat(_x())["out"], unflat.head.bias.expand(5, 2))


class Mix(nn.Module):
    def forward(self, x, y, *, scale=1.0):
        return {"a": x * scale + y, "b": (x - y,)}


class Caller(nn.Module):
    def __init__(self):
        super().__init__()
        self.mix = Mix()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        d = self.mix(self.lin(x), y=x.cos(), scale=2.0)
        return d["a"] + d["b"][0]


def _caller():
    ember.manual_seed(2)
    return Caller().double()


def test_swapping_a_preserved_submodule():
    net = _caller()
    x = _x(2)[:, :3]
    ep = export(net, (x,), preserve_module_call_signature=("mix",))
    sig = {e.fqn: e.signature for e in ep.module_call_graph}["mix"]
    assert [type(a) for a in sig.inputs] == [TensorArgument, TensorArgument, ConstantArgument]
    assert sig.inputs[2] == ConstantArgument("", 2.0)
    assert sig.in_spec == ember.utils._pytree.tree_structure(((0,), {"y": 0, "scale": 0}))
    assert sig.out_spec == ember.utils._pytree.tree_structure({"a": 0, "b": (0,)})
    unflat = unflatten(ep)
    assert ember.allclose(unflat(x), net(x), rtol=1e-14, atol=0)
    # the submodule takes the call's own arguments, keywords included
    h = net.lin(x)
    got, want = unflat.mix(h, y=x.cos(), scale=2.0), Mix()(h, y=x.cos(), scale=2.0)
    assert set(got) == {"a", "b"} and isinstance(got["b"], tuple)
    assert ember.equal(got["a"], want["a"]) and ember.equal(got["b"][0], want["b"][0])

    class Other(nn.Module):
        def forward(self, x, y, *, scale=1.0):
            return {"a": x * 10, "b": (y * scale,)}

    unflat.mix = Other()
    assert ember.allclose(unflat(x), net.lin(x) * 10 + x.cos() * 2.0, rtol=1e-14, atol=0)

    class Wrong(nn.Module):
        def forward(self, x, y, *, scale=1.0):
            return (x,)

    unflat.mix = Wrong()
    with pytest.raises(TypeError, match="the outputs of mix have the structure"):
        unflat(x)


def test_preserved_submodule_reading_a_lifted_constant_can_be_swapped():
    class Scaled(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = ember.tensor([1.0, 2.0, 3.0])

        def forward(self, x):
            return x * self.scale

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = Scaled()
            self.w = nn.Parameter(ember.ones(3))

        def forward(self, x):
            return self.sub(x) + self.w

    net = Outer()
    x = ember.randn(2, 3)
    unflat = unflatten(export(net, (x,), preserve_module_call_signature=("sub",)))
    assert ember.equal(unflat(x), net(x))
    assert list(unflat.state_dict()) == ["w"]
    unflat.sub = nn.Identity()
    assert ember.equal(unflat(x), x + 1)


def test_unflattened_module_inputs():
    net = _net()
    ep = export(net, (_x(),), {"power": 2})
    unflat = unflatten(ep)
    with pytest.raises(ValueError, match=r"Ran into a kwarg keyword mismatch: Got the following keywords \['pow'\] "
                                         r"but expected \['power'\]"):
        unflat(_x(), pow=2)
    with pytest.raises(TypeError, match="There is no flat args adapter specified. Are you sure you are calling this "
                                        "with the right arguments?"):
        unflat(_x(), _x(), power=2)
    with pytest.raises(ValueError, match="input power was fixed to 2 when the program was exported, but got 3"):
        unflat(_x(), power=3)
    with pytest.raises(TypeError, match="Can't instantiate abstract class FlatArgsAdapter"):
        FlatArgsAdapter()

    class KeepFirst(FlatArgsAdapter):
        def adapt(self, target_spec, input_spec, input_args, metadata=None, obj=None):
            assert target_spec == ep.module_call_graph[0].signature.in_spec and input_spec.num_leaves == 3
            return input_args[:1] + input_args[2:]

    adapted = unflatten(ep, flat_args_adapter=KeepFirst())
    assert not adapted.adapted
    _same(adapted(_x(), "ignored", power=2), net(_x(), power=2))
    assert adapted.adapted

    class KeepAll(FlatArgsAdapter):
        def adapt(self, target_spec, input_spec, input_args, metadata=None, obj=None):
            return input_args

    with pytest.raises(TypeError, match="Flat args adaption failed, number of args mismatch Adapted: 3 \n"
                                        "Exported module: 2"):
        unflatten(ep, KeepAll())(_x(), _x(), power=2)
    with pytest.raises(TypeError, match="unflatten expects an ExportedProgram, got Net"):
        unflatten(net)


def test_nested_inputs_keywords_in_any_order_and_dataclass_outputs():
    @dataclasses.dataclass
    class Pair:
        first: ember.Tensor
        second: ember.Tensor

    ember.export.register_dataclass(Pair)

    class Inner(nn.Module):
        def forward(self, d):
            return d["a"] * d["b"]

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, d, *, bias, shift):
            return Pair(self.inner(d) + bias, d["a"] - shift)

    a, b, bias, shift = (ember.randn(3) for _ in range(4))
    for preserve in [(), ("inner",)]:
        ep = export(Outer(), ({"a": a, "b": b},), {"shift": shift, "bias": bias},
                    preserve_module_call_signature=preserve)
        unflat = unflatten(ep)
        out = unflat({"a": a, "b": b}, shift=shift, bias=bias)
        assert isinstance(out, Pair)
        assert ember.equal(out.first, a * b + bias) and ember.equal(out.second, a - shift)
        a2, b2, bias2, shift2 = (t * 2 + 1 for t in (a, b, bias, shift))
        out = unflat({"a": a2, "b": b2}, bias=bias2, shift=shift2)
        assert ember.equal(out.first, a2 * b2 + bias2) and ember.equal(out.second, a2 - shift2)
        with pytest.raises(TypeError, match="There is no flat args adapter"):
            unflat({"a": a2}, bias=bias2, shift=shift2)


def test_tied_weights_keep_every_name():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Linear(3, 3)
            self.dec = nn.Linear(3, 3)
            self.dec.weight = self.enc.weight

        def forward(self, x):
            return self.dec(self.enc(x).tanh())

    net = Tied()
    x = ember.randn(2, 3)
    unflat = unflatten(export(net, (x,)))
    assert list(unflat.state_dict()) == list(net.state_dict())
    assert unflat.dec.weight is unflat.enc.weight
    assert ember.allclose(unflat(x), net(x), rtol=1e-6, atol=0)


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.register_buffer("n", ember.zeros(()))

    def forward(self, x, twice=False):
        y = self.lin(x).relu()
        return y * 2 if twice else y


class CallsTwice(nn.Module):
    """Calls its submodule `a` twice: the same way, or (differently=True) the second time with
    another argument, which runs another graph."""

    def __init__(self, differently):
        super().__init__()
        self.a = Scaled()
        self.b = nn.Linear(4, 4)
        self.differently = differently

    def forward(self, x):
        return self.b(self.a(self.a(x), twice=self.differently) + 1)


def test_a_module_called_twice_the_same_way_is_one_submodule_called_twice():
    net = CallsTwice(differently=False).double()
    x = ember.randn(2, 4, dtype=ember.float64)
    ep = export(net, (x,))
    keys = [list(n.meta["nn_module_stack"]) for n in ep.graph.nodes if n.op == "call_function"]
    assert ["L__self__", "L__self__a@1", "L__self__a.lin@1"] in keys  # the second call is told apart, as in PyTorch
    unflat = unflatten(ep)
    # as PyTorch 2.13's: the calls ran the same graph, so the root calls one module twice
    assert [name for name, _ in unflat.named_modules()] == ["", "a", "a.lin", "b"]
    assert [n.target for n in unflat.graph.nodes if n.op == "call_module"] == ["a", "a", "b"]
    assert list(unflat.state_dict()) == list(net.state_dict())
    np.testing.assert_allclose(unflat(x).detach().numpy(), net(x).detach().numpy(), rtol=1e-12)


def test_calls_that_ran_other_graphs_get_a_module_each_sharing_the_state():
    net = CallsTwice(differently=True).double()
    x = ember.randn(2, 4, dtype=ember.float64)
    unflat = unflatten(export(net, (x,)))
    # PyTorch 2.13 gives these names: the second call's module at a@1, its Linear (which ran as
    # in the first call) the first call's
    assert [name for name, _ in unflat.named_modules()] == ["", "a", "a.lin", "b", "a@1"]
    assert [name for name, _ in unflat.named_parameters()] == ["a.lin.weight", "a.lin.bias", "b.weight", "b.bias"]
    assert list(unflat.state_dict()) == ["a.n", "a.lin.weight", "a.lin.bias", "b.weight", "b.bias", "a@1.n",
                                         "a@1.lin.weight", "a@1.lin.bias"]
    copy_of_a = getattr(unflat, "a@1")
    assert copy_of_a.lin is unflat.a.lin and copy_of_a.n is unflat.a.n
    assert [n.target for n in unflat.graph.nodes if n.op == "call_module"] == ["a", "a@1", "b"]
    np.testing.assert_allclose(unflat(x).detach().numpy(), net(x).detach().numpy(), rtol=1e-12)
    # training through it reaches the one set of parameters
    unflat(x).sum().backward()
    assert unflat.a.lin.weight.grad is not None


def test_what_unflatten_leaves_out_raises():
    class Twice(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(self.lin(x))

    x = ember.randn(2, 3)
    ep = export(Twice(), (x,), preserve_module_call_signature=("lin",))
    assert [e.fqn for e in ep.module_call_graph] == ["", "lin", "lin@1"]
    with pytest.raises(NotImplementedError, match="preserved submodule 'lin' is called more than once"):
        unflatten(ep)

    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 3)
            self.b = self.a

        def forward(self, x):
            return self.b(x)

    with pytest.raises(NotImplementedError, match="submodule at 'b' is the one at 'a'"):
        unflatten(export(Shared(), (x,)))

    class PassThrough(nn.Module):
        def __init__(self):
            super().__init__()
            self.idn = nn.Identity()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(self.idn(x))

    unflat = unflatten(export(PassThrough(), (x,)))  # not preserved: a module that ran no op is a plain Module
    assert type(unflat.idn) is nn.Module and isinstance(unflat.lin, InterpreterModule)
    with pytest.raises(NotImplementedError, match="preserved submodule 'idn' left no node"):
        unflatten(export(PassThrough(), (x,), preserve_module_call_signature=("idn",)))

    class ReadsParent(nn.Module):
        def __init__(self, owner):
            super().__init__()
            self.__dict__["owner"] = owner  # not a submodule: a reference the forward reads through

        def forward(self, x):
            return x * self.owner.w

    class Parent(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(ember.ones(3))
            self.sub = ReadsParent(self)

        def forward(self, x):
            return self.sub(x)

    ep = export(Parent(), (x,), preserve_module_call_signature=("sub",))
    with pytest.raises(NotImplementedError, match="preserved submodule 'sub' reads 'p_w'"):
        unflatten(ep)
    assert ember.equal(unflatten(export(Parent(), (x,)))(x), x)  # not preserved: w is passed in

    class Leaky(nn.Module):
        def forward(self, x):
            self.cache = x.exp()
            return x.sin()

    class ReadsCache(nn.Module):
        def __init__(self):
            super().__init__()
            self.sub = Leaky()

        def forward(self, x):
            return self.sub(x) + self.sub.cache

    with pytest.raises(NotImplementedError, match="'exp', computed in the preserved submodule 'sub', is read after"):
        unflatten(export(ReadsCache(), (x,), preserve_module_call_signature=("sub",)))
    unflat = unflatten(export(ReadsCache(), (x,)))
    assert ember.allclose(unflat(x), x.sin() + x.exp(), rtol=1e-6, atol=0)


def test_run_decompositions_keeps_stacks_and_call_graph():
    net = _net()
    ep = export(net, (_x(),), preserve_module_call_signature=("head",))
    table = ember.export.default_decompositions()
    table[ember.ops.aten.relu] = lambda t: ember.clamp(t, min=0)
    for decomp in (table, {ember.ops.aten.relu: lambda t: ember.clamp(t, min=0)}):
        decomposed = ep.run_decompositions(decomp)
        targets = [n.target for n in decomposed.graph.nodes if n.op == "call_function"]
        assert ember.ops.aten.relu not in targets and ember.ops.aten.clamp in targets
        clamps = [n for n in decomposed.graph.nodes if n.target is ember.ops.aten.clamp]
        assert [list(n.meta["nn_module_stack"])[-1] for n in clamps] == ["L__self__layers.0", "L__self__layers.1"]
        assert [e.fqn for e in decomposed.module_call_graph] == [e.fqn for e in ep.module_call_graph]
        head = {e.fqn: e.signature for e in decomposed.module_call_graph}["head"]
        names = {n.name for n in decomposed.graph.nodes}
        assert {a.name for a in head.inputs + head.outputs} <= names
        unflat = unflatten(decomposed)
        _same(unflat(_x()), net(_x()))
        unflat.head = nn.Identity()
        assert ember.allclose(unflat(_x())["out"], net(_x())["mid"] * net.scale + net.offset, rtol=1e-14, atol=0)


def test_save_and_load_keep_the_call_graph():
    net = _net()
    ep = export(net, (_x(),), preserve_module_call_signature=("layers.1",))
    buffer = io.BytesIO()
    ember.export.save(ep, buffer)
    buffer.seek(0)
    loaded = ember.export.load(buffer)
    assert loaded.module_call_graph == ep.module_call_graph
    assert [n.meta.get("nn_module_stack") for n in loaded.graph.nodes] == \
        [n.meta.get("nn_module_stack") for n in ep.graph.nodes]
    unflat = unflatten(loaded)
    _same(unflat(_x()), net(_x()))
    assert list(unflat.state_dict()) == list(net.state_dict())


def test_custom_decomp_table_is_a_mapping():
    relu, sin = ember.ops.aten.relu, ember.ops.aten.sin
    table = ember.export.default_decompositions()
    assert isinstance(table, CustomDecompTable) and isinstance(table, dict)
    assert ember.export.decomp_utils.CustomDecompTable is CustomDecompTable
    assert table == {} and len(table) == 0 and relu not in table
    f, g = (lambda t: t.clamp(min=0)), (lambda t: t)
    table[relu] = f
    table.update({sin: g})
    assert relu in table and table[relu] is f and len(table) == 2
    assert list(table) == [relu, sin] and list(table.keys()) == [relu, sin] and list(table.items()) == [(relu, f),
                                                                                                       (sin, g)]
    clone = table.copy()
    assert isinstance(clone, CustomDecompTable) and clone == table
    del clone[sin]
    assert sin not in clone and sin in table
    assert table.pop(sin) is g and sin not in table
    assert table.pop(sin, None) is None
    with pytest.raises(KeyError, match="doesn't exist in the table"):
        table.pop(sin)
    with pytest.raises(KeyError):
        del table[sin]
    with pytest.raises(KeyError):
        table[sin]
    plain = table.materialize()
    assert type(plain) is dict and plain == {relu: f} and table.has_materialized
    plain[sin] = g
    assert sin not in table


# ---- PyTorch parity ------------------------------------------------------------------------------

PARITY = """
import sys, warnings
import numpy as np
warnings.filterwarnings("ignore")
T = __import__(sys.argv[1])
nn = T.nn
rng = np.random.default_rng(0)


def arr(*shape):
    return T.tensor(rng.normal(size=shape))


class Mix(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)
        self.register_buffer("shift", T.tensor([0.5, -1.0, 2.0]))

    def forward(self, x, y, *, scale=1.0):
        h = self.lin(x)
        return {"a": h * scale + y + self.shift, "b": (h - y,)}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Linear(3, 3)
        self.mix = Mix()
        self.post = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))

    def forward(self, x, *, bias):
        h = self.pre(x).relu()
        d = self.mix(h, y=x.cos(), scale=2.0)
        return self.post(d["a"] + d["b"][0]) + bias, h


class Other(nn.Module):
    def forward(self, x, y, *, scale=1.0):
        return {"a": x * scale, "b": (y * 3,)}


net = Net().double()
with T.no_grad():
    for _, p in sorted(net.named_parameters()):
        p.copy_(arr(*p.shape))
x, bias = arr(5, 3), arr(2)
results = {}
for preserve in [(), ("mix",)]:
    tag = "p" if preserve else "n"
    ep = T.export.export(net, (x,), {"bias": bias}, preserve_module_call_signature=preserve)
    graph = ep.module_call_graph
    results[tag + "_fqns"] = np.array([e.fqn for e in graph])
    results[tag + "_has_signature"] = np.array([e.signature is not None for e in graph])
    results[tag + "_arg_names"] = np.array(graph[0].signature.forward_arg_names)
    sig = [e.signature for e in graph if e.fqn == "mix"][0]
    if sig is not None:
        results[tag + "_mix_inputs"] = np.array([type(a).__name__ for a in sig.inputs])
        results[tag + "_mix_leaves"] = np.array([sig.in_spec.num_leaves, sig.out_spec.num_leaves])
    u = T.export.unflatten(ep)
    results[tag + "_keys"] = np.array(list(u.state_dict()))
    results[tag + "_modules"] = np.array([n for n, _ in u.named_modules()])
    results[tag + "_types"] = np.array([u.get_submodule(n).type_name().split(".")[-1]
                                        for n in ("mix", "mix.lin", "post.0", "post.2")])
    out, h = u(x, bias=bias)
    results[tag + "_out"] = out.detach().numpy()
    results[tag + "_h"] = h.detach().numpy()
    results[tag + "_eager"] = net(x, bias=bias)[0].detach().numpy()
    results[tag + "_module"] = ep.module()(x, bias=bias)[0].detach().numpy()
    if preserve:
        u.mix = Other()
        results["p_swapped"] = u(x, bias=bias)[0].detach().numpy()
np.savez(sys.argv[2], **results)
"""


def test_module_call_graph_and_unflatten_match_pytorch(run_torch_and_ember):
    torch_results, ember_results = run_torch_and_ember(PARITY)
    for key, want in torch_results.items():
        got = ember_results[key]
        if want.dtype.kind in "fc":
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, err_msg=key)
        else:
            assert got.tolist() == want.tolist(), key
