// Typed calls into OpenBLAS (blas.h). The provider's symbols carry the `scipy_` prefix of the
// scipy-openblas32 wheel; they are declared here rather than through its headers, which would
// pull its complex-number and LAPACKE macros into libember.
#include "backend/cpu/blas.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <type_traits>

#include "ember/error.h"
#include "ember/linalg.h"
#include "ember/parallel.h"

extern "C" {
// blasint is 32-bit in scipy-openblas32; enums as cblas.h numbers them.
void scipy_cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float* a, int lda,
                       const float* b, int ldb, float beta, float* c, int ldc);
void scipy_cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double* a, int lda,
                       const double* b, int ldb, double beta, double* c, int ldc);
void scipy_cblas_cgemm(int order, int ta, int tb, int m, int n, int k, const void* alpha, const void* a,
                       int lda, const void* b, int ldb, const void* beta, void* c, int ldc);
void scipy_cblas_zgemm(int order, int ta, int tb, int m, int n, int k, const void* alpha, const void* a,
                       int lda, const void* b, int ldb, const void* beta, void* c, int ldc);
void scipy_cblas_sgemv(int order, int ta, int m, int n, float alpha, const float* a, int lda, const float* x,
                       int incx, float beta, float* y, int incy);
void scipy_cblas_dgemv(int order, int ta, int m, int n, double alpha, const double* a, int lda,
                       const double* x, int incx, double beta, double* y, int incy);
void scipy_cblas_strsm(int order, int side, int uplo, int ta, int diag, int m, int n, float alpha,
                       const float* a, int lda, float* b, int ldb);
void scipy_cblas_dtrsm(int order, int side, int uplo, int ta, int diag, int m, int n, double alpha,
                       const double* a, int lda, double* b, int ldb);
void scipy_cblas_ctrsm(int order, int side, int uplo, int ta, int diag, int m, int n, const void* alpha,
                       const void* a, int lda, void* b, int ldb);
void scipy_cblas_ztrsm(int order, int side, int uplo, int ta, int diag, int m, int n, const void* alpha,
                       const void* a, int lda, void* b, int ldb);
// the batch interface (OpenBLAS 0.3.31 and later): one (m, n, k) for every matrix
void scipy_cblas_sgemm_batch_strided(int order, int ta, int tb, int m, int n, int k, float alpha,
                                     const float* a, int lda, int stridea, const float* b, int ldb,
                                     int strideb, float beta, float* c, int ldc, int stridec, int batch);
void scipy_cblas_dgemm_batch_strided(int order, int ta, int tb, int m, int n, int k, double alpha,
                                     const double* a, int lda, int stridea, const double* b, int ldb,
                                     int strideb, double beta, double* c, int ldc, int stridec, int batch);
void scipy_openblas_set_num_threads(int n);
char* scipy_openblas_get_config(void);
char* scipy_openblas_get_corename(void);

// LAPACK (Fortran convention: every argument by address, then one hidden length per character
// argument). c, z: complex<float>, complex<double> as the interleaved pairs Fortran uses.
using Len = size_t;
using cfloat = std::complex<float>;
using cdouble = std::complex<double>;
#define EMBER_LAPACK_GETRF(p, T) \
  void scipy_##p##getrf_(const int* m, const int* n, T* a, const int* lda, int* ipiv, int* info);
EMBER_LAPACK_GETRF(s, float)
EMBER_LAPACK_GETRF(d, double)
EMBER_LAPACK_GETRF(c, cfloat)
EMBER_LAPACK_GETRF(z, cdouble)
#define EMBER_LAPACK_POTRF(p, T) \
  void scipy_##p##potrf_(const char* uplo, const int* n, T* a, const int* lda, int* info, Len);
EMBER_LAPACK_POTRF(s, float)
EMBER_LAPACK_POTRF(d, double)
EMBER_LAPACK_POTRF(c, cfloat)
EMBER_LAPACK_POTRF(z, cdouble)
#define EMBER_LAPACK_GEQRF(p, T)                                                            \
  void scipy_##p##geqrf_(const int* m, const int* n, T* a, const int* lda, T* tau, T* work, \
                         const int* lwork, int* info);
