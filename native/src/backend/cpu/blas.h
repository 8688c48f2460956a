#pragma once
// BLAS and LAPACK from OpenBLAS (Note [BLAS provider] in native/CMakeLists.txt), behind a few
// typed calls so kernels never see the provider's prefixed C names. Internal to libember.
//
// Note [BLAS threads]: OpenBLAS keeps its own thread pool. A call made outside an Ember parallel
// region uses get_num_threads() BLAS threads; code that calls BLAS from inside parallel_for
// wraps the region in a SerialBlas guard, which makes every call in it single-threaded (each
// runs in the calling Ember thread), so two pools never compete for the cores.
#include <algorithm>
#include <complex>
#include <cstdint>
#include <functional>

namespace ember::blas {

// Largest dimension or leading dimension a call accepts (32-bit BLAS integers).
constexpr int64_t kMaxDim = 2147483647;

// One matrix operand in row-major terms: `trans` says whether the stored matrix is op(A)'s
// transpose, `ld` its leading dimension.
struct Operand {
  bool trans = false;
  int64_t ld = 1;
};

// The operand view of a rows x cols matrix with the given strides, when BLAS can read it as is.
bool as_operand(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride, Operand& op);

// c[m, n] = alpha * op(a)[m, k] @ op(b)[k, n] + beta * c (row-major, c's rows ldc apart; beta 0
// overwrites c, NaN included). T: float, double, complex<float>, complex<double>.
template <typename T>
void gemm(Operand a_op, Operand b_op, int64_t m, int64_t n, int64_t k, T alpha, const T* a, const T* b,
          T beta, T* c, int64_t ldc);

// The same product for `batch` matrices, each operand's matrices `stride_*` elements apart (0:
// one matrix for all), in one OpenBLAS call. Its batch interface schedules the batch as a whole:
// at one thread, 1.25x the speed of a call per matrix on 64 matrices of 128^3 and 2-3x on 256 of
// 64^3 (AMD EPYC and Intel Xeon). No gemv shortcut: callers keep m > 1 and n > 1. T: float, double
// (OpenBLAS 0.3.34's complex batch call gave wrong results).
template <typename T>
void gemm_batch(Operand a_op, Operand b_op, int64_t m, int64_t n, int64_t k, T alpha, const T* a,
                int64_t stride_a, const T* b, int64_t stride_b, T beta, T* c, int64_t ldc, int64_t stride_c,
                int64_t batch);

// Solves T X = B in place of b (row-major: t [n, n] rows ldt apart, b [n, k] rows ldb apart);
// T upper or lower triangular, its diagonal taken as ones (and not read) when `unit`.
template <typename T>
void trsm(bool upper, bool unit, int64_t n, int64_t k, const T* t, int64_t ldt, T* b, int64_t ldb);

// See Note [BLAS threads]. Only the thread that opens a parallel region constructs one.
class SerialBlas {
 public:
  SerialBlas();
  ~SerialBlas();
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
};

// Runs fn(begin, end) over `count` independent problems of about `work` flops each: with several,
// one per task and single-threaded BLAS (Note [BLAS threads]); a lone one in the caller, with
// BLAS's own threads. A task takes at least `min_grain` problems in a row (problems that share
// setup, such as one image's column blocks).
void for_each_problem(int64_t count, int64_t work, const std::function<void(int64_t, int64_t)>& fn,
                      int64_t min_grain = 1);

// dst [cols, rows] = src [rows, cols]^T, both dense row-major: the conversion between row-major
// and LAPACK's column-major storage of one matrix, either way.
template <typename T>
void transpose(int64_t rows, int64_t cols, const T* src, T* dst) {
  constexpr int64_t kTile = 16;
  for (int64_t i0 = 0; i0 < rows; i0 += kTile)
    for (int64_t j0 = 0; j0 < cols; j0 += kTile)
      for (int64_t i = i0; i < std::min(rows, i0 + kTile); ++i)
        for (int64_t j = j0; j < std::min(cols, j0 + kTile); ++j) dst[j * rows + i] = src[i * cols + j];
}

// LAPACK's column-major routines, one matrix a call. T: float, double, complex<float>,
// complex<double>; Real<T> its real type. Each returns LAPACK's info (< 0: argument |info| was
// invalid; > 0: the routine's failure, as LAPACK documents it). lwork = -1 only asks for the
// workspace sizes, which LAPACK writes to work[0] (and rwork[0], iwork[0] where it has them).
namespace lapack {

template <typename T>
using Real = decltype(std::real(T()));

// The element count a workspace query's answer asks for (rounded up: a float32 answer may have
// been rounded down).
template <typename T>
int64_t work_size(T answer) {
  return static_cast<int64_t>(static_cast<double>(std::real(answer)) * (1 + 1e-6)) + 1;
}

template <typename T>
int getrf(int64_t m, int64_t n, T* a, int64_t lda, int32_t* ipiv);
template <typename T>
int potrf(char uplo, int64_t n, T* a, int64_t lda);
template <typename T>
int geqrf(int64_t m, int64_t n, T* a, int64_t lda, T* tau, T* work, int64_t lwork);
// orgqr, ungqr for complex T.
template <typename T>
int orgqr(int64_t m, int64_t n, int64_t k, T* a, int64_t lda, const T* tau, T* work, int64_t lwork);
// Bunch-Kaufman LDL^T of a symmetric a (sytrf), or LDL^H of a Hermitian one (hetrf: complex T
// with `hermitian`; real T ignores the flag), from its `uplo` triangle; ipiv in LAPACK's form.
template <typename T>
int sytrf(char uplo, bool hermitian, int64_t n, T* a, int64_t lda, int32_t* ipiv, T* work, int64_t lwork);
// Solves A X = B in place of b from sytrf's (hetrf's) a and ipiv (sytrs / hetrs).
template <typename T>
int sytrs(char uplo, bool hermitian, int64_t n, int64_t nrhs, const T* a, int64_t lda, const int32_t* ipiv,
          T* b, int64_t ldb);
// syevd, heevd for complex T (real T ignores rwork).
template <typename T>
int syevd(char jobz, char uplo, int64_t n, T* a, int64_t lda, Real<T>* w, T* work, int64_t lwork,
          Real<T>* rwork, int64_t lrwork, int32_t* iwork, int64_t liwork);
// Real T ignores rwork.
template <typename T>
int gesdd(char jobz, int64_t m, int64_t n, T* a, int64_t lda, Real<T>* s, T* u, int64_t ldu, T* vt,
          int64_t ldvt, T* work, int64_t lwork, Real<T>* rwork, int32_t* iwork);
template <typename T>
int gesvd(char jobu, char jobvt, int64_t m, int64_t n, T* a, int64_t lda, Real<T>* s, T* u, int64_t ldu,
          T* vt, int64_t ldvt, T* work, int64_t lwork, Real<T>* rwork);
// Eigenvalues w and (jobvr 'V') right eigenvectors vr; left ones are never computed. For real
// T, rwork (2n entries) receives LAPACK's wr and wi, merged into w, and a complex pair's vectors
// stay in LAPACK's packed real form (columns j, j+1 = real and imaginary parts).
template <typename T>
int geev(char jobvr, int64_t n, T* a, int64_t lda, std::complex<Real<T>>* w, T* vr, int64_t ldvr, T* work,
         int64_t lwork, Real<T>* rwork);

}  // namespace lapack

// The provider's name and version, for ember.__config__-style reports ("OpenBLAS 0.3.x ...").
const char* provider_config();

}  // namespace ember::blas
