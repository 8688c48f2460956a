"""The kernels of quantized tensors against float64 NumPy references: the generic ops that take
them (relu, relu6, hardtanh, pooling, cat) and the private ops behind ember.ao.nn.quantized
(linear, dynamic linear, convolution, add, mul, cat). PyTorch's own bits:
tests/test_quantized_torch_parity.py."""

import numpy as np
import pytest

import ember
import ember.nn.functional as F

C = ember._C


def quantize_ref(x, scale, zero_point, lo=0, hi=255):
    v = np.float32(zero_point) + np.asarray(x, np.float32) * (np.float32(1) / np.float32(scale))
    return np.clip(np.rint(v.astype(np.float64)), lo, hi)


def deq(q):
    return q.dequantize().numpy().astype(np.float64)


def close_in_steps(got, expected, fraction=0.95):
    """Quantized results against a float64 reference: never more than one step apart, and mostly equal."""
    got, expected = np.asarray(got, np.int64), np.asarray(expected, np.int64)
    assert got.shape == expected.shape
    assert np.abs(got - expected).max(initial=0) <= 1
    assert (got == expected).mean() >= fraction


@pytest.fixture
def q():
    rng = np.random.default_rng(0)
    return ember.quantize_per_tensor(ember.tensor(rng.normal(size=(2, 3, 9, 8)).astype(np.float32)), 0.05, 100,
                                     ember.quint8)


def test_relu_family_keeps_the_parameters(q):
    x = deq(q)
    for out, ref in ((ember.relu(q), np.maximum(x, 0)), (F.relu6(q), np.clip(x, 0, 6)),
                     (F.hardtanh(q, -0.5, 0.75), np.clip(x, -0.5, 0.75))):
        assert out.dtype == ember.quint8 and out.q_scale() == 0.05 and out.q_zero_point() == 100
        np.testing.assert_allclose(deq(out), ref, atol=0.05 / 2 + 1e-9)
    np.testing.assert_array_equal(deq(ember.relu(q)), np.maximum(x, 0))  # 0 is on the grid: exact
    r = q.clone()
    assert r.relu_() is r and np.array_equal(deq(r), np.maximum(x, 0))
    with pytest.raises(NotImplementedError, match="not into out="):
        ember.relu(q, out=q.clone())


def _windows(x, k, s, p):
    """(N, C, Ho, Wo, k*k) windows of x padded with NaN (outside the input)."""
    n, c, h, w = x.shape
    padded = np.full((n, c, h + 2 * p, w + 2 * p), np.nan)
    padded[:, :, p:p + h, p:p + w] = x
    ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    return np.stack([padded[:, :, i:i + s * ho:s, j:j + s * wo:s] for i in range(k) for j in range(k)], -1)


def test_max_pool_is_exact(q):
    got = F.max_pool2d(q, 3, 2, 1)
    assert got.q_scale() == q.q_scale() and got.q_zero_point() == q.q_zero_point()
    np.testing.assert_array_equal(deq(got), np.nanmax(_windows(deq(q), 3, 2, 1), -1))
    values, indices = F.max_pool2d(q, 2, return_indices=True)
    assert indices.dtype == ember.int64 and values.shape == (2, 3, 4, 4)


@pytest.mark.parametrize("count_include_pad", [True, False])
def test_avg_pool_against_the_mean(q, count_include_pad):
    got = F.avg_pool2d(q, 3, 2, 1, count_include_pad=count_include_pad)
    w = _windows(deq(q), 3, 2, 1)
    mean = np.nansum(w, -1) / (9 if count_include_pad else np.sum(~np.isnan(w), -1))
    close_in_steps(got.int_repr().numpy(), quantize_ref(mean, 0.05, 100))
    # a 2x2 window divides by 4 exactly: every result is the rounded mean (half to even)
    exact = F.avg_pool2d(q, 2)
    np.testing.assert_array_equal(exact.int_repr().numpy(), quantize_ref(_windows(deq(q), 2, 2, 0).mean(-1), 0.05, 100))


