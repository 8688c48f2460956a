// View and shape ops: new sizes/strides over the same storage, no kernel (except copies).
#include <algorithm>
#include <numeric>
#include <sstream>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ember/quantizer.h"
#include "ops/dims.h"
#include "ops/kernels.h"
#include "ops/pointwise/pointwise.h"

namespace ember {

DispatchStub<CopyFn> copy_stub("copy_");

namespace {

// A view sharing storage and version counter (the bounds follow from the base's).
Tensor make_view(const Tensor& base, IntList sizes, IntList strides, int64_t offset) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->storage_offset = offset;
  impl->dtype = base.dtype();
  impl->version_counter = base.impl()->version_counter;
  if (base.impl()->quantizer) impl->quantizer = view_quantizer(base, *impl, "view");
  return Tensor(std::move(impl));
}

// Replaces one -1 by what makes the product equal numel.
IntList infer_size(const char* op, const IntList& shape, int64_t numel) {
  IntList out = shape;
  int64_t known = 1;
  int64_t infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      EMBER_CHECK(infer < 0, Error, "[", op, "] only one dimension can be inferred");
      infer = static_cast<int64_t>(i);
    } else {
      EMBER_CHECK(shape[i] >= 0, Error, "[", op, "] invalid shape dimension ", shape[i]);
      EMBER_CHECK(!__builtin_mul_overflow(known, shape[i], &known), Error, "[", op, "] shape ",
                  dims::str(shape), " overflows");
    }
  }
  if (infer >= 0) {
    EMBER_CHECK(known != 0 && numel % known == 0, Error, "[", op, "] shape '", dims::str(shape),
                "' is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    EMBER_CHECK(known == numel, Error, "[", op, "] shape '", dims::str(shape),
                "' is invalid for input of size ", numel);
  }
  return out;
}

