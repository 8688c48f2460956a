#pragma once
// Kernel interfaces of the jagged ops and row gathers (src/ops/fbgemm/jagged.cpp, index_select.cpp;
// CPU kernels in src/backend/cpu/jagged_kernels.cpp). Kept out of ops/kernels.h so that adding one
// recompiles these few files only. The op bodies validate every offset and index before a kernel
// sees it: kernels trust them and use 64-bit arithmetic throughout.
#include <cstdint>

#include "ember/dispatch_stub.h"
#include "ember/tensor.h"

namespace ember {

// Note [jagged layout]: a jagged tensor with k offsets levels is addressed through its last level.
// `outer_seg[r]` is the segment of the last level (a row of offsets[k-1]) that dense row r (one
// position of the batch and of the first k-1 padded dims) shows, or -1 where that position is
// padding; nullptr means the identity (one level: dense row b shows segment b). Segment s covers
// values rows [offsets[s], offsets[s+1]); dense row r holds `max_len` of them, truncated or padded.
struct JaggedLayout {
  const int64_t* outer_seg = nullptr;
  int64_t rows = 0;                  // dense rows (B times the first k-1 max lengths)
  const int64_t* offsets = nullptr;  // last level, int64, validated
  int64_t max_len = 0;
};

// dense (rows, max_len, D) = values (L, D) where jagged, `pad` (one element's bytes) elsewhere.
// Element size only matters (the copy is dtype-blind); both contiguous.
using JaggedToDenseFn = void (*)(const JaggedLayout&, const Tensor& values, const Tensor& dense,
                                 const void* pad);
// values (L, D) = dense (rows, max_len, D) where jagged; values rows past max_len get zeros. Rows
// that no dense row reaches are left as they are (the caller zero-fills when there can be some).
using DenseToJaggedFn = void (*)(const JaggedLayout&, const Tensor& dense, const Tensor& values);
extern DispatchStub<JaggedToDenseFn> jagged_to_dense_stub;
extern DispatchStub<DenseToJaggedFn> dense_to_jagged_stub;

// out (L, N) = x (L, M) @ y[b] (M, N) for the first max_L rows of each segment, zeros after.
using JaggedDenseBmmFn = void (*)(const Tensor& x, const int64_t* offsets, int64_t B, const Tensor& y,
                                  int64_t max_L, const Tensor& out);
// out[b] (M, N) = sum over the first max_L rows i of segment b of x[i]^T y[i].
using JaggedJaggedBmmFn = void (*)(const Tensor& x, const Tensor& y, const int64_t* offsets, int64_t B,
                                   int64_t max_L, const Tensor& out);
// out[b*H+h, d] = sum_{n < min(len_b, N)} v[b*H+h, n] a[offsets[b]+n, h*D+d]; the backward gives both.
using DenseVecJaggedFn = void (*)(const Tensor& v, const Tensor& a, const int64_t* offsets, int64_t B,
                                  int64_t H, const Tensor& out);
using DenseVecJaggedBackwardFn = void (*)(const Tensor& grad, const Tensor& v, const Tensor& a,
                                          const int64_t* offsets, int64_t B, int64_t H, const Tensor& grad_v,
                                          const Tensor& grad_a);
// Softmax over the first max_L rows of each segment, per column; zeros in the rows after.
using JaggedSoftmaxFn = void (*)(const Tensor& values, const int64_t* offsets, int64_t B, int64_t max_L,
                                 const Tensor& out);
using JaggedSoftmaxBackwardFn = void (*)(const Tensor& grad, const Tensor& output, const int64_t* offsets,
                                         int64_t B, int64_t max_L, const Tensor& grad_input);
extern DispatchStub<JaggedDenseBmmFn> jagged_dense_bmm_stub;
extern DispatchStub<JaggedJaggedBmmFn> jagged_jagged_bmm_stub;
extern DispatchStub<DenseVecJaggedFn> dense_vec_jagged_stub;
extern DispatchStub<DenseVecJaggedBackwardFn> dense_vec_jagged_backward_stub;
extern DispatchStub<JaggedSoftmaxFn> jagged_softmax_stub;
extern DispatchStub<JaggedSoftmaxBackwardFn> jagged_softmax_backward_stub;

// out (n, row) = input (rows, row)[indices]: contiguous, indices (int32/int64) validated.
using GatherRowsFn = void (*)(const Tensor& input, const Tensor& indices, const Tensor& out);
// out (num_rows, row), zeroed, += grad (n, row) scattered by indices (Note [sorted segment sums]).
using ScatterAddRowsFn = void (*)(const Tensor& grad, const Tensor& indices, const Tensor& out);
extern DispatchStub<GatherRowsFn> gather_rows_stub;
extern DispatchStub<ScatterAddRowsFn> scatter_add_rows_stub;

}  // namespace ember
