// CPU kernels of the ember.linalg decompositions (interfaces in src/ops/kernels.h) on LAPACK
// (backend/cpu/blas.h), over a batch of contiguous row-major matrices (blas::for_each_problem
// spreads them over threads): SVD by gesdd (gesvd where gesdd does not converge), Hermitian
// eigen-decomposition by syevd / heevd, Householder QR by geqrf and orgqr / ungqr, general
// eigen-decomposition by geev, LDL factorization and solve by sytrf / hetrf and sytrs / hetrs.
//
// Note [row-major LAPACK]: a row-major matrix's storage is its transpose's in column-major. Each
// routine runs on a column-major copy (blas::transpose: O(mn) beside the O(mn min(m, n))
// factorization), and its results are transposed back. Factoring the transpose instead would
// give valid decompositions too, but not the ones PyTorch and NumPy return (which call LAPACK on
// A itself): the singular and eigenvectors' phases and signs would differ from theirs.
//
// LAPACK may loop or fail on NaN and infinity; a matrix holding one gets NaN outputs (info 0)
// without a call, as PyTorch's kernels give.
#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>
#include <vector>

#include "backend/cpu/blas.h"
#include "ember/error.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <typename T>
using Real = blas::lapack::Real<T>;

template <typename T>
bool all_finite(const T* m, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (!std::isfinite(std::real(m[i])) || !std::isfinite(std::imag(m[i]))) return false;
  return true;
}

template <typename T>
void fill_nan(T* p, int64_t count) {
  std::fill(p, p + count, T(std::numeric_limits<Real<T>>::quiet_NaN()));
}

// A negative info is a wrong argument: a bug here, not a property of the input.
void check_arguments(const char* op, const char* routine, int info) {
  EMBER_CHECK(info >= 0, Error, "[", op, "] internal error: LAPACK's ", routine, " rejected argument ",
              -info);
}

// LAPACK workspaces, sized by one query and reused for every matrix of a task.
template <typename T>
struct Workspace {
  std::vector<T> work;
  std::vector<Real<T>> rwork;
  std::vector<int32_t> iwork;
  void size(T w, int64_t rsize = 0, int64_t isize = 0) {
    work.resize(static_cast<size_t>(blas::lapack::work_size(w)));
    rwork.resize(static_cast<size_t>(std::max<int64_t>(rsize, 1)));
    iwork.resize(static_cast<size_t>(std::max<int64_t>(isize, 1)));
  }
  int64_t lwork() const { return static_cast<int64_t>(work.size()); }
};

template <typename T>
void set_identity(T* m, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) m[i * cols + j] = T(i == j ? 1 : 0);
}

// ---- SVD ----------------------------------------------------------------------------------------

