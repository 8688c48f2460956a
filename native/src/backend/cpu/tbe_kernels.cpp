// CPU kernels of the table-batched embedding ops (interfaces in src/ops/fbgemm/tbe_kernels.h;
// the layout is Note [table-batched embeddings] in src/ops/fbgemm/tbe.cpp).
//
// Forward: bags split over parallel_for; a float32 table's bag is summed in registers with
// prefetching (sum_bag of embedding_rows.h, the embedding_bag kernel's), other dtypes widen each
// row to float. Backward: Note [sorted segment sums], then the row's optimizer update (Note [fused
// optimizer backward]); segments own distinct rows, so updates never race.
#include "ops/fbgemm/tbe_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "embedding_rows.h"
#include "ember/parallel.h"
#include "kernel_utils.h"
#include "vec.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <typename F>
void visit_table(DType d, F&& f) {
  if (d == DType::Float32) return f(Tag<float>{});
  if (d == DType::Float16) return f(Tag<Half>{});
  if (d == DType::BFloat16) return f(Tag<BFloat16>{});
  throw TypeError(std::string("[tbe] expected a float32, float16 or bfloat16 table, but got ") +
                  dtype_name(d));
}

template <typename F>
void visit_rows(DType d, F&& f) {
  if (d == DType::Int32) return f(Tag<int32_t>{});
  return f(Tag<int64_t>{});
}

int64_t bag_grain(const TbeBatch& b) {
  const int64_t nbags = static_cast<int64_t>(b.bag_feature.size());
  const int64_t per_bag = b.bounds[nbags] / std::max<int64_t>(nbags, 1) + 1;
  const int64_t width = b.dim.empty() ? 1 : *std::max_element(b.dim.begin(), b.dim.end());
  return std::max({int64_t(1), 65536 / std::max<int64_t>(per_bag * width, 1),
                   nbags / (4 * static_cast<int64_t>(get_num_threads()))});
}

template <typename T, typename O, typename I>
void forward(const Tensor& out, const TbeBatch& b) {
  const T* w = b.weights.data<T>();
  const I* idx = b.indices.data<I>();
  const float* psw = b.per_sample_weights.defined() ? b.per_sample_weights.data<float>() : nullptr;
  O* o = out.data<O>();
  const int64_t nbags = static_cast<int64_t>(b.bag_feature.size()), last = b.bounds[nbags];
  const int64_t max_dim = *std::max_element(b.dim.begin(), b.dim.end());
  if (b.pooling == 2) {  // NONE: output row i is row indices[i] (times its weight)
    const int64_t D = b.dim[0];
    std::fill(o + last * D, o + out.numel(), O(0.0f));  // indices after the last offset: in no bag
    parallel_for(0, nbags, bag_grain(b), [&](int64_t j0, int64_t j1) {
      for (int64_t j = j0; j < j1; ++j) {
        const int32_t f = b.bag_feature[j];
        const T* table = w + b.weights_offset[f];
        for (int64_t i = b.bounds[j]; i < b.bounds[j + 1]; ++i) {
          const T* row = table + checked_row(idx, i, b.rows[f]) * D;
          const float s = psw ? psw[i] : 1.0f;
          for (int64_t d = 0; d < D; ++d) o[i * D + d] = static_cast<O>(s * static_cast<float>(row[d]));
        }
      }
    });
    return;
  }
  parallel_for(0, nbags, bag_grain(b), [&](int64_t j0, int64_t j1) {
    std::vector<float> acc(static_cast<size_t>(max_dim));
    for (int64_t j = j0; j < j1; ++j) {
      const int32_t f = b.bag_feature[j];
      const int64_t D = b.dim[f], s = b.bounds[j], e = b.bounds[j + 1], rows = b.rows[f];
      const float scale = b.pooling == 1 && e - s > 1 ? 1.0f / static_cast<float>(e - s) : 1.0f;
      const T* table = w + b.weights_offset[f];
      O* orow = o + b.bag_out[j];
      if constexpr (std::is_same_v<T, float> && std::is_same_v<O, float>) {
        if (psw) {
          sum_bag<float, I, true>(table, D, rows, D, idx, psw, s, e, last, -1, scale, orow);
        } else {
          sum_bag<float, I, false>(table, D, rows, D, idx, psw, s, e, last, -1, scale, orow);
        }
      } else {
        std::fill(acc.begin(), acc.begin() + D, 0.0f);
        for (int64_t i = s; i < e; ++i) {
          if (i + kPrefetchAhead < last)
            prefetch_row(table, D, idx, i + kPrefetchAhead, rows, D * int64_t(sizeof(T)));
          const T* row = table + checked_bag_row(idx, i, rows) * D;
          const float c = psw ? psw[i] : 1.0f;
          for (int64_t d = 0; d < D; ++d) acc[d] += c * static_cast<float>(row[d]);
        }
        for (int64_t d = 0; d < D; ++d) orow[d] = static_cast<O>(acc[d] * scale);
      }
    }
  });
}

