#pragma once
// Note [the one dtype list]: EMBER_FORALL_DTYPES is the only list of dtypes. Every table
// (names, sizes, promotion, Python objects, NumPy codes) is generated from it; never write a
// second list by hand, or the two will drift (c10/core/ScalarType.h warns about the same).
#include <complex>
#include <cstdint>
#include <string>

#include "ember/export.h"
#include "ember/scalar_types.h"

//  _(Enum, C++ type, Python name, NumPy typestr or "" when NumPy has none)
#define EMBER_FORALL_DTYPES(_)                                        \
  _(Bool, bool, "bool", "|b1")                                        \
  _(UInt8, uint8_t, "uint8", "|u1")                                   \
  _(Int8, int8_t, "int8", "|i1")                                      \
  _(Int16, int16_t, "int16", "<i2")                                   \
  _(Int32, int32_t, "int32", "<i4")                                   \
  _(Int64, int64_t, "int64", "<i8")                                   \
  _(Float16, ::ember::Half, "float16", "<f2")                         \
  _(BFloat16, ::ember::BFloat16, "bfloat16", "")                      \
  _(Float32, float, "float32", "<f4")                                 \
  _(Float64, double, "float64", "<f8")                                \
  _(Complex64, std::complex<float>, "complex64", "<c8")               \
  _(Complex128, std::complex<double>, "complex128", "<c16")           \
  _(Float8_e4m3fn, ::ember::Float8_e4m3fn, "float8_e4m3fn", "")       \
  _(Float8_e5m2, ::ember::Float8_e5m2, "float8_e5m2", "")             \
  _(Float8_e4m3fnuz, ::ember::Float8_e4m3fnuz, "float8_e4m3fnuz", "") \
  _(Float8_e5m2fnuz, ::ember::Float8_e5m2fnuz, "float8_e5m2fnuz", "") \
  _(Complex32, ::ember::ComplexHalf, "complex32", "")                 \
  _(Bits8, ::ember::Bits8, "bits8", "")                               \
  _(Bits16, ::ember::Bits16, "bits16", "")                            \
  _(Bits1x8, ::ember::Bits1x8, "bits1x8", "")                         \
  _(Bits2x4, ::ember::Bits2x4, "bits2x4", "")                         \
  _(Bits4x2, ::ember::Bits4x2, "bits4x2", "")                         \
  _(QInt8, ::ember::QInt8, "qint8", "")                               \
  _(QUInt8, ::ember::QUInt8, "quint8", "")                            \
  _(QInt32, ::ember::QInt32, "qint32", "")                            \
  _(QUInt4x2, ::ember::QUInt4x2, "quint4x2", "")                      \
  _(QUInt2x4, ::ember::QUInt2x4, "quint2x4", "")

namespace ember {

enum class DType : int8_t {
#define EMBER_DTYPE_ENUM(name, ctype, pyname, typestr) name,
  EMBER_FORALL_DTYPES(EMBER_DTYPE_ENUM)
#undef EMBER_DTYPE_ENUM
};
constexpr int kNumDTypes = 0
#define EMBER_DTYPE_COUNT(name, ctype, pyname, typestr) +1
    EMBER_FORALL_DTYPES(EMBER_DTYPE_COUNT)
#undef EMBER_DTYPE_COUNT
    ;

template <DType D>
struct dtype_cpp;  // dtype_cpp<DType::Float32>::type is float
#define EMBER_DTYPE_CPP(name, ctype, pyname, typestr) \
  template <>                                         \
  struct dtype_cpp<DType::name> {                     \
    using type = ctype;                               \
  };
EMBER_FORALL_DTYPES(EMBER_DTYPE_CPP)
#undef EMBER_DTYPE_CPP

EMBER_API const char* dtype_name(DType d);     // "float32"
EMBER_API const char* dtype_typestr(DType d);  // NumPy array-interface typestr, "" if none
EMBER_API int64_t itemsize(DType d);
EMBER_API bool is_floating_point(DType d);  // float16..float64, bfloat16, float8
EMBER_API bool is_complex(DType d);         // complex32, complex64, complex128
EMBER_API bool is_float8(DType d);  // the four float8 formats: storage and conversions only, no arithmetic
// bits8, bits16, bits1x8, bits2x4, bits4x2: storage, views and same-dtype copies only
EMBER_API bool is_bits(DType d);
// qint8, quint8, qint32, quint4x2, quint2x4: integers read through a quantizer (ember/quantizer.h)
EMBER_API bool is_quantized(DType d);
// qint8 -> int8, quint8 -> uint8, qint32 -> int32, quint4x2 and quint2x4 -> uint8 (their bytes)
EMBER_API DType quantized_underlying(DType d);
// Note [sub-byte quantized tensors] (ember/quantizer.h): quint4x2 packs 2 codes per byte,
// quint2x4 4; every other dtype 1 element per itemsize bytes.
EMBER_API int64_t elements_per_byte(DType d);
// The bytes `numel` elements of `d` take: numel * itemsize, or packed for the sub-byte dtypes.
EMBER_API int64_t storage_nbytes(DType d, int64_t numel);
EMBER_API bool is_integral(DType d, bool include_bool);
EMBER_API bool is_signed(DType d);
EMBER_API DType dtype_from_name(const std::string& name);  // ValueError if unknown

}  // namespace ember