def test_adaptive_avg_pool_against_the_mean(q):
    x = deq(q)
    got = F.adaptive_avg_pool2d(q, (1, 1))
    close_in_steps(got.int_repr().numpy(), quantize_ref(x.mean((2, 3), keepdims=True), 0.05, 100), fraction=1.0)
    got = F.adaptive_avg_pool2d(q, (4, 3))
    rows = [(i * 9 // 4, -(-(i + 1) * 9 // 4)) for i in range(4)]
    cols = [(j * 8 // 3, -(-(j + 1) * 8 // 3)) for j in range(3)]
    ref = np.array([[x[:, :, a:b, c:d].mean((2, 3)) for c, d in cols] for a, b in rows]).transpose(2, 3, 0, 1)
    close_in_steps(got.int_repr().numpy(), quantize_ref(ref, 0.05, 100))
    assert F.adaptive_avg_pool2d(q, (0, 2)).shape == (2, 3, 0, 2)


def test_cat_takes_the_first_tensors_parameters(q):
    same = ember.cat([q, q], 1)
    assert same.q_scale() == 0.05 and same.shape == (2, 6, 9, 8)
    np.testing.assert_array_equal(same.int_repr().numpy(), np.concatenate([q.int_repr().numpy()] * 2, 1))
    other = ember.quantize_per_tensor(ember.ones(2, 1, 9, 8) * 0.3, 0.1, 10, ember.quint8)
    mixed = ember.cat([q, other], 1)
    np.testing.assert_array_equal(mixed.int_repr().numpy()[:, 3], quantize_ref(deq(other)[:, 0], 0.05, 100))
    with pytest.raises(RuntimeError, match="one dtype"):
        ember.cat([q, ember.quantize_per_tensor(ember.ones(2, 1, 9, 8), 0.1, 0, ember.qint8)], 1)


def _linear_operands(seed=1, out_features=6, per_channel=False):
    rng = np.random.default_rng(seed)
    x = ember.quantize_per_tensor(ember.tensor(rng.normal(size=(5, 12)).astype(np.float32)), 0.04, 120, ember.quint8)
    w = ember.tensor(rng.normal(size=(out_features, 12)).astype(np.float32) * 0.5)
    if per_channel:
        w = ember.quantize_per_channel(w, ember.tensor(rng.uniform(0.004, 0.02, out_features)),
                                       ember.zeros(out_features, dtype=ember.int64), 0, ember.qint8)
    else:
        w = ember.quantize_per_tensor(w, 0.01, 0, ember.qint8)
    b = ember.tensor(rng.normal(size=out_features).astype(np.float32))
    return x, w, b


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("relu", [False, True])
def test_quantized_linear_against_float64(per_channel, relu):
    x, w, b = _linear_operands(per_channel=per_channel)
    got = C._quantized_linear(x, w, b, 0.1, 60, relu)
    assert got.dtype == ember.quint8 and got.q_scale() == 0.1 and got.q_zero_point() == 60 and got.shape == (5, 6)
    y = deq(x) @ deq(w).T + b.numpy()
    close_in_steps(got.int_repr().numpy(), quantize_ref(np.maximum(y, 0) if relu else y, 0.1, 60))
    # a batch of leading dims and no bias
    x3 = x.reshape(1, 5, 12)
    assert C._quantized_linear(x3, w, None, 0.1, 60).shape == (1, 5, 6)


@pytest.mark.parametrize("per_channel", [False, True])
def test_dynamic_linear_against_float64(per_channel):
    x, w, b = _linear_operands(per_channel=per_channel)
    xf = x.dequantize()
    for reduce_range in (True, False):
        got = C._quantized_linear_dynamic(xf, w, b, reduce_range)
        xq = ember.quantize_per_tensor_dynamic(xf, ember.quint8, reduce_range)
        ref = deq(xq) @ deq(w).T + b.numpy()
        np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(C._quantized_linear_dynamic(xf, w, b, True, True).numpy(),
                               np.maximum(C._quantized_linear_dynamic(xf, w, b, True).numpy(), 0))


def test_integer_sums_stay_exact_beyond_float32():
    # 4096 products of 127 * 127: partial sums pass 2**24, where a float32 GEMM would round; the
    # kernel takes float64 then (Note [integer GEMM through float BLAS])
    k = 4096
    w = ember._make_per_tensor_quantized_tensor(ember.full((3, k), 127, dtype=ember.int8), 0.001, 0)
    w_ints = w.int_repr().numpy().astype(np.int64)
    w_ints[1, ::3] = -128
    w = ember._make_per_tensor_quantized_tensor(ember.tensor(w_ints.astype(np.int8)), 0.001, 0)
    x = ember.ones(2, k)
    xq = ember.quantize_per_tensor_dynamic(x, ember.quint8, True)
    acc = xq.int_repr().numpy().astype(np.int64) - xq.q_zero_point()
    acc = acc @ w_ints.T
    assert acc.max() > 2 ** 24
    act_times_w = np.float32(xq.q_scale()) * np.float32(0.001)
    expected = (acc.astype(np.float32).astype(np.float64) * np.float64(act_times_w)).astype(np.float32)
    np.testing.assert_array_equal(C._quantized_linear_dynamic(x, w, None, True).numpy(), expected)


def _conv_ref(x, w, b, stride, padding, groups):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho, wo = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, ho, wo))
    per = o // groups
    for g in range(groups):
        xs = xp[:, g * cg:(g + 1) * cg]
        for i in range(kh):
            for j in range(kw):
                patch = xs[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride]
                out[:, g * per:(g + 1) * per] += np.einsum("nchw,oc->nohw", patch, w[g * per:(g + 1) * per, :, i, j])
    return out + (0 if b is None else b.reshape(1, -1, 1, 1))


@pytest.mark.parametrize("groups,stride,padding,per_channel", [(1, 1, 1, False), (2, 2, 0, True), (4, 1, 1, True)])
def test_quantized_conv_against_float64(groups, stride, padding, per_channel):
    rng = np.random.default_rng(2)
    x = ember.quantize_per_tensor(ember.tensor(rng.normal(size=(2, 4, 7, 6)).astype(np.float32)), 0.05, 90,
                                  ember.quint8)
    wf = ember.tensor(rng.normal(size=(8, 4 // groups, 3, 3)).astype(np.float32) * 0.3)
    w = ember.quantize_per_channel(wf, ember.tensor(rng.uniform(0.005, 0.02, 8)), ember.zeros(8, dtype=ember.int64),
                                   0, ember.qint8) if per_channel else ember.quantize_per_tensor(wf, 0.01, 0, ember.qint8)
    b = ember.tensor(rng.normal(size=8).astype(np.float32))
    got = C._quantized_conv(x, w, b, [stride] * 2, [padding] * 2, [1, 1], groups, 0.2, 70, False)
    ref = _conv_ref(deq(x), deq(w), b.numpy(), stride, padding, groups)
    assert got.shape == ref.shape and got.dtype == ember.quint8
    close_in_steps(got.int_repr().numpy(), quantize_ref(ref, 0.2, 70))
    relu = C._quantized_conv(x, w, None, [stride] * 2, [padding] * 2, [1, 1], groups, 0.2, 70, True)
    close_in_steps(relu.int_repr().numpy(), quantize_ref(np.maximum(ref - b.numpy().reshape(1, -1, 1, 1), 0), 0.2, 70))


def test_quantized_add_mul_and_cat():
    rng = np.random.default_rng(3)
    a = ember.quantize_per_tensor(ember.tensor(rng.normal(size=(4, 5)).astype(np.float32)), 0.03, 128, ember.quint8)
    b = ember.quantize_per_tensor(ember.tensor(rng.normal(size=(4, 5)).astype(np.float32)), 0.05, 100, ember.quint8)
    for got, ref in ((C._quantized_add(a, b, 0.06, 120), deq(a) + deq(b)),
                     (C._quantized_add(a, b, 0.06, 120, True), np.maximum(deq(a) + deq(b), 0)),
                     (C._quantized_mul(a, b, 0.02, 128), deq(a) * deq(b)),
                     (C._quantized_cat([a, b], 1, 0.06, 120), np.concatenate([deq(a), deq(b)], 1))):
        close_in_steps(got.int_repr().numpy(), quantize_ref(ref, got.q_scale(), got.q_zero_point()))


def _add_mul_ref(a, b, scale, zero_point, relu, is_add, lo, hi):
    """Note [quantized add and mul], in float64 where it is exact: fma(s, q, s * -z) dequantizes
    (the float32 product plus a float32 addend, rounded once), products round to float32."""
    f32 = np.float32
    qa, qb = a.int_repr().numpy().astype(np.int64), b.int_repr().numpy().astype(np.int64)
    sa, sb, inv = f32(a.q_scale()), f32(b.q_scale()), f32(1) / f32(scale)
    if is_add:
        def dequant(q, s, z):
            return (np.float64(s) * q + np.float64(s * f32(-z))).astype(np.float32)
        v = (dequant(qa, sa, a.q_zero_point()) + dequant(qb, sb, b.q_zero_point())).astype(np.float32)
        if relu:
            v = np.maximum(v, f32(0))
        codes = np.rint((v * inv).astype(np.float32)).astype(np.int64) + zero_point
        return np.clip(codes, lo, hi)
    c = (qa - a.q_zero_point()) * (qb - b.q_zero_point())
    codes = np.clip(np.rint((c.astype(np.float32) * f32(f32(sa * sb) * inv)).astype(np.float32)).astype(np.int64)
                    + zero_point, lo, hi)
    return np.maximum(codes, zero_point) if relu else codes


@pytest.mark.parametrize("dtype,lo,hi", [(ember.quint8, 0, 255), (ember.qint8, -128, 127)])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "broadcast", "zero_size", "zero_dim"])
def test_quantized_add_mul_exact_at_half_steps(dtype, lo, hi, layout):
    # input scale 0.1 and output scale 0.2: half the sums of codes fall on half steps, where the
    # order of rounding and adding the zero point decides the code
    rng = np.random.default_rng(7)
    shapes = {"contiguous": ((6, 37), (6, 37)), "transposed": ((37, 6), (37, 6)), "broadcast": ((6, 37), (37,)),
              "zero_size": ((0, 5), (0, 5)), "zero_dim": ((), ())}[layout]
    a, b = (ember._make_per_tensor_quantized_tensor(
        ember.from_numpy(np.asarray(rng.integers(lo, hi + 1, shape), np.uint8 if lo == 0 else np.int8)), 0.1, z)
        for shape, z in zip(shapes, (3, -5 if lo < 0 else 9), strict=True))
    if layout == "transposed":
        a, b = a.t(), b.t()
        assert not a.is_contiguous()
    for is_add in (True, False):
        for relu in (False, True):
            fn = C._quantized_add if is_add else C._quantized_mul
            scale, zero_point = (0.2, 4) if is_add else (0.4, 2)
            got = fn(a, b, scale, zero_point, relu)
            assert got.dtype == dtype and tuple(got.shape) == tuple(np.broadcast_shapes(a.shape, b.shape))
            assert (got.q_scale(), got.q_zero_point()) == (scale, zero_point)
            want = _add_mul_ref(a, b, scale, zero_point, relu, is_add, lo, hi)
            np.testing.assert_array_equal(got.int_repr().numpy().astype(np.int64), want)


def test_quantized_add_mul_reject_bad_operands():
    a = ember.quantize_per_tensor(ember.randn(3, 4), 0.1, 3, ember.quint8)
    with pytest.raises(RuntimeError, match=r"\[quantized::add\] expected two tensors of one quantized dtype"):
        C._quantized_add(a, ember.quantize_per_tensor(ember.randn(3, 4), 0.1, 3, ember.qint8), 0.1, 0)
    with pytest.raises(RuntimeError, match=r"\[quantized::mul\] expected a positive, finite scale"):
        C._quantized_mul(a, a, 0.0, 0)
    with pytest.raises(RuntimeError, match=r"\[quantized::add\] zero_point 300 is above upper bound"):
        C._quantized_add(a, a, 0.1, 300)
    with pytest.raises(RuntimeError, match="quantized::add"):
        C._quantized_add(a, ember.quantize_per_tensor(ember.randn(5), 0.1, 3, ember.quint8), 0.1, 0)
    per_channel = ember.quantize_per_channel(ember.randn(3, 4), ember.tensor([0.1, 0.2, 0.3]), ember.tensor([0, 1, 2]),
                                             0, ember.quint8)
    with pytest.raises(NotImplementedError, match="expects a per-tensor quantized tensor"):
        C._quantized_mul(a, per_channel, 0.1, 0)


def test_quantized_kernels_reject_bad_operands():
    x, w, b = _linear_operands()
    with pytest.raises(RuntimeError, match="expected a quint8 input"):
        C._quantized_linear(ember.quantize_per_tensor(x.dequantize(), 0.1, 0, ember.qint8), w, b, 0.1, 0)
    with pytest.raises(RuntimeError, match="expected a qint8 weight"):
        C._quantized_linear(x, x, b, 0.1, 0)
    with pytest.raises(RuntimeError, match="expected an input of 12 features"):
        C._quantized_linear(x.reshape(6, 10), w, b, 0.1, 0)
    with pytest.raises(RuntimeError, match="output zero_point in \\[0, 255\\]"):
        C._quantized_linear(x, w, b, 0.1, 300)
    with pytest.raises(RuntimeError, match="positive, finite output scale"):
        C._quantized_linear(x, w, b, 0.0, 0)
    with pytest.raises(RuntimeError, match="bias of 6 values"):
        C._quantized_linear(x, w, ember.zeros(5), 0.1, 0)
    with pytest.raises(RuntimeError, match="expected a float32 input"):
        C._quantized_linear_dynamic(x, w, b)
    per_channel_x = ember.quantize_per_channel(x.dequantize(), ember.full((5,), 0.1, dtype=ember.float64),
                                               ember.zeros(5, dtype=ember.int64), 0, ember.quint8)
    with pytest.raises(NotImplementedError, match="per-tensor quantized tensor"):
        C._quantized_linear(per_channel_x, w, b, 0.1, 0)
    with pytest.raises(NotImplementedError, match="per-tensor quantized tensor"):
        ember.relu(per_channel_x)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x.reshape(1, 1, 5, 12), 2, divisor_override=0)
