// CPU discrete Fourier transforms (interfaces in src/ops/kernels.h): unnormalized 1-D transforms
// of every row of a contiguous [B, n] tensor, complex in place (fft_stub), real to onesided
// complex (fft_r2c_stub) and back (fft_c2r_stub), and the framed transforms of stft / istft.
//
// Note [FFT lanes]: float32 rows are transformed in float32 arithmetic and float64 rows in
// float64, each with this build's vectors. A vector does not hold consecutive points of one
// sequence but the same point of kLanes<R> independent sequences ("lanes"), in split form (one
// vector of real parts, one of imaginary parts):
//
//   re[j] = { x_0[j].re, x_1[j].re, ..., x_{W-1}[j].re }      W = kLanes<R> rows (or frames,
//   im[j] = { x_0[j].im, x_1[j].im, ..., x_{W-1}[j].im }      or matrix columns) at once
//
// so every butterfly, of any radix, is plain vector arithmetic with broadcast twiddles, and the
// same code serves any length. Rows (or stft frames) are taken W at a time (a short last block
// runs with zero lanes). One long row is instead viewed as an n1 x n2 matrix (the "six-step"
// algorithm): W adjacent columns are W lanes read straight from memory, so its n2 column
// transforms of length n1, a twiddle, and n1 transforms of length n2 (the columns of the
// transposed intermediate) are all lane transforms, with cache-sized working sets.
//
// Lengths whose prime factors are all at most kMaxRadix run a self-sorting (Stockham)
// mixed-radix transform (radix-4, 2, 3, 5 butterflies and a generic one for other odd primes);
// any other length runs Bluestein's chirp-z algorithm, a circular convolution done by a
// power-of-two transform of length m >= 2n - 1. Plans (factors, twiddles, chirps, filter
// spectra; all computed in double and rounded once) are built once per length and precision and
// cached (Note [FFT plan cache]). The inverse transform is conj(FFT(conj(x))).
#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"
#include "vec.h"

namespace ember::EMBER_CPU_NS {
namespace {

constexpr int64_t kMaxRadix = 61;   // larger prime factors go to Bluestein (the generic butterfly is O(p^2))
constexpr int64_t kLaneMax = 4096;  // longer smooth lengths run six-step (a lane buffer stays in L2)
constexpr int64_t kSixMin = 256;    // from here one row alone runs six-step rather than one lane of W
constexpr double kPi = 3.14159265358979323846264338327950288;

template <typename R>
using V = Vec<R>;
template <typename R>
constexpr int64_t kW = kLanes<R>;

// exp(-2 pi i num / den) from the exact fraction num / den (num reduced mod den).
inline std::complex<double> root(int64_t num, int64_t den) {
  const int64_t r = num % den;
  const double a = -2.0 * kPi * static_cast<double>(r) / static_cast<double>(den);
  return {std::cos(a), std::sin(a)};
}

template <typename R>
struct Plan {
  int64_t n = 0;
  // smooth n <= kLaneMax: the lane engine's Stockham transform, twiddles exp(-2 pi i j / n), j < n
  bool stockham = false;
  std::vector<int64_t> radices;
  std::vector<R> wr, wi;
  // smooth n >= kSixMin: the six-step view n = n1 x n2 (Note [FFT lanes]) with Stockham sub-plans
  // and twiddles exp(-2 pi i k1 j2 / n), laid out [column block of W][k1][lane] as pass A reads them
  bool six = false;
  int64_t n1 = 0, n2 = 0;
  std::shared_ptr<const Plan> p1, p2;
  std::vector<R> tr, ti;
  // any other n, Bluestein: chirp c[k] = exp(-pi i k^2 / n), k < n; filter = FFT_m(conj c) / m
  bool bluestein = false;
  int64_t m = 0;
  std::vector<R> cr, ci, fr, fi;
  std::shared_ptr<const Plan> sub;

  // whether the lane engine runs the whole transform (rows W at a time)
  bool lanes() const { return stockham || (bluestein && sub->stockham); }
  size_t bytes() const {
    return sizeof(R) *
           (wr.size() + wi.size() + tr.size() + ti.size() + cr.size() + ci.size() + fr.size() + fi.size());
  }
};

std::vector<int64_t> factor(int64_t n) {
  std::vector<int64_t> r;
  while (n % 4 == 0) r.push_back(4), n /= 4;
  if (n % 2 == 0) r.push_back(2), n /= 2;
  for (int64_t p = 3; p * p <= n; p += 2)
    while (n % p == 0) r.push_back(p), n /= p;
  if (n > 1) r.push_back(n);
  return r;
}

bool smooth(int64_t n) {
  for (int64_t p : factor(n))
    if (p > kMaxRadix) return false;
  return true;
}

template <typename R>
std::shared_ptr<const Plan<R>> plan_for(int64_t n);
template <typename R>
void transform_row(const Plan<R>& plan, const std::complex<R>* in, std::complex<R>* out, bool conj_in,
                   bool conj_out);

template <typename R>
void add_stockham(Plan<R>& p) {
  const int64_t n = p.n;
  p.stockham = true;
  p.radices = factor(n);
  p.wr.resize(n);
  p.wi.resize(n);
  for (int64_t j = 0; j < n; ++j) {
    const std::complex<double> w = root(j, n);
    p.wr[j] = static_cast<R>(w.real());
    p.wi[j] = static_cast<R>(w.imag());
  }
}

template <typename R>
std::shared_ptr<Plan<R>> stockham_plan(int64_t n) {
  auto p = std::make_shared<Plan<R>>();
  p->n = n;
  add_stockham(*p);
  return p;
}

template <typename R>
std::shared_ptr<Plan<R>> make_plan(int64_t n) {
  auto p = std::make_shared<Plan<R>>();
  p->n = n;
  if (smooth(n)) {
    if (n <= kLaneMax) add_stockham(*p);
    int64_t n1 = 1;  // the divisor closest to sqrt(n) from below: both passes get long columns
    for (int64_t d = 1; d * d <= n; ++d)
      if (n % d == 0) n1 = d;
    if (n >= kSixMin && n1 > 1) {
      constexpr int64_t W = kW<R>;
      p->six = true;
      p->n1 = n1;
      p->n2 = n / n1;
      p->p1 = stockham_plan<R>(p->n1);
      p->p2 = stockham_plan<R>(p->n2);
      const int64_t blocks = (p->n2 + W - 1) / W;
      p->tr.assign(blocks * n1 * W, R(0));
      p->ti.assign(blocks * n1 * W, R(0));
      for (int64_t b = 0; b < blocks; ++b)
        for (int64_t k1 = 0; k1 < n1; ++k1)
          for (int64_t l = 0; l < W && b * W + l < p->n2; ++l) {
            const std::complex<double> w = root(k1 * (b * W + l), n);
            p->tr[(b * n1 + k1) * W + l] = static_cast<R>(w.real());
            p->ti[(b * n1 + k1) * W + l] = static_cast<R>(w.imag());
          }
    }
    if (!p->stockham && !p->six) add_stockham(*p);  // (a prime n <= kMaxRadix above kLaneMax cannot occur)
    return p;
  }
  p->bluestein = true;
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  p->m = m;
  std::vector<std::complex<double>> chirp(n), b(m, 0.0);
  for (int64_t k = 0; k < n; ++k) {
    // k^2 mod 2n keeps the angle small, so large k lose no precision
    const int64_t k2 =
        static_cast<int64_t>((static_cast<unsigned __int128>(k) * k) % (2 * static_cast<uint64_t>(n)));
    chirp[k] = root(k2, 2 * n);
  }
  b[0] = std::conj(chirp[0]);
  for (int64_t k = 1; k < n; ++k) b[k] = b[m - k] = std::conj(chirp[k]);
  // the filter spectrum in double whatever R is, rounded once
  transform_row(*plan_for<double>(m), b.data(), b.data(), false, false);
  p->cr.resize(n);
  p->ci.resize(n);
  p->fr.resize(m);
  p->fi.resize(m);
  for (int64_t k = 0; k < n; ++k) {
    p->cr[k] = static_cast<R>(chirp[k].real());
    p->ci[k] = static_cast<R>(chirp[k].imag());
  }
  for (int64_t k = 0; k < m; ++k) {
    p->fr[k] = static_cast<R>(b[k].real() / static_cast<double>(m));
    p->fi[k] = static_cast<R>(b[k].imag() / static_cast<double>(m));
  }
  p->sub = plan_for<R>(m);
  return p;
}

// Note [FFT plan cache]: one cache per precision, shared by all threads under a mutex (a plan,
// once built, is immutable). A plan is built outside the lock (Bluestein asks for its sub-plan);
// two threads may build the same one, and the first stored wins. The cache holds at most 64
// plans and 256 MiB of tables: past either, it is emptied (plans in use stay alive through their
// shared_ptr), so a workload of many lengths rebuilds rather than grows.
template <typename R>
std::shared_ptr<const Plan<R>> plan_for(int64_t n) {
  static std::mutex mutex;
  static std::map<int64_t, std::shared_ptr<const Plan<R>>> cache;
  static size_t cached_bytes = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
  }
  std::shared_ptr<const Plan<R>> p = make_plan<R>(n);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(n);
  if (it != cache.end()) return it->second;
  if (cache.size() >= 64 || cached_bytes + p->bytes() > (size_t(256) << 20)) {
    cache.clear();
    cached_bytes = 0;
  }
  cached_bytes += p->bytes();
  return cache.emplace(n, p).first->second;
}

// The twiddles e^{-2 pi i k / n}, k = 0 .. n/2 (+ kW padding), of the real-input packing (Note
// [real rows]), as split planes.
template <typename R>
struct RealTwiddles {
  std::vector<R> re, im;
};

template <typename R>
std::shared_ptr<const RealTwiddles<R>> real_twiddles(int64_t n) {
  static std::mutex mutex;
  static std::map<int64_t, std::shared_ptr<const RealTwiddles<R>>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
  }
  auto t = std::make_shared<RealTwiddles<R>>();
  t->re.assign(static_cast<size_t>(n / 2 + 1 + kW<R>), R(0));
  t->im.assign(static_cast<size_t>(n / 2 + 1 + kW<R>), R(0));
  for (int64_t k = 0; k <= n / 2; ++k) {
    const std::complex<double> w = root(k, n);
    t->re[k] = static_cast<R>(w.real());
    t->im[k] = static_cast<R>(w.imag());
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= 64) cache.clear();
  return cache.emplace(n, t).first->second;
}

