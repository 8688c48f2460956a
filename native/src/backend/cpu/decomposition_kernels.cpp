// CPU kernels of the ember.linalg decompositions (interfaces in src/ops/kernels.h), one matrix
// per task, in the matrix's own precision:
// - SVD by one-sided (Hestenes) Jacobi: plane rotations orthogonalize the columns of the tall
//   orientation of A; column norms are the singular values. Accurate to high relative precision
//   and simple (Demmel & Veselic 1992; Golub & Van Loan 8.6.3).
// - Hermitian eigen-decomposition by cyclic two-sided Jacobi (Golub & Van Loan 8.5).
// - Householder QR and the product of reflectors, with LAPACK's geqrf / orgqr conventions.
// - General eigen-decomposition: Householder reduction to Hessenberg form, then single-shift
//   complex QR (Wilkinson shifts, implicit bulge chasing with Givens rotations) to Schur form T;
//   eigenvectors by back substitution on T, mapped back and normalized as LAPACK's geev does.
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <numeric>
#include <vector>

#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <typename T>
using real_of = decltype(std::real(T()));

template <typename T>
real_of<T> abs2(T v) {
  if constexpr (is_complex_v<T>) {
    return std::norm(v);
  } else {
    return v * v;
  }
}

template <typename T>
bool all_finite(const T* m, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(std::real(m[i])) || !std::isfinite(std::imag(m[i]))) return false;
  return true;
}

template <typename T>
real_of<T> largest(const T* m, int64_t count) {
  real_of<T> big = 0;
  for (int64_t i = 0; i < count; ++i) big = std::max(big, std::abs(m[i]));
  return big;
}

template <typename T>
void fill_nan(T* p, int64_t count) {
  const real_of<T> nan = std::numeric_limits<real_of<T>>::quiet_NaN();
  std::fill(p, p + count, T(nan));
}

// Indices of `values` in the order `before` gives (stable, so ties keep their order).
template <typename R, typename Before>
std::vector<int64_t> order_of(const std::vector<R>& values, Before before) {
  std::vector<int64_t> idx(values.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(),
                   [&](int64_t a, int64_t b) { return before(values[a], values[b]); });
  return idx;
}

// Extends the orthonormal columns cols[0..have) (each of length p, column-major in `q`) to
// `want` columns: each new one is the standard basis vector least in their span, orthogonalized
// twice (Gram-Schmidt) and normalized.
template <typename T>
void complete_basis(std::vector<T>& q, int64_t p, int64_t have, int64_t want) {
  using R = real_of<T>;
  for (int64_t c = have; c < want; ++c) {
    int64_t best = 0;
    R best_rest = -1;
    for (int64_t t = 0; t < p; ++t) {  // |e_t - proj e_t|^2 = 1 - sum_j |q_j[t]|^2
      R in_span = 0;
      for (int64_t j = 0; j < c; ++j) in_span += abs2(q[j * p + t]);
      if (1 - in_span > best_rest) best_rest = 1 - in_span, best = t;
    }
    T* v = q.data() + c * p;
    std::fill(v, v + p, T(0));
    v[best] = T(1);
    for (int pass = 0; pass < 2; ++pass) {
      for (int64_t j = 0; j < c; ++j) {
        const T* u = q.data() + j * p;
        T dot = 0;
        for (int64_t t = 0; t < p; ++t) dot += conj_value(u[t]) * v[t];
        for (int64_t t = 0; t < p; ++t) v[t] -= dot * u[t];
      }
    }
    R norm = 0;
    for (int64_t t = 0; t < p; ++t) norm += abs2(v[t]);
    norm = std::sqrt(norm);
    for (int64_t t = 0; t < p; ++t) v[t] /= norm;
  }
}

// The rotation [[c, s ph], [-s conj(ph), c]] on the pair of vectors (x, y), elementwise:
// x' = c x - s conj(ph) y, y' = s ph x + c y.
template <typename T, typename R>
void rotate(T* x, T* y, int64_t len, int64_t stride, R c, R s, T ph) {
  const T a = s * conj_value(ph), b = s * ph;
  for (int64_t t = 0; t < len; ++t) {
    const T xv = x[t * stride], yv = y[t * stride];
    x[t * stride] = c * xv - a * yv;
    y[t * stride] = b * xv + c * yv;
  }
}

