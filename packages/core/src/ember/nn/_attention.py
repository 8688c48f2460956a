"""scaled_dot_product_attention (torch.nn.functional), as PyTorch's math path: softmax(Q K^T *
scale + mask) V, with the rows that every key is masked out of giving zeros (PyTorch's
"safe softmax") rather than NaN; and multi_head_attention_forward, the functional form of
nn.MultiheadAttention (sequence-first [L, N, E] inputs, as PyTorch's)."""

from __future__ import annotations

import math
import warnings

from .. import _C
from .._autocast_policy import autocast_policy
from ._activation import softmax
from ._dropout import dropout
from ._linear import linear

__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]


@autocast_policy("lower_precision_fp")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False):
    """query [..., L, E], key [..., S, E], value [..., S, Ev] -> [..., L, Ev]; batch dims broadcast.

    attn_mask: bool (True takes part) or float (added to the scores), broadcastable to
    [..., L, S]; is_causal masks keys after each query (top-left aligned); enable_gqa lets
    query have a multiple of key/value's heads (dim -3)."""
    from .attention import _check_backend

    _check_backend()  # nn.attention.sdpa_kernel may have left no backend the CPU has
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
        weights = weights * (keep / (1 - dropout_p))
    return _C.matmul(weights, value)


def _float_mask(mask, name, query):
    """A bool mask (True = may not attend) as an additive float mask of query's dtype; a float
    mask as it is. Other dtypes are refused, as PyTorch does."""
    if mask is None:
        return None
    if mask.dtype == _C.bool:
        return _C.masked_fill(_C.zeros(list(mask.shape), dtype=query.dtype), mask, float("-inf"))
    if not mask.is_floating_point():
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _check_mask_types(key_padding_mask, attn_mask):
    if key_padding_mask is not None and attn_mask is not None:
        kinds = {m.dtype == _C.bool for m in (key_padding_mask, attn_mask)}
        if len(kinds) > 1:
            warnings.warn("Support for mismatched key_padding_mask and attn_mask is deprecated. Use same type for "
                          "both instead.", stacklevel=3)


def _pad_last(mask):
    """Appends one attendable (zero) column to an additive mask: the extra bias_k / zero key."""
    return None if mask is None else _C.cat([mask, _C.zeros(list(mask.shape[:-1]) + [1], dtype=mask.dtype)], -1)


