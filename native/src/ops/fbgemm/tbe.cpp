// Table-batched embeddings (TBE): FBGEMM's SplitTableBatchedEmbeddingBagsCodegen lookups, behind
// ember.tbe (src/ember/tbe/_training.py). Kernels: backend/cpu/tbe_kernels.cpp.
//
// Note [table-batched embeddings]: T tables live in one flat 1-D buffer; F features look them up
// (a feature names its table; several features may share one). Per feature f, built by ember.tbe:
//
//   weights_offsets[f]    where f's table starts in the buffer (elements)
//   D_offsets[f..f+1]     f's columns in a pooled output row (its row length D_f is their difference)
//   rows_per_feature[f]   the rows of f's table
//   hash_size_cumsum[f]   f's table's first row among all tables' rows (the row-wise states' index);
//                         its last entry is the rows of all tables
//
// One batch is a flat `indices` (table-local rows) and `offsets`, feature-major: bag (f, b) is
// indices[offsets[f·B + b], offsets[f·B + b + 1]), so offsets has F·B + 1 entries. The pooled
// output is (B, ΣD_f), bag (f, b) at row b, columns D_offsets[f]... With variable batch per
// feature (VBE, batch_size_per_feature_per_rank[f][r] = B_fr) the bags run feature, then rank,
// then sample, offsets has ΣB_fr + 1 entries, and the output is flat: rank by rank, feature by
// feature, a (B_fr, D_f) block each (FBGEMM's VBE layout). Pooling NONE returns (len(indices), D).
//
// Note [bounds check]: every offset and every index is checked here, before a kernel reads a row.
// offsets[0] must be 0, offsets never decrease and the last is at most len(indices) (indices after
// it belong to no bag); every index of feature f must be in [0, rows_per_feature[f]). A violation
// raises IndexError naming the feature, the bag and the value (BoundsCheckMode.FATAL). In the
// repairing modes, WARNING and IGNORE, ember.tbe first clamps each offset into [previous offset,
// len(indices)] (offsets[0] to 0) with fbgemm::bounds_check_indices, then leaves every bad index
// out of its bag (it adds nothing, is not counted by MEAN, gets no gradient), as the inference
// TBE does. fbgemm::bounds_check_indices itself keeps FBGEMM's in-place repair: a bad index
// becomes row 0 and its per-sample weight, if given, 0.
//
// Note [fused optimizer backward]: training never builds the tables' dense gradient. The backward
// runs the optimizer on each row the batch touched, at once, with its state: a row seen once
// straight from its bag's gradient, a repeated row after summing its gradient over its
// occurrences (duplicates summed first, the "exact" optimizers; Note [rows seen once] in
// backend/cpu/tbe_kernels.cpp). The optimizers are data: one row of
// ember.tbe's OPTIMIZERS table each (its states and hyperparameters), and one case of
// TbeOptimizer here (its update). Optimizer NONE instead returns the summed rows as the gradient
// of the flat buffer, for an ember.optim optimizer to apply.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/fbgemm_ops.h"
#include "ember/writable.h"
#include "ops/dims.h"
#include "ops/fbgemm/int_list.h"
#include "ops/fbgemm/tbe_kernels.h"

