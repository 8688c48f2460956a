"""Copies of quantized tensors and modules (copy.deepcopy, pickle, the tensor record), the fused
quantized BNReLU2d/3d (ember.ao.nn.intrinsic.quantized) against a NumPy reference of PyTorch's
batch_norm_relu arithmetic, and the quantizable LSTMCell / LSTM / MultiheadAttention
(ember.ao.nn.quantizable) against float64 NumPy references and through prepare/convert's custom
module configuration. tests/test_quantized_bnrelu_torch_parity.py holds PyTorch's bits."""

import copy
import pickle

import numpy as np
import pytest

import ember
from ember import _C, nn, serialization
from ember.ao import quantization as tq
from ember.ao.nn import intrinsic as nni
from ember.ao.nn import quantized as nnq
from ember.ao.nn.intrinsic import quantized as nniq


def _t(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def _fill(model, seed=0, scale=0.3):
    rng = np.random.default_rng(seed)
    with ember.no_grad():
        for _, p in sorted(model.state_dict().items()):
            if p.dtype == ember.float32:
                p.copy_(_t(rng.normal(size=tuple(p.shape)).astype(np.float32) * scale))
    return model


def _assert_same_qtensor(a, b):
    """Same dtype, shape, qscheme, scale(s), zero point(s) (their dtypes too), axis and integers."""
    assert a is not b and a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)
    qa, qb = _C._quantizer(a), _C._quantizer(b)
    assert a.qscheme() is b.qscheme()
    assert qa[:3] == qb[:3] and qa[5] == qb[5]
    if qa[3] is not None:
        for x, y in ((qa[3], qb[3]), (qa[4], qb[4])):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x.numpy(), y.numpy())
        np.testing.assert_array_equal(a.q_per_channel_scales().numpy(), b.q_per_channel_scales().numpy())
        assert a.q_per_channel_axis() == b.q_per_channel_axis()
    assert a.int_repr().dtype == b.int_repr().dtype
    np.testing.assert_array_equal(a.int_repr().numpy(), b.int_repr().numpy())


# ---------------------------------------------------------------- copies of quantized tensors


def _per_tensor(dtype, shape=(3, 5), zero_point=3):
    rng = np.random.default_rng(1)
    return ember.quantize_per_tensor(_t(rng.normal(size=shape).astype(np.float32)), 0.0123456789, zero_point, dtype)


def _per_channel(dtype, axis=1, float_qparams=False):
    rng = np.random.default_rng(2)
    x = _t(rng.normal(size=(3, 4, 2)).astype(np.float32))
    n = x.shape[axis]
    scales = _t(rng.uniform(0.01, 0.2, n))
    if float_qparams:
        return ember.quantize_per_channel(x, scales.float(), _t(np.arange(n, dtype=np.float32) + 0.5), axis, dtype)
    return ember.quantize_per_channel(x, scales, _t(np.array([1, 2, 0, 3][:n])), axis, dtype)


@pytest.mark.parametrize("dtype", [ember.quint8, ember.qint8, ember.qint32], ids=str)
@pytest.mark.parametrize("copier", [copy.deepcopy, lambda t: pickle.loads(pickle.dumps(t)),
                                    lambda t: serialization.tensor_from_bytes(serialization.tensor_to_bytes(t))],
                         ids=["deepcopy", "pickle", "record"])
def test_quantized_tensors_copy_exactly(dtype, copier):
    zero_point = {ember.quint8: 200, ember.qint8: -100, ember.qint32: -70000}[dtype]
    for q in (_per_tensor(dtype, zero_point=zero_point), _per_tensor(dtype, (0, 4)), _per_tensor(dtype, ()),
              _per_channel(dtype, 1), _per_channel(dtype, 2)):
        _assert_same_qtensor(q, copier(q))
    if dtype == ember.quint8:  # the float zero points of embedding tables (per_channel_affine_float_qparams)
        q = _per_channel(dtype, 0, float_qparams=True)
        c = copier(q)
        assert c.qscheme() is ember.per_channel_affine_float_qparams
        _assert_same_qtensor(q, c)


def test_views_copy_as_their_values():
    q = _per_tensor(ember.qint8, (4, 6))
    view = q[1:3, ::2]
    c = copy.deepcopy(view)
    _assert_same_qtensor(view, c)
    assert c.is_contiguous()


def test_deepcopy_memo_keeps_shared_quantized_tensors_shared():
    q = _per_tensor(ember.quint8)
    a, b = copy.deepcopy([q, q])
    assert a is b
    _assert_same_qtensor(q, a)


def _record(header: dict, body: bytes) -> bytes:
    import json
    import struct

    raw = json.dumps(header).encode()
    return serialization.MAGIC + struct.pack("<I", len(raw)) + raw + body


