"""Fake quantization (ember.fake_quantize_*, ember.fused_moving_avg_obs_fake_quant) and the QAT
half of ember.ao: forward against a NumPy reference of PyTorch's arithmetic (Note [fake quant
arithmetic] in ember/_fake_quant.py), straight-through and LSQ gradients, observers' statistics and
qparams against hand-computed values, and the input checks."""

import math
import warnings

import numpy as np
import pytest

import ember
import ember.ao.nn.qat as qat
from ember.ao import quantization as q
from ember.nn import functional as F


def reference(x, scale, zero_point, quant_min, quant_max, axis=None):
    """PyTorch's formula in NumPy: 1/scale in float32, q = rint(x * inv) + zp (rint(x * inv + zp) for
    a fractional zero point), out = (clamp(q) - zp) * scale, in float32 per tensor (float64 per
    channel), cast to x's dtype. Returns (out, inside)."""
    x = np.asarray(x)
    scale = np.asarray(scale, dtype=np.float32)
    zero_point = np.asarray(zero_point)
    if axis is not None:
        shape = [1] * x.ndim
        shape[axis] = -1
        scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
    work = np.float64 if x.dtype == np.float64 else np.float32
    inv = (np.float32(1) / scale).astype(work)
    zp = zero_point.astype(work)
    y = x.astype(work) * inv
    qv = np.rint(y + zp) if zero_point.dtype.kind == "f" else np.rint(y) + zp
    out_dtype = np.float32 if axis is None else np.float64
    out = (np.clip(qv, quant_min, quant_max).astype(out_dtype) - zp.astype(out_dtype)) * scale.astype(out_dtype)
    return out.astype(x.dtype), (qv >= quant_min) & (qv <= quant_max)


def grid_values(scale, zero_point, dtype=np.float32):
    """Exact .5 ties, the values at and beyond both clamp bounds, and random values."""
    rng = np.random.default_rng(0)
    ties = (np.arange(-40, 40) + 0.5) * np.float64(np.float32(scale))
    return np.concatenate([ties, rng.standard_normal(300) * 60 * scale, [0.0, -0.0, 1e6, -1e6]]).astype(dtype)


# ---- forward ------------------------------------------------------------------------------------

def test_ties_round_half_to_even():
    x = ember.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5])
    out = ember.fake_quantize_per_tensor_affine(x, 1.0, 0, -10, 10)
    assert out.tolist() == [0.0, 2.0, 2.0, 0.0, -2.0, -2.0, 4.0]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale,zero_point", [(0.1, 0), (0.03, -7), (1 / 3, 13), (2.5, -30)])
def test_per_tensor_matches_reference(dtype, scale, zero_point):
    x = grid_values(scale, zero_point, dtype)
    want, _ = reference(x, scale, zero_point, -30, 30)
    got = ember.fake_quantize_per_tensor_affine(ember.from_numpy(x), scale, zero_point, -30, 30)
    assert got.dtype == ember.from_numpy(x).dtype
    np.testing.assert_array_equal(got.numpy(), want)
    # the clamp bounds: quant_min and quant_max themselves, and beyond them
    assert got.numpy().max() == np.float32((30 - zero_point) * np.float32(scale)).astype(dtype)
    assert got.numpy().min() == np.float32((-30 - zero_point) * np.float32(scale)).astype(dtype)


@pytest.mark.parametrize("make", [lambda v, dt: ember.tensor(v, dtype=dt), lambda v, dt: ember.tensor([v], dtype=dt)])
def test_per_tensor_tensor_qparams(make):
    x = ember.from_numpy(grid_values(0.2, 3))
    want = ember.fake_quantize_per_tensor_affine(x, 0.2, 3, 0, 40)
    got = ember.fake_quantize_per_tensor_affine(x, make(0.2, ember.float32), make(3, ember.int32), 0, 40)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_half_input_keeps_dtype():
    x = ember.tensor([0.26, -1.3, 9.0], dtype=ember.float16)
    out = ember.fake_quantize_per_tensor_affine(x, 0.5, 0, -8, 8)
    assert out.dtype == ember.float16
    assert out.float().tolist() == [0.5, -1.5, 4.0]


def test_zero_size_and_zero_dim():
    empty = ember.zeros(0, 3)
    assert ember.fake_quantize_per_tensor_affine(empty, 0.1, 0, -5, 5).shape == (0, 3)
    out = ember.fake_quantize_per_channel_affine(empty, ember.ones(3), ember.zeros(3, dtype=ember.int32), 1, -5, 5)
    assert out.shape == (0, 3)
    scalar = ember.fake_quantize_per_tensor_affine(ember.tensor(2.5), 1.0, 0, 0, 5)
    assert scalar.shape == () and scalar.item() == 2.0


