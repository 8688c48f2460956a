// The bodies of formulas_select.h's derivative helpers: here, not in the header, so that the generated
// autograd_ops.cpp, which includes it, does not compile them again.
#include "autograd/formulas_select.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "ops/kernels.h"
#include "ops/pointwise/pointwise.h"

namespace ember::autograd {

static Tensor int_range(int64_t n, const Device& device) {
  return ember::arange(Scalar(int64_t(0)), Scalar(n), Scalar(int64_t(1)), DType::Int64, device);
}

static Tensor int_num(int64_t v) {
  return wrapped_number(Scalar(v));
}

Tensor zeros_shaped(const IntList& sizes, const Tensor& like) {
  return ember::zeros(sizes, like.dtype(), like.device());
}

Tensor flat(const Tensor& t) {
  return autograd::reshape(t, IntList{-1});
}

// Whether `t` has a zero element (a host check; off the CPU it answers yes, which only selects
// the slower formula that is exact with zeros).
static bool has_zero(const Tensor& t) {
  if (t.device().type != DeviceType::CPU) return true;
  const Tensor n = ember::count_nonzero(ember::eq(t, num(0.0), std::nullopt), std::nullopt);
  return *n.contiguous().data<int64_t>() != 0;
}

Tensor gather_backward(const Tensor& grad, const IntList& sizes, int64_t dim, const Tensor& index) {
  if (plain_view_backward(grad) && grad.device().type == DeviceType::CPU) {
    Tensor out = ember::zeros(sizes, grad.dtype(), grad.device());
    const int64_t d = sizes.empty() ? 0 : wrap_dim(dim, static_cast<int64_t>(sizes.size()));
    if (index.numel() > 0) index_stub.get(DeviceType::CPU)(IndexOp::ScatterAdd, out, out, d, index, grad);
    return out;
  }
  return autograd::scatter_add(autograd::zeros(sizes, grad.dtype(), grad.device()), dim, index, grad);
}

// ---- views and shapes -------------------------------------------------------------------------

Tensor unfold_backward(const Tensor& grad, const IntList& sizes, int64_t dimension, int64_t size,
                       int64_t step) {
  if (sizes.empty()) return autograd::reshape(grad, sizes);
  const int64_t d = wrap_dim(dimension, static_cast<int64_t>(sizes.size()));
  const int64_t windows = grad.sizes()[d];
  const Tensor starts = ember::mul(ember::unsqueeze(int_range(windows, grad.device()), 1), int_num(step));
  const Tensor index = ember::reshape(
      ember::add(starts, ember::unsqueeze(int_range(size, grad.device()), 0), Scalar(int64_t(1))),
      IntList{-1});
  Tensor g = autograd::movedim(grad, IntList{grad.dim() - 1}, IntList{d + 1});
  g = autograd::flatten(g, d, d + 1);
  return autograd::index_add(zeros_shaped(sizes, grad), d, index, g, Scalar(int64_t(1)));
}

Tensor diagonal_backward(const Tensor& grad, const IntList& sizes, int64_t offset, int64_t dim1,
                         int64_t dim2) {
  const int64_t n = static_cast<int64_t>(sizes.size());
  const int64_t d1 = wrap_dim(dim1, n), d2 = wrap_dim(dim2, n);
  const int64_t len = grad.sizes().back();
  const Tensor rows = ember::add(int_range(len, grad.device()), int_num(std::max<int64_t>(-offset, 0)));
  const Tensor cols = ember::add(int_range(len, grad.device()), int_num(std::max<int64_t>(offset, 0)));
  IntList moved{sizes[d1], sizes[d2]};  // dim1 and dim2 first, the rest in order
  for (int64_t d = 0; d < n; ++d) {
    if (d != d1 && d != d2) moved.push_back(sizes[d]);
  }
  const Tensor g = autograd::movedim(grad, IntList{grad.dim() - 1}, IntList{0});
  const Tensor z = autograd::index_put(zeros_shaped(moved, grad), {rows, cols}, g, false);
  return autograd::movedim(z, IntList{0, 1}, IntList{d1, d2});
}

Tensor storage_positions(const IntList& sizes, const IntList& strides, int64_t offset, const Device& device) {
  Tensor pos = ember::full(IntList{}, Scalar(offset), DType::Int64, device);
  for (size_t i = 0; i < sizes.size(); ++i) {
    IntList shape(sizes.size(), 1);
    shape[i] = sizes[i];
    pos =
        ember::add(pos, ember::reshape(ember::mul(int_range(sizes[i], device), int_num(strides[i])), shape));
  }
  return ember::reshape(ember::expand(pos, sizes), IntList{-1});
}

int64_t storage_extent(const IntList& sizes, const IntList& strides, int64_t offset) {
  int64_t last = offset;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == 0) return 0;
    last += (sizes[i] - 1) * strides[i];
  }
  return last + 1;
}