// t = the smaller root of t^2 + 2 zeta t - 1 = 0; c = cos, s = sin of the rotation angle.
template <typename R>
void jacobi_angle(R zeta, R& c, R& s) {
  const R t = (zeta >= 0 ? R(1) : R(-1)) / (std::abs(zeta) + std::sqrt(R(1) + zeta * zeta));
  c = R(1) / std::sqrt(R(1) + t * t);
  s = c * t;
}

constexpr int kMaxSweeps = 80;

// ---- SVD ------------------------------------------------------------------------------------

template <typename T>
void svd_one(const T* a, int64_t m, int64_t n, T* u, int64_t ucols, real_of<T>* s, T* vh, int64_t vrows,
             bool uv, int32_t* info) {
  using R = real_of<T>;
  const bool tall = m >= n;
  const int64_t p = tall ? m : n, q = tall ? n : m;  // W (p x q, column-major) = A or A^H
  // scaled by the largest magnitude, so squared norms neither overflow nor underflow
  const R big = largest(a, m * n), inv = big > 0 ? R(1) / big : R(1);
  std::vector<T> w(static_cast<size_t>(p * q));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      if (tall) {
        w[j * p + i] = a[i * n + j] * inv;
      } else {
        w[i * p + j] = conj_value(a[i * n + j]) * inv;
      }
    }
  std::vector<T> v;
  if (uv) {
    v.assign(static_cast<size_t>(q * q), T(0));
    for (int64_t i = 0; i < q; ++i) v[i * q + i] = T(1);
  }
  const R eps = std::numeric_limits<R>::epsilon();
  // Two columns count as orthogonal once |<wi, wj>| is within the rounding of the inner product
  // (sqrt(p) eps |wi| |wj|, LAPACK gesvj's test), and a column whose squared norm is below
  // eps^2 of the whole matrix's is rounding noise (a rank-deficient input leaves such columns):
  // rotating noise against noise never settles, and it moves no singular value by more than
  // eps * |A|.
  const R tol = eps * std::sqrt(static_cast<R>(p));
  R total = 0;
  for (const T& x : w) total += abs2(x);
  const R noise = eps * eps * total;
  *info = 1;
  for (int sweep = 0; sweep < kMaxSweeps && *info != 0; ++sweep) {
    bool rotated = false;
    for (int64_t i = 0; i + 1 < q; ++i) {
      for (int64_t j = i + 1; j < q; ++j) {
        T* wi = w.data() + i * p;
        T* wj = w.data() + j * p;
        R alpha = 0, beta = 0;
        T gamma = 0;
        for (int64_t t = 0; t < p; ++t) {
          alpha += abs2(wi[t]);
          beta += abs2(wj[t]);
          gamma += conj_value(wi[t]) * wj[t];
        }
        if (alpha <= noise || beta <= noise) continue;
        const R g = std::abs(gamma);
        if (!(g > tol * std::sqrt(alpha) * std::sqrt(beta))) continue;  // orthogonal to working precision
        const R zeta = (beta - alpha) / (2 * g);
        if (!std::isfinite(zeta)) continue;  // a rotation by less than rounding
        rotated = true;
        R c, sn;
        jacobi_angle(zeta, c, sn);
        const T ph = gamma / g;
        rotate(wi, wj, p, 1, c, sn, ph);
        if (uv) rotate(v.data() + i * q, v.data() + j * q, q, 1, c, sn, ph);
      }
    }
    if (!rotated) *info = 0;
  }
  std::vector<R> norms(static_cast<size_t>(q));
  for (int64_t j = 0; j < q; ++j) {
    R sum = 0;
    for (int64_t t = 0; t < p; ++t) sum += abs2(w[j * p + t]);
    norms[j] = std::sqrt(sum);
  }
  const std::vector<int64_t> order = order_of(norms, [](R x, R y) { return x > y; });
  for (int64_t j = 0; j < q; ++j) s[j] = norms[order[j]] * big;
  if (!uv) return;
  // The left vectors of W: its sorted columns over their norms, completed to `wide` columns.
  const int64_t wide = tall ? ucols : vrows;
  std::vector<T> uw(static_cast<size_t>(p * std::max(wide, q)), T(0));
  int64_t have = 0;
  // (noise columns, as above, give no direction: the basis completion supplies theirs)
  for (; have < q && norms[order[have]] * norms[order[have]] > noise; ++have)
    for (int64_t t = 0; t < p; ++t) uw[have * p + t] = w[order[have] * p + t] / norms[order[have]];
  complete_basis(uw, p, have, wide);
  // A = U S V^H with (U, V) = (W's left vectors, its V) when tall, (its V, its left vectors) when wide.
  for (int64_t i = 0; i < m; ++i)
    for (int64_t c = 0; c < ucols; ++c) u[i * ucols + c] = tall ? uw[c * p + i] : v[order[c] * q + i];
  for (int64_t r = 0; r < vrows; ++r)
    for (int64_t j = 0; j < n; ++j) vh[r * n + j] = conj_value(tall ? v[order[r] * q + j] : uw[r * p + j]);
}

