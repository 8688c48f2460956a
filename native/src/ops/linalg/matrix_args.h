#pragma once
// Argument checks and batch helpers shared by the ember.linalg op bodies (linalg.cpp,
// decompositions.cpp), with PyTorch's error wording.
#include <cstdint>

#include "ember/error.h"
#include "ember/ops.h"

namespace ember::linalg_args {

// Factorizations take float32/64 and complex64/128; 16-bit floats are refused as PyTorch's CPU does.
inline void check_dtype(const char* op, const Tensor& a) {
  const DType d = a.dtype();
  EMBER_CHECK(d != DType::Float16 && d != DType::BFloat16, Error, "[", op,
              "] Low precision dtypes not supported. Got ", dtype_name(d));
  EMBER_CHECK(d == DType::Float32 || d == DType::Float64 || d == DType::Complex64 || d == DType::Complex128,
              Error, "[", op, "] Expected a floating point or complex tensor as input. Got ", dtype_name(d));
}

inline void check_matrices(const char* op, const Tensor& a, const char* name = "A") {
  EMBER_CHECK(a.dim() >= 2, Error, "[", op, "] The input tensor ", name, " must have at least 2 dimensions.");
}

inline void check_square_matrices(const char* op, const Tensor& a, const char* name = "A") {
  check_matrices(op, a, name);
  EMBER_CHECK(a.size(-1) == a.size(-2), Error, "[", op, "] ", name,
              " must be batches of square matrices, but they are ", a.size(-2), " by ", a.size(-1),
              " matrices");
}

inline IntList batch_of(const Tensor& t, int64_t matrix_dims) {
  return IntList(t.sizes().begin(), t.sizes().end() - matrix_dims);
}

// A contiguous copy as [count, rows, cols] (the kernels work in place on it).
inline Tensor as_batch(const Tensor& t) {
  int64_t count = 1;  // (not -1: a reshape cannot infer it when a matrix has no elements)
  for (int64_t i = 0; i < t.dim() - 2; ++i) count *= t.size(i);
  return reshape(t.clone(), {count, t.size(-2), t.size(-1)});  // clone: always a fresh contiguous copy
}

}  // namespace ember::linalg_args
