"""emberaudio.functional (spectral and sample-domain functions) against float64 NumPy references."""

import math
import os
import sys

import numpy as np
import pytest

import ember
import emberaudio.functional as AF

sys.path.insert(0, os.path.dirname(__file__))
from _dsp_ref import hann, istft, stft  # noqa: E402

RNG = np.random.default_rng(1)


def t(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def leaf(a):
    return t(np.asarray(a, dtype=np.float64)).requires_grad_(True)


# ---------------------------------------------------------------- spectrogram and inverse

@pytest.mark.parametrize("power", [None, 1.0, 2.0, 0.5])
@pytest.mark.parametrize("normalized", [False, True, "frame_length"])
def test_spectrogram_matches_direct_dft(power, normalized):
    x = RNG.standard_normal((2, 3, 200))
    w = hann(48)
    got = AF.spectrogram(t(x), 0, t(w), 64, 16, 48, power, normalized).numpy()
    ref = stft(x, 64, 16, w)
    if normalized is True:
        ref = ref / np.sqrt((w ** 2).sum())
    elif normalized == "frame_length":
        ref = ref / np.sqrt(64)
    if power is not None:
        ref = np.abs(ref) ** power
    assert got.shape == (2, 3, 33, 1 + 200 // 16)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)


def test_spectrogram_pad_noncontiguous_float32_and_zero_batch():
    x = RNG.standard_normal((150, 2))
    w = hann(32)
    got = AF.spectrogram(t(x).t(), 5, t(w), 32, 8, 32, 2.0, False).numpy()
    ref = np.abs(stft(np.pad(x.T, ((0, 0), (5, 5))), 32, 8, w)) ** 2
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9)
    got32 = AF.spectrogram(t(x.T.astype(np.float32)), 0, ember.hann_window(32), 32, 8, 32, 2.0, False)
    assert got32.dtype == ember.float32
    np.testing.assert_allclose(got32.numpy(), np.abs(stft(x.T, 32, 8, w)) ** 2, rtol=1e-3, atol=1e-3)
    assert AF.spectrogram(ember.zeros(0, 100, dtype=ember.float64), 0, t(w), 32, 8, 32, 2.0, False).shape == (0, 17, 13)


def test_spectrogram_gradcheck_and_errors():
    w = t(hann(8))
    x = leaf(RNG.standard_normal((2, 24)))
    assert ember.autograd.gradcheck(lambda v: AF.spectrogram(v, 1, w, 8, 4, 8, 2.0, True), (x,))
    with pytest.raises(ValueError, match="Invalid normalized parameter: bogus"):
        AF.spectrogram(x, 0, w, 8, 4, 8, 2.0, "bogus")
    with pytest.raises(TypeError, match="Input type not supported"):
        AF.spectrogram(x, 0, w, 8, 4, 8, 2.0, None)
    with pytest.warns(UserWarning, match="`return_complex` argument is now deprecated"):
        assert AF.spectrogram(x, 0, w, 8, 4, 8, None, False, return_complex=True).is_complex()


def test_inverse_spectrogram_roundtrip_and_reference():
    x = RNG.standard_normal((2, 130))
    w = hann(32)
    spec = AF.spectrogram(t(x), 3, t(w), 32, 8, 32, None, True)
    back = AF.inverse_spectrogram(spec, 130, 3, t(w), 32, 8, 32, True)
    np.testing.assert_allclose(back.numpy(), x, atol=1e-10)
    s = stft(x, 32, 8, w)
    np.testing.assert_allclose(AF.inverse_spectrogram(t(s), None, 0, t(w), 32, 8, 32, False).numpy(),
                               istft(s, 32, 8, w), atol=1e-10)
    with pytest.raises(ValueError, match="Expected `spectrogram` to be complex dtype."):
        AF.inverse_spectrogram(t(np.abs(s)), None, 0, t(w), 32, 8, 32, False)
    re = leaf(s.real[:1, :, :4].copy())
    im = leaf(s.imag[:1, :, :4].copy())
    assert ember.autograd.gradcheck(
        lambda a, b: AF.inverse_spectrogram(ember.complex(a, b), None, 0, t(w), 32, 8, 32, False), (re, im))


def griffinlim_ref(mag, w, n_fft, hop, power, n_iter, momentum, length):
    """Fast Griffin-Lim (Perraudin et al.) from zero phase, with the reference STFT pair."""
    mag = mag ** (1 / power)
    angles = np.ones_like(mag, dtype=complex)
    tprev = None
    alpha = momentum / (1 + momentum)
    for _ in range(n_iter):
        rebuilt = stft(istft(mag * angles, n_fft, hop, w, length=length), n_fft, hop, w)
        angles = rebuilt - alpha * tprev if tprev is not None else rebuilt
        angles = angles / (np.abs(angles) + 1e-16)
        tprev = rebuilt
    return istft(mag * angles, n_fft, hop, w, length=length)


@pytest.mark.parametrize("momentum", [0.0, 0.9])
def test_griffinlim_matches_reference(momentum):
    x = RNG.standard_normal((2, 100))
    w = hann(32)
    mag = np.abs(stft(x, 32, 8, w)) ** 2
    got = AF.griffinlim(t(mag), t(w), 32, 8, 32, 2.0, 4, momentum, 100, False).numpy()
    np.testing.assert_allclose(got, griffinlim_ref(mag, w, 32, 8, 2.0, 4, momentum, 100), atol=1e-9)
    with pytest.raises(ValueError, match=r"momentum must be in range \[0, 1\). Found: 1.0"):
        AF.griffinlim(t(mag), t(w), 32, 8, 32, 2.0, 4, 1.0, 100, False)


def test_griffinlim_reduces_spectral_error():
    sr = 8000
    x = np.sin(2 * np.pi * 440 * np.arange(800) / sr)[None]
    w = hann(64)
    mag = np.abs(stft(x, 64, 16, w))

    def err(n_iter):
        y = AF.griffinlim(t(mag), t(w), 64, 16, 64, 1.0, n_iter, 0.99, 800, True).numpy()
        return np.linalg.norm(np.abs(stft(y, 64, 16, w)) - mag) / np.linalg.norm(mag)

    ember.manual_seed(0)
    assert err(30) < 0.5 * err(0)


# ---------------------------------------------------------------- dB

def test_amplitude_to_db_and_back():
    x = np.abs(RNG.standard_normal((2, 3, 5, 7))) + 1e-3
    x[0, 0, 0, 0] = 0.0
    got = AF.amplitude_to_DB(t(x), 10.0, 1e-10, 0.0).numpy()
    ref = 10 * np.log10(np.maximum(x, 1e-10))
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    got = AF.amplitude_to_DB(t(x), 20.0, 1e-10, math.log10(2.0), top_db=30.0).numpy()
    ref = 20 * np.log10(np.maximum(x, 1e-10)) - 20 * math.log10(2.0)
    floor = ref.reshape(2, -1).max(axis=1) - 30.0            # per item, over (channel, freq, time)
    np.testing.assert_allclose(got, np.maximum(ref, floor[:, None, None, None]), rtol=1e-12)
    x2 = x[0, 0]
    got = AF.amplitude_to_DB(t(x2), 10.0, 1e-10, 0.0, top_db=5.0).numpy()
    r2 = 10 * np.log10(np.maximum(x2, 1e-10))
    np.testing.assert_allclose(got, np.maximum(r2, r2.max() - 5.0), rtol=1e-12)
    db = RNG.uniform(-40, 10, (3, 4))
    np.testing.assert_allclose(AF.DB_to_amplitude(t(db), 2.0, 0.5).numpy(), 2.0 * (10 ** (0.1 * db)) ** 0.5,
                               rtol=1e-12)
    xg = leaf(x[1, 0, :2, :3])
    assert ember.autograd.gradcheck(lambda v: AF.amplitude_to_DB(v, 10.0, 1e-10, 0.0), (xg,))
    assert AF.amplitude_to_DB(ember.zeros(0, 2, 3, 4), 10.0, 1e-10, 0.0, top_db=80.0).shape == (0, 2, 3, 4)


# ---------------------------------------------------------------- filterbanks and DCT

def hz_to_mel(f, scale):
    if scale == "htk":
        return 2595 * np.log10(1 + f / 700)
    f = np.asarray(f, dtype=np.float64)
    return np.where(f >= 1000, 15 + np.log(np.maximum(f, 1e-300) / 1000) / (np.log(6.4) / 27), 3 * f / 200)


def mel_to_hz(m, scale):
    if scale == "htk":
        return 700 * (10 ** (m / 2595) - 1)
    return np.where(m >= 15, 1000 * np.exp(np.log(6.4) / 27 * (m - 15)), 200 * m / 3)


def tri_ref(freqs, pts):
    """fb[i, m]: rises linearly from pts[m] to 1 at pts[m+1], falls to 0 at pts[m+2]."""
    fb = np.zeros((len(freqs), len(pts) - 2))
    for m in range(len(pts) - 2):
        lo, c, hi = pts[m], pts[m + 1], pts[m + 2]
        for i, f in enumerate(freqs):
            if lo <= f <= c and c > lo:
                fb[i, m] = (f - lo) / (c - lo)
            elif c < f <= hi:
                fb[i, m] = (hi - f) / (hi - c)
    return fb


@pytest.mark.parametrize("mel_scale", ["htk", "slaney"])
@pytest.mark.parametrize("norm", [None, "slaney"])
def test_melscale_fbanks(mel_scale, norm):
    n_freqs, n_mels, sr, fmin, fmax = 65, 12, 16000, 40.0, 7000.0
    got = AF.melscale_fbanks(n_freqs, fmin, fmax, n_mels, sr, norm, mel_scale)
    assert got.dtype == ember.float32 and got.shape == (n_freqs, n_mels)
    pts = mel_to_hz(np.linspace(hz_to_mel(fmin, mel_scale), hz_to_mel(fmax, mel_scale), n_mels + 2), mel_scale)
    ref = tri_ref(np.linspace(0, sr // 2, n_freqs), pts)
    if norm == "slaney":
        ref = ref * (2.0 / (pts[2:] - pts[:-2]))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-7)


def test_fbank_errors_and_warning():
    with pytest.raises(ValueError, match='norm must be one of None or "slaney"'):
        AF.melscale_fbanks(10, 0, 8000, 4, 16000, norm="bogus")
    with pytest.raises(ValueError, match='mel_scale should be one of "htk" or "slaney".'):
        AF.melscale_fbanks(10, 0, 8000, 4, 16000, mel_scale="bogus")
    with pytest.warns(UserWarning, match="At least one mel filterbank has all zero values"):
        AF.melscale_fbanks(5, 0, 8000, 40, 16000)
    with pytest.raises(ValueError, match='norm must be either "ortho" or None'):
        AF.create_dct(4, 8, "bogus")


def test_linear_fbanks():
    got = AF.linear_fbanks(33, 100.0, 3500.0, 6, 8000)
    ref = tri_ref(np.linspace(0, 4000, 33), np.linspace(100.0, 3500.0, 8))
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-7)


def test_create_dct():
    n_mfcc, n_mels = 5, 9
    k = np.arange(n_mfcc)[:, None]
    n = np.arange(n_mels)[None]
    basis = np.cos(np.pi / n_mels * (n + 0.5) * k)           # DCT-II
    np.testing.assert_allclose(AF.create_dct(n_mfcc, n_mels, None).numpy(), 2 * basis.T, rtol=1e-6, atol=1e-6)
    ortho = AF.create_dct(n_mels, n_mels, "ortho").numpy().astype(np.float64)
    np.testing.assert_allclose(ortho.T @ ortho, np.eye(n_mels), atol=1e-6)
    scale = np.sqrt(2 / n_mels) * np.where(k == 0, 1 / np.sqrt(2), 1.0)
    np.testing.assert_allclose(AF.create_dct(n_mfcc, n_mels, "ortho").numpy(), (scale * basis).T, atol=1e-6)


# ---------------------------------------------------------------- deltas, centroid

@pytest.mark.parametrize("win_length", [3, 5, 6, 9])
def test_compute_deltas(win_length):
    x = RNG.standard_normal((2, 4, 11))
    n = (win_length - 1) // 2
    xp = np.concatenate([np.repeat(x[..., :1], n, -1), x, np.repeat(x[..., -1:], n, -1)], -1)
    ref = sum(k * (xp[..., n + k:n + k + 11] - xp[..., n - k:n - k + 11]) for k in range(1, n + 1))
    ref = ref / (2 * sum(k * k for k in range(1, n + 1)))
    np.testing.assert_allclose(AF.compute_deltas(t(x), win_length).numpy(), ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(AF.compute_deltas(t(x[0]).t(), win_length).numpy(),
                               AF.compute_deltas(t(x[0].T.copy()), win_length).numpy())


def test_compute_deltas_edges():
    assert AF.compute_deltas(ember.zeros(0, 7, dtype=ember.float64)).shape == (0, 7)
    with pytest.raises(ValueError, match="Window length should be greater than or equal to 3"):
        AF.compute_deltas(ember.zeros(2, 7), 2)
    xg = leaf(RNG.standard_normal((2, 6)))
    assert ember.autograd.gradcheck(lambda v: AF.compute_deltas(v, 5), (xg,))


def test_spectral_centroid():
    x = RNG.standard_normal((2, 160))
    w = hann(64)
    mag = np.abs(stft(x, 64, 32, w))
    freqs = np.linspace(0, 8000 // 2, 33)[:, None]
    ref = (freqs * mag).sum(-2) / mag.sum(-2)
    np.testing.assert_allclose(AF.spectral_centroid(t(x), 8000, 0, t(w), 64, 32, 64).numpy(), ref, rtol=1e-10)
    silent = AF.spectral_centroid(ember.zeros(1, 160, dtype=ember.float64), 8000, 0, t(w), 64, 32, 64)
    assert bool(ember.isnan(silent).all())
    xg = leaf(x[:1, :40] + 0.5)
    assert ember.autograd.gradcheck(lambda v: AF.spectral_centroid(v, 8000, 0, t(hann(16)), 16, 8, 16), (xg,))


# ---------------------------------------------------------------- phase vocoder

def phase_vocoder_ref(spec, rate, adv):
    """Frame by frame: magnitudes interpolated between floor(t) and floor(t)+1, phases accumulated."""
    frames = spec.shape[-1]
    spec = np.concatenate([spec, np.zeros(spec.shape[:-1] + (2,))], -1)
    adv = adv[:, 0]
    steps = np.arange(0, frames, rate)
    out = np.zeros(spec.shape[:-1] + (len(steps),), dtype=complex)
    acc = np.angle(spec[..., 0])
    for i, s in enumerate(steps):
        k = int(s)
        a = s - k
        mag = (1 - a) * np.abs(spec[..., k]) + a * np.abs(spec[..., k + 1])
        out[..., i] = mag * np.exp(1j * acc)
        dphi = np.angle(spec[..., k + 1]) - np.angle(spec[..., k]) - adv
        dphi = dphi - 2 * np.pi * np.round(dphi / (2 * np.pi))
        acc = acc + dphi + adv
    return out


@pytest.mark.parametrize("rate", [0.7, 1.3, 2.0])
def test_phase_vocoder(rate):
    x = RNG.standard_normal((2, 300))
    w = hann(32)
    spec = stft(x, 32, 8, w)
    adv = np.linspace(0, np.pi * 8, 17)[:, None]
    got = AF.phase_vocoder(t(spec), rate, t(adv)).numpy()
    np.testing.assert_allclose(got, phase_vocoder_ref(spec, rate, adv), rtol=1e-9, atol=1e-9)
    assert AF.phase_vocoder(t(spec), 1.0, t(adv)).shape == spec.shape
    with pytest.raises(TypeError, match="expected a complex spectrogram"):
        AF.phase_vocoder(t(np.abs(spec)), 1.3, t(adv))


# ---------------------------------------------------------------- masking

def masked_band(m, axis):
    """The masked indices along `axis` of a bool mask that must be one contiguous band."""
    idx = np.nonzero(m.any(axis=1 - axis if m.ndim == 2 else None))[0] if m.ndim == 2 else np.nonzero(m)[0]
    if len(idx):
        assert idx[-1] - idx[0] + 1 == len(idx)
    return idx


@pytest.mark.parametrize("axis_from_end", [2, 1])
def test_mask_along_axis_shared_band(axis_from_end):
    ember.manual_seed(3)
    x = np.ones((3, 2, 20, 30))
    axis = x.ndim - axis_from_end
    for _ in range(10):
        got = AF.mask_along_axis(t(x), 8, 0.0, axis).numpy()
        masked = got == 0.0
        assert (masked == masked[:1, :1]).all()              # one mask for all examples and channels
        band = masked[0, 0].any(axis=1) if axis_from_end == 2 else masked[0, 0].any(axis=0)
        full = masked[0, 0].all(axis=1) if axis_from_end == 2 else masked[0, 0].all(axis=0)
        assert (band == full).all()                          # whole rows/columns
        idx = np.nonzero(band)[0]
        assert len(idx) < 8 and (len(idx) == 0 or idx[-1] - idx[0] + 1 == len(idx))


def test_mask_along_axis_iid_and_p():
    ember.manual_seed(4)
    x = np.ones((16, 2, 10, 40))
    got = AF.mask_along_axis_iid(t(x), 30, -1.0, 3).numpy() == -1.0
    assert got.any(axis=(2, 3)).sum() > 1
    cols = got.any(axis=2)                                   # (16, 2, 40)
    assert (got.all(axis=2) == cols).all()
    widths = cols.sum(-1)
    assert (widths < 30).all() and len(np.unique(widths)) > 1     # independent widths
    got = AF.mask_along_axis(t(x), 30, 0.0, 3, p=0.1).numpy() == 0.0
    assert got[0, 0].any(axis=0).sum() < 4                   # capped at int(40 · 0.1) columns
    assert AF.mask_along_axis(t(x), 1, 0.0, 3, p=0.01) is not None


def test_mask_errors():
    x = ember.ones(2, 3, 4)
    with pytest.raises(ValueError, match=r"Only Frequency and Time masking are supported \(axis 1 and axis 2"):
        AF.mask_along_axis(x, 2, 0.0, 0)
    with pytest.raises(ValueError, match=r"The value of p must be between 0.0 and 1.0 \(1.5 given\)."):
        AF.mask_along_axis(x, 2, 0.0, 2, p=1.5)
    with pytest.raises(ValueError, match=r"Spectrogram must have at least three dimensions \(2 given\)."):
        AF.mask_along_axis_iid(ember.ones(3, 4), 2, 0.0, 1)
    with pytest.raises(ValueError, match="Spectrogram must have at least two dimensions"):
        AF.mask_along_axis(ember.ones(4), 2, 0.0, 0)


# ---------------------------------------------------------------- sliding-window CMN

def cmn_ref(x, cmn_window, min_cmn_window, center, norm_vars):
    """Kaldi's ApplyCmvnSliding, frame by frame."""
    frames = x.shape[-2]
    out = np.zeros_like(x)
    for t_ in range(frames):
        if center:
            start = t_ - cmn_window // 2
            end = start + cmn_window
        else:
            start = t_ - cmn_window
            end = t_ + 1
        if start < 0:
            end -= start
            start = 0
        if not center and end > t_:
            end = max(t_ + 1, min_cmn_window)
        if end > frames:
            start -= end - frames
            end = frames
            start = max(start, 0)
        win = x[..., start:end, :]
        mean = win.mean(-2)
        out[..., t_, :] = x[..., t_, :] - mean
        if norm_vars:
            if end - start == 1:
                out[..., t_, :] = 0.0
            else:
                var = (win ** 2).mean(-2) - mean ** 2
                out[..., t_, :] /= np.sqrt(var)
    return out


@pytest.mark.parametrize("center", [False, True])
@pytest.mark.parametrize("norm_vars", [False, True])
@pytest.mark.parametrize("window,min_window", [(7, 3), (4, 6), (40, 10)])
def test_sliding_window_cmn(center, norm_vars, window, min_window):
    x = RNG.standard_normal((2, 25, 3))
    got = AF.sliding_window_cmn(t(x), window, min_window, center, norm_vars).numpy()
    np.testing.assert_allclose(got, cmn_ref(x, window, min_window, center, norm_vars), rtol=1e-9, atol=1e-10)


def test_sliding_window_cmn_shapes_and_grad():
    x = RNG.standard_normal((25, 3))
    np.testing.assert_allclose(AF.sliding_window_cmn(t(x.T.copy()).t(), 5, 2).numpy(), cmn_ref(x, 5, 2, False, False),
                               atol=1e-12)
    assert AF.sliding_window_cmn(ember.zeros(2, 0, 3)).shape == (2, 0, 3)
    with pytest.raises(ValueError, match=r"expected \(..., time, freq\)"):
        AF.sliding_window_cmn(ember.zeros(5))
    xg = leaf(x[:6, :2])
    assert ember.autograd.gradcheck(lambda v: AF.sliding_window_cmn(v, 3, 2, True, True), (xg,))


# ---------------------------------------------------------------- resampling

def resample_ref(x, orig, new, lpw=6, rolloff=0.99, method="sinc_interp_hann", beta=None):
    """y[m] = Σ_n x[n] · sinc(t) · window(t) · base / orig, t = (n / orig − m / new) · base, |t| ≤ lpw."""
    g = math.gcd(orig, new)
    orig, new = orig // g, new // g
    base = min(orig, new) * rolloff
    length = x.shape[-1]
    out_len = math.ceil(new * length / orig)
    n = np.arange(length)[None, :]
    m = np.arange(out_len)[:, None]
    tt = (n / orig - m / new) * base
    tt = np.clip(tt, -lpw, lpw)
    if method == "sinc_interp_hann":
        win = np.cos(tt * np.pi / lpw / 2) ** 2
    else:
        beta = 14.769656459379492 if beta is None else beta
        win = np.i0(beta * np.sqrt(1 - (tt / lpw) ** 2)) / np.i0(beta)
    kern = np.sinc(tt) * win * base / orig
    return x @ kern.T


@pytest.mark.parametrize("orig,new", [(16000, 8000), (8000, 16000), (44100, 16000), (3, 5), (48000, 44100)])
@pytest.mark.parametrize("method", ["sinc_interp_hann", "sinc_interp_kaiser"])
def test_resample_matches_sinc_formula(orig, new, method):
    x = RNG.standard_normal((2, 3, 97))
    got = AF.resample(t(x), orig, new, resampling_method=method).numpy()
    np.testing.assert_allclose(got, resample_ref(x, orig, new, method=method), rtol=1e-8, atol=1e-9)


def test_resample_options_and_edges():
    x = RNG.standard_normal((2, 50))
    got = AF.resample(t(x), 5, 7, lowpass_filter_width=3, rolloff=0.8, resampling_method="sinc_interp_kaiser",
                      beta=8.0).numpy()
    np.testing.assert_allclose(got, resample_ref(x, 5, 7, 3, 0.8, "kaiser", 8.0), rtol=1e-8, atol=1e-9)
    xt = t(x)
    assert AF.resample(xt, 16000, 16000) is xt
    np.testing.assert_allclose(AF.resample(t(x.T.copy()).t(), 3, 2).numpy(), resample_ref(x, 3, 2), atol=1e-9)
    assert AF.resample(ember.zeros(0, 10, dtype=ember.float64), 2, 3).shape == (0, 15)
    assert AF.resample(ember.zeros(3, 0, dtype=ember.float64), 2, 3).shape == (3, 0)
    with pytest.warns(UserWarning, match="deprecated"):
        AF.resample(xt, 2, 3, resampling_method="sinc_interpolation")
    with pytest.raises(ValueError, match="Invalid resampling method: bogus"):
        AF.resample(xt, 2, 3, resampling_method="bogus")
    with pytest.raises(ValueError, match="Original frequency and desired frequecy should be positive"):
        AF.resample(xt, 0, 3)
    with pytest.raises(ValueError, match="Frequencies must be of integer type"):
        AF.resample(xt, 2.5, 3)
    with pytest.raises(ValueError, match="Low pass filter width should be positive."):
        AF.resample(xt, 2, 3, lowpass_filter_width=0)
    with pytest.raises(TypeError, match="Expected floating point type for waveform tensor"):
        AF.resample(ember.zeros(2, 5, dtype=ember.int64), 2, 3)
    xg = leaf(x[:1, :12])
    assert ember.autograd.gradcheck(lambda v: AF.resample(v, 3, 2), (xg,))


def test_speed():
    x = RNG.standard_normal((2, 80))
    lengths = ember.tensor([80, 60])
    y, out_len = AF.speed(t(x), 16000, 1.25, lengths)
    np.testing.assert_allclose(y.numpy(), resample_ref(x, 20000, 16000), atol=1e-9)
    assert out_len.tolist() == [64, 48] and out_len.dtype == ember.int64
    y, none = AF.speed(t(x), 16000, 0.8)
    assert none is None and y.shape == (2, 100)


def test_pitch_shift():
    sr = 8000
    x = np.sin(2 * np.pi * 250 * np.arange(2048) / sr)[None]
    same = AF.pitch_shift(t(x), sr, 0).numpy()
    np.testing.assert_allclose(same, x, atol=1e-9)
    up = AF.pitch_shift(t(x), sr, 12).numpy()                 # one octave up
    assert up.shape == x.shape
    spec = np.abs(np.fft.rfft(up[0, 256:-256] * np.hanning(1536)))
    freq = np.argmax(spec) * sr / 1536
    assert abs(freq - 500) < 10
    assert AF.pitch_shift(ember.zeros(2, 3, 600, dtype=ember.float64), sr, -12).shape == (2, 3, 600)


# ---------------------------------------------------------------- noise, convolution, emphasis

def test_add_noise():
    x = RNG.standard_normal((2, 3, 40))
    noise = RNG.standard_normal((2, 3, 40))
    snr = np.array([[10.0, 0.0, -5.0], [3.0, 20.0, 1.0]])
    lengths = np.array([[40, 20, 5], [1, 40, 33]])
    got = AF.add_noise(t(x), t(noise), t(snr), t(lengths)).numpy()
    mask = np.arange(40) < lengths[..., None]
    es = ((x * mask) ** 2).sum(-1)
    en = ((noise * mask) ** 2).sum(-1)
    scale = 10 ** ((10 * np.log10(es / en) - snr) / 20)
    np.testing.assert_allclose(got, x + scale[..., None] * noise, rtol=1e-10)
    got = AF.add_noise(t(x), t(noise), t(snr)).numpy()
    scale = 10 ** ((10 * np.log10((x ** 2).sum(-1) / (noise ** 2).sum(-1)) - snr) / 20)
    np.testing.assert_allclose(got, x + scale[..., None] * noise, rtol=1e-10)
    with pytest.raises(ValueError, match="Input leading dimensions don't match."):
        AF.add_noise(t(x), t(noise), t(snr[0]))
    with pytest.raises(ValueError, match=r"Length dimensions of waveform and noise don't match \(got 40 and 39\)."):
        AF.add_noise(t(x), t(noise[..., :39]), t(snr))
    xg, ng, sg = leaf(x[:1, :1, :6]), leaf(noise[:1, :1, :6]), leaf(snr[:1, :1])
    assert ember.autograd.gradcheck(lambda a, b, c: AF.add_noise(a, b, c), (xg, ng, sg))


def conv_ref(x, y, mode):
    lead = np.broadcast_shapes(x.shape[:-1], y.shape[:-1])
    xb = np.broadcast_to(x, lead + x.shape[-1:]).reshape(-1, x.shape[-1])
    yb = np.broadcast_to(y, lead + y.shape[-1:]).reshape(-1, y.shape[-1])
    full = np.stack([np.convolve(a, b) for a, b in zip(xb, yb, strict=True)]).reshape(lead + (-1,))
    if mode == "full":
        return full
    n = x.shape[-1] if mode == "same" else abs(x.shape[-1] - y.shape[-1]) + 1
    start = (full.shape[-1] - n) // 2
    return full[..., start:start + n]


@pytest.mark.parametrize("fn", [AF.convolve, AF.fftconvolve])
@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("nx,ny", [(20, 7), (5, 12), (9, 9), (1, 4)])
def test_convolve(fn, mode, nx, ny):
    x = RNG.standard_normal((3, 1, nx))
    y = RNG.standard_normal((1, 2, ny))
    np.testing.assert_allclose(fn(t(x), t(y), mode).numpy(), conv_ref(x, y, mode), rtol=1e-9, atol=1e-10)


def test_convolve_noncontiguous_grad_and_errors():
    x = RNG.standard_normal((10, 2))
    y = RNG.standard_normal((4, 2))
    for fn in (AF.convolve, AF.fftconvolve):
        np.testing.assert_allclose(fn(t(x).t(), t(y).t()).numpy(), conv_ref(x.T, y.T, "full"), atol=1e-10)
        xg, yg = leaf(x[:5, 0]), leaf(y[:3, 0])
        assert ember.autograd.gradcheck(lambda a, b, fn=fn: fn(a, b, "same"), (xg, yg))
        with pytest.raises(ValueError, match=r"The operands must be the same dimension \(got 2 and 1\)."):
            fn(ember.zeros(2, 3), ember.zeros(3))
        with pytest.raises(ValueError, match="Leading dimensions of x and y don't match"):
            fn(ember.zeros(2, 3), ember.zeros(3, 3))
        with pytest.raises(ValueError, match="Unrecognized mode value 'bogus'"):
            fn(ember.zeros(2, 3), ember.zeros(2, 3), "bogus")
        assert fn(ember.zeros(0, 3, dtype=ember.float64), ember.zeros(1, 2, dtype=ember.float64)).shape == (0, 4)


def test_preemphasis_deemphasis():
    x = RNG.uniform(-0.2, 0.2, (2, 3, 50))
    ref = x.copy()
    ref[..., 1:] = x[..., 1:] - 0.9 * x[..., :-1]
    pre = AF.preemphasis(t(x), 0.9)
    np.testing.assert_allclose(pre.numpy(), ref, rtol=1e-12)
    y = np.zeros_like(x)
    for n in range(50):
        y[..., n] = x[..., n] + (0.9 * y[..., n - 1] if n else 0.0)
    np.testing.assert_allclose(AF.deemphasis(t(x), 0.9).numpy(), np.clip(y, -1, 1), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(AF.deemphasis(pre, 0.9).numpy(), x, atol=1e-12)
    assert AF.preemphasis(ember.zeros(2, 0)).shape == (2, 0)
    xg = leaf(x[0, :1, :8])
    assert ember.autograd.gradcheck(lambda v: AF.preemphasis(v, 0.5), (xg,))
    assert ember.autograd.gradcheck(lambda v: AF.deemphasis(v, 0.5), (xg,))


def test_complex_gradients_phase_vocoder_and_griffinlim():
    w = t(hann(8))
    spec = stft(RNG.standard_normal((1, 24)), 8, 4, hann(8))[..., :4]
    adv = t(np.linspace(0, np.pi * 4, 5)[:, None])
    re, im = leaf(spec.real.copy()), leaf(spec.imag.copy())
    assert ember.autograd.gradcheck(
        lambda a, b: ember.view_as_real(AF.phase_vocoder(ember.complex(a, b), 1.5, adv)), (re, im))
    mag = leaf(np.abs(spec) + 0.5)
    assert ember.autograd.gradcheck(lambda m: AF.griffinlim(m, w, 8, 4, 8, 1.0, 1, 0.5, None, False), (mag,))


def test_zero_dim_inputs_raise():
    scalar = ember.tensor(0.5, dtype=ember.float64)
    for fn, match in [
        (lambda: AF.lfilter(scalar, ember.ones(2, dtype=ember.float64), ember.ones(2, dtype=ember.float64)),
         "got a 0-dim tensor"),
        (lambda: AF.preemphasis(scalar), "got a 0-dim tensor"),
        (lambda: AF.compute_deltas(scalar), "got a 0-dim tensor"),
        (lambda: AF.resample(scalar, 2, 3), "got a 0-dim tensor"),
        (lambda: AF.convolve(scalar, scalar), "got 0-dim tensors"),
        (lambda: AF.fftconvolve(scalar, scalar), "got 0-dim tensors"),
        (lambda: AF.pitch_shift(scalar, 8000, 2), "got a 0-dim tensor"),
        (lambda: AF.vad(scalar, 8000), "got a 0-dim tensor"),
    ]:
        with pytest.raises(ValueError, match=match):
            fn()
    # 0-dim inputs of elementwise ops are fine
    assert float(AF.DB_to_amplitude(ember.tensor(10.0, dtype=ember.float64), 1.0, 1.0)) == pytest.approx(10.0)
    assert float(AF.gain(scalar, 20.0)) == pytest.approx(5.0)
    assert float(AF.contrast(ember.tensor(0.0, dtype=ember.float64))) == 0.0


def test_kaiser_beta_large():
    x = RNG.standard_normal((1, 60))
    got = AF.resample(t(x), 4, 3, resampling_method="sinc_interp_kaiser", beta=40.0).numpy()
    np.testing.assert_allclose(got, resample_ref(x, 4, 3, method="kaiser", beta=40.0), rtol=1e-8, atol=1e-10)


def test_mu_law():
    x = np.linspace(-1, 1, 41)
    mu = 255.0
    code = np.floor((np.sign(x) * np.log1p(mu * np.abs(x)) / np.log1p(mu) + 1) / 2 * mu + 0.5).astype(np.int64)
    got = AF.mu_law_encoding(t(x), 256)
    assert got.dtype == ember.int64
    np.testing.assert_array_equal(got.numpy(), code)
    y = code / mu * 2 - 1
    dec = np.sign(y) * (np.exp(np.abs(y) * np.log1p(mu)) - 1) / mu
    np.testing.assert_allclose(AF.mu_law_decoding(got, 256).numpy(), dec, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(AF.mu_law_decoding(got, 256).numpy(), x, atol=0.02)     # round trip
    with pytest.warns(UserWarning, match="must be of floating type"):
        AF.mu_law_encoding(ember.tensor([0, 1]), 256)


def test_edit_distance():
    assert AF.edit_distance("kitten", "sitting") == 3
    assert AF.edit_distance(["a", "b", "c"], ["a", "c"]) == 1
    assert AF.edit_distance("", "abc") == 3 and AF.edit_distance("abc", "") == 3
    assert AF.edit_distance("flaw", "lawn") == 2


def pitch_ref(x, sr, frame_time=1e-2, win_length=30, freq_low=85, freq_high=3400):
    """torchaudio's NCCF pitch detector, lag by lag and frame by frame."""
    eps = 1e-9
    lags = math.ceil(sr / freq_low)
    fs = math.ceil(sr * frame_time)
    nf = math.ceil(x.shape[-1] / fs)
    xp = np.pad(x, ((0, 0), (0, lags + nf * fs - x.shape[-1])))
    nccf = np.zeros((x.shape[0], nf, lags))
    for lag in range(1, lags + 1):
        for f in range(nf):
            a = xp[:, f * fs:(f + 1) * fs]
            b = xp[:, f * fs + lag:(f + 1) * fs + lag]
            nccf[:, f, lag - 1] = (a * b).sum(-1) / (eps + np.linalg.norm(a, axis=-1)) ** 2 \
                / (eps + np.linalg.norm(b, axis=-1)) ** 2
    lag_min = math.ceil(sr / freq_high)
    best_i = np.argmax(nccf[..., lag_min:], -1)
    best_v = np.max(nccf[..., lag_min:], -1)
    half_i = np.argmax(nccf[..., lag_min:lags // 2], -1)
    half_v = np.max(nccf[..., lag_min:lags // 2], -1)
    idx = np.where(half_v > 0.99 * best_v, half_i, best_i) + lag_min + 1
    pad = (win_length - 1) // 2
    idx = np.concatenate([np.repeat(idx[:, :1], pad, 1), idx], 1)
    med = np.stack([np.sort(idx[:, i:i + win_length], -1)[:, (win_length - 1) // 2]
                    for i in range(idx.shape[1] - win_length + 1)], 1)
    return sr / (eps + med)


def test_detect_pitch_frequency():
    sr = 8000
    tt = np.arange(sr // 2) / sr
    x = np.stack([np.sin(2 * np.pi * 200 * tt), np.sin(2 * np.pi * 250 * tt) + 0.1 * RNG.standard_normal(tt.size)])
    got = AF.detect_pitch_frequency(t(x), sr)
    np.testing.assert_allclose(got.numpy(), pitch_ref(x, sr), rtol=1e-12)
    assert np.median(got.numpy()[0]) == pytest.approx(200, rel=0.03)
    assert np.median(got.numpy()[1]) == pytest.approx(250, rel=0.03)
    assert AF.detect_pitch_frequency(t(x[None]), sr).shape == (1,) + got.shape
    with pytest.raises(ValueError, match="fewer than the median window"):
        AF.detect_pitch_frequency(t(x[:, :100]), sr)
