"""The native pooling ops (native/src/ops/pooling): values against float64 loops over explicit
windows, PyTorch's NaN and tie rules, gradients by gradcheck in both modes and gradgradcheck
(the backward ops are linear, differentiated by the forward ones), and bad input."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(5)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def _out_size(size, k, s, p, d, ceil):
    span = size + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil else span // s) + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def pool_ref(x, k, s, p, d, ceil, mode, count_include_pad=True, divisor=None):
    """Loops over windows of the trailing len(k) dims: max (value, flat index) or average."""
    n = len(k)
    spatial = x.shape[-n:]
    outs = [_out_size(spatial[i], k[i], s[i], p[i], d[i], ceil) for i in range(n)]
    lead = x.shape[:-n]
    y = np.zeros(lead + tuple(outs))
    idx = np.zeros(lead + tuple(outs), dtype=np.int64)
    for o in itertools.product(*[range(v) for v in outs]):
        starts = [o[i] * s[i] - p[i] for i in range(n)]
        taps = [[starts[i] + j * d[i] for j in range(k[i]) if 0 <= starts[i] + j * d[i] < spatial[i]] for i in range(n)]
        cells = list(itertools.product(*taps))
        flat = [np.ravel_multi_index(c, spatial) for c in cells]
        vals = np.stack([x[(Ellipsis,) + c] for c in cells], -1)
        if mode == "max":
            y[(Ellipsis,) + o] = vals.max(-1)
            idx[(Ellipsis,) + o] = np.array(flat)[vals.argmax(-1)]
        else:
            if divisor:
                div = divisor
            elif count_include_pad:
                div = np.prod([min(starts[i] + k[i], spatial[i] + p[i]) - starts[i] for i in range(n)])
            else:
                div = len(cells)
            y[(Ellipsis,) + o] = vals.sum(-1) / div
    return y, idx


@pytest.mark.parametrize("k,s,p,d,ceil", [((3, 3), (2, 2), (1, 1), (1, 1), False), ((2, 3), (2, 1), (1, 0), (2, 1), True),
                                          ((3,), (2,), (1,), (1,), True), ((2, 2, 2), (1, 2, 1), (1, 0, 1), (1, 1, 2), False)])
def test_max_pool_matches_reference(k, s, p, d, ceil):
    x = RNG.standard_normal((2, 3) + (7, 6, 5)[:len(k)])
    out, idx = ember.max_pool_with_indices(_t(x), list(k), list(s), list(p), list(d), ceil)
    want, want_idx = pool_ref(x, k, s, p, d, ceil, "max")
    np.testing.assert_array_equal(out.numpy(), want)
    np.testing.assert_array_equal(idx.numpy(), want_idx)
    f = getattr(F, f"max_pool{len(k)}d")
    got, got_idx = f(_t(x.astype(np.float32)), k, s, p, d, ceil, return_indices=True)
    np.testing.assert_array_equal(got_idx.numpy(), want_idx)
    # unbatched and strided input
    np.testing.assert_array_equal(f(_t(x[0]), k, s, p, d, ceil).numpy(), want[0])
    xs = _t(np.repeat(x, 2, axis=1))[:, ::2]
    np.testing.assert_array_equal(f(xs, k, s, p, d, ceil).numpy(), want)


def test_max_pool_nan_and_ties_follow_pytorch():
    x = _t(np.array([[[[1.0, np.nan, 3.0, np.nan]]]]))
    out, idx = ember.max_pool_with_indices(x, [1, 4], [1, 4], [0, 0], [1, 1], False)
    assert np.isnan(out.item()) and idx.item() == 3  # any NaN takes over, so the last one wins
    ties = _t(np.zeros((1, 1, 2, 2)))
    assert ember.max_pool_with_indices(ties, [2, 2], [2, 2], [0, 0], [1, 1], False)[1].item() == 0


@pytest.mark.parametrize("k,s,p,ceil,cip,div", [((3, 3), (2, 2), (1, 1), False, True, None),
                                                ((3, 2), (2, 2), (1, 1), True, False, None),
                                                ((2, 2), (1, 1), (1, 0), True, True, 3),
                                                ((3,), (2,), (1,), True, True, None)])
def test_avg_pool_matches_reference(k, s, p, ceil, cip, div):
    x = RNG.standard_normal((2, 3) + (7, 6)[:len(k)])
    out = ember.avg_pool(_t(x), list(k), list(s), list(p), ceil, cip, div)
    want, _ = pool_ref(x, k, s, p, (1,) * len(k), ceil, "avg", cip, div)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-14)


def test_adaptive_pools_match_reference():
    x = RNG.standard_normal((2, 3, 7, 5))
    out = ember.adaptive_avg_pool(_t(x), [3, 2])
    want = np.zeros((2, 3, 3, 2))
    for i, j in itertools.product(range(3), range(2)):
        h0, h1 = (i * 7) // 3, -((-(i + 1) * 7) // 3)
        w0, w1 = (j * 5) // 2, -((-(j + 1) * 5) // 2)
        want[..., i, j] = x[..., h0:h1, w0:w1].mean((-1, -2))
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(F.adaptive_avg_pool2d(_t(x), 1).numpy(), x.mean((2, 3), keepdims=True), rtol=1e-12)
    mx, idx = ember.adaptive_max_pool(_t(x), [3, 2])
    assert mx.shape == (2, 3, 3, 2) and idx.dtype == ember.int64
    np.testing.assert_array_equal(np.take_along_axis(x.reshape(2, 3, -1), idx.numpy().reshape(2, 3, -1), 2),
                                  mx.numpy().reshape(2, 3, -1))


def test_pooling_gradients():
    x = _t(RNG.standard_normal((2, 2, 5, 4)), True)
    for f in (lambda a: ember.max_pool_with_indices(a, [2, 3], [2, 1], [1, 1], [1, 1], True)[0],
              lambda a: ember.avg_pool(a, [3, 2], [2, 1], [1, 0], True, False, None),
              lambda a: ember.adaptive_avg_pool(a, [3, 3]),
              lambda a: ember.adaptive_max_pool(a, [2, 3])[0]):
        assert gradcheck(f, (x,), check_forward_ad=True)
        assert gradgradcheck(f, (x,))
    x1 = _t(RNG.standard_normal((2, 7)), True)
    assert gradcheck(lambda a: F.avg_pool1d(a, 3, 2, 1), (x1,), check_forward_ad=True)
    x3 = _t(RNG.standard_normal((1, 1, 3, 4, 4)), True)
    assert gradcheck(lambda a: F.max_pool3d(a, 2, 1), (x3,), check_forward_ad=True)


def test_backward_ops_are_checked_and_linear():
    x = _t(RNG.standard_normal((1, 1, 4, 4)))
    out, idx = ember.max_pool_with_indices(x, [2, 2], [2, 2], [0, 0], [1, 1], False)
    g = _t(RNG.standard_normal((1, 1, 2, 2)), True)
    assert gradcheck(lambda gg: ember.max_pool_with_indices_backward(gg, x, idx, 2), (g,), check_forward_ad=True)
    assert gradcheck(lambda gg: ember.adaptive_avg_pool_backward(gg, x, [2, 2]), (g,), check_forward_ad=True)
    assert gradcheck(lambda gg: ember.avg_pool_backward(gg, x, [2, 2], [2, 2], [0, 0], False, True, None), (g,),
                     check_forward_ad=True)
    bad = _t(np.array([[[[0, 1], [2, 16]]]], dtype=np.int64))
    with pytest.raises(IndexError, match="index 16 out of range for a plane of 16 elements"):
        ember.max_pool_with_indices_backward(g, x, bad, 2)
    with pytest.raises(IndexError, match="index -1 out of range"):
        ember.max_pool_with_indices_backward(g, x, bad * 0 - 1, 2)
    with pytest.raises(ValueError, match="expected grad_output of shape"):
        ember.avg_pool_backward(ember.ones(1, 1, 3, 3), x, [2, 2], [2, 2], [0, 0], False, True, None)


def test_pooling_rejects_bad_geometry():
    x = ember.ones(1, 1, 4, 4)
    with pytest.raises(RuntimeError, match="pad should be at most half of effective kernel size, but got pad=2"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(RuntimeError, match="stride must be greater than zero"):
        F.max_pool2d(x, 2, stride=0)
    with pytest.raises(RuntimeError, match="Output size is too small"):
        F.max_pool2d(ember.ones(1, 1, 1, 1), 3)
    with pytest.raises(RuntimeError, match="divisor must be not zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(NotImplementedError, match="not implemented for 'complex64'"):
        F.avg_pool2d(x.to(ember.complex64), 2)