namespace ember {

DispatchStub<TbeForwardFn> tbe_forward_stub("tbe_forward");
DispatchStub<TbeBackwardFn> tbe_backward_stub("tbe_backward");
DispatchStub<TbePerSampleWeightsBackwardFn> tbe_per_sample_weights_backward_stub(
    "tbe_per_sample_weights_backward");

namespace {

constexpr const char* kOp = "[tbe]";

bool is_table_dtype(DType d) {
  return d == DType::Float32 || d == DType::Float16 || d == DType::BFloat16;
}

DType output_dtype_of(int64_t code) {
  // SparseType's codes: FP32 0, FP16 1, BF16 5
  if (code == 0) return DType::Float32;
  if (code == 1) return DType::Float16;
  if (code == 5) return DType::BFloat16;
  throw ValueError(std::string(kOp) + " expected output_dtype 0 (FP32), 1 (FP16) or 5 (BF16), but got " +
                   std::to_string(code));
}

template <typename I>
void check_indices(const I* idx, const TbeBatch& batch) {
  const int64_t nbags = static_cast<int64_t>(batch.bag_feature.size());
  int64_t first = 0;  // the first bag of the current feature (bags are feature-major)
  for (int64_t j = 0; j < nbags; ++j) {
    const int32_t f = batch.bag_feature[j];
    if (j > 0 && f != batch.bag_feature[j - 1]) first = j;
    const int64_t rows = batch.rows[f];
    for (int64_t i = batch.bounds[j]; i < batch.bounds[j + 1]; ++i) {
      const int64_t k = static_cast<int64_t>(idx[i]);
      if (static_cast<uint64_t>(k) >= static_cast<uint64_t>(rows))
        throw IndexError(std::string(kOp) + " index out of range: expected every index of feature " +
                         std::to_string(f) + " in [0, " + std::to_string(rows) + "), but its bag " +
                         std::to_string(j - first) + " (offsets[" + std::to_string(j) + "]) holds " +
                         std::to_string(k) + " (indices[" + std::to_string(i) + "])");
    }
  }
}

// Validates the tables, offsets and indices (Note [bounds check]) and lays out the bags.
TbeBatch make_batch(const Tensor& weights, const Tensor& weights_offsets, const Tensor& D_offsets,
                    const Tensor& rows_per_feature, const Tensor& hash_size_cumsum, const Tensor& indices,
                    const Tensor& offsets, int64_t pooling_mode,
                    const std::optional<Tensor>& per_sample_weights, const std::optional<Tensor>& batch_sizes,
                    int64_t* total_out) {
  TbeBatch batch;
  EMBER_CHECK(weights.dim() == 1 && is_table_dtype(weights.dtype()), TypeError, kOp,
              " expected a 1-D float32, float16 or bfloat16 weights buffer, but got a ", weights.dim(), "-D ",
              dtype_name(weights.dtype()), " tensor");
  EMBER_CHECK(weights.device().type == DeviceType::CPU, NotImplementedError, kOp, " not implemented for ",
              weights.device().str());
  EMBER_CHECK(weights.is_contiguous(), ValueError, kOp, " expected a contiguous weights buffer");
  EMBER_CHECK(pooling_mode >= 0 && pooling_mode <= 2, ValueError, kOp,
              " expected pooling_mode 0 (SUM), 1 (MEAN) or 2 (NONE), but got ", pooling_mode);
  batch.weights = weights;
  batch.pooling = static_cast<int>(pooling_mode);
  batch.weights_offset = read_int_list("tbe", "weights_offsets", weights_offsets);
  const std::vector<int64_t> d_off = read_int_list("tbe", "D_offsets", D_offsets);
  batch.rows = read_int_list("tbe", "rows_per_feature", rows_per_feature);
  const std::vector<int64_t> hash = read_int_list("tbe", "hash_size_cumsum", hash_size_cumsum);
  const int64_t F = static_cast<int64_t>(batch.weights_offset.size());
  EMBER_CHECK(static_cast<int64_t>(d_off.size()) == F + 1 && static_cast<int64_t>(batch.rows.size()) == F &&
                  static_cast<int64_t>(hash.size()) == F + 1,
              ValueError, kOp, " expected D_offsets and hash_size_cumsum of ", F + 1,
              " entries and rows_per_feature of ", F, " (one per feature), but got ", d_off.size(), ", ",
              hash.size(), " and ", batch.rows.size());
  EMBER_CHECK(F > 0, ValueError, kOp, " expected at least one feature, but got 0");
  batch.total_rows = hash[F];
  for (int64_t f = 0; f < F; ++f) {
    const int64_t D = d_off[f + 1] - d_off[f], rows = batch.rows[f], start = batch.weights_offset[f];
    EMBER_CHECK(D >= 0 && rows >= 0 && start >= 0 && hash[f] >= 0 && hash[f] + rows <= batch.total_rows,
                ValueError, kOp, " expected feature ", f, "'s table to lie inside the row space, but got D ",
                D, ", rows ", rows, ", first row ", hash[f], " of ", batch.total_rows);
    // the table must lie inside the buffer: no row of it can be read out of bounds
    EMBER_CHECK(D == 0 || rows <= (weights.numel() - std::min(start, weights.numel())) / D, ValueError, kOp,
                " expected feature ", f, "'s table (", rows, " rows of ", D, " from element ", start,
                ") to lie inside the weights buffer of ", weights.numel(), " elements");
    batch.dim.push_back(D);
  }
  batch.row_offset.assign(hash.begin(), hash.end() - 1);
  if (pooling_mode == 2) {
    for (int64_t f = 1; f < F; ++f)
      EMBER_CHECK(batch.dim[f] == batch.dim[0], ValueError, kOp,
                  " expected one embedding dim for pooling NONE, but features 0 and ", f, " have ",
                  batch.dim[0], " and ", batch.dim[f]);
  }

  EMBER_CHECK(indices.dim() == 1, ValueError, kOp, " expected 1-D indices, but got ", indices.dim(), "-D");
  EMBER_CHECK(indices.dtype() == DType::Int32 || indices.dtype() == DType::Int64, TypeError, kOp,
              " expected int32 or int64 indices, but got ", dtype_name(indices.dtype()));
  batch.indices = indices.contiguous();
  const int64_t n = indices.numel();
  const std::vector<int64_t> off = read_int_list("tbe", "offsets", offsets);
  const int64_t nbags = static_cast<int64_t>(off.size()) - 1;
  EMBER_CHECK(nbags >= 0, IndexError, kOp, " expected offsets of F·B + 1 entries, but got none");
  EMBER_CHECK(off[0] == 0, IndexError, kOp, " expected offsets[0] to be 0, but got ", off[0]);
  for (int64_t j = 0; j < nbags; ++j)
    EMBER_CHECK(off[j] <= off[j + 1], IndexError, kOp, " expected offsets never to decrease, but bag ", j,
                " runs from ", off[j], " to ", off[j + 1]);
  EMBER_CHECK(off[nbags] <= n, IndexError, kOp, " expected the last offset to be at most len(indices) = ", n,
              ", but got ", off[nbags]);
  batch.bounds = off;

  // bags: their features and where their pooled rows go
  const int64_t total_D = d_off[F] - d_off[0];
  batch.total_dim = total_D;
  batch.bag_feature.resize(static_cast<size_t>(nbags));
  batch.bag_out.resize(static_cast<size_t>(nbags));
  if (!batch_sizes.has_value()) {
    EMBER_CHECK(nbags % F == 0, ValueError, kOp, " expected offsets of F·B + 1 entries for F = ", F,
                " features, but got ", nbags + 1);
    const int64_t B = nbags / F;
    for (int64_t f = 0; f < F; ++f)
      for (int64_t b = 0; b < B; ++b) {
        batch.bag_feature[f * B + b] = static_cast<int32_t>(f);
        batch.bag_out[f * B + b] = b * total_D + (d_off[f] - d_off[0]);
      }
    *total_out = B;  // rows of the (B, total_D) output
  } else {
    const Tensor& bs = *batch_sizes;
    EMBER_CHECK(bs.dim() == 2 && bs.size(0) == F, ValueError, kOp,
                " expected batch_size_per_feature_per_rank of shape (", F, ", ranks), but got ", bs.dim(),
                "-D");
    const std::vector<int64_t> sizes =
        read_int_list("tbe", "batch sizes", reshape(bs.contiguous(), {bs.numel()}));
    const int64_t R = bs.size(1);
    int64_t bags = 0;
    for (int64_t v : sizes) {
      EMBER_CHECK(v >= 0, ValueError, kOp, " expected batch sizes >= 0, but got ", v);
      bags += v;
    }
    EMBER_CHECK(bags == nbags, ValueError, kOp, " expected offsets of sum(batch sizes) + 1 = ", bags + 1,
                " entries, but got ", nbags + 1);
    // start of block (r, f) in the flat output: ranks in order, features in order within a rank
    std::vector<int64_t> block(static_cast<size_t>(F * R));
    int64_t at = 0;
    for (int64_t r = 0; r < R; ++r)
      for (int64_t f = 0; f < F; ++f) {
        block[f * R + r] = at;
        at += sizes[f * R + r] * batch.dim[f];
      }
    int64_t j = 0;
    for (int64_t f = 0; f < F; ++f)
      for (int64_t r = 0; r < R; ++r)
        for (int64_t b = 0; b < sizes[f * R + r]; ++b, ++j) {
          batch.bag_feature[j] = static_cast<int32_t>(f);
          batch.bag_out[j] = block[f * R + r] + b * batch.dim[f];
        }
    *total_out = at;  // elements of the flat VBE output
  }

  if (per_sample_weights.has_value()) {
    const Tensor& w = *per_sample_weights;
    EMBER_CHECK(w.dim() == 1 && w.numel() == n, ValueError, kOp, " expected per_sample_weights of shape (", n,
                ",) like indices, but got ", w.dim(), "-D of ", w.numel(), " elements");
    EMBER_CHECK(w.dtype() == DType::Float32, TypeError, kOp, " expected float32 per_sample_weights, but got ",
                dtype_name(w.dtype()));
    batch.per_sample_weights = w.contiguous();
  }
  if (indices.dtype() == DType::Int32)
    check_indices(batch.indices.data<int32_t>(), batch);
  else
    check_indices(batch.indices.data<int64_t>(), batch);
  return batch;
}

}  // namespace

Tensor tbe_forward(const Tensor& weights, const Tensor& weights_offsets, const Tensor& D_offsets,
                   const Tensor& rows_per_feature, const Tensor& hash_size_cumsum, const Tensor& indices,
                   const Tensor& offsets, int64_t pooling_mode,
                   const std::optional<Tensor>& per_sample_weights,
                   const std::optional<Tensor>& batch_size_per_feature_per_rank, int64_t output_dtype) {
  int64_t total = 0;
  const TbeBatch batch =
      make_batch(weights, weights_offsets, D_offsets, rows_per_feature, hash_size_cumsum, indices, offsets,
                 pooling_mode, per_sample_weights, batch_size_per_feature_per_rank, &total);
  const DType dtype = output_dtype_of(output_dtype);
  Tensor out;
  if (pooling_mode == 2)
    out = empty({indices.numel(), batch.dim[0]}, dtype);
  else if (batch_size_per_feature_per_rank.has_value())
    out = empty({total}, dtype);
  else
    out = empty({total, batch.total_dim}, dtype);
  tbe_forward_stub.get(weights.device().type)(out, batch);
  return out;
}

namespace {

// The output gradient as the kernels read it: the forward's layout, contiguous, float32.
Tensor grad_like_output(const Tensor& grad_output, const TbeBatch& batch, int64_t rows_or_total, bool vbe) {
  std::vector<int64_t> shape;
  if (batch.pooling == 2)
    shape = {batch.indices.numel(), batch.dim[0]};
  else if (vbe)
    shape = {rows_or_total};
  else
    shape = {rows_or_total, batch.total_dim};
  EMBER_CHECK(grad_output.sizes() == shape, ValueError, kOp,
              " expected grad_output of the forward output's shape ", dims::str(shape), ", but got ",
              dims::str(grad_output.sizes()));
  EMBER_CHECK(is_table_dtype(grad_output.dtype()), TypeError, kOp,
              " expected a float32, float16 or bfloat16 grad_output, but got ",
              dtype_name(grad_output.dtype()));
  return to_dtype(grad_output, DType::Float32, false).contiguous();
}

Tensor checked_state(const std::optional<Tensor>& t, int64_t numel, const char* what, const char* optimizer) {
  EMBER_CHECK(t.has_value() && t->defined(), ValueError, kOp, " ", optimizer, " expected its ", what,
              " state, but got none");
  EMBER_CHECK(t->dtype() == DType::Float32 && t->dim() == 1 && t->numel() == numel && t->is_contiguous(),
              ValueError, kOp, " ", optimizer, " expected a contiguous 1-D float32 ", what, " state of ",
              numel, " elements, but got ", t->dim(), "-D ", dtype_name(t->dtype()), " of ", t->numel());
  return *t;
}

}  // namespace

Tensor tbe_backward(const Tensor& grad_output, const Tensor& weights, const Tensor& weights_offsets,
                    const Tensor& D_offsets, const Tensor& rows_per_feature, const Tensor& hash_size_cumsum,
                    const Tensor& indices, const Tensor& offsets, int64_t pooling_mode,
                    const std::optional<Tensor>& per_sample_weights,
                    const std::optional<Tensor>& batch_size_per_feature_per_rank, int64_t optimizer,
                    const std::optional<Tensor>& momentum1, const std::optional<Tensor>& momentum2,
                    double learning_rate, double eps, double beta1, double beta2, double weight_decay,
                    int64_t weight_decay_mode, int64_t iter) {
  int64_t total = 0;
  const TbeBatch batch =
      make_batch(weights, weights_offsets, D_offsets, rows_per_feature, hash_size_cumsum, indices, offsets,
                 pooling_mode, per_sample_weights, batch_size_per_feature_per_rank, &total);
  const Tensor grad =
      grad_like_output(grad_output, batch, total, batch_size_per_feature_per_rank.has_value());
  EMBER_CHECK(optimizer >= 0 && optimizer <= 4, ValueError, kOp,
              " expected optimizer 0 (NONE), 1 (EXACT_SGD), 2 (EXACT_ADAGRAD), 3 (EXACT_ROWWISE_ADAGRAD) or "
              "4 (ADAM), "
              "but got ",
              optimizer);
  EMBER_CHECK(weight_decay_mode >= 0 && weight_decay_mode <= 2, ValueError, kOp,
              " expected weight_decay_mode 0 (NONE), 1 (L2) or 2 (DECOUPLE), but got ", weight_decay_mode);
  TbeOptimizerStep step;
  step.kind = static_cast<TbeOptimizer>(optimizer);
  step.learning_rate = learning_rate;
  step.eps = eps;
  step.beta1 = beta1;
  step.beta2 = beta2;
  step.weight_decay = weight_decay;
  step.weight_decay_mode = weight_decay_mode;
  step.iter = iter;
  switch (step.kind) {
    case TbeOptimizer::ExactAdagrad:
      step.momentum1 = checked_state(momentum1, weights.numel(), "per-element momentum1", "EXACT_ADAGRAD");
      break;
    case TbeOptimizer::ExactRowwiseAdagrad:
      step.momentum1 =
          checked_state(momentum1, batch.total_rows, "per-row momentum1", "EXACT_ROWWISE_ADAGRAD");
      break;
    case TbeOptimizer::Adam:
      EMBER_CHECK(iter >= 1, ValueError, kOp, " ADAM expected iter >= 1 (the step being taken), but got ",
                  iter);
      step.momentum1 = checked_state(momentum1, weights.numel(), "per-element momentum1", "ADAM");
      step.momentum2 = checked_state(momentum2, weights.numel(), "per-element momentum2", "ADAM");
      break;
    default: break;
  }
  // The fused step writes the tables and their state in place (Note [read-only storage]).
  if (step.kind != TbeOptimizer::None) {
    check_writable(weights);
    for (const Tensor* s : {&step.momentum1, &step.momentum2}) {
      if (s->defined()) check_writable(*s);
    }
  }
  Tensor grad_weights =
      step.kind == TbeOptimizer::None ? zeros({weights.numel()}, weights.dtype()) : empty({0});
  tbe_backward_stub.get(weights.device().type)(grad, batch, step, grad_weights);
  return grad_weights;
}

Tensor tbe_per_sample_weights_backward(const Tensor& grad_output, const Tensor& weights,
                                       const Tensor& weights_offsets, const Tensor& D_offsets,
                                       const Tensor& rows_per_feature, const Tensor& hash_size_cumsum,
                                       const Tensor& indices, const Tensor& offsets, int64_t pooling_mode,
                                       const std::optional<Tensor>& batch_size_per_feature_per_rank) {
  int64_t total = 0;
  const TbeBatch batch =
      make_batch(weights, weights_offsets, D_offsets, rows_per_feature, hash_size_cumsum, indices, offsets,
                 pooling_mode, std::nullopt, batch_size_per_feature_per_rank, &total);
  const Tensor grad =
      grad_like_output(grad_output, batch, total, batch_size_per_feature_per_rank.has_value());
  Tensor grad_psw = zeros({indices.numel()}, DType::Float32);
  tbe_per_sample_weights_backward_stub.get(weights.device().type)(grad_psw, grad, batch);
  return grad_psw;
}

}  // namespace ember

