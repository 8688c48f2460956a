// CPU discrete Fourier transforms (interface in src/ops/kernels.h): unnormalized 1-D transforms
// of every row of a contiguous [B, n] tensor: complex in place (fft_stub), real to onesided
// complex (fft_r2c_stub) and its inverse (fft_c2r_stub); rows are split over parallel_for.
//
// Every length is exact to rounding. A length whose prime factors are all at most kMaxRadix
// runs a self-sorting (Stockham) mixed-radix transform with radix-4, 2, 3 and 5 butterflies
// and a generic O(p^2) butterfly for the other odd primes; any other length runs Bluestein's
// chirp-z algorithm, a circular convolution done by a power-of-two transform of size
// m >= 2n - 1. Arithmetic is in double for both dtypes (complex64 rows are widened per row), so
// float32 results carry only the rounding of the final store. Plans (factors, roots of unity,
// Bluestein's chirp and filter spectrum) are built once per length and cached.
#include <cmath>
#include <complex>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

using cd = std::complex<double>;
constexpr int64_t kMaxRadix = 61;  // larger prime factors go to Bluestein (the generic butterfly is O(p^2))
constexpr double kPi = 3.14159265358979323846264338327950288;

struct Plan;
std::shared_ptr<const Plan> plan_for(int64_t n);
void transform(const Plan& plan, cd* data, cd* scratch);

struct Plan {
  int64_t n = 0;
  std::vector<int64_t> radices;  // Stockham stages; empty for Bluestein
  std::vector<cd> roots;         // exp(-2 pi i j / n), j < n (Stockham)
  // Bluestein: chirp[k] = exp(-pi i k^2 / n); filter = FFT_m(conj chirp, wrapped) / m
  int64_t m = 0;
  std::vector<cd> chirp, filter;
  std::shared_ptr<const Plan> sub;  // the length-m plan
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

std::vector<cd> roots_of(int64_t n) {
  std::vector<cd> w(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    // cos/sin of the exact fraction j/n; sinpi-style symmetry is not needed at double precision
    const double a = -2.0 * kPi * static_cast<double>(j) / static_cast<double>(n);
    w[j] = cd(std::cos(a), std::sin(a));
  }
  return w;
}

std::shared_ptr<Plan> make_plan(int64_t n) {
  auto p = std::make_shared<Plan>();
  p->n = n;
  std::vector<int64_t> f = factor(n);
  bool small = true;
  for (int64_t r : f) small = small && r <= kMaxRadix;
  if (small) {
    p->radices = std::move(f);
    p->roots = roots_of(n);
    return p;
  }
  int64_t m = 1;
  while (m < 2 * n - 1) m *= 2;
  p->m = m;
  p->chirp.resize(n);
  for (int64_t k = 0; k < n; ++k) {
    // k^2 mod 2n keeps the angle small, so large k lose no precision
    const int64_t k2 =
        static_cast<int64_t>((static_cast<unsigned __int128>(k) * k) % (2 * static_cast<uint64_t>(n)));
    const double a = -kPi * static_cast<double>(k2) / static_cast<double>(n);
    p->chirp[k] = cd(std::cos(a), std::sin(a));
  }
  p->sub = plan_for(m);
  std::vector<cd> b(m, cd(0.0)), scratch(m);
  b[0] = std::conj(p->chirp[0]);
  for (int64_t k = 1; k < n; ++k) b[k] = b[m - k] = std::conj(p->chirp[k]);
  transform(*p->sub, b.data(), scratch.data());
  for (cd& v : b) v /= static_cast<double>(m);
  p->filter = std::move(b);
  return p;
}

std::shared_ptr<const Plan> plan_for(int64_t n) {
  static std::mutex mutex;
  static std::map<int64_t, std::shared_ptr<const Plan>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(n);
    if (it != cache.end()) return it->second;
  }
  std::shared_ptr<const Plan> p = make_plan(n);  // outside the lock: Bluestein asks for its sub-plan
  std::lock_guard<std::mutex> lock(mutex);
  if (cache.size() >= 64) cache.clear();  // bounded: a workload of many lengths rebuilds, never grows
  return cache.emplace(n, p).first->second;
}

