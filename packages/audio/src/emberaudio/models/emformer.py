"""Emformer: the streaming memory transformer of Shi et al. (2021), as torchaudio.models.Emformer.

The utterance is cut into segments of ``segment_length`` frames. Each segment attends to itself,
to ``left_context_length`` frames before it, to its own ``right_context_length`` look-ahead frames
and (when ``max_memory_size > 0``) to the memory bank: one summary vector per earlier segment,
computed by the layer below. ``forward`` runs a whole utterance at once with a block attention
mask; ``infer`` runs one segment at a time and carries the left-context keys/values and the
memory bank in ``states``, so streaming reproduces ``forward`` (Note [streaming equals forward]).

Module and parameter names follow torchaudio, so its state dicts load unchanged.
"""

from __future__ import annotations

import math

import ember
from ember import nn

from ._utils import _check_lengths

__all__ = ["Emformer"]

# Note [streaming equals forward]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# In ``forward`` the attention of segment i is restricted by a mask to exactly what ``infer`` sees
# at its i-th call: memory rows max(0, i - M) .. i - 1, the right-context block of segment i and
# utterance frames max(0, i * S - L) .. (i + 1) * S. ``infer`` keeps per layer the last L keys and
# values of its utterance frames (so the left context is not recomputed) and the last M memory
# vectors. Both therefore compute the same numbers for an utterance whose length is a multiple
# of the segment length.
#
# Padded frames (beyond ``lengths``) are masked as keys for every batch size; torchaudio skips
# that mask for batch size 1, so there padded frames leak into valid ones. Here a batch item's
# valid outputs never depend on its padding or on the other batch items.

_ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU}


def _activation(name: str) -> nn.Module:
    if name not in _ACTIVATIONS:
        raise ValueError(f"Unsupported activation {name}")
    return _ACTIVATIONS[name]()


def _init_gains(strategy: str | None, num_layers: int) -> list[float | None]:
    if strategy is None:
        return [None] * num_layers
    if strategy == "depthwise":
        return [1.0 / math.sqrt(i + 1) for i in range(num_layers)]
    if strategy == "constant":
        return [1.0 / math.sqrt(2)] * num_layers
    raise ValueError(f"Unsupported weight_init_scale_strategy value {strategy}")


def _key_padding_mask(lengths: ember.Tensor, num_keys: int, num_prefix: int) -> ember.Tensor:
    """(B, num_keys) bool, True where a key is an utterance frame at or beyond ``lengths``.

    The keys are ``num_prefix`` always-valid rows (memory, right context, left context) followed
    by the utterance frames.
    """
    positions = ember.arange(num_keys - num_prefix, device=lengths.device).unsqueeze(0)
    utterance = positions >= lengths.unsqueeze(1)
    prefix = ember.zeros(lengths.shape[0], num_prefix, dtype=ember.bool, device=lengths.device)
    return ember.cat([prefix, utterance], dim=1)


