#include "ember/dtype.h"
#include "ember/error.h"
#include "harness.h"

using namespace ember;

EMBER_TEST(names_and_sizes_come_from_one_list) {
  CHECK_EQ(kNumDTypes, 27);
  CHECK_EQ(std::string(dtype_name(DType::BFloat16)), "bfloat16");
  CHECK_EQ(itemsize(DType::Complex128), 16);
  CHECK_EQ(itemsize(DType::Float8_e5m2), 1);
  CHECK_EQ(dtype_from_name("float8_e4m3fn"), DType::Float8_e4m3fn);
  CHECK_THROWS(ValueError, dtype_from_name("float128"), "float128");
  CHECK(is_floating_point(DType::BFloat16) && !is_floating_point(DType::Int64));
  CHECK(is_float8(DType::Float8_e5m2fnuz) && is_floating_point(DType::Float8_e4m3fnuz) &&
        !is_float8(DType::Float16));
  CHECK(is_complex(DType::Complex64) && is_complex(DType::Complex32) && !is_complex(DType::Float64));
  CHECK_EQ(itemsize(DType::Complex32), 4);
  CHECK_EQ(dtype_from_name("complex32"), DType::Complex32);
  CHECK(is_bits(DType::Bits4x2) && !is_bits(DType::UInt8) && itemsize(DType::Bits16) == 2);
  CHECK(is_integral(DType::Bool, true) && !is_integral(DType::Bool, false));
  // quantized dtypes: integers read through a quantizer, neither integral nor floating
  CHECK(is_quantized(DType::QUInt8) && !is_quantized(DType::UInt8) && itemsize(DType::QInt32) == 4);
  CHECK(!is_integral(DType::QInt8, false) && !is_floating_point(DType::QInt8));
  CHECK_EQ(quantized_underlying(DType::QUInt8), DType::UInt8);
  CHECK_THROWS(ValueError, quantized_underlying(DType::Int8), "expected a quantized dtype");
  // Note [sub-byte quantized tensors]: quint4x2 / quint2x4 pack 2 / 4 codes per byte
  CHECK(is_quantized(DType::QUInt4x2) && is_quantized(DType::QUInt2x4) && itemsize(DType::QUInt4x2) == 1);
  CHECK_EQ(quantized_underlying(DType::QUInt2x4), DType::UInt8);
  CHECK_EQ(elements_per_byte(DType::QUInt4x2), 2);
  CHECK_EQ(elements_per_byte(DType::QUInt2x4), 4);
  CHECK_EQ(elements_per_byte(DType::Float32), 1);
  CHECK_EQ(storage_nbytes(DType::QUInt4x2, 35), 18);
  CHECK_EQ(storage_nbytes(DType::QUInt2x4, 9), 3);
  CHECK_EQ(storage_nbytes(DType::QUInt2x4, 0), 0);
  CHECK_EQ(storage_nbytes(DType::Float64, 5), 40);
}

EMBER_TEST(complex_half_rounds_each_part_as_a_half) {
  const ComplexHalf z(std::complex<double>(1.0 + 1.0 / 2048, 70000.0));
  CHECK_EQ(z.real().bits, 0x3c00);  // tie -> even
  CHECK_EQ(z.imag().bits, 0x7c00);  // past the largest half: inf
  const std::complex<float> back = ComplexHalf(std::complex<float>(-2.5f, 0.5f));
  CHECK_EQ(back.real(), -2.5f);
  CHECK_EQ(back.imag(), 0.5f);
}

EMBER_TEST(half_rounds_to_nearest_even) {
  CHECK_EQ(Half(1.0f).bits, 0x3c00);
  CHECK_EQ(Half(65504.0f).bits, 0x7bff);
  CHECK_EQ(Half(65520.0f).bits, 0x7c00);  // halfway to the next binade rounds to inf
  CHECK_EQ(Half(-0.0f).bits, 0x8000);
  CHECK_EQ(Half(5.9604645e-08f).bits, 0x0001);      // smallest subnormal
  CHECK_EQ(Half(1.0f + 1.0f / 2048).bits, 0x3c00);  // tie -> even
  CHECK(std::isnan(static_cast<float>(Half(NAN))));
  for (uint32_t b = 0; b < 0x7c00; ++b) {  // every finite half survives a round trip
    Half h;
    h.bits = static_cast<uint16_t>(b);
    if (Half(static_cast<float>(h)).bits != b) {
      CHECK(false);
      break;
    }
  }
}

