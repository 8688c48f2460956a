#pragma once
// Helpers shared by the CPU kernel files (internal). Each kernel file is compiled once per CPU
// capability (Note [CPU capabilities]); everything here lives in that build's namespace so the
// AVX2 and baseline copies never merge.
#include <cmath>
#include <complex>
#include <cstdint>
#include <type_traits>

#include "ember/error.h"
#include "ember/scalar_types.h"
#include "ember/tensor.h"

#ifndef EMBER_CPU_CAPABILITY
#define EMBER_CPU_CAPABILITY Default
#define EMBER_CPU_NS cpu_default
#endif

// Note [prefetch helpers]: GCC counts __builtin_prefetch as free of side effects, so a function
// or lambda that does nothing but prefetch is inferred `const`, and a call to it that is not
// inlined is deleted as dead code: the TBE backward's row prefetches were all gone that way, and
// its updates waited on memory for every row. So every prefetch helper is always inlined into the
// loop that needs it.
#define EMBER_ALWAYS_INLINE __attribute__((always_inline))

namespace ember::EMBER_CPU_NS {

// Asks for every cache line of [p, p + bytes) (Note [prefetch helpers]), counted from p's own line:
// a row that does not start on a line (a NumPy array's data, rows of 100 floats) spans one line
// more than bytes / 64, and that last line would otherwise be waited for on every row. kForWrite
// passes the write hint (prefetchw where the build's target has it, else a plain prefetch).
template <bool kForWrite = false>
EMBER_ALWAYS_INLINE inline void prefetch_lines(const void* p, int64_t bytes) {
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t end = start + static_cast<uintptr_t>(bytes > 0 ? bytes : 0);
  for (uintptr_t a = start & ~uintptr_t(63); a < end; a += 64)
    __builtin_prefetch(reinterpret_cast<const char*>(a), kForWrite ? 1 : 0, 3);
}

template <typename T>
struct is_complex : std::false_type {};
template <typename T>
struct is_complex<std::complex<T>> : std::true_type {};
template <>
struct is_complex<ComplexHalf> : std::true_type {};
template <typename T>
constexpr bool is_complex_v = is_complex<T>::value;

// The complex conjugate, or the value itself for a real type (the linear-algebra kernels' adjoints).
template <typename T>
T conj_value(T v) {
  if constexpr (is_complex_v<T>) {
    return std::conj(v);
  } else {
    return v;
  }
}

template <typename T>
constexpr bool is_reduced_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// The type arithmetic happens in: float for the 16-bit floats, complex<float> for complex32 (as
// PyTorch computes it), the type itself otherwise.
template <typename T>
using acc_t = std::conditional_t<is_reduced_v<T>, float,
                                 std::conditional_t<std::is_same_v<T, ComplexHalf>, std::complex<float>, T>>;

// Note [integer wraparound]: signed overflow is undefined in C++, but PyTorch's (and NumPy's)
// integer arithmetic wraps. Integer kernels add, subtract, multiply and negate through the
// unsigned type, which wraps by definition, so results match and sanitizers stay quiet.
template <typename A>
A wrap_add(A a, A b) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return a + b;
  }
}
template <typename A>
A wrap_mul(A a, A b) {
  if constexpr (std::is_same_v<A, bool>) {
    return a && b;
  } else if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return a * b;
  }
}
template <typename A>
A wrap_neg(A a) {
  if constexpr (std::is_integral_v<A> && std::is_signed_v<A>) {
    using U = std::make_unsigned_t<A>;
    return static_cast<A>(static_cast<U>(U(0) - static_cast<U>(a)));
  } else {
    return -a;
  }
}

template <typename T>
struct Tag {
  using type = T;
};

