// Embedding lookups and bags: PyTorch's aten::embedding, embedding_dense_backward,
// embedding_renorm_, _embedding_bag and its two backward ops, behind
// ember.nn.functional.embedding / embedding_bag. Kernels: backend/cpu/embedding_kernels.cpp.
//
// Note [embedding bags]: a bag is a run of the 1-D `indices`; the ops turn `offsets` into the
// bounds the kernels read, checking them first so no kernel reads outside `indices`:
//
//   indices  [ 7 2 9 | 4 |   | 5 5 ]        N = 7 row numbers (int32 or int64)
//   offsets  [ 0       3   4   4 ]          B = 4 bag starts (+ the end with include_last_offset)
//   bounds   [ 0 3 4 4 7 ]                  int64 [B + 1]: bag b is indices[bounds[b], bounds[b + 1])
//
// offsets[0] is 0, offsets never decrease, and none exceeds N; with include_last_offset the last
// offset ends the last bag (indices after it belong to no bag), otherwise the last bag runs to
// N. Index values are checked by the kernels as they read them, negative ones too, with
// PyTorch's errors: embedding raises IndexError "index out of range in self", a bag's member
// RuntimeError "Index i of input takes value k which is not in the valid range [0, rows)"
// (Note [negative indices] in src/ops/indexing/indexing.cpp). padding_idx (-1: none)
// names a row that bags leave out: it adds nothing, is not counted by mean, gets no gradient.
#include <cstdint>
#include <string>
#include <tuple>

#include "ember/error.h"
#include "ember/ops.h"
#include "ops/dims.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<EmbeddingBagFn> embedding_bag_stub("embedding_bag");
DispatchStub<EmbeddingBackwardFn> embedding_backward_stub("embedding_backward");
DispatchStub<EmbeddingWeightsBackwardFn> embedding_weights_backward_stub("embedding_weights_backward");
DispatchStub<EmbeddingRenormFn> embedding_renorm_stub("embedding_renorm");