Tensor as_strided_through_storage(const Tensor& values, const IntList& from_sizes,
                                  const IntList& from_strides, int64_t from_offset, const IntList& to_sizes,
                                  const IntList& to_strides, int64_t to_offset, bool average_to) {
  const int64_t extent = std::max(storage_extent(from_sizes, from_strides, from_offset),
                                  storage_extent(to_sizes, to_strides, to_offset));
  const Tensor from = storage_positions(from_sizes, from_strides, from_offset, values.device());
  const Tensor to = storage_positions(to_sizes, to_strides, to_offset, values.device());
  Tensor buffer =
      autograd::index_add(zeros_shaped(IntList{extent}, values), 0, from, flat(values), Scalar(int64_t(1)));
  Tensor picked = autograd::index_select(buffer, 0, to);
  if (average_to) {
    const Tensor ones = ember::ones(IntList{to.numel()}, values.dtype(), values.device());
    const Tensor count = ember::index_add(ember::zeros(IntList{extent}, values.dtype(), values.device()), 0,
                                          to, ones, Scalar(int64_t(1)));
    picked = autograd::div(picked, ember::index_select(count, 0, to), std::nullopt, std::nullopt);
  }
  return autograd::reshape(picked, to_sizes);
}

Tensor as_strided_backward(const Tensor& grad, const Tensor& self, const IntList& size, const IntList& stride,
                           std::optional<int64_t> storage_offset) {
  return as_strided_through_storage(grad, size, stride, storage_offset.value_or(self.storage_offset()),
                                    self.sizes(), self.strides(), self.storage_offset(), true);
}

Tensor as_strided_jvp(const Tensor& self_t, const Tensor& self, const IntList& size, const IntList& stride,
                      std::optional<int64_t> storage_offset) {
  // the tangent is laid out as self is; storage shared by several elements of self averages
  const Tensor spread =
      as_strided_through_storage(self_t, self.sizes(), self.strides(), self.storage_offset(), self.sizes(),
                                 self.strides(), self.storage_offset(), true);
  return as_strided_through_storage(spread, self.sizes(), self.strides(), self.storage_offset(), size, stride,
                                    storage_offset.value_or(self.storage_offset()), false);
}

Tensor repeat_backward(const Tensor& grad, const IntList& self_sizes, IntList repeats) {
  const int64_t lead = static_cast<int64_t>(repeats.size()) - static_cast<int64_t>(self_sizes.size());
  IntList split, reduce;
  for (int64_t i = 0; i < static_cast<int64_t>(repeats.size()); ++i) {
    if (i < lead) {
      split.push_back(repeats[i]);
      reduce.push_back(static_cast<int64_t>(split.size()) - 1);
    } else {
      split.push_back(repeats[i]);
      reduce.push_back(static_cast<int64_t>(split.size()) - 1);
      split.push_back(self_sizes[i - lead]);
    }
  }
  if (reduce.empty()) return autograd::reshape(grad, self_sizes);
  const Tensor g = autograd::sum(autograd::reshape(grad, split), reduce, false, std::nullopt);
  return autograd::reshape(g, self_sizes);
}

Tensor tile_backward(const Tensor& grad, const IntList& self_sizes, const IntList& dims) {
  IntList repeats = dims;  // tile pads `dims` with leading ones up to self's rank
  while (repeats.size() < self_sizes.size()) repeats.insert(repeats.begin(), 1);
  return repeat_backward(grad, self_sizes, repeats);
}

IntList negated(IntList v) {
  for (int64_t& x : v) x = -x;
  return v;
}

std::vector<Tensor> stack_like_backward(const Tensor& grad, const std::vector<IntList>& sizes, int rank) {
  std::vector<IntList> lifted;
  for (const IntList& s : sizes) {
    IntList l = s;
    if (rank == 1 && l.empty()) l = {1};
    if (rank == 2) {
      if (l.empty())
        l = {1, 1};
      else if (l.size() == 1)
        l = {1, l[0]};
    }
    if (rank == 3) {
      if (l.empty())
        l = {1, 1, 1};
      else if (l.size() == 1)
        l = {1, l[0], 1};
      else if (l.size() == 2)
        l = {l[0], l[1], 1};
    }
    lifted.push_back(l);
  }
  int64_t dim = rank == 1 ? (lifted.empty() || lifted[0].size() == 1 ? 0 : 1) : rank == 2 ? 0 : 2;
  std::vector<Tensor> parts = cat_backward(grad, lifted, dim);
  for (size_t i = 0; i < parts.size(); ++i) parts[i] = autograd::reshape(parts[i], sizes[i]);
  return parts;
}

