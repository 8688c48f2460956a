"""Quantized tensors (quint8, qint8, qint32): quantize/dequantize against float64 NumPy references
of Note [quantize arithmetic], the accessors, views, checkpoints, and the errors of every op that
does not take them. PyTorch's own numbers: tests/test_quantized_torch_parity.py."""

import io
import math

import numpy as np
import pytest

import ember

RANGES = {ember.quint8: (0, 255, np.uint8), ember.qint8: (-128, 127, np.int8), ember.qint32: (-2**31, 2**31 - 1, np.int32)}


def quantize_ref(x, scale, zero_point, dtype):
    """Note [quantize arithmetic]: quint8 / qint8 take fma(x, 1/scale, zero_point) in float32 (here
    exact in long double, whose 64 bits hold the 48-bit product plus a zero point of at most 8 bits
    above it, then rounded once to float32); qint32 rounds the product x * (1/scale) to float32 and
    adds zero_point. Then rounded half to even and clamped."""
    lo, hi, _ = RANGES[dtype]
    x = np.asarray(x, np.float32)
    inv = np.float32(1) / np.float32(scale)
    if dtype == ember.qint32:
        v = (np.float32(zero_point) + x * inv).astype(np.float64)
    else:
        v = (x.astype(np.longdouble) * np.longdouble(inv) + zero_point).astype(np.float32).astype(np.float64)
    q = np.clip(np.rint(v), lo, hi)
    return np.where(np.isnan(v), lo if dtype == ember.qint32 else hi, q).astype(np.int64)


def samples(shape=(5, 7), seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32) * 4


@pytest.mark.parametrize("dtype", list(RANGES))
@pytest.mark.parametrize("scale,zero_point", [(0.1, 3), (0.0137, -2), (2.5, 0)])
def test_quantize_per_tensor_matches_the_reference(dtype, scale, zero_point):
    lo, hi, _ = RANGES[dtype]
    zero_point = min(max(zero_point, lo), hi)
    x = samples()
    q = ember.quantize_per_tensor(ember.tensor(x), scale, zero_point, dtype)
    assert q.dtype == dtype and q.is_quantized and q.shape == x.shape
    assert q.qscheme() is ember.per_tensor_affine
    assert q.q_scale() == scale and q.q_zero_point() == zero_point
    np.testing.assert_array_equal(q.int_repr().numpy().astype(np.int64), quantize_ref(x, scale, zero_point, dtype))
    # dequantize: (q - zero_point) * scale in float32
    ints = q.int_repr().numpy().astype(np.float32)
    expected = (ints - np.float32(zero_point)) * np.float32(scale)
    np.testing.assert_array_equal(q.dequantize().numpy(), expected)
    # inside the range, the round trip is within half a step (float64 reference)
    inside = (x / scale + zero_point > lo + 1) & (x / scale + zero_point < hi - 1)
    err = np.abs(q.dequantize().numpy().astype(np.float64) - x.astype(np.float64))[inside]
    assert err.max(initial=0) <= scale / 2 * (1 + 1e-5)


@pytest.mark.parametrize("dtype", list(RANGES))
@pytest.mark.parametrize("scale", [0.0137, 0.3, 0.6373247504234314])
def test_quantize_per_tensor_at_half_steps(dtype, scale):
    # values at half steps and one float32 step to either side: there the fused multiply-add
    # (quint8, qint8) and the rounded product (qint32) give different codes; an odd count also
    # leaves a tail after the vector loop
    halves = ((np.arange(-300, 301) + 0.5) * scale).astype(np.float32)
    x = np.concatenate([halves, np.nextafter(halves, np.float32(np.inf)), np.nextafter(halves, np.float32(-np.inf))])
    lo, hi, _ = RANGES[dtype]
    zero_point = min(max(130, lo), hi) if dtype == ember.quint8 else 7
    got = ember.quantize_per_tensor(ember.tensor(x), scale, zero_point, dtype).int_repr().numpy().astype(np.int64)
    np.testing.assert_array_equal(got, quantize_ref(x, scale, zero_point, dtype))
    if dtype != ember.qint32:  # the two forms do part ways on these inputs
        inv = np.float32(1) / np.float32(scale)
        rounded_product = np.clip(np.rint((np.float32(zero_point) + x * inv).astype(np.float64)), lo, hi)
        assert (rounded_product != got).any()


