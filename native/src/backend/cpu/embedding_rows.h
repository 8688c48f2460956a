#pragma once
// Row helpers shared by the embedding kernels (embedding_kernels.cpp) and the table-batched
// embedding kernels (tbe_kernels.cpp): checked row numbers, prefetching, vectorized row sums
// held in registers, and the radix sort behind Note [sorted segment sums]. Included into each
// capability's build of those files, so everything here is internal to that build.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "ember/error.h"
#include "kernel_utils.h"
#include "vec.h"

namespace ember::EMBER_CPU_NS {
namespace {

constexpr int64_t kPrefetchAhead = 16;

#if defined(__AVX__) && !defined(__AVX512F__)
// The AVX mask of maskload/maskstore for the first n lanes of 32-bit (int32_t) or 64-bit
// (int64_t) elements: all ones there, zero after.
template <typename M>
inline __m256i avx_lane_mask(int64_t n) {
  static constexpr int32_t k32[16] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0};
  static constexpr int64_t k64[8] = {-1, -1, -1, -1, 0, 0, 0, 0};
  if constexpr (sizeof(M) == 4) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k32 + 8 - n));
  } else {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(k64 + 4 - n));
  }
}
#endif

// The first n (0 <= n < kLanes) elements of p, the other lanes zero; and the first n lanes of v
// stored to p. Masked loads and stores never touch (nor fault on) the lanes they skip, so a row's
// last partial vector can be read without reading past the row. float and double only.
template <typename T>
inline Vec<T> load_first(const T* p, int64_t n) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  Vec<T> v{};
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    const __m512 r = _mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p);
    std::memcpy(&v, &r, sizeof(v));
  } else {
    const __m512d r = _mm512_maskz_loadu_pd(static_cast<__mmask8>((1u << n) - 1), p);
    std::memcpy(&v, &r, sizeof(v));
  }
#elif defined(__AVX__)
  if constexpr (std::is_same_v<T, float>) {
    const __m256 r = _mm256_maskload_ps(p, avx_lane_mask<int32_t>(n));
    std::memcpy(&v, &r, sizeof(v));
  } else {
    const __m256d r = _mm256_maskload_pd(p, avx_lane_mask<int64_t>(n));
    std::memcpy(&v, &r, sizeof(v));
  }
#else
  std::memcpy(&v, p, static_cast<size_t>(n) * sizeof(T));
#endif
  return v;
}
// An integer vector selecting the last n lanes (all bits set there), for and_mask.
template <typename T>
inline auto tail_lanes(int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  typedef Bits BitsVec __attribute__((vector_size(kVecBytes)));
  BitsVec m{};
  for (int64_t i = 0; i < kLanes<T>; ++i) m[i] = i >= kLanes<T> - n ? Bits(-1) : Bits(0);
  return m;
}
template <typename T, typename M>
inline Vec<T> and_mask(const Vec<T>& v, const M& m) {
  M bits;
  std::memcpy(&bits, &v, sizeof(bits));
  bits &= m;
  Vec<T> out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

template <typename T>
inline void store_first(T* p, const Vec<T>& v, int64_t n) {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<T, float>) {
    __m512 r;
    std::memcpy(&r, &v, sizeof(r));
    _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), r);
  } else {
    __m512d r;
    std::memcpy(&r, &v, sizeof(r));
    _mm512_mask_storeu_pd(p, static_cast<__mmask8>((1u << n) - 1), r);
  }
#elif defined(__AVX__)
  if constexpr (std::is_same_v<T, float>) {
    __m256 r;
    std::memcpy(&r, &v, sizeof(r));
    _mm256_maskstore_ps(p, avx_lane_mask<int32_t>(n), r);
  } else {
    __m256d r;
    std::memcpy(&r, &v, sizeof(r));
    _mm256_maskstore_pd(p, avx_lane_mask<int64_t>(n), r);
  }
#else
  std::memcpy(p, &v, static_cast<size_t>(n) * sizeof(T));
#endif
}

