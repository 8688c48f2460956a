"""rnnt_loss / RNNTLoss against a float64 NumPy dynamic-programming reference, and gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from emberaudio.functional import rnnt_loss
from emberaudio.transforms import RNNTLoss


def _reference_costs(logits, targets, logit_lengths, target_lengths, blank, fused=True):
    """Per-sequence -log P(y|x): the forward variables over the (T, U+1) lattice, in float64."""
    logits = logits.astype(np.float64)
    if fused:
        m = logits.max(-1, keepdims=True)
        logits = logits - (m + np.log(np.exp(logits - m).sum(-1, keepdims=True)))
    costs = []
    for b in range(logits.shape[0]):
        T, U = int(logit_lengths[b]), int(target_lengths[b])
        lp, y = logits[b], targets[b]
        alpha = np.full((T, U + 1), -np.inf)
        alpha[0, 0] = 0.0
        for t in range(T):
            for u in range(U + 1):
                terms = []
                if t > 0:
                    terms.append(alpha[t - 1, u] + lp[t - 1, u, blank])
                if u > 0:
                    terms.append(alpha[t, u - 1] + lp[t, u - 1, y[u - 1]])
                if terms:
                    alpha[t, u] = np.logaddexp.reduce(terms)
        costs.append(-(alpha[T - 1, U] + lp[T - 1, U, blank]))
    return np.array(costs)


def _case(rng, batch=3, max_t=5, max_u=3, vocab=4, dtype=np.float64, blank=0):
    logit_lengths = rng.integers(1, max_t + 1, batch).astype(np.int32)
    target_lengths = rng.integers(0, max_u + 1, batch).astype(np.int32)
    if batch:
        logit_lengths[0], target_lengths[-1] = max_t, max_u  # the maxima match the logits' shape
    labels = [c for c in range(vocab) if c != blank % vocab]
    targets = rng.choice(labels, (batch, max_u)).astype(np.int32)
    logits = rng.standard_normal((batch, max_t, max_u + 1, vocab)).astype(dtype)
    return logits, targets, logit_lengths, target_lengths


def _tensors(*arrays):
    return [ember.from_numpy(np.ascontiguousarray(a)) for a in arrays]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("blank", [0, -1, 2])
@pytest.mark.parametrize("fused", [True, False])
def test_costs_match_reference(dtype, blank, fused):
    rng = np.random.default_rng(0)
    logits, targets, ll, tl = _case(rng, dtype=dtype, blank=blank)
    if not fused:  # log-probabilities in, as the caller applied log_softmax itself
        logits = (logits - np.log(np.exp(logits).sum(-1, keepdims=True))).astype(dtype)
    got = rnnt_loss(*_tensors(logits, targets, ll, tl), blank=blank, reduction="none", fused_log_softmax=fused)
    ref = _reference_costs(logits, targets, ll, tl, blank % logits.shape[-1], fused=fused)
    assert got.dtype == (ember.float32 if dtype == np.float32 else ember.float64)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5 if dtype == np.float32 else 1e-10)


def test_float16_is_computed_in_float32():
    rng = np.random.default_rng(8)
    logits, targets, ll, tl = _case(rng, dtype=np.float16)
    x = ember.from_numpy(logits).requires_grad_()
    got = rnnt_loss(x, *_tensors(targets, ll, tl), blank=0, reduction="none")
    assert got.dtype == ember.float16
    np.testing.assert_allclose(got.detach().numpy().astype(np.float64), _reference_costs(logits, targets, ll, tl, 0), rtol=2e-3)
    got.sum().backward()
    assert x.grad.dtype == ember.float16


def test_many_batch_items_across_threads():
    rng = np.random.default_rng(9)
    arrays = _case(rng, batch=9, max_t=4, max_u=3)
    x = ember.from_numpy(arrays[0]).requires_grad_()
    costs = rnnt_loss(x, *_tensors(*arrays[1:]), blank=0, reduction="none")
    np.testing.assert_allclose(costs.detach().numpy(), _reference_costs(*arrays, blank=0), rtol=1e-10)
    costs.sum().backward()
    for b in range(9):  # each item's gradient as if computed alone
        xb = ember.from_numpy(arrays[0][b:b + 1].copy()).requires_grad_()
        single = [ember.from_numpy(np.ascontiguousarray(a[b:b + 1])) for a in arrays[1:]]
        T, U = int(arrays[2][b]), int(arrays[3][b])
        rnnt_loss(xb[:, :T, :U + 1], single[0][:, :U], *single[1:], blank=0, reduction="sum").backward()
        np.testing.assert_allclose(x.grad.numpy()[b, :T, :U + 1], xb.grad.numpy()[0, :T, :U + 1], rtol=1e-12)


@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_reductions(reduction):
    rng = np.random.default_rng(1)
    arrays = _case(rng)
    ref = _reference_costs(*arrays, blank=0)
    got = rnnt_loss(*_tensors(*arrays), blank=0, reduction=reduction)
    assert got.ndim == 0
    np.testing.assert_allclose(float(got), ref.mean() if reduction == "mean" else ref.sum(), rtol=1e-10)


def test_non_contiguous_logits():
    rng = np.random.default_rng(2)
    logits, targets, ll, tl = _case(rng)
    # The same values, laid out class-major and permuted back: a non-contiguous view.
    base = ember.from_numpy(np.ascontiguousarray(logits.transpose(3, 0, 1, 2)))
    view = base.permute(1, 2, 3, 0)
    assert not view.is_contiguous()
    got = rnnt_loss(view, *_tensors(targets, ll, tl), blank=0, reduction="none")
    np.testing.assert_allclose(got.numpy(), _reference_costs(logits, targets, ll, tl, 0), rtol=1e-10)


def test_empty_batch():
    logits = ember.zeros(0, 2, 2, 3, dtype=ember.float64)
    ints = [ember.zeros(0, 1, dtype=ember.int32), ember.zeros(0, dtype=ember.int32), ember.zeros(0, dtype=ember.int32)]
    assert tuple(rnnt_loss(logits, *ints, reduction="none").shape) == (0,)
    assert float(rnnt_loss(logits, *ints, reduction="sum")) == 0.0


@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_gradcheck(fused, reduction):
    rng = np.random.default_rng(3)
    logits, targets, ll, tl = _case(rng, batch=2, max_t=3, max_u=2, vocab=3)
    x = ember.from_numpy(logits).requires_grad_()
    ints = _tensors(targets, ll, tl)
    assert ember.autograd.gradcheck(
        lambda z: rnnt_loss(z, *ints, blank=0, reduction=reduction, fused_log_softmax=fused), (x,))


def test_gradient_is_zero_outside_the_lengths():
    rng = np.random.default_rng(4)
    logits, targets, ll, tl = _case(rng, batch=2, max_t=4, max_u=2)
    ll[1], tl[1] = 2, 1
    x = ember.from_numpy(logits).requires_grad_()
    rnnt_loss(x, *_tensors(targets, ll, tl), blank=0, reduction="sum").backward()
    g = x.grad.numpy()
    assert np.all(g[1, 2:] == 0) and np.all(g[1, :, 2:] == 0) and np.any(g[1, :2, :2] != 0)


def test_clamp_bounds_the_gradient():
    rng = np.random.default_rng(5)
    logits, targets, ll, tl = _case(rng)
    logits *= 4
    grads = []
    for clamp in (-1, 0.05):
        x = ember.from_numpy(logits.copy()).requires_grad_()
        loss = rnnt_loss(x, *_tensors(targets, ll, tl), blank=0, clamp=clamp, reduction="sum")
        loss.backward()
        grads.append(x.grad.numpy())
    assert np.abs(grads[0]).max() > 0.05
    np.testing.assert_allclose(grads[1], np.clip(grads[0], -0.05, 0.05), rtol=1e-12)


def test_transform_matches_functional():
    rng = np.random.default_rng(6)
    arrays = _case(rng, blank=3)
    module = RNNTLoss(blank=-1, reduction="sum")
    np.testing.assert_allclose(float(module(*_tensors(*arrays))),
                               _reference_costs(*arrays, blank=3).sum(), rtol=1e-10)
    with pytest.raises(ValueError, match="reduction should be one of"):
        RNNTLoss(reduction="avg")


def test_errors():
    rng = np.random.default_rng(7)
    logits, targets, ll, tl = _case(rng, batch=2, max_t=3, max_u=2)
    x, y, a, b = _tensors(logits, targets, ll, tl)
    with pytest.raises(ValueError, match="reduction should be one of"):
        rnnt_loss(x, y, a, b, reduction="avg")
    with pytest.raises(RuntimeError, match="targets must be int32 type"):
        rnnt_loss(x, y.to(ember.int64), a, b)
    with pytest.raises(RuntimeError, match="logit_lengths must be int32 type"):
        rnnt_loss(x, y, a.to(ember.int64), b)
    with pytest.raises(RuntimeError, match="target_lengths must be int32 type"):
        rnnt_loss(x, y, a, b.to(ember.int64))
    with pytest.raises(RuntimeError, match="logits must be float16, float32 or float64"):
        rnnt_loss(y, y, a, b)
    with pytest.raises(ValueError, match="logits must be 4-D"):
        rnnt_loss(x[0], y, a, b)
    with pytest.raises(ValueError, match="blank must be within"):
        rnnt_loss(x, y, a, b, blank=4)
    with pytest.raises(ValueError, match="input length mismatch"):
        rnnt_loss(x, y, ember.tensor([2, 2], dtype=ember.int32), b)
    with pytest.raises(ValueError, match=r"logit_lengths\[1\] = 9 is outside"):
        rnnt_loss(x, y, ember.tensor([3, 9], dtype=ember.int32), b)
    with pytest.raises(ValueError, match=r"target_lengths\[0\] = -1 is outside"):
        rnnt_loss(x, y, a, ember.tensor([-1, 2], dtype=ember.int32))
    with pytest.raises(ValueError, match="output length mismatch"):
        rnnt_loss(x, y, a, ember.tensor([1, 1], dtype=ember.int32))
    with pytest.raises(ValueError, match=r"targets\[0, 0\] = 7 is outside"):
        rnnt_loss(x, ember.tensor([[7, 1], [1, 1]], dtype=ember.int32), a, b)
    with pytest.raises(ValueError, match="target length mismatch"):
        rnnt_loss(x, ember.zeros(2, 3, dtype=ember.int32), a, b)
    with pytest.raises(ValueError, match="batch dimension mismatch between logits and logit_lengths"):
        rnnt_loss(x, y, a[:1], b)
    with pytest.raises(TypeError, match="targets must be an ember.Tensor"):
        rnnt_loss(x, targets, a, b)
