// CPU kernels of softmax, log_softmax and the normalizations (layer, RMS, group, batch), forward
// and backward (interfaces in src/ops/kernels.h, Note [normalization kernels]).
//
// Rows are contiguous in memory (the op bodies make them so). float and double compute in their
// own type with vector partial sums folded into double every block; float16/bfloat16 rows are
// widened to float first. Work splits over rows (or channels) in fixed chunks and per-chunk
// partial sums combine in chunk order, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "backend/cpu/row_math.h"
#include "backend/cpu/vec.h"
#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

// A row of T as compute type C: the row itself when T is C, else widened into `buf`.
template <typename T, typename C>
const C* as_compute(const T* row, int64_t n, std::vector<C>& buf) {
  if constexpr (std::is_same_v<T, C>) {
    return row;
  } else {
    buf.resize(n);
    for (int64_t i = 0; i < n; ++i) buf[i] = static_cast<C>(row[i]);
    return buf.data();
  }
}
template <typename T, typename C>
void store_row(T* dst, const C* src, int64_t n) {
  if constexpr (!std::is_same_v<T, C>) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[i]);
  }
}
// Output row: written directly when T is C, else through `buf` and narrowed by store_row.
template <typename T, typename C>
C* out_row(T* row, int64_t n, std::vector<C>& buf) {
  if constexpr (std::is_same_v<T, C>) {
    return row;
  } else {
    buf.resize(n);
    return buf.data();
  }
}

template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Rows per parallel chunk: about 64K elements of work each.
int64_t row_grain(int64_t n) {
  return std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(n, 1));
}

// ---- softmax / log_softmax (softmax_row in row_math.h) ------------------------------------

template <typename T>
void softmax_typed(const Tensor& out, const Tensor& in, int64_t rows, int64_t n, bool log) {
  using C = compute_t<T>;
  const T* X = in.data<T>();
  T* Y = out.data<T>();
  parallel_for(0, rows, row_grain(n), [&](int64_t lo, int64_t hi) {
    std::vector<C> xb, yb;
    for (int64_t r = lo; r < hi; ++r) {
      const C* x = as_compute<T, C>(X + r * n, n, xb);
      C* y = out_row<T, C>(Y + r * n, n, yb);
      softmax_row<C>(x, y, n, log);
      store_row<T, C>(Y + r * n, y, n);
    }
  });
}

// grad_in = y (g - sum g y)   or, for log_softmax, g - exp(y) sum g
template <typename T>
void softmax_backward_typed(const Tensor& grad_in, const Tensor& grad_out, const Tensor& output, int64_t rows,
                            int64_t n, bool log) {
  using C = compute_t<T>;
  const T* G = grad_out.data<T>();
  const T* Y = output.data<T>();
  T* D = grad_in.data<T>();
  parallel_for(0, rows, row_grain(n), [&](int64_t lo, int64_t hi) {
    std::vector<C> gb, yb, db;
    for (int64_t r = lo; r < hi; ++r) {
      const C* g = as_compute<T, C>(G + r * n, n, gb);
      const C* y = as_compute<T, C>(Y + r * n, n, yb);
      C* d = out_row<T, C>(D + r * n, n, db);
      if (log) {
        const C s = static_cast<C>(sum_of(g, n));
        const Vec<C> sv = splat(s);
        int64_t i = 0;
        for (; i + L<C> <= n; i += L<C>) store(d + i, load(g + i) - vexp<C>(load(y + i)) * sv);
        for (; i < n; ++i) d[i] = g[i] - std::exp(y[i]) * s;
      } else {
        const C s = static_cast<C>(dot_of(g, y, n));
        const Vec<C> sv = splat(s);
        int64_t i = 0;
        for (; i + L<C> <= n; i += L<C>) store(d + i, load(y + i) * (load(g + i) - sv));
        for (; i < n; ++i) d[i] = y[i] * (g[i] - s);
      }
      store_row<T, C>(D + r * n, d, n);
    }
  });
}

void softmax_kernel(const Tensor& out, const Tensor& in, int64_t rows, int64_t n, bool log) {
  visit<kAllFloat>(in.dtype(), log ? "log_softmax" : "softmax",
                   [&](auto tag) { softmax_typed<typename decltype(tag)::type>(out, in, rows, n, log); });
}
void softmax_backward_kernel(const Tensor& grad_in, const Tensor& grad_out, const Tensor& output,
                             int64_t rows, int64_t n, bool log) {
  visit<kAllFloat>(output.dtype(), "softmax_backward", [&](auto tag) {
    softmax_backward_typed<typename decltype(tag)::type>(grad_in, grad_out, output, rows, n, log);
  });
}

