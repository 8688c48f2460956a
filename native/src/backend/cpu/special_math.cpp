// Scalar special functions in double (declarations in special_math.h).
//
// Note [special functions]: every function here is evaluated in double from its textbook
// mathematics (power series, asymptotic expansions, integral representations, recurrences), with
// no fitted coefficient tables:
//  - Series that cancel (the Bessel and Airy power series, K's logarithmic series) are summed in
//    double-double (`DD`, error-free sums and fma products), so their ~1e8-fold cancellations
//    still leave a double's precision.
//  - J, Y beyond |x| = 25 and Ai below -10 use their Hankel-type asymptotic expansions, whose
//    smallest terms there are below 1e-19; the phases come from sin(x), cos(x) of the argument
//    itself (no subtraction of pi/4 in floating point).
//  - K_nu (nu = 0, 1, 1/3: Ai for x > 2 is K_1/3) beyond x = 2 is the trapezoidal rule on
//    exp(x) K_nu(x) = int_0^inf exp(-2 x sinh^2(t/2)) cosh(nu t) dt, which converges exponentially
//    (a step of min(0.2, 0.45/sqrt(x)) reaches 1e-17; every term is positive).
//  - ndtr, log_ndtr and erfcx carry x^2 exactly (a double-double) into their exp(-x^2/2) and
//    exp(x^2), so the normal tails keep their relative precision to the underflow threshold; ndtri is
//    sqrt(2) erfinv(2p - 1) in the centre and Newton's method on log ndtr in the tails.
//  - zeta is Euler-Maclaurin summation (12 Bernoulli terms past q + k > 9); a negative
//    non-integer q is reflected onto positive arguments, so no input loops for long.
// Special values follow PyTorch, except where PyTorch returns NaN for a limit that exists (the
// Bessel and Airy functions at +-inf give their limits 0 or +-inf; zeta(inf, q) and zeta(x, inf)
// their limits) and where it ignores a NaN (a NaN degree n or zeta argument x gives NaN). Ai(x)
// for x < -1.5e20 is NaN: its phase (2/3)|x|^(3/2) is then beyond a double-double's resolution.
//
// Polynomials: n is truncated toward zero; n < 0 gives 0, n == 0 gives 1 (even for a NaN x), and
// n == +inf gives NaN. Chebyshev polynomials use the three-term recurrence for small degrees and
// their closed forms (cos(n acos x), cosh(n acosh x), ...) beyond; Hermite, Laguerre and Legendre
// use their recurrences (rescaled by powers of two so that an overflowing value keeps its sign);
// above degree 2^24 they give their infinity where the value has surely overflowed, and NaN
// otherwise, rather than loop for minutes.

#include "backend/cpu/special_math.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ember::special_math {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kPi = 3.14159265358979323846;

// ---- double-double arithmetic: a value hi + lo with |lo| <= ulp(hi) / 2 -----------------------
struct DD {
  double hi, lo;
};

inline DD two_sum(double a, double b) {
  const double s = a + b;
  const double bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}
inline DD quick_two_sum(double a, double b) {
  const double s = a + b;
  return {s, b - (s - a)};
}
inline DD two_prod(double a, double b) {
  const double p = a * b;
  return {p, std::fma(a, b, -p)};
}
inline DD operator+(DD a, DD b) {
  DD s = two_sum(a.hi, b.hi);
  const DD t = two_sum(a.lo, b.lo);
  s.lo += t.hi;
  s = quick_two_sum(s.hi, s.lo);
  s.lo += t.lo;
  return quick_two_sum(s.hi, s.lo);
}
inline DD operator-(DD a) {
  return {-a.hi, -a.lo};
}
inline DD operator-(DD a, DD b) {
  return a + (-b);
}
inline DD operator*(DD a, DD b) {
  DD p = two_prod(a.hi, b.hi);
  p.lo += a.hi * b.lo + a.lo * b.hi;
  return quick_two_sum(p.hi, p.lo);
}
inline DD operator*(DD a, double b) {
  DD p = two_prod(a.hi, b);
  p.lo += a.lo * b;
  return quick_two_sum(p.hi, p.lo);
}
inline DD operator/(DD a, double b) {
  const double q1 = a.hi / b;
  const DD r = a - two_prod(q1, b);
  return quick_two_sum(q1, r.hi / b);
}
inline DD dd(double v) {
  return {v, 0.0};
}