// ---- vector shuffles: complex <-> split, lane reversal, W x W transposes ------------------------

template <typename R>
struct IndexOf {
  using type = int32_t;
};
template <>
struct IndexOf<double> {
  using type = int64_t;
};
template <typename R>
using IVec = Vec<typename IndexOf<R>::type>;

template <typename R, typename F, size_t... I>
constexpr IVec<R> make_mask(F f, std::index_sequence<I...>) {
  return IVec<R>{static_cast<typename IndexOf<R>::type>(f(static_cast<int>(I)))...};
}
// The shuffle mask {f(0), ..., f(W - 1)} (a constant).
#define EMBER_FFT_MASK(R, expr) \
  make_mask<R>([](int i) constexpr { return (expr); }, std::make_index_sequence<kLanes<R>>{})

// W complex values at p as (re, im) vectors; _rev puts p[W - 1 - i] in lane i.
template <typename R>
inline void load_split(const std::complex<R>* p, V<R>& re, V<R>& im) {
  constexpr int W = static_cast<int>(kW<R>);
  const V<R> a = load(reinterpret_cast<const R*>(p)), b = load(reinterpret_cast<const R*>(p) + W);
  constexpr IVec<R> even = EMBER_FFT_MASK(R, 2 * i), odd = EMBER_FFT_MASK(R, 2 * i + 1);
  re = __builtin_shuffle(a, b, even);
  im = __builtin_shuffle(a, b, odd);
}
template <typename R>
inline void load_split_rev(const std::complex<R>* p, V<R>& re, V<R>& im) {
  constexpr int W = static_cast<int>(kW<R>);
  const V<R> a = load(reinterpret_cast<const R*>(p)), b = load(reinterpret_cast<const R*>(p) + W);
  constexpr IVec<R> even = EMBER_FFT_MASK(R, 2 * (W - 1 - i)), odd = EMBER_FFT_MASK(R, 2 * (W - 1 - i) + 1);
  re = __builtin_shuffle(a, b, even);
  im = __builtin_shuffle(a, b, odd);
}
template <typename R>
inline void store_joined(std::complex<R>* p, const V<R>& re, const V<R>& im) {
  constexpr int W = static_cast<int>(kW<R>);
  constexpr IVec<R> lo = EMBER_FFT_MASK(R, i % 2 == 0 ? i / 2 : W + i / 2);
  constexpr IVec<R> hi = EMBER_FFT_MASK(R, (i + W) % 2 == 0 ? (i + W) / 2 : W + (i + W) / 2);
  store(reinterpret_cast<R*>(p), __builtin_shuffle(re, im, lo));
  store(reinterpret_cast<R*>(p) + W, __builtin_shuffle(re, im, hi));
}
template <typename R>
inline void store_joined_rev(std::complex<R>* p, const V<R>& re, const V<R>& im) {
  constexpr int W = static_cast<int>(kW<R>);
  constexpr IVec<R> lo = EMBER_FFT_MASK(R, i % 2 == 0 ? W - 1 - i / 2 : 2 * W - 1 - i / 2);
  constexpr IVec<R> hi = EMBER_FFT_MASK(R, (i + W) % 2 == 0 ? W - 1 - (i + W) / 2 : 2 * W - 1 - (i + W) / 2);
  store(reinterpret_cast<R*>(p), __builtin_shuffle(re, im, lo));
  store(reinterpret_cast<R*>(p) + W, __builtin_shuffle(re, im, hi));
}
template <typename R>
inline V<R> reversed(const V<R>& v) {
  constexpr int W = static_cast<int>(kW<R>);
  constexpr IVec<R> rev = EMBER_FFT_MASK(R, W - 1 - i);
  return __builtin_shuffle(v, rev);
}

// The cheaper in-lane forms (one shuffle within each 128-bit lane per vector): after
// load_split_lanes, lane q holds value sigma(q) of the W at p; store_joined_lanes writes lane q
// to position sigma(q). Where a W x W transpose follows or precedes, the permutation is absorbed
// by which point (or bin) each transposed vector stands for.
template <typename R>
constexpr int kPerLane = 16 / static_cast<int>(sizeof(R));  // values per 128-bit lane
template <typename R>
constexpr int sigma(int q) {
  constexpr int G = kPerLane<R>, W = static_cast<int>(kW<R>);
  const int L = q / G, t = q % G;
  return t < G / 2 ? (G / 2) * L + t : W / 2 + (G / 2) * L + t - G / 2;
}
template <typename R>
inline void load_split_lanes(const std::complex<R>* p, V<R>& re, V<R>& im) {
  constexpr int W = static_cast<int>(kW<R>), G = kPerLane<R>;
  const V<R> a = load(reinterpret_cast<const R*>(p)), b = load(reinterpret_cast<const R*>(p) + W);
  constexpr IVec<R> even =
      EMBER_FFT_MASK(R, i % G < G / 2 ? G * (i / G) + 2 * (i % G) : W + G * (i / G) + 2 * (i % G - G / 2));
  constexpr IVec<R> odd = EMBER_FFT_MASK(
      R, i % G < G / 2 ? G * (i / G) + 2 * (i % G) + 1 : W + G * (i / G) + 2 * (i % G - G / 2) + 1);
  re = __builtin_shuffle(a, b, even);
  im = __builtin_shuffle(a, b, odd);
}
template <typename R>
inline void store_joined_lanes(std::complex<R>* p, const V<R>& re, const V<R>& im) {
  constexpr int W = static_cast<int>(kW<R>), G = kPerLane<R>;
  constexpr IVec<R> lo =
      EMBER_FFT_MASK(R, (i % G) % 2 == 0 ? G * (i / G) + (i % G) / 2 : W + G * (i / G) + (i % G) / 2);
  constexpr IVec<R> hi = EMBER_FFT_MASK(
      R, (i % G) % 2 == 0 ? G * (i / G) + G / 2 + (i % G) / 2 : W + G * (i / G) + G / 2 + (i % G) / 2);
  store(reinterpret_cast<R*>(p), __builtin_shuffle(re, im, lo));
  store(reinterpret_cast<R*>(p) + W, __builtin_shuffle(re, im, hi));
}

