// CPU kernels of the jagged ops and row gathers (interfaces in src/ops/fbgemm/jagged_kernels.h).
// The op bodies have validated every offset and index, and made every tensor contiguous; here all
// index arithmetic is 64-bit (a (B, max_len, D) dense tensor easily passes 2^31 elements).
//
// The jagged <-> dense copies move whole rows with memcpy (they are dtype-blind: only the element
// size matters), dense rows split over parallel_for. The products and softmax accumulate in
// acc_t (float for the 16-bit types) with inner loops over the contiguous last dim, which the
// compiler vectorizes.
#include "ops/fbgemm/jagged_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "embedding_rows.h"
#include "ember/parallel.h"
#include "kernel_utils.h"

namespace ember::EMBER_CPU_NS {
namespace {

// Grain for parallel_for over rows of `bytes` bytes each: about 64 KiB of copying per chunk.
int64_t row_grain(int64_t bytes) {
  return std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(bytes, 1));
}

void fill_pattern(char* dst, const void* pad, int64_t n, int64_t elem) {
  if (n <= 0) return;
  bool zero = true;
  for (int64_t b = 0; b < elem; ++b) zero = zero && static_cast<const char*>(pad)[b] == 0;
  if (zero) {
    std::memset(dst, 0, static_cast<size_t>(n * elem));
    return;
  }
  std::memcpy(dst, pad, static_cast<size_t>(elem));
  // doubling copies: log2(n) memcpy calls instead of n
  int64_t done = 1;
  while (done < n) {
    const int64_t k = std::min(done, n - done);
    std::memcpy(dst + done * elem, dst, static_cast<size_t>(k * elem));
    done += k;
  }
}

void jagged_to_dense_kernel(const JaggedLayout& lay, const Tensor& values, const Tensor& dense,
                            const void* pad) {
  const int64_t elem = values.element_size();
  const int64_t D = dense.numel() / std::max<int64_t>(lay.rows * lay.max_len, 1);
  const int64_t row_bytes = D * elem;
  const char* src = static_cast<const char*>(values.data_ptr());
  char* dst = static_cast<char*>(dense.data_ptr());
  const int64_t max_len = lay.max_len;
  parallel_for(0, lay.rows, row_grain(max_len * row_bytes), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      char* out = dst + r * max_len * row_bytes;
      const int64_t s = lay.outer_seg ? lay.outer_seg[r] : r;
      int64_t n = 0;
      if (s >= 0) {
        const int64_t begin = lay.offsets[s];
        n = std::min(lay.offsets[s + 1] - begin, max_len);
        if (n > 0) std::memcpy(out, src + begin * row_bytes, static_cast<size_t>(n * row_bytes));
      }
      fill_pattern(out + n * row_bytes, pad, (max_len - n) * D, elem);
    }
  });
}

void dense_to_jagged_kernel(const JaggedLayout& lay, const Tensor& dense, const Tensor& values) {
  const int64_t elem = values.element_size();
  const int64_t L = values.size(0);
  const int64_t D = L > 0 ? values.numel() / L : 0;
  const int64_t row_bytes = D * elem;
  const char* src = static_cast<const char*>(dense.data_ptr());
  char* dst = static_cast<char*>(values.data_ptr());
  const int64_t max_len = lay.max_len;
  parallel_for(0, lay.rows, row_grain(max_len * row_bytes), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t s = lay.outer_seg ? lay.outer_seg[r] : r;
      if (s < 0) continue;
      const int64_t begin = lay.offsets[s];
      const int64_t len = lay.offsets[s + 1] - begin;
      const int64_t n = std::min(len, max_len);
      if (n > 0)
        std::memcpy(dst + begin * row_bytes, src + r * max_len * row_bytes,
                    static_cast<size_t>(n * row_bytes));
      if (len > n) std::memset(dst + (begin + n) * row_bytes, 0, static_cast<size_t>((len - n) * row_bytes));
    }
  });
}

// Calls f(T{}) with the floating type of `dtype` (the op bodies allow only these).
template <typename F>
void dispatch_floating(DType dtype, F&& f) {
  switch (dtype) {
    case DType::Float32: f(float{}); break;
    case DType::Float64: f(double{}); break;
    case DType::Float16: f(Half{}); break;
    case DType::BFloat16: f(BFloat16{}); break;
    default: throw TypeError(std::string("[jagged] expected a floating dtype, but got ") + dtype_name(dtype));
  }
}

