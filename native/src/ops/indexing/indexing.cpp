// Indexing ops: gather/scatter family, index_* and masked_* ops, nonzero and take
// (kernel: src/backend/cpu/index_kernels.cpp). Index values are bounds-checked by the kernel.
//
// Note [negative indices]: as PyTorch, gather, scatter*, index_select, index_add and index_copy
// take indices in [0, size) only: -1 is an error, not the last row (and F.embedding /
// embedding_bag check the same in their kernels). take, take_along_dim(dim=...), index_fill and
// advanced indexing (x[idx], index_put_) count a negative index from the end, in [-size, size);
// they hand the kernel indices already made non-negative.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/dims.h"
#include "ops/fbgemm/jagged_kernels.h"  // gather_rows_stub: dim-0 row copies
#include "ops/kernels.h"
#include "ops/pointwise/pointwise.h"

namespace ember {

DispatchStub<IndexFn> index_stub("index");

namespace {

void check_index(const char* op, const Tensor& index) {
  EMBER_CHECK(index.dtype() == DType::Int64, Error, "[", op, "] ", op,
              "(): Expected dtype int64 for index, but got ", dtype_name(index.dtype()));
}

// Gather/scatter preconditions (PyTorch's): as many dims (a 0-d tensor counting as 1-d), and
// index no larger than self outside `dim` nor than src anywhere. An empty index is not checked.
int64_t nonempty_dim(const Tensor& t) {
  return std::max<int64_t>(t.dim(), 1);
}

void check_shapes(const char* op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor* src) {
  check_index(op, index);
  if (index.numel() == 0) return;
  EMBER_CHECK(nonempty_dim(index) == nonempty_dim(self), Error, "[", op,
              "] Index tensor must have the same number of dimensions as input tensor");
  EMBER_CHECK(!src || nonempty_dim(index) == nonempty_dim(*src), Error, "[", op,
              "] Index tensor must have the same number of dimensions as src tensor");
  for (int64_t d = 0; d < index.dim(); ++d) {
    EMBER_CHECK(d == dim || index.sizes()[d] <= nonempty_size(self, d), Error, "[", op,
                "] Size does not match at dimension ", d, " expected index ", index.sizes()[d],
                " to be smaller than self ", nonempty_size(self, d), " apart from dimension ", dim);
    EMBER_CHECK(!src || index.sizes()[d] <= nonempty_size(*src, d), Error, "[", op,
                "] Size does not match at dimension ", d, " expected index ", index.sizes()[d],
                " to be smaller than src ", nonempty_size(*src, d));
  }
}

// src given as a Python number (PyTorch's scatter(dim, index, value)) is one value for every
// position of index.
Tensor source_for(const Tensor& src, const Tensor& index) {
  return src.impl()->is_wrapped_number ? expand(src, index.sizes()) : src;
}

Tensor scatter_with(IndexOp op, const char* name, const Tensor& self, int64_t dim, const Tensor& index,
                    const Tensor& src) {
  const int64_t d = dims::wrap(name, dim, self.dim());
  const Tensor source = source_for(src, index);
  check_shapes(name, self, d, index, &source);
  Tensor out = self.clone();
  const Tensor values = pointwise::cast_to(source, self.dtype());
  if (index.numel() > 0) index_stub.get(self.device().type)(op, out, self, d, index, values);
  return out;
}

// index (1-d, length n) laid out along `dim` and expanded over `shape` (whose dim is n).
Tensor along(const Tensor& index, int64_t dim, IntList shape) {
  IntList view_shape(shape.size(), 1);
  view_shape[dim] = index.numel();
  return expand(reshape(index, view_shape), shape);
}

void check_index_1d(const char* op, const Tensor& index) {
  check_index(op, index);
  EMBER_CHECK(index.dim() <= 1, IndexError, "[", op,
              "] index_select(): Index is supposed to be a vector, but got ", index.dim(), "-d");
}

// The first value of the int64 `index` outside [lo, size), if any (Note [negative indices]).
std::optional<int64_t> first_outside(const Tensor& index, int64_t lo, int64_t size) {
  const Tensor idx = index.contiguous();
  const int64_t* v = idx.data<int64_t>();
  for (int64_t i = 0; i < idx.numel(); ++i) {
    if (v[i] < lo || v[i] >= size) return v[i];
  }
  return std::nullopt;
}

// `index` with every value in [-size, size) counted from the end when negative; `raise` throws
// for the first value outside. A copy only when some value is negative.
template <typename Raise>
Tensor wrapped(const Tensor& index, int64_t size, Raise raise) {
  if (auto bad = first_outside(index, -size, size)) raise(*bad);
  if (!first_outside(index, 0, size)) return index;
  Tensor out = index.contiguous().clone();
  int64_t* v = out.data<int64_t>();
  for (int64_t i = 0; i < out.numel(); ++i) v[i] += v[i] < 0 ? size : 0;
  return out;
}

// The smallest or largest value of an integral (or bool) dtype.
Scalar int_extreme(DType d, bool largest) {
  switch (d) {
    case DType::Bool: return Scalar(largest);
    case DType::UInt8: return Scalar(int64_t(largest ? 255 : 0));
    case DType::Int8: return Scalar(int64_t(largest ? 127 : -128));
    case DType::Int16: return Scalar(int64_t(largest ? 32767 : -32768));
    case DType::Int32:
      return Scalar(
          int64_t(largest ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int32_t>::min()));
    default:
      return Scalar(largest ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min());
  }
}

}  // namespace

Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  const int64_t d = dims::wrap("gather", dim, self.dim());
  check_shapes("gather", self, d, index, nullptr);
  Tensor out = empty(index.sizes(), self.dtype(), self.device());
  if (index.numel() > 0) index_stub.get(self.device().type)(IndexOp::Gather, out, self, d, index, Tensor());
  return out;
}

