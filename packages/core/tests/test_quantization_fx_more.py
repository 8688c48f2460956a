"""FX graph mode quantization of the ops beyond modules' linear / conv: functional linear and conv
(+ relu) lowered to the quantized kernels on a weight quantized once, sigmoid / tanh as
fixed-qparams ops running on quantized tensors, F.hardswish, weight-only Embedding / EmbeddingBag,
and the backend-config ops Ember keeps float (observed as PyTorch's). Each lowered op's output is
checked against the eager quantized module with the same parameters or a float64 NumPy reference of
the quantize / dequantize arithmetic."""

import warnings

import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.ao.nn import quantized as nnq
from ember.ao.nn.intrinsic import quantized as nniq
from ember.ao.quantization import (
    FixedQParamsObserver,
    QConfigMapping,
    convert_fx,
    default_qconfig,
    float_qparams_weight_only_qconfig,
    get_default_qat_qconfig_mapping,
    get_default_qconfig_mapping,
    prepare_fx,
    prepare_qat_fx,
)

warnings.filterwarnings("ignore", message="Please use quant_min")


def _data(*shape, n=4, seed=3):
    ember.manual_seed(seed)
    return [ember.randn(*shape) for _ in range(n)]


def _convert(model, mapping, data):
    prepared = prepare_fx(model, mapping, data[0])
    for inputs in data:
        prepared(*inputs)
    return prepared, convert_fx(prepared)


def _q_np(x, scale, zero_point, lo=0, hi=255):
    """float64 quantize (round half to even) then dequantize."""
    q = np.clip(np.rint(np.asarray(x, dtype=np.float64) / scale) + zero_point, lo, hi)
    return (q - zero_point) * scale


def _call_targets(gm):
    return [n.target for n in gm.graph.nodes if n.op == "call_function"]


class FunctionalLinear(nn.Module):
    def __init__(self, relu):
        super().__init__()
        self.w = nn.Parameter(ember.randn(6, 4) * 0.5)
        self.b = nn.Parameter(ember.randn(6) * 0.1)
        self.relu = relu

    def forward(self, x):
        y = F.linear(x, self.w, self.b)
        return F.relu(y) if self.relu else y


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("mapping", ["default", "minmax"])
def test_functional_linear_lowered_matches_eager_quantized_linear(relu, mapping):
    ember.manual_seed(0)
    model = FunctionalLinear(relu).eval()
    qmap = get_default_qconfig_mapping() if mapping == "default" else QConfigMapping().set_global(default_qconfig)
    data = [(x,) for x in _data(5, 4)]
    prepared, q = _convert(model, qmap, data)
    # the weight input was observed with the qconfig's weight observer (per channel in the default)
    weight_obs = [
        prepared.get_submodule(n.target)
        for n in prepared.graph.nodes
        if n.op == "call_module" and n.args[0].op == "get_attr"
    ]
    assert len(weight_obs) == 1 and weight_obs[0].dtype == ember.qint8
    fn = "_quantized_linear_relu" if relu else "_quantized_linear"
    assert [t.__name__ for t in _call_targets(q) if callable(t) and t.__name__.startswith("_quantized")] == [fn]
    assert q._packed_weight_0.dtype == ember.qint8
    # the same quantized kernel through the eager module: nnq.Linear / LinearReLU with the same
    # weight integers, bias and output parameters
    calls = [n for n in q.graph.nodes if n.op == "call_function" and getattr(n.target, "__name__", "") == fn]
    scale, zero_point = calls[0].args[3], calls[0].args[4]
    eager = (nniq.LinearReLU if relu else nnq.Linear)(4, 6)
    eager.set_weight_bias(q._packed_weight_0, model.b.detach())
    eager.scale, eager.zero_point = scale, zero_point
    x = data[0][0]
    qin = [n for n in q.graph.nodes if n.op == "call_function" and n.target is ember.quantize_per_tensor][0]
    xq = ember.quantize_per_tensor(x, qin.args[1], qin.args[2], ember.quint8)
    expected = eager(xq).dequantize()
    assert ember.equal(q(x), expected)
    # and close to the float model
    assert (q(x) - model(x)).abs().max().item() < 0.1


