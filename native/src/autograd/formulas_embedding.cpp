// The bodies of formulas_embedding.h's derivative helpers: here, not in the header, so that the generated
// autograd_ops.cpp, which includes it, does not compile them again.
#include "autograd/formulas_embedding.h"

#include <algorithm>
#include <unordered_map>
#include <vector>

namespace ember::autograd {

std::optional<Tensor> optional_tensor(const Tensor& t) {
  return t.defined() ? std::optional<Tensor>(t) : std::nullopt;
}

static std::vector<int64_t> int64_values(const Tensor& t) {
  const Tensor c = ember::to_dtype(t, DType::Int64, false).contiguous();
  const int64_t* p = c.data<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

// What the forward did with each index (Note [embedding bags] in src/ops/embedding): `bag` its
// bag (0 outside every bag), `row` its row (0 where it is left out, so it stays a valid row
// number), `factor` what its row was multiplied by: 0 when left out (padding, after the last
// bag), else 1 / the bag's size for mean, times 1 / the row's number of uses for scale_by_freq.
// The indices and offsets were checked when the forward ran.
namespace {
struct BagMembers {
  Tensor bag, row, factor;
  int64_t bags = 0;
};
}  // namespace

static BagMembers bag_members(const Tensor& indices, const Tensor* offsets, int64_t mode,
                              bool include_last_offset, int64_t padding_idx, bool scale_by_freq,
                              DType dtype) {
  const std::vector<int64_t> idx = int64_values(indices);
  const int64_t n = static_cast<int64_t>(idx.size());
  std::vector<int64_t> bounds;
  if (offsets == nullptr) {  // plain embedding: every index is its own bag
    for (int64_t i = 0; i <= n; ++i) bounds.push_back(i);
  } else {
    bounds = int64_values(*offsets);
    if (!include_last_offset) bounds.push_back(n);
  }
  BagMembers m;
  m.bags = std::max<int64_t>(static_cast<int64_t>(bounds.size()) - 1, 0);
  std::vector<int64_t> bag(n, 0), row(n, 0);
  std::vector<double> factor(n, 0.0);
  std::unordered_map<int64_t, int64_t> uses;
  for (int64_t b = 0; b < m.bags; ++b) {
    const int64_t s = std::clamp<int64_t>(bounds[b], 0, n), e = std::clamp<int64_t>(bounds[b + 1], s, n);
    int64_t count = 0;
    for (int64_t i = s; i < e; ++i) count += idx[i] != padding_idx;
    for (int64_t i = s; i < e; ++i) {
      if (idx[i] == padding_idx) continue;
      bag[i] = b;
      row[i] = idx[i];
      factor[i] = mode == 1 ? 1.0 / static_cast<double>(count) : 1.0;
      ++uses[idx[i]];
    }
  }
  if (scale_by_freq) {
    for (int64_t i = 0; i < n; ++i)
      if (factor[i] != 0.0) factor[i] /= static_cast<double>(uses[idx[i]]);
  }
  auto tensor_of = [](const auto& v, DType d) {
    Tensor t = ember::empty({static_cast<int64_t>(v.size())}, d);
    using V = typename std::decay_t<decltype(v)>::value_type;
    std::copy(v.begin(), v.end(), t.data<V>());
    return t;
  };
  m.bag = tensor_of(bag, DType::Int64);
  m.row = tensor_of(row, DType::Int64);
  m.factor = ember::to_dtype(tensor_of(factor, DType::Float64), dtype, false);
  return m;
}

// out[bag] += factor * weights * table[row] over the members: the forward of sum and mean bags
// (and, with scale_by_freq factors, the adjoint of their backward), as differentiable ops.
static Tensor bag_sums(const Tensor& table, const BagMembers& m, const Tensor& weights) {
  const int64_t width = table.sizes().at(1);
  Tensor out = autograd::zeros({m.bags, width}, table.dtype(), table.device());
  if (m.row.numel() == 0 || table.sizes().at(0) == 0) return out;
  Tensor s =
      weights.defined() ? autograd::mul(m.factor, autograd::reshape(weights, {-1}), std::nullopt) : m.factor;
  Tensor rows =
      autograd::mul(autograd::index_select(table, 0, m.row), autograd::unsqueeze(s, 1), std::nullopt);
  return autograd::index_add(out, 0, m.bag, rows, Scalar(int64_t(1)));
}

// Max bags: out[b, d] = table[max_indices[b, d], d], 0 for an empty bag (max_indices -1).
static Tensor bag_maxima(const Tensor& table, const Tensor& max_indices) {
  if (max_indices.numel() == 0 || table.sizes().at(0) == 0)
    return autograd::zeros(max_indices.sizes(), table.dtype(), table.device());
  const Tensor empty_bag = ember::lt(max_indices, wrapped_number(Scalar(int64_t(0))), std::nullopt);
  const Tensor safe = ember::masked_fill(max_indices, empty_bag, Scalar(int64_t(0)));
  return autograd::masked_fill(autograd::gather(table, 0, safe), empty_bag, Scalar(0.0));
}

Tensor embedding_double_backward(const Tensor& grad, const Tensor& indices, int64_t padding_idx,
                                 bool scale_grad_by_freq) {
  Tensor rows = autograd::embedding(grad, indices, -1, false, false);
  if (padding_idx < 0 && !scale_grad_by_freq) return rows;
  const BagMembers m = bag_members(indices, nullptr, 0, false, padding_idx, scale_grad_by_freq, grad.dtype());
  IntList shape = indices.sizes();
  shape.push_back(1);
  return autograd::mul(rows, autograd::reshape(m.factor, shape), std::nullopt);
}

Tensor embedding_bag_jvp(const Tensor& weight_t, const Tensor& psw_t, const Tensor& weight,
                         const Tensor& indices, const Tensor& offsets, int64_t mode,
                         const std::optional<Tensor>& psw, bool include_last_offset, int64_t padding_idx,
                         const Tensor& max_indices) {
  if (mode == 2) return bag_maxima(weight_t, max_indices);
  Tensor t = std::get<0>(autograd::_embedding_bag(weight_t, indices, offsets, false, mode, false, psw,
                                                  include_last_offset, padding_idx));
  if (psw && psw_t.defined()) {
    t = autograd::add(t,
                      std::get<0>(autograd::_embedding_bag(weight, indices, offsets, false, mode, false,
                                                           psw_t, include_last_offset, padding_idx)),
                      Scalar(int64_t(1)), std::nullopt);
  }
  return t;
}

Tensor embedding_bag_backward_grad(const Tensor& grad, const Tensor& indices, const Tensor& offsets,
                                   const Tensor& max_indices, bool scale_grad_by_freq, int64_t mode,
                                   const Tensor& psw, bool include_last_offset, int64_t padding_idx) {
  if (mode == 2) return bag_maxima(grad, max_indices);
  if (!scale_grad_by_freq) {
    return std::get<0>(autograd::_embedding_bag(grad, indices, offsets, false, mode, false,
                                                optional_tensor(psw), include_last_offset, padding_idx));
  }
  return bag_sums(
      grad, bag_members(indices, &offsets, mode, include_last_offset, padding_idx, true, grad.dtype()), psw);
}

Tensor embedding_bag_backward_weights(const Tensor& grad, const Tensor& grad_output, const Tensor& indices,
                                      const Tensor& offsets, bool scale_grad_by_freq, int64_t mode,
                                      bool include_last_offset, int64_t padding_idx) {
  const Tensor dots = autograd::_embedding_bag_per_sample_weights_backward(
      grad_output, grad, indices, offsets, mode, include_last_offset, padding_idx);
  if (!scale_grad_by_freq) return dots;
  const BagMembers m =
      bag_members(indices, &offsets, mode, include_last_offset, padding_idx, true, dots.dtype());
  return autograd::mul(dots, m.factor, std::nullopt);
}

}  // namespace ember::autograd
