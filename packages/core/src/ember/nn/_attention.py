"""scaled_dot_product_attention (torch.nn.functional), as PyTorch's math path: softmax(Q K^T *
scale + mask) V, with the rows that every key is masked out of giving zeros (PyTorch's
"safe softmax") rather than NaN."""

from __future__ import annotations

import math

from .. import _C

__all__ = ["scaled_dot_product_attention"]


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """query [..., L, E], key [..., S, E], value [..., S, Ev] -> [..., L, Ev]; batch dims broadcast.

    attn_mask: bool (True takes part) or float (added to the scores), broadcastable to
    [..., L, S]; is_causal masks keys after each query (top-left aligned); enable_gqa lets
    query have a multiple of key/value's heads (dim -3)."""
    if query.dim() < 2 or key.dim() < 2 or value.dim() < 2:
        raise RuntimeError("scaled_dot_product_attention: query, key and value must be at least 2-D")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: query's embedding size {query.shape[-1]} does not match "
                           f"key's {key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: key has {key.shape[-2]} positions but value has "
                           f"{value.shape[-2]}")
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True")
    if not 0.0 <= dropout_p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if enable_gqa and query.dim() >= 3 and key.shape[-3] != query.shape[-3]:
        heads, kv_heads = query.shape[-3], key.shape[-3]
        if kv_heads == 0 or heads % kv_heads:
            raise RuntimeError(f"scaled_dot_product_attention: with enable_gqa, query's {heads} heads must be a "
                               f"multiple of key/value's {kv_heads}")
        key = _C.repeat_interleave(key, heads // kv_heads, -3)
        value = _C.repeat_interleave(value, heads // kv_heads, -3)
    length, source = query.shape[-2], key.shape[-2]
    factor = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = _C.matmul(query, _C.transpose(key, -2, -1)) * factor
    allowed = None
    if is_causal:
        allowed = _C.tril(_C.ones([length, source], dtype=_C.bool))
    elif attn_mask is not None:
        if attn_mask.dtype == _C.bool:
            allowed = attn_mask
        else:
            scores = scores + attn_mask
    if allowed is not None:
        scores = _C.masked_fill(scores, _C.logical_not(allowed), float("-inf"))
    weights = _C.softmax(scores, -1)
    # a row with every key masked: softmax gives NaN; PyTorch's math path returns zeros there
    empty_row = _C.eq(scores, float("-inf")).all(-1, True)
    weights = _C.where(empty_row, _C.zeros_like(weights), weights)
    if dropout_p > 0.0:
        keep = _C.empty_like(weights).bernoulli_(1 - dropout_p)
        weights = weights * keep / (1 - dropout_p)
    return _C.matmul(weights, value)