@pytest.mark.parametrize("axis", [0, 1, 2])
@pytest.mark.parametrize("float_zero_point", [False, True])
def test_per_channel_matches_reference(axis, float_zero_point):
    rng = np.random.default_rng(axis)
    x = (rng.standard_normal((4, 5, 6)) * 3).astype(np.float32)
    n = x.shape[axis]
    scale = (rng.random(n) * 0.2 + 0.01).astype(np.float32)
    zp = (rng.random(n) * 10 - 5).astype(np.float32) if float_zero_point else rng.integers(-20, 20, n).astype(np.int32)
    want, _ = reference(x, scale, zp, -30, 30, axis)
    got = ember.fake_quantize_per_channel_affine(ember.from_numpy(x), ember.from_numpy(scale), ember.from_numpy(zp),
                                                 axis, -30, 30)
    np.testing.assert_array_equal(got.numpy(), want)


def test_non_contiguous_input():
    base = np.random.default_rng(3).standard_normal((6, 4)).astype(np.float32)
    x = ember.from_numpy(base).t()  # (4, 6), strided
    assert not x.is_contiguous()
    scale, zp = np.array([0.1, 0.2, 0.05, 0.3], np.float32), np.array([1, -2, 0, 3], np.int32)
    got = ember.fake_quantize_per_channel_affine(x, ember.from_numpy(scale), ember.from_numpy(zp), 0, -10, 10)
    np.testing.assert_array_equal(got.numpy(), reference(base.T, scale, zp, -10, 10, 0)[0])
    got = ember.fake_quantize_per_tensor_affine(x, 0.1, -2, -10, 10)
    np.testing.assert_array_equal(got.numpy(), reference(base.T, 0.1, -2, -10, 10)[0])


# ---- gradients ----------------------------------------------------------------------------------

def test_per_tensor_straight_through_gradient():
    x = ember.from_numpy(grid_values(0.1, 2)).requires_grad_()
    ember.fake_quantize_per_tensor_affine(x, 0.1, 2, -20, 20).sum().backward()
    _, inside = reference(x.detach().numpy(), 0.1, 2, -20, 20)
    assert 0 < inside.sum() < inside.size  # both kinds of element are present
    np.testing.assert_array_equal(x.grad.numpy(), inside.astype(np.float32))


def test_per_channel_straight_through_gradient():
    rng = np.random.default_rng(5)
    data = (rng.standard_normal((3, 8)) * 4).astype(np.float32)
    scale, zp = np.array([0.1, 0.5, 0.05], np.float32), np.array([0, 3, -4], np.int32)
    x = ember.from_numpy(data).requires_grad_()
    weights = ember.from_numpy(rng.standard_normal((3, 8)).astype(np.float32))
    out = ember.fake_quantize_per_channel_affine(x, ember.from_numpy(scale), ember.from_numpy(zp), 0, -10, 10)
    (out * weights).sum().backward()
    _, inside = reference(data, scale, zp, -10, 10, 0)
    assert 0 < inside.sum() < inside.size
    np.testing.assert_array_equal(x.grad.numpy(), weights.numpy() * inside)


def _frozen_rounding_check(op, x, scale, zero_point, axis, quant_min, quant_max):
    """gradcheck of op's (LSQ) backward: the numerical side differentiates the function LSQ
    differentiates, i.e. the fake quantization with each rounding offset frozen at the test point;
    op - op.detach() adds op's analytic gradient and nothing to the value."""
    shape = [1] * x.dim()
    if axis is not None:
        shape[axis] = -1
    v0 = x.detach() / scale.detach().reshape(shape) + zero_point.detach().reshape(shape)
    offset = v0.round() - v0

    def fn(x, scale, zero_point):
        s, z = scale.reshape(shape), zero_point.reshape(shape)
        frozen = ((x / s + z + offset).clamp(quant_min, quant_max) - z) * s
        out = op(x, scale, zero_point)
        return frozen.detach() + (out - out.detach())

    assert ember.autograd.gradcheck(fn, (x, scale, zero_point), eps=1e-6, atol=1e-7, check_forward_ad=True)


