"""Multi-channel beamforming (torchaudio.functional): power spectral density matrices, MVDR weights
(Souden's and the relative-transfer-function form), RTF estimates by eigenvector or power
iteration, and applying weights to a multi-channel STFT. Complex inputs only; all differentiable.
"""

from __future__ import annotations

import ember

__all__ = ["apply_beamforming", "mvdr_weights_rtf", "mvdr_weights_souden", "psd", "rtf_evd", "rtf_power"]


def _trace(mat: ember.Tensor) -> ember.Tensor:
    return mat.diagonal(0, -1, -2).sum(-1)


def _tik_reg(mat: ember.Tensor, reg: float = 1e-7, eps: float = 1e-8) -> ember.Tensor:
    """Diagonal loading: mat + (tr(mat)·reg + eps)·I keeps the solve well conditioned."""
    eye = ember.eye(mat.shape[-1], dtype=mat.dtype, device=mat.device)
    load = ember.real(_trace(mat))[..., None, None] * reg + eps
    return mat + load * eye


def _require_complex(op: str, **tensors: ember.Tensor) -> None:
    if not all(t.is_complex() for t in tensors.values()):
        found = ", ".join(f"{t.dtype} for {name}" for name, t in tensors.items())
        raise TypeError(f"{op}: the type of {' and '.join(tensors)} must be ember.cfloat or ember.cdouble. "
                        f"Found {found}.")


def _check_psd_pair(op: str, psd_s: ember.Tensor, psd_n: ember.Tensor) -> None:
    if psd_s.dim() < 3 or psd_n.dim() < 3:
        raise ValueError(f"{op}: expected at least 3D Tensor (..., freq, channel, channel) for psd_s and psd_n. "
                         f"Found {tuple(psd_s.shape)} for psd_s and {tuple(psd_n.shape)} for psd_n.")
    _require_complex(op, psd_s=psd_s, psd_n=psd_n)
    if psd_s.shape != psd_n.shape:
        raise ValueError(f"{op}: the dimensions of psd_s and psd_n should be the same. Found {tuple(psd_s.shape)} "
                         f"and {tuple(psd_n.shape)}.")
    if psd_s.shape[-1] != psd_s.shape[-2]:
        raise ValueError(f"{op}: the last two dimensions of psd_s should be the same. Found {tuple(psd_s.shape)}.")


def _pick_reference(op: str, mat: ember.Tensor, reference_channel) -> ember.Tensor:
    """mat[..., :, ref] for an int, or Σ_c mat[..., :, c]·ref[..., c] for a (…, C) one-hot/weight tensor."""
    if isinstance(reference_channel, bool) or not isinstance(reference_channel, (int, ember.Tensor)):
        raise TypeError(f'{op}: expected "int" or "Tensor" for reference_channel. Found: {type(reference_channel)}.')
    if isinstance(reference_channel, int):
        c = mat.shape[-1]
        if not -c <= reference_channel < c:
            raise IndexError(f"{op}: reference_channel {reference_channel} is out of range for {c} channels")
        return mat[..., :, reference_channel]
    ref = reference_channel.to(mat.dtype)
    if ref.shape[-1] != mat.shape[-1]:
        raise ValueError(f"{op}: expected reference_channel with {mat.shape[-1]} channels in its last dim, but got "
                         f"shape {tuple(ref.shape)}")
    return (mat * ref[..., None, None, :]).sum(-1)


def psd(specgram: ember.Tensor, mask: ember.Tensor | None = None, normalize: bool = True,
        eps: float = 1e-10) -> ember.Tensor:
    """Cross-channel PSD Σ_t m[t]·y_t y_tᴴ: specgram (…, C, F, T), mask (…, F, T) → (…, F, C, C).

    With ``normalize`` the mask is divided by its sum over time (+ eps).
    """
    if specgram.dim() < 3:
        raise ValueError(f"psd: expected specgram (..., channel, freq, time), but got shape {tuple(specgram.shape)}")
    _require_complex("psd", specgram=specgram)
    spec = specgram.transpose(-3, -2)                                   # (…, F, C, T)
    if mask is not None:
        if mask.shape != spec.shape[:-2] + spec.shape[-1:]:
            raise ValueError(f"psd: expected mask of shape {tuple(spec.shape[:-2]) + tuple(spec.shape[-1:])} "
                             f"(..., freq, time), but got {tuple(mask.shape)}")
        if normalize:
            mask = mask / (mask.sum(dim=-1, keepdim=True) + eps)
        weighted = spec * mask.unsqueeze(-2).to(spec.dtype)
    else:
        weighted = spec
    return ember.matmul(weighted, spec.conj().transpose(-1, -2))


def mvdr_weights_souden(psd_s: ember.Tensor, psd_n: ember.Tensor, reference_channel, diagonal_loading: bool = True,
                        diag_eps: float = 1e-7, eps: float = 1e-8) -> ember.Tensor:
    """Souden's MVDR: w = (Φn⁻¹Φs / (tr(Φn⁻¹Φs) + eps)) u, u the reference channel → (…, F, C)."""
    _check_psd_pair("mvdr_weights_souden", psd_s, psd_n)
    if diagonal_loading:
        psd_n = _tik_reg(psd_n, reg=diag_eps)
    numerator = ember.linalg.solve(psd_n, psd_s)
    ws = numerator / (_trace(numerator)[..., None, None] + eps)
    return _pick_reference("mvdr_weights_souden", ws, reference_channel)


