#pragma once
// Helpers the quantized kernels share (src/ops/quantization/quantized.cpp), and the kernels the
// generic ops declared with quantized="<name>" reach for a quantized input
// (src/ops/quantization/quantized_kernels.cpp; Note [quantized tensors] in ember/quantizer.h).
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "ember/tensor.h"

namespace ember {

struct QParams {
  double scale;  // PyTorch keeps it in float64; the kernels round it to float32
  int64_t zero_point;
};
// FBGEMM's ChooseQuantizationParams: the scale and zero point that map [min, max] (widened to
// hold 0) onto [qmin, qmax], halved by reduce_range (Note [quantize arithmetic]).
QParams choose_qparams(float min, float max, int64_t qmin, int64_t qmax, bool reduce_range);
// choose_qparams over x's own range (an empty x: [0, 0]), as the dynamic quantizers take it.
QParams range_qparams(const Tensor& x, int64_t qmin, int64_t qmax, bool reduce_range);
// quantize_per_tensor with the product rounded to float32 before the zero point is added, the
// form ATen's own loops use (Note [quantize arithmetic]); quantize_per_tensor fuses the two.
Tensor quantize_rounded_product(const Tensor& self, double scale, int64_t zero_point, DType dtype);
// An empty per-tensor quantized result of `dtype`, its scale and zero point checked as
// quantize_per_tensor checks them (errors name `op`).
Tensor empty_per_tensor(const char* op, const IntList& sizes, double scale, int64_t zero_point, DType dtype);

namespace quantized {
Tensor relu(const Tensor& self, const std::optional<Tensor>& out);
Tensor relu6(const Tensor& self);
Tensor hardtanh(const Tensor& self, double min_val, double max_val);
Tensor sigmoid(const Tensor& self, const std::optional<Tensor>& out);
Tensor tanh(const Tensor& self, const std::optional<Tensor>& out);
std::tuple<Tensor, Tensor> max_pool_with_indices(const Tensor& self, const IntList& kernel_size,
                                                 const IntList& stride, const IntList& padding,
                                                 const IntList& dilation, bool ceil_mode);
std::tuple<Tensor, Tensor> adaptive_max_pool(const Tensor& self, const IntList& output_size);
Tensor avg_pool(const Tensor& self, const IntList& kernel_size, const IntList& stride, const IntList& padding,
                bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override);
Tensor adaptive_avg_pool(const Tensor& self, const IntList& output_size);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim);
Tensor flip(const Tensor& self, const IntList& dims);
Tensor repeat(const Tensor& self, const IntList& repeats);
Tensor mean(const Tensor& self, const std::optional<IntList>& dim, bool keepdim, std::optional<DType> dtype);
}  // namespace quantized

}  // namespace ember