std::vector<Tensor> meshgrid_backward(const std::vector<Tensor>& grads, const std::vector<IntList>& sizes,
                                      const std::string& indexing) {
  std::vector<Tensor> out;
  const int64_t n = static_cast<int64_t>(grads.size());
  for (int64_t i = 0; i < n; ++i) {
    int64_t along = i;
    if (indexing == "xy" && n >= 2 && i < 2) along = 1 - i;
    IntList others;
    for (int64_t d = 0; d < grads[i].dim(); ++d) {
      if (d != along) others.push_back(d);
    }
    Tensor g = others.empty() ? grads[i] : autograd::sum(grads[i], others, false, std::nullopt);
    out.push_back(autograd::reshape(g, sizes[i]));
  }
  return out;
}

Tensor repeat_interleave_backward(const Tensor& grad, const IntList& self_sizes, const Tensor& repeats,
                                  std::optional<int64_t> dim) {
  const int64_t numel = checked_numel(self_sizes, "repeat_interleave");
  const int64_t d = dim ? wrap_dim(*dim, static_cast<int64_t>(self_sizes.size())) : 0;
  const int64_t n = dim && !self_sizes.empty() ? self_sizes[d] : numel;
  const Tensor source = ember::repeat_interleave(int_range(n, grad.device()), repeats, 0);
  if (!dim || self_sizes.empty()) {
    const Tensor g =
        autograd::index_add(zeros_shaped(IntList{n}, grad), 0, source, flat(grad), Scalar(int64_t(1)));
    return autograd::reshape(g, self_sizes);
  }
  return autograd::index_add(zeros_shaped(self_sizes, grad), d, source, grad, Scalar(int64_t(1)));
}

Tensor diff_backward(const Tensor& grad, int64_t n, int64_t dim, const Tensor& self, const Tensor& prepend,
                     const Tensor& append, int which) {
  const int64_t d = wrap_dim(dim, self.dim());
  const int64_t pre = prepend.defined() ? (prepend.dim() == 0 ? 1 : prepend.sizes()[d]) : 0;
  const int64_t mid = self.sizes()[d];
  const int64_t post = append.defined() ? (append.dim() == 0 ? 1 : append.sizes()[d]) : 0;
  const int64_t total = pre + mid + post;
  Tensor g = grad;
  for (int64_t k = 0; k < n && g.sizes()[d] < total; ++k) {
    IntList edge = g.sizes();
    edge[d] = 1;
    const Tensor z = zeros_shaped(edge, g);
    g = autograd::sub(autograd::cat({z, g}, d), autograd::cat({g, z}, d), Scalar(int64_t(1)), std::nullopt);
  }
  if (g.sizes()[d] < total) {  // n >= the length: the result was empty
    IntList full = g.sizes();
    full[d] = total;
    g = zeros_shaped(full, g);
  }
  const int64_t start = which == 0 ? pre : which == 1 ? 0 : pre + mid;
  const int64_t length = which == 0 ? mid : which == 1 ? pre : post;
  return autograd::narrow(g, d, start, length);
}

// ---- selection --------------------------------------------------------------------------------

Tensor take_backward(const Tensor& grad, const IntList& self_sizes, const Tensor& index) {
  const int64_t n = checked_numel(self_sizes, "take");
  Tensor idx = ember::reshape(index, IntList{-1});
  idx = ember::where(ember::lt(idx, int_num(0)), ember::add(idx, int_num(n)), idx);  // negative: from the end
  const Tensor g =
      autograd::index_add(zeros_shaped(IntList{n}, grad), 0, idx, flat(grad), Scalar(int64_t(1)));
  return autograd::reshape(g, self_sizes);
}

Tensor take_along_dim_backward(const Tensor& grad, const IntList& self_sizes, const Tensor& indices,
                               std::optional<int64_t> dim) {
  if (!dim) {
    const Tensor g =
        autograd::scatter_add(zeros_shaped(IntList{checked_numel(self_sizes, "take_along_dim")}, grad), 0,
                              ember::reshape(indices, IntList{-1}), flat(grad));
    return autograd::reshape(g, self_sizes);
  }
  const int64_t d = wrap_dim(*dim, grad.dim());
  IntList shape = grad.sizes();  // self broadcast over the result's other dims; the engine sums back
  shape[d] = self_sizes.empty() ? 1 : self_sizes[d];
  // negative: from the end (Note [negative indices] in src/ops/indexing/indexing.cpp)
  const Tensor idx =
      ember::where(ember::lt(indices, int_num(0)), ember::add(indices, int_num(shape[d])), indices);
  return autograd::scatter_add(zeros_shaped(shape, grad), d, ember::expand(idx, grad.sizes()), grad);
}