// Constants as double-doubles.
constexpr DD kEuler{0.5772156649015329, -4.942915152430645e-18};
constexpr DD kTwoOverPi{0.6366197723675814, -3.935735335036497e-17};
constexpr DD kOneOverPi{0.3183098861837907, -1.9678676675182486e-17};
constexpr DD kAi0{0.3550280538878172, 2.05233632436212e-17};     // Ai(0)
constexpr DD kAiP0{0.2588194037928068, -2.522243111610832e-17};  // -Ai'(0)
constexpr double kInvSqrt2Hi = 0.7071067811865476;
constexpr double kTwoOverSqrtPi = 1.1283791670955126;
constexpr double kSqrt2 = 1.4142135623730951;
constexpr double kSqrtTwoOverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kSqrtPiOverTwo = 1.2533141373155003;  // sqrt(pi / 2)

bool is_odd_integer(double k) {
  return std::fmod(k, 2.0) != 0.0;
}

// ---- the error function family -----------------------------------------------------------------

// exp(-(s.hi + s.lo)) for a double-double exponent (s.lo tiny against s.hi).
double exp_neg(DD s) {
  return std::exp(-s.hi) * (1.0 - s.lo);
}

// erfcx(x) for x >= 0.
double erfcx_nonneg(double x) {
  if (x < 26.0) {
    const DD s = two_prod(x, x);  // exp(x^2) with x^2 carried exactly
    return std::exp(s.hi) * (1.0 + s.lo) * std::erfc(x);
  }
  // 1 / (x sqrt(pi)) sum_k (-1)^k (2k - 1)!! / (2 x^2)^k: the smallest term is far below 1e-17
  const double z = 1.0 / (2.0 * x * x);
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 12; ++k) {
    term *= -(2.0 * k - 1.0) * z;
    sum += term;
  }
  return sum / (x * 1.7724538509055160273);
}

// erfinv for |y| <= 0.5 by Newton's method on erf (erf(x) ~ 2x / sqrt(pi) keeps small x relative).
double erfinv_central(double y) {
  if (y == 0.0) return y;
  double x = y * 0.88622692545275801365 * (1.0 + 0.2 * y * y);
  for (int i = 0; i < 6; ++i) {
    const double f = std::erf(x) - y;
    const double step = f / (kTwoOverSqrtPi * std::exp(-x * x));
    x -= step / (1.0 + x * step);  // Halley's correction (erf'' = -2x erf')
    if (std::fabs(step) <= 1e-17 * std::fabs(x)) break;
  }
  return x;
}

// For x < -1: ndtr(x) = exp(-x^2/2) m(x) with m(x) = erfcx(-x / sqrt(2)) / 2. The exponent is
// carried exactly (two_prod); m varies slowly (d log m / dz ~ -1/z), so the rounding of
// -x / sqrt(2) costs it nothing.
double ndtr_tail_factor(double x) {
  return 0.5 * erfcx_nonneg(-x * kInvSqrt2Hi);
}

// ---- Bessel power series in double-double -------------------------------------------------------

// For order n (0 or 1) and sign s (-1: J and Y; +1: I and K), with q = x^2 / 4 and
// t_k = (s q)^k / (k! (k + n)!): A = sum t_k and B = sum (H_k + H_{k+n}) t_k (H the harmonic
// numbers), so that J_n or I_n = (x/2)^n A and the logarithmic series of Y_n and K_n are B - 2 gamma A.
struct SeriesAB {
  DD a, b;
};
SeriesAB bessel_series(int n, double s, double x) {
  const DD q = two_prod(x, x) * 0.25;
  DD term = dd(n == 1 ? 1.0 : 1.0);
  DD hk = dd(0.0), hkn = dd(n == 1 ? 1.0 : 0.0);  // H_0, H_n
  SeriesAB r{term, term * (hk + hkn)};
  for (int k = 1; k < 400; ++k) {
    term = term * q / (static_cast<double>(k) * static_cast<double>(k + n));
    if (s < 0) term = -term;
    hk = hk + dd(1.0) / static_cast<double>(k);
    hkn = hkn + dd(1.0) / static_cast<double>(k + n);
    r.a = r.a + term;
    r.b = r.b + term * (hk + hkn);
    if (static_cast<double>(k) > q.hi && std::fabs(term.hi) < 1e-36 * (1.0 + std::fabs(r.b.hi))) break;
  }
  return r;
}

// ln(x / 2) (to double precision: its rounding stays below the absolute error of the result).
DD log_half(double x) {
  return dd(std::log(0.5 * x));
}

