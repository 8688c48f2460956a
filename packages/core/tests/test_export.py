"""ember.export: exported programs against the module run eagerly in float64, the graph signature,
module(), run_decompositions, and save/load as plain data (crafted files raise, run nothing)."""

import io
import operator

import pytest

import ember
import ember.nn as nn
from ember.export.graph_signature import InputKind, OutputKind


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.register_buffer("offset", ember.arange(4.0), persistent=False)
        self.scale = ember.tensor([0.5, 1.0, 1.5, 2.0])  # a plain tensor attribute: lifted constant

    def forward(self, x, y=None, *, power=2):
        h = self.bn(self.lin(x)).relu() * self.scale + self.offset
        out = {"h": h.pow(power)}
        if y is not None:
            out["sum"] = (h.sum(-1, keepdim=True) + y,)
        return out


def _net(train=False):
    ember.manual_seed(0)
    net = Net().double()
    net.scale = net.scale.double()
    return net.train(train)


def _x(kind="contiguous"):
    ember.manual_seed(1)
    if kind == "non_contiguous":
        return ember.randn(3, 5, dtype=ember.float64).t()
    if kind == "zero_size":
        return ember.randn(0, 3, dtype=ember.float64)
    return ember.randn(5, 3, dtype=ember.float64)


@pytest.mark.parametrize("kind", ["contiguous", "non_contiguous", "zero_size"])
def test_exported_module_matches_eager(kind):
    net = _net()
    x = _x(kind)
    y = ember.ones(x.shape[0], 1, dtype=ember.float64)
    ep = ember.export.export(net, (x, y), {"power": 3})
    got = ep.module()(x, y)
    want = net(x, y, power=3)
    assert set(got) == {"h", "sum"}
    assert ember.allclose(got["h"], want["h"], rtol=1e-14, atol=0)
    assert ember.allclose(got["sum"][0], want["sum"][0], rtol=1e-14, atol=0)
    ep.validate()
    module = ep.module()
    assert "def forward(self, x, y, *, power = 3):" in module.code
    assert ember.equal(module(x, y, power=3)["h"], got["h"])
    with pytest.raises(ValueError, match="input power was fixed to 3 when the program was exported, but got 2"):
        module(x, y, power=2)


