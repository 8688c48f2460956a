"""ctc_loss / CTCLoss against a brute-force float64 reference that sums the probability of every
frame-level path collapsing to the target; gradients by gradcheck; both target layouts, the
reductions, zero_infinity, half inputs and argument errors."""

import itertools

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

RNG = np.random.default_rng(5)


def _log_softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    return x - np.log(np.exp(x).sum(axis=axis, keepdims=True))


def _collapse(path, blank):
    out = []
    for i, c in enumerate(path):
        if c != blank and (i == 0 or c != path[i - 1]):
            out.append(c)
    return out


def _brute_nll(lp, target, blank):
    """-log sum over every path of length T whose collapse is the target."""
    steps, classes = lp.shape
    total = 0.0
    for path in itertools.product(range(classes), repeat=steps):
        if _collapse(path, blank) == list(target):
            total += np.exp(sum(lp[t, c] for t, c in enumerate(path)))
    return -np.log(total) if total > 0 else np.inf


def _case(steps=5, batch=3, classes=4, blank=0):
    lp = _log_softmax(RNG.normal(size=(steps, batch, classes)))
    in_len = [steps, steps - 1, 3][:batch]
    tgt_len = [2, 3, 1][:batch]
    labels = [c for c in range(classes) if c != blank]
    targets = [list(RNG.choice(labels, size=n)) for n in tgt_len]
    targets[1][1] = targets[1][0]  # a repeated label needs a blank between its copies
    return lp, in_len, tgt_len, targets


def _reference(lp, in_len, tgt_len, targets, blank):
    return np.array([_brute_nll(lp[:in_len[n], n], targets[n][:tgt_len[n]], blank) for n in range(lp.shape[1])])


@pytest.mark.parametrize("blank", [0, 2])
@pytest.mark.parametrize("layout", ["padded", "concatenated"])
def test_ctc_matches_brute_force(blank, layout):
    lp, in_len, tgt_len, targets = _case(blank=blank)
    expected = _reference(lp, in_len, tgt_len, targets, blank)
    if layout == "padded":
        width = max(tgt_len)
        tgt = ember.tensor([row + [blank] * (width - len(row)) for row in targets])
    else:
        tgt = ember.tensor([v for row in targets for v in row])
    log_probs = ember.tensor(lp)
    got = F.ctc_loss(log_probs, tgt, ember.tensor(in_len), ember.tensor(tgt_len), blank=blank, reduction="none")
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)
    summed = F.ctc_loss(log_probs, tgt, tuple(in_len), tuple(tgt_len), blank=blank, reduction="sum")
    assert float(summed) == pytest.approx(expected.sum(), rel=1e-10)
    mean = nn.CTCLoss(blank=blank)(log_probs, tgt, in_len, tgt_len)
    assert float(mean) == pytest.approx((expected / np.array(tgt_len)).mean(), rel=1e-10)


def test_ctc_non_contiguous_and_unbatched():
    lp, in_len, tgt_len, targets = _case()
    expected = _reference(lp, in_len, tgt_len, targets, 0)
    # (N, T, C) storage seen as (T, N, C): a non-contiguous input.
    stored = ember.tensor(np.ascontiguousarray(lp.transpose(1, 0, 2))).transpose(0, 1)
    assert not stored.is_contiguous()
    width = max(tgt_len)
    tgt = ember.tensor([row + [0] * (width - len(row)) for row in targets])
    got = F.ctc_loss(stored, tgt, in_len, tgt_len, reduction="none")
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-10)
    single = F.ctc_loss(ember.tensor(lp[:, 0]), ember.tensor(targets[0]), [5], [2], reduction="none")
    assert single.dim() == 0 and float(single) == pytest.approx(expected[0], rel=1e-10)


