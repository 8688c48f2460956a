"""Spectral and sample-domain functions in the shape of torchaudio.functional: spectrograms and their
inverses, Griffin-Lim, dB conversion, mel/linear filterbanks and the DCT, deltas, spectral centroid,
the phase vocoder, SpecAugment masks, sliding-window CMN, sinc resampling, noise mixing,
convolution, speed and pitch change, pre- and de-emphasis, μ-law companding, BS.1770 loudness and the
edit distance.
"""

from __future__ import annotations

import math
import warnings

import ember
import ember.nn.functional as F

from .filtering import highpass_biquad, lfilter, treble_biquad

__all__ = [
    "DB_to_amplitude", "add_noise", "amplitude_to_DB", "compute_deltas", "convolve", "create_dct",
    "deemphasis", "detect_pitch_frequency", "edit_distance", "fftconvolve", "griffinlim", "inverse_spectrogram", "linear_fbanks", "loudness",
    "mask_along_axis", "mask_along_axis_iid", "melscale_fbanks", "mu_law_decoding", "mu_law_encoding",
    "phase_vocoder", "pitch_shift", "preemphasis", "resample", "sliding_window_cmn", "spectral_centroid",
    "spectrogram", "speed",
]


def _exp_base(base: float, x: ember.Tensor) -> ember.Tensor:
    """base ** x for a tensor exponent (ember.pow takes no scalar base)."""
    return ember.exp(x * math.log(base))


def _spec_norms(normalized):
    """(frame_length_norm, window_norm): True and "window" scale by the window's L2 norm."""
    if isinstance(normalized, str):
        if normalized not in ("frame_length", "window"):
            raise ValueError(f"Invalid normalized parameter: {normalized}")
        return normalized == "frame_length", normalized == "window"
    if isinstance(normalized, bool):
        return False, normalized
    raise TypeError(f"Input type not supported: normalized must be a bool or str, but got {type(normalized)}")


def _real_of(dtype):
    return ember.float64 if dtype == ember.complex128 else ember.float32


def spectrogram(waveform: ember.Tensor, pad: int, window: ember.Tensor, n_fft: int, hop_length: int,
                win_length: int, power: float | None, normalized, center: bool = True,
                pad_mode: str = "reflect", onesided: bool = True, return_complex: bool | None = None) -> ember.Tensor:
    """(..., time) → (..., n_fft // 2 + 1, frames): |STFT|^power, or the complex STFT if power is None."""
    if return_complex is not None:
        warnings.warn("`return_complex` argument is now deprecated and is not effective. "
                      "`emberaudio.functional.spectrogram(power=None)` always returns a tensor with complex dtype. "
                      "Please remove the argument in the function call.", stacklevel=2)
    if power is not None and power <= 0:
        raise ValueError(f"spectrogram: expected power > 0 or None, but got {power}")
    frame_norm, window_norm = _spec_norms(normalized)
    window = window.to(waveform.dtype) if waveform.is_floating_point() else window
    if pad > 0:
        waveform = F.pad(waveform, (pad, pad), "constant")
    shape = waveform.shape
    flat = waveform.reshape(-1, shape[-1])
    spec = ember.stft(flat, n_fft, hop_length=hop_length, win_length=win_length, window=window, center=center,
                      pad_mode=pad_mode, normalized=frame_norm, onesided=onesided, return_complex=True)
    spec = spec.reshape(*shape[:-1], *spec.shape[-2:])
    if window_norm:
        spec = spec / window.pow(2.0).sum().sqrt()
    if power is None:
        return spec
    if power == 1.0:
        return spec.abs()
    if power == 2.0:
        # |z|^2 without the square root, computed in the STFT's memory order (frames, freq): the
        # elementwise kernels are fastest there, and MelScale's transpose makes the result
        # contiguous again. About a fifth of abs().pow(2)'s time.
        in_memory_order = spec.transpose(-1, -2)
        return (in_memory_order.real.square() + in_memory_order.imag.square()).transpose(-1, -2)
    return spec.abs().pow(power)


def inverse_spectrogram(spectrogram: ember.Tensor, length: int | None, pad: int, window: ember.Tensor, n_fft: int,
                        hop_length: int, win_length: int, normalized, center: bool = True,
                        pad_mode: str = "reflect", onesided: bool = True) -> ember.Tensor:
    """Complex (..., freq, frames) → (..., time) by the inverse STFT (overlap-add)."""
    if not spectrogram.is_complex():
        raise ValueError("Expected `spectrogram` to be complex dtype.")
    frame_norm, window_norm = _spec_norms(normalized)
    window = window.to(_real_of(spectrogram.dtype))
    if window_norm:
        spectrogram = spectrogram * window.pow(2.0).sum().sqrt()
    shape = spectrogram.shape
    flat = spectrogram.reshape(-1, shape[-2], shape[-1])
    wave = ember.istft(flat, n_fft, hop_length=hop_length, win_length=win_length, window=window, center=center,
                       normalized=frame_norm, onesided=onesided,
                       length=length + 2 * pad if length is not None else None, return_complex=False)
    if length is not None and pad > 0:
        wave = wave[:, pad:-pad]
    return wave.reshape(*shape[:-2], wave.shape[-1])