// Adds the k-th term t_k of an asymptotic series split in two, as the Hankel and Airy expansions
// are: even = sum (-1)^j t_2j, odd = sum (-1)^j t_2j+1.
inline void add_to_pair(int k, double term, double& even, double& odd) {
  const double signed_term = ((k / 2) % 2 == 0) ? term : -term;
  (k % 2 == 0 ? even : odd) += signed_term;
}

// The Hankel expansions P, Q of J_n, Y_n (n = 0, 1) at x >= 25.
void hankel_pq(int n, double x, double& p, double& q) {
  const double mu = 4.0 * n * n;
  const double inv8x = 1.0 / (8.0 * x);
  double term = 1.0;
  p = 1.0;
  q = 0.0;
  double last = kInf;
  for (int k = 1; k < 200; ++k) {
    const double odd = 2.0 * k - 1.0;
    term *= (mu - odd * odd) * inv8x / k;  // a_k(n) / x^k
    const double mag = std::fabs(term);
    if (mag > last) break;  // past the smallest term of the asymptotic series
    last = mag;
    add_to_pair(k, term, p, q);  // P = sum (-1)^j a_2j / x^2j, Q = sum (-1)^j a_2j+1 / x^2j+1
    if (mag < 1e-18) break;
  }
}

// J_n (first) or Y_n for x >= 25 from the Hankel expansions; chi = x - (n/2 + 1/4) pi taken apart as
// sin x, cos x.
double bessel_large(int n, double x, bool second_kind) {
  double p, q;
  hankel_pq(n, x, p, q);
  const double s = std::sin(x), c = std::cos(x);
  // cos(chi), sin(chi) times sqrt(2)
  const double cos_chi = n == 0 ? (c + s) : (s - c);
  const double sin_chi = n == 0 ? (s - c) : -(s + c);
  const double amp = kSqrtTwoOverPi / std::sqrt(x) * 0.7071067811865476;
  return second_kind ? amp * (p * sin_chi + q * cos_chi) : amp * (p * cos_chi - q * sin_chi);
}

constexpr double kSeriesLimit = 25.0;

double bessel_j(int n, double x) {
  if (std::isnan(x)) return x;
  const double ax = std::fabs(x);
  const double sign = (n == 1 && x < 0) ? -1.0 : 1.0;
  if (std::isinf(ax)) return sign * 0.0;
  if (ax > kSeriesLimit) return sign * bessel_large(n, ax, false);
  if (n == 1 && ax < 1e-150) return 0.5 * x;  // (x/2) (1 - x^2/8 ...): keeps -0.0 and the subnormals
  const SeriesAB r = bessel_series(n, -1.0, ax);
  const DD v = n == 0 ? r.a : r.a * ax * 0.5;
  return sign * v.hi;
}

double bessel_y(int n, double x) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return -kInf;
  if (std::isinf(x)) return 0.0;
  if (x > kSeriesLimit) return bessel_large(n, x, true);
  if (n == 1 && x < 1e-100) return -kTwoOverPi.hi / x;  // -2 / (pi x); the rest is below its ulp
  const SeriesAB r = bessel_series(n, -1.0, x);
  const DD half_pow = dd(n == 0 ? 1.0 : 0.5 * x);  // (x/2)^n
  const DD jn = r.a * half_pow;
  // Y_n = (2/pi) ln(x/2) J_n - ((x/2)^n / pi) (B - 2 gamma A) - [n = 1] 2 / (pi x)
  DD y = kTwoOverPi * (log_half(x) * jn) - kOneOverPi * (half_pow * (r.b - kEuler * r.a * 2.0));
  if (n == 1) y = y - kTwoOverPi / x;
  return y.hi;
}

// I_n(x) for x >= 0: the series (positive terms) to 30, the asymptotic expansion beyond.
double bessel_i(int n, double x) {
  if (x <= 30.0) {
    if (n == 1 && x < 1e-150) return 0.5 * x;
    const SeriesAB r = bessel_series(n, 1.0, x);
    return (n == 0 ? r.a : r.a * x * 0.5).hi;
  }
  const double mu = 4.0 * n * n;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 200; ++k) {
    const double odd = 2.0 * k - 1.0;
    term *= -(mu - odd * odd) / (8.0 * k * x);
    sum += term;
    if (std::fabs(term) < 1e-18 * std::fabs(sum)) break;
  }
  const double scaled = sum / std::sqrt(2.0 * kPi * x);
  const double half = std::exp(0.5 * x);  // e^x in two halves: I_n is finite a little past e^x's overflow
  return half * (half * scaled);
}

