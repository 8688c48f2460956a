"""forced_align against a brute-force search over all CTC paths; merge_tokens and TokenSpan."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ember
from emberaudio.functional import TokenSpan, forced_align, merge_tokens


def _collapse(path, blank):
    out = [p for i, p in enumerate(path) if i == 0 or p != path[i - 1]]
    return [p for p in out if p != blank]


def _brute_force(log_probs, targets, blank):
    """The best-scoring frame labelling among all C**T whose CTC collapse equals targets."""
    T, C = log_probs.shape
    best, best_path = -np.inf, None
    for path in itertools.product(range(C), repeat=T):
        if _collapse(path, blank) == list(targets):
            score = float(log_probs[np.arange(T), list(path)].sum())
            if score > best:
                best, best_path = score, path
    return np.array(best_path)


def _log_softmax(x):
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.mark.parametrize("targets,blank", [([1, 2], 0), ([1, 1], 0), ([2, 1, 2], 0), ([], 0), ([0, 2], 3)])
@pytest.mark.parametrize("dtype,tdtype", [(np.float32, np.int32), (np.float64, np.int64)])
def test_matches_brute_force(targets, blank, dtype, tdtype):
    rng = np.random.default_rng(len(targets) + blank)
    lp = _log_softmax(rng.standard_normal((6, 4)) * 2).astype(dtype)
    ref = _brute_force(lp.astype(np.float64), targets, blank)
    ali, scores = forced_align(ember.from_numpy(lp[None]), ember.from_numpy(np.array([targets], dtype=tdtype)),
                               blank=blank)
    assert tuple(ali.shape) == (1, 6) and tuple(scores.shape) == (1, 6)
    assert ali.numpy().dtype == tdtype and scores.numpy().dtype == dtype
    np.testing.assert_array_equal(ali.numpy()[0], ref)
    np.testing.assert_allclose(scores.numpy()[0], lp[np.arange(6), ref], rtol=0)


def test_non_contiguous_and_explicit_lengths():
    rng = np.random.default_rng(9)
    lp = _log_softmax(rng.standard_normal((5, 4)))
    view = ember.from_numpy(np.ascontiguousarray(lp.T)).t().unsqueeze(0)
    assert not view.is_contiguous()
    targets = ember.tensor([[3, 1]], dtype=ember.int32)
    ali, _ = forced_align(view, targets, ember.tensor([5], dtype=ember.int32), ember.tensor([2], dtype=ember.int32))
    np.testing.assert_array_equal(ali.numpy()[0], _brute_force(lp, [3, 1], 0))


def test_zero_frames_and_no_targets():
    ali, scores = forced_align(ember.zeros(1, 0, 3), ember.zeros(1, 0, dtype=ember.int64))
    assert tuple(ali.shape) == (1, 0) and tuple(scores.shape) == (1, 0)


def test_errors():
    lp = ember.from_numpy(_log_softmax(np.random.default_rng(0).standard_normal((1, 4, 3))))
    ok = ember.tensor([[1, 2]], dtype=ember.int32)
    with pytest.raises(ValueError, match="shouldn't contain blank index"):
        forced_align(lp, ember.tensor([[0, 1]], dtype=ember.int32))
    with pytest.raises(ValueError, match="targets length is too long for CTC.*repeats: 2"):
        forced_align(lp, ember.tensor([[1, 1, 1]], dtype=ember.int32))
    with pytest.raises(ValueError, match=r"targets values must be within \[0, num classes = 3\)"):
        forced_align(lp, ember.tensor([[1, 5]], dtype=ember.int32))
    with pytest.raises(ValueError, match="blank must be within"):
        forced_align(lp, ok, blank=3)
    with pytest.raises(RuntimeError, match="batch dimension for log_probs must be 1"):
        forced_align(ember.cat([lp, lp]), ember.cat([ok, ok]))
    with pytest.raises(RuntimeError, match="log_probs must be 3-D"):
        forced_align(lp[0], ok)
    with pytest.raises(RuntimeError, match="targets must be 2-D"):
        forced_align(lp, ok[0])
    with pytest.raises(RuntimeError, match="targets must be int32 or int64"):
        forced_align(lp, ok.to(ember.float32))
    with pytest.raises(RuntimeError, match="log_probs must be float32 or float64"):
        forced_align(ok.unsqueeze(0), ok)
    with pytest.raises(RuntimeError, match="input length mismatch"):
        forced_align(lp, ok, input_lengths=ember.tensor([3]))
    with pytest.raises(RuntimeError, match="target length mismatch"):
        forced_align(lp, ok, target_lengths=ember.tensor([1]))


def _reference_spans(tokens, scores, blank):
    spans, start = [], 0
    for i in range(1, len(tokens) + 1):
        if i == len(tokens) or tokens[i] != tokens[start]:
            if tokens[start] != blank:
                spans.append((tokens[start], start, i, float(np.mean(scores[start:i]))))
            start = i
    return spans


def test_merge_tokens():
    tokens = np.array([0, 1, 1, 0, 0, 2, 1, 1, 1, 0, 2])
    scores = np.random.default_rng(3).standard_normal(11)
    spans = merge_tokens(ember.from_numpy(tokens), ember.from_numpy(scores))
    assert all(isinstance(s, TokenSpan) for s in spans)
    got = [(s.token, s.start, s.end, s.score) for s in spans]
    ref = _reference_spans(tokens.tolist(), scores, 0)
    assert [g[:3] for g in got] == [r[:3] for r in ref]
    np.testing.assert_allclose([g[3] for g in got], [r[3] for r in ref], rtol=1e-12)
    assert [len(s) for s in spans] == [2, 1, 3, 1]
    assert merge_tokens(ember.from_numpy(tokens), ember.from_numpy(scores), blank=1)[0].token == 0
    assert merge_tokens(ember.zeros(0, dtype=ember.int64), ember.zeros(0)) == []


def test_merge_tokens_errors():
    with pytest.raises(ValueError, match="must be 1D Tensor"):
        merge_tokens(ember.zeros(2, 2, dtype=ember.int64), ember.zeros(4))
    with pytest.raises(ValueError, match="must be the same length"):
        merge_tokens(ember.zeros(3, dtype=ember.int64), ember.zeros(4))