void jagged_dense_bmm_kernel(const Tensor& x, const int64_t* offsets, int64_t B, const Tensor& y,
                             int64_t max_L, const Tensor& out) {
  const int64_t M = x.size(1), N = y.size(2);
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out.data<T>();
    // rows are independent: split the jagged rows of all segments, and find each row's segment
    parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
      std::vector<A> acc(static_cast<size_t>(N));
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t begin = offsets[b], len = offsets[b + 1] - begin;
        const int64_t n = std::min(len, max_L);
        const T* yb = yp + b * M * N;
        for (int64_t i = begin; i < begin + len; ++i) {
          T* orow = op + i * N;
          if (i - begin >= n) {
            for (int64_t c = 0; c < N; ++c) orow[c] = T(0.0f);
            continue;
          }
          std::fill(acc.begin(), acc.end(), A(0));
          const T* xrow = xp + i * M;
          for (int64_t m = 0; m < M; ++m) {
            const A s = static_cast<A>(xrow[m]);
            const T* yrow = yb + m * N;
            for (int64_t c = 0; c < N; ++c) acc[c] += s * static_cast<A>(yrow[c]);
          }
          for (int64_t c = 0; c < N; ++c) orow[c] = static_cast<T>(acc[c]);
        }
      }
    });
  });
}

void jagged_jagged_bmm_kernel(const Tensor& x, const Tensor& y, const int64_t* offsets, int64_t B,
                              int64_t max_L, const Tensor& out) {
  const int64_t M = x.size(1), N = y.size(1);
  dispatch_floating(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* xp = x.data<T>();
    const T* yp = y.data<T>();
    T* op = out.data<T>();
    parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
      std::vector<A> acc(static_cast<size_t>(M * N));
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t begin = offsets[b];
        const int64_t n = std::min(offsets[b + 1] - begin, max_L);
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t i = begin; i < begin + n; ++i) {
          const T* xrow = xp + i * M;
          const T* yrow = yp + i * N;
          for (int64_t m = 0; m < M; ++m) {
            const A s = static_cast<A>(xrow[m]);
            A* arow = acc.data() + m * N;
            for (int64_t c = 0; c < N; ++c) arow[c] += s * static_cast<A>(yrow[c]);
          }
        }
        T* ob = op + b * M * N;
        for (int64_t k = 0; k < M * N; ++k) ob[k] = static_cast<T>(acc[static_cast<size_t>(k)]);
      }
    });
  });
}

void dense_vec_jagged_kernel(const Tensor& v, const Tensor& a, const int64_t* offsets, int64_t B, int64_t H,
                             const Tensor& out) {
  const int64_t maxN = v.size(1);
  const int64_t D = out.size(1);
  const int64_t HD = H * D;
  dispatch_floating(v.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* vp = v.data<T>();
    const T* ap = a.data<T>();
    T* op = out.data<T>();
    parallel_for(0, B * H, 1, [&](int64_t r0, int64_t r1) {
      std::vector<A> acc(static_cast<size_t>(D));
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / H, h = r % H;
        const int64_t begin = offsets[b];
        const int64_t n = std::min(offsets[b + 1] - begin, maxN);
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t k = 0; k < n; ++k) {
          const A s = static_cast<A>(vp[r * maxN + k]);
          const T* arow = ap + (begin + k) * HD + h * D;
          for (int64_t d = 0; d < D; ++d) acc[d] += s * static_cast<A>(arow[d]);
        }
        for (int64_t d = 0; d < D; ++d) op[r * D + d] = static_cast<T>(acc[d]);
      }
    });
  });
}