// ---- layer norm and RMS norm ------------------------------------------------------------------

// The affine parameters as compute-type vectors (ones / zeros when absent).
template <typename T, typename C>
std::vector<C> param_or(const Tensor* t, int64_t n, C fill) {
  std::vector<C> v(n, fill);
  if (t != nullptr) {
    const T* p = t->data<T>();
    for (int64_t i = 0; i < n; ++i) v[i] = static_cast<C>(p[i]);
  }
  return v;
}

template <typename T>
void layer_norm_typed(const RowNormArgs& a) {
  using C = compute_t<T>;
  using S = acc_t<T>;  // dtype of mean / rstd
  const int64_t rows = a.rows, n = a.n;
  const std::vector<C> w = param_or<T, C>(a.weight, n, C(1)), b = param_or<T, C>(a.bias, n, C(0));
  const T* X = a.input->data<T>();
  T* Y = a.out->data<T>();
  S* M = a.rms ? nullptr : a.mean->data<S>();
  S* R = a.rstd->data<S>();
  parallel_for(0, rows, row_grain(n), [&](int64_t lo, int64_t hi) {
    std::vector<C> xb, yb;
    for (int64_t r = lo; r < hi; ++r) {
      const C* x = as_compute<T, C>(X + r * n, n, xb);
      C* y = out_row<T, C>(Y + r * n, n, yb);
      const auto [mean, rstd] = layer_norm_row<C>(x, y, n, w.data(), b.data(), a.eps, a.rms);
      if (M != nullptr) M[r] = static_cast<S>(mean);
      R[r] = static_cast<S>(rstd);
      store_row<T, C>(Y + r * n, y, n);
    }
  });
}

// dx = rstd (g - mean(g) - xhat mean(g xhat)), g = dy w, xhat = (x - mean) rstd (RMS: no mean terms);
// dw = sum over rows of dy xhat, db = sum of dy.
template <typename T>
void layer_norm_backward_typed(const RowNormBackwardArgs& a) {
  using C = compute_t<T>;
  using S = acc_t<T>;
  const int64_t rows = a.rows, n = a.n;
  const std::vector<C> w = param_or<T, C>(a.weight, n, C(1));
  const T* X = a.input->data<T>();
  const T* G = a.grad_out->data<T>();
  T* D = a.grad_input->data<T>();
  const S* M = a.rms ? nullptr : a.mean->data<S>();
  const S* R = a.rstd->data<S>();
  const bool need_params = a.grad_weight != nullptr || a.grad_bias != nullptr;
  const int64_t grain = row_grain(n), chunks = num_chunks(0, rows, grain);
  std::vector<C> dw_part(need_params ? chunks * n : 0, C(0)), db_part(need_params ? chunks * n : 0, C(0));
  parallel_for(0, rows, grain, [&](int64_t lo, int64_t hi) {
    std::vector<C> xb, gb, db, gw(n), xh(n);
    C* dwp = need_params ? dw_part.data() + (lo / grain) * n : nullptr;
    C* dbp = need_params ? db_part.data() + (lo / grain) * n : nullptr;
    for (int64_t r = lo; r < hi; ++r) {
      const C* x = as_compute<T, C>(X + r * n, n, xb);
      const C* g = as_compute<T, C>(G + r * n, n, gb);
      C* d = out_row<T, C>(D + r * n, n, db);
      const C mean = M ? static_cast<C>(M[r]) : C(0), rstd = static_cast<C>(R[r]);
      for (int64_t i = 0; i < n; ++i) {
        xh[i] = (x[i] - mean) * rstd;
        gw[i] = g[i] * w[i];
      }
      const C mg = a.rms ? C(0) : static_cast<C>(sum_of(gw.data(), n) / double(n));
      const C mgx = static_cast<C>(dot_of(gw.data(), xh.data(), n) / double(n));
      const Vec<C> rv = splat(rstd), mgv = splat(mg), mgxv = splat(mgx);
      int64_t i = 0;
      for (; i + L<C> <= n; i += L<C>)
        store(d + i, rv * (load(gw.data() + i) - mgv - load(xh.data() + i) * mgxv));
      for (; i < n; ++i) d[i] = rstd * (gw[i] - mg - xh[i] * mgx);
      store_row<T, C>(D + r * n, d, n);
      if (need_params) {
        for (int64_t j = 0; j < n; ++j) {
          dwp[j] += g[j] * xh[j];
          dbp[j] += g[j];
        }
      }
    }
  });
  if (!need_params) return;
  // combine the chunks' partial sums in chunk order (Note [deterministic parallelism])
  auto combine = [&](const std::vector<C>& part, const Tensor* dst) {
    if (dst == nullptr) return;
    T* p = dst->data<T>();
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t c = 0; c < chunks; ++c) s += part[c * n + j];
      p[j] = static_cast<T>(s);
    }
  };
  combine(dw_part, a.grad_weight);
  combine(db_part, a.grad_bias);
}