Tensor masked_select_backward(const Tensor& grad, const Tensor& self, const Tensor& mask) {
  const IntList shape = pointwise::broadcast_shapes("masked_select", self.sizes(), mask.sizes());
  return autograd::masked_scatter(zeros_shaped(shape, grad), ember::expand(mask, shape), grad);
}

Tensor masked_scatter_source_backward(const Tensor& grad, const Tensor& mask, const IntList& source_sizes) {
  Tensor taken = autograd::masked_select(grad, mask);
  const int64_t missing = checked_numel(source_sizes, "masked_scatter") - taken.numel();
  if (missing > 0) taken = autograd::cat({taken, zeros_shaped(IntList{missing}, grad)}, 0);
  return autograd::reshape(taken, source_sizes);
}

Tensor select_values_backward(const Tensor& grad, const IntList& self_sizes, int64_t dim,
                              const Tensor& indices, bool keepdim) {
  if (self_sizes.empty()) return autograd::reshape(grad, self_sizes);
  const int64_t d = wrap_dim(dim, static_cast<int64_t>(self_sizes.size()));
  Tensor g = grad, idx = indices;
  if (!keepdim) {
    g = autograd::unsqueeze(g, d);
    idx = ember::unsqueeze(idx, d);
  }
  return autograd::scatter_add(zeros_shaped(self_sizes, grad), d, idx, g);
}

Tensor select_values_jvp(const Tensor& self_t, int64_t dim, const Tensor& indices, bool keepdim) {
  if (self_t.dim() == 0) return self_t;
  const int64_t d = wrap_dim(dim, self_t.dim());
  const Tensor v = autograd::gather(self_t, d, keepdim ? indices : ember::unsqueeze(indices, d));
  return keepdim ? v : autograd::squeeze(v, IntList{d});
}

Tensor sort_indices(const Tensor& self, int64_t dim) {
  return std::get<1>(ember::sort(self, dim, false, false));
}

// scatter_reduce: which of self and src reached each output, and how many shared it.
namespace {
struct ScatterReduceParts {
  Tensor touched;     // bool, self's shape: some src element landed here
  Tensor self_share;  // self's part of each output's gradient
  Tensor src_share;   // per src element, its part of the gradient of the output it landed in
};
}  // namespace

static ScatterReduceParts scatter_reduce_parts(const Tensor& self, int64_t dim, const Tensor& index,
                                               const Tensor& src, const std::string& reduce,
                                               bool include_self, const Tensor& result) {
  const DType real = is_complex(self.dtype()) ? DType::Float64 : self.dtype();
  const Tensor ones_src = ember::ones(src.sizes(), real, src.device());
  const Tensor landed =
      ember::scatter_add(ember::zeros(self.sizes(), real, self.device()), dim, index, ones_src);
  ScatterReduceParts p;
  p.touched = ember::gt(landed, num(0.0));
  const Tensor self_in = include_self ? ember::ones(self.sizes(), real, self.device())
                                      : ember::to_dtype(ember::logical_not(p.touched), real, false);
  if (reduce == "sum") {
    p.self_share = self_in;
    p.src_share = ones_src;
  } else if (reduce == "mean") {
    const Tensor count = ember::add(landed, self_in);
    p.self_share = ember::div(self_in, count);
    p.src_share = ember::gather(ember::div(num(1.0), count), dim, index);
  } else if (reduce == "amax" || reduce == "amin") {  // ties share evenly
    const Tensor self_hit = ember::mul(self_in, ember::to_dtype(ember::eq(self, result), real, false));
    const Tensor src_hit = ember::to_dtype(ember::eq(src, ember::gather(result, dim, index)), real, false);
    const Tensor count = ember::scatter_add(self_hit, dim, index, src_hit);
    p.self_share = ember::div(self_hit, count);
    p.src_share = ember::div(src_hit, ember::gather(count, dim, index));
  } else {
    EMBER_CHECK(reduce == "prod", ValueError, "[scatter_reduce] unknown reduce '", reduce, "'");
  }
  return p;
}

