"""ember.fft, stft/istft and the window functions against numpy.fft and NumPy references:
lengths with small and large prime factors (mixed radix and Bluestein), batched,
non-contiguous, zero-size inputs, every norm, n/s padding and trimming, negative and multiple
dims; gradients of the ops fft_c2c/fft_r2c/fft_c2r by float64 gradcheck (backward and forward
mode) and gradgradcheck; bad inputs raise PyTorch's errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
import ember.fft as F
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
LENGTHS = [1, 2, 7, 8, 12, 17, 30, 97, 360, 1009]
NORMS = [None, "backward", "ortho", "forward"]


def arr(*shape, complex_=False):
    a = RNG.standard_normal(shape)
    return a + 1j * RNG.standard_normal(shape) if complex_ else a


def t(a, dtype=None, requires_grad=False):
    a = np.asarray(a)
    if dtype is None:
        dtype = ember.complex128 if np.iscomplexobj(a) else ember.float64
    return ember.tensor(a, dtype=dtype, requires_grad=requires_grad)


def close(got, want, tol=1e-10):
    got = got.detach().numpy()
    assert got.shape == np.shape(want)
    scale = max(1.0, float(np.max(np.abs(want)))) if np.size(want) else 1.0
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * scale)


# ---- 1-D transforms against numpy.fft ---------------------------------------------------------

@pytest.mark.parametrize("n", LENGTHS)
def test_fft_ifft_every_length_complex128(n):
    a = arr(3, n, complex_=True)
    close(F.fft(t(a)), np.fft.fft(a))
    close(F.ifft(t(a)), np.fft.ifft(a))
    assert F.fft(t(a)).dtype == ember.complex128


@pytest.mark.parametrize("n", LENGTHS)
def test_real_transforms_every_length_float64(n):
    a = arr(2, n)
    close(F.fft(t(a)), np.fft.fft(a))
    close(F.rfft(t(a)), np.fft.rfft(a))
    close(F.ihfft(t(a)), np.fft.ihfft(a))
    h = arr(2, n // 2 + 1, complex_=True)
    close(F.irfft(t(h), n=n), np.fft.irfft(h, n=n))
    close(F.hfft(t(h), n=n), np.fft.hfft(h, n=n))
    assert F.rfft(t(a)).dtype == ember.complex128 and F.irfft(t(h), n=n).dtype == ember.float64


@pytest.mark.parametrize("n", [7, 12, 97, 360, 1009])
def test_float32_and_complex64(n):
    a = arr(4, n, complex_=True).astype(np.complex64)
    got = F.fft(t(a, ember.complex64))
    assert got.dtype == ember.complex64
    close(got, np.fft.fft(a.astype(np.complex128)), tol=1e-5)
    r = arr(4, n).astype(np.float32)
    got = F.rfft(t(r, ember.float32))
    assert got.dtype == ember.complex64
    close(got, np.fft.rfft(r.astype(np.float64)), tol=1e-5)
    close(F.irfft(got, n=n), r.astype(np.float64), tol=1e-5)


@pytest.mark.parametrize("norm", NORMS)
def test_every_norm(norm):
    a = arr(2, 30, complex_=True)
    r = arr(2, 30)
    close(F.fft(t(a), norm=norm), np.fft.fft(a, norm=norm))
    close(F.ifft(t(a), norm=norm), np.fft.ifft(a, norm=norm))
    close(F.rfft(t(r), norm=norm), np.fft.rfft(r, norm=norm))
    close(F.irfft(t(a[:, :16]), norm=norm), np.fft.irfft(a[:, :16], norm=norm))
    close(F.hfft(t(a[:, :16]), norm=norm), np.fft.hfft(a[:, :16], norm=norm))
    close(F.ihfft(t(r), norm=norm), np.fft.ihfft(r, norm=norm))
    close(F.fftn(t(a), norm=norm), np.fft.fftn(a, norm=norm))
    close(F.irfftn(t(a[:, :16]), norm=norm), np.fft.irfftn(a[:, :16], norm=norm))


@pytest.mark.parametrize("n", [1, 5, 12, 20, 101])
def test_n_pads_and_trims(n):
    a = arr(3, 12, complex_=True)
    r = arr(3, 12)
    close(F.fft(t(a), n=n), np.fft.fft(a, n=n))
    close(F.ifft(t(a), n=n), np.fft.ifft(a, n=n))
    close(F.rfft(t(r), n=n), np.fft.rfft(r, n=n))
    close(F.irfft(t(a), n=n), np.fft.irfft(a, n=n))
    close(F.hfft(t(a), n=n), np.fft.hfft(a, n=n))
    close(F.ihfft(t(r), n=n), np.fft.ihfft(r, n=n))


def test_dim_argument_batched_and_noncontiguous():
    a = arr(5, 6, 7, complex_=True)
    for dim in (0, 1, 2, -1, -2, -3):
        close(F.fft(t(a), dim=dim), np.fft.fft(a, axis=dim))
        close(F.rfft(t(a.real), dim=dim), np.fft.rfft(a.real, axis=dim))
        close(F.irfft(t(a), dim=dim), np.fft.irfft(a, axis=dim))
    x = t(a).transpose(0, 2)  # non-contiguous
    close(F.fft(x, dim=1), np.fft.fft(a.transpose(2, 1, 0), axis=1))
    stepped = t(arr(4, 40, complex_=True))
    close(F.ifft(stepped[:, ::3]), np.fft.ifft(stepped.numpy()[:, ::3]))
    close(F.rfft(stepped.real[::2, 1::2]), np.fft.rfft(stepped.numpy().real[::2, 1::2]))
    expanded = t(arr(1, 9)).expand(4, 9)
    close(F.rfft(expanded), np.fft.rfft(np.broadcast_to(expanded.numpy(), (4, 9))))


def test_input_is_not_modified_and_out_argument():
    a = arr(3, 16, complex_=True)
    x = t(a)
    F.fft(x)
    F.ifftn(x)
    close(x, a)
    r = t(a.real)
    F.rfft(r)
    close(r, a.real)
    out = ember.empty(3, 9, dtype=ember.complex128)
    got = F.rfft(r, out=out)
    assert got is out
    close(out, np.fft.rfft(a.real))


@pytest.mark.parametrize("n", [2, 6, 9, 1009])
def test_thread_count_does_not_change_results(n):
    a = t(arr(64, n))
    threads = ember.get_num_threads()
    try:
        ember.set_num_threads(1)
        one = F.rfft(a).numpy()
        ember.set_num_threads(2)
        two = F.rfft(a).numpy()
    finally:
        ember.set_num_threads(threads)
    assert np.array_equal(one, two)


def test_vmap_matches_a_loop():
    a = arr(4, 3, 10, complex_=True)
    got = ember.vmap(lambda x: F.fft(x, dim=0))(t(a))
    close(got, np.fft.fft(a, axis=1))
    got = ember.vmap(lambda x: F.rfftn(x, dim=(-1, 0)))(t(a.real))
    close(got, np.fft.rfftn(a.real, axes=(-1, 1)))
    got = ember.vmap(lambda x: F.irfft(x, n=7))(t(a))
    close(got, np.fft.irfft(a, n=7))


def test_zero_size_batches():
    e = t(np.zeros((0, 8), dtype=np.complex128))
    assert F.fft(e).shape == (0, 8)
    assert F.rfft(e.real).shape == (0, 5)
    assert F.irfft(e).shape == (0, 14)
    assert F.fftn(t(np.zeros((3, 0, 4))), dim=(0, 2)).shape == (3, 0, 4)


def test_integer_and_bool_inputs_promote_to_default_float():
    a = np.arange(10)
    got = F.fft(ember.tensor(a))
    assert got.dtype == ember.complex64
    close(got, np.fft.fft(a), tol=1e-5)
    assert F.rfft(ember.tensor(a % 2 == 0)).dtype == ember.complex64


# ---- n-D transforms ---------------------------------------------------------------------------

def test_fftn_family():
    a = arr(3, 4, 5, 6, complex_=True)
    r = a.real.copy()
    close(F.fftn(t(a)), np.fft.fftn(a))
    close(F.ifftn(t(a)), np.fft.ifftn(a))
    close(F.fft2(t(a)), np.fft.fft2(a))
    close(F.ifft2(t(a)), np.fft.ifft2(a))
    close(F.fftn(t(a), dim=(-1, 0)), np.fft.fftn(a, axes=(-1, 0)))
    close(F.fftn(t(a), s=(7, 3), dim=(1, 3)), np.fft.fftn(a, s=(7, 3), axes=(1, 3)))
    close(F.fftn(t(a), s=(2, 9)), np.fft.fftn(a, s=(2, 9), axes=(-2, -1)))
    close(F.fftn(t(a), s=(-1, 9)), np.fft.fftn(a, s=(a.shape[-2], 9), axes=(-2, -1)))
    close(F.rfftn(t(r)), np.fft.rfftn(r))
    close(F.rfft2(t(r)), np.fft.rfft2(r))
    close(F.rfftn(t(r), dim=(0, -2)), np.fft.rfftn(r, axes=(0, -2)))
    close(F.rfftn(t(r), s=(5, 8), dim=(1, 2)), np.fft.rfftn(r, s=(5, 8), axes=(1, 2)))
    close(F.irfftn(t(a)), np.fft.irfftn(a))
    close(F.irfft2(t(a)), np.fft.irfft2(a))
    close(F.irfftn(t(a), s=(6, 9), dim=(0, 2)), np.fft.irfftn(a, s=(6, 9), axes=(0, 2)))
    x = t(a).permute(3, 1, 0, 2)  # non-contiguous
    close(F.fftn(x, dim=(0, 2)), np.fft.fftn(a.transpose(3, 1, 0, 2), axes=(0, 2)))


def test_hfftn_ihfftn():
    a = arr(4, 6, 5, complex_=True)
    r = arr(4, 6, 8)
    # hfftn is the transform of the Hermitian signal whose half is given: irfftn(conj) * size
    want = np.fft.irfftn(np.conj(a), s=(6, 8), axes=(1, 2)) * 48
    close(F.hfftn(t(a), s=(6, 8), dim=(1, 2)), want)
    close(F.hfft2(t(a), s=(6, 8)), want)
    close(F.ihfftn(t(r), dim=(1, 2)), np.conj(np.fft.rfftn(r, axes=(1, 2))) / 48)
    close(F.ihfft2(t(r)), np.conj(np.fft.rfftn(r, axes=(1, 2))) / 48)
    close(F.hfftn(F.ihfftn(t(r)), s=r.shape), r)


def test_zero_dim_fftn_is_identity():
    x = ember.tensor(2.5, dtype=ember.float64)
    got = F.fftn(x)
    assert got.shape == () and got.dtype == ember.complex128 and complex(got.item()) == 2.5


# ---- helpers ----------------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 7, 8])
def test_fftfreq_rfftfreq_shift(n):
    close(F.fftfreq(n, dtype=ember.float64), np.fft.fftfreq(n))
    close(F.fftfreq(n, 0.25, dtype=ember.float64), np.fft.fftfreq(n, 0.25))
    close(F.rfftfreq(n, 0.5, dtype=ember.float64), np.fft.rfftfreq(n, 0.5))
    a = arr(3, n)
    close(F.fftshift(t(a)), np.fft.fftshift(a))
    close(F.ifftshift(t(a)), np.fft.ifftshift(a))
    close(F.fftshift(t(a), dim=-1), np.fft.fftshift(a, axes=-1))
    close(F.ifftshift(t(a), dim=(0,)), np.fft.ifftshift(a, axes=(0,)))
    assert F.fftfreq(4).dtype == ember.get_default_dtype()
    assert F.fftfreq(0).shape == (0,) and F.rfftfreq(0).shape == (1,)
    assert F.fftfreq(5, requires_grad=True).requires_grad


def test_ember_fft_attribute_and_import():
    import importlib

    assert importlib.import_module("ember.fft") is ember.fft
    assert callable(ember.fft.fft) and "fft" in ember.__all__


# ---- gradients --------------------------------------------------------------------------------

def _check(fn, *inputs):
    assert gradcheck(fn, inputs, check_forward_ad=True)


@pytest.mark.parametrize("n", [1, 6, 7, 17])
def test_op_gradients(n):
    c = t(arr(2, n, complex_=True), requires_grad=True)
    r = t(arr(2, n), requires_grad=True)
    for norm in (0, 1, 2):
        _check(lambda x, norm=norm: ember.fft_c2c(x, [1], norm, True), c)
        _check(lambda x, norm=norm: ember.fft_c2c(x, [0, 1], norm, False), c)
        _check(lambda x, norm=norm: ember.fft_r2c(x, [1], norm, True), r)
        _check(lambda x, norm=norm: ember.fft_r2c(x, [0, 1], norm, False), r)
    half = t(arr(2, n // 2 + 1, complex_=True), requires_grad=True)
    for norm in (0, 2):
        _check(lambda x, norm=norm: ember.fft_c2r(x, [1], norm, n), half)
        _check(lambda x, norm=norm: ember.fft_c2r(x, [0, 1], norm, n), half)


def test_public_function_gradients():
    c = t(arr(3, 8, complex_=True), requires_grad=True)
    r = t(arr(3, 9), requires_grad=True)
    _check(lambda x: F.fft(x, n=10), c)
    _check(lambda x: F.ifft(x, norm="ortho"), c)
    _check(lambda x: F.fft(x), r)
    _check(lambda x: F.rfft(x, n=7), r)
    _check(lambda x: F.irfft(x), c)
    _check(lambda x: F.irfft(x, n=9, norm="forward"), c)
    _check(lambda x: F.hfft(x, n=11), c)
    _check(lambda x: F.ihfft(x), r)
    _check(lambda x: F.fftn(x, s=(4, 6)), c)
    _check(lambda x: F.rfftn(x), r)
    _check(lambda x: F.irfftn(x, s=(3, 12)), c)
    _check(lambda x: F.hfftn(x, s=(3, 10)), c)
    _check(lambda x: F.ihfftn(x, dim=(0, 1)), r)
    _check(lambda x: F.fft2(F.fftshift(x)), c)


def test_second_order():
    c = t(arr(2, 5, complex_=True), requires_grad=True)
    r = t(arr(2, 6), requires_grad=True)
    # real outputs: gradgradcheck draws real grad_outputs
    assert gradgradcheck(lambda x: ember.view_as_real(F.fft(x * x)), (c,))
    assert gradgradcheck(lambda x: ember.view_as_real(F.rfft(x * x)), (r,))
    assert gradgradcheck(lambda x: F.irfft(x * x, n=8), (c,))


# ---- windows ----------------------------------------------------------------------------------

NP_WINDOWS = {
    "hann_window": np.hanning, "hamming_window": np.hamming, "blackman_window": np.blackman,
    "bartlett_window": np.bartlett,
}


@pytest.mark.parametrize("name", list(NP_WINDOWS))
@pytest.mark.parametrize("n", [0, 1, 2, 5, 16, 33])
def test_windows_against_numpy(name, n):
    fn, ref = getattr(ember, name), NP_WINDOWS[name]
    close(fn(n, periodic=False, dtype=ember.float64), ref(n), tol=1e-12)
    want = ref(n + 1)[:-1] if n > 1 else np.ones(n)
    close(fn(n, dtype=ember.float64), want, tol=1e-12)
    w = fn(n)
    assert w.dtype == ember.float32 and w.shape == (n,)


@pytest.mark.parametrize("n", [1, 2, 9, 32])
@pytest.mark.parametrize("beta", [0.0, 5.0, 12.0])
def test_kaiser_and_hamming_parameters(n, beta):
    close(ember.kaiser_window(n, periodic=False, beta=beta, dtype=ember.float64), np.kaiser(n, beta), tol=1e-12)
    want = np.kaiser(n + 1, beta)[:-1] if n > 1 else np.ones(n)
    close(ember.kaiser_window(n, beta=beta, dtype=ember.float64), want, tol=1e-12)
    if n > 1:
        m = np.arange(n)
        close(ember.hamming_window(n, False, 0.6, 0.4, dtype=ember.float64),
              0.6 - 0.4 * np.cos(2 * np.pi * m / (n - 1)), tol=1e-12)
    assert ember.hann_window(n, requires_grad=True).requires_grad


# ---- stft / istft -----------------------------------------------------------------------------

def np_stft(x, n_fft, hop, window, center=True, pad_mode="reflect", normalized=False, onesided=True):
    """NumPy framing + rfft / fft, PyTorch's layout (..., freq, frame)."""
    if center:
        mode = {"reflect": "reflect", "constant": "constant", "replicate": "edge", "circular": "wrap"}[pad_mode]
        widths = [(0, 0)] * (x.ndim - 1) + [(n_fft // 2, n_fft // 2)]
        x = np.pad(x, widths, mode=mode)
    n_frames = 1 + (x.shape[-1] - n_fft) // hop
    frames = np.stack([x[..., f * hop:f * hop + n_fft] for f in range(n_frames)], axis=-2) * window
    spec = np.fft.rfft(frames, axis=-1) if onesided else np.fft.fft(frames, axis=-1)
    if normalized:
        spec = spec / np.sqrt(n_fft)
    return np.swapaxes(spec, -1, -2)


@pytest.mark.parametrize("center,pad_mode", [(True, "reflect"), (True, "constant"), (False, "reflect")])
@pytest.mark.parametrize("normalized", [False, True])
def test_stft_against_numpy(center, pad_mode, normalized):
    x = arr(2, 100)
    win = np.hanning(13)[:-1]  # periodic hann of 12 points
    got = ember.stft(t(x), 16, hop_length=5, win_length=12, window=ember.hann_window(12, dtype=ember.float64),
                     center=center, pad_mode=pad_mode, normalized=normalized, return_complex=True)
    padded = np.concatenate([np.zeros(2), win, np.zeros(2)])
    close(got, np_stft(x, 16, 5, padded, center, pad_mode, normalized))
    one = ember.stft(t(x[0]), 16, hop_length=5, win_length=12, window=ember.hann_window(12, dtype=ember.float64),
                     center=center, pad_mode=pad_mode, normalized=normalized, return_complex=True)
    close(one, np_stft(x[0], 16, 5, padded, center, pad_mode, normalized))


def test_stft_defaults_complex_input_and_real_output():
    x = arr(64)
    got = ember.stft(t(x), 16, return_complex=True)  # hop 4, no window
    close(got, np_stft(x, 16, 4, np.ones(16)))
    as_real = ember.stft(t(x), 16, return_complex=False)
    close(as_real, np.stack([np_stft(x, 16, 4, np.ones(16)).real, np_stft(x, 16, 4, np.ones(16)).imag], -1))
    z = arr(64, complex_=True)
    got = ember.stft(t(z), 8, hop_length=3)
    assert got.shape == (8, 1 + 64 // 3)
    close(got, np_stft(z, 8, 3, np.ones(8), onesided=False))
    close(t(x).stft(16, return_complex=True), np_stft(x, 16, 4, np.ones(16)))
    noncontig = t(arr(64, 2))[:, 1]
    close(ember.stft(noncontig, 16, return_complex=True), np_stft(noncontig.numpy(), 16, 4, np.ones(16)))


@pytest.mark.parametrize("dtype,tol", [(ember.float64, 1e-6), (ember.float32, 1e-4)])
@pytest.mark.parametrize("n_fft,hop,win", [(16, 4, 16), (32, 8, 24), (15, 5, 15), (64, 16, 64)])
def test_stft_istft_round_trip(dtype, tol, n_fft, hop, win):
    x = t(arr(3, 400), dtype)
    w = ember.hann_window(win, dtype=dtype)
    spec = ember.stft(x, n_fft, hop, win, w, return_complex=True)
    back = ember.istft(spec, n_fft, hop, win, w, length=400)
    assert back.dtype == dtype and back.shape == (3, 400)
    close(back, x.numpy().astype(np.float64), tol=tol)
    one = spec[0].istft(n_fft, hop, win, w, length=400)
    close(one, x.numpy()[0].astype(np.float64), tol=tol)


def test_istft_options():
    x = arr(2, 200)
    w = ember.hann_window(16, dtype=ember.float64)
    spec = ember.stft(t(x), 16, 4, window=w, return_complex=True)
    close(ember.istft(spec, 16, 4, window=w), x)
    odd = ember.stft(t(x[:, :203]), 16, 4, window=w, return_complex=True)
    close(ember.istft(odd, 16, 4, window=w), x[:, :200])  # no length: hop * (n_frames - 1) samples
    full = ember.stft(t(x), 16, 4, window=w, onesided=False, return_complex=True)
    close(ember.istft(full, 16, 4, window=w, length=200), x)
    close(ember.istft(full, 16, 4, window=w, length=200, return_complex=True), x.astype(np.complex128))
    normed = ember.stft(t(x), 16, 4, window=w, normalized=True, return_complex=True)
    close(ember.istft(normed, 16, 4, window=w, normalized=True, length=200), x)
    longer = ember.istft(spec, 16, 4, window=w, length=230)  # frames end at 208 (center padding), then zeros
    assert longer.shape == (2, 230) and not np.any(longer.numpy()[:, 208:])
    close(longer[:, :200], x)
    # center=False with a window that never vanishes inside the frames
    ww = ember.hamming_window(16, dtype=ember.float64)
    spec = ember.stft(t(x), 16, 4, window=ww, center=False, return_complex=True)
    close(ember.istft(spec, 16, 4, window=ww, center=False), x)


def test_stft_istft_gradients():
    x = t(arr(40), requires_grad=True)
    w = ember.hann_window(8, dtype=ember.float64)
    assert gradcheck(lambda s: ember.stft(s, 8, 2, window=w, return_complex=True), (x,))
    spec = t(arr(5, 9, complex_=True), requires_grad=True)
    assert gradcheck(lambda s: ember.istft(s, 8, 2, window=w), (spec,))


# ---- bad input --------------------------------------------------------------------------------

def test_bad_fft_arguments():
    x = t(arr(4, 6, complex_=True))
    with pytest.raises(RuntimeError, match='Invalid normalization mode: "bad"'):
        F.fft(x, norm="bad")
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        F.fft(x, n=0)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(-2\) specified"):
        F.rfft(x.real, n=-2)
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        F.irfft(t(arr(3, 1, complex_=True)))
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)"):
        F.fft(x, dim=2)
    with pytest.raises(IndexError, match="Dimension out of range"):
        F.fftn(x, dim=(0, -3))
    with pytest.raises(RuntimeError, match="FFT dims must be unique"):
        F.fftn(x, dim=(0, -2))
    with pytest.raises(RuntimeError, match="dim and shape arguments must have the same length"):
        F.fftn(x, s=(2, 3), dim=(0,))
    with pytest.raises(RuntimeError, match="Got shape with 3 values but input tensor only has 2 dimensions"):
        F.fftn(x, s=(2, 3, 4))
    with pytest.raises(RuntimeError, match="rfft expects a real input tensor, but got complex128"):
        F.rfft(x)
    with pytest.raises(RuntimeError, match="ihfft expects a real input tensor"):
        F.ihfft(x)
    with pytest.raises(RuntimeError, match="^Unsupported dtype Half$"):
        F.fft(ember.ones([4], dtype=ember.float16))
    with pytest.raises(RuntimeError, match="^Unsupported dtype BFloat16$"):
        F.rfft(ember.ones([4], dtype=ember.bfloat16))
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        F.fft(t(np.zeros((3, 0), dtype=np.complex128)))
    with pytest.raises(RuntimeError, match=r"Invalid number of data points \(0\) specified"):
        F.rfftn(t(np.zeros((3, 0))))
    with pytest.raises(IndexError, match="tensor has no dimensions"):
        F.fft(ember.tensor(1.0))
    with pytest.raises(TypeError, match="must be Tensor"):
        F.fft([1.0, 2.0])


def test_bad_op_arguments():
    c = t(arr(4, 6, complex_=True))
    with pytest.raises(TypeError, match=r"\[fft_c2c\] expected a complex64 or complex128 tensor, but got float64"):
        ember.fft_c2c(c.real, [0], 0, True)
    with pytest.raises(TypeError, match=r"\[fft_r2c\] expected a float32 or float64 tensor, but got complex128"):
        ember.fft_r2c(c, [0], 0, True)
    with pytest.raises(ValueError, match=r"\[fft_c2c\] expected normalization 0 \(none\)"):
        ember.fft_c2c(c, [0], 3, True)
    with pytest.raises(RuntimeError, match=r"\[fft_c2c\] expected distinct dims, but dim 1 appears more than once"):
        ember.fft_c2c(c, [1, -1], 0, True)
    with pytest.raises(IndexError, match=r"\[fft_r2c\] Dimension out of range"):
        ember.fft_r2c(c.real, [5], 0, True)
    with pytest.raises(ValueError, match=r"\[fft_c2r\] expected at least 7 bins"):
        ember.fft_c2r(c, [1], 0, 12)
    with pytest.raises(ValueError, match=r"\[fft_c2r\] expected last_dim_size >= 1, but got 0"):
        ember.fft_c2r(c, [1], 0, 0)


def test_bad_window_arguments():
    with pytest.raises(RuntimeError, match="hann_window requires non-negative window length, got window_length=-1"):
        ember.hann_window(-1)
    with pytest.raises(RuntimeError, match="kaiser_window expects floating point dtypes, got: ember.int64"):
        ember.kaiser_window(5, dtype=ember.int64)


def test_bad_stft_istft_arguments():
    x = t(arr(50))
    with pytest.raises(RuntimeError, match="stft requires the return_complex parameter be given for real inputs"):
        ember.stft(x, 16)
    with pytest.raises(RuntimeError, match=r"stft: expected 0 < n_fft <= 50, but got n_fft=60"):
        ember.stft(x, 60, center=False, return_complex=True)
    with pytest.raises(RuntimeError, match="stft: expected hop_length > 0, but got hop_length=0"):
        ember.stft(x, 16, hop_length=0, return_complex=True)
    with pytest.raises(RuntimeError, match="stft: expected 0 < win_length <= n_fft, but got win_length=20"):
        ember.stft(x, 16, win_length=20, return_complex=True)
    with pytest.raises(RuntimeError, match=r"stft: expected a 1D window tensor of size equal to win_length=16, "
                                           r"but got window with size \[8\]"):
        ember.stft(x, 16, window=ember.hann_window(8, dtype=ember.float64), return_complex=True)
    with pytest.raises(RuntimeError, match="stft: expected a 1D or 2D tensor, but got 3D tensor"):
        ember.stft(t(arr(2, 2, 50)), 16, return_complex=True)
    with pytest.raises(RuntimeError, match="Cannot have onesided output if window or input is complex"):
        ember.stft(t(arr(50, complex_=True)), 16, onesided=True)
    spec = ember.stft(x, 16, window=ember.hann_window(16, dtype=ember.float64), return_complex=True)
    with pytest.raises(RuntimeError, match="istft requires a complex-valued input tensor"):
        ember.istft(spec.real, 16)
    with pytest.raises(RuntimeError, match=r"match n_fft / 2 \+ 1 when onesided=True, but got 9"):
        ember.istft(spec, 20, onesided=True)
    with pytest.raises(RuntimeError, match="match n_fft when onesided=False, but got 9"):
        ember.istft(spec, 16, onesided=False)
    with pytest.raises(RuntimeError, match="Invalid window shape"):
        ember.istft(spec, 16, window=ember.ones([4], dtype=ember.float64))
    with pytest.raises(RuntimeError, match="istft expected 0 < hop_length <= win_length, but got hop_length=20"):
        ember.istft(spec, 16, hop_length=20)
    with pytest.raises(RuntimeError, match="cannot have onesided output"):
        ember.istft(spec, 16, return_complex=True)
    # a rectangle shorter than the hop leaves gaps in the overlap-added envelope
    with pytest.raises(RuntimeError, match="NOLA check failed"):
        ember.istft(spec, 16, hop_length=8, window=ember.hann_window(16, periodic=False, dtype=ember.float64),
                    center=False)