template <typename T>
void svd_typed(const Tensor& a, const Tensor& u, const Tensor& s, const Tensor& vh, const Tensor& info,
               bool uv) {
  using R = real_of<T>;
  const int64_t batch = a.size(0), m = a.size(1), n = a.size(2), k = std::min(m, n);
  const int64_t ucols = uv ? u.size(2) : 0, vrows = uv ? vh.size(1) : 0;
  parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const T* ab = a.data<T>() + b * m * n;
      T* ub = uv ? u.data<T>() + b * m * ucols : nullptr;
      T* vb = uv ? vh.data<T>() + b * vrows * n : nullptr;
      R* sb = s.data<R>() + b * k;
      int32_t* ib = info.data<int32_t>() + b;
      if (!all_finite(ab, m * n)) {
        *ib = 0;
        fill_nan(sb, k);
        if (uv) fill_nan(ub, m * ucols), fill_nan(vb, vrows * n);
        continue;
      }
      svd_one(ab, m, n, ub, ucols, sb, vb, vrows, uv, ib);
    }
  });
}

// ---- Hermitian eigen-decomposition ----------------------------------------------------------

template <typename T>
void eigh_one(const T* a, int64_t n, real_of<T>* w, T* vout, bool lower, int32_t* info) {
  using R = real_of<T>;
  R big = 0;  // the largest magnitude of the triangle read, to scale by as svd_one does
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j <= i; ++j) big = std::max(big, std::abs(lower ? a[i * n + j] : a[j * n + i]));
  const R inv = big > 0 ? R(1) / big : R(1);
  std::vector<T> h(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {  // the Hermitian matrix the chosen triangle stands for
    h[i * n + i] = T(std::real(a[i * n + i]) * inv);
    for (int64_t j = 0; j < i; ++j) {
      const T below = (lower ? a[i * n + j] : conj_value(a[j * n + i])) * inv;
      h[i * n + j] = below;
      h[j * n + i] = conj_value(below);
    }
  }
  std::vector<T> v;
  if (vout) {
    v.assign(static_cast<size_t>(n * n), T(0));
    for (int64_t i = 0; i < n; ++i) v[i * n + i] = T(1);
  }
  const R eps = std::numeric_limits<R>::epsilon();
  const R tiny = std::numeric_limits<R>::min();
  *info = 1;
  for (int sweep = 0; sweep < kMaxSweeps && *info != 0; ++sweep) {
    bool rotated = false;
    for (int64_t p = 0; p + 1 < n; ++p) {
      for (int64_t q = p + 1; q < n; ++q) {
        const T apq = h[p * n + q];
        const R g = std::abs(apq);
        const R app = std::real(h[p * n + p]), aqq = std::real(h[q * n + q]);
        if (!(g > eps * std::sqrt(std::abs(app)) * std::sqrt(std::abs(aqq))) || !(g > tiny)) continue;
        const R zeta = (aqq - app) / (2 * g);
        if (!std::isfinite(zeta)) {  // negligible beside the diagonal gap
          h[p * n + q] = h[q * n + p] = T(0);
          continue;
        }
        rotated = true;
        R c, sn;
        jacobi_angle(zeta, c, sn);
        const T ph = apq / g;
        // H <- J^H H J with J = [[c, s ph], [-s conj(ph), c]] on (p, q); V <- V J
        rotate(h.data() + p, h.data() + q, n, n, c, sn, ph);                      // columns p, q
        rotate(h.data() + p * n, h.data() + q * n, n, 1, c, sn, conj_value(ph));  // rows p, q (by J^H)
        h[p * n + q] = h[q * n + p] = T(0);
        h[p * n + p] = T(std::real(h[p * n + p]));
        h[q * n + q] = T(std::real(h[q * n + q]));
        if (vout) rotate(v.data() + p, v.data() + q, n, n, c, sn, ph);
      }
    }
    if (!rotated) *info = 0;
  }
  std::vector<R> d(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) d[i] = std::real(h[i * n + i]);
  const std::vector<int64_t> order = order_of(d, [](R x, R y) { return x < y; });
  for (int64_t i = 0; i < n; ++i) w[i] = d[order[i]] * big;
  if (vout)
    for (int64_t r = 0; r < n; ++r)
      for (int64_t c = 0; c < n; ++c) vout[r * n + c] = v[r * n + order[c]];
}

