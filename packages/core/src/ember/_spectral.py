"""stft, istft and the window functions (torch.stft, torch.istft, torch.hann_window, ...).

stft and istft check their arguments here (with PyTorch's messages) and run the native ops _stft
and _istft (native/src/ops/fft/stft.cpp, Note [stft frames]): framing, centre padding, windowing
and the transforms in C++, with derivatives for the signal and the window. istft raises when the
overlap-added squared window vanishes somewhere (the NOLA condition fails), as PyTorch does.

Windows are computed in float64 and cast to the requested dtype. A periodic window of length N
is the symmetric window of length N + 1 without its last point (PyTorch's convention).
"""

from __future__ import annotations

import math
import operator

from . import _C
from ._autocast_policy import autocast_policy
from .fft import _float_input

__all__ = ["stft", "istft", "hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]


# ---- windows ----------------------------------------------------------------------------------

def _window(name, window_length, periodic, dtype, device, requires_grad, symmetric):
    """`symmetric(n, N)` gives the symmetric window of N points at float64 positions n."""
    window_length = operator.index(window_length)
    dtype = _C.get_default_dtype() if dtype is None else dtype
    if dtype not in (_C.float16, _C.bfloat16, _C.float32, _C.float64):
        raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype}")
    if window_length < 0:
        raise RuntimeError(f"{name} requires non-negative window length, got window_length={window_length}")
    if window_length <= 1:
        w = _C.ones([window_length], dtype=dtype, device=device)
    else:
        n_points = window_length + 1 if periodic else window_length
        w = symmetric(_C.arange(0, n_points, dtype=_C.float64, device=device), n_points)
        if periodic:
            w = _C.narrow(w, 0, 0, window_length)
        w = _C.to_dtype(w, dtype, True)
    return w.requires_grad_(True) if requires_grad else w


def _cosine_sum(coefficients):
    """a0 - a1 cos(2 pi n / (N-1)) + a2 cos(4 pi n / (N-1)) - ... (the generalized cosine windows)."""
    def symmetric(n, n_points):
        phase = n * (2.0 * math.pi / (n_points - 1))
        w = _C.full(list(n.shape), coefficients[0], dtype=_C.float64, device=n.device)
        for k, a in enumerate(coefficients[1:], start=1):
            w = w + (-1) ** k * a * _C.cos(phase * k)
        return w
    return symmetric


def hann_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """0.5 - 0.5 cos(2 pi n / (N - 1))."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad, _cosine_sum((0.5, 0.5)))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum((float(alpha), float(beta))))


def blackman_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """0.42 - 0.5 cos(2 pi n / (N - 1)) + 0.08 cos(4 pi n / (N - 1))."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum((0.42, 0.5, 0.08)))


def bartlett_window(window_length, periodic=True, *, dtype=None, layout=None, device=None, requires_grad=False):
    """The triangle 1 - |2n / (N - 1) - 1|."""
    def symmetric(n, n_points):
        return 1.0 - _C.abs(n * (2.0 / (n_points - 1)) - 1.0)
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad, symmetric)


def _i0(x):
    """The modified Bessel function I0 of non-negative float64 x, by its power series
    sum_k ((x/2)^k / k!)^2, summed until the terms no longer change the result."""
    quarter = x * x / 4.0
    term = _C.ones_like(x)
    total = _C.ones_like(x)
    for k in range(1, 1000):
        term = term * quarter / float(k * k)
        total = total + term
        if x.numel() == 0 or float(_C.amax(term / total, [])) < 1e-17:
            break
    return total


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None, device=None,
                  requires_grad=False):
    """I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta)."""
    beta = float(beta)

    def symmetric(n, n_points):
        r = n * (2.0 / (n_points - 1)) - 1.0
        x = beta * _C.sqrt(_C.clamp(1.0 - r * r, 0.0, None))
        return _i0(x) / _i0(_C.full([1], beta, dtype=_C.float64, device=n.device))
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad, symmetric)


# ---- stft / istft -----------------------------------------------------------------------------

@autocast_policy("fp32")
def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """Short-time Fourier transform: (B?, n_fft // 2 + 1 or n_fft, n_frames) complex frames,
    computed by the native op _stft (framing, padding, windowing and the transforms in one pass
    for real signals; Note [stft frames] in native/src/ops/fft/stft.cpp)."""
    x = _float_input(input, "stft")
    complex_any = x.is_complex() or (window is not None and window.is_complex())
    if return_complex is None:
        if not complex_any:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if x.dim() not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {x.dim()}D tensor")
    n_fft = operator.index(n_fft)
    hop = n_fft // 4 if hop_length is None else operator.index(hop_length)
    win = n_fft if win_length is None else operator.index(win_length)
    length = x.shape[-1] + (2 * (n_fft // 2) if center else 0)
    if not 0 < n_fft <= length:
        raise RuntimeError(f"stft: expected 0 < n_fft <= {length}, but got n_fft={n_fft}")
    if hop <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length={win}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError(f"stft: expected a 1D window tensor of size equal to win_length={win}, but got window "
                           f"with size {list(window.shape)}")
    if onesided is None:
        onesided = not complex_any
    elif onesided and complex_any:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    out = _C._stft(x, n_fft, hop, win, window, bool(center), pad_mode, bool(normalized), bool(onesided))
    return out if return_complex else _C.view_as_real(out)


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """Inverse short-time Fourier transform: overlap-adds the windowed inverse transforms of the
    frames of `input` (B?, n_freq, n_frames) and divides by the overlap-added squared window
    (native op _istft)."""
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"istft(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex values, but got "
                           f"{input.dim()}D tensor")
    n_fft = operator.index(n_fft)
    hop = n_fft // 4 if hop_length is None else operator.index(hop_length)
    win = n_fft if win_length is None else operator.index(win_length)
    fft_size = input.shape[-2]
    if onesided is None:
        onesided = fft_size != n_fft
    if onesided:
        if n_fft // 2 + 1 != fft_size:
            raise RuntimeError(f"istft expected the frequency dimension (3rd to the last) of the input tensor to "
                               f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    elif n_fft != fft_size:
        raise RuntimeError(f"istft expected the frequency dimension (3rd to the last) of the input tensor to match "
                           f"n_fft when onesided=False, but got {fft_size}")
    if not 0 < win <= n_fft:
        raise RuntimeError(f"istft expected 0 < win_length <= n_fft, but got win_length={win}")
    if not 0 < hop <= win:
        raise RuntimeError(f"istft expected 0 < hop_length <= win_length, but got hop_length={hop}")
    if window is not None and (window.dim() != 1 or window.shape[0] != win):
        raise RuntimeError("Invalid window shape. window has to be 1D and length of `win_length`")
    if return_complex and onesided:
        raise RuntimeError("cannot have onesided output if window or input is complex")
    if not return_complex and window is not None and window.is_complex():
        raise RuntimeError("Complex windows are incompatible with return_complex=False")
    length = None if length is None else operator.index(length)
    return _C._istft(input, n_fft, hop, win, window, bool(center), bool(normalized), bool(onesided), length,
                     bool(return_complex))


def tensor_methods() -> dict[str, object]:
    """Tensor.stft / Tensor.istft, as torch.Tensor has them, for ember/_tensor_methods.py to attach."""
    return {"stft": stft, "istft": istft}