namespace {

void check_index_dtype(const char* op, const char* arg, int position, const Tensor& t) {
  EMBER_CHECK(t.dtype() == DType::Int64 || t.dtype() == DType::Int32, Error, "Expected tensor for argument #",
              position, " '", arg, "' to have one of the following scalar types: Long, Int; but got ",
              dtype_name(t.dtype()), " instead (while checking arguments for ", op, ")");
}

bool is_float(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16;
}

void check_table(const char* op, const char* name, const Tensor& t, bool floating) {
  EMBER_CHECK(t.dim() == 2, Error, "[", op, "] '", name, "' must be 2-D, but got ", t.dim(), "-D");
  EMBER_CHECK(!floating || is_float(t.dtype()), TypeError, "[", op,
              "] expected a float16, bfloat16, float32 or ", "float64 ", name, ", but got ",
              dtype_name(t.dtype()));
  EMBER_CHECK(t.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              t.device().str());
}

// The table as the kernels read it: rows of unit column stride (a copy only for a transposed table).
Tensor rows_of(const Tensor& t) {
  return t.size(1) <= 1 || t.stride(1) == 1 ? t : t.contiguous();
}

Tensor flat_indices(const Tensor& indices) {
  return reshape(indices.contiguous(), {indices.numel()});
}

template <typename I>
Tensor bounds_from(const Tensor& offsets, int64_t n, bool include_last_offset) {
  const I* o = offsets.data<I>();
  const int64_t m = offsets.numel();
  EMBER_CHECK(!include_last_offset || m >= 1, Error,
              "[embedding_bag] include_last_offset: number of offsets should be at least 1, but got 0");
  const int64_t bags = include_last_offset ? m - 1 : m;
  Tensor bounds = empty({bags + 1}, DType::Int64);
  int64_t* b = bounds.data<int64_t>();
  if (m > 0)
    EMBER_CHECK(o[0] == 0, Error,
                "[embedding_bag] offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
                "start from position 0. However, got ",
                static_cast<int64_t>(o[0]));
  for (int64_t j = 0; j < m; ++j) {
    const int64_t v = static_cast<int64_t>(o[j]);
    EMBER_CHECK((j == 0 || v >= static_cast<int64_t>(o[j - 1])) && v <= n, Error,
                "[embedding_bag] offsets must be non-decreasing and at most the input length ", n,
                ", but got offsets[", j, "] = ", v, (j > 0 ? " after " : ""),
                (j > 0 ? std::to_string(static_cast<int64_t>(o[j - 1])) : std::string()));
    if (j <= bags) b[j] = v;
  }
  if (!include_last_offset) b[bags] = n;
  return bounds;
}

// int64 [B + 1] bag bounds from checked offsets (Note [embedding bags]).
Tensor bag_bounds(const Tensor& offsets, int64_t n, bool include_last_offset) {
  EMBER_CHECK(offsets.dim() == 1, ValueError, "[embedding_bag] offsets has to be a 1D Tensor, but got ",
              offsets.dim(), "-D");
  check_index_dtype("embedding_bag", "offsets", 1, offsets);
  const Tensor c = offsets.contiguous();
  return c.dtype() == DType::Int32 ? bounds_from<int32_t>(c, n, include_last_offset)
                                   : bounds_from<int64_t>(c, n, include_last_offset);
}

EmbeddingMode mode_of(const char* op, int64_t mode) {
  EMBER_CHECK(mode >= 0 && mode <= 2, ValueError, "[", op,
              "] expected mode 0 (sum), 1 (mean) or 2 (max), but got ", mode);
  return static_cast<EmbeddingMode>(mode);
}

void check_padding(const char* op, int64_t padding_idx, int64_t rows) {
  EMBER_CHECK(padding_idx >= -1 && padding_idx < rows, ValueError, "[", op,
              "] expected padding_idx in [0, num_embeddings) or -1 (none), but got ", padding_idx,
              " with num_embeddings ", rows);
}

// The gradient as [rows, D] of the table's dtype (the engine may hand another float dtype).
Tensor grad_rows(const char* op, const Tensor& grad, int64_t rows, int64_t width, DType dtype) {
  EMBER_CHECK(grad.numel() == rows * width && (grad.dim() == 0 || grad.size(-1) == width), ValueError, "[",
              op, "] expected a gradient of ", rows, " rows of ", width, " values, but got shape ",
              dims::str(grad.sizes()));
  const Tensor g = grad.dtype() == dtype ? grad : to_dtype(grad, dtype, false);
  return reshape(g.contiguous(), {rows, width});
}

EmbeddingBags make_bags(const Tensor& indices, const Tensor& bounds, const std::optional<Tensor>& weights,
                        EmbeddingMode mode, int64_t padding_idx) {
  EmbeddingBags bags;
  bags.indices = flat_indices(indices);
  bags.bounds = bounds;
  if (weights && weights->defined()) bags.weights = flat_indices(*weights);
  bags.mode = mode;
  bags.padding_idx = padding_idx;
  return bags;
}

}  // namespace

Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx, bool scale_grad_by_freq,
                 bool sparse) {
  (void)padding_idx;  // the forward returns the padding row as it is; only its gradient is dropped
  (void)scale_grad_by_freq;
  check_index_dtype("embedding", "indices", 1, indices);
  check_table("embedding", "weight", weight, false);
  EMBER_CHECK(!sparse, Error, "[embedding] sparse=True: Ember has no sparse tensors; use sparse=False");
  IntList sizes = indices.sizes();
  sizes.push_back(weight.size(1));
  Tensor out = empty(sizes, weight.dtype(), weight.device());
  const int64_t n = indices.numel();
  if (n > 0) {
    embedding_bag_stub.get(weight.device().type)(
        reshape(out, {n, weight.size(1)}), Tensor(), rows_of(weight),
        make_bags(indices, Tensor(), std::nullopt, EmbeddingMode::Sum, -1));
  }
  return out;
}

