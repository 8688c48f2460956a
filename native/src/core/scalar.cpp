#include "ember/scalar.h"

#include <cfloat>
#include <cmath>
#include <limits>
#include <type_traits>

#include "ember/error.h"
#include "ember/promotion.h"

namespace ember {

DType Scalar::natural_dtype() const {
  switch (kind_) {
    case Kind::Bool: return DType::Bool;
    case Kind::Int: return DType::Int64;
    case Kind::Float: return DType::Float64;
    case Kind::Complex: return DType::Complex128;
  }
  return DType::Float64;
}

double Scalar::to_double() const {
  switch (kind_) {
    case Kind::Float: return d_;
    case Kind::Complex: return z_.real();
    default: return static_cast<double>(i_);
  }
}
int64_t Scalar::to_int() const {
  switch (kind_) {
    case Kind::Float: return static_cast<int64_t>(d_);
    case Kind::Complex: return static_cast<int64_t>(z_.real());
    default: return i_;
  }
}
bool Scalar::to_bool() const {
  switch (kind_) {
    case Kind::Float: return d_ != 0;
    case Kind::Complex: return z_ != std::complex<double>(0);
    default: return i_ != 0;
  }
}
std::complex<double> Scalar::to_complex() const {
  return kind_ == Kind::Complex ? z_ : std::complex<double>(to_double(), 0.0);
}

namespace {

// Note [scalar range]: an integer or a real value against integral T's range.
template <typename T>
bool int_overflows(const Scalar& v) {
  constexpr int64_t lo = static_cast<int64_t>(std::numeric_limits<T>::min());
  constexpr int64_t hi = static_cast<int64_t>(std::numeric_limits<T>::max());
  constexpr bool is_unsigned = std::is_unsigned_v<T>;
  if (v.is_bool()) return false;
  if (v.is_integral()) {
    const int64_t i = v.to_int();
    return i > hi || (is_unsigned ? i < -hi : i < lo);
  }
  const double d = v.to_double();
  if (!std::isfinite(d)) return true;
  const double top = static_cast<double>(hi);  // 2^63 for int64: rounded up, itself out of range
  return (sizeof(T) == 8 ? d >= top : d > top) || d < (is_unsigned ? 0.0 : static_cast<double>(lo));
}

bool float_overflows(double d, double largest) {
  return std::isfinite(d) && std::fabs(d) > largest;
}

// PyTorch's spelling of the C++ type in its message.
const char* c_type_name(DType d) {
  switch (d) {
    case DType::UInt8: return "uint8_t";
    case DType::Int8: return "int8_t";
    case DType::Int16: return "int16_t";
    case DType::Int32: return "int";
    case DType::Int64: return "int64_t";
    case DType::Float16: return "c10::Half";
    case DType::BFloat16: return "c10::BFloat16";
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::Complex64: return "c10::complex<float>";
    case DType::Complex32: return "c10::complex<c10::Half>";
    case DType::QInt8: return "c10::qint8";
    case DType::QUInt8: return "c10::quint8";
    case DType::QUInt4x2: return "c10::quint4x2";
    case DType::QUInt2x4: return "c10::quint2x4";
    case DType::QInt32: return "c10::qint32";
    case DType::Bits8: return "c10::bits8";
    case DType::Bits16: return "c10::bits16";
    case DType::Bits1x8: return "c10::bits1x8";
    case DType::Bits2x4: return "c10::bits2x4";
    case DType::Bits4x2: return "c10::bits4x2";
    case DType::Float8_e4m3fn: return "c10::Float8_e4m3fn";
    case DType::Float8_e5m2: return "c10::Float8_e5m2";
    case DType::Float8_e4m3fnuz: return "c10::Float8_e4m3fnuz";
    case DType::Float8_e5m2fnuz: return "c10::Float8_e5m2fnuz";
    default: return dtype_name(d);
  }
}

}  // namespace

void check_scalar_fits(const Scalar& value, DType dtype, const char* op) {
  bool over = false;
  if (dtype != DType::Bool && !is_complex(dtype) && value.is_complex() && value.to_complex().imag() != 0) {
    over = true;
  } else {
    switch (dtype) {
      case DType::UInt8: over = int_overflows<uint8_t>(value); break;
      case DType::Int8: over = int_overflows<int8_t>(value); break;
      case DType::Int16: over = int_overflows<int16_t>(value); break;
      case DType::Int32: over = int_overflows<int32_t>(value); break;
      case DType::Int64: over = int_overflows<int64_t>(value); break;
      case DType::Float16: over = float_overflows(value.to_double(), 65504.0); break;
      case DType::Float32: over = float_overflows(value.to_double(), FLT_MAX); break;
      case DType::Complex32:
        over = float_overflows(value.to_complex().real(), 65504.0) ||
               float_overflows(value.to_complex().imag(), 65504.0);
        break;
      case DType::Complex64:
        over = float_overflows(value.to_complex().real(), FLT_MAX) ||
               float_overflows(value.to_complex().imag(), FLT_MAX);
        break;
      default: break;  // bool, bfloat16, float64, complex128, float8: every value converts
    }
  }
  EMBER_CHECK(!over, Error, "[", op, "] value cannot be converted to type ", c_type_name(dtype),
              " without overflow");
}

}  // namespace ember
