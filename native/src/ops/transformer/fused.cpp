// The transformer encoder's fused inference kernels (PyTorch's "BetterTransformer" path, used by
// ember/nn/_fast_path.py): attention over packed sequences and a residual add fused with
// LayerNorm. Inference only: they have no derivative, and the fast path runs them only when
// nothing requires grad. Kernels: backend/cpu/transformer_kernels.cpp.
#include <cstdint>

#include "ember/error.h"
#include "ember/ops.h"
#include "ops/dims.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<PackedAttentionFn> packed_attention_stub("packed_attention");
DispatchStub<AddLayerNormFn> add_layer_norm_stub("add_layer_norm");

namespace {

void check_float(const char* op, const char* name, const Tensor& t, DType dtype) {
  EMBER_CHECK(t.dtype() == DType::Float32 || t.dtype() == DType::Float64, TypeError, "[", op, "] expected ",
              name, " to be float32 or float64, but got ", dtype_name(t.dtype()));
  EMBER_CHECK(t.dtype() == dtype, TypeError, "[", op, "] expected ", name, " to have dtype ",
              dtype_name(dtype), ", but got ", dtype_name(t.dtype()));
}

// The rows of `t` a kernel may read: 2-D with unit column stride (a column slice of a wider
// matrix, such as Q out of the packed QKV product, needs no copy).
Tensor rows_view(const Tensor& t) {
  return t.stride(1) == 1 && t.stride(0) >= t.size(1) ? t : t.contiguous();
}

// offsets: int64 [N + 1], starting at 0, non-decreasing, ending at `rows` (all checked, so the
// kernel never reads outside the packed matrix).
Tensor checked_offsets(const char* name, const Tensor& offsets, int64_t rows) {
  EMBER_CHECK(offsets.dim() == 1 && offsets.size(0) >= 1 && offsets.dtype() == DType::Int64, ValueError,
              "[_packed_attention] expected ", name, " to be a non-empty 1-D int64 tensor, but got ",
              dtype_name(offsets.dtype()), " of shape ", dims::str(offsets.sizes()));
  const Tensor c = offsets.contiguous();
  const int64_t* o = c.data<int64_t>();
  EMBER_CHECK(o[0] == 0, ValueError, "[_packed_attention] expected ", name, " to start at 0, but got ", o[0]);
  for (int64_t i = 1; i < c.numel(); ++i) {
    EMBER_CHECK(o[i] >= o[i - 1], ValueError, "[_packed_attention] expected ", name,
                " to be non-decreasing, but got ", o[i - 1], " then ", o[i]);
  }
  EMBER_CHECK(o[c.numel() - 1] == rows, ValueError, "[_packed_attention] expected ", name, " to end at ",
              rows, " (the number of packed rows), but got ", o[c.numel() - 1]);
  return c;
}

}  // namespace

Tensor _packed_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                         const Tensor& query_offsets, const Tensor& key_offsets, int64_t num_heads,
                         double scale) {
  const char* op = "_packed_attention";
  EMBER_CHECK(query.dim() == 2 && key.dim() == 2 && value.dim() == 2, ValueError, "[", op,
              "] expected 2-D packed query, key and value, but got ", query.dim(), "-D, ", key.dim(),
              "-D and ", value.dim(), "-D");
  check_float(op, "query", query, query.dtype());
  check_float(op, "key", key, query.dtype());
  check_float(op, "value", value, query.dtype());
  const int64_t embed = query.size(1);
  EMBER_CHECK(key.size(1) == embed && value.size(1) == embed, ValueError, "[", op,
              "] expected query, key and value to have the same number of features, but got ", embed, ", ",
              key.size(1), " and ", value.size(1));
  EMBER_CHECK(key.size(0) == value.size(0), ValueError, "[", op,
              "] expected key and value to have as many rows, "
              "but got ",
              key.size(0), " and ", value.size(0));
  EMBER_CHECK(num_heads > 0 && embed % num_heads == 0, ValueError, "[", op, "] expected num_heads to divide ",
              embed, ", but got ", num_heads);
  EMBER_CHECK(query.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              query.device().str());
  const Tensor qo = checked_offsets("query_offsets", query_offsets, query.size(0));
  const Tensor ko = checked_offsets("key_offsets", key_offsets, key.size(0));
  EMBER_CHECK(qo.numel() == ko.numel(), ValueError, "[", op,
              "] expected query_offsets and key_offsets to describe "
              "as many sequences, but got ",
              qo.numel() - 1, " and ", ko.numel() - 1);
  Tensor out = zeros({query.size(0), embed}, query.dtype(), query.device());
  if (out.numel() > 0 && key.size(0) > 0) {
    packed_attention_stub.get(query.device().type)(out, rows_view(query), rows_view(key), rows_view(value),
                                                   qo, ko, num_heads, scale);
  }
  return out;
}

Tensor _add_layer_norm(const Tensor& input, const std::optional<Tensor>& residual, const Tensor& weight,
                       const Tensor& bias, double eps) {
  const char* op = "_add_layer_norm";
  EMBER_CHECK(input.dim() == 2, ValueError, "[", op, "] expected a 2-D input, but got ", input.dim(), "-D");
  check_float(op, "input", input, input.dtype());
  check_float(op, "weight", weight, input.dtype());
  check_float(op, "bias", bias, input.dtype());
  const int64_t features = input.size(1);
  EMBER_CHECK(weight.dim() == 1 && weight.size(0) == features && bias.dim() == 1 && bias.size(0) == features,
              ValueError, "[", op, "] expected weight and bias of shape [", features, "], but got ",
              dims::str(weight.sizes()), " and ", dims::str(bias.sizes()));
  EMBER_CHECK(input.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              input.device().str());
  Tensor out = input.clone();  // (a fresh contiguous copy)
  if (residual.has_value()) {
    check_float(op, "residual", *residual, input.dtype());
    EMBER_CHECK(residual->sizes() == input.sizes(), ValueError, "[", op, "] expected residual of shape ",
                dims::str(input.sizes()), ", but got ", dims::str(residual->sizes()));
  }
  if (out.numel() > 0) {
    const Tensor r = residual.has_value() ? residual->contiguous() : Tensor();
    add_layer_norm_stub.get(input.device().type)(out, r, weight.contiguous(), bias.contiguous(), eps);
  }
  return out;
}

}  // namespace ember
