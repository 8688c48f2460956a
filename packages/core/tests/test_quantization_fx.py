"""FX graph mode quantization (ember.ao.quantization.quantize_fx, QConfigMapping): qconfig
precedence, where prepare_fx puts observers (one per value, shared by consumers and by ops that keep
their input's parameters), what convert_fx makes of them, converted models close to the float
ones, and PyTorch's errors. The integers against PyTorch: test_quantization_fx_torch_parity.py."""

import warnings

import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.ao.nn import intrinsic as nni
from ember.ao.nn import qat as nnqat
from ember.ao.nn import quantized as nnq
from ember.ao.nn.intrinsic import quantized as nniq
from ember.ao.quantization import (
    HistogramObserver,
    ObserverBase,
    QConfigMapping,
    convert_fx,
    default_qconfig,
    default_reuse_input_qconfig,
    fuse_fx,
    get_default_qat_qconfig_mapping,
    get_default_qconfig_mapping,
    prepare_fx,
    prepare_qat_fx,
)

warnings.filterwarnings("ignore", message="Please use quant_min")


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        x = self.pool(self.relu(self.bn(self.conv(x))))
        return self.fc(ember.flatten(self.avg(x), 1))


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(4, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x):
        y = F.relu(self.conv1(x))
        return F.relu(self.conv2(y) + x)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = MLP()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(self.sub(x)) + x[:, :4]


def _observers(gm):
    return [
        n
        for n in gm.graph.nodes
        if n.op == "call_module" and isinstance(gm.get_submodule(n.target), ObserverBase)
    ]


def _calibrated(model, mapping, data):
    prepared = prepare_fx(model, mapping, (data[0],))
    for x in data:
        prepared(x)
    return convert_fx(prepared)


def _data(*shape, n=4):
    ember.manual_seed(1)
    return [ember.randn(*shape) for _ in range(n)]


# ---- QConfigMapping ---------------------------------------------------------------------------


def test_qconfig_mapping_setters_chain_and_round_trip():
    m = (
        QConfigMapping()
        .set_global(default_qconfig)
        .set_object_type(nn.Linear, None)
        .set_module_name_regex("sub.*", default_qconfig)
        .set_module_name("fc", None)
        .set_module_name_object_type_order("sub", ember.add, 0, default_qconfig)
    )
    d = m.to_dict()
    assert d[""] is default_qconfig
    assert d["object_type"] == [(nn.Linear, None)]
    assert d["module_name_regex"] == [("sub.*", default_qconfig)]
    assert d["module_name"] == [("fc", None)]
    assert d["module_name_object_type_order"] == [("sub", ember.add, 0, default_qconfig)]
    again = QConfigMapping.from_dict(d)
    assert again.to_dict() == d
    assert "module_name_regex_qconfigs" in repr(m)


def test_default_qconfig_mappings():
    m = get_default_qconfig_mapping()
    assert m.global_qconfig.activation.func is HistogramObserver
    assert m.object_type_qconfigs["reshape"] is default_reuse_input_qconfig
    assert nn.Sigmoid in m.object_type_qconfigs and "tanh" in m.object_type_qconfigs
    qat = get_default_qat_qconfig_mapping("qnnpack")
    assert qat.global_qconfig.activation().dtype == ember.quint8
    with pytest.raises(AssertionError, match="backend: foo not supported"):
        get_default_qconfig_mapping("foo")


def test_precedence_module_name_over_regex_over_object_type_over_global():
    x = _data(2, 8)
    # object_type keeps Linear float; the module name sub.fc1 brings it back
    mapping = (
        QConfigMapping()
        .set_global(default_qconfig)
        .set_object_type(nn.Linear, None)
        .set_object_type(nn.ReLU, None)
        .set_module_name("sub.fc1", default_qconfig)
    )
    q = _calibrated(Outer().eval(), mapping, x)
    assert isinstance(q.sub.fc1, nniq.LinearReLU)
    assert type(q.sub.fc2) is nn.Linear and type(q.fc) is nn.Linear
    # a regex beats the object type; the module name beats the regex
    mapping = (
        QConfigMapping()
        .set_global(None)
        .set_object_type(nn.Linear, default_qconfig)
        .set_object_type(nn.ReLU, default_qconfig)
        .set_module_name_regex("sub\\..*", None)
        .set_module_name("sub.fc2", default_qconfig)
    )
    q = _calibrated(Outer().eval(), mapping, x)
    assert isinstance(q.fc, nnq.Linear) and isinstance(q.sub.fc2, nnq.Linear)
    assert type(q.sub.fc1) is nni.LinearReLU
    # the first regex set that matches wins
    mapping = (
        QConfigMapping()
        .set_global(default_qconfig)
        .set_module_name_regex("sub.fc.*", None)
        .set_module_name_regex("sub.*", default_qconfig)
    )
    q = _calibrated(Outer().eval(), mapping, x)
    assert type(q.sub.fc1) is nni.LinearReLU and type(q.sub.fc2) is nn.Linear
    assert q(x[0]).shape == (2, 4)


