"""ember.ao.nn.quantized.functional and the quantized ELU / LeakyReLU / Sigmoid / Softmax / PReLU /
LayerNorm / GroupNorm / InstanceNorm modules against float64 NumPy references of their arithmetic.

Where the kernel rounds a float32 value, the reference's float64 value may sit within float32
rounding of a half step: there codes may be one apart (and only there); the integer-exact
operations (clamp, max pooling, nearest and bilinear resampling, PReLU) are compared exactly.
test_quantized_more_modules_torch_parity.py compares the codes with PyTorch's."""

import warnings

import numpy as np
import pytest

import ember
import ember.ao.nn.quantized as nnq
import ember.ao.nn.quantized.functional as qF
from ember import nn
from ember.ao import quantization as tq

rng = np.random.default_rng(7)
RANGES = {"quint8": (0, 255), "qint8": (-128, 127)}


def arr(*shape, scale=1.0):
    return ember.tensor((rng.normal(size=shape) * scale).astype(np.float32))


def quant(*shape, scale=0.05, zero_point=128, dtype=None, spread=3.0):
    return ember.quantize_per_tensor(arr(*shape, scale=spread), scale, zero_point, dtype or ember.quint8)


def deq(q):
    return (q.int_repr().numpy().astype(np.float64) - q.q_zero_point()) * np.float64(np.float32(q.q_scale()))


def check_codes(q, value, scale, zero_point, lo=0, hi=255, out_scale=None):
    """q's codes against round_half_even(value / scale) + zero_point in float64: equal, or one
    apart where value / scale is within float32 rounding of a half step. q's scale must be
    out_scale (scale when not given; float32 buffers round it to float32) and its zero point
    zero_point."""
    assert q.is_quantized
    assert q.q_scale() == pytest.approx(scale if out_scale is None else out_scale, rel=1e-7)
    assert q.q_zero_point() == zero_point
    t = np.asarray(value, dtype=np.float64) / np.float64(np.float32(scale))
    expected = np.clip(np.rint(t) + zero_point, lo, hi)
    codes = q.int_repr().numpy().astype(np.float64)
    assert codes.shape == expected.shape
    diff = np.abs(codes - expected)
    assert diff.size == 0 or diff.max() <= 1
    near_half = np.abs(np.abs(t - np.floor(t)) - 0.5) < 1e-4 * np.maximum(1.0, np.abs(t))
    assert not np.any(diff[~near_half]), np.argwhere(diff * ~near_half)[:5]


def elu_ref(x, alpha):
    return np.where(x > 0, x, alpha * np.expm1(x))


# ----- functional: elementwise -----

ELEMENTWISE = [
    ("elu", lambda q: qF.elu(q, 0.04, 100, 1.3), lambda x: elu_ref(x, 1.3), 0.04, 100),
    ("celu", lambda q: qF.celu(q, 0.03, 90, 0.7), lambda x: np.maximum(x, 0) + np.minimum(0, 0.7 * np.expm1(x / 0.7)),
     0.03, 90),
    ("hardswish", lambda q: qF.hardswish(q, 0.02, 40), lambda x: x * np.clip(x + 3, 0, 6) / 6, 0.02, 40),
    ("leaky_relu", lambda q: qF.leaky_relu(q, 0.2, scale=0.021, zero_point=77), lambda x: np.where(x > 0, x, 0.2 * x),
     0.021, 77),
    ("hardsigmoid", lambda q: qF.hardsigmoid(q), lambda x: np.clip(x + 3, 0, 6) / 6, 1 / 256, 0),
]


@pytest.mark.parametrize("name,fn,ref,scale,zp", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "empty"])
def test_elementwise_functions(name, fn, ref, scale, zp, layout):
    q = quant(4, 6, 9)
    if layout == "transposed":
        q = q.transpose(1, 2)
        assert not q.is_contiguous()
    elif layout == "empty":
        q = quant(0, 6, 9)
    out = fn(q)
    assert tuple(out.shape) == tuple(q.shape) and out.dtype == ember.quint8
    check_codes(out, ref(deq(q)), scale, zp)