// Strides for viewing (sizes, strides) as `shape` without copying, if possible (PyTorch's
// computeStride): each run of old dims that is contiguous in memory may be split or merged.
std::optional<IntList> view_strides(const IntList& sizes, const IntList& strides, const IntList& shape) {
  IntList out(shape.size());
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0 || sizes.empty()) return contiguous_strides(shape);
  int64_t view_d = static_cast<int64_t>(shape.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1;
  int64_t view_numel = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    tensor_numel *= sizes[d];
    if (d == 0 || (sizes[d - 1] != 1 && strides[d - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        --view_d;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (d > 0) {
        chunk_base_stride = strides[d - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

}  // namespace

Tensor view(const Tensor& self, const IntList& size) {
  const IntList shape = infer_size("view", size, self.numel());
  auto strides = view_strides(self.sizes(), self.strides(), shape);
  EMBER_CHECK(
      strides.has_value(), Error,
      "[view] view size is not compatible with input tensor's size and stride (at least one dimension "
      "spans across two contiguous subspaces). Use .reshape(...) instead.");
  return make_view(self, shape, *strides, self.storage_offset());
}

Tensor reshape(const Tensor& self, const IntList& shape) {
  const IntList s = infer_size("reshape", shape, self.numel());
  if (auto strides = view_strides(self.sizes(), self.strides(), s)) {
    return make_view(self, s, *strides, self.storage_offset());
  }
  return view(self.clone(), s);
}

Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  if (self.dim() == 0) return reshape(self, {1});
  const int64_t s = dims::wrap("flatten", start_dim, self.dim());
  const int64_t e = dims::wrap("flatten", end_dim, self.dim());
  EMBER_CHECK(s <= e, Error, "[flatten] flatten() has invalid args: start_dim cannot come after end_dim");
  IntList shape(self.sizes().begin(), self.sizes().begin() + s);
  int64_t n = 1;
  for (int64_t d = s; d <= e; ++d) n *= self.sizes()[d];
  shape.push_back(n);
  shape.insert(shape.end(), self.sizes().begin() + e + 1, self.sizes().end());
  return reshape(self, shape);
}

Tensor unflatten(const Tensor& self, int64_t dim, const IntList& sizes) {
  const int64_t d = dims::wrap("unflatten", dim, self.dim());
  EMBER_CHECK(!sizes.empty(), Error, "[unflatten] sizes must be non-empty");
  const IntList inner = infer_size("unflatten", sizes, self.dim() == 0 ? 1 : self.sizes()[d]);
  IntList shape(self.sizes().begin(), self.sizes().begin() + d);
  shape.insert(shape.end(), inner.begin(), inner.end());
  if (self.dim() > 0) shape.insert(shape.end(), self.sizes().begin() + d + 1, self.sizes().end());
  return view(self, shape);
}

Tensor permute(const Tensor& self, const IntList& dims) {
  EMBER_CHECK(static_cast<int64_t>(dims.size()) == self.dim(), Error,
              "[permute] number of dims don't match in permute: expected ", self.dim(), ", but got ",
              dims.size());
  IntList sizes(dims.size()), strides(dims.size());
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims::wrap("permute", dims[i], self.dim());
    EMBER_CHECK(!seen[d], Error, "[permute] repeated dim in permute: ", dims[i]);
    seen[d] = true;
    sizes[i] = self.sizes()[d];
    strides[i] = self.strides()[d];
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  if (self.dim() == 0) {
    dims::wrap("transpose", dim0, 0);
    dims::wrap("transpose", dim1, 0);
    return make_view(self, {}, {}, self.storage_offset());
  }
  const int64_t a = dims::wrap("transpose", dim0, self.dim());
  const int64_t b = dims::wrap("transpose", dim1, self.dim());
  IntList sizes = self.sizes(), strides = self.strides();
  std::swap(sizes[a], sizes[b]);
  std::swap(strides[a], strides[b]);
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor t(const Tensor& self) {
  EMBER_CHECK(self.dim() <= 2, Error, "[t] t() expects a tensor with <= 2 dimensions, but self is ",
              self.dim(), "D");
  return self.dim() < 2 ? make_view(self, self.sizes(), self.strides(), self.storage_offset())
                        : transpose(self, 0, 1);
}

Tensor expand(const Tensor& self, const IntList& size) {
  const int64_t n = static_cast<int64_t>(size.size());
  EMBER_CHECK(n >= self.dim(), Error, "[expand] the number of sizes provided (", n,
              ") must be greater or equal to the number of dimensions in the tensor (", self.dim(), ")");
  IntList sizes(n), strides(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t d = i - (n - self.dim());
    if (d >= 0) {
      const int64_t have = self.sizes()[d];
      const int64_t want = size[i] == -1 ? have : size[i];
      EMBER_CHECK(have == want || have == 1, Error, "[expand] The expanded size of the tensor (", want,
                  ") must match the existing size (", have, ") at non-singleton dimension ", i,
                  ".  Target sizes: ", dims::str(size), ".  Tensor sizes: ", dims::str(self.sizes()));
      EMBER_CHECK(want >= 0, Error, "[expand] expected non-negative sizes, but got ", dims::str(size));
      sizes[i] = want;
      strides[i] = have == want ? self.strides()[d] : 0;
    } else {
      EMBER_CHECK(size[i] >= 0, Error, "[expand] The expanded size of the tensor (", size[i],
                  ") isn't allowed in a leading, non-existing dimension ", i);
      sizes[i] = size[i];
      strides[i] = 0;
    }
  }
  checked_numel(sizes, "expand");
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor broadcast_to(const Tensor& self, const IntList& size) {
  return expand(self, size);
}

Tensor squeeze(const Tensor& self, const std::optional<IntList>& dim) {
  std::vector<bool> drop(self.dim(), !dim);
  if (dim) {
    for (int64_t d : *dim) {
      const int64_t w = dims::wrap("squeeze", d, self.dim());
      if (self.dim() > 0) drop[w] = true;
    }
  }
  IntList sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (drop[d] && self.sizes()[d] == 1) continue;
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d]);
  }
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor unsqueeze(const Tensor& self, int64_t dim) {
  const int64_t d = dims::wrap("unsqueeze", dim, self.dim() + 1);
  IntList sizes = self.sizes(), strides = self.strides();
  const int64_t stride = d < self.dim() ? sizes[d] * strides[d] : 1;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, stride);
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
             int64_t step) {
  EMBER_CHECK(self.dim() > 0, IndexError, "[slice] slice() cannot be applied to a 0-dim tensor.");
  EMBER_CHECK(step > 0, ValueError, "[slice] slice step must be positive, but got ", step);
  const int64_t d = dims::wrap("slice", dim, self.dim());
  const int64_t size = self.sizes()[d];
  auto clamp_index = [size](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size); };
  const int64_t s = clamp_index(start.value_or(0));
  const int64_t e = std::max(s, clamp_index(end.value_or(size)));
  IntList sizes = self.sizes(), strides = self.strides();
  sizes[d] = (e - s + step - 1) / step;
  strides[d] *= step;
  return make_view(self, sizes, strides, self.storage_offset() + s * self.strides()[d]);
}

Tensor narrow(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  EMBER_CHECK(self.dim() > 0, IndexError, "[narrow] narrow() cannot be applied to a 0-dim tensor.");
  const int64_t d = dims::wrap("narrow", dim, self.dim());
  const int64_t size = self.sizes()[d];
  EMBER_CHECK(start >= -size && start <= size, IndexError,
              "[narrow] start out of range (expected to be in range of [", -size, ", ", size, "], but got ",
              start, ")");
  const int64_t s = start < 0 ? start + size : start;
  EMBER_CHECK(length >= 0 && s <= size - length, Error, "[narrow] start (", s, ") + length (", length,
              ") exceeds dimension size (", size, ").");
  return slice(self, d, s, s + length, 1);
}

Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  EMBER_CHECK(self.dim() > 0, IndexError, "[select] select() cannot be applied to a 0-dim tensor.");
  const int64_t d = dims::wrap("select", dim, self.dim());
  const int64_t size = self.sizes()[d];
  EMBER_CHECK(index >= -size && index < size, IndexError, "[select] index ", index,
              " is out of bounds for dimension ", d, " with size ", size);
  const int64_t i = index < 0 ? index + size : index;
  IntList sizes = self.sizes(), strides = self.strides();
  const int64_t offset = self.storage_offset() + i * strides[d];
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  return make_view(self, sizes, strides, offset);
}

Tensor unfold(const Tensor& self, int64_t dimension, int64_t size, int64_t step) {
  const int64_t d = dims::wrap("unfold", dimension, self.dim());
  const int64_t have = self.dim() == 0 ? 1 : self.sizes()[d];
  EMBER_CHECK(size >= 0 && size <= have, Error, "[unfold] maximum size for tensor at dimension ", d, " is ",
              have, " but size is ", size);
  EMBER_CHECK(step > 0, Error, "[unfold] step is ", step, " but must be > 0");
  if (self.dim() == 0) return make_view(self, {size}, {1}, self.storage_offset());
  IntList sizes = self.sizes(), strides = self.strides();
  sizes[d] = (have - size) / step + 1;
  sizes.push_back(size);
  strides.push_back(strides[d]);
  strides[d] *= step;
  return make_view(self, sizes, strides, self.storage_offset());
}

Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  EMBER_CHECK(self.dim() >= 2, Error, "[diagonal] diagonal dimensions requires ndim >= 2, but got ",
              self.dim());
  const int64_t a = dims::wrap("diagonal", dim1, self.dim());
  const int64_t b = dims::wrap("diagonal", dim2, self.dim());
  EMBER_CHECK(a != b, Error, "[diagonal] diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  int64_t len;
  int64_t start = self.storage_offset();
  if (offset >= 0) {
    len = std::max<int64_t>(std::min(self.sizes()[a], self.sizes()[b] - offset), 0);
    if (len > 0) start += offset * self.strides()[b];
  } else {
    len = std::max<int64_t>(std::min(self.sizes()[a] + offset, self.sizes()[b]), 0);
    if (len > 0) start -= offset * self.strides()[a];
  }
  IntList sizes, strides;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (d == a || d == b) continue;
    sizes.push_back(self.sizes()[d]);
    strides.push_back(self.strides()[d]);
  }
  sizes.push_back(len);
  strides.push_back(self.strides()[a] + self.strides()[b]);
  return make_view(self, sizes, strides, start);
}