[[noreturn]] void out_of_range(int64_t k, int64_t rows) {
  throw IndexError("[embedding] index out of range in self: expected every index in [0, " +
                   std::to_string(rows) + "), but got " + std::to_string(k));
}

// A bag's member out of range: RuntimeError with PyTorch's embedding_bag message.
[[noreturn]] void bag_out_of_range(int64_t i, int64_t k, int64_t rows) {
  throw Error("[embedding_bag] Index " + std::to_string(i) + " of input takes value " + std::to_string(k) +
              " which is not in the valid range [0, " + std::to_string(rows) + ")");
}

// Unsigned comparison: a negative index is as out of range as one past the end.
template <typename I>
inline int64_t checked_row(const I* idx, int64_t i, int64_t rows) {
  const int64_t k = static_cast<int64_t>(idx[i]);
  if (static_cast<uint64_t>(k) >= static_cast<uint64_t>(rows)) out_of_range(k, rows);
  return k;
}
template <typename I>
inline int64_t checked_bag_row(const I* idx, int64_t i, int64_t rows) {
  const int64_t k = static_cast<int64_t>(idx[i]);
  if (static_cast<uint64_t>(k) >= static_cast<uint64_t>(rows)) bag_out_of_range(i, k, rows);
  return k;
}

// The first position in [s, e) whose index is not a row, or -1: blocks of 256 are tested with a
// count the compiler vectorizes, and only a failing block is searched.
template <typename I>
int64_t first_bad_index(const I* idx, int64_t s, int64_t e, int64_t rows) {
  for (int64_t b = s; b < e; b += 256) {
    const int64_t b1 = std::min(e, b + 256);
    uint64_t bad = 0;
    for (int64_t i = b; i < b1; ++i)
      bad += static_cast<uint64_t>(static_cast<int64_t>(idx[i])) >= static_cast<uint64_t>(rows);
    if (bad == 0) continue;
    for (int64_t i = b; i < b1; ++i)
      if (static_cast<uint64_t>(static_cast<int64_t>(idx[i])) >= static_cast<uint64_t>(rows)) return i;
  }
  return -1;
}

// Asks for every cache line of the row at idx[i] (when it is a valid row; prefetching never faults
// but a wild address would only pollute the cache).
template <typename T, typename I>
EMBER_ALWAYS_INLINE inline void prefetch_row(const T* table, int64_t stride, const I* idx, int64_t i,
                                             int64_t rows, int64_t bytes) {
  const int64_t k = static_cast<int64_t>(idx[i]);
  if (static_cast<uint64_t>(k) >= static_cast<uint64_t>(rows)) return;
  prefetch_lines(table + k * stride, bytes);
}

template <typename A>
inline void add_row(A* acc, const A* row, int64_t n) {
  int64_t d = 0;
  for (; d + kLanes<A> <= n; d += kLanes<A>) store(acc + d, load(acc + d) + load(row + d));
  for (; d < n; ++d) acc[d] += row[d];
}
template <typename A>
inline void axpy_row(A* acc, const A* row, A s, int64_t n) {
  const Vec<A> sv = splat(s);
  int64_t d = 0;
  for (; d + kLanes<A> <= n; d += kLanes<A>) store(acc + d, load(acc + d) + sv * load(row + d));
  for (; d < n; ++d) acc[d] += s * row[d];
}
template <typename A>
inline void scale_row(A* acc, A s, int64_t n) {
  const Vec<A> sv = splat(s);
  int64_t d = 0;
  for (; d + kLanes<A> <= n; d += kLanes<A>) store(acc + d, load(acc + d) * sv);
  for (; d < n; ++d) acc[d] *= s;
}

// Reduced-precision rows are widened to float before they are summed.
template <typename T, typename A>
inline void add_row_any(A* acc, const T* row, A s, bool scaled, int64_t n) {
  if constexpr (std::is_same_v<T, A>) {
    if (scaled) {
      axpy_row(acc, row, s, n);
    } else {
      add_row(acc, row, n);
    }
  } else {
    for (int64_t d = 0; d < n; ++d) acc[d] += s * static_cast<A>(row[d]);
  }
}