EMBER_LAPACK_GEQRF(s, float)
EMBER_LAPACK_GEQRF(d, double)
EMBER_LAPACK_GEQRF(c, cfloat)
EMBER_LAPACK_GEQRF(z, cdouble)
#define EMBER_LAPACK_ORGQR(name, T)                                                                  \
  void scipy_##name##_(const int* m, const int* n, const int* k, T* a, const int* lda, const T* tau, \
                       T* work, const int* lwork, int* info);
EMBER_LAPACK_ORGQR(sorgqr, float)
EMBER_LAPACK_ORGQR(dorgqr, double)
EMBER_LAPACK_ORGQR(cungqr, cfloat)
EMBER_LAPACK_ORGQR(zungqr, cdouble)
#define EMBER_LAPACK_SYTRF(name, T)                                                              \
  void scipy_##name##_(const char* uplo, const int* n, T* a, const int* lda, int* ipiv, T* work, \
                       const int* lwork, int* info, Len);
EMBER_LAPACK_SYTRF(ssytrf, float)
EMBER_LAPACK_SYTRF(dsytrf, double)
EMBER_LAPACK_SYTRF(csytrf, cfloat)
EMBER_LAPACK_SYTRF(zsytrf, cdouble)
EMBER_LAPACK_SYTRF(chetrf, cfloat)
EMBER_LAPACK_SYTRF(zhetrf, cdouble)
#define EMBER_LAPACK_SYTRS(name, T)                                                                 \
  void scipy_##name##_(const char* uplo, const int* n, const int* nrhs, const T* a, const int* lda, \
                       const int* ipiv, T* b, const int* ldb, int* info, Len);
EMBER_LAPACK_SYTRS(ssytrs, float)
EMBER_LAPACK_SYTRS(dsytrs, double)
EMBER_LAPACK_SYTRS(csytrs, cfloat)
EMBER_LAPACK_SYTRS(zsytrs, cdouble)
EMBER_LAPACK_SYTRS(chetrs, cfloat)
EMBER_LAPACK_SYTRS(zhetrs, cdouble)
void scipy_ssyevd_(const char* jobz, const char* uplo, const int* n, float* a, const int* lda, float* w,
                   float* work, const int* lwork, int* iwork, const int* liwork, int* info, Len, Len);
void scipy_dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w,
                   double* work, const int* lwork, int* iwork, const int* liwork, int* info, Len, Len);
void scipy_cheevd_(const char* jobz, const char* uplo, const int* n, cfloat* a, const int* lda, float* w,
                   cfloat* work, const int* lwork, float* rwork, const int* lrwork, int* iwork,
                   const int* liwork, int* info, Len, Len);
void scipy_zheevd_(const char* jobz, const char* uplo, const int* n, cdouble* a, const int* lda, double* w,
                   cdouble* work, const int* lwork, double* rwork, const int* lrwork, int* iwork,
                   const int* liwork, int* info, Len, Len);
void scipy_sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s, float* u,
                   const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork, int* iwork,
                   int* info, Len);
void scipy_dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s,
                   double* u, const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork,
                   int* iwork, int* info, Len);
void scipy_cgesdd_(const char* jobz, const int* m, const int* n, cfloat* a, const int* lda, float* s,
                   cfloat* u, const int* ldu, cfloat* vt, const int* ldvt, cfloat* work, const int* lwork,
                   float* rwork, int* iwork, int* info, Len);
void scipy_zgesdd_(const char* jobz, const int* m, const int* n, cdouble* a, const int* lda, double* s,
                   cdouble* u, const int* ldu, cdouble* vt, const int* ldvt, cdouble* work, const int* lwork,
                   double* rwork, int* iwork, int* info, Len);
void scipy_sgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, float* a, const int* lda,
                   float* s, float* u, const int* ldu, float* vt, const int* ldvt, float* work,
                   const int* lwork, int* info, Len, Len);
void scipy_dgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, double* a, const int* lda,
                   double* s, double* u, const int* ldu, double* vt, const int* ldvt, double* work,
                   const int* lwork, int* info, Len, Len);
