// CPU kernels of the binary pointwise ops, where and clamp (interfaces in src/ops/kernels.h).
#include <cmath>
#include <limits>

#include "backend/cpu/special_math.h"
#include "loops.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <typename A>
A div_floor(A a, A b) {  // Python's a // b (PyTorch's div_floor_floating for floats)
  if constexpr (std::is_integral_v<A>) {
    if constexpr (std::is_signed_v<A>) {
      if (b == -1) return static_cast<A>(0 - static_cast<std::make_unsigned_t<A>>(a));  // no INT_MIN/-1 trap
      const A q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? A(q - 1) : q;
    } else {
      return a / b;
    }
  } else {
    if (b == 0) return a / b;
    const A mod = std::fmod(a, b);
    A div = (a - mod) / b;
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div == 0) return std::copysign(A(0), a / b);
    A floor_div = std::floor(div);
    if (div - floor_div > A(0.5)) floor_div += 1;
    return floor_div;
  }
}

template <typename A>
A div_trunc(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    if constexpr (std::is_signed_v<A>) {
      if (b == -1) return static_cast<A>(0 - static_cast<std::make_unsigned_t<A>>(a));
    }
    return a / b;
  } else {
    return std::trunc(a / b);
  }
}

template <typename A>
A remainder_of(A a, A b) {  // sign follows the divisor, as Python's %
  if constexpr (std::is_integral_v<A>) {
    if constexpr (std::is_signed_v<A>) {
      if (b == -1) return 0;
      const A r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? A(r + b) : r;
    } else {
      return a % b;
    }
  } else {
    A r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}

template <typename A>
A fmod_of(A a, A b) {
  if constexpr (std::is_integral_v<A>) {
    if constexpr (std::is_signed_v<A>) {
      if (b == -1) return 0;
    }
    return a % b;
  } else {
    return std::fmod(a, b);
  }
}

template <typename A>
A int_pow(A base, A exp) {
  if constexpr (std::is_signed_v<A>) {
    if (exp < 0) {  // PyTorch's integer results for negative exponents
      if (base == 1) return 1;
      if (base == -1) return (exp & 1) ? A(-1) : A(1);
      return 0;
    }
  }
  using U = std::make_unsigned_t<A>;  // wraps like PyTorch's overflowing integer pow, without UB
  U result = 1;
  U b = static_cast<U>(base);
  for (auto e = static_cast<U>(exp); e; e >>= 1) {
    if (e & 1) result = static_cast<U>(result * b);
    b = static_cast<U>(b * b);
  }
  return static_cast<A>(result);
}

template <typename A>
A max_propagate_nan(A a, A b) {
  if constexpr (!std::is_integral_v<A>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a > b ? a : b;
}
template <typename A>
A min_propagate_nan(A a, A b) {
  if constexpr (!std::is_integral_v<A>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? a : b;
}

// Whether every element of b (a scalar broadcast to the output's shape) equals v.
template <typename T>
bool is_constant(const Tensor& b, double v) {
  for (int64_t d = 0; d < b.dim(); ++d) {
    if (b.sizes()[d] != 1 && b.strides()[d] != 0) return false;
  }
  return b.numel() > 0 && static_cast<double>(static_cast<acc_t<T>>(*b.data<T>())) == v;
}

void check_no_zero_divisor(const Tensor& b, const char* op) {
  bool zero = false;
  visit<kInts | kBool>(b.dtype(), op, [&](auto tag) {
    using T = typename decltype(tag)::type;
    Tensor scratch = empty(b.sizes(), DType::Bool);
    unary_loop<bool, T>(scratch, b, [](T v) { return v == T(0); });
    const bool* p = scratch.data<bool>();
    for (int64_t i = 0; i < scratch.numel() && !zero; ++i) zero = p[i];
  });
  EMBER_CHECK(!zero, Error, "[", op, "] ZeroDivisionError: integer division by zero");
}

template <typename T, typename F>
void arith(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  binary_loop<T, T>(out, a, b, [f](T x, T y) {
    return static_cast<T>(f(static_cast<acc_t<T>>(x), static_cast<acc_t<T>>(y)));
  });
}

template <typename T, typename F>
void predicate(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
  binary_loop<bool, T>(out, a, b,
                       [f](T x, T y) { return f(static_cast<acc_t<T>>(x), static_cast<acc_t<T>>(y)); });
}

void binary_kernel(BinaryOp op, const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha) {
  const DType d = a.dtype();
  const bool integral = is_integral(d, true);
  if (integral && (op == BinaryOp::DivTrunc || op == BinaryOp::DivFloor || op == BinaryOp::Remainder ||
                   op == BinaryOp::Fmod)) {
    check_no_zero_divisor(b, "div");
  }
  switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
      return visit<(with_complex(kBool | kReal, BinaryOp::Add, BinaryOp::Sub) | kComplexHalf)>(
          d, "add", [&](auto tag) {
            using T = typename decltype(tag)::type;
            using A = acc_t<T>;
            if constexpr (std::is_same_v<T, bool>) {
              const bool s = alpha.to_bool();
              arith<T>(out, a, b, [s](bool x, bool y) { return x || (s && y); });
            } else {
              A s;
              if constexpr (is_complex_v<A>) {
                s = A(alpha.to_complex());
              } else if constexpr (std::is_integral_v<A>) {
                s = static_cast<A>(alpha.to_int());
              } else {
                s = static_cast<A>(alpha.to_double());
              }
              if (op == BinaryOp::Sub) s = wrap_neg(s);
              if (s == A(1)) {
                arith<T>(out, a, b, [](A x, A y) { return wrap_add(x, y); });
              } else if constexpr (std::is_same_v<T, ComplexHalf>) {
                // PyTorch rounds alpha * y to complex32 before adding (bit-equal on 100,000 pairs)
                arith<T>(out, a, b, [s](A x, A y) { return x + A(T(s * y)); });
              } else {
                arith<T>(out, a, b, [s](A x, A y) { return wrap_add(x, wrap_mul(s, y)); });
              }
            }
          });
    case BinaryOp::Mul:
      return visit<(with_complex(kBool | kReal, BinaryOp::Mul) | kComplexHalf)>(d, "mul", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) {
          arith<T>(out, a, b, [](bool x, bool y) { return x && y; });
        } else {
          arith<T>(out, a, b, [](auto x, auto y) { return wrap_mul(x, y); });
        }
      });
    case BinaryOp::Div:
      return visit<with_complex(kAllFloat, BinaryOp::Div)>(d, "div", [&](auto tag) {
        using T = typename decltype(tag)::type;
        arith<T>(out, a, b, [](auto x, auto y) { return x / y; });
      });
#define EMBER_REAL_BINARY(OP, groups, expr)                                  \
  case BinaryOp::OP:                                                         \
    return visit<with_complex(groups, BinaryOp::OP)>(d, #OP, [&](auto tag) { \
      using T = typename decltype(tag)::type;                                \
      arith<T>(out, a, b, [](auto x, auto y) { return expr; });              \
    });
      EMBER_REAL_BINARY(DivTrunc, kReal, div_trunc(x, y))
      EMBER_REAL_BINARY(DivFloor, kReal, div_floor(x, y))
      EMBER_REAL_BINARY(Remainder, kReal, remainder_of(x, y))
      EMBER_REAL_BINARY(Fmod, kReal, fmod_of(x, y))
      EMBER_REAL_BINARY(Atan2, kAllFloat, std::atan2(x, y))
      EMBER_REAL_BINARY(Hypot, kAllFloat, std::hypot(x, y))
      EMBER_REAL_BINARY(Maximum, kReal | kBool, max_propagate_nan(x, y))
      EMBER_REAL_BINARY(Minimum, kReal | kBool, min_propagate_nan(x, y))
      EMBER_REAL_BINARY(Fmax, kReal | kBool, (x != x ? y : (y != y ? x : (x > y ? x : y))))
      EMBER_REAL_BINARY(Fmin, kReal | kBool, (x != x ? y : (y != y ? x : (x < y ? x : y))))
      // ember.special: evaluated in double (special_math.cpp, Note [special functions])
#define EMBER_SPECIAL_BINARY(OP, fn) \
  EMBER_REAL_BINARY(                 \
      OP, kAllFloat,                 \
      static_cast<decltype(x)>(special_math::fn(static_cast<double>(x), static_cast<double>(y))))
      EMBER_SPECIAL_BINARY(SpecialXlog1py, xlog1py)
      EMBER_SPECIAL_BINARY(SpecialZeta, zeta)
      EMBER_SPECIAL_BINARY(SpecialChebyshevPolynomialT, chebyshev_polynomial_t)
      EMBER_SPECIAL_BINARY(SpecialChebyshevPolynomialU, chebyshev_polynomial_u)
      EMBER_SPECIAL_BINARY(SpecialChebyshevPolynomialV, chebyshev_polynomial_v)
      EMBER_SPECIAL_BINARY(SpecialChebyshevPolynomialW, chebyshev_polynomial_w)
      EMBER_SPECIAL_BINARY(SpecialShiftedChebyshevPolynomialT, shifted_chebyshev_polynomial_t)
      EMBER_SPECIAL_BINARY(SpecialShiftedChebyshevPolynomialU, shifted_chebyshev_polynomial_u)
      EMBER_SPECIAL_BINARY(SpecialShiftedChebyshevPolynomialV, shifted_chebyshev_polynomial_v)
      EMBER_SPECIAL_BINARY(SpecialShiftedChebyshevPolynomialW, shifted_chebyshev_polynomial_w)
      EMBER_SPECIAL_BINARY(SpecialHermitePolynomialH, hermite_polynomial_h)
      EMBER_SPECIAL_BINARY(SpecialHermitePolynomialHe, hermite_polynomial_he)
      EMBER_SPECIAL_BINARY(SpecialLaguerrePolynomialL, laguerre_polynomial_l)
      EMBER_SPECIAL_BINARY(SpecialLegendrePolynomialP, legendre_polynomial_p)
#undef EMBER_SPECIAL_BINARY
#undef EMBER_REAL_BINARY
    case BinaryOp::Pow:
      return visit<with_complex(kReal, BinaryOp::Pow)>(d, "pow", [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_integral_v<T>) {
          arith<T>(out, a, b, [](T x, T y) { return int_pow(x, y); });
        } else if (is_constant<T>(b, 2.0)) {
          // x ** 2, the commonest power: x * x is the correctly rounded square, as pow's is,
          // without pow's cost per element.
          arith<T>(out, a, b, [](auto x, auto) { return x * x; });
        } else {
          arith<T>(out, a, b, [](auto x, auto y) { return std::pow(x, y); });
        }
      });
    case BinaryOp::BitwiseAnd:
    case BinaryOp::BitwiseOr:
    case BinaryOp::BitwiseXor:
      return visit < kInts | kBool > (d, "bitwise", [&](auto tag) {
                               using T = typename decltype(tag)::type;
                               if (op == BinaryOp::BitwiseAnd)
                                 arith<T>(out, a, b, [](T x, T y) { return static_cast<T>(x & y); });
                               if (op == BinaryOp::BitwiseOr)
                                 arith<T>(out, a, b, [](T x, T y) { return static_cast<T>(x | y); });
                               if (op == BinaryOp::BitwiseXor)
                                 arith<T>(out, a, b, [](T x, T y) { return static_cast<T>(x ^ y); });
                             });
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr:
    case BinaryOp::LogicalXor:
    case BinaryOp::Eq:
    case BinaryOp::Ne:
      return visit<(with_complex(kBool | kReal, BinaryOp::LogicalAnd, BinaryOp::LogicalOr,
                                 BinaryOp::LogicalXor, BinaryOp::Eq, BinaryOp::Ne) |
                    kComplexHalf)>(d, "compare", [&](auto tag) {
        using T = typename decltype(tag)::type;
        using A = acc_t<T>;
        const A zero = A(0);
        switch (op) {
          case BinaryOp::LogicalAnd:
            return predicate<T>(out, a, b, [zero](A x, A y) { return x != zero && y != zero; });
          case BinaryOp::LogicalOr:
            return predicate<T>(out, a, b, [zero](A x, A y) { return x != zero || y != zero; });
          case BinaryOp::LogicalXor:
            return predicate<T>(out, a, b, [zero](A x, A y) { return (x != zero) != (y != zero); });
          case BinaryOp::Eq: return predicate<T>(out, a, b, [](A x, A y) { return x == y; });
          default: return predicate<T>(out, a, b, [](A x, A y) { return x != y; });
        }
      });
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
      return visit<with_complex(kReal | kBool, BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge)>(
          d, "compare", [&](auto tag) {
            using T = typename decltype(tag)::type;
            using A = acc_t<T>;
            if (op == BinaryOp::Lt) predicate<T>(out, a, b, [](A x, A y) { return x < y; });
            if (op == BinaryOp::Le) predicate<T>(out, a, b, [](A x, A y) { return x <= y; });
            if (op == BinaryOp::Gt) predicate<T>(out, a, b, [](A x, A y) { return x > y; });
            if (op == BinaryOp::Ge) predicate<T>(out, a, b, [](A x, A y) { return x >= y; });
          });
  }
  // Each listed op returns from its case above. One declared in declarations.py without its
  // kernel line here lands below (and -Wswitch warns when this file is compiled).
  throw NotImplementedError(std::string("[") + pointwise_facts(op).name + "] has no CPU kernel");
}

