"""Eager-mode quantization (ember.ao.quantization): quantize_dynamic, the static flow (fuse_modules,
prepare, calibrate, convert), QAT's convert, the quantized modules' state dicts and checkpoints.
The converted models are checked against their float models and against the modules' own
kernels; tests/test_quantized_torch_parity.py holds PyTorch's bits."""

import io
import warnings

import numpy as np
import pytest

import ember
from ember import nn
from ember.ao import quantization as tq
from ember.ao.nn import intrinsic as nni
from ember.ao.nn import quantized as nnq
from ember.ao.nn.intrinsic import quantized as nniq


def _fill(model, seed=0, scale=0.3):
    rng = np.random.default_rng(seed)
    with ember.no_grad():
        for _, p in sorted(model.state_dict().items()):
            if p.dtype == ember.float32:
                p.copy_(ember.tensor(rng.normal(size=tuple(p.shape)).astype(np.float32) * scale))
    return model


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.relu2 = nn.ReLU()
        self.skip = nnq.FloatFunctional()
        self.pool = nn.MaxPool2d(2)
        self.avg = nn.AdaptiveAvgPool2d((2, 2))
        self.fc1 = nn.Linear(32, 16)
        self.relu3 = nn.ReLU()
        self.fc2 = nn.Linear(16, 5)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        y = self.relu1(self.bn1(self.conv1(x)))
        y = self.skip.add(y, self.relu2(self.conv2(y)))
        y = ember.flatten(self.avg(self.pool(y)), 1)
        return self.dequant(self.fc2(self.relu3(self.fc1(y))))


def _data(seed, n=3):
    rng = np.random.default_rng(seed)
    return [ember.tensor(rng.normal(size=(4, 3, 8, 8)).astype(np.float32)) for _ in range(n)]


def _static(qconfig=None):
    model = _fill(Net()).eval()
    with ember.no_grad():
        model.bn1.running_var.copy_(ember.linspace(0.5, 2.0, 8))
    fused = tq.fuse_modules(model, [["conv1", "bn1", "relu1"], ["conv2", "relu2"], ["fc1", "relu3"]])
    fused.qconfig = qconfig or tq.default_per_channel_qconfig
    prepared = tq.prepare(fused)
    for batch in _data(1):
        prepared(batch)
    return model, fused, prepared, tq.convert(prepared)


