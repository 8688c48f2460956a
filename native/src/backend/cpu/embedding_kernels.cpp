// CPU embedding kernels (interfaces in src/ops/kernels.h; the bag layout is Note [embedding
// bags] in src/ops/embedding/embedding.cpp).
//
// Forward: one pass per bag, the bag's rows summed into its output row with this build's vectors,
// bags split over parallel_for. Rows are requested kPrefetchAhead lookups before they are read:
// a large table is read at random, and the lookups are bound by memory latency, not arithmetic.
// Backward: Note [sorted segment sums].
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "embedding_rows.h"
#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"
#include "vec.h"

namespace ember::EMBER_CPU_NS {
namespace {

// Plain lookup (bags of one): a row copy per index, of any dtype.
template <typename I>
void gather_rows(const Tensor& out, const Tensor& table, const Tensor& indices) {
  const int64_t rows = table.size(0), n = indices.numel(), width = out.size(1);
  const int64_t esize = table.element_size(), bytes = width * esize, stride = table.stride(0) * esize;
  const char* w = static_cast<const char*>(table.data_ptr());
  char* o = static_cast<char*>(out.data_ptr());
  const I* idx = indices.data<I>();
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(bytes, 1));
  parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (i + kPrefetchAhead < end) prefetch_row(w, stride, idx, i + kPrefetchAhead, rows, bytes);
      const int64_t k = checked_row(idx, i, rows);
      if (bytes > 0) std::memcpy(o + i * bytes, w + k * stride, static_cast<size_t>(bytes));
    }
  });
}

template <typename T, typename I>
void bag_forward(const Tensor& out, const Tensor& max_indices, const Tensor& table,
                 const EmbeddingBags& bags) {
  using A = acc_t<T>;
  const int64_t rows = table.size(0), width = table.size(1), stride = table.stride(0);
  const int64_t nbags = out.size(0), pad = bags.padding_idx;
  const int64_t row_bytes = width * static_cast<int64_t>(sizeof(T));
  const T* w = table.data<T>();
  const I* idx = bags.indices.data<I>();
  const int64_t* bound = bags.bounds.data<int64_t>();
  const T* psw = bags.weights.defined() ? bags.weights.data<T>() : nullptr;
  T* o = out.data<T>();
  const bool max = bags.mode == EmbeddingMode::Max, mean = bags.mode == EmbeddingMode::Mean;
  int64_t* mi = max ? max_indices.data<int64_t>() : nullptr;
  const int64_t per_bag = (bound[nbags] - bound[0]) / std::max<int64_t>(nbags, 1) + 1;
  // Few, long chunks (about four per thread): the first lookups of a chunk were prefetched by
  // nobody. Each bag's sum is independent of the chunking, so results stay thread-count-free.
  const int64_t grain = std::max({int64_t(1), 65536 / std::max<int64_t>(per_bag * width, 1),
                                  nbags / (4 * static_cast<int64_t>(get_num_threads()))});
  const int64_t last = bound[nbags];  // prefetch no further than the bags read
  // every member is checked once here, so the sum/mean bags read without a test per member
  const int64_t bad = first_bad_index(idx, bound[0], last, rows);
  if (bad >= 0) bag_out_of_range(bad, static_cast<int64_t>(idx[bad]), rows);
  parallel_for(0, nbags, grain, [&](int64_t b0, int64_t b1) {
    std::vector<A> buffer(std::is_same_v<A, T> ? 0 : static_cast<size_t>(width));
    for (int64_t b = b0; b < b1; ++b) {
      T* orow = o + b * width;
      const int64_t s = bound[b], e = bound[b + 1];
      if constexpr (std::is_same_v<A, T>) {
        if (!max) {
          int64_t count = e - s;
          if (mean && pad >= 0) {
            for (int64_t i = s; i < e; ++i) count -= static_cast<int64_t>(idx[i]) == pad;
          }
          const T scale = mean && count > 1 ? T(1) / static_cast<T>(count) : T(1);
          if (psw) {
            sum_bag<T, I, true, false>(w, stride, rows, width, idx, psw, s, e, last, pad, scale, orow);
          } else {
            sum_bag<T, I, false, false>(w, stride, rows, width, idx, psw, s, e, last, pad, scale, orow);
          }
          continue;
        }
      }
      // max bags and 16-bit tables: the bag's rows (widened) reduce into a float accumulator row
      A* acc = std::is_same_v<A, T> ? reinterpret_cast<A*>(orow) : buffer.data();
      std::fill(acc, acc + width, A(0));
      int64_t count = 0;
      for (int64_t i = s; i < e; ++i) {
        if (i + kPrefetchAhead < last) prefetch_row(w, stride, idx, i + kPrefetchAhead, rows, row_bytes);
        const int64_t k = checked_bag_row(idx, i, rows);
        if (k == pad) continue;
        const T* row = w + k * stride;
        if (max) {
          int64_t* m = mi + b * width;
          for (int64_t d = 0; d < width; ++d) {
            const A v = static_cast<A>(row[d]);
            // PyTorch's rule: the first member sets the maximum, a later one replaces it only
            // when strictly greater (so a NaN after the first member never wins)
            if (count == 0 || v > acc[d]) {
              acc[d] = v;
              m[d] = k;
            }
          }
        } else {
          add_row_any(acc, row, psw ? static_cast<A>(psw[i]) : A(1), psw != nullptr, width);
        }
        ++count;
      }
      if (max && count == 0) std::fill(mi + b * width, mi + (b + 1) * width, int64_t(-1));
      if (mean && count > 1) scale_row(acc, A(1) / static_cast<A>(count), width);
      if constexpr (!std::is_same_v<A, T>) {
        for (int64_t d = 0; d < width; ++d) orow[d] = static_cast<T>(acc[d]);
      }
    }
  });
}