void where_kernel(const Tensor& out, const Tensor& cond, const Tensor& a, const Tensor& b) {
  visit<kAll | kComplexHalf>(out.dtype(), "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    // Selects without a branch (a data-dependent branch mispredicts on random masks); the
    // contiguous runs with a tensor or a broadcast scalar on either side vectorize.
    StridedLoop<4>({out, cond, a, b}).run([](char** p, const int64_t* s, int64_t n) {
      constexpr int64_t E = sizeof(T);
      T* o = reinterpret_cast<T*>(p[0]);
      const uint8_t* c = reinterpret_cast<const uint8_t*>(p[1]);
      const T* x = reinterpret_cast<const T*>(p[2]);
      const T* y = reinterpret_cast<const T*>(p[3]);
      if (s[0] == E && s[1] == 1 && s[2] == E && s[3] == E) {
        for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? x[i] : y[i];
      } else if (s[0] == E && s[1] == 1 && s[2] == E && s[3] == 0) {
        const T yv = *y;
        for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? x[i] : yv;
      } else if (s[0] == E && s[1] == 1 && s[2] == 0 && s[3] == E) {
        const T xv = *x;
        for (int64_t i = 0; i < n; ++i) o[i] = c[i] ? xv : y[i];
      } else {
        for (int64_t i = 0; i < n; ++i) {
          const T pair[2] = {*reinterpret_cast<const T*>(p[3] + i * s[3]),
                             *reinterpret_cast<const T*>(p[2] + i * s[2])};
          *reinterpret_cast<T*>(p[0] + i * s[0]) = pair[c[i * s[1]] != 0];
        }
      }
    });
  });
}

