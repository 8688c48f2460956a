// CPU kernels of the unary pointwise ops (interfaces in src/ops/kernels.h).
#include <cmath>
#include <complex>
#include <limits>

#include "backend/cpu/special_math.h"
#include "backend/cpu/vec_loops.h"
#include "backend/cpu/vec_math.h"
#include "loops.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

// Same-dtype map computed in acc_t<T>.
template <typename T, typename F>
void map(const Tensor& out, const Tensor& in, F f) {
  unary_loop<T, T>(out, in, [f](T x) { return static_cast<T>(f(static_cast<acc_t<T>>(x))); });
}

template <unsigned groups, typename F>
void floats(UnaryOp, const Tensor& out, const Tensor& in, const char* name, F f) {
  visit<groups>(in.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    map<T>(out, in, f);
  });
}

// The functions of vec_math.h: float32/float16/bfloat16 through its vectors, float64 through the
// C library (`sf`); complex inputs take the generic path (`complex_f`, std:: functions).
template <typename VF, typename SF>
void vectorized(const Tensor& out, const Tensor& in, const char* name, VF vf, SF sf) {
  visit<kAllFloat>(in.dtype(), name, [&](auto tag) {
    using T = typename decltype(tag)::type;
    vec_map<T, 1>({out, in}, vf, sf);
  });
}

template <typename A>
A lgamma_of(A x) {
  int sign;
  if constexpr (std::is_same_v<A, float>) {
    return lgammaf_r(x, &sign);
  } else {
    return lgamma_r(x, &sign);
  }
}

// erfinv in double (float inputs too: the tails need it). A rough closed-form start (Winitzki's
// approximation, ~2e-3 relative) refined by Halley steps on erf(x) = y, or on erfc(x) = 1 - y
// past |y| = 0.5, where 1 - y is exact and erf() would have lost the tail's digits.
double erfinv_double(double y) {
  if (std::isnan(y) || y < -1.0 || y > 1.0) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1.0 || y == -1.0) return std::copysign(std::numeric_limits<double>::infinity(), y);
  if (y == 0.0) return y;  // keeps -0.0
  const double a = std::fabs(y);
  constexpr double kPi = 3.14159265358979323846;
  constexpr double kW = 0.147;
  const double ln = std::log1p(-a * a);
  const double t = 2.0 / (kPi * kW) + ln / 2.0;
  double x = std::sqrt(std::sqrt(t * t - ln / kW) - t);
  const double two_over_sqrt_pi = 1.12837916709551257390;
  for (int i = 0; i < 4; ++i) {
    const double f = a <= 0.5 ? std::erf(x) - a : (1.0 - a) - std::erfc(x);
    const double u = f / (two_over_sqrt_pi * std::exp(-x * x));  // Newton step f / f'
    x -= u / (1.0 + x * u);                                      // Halley's correction (f'' = -2x f')
  }
  return std::copysign(x, y);
}

