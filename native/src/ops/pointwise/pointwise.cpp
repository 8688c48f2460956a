// The pointwise ops: broadcasting, PyTorch's type promotion, out= and in-place handling.
// Kernels: src/backend/cpu/{unary,binary}_kernels.cpp.
#include "ops/pointwise/pointwise.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/dims.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<UnaryFn> unary_stub("unary");
DispatchStub<BinaryFn> binary_stub("binary");
DispatchStub<WhereFn> where_stub("where");
DispatchStub<ClampFn> clamp_stub("clamp");

namespace pointwise {

IntList broadcast_shapes(const char* op, const IntList& a, const IntList& b) {
  const size_t n = std::max(a.size(), b.size());
  IntList out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = i < n - a.size() ? 1 : a[i - (n - a.size())];
    const int64_t y = i < n - b.size() ? 1 : b[i - (n - b.size())];
    EMBER_CHECK(x == y || x == 1 || y == 1, Error, "[", op, "] The size of tensor a (", x,
                ") must match the size of tensor b (", y, ") at non-singleton dimension ", i);
    out[i] = x == 1 ? y : x;
  }
  return out;
}

Tensor expand_to(const Tensor& t, const IntList& shape, const char* op) {
  if (t.sizes() == shape) return t;
  return ember::expand(t, shape);
}

Tensor cast_to(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  Tensor out = empty_like_layout(t.sizes(), dtype, t.device(), {&t});
  copy_stub.get(t.device().type)(out, t);
  return out;
}

// Note [output layout]: as in PyTorch, a pointwise result takes the memory order of its inputs
// (dims sorted by the inputs' strides, the first input that orders two dims deciding), so
// `x.t().abs()` is laid out as x.t() and both walk memory forwards (Note [strided loop]).
// Contiguous inputs, the common case, give a contiguous result.
Tensor empty_like_layout(const IntList& shape, DType dtype, Device device,
                         std::initializer_list<const Tensor*> like) {
  const int64_t ndim = static_cast<int64_t>(shape.size());
  bool all_contiguous = true;
  for (const Tensor* t : like) all_contiguous = all_contiguous && (t->dim() == 0 || t->is_contiguous());
  if (all_contiguous || ndim < 2) return empty(shape, dtype, device);
  // stride of input t along dim d of shape, 0 where it is broadcast or of size 1
  auto stride = [&](const Tensor* t, int64_t d) -> int64_t {
    const int64_t td = d - (ndim - t->dim());
    return (td < 0 || t->sizes()[td] == 1) ? 0 : t->strides()[td];
  };
  auto outer_of = [&](int64_t a, int64_t b) {
    for (const Tensor* t : like) {
      const int64_t sa = stride(t, a), sb = stride(t, b);
      if (sa == 0 || sb == 0 || sa == sb) continue;
      return sa > sb;
    }
    return false;
  };
  IntList order(ndim);  // outermost first; a stable insertion sort keeps undecided dims in place
  for (int64_t d = 0; d < ndim; ++d) order[d] = d;
  bool permuted = false;
  for (int64_t i = 1; i < ndim; ++i) {
    for (int64_t j = i; j > 0 && outer_of(order[j], order[j - 1]); --j) {
      std::swap(order[j], order[j - 1]);
      permuted = true;
    }
  }
  if (!permuted) return empty(shape, dtype, device);
  IntList sizes(ndim), strides(ndim);
  for (int64_t k = 0; k < ndim; ++k) sizes[k] = shape[order[k]];
  const IntList dense = contiguous_strides(sizes);
  for (int64_t k = 0; k < ndim; ++k) strides[order[k]] = dense[k];
  return as_strided(empty(sizes, dtype, device), shape, strides, 0);
}