void layer_norm_kernel(const RowNormArgs& a) {
  visit<kAllFloat>(a.input->dtype(), "layer_norm",
                   [&](auto tag) { layer_norm_typed<typename decltype(tag)::type>(a); });
}
void layer_norm_backward_kernel(const RowNormBackwardArgs& a) {
  visit<kAllFloat>(a.input->dtype(), "layer_norm_backward",
                   [&](auto tag) { layer_norm_backward_typed<typename decltype(tag)::type>(a); });
}

// ---- channel norms: group norm and batch norm over [N, C, S] -----------------------------------

// group norm: per (sample, group) the statistics of its C/G channels x S positions.
template <typename T>
void group_norm_typed(const ChannelNormArgs& a) {
  using C = compute_t<T>;
  using Sx = acc_t<T>;
  const int64_t N = a.batch, Ch = a.channels, S = a.spatial, G = a.groups, per = Ch / G, len = per * S;
  const std::vector<C> w = param_or<T, C>(a.weight, Ch, C(1)), b = param_or<T, C>(a.bias, Ch, C(0));
  const T* X = a.input->data<T>();
  T* Y = a.out->data<T>();
  Sx* M = a.mean->data<Sx>();
  Sx* R = a.rstd->data<Sx>();
  parallel_for(0, N * G, row_grain(len), [&](int64_t lo, int64_t hi) {
    std::vector<C> xb, yb;
    for (int64_t r = lo; r < hi; ++r) {
      const C* x = as_compute<T, C>(X + r * len, len, xb);
      C* y = out_row<T, C>(Y + r * len, len, yb);
      const C mean = static_cast<C>(len ? sum_of(x, len) / double(len) : 0.0);
      const C rstd =
          static_cast<C>(1.0 / std::sqrt((len ? sq_dev(x, len, mean) / double(len) : 0.0) + a.eps));
      M[r] = static_cast<Sx>(mean);
      R[r] = static_cast<Sx>(rstd);
      const int64_t g = r % G;
      for (int64_t j = 0; j < per; ++j) {
        const int64_t c = g * per + j;
        const C scale = rstd * w[c], shift = b[c] - mean * scale;
        const Vec<C> sv = splat(scale), hv = splat(shift);
        const C* xs = x + j * S;
        C* ys = y + j * S;
        int64_t i = 0;
        for (; i + L<C> <= S; i += L<C>) store(ys + i, load(xs + i) * sv + hv);
        for (; i < S; ++i) ys[i] = xs[i] * scale + shift;
      }
      store_row<T, C>(Y + r * len, y, len);
    }
  });
}