def test_leaky_relu_keeps_input_parameters_no_inplace():
    q = quant(3, 17, scale=0.03, zero_point=100)
    out = qF.leaky_relu(q, 0.13)
    check_codes(out, np.where(deq(q) > 0, deq(q), 0.13 * deq(q)), 0.03, 100)
    for fn, name in ((lambda: qF.leaky_relu(q, 0.13, inplace=True), "leaky_relu"),
                     (lambda: qF.hardtanh(q, inplace=True), "hardtanh"),
                     (lambda: qF.hardsigmoid(q, inplace=True), "hardsigmoid")):
        with pytest.raises(NotImplementedError, match=rf"quantized.{name}\(inplace=True\): Ember's quantized tensors"):
            fn()


def test_hardsigmoid_qint8_output_parameters():
    q = quant(5, 7, scale=0.04, zero_point=-3, dtype=ember.qint8)
    out = qF.hardsigmoid(q)
    check_codes(out, np.clip(deq(q) + 3, 0, 6) / 6, 1 / 256, -128, *RANGES["qint8"])


def test_threshold_clamp_hardtanh():
    q = quant(4, 11, scale=0.05, zero_point=120)
    x = deq(q)
    check_codes(qF.threshold(q, 0.1, -0.37), np.where(x > np.float32(0.1), x, np.float32(-0.37)), 0.05, 120)
    # clamp works in codes: the bounds quantized, the codes clamped between them
    codes = q.int_repr().numpy().astype(np.int64)
    lo, hi = 120 + round(-0.7 / 0.05), 120 + round(1.3 / 0.05)
    out = qF.clamp(q.t(), -0.7, 1.3)
    np.testing.assert_array_equal(out.int_repr().numpy(), np.clip(codes, lo, hi).T)
    assert (out.q_scale(), out.q_zero_point()) == (0.05, 120)
    out = qF.hardtanh(q, -0.5, 0.8)
    np.testing.assert_array_equal(out.int_repr().numpy(), np.clip(codes, 110, 136))


# ----- functional: pooling, resampling -----

def test_pooling_functions():
    q = quant(2, 3, 8, 10, scale=0.05, zero_point=130)
    x = deq(q)
    out = qF.avg_pool2d(q, 2)
    check_codes(out, x.reshape(2, 3, 4, 2, 5, 2).mean(axis=(3, 5)), 0.05, 130)
    out = qF.adaptive_avg_pool2d(q.transpose(2, 3), (5, 4))
    check_codes(out, x.transpose(0, 1, 3, 2).reshape(2, 3, 5, 2, 4, 2).mean(axis=(3, 5)), 0.05, 130)
    q3 = q.reshape(2, 3, 4, 4, 5)
    check_codes(qF.avg_pool3d(q3, (2, 2, 1)), deq(q3).reshape(2, 3, 2, 2, 2, 2, 5).mean(axis=(3, 5)), 0.05, 130)
    check_codes(qF.adaptive_avg_pool3d(q3, (1, 2, 5)), deq(q3).reshape(2, 3, 1, 4, 2, 2, 5).mean(axis=(3, 5)),
                0.05, 130)
    codes = q.int_repr().numpy()
    np.testing.assert_array_equal(qF.max_pool2d(q, 2).int_repr().numpy(),
                                  codes.reshape(2, 3, 4, 2, 5, 2).max(axis=(3, 5)))
    q1 = q.reshape(6, 8, 10)
    np.testing.assert_array_equal(qF.max_pool1d(q1, 2).int_repr().numpy(), codes.reshape(6, 8, 5, 2).max(axis=3))


def nearest_ref(codes, out_h, out_w, scale_h=None, scale_w=None):
    def index(n_in, n_out, factor):
        s = np.float32(1.0 / factor) if factor else np.float32(n_in) / np.float32(n_out)
        return np.minimum(np.floor(np.arange(n_out, dtype=np.float32) * s).astype(np.int64), n_in - 1)
    return codes[:, :, index(codes.shape[2], out_h, scale_h)][:, :, :, index(codes.shape[3], out_w, scale_w)]