def _off_edges(rng, shape):
    """Values v = x / scale + zero_point at least 0.1 from a rounding tie, rounding inside the clamp
    range [-7, 9] or clearly outside it (never onto an edge, where the clamp has a kink)."""
    targets = np.concatenate([np.arange(-14, -8), np.arange(-5, 8), np.arange(11, 16)])
    return rng.choice(targets, shape) + rng.uniform(-0.4, 0.4, shape)


def test_learnable_per_tensor_gradcheck():
    rng = np.random.default_rng(6)
    x = ember.tensor((_off_edges(rng, 40) - 1.0) * 0.25, dtype=ember.float64, requires_grad=True)
    scale = ember.tensor([0.25], dtype=ember.float64, requires_grad=True)  # exact in float32, as the op computes
    zero_point = ember.tensor([1.0], dtype=ember.float64, requires_grad=True)

    def op(x, s, z):
        return ember._fake_quantize_learnable_per_tensor_affine(x, s, z, -7, 9)

    _frozen_rounding_check(op, x, scale, zero_point, None, -7, 9)


@pytest.mark.parametrize("axis", [0, 1])
def test_learnable_per_channel_gradcheck(axis):
    rng = np.random.default_rng(7 + axis)
    steps, zps = np.array([0.25, 0.5, 0.125]), np.array([1.0, -2.0, 0.0])
    shape, along = ((3, 10), (slice(None), None)) if axis == 0 else ((10, 3), (None, slice(None)))
    data = (_off_edges(rng, shape) - zps[along]) * steps[along]
    x = ember.tensor(data, dtype=ember.float64, requires_grad=True)
    scale = ember.tensor(steps, dtype=ember.float64, requires_grad=True)
    zero_point = ember.tensor(zps, dtype=ember.float64, requires_grad=True)

    def op(x, s, z):
        return ember._fake_quantize_learnable_per_channel_affine(x, s, z, axis, -7, 9)

    _frozen_rounding_check(op, x, scale, zero_point, axis, -7, 9)


def test_learnable_per_tensor_values_and_zero_point_rounding():
    x = ember.tensor([0.3, 1.0, -0.6, 40.0, -40.0], requires_grad=True)
    scale = ember.tensor([0.5], requires_grad=True)
    zero_point = ember.tensor([2.5], requires_grad=True)
    out = ember._fake_quantize_learnable_per_tensor_affine(x, scale, zero_point, -10, 10, grad_factor=0.5)
    # forward: zero_point rounds half to even (2); q = rint(x / 0.5) + 2
    assert out.tolist() == [0.5, 1.0, -0.5, 4.0, -6.0]
    out.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0, 0.0, 0.0]
    # backward: zero_point is trunc(2.5 + 0.5) = 3, as PyTorch's; q = rint(3 + x / 0.5)
    # inside: (x_fq - x) / scale = (0.5-0.3)/0.5, (1-1)/0.5, (-0.5+0.6)/0.5; above: 10 - 3; below: -10 - 3
    want_scale = 0.5 * (0.4 + 0.0 + 0.2 + 7 - 13)
    assert math.isclose(scale.grad.item(), want_scale, rel_tol=1e-6)
    assert scale.grad.shape == (1,)
    assert math.isclose(zero_point.grad.item(), 0.5 * (-0.5 - 0.5), rel_tol=1e-6)


def test_learnable_per_channel_forward_rounds_zero_point():
    x = ember.randn(3, 4)
    scale = ember.tensor([0.1, 0.2, 0.3])
    out = ember._fake_quantize_learnable_per_channel_affine(x, scale, ember.tensor([0.5, 1.5, 99.0]), 0, -5, 5)
    want = ember.fake_quantize_per_channel_affine(x, scale, ember.tensor([0, 2, 5], dtype=ember.int32), 0, -5, 5)
    assert ember.equal(out, want)


def test_cachemask_ops_return_the_gradient_mask():
    x = ember.from_numpy(grid_values(0.1, 2))
    out, mask = ember.fake_quantize_per_tensor_affine_cachemask(x, 0.1, 2, -20, 20)
    want, inside = reference(x.numpy(), 0.1, 2, -20, 20)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(mask.numpy(), inside)
    assert mask.dtype == ember.bool
    scale, zp = ember.tensor([0.1, 0.3]), ember.tensor([1, -1], dtype=ember.int32)
    y = ember.randn(2, 5) * 4
    out, mask = ember.ops.aten.fake_quantize_per_channel_affine_cachemask(y, scale, zp, 0, -8, 8)
    want, inside = reference(y.numpy(), scale.numpy(), zp.numpy(), -8, 8, 0)
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(mask.numpy(), inside)