// v[0..W) as a W x W matrix (vector = row), transposed in place: log2(W) stages, each swapping
// the off-diagonal blocks of size s of vector pairs (i, i + s).
template <typename R, int S>
inline void transpose_stage(V<R>* v) {
  if constexpr (S >= 1) {
    constexpr int W = static_cast<int>(kW<R>);
    constexpr IVec<R> lo = EMBER_FFT_MASK(R, (i & S) ? W + i - S : i);
    constexpr IVec<R> hi = EMBER_FFT_MASK(R, (i & S) ? W + i : i + S);
    for (int i = 0; i < W; ++i) {
      if (i & S) continue;
      const V<R> a = v[i], b = v[i + S];
      v[i] = __builtin_shuffle(a, b, lo);
      v[i + S] = __builtin_shuffle(a, b, hi);
    }
    transpose_stage<R, S / 2>(v);
  }
}
template <typename R>
inline void transpose(V<R>* v) {
  transpose_stage<R, static_cast<int>(kW<R>) / 2>(v);
}

// ---- the lane engine (Note [FFT lanes]): S is Vec<R> (W lanes) or R (one) -------------------

template <typename R, typename S>
inline void cmul(S& ar, S& ai, R wr, R wi) {
  const S r = ar * wr - ai * wi;
  ai = ar * wi + ai * wr;
  ar = r;
}

// One Stockham stage of radix p: y[f1*m*p + q*m + k] holds sub-transform k + q*m at frequency
// f1; the stage writes x[(f1 + L*f2)*m + k], the length-L*p transform of subsequence k.
template <typename R, typename S>
void stage(const Plan<R>& plan, int64_t p, int64_t L, const S* yr, const S* yi, S* xr, S* xi) {
  const int64_t n = plan.n, m = n / (L * p), o = L * m;
  const R* w_re = plan.wr.data();
  const R* w_im = plan.wi.data();
  R twr[kMaxRadix], twi[kMaxRadix];
  for (int64_t f1 = 0; f1 < L; ++f1) {
    for (int64_t q = 1; q < p; ++q) {
      twr[q] = w_re[q * f1 * m];
      twi[q] = w_im[q * f1 * m];
    }
    const bool rotate = f1 != 0;
    const S* sr = yr + f1 * m * p;
    const S* si = yi + f1 * m * p;
    S* dr = xr + f1 * m;
    S* di = xi + f1 * m;
    switch (p) {
      case 2:
        for (int64_t k = 0; k < m; ++k) {
          S a0r = sr[k], a0i = si[k], a1r = sr[m + k], a1i = si[m + k];
          if (rotate) cmul(a1r, a1i, twr[1], twi[1]);
          dr[k] = a0r + a1r;
          di[k] = a0i + a1i;
          dr[k + o] = a0r - a1r;
          di[k + o] = a0i - a1i;
        }
        break;
      case 3: {
        const R s3 = static_cast<R>(0.86602540378443864676372317075293618);
        for (int64_t k = 0; k < m; ++k) {
          S a0r = sr[k], a0i = si[k], a1r = sr[m + k], a1i = si[m + k], a2r = sr[2 * m + k],
            a2i = si[2 * m + k];
          if (rotate) {
            cmul(a1r, a1i, twr[1], twi[1]);
            cmul(a2r, a2i, twr[2], twi[2]);
          }
          const S tr = a1r + a2r, ti = a1i + a2i, dr_ = a1r - a2r, di_ = a1i - a2i;
          const S ur = a0r - tr * R(0.5), ui = a0i - ti * R(0.5);
          const S vr = di_ * s3, vi = -(dr_ * s3);  // -i * s3 * d
          dr[k] = a0r + tr;
          di[k] = a0i + ti;
          dr[k + o] = ur + vr;
          di[k + o] = ui + vi;
          dr[k + 2 * o] = ur - vr;
          di[k + 2 * o] = ui - vi;
        }
        break;
      }
      case 4:
        for (int64_t k = 0; k < m; ++k) {
          S a0r = sr[k], a0i = si[k], a1r = sr[m + k], a1i = si[m + k];
          S a2r = sr[2 * m + k], a2i = si[2 * m + k], a3r = sr[3 * m + k], a3i = si[3 * m + k];
          if (rotate) {
            cmul(a1r, a1i, twr[1], twi[1]);
            cmul(a2r, a2i, twr[2], twi[2]);
            cmul(a3r, a3i, twr[3], twi[3]);
          }
          const S t0r = a0r + a2r, t0i = a0i + a2i, t1r = a0r - a2r, t1i = a0i - a2i;
          const S t2r = a1r + a3r, t2i = a1i + a3i, t3r = a1i - a3i, t3i = a3r - a1r;  // t3 = -i (a1 - a3)
          dr[k] = t0r + t2r;
          di[k] = t0i + t2i;
          dr[k + o] = t1r + t3r;
          di[k + o] = t1i + t3i;
          dr[k + 2 * o] = t0r - t2r;
          di[k + 2 * o] = t0i - t2i;
          dr[k + 3 * o] = t1r - t3r;
          di[k + 3 * o] = t1i - t3i;
        }
        break;
      case 5: {
        const R c5a = static_cast<R>(0.30901699437494742410229341718281906);
        const R c5b = static_cast<R>(-0.80901699437494742410229341718281906);
        const R s5a = static_cast<R>(0.95105651629515357211643933337938214);
        const R s5b = static_cast<R>(0.58778525229247312916870595463907277);
        for (int64_t k = 0; k < m; ++k) {
          S ar[5], ai[5];
          for (int q = 0; q < 5; ++q) {
            ar[q] = sr[q * m + k];
            ai[q] = si[q * m + k];
            if (rotate && q > 0) cmul(ar[q], ai[q], twr[q], twi[q]);
          }
          const S b1r = ar[1] + ar[4], b1i = ai[1] + ai[4], b2r = ar[2] + ar[3], b2i = ai[2] + ai[3];
          const S d1r = ar[1] - ar[4], d1i = ai[1] - ai[4], d2r = ar[2] - ar[3], d2i = ai[2] - ai[3];
          const S r1r = ar[0] + b1r * c5a + b2r * c5b, r1i = ai[0] + b1i * c5a + b2i * c5b;
          const S r2r = ar[0] + b1r * c5b + b2r * c5a, r2i = ai[0] + b1i * c5b + b2i * c5a;
          const S i1r = d1r * s5a + d2r * s5b, i1i = d1i * s5a + d2i * s5b;
          const S i2r = d1r * s5b - d2r * s5a, i2i = d1i * s5b - d2i * s5a;
          // j = -i * i: (re, im) -> (im, -re)
          dr[k] = ar[0] + b1r + b2r;
          di[k] = ai[0] + b1i + b2i;
          dr[k + o] = r1r + i1i;
          di[k + o] = r1i - i1r;
          dr[k + 4 * o] = r1r - i1i;
          di[k + 4 * o] = r1i + i1r;
          dr[k + 2 * o] = r2r + i2i;
          di[k + 2 * o] = r2i - i2r;
          dr[k + 3 * o] = r2r - i2i;
          di[k + 3 * o] = r2i + i2r;
        }
        break;
      }
      default: {
        // generic odd prime: pair q with p - q so each output needs (p-1)/2 real rotations
        const int64_t wp = n / p;  // w_p^j = roots[j * wp]
        S ar[kMaxRadix], ai[kMaxRadix];
        for (int64_t k = 0; k < m; ++k) {
          for (int64_t q = 0; q < p; ++q) {
            ar[q] = sr[q * m + k];
            ai[q] = si[q * m + k];
            if (rotate && q > 0) cmul(ar[q], ai[q], twr[q], twi[q]);
          }
          S totr = ar[0], toti = ai[0];
          for (int64_t q = 1; q < p; ++q) totr += ar[q], toti += ai[q];
          dr[k] = totr;
          di[k] = toti;
          for (int64_t f2 = 1; f2 <= p / 2; ++f2) {
            S rer = ar[0], rei = ai[0], imr = S{}, imi = S{};
            for (int64_t q = 1; q <= p / 2; ++q) {
              const int64_t at = ((q * f2) % p) * wp;
              const R c = w_re[at], s = w_im[at];
              rer += (ar[q] + ar[p - q]) * c;
              rei += (ai[q] + ai[p - q]) * c;
              imr += (ar[q] - ar[p - q]) * s;
              imi += (ai[q] - ai[p - q]) * s;
            }
            // out[f2] = re + i * im, out[p - f2] = re - i * im
            dr[k + f2 * o] = rer - imi;
            di[k + f2 * o] = rei + imr;
            dr[k + (p - f2) * o] = rer + imi;
            di[k + (p - f2) * o] = rei - imr;
          }
        }
      }
    }
  }
}