def bilinear_ref(codes, out_h, out_w, align_corners, zp):
    """float64 bilinear mix of the codes (source positions as PyTorch's), rounded half to even."""
    def weights(n_in, n_out):
        d = np.arange(n_out, dtype=np.float64)
        if align_corners:
            src = d * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
        else:
            src = np.maximum((d + 0.5) * (n_in / n_out) - 0.5, 0.0)
        low = np.floor(src).astype(np.int64)
        return low, np.minimum(low + 1, n_in - 1), src - low
    hl, hh, hw = weights(codes.shape[2], out_h)
    wl, wh, ww = weights(codes.shape[3], out_w)
    c = codes.astype(np.float64)
    top = c[:, :, hl][:, :, :, wl] * (1 - ww) + c[:, :, hl][:, :, :, wh] * ww
    bottom = c[:, :, hh][:, :, :, wl] * (1 - ww) + c[:, :, hh][:, :, :, wh] * ww
    return top * (1 - hw)[:, None] + bottom * hw[:, None] - zp


def test_interpolate_nearest_copies_codes():
    q = quant(2, 3, 5, 7, scale=0.04, zero_point=7)
    codes = q.int_repr().numpy()
    for kwargs, (h, w), factors in (({"scale_factor": 2}, (10, 14), (2, 2)), ({"size": (3, 11)}, (3, 11), (None, None)),
                                    ({"scale_factor": 1.7}, (8, 11), (1.7, 1.7))):
        out = qF.interpolate(q, **kwargs)
        assert (out.q_scale(), out.q_zero_point()) == (0.04, 7)
        np.testing.assert_array_equal(out.int_repr().numpy(), nearest_ref(codes, h, w, *factors))
    with pytest.warns(UserWarning, match="upsample_nearest is deprecated"):
        out = qF.upsample_nearest(q.transpose(2, 3), size=(9, 4))
    np.testing.assert_array_equal(out.int_repr().numpy(), nearest_ref(codes.transpose(0, 1, 3, 2), 9, 4))
    empty = qF.interpolate(quant(0, 3, 5, 7), scale_factor=2)
    assert tuple(empty.shape) == (0, 3, 10, 14)


@pytest.mark.parametrize("align_corners", [False, True])
def test_interpolate_bilinear(align_corners):
    q = quant(2, 3, 5, 7, scale=0.04, zero_point=7)
    out = qF.interpolate(q, size=(9, 4), mode="bilinear", align_corners=align_corners)
    assert tuple(out.shape) == (2, 3, 9, 4)
    check_codes(out, bilinear_ref(q.int_repr().numpy(), 9, 4, align_corners, 7), 1.0, 7, out_scale=0.04)
    with pytest.warns(UserWarning, match="upsample_bilinear is deprecated"):
        up = qF.upsample_bilinear(q, scale_factor=2)
    check_codes(up, bilinear_ref(q.int_repr().numpy(), 10, 14, True, 7), 1.0, 7, out_scale=0.04)


# ----- functional: linear, conv -----

def test_linear_and_conv_functions():
    x = quant(3, 8, scale=0.05, zero_point=120)
    w = ember.quantize_per_tensor(arr(5, 8, scale=0.3), 0.01, 0, ember.qint8)
    b = arr(5)
    ref = deq(x) @ deq(w).T + b.numpy().astype(np.float64)
    check_codes(qF.linear(x, w, b, 0.1, 60), ref, 0.1, 60)
    check_codes(qF.linear(x, w), deq(x) @ deq(w).T, 0.05, 120)  # the input's parameters
    xc = quant(2, 4, 9, scale=0.05, zero_point=120)
    wc = ember.quantize_per_tensor(arr(6, 2, 3, scale=0.3), 0.01, 0, ember.qint8)
    bc = arr(6)
    out = qF.conv1d(xc, wc, bc, stride=2, padding=1, groups=2, scale=0.08, zero_point=70)
    xp = np.pad(deq(xc), ((0, 0), (0, 0), (1, 1)))
    ref = np.zeros((2, 6, 5))
    for o in range(6):
        g = o // 3
        for t in range(5):
            ref[:, o, t] = (xp[:, 2 * g:2 * g + 2, 2 * t:2 * t + 3] * deq(wc)[o]).sum(axis=(1, 2)) + bc.numpy()[o]
    check_codes(out, ref, 0.08, 70)
    x2 = quant(1, 2, 4, 5, scale=0.05, zero_point=120)
    w2 = ember.quantize_per_tensor(arr(3, 2, 2, 2, scale=0.3), 0.01, 0, ember.qint8)
    out = qF.conv2d(x2, w2, None, scale=0.08, zero_point=70)
    ref = np.zeros((1, 3, 3, 4))
    for i in range(3):
        for j in range(4):
            ref[0, :, i, j] = (deq(x2)[0, None, :, i:i + 2, j:j + 2] * deq(w2)).sum(axis=(1, 2, 3))
    check_codes(out, ref, 0.08, 70)
    w3 = ember.quantize_per_tensor(arr(3, 2, 1, 2, 2, scale=0.3), 0.01, 0, ember.qint8)
    out3 = qF.conv3d(x2.reshape(1, 2, 1, 4, 5), w3, None, scale=0.08, zero_point=70)
    assert tuple(out3.shape) == (1, 3, 1, 3, 4)


