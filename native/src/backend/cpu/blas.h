#pragma once
// BLAS and LAPACK from OpenBLAS (Note [BLAS provider] in native/CMakeLists.txt), behind a few
// typed calls so kernels never see the provider's prefixed C names. Internal to libember.
//
// Note [BLAS threads]: OpenBLAS keeps its own thread pool. A call made outside an Ember parallel
// region uses get_num_threads() BLAS threads; code that calls BLAS from inside parallel_for
// wraps the region in a SerialBlas guard, which makes every call in it single-threaded (each
// runs in the calling Ember thread), so two pools never compete for the cores.
#include <complex>
#include <cstdint>

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

// See Note [BLAS threads]. Only the thread that opens a parallel region constructs one.
class SerialBlas {
 public:
  SerialBlas();
  ~SerialBlas();
  SerialBlas(const SerialBlas&) = delete;
  SerialBlas& operator=(const SerialBlas&) = delete;
};

// The provider's name and version, for ember.__config__-style reports ("OpenBLAS 0.3.x ...").
const char* provider_config();

}  // namespace ember::blas