// One Stockham stage of radix p (Note: y[f1*m*p + q*m + k] holds sub-transform k + q*m at f1;
// the stage writes x[(f1 + L*f2)*m + k], the transform of length L*p of subsequence k).
void stage(const Plan& plan, int64_t p, int64_t L, const cd* y, cd* x) {
  const int64_t n = plan.n, m = n / (L * p);
  const cd* w = plan.roots.data();
  const double s3 = std::sqrt(3.0) / 2.0;
  const double c5a = std::cos(2 * kPi / 5), c5b = std::cos(4 * kPi / 5);
  const double s5a = std::sin(2 * kPi / 5), s5b = std::sin(4 * kPi / 5);
  cd a[kMaxRadix], out[kMaxRadix];
  for (int64_t f1 = 0; f1 < L; ++f1) {
    const cd* src = y + f1 * m * p;
    cd* dst = x + f1 * m;
    const int64_t step = f1 * m;  // twiddle of input q: roots[q * step]
    for (int64_t k = 0; k < m; ++k) {
      for (int64_t q = 0; q < p; ++q)
        a[q] = q == 0 || f1 == 0 ? src[q * m + k] : src[q * m + k] * w[q * step];
      const int64_t o = L * m;  // stride between output frequencies f2
      switch (p) {
        case 2:
          dst[k] = a[0] + a[1];
          dst[k + o] = a[0] - a[1];
          break;
        case 3: {
          const cd t = a[1] + a[2], d = a[1] - a[2];
          const cd u = a[0] - 0.5 * t, v(s3 * d.imag(), -s3 * d.real());  // -i * s3 * d
          dst[k] = a[0] + t;
          dst[k + o] = u + v;
          dst[k + 2 * o] = u - v;
          break;
        }
        case 4: {
          const cd t0 = a[0] + a[2], t1 = a[0] - a[2], t2 = a[1] + a[3], d = a[1] - a[3];
          const cd t3(d.imag(), -d.real());  // -i * (a1 - a3)
          dst[k] = t0 + t2;
          dst[k + o] = t1 + t3;
          dst[k + 2 * o] = t0 - t2;
          dst[k + 3 * o] = t1 - t3;
          break;
        }
        case 5: {
          const cd b1 = a[1] + a[4], b2 = a[2] + a[3], d1 = a[1] - a[4], d2 = a[2] - a[3];
          const cd r1 = a[0] + c5a * b1 + c5b * b2, r2 = a[0] + c5b * b1 + c5a * b2;
          const cd i1 = s5a * d1 + s5b * d2, i2 = s5b * d1 - s5a * d2;  // times -i below
          const cd j1(i1.imag(), -i1.real()), j2(i2.imag(), -i2.real());
          dst[k] = a[0] + b1 + b2;
          dst[k + o] = r1 + j1;
          dst[k + 4 * o] = r1 - j1;
          dst[k + 2 * o] = r2 + j2;
          dst[k + 3 * o] = r2 - j2;
          break;
        }
        default: {
          // generic odd prime: pair q with p - q so each output needs (p-1)/2 complex rotations
          const int64_t wp = n / p;  // w_p^j = roots[j * wp mod n]
          cd total = a[0];
          for (int64_t q = 1; q < p; ++q) total += a[q];
          dst[k] = total;
          for (int64_t f2 = 1; f2 <= p / 2; ++f2) {
            cd re_part = a[0], im_part(0.0);
            for (int64_t q = 1; q <= p / 2; ++q) {
              const cd r = w[((q * f2) % p) * wp];
              const cd sum = a[q] + a[p - q], diff = a[q] - a[p - q];
              re_part += r.real() * sum;
              im_part += r.imag() * diff;
            }
            const cd j(-im_part.imag(), im_part.real());  // i * im_part
            out[f2] = re_part + j;
            out[p - f2] = re_part - j;
          }
          for (int64_t f2 = 1; f2 < p; ++f2) dst[k + f2 * o] = out[f2];
        }
      }
    }
  }
}

// The forward (e^{-2 pi i jk/n}) unnormalized transform of data[0..n), in place; scratch holds
// n values (Stockham) or 2m (Bluestein).
void transform(const Plan& plan, cd* data, cd* scratch) {
  const int64_t n = plan.n;
  if (plan.m == 0) {
    cd* y = data;
    cd* x = scratch;
    int64_t L = 1;
    for (int64_t p : plan.radices) {
      stage(plan, p, L, y, x);
      std::swap(x, y);
      L *= p;
    }
    if (y != data) std::memcpy(static_cast<void*>(data), y, sizeof(cd) * n);
    return;
  }
  const int64_t m = plan.m;
  cd* a = scratch;
  cd* tmp = scratch + m;
  for (int64_t k = 0; k < n; ++k) a[k] = data[k] * plan.chirp[k];
  for (int64_t k = n; k < m; ++k) a[k] = 0.0;
  transform(*plan.sub, a, tmp);
  // inverse transform of the product by conj(FFT(conj(.)))
  for (int64_t k = 0; k < m; ++k) a[k] = std::conj(a[k] * plan.filter[k]);
  transform(*plan.sub, a, tmp);
  for (int64_t k = 0; k < n; ++k) data[k] = std::conj(a[k]) * plan.chirp[k];
}