Tensor make_output(const char* op, const std::optional<Tensor>& out, const IntList& shape, DType result,
                   Device device, std::initializer_list<const Tensor*> like) {
  if (!out) return empty_like_layout(shape, result, device, like);
  const Tensor& o = *out;
  EMBER_CHECK(o.device() == device, Error, "[", op, "] expected out= on ", device.str(), ", but got ",
              o.device().str());
  EMBER_CHECK(can_cast(result, o.dtype()), Error, "[", op, "] result type ", dtype_name(result),
              " can't be cast to the desired output type ", dtype_name(o.dtype()));
  if (o.sizes() != shape) {
    EMBER_CHECK(o.numel() == 0, Error, "[", op, "] output with shape ", dims::str(o.sizes()),
                " doesn't match the broadcast shape ", dims::str(shape));
    // An empty out= is resized, as PyTorch does.
    Tensor fresh = empty(shape, o.dtype(), o.device());
    TensorImpl* impl = o.impl();
    impl->storage = fresh.storage();
    impl->sizes = shape;
    impl->strides = fresh.strides();
    impl->storage_offset = 0;
  }
  o.bump_version();
  if (o.dtype() != result) return empty_like_layout(shape, result, device, like);  // copied by finish()
  return o;
}

Tensor finish(const Tensor& computed, const std::optional<Tensor>& out) {
  if (!out || computed.is_same(*out)) return computed;
  copy_stub.get(computed.device().type)(*out, computed);
  return *out;
}

}  // namespace pointwise

using namespace pointwise;

namespace {

// Note [pointwise facts]: a pointwise op with a kernel of its own is declared with `kernel=` in
// native/ops/declarations.py; gen_ops.py lists it in ember/pointwise_ops.h, which gives its
// UnaryOp / BinaryOp entry, its name, its form and whether it takes complex inputs
// (pointwise_facts, src/ops/kernels.h). unary() and binary() check and compute by those facts,
// and the entry points of the ops not declared hand_written=True are defined from the lists at
// the end of this file.

void check_complex(const PointwiseFacts& f, DType d) {
  EMBER_CHECK(f.complex_ok || !is_complex(d), NotImplementedError, "[", f.name,
              "] not implemented for complex dtype ", dtype_name(d));
}

Tensor unary(UnaryOp op, const Tensor& self, const std::optional<Tensor>& out) {
  const PointwiseFacts& f = pointwise_facts(op);
  const DType d = self.dtype();
  DType compute = d, result = d;
  if (f.form == PointwiseForm::Integral) {
    EMBER_CHECK(is_integral(d, true), Error, "[", f.name, "] expected integral or bool tensors, but got ",
                dtype_name(d));
  }
  check_complex(f, d);
  if (f.form == PointwiseForm::Float && !is_floating_point(d) && !is_complex(d)) {
    compute = result = get_default_dtype();  // integers and bool compute in floating point
  }
  if (f.form == PointwiseForm::Predicate) result = DType::Bool;
  Tensor output = make_output(f.name, out, self.sizes(), result, self.device(), {&self});
  unary_stub.get(self.device().type)(op, output, cast_to(self, compute));
  return finish(output, out);
}

Tensor binary(BinaryOp op, const Tensor& self, const Tensor& other, const std::optional<Tensor>& out,
              const Scalar& alpha = Scalar(int64_t(1))) {
  const PointwiseFacts& f = pointwise_facts(op);
  const char* name = f.name;
  EMBER_CHECK(self.device() == other.device() || other.impl()->is_wrapped_number || other.dim() == 0, Error,
              "[", name, "] expected all tensors to be on the same device, but found at least two devices, ",
              self.device().str(), " and ", other.device().str());
  DType compute = result_type(self, other);
  if (f.form == PointwiseForm::Float && !is_floating_point(compute) && !is_complex(compute)) {
    compute = get_default_dtype();
  }
  EMBER_CHECK(!(f.form == PointwiseForm::Integral && !is_integral(compute, true)), Error, "[", name,
              "] expected integral or bool tensors, but got ", dtype_name(compute));
  EMBER_CHECK(!(f.form == PointwiseForm::FloatOnly && !is_floating_point(compute)), NotImplementedError, "[",
              name, "] not implemented for dtype ", dtype_name(compute));
  check_complex(f, compute);
  const IntList shape = broadcast_shapes(name, self.sizes(), other.sizes());
  const DType result_dtype = f.form == PointwiseForm::Compare ? DType::Bool : compute;
  Tensor result = make_output(name, out, shape, result_dtype, self.device(), {&self, &other});
  binary_stub.get(self.device().type)(op, result, expand_to(cast_to(self, compute), shape, name),
                                      expand_to(cast_to(other, compute), shape, name), alpha);
  return finish(result, out);
}

}  // namespace

