"""float64 references for ember.special's functions, written independently of the kernels
(native/src/backend/cpu/special_math.cpp): integral representations by the trapezoidal rule
(exponentially convergent for periodic or doubly decaying integrands), series in exact fractions,
continued fractions, bisection, and the polynomials by their recurrences in exact fractions.
Special values follow the conventions the kernels document (Note [special functions]).

Loaded by test_opdb.py (the op database's `ref=` expressions) and test_special.py.
"""

from __future__ import annotations

import math
from decimal import Decimal, getcontext
from fractions import Fraction

import numpy as np

INF, NAN = math.inf, math.nan
EULER = 0.57721566490153286061


def _vectorize(fn):
    def ref(*arrays):
        return np.vectorize(fn, otypes=[float])(*[np.asarray(a, dtype=np.float64) for a in arrays])
    ref.scalar = fn
    return ref


# ---- the error function family ---------------------------------------------------------------------

def _erfcx_cf(x: float) -> float:
    """exp(x^2) erfc(x) for x >= 3 by the continued fraction
    sqrt(pi) erfcx(x) = 1 / (x + (1/2) / (x + 1 / (x + (3/2) / (x + ...)))), evaluated backwards."""
    if x > 1e8:
        return 1 / (x * math.sqrt(math.pi))
    value = x
    for k in range(400, 0, -1):
        value = x + (k / 2) / value
    return 1 / (value * math.sqrt(math.pi))


def _exp_square(x: float) -> float:
    """exp(x^2), with the rounding of x^2 carried exactly (a fraction)."""
    hi = x * x
    return math.exp(hi) * (1 + float(Fraction(x) ** 2 - Fraction(hi)))


def _erfcx(x: float) -> float:
    if math.isnan(x):
        return x
    if x == INF:
        return 0.0
    if x < 0:
        return INF if x < -26.7 else 2 * _exp_square(x) - _erfcx(-x)
    return _exp_square(x) * math.erfc(x) if x < 3 else _erfcx_cf(x)


def _ndtr(x: float) -> float:
    if math.isinf(x):
        return 0.0 if x < 0 else 1.0
    if x < -5:  # exp(-x^2/2) erfcx(-x/sqrt 2) / 2: the rounding of -x/sqrt(2) would cost x^2 ulps in erfc
        half_square = Fraction(x) ** 2 / 2
        hi = float(half_square)
        return 0.5 * _erfcx(-x / math.sqrt(2)) * math.exp(-hi) * (1 - float(half_square - Fraction(hi)))
    return 0.5 * math.erfc(-x / math.sqrt(2))


def _log_ndtr(x: float) -> float:
    if math.isnan(x):
        return x
    if x == INF:
        return -0.0
    if x == -INF:
        return -INF
    if x < -5:
        return -x * x / 2 + math.log(0.5 * _erfcx(-x / math.sqrt(2)))
    if x > 0:
        return math.log1p(-_ndtr(-x))
    return math.log(_ndtr(x))


def _ndtri(p: float) -> float:
    """Bisection on log ndtr (the lower half; the upper half by symmetry)."""
    if math.isnan(p) or p < 0 or p > 1:
        return NAN
    if p in (0.0, 1.0):
        return -INF if p == 0 else INF
    if p == 0.5:
        return 0.0
    if p > 0.5:
        return -_ndtri(1 - p) if 1 - p > 0 else INF
    target, lo, hi = math.log(p), -40.0, 0.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _log_ndtr(mid) < target else (lo, mid)
    return (lo + hi) / 2


def _entr(x: float) -> float:
    if math.isnan(x):
        return x
    return -x * math.log(x) if x > 0 else (0.0 if x == 0 else -INF)


def _xlog1py(x: float, y: float) -> float:
    if math.isnan(y):
        return y
    if x == 0:
        return 0.0
    if y < -1:
        return NAN
    if y == -1:
        return -x * INF if not math.isnan(x) else x
    return x * math.log1p(y)


# ---- the Hurwitz zeta function ------------------------------------------------------------------------

def _bernoulli(count: int) -> list[Fraction]:
    """B_0 .. B_count from sum_{k<=m} C(m+1, k) B_k = 0."""
    b = [Fraction(1)]
    for m in range(1, count + 1):
        b.append(-sum(math.comb(m + 1, k) * b[k] for k in range(m)) / (m + 1))
    return b


_B = _bernoulli(40)


def _pow(a: float, b: float) -> float:
    try:
        return a ** b
    except OverflowError:
        return INF


