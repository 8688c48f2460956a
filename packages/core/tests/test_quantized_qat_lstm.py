"""Quantization-aware training of nn.LSTM in eager mode (PyTorch's path): the fixed-parameter
observers and fake quantizers (FixedQParamsObserver, FixedQParamsFakeQuantize and their default_*
constructors) against float64 NumPy references, their straight-through gradients, state dicts and
errors; prepare / prepare_qat giving a training Sigmoid, Hardsigmoid, Softmax or Tanh the fixed
fake quantizer; and prepare_qat -> train -> convert of a QuantStub -> LSTM -> Linear -> DeQuantStub
model. tests/test_quantized_qat_lstm_torch_parity.py compares the same flow with PyTorch 2.13."""

import copy
import warnings

import numpy as np
import pytest

import ember
import ember.ao.nn.qat as nnqat
from ember import nn
from ember.ao import quantization as tq
from ember.ao.nn import quantizable as nnqa
from ember.ao.nn import quantized as nnq

# (constructor, scale, zero_point): sigmoid's range [0, 1) and tanh's [-1, 1) on quint8
FIXED = {
    "0to1": (tq.default_fixed_qparams_range_0to1_fake_quant, 1.0 / 256.0, 0),
    "neg1to1": (tq.default_fixed_qparams_range_neg1to1_fake_quant, 2.0 / 256.0, 128),
}


def reference(x, scale, zero_point, quant_min=0, quant_max=255):
    """Fake quantization in float64: q = round_half_even(x / scale) + zero_point, clamped, back to
    (q - zero_point) * scale; with the mask of the elements whose q was inside the range (where the
    gradient passes). The scales here are powers of two, so every step is exact."""
    x64 = np.asarray(x, dtype=np.float64)
    q = np.rint(x64 / scale) + zero_point
    out = (np.clip(q, quant_min, quant_max) - zero_point) * scale
    return out, (q >= quant_min) & (q <= quant_max)


def values(scale, zero_point, n=300, seed=0):
    """Half-step ties, both clamp bounds and beyond, and random values around the range."""
    rng = np.random.default_rng(seed)
    codes = np.arange(-3, 259) - zero_point
    ties = (codes + 0.5) * scale
    edges = np.array([(0 - zero_point) * scale, (255 - zero_point) * scale, -5.0, 5.0, 0.0, -0.0])
    rand = rng.uniform(-1.5, 1.5, n)
    return np.concatenate([ties, edges, rand]).astype(np.float32)


# ---- the observer -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make, scale, zero_point",
    [
        (tq.default_fixed_qparams_range_0to1_observer, 1.0 / 256.0, 0),
        (tq.default_fixed_qparams_range_neg1to1_observer, 2.0 / 256.0, 128),
    ],
)
def test_fixed_observer_defaults(make, scale, zero_point):
    obs = make()
    assert isinstance(obs, tq.FixedQParamsObserver) and isinstance(obs, tq.ObserverBase)
    assert (obs.dtype, obs.qscheme, obs.quant_min, obs.quant_max) == (
        ember.quint8,
        ember.per_tensor_affine,
        0,
        255,
    )
    s, zp = obs.calculate_qparams()
    assert s.dtype == ember.float32 and zp.dtype == ember.int32
    assert s.shape == (1,) and zp.shape == (1,)
    assert s.tolist() == [scale] and zp.tolist() == [zero_point]
    assert s is obs.scale and zp is obs.zero_point
    x = ember.randn(3, 4)
    assert obs(x) is x  # observes nothing
    assert list(obs.state_dict()) == ["scale", "zero_point"]  # no eps, no min/max
    assert repr(obs) == "FixedQParamsObserver()"