template <typename F>
void visit_index(DType d, F&& f) {
  if (d == DType::Int32) return f(Tag<int32_t>{});
  if (d == DType::Int64) return f(Tag<int64_t>{});
  throw TypeError(std::string("[embedding] expected int32 or int64 indices, but got ") + dtype_name(d));
}

void embedding_bag_kernel(const Tensor& out, const Tensor& max_indices, const Tensor& table,
                          const EmbeddingBags& bags) {
  visit_index(bags.indices.dtype(), [&](auto itag) {
    using I = typename decltype(itag)::type;
    if (!bags.bounds.defined()) return gather_rows<I>(out, table, bags.indices);
    visit<kAllFloat>(table.dtype(), "embedding_bag", [&](auto tag) {
      bag_forward<typename decltype(tag)::type, I>(out, max_indices, table, bags);
    });
  });
}

// Note [sorted segment sums]: the table's gradient is a scatter-add of gradient rows into table
// rows, which races when two bags share a row. Instead every (row, position) pair of the bags'
// members is sorted by row (a stable LSD radix sort, so a row's positions stay in order and the
// sums are the same for every thread count), each run of equal rows (a segment) sums its
// positions' gradient rows in a local accumulator, and writes its table row once. Segments own
// distinct rows, so they run in parallel without atomics, and nothing of size [N, D] is built.
template <typename T, typename I>
void backward_sum(const Tensor& grad_table, const Tensor& grad, const EmbeddingBags& bags,
                  bool scale_by_freq) {
  using A = acc_t<T>;
  const int64_t rows = grad_table.size(0), width = grad_table.size(1);
  const I* idx = bags.indices.data<I>();
  const int64_t n = bags.indices.numel();
  const bool one_each = !bags.bounds.defined();
  const int64_t nbags = one_each ? n : bags.bounds.numel() - 1;
  const int64_t* bound = one_each ? nullptr : bags.bounds.data<int64_t>();
  const T* psw = bags.weights.defined() ? bags.weights.data<T>() : nullptr;
  const T* g = grad.data<T>();
  T* gw = grad_table.data<T>();
  // every member of every bag (padding left out), its bag, and its factor from the forward
  std::vector<Member> members;
  std::vector<int64_t> bag_of(static_cast<size_t>(n), 0);
  std::vector<A> factor(static_cast<size_t>(n), A(1));
  members.reserve(static_cast<size_t>(n));
  for (int64_t b = 0; b < nbags; ++b) {
    const int64_t s = one_each ? b : bound[b], e = one_each ? b + 1 : bound[b + 1];
    const size_t first = members.size();
    for (int64_t i = s; i < e; ++i) {
      const int64_t k = checked_row(idx, i, rows);
      if (k == bags.padding_idx) continue;
      members.push_back({k, i});
      bag_of[i] = b;
      if (psw) factor[i] = static_cast<A>(psw[i]);
    }
    const size_t count = members.size() - first;
    if (bags.mode == EmbeddingMode::Mean && count > 1) {
      for (size_t j = first; j < members.size(); ++j) factor[members[j].pos] /= static_cast<A>(count);
    }
  }
  sort_by_row(members, rows);
  std::vector<size_t> seg{0};  // segment j is members [seg[j], seg[j + 1])
  for (size_t j = 1; j < members.size(); ++j)
    if (members[j].row != members[j - 1].row) seg.push_back(j);
  seg.push_back(members.size());
  const int64_t nseg = members.empty() ? 0 : static_cast<int64_t>(seg.size()) - 1;
  const int64_t per_seg = static_cast<int64_t>(members.size()) / std::max<int64_t>(nseg, 1) + 1;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(per_seg * width, 1));
  parallel_for(0, nseg, grain, [&](int64_t j0, int64_t j1) {
    std::vector<A> acc(static_cast<size_t>(width));
    std::vector<A> widened(std::is_same_v<A, T> ? 0 : static_cast<size_t>(width));
    for (int64_t j = j0; j < j1; ++j) {
      std::fill(acc.begin(), acc.end(), A(0));
      for (size_t m = seg[j]; m < seg[j + 1]; ++m) {
        const int64_t pos = members[m].pos;
        const T* grow = g + bag_of[pos] * width;
        if constexpr (std::is_same_v<A, T>) {
          axpy_row(acc.data(), grow, factor[pos], width);
        } else {
          for (int64_t d = 0; d < width; ++d) widened[d] = static_cast<A>(grow[d]);
          axpy_row(acc.data(), widened.data(), factor[pos], width);
        }
      }
      if (scale_by_freq) scale_row(acc.data(), A(1) / static_cast<A>(seg[j + 1] - seg[j]), width);
      T* out = gw + members[seg[j]].row * width;
      for (int64_t d = 0; d < width; ++d) out[d] = static_cast<T>(acc[d]);
    }
  });
}

