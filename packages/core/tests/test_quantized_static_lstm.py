"""Static (eager-mode) quantization of nn.LSTM, as PyTorch 2.x does it: the quantized sigmoid, tanh,
stack and flip it needs (against a float64 NumPy reference of dequantize -> op -> quantize), the
quantized LSTM (ember.ao.nn.quantized.LSTM) that convert makes of an observed quantizable one, and
prepare/convert's default custom-module config. tests/test_quantized_static_lstm_torch_parity.py
compares the integers with PyTorch's."""

import copy
import io
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.ao.quantization as tq
import ember.nn as nn
from ember.ao.nn import quantizable as nnqa
from ember.ao.nn import quantized as nnq

RANGES = {"quint8": (0, 255, np.uint8), "qint8": (-128, 127, np.int8)}
# PyTorch's fixed output parameters: (scale, zero point) per function and dtype
FIXED = {("sigmoid", "quint8"): (1 / 256, 0), ("sigmoid", "qint8"): (1 / 256, -128),
         ("tanh", "quint8"): (1 / 128, 128), ("tanh", "qint8"): (1 / 128, 0)}
FUNCS = {"sigmoid": lambda v: 1 / (1 + np.exp(-v)), "tanh": np.tanh}


def _quantized(codes, scale, zero_point):
    return ember._make_per_tensor_quantized_tensor(ember.tensor(codes), scale, zero_point)


def _reference(codes, scale, zero_point, fn, dname):
    """float64 dequantize (the scale read as float32) -> fn -> quantize with the fixed parameters."""
    lo, hi, _ = RANGES[dname]
    out_scale, out_zp = FIXED[fn, dname]
    x = (codes.astype(np.float64) - zero_point) * np.float32(scale)
    return np.clip(np.rint(FUNCS[fn](x) / out_scale) + out_zp, lo, hi).astype(np.int64)


def _check_against_reference(y, codes, scale, zero_point, fn, dname):
    np.testing.assert_array_equal(y.int_repr().numpy().astype(np.int64),
                                  _reference(codes, scale, zero_point, fn, dname))


@pytest.mark.parametrize("dname", ["quint8", "qint8"])
@pytest.mark.parametrize("fn", ["sigmoid", "tanh"])
def test_fixed_qparams_activation_every_code(fn, dname):
    lo, hi, np_dtype = RANGES[dname]
    codes = np.arange(lo, hi + 1).astype(np_dtype)
    rng = np.random.default_rng(1)
    scales = np.concatenate([rng.uniform(1e-3, 0.3, 40), rng.uniform(0.3, 5.0, 20), [2.0 ** -k for k in range(9)]])
    for scale in scales:
        zero_point = int(rng.integers(lo, hi + 1))
        x = _quantized(codes, float(scale), zero_point)
        y = getattr(ember, fn)(x)
        assert y.dtype == x.dtype and (y.q_scale(), y.q_zero_point()) == FIXED[fn, dname]
        _check_against_reference(y, codes, scale, zero_point, fn, dname)
        # a prefix view maps to the same integers
        np.testing.assert_array_equal(getattr(ember, fn)(x[:37]).int_repr().numpy(), y.int_repr().numpy()[:37])


@pytest.mark.parametrize("dname", ["quint8", "qint8"])
def test_fixed_qparams_activation_entry_points_and_layouts(dname):
    lo, hi, np_dtype = RANGES[dname]
    rng = np.random.default_rng(2)
    codes = rng.integers(lo, hi + 1, (6, 9, 5)).astype(np_dtype)
    x = _quantized(codes, 0.07, lo + 100)
    for fn, calls in (("sigmoid", (ember.sigmoid, lambda t: t.sigmoid(), nn.Sigmoid(), nn.functional.sigmoid)),
                      ("tanh", (ember.tanh, lambda t: t.tanh(), nn.Tanh(), nn.functional.tanh))):
        want = getattr(ember, fn)(x).int_repr().numpy()
        _check_against_reference(getattr(ember, fn)(x), codes, 0.07, lo + 100, fn, dname)
        for call in calls:
            y = call(x)
            assert (y.q_scale(), y.q_zero_point()) == FIXED[fn, dname]
            np.testing.assert_array_equal(y.int_repr().numpy(), want)
        # non-contiguous views: a transpose and a strided slice
        for view, np_view in ((x.transpose(0, 2), codes.transpose(2, 1, 0)), (x[:, ::2, 1:4], codes[:, ::2, 1:4])):
            assert not view.is_contiguous()
            y = getattr(ember, fn)(view)
            assert y.shape == view.shape
            _check_against_reference(y, np_view, 0.07, lo + 100, fn, dname)
        # zero-size and 0-dim
        empty = getattr(ember, fn)(x[:0])
        assert empty.shape == (0, 9, 5) and empty.is_quantized and empty.q_scale() == FIXED[fn, dname][0]
        scalar = getattr(ember, fn)(x[2, 3, 4])
        assert scalar.shape == () and scalar.dtype == x.dtype
        _check_against_reference(scalar, codes[2, 3, 4], 0.07, lo + 100, fn, dname)