def test_aliases_are_the_same_constructors():
    assert tq.default_symmetric_fixed_qparams_observer is tq.default_fixed_qparams_range_neg1to1_observer
    assert tq.default_affine_fixed_qparams_observer is tq.default_fixed_qparams_range_0to1_observer
    assert tq.default_symmetric_fixed_qparams_fake_quant is tq.default_fixed_qparams_range_neg1to1_fake_quant
    assert tq.default_affine_fixed_qparams_fake_quant is tq.default_fixed_qparams_range_0to1_fake_quant


def test_fixed_observer_custom_parameters():
    obs = tq.FixedQParamsObserver(0.25, -3, dtype=ember.qint8, quant_min=-128, quant_max=127)
    assert obs.calculate_qparams()[0].tolist() == [0.25]
    assert obs.calculate_qparams()[1].tolist() == [-3]
    assert (obs.dtype, obs.quant_min, obs.quant_max) == (ember.qint8, -128, 127)


# ---- the fake quantizer: values ---------------------------------------------------------------
@pytest.mark.parametrize("name", list(FIXED))
def test_fixed_fake_quant_contiguous(name):
    make, scale, zero_point = FIXED[name]
    fq = make()
    x = values(scale, zero_point)
    out = fq(ember.tensor(x))
    expected, _ = reference(x, scale, zero_point)
    assert out.dtype == ember.float32
    np.testing.assert_array_equal(out.numpy().astype(np.float64), expected)


@pytest.mark.parametrize("name", list(FIXED))
def test_fixed_fake_quant_non_contiguous(name):
    make, scale, zero_point = FIXED[name]
    base = values(scale, zero_point, n=308).reshape(24, 24)
    view = ember.tensor(base).t()[:, ::2]
    assert not view.is_contiguous()
    expected, _ = reference(base.T[:, ::2], scale, zero_point)
    np.testing.assert_array_equal(make()(view).numpy().astype(np.float64), expected)


@pytest.mark.parametrize("name", list(FIXED))
@pytest.mark.parametrize("value", [0.3, -0.7, 2.0, (0.5 + 3) / 128])
def test_fixed_fake_quant_zero_dim(name, value):
    make, scale, zero_point = FIXED[name]
    out = make()(ember.tensor(value))
    assert out.shape == ()
    assert float(out) == float(reference(np.float32(value), scale, zero_point)[0])


@pytest.mark.parametrize("name", list(FIXED))
@pytest.mark.parametrize("shape", [(0,), (3, 0, 2)])
def test_fixed_fake_quant_zero_size(name, shape):
    fq = FIXED[name][0]()
    out = fq(ember.zeros(shape))
    assert out.shape == shape and out.dtype == ember.float32
    assert fq.scale.tolist() == [FIXED[name][1]]  # nothing to observe, nothing changed


@pytest.mark.parametrize("name", list(FIXED))
def test_fixed_fake_quant_float64_keeps_dtype(name):
    make, scale, zero_point = FIXED[name]
    x = values(scale, zero_point).astype(np.float64) + 1e-9  # off the float32 grid
    out = make()(ember.tensor(x))
    assert out.dtype == ember.float64
    np.testing.assert_array_equal(out.numpy(), reference(x, scale, zero_point)[0])


# ---- gradients ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(FIXED))
def test_fixed_fake_quant_straight_through_gradient(name):
    make, scale, zero_point = FIXED[name]
    x_np = values(scale, zero_point)
    x = ember.tensor(x_np, requires_grad=True)
    weights = np.random.default_rng(1).normal(size=x_np.shape).astype(np.float32)
    (make()(x) * ember.tensor(weights)).sum().backward()
    _, inside = reference(x_np, scale, zero_point)
    assert inside.any() and (~inside).any()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(inside, weights, np.float32(0)))


def test_fixed_fake_quant_gradient_of_a_view_and_zero_dim():
    fq = tq.default_fixed_qparams_range_0to1_fake_quant()
    base = ember.tensor([[0.2, 1.5], [-0.4, 0.9]], requires_grad=True)
    fq(base.t()).sum().backward()
    np.testing.assert_array_equal(base.grad.numpy(), [[1.0, 0.0], [0.0, 1.0]])
    scalar = ember.tensor(0.5, requires_grad=True)
    fq(scalar).backward()
    assert float(scalar.grad) == 1.0


