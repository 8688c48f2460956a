// The bodies of formulas.h's derivative helpers: here, not in the header, so that the generated
// autograd_ops.cpp, which includes it, does not compile them again.
#include "autograd/formulas.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "ember/dispatch_mode.h"

namespace ember::autograd {

Tensor num(double v) {
  return wrapped_number(Scalar(v));
}
Tensor num(const Scalar& v) {
  return wrapped_number(v);
}

Tensor scale(const Tensor& grad, const Scalar& alpha) {
  if (!alpha.is_complex() && alpha.to_double() == 1.0) return grad;
  return autograd::mul(grad, num(alpha), std::nullopt);
}

Tensor plus(const Tensor& a, const Tensor& b) {
  return autograd::add(a, b, Scalar(int64_t(1)), std::nullopt);
}
Tensor minus(const Tensor& a, const Tensor& b) {
  return autograd::sub(a, b, Scalar(int64_t(1)), std::nullopt);
}
Tensor times(const Tensor& a, const Tensor& b) {
  return autograd::mul(a, b, std::nullopt);
}

Tensor zeros_of(const Tensor& like) {
  return autograd::zeros_like(like, std::nullopt);
}

Tensor add_tangents(const Tensor& a, const Tensor& b) {
  if (!a.defined()) return b;
  if (!b.defined()) return a;
  return autograd::add(a, b, Scalar(int64_t(1)), std::nullopt);
}

Tensor reduction_jvp(const Tensor& d, const Tensor& t, const std::optional<IntList>& dim, bool keepdim) {
  return autograd::sum(autograd::mul(autograd::conj(d), t, std::nullopt), dim, keepdim, std::nullopt);
}

Tensor real_part(const Tensor& t) {
  return is_complex(t.dtype()) ? autograd::real(t) : t;
}

int64_t wrap_dim(int64_t d, int64_t n) {
  return d < 0 ? d + std::max<int64_t>(n, 1) : d;
}

Tensor sum_backward(const Tensor& grad, const IntList& sizes, const std::optional<IntList>& dim,
                    bool keepdim) {
  Tensor g = grad;
  const int64_t n = static_cast<int64_t>(sizes.size());
  if (!keepdim && n > 0) {
    IntList dims = dim.value_or(IntList{});
    if (dims.empty()) {
      g = autograd::reshape(g, IntList(sizes.size(), 1));
    } else {
      for (int64_t& d : dims) d = wrap_dim(d, n);
      std::sort(dims.begin(), dims.end());
      for (int64_t d : dims) g = autograd::unsqueeze(g, d);
    }
  }
  return autograd::expand(g, sizes);
}

Tensor mean_backward(const Tensor& grad, const IntList& sizes, const std::optional<IntList>& dim,
                     bool keepdim) {
  const Tensor g = sum_backward(grad, sizes, dim, keepdim);
  const int64_t total = checked_numel(sizes, "mean");
  const int64_t kept = std::max<int64_t>(grad.numel(), 1);
  return autograd::div(g, num(static_cast<double>(total) / static_cast<double>(kept)), std::nullopt,
                       std::nullopt);
}

Tensor extreme_backward(const Tensor& grad, const Tensor& self, const Tensor& result, const IntList& dim,
                        bool keepdim) {
  const std::optional<IntList> d = dim;
  const Tensor hit = autograd::to_dtype(
      autograd::eq(self, sum_backward(result, self.sizes(), d, keepdim), std::nullopt), grad.dtype(), false);
  const Tensor count = autograd::sum(hit, dim, true, std::nullopt);
  return autograd::div(autograd::mul(sum_backward(grad, self.sizes(), d, keepdim), hit, std::nullopt), count,
                       std::nullopt, std::nullopt);
}

Tensor logsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, const IntList& dim,
                          bool keepdim) {
  const std::optional<IntList> d = dim;
  const Tensor r = sum_backward(result, self.sizes(), d, keepdim);
  return autograd::mul(sum_backward(grad, self.sizes(), d, keepdim),
                       autograd::exp(autograd::sub(self, r, Scalar(int64_t(1)), std::nullopt), std::nullopt),
                       std::nullopt);
}

Tensor index_select_backward(const Tensor& grad, const IntList& sizes, int64_t dim, const Tensor& index) {
  return autograd::index_add(autograd::zeros(sizes, grad.dtype(), grad.device()), dim,
                             autograd::reshape(index, {-1}), grad, Scalar(int64_t(1)));
}