def test_signature_lists_lifted_inputs_in_order():
    net = _net()
    ep = ember.export.export(net, (_x(),))
    sig = ep.graph_signature
    kinds = [s.kind for s in sig.input_specs]
    assert kinds == [InputKind.PARAMETER] * 4 + [InputKind.BUFFER] * 4 + [InputKind.CONSTANT_TENSOR, InputKind.USER_INPUT]
    assert sig.parameters == ("lin.weight", "lin.bias", "bn.weight", "bn.bias")
    assert sig.buffers == ("offset", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked")
    assert sig.non_persistent_buffers == ("offset",)
    assert sig.inputs_to_parameters["p_lin_weight"] == "lin.weight"
    assert sig.user_inputs == ("x",) and sig.lifted_tensor_constants == ("lifted_tensor_0",)
    assert [s.kind for s in sig.output_specs] == [OutputKind.USER_OUTPUT]
    placeholders = [n.name for n in ep.graph.nodes if n.op == "placeholder"]
    assert placeholders == [s.arg.name for s in sig.input_specs]
    assert all(n.target is operator.getitem or type(n.target).__name__ == "OpOverload"
               for n in ep.graph.nodes if n.op == "call_function")
    assert dict(ep.named_parameters())["lin.weight"] is net.lin.weight
    assert "p_lin_weight: PARAMETER target='lin.weight'" in str(ep)
    assert ember.equal(ep.constants["lifted_tensor_0"], net.scale)


def test_export_in_training_mode_leaves_the_module_s_buffers_alone():
    net = _net(train=True)
    mean = net.bn.running_mean.clone()
    ep = ember.export.export(net, (_x(),))
    assert ember.equal(net.bn.running_mean, mean) and net.bn.num_batches_tracked.item() == 0
    module = ep.module()
    out = module(_x())["h"]
    assert ember.allclose(out, _net(train=True)(_x())["h"], rtol=1e-14, atol=0)
    # the in-place update stays in the graph: running the module updates its buffers
    assert module.bn.num_batches_tracked.item() == 1 and not ember.equal(module.bn.running_mean, mean)


def test_run_decompositions():
    class Small(nn.Module):
        def forward(self, x):
            return ember.relu(x) + 1

    ep = ember.export.export(Small(), (ember.randn(4),))
    assert ember.export.default_decompositions() == {}
    decomposed = ep.run_decompositions({ember.ops.aten.relu: lambda x: ember.clamp(x, min=0)})
    targets = [n.target for n in decomposed.graph.nodes if n.op == "call_function"]
    assert ember.ops.aten.relu not in targets and ember.ops.aten.clamp in targets
    v = ember.randn(4)
    assert ember.equal(decomposed.module()(v), ember.relu(v) + 1)


def test_save_and_load_round_trip(tmp_path):
    net = _net()
    x = _x()
    ep = ember.export.export(net, (x,))
    path = tmp_path / "net.ember"
    ember.export.save(ep, path)
    loaded = ember.export.load(path)
    assert [str(s) for s in loaded.graph_signature.input_specs] == [str(s) for s in ep.graph_signature.input_specs]
    assert ember.equal(loaded.module()(x)["h"], ep.module()(x)["h"])
    assert isinstance(dict(loaded.named_parameters())["lin.weight"], nn.Parameter)


def _saved(ep):
    buffer = io.BytesIO()
    ember.export.save(ep, buffer)
    buffer.seek(0)
    return ember.load(buffer)


def _load(data):
    buffer = io.BytesIO()
    ember.save(data, buffer)
    buffer.seek(0)
    return ember.export.load(buffer)


def test_crafted_files_raise_and_run_nothing():
    class Small(nn.Module):
        def forward(self, x):
            return x.sin()

    data = _saved(ember.export.export(Small(), (ember.randn(2),)))
    with pytest.raises(ValueError, match="not an Ember exported program"):
        _load({"format": "other"})
    evil = dict(data, nodes=[dict(n) for n in data["nodes"]])
    evil["nodes"][1]["target"] = "os.system"
    with pytest.raises(ValueError, match="unknown call target 'os.system'"):
        _load(evil)
    evil["nodes"][1]["target"] = "aten::no_such_op"
    with pytest.raises(ValueError, match="aten::no_such_op is not a registered op"):
        _load(evil)
    evil = dict(data, nodes=[dict(n) for n in data["nodes"]])
    evil["nodes"][1]["op"] = "call_module"
    with pytest.raises(ValueError, match="unexpected node op 'call_module'"):
        _load(evil)
    evil = dict(data, nodes=[dict(n) for n in data["nodes"]])
    evil["nodes"][1]["args"] = {"tuple": [{"node": "nowhere"}]}
    with pytest.raises(ValueError, match="unknown node 'nowhere'"):
        _load(evil)
    evil["nodes"][1]["args"] = {"weird": 1}
    with pytest.raises(ValueError, match="unknown argument tag 'weird'"):
        _load(evil)
    evil = dict(data, signature={"inputs": [["NOPE", "x", None, None, None, False]], "outputs": []})
    with pytest.raises(ValueError, match="malformed graph signature"):
        _load(evil)
    # a pickled object that would run code is refused by the weights-only reader
    import pickle

    class Payload:
        def __reduce__(self):
            return (print, ("ran",))

    buffer = io.BytesIO()
    ember.save({"format": "ember.export/1", "nodes": [Payload()]}, buffer)
    buffer.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        ember.export.load(buffer)


def test_export_bad_input():
    with pytest.raises(TypeError, match="Expected `mod` to be an instance of `ember.nn.Module`"):
        ember.export.export(lambda x: x, (ember.ones(1),))
    with pytest.raises(ValueError, match="Expecting `args` to be a tuple"):
        ember.export.export(_net(), [_x()])
    with pytest.raises(NotImplementedError, match="dynamic_shapes needs symbolic shapes"):
        ember.export.export(_net(), (_x(),), dynamic_shapes={"x": {0: "batch"}})
    with pytest.raises(TypeError, match="do not fit Net.forward"):
        ember.export.export(_net(), (_x(), None, 3))
    ep = ember.export.export(_net(), (_x(),))
    with pytest.raises(RuntimeError, match="Unable to call ExportedProgram directly"):
        ep(_x())
    with pytest.raises(TypeError, match="expects an ExportedProgram"):
        ember.export.save(_net(), io.BytesIO())


def test_register_dataclass_inputs_and_outputs():
    import dataclasses

    @dataclasses.dataclass
    class Pair:
        a: ember.Tensor
        b: ember.Tensor

    ember.export.register_dataclass(Pair)

    class Swap(nn.Module):
        def forward(self, p):
            return Pair(p.b * 2, p.a + 1)

    p = Pair(ember.ones(2), ember.zeros(2))
    out = ember.export.export(Swap(), (p,)).module()(p)
    assert isinstance(out, Pair) and ember.equal(out.a, ember.zeros(2)) and ember.equal(out.b, ember.full((2,), 2.0))
    with pytest.raises(TypeError, match="expects a dataclass type"):
        ember.export.register_dataclass(int)


def test_make_fx_and_save_with_a_dataclass_output():
    import dataclasses

    from ember.fx.experimental.proxy_tensor import make_fx

    @dataclasses.dataclass
    class Out:
        value: ember.Tensor

    ember.export.register_dataclass(Out)
    gm = make_fx(lambda x: Out(x.exp()))(ember.zeros(2))
    assert isinstance(gm(ember.zeros(2)), Out) and ember.equal(gm(ember.zeros(2)).value, ember.ones(2))

    class M(nn.Module):
        def forward(self, x):
            return Out(x + 1)

    with pytest.raises(ValueError, match="cannot store inputs or outputs nested in Out"):
        ember.export.save(ember.export.export(M(), (ember.ones(1),)), io.BytesIO())


def test_one_tensor_given_twice_is_two_inputs():
    class Pair(nn.Module):
        def forward(self, a, b):
            return a * 2 + b

    x = ember.ones(3, dtype=ember.float64)
    ep = ember.export.export(Pair(), (x, x))
    users = [n for n in ep.graph.nodes if n.op == "placeholder"]
    assert len(users) == 2 and all(len(n.users) == 1 for n in users)
    a, b = ember.ones(3, dtype=ember.float64), ember.zeros(3, dtype=ember.float64)
    # PyTorch 2.13 binds both to b's placeholder here and answers 0
    assert ep.module()(a, b).tolist() == [2.0, 2.0, 2.0]


def test_var_positional_and_var_keyword_inputs():
    class Varargs(nn.Module):
        def forward(self, a, *rest, k=None, **kw):
            return a * 2 + sum(rest) + k + kw["z"]

    def full(v):
        return ember.full((3,), v, dtype=ember.float64)

    ep = ember.export.export(Varargs(), (full(1), full(1), full(1)), {"k": full(1), "z": full(1)})
    args, kwargs = (full(1), full(5), full(1)), {"k": full(7), "z": full(100)}
    assert ep.module()(*args, **kwargs).tolist() == [115.0] * 3
    assert ep.run_decompositions().module()(*args, **kwargs).tolist() == [115.0] * 3
    buffer = io.BytesIO()
    ember.export.save(ep, buffer)
    buffer.seek(0)
    assert ember.export.load(buffer).module()(*args, **kwargs).tolist() == [115.0] * 3
    with pytest.raises(TypeError, match="the inputs' structure differs from the traced one"):
        ep.module()(full(1), full(5), **kwargs)  # one positional fewer than traced