// As PyTorch: without dim both are flattened; with dim, self and indices broadcast against each
// other in every dim but `dim` (numpy.take_along_axis).
Tensor take_along_dim(const Tensor& self, const Tensor& indices, std::optional<int64_t> dim) {
  if (!dim) return gather(reshape(self, {-1}), 0, reshape(indices, {-1}));
  EMBER_CHECK(self.dim() == indices.dim(), ValueError,
              "[take_along_dim] input and indices should have the same number of dimensions, but got ",
              self.dim(), " dimensions for input, and ", indices.dim(), " dimensions for indices");
  const int64_t d = dims::wrap("take_along_dim", *dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.sizes()[d];
  check_index("take_along_dim", indices);
  const Tensor from_0 = wrapped(indices, size, [&](int64_t bad) {
    throw Error("[take_along_dim] index " + std::to_string(bad) + " is out of bounds for dimension " +
                std::to_string(d) + " with size " + std::to_string(size));
  });
  if (self.dim() == 0) return gather(self, d, from_0);
  IntList self_rest = self.sizes(), index_rest = indices.sizes();
  self_rest[d] = index_rest[d] = 1;
  IntList self_shape = pointwise::broadcast_shapes("take_along_dim", self_rest, index_rest);
  IntList index_shape = self_shape;
  self_shape[d] = self.sizes()[d];
  index_shape[d] = indices.sizes()[d];
  return gather(expand(self, self_shape), d, expand(from_0, index_shape));
}

Tensor scatter(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_with(IndexOp::Scatter, "scatter", self, dim, index, src);
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return scatter_with(IndexOp::ScatterAdd, "scatter_add", self, dim, index, src);
}

Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src_arg,
                      const std::string& reduce, bool include_self) {
  const Tensor src = source_for(src_arg, index);
  IndexOp op;
  double identity;
  if (reduce == "sum" || reduce == "mean") {
    op = IndexOp::ScatterAdd;
    identity = 0.0;
  } else if (reduce == "prod") {
    op = IndexOp::ScatterMul;
    identity = 1.0;
  } else if (reduce == "amax") {
    op = IndexOp::ScatterMax;
    identity = -INFINITY;
  } else if (reduce == "amin") {
    op = IndexOp::ScatterMin;
    identity = INFINITY;
  } else {
    throw ValueError("[scatter_reduce] reduce argument must be either sum, prod, mean, amax or amin, got " +
                     reduce);
  }
  EMBER_CHECK(!is_complex(self.dtype()) || op == IndexOp::ScatterAdd, NotImplementedError,
              "[scatter_reduce] not implemented for complex dtype ", dtype_name(self.dtype()));
  Tensor base = self;
  if (!include_self) {  // the targets start from the reduction's identity instead of self
    Scalar id = is_floating_point(self.dtype()) ? Scalar(identity)
                : reduce == "amax"              ? int_extreme(self.dtype(), false)
                : reduce == "amin"              ? int_extreme(self.dtype(), true)
                                                : Scalar(static_cast<int64_t>(identity));
    base = scatter_with(IndexOp::Scatter, "scatter_reduce", self, dim, index,
                        full(index.sizes(), id, self.dtype(), self.device()));
  }
  Tensor out = scatter_with(op, "scatter_reduce", base, dim, index, src);
  if (reduce != "mean") return out;
  // mean: divide by how many values reached each target (plus self when included).
  Tensor ones = ones_like(src, self.dtype());
  Tensor counts = scatter_with(IndexOp::ScatterAdd, "scatter_reduce",
                               include_self ? ones_like(self, std::nullopt) : zeros_like(self, std::nullopt),
                               dim, index, ones);
  counts = clamp(counts, Scalar(int64_t(1)), std::nullopt, std::nullopt);
  return is_floating_point(self.dtype()) ? div(out, counts, std::nullopt, std::nullopt)
                                         : div(out, counts, std::string("floor"), std::nullopt);
}

Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  check_index_1d("index_select", index);
  const int64_t d = dims::wrap("index_select", dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.sizes()[d];
  if (auto bad = first_outside(index, 0, size)) {
    throw IndexError("[index_select] index out of range in self: expected every index in [0, " +
                     std::to_string(size) + "), but got " + std::to_string(*bad));
  }
  if (self.dim() == 0) return view(gather(reshape(self, {1}), 0, reshape(index, {-1})), index.sizes());
  IntList shape = self.sizes();
  shape[d] = index.numel();
  if (d == 0 && self.device().type == DeviceType::CPU) {
    // whole rows: one copy per index (FBGEMM's index_select_dim0 kernel), not an element gather
    Tensor out = empty(shape, self.dtype(), self.device());
    if (out.numel() > 0)
      gather_rows_stub.get(self.device().type)(self.contiguous(), reshape(index, {-1}).contiguous(), out);
    return out;
  }
  return gather(self, d, along(reshape(index, {-1}), d, shape).contiguous());
}

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source,
                 const Scalar& alpha) {
  check_index_1d("index_add", index);
  const int64_t d = dims::wrap("index_add", dim, self.dim());
  EMBER_CHECK(
      source.dim() == self.dim() && (self.dim() == 0 || source.sizes()[d] == index.numel()), Error,
      "[index_add] source must have the same number of dimensions as self, and source.size(dim) must equal "
      "the number of indices (",
      index.numel(), ")");
  const int64_t size = self.dim() == 0 ? 1 : self.sizes()[d];
  if (auto bad = first_outside(index, 0, size)) {
    throw Error("[index_add] index " + std::to_string(*bad) + " is out of bounds for dimension " +
                std::to_string(d) + " with size " + std::to_string(size));
  }
  const Tensor scaled = mul(source, wrapped_number(alpha), std::nullopt);
  return scatter_add(self, d, along(reshape(index, {-1}), d, source.sizes()).contiguous(), scaled);
}