# ----- modules -----

def test_activation_modules():
    q = quant(4, 6, 5, 8, scale=0.05, zero_point=128).transpose(2, 3)
    x = deq(q)
    check_codes(nnq.ELU(0.04, 100, 1.3)(q), elu_ref(x, 1.3), 0.04, 100)
    check_codes(nnq.LeakyReLU(0.021, 77, 0.2)(q), np.where(x > 0, x, 0.2 * x), 0.021, 77)
    check_codes(nnq.Sigmoid(1 / 256, 0)(q), 1 / (1 + np.exp(-x)), 1 / 256, 0)
    for dim in (1, 3):
        e = np.exp(x - x.max(axis=dim, keepdims=True))
        check_codes(nnq.Softmax(dim, 1 / 256, 0)(q), e / e.sum(axis=dim, keepdims=True), 1 / 256, 0)
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        implicit = nnq.Softmax(None, 1 / 256, 0)(q)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    check_codes(implicit, e / e.sum(axis=1, keepdims=True), 1 / 256, 0)
    assert tuple(nnq.ELU(0.04, 100)(quant(0, 6)).shape) == (0, 6)


def prelu_ref(q, w, out_scale, out_zp):
    """PyTorch's integer PReLU: the positive side scaled by the weight's code for 1.0."""
    f32 = np.float32
    d = q.int_repr().numpy().astype(np.int64) - q.q_zero_point()
    w_zp = w.q_zero_point()
    one = min(max(int(np.rint(1.0 / f32(w.q_scale()))) + w_zp, 0), 255)
    wc = w.int_repr().numpy().astype(np.int64)
    wc = wc.reshape([1, -1] + [1] * (q.dim() - 2)) if wc.size > 1 else wc
    acc = np.maximum(d, 0) * (one - w_zp) + np.minimum(d, 0) * (wc - w_zp)
    m = f32(f32(q.q_scale()) * f32(w.q_scale())) * f32(f32(1) / f32(out_scale))
    return np.clip(np.rint(acc.astype(f32) * m) + out_zp, 0, 255)


@pytest.mark.parametrize("channels", [1, 6])
def test_prelu_module(channels):
    q = quant(3, 6, 4, 5, scale=0.05, zero_point=128)
    p = nnq.PReLU(0.02, 90, channels)
    for w_scale in (0.004, 0.01):  # 0.004: the code for 1.0 saturates at 255, as in PyTorch
        w = ember.quantize_per_tensor(arr(channels, scale=0.3), w_scale, 128, ember.quint8)
        p.set_weight(w)
        for x in (q, q.transpose(2, 3)):
            out = p(x)
            np.testing.assert_array_equal(out.int_repr().numpy(), prelu_ref(x, w, 0.02, 90))
            assert (out.q_scale(), out.q_zero_point()) == (0.02, 90)
    w = ember.quantize_per_tensor(arr(channels, scale=0.3), 1 / 128, 0, ember.quint8)
    p.set_weight(w)
    x = deq(q)
    slope = deq(w).reshape([1, -1, 1, 1] if channels > 1 else [1])
    check_codes(p(q), np.where(x > 0, x, x * slope), 0.02, 90)


def layer_norm_ref(x, axes, weight=None, bias=None, eps=1e-5):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if weight is not None:
        y = y * weight + bias
    return y


