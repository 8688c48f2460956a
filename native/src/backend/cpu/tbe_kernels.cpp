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
          sum_bag<float, I, true, true>(table, D, rows, D, idx, psw, s, e, last, -1, scale, orow);
        } else {
          sum_bag<float, I, false, true>(table, D, rows, D, idx, psw, s, e, last, -1, scale, orow);
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

// A bag's pooling scale: 1/L for MEAN (a bag of one or none keeps 1), else 1.
inline float bag_scale(const TbeBatch& b, int64_t j) {
  const int64_t len = b.bounds[j + 1] - b.bounds[j];
  return b.pooling == 1 && len > 1 ? 1.0f / static_cast<float>(len) : 1.0f;
}

// Note [rows seen once]: in a large table almost every row a batch touches occurs once, and such
// a row needs no summing: its gradient is its bag's output gradient row times the position's
// factor. The backward updates those rows in bag order, straight from the bag's gradient row (in
// L1 for the whole bag) with no gradient buffer in between: stores to a buffer queue behind the
// row's own stores, which wait on memory, and stall the loop (measured 2x slower). Only the rows
// seen more than once are summed first, by sorted segments (Note [sorted segment sums]). The two
// passes own disjoint rows, so neither races, and each row's result is the one summing first gives.
//
// once[i] says position i's row occurs nowhere else in the batch. It is found table by table
// (features sharing a table together), with two bitmaps over the table's rows (seen, seen twice;
// their words interleaved, so a row's two bits share a cache line) when they are small beside the
// table's positions, else by sorting those positions by row. One table's bitmaps (256 KB for a
// million rows) stay in L2 where all tables' would not: the row-wise Adagrad step on
// 8 x 1M x 128 spent 1.9 ms here with one bitmap over all tables. Every index is checked here,
// before any row is updated. The repeated positions are collected on the way, in position order
// within each table, each with its bag (so no bag is searched for afterwards).
// With SGD and row-wise Adagrad on float tables, a bag's rows are updated from its gradient row in
// vectors (update_row), and without per-sample weights or L2 decay a bag's mean square is summed
// once for all its members. Together: the row-wise Adagrad step (forward and backward) on
// 8 x 1M x 128, batch 2048, one thread, 33.5 -> 25.2 ms, FBGEMM's 32-33 ms (Zen 5 EPYC).
struct RowsSeen {
  std::vector<uint8_t> once;          // per position: its row occurs nowhere else in the batch
  std::vector<Member> repeated;       // the other positions: {row among all tables' rows, position}
  std::vector<int64_t> repeated_bag;  // and the bag each is in
};

template <typename I>
RowsSeen rows_seen_once(const TbeBatch& b) {
  const I* idx = b.indices.data<I>();
  const int64_t nbags = static_cast<int64_t>(b.bag_feature.size()), n = b.bounds[nbags];
  RowsSeen seen;
  seen.once.assign(static_cast<size_t>(n), 0);
  // Runs of consecutive bags of one feature, grouped by the table they read (its first row).
  struct Run {
    int64_t first_row, bag0, bag1;
  };
  std::vector<Run> runs;
  for (int64_t j = 0; j < nbags; ++j) {
    const int32_t f = b.bag_feature[j];
    if (runs.empty() || b.bag_feature[runs.back().bag0] != f) runs.push_back({b.row_offset[f], j, j});
    runs.back().bag1 = j + 1;
  }
  std::stable_sort(runs.begin(), runs.end(),
                   [](const Run& x, const Run& y) { return x.first_row < y.first_row; });
  std::vector<uint64_t> bits;
  std::vector<Member> sorted;
  for (size_t t0 = 0, t1; t0 < runs.size(); t0 = t1) {
    t1 = t0;
    int64_t positions = 0;
    while (t1 < runs.size() && runs[t1].first_row == runs[t0].first_row) {
      positions += b.bounds[runs[t1].bag1] - b.bounds[runs[t1].bag0];
      ++t1;
    }
    const int32_t f0 = b.bag_feature[runs[t0].bag0];
    const int64_t rows = b.rows[f0], first_row = runs[t0].first_row;
    // visit(i, j, r): position i of bag j, its row r within the table
    auto for_each_position = [&](auto&& visit) {
      for (size_t t = t0; t < t1; ++t)
        for (int64_t j = runs[t].bag0; j < runs[t].bag1; ++j)
          for (int64_t i = b.bounds[j]; i < b.bounds[j + 1]; ++i) visit(i, j, checked_row(idx, i, rows));
    };
    auto collect = [&](int64_t i, int64_t j, int64_t r) {
      seen.repeated.push_back({first_row + r, i});
      seen.repeated_bag.push_back(j);
    };
    if (rows <= 64 * positions + (int64_t(1) << 20)) {
      // word pairs (seen, seen twice) side by side: a position's bits share one cache line
      bits.assign(2 * static_cast<size_t>(rows / 64 + 1), 0);
      for_each_position([&](int64_t, int64_t, int64_t r) {
        const uint64_t bit = uint64_t(1) << (r & 63);
        uint64_t* pair = bits.data() + 2 * static_cast<size_t>(r >> 6);
        if (pair[0] & bit) pair[1] |= bit;
        pair[0] |= bit;
      });
      for_each_position([&](int64_t i, int64_t j, int64_t r) {
        const bool alone = !((bits[2 * static_cast<size_t>(r >> 6) + 1] >> (r & 63)) & 1);
        seen.once[static_cast<size_t>(i)] = alone;
        if (!alone) collect(i, j, r);
      });
      continue;
    }
    sorted.clear();
    for_each_position([&](int64_t i, int64_t, int64_t r) { sorted.push_back({r, i}); });
    sort_by_row(sorted, rows);
    for (size_t m = 0; m < sorted.size(); ++m) {
      const bool alone = (m == 0 || sorted[m - 1].row != sorted[m].row) &&
                         (m + 1 == sorted.size() || sorted[m + 1].row != sorted[m].row);
      if (alone) seen.once[static_cast<size_t>(sorted[m].pos)] = 1;
    }
    for_each_position([&](int64_t i, int64_t j, int64_t r) {
      if (!seen.once[static_cast<size_t>(i)]) collect(i, j, r);
    });
  }
  return seen;
}

// Row-wise Adagrad in pieces the update loops share (Note [rows seen once]): the row's mean square
// joins its state, giving the multiplier of its gradient; then the row is updated. L2 decay joins
// the gradient in the mean square, and the update folds it in as a correction.
//
// Note [row sum of squares]: the mean square is summed in kSquareParts interleaved partial sums
// (element d into part d % kSquareParts), added up in order at the end. One running sum is a
// chain of dependent adds, about 4 cycles per element, that the compiler may not reorder; the
// parts are independent lanes it keeps in vector registers (the row-wise Adagrad training step on
// 8 x 1M x 128, batch 2048, went from 48 to 38 ms). Their number is fixed, not the vector width,
// so every ISA gives one result.
constexpr int kSquareParts = 16;

template <bool kL2, typename T, typename G>
inline float row_sum_of_squares(const T* w, G&& grad, int64_t D, float wd) {
  float part[kSquareParts] = {};
  auto add = [&](int64_t d, int u) EMBER_ALWAYS_INLINE {
    const float gd = kL2 ? grad(d) + wd * static_cast<float>(w[d]) : grad(d);
    part[u] += gd * gd;
  };
  int64_t d = 0;
  for (; d + kSquareParts <= D; d += kSquareParts) {
#pragma GCC unroll 16
    for (int u = 0; u < kSquareParts; ++u) add(d + u, u);
  }
  for (int u = 0; d + u < D; ++u) add(d + u, u);
  float sq = 0.0f;
  for (int u = 0; u < kSquareParts; ++u) sq += part[u];
  return sq;
}

// The row's mean square of its gradient (with L2 decay, of gradient + decay * weight).
template <typename T, typename G>
inline float rowwise_sum_of_squares(const TbeOptimizerStep& s, const T* w, G&& grad, int64_t D) {
  const float wd = static_cast<float>(s.weight_decay);
  return s.weight_decay_mode == 1 ? row_sum_of_squares<true>(w, grad, D, wd)
                                  : row_sum_of_squares<false>(w, grad, D, wd);
}
// The row's state m takes the mean square; the answer is the multiplier of the row's gradient.
inline float rowwise_adagrad_state(const TbeOptimizerStep& s, float sq, int64_t D, float& m) {
  m += D > 0 ? sq / static_cast<float>(D) : 0.0f;
  return static_cast<float>(s.learning_rate) / (std::sqrt(m) + static_cast<float>(s.eps));
}
// What the row's weights are multiplied by before the gradient step (weight decay folded in).
inline float rowwise_adagrad_keep(const TbeOptimizerStep& s, float multiplier) {
  const float wd = static_cast<float>(s.weight_decay);
  return s.weight_decay_mode == 1   ? 1.0f - multiplier * wd
         : s.weight_decay_mode == 2 ? 1.0f - static_cast<float>(s.learning_rate) * wd
                                    : 1.0f;
}
template <typename T, typename G>
inline void rowwise_adagrad_update(const TbeOptimizerStep& s, T* w, G&& grad, int64_t D, float multiplier) {
  const float keep = rowwise_adagrad_keep(s, multiplier);
  for (int64_t d = 0; d < D; ++d)
    w[d] = static_cast<T>(keep * static_cast<float>(w[d]) - multiplier * grad(d));
}

// w[d] = keep * w[d] - step * g[d] in this build's vectors: a float row's SGD or row-wise Adagrad
// update from its bag's gradient row g, the position's factor folded into step.
inline void update_row(float* w, const float* g, float keep, float step, int64_t D) {
  constexpr int64_t L = kLanes<float>;
  const Vec<float> k = splat(keep), st = splat(step);
  int64_t d = 0;
  for (; d + L <= D; d += L) store(w + d, k * load(w + d) - st * load(g + d));
  for (; d < D; ++d) w[d] = keep * w[d] - step * g[d];
}

// One row's update from its summed gradient, element d read as grad(d) (Note [fused optimizer
// backward]); `row` is its index among all tables' rows, `at` its first element in the flat buffer.
template <typename T, typename G>
inline void apply(const TbeOptimizerStep& s, T* w, G&& grad, int64_t D, int64_t row, int64_t at,
                  T* grad_weights) {
  const float lr = static_cast<float>(s.learning_rate), eps = static_cast<float>(s.eps);
  const float wd = static_cast<float>(s.weight_decay);
  switch (s.kind) {
    case TbeOptimizer::None:
      for (int64_t d = 0; d < D; ++d) grad_weights[d] = static_cast<T>(grad(d));
      return;
    case TbeOptimizer::ExactSgd:
      for (int64_t d = 0; d < D; ++d) w[d] = static_cast<T>(static_cast<float>(w[d]) - lr * grad(d));
      return;
    case TbeOptimizer::ExactAdagrad: {
      float* m = s.momentum1.data<float>() + at;
      for (int64_t d = 0; d < D; ++d) {
        const float g = grad(d);
        m[d] += g * g;
        w[d] = static_cast<T>(static_cast<float>(w[d]) - lr * g / (std::sqrt(m[d]) + eps));
      }
      return;
    }
    case TbeOptimizer::ExactRowwiseAdagrad:
      return rowwise_adagrad_update(
          s, w, grad, D,
          rowwise_adagrad_state(s, rowwise_sum_of_squares(s, w, grad, D), D, s.momentum1.data<float>()[row]));
    case TbeOptimizer::Adam: {
      float* m = s.momentum1.data<float>() + at;
      float* v = s.momentum2.data<float>() + at;
      const float b1 = static_cast<float>(s.beta1), b2 = static_cast<float>(s.beta2);
      const float c1 = 1.0f - static_cast<float>(std::pow(s.beta1, static_cast<double>(s.iter)));
      const float c2 = 1.0f - static_cast<float>(std::pow(s.beta2, static_cast<double>(s.iter)));
      for (int64_t d = 0; d < D; ++d) {
        const float g = grad(d);
        m[d] = b1 * m[d] + (1.0f - b1) * g;
        v[d] = b2 * v[d] + (1.0f - b2) * g * g;
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
  RowsSeen seen = rows_seen_once<I>(b);
  const std::vector<uint8_t>& once = seen.once;
  const I* idx = b.indices.data<I>();
  const float* psw = b.per_sample_weights.defined() ? b.per_sample_weights.data<float>() : nullptr;
  const float* g = grad.data<float>();
  T* w = b.weights.data<T>();
  T* gw = grad_weights.numel() > 0 ? grad_weights.data<T>() : nullptr;
  float* m1 = step.momentum1.defined() ? step.momentum1.data<float>() : nullptr;
  float* m2 = step.momentum2.defined() ? step.momentum2.data<float>() : nullptr;
  const bool rowwise = step.kind == TbeOptimizer::ExactRowwiseAdagrad;
  const int64_t nbags = static_cast<int64_t>(b.bag_feature.size());
  // Rows updated are scattered over the tables: each is asked for (with its state) kPrefetchAhead
  // updates before its own, as the forward does, so the updates overlap their misses.
  auto prefetch_update = [&](int64_t at, int64_t row, int64_t D) EMBER_ALWAYS_INLINE {
    prefetch_lines<true>(gw ? gw + at : w + at, D * static_cast<int64_t>(sizeof(T)));
    if (m1) prefetch_lines<true>(rowwise ? m1 + row : m1 + at, rowwise ? 4 : D * 4);
    if (m2) prefetch_lines<true>(m2 + at, D * 4);
  };
  auto grad_row = [&](int64_t j, int64_t i) {
    return g + (b.pooling == 2 ? i * b.dim[b.bag_feature[j]] : b.bag_out[j]);
  };

  // Rows seen once (Note [rows seen once]), in bag order. A block of bags first lists its updates
  // (the row's first element, its index among all rows, its gradient row and factor), then a loop
  // over the list updates each with the update kPrefetchAhead on asked for. Walking the bags in
  // that loop instead (finding each position's bag and row, skipping repeated rows) kept fewer
  // misses in flight: the EXACT_SGD update pass on 8 x 1M x 128, batch 2048, took 16-19 ms that
  // way and 11-14 ms this way (Zen 5 EPYC, one thread, runs spread over an hour).
  struct Update {
    int64_t at, row;
    const float* grad;
    float factor;
    int32_t dim;
  };
  const bool float_rows = std::is_same_v<T, float> && b.pooling != 2;
  // Without per-sample weights or L2 decay (which adds each row's weights), the members of a
  // pooled bag share one mean square: their bag's gradient row's, summed once per bag.
  const bool shared_sq = rowwise && b.pooling != 2 && !psw && step.weight_decay_mode != 1;
  parallel_for(0, nbags, bag_grain(b), [&](int64_t j0, int64_t j1) {
    std::vector<Update> list;
    constexpr int64_t kBlockBags = 64;  // a list of about 1,300 updates, in L1/L2
    for (int64_t jb = j0; jb < j1; jb += kBlockBags) {
      list.clear();
      list.reserve(static_cast<size_t>(b.bounds[std::min(j1, jb + kBlockBags)] - b.bounds[jb]));
      for (int64_t j = jb; j < std::min(j1, jb + kBlockBags); ++j) {
        const int32_t f = b.bag_feature[j];
        const float scale = bag_scale(b, j);
        for (int64_t i = b.bounds[j]; i < b.bounds[j + 1]; ++i) {
          if (!once[static_cast<size_t>(i)]) continue;
          const int64_t k = static_cast<int64_t>(idx[i]);
          list.push_back({b.weights_offset[f] + k * b.dim[f], b.row_offset[f] + k, grad_row(j, i),
                          psw ? scale * psw[i] : scale, static_cast<int32_t>(b.dim[f])});
        }
      }
      const size_t n = list.size();
      auto prefetch = [&](size_t u) EMBER_ALWAYS_INLINE {
        const Update& x = list[u];
        prefetch_update(x.at, x.row, x.dim);
        if (u == 0 || x.grad != list[u - 1].grad) prefetch_lines(x.grad, x.dim * 4);  // a bag's first
      };
      for (size_t u = 0; u < std::min<size_t>(n, kPrefetchAhead); ++u) prefetch(u);
      // One loop per kind of update, each as plain as the update allows.
      auto each = [&](auto&& update) EMBER_ALWAYS_INLINE {
        for (size_t u = 0; u < n; ++u) {
          if (u + kPrefetchAhead < n) prefetch(u + kPrefetchAhead);
          update(list[u]);
        }
      };
      if constexpr (std::is_same_v<T, float>) {
        if (float_rows && step.kind == TbeOptimizer::ExactSgd) {
          const float lr = static_cast<float>(step.learning_rate);
          each([&](const Update& x) { update_row(w + x.at, x.grad, 1.0f, lr * x.factor, x.dim); });
          continue;
        }
        if (float_rows && rowwise) {
          const float* sq_of = nullptr;  // the gradient row bag_sq was summed from
          float bag_sq = 0.0f;
          each([&](const Update& x) {
            auto grad_of = [&x](int64_t d) { return x.factor * x.grad[d]; };
            if (shared_sq && x.grad != sq_of) {
              sq_of = x.grad;
              bag_sq = row_sum_of_squares<false>(w, grad_of, x.dim, 0.0f);
            }
            const float sq = shared_sq ? bag_sq : rowwise_sum_of_squares(step, w + x.at, grad_of, x.dim);
            const float m = rowwise_adagrad_state(step, sq, x.dim, m1[x.row]);
            update_row(w + x.at, x.grad, rowwise_adagrad_keep(step, m), m * x.factor, x.dim);
          });
          continue;
        }
      }
      each([&](const Update& x) {
        apply(
            step, w + x.at, [&x](int64_t d) { return x.factor * x.grad[d]; }, x.dim, x.row, x.at,
            gw ? gw + x.at : nullptr);
      });
    }
  });

  // Rows seen more than once: their positions sorted by row, each row's gradient summed, then applied.
  // Sorting keeps the positions' order within a row, so each row sums in position order.
  std::vector<Member>& members = seen.repeated;
  if (members.empty()) return;
  std::vector<int64_t> member_pos(members.size());
  for (size_t m = 0; m < members.size(); ++m) {  // sort {row, collection index}, then look the rest up
    member_pos[m] = members[m].pos;
    members[m].pos = static_cast<int64_t>(m);
  }
  sort_by_row(members, b.total_rows);
  std::vector<int64_t> bag_of(members.size());  // each sorted member's bag
  for (size_t m = 0; m < members.size(); ++m) {
    const size_t k = static_cast<size_t>(members[m].pos);
    bag_of[m] = seen.repeated_bag[k];
    members[m].pos = member_pos[k];
  }
  std::vector<size_t> seg{0};  // segment j: members [seg[j], seg[j + 1]), one table row each
  for (size_t m = 1; m < members.size(); ++m)
    if (members[m].row != members[m - 1].row) seg.push_back(m);
  seg.push_back(members.size());
  const int64_t nseg = static_cast<int64_t>(seg.size()) - 1;
  const int64_t max_dim = *std::max_element(b.dim.begin(), b.dim.end());
  // Few, long chunks (about four per thread): each chunk's first segments were prefetched by nobody.
  const int64_t per_seg = static_cast<int64_t>(members.size()) / nseg + 1;
  const int64_t grain = std::max({int64_t(1), 16384 / std::max<int64_t>(per_seg * max_dim, 1),
                                  nseg / (4 * static_cast<int64_t>(get_num_threads()))});
  auto prefetch_segment = [&](int64_t s) EMBER_ALWAYS_INLINE {
    const int32_t f = b.bag_feature[bag_of[seg[s]]];
    const int64_t row = members[seg[s]].row;
    prefetch_update(b.weights_offset[f] + (row - b.row_offset[f]) * b.dim[f], row, b.dim[f]);
    for (size_t m = seg[s]; m < seg[s + 1]; ++m)  // the output gradient rows it sums
      prefetch_lines(grad_row(bag_of[m], members[m].pos), b.dim[f] * 4);
  };
  parallel_for(0, nseg, grain, [&](int64_t s0, int64_t s1) {
    std::vector<float> acc(static_cast<size_t>(max_dim));
    for (int64_t s = s0; s < std::min(s1, s0 + kPrefetchAhead); ++s) prefetch_segment(s);
    for (int64_t s = s0; s < s1; ++s) {
      if (s + kPrefetchAhead < s1) prefetch_segment(s + kPrefetchAhead);
      const int32_t f = b.bag_feature[bag_of[seg[s]]];
      const int64_t D = b.dim[f];
      std::fill(acc.begin(), acc.begin() + D, 0.0f);
      for (size_t m = seg[s]; m < seg[s + 1]; ++m) {
        const int64_t j = bag_of[m], pos = members[m].pos;
        axpy_row(acc.data(), grad_row(j, pos), psw ? bag_scale(b, j) * psw[pos] : bag_scale(b, j), D);
      }
      const int64_t row = members[seg[s]].row, at = b.weights_offset[f] + (row - b.row_offset[f]) * D;
      apply(
          step, w + at, [sum = acc.data()](int64_t d) { return sum[d]; }, D, row, at, gw ? gw + at : nullptr);
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