Tensor index_copy(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source) {
  check_index_1d("index_copy", index);
  const int64_t d = dims::wrap("index_copy", dim, self.dim());
  EMBER_CHECK(
      source.dim() == self.dim() && (self.dim() == 0 || source.sizes()[d] == index.numel()), Error,
      "[index_copy] source must have the same number of dimensions as self, and source.size(dim) must equal "
      "the number of indices (",
      index.numel(), ")");
  const int64_t size = self.dim() == 0 ? 1 : self.sizes()[d];
  if (auto bad = first_outside(index, 0, size)) {
    throw IndexError("[index_copy] index_copy_(): index " + std::to_string(*bad) +
                     " is out of bounds for dimension " + std::to_string(d) + " with size " +
                     std::to_string(size));
  }
  return scatter(self, d, along(reshape(index, {-1}), d, source.sizes()).contiguous(), source);
}

Tensor index_fill(const Tensor& self, int64_t dim, const Tensor& index, const Scalar& value) {
  check_index_1d("index_fill", index);
  const int64_t d = dims::wrap("index_fill", dim, self.dim());
  const int64_t size = self.dim() == 0 ? 1 : self.sizes()[d];
  const Tensor index_from_0 = wrapped(index, size, [&](int64_t bad) {
    throw IndexError("[index_fill] index " + std::to_string(bad) + " is out of bounds for dimension " +
                     std::to_string(d) + " with size " + std::to_string(size));
  });
  IntList shape = self.sizes();
  if (self.dim() > 0) shape[d] = index.numel();
  const Tensor idx =
      self.dim() == 0 ? reshape(index_from_0, {}) : along(reshape(index_from_0, {-1}), d, shape).contiguous();
  return scatter(self, d, idx, full(idx.sizes(), value, self.dtype(), self.device()));
}

