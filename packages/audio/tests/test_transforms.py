"""emberaudio.transforms modules against NumPy references (or the functional they wrap, which
test_functional checks), their buffers' state_dict keys and their argument errors."""

import math
import os
import sys

import numpy as np
import pytest

import ember
import emberaudio.functional as AF
import emberaudio.transforms as T

sys.path.insert(0, os.path.dirname(__file__))
from _dsp_ref import hann, stft  # noqa: E402

RNG = np.random.default_rng(3)
F64 = {"dtype": ember.float64}


def t(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def keys(module):
    return sorted(module.state_dict())


def db_ref(x, multiplier=10.0, top_db=None):
    out = multiplier * np.log10(np.maximum(x, 1e-10))
    if top_db is not None:
        lead = out.reshape(-1, *out.shape[-3:]) if out.ndim > 2 else out[None, None]
        floor = lead.max(axis=(-3, -2, -1)) - top_db
        out = np.maximum(lead, floor[:, None, None, None]).reshape(out.shape)
    return out


def test_spectrogram_module():
    x = RNG.standard_normal((2, 300))
    m = T.Spectrogram(n_fft=64, win_length=48, hop_length=12, wkwargs=F64)
    assert keys(m) == ["window"] and m.window.shape == (48,)
    np.testing.assert_allclose(m(t(x)).numpy(), np.abs(stft(x, 64, 12, hann(48))) ** 2, rtol=1e-9, atol=1e-9)
    m = T.Spectrogram(n_fft=32, power=None)
    assert m.hop_length == 16 and m(t(x)).dtype == ember.complex128
    back = T.InverseSpectrogram(n_fft=32)(m(t(x)), length=300)
    np.testing.assert_allclose(back.numpy(), x, atol=1e-6)       # float32 window
    assert keys(T.InverseSpectrogram()) == ["window"]
    with pytest.warns(UserWarning, match="`return_complex` argument is now deprecated"):
        T.Spectrogram(power=2.0, return_complex=True)


def test_mel_spectrogram_mfcc_lfcc():
    x = RNG.standard_normal((2, 800))
    mel = T.MelSpectrogram(sample_rate=8000, n_fft=128, hop_length=32, n_mels=20, wkwargs=F64)
    assert keys(mel) == ["mel_scale.fb", "spectrogram.window"]
    power = np.abs(stft(x, 128, 32, hann(128))) ** 2
    fb = AF.melscale_fbanks(65, 0.0, 4000.0, 20, 8000).numpy().astype(np.float64)
    mel_ref = np.swapaxes(np.swapaxes(power, -1, -2) @ fb, -1, -2)
    np.testing.assert_allclose(mel(t(x)).numpy(), mel_ref, rtol=1e-6, atol=1e-9)

    mfcc = T.MFCC(sample_rate=8000, n_mfcc=13, melkwargs=dict(n_fft=128, hop_length=32, n_mels=20, wkwargs=F64))
    assert keys(mfcc) == ["MelSpectrogram.mel_scale.fb", "MelSpectrogram.spectrogram.window", "dct_mat"]
    n = np.arange(20)
    k = np.arange(13)[:, None]
    dct = (np.cos(np.pi / 20 * (n + 0.5) * k) * np.sqrt(2 / 20) * np.where(k == 0, 1 / np.sqrt(2), 1)).T
    got = mfcc(t(x)).numpy()
    ref = np.swapaxes(np.swapaxes(db_ref(mel_ref, top_db=80.0), -1, -2) @ dct, -1, -2)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-4)
    mfcc_log = T.MFCC(sample_rate=8000, n_mfcc=13, log_mels=True,
                      melkwargs=dict(n_fft=128, hop_length=32, n_mels=20, wkwargs=F64))
    ref = np.swapaxes(np.swapaxes(np.log(mel_ref + 1e-6), -1, -2) @ dct, -1, -2)
    np.testing.assert_allclose(mfcc_log(t(x)).numpy(), ref, rtol=1e-5, atol=1e-5)

    lfcc = T.LFCC(sample_rate=8000, n_filter=16, n_lfcc=10, speckwargs=dict(n_fft=128, hop_length=32, wkwargs=F64))
    assert keys(lfcc) == ["Spectrogram.window", "dct_mat", "filter_mat"]
    lfb = AF.linear_fbanks(65, 0.0, 4000.0, 16, 8000).numpy().astype(np.float64)
    lin = np.swapaxes(np.swapaxes(power, -1, -2) @ lfb, -1, -2)
    k = np.arange(10)[:, None]
    n = np.arange(16)
    dct = (np.cos(np.pi / 16 * (n + 0.5) * k) * np.sqrt(2 / 16) * np.where(k == 0, 1 / np.sqrt(2), 1)).T
    ref = np.swapaxes(np.swapaxes(db_ref(lin, top_db=80.0), -1, -2) @ dct, -1, -2)
    np.testing.assert_allclose(lfcc(t(x)).numpy(), ref, rtol=1e-5, atol=1e-4)

    with pytest.raises(ValueError, match="Cannot select more MFCC coefficients than # mel bins"):
        T.MFCC(n_mfcc=30, melkwargs=dict(n_mels=20))
    with pytest.raises(ValueError, match="DCT type not supported: 3"):
        T.MFCC(dct_type=3)
    with pytest.raises(ValueError, match="Cannot select more LFCC coefficients than # fft bins"):
        T.LFCC(n_lfcc=50, speckwargs=dict(n_fft=32))
    with pytest.warns(UserWarning, match="Argument 'onesided' has been deprecated"):
        T.MelSpectrogram(n_mels=8, onesided=True)
    with pytest.raises(ValueError, match=r"Require f_min: 500.0 <= f_max: 100.0"):
        T.MelScale(n_mels=4, f_min=500.0, f_max=100.0)


