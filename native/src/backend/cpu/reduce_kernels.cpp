// CPU reduction kernel (interface in src/ops/kernels.h).
//
// Note [reduction layout]: `in` arrives permuted so the reduced dims are its trailing
// `reduced_dims` dims; `out` is contiguous over the kept dims. Each output element is reduced by
// one thread in a fixed order (8 interleaved accumulators on contiguous runs, combined in a fixed
// tree), so results do not depend on the thread count.
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "backend/cpu/vec.h"
#include "loops.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

struct Dims {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;  // in elements
};

// Coalesced (size, stride) list of dims [begin, end) of t, innermost last, size-1 dims dropped.
Dims coalesce(const Tensor& t, int64_t begin, int64_t end) {
  Dims d;
  for (int64_t i = begin; i < end; ++i) {
    const int64_t size = t.sizes()[i];
    const int64_t stride = t.strides()[i];
    if (size == 1) continue;
    if (!d.sizes.empty() && d.strides.back() == stride * size) {
      d.sizes.back() *= size;
      d.strides.back() = stride;
    } else {
      d.sizes.push_back(size);
      d.strides.push_back(stride);
    }
  }
  return d;
}

// Calls f(offset) for every element offset of the dims, row-major.
template <typename F>
void for_each_offset(const Dims& d, int64_t base, F f) {
  const size_t nd = d.sizes.size();
  for (int64_t size : d.sizes) {
    if (size == 0) return;  // an empty reduction visits nothing
  }
  if (nd == 0) {
    f(base);
    return;
  }
  std::vector<int64_t> index(nd, 0);
  int64_t off = base;
  while (true) {
    f(off);
    size_t k = nd;
    while (k > 0) {
      --k;
      if (++index[k] < d.sizes[k]) {
        off += d.strides[k];
        break;
      }
      off -= (d.sizes[k] - 1) * d.strides[k];
      index[k] = 0;
      if (k == 0) return;
    }
  }
}

template <typename A>
struct SumOp {
  static A init() { return A(0); }
  static A step(A acc, A x) { return wrap_add(acc, x); }
};
template <typename A>
struct ProdOp {
  static A init() { return A(1); }
  static A step(A acc, A x) { return wrap_mul(acc, x); }
};
template <typename A>
struct MaxOp {
  static A init() {
    if constexpr (std::is_integral_v<A>)
      return std::numeric_limits<A>::lowest();
    else
      return -std::numeric_limits<A>::infinity();
  }
  static A step(A acc, A x) {
    if constexpr (!std::is_integral_v<A>) {
      if (x != x || acc != acc) return acc != acc ? acc : x;
    }
    return x > acc ? x : acc;
  }
};
template <typename A>
struct MinOp {
  static A init() {
    if constexpr (std::is_integral_v<A>)
      return std::numeric_limits<A>::max();
    else
      return std::numeric_limits<A>::infinity();
  }
  static A step(A acc, A x) {
    if constexpr (!std::is_integral_v<A>) {
      if (x != x || acc != acc) return acc != acc ? acc : x;
    }
    return x < acc ? x : acc;
  }
};

template <typename A, typename Op>
constexpr bool is_float_extreme_v =
    std::is_floating_point_v<A> && (std::is_same_v<Op, MaxOp<A>> || std::is_same_v<Op, MinOp<A>>);

#if defined(__AVX2__)
// AVX2 max/min of a contiguous float32 run: compilers will not vectorize a float max reduction
// without -ffast-math, so it is written out. NaNs are tracked in a separate unordered mask
// (max_ps ignores a NaN in its first operand) and win at the end, as PyTorch's amax does.
template <bool IsMax>
float extreme_avx2(const float* p, int64_t n) {
  const float init = IsMax ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  __m256 a0 = _mm256_set1_ps(init), a1 = a0, nan = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 x0 = _mm256_loadu_ps(p + i), x1 = _mm256_loadu_ps(p + i + 8);
    a0 = IsMax ? _mm256_max_ps(x0, a0) : _mm256_min_ps(x0, a0);
    a1 = IsMax ? _mm256_max_ps(x1, a1) : _mm256_min_ps(x1, a1);
    nan = _mm256_or_ps(
        nan, _mm256_or_ps(_mm256_cmp_ps(x0, x0, _CMP_UNORD_Q), _mm256_cmp_ps(x1, x1, _CMP_UNORD_Q)));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, IsMax ? _mm256_max_ps(a0, a1) : _mm256_min_ps(a0, a1));
  bool any_nan = _mm256_movemask_ps(nan) != 0;
  float r = init;
  for (float v : lanes) r = IsMax ? (v > r ? v : r) : (v < r ? v : r);
  for (; i < n; ++i) {
    any_nan |= p[i] != p[i];
    r = IsMax ? (p[i] > r ? p[i] : r) : (p[i] < r ? p[i] : r);
  }
  return any_nan ? std::numeric_limits<float>::quiet_NaN() : r;
}
#endif