def test_bad_quantized_records_raise():
    base = {"format": 1, "dtype": "qint8", "shape": [2], "byteorder": "little"}
    with pytest.raises(ValueError, match="must hold its quantizer"):
        serialization.tensor_from_bytes(_record(base, b"\x01\x02"))
    with pytest.raises(ValueError, match="unknown qscheme 'per_tensor_magic'"):
        serialization.tensor_from_bytes(_record({**base, "quantizer": {"qscheme": "per_tensor_magic"}}, b"\x01\x02"))
    with pytest.raises(ValueError, match="number scale and an integer zero_point"):
        serialization.tensor_from_bytes(_record({**base, "quantizer": {"qscheme": "per_tensor_affine", "scale": "1",
                                                                       "zero_point": 0}}, b"\x01\x02"))
    with pytest.raises(RuntimeError, match="expected a positive, finite scale"):
        serialization.tensor_from_bytes(_record({**base, "quantizer": {"qscheme": "per_tensor_affine", "scale": -0.5,
                                                                       "zero_point": 0}}, b"\x01\x02"))
    with pytest.raises(RuntimeError, match="zero_point 300 is above upper bound"):
        serialization.tensor_from_bytes(_record({**base, "quantizer": {"qscheme": "per_tensor_affine", "scale": 0.5,
                                                                       "zero_point": 300}}, b"\x01\x02"))
    with pytest.raises(ValueError, match="expected 2 bytes of int8 data"):
        serialization.tensor_from_bytes(_record({**base, "quantizer": {"qscheme": "per_tensor_affine", "scale": 0.5,
                                                                       "zero_point": 0}}, b"\x01"))
    per_channel = {"qscheme": "per_channel_affine", "axis": 0, "scales_dtype": "float64", "zero_points_dtype": "int64"}
    with pytest.raises(ValueError, match="axis must index the shape"):
        serialization.tensor_from_bytes(_record({**base, "quantizer": {**per_channel, "axis": 1}}, b""))
    with pytest.raises(ValueError, match="scales must be float32 or float64"):
        serialization.tensor_from_bytes(_record({**base, "quantizer": {**per_channel, "scales_dtype": "int8"}}, b""))
    with pytest.raises(ValueError, match="expected 34 bytes of integers, scales and zero points"):
        serialization.tensor_from_bytes(_record({**base, "quantizer": per_channel}, b"\x01\x02"))
    good = np.array([1, 2], np.int8).tobytes() + np.array([0.5, -1.0]).tobytes() + np.zeros(2, np.int64).tobytes()
    with pytest.raises(RuntimeError, match="expected a positive, finite scale"):
        serialization.tensor_from_bytes(_record({**base, "quantizer": per_channel}, good))
    with pytest.raises(ValueError, match="a float32 tensor record cannot have a quantizer"):
        serialization.tensor_from_bytes(_record({**base, "dtype": "float32", "quantizer": per_channel}, b"\x00" * 8))


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(6 * 4 * 4, 5)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        y = self.relu(self.bn(self.conv(self.quant(x))))
        return self.dequant(self.fc(ember.flatten(y, 1)))


def _data(seed, shape=(4, 3, 4, 4), n=3):
    rng = np.random.default_rng(seed)
    return [_t(rng.normal(size=shape).astype(np.float32)) for _ in range(n)]


@pytest.mark.parametrize("qconfig", [tq.default_qconfig, tq.default_per_channel_qconfig], ids=["tensor", "channel"])
def test_deepcopy_of_a_converted_static_model(qconfig):
    model = _fill(_Net()).eval()
    with ember.no_grad():
        model.bn.running_var.copy_(ember.linspace(0.5, 2.0, 6))
    fused = tq.fuse_modules(model, [["conv", "bn", "relu"]])
    fused.qconfig = qconfig
    prepared = tq.prepare(fused)
    for batch in _data(1):
        prepared(batch)
    converted = tq.convert(prepared)
    copied = copy.deepcopy(converted)
    _assert_same_qtensor(converted.conv.weight(), copied.conv.weight())
    _assert_same_qtensor(converted.fc.weight(), copied.fc.weight())
    assert (copied.conv.scale, copied.conv.zero_point) == (converted.conv.scale, converted.conv.zero_point)
    x = _data(2, n=1)[0]
    np.testing.assert_array_equal(copied(x).numpy(), converted(x).numpy())
    restored = pickle.loads(pickle.dumps(converted))
    np.testing.assert_array_equal(restored(x).numpy(), converted(x).numpy())
    # the copy is independent: changing the original's weight leaves it alone
    w = converted.fc.weight()
    converted.fc.set_weight_bias(ember.quantize_per_tensor(w.dequantize() * 0, 0.1, 0, ember.qint8), None)
    assert not np.array_equal(copied(x).numpy(), converted(x).numpy())