void tbe_forward_kernel(const Tensor& out, const TbeBatch& batch) {
  visit_table(batch.weights.dtype(), [&](auto t) {
    visit_table(out.dtype(), [&](auto o) {
      visit_rows(batch.indices.dtype(), [&](auto i) {
        forward<typename decltype(t)::type, typename decltype(o)::type, typename decltype(i)::type>(out,
                                                                                                    batch);
      });
    });
  });
}

// Each used position's bag scale (1/L for MEAN, times its per-sample weight) and where its output
// gradient row starts; positions after the last offset are in no bag and never read.
struct Positions {
  std::vector<Member> members;  // (global row, position), sorted by row
  std::vector<float> factor;
  std::vector<int64_t> grad_at;
  std::vector<int32_t> feature;
};

template <typename I>
Positions positions(const TbeBatch& b) {
  const I* idx = b.indices.data<I>();
  const float* psw = b.per_sample_weights.defined() ? b.per_sample_weights.data<float>() : nullptr;
  const int64_t nbags = static_cast<int64_t>(b.bag_feature.size()), n = b.bounds[nbags];
  Positions p;
  p.members.reserve(static_cast<size_t>(n));
  p.factor.resize(static_cast<size_t>(n));
  p.grad_at.resize(static_cast<size_t>(n));
  p.feature.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < nbags; ++j) {
    const int32_t f = b.bag_feature[j];
    const int64_t s = b.bounds[j], e = b.bounds[j + 1];
    const float scale = b.pooling == 1 && e - s > 1 ? 1.0f / static_cast<float>(e - s) : 1.0f;
    for (int64_t i = s; i < e; ++i) {
      p.members.push_back({b.row_offset[f] + checked_row(idx, i, b.rows[f]), i});
      p.factor[i] = scale * (psw ? psw[i] : 1.0f);
      p.grad_at[i] = b.pooling == 2 ? i * b.dim[f] : b.bag_out[j];
      p.feature[i] = f;
    }
  }
  sort_by_row(p.members, b.total_rows);
  return p;
}