// The forward transform of n lanes-points in re/im, in place; scratch holds 2n (Stockham) or 4m
// (Bluestein) more.
template <typename R, typename S>
void transform_lanes(const Plan<R>& plan, S* re, S* im, S* scratch) {
  const int64_t n = plan.n;
  if (plan.stockham) {
    S *yr = re, *yi = im, *xr = scratch, *xi = scratch + n;
    int64_t L = 1;
    for (int64_t p : plan.radices) {
      stage(plan, p, L, yr, yi, xr, xi);
      std::swap(yr, xr);
      std::swap(yi, xi);
      L *= p;
    }
    if (yr != re) {
      std::copy(yr, yr + n, re);
      std::copy(yi, yi + n, im);
    }
    return;
  }
  const int64_t m = plan.m;
  S *ar = scratch, *ai = scratch + m, *rest = scratch + 2 * m;
  for (int64_t k = 0; k < n; ++k) {
    ar[k] = re[k];
    ai[k] = im[k];
    cmul(ar[k], ai[k], plan.cr[k], plan.ci[k]);
  }
  std::fill(ar + n, ar + m, S{});
  std::fill(ai + n, ai + m, S{});
  transform_lanes(*plan.sub, ar, ai, rest);
  // the inverse transform of the product, as conj(FFT(conj(.)))
  for (int64_t k = 0; k < m; ++k) {
    cmul(ar[k], ai[k], plan.fr[k], plan.fi[k]);
    ai[k] = -ai[k];
  }
  transform_lanes(*plan.sub, ar, ai, rest);
  for (int64_t k = 0; k < n; ++k) {
    re[k] = ar[k];
    im[k] = -ai[k];
    cmul(re[k], im[k], plan.cr[k], plan.ci[k]);
  }
}

template <typename R>
int64_t lane_scratch(const Plan<R>& plan) {
  return plan.stockham ? 2 * plan.n : 4 * plan.m;
}

// Lane buffers of one parallel chunk: re, im (n each) and the engine's scratch.
template <typename R, typename S>
struct LaneBuffers {
  std::vector<S> data;
  S *re, *im, *scratch;
  LaneBuffers(const Plan<R>& plan, int64_t points)
      : data(static_cast<size_t>(2 * points + lane_scratch(plan))),
        re(data.data()),
        im(data.data() + points),
        scratch(data.data() + 2 * points) {}
};

// ---- one row: six-step (Note [FFT lanes]) and Bluestein over it --------------------------------

// A growing buffer per thread for the six-step intermediate (a fresh one per call would fault in
// its pages every time).
template <typename R>
R* six_step_scratch(int64_t count) {
  thread_local std::vector<R> buffer;
  if (static_cast<int64_t>(buffer.size()) < count) buffer.resize(static_cast<size_t>(count));
  return buffer.data();
}

// in (n1 x n2, row-major) -> pass A: each block of W columns transformed along j1 (lanes =
// columns, read as they lie), twiddled, and stored as T[k1 block][j2][k1 % W] (a W x W transpose
// per block of k1) -> pass B: each k1 block, now W contiguous lanes per j2, transformed along j2
// and stored at out[k2 * n1 + k1]. in may equal out (pass A reads all of it first).
template <typename R>
void six_step(const Plan<R>& plan, const std::complex<R>* in, std::complex<R>* out, bool conj_in,
              bool conj_out) {
  using S = V<R>;
  constexpr int64_t W = kW<R>;
  const int64_t n1 = plan.n1, n2 = plan.n2;
  const int64_t cblocks = (n2 + W - 1) / W, kblocks = (n1 + W - 1) / W;
  R* tre = six_step_scratch<R>(2 * kblocks * W * n2);
  R* tim = tre + kblocks * W * n2;
  const R ci = conj_in ? R(-1) : R(1), co = conj_out ? R(-1) : R(1);
  const bool full = n1 % W == 0 && n2 % W == 0;
  parallel_for(0, cblocks, std::max<int64_t>(1, 8192 / (n1 * W)), [&](int64_t b0, int64_t b1) {
    LaneBuffers<R, S> buf(*plan.p1, n1);
    S tile_r[W], tile_i[W];
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t c = blk * W, width = std::min(W, n2 - c);
      for (int64_t j1 = 0; j1 < n1; ++j1) {
        const std::complex<R>* src = in + j1 * n2 + c;
        if (full) {
          load_split(src, buf.re[j1], buf.im[j1]);
          buf.im[j1] *= ci;
        } else {
          S r{}, i{};
          for (int l = 0; l < width; ++l) {
            r[l] = src[l].real();
            i[l] = ci * src[l].imag();
          }
          buf.re[j1] = r;
          buf.im[j1] = i;
        }
      }
      transform_lanes(*plan.p1, buf.re, buf.im, buf.scratch);
      const R* twr = plan.tr.data() + blk * n1 * W;
      const R* twi = plan.ti.data() + blk * n1 * W;
      for (int64_t kb = 0; kb < kblocks; ++kb) {
        for (int64_t i = 0; i < W; ++i) {
          const int64_t k1 = kb * W + i;
          if (k1 >= n1) {
            tile_r[i] = tile_i[i] = S{};
            continue;
          }
          const S wr = load(twr + k1 * W), wi = load(twi + k1 * W);
          const S r = buf.re[k1], im = buf.im[k1];
          tile_r[i] = r * wr - im * wi;
          tile_i[i] = r * wi + im * wr;
        }
        transpose<R>(tile_r);  // tile[l] now holds k1 = kb*W .. kb*W + W - 1 of column c + l
        transpose<R>(tile_i);
        for (int64_t l = 0; l < width; ++l) {
          store(tre + (kb * n2 + c + l) * W, tile_r[l]);
          store(tim + (kb * n2 + c + l) * W, tile_i[l]);
        }
      }
    }
  });
  parallel_for(0, kblocks, std::max<int64_t>(1, 8192 / (n2 * W)), [&](int64_t b0, int64_t b1) {
    LaneBuffers<R, S> buf(*plan.p2, n2);
    for (int64_t kb = b0; kb < b1; ++kb) {
      const int64_t k1 = kb * W, width = std::min(W, n1 - k1);
      for (int64_t j2 = 0; j2 < n2; ++j2) {
        buf.re[j2] = load(tre + (kb * n2 + j2) * W);
        buf.im[j2] = load(tim + (kb * n2 + j2) * W);
      }
      transform_lanes(*plan.p2, buf.re, buf.im, buf.scratch);
      for (int64_t k2 = 0; k2 < n2; ++k2) {
        std::complex<R>* dst = out + k2 * n1 + k1;
        if (full) {
          store_joined(dst, buf.re[k2], buf.im[k2] * co);
        } else {
          for (int l = 0; l < width; ++l) dst[l] = {buf.re[k2][l], co * buf.im[k2][l]};
        }
      }
    }
  });
}

// The forward transform of one row (in may equal out); conj_in / conj_out conjugate on the way.
template <typename R>
void transform_row(const Plan<R>& plan, const std::complex<R>* in, std::complex<R>* out, bool conj_in,
                   bool conj_out) {
  const int64_t n = plan.n;
  const R ci = conj_in ? R(-1) : R(1), co = conj_out ? R(-1) : R(1);
  if (plan.six) return six_step(plan, in, out, conj_in, conj_out);
  if (plan.lanes()) {  // short: one lane of the engine
    LaneBuffers<R, R> buf(plan, n);
    for (int64_t j = 0; j < n; ++j) {
      buf.re[j] = in[j].real();
      buf.im[j] = ci * in[j].imag();
    }
    transform_lanes(plan, buf.re, buf.im, buf.scratch);
    for (int64_t j = 0; j < n; ++j) out[j] = {buf.re[j], co * buf.im[j]};
    return;
  }
  // Bluestein over row transforms of the power-of-two length m
  const int64_t m = plan.m;
  std::vector<std::complex<R>> a(static_cast<size_t>(m));
  for (int64_t k = 0; k < n; ++k)
    a[k] = std::complex<R>(in[k].real(), ci * in[k].imag()) * std::complex<R>(plan.cr[k], plan.ci[k]);
  std::fill(a.begin() + n, a.end(), std::complex<R>(0));
  transform_row(*plan.sub, a.data(), a.data(), false, false);
  for (int64_t k = 0; k < m; ++k) a[k] *= std::complex<R>(plan.fr[k], plan.fi[k]);
  transform_row(*plan.sub, a.data(), a.data(), true, true);
  for (int64_t k = 0; k < n; ++k) {
    const std::complex<R> v = a[k] * std::complex<R>(plan.cr[k], plan.ci[k]);
    out[k] = {v.real(), co * v.imag()};
  }
}

