// Advanced indexing: index (x[i, j]), index_put_ (x[i, j] = v, with accumulate) and
// masked_scatter, with PyTorch's result layout (kernel: src/backend/cpu/index_kernels.cpp).
//
// Note [advanced index layout]: the index tensors broadcast to a shape B. When the indexed dims
// are adjacent, B replaces them in place (x[:, i, j] has shape [x0, *B, ...]); otherwise B comes
// first, followed by the dims that were not indexed (x[i, :, j] has shape [*B, x1]). Both cases
// are handled by viewing the result as "B dims, then the untouched dims" and walking both sides
// through element offsets: self's from the index values, the result's from its strides.
#include <algorithm>
#include <vector>

#include "ember/error.h"
#include "ember/ops.h"
#include "ops/dims.h"
#include "ops/kernels.h"
#include "ops/pointwise/pointwise.h"

namespace ember {

DispatchStub<AdvancedIndexFn> advanced_index_stub("index");

namespace {

struct IndexPlan {
  Tensor self;                // the indexed tensor (a 0-dim mask unsqueezes it: still a view)
  std::vector<int64_t> dims;  // its indexed dims, in order
  std::vector<Tensor> index;  // one int64 index per indexed dim, broadcast to `b_shape`, contiguous
  IntList b_shape;
  bool adjacent = true;
};

std::string shape_str(const IntList& s) {
  return dims::str(s);
}

IndexPlan make_plan(const char* op, const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  EMBER_CHECK(self.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              self.device().str());
  IndexPlan p;
  p.self = self;
  std::vector<Tensor> raw;
  int64_t d = 0;
  for (const std::optional<Tensor>& entry : indices) {
    if (!entry) {
      ++d;
      continue;
    }
    Tensor t = *entry;
    EMBER_CHECK(t.device() == self.device(), Error, "[", op,
                "] indices should be on the same device as the indexed tensor (", self.device().str(),
                "), but got ", t.device().str());
    if (t.dtype() == DType::Bool || t.dtype() == DType::UInt8) {  // a mask stands for its nonzero()
      if (t.dim() == 0) {  // x[True]: a new dim of size 1 (or 0), masked
        p.self = unsqueeze(p.self, d);
        t = reshape(t, {1});
      }
      EMBER_CHECK(d + t.dim() <= p.self.dim(), IndexError, "[", op,
                  "] too many indices for tensor of dimension ", p.self.dim());
      for (int64_t j = 0; j < t.dim(); ++j) {
        EMBER_CHECK(t.sizes()[j] == p.self.sizes()[d + j], IndexError, "[", op, "] The shape of the mask ",
                    shape_str(t.sizes()), " at index ", j, " does not match the shape of the indexed tensor ",
                    shape_str(p.self.sizes()), " at index ", d + j);
      }
      const Tensor hits = nonzero(t);
      for (int64_t j = 0; j < t.dim(); ++j) {
        p.dims.push_back(d + j);
        raw.push_back(select(hits, 1, j));
      }
      d += t.dim();
      continue;
    }
    EMBER_CHECK(is_integral(t.dtype(), false), IndexError, "[", op,
                "] tensors used as indices must be long, int, byte or bool tensors, but got ",
                dtype_name(t.dtype()));
    p.dims.push_back(d++);
    raw.push_back(pointwise::cast_to(t, DType::Int64));
  }
  EMBER_CHECK(d <= p.self.dim(), IndexError, "[", op, "] too many indices for tensor of dimension ",
              p.self.dim(), " (got ", d, ")");
  if (!raw.empty()) p.b_shape = raw.front().sizes();
  for (const Tensor& t : raw) {
    try {
      p.b_shape = pointwise::broadcast_shapes(op, p.b_shape, t.sizes());
    } catch (const Error&) {
      std::string shapes;
      for (const Tensor& u : raw) shapes += (shapes.empty() ? "" : ", ") + shape_str(u.sizes());
      throw IndexError(detail::str_cat("[", op, "] shape mismatch: indexing tensors could not be broadcast ",
                                       "together with shapes ", shapes));
    }
  }
  for (const Tensor& t : raw) p.index.push_back(expand(t, p.b_shape).contiguous());
  for (size_t k = 1; k < p.dims.size(); ++k) p.adjacent = p.adjacent && p.dims[k] == p.dims[k - 1] + 1;
  return p;
}

// Element offsets of every position over dims [first, first + count) of t, row-major.
Tensor offsets_of(const Tensor& t, int64_t first, int64_t count) {
  IntList sizes(t.sizes().begin() + first, t.sizes().begin() + first + count);
  const int64_t n = checked_numel(sizes, "index");
  Tensor out = empty({n}, DType::Int64);
  int64_t* o = out.data<int64_t>();
  std::vector<int64_t> pos(static_cast<size_t>(count), 0);
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    o[i] = offset;
    for (int64_t j = count - 1; j >= 0; --j) {
      const int64_t stride = t.strides()[first + j];
      if (++pos[j] < sizes[j]) {
        offset += stride;
        break;
      }
      offset -= (sizes[j] - 1) * stride;
      pos[j] = 0;
    }
  }
  return out;
}

// Offsets into plan.self of each broadcast index position; IndexError for a value out of range.
Tensor self_offsets(const char* op, const IndexPlan& p) {
  const int64_t n = checked_numel(p.b_shape, op);
  Tensor out = zeros({n}, DType::Int64, std::nullopt);
  int64_t* o = out.data<int64_t>();
  for (size_t k = 0; k < p.dims.size(); ++k) {
    const int64_t size = p.self.sizes()[p.dims[k]];
    const int64_t stride = p.self.strides()[p.dims[k]];
    const int64_t* idx = p.index[k].data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t v = idx[i];
      EMBER_CHECK(v >= -size && v < size, IndexError, "[", op, "] index ", v,
                  " is out of bounds for dimension ", p.dims[k], " with size ", size);
      o[i] += (v < 0 ? v + size : v) * stride;
    }
  }
  return out;
}

