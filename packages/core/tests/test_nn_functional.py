"""ember.nn.functional: linear and batch_norm against float64 NumPy references (contiguous,
non-contiguous, broadcast leading dims, zero-size batches), their derivatives (gradcheck, forward
mode, second order), vmap, running-statistics updates and errors; the activations' wrappers."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck
from ember.func import grad, vmap

RNG = np.random.default_rng(23)


def t(a, requires_grad=False):
    return ember.tensor(np.asarray(a, dtype=np.float64), dtype=ember.float64, requires_grad=requires_grad)


def close(got, want, tol=1e-12):
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("shape", [(4, 3), (2, 5, 3), (3,), (0, 3)], ids=["2d", "3d", "vector", "empty-batch"])
def test_linear_matches_numpy(shape):
    x, w, b = RNG.standard_normal(shape), RNG.standard_normal((6, 3)), RNG.standard_normal(6)
    close(F.linear(t(x), t(w), t(b)), x @ w.T + b)
    close(F.linear(t(x), t(w)), x @ w.T)
    close(F.linear(t(x), t(w[0])), x @ w[0])  # a 1-D weight drops the output dim


def test_linear_non_contiguous_and_gradients():
    x = t(RNG.standard_normal((3, 5))).t()  # [5, 3], transposed
    w, b = t(RNG.standard_normal((4, 3)), True), t(RNG.standard_normal(4), True)
    close(F.linear(x, w, b), x.numpy() @ w.detach().numpy().T + b.detach().numpy())
    xs = t(RNG.standard_normal((2, 5, 3)), True)
    assert gradcheck(F.linear, (xs, w, b), check_forward_ad=True)
    assert gradgradcheck(F.linear, (xs, w, b))


def _bn_reference(x, mean, var, w, b, eps):
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    out = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return out * w.reshape(shape) + b.reshape(shape)


@pytest.mark.parametrize("shape", [(8, 3), (4, 3, 5), (2, 3, 2, 2)], ids=["1d", "2d", "3d"])
def test_batch_norm_training_and_eval(shape):
    x = RNG.standard_normal(shape) * 2 + 1
    w, b = RNG.standard_normal(3), RNG.standard_normal(3)
    axes = tuple(i for i in range(x.ndim) if i != 1)
    rm, rv = t(np.zeros(3)), t(np.ones(3))
    out = F.batch_norm(t(x), rm, rv, t(w), t(b), training=True, momentum=0.1, eps=1e-5)
    mean, var = x.mean(axis=axes), x.var(axis=axes)
    close(out, _bn_reference(x, mean, var, w, b, 1e-5), tol=1e-10)
    n = x.size // 3
    close(rm, 0.1 * mean)
    close(rv, 0.9 + 0.1 * var * n / (n - 1))  # the running variance is unbiased
    out = F.batch_norm(t(x), rm, rv, t(w), t(b), training=False, eps=1e-3)
    close(out, _bn_reference(x, rm.numpy(), rv.numpy(), w, b, 1e-3), tol=1e-10)
    close(F.batch_norm(t(x), None, None, training=True), _bn_reference(x, mean, var, np.ones(3), np.zeros(3), 1e-5),
          tol=1e-10)


def test_batch_norm_gradients():
    x = t(RNG.standard_normal((5, 3, 2)), True)
    w, b = t(RNG.standard_normal(3), True), t(RNG.standard_normal(3), True)

    def train(x, w, b):
        return F.batch_norm(x, None, None, w, b, training=True)

    def evaluate(x, w, b):
        return F.batch_norm(x, t([0.5, -0.2, 0.1]), t([1.5, 0.7, 2.0]), w, b, training=False)

    for fn in (train, evaluate):
        assert gradcheck(fn, (x, w, b), check_forward_ad=True)
        assert gradgradcheck(fn, (x, w, b))


def test_batch_norm_errors():
    x = t(np.ones((4, 3)))
    with pytest.raises(ValueError, match=r"Expected more than 1 value per channel when training, got input size "
                                         r"\[1, 3\]"):
        F.batch_norm(t(np.ones((1, 3))), None, None, training=True)
    with pytest.raises(RuntimeError, match=r"running_mean should contain 3 elements not 2"):
        F.batch_norm(x, t(np.zeros(2)), t(np.ones(3)))
    with pytest.raises(ValueError, match=r"Expected 2D or more input \(got 1D input\)"):
        F.batch_norm(t(np.ones(3)), None, None, training=True)


def test_per_sample_gradients_of_a_two_layer_mlp_with_vmap():
    """The issue-5 bar with real matrix products: vmap(grad) equals a Python loop."""
    w1, b1 = t(RNG.standard_normal((8, 4))), t(RNG.standard_normal(8))
    w2, b2 = t(RNG.standard_normal((2, 8))), t(RNG.standard_normal(2))
    x, y = t(RNG.standard_normal((6, 4))), t(RNG.standard_normal((6, 2)))

    def loss(params, xi, yi):
        h = F.tanh(F.linear(xi, params[0], params[1]))
        return F.mse_loss(F.linear(h, params[2], params[3]), yi)

    params = (w1, b1, w2, b2)
    batched = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)
    for i in range(6):
        single = grad(loss)(params, x[i], y[i])
        for got, want in zip(batched, single, strict=True):
            close(got[i], want.numpy(), tol=1e-10)


@pytest.mark.parametrize("name", ["relu", "elu", "selu", "celu", "leaky_relu", "hardtanh", "relu6", "silu", "mish",
                                  "hardswish", "hardsigmoid", "threshold"])
def test_inplace_activation_of_a_non_leaf_still_differentiates(name):
    # inplace=True writes through ember/_inplace.py: the op reads a clone of a tracked input, so the
    # values its backward saved are not the ones overwritten (as in PyTorch, backward works)
    fn = getattr(F, name)
    args = (0.1, 0.2) if name == "threshold" else ()
    data = RNG.standard_normal((3, 4))
    a = t(data, requires_grad=True)
    x = a * 1.0
    y = fn(x, *args, inplace=True)
    assert y is x
    b = t(data, requires_grad=True)
    want = fn(b * 1.0, *args)
    close(y, want.detach().numpy())
    (y * t(data)).sum().backward()
    (want * t(data)).sum().backward()
    close(a.grad, b.grad.numpy())


def test_activation_wrappers():
    x = t([-1.5, 0.0, 2.0])
    close(F.relu(x), [0.0, 0.0, 2.0])
    y = x.clone()
    F.relu(y, inplace=True)
    close(y, [0.0, 0.0, 2.0])
    close(F.softmax(t([[1.0, 2.0]]), dim=1), np.exp([1.0, 2.0])[None] / np.exp([1.0, 2.0]).sum())
    close(F.log_softmax(t([1.0, 2.0])), np.log(np.exp([1.0, 2.0]) / np.exp([1.0, 2.0]).sum()))
    close(F.mse_loss(t([1.0, 2.0]), t([0.0, 4.0]), reduction="sum"), 5.0)
    with pytest.raises(ValueError, match=r"bad is not a valid value for reduction"):
        F.mse_loss(x, x, reduction="bad")


# ---- losses ----------------------------------------------------------------------------------------

def _log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def test_cross_entropy_and_nll_against_numpy():
    x = RNG.standard_normal((5, 4))
    y = np.array([0, 3, 1, 3, 2])
    w = np.array([0.5, 1.0, 2.0, 1.5])
    logp = _log_softmax(x, 1)
    picked = -logp[np.arange(5), y]
    close(F.cross_entropy(t(x), ember.tensor(y)), picked.mean())
    close(F.cross_entropy(t(x), ember.tensor(y), reduction="none"), picked)
    close(F.cross_entropy(t(x), ember.tensor(y), weight=t(w)), (picked * w[y]).sum() / w[y].sum())
    y_ignored = y.copy()
    y_ignored[1] = -100
    keep = y_ignored != -100
    close(F.cross_entropy(t(x), ember.tensor(y_ignored)), picked[keep].mean())
    # label smoothing: the target mixes with the uniform distribution
    eps = 0.2
    smooth = -(logp.sum(1))
    close(F.cross_entropy(t(x), ember.tensor(y), label_smoothing=eps), ((1 - eps) * picked + eps / 4 * smooth).mean())
    probs = np.exp(_log_softmax(RNG.standard_normal((5, 4)), 1))
    close(F.cross_entropy(t(x), t(probs)), -(probs * logp).sum(1).mean())
    # spatial: (N, C, d) with targets (N, d); and one unbatched sample
    xs, ys = RNG.standard_normal((2, 3, 4)), np.array([[0, 2, 1, 1], [2, 2, 0, 1]])
    lp = _log_softmax(xs, 1)
    close(F.nll_loss(t(lp), ember.tensor(ys), reduction="sum"),
          -sum(lp[n, ys[n, d], d] for n in range(2) for d in range(4)))
    close(F.cross_entropy(t(x[0]), ember.tensor(2)), -logp[0, 2])
    xg = t(x, True)
    assert gradcheck(lambda a: F.cross_entropy(a, ember.tensor(y), weight=t(w), label_smoothing=0.1), (xg,),
                     check_forward_ad=True)
    assert gradcheck(lambda a: F.cross_entropy(a, t(probs)), (xg,), check_forward_ad=True)
    with pytest.raises(IndexError, match=r"Target 4 is out of bounds"):
        F.cross_entropy(t(x), ember.tensor([0, 4, 1, 1, 1]))
    with pytest.raises(ValueError, match=r"Expected input batch_size \(5\) to match target batch_size \(2\)"):
        F.nll_loss(t(logp), ember.tensor([0, 1]))


def test_elementwise_losses_against_numpy():
    a, b = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    d = a - b
    close(F.l1_loss(t(a), t(b)), np.abs(d).mean())
    close(F.smooth_l1_loss(t(a), t(b), beta=0.5),
          np.where(np.abs(d) < 0.5, 0.5 * d * d / 0.5, np.abs(d) - 0.25).mean())
    close(F.huber_loss(t(a), t(b), delta=0.7), np.where(np.abs(d) <= 0.7, 0.5 * d * d, 0.7 * (np.abs(d) - 0.35)).mean())
    p = 1 / (1 + np.exp(-a))
    target = (b > 0).astype(float)
    bce = -(target * np.log(p) + (1 - target) * np.log(1 - p))
    close(F.binary_cross_entropy(t(p), t(target)), bce.mean())
    close(F.binary_cross_entropy_with_logits(t(a), t(target)), bce.mean())
    pw = np.array([1.0, 2.0, 0.5, 3.0])
    close(F.binary_cross_entropy_with_logits(t(a), t(target), pos_weight=t(pw), reduction="sum"),
          (-(pw * target * np.log(p) + (1 - target) * np.log(1 - p))).sum())
    lp, q = _log_softmax(a, 1), np.exp(_log_softmax(b, 1))
    close(F.kl_div(t(lp), t(q), reduction="batchmean"), (q * (np.log(q) - lp)).sum() / 3)
    close(F.kl_div(t(lp), t(np.log(q)), reduction="sum", log_target=True), (q * (np.log(q) - lp)).sum())
    close(F.poisson_nll_loss(t(a), t(np.abs(b))), (np.exp(a) - np.abs(b) * a).mean())
    var = np.abs(b) + 0.1
    close(F.gaussian_nll_loss(t(a), t(b), t(var)), (0.5 * (np.log(var) + (a - b) ** 2 / var)).mean())
    y = np.sign(b)
    close(F.margin_ranking_loss(t(a[0]), t(b[0]), t(y[0]), margin=0.1), np.maximum(0, -y[0] * (a[0] - b[0]) + 0.1).mean())
    close(F.hinge_embedding_loss(t(a), t(y)), np.where(y == 1, a, np.maximum(0, 1 - a)).mean())
    close(F.soft_margin_loss(t(a), t(y)), np.log1p(np.exp(-y * a)).mean())
    close(F.multilabel_soft_margin_loss(t(a), t(target)), bce.mean(1).mean())
    cos = (a * b).sum(1) / np.sqrt((a * a).sum(1) * (b * b).sum(1))
    yy = np.array([1.0, -1.0, 1.0])
    close(F.cosine_similarity(t(a), t(b)), cos)
    close(F.cosine_embedding_loss(t(a), t(b), t(yy), margin=0.1), np.where(yy == 1, 1 - cos, np.maximum(0, cos - 0.1)).mean())
    c = RNG.standard_normal((3, 4))
    dp = np.sqrt(((a - b + 1e-6) ** 2).sum(1))
    dn = np.sqrt(((a - c + 1e-6) ** 2).sum(1))
    close(F.pairwise_distance(t(a), t(b)), dp)
    close(F.triplet_margin_loss(t(a), t(b), t(c)), np.maximum(0, dp - dn + 1).mean())
    yk = np.array([1, 0, 3])
    m = np.maximum(0, 1 - a[np.arange(3), yk][:, None] + a)
    m[np.arange(3), yk] = 0
    close(F.multi_margin_loss(t(a), ember.tensor(yk)), (m.sum(1) / 4).mean())
    assert F.one_hot(ember.tensor([0, 2]), 3).tolist() == [[1, 0, 0], [0, 0, 1]]
    for fn in (lambda u, v: F.smooth_l1_loss(u, v), lambda u, v: F.huber_loss(u, v),
               lambda u, v: F.binary_cross_entropy_with_logits(u, (v > 0).to(ember.float64)),
               lambda u, v: F.cosine_embedding_loss(u, v, t(yy)),
               lambda u, v: F.triplet_margin_loss(u, v, t(c))):
        assert gradcheck(fn, (t(a, True), t(b, True)), check_forward_ad=True)
    with pytest.raises(ValueError, match=r"Using a target size \(\[3\]\) that is different to the input size"):
        F.binary_cross_entropy(t(p), t(target[0, :3]))
    with pytest.raises(RuntimeError, match=r"all elements of input should be between 0 and 1"):
        F.binary_cross_entropy(t(a), t(target))


# ---- convolution and pooling -----------------------------------------------------------------------

def _conv_ref(x, w, b, stride, pads, dilation, groups):
    """Direct cross-correlation in float64 (x: [N, C, *s], w: [O, C/g, *k])."""
    n = x.ndim - 2
    x = np.pad(x, [(0, 0), (0, 0)] + list(pads))
    out_sizes = [(x.shape[2 + i] - dilation[i] * (w.shape[2 + i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    out = np.zeros([x.shape[0], w.shape[0]] + out_sizes)
    per_out = w.shape[0] // groups
    for o in range(w.shape[0]):
        g = o // per_out
        xs = x[:, g * w.shape[1]:(g + 1) * w.shape[1]]
        for idx in np.ndindex(*out_sizes):
            window = xs[(slice(None), slice(None)) + tuple(
                slice(idx[i] * stride[i], idx[i] * stride[i] + dilation[i] * (w.shape[2 + i] - 1) + 1, dilation[i])
                for i in range(n))]
            out[(slice(None), o) + idx] = (window * w[o]).reshape(x.shape[0], -1).sum(1)
    return out + (0 if b is None else b.reshape([1, -1] + [1] * n))


@pytest.mark.parametrize("n, shape, kernel, stride, padding, dilation, groups", [
    (1, (2, 4, 9), (3,), 1, 0, 1, 1), (1, (2, 4, 9), (3,), 2, 1, 2, 2), (2, (2, 3, 7, 6), (3, 2), (2, 1), 1, 1, 1),
    (2, (1, 4, 6, 6), (3, 3), 1, "same", (2, 1), 4), (2, (2, 2, 5, 5), (2, 2), 1, "valid", 1, 1),
    (3, (1, 2, 4, 5, 4), (2, 3, 2), (1, 2, 1), (1, 0, 1), 1, 2),
])
def test_conv_matches_direct_loops(n, shape, kernel, stride, padding, dilation, groups):
    x = RNG.standard_normal(shape)
    w = RNG.standard_normal((4, shape[1] // groups) + kernel)
    b = RNG.standard_normal(4)
    fn = getattr(F, f"conv{n}d")
    st, dl = (stride,) * n if isinstance(stride, int) else stride, (dilation,) * n if isinstance(dilation, int) \
        else dilation
    if padding == "same":
        pads = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for d, k in zip(dl, kernel, strict=True)]
    elif padding == "valid":
        pads = [(0, 0)] * n
    else:
        pads = [(p, p) for p in ((padding,) * n if isinstance(padding, int) else padding)]
    got = fn(t(x), t(w), t(b), stride=stride, padding=padding, dilation=dilation, groups=groups)
    close(got, _conv_ref(x, w, b, st, pads, dl, groups), tol=1e-10)
    close(fn(t(x[0]), t(w), None, stride=stride, padding=padding, dilation=dilation, groups=groups),
          _conv_ref(x[:1], w, None, st, pads, dl, groups)[0], tol=1e-10)  # unbatched


def test_conv_gradients_and_errors():
    x, w, b = t(RNG.standard_normal((2, 2, 5, 4)), True), t(RNG.standard_normal((4, 1, 2, 3)), True), \
        t(RNG.standard_normal(4), True)
    assert gradcheck(lambda a, c, d: F.conv2d(a, c, d, stride=(2, 1), padding=1, groups=2), (x, w, b),
                     check_forward_ad=True)
    assert gradgradcheck(lambda a, c: F.conv1d(a, c, padding="same"), (t(RNG.standard_normal((1, 2, 6)), True),
                                                                         t(RNG.standard_normal((3, 2, 3)), True)))
    with pytest.raises(RuntimeError, match=r"expected input\[2, 2, 5, 4\] to have 3 channels, but got 2 channels"):
        F.conv2d(x, t(RNG.standard_normal((4, 3, 2, 2))))
    with pytest.raises(ValueError, match=r"padding='same' is not supported for strided convolutions"):
        F.conv2d(x, w, padding="same", stride=2, groups=2)
    with pytest.raises(RuntimeError, match=r"Expected 3D \(unbatched\) or 4D \(batched\) input to conv2d"):
        F.conv2d(t(np.ones(3)), w)


def _pool_ref(x, k, s, p, ceil, op, count_include_pad=True):
    n = x.ndim - 2
    out_sizes = []
    for i in range(n):
        top = x.shape[2 + i] + 2 * p[i] - k[i]
        o = (-(-top // s[i]) if ceil else top // s[i]) + 1
        if ceil and (o - 1) * s[i] >= x.shape[2 + i] + p[i]:
            o -= 1
        out_sizes.append(o)
    out = np.zeros(list(x.shape[:2]) + out_sizes)
    for idx in np.ndindex(*out_sizes):
        lo = [idx[i] * s[i] - p[i] for i in range(n)]
        hi = [lo[i] + k[i] for i in range(n)]
        sl = tuple(slice(max(lo[i], 0), min(hi[i], x.shape[2 + i])) for i in range(n))
        window = x[(slice(None), slice(None)) + sl]
        if op == "max":
            out[(slice(None), slice(None)) + idx] = window.reshape(*x.shape[:2], -1).max(-1)
        else:
            inside_pad = np.prod([min(hi[i], x.shape[2 + i] + p[i]) - max(lo[i], -p[i]) for i in range(n)])
            count = inside_pad if count_include_pad else window[0, 0].size
            out[(slice(None), slice(None)) + idx] = window.reshape(*x.shape[:2], -1).sum(-1) / count
    return out


@pytest.mark.parametrize("n, shape, k, s, p, ceil", [
    (1, (2, 3, 9), (3,), (2,), (1,), False), (1, (2, 3, 8), (3,), (2,), (0,), True),
    (2, (2, 2, 7, 6), (3, 2), (2, 2), (1, 0), True), (2, (1, 1, 5, 5), (2, 2), (2, 2), (0, 0), False),
    (3, (1, 2, 4, 5, 3), (2, 2, 2), (2, 1, 2), (1, 0, 0), True),
])
def test_pooling_matches_direct_loops(n, shape, k, s, p, ceil):
    x = RNG.standard_normal(shape)
    close(getattr(F, f"max_pool{n}d")(t(x), k, s, p, ceil_mode=ceil), _pool_ref(x, k, s, p, ceil, "max"))
    close(getattr(F, f"avg_pool{n}d")(t(x), k, s, p, ceil_mode=ceil), _pool_ref(x, k, s, p, ceil, "avg"))
    close(getattr(F, f"avg_pool{n}d")(t(x), k, s, p, ceil_mode=ceil, count_include_pad=False),
          _pool_ref(x, k, s, p, ceil, "avg", count_include_pad=False))


def test_pooling_gradients_and_errors():
    x = t(RNG.standard_normal((1, 2, 5, 4)), True)
    assert gradcheck(lambda a: F.max_pool2d(a, 2, 1, ceil_mode=True), (x,), check_forward_ad=True)
    assert gradcheck(lambda a: F.avg_pool2d(a, (2, 3), 2, 1, divisor_override=3), (x,), check_forward_ad=True)
    close(F.max_pool1d(t([[1.0, 5.0, 2.0, 7.0, 3.0]]), 2, dilation=2), [[2.0, 3.0]])  # windows (1, 2), (2, 3)
    with pytest.raises(RuntimeError, match=r"pad should be at most half of effective kernel size"):
        F.max_pool2d(x, 2, padding=2)


def test_assert_int_or_pair():
    F.assert_int_or_pair(3, "kernel_size", "{} must be int or 2-tuple")
    F.assert_int_or_pair((2, 3), "kernel_size", "{} must be int or 2-tuple")
    with pytest.raises(AssertionError, match="^stride must be int or 2-tuple$"):
        F.assert_int_or_pair((1, 2, 3), "stride", "{} must be int or 2-tuple")