def test_mel_spectrogram_gradcheck_and_state_dict_roundtrip():
    m = T.MelSpectrogram(sample_rate=8000, n_fft=16, hop_length=8, n_mels=4, wkwargs=F64)
    x = t(RNG.standard_normal((1, 32))).requires_grad_(True)
    assert ember.autograd.gradcheck(m, (x,))
    src = T.MFCC(sample_rate=8000, n_mfcc=4, melkwargs=dict(n_fft=32, n_mels=8))
    dst = T.MFCC(sample_rate=8000, n_mfcc=4, melkwargs=dict(n_fft=32, n_mels=8))
    state = {k: v * 2 for k, v in src.state_dict().items()}
    dst.load_state_dict(state)
    assert all(bool((dst.state_dict()[k] == v).all()) for k, v in state.items())


def test_amplitude_to_db_module():
    x = np.abs(RNG.standard_normal((2, 3, 4, 5)))
    np.testing.assert_allclose(T.AmplitudeToDB()(t(x)).numpy(), db_ref(x), rtol=1e-12)
    np.testing.assert_allclose(T.AmplitudeToDB("magnitude", top_db=20.0)(t(x)).numpy(), db_ref(x, 20.0, 20.0),
                               rtol=1e-12)
    with pytest.raises(ValueError, match="top_db must be positive value"):
        T.AmplitudeToDB(top_db=-1.0)
    np.testing.assert_allclose(T.AmplitudeToDB("amplitude")(t(x)).numpy(), db_ref(x, 20.0), rtol=1e-12)
    with pytest.raises(ValueError, match='stype must be "power" or "magnitude"'):
        T.AmplitudeToDB("bogus")


def test_mel_scale_and_inverse():
    spec = np.abs(RNG.standard_normal((2, 33, 7)))
    ms = T.MelScale(n_mels=10, sample_rate=8000, n_stft=33)
    assert keys(ms) == ["fb"]
    fb = ms.fb.numpy().astype(np.float64)
    mel = np.swapaxes(np.swapaxes(spec, -1, -2) @ fb, -1, -2)
    np.testing.assert_allclose(ms(t(spec)).numpy(), mel, rtol=1e-12)
    inv = T.InverseMelScale(n_stft=33, n_mels=10, sample_rate=8000, driver="gelsd")
    assert keys(inv) == ["fb"]
    sol = np.stack([np.linalg.lstsq(fb.T, m, rcond=None)[0] for m in mel])
    np.testing.assert_allclose(inv(t(mel)).numpy(), np.maximum(sol, 0), rtol=1e-6, atol=1e-8)
    with pytest.raises(ValueError, match="Expected an input with 10 mel bins"):
        inv(t(mel[:, :9]))
    with pytest.raises(ValueError, match=r'driver must be one of \["gels", "gelsy", "gelsd", "gelss"\]. Found bogus.'):
        T.InverseMelScale(n_stft=33, driver="bogus")


