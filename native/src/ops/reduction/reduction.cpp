// Reductions: dims, keepdim and dtypes (kernel: src/backend/cpu/reduce_kernels.cpp).
#include <algorithm>
#include <cmath>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/dims.h"
#include "ops/kernels.h"
#include "ops/pointwise/pointwise.h"

namespace ember {

DispatchStub<ReduceFn> reduce_stub("reduce");
DispatchStub<ScanFn> scan_stub("scan");

namespace {

// Which dims are reduced: none given (or an empty list) means all of them.
std::vector<bool> reduced_mask(const char* op, const Tensor& t, const std::optional<IntList>& dim) {
  std::vector<bool> mask(t.dim(), !dim || dim->empty());
  if (dim) {
    for (int64_t d : *dim) {
      const int64_t w = dims::wrap(op, d, t.dim());
      if (t.dim() == 0) continue;
      EMBER_CHECK(!mask[w] || dim->empty(), Error, "[", op, "] dim ", w,
                  " appears multiple times in the list of dims");
      mask[w] = true;
    }
  }
  return mask;
}

// Reduces `in` (already of the kernel's dtype) over `mask`, giving `out_dtype`.
Tensor reduce(ReduceOp op, const char* name, const Tensor& in, const std::vector<bool>& mask, bool keepdim,
              DType out_dtype, bool needs_elements = false) {
  IntList order, kept_sizes, keep_shape;
  int64_t reduced = 0;
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (!mask[d]) {
      order.push_back(d);
      kept_sizes.push_back(in.sizes()[d]);
    }
    keep_shape.push_back(mask[d] ? 1 : in.sizes()[d]);
  }
  for (int64_t d = 0; d < in.dim(); ++d) {
    if (mask[d]) {
      EMBER_CHECK(!needs_elements || in.sizes()[d] != 0, IndexError, "[", name, "] Expected reduction dim ",
                  d, " to have non-zero size.");
      order.push_back(d);
      ++reduced;
    }
  }
  EMBER_CHECK(!needs_elements || in.numel() != 0 || reduced > 0, IndexError, "[", name,
              "] Expected reduction dim to be specified for input.numel() == 0.");
  Tensor out = empty(kept_sizes, out_dtype, in.device());
  if (out.numel() > 0) reduce_stub.get(in.device().type)(op, out, permute(in, order), reduced);
  return keepdim ? view(out, keep_shape) : out;
}

DType sum_dtype(const Tensor& self, std::optional<DType> dtype) {
  if (dtype) return *dtype;
  return is_integral(self.dtype(), true) ? DType::Int64 : self.dtype();
}

int64_t count(const Tensor& t, const std::vector<bool>& mask) {
  int64_t n = 1;
  for (int64_t d = 0; d < t.dim(); ++d) n *= mask[d] ? t.sizes()[d] : 1;
  return n;
}

}  // namespace

Tensor sum(const Tensor& self, const std::optional<IntList>& dim, bool keepdim, std::optional<DType> dtype) {
  const DType d = sum_dtype(self, dtype);
  return reduce(ReduceOp::Sum, "sum", pointwise::cast_to(self, d), reduced_mask("sum", self, dim), keepdim,
                d);
}

Tensor prod(const Tensor& self, const std::optional<IntList>& dim, bool keepdim, std::optional<DType> dtype) {
  const DType d = sum_dtype(self, dtype);
  return reduce(ReduceOp::Prod, "prod", pointwise::cast_to(self, d), reduced_mask("prod", self, dim), keepdim,
                d);
}

Tensor mean(const Tensor& self, const std::optional<IntList>& dim, bool keepdim, std::optional<DType> dtype) {
  const DType d = dtype.value_or(self.dtype());
  EMBER_CHECK(
      is_floating_point(d) || is_complex(d), Error,
      "[mean] could not infer output dtype. Input dtype must be either a floating point or complex dtype. "
      "Got: ",
      dtype_name(d));
  const std::vector<bool> mask = reduced_mask("mean", self, dim);
  Tensor total = reduce(ReduceOp::Sum, "mean", pointwise::cast_to(self, d), mask, keepdim, d);
  return div(total, wrapped_number(static_cast<double>(count(self, mask))), std::nullopt, total);
}

Tensor amax(const Tensor& self, const IntList& dim, bool keepdim) {
  EMBER_CHECK(!is_complex(self.dtype()), Error, "[amax] not implemented for complex dtype ",
              dtype_name(self.dtype()));
  return reduce(ReduceOp::Max, "amax", self, reduced_mask("amax", self, dim), keepdim, self.dtype(), true);
}

Tensor amin(const Tensor& self, const IntList& dim, bool keepdim) {
  EMBER_CHECK(!is_complex(self.dtype()), Error, "[amin] not implemented for complex dtype ",
              dtype_name(self.dtype()));
  return reduce(ReduceOp::Min, "amin", self, reduced_mask("amin", self, dim), keepdim, self.dtype(), true);
}

Tensor all(const Tensor& self, const std::optional<IntList>& dim, bool keepdim) {
  return reduce(ReduceOp::All, "all", pointwise::cast_to(self, DType::Bool), reduced_mask("all", self, dim),
                keepdim, DType::Bool);
}

Tensor any(const Tensor& self, const std::optional<IntList>& dim, bool keepdim) {
  return reduce(ReduceOp::Any, "any", pointwise::cast_to(self, DType::Bool), reduced_mask("any", self, dim),
                keepdim, DType::Bool);
}

