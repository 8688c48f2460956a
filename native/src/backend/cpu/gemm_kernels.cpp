// CPU matrix multiply (interface in src/ops/kernels.h): out[b] = beta * out[b] + alpha * a[b] @ b[b].
//
// float, double and complex products call OpenBLAS (blas_gemm below); this file's own kernel
// serves the types BLAS lacks (integers) and products too small to repay a BLAS call.
//
// Note [gemm blocking]: the classic three-level blocking. For each block of KC steps of the inner
// dimension and NC columns, B's block is packed into NR-wide column panels and A's block of MC
// rows into MR-high row panels, both laid out in the order the micro-kernel reads them; the
// micro-kernel keeps an MR x NR tile of C in registers (the compiler vectorizes its NR loop; the
// AVX2 build of this file uses 256-bit FMA). Tasks are (batch, MC-row block) pairs, each computing
// its rows in a fixed order, so results do not depend on the thread count
// (Note [deterministic parallelism]). Any strides are accepted: packing reads through them.
#include <algorithm>
#include <complex>
#include <cstring>
#include <memory>
#include <type_traits>

#include "backend/cpu/blas.h"
#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

// The vector width this build of the file targets (Note [CPU capabilities]).
#if defined(__AVX__)
constexpr int64_t kVectorBytes = 32;
#else
constexpr int64_t kVectorBytes = 16;
#endif

// float and double use explicit vectors (GCC/Clang vector extensions) in the micro-kernel; other
// types (complex, integers) a plain loop over a small tile.
template <typename T>
constexpr bool kVectorized = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <typename T>
struct Tile {
  static constexpr int64_t kLanes = kVectorized<T> ? kVectorBytes / static_cast<int64_t>(sizeof(T)) : 2;
  static constexpr int64_t kNR = 2 * kLanes;              // two vectors per row of the C tile
  static constexpr int64_t kMR = kVectorized<T> ? 6 : 4;  // 6 x 2 vector accumulators
  static constexpr int64_t kKC = 256;
  static constexpr int64_t kMC = 72;  // a multiple of kMR
  static constexpr int64_t kNC = 1024;
};

template <typename T>
T madd(T acc, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    return wrap_add(acc, wrap_mul(a, b));
  } else {
    return acc + a * b;
  }
}

struct Strided2D {
  int64_t row_stride, col_stride;
};

// Packs rows [i0, i0 + mc) x inner [k0, k0 + kc) of A into MR-high panels, k-major within a panel
// (panel p holds element (i0 + p*MR + r, k0 + k) at p*MR*kc + k*MR + r); short panels pad with 0.
template <typename T>
void pack_a(const T* a, const Strided2D& s, int64_t i0, int64_t mc, int64_t k0, int64_t kc, T* dst) {
  constexpr int64_t MR = Tile<T>::kMR;
  for (int64_t p = 0; p < mc; p += MR) {
    const int64_t rows = std::min(MR, mc - p);
    for (int64_t k = 0; k < kc; ++k) {
      const T* col = a + (k0 + k) * s.col_stride + (i0 + p) * s.row_stride;
      for (int64_t r = 0; r < rows; ++r) dst[k * MR + r] = col[r * s.row_stride];
      for (int64_t r = rows; r < MR; ++r) dst[k * MR + r] = T(0);
    }
    dst += MR * kc;
  }
}

// Packs inner [k0, k0 + kc) x columns [j0, j0 + nc) of B into NR-wide panels, k-major.
template <typename T>
void pack_b(const T* b, const Strided2D& s, int64_t k0, int64_t kc, int64_t j0, int64_t nc, T* dst) {
  constexpr int64_t NR = Tile<T>::kNR;
  for (int64_t p = 0; p < nc; p += NR) {
    const int64_t cols = std::min(NR, nc - p);
    for (int64_t k = 0; k < kc; ++k) {
      const T* row = b + (k0 + k) * s.row_stride + (j0 + p) * s.col_stride;
      for (int64_t c = 0; c < cols; ++c) dst[k * NR + c] = row[c * s.col_stride];
      for (int64_t c = cols; c < NR; ++c) dst[k * NR + c] = T(0);
    }
    dst += NR * kc;
  }
}

