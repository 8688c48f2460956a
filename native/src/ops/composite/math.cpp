// Pointwise and matrix ops that PyTorch scripts reach for, composed from existing ops (no kernels
// of their own): square, deg2rad, rad2deg, sinc, signbit, logaddexp, logaddexp2, xlogy, copysign,
// gcd, lcm, the bitwise shifts, trace, diag, diag_embed and diagflat.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/pointwise/pointwise.h"

namespace ember {
namespace {

constexpr double kPi = 3.14159265358979323846;
const Scalar kOne(int64_t(1));

Tensor num(double v) {
  return wrapped_number(Scalar(v));
}
Tensor inum(int64_t v) {
  return wrapped_number(Scalar(v));
}

// A composite's result written into `out` when given (shape, device and castability checked).
Tensor with_out(const char* op, const Tensor& result, const std::optional<Tensor>& out) {
  if (!out) return result;
  const Tensor o = pointwise::make_output(op, out, result.sizes(), result.dtype(), result.device());
  return pointwise::finish(result, o);
}

// Integers and bool computed in the default floating dtype, as PyTorch's float-only ops do.
Tensor as_floating(const Tensor& x) {
  return is_floating_point(x.dtype()) || is_complex(x.dtype()) ? x : to_dtype(x, get_default_dtype(), false);
}

void check_real(const char* op, const Tensor& x) {
  EMBER_CHECK(!is_complex(x.dtype()), NotImplementedError, "[", op, "] not implemented for complex dtype ",
              dtype_name(x.dtype()));
}

// Both operands in the floating dtype their promotion gives (integers -> the default dtype).
DType float_result(const Tensor& a, const Tensor& b) {
  const DType t = result_type(a, b);
  return is_floating_point(t) || is_complex(t) ? t : get_default_dtype();
}

void check_integral(const char* op, const Tensor& a, const Tensor& b, bool allow_bool) {
  for (const Tensor* t : {&a, &b}) {
    EMBER_CHECK(is_integral(t->dtype(), allow_bool), NotImplementedError, "[", op, "] not implemented for ",
                dtype_name(t->dtype()), " (it takes integer tensors)");
  }
}

}  // namespace

Tensor square(const Tensor& self, const std::optional<Tensor>& out) {
  const Tensor x = self.dtype() == DType::Bool ? to_dtype(self, DType::Int64, false) : self;
  return with_out("square", mul(x, x, std::nullopt), out);
}

namespace {
// self * factor; integers are scaled in float64 and rounded once to the default dtype.
Tensor scaled(const char* op, const Tensor& self, double factor, const std::optional<Tensor>& out) {
  check_real(op, self);
  if (is_floating_point(self.dtype())) return with_out(op, mul(self, num(factor), std::nullopt), out);
  const Tensor wide = mul(to_dtype(self, DType::Float64, false), num(factor), std::nullopt);
  return with_out(op, to_dtype(wide, get_default_dtype(), false), out);
}
}  // namespace

Tensor deg2rad(const Tensor& self, const std::optional<Tensor>& out) {
  return scaled("deg2rad", self, kPi / 180.0, out);
}

Tensor rad2deg(const Tensor& self, const std::optional<Tensor>& out) {
  return scaled("rad2deg", self, 180.0 / kPi, out);
}

Tensor sinc(const Tensor& self, const std::optional<Tensor>& out) {
  const Tensor x = as_floating(self);
  // pi * x rounded to float32 would lose the argument of sin for large |x|: compute real inputs
  // in float64 and round the result once.
  const Tensor wide = is_complex(x.dtype()) ? x : to_dtype(x, DType::Float64, false);
  const Tensor pix = mul(wide, num(kPi), std::nullopt);
  const Tensor ratio = div(sin(pix, std::nullopt), pix, std::nullopt, std::nullopt);
  const Tensor r = where(eq(wide, num(0.0), std::nullopt), ones_like(ratio, std::nullopt), ratio);
  return with_out("sinc", to_dtype(r, x.dtype(), false), out);
}

Tensor signbit(const Tensor& self, const std::optional<Tensor>& out) {
  check_real("signbit", self);
  if (!is_floating_point(self.dtype())) {
    const Tensor r =
        self.dtype() == DType::Bool ? zeros_like(self, DType::Bool) : lt(self, inum(0), std::nullopt);
    return with_out("signbit", r, out);
  }
  // The sign bit itself (set for -0.0 and for negative NaNs too), which no comparison can see:
  // read from float64, to which every floating dtype converts with its sign.
  EMBER_CHECK(self.device().type == DeviceType::CPU, NotImplementedError, "[signbit] not implemented for ",
              self.device().str());
  const Tensor x = to_dtype(self, DType::Float64, false).contiguous();
  Tensor r = empty(x.sizes(), DType::Bool, x.device());
  const double* src = static_cast<const double*>(x.data_ptr());
  bool* dst = static_cast<bool*>(r.data_ptr());
  for (int64_t i = 0, n = x.numel(); i < n; ++i) dst[i] = std::signbit(src[i]);
  return with_out("signbit", r, out);
}

namespace {
// log(e^a + e^b) (or log2(2^a + 2^b)) as max + log1p(exp(-|a - b|)), which neither overflows nor
// loses the smaller term; equal infinities (a - b is NaN) give that infinity.
Tensor log_add_exp(const char* op, const Tensor& self, const Tensor& other, bool base2) {
  check_real(op, self);
  check_real(op, other);
  const DType t = float_result(self, other);
  const Tensor a = to_dtype(self, t, false), b = to_dtype(other, t, false);
  const Tensor gap = neg(abs(sub(a, b, kOne, std::nullopt), std::nullopt), std::nullopt);
  Tensor tail = base2 ? div(log1p(exp2(gap, std::nullopt), std::nullopt), num(std::log(2.0)), std::nullopt,
                            std::nullopt)
                      : log1p(exp(gap, std::nullopt), std::nullopt);
  const Tensor sum_ = add(maximum(a, b, std::nullopt), tail, kOne, std::nullopt);
  return where(logical_and(isinf(a), eq(a, b, std::nullopt), std::nullopt), a, sum_);
}
}  // namespace

Tensor logaddexp(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  return with_out("logaddexp", log_add_exp("logaddexp", self, other, false), out);
}

Tensor logaddexp2(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  return with_out("logaddexp2", log_add_exp("logaddexp2", self, other, true), out);
}

Tensor xlogy(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  check_real("xlogy", self);
  check_real("xlogy", other);
  const DType t = float_result(self, other);
  const Tensor x = to_dtype(self, t, false), y = to_dtype(other, t, false);
  const Tensor product = mul(x, log(y, std::nullopt), std::nullopt);
  // 0 * log(y) is 0 for every y but NaN (PyTorch's xlogy).
  const Tensor zero =
      logical_and(eq(x, num(0.0), std::nullopt), logical_not(isnan(y), std::nullopt), std::nullopt);
  return with_out("xlogy", where(zero, zeros_like(product, std::nullopt), product), out);
}

Tensor copysign(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  check_real("copysign", self);
  check_real("copysign", other);
  const DType t = float_result(self, other);
  const Tensor magnitude = abs(to_dtype(self, t, false), std::nullopt);
  return with_out("copysign", where(signbit(other, std::nullopt), neg(magnitude, std::nullopt), magnitude),
                  out);
}

Tensor gcd(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  check_integral("gcd", self, other, false);
  const DType t = result_type(self, other);
  // Euclid on |a|, |b|, elementwise: at most ~92 rounds for 64-bit operands (Fibonacci worst case).
  Tensor a = abs(to_dtype(self, t, false), std::nullopt);
  Tensor b = abs(to_dtype(other, t, false), std::nullopt);
  const IntList shape = pointwise::broadcast_shapes("gcd", a.sizes(), b.sizes());
  a = clone(expand(a, shape));
  b = clone(expand(b, shape));
  while (*static_cast<const bool*>(any(ne(b, inum(0), std::nullopt), std::nullopt, false).data_ptr())) {
    const Tensor nonzero = ne(b, inum(0), std::nullopt);
    const Tensor safe_b = where(nonzero, b, ones_like(b, std::nullopt));
    const Tensor rest = where(nonzero, remainder(a, safe_b, std::nullopt), zeros_like(b, std::nullopt));
    a = where(nonzero, b, a);
    b = rest;
  }
  return with_out("gcd", a, out);
}

Tensor lcm(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  check_integral("lcm", self, other, false);
  const DType t = result_type(self, other);
  const Tensor a = to_dtype(self, t, false), b = to_dtype(other, t, false);
  const Tensor g = gcd(a, b, std::nullopt);
  const Tensor safe_g = where(eq(g, inum(0), std::nullopt), ones_like(g, std::nullopt), g);
  const Tensor l =
      abs(mul(div(a, safe_g, std::string("trunc"), std::nullopt), b, std::nullopt), std::nullopt);
  return with_out("lcm", where(eq(g, inum(0), std::nullopt), zeros_like(l, std::nullopt), l), out);
}

namespace {

// a << b and a >> b with PyTorch's rules: computed in int64 and wrapped to the result dtype; a
// shift that is negative or not below the width gives 0 (<<) or the sign fill (>>).
// As in PyTorch, the operands may be bool as long as the result type is an integer
// (a bool tensor shifted by an int, an int tensor by True).
Tensor shift(const char* op, const Tensor& self, const Tensor& other, bool left) {
  const DType t = result_type(self, other);
  EMBER_CHECK(is_integral(t, false), NotImplementedError, "[", op, "] not implemented for ", dtype_name(t),
              " (it takes integer tensors)");
  const int64_t width = itemsize(t) * 8;
  const Tensor a = to_dtype(self, DType::Int64, false);
  const Tensor b = to_dtype(other, DType::Int64, false);
  const Tensor out_of_range =
      logical_or(lt(b, inum(0), std::nullopt), ge(b, inum(width), std::nullopt), std::nullopt);
  const Tensor s =
      clamp(b, Scalar(int64_t(0)), Scalar(int64_t(std::min<int64_t>(width - 1, 62))), std::nullopt);
  const Tensor pow2 = pow(inum(2), s, std::nullopt);
  Tensor result;
  if (left) {
    // For width 64 a shift of 63 is the sign bit: a * 2^62 * 2 wraps as the hardware shift does.
    Tensor shifted = mul(a, pow2, std::nullopt);
    if (width == 64)
      shifted = where(eq(b, inum(63), std::nullopt), mul(shifted, inum(2), std::nullopt), shifted);
    result = where(out_of_range, zeros_like(shifted, std::nullopt), shifted);
  } else {
    const Tensor fill = where(lt(a, inum(0), std::nullopt), full_like(a, Scalar(int64_t(-1)), std::nullopt),
                              zeros_like(a, std::nullopt));
    Tensor shifted = floor_divide(a, pow2, std::nullopt);
    if (width == 64) shifted = where(eq(b, inum(63), std::nullopt), fill, shifted);
    result = where(out_of_range, fill, shifted);
  }
  return to_dtype(result, t, false);
}

}  // namespace

Tensor bitwise_left_shift(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  return with_out("bitwise_left_shift", shift("bitwise_left_shift", self, other, true), out);
}

Tensor bitwise_right_shift(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  return with_out("bitwise_right_shift", shift("bitwise_right_shift", self, other, false), out);
}

Tensor trace(const Tensor& self) {
  EMBER_CHECK(self.dim() == 2, Error, "[trace] expected a matrix, but got tensor with dim ", self.dim());
  EMBER_CHECK(self.dtype() != DType::Bool, NotImplementedError, "[trace] not implemented for 'Bool'");
  return sum(diagonal(self, 0, 0, 1), std::nullopt, false, std::nullopt);
}

Tensor diag_embed(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  EMBER_CHECK(self.dim() >= 1, Error, "[diag_embed] expected a tensor with at least 1 dimension, but got 0");
  const int64_t rank = self.dim() + 1;
  auto wrap = [&](int64_t d) {
    EMBER_CHECK(d >= -rank && d < rank, IndexError, "Dimension out of range (expected to be in range of [",
                -rank, ", ", rank - 1, "], but got ", d, ")");
    return d < 0 ? d + rank : d;
  };
  const int64_t d1 = wrap(dim1), d2 = wrap(dim2);
  EMBER_CHECK(d1 != d2, Error, "[diag_embed] diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  const int64_t n = self.size(-1) + (offset < 0 ? -offset : offset);
  IntList shape;
  for (int64_t i = 0, k = 0; i < rank; ++i) {
    shape.push_back(i == d1 || i == d2 ? n : self.size(k++));
  }
  Tensor result = zeros(shape, self.dtype(), self.device());
  copy_(diagonal(result, offset, d1, d2), self);
  return result;
}

Tensor diag(const Tensor& self, int64_t diagonal_) {
  EMBER_CHECK(self.dim() == 1 || self.dim() == 2, Error, "[diag] diag(): Supports 1D or 2D tensors. Got ",
              self.dim(), "D");
  if (self.dim() == 1) return diag_embed(self, diagonal_, 0, 1);
  return clone(diagonal(self, diagonal_, 0, 1));
}

Tensor diagflat(const Tensor& self, int64_t offset) {
  return diag_embed(reshape(self, {-1}), offset, 0, 1);
}

}  // namespace ember