def test_normalization_modules():
    q = quant(4, 6, 5, 8, scale=0.05, zero_point=128)
    x = deq(q)
    w, b = nn.Parameter(arr(8)), nn.Parameter(arr(8))
    ln = nnq.LayerNorm([8], w, b, 0.03, 120)
    check_codes(ln(q), layer_norm_ref(x, (3,), w.detach().numpy(), b.detach().numpy()), 0.03, 120)
    ln2 = nnq.LayerNorm([8, 5], None, None, 0.03, 120, elementwise_affine=False)
    qt = q.transpose(2, 3)
    check_codes(ln2(qt), layer_norm_ref(deq(qt), (2, 3)), 0.03, 120)
    gw, gb = nn.Parameter(arr(6)), nn.Parameter(arr(6))
    gn = nnq.GroupNorm(3, 6, gw, gb, 0.03, 120)
    grouped = layer_norm_ref(x.reshape(4, 3, 2, 5, 8), (2, 3, 4)).reshape(4, 6, 5, 8)
    check_codes(gn(q), grouped * gw.detach().numpy()[:, None, None] + gb.detach().numpy()[:, None, None], 0.03, 120)
    inorm = nnq.InstanceNorm2d(6, gw, gb, 0.03, 120, affine=True)
    per_channel = layer_norm_ref(x, (2, 3))
    check_codes(inorm(q), per_channel * gw.detach().numpy()[:, None, None] + gb.detach().numpy()[:, None, None],
                0.03, 120)
    check_codes(nnq.InstanceNorm1d(6, None, None, 0.03, 120)(q.reshape(4, 6, 40)),
                layer_norm_ref(x.reshape(4, 6, 40), (2,)), 0.03, 120)
    q3 = q.reshape(4, 6, 5, 2, 4)
    check_codes(nnq.InstanceNorm3d(6, None, None, 0.03, 120)(q3), layer_norm_ref(deq(q3), (2, 3, 4)), 0.03, 120)


def test_reprs_and_state_dict_keys():
    assert repr(nnq.ELU(0.1, 3)) == "QuantizedELU(alpha=1.0)"
    assert repr(nnq.LeakyReLU(0.1, 3, 0.2)) == "QuantizedLeakyReLU(negative_slope=0.2)"
    assert repr(nnq.Softmax(1, 0.1, 3)) == "QuantizedSoftmax(dim=1)"
    assert repr(nnq.PReLU(0.1, 3, 2)) == "QuantizedPReLU()"
    assert repr(nnq.LayerNorm([6], None, None, 1.0, 0)) == \
        "QuantizedLayerNorm((6,), eps=1e-05, elementwise_affine=True, bias=False)"
    assert repr(nnq.GroupNorm(2, 4, None, None, 1.0, 0)) == "QuantizedGroupNorm(2, 4, eps=1e-05, affine=True, bias=False)"
    assert repr(nnq.InstanceNorm1d(4, None, None, 1.0, 0)) == ("QuantizedInstanceNorm1d(4, eps=1e-05, momentum=0.1, "
                                                               "affine=False, bias=False, track_running_stats=False)")
    assert list(nnq.LeakyReLU(0.1, 3).state_dict()) == ["scale", "zero_point"]
    assert list(nnq.PReLU(0.1, 3).state_dict()) == [] and list(nnq.Softmax(1, 0.1, 3).state_dict()) == []


def test_state_dict_round_trip():
    w, b = nn.Parameter(arr(8)), nn.Parameter(arr(8))
    src = nnq.LayerNorm([8], w, b, 0.03, 120)
    state = src.state_dict()
    assert sorted(state) == ["bias", "scale", "weight", "zero_point"]
    dst = nnq.LayerNorm([8], nn.Parameter(arr(8)), nn.Parameter(arr(8)), 1.0, 0)
    dst.load_state_dict(state)
    q = quant(3, 8)
    np.testing.assert_array_equal(dst(q).int_repr().numpy(), src(q).int_repr().numpy())
    assert (float(dst.scale), int(dst.zero_point)) == (pytest.approx(0.03), 120)
    g_src = nnq.GroupNorm(2, 4, nn.Parameter(arr(4)), nn.Parameter(arr(4)), 0.02, 100)
    g_dst = nnq.GroupNorm(2, 4, nn.Parameter(arr(4)), nn.Parameter(arr(4)), 1.0, 0)
    g_dst.load_state_dict(g_src.state_dict())
    q = quant(2, 4, 3)
    np.testing.assert_array_equal(g_dst(q).int_repr().numpy(), g_src(q).int_repr().numpy())
    l_src, l_dst = nnq.LeakyReLU(0.02, 90, 0.3), nnq.LeakyReLU(1.0, 0, 0.3)
    l_dst.load_state_dict(l_src.state_dict())
    np.testing.assert_array_equal(l_dst(q).int_repr().numpy(), l_src(q).int_repr().numpy())


