// CPU random kernels (interface in src/ops/kernels.h): Philox draws in parallel (Note [reproducible
// randomness]); mt19937 draws serially with PyTorch's CPU transformations (Note [PyTorch-compatible
// streams] in src/ops/random/random.cpp).
#include <cmath>
#include <cstring>

#include "loops.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

double unit53(uint32_t hi, uint32_t lo) {  // [0, 1) with 53 random bits
  return static_cast<double>(((static_cast<uint64_t>(hi) << 32) | lo) >> 11) * 0x1.0p-53;
}

template <typename T>
void store(T* p, double v) {
  if constexpr (is_reduced_v<T>) {
    *p = T(static_cast<float>(v));
  } else {
    *p = static_cast<T>(v);
  }
}

template <typename T>
T cast(float v) {
  if constexpr (is_reduced_v<T>) {
    return T(v);
  } else {
    return static_cast<T>(v);
  }
}

// ---- Philox -------------------------------------------------------------------------------------

void philox_kernel(RandomKind kind, const Tensor& out, PhiloxState state, const Scalar& a, const Scalar& b,
                   const Tensor& probs) {
  const int64_t n = out.numel();
  if (kind == RandomKind::Integer) {
    visit<kReal>(out.dtype(), "randint", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out.data<T>();
      const int64_t lo = a.to_int();
      const uint64_t range = static_cast<uint64_t>(b.to_int()) - static_cast<uint64_t>(lo);
      parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
          const Philox4 r = philox(state.seed, state.offset + static_cast<uint64_t>(i / 2));
          const int w = 2 * static_cast<int>(i % 2);
          const uint64_t draw = (static_cast<uint64_t>(r.v[w]) << 32) | r.v[w + 1];
          const auto value = static_cast<int64_t>(static_cast<uint64_t>(lo) + draw % range);
          if constexpr (std::is_integral_v<T>) {
            o[i] = static_cast<T>(value);
          } else {
            store(o + i, static_cast<double>(value));
          }
        }
      });
    });
    return;
  }
  visit<kAllFloat>(out.dtype(), "random", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    const double x = a.to_double();
    const double y = b.to_double();
    const double* p = probs.defined() ? probs.data<double>() : nullptr;
    const bool narrow = kind == RandomKind::Uniform && !std::is_same_v<T, double>;
    parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        const uint64_t block = static_cast<uint64_t>(narrow ? i / 4 : i / 2);
        const Philox4 r = philox(state.seed, state.offset + block);
        const int w = 2 * static_cast<int>(i % 2);
        if (narrow) {  // 24 random bits, enough for float's mantissa
          const double u = static_cast<double>(r.v[i % 4] >> 8) * 0x1.0p-24;
          store(o + i, x + (y - x) * u);
        } else if (kind == RandomKind::Uniform) {
          store(o + i, x + (y - x) * unit53(r.v[w], r.v[w + 1]));
        } else if (kind == RandomKind::Bernoulli || kind == RandomKind::BernoulliFloat) {
          store(o + i, unit53(r.v[w], r.v[w + 1]) < (p ? p[i] : x) ? 1.0 : 0.0);
        } else if (kind == RandomKind::Exponential) {
          store(o + i, -std::log1p(-unit53(r.v[w], r.v[w + 1])) / x);
        } else {  // Box-Muller: each block gives the pair of normals for elements 2k, 2k+1
          const double u1 = 1.0 - unit53(r.v[0], r.v[1]);  // (0, 1]: log is finite
          const double u2 = unit53(r.v[2], r.v[3]);
          const double radius = std::sqrt(-2.0 * std::log(u1));
          const double angle = 2.0 * M_PI * u2;
          store(o + i, x + y * radius * (i % 2 == 0 ? std::cos(angle) : std::sin(angle)));
        }
      }
    });
  });
}

// ---- mt19937, as PyTorch's CPU generator -------------------------------------------------------