def test_straight_through_forward_mode():
    x = ember.from_numpy(grid_values(0.1, 2)).double()
    tangent = ember.randn(*x.shape, dtype=ember.float64)
    _, inside = reference(x.numpy(), 0.1, 2, -20, 20)
    with ember.autograd.forward_ad.dual_level():
        dual = ember.autograd.forward_ad.make_dual(x, tangent)
        out = ember.fake_quantize_per_tensor_affine(dual, 0.1, 2, -20, 20)
        got = ember.autograd.forward_ad.unpack_dual(out).tangent
    np.testing.assert_array_equal(got.numpy(), tangent.numpy() * inside)


def test_vmap_matches_a_loop():
    rng = np.random.default_rng(11)
    xs = ember.from_numpy((rng.standard_normal((4, 3, 5)) * 3).astype(np.float32))
    scale, zp = ember.tensor([0.1, 0.25, 0.5]), ember.tensor([0, 2, -3], dtype=ember.int32)
    cases = [
        lambda x: ember.fake_quantize_per_tensor_affine(x, 0.2, 1, -8, 8),
        lambda x: ember.fake_quantize_per_channel_affine(x, scale, zp, 0, -8, 8),
        lambda x: ember.fake_quantize_per_channel_affine_cachemask(x, scale, zp, 0, -8, 8)[1],
        lambda x: ember._fake_quantize_learnable_per_tensor_affine(x, ember.tensor([0.2]), ember.tensor([1.0]), -8, 8),
        lambda x: ember._fake_quantize_learnable_per_channel_affine(x, scale, zp.float(), 0, -8, 8),
    ]
    for fn in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a batching rule, not the per-element loop's warning
            got = ember.vmap(fn)(xs)
        assert ember.equal(got, ember.stack([fn(x) for x in xs]))


def test_learnable_gradients_under_vmap():
    """Per-sample gradients (vmap over grad) of the LSQ op equal a loop of ember.autograd.grad."""
    xs = ember.randn(3, 6, dtype=ember.float64) * 2
    scale, zp = ember.tensor([0.25], dtype=ember.float64), ember.tensor([1.0], dtype=ember.float64)

    def loss(x, s):
        return ember._fake_quantize_learnable_per_tensor_affine(x, s, zp, -7, 9).square().sum()

    got = ember.vmap(ember.func.grad(loss, argnums=1), in_dims=(0, None))(xs, scale)
    want = ember.stack([ember.func.grad(loss, argnums=1)(x, scale) for x in xs])
    assert ember.allclose(got, want, rtol=1e-12, atol=0)