namespace ember {

namespace {

// FBGEMM's CPU lookup ops name no row counts; each feature's table ends where the next table
// (the smallest row start above its own among all features) begins, or at the last row.
Tensor rows_from_hash_size_cumsum(const Tensor& hash_size_cumsum) {
  const std::vector<int64_t> hash = read_int_list("tbe", "hash_size_cumsum", hash_size_cumsum);
  EMBER_CHECK(hash.size() >= 2, ValueError, kOp, " expected hash_size_cumsum of F + 1 entries, but got ",
              hash.size());
  const int64_t F = static_cast<int64_t>(hash.size()) - 1;
  Tensor rows = empty({F}, DType::Int64);
  for (int64_t f = 0; f < F; ++f) {
    int64_t end = hash[F];
    for (int64_t g = 0; g < F; ++g)
      if (hash[g] > hash[f]) end = std::min(end, hash[g]);
    rows.data<int64_t>()[f] = std::max<int64_t>(end - hash[f], 0);
  }
  return rows;
}

// Tables whose row counts are unknown (FBGEMM's grad_indice_weights op): each feature may read up
// to the end of the buffer, so no index reads outside it.
Tensor rows_to_buffer_end(const Tensor& weights, const Tensor& weights_offsets, const Tensor& D_offsets) {
  const std::vector<int64_t> start = read_int_list("tbe", "weights_offsets", weights_offsets);
  const std::vector<int64_t> d = read_int_list("tbe", "D_offsets", D_offsets);
  EMBER_CHECK(d.size() == start.size() + 1, ValueError, kOp, " expected D_offsets of ", start.size() + 1,
              " entries (one per feature, plus one), but got ", d.size());
  const int64_t F = static_cast<int64_t>(start.size());
  Tensor rows = empty({F}, DType::Int64);
  for (int64_t f = 0; f < F; ++f) {
    const int64_t D = d[f + 1] - d[f];
    rows.data<int64_t>()[f] =
        D > 0 && start[f] >= 0 ? std::max<int64_t>(weights.numel() - start[f], 0) / D : 0;
  }
  return rows;
}

// A per-row start for every feature from its table's first element (row-wise states are unused).
Tensor row_starts_like(const Tensor& rows) {
  const int64_t F = rows.numel();
  Tensor hash = empty({F + 1}, DType::Int64);
  int64_t at = 0;
  for (int64_t f = 0; f < F; ++f) {
    hash.data<int64_t>()[f] = at;
    at += rows.data<int64_t>()[f];
  }
  hash.data<int64_t>()[F] = at;
  return hash;
}

std::optional<Tensor> weights_or_none(const Tensor& indice_weights) {
  return indice_weights.defined() && indice_weights.numel() > 0 ? std::optional<Tensor>(indice_weights)
                                                                : std::nullopt;
}

}  // namespace

// FBGEMM's CPU forward ops, on the same kernels as ember.tbe (Note [table-batched embeddings]).
Tensor split_embedding_codegen_forward_cpu(const Tensor& weights, const Tensor& weights_offsets,
                                           const Tensor& D_offsets, int64_t total_D,
                                           const Tensor& hash_size_cumsum, const Tensor& indices,
                                           const Tensor& offsets, int64_t pooling_mode,
                                           const Tensor& indice_weights, int64_t output_dtype) {
  Tensor out = tbe_forward(weights, weights_offsets, D_offsets, rows_from_hash_size_cumsum(hash_size_cumsum),
                           hash_size_cumsum, indices, offsets, pooling_mode, weights_or_none(indice_weights),
                           std::nullopt, output_dtype);
  EMBER_CHECK(pooling_mode == 2 || out.size(1) == total_D, ValueError, kOp,
              " expected total_D = ", out.size(1), " (the sum of the features' dims), but got ", total_D);
  return out;
}

Tensor split_embedding_nobag_codegen_forward_cpu(const Tensor& weights, const Tensor& weights_offsets,
                                                 int64_t D, const Tensor& hash_size_cumsum,
                                                 const Tensor& indices, const Tensor& offsets,
                                                 int64_t output_dtype) {
  const int64_t F = hash_size_cumsum.numel() - 1;
  EMBER_CHECK(F >= 1 && D >= 0, ValueError, kOp,
              " expected hash_size_cumsum of F + 1 >= 2 entries and D >= 0");
  Tensor d_offsets = empty({F + 1}, DType::Int64);
  for (int64_t f = 0; f <= F; ++f) d_offsets.data<int64_t>()[f] = f * D;
  return tbe_forward(weights, weights_offsets, d_offsets, rows_from_hash_size_cumsum(hash_size_cumsum),
                     hash_size_cumsum, indices, offsets, 2, std::nullopt, std::nullopt, output_dtype);
}

Tensor split_embedding_codegen_grad_indice_weights_cpu(const Tensor& grad_output, const Tensor& weights,
                                                       const Tensor& weights_offsets, const Tensor& D_offsets,
                                                       const Tensor& indices, const Tensor& offsets,
                                                       const Tensor& feature_requires_grad) {
  const Tensor rows = rows_to_buffer_end(weights, weights_offsets, D_offsets);
  Tensor grad = tbe_per_sample_weights_backward(grad_output, weights, weights_offsets, D_offsets, rows,
                                                row_starts_like(rows), indices, offsets, 0, std::nullopt);
  if (feature_requires_grad.defined() && feature_requires_grad.numel() > 0) {
    // positions of features that need no gradient get 0, as FBGEMM's op gives them
    const std::vector<int64_t> need = read_int_list("tbe", "feature_requires_grad", feature_requires_grad);
    const std::vector<int64_t> off = read_int_list("tbe", "offsets", offsets);
    const int64_t F = rows.numel(), B = (static_cast<int64_t>(off.size()) - 1) / F;
    EMBER_CHECK(static_cast<int64_t>(need.size()) == F, ValueError, kOp,
                " expected feature_requires_grad of ", F, " entries, but got ", need.size());
    float* g = grad.data<float>();
    for (int64_t f = 0; f < F; ++f)
      if (!need[f]) std::fill(g + off[f * B], g + off[(f + 1) * B], 0.0f);
  }
  return grad;
}

}  // namespace ember