def _in_projection(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight, q_proj_weight,
                   k_proj_weight, v_proj_weight, embed_dim):
    biases = [None] * 3 if in_proj_bias is None else _C.split(in_proj_bias, embed_dim, 0)
    if not use_separate_proj_weight:
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        if query is key and key is value:  # self-attention: one [E, 3E] product (the fused projection)
            q, k, v = _C.split(linear(query, in_proj_weight, in_proj_bias), embed_dim, -1)
            return q, k, v
        weights = _C.split(in_proj_weight, embed_dim, 0)
    else:
        if q_proj_weight is None or k_proj_weight is None or v_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is True but q_proj_weight, k_proj_weight or "
                                 "v_proj_weight is None")
        weights = (q_proj_weight, k_proj_weight, v_proj_weight)
    return tuple(linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases, strict=True))


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias,
                                 bias_k, bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias,
                                 training=True, key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None, k_proj_weight=None,
                                 v_proj_weight=None, static_k=None, static_v=None, average_attn_weights=True,
                                 is_causal=False):
    """query [L, N, E] (or unbatched [L, E]), key/value [S, N, kdim/vdim] -> (output [L, N, E],
    weights [N, L, S] averaged over heads, [N, H, L, S] otherwise, or None without need_weights).

    key_padding_mask [N, S] and attn_mask [L, S] or [N*H, L, S] are bool (True = may not
    attend) or additive float masks. bias_k/bias_v append one learned key/value, add_zero_attn
    one zero key/value. is_causal is a hint that attn_mask is the causal mask."""
    batched = query.dim() == 3
    if query.dim() not in (2, 3) or key.dim() != query.dim() or value.dim() != query.dim():
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {query.dim()}-D query, "
                             f"{key.dim()}-D key and {value.dim()}-D value")
    if not batched:  # unbatched: a batch of one, squeezed again at the end
        query, key, value = (_C.unsqueeze(t, 1) for t in (query, key, value))
        if key_padding_mask is not None:
            if key_padding_mask.dim() != 1:
                raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to be None or 1-D but "
                                     f"found {key_padding_mask.dim()}-D tensor instead")
            key_padding_mask = _C.unsqueeze(key_padding_mask, 0)
    length, batch, embed_dim = query.shape
    source = key.shape[0]
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    if num_heads <= 0 or embed_dim % num_heads:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    head_dim = embed_dim // num_heads
    if key.shape[:2] != value.shape[:2]:
        raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape {tuple(value.shape)}")
    if key.shape[1] != batch:
        raise AssertionError(f"key's batch size {key.shape[1]} does not match query's {batch}")
    if is_causal and attn_mask is None:
        raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use the Transformer module "
                           "method `generate_square_subsequent_mask` to create this mask.")
    _check_mask_types(key_padding_mask, attn_mask)
    key_padding_mask = _float_mask(key_padding_mask, "key_padding_mask", query)
    attn_mask = _float_mask(attn_mask, "attn_mask", query)
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the scaled-dot-product path builds the causal mask itself
    else:
        is_causal = False

    q, k, v = _in_projection(query, key, value, in_proj_weight, in_proj_bias, use_separate_proj_weight,
                             q_proj_weight, k_proj_weight, v_proj_weight, embed_dim)
    if attn_mask is not None:
        if attn_mask.dim() == 2:
            if tuple(attn_mask.shape) != (length, source):
                raise RuntimeError(f"The shape of the 2D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(length, source)}.")
            attn_mask = _C.unsqueeze(attn_mask, 0)
        elif attn_mask.dim() == 3:
            if tuple(attn_mask.shape) != (batch * num_heads, length, source):
                raise RuntimeError(f"The shape of the 3D attn_mask is {tuple(attn_mask.shape)}, but should be "
                                   f"{(batch * num_heads, length, source)}.")
        else:
            raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")
    if bias_k is not None or bias_v is not None:
        if bias_k is None or bias_v is None:
            raise AssertionError("bias_k and bias_v must be given together")
        if static_k is not None or static_v is not None:
            raise AssertionError("bias cannot be added to static key/value.")
        k = _C.cat([k, _C.expand(bias_k, [1, batch, embed_dim])], 0)
        v = _C.cat([v, _C.expand(bias_v, [1, batch, embed_dim])], 0)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)

    # heads: [L, N, E] -> [N*H, L, head_dim]
    q = _C.transpose(_C.reshape(q, [length, batch * num_heads, head_dim]), 0, 1)
    k = _C.transpose(_C.reshape(k, [k.shape[0], batch * num_heads, head_dim]), 0, 1) if static_k is None \
        else _static(static_k, "static_k", batch * num_heads, head_dim)
    v = _C.transpose(_C.reshape(v, [v.shape[0], batch * num_heads, head_dim]), 0, 1) if static_v is None \
        else _static(static_v, "static_v", batch * num_heads, head_dim)
    if add_zero_attn:
        k = _C.cat([k, _C.zeros([batch * num_heads, 1, head_dim], dtype=k.dtype)], 1)
        v = _C.cat([v, _C.zeros([batch * num_heads, 1, head_dim], dtype=v.dtype)], 1)
        attn_mask, key_padding_mask = _pad_last(attn_mask), _pad_last(key_padding_mask)
    source = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (batch, source):
            raise AssertionError(f"expecting key_padding_mask shape of {(batch, source)}, but got "
                                 f"{tuple(key_padding_mask.shape)}")
        padding = _C.reshape(_C.expand(_C.reshape(key_padding_mask, [batch, 1, 1, source]),
                                       [batch, num_heads, 1, source]), [batch * num_heads, 1, source])
        attn_mask = padding if attn_mask is None else attn_mask + padding
    if not training:
        dropout_p = 0.0

    if need_weights:
        scores = _C.matmul(q * (1.0 / math.sqrt(head_dim)), _C.transpose(k, 1, 2))
        if attn_mask is not None:
            scores = scores + attn_mask
        weights = softmax(scores, -1)
        if dropout_p > 0.0:
            weights = dropout(weights, p=dropout_p)
        out = _C.matmul(weights, v)  # [N*H, L, head_dim]
        out = _C.reshape(_C.transpose(out, 0, 1), [length * batch, embed_dim])
        out = _C.reshape(linear(out, out_proj_weight, out_proj_bias), [length, batch, embed_dim])
        weights = _C.reshape(weights, [batch, num_heads, length, source])
        if average_attn_weights:
            weights = _C.mean(weights, [1])
        if not batched:
            out, weights = _C.squeeze(out, 1), _C.squeeze(weights, 0)
        return out, weights

    if attn_mask is not None:
        # the mask's own length, not -1: an empty batch has no elements to infer it from
        attn_mask = _C.reshape(attn_mask, [batch, num_heads, attn_mask.shape[1], source]) if attn_mask.shape[0] != 1 \
            else _C.unsqueeze(attn_mask, 0)
    q, k, v = (_C.reshape(t, [batch, num_heads, t.shape[1], head_dim]) for t in (q, k, v))
    out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
    out = _C.reshape(_C.permute(out, [2, 0, 1, 3]), [length * batch, embed_dim])
    out = _C.reshape(linear(out, out_proj_weight, out_proj_bias), [length, batch, embed_dim])
    return (out if batched else _C.squeeze(out, 1)), None


def _static(t, name, rows, head_dim):
    if t.shape[0] != rows or t.shape[2] != head_dim:
        raise AssertionError(f"expecting {name}.size(0) of {rows} and {name}.size(2) of {head_dim}, but got "
                             f"{tuple(t.shape)}")
    return t