void scipy_cgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, cfloat* a, const int* lda,
                   float* s, cfloat* u, const int* ldu, cfloat* vt, const int* ldvt, cfloat* work,
                   const int* lwork, float* rwork, int* info, Len, Len);
void scipy_zgesvd_(const char* jobu, const char* jobvt, const int* m, const int* n, cdouble* a,
                   const int* lda, double* s, cdouble* u, const int* ldu, cdouble* vt, const int* ldvt,
                   cdouble* work, const int* lwork, double* rwork, int* info, Len, Len);
void scipy_sgeev_(const char* jobvl, const char* jobvr, const int* n, float* a, const int* lda, float* wr,
                  float* wi, float* vl, const int* ldvl, float* vr, const int* ldvr, float* work,
                  const int* lwork, int* info, Len, Len);
void scipy_dgeev_(const char* jobvl, const char* jobvr, const int* n, double* a, const int* lda, double* wr,
                  double* wi, double* vl, const int* ldvl, double* vr, const int* ldvr, double* work,
                  const int* lwork, int* info, Len, Len);
void scipy_cgeev_(const char* jobvl, const char* jobvr, const int* n, cfloat* a, const int* lda, cfloat* w,
                  cfloat* vl, const int* ldvl, cfloat* vr, const int* ldvr, cfloat* work, const int* lwork,
                  float* rwork, int* info, Len, Len);
void scipy_zgeev_(const char* jobvl, const char* jobvr, const int* n, cdouble* a, const int* lda, cdouble* w,
                  cdouble* vl, const int* ldvl, cdouble* vr, const int* ldvr, cdouble* work, const int* lwork,
                  double* rwork, int* info, Len, Len);
}

