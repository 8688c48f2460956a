"""Conformer (Gulati et al., 2020), as torchaudio.models.Conformer.

Each layer is a macaron block: half-step feed-forward, multi-head self-attention, convolution
module (pointwise conv, GLU, depthwise conv, batch/group norm, SiLU, pointwise conv), a second
half-step feed-forward and a final layer norm. Module names follow torchaudio, so its state
dicts load unchanged.
"""

from __future__ import annotations

import ember
from ember import nn

from ._utils import _check_lengths

__all__ = ["Conformer"]

# Note [padded frames in the convolution]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# torchaudio masks padded frames only as attention keys, so its depthwise convolution reads the
# (nonzero) padded frames next to the last valid ones: a padded batch item's outputs differ from
# the same utterance run alone. Here padded frames are zeroed before the depthwise convolution,
# which is what its 'same' zero padding sees for an unpadded utterance, so valid outputs never
# depend on padding. Unpadded inputs give torchaudio's numbers. (BatchNorm in training mode still
# pools statistics over all frames, as torchaudio does.)


class _ConvolutionModule(nn.Module):
    """Layer norm, pointwise conv + GLU, depthwise conv, norm, SiLU, pointwise conv, dropout."""

    def __init__(self, input_dim: int, num_channels: int, depthwise_kernel_size: int,
                 dropout: float = 0.0, bias: bool = False, use_group_norm: bool = False) -> None:
        super().__init__()
        if (depthwise_kernel_size - 1) % 2 != 0:
            raise ValueError("depthwise_kernel_size must be odd to achieve 'SAME' padding.")
        self.layer_norm = nn.LayerNorm(input_dim)
        self.sequential = nn.Sequential(
            nn.Conv1d(input_dim, 2 * num_channels, 1, stride=1, padding=0, bias=bias),
            nn.GLU(dim=1),
            nn.Conv1d(num_channels, num_channels, depthwise_kernel_size, stride=1,
                      padding=(depthwise_kernel_size - 1) // 2, groups=num_channels, bias=bias),
            nn.GroupNorm(num_groups=1, num_channels=num_channels) if use_group_norm
            else nn.BatchNorm1d(num_channels),
            nn.SiLU(),
            nn.Conv1d(num_channels, input_dim, kernel_size=1, stride=1, padding=0, bias=bias),
            nn.Dropout(dropout),
        )

    def forward(self, input: ember.Tensor, valid: ember.Tensor | None = None) -> ember.Tensor:
        """input (B, T, D); valid (B, 1, T) float, 1 on valid frames, or None."""
        x = self.layer_norm(input).transpose(1, 2)
        x = self.sequential[1](self.sequential[0](x))
        if valid is not None:  # Note [padded frames in the convolution]
            x = x * valid
        for module in list(self.sequential)[2:]:
            x = module(x)
        return x.transpose(1, 2)


class _FeedForwardModule(nn.Module):
    """Layer norm, linear, SiLU, dropout, linear, dropout."""

    def __init__(self, input_dim: int, hidden_dim: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.sequential = nn.Sequential(
            nn.LayerNorm(input_dim),
            nn.Linear(input_dim, hidden_dim, bias=True),
            nn.SiLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden_dim, input_dim, bias=True),
            nn.Dropout(dropout),
        )

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        return self.sequential(input)


class ConformerLayer(nn.Module):
    r"""One Conformer layer (time-major input (T, B, D)), as ``torchaudio.models.ConformerLayer``.

    Args:
        input_dim (int): input dimension.
        ffn_dim (int): feed-forward hidden dimension.
        num_attention_heads (int): attention heads.
        depthwise_conv_kernel_size (int): odd kernel size of the depthwise convolution.
        dropout (float): dropout probability. (Default: 0.0)
        use_group_norm (bool): GroupNorm instead of BatchNorm1d in the convolution module.
            (Default: False)
        convolution_first (bool): convolution module before attention. (Default: False)
    """

    def __init__(self, input_dim: int, ffn_dim: int, num_attention_heads: int,
                 depthwise_conv_kernel_size: int, dropout: float = 0.0,
                 use_group_norm: bool = False, convolution_first: bool = False) -> None:
        super().__init__()
        self.ffn1 = _FeedForwardModule(input_dim, ffn_dim, dropout=dropout)
        self.self_attn_layer_norm = nn.LayerNorm(input_dim)
        self.self_attn = nn.MultiheadAttention(input_dim, num_attention_heads, dropout=dropout)
        self.self_attn_dropout = nn.Dropout(dropout)
        self.conv_module = _ConvolutionModule(input_dim=input_dim, num_channels=input_dim,
                                              depthwise_kernel_size=depthwise_conv_kernel_size,
                                              dropout=dropout, bias=True,
                                              use_group_norm=use_group_norm)
        self.ffn2 = _FeedForwardModule(input_dim, ffn_dim, dropout=dropout)
        self.final_layer_norm = nn.LayerNorm(input_dim)
        self.convolution_first = convolution_first

    def _convolution(self, x: ember.Tensor, key_padding_mask: ember.Tensor | None) -> ember.Tensor:
        valid = None
        if key_padding_mask is not None:
            valid = (~key_padding_mask).to(x.dtype).unsqueeze(1)
        return x + self.conv_module(x.transpose(0, 1), valid).transpose(0, 1)

    def forward(self, input: ember.Tensor, key_padding_mask: ember.Tensor | None) -> ember.Tensor:
        """input (T, B, D); key_padding_mask (B, T) bool, True on padded frames, or None."""
        x = self.ffn1(input) * 0.5 + input
        if self.convolution_first:
            x = self._convolution(x, key_padding_mask)
        residual = x
        y = self.self_attn_layer_norm(x)
        y, _ = self.self_attn(query=y, key=y, value=y, key_padding_mask=key_padding_mask,
                              need_weights=False)
        x = self.self_attn_dropout(y) + residual
        if not self.convolution_first:
            x = self._convolution(x, key_padding_mask)
        x = self.ffn2(x) * 0.5 + x
        return self.final_layer_norm(x)


class Conformer(nn.Module):
    r"""Conformer encoder, as ``torchaudio.models.Conformer``.

    Args:
        input_dim (int): input dimension.
        num_heads (int): attention heads per layer.
        ffn_dim (int): feed-forward hidden dimension.
        num_layers (int): number of layers.
        depthwise_conv_kernel_size (int): odd kernel size of each depthwise convolution.
        dropout (float): dropout probability. (Default: 0.0)
        use_group_norm (bool): GroupNorm instead of BatchNorm1d. (Default: False)
        convolution_first (bool): convolution module before attention. (Default: False)
    """

    def __init__(self, input_dim: int, num_heads: int, ffn_dim: int, num_layers: int,
                 depthwise_conv_kernel_size: int, dropout: float = 0.0,
                 use_group_norm: bool = False, convolution_first: bool = False):
        super().__init__()
        if input_dim % num_heads != 0:
            raise ValueError(f"input_dim ({input_dim}) must be divisible by num_heads ({num_heads})")
        self.input_dim = input_dim
        self.conformer_layers = nn.ModuleList([
            ConformerLayer(input_dim, ffn_dim, num_heads, depthwise_conv_kernel_size,
                           dropout=dropout, use_group_norm=use_group_norm,
                           convolution_first=convolution_first)
            for _ in range(num_layers)
        ])

    def forward(self, input: ember.Tensor, lengths: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
        r"""
        Args:
            input (Tensor): (B, T, input_dim).
            lengths (Tensor): (B,), valid frames per item, in [1, T].

        Returns:
            (Tensor, Tensor): output (B, T, input_dim) and lengths.
        """
        if not isinstance(input, ember.Tensor) or input.dim() != 3 or input.shape[2] != self.input_dim:
            got = tuple(input.shape) if isinstance(input, ember.Tensor) else type(input).__name__
            raise ValueError(f"input must have shape (batch, frames, {self.input_dim}), got {got}")
        T = input.shape[1]
        _check_lengths(lengths, input.shape[0], T, "input frames")
        if input.shape[0] and int(lengths.min().item()) < 1:
            # A frame with no valid key to attend to has no defined output.
            raise ValueError(f"lengths must be at least 1, got {lengths.tolist()}")
        if input.shape[0] == 0:
            # An empty batch has an empty output; ember's MultiheadAttention cannot reshape it.
            return input.clone(), lengths
        padding_mask = ember.arange(T, device=input.device).unsqueeze(0) >= lengths.unsqueeze(1)
        x = input.transpose(0, 1)
        for layer in self.conformer_layers:
            x = layer(x, padding_mask)
        return x.transpose(0, 1), lengths
