// CPU pooling kernels (interfaces in src/ops/kernels.h, Note [pooling kernels]): max (with the
// flat index of each window's first maximum; NaN wins, as PyTorch) and average over windows
// given per spatial dim, one (sample, channel) plane per task.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

int64_t plane_grain(const PoolArgs& a) {
  const int64_t work = std::max<int64_t>(1, a.out_size[0] * a.out_size[1] * a.out_size[2] * a.taps);
  return std::max<int64_t>(1, (int64_t(1) << 15) / work);
}

template <typename T>
void max_pool_typed(const PoolArgs& a) {
  using A = acc_t<T>;
  const T* X = a.input->data<T>();
  T* Y = a.output->data<T>();
  int64_t* I = a.indices->data<int64_t>();
  const int64_t in_plane = a.in_size[0] * a.in_size[1] * a.in_size[2];
  const int64_t out_plane = a.out_size[0] * a.out_size[1] * a.out_size[2];
  const Window* w = a.windows;
  parallel_for(0, a.planes, plane_grain(a), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* x = X + p * in_plane;
      T* y = Y + p * out_plane;
      int64_t* ix = I + p * out_plane;
      int64_t o = 0;
      for (int64_t od = 0; od < a.out_size[0]; ++od)
        for (int64_t oh = 0; oh < a.out_size[1]; ++oh)
          for (int64_t ow = 0; ow < a.out_size[2]; ++ow, ++o) {
            // PyTorch's rule: a larger value or any NaN takes over; ties keep the first
            A best = std::numeric_limits<A>::has_infinity ? -std::numeric_limits<A>::infinity()
                                                          : std::numeric_limits<A>::lowest();
            int64_t at = (w[0].start[od] * a.in_size[1] + w[1].start[oh]) * a.in_size[2] + w[2].start[ow];
            for (int64_t id = w[0].start[od]; id < w[0].end[od]; id += w[0].step)
              for (int64_t ih = w[1].start[oh]; ih < w[1].end[oh]; ih += w[1].step) {
                const int64_t row = (id * a.in_size[1] + ih) * a.in_size[2];
                for (int64_t iw = w[2].start[ow]; iw < w[2].end[ow]; iw += w[2].step) {
                  const A v = static_cast<A>(x[row + iw]);
                  if (v > best || std::isnan(static_cast<double>(v))) {
                    best = v;
                    at = row + iw;
                  }
                }
              }
            y[o] = static_cast<T>(best);
            ix[o] = at;
          }
    }
  });
}

template <typename T>
void avg_pool_typed(const PoolArgs& a) {
  using A = acc_t<T>;
  const T* X = a.input->data<T>();
  T* Y = a.output->data<T>();
  const int64_t in_plane = a.in_size[0] * a.in_size[1] * a.in_size[2];
  const int64_t out_plane = a.out_size[0] * a.out_size[1] * a.out_size[2];
  const Window* w = a.windows;
  parallel_for(0, a.planes, plane_grain(a), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* x = X + p * in_plane;
      T* y = Y + p * out_plane;
      int64_t o = 0;
      for (int64_t od = 0; od < a.out_size[0]; ++od)
        for (int64_t oh = 0; oh < a.out_size[1]; ++oh)
          for (int64_t ow = 0; ow < a.out_size[2]; ++ow, ++o) {
            A sum = 0;
            for (int64_t id = w[0].start[od]; id < w[0].end[od]; ++id)
              for (int64_t ih = w[1].start[oh]; ih < w[1].end[oh]; ++ih) {
                const T* row = x + (id * a.in_size[1] + ih) * a.in_size[2];
                for (int64_t iw = w[2].start[ow]; iw < w[2].end[ow]; ++iw) sum += static_cast<A>(row[iw]);
              }
            const double div = a.divisor > 0 ? a.divisor : w[0].count[od] * w[1].count[oh] * w[2].count[ow];
            y[o] = static_cast<T>(div > 0 ? sum / static_cast<A>(div) : A(0));
          }
    }
  });
}

// grad_input (zeroed here) += grad_output spread over each window (avg) or put at the index (max).
template <typename T>
void pool_backward_typed(const PoolArgs& a) {
  using A = acc_t<T>;
  const T* G = a.output->data<T>();  // the output's gradient
  T* D = a.input->data<T>();         // the input's gradient, written
  const int64_t in_plane = a.in_size[0] * a.in_size[1] * a.in_size[2];
  const int64_t out_plane = a.out_size[0] * a.out_size[1] * a.out_size[2];
  const Window* w = a.windows;
  parallel_for(0, a.planes, plane_grain(a), [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T* g = G + p * out_plane;
      T* d = D + p * in_plane;
      std::fill(d, d + in_plane, T(0));
      if (a.indices != nullptr) {
        const int64_t* ix = a.indices->data<int64_t>() + p * out_plane;
        for (int64_t o = 0; o < out_plane; ++o)
          if (ix[o] >= 0) d[ix[o]] = static_cast<T>(static_cast<A>(d[ix[o]]) + static_cast<A>(g[o]));
        continue;
      }
      int64_t o = 0;
      for (int64_t od = 0; od < a.out_size[0]; ++od)
        for (int64_t oh = 0; oh < a.out_size[1]; ++oh)
          for (int64_t ow = 0; ow < a.out_size[2]; ++ow, ++o) {
            const double div = a.divisor > 0 ? a.divisor : w[0].count[od] * w[1].count[oh] * w[2].count[ow];
            if (div <= 0) continue;
            const A share = static_cast<A>(g[o]) / static_cast<A>(div);
            for (int64_t id = w[0].start[od]; id < w[0].end[od]; ++id)
              for (int64_t ih = w[1].start[oh]; ih < w[1].end[oh]; ++ih) {
                T* row = d + (id * a.in_size[1] + ih) * a.in_size[2];
                for (int64_t iw = w[2].start[ow]; iw < w[2].end[ow]; ++iw)
                  row[iw] = static_cast<T>(static_cast<A>(row[iw]) + share);
              }
          }
    }
  });
}

void max_pool_kernel(const PoolArgs& a) {
  visit<kAllFloat | kInts>(a.input->dtype(), "max_pool",
                           [&](auto tag) { max_pool_typed<typename decltype(tag)::type>(a); });
}
void avg_pool_kernel(const PoolArgs& a) {
  visit<kAllFloat>(a.input->dtype(), "avg_pool",
                   [&](auto tag) { avg_pool_typed<typename decltype(tag)::type>(a); });
}
void pool_backward_kernel(const PoolArgs& a) {
  visit<kAllFloat>(a.input->dtype(), "pool_backward",
                   [&](auto tag) { pool_backward_typed<typename decltype(tag)::type>(a); });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(max_pool_stub, &max_pool_kernel);
EMBER_REGISTER_CPU_KERNEL(avg_pool_stub, &avg_pool_kernel);
EMBER_REGISTER_CPU_KERNEL(pool_backward_stub, &pool_backward_kernel);

}  // namespace ember::EMBER_CPU_NS