// exp(x) K_nu(x) for x > 0 by the trapezoidal rule (Note [special functions]).
double scaled_k_integral(double nu, double x) {
  const double h = std::fmin(0.2, 0.45 / std::sqrt(x));
  double sum = 0.5;  // f(0) / 2 (f(0) = 1)
  for (int k = 1; k < 100000; ++k) {
    const double t = k * h;
    const double sh = std::sinh(0.5 * t);
    const double f = std::exp(-2.0 * x * sh * sh) * (nu == 0.0 ? 1.0 : std::cosh(nu * t));
    sum += f;
    if (f < 1e-18 * sum) break;
  }
  return h * sum;
}

// exp(x) K_n(x) (scaled) or K_n(x) for x > 0.
double bessel_k(int n, double x, bool scaled) {
  if (x > 2.0) {
    const double s = scaled_k_integral(static_cast<double>(n), x);
    return scaled ? s : s * std::exp(-x);
  }
  if (n == 1 && x < 1e-100) {
    const double v = 1.0 / x;  // the rest is below its ulp
    return scaled ? v * std::exp(x) : v;
  }
  const SeriesAB r = bessel_series(n, 1.0, x);
  const DD half_pow = dd(n == 0 ? 1.0 : 0.5 * x);
  const DD in = r.a * half_pow;
  const DD log_term = log_half(x) * in;
  const DD tail = half_pow * (r.b - kEuler * r.a * 2.0) * 0.5;
  // K_n = [n = 1] / x + (-1)^(n+1) ln(x/2) I_n + (-1)^n (1/2) (x/2)^n (B - 2 gamma A)
  DD k = n == 0 ? tail - log_term : log_term - tail + dd(1.0) / x;
  const double v = k.hi;
  return scaled ? v * std::exp(x) : v;
}

// ---- Airy ---------------------------------------------------------------------------------------

// Ai(x) for -10 <= x <= 2: Ai(0) f(x) + Ai'(0) g(x), the Maclaurin series in double-double.
double airy_series(double x) {
  const DD x3 = two_prod(x, x) * x;
  DD f = dd(1.0), g = dd(x), tf = dd(1.0), tg = dd(x);
  for (int k = 1; k < 200; ++k) {
    const double k3 = 3.0 * k;
    tf = tf * x3 / ((k3 - 1.0) * k3);
    tg = tg * x3 / (k3 * (k3 + 1.0));
    f = f + tf;
    g = g + tg;
    if (std::fabs(tf.hi) + std::fabs(tg.hi) < 1e-36) break;
  }
  return (kAi0 * f - kAiP0 * g).hi;
}

// zeta = (2/3) x^(3/2) as a double-double, so that Ai's phase and decay keep x's precision.
DD airy_zeta(double x) {
  const double r = std::sqrt(x);
  const double r_lo = std::fma(-r, r, x) / (2.0 * r);  // sqrt(x) = r + r_lo
  DD p = two_prod(x, r);
  p.lo += x * r_lo;
  return p * DD{0.6666666666666666, 3.700743415417188e-17};
}

// Ai(-x) for x >= 10 (DLMF 9.7.9), zeta = (2/3) x^(3/2).
double airy_negative(double x) {
  const DD zeta_dd = airy_zeta(x);
  const double zeta = zeta_dd.hi;
  if (x > 1.5e20) return kNaN;  // the phase (~1e30) is beyond a double-double's resolution
  const double inv = 1.0 / zeta;
  double u = 1.0, even = 1.0, odd = 0.0, power = 1.0, last = kInf;
  for (int k = 1; k < 200; ++k) {
    u *= (6.0 * k - 5.0) * (6.0 * k - 3.0) * (6.0 * k - 1.0) / (216.0 * k * (2.0 * k - 1.0));
    power *= inv;
    const double term = u * power;
    if (term > last) break;
    last = term;
    add_to_pair(k, term, even, odd);
    if (term < 1e-18) break;
  }
  // sin and cos of zeta.hi + zeta.lo
  const double s0 = std::sin(zeta), c0 = std::cos(zeta), s1 = std::sin(zeta_dd.lo), c1 = std::cos(zeta_dd.lo);
  const double s = s0 * c1 + c0 * s1, c = c0 * c1 - s0 * s1;
  // cos(zeta - pi/4) = (c + s) / sqrt(2), sin(zeta - pi/4) = (s - c) / sqrt(2)
  return 0.7071067811865476 * ((c + s) * even + (s - c) * odd) /
         (1.7724538509055160273 * std::sqrt(std::sqrt(x)));
}

