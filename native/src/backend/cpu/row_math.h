#pragma once
// Row primitives over a compute type C (float or double) shared by the normalization kernels
// and the fused transformer kernels (Note [normalization kernels]): vector partial sums folded
// into double every block, softmax and layer norm of one contiguous row. Included only by
// per-capability kernel files (Note [CPU capabilities]).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "backend/cpu/vec.h"
#include "backend/cpu/vec_math.h"

namespace ember::EMBER_CPU_NS {

template <typename C>
constexpr int64_t L = kLanes<C>;
constexpr int64_t kFoldVectors = 256;  // vectors summed in C before folding into double

template <typename C, typename F>
double fold_sum(int64_t n, F term) {  // sum over i of term(i) (vectors of C)
  double total = 0;
  int64_t i = 0;
  while (i + L<C> <= n) {
    Vec<C> a0{}, a1{};
    const int64_t stop = std::min(n, i + kFoldVectors * L<C>);
    for (; i + 2 * L<C> <= stop; i += 2 * L<C>) {
      a0 += term(i);
      a1 += term(i + L<C>);
    }
    for (; i + L<C> <= stop; i += L<C>) a0 += term(i);
    a0 += a1;
    for (int64_t k = 0; k < L<C>; ++k) total += a0[k];
  }
  return total;
}

template <typename C>
double sum_of(const C* x, int64_t n) {
  double t = fold_sum<C>(n, [&](int64_t i) { return load(x + i); });
  for (int64_t i = n / L<C> * L<C>; i < n; ++i) t += x[i];
  return t;
}
template <typename C>
double sq_dev(const C* x, int64_t n, C mean) {  // sum (x - mean)^2
  const Vec<C> m = splat(mean);
  double t = fold_sum<C>(n, [&](int64_t i) {
    const Vec<C> d = load(x + i) - m;
    return d * d;
  });
  for (int64_t i = n / L<C> * L<C>; i < n; ++i) t += double(x[i] - mean) * double(x[i] - mean);
  return t;
}
template <typename C>
double dot_of(const C* a, const C* b, int64_t n) {
  double t = fold_sum<C>(n, [&](int64_t i) { return load(a + i) * load(b + i); });
  for (int64_t i = n / L<C> * L<C>; i < n; ++i) t += double(a[i]) * double(b[i]);
  return t;
}

template <typename C>
double dot_dev(const C* g, const C* x, int64_t n, C mean) {  // sum g (x - mean)
  const Vec<C> m = splat(mean);
  double t = fold_sum<C>(n, [&](int64_t i) { return load(g + i) * (load(x + i) - m); });
  for (int64_t i = n / L<C> * L<C>; i < n; ++i) t += double(g[i]) * double(x[i] - mean);
  return t;
}

// exp over a vector or a scalar of C (vec_math.h's for float vectors).
template <typename C>
Vec<C> vexp(Vec<C> v) {
  if constexpr (std::is_same_v<C, float>) {
    return vmath::exp(v);
  } else {
    for (int64_t k = 0; k < L<C>; ++k) v[k] = std::exp(v[k]);
    return v;
  }
}

// One row of n: out = softmax(x) or log_softmax(x).
template <typename C>
void softmax_row(const C* x, C* y, int64_t n, bool log) {
  C mx = -std::numeric_limits<C>::infinity();
  int64_t i = 0;
  if (n >= L<C>) {
    Vec<C> m = splat(mx);
    for (; i + L<C> <= n; i += L<C>) {
      const Vec<C> v = load(x + i);
      m = v > m ? v : m;
    }
    for (int64_t k = 0; k < L<C>; ++k) mx = std::max(mx, m[k]);
  }
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  if (std::isinf(mx) && mx < 0) mx = 0;  // an all -inf row: exp(x - 0) = 0, as PyTorch gives nan/-inf below
  const Vec<C> mv = splat(mx);
  double sum = 0;
  i = 0;
  if (log) {
    sum = fold_sum<C>(n, [&](int64_t j) { return vexp<C>(load(x + j) - mv); });
    for (i = n / L<C> * L<C>; i < n; ++i) sum += std::exp(x[i] - mx);
    const C lse = mx + static_cast<C>(std::log(sum));
    const Vec<C> lv = splat(lse);
    for (i = 0; i + L<C> <= n; i += L<C>) store(y + i, load(x + i) - lv);
    for (; i < n; ++i) y[i] = x[i] - lse;
  } else {
    sum = fold_sum<C>(n, [&](int64_t j) {
      const Vec<C> e = vexp<C>(load(x + j) - mv);
      store(y + j, e);
      return e;
    });
    for (i = n / L<C> * L<C>; i < n; ++i) {
      y[i] = std::exp(x[i] - mx);
      sum += y[i];
    }
    const C inv = static_cast<C>(1.0 / sum);
    const Vec<C> iv = splat(inv);
    for (i = 0; i + L<C> <= n; i += L<C>) store(y + i, load(y + i) * iv);
    for (; i < n; ++i) y[i] *= inv;
  }
}

// One layer-norm row: y = (x - mean) rstd w + b (w, b null: 1 and 0); returns {mean, rstd}.
template <typename C>
std::pair<C, C> layer_norm_row(const C* x, C* y, int64_t n, const C* w, const C* b, double eps,
                               bool rms = false) {
  const C mean = rms ? C(0) : static_cast<C>(sum_of(x, n) / double(n));
  const double var = n > 0 ? sq_dev(x, n, mean) / double(n) : 0.0;
  const C rstd = static_cast<C>(1.0 / std::sqrt(var + eps));
  const Vec<C> mv = splat(mean), rv = splat(rstd);
  int64_t i = 0;
  for (; i + L<C> <= n; i += L<C>) store(y + i, (load(x + i) - mv) * rv * load(w + i) + load(b + i));
  for (; i < n; ++i) y[i] = (x[i] - mean) * rstd * w[i] + b[i];
  return {mean, rstd};
}

}  // namespace ember::EMBER_CPU_NS