# ---- the fake quantizer: state --------------------------------------------------------------
def test_fixed_fake_quant_shares_the_observer_buffers():
    fq = tq.default_fixed_qparams_range_neg1to1_fake_quant()
    assert isinstance(fq, tq.FakeQuantize) and isinstance(fq.activation_post_process, tq.FixedQParamsObserver)
    assert fq.scale is fq.activation_post_process.scale
    assert fq.zero_point is fq.activation_post_process.zero_point
    assert fq.calculate_qparams() == (fq.scale, fq.zero_point)
    assert (fq.quant_min, fq.quant_max, fq.dtype, fq.qscheme) == (
        0,
        255,
        ember.quint8,
        ember.per_tensor_affine,
    )
    assert not fq.is_per_channel and fq.ch_axis == -1
    assert fq._observer_ctr is tq.default_fixed_qparams_range_neg1to1_observer
    state = fq.state_dict()
    assert list(state) == [
        "fake_quant_enabled",
        "observer_enabled",
        "scale",
        "zero_point",
        "activation_post_process.scale",
        "activation_post_process.zero_point",
    ]
    assert state["fake_quant_enabled"].dtype == ember.uint8
    # loading sets the one tensor both names hold; a copy keeps them one tensor
    fq.load_state_dict(
        {
            "fake_quant_enabled": ember.tensor([1], dtype=ember.uint8),
            "observer_enabled": ember.tensor([1], dtype=ember.uint8),
            "scale": ember.tensor([0.25]),
            "zero_point": ember.tensor([3], dtype=ember.int32),
            "activation_post_process.scale": ember.tensor([0.25]),
            "activation_post_process.zero_point": ember.tensor([3], dtype=ember.int32),
        }
    )
    assert fq.activation_post_process.scale.tolist() == [0.25] and fq.zero_point.tolist() == [3]
    twin = copy.deepcopy(fq)
    assert twin.scale is twin.activation_post_process.scale and twin.scale is not fq.scale
    # the observer pass keeps the parameters (it copies them onto themselves)
    np.testing.assert_array_equal(fq(ember.tensor([0.3, 1.0])).numpy(), [0.25, 1.0])
    assert fq.scale.tolist() == [0.25] and fq.zero_point.tolist() == [3]


def test_fixed_fake_quant_switches_and_repr():
    fq = tq.default_fixed_qparams_range_0to1_fake_quant()
    x = ember.tensor([0.3, 1.7])
    fq.disable_fake_quant()
    assert fq(x).tolist() == x.tolist()
    fq.enable_fake_quant()
    fq.disable_observer()
    assert fq(x).tolist() == [77 / 256, 255 / 256]
    assert repr(fq) == (
        "FixedQParamsFakeQuantize(\n"
        "  fake_quant_enabled=tensor([1], dtype=ember.uint8), observer_enabled=tensor([0], dtype=ember.uint8), "
        "scale=tensor([0.0039]), zero_point=tensor([0], dtype=ember.int32), dtype=ember.quint8, quant_min=0, "
        "quant_max=255, qscheme=ember.per_tensor_affine\n"
        "  (activation_post_process): FixedQParamsObserver()\n"
        ")"
    )