template <typename T>
void group_norm_backward_typed(const ChannelNormBackwardArgs& a) {
  using C = compute_t<T>;
  using Sx = acc_t<T>;
  const int64_t N = a.batch, Ch = a.channels, S = a.spatial, G = a.groups, per = Ch / G, len = per * S;
  const std::vector<C> w = param_or<T, C>(a.weight, Ch, C(1));
  const T* X = a.input->data<T>();
  const T* Gd = a.grad_out->data<T>();
  T* D = a.grad_input->data<T>();
  const Sx* M = a.mean->data<Sx>();
  const Sx* R = a.rstd->data<Sx>();
  // per (sample, channel): sum dy xhat and sum dy, for the parameter gradients
  std::vector<double> dyx(N * Ch), dy(N * Ch);
  parallel_for(0, N * G, row_grain(len), [&](int64_t lo, int64_t hi) {
    std::vector<C> xb, gb, db, xh(len), gw(len);
    for (int64_t r = lo; r < hi; ++r) {
      const C* x = as_compute<T, C>(X + r * len, len, xb);
      const C* g = as_compute<T, C>(Gd + r * len, len, gb);
      C* d = out_row<T, C>(D + r * len, len, db);
      const C mean = static_cast<C>(M[r]), rstd = static_cast<C>(R[r]);
      const int64_t n = r / G, grp = r % G;
      for (int64_t j = 0; j < per; ++j) {
        const int64_t c = grp * per + j;
        for (int64_t i = 0; i < S; ++i) {
          const int64_t k = j * S + i;
          xh[k] = (x[k] - mean) * rstd;
          gw[k] = g[k] * w[c];
        }
        dyx[n * Ch + c] = dot_of(g + j * S, xh.data() + j * S, S);
        dy[n * Ch + c] = sum_of(g + j * S, S);
      }
      const C mg = static_cast<C>(len ? sum_of(gw.data(), len) / double(len) : 0.0);
      const C mgx = static_cast<C>(len ? dot_of(gw.data(), xh.data(), len) / double(len) : 0.0);
      for (int64_t k = 0; k < len; ++k) d[k] = rstd * (gw[k] - mg - xh[k] * mgx);
      store_row<T, C>(D + r * len, d, len);
    }
  });
  for (int64_t c = 0; c < Ch; ++c) {
    double sw = 0, sb = 0;
    for (int64_t n = 0; n < N; ++n) {
      sw += dyx[n * Ch + c];
      sb += dy[n * Ch + c];
    }
    if (a.grad_weight != nullptr) a.grad_weight->data<T>()[c] = static_cast<T>(sw);
    if (a.grad_bias != nullptr) a.grad_bias->data<T>()[c] = static_cast<T>(sb);
  }
}

// batch norm: per channel, the statistics over the batch and the positions.
template <typename T>
void batch_norm_typed(const ChannelNormArgs& a) {
  using C = compute_t<T>;
  using Sx = acc_t<T>;
  const int64_t N = a.batch, Ch = a.channels, S = a.spatial, count = N * S;
  const std::vector<C> w = param_or<T, C>(a.weight, Ch, C(1)), b = param_or<T, C>(a.bias, Ch, C(0));
  const T* X = a.input->data<T>();
  T* Y = a.out->data<T>();
  parallel_for(
      0, Ch, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(count, 1)),
      [&](int64_t lo, int64_t hi) {
        std::vector<C> xb, yb;
        for (int64_t c = lo; c < hi; ++c) {
          double mean, invstd;
          if (a.training) {
            double s = 0;
            for (int64_t n = 0; n < N; ++n) s += sum_of(as_compute<T, C>(X + (n * Ch + c) * S, S, xb), S);
            mean = count ? s / double(count) : 0.0;
            double q = 0;
            for (int64_t n = 0; n < N; ++n)
              q += sq_dev(as_compute<T, C>(X + (n * Ch + c) * S, S, xb), S, static_cast<C>(mean));
            const double var = count ? q / double(count) : 0.0;
            invstd = 1.0 / std::sqrt(var + a.eps);
            a.mean->data<Sx>()[c] = static_cast<Sx>(mean);
            a.rstd->data<Sx>()[c] = static_cast<Sx>(invstd);
            if (a.running_mean != nullptr) {  // momentum update, the variance unbiased (as PyTorch)
              visit<kAllFloat>(a.running_mean->dtype(), "batch_norm", [&](auto tag) {
                using R = typename decltype(tag)::type;
                R& rm = a.running_mean->data<R>()[c];
                rm = static_cast<R>((1 - a.momentum) * static_cast<double>(rm) + a.momentum * mean);
              });
            }
            if (a.running_var != nullptr) {
              const double unbiased = count > 1 ? var * double(count) / double(count - 1) : var;
              visit<kAllFloat>(a.running_var->dtype(), "batch_norm", [&](auto tag) {
                using R = typename decltype(tag)::type;
                R& rv = a.running_var->data<R>()[c];
                rv = static_cast<R>((1 - a.momentum) * static_cast<double>(rv) + a.momentum * unbiased);
              });
            }
          } else {
            mean = a.mean->data<Sx>()[c];
            invstd = a.rstd->data<Sx>()[c];
          }
          const C scale = static_cast<C>(invstd * w[c]), shift = static_cast<C>(b[c] - mean * invstd * w[c]);
          const Vec<C> sv = splat(scale), hv = splat(shift);
          for (int64_t n = 0; n < N; ++n) {
            const C* x = as_compute<T, C>(X + (n * Ch + c) * S, S, xb);
            C* y = out_row<T, C>(Y + (n * Ch + c) * S, S, yb);
            int64_t i = 0;
            for (; i + L<C> <= S; i += L<C>) store(y + i, load(x + i) * sv + hv);
            for (; i < S; ++i) y[i] = x[i] * scale + shift;
            store_row<T, C>(Y + (n * Ch + c) * S, y, S);
          }
        }
      });
}

