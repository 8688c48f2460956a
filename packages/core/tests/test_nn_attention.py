"""scaled_dot_product_attention against a float64 NumPy softmax(Q K^T scale + mask) V: bool and
float masks, is_causal, scale, grouped-query heads, broadcast batch dims, non-contiguous inputs,
fully masked rows, dropout; gradients by gradcheck; argument errors."""

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck
from ember.nn import functional as F

RNG = np.random.default_rng(29)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def _ref(q, k, v, mask=None, scale=None):
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + mask
    top = scores.max(-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0)
    e = np.exp(scores - top)
    total = e.sum(-1, keepdims=True)
    weights = np.where(total > 0, e / np.where(total > 0, total, 1), 0)
    return weights @ v


def test_attention_matches_reference_with_masks_scale_and_causal():
    q, k, v = RNG.normal(size=(2, 3, 4, 5)), RNG.normal(size=(2, 3, 6, 5)), RNG.normal(size=(2, 3, 6, 7))
    np.testing.assert_allclose(F.scaled_dot_product_attention(_t(q), _t(k), _t(v)).numpy(), _ref(q, k, v),
                               rtol=1e-12)
    bool_mask = RNG.uniform(size=(4, 6)) > 0.3
    bool_mask[:, 0] = True
    np.testing.assert_allclose(F.scaled_dot_product_attention(_t(q), _t(k), _t(v), _t(bool_mask)).numpy(),
                               _ref(q, k, v, bool_mask), rtol=1e-12)
    float_mask = RNG.normal(size=(3, 1, 6))  # broadcasts over batch and queries
    np.testing.assert_allclose(F.scaled_dot_product_attention(_t(q), _t(k), _t(v), _t(float_mask), scale=0.3).numpy(),
                               _ref(q, k, v, float_mask, 0.3), rtol=1e-12)
    causal = np.tril(np.ones((4, 6), dtype=bool))
    np.testing.assert_allclose(F.scaled_dot_product_attention(_t(q), _t(k), _t(v), is_causal=True).numpy(),
                               _ref(q, k, v, causal), rtol=1e-12)
    # key/value without the batch dim broadcast against query's; a transposed query view
    qt = _t(np.ascontiguousarray(np.swapaxes(q, -1, -2))).transpose(-1, -2)
    np.testing.assert_allclose(F.scaled_dot_product_attention(qt, _t(k[0]), _t(v[0])).numpy(),
                               _ref(q, k[0], v[0]), rtol=1e-12)


def test_grouped_query_heads_fully_masked_rows_and_zero_size():
    q, k, v = RNG.normal(size=(1, 4, 3, 2)), RNG.normal(size=(1, 2, 5, 2)), RNG.normal(size=(1, 2, 5, 3))
    got = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), enable_gqa=True).numpy()
    np.testing.assert_allclose(got, _ref(q, k.repeat(2, axis=1), v.repeat(2, axis=1)), rtol=1e-12)
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False  # query 1 may see no key
    query = _t(q[:, :2], True)
    out = F.scaled_dot_product_attention(query, _t(k), _t(v), _t(mask))
    assert np.all(out.detach().numpy()[:, :, 1] == 0) and np.all(np.isfinite(out.detach().numpy()))
    out.sum().backward()
    assert np.all(query.grad.numpy()[:, :, 1] == 0) and np.all(np.isfinite(query.grad.numpy()))
    empty = F.scaled_dot_product_attention(_t(np.zeros((0, 3, 2))), _t(np.zeros((0, 5, 2))), _t(np.zeros((0, 5, 4))))
    assert tuple(empty.shape) == (0, 3, 4)


def test_attention_gradients_and_dropout():
    q, k, v = (_t(RNG.normal(size=s), True) for s in ((2, 3, 4), (2, 5, 4), (2, 5, 3)))
    mask = _t(RNG.normal(size=(3, 5)), True)
    assert gradcheck(lambda a, b, c, m: F.scaled_dot_product_attention(a, b, c, m), (q, k, v, mask))
    assert gradcheck(lambda a, b, c: F.scaled_dot_product_attention(a, b, c, is_causal=True, scale=0.7), (q, k, v))
    ember.manual_seed(0)
    ones = _t(np.ones((1, 200, 4)))
    dropped = F.scaled_dot_product_attention(ones, ones, _t(np.ones((1, 200, 1))), dropout_p=0.5).numpy()
    assert abs(dropped.mean() - 1.0) < 0.1 and dropped.std() > 0  # inverted dropout keeps the mean


def test_attention_errors():
    q = _t(np.zeros((2, 3, 4)))
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set when is_causal=True"):
        F.scaled_dot_product_attention(q, q, q, _t(np.zeros((3, 3))), is_causal=True)
    with pytest.raises(RuntimeError, match="query's embedding size 4 does not match key's 5"):
        F.scaled_dot_product_attention(q, _t(np.zeros((2, 3, 5))), q)
    with pytest.raises(RuntimeError, match="key has 3 positions but value has 2"):
        F.scaled_dot_product_attention(q, q, _t(np.zeros((2, 2, 4))))
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)
    with pytest.raises(RuntimeError, match="query's 3 heads must be a multiple of key/value's 2"):
        F.scaled_dot_product_attention(_t(np.zeros((1, 3, 2, 4))), _t(np.zeros((1, 2, 2, 4))),
                                       _t(np.zeros((1, 2, 2, 4))), enable_gqa=True)