template <typename T>
void eigh_typed(const Tensor& a, const Tensor& w, const Tensor& v, const Tensor& info, bool lower) {
  using R = real_of<T>;
  const int64_t batch = a.size(0), n = a.size(1);
  parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const T* ab = a.data<T>() + b * n * n;
      T* vb = v.defined() ? v.data<T>() + b * n * n : nullptr;
      R* wb = w.data<R>() + b * n;
      int32_t* ib = info.data<int32_t>() + b;
      bool finite = true;  // only the triangle that is read counts
      for (int64_t i = 0; i < n && finite; ++i)
        for (int64_t j = 0; j <= i && finite; ++j) {
          const T x = lower ? ab[i * n + j] : ab[j * n + i];
          finite = std::isfinite(std::real(x)) && std::isfinite(std::imag(x));
        }
      if (!finite) {
        *ib = 0;
        fill_nan(wb, n);
        if (vb) fill_nan(vb, n * n);
        continue;
      }
      eigh_one(ab, n, wb, vb, lower, ib);
    }
  });
}

// ---- Householder QR -------------------------------------------------------------------------

// Makes the reflector H = I - tau v v^H with H^H x = (beta, 0, ...), beta real, v[0] = 1
// (LAPACK's larfg). x has `len` entries `stride` apart; v overwrites x[1:], beta x[0].
template <typename T>
T householder(T* x, int64_t len, int64_t stride) {
  using R = real_of<T>;
  const T alpha = x[0];
  R big = std::abs(alpha);  // norms in units of the largest entry, so squares cannot overflow
  for (int64_t i = 1; i < len; ++i) big = std::max(big, std::abs(x[i * stride]));
  if (big == 0) return T(0);
  R rest = 0;
  for (int64_t i = 1; i < len; ++i) rest += abs2(x[i * stride] / big);
  if (rest == 0 && std::imag(alpha) == 0) return T(0);
  const R beta = -std::copysign(big * std::sqrt(abs2(alpha / big) + rest), std::real(alpha));
  const T tau = (T(beta) - alpha) / T(beta);
  const T scale = T(1) / (alpha - T(beta));
  for (int64_t i = 1; i < len; ++i) x[i * stride] *= scale;
  x[0] = T(beta);
  return tau;
}

// Applies (I - f v v^H) from the left to columns [c0, c1) of rows [r0, r0 + len) of the
// row-major m (row length ld); v has `len` entries (v[0] = 1 implied) `stride` apart from vp.
template <typename T>
void reflect_left(T* m, int64_t ld, int64_t r0, int64_t len, int64_t c0, int64_t c1, const T* vp,
                  int64_t stride, T f) {
  if (f == T(0)) return;
  for (int64_t c = c0; c < c1; ++c) {
    T dot = m[r0 * ld + c];
    for (int64_t i = 1; i < len; ++i) dot += conj_value(vp[i * stride]) * m[(r0 + i) * ld + c];
    const T fd = f * dot;
    m[r0 * ld + c] -= fd;
    for (int64_t i = 1; i < len; ++i) m[(r0 + i) * ld + c] -= vp[i * stride] * fd;
  }
}

