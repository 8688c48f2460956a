#include "ember/dtype.h"

#include "ember/error.h"

namespace ember {
namespace {
struct DTypeInfo {
  const char* name;
  const char* typestr;
  int64_t itemsize;
};
// Generated from the one list (Note [the one dtype list]).
constexpr DTypeInfo kInfo[] = {
#define EMBER_DTYPE_INFO(name, ctype, pyname, typestr) {pyname, typestr, sizeof(ctype)},
    EMBER_FORALL_DTYPES(EMBER_DTYPE_INFO)
#undef EMBER_DTYPE_INFO
};
const DTypeInfo& info(DType d) {
  return kInfo[static_cast<int>(d)];
}
}  // namespace

const char* dtype_name(DType d) {
  return info(d).name;
}
const char* dtype_typestr(DType d) {
  return info(d).typestr;
}
int64_t itemsize(DType d) {
  return info(d).itemsize;
}

bool is_floating_point(DType d) {
  switch (d) {
    case DType::Float16:
    case DType::BFloat16:
    case DType::Float32:
    case DType::Float64:
    case DType::Float8_e4m3fn:
    case DType::Float8_e5m2:
    case DType::Float8_e4m3fnuz:
    case DType::Float8_e5m2fnuz: return true;
    default: return false;
  }
}
bool is_float8(DType d) {
  return d == DType::Float8_e4m3fn || d == DType::Float8_e5m2 || d == DType::Float8_e4m3fnuz ||
         d == DType::Float8_e5m2fnuz;
}
bool is_bits(DType d) {
  return d == DType::Bits8 || d == DType::Bits16 || d == DType::Bits1x8 || d == DType::Bits2x4 ||
         d == DType::Bits4x2;
}
bool is_quantized(DType d) {
  return d == DType::QInt8 || d == DType::QUInt8 || d == DType::QInt32 || d == DType::QUInt4x2 ||
         d == DType::QUInt2x4;
}
int64_t elements_per_byte(DType d) {
  return d == DType::QUInt4x2 ? 2 : (d == DType::QUInt2x4 ? 4 : 1);
}
int64_t storage_nbytes(DType d, int64_t numel) {
  const int64_t per = elements_per_byte(d);
  return per == 1 ? numel * itemsize(d) : numel / per + (numel % per != 0);
}
DType quantized_underlying(DType d) {
  switch (d) {
    case DType::QInt8: return DType::Int8;
    case DType::QUInt8:
    case DType::QUInt4x2:
    case DType::QUInt2x4: return DType::UInt8;
    case DType::QInt32: return DType::Int32;
    default:
      throw ValueError(std::string("[quantized_underlying] expected a quantized dtype, but got ") +
                       dtype_name(d));
  }
}
bool is_complex(DType d) {
  return d == DType::Complex64 || d == DType::Complex128 || d == DType::Complex32;
}
bool is_integral(DType d, bool include_bool) {
  switch (d) {
    case DType::Bool: return include_bool;
    case DType::UInt8:
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64: return true;
    default: return false;
  }
}
bool is_signed(DType d) {
  return !(d == DType::Bool || d == DType::UInt8);
}

DType dtype_from_name(const std::string& name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == kInfo[i].name) return static_cast<DType>(i);
  }
  throw ValueError("[dtype] expected a dtype name such as 'float32', but got '" + name + "'");
}

}  // namespace ember