namespace ember::blas {
namespace {

constexpr int kRowMajor = 101, kNoTrans = 111, kTrans = 112;

// The thread count last given to OpenBLAS (0: not yet); see Note [BLAS threads].
std::atomic<int> g_blas_threads{0};
std::atomic<int> g_serial_depth{0};

void set_threads(int n) {
  if (g_blas_threads.exchange(n) != n) scipy_openblas_set_num_threads(n);
}

// Before a call: outside a serial guard, follow ember.set_num_threads.
void prepare_threads() {
  if (g_serial_depth.load() == 0 && !in_parallel_region()) set_threads(get_num_threads());
}

int trans_flag(const Operand& op) {
  return op.trans ? kTrans : kNoTrans;
}

template <typename T>
constexpr bool is_complex_t = std::is_same_v<T, cfloat> || std::is_same_v<T, cdouble>;

// A dimension as LAPACK's 32-bit integer.
int dim(int64_t v) {
  EMBER_CHECK(v <= kMaxDim, Error, "[linalg] expected matrix dimensions of at most ", kMaxDim,
              " (32-bit LAPACK), but got ", v);
  return static_cast<int>(v);
}

// A workspace length (-1: the size query), at least 1 as LAPACK requires.
int work_dim(int64_t v) {
  return v == -1 ? -1 : dim(std::max<int64_t>(v, 1));
}

}  // namespace

bool as_operand(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, Operand& op) {
  // A unit-length dim's stride is never followed, so any value suits it.
  const bool row_unit = rows == 1, col_unit = cols == 1;
  if ((col_stride == 1 || col_unit) && (row_unit || row_stride >= std::max<int64_t>(1, cols))) {
    op = {false, row_unit ? std::max<int64_t>(1, cols) : row_stride};
  } else if ((row_stride == 1 || row_unit) && (col_unit || col_stride >= std::max<int64_t>(1, rows))) {
    op = {true, col_unit ? std::max<int64_t>(1, rows) : col_stride};
  } else {
    return false;
  }
  return op.ld <= kMaxDim;
}

// Note [gemv products]: a product with one output row or column (a Linear at batch 1: x @ W^T)
// is a matrix-vector product, which OpenBLAS's gemm runs through its general path: 0.48 ms for a
// 1x960 @ (1280x960)^T float product at one thread, against 0.10 ms as a gemv. When the matrix's
// stored rows are the dot products (W for x @ W^T, A for A @ v), the product is a row-major gemv.
// gemv reads y when beta is 0 only to scale it by 0, so y is zeroed first (a fresh output may
// hold NaN bit patterns, and beta 0 must ignore them).
template <typename T, typename Gemv>
bool try_gemv(Gemv gemv, Operand a_op, Operand b_op, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
              const T* b, T beta, T* c, int64_t ldc) {
  // Only the row-by-row form: each output is one dot product of a stored row, so the result does
  // not depend on OpenBLAS's thread count (Note [deterministic parallelism]); its transposed form
  // splits the sum across threads. A dot product (m = n = 1) stays with gemm for the same reason.
  const bool row_of_a = m == 1 && n > 1 && b_op.trans;      // y (n) = B_stored (n x k) x
  const bool column_of_b = n == 1 && m > 1 && !a_op.trans;  // y (m) = A_stored (m x k) x
  if (!row_of_a && !column_of_b) return false;
  const int64_t len = row_of_a ? n : m, inc_y = row_of_a ? 1 : ldc;
  if (beta == T(0))
    for (int64_t i = 0; i < len; ++i) c[i * inc_y] = T(0);
  if (row_of_a) {  // x = A's one row: contiguous, or down the stored k x 1 transpose
    gemv(kRowMajor, kNoTrans, int(n), int(k), alpha, b, int(b_op.ld), a, int(a_op.trans ? a_op.ld : 1), beta,
         c, 1);
  } else {  // x = op(B)'s one column: along the stored 1 x k transpose, or down the stored k x 1
    gemv(kRowMajor, kNoTrans, int(m), int(k), alpha, a, int(a_op.ld), b, int(b_op.trans ? 1 : b_op.ld), beta,
         c, int(inc_y));
  }
  return true;
}

template <>
void gemm<float>(Operand a_op, Operand b_op, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 const float* b, float beta, float* c, int64_t ldc) {
  prepare_threads();
  if (try_gemv<float>(scipy_cblas_sgemv, a_op, b_op, m, n, k, alpha, a, b, beta, c, ldc)) return;
  scipy_cblas_sgemm(kRowMajor, trans_flag(a_op), trans_flag(b_op), int(m), int(n), int(k), alpha, a,
                    int(a_op.ld), b, int(b_op.ld), beta, c, int(ldc));
}

template <>
void gemm<double>(Operand a_op, Operand b_op, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                  const double* b, double beta, double* c, int64_t ldc) {
  prepare_threads();
  if (try_gemv<double>(scipy_cblas_dgemv, a_op, b_op, m, n, k, alpha, a, b, beta, c, ldc)) return;
  scipy_cblas_dgemm(kRowMajor, trans_flag(a_op), trans_flag(b_op), int(m), int(n), int(k), alpha, a,
                    int(a_op.ld), b, int(b_op.ld), beta, c, int(ldc));
}

template <>
void gemm<std::complex<float>>(Operand a_op, Operand b_op, int64_t m, int64_t n, int64_t k,
                               std::complex<float> alpha, const std::complex<float>* a,
                               const std::complex<float>* b, std::complex<float> beta, std::complex<float>* c,
                               int64_t ldc) {
  prepare_threads();
  scipy_cblas_cgemm(kRowMajor, trans_flag(a_op), trans_flag(b_op), int(m), int(n), int(k), &alpha, a,
                    int(a_op.ld), b, int(b_op.ld), &beta, c, int(ldc));
}

template <>
void gemm<std::complex<double>>(Operand a_op, Operand b_op, int64_t m, int64_t n, int64_t k,
                                std::complex<double> alpha, const std::complex<double>* a,
                                const std::complex<double>* b, std::complex<double> beta,
                                std::complex<double>* c, int64_t ldc) {
  prepare_threads();
  scipy_cblas_zgemm(kRowMajor, trans_flag(a_op), trans_flag(b_op), int(m), int(n), int(k), &alpha, a,
                    int(a_op.ld), b, int(b_op.ld), &beta, c, int(ldc));
}

template <typename T>
void gemm_batch(Operand a_op, Operand b_op, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                int64_t stride_a, const T* b, int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c,
                int64_t batch) {
  prepare_threads();
  const int ta = trans_flag(a_op), tb = trans_flag(b_op), M = dim(m), N = dim(n), K = dim(k),
            LDA = dim(a_op.ld), LDB = dim(b_op.ld), LDC = dim(ldc), SA = dim(stride_a), SB = dim(stride_b),
            SC = dim(stride_c), BATCH = dim(batch);
  if constexpr (std::is_same_v<T, float>) {
    scipy_cblas_sgemm_batch_strided(kRowMajor, ta, tb, M, N, K, alpha, a, LDA, SA, b, LDB, SB, beta, c, LDC,
                                    SC, BATCH);
  } else {
    static_assert(std::is_same_v<T, double>, "gemm_batch: float or double");
    scipy_cblas_dgemm_batch_strided(kRowMajor, ta, tb, M, N, K, alpha, a, LDA, SA, b, LDB, SB, beta, c, LDC,
                                    SC, BATCH);
  }
}

template <typename T>
void trsm(bool upper, bool unit, int64_t n, int64_t k, const T* t, int64_t ldt, T* b, int64_t ldb) {
  constexpr int kLeft = 141, kUpper = 121, kLower = 122, kNonUnit = 131, kUnit = 132;
  prepare_threads();
  const int uplo = upper ? kUpper : kLower, diag = unit ? kUnit : kNonUnit;
  const int N = dim(n), K = dim(k), LDT = dim(std::max<int64_t>(ldt, 1)),
            LDB = dim(std::max<int64_t>(ldb, 1));
  const T one(1);
  if constexpr (std::is_same_v<T, float>) {
    scipy_cblas_strsm(kRowMajor, kLeft, uplo, kNoTrans, diag, N, K, one, t, LDT, b, LDB);
  } else if constexpr (std::is_same_v<T, double>) {
    scipy_cblas_dtrsm(kRowMajor, kLeft, uplo, kNoTrans, diag, N, K, one, t, LDT, b, LDB);
  } else if constexpr (std::is_same_v<T, cfloat>) {
    scipy_cblas_ctrsm(kRowMajor, kLeft, uplo, kNoTrans, diag, N, K, &one, t, LDT, b, LDB);
  } else {
    scipy_cblas_ztrsm(kRowMajor, kLeft, uplo, kNoTrans, diag, N, K, &one, t, LDT, b, LDB);
  }
}

void for_each_problem(int64_t count, int64_t work, const std::function<void(int64_t, int64_t)>& fn,
                      int64_t min_grain) {
  if (count <= 0) return;
  if (count == 1 || get_num_threads() == 1 || in_parallel_region()) {
    fn(0, count);
    return;
  }
  // Tiny problems go several to a task, so a task's cost outweighs scheduling it (a LAPACK call
  // itself costs about what a few thousand flops do).
  constexpr int64_t kTaskWork = 1 << 16, kCallWork = 2048;
  const int64_t grain =
      std::max<int64_t>({1, min_grain, kTaskWork / (std::max<int64_t>(work, 0) + kCallWork)});
  SerialBlas serial;
  parallel_for(0, count, grain, fn);
}

#define EMBER_GEMM_BATCH(T)                                                                                \
  template void gemm_batch<T>(Operand, Operand, int64_t, int64_t, int64_t, T, const T*, int64_t, const T*, \
                              int64_t, T, T*, int64_t, int64_t, int64_t);
EMBER_GEMM_BATCH(float)
EMBER_GEMM_BATCH(double)
#undef EMBER_GEMM_BATCH
template void trsm<float>(bool, bool, int64_t, int64_t, const float*, int64_t, float*, int64_t);
template void trsm<double>(bool, bool, int64_t, int64_t, const double*, int64_t, double*, int64_t);
template void trsm<cfloat>(bool, bool, int64_t, int64_t, const cfloat*, int64_t, cfloat*, int64_t);
template void trsm<cdouble>(bool, bool, int64_t, int64_t, const cdouble*, int64_t, cdouble*, int64_t);

// ---- LAPACK -------------------------------------------------------------------------------------

namespace lapack {

// Picks the routine of T's precision: s, d, c or z.
#define EMBER_BY_TYPE(T, s_call, d_call, c_call, z_call) \
  if constexpr (std::is_same_v<T, float>) {              \
    s_call;                                              \
  } else if constexpr (std::is_same_v<T, double>) {      \
    d_call;                                              \
  } else if constexpr (std::is_same_v<T, cfloat>) {      \
    c_call;                                              \
  } else {                                               \
    z_call;                                              \
  }

template <typename T>
int getrf(int64_t m, int64_t n, T* a, int64_t lda, int32_t* ipiv) {
  prepare_threads();
  const int M = dim(m), N = dim(n), LDA = dim(lda);
  int info = 0;
  EMBER_BY_TYPE(T, scipy_sgetrf_(&M, &N, a, &LDA, ipiv, &info), scipy_dgetrf_(&M, &N, a, &LDA, ipiv, &info),
                scipy_cgetrf_(&M, &N, a, &LDA, ipiv, &info), scipy_zgetrf_(&M, &N, a, &LDA, ipiv, &info))
  return info;
}

template <typename T>
int potrf(char uplo, int64_t n, T* a, int64_t lda) {
  prepare_threads();
  const int N = dim(n), LDA = dim(lda);
  int info = 0;
  EMBER_BY_TYPE(T, scipy_spotrf_(&uplo, &N, a, &LDA, &info, 1), scipy_dpotrf_(&uplo, &N, a, &LDA, &info, 1),
                scipy_cpotrf_(&uplo, &N, a, &LDA, &info, 1), scipy_zpotrf_(&uplo, &N, a, &LDA, &info, 1))
  return info;
}

template <typename T>
int geqrf(int64_t m, int64_t n, T* a, int64_t lda, T* tau, T* work, int64_t lwork) {
  prepare_threads();
  const int M = dim(m), N = dim(n), LDA = dim(lda), LW = work_dim(lwork);
  int info = 0;
  EMBER_BY_TYPE(T, scipy_sgeqrf_(&M, &N, a, &LDA, tau, work, &LW, &info),
                scipy_dgeqrf_(&M, &N, a, &LDA, tau, work, &LW, &info),
                scipy_cgeqrf_(&M, &N, a, &LDA, tau, work, &LW, &info),
                scipy_zgeqrf_(&M, &N, a, &LDA, tau, work, &LW, &info))
  return info;
}

template <typename T>
int orgqr(int64_t m, int64_t n, int64_t k, T* a, int64_t lda, const T* tau, T* work, int64_t lwork) {
  prepare_threads();
  const int M = dim(m), N = dim(n), K = dim(k), LDA = dim(lda), LW = work_dim(lwork);
  int info = 0;
  EMBER_BY_TYPE(T, scipy_sorgqr_(&M, &N, &K, a, &LDA, tau, work, &LW, &info),
                scipy_dorgqr_(&M, &N, &K, a, &LDA, tau, work, &LW, &info),
                scipy_cungqr_(&M, &N, &K, a, &LDA, tau, work, &LW, &info),
                scipy_zungqr_(&M, &N, &K, a, &LDA, tau, work, &LW, &info))
  return info;
}

template <typename T>
int sytrf(char uplo, bool hermitian, int64_t n, T* a, int64_t lda, int32_t* ipiv, T* work, int64_t lwork) {
  prepare_threads();
  const int N = dim(n), LDA = dim(lda), LW = work_dim(lwork);
  int info = 0;
  if constexpr (is_complex_t<T>) {
    if (hermitian) {
      if constexpr (std::is_same_v<T, cfloat>) {
        scipy_chetrf_(&uplo, &N, a, &LDA, ipiv, work, &LW, &info, 1);
      } else {
        scipy_zhetrf_(&uplo, &N, a, &LDA, ipiv, work, &LW, &info, 1);
      }
      return info;
    }
  }
  EMBER_BY_TYPE(T, scipy_ssytrf_(&uplo, &N, a, &LDA, ipiv, work, &LW, &info, 1),
                scipy_dsytrf_(&uplo, &N, a, &LDA, ipiv, work, &LW, &info, 1),
                scipy_csytrf_(&uplo, &N, a, &LDA, ipiv, work, &LW, &info, 1),
                scipy_zsytrf_(&uplo, &N, a, &LDA, ipiv, work, &LW, &info, 1))
  return info;
}

template <typename T>
int sytrs(char uplo, bool hermitian, int64_t n, int64_t nrhs, const T* a, int64_t lda, const int32_t* ipiv,
          T* b, int64_t ldb) {
  prepare_threads();
  const int N = dim(n), NRHS = dim(nrhs), LDA = dim(lda), LDB = dim(ldb);
  int info = 0;
  if constexpr (is_complex_t<T>) {
    if (hermitian) {
      if constexpr (std::is_same_v<T, cfloat>) {
        scipy_chetrs_(&uplo, &N, &NRHS, a, &LDA, ipiv, b, &LDB, &info, 1);
      } else {
        scipy_zhetrs_(&uplo, &N, &NRHS, a, &LDA, ipiv, b, &LDB, &info, 1);
      }
      return info;
    }
  }
  EMBER_BY_TYPE(T, scipy_ssytrs_(&uplo, &N, &NRHS, a, &LDA, ipiv, b, &LDB, &info, 1),
                scipy_dsytrs_(&uplo, &N, &NRHS, a, &LDA, ipiv, b, &LDB, &info, 1),
                scipy_csytrs_(&uplo, &N, &NRHS, a, &LDA, ipiv, b, &LDB, &info, 1),
                scipy_zsytrs_(&uplo, &N, &NRHS, a, &LDA, ipiv, b, &LDB, &info, 1))
  return info;
}

template <typename T>
int syevd(char jobz, char uplo, int64_t n, T* a, int64_t lda, Real<T>* w, T* work, int64_t lwork,
          Real<T>* rwork, int64_t lrwork, int32_t* iwork, int64_t liwork) {
  prepare_threads();
  const int N = dim(n), LDA = dim(lda), LW = work_dim(lwork), LRW = work_dim(lrwork), LIW = work_dim(liwork);
  int info = 0;
  (void)rwork, (void)LRW;
  EMBER_BY_TYPE(T, scipy_ssyevd_(&jobz, &uplo, &N, a, &LDA, w, work, &LW, iwork, &LIW, &info, 1, 1),
                scipy_dsyevd_(&jobz, &uplo, &N, a, &LDA, w, work, &LW, iwork, &LIW, &info, 1, 1),
                scipy_cheevd_(&jobz, &uplo, &N, a, &LDA, w, work, &LW, rwork, &LRW, iwork, &LIW, &info, 1, 1),
                scipy_zheevd_(&jobz, &uplo, &N, a, &LDA, w, work, &LW, rwork, &LRW, iwork, &LIW, &info, 1, 1))
  return info;
}

template <typename T>
int gesdd(char jobz, int64_t m, int64_t n, T* a, int64_t lda, Real<T>* s, T* u, int64_t ldu, T* vt,
          int64_t ldvt, T* work, int64_t lwork, Real<T>* rwork, int32_t* iwork) {
  prepare_threads();
  const int M = dim(m), N = dim(n), LDA = dim(lda), LDU = dim(ldu), LDVT = dim(ldvt), LW = work_dim(lwork);
  int info = 0;
  (void)rwork;
  EMBER_BY_TYPE(
      T, scipy_sgesdd_(&jobz, &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, work, &LW, iwork, &info, 1),
      scipy_dgesdd_(&jobz, &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, work, &LW, iwork, &info, 1),
      scipy_cgesdd_(&jobz, &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, work, &LW, rwork, iwork, &info, 1),
      scipy_zgesdd_(&jobz, &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, work, &LW, rwork, iwork, &info, 1))
  return info;
}

template <typename T>
int gesvd(char jobu, char jobvt, int64_t m, int64_t n, T* a, int64_t lda, Real<T>* s, T* u, int64_t ldu,
          T* vt, int64_t ldvt, T* work, int64_t lwork, Real<T>* rwork) {
  prepare_threads();
  const int M = dim(m), N = dim(n), LDA = dim(lda), LDU = dim(ldu), LDVT = dim(ldvt), LW = work_dim(lwork);
  int info = 0;
  (void)rwork;
  EMBER_BY_TYPE(
      T, scipy_sgesvd_(&jobu, &jobvt, &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, work, &LW, &info, 1, 1),
      scipy_dgesvd_(&jobu, &jobvt, &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, work, &LW, &info, 1, 1),
      scipy_cgesvd_(&jobu, &jobvt, &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, work, &LW, rwork, &info, 1, 1),
      scipy_zgesvd_(&jobu, &jobvt, &M, &N, a, &LDA, s, u, &LDU, vt, &LDVT, work, &LW, rwork, &info, 1, 1))
  return info;
}

template <typename T>
int geev(char jobvr, int64_t n, T* a, int64_t lda, std::complex<Real<T>>* w, T* vr, int64_t ldvr, T* work,
         int64_t lwork, Real<T>* rwork) {
  prepare_threads();
  const char no = 'N';
  const int N = dim(n), LDA = dim(lda), LDVR = dim(ldvr), LW = work_dim(lwork), one = 1;
  int info = 0;
  T dummy{};  // vl, never referenced with jobvl 'N'
  EMBER_BY_TYPE(
      T,
      scipy_sgeev_(&no, &jobvr, &N, a, &LDA, rwork, rwork + n, &dummy, &one, vr, &LDVR, work, &LW, &info, 1,
                   1),
      scipy_dgeev_(&no, &jobvr, &N, a, &LDA, rwork, rwork + n, &dummy, &one, vr, &LDVR, work, &LW, &info, 1,
                   1),
      scipy_cgeev_(&no, &jobvr, &N, a, &LDA, w, &dummy, &one, vr, &LDVR, work, &LW, rwork, &info, 1, 1),
      scipy_zgeev_(&no, &jobvr, &N, a, &LDA, w, &dummy, &one, vr, &LDVR, work, &LW, rwork, &info, 1, 1))
  if constexpr (!is_complex_t<T>) {
    if (lwork != -1)
      for (int64_t i = 0; i < n; ++i) w[i] = {rwork[i], rwork[n + i]};
  }
  return info;
}

#undef EMBER_BY_TYPE

#define EMBER_LAPACK_INSTANTIATE(T)                                                                        \
  template int getrf<T>(int64_t, int64_t, T*, int64_t, int32_t*);                                          \
  template int potrf<T>(char, int64_t, T*, int64_t);                                                       \
  template int geqrf<T>(int64_t, int64_t, T*, int64_t, T*, T*, int64_t);                                   \
  template int orgqr<T>(int64_t, int64_t, int64_t, T*, int64_t, const T*, T*, int64_t);                    \
  template int sytrf<T>(char, bool, int64_t, T*, int64_t, int32_t*, T*, int64_t);                          \
  template int sytrs<T>(char, bool, int64_t, int64_t, const T*, int64_t, const int32_t*, T*, int64_t);     \
  template int syevd<T>(char, char, int64_t, T*, int64_t, Real<T>*, T*, int64_t, Real<T>*, int64_t,        \
                        int32_t*, int64_t);                                                                \
  template int gesdd<T>(char, int64_t, int64_t, T*, int64_t, Real<T>*, T*, int64_t, T*, int64_t, T*,       \
                        int64_t, Real<T>*, int32_t*);                                                      \
  template int gesvd<T>(char, char, int64_t, int64_t, T*, int64_t, Real<T>*, T*, int64_t, T*, int64_t, T*, \
                        int64_t, Real<T>*);                                                                \
  template int geev<T>(char, int64_t, T*, int64_t, std::complex<Real<T>>*, T*, int64_t, T*, int64_t,       \
                       Real<T>*);
EMBER_LAPACK_INSTANTIATE(float)
EMBER_LAPACK_INSTANTIATE(double)
EMBER_LAPACK_INSTANTIATE(cfloat)
EMBER_LAPACK_INSTANTIATE(cdouble)
#undef EMBER_LAPACK_INSTANTIATE

}  // namespace lapack

SerialBlas::SerialBlas() {
  if (g_serial_depth.fetch_add(1) == 0) set_threads(1);
}

SerialBlas::~SerialBlas() {
  g_serial_depth.fetch_sub(1);
}

const char* provider_config() {
  return scipy_openblas_get_config();
}

}  // namespace ember::blas

namespace ember {

std::string blas_config() {
  return std::string(blas::provider_config()) + " (core " + scipy_openblas_get_corename() + ")";
}

}  // namespace ember
