"""Building blocks of Wav2Vec2 / HuBERT (torchaudio.models.wav2vec2.components): the
convolutional feature extractor, the feature projection, the convolutional positional embedding,
the transformer encoder, and HuBERT's pre-training mask and logit generators.

Module and parameter names follow torchaudio, so its state dicts load unchanged.
"""

from __future__ import annotations

import ember
from ember import nn

# Note [padding in the feature extractor]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# In "group_norm" mode the first convolution block normalizes each channel over time. torchaudio
# takes those statistics over every frame, padding included, so a padded batch item gets other
# features than the same audio alone. Given ``lengths``, the statistics here are taken over the
# valid frames only; without ``lengths`` (or unpadded) the numbers are torchaudio's. The
# convolutions themselves never mix padding into valid frames (each valid output frame's window
# lies inside the valid input), and the encoder zeroes padded frames and masks them as keys.


class LayerNorm(nn.LayerNorm):
    """Layer norm over the channel axis of a (batch, channel, frame) tensor."""

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        x = input.transpose(-2, -1)
        x = nn.functional.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.transpose(-2, -1)


class ConvLayerBlock(nn.Module):
    """Conv1d, optional normalization, GELU; tracks the valid lengths."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int,
                 bias: bool, layer_norm: nn.Module | None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride
        self.layer_norm = layer_norm
        self.conv = nn.Conv1d(in_channels=in_channels, out_channels=out_channels,
                              kernel_size=kernel_size, stride=stride, bias=bias)

    def _masked_group_norm(self, x: ember.Tensor, length: ember.Tensor) -> ember.Tensor:
        # GroupNorm with one channel per group, statistics over the valid frames only.
        norm = self.layer_norm
        valid = (ember.arange(x.shape[2], device=x.device).unsqueeze(0)
                 < length.unsqueeze(1)).to(x.dtype).unsqueeze(1)  # (B, 1, T)
        count = valid.sum(dim=2, keepdim=True).clamp(min=1)
        mean = (x * valid).sum(dim=2, keepdim=True) / count
        var = (((x - mean) * valid) ** 2).sum(dim=2, keepdim=True) / count
        y = (x - mean) / ember.sqrt(var + norm.eps)
        if norm.affine:
            y = y * norm.weight.view(1, -1, 1) + norm.bias.view(1, -1, 1)
        return y

    def forward(self, x: ember.Tensor, length: ember.Tensor | None):
        """x (B, C_in, T_in) -> (B, C_out, T_out); length (B,) or None."""
        x = self.conv(x)
        if length is not None:
            length = ember.div(length - self.kernel_size, self.stride, rounding_mode="floor") + 1
            length = ember.clamp(length, min=0)  # inputs shorter than the kernel
        if self.layer_norm is not None:
            if (isinstance(self.layer_norm, nn.GroupNorm) and length is not None
                    and self.layer_norm.num_groups == self.layer_norm.num_channels):
                x = self._masked_group_norm(x, length)  # Note [padding in the feature extractor]
            else:
                x = self.layer_norm(x)
        return nn.functional.gelu(x), length


class FeatureExtractor(nn.Module):
    """Stack of ConvLayerBlocks: waveforms (B, T) -> features (B, frames, channels)."""

    def __init__(self, conv_layers: nn.ModuleList):
        super().__init__()
        self.conv_layers = conv_layers

    def forward(self, x: ember.Tensor, length: ember.Tensor | None):
        if x.ndim != 2:
            raise ValueError(f"Expected the input Tensor to be 2D (batch, time). Found: {list(x.shape)}")
        x = x.unsqueeze(1)
        for layer in self.conv_layers:
            x, length = layer(x, length)
        return x.transpose(1, 2), length


class FeatureProjection(nn.Module):
    """Layer norm, linear projection to the encoder dimension, dropout."""

    def __init__(self, in_features: int, out_features: int, dropout: float):
        super().__init__()
        self.layer_norm = nn.LayerNorm(in_features)
        self.projection = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.dropout(self.projection(self.layer_norm(x)))


def _legacy_weight_norm_keys(module, state_dict, prefix, *args) -> None:
    # Checkpoints saved with torch.nn.utils.weight_norm (fairseq, older torchaudio) name the
    # magnitude and direction conv.weight_g / conv.weight_v; the parametrization calls them
    # original0 / original1. (torch's weight_norm renames them itself; ember's does not.)
    for old, new in (("weight_g", "original0"), ("weight_v", "original1")):
        key = f"{prefix}conv.{old}"
        if key in state_dict:
            state_dict[f"{prefix}conv.parametrizations.weight.{new}"] = state_dict.pop(key)


class ConvolutionalPositionalEmbedding(nn.Module):
    """Grouped, weight-normalized 'same' convolution over time, then GELU."""

    def __init__(self, embed_dim: int, kernel_size: int, groups: int):
        super().__init__()
        self.embed_dim = embed_dim
        self.kernel_size = kernel_size
        conv = nn.Conv1d(in_channels=embed_dim, out_channels=embed_dim, kernel_size=kernel_size,
                         padding=kernel_size // 2, groups=groups)
        self.conv = nn.utils.parametrizations.weight_norm(conv, name="weight", dim=2)
        # An even kernel with padding k // 2 yields one frame too many.
        self.num_remove: int = 1 if kernel_size % 2 == 0 else 0
        self.register_load_state_dict_pre_hook(_legacy_weight_norm_keys)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.conv(x.transpose(-2, -1))
        if self.num_remove > 0:
            x = x[..., :x.shape[-1] - self.num_remove]
        return nn.functional.gelu(x).transpose(-2, -1)


class SelfAttention(nn.Module):
    """Multi-head self attention with separate q/k/v projections."""

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0):
        super().__init__()
        head_dim = embed_dim // num_heads
        if head_dim * num_heads != embed_dim:
            raise ValueError(f"`embed_dim ({embed_dim})` is not divisible by `num_heads ({num_heads})`")
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.head_dim = head_dim
        self.scaling = head_dim ** -0.5
        self.k_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.v_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=True)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=True)

    def forward(self, x: ember.Tensor, attention_mask: ember.Tensor | None = None,
                position_bias: ember.Tensor | None = None,
                key_padding_mask: ember.Tensor | None = None):
        """x (B, L, D); attention_mask additive (B, 1, L, L) or None. Returns (output, None)."""
        if x.ndim != 3 or x.shape[2] != self.embed_dim:
            raise ValueError(f"The expected input shape is (batch, sequence, embed_dim=={self.embed_dim}). "
                             f"Found {tuple(x.shape)}.")
        B, L, _ = x.shape
        if attention_mask is not None and tuple(attention_mask.shape) != (B, 1, L, L):
            raise ValueError(f"The expected attention mask shape is {(B, 1, L, L)}. "
                             f"Found {tuple(attention_mask.shape)}.")
        shape = (B, L, self.num_heads, self.head_dim)
        q = self.q_proj(x).reshape(shape).transpose(2, 1)
        k = self.k_proj(x).reshape(shape).transpose(2, 1)
        v = self.v_proj(x).reshape(shape).transpose(2, 1)
        out = nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=attention_mask, dropout_p=self.dropout if self.training else 0.0,
            is_causal=False)
        out = out.transpose(1, 2).reshape(B, L, self.embed_dim)
        return self.out_proj(out), None


class FeedForward(nn.Module):
    """Linear, GELU, dropout, linear, dropout."""

    def __init__(self, io_features: int, intermediate_features: int, intermediate_dropout: float,
                 output_dropout: float):
        super().__init__()
        self.intermediate_dense = nn.Linear(io_features, intermediate_features)
        self.intermediate_dropout = nn.Dropout(intermediate_dropout)
        self.output_dense = nn.Linear(intermediate_features, io_features)
        self.output_dropout = nn.Dropout(output_dropout)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.intermediate_dropout(nn.functional.gelu(self.intermediate_dense(x)))
        return self.output_dropout(self.output_dense(x))


class EncoderLayer(nn.Module):
    """Self attention and feed-forward, with pre- or post-layer-norm."""

    def __init__(self, attention: nn.Module, dropout: float, layer_norm_first: bool,
                 feed_forward: nn.Module):
        super().__init__()
        self.attention = attention
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(attention.embed_dim)
        self.layer_norm_first = layer_norm_first
        self.feed_forward = feed_forward
        self.final_layer_norm = nn.LayerNorm(attention.embed_dim)

    def forward(self, x: ember.Tensor, attention_mask: ember.Tensor | None = None,
                position_bias: ember.Tensor | None = None,
                key_padding_mask: ember.Tensor | None = None):
        residual = x
        if self.layer_norm_first:
            x = self.layer_norm(x)
        x, position_bias = self.attention(x, attention_mask=attention_mask,
                                          position_bias=position_bias,
                                          key_padding_mask=key_padding_mask)
        x = residual + self.dropout(x)
        if self.layer_norm_first:
            x = x + self.feed_forward(self.final_layer_norm(x))
        else:
            x = self.layer_norm(x)
            x = self.final_layer_norm(x + self.feed_forward(x))
        return x, position_bias


class Transformer(nn.Module):
    """Positional convolution, (layer norm,) dropout and the encoder layers, with layer drop."""

    def __init__(self, pos_conv_embed: nn.Module, dropout: float, layers: nn.Module,
                 layer_norm_first: bool, layer_drop: float):
        super().__init__()
        self.pos_conv_embed = pos_conv_embed
        self.layer_norm = nn.LayerNorm(pos_conv_embed.embed_dim)
        self.layer_norm_first = layer_norm_first
        self.layer_drop = layer_drop
        self.dropout = nn.Dropout(dropout)
        self.layers = layers

    def _preprocess(self, x: ember.Tensor) -> ember.Tensor:
        x = x + self.pos_conv_embed(x)
        if self.layer_norm_first:
            x = self.layer_norm(x)
        return self.dropout(x)

    def forward(self, x: ember.Tensor, attention_mask: ember.Tensor | None = None,
                position_bias: ember.Tensor | None = None) -> ember.Tensor:
        x = self._preprocess(x)
        for layer in self.layers:
            # Layer drop: skip the whole layer with probability layer_drop while training.
            if not (self.training and self.layer_drop > 0 and ember.rand(1).item() <= self.layer_drop):
                x, position_bias = layer(x, attention_mask, position_bias=position_bias)
        if not self.layer_norm_first:
            x = self.layer_norm(x)
        return x

    def get_intermediate_outputs(self, x: ember.Tensor, attention_mask: ember.Tensor | None = None,
                                 num_layers: int | None = None) -> list[ember.Tensor]:
        if num_layers is not None and not 0 < num_layers <= len(self.layers):
            raise ValueError(f"`num_layers` must be between [1, {len(self.layers)}]")
        outputs: list[ember.Tensor] = []
        position_bias = None
        x = self._preprocess(x)
        for layer in self.layers:
            x, position_bias = layer(x, attention_mask, position_bias=position_bias)
            outputs.append(x)
            if num_layers is not None and len(outputs) >= num_layers:
                break
        return outputs


class Encoder(nn.Module):
    """Feature projection followed by the transformer."""

    def __init__(self, feature_projection: nn.Module, transformer: nn.Module):
        super().__init__()
        self.feature_projection = feature_projection
        self.transformer = transformer

    def _preprocess(self, features: ember.Tensor, lengths: ember.Tensor | None = None):
        x = self.feature_projection(features)
        mask = None
        if lengths is not None:
            B, T, _ = x.shape
            padded = ember.arange(T, device=x.device).unsqueeze(0) >= lengths.unsqueeze(1)
            x = x.masked_fill(padded.unsqueeze(-1), 0.0)
            # Additive mask: a large negative weight on padded keys (as torchaudio).
            mask = (-10000.0 * padded.to(x.dtype))[:, None, None, :].expand(B, 1, T, T)
        return x, mask

    def forward(self, features: ember.Tensor, lengths: ember.Tensor | None = None) -> ember.Tensor:
        x, mask = self._preprocess(features, lengths)
        return self.transformer(x, attention_mask=mask)

    def extract_features(self, features: ember.Tensor, lengths: ember.Tensor | None = None,
                         num_layers: int | None = None) -> list[ember.Tensor]:
        x, mask = self._preprocess(features, lengths)
        return self.transformer.get_intermediate_outputs(x, attention_mask=mask, num_layers=num_layers)


def _get_feature_extractor(norm_mode: str, shapes: list[tuple[int, int, int]],
                           bias: bool) -> FeatureExtractor:
    """Conv blocks ``[(out_channels, kernel_size, stride), ...]``; "group_norm" normalizes the
    first block per channel over time, "layer_norm" every block per frame."""
    if norm_mode not in ("group_norm", "layer_norm"):
        raise ValueError("Invalid norm mode")
    blocks = []
    in_channels = 1
    for i, (out_channels, kernel_size, stride) in enumerate(shapes):
        normalization = None
        if norm_mode == "group_norm" and i == 0:
            normalization = nn.GroupNorm(num_groups=out_channels, num_channels=out_channels, affine=True)
        elif norm_mode == "layer_norm":
            normalization = LayerNorm(normalized_shape=out_channels, elementwise_affine=True)
        blocks.append(ConvLayerBlock(in_channels, out_channels, kernel_size, stride, bias,
                                     normalization))
        in_channels = out_channels
    return FeatureExtractor(nn.ModuleList(blocks))


def _get_encoder(in_features: int, embed_dim: int, dropout_input: float, pos_conv_kernel: int,
                 pos_conv_groups: int, num_layers: int, num_heads: int, attention_dropout: float,
                 ff_interm_features: int, ff_interm_dropout: float, dropout: float,
                 layer_norm_first: bool, layer_drop: float) -> Encoder:
    feature_projection = FeatureProjection(in_features, embed_dim, dropout_input)
    pos_conv = ConvolutionalPositionalEmbedding(embed_dim, pos_conv_kernel, pos_conv_groups)
    layers = nn.ModuleList()
    for _ in range(num_layers):
        attention = SelfAttention(embed_dim, num_heads, attention_dropout)
        feed_forward = FeedForward(embed_dim, ff_interm_features, ff_interm_dropout, dropout)
        layers.append(EncoderLayer(attention, dropout, layer_norm_first, feed_forward))
    # The transformer's own layer norm goes first exactly when the layers' norms go last.
    transformer = Transformer(pos_conv, dropout, layers, not layer_norm_first, layer_drop)
    return Encoder(feature_projection, transformer)


def _get_wavlm_encoder(in_features: int, embed_dim: int, dropout_input: float,
                       pos_conv_kernel: int, pos_conv_groups: int, num_layers: int,
                       num_heads: int, num_buckets: int, max_distance: int,
                       attention_dropout: float, ff_interm_features: int,
                       ff_interm_dropout: float, dropout: float, layer_norm_first: bool,
                       layer_drop: float) -> Encoder:
    """The Wav2Vec2 encoder with WavLM attention (relative position bias owned by layer 0)."""
    from .wavlm_attention import WavLMSelfAttention

    feature_projection = FeatureProjection(in_features, embed_dim, dropout_input)
    pos_conv = ConvolutionalPositionalEmbedding(embed_dim, pos_conv_kernel, pos_conv_groups)
    layers = nn.ModuleList()
    for i in range(num_layers):
        attention = WavLMSelfAttention(embed_dim=embed_dim, num_heads=num_heads,
                                       num_buckets=num_buckets, max_distance=max_distance,
                                       dropout=attention_dropout,
                                       has_relative_attention_bias=(i == 0))
        feed_forward = FeedForward(embed_dim, ff_interm_features, ff_interm_dropout, dropout)
        layers.append(EncoderLayer(attention, dropout, layer_norm_first, feed_forward))
    transformer = Transformer(pos_conv, dropout, layers, not layer_norm_first, layer_drop)
    return Encoder(feature_projection, transformer)


# ------------------------------------------------------------------------ HuBERT pre-training


def _span_lengths(n: int, mask_type: str, mask_length: int, mask_other: float) -> list[int]:
    if mask_type == "static":
        return [mask_length] * n
    if mask_type == "uniform":
        return ember.randint(int(mask_other), mask_length * 2 + 1, (n,)).tolist()
    if mask_type == "normal":
        draws = ember.normal(float(mask_length), float(mask_other), size=(n,))
        return [max(1, int(round(v))) for v in draws.tolist()]
    raise ValueError(f"unknown mask selection: {mask_type}")


def _compute_mask_indices(shape: tuple[int, int], padding_mask: ember.Tensor | None,
                          mask_prob: float, mask_length: int, mask_type: str = "static",
                          mask_other: float = 0.0, min_masks: int = 0, no_overlap: bool = False,
                          min_space: int = 0) -> ember.Tensor:
    """Random spans to mask, (batch, frame) bool; every row gets the same number of masked frames.

    About ``mask_prob * frames / mask_length`` spans start per row (rounded at random, at least
    ``min_masks``); spans never reach into padding. With ``no_overlap`` spans are placed one by
    one into the free gaps, keeping ``min_space`` frames between them.
    """
    batch_size, frame = shape
    rows: list[list[int]] = []
    for i in range(batch_size):
        sz = frame
        if padding_mask is not None:
            sz = frame - int(padding_mask[i].long().sum().item())
        num_mask = max(min_masks, int(mask_prob * sz / float(mask_length) + ember.rand(1).item()))
        lengths = _span_lengths(num_mask, mask_type, mask_length, mask_other)
        if lengths and sum(lengths) == 0:
            lengths[0] = min(mask_length, sz - 1)
        chosen: list[int] = []
        if not lengths or sz <= 0:
            pass
        elif no_overlap:
            parts = [(0, sz)]
            min_length = min(lengths)
            for length in sorted(lengths, reverse=True):
                room = [e - s if e - s >= length + min_space else 0 for s, e in parts]
                if sum(room) == 0:
                    break
                c = int(ember.multinomial(ember.tensor(room, dtype=ember.float64), 1).item())
                s, e = parts.pop(c)
                start = s + int(ember.randint(0, e - length - s, (1,)).item()) if e - length > s else s
                chosen.extend(range(start, start + length))
                if start - s - min_space >= min_length:
                    parts.append((s, start - min_space + 1))
                if e - start - min_length - min_space > min_length:
                    parts.append((start + length + min_space, e))
        else:
            min_len = min(lengths)
            if sz - min_len <= num_mask:
                min_len = sz - num_mask - 1
            starts = ember.randperm(max(sz - min_len, 0))[:num_mask].tolist()
            chosen = [s + o for s, length in zip(starts, lengths, strict=False) for o in range(length)]
        rows.append(sorted({c for c in chosen if 0 <= c < sz}))
    keep = min(len(r) for r in rows) if rows else 0
    mask = ember.zeros(batch_size, frame, dtype=ember.bool)
    for i, r in enumerate(rows):
        if len(r) > keep:  # equalize the count across the batch
            r = [r[j] for j in ember.randperm(len(r))[:keep].tolist()]
        if r:
            mask[i, ember.tensor(r)] = True
    return mask


def _get_padding_mask(input: ember.Tensor, lengths: ember.Tensor) -> ember.Tensor:
    B, T, _ = input.shape
    return ember.arange(T, device=lengths.device).unsqueeze(0) >= lengths.unsqueeze(1)


class MaskGenerator(nn.Module):
    """Replaces random time spans by a learned embedding (and random channels by 0)."""

    def __init__(self, encoder_embed_dim: int, mask_prob: float, mask_selection: str,
                 mask_other: float, mask_length: int, no_mask_overlap: bool, mask_min_space: int,
                 mask_channel_prob: float, mask_channel_selection: str, mask_channel_other: float,
                 mask_channel_length: int, no_mask_channel_overlap: bool,
                 mask_channel_min_space: int):
        super().__init__()
        for name, value in (("mask_selection", mask_selection),
                            ("mask_channel_selection", mask_channel_selection)):
            if value not in ("static", "uniform", "normal"):
                raise ValueError(f"{name} must be 'static', 'uniform' or 'normal', got {value!r}")
        self.mask_prob = mask_prob
        self.mask_selection = mask_selection
        self.mask_other = mask_other
        self.mask_length = mask_length
        self.no_mask_overlap = no_mask_overlap
        self.mask_min_space = mask_min_space
        self.mask_channel_prob = mask_channel_prob
        self.mask_channel_selection = mask_channel_selection
        self.mask_channel_other = mask_channel_other
        self.mask_channel_length = mask_channel_length
        self.no_mask_channel_overlap = no_mask_channel_overlap
        self.mask_channel_min_space = mask_channel_min_space
        self.mask_embedding = nn.Parameter(ember.empty(encoder_embed_dim))
        nn.init.uniform_(self.mask_embedding)

    def forward(self, x: ember.Tensor, padding_mask: ember.Tensor | None):
        """x (B, T, C). Returns (masked x, mask indices (B, T) bool or None)."""
        B, T, C = x.shape
        mask_indices = None
        if self.mask_prob > 0:
            mask_indices = _compute_mask_indices(
                (B, T), padding_mask, self.mask_prob, self.mask_length, self.mask_selection,
                self.mask_other, min_masks=2, no_overlap=self.no_mask_overlap,
                min_space=self.mask_min_space).to(x.device)
            x = ember.where(mask_indices.unsqueeze(-1), self.mask_embedding.to(x.dtype), x)
        if self.mask_channel_prob > 0:
            channels = _compute_mask_indices(
                (B, C), None, self.mask_channel_prob, self.mask_channel_length,
                self.mask_channel_selection, self.mask_channel_other,
                no_overlap=self.no_mask_channel_overlap,
                min_space=self.mask_channel_min_space).to(x.device)
            x = x.masked_fill(channels.unsqueeze(1), 0.0)
        return x, mask_indices


def _compute_logits(proj_x: ember.Tensor, target: ember.Tensor,
                    label_embeddings: ember.Tensor) -> ember.Tensor:
    """Cosine similarities / 0.1 of each frame to its target's embedding (column 0) and to every
    label embedding (columns 1..); a label equal to the target is excluded (-inf)."""
    logit_temp = 0.1
    pos = label_embeddings.index_select(0, target.long())  # (N, F)
    negs = label_embeddings.unsqueeze(1).expand(-1, proj_x.shape[0], -1)  # (C, N, F)
    neg_is_pos = (pos.unsqueeze(0) == negs).all(-1)  # (C, N)
    targets = ember.cat([pos.unsqueeze(0), negs], dim=0)  # (C + 1, N, F)
    logits = nn.functional.cosine_similarity(proj_x.unsqueeze(0), targets, dim=-1) / logit_temp
    blocked = ember.cat([ember.zeros(1, proj_x.shape[0], dtype=ember.bool, device=proj_x.device),
                         neg_is_pos])
    logits = logits.masked_fill(blocked, float("-inf"))
    return logits.transpose(0, 1)  # (N, C + 1)


class LogitGenerator(nn.Module):
    """Projects the transformer output and scores it against learned label embeddings."""

    def __init__(self, encoder_embed_dim: int, num_classes: int, final_dim: int,
                 skip_masked: bool, skip_nomask: bool):
        super().__init__()
        self.label_embeddings = nn.Parameter(ember.empty(num_classes, final_dim))
        nn.init.uniform_(self.label_embeddings)
        self.final_proj = nn.Linear(encoder_embed_dim, final_dim)
        self.skip_masked = skip_masked
        self.skip_nomask = skip_nomask

    def forward(self, x: ember.Tensor, label: ember.Tensor, mask_m: ember.Tensor,
                mask_u: ember.Tensor):
        proj_x = self.final_proj(x)
        logit_m = None if self.skip_masked else _compute_logits(
            proj_x[mask_m], label[mask_m], self.label_embeddings)
        logit_u = None if self.skip_nomask else _compute_logits(
            proj_x[mask_u], label[mask_u], self.label_embeddings)
        return logit_m, logit_u


class GradMultiply(ember.autograd.Function):
    """Identity forward; scales the gradient by ``scale`` backward."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None