// acc (MR x NR) = sum over k of the packed A panel column times the packed B panel row.
template <typename T>
void micro_kernel(int64_t kc, const T* ap, const T* bp, T* acc) {
  constexpr int64_t MR = Tile<T>::kMR, NR = Tile<T>::kNR;
  if constexpr (kVectorized<T>) {
    typedef T Vec __attribute__((vector_size(kVectorBytes)));
    constexpr int64_t L = Tile<T>::kLanes;
    Vec c[MR][2];
    for (int64_t r = 0; r < MR; ++r) c[r][0] = c[r][1] = Vec{};
    for (int64_t k = 0; k < kc; ++k) {
      Vec b0, b1;  // memcpy: the packed panel is not aligned to the vector size
      std::memcpy(&b0, bp + k * NR, sizeof(Vec));
      std::memcpy(&b1, bp + k * NR + L, sizeof(Vec));
      for (int64_t r = 0; r < MR; ++r) {
        const T a = ap[k * MR + r];
        c[r][0] += a * b0;
        c[r][1] += a * b1;
      }
    }
    for (int64_t r = 0; r < MR; ++r) {
      std::memcpy(acc + r * NR, &c[r][0], sizeof(Vec));
      std::memcpy(acc + r * NR + L, &c[r][1], sizeof(Vec));
    }
  } else {
    T c[MR][NR] = {};
    for (int64_t k = 0; k < kc; ++k) {
      for (int64_t r = 0; r < MR; ++r) {
        const T a = ap[k * MR + r];
        for (int64_t j = 0; j < NR; ++j) c[r][j] = madd(c[r][j], a, bp[k * NR + j]);
      }
    }
    for (int64_t r = 0; r < MR; ++r)
      for (int64_t j = 0; j < NR; ++j) acc[r * NR + j] = c[r][j];
  }
}

template <typename T>
void gemm_typed(const Tensor& out, const Tensor& a, const Tensor& b, T alpha, T beta) {
  constexpr int64_t MR = Tile<T>::kMR, NR = Tile<T>::kNR, KC = Tile<T>::kKC, MC = Tile<T>::kMC,
                    NC = Tile<T>::kNC;
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a.size(2);
  const T* A = a.data<T>();
  const T* B = b.data<T>();
  T* C = out.data<T>();
  const Strided2D as{a.stride(1), a.stride(2)}, bs{b.stride(1), b.stride(2)};
  const int64_t cs0 = out.stride(1), cs1 = out.stride(2);
  const int64_t row_blocks = (M + MC - 1) / MC;
  // The cost of one task decides the grain: small products stay on one thread.
  const int64_t grain =
      std::max<int64_t>(1, (int64_t(1) << 18) / std::max<int64_t>(1, MC * N * std::max<int64_t>(K, 1)));
  parallel_for(0, batch * row_blocks, grain, [&](int64_t begin, int64_t end) {
    // packing buffers sized for this product (uninitialized: packing writes every element read)
    const int64_t kc_max = std::min(KC, std::max<int64_t>(K, 1));
    const int64_t nc_max = (std::min(NC, N) + NR - 1) / NR * NR;
    const int64_t mc_max = (std::min(MC, M) + MR - 1) / MR * MR;
    std::unique_ptr<T[]> apack(new T[static_cast<size_t>(mc_max * kc_max)]);
    std::unique_ptr<T[]> bpack(new T[static_cast<size_t>(nc_max * kc_max)]);
    T acc[MR * NR];
    for (int64_t task = begin; task < end; ++task) {
      const int64_t bi = task / row_blocks, i0 = (task % row_blocks) * MC, mc = std::min(MC, M - i0);
      const T* Ab = A + bi * a.stride(0);
      const T* Bb = B + bi * b.stride(0);
      T* Cb = C + bi * out.stride(0);
      for (int64_t j0 = 0; j0 < N; j0 += NC) {
        const int64_t nc = std::min(NC, N - j0);
        if (K == 0) {  // an empty inner dimension: out = beta * out
          for (int64_t i = i0; i < i0 + mc; ++i)
            for (int64_t j = j0; j < j0 + nc; ++j) {
              T& o = Cb[i * cs0 + j * cs1];
              o = beta == T(0) ? T(0) : T(beta * o);
            }
          continue;
        }
        for (int64_t k0 = 0; k0 < K; k0 += KC) {
          const int64_t kc = std::min(KC, K - k0);
          pack_b(Bb, bs, k0, kc, j0, nc, bpack.get());
          pack_a(Ab, as, i0, mc, k0, kc, apack.get());
          const bool first = k0 == 0;
          for (int64_t p = 0; p < mc; p += MR) {
            const int64_t rows = std::min(MR, mc - p);
            for (int64_t q = 0; q < nc; q += NR) {
              const int64_t cols = std::min(NR, nc - q);
              micro_kernel(kc, apack.get() + p * kc, bpack.get() + q * kc, acc);
              for (int64_t r = 0; r < rows; ++r) {
                T* crow = Cb + (i0 + p + r) * cs0 + (j0 + q) * cs1;
                for (int64_t j = 0; j < cols; ++j) {
                  T& o = crow[j * cs1];
                  const T prev = first ? (beta == T(0) ? T(0) : T(beta * o)) : o;  // beta 0 ignores NaN
                  o = prev + alpha * acc[r * NR + j];
                }
              }
            }
          }
        }
      }
    }
  });
}

