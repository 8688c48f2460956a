#pragma once
// Kernel interfaces of the table-batched embedding ops (src/ops/fbgemm/tbe.cpp, whose Note
// [table-batched embeddings] describes the layout; CPU kernels in backend/cpu/tbe_kernels.cpp).
// Kept out of ops/kernels.h so that adding to them recompiles only these files.
#include <cstdint>
#include <vector>

#include "ember/dispatch_stub.h"
#include "ember/tensor.h"

namespace ember {

// One checked batch of lookups: every offset and every index was validated by tbe.cpp before a
// kernel sees it (the kernels still never address a row outside its table).
struct TbeBatch {
  Tensor weights;                       // flat 1-D table buffer: float32, float16 or bfloat16
  Tensor indices;                       // 1-D contiguous int32 or int64, table-local rows
  Tensor per_sample_weights;            // 1-D float32 like indices, or undefined
  std::vector<int64_t> bounds;          // bag j is indices[bounds[j], bounds[j + 1])
  std::vector<int32_t> bag_feature;     // the feature bag j looks up
  std::vector<int64_t> bag_out;         // where bag j's pooled row starts in the flat output
  std::vector<int64_t> weights_offset;  // per feature: its table's first element in `weights`
  std::vector<int64_t> dim;             // per feature: its table's row length D
  std::vector<int64_t> rows;            // per feature: its table's number of rows
  std::vector<int64_t> row_offset;      // per feature: its table's first row among all tables' rows
  int64_t total_rows = 0;               // rows of all tables (the row-wise states' length)
  int64_t total_dim = 0;                // ΣD_f: the length of a pooled output row (without VBE)
  int pooling = 0;                      // 0 SUM, 1 MEAN, 2 NONE (PoolingMode)
};

// The fused optimizers of the backward (Note [fused optimizer backward] in tbe.cpp), one code per
// EmbOptimType the kernels implement, with every hyperparameter any of them reads.
enum class TbeOptimizer { None = 0, ExactSgd = 1, ExactAdagrad = 2, ExactRowwiseAdagrad = 3, Adam = 4 };
struct TbeOptimizerStep {
  TbeOptimizer kind = TbeOptimizer::ExactSgd;
  double learning_rate = 0.0, eps = 0.0, beta1 = 0.0, beta2 = 0.0, weight_decay = 0.0;
  int64_t weight_decay_mode = 0;  // 0 none, 1 L2, 2 decoupled (WeightDecayMode)
  int64_t iter = 0;               // Adam's step count after this step (bias corrections)
  Tensor momentum1, momentum2;    // float32: per element (laid out like weights) or per row
};

// out: (B, total_D) or VBE's flat rows for pooled modes, (N, D) for NONE; its dtype is the output's.
using TbeForwardFn = void (*)(const Tensor& out, const TbeBatch& batch);
extern DispatchStub<TbeForwardFn> tbe_forward_stub;

// Runs the optimizer on every row the batch touched (duplicates summed first). For
// TbeOptimizer::None it writes the summed gradient rows into `grad_weights` (like weights) instead.
using TbeBackwardFn = void (*)(const Tensor& grad_out, const TbeBatch& batch, const TbeOptimizerStep& step,
                               const Tensor& grad_weights);
extern DispatchStub<TbeBackwardFn> tbe_backward_stub;

// The gradient of each per-sample weight: its row dotted with its bag's output gradient.
using TbePerSampleWeightsBackwardFn = void (*)(const Tensor& grad_psw, const Tensor& grad_out,
                                               const TbeBatch& batch);
extern DispatchStub<TbePerSampleWeightsBackwardFn> tbe_per_sample_weights_backward_stub;

}  // namespace ember