// ---- polynomials --------------------------------------------------------------------------------

constexpr double kMaxRecurrence = 16777216.0;  // 2^24

// The degree of a polynomial from a double n: -1 for n < 0 (the value is 0), NaN for NaN or +inf.
double degree(double n) {
  if (std::isnan(n) || n == kInf) return kNaN;
  const double k = std::trunc(n);
  return k < 0 ? -1.0 : k;
}

// A three-term recurrence p_{j+1} = a_j p_j - b_j p_{j-1} from (p0, p1), run to degree k >= 1;
// both values are rescaled by 2^-600 when they grow past 2^600, so an overflowing result keeps its
// sign. step(j, p_j, p_{j-1}) gives p_{j+1}.
template <typename Step>
double recurrence(double p0, double p1, double k, Step step) {
  int64_t scale = 0;
  const int64_t n = static_cast<int64_t>(k);
  for (int64_t j = 1; j < n; ++j) {
    const double p2 = step(static_cast<double>(j), p1, p0);
    p0 = p1;
    p1 = p2;
    if (std::fabs(p1) > 0x1p600) {
      p0 = std::ldexp(p0, -600);
      p1 = std::ldexp(p1, -600);
      scale += 600;
    }
    if (std::isnan(p1)) break;
  }
  return scale == 0 ? p1 : std::ldexp(p1, static_cast<int>(std::min<int64_t>(scale, 4000)));
}

// The value at x = +-inf of a polynomial of degree k >= 1 whose leading coefficient has sign `lead`.
double at_infinity(double x, double k, double lead) {
  return (x < 0 && is_odd_integer(k) ? -lead : lead) * kInf;
}

// Chebyshev polynomials of the four kinds. kind: 0 T, 1 U, 2 V, 3 W.
double chebyshev(int kind, double x, double n) {
  const double k = degree(n);
  if (std::isnan(k)) return kNaN;
  if (k < 0) return 0.0;
  if (k == 0) return 1.0;
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return at_infinity(x, k, 1.0);
  const bool odd = is_odd_integer(k);
  const double ax = std::fabs(x);
  if (ax == 1.0) {
    if (x > 0) return kind == 0 ? 1.0 : kind == 1 ? k + 1.0 : kind == 2 ? 1.0 : 2.0 * k + 1.0;
    const double s = odd ? -1.0 : 1.0;
    return kind == 0 ? s : kind == 1 ? s * (k + 1.0) : kind == 2 ? s * (2.0 * k + 1.0) : s;
  }
  const double first = kind == 0 ? x : kind == 1 ? 2.0 * x : kind == 2 ? 2.0 * x - 1.0 : 2.0 * x + 1.0;
  if (k == 1) return first;
  const bool small = ax < 1.0 ? k <= 64 : k * std::log2(2.0 * ax + 2.0) < 1000.0;
  if (small) {
    return recurrence(1.0, first, k, [x](double, double p, double q) { return 2.0 * x * p - q; });
  }
  if (ax < 1.0) {
    const double theta = std::acos(x);
    switch (kind) {
      case 0: return std::cos(k * theta);
      case 1: return std::sin((k + 1.0) * theta) / std::sqrt((1.0 - x) * (1.0 + x));
      case 2: return std::cos((k + 0.5) * theta) / std::cos(0.5 * theta);
      default: return std::sin((k + 0.5) * theta) / std::sin(0.5 * theta);
    }
  }
  // |x| > 1: with t = acosh|x|, T = cosh(kt), U = sinh((k+1)t) / sinh(t), V = cosh((k+1/2)t) / cosh(t/2),
  // W = sinh((k+1/2)t) / sinh(t/2) at x > 1, written as exp(kt) times a ratio that cannot overflow;
  // x < -1: T, U by parity, V(x) = (-1)^k W(-x), W(x) = (-1)^k V(-x).
  const double t = std::acosh(ax);
  const double s = (x < 0 && odd) ? -1.0 : 1.0;
  int form = kind;
  if (x < 0 && kind >= 2) form = 5 - kind;
  const double grow = std::exp(k * t);
  double ratio;
  switch (form) {
    case 0: ratio = 0.5 * (1.0 + std::exp(-2.0 * k * t)); break;
    case 1: ratio = std::expm1(-2.0 * (k + 1.0) * t) / std::expm1(-2.0 * t); break;
    case 2: ratio = (1.0 + std::exp(-(2.0 * k + 1.0) * t)) / (1.0 + std::exp(-t)); break;
    default: ratio = std::expm1(-(2.0 * k + 1.0) * t) / std::expm1(-t); break;
  }
  return s * grow * ratio;
}

}  // namespace