def test_fixed_qparams_activation_refusals():
    q = ember.quantize_per_tensor(ember.randn(3, 4), 0.05, 3, ember.quint8)
    per_channel = ember.quantize_per_channel(ember.randn(2, 3), ember.tensor([0.1, 0.2]), ember.tensor([0, 1]), 0,
                                             ember.quint8)
    q32 = ember.quantize_per_tensor(ember.randn(4), 0.05, 0, ember.qint32)
    for fn in ("sigmoid", "tanh"):
        with pytest.raises(NotImplementedError, match=rf"\[{fn}\] expects a per-tensor quantized tensor, but got "
                                                      "one quantized per channel"):
            getattr(ember, fn)(per_channel)
        with pytest.raises(NotImplementedError, match=rf"\[{fn}\] expected a quint8 or qint8 tensor, but got "
                                                      r"ember\.qint32"):
            getattr(ember, fn)(q32)
        with pytest.raises(NotImplementedError, match=rf"\[{fn}\] a quantized {fn} writes a new tensor"):
            getattr(q, fn + "_")()
        with pytest.raises(NotImplementedError, match=rf"\[{fn}\] a quantized {fn} writes a new tensor"):
            getattr(ember, fn)(q, out=ember.quantize_per_tensor(ember.randn(3, 4), 0.05, 3, ember.quint8))


def _requantize(t, scale, zero_point, lo, hi):
    values = (t.int_repr().numpy().astype(np.float64) - t.q_zero_point()) * t.q_scale()
    return np.clip(np.rint(values.astype(np.float32) / np.float32(scale)) + zero_point, lo, hi).astype(np.int64)


def test_quantized_stack_values():
    rng = np.random.default_rng(3)
    a = _quantized(rng.integers(0, 256, (3, 4)).astype(np.uint8), 0.05, 70)
    b = _quantized(rng.integers(0, 256, (3, 4)).astype(np.uint8), 0.11, 130)
    ai, bi = a.int_repr().numpy().astype(np.int64), b.int_repr().numpy().astype(np.int64)
    for dim in (0, 1, 2, -1, -3):
        same = ember.stack([a, a], dim)
        assert (same.q_scale(), same.q_zero_point(), same.dtype) == (0.05, 70, ember.quint8)
        np.testing.assert_array_equal(same.int_repr().numpy(), np.stack([ai, ai], dim))
        # other parameters: requantized to the first tensor's, as PyTorch's (a cat of the unsqueezed)
        mixed = ember.stack([a, b, a], dim)
        assert (mixed.q_scale(), mixed.q_zero_point()) == (0.05, 70) and mixed.is_contiguous()
        np.testing.assert_array_equal(mixed.int_repr().numpy(),
                                      np.stack([ai, _requantize(b, 0.05, 70, 0, 255), ai], dim))
    # non-contiguous, zero-size, 0-dim and a single tensor
    np.testing.assert_array_equal(ember.stack([a.t(), b.t()], 0).int_repr().numpy(),
                                  np.stack([ai.T, _requantize(b, 0.05, 70, 0, 255).T]))
    assert ember.stack([a[:0], a[:0]], 1).shape == (0, 2, 4)
    zero_dim = ember.stack([a[0, 0], a[1, 1]])
    np.testing.assert_array_equal(zero_dim.int_repr().numpy(), [ai[0, 0], ai[1, 1]])
    np.testing.assert_array_equal(ember.stack([b]).int_repr().numpy(), bi[None])
    qi8 = _quantized(rng.integers(-128, 128, (5,)).astype(np.int8), 0.2, -3)
    np.testing.assert_array_equal(ember.stack([qi8, qi8], 0).int_repr().numpy(),
                                  np.stack([qi8.int_repr().numpy()] * 2))