// Max/min of a contiguous float run.
template <typename T, typename Op>
acc_t<T> extreme_run(const T* p, int64_t n) {
  using A = acc_t<T>;
#if defined(__AVX2__)
  if constexpr (std::is_same_v<T, float>) return extreme_avx2<std::is_same_v<Op, MaxOp<A>>>(p, n);
#endif
  A acc = Op::init();
  for (int64_t i = 0; i < n; ++i) acc = Op::step(acc, static_cast<A>(p[i]));
  return acc;
}

// One output: reduce the elements at base + offsets of `red`.
template <typename T, typename Op>
acc_t<T> reduce_one(const T* data, int64_t base, const Dims& red) {
  using A = acc_t<T>;
  if constexpr (is_float_extreme_v<A, Op>) {
    if (red.sizes.size() == 1 && red.strides[0] == 1) return extreme_run<T, Op>(data + base, red.sizes[0]);
  }
  if constexpr (std::is_same_v<Op, SumOp<A>> && std::is_floating_point_v<T> && std::is_same_v<T, A>) {
    if (red.sizes.size() == 1 && red.strides[0] == 1) {  // contiguous float sum: 4 vectors of partial sums
      const T* p = data + base;
      const int64_t n = red.sizes[0];
      constexpr int64_t L = kLanes<T>;
      Vec<T> v0{}, v1{}, v2{}, v3{};
      int64_t i = 0;
      for (; i + 4 * L <= n; i += 4 * L) {
        v0 += load(p + i);
        v1 += load(p + i + L);
        v2 += load(p + i + 2 * L);
        v3 += load(p + i + 3 * L);
      }
      const Vec<T> v = (v0 + v1) + (v2 + v3);
      A acc = 0;
      for (int64_t k = 0; k < L; ++k) acc += v[k];
      for (; i < n; ++i) acc += p[i];
      return acc;
    }
  }
  if (red.sizes.size() == 1 && red.strides[0] == 1) {  // contiguous run: 8 independent chains
    const T* p = data + base;
    const int64_t n = red.sizes[0];
    A acc[8];
    for (auto& a : acc) a = Op::init();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      for (int k = 0; k < 8; ++k) acc[k] = Op::step(acc[k], static_cast<A>(p[i + k]));
    }
    for (; i < n; ++i) acc[0] = Op::step(acc[0], static_cast<A>(p[i]));
    A a01 = Op::step(acc[0], acc[1]), a23 = Op::step(acc[2], acc[3]);
    A a45 = Op::step(acc[4], acc[5]), a67 = Op::step(acc[6], acc[7]);
    return Op::step(Op::step(a01, a23), Op::step(a45, a67));
  }
  A acc = Op::init();
  for_each_offset(red, base, [&](int64_t off) { acc = Op::step(acc, static_cast<A>(data[off])); });
  return acc;
}

// Outer reduction: the innermost kept dim has stride 1 in the input, so whole rows are added into
// a contiguous block of accumulators (vectorized along the row). Each output element still sums
// its inputs in one fixed order, whatever the thread count.
template <typename T, typename Op>
void reduce_rows(const Tensor& out, const Dims& outer, const Dims& red, const T* data) {
  using A = acc_t<T>;
  const int64_t inner = outer.sizes.back();
  const int64_t prefix = out.numel() / inner;
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
  T* o = out.data<T>();
  int64_t r = 1;
  for (int64_t s : red.sizes) r *= s;
  parallel_for(0, prefix * blocks, std::max<int64_t>(1, kGrain / (kBlock * std::max<int64_t>(r, 1))),
               [&](int64_t b, int64_t e) {
                 A acc[kBlock];
                 for (int64_t job = b; job < e; ++job) {
                   const int64_t p = job / blocks;
                   const int64_t j0 = (job % blocks) * kBlock;
                   const int64_t len = std::min(kBlock, inner - j0);
                   int64_t base = j0, rest = p;
                   for (int64_t k = static_cast<int64_t>(outer.sizes.size()) - 2; k >= 0; --k) {
                     base += (rest % outer.sizes[k]) * outer.strides[k];
                     rest /= outer.sizes[k];
                   }
                   for (int64_t j = 0; j < len; ++j) acc[j] = Op::init();
                   for_each_offset(red, base, [&](int64_t off) {
                     const T* row = data + off;
                     for (int64_t j = 0; j < len; ++j) acc[j] = Op::step(acc[j], static_cast<A>(row[j]));
                   });
                   for (int64_t j = 0; j < len; ++j) o[p * inner + j0 + j] = static_cast<T>(acc[j]);
                 }
               });
}