// Max: grad[b, d] goes to row max_indices[b, d]. Threads own column blocks, so two bags whose
// maxima share a row never write the same element at once, and each element sums in bag order.
template <typename T>
void backward_max(const Tensor& grad_table, const Tensor& grad, const Tensor& max_indices) {
  using A = acc_t<T>;
  const int64_t rows = grad_table.size(0), width = grad_table.size(1), nbags = grad.size(0);
  const int64_t* mi = max_indices.data<int64_t>();
  const T* g = grad.data<T>();
  T* gw = grad_table.data<T>();
  constexpr int64_t kBlock = 16;
  const int64_t blocks = (width + kBlock - 1) / kBlock;
  parallel_for(0, blocks, 1, [&](int64_t c0, int64_t c1) {
    const int64_t d0 = c0 * kBlock, d1 = std::min(width, c1 * kBlock);
    for (int64_t b = 0; b < nbags; ++b) {
      for (int64_t d = d0; d < d1; ++d) {
        const int64_t k = mi[b * width + d];
        if (k == -1) continue;  // an empty bag
        if (static_cast<uint64_t>(k) >= static_cast<uint64_t>(rows)) out_of_range(k, rows);
        T& dst = gw[k * width + d];
        dst = static_cast<T>(static_cast<A>(dst) + static_cast<A>(g[b * width + d]));
      }
    }
  });
}

void embedding_backward_kernel(const Tensor& grad_table, const Tensor& grad, const EmbeddingBags& bags,
                               const Tensor& max_indices, bool scale_by_freq) {
  visit<kAllFloat>(grad_table.dtype(), "embedding_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (bags.mode == EmbeddingMode::Max) return backward_max<T>(grad_table, grad, max_indices);
    visit_index(bags.indices.dtype(), [&](auto itag) {
      backward_sum<T, typename decltype(itag)::type>(grad_table, grad, bags, scale_by_freq);
    });
  });
}