def test_fuse_modules_folds_batch_norm_and_relu():
    model = _fill(Net()).eval()
    with ember.no_grad():
        model.bn1.running_mean.copy_(ember.linspace(-0.2, 0.3, 8))
    fused = tq.fuse_modules(model, [["conv1", "bn1", "relu1"], ["fc1", "relu3"]])
    assert type(fused.conv1) is nni.ConvReLU2d and type(fused.bn1) is nn.Identity and type(fused.relu1) is nn.Identity
    assert type(fused.fc1) is nni.LinearReLU and type(model.conv1) is nn.Conv2d  # not in place
    x = _data(2, 1)[0]
    np.testing.assert_allclose(fused(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        tq.fuse_modules(Net().train(), [["conv1", "bn1"]])
    with pytest.raises(NotImplementedError, match="Cannot fuse modules"):
        tq.fuse_modules(model, [["relu1", "conv1"]])


def test_static_quantization_flow():
    model, fused, prepared, quantized = _static()
    assert isinstance(prepared.conv1.activation_post_process, tq.MinMaxObserver)
    assert not hasattr(prepared.dequant, "activation_post_process")
    assert type(quantized.quant) is nnq.Quantize and type(quantized.dequant) is nnq.DeQuantize
    assert type(quantized.conv1) is nniq.ConvReLU2d and type(quantized.conv2) is nniq.ConvReLU2d
    assert type(quantized.fc1) is nniq.LinearReLU and type(quantized.fc2) is nnq.Linear
    assert type(quantized.skip) is nnq.QFunctional and type(quantized.pool) is nn.MaxPool2d
    assert not hasattr(quantized.conv1, "qconfig") and not quantized.conv1._forward_hooks
    assert quantized.conv1.weight().qscheme() is ember.per_channel_affine
    x = _data(3, 1)[0]
    out = quantized(x)
    assert out.dtype == ember.float32 and out.shape == (4, 5)
    ref = model(x).detach().numpy()
    assert np.abs(out.numpy() - ref).max() < 0.1 * np.abs(ref).max()
    # each module's output is its kernel's, with the scale and zero point its observer chose
    scale, zero_point = prepared.fc2.activation_post_process.calculate_qparams()
    assert quantized.fc2.scale == pytest.approx(float(scale)) and quantized.fc2.zero_point == int(zero_point)
    seen = {}
    quantized.fc1.register_forward_hook(lambda m, i, o: seen.update(fc1=o))
    quantized(x)
    direct = ember._C._quantized_linear(seen["fc1"], quantized.fc2.weight(), quantized.fc2.bias(), quantized.fc2.scale,
                                        quantized.fc2.zero_point)
    np.testing.assert_array_equal(quantized.fc2(seen["fc1"]).int_repr().numpy(), direct.int_repr().numpy())


def test_quantize_runs_the_three_steps():
    model = _fill(nn.Sequential(tq.QuantStub(), nn.Linear(6, 4), nn.ReLU(), tq.DeQuantStub())).eval()
    model.qconfig = tq.default_qconfig
    calls = []

    def calibrate(m, data):
        calls.append(1)
        for batch in data:
            m(batch)

    q = tq.quantize(model, calibrate, [[ember.randn(5, 6) for _ in range(2)]])
    assert calls == [1] and type(q[1]) is nnq.Linear and type(model[1]) is nn.Linear
    assert q[1].weight().qscheme() is ember.per_tensor_affine  # per-tensor symmetric weights
    assert q(ember.randn(3, 6)).shape == (3, 4)


def test_quantized_state_dict_round_trip():
    _, _, _, quantized = _static()
    state = quantized.state_dict()
    assert {"fc2._packed_params._packed_params", "fc2._packed_params.dtype", "fc2.scale", "fc2.zero_point",
            "conv1.weight", "conv1.bias", "conv1.scale", "quant.scale", "skip.scale"} <= set(state)
    weight, bias = state["fc2._packed_params._packed_params"]
    assert weight.dtype == ember.qint8 and bias.dtype == ember.float32
    buffer = io.BytesIO()
    ember.save(state, buffer)
    buffer.seek(0)
    loaded = ember.load(buffer)  # weights_only: quantized tensors, tuples and dtypes are allowed
    # a model calibrated differently takes the saved parameters and computes the same
    _, _, _, other = _static(tq.QConfig(activation=tq.MinMaxObserver.with_args(reduce_range=True),
                                        weight=tq.default_weight_observer))
    other.load_state_dict(loaded)
    x = _data(5, 1)[0]
    np.testing.assert_array_equal(other(x).numpy(), quantized(x).numpy())


def test_quantize_dynamic():
    model = _fill(nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3)), scale=1.0)
    x = ember.tensor(np.random.default_rng(6).normal(size=(5, 8)).astype(np.float32))
    q = tq.quantize_dynamic(model)
    assert type(q[0]) is nnq.dynamic.Linear and type(model[0]) is nn.Linear
    assert repr(q[0]) == ("DynamicQuantizedLinear(in_features=8, out_features=16, dtype=ember.qint8, "
                          "qscheme=ember.per_tensor_affine)")
    ref = model(x).detach().numpy()
    assert np.abs(q(x).numpy() - ref).max() < 0.05 * np.abs(ref).max()
    # each layer is its kernel on the quantized weight
    np.testing.assert_array_equal(q[0](x).numpy(), ember._C._quantized_linear_dynamic(x, q[0].weight(), q[0].bias()).numpy())
    by_name = tq.quantize_dynamic(model, {"2": tq.per_channel_dynamic_qconfig})
    assert type(by_name[0]) is nn.Linear and by_name[2].weight().qscheme() is ember.per_channel_affine
    half = tq.quantize_dynamic(model, {nn.Linear}, dtype=ember.float16)
    assert half[0].weight().dtype == ember.float16
    np.testing.assert_allclose(half(x).detach().numpy(), ref, rtol=1e-2, atol=1e-2)
    with pytest.raises(ValueError, match="Don't know how to quantize"):
        tq.quantize_dynamic(model, dtype=ember.int32)


def test_multihead_attentions_out_proj_stays_float():
    mha = nn.MultiheadAttention(8, 2)
    q = tq.quantize_dynamic(nn.Sequential(mha, ))
    assert type(q[0].out_proj).__name__ == "NonDynamicallyQuantizableLinear"


