// CPU dense factorizations (interface in src/ops/kernels.h): LU with partial pivoting, Cholesky
// and triangular solves, each on a batch of contiguous row-major matrices, one matrix per task.
// These are the textbook right-looking algorithms (Golub & Van Loan 3.2, 4.2, 3.1): exact to
// rounding for the sizes Ember's users invert or solve; blocked variants would add speed only.
#include <algorithm>
#include <cmath>
#include <complex>

#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <typename T>
double magnitude(T v) {
  return std::abs(v);
}

template <typename T>
void lu_typed(const Tensor& a, const Tensor& pivots, const Tensor& info) {
  const int64_t batch = a.size(0), rows = a.size(1), cols = a.size(2), steps = std::min(rows, cols);
  T* base = a.data<T>();
  int32_t* piv = pivots.data<int32_t>();
  int32_t* inf = info.data<int32_t>();
  parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      T* m = base + b * rows * cols;
      int32_t* p = piv + b * steps;
      inf[b] = 0;
      for (int64_t k = 0; k < steps; ++k) {
        int64_t best = k;  // the largest remaining entry of column k is the pivot
        for (int64_t i = k + 1; i < rows; ++i)
          if (magnitude(m[i * cols + k]) > magnitude(m[best * cols + k])) best = i;
        p[k] = static_cast<int32_t>(best + 1);
        if (best != k)
          for (int64_t j = 0; j < cols; ++j) std::swap(m[k * cols + j], m[best * cols + j]);
        const T pivot = m[k * cols + k];
        if (pivot == T(0)) {
          if (inf[b] == 0) inf[b] = static_cast<int32_t>(k + 1);
          continue;  // a singular column: nothing to eliminate with
        }
        for (int64_t i = k + 1; i < rows; ++i) {
          const T factor = m[i * cols + k] / pivot;
          m[i * cols + k] = factor;
          for (int64_t j = k + 1; j < cols; ++j) m[i * cols + j] -= factor * m[k * cols + j];
        }
      }
    }
  });
}

template <typename T>
void cholesky_typed(const Tensor& a, const Tensor& info) {
  using R = decltype(std::real(T()));
  const int64_t batch = a.size(0), n = a.size(1);
  T* base = a.data<T>();
  int32_t* inf = info.data<int32_t>();
  parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      T* m = base + b * n * n;
      inf[b] = 0;
      for (int64_t j = 0; j < n && inf[b] == 0; ++j) {
        R d = std::real(m[j * n + j]);
        for (int64_t k = 0; k < j; ++k) d -= std::real(m[j * n + k] * conj_value(m[j * n + k]));
        if (!(d > R(0))) {  // also catches NaN
          inf[b] = static_cast<int32_t>(j + 1);
          break;
        }
        const R root = std::sqrt(d);
        m[j * n + j] = T(root);
        for (int64_t i = j + 1; i < n; ++i) {
          T s = m[i * n + j];
          for (int64_t k = 0; k < j; ++k) s -= m[i * n + k] * conj_value(m[j * n + k]);
          m[i * n + j] = s / root;
        }
      }
      for (int64_t i = 0; i < n; ++i)  // the factor is lower triangular
        for (int64_t j = i + 1; j < n; ++j) m[i * n + j] = T(0);
    }
  });
}

template <typename T>
void triangular_solve_typed(const Tensor& t, const Tensor& b, bool upper, bool unit) {
  const int64_t batch = b.size(0), n = b.size(1), k = b.size(2);
  const T* tb = t.data<T>();
  T* bb = b.data<T>();
  const int64_t t_batch_stride = t.size(0) == 1 ? 0 : n * n;  // one matrix may serve the batch
  parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const T* m = tb + s * t_batch_stride;
      T* x = bb + s * n * k;
      for (int64_t step = 0; step < n; ++step) {
        const int64_t i = upper ? n - 1 - step : step;  // back- or forward substitution
        for (int64_t c = 0; c < k; ++c) {
          T v = x[i * k + c];
          if (upper) {
            for (int64_t j = i + 1; j < n; ++j) v -= m[i * n + j] * x[j * k + c];
          } else {
            for (int64_t j = 0; j < i; ++j) v -= m[i * n + j] * x[j * k + c];
          }
          x[i * k + c] = unit ? v : v / m[i * n + i];
        }
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