// digamma in double, PyTorch's special values: +-0 -> -+inf, negative integers -> nan.
// Reflection below 0.5, the recurrence psi(x) = psi(x + 1) - 1/x up to 10, then the asymptotic
// series ln x - 1/2x - sum B_2k / (2k x^2k).
double digamma_double(double x) {
  constexpr double kPi = 3.14159265358979323846;
  if (x == 0.0) return std::copysign(std::numeric_limits<double>::infinity(), -x);
  if (std::isnan(x) || x == -std::numeric_limits<double>::infinity())
    return std::numeric_limits<double>::quiet_NaN();
  if (x < 0.0 && x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
  if (x == std::numeric_limits<double>::infinity()) return x;
  double result = 0.0;
  if (x < 0.5) {  // psi(x) = psi(1 - x) - pi / tan(pi x)
    result = -kPi / std::tan(kPi * x);
    x = 1.0 - x;
  }
  while (x < 10.0) {
    result -= 1.0 / x;
    x += 1.0;
  }
  const double z = 1.0 / (x * x);
  // B_2k / 2k for k = 1..7
  const double series =
      z *
      (1.0 / 12 -
       z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return result + std::log(x) - 0.5 / x - series;
}

template <typename A>
A sign_of(A x) {
  if constexpr (std::is_same_v<A, bool>) {
    return x;
  } else if constexpr (std::is_unsigned_v<A>) {
    return x > 0 ? 1 : 0;
  } else {
    return x > 0 ? A(1) : (x < 0 ? A(-1) : (x == x ? A(0) : x));
  }
}

template <typename A>
A round_half_even(A x) {
  if constexpr (std::is_integral_v<A>) {
    return x;
  } else {
    return std::nearbyint(x);
  }
}

// |z| of complex64 in double: the squares of float parts are exact in double and their sum can
// neither overflow nor underflow, so one sqrt and one rounding to float land within 0.5 ulp (plus
// 2^-29 ulp) of the true modulus, without hypot's scaling (a plain loop the compiler vectorizes).
inline float abs_c64(float re, float im) {
  const double r = std::sqrt(static_cast<double>(re) * re + static_cast<double>(im) * im);
  return std::isinf(re) || std::isinf(im) ? std::numeric_limits<float>::infinity() : static_cast<float>(r);
}

void abs_complex64(const Tensor& out, const Tensor& in) {
  StridedLoop<2>({out, in}).run([](char** p, const int64_t* s, int64_t n) {
    float* o = reinterpret_cast<float*>(p[0]);
    const float* z = reinterpret_cast<const float*>(p[1]);
    if (s[0] == sizeof(float) && s[1] == 2 * sizeof(float)) {
      for (int64_t i = 0; i < n; ++i) o[i] = abs_c64(z[2 * i], z[2 * i + 1]);
    } else {
      const int64_t so = s[0] / static_cast<int64_t>(sizeof(float)),
                    si = s[1] / static_cast<int64_t>(sizeof(float));
      for (int64_t i = 0; i < n; ++i) o[i * so] = abs_c64(z[i * si], z[i * si + 1]);
    }
  });
}

void unary_kernel(UnaryOp op, const Tensor& out, const Tensor& in) {
  // A float op `expr` of x, for complex inputs too when the op takes them (std:: functions).
#define EMBER_FLOAT(OP, expr) \
  case UnaryOp::OP:           \
    return floats<with_complex(kAllFloat, UnaryOp::OP)>(op, out, in, #OP, [](auto x) { return expr; });
  // A function with a vectorized real form (vec_math.h); complex inputs keep the std:: form.
#define EMBER_FLOAT_VEC(OP, fn)                                                               \
  case UnaryOp::OP:                                                                           \
    if (::ember::is_complex(in.dtype()))                                                      \
      return floats<with_complex(kAllFloat, UnaryOp::OP)>(op, out, in, #OP,                   \
                                                          [](auto x) { return std::fn(x); }); \
    return vectorized(                                                                        \
        out, in, #OP, [](vmath::VF v) { return vmath::fn(v); }, [](double x) { return std::fn(x); });
  switch (op) {
    EMBER_FLOAT_VEC(Exp, exp)
    EMBER_FLOAT(Exp2, std::exp2(x))
    EMBER_FLOAT_VEC(Expm1, expm1)
    EMBER_FLOAT_VEC(Log, log)
    EMBER_FLOAT(Log2, std::log2(x))
    EMBER_FLOAT(Log10, std::log10(x))
    EMBER_FLOAT_VEC(Log1p, log1p)
    EMBER_FLOAT(Sqrt, std::sqrt(x))
    EMBER_FLOAT(Rsqrt, decltype(x)(1) / std::sqrt(x))
    EMBER_FLOAT(Reciprocal, decltype(x)(1) / x)
    EMBER_FLOAT_VEC(Sin, sin)
    EMBER_FLOAT_VEC(Cos, cos)
    EMBER_FLOAT(Tan, std::tan(x))
    EMBER_FLOAT(Asin, std::asin(x))
    EMBER_FLOAT(Acos, std::acos(x))
    EMBER_FLOAT(Atan, std::atan(x))
    EMBER_FLOAT(Sinh, std::sinh(x))
    EMBER_FLOAT(Cosh, std::cosh(x))
    EMBER_FLOAT_VEC(Tanh, tanh)
    EMBER_FLOAT(Asinh, std::asinh(x))
    EMBER_FLOAT(Acosh, std::acosh(x))
    EMBER_FLOAT(Atanh, std::atanh(x))
    case UnaryOp::Sigmoid:
      return vectorized(
          out, in, "sigmoid", [](vmath::VF v) { return vmath::sigmoid(v); },
          [](double x) { return x < 0 ? std::exp(x) / (1.0 + std::exp(x)) : 1.0 / (1.0 + std::exp(-x)); });
      EMBER_FLOAT_VEC(Erf, erf)
      EMBER_FLOAT_VEC(Erfc, erfc)
      EMBER_FLOAT(Lgamma, lgamma_of(x))
      EMBER_FLOAT(Erfinv, static_cast<decltype(x)>(erfinv_double(x)))
      EMBER_FLOAT(Digamma, static_cast<decltype(x)>(digamma_double(x)))
      EMBER_FLOAT(Frac, x - std::trunc(x))
      // ember.special: evaluated in double (special_math.cpp, Note [special functions])
#define EMBER_SPECIAL(OP, fn) \
  EMBER_FLOAT(OP, static_cast<decltype(x)>(special_math::fn(static_cast<double>(x))))
      EMBER_SPECIAL(SpecialEntr, entr)
      EMBER_SPECIAL(SpecialErfcx, erfcx)
      EMBER_SPECIAL(SpecialNdtr, ndtr)
      EMBER_SPECIAL(SpecialNdtri, ndtri)
      EMBER_SPECIAL(SpecialLogNdtr, log_ndtr)
      EMBER_SPECIAL(SpecialBesselJ0, bessel_j0)
      EMBER_SPECIAL(SpecialBesselJ1, bessel_j1)
      EMBER_SPECIAL(SpecialBesselY0, bessel_y0)
      EMBER_SPECIAL(SpecialBesselY1, bessel_y1)
      EMBER_SPECIAL(SpecialModifiedBesselI0, modified_bessel_i0)
      EMBER_SPECIAL(SpecialModifiedBesselI1, modified_bessel_i1)
      EMBER_SPECIAL(SpecialModifiedBesselK0, modified_bessel_k0)
      EMBER_SPECIAL(SpecialModifiedBesselK1, modified_bessel_k1)
      EMBER_SPECIAL(SpecialScaledModifiedBesselK0, scaled_modified_bessel_k0)
      EMBER_SPECIAL(SpecialScaledModifiedBesselK1, scaled_modified_bessel_k1)
      EMBER_SPECIAL(SpecialSphericalBesselJ0, spherical_bessel_j0)
      EMBER_SPECIAL(SpecialAiryAi, airy_ai)
#undef EMBER_SPECIAL
#undef EMBER_FLOAT
#undef EMBER_FLOAT_VEC
    case UnaryOp::Neg:
      return visit<(with_complex(kReal, UnaryOp::Neg) | kComplexHalf)>(in.dtype(), "neg", [&](auto tag) {
        using T = typename decltype(tag)::type;
        map<T>(out, in, [](auto x) { return wrap_neg(x); });
      });
    case UnaryOp::Sign:
      return visit<with_complex(kReal | kBool, UnaryOp::Sign)>(in.dtype(), "sign", [&](auto tag) {
        using T = typename decltype(tag)::type;
        map<T>(out, in, [](auto x) { return sign_of(x); });
      });
    case UnaryOp::Relu:
      return visit<with_complex(kReal, UnaryOp::Relu)>(in.dtype(), "relu", [&](auto tag) {
        using T = typename decltype(tag)::type;
        map<T>(out, in, [](auto x) { return x < 0 ? decltype(x)(0) : x; });
      });
    case UnaryOp::Floor:
    case UnaryOp::Ceil:
    case UnaryOp::Trunc:
    case UnaryOp::Round:
      return visit < kReal |
             kBool > (in.dtype(), "round", [&](auto tag) {
               using T = typename decltype(tag)::type;
               if constexpr (std::is_integral_v<T>) {
                 unary_loop<T, T>(out, in, [](T x) { return x; });  // integers are already whole
               } else if (op == UnaryOp::Floor) {
                 map<T>(out, in, [](auto x) { return std::floor(x); });
               } else if (op == UnaryOp::Ceil) {
                 map<T>(out, in, [](auto x) { return std::ceil(x); });
               } else if (op == UnaryOp::Trunc) {
                 map<T>(out, in, [](auto x) { return std::trunc(x); });
               } else {
                 map<T>(out, in, [](auto x) { return round_half_even(x); });
               }
             });
    case UnaryOp::BitwiseNot:
      return visit < kInts | kBool > (in.dtype(), "bitwise_not", [&](auto tag) {
                               using T = typename decltype(tag)::type;
                               if constexpr (std::is_same_v<T, bool>) {
                                 unary_loop<T, T>(out, in, [](T x) { return !x; });
                               } else {
                                 unary_loop<T, T>(out, in, [](T x) { return static_cast<T>(~x); });
                               }
                             });
    case UnaryOp::Abs:  // complex input writes its real-typed magnitude
      return visit<(with_complex(kReal | kBool, UnaryOp::Abs) | kComplexHalf)>(
          in.dtype(), "abs", [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (std::is_same_v<T, std::complex<float>>) {
              abs_complex64(out, in);
            } else if constexpr (std::is_same_v<T, ComplexHalf>) {  // in complex64, as PyTorch does
              unary_loop<Half, T>(out, in, [](T x) { return Half(std::abs(std::complex<float>(x))); });
            } else if constexpr (is_complex_v<T>) {
              unary_loop<typename T::value_type, T>(out, in, [](T x) { return std::abs(x); });
            } else if constexpr (std::is_same_v<T, bool> || std::is_unsigned_v<T>) {
              unary_loop<T, T>(out, in, [](T x) { return x; });
            } else {
              map<T>(out, in, [](auto x) { return x < 0 ? wrap_neg(x) : (x == 0 ? decltype(x)(0) : x); });
            }
          });
    case UnaryOp::LogicalNot:
    case UnaryOp::Isnan:
    case UnaryOp::Isinf:
    case UnaryOp::Isfinite:
      return visit<(with_complex(kBool | kReal, UnaryOp::LogicalNot, UnaryOp::Isnan, UnaryOp::Isinf,
                                 UnaryOp::Isfinite) |
                    kComplexHalf)>(in.dtype(), "predicate", [&](auto tag) {
        using T = typename decltype(tag)::type;
        unary_loop<bool, T>(out, in, [op](T v) -> bool {
          if (op == UnaryOp::LogicalNot) return static_cast<acc_t<T>>(v) == acc_t<T>(0);
          if constexpr (is_complex_v<T>) {
            const bool nan = std::isnan(v.real()) || std::isnan(v.imag());
            const bool inf = std::isinf(v.real()) || std::isinf(v.imag());
            return op == UnaryOp::Isnan ? nan : op == UnaryOp::Isinf ? inf : !(nan || inf);
          } else if constexpr (std::is_integral_v<T>) {
            return op == UnaryOp::Isfinite;
          } else {
            const auto x = static_cast<acc_t<T>>(v);
            return op == UnaryOp::Isnan   ? std::isnan(x)
                   : op == UnaryOp::Isinf ? std::isinf(x)
                                          : std::isfinite(x);
          }
        });
      });
  }
  // Each listed op returns from its case above. One declared in declarations.py without its
  // kernel line here lands below (and -Wswitch warns when this file is compiled).
  throw NotImplementedError(std::string("[") + pointwise_facts(op).name + "] has no CPU kernel");
}

EMBER_REGISTER_CPU_KERNEL(unary_stub, &unary_kernel);

}  // namespace
}  // namespace ember::EMBER_CPU_NS