// ---- the error function family ------------------------------------------------------------------

double entr(double x) {
  if (std::isnan(x)) return x;
  if (x > 0) return -x * std::log(x);
  return x == 0 ? 0.0 : -kInf;
}

double erfcx(double x) {
  if (std::isnan(x)) return x;
  if (x >= 0) return erfcx_nonneg(x);
  if (x < -26.7) return kInf;
  const DD s = two_prod(x, x);  // 2 exp(x^2) - erfcx(-x)
  return 2.0 * std::exp(s.hi) * (1.0 + s.lo) - erfcx_nonneg(-x);
}

double ndtr(double x) {
  if (std::isnan(x)) return x;
  if (x >= -1.0) {
    if (x > 40.0) return 1.0;
    return 0.5 * std::erfc(-x * kInvSqrt2Hi);
  }
  if (x < -40.0) return 0.0;  // below the smallest subnormal
  const DD s = two_prod(x, x);
  return exp_neg(DD{0.5 * s.hi, 0.5 * s.lo}) * ndtr_tail_factor(x);
}

double log_ndtr(double x) {
  if (std::isnan(x)) return x;
  if (x == kInf) return -0.0;
  if (x == -kInf) return -kInf;
  if (x < -1.0) {
    const DD s = two_prod(x, x);  // log ndtr = -x^2/2 + log m(x)
    return -0.5 * s.hi + (std::log(ndtr_tail_factor(x)) - 0.5 * s.lo);
  }
  if (x <= 0.0) return std::log(ndtr(x));
  return std::log1p(-ndtr(-x));
}

double ndtri(double p) {
  if (std::isnan(p) || p < 0.0 || p > 1.0) return kNaN;
  if (p == 0.0) return -kInf;
  if (p == 1.0) return kInf;
  if (p >= 0.25 && p <= 0.75) return kSqrt2 * erfinv_central(2.0 * p - 1.0);  // 2p - 1 is exact here
  const bool upper = p > 0.5;
  const double q = upper ? 1.0 - p : p;  // exact for p > 0.5
  // Newton on log ndtr(x) = log q (concave, so the iterates settle from either side);
  // (log ndtr)' = 1 / (sqrt(pi/2) erfcx(-x / sqrt(2))).
  const double lq = std::log(q);
  const double t2 = -2.0 * lq;
  double x = -std::sqrt(std::fmax(t2 - std::log(2.0 * kPi * t2), 1.0));
  for (int i = 0; i < 100; ++i) {
    const double ratio = kSqrtPiOverTwo * erfcx_nonneg(-x * kInvSqrt2Hi);  // ndtr / ndtr'
    const double step = (log_ndtr(x) - lq) * ratio;
    x -= step;
    if (std::fabs(step) <= 1e-16 * std::fabs(x)) break;
  }
  return upper ? -x : x;
}

double xlog1py(double x, double y) {
  if (std::isnan(y)) return y;
  if (x == 0) return 0.0;
  return x * std::log1p(y);
}

