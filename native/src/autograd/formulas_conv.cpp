// The bodies of formulas_conv.h's derivative helpers: here, not in the header, so that the generated
// autograd_ops.cpp, which includes it, does not compile them again.
#include "autograd/formulas_conv.h"

#include <array>
#include <vector>

namespace ember::autograd {

namespace conv_detail {

// The weight gradient of the regular convolution x -> gy (weight [O, C/groups, *k]), as
// convolutions: per group, x with batch and channels exchanged, correlated with gy as the kernel
// (the roles of stride and dilation exchange too), cut to the kernel size.
static Tensor weight_grad(const Tensor& x, const Tensor& gy, const IntList& kernel, const IntList& stride,
                          const IntList& padding, const IntList& dilation, int64_t groups) {
  const int64_t cg = x.size(1) / groups, og = gy.size(1) / groups, n = x.dim() - 2;
  std::vector<Tensor> parts;
  for (int64_t g = 0; g < groups; ++g) {
    const Tensor xg = autograd::transpose(autograd::narrow(x, 1, g * cg, cg), 0, 1);   // [Cg, N, *in]
    const Tensor gg = autograd::transpose(autograd::narrow(gy, 1, g * og, og), 0, 1);  // [Og, N, *out]
    Tensor y =
        autograd::convolution(xg, gg, std::nullopt, dilation, padding, stride, false, IntList(n, 0), 1);
    for (int64_t i = 0; i < n; ++i) y = autograd::narrow(y, 2 + i, 0, kernel[i]);
    parts.push_back(autograd::transpose(y, 0, 1));  // [Og, Cg, *k]
  }
  return groups == 1 ? parts[0] : autograd::cat(parts, 0);
}

static IntList per_dim(const IntList& v, int64_t n) {
  return v.size() == 1 ? IntList(n, v[0]) : v;
}

}  // namespace conv_detail

std::vector<Tensor> convolution_grads(const std::vector<Tensor>& grads, const Tensor& input,
                                      const Tensor& weight, const Tensor& bias, const IntList& stride,
                                      const IntList& padding, const IntList& dilation, bool transposed,
                                      const IntList& output_padding, int64_t groups,
                                      const std::array<bool, 3>& mask) {
  const Tensor& grad = grads.at(0);
  if (!grad.defined()) return {Tensor(), Tensor(), Tensor()};
  if (fused_backward_ok()) {
    auto [gi, gw, gb] =
        autograd::convolution_backward(grad, input, weight, stride, padding, dilation, transposed,
                                       output_padding, groups, mask[0], mask[1], mask[2] && bias.defined());
    return {gi, gw, gb};
  }
  const int64_t n = input.dim() - 2;
  const IntList s = conv_detail::per_dim(stride, n), p = conv_detail::per_dim(padding, n),
                d = conv_detail::per_dim(dilation, n);
  const IntList kernel(weight.sizes().begin() + 2, weight.sizes().end());
  Tensor gi, gw, gb;
  if (mask[0]) {
    if (!transposed) {  // the transposed convolution, with the output padding that restores the size
      IntList extra(n);
      for (int64_t i = 0; i < n; ++i)
        extra[i] =
            input.size(2 + i) - ((grad.size(2 + i) - 1) * s[i] - 2 * p[i] + d[i] * (kernel[i] - 1) + 1);
      gi = autograd::convolution(grad, weight, std::nullopt, s, p, d, true, extra, groups);
    } else {
      gi = autograd::convolution(grad, weight, std::nullopt, s, p, d, false, IntList(n, 0), groups);
    }
  }
  if (mask[1]) {
    gw = transposed ? conv_detail::weight_grad(grad, input, kernel, s, p, d, groups)
                    : conv_detail::weight_grad(input, grad, kernel, s, p, d, groups);
  }
  if (mask[2] && bias.defined()) {
    IntList reduce{0};
    for (int64_t i = 2; i < grad.dim(); ++i) reduce.push_back(i);
    gb = autograd::sum(grad, reduce, false, std::nullopt);
  }
  return {gi, gw, gb};
}

Tensor convolution_jvp(const Tensor& input, const Tensor& input_t, const Tensor& weight,
                       const Tensor& weight_t, const Tensor& bias_t, const IntList& stride,
                       const IntList& padding, const IntList& dilation, bool transposed,
                       const IntList& output_padding, int64_t groups) {
  Tensor t;
  if (input_t.defined()) {
    t = autograd::convolution(input_t, weight, std::nullopt, stride, padding, dilation, transposed,
                              output_padding, groups);
  }
  if (weight_t.defined()) {
    t = add_tangents(t, autograd::convolution(input, weight_t, std::nullopt, stride, padding, dilation,
                                              transposed, output_padding, groups));
  }
  if (bias_t.defined()) {
    const Tensor y = autograd::convolution(input, weight, std::nullopt, stride, padding, dilation, transposed,
                                           output_padding, groups);
    IntList view_shape(y.dim(), 1);
    view_shape[1] = bias_t.numel();
    t = add_tangents(t, autograd::expand(autograd::reshape(bias_t, view_shape), y.sizes()));
  }
  return t;
}

}  // namespace ember::autograd