template <typename T>
void svd_typed(const Tensor& a, const Tensor& u, const Tensor& s, const Tensor& vh, const Tensor& info,
               bool uv) {
  using R = Real<T>;
  const int64_t batch = a.size(0), m = a.size(1), n = a.size(2), k = std::min(m, n);
  const int64_t ucols = uv ? u.size(2) : 0, vrows = uv ? vh.size(1) : 0;
  const char job = !uv ? 'N' : ucols == m && vrows == n ? 'A' : 'S';
  const int64_t lrwork = !is_complex_v<T> ? 0
                         : !uv            ? 7 * k
                               : std::max(5 * k * k + 5 * k, 2 * std::max(m, n) * k + 2 * k * k + k);
  blas::for_each_problem(batch, m * n * k, [&](int64_t begin, int64_t end) {
    // column-major copies of A (and, for gesvd, a second), U and V^H
    std::vector<T> col(static_cast<size_t>(m * n)), saved,
        ucol(static_cast<size_t>(std::max<int64_t>(m * ucols, 1))),
        vcol(static_cast<size_t>(std::max<int64_t>(vrows * n, 1)));
    const int64_t ldvt = std::max<int64_t>(uv ? vrows : 1, 1);
    Workspace<T> ws;
    T query{};
    R rdummy{};
    int32_t idummy = 0;
    if (k > 0) {
      check_arguments("linalg.svd", "gesdd",
                      blas::lapack::gesdd<T>(job, m, n, col.data(), m, &rdummy, ucol.data(), m, vcol.data(),
                                             ldvt, &query, -1, &rdummy, &idummy));
    }
    ws.size(query, lrwork, 8 * k);
    for (int64_t b = begin; b < end; ++b) {
      const T* ab = a.data<T>() + b * m * n;
      T* ub = uv ? u.data<T>() + b * m * ucols : nullptr;
      T* vb = uv ? vh.data<T>() + b * vrows * n : nullptr;
      R* sb = s.data<R>() + b * k;
      info.data<int32_t>()[b] = 0;
      if (k == 0) {  // no singular values; the full factors are still bases
        if (uv) set_identity(ub, m, ucols), set_identity(vb, vrows, n);
        continue;
      }
      if (!all_finite(ab, m * n)) {
        fill_nan(sb, k);
        if (uv) fill_nan(ub, m * ucols), fill_nan(vb, vrows * n);
        continue;
      }
      blas::transpose(m, n, ab, col.data());
      saved = col;  // gesdd overwrites it
      int code = blas::lapack::gesdd(job, m, n, col.data(), m, sb, ucol.data(), m, vcol.data(), ldvt,
                                     ws.work.data(), ws.lwork(), ws.rwork.data(), ws.iwork.data());
      check_arguments("linalg.svd", "gesdd", code);
      if (code > 0) {  // divide and conquer did not converge: QR iteration instead, as PyTorch does
        T q{};
        blas::lapack::gesvd<T>(job, job, m, n, saved.data(), m, sb, ucol.data(), m, vcol.data(), ldvt, &q, -1,
                               &rdummy);
        std::vector<T> work(static_cast<size_t>(blas::lapack::work_size(q)));
        std::vector<R> rwork(static_cast<size_t>(5 * k));
        code = blas::lapack::gesvd(job, job, m, n, saved.data(), m, sb, ucol.data(), m, vcol.data(), ldvt,
                                   work.data(), static_cast<int64_t>(work.size()), rwork.data());
        check_arguments("linalg.svd", "gesvd", code);
      }
      info.data<int32_t>()[b] = code;
      if (uv) {
        blas::transpose(ucols, m, ucol.data(), ub);
        blas::transpose(n, vrows, vcol.data(), vb);
      }
    }
  });
}

// ---- Hermitian eigen-decomposition --------------------------------------------------------------

template <typename T>
void eigh_typed(const Tensor& a, const Tensor& w, const Tensor& v, const Tensor& info, bool lower) {
  using R = Real<T>;
  const int64_t batch = a.size(0), n = a.size(1);
  const bool vectors = v.defined();
  const char jobz = vectors ? 'V' : 'N', uplo = lower ? 'L' : 'U';
  blas::for_each_problem(batch, n * n * n, [&](int64_t begin, int64_t end) {
    if (n == 0) return;
    std::vector<T> col(static_cast<size_t>(n * n));
    Workspace<T> ws;
    T query{};
    R rquery{}, rdummy{};
    int32_t iquery = 0;
    check_arguments(
        "linalg.eigh", "syevd",
        blas::lapack::syevd<T>(jobz, uplo, n, col.data(), n, &rdummy, &query, -1, &rquery, -1, &iquery, -1));
    ws.size(query, blas::lapack::work_size(rquery), iquery);
    for (int64_t b = begin; b < end; ++b) {
      const T* ab = a.data<T>() + b * n * n;
      R* wb = w.data<R>() + b * n;
      info.data<int32_t>()[b] = 0;
      bool finite = true;  // only the triangle that is read counts
      for (int64_t i = 0; i < n && finite; ++i)
        finite = lower ? all_finite(ab + i * n, i + 1) : all_finite(ab + i * n + i, n - i);
      if (!finite) {
        fill_nan(wb, n);
        if (vectors) fill_nan(v.data<T>() + b * n * n, n * n);
        continue;
      }
      blas::transpose(n, n, ab, col.data());
      const int code = blas::lapack::syevd(jobz, uplo, n, col.data(), n, wb, ws.work.data(), ws.lwork(),
                                           ws.rwork.data(), static_cast<int64_t>(ws.rwork.size()),
                                           ws.iwork.data(), static_cast<int64_t>(ws.iwork.size()));
      check_arguments("linalg.eigh", "syevd", code);
      info.data<int32_t>()[b] = code;
      if (vectors) blas::transpose(n, n, col.data(), v.data<T>() + b * n * n);
    }
  });
}