// ---- the entry points of the ops declared hand_written=True (the others: the end of this file)

Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha, const std::optional<Tensor>& out) {
  const DType t = result_type(self, other);
  EMBER_CHECK(!(is_integral(t, true) && (alpha.is_floating_point() || alpha.is_complex())), Error,
              "[add] For integral input tensors, argument alpha must not be a floating point number.");
  check_scalar_fits(alpha, t, "add");  // Note [scalar range]
  return binary(BinaryOp::Add, self, other, out, alpha);
}
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha, const std::optional<Tensor>& out) {
  EMBER_CHECK(!(self.dtype() == DType::Bool && other.dtype() == DType::Bool), Error,
              "[sub] Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
              "`logical_xor()` operator instead.");
  const DType t = result_type(self, other);
  EMBER_CHECK(!(is_integral(t, true) && (alpha.is_floating_point() || alpha.is_complex())), Error,
              "[sub] For integral input tensors, argument alpha must not be a floating point number.");
  check_scalar_fits(alpha, t, "sub");  // Note [scalar range]
  return binary(BinaryOp::Sub, self, other, out, alpha);
}
Tensor div(const Tensor& self, const Tensor& other, const std::optional<std::string>& rounding_mode,
           const std::optional<Tensor>& out) {
  if (!rounding_mode) return binary(BinaryOp::Div, self, other, out);
  EMBER_CHECK(*rounding_mode == "trunc" || *rounding_mode == "floor", ValueError,
              "[div] expected rounding_mode to be one of None, 'trunc', or 'floor', but got '",
              *rounding_mode, "'");
  return binary(*rounding_mode == "trunc" ? BinaryOp::DivTrunc : BinaryOp::DivFloor, self, other, out);
}
Tensor true_divide(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  return div(self, other, std::nullopt, out);
}
Tensor floor_divide(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  return binary(BinaryOp::DivFloor, self, other, out);
}
Tensor pow(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) {
  // As PyTorch, only a Python number as exponent is checked; an integer tensor of exponents
  // keeps C's truncating integer powers (2 ** -1 == 0).
  if (other.impl()->is_wrapped_number && is_integral(other.dtype(), true) &&
      is_integral(result_type(self, other), true)) {
    EMBER_CHECK(other.dtype() == DType::Bool || other.data<int64_t>()[0] >= 0, Error,
                "[pow] Integers to negative integer powers are not allowed.");
  }
  return binary(BinaryOp::Pow, self, other, out);
}

