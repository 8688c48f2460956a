"""Static (eager-mode) quantization of nn.MultiheadAttention, as PyTorch 2.x does it: the quantized
mean and repeat it needs (against float64 NumPy references), the quantized MultiheadAttention
(ember.ao.nn.quantized.MultiheadAttention) that convert makes of an observed quantizable one through
the default custom-module config, its masks, batch_first, need_weights / average_attn_weights,
add_bias_kv and its state dict. tests/test_quantized_static_mha_torch_parity.py compares the
integers with PyTorch's."""

import copy
import io

import numpy as np
import pytest

import ember
import ember.ao.quantization as tq
import ember.nn as nn
from ember.ao.nn import quantizable as nnqa
from ember.ao.nn import quantized as nnq

RANGES = {"quint8": (0, 255, np.uint8), "qint8": (-128, 127, np.int8), "qint32": (-1000, 1000, np.int32)}


def _quantized(codes, scale, zero_point):
    return ember._make_per_tensor_quantized_tensor(ember.tensor(codes), scale, zero_point)


def _trailing_mean(codes, axes):
    """The fast path's reference: the integers' exact mean over trailing axes, rounded half to even
    (exact here: no float32 quotient of these sums lands on a half it is not)."""
    return np.rint(codes.astype(np.float64).mean(axis=axes)).astype(np.int64)


def _value_mean(codes, scale, zero_point, axes, lo, hi):
    """The dequantize -> mean -> quantize reference in float64 (the scale read as float32)."""
    s = np.float64(np.float32(scale))
    mean = ((codes.astype(np.float64) - zero_point) * s).mean(axis=axes)
    return np.clip(np.rint(mean / s) + zero_point, lo, hi).astype(np.int64), mean / s


def _assert_value_mean(y, codes, scale, zero_point, axes, lo, hi):
    """Equal to the float64 reference, except where its value is within float32 rounding of a half
    (PyTorch's float32 arithmetic may round such a tie either way): there, one step at most."""
    expected, exact = _value_mean(codes, scale, zero_point, axes, lo, hi)
    got = y.int_repr().numpy().astype(np.int64).reshape(expected.shape)  # keepdim too
    near_tie = np.abs(np.abs(exact - np.floor(exact)) - 0.5) < 1e-4
    np.testing.assert_array_equal(got[~near_tie], expected[~near_tie])
    assert np.all(np.abs(got - expected) <= 1)


@pytest.mark.parametrize("dname", ["quint8", "qint8", "qint32"])
def test_quantized_mean_against_reference(dname):
    lo, hi, np_dtype = RANGES[dname]
    rng = np.random.default_rng(3)
    for width in (2, 7, 256):
        base = int(rng.integers(lo, hi - min(width, hi - lo) + 1))
        codes = rng.integers(base, base + min(width, hi - lo), (3, 4, 5, 6)).astype(np_dtype)
        scale, zero_point = float(rng.uniform(1e-3, 0.5)), int(rng.integers(max(lo, -50), min(hi, 50) + 1))
        x = _quantized(codes, scale, zero_point)
        # trailing dims of a contiguous tensor: the integers' mean
        for dims, axes in (((3,), 3), ((-1,), 3), ((2, 3), (2, 3)), ((1, 2, 3), (1, 2, 3))):
            y = x.mean(dims)
            assert (y.dtype, y.q_scale(), y.q_zero_point()) == (x.dtype, scale, zero_point)
            np.testing.assert_array_equal(y.int_repr().numpy(), _trailing_mean(codes, axes))
        np.testing.assert_array_equal(x.mean().int_repr().numpy(), _trailing_mean(codes, None))
        np.testing.assert_array_equal(x.mean(()).int_repr().numpy(), _trailing_mean(codes, None))
        assert x.mean(3, keepdim=True).shape == (3, 4, 5, 1) and x.mean((2, 3), keepdim=True).shape == (3, 4, 1, 1)
        # other dims, and any non-contiguous input: dequantize -> mean -> quantize
        for dims in ((1,), (0,), (1, 3), (0, 2)):
            y = ember.mean(x, list(dims))
            assert (y.q_scale(), y.q_zero_point()) == (scale, zero_point)
            _assert_value_mean(y, codes, scale, zero_point, dims, lo, hi)
        view = x.transpose(1, 3)
        assert not view.is_contiguous()
        _assert_value_mean(view.mean(3), codes.transpose(0, 3, 2, 1), scale, zero_point, 3, lo, hi)
        _assert_value_mean(view.mean(1, keepdim=True), codes.transpose(0, 3, 2, 1), scale, zero_point, 1, lo, hi)
        assert view.mean(1, keepdim=True).shape == (3, 1, 5, 4)


