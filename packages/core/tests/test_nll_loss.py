"""nll_loss_forward / nll_loss_backward (src/ops/loss, Note [nll layouts]): the native negative
log-likelihood behind F.nll_loss and F.cross_entropy, against float64 NumPy references."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(5)
nll = ember.ops.aten.nll_loss_forward


def reference(x, target, weight, reduction, ignore_index):
    """(output, total_weight) in float64: x (N, C, *spatial), target (N, *spatial)."""
    classes = x.shape[1]
    w = np.ones(classes) if weight is None else weight
    moved = np.moveaxis(x, 1, -1).reshape(-1, classes)
    t = target.reshape(-1)
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    wt = np.where(keep, w[safe], 0.0)
    losses = -moved[np.arange(len(t)), safe] * wt
    if reduction == 0:
        return losses.reshape(target.shape), wt.sum()
    return (losses.sum() if reduction == 2 else losses.sum() / wt.sum()), wt.sum()


@pytest.mark.parametrize("shape", [(5, 4), (3, 4, 2, 3), (0, 4), (2, 3, 0)])
@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("weighted", [False, True])
def test_forward_against_float64(shape, reduction, weighted):
    x = RNG.standard_normal(shape)
    target = RNG.integers(0, shape[1], (shape[0], *shape[2:]))
    if target.size:
        target.reshape(-1)[0] = -100  # one ignored element
    weight = RNG.random(shape[1]) + 0.5 if weighted else None
    out, total = nll(ember.tensor(x), ember.tensor(target), None if weight is None else ember.tensor(weight),
                     reduction, -100)
    want, want_total = reference(x, target, weight, reduction, -100)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(total.numpy(), want_total, rtol=1e-12)


def test_non_contiguous_and_broadcast_free_inputs():
    x = RNG.standard_normal((4, 6, 3))
    xt = ember.tensor(x).transpose(0, 2)  # (3, 6, 4), not contiguous
    target = RNG.integers(0, 6, (3, 4))
    out, _ = nll(xt, ember.tensor(target).t().contiguous().t(), None, 0, -100)
    want, _ = reference(np.transpose(x, (2, 1, 0)), target, None, 0, -100)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)


def test_one_sample_of_class_scores_takes_a_0d_target():
    x = RNG.standard_normal(5)
    out, total = nll(ember.tensor(x), ember.tensor(3), None, 0, -100)
    assert out.dim() == 0 and float(out) == pytest.approx(-x[3]) and float(total) == 1.0


def test_mean_over_only_ignored_targets_is_nan_as_in_pytorch():
    out, total = nll(ember.randn(2, 3), ember.tensor([-100, -100]), None, 1, -100)
    assert np.isnan(float(out)) and float(total) == 0.0


@pytest.mark.parametrize("dtype", [ember.float32, ember.float16, ember.bfloat16])
def test_narrow_dtypes_sum_in_double(dtype):
    x = RNG.standard_normal((64, 10))
    target = RNG.integers(0, 10, 64)
    out, _ = nll(ember.tensor(x).to(dtype), ember.tensor(target), None, 1, -100)
    assert out.dtype == dtype
    rounded = ember.tensor(x).to(dtype).to(ember.float64).numpy()
    want, _ = reference(rounded, target, None, 1, -100)
    np.testing.assert_allclose(out.to(ember.float64).numpy(), want, rtol=1e-2 if dtype != ember.float32 else 1e-6)


def test_gradients_first_second_and_forward_mode():
    x = ember.tensor(RNG.standard_normal((4, 5, 2)), requires_grad=True)
    target = ember.tensor(RNG.integers(0, 5, (4, 2)))
    target[0, 0] = 2
    w = ember.tensor(RNG.random(5) + 0.5)
    for reduction in ("none", "mean", "sum"):
        fn = lambda a, r=reduction: F.nll_loss(a, target, weight=w, ignore_index=2, reduction=r)  # noqa: E731
        assert gradcheck(fn, (x,), check_forward_ad=True)
        assert gradgradcheck(fn, (x,))
    for reduction in (0, 1, 2):  # the op itself, its first output (total_weight carries no gradient)
        assert gradcheck(lambda a, r=reduction: ember.ops.aten.nll_loss_forward(a, target, w, r, 2)[0], (x,),
                         check_forward_ad=True)
    # Note [nodes without gradients]: the double backward reaches nll_loss_forward's node with no
    # gradient for either output; log_softmax's node must still run
    logits = ember.tensor(RNG.standard_normal((6, 4)), requires_grad=True)
    labels = ember.tensor(RNG.integers(0, 4, 6))
    assert gradgradcheck(lambda a: F.cross_entropy(a, labels), (logits,))


def test_backward_matches_the_scatter_of_weights():
    x = ember.tensor(RNG.standard_normal((3, 4)), requires_grad=True)
    target = ember.tensor([1, -100, 3])
    w = ember.tensor([1.0, 2.0, 3.0, 4.0], dtype=ember.float64)
    F.nll_loss(x, target, weight=w).backward()
    want = np.zeros((3, 4))
    want[0, 1], want[2, 3] = -2.0 / 6.0, -4.0 / 6.0
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-14)


def test_bad_input_raises_clear_errors():
    x = ember.randn(3, 4)
    with pytest.raises(IndexError, match="Target 4 is out of bounds"):
        nll(x, ember.tensor([0, 4, 1]), None, 1, -100)
    with pytest.raises(IndexError, match="Target -1 is out of bounds"):
        F.nll_loss(x, ember.tensor([0, -1, 1]))
    with pytest.raises(RuntimeError, match="expected scalar type Long but found"):
        nll(x, ember.tensor([0, 1, 1], dtype=ember.int32), None, 1, -100)
    with pytest.raises(ValueError, match=r"Expected input batch_size \(3\) to match target batch_size \(2\)"):
        nll(x, ember.tensor([0, 1]), None, 1, -100)
    with pytest.raises(RuntimeError, match="weight tensor should be defined either for all 4 classes"):
        nll(x, ember.tensor([0, 1, 1]), ember.ones(3), 1, -100)
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nll(x, ember.tensor([0, 1, 1]), None, 3, -100)
    with pytest.raises(RuntimeError, match="size mismatch"):
        nll(ember.randn(2, 3, 4), ember.zeros(2, 5, dtype=ember.int64), None, 1, -100)
    with pytest.raises(ValueError, match="expected grad_output of shape"):
        ember.ops.aten.nll_loss_backward(ember.ones(2), x, ember.tensor([0, 1, 1]), None, 1, -100, ember.tensor(3.0))