// The dims of plan.self that are not indexed, in order.
IntList rest_dims(const IndexPlan& p) {
  IntList rest;
  for (int64_t d = 0; d < p.self.dim(); ++d) {
    if (std::find(p.dims.begin(), p.dims.end(), d) == p.dims.end()) rest.push_back(d);
  }
  return rest;
}

// The result's shape (Note [advanced index layout]) and the permutation that views a tensor of
// that shape as [*B, *rest].
std::pair<IntList, IntList> result_layout(const IndexPlan& p) {
  const IntList rest = rest_dims(p);
  const int64_t nb = static_cast<int64_t>(p.b_shape.size());
  // where B goes in the result: in place of the indexed dims, or first
  const int64_t at = p.adjacent ? p.dims.front() : 0;
  IntList shape, perm;
  for (int64_t i = 0; i < at; ++i) shape.push_back(p.self.sizes()[rest[i]]);
  shape.insert(shape.end(), p.b_shape.begin(), p.b_shape.end());
  for (size_t i = at; i < rest.size(); ++i) shape.push_back(p.self.sizes()[rest[i]]);
  for (int64_t i = 0; i < nb; ++i) perm.push_back(at + i);
  for (int64_t i = 0; i < at; ++i) perm.push_back(i);
  for (int64_t i = at + nb; i < static_cast<int64_t>(shape.size()); ++i) perm.push_back(i);
  return {shape, perm};
}

// self's untouched dims as offsets: self viewed as [*indexed, *rest].
Tensor self_rest_offsets(const IndexPlan& p) {
  IntList order(p.dims.begin(), p.dims.end());
  const IntList rest = rest_dims(p);
  order.insert(order.end(), rest.begin(), rest.end());
  const Tensor viewed = permute(p.self, order);
  return offsets_of(viewed, static_cast<int64_t>(p.dims.size()), static_cast<int64_t>(rest.size()));
}