def test_griffinlim_module():
    x = RNG.standard_normal((1, 200))
    mag = np.abs(stft(x, 32, 8, hann(32))) ** 2
    m = T.GriffinLim(n_fft=32, n_iter=3, hop_length=8, length=200, rand_init=False, wkwargs=F64)
    assert keys(m) == ["window"]
    ref = AF.griffinlim(t(mag), t(hann(32)), 32, 8, 32, 2.0, 3, 0.99, 200, False)
    np.testing.assert_allclose(m(t(mag)).numpy(), ref.numpy(), atol=1e-12)
    with pytest.raises(ValueError, match=r"momentum must be in the range \[0, 1\). Found: -0.1"):
        T.GriffinLim(momentum=-0.1)


def test_resample_module():
    x = RNG.standard_normal((2, 3, 64))
    m = T.Resample(16000, 12000, dtype=ember.float64)
    assert keys(m) == ["kernel"] and m.kernel.shape[:2] == (3, 1) and m.kernel.dtype == ember.float64
    np.testing.assert_allclose(m(t(x)).numpy(), AF.resample(t(x), 16000, 12000).numpy(), atol=1e-12)
    assert T.Resample(8000, 16000).kernel.dtype == ember.float32
    m = T.Resample(44100, 16000, resampling_method="sinc_interp_kaiser", lowpass_filter_width=4, beta=10.0,
                   dtype=ember.float64)
    np.testing.assert_allclose(m(t(x)).numpy(), AF.resample(t(x), 44100, 16000, 4, 0.99, "sinc_interp_kaiser",
                                                            10.0).numpy(), atol=1e-12)
    xt = t(x)
    assert T.Resample(100, 100)(xt) is xt and keys(T.Resample(100, 100)) == []
    with pytest.raises(ValueError, match="Invalid resampling method: bogus"):
        T.Resample(2, 3, resampling_method="bogus")
    sp = T.Speed(16000, 1.25)
    assert keys(sp) == ["resampler.kernel"]
    y, lengths = sp(t(x), ember.tensor([64, 30]))
    np.testing.assert_allclose(y.numpy(), AF.speed(t(x), 16000, 1.25)[0].numpy(), atol=1e-6)
    assert lengths.tolist() == [52, 24]


def test_time_stretch_and_deltas_and_cmn():
    x = RNG.standard_normal((2, 400))
    spec = t(stft(x, 64, 32, hann(64)))
    ts = T.TimeStretch(n_freq=33, fixed_rate=1.4)
    assert keys(ts) == ["phase_advance"]
    adv = ember.linspace(0, math.pi * 32, 33, dtype=ember.float64).unsqueeze(-1)
    np.testing.assert_allclose(ts(spec).numpy(), AF.phase_vocoder(spec, 1.4, adv).numpy(), rtol=1e-6, atol=1e-6)
    assert T.TimeStretch(n_freq=33)(spec, 0.5).shape[-1] == 2 * spec.shape[-1]
    with pytest.raises(ValueError, match="If no fixed_rate is specified, must pass a valid rate"):
        T.TimeStretch(n_freq=33)(spec)
    with pytest.raises(TypeError, match="expected a complex spectrogram"):
        T.TimeStretch(n_freq=33)(spec.abs(), 1.2)
    feats = t(RNG.standard_normal((2, 30, 4)))
    np.testing.assert_allclose(T.ComputeDeltas(7)(feats).numpy(), AF.compute_deltas(feats, 7).numpy())
    np.testing.assert_allclose(T.SlidingWindowCmn(10, 4, True, True)(feats).numpy(),
                               AF.sliding_window_cmn(feats, 10, 4, True, True).numpy())


def fade_ref(n, fin, fout, shape):
    f = np.linspace(0, 1, fin)
    g = np.linspace(0, 1, fout)
    curves = {
        "linear": (f, 1 - g),
        "exponential": (2 ** (f - 1) * f, 2 ** (-g) * (1 - g)),
        "logarithmic": (np.log10(0.1 + f) + 1, np.log10(1.1 - g) + 1),
        "quarter_sine": (np.sin(f * np.pi / 2), np.sin(g * np.pi / 2 + np.pi / 2)),
        "half_sine": (np.sin(f * np.pi - np.pi / 2) / 2 + 0.5, np.sin(g * np.pi + np.pi / 2) / 2 + 0.5),
    }
    fi, fo = curves[shape]
    gain_in = np.clip(np.concatenate([fi, np.ones(n - fin)]), 0, 1)
    gain_out = np.clip(np.concatenate([np.ones(n - fout), fo]), 0, 1)
    return gain_in * gain_out