void clamp_kernel(const Tensor& out, const Tensor& in, const Scalar* lo, const Scalar* hi) {
  visit<kReal>(out.dtype(), "clamp", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    auto bound = [](const Scalar* s, A fallback) -> A {
      if (s == nullptr) return fallback;
      if constexpr (std::is_integral_v<A>) {
        return static_cast<A>(s->to_int());
      } else {
        return static_cast<A>(s->to_double());
      }
    };
    const A l = bound(lo, std::numeric_limits<A>::lowest());
    const A h = bound(hi, std::numeric_limits<A>::max());
    // PyTorch: min(max(x, lo), hi) with NaN propagated (also a NaN bound).
    unary_loop<T, T>(out, in, [l, h](T v) {
      const A x = static_cast<A>(v);
      if constexpr (!std::is_integral_v<A>) {
        if (x != x || l != l || h != h) return static_cast<T>(x != x ? x : (l != l ? l : h));
      }
      const A y = x < l ? l : x;
      return static_cast<T>(y > h ? h : y);
    });
  });
}

EMBER_REGISTER_CPU_KERNEL(binary_stub, &binary_kernel);
EMBER_REGISTER_CPU_KERNEL(where_stub, &where_kernel);
EMBER_REGISTER_CPU_KERNEL(clamp_stub, &clamp_kernel);

}  // namespace
}  // namespace ember::EMBER_CPU_NS
