// softmax, log_softmax and the fused normalizations (Note [normalization kernels] in
// src/ops/kernels.h): argument checks, layouts and outputs; the kernels do one or two passes.
// Schemas follow PyTorch's aten ops (native_layer_norm, native_group_norm, native_batch_norm,
// their _backward ops, _softmax_backward_data); torch.nn.functional calls them.
#include <optional>
#include <tuple>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ember/writable.h"
#include "ops/dims.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<SoftmaxFn> softmax_stub("softmax");
DispatchStub<SoftmaxBackwardFn> softmax_backward_stub("softmax_backward");
DispatchStub<LayerNormFn> layer_norm_stub("layer_norm");
DispatchStub<LayerNormBackwardFn> layer_norm_backward_stub("layer_norm_backward");
DispatchStub<ChannelNormFn> channel_norm_stub("channel_norm");
DispatchStub<ChannelNormBackwardFn> channel_norm_backward_stub("channel_norm_backward");

namespace {

Tensor floating(const char* op, const Tensor& x) {
  EMBER_CHECK(!is_complex(x.dtype()), NotImplementedError, "[", op, "] not implemented for complex dtype ",
              dtype_name(x.dtype()));
  return is_floating_point(x.dtype()) ? x : to_dtype(x, get_default_dtype(), false);
}

// float32 statistics for 16-bit inputs, the input's dtype otherwise.
DType stats_dtype(DType d) {
  return d == DType::Float16 || d == DType::BFloat16 ? DType::Float32 : d;
}

// An optional parameter as a contiguous tensor of `dtype` (nullptr when absent).
std::optional<Tensor> param(const std::optional<Tensor>& t, DType dtype) {
  if (!t || !t->defined()) return std::nullopt;
  return (t->dtype() == dtype ? *t : to_dtype(*t, dtype, false)).contiguous();
}
const Tensor* ptr(const std::optional<Tensor>& t) {
  return t ? &*t : nullptr;
}

void check_same_device(const char* op, const Tensor& a, const std::optional<Tensor>& b) {
  if (b && b->defined()) {
    EMBER_CHECK(a.device() == b->device(), Error, "[", op,
                "] expected all tensors to be on the same device, but got ", a.device().str(), " and ",
                b->device().str());
  }
}

// softmax and friends run over the last dim: other dims move there and back.
Tensor to_last(const Tensor& x, int64_t dim) {
  return (dim == x.dim() - 1 ? x : movedim(x, {dim}, {-1})).contiguous();
}
Tensor from_last(const Tensor& y, int64_t dim) {
  return dim == y.dim() - 1 ? y : movedim(y, {-1}, {dim}).contiguous();
}

Tensor softmax_impl(const char* op, const Tensor& self, int64_t dim, std::optional<DType> dtype, bool log) {
  const Tensor x = dtype ? to_dtype(self, *dtype, false) : floating(op, self);
  EMBER_CHECK(is_floating_point(x.dtype()), NotImplementedError, "[", op, "] not implemented for '",
              dtype_name(x.dtype()), "'");
  const int64_t d = dims::wrap(op, dim, x.dim());
  if (x.dim() == 0) return view(softmax_impl(op, unsqueeze(x, 0), 0, std::nullopt, log), {});
  const Tensor xl = to_last(x, d);
  Tensor out = empty(xl.sizes(), xl.dtype(), xl.device());
  const int64_t n = xl.size(-1);
  if (xl.numel() > 0) softmax_stub.get(xl.device().type)(out, xl, xl.numel() / n, n, log);
  return from_last(out, d);
}

Tensor softmax_backward_impl(const char* op, const Tensor& grad_output, const Tensor& output, int64_t dim,
                             DType input_dtype, bool log) {
  EMBER_CHECK(grad_output.sizes() == output.sizes(), ValueError, "[", op,
              "] expected grad_output and output of one shape, but got ", dims::str(grad_output.sizes()),
              " and ", dims::str(output.sizes()));
  check_same_device(op, output, grad_output);
  const Tensor y = floating(op, output);
  const int64_t d = dims::wrap(op, dim, y.dim());
  if (y.dim() == 0) {
    return view(softmax_backward_impl(op, unsqueeze(grad_output, 0), unsqueeze(y, 0), 0, input_dtype, log),
                {});
  }
  const Tensor yl = to_last(y, d);
  const Tensor gl =
      to_last(grad_output.dtype() == y.dtype() ? grad_output : to_dtype(grad_output, y.dtype(), false), d);
  Tensor grad = empty(yl.sizes(), yl.dtype(), yl.device());
  const int64_t n = yl.size(-1);
  if (yl.numel() > 0) softmax_backward_stub.get(yl.device().type)(grad, gl, yl, yl.numel() / n, n, log);
  const Tensor r = from_last(grad, d);
  return r.dtype() == input_dtype ? r : to_dtype(r, input_dtype, false);
}

// The rows of a normalization over the trailing `normalized_shape` dims.
int64_t trailing_count(const char* op, const Tensor& input, const IntList& normalized_shape) {
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  bool ok = k > 0 && input.dim() >= k;
  for (int64_t i = 0; ok && i < k; ++i) ok = input.size(input.dim() - k + i) == normalized_shape[i];
  EMBER_CHECK(ok, Error, "[", op, "] Given normalized_shape=", dims::str(normalized_shape),
              ", expected input with shape [*, ", dims::str(normalized_shape).substr(1),
              ", but got input of size", dims::str(input.sizes()));
  int64_t n = 1;
  for (int64_t s : normalized_shape) n *= s;
  return n;
}

void check_affine(const char* op, const char* what, const std::optional<Tensor>& t, const IntList& shape) {
  if (t && t->defined()) {
    EMBER_CHECK(t->sizes() == shape, Error, "[", op, "] Expected ", what,
                " to be of same shape as normalized_shape, but got ", what, " of shape ",
                dims::str(t->sizes()), " and normalized_shape = ", dims::str(shape));
  }
}

// mean / rstd keep the leading dims and 1 for each normalized one (PyTorch's layout).
IntList stats_shape(const Tensor& input, int64_t k) {
  IntList s(input.sizes().begin(), input.sizes().end() - k);
  s.insert(s.end(), k, 1);
  return s;
}

void check_channels(const char* op, const char* what, const std::optional<Tensor>& t, int64_t channels) {
  if (t && t->defined()) {
    EMBER_CHECK(t->dim() == 1 && t->size(0) == channels, Error, "[", op, "] ", what, " should contain ",
                channels, " elements not ", t->numel());
  }
}

}  // namespace

