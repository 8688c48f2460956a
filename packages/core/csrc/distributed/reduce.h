#pragma once
// Element-wise reduction functions handed to Gloo's allreduce/reduce, one per (dtype, op).
// Gloo calls fn(out, a, b, n) with untyped pointers; these recover the element type.
#include <cmath>
#include <complex>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "ember/dtype.h"

namespace ember::distributed {

// Matches ember.distributed.ReduceOp's values (AVG is SUM plus a division, done in Python).
enum class ReduceOp : int { Sum = 0, Product = 1, Min = 2, Max = 3, Band = 4, Bor = 5, Bxor = 6 };

using ReduceFn = std::function<void(void*, const void*, const void*, size_t)>;

// Arithmetic happens in `Acc`: float for the 16- and 8-bit floats, the unsigned twin for signed
// integers (so that overflow wraps, as it does in PyTorch, instead of being undefined).
template <class T>
constexpr bool kNarrowFloat = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                              std::is_same_v<T, Float8_e4m3fn> || std::is_same_v<T, Float8_e5m2> ||
                              std::is_same_v<T, Float8_e4m3fnuz> || std::is_same_v<T, Float8_e5m2fnuz>;
template <class T>
struct Acc {
  using type = std::conditional_t<kNarrowFloat<T>, float, T>;
};
template <>
struct Acc<ComplexHalf> {
  using type = std::complex<float>;
};
template <>
struct Acc<int8_t> {
  using type = uint8_t;
};
template <>
struct Acc<int16_t> {
  using type = uint16_t;
};
template <>
struct Acc<int32_t> {
  using type = uint32_t;
};
template <>
struct Acc<int64_t> {
  using type = uint64_t;
};

template <class T, class F>
ReduceFn elementwise(F f) {
  using A = typename Acc<T>::type;
  return [f](void* out, const void* a, const void* b, size_t n) {
    auto* o = static_cast<T*>(out);
    auto* x = static_cast<const T*>(a);
    auto* y = static_cast<const T*>(b);
    for (size_t i = 0; i < n; ++i) o[i] = static_cast<T>(f(static_cast<A>(x[i]), static_cast<A>(y[i])));
  };
}

// MIN and MAX propagate NaN, as ember.minimum / ember.maximum do.
template <class A>
A nan_min(A x, A y) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(x) || std::isnan(y)) return x + y;
  }
  return y < x ? y : x;
}
template <class A>
A nan_max(A x, A y) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(x) || std::isnan(y)) return x + y;
  }
  return y > x ? y : x;
}

template <class T>
ReduceFn reduce_fn_for(ReduceOp op, const char* dtype) {
  using A = typename Acc<T>::type;
  constexpr bool kComplex = !std::is_arithmetic_v<A>;
  constexpr bool kBool = std::is_same_v<T, bool>;
  constexpr bool kInteger = std::is_integral_v<A>;
  // opaque bit patterns, and quantized integers whose meaning is in each tensor's quantizer:
  // no reduction means anything
  if constexpr (is_bits_v<T> || is_quantized_v<T>) {
  } else if constexpr (kBool) {  // bool reduces logically: SUM/MAX/BOR are "any", PRODUCT/MIN/BAND "all"
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Max:
      case ReduceOp::Bor: return elementwise<T>([](bool x, bool y) { return x || y; });
      case ReduceOp::Product:
      case ReduceOp::Min:
      case ReduceOp::Band: return elementwise<T>([](bool x, bool y) { return x && y; });
      case ReduceOp::Bxor: return elementwise<T>([](bool x, bool y) { return x != y; });
    }
  } else {
    switch (op) {
      case ReduceOp::Sum: return elementwise<T>([](A x, A y) { return static_cast<A>(x + y); });
      case ReduceOp::Product: return elementwise<T>([](A x, A y) { return static_cast<A>(x * y); });
      case ReduceOp::Min:
        if constexpr (!kComplex) return elementwise<T>([](A x, A y) { return nan_min(x, y); });
        break;
      case ReduceOp::Max:
        if constexpr (!kComplex) return elementwise<T>([](A x, A y) { return nan_max(x, y); });
        break;
      case ReduceOp::Band:
        if constexpr (kInteger) return elementwise<T>([](A x, A y) { return static_cast<A>(x & y); });
        break;
      case ReduceOp::Bor:
        if constexpr (kInteger) return elementwise<T>([](A x, A y) { return static_cast<A>(x | y); });
        break;
      case ReduceOp::Bxor:
        if constexpr (kInteger) return elementwise<T>([](A x, A y) { return static_cast<A>(x ^ y); });
        break;
    }
  }
  static const char* names[] = {"SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"};
  throw std::invalid_argument(std::string("ReduceOp.") + names[static_cast<int>(op)] +
                              " is not defined for " + dtype + " tensors");
}

// The reduction for a dtype named as in Python ("float32"), for one op.
inline ReduceFn reduce_fn(ReduceOp op, const std::string& dtype) {
#define EMBER_REDUCE_CASE(name, ctype, pyname, typestr) \
  if (dtype == pyname) return reduce_fn_for<ctype>(op, pyname);
  EMBER_FORALL_DTYPES(EMBER_REDUCE_CASE)
#undef EMBER_REDUCE_CASE
  throw std::invalid_argument("unknown dtype " + dtype);
}

}  // namespace ember::distributed