class FunctionalConv(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Parameter(ember.randn(5, 3, 3, 3) * 0.3)
        self.b1 = nn.Parameter(ember.randn(5) * 0.1)
        self.w2 = nn.Parameter(ember.randn(4, 5, 2, 2) * 0.3)
        self.w3 = nn.Parameter(ember.randn(2, 3, 3) * 0.3)

    def forward(self, x, s):
        y = F.conv2d(x, self.w1, self.b1, (1, 1), (1, 1), (1, 1), 1)
        y = F.relu(F.conv2d(y, self.w2, None, 2))
        z = ember.conv1d(s, self.w3, stride=1, padding=1)
        return y, z


def test_functional_conv_lowered_matches_eager_quantized_conv():
    ember.manual_seed(0)
    model = FunctionalConv().eval()
    data = list(zip(_data(2, 3, 6, 6), _data(2, 3, 7, seed=4), strict=True))
    _, q = _convert(model, get_default_qconfig_mapping(), data)
    calls = [n for n in q.graph.nodes if n.op == "call_function" and "_quantized_conv" in getattr(n.target, "__name__", "")]
    assert [c.target.__name__ for c in calls] == ["_quantized_conv", "_quantized_conv_relu", "_quantized_conv"]
    assert calls[1].args[3:7] == ([2, 2], [0, 0], [1, 1], 1)
    x, s = _data(2, 3, 6, 6, n=1, seed=11)[0], _data(2, 3, 7, n=1, seed=12)[0]
    qins = [n for n in q.graph.nodes if n.op == "call_function" and n.target is ember.quantize_per_tensor]
    xq = ember.quantize_per_tensor(x, qins[0].args[1], qins[0].args[2], ember.quint8)
    sq = ember.quantize_per_tensor(s, qins[1].args[1], qins[1].args[2], ember.quint8)
    # the eager quantized modules with the same weights and output parameters
    c1 = nnq.Conv2d(3, 5, 3, padding=1)
    c1.set_weight_bias(getattr(q, calls[0].args[1].target), model.b1.detach())
    c1.scale, c1.zero_point = calls[0].args[7], calls[0].args[8]
    c2 = nniq.ConvReLU2d(5, 4, 2, stride=2, bias=False)
    c2.set_weight_bias(getattr(q, calls[1].args[1].target), None)
    c2.scale, c2.zero_point = calls[1].args[7], calls[1].args[8]
    c3 = nnq.Conv1d(3, 2, 3, padding=1, bias=False)
    c3.set_weight_bias(getattr(q, calls[2].args[1].target), None)
    c3.scale, c3.zero_point = calls[2].args[7], calls[2].args[8]
    y, z = q(x, s)
    assert ember.equal(y, c2(c1(xq)).dequantize())
    assert ember.equal(z, c3(sq).dequantize())
    ry, rz = model(x, s)
    for got, ref in ((y, ry), (z, rz)):
        assert (got - ref).abs().max().item() < 0.05 * ref.abs().max().item() + 0.02


class Fixed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.sig = nn.Sigmoid()
        self.tanh = nn.Tanh()
        self.hs = nn.Hardsigmoid()

    def forward(self, x):
        y = self.fc(x)
        return self.sig(y), self.tanh(y), ember.sigmoid(y), F.tanh(y), y.sigmoid(), self.hs(y)


def test_sigmoid_tanh_fixed_qparams_run_on_quantized_tensors():
    ember.manual_seed(0)
    model = Fixed().eval()
    data = [(x,) for x in _data(6, 4)]
    prepared, q = _convert(model, get_default_qconfig_mapping(), data)
    fixed = [m for m in prepared.modules() if isinstance(m, FixedQParamsObserver)]
    assert len(fixed) == 6
    code = q.code
    for lowered in ("self.sig(fc)", "self.tanh(fc)", "ember.sigmoid(fc)", "functional.tanh(fc)", "fc.sigmoid()"):
        assert lowered in code  # each runs on the linear's quantized output
    assert "self.hs(dequantize" in code
    y = model.fc(data[0][0])
    fc_q = q.fc(
        ember.quantize_per_tensor(
            data[0][0],
            *[n.args[1:3] for n in q.graph.nodes if n.target is ember.quantize_per_tensor][0],
            ember.quint8,
        )
    )
    out = q(data[0][0])
    yd = fc_q.dequantize().numpy().astype(np.float64)
    sig = _q_np(1.0 / (1.0 + np.exp(-yd)), 1.0 / 256.0, 0)
    tanh = _q_np(np.tanh(yd), 2.0 / 256.0, 128)
    for got, ref in zip(out[:5], (sig, tanh, sig, tanh, sig), strict=True):
        assert not got.is_quantized
        np.testing.assert_allclose(got.numpy(), ref, atol=1.01 / 256)  # at most one code from float64
    # the lowered ops are the quantized kernels themselves
    assert ember.equal(out[0], ember.sigmoid(fc_q).dequantize())
    assert ember.equal(out[1], ember.tanh(fc_q).dequantize())
    # hardsigmoid (no quantized kernel in Ember): float between a dequantize and a fixed (1/256, 0) quantize
    hs = _q_np(np.clip(yd / 6.0 + 0.5, 0.0, 1.0), 1.0 / 256.0, 0)
    np.testing.assert_allclose(out[5].numpy(), hs, atol=1e-6)
    assert (out[0] - ember.sigmoid(y)).abs().max().item() < 0.02


def test_fixed_qparams_op_with_another_qconfig_stays_float_with_warning():
    model = Fixed().eval()
    with pytest.warns(UserWarning, match="QConfig must specify a FixedQParamsObserver"):
        prepared = prepare_fx(model, QConfigMapping().set_global(default_qconfig), (ember.randn(2, 4),))
    assert not [m for m in prepared.modules() if isinstance(m, FixedQParamsObserver)]
    prepared(ember.randn(3, 4))
    q = convert_fx(prepared)
    assert "self.sig(dequantize" in q.code


def test_fixed_qparams_qat_fake_quant_then_convert():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return ember.sigmoid(self.fc(x))

    prepared = prepare_qat_fx(M().train(), get_default_qat_qconfig_mapping(), (ember.randn(2, 4),))
    for x in _data(4, 4):
        prepared(x)
    q = convert_fx(prepared.eval())
    assert isinstance(q.fc, nnq.Linear)
    assert "ember.sigmoid(fc)" in q.code
    out = q(ember.randn(3, 4))
    codes = out.numpy().astype(np.float64) * 256
    np.testing.assert_allclose(codes, np.rint(codes), atol=1e-4)


class Hardswish(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return F.hardswish(self.fc(x))


def test_functional_hardswish_lowered_as_eager_quantized_hardswish():
    model = Hardswish().eval()
    data = [(x,) for x in _data(6, 4)]
    _, q = _convert(model, get_default_qconfig_mapping(), data)
    call = [n for n in q.graph.nodes if getattr(n.target, "__name__", "") == "_quantized_hardswish"]
    assert len(call) == 1 and call[0].args[0].target == "fc"
    scale, zero_point = call[0].args[1], call[0].args[2]
    x = data[0][0]
    qin = [n for n in q.graph.nodes if n.target is ember.quantize_per_tensor][0]
    fc_q = q.fc(ember.quantize_per_tensor(x, qin.args[1], qin.args[2], ember.quint8))
    eager = nnq.Hardswish(scale, zero_point)
    assert ember.equal(q(x), eager(fc_q).dequantize())
    yd = fc_q.dequantize().numpy().astype(np.float64)
    ref = _q_np(yd * np.clip(yd + 3.0, 0.0, 6.0) / 6.0, scale, zero_point)
    np.testing.assert_allclose(q(x).numpy(), ref, atol=1.01 * scale)


class Emb(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 6)
        self.bag = nn.EmbeddingBag(10, 6, mode="sum")

    def forward(self, i, j, off):
        return self.emb(i), self.bag(j, off)


def test_weight_only_embeddings_swapped_for_quantized_modules():
    ember.manual_seed(0)
    model = Emb().eval()
    mapping = (
        get_default_qconfig_mapping()
        .set_object_type(nn.Embedding, float_qparams_weight_only_qconfig)
        .set_object_type(nn.EmbeddingBag, float_qparams_weight_only_qconfig)
    )
    i, j, off = ember.tensor([[1, 9, 3]]), ember.tensor([1, 2, 3, 4, 7]), ember.tensor([0, 2])
    prepared = prepare_fx(model, mapping, (i, j, off))
    assert not [n for n in prepared.graph.nodes if n.op == "call_module" and "activation_post_process" in n.target]
    prepared(i, j, off)
    q = convert_fx(prepared)
    assert isinstance(q.emb, nnq.Embedding) and isinstance(q.bag, nnq.EmbeddingBag)
    # the eager module from the same float module and qconfig
    ref_emb = model.emb
    ref_emb.qconfig = float_qparams_weight_only_qconfig
    eager = nnq.Embedding.from_float(ref_emb)
    assert ember.equal(q.emb.weight().int_repr(), eager.weight().int_repr())
    e, b = q(i, j, off)
    assert ember.equal(e, eager(i))
    # float64 reference: each row quantized with its own (scale, zero point) as float qparams
    w = model.emb.weight.detach().numpy().astype(np.float64)
    wq = q.emb.weight()
    scales = wq.q_per_channel_scales().numpy().astype(np.float64)[:, None]
    points = wq.q_per_channel_zero_points().numpy().astype(np.float64)[:, None]
    deq = (np.clip(np.rint(w / scales + points), 0, 255) - points) * scales
    np.testing.assert_allclose(e.numpy()[0], deq[[1, 9, 3]], rtol=1e-5, atol=1e-6)
    assert (b - model.bag(j, off)).abs().max().item() < 0.05


def test_embeddings_under_default_qconfig_stay_float():
    model = Emb().eval()
    i, j, off = ember.tensor([[1, 2]]), ember.tensor([1, 2, 3]), ember.tensor([0, 1])
    prepared = prepare_fx(model, get_default_qconfig_mapping(), (i, j, off))
    prepared(i, j, off)
    q = convert_fx(prepared)
    assert type(q.emb) is nn.Embedding and type(q.bag) is nn.EmbeddingBag
    assert ember.equal(q(i, j, off)[0], model(i, j, off)[0])


class KeptFloat(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)
        self.ln = nn.LayerNorm(6)
        self.elu = nn.ELU()
        self.sm = nn.Softmax(-1)

    def forward(self, x):
        y = self.elu(self.ln(self.fc(x)))
        return ember.matmul(self.sm(y), y.transpose(0, 1))


def test_ops_without_kernels_get_observers_and_run_float():
    model = KeptFloat().eval()
    data = [(x,) for x in _data(5, 6)]
    prepared, q = _convert(model, get_default_qconfig_mapping(), data)
    observed = {
        n.args[0].target if n.args[0].op == "call_module" else getattr(n.args[0].target, "__name__", n.args[0].target)
        for n in prepared.graph.nodes
        if n.op == "call_module" and n.target.startswith("activation_post_process")
    }
    assert {"fc", "ln", "elu", "sm", "matmul", "transpose"} <= observed
    assert type(q.ln) is nn.LayerNorm and type(q.elu) is nn.ELU and type(q.sm) is nn.Softmax
    assert "self.ln(dequantize" in q.code and "ember.matmul(dequantize" in q.code
    # softmax's output quantized with the fixed (1/256, 0); the model output is the quantized matmul
    x = data[0][0]
    assert (q(x) - model(x)).abs().max().item() < 0.15