double zeta(double x, double q) {
  if (x == 1.0) return kInf;
  if (std::isnan(x) || std::isnan(q) || x < 1.0) return kNaN;
  if (q <= 0 && q == std::floor(q)) return kInf;  // a pole (q = -inf too)
  if (x == kInf) return q > 1.0 ? 0.0 : q == 1.0 ? 1.0 : kInf;
  if (q == kInf) return 0.0;
  if (q < 0) {
    if (x != std::floor(x)) return kNaN;  // (q + k)^-x of a negative base
    // q = f - m with 0 < f < 1: the terms k < m are (-1)^x (j - f)^-x, j = 1 .. m.
    const double m = std::ceil(-q);
    const double f = q + m;  // exact
    const double sign = is_odd_integer(x) ? -1.0 : 1.0;
    return sign * (zeta(x, 1.0 - f) - zeta(x, m + 1.0 - f)) + zeta(x, f);
  }
  // Euler-Maclaurin: the terms to q + k > 9 directly, then the integral and 12 Bernoulli corrections.
  double sum = std::pow(q, -x);
  double a = q;
  double b = 0.0;
  int k = 0;
  while (k < 9 || a <= 9.0) {
    ++k;
    a += 1.0;
    b = std::pow(a, -x);
    sum += b;
    if (std::fabs(b) <= 1e-17 * std::fabs(sum)) return sum;
  }
  // B_2j / (2j)! for j = 1 .. 12, from the Bernoulli numbers as exact fractions
  static const double bernoulli_over_factorial[12] = {
      1.0 / 6 / 2,
      -1.0 / 30 / 24,
      1.0 / 42 / 720,
      -1.0 / 30 / 40320,
      5.0 / 66 / 3628800,
      -691.0 / 2730 / 479001600,
      7.0 / 6 / 87178291200.0,
      -3617.0 / 510 / 20922789888000.0,
      43867.0 / 798 / 6402373705728000.0,
      -174611.0 / 330 / 2432902008176640000.0,
      854513.0 / 138 / 1124000727777607680000.0,
      -236364091.0 / 2730 / 620448401733239439360000.0,
  };
  const double w = a;
  sum += w * b / (x - 1.0) - 0.5 * b;
  double rising = 1.0, power = b / w;  // x (x+1) ... (x + 2j - 2) and w^(-x - 2j + 1)
  for (int j = 0; j < 12; ++j) {
    rising *= (j == 0) ? x : (x + 2 * j - 1) * (x + 2 * j);
    if (j > 0) power /= w * w;
    sum += bernoulli_over_factorial[j] * rising * power;
  }
  return sum;
}

// ---- Bessel and Airy ------------------------------------------------------------------------------

double bessel_j0(double x) {
  return bessel_j(0, x);
}
double bessel_j1(double x) {
  return bessel_j(1, x);
}
double bessel_y0(double x) {
  return bessel_y(0, x);
}
double bessel_y1(double x) {
  return bessel_y(1, x);
}

double modified_bessel_i0(double x) {
  if (std::isnan(x)) return x;
  return std::isinf(x) ? kInf : bessel_i(0, std::fabs(x));
}
double modified_bessel_i1(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return x;
  const double v = bessel_i(1, std::fabs(x));
  return x < 0 ? -v : v;
}

namespace {
double k_function(int n, double x, bool scaled) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return kInf;
  if (std::isinf(x)) return 0.0;
  return bessel_k(n, x, scaled);
}
}  // namespace

double modified_bessel_k0(double x) {
  return k_function(0, x, false);
}
double modified_bessel_k1(double x) {
  return k_function(1, x, false);
}
double scaled_modified_bessel_k0(double x) {
  return k_function(0, x, true);
}
double scaled_modified_bessel_k1(double x) {
  return k_function(1, x, true);
}

double spherical_bessel_j0(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return 0.0;
  const double ax = std::fabs(x);
  if (ax >= 0.5) return std::sin(x) / x;
  // sum (-x^2)^k / (2k + 1)!
  const double z = -x * x;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 20 && std::fabs(term) > 1e-18; ++k) {
    term *= z / ((2.0 * k) * (2.0 * k + 1.0));
    sum += term;
  }
  return sum;
}

double airy_ai(double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return 0.0;
  if (x < -10.0) return airy_negative(-x);
  if (x <= 2.0) return airy_series(x);
  // Ai(x) = sqrt(x / 3) / pi K_1/3(zeta), zeta = (2/3) x^(3/2)
  const DD zeta = airy_zeta(x);
  if (zeta.hi > 800.0) return 0.0;
  const double scaled = scaled_k_integral(1.0 / 3.0, zeta.hi);
  return std::sqrt(x / 3.0) * kOneOverPi.hi * scaled * exp_neg(zeta);
}

// ---- polynomials --------------------------------------------------------------------------------

double chebyshev_polynomial_t(double x, double n) {
  return chebyshev(0, x, n);
}
double chebyshev_polynomial_u(double x, double n) {
  return chebyshev(1, x, n);
}
double chebyshev_polynomial_v(double x, double n) {
  return chebyshev(2, x, n);
}
double chebyshev_polynomial_w(double x, double n) {
  return chebyshev(3, x, n);
}
double shifted_chebyshev_polynomial_t(double x, double n) {
  return chebyshev(0, 2.0 * x - 1.0, n);
}
double shifted_chebyshev_polynomial_u(double x, double n) {
  return chebyshev(1, 2.0 * x - 1.0, n);
}
double shifted_chebyshev_polynomial_v(double x, double n) {
  return chebyshev(2, 2.0 * x - 1.0, n);
}
double shifted_chebyshev_polynomial_w(double x, double n) {
  return chebyshev(3, 2.0 * x - 1.0, n);
}