// Applies (I - f v v^H) from the right to rows [r0, r1) and columns [c0, c0 + len).
template <typename T>
void reflect_right(T* m, int64_t ld, int64_t r0, int64_t r1, int64_t c0, int64_t len, const T* vp,
                   int64_t stride, T f) {
  if (f == T(0)) return;
  for (int64_t r = r0; r < r1; ++r) {
    T* row = m + r * ld + c0;
    T dot = row[0];
    for (int64_t i = 1; i < len; ++i) dot += row[i] * vp[i * stride];
    const T fd = f * dot;
    row[0] -= fd;
    for (int64_t i = 1; i < len; ++i) row[i] -= fd * conj_value(vp[i * stride]);
  }
}

template <typename T>
void geqrf_typed(const Tensor& a, const Tensor& tau) {
  const int64_t batch = a.size(0), m = a.size(1), n = a.size(2), k = std::min(m, n);
  parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      T* x = a.data<T>() + b * m * n;
      T* tb = tau.data<T>() + b * k;
      for (int64_t j = 0; j < k; ++j) {
        tb[j] = householder(x + j * n + j, m - j, n);
        // the rest of the columns get H^H = I - conj(tau) v v^H
        reflect_left(x, n, j, m - j, j + 1, n, x + j * n + j, n, conj_value(tb[j]));
      }
    }
  });
}

template <typename T>
void orgqr_typed(const Tensor& qt, const Tensor& tau) {
  const int64_t batch = qt.size(0), m = qt.size(1), n = qt.size(2), k = tau.size(1);
  parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      T* q = qt.data<T>() + b * m * n;
      const T* tb = tau.data<T>() + b * k;
      for (int64_t j = k; j < n; ++j)  // columns past the reflectors start as the identity's
        for (int64_t i = 0; i < m; ++i) q[i * n + j] = T(i == j ? 1 : 0);
      for (int64_t i = k - 1; i >= 0; --i) {  // Q = H_1 (H_2 (... H_k I))
        reflect_left(q, n, i, m - i, i + 1, n, q + i * n + i, n, tb[i]);
        for (int64_t r = i + 1; r < m; ++r) q[r * n + i] *= -tb[i];
        q[i * n + i] = T(1) - tb[i];
        for (int64_t r = 0; r < i; ++r) q[r * n + i] = T(0);
      }
    }
  });
}

// ---- general eigen-decomposition (complex arithmetic) ---------------------------------------

