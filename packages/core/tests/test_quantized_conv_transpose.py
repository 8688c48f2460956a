"""ember.ao.nn.quantized.ConvTranspose1d/2d/3d against an independent NumPy reference: the exact
int64 sums of the transposed convolution, scattered tap by tap (each input position i adds
x[i] * w[tap] at i * stride + tap * dilation - padding), then FBGEMM's requantization in float32
(Note [integer GEMM through float BLAS] in native/src/ops/quantization/quantized_kernels.cpp):
  q = clamp(rint((float(acc) + float(b) / (float(x_s) * float(w_s))) * float(x_s * w_s / out_s)) + out_zp, 0, 255)
compared integer for integer. Also the errors PyTorch raises, the eager prepare / convert path,
the repr and the state dict. test_quantized_conv_transpose_torch_parity.py compares with PyTorch."""

import warnings

import numpy as np
import pytest

import ember
import ember.ao.nn.quantized as nnq
from ember import nn
from ember.ao import quantization as tq

warnings.filterwarnings("ignore")
CLASSES = {1: nnq.ConvTranspose1d, 2: nnq.ConvTranspose2d, 3: nnq.ConvTranspose3d}
FLOAT_CLASSES = {1: nn.ConvTranspose1d, 2: nn.ConvTranspose2d, 3: nn.ConvTranspose3d}


