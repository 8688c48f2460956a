// Factory ops: zeros, ones, full, arange, linspace, eye and the *_like forms.
#include <cmath>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<FillFn> fill_stub("fill_");
DispatchStub<ArangeFn> arange_stub("arange");
DispatchStub<LinspaceFn> linspace_stub("linspace");

namespace {

Tensor allocate(const char* op, const IntList& size, DType dtype, std::optional<Device> device) {
  const Device d = device.value_or(Device());
  EMBER_CHECK(has_backend(d.type), NotImplementedError, "[", op, "] not implemented for ", d.str(),
              " (this build of ember has no ", device_type_name(d.type), " backend)");
  return empty(size, dtype, d);
}

DType dtype_of(const Scalar& v) {
  if (v.is_bool()) return DType::Bool;
  if (v.is_integral()) return DType::Int64;
  if (v.is_complex()) return to_complex_dtype(get_default_dtype());
  return get_default_dtype();
}

}  // namespace

Tensor fill_(const Tensor& self, const Scalar& value) {
  check_scalar_fits(value, self.dtype(), "fill_");
  self.bump_version();
  fill_stub.get(self.device().type)(self, value);
  return self;
}
Tensor zero_(const Tensor& self) {
  return fill_(self, Scalar(int64_t(0)));
}

namespace {
Tensor filled(const char* op, const IntList& size, const Scalar& value, DType dtype,
              std::optional<Device> device) {
  check_scalar_fits(value, dtype, op);
  Tensor out = allocate(op, size, dtype, device);
  fill_stub.get(out.device().type)(out, value);
  return out;
}
}  // namespace

Tensor full(const IntList& size, const Scalar& fill_value, std::optional<DType> dtype,
            std::optional<Device> device) {
  return filled("full", size, fill_value, dtype.value_or(dtype_of(fill_value)), device);
}
Tensor zeros(const IntList& size, std::optional<DType> dtype, std::optional<Device> device) {
  return filled("zeros", size, Scalar(int64_t(0)), dtype.value_or(get_default_dtype()), device);
}
Tensor ones(const IntList& size, std::optional<DType> dtype, std::optional<Device> device) {
  return filled("ones", size, Scalar(int64_t(1)), dtype.value_or(get_default_dtype()), device);
}
Tensor empty_like(const Tensor& self, std::optional<DType> dtype) {
  return empty(self.sizes(), dtype.value_or(self.dtype()), self.device());
}
Tensor zeros_like(const Tensor& self, std::optional<DType> dtype) {
  return full(self.sizes(), Scalar(int64_t(0)), dtype.value_or(self.dtype()), self.device());
}
Tensor ones_like(const Tensor& self, std::optional<DType> dtype) {
  return full(self.sizes(), Scalar(int64_t(1)), dtype.value_or(self.dtype()), self.device());
}
Tensor full_like(const Tensor& self, const Scalar& fill_value, std::optional<DType> dtype) {
  return full(self.sizes(), fill_value, dtype.value_or(self.dtype()), self.device());
}

Tensor arange(const Scalar& start, const std::optional<Scalar>& end, const Scalar& step,
              std::optional<DType> dtype, std::optional<Device> device) {
  // arange(end) counts from 0, as Python's range.
  const Scalar lo = end ? start : Scalar(int64_t(0));
  const Scalar hi = end ? *end : start;
  const bool floating = lo.is_floating_point() || hi.is_floating_point() || step.is_floating_point();
  const DType d = dtype.value_or(floating ? get_default_dtype() : DType::Int64);
  const double s = lo.to_double(), e = hi.to_double(), st = step.to_double();
  EMBER_CHECK(st != 0, Error, "[arange] step must be nonzero");
  EMBER_CHECK(std::isfinite(s) && std::isfinite(e), Error, "[arange] unsupported range: ", s, " -> ", e);
  EMBER_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), Error,
              "[arange] upper bound and larger bound inconsistent with step sign");
  const double n = std::ceil((e - s) / st);
  EMBER_CHECK(n < 9.2e18, Error, "[arange] invalid size, possible overflow?");
  Tensor out = allocate("arange", {static_cast<int64_t>(n)}, d, device);
  arange_stub.get(out.device().type)(out, lo, step);
  return out;
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, std::optional<DType> dtype,
                std::optional<Device> device) {
  EMBER_CHECK(steps >= 0, Error, "[linspace] number of steps must be non-negative");
  Tensor out = allocate("linspace", {steps}, dtype.value_or(get_default_dtype()), device);
  linspace_stub.get(out.device().type)(out, start.to_double(), end.to_double());
  return out;
}

Tensor eye(int64_t n, std::optional<int64_t> m, std::optional<DType> dtype, std::optional<Device> device) {
  EMBER_CHECK(n >= 0, Error, "[eye] n must be greater or equal to 0, got ", n);
  const int64_t cols = m.value_or(n);
  EMBER_CHECK(cols >= 0, Error, "[eye] m must be greater or equal to 0, got ", cols);
  Tensor out = zeros({n, cols}, dtype, device);
  fill_(diagonal(out, 0, 0, 1), Scalar(int64_t(1)));
  return out;
}

}  // namespace ember
