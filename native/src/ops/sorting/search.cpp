// searchsorted / bucketize (binary search per value), unique / unique_consecutive, and norm.
#include <algorithm>
#include <cmath>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/dims.h"

namespace ember {

// For each value, the insertion index into the last dim of sorted_sequence (left: first index
// with seq >= v; right: first with seq > v). The sequence's leading dims match the values'.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& self, bool out_int32, bool right) {
  EMBER_CHECK(sorted_sequence.device().type == DeviceType::CPU, NotImplementedError,
              "[searchsorted] not implemented for ", sorted_sequence.device().str());
  EMBER_CHECK(sorted_sequence.dim() >= 1, Error,
              "[searchsorted] boundaries tensor should be at least 1 dimension");
  const bool one_d = sorted_sequence.dim() == 1;
  EMBER_CHECK(
      one_d || (sorted_sequence.dim() == self.dim() &&
                IntList(sorted_sequence.sizes().begin(), sorted_sequence.sizes().end() - 1) ==
                    IntList(self.sizes().begin(), self.sizes().end() - 1)),
      Error,
      "[searchsorted] boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries "
      "tensor and input value tensor must match, but we got boundaries tensor ",
      dims::str(sorted_sequence.sizes()), " and input value tensor ", dims::str(self.sizes()));
  const DType common = promote_types(sorted_sequence.dtype(), self.dtype());
  EMBER_CHECK(!is_complex(common), Error, "[searchsorted] not implemented for complex dtype");
  const Tensor seq = to_dtype(sorted_sequence, DType::Float64, false).contiguous();
  const Tensor vals = to_dtype(self, DType::Float64, false).contiguous();
  const int64_t n = seq.sizes().back();
  const int64_t per_row = self.dim() == 0 ? 1 : self.sizes().back();
  Tensor out = empty(self.sizes(), DType::Int64, self.device());
  const double* s = seq.data<double>();
  const double* v = vals.data<double>();
  int64_t* o = out.data<int64_t>();
  for (int64_t i = 0; i < vals.numel(); ++i) {
    const double* row = s + (one_d ? 0 : (i / std::max<int64_t>(per_row, 1)) * n);
    // NaN sorts last (as in sort), so it compares greater than every number.
    auto less = [](double a, double b) { return a < b || (b != b && a == a); };
    const double* at =
        right ? std::upper_bound(row, row + n, v[i], less) : std::lower_bound(row, row + n, v[i], less);
    o[i] = at - row;
  }
  return out_int32 ? to_dtype(out, DType::Int32, false) : out;
}

Tensor bucketize(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
  EMBER_CHECK(boundaries.dim() == 1, Error, "[bucketize] boundaries tensor must be 1 dimension, but got dim(",
              boundaries.dim(), ")");
  return searchsorted(boundaries, self, out_int32, right);
}

// (values, inverse, counts) of the flattened input; `sorted_input` says whether equal values
// are adjacent already (unique_consecutive) or need sorting first (unique).
std::tuple<Tensor, Tensor, Tensor> unique_runs(const Tensor& self, bool sort_first) {
  const Tensor flat = reshape(self, {-1});
  Tensor values = flat, order;
  if (sort_first) std::tie(values, order) = sort(flat, 0, false, true);
  const int64_t n = values.numel();
  if (n == 0) {
    return {empty({0}, self.dtype(), self.device()), empty(self.sizes(), DType::Int64, self.device()),
            empty({0}, DType::Int64, self.device())};
  }
  // A run starts where a value differs from its predecessor (NaNs each start their own run).
  Tensor starts = ones({n}, DType::Bool, self.device());
  if (n > 1)
    copy_(narrow(starts, 0, 1, n - 1),
          ne(narrow(values, 0, 1, n - 1), narrow(values, 0, 0, n - 1), std::nullopt));
  const Tensor run_id =
      sub(cumsum(starts, 0, DType::Int64), full({}, Scalar(int64_t(1)), DType::Int64, Device()),
          Scalar(int64_t(1)), std::nullopt);
  const Tensor uniques = masked_select(values, starts);
  Tensor inverse = run_id;
  if (sort_first) inverse = scatter(empty_like(run_id, std::nullopt), 0, order, run_id);
  const Tensor counts = bincount(run_id, std::nullopt, uniques.numel());
  return {uniques, view(inverse, self.sizes()), counts};
}

std::tuple<Tensor, Tensor, Tensor> unique(const Tensor& self, bool sorted, bool return_inverse,
                                          bool return_counts) {
  return unique_runs(self, true);  // always sorted: PyTorch's CPU result is sorted either way
}

