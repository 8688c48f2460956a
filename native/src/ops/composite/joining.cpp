// Joining and shape ops composed from views and copies.
#include <algorithm>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/dims.h"
#include "ops/pointwise/pointwise.h"

namespace ember {
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), Error, "[cat] expected a non-empty list of Tensors");
  // Like PyTorch, 1-d empty tensors (legacy placeholders) are skipped.
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) {
    if (!(t.dim() == 1 && t.numel() == 0)) parts.push_back(t);
  }
  if (parts.empty()) return empty({0}, result_type(tensors), tensors[0].device());
  const Tensor& first = parts[0];
  EMBER_CHECK(first.dim() > 0, Error, "[cat] zero-dimensional tensor (at position 0) cannot be concatenated");
  const int64_t d = dims::wrap("cat", dim, first.dim());
  IntList shape = first.sizes();
  shape[d] = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Tensor& t = parts[i];
    EMBER_CHECK(t.dim() == first.dim(), Error, "[cat] Tensors must have same number of dimensions: got ",
                first.dim(), " and ", t.dim());
    EMBER_CHECK(t.device() == first.device(), Error,
                "[cat] expected all tensors to be on the same device, but got ", first.device().str(),
                " and ", t.device().str());
    for (int64_t k = 0; k < t.dim(); ++k) {
      EMBER_CHECK(k == d || t.sizes()[k] == first.sizes()[k], Error,
                  "[cat] Sizes of tensors must match except in "
                  "dimension ",
                  d, ". Expected size ", first.sizes()[k], " but got size ", t.sizes()[k],
                  " for tensor number ", i, " in the list.");
    }
    shape[d] += t.sizes()[d];
  }
  // channels last when every part is (Note [memory formats]), as PyTorch's cat decides
  MemoryFormat format = suggest_memory_format(parts[0]);
  for (const Tensor& t : parts)
    if (suggest_memory_format(t) != format) format = MemoryFormat::Contiguous;
  Tensor out = empty(shape, result_type(parts), first.device(), format);
  int64_t offset = 0;
  for (const Tensor& t : parts) {
    copy_(narrow(out, d, offset, t.sizes()[d]), t);
    offset += t.sizes()[d];
  }
  return out;
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  EMBER_CHECK(!tensors.empty(), Error, "[stack] stack expects a non-empty TensorList");
  const int64_t d = dims::wrap("stack", dim, tensors[0].dim() + 1);
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    EMBER_CHECK(tensors[i].sizes() == tensors[0].sizes(), Error,
                "[stack] stack expects each tensor to be equal size, but got sizes that differ at entry ", i);
    parts.push_back(unsqueeze(tensors[i], d));
  }
  return cat(parts, d);
}

Tensor hstack(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(atleast_1d(t));
  EMBER_CHECK(!parts.empty(), Error, "[hstack] expects a non-empty TensorList");
  return cat(parts, parts[0].dim() == 1 ? 0 : 1);
}

Tensor vstack(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(atleast_2d(t));
  return cat(parts, 0);
}

Tensor dstack(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(atleast_3d(t));
  return cat(parts, 2);
}

Tensor atleast_1d(const Tensor& self) {
  return self.dim() >= 1 ? self : reshape(self, {1});
}
Tensor atleast_2d(const Tensor& self) {
  if (self.dim() >= 2) return self;
  return self.dim() == 0 ? reshape(self, {1, 1}) : unsqueeze(self, 0);
}
Tensor atleast_3d(const Tensor& self) {
  if (self.dim() >= 3) return self;
  if (self.dim() == 0) return reshape(self, {1, 1, 1});
  if (self.dim() == 1) return unsqueeze(unsqueeze(self, 0), -1);
  return unsqueeze(self, -1);
}

namespace {
// Keeps elements with col - row <= diagonal (tril) or >= diagonal (triu) in the last two dims.
Tensor triangle(const char* op, const Tensor& self, int64_t diagonal, bool lower) {
  EMBER_CHECK(self.dim() >= 2, Error, "[", op, "] input tensor must have at least 2 dimensions");
  const int64_t rows = self.sizes()[self.dim() - 2];
  const int64_t cols = self.sizes()[self.dim() - 1];
  const Tensor r =
      unsqueeze(arange(Scalar(int64_t(0)), Scalar(rows), Scalar(int64_t(1)), DType::Int64, self.device()), 1);
  const Tensor c =
      unsqueeze(arange(Scalar(int64_t(0)), Scalar(cols), Scalar(int64_t(1)), DType::Int64, self.device()), 0);
  Tensor k = full({}, Scalar(diagonal), DType::Int64, self.device());
  const Tensor offset = sub(c, r, Scalar(int64_t(1)), std::nullopt);
  const Tensor keep = lower ? le(offset, k, std::nullopt) : ge(offset, k, std::nullopt);
  return where(keep, self, zeros({}, self.dtype(), self.device()));
}
}  // namespace