namespace {

// The modified Bessel function of the first kind I_nu(x), nu = 0 or 1, in double; scaled by
// exp(-|x|) when `scaled` (i0e, i1e). Up to |x| = 30 the power series
// I_nu(x) = (x/2)^nu sum_k (x^2/4)^k / (k! (k + nu)!), whose terms are all positive (no
// cancellation); beyond, the asymptotic series
// I_nu(x) ~ e^x / sqrt(2 pi x) sum_k (-1)^k prod_{j<=k} (4nu^2 - (2j-1)^2) / (8 j x),
// whose smallest term there is below 1e-25. I_0 is even, I_1 odd.
double bessel_i_double(int nu, double x, bool scaled) {
  if (std::isnan(x)) return x;
  const double ax = std::fabs(x);
  const double sign = (nu == 1 && x < 0.0) ? -1.0 : 1.0;
  if (std::isinf(ax)) return scaled ? sign * 0.0 : sign * ax;
  if (ax <= 30.0) {
    const double q = 0.25 * ax * ax;
    double term = nu == 1 ? 0.5 * ax : 1.0, sum = term;
    for (int k = 1; k < 500 && term > 1e-17 * sum; ++k) {
      term *= q / (static_cast<double>(k) * static_cast<double>(k + nu));
      sum += term;
    }
    return sign * (scaled ? sum * std::exp(-ax) : sum);
  }
  const double mu = 4.0 * nu * nu;
  double term = 1.0, sum = 1.0;
  for (int k = 1; k < 500; ++k) {
    const double odd = 2.0 * k - 1.0;
    term *= -(mu - odd * odd) / (8.0 * k * ax);
    sum += term;
    if (std::fabs(term) < 1e-17 * std::fabs(sum)) break;
  }
  const double scaled_value = sum / std::sqrt(2.0 * 3.14159265358979323846 * ax);
  if (scaled) return sign * scaled_value;
  const double half =
      std::exp(0.5 * ax);  // e^x in two halves: I_nu(x) is finite a little past e^x's overflow
  return sign * (half * (half * scaled_value));
}

// i0, i0e, i1, i1e: a float op (integers compute in the default dtype) evaluated in double, one
// element at a time (a scalar loop; the series has no vector form worth a kernel per ISA).
Tensor bessel_i(const char* name, int nu, bool scaled, const Tensor& self, const std::optional<Tensor>& out) {
  EMBER_CHECK(!is_complex(self.dtype()), NotImplementedError, "[", name,
              "] not implemented for complex dtype ", dtype_name(self.dtype()));
  EMBER_CHECK(self.device().type == DeviceType::CPU, NotImplementedError, "[", name, "] not implemented for ",
              self.device().str());
  const DType compute = is_floating_point(self.dtype()) ? self.dtype() : get_default_dtype();
  Tensor result = make_output(name, out, self.sizes(), compute, self.device());
  const Tensor x = to_dtype(self, DType::Float64, false).contiguous();
  Tensor values = empty(x.sizes(), DType::Float64, x.device());
  const double* in = x.data<double>();
  double* o = values.data<double>();
  for (int64_t i = 0; i < x.numel(); ++i) o[i] = bessel_i_double(nu, in[i], scaled);
  copy_(result, values);
  return finish(result, out);
}

}  // namespace

Tensor i0(const Tensor& self, const std::optional<Tensor>& out) {
  return bessel_i("i0", 0, false, self, out);
}
Tensor special_i0e(const Tensor& self, const std::optional<Tensor>& out) {
  return bessel_i("special_i0e", 0, true, self, out);
}
Tensor special_i1(const Tensor& self, const std::optional<Tensor>& out) {
  return bessel_i("special_i1", 1, false, self, out);
}
Tensor special_i1e(const Tensor& self, const std::optional<Tensor>& out) {
  return bessel_i("special_i1e", 1, true, self, out);
}

Tensor neg(const Tensor& self, const std::optional<Tensor>& out) {
  EMBER_CHECK(self.dtype() != DType::Bool, Error,
              "[neg] is not supported on bool tensors (Negation, the `-` operator, on a bool tensor is not "
              "supported)");
  return unary(UnaryOp::Neg, self, out);
}

// round(decimals=d): round-half-even of x * 10^d, divided back (PyTorch's definition, computed in
// x's dtype; for d < 0 the scale divides first).
Tensor round(const Tensor& self, int64_t decimals, const std::optional<Tensor>& out) {
  if (decimals == 0) return unary(UnaryOp::Round, self, out);
  EMBER_CHECK(is_floating_point(self.dtype()), NotImplementedError,
              "[round] round with decimals is not implemented for ", dtype_name(self.dtype()));
  const Tensor scale = wrapped_number(Scalar(std::pow(10.0, static_cast<double>(std::abs(decimals)))));
  if (decimals > 0) {
    const Tensor whole = unary(UnaryOp::Round, mul(self, scale, std::nullopt), std::nullopt);
    return div(whole, scale, std::nullopt, out);
  }
  const Tensor whole = unary(UnaryOp::Round, div(self, scale, std::nullopt, std::nullopt), std::nullopt);
  return mul(whole, scale, out);
}