@pytest.mark.parametrize("shape", ["linear", "exponential", "logarithmic", "quarter_sine", "half_sine"])
def test_fade(shape):
    x = RNG.standard_normal((2, 3, 50))
    np.testing.assert_allclose(T.Fade(10, 17, shape)(t(x)).numpy(), x * fade_ref(50, 10, 17, shape), rtol=1e-12,
                               atol=1e-14)
    with pytest.raises(ValueError, match="fade lengths"):
        T.Fade(60, 0, shape)(t(x))


def test_fade_and_vol_errors_and_vol():
    with pytest.raises(ValueError, match="fade_shape must be one of"):
        T.Fade(1, 1, "bogus")
    x = RNG.uniform(-0.8, 0.8, (2, 40))
    np.testing.assert_allclose(T.Vol(1.5)(t(x)).numpy(), np.clip(x * 1.5, -1, 1))
    np.testing.assert_allclose(T.Vol(6.0, "db")(t(x)).numpy(), np.clip(x * 10 ** (6 / 20), -1, 1))
    np.testing.assert_allclose(T.Vol(0.25, "power")(t(x)).numpy(), np.clip(x * 0.5, -1, 1))
    with pytest.raises(ValueError, match="Gain type must be one of 'amplitude', 'power' or 'db'"):
        T.Vol(1.0, "bogus")
    with pytest.raises(ValueError, match="If gain_type = amplitude or power, gain must be positive."):
        T.Vol(-1.0)


@pytest.mark.parametrize("lead", [(3,), (2, 3)])
def test_masking_modules(lead):
    ember.manual_seed(5)
    x = t(np.ones(lead + (12, 20)))
    for _ in range(5):
        f = T.FrequencyMasking(6)(x).numpy() == 0
        assert (f.any(axis=-1) == f.all(axis=-1)).all()          # whole frequency rows
        assert f.any(axis=-1).sum(axis=-1).max() < 6
        tm = T.TimeMasking(8, p=0.2)(x, mask_value=-2.0).numpy() == -2.0
        assert (tm.any(axis=-2) == tm.all(axis=-2)).all()        # whole time columns
        assert tm.any(axis=-2).sum(axis=-1).max() <= 4           # min(8, int(20 · 0.2))
    iid = T.FrequencyMasking(12, iid_masks=True)(x).numpy() == 0
    assert iid.shape == tuple(lead) + (12, 20)
    with pytest.raises(ValueError, match=r"The value of p must be between 0.0 and 1.0 \(2.0 given\)."):
        T.TimeMasking(3, p=2.0)


def test_centroid_pitch_shift_and_thin_wrappers():
    x = RNG.standard_normal((2, 512))
    sc = T.SpectralCentroid(8000, n_fft=64, wkwargs=F64)
    assert keys(sc) == ["window"]
    np.testing.assert_allclose(sc(t(x)).numpy(), AF.spectral_centroid(t(x), 8000, 0, t(hann(64)), 64, 32, 64).numpy())
    ps = T.PitchShift(8000, -12, n_fft=128, wkwargs=F64)
    assert keys(ps) == ["kernel", "window"]
    np.testing.assert_allclose(ps(t(x)).numpy(), AF.pitch_shift(t(x), 8000, -12, n_fft=128).numpy(), atol=1e-6)
    assert keys(T.PitchShift(8000, 0)) == ["window"]
    y = RNG.standard_normal((2, 9))
    np.testing.assert_allclose(T.Convolve("same")(t(x), t(y)).numpy(), AF.convolve(t(x), t(y), "same").numpy())
    np.testing.assert_allclose(T.FFTConvolve("valid")(t(x), t(y)).numpy(),
                               AF.fftconvolve(t(x), t(y), "valid").numpy())
    with pytest.raises(ValueError, match="Unrecognized mode value 'bogus'"):
        T.Convolve("bogus")
    noise = RNG.standard_normal((2, 512))
    snr = t(np.array([5.0, 10.0]))
    np.testing.assert_allclose(T.AddNoise()(t(x), t(noise), snr).numpy(), AF.add_noise(t(x), t(noise), snr).numpy())
    xs = x * 0.1
    np.testing.assert_allclose(T.Preemphasis(0.5)(t(xs)).numpy(), AF.preemphasis(t(xs), 0.5).numpy())
    np.testing.assert_allclose(T.Deemphasis(0.5)(t(xs)).numpy(), AF.deemphasis(t(xs), 0.5).numpy())


