"""Window functions with torch.signal.windows' signatures.

Every window has M points. ``sym=True`` gives the symmetric window (for filter design);
``sym=False`` the periodic one (for spectral analysis): the first M points of the symmetric
window of M + 1 points. Each is evaluated in float64 and then rounded once to the asked dtype.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import ember

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine", "general_hamming", "hamming",
           "hann", "kaiser", "nuttall"]


def _checks(name: str, M: int, dtype: ember.dtype | None, layout: ember.layout) -> ember.dtype:
    if isinstance(M, bool) or not isinstance(M, int):
        raise TypeError(f"{name}: M must be an int, got {type(M).__name__}")
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    if layout is not ember.strided:
        raise ValueError(f"{name} is implemented for strided tensors only, got: {layout}")
    dtype = ember.get_default_dtype() if dtype is None else dtype
    if dtype not in (ember.float32, ember.float64):
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dtype}")
    return dtype


def _span(M: int, sym: bool) -> int:
    """The denominator of the window's position n / span: M - 1 when symmetric, M when periodic
    (a one-point window is the same either way)."""
    return M - 1 if sym or M == 1 else M


def _finish(values: ember.Tensor, dtype: ember.dtype, device: object, requires_grad: bool) -> ember.Tensor:
    return values.to(dtype=dtype, device=device if device is not None else values.device).requires_grad_(requires_grad)


def _positions(M: int, device: object) -> ember.Tensor:
    return ember.arange(M, dtype=ember.float64, device=device)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0, sym: bool = True,
                dtype: ember.dtype | None = None, layout: ember.layout = ember.strided, device: object = None,
                requires_grad: bool = False) -> ember.Tensor:
    """w_n = exp(-|n - center| / tau); center defaults to the window's middle, and may be given
    only for a periodic window."""
    dtype = _checks("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if center is None:
        center = _span(M, sym) / 2.0
    n = _positions(M, device)
    return _finish(ember.exp(-(n - center).abs() / tau), dtype, device, requires_grad)


def cosine(M: int, *, sym: bool = True, dtype: ember.dtype | None = None, layout: ember.layout = ember.strided,
           device: object = None, requires_grad: bool = False) -> ember.Tensor:
    """The sine window w_n = sin(pi (n + 1/2) / (span + 1)): it starts and ends above zero."""
    dtype = _checks("cosine", M, dtype, layout)
    n = _positions(M, device)
    return _finish(ember.sin(math.pi * (n + 0.5) / (_span(M, sym) + 1)), dtype, device, requires_grad)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: ember.dtype | None = None,
             layout: ember.layout = ember.strided, device: object = None, requires_grad: bool = False) -> ember.Tensor:
    """w_n = exp(-(n - span/2)^2 / (2 std^2))."""
    dtype = _checks("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    n = _positions(M, device)
    return _finish(ember.exp(-((n - _span(M, sym) / 2.0) / std).square() / 2), dtype, device, requires_grad)


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: ember.dtype | None = None,
           layout: ember.layout = ember.strided, device: object = None, requires_grad: bool = False) -> ember.Tensor:
    """w_n = I0(beta sqrt(1 - (2n/span - 1)^2)) / I0(beta), I0 the modified Bessel function."""
    dtype = _checks("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _finish(ember.ones(M, dtype=ember.float64, device=device), dtype, device, requires_grad)
    x = 2 * _positions(M, device) / _span(M, sym) - 1
    # Rounding can put |x| a hair above 1 at the ends: clamp so the square root stays real.
    inner = (1 - x.square()).clamp(min=0).sqrt()
    i0_beta = ember.special.i0(ember.tensor(float(beta), dtype=ember.float64, device=device))
    return _finish(ember.special.i0(beta * inner) / i0_beta, dtype, device, requires_grad)


def general_cosine(M: int, *, a: Iterable, sym: bool = True, dtype: ember.dtype | None = None,
                   layout: ember.layout = ember.strided, device: object = None,
                   requires_grad: bool = False) -> ember.Tensor:
    """w_n = sum_i (-1)^i a_i cos(2 pi i n / span)."""
    dtype = _checks("general_cosine", M, dtype, layout)
    if not isinstance(a, (list, tuple)):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    if M == 1:  # every window of one point is the single value 1, as PyTorch's
        return _finish(ember.ones(1, dtype=ember.float64, device=device), dtype, device, requires_grad)
    angle = 2 * math.pi * _positions(M, device) / _span(M, sym)
    total = ember.zeros(M, dtype=ember.float64, device=device)
    for i, coefficient in enumerate(a):
        total = total + (-1) ** i * float(coefficient) * ember.cos(i * angle)
    return _finish(total, dtype, device, requires_grad)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True, dtype: ember.dtype | None = None,
                    layout: ember.layout = ember.strided, device: object = None,
                    requires_grad: bool = False) -> ember.Tensor:
    """w_n = alpha - (1 - alpha) cos(2 pi n / span)."""
    _checks("general_hamming", M, dtype, layout)
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def hamming(M: int, *, sym: bool = True, dtype: ember.dtype | None = None, layout: ember.layout = ember.strided,
            device: object = None, requires_grad: bool = False) -> ember.Tensor:
    """The Hamming window: general_hamming with alpha = 0.54."""
    _checks("hamming", M, dtype, layout)
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device, requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: ember.dtype | None = None, layout: ember.layout = ember.strided,
         device: object = None, requires_grad: bool = False) -> ember.Tensor:
    """The Hann window: general_hamming with alpha = 0.5."""
    _checks("hann", M, dtype, layout)
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: ember.dtype | None = None, layout: ember.layout = ember.strided,
             device: object = None, requires_grad: bool = False) -> ember.Tensor:
    """The Blackman window: general_cosine with a = (0.42, 0.5, 0.08)."""
    _checks("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: ember.dtype | None = None, layout: ember.layout = ember.strided,
            device: object = None, requires_grad: bool = False) -> ember.Tensor:
    """The minimum 4-term Blackman-Harris window (Nuttall's), a general_cosine."""
    _checks("nuttall", M, dtype, layout)
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype: ember.dtype | None = None, layout: ember.layout = ember.strided,
             device: object = None, requires_grad: bool = False) -> ember.Tensor:
    """The triangular window w_n = 1 - |2n/span - 1|."""
    dtype = _checks("bartlett", M, dtype, layout)
    if M == 1:
        return _finish(ember.ones(1, dtype=ember.float64, device=device), dtype, device, requires_grad)
    n = _positions(M, device)
    return _finish(1 - (2 * n / _span(M, sym) - 1).abs(), dtype, device, requires_grad)
