// Sorting and selection: sort, argsort, msort, topk, kthvalue, median
// (kernel: src/backend/cpu/sort_kernels.cpp).
#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/dims.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<SortFn> sort_stub("sort");
DispatchStub<ModeFn> mode_stub("mode");

std::tuple<Tensor, Tensor> sort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  EMBER_CHECK(!is_complex(self.dtype()), Error, "[sort] sort(): not implemented for complex dtype ",
              dtype_name(self.dtype()));
  const int64_t d = dims::wrap("sort", dim, self.dim());
  if (self.dim() == 0) return {self.clone(), zeros({}, DType::Int64, self.device())};
  // Stable always: the unstable form may return any order of ties, and this one is valid.
  const Tensor moved = movedim(self, {d}, {-1}).contiguous();
  Tensor values = empty(moved.sizes(), self.dtype(), self.device());
  Tensor indices = empty(moved.sizes(), DType::Int64, self.device());
  if (moved.numel() > 0) sort_stub.get(self.device().type)(values, indices, moved, descending);
  return {movedim(values, {-1}, {d}).contiguous(), movedim(indices, {-1}, {d}).contiguous()};
}

Tensor argsort(const Tensor& self, int64_t dim, bool descending, bool stable) {
  return std::get<1>(sort(self, dim, descending, stable));
}

Tensor msort(const Tensor& self) {
  return std::get<0>(sort(self, 0, false, true));
}

std::tuple<Tensor, Tensor> topk(const Tensor& self, int64_t k, int64_t dim, bool largest, bool sorted) {
  const int64_t d = dims::wrap("topk", dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.sizes()[d];
  EMBER_CHECK(k >= 0 && k <= size, IndexError, "[topk] selected index k out of range: k is ", k,
              " but the dimension has size ", size);
  auto [values, indices] = sort(self, d, largest, true);
  if (self.dim() == 0) return {values, indices};
  return {narrow(values, d, 0, k).contiguous(), narrow(indices, d, 0, k).contiguous()};
}

std::tuple<Tensor, Tensor> kthvalue(const Tensor& self, int64_t k, int64_t dim, bool keepdim) {
  const int64_t d = dims::wrap("kthvalue", dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.sizes()[d];
  EMBER_CHECK(k >= 1 && k <= size, IndexError, "[kthvalue] selected number k out of range for dimension ", d,
              ": k is ", k, " but the dimension has size ", size);
  auto [values, indices] = sort(self, d, false, true);
  if (self.dim() == 0) return {values, indices};
  Tensor v = narrow(values, d, k - 1, 1);
  Tensor i = narrow(indices, d, k - 1, 1);
  if (!keepdim) {
    v = squeeze(v, IntList{d});
    i = squeeze(i, IntList{d});
  }
  return {v.contiguous(), i.contiguous()};
}

std::tuple<Tensor, Tensor> median(const Tensor& self, int64_t dim, bool keepdim) {
  const int64_t d = dims::wrap("median", dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.sizes()[d];
  EMBER_CHECK(size > 0, IndexError, "[median] median(): Expected reduction dim ", d,
              " to have non-zero size.");
  // PyTorch's median is the lower of the two middle values, and NaN when the slice has one.
  auto [values, indices] = sort(self, d, false, true);
  if (self.dim() == 0) return {values, indices};
  const int64_t k = (size - 1) / 2;
  Tensor v = narrow(values, d, k, 1);
  Tensor i = narrow(indices, d, k, 1);
  if (is_floating_point(self.dtype()) || is_complex(self.dtype())) {
    // With NaNs (sorted last), the result is the first NaN. Integers hold no NaN (and no NaN
    // fill value), so they keep the plain middle value.
    Tensor has_nan = any(isnan(self), IntList{d}, true);
    Tensor first_nan_index = argmax(isnan(self), d, true);
    v = where(has_nan, full({}, Scalar(NAN), self.dtype(), self.device()), v);
    i = where(has_nan, first_nan_index, i);
  }
  if (!keepdim) {
    v = squeeze(v, IntList{d});
    i = squeeze(i, IntList{d});
  }
  return {v.contiguous(), i.contiguous()};
}

// nanmedian: the lower median of the non-NaN values (NaN, at the first NaN, when all are NaN).
std::tuple<Tensor, Tensor> nanmedian(const Tensor& self, int64_t dim, bool keepdim) {
  const int64_t d = dims::wrap("nanmedian", dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.sizes()[d];
  EMBER_CHECK(size > 0, IndexError, "[nanmedian] nanmedian(): Expected reduction dim ", d,
              " to have non-zero size.");
  auto [values, indices] = sort(self, d, false, true);  // NaNs sort last
  if (self.dim() == 0) return {values, indices};
  const Tensor numbers = sum(logical_not(isnan(self), std::nullopt), IntList{d}, true, DType::Int64);
  // (count - 1) / 2, or 0 (the first NaN) when there are no numbers
  const Tensor k =
      div(clamp(sub(numbers, wrapped_number(Scalar(int64_t(1))), Scalar(int64_t(1)), std::nullopt),
                Scalar(int64_t(0)), std::nullopt, std::nullopt),
          wrapped_number(Scalar(int64_t(2))), std::string("floor"), std::nullopt);
  Tensor v = gather(values, d, k);
  Tensor i = gather(indices, d, k);
  if (!keepdim) {
    v = squeeze(v, IntList{d});
    i = squeeze(i, IntList{d});
  }
  return {v, i};
}

std::tuple<Tensor, Tensor> mode(const Tensor& self, int64_t dim, bool keepdim) {
  const int64_t d = dims::wrap("mode", dim, self.dim());
  EMBER_CHECK(!is_complex(self.dtype()), NotImplementedError, "[mode] not implemented for complex dtype ",
              dtype_name(self.dtype()));
  if (self.dim() == 0) return {self.clone(), zeros({}, DType::Int64, self.device())};
  EMBER_CHECK(self.sizes()[d] > 0, IndexError, "[mode] mode(): Expected reduction dim ", d,
              " to have non-zero size.");
  const Tensor moved = movedim(self, {d}, {-1}).contiguous();
  auto [sorted, order] = sort(moved, -1, false, true);
  const IntList shape(moved.sizes().begin(), moved.sizes().end() - 1);
  Tensor values = empty(shape, self.dtype(), self.device());
  Tensor indices = empty(shape, DType::Int64, self.device());
  if (values.numel() > 0) mode_stub.get(self.device().type)(values, indices, sorted, order);
  if (keepdim) return {unsqueeze(values, d), unsqueeze(indices, d)};
  return {values, indices};
}

}  // namespace ember