def test_vad_module():
    sr = 8000
    rng = np.random.default_rng(7)
    tt = np.arange(4000) / sr
    voice = sum(0.3 / k * np.sin(2 * np.pi * 150 * k * tt) for k in range(1, 12))
    x = np.concatenate([np.zeros(6000), voice])[None] + rng.standard_normal((1, 10000)) * 1e-4
    m = T.Vad(sr, trigger_level=6.0, pre_trigger_time=0.05)
    np.testing.assert_array_equal(m(t(x)).numpy(), AF.vad(t(x), sr, trigger_level=6.0, pre_trigger_time=0.05).numpy())
    assert keys(m) == []


def test_transforms_noncontiguous_and_batched_leading_dims():
    x = RNG.standard_normal((400, 2, 3))
    xt = t(x).permute(1, 2, 0)                                    # (2, 3, 400), non-contiguous
    assert not xt.is_contiguous()
    m = T.MelSpectrogram(sample_rate=8000, n_fft=64, n_mels=8, wkwargs=F64)
    np.testing.assert_allclose(m(xt).numpy(), m(t(np.ascontiguousarray(x.transpose(1, 2, 0)))).numpy(), rtol=1e-12)
    assert m(xt).shape == (2, 3, 8, 1 + 400 // 32)
    r = T.Resample(3, 2, dtype=ember.float64)
    np.testing.assert_allclose(r(xt).numpy(), AF.resample(t(np.ascontiguousarray(x.transpose(1, 2, 0))), 3, 2).numpy(),
                               atol=1e-12)
    assert T.Spectrogram(n_fft=16)(ember.zeros(0, 64)).shape == (0, 9, 9)


def test_spec_augment_and_speed_perturbation():
    ember.manual_seed(11)
    x = RNG.uniform(1.0, 2.0, (2, 3, 16, 30))
    mean = x.mean()
    out = T.SpecAugment(2, 6, 1, 4)(t(x)).numpy()
    filled = np.isclose(out, mean)
    assert filled.any() and np.all((out == x) | filled)          # untouched or set to the mean
    assert (out == 0).sum() == 0
    z = T.SpecAugment(1, 8, 1, 5, iid_masks=False, zero_masking=True)(t(x)).numpy()
    masked = z == 0
    assert (masked == masked[:1, :1]).all()                      # one shared mask without iid_masks
    xg = t(x[0, 0, :4, :5]).requires_grad_(True)

    def masked(v):
        ember.manual_seed(3)                                     # the same mask on every gradcheck call
        return AF.mask_along_axis(v, 3, v.mean(), 1)

    assert ember.autograd.gradcheck(masked, (xg,))
    with pytest.raises(ValueError, match=r"The value of p must be between 0.0 and 1.0 \(-0.5 given\)."):
        T.SpecAugment(1, 2, 1, 2, p=-0.5)

    w = RNG.standard_normal((2, 400))
    sp = T.SpeedPerturbation(8000, [0.9, 1.1])
    assert keys(sp) == ["speeders.0.resampler.kernel", "speeders.1.resampler.kernel"]
    lengths_seen = set()
    for _ in range(12):
        y, out_len = sp(t(w), ember.tensor([400, 200]))
        lengths_seen.add(y.shape[-1])
        factor = 0.9 if y.shape[-1] > 400 else 1.1
        ref, ref_len = AF.speed(t(w), 8000, factor, ember.tensor([400, 200]))
        np.testing.assert_allclose(y.numpy(), ref.numpy(), atol=1e-6)
        assert out_len.tolist() == ref_len.tolist()
    assert lengths_seen == {math.ceil(400 * 8000 / 7200), math.ceil(400 * 8000 / 8800)}
    with pytest.raises(ValueError, match="expected at least one factor"):
        T.SpeedPerturbation(8000, [])


def test_mulaw_and_loudness_modules():
    x = t(np.linspace(-1, 1, 21))
    codes = T.MuLawEncoding(64)(x)
    np.testing.assert_array_equal(codes.numpy(), AF.mu_law_encoding(x, 64).numpy())
    np.testing.assert_allclose(T.MuLawDecoding(64)(codes).numpy(), AF.mu_law_decoding(codes, 64).numpy())
    w = t(0.2 * RNG.standard_normal((2, 4000)))
    assert float(T.Loudness(8000)(w)) == float(AF.loudness(w, 8000))