def test_deepcopy_of_dynamic_linear_and_lstm():
    rng = np.random.default_rng(4)
    linear = nnq.dynamic.Linear(4, 3)
    copied = copy.deepcopy(linear)
    _assert_same_qtensor(linear.weight(), copied.weight())
    x = _t(rng.normal(size=(2, 4)).astype(np.float32))
    np.testing.assert_array_equal(copied(x).numpy(), linear(x).numpy())

    float_lstm = _fill(nn.LSTM(5, 6, num_layers=2, bidirectional=True), seed=5)
    dynamic = tq.quantize_dynamic(nn.Sequential(float_lstm), {nn.LSTM}, dtype=ember.qint8)
    assert type(dynamic[0]) is nnq.dynamic.LSTM
    copied = copy.deepcopy(dynamic)
    seq = _t(rng.normal(size=(7, 2, 5)).astype(np.float32))
    (out_a, (h_a, c_a)), (out_b, (h_b, c_b)) = dynamic(seq), copied(seq)
    for a, b in ((out_a, out_b), (h_a, h_b), (c_a, c_b)):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    ours, theirs = _quantized_leaves(dynamic.state_dict()), _quantized_leaves(copied.state_dict())
    assert len(ours) == len(theirs) == 8  # weight_ih / weight_hh of 2 layers x 2 directions (in packed tuples)
    for a, b in zip(ours, theirs, strict=True):
        _assert_same_qtensor(a, b)


def _quantized_leaves(value) -> list:
    if isinstance(value, dict):
        return [t for v in value.values() for t in _quantized_leaves(v)]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _quantized_leaves(v)]
    return [value] if isinstance(value, ember.Tensor) and value.is_quantized else []


# ---------------------------------------------------------------- BNReLU2d / BNReLU3d


def _bn_relu_reference(ints, in_scale, in_zp, w, b, mean, var, eps, out_scale, out_zp, lo, hi):
    """PyTorch's quantized batch_norm_relu (qbatch_norm.cpp and its kernel), step by step in NumPy:
    alpha and beta in float32 (their ratio in float64), a*(x - zp) + b, rounded half to even, the
    output zero point added, clamped to the dtype's range, then max with the output zero point."""
    f32 = np.float32
    inv_sigma = f32(1.0) / np.sqrt(var.astype(f32) + f32(eps))
    alpha = ((inv_sigma * w).astype(np.float64) * (in_scale / out_scale)).astype(f32)
    beta = ((b - (mean * inv_sigma) * w).astype(np.float64) / out_scale).astype(f32)
    shape = (1, -1) + (1,) * (ints.ndim - 2)
    value = (alpha.astype(np.float64).reshape(shape) * (ints.astype(np.float64) - in_zp)
             + beta.astype(np.float64).reshape(shape)).astype(f32)
    q = np.clip(np.rint(value).astype(np.int64) + out_zp, lo, hi)
    return np.maximum(q, out_zp)


@pytest.mark.parametrize("cls,dims", [(nniq.BNReLU2d, 4), (nniq.BNReLU3d, 5)], ids=["2d", "3d"])
@pytest.mark.parametrize("dtype", [ember.quint8, ember.qint8], ids=str)
def test_bn_relu_against_numpy(cls, dims, dtype):
    rng = np.random.default_rng(dims)
    shape = (2, 5, 3, 4) if dims == 4 else (2, 5, 2, 3, 3)
    in_zp, out_zp = (120, 90) if dtype == ember.quint8 else (-5, 7)
    lo, hi = (0, 255) if dtype == ember.quint8 else (-128, 127)
    x = ember.quantize_per_tensor(_t(rng.normal(size=shape).astype(np.float32) * 2), 0.04, in_zp, dtype)
    m = cls(5, eps=1e-3)
    params = {"weight": rng.normal(size=5), "bias": rng.normal(size=5), "running_mean": rng.normal(size=5) * 0.5,
              "running_var": rng.uniform(0.3, 2.0, 5)}
    with ember.no_grad():
        for name, value in params.items():
            getattr(m, name).copy_(_t(value.astype(np.float32)))
    m.scale.fill_(0.03)
    m.zero_point.fill_(out_zp)
    out_scale = float(np.float32(0.03))  # the scale buffer is float32, as PyTorch's
    y = m(x)
    assert (y.dtype, y.q_scale(), y.q_zero_point()) == (dtype, out_scale, out_zp)
    p32 = {k: v.astype(np.float32) for k, v in params.items()}
    want = _bn_relu_reference(x.int_repr().numpy(), 0.04, in_zp, p32["weight"], p32["bias"], p32["running_mean"],
                              p32["running_var"], 1e-3, out_scale, out_zp, lo, hi)
    np.testing.assert_array_equal(y.int_repr().numpy().astype(np.int64), want)
    assert (want == out_zp).any() and (want > out_zp).any()  # both sides of the relu are exercised
    # against float64 batch norm + relu: within one step where float32 rounding sits on a half
    c = (slice(None),) + (None,) * (dims - 2)
    ref = (x.dequantize().numpy().astype(np.float64) - params["running_mean"][c]) \
        / np.sqrt(params["running_var"][c] + 1e-3) * params["weight"][c] + params["bias"][c]
    ideal = np.clip(np.rint(np.maximum(ref, 0) / 0.03) + out_zp, max(lo, out_zp), hi)
    assert np.abs(y.int_repr().numpy() - ideal).max() <= 1
    # the fused module is the plain one's output with relu applied to it
    plain = (nnq.BatchNorm2d if dims == 4 else nnq.BatchNorm3d)(5, eps=1e-3)
    plain.load_state_dict(m.state_dict())
    np.testing.assert_array_equal(y.int_repr().numpy(),
                                  np.maximum(plain(x).int_repr().numpy().astype(np.int64), out_zp))
    assert m._get_name() == f"QuantizedBNReLU{dims - 2}d"
    layout = "(N, C, H, W)" if dims == 4 else "(N, C, D, H, W)"
    with pytest.raises(ValueError, match=f"Input shape must be `{layout}`!".replace("(", r"\(").replace(")", r"\)")):
        m(x.reshape(10, *shape[2:]))