template <typename C>
void eig_one(C* h, int64_t n, C* w, C* vout, int32_t* info) {
  using R = real_of<C>;
  const R eps = std::numeric_limits<R>::epsilon();
  const R small = std::numeric_limits<R>::min() / eps;
  const bool vectors = vout != nullptr;
  std::vector<C> z;
  if (vectors) {
    z.assign(static_cast<size_t>(n * n), C(0));
    for (int64_t i = 0; i < n; ++i) z[i * n + i] = C(1);
  }
  // Hessenberg form H = Q^H A Q by reflectors on rows / columns j+1..n-1; Z accumulates Q.
  for (int64_t j = 0; j + 2 < n; ++j) {
    C* x = h + (j + 1) * n + j;
    const C tau = householder(x, n - j - 1, n);
    if (tau == C(0)) continue;
    std::vector<C> vec(static_cast<size_t>(n - j - 1));
    vec[0] = C(1);
    for (int64_t i = 1; i < n - j - 1; ++i) vec[i] = x[i * n], x[i * n] = C(0);
    reflect_left(h, n, j + 1, n - j - 1, j + 1, n, vec.data(), 1, std::conj(tau));
    reflect_right(h, n, 0, n, j + 1, n - j - 1, vec.data(), 1, tau);
    if (vectors) reflect_right(z.data(), n, 0, n, j + 1, n - j - 1, vec.data(), 1, tau);
  }
  // Shifted QR on the active block [lo, hi]; all of T is kept when the eigenvectors are wanted.
  *info = 0;
  int64_t hi = n - 1, iter = 0, total = 0;
  const int64_t max_total = 30 * std::max<int64_t>(n, 10);
  while (hi > 0) {
    int64_t lo = hi;
    for (; lo > 0; --lo) {
      const R sub = std::abs(h[lo * n + lo - 1]);
      const R around = std::abs(h[(lo - 1) * n + lo - 1]) + std::abs(h[lo * n + lo]);
      if (sub <= eps * around || sub <= small) {
        h[lo * n + lo - 1] = C(0);
        break;
      }
    }
    if (lo == hi) {  // h[hi][hi] is an eigenvalue
      --hi;
      iter = 0;
      continue;
    }
    if (++total > max_total) {
      *info = static_cast<int32_t>(hi + 1);
      break;
    }
    ++iter;
    C mu;
    if (iter % 11 == 0) {  // an exceptional shift breaks a cycle
      mu = h[hi * n + hi] + C(R(0.75) * std::abs(h[hi * n + hi - 1]));
    } else {  // Wilkinson: the eigenvalue of the trailing 2x2 nearer its last diagonal entry
      const C a = h[(hi - 1) * n + hi - 1], bb = h[(hi - 1) * n + hi], c = h[hi * n + hi - 1],
              d = h[hi * n + hi];
      const C half = (a - d) / R(2);
      const C root = std::sqrt(half * half + bb * c);
      const C m1 = (a + d) / R(2) + root, m2 = (a + d) / R(2) - root;
      mu = std::abs(m1 - d) < std::abs(m2 - d) ? m1 : m2;
    }
    C x = h[lo * n + lo] - mu, y = h[(lo + 1) * n + lo];
    for (int64_t k = lo; k < hi; ++k) {
      if (k > lo) x = h[k * n + k - 1], y = h[(k + 1) * n + k - 1];
      // G = [[c, s], [-conj(s), c]] with G (x, y) = (r, 0)
      const R ax = std::abs(x), norm = std::hypot(ax, std::abs(y));
      if (norm == 0) continue;
      R c;
      C s;
      if (ax == 0) {
        c = 0, s = std::conj(y) / std::abs(y);
      } else {
        c = ax / norm, s = (x / ax) * std::conj(y) / norm;
      }
      // Without vectors only the active block matters (LAPACK's wantt = false); with them all of T.
      const int64_t row_end = vectors ? n : hi + 1, col_begin = vectors ? 0 : lo;
      for (int64_t j = (k > lo ? k - 1 : lo); j < row_end; ++j) {  // rows k, k+1 by G
        const C r0 = h[k * n + j], r1 = h[(k + 1) * n + j];
        h[k * n + j] = c * r0 + s * r1;
        h[(k + 1) * n + j] = -std::conj(s) * r0 + c * r1;
      }
      if (k > lo) h[(k + 1) * n + k - 1] = C(0);
      const int64_t last = std::min(k + 2, hi);
      for (int64_t i = col_begin; i <= last; ++i) {  // columns k, k+1 by G^H
        const C c0 = h[i * n + k], c1 = h[i * n + k + 1];
        h[i * n + k] = c * c0 + std::conj(s) * c1;
        h[i * n + k + 1] = -s * c0 + c * c1;
      }
      if (vectors)
        for (int64_t i = 0; i < n; ++i) {
          const C c0 = z[i * n + k], c1 = z[i * n + k + 1];
          z[i * n + k] = c * c0 + std::conj(s) * c1;
          z[i * n + k + 1] = -s * c0 + c * c1;
        }
    }
  }
  for (int64_t i = 0; i < n; ++i) w[i] = h[i * n + i];
  if (!vectors || *info != 0) return;
  // T x = lambda_k x with x_k = 1 and x_j = 0 below k; back substitution upwards.
  R tnorm = 0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i; j < n; ++j) tnorm = std::max(tnorm, std::abs(h[i * n + j]));
  const R floor = std::max(eps * tnorm, small);
  std::vector<C> xs(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    std::fill(xs.begin(), xs.end(), C(0));
    xs[k] = C(1);
    for (int64_t j = k - 1; j >= 0; --j) {
      C sum = 0;
      for (int64_t l = j + 1; l <= k; ++l) sum += h[j * n + l] * xs[l];
      C d = h[j * n + j] - w[k];
      if (std::abs(d) < floor) d = C(floor);  // a repeated eigenvalue: perturb as LAPACK's trevc does
      xs[j] = -sum / d;
    }
    // v = Z x, unit norm, its largest entry real and positive
    R norm = 0, biggest = -1;
    C phase = 1;
    for (int64_t i = 0; i < n; ++i) {
      C sum = 0;
      for (int64_t l = 0; l <= k; ++l) sum += z[i * n + l] * xs[l];
      vout[i * n + k] = sum;
      norm += std::norm(sum);
      if (std::abs(sum) > biggest) biggest = std::abs(sum), phase = sum;
    }
    const C scale = std::abs(phase) > 0 ? std::conj(phase) / std::abs(phase) / std::sqrt(norm) : C(1);
    for (int64_t i = 0; i < n; ++i) vout[i * n + k] *= scale;
  }
}