namespace {
// H (physicists', two = 2) or He (probabilists', two = 1): p_{j+1} = two (x p_j - j p_{j-1}).
double hermite(double x, double n, double two) {
  const double k = degree(n);
  if (std::isnan(k)) return kNaN;
  if (k < 0) return 0.0;
  if (k == 0) return 1.0;
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return at_infinity(x, k, 1.0);
  if (k == 1) return two * x;
  if (x == 0 && is_odd_integer(k)) return 0.0;
  if (std::fabs(x) > 0x1p100) return std::pow(two * x, k);  // the leading term; the rest is below its ulp
  if (k > kMaxRecurrence) {
    // beyond twice the largest zero (< sqrt(2k + 1) for H, sqrt(4k + 2) for He) the value has
    // overflowed with the leading term's sign; inside it only the recurrence knows the sign
    const double largest_zero = std::sqrt((two == 2.0 ? 2.0 : 4.0) * k + 2.0);
    return std::fabs(x) > 2.0 * largest_zero ? at_infinity(x, k, 1.0) : kNaN;
  }
  return recurrence(1.0, two * x, k,
                    [x, two](double j, double p, double q) { return two * (x * p - j * q); });
}
}  // namespace

double hermite_polynomial_h(double x, double n) {
  return hermite(x, n, 2.0);
}
double hermite_polynomial_he(double x, double n) {
  return hermite(x, n, 1.0);
}

double laguerre_polynomial_l(double x, double n) {
  const double k = degree(n);
  if (std::isnan(k)) return kNaN;
  if (k < 0) return 0.0;
  if (k == 0) return 1.0;
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return at_infinity(-x, k, 1.0);  // leading coefficient (-1)^k / k!
  if (k == 1) return 1.0 - x;
  if (x == 0) return 1.0;
  if (k > kMaxRecurrence) return kNaN;  // no closed form, and the recurrence may never overflow
  // (j + 1) p_{j+1} = (2j + 1 - x) p_j - j p_{j-1}; past overflow the leading term's sign decides
  double p0 = 1.0, p1 = 1.0 - x;
  const int64_t m = static_cast<int64_t>(std::fmin(k, 9.0e15));
  for (int64_t j = 1; j < m; ++j) {
    const double jj = static_cast<double>(j);
    const double p2 = ((2.0 * jj + 1.0 - x) * p1 - jj * p0) / (jj + 1.0);
    p0 = p1;
    p1 = p2;
    if (!std::isfinite(p1)) return at_infinity(-x, k, 1.0);
  }
  return p1;
}

double legendre_polynomial_p(double x, double n) {
  const double k = degree(n);
  if (std::isnan(k)) return kNaN;
  if (k < 0) return 0.0;
  if (k == 0) return 1.0;
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return at_infinity(x, k, 1.0);
  if (k == 1) return x;
  const double ax = std::fabs(x);
  if (ax == 1.0) return (x < 0 && is_odd_integer(k)) ? -1.0 : 1.0;
  if (k > kMaxRecurrence) {
    if (ax < 1.0) return kNaN;  // bounded by 1: no overflow to stop at
    // P_k(cosh t) ~ exp((k + 1/2) t) / sqrt(2 pi k sinh t): overflowed when that passes e^710
    const double t = std::acosh(ax);
    const double log_size = (k + 0.5) * t - 0.5 * std::log(2.0 * kPi * k * std::sinh(t));
    return log_size > 710.0 ? at_infinity(x, k, 1.0) : kNaN;
  }
  // (j + 1) p_{j+1} = (2j + 1) x p_j - j p_{j-1}; |x| > 1 grows monotonically to overflow
  double p0 = 1.0, p1 = x;
  const int64_t m = static_cast<int64_t>(std::fmin(k, 9.0e15));
  for (int64_t j = 1; j < m; ++j) {
    const double jj = static_cast<double>(j);
    const double p2 = ((2.0 * jj + 1.0) * x * p1 - jj * p0) / (jj + 1.0);
    p0 = p1;
    p1 = p2;
    if (!std::isfinite(p1)) return at_infinity(x, k, 1.0);
  }
  return p1;
}

}  // namespace ember::special_math
