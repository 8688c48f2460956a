#pragma once
// Storage types for the reduced-precision dtypes. Arithmetic happens in float; these only
// hold bits and convert with round-to-nearest-even, as PyTorch's c10 types do.
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>

namespace ember {

namespace detail {
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint16_t float_to_half_bits(float value) {
  uint32_t x = float_bits(value);
  const uint32_t sign = x & 0x80000000u;
  x ^= sign;
  uint16_t out;
  if (x >= (127u + 16u) << 23) {  // |value| >= 65536, inf or nan
    out = x > (255u << 23) ? 0x7e00 : 0x7c00;
  } else if (x < (113u << 23)) {  // result is a half subnormal or zero: let the FPU round
    const uint32_t magic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    out = static_cast<uint16_t>(float_bits(bits_float(x) + bits_float(magic)) - magic);
  } else {
    const uint32_t odd = (x >> 13) & 1u;
    x += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + odd;
    out = static_cast<uint16_t>(x >> 13);
  }
  return static_cast<uint16_t>(out | (sign >> 16));
}

inline float half_bits_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t float_to_bfloat16_bits(float value) {
  const uint32_t x = float_bits(value);
  if (std::isnan(value)) return static_cast<uint16_t>(((x >> 16) & 0x8000u) | 0x7fc0u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// A finite non-negative `a` rounded to nearest even on a float8 grid of MantBits mantissa bits and
// exponent `bias`: its exponent field (which may pass the format's largest: the caller decides
// what overflow means) and mantissa. Shared by every float8 encoding.
template <int MantBits>
void fp8_round(float a, int bias, int& exp_field, int& mant) {
  if (a < std::ldexp(1.0f, 1 - bias)) {  // subnormal range; rounding may carry into exponent 1
    const int q = static_cast<int>(std::nearbyint(std::ldexp(a, bias - 1 + MantBits)));
    exp_field = q >> MantBits;
    mant = q & ((1 << MantBits) - 1);
    return;
  }
  int e;
  std::frexp(a, &e);
  e -= 1;  // a = 1.m * 2^e
  int q = static_cast<int>(std::nearbyint(std::ldexp(a, MantBits - e)));
  if (q == (1 << (MantBits + 1))) {
    q >>= 1;
    e += 1;
  }
  exp_field = e + bias;
  mant = q - (1 << MantBits);
}

// The magnitude a float8 exponent field and mantissa stand for (exponent field 0: subnormal).
template <int MantBits>
float fp8_magnitude(int exp_field, int mant, int bias) {
  return exp_field == 0 ? std::ldexp(static_cast<float>(mant), 1 - bias - MantBits)
                        : std::ldexp(static_cast<float>(mant + (1 << MantBits)), exp_field - bias - MantBits);
}

// Note [float8 encodings]: e4m3fn has no infinity (S.1111.111 is NaN, max 448); as PyTorch 2.13,
// a value beyond +-448 after rounding, and +-inf, saturate to +-448 (only NaN gives NaN).
// e5m2 is IEEE-like (overflow -> inf; NaN is S.11111.11, the code PyTorch writes). Both round to
// nearest even.
template <int ExpBits, int MantBits, bool HasInf>
uint8_t float_to_fp8(float value) {
  constexpr int bias = (1 << (ExpBits - 1)) - 1;
  constexpr uint8_t nan_code = HasInf ? uint8_t(((1 << ExpBits) - 1) << MantBits | ((1 << MantBits) - 1))
                                      : uint8_t((1 << (ExpBits + MantBits)) - 1);
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  if (std::isnan(value)) return uint8_t(sign | nan_code);
  const float a = std::fabs(value);
  constexpr uint8_t largest = uint8_t(nan_code - 1);  // e4m3fn: S.1111.110 = 448
  if (std::isinf(a)) return uint8_t(sign | (HasInf ? ((1 << ExpBits) - 1) << MantBits : largest));
  int exp_field;
  int mant;
  fp8_round<MantBits>(a, bias, exp_field, mant);
  if (HasInf) {
    if (exp_field >= (1 << ExpBits) - 1) return uint8_t(sign | ((1 << ExpBits) - 1) << MantBits);
  } else if (exp_field > (1 << ExpBits) - 1 ||
             (exp_field == (1 << ExpBits) - 1 && mant == (1 << MantBits) - 1)) {
    return uint8_t(sign | largest);
  }
  return uint8_t(sign | (exp_field << MantBits) | mant);
}

template <int ExpBits, int MantBits, bool HasInf>
float fp8_to_float(uint8_t code) {
  constexpr int bias = (1 << (ExpBits - 1)) - 1;
  const bool negative = code & 0x80;
  const int exp_field = (code >> MantBits) & ((1 << ExpBits) - 1);
  const int mant = code & ((1 << MantBits) - 1);
  float v;
  if (HasInf && exp_field == (1 << ExpBits) - 1) {
    v = mant == 0 ? INFINITY : NAN;
  } else if (!HasInf && exp_field == (1 << ExpBits) - 1 && mant == (1 << MantBits) - 1) {
    v = NAN;
  } else {
    v = fp8_magnitude<MantBits>(exp_field, mant, bias);
  }
  return negative ? -v : v;
}

// The "fnuz" float8 formats (e4m3fnuz, e5m2fnuz; AMD's and Graphcore's): no infinities and no
// negative zero, the one NaN being the negative-zero code 0x80, and an exponent bias one more than
// e4m3fn's and e5m2's (8 and 16), so every exponent field holds finite values. As PyTorch converts:
// round to nearest even; a value past the largest (240, 57344), an infinity or a NaN becomes NaN;
// -0.0 and negatives that round to zero become +0.
template <int ExpBits, int MantBits>
uint8_t float_to_fp8_fnuz(float value) {
  constexpr int bias = 1 << (ExpBits - 1);
  constexpr uint8_t nan_code = 0x80;
  if (!std::isfinite(value)) return nan_code;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0x00;
  const float a = std::fabs(value);
  int exp_field;
  int mant;
  fp8_round<MantBits>(a, bias, exp_field, mant);
  if (exp_field > (1 << ExpBits) - 1) return nan_code;
  if (exp_field == 0 && mant == 0) return 0;  // zero has no sign here
  return uint8_t(sign | (exp_field << MantBits) | mant);
}

template <int ExpBits, int MantBits>
float fp8_fnuz_to_float(uint8_t code) {
  if (code == 0x80) return NAN;
  constexpr int bias = 1 << (ExpBits - 1);
  const int exp_field = (code >> MantBits) & ((1 << ExpBits) - 1);
  const int mant = code & ((1 << MantBits) - 1);
  const float v = fp8_magnitude<MantBits>(exp_field, mant, bias);
  return (code & 0x80) ? -v : v;
}
}  // namespace detail

struct Half {
  uint16_t bits = 0;
  Half() = default;
  Half(float f) : bits(detail::float_to_half_bits(f)) {}  // NOLINT: implicit like c10::Half
  operator float() const { return detail::half_bits_to_float(bits); }
};

struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  BFloat16(float f) : bits(detail::float_to_bfloat16_bits(f)) {}  // NOLINT
  operator float() const { return detail::bits_float(static_cast<uint32_t>(bits) << 16); }
};

struct Float8_e4m3fn {
  uint8_t bits = 0;
  Float8_e4m3fn() = default;
  Float8_e4m3fn(float f) : bits(detail::float_to_fp8<4, 3, false>(f)) {}  // NOLINT
  operator float() const { return detail::fp8_to_float<4, 3, false>(bits); }
};

struct Float8_e5m2 {
  uint8_t bits = 0;
  Float8_e5m2() = default;
  Float8_e5m2(float f) : bits(detail::float_to_fp8<5, 2, true>(f)) {}  // NOLINT
  operator float() const { return detail::fp8_to_float<5, 2, true>(bits); }
};

// complex32 (PyTorch's chalf): a real and an imaginary Half, each part rounded as a Half is. The
// kernels that take it compute in std::complex<float> (acc_t), as PyTorch does.
struct ComplexHalf {
  using value_type = Half;
  Half re, im;
  ComplexHalf() = default;
  ComplexHalf(Half r, Half i) : re(r), im(i) {}
  template <typename R>
  ComplexHalf(std::complex<R> c)  // NOLINT: implicit like c10::complex<c10::Half>
      : re(static_cast<float>(c.real())), im(static_cast<float>(c.imag())) {}
  Half real() const { return re; }
  Half imag() const { return im; }
  operator std::complex<float>() const { return {float(re), float(im)}; }
};

// The bits dtypes (bits8, bits16, bits1x8, bits2x4, bits4x2): opaque bit patterns for kernels
// that define their own meaning (packed sub-byte values). They are stored, viewed, copied to the
// same dtype and zero-filled, and nothing else, as in PyTorch.
#define EMBER_BITS_TYPE(Name, U) \
  struct Name {                  \
    U bits = 0;                  \
  };
EMBER_BITS_TYPE(Bits8, uint8_t)
EMBER_BITS_TYPE(Bits16, uint16_t)
EMBER_BITS_TYPE(Bits1x8, uint8_t)
EMBER_BITS_TYPE(Bits2x4, uint8_t)
EMBER_BITS_TYPE(Bits4x2, uint8_t)
#undef EMBER_BITS_TYPE
template <typename T>
constexpr bool is_bits_v =
    std::is_same_v<T, Bits8> || std::is_same_v<T, Bits16> || std::is_same_v<T, Bits1x8> ||
    std::is_same_v<T, Bits2x4> || std::is_same_v<T, Bits4x2>;

// The quantized dtypes' element types (qint8, quint8, qint32; quint4x2 and quint2x4 name the
// byte that holds 2 or 4 packed codes): the integer a quantized tensor stores, read through its quantizer
// (Note [quantized tensors] in ember/quantizer.h). Stored, viewed and copied to the same dtype; arithmetic
// runs only in the quantized kernels.
#define EMBER_QUANTIZED_TYPE(Name, U) \
  struct Name {                       \
    using underlying = U;             \
    U val_ = 0;                       \
  };
EMBER_QUANTIZED_TYPE(QInt8, int8_t)
EMBER_QUANTIZED_TYPE(QUInt8, uint8_t)
EMBER_QUANTIZED_TYPE(QInt32, int32_t)
EMBER_QUANTIZED_TYPE(QUInt4x2, uint8_t)
EMBER_QUANTIZED_TYPE(QUInt2x4, uint8_t)
#undef EMBER_QUANTIZED_TYPE
template <typename T>
constexpr bool is_quantized_v =
    std::is_same_v<T, QInt8> || std::is_same_v<T, QUInt8> || std::is_same_v<T, QInt32> ||
    std::is_same_v<T, QUInt4x2> || std::is_same_v<T, QUInt2x4>;

struct Float8_e4m3fnuz {
  uint8_t bits = 0;
  Float8_e4m3fnuz() = default;
  Float8_e4m3fnuz(float f) : bits(detail::float_to_fp8_fnuz<4, 3>(f)) {}  // NOLINT
  operator float() const { return detail::fp8_fnuz_to_float<4, 3>(bits); }
};

struct Float8_e5m2fnuz {
  uint8_t bits = 0;
  Float8_e5m2fnuz() = default;
  Float8_e5m2fnuz(float f) : bits(detail::float_to_fp8_fnuz<5, 2>(f)) {}  // NOLINT
  operator float() const { return detail::fp8_fnuz_to_float<5, 2>(bits); }
};

}  // namespace ember