def test_rounding_is_half_to_even_and_values_clamp():
    x = ember.tensor([0.05, 0.15, 0.25, 0.35, -0.25, 1e30, -1e30, math.inf, -math.inf, math.nan])
    q = ember.quantize_per_tensor(x, 0.1, 0, ember.qint8).int_repr().tolist()
    assert q[:5] == quantize_ref(x.numpy(), 0.1, 0, ember.qint8)[:5].tolist()
    assert q[5:] == [127, -128, 127, -128, 127]
    assert ember.quantize_per_tensor(ember.tensor([math.nan]), 1.0, 0, ember.qint32).int_repr().tolist() == [-2**31]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "zero_size", "zero_dim"])
def test_quantize_per_tensor_layouts(layout):
    base = samples((6, 4), seed=1)
    x = {"contiguous": ember.tensor(base), "transposed": ember.tensor(base).t(),
         "zero_size": ember.zeros(0, 3), "zero_dim": ember.tensor(1.37)}[layout]
    q = ember.quantize_per_tensor(x, 0.05, 10, ember.quint8)
    assert q.shape == x.shape and q.is_contiguous()
    np.testing.assert_array_equal(q.int_repr().numpy().astype(np.int64), quantize_ref(x.numpy(), 0.05, 10, ember.quint8))
    assert q.dequantize().shape == x.shape


def test_quantize_per_tensor_takes_tensor_qparams_and_lists():
    x = ember.tensor(samples())
    a = ember.quantize_per_tensor(x, ember.tensor(0.25), ember.tensor(4), ember.quint8)
    assert a.q_scale() == 0.25 and a.q_zero_point() == 4
    qs = ember.quantize_per_tensor([x, x * 2], ember.tensor([0.5, 0.25]), ember.tensor([1, 2]), ember.qint8)
    assert [t.q_scale() for t in qs] == [0.5, 0.25] and [t.q_zero_point() for t in qs] == [1, 2]
    back = ember.dequantize(qs)
    assert isinstance(back, list) and back[1].dtype == ember.float32
    with pytest.raises(RuntimeError, match="expected 2 scales"):
        ember.quantize_per_tensor([x, x], ember.tensor([0.5]), ember.tensor([1]), ember.qint8)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_quantize_per_channel_matches_the_reference(axis):
    x = samples((4, 5, 3), seed=2)
    dim = axis
    rng = np.random.default_rng(3)
    scales = rng.uniform(0.01, 0.2, x.shape[dim])
    points = rng.integers(-10, 10, x.shape[dim])
    q = ember.quantize_per_channel(ember.tensor(x), ember.tensor(scales), ember.tensor(points), axis, ember.qint8)
    assert q.qscheme() is ember.per_channel_affine and q.q_per_channel_axis() == dim
    np.testing.assert_array_equal(q.q_per_channel_scales().numpy(), scales)
    assert q.q_per_channel_scales().dtype == ember.float64 and q.q_per_channel_zero_points().dtype == ember.int64
    shape = [1, 1, 1]
    shape[dim] = -1
    s, z = scales.reshape(shape), points.reshape(shape)
    expected = np.clip(np.rint(z.astype(np.float32) + x * (np.float32(1) / s.astype(np.float32))), -128, 127)
    np.testing.assert_array_equal(q.int_repr().numpy(), expected.astype(np.int8))
    # per channel, dequantize runs in float64: (q - zero_point) * scale
    np.testing.assert_array_equal(q.dequantize().numpy(), ((expected - z) * s).astype(np.float32))