bool has_tensor(const std::vector<std::optional<Tensor>>& indices) {
  return std::any_of(indices.begin(), indices.end(),
                     [](const std::optional<Tensor>& t) { return t.has_value(); });
}

}  // namespace

Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  EMBER_CHECK(has_tensor(indices), IndexError,
              "[index] expected at least one index tensor, but got only None");
  const IndexPlan p = make_plan("index", self, indices);
  const auto [shape, perm] = result_layout(p);
  Tensor out = empty(shape, self.dtype(), self.device());
  const Tensor from = self_offsets("index", p);  // checks every index, even for an empty result
  if (out.numel() == 0) return out;
  const Tensor out_view = permute(out, perm);
  const int64_t nb = static_cast<int64_t>(p.b_shape.size());
  advanced_index_stub.get(self.device().type)(AdvancedIndexMode::Get, out, p.self,
                                              offsets_of(out_view, 0, nb), from,
                                              offsets_of(out_view, nb, out.dim() - nb), self_rest_offsets(p));
  return out;
}

Tensor index_put_(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                  bool accumulate) {
  EMBER_CHECK(has_tensor(indices), IndexError,
              "[index_put_] expected at least one index tensor, but got only None");
  EMBER_CHECK(values.dtype() == self.dtype() || values.impl()->is_wrapped_number, Error,
              "[index_put_] Index put requires the source and destination dtypes match, got ",
              dtype_name(self.dtype()), " for the destination and ", dtype_name(values.dtype()),
              " for the source.");
  EMBER_CHECK(values.device() == self.device(), Error, "[index_put_] expected values on ",
              self.device().str(), ", but got ", values.device().str());
  const IndexPlan p = make_plan("index_put_", self, indices);
  self.bump_version();  // before writing: it raises for read-only memory (Note [read-only storage])
  const auto [shape, perm] = result_layout(p);
  Tensor source = pointwise::cast_to(values, self.dtype());
  if (source.storage() == self.storage()) source = source.clone();  // x[i] = x: read before writing
  try {
    source = expand(source, shape);
  } catch (const Error&) {
    throw Error(detail::str_cat("[index_put_] shape mismatch: value tensor of shape ",
                                shape_str(values.sizes()),
                                " cannot be broadcast to indexing result of shape ", shape_str(shape)));
  }
  const Tensor to = self_offsets("index_put_", p);
  if (source.numel() > 0) {
    const Tensor source_view = permute(source, perm);
    const int64_t nb = static_cast<int64_t>(p.b_shape.size());
    advanced_index_stub.get(self.device().type)(
        accumulate ? AdvancedIndexMode::Accumulate : AdvancedIndexMode::Put, p.self, source, to,
        offsets_of(source_view, 0, nb), self_rest_offsets(p), offsets_of(source_view, nb, source.dim() - nb));
  }
  return self;
}

Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                 bool accumulate) {
  return index_put_(self.clone(), indices, values, accumulate);
}

Tensor masked_scatter(const Tensor& self, const Tensor& mask, const Tensor& source) {
  EMBER_CHECK(mask.dtype() == DType::Bool, Error,
              "[masked_scatter] masked_scatter_ only supports boolean masks, ", "but got mask with dtype ",
              dtype_name(mask.dtype()));
  EMBER_CHECK(source.dtype() == self.dtype(), Error,
              "[masked_scatter] masked_scatter: expected self and source to have same dtypes but got ",
              dtype_name(self.dtype()), " and ", dtype_name(source.dtype()));
  const IntList shape = pointwise::broadcast_shapes("masked_scatter", self.sizes(), mask.sizes());
  Tensor out = expand(self, shape).clone();
  const Tensor positions = reshape(nonzero(reshape(expand(mask, shape), {-1})), {-1});
  const int64_t n = positions.numel();
  EMBER_CHECK(source.numel() >= n, Error,
              "[masked_scatter] Number of elements of source < number of ones in mask (", source.numel(),
              " < ", n, ")");
  if (n == 0) return out;
  const Tensor taken = narrow(reshape(source, {-1}), 0, 0, n);
  index_put_(reshape(out, {-1}), {positions}, taken, false);
  return out;
}

}  // namespace ember