def griffinlim(specgram: ember.Tensor, window: ember.Tensor, n_fft: int, hop_length: int, win_length: int,
               power: float, n_iter: int, momentum: float, length: int | None, rand_init: bool) -> ember.Tensor:
    """Waveform from a magnitude spectrogram (..., freq, frames) by fast Griffin-Lim."""
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in range [0, 1). Found: {momentum}")
    if n_iter < 0:
        raise ValueError(f"n_iter must be non-negative, but got {n_iter}")
    momentum = momentum / (1 + momentum)
    window = window.to(specgram.dtype)
    shape = specgram.shape
    specgram = specgram.reshape(-1, shape[-2], shape[-1]).pow(1 / power)
    if rand_init:
        # torchaudio draws real and imaginary parts uniformly from [0, 1) (torch.rand of a complex dtype)
        angles = ember.complex(ember.rand(specgram.shape, dtype=specgram.dtype, device=specgram.device),
                               ember.rand(specgram.shape, dtype=specgram.dtype, device=specgram.device))
    else:
        angles = ember.complex(ember.ones_like(specgram), ember.zeros_like(specgram))

    def istft(s):
        return ember.istft(s, n_fft, hop_length=hop_length, win_length=win_length, window=window, length=length)

    tprev = None
    for _ in range(n_iter):
        rebuilt = ember.stft(istft(specgram * angles), n_fft, hop_length=hop_length, win_length=win_length,
                             window=window, center=True, pad_mode="reflect", normalized=False, onesided=True,
                             return_complex=True)
        angles = rebuilt if tprev is None or momentum == 0 else rebuilt - tprev * momentum
        angles = angles / (angles.abs() + 1e-16)
        tprev = rebuilt
    wave = istft(specgram * angles)
    return wave.reshape(*shape[:-2], wave.shape[-1])


def amplitude_to_DB(x: ember.Tensor, multiplier: float, amin: float, db_multiplier: float,
                    top_db: float | None = None) -> ember.Tensor:
    """multiplier·log10(max(x, amin)) − multiplier·db_multiplier, floored at (max − top_db) per spectrogram.

    The max is taken over the last three dims (channel, freq, time) of inputs with 3+ dims, else over all.
    """
    x_db = multiplier * ember.log10(ember.clamp(x, min=amin))
    x_db = x_db - multiplier * db_multiplier
    if top_db is not None:
        shape = x_db.shape
        channels = shape[-3] if x_db.dim() > 2 else 1
        packed = x_db.reshape(-1, channels, shape[-2], shape[-1])
        if packed.numel() == 0:
            return x_db
        floor = (packed.amax(dim=(-3, -2, -1)) - top_db).reshape(-1, 1, 1, 1)
        x_db = ember.maximum(packed, floor).reshape(shape)
    return x_db


def DB_to_amplitude(x: ember.Tensor, ref: float, power: float) -> ember.Tensor:
    """ref · (10^(x/10))^power (power 1 for power dB, 0.5 for amplitude dB)."""
    return ref * ember.pow(_exp_base(10.0, 0.1 * x), power)


def _check_mel_scale(mel_scale: str) -> None:
    if mel_scale not in ("htk", "slaney"):
        raise ValueError('mel_scale should be one of "htk" or "slaney".')


def _hz_to_mel(freq: float, mel_scale: str = "htk") -> float:
    _check_mel_scale(mel_scale)
    if mel_scale == "htk":
        return 2595.0 * math.log10(1.0 + freq / 700.0)
    # Slaney: linear below 1 kHz (200/3 Hz per mel), logarithmic above
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    if freq >= min_log_hz:
        return min_log_mel + math.log(freq / min_log_hz) / logstep
    return freq / f_sp


def _mel_to_hz(mels: ember.Tensor, mel_scale: str = "htk") -> ember.Tensor:
    _check_mel_scale(mel_scale)
    if mel_scale == "htk":
        return 700.0 * (_exp_base(10.0, mels / 2595.0) - 1.0)
    f_sp = 200.0 / 3
    min_log_hz = 1000.0
    min_log_mel = min_log_hz / f_sp
    logstep = math.log(6.4) / 27.0
    return ember.where(mels >= min_log_mel, min_log_hz * ember.exp(logstep * (mels - min_log_mel)), f_sp * mels)


def _triangular_fbank(all_freqs: ember.Tensor, f_pts: ember.Tensor) -> ember.Tensor:
    """(n_freqs, n_filter): filter m rises from f_pts[m] to f_pts[m+1] and falls to f_pts[m+2]."""
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
    down = -slopes[:, :-2] / f_diff[:-1]
    up = slopes[:, 2:] / f_diff[1:]
    return ember.clamp(ember.minimum(down, up), min=0.0)


