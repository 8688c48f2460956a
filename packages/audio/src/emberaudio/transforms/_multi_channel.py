"""Beamforming modules (torchaudio.transforms): PSD, the mask-driven MVDR (with its online PSD
recursion), SoudenMVDR and RTFMVDR over emberaudio.functional's beamforming functions."""

from __future__ import annotations

import warnings

import ember
from ember import nn

from .. import functional as AF

__all__ = ["MVDR", "PSD", "RTFMVDR", "SoudenMVDR"]


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


_MVDR_SOLUTIONS = ("ref_channel", "stv_evd", "stv_power")


def _mvdr_vector(psd_s: ember.Tensor, psd_n: ember.Tensor, reference: ember.Tensor, solution: str,
                 diagonal_loading: bool, diag_eps: float, eps: float = 1e-8) -> ember.Tensor:
    """MVDR weights (…, F, C): Souden's for "ref_channel", else the RTF form with the steering vector from
    the top eigenvector of Φs ("stv_evd") or power iteration ("stv_power")."""
    if solution == "ref_channel":
        return AF.mvdr_weights_souden(psd_s, psd_n, reference, diagonal_loading, diag_eps, eps)
    if solution == "stv_evd":
        stv = AF.rtf_evd(psd_s)
    else:
        stv = AF.rtf_power(psd_s, psd_n, reference, diagonal_loading=diagonal_loading, diag_eps=diag_eps)
    return AF.mvdr_weights_rtf(stv, psd_n, reference, diagonal_loading, diag_eps, eps)


class MVDR(nn.Module):
    """MVDR beamforming driven by time-frequency masks of speech and noise: (…, C, F, T) → (…, F, T).

    Computed in complex128 and returned in the input's dtype. With ``online``, the PSD matrices are running
    mask-weighted averages over every call so far (buffers ``psd_s``, ``psd_n``, ``mask_sum_s``, ``mask_sum_n``).
    """

    def __init__(self, ref_channel: int = 0, solution: str = "ref_channel", multi_mask: bool = False,
                 diag_loading: bool = True, diag_eps: float = 1e-7, online: bool = False) -> None:
        super().__init__()
        if solution not in _MVDR_SOLUTIONS:
            raise ValueError(f'`solution` must be one of ["ref_channel", "stv_evd", "stv_power"]. Given {solution}')
        self.ref_channel = ref_channel
        self.solution = solution
        self.multi_mask = multi_mask
        self.diag_loading = diag_loading
        self.diag_eps = diag_eps
        self.online = online
        self.psd = PSD(multi_mask)
        # placeholders until the first online call (1-D means "no history yet")
        for name in ("psd_s", "psd_n", "mask_sum_s", "mask_sum_n"):
            self.register_buffer(name, ember.zeros(1))

    def _online_update(self, psd_s: ember.Tensor, psd_n: ember.Tensor, mask_s: ember.Tensor,
                       mask_n: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
        if self.multi_mask:
            mask_s = mask_s.mean(dim=-3)
            mask_n = mask_n.mean(dim=-3)
        sum_s = mask_s.sum(dim=-1)
        sum_n = mask_n.sum(dim=-1)
        if self.psd_s.dim() != 1:
            # Φ ← (M_old Φ_old + Φ_new) / (M_old + m_new), Φ_new already normalised by its own mask sum
            total_s = self.mask_sum_s + sum_s
            total_n = self.mask_sum_n + sum_n
            psd_s = self.psd_s * (self.mask_sum_s / total_s)[..., None, None] + psd_s * (1 / total_s)[..., None, None]
            psd_n = self.psd_n * (self.mask_sum_n / total_n)[..., None, None] + psd_n * (1 / total_n)[..., None, None]
            sum_s, sum_n = total_s, total_n
        self.psd_s, self.psd_n = psd_s, psd_n
        self.mask_sum_s, self.mask_sum_n = sum_s, sum_n
        return psd_s, psd_n

    def forward(self, specgram: ember.Tensor, mask_s: ember.Tensor, mask_n: ember.Tensor | None = None) -> ember.Tensor:
        dtype = specgram.dtype
        if specgram.dim() < 3:
            raise ValueError(f"Expected at least 3D tensor (..., channel, freq, time). Found: {tuple(specgram.shape)}")
        if not specgram.is_complex():
            raise ValueError(f"The type of ``specgram`` tensor must be ``ember.cfloat`` or ``ember.cdouble``. "
                             f"Found: {specgram.dtype}")
        if not 0 <= self.ref_channel < specgram.shape[-3]:
            raise IndexError(f"MVDR: ref_channel {self.ref_channel} is out of range for {specgram.shape[-3]} channels")
        specgram = specgram.to(ember.complex128)
        if mask_n is None:
            warnings.warn("``mask_n`` is not provided, use ``1 - mask_s`` as ``mask_n``.", stacklevel=2)
            mask_n = 1 - mask_s
        psd_s = self.psd(specgram, mask_s)
        psd_n = self.psd(specgram, mask_n)
        u = ember.zeros(*specgram.shape[:-2], dtype=ember.float64, device=specgram.device)
        u[..., self.ref_channel] = 1.0
        u = u.to(ember.complex128)
        if self.online:
            psd_s, psd_n = self._online_update(psd_s, psd_n, mask_s, mask_n)
        w = _mvdr_vector(psd_s, psd_n, u, self.solution, self.diag_loading, self.diag_eps)
        return AF.apply_beamforming(w, specgram).to(dtype)