def mvdr_weights_rtf(rtf: ember.Tensor, psd_n: ember.Tensor, reference_channel=None, diagonal_loading: bool = True,
                     diag_eps: float = 1e-7, eps: float = 1e-8) -> ember.Tensor:
    """RTF MVDR: w = Φn⁻¹v / (vᴴΦn⁻¹v + eps), times conj(v[ref]) when a reference is given → (…, F, C)."""
    if rtf.dim() < 2:
        raise ValueError(f"mvdr_weights_rtf: expected at least 2D Tensor (..., freq, channel) for rtf. "
                         f"Found {tuple(rtf.shape)}.")
    if psd_n.dim() < 3:
        raise ValueError(f"mvdr_weights_rtf: expected at least 3D Tensor (..., freq, channel, channel) for psd_n. "
                         f"Found {tuple(psd_n.shape)}.")
    _require_complex("mvdr_weights_rtf", rtf=rtf, psd_n=psd_n)
    if rtf.shape != psd_n.shape[:-1]:
        raise ValueError(f"mvdr_weights_rtf: the dimensions of rtf and the dimensions except the last of psd_n "
                         f"should be the same. Found {tuple(rtf.shape)} for rtf and {tuple(psd_n.shape)} for psd_n.")
    if psd_n.shape[-1] != psd_n.shape[-2]:
        raise ValueError(f"mvdr_weights_rtf: the last two dimensions of psd_n should be the same. "
                         f"Found {tuple(psd_n.shape)}.")
    if diagonal_loading:
        psd_n = _tik_reg(psd_n, reg=diag_eps)
    numerator = ember.linalg.solve(psd_n, rtf.unsqueeze(-1)).squeeze(-1)
    denominator = (rtf.conj() * numerator).sum(-1)
    weights = numerator / (ember.real(denominator).unsqueeze(-1) + eps)
    if reference_channel is None:
        return weights
    scale = _pick_reference("mvdr_weights_rtf", rtf.conj().unsqueeze(-2), reference_channel).squeeze(-1)
    return weights * scale[..., None]


def rtf_evd(psd_s: ember.Tensor) -> ember.Tensor:
    """RTF as the eigenvector of the largest eigenvalue of Φs: (…, F, C, C) → (…, F, C)."""
    _require_complex("rtf_evd", psd_s=psd_s)
    if psd_s.dim() < 3 or psd_s.shape[-1] != psd_s.shape[-2]:
        raise ValueError(f"rtf_evd: expected a 3D+ Tensor (..., freq, channel, channel) with square last dims. "
                         f"Found {tuple(psd_s.shape)}.")
    _, v = ember.linalg.eigh(psd_s)
    return v[..., -1]


def rtf_power(psd_s: ember.Tensor, psd_n: ember.Tensor, reference_channel, n_iter: int = 3,
              diagonal_loading: bool = True, diag_eps: float = 1e-7) -> ember.Tensor:
    """RTF by power iteration on Φn⁻¹Φs started from the reference column, finished with one Φs
    (or, for n_iter == 1, one Φn) product → (…, F, C)."""
    _check_psd_pair("rtf_power", psd_s, psd_n)
    if n_iter <= 0:
        raise ValueError("The number of iteration must be greater than 0.")
    if diagonal_loading:
        psd_n = _tik_reg(psd_n, reg=diag_eps)
    phi = ember.linalg.solve(psd_n, psd_s)
    rtf = _pick_reference("rtf_power", phi, reference_channel).unsqueeze(-1)
    if n_iter >= 2:
        for _ in range(n_iter - 2):
            rtf = ember.matmul(phi, rtf)
        rtf = ember.matmul(psd_s, rtf)
    else:
        rtf = ember.matmul(psd_n, rtf)
    return rtf.squeeze(-1)


def apply_beamforming(beamform_weights: ember.Tensor, specgram: ember.Tensor) -> ember.Tensor:
    """wᴴY: weights (…, F, C) and specgram (…, C, F, T) → (…, F, T)."""
    if beamform_weights.dim() < 2 or specgram.dim() < 3 or beamform_weights.shape[:-2] != specgram.shape[:-3] \
            or beamform_weights.shape[-2:] != (specgram.shape[-2], specgram.shape[-3]):
        raise ValueError(f"apply_beamforming: expected beamform_weights (..., freq, channel) and specgram "
                         f"(..., channel, freq, time) with the same leading dims. Found {tuple(beamform_weights.shape)} "
                         f"for beamform_weights and {tuple(specgram.shape)} for specgram.")
    _require_complex("apply_beamforming", beamform_weights=beamform_weights, specgram=specgram)
    w = beamform_weights.conj().transpose(-1, -2).unsqueeze(-1)     # (…, C, F, 1)
    return (w * specgram).sum(-3)