template <typename T, typename Op>
void reduce_all_outputs(const Tensor& out, const Tensor& in, int64_t reduced_dims) {
  const Dims outer = coalesce(in, 0, in.dim() - reduced_dims);
  const Dims red = coalesce(in, in.dim() - reduced_dims, in.dim());
  const bool red_contiguous = red.sizes.size() == 1 && red.strides[0] == 1;
  if (!outer.sizes.empty() && outer.strides.back() == 1 && !red.sizes.empty() && !red_contiguous &&
      out.numel() > 1) {
    return reduce_rows<T, Op>(out, outer, red, in.data<T>());
  }
  int64_t r = 1;
  for (int64_t s : red.sizes) r *= s;
  const T* data = in.data<T>();
  T* o = out.data<T>();
  const int64_t n_out = out.numel();
  // Note [split reduction]: one long contiguous run (a full sum) is cut into fixed pieces reduced
  // in parallel and combined in piece order, so it uses every thread and its result still does
  // not depend on the thread count.
  constexpr int64_t kPiece = int64_t(1) << 16;
  if (n_out == 1 && red_contiguous && r > 2 * kPiece) {
    using A = acc_t<T>;
    const int64_t pieces = (r + kPiece - 1) / kPiece;
    // One byte (or more) per piece, never std::vector<bool>: its packed bits share words, and two
    // threads storing neighbouring pieces' results race (all()/any() of bool inputs once lost a
    // piece's true that way, intermittently, under load).
    const std::unique_ptr<A[]> partial(new A[pieces]);
    parallel_for(0, pieces, 1, [&](int64_t b, int64_t e) {
      for (int64_t q = b; q < e; ++q) {
        Dims piece;
        piece.sizes = {std::min(kPiece, r - q * kPiece)};
        piece.strides = {1};
        partial[q] = reduce_one<T, Op>(data, q * kPiece, piece);
      }
    });
    A acc = partial[0];
    for (int64_t q = 1; q < pieces; ++q) acc = Op::step(acc, partial[q]);
    o[0] = static_cast<T>(acc);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(r, 1));
  parallel_for(0, n_out, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t base = 0, rest = i;
      for (int64_t k = static_cast<int64_t>(outer.sizes.size()) - 1; k >= 0; --k) {
        base += (rest % outer.sizes[k]) * outer.strides[k];
        rest /= outer.sizes[k];
      }
      o[i] = static_cast<T>(reduce_one<T, Op>(data, base, red));
    }
  });
}

// Index of the first max (ArgMax) / min; NaN counts as the extreme, as in PyTorch.
template <typename T>
void arg_reduce(const Tensor& out, const Tensor& in, int64_t reduced_dims, bool is_max) {
  using A = acc_t<T>;
  const Dims outer = coalesce(in, 0, in.dim() - reduced_dims);
  Dims red;  // keep every reduced dim (no coalescing) so the linear index is row-major
  for (int64_t i = in.dim() - reduced_dims; i < in.dim(); ++i) {
    red.sizes.push_back(in.sizes()[i]);
    red.strides.push_back(in.strides()[i]);
  }
  const T* data = in.data<T>();
  int64_t* o = out.data<int64_t>();
  parallel_for(0, out.numel(), 1024, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t base = 0, rest = i;
      for (int64_t k = static_cast<int64_t>(outer.sizes.size()) - 1; k >= 0; --k) {
        base += (rest % outer.sizes[k]) * outer.strides[k];
        rest /= outer.sizes[k];
      }
      int64_t best = 0, idx = 0;
      A best_v = A(0);
      bool have = false, best_nan = false;
      for_each_offset(red, base, [&](int64_t off) {
        const A v = static_cast<A>(data[off]);
        if (!best_nan) {
          const bool nan = v != v;
          if (!have || nan || (is_max ? v > best_v : v < best_v)) {
            best = idx;
            best_v = v;
            best_nan = nan;
            have = true;
          }
        }
        ++idx;
      });
      o[i] = best;
    }
  });
}