bool plain_view_backward(const Tensor& grad) {
  // Note [Python tensors]: a subclass computes its own backward, and a dispatch mode (make_fx,
  // a FLOP counter) is to see every op of it, so neither takes the kernel-direct path
  return !GradMode::is_enabled() && !vmap::is_batched(grad) && !forward_ad::enabled() &&
         !dispatch_mode::is_python_tensor(grad) && !dispatch_mode::active();
}

Tensor select_backward(const Tensor& grad, const IntList& sizes, int64_t dim, int64_t index) {
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(sizes.size()));
  const int64_t i = index < 0 ? index + sizes[d] : index;
  if (plain_view_backward(grad)) {
    Tensor out = ember::zeros(sizes, grad.dtype(), grad.device());
    ember::copy_(ember::select(out, d, i), grad);
    return out;
  }
  return index_select_backward(autograd::unsqueeze(grad, d), sizes, d,
                               autograd::full({1}, Scalar(i), DType::Int64, grad.device()));
}

Tensor slice_backward(const Tensor& grad, const IntList& sizes, int64_t dim, std::optional<int64_t> start,
                      int64_t step) {
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(sizes.size()));
  int64_t s = start.value_or(0);
  if (s < 0) s += sizes[d];
  s = std::clamp<int64_t>(s, 0, sizes[d]);
  const int64_t count = grad.sizes()[d];
  if (plain_view_backward(grad)) {  // Note [view backward]
    Tensor out = ember::zeros(sizes, grad.dtype(), grad.device());
    if (count > 0) ember::copy_(ember::slice(out, d, s, s + (count - 1) * step + 1, step), grad);
    return out;
  }
  const Tensor index =
      autograd::arange(Scalar(s), Scalar(s + count * step), Scalar(step), DType::Int64, grad.device());
  return index_select_backward(grad, sizes, d, index);
}

IntList inverse_permutation(const IntList& dims) {
  IntList inv(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) inv[wrap_dim(dims[i], static_cast<int64_t>(dims.size()))] = i;
  return inv;
}

bool fused_backward_ok() {
  return !GradMode::is_enabled();
}

Tensor softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim) {
  if (fused_backward_ok()) return autograd::_softmax_backward_data(grad, result, dim, result.dtype());
  const Tensor dot =
      autograd::sum(autograd::mul(grad, result, std::nullopt), IntList{dim}, true, std::nullopt);
  return autograd::mul(autograd::sub(grad, dot, Scalar(int64_t(1)), std::nullopt), result, std::nullopt);
}

Tensor log_softmax_backward(const Tensor& grad, const Tensor& result, int64_t dim) {
  if (fused_backward_ok()) return autograd::_log_softmax_backward_data(grad, result, dim, result.dtype());
  const Tensor total = autograd::sum(grad, IntList{dim}, true, std::nullopt);
  return autograd::sub(grad, autograd::mul(autograd::exp(result, std::nullopt), total, std::nullopt),
                       Scalar(int64_t(1)), std::nullopt);
}

Tensor pow_self_backward(const Tensor& grad, const Tensor& self, const Tensor& other) {
  const Tensor power =
      autograd::pow(self, autograd::sub(other, num(1.0), Scalar(int64_t(1)), std::nullopt), std::nullopt);
  const Tensor g =
      autograd::mul(grad, autograd::conj(autograd::mul(other, power, std::nullopt)), std::nullopt);
  return autograd::where(autograd::eq(other, num(0.0), std::nullopt), zeros_of(g), g);
}
Tensor pow_other_backward(const Tensor& grad, const Tensor& self, const Tensor& other, const Tensor& result) {
  const Tensor g = autograd::mul(
      grad, autograd::conj(autograd::mul(result, autograd::log(self, std::nullopt), std::nullopt)),
      std::nullopt);
  const Tensor zero_base =
      autograd::logical_and(autograd::eq(self, num(0.0), std::nullopt),
                            autograd::ge(real_part(other), num(0.0), std::nullopt), std::nullopt);
  return autograd::where(zero_base, zeros_of(g), g);
}

Tensor pick_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self,
                     bool is_max) {
  const Tensor wins =
      for_self ? (is_max ? autograd::gt(self, other, std::nullopt) : autograd::lt(self, other, std::nullopt))
               : (is_max ? autograd::gt(other, self, std::nullopt) : autograd::lt(other, self, std::nullopt));
  const Tensor ties = autograd::eq(self, other, std::nullopt);
  const Tensor half = autograd::div(grad, num(2.0), std::nullopt, std::nullopt);
  return autograd::where(wins, grad, autograd::where(ties, half, zeros_of(grad)));
}