template <typename C>
void eig_typed(const Tensor& a, const Tensor& w, const Tensor& v, const Tensor& info) {
  const int64_t batch = a.size(0), n = a.size(1);
  parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      C* ab = a.data<C>() + b * n * n;
      C* vb = v.defined() ? v.data<C>() + b * n * n : nullptr;
      C* wb = w.data<C>() + b * n;
      int32_t* ib = info.data<int32_t>() + b;
      if (!all_finite(ab, n * n)) {
        *ib = 0;
        fill_nan(wb, n);
        if (vb) fill_nan(vb, n * n);
        continue;
      }
      // in units of the largest entry (eigenvalues scale with A, vectors do not)
      const real_of<C> big = largest(ab, n * n);
      if (big > 0)
        for (int64_t i = 0; i < n * n; ++i) ab[i] /= big;
      eig_one(ab, n, wb, vb, ib);
      if (big > 0)
        for (int64_t i = 0; i < n; ++i) wb[i] *= big;
    }
  });
}

void svd_kernel(const Tensor& a, const Tensor& u, const Tensor& s, const Tensor& vh, const Tensor& info,
                bool uv) {
  visit<kFloats | kComplex>(a.dtype(), "linalg.svd", [&](auto tag) {
    svd_typed<typename decltype(tag)::type>(a, u, s, vh, info, uv);
  });
}

void eigh_kernel(const Tensor& a, const Tensor& w, const Tensor& v, const Tensor& info, bool lower) {
  visit<kFloats | kComplex>(a.dtype(), "linalg.eigh", [&](auto tag) {
    eigh_typed<typename decltype(tag)::type>(a, w, v, info, lower);
  });
}

void geqrf_kernel(const Tensor& a, const Tensor& tau) {
  visit<kFloats | kComplex>(a.dtype(), "linalg.qr",
                            [&](auto tag) { geqrf_typed<typename decltype(tag)::type>(a, tau); });
}

void orgqr_kernel(const Tensor& q, const Tensor& tau) {
  visit<kFloats | kComplex>(q.dtype(), "linalg.householder_product",
                            [&](auto tag) { orgqr_typed<typename decltype(tag)::type>(q, tau); });
}

void eig_kernel(const Tensor& a, const Tensor& w, const Tensor& v, const Tensor& info) {
  visit<kComplex>(a.dtype(), "linalg.eig",
                  [&](auto tag) { eig_typed<typename decltype(tag)::type>(a, w, v, info); });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(svd_stub, &svd_kernel);
EMBER_REGISTER_CPU_KERNEL(eigh_stub, &eigh_kernel);
EMBER_REGISTER_CPU_KERNEL(geqrf_stub, &geqrf_kernel);
EMBER_REGISTER_CPU_KERNEL(orgqr_stub, &orgqr_kernel);
EMBER_REGISTER_CPU_KERNEL(eig_stub, &eig_kernel);

}  // namespace ember::EMBER_CPU_NS