// reduce='prod': d result / d x for each factor x is the product of the other factors of its
// output: result / x where x != 0; where x is its output's only zero factor, the product of the
// non-zero ones; 0 where there are more zeros. Both are computed per output position.
namespace {
struct ScatterProdParts {
  Tensor zeros;         // how many zero factors each output has
  Tensor nonzero_prod;  // the product of its non-zero factors (recorded: it has derivatives too)
};
}  // namespace

static ScatterProdParts scatter_prod_parts(const Tensor& self, int64_t dim, const Tensor& index,
                                           const Tensor& src, bool include_self) {
  const DType real = is_complex(self.dtype()) ? DType::Float64 : self.dtype();
  const Tensor src_zero = ember::eq(src, num(0.0), std::nullopt);
  const Tensor self_zero = ember::eq(self, num(0.0), std::nullopt);
  const Tensor self_count = include_self ? ember::to_dtype(self_zero, real, false)
                                         : ember::zeros(self.sizes(), real, self.device());
  ScatterProdParts p;
  p.zeros = ember::scatter_add(self_count, dim, index, ember::to_dtype(src_zero, real, false));
  const Tensor self_nonzero = autograd::where(self_zero, num(1.0), self);
  const Tensor src_nonzero = autograd::where(src_zero, num(1.0), src);
  p.nonzero_prod = autograd::scatter_reduce(self_nonzero, dim, index, src_nonzero, "prod", include_self);
  return p;
}

// The derivative for factors `x` whose outputs' result / zero count / non-zero product are given.
static Tensor prod_factor_derivative(const Tensor& x, const Tensor& result, const Tensor& zeros,
                                     const Tensor& nonzero_prod) {
  const Tensor x_zero = ember::eq(x, num(0.0), std::nullopt);
  const Tensor lone_zero = autograd::where(ember::eq(zeros, num(1.0), std::nullopt), nonzero_prod, num(0.0));
  const Tensor safe_x = autograd::where(x_zero, num(1.0), x);
  return autograd::where(x_zero, lone_zero, autograd::div(result, safe_x, std::nullopt, std::nullopt));
}

// src given as a Python number (or a 0-d src met by a 1-d index) is one value per index
// position, as the forward takes it (source_for in src/ops/indexing/indexing.cpp).
static Tensor src_per_position(const Tensor& src, const Tensor& index) {
  return src.dim() == 0 && index.dim() > 0 ? autograd::expand(src, index.sizes()) : src;
}

Tensor scatter_reduce_self_backward(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& index,
                                    const Tensor& src_arg, const std::string& reduce, bool include_self,
                                    const Tensor& result) {
  const Tensor src = src_per_position(src_arg, index);
  const ScatterReduceParts p = scatter_reduce_parts(self, dim, index, src, reduce, include_self, result);
  if (reduce == "prod") {  // self took part where include_self; else untouched places pass grad on
    if (!include_self) return autograd::where(p.touched, zeros_of(grad), grad);
    const ScatterProdParts q = scatter_prod_parts(self, dim, index, src, include_self);
    return autograd::mul(grad, autograd::conj(prod_factor_derivative(self, result, q.zeros, q.nonzero_prod)),
                         std::nullopt);
  }
  return autograd::mul(grad, p.self_share, std::nullopt);
}

Tensor scatter_reduce_src_backward(const Tensor& grad, const Tensor& self, int64_t dim, const Tensor& index,
                                   const Tensor& src_arg, const std::string& reduce, bool include_self,
                                   const Tensor& result) {
  const Tensor src = src_per_position(src_arg, index);
  const ScatterReduceParts p = scatter_reduce_parts(self, dim, index, src, reduce, include_self, result);
  if (reduce == "prod") {
    const ScatterProdParts q = scatter_prod_parts(self, dim, index, src, include_self);
    const Tensor d =
        prod_factor_derivative(src, autograd::gather(result, dim, index), ember::gather(q.zeros, dim, index),
                               autograd::gather(q.nonzero_prod, dim, index));
    return autograd::mul(autograd::gather(grad, dim, index), autograd::conj(d), std::nullopt);
  }
  return autograd::mul(autograd::gather(grad, dim, index), p.src_share, std::nullopt);
}