// Calls f(Tag<T>{}) for the C++ type of `d` among the listed groups; TypeError otherwise.
// kFloat8: the float8 formats, which hold values but have no arithmetic (fill and copy only).
// kComplexHalf: complex32, in the kernels PyTorch's CPU build has for it (fill, add/sub/mul,
// neg, abs, comparisons, where, gather/scatter, indexing).
enum Groups : unsigned {
  kBool = 1,
  kInts = 2,
  kFloats = 4,
  kComplex = 8,
  kReduced = 16,
  kFloat8 = 32,
  kComplexHalf = 64,
  kBits = 128  // the bits dtypes: zero-filled and copied only
};

template <unsigned groups, typename F>
void visit(DType d, const char* op, F&& f) {
  switch (d) {
    case DType::Bool:
      if constexpr (groups & kBool) return f(Tag<bool>{});
      break;
    case DType::UInt8:
      if constexpr (groups & kInts) return f(Tag<uint8_t>{});
      break;
    case DType::Int8:
      if constexpr (groups & kInts) return f(Tag<int8_t>{});
      break;
    case DType::Int16:
      if constexpr (groups & kInts) return f(Tag<int16_t>{});
      break;
    case DType::Int32:
      if constexpr (groups & kInts) return f(Tag<int32_t>{});
      break;
    case DType::Int64:
      if constexpr (groups & kInts) return f(Tag<int64_t>{});
      break;
    case DType::Float32:
      if constexpr (groups & kFloats) return f(Tag<float>{});
      break;
    case DType::Float64:
      if constexpr (groups & kFloats) return f(Tag<double>{});
      break;
    case DType::Float16:
      if constexpr (groups & kReduced) return f(Tag<Half>{});
      break;
    case DType::BFloat16:
      if constexpr (groups & kReduced) return f(Tag<BFloat16>{});
      break;
    case DType::Complex64:
      if constexpr (groups & kComplex) return f(Tag<std::complex<float>>{});
      break;
    case DType::Complex128:
      if constexpr (groups & kComplex) return f(Tag<std::complex<double>>{});
      break;
    case DType::Float8_e4m3fn:
      if constexpr (groups & kFloat8) return f(Tag<Float8_e4m3fn>{});
      break;
    case DType::Float8_e5m2:
      if constexpr (groups & kFloat8) return f(Tag<Float8_e5m2>{});
      break;
    case DType::Float8_e4m3fnuz:
      if constexpr (groups & kFloat8) return f(Tag<Float8_e4m3fnuz>{});
      break;
    case DType::Float8_e5m2fnuz:
      if constexpr (groups & kFloat8) return f(Tag<Float8_e5m2fnuz>{});
      break;
    case DType::Complex32:
      if constexpr (groups & kComplexHalf) return f(Tag<ComplexHalf>{});
      break;
    case DType::Bits8:
      if constexpr (groups & kBits) return f(Tag<Bits8>{});
      break;
    case DType::Bits16:
      if constexpr (groups & kBits) return f(Tag<Bits16>{});
      break;
    case DType::Bits1x8:
      if constexpr (groups & kBits) return f(Tag<Bits1x8>{});
      break;
    case DType::Bits2x4:
      if constexpr (groups & kBits) return f(Tag<Bits2x4>{});
      break;
    case DType::Bits4x2:
      if constexpr (groups & kBits) return f(Tag<Bits4x2>{});
      break;
    default: break;
  }
  throw NotImplementedError(std::string("[") + op + "] not implemented for dtype " + dtype_name(d));
}

constexpr unsigned kReal = kInts | kFloats | kReduced;
constexpr unsigned kAllFloat = kFloats | kReduced;
constexpr unsigned kAll = kBool | kInts | kFloats | kReduced | kComplex;

// `groups` plus the complex dtypes when one of the pointwise `ops` takes them (its declaration's
// complex=, pointwise_facts in src/ops/kernels.h): a kernel accepts what its entry point passes.
template <typename... Ops>
constexpr unsigned with_complex(unsigned groups, Ops... ops) {
  return (pointwise_facts(ops).complex_ok || ...) ? (groups | kComplex) : groups;
}

}  // namespace ember::EMBER_CPU_NS
