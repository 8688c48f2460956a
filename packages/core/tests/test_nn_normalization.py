"""layer_norm, rms_norm, group_norm, instance_norm, local_response_norm and normalize against
float64 NumPy references (contiguous, non-contiguous, zero-size batches), by gradcheck, and the
LayerNorm / RMSNorm / GroupNorm / InstanceNorm* / LocalResponseNorm layers: running statistics,
reprs, state-dict keys and argument errors."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

RNG = np.random.default_rng(17)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def _noncontig(a):
    t = _t(np.ascontiguousarray(np.swapaxes(a, 0, -1))).transpose(0, -1)
    assert not t.is_contiguous()
    return t


def _ref_norm(x, axes, eps):
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps)


def test_layer_norm_and_rms_norm():
    x = RNG.normal(size=(3, 4, 5))
    w, b = RNG.normal(size=(4, 5)), RNG.normal(size=(4, 5))
    want = _ref_norm(x, (1, 2), 1e-5) * w + b
    np.testing.assert_allclose(F.layer_norm(_t(x), (4, 5), _t(w), _t(b)).numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(F.layer_norm(_noncontig(x), [5]).numpy(), _ref_norm(x, (2,), 1e-5), rtol=1e-10,
                               atol=1e-12)
    assert tuple(F.layer_norm(_t(np.zeros((0, 5))), 5).shape) == (0, 5)
    rms = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-6)
    np.testing.assert_allclose(F.rms_norm(_t(x), [5], _t(w[0]), eps=1e-6).numpy(), rms * w[0], rtol=1e-12)
    default = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + np.finfo(np.float64).eps)
    np.testing.assert_allclose(F.rms_norm(_t(x), 5).numpy(), default, rtol=1e-12)
    assert gradcheck(lambda a, ww, bb: F.layer_norm(a, (4, 5), ww, bb), (_t(x[:1], True), _t(w, True), _t(b, True)))
    assert gradcheck(lambda a, ww: F.rms_norm(a, [5], ww), (_t(x[:2], True), _t(w[0], True)))
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], but "
                                           r"got input of size\[3, 4, 5\]"):
        F.layer_norm(_t(x), 4)
    with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
        F.layer_norm(_t(x), 5, _t(w))


def test_group_norm():
    x = RNG.normal(size=(2, 6, 3, 2))
    w, b = RNG.normal(size=6), RNG.normal(size=6)
    grouped = _ref_norm(x.reshape(2, 3, -1), (2,), 1e-5).reshape(x.shape)
    want = grouped * w[None, :, None, None] + b[None, :, None, None]
    np.testing.assert_allclose(F.group_norm(_t(x), 3, _t(w), _t(b)).numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(F.group_norm(_noncontig(x), 3).numpy(), grouped, rtol=1e-10, atol=1e-12)
    assert tuple(F.group_norm(_t(np.zeros((0, 6, 2))), 2).shape) == (0, 6, 2)
    assert gradcheck(lambda a, ww, bb: F.group_norm(a, 2, ww, bb), (_t(x[:1], True), _t(w, True), _t(b, True)))
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible by num_groups"):
        F.group_norm(_t(x), 4)
    with pytest.raises(RuntimeError, match="Expected weight to be a vector of size equal to the number of channels"):
        F.group_norm(_t(x), 3, _t(np.ones(3)))


def test_instance_norm_with_and_without_running_stats():
    x = RNG.normal(size=(3, 2, 5))
    w, b = RNG.normal(size=2), RNG.normal(size=2)
    want = _ref_norm(x, (2,), 1e-5) * w[None, :, None] + b[None, :, None]
    np.testing.assert_allclose(F.instance_norm(_t(x), weight=_t(w), bias=_t(b)).numpy(), want, rtol=1e-10,
                               atol=1e-12)
    mean, var = _t(np.zeros(2)), _t(np.ones(2))
    F.instance_norm(_t(x), mean, var, momentum=0.5)
    np.testing.assert_allclose(mean.numpy(), 0.5 * x.mean(2).mean(0), rtol=1e-12)
    np.testing.assert_allclose(var.numpy(), 0.5 + 0.5 * x.var(2, ddof=1).mean(0), rtol=1e-12)
    used = F.instance_norm(_t(x), mean, var, use_input_stats=False).numpy()
    np.testing.assert_allclose(used, (x - mean.numpy()[None, :, None]) / np.sqrt(var.numpy()[None, :, None] + 1e-5),
                               rtol=1e-12)
    assert gradcheck(lambda a, ww: F.instance_norm(a, weight=ww), (_t(x[:2], True), _t(w, True)))
    with pytest.raises(ValueError, match="Expected more than 1 spatial element when training"):
        F.instance_norm(_t(np.zeros((2, 3, 1))))
    with pytest.raises(ValueError, match="Expected 3D or higher input to instance_norm"):
        F.instance_norm(_t(np.zeros((2, 3))))


def test_local_response_norm_and_normalize():
    x = RNG.normal(size=(2, 5, 3))
    size, alpha, beta, k = 3, 1e-2, 0.75, 2.0
    want = np.zeros_like(x)
    for c in range(5):
        lo, hi = max(c - size // 2, 0), min(c + (size - 1) // 2, 4)
        want[:, c] = x[:, c] / (k + alpha / size * (x[:, lo:hi + 1] ** 2).sum(1)) ** beta
    np.testing.assert_allclose(F.local_response_norm(_t(x), size, alpha, beta, k).numpy(), want, rtol=1e-12)
    assert gradcheck(lambda a: F.local_response_norm(a, 2, 0.1, 0.75, 1.0), (_t(x[:1], True),))
    with pytest.raises(ValueError, match="Expected 3D or higher dimensionality input"):
        F.local_response_norm(_t(np.zeros((2, 3))), 2)
    for p in (1.0, 2.0, 3.0):
        norms = (np.abs(x) ** p).sum(1, keepdims=True) ** (1 / p)
        np.testing.assert_allclose(F.normalize(_t(x), p=p).numpy(), x / norms, rtol=1e-12)
    np.testing.assert_array_equal(F.normalize(_t(np.zeros((2, 3))), dim=-1).numpy(), 0.0)  # eps keeps 0 / 0 out
    out = _t(np.zeros_like(x))
    assert F.normalize(_noncontig(x), dim=2, out=out) is out
    np.testing.assert_allclose(out.numpy(), x / np.linalg.norm(x, axis=2, keepdims=True), rtol=1e-12)
    assert gradcheck(lambda a: F.normalize(a, dim=0), (_t(x[:, :, 0], True),))


def test_normalization_layers():
    x = _t(RNG.normal(size=(4, 6, 5)))
    ln = nn.LayerNorm(5)
    assert sorted(ln.state_dict()) == ["bias", "weight"]
    assert repr(ln) == "LayerNorm((5,), eps=1e-05, elementwise_affine=True)"
    np.testing.assert_allclose(ln.double()(x).detach().numpy(), F.layer_norm(x, [5]).numpy(), rtol=1e-12)
    assert nn.LayerNorm([6, 5], bias=False).bias is None
    assert repr(nn.RMSNorm([5])) == "RMSNorm((5,), eps=None, elementwise_affine=True)"
    gn = nn.GroupNorm(3, 6)
    assert repr(gn) == "GroupNorm(3, 6, eps=1e-05, affine=True)" and sorted(gn.state_dict()) == ["bias", "weight"]
    with pytest.raises(ValueError, match="num_channels must be divisible by num_groups"):
        nn.GroupNorm(4, 6)
    inorm = nn.InstanceNorm1d(6, track_running_stats=True).double()
    assert repr(nn.InstanceNorm2d(3)) == \
        "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, track_running_stats=False)"
    assert sorted(inorm.state_dict()) == ["num_batches_tracked", "running_mean", "running_var"]
    trained = inorm(x)
    np.testing.assert_allclose(trained.numpy(), F.instance_norm(x).numpy(), rtol=1e-12)
    assert np.abs(inorm.running_mean.numpy()).max() > 0
    inorm.eval()
    np.testing.assert_allclose(inorm(x).numpy(), F.instance_norm(x, inorm.running_mean, inorm.running_var,
                                                                 use_input_stats=False).numpy(), rtol=1e-12)
    np.testing.assert_allclose(nn.InstanceNorm1d(6)(x[0]).numpy(), F.instance_norm(x[:1]).numpy()[0], rtol=1e-12)
    with pytest.raises(ValueError, match="expected 2D or 3D input \\(got 4D input\\)"):
        nn.InstanceNorm1d(6)(_t(np.zeros((1, 6, 2, 2))))
    assert repr(nn.LocalResponseNorm(2)) == "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"
