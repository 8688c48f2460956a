"""The transformer encoder's inference fast path (PyTorch's "BetterTransformer").

In eval mode with nothing to differentiate, self-attention and TransformerEncoderLayer run on
*packed tokens*: the sequences of a batch laid end to end as one [tokens, E] matrix with
offsets marking where each sequence starts. Then
- the Q, K and V projections are one matrix product ([tokens, E] x [E, 3E]);
- attention is one fused kernel (`_packed_attention`: scores, softmax and the weighted sum per
  sequence and head, never materializing a padded score tensor or a mask);
- each residual add and LayerNorm is one kernel (`_add_layer_norm`).
With a key padding mask, TransformerEncoder(enable_nested_tensor=True) packs only the real
tokens, so padding costs nothing; its output is zero at the padded positions, as PyTorch's
nested-tensor path returns. Each `*_reason` function returns "" when the fast path applies, or
the reason it does not (shown to users as `why_not_fast_path`)."""

from __future__ import annotations

import math

from .. import _C

_DTYPES = (_C.float32, _C.float64)


def _requires_grad(*tensors) -> bool:
    return _C._is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


def attention_reason(mha, query, key, value, need_weights, attn_mask, key_padding_mask) -> str:
    """Why MultiheadAttention.forward cannot take the fused path ("" when it can)."""
    if mha.training:
        return "training is enabled"
    if query.dim() != 3:
        return f"input not batched; expected query.dim() of 3 but got {query.dim()}"
    if not (query is key and key is value):
        return "non-self attention was used (query, key, and value are not the same Tensor)"
    if need_weights:
        return "need_weights was True (the fused path returns no attention weights)"
    if attn_mask is not None:
        return "attn_mask was given (the fused path takes a key_padding_mask only)"
    return _attention_module_reason(mha) or _input_reason(query, key_padding_mask, mha.parameters(), mha.batch_first)


def _attention_module_reason(mha) -> str:
    if not mha._qkv_same_embed_dim:
        return "_qkv_same_embed_dim was not True"
    if mha.in_proj_bias is None or mha.out_proj.bias is None:
        return "the attention was built with bias=False"
    if mha.bias_k is not None:
        return "add_bias_kv was enabled"
    if mha.add_zero_attn:
        return "add_zero_attn was enabled"
    return ""


def _input_reason(x, key_padding_mask, parameters, batch_first) -> str:
    if x.dtype not in _DTYPES:
        return f"the input's dtype {x.dtype} is not float32 or float64"
    if x.device.type != "cpu":
        return f"the fused kernels run on CPU; the input is on {x.device}"
    params = list(parameters)
    if any(p.dtype != x.dtype for p in params):
        return "the input's dtype differs from the parameters'"
    if _requires_grad(x, *params):
        return "grad is enabled and at least one of query or the input/output projection weights or biases " \
               "requires_grad"
    if key_padding_mask is not None:
        if key_padding_mask.dtype != _C.bool:
            return "key_padding_mask is not a bool tensor"
        batch, length = (x.shape[0], x.shape[1]) if batch_first else (x.shape[1], x.shape[0])
        if tuple(key_padding_mask.shape) != (batch, length):
            return "key_padding_mask's shape is not (batch, sequence length)"  # the slow path raises for it
    return ""


def layer_reason(layer, src, src_mask, key_padding_mask) -> str:
    """Why TransformerEncoderLayer.forward cannot take the fused path ("" when it can)."""
    if layer.training:
        return "training is enabled"
    if src.dim() != 3:
        return f"input not batched; expected src.dim() of 3 but got {src.dim()}"
    if src_mask is not None:
        return "src_mask was given (the fused path takes a src_key_padding_mask only)"
    return structure_reason(layer) or _input_reason(src, key_padding_mask, layer.parameters(),
                                                     layer.self_attn.batch_first)


def structure_reason(layer) -> str:
    """What in a TransformerEncoderLayer's own make-up rules the fast path out."""
    if not layer.activation_relu_or_gelu:
        return "activation_relu_or_gelu was not True"
    if layer.norm1.eps != layer.norm2.eps:
        return "norm1.eps is not equal to norm2.eps"
    if not (layer.norm1.elementwise_affine and layer.norm2.elementwise_affine) \
            or layer.norm1.bias is None or layer.norm2.bias is None:
        return "a LayerNorm has no weight or bias"
    if layer.linear1.bias is None or layer.linear2.bias is None:
        return "the feed-forward layers were built with bias=False"
    return _attention_module_reason(layer.self_attn)


# ---------------------------------------------------------------------------------------------
# Packing: batch-major [N, L, E] <-> packed tokens.