// acc += w * x for a weighted bag, acc += x otherwise.
template <bool kWeighted, typename V>
EMBER_ALWAYS_INLINE inline void accumulate(V& acc, const V& w, const V& x) {
  if constexpr (kWeighted) {
    acc += w * x;
  } else {
    acc += x;
  }
}

// The row kAhead lookups after position i (which reads row k), for prefetching: k itself at the end
// of the range, or when the index there is not a row (unless kChecked, every index up to `last` was
// checked by first_bad_index).
template <bool kChecked, typename I>
EMBER_ALWAYS_INLINE inline int64_t row_ahead(const I* idx, int64_t i, int64_t ahead, int64_t last, int64_t k,
                                             int64_t rows) {
  if constexpr (kChecked) {
    const int64_t a = i + ahead < last ? static_cast<int64_t>(idx[i + ahead]) : k;
    return static_cast<uint64_t>(a) < static_cast<uint64_t>(rows) ? a : k;
  } else {
    return static_cast<int64_t>(idx[std::min(i + ahead, last - 1)]);
  }
}

// One column tile of one sum/mean bag of a float or double table, its NV accumulators held in
// registers over all the bag's members (a tile kept in memory runs ~1.4x slower: the loads and
// stores of the partial sums crowd out the overlapping of the rows' cache misses). Each member
// also asks for the row `ahead` lookups on: about 8 KB of rows in flight (kPrefetchAhead lookups at
// most). With 512-byte rows (128 floats): on an AMD Zen 3, 8 lookups ahead ran 2-7% faster than 16
// (TBE forward, 1M-row tables); on a Zen 5 with AVX-512, 16 ahead ran 13% faster than 8 and as
// fast as 32 (EmbeddingBag, 8 tables of 1M rows). 16 is kept: the newer cores hold more misses in
// flight, and the older lose less.
// kAsk: what the tile asks for. A bag's first tile asks for the whole row (`ask` bytes):
// interleaved with its loads, one request per line, when it is the whole row (kTileIsRow), else
// by prefetch_lines (kRow). The other tiles ask for nothing (kNothing): they find the bag's rows in
// cache. Asking per tile for the tile's own columns, and not for a row's last line when the row
// does not start on one, left lines to be fetched when they were needed: EmbeddingBag on 8 tables
// of 1M x 100 floats (tiles of 64 and 32 floats, then 4 columns), Zen 5, one thread, 15.2 -> 12.6
// ms. Rows of several tiles are still slower per byte than rows of one (1M x 96: 10.5 ms against
// 6.4 for 1M x 128): no rows are asked for while the later tiles run.
enum class Ask { kTileIsRow, kRow, kNothing };
template <typename T, typename I, int NV, bool kWeighted, bool kChecked, Ask kAsk>
inline void sum_tile(const T* w, int64_t stride, int64_t rows, const I* idx, const T* psw, int64_t s,
                     int64_t e, int64_t last, int64_t pad, int64_t col, int64_t ahead, int64_t ask, T scale,
                     T* out) {
  constexpr int64_t L = kLanes<T>;
  constexpr int64_t kVecBytes = L * static_cast<int64_t>(sizeof(T));
  // A row that does not start on a line (a NumPy array's data) spans one line more.
  const bool off_line =
      ((reinterpret_cast<uintptr_t>(w) | static_cast<uintptr_t>(stride * sizeof(T))) & 63) != 0;
  Vec<T> acc[NV];
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) acc[v] = Vec<T>{};
  for (int64_t i = s; i < e; ++i) {
    const int64_t k = kChecked ? checked_bag_row(idx, i, rows) : static_cast<int64_t>(idx[i]);
    const int64_t next = row_ahead<kChecked>(idx, i, ahead, last, k, rows);
    if (k == pad) continue;
    const T* r = w + k * stride + col;
    const char* p = reinterpret_cast<const char*>(w + next * stride);
    Vec<T> wv{};
    if constexpr (kWeighted) wv = splat(psw[i]);
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) {
      accumulate<kWeighted>(acc[v], wv, load(r + v * L));
      if (kAsk == Ask::kTileIsRow && (v * kVecBytes) % 64 == 0) __builtin_prefetch(p + v * kVecBytes, 0, 3);
    }
    if constexpr (kAsk == Ask::kTileIsRow) {
      if (off_line) __builtin_prefetch(p + NV * kVecBytes - 1, 0, 3);
    } else if constexpr (kAsk == Ask::kRow) {
      prefetch_lines(p, ask);
    }
  }
  const Vec<T> sv = splat(scale);
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) store(out + col + v * L, acc[v] * sv);
}