Tensor embedding_dense_backward(const Tensor& grad_output, const Tensor& indices, int64_t num_weights,
                                int64_t padding_idx, bool scale_grad_by_freq) {
  check_index_dtype("embedding_backward", "indices", 1, indices);
  EMBER_CHECK(is_float(grad_output.dtype()), TypeError,
              "[embedding_dense_backward] expected a floating-point ", "gradient, but got ",
              dtype_name(grad_output.dtype()));
  EMBER_CHECK(num_weights >= 0, ValueError, "[embedding_dense_backward] expected num_weights >= 0, but got ",
              num_weights);
  EMBER_CHECK(grad_output.dim() == indices.dim() + 1, ValueError, "[embedding_dense_backward] expected a ",
              indices.dim() + 1, "-D gradient for ", indices.dim(), "-D indices, but got ", grad_output.dim(),
              "-D");
  const int64_t width = grad_output.size(-1), n = indices.numel();
  const Tensor g = grad_rows("embedding_dense_backward", grad_output, n, width, grad_output.dtype());
  Tensor grad_table = zeros({num_weights, width}, grad_output.dtype(), grad_output.device());
  if (n > 0) {
    embedding_backward_stub.get(grad_output.device().type)(
        grad_table, g, make_bags(indices, Tensor(), std::nullopt, EmbeddingMode::Sum, padding_idx), Tensor(),
        scale_grad_by_freq);
  }
  return grad_table;
}

Tensor embedding_renorm_(const Tensor& self, const Tensor& indices, double max_norm, double norm_type) {
  check_index_dtype("embedding_renorm_", "indices", 1, indices);
  check_table("embedding_renorm_", "self", self, true);
  EMBER_CHECK(max_norm >= 0, ValueError, "[embedding_renorm_] expected max_norm >= 0, but got ", max_norm);
  self.bump_version();
  const Tensor t = self.is_contiguous() ? self : self.contiguous();
  if (indices.numel() > 0)
    embedding_renorm_stub.get(self.device().type)(t, flat_indices(indices), max_norm, norm_type);
  if (!t.is_same(self)) copy_same_shape(self, t);
  return self;
}

std::tuple<Tensor, Tensor> _embedding_bag(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                                          bool scale_grad_by_freq, int64_t mode, bool sparse,
                                          const std::optional<Tensor>& per_sample_weights,
                                          bool include_last_offset, int64_t padding_idx) {
  (void)scale_grad_by_freq;  // a backward-only option
  const char* op = "embedding_bag";
  check_table(op, "weight", weight, true);
  check_index_dtype(op, "indices", 1, indices);
  EMBER_CHECK(indices.dim() == 1, ValueError, "[embedding_bag] input has to be a 1D Tensor, but got ",
              indices.dim(), "-D");
  const EmbeddingMode m = mode_of(op, mode);
  EMBER_CHECK(!sparse, Error, "[embedding_bag] sparse=True: Ember has no sparse tensors; use sparse=False");
  check_padding(op, padding_idx, weight.size(0));
  if (per_sample_weights && per_sample_weights->defined()) {
    const Tensor& w = *per_sample_weights;
    EMBER_CHECK(m == EmbeddingMode::Sum, NotImplementedError,
                "embedding_bag: per_sample_weights was not None. per_sample_weights is only supported for "
                "mode='sum' (got mode='",
                m == EmbeddingMode::Mean ? "mean" : "max", "'). Please open a feature request on GitHub.");
    EMBER_CHECK(w.sizes() == indices.sizes(), ValueError, "embedding_bag: If per_sample_weights (",
                dims::str(w.sizes()), ") is not None, then it must have the same shape as the input (",
                dims::str(indices.sizes()), ")");
    EMBER_CHECK(w.dtype() == weight.dtype(), TypeError, "[embedding_bag] expected per_sample_weights of the ",
                "weight's dtype ", dtype_name(weight.dtype()), ", but got ", dtype_name(w.dtype()));
  }
  const Tensor bounds = bag_bounds(offsets, indices.numel(), include_last_offset);
  const int64_t bags = bounds.numel() - 1, width = weight.size(1);
  Tensor out = empty({bags, width}, weight.dtype(), weight.device());
  Tensor max_indices = empty({m == EmbeddingMode::Max ? bags : 0, width}, DType::Int64, weight.device());
  if (bags > 0) {
    embedding_bag_stub.get(weight.device().type)(
        out, max_indices, rows_of(weight), make_bags(indices, bounds, per_sample_weights, m, padding_idx));
  }
  return {out, max_indices};
}

