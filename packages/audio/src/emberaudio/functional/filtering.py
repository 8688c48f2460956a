"""IIR/FIR filtering in the shape of torchaudio.functional.filtering: ``lfilter`` and ``filtfilt``,
the Audio-EQ-cookbook biquads (lowpass … bass, deemph, riaa) and the SoX-style effects ``contrast``,
``dcshift``, ``gain`` and ``dither``, and SoX's voice-activity trimmer ``vad``.

All of it is built from ember ops, so gradients flow to the waveform and to the coefficients.
"""

from __future__ import annotations

import math
import warnings

import ember
import ember.nn.functional as F

__all__ = [
    "allpass_biquad", "band_biquad", "bandpass_biquad", "bandreject_biquad", "bass_biquad", "biquad",
    "contrast", "dcshift", "deemph_biquad", "dither", "equalizer_biquad", "filtfilt", "gain", "highpass_biquad",
    "lfilter", "lowpass_biquad", "riaa_biquad", "treble_biquad", "vad",
]

# Note [blocked IIR]
# ~~~~~~~~~~~~~~~~~~
# y[n] = x'[n] - a1 y[n-1] - ... - aK y[n-K], with x' the FIR part (b ∗ x, one conv1d). With the state
# s_n = [y[n-1], ..., y[n-K]] and the companion matrix A (first row c = -a[1:], identity below it),
# y[n] = c·s_n + x'[n] and s_{n+1} = A s_n + e1 x'[n]. Over a block of B samples starting at n0:
#
#     y[n0+j] = G[j]·s_{n0} + Σ_{i≤j} h[j-i] x'[n0+i],     G[j] = c A^j,  h[0] = 1, h[m] = G[m-1][0]
#
# so every block's input part is one batched matmul with the Toeplitz matrix of h, and only the K-long
# state hops from block to block (its next value is the block's last K outputs). G comes from log2(B)
# matrix squarings. Cost: O(T·B) multiply-adds per channel instead of O(T·K), but T/B Python steps of
# tiny ops instead of T; no native loop is needed and autograd sees only ember ops.
_BLOCK = 64