template <typename T>
void fft_typed(const Tensor& data, bool forward) {
  using R = typename T::value_type;
  const int64_t rows = data.size(0), n = data.size(1);
  if (rows == 0 || n <= 1) return;  // length 1 is the identity
  const std::shared_ptr<const Plan> plan = plan_for(n);
  T* base = data.data<T>();
  const size_t scratch_size = static_cast<size_t>(plan->m == 0 ? n : 2 * plan->m);
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1));
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<cd> buf(static_cast<size_t>(n)), scratch(scratch_size);
    for (int64_t r = begin; r < end; ++r) {
      T* row = base + r * n;
      // the inverse is conj(FFT(conj(x))): one forward algorithm serves both directions
      for (int64_t j = 0; j < n; ++j)
        buf[j] = forward ? cd(row[j].real(), row[j].imag()) : cd(row[j].real(), -row[j].imag());
      transform(*plan, buf.data(), scratch.data());
      for (int64_t j = 0; j < n; ++j)
        row[j] = T(static_cast<R>(buf[j].real()), static_cast<R>(forward ? buf[j].imag() : -buf[j].imag()));
    }
  });
}

// What the real-row kernels (r2c, c2r) share for rows of length n: an even n is handled as
// m = n/2 complex points with packing twiddles e^{sign 2 pi i k / n}, k = 0..m; an odd n as n
// complex points. The plan is for m points (none for m = 1).
struct RealRows {
  bool packed;
  int64_t m;
  std::shared_ptr<const Plan> plan;
  std::vector<cd> twiddle;
  size_t scratch_size;
  int64_t grain;

  RealRows(int64_t n, double sign) : packed(n % 2 == 0), m(packed ? n / 2 : n) {
    plan = m > 1 ? plan_for(m) : nullptr;
    if (packed) {
      twiddle.resize(static_cast<size_t>(m + 1));
      for (int64_t k = 0; k <= m; ++k) {
        const double a = sign * 2.0 * kPi * static_cast<double>(k) / static_cast<double>(n);
        twiddle[k] = cd(std::cos(a), std::sin(a));
      }
    }
    scratch_size = static_cast<size_t>(plan == nullptr ? 1 : plan->m == 0 ? m : 2 * plan->m);
    grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1));
  }
};

// Real rows: an even length n is transformed as n/2 complex points z[j] = x[2j] + i x[2j+1],
// whose transform Z gives X[k] = (Z[k] + conj Z[n/2-k]) / 2 - i w^k (Z[k] - conj Z[n/2-k]) / 2
// with w = e^{-2 pi i / n}; an odd length takes the complex transform of the widened row.
template <typename R>
void r2c_typed(const Tensor& out, const Tensor& in) {
  using T = std::complex<R>;
  const int64_t rows = in.size(0), n = in.size(1), bins = out.size(1);
  if (rows == 0) return;
  const RealRows setup(n, -1.0);
  const bool packed = setup.packed;
  const int64_t m = setup.m;
  const std::shared_ptr<const Plan>& plan = setup.plan;
  const std::vector<cd>& twiddle = setup.twiddle;
  const size_t scratch_size = setup.scratch_size;
  const int64_t grain = setup.grain;
  const R* src = in.data<R>();
  T* dst = out.data<T>();
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<cd> z(static_cast<size_t>(m)), scratch(scratch_size);
    for (int64_t r = begin; r < end; ++r) {
      const R* x = src + r * n;
      T* X = dst + r * bins;
      if (packed) {
        for (int64_t j = 0; j < m; ++j) z[j] = cd(x[2 * j], x[2 * j + 1]);
      } else {
        for (int64_t j = 0; j < m; ++j) z[j] = cd(x[j], 0.0);
      }
      if (plan != nullptr) transform(*plan, z.data(), scratch.data());
      if (!packed) {
        for (int64_t k = 0; k < bins; ++k) X[k] = T(static_cast<R>(z[k].real()), static_cast<R>(z[k].imag()));
        continue;
      }
      for (int64_t k = 0; k <= m; ++k) {
        const cd a = z[k % m], b = std::conj(z[(m - k) % m]);
        const cd even = 0.5 * (a + b), odd = 0.5 * (a - b);
        const cd v = even + twiddle[k] * cd(odd.imag(), -odd.real());  // odd / i
        X[k] = T(static_cast<R>(v.real()), static_cast<R>(v.imag()));
      }
    }
  });
}

