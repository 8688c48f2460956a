#pragma once
// The inference TBE's kernel interface (internal to libember): int_nbit_tbe.cpp checks the
// arguments and resolves each feature's table; src/backend/cpu/quantize_kernels.cpp pools.
#include <atomic>
#include <cstdint>
#include <vector>

#include "ember/dispatch_stub.h"
#include "ember/tensor.h"

namespace ember {

// SparseType's int codes (ember/tbe/_enums.py), which weights_tys holds.
enum class TbeWeightType : int { FP32 = 0, FP16 = 1, INT8 = 2, INT4 = 3, INT2 = 4, BF16 = 5, FP8 = 6 };

// One feature's table: `rows` rows of `row_bytes` bytes from `base`. Float rows hold D values;
// INT8/INT4/INT2 rows start with an fp16 scale and an fp16 bias, then the packed codes.
struct TbeFeature {
  const uint8_t* base = nullptr;
  int64_t rows = 0;
  int64_t row_bytes = 0;
  int64_t D = 0;
  int64_t D_start = 0;
  TbeWeightType ty = TbeWeightType::FP32;
};

struct IntNBitTbeArgs {
  const char* op;
  std::vector<TbeFeature> features;  // T
  int64_t B = 0;
  int64_t total_D = 0;
  Tensor indices;                  // int32 or int64, contiguous, 1-D
  const int64_t* offsets;          // T*B+1, checked (FATAL) or repaired: non-decreasing in [0, len(indices)]
  const float* weights = nullptr;  // per-sample weights, or nullptr
  int pooling = 0;                 // 0 SUM, 1 MEAN, 2 NONE
  bool skip_bad_indices = false;   // false: an index out of its table raises IndexError
  std::atomic<int64_t>* skipped = nullptr;
  int fp8_exponent_bits = 4;
  int fp8_exponent_bias = 7;
  Tensor out;  // float32, float16 or bfloat16: (B, total_D) pooled, (len(indices), D) for NONE (zeroed)
};

using IntNBitTbeFn = void (*)(const IntNBitTbeArgs&);
extern DispatchStub<IntNBitTbeFn> int_nbit_tbe_stub;

}  // namespace ember