def _zeta_positive(x: float, q: float) -> float:
    """Euler-Maclaurin with 20 direct terms and 15 Bernoulli corrections."""
    n = 20
    if x > 1000:  # the first terms are all that is left above the underflow
        return 0.0 if q > 2.2 else math.fsum(_pow(q + k, -x) for k in range(n))
    total = math.fsum(_pow(q + k, -x) for k in range(n))
    w = q + n
    total += w ** (1 - x) / (x - 1) + 0.5 * w ** -x
    rising = 1.0
    for j in range(1, 16):
        rising = x if j == 1 else rising * (x + 2 * j - 3) * (x + 2 * j - 2)
        total += float(_B[2 * j] / math.factorial(2 * j)) * rising * w ** (-x - 2 * j + 1)
    return total


def _zeta(x: float, q: float) -> float:
    if x == 1:
        return INF
    if math.isnan(x) or math.isnan(q) or x < 1:
        return NAN
    if q <= 0 and (q == -INF or q.is_integer()):
        return INF
    if x == INF:
        return 0.0 if q > 1 else (1.0 if q == 1 else INF)
    if q == INF:
        return 0.0
    if q < 0:
        if not x.is_integer():
            return NAN
        m = math.ceil(-q)  # the first m terms directly, then q + m > 0
        return math.fsum((q + k) ** -x for k in range(m)) + _zeta_positive(x, q + m)
    return _zeta_positive(x, q)


# ---- Bessel functions --------------------------------------------------------------------------------

def _trapezoid_periodic(f, points: int) -> float:
    """The mean of a 2 pi-periodic function (the trapezoidal rule, exact to rounding once the
    points resolve it)."""
    return math.fsum(f(2 * math.pi * k / points) for k in range(points)) / points