Tensor clamp_backward(const Tensor& grad, const Tensor& self, const std::optional<Scalar>& min,
                      const std::optional<Scalar>& max) {
  Tensor keep = autograd::ones_like(self, DType::Bool);
  if (min) keep = autograd::logical_and(keep, autograd::ge(self, num(*min), std::nullopt), std::nullopt);
  if (max) keep = autograd::logical_and(keep, autograd::le(self, num(*max), std::nullopt), std::nullopt);
  return autograd::where(keep, grad, zeros_of(grad));
}

Tensor mask_backward(const Tensor& grad, const Tensor& keep) {
  return autograd::where(keep, grad, num(0.0));  // a wrapped 0 broadcasts: no zeros tensor is made
}

Tensor pool_gather(const Tensor& t, const Tensor& idx, int64_t spatial) {
  IntList lead(t.sizes().begin(), t.sizes().end() - spatial), lead_i = lead;
  lead.push_back(-1);
  lead_i.push_back(-1);
  const Tensor flat = autograd::reshape(t, lead), flat_idx = autograd::reshape(idx, lead_i);
  return autograd::reshape(autograd::gather(flat, flat.dim() - 1, flat_idx), idx.sizes());
}

Tensor cumsum_backward(const Tensor& grad, int64_t dim) {
  if (grad.dim() == 0) return grad;
  return autograd::flip(autograd::cumsum(autograd::flip(grad, IntList{dim}), dim, std::nullopt),
                        IntList{dim});
}

// ---- activations ------------------------------------------------------------------------------

static Tensor gt0(const Tensor& t) {
  return autograd::gt(t, num(0.0), std::nullopt);
}

Tensor silu_grad(const Tensor& grad, const Tensor& self) {
  if (fused_backward_ok()) return autograd::silu_backward(grad, self);
  const Tensor s = autograd::sigmoid(self, std::nullopt);
  const Tensor one_minus = autograd::sub(num(1.0), s, Scalar(int64_t(1)), std::nullopt);
  return autograd::mul(grad,
                       autograd::mul(s,
                                     autograd::add(num(1.0), autograd::mul(self, one_minus, std::nullopt),
                                                   Scalar(int64_t(1)), std::nullopt),
                                     std::nullopt),
                       std::nullopt);
}

Tensor softplus_grad(const Tensor& grad, const Tensor& self, double beta, double threshold) {
  if (fused_backward_ok()) return autograd::softplus_backward(grad, self, beta, threshold);
  const Tensor scaled = autograd::mul(self, num(beta), std::nullopt);
  const Tensor slope = autograd::sigmoid(scaled, std::nullopt);
  return autograd::where(autograd::gt(scaled, num(threshold), std::nullopt), grad,
                         autograd::mul(grad, slope, std::nullopt));
}

Tensor hardswish_grad(const Tensor& grad, const Tensor& self) {
  if (fused_backward_ok()) return autograd::hardswish_backward(grad, self);
  const Tensor middle = autograd::div(
      autograd::add(autograd::mul(self, num(2.0), std::nullopt), num(3.0), Scalar(int64_t(1)), std::nullopt),
      num(6.0), std::nullopt, std::nullopt);
  const Tensor slope = autograd::where(autograd::lt(self, num(-3.0), std::nullopt), zeros_of(self),
                                       autograd::where(autograd::gt(self, num(3.0), std::nullopt),
                                                       autograd::ones_like(self, std::nullopt), middle));
  return autograd::mul(grad, slope, std::nullopt);
}

Tensor hardsigmoid_grad(const Tensor& grad, const Tensor& self) {
  if (fused_backward_ok()) return autograd::hardsigmoid_backward(grad, self);
  return mask_backward(autograd::div(grad, num(6.0), std::nullopt, std::nullopt),
                       autograd::logical_and(autograd::gt(self, num(-3.0), std::nullopt),
                                             autograd::lt(self, num(3.0), std::nullopt), std::nullopt));
}

Tensor elu_backward(const Tensor& grad, const Tensor& self, const Tensor& result, double alpha, double scale,
                    double input_scale) {
  const Tensor negative =
      autograd::mul(autograd::add(result, num(alpha * scale), Scalar(int64_t(1)), std::nullopt),
                    num(input_scale), std::nullopt);
  const Tensor slope =
      autograd::where(gt0(self), autograd::full_like(self, Scalar(scale), std::nullopt), negative);
  return autograd::mul(grad, slope, std::nullopt);
}