def _bn_relu_model(dims):
    bn = nn.BatchNorm2d(4) if dims == 4 else nn.BatchNorm3d(4)
    model = nn.Sequential(tq.QuantStub(), bn, nn.ReLU(), tq.DeQuantStub())
    _fill(model, seed=dims, scale=0.5)
    with ember.no_grad():
        bn.running_var.copy_(ember.linspace(0.5, 2.0, 4))
    return model


@pytest.mark.parametrize("dims", [4, 5])
def test_fuse_prepare_convert_bn_relu(dims):
    model = _bn_relu_model(dims).eval()
    fused = tq.fuse_modules(model, [["1", "2"]])
    kind = nni.BNReLU2d if dims == 4 else nni.BNReLU3d
    assert type(fused[1]) is kind and type(fused[2]) is nn.Identity
    assert type(fused[1][0]) is type(model[1]) and type(fused[1][1]) is nn.ReLU
    shape = (3, 4, 5, 5) if dims == 4 else (3, 4, 2, 4, 4)
    data = _data(6, shape)
    np.testing.assert_array_equal(fused(data[0]).detach().numpy(), model(data[0]).detach().numpy())
    fused.qconfig = tq.default_qconfig
    prepared = tq.prepare(fused)
    assert hasattr(prepared[1], "activation_post_process")
    for batch in data:
        prepared(batch)
    converted = tq.convert(prepared)
    qkind = nniq.BNReLU2d if dims == 4 else nniq.BNReLU3d
    assert type(converted[1]) is qkind
    scale, zero_point = float(converted[1].scale), int(converted[1].zero_point)
    assert zero_point == 0  # the observer saw only relu's non-negative outputs
    x = data[0]
    out = converted(x).numpy()
    assert out.min() >= 0
    np.testing.assert_allclose(out, model(x).detach().numpy(), atol=scale + 0.02)
    # converting keeps the statistics and the state dict has the output parameters
    assert {"scale", "zero_point", "running_mean", "running_var", "weight", "bias"} <= set(converted[1].state_dict())
    np.testing.assert_array_equal(converted[1].running_var.numpy(), model[1].running_var.numpy())
    # fusing works in training mode too (nothing is folded)
    assert type(tq.fuse_modules(_bn_relu_model(dims).train(), [["1", "2"]])[1]) is kind


def test_bn_relu_errors_and_names():
    with pytest.raises(AssertionError, match="Incorrect types for input modules"):
        nni.BNReLU2d(nn.BatchNorm3d(2), nn.ReLU())
    with pytest.raises(NotImplementedError, match="Cannot fuse modules"):
        tq.fuse_modules(nn.Sequential(nn.BatchNorm2d(2), nn.ReLU6()), [["0", "1"]])
    with pytest.raises(NotImplementedError, match="Cannot fuse modules"):
        tq.fuse_modules(nn.Sequential(nn.BatchNorm1d(2), nn.ReLU()), [["0", "1"]])
    unobserved = nni.BNReLU2d(nn.BatchNorm2d(2), nn.ReLU())
    with pytest.raises(AssertionError, match="no activation_post_process"):
        nniq.BNReLU2d.from_float(unobserved)
    observed = nn.BatchNorm3d(2)
    observed.activation_post_process = tq.MinMaxObserver()
    observed.activation_post_process(ember.randn(3))
    with pytest.raises(AssertionError, match="only works for BatchNorm2d"):
        nniq.BNReLU2d.from_float(observed)
    with pytest.raises(AssertionError, match="expects a fused BNReLU3d"):
        nniq.BNReLU3d.from_float(observed)
    assert type(nnq.BatchNorm3d.from_float(observed)) is nnq.BatchNorm3d
    fused = nni.BNReLU3d(nn.BatchNorm3d(2), nn.ReLU())
    fused.activation_post_process = observed.activation_post_process
    with pytest.raises(AssertionError, match="expects a plain BatchNorm3d"):
        nnq.BatchNorm3d.from_float(fused)
    assert ember.nn.intrinsic.BNReLU2d is nni.BNReLU2d and ember.nn.intrinsic.quantized.BNReLU3d is nniq.BNReLU3d
    assert tq.get_default_static_quant_module_mappings()[nni.BNReLU2d] is nniq.BNReLU2d
    assert repr(nniq.BNReLU2d(3)).startswith("QuantizedBNReLU2d(3")


