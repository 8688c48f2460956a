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