def reference_sums(x, w, stride, padding, output_padding, dilation, groups):
    """The int64 sums of the transposed convolution of centred integers x [N, C, *in] by w
    [C, O / groups, *kernel], scattered one input position and tap at a time (a loop, not a GEMM)."""
    n = x.ndim - 2
    batch, channels, ins = x.shape[0], x.shape[1], x.shape[2:]
    per_group_out, kernel = w.shape[1], w.shape[2:]
    cg = channels // groups
    outs = [(ins[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (kernel[i] - 1) + output_padding[i] + 1
            for i in range(n)]
    acc = np.zeros((batch, per_group_out * groups, *outs), np.int64)
    for c in range(channels):
        g = c // cg
        for pos in np.ndindex(*ins):
            for tap in np.ndindex(*kernel):
                at = [pos[i] * stride[i] + tap[i] * dilation[i] - padding[i] for i in range(n)]
                if all(0 <= at[i] < outs[i] for i in range(n)):
                    index = (slice(None), slice(g * per_group_out, (g + 1) * per_group_out), *at)
                    acc[index] += x[(slice(None), c, *pos)][:, None] * w[(c, slice(None), *tap)][None, :]
    return acc


def reference_requantize(acc, x_scale, w_scale, bias, out_scale, out_zero_point):
    o = acc.shape[1]
    shape = (1, o) + (1,) * (acc.ndim - 2)
    act_times_w = np.float32(x_scale) * np.float32(w_scale)
    raw = acc.astype(np.float32)
    if bias is not None:
        raw = raw + (np.asarray(bias, np.float32) / act_times_w).reshape(shape)
    multiplier = np.float32(x_scale * w_scale / out_scale)
    v = np.clip(raw * multiplier, np.float32(-(2**22)), np.float32(2**22))
    return np.clip(np.rint(v) + np.float32(out_zero_point), 0, 255).astype(np.uint8)


def quantized_input(rng, shape, scale, zero_point):
    ints = rng.integers(0, 256, size=shape).astype(np.uint8)
    return ember._make_per_tensor_quantized_tensor(ember.tensor(ints), scale, zero_point), ints.astype(np.int64)


def quantized_weight(rng, shape, scale, zero_point):
    ints = rng.integers(-128, 128, size=shape).astype(np.int8)
    return ember._make_per_tensor_quantized_tensor(ember.tensor(ints), scale, zero_point), ints.astype(np.int64)


def _t(v, n):
    return tuple(v) if isinstance(v, tuple) else (v,) * n


# n, in, out, groups, kernel, stride, padding, output_padding, dilation, weight zero point, bias, input shape
CASES = [
    (1, 4, 6, 1, 3, 1, 0, 0, 1, 0, True, (2, 9)),
    (1, 4, 6, 2, 3, 2, 1, 1, 1, 3, True, (3, 7)),
    (1, 5, 3, 1, 4, 3, 2, 2, 3, -1, False, (1, 6)),
    (1, 6, 6, 6, 3, 2, 1, 3, 1, 0, True, (2, 5)),  # depthwise; output padding beyond the stride (FBGEMM allows it)
    (2, 4, 6, 2, 3, 2, 1, 1, 1, 0, True, (2, 5, 6)),
    (2, 6, 4, 2, 2, 3, 1, 2, 2, 0, False, (2, 4, 3)),
    (2, 3, 5, 1, (3, 2), (2, 1), (2, 0), (1, 0), (2, 1), 4, True, (1, 5, 6)),
    (2, 4, 4, 4, 3, 1, 3, 0, 1, 0, True, (2, 5, 5)),  # padding beyond dilation * (kernel - 1): the edges cropped
    (2, 8, 8, 1, 1, 1, 0, 0, 1, -2, True, (2, 3, 4)),
    (3, 2, 4, 2, (1, 2, 3), (2, 1, 3), (0, 1, 1), (1, 0, 2), (1, 2, 1), 1, True, (2, 3, 4, 2)),
    (3, 4, 2, 1, 2, 2, 0, 1, 1, 0, False, (1, 2, 3, 3)),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}d-{i}" for i, c in enumerate(CASES)])
def test_integers_equal_reference(case):
    n, c_in, c_out, groups, k, s, p, op, d, w_zp, bias, in_shape = case
    rng = np.random.default_rng(len(in_shape) * 100 + c_in * 10 + c_out)
    kernel, stride, padding, output_padding, dilation = (_t(v, n) for v in (k, s, p, op, d))
    m = CLASSES[n](c_in, c_out, k, stride=s, padding=p, output_padding=op, groups=groups, bias=bias, dilation=d)
    w, w_ints = quantized_weight(rng, (c_in, c_out // groups, *kernel), 0.0037, w_zp)
    b = rng.normal(size=c_out).astype(np.float32) * 2 if bias else None
    m.set_weight_bias(w, None if b is None else ember.tensor(b))
    m.scale, m.zero_point = 0.71, 97
    x, x_ints = quantized_input(rng, (in_shape[0], c_in, *in_shape[1:]), 0.021, 113)
    y = m(x)
    acc = reference_sums(x_ints - 113, w_ints - w_zp, stride, padding, output_padding, dilation, groups)
    expected = reference_requantize(acc, 0.021, 0.0037, b, 0.71, 97)
    assert y.dtype == ember.quint8 and (y.q_scale(), y.q_zero_point()) == (0.71, 97)
    assert tuple(y.shape) == expected.shape
    np.testing.assert_array_equal(y.int_repr().numpy(), expected)


def test_requantize_saturates_and_rounds_half_to_even():
    # a 1x1 kernel on one channel: acc = (x - zp) * w; scales chosen so products land on halves
    m = nnq.ConvTranspose1d(1, 1, 1, bias=False)
    m.set_weight_bias(ember._make_per_tensor_quantized_tensor(ember.tensor(np.array([[[1]]], np.int8)), 0.5, 0),
                      None)
    m.scale, m.zero_point = 1.0, 100
    x_ints = np.array([[[100, 101, 103, 105, 99, 97, 0, 255]]], np.uint8)
    y = m(ember._make_per_tensor_quantized_tensor(ember.tensor(x_ints), 1.0, 100))
    # (x - 100) * 0.5 = 0, 0.5, 1.5, 2.5, -0.5, -1.5, -50, 77.5 -> half to even, + 100
    np.testing.assert_array_equal(y.int_repr().numpy().ravel(), [100, 100, 102, 102, 100, 98, 50, 178])
    m.scale = 0.01  # (x - 100) * 50 + 100: beyond the range, clamped to 0 / 255
    y = m(ember._make_per_tensor_quantized_tensor(ember.tensor(x_ints), 1.0, 100))
    np.testing.assert_array_equal(y.int_repr().numpy().ravel(), [100, 150, 250, 255, 50, 0, 0, 255])


def test_zero_size_batch_and_non_contiguous_input():
    rng = np.random.default_rng(3)
    m = nnq.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    w, w_ints = quantized_weight(rng, (4, 3, 3, 3), 0.004, 0)
    b = rng.normal(size=6).astype(np.float32)
    m.set_weight_bias(w, ember.tensor(b))
    m.scale, m.zero_point = 0.3, 120
    empty, _ = quantized_input(rng, (0, 4, 5, 6), 0.02, 128)
    y = m(empty)
    assert tuple(y.shape) == (0, 6, 10, 12) and y.dtype == ember.quint8
    # a transposed view: the same values as a contiguous copy, the reference on the viewed integers
    x, x_ints = quantized_input(rng, (2, 4, 6, 5), 0.02, 128)
    view = x.transpose(2, 3)
    assert not view.is_contiguous()
    got = m(view).int_repr().numpy()
    acc = reference_sums(x_ints.transpose(0, 1, 3, 2) - 128, w_ints, (2, 2), (1, 1), (1, 1), (1, 1), 2)
    np.testing.assert_array_equal(got, reference_requantize(acc, 0.02, 0.004, b, 0.3, 120))
    np.testing.assert_array_equal(got, m(view.contiguous()).int_repr().numpy())


def test_large_sums_exact():
    # 64 channels x 27 taps of extreme codes: sums past 2^19, depth x 255 x 128 past 2^24 (no float32 GEMM)
    rng = np.random.default_rng(5)
    m = nnq.ConvTranspose3d(64, 2, 3, stride=2)
    w_ints = rng.choice(np.array([-128, 127], np.int8), size=(64, 2, 3, 3, 3))
    m.set_weight_bias(ember._make_per_tensor_quantized_tensor(ember.tensor(w_ints), 1e-4, 0), None)
    m.scale, m.zero_point = 0.05, 128
    x_ints = rng.choice(np.array([0, 255], np.uint8), size=(1, 64, 2, 2, 2))
    y = m(ember._make_per_tensor_quantized_tensor(ember.tensor(x_ints), 0.01, 0))
    acc = reference_sums(x_ints.astype(np.int64), w_ints.astype(np.int64), (2,) * 3, (0,) * 3, (0,) * 3, (1,) * 3, 1)
    assert np.abs(acc).max() > 2**19
    np.testing.assert_array_equal(y.int_repr().numpy(), reference_requantize(acc, 0.01, 1e-4, None, 0.05, 128))


def test_weight_bias_repr_and_state_dict():
    m = nnq.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    assert repr(m) == ("QuantizedConvTranspose2d(4, 6, kernel_size=(3, 3), stride=(2, 2), scale=1.0, zero_point=0, "
                       "padding=(1, 1), output_padding=(1, 1), groups=2)")
    assert repr(nnq.ConvTranspose1d(4, 6, 3, bias=False, dilation=2, output_padding=1, stride=3)) == (
        "QuantizedConvTranspose1d(4, 6, kernel_size=(3,), stride=(3,), scale=1.0, zero_point=0, dilation=(2,), "
        "output_padding=(1,), bias=False)")
    assert tuple(m.weight().shape) == (4, 3, 3, 3) and m.weight().qscheme() == ember.per_tensor_affine
    np.testing.assert_array_equal(m.bias().numpy(), np.zeros(6, np.float32))
    assert (m.in_channels, m.out_channels, m.transposed, m.padding_mode) == (4, 6, True, "zeros")
    rng = np.random.default_rng(11)
    w, _ = quantized_weight(rng, (4, 3, 3, 3), 0.01, 2)
    m.set_weight_bias(w, ember.tensor(rng.normal(size=6).astype(np.float32)))
    m.scale, m.zero_point = 0.25, 31
    state = m.state_dict()
    assert sorted(state) == ["bias", "scale", "weight", "zero_point"]
    assert float(state["scale"]) == 0.25 and int(state["zero_point"]) == 31
    fresh = nnq.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2)
    fresh.load_state_dict(state)
    assert (fresh.scale, fresh.zero_point) == (0.25, 31)
    np.testing.assert_array_equal(fresh.weight().int_repr().numpy(), w.int_repr().numpy())
    assert fresh.weight().q_zero_point() == 2
    x, _ = quantized_input(rng, (2, 4, 3, 3), 0.05, 100)
    np.testing.assert_array_equal(fresh(x).int_repr().numpy(), m(x).int_repr().numpy())
    m.set_weight_bias(w, None)
    assert m.bias() is None and m.state_dict()["bias"] is None and repr(m).endswith("bias=False)")


def test_bad_arguments_raise_pytorchs_errors():
    with pytest.raises(ValueError, match='Only "zeros" padding mode is supported for ConvTranspose2d'):
        nnq.ConvTranspose2d(4, 6, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nnq.ConvTranspose2d(4, 6, 3, groups=3)
    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        nnq.ConvTranspose1d(4, 6, 3, groups=4)
    with pytest.raises(ValueError, match="out_channels must be greater than 0, got 0"):
        nnq.ConvTranspose3d(4, 0, 3)
    m = nnq.ConvTranspose2d(4, 6, 3, groups=2)
    rng = np.random.default_rng(2)
    with pytest.raises(RuntimeError, match="expected scalar type QInt8 but found QUInt8"):
        m.set_weight_bias(ember.quantize_per_tensor(ember.randn(4, 3, 3, 3), 0.1, 0, ember.quint8), None)
    with pytest.raises(NotImplementedError, match="non-quantized weight"):
        m.set_weight_bias(ember.randn(4, 3, 3, 3), None)
    with pytest.raises(RuntimeError, match="Weights are expected to have 4 dimensions"):
        m.set_weight_bias(ember.quantize_per_tensor(ember.randn(4, 3, 3), 0.1, 0, ember.qint8), None)
    with pytest.raises(RuntimeError, match="bias should have K elements: 6"):
        m.set_weight_bias(ember.quantize_per_tensor(ember.randn(4, 3, 3, 3), 0.1, 0, ember.qint8), ember.randn(5))
    per_channel = ember.quantize_per_channel(ember.randn(4, 3, 3, 3), ember.tensor([0.1, 0.2, 0.3, 0.4]),
                                             ember.tensor([0, 0, 0, 0]), 0, ember.qint8)
    with pytest.raises(RuntimeError, match="Per Channel Quantization is currently disabled for transposed conv"):
        m.set_weight_bias(per_channel, None)
    x, _ = quantized_input(rng, (2, 4, 5, 5), 0.1, 128)
    with pytest.raises(NotImplementedError, match="quantized::conv_transpose2d"):
        m(ember.randn(2, 4, 5, 5))
    with pytest.raises(RuntimeError, match="Expected activation data type QUInt8 but got QInt8"):
        m(ember.quantize_per_tensor(ember.randn(2, 4, 5, 5), 0.1, 0, ember.qint8))
    with pytest.raises(ValueError, match=r"Input shape must be `\(N, C, H, W\)`!"):
        m(x[0])
    with pytest.raises(RuntimeError, match="to have 4 channels, but got 3 channels instead"):
        m(quantized_input(rng, (2, 3, 5, 5), 0.1, 128)[0])
    with pytest.raises(RuntimeError, match="too small"):
        nnq.ConvTranspose2d(4, 6, 3, padding=4)(x)


def test_prepare_convert_and_from_float():
    ember.manual_seed(0)
    model = nn.Sequential(tq.QuantStub(), nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1),
                          tq.DeQuantStub()).eval()
    model.qconfig = tq.default_qconfig
    prepared = tq.prepare(model)
    data = ember.randn(2, 3, 5, 5)
    prepared(data)
    float_conv = prepared[1]
    observer = float_conv.activation_post_process
    converted = tq.convert(prepared)
    qconv = converted[1]
    assert type(qconv) is nnq.ConvTranspose2d
    scale, zero_point = observer.calculate_qparams()
    assert (qconv.scale, qconv.zero_point) == (float(scale), int(zero_point))
    weight_observer = tq.default_qconfig.weight()
    weight_observer(float_conv.weight)
    w_scale, w_zero_point = weight_observer.calculate_qparams()
    expected = ember.quantize_per_tensor(float_conv.weight.detach(), float(w_scale), int(w_zero_point), ember.qint8)
    np.testing.assert_array_equal(qconv.weight().int_repr().numpy(), expected.int_repr().numpy())
    np.testing.assert_array_equal(qconv.bias().numpy(), float_conv.bias.detach().numpy())
    # the converted model against the float one: within a few output steps
    got = converted(data).numpy()
    want = model(data).detach().numpy()
    assert np.abs(got - want).max() <= 4 * qconv.scale
    # per-channel weight observers are refused for transposed convolutions, as in PyTorch
    per_channel = nn.Sequential(nn.ConvTranspose3d(2, 2, 2)).eval()
    per_channel.qconfig = tq.get_default_qconfig("x86")
    with pytest.raises(AssertionError, match="Per channel weight observer is not supported yet for ConvTranspose"):
        tq.prepare(per_channel)


def test_from_float_checks():
    conv = nn.ConvTranspose1d(2, 4, 3, stride=2, groups=2)
    with pytest.raises(AssertionError, match="Input float module must have qconfig defined"):
        nnq.ConvTranspose1d.from_float(conv)
    with pytest.raises(AssertionError, match="nnq.ConvTranspose2d.from_float only works for ConvTranspose2d"):
        nnq.ConvTranspose2d.from_float(conv)
    conv.qconfig = tq.default_qconfig
    # weight-only (no activation observer): the output keeps scale 1.0 and zero point 0
    q = nnq.ConvTranspose1d.from_float(conv)
    assert (q.scale, q.zero_point, q.groups, q.stride) == (1.0, 0, 2, (2,))
    assert q.weight().qscheme() == ember.per_tensor_affine and q.weight().q_zero_point() == 0  # symmetric observer


def test_older_name():
    assert nn.quantized.ConvTranspose2d is nnq.ConvTranspose2d
    assert tq.get_default_static_quant_module_mappings()[nn.ConvTranspose3d] is nnq.ConvTranspose3d


def test_convert_fx_lowers_modules_keeps_functional_float():
    from ember.ao.quantization import quantize_fx as qfx

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1)
            self.w = nn.Parameter(ember.randn(4, 2, 2, 2) * 0.3)

        def forward(self, x):
            return nn.functional.conv_transpose2d(self.up(x), self.w, None, 2)

    ember.manual_seed(1)
    model = Net().eval()
    x = ember.randn(2, 3, 5, 5)
    prepared = qfx.prepare_fx(model, tq.get_default_qconfig_mapping("x86"), (x,))
    prepared(x)
    converted = qfx.convert_fx(prepared)
    assert type(converted.up) is nnq.ConvTranspose2d
    assert converted.up.weight().qscheme() == ember.per_tensor_affine  # the mapping's per-tensor observer
    # F.conv_transpose2d stays float between a dequantize and a quantize (PyTorch 2.13 cannot lower it)
    targets = [n.target for n in converted.graph.nodes if n.op == "call_function"]
    assert nn.functional.conv_transpose2d in targets
    got, want = converted(x).numpy(), model(x).detach().numpy()
    assert got.shape == want.shape == (2, 2, 20, 20)
    # quint8 with reduce_range (7 bits) twice: within a few percent of the float model's range
    assert np.abs(got - want).max() < 0.05 * np.abs(want).max()
