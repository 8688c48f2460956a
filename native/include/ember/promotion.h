#pragma once
// Note [type promotion]: PyTorch's rules. promote_types is the pairwise lattice
// (bool < integers < floats < complex; uint8+int8 -> int16; float16+bfloat16 -> float32;
// complex64 with float64 -> complex128). result_type ranks operands in three groups: tensors
// with dims, 0-dim tensors, and wrapped Python numbers. A lower group changes the result only
// when it is of a higher category (bool < integral < floating < complex), so
// int32_tensor + 2.5 -> float32 (the default dtype), float16_tensor + float64_0dim -> float16.
#include <vector>

#include "ember/dtype.h"
#include "ember/export.h"
#include "ember/scalar.h"
#include "ember/tensor.h"

namespace ember {

EMBER_API DType promote_types(DType a, DType b);  // TypeError for float8 mixes (as PyTorch)
EMBER_API DType result_type(const std::vector<Tensor>& operands);
// The same for two operands, without building a vector (the binary ops' per-call cost).
EMBER_API DType result_type(const Tensor& a, const Tensor& b);
EMBER_API bool can_cast(DType from, DType to);  // same-kind rule used for in-place/out=
EMBER_API DType get_default_dtype();
EMBER_API void set_default_dtype(DType d);  // TypeError unless float32/float64/float16/bfloat16
EMBER_API DType to_complex_dtype(DType d);  // float32 -> complex64, float64 -> complex128
EMBER_API DType to_real_dtype(DType d);     // complex64 -> float32
// A Python number as a 0-dim tensor flagged as a wrapped number: it ranks lowest in
// result_type, as PyTorch's wrapped numbers do (x + 2.5 keeps x's float dtype).
EMBER_API Tensor wrapped_number(const Scalar& value);

}  // namespace ember