Tensor mish_grad(const Tensor& grad, const Tensor& self) {
  if (fused_backward_ok()) return autograd::mish_backward(grad, self);
  const Tensor t = autograd::tanh(autograd::softplus(self, 1.0, 20.0), std::nullopt);
  const Tensor one_minus_t2 =
      autograd::sub(num(1.0), autograd::mul(t, t, std::nullopt), Scalar(int64_t(1)), std::nullopt);
  const Tensor slope =
      autograd::add(t,
                    autograd::mul(autograd::mul(self, autograd::sigmoid(self, std::nullopt), std::nullopt),
                                  one_minus_t2, std::nullopt),
                    Scalar(int64_t(1)), std::nullopt);
  return autograd::mul(grad, slope, std::nullopt);
}

Tensor gelu_grad(const Tensor& grad, const Tensor& self, const std::string& approximate) {
  if (fused_backward_ok()) return autograd::gelu_backward(grad, self, approximate);
  const auto mul = [](const Tensor& a, const Tensor& b) { return autograd::mul(a, b, std::nullopt); };
  const auto add = [](const Tensor& a, const Tensor& b) {
    return autograd::add(a, b, Scalar(int64_t(1)), std::nullopt);
  };
  if (approximate == "tanh") {  // 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2), t = tanh(k (x + c x^3))
    const double k = 0.79788456080286535588;
    const double c = 0.044715;
    const Tensor x2 = mul(self, self);
    const Tensor inner = mul(num(k), add(self, mul(num(c), mul(x2, self))));
    const Tensor t = autograd::tanh(inner, std::nullopt);
    const Tensor left = mul(num(0.5), add(num(1.0), t));
    const Tensor dt = autograd::sub(num(1.0), mul(t, t), Scalar(int64_t(1)), std::nullopt);
    const Tensor right = mul(mul(mul(num(0.5), self), dt), mul(num(k), add(num(1.0), mul(num(3.0 * c), x2))));
    return mul(grad, add(left, right));
  }
  // Phi(x) + x phi(x)
  const Tensor cdf =
      mul(num(0.5), add(num(1.0), autograd::erf(mul(self, num(0.70710678118654752440)), std::nullopt)));
  const Tensor pdf =
      mul(num(0.39894228040143267794), autograd::exp(mul(num(-0.5), mul(self, self)), std::nullopt));
  return mul(grad, add(cdf, mul(self, pdf)));
}

Tensor logit_backward(const Tensor& grad, const Tensor& self, std::optional<double> eps) {
  const Tensor denom =
      autograd::mul(self, autograd::sub(num(1.0), self, Scalar(int64_t(1)), std::nullopt), std::nullopt);
  const Tensor g = autograd::div(grad, denom, std::nullopt, std::nullopt);
  if (!eps) return g;
  const Tensor inside =
      autograd::logical_and(autograd::ge(self, num(*eps), std::nullopt),
                            autograd::le(self, num(1.0 - *eps), std::nullopt), std::nullopt);
  return mask_backward(g, inside);
}

// ---- reductions -------------------------------------------------------------------------------

Tensor var_backward(const Tensor& grad, const Tensor& self, const std::optional<IntList>& dim,
                    const std::optional<Scalar>& correction, bool keepdim) {
  const IntList dims = dim.value_or(IntList{});
  const Tensor centered =
      autograd::sub(self, autograd::mean(self, dims, true, std::nullopt), Scalar(int64_t(1)), std::nullopt);
  const int64_t n = self.numel() / std::max<int64_t>(grad.numel(), 1);
  const double dof = static_cast<double>(n) - (correction ? correction->to_double() : 1.0);
  const Tensor g = sum_backward(grad, self.sizes(), dim, keepdim);
  return autograd::mul(autograd::mul(g, num(2.0 / dof), std::nullopt), centered, std::nullopt);
}