// Whether rows run W at a time through the lane engine (else one by one, six-step inside).
template <typename R>
bool by_lanes(const Plan<R>& plan, int64_t rows) {
  return plan.lanes() && (rows >= kW<R> || !plan.six);
}

// Row blocks of W: load(row, lanes, re, im) fills the lanes, store(row, lanes, re, im) reads them
// back, around one forward lane transform of `points` points.
template <typename R, typename Load, typename Store>
void over_row_blocks(const Plan<R>& plan, int64_t rows, int64_t points, const Load& load_fn,
                     const Store& store_fn) {
  using S = V<R>;
  constexpr int64_t W = kW<R>;
  const int64_t blocks = (rows + W - 1) / W;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(points * W, 1));
  parallel_for(0, blocks, grain, [&](int64_t b0, int64_t b1) {
    LaneBuffers<R, S> buf(plan, points);
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t r0 = blk * W, lanes = std::min(W, rows - r0);
      load_fn(r0, lanes, buf.re, buf.im);
      transform_lanes(plan, buf.re, buf.im, buf.scratch);
      store_fn(r0, lanes, buf.re, buf.im);
    }
  });
}

// Lane buffer point j of `lanes` rows of a row-major matrix (row stride `stride` elements of
// `src`), W points at a time through W x W transposes; get(row, j) for the tail.
template <typename R, typename Get>
void gather_lanes(int64_t points, int64_t lanes, V<R>* re, V<R>* im, const Get& get) {
  for (int64_t j = 0; j < points; ++j) {
    V<R> a{}, b{};
    for (int l = 0; l < lanes; ++l) {
      const std::complex<R> v = get(l, j);
      a[l] = v.real();
      b[l] = v.imag();
    }
    re[j] = a;
    im[j] = b;
  }
}

// ---- complex rows -----------------------------------------------------------------------------

template <typename R>
void c2c_rows(std::complex<R>* base, int64_t rows, int64_t n, bool forward) {
  using S = V<R>;
  constexpr int64_t W = kW<R>;
  const std::shared_ptr<const Plan<R>> plan = plan_for<R>(n);
  const R sign = forward ? R(1) : R(-1);
  if (!by_lanes(*plan, rows)) {
    for (int64_t r = 0; r < rows; ++r) transform_row(*plan, base + r * n, base + r * n, !forward, !forward);
    return;
  }
  over_row_blocks<R>(
      *plan, rows, n,
      [&](int64_t r0, int64_t lanes, S* re, S* im) {
        int64_t j = 0;
        if (lanes == W) {  // W x W tiles: W points of W rows per transpose
          S tr[W], ti[W];
          for (; j + W <= n; j += W) {
            for (int64_t l = 0; l < W; ++l) load_split_lanes(base + (r0 + l) * n + j, tr[l], ti[l]);
            transpose<R>(tr);
            transpose<R>(ti);
            for (int q = 0; q < static_cast<int>(W); ++q) {
              re[j + sigma<R>(q)] = tr[q];
              im[j + sigma<R>(q)] = ti[q] * sign;
            }
          }
        }
        gather_lanes<R>(n - j, lanes, re + j, im + j, [&](int64_t l, int64_t jj) {
          const std::complex<R> v = base[(r0 + l) * n + j + jj];
          return std::complex<R>(v.real(), sign * v.imag());
        });
      },
      [&](int64_t r0, int64_t lanes, S* re, S* im) {
        int64_t j = 0;
        if (lanes == W) {
          S tr[W], ti[W];
          for (; j + W <= n; j += W) {
            for (int q = 0; q < static_cast<int>(W); ++q) {
              tr[q] = re[j + sigma<R>(q)];
              ti[q] = im[j + sigma<R>(q)] * sign;
            }
            transpose<R>(tr);
            transpose<R>(ti);
            for (int64_t l = 0; l < W; ++l) store_joined_lanes(base + (r0 + l) * n + j, tr[l], ti[l]);
          }
        }
        for (; j < n; ++j)
          for (int l = 0; l < lanes; ++l) base[(r0 + l) * n + j] = {re[j][l], sign * im[j][l]};
      });
}

// Note [real rows]: an even length n is transformed as m = n/2 complex points
// z[j] = x[2j] + i x[2j+1], whose transform Z gives, with w = e^{-2 pi i / n},
//   X[k] = (Z[k] + conj Z[m-k]) / 2 - i w^k (Z[k] - conj Z[m-k]) / 2,   k = 0 .. m
// (indices of Z mod m); an odd length takes the complex transform of the widened row. The
// inverse (Hermitian half to real) runs the same packing backwards.
template <typename R, typename S, typename T>
inline void unpack_bin(const S& ar, const S& ai, const S& br, const S& bi, const T& wr, const T& wi, S& xr,
                       S& xi) {
  // a = Z[k], b = Z[m-k]; even = (a + conj b) / 2, odd = (a - conj b) / 2; X = even - i w odd
  const S er = (ar + br) * R(0.5), ei = (ai - bi) * R(0.5);
  const S orr = (ar - br) * R(0.5), oi = (ai + bi) * R(0.5);
  // -i * odd = (oi, -orr); times w
  xr = er + oi * wr + orr * wi;
  xi = ei + oi * wi - orr * wr;
}

// The conjugate of what c2r inverts, for even n: Z[k] = (X[k] + conj X[m-k]) + i conj(w^k)
// (X[k] - conj X[m-k]), conjugated (the inverse runs as conj(FFT(conj(.)))). (wr, wi) = w^k.
template <typename R, typename S, typename T>
inline void pack_bin(const S& ar, const S& ai, const S& br, const S& bi, const T& wr, const T& wi, S& zr,
                     S& zi) {
  const S sr = ar + br, si = ai - bi;
  const S dr = ar - br, di = ai + bi;
  // o = (a - conj b) conj(w) = (dr wr + di wi, di wr - dr wi); z = conj(s + i o)
  const S orr = dr * wr + di * wi, oi = di * wr - dr * wi;
  zr = sr - oi;
  zi = -(si + orr);
}

// The onesided spectrum bins [0, n/2] of lanes whose packed (even n) or widened (odd n)
// transform is in re/im, written as emit(k, Xr, Xi) for each bin.
template <typename R, typename S, typename Emit>
void real_bins(int64_t n, const S* re, const S* im, const RealTwiddles<R>& tw, const Emit& emit) {
  if (n % 2 == 1) {
    for (int64_t k = 0; k <= n / 2; ++k) emit(k, re[k], im[k]);
    return;
  }
  const int64_t m = n / 2;
  for (int64_t k = 0; k <= m; ++k) {
    const int64_t a = k == m ? 0 : k, b = k == 0 ? 0 : m - k;  // k and m - k modulo m
    S xr, xi;
    unpack_bin<R, S, R>(re[a], im[a], re[b], im[b], tw.re[k], tw.im[k], xr, xi);
    emit(k, xr, xi);
  }
}