def test_quantized_mean_zero_dim_and_empty():
    x = _quantized(np.array(200, dtype=np.uint8), 0.1, 7)
    for y in (x.mean(), x.mean(0), x.mean(-1, keepdim=True)):
        assert y.dim() == 0 and int(y.int_repr()) == 200 and (y.q_scale(), y.q_zero_point()) == (0.1, 7)
    codes = np.zeros((0, 3), dtype=np.uint8)
    empty = _quantized(codes, 0.1, 7)
    assert empty.mean(0).shape == (3,) and empty.mean(1).shape == (0,)
    # an empty group: 0 / 0 stored as PyTorch's x86 build stores it (0 on the integer path; the
    # value path quantizes NaN, which gives the largest code)
    np.testing.assert_array_equal(empty.mean(0).int_repr().numpy(), [255, 255, 255])
    np.testing.assert_array_equal(_quantized(np.zeros((3, 0), np.uint8), 0.1, 7).mean(1).int_repr().numpy(), [0] * 3)


def test_quantized_mean_refusals():
    x = ember.quantize_per_tensor(ember.randn(2, 3), 0.1, 3, ember.quint8)
    per_channel = ember.quantize_per_channel(ember.randn(2, 3), ember.tensor([0.1, 0.2]), ember.tensor([0, 1]), 0,
                                             ember.quint8)
    with pytest.raises(NotImplementedError, match=r"\[mean\] expects a per-tensor quantized tensor"):
        per_channel.mean(1)
    with pytest.raises(RuntimeError, match=r"\[mean\] the mean of a quantized tensor keeps its dtype \(ember.quint8\), "
                                           r"but dtype ember.float32 was given"):
        x.mean(1, dtype=ember.float32)
    with pytest.raises(RuntimeError, match="keeps its dtype"):
        x.mean(1, dtype=ember.qint8)
    assert x.mean(1, dtype=ember.quint8).dtype == ember.quint8
    with pytest.raises(IndexError, match="Dimension out of range"):
        x.mean(2)
    with pytest.raises(RuntimeError, match=r"\[mean\] dim 1 appears multiple times in the list of dims"):
        x.mean((1, -1))


def test_quantized_repeat():
    rng = np.random.default_rng(5)
    codes = rng.integers(0, 256, (2, 3)).astype(np.uint8)
    x = _quantized(codes, 0.1, 3)
    for reps in ((1, 2), (2, 1, 1), (3, 2), (1, 1), (0, 2)):
        y = x.repeat(*reps)
        assert (y.dtype, y.q_scale(), y.q_zero_point()) == (ember.quint8, 0.1, 3)
        np.testing.assert_array_equal(y.int_repr().numpy(), np.tile(codes, reps))
    np.testing.assert_array_equal(x.t().repeat(2, 2).int_repr().numpy(), np.tile(codes.T, (2, 2)))
    np.testing.assert_array_equal(x[1, 1].repeat(2, 2).int_repr().numpy(), np.full((2, 2), codes[1, 1]))
    np.testing.assert_array_equal(x[:0].repeat(2, 2).int_repr().numpy(), np.zeros((0, 6), np.uint8))
    wide = _quantized(np.arange(6, dtype=np.int32).reshape(2, 3) - 3, 0.2, 0)
    np.testing.assert_array_equal(wide.repeat(2, 1, 1).int_repr().numpy(),
                                  np.tile(np.arange(6).reshape(2, 3) - 3, (2, 1, 1)))
    assert wide.repeat(2, 1).dtype == ember.qint32
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims can not be smaller"):
        x.repeat(2)
    per_channel = ember.quantize_per_channel(ember.randn(2, 3), ember.tensor([0.1, 0.2]), ember.tensor([0, 1]), 0,
                                             ember.quint8)
    with pytest.raises(NotImplementedError, match=r"\[repeat\] expects a per-tensor quantized tensor"):
        per_channel.repeat(1, 2)


# ---------------------------------------------------------------- the quantized MultiheadAttention