void embedding_weights_backward_kernel(const Tensor& out, const Tensor& grad, const Tensor& table,
                                       const EmbeddingBags& bags) {
  visit<kAllFloat>(table.dtype(), "embedding_bag", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    visit_index(bags.indices.dtype(), [&](auto itag) {
      using I = typename decltype(itag)::type;
      const int64_t rows = table.size(0), width = table.size(1), stride = table.stride(0);
      const int64_t nbags = bags.bounds.numel() - 1;
      const int64_t* bound = bags.bounds.data<int64_t>();
      const I* idx = bags.indices.data<I>();
      const T* w = table.data<T>();
      const T* g = grad.data<T>();
      T* o = out.data<T>();
      const int64_t grain = std::max<int64_t>(1, 1024 / std::max<int64_t>(width, 1));
      parallel_for(0, nbags, grain, [&](int64_t b0, int64_t b1) {
        for (int64_t b = b0; b < b1; ++b) {
          const T* grow = g + b * width;
          for (int64_t i = bound[b]; i < bound[b + 1]; ++i) {
            const int64_t k = checked_row(idx, i, rows);
            if (k == bags.padding_idx) continue;
            const T* row = w + k * stride;
            A dot = 0;
            for (int64_t d = 0; d < width; ++d) dot += static_cast<A>(grow[d]) * static_cast<A>(row[d]);
            o[i] = static_cast<T>(dot);
          }
        }
      });
    });
  });
}

void embedding_renorm_kernel(const Tensor& table, const Tensor& indices, double max_norm, double norm_type) {
  visit<kAllFloat>(table.dtype(), "embedding_renorm_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    visit_index(indices.dtype(), [&](auto itag) {
      using I = typename decltype(itag)::type;
      const int64_t rows = table.size(0), width = table.size(1), n = indices.numel();
      const I* idx = indices.data<I>();
      std::vector<int64_t> distinct(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) distinct[i] = checked_row(idx, i, rows);
      std::sort(distinct.begin(), distinct.end());
      distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
      T* w = table.data<T>();
      const int64_t count = static_cast<int64_t>(distinct.size());
      parallel_for(0, count, std::max<int64_t>(1, 4096 / std::max<int64_t>(width, 1)),
                   [&](int64_t j0, int64_t j1) {
                     for (int64_t j = j0; j < j1; ++j) {
                       T* row = w + distinct[j] * width;
                       double norm = 0;
                       if (norm_type == 0.0) {  // the number of nonzero entries
                         for (int64_t d = 0; d < width; ++d)
                           norm += static_cast<double>(row[d]) != 0.0 ? 1.0 : 0.0;
                       } else if (std::isinf(norm_type)) {  // the largest (+inf) or smallest (-inf) magnitude
                         norm = norm_type > 0 ? 0.0 : std::numeric_limits<double>::infinity();
                         for (int64_t d = 0; d < width; ++d) {
                           const double a = std::fabs(static_cast<double>(row[d]));
                           norm = norm_type > 0 ? std::max(norm, a) : std::min(norm, a);
                         }
                       } else if (norm_type == 1.0) {
                         for (int64_t d = 0; d < width; ++d) norm += std::fabs(static_cast<double>(row[d]));
                       } else if (norm_type == 2.0) {
                         for (int64_t d = 0; d < width; ++d)
                           norm += static_cast<double>(row[d]) * static_cast<double>(row[d]);
                         norm = std::sqrt(norm);
                       } else {
                         for (int64_t d = 0; d < width; ++d)
                           norm += std::pow(std::fabs(static_cast<double>(row[d])), norm_type);
                         norm = std::pow(norm, 1.0 / norm_type);
                       }
                       if (norm > max_norm) {
                         const double s = max_norm / (norm + 1e-7);
                         for (int64_t d = 0; d < width; ++d)
                           row[d] = static_cast<T>(static_cast<double>(row[d]) * s);
                       }
                     }
                   });
    });
  });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(embedding_bag_stub, &embedding_bag_kernel);
EMBER_REGISTER_CPU_KERNEL(embedding_backward_stub, &embedding_backward_kernel);
EMBER_REGISTER_CPU_KERNEL(embedding_weights_backward_stub, &embedding_weights_backward_kernel);
EMBER_REGISTER_CPU_KERNEL(embedding_renorm_stub, &embedding_renorm_kernel);

}  // namespace ember::EMBER_CPU_NS
