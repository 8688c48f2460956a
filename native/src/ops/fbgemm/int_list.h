#pragma once
// A 1-D integer tensor read into a std::vector<int64_t>: the TBE ops' table layouts, offsets and
// batch sizes, which their Python modules build and their kernels walk on the host.
#include <cstdint>
#include <vector>

#include "ember/error.h"
#include "ember/tensor.h"

namespace ember {

// Errors lead with "[op]". int32 and int64 are read; uint8 too when `allow_uint8` (IntNBit TBE's
// weight types).
inline std::vector<int64_t> read_int_list(const char* op, const char* name, const Tensor& t,
                                          bool allow_uint8 = false) {
  EMBER_CHECK(t.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              t.device().str());
  const DType dt = t.dtype();
  EMBER_CHECK(dt == DType::Int32 || dt == DType::Int64 || (allow_uint8 && dt == DType::UInt8), TypeError, "[",
              op, "] expected ", name, " of dtype ", allow_uint8 ? "uint8, " : "", "int32 or int64, but got ",
              dtype_name(dt));
  EMBER_CHECK(t.dim() == 1, ValueError, "[", op, "] expected a 1-D ", name, ", but got ", t.dim(), "-D");
  const Tensor c = t.contiguous();
  std::vector<int64_t> v(static_cast<size_t>(c.numel()));
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (dt == DType::UInt8) {
      v[i] = c.data<uint8_t>()[i];
    } else if (dt == DType::Int32) {
      v[i] = c.data<int32_t>()[i];
    } else {
      v[i] = c.data<int64_t>()[i];
    }
  }
  return v;
}

}  // namespace ember
