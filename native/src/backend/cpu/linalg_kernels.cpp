// CPU dense factorizations (interface in src/ops/kernels.h) on LAPACK (backend/cpu/blas.h): LU
// with partial pivoting (getrf), Cholesky (potrf) and triangular solves (trsm), over a batch of
// contiguous row-major matrices (blas::for_each_problem spreads them over threads).
//
// Note [small matrices]: a LAPACK call costs about a microsecond before any arithmetic (argument
// checks, ilaenv, a BLAS call per column), which outweighs the work of a tiny matrix. Below the
// sizes here the textbook loops (Golub & Van Loan 3.2, 4.2, 3.1; Householder QR in
// decomposition_kernels.cpp) are faster, measured with bench_linalg.py on one thread: batches of
// 256 matrices, LU 3x3 0.10 vs 0.16 us, 64x64 39 vs 60 us; Cholesky 16x16 0.6 vs 1.0 us; solve
// 3x3 0.19 vs 0.44 us; QR 8x8 1.3 vs 3.2 us. They give LAPACK's results to rounding: the same
// pivots (the first largest |re| + |im|, as i?amax picks) and the same unique factors.
#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "backend/cpu/blas.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

// Largest sizes of the own kernels (Note [small matrices]).
constexpr int64_t kSmallLuWork = 64 * 64 * 64;  // rows * cols * min(rows, cols)
constexpr int64_t kSmallCholesky = 24;          // n
constexpr int64_t kSmallSolveWork = 64;         // n * n * columns

// i?amax's measure: |re| + |im|.
template <typename T>
double pivot_size(T v) {
  return std::abs(std::real(v)) + std::abs(std::imag(v));
}

// Right-looking LU with partial pivoting of one row-major matrix; returns getrf's info.
template <typename T>
int32_t small_lu(T* m, int64_t rows, int64_t cols, int32_t* p) {
  int32_t info = 0;
  for (int64_t k = 0; k < std::min(rows, cols); ++k) {
    int64_t best = k;
    for (int64_t i = k + 1; i < rows; ++i)
      if (pivot_size(m[i * cols + k]) > pivot_size(m[best * cols + k])) best = i;
    p[k] = static_cast<int32_t>(best + 1);
    if (best != k) std::swap_ranges(m + k * cols, m + (k + 1) * cols, m + best * cols);
    const T pivot = m[k * cols + k];
    if (pivot == T(0)) {  // a singular column: nothing to eliminate with
      if (info == 0) info = static_cast<int32_t>(k + 1);
      continue;
    }
    for (int64_t i = k + 1; i < rows; ++i) {
      const T factor = m[i * cols + k] / pivot;
      m[i * cols + k] = factor;
      for (int64_t j = k + 1; j < cols; ++j) m[i * cols + j] -= factor * m[k * cols + j];
    }
  }
  return info;
}

template <typename T>
void lu_typed(const Tensor& a, const Tensor& pivots, const Tensor& info) {
  const int64_t batch = a.size(0), rows = a.size(1), cols = a.size(2), steps = std::min(rows, cols);
  const bool small = rows * cols * steps <= kSmallLuWork;
  T* base = a.data<T>();
  int32_t* piv = pivots.data<int32_t>();
  int32_t* inf = info.data<int32_t>();
  blas::for_each_problem(batch, rows * cols * steps, [&](int64_t begin, int64_t end) {
    std::vector<T> col(small ? 0 : static_cast<size_t>(rows * cols));  // LAPACK's column-major copy
    for (int64_t b = begin; b < end; ++b) {
      T* m = base + b * rows * cols;
      if (small) {
        inf[b] = small_lu(m, rows, cols, piv + b * steps);
        continue;
      }
      blas::transpose(rows, cols, m, col.data());
      inf[b] = blas::lapack::getrf(rows, cols, col.data(), rows, piv + b * steps);
      blas::transpose(cols, rows, col.data(), m);
    }
  });
}

// The lower factor of one row-major matrix in place (read from its lower triangle); returns
// potrf's info, a NaN pivot failing as a non-positive one.
template <typename T>
int32_t small_cholesky(T* m, int64_t n) {
  using R = blas::lapack::Real<T>;
  for (int64_t j = 0; j < n; ++j) {
    R d = std::real(m[j * n + j]);
    for (int64_t k = 0; k < j; ++k) d -= std::real(m[j * n + k] * conj_value(m[j * n + k]));
    if (!(d > R(0))) return static_cast<int32_t>(j + 1);
    const R root = std::sqrt(d);
    m[j * n + j] = T(root);
    for (int64_t i = j + 1; i < n; ++i) {
      T s = m[i * n + j];
      for (int64_t k = 0; k < j; ++k) s -= m[i * n + k] * conj_value(m[j * n + k]);
      m[i * n + j] = s / root;
    }
  }
  return 0;
}