class A(nn.Module):
    def __init__(self, **kwargs):
        super().__init__()
        kwargs.setdefault("embed_dim", 8)
        kwargs.setdefault("num_heads", 2)
        self.quant_q, self.quant_k, self.quant_v = tq.QuantStub(), tq.QuantStub(), tq.QuantStub()
        self.mha = nn.MultiheadAttention(**kwargs)
        self.dq = tq.DeQuantStub()

    def stubs(self, query, key, value):
        return self.quant_q(query), self.quant_k(key), self.quant_v(value)

    def forward(self, query, key, value, **kwargs):
        out, weights = self.mha(*self.stubs(query, key, value), **kwargs)
        return self.dq(out), weights


def _inputs(seed, L=5, S=4, N=3, E=8, kdim=None, vdim=None, batch_first=False):
    ember.manual_seed(seed)
    shape = (lambda n: (N, n)) if batch_first else (lambda n: (n, N))
    return (ember.randn(*shape(L), E), ember.randn(*shape(S), kdim or E), ember.randn(*shape(S), vdim or E))


def _converted(seed, qconfig=None, **kwargs):
    """The float model, the prepared one calibrated on _inputs(100) .. _inputs(103) (the tests
    feed those, so no value lies beyond an observed range), and the converted one."""
    ember.manual_seed(seed)
    m = A(**kwargs).eval()
    m.qconfig = qconfig or tq.default_qconfig
    prepared = tq.prepare(m)
    e = m.mha.embed_dim
    for i in range(4):
        prepared(*_inputs(100 + i, E=e, kdim=kwargs.get("kdim"), vdim=kwargs.get("vdim"),
                          batch_first=kwargs.get("batch_first", False)))
    return m, prepared, tq.convert(prepared)


def test_static_quantized_mha_end_to_end():
    m, prepared, q = _converted(0)
    assert type(m.mha) is nn.MultiheadAttention and type(prepared.mha) is nnqa.MultiheadAttention
    assert type(q.mha) is nnq.MultiheadAttention and q.mha._get_name() == "QuantizedMultiheadAttention"
    assert nnq.MultiheadAttention is ember.nn.quantized.MultiheadAttention
    for name in ("linear_Q", "linear_K", "linear_V", "out_proj"):
        assert type(getattr(q.mha, name)) is nnq.Linear
    assert type(q.mha.q_scaling_product) is nnq.QFunctional and type(q.mha.quant_attn_output) is nnq.Quantize
    assert type(q.mha.dequant_q) is nnq.DeQuantize and not hasattr(q.mha, "qconfig")
    assert not hasattr(q.mha, "in_proj_weight") and not hasattr(q.mha, "in_proj_bias")
    assert "QuantizedMultiheadAttention" in repr(q)
    data = _inputs(100)
    y, w = q(*data)
    fy, fw = m(*data)
    assert y.shape == (5, 3, 8) and y.dtype == ember.float32
    # within the quantization error of the float model (8-bit steps through three projections)
    np.testing.assert_allclose(y.numpy(), fy.detach().numpy(), atol=0.06)
    assert w.dtype == ember.quint8 and w.shape == (3, 5, 4)
    step = w.q_scale()
    np.testing.assert_allclose(w.dequantize().numpy(), fw.detach().numpy(), atol=6 * step)
    # the output carries out_proj's parameters, the weights quant_attn_output_weights'
    qo, qw = q.mha(*q.stubs(*data))
    assert (qo.q_scale(), qo.q_zero_point()) == (float(q.mha.out_proj.scale), int(q.mha.out_proj.zero_point))
    assert (qw.q_scale(), qw.q_zero_point()) == (float(q.mha.quant_attn_output_weights.scale),
                                                 int(q.mha.quant_attn_output_weights.zero_point))
    np.testing.assert_array_equal(y.numpy(), qo.dequantize().numpy())


def test_static_quantized_mha_weights_options():
    _, _, q = _converted(1)
    inputs = q.stubs(*_inputs(101))
    out, weights = q.mha(*inputs)
    out2, none = q.mha(*inputs, need_weights=False)
    assert none is None
    np.testing.assert_array_equal(out2.int_repr().numpy(), out.int_repr().numpy())
    _, per_head = q.mha(*inputs, average_attn_weights=False)
    assert per_head.shape == (3, 2, 5, 4) and per_head.dtype == ember.quint8
    # the average is the quantized mean over the heads of the per-head weights: the integers'
    # float64 mean (their zero point is 0: a softmax is not negative)
    assert per_head.q_zero_point() == 0
    codes = per_head.int_repr().numpy()
    _assert_value_mean(weights, codes, per_head.q_scale(), 0, 1, 0, 255)
    np.testing.assert_array_equal(weights.int_repr().numpy(), per_head.mean(1).int_repr().numpy())


