"""stft, istft and the window functions (torch.stft, torch.istft, torch.hann_window, ...).

stft frames the (centre-padded) signal with `unfold`, multiplies by the window (padded to n_fft
centrally) and transforms each frame with fft_r2c / fft_c2c. istft inverts each frame and
overlap-adds them with index_add, dividing by the overlap-added squared window; it raises when
that envelope vanishes somewhere (the NOLA condition fails), as PyTorch does. Everything is made
of differentiable ops, so both have gradients.

Windows are computed in float64 and cast to the requested dtype. A periodic window of length N
is the symmetric window of length N + 1 without its last point (PyTorch's convention).
"""

from __future__ import annotations

import math
import operator

from . import _C
from .fft import _float_input
from .nn._padding import pad as _pad

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

def _pad_window(window, win_length, n_fft):
    """The window zero-padded on both sides to n_fft points, centred as PyTorch centres it."""
    left = (n_fft - win_length) // 2
    right = n_fft - win_length - left
    if not left and not right:
        return window
    parts = []
    if left:
        parts.append(_C.zeros([left], dtype=window.dtype, device=window.device))
    parts.append(window)
    if right:
        parts.append(_C.zeros([right], dtype=window.dtype, device=window.device))
    return _C.cat(parts, 0)


def _complex_of(dtype):
    return _C.complex128 if dtype in (_C.float64, _C.complex128) else _C.complex64


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, pad_mode="reflect",
         normalized=False, onesided=None, return_complex=None):
    """Short-time Fourier transform: (B?, n_fft // 2 + 1 or n_fft, n_frames) complex frames."""
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
    if center:
        half = n_fft // 2
        batched = _C.reshape(x, [1] * (3 - x.dim()) + list(x.shape))
        x = _C.reshape(_pad(batched, [half, half], pad_mode), list(x.shape[:-1]) + [x.shape[-1] + 2 * half])
    signal_dim = x.dim()
    if signal_dim == 1:
        x = _C.unsqueeze(x, 0)
    length = x.shape[-1]
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
    frames = _C.unfold(x, -1, n_fft, hop)  # (B, n_frames, n_fft), a view
    if window is not None:
        frames = frames * _pad_window(window, win, n_fft)
    elif win < n_fft:  # no window but a shorter win_length: a centred rectangle
        frames = frames * _pad_window(_C.ones([win], dtype=x.dtype, device=x.device), win, n_fft)
    normalization = 1 if normalized else 0
    if frames.is_complex():
        out = _C.fft_c2c(frames, [2], normalization, True)
    else:
        out = _C.fft_r2c(frames, [2], normalization, bool(onesided))
    out = _C.transpose(out, 1, 2)
    if signal_dim == 1:
        out = _C.squeeze(out, [0])
    return out if return_complex else _C.view_as_real(_C.contiguous(out))


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
          onesided=None, length=None, return_complex=False):
    """Inverse short-time Fourier transform: overlap-adds the inverted frames of `input`
    (B?, n_freq, n_frames) and divides by the overlap-added squared window."""
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"istft(): argument 'input' must be Tensor, not {type(input).__name__}")
    if not input.is_complex():
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if input.dim() not in (2, 3):
        raise RuntimeError(f"istft: expected a tensor with 2 or 3 dimensions of complex values, but got "
                           f"{input.dim()}D tensor")
    x = _C.unsqueeze(input, 0) if input.dim() == 2 else input
    n_fft = operator.index(n_fft)
    hop = n_fft // 4 if hop_length is None else operator.index(hop_length)
    win = n_fft if win_length is None else operator.index(win_length)
    fft_size, n_frames = x.shape[1], x.shape[2]
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
    real_dtype = _C.float64 if x.dtype == _C.complex128 else _C.float32
    if window is None:
        window = _C.ones([win], dtype=real_dtype, device=x.device)
    elif window.dim() != 1 or window.shape[0] != win:
        raise RuntimeError("Invalid window shape. window has to be 1D and length of `win_length`")
    window = _pad_window(window, win, n_fft)
    frames = _C.transpose(x, 1, 2)  # (B, n_frames, fft_size)
    normalization = 1 if normalized else 2
    if return_complex:
        if onesided:
            raise RuntimeError("cannot have onesided output if window or input is complex")
        frames = _C.fft_c2c(frames, [2], normalization, False)
    else:
        if window.is_complex():
            raise RuntimeError("Complex windows are incompatible with return_complex=False")
        if not onesided:
            frames = _C.narrow(frames, 2, 0, n_fft // 2 + 1)
        frames = _C.fft_c2r(frames, [2], normalization, n_fft)
    frames = frames * window
    batch = frames.shape[0]
    total = n_fft + hop * (n_frames - 1)
    # sample positions of every frame's points, in frame order: the overlap-add indices
    starts = _C.arange(0, n_frames * hop, hop, dtype=_C.int64, device=x.device) if n_frames else \
        _C.zeros([0], dtype=_C.int64, device=x.device)
    index = _C.reshape(_C.unsqueeze(starts, 1) + _C.unsqueeze(_C.arange(0, n_fft, dtype=_C.int64,
                                                                        device=x.device), 0), [-1])
    y = _C.index_add(_C.zeros([batch, total], dtype=frames.dtype, device=x.device), 1, index,
                     _C.reshape(frames, [batch, n_frames * n_fft]))
    squares = _C.reshape(_C.expand(_C.unsqueeze(window * window, 0), [n_frames, n_fft]), [-1])
    envelope = _C.index_add(_C.zeros([total], dtype=squares.dtype, device=x.device), 0, index, squares)
    start = n_fft // 2 if center else 0
    if length is not None:
        end = start + operator.index(length)
    elif center:
        end = total - n_fft // 2
    else:
        end = total
    stop = min(max(end, start), total)
    y = _C.narrow(y, 1, start, max(stop - start, 0))
    envelope = _C.narrow(envelope, 0, start, max(stop - start, 0))
    if envelope.numel() > 0:
        lowest = float(_C.amin(_C.abs(envelope), []))
        if lowest < 1e-11:
            raise RuntimeError(f"istft: window overlap add min: {lowest:g}, NOLA check failed (the squared window "
                               f"must overlap-add to a nonzero value at every output sample)")
    y = y / envelope
    if length is not None and end > total:
        y = _C.cat([y, _C.zeros([batch, end - stop], dtype=y.dtype, device=x.device)], 1)
    if input.dim() == 2:
        y = _C.squeeze(y, [0])
    return y


# Tensor.stft / Tensor.istft, as torch.Tensor has them
_C.Tensor.stft = stft
_C.Tensor.istft = istft