void reduce_kernel(ReduceOp op, const Tensor& out, const Tensor& in, int64_t reduced_dims) {
  const DType d = in.dtype();
  switch (op) {
    case ReduceOp::Sum:
      return visit < kReal | kComplex > (d, "sum", [&](auto tag) {
                               using T = typename decltype(tag)::type;
                               reduce_all_outputs<T, SumOp<acc_t<T>>>(out, in, reduced_dims);
                             });
    case ReduceOp::Prod:
      return visit < kReal | kComplex > (d, "prod", [&](auto tag) {
                               using T = typename decltype(tag)::type;
                               reduce_all_outputs<T, ProdOp<acc_t<T>>>(out, in, reduced_dims);
                             });
    case ReduceOp::Max:
      return visit < kReal | kBool > (d, "amax", [&](auto tag) {
                               using T = typename decltype(tag)::type;
                               reduce_all_outputs<T, MaxOp<acc_t<T>>>(out, in, reduced_dims);
                             });
    case ReduceOp::Min:
      return visit < kReal | kBool > (d, "amin", [&](auto tag) {
                               using T = typename decltype(tag)::type;
                               reduce_all_outputs<T, MinOp<acc_t<T>>>(out, in, reduced_dims);
                             });
    case ReduceOp::All:  // inputs arrive as bool
      return reduce_all_outputs<bool, MinOp<bool>>(out, in, reduced_dims);
    case ReduceOp::Any: return reduce_all_outputs<bool, MaxOp<bool>>(out, in, reduced_dims);
    case ReduceOp::ArgMax:
    case ReduceOp::ArgMin:
      return visit < kReal | kBool > (d, "argmax", [&](auto tag) {
                               using T = typename decltype(tag)::type;
                               arg_reduce<T>(out, in, reduced_dims, op == ReduceOp::ArgMax);
                             });
  }
}

template <typename A>
A log_add_exp(A acc, A x) {
  if (acc != acc || x != x) return std::numeric_limits<A>::quiet_NaN();
  const A lo = std::min(acc, x);
  const A hi = std::max(acc, x);
  if (lo == hi && !std::isfinite(lo)) return x;  // both +inf or both -inf
  return hi + std::log1p(std::exp(lo - hi));
}

void scan_kernel(ScanOp op, const Tensor& out, const Tensor& indices, const Tensor& in) {
  visit<kReal | kBool | kComplex>(in.dtype(), "cumsum", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = acc_t<T>;
    const int64_t n = in.dim() == 0 ? 1 : in.sizes().back();
    const int64_t rows = n == 0 ? 0 : in.numel() / n;
    const T* src = in.data<T>();
    T* dst = out.data<T>();
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const T* row = src + r * n;
        T* o = dst + r * n;
        if (op == ScanOp::Sum || op == ScanOp::Prod) {
          A acc = op == ScanOp::Sum ? A(0) : A(1);
          for (int64_t i = 0; i < n; ++i) {
            const A x = static_cast<A>(row[i]);
            acc = op == ScanOp::Sum ? wrap_add(acc, x) : wrap_mul(acc, x);
            o[i] = static_cast<T>(acc);
          }
        } else if constexpr (!is_complex_v<A>) {
          if (op == ScanOp::LogSumExp) {
            if constexpr (std::is_floating_point_v<A>) {
              A acc = -std::numeric_limits<A>::infinity();
              for (int64_t i = 0; i < n; ++i)
                o[i] = static_cast<T>(acc = log_add_exp(acc, static_cast<A>(row[i])));
            }
            continue;
          }
          int64_t* at = indices.data<int64_t>() + r * n;
          A best = static_cast<A>(row[0]);
          int64_t where = 0;
          for (int64_t i = 0; i < n; ++i) {
            const A x = static_cast<A>(row[i]);
            const bool better = op == ScanOp::Max ? x >= best : x <= best;
            if (x != x || (best == best && better)) {
              best = x;
              where = i;
            }
            o[i] = static_cast<T>(best);
            at[i] = where;
          }
        }
      }
    });
  });
}

EMBER_REGISTER_CPU_KERNEL(reduce_stub, &reduce_kernel);
EMBER_REGISTER_CPU_KERNEL(scan_stub, &scan_kernel);

}  // namespace
}  // namespace ember::EMBER_CPU_NS