// ---- Householder QR -----------------------------------------------------------------------------

// Small matrices run the loops below (Note [small matrices] in linalg_kernels.cpp), which follow
// LAPACK's geqr2 / org2r: the same reflectors and the same Q and R to rounding.
constexpr int64_t kSmallQrWork = 8192;  // m * n * min(m, n) (about 20 x 20)

// The reflector H = I - tau v v^H with H^H x = (beta, 0, ...), beta real, v[0] = 1 (LAPACK's
// larfg). x has `len` entries `stride` apart; v overwrites x[1:], beta x[0].
template <typename T>
T householder(T* x, int64_t len, int64_t stride) {
  using R = Real<T>;
  const T alpha = x[0];
  R big = std::abs(alpha);  // norms in units of the largest entry, so squares cannot overflow
  for (int64_t i = 1; i < len; ++i) big = std::max(big, std::abs(x[i * stride]));
  if (big == 0) return T(0);
  R rest = 0;
  for (int64_t i = 1; i < len; ++i) rest += std::norm(x[i * stride] / big);
  if (rest == 0 && std::imag(alpha) == 0) return T(0);
  const R beta = -std::copysign(big * std::sqrt(std::norm(alpha / big) + rest), std::real(alpha));
  const T scale = T(1) / (alpha - T(beta));
  for (int64_t i = 1; i < len; ++i) x[i * stride] *= scale;
  x[0] = T(beta);
  return (T(beta) - alpha) / T(beta);
}

// Applies I - f v v^H from the left to columns [c0, n) of rows [r0, r0 + len) of the row-major
// m (n columns); v is column r0's part below row r0 (v[0] = 1 implied).
template <typename T>
void reflect_left(T* m, int64_t n, int64_t r0, int64_t len, int64_t c0, T f) {
  if (f == T(0)) return;
  for (int64_t c = c0; c < n; ++c) {
    T dot = m[r0 * n + c];
    for (int64_t i = 1; i < len; ++i) dot += conj_value(m[(r0 + i) * n + r0]) * m[(r0 + i) * n + c];
    const T fd = f * dot;
    m[r0 * n + c] -= fd;
    for (int64_t i = 1; i < len; ++i) m[(r0 + i) * n + c] -= m[(r0 + i) * n + r0] * fd;
  }
}

template <typename T>
void small_geqrf(T* x, int64_t m, int64_t n, T* tau) {
  for (int64_t j = 0; j < std::min(m, n); ++j) {
    tau[j] = householder(x + j * n + j, m - j, n);
    reflect_left(x, n, j, m - j, j + 1, conj_value(tau[j]));  // H^H on the columns to the right
  }
}

template <typename T>
void small_orgqr(T* q, int64_t m, int64_t n, int64_t k, const T* tau) {
  for (int64_t j = k; j < n; ++j)  // columns past the reflectors start as the identity's
    for (int64_t i = 0; i < m; ++i) q[i * n + j] = T(i == j ? 1 : 0);
  for (int64_t i = k - 1; i >= 0; --i) {  // Q = H_1 (H_2 (... H_k I))
    reflect_left(q, n, i, m - i, i + 1, tau[i]);
    for (int64_t r = i + 1; r < m; ++r) q[r * n + i] *= -tau[i];
    q[i * n + i] = T(1) - tau[i];
    for (int64_t r = 0; r < i; ++r) q[r * n + i] = T(0);
  }
}

template <typename T>
void geqrf_typed(const Tensor& a, const Tensor& tau) {
  const int64_t batch = a.size(0), m = a.size(1), n = a.size(2), k = std::min(m, n);
  const bool small = m * n * k <= kSmallQrWork;
  blas::for_each_problem(batch, m * n * k, [&](int64_t begin, int64_t end) {
    Workspace<T> ws;
    std::vector<T> col(small ? 0 : static_cast<size_t>(m * n));
    if (!small) {
      T query{}, dummy{};
      check_arguments("linalg.qr", "geqrf", blas::lapack::geqrf<T>(m, n, col.data(), m, &dummy, &query, -1));
      ws.size(query);
    }
    for (int64_t b = begin; b < end; ++b) {
      T* x = a.data<T>() + b * m * n;
      if (small) {
        small_geqrf(x, m, n, tau.data<T>() + b * k);
        continue;
      }
      blas::transpose(m, n, x, col.data());
      check_arguments(
          "linalg.qr", "geqrf",
          blas::lapack::geqrf(m, n, col.data(), m, tau.data<T>() + b * k, ws.work.data(), ws.lwork()));
      blas::transpose(n, m, col.data(), x);
    }
  });
}