float unit24(Generator& g) {  // [0, 1): the low 24 bits of one draw (uniform_real_distribution<float>)
  return static_cast<float>(g.random() & 0xffffffu) * 0x1.0p-24f;
}
double unit53(Generator& g) {  // [0, 1): the low 53 bits of two draws (uniform_real_distribution<double>)
  return static_cast<double>(g.random64() & ((uint64_t{1} << 53) - 1)) * 0x1.0p-53;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Natural log and sin/cos in float32 by Cephes' single-precision algorithms (Moshier), step for step
// as PyTorch's AVX2 Box-Muller evaluates them — including the multiply-adds its compiler fuses, which
// are written here as std::fma so that the result is the same bits whatever this file is compiled
// with. (PyTorch 2.13 runs this kernel on every x86 CPU with AVX2: it registers no AVX-512 build.)
float cephes_logf(float x) {
  x = std::max(x, bits_float(0x00800000u));  // no denormals; x is in (0, 1] here
  const auto exponent = static_cast<int32_t>(float_bits(x) >> 23) - 0x7f;
  x = bits_float((float_bits(x) & ~0x7f800000u) | float_bits(0.5f));  // mantissa in [0.5, 1)
  float e = static_cast<float>(exponent) + 1.0f;
  const bool below = x < 0.707106781186547524f;  // sqrt(1/2): fold into [sqrt(1/2) - 1, sqrt(2) - 1)
  const float extra = below ? x : 0.0f;
  x = x - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  x = x + extra;
  const float z = x * x;
  float y = 7.0376836292e-2f;
  for (float c : {-1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f, -1.6668057665e-1f,
                  2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f}) {
    y = std::fma(y, x, c);
  }
  y = y * x;
  y = std::fma(y, z, e * -2.12194440e-4f);
  y = std::fma(z, -0.5f, y);
  return std::fma(e, 0.693359375f, x + y);
}

void cephes_sincosf(float x, float* sine, float* cosine) {
  uint32_t sin_sign = float_bits(x) & 0x80000000u;
  x = std::fabs(x);
  // Octant j (made even) and x reduced by j * pi/4 in three parts (extended-precision reduction).
  auto j = static_cast<int32_t>(x * 1.27323954473516f);
  j = (j + 1) & ~1;
  const auto y = static_cast<float>(j);
  x = std::fma(y, -0.78515625f, x);
  x = std::fma(y, -2.4187564849853515625e-4f, x);
  x = std::fma(y, -3.77489497744594108e-8f, x);
  sin_sign ^= static_cast<uint32_t>(j & 4) << 29;
  const uint32_t cos_sign = static_cast<uint32_t>(~(j - 2) & 4) << 29;
  const bool sine_poly = (j & 2) == 0;  // which polynomial gives the sine
  const float z = x * x;
  float c = 2.443315711809948e-5f;
  c = std::fma(c, z, -1.388731625493765e-3f);
  c = std::fma(c, z, 4.166664568298827e-2f);
  c = c * z;
  c = std::fma(c, z, -(z * 0.5f));
  c = c + 1.0f;
  float s = -1.9515295891e-4f;
  s = std::fma(s, z, 8.3321608736e-3f);
  s = std::fma(s, z, -1.6666654611e-1f);
  s = s * z;
  s = std::fma(s, x, x);
  const float sin_part = sine_poly ? s : 0.0f;
  const float cos_part = sine_poly ? 0.0f : c;
  *sine = bits_float(float_bits(cos_part + sin_part) ^ sin_sign);
  *cosine = bits_float(float_bits((c - cos_part) + (s - sin_part)) ^ cos_sign);
}

// Box-Muller over 16 uniforms in place: element j and j + 8 become the pair from (d[j], d[j + 8]).
void normal16(float* d, float mean, float std) {
  for (int j = 0; j < 8; ++j) {
    const float radius = std::sqrt(-2.0f * cephes_logf(1.0f - d[j]));
    const auto theta = static_cast<float>(2.0 * M_PI) * d[j + 8];
    float s, c;
    cephes_sincosf(theta, &s, &c);
    d[j] = std::fma(radius * c, std, mean);
    d[j + 8] = std::fma(radius * s, std, mean);
  }
}
void normal16(double* d, double mean, double std) {
  for (int j = 0; j < 8; ++j) {
    const double radius = std::sqrt(-2.0 * std::log(1.0 - d[j]));
    const double theta = 2.0 * M_PI * d[j + 8];
    d[j] = std::fma(radius * std::cos(theta), std, mean);
    d[j + 8] = std::fma(radius * std::sin(theta), std, mean);
  }
}

// One scalar normal (PyTorch's normal_distribution<double>): a Box-Muller pair from two 53-bit
// uniforms gives the cosine value now and caches the sine value for the next call.
double scalar_normal(Generator& g, double mean, double std) {
  double value;
  if (auto& cached = g.next_double_normal(); cached) {
    value = *cached;
    cached.reset();
  } else {
    const double u1 = unit53(g);
    const double u2 = unit53(g);
    const double radius = std::sqrt(-2.0 * std::log1p(-u2));
    const double theta = 2.0 * M_PI * u1;
    g.next_double_normal() = radius * std::sin(theta);
    value = radius * std::cos(theta);
  }
  return std::fma(value, std, mean);
}

template <typename T>
void mt_normal_blocked(T* o, int64_t n, double mean, double std, Generator& g) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    // All uniforms first, then 16 at a time; a ragged tail redraws the last 16 and redoes them.
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, double>) {
        o[i] = unit53(g);
      } else {
        o[i] = unit24(g);
      }
    }
    for (int64_t i = 0; i + 16 <= n; i += 16) normal16(o + i, static_cast<T>(mean), static_cast<T>(std));
    if (n % 16 != 0) {
      T* tail = o + n - 16;
      for (int j = 0; j < 16; ++j) {
        if constexpr (std::is_same_v<T, double>) {
          tail[j] = unit53(g);
        } else {
          tail[j] = unit24(g);
        }
      }
      normal16(tail, static_cast<T>(mean), static_cast<T>(std));
    }
  } else {  // float16/bfloat16: blocks of 16 float uniforms through a buffer, then the tail
    float buf[16];
    auto block = [&](int64_t at) {
      for (float& v : buf) v = unit24(g);
      normal16(buf, static_cast<float>(mean), static_cast<float>(std));
      for (int j = 0; j < 16; ++j) o[at + j] = T(buf[j]);
    };
    for (int64_t i = 0; i + 16 <= n; i += 16) block(i);
    if (n % 16 != 0) block(n - 16);
  }
}