Tensor scatter_reduce_jvp(const Tensor& self_t, const Tensor& src_t_arg, const Tensor& self, int64_t dim,
                          const Tensor& index, const Tensor& src_arg, const std::string& reduce,
                          bool include_self, const Tensor& result) {
  const Tensor src = src_per_position(src_arg, index);
  const Tensor src_t = src_t_arg.defined() ? src_per_position(src_t_arg, index) : src_t_arg;
  const ScatterReduceParts p = scatter_reduce_parts(self, dim, index, src, reduce, include_self, result);
  if (reduce == "prod") {  // d result = sum over the factors that took part of t * (d result / d x)
    const ScatterProdParts q = scatter_prod_parts(self, dim, index, src, include_self);
    const Tensor src_d =
        prod_factor_derivative(src, autograd::gather(result, dim, index), ember::gather(q.zeros, dim, index),
                               autograd::gather(q.nonzero_prod, dim, index));
    const Tensor from_src =
        autograd::scatter_add(zeros_of(self_t), dim, index, autograd::mul(src_t, src_d, std::nullopt));
    const Tensor from_self =
        include_self ? autograd::mul(self_t, prod_factor_derivative(self, result, q.zeros, q.nonzero_prod),
                                     std::nullopt)
                     : autograd::where(p.touched, zeros_of(self_t), self_t);
    return autograd::add(from_self, from_src, Scalar(int64_t(1)), std::nullopt);
  }
  return autograd::add(
      autograd::mul(self_t, p.self_share, std::nullopt),
      autograd::scatter_add(zeros_of(self_t), dim, index, autograd::mul(src_t, p.src_share, std::nullopt)),
      Scalar(int64_t(1)), std::nullopt);
}

Tensor imag_unit() {
  return wrapped_number(Scalar(std::complex<double>(0.0, 1.0)));
}

// ---- reductions and scans ---------------------------------------------------------------------

Tensor prod_backward(const Tensor& grad, const Tensor& self, const std::optional<IntList>& dim,
                     bool keepdim) {
  if (self.numel() == 0) return zeros_of(self);
  const bool all = !dim || dim->empty();
  const int64_t d = all ? 0 : wrap_dim((*dim)[0], self.dim());
  if (self.dim() == 0) return grad;
  const Tensor x = all ? flat(self) : autograd::movedim(self, IntList{d}, IntList{-1});
  const int64_t n = x.sizes().back();
  IntList edge = x.sizes();
  edge.back() = 1;
  const Tensor one = ember::ones(edge, x.dtype(), x.device());
  const Tensor before =
      autograd::cumprod(autograd::cat({one, autograd::narrow(x, -1, 0, n - 1)}, -1), -1, std::nullopt);
  const Tensor after = autograd::flip(
      autograd::cumprod(
          autograd::flip(autograd::cat({autograd::narrow(x, -1, 1, n - 1), one}, -1), IntList{-1}), -1,
          std::nullopt),
      IntList{-1});
  Tensor others = autograd::mul(before, after, std::nullopt);
  others = all ? autograd::reshape(others, self.sizes()) : autograd::movedim(others, IntList{-1}, IntList{d});
  return autograd::mul(sum_backward(grad, self.sizes(), dim, keepdim), autograd::conj(others), std::nullopt);
}

Tensor cumprod_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.dim() == 0 || self.numel() == 0) return grad;
  const int64_t d = wrap_dim(dim, self.dim());
  if (!has_zero(self)) {
    return autograd::div(cumsum_backward(autograd::mul(grad, autograd::conj(result), std::nullopt), d),
                         autograd::conj(self), std::nullopt, std::nullopt);
  }
  const int64_t n = self.sizes()[d];
  IntList line(self.dim(), 1);
  line[d] = n;
  const Tensor pos = ember::reshape(int_range(n, self.device()), line);
  std::vector<Tensor> parts;
  for (int64_t i = 0; i < n; ++i) {
    const Tensor at_i = ember::eq(pos, int_num(i));
    const Tensor without_i = autograd::where(at_i, ember::ones(IntList{}, self.dtype(), self.device()), self);
    const Tensor from_i = ember::ge(pos, int_num(i));
    const Tensor terms =
        autograd::mul(grad, autograd::conj(autograd::cumprod(without_i, d, std::nullopt)), std::nullopt);
    parts.push_back(autograd::sum(mask_backward(terms, from_i), IntList{d}, true, std::nullopt));
  }
  return autograd::cat(parts, d);
}

