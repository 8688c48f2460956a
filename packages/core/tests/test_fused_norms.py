"""The fused softmax and normalization ops (native/src/ops/normalization): forward against float64
NumPy references on contiguous, strided, zero-size and 0-dim inputs and the reduced dtypes;
backward by float64 gradcheck in both modes and gradgradcheck (which runs the composed
create_graph formulas); the one-pass backward kernels equal those formulas; bad input raises."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def _softmax_ref(x, axis):
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


# ---- softmax / log_softmax ------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("log", [False, True])
def test_softmax_matches_float64_reference(dim, log):
    x = RNG.standard_normal((7, 5, 33)) * 4
    fn = ember.log_softmax if log else ember.softmax
    want = _softmax_ref(x, dim)
    want = np.log(want) if log else want
    np.testing.assert_allclose(fn(_t(x), dim).numpy(), want, rtol=1e-12, atol=1e-13)
    got32 = fn(_t(x.astype(np.float32)), dim).numpy()
    np.testing.assert_allclose(got32, want, rtol=2e-6, atol=2e-6)
    # strided input (a transposed view) and an expanded one
    xt = _t(x).transpose(0, 2)
    np.testing.assert_allclose(fn(xt, dim).numpy(), np.moveaxis(
        np.log(_softmax_ref(x.transpose(2, 1, 0), dim)) if log else _softmax_ref(x.transpose(2, 1, 0), dim), 0, 0),
        rtol=1e-12, atol=1e-13)


def test_softmax_edge_shapes_and_values():
    assert ember.softmax(ember.tensor(3.0), 0).item() == 1.0
    assert ember.log_softmax(ember.tensor(3.0), -1).item() == 0.0
    assert ember.softmax(ember.zeros(0, 4), 1).shape == (0, 4)
    assert ember.softmax(ember.zeros(3, 0), 1).shape == (3, 0)
    row = ember.tensor([[-np.inf, 0.0, -np.inf], [1000.0, 1000.0, -1000.0]])
    np.testing.assert_allclose(ember.softmax(row, 1).numpy(), [[0, 1, 0], [0.5, 0.5, 0]])
    for dtype in (ember.float16, ember.bfloat16):
        x = RNG.standard_normal((4, 19)).astype(np.float32)
        got = ember.softmax(_t(x).to(dtype), -1)
        assert got.dtype == dtype
        np.testing.assert_allclose(got.to(ember.float32).numpy(), _softmax_ref(x, -1), rtol=2e-2, atol=2e-3)
    assert ember.softmax(_t(np.arange(6).reshape(2, 3)), 1, dtype=ember.float64).dtype == ember.float64


@pytest.mark.parametrize("log", [False, True])
def test_softmax_gradients(log):
    fn = ember.log_softmax if log else ember.softmax
    x = _t(RNG.standard_normal((3, 4, 5)), True)
    assert gradcheck(lambda a: fn(a, 1), (x,), check_forward_ad=True)
    assert gradgradcheck(lambda a: fn(a, -1), (x,))
    g = _t(RNG.standard_normal((3, 4, 5)))
    (fused,) = ember.autograd.grad(fn(x, 1), x, g)
    (composed,) = ember.autograd.grad(fn(x, 1), x, g, create_graph=True)
    np.testing.assert_allclose(fused.numpy(), composed.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_softmax_backward_data_checks_its_arguments():
    with pytest.raises(ValueError, match="expected grad_output and output of one shape"):
        ember.ops.aten._softmax_backward_data(ember.ones(2, 3), ember.ones(3, 2), 1, ember.float32)
    with pytest.raises(IndexError, match="Dimension out of range"):
        ember.softmax(ember.ones(2, 3), 2)


# ---- layer norm and RMS norm ----------------------------------------------------------------------


def _layer_norm_ref(x, k, w=None, b=None, eps=1e-5, rms=False):
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = 0.0 if rms else x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(var + eps)
    y = (x - mean) * rstd
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y, mean, rstd


@pytest.mark.parametrize("shape,k", [((6, 10), 1), ((3, 4, 5), 2), ((2, 3, 70), 1), ((5, 1), 1)])
def test_native_layer_norm_matches_reference(shape, k):
    x = RNG.standard_normal(shape) * 3 + 1
    w, b = RNG.standard_normal(shape[-k:]), RNG.standard_normal(shape[-k:])
    out, mean, rstd = ember.native_layer_norm(_t(x), list(shape[-k:]), _t(w), _t(b), 1e-5)
    y, m, r = _layer_norm_ref(x, k, w, b)
    np.testing.assert_allclose(out.numpy(), y, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(mean.numpy(), np.broadcast_to(m, mean.shape), rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(rstd.numpy(), np.broadcast_to(r, rstd.shape), rtol=1e-12)
    assert tuple(mean.shape) == tuple(shape[:-k]) + (1,) * k
    # float32, a strided (transposed) input and no affine parameters
    strided = _t(np.ascontiguousarray(np.moveaxis(x.astype(np.float32), 0, -1))).movedim(-1, 0)
    assert shape[-1] == 1 or not strided.is_contiguous()
    got = F.layer_norm(strided, shape[-k:])
    np.testing.assert_allclose(got.numpy(), _layer_norm_ref(x, k)[0], rtol=1e-4, atol=1e-4)


def test_layer_norm_reduced_precision_and_empty():
    x = RNG.standard_normal((4, 33)).astype(np.float32)
    for dtype in (ember.float16, ember.bfloat16):
        out, mean, rstd = ember.native_layer_norm(_t(x).to(dtype), [33], None, None, 1e-5)
        assert out.dtype == dtype and mean.dtype == ember.float32 and rstd.dtype == ember.float32
        np.testing.assert_allclose(out.to(ember.float32).numpy(), _layer_norm_ref(x, 1)[0], rtol=5e-2, atol=5e-2)
    out, mean, _ = ember.native_layer_norm(ember.zeros(0, 8), [8], None, None, 1e-5)
    assert out.shape == (0, 8) and mean.shape == (0, 1)


def test_rms_norm_matches_reference():
    x, w = RNG.standard_normal((5, 3, 17)), RNG.standard_normal(17)
    out, rstd = ember._fused_rms_norm(_t(x), [17], _t(w), 1e-6)
    y, _, r = _layer_norm_ref(x, 1, w, eps=1e-6, rms=True)
    np.testing.assert_allclose(out.numpy(), y, rtol=1e-11)
    np.testing.assert_allclose(rstd.numpy(), r, rtol=1e-12)
    np.testing.assert_allclose(F.rms_norm(_t(x), [17], _t(w), eps=1e-6).numpy(), y, rtol=1e-11)


def test_layer_norm_and_rms_norm_gradients():
    x = _t(RNG.standard_normal((3, 2, 4)), True)
    w, b = _t(RNG.standard_normal((2, 4)), True), _t(RNG.standard_normal((2, 4)), True)
    f = lambda a, ww, bb: ember.native_layer_norm(a, [2, 4], ww, bb, 1e-5)[0]  # noqa: E731
    assert gradcheck(f, (x, w, b), check_forward_ad=True)
    assert gradgradcheck(f, (x, w, b))
    assert gradcheck(lambda a: ember.native_layer_norm(a, [4], None, None, 1e-5)[0], (x,), check_forward_ad=True)
    g = lambda a, ww: ember._fused_rms_norm(a, [2, 4], ww, 1e-5)[0]  # noqa: E731
    assert gradcheck(g, (x, w), check_forward_ad=True)
    assert gradgradcheck(g, (x, w))


@pytest.mark.parametrize("which", ["layer", "rms"])
def test_fused_row_norm_backward_equals_the_composed_formula(which):
    x = _t(RNG.standard_normal((9, 37)), True)
    w, b = _t(RNG.standard_normal(37), True), _t(RNG.standard_normal(37), True)
    g = _t(RNG.standard_normal((9, 37)))

    def run(create_graph):
        y = F.layer_norm(x, [37], w, b) if which == "layer" else F.rms_norm(x, [37], w, eps=1e-5)
        inputs = (x, w, b) if which == "layer" else (x, w)
        return [t.detach().numpy() for t in ember.autograd.grad(y, inputs, g, create_graph=create_graph)]

    for fused, composed in zip(run(False), run(True), strict=True):
        np.testing.assert_allclose(fused, composed, rtol=1e-11, atol=1e-12)


def test_layer_norm_rejects_bad_shapes():
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\]"):
        ember.native_layer_norm(ember.ones(2, 3), [4], None, None, 1e-5)
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        ember.native_layer_norm(ember.ones(2, 3), [3], ember.ones(2), None, 1e-5)
    with pytest.raises(ValueError, match="expected mean and rstd of 2 elements"):
        ember.native_layer_norm_backward(ember.ones(2, 3), ember.ones(2, 3), [3], ember.ones(3), ember.ones(3), None,
                                         None)


# ---- group norm and batch norm --------------------------------------------------------------------


def test_native_group_norm_matches_reference():
    x = RNG.standard_normal((3, 6, 5, 4)) * 2 + 0.5
    w, b = RNG.standard_normal(6), RNG.standard_normal(6)
    out, mean, rstd = ember.native_group_norm(_t(x), _t(w), _t(b), 3, 6, 20, 3, 1e-5)
    g = x.reshape(3, 3, -1)
    m, v = g.mean(-1), g.var(-1)
    want = ((g - m[..., None]) / np.sqrt(v[..., None] + 1e-5)).reshape(x.shape) * w[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(mean.numpy(), m, rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(F.group_norm(_t(x.astype(np.float32)), 3, _t(w.astype(np.float32)),
                                            _t(b.astype(np.float32))).numpy(), want, rtol=1e-4, atol=1e-4)


def test_group_norm_gradients_and_fused_backward():
    x = _t(RNG.standard_normal((2, 4, 3)), True)
    w, b = _t(RNG.standard_normal(4), True), _t(RNG.standard_normal(4), True)
    f = lambda a, ww, bb: ember.native_group_norm(a, ww, bb, 2, 4, 3, 2, 1e-5)[0]  # noqa: E731
    assert gradcheck(f, (x, w, b), check_forward_ad=True)
    assert gradgradcheck(f, (x, w, b))
    g = _t(RNG.standard_normal((2, 4, 3)))
    fused = ember.autograd.grad(f(x, w, b), (x, w, b), g)
    composed = ember.autograd.grad(f(x, w, b), (x, w, b), g, create_graph=True)
    for a, c in zip(fused, composed, strict=True):
        np.testing.assert_allclose(a.numpy(), c.detach().numpy(), rtol=1e-11, atol=1e-12)


def test_native_batch_norm_training_and_running_statistics():
    x = RNG.standard_normal((8, 3, 5, 2)) * 3 + 2
    w, b = RNG.standard_normal(3), RNG.standard_normal(3)
    rm, rv = _t(np.zeros(3)), _t(np.ones(3))
    out, save_mean, save_invstd = ember.native_batch_norm(_t(x), _t(w), _t(b), rm, rv, True, 0.1, 1e-5)
    axes = (0, 2, 3)
    m, v = x.mean(axes), x.var(axes)
    want = (x - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-5) * w[:, None, None] + b[:, None, None]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(save_mean.numpy(), m, rtol=1e-12)
    np.testing.assert_allclose(save_invstd.numpy(), 1 / np.sqrt(v + 1e-5), rtol=1e-12)
    n = x.size // 3
    np.testing.assert_allclose(rm.numpy(), 0.1 * m, rtol=1e-12)
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * v * n / (n - 1), rtol=1e-12)
    # evaluation uses the running statistics, in one pass
    out, s1, s2 = ember.native_batch_norm(_t(x), _t(w), _t(b), rm, rv, False, 0.1, 1e-5)
    want = (x - rm.numpy()[:, None, None]) / np.sqrt(rv.numpy()[:, None, None] + 1e-5) * w[:, None, None] \
        + b[:, None, None]
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-11, atol=1e-12)
    assert s1.numel() == 0 and s2.numel() == 0


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_gradients_and_fused_backward(training):
    x = _t(RNG.standard_normal((4, 3, 2)), True)
    w, b = _t(RNG.standard_normal(3), True), _t(RNG.standard_normal(3), True)
    rm, rv = _t(RNG.standard_normal(3)), _t(RNG.uniform(0.5, 2, 3))

    def f(a, ww, bb):  # copies, so the running statistics do not move between gradcheck's calls
        return ember.native_batch_norm(a, ww, bb, rm.clone(), rv.clone(), training, 0.1, 1e-5)[0]

    assert gradcheck(f, (x, w, b), check_forward_ad=True)
    assert gradgradcheck(f, (x, w, b))
    g = _t(RNG.standard_normal((4, 3, 2)))
    fused = ember.autograd.grad(f(x, w, b), (x, w, b), g)
    composed = ember.autograd.grad(f(x, w, b), (x, w, b), g, create_graph=True)
    for a, c in zip(fused, composed, strict=True):
        np.testing.assert_allclose(a.numpy(), c.detach().numpy(), rtol=1e-11, atol=1e-12)


def test_batch_norm_module_trains_the_same_as_the_formula():
    bn = ember.nn.BatchNorm2d(3).double()
    x = _t(RNG.standard_normal((6, 3, 4, 4)), True)
    (bn(x) ** 2).sum().backward()
    assert x.grad is not None and bn.weight.grad is not None and bn.bias.grad is not None
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.1 * x.detach().numpy().mean((0, 2, 3)), rtol=1e-12)


def test_channel_norms_reject_bad_input():
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible by num_groups"):
        ember.native_group_norm(ember.ones(2, 5, 3), None, None, 2, 5, 3, 2, 1e-5)
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        ember.native_batch_norm(ember.ones(1, 3), None, None, None, None, True, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="running_mean and running_var must be defined in evaluation mode"):
        ember.native_batch_norm(ember.ones(4, 3), None, None, None, None, False, 0.1, 1e-5)
    with pytest.raises(RuntimeError, match="weight should contain 3 elements not 2"):
        ember.native_batch_norm(ember.ones(4, 3), ember.ones(2), None, None, None, True, 0.1, 1e-5)