// A sum/mean bag whose rows end in a partial vector and fit in registers: NV whole vectors and
// `tail` (< one vector) more columns, summed in one pass over the members, each member asking for
// the whole row `ahead` lookups on. The tail is the row's last whole vector (ending at the row's
// end, so nothing past the row is read) with its first lanes masked off; a row narrower than one
// vector is read with a masked load. Before, a scalar loop summed the tail columns in a second
// pass with a dependency through memory per member: against PyTorch 2.13's EmbeddingBag (8 tables
// of 1M rows, batch 2048, 20 per bag, one thread, Zen 5) 100 floats went from 1.07 to 0.98 and 20
// floats from 1.46 to 1.16. Rows of whole vectors keep the tiles below (one pass for 1, 2, 4, 8,
// 16 vectors; at 6 or 10 vectors one pass measured no better than two tiles).
template <typename T, typename I, int NV, bool kWeighted, bool kChecked>
inline void sum_row(const T* w, int64_t stride, int64_t rows, const I* idx, const T* psw, int64_t s,
                    int64_t e, int64_t last, int64_t pad, int64_t tail, int64_t ahead, int64_t row_bytes,
                    T scale, T* out) {
  constexpr int64_t L = kLanes<T>;
  Vec<T> acc[NV > 0 ? NV : 1];
  Vec<T> acc_tail{};
  const auto keep = tail_lanes<T>(tail);
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) acc[v] = Vec<T>{};
  for (int64_t i = s; i < e; ++i) {
    const int64_t k = kChecked ? checked_bag_row(idx, i, rows) : static_cast<int64_t>(idx[i]);
    const int64_t next = row_ahead<kChecked>(idx, i, ahead, last, k, rows);
    if (k == pad) continue;
    const T* r = w + k * stride;
    Vec<T> wv{};
    if constexpr (kWeighted) wv = splat(psw[i]);
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) accumulate<kWeighted>(acc[v], wv, load(r + v * L));
    if (tail != 0) {
      // the row's last vector, ending at its end; its lanes before the tail are masked off
      accumulate<kWeighted>(
          acc_tail, wv,
          NV > 0 ? and_mask<T>(load(r + NV * L + tail - L), keep) : load_first(r + NV * L, tail));
    }
    prefetch_lines(w + next * stride, row_bytes);
  }
  const Vec<T> sv = splat(scale);
  if (tail != 0 && NV > 0) store(out + NV * L + tail - L, acc_tail * sv);  // the full vectors then overwrite
  if (tail != 0 && NV == 0) store_first(out, acc_tail * sv, tail);         // its lanes before the tail
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) store(out + v * L, acc[v] * sv);
}

// Calls f(std::integral_constant<int, n>) for the n (0 <= n <= N) equal to `nv`.
template <int N, typename F>
EMBER_ALWAYS_INLINE inline void with_vector_count(int64_t nv, F&& f) {
  if constexpr (N >= 0) {
    if (nv == N) {
      f(std::integral_constant<int, N>{});
      return;
    }
    with_vector_count<N - 1>(nv, f);
  }
}

