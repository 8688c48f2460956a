"""The FFT kernel's paths (Note [FFT lanes] in native/src/backend/cpu/fft_kernels.cpp) against
numpy.fft in float64: rows W at a time and one at a time, six-step views with and without
vector-width factors, Bluestein over lane and six-step transforms, the real-row packing of long
rows, float32 within its tolerance, bitwise equality across thread counts; stft / istft with
frames too long for lanes, odd n_fft, every pad mode, and their gradients for signal and window
(gradcheck, forward mode, gradgradcheck)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.fft as F
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(5)
# powers of two (six-step with full vector tiles), smooth non-powers (tiles with ragged edges),
# primes (Bluestein, with lane or six-step sub-transforms)
LONG = [256, 1000, 4096, 6720, 8192, 3 * 5 * 7 * 11 * 13, 1 << 16, 2053, 5003]


def close(got, want, tol):
    got = got.numpy()
    scale = max(1.0, float(np.max(np.abs(want)))) if np.size(want) else 1.0
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


@pytest.mark.parametrize("n", LONG)
@pytest.mark.parametrize("rows", [1, 3, 9])
def test_complex_paths(n, rows):
    a = RNG.standard_normal((rows, n)) + 1j * RNG.standard_normal((rows, n))
    for dtype, tol in ((ember.complex128, 1e-10), (ember.complex64, 2e-5)):
        x = ember.from_numpy(a).to(dtype)
        want = a.astype(np.complex64).astype(np.complex128) if dtype == ember.complex64 else a
        close(F.fft(x), np.fft.fft(want), tol)
        close(F.ifft(x), np.fft.ifft(want), tol)


@pytest.mark.parametrize("n", LONG + [2 * 5003, 2 * 6720, 9, 15, 514])
@pytest.mark.parametrize("rows", [1, 10])
def test_real_paths(n, rows):
    a = RNG.standard_normal((rows, n))
    for dtype, tol in ((ember.float64, 1e-10), (ember.float32, 2e-5)):
        x = ember.from_numpy(a).to(dtype)
        want = a.astype(np.float32).astype(np.float64) if dtype == ember.float32 else a
        spec = F.rfft(x)
        close(spec, np.fft.rfft(want), tol)
        h = np.fft.rfft(want)
        close(F.irfft(ember.from_numpy(h).to(spec.dtype), n=n), np.fft.irfft(h, n=n), tol)


def test_results_do_not_depend_on_the_thread_count():
    a = RNG.standard_normal((5, 1 << 15)).astype(np.float32)
    z = (RNG.standard_normal(1 << 17) + 1j * RNG.standard_normal(1 << 17)).astype(np.complex64)
    before = ember.get_num_threads()
    got = []
    try:
        for threads in (1, 2):
            ember.set_num_threads(threads)
            got.append((F.rfft(ember.from_numpy(a)).numpy(), F.fft(ember.from_numpy(z)).numpy(),
                        ember.stft(ember.from_numpy(a), 512, 128, return_complex=True).numpy()))
    finally:
        ember.set_num_threads(before)
    for x, y in zip(got[0], got[1], strict=True):
        np.testing.assert_array_equal(x, y)


def np_stft(x, n_fft, hop, window, center=True, pad_mode="reflect", normalized=False, onesided=True):
    if center:
        mode = {"reflect": "reflect", "constant": "constant", "replicate": "edge", "circular": "wrap"}[pad_mode]
        x = np.pad(x, [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)], mode=mode)
    n_frames = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., f * hop:f * hop + n_fft] for f in range(n_frames)], axis=-2) * window
    spec = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    return np.swapaxes(spec / np.sqrt(n_fft) if normalized else spec, -1, -2)


@pytest.mark.parametrize("pad_mode", ["reflect", "constant", "replicate", "circular"])
@pytest.mark.parametrize("n_fft,hop,win", [(400, 160, 400), (15, 4, 11), (9000, 3000, 8001), (6, 1, 6)])
def test_stft_paths_against_numpy(pad_mode, n_fft, hop, win):
    x = RNG.standard_normal((2, 20000))
    w = RNG.random(win) + 0.5
    left = (n_fft - win) // 2
    padded = np.concatenate([np.zeros(left), w, np.zeros(n_fft - win - left)])
    for dtype, tol in ((ember.float64, 1e-9), (ember.float32, 3e-5)):
        for onesided in (True, False):
            got = ember.stft(ember.from_numpy(x).to(dtype), n_fft, hop, win, ember.from_numpy(w).to(dtype),
                             pad_mode=pad_mode, onesided=onesided, normalized=onesided, return_complex=True)
            assert tuple(got.stride()) == (got.shape[1] * got.shape[2], 1, got.shape[1])  # frame-major, as PyTorch
            close(got, np_stft(x, n_fft, hop, padded, True, pad_mode, onesided, onesided), tol)
    spec = ember.stft(ember.from_numpy(x), n_fft, hop, win, ember.from_numpy(w), pad_mode=pad_mode,
                      return_complex=True)
    if win >= 2 * hop:  # the window overlaps enough to be inverted (NOLA)
        back = ember.istft(spec, n_fft, hop, win, ember.from_numpy(w), length=20000)
        close(back, x, 1e-8)


def test_stft_reflect_needs_a_longer_signal():
    with pytest.raises(RuntimeError, match=r"\[stft\] expected the reflect padding 8 \(n_fft / 2\) to be less than "
                                           "the signal length, but got length 8"):
        ember.stft(ember.ones(8, dtype=ember.float64), 16, 4, return_complex=True)
    with pytest.raises(ValueError, match="expected pad_mode 'reflect', 'constant', 'replicate' or 'circular', but "
                                         "got 'wrap'"):
        ember.stft(ember.ones(80, dtype=ember.float64), 16, 4, pad_mode="wrap", return_complex=True)
    with pytest.raises(RuntimeError, match="NOLA check failed"):
        spec = ember.stft(ember.ones(80, dtype=ember.float64), 16, 8, window=ember.zeros(16, dtype=ember.float64),
                          return_complex=True)
        ember.istft(spec, 16, 8, window=ember.zeros(16, dtype=ember.float64))


@pytest.mark.parametrize("pad_mode", ["reflect", "constant", "replicate", "circular"])
def test_stft_gradients_signal_and_window(pad_mode):
    x = ember.from_numpy(RNG.standard_normal((2, 23))).requires_grad_()
    w = ember.from_numpy(RNG.random(6) + 0.5).requires_grad_()
    for onesided in (True, False):
        def f(s, win, o=onesided):
            return ember.stft(s, 8, 3, 6, win, pad_mode=pad_mode, normalized=True, onesided=o, return_complex=True)
        assert gradcheck(f, (x, w), check_forward_ad=True)
        assert gradgradcheck(f, (x, w))
    z = ember.from_numpy(RNG.standard_normal(20) + 1j * RNG.standard_normal(20)).requires_grad_()
    assert gradcheck(lambda s, win: ember.stft(s, 8, 3, 6, win, pad_mode=pad_mode, return_complex=True), (z, w),
                     check_forward_ad=True)
    assert gradcheck(lambda s, win: ember._stft(s, 8, 3, 6, win, False, pad_mode, False, True), (x, w))


@pytest.mark.parametrize("center", [True, False])
def test_istft_gradients_input_and_window(center):
    spec = ember.stft(ember.from_numpy(RNG.standard_normal(40)), 8, 2, window=ember.hann_window(8, dtype=ember.float64),
                      return_complex=True, center=center).detach().requires_grad_()
    w = ember.from_numpy(RNG.random(8) + 0.5).requires_grad_()
    for length in (None, 30, 50):
        def f(s, win, n=length, c=center):
            return ember.istft(s, 8, 2, window=win, center=c, length=n)
        assert gradcheck(f, (spec, w), check_forward_ad=True)
        assert gradgradcheck(f, (spec, w))
    full = ember.stft(ember.from_numpy(RNG.standard_normal(40)), 8, 2, window=w.detach(), onesided=False,
                      return_complex=True).detach().requires_grad_()
    assert gradcheck(lambda s, win: ember.istft(s, 8, 2, window=win, onesided=False, length=40), (full, w),
                     check_forward_ad=True)
    assert gradcheck(lambda s, win: ember.istft(s, 8, 2, window=win, onesided=False, return_complex=True),
                     (full, w), check_forward_ad=True)
    assert gradcheck(lambda s, win: ember._istft(s, 8, 2, 8, win, True, True, False, None, True), (full, w))


def test_istft_matches_reference_on_long_frames():
    x = RNG.standard_normal(30000)
    w = np.hanning(8193)[:-1]
    spec = ember.stft(ember.from_numpy(x), 8192, 2048, window=ember.from_numpy(w), return_complex=True)
    back = ember.istft(spec, 8192, 2048, window=ember.from_numpy(w), length=30000)
    close(back, x, 1e-9)
    back32 = ember.istft(spec.to(ember.complex64), 8192, 2048, window=ember.from_numpy(w).float(), length=30000)
    close(back32, x, 1e-4)