# ----- from_float / convert -----

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.elu = nn.ELU(0.7)
        self.leaky = nn.LeakyReLU(0.1)
        self.prelu = nn.PReLU(4)
        self.gn = nn.GroupNorm(2, 4)
        self.inorm = nn.InstanceNorm2d(4, affine=True)
        self.ln = nn.LayerNorm(6)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        return self.dequant(self.ln(self.inorm(self.gn(self.prelu(self.leaky(self.elu(x)))))))


def test_convert_maps_the_float_modules():
    m = Net().eval()
    with ember.no_grad():
        for _, p in sorted(m.state_dict().items()):
            p.copy_(arr(*p.shape, scale=0.5) + 1.0)
    m.qconfig = tq.default_qconfig
    prepared = tq.prepare(m)
    for _ in range(3):
        prepared(arr(2, 4, 5, 6, scale=2))
    converted = tq.convert(prepared)
    for name, cls in (("elu", nnq.ELU), ("leaky", nnq.LeakyReLU), ("prelu", nnq.PReLU), ("gn", nnq.GroupNorm),
                      ("inorm", nnq.InstanceNorm2d), ("ln", nnq.LayerNorm)):
        assert type(getattr(converted, name)) is cls, name
    # each converted module computes with its observer's parameters
    x = arr(2, 4, 5, 6, scale=2)
    q = converted.quant(x)
    y = converted.elu(q)
    elu_obs = prepared.elu.activation_post_process.calculate_qparams()
    assert (y.q_scale(), y.q_zero_point()) == (float(elu_obs[0]), int(elu_obs[1]))
    check_codes(y, elu_ref(deq(q), 0.7), y.q_scale(), y.q_zero_point())
    # PReLU's weight quantized with the qconfig's weight observer (its dtype qint8 warns as PyTorch)
    assert converted.prelu.weight.dtype == ember.quint8
    out = converted(x)
    assert out.dtype == ember.float32 and tuple(out.shape) == (2, 4, 5, 6)
    assert "QuantizedInstanceNorm2d(4, eps=1e-05, momentum=True, affine=False, bias=True" in repr(converted)


def test_from_float_modules():
    for float_mod, cls, attrs in ((nn.ELU(0.5), nnq.ELU, {"alpha": 0.5}),
                                  (nn.LeakyReLU(0.3), nnq.LeakyReLU, {"negative_slope": 0.3}),
                                  (nn.Sigmoid(), nnq.Sigmoid, {}),
                                  (nn.Softmax(2), nnq.Softmax, {"dim": 2})):
        obs = tq.MinMaxObserver()
        obs(arr(20))
        float_mod.activation_post_process = obs
        scale, zp = obs.calculate_qparams()
        new = cls.from_float(float_mod)
        for key, value in attrs.items():
            assert getattr(new, key) == value
        got = (new.output_scale, new.output_zero_point) if cls is nnq.Sigmoid else (float(new.scale), int(new.zero_point))
        assert got == (float(scale), int(zp))
    with pytest.raises(AttributeError, match="activation_post_process"):
        nnq.ELU.from_float(nn.ELU())
    prelu = nn.PReLU(3)
    prelu.qconfig = tq.default_qconfig
    obs = tq.MinMaxObserver()
    obs(arr(10))
    prelu.activation_post_process = obs
    with pytest.warns(UserWarning, match="PReLU's weight observer should have dtype quint8"):
        q = nnq.PReLU.from_float(prelu)
    assert q.weight.dtype == ember.quint8 and q.num_parameters == 3


# ----- bad inputs -----