// One long even row: Z (m = n/2 points) written into X[0, m), then X[k] and X[m - k] made from the
// pair Z[k], Z[m - k] in place, W pairs at a time (the upper block lane-reversed).
template <typename R>
void unpack_in_place(std::complex<R>* X, int64_t m, const RealTwiddles<R>& tw) {
  constexpr int64_t W = kW<R>;
  auto scalar_pair = [&](int64_t k) {  // 1 <= k <= m / 2
    const std::complex<R> a = X[k], b = X[m - k];
    R xr, xi, yr, yi;
    unpack_bin<R, R, R>(a.real(), a.imag(), b.real(), b.imag(), tw.re[k], tw.im[k], xr, xi);
    unpack_bin<R, R, R>(b.real(), b.imag(), a.real(), a.imag(), tw.re[m - k], tw.im[m - k], yr, yi);
    X[k] = {xr, xi};
    X[m - k] = {yr, yi};
  };
  const std::complex<R> z0 = X[0];
  const int64_t vblocks = m / 2 >= W ? (m / 2 - W + 1) / W : 0;  // blocks [1 + b W, 1 + (b + 1) W) below m/2
  parallel_for(0, vblocks, std::max<int64_t>(1, 4096 / W), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t k = 1 + b * W, h = m - k - W + 1;  // lanes: k + i and m - k - i
      V<R> ar, ai, br, bi, xr, xi, yr, yi;
      load_split(X + k, ar, ai);
      load_split_rev(X + h, br, bi);
      unpack_bin<R, V<R>, V<R>>(ar, ai, br, bi, load(tw.re.data() + k), load(tw.im.data() + k), xr, xi);
      unpack_bin<R, V<R>, V<R>>(br, bi, ar, ai, reversed<R>(load(tw.re.data() + h)),
                                reversed<R>(load(tw.im.data() + h)), yr, yi);
      store_joined(X + k, xr, xi);
      store_joined_rev(X + h, yr, yi);
    }
  });
  for (int64_t k = 1 + vblocks * W; k <= m / 2; ++k) scalar_pair(k);
  R xr, xi;
  unpack_bin<R, R, R>(z0.real(), z0.imag(), z0.real(), z0.imag(), tw.re[0], tw.im[0], xr, xi);
  X[0] = {xr, xi};
  unpack_bin<R, R, R>(z0.real(), z0.imag(), z0.real(), z0.imag(), tw.re[m], tw.im[m], xr, xi);
  X[m] = {xr, xi};
}

template <typename R>
void r2c_rows(const R* src, std::complex<R>* dst, int64_t rows, int64_t n) {
  using S = V<R>;
  constexpr int64_t W = kW<R>;
  const int64_t bins = n / 2 + 1, points = n % 2 == 0 ? n / 2 : n;
  if (n <= 2) {
    for (int64_t r = 0; r < rows; ++r) {
      const R* x = src + r * n;
      dst[r * bins] = n == 1 ? x[0] : x[0] + x[1];
      if (n == 2) dst[r * bins + 1] = x[0] - x[1];
    }
    return;
  }
  const std::shared_ptr<const Plan<R>> plan = plan_for<R>(points);
  const std::shared_ptr<const RealTwiddles<R>> tw = real_twiddles<R>(n);
  if (!by_lanes(*plan, rows)) {
    std::vector<std::complex<R>> z(n % 2 == 0 ? 0 : static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const R* x = src + r * n;
      std::complex<R>* X = dst + r * bins;
      if (n % 2 == 0) {
        transform_row(*plan, reinterpret_cast<const std::complex<R>*>(x), X, false, false);
        unpack_in_place(X, points, *tw);
      } else {
        for (int64_t j = 0; j < n; ++j) z[j] = x[j];
        transform_row(*plan, z.data(), z.data(), false, false);
        std::copy(z.begin(), z.begin() + bins, X);
      }
    }
    return;
  }
  over_row_blocks<R>(
      *plan, rows, points,
      [&](int64_t r0, int64_t lanes, S* re, S* im) {
        int64_t j = 0;
        if (lanes == W && n % 2 == 0) {
          S tr[W], ti[W];
          for (; j + W <= points; j += W) {
            for (int64_t l = 0; l < W; ++l)
              load_split_lanes(reinterpret_cast<const std::complex<R>*>(src + (r0 + l) * n) + j, tr[l],
                               ti[l]);
            transpose<R>(tr);
            transpose<R>(ti);
            for (int q = 0; q < static_cast<int>(W); ++q) {
              re[j + sigma<R>(q)] = tr[q];
              im[j + sigma<R>(q)] = ti[q];
            }
          }
        }
        gather_lanes<R>(points - j, lanes, re + j, im + j, [&](int64_t l, int64_t jj) {
          const R* x = src + (r0 + l) * n;
          const int64_t p = j + jj;
          return n % 2 == 0 ? std::complex<R>(x[2 * p], x[2 * p + 1]) : std::complex<R>(x[p], R(0));
        });
      },
      [&](int64_t r0, int64_t lanes, const S* re, const S* im) {
        real_bins<R, S>(n, re, im, *tw, [&](int64_t k, const S& xr, const S& xi) {
          for (int l = 0; l < lanes; ++l) dst[(r0 + l) * bins + k] = {xr[l], xi[l]};
        });
      });
}

// One long even row, backwards: z[k] (the conjugated packing) from X[k] and X[m - k], into z.
template <typename R>
void pack_rows_into(const std::complex<R>* X, std::complex<R>* z, int64_t m, const RealTwiddles<R>& tw) {
  constexpr int64_t W = kW<R>;
  auto bin = [&](int64_t k) {  // the imaginary parts of bins 0 and m are ignored, as by PyTorch
    return k == 0 || k == m ? std::complex<R>(X[k].real(), 0) : X[k];
  };
  auto scalar = [&](int64_t k) {
    const std::complex<R> a = bin(k), b = bin(m - k);
    R zr, zi;
    pack_bin<R, R, R>(a.real(), a.imag(), b.real(), b.imag(), tw.re[k], tw.im[k], zr, zi);
    z[k] = {zr, zi};
  };
  const int64_t vblocks = m / 2 >= W ? (m / 2 - W + 1) / W : 0;
  parallel_for(0, vblocks, std::max<int64_t>(1, 4096 / W), [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t k = 1 + b * W, h = m - k - W + 1;
      V<R> ar, ai, br, bi, zr, zi;
      load_split(X + k, ar, ai);
      load_split_rev(X + h, br, bi);
      pack_bin<R, V<R>, V<R>>(ar, ai, br, bi, load(tw.re.data() + k), load(tw.im.data() + k), zr, zi);
      store_joined(z + k, zr, zi);
      pack_bin<R, V<R>, V<R>>(br, bi, ar, ai, reversed<R>(load(tw.re.data() + h)),
                              reversed<R>(load(tw.im.data() + h)), zr, zi);
      store_joined_rev(z + h, zr, zi);
    }
  });
  for (int64_t k = 1 + vblocks * W; k < m - vblocks * W; ++k) scalar(k);
  scalar(0);
}

template <typename R>
void c2r_rows(const std::complex<R>* src, R* dst, int64_t rows, int64_t n, int64_t bins) {
  using S = V<R>;
  const int64_t points = n % 2 == 0 ? n / 2 : n, m = n / 2;
  if (n <= 2) {
    for (int64_t r = 0; r < rows; ++r) {
      const std::complex<R>* X = src + r * bins;
      if (n == 1) {
        dst[r] = X[0].real();
      } else {
        dst[r * 2] = X[0].real() + X[1].real();
        dst[r * 2 + 1] = X[0].real() - X[1].real();
      }
    }
    return;
  }
  const std::shared_ptr<const Plan<R>> plan = plan_for<R>(points);
  const std::shared_ptr<const RealTwiddles<R>> tw = real_twiddles<R>(n);
  auto bin = [&](const std::complex<R>* X, int64_t k) -> std::complex<R> {
    return k == 0 || (n % 2 == 0 && k == m) ? std::complex<R>(X[k].real(), 0) : X[k];
  };
  if (!by_lanes(*plan, rows)) {
    std::vector<std::complex<R>> z(n % 2 == 0 ? 0 : static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r) {
      const std::complex<R>* X = src + r * bins;
      R* x = dst + r * n;
      if (n % 2 == 0) {
        // the conjugated packing into the output row, then its transform in place, conjugated: x[2j] + i
        // x[2j+1]
        std::complex<R>* zx = reinterpret_cast<std::complex<R>*>(x);
        pack_rows_into(X, zx, m, *tw);
        transform_row(*plan, zx, zx, false, true);
      } else {
        for (int64_t k = 0; k < n; ++k) z[k] = k <= n / 2 ? std::conj(bin(X, k)) : bin(X, n - k);
        transform_row(*plan, z.data(), z.data(), false, false);
        for (int64_t j = 0; j < n; ++j) x[j] = z[j].real();
      }
    }
    return;
  }
  over_row_blocks<R>(
      *plan, rows, points,
      [&](int64_t r0, int64_t lanes, S* re, S* im) {
        for (int64_t k = 0; k < points; ++k) {
          S a{}, b{};
          for (int l = 0; l < lanes; ++l) {
            const std::complex<R>* X = src + (r0 + l) * bins;
            std::complex<R> v;
            if (n % 2 == 1) {
              v = k <= n / 2 ? std::conj(bin(X, k)) : bin(X, n - k);
            } else {
              const std::complex<R> x0 = bin(X, k), x1 = bin(X, m - k);
              R zr, zi;
              pack_bin<R, R, R>(x0.real(), x0.imag(), x1.real(), x1.imag(), tw->re[k], tw->im[k], zr, zi);
              v = {zr, zi};
            }
            a[l] = v.real();
            b[l] = v.imag();
          }
          re[k] = a;
          im[k] = b;
        }
      },
      [&](int64_t r0, int64_t lanes, const S* re, const S* im) {
        for (int l = 0; l < lanes; ++l) {
          R* x = dst + (r0 + l) * n;
          if (n % 2 == 0) {
            for (int64_t j = 0; j < m; ++j) {
              x[2 * j] = re[j][l];
              x[2 * j + 1] = -im[j][l];
            }
          } else {
            for (int64_t j = 0; j < n; ++j) x[j] = re[j][l];
          }
        }
      });
}