Tensor softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return softmax_impl("softmax", self, dim, dtype, false);
}
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return softmax_impl("log_softmax", self, dim, dtype, true);
}
Tensor _softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                              DType input_dtype) {
  return softmax_backward_impl("_softmax_backward_data", grad_output, output, dim, input_dtype, false);
}
Tensor _log_softmax_backward_data(const Tensor& grad_output, const Tensor& output, int64_t dim,
                                  DType input_dtype) {
  return softmax_backward_impl("_log_softmax_backward_data", grad_output, output, dim, input_dtype, true);
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input, const IntList& normalized_shape,
                                                     const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, double eps) {
  const char* op = "native_layer_norm";
  const Tensor x = floating(op, input).contiguous();
  const int64_t n = trailing_count(op, x, normalized_shape);
  check_affine(op, "weight", weight, normalized_shape);
  check_affine(op, "bias", bias, normalized_shape);
  check_same_device(op, x, weight);
  check_same_device(op, x, bias);
  const auto w = param(weight, x.dtype()), b = param(bias, x.dtype());
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  Tensor mean = empty(stats_shape(x, k), stats_dtype(x.dtype()), x.device());
  Tensor rstd = empty(stats_shape(x, k), stats_dtype(x.dtype()), x.device());
  const RowNormArgs args{&out, &mean, &rstd, &x, ptr(w), ptr(b), mean.numel(), n, eps, false};
  if (mean.numel() > 0) layer_norm_stub.get(x.device().type)(args);
  return {out, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_layer_norm_backward(
    const Tensor& grad_out, const Tensor& input, const IntList& normalized_shape, const Tensor& mean,
    const Tensor& rstd, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
    bool input_grad, bool weight_grad, bool bias_grad) {
  const char* op = "native_layer_norm_backward";
  const Tensor x = floating(op, input).contiguous();
  const int64_t n = trailing_count(op, x, normalized_shape);
  EMBER_CHECK(grad_out.sizes() == x.sizes(), ValueError, "[", op, "] expected grad_out of shape ",
              dims::str(x.sizes()), ", but got ", dims::str(grad_out.sizes()));
  const int64_t rows = n > 0 ? x.numel() / n : 0;
  EMBER_CHECK(mean.numel() == rows && rstd.numel() == rows, ValueError, "[", op,
              "] expected mean and rstd of ", rows, " elements, but got ", mean.numel(), " and ",
              rstd.numel());
  const auto w = param(weight, x.dtype());
  const Tensor g =
      (grad_out.dtype() == x.dtype() ? grad_out : to_dtype(grad_out, x.dtype(), false)).contiguous();
  const Tensor m = to_dtype(mean, stats_dtype(x.dtype()), false).contiguous();
  const Tensor r = to_dtype(rstd, stats_dtype(x.dtype()), false).contiguous();
  Tensor gi = empty(x.sizes(), x.dtype(), x.device());
  std::optional<Tensor> gw, gb;
  if (weight_grad && w) gw = empty(normalized_shape, x.dtype(), x.device());
  if (bias_grad && bias && bias->defined()) gb = empty(normalized_shape, x.dtype(), x.device());
  if (rows > 0) {
    const RowNormBackwardArgs args{&gi, ptr(gw), ptr(gb), &g, &x, &m, &r, ptr(w), rows, n, false};
    layer_norm_backward_stub.get(x.device().type)(args);
  } else {
    if (gw) zero_(*gw);
    if (gb) zero_(*gb);
  }
  return {input_grad ? gi : Tensor(), gw.value_or(Tensor()), gb.value_or(Tensor())};
}

std::tuple<Tensor, Tensor> _fused_rms_norm(const Tensor& input, const IntList& normalized_shape,
                                           const std::optional<Tensor>& weight, double eps) {
  const char* op = "rms_norm";
  const Tensor x = floating(op, input).contiguous();
  const int64_t n = trailing_count(op, x, normalized_shape);
  check_affine(op, "weight", weight, normalized_shape);
  check_same_device(op, x, weight);
  const auto w = param(weight, x.dtype());
  const int64_t k = static_cast<int64_t>(normalized_shape.size());
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  Tensor rstd = empty(stats_shape(x, k), stats_dtype(x.dtype()), x.device());
  const RowNormArgs args{&out, nullptr, &rstd, &x, ptr(w), nullptr, rstd.numel(), n, eps, true};
  if (rstd.numel() > 0) layer_norm_stub.get(x.device().type)(args);
  return {out, rstd};
}

std::tuple<Tensor, Tensor> _fused_rms_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                    const IntList& normalized_shape, const Tensor& rstd,
                                                    const std::optional<Tensor>& weight, bool input_grad,
                                                    bool weight_grad) {
  const char* op = "rms_norm_backward";
  const Tensor x = floating(op, input).contiguous();
  const int64_t n = trailing_count(op, x, normalized_shape);
  EMBER_CHECK(grad_out.sizes() == x.sizes(), ValueError, "[", op, "] expected grad_out of shape ",
              dims::str(x.sizes()), ", but got ", dims::str(grad_out.sizes()));
  const int64_t rows = n > 0 ? x.numel() / n : 0;
  EMBER_CHECK(rstd.numel() == rows, ValueError, "[", op, "] expected rstd of ", rows, " elements, but got ",
              rstd.numel());
  const auto w = param(weight, x.dtype());
  const Tensor g =
      (grad_out.dtype() == x.dtype() ? grad_out : to_dtype(grad_out, x.dtype(), false)).contiguous();
  const Tensor r = to_dtype(rstd, stats_dtype(x.dtype()), false).contiguous();
  Tensor gi = empty(x.sizes(), x.dtype(), x.device());
  std::optional<Tensor> gw;
  if (weight_grad && w) gw = empty(normalized_shape, x.dtype(), x.device());
  if (rows > 0) {
    const RowNormBackwardArgs args{&gi, ptr(gw), nullptr, &g, &x, nullptr, &r, ptr(w), rows, n, true};
    layer_norm_backward_stub.get(x.device().type)(args);
  } else if (gw) {
    zero_(*gw);
  }
  return {input_grad ? gi : Tensor(), gw.value_or(Tensor())};
}

std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& input, const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, int64_t N, int64_t C,
                                                     int64_t HxW, int64_t group, double eps) {
  const char* op = "native_group_norm";
  const Tensor x = floating(op, input).contiguous();
  EMBER_CHECK(group > 0 && C % group == 0, Error, "[", op,
              "] Expected number of channels in input to be divisible by num_groups, but got input of shape ",
              dims::str(x.sizes()), " and num_groups=", group);
  EMBER_CHECK(N * C * HxW == x.numel(), ValueError, "[", op, "] expected N * C * HxW = ", x.numel(),
              " elements, but got ", N, " * ", C, " * ", HxW);
  check_channels(op, "weight", weight, C);
  check_channels(op, "bias", bias, C);
  check_same_device(op, x, weight);
  check_same_device(op, x, bias);
  const auto w = param(weight, x.dtype()), b = param(bias, x.dtype());
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  Tensor mean = empty({N, group}, stats_dtype(x.dtype()), x.device());
  Tensor rstd = empty({N, group}, stats_dtype(x.dtype()), x.device());
  const ChannelNormArgs args{&out, &mean, &rstd, &x,    ptr(w), ptr(b), nullptr, nullptr,
                             N,    C,     HxW,   group, true,   0.0,    eps};
  if (mean.numel() > 0) channel_norm_stub.get(x.device().type)(args);
  return {out.contiguous(suggest_memory_format(input)), mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_group_norm_backward(const Tensor& grad_out, const Tensor& input,
                                                              const Tensor& mean, const Tensor& rstd,
                                                              const std::optional<Tensor>& weight, int64_t N,
                                                              int64_t C, int64_t HxW, int64_t group,
                                                              bool input_grad, bool weight_grad,
                                                              bool bias_grad) {
  const char* op = "native_group_norm_backward";
  const Tensor x = floating(op, input).contiguous();
  EMBER_CHECK(group > 0 && C % group == 0 && N * C * HxW == x.numel() && grad_out.sizes() == x.sizes() &&
                  mean.numel() == N * group && rstd.numel() == N * group,
              ValueError, "[", op, "] inconsistent shapes: input ", dims::str(x.sizes()), ", grad_out ",
              dims::str(grad_out.sizes()), ", N=", N, " C=", C, " HxW=", HxW, " group=", group);
  const auto w = param(weight, x.dtype());
  const Tensor g =
      (grad_out.dtype() == x.dtype() ? grad_out : to_dtype(grad_out, x.dtype(), false)).contiguous();
  const Tensor m = to_dtype(mean, stats_dtype(x.dtype()), false).contiguous();
  const Tensor r = to_dtype(rstd, stats_dtype(x.dtype()), false).contiguous();
  Tensor gi = empty(x.sizes(), x.dtype(), x.device());
  Tensor gw = empty({C}, x.dtype(), x.device()), gb = empty({C}, x.dtype(), x.device());
  const ChannelNormBackwardArgs args{&gi, &gw, &gb, &g, &x, &m, &r, ptr(w), N, C, HxW, group, true};
  if (x.numel() > 0) {
    channel_norm_backward_stub.get(x.device().type)(args);
  } else {
    zero_(gw);
    zero_(gb);
  }
  return {input_grad ? gi.contiguous(suggest_memory_format(input)) : Tensor(),
          weight_grad && w ? gw : Tensor(), bias_grad ? gb : Tensor()};
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& input, const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias,
                                                     const std::optional<Tensor>& running_mean,
                                                     const std::optional<Tensor>& running_var, bool training,
                                                     double momentum, double eps) {
  const char* op = "native_batch_norm";
  EMBER_CHECK(input.dim() >= 2, ValueError, "[", op, "] Expected 2D or more input (got ", input.dim(),
              "D input)");
  const MemoryFormat layout = suggest_memory_format(input);
  // Evaluation is one per-channel affine map, y = x * scale + shift: a channels-last input is mapped
  // in its own layout (two passes) instead of converted in and out (Note [memory formats]).
  const Tensor xf = floating(op, input);
  const bool mapped_in_layout = !training && layout != MemoryFormat::Contiguous &&
                                (xf.dtype() == DType::Float32 || xf.dtype() == DType::Float64);
  const Tensor x = mapped_in_layout ? xf : xf.contiguous();
  const int64_t N = x.size(0), C = x.size(1), S = C > 0 && N > 0 ? x.numel() / (N * C) : 0;
  for (const auto& [name, t] :
       {std::pair{"running_mean", &running_mean}, std::pair{"running_var", &running_var},
        std::pair{"weight", &weight}, std::pair{"bias", &bias}}) {
    check_channels(op, name, *t, C);
    check_same_device(op, x, *t);
  }
  const bool have_running = running_mean && running_mean->defined() && running_var && running_var->defined();
  EMBER_CHECK(training || have_running, Error, "[", op,
              "] running_mean and running_var must be defined in evaluation mode");
  if (training) {
    EMBER_CHECK(N * S > 1, ValueError, "[", op,
                "] Expected more than 1 value per channel when training, got input size ",
                dims::str(x.sizes()));
  }
  const auto w = param(weight, x.dtype()), b = param(bias, x.dtype());
  const DType sd = stats_dtype(x.dtype());
  Tensor mean, rstd;
  if (training) {
    mean = empty({C}, sd, x.device());
    rstd = empty({C}, sd, x.device());
  } else {  // the running statistics, as the kernel reads them
    mean = to_dtype(*running_mean, sd, true).contiguous();
    rstd = rsqrt(
        add(to_dtype(*running_var, sd, true), wrapped_number(Scalar(eps)), Scalar(int64_t(1)), std::nullopt),
        std::nullopt);
  }
  if (mapped_in_layout) {
    IntList view(x.dim(), 1);
    view[1] = C;
    const Tensor scale = w ? mul(rstd, to_dtype(*w, sd, false), std::nullopt) : rstd;
    Tensor shift = neg(mul(mean, scale, std::nullopt), std::nullopt);
    if (b) shift = add(shift, to_dtype(*b, sd, false), Scalar(int64_t(1)), std::nullopt);
    Tensor y = mul(x, reshape(to_dtype(scale, x.dtype(), false), view), std::nullopt);
    add(y, reshape(to_dtype(shift, x.dtype(), false), view), Scalar(int64_t(1)), y);
    return {y.contiguous(layout), empty({0}, sd, x.device()), empty({0}, sd, x.device())};
  }
  for (const auto* t : {&running_mean, &running_var}) {
    if (training && *t && (*t)->defined()) {
      EMBER_CHECK((*t)->is_contiguous(), ValueError, "[", op, "] expected contiguous running statistics");
      check_writable(**t);  // updated in place, without a version bump (below)
    }
  }
  Tensor out = empty(x.sizes(), x.dtype(), x.device());
  const ChannelNormArgs args{&out,
                             &mean,
                             &rstd,
                             &x,
                             ptr(w),
                             ptr(b),
                             training && running_mean && running_mean->defined() ? &*running_mean : nullptr,
                             training && running_var && running_var->defined() ? &*running_var : nullptr,
                             N,
                             C,
                             S,
                             0,
                             training,
                             momentum,
                             eps};
  // The running statistics change in place without a version bump: autograd never differentiates
  // through them, and the backward node saves them (for evaluation mode) before this update.
  if (C > 0) channel_norm_stub.get(x.device().type)(args);
  out = out.contiguous(layout);  // a channels-last input stays so (Note [memory formats])
  if (!training) return {out, empty({0}, sd, x.device()), empty({0}, sd, x.device())};
  return {out, mean, rstd};
}

std::tuple<Tensor, Tensor, Tensor> native_batch_norm_backward(
    const Tensor& grad_out, const Tensor& input, const std::optional<Tensor>& weight,
    const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var,
    const std::optional<Tensor>& save_mean, const std::optional<Tensor>& save_invstd, bool train, double eps,
    bool input_grad, bool weight_grad, bool bias_grad) {
  const char* op = "native_batch_norm_backward";
  EMBER_CHECK(input.dim() >= 2 && grad_out.sizes() == input.sizes(), ValueError, "[", op,
              "] expected grad_out and input of one shape with at least 2 dims, but got ",
              dims::str(grad_out.sizes()), " and ", dims::str(input.sizes()));
  const Tensor x = floating(op, input).contiguous();
  const int64_t N = x.size(0), C = x.size(1), S = C > 0 && N > 0 ? x.numel() / (N * C) : 0;
  const DType sd = stats_dtype(x.dtype());
  Tensor mean, rstd;
  if (train) {
    EMBER_CHECK(save_mean && save_invstd && save_mean->numel() == C && save_invstd->numel() == C, ValueError,
                "[", op, "] training needs save_mean and save_invstd of ", C, " elements");
    mean = to_dtype(*save_mean, sd, false).contiguous();
    rstd = to_dtype(*save_invstd, sd, false).contiguous();
  } else {
    EMBER_CHECK(running_mean && running_var && running_mean->numel() == C && running_var->numel() == C,
                ValueError, "[", op, "] evaluation needs running_mean and running_var of ", C, " elements");
    mean = to_dtype(*running_mean, sd, true).contiguous();
    rstd = rsqrt(
        add(to_dtype(*running_var, sd, true), wrapped_number(Scalar(eps)), Scalar(int64_t(1)), std::nullopt),
        std::nullopt);
  }
  const auto w = param(weight, x.dtype());
  const Tensor g =
      (grad_out.dtype() == x.dtype() ? grad_out : to_dtype(grad_out, x.dtype(), false)).contiguous();
  std::optional<Tensor> gi;
  if (input_grad) gi = empty(x.sizes(), x.dtype(), x.device());
  Tensor gw = empty({C}, x.dtype(), x.device()), gb = empty({C}, x.dtype(), x.device());
  const ChannelNormBackwardArgs args{ptr(gi), &gw, &gb, &g, &x, &mean, &rstd, ptr(w), N, C, S, 0, train};
  if (C > 0) channel_norm_backward_stub.get(x.device().type)(args);
  return {gi ? gi->contiguous(suggest_memory_format(input)) : Tensor(), weight_grad && w ? gw : Tensor(),
          bias_grad ? gb : Tensor()};
}

}  // namespace ember