def test_quantize_per_channel_with_float_qparams():
    x = samples((3, 4), seed=4)
    scales, points = np.array([0.1, 0.2, 0.3, 0.05], np.float32), np.array([0.5, 3.0, 1.25, 0.0], np.float32)
    q = ember.quantize_per_channel(ember.tensor(x), ember.tensor(scales), ember.tensor(points), 1, ember.quint8)
    assert q.qscheme() is ember.per_channel_affine_float_qparams
    expected = np.clip(np.rint(x * (np.float32(1) / scales) + points), 0, 255)
    np.testing.assert_array_equal(q.int_repr().numpy(), expected.astype(np.uint8))
    np.testing.assert_array_equal(q.dequantize().numpy(), (expected.astype(np.float32) - points) * scales)


def test_quantize_per_tensor_dynamic_covers_the_range():
    x = samples((50,), seed=5)
    for dtype, (qmin, qmax) in ((ember.quint8, (0, 255)), (ember.qint8, (-128, 127))):
        for reduce_range in (False, True):
            q = ember.quantize_per_tensor_dynamic(ember.tensor(x), dtype, reduce_range)
            lo, hi = (qmin // 2, qmax // 2) if reduce_range else (qmin, qmax)
            scale, zp = q.q_scale(), q.q_zero_point()
            # the scale spreads [min(x, 0), max(x, 0)] over the integer range, and 0 is exact
            assert scale == pytest.approx((max(x.max(), 0) - min(x.min(), 0)) / (hi - lo), rel=1e-6)
            assert lo <= zp <= hi
            ints = q.int_repr().numpy().astype(np.int64)
            assert ints.min() >= lo and ints.max() <= hi
            assert np.abs(q.dequantize().numpy() - x).max() <= scale * 0.5 + 1e-6


def test_make_quantized_tensors_from_integers():
    ints = ember.tensor([[0, 10, 255], [3, 4, 5]], dtype=ember.uint8)
    q = ember._make_per_tensor_quantized_tensor(ints, 0.5, 3)
    assert q.dtype == ember.quint8 and q.int_repr().tolist() == ints.tolist()
    np.testing.assert_array_equal(q.dequantize().numpy(), (ints.numpy().astype(np.float32) - 3) * 0.5)
    pc = ember._make_per_channel_quantized_tensor(ints.to(ember.int8), ember.tensor([1.0, 2.0]), ember.tensor([0, 1]), 0)
    assert pc.dtype == ember.qint8 and pc.q_per_channel_zero_points().tolist() == [0, 1]
    assert ember._make_per_tensor_quantized_tensor(ints.to(ember.int32), 1.0, 0).dtype == ember.qint32
    with pytest.raises(RuntimeError, match="expected a uint8, int8 or int32 tensor"):
        ember._make_per_tensor_quantized_tensor(ints.to(ember.int64), 1.0, 0)


def test_views_keep_the_quantizer():
    q = ember.quantize_per_tensor(ember.tensor(samples((4, 6))), 0.1, 7, ember.quint8)
    ints = q.int_repr().numpy()
    for view, expected in ((q.t(), ints.T), (q[1], ints[1]), (q[:, 2:5], ints[:, 2:5]), (q.reshape(3, 8), ints.reshape(3, 8)),
                           (q.unsqueeze(0), ints[None]), (q.permute(1, 0), ints.T), (q.flatten(), ints.ravel())):
        assert view.dtype == ember.quint8 and view.q_scale() == 0.1 and view.q_zero_point() == 7
        np.testing.assert_array_equal(view.int_repr().numpy(), expected)
    c = q.t().contiguous()
    assert c.is_contiguous() and c.q_scale() == 0.1
    np.testing.assert_array_equal(c.int_repr().numpy(), ints.T)
    assert q.clone().q_zero_point() == 7 and q.detach().is_quantized


def test_per_channel_tensors_take_only_shape_keeping_views():
    q = ember.quantize_per_channel(ember.tensor(samples((3, 4))), ember.tensor([0.1, 0.2, 0.3]),
                                   ember.tensor([0, 1, 2]), 0, ember.qint8)
    assert q.detach().q_per_channel_axis() == 0 and q.clone().q_per_channel_axis() == 0
    for view in (lambda: q.t(), lambda: q[1], lambda: q.reshape(12), lambda: q.unsqueeze(0)):
        with pytest.raises(NotImplementedError, match="per-channel quantized tensor takes only views that keep its shape"):
            view()


def test_ops_without_quantized_kernels_raise():
    q = ember.quantize_per_tensor(ember.tensor(samples()), 0.1, 0, ember.qint8)
    for call, op in ((lambda: q + 1, "add"), (lambda: q.sum(), "sum"), (lambda: ember.exp(q), "exp"),
                     (lambda: q.float(), "to_dtype"), (lambda: q.add_(1), "add"), (lambda: ember.hstack([q, q]), "hstack"),
                     (lambda: ember.ops.aten.mul(q, q), "mul")):
        with pytest.raises(NotImplementedError, match=rf"\[{op}\] not implemented for quantized tensors"):
            call()
    with pytest.raises(TypeError, match="dequantize\\(\\) gives its values"):
        q.tolist()
    with pytest.raises(TypeError, match="dequantize\\(\\) gives its values"):
        q.numpy()
    with pytest.raises(RuntimeError, match="only Tensors of floating point"):
        q.requires_grad_()
    with pytest.raises(NotImplementedError, match="a qint8 tensor cannot be viewed as uint8"):
        q.view(ember.uint8)
    with pytest.raises(RuntimeError, match="promotion with quantized dtypes"):
        ember.promote_types(ember.quint8, ember.float32)
    with pytest.raises(RuntimeError, match="not supported for quantized types"):
        _ = ember.qint8.is_signed


def test_factories_refuse_quantized_dtypes():
    for make in (lambda: ember.empty(3, dtype=ember.qint8), lambda: ember.zeros(3, dtype=ember.quint8),
                 lambda: ember.ops.aten.ones([2], dtype=ember.qint32)):
        with pytest.raises(NotImplementedError, match="quantized"):
            make()


def test_bad_arguments_raise_clear_errors():
    x = ember.tensor(samples())
    with pytest.raises(RuntimeError, match="zero_point 300 is above upper bound"):
        ember.quantize_per_tensor(x, 0.1, 300, ember.quint8)
    with pytest.raises(RuntimeError, match="zero_point -129 is below lower bound"):
        ember.quantize_per_tensor(x, 0.1, -129, ember.qint8)
    for scale in (0.0, -0.1, math.inf, math.nan):
        with pytest.raises(RuntimeError, match="positive, finite scale"):
            ember.quantize_per_tensor(x, scale, 0, ember.quint8)
    with pytest.raises(RuntimeError, match="quantizes only a float32 tensor, but got ember.float64"):
        ember.quantize_per_tensor(x.double(), 0.1, 0, ember.quint8)
    with pytest.raises(RuntimeError, match="expected a quantized dtype"):
        ember.quantize_per_tensor(x, 0.1, 0, ember.float32)
    with pytest.raises(RuntimeError, match="length of scales must equal to channel, expected 5 got, 2"):
        ember.quantize_per_channel(x, ember.tensor([0.1, 0.2]), ember.tensor([0, 0]), 0, ember.qint8)
    for axis in (2, -1):  # PyTorch takes no negative axis
        with pytest.raises(RuntimeError, match=f"Channel axis out of range in per channel affine quantization. Got: {axis}"):
            ember.quantize_per_channel(x, ember.tensor([0.1] * 5), ember.tensor([0] * 5), axis, ember.qint8)
    with pytest.raises(RuntimeError, match="Channel axis out of range"):
        ember.quantize_per_channel(ember.tensor(1.0), ember.tensor([0.1]), ember.tensor([0]), 0, ember.qint8)
    with pytest.raises(RuntimeError, match="positive, finite scale"):
        ember.quantize_per_channel(x, ember.tensor([0.1, 0, 0.1, 0.1, 0.1]), ember.tensor([0] * 5), 0, ember.qint8)
    with pytest.raises(RuntimeError, match="non-empty"):
        ember.quantize_per_tensor_dynamic(ember.zeros(0), ember.quint8, False)
    with pytest.raises(NotImplementedError, match="expects a quantized tensor"):
        x.q_scale()
    with pytest.raises(NotImplementedError, match="expected a quantized tensor"):
        x.int_repr()
    with pytest.raises(TypeError, match="scale must be float"):
        ember.quantize_per_tensor(x, "0.1", 0, ember.quint8)


def test_dequantize_of_a_float_tensor_is_a_float32_copy():
    x = ember.tensor([1.5, 2.0], dtype=ember.float64)
    y = x.dequantize()
    assert y.dtype == ember.float32 and y.tolist() == [1.5, 2.0]


def test_repr_prints_values_and_parameters():
    q = ember.quantize_per_tensor(ember.tensor([[-1.0, 0.05], [2.0, 100.0]]), 0.1, 10, ember.quint8)
    assert repr(q) == ("tensor([[-1.0000,  0.0000],\n        [ 2.0000, 24.5000]], size=(2, 2), dtype=ember.quint8, "
                       "quantization_scheme=ember.per_tensor_affine, scale=0.1, zero_point=10)")
    pc = ember.quantize_per_channel(ember.tensor([1.0, 2.0]), ember.tensor([0.5, 1.0]), ember.tensor([0, 1]), 0, ember.qint8)
    assert "quantization_scheme=ember.per_channel_affine, scale=tensor([0.5000, 1.0000], dtype=ember.float64), " \
           "zero_point=tensor([0, 1]), axis=0)" in repr(pc)


@pytest.mark.parametrize("weights_only", [True, False])
def test_checkpoints_round_trip(weights_only):
    x = ember.tensor(samples((3, 4)))
    saved = {"q": ember.quantize_per_tensor(x, 0.05, -3, ember.qint8),
             "t": ember.quantize_per_tensor(x, 0.05, 3, ember.quint8).t(),
             "i32": ember.quantize_per_tensor(x, 0.001, 7, ember.qint32),
             "pc": ember.quantize_per_channel(x, ember.tensor([0.1, 0.2, 0.3]), ember.tensor([0, 1, 2]), 0, ember.qint8),
             "fq": ember.quantize_per_channel(x, ember.tensor([0.1, 0.2, 0.3, 0.4]), ember.tensor([0.5, 1.0, 0.0, 2.0]),
                                              1, ember.quint8)}
    buffer = io.BytesIO()
    ember.save(saved, buffer)
    buffer.seek(0)
    loaded = ember.load(buffer, weights_only=weights_only)
    for key, q in saved.items():
        got = loaded[key]
        assert got.dtype == q.dtype and got.shape == q.shape and got.qscheme() is q.qscheme()
        np.testing.assert_array_equal(got.int_repr().numpy(), q.int_repr().numpy())
        np.testing.assert_array_equal(got.dequantize().numpy(), q.dequantize().numpy())


def _rezip(data: bytes, old: bytes, new: bytes) -> bytes:
    """The archive with `old` replaced by `new` in its data.pkl (CRCs recomputed)."""
    import zipfile

    source, out = zipfile.ZipFile(io.BytesIO(data)), io.BytesIO()
    with zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            payload = source.read(info)
            if info.filename.endswith("data.pkl"):
                assert payload.count(old) == 1
                payload = payload.replace(old, new)
            target.writestr(zipfile.ZipInfo(info.filename), payload)
    return out.getvalue()


def test_crafted_quantized_checkpoints_are_refused():
    import pickle
    import struct

    buffer = io.BytesIO()
    ember.save({"q": ember.quantize_per_tensor(ember.tensor([1.0, 2.0]), 0.375, 0, ember.quint8)}, buffer)
    scale = b"G" + struct.pack(">d", 0.375)
    negative = _rezip(buffer.getvalue(), scale, b"G" + struct.pack(">d", -0.375))
    for weights_only in (True, False):
        with pytest.raises((pickle.UnpicklingError, RuntimeError), match="positive, finite scale"):
            ember.load(io.BytesIO(negative), weights_only=weights_only)
    # a scale that is not a float: refused by the loader before any tensor is made
    with pytest.raises(pickle.UnpicklingError, match="parameters must be"):
        ember.load(io.BytesIO(_rezip(buffer.getvalue(), scale, b"X\x04\x00\x00\x00abcd")))