void r2c_kernel(const Tensor& out, const Tensor& in) {
  if (in.dtype() == DType::Float32) {
    r2c_typed<float>(out, in);
  } else if (in.dtype() == DType::Float64) {
    r2c_typed<double>(out, in);
  } else {
    throw Error(std::string("[fft_r2c] expected a float32 or float64 tensor, but got ") +
                dtype_name(in.dtype()));
  }
}

// Hermitian half [B, n/2+1] to real rows [B, n] (unnormalized inverse), r2c's packing run
// backwards for even n: Z[k] = (X[k] + conj X[m-k]) + i conj(w^k) (X[k] - conj X[m-k]), m = n/2,
// whose inverse transform holds x[2j] + i x[2j+1]. Odd n: the inverse of the rebuilt full
// spectrum. The imaginary parts of bin 0 and (even n) bin n/2 are ignored, as PyTorch's are.
template <typename R>
void c2r_typed(const Tensor& out, const Tensor& in) {
  using T = std::complex<R>;
  const int64_t rows = out.size(0), n = out.size(1), bins = in.size(1);
  if (rows == 0) return;
  const RealRows setup(n, 1.0);  // twiddles conj(w^k)
  const bool packed = setup.packed;
  const int64_t m = setup.m;
  const std::shared_ptr<const Plan>& plan = setup.plan;
  const std::vector<cd>& twiddle = setup.twiddle;
  const size_t scratch_size = setup.scratch_size;
  const int64_t grain = setup.grain;
  const T* src = in.data<T>();
  R* dst = out.data<R>();
  parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
    std::vector<cd> z(static_cast<size_t>(m)), scratch(scratch_size);
    for (int64_t r = begin; r < end; ++r) {
      const T* X = src + r * bins;
      R* x = dst + r * n;
      auto bin = [&](int64_t k) {
        const cd v(X[k].real(), X[k].imag());
        return k == 0 || (packed && k == m) ? cd(v.real(), 0.0) : v;
      };
      // z holds the conjugate of what is to be inverted: the inverse is conj(FFT(conj(.)))
      if (packed) {
        for (int64_t k = 0; k < m; ++k) {
          const cd a = bin(k), b = std::conj(bin(m - k));
          const cd o = (a - b) * twiddle[k];
          z[k] = std::conj(a + b + cd(-o.imag(), o.real()));  // + i o
        }
      } else {
        for (int64_t k = 0; k < m; ++k) z[k] = k <= n / 2 ? std::conj(bin(k)) : bin(n - k);
      }
      if (plan != nullptr) transform(*plan, z.data(), scratch.data());
      if (packed) {
        for (int64_t j = 0; j < m; ++j) {
          x[2 * j] = static_cast<R>(z[j].real());
          x[2 * j + 1] = static_cast<R>(-z[j].imag());
        }
      } else {
        for (int64_t j = 0; j < m; ++j) x[j] = static_cast<R>(z[j].real());
      }
    }
  });
}

void c2r_kernel(const Tensor& out, const Tensor& in) {
  if (out.dtype() == DType::Float32) {
    c2r_typed<float>(out, in);
  } else if (out.dtype() == DType::Float64) {
    c2r_typed<double>(out, in);
  } else {
    throw Error(std::string("[fft_c2r] expected a float32 or float64 output, but got ") +
                dtype_name(out.dtype()));
  }
}

void fft_kernel(const Tensor& data, bool forward) {
  if (data.dtype() == DType::Complex64) {
    fft_typed<std::complex<float>>(data, forward);
  } else if (data.dtype() == DType::Complex128) {
    fft_typed<std::complex<double>>(data, forward);
  } else {
    throw Error(std::string("[fft] expected a complex64 or complex128 tensor, but got ") +
                dtype_name(data.dtype()));
  }
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(fft_stub, &fft_kernel);
EMBER_REGISTER_CPU_KERNEL(fft_r2c_stub, &r2c_kernel);
EMBER_REGISTER_CPU_KERNEL(fft_c2r_stub, &c2r_kernel);

}  // namespace ember::EMBER_CPU_NS