void dense_vec_jagged_backward_kernel(const Tensor& grad, const Tensor& v, const Tensor& a,
                                      const int64_t* offsets, int64_t B, int64_t H, const Tensor& grad_v,
                                      const Tensor& grad_a) {
  const int64_t maxN = v.size(1);
  const int64_t D = grad.size(1);
  const int64_t HD = H * D;
  dispatch_floating(v.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* gp = grad.data<T>();
    const T* vp = v.data<T>();
    const T* ap = a.data<T>();
    T* gvp = grad_v.data<T>();
    T* gap = grad_a.data<T>();
    // one (b, h) pair writes its own row of grad_v and its own columns of grad_a's segment rows
    parallel_for(0, B * H, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / H, h = r % H;
        const int64_t begin = offsets[b];
        const int64_t len = offsets[b + 1] - begin;
        const int64_t n = std::min(len, maxN);
        const T* g = gp + r * D;
        for (int64_t k = 0; k < maxN; ++k) {
          A s = 0;
          if (k < n) {
            const T* arow = ap + (begin + k) * HD + h * D;
            for (int64_t d = 0; d < D; ++d) s += static_cast<A>(g[d]) * static_cast<A>(arow[d]);
          }
          gvp[r * maxN + k] = static_cast<T>(s);
        }
        for (int64_t k = 0; k < len; ++k) {
          T* garow = gap + (begin + k) * HD + h * D;
          const A s = k < n ? static_cast<A>(vp[r * maxN + k]) : A(0);
          for (int64_t d = 0; d < D; ++d) garow[d] = static_cast<T>(s * static_cast<A>(g[d]));
        }
      }
    });
  });
}

void jagged_softmax_kernel(const Tensor& values, const int64_t* offsets, int64_t B, int64_t max_L,
                           const Tensor& out) {
  const int64_t D = values.size(1);
  dispatch_floating(values.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* xp = values.data<T>();
    T* op = out.data<T>();
    parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
      std::vector<A> mx(static_cast<size_t>(D)), sum(static_cast<size_t>(D));
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t begin = offsets[b], len = offsets[b + 1] - begin;
        const int64_t n = std::min(len, max_L);
        std::fill(mx.begin(), mx.end(), -std::numeric_limits<A>::infinity());
        std::fill(sum.begin(), sum.end(), A(0));
        for (int64_t i = begin; i < begin + n; ++i)
          for (int64_t d = 0; d < D; ++d) mx[d] = std::max(mx[d], static_cast<A>(xp[i * D + d]));
        for (int64_t i = begin; i < begin + n; ++i)
          for (int64_t d = 0; d < D; ++d) sum[d] += std::exp(static_cast<A>(xp[i * D + d]) - mx[d]);
        for (int64_t i = begin; i < begin + n; ++i)
          for (int64_t d = 0; d < D; ++d)
            op[i * D + d] = static_cast<T>(std::exp(static_cast<A>(xp[i * D + d]) - mx[d]) / sum[d]);
        for (int64_t i = begin + n; i < begin + len; ++i)
          for (int64_t d = 0; d < D; ++d) op[i * D + d] = T(0.0f);
      }
    });
  });
}

void jagged_softmax_backward_kernel(const Tensor& grad, const Tensor& output, const int64_t* offsets,
                                    int64_t B, int64_t max_L, const Tensor& grad_input) {
  const int64_t D = grad.size(1);
  dispatch_floating(grad.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* gp = grad.data<T>();
    const T* yp = output.data<T>();
    T* op = grad_input.data<T>();
    parallel_for(0, B, 1, [&](int64_t b0, int64_t b1) {
      std::vector<A> dot(static_cast<size_t>(D));
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t begin = offsets[b], len = offsets[b + 1] - begin;
        const int64_t n = std::min(len, max_L);
        std::fill(dot.begin(), dot.end(), A(0));
        for (int64_t i = begin; i < begin + n; ++i)
          for (int64_t d = 0; d < D; ++d)
            dot[d] += static_cast<A>(gp[i * D + d]) * static_cast<A>(yp[i * D + d]);
        for (int64_t i = begin; i < begin + n; ++i)
          for (int64_t d = 0; d < D; ++d)
            op[i * D + d] =
                static_cast<T>(static_cast<A>(yp[i * D + d]) * (static_cast<A>(gp[i * D + d]) - dot[d]));
        for (int64_t i = begin + n; i < begin + len; ++i)
          for (int64_t d = 0; d < D; ++d) op[i * D + d] = T(0.0f);
      }
    });
  });
}

// ---- row gathers ---------------------------------------------------------------------------------

constexpr int64_t kGatherAhead = 8;