// train: dx = w invstd (dy - mean(dy) - xhat mean(dy xhat)); eval: dx = w invstd dy.
template <typename T>
void batch_norm_backward_typed(const ChannelNormBackwardArgs& a) {
  using C = compute_t<T>;
  using Sx = acc_t<T>;
  const int64_t N = a.batch, Ch = a.channels, S = a.spatial, count = N * S;
  const std::vector<C> w = param_or<T, C>(a.weight, Ch, C(1));
  const T* X = a.input->data<T>();
  const T* Gd = a.grad_out->data<T>();
  T* D = a.grad_input != nullptr ? a.grad_input->data<T>() : nullptr;
  parallel_for(0, Ch, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(count, 1)),
               [&](int64_t lo, int64_t hi) {
                 std::vector<C> xb, gb, db;
                 for (int64_t c = lo; c < hi; ++c) {
                   const C mean = static_cast<C>(a.mean->data<Sx>()[c]),
                           invstd = static_cast<C>(a.rstd->data<Sx>()[c]);
                   double sdy = 0, sdyx = 0;
                   for (int64_t n = 0; n < N; ++n) {
                     const C* x = as_compute<T, C>(X + (n * Ch + c) * S, S, xb);
                     const C* g = as_compute<T, C>(Gd + (n * Ch + c) * S, S, gb);
                     sdy += sum_of(g, S);
                     sdyx += dot_dev(g, x, S, mean);
                   }
                   sdyx *= double(invstd);  // sum dy xhat
                   if (a.grad_weight != nullptr) a.grad_weight->data<T>()[c] = static_cast<T>(sdyx);
                   if (a.grad_bias != nullptr) a.grad_bias->data<T>()[c] = static_cast<T>(sdy);
                   if (D == nullptr) continue;
                   const C k = invstd * w[c];
                   const C mdy = a.training && count ? static_cast<C>(sdy / double(count)) : C(0);
                   const C mdyx = a.training && count ? static_cast<C>(sdyx / double(count)) : C(0);
                   const Vec<C> kv = splat(k), mdyv = splat(mdy), mdyxv = splat(mdyx), mv = splat(mean),
                                iv = splat(invstd);
                   for (int64_t n = 0; n < N; ++n) {
                     const C* x = as_compute<T, C>(X + (n * Ch + c) * S, S, xb);
                     const C* g = as_compute<T, C>(Gd + (n * Ch + c) * S, S, gb);
                     C* d = out_row<T, C>(D + (n * Ch + c) * S, S, db);
                     int64_t i = 0;
                     for (; i + L<C> <= S; i += L<C>)
                       store(d + i, kv * (load(g + i) - mdyv - (load(x + i) - mv) * iv * mdyxv));
                     for (; i < S; ++i) d[i] = k * (g[i] - mdy - (x[i] - mean) * invstd * mdyx);
                     store_row<T, C>(D + (n * Ch + c) * S, d, S);
                   }
                 }
               });
}

void channel_norm_kernel(const ChannelNormArgs& a) {
  visit<kAllFloat>(a.input->dtype(), a.groups > 0 ? "group_norm" : "batch_norm", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (a.groups > 0) {
      group_norm_typed<T>(a);
    } else {
      batch_norm_typed<T>(a);
    }
  });
}
void channel_norm_backward_kernel(const ChannelNormBackwardArgs& a) {
  visit<kAllFloat>(a.input->dtype(), a.groups > 0 ? "group_norm_backward" : "batch_norm_backward",
                   [&](auto tag) {
                     using T = typename decltype(tag)::type;
                     if (a.groups > 0) {
                       group_norm_backward_typed<T>(a);
                     } else {
                       batch_norm_backward_typed<T>(a);
                     }
                   });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(softmax_stub, &softmax_kernel);
EMBER_REGISTER_CPU_KERNEL(softmax_backward_stub, &softmax_backward_kernel);
EMBER_REGISTER_CPU_KERNEL(layer_norm_stub, &layer_norm_kernel);
EMBER_REGISTER_CPU_KERNEL(layer_norm_backward_stub, &layer_norm_backward_kernel);
EMBER_REGISTER_CPU_KERNEL(channel_norm_stub, &channel_norm_kernel);
EMBER_REGISTER_CPU_KERNEL(channel_norm_backward_stub, &channel_norm_backward_kernel);

}  // namespace ember::EMBER_CPU_NS