def test_module_name_object_type_order_beats_module_name():
    class TwoAdds(nn.Module):
        def forward(self, x, y):
            return (x + y) + y

    x = ember.randn(4, 3)
    mapping = (
        QConfigMapping().set_global(default_qconfig).set_module_name_object_type_order("", ember.add, 0, None)
    )
    # the traced adds are operator.add: keyed by that, not by ember.add
    import operator

    mapping.set_module_name_object_type_order("", operator.add, 0, None)
    prepared = prepare_fx(TwoAdds().eval(), mapping, (x, x))
    adds = [n for n in prepared.graph.nodes if n.target is operator.add]
    first, second = adds
    assert not any(isinstance(a, type(first)) and a.op == "call_module" for a in first.args)
    assert all(a.op == "call_module" for a in second.args)


def test_qconfig_none_keeps_submodule_float():
    x = _data(2, 8)
    mapping = QConfigMapping().set_global(default_qconfig).set_module_name("sub", None)
    model = Outer().eval()
    q = _calibrated(model, mapping, x)
    assert type(q.sub.fc1) is nni.LinearReLU and type(q.sub.fc2) is nn.Linear
    assert isinstance(q.fc, nnq.Linear)
    assert (q(x[0]) - model(x[0])).abs().max().item() < 0.1


# ---- prepare_fx ---------------------------------------------------------------------------------


def test_prepare_fx_observers_mlp():
    prepared = prepare_fx(MLP().eval(), QConfigMapping().set_global(default_qconfig), (ember.randn(2, 8),))
    assert isinstance(prepared.fc1, nni.LinearReLU)  # Linear + ReLU fused
    obs = _observers(prepared)
    assert len(obs) == 3  # the input, fc1's and fc2's outputs
    assert obs[0].args[0].op == "placeholder"
    assert [n.args[0].target for n in obs[1:]] == ["fc1", "fc2"]