class _EmformerAttention(nn.Module):
    """Multi-head attention of one Emformer layer (queries: right context, utterance, summary;
    keys/values: memory, right context, [left context,] utterance)."""

    def __init__(self, input_dim: int, num_heads: int, dropout: float = 0.0,
                 weight_init_gain: float | None = None, tanh_on_mem: bool = False,
                 negative_inf: float = -1e8):
        super().__init__()
        if input_dim % num_heads != 0:
            raise ValueError(f"input_dim ({input_dim}) is not a multiple of num_heads ({num_heads}).")
        self.input_dim = input_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.tanh_on_mem = tanh_on_mem
        self.negative_inf = negative_inf
        self.scaling = (input_dim // num_heads) ** -0.5
        self.emb_to_key_value = nn.Linear(input_dim, 2 * input_dim, bias=True)
        self.emb_to_query = nn.Linear(input_dim, input_dim, bias=True)
        self.out_proj = nn.Linear(input_dim, input_dim, bias=True)
        if weight_init_gain:
            nn.init.xavier_uniform_(self.emb_to_key_value.weight, gain=weight_init_gain)
            nn.init.xavier_uniform_(self.emb_to_query.weight, gain=weight_init_gain)

    def _heads(self, x: ember.Tensor) -> ember.Tensor:
        # (T, B, D) -> (B, H, T, D / H)
        T, B, _ = x.shape
        return x.reshape(T, B, self.num_heads, self.input_dim // self.num_heads).permute(1, 2, 0, 3)

    def attend(self, query_in: ember.Tensor, key: ember.Tensor, value: ember.Tensor,
               attention_mask: ember.Tensor, padding_mask: ember.Tensor,
               summary_length: int) -> tuple[ember.Tensor, ember.Tensor]:
        """Attention of ``query_in`` (Tq, B, D) over projected ``key``/``value`` (Tk, B, D).

        ``attention_mask`` (Tq, Tk) and ``padding_mask`` (B, Tk) are True where attention is
        forbidden. Returns the output for the non-summary queries and the new memory vectors
        (the outputs of the last ``summary_length`` queries, squashed).
        """
        Tq, B, _ = query_in.shape
        q = self._heads(self.emb_to_query(query_in)) * self.scaling
        k, v = self._heads(key), self._heads(value)
        weights = ember.matmul(q, k.transpose(-1, -2))  # (B, H, Tq, Tk)
        forbidden = attention_mask.unsqueeze(0).unsqueeze(0) | padding_mask.unsqueeze(1).unsqueeze(2)
        # A large finite negative (not -inf) keeps fully masked rows finite, as torchaudio does.
        weights = weights.masked_fill(forbidden, self.negative_inf)
        probs = nn.functional.softmax(weights, dim=-1)
        probs = nn.functional.dropout(probs, p=float(self.dropout), training=self.training)
        out = ember.matmul(probs, v).permute(2, 0, 1, 3).reshape(Tq, B, self.input_dim)
        out = self.out_proj(out)
        output, mems = out[: Tq - summary_length], out[Tq - summary_length:]
        mems = ember.tanh(mems) if self.tanh_on_mem else ember.clamp(mems, min=-10, max=10)
        return output, mems


class _EmformerLayer(nn.Module):
    """One Emformer layer: pre-norm block attention, then a residual pre-norm feed-forward."""

    def __init__(self, input_dim: int, num_heads: int, ffn_dim: int, segment_length: int,
                 dropout: float = 0.0, activation: str = "relu", left_context_length: int = 0,
                 max_memory_size: int = 0, weight_init_gain: float | None = None,
                 tanh_on_mem: bool = False, negative_inf: float = -1e8):
        super().__init__()
        self.attention = _EmformerAttention(input_dim, num_heads, dropout=dropout,
                                            weight_init_gain=weight_init_gain,
                                            tanh_on_mem=tanh_on_mem, negative_inf=negative_inf)
        self.dropout = nn.Dropout(dropout)
        self.memory_op = nn.AvgPool1d(kernel_size=segment_length, stride=segment_length,
                                      ceil_mode=True)
        self.pos_ff = nn.Sequential(
            nn.LayerNorm(input_dim),
            nn.Linear(input_dim, ffn_dim),
            _activation(activation),
            nn.Dropout(dropout),
            nn.Linear(ffn_dim, input_dim),
            nn.Dropout(dropout),
        )
        self.layer_norm_input = nn.LayerNorm(input_dim)
        self.layer_norm_output = nn.LayerNorm(input_dim)
        self.left_context_length = left_context_length
        self.segment_length = segment_length
        self.max_memory_size = max_memory_size
        self.input_dim = input_dim
        self.use_mem = max_memory_size > 0

    def _summary(self, utterance: ember.Tensor) -> ember.Tensor:
        # One mean vector per segment (the last one may be shorter): (num_segments, B, D).
        if not self.use_mem:
            return utterance[:0]
        return self.memory_op(utterance.permute(1, 2, 0)).permute(2, 0, 1)

    def _feed_forward(self, attention_out: ember.Tensor, residual: ember.Tensor) -> ember.Tensor:
        result = self.dropout(attention_out) + residual
        result = self.pos_ff(result) + result
        return self.layer_norm_output(result)

    def forward(self, utterance: ember.Tensor, lengths: ember.Tensor, right_context: ember.Tensor,
                mems: ember.Tensor, attention_mask: ember.Tensor):
        """Whole-utterance pass: returns (utterance out, right context out, next memory)."""
        R = right_context.shape[0]
        residual = ember.cat([right_context, utterance])
        normed = self.layer_norm_input(residual)
        rc_n, utt_n = normed[:R], normed[R:]
        summary = self._summary(utt_n)
        key, value = self.attention.emb_to_key_value(ember.cat([mems, rc_n, utt_n])).chunk(2, dim=2)
        padding = _key_padding_mask(lengths, key.shape[0], mems.shape[0] + R)
        out, next_mems = self.attention.attend(ember.cat([rc_n, utt_n, summary]), key, value,
                                               attention_mask, padding, summary.shape[0])
        out = self._feed_forward(out, residual)
        # The last segment's summary has no later segment to serve.
        return out[R:], out[:R], next_mems[:-1]

    def init_state(self, batch_size: int, device=None, dtype=None) -> list[ember.Tensor]:
        shape = (batch_size, self.input_dim)
        return [
            ember.zeros(self.max_memory_size, *shape, device=device, dtype=dtype),
            ember.zeros(self.left_context_length, *shape, device=device, dtype=dtype),
            ember.zeros(self.left_context_length, *shape, device=device, dtype=dtype),
            ember.zeros(1, batch_size, dtype=ember.int32, device=device),
        ]

    def infer(self, utterance: ember.Tensor, lengths: ember.Tensor, right_context: ember.Tensor,
              state: list[ember.Tensor] | None, mems: ember.Tensor):
        """One-segment pass: returns (utterance out, right context out, new state, next memory)."""
        if state is None:
            state = self.init_state(utterance.shape[1], utterance.device, utterance.dtype)
        R, S = right_context.shape[0], utterance.shape[0]
        # Frames seen so far (the same for every batch item; none to read in an empty batch).
        past = int(state[3][0][0].item()) if state[3].numel() else 0
        # Only the most recent rows of the fixed-size state buffers hold real history.
        n_lc = min(self.left_context_length, past)
        n_mem = min(self.max_memory_size, math.ceil(past / self.segment_length))
        pre_mems = state[0][state[0].shape[0] - n_mem:]
        lc_key = state[1][state[1].shape[0] - n_lc:]
        lc_val = state[2][state[2].shape[0] - n_lc:]

        residual = ember.cat([right_context, utterance])
        normed = self.layer_norm_input(residual)
        rc_n, utt_n = normed[:R], normed[R:]
        summary = self._summary(utt_n)[:1]
        key, value = self.attention.emb_to_key_value(ember.cat([pre_mems, rc_n, utt_n])).chunk(2, dim=2)
        split = n_mem + R
        key = ember.cat([key[:split], lc_key, key[split:]])
        value = ember.cat([value[:split], lc_val, value[split:]])
        query = ember.cat([rc_n, utt_n, summary])
        # Everything is visible except the memory to the summary query.
        attention_mask = ember.zeros(query.shape[0], key.shape[0], dtype=ember.bool,
                                     device=utterance.device)
        if summary.shape[0] > 0:
            attention_mask[-1, :n_mem] = True
        padding = _key_padding_mask(lengths, key.shape[0], split + n_lc)
        out, next_mems = self.attention.attend(query, key, value, attention_mask, padding,
                                               summary.shape[0])
        out = self._feed_forward(out, residual)

        L, M = self.left_context_length, self.max_memory_size
        new_key = ember.cat([state[1], key[split + n_lc:]])
        new_val = ember.cat([state[2], value[split + n_lc:]])
        new_mem = ember.cat([state[0], mems])
        new_state = [
            new_mem[new_mem.shape[0] - M:],
            new_key[new_key.shape[0] - L:],
            new_val[new_val.shape[0] - L:],
            state[3] + S,
        ]
        return out[R:], out[:R], new_state, next_mems


class Emformer(nn.Module):
    r"""Emformer (Shi et al., 2021), as ``torchaudio.models.Emformer``.

    Args:
        input_dim (int): input dimension.
        num_heads (int): attention heads per layer.
        ffn_dim (int): hidden dimension of each layer's feed-forward network.
        num_layers (int): number of layers.
        segment_length (int): frames per segment.
        dropout (float): dropout probability. (Default: 0.0)
        activation (str): "relu", "gelu" or "silu". (Default: "relu")
        left_context_length (int): left-context frames. (Default: 0)
        right_context_length (int): right-context (look-ahead) frames. (Default: 0)
        max_memory_size (int): memory vectors attended to. (Default: 0)
        weight_init_scale_strategy (str or None): "depthwise", "constant" or None.
            (Default: "depthwise")
        tanh_on_mem (bool): squash memory with tanh instead of clamping to [-10, 10].
            (Default: False)
        negative_inf (float): value for forbidden attention weights. (Default: -1e8)
    """

    def __init__(self, input_dim: int, num_heads: int, ffn_dim: int, num_layers: int,
                 segment_length: int, dropout: float = 0.0, activation: str = "relu",
                 left_context_length: int = 0, right_context_length: int = 0,
                 max_memory_size: int = 0, weight_init_scale_strategy: str | None = "depthwise",
                 tanh_on_mem: bool = False, negative_inf: float = -1e8):
        super().__init__()
        if segment_length <= 0:
            raise ValueError(f"segment_length must be positive, got {segment_length}")
        for name, value in (("left_context_length", left_context_length),
                            ("right_context_length", right_context_length),
                            ("max_memory_size", max_memory_size)):
            if value < 0:
                raise ValueError(f"{name} must be non-negative, got {value}")
        gains = _init_gains(weight_init_scale_strategy, num_layers)
        self.emformer_layers = nn.ModuleList([
            _EmformerLayer(input_dim, num_heads, ffn_dim, segment_length, dropout=dropout,
                           activation=activation, left_context_length=left_context_length,
                           max_memory_size=max_memory_size, weight_init_gain=gains[i],
                           tanh_on_mem=tanh_on_mem, negative_inf=negative_inf)
            for i in range(num_layers)
        ])
        self.use_mem = max_memory_size > 0
        self.memory_op = nn.AvgPool1d(kernel_size=segment_length, stride=segment_length,
                                      ceil_mode=True)
        self.input_dim = input_dim
        self.left_context_length = left_context_length
        self.right_context_length = right_context_length
        self.segment_length = segment_length
        self.max_memory_size = max_memory_size

    def _check_input(self, input: ember.Tensor) -> None:
        if not isinstance(input, ember.Tensor) or input.dim() != 3:
            got = input.dim() if isinstance(input, ember.Tensor) else type(input).__name__
            raise ValueError(f"input must be a 3-D tensor (batch, frames, {self.input_dim}), got {got} dims")
        if input.shape[2] != self.input_dim:
            raise ValueError(f"input feature dimension must be {self.input_dim}, got {input.shape[2]}")

    def _right_context(self, input: ember.Tensor, T: int) -> ember.Tensor:
        # The look-ahead block of segment i is the R frames after it; the last segment's is the
        # R padding frames at the end of ``input`` (time-major: (T + R, B, D)).
        R, S = self.right_context_length, self.segment_length
        num_segs = math.ceil(T / S)
        blocks = [input[(i + 1) * S:(i + 1) * S + R] for i in range(num_segs - 1)]
        blocks.append(input[input.shape[0] - R:])
        return ember.cat(blocks)

    def _attention_mask(self, T: int, device) -> ember.Tensor:
        # (queries, keys) bool, True = forbidden. Queries: right-context blocks, utterance frames,
        # summaries; keys: memory, right-context blocks, utterance frames.
        R, S, L, M = (self.right_context_length, self.segment_length, self.left_context_length,
                      self.max_memory_size)
        num_segs = math.ceil(T / S)
        n_mem = num_segs - 1 if self.use_mem else 0
        n_sum = num_segs if self.use_mem else 0
        n_rc = R * num_segs
        allowed = ember.zeros(n_rc + T + n_sum, n_mem + n_rc + T, dtype=ember.bool, device=device)
        for i in range(num_segs):
            seg_start, seg_end = i * S, min((i + 1) * S, T)
            rc_keys = slice(n_mem + i * R, n_mem + (i + 1) * R)
            utt_keys = slice(n_mem + n_rc + max(seg_start - L, 0), n_mem + n_rc + seg_end)
            rows = [slice(i * R, (i + 1) * R), slice(n_rc + seg_start, n_rc + seg_end)]
            for r in rows:
                if self.use_mem:
                    allowed[r, max(i - M, 0):i] = True
                allowed[r, rc_keys] = True
                allowed[r, utt_keys] = True
            if self.use_mem:
                row = n_rc + T + i
                allowed[row, rc_keys] = True
                allowed[row, utt_keys] = True
        return ~allowed

    def forward(self, input: ember.Tensor, lengths: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
        r"""Whole-utterance pass.

        Args:
            input (Tensor): (B, T + right_context_length, D), utterance frames followed by the
                right context of the last segment.
            lengths (Tensor): (B,), valid utterance frames per item (at most T).

        Returns:
            (Tensor, Tensor): output (B, T, D) and lengths (B,).
        """
        self._check_input(input)
        T = input.shape[1] - self.right_context_length
        if T <= 0:
            raise ValueError(f"input must have more than right_context_length "
                             f"({self.right_context_length}) frames, got {input.shape[1]}")
        _check_lengths(lengths, input.shape[0], T, "utterance frames")
        x = input.permute(1, 0, 2)
        right_context = self._right_context(x, T)
        utterance = x[:T]
        mask = self._attention_mask(T, input.device)
        if self.use_mem:
            mems = self.memory_op(utterance.permute(1, 2, 0)).permute(2, 0, 1)[:-1]
        else:
            mems = utterance[:0]
        output = utterance
        for layer in self.emformer_layers:
            output, right_context, mems = layer(output, lengths, right_context, mems, mask)
        return output.permute(1, 0, 2), lengths

    def infer(self, input: ember.Tensor, lengths: ember.Tensor,
              states: list[list[ember.Tensor]] | None = None):
        r"""Streaming pass over one segment.

        Args:
            input (Tensor): (B, segment_length + right_context_length, D).
            lengths (Tensor): (B,), valid frames of ``input`` per item.
            states (list of lists of Tensor or None): the states returned by the previous call.

        Returns:
            (Tensor, Tensor, List[List[Tensor]]): output (B, segment_length, D), output lengths
            (``lengths - right_context_length``, at least 0), and the states for the next call.
        """
        self._check_input(input)
        expected = self.segment_length + self.right_context_length
        if input.shape[1] != expected:
            raise ValueError(
                "Per configured segment_length and right_context_length"
                f", expected size of {expected} for dimension 1 of input"
                f", but got {input.shape[1]}.")
        _check_lengths(lengths, input.shape[0], expected, "segment plus right context frames")
        if states is not None and len(states) != len(self.emformer_layers):
            raise ValueError(f"states must hold one entry per layer ({len(self.emformer_layers)}), "
                             f"got {len(states)}")
        x = input.permute(1, 0, 2)
        split = x.shape[0] - self.right_context_length
        right_context, utterance = x[split:], x[:split]
        output_lengths = ember.clamp(lengths - self.right_context_length, min=0)
        if self.use_mem:
            mems = self.memory_op(utterance.permute(1, 2, 0)).permute(2, 0, 1)
        else:
            mems = utterance[:0]
        output = utterance
        new_states: list[list[ember.Tensor]] = []
        for i, layer in enumerate(self.emformer_layers):
            output, right_context, state, mems = layer.infer(
                output, output_lengths, right_context, None if states is None else states[i], mems)
            new_states.append(state)
        return output.permute(1, 0, 2), output_lengths, new_states