def test_qat_converts_to_quantized_modules():
    model = _fill(nn.Sequential(tq.QuantStub(), nn.Linear(6, 4), tq.DeQuantStub()))
    model.qconfig = tq.default_qat_qconfig
    qat = tq.prepare_qat(model.train())
    assert type(qat[1]).__name__ == "Linear" and hasattr(qat[1], "weight_fake_quant")
    optimizer = ember.optim.SGD(qat.parameters(), lr=0.01)
    for _ in range(3):
        optimizer.zero_grad()
        qat(ember.randn(8, 6)).pow(2).sum().backward()
        optimizer.step()
    quantized = tq.convert(qat.eval())
    assert type(quantized[1]) is nnq.Linear and type(quantized[0]) is nnq.Quantize
    # The QAT model's observers would go on widening their ranges to the new input's: frozen, the
    # two models quantize alike. Outputs the fake quantizer clips to its reduced (7-bit) range are
    # left out: the quantized Linear's quint8 result keeps all 8 bits there, as in PyTorch.
    for module in qat.modules():
        if isinstance(module, tq.FakeQuantizeBase):
            module.disable_observer()
    x = ember.randn(3, 6)
    want = qat(x).detach().numpy()
    fake = qat[1].activation_post_process
    scale, zero_point = (float(v.reshape(-1)[0]) for v in fake.calculate_qparams())
    inside = (want > (fake.quant_min - zero_point) * scale) & (want < (fake.quant_max - zero_point) * scale)
    np.testing.assert_allclose(quantized(x).numpy()[inside], want[inside], atol=3 * quantized[1].scale)


def test_functional_modules():
    f = nnq.QFunctional()
    f.scale, f.zero_point = 0.05, 128
    a = ember.quantize_per_tensor(ember.randn(3, 4), 0.04, 120, ember.quint8)
    assert f.add(a, a).q_scale() == 0.05 and f.cat([a, a], 0).shape == (6, 4)
    assert f.add_relu(a, a).dequantize().min() >= 0 and f.mul(a, a).q_zero_point() == 128
    with pytest.raises(RuntimeError, match="not intended to use the 'forward'"):
        f(a)
    plain = nnq.FloatFunctional()
    assert ember.equal(plain.add(ember.ones(2), ember.ones(2)), ember.full((2,), 2.0))


def test_scalar_forms_move_the_parameters_not_the_integers():
    # PyTorch's rules (tests/test_quantized_torch_parity.py compares the bits): add shifts the zero
    # point by round(c / s) while it stays in range; past the range the zero point is pinned and the
    # scale widened; mul scales the scale, mirroring the integers for a negative c.
    f = nnq.QFunctional()
    ints = np.array([0, 3, 120, 200, 255], np.uint8)
    a = ember._make_per_tensor_quantized_tensor(ember.from_numpy(ints), 0.05, 128)
    r = f.add_scalar(a, 0.37)  # c_q = round(7.4) = 7
    assert (r.q_scale(), r.q_zero_point()) == (0.05, 121) and np.array_equal(r.int_repr().numpy(), ints)
    np.testing.assert_allclose(r.dequantize().numpy(), a.dequantize().numpy() + 0.35, atol=1e-6)
    r = f.add_scalar(a, 12.0)  # z - c_q = 128 - 240 = -112 < 0: zero point 0, scale (255 + 112) / 255 * s
    assert r.q_zero_point() == 0 and r.q_scale() == pytest.approx(367 / 255 * 0.05)
    want = np.clip(np.rint((ints.astype(np.int64) + 112) * np.float32(255 / 367)), 0, 255)
    np.testing.assert_array_equal(r.int_repr().numpy(), want)
    relu = ember.ao.nn.quantized.modules._add_scalar(a, -2.0, relu=True)
    assert relu.dequantize().min() >= 0
    m = f.mul_scalar(a, -0.5)
    assert (m.q_scale(), m.q_zero_point()) == (0.025, 127)
    np.testing.assert_array_equal(m.int_repr().numpy(), 255 - ints)
    np.testing.assert_allclose(m.dequantize().numpy(), a.dequantize().numpy() * -0.5, atol=1e-6)
    zero = f.mul_scalar(a, 0)
    assert (zero.q_scale(), zero.q_zero_point()) == (1.0, 0) and not zero.int_repr().numpy().any()
    with pytest.raises(RuntimeError, match="expected a tensor quantized per tensor"):
        f.add_scalar(ember.ones(3), 1.0)
    per_channel = ember.quantize_per_channel(ember.ones(2, 3), ember.ones(2), ember.zeros(2, dtype=ember.int64), 0,
                                             ember.quint8)
    with pytest.raises(RuntimeError, match="expected a tensor quantized per tensor"):
        f.mul_scalar(per_channel, 2.0)