Tensor norm_backward(const Tensor& grad, const Tensor& self, const Tensor& result, const Scalar& p,
                     const std::optional<IntList>& dim, bool keepdim) {
  const double q = p.to_double();
  const Tensor g = sum_backward(grad, self.sizes(), dim, keepdim);
  const Tensor r = sum_backward(result, self.sizes(), dim, keepdim);
  const Tensor a = autograd::abs(self, std::nullopt);
  if (q == 0.0) return zeros_of(self);
  if (std::isinf(q)) {
    const Tensor hit = autograd::to_dtype(autograd::eq(a, r, std::nullopt), g.dtype(), false);
    const Tensor count = sum_backward(autograd::sum(hit, dim, true, std::nullopt), self.sizes(), dim, true);
    return autograd::div(
        autograd::mul(autograd::mul(g, autograd::sgn(self), std::nullopt), hit, std::nullopt), count,
        std::nullopt, std::nullopt);
  }
  const Tensor ratio = autograd::div(a, r, std::nullopt, std::nullopt);  // |x| / norm
  Tensor local =
      autograd::mul(autograd::sgn(self), autograd::pow(ratio, num(q - 1.0), std::nullopt), std::nullopt);
  // p < 1: |x|^(p-1) is infinite at x = 0, where PyTorch takes the (sub)gradient 0 rather than 0 * inf
  if (q < 1.0) local = autograd::where(autograd::eq(a, num(0.0), std::nullopt), zeros_of(local), local);
  // complex x: the gradient of the real norm is g * sgn(x) * ..., unconjugated, as abs's
  const Tensor out = autograd::mul(g, local, std::nullopt);
  return autograd::where(autograd::eq(r, num(0.0), std::nullopt), zeros_of(out), out);
}

std::vector<Tensor> cat_backward(const Tensor& grad, const std::vector<IntList>& sizes, int64_t dim) {
  std::vector<Tensor> out;
  const int64_t d = wrap_dim(dim, grad.dim());
  int64_t at = 0;
  for (const IntList& s : sizes) {
    if (s.size() == 1 && s[0] == 0 && grad.dim() != 1) {
      out.push_back(autograd::zeros(s, grad.dtype(), grad.device()));
      continue;
    }
    out.push_back(autograd::narrow(grad, d, at, s[d]));
    at += s[d];
  }
  return out;
}

namespace {
// A qparam's values (or tangents) shaped to broadcast against self: along the axis per channel.
Tensor along_channels(const Tensor& q, const Tensor& self, int64_t axis, bool per_channel) {
  if (!per_channel) return autograd::reshape(q, IntList{});
  IntList shape(self.dim(), 1);
  shape[axis] = q.numel();
  return autograd::reshape(q, shape);
}
}  // namespace

Tensor fake_quant_learnable_vjp(const Tensor& grad, const Tensor& self, const Tensor& scale,
                                const Tensor& zero_point, int64_t axis, int64_t quant_min, int64_t quant_max,
                                double grad_factor, bool per_channel, int which) {
  const auto local = autograd::_fake_quantize_learnable_local_grads(self, scale, zero_point, axis, quant_min,
                                                                    quant_max, per_channel);
  const Tensor d = which == 0 ? std::get<0>(local) : which == 1 ? std::get<1>(local) : std::get<2>(local);
  const Tensor g = times(autograd::to_dtype(grad, d.dtype(), false), d);
  if (which == 0) return g;
  IntList reduce;
  for (int64_t i = 0; i < self.dim(); ++i) {
    if (!per_channel || i != axis) reduce.push_back(i);
  }
  // (a 1-d per-channel input has nothing to sum; an empty dim list would sum everything)
  const Tensor summed = per_channel && reduce.empty() ? g : autograd::sum(g, reduce, false, std::nullopt);
  return autograd::reshape(autograd::scale(summed, Scalar(grad_factor)),
                           which == 1 ? scale.sizes() : zero_point.sizes());
}

Tensor fake_quant_learnable_jvp(const Tensor& self_t, const Tensor& scale_t, const Tensor& zero_point_t,
                                const Tensor& self, const Tensor& scale, const Tensor& zero_point,
                                int64_t axis, int64_t quant_min, int64_t quant_max, double grad_factor,
                                bool per_channel) {
  const auto local = autograd::_fake_quantize_learnable_local_grads(self, scale, zero_point, axis, quant_min,
                                                                    quant_max, per_channel);
  Tensor t;
  if (self_t.defined()) t = times(self_t, std::get<0>(local));
  if (scale_t.defined())
    t = add_tangents(
        t, autograd::scale(times(along_channels(scale_t, self, axis, per_channel), std::get<1>(local)),
                           Scalar(grad_factor)));
  if (zero_point_t.defined())
    t = add_tangents(
        t, autograd::scale(times(along_channels(zero_point_t, self, axis, per_channel), std::get<2>(local)),
                           Scalar(grad_factor)));
  return t.defined() ? autograd::to_dtype(t, self.dtype(), false) : t;
}

}  // namespace ember::autograd
