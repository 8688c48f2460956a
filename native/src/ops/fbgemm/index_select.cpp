// FBGEMM's row gathers (ember.ops.fbgemm.index_select_dim0; group_index_select_dim0 is its composite
// in src/autograd/fbgemm_composites.cpp): the forward
// copies whole rows (one memcpy per index, prefetched, over parallel_for), which beats the generic
// strided index_select on a large table; the backward sums the gradient rows of equal indices
// after sorting them (Note [sorted segment sums]), so no two threads add into one row.
// consecutive_range_* and skip_indices_sorting_fwd are CUDA hints; on CPU they change nothing, as
// in FBGEMM.
#include <cstdint>
#include <vector>

#include "ember/error.h"
#include "ember/fbgemm_ops.h"
#include "ops/dims.h"
#include "ops/fbgemm/jagged_kernels.h"

namespace ember {

DispatchStub<GatherRowsFn> gather_rows_stub("index_select_dim0");
DispatchStub<ScatterAddRowsFn> scatter_add_rows_stub("index_select_dim0_backward");

namespace {

template <typename I>
void check_range(const char* op, const I* p, int64_t n, int64_t rows) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k = static_cast<int64_t>(p[i]);
    // unsigned comparison: a negative index is as out of range as one past the end
    EMBER_CHECK(static_cast<uint64_t>(k) < static_cast<uint64_t>(rows), IndexError, "[", op,
                "] expected every index in [0, ", rows, "), but got ", k, " at position ", i);
  }
}

// The indices, contiguous, after checking dtype, rank and range.
Tensor checked_indices(const char* op, const Tensor& indices, int64_t rows) {
  EMBER_CHECK(indices.dtype() == DType::Int32 || indices.dtype() == DType::Int64, TypeError, "[", op,
              "] expected indices of dtype int32 or int64, but got ", dtype_name(indices.dtype()));
  EMBER_CHECK(indices.dim() == 1, ValueError, "[", op, "] expected 1-D indices, but got shape ",
              dims::str(indices.sizes()));
  const Tensor c = indices.contiguous();
  if (c.dtype() == DType::Int32)
    check_range(op, c.data<int32_t>(), c.numel(), rows);
  else
    check_range(op, c.data<int64_t>(), c.numel(), rows);
  return c;
}

}  // namespace

Tensor index_select_dim0(const Tensor& input, const Tensor& indices,
                         std::optional<int64_t> consecutive_range_start,
                         std::optional<int64_t> consecutive_range_length, bool skip_indices_sorting_fwd) {
  (void)consecutive_range_start;
  (void)consecutive_range_length;
  (void)skip_indices_sorting_fwd;
  const char* op = "index_select_dim0";
  EMBER_CHECK(input.dim() >= 1, ValueError, "[", op, "] expected an input of at least 1 dim, but got 0-D");
  const Tensor idx = checked_indices(op, indices, input.size(0));
  IntList shape = input.sizes();
  shape[0] = idx.numel();
  Tensor out = empty(shape, input.dtype(), input.device());
  if (out.numel() == 0) return out;
  gather_rows_stub.get(input.device().type)(input.contiguous(), idx, out);
  return out;
}

Tensor index_select_dim0_backward(const Tensor& grad_output, const Tensor& indices, int64_t num_rows) {
  const char* op = "index_select_dim0_backward";
  EMBER_CHECK(num_rows >= 0, ValueError, "[", op, "] expected num_rows >= 0, but got ", num_rows);
  const DType d = grad_output.dtype();
  EMBER_CHECK(d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16,
              TypeError, "[", op, "] expected grad_output of a floating dtype, but got ", dtype_name(d));
  const Tensor idx = checked_indices(op, indices, num_rows);
  EMBER_CHECK(grad_output.dim() >= 1 && grad_output.size(0) == idx.numel(), ValueError, "[", op,
              "] expected grad_output with one row per index (", idx.numel(), "), but got shape ",
              dims::str(grad_output.sizes()));
  IntList shape = grad_output.sizes();
  shape[0] = num_rows;
  Tensor out = zeros(shape, d, grad_output.device());
  if (out.numel() == 0 || idx.numel() == 0) return out;
  scatter_add_rows_stub.get(grad_output.device().type)(grad_output.contiguous(), idx, out);
  return out;
}

}  // namespace ember