def test_static_quantized_mha_masks():
    _, _, q = _converted(2)
    inputs = q.stubs(*_inputs(102))
    rng = np.random.default_rng(0)
    mask = rng.random((5, 4)) < 0.4
    mask[:, 0] = False
    bool_out, bool_w = q.mha(*inputs, attn_mask=ember.tensor(mask), average_attn_weights=False)
    assert np.all(bool_w.int_repr().numpy()[:, :, mask] == 0)
    # a float mask of -inf where the bool one is True computes the same integers
    float_mask = ember.tensor(np.where(mask, -np.inf, 0.0).astype(np.float32))
    float_out, float_w = q.mha(*inputs, attn_mask=float_mask, average_attn_weights=False)
    np.testing.assert_array_equal(float_out.int_repr().numpy(), bool_out.int_repr().numpy())
    np.testing.assert_array_equal(float_w.int_repr().numpy(), bool_w.int_repr().numpy())
    # a 3-D float mask (one per batch and head)
    three_d = ember.tensor(np.broadcast_to(np.where(mask, -np.inf, 0.0), (6, 5, 4)).astype(np.float32).copy())
    _, w3 = q.mha(*inputs, attn_mask=three_d, average_attn_weights=False)
    np.testing.assert_array_equal(w3.int_repr().numpy(), bool_w.int_repr().numpy())
    # key_padding_mask: the padded keys get no weight in that batch entry only
    pad = np.zeros((3, 4), dtype=bool)
    pad[0, 3] = pad[2, 1] = True
    _, w = q.mha(*inputs, key_padding_mask=ember.tensor(pad), average_attn_weights=False)
    codes = w.int_repr().numpy()
    assert np.all(codes[0, :, :, 3] == 0) and np.all(codes[2, :, :, 1] == 0)
    assert codes[1, :, :, 3].any() and codes[1, :, :, 1].any()
    with pytest.raises(RuntimeError, match="The size of the 2D attn_mask is not correct"):
        q.mha(*inputs, attn_mask=ember.tensor(mask[:, :3]))


def test_static_quantized_mha_batch_first():
    """batch_first computes what the sequence-first module computes on transposed inputs (as
    nn.MultiheadAttention does; PyTorch's quantized module mixes the heads here, see the parity
    test's docstring)."""
    _, _, q = _converted(3, num_heads=4)
    data = _inputs(103)
    seq_out, seq_w = q.mha(*q.stubs(*data))
    q.mha.batch_first = True
    out, w = q.mha(*q.stubs(*(t.transpose(0, 1).contiguous() for t in data)))
    assert out.shape == (3, 5, 8)
    np.testing.assert_array_equal(out.int_repr().numpy(), seq_out.int_repr().numpy().transpose(1, 0, 2))
    np.testing.assert_array_equal(w.int_repr().numpy(), seq_w.int_repr().numpy())
    # converted from a batch_first float module, too
    m, _, qb = _converted(4, batch_first=True)
    batch_data = _inputs(100, batch_first=True)
    y, _ = qb(*batch_data)
    assert y.shape == (3, 5, 8)
    np.testing.assert_allclose(y.numpy(), m(*batch_data)[0].detach().numpy(), atol=0.06)