def test_quantized_stack_errors():
    a = ember.quantize_per_tensor(ember.randn(3, 4), 0.05, 70, ember.quint8)
    with pytest.raises(RuntimeError, match=r"\[stack\] expected quantized tensors of one dtype, but got quint8 and "
                                           "qint8"):
        ember.stack([a, ember.quantize_per_tensor(ember.randn(3, 4), 0.05, 0, ember.qint8)])
    with pytest.raises(RuntimeError, match=r"\[stack\] stack expects each tensor to be equal size, but got sizes "
                                           "that differ at entry 1"):
        ember.stack([a, a[:1]])
    with pytest.raises(RuntimeError, match="stack expects a non-empty TensorList"):
        ember.stack([])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.stack([a, a], 3)
    with pytest.raises(NotImplementedError, match=r"\[stack\] expected a quantized tensor .* but got float32"):
        ember.stack([a, ember.randn(3, 4)])
    per_channel = ember.quantize_per_channel(ember.randn(3, 4), ember.tensor([0.1, 0.2, 0.3]),
                                             ember.tensor([0, 1, 2]), 0, ember.quint8)
    with pytest.raises(NotImplementedError, match=r"\[stack\] expects a per-tensor quantized tensor"):
        ember.stack([a, per_channel])


def test_quantized_flip():
    a = ember.quantize_per_tensor(ember.randn(3, 4, 2), 0.05, 70, ember.quint8)
    for dims in ([0], [1, 2], [-1]):
        y = a.flip(dims)
        assert (y.q_scale(), y.q_zero_point(), y.dtype) == (0.05, 70, ember.quint8)
        np.testing.assert_array_equal(y.int_repr().numpy(), np.flip(a.int_repr().numpy(), dims))
    per_channel = ember.quantize_per_channel(ember.randn(2, 3), ember.tensor([0.1, 0.2]), ember.tensor([0, 1]), 0,
                                             ember.quint8)
    with pytest.raises(NotImplementedError, match=r"\[flip\] expects a per-tensor quantized tensor"):
        per_channel.flip([0])


# ---------------------------------------------------------------- the quantized LSTM


class M(nn.Module):
    def __init__(self, lstm=None):
        super().__init__()
        self.quant = tq.QuantStub()
        self.lstm = lstm if lstm is not None else nn.LSTM(4, 8)
        self.lin = nn.Linear(self.lstm.hidden_size * (2 if self.lstm.bidirectional else 1), 3)
        self.dq = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        y, _ = self.lstm(x)
        return self.dq(self.lin(y))


def _converted(seed, lstm=None, qconfig=None, shape=(5, 2, 4)):
    ember.manual_seed(seed)
    m = M(lstm).eval()
    m.qconfig = qconfig or tq.get_default_qconfig("fbgemm")
    prepared = tq.prepare(m)
    for _ in range(3):
        prepared(ember.randn(*shape))
    return m, prepared, tq.convert(prepared)


def test_static_quantized_lstm_end_to_end():
    """The brief's script: prepare swaps nn.LSTM for the observed quantizable LSTM by default,
    convert for the quantized one, which runs on quantized tensors."""
    m, prepared, q = _converted(0)
    assert type(m.lstm) is nn.LSTM and type(prepared.lstm) is nnqa.LSTM
    assert not hasattr(prepared.lstm, "activation_post_process")  # a tuple output has no observer
    assert type(q.lstm) is nnq.LSTM and q.lstm._get_name() == "QuantizedLSTM"
    assert nnq.LSTM is ember.nn.quantized.LSTM
    cell = q.lstm.layers[0].layer_fw.cell
    assert type(cell.igates) is nnq.Linear and type(cell.gates) is nnq.QFunctional
    assert type(cell.input_gate) is nn.Sigmoid and not hasattr(q.lstm, "qconfig")
    x = ember.randn(5, 2, 4)
    y = q(x)
    assert y.shape == (5, 2, 3) and y.dtype == ember.float32
    # close to the float model (8-bit steps through five time steps)
    np.testing.assert_allclose(y.numpy(), m(x).detach().numpy(), atol=0.15)
    # the quantized results: the LSTM's output and state carry the calibrated parameters
    out, (h, c) = q.lstm(q.quant(x))
    assert out.dtype == ember.quint8 and (out.q_scale(), out.q_zero_point()) == (float(cell.ogate_cy.scale),
                                                                                  int(cell.ogate_cy.zero_point))
    assert h.shape == (1, 2, 8) and c.shape == (1, 2, 8)
    assert c.q_scale() == float(cell.fgate_cx_igate_cgate.scale)
    np.testing.assert_array_equal(h[0].int_repr().numpy(), out[-1].int_repr().numpy())
    assert "QuantizedLSTM" in repr(q)


@pytest.mark.parametrize("batch_first", [False, True])
def test_static_quantized_lstm_deep_bidirectional(batch_first):
    lstm = nn.LSTM(4, 6, num_layers=2, bidirectional=True, batch_first=batch_first)
    shape = (2, 5, 4) if batch_first else (5, 2, 4)
    m, _, q = _converted(1, lstm, tq.default_qconfig, shape)
    x = ember.randn(*shape)
    np.testing.assert_allclose(q(x).numpy(), m(x).detach().numpy(), atol=0.2)
    out, (h, c) = q.lstm(q.quant(x))
    assert out.shape == (*shape[:2], 12) and h.shape == (4, 2, 6) and c.shape == (4, 2, 6)
    # an explicit quantized state
    h0 = ember.quantize_per_tensor(ember.zeros(4, 2, 6), 1.0, 0, ember.quint8)
    again, _ = q.lstm(q.quant(x), (h0, h0))
    np.testing.assert_array_equal(again.int_repr().numpy(), out.int_repr().numpy())