def _iir(x: ember.Tensor, a: ember.Tensor) -> ember.Tensor:
    """All-pole part: x (N, F, T) already FIR-filtered, a (F, K+1) with a[:, 0] == 1."""
    n, nf, t = x.shape
    k = a.shape[1] - 1
    if k == 0 or t == 0:
        return x
    b = max(_BLOCK, k)
    dtype, dev = x.dtype, x.device
    # the block kernels are built in float64 (powers of A lose digits in float32 for poles near 1)
    c = -a[:, 1:].to(ember.float64)                                   # (F, K)
    work = ember.float64
    # companion matrix A (F, K, K)
    shift = ember.eye(k, dtype=work, device=dev)[:-1] if k > 1 else ember.zeros(0, k, dtype=work, device=dev)
    comp = ember.cat([c.unsqueeze(1), shift.unsqueeze(0).expand(nf, k - 1, k)], dim=1)
    g = c.unsqueeze(1)                                                # G[0:1] (F, 1, K)
    power = comp                                                      # A^len(g)
    while g.shape[1] < b:
        g = ember.cat([g, ember.matmul(g, power)], dim=1)
        power = ember.matmul(power, power)
    g = g[:, :b]                                                      # (F, B, K)
    h = ember.cat([ember.ones(nf, 1, dtype=work, device=dev), g[:, : b - 1, 0]], dim=1)   # (F, B)
    j = ember.arange(b, device=dev).unsqueeze(1)
    i = ember.arange(b, device=dev).unsqueeze(0)
    lag = (j - i).clamp(min=0)
    toeplitz = (h[:, lag] * (j >= i).to(work)).to(dtype)              # (F, B, B)
    g = g.to(dtype)
    nblocks = -(-t // b)
    xp = F.pad(x, (0, nblocks * b - t)).reshape(n, nf, nblocks, b)
    z = ember.matmul(xp, toeplitz.transpose(-1, -2))                  # (N, F, nb, B)
    g_last = g[:, b - k:].flip(1).unsqueeze(0)                        # next state from state (F, K, K)
    # one unbind, not a slice per block: ember's backward of many slices of one tensor is slow
    z_tail = z[..., b - k:].flip(-1).unbind(2)
    state = ember.zeros(n, nf, k, dtype=dtype, device=dev)
    states = []
    for blk in range(nblocks):
        states.append(state)
        if blk + 1 < nblocks:
            state = z_tail[blk] + ember.matmul(g_last, state.unsqueeze(-1)).squeeze(-1)
    s = ember.stack(states, dim=2)                                    # (N, F, nb, K)
    y = z + ember.matmul(s, g.transpose(-1, -2))
    return y.reshape(n, nf, nblocks * b)[..., :t]


def lfilter(waveform: ember.Tensor, a_coeffs: ember.Tensor, b_coeffs: ember.Tensor, clamp: bool = True,
            batching: bool = True) -> ember.Tensor:
    """IIR filter by the difference equation (torchaudio.functional.lfilter).

    ``a_coeffs``/``b_coeffs`` are (K+1,) or (num_filters, K+1); with 2-D coefficients and
    ``batching=True`` the waveform is (..., num_filters, time) and filter i runs on channel i, with
    ``batching=False`` every filter runs on the whole waveform, giving (..., num_filters, time).
    Output clamped to [-1, 1] when ``clamp``.
    """
    if not waveform.is_floating_point():
        raise TypeError(f"lfilter: expected a floating point waveform, but got {waveform.dtype}")
    if a_coeffs.shape != b_coeffs.shape:
        raise ValueError(f"lfilter: expected a_coeffs and b_coeffs of the same size, but got "
                         f"{tuple(a_coeffs.shape)} and {tuple(b_coeffs.shape)}")
    if a_coeffs.dim() not in (1, 2) or a_coeffs.shape[-1] == 0:
        raise ValueError(f"lfilter: expected 1-D or 2-D non-empty coefficients, but got shape "
                         f"{tuple(a_coeffs.shape)}")
    if waveform.dim() == 0:
        raise ValueError("lfilter: expected a waveform with a time dimension, but got a 0-dim tensor")
    a_coeffs = a_coeffs.to(waveform.dtype)
    b_coeffs = b_coeffs.to(waveform.dtype)
    if a_coeffs.dim() == 2:
        if batching:
            if waveform.dim() < 2 or waveform.shape[-2] != a_coeffs.shape[0]:
                raise ValueError(f"lfilter: with batching, expected waveform (..., {a_coeffs.shape[0]}, time) "
                                 f"for {a_coeffs.shape[0]} filters, but got {tuple(waveform.shape)}")
        else:
            waveform = waveform.unsqueeze(-2).expand(*waveform.shape[:-1], a_coeffs.shape[0],
                                                    waveform.shape[-1])
    else:
        a_coeffs = a_coeffs.unsqueeze(0)
        b_coeffs = b_coeffs.unsqueeze(0)
    shape = waveform.shape
    if waveform.numel() == 0:
        return waveform * 0
    nf, order = a_coeffs.shape
    x = waveform.reshape(-1, nf, shape[-1])
    a0 = a_coeffs[:, :1]
    if bool((a0 == 0).any()):
        raise ValueError("lfilter: expected a non-zero leading denominator coefficient a_coeffs[..., 0], but got 0")
    a_n = a_coeffs / a0
    b_n = b_coeffs / a0
    # FIR part: causal correlation with flipped b, one group per filter
    fir = F.conv1d(F.pad(x, (order - 1, 0)), b_n.flip(1).unsqueeze(1), groups=nf)
    out = _iir(fir, a_n)
    if clamp:
        out = ember.clamp(out, -1.0, 1.0)
    return out.reshape(shape)


def filtfilt(waveform: ember.Tensor, a_coeffs: ember.Tensor, b_coeffs: ember.Tensor,
             clamp: bool = True) -> ember.Tensor:
    """Forward-backward (zero-phase) filtering; only the final pass is clamped."""
    forward = lfilter(waveform, a_coeffs, b_coeffs, clamp=False, batching=True)
    return lfilter(forward.flip(-1), a_coeffs, b_coeffs, clamp=clamp, batching=True).flip(-1)


def _coef(value, like: ember.Tensor) -> ember.Tensor:
    return ember.as_tensor(value, dtype=like.dtype).reshape(1)


def biquad(waveform: ember.Tensor, b0, b1, b2, a0, a1, a2) -> ember.Tensor:
    """Second-order IIR filter (coefficients floats or 1-element tensors)."""
    a = ember.cat([_coef(a0, waveform), _coef(a1, waveform), _coef(a2, waveform)])
    b = ember.cat([_coef(b0, waveform), _coef(b1, waveform), _coef(b2, waveform)])
    return lfilter(waveform, a, b)


def _w0_alpha(sample_rate: int, freq, q):
    """w0, alpha = sin(w0)/(2Q), cos(w0), sin(w0); tensors in (differentiable), tensors out."""
    w0 = 2 * math.pi * freq / sample_rate
    if isinstance(w0, ember.Tensor) or isinstance(q, ember.Tensor):
        w0 = ember.as_tensor(w0)
        sin, cos = ember.sin(w0), ember.cos(w0)
    else:
        sin, cos = math.sin(w0), math.cos(w0)
    return w0, sin / 2 / q, cos, sin


def lowpass_biquad(waveform: ember.Tensor, sample_rate: int, cutoff_freq: float, Q: float = 0.707) -> ember.Tensor:
    _, alpha, cos, _ = _w0_alpha(sample_rate, cutoff_freq, Q)
    b0 = (1 - cos) / 2
    return biquad(waveform, b0, 1 - cos, b0, 1 + alpha, -2 * cos, 1 - alpha)


def highpass_biquad(waveform: ember.Tensor, sample_rate: int, cutoff_freq: float, Q: float = 0.707) -> ember.Tensor:
    _, alpha, cos, _ = _w0_alpha(sample_rate, cutoff_freq, Q)
    b0 = (1 + cos) / 2
    return biquad(waveform, b0, -1 - cos, b0, 1 + alpha, -2 * cos, 1 - alpha)


def bandpass_biquad(waveform: ember.Tensor, sample_rate: int, central_freq: float, Q: float = 0.707,
                    const_skirt_gain: bool = False) -> ember.Tensor:
    _, alpha, cos, sin = _w0_alpha(sample_rate, central_freq, Q)
    temp = sin / 2 if const_skirt_gain else alpha
    return biquad(waveform, temp, 0.0, -temp, 1 + alpha, -2 * cos, 1 - alpha)


def bandreject_biquad(waveform: ember.Tensor, sample_rate: int, central_freq: float, Q: float = 0.707) -> ember.Tensor:
    _, alpha, cos, _ = _w0_alpha(sample_rate, central_freq, Q)
    return biquad(waveform, 1.0, -2 * cos, 1.0, 1 + alpha, -2 * cos, 1 - alpha)


def allpass_biquad(waveform: ember.Tensor, sample_rate: int, central_freq: float, Q: float = 0.707) -> ember.Tensor:
    _, alpha, cos, _ = _w0_alpha(sample_rate, central_freq, Q)
    return biquad(waveform, 1 - alpha, -2 * cos, 1 + alpha, 1 + alpha, -2 * cos, 1 - alpha)


def _amp(gain):
    return math.exp(gain / 40 * math.log(10))


def equalizer_biquad(waveform: ember.Tensor, sample_rate: int, center_freq: float, gain: float,
                     Q: float = 0.707) -> ember.Tensor:
    _, alpha, cos, _ = _w0_alpha(sample_rate, center_freq, Q)
    a = _amp(gain)
    return biquad(waveform, 1 + alpha * a, -2 * cos, 1 - alpha * a, 1 + alpha / a, -2 * cos, 1 - alpha / a)


def band_biquad(waveform: ember.Tensor, sample_rate: int, central_freq: float, Q: float = 0.707,
                noise: bool = False) -> ember.Tensor:
    """Two-pole band-pass (SoX ``band``); ``noise`` switches to the unpitched-audio gain."""
    w0 = 2 * math.pi * central_freq / sample_rate
    bw_hz = central_freq / Q
    a2 = math.exp(-2 * math.pi * bw_hz / sample_rate)
    a1 = -4 * a2 / (1 + a2) * math.cos(w0)
    b0 = math.sqrt(1 - a1 * a1 / (4 * a2)) * (1 - a2)
    if noise:
        b0 = math.sqrt(((1 + a2) * (1 + a2) - a1 * a1) * (1 - a2) / (1 + a2))
    return biquad(waveform, b0, 0.0, 0.0, 1.0, a1, a2)


def _shelf(sample_rate, gain, central_freq, alpha_fn, high: bool):
    w0 = 2 * math.pi * central_freq / sample_rate
    a = _amp(gain)
    alpha = alpha_fn(w0, a)
    t1 = 2 * math.sqrt(a) * alpha
    t2 = (a - 1) * math.cos(w0)
    t3 = (a + 1) * math.cos(w0)
    if high:
        return (a * ((a + 1) + t2 + t1), -2 * a * ((a - 1) + t3), a * ((a + 1) + t2 - t1),
                (a + 1) - t2 + t1, 2 * ((a - 1) - t3), (a + 1) - t2 - t1)
    return (a * ((a + 1) - t2 + t1), 2 * a * ((a - 1) - t3), a * ((a + 1) - t2 - t1),
            (a + 1) + t2 + t1, -2 * ((a - 1) + t3), (a + 1) + t2 - t1)


def treble_biquad(waveform: ember.Tensor, sample_rate: int, gain: float, central_freq: float = 3000,
                  Q: float = 0.707) -> ember.Tensor:
    return biquad(waveform, *_shelf(sample_rate, gain, central_freq, lambda w0, a: math.sin(w0) / 2 / Q, True))


def bass_biquad(waveform: ember.Tensor, sample_rate: int, gain: float, central_freq: float = 100,
                Q: float = 0.707) -> ember.Tensor:
    return biquad(waveform, *_shelf(sample_rate, gain, central_freq, lambda w0, a: math.sin(w0) / 2 / Q, False))


def deemph_biquad(waveform: ember.Tensor, sample_rate: int) -> ember.Tensor:
    """ISO 908 CD de-emphasis (a treble shelf), 44.1 kHz or 48 kHz only."""
    if sample_rate == 44100:
        central_freq, width_slope, gain = 5283, 0.4845, -9.477
    elif sample_rate == 48000:
        central_freq, width_slope, gain = 5356, 0.479, -9.62
    else:
        raise ValueError("Sample rate must be 44100 (audio-CD) or 48000 (DAT)")

    def alpha(w0, a):
        return math.sin(w0) / 2 * math.sqrt((a + 1 / a) * (1 / width_slope - 1) + 2)

    return biquad(waveform, *_shelf(sample_rate, gain, central_freq, alpha, True))


_RIAA = {  # sample rate: (zeros, poles) of SoX's RIAA vinyl playback equalisation
    44100: ((-0.2014898, 0.9233820), (0.7083149, 0.9924091)),
    48000: ((-0.1766069, 0.9321590), (0.7396325, 0.9931330)),
    88200: ((-0.1168735, 0.9648312), (0.8590646, 0.9964002)),
    96000: ((-0.1141486, 0.9676817), (0.8699137, 0.9966946)),
}


def riaa_biquad(waveform: ember.Tensor, sample_rate: int) -> ember.Tensor:
    """RIAA playback equalisation, normalised to 0 dB at 1 kHz."""
    if sample_rate not in _RIAA:
        raise ValueError("Sample rate must be 44.1k, 48k, 88.2k, or 96k")
    (z0, z1), (p0, p1) = _RIAA[sample_rate]
    b = [1.0, -(z0 + z1), z0 * z1]
    a = [1.0, -(p0 + p1), p0 * p1]
    w = 2 * math.pi * 1000 / sample_rate
    hb = sum(bk * complex(math.cos(-k * w), math.sin(-k * w)) for k, bk in enumerate(b))
    ha = sum(ak * complex(math.cos(-k * w), math.sin(-k * w)) for k, ak in enumerate(a))
    g = abs(ha) / abs(hb)
    return biquad(waveform, b[0] * g, b[1] * g, b[2] * g, *a)


def contrast(waveform: ember.Tensor, enhancement_amount: float = 75.0) -> ember.Tensor:
    """SoX ``contrast``: sin(πx/2 + c·sin(2πx)), c = enhancement_amount / 750."""
    if not 0 <= enhancement_amount <= 100:
        raise ValueError("Allowed range of values for enhancement_amount : 0-100")
    c = enhancement_amount / 750.0
    t = waveform * (math.pi / 2)
    return ember.sin(t + c * ember.sin(t * 4))


def dcshift(waveform: ember.Tensor, shift: float, limiter_gain: float | None = None) -> ember.Tensor:
    """SoX ``dcshift``: add ``shift``, with an optional limiter on the side the shift pushes toward.

    Unlike torchaudio 2.2 (which writes into its input), the input is left unchanged.
    """
    if limiter_gain is None or shift == 0:
        return ember.clamp(waveform + shift, -1.0, 1.0)
    thr = 1.0 - (abs(shift) - limiter_gain)
    plain = ember.clamp(waveform + shift, -1.0, 1.0)
    if shift > 0:
        limited = ember.clamp((waveform - thr) * limiter_gain / (1 - thr) + thr + shift, max=thr)
        return ember.where(waveform > thr, limited, plain)
    limited = ember.clamp((waveform + thr) * limiter_gain / (1 - thr) - thr + shift, min=-thr)
    return ember.where(waveform < -thr, limited, plain)


def gain(waveform: ember.Tensor, gain_db: float = 1.0) -> ember.Tensor:
    """Scale by ``gain_db`` decibels (amplitude)."""
    if gain_db == 0:
        return waveform
    return waveform * (10 ** (gain_db / 20))


def _vad_measures(frames_spec: ember.Tensor, spectrum_start: int, spectrum_end: int, cepstrum_window: ember.Tensor,
                  cepstrum_start: int, cepstrum_end: int, dft_len: int, noise_reduction_amount: float,
                  smooth_mult: float, noise_up_mult: float, noise_down_mult: float, boot_count_max: int) -> list:
    """Per measurement frame (…, frames, bins) the cepstral voice measure of SoX's ``vad``.

    The smoothed spectrum and the noise estimate are recursive over frames (a loop over
    measurement frames, 20 per second by default, not samples); the cepstra are then one rfft.
    """
    chans, n_frames, _ = frames_spec.shape
    spectrum = ember.zeros(chans, spectrum_end - spectrum_start, dtype=frames_spec.dtype, device=frames_spec.device)
    noise = ember.zeros_like(spectrum)
    boot = 0
    cleaned = []
    for f in range(n_frames):
        mult = boot / (1.0 + boot) if boot >= 0 else smooth_mult
        spectrum = spectrum * mult + frames_spec[:, f] * (1 - mult)
        power = spectrum * spectrum
        if boot >= 0:
            noise = power.clone()
        else:
            nm = ember.where(power > noise, ember.full_like(power, noise_up_mult), ember.full_like(power, noise_down_mult))
            noise = noise * nm + power * (1 - nm)
        cleaned.append(ember.sqrt(ember.clamp(power - noise_reduction_amount * noise, min=0.0)))
        if boot >= 0:
            boot = -1 if boot == boot_count_max else boot + 1
    d = ember.stack(cleaned, dim=1) * cepstrum_window                  # (C, frames, S)
    buf = F.pad(d, (spectrum_start, dft_len // 2 - spectrum_end))
    cep = ember.fft.rfft(buf).abs().pow(2)[..., cepstrum_start:cepstrum_end].sum(-1)
    mean = (cep / (cepstrum_end - cepstrum_start)).double().cpu().numpy()
    out = []
    for ch in mean:
        out.append([max(0.0, 21 + math.log(v)) if v > 0 else 0.0 for v in ch])
    return out


def vad(waveform: ember.Tensor, sample_rate: int, trigger_level: float = 7.0, trigger_time: float = 0.25,
        search_time: float = 1.0, allowed_gap: float = 0.25, pre_trigger_time: float = 0.0, boot_time: float = 0.35,
        noise_up_time: float = 0.1, noise_down_time: float = 0.01, noise_reduction_amount: float = 1.35,
        measure_freq: float = 20.0, measure_duration: float | None = None, measure_smooth_time: float = 0.4,
        hp_filter_freq: float = 50.0, lp_filter_freq: float = 6000.0, hp_lifter_freq: float = 150.0,
        lp_lifter_freq: float = 2000.0) -> ember.Tensor:
    """Trim leading silence/noise (SoX ``vad``): (channels, time) or (time,) → the audio from the
    first voice activity in any channel (minus the searched quieter bursts and pre-trigger time);
    an empty time axis if nothing triggers.

    Measures are the cepstral power (150–2000 Hz lifter) of noise-reduced spectra of overlapping
    frames. Unlike torchaudio 2.2, a start before the first sample is clamped to 0 instead of
    wrapping around as a negative index.
    """
    if waveform.dim() == 0:
        raise ValueError("vad: expected a waveform (channels, time) or (time,), but got a 0-dim tensor")
    if not waveform.is_floating_point():
        raise TypeError(f"vad: expected a floating point waveform, but got {waveform.dtype}")
    if waveform.dim() > 2:
        warnings.warn(f"Expected input tensor dimension of 1 for single channel or 2 for multi-channel. Got "
                      f"{waveform.dim()} instead. Batch semantics is not supported: all leading dims are treated "
                      f"as channels of one recording.", stacklevel=2)
    measure_duration = 2.0 / measure_freq if measure_duration is None else measure_duration
    measure_len = int(sample_rate * measure_duration + 0.5)
    dft_len = 16
    while dft_len < measure_len:
        dft_len *= 2
    period = int(sample_rate / measure_freq + 0.5)
    measures_len = math.ceil(search_time * measure_freq)
    gap_len = int(allowed_gap * measure_freq + 0.5)
    fixed_pre_trigger = int(pre_trigger_time * sample_rate + 0.5)

    spectrum_start = max(int(hp_filter_freq / sample_rate * dft_len + 0.5), 1)
    spectrum_end = min(int(lp_filter_freq / sample_rate * dft_len + 0.5), dft_len // 2)
    cepstrum_start = math.ceil(sample_rate * 0.5 / lp_lifter_freq)
    cepstrum_end = min(math.floor(sample_rate * 0.5 / hp_lifter_freq), dft_len // 4)
    if cepstrum_end <= cepstrum_start:
        raise ValueError(f"Expected cepstrum_start to be smaller than cepstrum_end. Found: cepstrum_start: "
                         f"{cepstrum_start}, cepstrum_end: {cepstrum_end}.")
    if spectrum_end <= spectrum_start:
        raise ValueError(f"vad: empty analysis band: hp_filter_freq {hp_filter_freq} Hz and lp_filter_freq "
                         f"{lp_filter_freq} Hz leave no DFT bins at sample rate {sample_rate}")
    dtype = waveform.dtype
    spectrum_window = ember.hann_window(measure_len, dtype=dtype, device=waveform.device) * (2.0 / math.sqrt(measure_len))
    cepstrum_window = ember.hann_window(spectrum_end - spectrum_start, dtype=dtype, device=waveform.device) \
        * (2.0 / math.sqrt(spectrum_end - spectrum_start))

    shape = waveform.shape
    if waveform.numel() == 0:
        return waveform[..., :0]
    x = waveform.reshape(-1, shape[-1])
    chans, length = x.shape
    # measurement frame f covers samples [pos_f - measure_len, pos_f), pos_f = measure_len + f·period < length
    n_frames = 0 if length <= measure_len else -(-(length - measure_len) // period)
    if n_frames == 0:
        return waveform[..., :0]
    frames = x.unfold(-1, measure_len, period)[:, :n_frames] * spectrum_window
    spec = ember.fft.rfft(frames, n=dft_len).abs()[..., spectrum_start:spectrum_end]
    meas = _vad_measures(spec, spectrum_start, spectrum_end, cepstrum_window, cepstrum_start, cepstrum_end, dft_len,
                         noise_reduction_amount, math.exp(-1.0 / (measure_smooth_time * measure_freq)),
                         math.exp(-1.0 / (noise_up_time * measure_freq)),
                         math.exp(-1.0 / (noise_down_time * measure_freq)), int(boot_time * measure_freq - 0.5))

    trigger_mult = math.exp(-1.0 / (trigger_time * measure_freq))
    ring = [[0.0] * measures_len for _ in range(chans)]
    mean_meas = [0.0] * chans
    triggered = False
    to_flush = 0
    for f in range(n_frames):
        idx = f % measures_len
        for ch in range(chans):
            ring[ch][idx] = meas[ch][f]
            mean_meas[ch] = mean_meas[ch] * trigger_mult + meas[ch][f] * (1.0 - trigger_mult)
            triggered = triggered or mean_meas[ch] >= trigger_level
            if triggered:
                # walk back from the newest measure; keep earlier loud bursts separated by at most gap_len
                j_trigger = j_zero = measures_len
                k = idx
                for j in range(measures_len):
                    if ring[ch][k] >= trigger_level and j <= j_trigger + gap_len:
                        j_zero = j_trigger = j
                    elif ring[ch][k] == 0 and j_trigger >= j_zero:
                        j_zero = j
                    k = (k + measures_len - 1) % measures_len
                to_flush = min(max(to_flush, min(measures_len - 1, j_zero)), measures_len)
        if triggered:
            pos = measure_len + f * period
            start = pos - measure_len - fixed_pre_trigger - to_flush * period
            return waveform[..., max(start, 0):]
    return waveform[..., :0]


_DITHER_LSB = 2.0 ** 15


def dither(waveform: ember.Tensor, density_function: str = "TPDF", noise_shaping: bool = False) -> ember.Tensor:
    """Quantise to 16-bit steps with dither noise: "TPDF" (triangular, two uniforms), "RPDF" (one uniform
    in ±½ LSB) or "GPDF" (near-Gaussian, six uniforms). ``noise_shaping`` adds each sample's
    quantisation error to the next sample.

    Differs from torchaudio 2.2 on purpose: that version adds a fixed Bartlett window (TPDF) or other
    samples of the waveform itself (RPDF/GPDF) instead of random noise, scales by 2^15 − 2 on the way in
    and 2^15 on the way out, and takes any unknown name as TPDF. Here the noise is random (ember's RNG), both
    scalings are 2^15, and an unknown name raises ValueError.
    """
    if density_function not in ("TPDF", "RPDF", "GPDF"):
        raise ValueError(f'density_function must be one of "TPDF", "RPDF" or "GPDF", but got {density_function!r}')
    if not waveform.is_floating_point():
        raise TypeError(f"dither: expected a floating point waveform, but got {waveform.dtype}")
    shape, dtype = waveform.shape, waveform.dtype
    n_uniform = {"RPDF": 1, "TPDF": 2, "GPDF": 6}[density_function]
    noise = ember.rand(n_uniform, *shape, dtype=dtype, device=waveform.device).sum(0) - n_uniform / 2
    dithered = ember.round(waveform * _DITHER_LSB + noise) / _DITHER_LSB
    if not noise_shaping or waveform.dim() == 0 or shape[-1] == 0:
        return dithered
    error = dithered - waveform
    return dithered + F.pad(error[..., :-1], (1, 0))