Tensor tril(const Tensor& self, int64_t diagonal) {
  return triangle("tril", self, diagonal, true);
}
Tensor triu(const Tensor& self, int64_t diagonal) {
  return triangle("triu", self, diagonal, false);
}

Tensor repeat(const Tensor& self, const IntList& repeats) {
  const int64_t n = static_cast<int64_t>(repeats.size());
  EMBER_CHECK(n >= self.dim(), Error,
              "[repeat] Number of dimensions of repeat dims can not be smaller than number of "
              "dimensions of tensor");
  for (int64_t r : repeats)
    EMBER_CHECK(r >= 0, Error, "[repeat] Trying to create tensor with negative dimension ", r);
  // View self as (1, s0, 1, s1, ...), expand the 1s to the repeats, then merge pairs.
  IntList padded(n - self.dim(), 1);
  padded.insert(padded.end(), self.sizes().begin(), self.sizes().end());
  IntList interleaved, expanded, result;
  for (int64_t i = 0; i < n; ++i) {
    interleaved.insert(interleaved.end(), {1, padded[i]});
    expanded.insert(expanded.end(), {repeats[i], padded[i]});
    result.push_back(repeats[i] * padded[i]);
  }
  return reshape(expand(reshape(self, interleaved), expanded).clone(), result);
}

Tensor tile(const Tensor& self, const IntList& dims) {
  IntList reps = dims;
  if (static_cast<int64_t>(reps.size()) < self.dim()) reps.insert(reps.begin(), self.dim() - reps.size(), 1);
  return repeat(self, reps);
}

Tensor roll(const Tensor& self, const IntList& shifts, const IntList& dims) {
  if (dims.empty()) {
    EMBER_CHECK(shifts.size() == 1, Error, "[roll] `shifts` required to be of size 1 when `dims` is empty");
    return view(roll(flatten(self, 0, -1), shifts, {0}), self.sizes());
  }
  EMBER_CHECK(shifts.size() == dims.size(), Error,
              "[roll] shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  Tensor out = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims::wrap("roll", dims[i], self.dim());
    const int64_t size = self.sizes()[d];
    if (size == 0) continue;
    const int64_t k = ((shifts[i] % size) + size) % size;
    if (k == 0) continue;
    out = cat({narrow(out, d, size - k, k), narrow(out, d, 0, size - k)}, d);
  }
  return out.is_same(self) ? self.clone() : out;
}

std::vector<Tensor> broadcast_tensors(const std::vector<Tensor>& tensors) {
  IntList shape;
  for (const Tensor& t : tensors) shape = pointwise::broadcast_shapes("broadcast_tensors", shape, t.sizes());
  std::vector<Tensor> out;
  for (const Tensor& t : tensors) out.push_back(expand(t, shape));
  return out;
}

std::vector<Tensor> meshgrid(const std::vector<Tensor>& tensors, const std::string& indexing) {
  EMBER_CHECK(indexing == "ij" || indexing == "xy", ValueError,
              "[meshgrid] indexing must be one of \"xy\" or \"ij\", but received: ", indexing);
  IntList shape;
  for (const Tensor& t : tensors) {
    EMBER_CHECK(t.dim() <= 1, Error,
                "[meshgrid] Expected 0D or 1D tensor in the tensor list but got: ", t.dim(), "D");
    shape.push_back(t.numel());
  }
  const bool swap = indexing == "xy" && tensors.size() >= 2;
  if (swap) std::swap(shape[0], shape[1]);
  std::vector<Tensor> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    IntList view_shape(tensors.size(), 1);
    size_t axis = i;
    if (swap && i < 2) axis = 1 - i;
    view_shape[axis] = tensors[i].numel();
    out.push_back(expand(reshape(tensors[i], view_shape), shape));
  }
  return out;
}

}  // namespace ember
