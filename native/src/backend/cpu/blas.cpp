// Typed calls into OpenBLAS (blas.h). The provider's symbols carry the `scipy_` prefix of the
// scipy-openblas32 wheel; they are declared here rather than through its headers, which would
// pull its complex-number and LAPACKE macros into libember.
#include "backend/cpu/blas.h"

#include <algorithm>
#include <atomic>
#include <string>

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
void scipy_openblas_set_num_threads(int n);
char* scipy_openblas_get_config(void);
char* scipy_openblas_get_corename(void);
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

template <>
void gemm<float>(Operand a_op, Operand b_op, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                 const float* b, float beta, float* c, int64_t ldc) {
  prepare_threads();
  scipy_cblas_sgemm(kRowMajor, trans_flag(a_op), trans_flag(b_op), int(m), int(n), int(k), alpha, a,
                    int(a_op.ld), b, int(b_op.ld), beta, c, int(ldc));
}

template <>
void gemm<double>(Operand a_op, Operand b_op, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
                  const double* b, double beta, double* c, int64_t ldc) {
  prepare_threads();
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