# ---------------------------------------------------------------- quantizable LSTM / MultiheadAttention


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _lstm_reference(x, h0, c0, weights, layers, bidirectional):
    """nn.LSTM in float64 NumPy: x [T, N, F]; h0/c0 [layers * dirs, N, H]; weights[(layer, dir)] =
    (w_ih, w_hh, b_ih, b_hh) in PyTorch's gate order (input, forget, cell, output)."""
    dirs = 2 if bidirectional else 1
    hs, cs = [], []
    for layer in range(layers):
        outs = []
        for d in range(dirs):
            w_ih, w_hh, b_ih, b_hh = weights[(layer, d)]
            h, c = h0[layer * dirs + d], c0[layer * dirs + d]
            steps = range(x.shape[0]) if d == 0 else range(x.shape[0] - 1, -1, -1)
            out = np.zeros((x.shape[0], x.shape[1], h.shape[-1]))
            for t in steps:
                i, f, g, o = np.split(x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh, 4, axis=1)
                c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
                h = _sigmoid(o) * np.tanh(c)
                out[t] = h
            outs.append(out)
            hs.append(h)
            cs.append(c)
        x = np.concatenate(outs, axis=2)
    return x, np.stack(hs), np.stack(cs)


def _lstm_weights(lstm, layers, dirs):
    return {(layer, d): tuple(getattr(lstm, f"{kind}_l{layer}{'_reverse' if d else ''}").detach().numpy()
                              .astype(np.float64) for kind in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            for layer in range(layers) for d in range(dirs)}


@pytest.mark.parametrize("layers,bidirectional,batch_first", [(1, False, False), (2, True, False), (2, False, True),
                                                              (1, True, True)])
def test_quantizable_lstm_matches_nn_lstm_and_numpy(layers, bidirectional, batch_first):
    from ember.ao.nn import quantizable as nnqa

    rng = np.random.default_rng(layers + 2 * bidirectional)
    lstm = _fill(nn.LSTM(5, 6, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first),
                 seed=9, scale=0.4).eval()
    lstm.qconfig = tq.default_qconfig
    q = nnqa.LSTM.from_float(lstm)
    assert q._get_name() == "QuantizableLSTM" and len(q.layers) == layers
    dirs = 2 if bidirectional else 1
    x = rng.normal(size=(7, 3, 5)).astype(np.float32)
    h0, c0 = (rng.normal(size=(layers * dirs, 3, 6)).astype(np.float32) for _ in range(2))
    xin = _t(x.transpose(1, 0, 2)) if batch_first else _t(x)
    y, (h, c) = q(xin, (_t(h0), _t(c0)))
    want_y, (want_h, want_c) = lstm(xin, (_t(h0), _t(c0)))
    for got, want in ((y, want_y), (h, want_h), (c, want_c)):
        assert tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=0, atol=1e-6)
    ref_y, ref_h, ref_c = _lstm_reference(x.astype(np.float64), h0.astype(np.float64), c0.astype(np.float64),
                                          _lstm_weights(lstm, layers, dirs), layers, bidirectional)
    got_y = y.detach().numpy().transpose(1, 0, 2) if batch_first else y.detach().numpy()
    np.testing.assert_allclose(got_y, ref_y, rtol=0, atol=2e-6)
    np.testing.assert_allclose(h.detach().numpy(), ref_h, rtol=0, atol=2e-6)
    np.testing.assert_allclose(c.detach().numpy(), ref_c, rtol=0, atol=2e-6)
    # no state: zeros, as nn.LSTM
    np.testing.assert_allclose(q(xin)[0].detach().numpy(), lstm(xin)[0].detach().numpy(), rtol=0, atol=1e-6)
    # the observers saw the intermediate results: the gates' sum, checked against NumPy
    cell = q.layers[0].layer_fw.cell
    for name in ("igates", "hgates", "gates", "fgate_cx", "igate_cgate", "fgate_cx_igate_cgate", "ogate_cy"):
        assert type(getattr(cell, name).activation_post_process).__name__ == "MinMaxObserver", name
    assert not hasattr(q, "activation_post_process")
    q2 = nnqa.LSTM.from_float(lstm)
    q2(_t(x[:1].transpose(1, 0, 2)) if batch_first else _t(x[:1]))  # one step from zero state
    w_ih, w_hh, b_ih, b_hh = _lstm_weights(lstm, layers, dirs)[(0, 0)]
    gates = x[0].astype(np.float64) @ w_ih.T + b_ih + b_hh
    observer = q2.layers[0].layer_fw.cell.gates.activation_post_process
    np.testing.assert_allclose([float(observer.min_val), float(observer.max_val)], [gates.min(), gates.max()],
                               rtol=1e-5)