template <typename T>
void orgqr_typed(const Tensor& qt, const Tensor& tau) {
  const int64_t batch = qt.size(0), m = qt.size(1), n = qt.size(2), k = tau.size(1);
  const bool small = m * n * k <= kSmallQrWork;
  blas::for_each_problem(batch, m * n * k, [&](int64_t begin, int64_t end) {
    Workspace<T> ws;
    std::vector<T> col(small ? 0 : static_cast<size_t>(m * n));
    if (!small) {
      T query{}, dummy{};
      check_arguments("linalg.householder_product", "orgqr",
                      blas::lapack::orgqr<T>(m, n, k, col.data(), m, &dummy, &query, -1));
      ws.size(query);
    }
    for (int64_t b = begin; b < end; ++b) {
      T* q = qt.data<T>() + b * m * n;
      if (small) {
        small_orgqr(q, m, n, k, tau.data<T>() + b * k);
        continue;
      }
      blas::transpose(m, n, q, col.data());
      check_arguments(
          "linalg.householder_product", "orgqr",
          blas::lapack::orgqr(m, n, k, col.data(), m, tau.data<T>() + b * k, ws.work.data(), ws.lwork()));
      blas::transpose(n, m, col.data(), q);
    }
  });
}

// ---- LDL ----------------------------------------------------------------------------------------

template <typename T>
void ldl_factor_typed(const Tensor& a, const Tensor& pivots, const Tensor& info, bool hermitian) {
  const int64_t batch = a.size(0), n = a.size(1);
  blas::for_each_problem(batch, n * n * n, [&](int64_t begin, int64_t end) {
    if (n == 0) return;
    std::vector<T> col(static_cast<size_t>(n * n));
    Workspace<T> ws;
    T query{};
    int32_t dummy = 0;
    check_arguments("linalg.ldl_factor", "sytrf",
                    blas::lapack::sytrf<T>('L', hermitian, n, col.data(), n, &dummy, &query, -1));
    ws.size(query);
    for (int64_t b = begin; b < end; ++b) {
      T* x = a.data<T>() + b * n * n;
      blas::transpose(n, n, x, col.data());
      const int code = blas::lapack::sytrf('L', hermitian, n, col.data(), n, pivots.data<int32_t>() + b * n,
                                           ws.work.data(), ws.lwork());
      check_arguments("linalg.ldl_factor", "sytrf", code);
      info.data<int32_t>()[b] = code;
      blas::transpose(n, n, col.data(), x);
    }
  });
}

template <typename T>
void ldl_solve_typed(const Tensor& ld, const Tensor& pivots, const Tensor& b, bool hermitian) {
  const int64_t batch = b.size(0), n = b.size(1), k = b.size(2);
  blas::for_each_problem(batch, n * n * k, [&](int64_t begin, int64_t end) {
    if (n == 0 || k == 0) return;
    std::vector<T> a_col(static_cast<size_t>(n * n)), b_col(static_cast<size_t>(n * k));
    for (int64_t s = begin; s < end; ++s) {
      T* x = b.data<T>() + s * n * k;
      blas::transpose(n, n, ld.data<T>() + s * n * n, a_col.data());
      blas::transpose(n, k, x, b_col.data());
      check_arguments("linalg.ldl_solve", "sytrs",
                      blas::lapack::sytrs('L', hermitian, n, k, a_col.data(), n,
                                          pivots.data<int32_t>() + s * n, b_col.data(), n));
      blas::transpose(k, n, b_col.data(), x);
    }
  });
}

// ---- general eigen-decomposition ----------------------------------------------------------------