namespace ember {

namespace {

// Modes 4-6 are FBGEMM's "V2" kernels of IGNORE, WARNING and FATAL; NONE (3) checks as FATAL.
enum class Repair { Fatal, Warning, Ignore };
Repair repair_of(int64_t mode) {
  switch (mode) {
    case 0:
    case 3:
    case 6: return Repair::Fatal;
    case 1:
    case 5: return Repair::Warning;
    case 2:
    case 4: return Repair::Ignore;
    default:
      throw ValueError(std::string("[bounds_check_indices] expected a BoundsCheckMode in [0, 6], but got ") +
                       std::to_string(mode));
  }
}

template <typename I, typename O>
void check_and_repair(const std::vector<int64_t>& rows, const std::vector<int64_t>& bag_start, I* idx,
                      int64_t n, O* off, int64_t nbags, float* weights, Repair repair, int64_t* warnings) {
  const char* op = "[bounds_check_indices]";
  auto fail = [&](const std::string& what) {
    if (repair == Repair::Fatal) throw IndexError(std::string(op) + " " + what);
    ++*warnings;
  };
  if (nbags >= 0 && off[0] != 0) {
    fail("expected offsets[0] to be 0, but got " + std::to_string(static_cast<int64_t>(off[0])));
    off[0] = 0;
  }
  for (int64_t j = 0; j < nbags; ++j) {
    const int64_t lo = static_cast<int64_t>(off[j]), hi = static_cast<int64_t>(off[j + 1]);
    if (hi < lo || hi > n) {
      fail("expected offsets never to decrease and to be at most len(indices) = " + std::to_string(n) +
           ", but bag " + std::to_string(j) + " runs from " + std::to_string(lo) + " to " +
           std::to_string(hi));
      off[j + 1] = static_cast<O>(std::clamp(hi, lo, n));
    }
  }
  // feature of bag j: the last f with bag_start[f] <= j
  int64_t f = 0;
  const int64_t F = static_cast<int64_t>(rows.size());
  for (int64_t j = 0; j < nbags; ++j) {
    while (f + 1 < F && bag_start[f + 1] <= j) ++f;
    for (int64_t i = static_cast<int64_t>(off[j]); i < static_cast<int64_t>(off[j + 1]); ++i) {
      const int64_t k = static_cast<int64_t>(idx[i]);
      if (static_cast<uint64_t>(k) < static_cast<uint64_t>(rows[f])) continue;
      fail("index out of range: expected every index of feature " + std::to_string(f) + " in [0, " +
           std::to_string(rows[f]) + "), but its bag " + std::to_string(j - bag_start[f]) + " (offsets[" +
           std::to_string(j) + "]) holds " + std::to_string(k) + " (indices[" + std::to_string(i) + "])");
      idx[i] = 0;
      if (weights) weights[i] = 0.0f;
    }
  }
}

}  // namespace

std::tuple<> bounds_check_indices(const Tensor& rows_per_table, const Tensor& indices, const Tensor& offsets,
                                  int64_t bounds_check_mode, const Tensor& warning,
                                  const std::optional<Tensor>& weights,
                                  const std::optional<Tensor>& B_offsets, int64_t max_B,
                                  const std::optional<Tensor>& b_t_map, int64_t info_B_num_bits,
                                  int64_t info_B_mask, int64_t bounds_check_version, bool prefetch_pipeline) {
  // max_B, b_t_map, info_B_*, bounds_check_version and prefetch_pipeline choose among FBGEMM's GPU
  // kernels; the one CPU check here needs none of them.
  (void)max_B, (void)b_t_map, (void)info_B_num_bits, (void)info_B_mask, (void)bounds_check_version,
      (void)prefetch_pipeline;
  const char* op = "[bounds_check_indices]";
  const Repair repair = repair_of(bounds_check_mode);
  const std::vector<int64_t> rows = read_int_list("tbe", "rows_per_table", rows_per_table);
  const int64_t F = static_cast<int64_t>(rows.size());
  EMBER_CHECK(F > 0, ValueError, op, " expected rows for at least one feature, but got none");
  for (const Tensor* t : {&indices, &offsets}) {
    EMBER_CHECK(
        t->dim() == 1 && t->is_contiguous() && (t->dtype() == DType::Int32 || t->dtype() == DType::Int64),
        TypeError, op,
        " expected contiguous 1-D int32 or int64 indices and offsets (updated in place), but got ", t->dim(),
        "-D ", dtype_name(t->dtype()));
  }
  EMBER_CHECK(warning.dtype() == DType::Int64 && warning.numel() == 1, TypeError, op,
              " expected a one-element int64 warning counter, but got ", dtype_name(warning.dtype()), " of ",
              warning.numel());
  const int64_t nbags = offsets.numel() - 1;
  EMBER_CHECK(nbags >= 0, IndexError, op, " expected offsets of F·B + 1 entries, but got none");
  std::vector<int64_t> bag_start(static_cast<size_t>(F), 0);
  if (B_offsets.has_value()) {  // VBE: feature f's bags start at B_offsets[f]
    const std::vector<int64_t> b = read_int_list("tbe", "B_offsets", *B_offsets);
    EMBER_CHECK(static_cast<int64_t>(b.size()) == F + 1 && b[0] == 0 && b[F] == nbags, ValueError, op,
                " expected B_offsets of ", F + 1, " entries from 0 to ", nbags, " bags");
    for (int64_t f = 0; f < F; ++f) {
      EMBER_CHECK(b[f] <= b[f + 1], ValueError, op, " expected B_offsets never to decrease");
      bag_start[f] = b[f];
    }
  } else {
    EMBER_CHECK(nbags % F == 0, ValueError, op, " expected offsets of F·B + 1 entries for F = ", F,
                " features, but got ", nbags + 1);
    for (int64_t f = 0; f < F; ++f) bag_start[f] = f * (nbags / F);
  }
  float* w = nullptr;
  if (weights.has_value()) {
    EMBER_CHECK(
        weights->dtype() == DType::Float32 && weights->is_contiguous() && weights->numel() == indices.numel(),
        TypeError, op, " expected contiguous float32 weights like indices, but got ",
        dtype_name(weights->dtype()), " of ", weights->numel());
    w = weights->data<float>();
  }
  // FBGEMM's in-place outputs (the repair and its count): refused up front if read-only (Note
  // [read-only storage]), even when nothing needs repair.
  for (const Tensor* t : {&indices, &offsets, &warning}) check_writable(*t);
  if (weights.has_value()) check_writable(*weights);
  int64_t* warnings = warning.data<int64_t>();
  auto run = [&](auto* idx, auto* off) {
    check_and_repair(rows, bag_start, idx, indices.numel(), off, nbags, w, repair, warnings);
  };
  if (indices.dtype() == DType::Int32) {
    if (offsets.dtype() == DType::Int32)
      run(indices.data<int32_t>(), offsets.data<int32_t>());
    else
      run(indices.data<int32_t>(), offsets.data<int64_t>());
  } else {
    if (offsets.dtype() == DType::Int32)
      run(indices.data<int64_t>(), offsets.data<int32_t>());
    else
      run(indices.data<int64_t>(), offsets.data<int64_t>());
  }
  return {};
}

}  // namespace ember
