// Activation functions and other pointwise ops composed from existing ops (no kernels of their
// own). gelu, silu, mish, softplus, hardswish and hardsigmoid have fused kernels: src/ops/activation/.
#include <cmath>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"

namespace ember {
namespace {

const Scalar kOne(int64_t(1));
Tensor add_(const Tensor& a, const Tensor& b) {
  return add(a, b, kOne, std::nullopt);
}
Tensor sub_(const Tensor& a, const Tensor& b) {
  return sub(a, b, kOne, std::nullopt);
}
Tensor mul_(const Tensor& a, const Tensor& b) {
  return mul(a, b, std::nullopt);
}
Tensor div_(const Tensor& a, const Tensor& b) {
  return div(a, b, std::nullopt, std::nullopt);
}

// The largest finite value of a floating dtype (nan_to_num's default for +inf).
double dtype_max(DType d) {
  switch (d) {
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return 3.4028234663852886e38;
    case DType::Float8_e4m3fn: return 448.0;
    case DType::Float8_e5m2: return 57344.0;
    case DType::Float8_e4m3fnuz: return 240.0;
    case DType::Float8_e5m2fnuz: return 57344.0;
    default: return 1.7976931348623157e308;
  }
}

Tensor floating(const char* op, const Tensor& x) {
  EMBER_CHECK(!is_complex(x.dtype()), NotImplementedError, "[", op, "] not implemented for complex dtype ",
              dtype_name(x.dtype()));
  return is_floating_point(x.dtype()) ? x : to_dtype(x, get_default_dtype(), false);
}

}  // namespace

Tensor relu6(const Tensor& self) {
  return hardtanh(self, 0.0, 6.0);
}

Tensor hardtanh(const Tensor& self, double min_val, double max_val) {
  EMBER_CHECK(min_val <= max_val, ValueError, "[hardtanh] expected min_val <= max_val, but got ", min_val,
              " > ", max_val);
  return clamp(self, Scalar(min_val), Scalar(max_val), std::nullopt);
}

Tensor leaky_relu(const Tensor& self, double negative_slope) {
  const Tensor x = floating("leaky_relu", self);
  return where(gt(x, wrapped_number(0.0), std::nullopt), x, mul_(x, wrapped_number(negative_slope)));
}

Tensor elu(const Tensor& self, double alpha, double scale, double input_scale) {
  const Tensor x = floating("elu", self);
  Tensor negative =
      mul_(expm1(mul_(x, wrapped_number(input_scale)), std::nullopt), wrapped_number(alpha * scale));
  return where(gt(x, wrapped_number(0.0), std::nullopt), mul_(x, wrapped_number(scale)), negative);
}

Tensor selu(const Tensor& self) {
  // The constants of Klambauer et al. (2017), as PyTorch uses them.
  return elu(self, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0);
}

Tensor celu(const Tensor& self, double alpha) {
  EMBER_CHECK(alpha != 0, ValueError, "[celu] ZeroDivisionError: alpha cannot be 0 for CELU");
  return elu(self, alpha, 1.0, 1.0 / alpha);
}

Tensor logsigmoid(const Tensor& self) {
  const Tensor x = floating("logsigmoid", self);
  return neg(softplus(neg(x, std::nullopt), 1.0, 20.0), std::nullopt);
}

Tensor softsign(const Tensor& self) {
  const Tensor x = floating("softsign", self);
  return div_(x, add_(abs(x, std::nullopt), wrapped_number(1.0)));
}

Tensor tanhshrink(const Tensor& self) {
  const Tensor x = floating("tanhshrink", self);
  return sub_(x, tanh(x, std::nullopt));
}

Tensor threshold(const Tensor& self, const Scalar& threshold, const Scalar& value) {
  return where(gt(self, wrapped_number(threshold), std::nullopt), self, wrapped_number(value));
}

Tensor logit(const Tensor& self, std::optional<double> eps) {
  Tensor x = floating("logit", self);
  if (eps) x = clamp(x, Scalar(*eps), Scalar(1.0 - *eps), std::nullopt);
  return log(div_(x, sub(wrapped_number(1.0), x, kOne, std::nullopt)), std::nullopt);
}

Tensor nan_to_num(const Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  if (!is_floating_point(self.dtype())) return self.clone();
  const Tensor big = full({}, Scalar(posinf.value_or(dtype_max(self.dtype()))), self.dtype(), Device());
  const Tensor small = full({}, Scalar(neginf.value_or(-dtype_max(self.dtype()))), self.dtype(), Device());
  const Tensor zero = full({}, Scalar(nan.value_or(0.0)), self.dtype(), Device());
  Tensor out = where(isnan(self), zero, self);
  out = where(eq(out, wrapped_number(INFINITY), std::nullopt), big, out);
  return where(eq(out, wrapped_number(-INFINITY), std::nullopt), small, out);
}

Tensor heaviside(const Tensor& self, const Tensor& values) {
  EMBER_CHECK(self.dtype() == values.dtype() || values.impl()->is_wrapped_number, Error,
              "[heaviside] heaviside is not yet implemented for tensors with different dtypes");
  const Tensor zero = zeros_like(self, std::nullopt);
  const Tensor one = ones_like(self, std::nullopt);
  const Tensor step = where(eq(self, zero, std::nullopt), to_dtype(values, self.dtype(), false),
                            where(gt(self, zero, std::nullopt), one, zero));
  return is_floating_point(self.dtype()) ? where(isnan(self), self, step) : step;  // NaN stays NaN
}

Tensor lerp(const Tensor& self, const Tensor& end, const Tensor& weight) {
  return add_(self, mul_(weight, sub_(end, self)));
}

Tensor addcmul(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) {
  return add(self, mul_(tensor1, tensor2), value, std::nullopt);
}

Tensor addcdiv(const Tensor& self, const Tensor& tensor1, const Tensor& tensor2, const Scalar& value) {
  EMBER_CHECK(
      !(is_integral(tensor1.dtype(), true) && is_integral(tensor2.dtype(), true)), Error,
      "[addcdiv] Integer division with addcdiv is no longer supported, and in a future release addcdiv will "
      "perform a true division of tensor1 and tensor2.");
  return add(self, div_(tensor1, tensor2), value, std::nullopt);
}

Tensor nansum(const Tensor& self, const std::optional<IntList>& dim, bool keepdim,
              std::optional<DType> dtype) {
  if (!is_floating_point(self.dtype())) return sum(self, dim, keepdim, dtype);
  return sum(where(isnan(self), zeros_like(self, std::nullopt), self), dim, keepdim, dtype);
}

Tensor nanmean(const Tensor& self, const std::optional<IntList>& dim, bool keepdim,
               std::optional<DType> dtype) {
  EMBER_CHECK(is_floating_point(self.dtype()), Error,
              "[nanmean] nanmean(): expected input to have floating point dtype but got ",
              dtype_name(self.dtype()));
  const Tensor present = logical_not(isnan(self), std::nullopt);
  return div_(nansum(self, dim, keepdim, dtype), sum(present, dim, keepdim, std::nullopt));
}

Tensor count_nonzero(const Tensor& self, const std::optional<IntList>& dim) {
  return sum(ne(self, wrapped_number(0.0), std::nullopt), dim, false, std::nullopt);
}

}  // namespace ember