Tensor movedim(const Tensor& self, const IntList& source, const IntList& destination) {
  EMBER_CHECK(source.size() == destination.size(), Error,
              "[movedim] Invalid source or destination dims: source (", dims::str(source),
              " dims) should contain the same number of dims as destination (", dims::str(destination),
              " dims)");
  const int64_t n = self.dim();
  if (n == 0) {  // a 0-dim tensor accepts dims 0 and -1 and stays as it is
    for (size_t i = 0; i < source.size(); ++i) {
      dims::wrap("movedim", source[i], n);
      dims::wrap("movedim", destination[i], n);
    }
    return self;
  }
  IntList order(n, -1);
  std::vector<bool> used_src(n, false), used_dst(n, false);
  for (size_t i = 0; i < source.size(); ++i) {
    const int64_t s = dims::wrap("movedim", source[i], n);
    const int64_t d = dims::wrap("movedim", destination[i], n);
    EMBER_CHECK(!used_src[s] && !used_dst[d], Error, "[movedim] repeated dim in movedim");
    used_src[s] = used_dst[d] = true;
    order[d] = s;
  }
  int64_t next = 0;
  for (int64_t d = 0; d < n; ++d) {
    if (order[d] != -1) continue;
    while (used_src[next]) ++next;
    order[d] = next++;
  }
  return permute(self, order);
}