def test_static_quantized_mha_cross_attention_and_bias_kv():
    m, _, q = _converted(5, kdim=6, vdim=5, bias=False)
    data = _inputs(101, kdim=6, vdim=5)
    y, w = q(*data)
    np.testing.assert_allclose(y.numpy(), m(*data)[0].detach().numpy(), atol=0.06)
    assert q.mha.linear_K.in_features == 6 and q.mha.linear_V.in_features == 5 and q.mha.linear_Q.bias() is None
    # PyTorch keeps the (unused) separate projection weights as parameters
    assert {"mha.q_proj_weight", "mha.k_proj_weight", "mha.v_proj_weight"} <= set(q.state_dict())

    m, _, q = _converted(6, add_bias_kv=True, add_zero_attn=True)
    bias_k, bias_v = q.mha.bias_k, q.mha.bias_v
    assert bias_k.dtype == ember.quint8 and bias_v.dtype == ember.quint8
    assert "bias_k" not in q.mha._parameters and not any("bias_" in key for key in q.state_dict())
    # bias_k over its own range; bias_v with the parameters chosen over bias_k's quantized values
    ref_k = ember.quantize_per_tensor_dynamic(m.mha.bias_k.detach(), ember.quint8, False)
    assert (bias_k.q_scale(), bias_k.q_zero_point()) == (ref_k.q_scale(), ref_k.q_zero_point())
    np.testing.assert_array_equal(bias_k.int_repr().numpy(), ref_k.int_repr().numpy())
    chosen = ember.quantize_per_tensor_dynamic(bias_k.dequantize(), ember.quint8, False)
    assert (bias_v.q_scale(), bias_v.q_zero_point()) == (chosen.q_scale(), chosen.q_zero_point())
    data = _inputs(102)
    y, w = q(*data)
    assert w.shape == (3, 5, 6)  # four keys, bias_k, and the zero key
    np.testing.assert_allclose(y.numpy(), m(*data)[0].detach().numpy(), atol=0.06)
    # dequantize(): the float module the quantized one approximates
    fp = q.mha.dequantize()
    assert type(fp) is nn.MultiheadAttention
    fy, _ = fp(*data)
    np.testing.assert_allclose(fy.detach().numpy(), m.mha(*data)[0].detach().numpy(), atol=0.03)


def test_static_quantized_mha_state_dict_round_trip():
    _, _, a = _converted(0)
    _, _, b = _converted(1)
    data = _inputs(103)
    assert not np.array_equal(a(*data)[0].numpy(), b(*data)[0].numpy())
    state = a.state_dict()
    assert "mha.linear_Q._packed_params._packed_params" in state and "mha.quant_attn_output_weights.scale" in state
    assert not any("in_proj" in key for key in state)
    b.load_state_dict(state)
    np.testing.assert_array_equal(b(*data)[0].numpy(), a(*data)[0].numpy())
    np.testing.assert_array_equal(b(*data)[1].int_repr().numpy(), a(*data)[1].int_repr().numpy())
    buffer = io.BytesIO()
    ember.save(state, buffer)
    buffer.seek(0)
    _, _, c = _converted(2)
    c.load_state_dict(ember.load(buffer))
    np.testing.assert_array_equal(c(*data)[0].numpy(), a(*data)[0].numpy())
    np.testing.assert_array_equal(copy.deepcopy(a)(*data)[0].numpy(), a(*data)[0].numpy())


def test_quantized_mha_from_float_and_from_observed():
    with pytest.raises(NotImplementedError, match="non-observed MHA module"):
        nnq.MultiheadAttention.from_float(nn.MultiheadAttention(8, 2))
    with pytest.raises(AssertionError, match="Expected module type"):
        nnq.MultiheadAttention.from_observed(nn.MultiheadAttention(8, 2))
    with pytest.raises(NotImplementedError, match="trying to prepare an MHA module"):
        nnqa.MultiheadAttention.from_observed(nn.MultiheadAttention(8, 2))
    # from_observed converts a copy
    mha = nn.MultiheadAttention(8, 2).eval()
    mha.qconfig = tq.default_qconfig
    observed = nnqa.MultiheadAttention.from_float(mha)
    x = ember.randn(4, 2, 8)
    observed(x, x, x)
    quantized = nnq.MultiheadAttention.from_observed(observed)
    assert type(quantized) is nnq.MultiheadAttention and type(observed) is nnqa.MultiheadAttention
    assert type(observed.linear_Q) is nn.Linear and hasattr(observed, "in_proj_weight")
    assert not hasattr(quantized, "qconfig")
    qx = ember.quantize_per_tensor(x, 0.05, 128, ember.quint8)
    y, w = quantized(qx, qx, qx)
    assert y.dtype == ember.quint8 and y.shape == (4, 2, 8) and w.shape == (2, 4, 4)


def test_convert_without_the_mha_entry_still_refuses():
    """A custom convert config that names no quantized class for the observed MultiheadAttention."""
    _, prepared, _ = _converted(0)
    config = {"observed_to_quantized_custom_module_class": {nnqa.LSTM: nnq.LSTM}}
    with pytest.raises(NotImplementedError, match=r"no quantized form is named for an observed "
                                                  r"QuantizableMultiheadAttention: add \{MultiheadAttention: "):
        tq.convert(prepared, convert_custom_config_dict=config)