class Packing:
    """Which rows of the flattened batch [N * L, E] are real tokens, and where each sequence's
    real tokens start in the packed matrix."""

    def __init__(self, batch: int, length: int, key_padding_mask=None) -> None:
        self.batch, self.length = batch, length
        if key_padding_mask is None:
            self.rows = None  # every token is real
            self.offsets = _C.arange(batch + 1, dtype=_C.int64) * length
        else:
            keep = _C.reshape(_C.logical_not(key_padding_mask), [batch * length])
            self.rows = _C.nonzero(keep)[:, 0]
            counts = _C.sum(_C.reshape(keep, [batch, length]), [1], dtype=_C.int64)
            self.offsets = _C.cat([_C.zeros([1], dtype=_C.int64), _C.cumsum(counts, 0)])

    def pack(self, flat):
        return flat if self.rows is None else flat[self.rows]  # (the advanced-indexing row gather)

    def unpack(self, tokens):
        """[tokens, E] -> [N * L, E] with zeros at the padded positions."""
        if self.rows is None:
            return tokens
        out = _C.zeros([self.batch * self.length, tokens.shape[1]], dtype=tokens.dtype)
        out[self.rows] = tokens
        return out


def _batch_major(x, batch_first):
    return x if batch_first else _C.transpose(x, 0, 1)


def _flat(x):
    return _C.reshape(x, [x.shape[0] * x.shape[1], x.shape[2]])


def _affine(x, weight, bias):
    """x W^T + b as one product."""
    return _C.addmm(bias, x, weight.t())


def _attend(mha, tokens, query_offsets, key_packing):
    """Fused self-attention of packed tokens: one QKV product, one attention kernel, the output
    projection. key_packing (or None) picks which tokens serve as keys (the unpadded ones)."""
    embed = mha.embed_dim
    qkv = _affine(tokens, mha.in_proj_weight, mha.in_proj_bias)
    q, k, v = qkv[:, :embed], qkv[:, embed:2 * embed], qkv[:, 2 * embed:]
    key_offsets = query_offsets
    if key_packing is not None:
        k, v, key_offsets = key_packing.pack(k), key_packing.pack(v), key_packing.offsets
    out = _C._packed_attention(q, k, v, query_offsets, key_offsets, mha.num_heads, 1.0 / math.sqrt(mha.head_dim))
    return _affine(out, mha.out_proj.weight, mha.out_proj.bias)


def self_attention(mha, x, key_padding_mask):
    """MultiheadAttention's fast path: every query position, keys without the padded ones."""
    xb = _batch_major(x, mha.batch_first)
    batch, length = xb.shape[0], xb.shape[1]
    every = Packing(batch, length)
    keys = None if key_padding_mask is None else Packing(batch, length, key_padding_mask)
    out = _C.reshape(_attend(mha, _flat(xb), every.offsets, keys), [batch, length, mha.embed_dim])
    return _batch_major(out, mha.batch_first)


def _feed_forward(layer, h):
    hidden = _affine(h, layer.linear1.weight, layer.linear1.bias)
    hidden = hidden.relu_() if layer.activation_relu_or_gelu == 1 else _C.gelu(hidden)
    return _affine(hidden, layer.linear2.weight, layer.linear2.bias)


def encoder_layer(layer, tokens, offsets, key_packing=None):
    """One TransformerEncoderLayer on packed tokens (post-norm or norm_first)."""
    n1, n2 = layer.norm1, layer.norm2
    if layer.norm_first:
        h = _C._add_layer_norm(tokens, None, n1.weight, n1.bias, n1.eps)
        h = tokens + _attend(layer.self_attn, h, offsets, key_packing)
        return h + _feed_forward(layer, _C._add_layer_norm(h, None, n2.weight, n2.bias, n2.eps))
    h = _C._add_layer_norm(_attend(layer.self_attn, tokens, offsets, key_packing), tokens, n1.weight, n1.bias,
                           n1.eps)
    return _C._add_layer_norm(_feed_forward(layer, h), h, n2.weight, n2.bias, n2.eps)


def run_layer(layer, src, key_padding_mask):
    """TransformerEncoderLayer's fast path on its own: every position computed (as the slow
    path), padded keys left out of attention."""
    xb = _batch_major(src, layer.self_attn.batch_first)
    batch, length = xb.shape[0], xb.shape[1]
    keys = None if key_padding_mask is None else Packing(batch, length, key_padding_mask)
    out = encoder_layer(layer, _flat(xb), Packing(batch, length).offsets, keys)
    return _batch_major(_C.reshape(out, [batch, length, xb.shape[2]]), layer.self_attn.batch_first)


def run_encoder(encoder, src, key_padding_mask):
    """TransformerEncoder with nested tensors: only the real tokens go through the stack; the
    padded positions of the output are zero."""
    batch_first = encoder.layers[0].self_attn.batch_first
    xb = _batch_major(src, batch_first)
    batch, length, embed = xb.shape
    packing = Packing(batch, length, key_padding_mask)
    tokens = packing.pack(_flat(xb))
    for layer in encoder.layers:
        tokens = encoder_layer(layer, tokens, packing.offsets)
    if encoder.norm is not None:
        tokens = _C._add_layer_norm(tokens, None, encoder.norm.weight, encoder.norm.bias, encoder.norm.eps)
    return _batch_major(_C.reshape(packing.unpack(tokens), [batch, length, embed]), batch_first)