Tensor cumprod_jvp(const Tensor& self_t, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.dim() == 0 || self.numel() == 0) return self_t;
  const int64_t d = wrap_dim(dim, self.dim());
  if (!has_zero(self)) {
    return autograd::mul(
        result, autograd::cumsum(autograd::div(self_t, self, std::nullopt, std::nullopt), d, std::nullopt),
        std::nullopt);
  }
  const int64_t n = self.sizes()[d];
  IntList line(self.dim(), 1);
  line[d] = n;
  const Tensor pos = ember::reshape(int_range(n, self.device()), line);
  Tensor total = zeros_of(result);
  for (int64_t i = 0; i < n; ++i) {  // d result_k = sum_{i <= k} t_i * prod_{j <= k, j != i} x_j
    const Tensor at_i = ember::eq(pos, int_num(i));
    const Tensor without_i = autograd::where(at_i, ember::ones(IntList{}, self.dtype(), self.device()), self);
    const Tensor t_i = autograd::narrow(self_t, d, i, 1);
    const Tensor term = autograd::mul(autograd::cumprod(without_i, d, std::nullopt), t_i, std::nullopt);
    total = autograd::add(total, mask_backward(term, ember::ge(pos, int_num(i))), Scalar(int64_t(1)),
                          std::nullopt);
  }
  return total;
}

static Tensor minus_inf_like(const Tensor& t) {
  return ember::full(IntList{}, Scalar(-INFINITY), t.dtype(), t.device());
}

// log(t) - y for t >= 0: -inf where t = 0, with zero (not NaN) derivatives there.
static Tensor log_minus(const Tensor& t, const Tensor& y) {
  const Tensor positive = ember::gt(t, num(0.0));
  const Tensor logs =
      autograd::sub(autograd::log(autograd::where(positive, t, ember::ones(IntList{}, t.dtype(), t.device())),
                                  std::nullopt),
                    autograd::where(positive, y, zeros_of(y)), Scalar(int64_t(1)), std::nullopt);
  return autograd::where(positive, logs, minus_inf_like(logs));
}

// exp(a + b), and 0 wherever a or b is -inf (also when the other is +inf: no NaN).
static Tensor exp_sum(const Tensor& a, const Tensor& b) {
  const Tensor none = ember::logical_or(ember::eq(a, minus_inf_like(a)), ember::eq(b, minus_inf_like(b)));
  const Tensor e =
      autograd::exp(autograd::where(none, zeros_of(a), autograd::add(a, b, Scalar(int64_t(1)), std::nullopt)),
                    std::nullopt);
  return autograd::where(none, zeros_of(e), e);
}

Tensor logcumsumexp_backward(const Tensor& grad, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.dim() == 0) return grad;
  const int64_t d = wrap_dim(dim, self.dim());
  auto part = [&](const Tensor& g) {
    const Tensor terms = log_minus(g, result);
    const Tensor tail =
        autograd::flip(autograd::logcumsumexp(autograd::flip(terms, IntList{d}), d), IntList{d});
    return exp_sum(self, tail);
  };
  const Tensor positive = autograd::clamp(grad, Scalar(0.0), std::nullopt, std::nullopt);
  const Tensor negative =
      autograd::clamp(autograd::neg(grad, std::nullopt), Scalar(0.0), std::nullopt, std::nullopt);
  return autograd::sub(part(positive), part(negative), Scalar(int64_t(1)), std::nullopt);
}

Tensor logcumsumexp_jvp(const Tensor& self_t, const Tensor& self, const Tensor& result, int64_t dim) {
  if (self.dim() == 0) return self_t;
  const int64_t d = wrap_dim(dim, self.dim());
  auto part = [&](const Tensor& t) {
    const Tensor head = autograd::logcumsumexp(log_minus(t, autograd::neg(self, std::nullopt)), d);
    return exp_sum(head, autograd::neg(result, std::nullopt));
  };
  const Tensor positive = autograd::clamp(self_t, Scalar(0.0), std::nullopt, std::nullopt);
  const Tensor negative =
      autograd::clamp(autograd::neg(self_t, std::nullopt), Scalar(0.0), std::nullopt, std::nullopt);
  return autograd::sub(part(positive), part(negative), Scalar(int64_t(1)), std::nullopt);
}

Tensor nan_kept(const Tensor& self) {
  return ember::logical_not(ember::isnan(self));
}

static Tensor nanmean_count(const Tensor& self, const std::optional<IntList>& dim, bool keepdim) {
  return ember::sum(
      ember::to_dtype(nan_kept(self), is_complex(self.dtype()) ? DType::Float64 : self.dtype(), false), dim,
      keepdim, std::nullopt);
}

Tensor nanmean_backward(const Tensor& grad, const Tensor& self, const std::optional<IntList>& dim,
                        bool keepdim) {
  const Tensor g = autograd::div(grad, nanmean_count(self, dim, keepdim), std::nullopt, std::nullopt);
  return mask_backward(sum_backward(g, self.sizes(), dim, keepdim), nan_kept(self));
}