def melscale_fbanks(n_freqs: int, f_min: float, f_max: float, n_mels: int, sample_rate: int,
                    norm: str | None = None, mel_scale: str = "htk") -> ember.Tensor:
    """Triangular mel filterbank (n_freqs, n_mels), float32; norm="slaney" gives each band unit area."""
    if norm is not None and norm != "slaney":
        raise ValueError('norm must be one of None or "slaney"')
    _check_mel_scale(mel_scale)
    all_freqs = ember.linspace(0, sample_rate // 2, n_freqs, dtype=ember.float64)
    m_min = _hz_to_mel(f_min, mel_scale)
    m_max = _hz_to_mel(f_max, mel_scale)
    m_pts = ember.linspace(m_min, m_max, n_mels + 2, dtype=ember.float64)
    f_pts = _mel_to_hz(m_pts, mel_scale)
    fb = _triangular_fbank(all_freqs, f_pts)
    if norm == "slaney":
        fb = fb * (2.0 / (f_pts[2:n_mels + 2] - f_pts[:n_mels])).unsqueeze(0)
    if n_freqs > 0 and n_mels > 0 and bool((fb.amax(dim=0) == 0.0).any()):
        warnings.warn(f"At least one mel filterbank has all zero values. The value for `n_mels` ({n_mels}) may be "
                      f"set too high. Or, the value for `n_freqs` ({n_freqs}) may be set too low.", stacklevel=2)
    return fb.to(ember.float32)


def linear_fbanks(n_freqs: int, f_min: float, f_max: float, n_filter: int, sample_rate: int) -> ember.Tensor:
    """Triangular filterbank (n_freqs, n_filter) with centres evenly spaced in Hz, float32."""
    all_freqs = ember.linspace(0, sample_rate // 2, n_freqs, dtype=ember.float64)
    f_pts = ember.linspace(f_min, f_max, n_filter + 2, dtype=ember.float64)
    return _triangular_fbank(all_freqs, f_pts).to(ember.float32)


def create_dct(n_mfcc: int, n_mels: int, norm: str | None) -> ember.Tensor:
    """DCT-II matrix (n_mels, n_mfcc), float32; norm="ortho" makes it orthonormal, None scales by 2."""
    if norm is not None and norm != "ortho":
        raise ValueError('norm must be either "ortho" or None')
    n = ember.arange(n_mels, dtype=ember.float64)
    k = ember.arange(n_mfcc, dtype=ember.float64).unsqueeze(1)
    dct = ember.cos(math.pi / n_mels * (n + 0.5) * k)
    if norm is None:
        dct = dct * 2.0
    else:
        first = ember.ones(n_mfcc, 1, dtype=ember.float64)
        if n_mfcc > 0:
            first[0] = 1 / math.sqrt(2.0)
        dct = dct * first * math.sqrt(2.0 / n_mels)
    return dct.t().to(ember.float32)


def compute_deltas(specgram: ember.Tensor, win_length: int = 5, mode: str = "replicate") -> ember.Tensor:
    """Regression deltas along time: Σ_n n(c[t+n] − c[t−n]) / (2 Σ_n n²), edges padded by ``mode``."""
    if win_length < 3:
        raise ValueError(f"Window length should be greater than or equal to 3. Found win_length {win_length}")
    if specgram.dim() == 0:
        raise ValueError("compute_deltas: expected a tensor with a time dimension, but got a 0-dim tensor")
    shape = specgram.shape
    if specgram.numel() == 0:
        return specgram * 0
    x = specgram.reshape(1, -1, shape[-1])
    n = (win_length - 1) // 2
    denom = n * (n + 1) * (2 * n + 1) / 3
    x = F.pad(x, (n, n), mode=mode)
    kernel = ember.arange(-n, n + 1, dtype=specgram.dtype, device=specgram.device).reshape(1, 1, -1).expand(x.shape[1], 1, 2 * n + 1)
    out = F.conv1d(x, kernel.contiguous(), groups=x.shape[1]) / denom
    return out.reshape(shape)


def spectral_centroid(waveform: ember.Tensor, sample_rate: int, pad: int, window: ember.Tensor, n_fft: int,
                      hop_length: int, win_length: int) -> ember.Tensor:
    """Σ_f f·|X| / Σ_f |X| per frame, f = linspace(0, sample_rate // 2, n_fft // 2 + 1); silence gives NaN."""
    spec = spectrogram(waveform, pad=pad, window=window, n_fft=n_fft, hop_length=hop_length,
                       win_length=win_length, power=1.0, normalized=False)
    freqs = ember.linspace(0, sample_rate // 2, 1 + n_fft // 2, dtype=spec.dtype, device=spec.device).reshape(-1, 1)
    return (freqs * spec).sum(dim=-2) / spec.sum(dim=-2)


def phase_vocoder(complex_specgrams: ember.Tensor, rate: float, phase_advance: ember.Tensor) -> ember.Tensor:
    """Stretch (..., freq, frames) complex spectrograms in time by 1/rate, keeping the pitch.

    ``phase_advance`` (freq, 1) is the expected phase increment per hop. Frame t' reads frames
    floor(t'·rate) and the next one: magnitude interpolated linearly, phase accumulated.
    """
    if not complex_specgrams.is_complex():
        raise TypeError(f"phase_vocoder: expected a complex spectrogram, but got {complex_specgrams.dtype}")
    if rate <= 0:
        raise ValueError(f"phase_vocoder: expected rate > 0, but got {rate}")
    if rate == 1.0:
        return complex_specgrams
    shape = complex_specgrams.shape
    spec = complex_specgrams.reshape(-1, shape[-2], shape[-1])
    real = _real_of(spec.dtype)
    steps = ember.arange(0, shape[-1], rate, dtype=real, device=spec.device)
    alphas = ember.remainder(steps, 1.0)
    phase_0 = spec[..., :1].angle()
    spec = F.pad(spec, (0, 2))
    idx = steps.to(ember.int64)
    s0 = spec.index_select(-1, idx)
    s1 = spec.index_select(-1, idx + 1)
    phase = s1.angle() - s0.angle() - phase_advance
    phase = phase - 2 * math.pi * ember.round(phase / (2 * math.pi))
    phase = phase + phase_advance
    phase = ember.cat([phase_0, phase[..., :-1]], dim=-1)
    mag = alphas * s1.abs() + (1 - alphas) * s0.abs()
    out = ember.polar(mag, ember.cumsum(phase, dim=-1))
    return out.reshape(*shape[:-2], *out.shape[-2:])


def _fill(specgram: ember.Tensor, mask: ember.Tensor, mask_value) -> ember.Tensor:
    """masked_fill, or a where() for a tensor mask_value (e.g. the input's mean) so gradients reach it."""
    if isinstance(mask_value, ember.Tensor):
        return ember.where(mask, mask_value.to(specgram.dtype), specgram)
    return specgram.masked_fill(mask, mask_value)


def _mask_param(mask_param: int, p: float, axis_length: int) -> int:
    return mask_param if p == 1.0 else min(mask_param, int(axis_length * p))


def _check_mask_args(dim: int, axis: int, p: float) -> None:
    if axis not in (dim - 2, dim - 1):
        raise ValueError(f"Only Frequency and Time masking are supported (axis {dim - 2} and axis {dim - 1} "
                         f"supported; {axis} given).")
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"The value of p must be between 0.0 and 1.0 ({p} given).")


def mask_along_axis(specgram: ember.Tensor, mask_param: int, mask_value: float, axis: int,
                    p: float = 1.0) -> ember.Tensor:
    """One mask [v0, v0 + v) shared by the whole batch: v ~ U[0, mask_param), v0 ~ U[0, size − v)."""
    dim = specgram.dim()
    if dim < 2:
        raise ValueError(f"Spectrogram must have at least two dimensions (time and frequency) ({dim} given).")
    _check_mask_args(dim, axis, p)
    mask_param = _mask_param(mask_param, p, specgram.shape[axis])
    if mask_param < 1:
        return specgram
    size = specgram.shape[axis]
    value = float(ember.rand(1)) * mask_param
    start = int(float(ember.rand(1)) * (size - value))
    end = start + int(value)
    pos = ember.arange(size, device=specgram.device)
    mask = (pos >= start) & (pos < end)
    if axis == dim - 2:
        mask = mask.unsqueeze(-1)
    return _fill(specgram, mask, mask_value)


def mask_along_axis_iid(specgrams: ember.Tensor, mask_param: int, mask_value: float, axis: int,
                        p: float = 1.0) -> ember.Tensor:
    """An independent mask per example and channel (every leading index) of (..., freq, time)."""
    dim = specgrams.dim()
    if dim < 3:
        raise ValueError(f"Spectrogram must have at least three dimensions ({dim} given).")
    _check_mask_args(dim, axis, p)
    mask_param = _mask_param(mask_param, p, specgrams.shape[axis])
    if mask_param < 1:
        return specgrams
    lead = specgrams.shape[: dim - 2]
    value = ember.rand(lead, dtype=ember.float64, device=specgrams.device) * mask_param
    start = (ember.rand(lead, dtype=ember.float64, device=specgrams.device) * (specgrams.shape[axis] - value)).to(ember.int64)
    end = start + value.to(ember.int64)
    pos = ember.arange(specgrams.shape[axis], device=specgrams.device)
    mask = (pos >= start[..., None]) & (pos < end[..., None])          # (..., size)
    mask = mask.unsqueeze(-1) if axis == dim - 2 else mask.unsqueeze(-2)
    return _fill(specgrams, mask, mask_value)


def _cmn_bounds(num_frames: int, cmn_window: int, min_cmn_window: int, center: bool, device=None):
    """Kaldi's window [start, end) per frame, as int64 tensors."""
    t = ember.arange(num_frames, device=device)
    if center:
        start = t - cmn_window // 2
        end = start + cmn_window
    else:
        start = t - cmn_window
        end = t + 1
    end = ember.where(start < 0, end - start, end)
    start = ember.clamp(start, min=0)
    if not center:
        # a causal window reaches forward to min_cmn_window frames at the start
        end = ember.clamp(t + 1, min=min_cmn_window)
    over = ember.clamp(end - num_frames, min=0)
    start = ember.clamp(start - over, min=0)
    end = end - over
    return start, end


def sliding_window_cmn(specgram: ember.Tensor, cmn_window: int = 600, min_cmn_window: int = 100,
                       center: bool = False, norm_vars: bool = False) -> ember.Tensor:
    """Kaldi's sliding-window cepstral mean (and variance) normalisation of (..., time, freq).

    Windows are prefix-sum differences, so the cost is O(time · freq) whatever cmn_window is.
    """
    if specgram.dim() < 2:
        raise ValueError(f"sliding_window_cmn: expected (..., time, freq), but got shape {tuple(specgram.shape)}")
    shape = specgram.shape
    if specgram.numel() == 0:
        return specgram.clone()
    x = specgram.reshape(-1, shape[-2], shape[-1])
    frames = shape[-2]
    start, end = _cmn_bounds(frames, cmn_window, min_cmn_window, center, x.device)
    count = (end - start).to(x.dtype).unsqueeze(-1)
    zero = ember.zeros(x.shape[0], 1, shape[-1], dtype=x.dtype, device=x.device)
    csum = ember.cat([zero, ember.cumsum(x, dim=-2)], dim=-2)
    mean = (csum[:, end] - csum[:, start]) / count
    out = x - mean
    if norm_vars:
        csq = ember.cat([zero, ember.cumsum(x * x, dim=-2)], dim=-2)
        var = (csq[:, end] - csq[:, start]) / count - mean * mean
        out = ember.where(count == 1, ember.zeros_like(out), out * var.pow(-0.5))
    return out.reshape(shape)


def _i0(x: ember.Tensor) -> ember.Tensor:
    """Modified Bessel function I0 by its power series Σ ((x/2)^k / k!)² (ember has no i0).

    Terms peak near k = |x|/2, so 2|x| + 30 of them reach double precision.
    """
    q = (x / 2) ** 2
    term = ember.ones_like(x)
    total = ember.ones_like(x)
    n_terms = int(2 * float(x.abs().max()) + 30) if x.numel() else 0
    for k in range(1, n_terms):
        term = term * q / (k * k)
        total = total + term
    return total


def _sinc_resample_kernel(orig_freq: int, new_freq: int, gcd: int, lowpass_filter_width: int, rolloff: float,
                          resampling_method: str, beta: float | None, dtype=None):
    if not (int(orig_freq) == orig_freq and int(new_freq) == new_freq):
        raise ValueError("Frequencies must be of integer type to ensure quality resampling computation. To work "
                         "around this, manually convert both frequencies to integer values that maintain their "
                         "resampling rate ratio before passing them into the function.")
    if resampling_method in ("sinc_interpolation", "kaiser_window"):
        new_method = "sinc_interp_hann" if resampling_method == "sinc_interpolation" else "sinc_interp_kaiser"
        warnings.warn(f'"{resampling_method}" resampling method name is deprecated; use "{new_method}".',
                      stacklevel=3)
        resampling_method = new_method
    elif resampling_method not in ("sinc_interp_hann", "sinc_interp_kaiser"):
        raise ValueError(f"Invalid resampling method: {resampling_method}")
    if lowpass_filter_width <= 0:
        raise ValueError("Low pass filter width should be positive.")
    orig_freq = int(orig_freq) // gcd
    new_freq = int(new_freq) // gcd
    base_freq = min(orig_freq, new_freq) * rolloff
    # taps on the input grid (in input samples) needed to span lowpass_filter_width zero crossings
    width = math.ceil(lowpass_filter_width * orig_freq / base_freq)
    work = dtype if dtype is not None else ember.float64
    idx = ember.arange(-width, width + orig_freq, dtype=work).reshape(1, 1, -1) / orig_freq
    t = ember.arange(0, -new_freq, -1, dtype=work).reshape(-1, 1, 1) / new_freq + idx
    t = ember.clamp(t * base_freq, -lowpass_filter_width, lowpass_filter_width)
    if resampling_method == "sinc_interp_hann":
        window = ember.cos(t * math.pi / lowpass_filter_width / 2) ** 2
    else:
        beta = 14.769656459379492 if beta is None else float(beta)
        window = _i0(beta * ember.sqrt(ember.clamp(1 - (t / lowpass_filter_width) ** 2, min=0.0))) \
            / _i0(ember.tensor(beta, dtype=work))
    t = t * math.pi
    kernels = ember.where(t == 0, ember.ones_like(t), ember.sin(t) / ember.where(t == 0, ember.ones_like(t), t))
    kernels = kernels * window * (base_freq / orig_freq)
    return kernels.to(dtype if dtype is not None else ember.float32), width


def _apply_sinc_resample_kernel(waveform: ember.Tensor, orig_freq: int, new_freq: int, gcd: int,
                                kernel: ember.Tensor, width: int) -> ember.Tensor:
    if not waveform.is_floating_point():
        raise TypeError(f"Expected floating point type for waveform tensor, but received {waveform.dtype}.")
    if waveform.dim() == 0:
        raise ValueError("resample: expected a waveform with a time dimension, but got a 0-dim tensor")
    orig_freq = int(orig_freq) // gcd
    new_freq = int(new_freq) // gcd
    shape = waveform.shape
    target = math.ceil(new_freq * shape[-1] / orig_freq)
    if waveform.numel() == 0:
        return ember.zeros(*shape[:-1], target, dtype=waveform.dtype, device=waveform.device)
    x = waveform.reshape(-1, shape[-1])
    num = x.shape[0]
    x = F.pad(x, (width, width + orig_freq))
    # output phase j of every input block of orig_freq samples is one conv1d output channel
    out = F.conv1d(x.unsqueeze(1), kernel.to(device=x.device, dtype=x.dtype), stride=orig_freq)
    out = out.transpose(1, 2).reshape(num, -1)[..., :target]
    return out.reshape(*shape[:-1], out.shape[-1])


def resample(waveform: ember.Tensor, orig_freq: int, new_freq: int, lowpass_filter_width: int = 6,
             rolloff: float = 0.99, resampling_method: str = "sinc_interp_hann",
             beta: float | None = None) -> ember.Tensor:
    """Band-limited sinc interpolation from orig_freq to new_freq along the last dim.

    Output length ceil(new · len / orig) (rates reduced by their gcd); the windowed sinc has
    ``lowpass_filter_width`` zero crossings each side at cutoff rolloff · min(orig, new) / 2.
    """
    if orig_freq <= 0.0 or new_freq <= 0.0:
        raise ValueError("Original frequency and desired frequecy should be positive")
    if orig_freq == new_freq:
        return waveform
    if not waveform.is_floating_point():
        raise TypeError(f"Expected floating point type for waveform tensor, but received {waveform.dtype}.")
    gcd = math.gcd(int(orig_freq), int(new_freq))
    kernel, width = _sinc_resample_kernel(orig_freq, new_freq, gcd, lowpass_filter_width, rolloff,
                                          resampling_method, beta, waveform.dtype)
    return _apply_sinc_resample_kernel(waveform, orig_freq, new_freq, gcd, kernel, width)


def add_noise(waveform: ember.Tensor, noise: ember.Tensor, snr: ember.Tensor,
              lengths: ember.Tensor | None = None) -> ember.Tensor:
    """waveform + noise scaled to the signal-to-noise ratio ``snr`` (dB), energies over ``lengths``."""
    if not (waveform.dim() - 1 == noise.dim() - 1 == snr.dim() and (lengths is None or lengths.dim() == snr.dim())):
        raise ValueError("Input leading dimensions don't match.")
    length = waveform.shape[-1]
    if length != noise.shape[-1]:
        raise ValueError(f"Length dimensions of waveform and noise don't match (got {length} and {noise.shape[-1]}).")
    if lengths is not None:
        mask = ember.arange(length, device=lengths.device) < lengths.unsqueeze(-1)
        sig, noi = waveform * mask, noise * mask
    else:
        sig, noi = waveform, noise
    energy_signal = (sig * sig).sum(dim=-1)
    energy_noise = (noi * noi).sum(dim=-1)
    original_snr_db = 10 * (ember.log10(energy_signal) - ember.log10(energy_noise))
    scale = _exp_base(10.0, (original_snr_db - snr) / 20.0)
    return waveform + scale.unsqueeze(-1) * noise


_CONV_MODES = ["full", "valid", "same"]


def _check_convolve(x: ember.Tensor, y: ember.Tensor, mode: str) -> None:
    if x.dim() != y.dim():
        raise ValueError(f"The operands must be the same dimension (got {x.dim()} and {y.dim()}).")
    if x.dim() == 0:
        raise ValueError("convolve: expected operands with a signal dimension, but got 0-dim tensors")
    for xi, yi in zip(x.shape[:-1], y.shape[:-1], strict=True):
        if not (xi == yi or xi == 1 or yi == 1):
            raise ValueError(f"Leading dimensions of x and y don't match (got {tuple(x.shape)} and {tuple(y.shape)}).")
    if mode not in _CONV_MODES:
        raise ValueError(f"Unrecognized mode value '{mode}'. Please specify one of {_CONV_MODES}.")
    if x.shape[-1] == 0 or y.shape[-1] == 0:
        raise ValueError(f"convolve: expected non-empty signals, but got lengths {x.shape[-1]} and {y.shape[-1]}")


def _apply_mode(result: ember.Tensor, x_length: int, y_length: int, mode: str) -> ember.Tensor:
    if mode == "full":
        return result
    if mode == "valid":
        n = max(x_length, y_length) - min(x_length, y_length) + 1
        start = (result.shape[-1] - n) // 2
        return result[..., start:start + n]
    start = (result.shape[-1] - x_length) // 2
    return result[..., start:start + x_length]


def convolve(x: ember.Tensor, y: ember.Tensor, mode: str = "full") -> ember.Tensor:
    """Direct 1-D convolution along the last dim, leading dims broadcast; mode full/valid/same."""
    _check_convolve(x, y, mode)
    x_size, y_size = x.shape[-1], y.shape[-1]
    if x_size < y_size:
        x, y = y, x
    lead = [i if j == 1 else j for i, j in zip(x.shape[:-1], y.shape[:-1], strict=True)]
    x = x.broadcast_to((*lead, x.shape[-1]))
    y = y.broadcast_to((*lead, y.shape[-1]))
    n = math.prod(lead)
    if n == 0:
        return _apply_mode(ember.zeros(*lead, x_size + y_size - 1, dtype=x.dtype, device=x.device), x_size, y_size, mode)
    xr = x.reshape(1, n, x.shape[-1])
    yr = y.reshape(n, 1, y.shape[-1]).flip(-1)
    out = F.conv1d(xr, yr.contiguous(), groups=n, padding=y.shape[-1] - 1)
    return _apply_mode(out.reshape(*lead, -1), x_size, y_size, mode)


def fftconvolve(x: ember.Tensor, y: ember.Tensor, mode: str = "full") -> ember.Tensor:
    """Convolution along the last dim by real FFTs of length len(x) + len(y) − 1."""
    _check_convolve(x, y, mode)
    n = x.shape[-1] + y.shape[-1] - 1
    result = ember.fft.irfft(ember.fft.rfft(x, n=n) * ember.fft.rfft(y, n=n), n=n)
    return _apply_mode(result, x.shape[-1], y.shape[-1], mode)


def speed(waveform: ember.Tensor, orig_freq: int, factor: float,
          lengths: ember.Tensor | None = None) -> tuple[ember.Tensor, ember.Tensor | None]:
    """Play ``factor`` times faster by resampling from factor·orig_freq to orig_freq; lengths rescaled."""
    if factor <= 0:
        raise ValueError(f"speed: expected factor > 0, but got {factor}")
    source = int(factor * orig_freq)
    target = int(orig_freq)
    gcd = math.gcd(source, target)
    source //= gcd
    target //= gcd
    out_lengths = None
    if lengths is not None:
        out_lengths = ember.ceil(lengths * target / source).to(lengths.dtype)
    return resample(waveform, source, target), out_lengths


def preemphasis(waveform: ember.Tensor, coeff: float = 0.97) -> ember.Tensor:
    """y[n] = x[n] − coeff · x[n−1] (y[0] = x[0])."""
    if waveform.dim() == 0:
        raise ValueError("preemphasis: expected a waveform with a time dimension, but got a 0-dim tensor")
    shifted = F.pad(waveform[..., :-1], (1, 0)) if waveform.shape[-1] > 0 else waveform
    return waveform - coeff * shifted


def deemphasis(waveform: ember.Tensor, coeff: float = 0.97) -> ember.Tensor:
    """Inverse of preemphasis: y[n] = x[n] + coeff · y[n−1] (an lfilter, output clamped to [-1, 1])."""
    a = ember.tensor([1.0, -coeff], dtype=waveform.dtype, device=waveform.device)
    b = ember.tensor([1.0, 0.0], dtype=waveform.dtype, device=waveform.device)
    return lfilter(waveform, a_coeffs=a, b_coeffs=b)


def _stretch_waveform(waveform: ember.Tensor, n_steps: int, bins_per_octave: int, n_fft: int, win_length: int,
                      hop_length: int, window: ember.Tensor) -> ember.Tensor:
    """Phase-vocoder time stretch by 2^(n_steps / bins_per_octave), flattened to (batch, time)."""
    if bins_per_octave == 0:
        raise ValueError("pitch_shift: bins_per_octave must be non-zero")
    if waveform.dim() == 0:
        raise ValueError("pitch_shift: expected a waveform with a time dimension, but got a 0-dim tensor")
    x = waveform.reshape(-1, waveform.shape[-1])
    rate = 2.0 ** (-float(n_steps) / bins_per_octave)
    window = window.to(x.dtype)
    spec = ember.stft(x, n_fft, hop_length=hop_length, win_length=win_length, window=window, center=True,
                      pad_mode="reflect", normalized=False, onesided=True, return_complex=True)
    phase_advance = ember.linspace(0, math.pi * hop_length, spec.shape[-2], dtype=x.dtype, device=x.device).unsqueeze(-1)
    stretched = phase_vocoder(spec, rate, phase_advance)
    return ember.istft(stretched, n_fft, hop_length=hop_length, win_length=win_length, window=window,
                       length=int(round(waveform.shape[-1] / rate)))


def _fix_waveform_shape(shifted: ember.Tensor, shape) -> ember.Tensor:
    """Cut or zero-pad to the original length and restore the leading dims."""
    ori_len = shape[-1]
    if shifted.shape[-1] > ori_len:
        shifted = shifted[..., :ori_len]
    else:
        shifted = F.pad(shifted, (0, ori_len - shifted.shape[-1]))
    return shifted.reshape(*shape[:-1], ori_len)


def pitch_shift(waveform: ember.Tensor, sample_rate: int, n_steps: int, bins_per_octave: int = 12,
                n_fft: int = 512, win_length: int | None = None, hop_length: int | None = None,
                window: ember.Tensor | None = None) -> ember.Tensor:
    """Shift pitch by n_steps / bins_per_octave octaves: phase-vocoder stretch, then resample back."""
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    window = ember.hann_window(win_length, dtype=waveform.dtype, device=waveform.device) if window is None else window
    stretched = _stretch_waveform(waveform, n_steps, bins_per_octave, n_fft, win_length, hop_length, window)
    rate = 2.0 ** (-float(n_steps) / bins_per_octave)
    return _fix_waveform_shape(resample(stretched, int(sample_rate / rate), sample_rate), waveform.shape)


def mu_law_encoding(x: ember.Tensor, quantization_channels: int) -> ember.Tensor:
    """μ-law companding of x in [-1, 1] to int64 codes 0 … quantization_channels − 1."""
    mu = quantization_channels - 1.0
    if not x.is_floating_point():
        warnings.warn("The input Tensor must be of floating type; it is converted to float32.", stacklevel=2)
        x = x.to(ember.float32)
    x_mu = ember.sign(x) * ember.log1p(mu * ember.abs(x)) / math.log1p(mu)
    return ((x_mu + 1) / 2 * mu + 0.5).to(ember.int64)


def mu_law_decoding(x_mu: ember.Tensor, quantization_channels: int) -> ember.Tensor:
    """Inverse of mu_law_encoding: codes 0 … quantization_channels − 1 to [-1, 1]."""
    mu = quantization_channels - 1.0
    if not x_mu.is_floating_point():
        x_mu = x_mu.to(ember.float32)
    x = x_mu / mu * 2 - 1.0
    return ember.sign(x) * (ember.exp(ember.abs(x) * math.log1p(mu)) - 1.0) / mu


def edit_distance(seq1, seq2) -> int:
    """Levenshtein distance (insertions, deletions, substitutions) between two sequences."""
    prev = list(range(len(seq2) + 1))
    for i, a in enumerate(seq1, start=1):
        cur = [i] + [0] * len(seq2)
        for j, b in enumerate(seq2, start=1):
            cur[j] = prev[j - 1] if a == b else 1 + min(prev[j - 1], prev[j], cur[j - 1])
        prev = cur
    return int(prev[-1])


_LOUDNESS_CHANNEL_WEIGHTS = (1.0, 1.0, 1.0, 1.41, 1.41)   # L, R, C, Ls, Rs (ITU-R BS.1770-4)


def loudness(waveform: ember.Tensor, sample_rate: int) -> ember.Tensor:
    """Integrated loudness (LKFS) of (..., channels ≤ 5, time) by ITU-R BS.1770-4: K-weighting, 400 ms
    blocks with 75 % overlap, absolute gate −70 LKFS, relative gate −10 LU."""
    if waveform.dim() < 2:
        raise ValueError(f"loudness: expected (..., channels, time), but got shape {tuple(waveform.shape)}")
    if waveform.shape[-2] > 5:
        raise ValueError("Only up to 5 channels are supported.")
    gate_samples = int(round(0.4 * sample_rate))
    step = int(round(gate_samples * 0.25))
    if waveform.shape[-1] < gate_samples:
        raise ValueError(f"loudness: expected at least one 400 ms block ({gate_samples} samples), but got "
                         f"{waveform.shape[-1]}")
    # K-weighting: a high shelf (+4 dB at 1.5 kHz) then a 38 Hz high-pass (biquads clamp to [-1, 1], as torchaudio's)
    x = treble_biquad(waveform, sample_rate, 4.0, 1500.0, 1 / math.sqrt(2))
    x = highpass_biquad(x, sample_rate, 38.0, 0.5)
    energy = (x * x).unfold(-1, gate_samples, step).mean(-1)                 # (..., C, blocks)
    g = ember.tensor(_LOUDNESS_CHANNEL_WEIGHTS[: energy.shape[-2]], dtype=energy.dtype,
                     device=energy.device).unsqueeze(-1)
    block_loudness = -0.691 + 10 * ember.log10((g * energy).sum(-2))        # (..., blocks)

    def gated_loudness(keep: ember.Tensor) -> ember.Tensor:
        k = keep.to(energy.dtype).unsqueeze(-2)
        mean_energy = (k * energy).sum(-1) / k.sum(-1)                         # (..., C)
        return -0.691 + 10 * ember.log10((g.squeeze(-1) * mean_energy).sum(-1))

    above_abs = block_loudness > -70.0
    gamma_rel = gated_loudness(above_abs) - 10.0
    return gated_loudness(above_abs & (block_loudness > gamma_rel.unsqueeze(-1)))


def detect_pitch_frequency(waveform: ember.Tensor, sample_rate: int, frame_time: float = 10 ** (-2),
                           win_length: int = 30, freq_low: int = 85, freq_high: int = 3400) -> ember.Tensor:
    """Pitch (Hz) per frame of (..., time) → (..., frames): the lag of the normalised cross-correlation
    peak per frame (an earlier lag wins if within 1 % of the best), median-smoothed over win_length frames.

    As torchaudio, the correlation is divided by both frames' energies (not their geometric mean).
    """
    if waveform.dim() == 0:
        raise ValueError("detect_pitch_frequency: expected a waveform with a time dimension, but got a 0-dim tensor")
    eps = 1e-9
    shape = waveform.shape
    x = waveform.reshape(-1, shape[-1])
    lags = math.ceil(sample_rate / freq_low)
    lag_min = math.ceil(sample_rate / freq_high)
    if lags // 2 <= lag_min:
        raise ValueError(f"detect_pitch_frequency: freq_low {freq_low} Hz must be well below freq_high "
                         f"{freq_high} Hz (lags {lag_min}..{lags} leave no lower half to search)")
    frame_size = math.ceil(sample_rate * frame_time)
    n_frames = math.ceil(shape[-1] / frame_size)
    if n_frames == 0:
        raise ValueError("detect_pitch_frequency: expected a non-empty waveform")
    x = F.pad(x, (0, lags + n_frames * frame_size - shape[-1]))
    # each frame with its next `lags` samples; s2[..., l-1, :] is the frame shifted by lag l
    span = x.unfold(-1, frame_size + lags, frame_size)[:, :n_frames]                 # (B, F, fs + lags)
    s1 = span[..., :frame_size]
    s2 = span.unfold(-1, frame_size, 1)[..., 1:lags + 1, :]                          # (B, F, lags, fs)
    e1 = (eps + (s1 * s1).sum(-1).sqrt()) ** 2
    e2 = (eps + (s2 * s2).sum(-1).sqrt()) ** 2
    nccf = (s1.unsqueeze(-2) * s2).sum(-1) / e1.unsqueeze(-1) / e2                   # (B, F, lags)

    best_v, best_i = nccf[..., lag_min:].max(-1)
    half_v, half_i = nccf[..., lag_min:lags // 2].max(-1)
    idx = ember.where(half_v > 0.99 * best_v, half_i, best_i) + lag_min + 1

    pad = (win_length - 1) // 2
    idx = ember.cat([idx[..., :1].expand(*idx.shape[:-1], pad), idx], dim=-1)
    if idx.shape[-1] < win_length:
        raise ValueError(f"detect_pitch_frequency: {n_frames} frames are fewer than the median window "
                         f"win_length={win_length} allows")
    # lag indices are small integers, exact in float64 (ember's median along a dim fails on int64 input)
    smoothed = ember.median(idx.to(ember.float64).unfold(-1, win_length, 1), -1).values
    freq = sample_rate / (eps + smoothed.to(waveform.dtype if waveform.is_floating_point() else ember.float32))
    return freq.reshape(*shape[:-1], freq.shape[-1])