// geev on a column-major copy; its eigenvectors have unit norm and their largest entry real.
// Real input gives LAPACK's packed pairs: columns j, j+1 hold the real and imaginary parts of the
// vector of w[j] (its conjugate belongs to w[j+1]).
template <typename T>
void eig_typed(const Tensor& a, const Tensor& w, const Tensor& v, const Tensor& info) {
  using R = Real<T>;
  using C = std::complex<R>;
  const int64_t batch = a.size(0), n = a.size(1);
  const bool vectors = v.defined();
  const char jobvr = vectors ? 'V' : 'N';
  blas::for_each_problem(batch, 10 * n * n * n, [&](int64_t begin, int64_t end) {
    Workspace<T> ws;
    std::vector<T> col(static_cast<size_t>(n * n)), vr(static_cast<size_t>(vectors ? n * n : 1));
    std::vector<C> wq(static_cast<size_t>(n));
    std::vector<R> rq(static_cast<size_t>(2 * n));
    T query{};
    check_arguments(
        "linalg.eig", "geev",
        blas::lapack::geev<T>(jobvr, n, col.data(), n, wq.data(), vr.data(), n, &query, -1, rq.data()));
    ws.size(query, 2 * n);
    for (int64_t b = begin; b < end; ++b) {
      const T* ab = a.data<T>() + b * n * n;
      C* vb = vectors ? v.data<C>() + b * n * n : nullptr;
      C* wb = w.data<C>() + b * n;
      info.data<int32_t>()[b] = 0;
      if (!all_finite(ab, n * n)) {
        fill_nan(wb, n);
        if (vb) fill_nan(vb, n * n);
        continue;
      }
      blas::transpose(n, n, ab, col.data());
      const int code = blas::lapack::geev(jobvr, n, col.data(), n, wb, vr.data(), n, ws.work.data(),
                                          ws.lwork(), ws.rwork.data());
      check_arguments("linalg.eig", "geev", code);
      info.data<int32_t>()[b] = code;
      if (!vb || code != 0) continue;
      for (int64_t j = 0; j < n; ++j) {
        const T* re = vr.data() + j * n;  // column j
        if constexpr (is_complex_v<T>) {
          for (int64_t r = 0; r < n; ++r) vb[r * n + j] = re[r];
        } else if (std::imag(wb[j]) == 0 || j + 1 == n) {
          for (int64_t r = 0; r < n; ++r) vb[r * n + j] = C(re[r]);
        } else {  // a conjugate pair
          const T* im = re + n;
          for (int64_t r = 0; r < n; ++r) {
            vb[r * n + j] = C(re[r], im[r]);
            vb[r * n + j + 1] = C(re[r], -im[r]);
          }
          ++j;
        }
      }
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

void ldl_factor_kernel(const Tensor& a, const Tensor& pivots, const Tensor& info, bool hermitian) {
  visit<kFloats | kComplex>(a.dtype(), "linalg.ldl_factor", [&](auto tag) {
    ldl_factor_typed<typename decltype(tag)::type>(a, pivots, info, hermitian);
  });
}

void ldl_solve_kernel(const Tensor& ld, const Tensor& pivots, const Tensor& b, bool hermitian) {
  visit<kFloats | kComplex>(ld.dtype(), "linalg.ldl_solve", [&](auto tag) {
    ldl_solve_typed<typename decltype(tag)::type>(ld, pivots, b, hermitian);
  });
}

void eig_kernel(const Tensor& a, const Tensor& w, const Tensor& v, const Tensor& info) {
  visit<kFloats | kComplex>(a.dtype(), "linalg.eig",
                            [&](auto tag) { eig_typed<typename decltype(tag)::type>(a, w, v, info); });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(svd_stub, &svd_kernel);
EMBER_REGISTER_CPU_KERNEL(eigh_stub, &eigh_kernel);
EMBER_REGISTER_CPU_KERNEL(geqrf_stub, &geqrf_kernel);
EMBER_REGISTER_CPU_KERNEL(orgqr_stub, &orgqr_kernel);
EMBER_REGISTER_CPU_KERNEL(eig_stub, &eig_kernel);
EMBER_REGISTER_CPU_KERNEL(ldl_factor_stub, &ldl_factor_kernel);
EMBER_REGISTER_CPU_KERNEL(ldl_solve_stub, &ldl_solve_kernel);

}  // namespace ember::EMBER_CPU_NS