def test_ctc_empty_target_and_impossible_alignment():
    lp = _log_softmax(RNG.normal(size=(3, 2, 3)))
    # Sequence 0: empty target (all blanks). Sequence 1: 3 labels need at least 5 frames with a repeat.
    tgt = ember.tensor([[1, 1, 2], [1, 1, 2]])
    got = F.ctc_loss(ember.tensor(lp), tgt, [3, 3], [0, 3], reduction="none")
    assert float(got[0]) == pytest.approx(-lp[:, 0, 0].sum(), rel=1e-12)
    assert float(got[1]) == float("inf")
    x = ember.tensor(lp, requires_grad=True)
    zeroed = F.ctc_loss(x, tgt, [3, 3], [0, 3], reduction="sum", zero_infinity=True)
    assert float(zeroed) == pytest.approx(-lp[:, 0, 0].sum(), rel=1e-12)
    zeroed.backward()
    grad = x.grad.numpy()
    assert np.all(grad[:, 1] == 0) and np.all(np.isfinite(grad))


def test_ctc_gradcheck():
    lp, in_len, tgt_len, targets = _case(steps=4, classes=3)
    # the second target repeats its first label; a third equal one would need 5 frames (infinite
    # loss in 4, which the RNG drew whenever the tests before this one were deselected)
    targets[1][2] = 3 - targets[1][1]
    logits = ember.tensor(RNG.normal(size=(4, 3, 3)), requires_grad=True)
    width = max(tgt_len)
    tgt = ember.tensor([row + [0] * (width - len(row)) for row in targets])
    in_len = [4, 4, 3]

    def loss(z):
        return F.ctc_loss(F.log_softmax(z, 2), tgt, in_len, tgt_len, reduction="mean")

    assert gradcheck(loss, (logits,))


@pytest.mark.parametrize("dtype", [ember.float16, ember.bfloat16], ids=["float16", "bfloat16"])
def test_ctc_half_inputs(dtype):
    lp, in_len, tgt_len, targets = _case()
    low = ember.tensor(lp).to(dtype)
    width = max(tgt_len)
    tgt = ember.tensor([row + [0] * (width - len(row)) for row in targets])
    expected = _reference(low.to(ember.float64).numpy(), in_len, tgt_len, targets, 0)
    got = F.ctc_loss(low, tgt, in_len, tgt_len, reduction="none")
    assert got.dtype == dtype
    np.testing.assert_allclose(got.to(ember.float64).numpy(), expected, rtol=1e-2)


def test_ctc_errors():
    lp = ember.tensor(_log_softmax(RNG.normal(size=(4, 2, 3))))
    tgt = ember.tensor([[1, 2], [2, 1]])
    with pytest.raises(RuntimeError, match="Expected input_lengths to have value at most 4, but got value 5"):
        F.ctc_loss(lp, tgt, [5, 4], [2, 2])
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 3 at dimension 1"):
        F.ctc_loss(lp, tgt, [4, 4], [3, 2])
    with pytest.raises(RuntimeError, match="Expected tensor to have size at least 5 at dimension 0"):
        F.ctc_loss(lp, ember.tensor([1, 2, 1]), [4, 4], [2, 3])
    with pytest.raises(RuntimeError, match="target labels must be in \\[0, 3\\) and differ from blank=0, got 3"):
        F.ctc_loss(lp, ember.tensor([[1, 3], [1, 2]]), [4, 4], [2, 2])
    with pytest.raises(RuntimeError, match="input_lengths must have one entry per batch element \\(2\\), got 1"):
        F.ctc_loss(lp, tgt, [4], [2, 2])
    with pytest.raises(RuntimeError, match="log_probs must be 2-D \\(T, C\\) or 3-D"):
        F.ctc_loss(lp[0, 0], tgt, [4, 4], [2, 2])
    with pytest.raises(RuntimeError, match="targets must be an integer tensor"):
        F.ctc_loss(lp, tgt.to(ember.float32), [4, 4], [2, 2])
    with pytest.raises(ValueError, match="avg is not a valid value for reduction"):
        F.ctc_loss(lp, tgt, [4, 4], [2, 2], reduction="avg")
    assert repr(nn.CTCLoss()) == "CTCLoss()"