def test_learnable_bad_input():
    x = ember.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"a Tensor with 2 elements cannot be converted to Scalar \(scale\)"):
        ember._fake_quantize_learnable_per_tensor_affine(x, ember.ones(2), ember.zeros(1), 0, 5)
    with pytest.raises(RuntimeError, match="`scale` must be positive, but got nan"):
        ember._fake_quantize_learnable_per_tensor_affine(x, ember.tensor([math.nan]), ember.zeros(1), 0, 5)
    with pytest.raises(RuntimeError, match="dimensions of scale and zero-point are not consistent"):
        ember._fake_quantize_learnable_per_channel_affine(x, ember.ones(2), ember.zeros(2), 1, 0, 5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember._fake_quantize_learnable_per_channel_affine(x, ember.ones(3), ember.zeros(3), 2, 0, 5)
    with pytest.raises(NotImplementedError, match="expects a floating point input, but got ember.int32"):
        ember.fake_quantize_per_channel_affine(ember.ones(2, 3, dtype=ember.int32), ember.ones(3),
                                               ember.zeros(3, dtype=ember.int32), 1, 0, 5)
    with pytest.raises(TypeError, match="scale must be a floating point tensor"):
        ember.fake_quantize_per_channel_affine(x, ember.ones(3, dtype=ember.int64), ember.zeros(3, dtype=ember.int32),
                                               1, 0, 5)


# ---- input checks -------------------------------------------------------------------------------

@pytest.mark.parametrize("args,error,message", [
    ((0.1, 0, 5, 3), RuntimeError, "`quant_min` should be less than or equal to `quant_max`."),
    ((0.1, 6, 0, 5), RuntimeError, "`zero_point` must be between `quant_min` and `quant_max`."),
    ((0.1, -1, 0, 5), RuntimeError, "`zero_point` must be between `quant_min` and `quant_max`."),
    ((0.0, 0, 0, 5), RuntimeError, "`scale` must be positive, but got 0"),
    ((-0.5, 0, 0, 5), RuntimeError, "`scale` must be positive, but got -0.5"),
    ((0.1, 0.5, 0, 5), TypeError, "zero_point must be int, not float"),
    ((0.1, 0, 0, 5.0), TypeError, "quant_max must be int, not float"),
])
def test_per_tensor_bad_input(args, error, message):
    with pytest.raises(error) as info:
        ember.fake_quantize_per_tensor_affine(ember.ones(3), *args)
    assert str(info.value).removeprefix("[fake_quantize_per_tensor_affine] ") == message


def test_per_tensor_bad_tensor_input():
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        ember.fake_quantize_per_tensor_affine(ember.ones(3), ember.tensor([1.0, 2.0]), 0, 0, 5)
    with pytest.raises(NotImplementedError, match="expects a floating point input, but got ember.int64"):
        ember.fake_quantize_per_tensor_affine(ember.arange(3), 1.0, 0, 0, 5)


def _channel_args(n=3, zp_dtype=ember.int32):
    return ember.ones(n), ember.zeros(n, dtype=zp_dtype)


@pytest.mark.parametrize("case,error,message", [
    (dict(axis=2), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (dict(axis=-1), RuntimeError, "`axis` must be between 0 and number of dimensions of input"),
    (dict(axis=0), RuntimeError, "dimensions of scale and zero-point are not consistent with input tensor"),
    (dict(qparams=(ember.ones(3), ember.zeros(2, dtype=ember.int32))), RuntimeError,
     "scale and zero-point need to have the same dimensions"),
    (dict(qparams=(ember.ones(3, 1), ember.zeros(3, dtype=ember.int32))), RuntimeError, "scale should be a 1-D tensor"),
    (dict(qparams=(ember.ones(3), ember.zeros(3, 1, dtype=ember.int32))), RuntimeError,
     "zero point should be a 1-D tensor"),
    (dict(qparams=(ember.ones(3), ember.tensor([0, 9, 0], dtype=ember.int32))), RuntimeError,
     "`zero_point` must be between `quant_min` and `quant_max`."),
    (dict(qparams=(ember.tensor([1.0, 0.0, 1.0]), ember.zeros(3, dtype=ember.int32))), RuntimeError,
     "`scale` must be positive, but got 0 at index 1"),
    (dict(range=(5, -5)), RuntimeError, "`quant_min` should be less than or equal to `quant_max`."),
])
def test_per_channel_bad_input(case, error, message):
    scale, zp = case.get("qparams", _channel_args())
    with pytest.raises(error) as info:
        ember.fake_quantize_per_channel_affine(ember.ones(2, 3), scale, zp, case.get("axis", 1), *case.get("range", (-5, 5)))
    assert str(info.value).removeprefix("[fake_quantize_per_channel_affine] ") == message


def test_per_channel_zero_dim_input():
    with pytest.raises(IndexError, match="Dimension specified as 0 but tensor has no dimensions"):
        ember.fake_quantize_per_channel_affine(ember.tensor(1.0), *_channel_args(1), 0, -5, 5)


# ---- fused observer + fake quant ----------------------------------------------------------------

def _fused_state(per_row=False):
    if per_row:
        return [ember.tensor([]), ember.tensor([]), ember.tensor([1.0]), ember.tensor([0], dtype=ember.int32)]
    return [ember.tensor(math.inf), ember.tensor(-math.inf), ember.tensor([1.0]), ember.tensor([0], dtype=ember.int32)]


def test_fused_per_tensor_updates_state_in_place():
    state = _fused_state()
    on = ember.tensor([1])
    batches = [ember.tensor([-1.0, 2.0, 0.5]), ember.tensor([-3.0, 4.0]), ember.tensor([0.0, 1.0])]
    for x in batches:
        out = ember.fused_moving_avg_obs_fake_quant(x, on, on, *state, 0.5, 0, 255, 0)
    # min: -1, then -1 + 0.5 * (-3 + 1) = -2, then -2 + 0.5 * (0 + 2) = -1; max: 2, 3, 2
    assert state[0].item() == -1.0 and state[1].item() == 2.0
    assert math.isclose(state[2].item(), 3 / 255, rel_tol=1e-6)
    assert state[3].tolist() == [85]  # rint(0 - (-1) / (3 / 255)) = rint(85.0)
    assert ember.equal(out, ember.fake_quantize_per_tensor_affine(batches[-1], state[2], state[3], 0, 255))


def test_fused_symmetric_qparams():
    state = _fused_state()
    on = ember.tensor([1])
    ember.fused_moving_avg_obs_fake_quant(ember.tensor([-2.0, 6.35]), on, on, *state, 0.01, 0, 255, 0, False, True)
    # the range widens to 255's proportions: step = max(2 / 128, 6.35 / 127) = 0.05, [-6.4, 6.35]
    assert math.isclose(state[2].item(), 0.05, rel_tol=1e-6)
    assert state[3].tolist() == [128]


def test_fused_small_and_zero_ranges():
    on = ember.tensor([1])
    state = _fused_state()
    ember.fused_moving_avg_obs_fake_quant(ember.zeros(3), on, on, *state, 0.01, 0, 255, 0)
    assert math.isclose(state[2].item(), 0.1, rel_tol=1e-7) and state[3].tolist() == [0]
    state = _fused_state()
    ember.fused_moving_avg_obs_fake_quant(ember.tensor([1e-6, 2e-6]), on, on, *state, 0.01, 0, 255, 0)
    assert math.isclose(state[2].item(), 6.1e-5, rel_tol=1e-6) and state[3].tolist() == [0]


def test_fused_per_row_resizes_empty_state():
    state = _fused_state(per_row=True)
    on = ember.tensor([1])
    x = ember.tensor([[-1.0, 1.0], [0.0, 2.0], [-4.0, 0.0]])
    out = ember.fused_moving_avg_obs_fake_quant(x, on, on, *state, 0.01, -128, 127, 0, True, True)
    assert state[0].tolist() == [-1.0, 0.0, -4.0] and state[1].tolist() == [1.0, 2.0, 0.0]
    assert state[3].tolist() == [0, -128, 127]
    assert ember.allclose(state[2], ember.tensor([1 / 127, 2 / 255, 4 / 255]))
    assert ember.equal(out, ember.fake_quantize_per_channel_affine(x, state[2], state[3], 0, -128, 127))


def test_fused_switches_off():
    state = _fused_state()
    x = ember.tensor([0.123, 5.0])
    off = ember.tensor([0])
    out = ember.fused_moving_avg_obs_fake_quant(x, off, off, *state, 0.01, 0, 255, 0)
    assert ember.equal(out, x) and out is not x
    assert state[0].item() == math.inf and state[2].tolist() == [1.0]
    with pytest.raises(RuntimeError, match="only supported on axis == 0"):
        ember.fused_moving_avg_obs_fake_quant(ember.ones(2, 3), off, off, *state, 0.01, 0, 255, 1, True)


# ---- observers ----------------------------------------------------------------------------------

BATCHES = [ember.tensor([[-1.0, 2.0], [0.5, 1.0]]), ember.tensor([[0.5, 3.0], [-0.5, 0.0]]),
           ember.tensor([[-2.0, 0.25], [1.0, 1.5]])]


def test_min_max_observer_affine():
    obs = q.MinMaxObserver()
    for x in BATCHES:
        assert obs(x) is x
    assert obs.min_val.item() == -2.0 and obs.max_val.item() == 3.0
    scale, zp = obs.calculate_qparams()
    assert math.isclose(scale.item(), 5 / 255, rel_tol=1e-6)
    assert zp.tolist() == [102] and zp.dtype == ember.int32  # 0 - rint(-2 / (5 / 255)) = rint(102.0)
    assert (obs.quant_min, obs.quant_max) == (0, 255)


@pytest.mark.parametrize("dtype,zero_point", [(ember.int8, 0), ("qint8", 0), (ember.uint8, 128), ("quint8", 128)])
def test_min_max_observer_symmetric(dtype, zero_point):
    obs = q.MinMaxObserver(dtype=dtype, qscheme=ember.per_tensor_symmetric)
    for x in BATCHES:
        obs(x)
    scale, zp = obs.calculate_qparams()
    assert math.isclose(scale.item(), 3.0 / 127.5, rel_tol=1e-6)
    assert zp.tolist() == [zero_point] and zp.dtype == ember.int64


def test_observer_ranges():
    assert (q.MinMaxObserver(dtype=ember.int8).quant_min, q.MinMaxObserver(dtype=ember.int8).quant_max) == (-128, 127)
    with pytest.warns(UserWarning, match="reduce_range will be deprecated"):
        reduced = q.MinMaxObserver(dtype="qint8", reduce_range=True)
    assert (reduced.quant_min, reduced.quant_max) == (-64, 63)
    custom = q.MinMaxObserver(quant_min=0, quant_max=15, qscheme=ember.per_tensor_symmetric)
    custom(ember.tensor([-1.0, 3.0]))
    scale, zp = custom.calculate_qparams()
    assert math.isclose(scale.item(), 3.0 / 7.5, rel_tol=1e-6) and zp.tolist() == [7]


def test_observer_eps_floor_and_defaults():
    obs = q.MinMaxObserver()
    with pytest.warns(UserWarning, match="must run observer before calling calculate_qparams"):
        scale, zp = obs.calculate_qparams()
    assert scale.tolist() == [1.0] and zp.tolist() == [0]
    obs(ember.zeros(4))
    scale, zp = obs.calculate_qparams()
    assert scale.item() == np.finfo(np.float32).eps and zp.tolist() == [0]
    obs.reset_min_max_vals()
    assert obs.min_val.item() == math.inf and obs.max_val.item() == -math.inf
    assert obs(ember.zeros(0)).shape == (0,) and obs.min_val.item() == math.inf


def test_moving_average_observer():
    obs = q.MovingAverageMinMaxObserver(averaging_constant=0.5)
    for x in BATCHES:
        obs(x)
    # min: -1, -1 + 0.5 * (-0.5 + 1) = -0.75, -0.75 + 0.5 * (-2 + 0.75) = -1.375; max: 2, 2.5, 2
    assert obs.min_val.item() == -1.375 and obs.max_val.item() == 2.0
    scale, zp = obs.calculate_qparams()
    assert math.isclose(scale.item(), 3.375 / 255, rel_tol=1e-6) and zp.tolist() == [104]


def test_per_channel_observers():
    obs = q.PerChannelMinMaxObserver(ch_axis=1)
    moving = q.MovingAveragePerChannelMinMaxObserver(averaging_constant=0.5, ch_axis=1, dtype=ember.int8,
                                                     qscheme=ember.per_channel_symmetric)
    for x in BATCHES:
        obs(x)
        moving(x)
    assert obs.min_val.tolist() == [-2.0, 0.0] and obs.max_val.tolist() == [1.0, 3.0]
    scale, zp = obs.calculate_qparams()
    assert ember.allclose(scale, ember.tensor([3 / 255, 3 / 255])) and zp.tolist() == [170, 0]
    # column 0: min -1, -0.75, -1.375; max 0.5, 0.5, 0.75. column 1: min 1, 0.5, 0.375; max 2, 2.5, 2
    assert moving.min_val.tolist() == [-1.375, 0.375] and moving.max_val.tolist() == [0.75, 2.0]
    scale, zp = moving.calculate_qparams()
    assert ember.allclose(scale, ember.tensor([1.375 / 127.5, 2.0 / 127.5])) and zp.tolist() == [0, 0]


def test_observer_bad_arguments():
    with pytest.raises(AssertionError, match="Used-specified quantization range must include 0."):
        q.MinMaxObserver(quant_min=1, quant_max=10)
    with pytest.raises(AssertionError, match="qmin must be strictly less than qmax"):
        q.MinMaxObserver(quant_min=0, quant_max=0)
    with pytest.raises(AssertionError, match="Default Observer only works for qint8, quint8 and quint4x2"):
        q.MinMaxObserver(dtype=ember.float32)
    with pytest.raises(NotImplementedError, match="Cannot reduce range for symmetric quantization for quint8"), \
            pytest.warns(UserWarning, match="reduce_range will be deprecated"):
        q.MinMaxObserver(qscheme=ember.per_tensor_symmetric, reduce_range=True)
    with pytest.raises(AssertionError, match="takes a per-channel qscheme"):
        q.PerChannelMinMaxObserver(qscheme=ember.per_tensor_affine)


# ---- FakeQuantize, QConfig, QAT modules ---------------------------------------------------------

def test_fake_quantize_switches():
    fq = q.FakeQuantize(observer=q.MinMaxObserver, quant_min=0, quant_max=255)
    x = ember.tensor([-1.0, 0.3, 2.0])
    out = fq(x)
    scale, zp = fq.calculate_qparams()
    assert ember.equal(fq.scale, scale) and ember.equal(fq.zero_point, zp)
    assert ember.equal(out, ember.fake_quantize_per_tensor_affine(x, scale, zp, 0, 255))
    fq.disable_fake_quant()
    assert fq(x) is x and fq.fake_quant_enabled.tolist() == [0]
    fq.enable_fake_quant()
    fq.disable_observer()
    fq(ember.tensor([-10.0, 10.0]))
    assert fq.activation_post_process.min_val.item() == -1.0 and ember.equal(fq.scale, scale)
    with pytest.raises(AssertionError, match="quant_max out of bound"):
        q.FakeQuantize(quant_min=0, quant_max=300)


def test_fake_quantize_per_channel_and_state_dict():
    fq = q.default_per_channel_weight_fake_quant()
    w = ember.tensor([[0.5, -1.0], [2.0, 0.25], [-0.1, 0.1]])
    out = fq(w)
    assert fq.scale.shape == (3,) and fq.is_per_channel
    assert ember.equal(out, ember.fake_quantize_per_channel_affine(w, fq.scale, fq.zero_point, 0, -128, 127))
    fresh = q.default_per_channel_weight_fake_quant()
    fresh.load_state_dict(fq.state_dict())
    assert ember.equal(fresh.scale, fq.scale) and ember.equal(fresh.activation_post_process.min_val,
                                                              fq.activation_post_process.min_val)


def test_fused_fake_quantize_module():
    fused = q.default_fused_act_fake_quant()
    state = _fused_state()
    for x in BATCHES:
        out = fused(x)
        want = ember.fused_moving_avg_obs_fake_quant(x, ember.tensor([1]), ember.tensor([1]), *state, 0.01, 0, 255, 0)
        assert ember.equal(out, want)
    assert ember.equal(fused.scale, state[2]) and ember.equal(fused.zero_point, state[3])
    with pytest.raises(AssertionError, match="only works with MovingAverageMinMaxObserver"):
        q.FusedMovingAvgObsFakeQuantize(observer=q.MinMaxObserver)


def test_qconfig_rejects_instances():
    with pytest.raises(ValueError, match="QConfig received observer instance"):
        q.QConfig(activation=q.MinMaxObserver(), weight=q.MinMaxObserver)
    assert q.default_qat_qconfig.weight().qscheme is ember.per_tensor_symmetric


def test_qat_linear_and_conv():
    ember.manual_seed(0)
    linear = qat.Linear(4, 3, qconfig=q.default_qat_qconfig)
    x = ember.randn(2, 4)
    out = linear(x)
    wq = linear.weight_fake_quant
    fq_weight = ember.fake_quantize_per_tensor_affine(linear.weight, wq.scale, wq.zero_point, -128, 127)
    assert ember.allclose(out, F.linear(x, fq_weight, linear.bias))
    out.sum().backward()
    assert linear.weight.grad.shape == (3, 4)

    conv = qat.Conv2d(2, 3, 3, padding=1, qconfig=q.QConfig(q.default_fake_quant, q.default_per_channel_weight_fake_quant))
    image = ember.randn(1, 2, 5, 5)
    got = conv(image)
    cq = conv.weight_fake_quant
    fq_weight = ember.fake_quantize_per_channel_affine(conv.weight, cq.scale, cq.zero_point, 0, -128, 127)
    assert ember.allclose(got, F.conv2d(image, fq_weight, conv.bias, padding=1))


def test_qat_from_float_and_back():
    float_linear = ember.nn.Linear(3, 2)
    float_linear.qconfig = q.default_qat_qconfig
    linear = qat.Linear.from_float(float_linear)
    assert linear.weight is float_linear.weight and isinstance(linear, qat.Linear)
    back = linear.to_float()  # as PyTorch's: new Parameters over the same memory, detached
    assert type(back) is ember.nn.Linear and back.weight is not float_linear.weight
    assert back.weight.data_ptr() == float_linear.weight.data_ptr() and back.weight.grad_fn is None
    with pytest.raises(AssertionError, match="qconfig must be provided for QAT module"):
        qat.Linear(3, 2)
    with pytest.raises(AssertionError, match="Input float module must have qconfig defined"):
        qat.Conv2d.from_float(ember.nn.Conv2d(1, 1, 1))
    unset = ember.nn.Conv2d(1, 1, 1)
    unset.qconfig = None
    with pytest.raises(AssertionError, match="Input float module must have a valid qconfig"):
        qat.Conv2d.from_float(unset)


def test_qscheme_constants():
    assert repr(ember.per_channel_affine) == "ember.per_channel_affine"
    assert q.per_tensor_affine is ember.per_tensor_affine
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert q.MinMaxObserver().qscheme is ember.per_tensor_affine