Tensor nanmean_jvp(const Tensor& self_t, const Tensor& self, const std::optional<IntList>& dim,
                   bool keepdim) {
  const Tensor t = autograd::masked_fill(self_t, ember::isnan(self), Scalar(0.0));
  return autograd::div(autograd::sum(t, dim, keepdim, std::nullopt), nanmean_count(self, dim, keepdim),
                       std::nullopt, std::nullopt);
}

// ---- elementwise ------------------------------------------------------------------------------

Tensor fpick_backward(const Tensor& grad, const Tensor& self, const Tensor& other, bool for_self, bool max) {
  const Tensor self_wins =
      ember::logical_or(max ? ember::ge(self, other) : ember::le(self, other), ember::isnan(other));
  return mask_backward(grad, for_self ? self_wins : ember::logical_not(self_wins));
}

Tensor trigamma(const Tensor& self) {
  const double pi = 3.14159265358979323846;
  auto add = [](const Tensor& a, const Tensor& b) {
    return autograd::add(a, b, Scalar(int64_t(1)), std::nullopt);
  };
  auto mul = [](const Tensor& a, const Tensor& b) { return autograd::mul(a, b, std::nullopt); };
  const Tensor reflect = ember::lt(self, num(0.5));
  Tensor x = autograd::where(reflect, autograd::sub(num(1.0), self, Scalar(int64_t(1)), std::nullopt), self);
  Tensor acc = zeros_of(x);
  for (int i = 0; i < 6; ++i) {
    const Tensor small = ember::lt(x, num(6.0));
    acc = add(acc, mask_backward(autograd::reciprocal(mul(x, x), std::nullopt), small));
    x = autograd::where(small, add(x, num(1.0)), x);
  }
  const Tensor r = autograd::reciprocal(x, std::nullopt);
  const Tensor r2 = mul(r, r);
  // 1/x + 1/(2x^2) + (1/x^3) (1/6 - 1/(30x^2) + 1/(42x^4) - 1/(30x^6))
  Tensor b = add(num(1.0 / 42.0), mul(r2, num(-1.0 / 30.0)));
  b = add(num(-1.0 / 30.0), mul(r2, b));
  b = add(num(1.0 / 6.0), mul(r2, b));
  const Tensor value = add(acc, add(add(r, mul(r2, num(0.5))), mul(mul(r, r2), b)));
  const Tensor s = autograd::sin(mul(self, num(pi)), std::nullopt);
  const Tensor reflected = autograd::sub(autograd::div(num(pi * pi), mul(s, s), std::nullopt, std::nullopt),
                                         value, Scalar(int64_t(1)), std::nullopt);
  return autograd::where(reflect, reflected, value);
}

Tensor sgn_backward(const Tensor& grad, const Tensor& self, const Tensor& result) {
  if (!is_complex(self.dtype())) return zeros_of(grad);
  const Tensor r = autograd::abs(self, std::nullopt);
  const Tensor along = autograd::real(autograd::mul(grad, autograd::conj(result), std::nullopt));
  const Tensor g = autograd::div(
      autograd::sub(grad, autograd::mul(result, along, std::nullopt), Scalar(int64_t(1)), std::nullopt), r,
      std::nullopt, std::nullopt);
  return autograd::where(ember::eq(r, num(0.0)), zeros_of(g), g);
}

Tensor sgn_jvp(const Tensor& self_t, const Tensor& self, const Tensor& result) {
  if (!is_complex(self.dtype())) return zeros_of(self_t);
  const Tensor r = autograd::abs(self, std::nullopt);
  const Tensor along = autograd::real(autograd::mul(autograd::conj(result), self_t, std::nullopt));
  const Tensor t = autograd::div(
      autograd::sub(self_t, autograd::mul(result, along, std::nullopt), Scalar(int64_t(1)), std::nullopt), r,
      std::nullopt, std::nullopt);
  return autograd::where(ember::eq(r, num(0.0)), zeros_of(t), t);
}

Tensor angle_backward(const Tensor& grad, const Tensor& self) {
  if (!is_complex(self.dtype())) return zeros_of(grad);
  const Tensor r = autograd::abs(self, std::nullopt);
  const Tensor i_z = autograd::mul(self, imag_unit(), std::nullopt);
  const Tensor g = autograd::mul(
      grad, autograd::div(i_z, autograd::mul(r, r, std::nullopt), std::nullopt, std::nullopt), std::nullopt);
  return autograd::where(ember::eq(r, num(0.0)), zeros_of(g), g);
}

}  // namespace ember::autograd