def test_one_observer_per_value_shared_by_consumers():
    class TwoHeads(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            return self.a(x), self.b(x)

    prepared = prepare_fx(
        TwoHeads().eval(), QConfigMapping().set_global(default_qconfig), (ember.randn(2, 4),)
    )
    obs = _observers(prepared)
    assert len(obs) == 3
    assert prepared.graph.find_nodes(op="call_module", target="a")[0].args[0] is obs[0]
    assert prepared.graph.find_nodes(op="call_module", target="b")[0].args[0] is obs[0]


def test_shape_ops_share_their_input_observer():
    prepared = prepare_fx(CNN().eval(), get_default_qconfig_mapping(), (ember.randn(1, 3, 8, 8),))
    assert isinstance(prepared.conv, nni.ConvReLU2d)
    by_input = {n.args[0].name: prepared.get_submodule(n.target) for n in _observers(prepared)}
    conv_obs = by_input["conv"]
    assert by_input["pool"] is conv_obs and by_input["avg"] is conv_obs and by_input["flatten"] is conv_obs
    assert by_input["fc"] is not conv_obs


def test_cat_inputs_and_output_share_one_observer():
    class Cat(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Conv2d(2, 2, 1), nn.Conv2d(2, 2, 1)

        def forward(self, x):
            return ember.cat([self.a(x), self.b(x)], 1)

    x = _data(1, 2, 4, 4)
    model = Cat().eval()
    prepared = prepare_fx(model, QConfigMapping().set_global(default_qconfig), (x[0],))
    by_input = {n.args[0].name: prepared.get_submodule(n.target) for n in _observers(prepared)}
    assert by_input["a"] is by_input["b"] is by_input["cat"]
    for v in x:
        prepared(v)
    q = convert_fx(prepared)
    assert q.a.scale == q.b.scale and q.a.zero_point == q.b.zero_point
    assert (q(x[0]) - model(x[0])).abs().max().item() < 0.05


# ---- convert_fx ---------------------------------------------------------------------------------


def test_convert_mlp_close_to_float():
    model = MLP().eval()
    x = _data(16, 8)
    q = _calibrated(model, get_default_qconfig_mapping(), x)
    assert isinstance(q.fc1, nniq.LinearReLU) and isinstance(q.fc2, nnq.Linear)
    ref = model(x[0])
    assert (q(x[0]) - ref).abs().max().item() < 0.05 * ref.abs().max().item() + 0.02


def test_convert_cnn_conv_bn_relu_close_to_float():
    model = CNN().eval()
    x = _data(2, 3, 8, 8)
    q = _calibrated(model, get_default_qconfig_mapping(), x)
    assert isinstance(q.conv, nniq.ConvReLU2d) and isinstance(q.fc, nnq.Linear)
    assert "bn" not in dict(q.named_modules())
    out = q(x[0])
    assert not out.is_quantized
    ref = model(x[0])
    assert (out - ref).abs().max().item() < 0.05 * ref.abs().max().item() + 0.02


def test_convert_residual_add_relu():
    model = Residual().eval()
    x = _data(2, 4, 6, 6)
    q = _calibrated(model, QConfigMapping().set_global(default_qconfig), x)
    assert isinstance(q.conv1, nniq.ConvReLU2d) and isinstance(q.conv2, nnq.Conv2d)
    assert "_quantized_add_relu" in q.code
    ref = model(x[0])
    assert (q(x[0]) - ref).abs().max().item() < 0.05 * ref.abs().max().item() + 0.05


def test_unsupported_op_stays_float_between_dequantize_and_quantize():
    class Gelu(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(4, 4), nn.Linear(4, 4)

        def forward(self, x):
            return self.b(F.gelu(self.a(x)))

    model = Gelu().eval()
    x = _data(8, 4)
    q = _calibrated(model, QConfigMapping().set_global(default_qconfig), x)
    assert isinstance(q.a, nnq.Linear) and isinstance(q.b, nnq.Linear)
    assert "dequantize" in q.code and q.code.count("ember.quantize_per_tensor(") == 2
    assert (q(x[0]) - model(x[0])).abs().max().item() < 0.1


def test_fuse_fx_and_prepare_qat_fx():
    model = CNN().eval()
    x = ember.randn(1, 3, 8, 8)
    fused = fuse_fx(model)
    assert isinstance(fused.conv, nni.ConvReLU2d)
    assert (fused(x) - model(x)).abs().max().item() < 1e-4

    class Plain(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x)

    prepared = prepare_qat_fx(Plain().train(), get_default_qat_qconfig_mapping(), (ember.randn(2, 4),))
    assert isinstance(prepared.fc, nnqat.Linear)
    prepared(ember.randn(2, 4))
    q = convert_fx(prepared.eval())
    assert isinstance(q.fc, nnq.Linear)


# ---- errors -------------------------------------------------------------------------------------


def test_errors():
    x = ember.randn(1, 3, 8, 8)
    with pytest.raises(AssertionError, match="qconfig_mapping must be a QConfigMapping"):
        prepare_fx(MLP().eval(), default_qconfig, (ember.randn(2, 8),))
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        prepare_fx(CNN().train(), get_default_qconfig_mapping(), (x,))
    with pytest.raises(ValueError, match="input model must be a GraphModule"):
        convert_fx(MLP())
    with pytest.raises(AssertionError, match="incoming model must be produced by prepare_fx"):
        convert_fx(ember.fx.symbolic_trace(MLP()))
    with pytest.raises(LookupError, match="same qconfigs for all module types"):
        prepare_fx(
            MLP().eval(), QConfigMapping().set_object_type(nn.Linear, default_qconfig), (ember.randn(2, 8),)
        )
    with pytest.warns(FutureWarning, match="Passing a QConfig dictionary"):
        prepare_fx(MLP().eval(), {"": default_qconfig}, (ember.randn(2, 8),))
