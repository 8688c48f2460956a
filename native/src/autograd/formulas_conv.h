#pragma once
// Derivative helpers of `convolution` (DERIVATIVES in native/ops/declarations.py). A plain
// backward calls convolution_backward's kernels; a recorded one (create_graph) composes
// convolutions, which are differentiable again (Note [fused normalization backward] has the idea).
#include <array>
#include <vector>

#include "autograd/formulas.h"

namespace ember::autograd {

std::vector<Tensor> convolution_grads(const std::vector<Tensor>& grads, const Tensor& input,
                                      const Tensor& weight, const Tensor& bias, const IntList& stride,
                                      const IntList& padding, const IntList& dilation, bool transposed,
                                      const IntList& output_padding, int64_t groups,
                                      const std::array<bool, 3>& mask);

// convolution is bilinear in (input, weight) plus the bias
Tensor convolution_jvp(const Tensor& input, const Tensor& input_t, const Tensor& weight,
                       const Tensor& weight_t, const Tensor& bias_t, const IntList& stride,
                       const IntList& padding, const IntList& dilation, bool transposed,
                       const IntList& output_padding, int64_t groups);

}  // namespace ember::autograd