def test_bad_inputs():
    f = arr(2, 3, 4, 4)
    q = quant(2, 3, 4, 4)
    for fn, name in ((lambda: qF.avg_pool2d(f, 2), "quantized.avg_pool2d"),
                     (lambda: qF.elu(f, 0.1, 0), "quantized.elu"),
                     (lambda: qF.celu(f, 0.1, 0), "quantized.celu"),
                     (lambda: qF.hardswish(f, 0.1, 0), "quantized.hardswish"),
                     (lambda: qF.clamp(f, 0, 1), "quantized.clamp"),
                     (lambda: qF.interpolate(f, scale_factor=2), "quantized.interpolate"),
                     (lambda: qF.adaptive_avg_pool2d(f, 2), "quantized.functional.adaptive_avg_pool2d")):
        with pytest.raises(ValueError, match=f"Input to '{name}' must be quantized!"):
            fn()
    w = ember.quantize_per_tensor(arr(2, 3, 1, 1), 0.1, 0, ember.qint8)
    with pytest.raises(NotImplementedError, match="Only zero-padding is supported!"):
        qF.conv2d(q, w, None, padding_mode="reflect")
    with pytest.raises(NotImplementedError, match="Only torch.quint8 is supported for activation tensor!"):
        qF.conv2d(quant(2, 3, 4, 4, zero_point=0, dtype=ember.qint8), w, None)
    with pytest.raises(NotImplementedError, match="Only torch.qint8 is supported for weight tensor!"):
        qF.conv2d(q, quant(2, 3, 1, 1), None)
    with pytest.raises(ValueError, match=r"Input shape must be `\(N, C, L\)`!"):
        qF.conv1d(q, w, None)
    with pytest.raises(NotImplementedError, match="return_indices is not yet implemented!"):
        qF.max_pool2d(q, 2, return_indices=True)
    with pytest.raises(ValueError, match="Input to 'threshold' must be specified!"):
        qF.threshold(q, None, 0.0)
    with pytest.raises(ValueError, match="Input to 'value' must be specified!"):
        qF.threshold(q, 0.0, None)
    with pytest.raises(AssertionError, match="Cannot rescale with `inplace`"):
        qF.leaky_relu(q, 0.1, True, 0.1, 0)
    with pytest.raises(NotImplementedError, match="'nearest' and 'bilinear' only"):
        qF.interpolate(q, scale_factor=2, mode="bicubic")
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        qF.interpolate(q)
    with pytest.raises(RuntimeError, match="Found dtype QInt8 but expected QUInt8"):
        p = nnq.PReLU(0.1, 0, 3)
        p.set_weight(ember.quantize_per_tensor(arr(3), 0.1, 0, ember.qint8))
        p(q)
    with pytest.raises(RuntimeError, match="Mismatch of parameter numbers and input channel size"):
        nnq.PReLU(0.1, 0, 5)(q)
    with pytest.raises(RuntimeError, match="quantized::softmax: expected a quantized input"):
        nnq.Softmax(1)(f)
    with pytest.raises(RuntimeError, match="quantized::layer_norm: expected a quantized input"):
        nnq.LayerNorm([4], None, None, 0.1, 0)(f)
    with pytest.raises(TypeError, match="cannot assign"):
        nnq.LayerNorm([4], arr(4), None, 0.1, 0)


def test_legacy_namespace():
    import ember.nn.quantized as legacy
    import ember.nn.quantized.functional as legacy_functional

    assert legacy_functional.elu is qF.elu and legacy.functional is legacy_functional
    assert legacy.ELU is nnq.ELU and "InstanceNorm3d" in legacy.__all__
    assert sorted(qF.__all__) == sorted(["adaptive_avg_pool2d", "adaptive_avg_pool3d", "avg_pool2d", "avg_pool3d",
                                         "celu", "clamp", "conv1d", "conv2d", "conv3d", "elu", "hardsigmoid",
                                         "hardswish", "hardtanh", "interpolate", "leaky_relu", "linear", "max_pool1d",
                                         "max_pool2d", "threshold", "upsample", "upsample_bilinear",
                                         "upsample_nearest"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        qF.interpolate(quant(1, 1, 2, 2), scale_factor=2)
