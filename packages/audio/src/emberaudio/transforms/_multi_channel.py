"""Beamforming modules (torchaudio.transforms): PSD, SoudenMVDR and RTFMVDR over
emberaudio.functional's beamforming functions. They hold no state."""

from __future__ import annotations

import ember
from ember import nn

from .. import functional as AF

__all__ = ["PSD", "RTFMVDR", "SoudenMVDR"]


class PSD(nn.Module):
    """Cross-channel PSD matrices (…, F, C, C) of a (…, C, F, T) STFT, optionally time-masked.

    ``multi_mask``: the mask is per channel (…, C, F, T) and averaged over channels first.
    """

    def __init__(self, multi_mask: bool = False, normalize: bool = True, eps: float = 1e-15) -> None:
        super().__init__()
        self.multi_mask = multi_mask
        self.normalize = normalize
        self.eps = eps

    def forward(self, specgram: ember.Tensor, mask: ember.Tensor | None = None) -> ember.Tensor:
        if mask is not None and self.multi_mask:
            if mask.dim() < 3:
                raise ValueError(f"PSD: with multi_mask, expected mask (..., channel, freq, time), but got shape "
                                 f"{tuple(mask.shape)}")
            mask = mask.mean(dim=-3)
        return AF.psd(specgram, mask, self.normalize, self.eps)


class SoudenMVDR(nn.Module):
    """MVDR beamforming with Souden's weights: (…, C, F, T) → (…, F, T)."""

    def forward(self, specgram: ember.Tensor, psd_s: ember.Tensor, psd_n: ember.Tensor, reference_channel,
                diagonal_loading: bool = True, diag_eps: float = 1e-7, eps: float = 1e-8) -> ember.Tensor:
        w = AF.mvdr_weights_souden(psd_s, psd_n, reference_channel, diagonal_loading, diag_eps, eps)
        return AF.apply_beamforming(w, specgram)


class RTFMVDR(nn.Module):
    """MVDR beamforming from a relative transfer function: (…, C, F, T) → (…, F, T)."""

    def forward(self, specgram: ember.Tensor, rtf: ember.Tensor, psd_n: ember.Tensor, reference_channel,
                diagonal_loading: bool = True, diag_eps: float = 1e-7, eps: float = 1e-8) -> ember.Tensor:
        w = AF.mvdr_weights_rtf(rtf, psd_n, reference_channel, diagonal_loading, diag_eps, eps)
        return AF.apply_beamforming(w, specgram)
