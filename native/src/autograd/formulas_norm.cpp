// The bodies of formulas_norm.h's derivative helpers: here, not in the header, so that the generated
// autograd_ops.cpp, which includes it, does not compile them again.
#include "autograd/formulas_norm.h"

#include <array>
#include <vector>

namespace ember::autograd {

namespace norm_detail {

static std::optional<Tensor> opt(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}
static Tensor mean_over(const Tensor& t, const IntList& dims) {
  return autograd::mean(t, dims, true, std::nullopt);
}
static Tensor sum_to(const Tensor& t, const IntList& dims, const IntList& shape) {
  return autograd::reshape(autograd::sum(t, dims, false, std::nullopt), shape);
}
// dims [from, ndim)
static IntList dims_from(int64_t from, int64_t ndim) {
  IntList d;
  for (int64_t i = from; i < ndim; ++i) d.push_back(i);
  return d;
}
// d(xhat) for xhat normalized over `dims`: r (dx - mean(dx) - xhat mean(xhat dx)) (RMS: no centering)
static Tensor normalized_tangent(const Tensor& dx, const Tensor& xhat, const Tensor& r, const IntList& dims,
                                 bool center) {
  Tensor t = minus(dx, times(xhat, mean_over(times(xhat, dx), dims)));
  if (center) t = minus(t, mean_over(dx, dims));
  return times(r, t);
}

}  // namespace norm_detail

// ---- layer norm -----------------------------------------------------------------------------------

std::vector<Tensor> layer_norm_grads(const std::vector<Tensor>& grads, const Tensor& input,
                                     const IntList& normalized_shape, const Tensor& weight,
                                     const Tensor& bias, const Tensor& mean, const Tensor& rstd, double eps,
                                     const std::array<bool, 3>& mask) {
  using namespace norm_detail;
  const Tensor& grad = grads.at(0);
  if (!grad.defined()) return {Tensor(), Tensor(), Tensor()};
  if (fused_backward_ok()) {
    auto [gi, gw, gb] = autograd::native_layer_norm_backward(
        grad, input, normalized_shape, mean, rstd, opt(weight), opt(bias), mask[0], mask[1], mask[2]);
    return {gi, gw, gb};
  }
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  const IntList dims = dims_from(input.dim() - k, input.dim()), outer = dims_from(0, input.dim() - k);
  const Tensor centered = minus(input, mean_over(input, dims));
  const Tensor r = autograd::rsqrt(plus(mean_over(times(centered, centered), dims), num(eps)), std::nullopt);
  const Tensor xhat = times(centered, r);
  const Tensor g = weight.defined() ? times(grad, weight) : grad;
  const Tensor gi =
      times(r, minus(minus(g, mean_over(g, dims)), times(xhat, mean_over(times(g, xhat), dims))));
  const Tensor gw =
      mask[1] && weight.defined() ? sum_to(times(grad, xhat), outer, normalized_shape) : Tensor();
  const Tensor gb = mask[2] && bias.defined() ? sum_to(grad, outer, normalized_shape) : Tensor();
  return {gi, gw, gb};
}

Tensor layer_norm_jvp(const Tensor& input, const Tensor& input_t, const Tensor& weight,
                      const Tensor& weight_t, const Tensor& bias_t, const Tensor& mean, const Tensor& rstd,
                      const IntList& normalized_shape) {
  using namespace norm_detail;
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  const IntList dims = dims_from(input.dim() - k, input.dim());
  const Tensor m = autograd::to_dtype(mean, input.dtype(), false),
               r = autograd::to_dtype(rstd, input.dtype(), false);
  const Tensor xhat = times(minus(input, m), r);
  Tensor t;
  if (input_t.defined()) {
    t = normalized_tangent(input_t, xhat, r, dims, true);
    if (weight.defined()) t = times(t, weight);
  }
  if (weight_t.defined()) t = add_tangents(t, times(xhat, weight_t));
  if (bias_t.defined()) t = add_tangents(t, autograd::expand(bias_t, input.sizes()));
  return t;
}

// ---- RMS norm -------------------------------------------------------------------------------------

std::vector<Tensor> rms_norm_grads(const std::vector<Tensor>& grads, const Tensor& input,
                                   const IntList& normalized_shape, const Tensor& weight, const Tensor& rstd,
                                   double eps, const std::array<bool, 2>& mask) {
  using namespace norm_detail;
  const Tensor& grad = grads.at(0);
  if (!grad.defined()) return {Tensor(), Tensor()};
  if (fused_backward_ok()) {
    auto [gi, gw] = autograd::_fused_rms_norm_backward(grad, input, normalized_shape, rstd, opt(weight),
                                                       mask[0], mask[1]);
    return {gi, gw};
  }
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  const IntList dims = dims_from(input.dim() - k, input.dim()), outer = dims_from(0, input.dim() - k);
  const Tensor r = autograd::rsqrt(plus(mean_over(times(input, input), dims), num(eps)), std::nullopt);
  const Tensor xhat = times(input, r);
  const Tensor g = weight.defined() ? times(grad, weight) : grad;
  const Tensor gi = times(r, minus(g, times(xhat, mean_over(times(g, xhat), dims))));
  const Tensor gw =
      mask[1] && weight.defined() ? sum_to(times(grad, xhat), outer, normalized_shape) : Tensor();
  return {gi, gw};
}

Tensor rms_norm_jvp(const Tensor& input, const Tensor& input_t, const Tensor& weight, const Tensor& weight_t,
                    const Tensor& rstd, const IntList& normalized_shape) {
  using namespace norm_detail;
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  const IntList dims = dims_from(input.dim() - k, input.dim());
  const Tensor r = autograd::to_dtype(rstd, input.dtype(), false);
  const Tensor xhat = times(input, r);
  Tensor t;
  if (input_t.defined()) {
    t = normalized_tangent(input_t, xhat, r, dims, false);
    if (weight.defined()) t = times(t, weight);
  }
  if (weight_t.defined()) t = add_tangents(t, times(xhat, weight_t));
  return t;
}

// ---- group norm: statistics per (sample, group), affine per channel -------------------------------

namespace norm_detail {
static Tensor channel_view(const Tensor& t, const Tensor& like) {  // [C] -> [1, C, 1, ...]
  IntList shape(like.dim(), 1);
  shape[1] = like.size(1);
  return autograd::reshape(t, shape);
}
}  // namespace norm_detail

std::vector<Tensor> group_norm_grads(const std::vector<Tensor>& grads, const Tensor& input,
                                     const Tensor& weight, const Tensor& mean, const Tensor& rstd, int64_t N,
                                     int64_t C, int64_t HxW, int64_t group, double eps,
                                     const std::array<bool, 3>& mask) {
  using namespace norm_detail;
  const Tensor& grad = grads.at(0);
  if (!grad.defined()) return {Tensor(), Tensor(), Tensor()};
  if (fused_backward_ok()) {
    auto [gi, gw, gb] = autograd::native_group_norm_backward(grad, input, mean, rstd, opt(weight), N, C, HxW,
                                                             group, mask[0], mask[1], mask[2]);
    return {gi, gw, gb};
  }
  const Tensor x3 = autograd::reshape(input, {N, group, -1});
  const Tensor centered = minus(x3, mean_over(x3, {2}));
  const Tensor r = autograd::rsqrt(plus(mean_over(times(centered, centered), {2}), num(eps)), std::nullopt);
  const Tensor xhat = autograd::reshape(times(centered, r), input.sizes());
  const Tensor g = weight.defined() ? times(grad, channel_view(weight, input)) : grad;
  const Tensor g3 = autograd::reshape(g, {N, group, -1}), xh3 = autograd::reshape(xhat, {N, group, -1});
  const Tensor gi = autograd::reshape(
      times(r, minus(minus(g3, mean_over(g3, {2})), times(xh3, mean_over(times(g3, xh3), {2})))),
      input.sizes());
  IntList not_channel = {0};
  for (int64_t d = 2; d < input.dim(); ++d) not_channel.push_back(d);
  const Tensor gw = mask[1] && weight.defined() ? sum_to(times(grad, xhat), not_channel, {C}) : Tensor();
  const Tensor gb = mask[2] ? sum_to(grad, not_channel, {C}) : Tensor();
  return {gi, gw, gb};
}

Tensor group_norm_jvp(const Tensor& input, const Tensor& input_t, const Tensor& weight,
                      const Tensor& weight_t, const Tensor& bias_t, const Tensor& mean, const Tensor& rstd,
                      int64_t N, int64_t group) {
  using namespace norm_detail;
  const Tensor x3 = autograd::reshape(input, {N, group, -1});
  const Tensor m = autograd::unsqueeze(autograd::to_dtype(mean, input.dtype(), false), 2);
  const Tensor r = autograd::unsqueeze(autograd::to_dtype(rstd, input.dtype(), false), 2);
  const Tensor xh3 = times(minus(x3, m), r);
  const Tensor xhat = autograd::reshape(xh3, input.sizes());
  Tensor t;
  if (input_t.defined()) {
    t = autograd::reshape(normalized_tangent(autograd::reshape(input_t, {N, group, -1}), xh3, r, {2}, true),
                          input.sizes());
    if (weight.defined()) t = times(t, channel_view(weight, input));
  }
  if (weight_t.defined()) t = add_tangents(t, times(xhat, channel_view(weight_t, input)));
  if (bias_t.defined()) t = add_tangents(t, autograd::expand(channel_view(bias_t, input), input.sizes()));
  return t;
}

// ---- batch norm: statistics per channel over batch and positions ------------------------------------

std::vector<Tensor> batch_norm_grads(const std::vector<Tensor>& grads, const Tensor& input,
                                     const Tensor& weight, const Tensor& running_mean,
                                     const Tensor& running_var, const Tensor& save_mean,
                                     const Tensor& save_invstd, bool training, double eps,
                                     const std::array<bool, 3>& mask) {
  using namespace norm_detail;
  const Tensor& grad = grads.at(0);
  if (!grad.defined()) return {Tensor(), Tensor(), Tensor()};
  if (fused_backward_ok()) {
    auto [gi, gw, gb] = autograd::native_batch_norm_backward(
        grad, input, opt(weight), opt(running_mean), opt(running_var), opt(save_mean), opt(save_invstd),
        training, eps, mask[0], mask[1], mask[2]);
    return {gi, gw, gb};
  }
  IntList not_channel = {0};
  for (int64_t d = 2; d < input.dim(); ++d) not_channel.push_back(d);
  const int64_t C = input.size(1);
  Tensor xhat, r;
  if (training) {
    const Tensor centered = minus(input, mean_over(input, not_channel));
    r = autograd::rsqrt(plus(mean_over(times(centered, centered), not_channel), num(eps)), std::nullopt);
    xhat = times(centered, r);
  } else {
    r = channel_view(
        autograd::rsqrt(plus(autograd::to_dtype(running_var, input.dtype(), false), num(eps)), std::nullopt),
        input);
    xhat =
        times(minus(input, channel_view(autograd::to_dtype(running_mean, input.dtype(), false), input)), r);
  }
  const Tensor g = weight.defined() ? times(grad, channel_view(weight, input)) : grad;
  const Tensor gi = training ? times(r, minus(minus(g, mean_over(g, not_channel)),
                                              times(xhat, mean_over(times(g, xhat), not_channel))))
                             : times(r, g);
  const Tensor gw = mask[1] && weight.defined() ? sum_to(times(grad, xhat), not_channel, {C}) : Tensor();
  const Tensor gb = mask[2] ? sum_to(grad, not_channel, {C}) : Tensor();
  return {gi, gw, gb};
}

Tensor batch_norm_jvp(const Tensor& input, const Tensor& input_t, const Tensor& weight,
                      const Tensor& weight_t, const Tensor& bias_t, const Tensor& running_mean,
                      const Tensor& running_var, const Tensor& save_mean, const Tensor& save_invstd,
                      bool training, double eps) {
  using namespace norm_detail;
  IntList not_channel = {0};
  for (int64_t d = 2; d < input.dim(); ++d) not_channel.push_back(d);
  const Tensor m =
      channel_view(autograd::to_dtype(training ? save_mean : running_mean, input.dtype(), false), input);
  const Tensor r =
      training ? channel_view(autograd::to_dtype(save_invstd, input.dtype(), false), input)
               : channel_view(
                     autograd::rsqrt(plus(autograd::to_dtype(running_var, input.dtype(), false), num(eps)),
                                     std::nullopt),
                     input);
  const Tensor xhat = times(minus(input, m), r);
  Tensor t;
  if (input_t.defined()) {
    t = training ? normalized_tangent(input_t, xhat, r, not_channel, true) : times(input_t, r);
    if (weight.defined()) t = times(t, channel_view(weight, input));
  }
  if (weight_t.defined()) t = add_tangents(t, times(xhat, channel_view(weight_t, input)));
  if (bias_t.defined()) t = add_tangents(t, autograd::expand(channel_view(bias_t, input), input.sizes()));
  return t;
}

}  // namespace ember::autograd