@pytest.mark.parametrize("split_gates", [False, True])
def test_quantizable_lstm_cell_against_numpy(split_gates):
    from ember.ao.nn import quantizable as nnqa

    rng = np.random.default_rng(11)
    cell = _fill(nn.LSTMCell(4, 3), seed=12, scale=0.5)
    cell.qconfig = tq.default_qconfig
    q = nnqa.LSTMCell.from_float(cell, split_gates=split_gates)
    assert q._get_name() == "QuantizableLSTMCell" and q.qconfig is cell.qconfig
    assert (type(q.igates) is nn.ModuleDict) == split_gates
    x, hx, cx = (rng.normal(size=s).astype(np.float32) for s in ((2, 4), (2, 3), (2, 3)))
    h, c = q(_t(x), (_t(hx), _t(cx)))
    w_ih, w_hh, b_ih, b_hh = (getattr(cell, n).detach().numpy().astype(np.float64)
                              for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
    i, f, g, o = np.split(x @ w_ih.T + b_ih + hx @ w_hh.T + b_hh, 4, axis=1)
    want_c = _sigmoid(f) * cx + _sigmoid(i) * np.tanh(g)
    want_h = _sigmoid(o) * np.tanh(want_c)
    np.testing.assert_allclose(c.detach().numpy(), want_c, rtol=0, atol=1e-6)
    np.testing.assert_allclose(h.detach().numpy(), want_h, rtol=0, atol=1e-6)
    zh, zc = q(_t(x))
    np.testing.assert_allclose(zh.detach().numpy(), cell(_t(x))[0].detach().numpy(), rtol=0, atol=1e-6)
    h_q, c_q = q.initialize_hidden(2, is_quantized=True)
    assert h_q.dtype == ember.quint8 and (h_q.q_scale(), h_q.q_zero_point()) == (1.0, 0)
    no_bias = nnqa.LSTMCell.from_params(cell.weight_ih, cell.weight_hh, split_gates=split_gates)
    assert not no_bias.bias
    with pytest.raises(AssertionError, match="bi and bh must both be None"):
        nnqa.LSTMCell.from_params(cell.weight_ih, cell.weight_hh, cell.bias_ih, None)


def test_prepare_with_custom_module_config_and_convert():
    from ember.ao.nn import quantizable as nnqa

    lstm = _fill(nn.LSTM(4, 5, num_layers=2), seed=13)
    model = nn.Sequential(lstm).eval()
    model.qconfig = tq.default_qconfig
    config = {"float_to_observed_custom_module_class": {nn.LSTM: nnqa.LSTM}}
    prepared = tq.prepare(model, prepare_custom_config_dict=config)
    assert type(prepared[0]) is nnqa.LSTM and type(model[0]) is nn.LSTM  # prepare copied the model
    x = _data(14, (6, 2, 4), n=1)[0]
    y_float = model(x)[0].detach().numpy()
    np.testing.assert_allclose(prepared(x)[0].detach().numpy(), y_float, rtol=0, atol=1e-6)
    observers = [n for n, m in prepared.named_modules() if n.endswith("activation_post_process")]
    assert len(observers) == 2 * 7  # per layer's cell: igates, hgates and the five FloatFunctionals
    assert "0.activation_post_process" not in observers  # the LSTM's tuple output has none
    # convert makes the quantized LSTM of it (tests/test_quantized_static_lstm.py); an explicit config
    # that does not name the observed class raises
    assert type(tq.convert(prepared)[0]) is nnq.LSTM
    with pytest.raises(NotImplementedError, match="no quantized form is named for an observed QuantizableLSTM"):
        tq.convert(prepared, convert_custom_config_dict={})
    # without a config nn.LSTM is swapped all the same (PyTorch's default custom config)
    assert type(tq.prepare(model)[0]) is nnqa.LSTM
    # an observed module copies with its observers
    copied = copy.deepcopy(prepared)
    np.testing.assert_array_equal(copied(x)[0].detach().numpy(), prepared(x)[0].detach().numpy())


def test_convert_custom_config_calls_from_observed():
    class Scale(nn.Module):
        def forward(self, x):
            return x * 2

    class ObservedScale(nn.Module):
        @classmethod
        def from_float(cls, mod):
            return cls()

        def forward(self, x):
            return x * 2

    class QuantizedScale(nn.Module):
        def __init__(self, scale, zero_point):
            super().__init__()
            self.scale, self.zero_point = scale, zero_point

        @classmethod
        def from_observed(cls, mod):
            scale, zero_point = mod.activation_post_process.calculate_qparams()
            return cls(float(scale), int(zero_point))

        def forward(self, x):
            return ember.quantize_per_tensor(x.dequantize() * 2, self.scale, self.zero_point, ember.quint8)

    model = nn.Sequential(tq.QuantStub(), Scale(), tq.DeQuantStub()).eval()
    model.qconfig = tq.default_qconfig
    prepared = tq.prepare(model, prepare_custom_config_dict={"float_to_observed_custom_module_class":
                                                             {Scale: ObservedScale}})
    assert type(prepared[1]) is ObservedScale and hasattr(prepared[1], "activation_post_process")
    x = _t(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    prepared(x)
    converted = tq.convert(prepared, convert_custom_config_dict={"observed_to_quantized_custom_module_class":
                                                                  {ObservedScale: QuantizedScale}})
    assert type(converted[1]) is QuantizedScale
    np.testing.assert_allclose(converted(x).numpy(), 2 * x.numpy(), atol=2 * converted[1].scale + 0.02)


def test_quantizable_lstm_errors_and_names():
    from ember.ao.nn import quantizable as nnqa

    with pytest.raises(AssertionError, match="Expected module type LSTM, got GRU"):
        nnqa.LSTM.from_float(nn.GRU(2, 3))
    with pytest.raises(AssertionError, match="other must have qconfig"):
        nnqa.LSTM.from_float(nn.LSTM(2, 3).eval())
    with pytest.raises(AssertionError, match="Expected module type LSTMCell, got GRUCell"):
        nnqa.LSTMCell.from_float(nn.GRUCell(2, 3))
    with pytest.raises(AssertionError, match="must have 'qconfig'"):
        nnqa.LSTMCell.from_float(nn.LSTMCell(2, 3))
    projected = nn.LSTM(2, 4, proj_size=3).eval()
    projected.qconfig = tq.default_qconfig
    with pytest.raises(NotImplementedError, match="no projection"):
        nnqa.LSTM.from_float(projected)
    training = nn.LSTM(2, 3)
    training.qconfig = tq.default_qat_qconfig
    # a training LSTM is prepared for QAT, as PyTorch's (tests/test_quantized_qat_lstm.py)
    observed = nnqa.LSTM.from_float(training)
    assert observed.training
    assert isinstance(observed.layers[0].layer_fw.cell.input_gate.activation_post_process, tq.FixedQParamsFakeQuantize)
    with pytest.raises(NotImplementedError, match="non-quantizable LSTM"):
        nnqa.LSTM.from_observed(nnqa.LSTM(2, 3))
    with pytest.raises(ValueError, match="dropout should be a number in range"):
        nnqa.LSTM(2, 3, dropout=1.5)
    with pytest.warns(UserWarning, match="dropout option for quantizable LSTM is ignored"):
        nnqa.LSTM(2, 3, num_layers=2, dropout=0.3)
    with pytest.raises(ValueError, match="expected a 3-D input"):
        nnqa.LSTM(2, 3)(ember.randn(4, 2))
    # a layer after a bidirectional one reads both directions (2 * hidden inputs), as nn.LSTM's
    stacked = nnqa.LSTM(2, 3, num_layers=2, bidirectional=True)
    assert stacked.layers[1].layer_fw.cell.igates.in_features == 6
    assert tuple(stacked(ember.randn(5, 2, 2))[0].shape) == (5, 2, 6)
    import ember.nn.quantizable as legacy

    assert legacy.LSTMCell is nnqa.LSTMCell and legacy.MultiheadAttention is nnqa.MultiheadAttention


@pytest.mark.parametrize("kw", [{}, {"batch_first": True}, {"kdim": 6, "vdim": 5, "add_bias_kv": True},
                                {"add_zero_attn": True, "bias": False}], ids=["plain", "batch_first", "kv", "zero"])
def test_quantizable_multihead_attention_matches_float(kw):
    from ember.ao.nn import quantizable as nnqa

    rng = np.random.default_rng(21)
    mha = _fill(nn.MultiheadAttention(8, 2, **kw), seed=22, scale=0.4).eval()
    mha.qconfig = tq.default_qconfig
    observed = nnqa.MultiheadAttention.from_float(mha)
    assert observed._get_name() == "QuantizableMultiheadAttention"
    for name in ("linear_Q", "linear_K", "linear_V", "out_proj", "quant_attn_output", "quant_attn_output_weights"):
        assert hasattr(getattr(observed, name), "activation_post_process"), name
    kdim, vdim = kw.get("kdim", 8), kw.get("vdim", 8)
    shape = (lambda s, e: (2, s, e)) if kw.get("batch_first") else (lambda s, e: (s, 2, e))
    q, k, v = (_t(rng.normal(size=shape(s, e)).astype(np.float32)) for s, e in ((3, 8), (4, kdim), (4, vdim)))
    src = 4  # masks are given for the keys; bias_k and the zero attention pad them
    mask = _t(rng.uniform(size=(3, src)) > 0.7)
    padding = _t(np.array([[False] * (src - 1) + [True], [False] * src]))
    for args in ({}, {"attn_mask": mask}, {"key_padding_mask": padding, "average_attn_weights": False},
                 {"need_weights": False}):
        want, want_w = mha(q, k, v, **args)
        got, got_w = observed(q, k, v, **args)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=0, atol=1e-6)
        assert (got_w is None) == (want_w is None)
        if want_w is not None:
            np.testing.assert_allclose(got_w.detach().numpy(), want_w.detach().numpy(), rtol=0, atol=1e-6)
    # float64 reference for the plain call (no masks), one head at a time
    if not kw:
        e, h = 8, 2
        wq, wk, wv = (observed.linear_Q.weight, observed.linear_K.weight, observed.linear_V.weight)
        bq, bk, bv = (observed.linear_Q.bias, observed.linear_K.bias, observed.linear_V.bias)
        f64 = [t.detach().numpy().astype(np.float64) for t in (q, k, v, wq, wk, wv, bq, bk, bv)]
        qq, kk, vv = (x @ w.T + b for x, w, b in zip(f64[:3], f64[3:6], f64[6:], strict=True))
        out = np.zeros((3, 2, e))
        for n in range(2):
            for head in range(h):
                cols = slice(head * e // h, (head + 1) * e // h)
                s = qq[:, n, cols] @ kk[:, n, cols].T / np.sqrt(e // h)
                p = np.exp(s - s.max(1, keepdims=True))
                out[:, n, cols] = (p / p.sum(1, keepdims=True)) @ vv[:, n, cols]
        wo, bo = (t.detach().numpy().astype(np.float64) for t in (observed.out_proj.weight, observed.out_proj.bias))
        np.testing.assert_allclose(observed(q, k, v)[0].detach().numpy(), out @ wo.T + bo, rtol=0, atol=2e-6)
    # dequantize() gives back the float module
    back = observed.dequantize()
    assert type(back) is nn.MultiheadAttention
    np.testing.assert_allclose(back(q, k, v)[0].detach().numpy(), mha(q, k, v)[0].detach().numpy(), rtol=0,
                               atol=1e-6)


def test_quantizable_multihead_attention_errors():
    from ember.ao.nn import quantizable as nnqa

    with pytest.raises(AssertionError, match="Expected type MultiheadAttention, got Linear"):
        nnqa.MultiheadAttention.from_float(nn.Linear(2, 2))
    with pytest.raises(AssertionError, match="must have 'qconfig'"):
        nnqa.MultiheadAttention.from_float(nn.MultiheadAttention(4, 2))
    m = nnqa.MultiheadAttention(4, 2)
    x = ember.randn(3, 1, 4)
    with pytest.raises(AssertionError, match="causal mask not supported by AO MHA module"):
        m(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match="The size of the 2D attn_mask is not correct"):
        m(x, x, x, attn_mask=ember.zeros(2, 2, dtype=ember.bool))
    with pytest.raises(AssertionError, match="Only float and bool types are supported for attn_mask"):
        m(x, x, x, attn_mask=ember.zeros(3, 3, dtype=ember.int64))
    with pytest.raises(AssertionError, match="embed_dim mismatch"):
        m(ember.randn(3, 1, 5), x, x)
    with pytest.raises(NotImplementedError, match="trying to prepare an MHA module"):
        nnqa.MultiheadAttention.from_observed(m)
    mha = nn.MultiheadAttention(4, 2).eval()
    model = nn.Sequential()
    model.add_module("attn", mha)
    model.qconfig = tq.default_qconfig
    prepared = tq.prepare(model, prepare_custom_config_dict={"float_to_observed_custom_module_class":
                                                             {nn.MultiheadAttention: nnqa.MultiheadAttention}})
    assert type(prepared.attn) is nnqa.MultiheadAttention and not hasattr(prepared.attn, "activation_post_process")
    # the default convert config turns it into the quantized MultiheadAttention; one without it refuses
    assert type(tq.convert(prepared).attn) is ember.ao.nn.quantized.MultiheadAttention
    with pytest.raises(NotImplementedError, match="QuantizableMultiheadAttention"):
        tq.convert(prepared, convert_custom_config_dict={"observed_to_quantized_custom_module_class": {}})