def test_quantized_batch_norm_function_and_module():
    rng = np.random.default_rng(3)
    x = ember.quantize_per_tensor(ember.from_numpy(rng.normal(size=(2, 3, 4, 5)).astype(np.float32)), 0.05, 120,
                                  ember.quint8)
    w, b, m = (ember.from_numpy(rng.normal(size=3).astype(np.float32)) for _ in range(3))
    v = ember.from_numpy(rng.uniform(0.5, 2, 3).astype(np.float32))
    y = ember.quantized_batch_norm(x, w, b, m, v, 1e-5, 0.07, 101)
    assert (y.dtype, y.q_scale(), y.q_zero_point()) == (ember.quint8, 0.07, 101)
    # float64 reference: the same integers but where rounding sits within float32 error of a half
    c = (slice(None), None, None)
    ref = (x.dequantize().numpy().astype(np.float64) - m.numpy()[c]) / np.sqrt(v.numpy()[c] + 1e-5) \
        * w.numpy()[c] + b.numpy()[c]
    want = np.clip(np.rint(ref / 0.07) + 101, 0, 255)
    assert np.abs(y.int_repr().numpy() - want).max() <= 1 and (y.int_repr().numpy() == want).mean() > 0.99
    with pytest.raises(RuntimeError, match="expects a per-tensor quantized input"):
        ember.quantized_batch_norm(x.dequantize(), w, b, m, v, 1e-5, 0.07, 101)
    with pytest.raises(RuntimeError, match="Weight must be provided"):
        ember.quantized_batch_norm(x, None, b, m, v, 1e-5, 0.07, 101)
    with pytest.raises(RuntimeError, match="mean must have 3 elements"):
        ember.quantized_batch_norm(x, w, b, m[:2], v, 1e-5, 0.07, 101)
    with pytest.raises(RuntimeError, match=r"expects an \(N, C, ...\) input"):
        ember.quantized_batch_norm(x.reshape(-1), w, b, m, v, 1e-5, 0.07, 101)

    model = nn.Sequential(tq.QuantStub(), nn.BatchNorm2d(3), tq.DeQuantStub()).eval()
    with ember.no_grad():
        for name, value in (("weight", w), ("bias", b), ("running_mean", m), ("running_var", v)):
            getattr(model[1], name).copy_(value)
    model.qconfig = tq.default_qconfig
    prepared = tq.prepare(model)
    data = x.dequantize()
    prepared(data)
    converted = tq.convert(prepared)
    assert type(converted[1]) is nnq.BatchNorm2d
    assert {"scale", "zero_point", "running_mean", "weight"} <= set(converted[1].state_dict())
    np.testing.assert_allclose(converted(data).numpy(), model(data).detach().numpy(),
                               atol=2 * float(converted[1].scale) + 0.05)
    with pytest.raises(ValueError, match=r"Input shape must be `\(N, C, H, W\)`!"):
        converted[1](x.reshape(2, 3, 20, 1, 1))