// Products below this many multiply-adds stay in gemm_typed: a BLAS call costs about a
// microsecond of setup, which batches of 8x8 matrices never repay.
constexpr int64_t kBlasMinWork = 8 * 8 * 8;
// Per-matrix work below which a batch is spread over Ember's threads, one single-threaded BLAS
// call per matrix (Note [BLAS threads]); above it each call uses every thread itself.
constexpr int64_t kBlasBatchParallelWork = int64_t(1) << 21;

template <typename T>
bool blas_gemm(const Tensor& out, const Tensor& a_in, const Tensor& b_in, T alpha, T beta) {
  const int64_t batch = out.size(0), M = out.size(1), N = out.size(2), K = a_in.size(2);
  if (K == 0 || M * N * K < kBlasMinWork || std::max({M, N, K}) > blas::kMaxDim) return false;
  // Operands BLAS cannot read as strided matrices (expanded or doubly strided) are copied once.
  blas::Operand ao, bo, co;
  const Tensor a = blas::as_operand(M, K, a_in.stride(1), a_in.stride(2), ao) ? a_in : a_in.contiguous();
  const Tensor b = blas::as_operand(K, N, b_in.stride(1), b_in.stride(2), bo) ? b_in : b_in.contiguous();
  if (!blas::as_operand(M, K, a.stride(1), a.stride(2), ao) ||
      !blas::as_operand(K, N, b.stride(1), b.stride(2), bo) ||
      !blas::as_operand(M, N, out.stride(1), out.stride(2), co)) {
    return false;
  }
  const T* A = a.data<T>();
  const T* B = b.data<T>();
  T* C = out.data<T>();
  auto one = [&](int64_t i) {
    const T* Ai = A + i * a.stride(0);
    const T* Bi = B + i * b.stride(0);
    T* Ci = C + i * out.stride(0);
    if (!co.trans) {
      blas::gemm<T>(ao, bo, M, N, K, alpha, Ai, Bi, beta, Ci, co.ld);
    } else {  // a column-major C: compute C^T = op(B)^T op(A)^T
      blas::gemm<T>({!bo.trans, bo.ld}, {!ao.trans, ao.ld}, N, M, K, alpha, Bi, Ai, beta, Ci, co.ld);
    }
  };
  // One batch call instead of a call per matrix (one thread: 1.0-1.4x, the more the smaller the
  // matrices; two threads, 128^3 ones: 1.2x); small matrices at several threads are spread over
  // Ember's threads instead (there the batch call ran at half their speed). Real types only:
  // OpenBLAS 0.3.34's complex batch call returned wrong matrices for a batch of three 8x8.
  auto batched = [&]() -> bool {
    if constexpr (!std::is_floating_point_v<T>) {
      return false;
    } else {
      if (batch < 2 || M < 2 || N < 2 ||
          std::max({a.stride(0), b.stride(0), out.stride(0), batch}) > blas::kMaxDim)
        return false;
      if (!co.trans) {
        blas::gemm_batch<T>(ao, bo, M, N, K, alpha, A, a.stride(0), B, b.stride(0), beta, C, co.ld,
                            out.stride(0), batch);
      } else {
        blas::gemm_batch<T>({!bo.trans, bo.ld}, {!ao.trans, ao.ld}, N, M, K, alpha, B, b.stride(0), A,
                            a.stride(0), beta, C, co.ld, out.stride(0), batch);
      }
      return true;
    }
  };
  if (batch > 1 && M * N * K < kBlasBatchParallelWork && get_num_threads() > 1) {
    blas::SerialBlas serial;
    parallel_for(0, batch, std::max<int64_t>(1, kBlasBatchParallelWork / (M * N * K)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t i = lo; i < hi; ++i) one(i);
                 });
  } else if (!batched()) {
    for (int64_t i = 0; i < batch; ++i) one(i);
  }
  return true;
}

void gemm_kernel(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
                 const Scalar& beta) {
  visit<kInts | kFloats | kComplex>(out.dtype(), "matmul", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (is_complex_v<T>) {
      const T al(alpha.to_complex()), be(beta.to_complex());
      if (!blas_gemm<T>(out, a, b, al, be)) gemm_typed<T>(out, a, b, al, be);
    } else if constexpr (std::is_floating_point_v<T>) {
      const T al = static_cast<T>(alpha.to_double()), be = static_cast<T>(beta.to_double());
      if (!blas_gemm<T>(out, a, b, al, be)) gemm_typed<T>(out, a, b, al, be);
    } else {
      gemm_typed<T>(out, a, b, static_cast<T>(alpha.to_int()), static_cast<T>(beta.to_int()));
    }
  });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(gemm_stub, &gemm_kernel);

}  // namespace ember::EMBER_CPU_NS