def _hankel(n: int, x: float) -> tuple[float, float]:
    """(J_n, Y_n) for x >= 40 from the Hankel expansions."""
    mu = 4 * n * n
    p, q, term = 0.0, 0.0, 1.0
    for k in range(0, 60):
        if k > 0:
            term *= (mu - (2 * k - 1) ** 2) / (8 * k * x)
        sign = -1 if (k // 2) % 2 else 1
        if k % 2 == 0:
            p += sign * term
        else:
            q += sign * term
        if abs(term) < 1e-20:
            break
    # chi = x - (2n + 1) pi / 4: cos and sin of it from those of x
    c4, s4 = math.cos((2 * n + 1) * math.pi / 4), math.sin((2 * n + 1) * math.pi / 4)
    cos_chi = math.cos(x) * c4 + math.sin(x) * s4
    sin_chi = math.sin(x) * c4 - math.cos(x) * s4
    amp = math.sqrt(2 / (math.pi * x))
    return amp * (p * cos_chi - q * sin_chi), amp * (p * sin_chi + q * cos_chi)


def _bessel_j(n: int, x: float) -> float:
    """J_n(x) = (1/2pi) int_0^2pi cos(n t - x sin t) dt (the trapezoidal rule), Hankel past 40."""
    if math.isnan(x):
        return x
    if math.isinf(x):
        return 0.0
    sign = -1.0 if (n == 1 and x < 0) else 1.0
    ax = abs(x)
    if ax > 40:
        return sign * _hankel(n, ax)[0]
    return sign * _trapezoid_periodic(lambda t: math.cos(n * t - ax * math.sin(t)), 160)


def _bessel_y(n: int, x: float) -> float:
    """Y_n(x) from its series in 90-digit decimals (the logarithm, gamma and pi in floats), Hankel
    past 40."""
    if math.isnan(x) or x < 0:
        return NAN
    if x == 0:
        return -INF
    if math.isinf(x):
        return 0.0
    if x > 40:
        return _hankel(n, x)[1]
    if n == 1 and x < 1e-100:
        return -2 / (math.pi * x)
    q = Decimal(x) ** 2 / 4
    a, b, term = Decimal(0), Decimal(0), Decimal(1)
    h_k, h_kn = Decimal(0), Decimal(n)  # H_0, H_n (n is 0 or 1)
    for k in range(0, 300):
        if k > 0:
            term *= -q / (k * (k + n))
            h_k += Decimal(1) / k
            h_kn += Decimal(1) / (k + n)
        a += term
        b += (h_k + h_kn) * term
        if k > q and abs(term) < Decimal("1e-50"):
            break
    half_pow = Decimal(x) / 2 if n == 1 else Decimal(1)
    jn = float(half_pow * a)
    rest = float(half_pow * (b - 2 * Decimal(EULER) * a))
    value = 2 / math.pi * math.log(x / 2) * jn - rest / math.pi
    return value - (2 / (math.pi * x) if n == 1 else 0.0)


def _bessel_i(n: int, x: float) -> float:
    """I_n(x) = exp(|x|) (1/2pi) int_0^2pi exp(|x| (cos t - 1)) cos(n t) dt."""
    if math.isnan(x):
        return x
    ax = abs(x)
    if math.isinf(x) or ax > 720:
        return math.copysign(INF, x) if n == 1 else INF
    if n == 1 and x == 0:
        return x
    points = 64 + 4 * int(ax)
    mean = _trapezoid_periodic(lambda t: math.exp(ax * (math.cos(t) - 1)) * math.cos(n * t), points)
    half = math.exp(ax / 2)
    value = half * (half * mean)
    return -value if (n == 1 and x < 0) else value


def _scaled_k(nu: float, x: float) -> float:
    """exp(x) K_nu(x) = int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt by the trapezoidal rule with
    a fine step (the integrand extends evenly to the whole line)."""
    h = min(0.05, 0.2 / math.sqrt(x))
    total, k = 0.5, 1
    while True:
        t = k * h
        f = math.exp(-x * 2 * math.sinh(t / 2) ** 2) * math.cosh(nu * t)
        total += f
        if f < 1e-20 * total:
            return h * total
        k += 1


def _bessel_k(n: int, x: float, scaled: bool) -> float:
    if math.isnan(x) or x < 0:
        return NAN
    if x == 0:
        return INF
    if math.isinf(x):
        return 0.0
    if n == 1 and x < 1e-100:
        return 1 / x
    s = _scaled_k(float(n), x)
    return s if scaled else (s * math.exp(-x) if x < 745 else 0.0)


def _spherical_j0(x: float) -> float:
    if math.isnan(x):
        return x
    if math.isinf(x):
        return 0.0
    return 1.0 if x == 0 else math.sin(x) / x


# ---- Airy ---------------------------------------------------------------------------------------------

getcontext().prec = 90
_PI = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803")


# Ai(0) = 3^(-2/3) / Gamma(2/3) and -Ai'(0) = 3^(-1/3) / Gamma(1/3), to 60 digits
_AI0 = Decimal("0.355028053887817239260063186004183176397979174199177240583326510")
_MINUS_AIP0 = Decimal("0.258819403792806798405183560189203963479091138354934582210001814")


def _airy_phase(x: float) -> tuple[float, float]:
    """(zeta, zeta - pi/4 reduced mod 2 pi) for zeta = (2/3) |x|^(3/2), in 90-digit decimals."""
    ax = Decimal(-x)
    zeta = Decimal(2) / 3 * ax * ax.sqrt()
    phase = (zeta - _PI / 4) % (2 * _PI)
    return float(zeta), float(phase)


def _airy_ai(x: float) -> float:
    """Ai: the Maclaurin series in 90-digit decimals for -12 <= x <= 4, Ai(x) = sqrt(x/3)
    K_1/3(zeta) / pi beyond 4, the asymptotic expansion (with a 90-digit phase) below -12."""
    if math.isnan(x):
        return x
    if math.isinf(x):
        return 0.0
    if x > 4:
        zeta = 2 / 3 * x ** 1.5
        return 0.0 if zeta > 745 else math.sqrt(x / 3) / math.pi * _scaled_k(1 / 3, zeta) * math.exp(-zeta)
    if x < -12:
        if x < -1.5e20:
            return NAN  # the kernel's documented limit
        zeta, phase = _airy_phase(x)
        even, odd, u = 1.0, 0.0, 1.0
        last = INF
        for k in range(1, 40):
            u *= (6 * k - 5) * (6 * k - 3) * (6 * k - 1) / (216 * k * (2 * k - 1))
            term = u / zeta ** k
            if term > last:
                break
            last = term
            sign = -1 if (k // 2) % 2 else 1
            if k % 2 == 0:
                even += sign * term
            else:
                odd += sign * term
            if term < 1e-20:
                break
        return (math.cos(phase) * even + math.sin(phase) * odd) / (math.sqrt(math.pi) * (-x) ** 0.25)
    c1, c2 = _AI0, _MINUS_AIP0
    dx = Decimal(x)
    x3 = dx ** 3
    f = g = Decimal(0)
    tf, tg = Decimal(1), dx
    for k in range(1, 120):
        f += tf
        g += tg
        tf *= x3 / ((3 * k - 1) * (3 * k))
        tg *= x3 / ((3 * k) * (3 * k + 1))
        if abs(tf) + abs(tg) < Decimal("1e-40"):
            break
    return float(c1 * f - c2 * g)


# ---- orthogonal polynomials ---------------------------------------------------------------------------

_FIRST = {"t": lambda x: x, "u": lambda x: 2 * x, "v": lambda x: 2 * x - 1, "w": lambda x: 2 * x + 1,
          "h": lambda x: 2 * x, "he": lambda x: x, "l": lambda x: 1 - x, "p": lambda x: x}
_LEAD_SIGN = {"l": -1}  # the sign the leading coefficient gives at x -> +inf is (-1)^n for Laguerre
_KIND = {"chebyshev_polynomial_t": "t", "chebyshev_polynomial_u": "u", "chebyshev_polynomial_v": "v",
         "chebyshev_polynomial_w": "w", "hermite_polynomial_h": "h", "hermite_polynomial_he": "he",
         "laguerre_polynomial_l": "l", "legendre_polynomial_p": "p"}


def polynomial_exact(kind: str, x: Fraction, n: int) -> Fraction:
    """The degree-n polynomial at x by its three-term recurrence in exact fractions."""
    if n == 0:
        return Fraction(1)
    p0, p1 = Fraction(1), _FIRST[kind](x)
    for j in range(1, n):
        if kind in "tuvw":
            p2 = 2 * x * p1 - p0
        elif kind == "h":
            p2 = 2 * x * p1 - 2 * j * p0
        elif kind == "he":
            p2 = x * p1 - j * p0
        elif kind == "l":
            p2 = ((2 * j + 1 - x) * p1 - j * p0) / (j + 1)
        else:
            p2 = ((2 * j + 1) * x * p1 - j * p0) / (j + 1)
        p0, p1 = p1, p2
    return p1


def _to_float(v: Fraction) -> float:
    try:
        return float(v)
    except OverflowError:
        return math.copysign(INF, v)


def _polynomial(name: str, x: float, n: float) -> float:
    if math.isnan(n) or n == INF:
        return NAN
    k = math.trunc(n) if math.isfinite(n) else -1
    if k < 0:
        return 0.0
    if k == 0:
        return 1.0
    if math.isnan(x):
        return x
    shifted = name.startswith("shifted_")
    kind = _KIND[name.removeprefix("shifted_")]
    if math.isinf(x):
        lead = _LEAD_SIGN.get(kind, 1) if x > 0 else _LEAD_SIGN.get(kind, 1) * (-1) ** (k % 2)
        return lead * INF
    if k > 10**6:  # degrees far past any test of values: only a surely overflowed value is defined
        y = 2 * x - 1 if shifted else x
        sign = 1 if (y > 0 or k % 2 == 0) else -1
        grows = (kind in "tuvwp" and abs(y) > 1 and k * math.acosh(abs(y)) > 800) or \
            (kind in ("h", "he") and abs(y) > 4 * math.sqrt(4 * k + 2))
        return sign * INF if grows else NAN
    fx = Fraction(x)
    return _to_float(polynomial_exact(kind, 2 * fx - 1 if shifted else fx, k))


# ---- the names the op database's ref= expressions use ------------------------------------------------

entr_ref = _vectorize(_entr)
erfcx_ref = _vectorize(_erfcx)
ndtr_ref = _vectorize(lambda x: x if math.isnan(x) else _ndtr(x))
log_ndtr_ref = _vectorize(_log_ndtr)
ndtri_ref = _vectorize(_ndtri)
xlog1py_ref = _vectorize(_xlog1py)
zeta_ref = _vectorize(_zeta)
spherical_j0_ref = _vectorize(_spherical_j0)
airy_ai_ref = _vectorize(_airy_ai)


def bessel_j_ref(n, a):
    return _vectorize(lambda x: _bessel_j(n, x))(a)


def bessel_y_ref(n, a):
    return _vectorize(lambda x: _bessel_y(n, x))(a)


def bessel_i_ref(n, a):
    return _vectorize(lambda x: _bessel_i(n, x))(a)


def bessel_k_ref(n, a, scaled):
    return _vectorize(lambda x: _bessel_k(n, x, scaled))(a)


def polynomial_ref(name, a, b):
    return _vectorize(lambda x, n: _polynomial(name, x, n))(a, b)


REFS = {name: value for name, value in globals().items() if name.endswith("_ref")}