def test_bad_use_raises_clear_errors():
    layer = nnq.Linear(4, 2)
    with pytest.raises(RuntimeError, match="expected a quint8 input"):
        layer(ember.randn(3, 4))
    with pytest.raises(RuntimeError, match="2-d qint8 weight"):
        layer.set_weight_bias(ember.randn(2, 4), None)
    conv = nnq.Conv2d(3, 4, 3)
    with pytest.raises(ValueError, match="Input shape must be"):
        conv(ember.quantize_per_tensor(ember.randn(3, 5, 5), 0.1, 0, ember.quint8))
    with pytest.raises(NotImplementedError, match="pads with zeros only"):
        nnq.Conv2d(3, 4, 3, padding_mode="reflect")
    unprepared = _fill(nn.Sequential(tq.QuantStub(), nn.Linear(4, 2)))
    unprepared.qconfig = tq.default_qconfig
    with pytest.raises(AssertionError, match="no activation_post_process"):
        tq.convert(tq.propagate_qconfig_(unprepared) or unprepared)
    with pytest.raises(NotImplementedError, match="reference quantized modules"):
        tq.convert(unprepared, is_reference=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tq.prepare(nn.Sequential(nn.Linear(2, 2)))
    assert any("None of the submodule got qconfig" in str(w.message) for w in caught)


def test_older_names_and_small_helpers():
    import ember.nn.quantized.dynamic as legacy_dynamic
    import ember.quantization

    assert ember.nn.quantized.Linear is nnq.Linear and legacy_dynamic.Linear is nnq.dynamic.Linear
    assert ember.nn.intrinsic.ConvReLU2d is nni.ConvReLU2d and ember.nn.qat.Linear is ember.ao.nn.qat.Linear
    assert ember.quantization.quantize_dynamic is tq.quantize_dynamic
    q = ember.quantize_per_tensor(ember.randn(1, 2, 4, 4), 0.1, 3, ember.quint8)
    np.testing.assert_array_equal(ember.quantized_max_pool2d(q, 2).int_repr().numpy(),
                                  nn.functional.max_pool2d(q, 2).int_repr().numpy())
    with pytest.raises(RuntimeError, match="expects a quantized input"):
        ember.quantized_max_pool2d(q.dequantize(), 2)
    e = ember.empty_quantized([2, 3], q)
    assert e.shape == (2, 3) and e.q_scale() == 0.1 and e.q_zero_point() == 3 and e.dtype == ember.quint8


def test_shape_prop_records_quantization_parameters():
    from ember.fx import symbolic_trace
    from ember.fx.passes.shape_prop import ShapeProp

    class M(nn.Module):
        def forward(self, x):
            return ember.quantize_per_tensor(x, 0.1, 3, ember.quint8).relu()

    traced = symbolic_trace(M())
    ShapeProp(traced).propagate(ember.randn(2, 3))
    meta = [n.meta["tensor_meta"] for n in traced.graph.nodes if n.op == "call_method"][0]
    assert meta.is_quantized and meta.qparams == {"qscheme": ember.per_tensor_affine, "scale": 0.1, "zero_point": 3}


def test_histogram_observer():
    rng = np.random.default_rng(7)
    observer = tq.HistogramObserver(bins=256)
    batches = [rng.normal(size=2000).astype(np.float32) * (k + 1) for k in range(3)]
    for b in batches:
        assert observer(ember.tensor(b)) is not None
    seen = np.concatenate(batches)
    assert float(observer.min_val) == seen.min() and float(observer.max_val) == seen.max()
    hist = observer.histogram.numpy()
    assert hist.sum() == seen.size and hist.shape == (256,)
    # the first batch was spread onto the wider range: the mass near 0 stays near 0
    centers = np.linspace(seen.min(), seen.max(), 257)[:-1] + (seen.max() - seen.min()) / 512
    assert abs((hist * centers).sum() / hist.sum() - seen.mean()) < 0.1
    # the search keeps a range inside the observed one, here narrower than min/max's (PyTorch's
    # numbers for the same data: tests/test_quantized_torch_parity.py)
    data = ember.tensor(rng.normal(size=20000).astype(np.float32))
    histogram, min_max = tq.HistogramObserver(), tq.MinMaxObserver()
    histogram(data)
    min_max(data)
    scale, zero_point = histogram.calculate_qparams()
    assert 0 < float(scale) < float(min_max.calculate_qparams()[0])
    assert -float(scale) * int(zero_point) >= float(data.min()) - float(scale)
    with pytest.warns(UserWarning, match="torch.inf detected"):
        tq.HistogramObserver()(ember.tensor([1.0, float("inf")]))
    with pytest.raises(NotImplementedError, match="only support torch.per_tensor_symmetric"):
        tq.HistogramObserver(qscheme=ember.per_channel_affine)
    with pytest.warns(UserWarning, match="must run observer"):
        assert float(tq.HistogramObserver().calculate_qparams()[0]) == 1.0


def test_default_qconfigs_by_backend():
    x86 = tq.get_default_qconfig("x86")
    activation = x86.activation()
    assert isinstance(activation, tq.HistogramObserver) and activation.reduce_range
    assert isinstance(x86.weight(), tq.PerChannelMinMaxObserver)
    assert not tq.get_default_qconfig("qnnpack").activation().reduce_range
    assert isinstance(tq.get_default_qconfig("qnnpack").weight(), tq.MinMaxObserver)
    qat = tq.get_default_qat_qconfig("x86")
    assert isinstance(qat.activation(), tq.FusedMovingAvgObsFakeQuantize)
    assert isinstance(tq.get_default_qat_qconfig("x86", version=0).activation(), tq.FakeQuantize)
    with pytest.raises(AssertionError, match="not supported"):
        tq.get_default_qconfig("tpu")
    # the x86 default through the whole static flow
    _, _, _, quantized = _static(tq.get_default_qconfig("x86"))
    assert quantized(_data(9, 1)[0]).shape == (4, 5)