// One row's update from its summed gradient g (Note [fused optimizer backward]); `row` is its
// index among all tables' rows, `at` its first element in the flat buffer.
template <typename T>
void apply(const TbeOptimizerStep& s, T* w, const float* g, int64_t D, int64_t row, int64_t at,
           T* grad_weights) {
  const float lr = static_cast<float>(s.learning_rate), eps = static_cast<float>(s.eps);
  const float wd = static_cast<float>(s.weight_decay);
  switch (s.kind) {
    case TbeOptimizer::None:
      for (int64_t d = 0; d < D; ++d) grad_weights[d] = static_cast<T>(g[d]);
      return;
    case TbeOptimizer::ExactSgd:
      for (int64_t d = 0; d < D; ++d) w[d] = static_cast<T>(static_cast<float>(w[d]) - lr * g[d]);
      return;
    case TbeOptimizer::ExactAdagrad: {
      float* m = s.momentum1.data<float>() + at;
      for (int64_t d = 0; d < D; ++d) {
        m[d] += g[d] * g[d];
        w[d] = static_cast<T>(static_cast<float>(w[d]) - lr * g[d] / (std::sqrt(m[d]) + eps));
      }
      return;
    }
    case TbeOptimizer::ExactRowwiseAdagrad: {
      // L2 decay joins the gradient in the row's mean square; the update folds it in as a correction
      const bool l2 = s.weight_decay_mode == 1;
      float sq = 0.0f;
      for (int64_t d = 0; d < D; ++d) {
        const float gd = l2 ? g[d] + wd * static_cast<float>(w[d]) : g[d];
        sq += gd * gd;
      }
      float& m = s.momentum1.data<float>()[row];
      m += D > 0 ? sq / static_cast<float>(D) : 0.0f;
      const float multiplier = lr / (std::sqrt(m) + eps);
      const float correction = l2 ? 1.0f - multiplier * wd : s.weight_decay_mode == 2 ? 1.0f - lr * wd : 1.0f;
      for (int64_t d = 0; d < D; ++d)
        w[d] = static_cast<T>(correction * static_cast<float>(w[d]) - multiplier * g[d]);
      return;
    }
    case TbeOptimizer::Adam: {
      float* m = s.momentum1.data<float>() + at;
      float* v = s.momentum2.data<float>() + at;
      const float b1 = static_cast<float>(s.beta1), b2 = static_cast<float>(s.beta2);
      const float c1 = 1.0f - static_cast<float>(std::pow(s.beta1, static_cast<double>(s.iter)));
      const float c2 = 1.0f - static_cast<float>(std::pow(s.beta2, static_cast<double>(s.iter)));
      for (int64_t d = 0; d < D; ++d) {
        m[d] = b1 * m[d] + (1.0f - b1) * g[d];
        v[d] = b2 * v[d] + (1.0f - b2) * g[d] * g[d];
        const float wv = static_cast<float>(w[d]);
        w[d] = static_cast<T>(wv - lr * ((m[d] / c1) / (std::sqrt(v[d] / c2) + eps) + wd * wv));
      }
      return;
    }
  }
}

template <typename T, typename I>
void backward(const Tensor& grad, const TbeBatch& b, const TbeOptimizerStep& step,
              const Tensor& grad_weights) {
  const Positions p = positions<I>(b);
  const std::vector<Member>& members = p.members;
  std::vector<size_t> seg{0};  // segment j: members [seg[j], seg[j + 1]), one table row each
  for (size_t j = 1; j < members.size(); ++j)
    if (members[j].row != members[j - 1].row) seg.push_back(j);
  seg.push_back(members.size());
  const int64_t nseg = members.empty() ? 0 : static_cast<int64_t>(seg.size()) - 1;
  const int64_t max_dim = *std::max_element(b.dim.begin(), b.dim.end());
  // Few, long chunks (about four per thread): each chunk's first segments were prefetched by nobody.
  const int64_t per_seg = static_cast<int64_t>(members.size()) / std::max<int64_t>(nseg, 1) + 1;
  const int64_t grain = std::max({int64_t(1), 16384 / std::max<int64_t>(per_seg * max_dim, 1),
                                  nseg / (4 * static_cast<int64_t>(get_num_threads()))});
  const float* g = grad.data<float>();
  T* w = b.weights.data<T>();
  T* gw = grad_weights.numel() > 0 ? grad_weights.data<T>() : nullptr;
  // The rows updated are scattered over the tables: each segment asks for the row (and its
  // state) kPrefetchAhead segments on, as the forward does, so the updates overlap their misses.
  float* m1 = step.momentum1.defined() ? step.momentum1.data<float>() : nullptr;
  float* m2 = step.momentum2.defined() ? step.momentum2.data<float>() : nullptr;
  const bool rowwise = step.kind == TbeOptimizer::ExactRowwiseAdagrad;
  auto prefetch_segment = [&](int64_t j) {
    const int32_t f = p.feature[members[seg[j]].pos];
    const int64_t row = members[seg[j]].row, at = b.weights_offset[f] + (row - b.row_offset[f]) * b.dim[f];
    const int64_t bytes = b.dim[f] * static_cast<int64_t>(sizeof(T));
    for (int64_t o = 0; o < bytes; o += 64)
      __builtin_prefetch(reinterpret_cast<const char*>(w + at) + o, 1, 3);
    for (size_t m = seg[j]; m < seg[j + 1]; ++m) {  // the output gradient rows it sums
      const char* gr = reinterpret_cast<const char*>(g + p.grad_at[members[m].pos]);
      for (int64_t o = 0; o < b.dim[f] * 4; o += 64) __builtin_prefetch(gr + o, 0, 3);
    }
    if (m1 && rowwise) __builtin_prefetch(m1 + row, 1, 3);
    for (float* m : {rowwise ? nullptr : m1, m2}) {
      if (!m) continue;
      for (int64_t o = 0; o < b.dim[f] * 4; o += 64)
        __builtin_prefetch(reinterpret_cast<const char*>(m + at) + o, 1, 3);
    }
  };
  parallel_for(0, nseg, grain, [&](int64_t j0, int64_t j1) {
    std::vector<float> acc(static_cast<size_t>(max_dim));
    for (int64_t j = j0; j < std::min(j1, j0 + kPrefetchAhead); ++j) prefetch_segment(j);
    for (int64_t j = j0; j < j1; ++j) {
      if (j + kPrefetchAhead < j1) prefetch_segment(j + kPrefetchAhead);
      const int32_t f = p.feature[members[seg[j]].pos];
      const int64_t D = b.dim[f];
      std::fill(acc.begin(), acc.begin() + D, 0.0f);
      for (size_t m = seg[j]; m < seg[j + 1]; ++m) {
        const int64_t pos = members[m].pos;
        axpy_row(acc.data(), g + p.grad_at[pos], p.factor[pos], D);
      }
      const int64_t row = members[seg[j]].row, at = b.weights_offset[f] + (row - b.row_offset[f]) * D;
      apply(step, w + at, acc.data(), D, row, at, gw ? gw + at : nullptr);
    }
  });
}

