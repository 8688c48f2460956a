// CPU dense factorizations (interface in src/ops/kernels.h) on LAPACK (backend/cpu/blas.h): LU
// with partial pivoting (getrf), Cholesky (potrf) and triangular solves (trsm), over a batch of
// contiguous row-major matrices (blas::for_each_problem spreads them over threads).
#include <algorithm>
#include <cmath>
#include <complex>
#include <vector>

#include "backend/cpu/blas.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <typename T>
void lu_typed(const Tensor& a, const Tensor& pivots, const Tensor& info) {
  const int64_t batch = a.size(0), rows = a.size(1), cols = a.size(2), steps = std::min(rows, cols);
  T* base = a.data<T>();
  int32_t* piv = pivots.data<int32_t>();
  int32_t* inf = info.data<int32_t>();
  blas::for_each_problem(batch, rows * cols * steps, [&](int64_t begin, int64_t end) {
    std::vector<T> col(static_cast<size_t>(rows * cols));  // LAPACK's column-major copy
    for (int64_t b = begin; b < end; ++b) {
      T* m = base + b * rows * cols;
      blas::transpose(rows, cols, m, col.data());
      inf[b] = blas::lapack::getrf(rows, cols, col.data(), std::max<int64_t>(rows, 1), piv + b * steps);
      blas::transpose(cols, rows, col.data(), m);
    }
  });
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

template <typename T>
void triangular_solve_typed(const Tensor& t, const Tensor& b, bool upper, bool unit) {
  const int64_t batch = b.size(0), n = b.size(1), k = b.size(2);
  const T* tb = t.data<T>();
  T* bb = b.data<T>();
  const int64_t t_batch_stride = t.size(0) == 1 ? 0 : n * n;  // one matrix may serve the batch
  blas::for_each_problem(batch, n * n * k, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s)
      blas::trsm(upper, unit, n, k, tb + s * t_batch_stride, n, bb + s * n * k, k);
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