Tensor abs(const Tensor& self, const std::optional<Tensor>& out) {
  check_complex(pointwise_facts(UnaryOp::Abs), self.dtype());
  const DType d = to_real_dtype(self.dtype());  // |complex| is real
  Tensor result = make_output("abs", out, self.sizes(), d, self.device(), {&self});
  unary_stub.get(self.device().type)(UnaryOp::Abs, result, self);
  return finish(result, out);
}
Tensor isnan(const Tensor& self) {
  return unary(UnaryOp::Isnan, self, std::nullopt);
}
Tensor isinf(const Tensor& self) {
  return unary(UnaryOp::Isinf, self, std::nullopt);
}
Tensor isfinite(const Tensor& self) {
  return unary(UnaryOp::Isfinite, self, std::nullopt);
}

Tensor clamp(const Tensor& self, const std::optional<Scalar>& min, const std::optional<Scalar>& max,
             const std::optional<Tensor>& out) {
  EMBER_CHECK(min || max, Error, "[clamp] At least one of 'min' or 'max' must not be None");
  EMBER_CHECK(!is_complex(self.dtype()), NotImplementedError, "[clamp] not implemented for complex dtype ",
              dtype_name(self.dtype()));
  DType d = self.dtype();
  // A float bound on an integer tensor promotes, as PyTorch's result_type with a wrapped number does.
  if (is_integral(d, true) && ((min && min->is_floating_point()) || (max && max->is_floating_point()))) {
    d = get_default_dtype();
  }
  Tensor result = make_output("clamp", out, self.sizes(), d, self.device(), {&self});
  clamp_stub.get(self.device().type)(result, cast_to(self, d), min ? &*min : nullptr, max ? &*max : nullptr);
  return finish(result, out);
}

Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other) {
  EMBER_CHECK(condition.dtype() == DType::Bool, TypeError,
              "[where] expected condition to be a boolean tensor, but got a tensor with dtype ",
              dtype_name(condition.dtype()));
  const DType d = result_type(self, other);
  const IntList shape =
      broadcast_shapes("where", broadcast_shapes("where", condition.sizes(), self.sizes()), other.sizes());
  Tensor result = empty_like_layout(shape, d, self.device(), {&condition, &self, &other});
  where_stub.get(self.device().type)(result, expand_to(condition, shape, "where"),
                                     expand_to(cast_to(self, d), shape, "where"),
                                     expand_to(cast_to(other, d), shape, "where"));
  return result;
}

// ---- the entry points of the other pointwise ops, from the generated lists (Note [pointwise facts])
#define EMBER_UNARY_ENTRY_HandWritten(op, fn)
#define EMBER_UNARY_ENTRY_Generated(op, fn)                         \
  Tensor fn(const Tensor& self, const std::optional<Tensor>& out) { \
    return unary(UnaryOp::op, self, out);                           \
  }
#define EMBER_UNARY_ENTRY(op, fn, form, complex_ok, entry) EMBER_UNARY_ENTRY_##entry(op, fn)
EMBER_FORALL_UNARY_OPS(EMBER_UNARY_ENTRY)
#undef EMBER_UNARY_ENTRY
#undef EMBER_UNARY_ENTRY_Generated
#undef EMBER_UNARY_ENTRY_HandWritten

#define EMBER_BINARY_ENTRY_HandWritten(op, fn)
#define EMBER_BINARY_ENTRY_Generated(op, fn)                                             \
  Tensor fn(const Tensor& self, const Tensor& other, const std::optional<Tensor>& out) { \
    return binary(BinaryOp::op, self, other, out);                                       \
  }
#define EMBER_BINARY_ENTRY(op, fn, form, complex_ok, entry) EMBER_BINARY_ENTRY_##entry(op, fn)
EMBER_FORALL_BINARY_OPS(EMBER_BINARY_ENTRY)
#undef EMBER_BINARY_ENTRY
#undef EMBER_BINARY_ENTRY_Generated
#undef EMBER_BINARY_ENTRY_HandWritten

}  // namespace ember