std::vector<Tensor> unbind(const Tensor& self, int64_t dim) {
  EMBER_CHECK(self.dim() > 0, IndexError, "[unbind] Dimension specified as 0 but tensor has no dimensions");
  const int64_t d = dims::wrap("unbind", dim, self.dim());
  std::vector<Tensor> out;
  for (int64_t i = 0; i < self.sizes()[d]; ++i) out.push_back(select(self, d, i));
  return out;
}

std::vector<Tensor> split(const Tensor& self, const IntList& split_size_or_sections, int64_t dim) {
  EMBER_CHECK(self.dim() > 0, Error, "[split] split expects at least a 1-dimensional tensor");
  const int64_t d = dims::wrap("split", dim, self.dim());
  const int64_t size = self.sizes()[d];
  std::vector<Tensor> out;
  if (split_size_or_sections.size() == 1) {  // one size: equal chunks, the last may be smaller
    const int64_t chunk = split_size_or_sections[0];
    EMBER_CHECK(chunk > 0 || (chunk == 0 && size == 0), Error,
                "[split] split_size can only be 0 if dimension size is 0, but got dimension size of ", size);
    if (size == 0) return {self};
    for (int64_t s = 0; s < size; s += chunk) out.push_back(narrow(self, d, s, std::min(chunk, size - s)));
    return out;
  }
  int64_t total = 0;
  for (int64_t s : split_size_or_sections) {
    EMBER_CHECK(s >= 0, Error,
                "[split] split_with_sizes expects split_sizes have only non-negative entries, but got ",
                dims::str(split_size_or_sections));
    total += s;
  }
  EMBER_CHECK(total == size, Error, "[split] split_with_sizes expects split_sizes to sum exactly to ", size,
              " (input tensor's size at dimension ", d,
              "), but got split_sizes=", dims::str(split_size_or_sections));
  int64_t start = 0;
  for (int64_t s : split_size_or_sections) {
    out.push_back(narrow(self, d, start, s));
    start += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& self, int64_t chunks, int64_t dim) {
  EMBER_CHECK(self.dim() > 0, Error, "[chunk] chunk expects at least a 1-dimensional tensor");
  EMBER_CHECK(chunks > 0, Error, "[chunk] chunk expects `chunks` to be greater than 0, got: ", chunks);
  const int64_t d = dims::wrap("chunk", dim, self.dim());
  const int64_t size = self.sizes()[d];
  return split(self, {std::max<int64_t>((size + chunks - 1) / chunks, size == 0 ? 0 : 1)}, d);
}

Tensor as_strided(const Tensor& self, const IntList& size, const IntList& stride,
                  std::optional<int64_t> storage_offset) {
  return as_strided(self, size, stride, storage_offset.value_or(self.storage_offset()));
}

Tensor detach(const Tensor& self) {
  return make_view(self, self.sizes(), self.strides(), self.storage_offset());
}

Tensor to_dtype(const Tensor& self, DType dtype, bool copy) {
  if (self.dtype() == dtype && !copy) return self;
  Tensor out = empty(self.sizes(), dtype, self.device());
  copy_stub.get(self.device().type)(out, self);
  return out;
}

Tensor copy_(const Tensor& self, const Tensor& src) {
  Tensor source = src;
  if (src.sizes() != self.sizes()) {
    pointwise::broadcast_shapes("copy_", self.sizes(), src.sizes());
    source = expand(src, self.sizes());
  }
  copy_stub.get(self.device().type)(self, source);
  return self;
}

Tensor clone(const Tensor& self) {
  return self.clone();
}
Tensor contiguous(const Tensor& self) {
  return self.contiguous();
}
Tensor to_memory_format(const Tensor& self, int64_t memory_format, bool copy) {
  EMBER_CHECK(memory_format >= 0 && memory_format <= 2, ValueError,
              "[to_memory_format] expected a memory format code in [0, 2], but got ", memory_format);
  const auto format = static_cast<MemoryFormat>(memory_format);
  if (!copy || !self.is_contiguous(format)) return self.contiguous(format);
  Tensor out = empty(self.sizes(), self.dtype(), self.device(), format);
  copy_same_shape(out, self);
  return out;
}

}  // namespace ember