// A sum/mean bag of a float or double table. Rows with a partial last vector that fit in
// registers (fewer than 16 vectors, 8 with per-sample weights, whose splat needs a register) are
// summed in one pass (sum_row); others in column tiles of 16, 8, ..., 1 vectors, then the columns
// left over. Unless
// kChecked, the caller has checked every index from the bag's first to `last` (first_bad_index):
// the check per member and per prefetch cost 3-4% of a 1M-row lookup and 15% of an in-cache one.
template <typename T, typename I, bool kWeighted, bool kChecked>
void sum_bag(const T* w, int64_t stride, int64_t rows, int64_t width, const I* idx, const T* psw, int64_t s,
             int64_t e, int64_t last, int64_t pad, T scale, T* out) {
  constexpr int64_t L = kLanes<T>;
  constexpr int kMax = kWeighted ? 8 : 16;
  const int64_t row_bytes = width * static_cast<int64_t>(sizeof(T));
  const int64_t ahead = std::clamp<int64_t>(8192 / std::max<int64_t>(row_bytes, 1), 4, kPrefetchAhead);
  const int64_t whole = width / L, tail = width % L;
  if (whole < kMax && tail != 0) {
    with_vector_count<kMax - 1>(whole, [&](auto nv) {
      sum_row<T, I, decltype(nv)::value, kWeighted, kChecked>(w, stride, rows, idx, psw, s, e, last, pad,
                                                              tail, ahead, row_bytes, scale, out);
    });
    return;
  }
  int64_t col = 0;
  auto tile = [&](auto nv) {
    constexpr int NV = decltype(nv)::value;
    auto run = [&](auto ask) {
      sum_tile<T, I, NV, kWeighted, kChecked, decltype(ask)::value>(w, stride, rows, idx, psw, s, e, last,
                                                                    pad, col, ahead, row_bytes, scale, out);
    };
    if (col > 0) {
      run(std::integral_constant<Ask, Ask::kNothing>{});
    } else if (row_bytes == NV * L * static_cast<int64_t>(sizeof(T))) {
      run(std::integral_constant<Ask, Ask::kTileIsRow>{});
    } else {
      run(std::integral_constant<Ask, Ask::kRow>{});
    }
    col += NV * L;
  };
  while (width - col >= kMax * L) tile(std::integral_constant<int, kMax>{});
  if (kMax > 8 && width - col >= 8 * L) tile(std::integral_constant<int, 8>{});
  if (width - col >= 4 * L) tile(std::integral_constant<int, 4>{});
  if (width - col >= 2 * L) tile(std::integral_constant<int, 2>{});
  if (width - col >= L) tile(std::integral_constant<int, 1>{});
  if (width == 0) {  // nothing to read, but every index is still checked, as PyTorch does
    for (int64_t i = s; i < e; ++i) checked_bag_row(idx, i, rows);
  }
  if (col == width) return;
  for (int64_t d = col; d < width; ++d) out[d] = T(0);
  for (int64_t i = s; i < e; ++i) {
    const int64_t k = checked_bag_row(idx, i, rows);
    if (col == 0 && i + ahead < last) prefetch_row(w, stride, idx, i + ahead, rows, row_bytes);
    if (k == pad) continue;
    const T f = kWeighted ? psw[i] : T(1);
    for (int64_t d = col; d < width; ++d) out[d] += f * w[k * stride + d];
  }
  for (int64_t d = col; d < width; ++d) out[d] *= scale;
}

struct Member {
  int64_t row, pos;
};

void sort_by_row(std::vector<Member>& m, int64_t rows) {
  if (m.size() < 256) {
    std::stable_sort(m.begin(), m.end(), [](const Member& a, const Member& b) { return a.row < b.row; });
    return;
  }
  constexpr int kBits = 11;
  constexpr size_t kBuckets = size_t(1) << kBits;
  int bits = 0;
  while (bits < 63 && (uint64_t(1) << bits) < static_cast<uint64_t>(rows)) ++bits;
  std::vector<Member> tmp(m.size());
  std::vector<size_t> start(kBuckets);
  for (int shift = 0; shift < bits; shift += kBits) {
    std::fill(start.begin(), start.end(), 0);
    for (const Member& x : m) ++start[(static_cast<uint64_t>(x.row) >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (size_t& s : start) {
      const size_t c = s;
      s = sum;
      sum += c;
    }
    for (const Member& x : m) tmp[start[(static_cast<uint64_t>(x.row) >> shift) & (kBuckets - 1)]++] = x;
    m.swap(tmp);
  }
}

}  // namespace
}  // namespace ember::EMBER_CPU_NS
