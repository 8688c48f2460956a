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
