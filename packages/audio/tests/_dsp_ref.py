"""Float64 NumPy references shared by the functional and transforms tests: a direct-DFT STFT and an
overlap-add inverse, written from the definitions (no FFT library)."""

import numpy as np


def hann(n):
    """Periodic Hann window, as torch.hann_window(n)."""
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n) if n > 1 else np.ones(n)


def full_window(window, n_fft):
    """A win_length window zero-padded to n_fft, centred."""
    w = np.zeros(n_fft)
    left = (n_fft - len(window)) // 2
    w[left:left + len(window)] = window
    return w


def stft(x, n_fft, hop, window, center=True, pad_mode="reflect", onesided=True):
    """(..., time) → complex (..., freq, frames) by an explicit DFT matrix."""
    x = np.asarray(x, dtype=np.float64)
    w = full_window(window, n_fft)
    if center:
        pad = [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)]
        x = np.pad(x, pad, mode="reflect" if pad_mode == "reflect" else pad_mode)
    frames = 1 + (x.shape[-1] - n_fft) // hop
    idx = np.arange(n_fft)[None, :] + hop * np.arange(frames)[:, None]
    seg = x[..., idx] * w                                   # (..., frames, n_fft)
    k = np.arange(n_fft // 2 + 1 if onesided else n_fft)
    dft = np.exp(-2j * np.pi * np.outer(np.arange(n_fft), k) / n_fft)
    return np.swapaxes(seg @ dft, -1, -2)


def istft(spec, n_fft, hop, window, length=None, center=True):
    """Onesided complex (..., freq, frames) → (..., time): inverse DFT, windowed overlap-add,
    divided by the summed squared window."""
    w = full_window(window, n_fft)
    frames = spec.shape[-1]
    k = np.arange(spec.shape[-2])
    n = np.arange(n_fft)
    # Hermitian completion of the onesided spectrum, then an explicit inverse DFT
    weight = np.where((k == 0) | ((n_fft % 2 == 0) & (k == n_fft // 2)), 1.0, 2.0)
    basis = np.exp(2j * np.pi * np.outer(k, n) / n_fft) * weight[:, None] / n_fft
    seg = np.real(np.swapaxes(spec, -1, -2) @ basis) * w   # (..., frames, n_fft)
    total = n_fft + hop * (frames - 1)
    out = np.zeros(spec.shape[:-2] + (total,))
    norm = np.zeros(total)
    for f in range(frames):
        out[..., f * hop:f * hop + n_fft] += seg[..., f, :]
        norm[f * hop:f * hop + n_fft] += w ** 2
    start = n_fft // 2 if center else 0
    end = total - n_fft // 2 if center else total
    if length is not None:
        end = start + length
    out = out[..., start:end]
    norm = norm[start:end]
    res = out / np.where(norm > 1e-11, norm, 1.0)
    if length is not None and res.shape[-1] < length:
        res = np.concatenate([res, np.zeros(res.shape[:-1] + (length - res.shape[-1],))], -1)
    return res
