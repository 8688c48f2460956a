"""WavLM self attention (Chen et al., 2022), as torchaudio's WavLMSelfAttention: multi-head
attention whose weights get a bucketed relative-position bias, computed in the first layer and
re-gated by each layer from its own input (gated relative position bias)."""

from __future__ import annotations

import math

import ember
from ember import nn


class WavLMSelfAttention(nn.Module):
    """Self attention with gated relative position bias.

    Args:
        embed_dim (int): model dimension.
        num_heads (int): attention heads.
        dropout (float): dropout on the attention weights. (Default: 0.0)
        bias (bool): biases in the projections. (Default: True)
        has_relative_attention_bias (bool): this layer owns the bucket embedding (the first
            layer). (Default: False)
        num_buckets (int): relative-position buckets. (Default: 32)
        max_distance (int): distance mapped to the last bucket. (Default: 128)
        gru_rel_pos (bool): gate the bias by the layer input. (Default: True)
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 has_relative_attention_bias: bool = False, num_buckets: int = 32,
                 max_distance: int = 128, gru_rel_pos: bool = True):
        super().__init__()
        if embed_dim % num_heads != 0:
            raise ValueError(f"`embed_dim ({embed_dim})` is not divisible by `num_heads ({num_heads})`")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.has_relative_attention_bias = has_relative_attention_bias
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.rel_attn_embed = nn.Embedding(num_buckets, num_heads) if has_relative_attention_bias else None
        self.dropout = dropout
        # Only its parameters are used (in_proj_*, out_proj), as in torchaudio's state dicts.
        self.attention = nn.MultiheadAttention(embed_dim, num_heads, dropout=dropout, bias=bias,
                                               batch_first=True)
        self.gru_rel_pos = gru_rel_pos
        if gru_rel_pos:
            self.gru_rel_pos_linear = nn.Linear(self.head_dim, 8)
            self.gru_rel_pos_const = nn.Parameter(ember.ones(1, num_heads, 1, 1))
        self.has_position_bias = True

    def _relative_positions_bucket(self, relative_positions: ember.Tensor,
                                   bidirectional: bool = True) -> ember.Tensor:
        # Half the buckets per direction; within one, exact buckets for small distances and
        # logarithmically wider ones up to max_distance.
        num_buckets = self.num_buckets
        buckets = ember.zeros_like(relative_positions)
        if bidirectional:
            num_buckets //= 2
            buckets = buckets + (relative_positions > 0).long() * num_buckets
            distance = relative_positions.abs()
        else:
            distance = ember.clamp(-relative_positions, min=0)
        max_exact = num_buckets // 2
        # Clamped to 1 only to keep the logarithm finite where the exact bucket is used.
        scaled = (ember.log(ember.clamp(distance, min=1).double() / max_exact)
                  / math.log(self.max_distance / max_exact) * (num_buckets - max_exact))
        large = ember.clamp(max_exact + scaled.long(), max=num_buckets - 1)
        return buckets + ember.where(distance < max_exact, distance, large)

    def compute_bias(self, query_length: int, key_length: int) -> ember.Tensor:
        """(num_heads, query_length, key_length) bias from the bucket embedding."""
        device = self.rel_attn_embed.weight.device
        context = ember.arange(query_length, dtype=ember.int64, device=device)[:, None]
        memory = ember.arange(key_length, dtype=ember.int64, device=device)[None, :]
        buckets = self._relative_positions_bucket(memory - context, bidirectional=True)
        return self.rel_attn_embed(buckets).permute(2, 0, 1)

    def forward(self, query: ember.Tensor, key_padding_mask: ember.Tensor | None = None,
                attention_mask: ember.Tensor | None = None,
                position_bias: ember.Tensor | None = None) -> tuple[ember.Tensor, ember.Tensor | None]:
        """query (B, T, D); key_padding_mask (B, T) bool, True on pads; attention_mask additive,
        broadcastable to (B, heads, T, T); position_bias (B, heads, T, T) from the first layer.
        Returns (output (B, T, D), position_bias)."""
        B, T, D = query.shape
        if D != self.embed_dim:
            raise ValueError(f"The expected input shape is (batch, sequence, embed_dim=={self.embed_dim}). "
                             f"Found {tuple(query.shape)}.")
        if self.rel_attn_embed is not None and position_bias is None:
            position_bias = self.compute_bias(T, T).unsqueeze(0).expand(B, -1, -1, -1).to(query.dtype)
        bias = None
        if position_bias is not None:
            bias = position_bias
            if self.gru_rel_pos:
                heads = query.reshape(B, T, self.num_heads, self.head_dim).permute(0, 2, 1, 3)
                gates = ember.sigmoid(
                    self.gru_rel_pos_linear(heads).reshape(B, self.num_heads, T, 2, 4).sum(-1))
                gate_a, gate_b = gates.chunk(2, dim=-1)
                scale = gate_a * (gate_b * self.gru_rel_pos_const - 1.0) + 2.0
                bias = scale.reshape(B, self.num_heads, T, 1) * position_bias
            bias = bias.reshape(B, self.num_heads, T, T)
        if key_padding_mask is not None:
            pad = ember.zeros(B, 1, 1, T, dtype=query.dtype, device=query.device).masked_fill(
                key_padding_mask.reshape(B, 1, 1, T), float("-inf"))
            bias = pad if bias is None else bias + pad
        if attention_mask is not None:
            bias = attention_mask if bias is None else bias + attention_mask
        qkv = nn.functional.linear(query, self.attention.in_proj_weight, self.attention.in_proj_bias)
        q, k, v = (t.reshape(B, T, self.num_heads, self.head_dim).transpose(2, 1)
                   for t in qkv.chunk(3, dim=-1))
        out = nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=bias, dropout_p=self.dropout if self.training else 0.0, is_causal=False)
        out = out.transpose(1, 2).reshape(B, T, self.embed_dim)
        return self.attention.out_proj(out), position_bias