void mt19937_kernel(RandomKind kind, const Tensor& out, Generator& g, const Scalar& a, const Scalar& b,
                    const Tensor& probs) {
  const int64_t n = out.numel();
  const auto lock = g.lock();
  if (kind == RandomKind::Integer) {
    visit<kReal>(out.dtype(), "randint", [&](auto tag) {
      using T = typename decltype(tag)::type;
      T* o = out.data<T>();
      const int64_t base = a.to_int();
      const uint64_t range = static_cast<uint64_t>(b.to_int()) - static_cast<uint64_t>(base);
      const bool wide = range >= (uint64_t{1} << 28);  // PyTorch's cut to 64-bit draws
      for (int64_t i = 0; i < n; ++i) {
        const uint64_t draw = wide ? g.random64() : g.random();
        const auto value = static_cast<int64_t>(draw % range + static_cast<uint64_t>(base));
        if constexpr (std::is_integral_v<T>) {
          o[i] = static_cast<T>(value);
        } else {
          store(o + i, static_cast<double>(value));
        }
      }
    });
    return;
  }
  visit<kAllFloat>(out.dtype(), "random", [&](auto tag) {
    using T = typename decltype(tag)::type;
    T* o = out.data<T>();
    const double x = a.to_double();
    const double y = b.to_double();
    switch (kind) {
      case RandomKind::Uniform:
        if constexpr (std::is_same_v<T, double>) {
          for (int64_t i = 0; i < n; ++i) {
            const double v = std::fma(unit53(g), y - x, x);
            o[i] = v == y ? x : v;  // rounding up to `to` folds back to `from`
          }
        } else {
          const auto from = static_cast<float>(x), to = static_cast<float>(y);
          const T from_t = cast<T>(from), to_t = cast<T>(to);
          for (int64_t i = 0; i < n; ++i) {
            const T v = cast<T>(std::fma(unit24(g), to - from, from));
            o[i] = static_cast<float>(v) == static_cast<float>(to_t) ? from_t : v;
          }
        }
        break;
      case RandomKind::Normal: mt_normal_blocked(o, n, x, y, g); break;
      case RandomKind::NormalScalar:
        for (int64_t i = 0; i < n; ++i) store(o + i, scalar_normal(g, x, y));
        break;
      case RandomKind::Bernoulli: {
        if (!probs.defined()) {  // bernoulli_(p): one probability, passed as `a`
          for (int64_t i = 0; i < n; ++i) store(o + i, unit53(g) < x ? 1.0 : 0.0);
          break;
        }
        const double* p = probs.data<double>();
        for (int64_t i = 0; i < n; ++i) store(o + i, unit53(g) < p[i] ? 1.0 : 0.0);
        break;
      }
      case RandomKind::BernoulliFloat: {
        const double* p = probs.data<double>();
        for (int64_t i = 0; i < n; ++i) store(o + i, unit24(g) < static_cast<float>(p[i]) ? 1.0 : 0.0);
        break;
      }
      case RandomKind::Exponential:
        for (int64_t i = 0; i < n; ++i) store(o + i, -1.0 / x * std::log1p(-unit53(g)));
        break;
      case RandomKind::Integer: break;
    }
  });
}

void random_kernel(RandomKind kind, const Tensor& out, Generator& gen, const Scalar& a, const Scalar& b,
                   const Tensor& probs) {
  if (gen.kind() == GeneratorKind::MT19937) {
    mt19937_kernel(kind, out, gen, a, b, probs);
    return;
  }
  const PhiloxState state = gen.reserve(random_blocks(kind, out.dtype(), out.numel()));
  if (out.numel() > 0) philox_kernel(kind, out, state, a, b, probs);
}

EMBER_REGISTER_CPU_KERNEL(random_stub, &random_kernel);

}  // namespace
}  // namespace ember::EMBER_CPU_NS
