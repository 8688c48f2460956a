#pragma once
// Vectorized elementary functions for the CPU kernels (one source for every vector width, see
// vec.h). float32 versions work in float32 except where the float32 formula loses accuracy
// (erf and erfc evaluate in float64 lanes, gelu past |x| = 3); every float32 result is within
// 2 ulp of the correctly rounded value over the whole range, NaN, infinities, subnormals and -0.0
// included (tests/test_vec_math.py measures it). float64 tensors use the C library's functions, which are
// already within 1 ulp.
//
// Note [vec_math polynomials]: the coefficients are near-minimax fits of the named remainder
// functions (relative error given beside each), computed for Ember with iteratively reweighted
// least squares against 40-digit references; argument reduction follows Cody and Waite (a
// constant split into a part with trailing zero bits, so k * hi is exact, and a correction).
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "backend/cpu/vec.h"

namespace ember::EMBER_CPU_NS::vmath {

using VF = Vec<float>;
using VI = Vec<int32_t>;
using VD = Vec<double>;
using VL = Vec<int64_t>;

// ---- building blocks ----------------------------------------------------------------------

inline VF fmadd(VF a, VF b, VF c) {
#if defined(__AVX512F__)
  return (VF)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#elif defined(__FMA__)
  return (VF)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
  return a * b + c;
#endif
}

inline VD fmadd(VD a, VD b, VD c) {
#if defined(__AVX512F__)
  return (VD)_mm512_fmadd_pd((__m512d)a, (__m512d)b, (__m512d)c);
#elif defined(__FMA__)
  return (VD)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
#else
  return a * b + c;
#endif
}

inline VF select(VI mask, VF a, VF b) {
  return mask ? a : b;
}
inline VD select(VL mask, VD a, VD b) {
  return mask ? a : b;
}
inline VI select(VI mask, VI a, VI b) {
  return mask ? a : b;
}
inline VF vabs(VF x) {
  return (VF)((VI)x & 0x7fffffff);
}
inline VD vabs(VD x) {
  return (VD)((VL)x & 0x7fffffffffffffffLL);
}
// x with the sign bit of s
inline VF copysign(VF x, VF s) {
  return (VF)(((VI)x & 0x7fffffff) | ((VI)s & int32_t(0x80000000u)));
}
inline VD copysign(VD x, VD s) {
  return (VD)(((VL)x & 0x7fffffffffffffffLL) | ((VL)s & int64_t(0x8000000000000000ull)));
}
inline VF vsqrt(VF x) {
#if defined(__AVX512F__)
  return (VF)_mm512_sqrt_ps((__m512)x);
#elif defined(__AVX__)
  return (VF)_mm256_sqrt_ps((__m256)x);
#else
  return (VF)_mm_sqrt_ps((__m128)x);
#endif
}
inline VD vsqrt(VD x) {
#if defined(__AVX512F__)
  return (VD)_mm512_sqrt_pd((__m512d)x);
#elif defined(__AVX__)
  return (VD)_mm256_sqrt_pd((__m256d)x);
#else
  return (VD)_mm_sqrt_pd((__m128d)x);
#endif
}
inline float vsqrt(float x) {
  return std::sqrt(x);
}
inline double vsqrt(double x) {
  return std::sqrt(x);
}
inline VF vmax(VF a, VF b) {
  return a > b ? a : b;
}
inline VD vmax(VD a, VD b) {
  return a > b ? a : b;
}
inline float vmax(float a, float b) {
  return a > b ? a : b;
}
inline double vmax(double a, double b) {
  return a > b ? a : b;
}

// Whether any lane of a float32-lane mask (all bits set or none) is set: one mask test, where a
// loop over the lanes went through memory.
inline bool any(VI m) {
#if defined(__AVX512F__) && defined(__AVX512DQ__)
  return _mm512_movepi32_mask((__m512i)m) != 0;
#elif defined(__AVX__)
  return _mm256_movemask_ps((__m256)m) != 0;
#else
  return _mm_movemask_ps((__m128)m) != 0;
#endif
}

// Whether every lane of a float64-lane mask is set.
inline bool all(VL m) {
#if defined(__AVX512F__) && defined(__AVX512DQ__)
  return _mm512_movepi64_mask((__m512i)m) == 0xff;
#elif defined(__AVX__)
  return _mm256_movemask_pd((__m256d)m) == 0xf;
#else
  return _mm_movemask_pd((__m128d)m) == 0x3;
#endif
}

// Horner's rule on a polynomial whose coefficients are given lowest degree first.
template <typename V, size_t N>
inline V poly(V x, const double (&c)[N]) {
  using E = std::decay_t<decltype(std::declval<V>()[0])>;
  V r = splat<E>(static_cast<E>(c[N - 1]));
#pragma GCC unroll 16
  for (size_t j = 1; j < N; ++j) r = fmadd(r, x, splat<E>(static_cast<E>(c[N - 1 - j])));
  return r;
}

// The same polynomial by Estrin's scheme: pairs combined with x^2, then x^4, ..., a dependency
// chain of log2(N) steps instead of N. Slightly less exact than Horner, so only the float64 lanes
// (which serve float32 results) use it.
template <typename V, size_t N>
inline V estrin(V x, const double (&c)[N]) {
  using E = std::decay_t<decltype(std::declval<V>()[0])>;
  constexpr size_t kPairs = (N + 1) / 2;
  V t[kPairs];
#pragma GCC unroll 16
  for (size_t i = 0; i < kPairs; ++i) {
    t[i] = 2 * i + 1 < N
               ? fmadd(splat<E>(static_cast<E>(c[2 * i + 1])), x, splat<E>(static_cast<E>(c[2 * i])))
               : splat<E>(static_cast<E>(c[2 * i]));
  }
  V p = x * x;
#pragma GCC unroll 16
  for (size_t n = kPairs; n > 1; n = (n + 1) / 2) {
#pragma GCC unroll 16
    for (size_t i = 0; i < n / 2; ++i) t[i] = fmadd(t[2 * i + 1], p, t[2 * i]);
    if (n % 2) t[n / 2] = t[n - 1];
    p = p * p;
  }
  return t[0];
}

// Round to the nearest integer (ties to even) for |x| < 2^22, as float and as int bits. The bit
// difference is taken unsigned: out of range (NaN, huge x) k is meaningless but defined, where a
// signed difference overflowed (UBSan).
inline VF round_near(VF x, VI& k) {
  const VF magic = splat(12582912.0f);  // 1.5 * 2^23
  const VF t = x + magic;
  k = (VI)((Vec<uint32_t>)t - (Vec<uint32_t>)magic);
  return t - magic;
}
inline VD round_near(VD x, VL& k) {
  const VD magic = splat(6755399441055744.0);  // 1.5 * 2^52
  const VD t = x + magic;
  k = (VL)((Vec<uint64_t>)t - (Vec<uint64_t>)magic);
  return t - magic;
}

// 2^k for integer k in [-126, 127] / [-1022, 1023].
inline VF pow2i(VI k) {
  return (VF)((k + 127) << 23);
}
inline VD pow2i(VL k) {
  return (VD)((k + 1023) << 52);
}

// ---- float32 ------------------------------------------------------------------------------

constexpr float kLn2Hi = 0.693145751953125f;  // 0x3f317200: k * kLn2Hi is exact for |k| < 2^11
constexpr float kLn2Lo = 1.428606765330187045e-06f;
constexpr float kLog2e = 1.44269504088896341f;

// e^r = 1 + r + r^2 P(r) on |r| <= ln2/2 (relative error 2.7e-9)
constexpr double kExpP[] = {0.5,
                            0.1666666716337204,
                            0.04166646674275398,
                            0.008333360776305199,
                            0.0013933597365394235,
                            0.00019857795268762857};
// expm1(r) = r + r^2 P(r) on |r| <= ln2/2 (relative error 5.2e-11)
constexpr double kExpm1P[] = {0.5,
                              0.1666666716337204,
                              0.0416666679084301,
                              0.0083332983776927,
                              0.0013888924149796367,
                              0.00019899223116226494,
                              2.4820870748953894e-05};

inline VF exp(VF x) {
  // Past 88.73 the result overflows and below -103.98 it underflows to 0; the clamp keeps the
  // exponent arithmetic in range (and keeps NaN, whose comparisons are false).
  x = select(x > 89.0f, splat(89.0f), x);
  x = select(x < -104.0f, splat(-104.0f), x);
  VI k;
  const VF kf = round_near(x * kLog2e, k);
  const VF r = fmadd(kf, splat(-kLn2Lo), fmadd(kf, splat(-kLn2Hi), x));
  const VF p = fmadd(r * r, poly(r, kExpP), r) + 1.0f;
  // 2^k in two factors, so results below 2^-126 (subnormal) round once, in the last product.
  const VI k1 = k >> 1;
  return p * pow2i(k1) * pow2i(k - k1);
}

inline VF expm1(VF x) {
  const VF big = splat(88.72283935546875f);  // expm1 overflows above this
  const VF xc = select(x < -30.0f, splat(-30.0f), select(x > 89.0f, splat(89.0f), x));
  VI k;
  const VF kf = round_near(xc * kLog2e, k);
  const VF r = fmadd(kf, splat(-kLn2Lo), fmadd(kf, splat(-kLn2Hi), xc));
  const VF em = fmadd(r * r, poly(r, kExpm1P), r);  // expm1(r)
  // expm1(x) = 2^k expm1(r) + (2^k - 1); 2^k - 1 is exact for the k that matter. k = 128 (just
  // below the overflow bound) scales in two steps, 2^128 itself not being a float.
  const VF scale = pow2i(select(k > 127, splat(127), k));
  VF res = select(k == 0, em, fmadd(scale, em, scale - 1.0f));
  res = select(k > 127, scale * (em + 1.0f) * 2.0f, res);
  const VF inf = splat(INFINITY);
  return select(x > big, inf, select(x == 0.0f, x, res));  // keeps -0.0
}

// log(1 + f) = f - s (f - z R(z)), s = f / (2 + f), z = s^2, for f in [sqrt(1/2) - 1, sqrt(2) - 1]
// (R: relative error 1.7e-9 as a remainder of 2 atanh(s) = 2s + s^3 R(s^2))
constexpr double kLogR[] = {0.6666666865348816, 0.4000012278556824, 0.28550806641578674, 0.233308345079422};

inline VF log(VF x) {
  const VI tiny = x < 1.17549435e-38f;  // subnormal: scale into the normal range first
  const VF xs = select(tiny, x * 8388608.0f, x);
  const VI bits = (VI)xs;
  VI e = ((bits >> 23) & 0xff) - select(tiny, splat(127 + 23), splat(127));
  VF m = (VF)((bits & 0x007fffff) | 0x3f800000);  // [1, 2)
  const VI high = m > 1.41421356f;
  m = select(high, m * 0.5f, m);
  e = e + (high & 1);
  const VF f = m - 1.0f;
  const VF s = f / (f + 2.0f);
  const VF z = s * s;
  const VF log1pf = f - s * (f - z * poly(z, kLogR));
  const VF ef = __builtin_convertvector(e, VF);
  VF r = fmadd(ef, splat(kLn2Hi), fmadd(ef, splat(kLn2Lo), log1pf));
  r = select(x == 0.0f, splat(-INFINITY), r);
  r = select(x < 0.0f, splat(NAN), r);
  r = select(x == INFINITY, x, r);
  return select(x != x, x, r);
}

inline VF log1p(VF x) {
  const VF u = x + 1.0f;
  // log(u) plus the rounding error of 1 + x, relative to u (Note [vec_math polynomials])
  const VF corr = (x - (u - 1.0f)) / u;
  VF r = log(u) + select((u == INFINITY) | (u == 0.0f), splat(0.0f), corr);
  r = select(u == 1.0f, x, r);  // |x| below half an ulp of 1, -0.0 included
  return r;
}

// tanh(x) = x + x^3 P(x^2) on |x| <= 0.625 (relative error 4.8e-9)
constexpr double kTanhP[] = {-0.3333333432674408,  0.13333304226398468,   -0.05395926907658577,
                             0.021768974140286446, -0.008344098925590515, 0.0022928952239453793};

inline VF tanh(VF x) {
  const VF a = vabs(x);
  const VF x2 = x * x;
  const VF small = fmadd(x * x2, poly(x2, kTanhP), x);
  const VF t = expm1(select(a > 10.0f, splat(20.0f), a + a));  // tanh(10) rounds to 1
  const VF large = copysign(t / (t + 2.0f), x);
  return select(x == 0.0f, x, select(a < 0.625f, small, large));  // keeps -0.0
}

// sigmoid, silu and mish combine e^x with divisions whose roundings add up past 2 ulp in
// float32 (and far left e^x alone is subnormal, which x would magnify): they run in float64
// lanes (below).
inline VD sigmoid_d(VD x);
inline VD silu_d(VD x);
inline VD mish_d(VD x);
template <typename F>
inline VF via_double(VF x, F f);

inline VF sigmoid(VF x) {
  return via_double(x, [](VD v) { return sigmoid_d(v); });
}
inline VF silu(VF x) {
  return via_double(x, [](VD v) { return silu_d(v); });
}

// log(1 + e^x) = max(x, 0) + log1p(e^-|x|)
inline VF softplus(VF x) {
  return select(x > 0.0f, x, splat(0.0f)) + log1p(exp(-vabs(x)));
}

// x tanh(softplus(x)) with tanh(log(1 + n)) = n (n + 2) / (n (n + 2) + 2), n = e^x
inline VF mish(VF x) {
  return via_double(x, [](VD v) { return mish_d(v); });
}

// ---- float64 lanes (float32 functions that need the extra precision) ------------------------

// e^x to ~1e-11 relative (Taylor series of degree 9 on |r| <= ln2/2): float64 lanes here serve
// float32 results, which need no more.
inline VD exp(VD x) {
  x = select(x > 710.0, splat(710.0), x);
  x = select(x < -746.0, splat(-746.0), x);
  VL k;
  // A NaN lane takes k = 0 (its NaN stays in r): rounding NaN gave garbage k, and k - k1 below
  // then overflowed int64 (undefined behaviour; UBSan caught it on -NaN).
  const VD kf = round_near(select(x == x, x, splat(0.0)) * 1.4426950408889634, k);
  const VD r = fmadd(kf, splat(-1.9082149292705877e-10), fmadd(kf, splat(-0.6931471803691238), x));
  constexpr double kTaylor[] = {1.0,       1.0,       0.5,        1.0 / 6,     1.0 / 24,
                                1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320, 1.0 / 362880};
  const VD p = estrin(r, kTaylor);
  // k / 2 rounded down, with a logical shift of a non-negative value: AVX2 has no 64-bit
  // arithmetic shift, which the compiler would emulate lane by lane.
  const VL k1 = (VL)(((Vec<uint64_t>)(k + 2048)) >> 1) - 1024;
  return p * pow2i(k1) * pow2i(k - k1);
}

// sin and cos, for float32 arguments: the reduction by pi/2 and the polynomials run in float64,
// so arguments near a multiple of pi/2 keep their digits (float32 Cody-Waite loses them near
// 4000 already). Past kTrigReduceMax the C library reduces.
// sin r = r + r^3 S(r^2) (1.7e-10), cos r = 1 - r^2/2 + r^4 C(r^2) (5.7e-11) on |r| <= pi/4
constexpr double kSinP[] = {-0.1666666716337204, 0.008333331905305386, -0.00019840082677546889,
                            2.7249454888078617e-06};
constexpr double kCosP[] = {0.0416666679084301, -0.00138888880610466, 2.4800598112051375e-05,
                            -2.7300720262246614e-07};
constexpr double kTrigReduceMax = 1e6;

template <bool Cos>
inline VD sincos_d(VD x) {
  VL k;
  const VD kf = round_near(x * 0.63661977236758134308, k);
  VD r = fmadd(kf, splat(-1.5707963267948966), x);
  r = fmadd(kf, splat(-6.123233995736766e-17), r);
  const VD z = r * r;
  const VD s = fmadd(r * z, estrin(z, kSinP), r);
  const VD c = fmadd(z * z, estrin(z, kCosP), fmadd(z, splat(-0.5), splat(1.0)));
  const VL q = Cos ? k + 1 : k;  // cos x = sin(x + pi/2)
  VD res = select((q & 1) != 0, c, s);
  return select((q & 2) != 0, -res, res);
}

template <bool Cos>
inline VF sincos(VF x) {
  VF res = via_double(x, [](VD v) { return sincos_d<Cos>(v); });
  res = select(x == 0.0f, Cos ? splat(1.0f) : x, res);  // sin keeps -0.0
  const VI far = vabs(x) > static_cast<float>(kTrigReduceMax);
  if (any(far)) {
    for (int i = 0; i < kLanes<float>; ++i)
      if (far[i]) res[i] = Cos ? std::cos(x[i]) : std::sin(x[i]);
  }
  return res;
}
inline VF sin(VF x) {
  return sincos<false>(x);
}
inline VF cos(VF x) {
  return sincos<true>(x);
}

// e^-|x| never overflows; for x < 0, e / (1 + e) keeps its relative accuracy far left.
inline VD sigmoid_d(VD x) {
  const VD e = exp(-vabs(x));
  return select(x < 0.0, e, splat(1.0)) / (1.0 + e);
}
inline VD silu_d(VD x) {
  return x * sigmoid_d(x);
}
inline VD mish_d(VD x) {
  const VD n = exp(select(x > 20.0, splat(20.0), x));
  const VD q = n * (n + 2.0);
  return select(x > 20.0, x, x * (q / (q + 2.0)));
}

// erf(x) = x P(x^2) on |x| <= 2 (relative error 3.1e-12: erfc = 1 - x P keeps ~1e-9 relative up
// to x = 2, where erfc(2) = 0.0047 magnifies the error 213 times)
constexpr double kErfMid = 2.0;
constexpr double kErfP[] = {1.1283791670920444,     -0.3761263887546483,     0.11283791298631497,
                            -0.026866150763356942,  0.005223921895066864,    -0.0008547388150854619,
                            0.00012045074090082477, -1.4849603595228483e-05, 1.6069911559746379e-06,
                            -1.494304821683868e-07, 1.117902041516104e-08,   -5.850441269033256e-10,
                            1.5563126003583557e-11};
// erfc(x) = e^(-x^2) / x * Q(1/x) on 1 <= x <= 12 (relative error 4.1e-10)
constexpr double kErfcQ[] = {0.5641885747153293,   5.3331758575581034e-05, -0.28332833554883496,
                             0.016540433152218748, 0.2797062222958604,     0.8466000931841872,
                             -4.516230299184129,   9.585860054791935,      -12.72203006775449,
                             11.526925450116591,   -7.186669754007747,     2.965482488890818,
                             -0.7311381423637366,  0.08162352593481983};

// erfc(a) for a >= 1 (0 past 27, where it underflows double)
inline VD erfc_tail(VD a) {
  const VD ac = select(a > 27.0, splat(27.0), a);
  const VD t = 1.0 / ac;
  return select(a > 27.0, splat(0.0), exp(-(ac * ac)) * t * estrin(t, kErfcQ));
}

// erf(x) and erfc(x) in float64 lanes, accurate to ~1e-9 relative (enough for float32 results).
// The polynomial covers |x| < 2, 99.5% of standard normal data divided by sqrt 2 (gelu's
// argument), so a vector whose lanes all lie there skips the tail; a vector with lanes on both
// sides computes both and selects per lane.
inline VD erf_d(VD x) {
  const VD a = vabs(x);
  const VL mid = a < kErfMid;
  const VD small = x * estrin(x * x, kErfP);
  if (all(mid)) return small;
  const VD large = copysign(1.0 - erfc_tail(select(mid, splat(kErfMid), a)), x);
  return select(mid, small, select(x != x, x, large));
}
inline VD erfc_d(VD x) {
  const VD a = vabs(x);
  const VL mid = a < kErfMid;
  const VD middle = 1.0 - x * estrin(x * x, kErfP);
  if (all(mid)) return middle;
  const VD tail = erfc_tail(select(mid, splat(kErfMid), a));
  return select(mid, middle, select(x < 0.0, 2.0 - tail, select(x != x, x, tail)));
}

// Applies a float64-lane function to the float32 lanes of x: each half widened, computed, narrowed.
template <typename F>
inline VF via_double(VF x, F f) {
  typedef float Half __attribute__((vector_size(kVecBytes / 2)));
  Half lo, hi;
  std::memcpy(&lo, &x, sizeof(Half));
  std::memcpy(&hi, reinterpret_cast<const char*>(&x) + sizeof(Half), sizeof(Half));
  const Half rlo = __builtin_convertvector(f(__builtin_convertvector(lo, VD)), Half);
  const Half rhi = __builtin_convertvector(f(__builtin_convertvector(hi, VD)), Half);
  VF out;
  std::memcpy(&out, &rlo, sizeof(Half));
  std::memcpy(reinterpret_cast<char*>(&out) + sizeof(Half), &rhi, sizeof(Half));
  return out;
}

inline VF erf(VF x) {
  return via_double(x, [](VD v) { return erf_d(v); });
}
inline VF erfc(VF x) {
  return via_double(x, [](VD v) { return erfc_d(v); });
}

// gelu(x) = x/2 erfc(-x/sqrt 2)   (the erfc form keeps the negative tail's relative accuracy)
inline VD gelu_d(VD x) {
  return 0.5 * x * erfc_d(x * -0.70710678118654752440);
}
// gelu_tanh(x) = x/2 (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3)
inline VD gelu_tanh_d(VD x) {
  const VD u2 = 2.0 * 0.79788456080286535588 * fmadd(0.044715 * x, x * x, x);
  const VD e = exp(-vabs(u2));
  return x * select(u2 < 0.0, e / (1.0 + e), 1.0 / (1.0 + e));
}
#if defined(__AVX512F__) || defined(__AVX2__)
// Note [float32 gelu]: gelu(x) = x Phi(x). c = Phi(-|x|) = erfc(|x|/sqrt 2)/2 comes from a table of
// 16 quintic polynomials, one per interval of width 3/16 on [0, 3): c = hi + (lo + d q(d)), d the
// distance to the interval's centre and hi + lo the value there in two floats. There is no exp and
// no cancellation: x < 0 gives x hi + x lo' with one rounding, x >= 0 gives x - x c. Every float32
// with |x| < 3 was checked once against a long double reference when the tables were made (AVX-512
// and AVX2 builds): at most 1.31 ulp, the worst near -2.81; tests/test_vec_math.py keeps checking
// samples and every interval's ends. |x| >= 3 (0.3% of standard normal data) and the infinities
// take the float64 form (at most 0.51 ulp there, the same check), chosen lane by lane, so a result
// never depends on its neighbours; NaN stays NaN through the table. The fits minimize relative
// error against 40-digit erfc (Note [vec_math polynomials]). With about half the operations of the
// float64 form, 16M floats take 13.4 ms instead of 29.5 on an Intel Xeon (AVX-512, one thread),
// near a copy's 9.4.
constexpr float kGeluWidth = 0.1875f;  // 3/16: the interval centres are exact
alignas(64) constexpr float kGeluTable[7][16] = {
    // hi
    {0.46265387535095215f, 0.38925933837890625f, 0.3196241855621338f, 0.25583162903785706f,
     0.19940456748008728f, 0.15121179819107056f, 0.11146954447031021f, 0.07982495427131653f,
     0.05549601837992668f, 0.03743581101298332f, 0.024490904062986374f, 0.015532074496150017f,
     0.009545481763780117f, 0.0056828404776751995f, 0.00327645568177104f, 0.0018289453582838178f},
    // lo
    {1.0984940734815041e-10f, -9.726107919050264e-09f, -1.3981988900013675e-08f, 1.2377276981112573e-08f,
     -6.950858555399009e-09f, 1.2978049745981934e-09f, 2.629531703490784e-09f, -3.4549123562044315e-09f,
     1.8280321700814284e-09f, -1.6783757716964942e-09f, -8.271967000261782e-10f, 8.298928211303291e-11f,
     -2.4419347099957633e-10f, -1.1786648046463455e-10f, 6.980813843648903e-11f, -1.8375133012393796e-11f},
    // c1
    {-0.39719295501708984f, -0.3834717571735382f, -0.3574349880218506f, -0.3216566741466522f,
     -0.2794601619243622f, -0.2344115823507309f, -0.18983228504657745f, -0.14842016994953156f,
     -0.1120334193110466f, -0.08164584636688232f, -0.05744503065943718f, -0.03902138024568558f,
     -0.025590846315026283f, -0.01620311476290226f, -0.009904765523970127f, -0.005845500621944666f},
    // c2
    {0.0186183862388134f, 0.05392562225461006f, 0.08377369493246078f, 0.10554345697164536f,
     0.11789713054895401f, 0.12086839228868484f, 0.11567901819944382f, 0.10435794293880463f,
     0.08927667140960693f, 0.0727158933877945f, 0.056547507643699646f, 0.04206997528672218f,
     0.02998930774629116f, 0.0205070860683918f, 0.013464297167956829f, 0.008494241163134575f},
    // c3
    {0.06561686098575592f, 0.05885624140501022f, 0.0464826375246048f, 0.03052159957587719f,
     0.013417954556643963f, -0.002480005146935582f, -0.015355885028839111f, -0.024181000888347626f,
     -0.02875583991408348f, -0.029567230492830276f, -0.02753494493663311f, -0.02373407781124115f,
     -0.01916389912366867f, -0.014602279290556908f, -0.010551213286817074f, -0.007254565134644508f},
    // c4
    {-0.004630835261195898f, -0.013097948394715786f, -0.01937016472220421f, -0.022556113079190254f,
     -0.022443775087594986f, -0.019481096416711807f, -0.014591126702725887f, -0.008895082399249077f,
     -0.003434819867834449f, 0.0010297648841515183f, 0.004109844099730253f, 0.005767412018030882f,
     0.006220012903213501f, 0.005816685501486063f, 0.004925374872982502f, 0.0038557429797947407f},
    // c5
    {-0.009732421487569809f, -0.008065511472523212f, -0.0051308549009263515f, -0.0015965579077601433f,
     0.001788121648132801f, 0.004393559414893389f, 0.005853478331118822f, 0.0061140358448028564f,
     0.005388092715293169f, 0.0040466077625751495f, 0.002492341212928295f, 0.001057694898918271f,
     -5.071574923931621e-05f, -0.0007586125284433365f, -0.001095371670089662f, -0.0011499327374622226f},
};

// tab[idx] per lane, the index taken modulo 16: one permute of a 16-lane vector, or two of 8-lane
// halves and a blend on the index's bit 3.
inline VF lookup16(const float (&tab)[16], VI idx) {
#if defined(__AVX512F__)
  return (VF)_mm512_permutexvar_ps((__m512i)idx, _mm512_load_ps(tab));
#else
  const __m256i i = (__m256i)idx;
  const __m256 low = _mm256_permutevar8x32_ps(_mm256_load_ps(tab), i);
  const __m256 high = _mm256_permutevar8x32_ps(_mm256_load_ps(tab + 8), i);
  return (VF)_mm256_blendv_ps(low, high, _mm256_castsi256_ps(_mm256_slli_epi32(i, 28)));
#endif
}

inline VF gelu(VF x) {
  const VF t = vabs(x);
  const VI idx =
      __builtin_convertvector(t * (1.0f / kGeluWidth), VI);  // truncates; NaN and t >= 3 are selected away
  const VF d = fmadd(__builtin_convertvector(idx, VF), splat(-kGeluWidth), t) - 0.5f * kGeluWidth;
  VF q = lookup16(kGeluTable[6], idx);
#pragma GCC unroll 4
  for (int j = 5; j >= 2; --j) q = fmadd(q, d, lookup16(kGeluTable[j], idx));
  const VF hi = lookup16(kGeluTable[0], idx);
  const VF lo = fmadd(q, d, lookup16(kGeluTable[1], idx));  // c = hi + lo
  const VF neg = fmadd(x, hi, x * lo);                      // x c
  const VF pos = fmadd(-x, hi + lo, x);                     // x (1 - c)
  VF r = select((VI)x < 0, neg, pos);
  r = select(x == 0.0f, x, r);  // -0.0 stays -0.0
  const VI wide = t >= 3.0f;
  if (any(wide)) r = select(wide, via_double(x, [](VD v) { return gelu_d(v); }), r);
  return r;
}
#else
inline VF gelu(VF x) {  // no FMA: the table's one-rounding steps need it
  return via_double(x, [](VD v) { return gelu_d(v); });
}
#endif
inline VF gelu_tanh(VF x) {
  return via_double(x, [](VD v) { return gelu_tanh_d(v); });
}

}  // namespace ember::EMBER_CPU_NS::vmath