EMBER_TEST(bfloat16_rounds_to_nearest_even) {
  CHECK_EQ(BFloat16(1.0f).bits, 0x3f80);
  CHECK_EQ(static_cast<float>(BFloat16(3.140625f)), 3.140625f);
  CHECK_EQ(BFloat16(1.00390625f).bits, 0x3f80);  // tie -> even
  CHECK(std::isnan(static_cast<float>(BFloat16(NAN))));
}

EMBER_TEST(float8_encodings) {
  CHECK_EQ(static_cast<float>(Float8_e4m3fn(448.0f)), 448.0f);
  CHECK_EQ(static_cast<float>(Float8_e4m3fn(480.0f)), 448.0f);  // no inf: saturates, as PyTorch 2.13
  CHECK_EQ(static_cast<float>(Float8_e4m3fn(-INFINITY)), -448.0f);
  CHECK(std::isnan(static_cast<float>(Float8_e4m3fn(NAN))));
  CHECK_EQ(static_cast<float>(Float8_e4m3fn(0.001953125f)), 0.001953125f);  // min subnormal 2^-9
  CHECK_EQ(static_cast<float>(Float8_e5m2(57344.0f)), 57344.0f);
  CHECK(std::isinf(static_cast<float>(Float8_e5m2(1e6f))));
  CHECK_EQ(static_cast<float>(Float8_e5m2(-1.5f)), -1.5f);
  for (int b = 0; b < 256; ++b) {  // every non-NaN code survives a round trip
    Float8_e4m3fn a;
    a.bits = static_cast<uint8_t>(b);
    Float8_e5m2 c;
    c.bits = static_cast<uint8_t>(b);
    if (!std::isnan(static_cast<float>(a))) CHECK_EQ(Float8_e4m3fn(static_cast<float>(a)).bits, a.bits);
    if (!std::isnan(static_cast<float>(c))) CHECK_EQ(Float8_e5m2(static_cast<float>(c)).bits, c.bits);
  }
}

EMBER_TEST(float8_fnuz_encodings) {
  CHECK_EQ(Float8_e4m3fnuz(240.0f).bits, 0x7f);  // the largest
  CHECK_EQ(Float8_e4m3fnuz(250.0f).bits, 0x80);  // past it: NaN, as PyTorch
  CHECK_EQ(Float8_e4m3fnuz(INFINITY).bits, 0x80);
  CHECK_EQ(Float8_e4m3fnuz(-0.0f).bits, 0x00);  // no negative zero
  CHECK_EQ(Float8_e4m3fnuz(-1e-8f).bits, 0x00);
  CHECK_EQ(Float8_e4m3fnuz(-1.5f).bits, 0xc4);
  CHECK_EQ(Float8_e5m2fnuz(57344.0f).bits, 0x7f);
  CHECK_EQ(Float8_e5m2fnuz(61440.0f).bits, 0x80);  // rounds past the largest
  CHECK(std::isnan(static_cast<float>(Float8_e5m2fnuz(NAN))));
  for (int b = 0; b < 256; ++b) {  // every code but the NaN survives a round trip
    if (b == 0x80) continue;
    Float8_e4m3fnuz a;
    a.bits = static_cast<uint8_t>(b);
    Float8_e5m2fnuz c;
    c.bits = static_cast<uint8_t>(b);
    CHECK_EQ(Float8_e4m3fnuz(static_cast<float>(a)).bits, a.bits);
    CHECK_EQ(Float8_e5m2fnuz(static_cast<float>(c)).bits, c.bits);
  }
}