template <typename T>
void cholesky_typed(const Tensor& a, const Tensor& info) {
  using R = blas::lapack::Real<T>;
  const int64_t batch = a.size(0), n = a.size(1);
  T* base = a.data<T>();
  int32_t* inf = info.data<int32_t>();
  blas::for_each_problem(batch, n * n * n / 3, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      T* m = base + b * n * n;
      if (n <= kSmallCholesky) {
        inf[b] = small_cholesky(m, n);
        for (int64_t i = 0; i < n; ++i) std::fill(m + i * n + i + 1, m + (i + 1) * n, T(0));
        continue;
      }
      // Row-major storage is the column-major transpose, which for a Hermitian A is conj(A):
      // the upper factor U of conj(A) = U^H U, read from A's lower triangle, is stored as
      // L = U^T with L L^H = A.
      int32_t code = blas::lapack::potrf('U', n, m, n);
      // OpenBLAS lets a NaN through its pivot test; the first NaN on L's diagonal is where the
      // factorization failed.
      for (int64_t j = 0; j < n && code == 0; ++j)
        if (!(std::real(m[j * n + j]) > R(0))) code = static_cast<int32_t>(j + 1);
      inf[b] = code;
      for (int64_t i = 0; i < n; ++i)  // the factor is lower triangular
        std::fill(m + i * n + i + 1, m + (i + 1) * n, T(0));
    }
  });
}

// Back or forward substitution: T X = B for row-major t [n, n] and x [n, k], in place of x.
template <typename T>
void small_solve(const T* m, T* x, int64_t n, int64_t k, bool upper, bool unit) {
  for (int64_t step = 0; step < n; ++step) {
    const int64_t i = upper ? n - 1 - step : step;
    for (int64_t c = 0; c < k; ++c) {
      T v = x[i * k + c];
      for (int64_t j = upper ? i + 1 : 0; j < (upper ? n : i); ++j) v -= m[i * n + j] * x[j * k + c];
      x[i * k + c] = unit ? v : v / m[i * n + i];
    }
  }
}

template <typename T>
void triangular_solve_typed(const Tensor& t, const Tensor& b, bool upper, bool unit) {
  const int64_t batch = b.size(0), n = b.size(1), k = b.size(2);
  const bool small = n * n * k <= kSmallSolveWork;
  const T* tb = t.data<T>();
  T* bb = b.data<T>();
  const int64_t t_batch_stride = t.size(0) == 1 ? 0 : n * n;  // one matrix may serve the batch
  blas::for_each_problem(batch, n * n * k, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      if (small) {
        small_solve(tb + s * t_batch_stride, bb + s * n * k, n, k, upper, unit);
      } else {
        blas::trsm(upper, unit, n, k, tb + s * t_batch_stride, n, bb + s * n * k, k);
      }
    }
  });
}

void lu_kernel(const Tensor& a, const Tensor& pivots, const Tensor& info) {
  visit<kFloats | kComplex>(a.dtype(), "linalg.lu_factor",
                            [&](auto tag) { lu_typed<typename decltype(tag)::type>(a, pivots, info); });
}

void cholesky_kernel(const Tensor& a, const Tensor& info) {
  visit<kFloats | kComplex>(a.dtype(), "linalg.cholesky",
                            [&](auto tag) { cholesky_typed<typename decltype(tag)::type>(a, info); });
}

void triangular_solve_kernel(const Tensor& t, const Tensor& b, bool upper, bool unit) {
  visit<kFloats | kComplex>(b.dtype(), "linalg.solve_triangular", [&](auto tag) {
    triangular_solve_typed<typename decltype(tag)::type>(t, b, upper, unit);
  });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(lu_stub, &lu_kernel);
EMBER_REGISTER_CPU_KERNEL(cholesky_stub, &cholesky_kernel);
EMBER_REGISTER_CPU_KERNEL(triangular_solve_stub, &triangular_solve_kernel);

}  // namespace ember::EMBER_CPU_NS