Tensor _embedding_bag_backward(const Tensor& grad_output, const Tensor& indices, const Tensor& offsets,
                               const Tensor& max_indices, int64_t num_weights, bool scale_grad_by_freq,
                               int64_t mode, const std::optional<Tensor>& per_sample_weights,
                               bool include_last_offset, int64_t padding_idx) {
  const char* op = "embedding_bag_backward";
  check_index_dtype(op, "indices", 1, indices);
  EMBER_CHECK(indices.dim() == 1, ValueError, "[", op, "] expected 1-D indices, but got ", indices.dim(),
              "-D");
  EMBER_CHECK(is_float(grad_output.dtype()) && grad_output.dim() == 2, TypeError, "[", op,
              "] expected a 2-D floating-point gradient, but got ", dtype_name(grad_output.dtype()),
              " of shape ", dims::str(grad_output.sizes()));
  EMBER_CHECK(num_weights >= 0, ValueError, "[", op, "] expected num_weights >= 0, but got ", num_weights);
  const EmbeddingMode m = mode_of(op, mode);
  check_padding(op, padding_idx, num_weights);
  const Tensor bounds = bag_bounds(offsets, indices.numel(), include_last_offset);
  const int64_t bags = bounds.numel() - 1, width = grad_output.size(1);
  const Tensor g = grad_rows(op, grad_output, bags, width, grad_output.dtype());
  Tensor mi;
  if (m == EmbeddingMode::Max) {
    EMBER_CHECK(max_indices.dtype() == DType::Int64 && max_indices.sizes() == g.sizes(), ValueError, "[", op,
                "] expected int64 max_indices of shape ", dims::str(g.sizes()), ", but got ",
                dtype_name(max_indices.dtype()), " of shape ", dims::str(max_indices.sizes()));
    mi = max_indices.contiguous();
  }
  std::optional<Tensor> weights;
  if (per_sample_weights && per_sample_weights->defined()) {
    EMBER_CHECK(per_sample_weights->sizes() == indices.sizes(), ValueError, "[", op,
                "] expected per_sample_weights of the indices' shape ", dims::str(indices.sizes()),
                ", but got ", dims::str(per_sample_weights->sizes()));
    weights = to_dtype(*per_sample_weights, g.dtype(), false);
  }
  Tensor grad_table = zeros({num_weights, width}, g.dtype(), g.device());
  if (bags > 0) {
    embedding_backward_stub.get(g.device().type)(
        grad_table, g, make_bags(indices, bounds, weights, m, padding_idx), mi, scale_grad_by_freq);
  }
  return grad_table;
}

Tensor _embedding_bag_per_sample_weights_backward(const Tensor& grad_output, const Tensor& weight,
                                                  const Tensor& indices, const Tensor& offsets, int64_t mode,
                                                  bool include_last_offset, int64_t padding_idx) {
  const char* op = "embedding_bag_per_sample_weights_backward";
  check_table(op, "weight", weight, true);
  check_index_dtype(op, "indices", 1, indices);
  EMBER_CHECK(indices.dim() == 1, ValueError, "[", op, "] expected 1-D indices, but got ", indices.dim(),
              "-D");
  EMBER_CHECK(mode_of(op, mode) == EmbeddingMode::Sum, NotImplementedError, "[", op,
              "] expected mode 0 (sum): per_sample_weights is only supported for mode='sum', but got mode ",
              mode);
  check_padding(op, padding_idx, weight.size(0));
  const Tensor bounds = bag_bounds(offsets, indices.numel(), include_last_offset);
  const int64_t bags = bounds.numel() - 1;
  EMBER_CHECK(grad_output.dim() == 2, ValueError, "[", op, "] expected a 2-D gradient, but got shape ",
              dims::str(grad_output.sizes()));
  const Tensor g = grad_rows(op, grad_output, bags, weight.size(1), weight.dtype());
  Tensor out = zeros({indices.numel()}, weight.dtype(), weight.device());
  if (bags > 0) {
    embedding_weights_backward_stub.get(weight.device().type)(
        out, g, rows_of(weight), make_bags(indices, bounds, std::nullopt, EmbeddingMode::Sum, padding_idx));
  }
  return out;
}

}  // namespace ember