template <typename I>
void gather_rows_impl(const char* in, int64_t row_bytes, const I* idx, int64_t n, char* out) {
  // Rows are read at random from a large table: the loop is bound by memory latency, so each row
  // is requested kGatherAhead lookups before it is copied.
  const int64_t grain = std::max<int64_t>(64, row_grain(row_bytes));
  parallel_for(0, n, grain, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      if (i + kGatherAhead < i1) {
        const char* p = in + static_cast<int64_t>(idx[i + kGatherAhead]) * row_bytes;
        for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(p + b, 0, 0);
      }
      std::memcpy(out + i * row_bytes, in + static_cast<int64_t>(idx[i]) * row_bytes,
                  static_cast<size_t>(row_bytes));
    }
  });
}

void gather_rows_kernel(const Tensor& input, const Tensor& indices, const Tensor& out) {
  const int64_t n = indices.numel();
  const int64_t rows = input.size(0);
  const int64_t row_bytes = rows > 0 ? input.nbytes() / rows : 0;
  if (n == 0 || row_bytes == 0) return;
  const char* in = static_cast<const char*>(input.data_ptr());
  char* o = static_cast<char*>(out.data_ptr());
  if (indices.dtype() == DType::Int32)
    gather_rows_impl(in, row_bytes, indices.data<int32_t>(), n, o);
  else
    gather_rows_impl(in, row_bytes, indices.data<int64_t>(), n, o);
}

// Note [sorted segment sums] (embedding_kernels.cpp), with embedding_rows.h's Member and sort_by_row.
void scatter_add_rows_kernel(const Tensor& grad, const Tensor& indices, const Tensor& out) {
  const int64_t n = indices.numel();
  const int64_t rows = out.size(0);
  const int64_t D = rows > 0 ? out.numel() / rows : 0;
  if (n == 0 || D == 0) return;
  std::vector<Member> m(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t k =
        indices.dtype() == DType::Int32 ? int64_t(indices.data<int32_t>()[i]) : indices.data<int64_t>()[i];
    m[static_cast<size_t>(i)] = {k, i};
  }
  sort_by_row(m, rows);
  std::vector<int64_t> seg_start;
  for (int64_t i = 0; i < n; ++i)
    if (i == 0 || m[static_cast<size_t>(i)].row != m[static_cast<size_t>(i - 1)].row) seg_start.push_back(i);
  const int64_t segments = static_cast<int64_t>(seg_start.size());
  seg_start.push_back(n);
  dispatch_floating(grad.dtype(), [&](auto tag) {
    using T = decltype(tag);
    using A = acc_t<T>;
    const T* gp = grad.data<T>();
    T* op = out.data<T>();
    parallel_for(0, segments, std::max<int64_t>(1, 4096 / D), [&](int64_t s0, int64_t s1) {
      std::vector<A> acc(static_cast<size_t>(D));
      for (int64_t s = s0; s < s1; ++s) {
        std::fill(acc.begin(), acc.end(), A(0));
        for (int64_t j = seg_start[s]; j < seg_start[s + 1]; ++j) {
          const T* g = gp + m[static_cast<size_t>(j)].pos * D;
          for (int64_t d = 0; d < D; ++d) acc[d] += static_cast<A>(g[d]);
        }
        T* o = op + m[static_cast<size_t>(seg_start[s])].row * D;
        for (int64_t d = 0; d < D; ++d) o[d] = static_cast<T>(acc[d]);
      }
    });
  });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(jagged_to_dense_stub, &jagged_to_dense_kernel);
EMBER_REGISTER_CPU_KERNEL(dense_to_jagged_stub, &dense_to_jagged_kernel);
EMBER_REGISTER_CPU_KERNEL(jagged_dense_bmm_stub, &jagged_dense_bmm_kernel);
EMBER_REGISTER_CPU_KERNEL(jagged_jagged_bmm_stub, &jagged_jagged_bmm_kernel);
EMBER_REGISTER_CPU_KERNEL(dense_vec_jagged_stub, &dense_vec_jagged_kernel);
EMBER_REGISTER_CPU_KERNEL(dense_vec_jagged_backward_stub, &dense_vec_jagged_backward_kernel);
EMBER_REGISTER_CPU_KERNEL(jagged_softmax_stub, &jagged_softmax_kernel);
EMBER_REGISTER_CPU_KERNEL(jagged_softmax_backward_stub, &jagged_softmax_backward_kernel);
EMBER_REGISTER_CPU_KERNEL(gather_rows_stub, &gather_rows_kernel);
EMBER_REGISTER_CPU_KERNEL(scatter_add_rows_stub, &scatter_add_rows_kernel);

}  // namespace ember::EMBER_CPU_NS