// ---- stft / istft (src/ops/fft/stft.cpp) ------------------------------------------------------

// The signal position a padded position t reads (-1: a zero), as stft's pad_mode pads.
inline int64_t padded_source(int64_t t, int64_t length, StftPad mode) {
  if (t >= 0 && t < length) return t;
  switch (mode) {
    case StftPad::Reflect: return t < 0 ? -t : 2 * (length - 1) - t;
    case StftPad::Replicate: return t < 0 ? 0 : length - 1;
    case StftPad::Circular: return ((t % length) + length) % length;
    default: return -1;
  }
}

// Frames are the lanes: W consecutive frames of one signal per block, read windowed straight
// from the signal (a frame that overhangs an end reads through padded_source), transformed as
// real rows (Note [real rows]), and stored bin by bin, where the W frames are adjacent.
template <typename R>
void stft_rows(const R* x, std::complex<R>* out, const R* window, int64_t batch, int64_t length, int64_t n,
               int64_t frames, int64_t bins_out, int64_t hop, int64_t pad, StftPad mode) {
  using S = V<R>;
  constexpr int64_t W = kW<R>;
  const int64_t points = n % 2 == 0 ? n / 2 : n, half = n / 2;
  const std::shared_ptr<const Plan<R>> plan = plan_for<R>(points);
  const std::shared_ptr<const RealTwiddles<R>> tw = real_twiddles<R>(n);
  const int64_t per_signal = (frames + W - 1) / W;
  const int64_t grain = std::max<int64_t>(1, 16384 / (points * W));
  const bool packed = n % 2 == 0;
  if (!plan->lanes()) {  // frames too long for lanes: one at a time through the row transforms
    std::vector<R> frame(static_cast<size_t>(n));
    std::vector<std::complex<R>> X(static_cast<size_t>(n / 2 + 1));
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t j = 0; j < n; ++j) {
          const int64_t t = padded_source(f * hop - pad + j, length, mode);
          frame[j] = t < 0 ? R(0) : window[j] * x[b * length + t];
        }
        r2c_rows<R>(frame.data(), X.data(), 1, n);
        std::complex<R>* o = out + (b * frames + f) * bins_out;
        for (int64_t k = 0; k <= half; ++k) {
          o[k] = X[k];
          if (bins_out > half + 1 && k >= 1 && n - k > half) o[n - k] = std::conj(X[k]);
        }
      }
    return;
  }
  // the window split as the packed points read it: even samples, odd samples
  std::vector<R> wsplit(static_cast<size_t>(2 * points + 2 * W), R(0));
  for (int64_t j = 0; j < points; ++j) {
    wsplit[j] = packed ? window[2 * j] : window[j];
    wsplit[points + W + j] = packed ? window[2 * j + 1] : R(0);
  }
  // the vector loads below see W points at a time in load_split_lanes' order: permute likewise
  std::vector<R> wperm(wsplit);
  for (int64_t j = 0; j + W <= points; j += W)
    for (int q = 0; q < static_cast<int>(W); ++q) {
      wperm[j + q] = wsplit[j + sigma<R>(q)];
      wperm[points + W + j + q] = wsplit[points + W + j + sigma<R>(q)];
    }
  const R* wev = wsplit.data();
  const R* wod = wsplit.data() + points + W;
  const R* pev = wperm.data();
  const R* pod = wperm.data() + points + W;
  parallel_for(0, batch * per_signal, grain, [&](int64_t b0, int64_t b1) {
    LaneBuffers<R, S> buf(*plan, points);
    std::vector<R> padded_frames(static_cast<size_t>(W * n));
    std::vector<S> spec_r(static_cast<size_t>(bins_out)), spec_i(static_cast<size_t>(bins_out));
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t b = blk / per_signal, f0 = (blk % per_signal) * W, lanes = std::min(W, frames - f0);
      const R* sig = x + b * length;
      const R* src[W];
      for (int l = 0; l < W; ++l) {
        const int64_t start = (f0 + std::min<int64_t>(l, lanes - 1)) * hop - pad;
        src[l] = sig + start;
        if (start < 0 || start + n > length) {  // the frame overhangs an end: gather it padded
          R* frame = padded_frames.data() + l * n;
          for (int64_t j = 0; j < n; ++j) {
            const int64_t t = padded_source(start + j, length, mode);
            frame[j] = t < 0 ? R(0) : sig[t];
          }
          src[l] = frame;
        }
      }
      // W points of W frames per W x W transpose (a short last block repeats its last frame)
      int64_t j = 0;
      if (packed) {
        S tr[W], ti[W];
        for (; j + W <= points; j += W) {
          const S we = load(pev + j), wo = load(pod + j);
          for (int64_t l = 0; l < W; ++l) {
            load_split_lanes(reinterpret_cast<const std::complex<R>*>(src[l]) + j, tr[l], ti[l]);
            tr[l] *= we;
            ti[l] *= wo;
          }
          transpose<R>(tr);
          transpose<R>(ti);
          for (int q = 0; q < static_cast<int>(W); ++q) {
            buf.re[j + sigma<R>(q)] = tr[q];
            buf.im[j + sigma<R>(q)] = ti[q];
          }
        }
      }
      for (; j < points; ++j) {
        S a, c;
        for (int64_t l = 0; l < W; ++l) {
          a[l] = packed ? src[l][2 * j] : src[l][j];
          c[l] = packed ? src[l][2 * j + 1] : R(0);
        }
        buf.re[j] = a * wev[j];
        buf.im[j] = c * wod[j];
      }
      transform_lanes(*plan, buf.re, buf.im, buf.scratch);
      // bins as vectors over the frames, then W x W transposes to frame rows out[b][f][k]
      real_bins<R, S>(n, buf.re, buf.im, *tw, [&](int64_t k, const S& xr, const S& xi) {
        spec_r[k] = xr;
        spec_i[k] = xi;
        if (bins_out > half + 1 && k >= 1 && n - k > half) {  // twosided: the conjugate at n - k
          spec_r[n - k] = xr;
          spec_i[n - k] = -xi;
        }
      });
      std::complex<R>* o = out + (b * frames + f0) * bins_out;
      int64_t k = 0;
      if (lanes == W) {
        S tr[W], ti[W];
        for (; k + W <= bins_out; k += W) {
          for (int q = 0; q < static_cast<int>(W); ++q) {
            tr[q] = spec_r[k + sigma<R>(q)];
            ti[q] = spec_i[k + sigma<R>(q)];
          }
          transpose<R>(tr);
          transpose<R>(ti);
          for (int64_t l = 0; l < W; ++l) store_joined_lanes(o + l * bins_out + k, tr[l], ti[l]);
        }
      }
      for (; k < bins_out; ++k)
        for (int l = 0; l < lanes; ++l) o[l * bins_out + k] = {spec_r[k][l], spec_i[k][l]};
    }
  });
}