std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& self, bool return_inverse,
                                                      bool return_counts) {
  return unique_runs(self, false);
}

namespace {
// unique / unique_consecutive over slices along `dim`: the slices, flattened to rows, are sorted
// lexicographically (stable argsorts from the last column to the first) when `sort_first`, then
// runs of equal rows are merged.
std::tuple<Tensor, Tensor, Tensor> unique_slices(const char* name, const Tensor& self, int64_t dim,
                                                 bool sort_first) {
  EMBER_CHECK(self.dim() > 0, IndexError, "[", name, "] a 0-dim tensor has no dim ", dim,
              " to take slices along");
  const int64_t d = dims::wrap(name, dim, self.dim());
  const Tensor moved = movedim(self, {d}, {0}).contiguous();
  const int64_t n = moved.sizes()[0];
  const Tensor rows = reshape(moved, {n, n == 0 ? 0 : moved.numel() / n});
  const int64_t m = rows.sizes()[1];
  Tensor order = arange(Scalar(int64_t(0)), Scalar(n), Scalar(int64_t(1)), DType::Int64, self.device());
  if (sort_first) {
    for (int64_t c = m - 1; c >= 0; --c) {
      const Tensor key = index_select(select(rows, 1, c), 0, order);
      order = index_select(order, 0, argsort(key, 0, false, true));
    }
  }
  const Tensor sorted_rows = index_select(rows, 0, order);
  Tensor starts = ones({n}, DType::Bool, self.device());
  if (n > 1 && m > 0) {
    const Tensor differs =
        ne(narrow(sorted_rows, 0, 1, n - 1), narrow(sorted_rows, 0, 0, n - 1), std::nullopt);
    copy_(narrow(starts, 0, 1, n - 1), any(differs, IntList{1}, false));
  } else if (n > 1) {
    fill_(narrow(starts, 0, 1, n - 1), Scalar(false));  // rows with no elements are all equal
  }
  const Tensor run_id = sub(cumsum(starts, 0, DType::Int64), wrapped_number(Scalar(int64_t(1))),
                            Scalar(int64_t(1)), std::nullopt);
  const Tensor firsts = reshape(nonzero(starts), {-1});
  const int64_t k = firsts.numel();
  IntList shape = moved.sizes();
  shape[0] = k;
  const Tensor values = movedim(reshape(index_select(sorted_rows, 0, firsts), shape), {0}, {d}).contiguous();
  const Tensor inverse = sort_first ? scatter(empty_like(run_id, std::nullopt), 0, order, run_id) : run_id;
  return {values, inverse, bincount(run_id, std::nullopt, k)};
}
}  // namespace

std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& self, int64_t dim, bool sorted,
                                              bool return_inverse, bool return_counts) {
  return unique_slices("unique_dim", self, dim, true);
}

std::tuple<Tensor, Tensor, Tensor> unique_dim_consecutive(const Tensor& self, int64_t dim,
                                                          bool return_inverse, bool return_counts) {
  return unique_slices("unique_dim_consecutive", self, dim, false);
}

Tensor norm(const Tensor& self, const Scalar& p, const std::optional<IntList>& dim, bool keepdim) {
  EMBER_CHECK(is_floating_point(self.dtype()) || is_complex(self.dtype()), Error,
              "[norm] norm(): input dtype should be either floating point or complex. Got ",
              dtype_name(self.dtype()), " instead.");
  const Tensor& x = self;
  const Tensor a = abs(x, std::nullopt);
  const double q = p.to_double();
  if (std::isinf(q))
    return q > 0 ? amax(a, dim.value_or(IntList{}), keepdim) : amin(a, dim.value_or(IntList{}), keepdim);
  if (q == 0)
    return to_dtype(sum(ne(a, zeros({}, a.dtype(), Device()), std::nullopt), dim, keepdim, std::nullopt),
                    a.dtype(), false);
  if (q == 1) return sum(a, dim, keepdim, std::nullopt);
  if (q == 2) return sqrt(sum(mul(a, a, std::nullopt), dim, keepdim, std::nullopt), std::nullopt);
  const Tensor e = full({}, Scalar(q), a.dtype(), Device());
  const Tensor inv = full({}, Scalar(1.0 / q), a.dtype(), Device());
  return pow(sum(pow(a, e, std::nullopt), dim, keepdim, std::nullopt), inv, std::nullopt);
}

}  // namespace ember