def test_static_quantized_lstm_state_dict_round_trip():
    _, _, a = _converted(0)
    _, _, b = _converted(1)
    x = ember.randn(5, 2, 4)
    assert not np.array_equal(a(x).numpy(), b(x).numpy())
    state = a.state_dict()
    assert "lstm.layers.0.layer_fw.cell.igates._packed_params._packed_params" in state
    assert "lstm.layers.0.layer_fw.cell.ogate_cy.scale" in state
    b.load_state_dict(state)
    np.testing.assert_array_equal(b(x).numpy(), a(x).numpy())
    # through a checkpoint (weights_only loading) and a deep copy
    buffer = io.BytesIO()
    ember.save(state, buffer)
    buffer.seek(0)
    _, _, c = _converted(2)
    c.load_state_dict(ember.load(buffer))
    np.testing.assert_array_equal(c(x).numpy(), a(x).numpy())
    np.testing.assert_array_equal(copy.deepcopy(a)(x).numpy(), a(x).numpy())


def test_quantized_lstm_from_float_and_from_observed():
    with pytest.raises(NotImplementedError, match="non-observed LSTM module"):
        nnq.LSTM.from_float(nn.LSTM(2, 3))
    with pytest.raises(AssertionError, match="Expected module type"):
        nnq.LSTM.from_observed(nn.LSTM(2, 3))
    with pytest.raises(NotImplementedError, match="non-quantizable LSTM"):
        nnqa.LSTM.from_observed(nn.LSTM(2, 3))
    # from_observed converts a copy
    lstm = nn.LSTM(3, 4).eval()
    lstm.qconfig = tq.default_qconfig
    observed = nnqa.LSTM.from_float(lstm)
    observed(ember.randn(4, 2, 3))
    quantized = nnq.LSTM.from_observed(observed)
    assert type(quantized) is nnq.LSTM and type(observed) is nnqa.LSTM
    assert type(observed.layers[0].layer_fw.cell.igates) is nn.Linear
    assert not hasattr(quantized, "qconfig")
    y, _ = quantized(ember.quantize_per_tensor(ember.randn(4, 2, 3), 0.05, 128, ember.quint8))
    assert y.dtype == ember.quint8 and y.shape == (4, 2, 4)


def test_default_custom_config_dict():
    config = tq.get_default_custom_config_dict()
    assert config["float_to_observed_custom_module_class"] == {nn.LSTM: nnqa.LSTM,
                                                               nn.MultiheadAttention: nnqa.MultiheadAttention}
    assert config["observed_to_quantized_custom_module_class"] == {nnqa.LSTM: nnq.LSTM,
                                                                   nnqa.MultiheadAttention: nnq.MultiheadAttention}
    # qconfig None keeps an nn.LSTM float through both steps
    model = nn.Sequential(tq.QuantStub(), nn.LSTM(4, 5)).eval()
    model.qconfig = tq.default_qconfig
    model[1].qconfig = None
    prepared = tq.prepare(model)
    assert type(prepared[1]) is nn.LSTM
    assert type(tq.convert(prepared)[1]) is nn.LSTM


def test_multihead_attention_prepares_and_converts():
    class A(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(8, 2)

        def forward(self, x):
            return self.mha(x, x, x)[0]

    model = A().eval()
    model.qconfig = tq.default_qconfig
    prepared = tq.prepare(model)
    assert type(prepared.mha) is nnqa.MultiheadAttention
    prepared(ember.randn(3, 2, 8))
    # the default config converts it (tests/test_quantized_static_mha.py runs it)
    assert type(tq.convert(prepared).mha) is nnq.MultiheadAttention
    # qconfig None keeps it float through both steps
    model.mha.qconfig = None
    assert type(tq.convert(tq.prepare(model)).mha) is nn.MultiheadAttention


@pytest.mark.parametrize("statement", ["import ember", "import ember.ao.nn.quantizable",
                                       "import ember.ao.nn.quantized", "import ember.nn.quantized",
                                       "import ember.ao.quantization"])
def test_imports_are_clean(statement):
    done = subprocess.run([sys.executable, "-c", f"{statement}; import ember; print(ember.ao.nn.quantized.LSTM)"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ember.ao.nn.quantized.rnn.LSTM" in done.stdout
