"""emberaudio.functional filtering against a direct-form IIR loop in float64 NumPy."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
import emberaudio.functional as AF

RNG = np.random.default_rng(0)


def t(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def iir_ref(x, a, b):
    """Direct form I, one filter: a[0] y[n] = Σ b[k] x[n-k] − Σ_{k≥1} a[k] y[n-k]."""
    x = np.asarray(x, dtype=np.float64)
    y = np.zeros_like(x)
    for n in range(x.shape[-1]):
        acc = np.zeros(x.shape[:-1])
        for k in range(len(b)):
            if n - k >= 0:
                acc = acc + b[k] * x[..., n - k]
        for k in range(1, len(a)):
            if n - k >= 0:
                acc = acc - a[k] * y[..., n - k]
        y[..., n] = acc / a[0]
    return y


STABLE = [
    ([1.0, -0.5], [0.5, 0.5]),
    ([2.0, -1.2, 0.5], [0.3, 0.2, 0.1]),
    ([1.0, -2.2, 2.1, -0.9, 0.2], [0.1, 0.0, -0.2, 0.05, 0.3]),   # order 4, poles inside the unit circle
    ([1.0], [0.2]),
]


@pytest.mark.parametrize("a,b", STABLE)
@pytest.mark.parametrize("length", [1, 7, 64, 200])
def test_lfilter_matches_direct_form(a, b, length):
    x = RNG.standard_normal((2, 3, length)) * 0.2
    got = AF.lfilter(t(x), t(np.array(a)), t(np.array(b)), clamp=False)
    np.testing.assert_allclose(got.numpy(), iir_ref(x, a, b), rtol=1e-10, atol=1e-12)


def test_lfilter_clamps_by_default():
    x = np.full((1, 30), 0.9)
    got = AF.lfilter(t(x), t(np.array([1.0, -0.9])), t(np.array([1.0, 0.0]))).numpy()
    np.testing.assert_allclose(got, np.clip(iir_ref(x, [1.0, -0.9], [1.0, 0.0]), -1, 1))
    assert got.max() == 1.0


def test_lfilter_batched_coefficients():
    a = np.array([[1.0, -0.5, 0.1], [1.0, 0.3, 0.0]])
    b = np.array([[0.2, 0.3, 0.1], [1.0, -1.0, 0.5]])
    x = RNG.standard_normal((4, 2, 90)) * 0.1
    got = AF.lfilter(t(x), t(a), t(b), clamp=False).numpy()
    for i in range(2):
        np.testing.assert_allclose(got[:, i], iir_ref(x[:, i], a[i], b[i]), rtol=1e-10, atol=1e-12)
    # batching=False: every filter on the whole input, new filter dim before time
    x1 = RNG.standard_normal((3, 50)) * 0.1
    got = AF.lfilter(t(x1), t(a), t(b), clamp=False, batching=False).numpy()
    assert got.shape == (3, 2, 50)
    for i in range(2):
        np.testing.assert_allclose(got[:, i], iir_ref(x1, a[i], b[i]), rtol=1e-10, atol=1e-12)


def test_lfilter_noncontiguous_zero_size_and_float32():
    a, b = STABLE[1]
    x = RNG.standard_normal((80, 3)) * 0.2
    got = AF.lfilter(t(x).t(), t(np.array(a)), t(np.array(b)), clamp=False)
    np.testing.assert_allclose(got.numpy(), iir_ref(x.T, a, b), rtol=1e-10, atol=1e-12)
    assert AF.lfilter(ember.zeros(0, 10, dtype=ember.float64), t(np.array(a)), t(np.array(b))).shape == (0, 10)
    assert AF.lfilter(ember.zeros(2, 0, dtype=ember.float64), t(np.array(a)), t(np.array(b))).shape == (2, 0)
    got32 = AF.lfilter(t(x.T.astype(np.float32)), t(np.array(a)), t(np.array(b)), clamp=False)
    assert got32.dtype == ember.float32
    np.testing.assert_allclose(got32.numpy(), iir_ref(x.T, a, b), rtol=1e-4, atol=1e-5)


def test_lfilter_gradcheck():
    x = ember.from_numpy(RNG.standard_normal((2, 70)) * 0.2).requires_grad_(True)
    a = ember.tensor([1.0, -0.6, 0.2], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([0.4, 0.1, 0.3], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x, a, b: AF.lfilter(x, a, b, clamp=False), (x, a, b))
    xs = ember.from_numpy(RNG.standard_normal((1, 12)) * 0.2).requires_grad_(True)
    assert ember.autograd.gradcheck(lambda x: AF.filtfilt(x, a.detach(), b.detach(), clamp=False), (xs,))


def test_lfilter_errors():
    x = ember.zeros(2, 10, dtype=ember.float64)
    with pytest.raises(ValueError, match="same size"):
        AF.lfilter(x, ember.ones(3, dtype=ember.float64), ember.ones(2, dtype=ember.float64))
    with pytest.raises(ValueError, match="with batching, expected waveform"):
        AF.lfilter(x, ember.ones(3, 2, dtype=ember.float64), ember.ones(3, 2, dtype=ember.float64))
    with pytest.raises(TypeError, match="floating point waveform"):
        AF.lfilter(ember.zeros(2, 10, dtype=ember.int64), ember.ones(2), ember.ones(2))
    with pytest.raises(ValueError, match=r"non-zero leading denominator coefficient a_coeffs\[..., 0\]"):
        AF.lfilter(x, ember.tensor([0.0, 1.0], dtype=ember.float64), ember.ones(2, dtype=ember.float64))
    with pytest.raises(ValueError, match="1-D or 2-D non-empty"):
        AF.lfilter(x, ember.ones(1, 1, 2, dtype=ember.float64), ember.ones(1, 1, 2, dtype=ember.float64))


def test_filtfilt_is_forward_backward():
    a, b = [1.0, -0.7, 0.1], [0.2, 0.2, 0.1]
    x = RNG.standard_normal((3, 60)) * 0.2
    ref = iir_ref(iir_ref(x, a, b)[..., ::-1], a, b)[..., ::-1]
    got = AF.filtfilt(t(x), t(np.array(a)), t(np.array(b)), clamp=False)
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-10, atol=1e-12)


def cookbook(kind, sr, f, q=0.707, gain=0.0):
    """Audio EQ cookbook (R. Bristow-Johnson) coefficients, written out here independently."""
    w0 = 2 * math.pi * f / sr
    cw, sw = math.cos(w0), math.sin(w0)
    al = sw / (2 * q)
    A = 10 ** (gain / 40)
    if kind == "lowpass":
        return [(1 - cw) / 2, 1 - cw, (1 - cw) / 2], [1 + al, -2 * cw, 1 - al]
    if kind == "highpass":
        return [(1 + cw) / 2, -(1 + cw), (1 + cw) / 2], [1 + al, -2 * cw, 1 - al]
    if kind == "bandpass":
        return [al, 0, -al], [1 + al, -2 * cw, 1 - al]
    if kind == "bandpass_skirt":
        return [sw / 2, 0, -sw / 2], [1 + al, -2 * cw, 1 - al]
    if kind == "bandreject":
        return [1, -2 * cw, 1], [1 + al, -2 * cw, 1 - al]
    if kind == "allpass":
        return [1 - al, -2 * cw, 1 + al], [1 + al, -2 * cw, 1 - al]
    if kind == "equalizer":
        return [1 + al * A, -2 * cw, 1 - al * A], [1 + al / A, -2 * cw, 1 - al / A]
    sa = 2 * math.sqrt(A) * al
    if kind == "treble":   # high shelf
        return ([A * ((A + 1) + (A - 1) * cw + sa), -2 * A * ((A - 1) + (A + 1) * cw), A * ((A + 1) + (A - 1) * cw - sa)],
                [(A + 1) - (A - 1) * cw + sa, 2 * ((A - 1) - (A + 1) * cw), (A + 1) - (A - 1) * cw - sa])
    if kind == "bass":     # low shelf
        return ([A * ((A + 1) - (A - 1) * cw + sa), 2 * A * ((A - 1) - (A + 1) * cw), A * ((A + 1) - (A - 1) * cw - sa)],
                [(A + 1) + (A - 1) * cw + sa, -2 * ((A - 1) + (A + 1) * cw), (A + 1) + (A - 1) * cw - sa])
    raise AssertionError(kind)


SR = 8000
BIQUADS = [
    ("lowpass", lambda x: AF.lowpass_biquad(x, SR, 1000.0), dict(f=1000.0)),
    ("lowpass", lambda x: AF.lowpass_biquad(x, SR, 500.0, Q=2.0), dict(f=500.0, q=2.0)),
    ("highpass", lambda x: AF.highpass_biquad(x, SR, 700.0), dict(f=700.0)),
    ("bandpass", lambda x: AF.bandpass_biquad(x, SR, 900.0, Q=1.5), dict(f=900.0, q=1.5)),
    ("bandpass_skirt", lambda x: AF.bandpass_biquad(x, SR, 900.0, Q=1.5, const_skirt_gain=True), dict(f=900.0, q=1.5)),
    ("bandreject", lambda x: AF.bandreject_biquad(x, SR, 1200.0), dict(f=1200.0)),
    ("allpass", lambda x: AF.allpass_biquad(x, SR, 1500.0, Q=0.9), dict(f=1500.0, q=0.9)),
    ("equalizer", lambda x: AF.equalizer_biquad(x, SR, 1000.0, 6.0, Q=1.2), dict(f=1000.0, q=1.2, gain=6.0)),
    ("treble", lambda x: AF.treble_biquad(x, SR, -4.0), dict(f=3000.0, gain=-4.0)),
    ("bass", lambda x: AF.bass_biquad(x, SR, 5.0, central_freq=200.0), dict(f=200.0, gain=5.0)),
]


@pytest.mark.parametrize("kind,fn,kw", BIQUADS)
def test_biquads_match_cookbook(kind, fn, kw):
    x = RNG.standard_normal((2, 120)) * 0.1
    b, a = cookbook(kind, SR, **kw)
    np.testing.assert_allclose(fn(t(x)).numpy(), np.clip(iir_ref(x, a, b), -1, 1), rtol=1e-9, atol=1e-12)


def test_biquad_tensor_frequency_is_differentiable():
    x = ember.from_numpy(RNG.standard_normal((1, 40)) * 0.1)
    f = ember.tensor(900.0, dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda f: AF.lowpass_biquad(x, SR, f), (f,))


def test_band_biquad():
    sr, f, q = 8000, 1000.0, 2.0
    a2 = math.exp(-2 * math.pi * (f / q) / sr)
    a1 = -4 * a2 / (1 + a2) * math.cos(2 * math.pi * f / sr)
    b0 = math.sqrt(1 - a1 * a1 / (4 * a2)) * (1 - a2)
    x = RNG.standard_normal((2, 50)) * 0.1
    np.testing.assert_allclose(AF.band_biquad(t(x), sr, f, Q=q).numpy(), iir_ref(x, [1, a1, a2], [b0, 0, 0]),
                               rtol=1e-9, atol=1e-12)
    b0n = math.sqrt(((1 + a2) ** 2 - a1 * a1) * (1 - a2) / (1 + a2))
    np.testing.assert_allclose(AF.band_biquad(t(x), sr, f, Q=q, noise=True).numpy(),
                               iir_ref(x, [1, a1, a2], [b0n, 0, 0]), rtol=1e-9, atol=1e-12)


def response(x_fn, sr, freq, n=None):
    """Steady-state gain of a filter at `freq`, measured from a sinusoid (half a second: the RIAA
    poles near 1 settle slowly)."""
    n = sr // 2 if n is None else n
    s = 0.1 * np.sin(2 * np.pi * freq * np.arange(n) / sr)
    y = x_fn(t(s[None])).numpy()[0]
    return np.sqrt(np.mean(y[n // 2:] ** 2)) / np.sqrt(np.mean(s[n // 2:] ** 2))


@pytest.mark.parametrize("sr", [44100, 48000, 88200, 96000])
def test_riaa_is_0db_at_1khz_and_boosts_bass(sr):
    assert response(lambda x: AF.riaa_biquad(x, sr), sr, 1000.0) == pytest.approx(1.0, abs=2e-3)
    assert 20 * math.log10(response(lambda x: AF.riaa_biquad(x, sr), sr, 100.0)) > 10     # RIAA: ~ +13 dB at 100 Hz


@pytest.mark.parametrize("sr", [44100, 48000])
def test_deemph_cuts_treble_not_bass(sr):
    assert response(lambda x: AF.deemph_biquad(x, sr), sr, 100.0) == pytest.approx(1.0, abs=0.01)
    # IEC 60908 de-emphasis: the analog 50 µs / 15 µs shelf |1 + jf/f2| / |1 + jf/f1|
    for f in (1000.0, 5000.0, 10000.0, 16000.0):
        ideal = 20 * math.log10(abs(1 + 1j * f * 2 * math.pi * 15e-6) / abs(1 + 1j * f * 2 * math.pi * 50e-6))
        got = 20 * math.log10(response(lambda x: AF.deemph_biquad(x, sr), sr, f))
        assert got == pytest.approx(ideal, abs=0.1)


def test_biquad_sample_rate_errors():
    x = ember.zeros(1, 10, dtype=ember.float64)
    with pytest.raises(ValueError, match="Sample rate must be 44.1k, 48k, 88.2k, or 96k"):
        AF.riaa_biquad(x, 16000)
    with pytest.raises(ValueError, match=r"Sample rate must be 44100 \(audio-CD\) or 48000 \(DAT\)"):
        AF.deemph_biquad(x, 16000)


def test_contrast_dcshift_gain():
    x = RNG.uniform(-1, 1, (3, 20))
    c = 60 / 750
    np.testing.assert_allclose(AF.contrast(t(x), 60.0).numpy(),
                               np.sin(x * np.pi / 2 + c * np.sin(x * 2 * np.pi)), rtol=1e-12)
    np.testing.assert_allclose(AF.gain(t(x), 6.0).numpy(), x * 10 ** (6 / 20), rtol=1e-12)
    np.testing.assert_allclose(AF.dcshift(t(x), 0.3).numpy(), np.clip(x + 0.3, -1, 1))
    # limiter: above the threshold 1 - (|shift| - gain) samples are compressed
    shift, lg = 0.3, 0.1
    thr = 1 - (shift - lg)
    ref = np.where(x > thr, np.minimum((x - thr) * lg / (1 - thr) + thr + shift, thr), np.clip(x + shift, -1, 1))
    xt = t(x)
    np.testing.assert_allclose(AF.dcshift(xt, shift, lg).numpy(), ref)
    np.testing.assert_array_equal(xt.numpy(), x)      # the input is not modified
    ref = np.where(x < -thr, np.maximum((x + thr) * lg / (1 - thr) - thr - shift, -thr), np.clip(x - shift, -1, 1))
    np.testing.assert_allclose(AF.dcshift(xt, -shift, lg).numpy(), ref)
    with pytest.raises(ValueError, match="Allowed range of values for enhancement_amount : 0-100"):
        AF.contrast(xt, 101.0)
    xg = ember.from_numpy(x[:1, :5].copy()).requires_grad_(True)
    assert ember.autograd.gradcheck(lambda v: AF.contrast(v, 50.0), (xg,))
    assert AF.gain(ember.zeros(0, dtype=ember.float64), 3.0).shape == (0,)


def vad_ref(x, sr, trigger_level=7.0, trigger_time=0.25, search_time=1.0, allowed_gap=0.25, pre_trigger_time=0.0,
            boot_time=0.35, noise_up_time=0.1, noise_down_time=0.01, nra=1.35, measure_freq=20.0,
            measure_smooth_time=0.4, hp=50.0, lp=6000.0, hp_l=150.0, lp_l=2000.0):
    """SoX's vad, measurement by measurement as in sox/src/vad.c (channels, time) → trimmed."""
    mlen = int(sr * 2.0 / measure_freq + 0.5)
    dft = 16
    while dft < mlen:
        dft *= 2
    period = int(sr / measure_freq + 0.5)
    nmeas = math.ceil(search_time * measure_freq)
    gap = int(allowed_gap * measure_freq + 0.5)
    pre = int(pre_trigger_time * sr + 0.5)
    s0, s1 = max(int(hp / sr * dft + 0.5), 1), min(int(lp / sr * dft + 0.5), dft // 2)
    c0, c1 = math.ceil(sr * 0.5 / lp_l), min(math.floor(sr * 0.5 / hp_l), dft // 4)
    hann_ = lambda n: 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / n)  # noqa: E731
    swin = hann_(mlen) * 2 / math.sqrt(mlen)
    cwin = hann_(s1 - s0) * 2 / math.sqrt(s1 - s0)
    up, down = math.exp(-1 / (noise_up_time * measure_freq)), math.exp(-1 / (noise_down_time * measure_freq))
    smooth, trig = math.exp(-1 / (measure_smooth_time * measure_freq)), math.exp(-1 / (trigger_time * measure_freq))
    boot_max = int(boot_time * measure_freq - 0.5)
    chans, n = x.shape
    spec = np.zeros((chans, dft))
    noise = np.zeros((chans, dft))
    measures = np.zeros((chans, nmeas))
    mean = np.zeros(chans)
    boot, index, flush, triggered = 0, 0, 0, False
    for pos in range(mlen, n, period):
        for ch in range(chans):
            buf = np.zeros(dft)
            buf[:mlen] = x[ch, pos - mlen:pos] * swin
            mag = np.abs(np.fft.rfft(buf))
            mult = boot / (1 + boot) if boot >= 0 else smooth
            spec[ch, s0:s1] = spec[ch, s0:s1] * mult + mag[s0:s1] * (1 - mult)
            d = spec[ch, s0:s1] ** 2
            nm = np.zeros(s1 - s0) if boot >= 0 else np.where(d > noise[ch, s0:s1], up, down)
            noise[ch, s0:s1] = noise[ch, s0:s1] * nm + d * (1 - nm)
            d = np.sqrt(np.maximum(0, d - nra * noise[ch, s0:s1]))
            cbuf = np.zeros(dft // 2)
            cbuf[s0:s1] = d * cwin
            r = np.sum(np.abs(np.fft.rfft(cbuf)[c0:c1]) ** 2)
            meas = max(0.0, 21 + math.log(r / (c1 - c0))) if r > 0 else 0.0
            measures[ch, index] = meas
            mean[ch] = mean[ch] * trig + meas * (1 - trig)
            triggered = triggered or mean[ch] >= trigger_level
            if triggered:
                jt = jz = nmeas
                k = index
                for j in range(nmeas):
                    if measures[ch, k] >= trigger_level and j <= jt + gap:
                        jz = jt = j
                    elif measures[ch, k] == 0 and jt >= jz:
                        jz = j
                    k = (k + nmeas - 1) % nmeas
                flush = min(max(flush, min(nmeas - 1, jz)), nmeas)
        index = (index + 1) % nmeas
        if boot >= 0:
            boot = -1 if boot == boot_max else boot + 1
        if triggered:
            return x[:, max(pos - mlen - pre - flush * period, 0):]
    return x[:, :0]


def voiced_after_silence(sr, silence_s, voice_s, seed=0):
    rng = np.random.default_rng(seed)
    n0, n1 = int(sr * silence_s), int(sr * voice_s)
    tt = np.arange(n1) / sr
    voice = sum(0.3 / k * np.sin(2 * np.pi * 140 * k * tt) for k in range(1, 15)) * (1 + 0.3 * np.sin(2 * np.pi * 3 * tt))
    return np.concatenate([rng.standard_normal(n0) * 1e-3, voice + rng.standard_normal(n1) * 1e-3])


@pytest.mark.parametrize("pre_trigger_time", [0.0, 0.1])
def test_vad_matches_sox_loop_and_trims_leading_silence(pre_trigger_time):
    sr = 8000
    x = np.stack([voiced_after_silence(sr, 1.2, 0.8), voiced_after_silence(sr, 1.5, 0.5, seed=1)])
    got = AF.vad(t(x), sr, pre_trigger_time=pre_trigger_time).numpy()
    ref = vad_ref(x, sr, pre_trigger_time=pre_trigger_time)
    np.testing.assert_array_equal(got, ref)
    removed = x.shape[1] - got.shape[1]
    # noisy lead-in: SoX keeps up to search_time (1 s) of quieter audio before the trigger at ~1.2 s
    assert 0.1 * sr < removed <= 1.2 * sr
    # a digitally silent lead-in measures exactly 0, so the kept pre-roll ends there
    # (one channel: SoX lets every channel's ring extend the flush, and a still-silent channel's ring is all
    # zeros, which keeps the full search window)
    silent = x[:1].copy()
    silent[0, : int(1.2 * sr)] = 0.0
    got = AF.vad(t(silent), sr, pre_trigger_time=pre_trigger_time).numpy()
    np.testing.assert_array_equal(got, vad_ref(silent, sr, pre_trigger_time=pre_trigger_time))
    removed = silent.shape[1] - got.shape[1]
    assert (1.2 - pre_trigger_time - 0.15) * sr < removed <= (1.2 - pre_trigger_time) * sr
    single = AF.vad(t(x[1]), sr).numpy()
    np.testing.assert_array_equal(single, vad_ref(x[1:], sr)[0])


def test_vad_edges():
    sr = 8000
    quiet = t(np.random.default_rng(0).standard_normal((1, 8000)) * 1e-4)
    assert AF.vad(quiet, sr).shape == (1, 0)
    assert AF.vad(ember.zeros(100, dtype=ember.float64), sr).shape == (0,)
    assert AF.vad(ember.zeros(2, 0, dtype=ember.float64), sr).shape == (2, 0)
    with pytest.raises(ValueError, match="Expected cepstrum_start to be smaller than cepstrum_end"):
        AF.vad(quiet, sr, hp_lifter_freq=3000.0)
    with pytest.raises(TypeError, match="expected a floating point waveform"):
        AF.vad(ember.zeros(2, 10, dtype=ember.int64), sr)
    with pytest.warns(UserWarning, match="Batch semantics is not supported"):
        AF.vad(ember.zeros(1, 1, 100, dtype=ember.float64), sr)


def test_lfilter_float32_high_q_accuracy():
    # poles near the unit circle: float32 error must stay at the level of a direct float32 recursion
    sr, f, q = 16000, 100.0, 5.0
    b, a = cookbook("lowpass", sr, f, q)
    x = RNG.standard_normal((2, 3000)) * 0.1
    ref = iir_ref(x, a, b)
    got = AF.lfilter(t(x.astype(np.float32)), t(np.array(a, np.float32)), t(np.array(b, np.float32)), clamp=False)
    # (a direct float32 loop is off by ~2e-4 of the peak here, mostly from rounding the coefficients)
    assert np.abs(got.numpy().astype(np.float64) - ref).max() < 5e-4 * np.abs(ref).max()


@pytest.mark.parametrize("density,var", [("RPDF", 1 / 12 + 1 / 12), ("TPDF", 1 / 12 + 2 / 12), ("GPDF", 1 / 12 + 6 / 12)])
def test_dither_statistics(density, var):
    # error in LSB = rounding of (x + noise); for x uniform over a step: var = 1/12 (rounding) + noise var
    ember.manual_seed(0)
    x = RNG.uniform(-0.5, 0.5, (4, 20000))
    y = AF.dither(t(x), density).numpy()
    steps = y * 2 ** 15
    np.testing.assert_allclose(steps, np.round(steps), atol=1e-9)      # on the 16-bit grid
    err = (y - x) * 2 ** 15
    assert abs(err.mean()) < 0.02
    assert err.var() == pytest.approx(var, rel=0.05)
    assert np.abs(err).max() <= {"RPDF": 1.0, "TPDF": 1.5, "GPDF": 3.5}[density]


def test_dither_noise_shaping_and_errors():
    x = RNG.uniform(-0.5, 0.5, (2, 3, 50))
    ember.manual_seed(5)
    plain = AF.dither(t(x)).numpy()
    ember.manual_seed(5)
    shaped = AF.dither(t(x), noise_shaping=True).numpy()
    err = plain - x
    np.testing.assert_allclose(shaped, plain + np.concatenate([np.zeros((2, 3, 1)), err[..., :-1]], -1), atol=1e-15)
    assert AF.dither(ember.zeros(2, 0, dtype=ember.float64), noise_shaping=True).shape == (2, 0)
    with pytest.raises(ValueError, match='density_function must be one of "TPDF", "RPDF" or "GPDF"'):
        AF.dither(t(x), "bogus")
    with pytest.raises(TypeError, match="expected a floating point waveform"):
        AF.dither(ember.zeros(3, dtype=ember.int64))


@settings(max_examples=25, deadline=None)
@given(order=st.integers(1, 6), length=st.integers(1, 150), batch=st.integers(1, 3),
       seed=st.integers(0, 2 ** 31 - 1))
def test_lfilter_property_random_stable_filters(order, length, batch, seed):
    # poles drawn inside radius 0.95 (conjugate pairs and reals) keep the filter stable
    rng = np.random.default_rng(seed)
    poles = []
    while len(poles) < order:
        r, th = rng.uniform(0, 0.95), rng.uniform(0, np.pi)
        poles += [r * np.exp(1j * th), r * np.exp(-1j * th)] if order - len(poles) >= 2 else [r]
    a = np.real(np.poly(poles)) * rng.uniform(0.5, 2.0)
    b = rng.standard_normal(order + 1)
    x = rng.standard_normal((batch, length))
    got = AF.lfilter(t(x), t(a), t(b), clamp=False).numpy()
    ref = iir_ref(x, a, b)
    np.testing.assert_allclose(got, ref, rtol=1e-8, atol=1e-9 * max(1.0, np.abs(ref).max()))


def test_lfilter_gradcheck_batched_coefficients():
    x = ember.from_numpy(RNG.standard_normal((2, 2, 9)) * 0.2).requires_grad_(True)
    a = ember.tensor([[1.0, -0.5, 0.1], [1.5, 0.3, 0.2]], dtype=ember.float64, requires_grad=True)
    b = ember.tensor([[0.2, 0.3, 0.1], [1.0, -1.0, 0.5]], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x, a, b: AF.lfilter(x, a, b, clamp=False), (x, a, b))
    assert ember.autograd.gradcheck(lambda a, b: AF.lfilter(x.detach()[0], a, b, clamp=False, batching=False), (a, b))


def loudness_ref(x, sr):
    """ITU-R BS.1770-4 integrated loudness with the cookbook K-weighting biquads (clamped like biquad)."""
    b, a = cookbook("treble", sr, 1500.0, 1 / math.sqrt(2), 4.0)
    y = np.clip(iir_ref(x, a, b), -1, 1)
    b, a = cookbook("highpass", sr, 38.0, 0.5)
    y = np.clip(iir_ref(y, a, b), -1, 1)
    n = int(round(0.4 * sr))
    step = int(round(n * 0.25))
    starts = range(0, y.shape[-1] - n + 1, step)
    energy = np.stack([np.mean(y[..., s:s + n] ** 2, -1) for s in starts], -1)       # (C, blocks)
    g = np.array([1.0, 1.0, 1.0, 1.41, 1.41])[: x.shape[0], None]
    block = -0.691 + 10 * np.log10((g * energy).sum(0))
    keep = block > -70
    gated = -0.691 + 10 * np.log10((g[:, 0] * energy[:, keep].mean(-1)).sum()) - 10
    keep &= block > gated
    return -0.691 + 10 * np.log10((g[:, 0] * energy[:, keep].mean(-1)).sum())


def test_loudness():
    sr = 8000
    tt = np.arange(sr) / sr
    # a 997 Hz sine at -6 dBFS in one channel reads -3.01 - 6.02 LKFS at 48 kHz (K-weighting ~0 dB there)
    one = (0.5 * np.sin(2 * np.pi * 997 * np.arange(48000) / 48000))[None]
    assert float(AF.loudness(t(one), 48000)) == pytest.approx(-9.03, abs=0.08)
    x = np.stack([0.3 * np.sin(2 * np.pi * 440 * tt), 0.05 * RNG.standard_normal(tt.size)])
    x[:, : sr // 4] *= 1e-4                                  # a quiet start falls under the relative gate
    ref = loudness_ref(x, sr)
    np.testing.assert_allclose(float(AF.loudness(t(x), sr)), ref, rtol=1e-9)
    batched = AF.loudness(t(np.stack([x, x[:, ::-1].copy()])), sr).numpy()
    np.testing.assert_allclose(batched, [ref, loudness_ref(x[:, ::-1], sr)], rtol=1e-9)
    with pytest.raises(ValueError, match="Only up to 5 channels are supported."):
        AF.loudness(ember.zeros(6, sr, dtype=ember.float64), sr)
    with pytest.raises(ValueError, match="expected at least one 400 ms block"):
        AF.loudness(ember.zeros(1, 100, dtype=ember.float64), sr)