# ---- errors (PyTorch's types and messages) -----------------------------------------------------
def test_errors():
    with pytest.raises(
        NotImplementedError, match="^FixedQParamsObserver doesn't support dynamic quantization$"
    ):
        tq.FixedQParamsObserver(1.0, 0, is_dynamic=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'reduce_range'"):
        tq.FixedQParamsObserver(1.0, 0, reduce_range=True)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'zero_point'"):
        tq.FixedQParamsObserver(scale=1.0)
    with pytest.raises(
        AssertionError, match="^FixedQParamsFakeQuantize's observer must be a FixedQParamsObserver$"
    ):
        tq.FixedQParamsFakeQuantize(tq.MinMaxObserver)
    per_channel = tq.FixedQParamsObserver.with_args(scale=0.1, zero_point=0, qscheme=ember.per_channel_affine)
    with pytest.raises(
        AssertionError,
        match=r"^Only per tensor quantization is supported FixedQParamsFakeQuantize module, got "
        r"qscheme:ember.per_channel_affine$",
    ):
        tq.FixedQParamsFakeQuantize(per_channel)
    with pytest.raises(ValueError, match="QConfig received observer instance"):
        tq.QConfig(
            activation=tq.default_fixed_qparams_range_0to1_fake_quant(), weight=tq.default_weight_fake_quant
        )
    # an integer input: NotImplementedError, as PyTorch's kernel raises
    with pytest.raises(NotImplementedError, match="floating point"):
        tq.default_fixed_qparams_range_0to1_fake_quant()(ember.tensor([1, 2]))


# ---- prepare / prepare_qat: the special activation post process --------------------------------
def _activations():
    return nn.Sequential(
        nn.Linear(3, 3),
        nn.Sigmoid(),
        nn.Tanh(),
        nn.Softmax(dim=1),
        nn.Hardsigmoid(),
        nn.ReLU(),
        nn.Hardswish(),
    )


def test_prepare_qat_gives_activations_fixed_qparams():
    model = _activations()
    model.qconfig = tq.get_default_qat_qconfig("x86")
    prepared = tq.prepare_qat(model)
    assert isinstance(prepared[0], nnqat.Linear)
    assert isinstance(prepared[0].activation_post_process, tq.FusedMovingAvgObsFakeQuantize)
    for idx, (scale, zero_point) in (
        (1, (1 / 256, 0)),
        (2, (2 / 256, 128)),
        (3, (1 / 256, 0)),
        (4, (1 / 256, 0)),
    ):
        post = prepared[idx].activation_post_process
        assert type(post) is tq.FixedQParamsFakeQuantize, idx
        assert (post.scale.tolist(), post.zero_point.tolist()) == ([scale], [zero_point])
    assert not hasattr(prepared[5], "activation_post_process")  # not in the propagation list
    assert isinstance(
        prepared[6].activation_post_process, tq.FusedMovingAvgObsFakeQuantize
    )  # Hardswish: mapped
    x = ember.randn(4, 3)
    codes = prepared[:2](x).detach().numpy() * 256
    np.testing.assert_array_equal(codes, np.rint(codes))  # sigmoid's output on its fixed grid
    prepared(x).sum().backward()
    assert prepared[0].weight.grad is not None


def test_prepare_follows_training_mode():
    model = _activations()
    model.qconfig = tq.default_qconfig
    prepared = tq.prepare(model)  # training: PyTorch's prepare gives the fixed fake quant too
    assert type(prepared[1].activation_post_process) is tq.FixedQParamsFakeQuantize
    evaluated = tq.prepare(model.eval())
    assert not any(hasattr(evaluated[i], "activation_post_process") for i in (1, 2, 3, 4))
    model.train()
    model[1].qconfig = None  # no qconfig, no fake quant
    model.qconfig = None
    model[2].qconfig = tq.default_qat_qconfig
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prepared = tq.prepare(model)
    assert not hasattr(prepared[1], "activation_post_process")
    assert type(prepared[2].activation_post_process) is tq.FixedQParamsFakeQuantize


def test_convert_removes_the_fixed_fake_quant():
    model = nn.Sequential(tq.QuantStub(), nn.Linear(3, 3), nn.Sigmoid(), nn.Tanh(), tq.DeQuantStub())
    model.qconfig = tq.get_default_qat_qconfig("fbgemm")
    prepared = tq.prepare_qat(model)
    prepared(ember.randn(8, 3))
    converted = tq.convert(prepared.eval())
    assert isinstance(converted[1], nnq.Linear)
    for idx in (2, 3):
        assert type(converted[idx]) in (nn.Sigmoid, nn.Tanh)
        assert not hasattr(converted[idx], "activation_post_process")
        assert not converted[idx]._forward_hooks
    assert sorted(converted.state_dict()) == sorted(
        [
            "0.scale",
            "0.zero_point",
            "1._packed_params._packed_params",
            "1._packed_params.dtype",
            "1.scale",
            "1.zero_point",
        ]
    )
    y = converted[:4](ember.randn(5, 3))
    assert y.dtype == ember.quint8 and (y.q_scale(), y.q_zero_point()) == (2 / 256, 128)


# ---- QAT of nn.LSTM ---------------------------------------------------------------------------
class Model(nn.Module):
    def __init__(self, **lstm_kwargs):
        super().__init__()
        self.quant = tq.QuantStub()
        self.lstm = nn.LSTM(4, 8, **lstm_kwargs)
        width = 16 if lstm_kwargs.get("bidirectional") else 8
        self.lin = nn.Linear(width, 3)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        y, (h, c) = self.lstm(self.quant(x))
        return self.dequant(self.lin(y))


def _cells(lstm):
    for layer in lstm.layers:
        yield layer.layer_fw.cell
        if layer.bidirectional:
            yield layer.layer_bw.cell


@pytest.mark.parametrize("backend", ["x86", "fbgemm"])
def test_prepare_qat_lstm_structure(backend):
    model = Model()
    model.qconfig = tq.get_default_qat_qconfig(backend)
    prepared = tq.prepare_qat(model)
    lstm = prepared.lstm
    assert isinstance(lstm, nnqa.LSTM) and lstm.training
    assert not hasattr(lstm, "activation_post_process")  # tuples out: no output observer
    (cell,) = _cells(lstm)
    for linear in (cell.igates, cell.hgates):
        assert isinstance(linear, nnqat.Linear)
        assert isinstance(linear.weight_fake_quant, tq.FusedMovingAvgObsFakeQuantize)
        assert linear.weight_fake_quant.qscheme == ember.per_channel_symmetric
        assert isinstance(linear.activation_post_process, tq.FusedMovingAvgObsFakeQuantize)
    for name in ("gates", "fgate_cx", "igate_cgate", "fgate_cx_igate_cgate", "ogate_cy"):
        post = getattr(cell, name).activation_post_process
        assert isinstance(post, tq.FusedMovingAvgObsFakeQuantize), name
        assert (post.quant_min, post.quant_max) == (0, 127)  # reduce_range for x86 / fbgemm
    for name, scale, zero_point in (
        ("input_gate", 1 / 256, 0),
        ("forget_gate", 1 / 256, 0),
        ("cell_gate", 2 / 256, 128),
        ("output_gate", 1 / 256, 0),
    ):
        post = getattr(cell, name).activation_post_process
        assert type(post) is tq.FixedQParamsFakeQuantize, name
        assert (post.scale.tolist(), post.zero_point.tolist()) == ([scale], [zero_point])
    # the weights are the float LSTM's
    np.testing.assert_array_equal(
        cell.igates.weight.detach().numpy(), model.lstm.weight_ih_l0.detach().numpy()
    )
    np.testing.assert_array_equal(cell.hgates.bias.detach().numpy(), model.lstm.bias_hh_l0.detach().numpy())
    # gate outputs are on their fixed grids
    x = ember.randn(2, 4)
    h = ember.zeros(2, 8)
    gates = cell.gates.add(cell.igates(x), cell.hgates(h)).chunk(4, 1)
    for module, gate, steps in ((cell.input_gate, gates[0], 256), (cell.cell_gate, gates[2], 128)):
        codes = module(gate).detach().numpy() * steps
        np.testing.assert_array_equal(codes, np.rint(codes))


def _train(prepared, x, target, steps=30):
    opt = ember.optim.Adam(prepared.parameters(), lr=0.02)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((prepared(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses


@pytest.mark.parametrize(
    "kwargs", [{}, {"num_layers": 2, "bidirectional": True, "batch_first": True}], ids=["single", "deep"]
)
def test_qat_lstm_trains_and_converts(kwargs):
    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    model = Model(**kwargs)
    model.qconfig = tq.get_default_qat_qconfig("x86")
    prepared = tq.prepare_qat(model)
    shape = (3, 6, 4) if kwargs.get("batch_first") else (6, 3, 4)
    x = ember.tensor(rng.normal(size=shape).astype(np.float32))
    target = ember.tensor(np.tanh(rng.normal(size=shape[:2] + (3,))).astype(np.float32) * 0.5)
    # one step: every weight gets a gradient through the fake quantizers
    ((prepared(x) - target) ** 2).mean().backward()
    for name, p in prepared.named_parameters():
        assert p.grad is not None and float(p.grad.abs().sum()) > 0, name
    prepared.zero_grad()
    losses = _train(prepared, x, target)
    assert losses[-1] < 0.7 * losses[0], losses
    prepared.eval()
    with ember.no_grad():
        fake = prepared(x).numpy()
    converted = tq.convert(prepared)
    assert isinstance(converted.lstm, nnq.LSTM) and converted.lstm._get_name() == "QuantizedLSTM"
    assert isinstance(converted.lin, nnq.Linear)
    for cell in _cells(converted.lstm):
        assert isinstance(cell.igates, nnq.Linear) and isinstance(cell.gates, nnq.QFunctional)
        for name in ("input_gate", "forget_gate", "cell_gate", "output_gate"):
            assert not hasattr(getattr(cell, name), "activation_post_process"), name
    assert not any("activation_post_process" in k or "fake_quant" in k for k in converted.state_dict())
    out = converted(x).numpy()
    assert out.shape == fake.shape and np.isfinite(out).all()
    # the quantized model computes what training simulated, roughly: PyTorch's QAT leaves tanh(c)
    # and the float hidden state unquantized, so its outputs too differ from the fake-quantized
    # forward by up to ~130 output steps here (test_quantized_qat_lstm_torch_parity.py: Ember's
    # converted integers equal PyTorch's)
    assert np.corrcoef(out.ravel(), fake.ravel())[0, 1] > 0.8
    assert ((out - target.numpy()) ** 2).mean() < losses[0]


@pytest.mark.parametrize("precomputed", [False, True])
def test_converting_a_qat_linear_observes_its_weight_once_more(precomputed):
    linear = nn.Linear(3, 2)
    linear.qconfig = tq.get_default_qat_qconfig("x86")
    qat_linear = nnqat.Linear.from_float(linear)
    qat_linear.activation_post_process = tq.default_fake_quant()
    qat_linear(ember.randn(4, 3))
    post = qat_linear.weight_fake_quant.activation_post_process
    before = post.max_val.numpy().copy()
    with ember.no_grad():
        qat_linear.weight.mul_(3.0)
    converted = nnq.Linear.from_float(qat_linear, use_precomputed_fake_quant=precomputed)
    after = post.max_val.numpy()
    if precomputed:
        np.testing.assert_array_equal(after, before)
    else:  # one more moving-average step towards the new weight's range (PyTorch's from_float)
        expected = before + 0.01 * (qat_linear.weight.detach().numpy().max(1) - before)
        np.testing.assert_allclose(after, expected, rtol=1e-6)
    scales = converted.weight().q_per_channel_scales().numpy()
    np.testing.assert_allclose(scales, post.calculate_qparams()[0].numpy(), rtol=1e-6)