namespace {
Tensor arg_reduce(ReduceOp op, const char* name, const Tensor& self, std::optional<int64_t> dim,
                  bool keepdim) {
  EMBER_CHECK(!is_complex(self.dtype()), Error, "[", name, "] not implemented for complex dtype ",
              dtype_name(self.dtype()));
  if (!dim) {
    EMBER_CHECK(self.numel() > 0, Error, "[", name,
                "] Expected reduction dim to be specified for input.numel() == 0.");
    Tensor flat = reshape(self, {-1});
    Tensor r = reduce(op, name, flat, {true}, false, DType::Int64, true);
    return keepdim ? reshape(r, IntList(self.dim(), 1)) : r;
  }
  return reduce(op, name, self, reduced_mask(name, self, IntList{*dim}), keepdim, DType::Int64, true);
}
}  // namespace

Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(ReduceOp::ArgMax, "argmax", self, dim, keepdim);
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(ReduceOp::ArgMin, "argmin", self, dim, keepdim);
}

namespace {
// var = sum(|x - mean|^2) / max(0, N - correction), two passes for accuracy.
Tensor variance(const char* name, const Tensor& self, const std::optional<IntList>& dim,
                const std::optional<Scalar>& correction, bool keepdim) {
  EMBER_CHECK(is_floating_point(self.dtype()), Error, "[", name,
              "] std and var only support floating point dtypes, but got ", dtype_name(self.dtype()));
  const std::vector<bool> mask = reduced_mask(name, self, dim);
  const double n = static_cast<double>(count(self, mask));
  const double c = correction ? correction->to_double() : 1.0;
  Tensor centered = sub(self, mean(self, dim, true, std::nullopt), Scalar(int64_t(1)), std::nullopt);
  Tensor squares = mul(centered, centered, std::nullopt);
  Tensor total = reduce(ReduceOp::Sum, name, squares, mask, keepdim, self.dtype());
  return div(total, wrapped_number(std::max(0.0, n - c)), std::nullopt, total);
}
}  // namespace

Tensor var(const Tensor& self, const std::optional<IntList>& dim, const std::optional<Scalar>& correction,
           bool keepdim) {
  return variance("var", self, dim, correction, keepdim);
}
Tensor std(const Tensor& self, const std::optional<IntList>& dim, const std::optional<Scalar>& correction,
           bool keepdim) {
  Tensor v = variance("std", self, dim, correction, keepdim);
  return sqrt(v, v);
}

namespace {
// Scans run on a contiguous copy (in `out_dtype`) with `dim` moved last, then move back.
// Returns (values, indices); indices only for Max/Min.
std::tuple<Tensor, Tensor> scan(ScanOp op, const char* name, const Tensor& self, int64_t dim,
                                DType out_dtype) {
  const int64_t d = dims::wrap(name, dim, self.dim());
  const bool with_indices = op == ScanOp::Max || op == ScanOp::Min;
  const Tensor moved = movedim(pointwise::cast_to(self, out_dtype), {d}, {-1}).contiguous();
  Tensor out = empty(moved.sizes(), out_dtype, self.device());
  Tensor indices = with_indices ? empty(moved.sizes(), DType::Int64, self.device()) : Tensor();
  if (out.numel() > 0) scan_stub.get(self.device().type)(op, out, indices, moved);
  if (self.dim() == 0) return {out, indices};
  return {movedim(out, {-1}, {d}).contiguous(),
          with_indices ? movedim(indices, {-1}, {d}).contiguous() : indices};
}

std::tuple<Tensor, Tensor> cumulative_extreme(ScanOp op, const char* name, const Tensor& self, int64_t dim) {
  EMBER_CHECK(!is_complex(self.dtype()), NotImplementedError, "[", name,
              "] not implemented for complex dtype ", dtype_name(self.dtype()));
  return scan(op, name, self, dim, self.dtype());
}
}  // namespace

Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return std::get<0>(scan(ScanOp::Sum, "cumsum", self, dim, sum_dtype(self, dtype)));
}
Tensor cumprod(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return std::get<0>(scan(ScanOp::Prod, "cumprod", self, dim, sum_dtype(self, dtype)));
}
std::tuple<Tensor, Tensor> cummax(const Tensor& self, int64_t dim) {
  return cumulative_extreme(ScanOp::Max, "cummax", self, dim);
}
std::tuple<Tensor, Tensor> cummin(const Tensor& self, int64_t dim) {
  return cumulative_extreme(ScanOp::Min, "cummin", self, dim);
}
Tensor logcumsumexp(const Tensor& self, int64_t dim) {
  EMBER_CHECK(is_floating_point(self.dtype()), NotImplementedError,
              "[logcumsumexp] not implemented for dtype ", dtype_name(self.dtype()),
              " (floating-point inputs only)");
  return std::get<0>(scan(ScanOp::LogSumExp, "logcumsumexp", self, dim, self.dtype()));
}

Tensor logsumexp(const Tensor& self, const IntList& dim, bool keepdim) {
  const Tensor x = is_floating_point(self.dtype()) ? self : pointwise::cast_to(self, get_default_dtype());
  if (x.numel() == 0) return log(sum(exp(x, std::nullopt), dim, keepdim, std::nullopt), std::nullopt);
  // Shift by the max (0 where the max is infinite) so exp cannot overflow.
  Tensor m = amax(x, dim, true);
  Tensor shift = where(isinf(m), zeros_like(m, std::nullopt), m);
  Tensor s = sum(exp(sub(x, shift, Scalar(int64_t(1)), std::nullopt), std::nullopt), dim, true, std::nullopt);
  Tensor r = add(log(s, std::nullopt), shift, Scalar(int64_t(1)), std::nullopt);
  return keepdim ? r : squeeze(r, dim);
}

}  // namespace ember