void tbe_backward_kernel(const Tensor& grad, const TbeBatch& batch, const TbeOptimizerStep& step,
                         const Tensor& grad_weights) {
  visit_table(batch.weights.dtype(), [&](auto t) {
    visit_rows(batch.indices.dtype(), [&](auto i) {
      backward<typename decltype(t)::type, typename decltype(i)::type>(grad, batch, step, grad_weights);
    });
  });
}

template <typename T, typename I>
void per_sample_weights_backward(const Tensor& grad_psw, const Tensor& grad, const TbeBatch& b) {
  const T* w = b.weights.data<T>();
  const I* idx = b.indices.data<I>();
  const float* g = grad.data<float>();
  float* out = grad_psw.data<float>();
  const int64_t nbags = static_cast<int64_t>(b.bag_feature.size());
  parallel_for(0, nbags, bag_grain(b), [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const int32_t f = b.bag_feature[j];
      const int64_t D = b.dim[f], s = b.bounds[j], e = b.bounds[j + 1];
      const float scale = b.pooling == 1 && e - s > 1 ? 1.0f / static_cast<float>(e - s) : 1.0f;
      for (int64_t i = s; i < e; ++i) {
        const T* row = w + b.weights_offset[f] + checked_row(idx, i, b.rows[f]) * D;
        const float* gr = g + (b.pooling == 2 ? i * D : b.bag_out[j]);
        float dot = 0.0f;
        for (int64_t d = 0; d < D; ++d) dot += gr[d] * static_cast<float>(row[d]);
        out[i] = dot * scale;
      }
    }
  });
}

void tbe_per_sample_weights_backward_kernel(const Tensor& grad_psw, const Tensor& grad,
                                            const TbeBatch& batch) {
  visit_table(batch.weights.dtype(), [&](auto t) {
    visit_rows(batch.indices.dtype(), [&](auto i) {
      per_sample_weights_backward<typename decltype(t)::type, typename decltype(i)::type>(grad_psw, grad,
                                                                                          batch);
    });
  });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(tbe_forward_stub, &tbe_forward_kernel);
EMBER_REGISTER_CPU_KERNEL(tbe_backward_stub, &tbe_backward_kernel);
EMBER_REGISTER_CPU_KERNEL(tbe_per_sample_weights_backward_stub, &tbe_per_sample_weights_backward_kernel);

}  // namespace ember::EMBER_CPU_NS