// Frames (the lanes again) inverted from their Hermitian halves, windowed into a frame buffer,
// then overlap-added as a gather: each output sample sums the frames covering it, in frame order
// (so the result does not depend on the thread count), times the inverse envelope.
template <typename R>
void istft_rows(const std::complex<R>* in, int64_t sb, int64_t sk, int64_t sf, R* y, const R* window,
                const R* inv_envelope, int64_t batch, int64_t frames, int64_t n, int64_t len, int64_t hop,
                int64_t start) {
  using S = V<R>;
  constexpr int64_t W = kW<R>;
  const int64_t points = n % 2 == 0 ? n / 2 : n, m = n / 2;
  const bool packed = n % 2 == 0;
  const std::shared_ptr<const Plan<R>> plan = points > 1 ? plan_for<R>(points) : nullptr;
  const std::shared_ptr<const RealTwiddles<R>> tw = real_twiddles<R>(n);
  std::vector<R> fr(static_cast<size_t>(frames * n));
  const int64_t per_signal = (frames + W - 1) / W;
  for (int64_t b = 0; b < batch; ++b) {
    const std::complex<R>* X = in + b * sb;
    if (plan != nullptr && !plan->lanes()) {  // frames too long for lanes: one at a time
      std::vector<std::complex<R>> bins(static_cast<size_t>(m + 1));
      for (int64_t f = 0; f < frames; ++f) {
        for (int64_t k = 0; k <= m; ++k) bins[k] = X[k * sk + f * sf];
        R* row = fr.data() + f * n;
        c2r_rows<R>(bins.data(), row, 1, n, m + 1);
        for (int64_t j = 0; j < n; ++j) row[j] *= window[j];
      }
    } else if (plan == nullptr) {  // n = 1 or 2
      for (int64_t f = 0; f < frames; ++f) {
        const R x0 = X[f * sf].real(), x1 = n == 2 ? X[sk + f * sf].real() : R(0);
        fr[f * n] = (n == 1 ? x0 : x0 + x1) * window[0];
        if (n == 2) fr[f * n + 1] = (x0 - x1) * window[1];
      }
    } else {
      parallel_for(0, per_signal, std::max<int64_t>(1, 16384 / (points * W)), [&](int64_t b0, int64_t b1) {
        LaneBuffers<R, S> buf(*plan, points);
        std::vector<S> hr(static_cast<size_t>(m + 1)), hi(static_cast<size_t>(m + 1));
        for (int64_t blk = b0; blk < b1; ++blk) {
          const int64_t f0 = blk * W, lanes = std::min(W, frames - f0);
          // bins 0 .. n/2 of the W frames as vectors over the frames
          int64_t k = 0;
          if (lanes == W && sk == 1) {  // frame-major (stft's own layout): W x W transposes
            S tr[W], ti[W];
            for (; k + W <= m + 1; k += W) {
              for (int64_t l = 0; l < W; ++l) load_split_lanes(X + (f0 + l) * sf + k, tr[l], ti[l]);
              transpose<R>(tr);
              transpose<R>(ti);
              for (int q = 0; q < static_cast<int>(W); ++q) {
                hr[k + sigma<R>(q)] = tr[q];
                hi[k + sigma<R>(q)] = ti[q];
              }
            }
          } else if (lanes == W && sf == 1) {  // bin-major: the frames lie side by side
            for (; k <= m; ++k) load_split(X + k * sk + f0, hr[k], hi[k]);
          }
          for (; k <= m; ++k) {
            S re{}, im{};
            for (int l = 0; l < lanes; ++l) {
              re[l] = X[k * sk + (f0 + l) * sf].real();
              im[l] = X[k * sk + (f0 + l) * sf].imag();
            }
            hr[k] = re;
            hi[k] = im;
          }
          hi[0] = S{};  // ignored, as by c2r
          if (packed) hi[m] = S{};
          for (int64_t k = 0; k < points; ++k) {
            S ar, ai;
            if (!packed) {
              ar = k <= n / 2 ? hr[k] : hr[n - k];
              ai = k <= n / 2 ? -hi[k] : hi[n - k];
            } else {
              pack_bin<R, S, R>(hr[k], hi[k], hr[m - k], hi[m - k], tw->re[k], tw->im[k], ar, ai);
            }
            buf.re[k] = ar;
            buf.im[k] = ai;
          }
          transform_lanes(*plan, buf.re, buf.im, buf.scratch);
          for (int l = 0; l < lanes; ++l) {
            R* row = fr.data() + (f0 + l) * n;
            if (packed) {
              for (int64_t j = 0; j < m; ++j) {
                row[2 * j] = buf.re[j][l] * window[2 * j];
                row[2 * j + 1] = -buf.im[j][l] * window[2 * j + 1];
              }
            } else {
              for (int64_t j = 0; j < n; ++j) row[j] = buf.re[j][l] * window[j];
            }
          }
        }
      });
    }
    R* out = y + b * len;
    parallel_for(0, len, 4096, [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        const int64_t p = t + start;  // position in the overlap-added signal
        const int64_t f_hi = std::min(frames - 1, p / hop);
        const int64_t f_lo = p >= n ? (p - n) / hop + 1 : 0;
        R acc = 0;
        for (int64_t f = f_lo; f <= f_hi; ++f) acc += fr[f * n + (p - f * hop)];
        out[t] = acc * inv_envelope[t];
      }
    });
  }
}

void stft_kernel(const Tensor& out, const Tensor& in, const Tensor& window, int64_t hop, int64_t pad,
                 StftPad mode) {
  const int64_t batch = in.size(0), length = in.size(1), n = window.numel();
  const int64_t frames = out.size(1), bins = out.size(2);
  if (batch == 0 || frames == 0) return;
  if (in.dtype() == DType::Float32) {
    stft_rows<float>(in.data<float>(), out.data<std::complex<float>>(), window.data<float>(), batch, length,
                     n, frames, bins, hop, pad, mode);
  } else {
    stft_rows<double>(in.data<double>(), out.data<std::complex<double>>(), window.data<double>(), batch,
                      length, n, frames, bins, hop, pad, mode);
  }
}

void istft_kernel(const Tensor& out, const Tensor& in, const Tensor& window, const Tensor& inv_envelope,
                  int64_t hop, int64_t start) {
  const int64_t batch = out.size(0), len = out.size(1), n = window.numel(), frames = in.size(2);
  const int64_t sb = in.stride(0), sk = in.stride(1), sf = in.stride(2);
  if (batch == 0 || len == 0) return;
  if (out.dtype() == DType::Float32) {
    istft_rows<float>(in.data<std::complex<float>>(), sb, sk, sf, out.data<float>(), window.data<float>(),
                      inv_envelope.data<float>(), batch, frames, n, len, hop, start);
  } else {
    istft_rows<double>(in.data<std::complex<double>>(), sb, sk, sf, out.data<double>(), window.data<double>(),
                       inv_envelope.data<double>(), batch, frames, n, len, hop, start);
  }
}

void fft_kernel(const Tensor& data, bool forward) {
  const int64_t rows = data.size(0), n = data.size(1);
  if (rows == 0 || n <= 1) return;  // length 1 is the identity
  if (data.dtype() == DType::Complex64) {
    c2c_rows<float>(data.data<std::complex<float>>(), rows, n, forward);
  } else if (data.dtype() == DType::Complex128) {
    c2c_rows<double>(data.data<std::complex<double>>(), rows, n, forward);
  } else {
    throw Error(std::string("[fft] expected a complex64 or complex128 tensor, but got ") +
                dtype_name(data.dtype()));
  }
}

void r2c_kernel(const Tensor& out, const Tensor& in) {
  const int64_t rows = in.size(0), n = in.size(1);
  if (rows == 0) return;
  if (in.dtype() == DType::Float32) {
    r2c_rows<float>(in.data<float>(), out.data<std::complex<float>>(), rows, n);
  } else if (in.dtype() == DType::Float64) {
    r2c_rows<double>(in.data<double>(), out.data<std::complex<double>>(), rows, n);
  } else {
    throw Error(std::string("[fft_r2c] expected a float32 or float64 tensor, but got ") +
                dtype_name(in.dtype()));
  }
}

void c2r_kernel(const Tensor& out, const Tensor& in) {
  const int64_t rows = out.size(0), n = out.size(1), bins = in.size(1);
  if (rows == 0) return;
  if (out.dtype() == DType::Float32) {
    c2r_rows<float>(in.data<std::complex<float>>(), out.data<float>(), rows, n, bins);
  } else if (out.dtype() == DType::Float64) {
    c2r_rows<double>(in.data<std::complex<double>>(), out.data<double>(), rows, n, bins);
  } else {
    throw Error(std::string("[fft_c2r] expected a float32 or float64 output, but got ") +
                dtype_name(out.dtype()));
  }
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(fft_stub, &fft_kernel);
EMBER_REGISTER_CPU_KERNEL(fft_r2c_stub, &r2c_kernel);
EMBER_REGISTER_CPU_KERNEL(fft_c2r_stub, &c2r_kernel);
EMBER_REGISTER_CPU_KERNEL(stft_stub, &stft_kernel);
EMBER_REGISTER_CPU_KERNEL(istft_stub, &istft_kernel);

}  // namespace ember::EMBER_CPU_NS