Tensor masked_fill(const Tensor& self, const Tensor& mask, const Scalar& value) {
  EMBER_CHECK(mask.dtype() == DType::Bool, Error,
              "[masked_fill] masked_fill_ only supports boolean masks, but got "
              "mask with dtype ",
              dtype_name(mask.dtype()));
  pointwise::broadcast_shapes("masked_fill", self.sizes(), mask.sizes());
  return where(mask, full({}, value, self.dtype(), self.device()), self);
}

Tensor nonzero(const Tensor& self) {
  EMBER_CHECK(self.device().type == DeviceType::CPU, NotImplementedError, "[nonzero] not implemented for ",
              self.device().str());
  const Tensor flags = pointwise::cast_to(self, DType::Bool).contiguous();
  const bool* f = flags.data<bool>();
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < flags.numel(); ++i) {
    if (f[i]) hits.push_back(i);
  }
  const int64_t nd = self.dim();
  Tensor out = empty({static_cast<int64_t>(hits.size()), nd}, DType::Int64, self.device());
  int64_t* o = out.data<int64_t>();
  for (size_t h = 0; h < hits.size(); ++h) {
    int64_t rest = hits[h];
    for (int64_t d = nd - 1; d >= 0; --d) {
      o[h * nd + d] = rest % self.sizes()[d];
      rest /= self.sizes()[d];
    }
  }
  return out;
}

Tensor take(const Tensor& self, const Tensor& index) {
  check_index("take", index);
  const Tensor flat = reshape(self, {-1});
  const int64_t n = flat.numel();
  const Tensor idx = wrapped(reshape(index, {-1}), n, [&](int64_t bad) {
    throw IndexError("[take] out of range: tried to access index " + std::to_string(bad) +
                     " on a tensor of " + std::to_string(n) + " elements.");
  });
  return view(gather(flat, 0, idx), index.sizes());
}

Tensor masked_select(const Tensor& self, const Tensor& mask) {
  EMBER_CHECK(mask.dtype() == DType::Bool, Error,
              "[masked_select] masked_select: expected BoolTensor for mask, but "
              "got ",
              dtype_name(mask.dtype()));
  const IntList shape = pointwise::broadcast_shapes("masked_select", self.sizes(), mask.sizes());
  const Tensor m = reshape(expand(mask, shape).contiguous(), {-1});
  const Tensor positions = reshape(nonzero(m), {-1});
  return take(expand(self, shape).contiguous(), positions);
}

}  // namespace ember
