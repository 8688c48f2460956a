// CPU sort kernel (interface in src/ops/kernels.h).
#include <algorithm>
#include <numeric>
#include <vector>

#include "loops.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

void sort_kernel(const Tensor& values, const Tensor& indices, const Tensor& in, bool descending) {
  visit<kReal | kBool>(in.dtype(), "sort", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const int64_t n = in.dim() == 0 ? 1 : in.sizes().back();
    const int64_t rows = n == 0 ? 0 : in.numel() / n;
    const T* src = in.data<T>();
    T* vals = values.data<T>();
    int64_t* idx = indices.data<int64_t>();
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      std::vector<int64_t> order(static_cast<size_t>(n));
      for (int64_t r = b; r < e; ++r) {
        const T* row = src + r * n;
        std::iota(order.begin(), order.end(), 0);
        auto less = [&](int64_t i, int64_t j) {
          const A x = static_cast<A>(row[i]);
          const A y = static_cast<A>(row[j]);
          if constexpr (!std::is_integral_v<A>) {
            if (x != x || y != y) return descending ? (x != x && y == y) : (x == x && y != y);
          }
          return descending ? x > y : x < y;
        };
        std::stable_sort(order.begin(), order.end(), less);
        for (int64_t i = 0; i < n; ++i) {
          vals[r * n + i] = row[order[i]];
          idx[r * n + i] = order[i];
        }
      }
    });
  });
}

EMBER_REGISTER_CPU_KERNEL(sort_stub, &sort_kernel);

void mode_kernel(const Tensor& values, const Tensor& indices, const Tensor& sorted, const Tensor& order) {
  visit<kReal | kBool>(sorted.dtype(), "mode", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const int64_t n = sorted.sizes().back();
    const int64_t rows = values.numel();
    const T* src = sorted.data<T>();
    const int64_t* pos = order.data<int64_t>();
    T* vals = values.data<T>();
    int64_t* idx = indices.data<int64_t>();
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* row = src + r * n;
        int64_t best_count = 0, run = 0, best_end = 0;
        for (int64_t i = 0; i < n; ++i) {
          ++run;
          // a run ends where the next value differs (a NaN equals nothing, so each is its own run)
          if (i == n - 1 || !(static_cast<A>(row[i]) == static_cast<A>(row[i + 1]))) {
            if (run > best_count) {
              best_count = run;
              best_end = i;
            }
            run = 0;
          }
        }
        vals[r] = row[best_end];
        idx[r] = pos[r * n + best_end];
      }
    });
  });
}

EMBER_REGISTER_CPU_KERNEL(mode_stub, &mode_kernel);

}  // namespace
}  // namespace ember::EMBER_CPU_NS
