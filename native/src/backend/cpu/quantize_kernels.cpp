// CPU kernels of quantization: quantize_per_tensor's codes (interface in src/ops/kernels.h), and
// the inference TBE (interface in src/ops/fbgemm/quantize_kernels.h; layouts and bounds checks in
// src/ops/fbgemm/int_nbit_tbe.cpp).
//
// The TBE's bags are split over parallel_for. A bag is pooled in column tiles of up to 8 vectors whose
// accumulators stay in registers over all the bag's rows; each row is decoded to floats in
// registers (codes widened and, for INT4/INT2, spread one code per lane with a shuffle, a
// variable shift and a mask) and added as FBGEMM's kernels add it: acc = fma(scale, q, acc + bias)
// for the quantized types (scale and bias first multiplied by the sample's weight), acc = fma(w,
// x, acc) for the float types; MEAN multiplies by 1/count at the end. Rows are prefetched
// kPrefetchAhead lookups ahead: a large table is read at random and the lookups are bound by
// memory latency. 32 rows ahead rather than 16 took INT8 from 5.1 to 3.4 ms and INT4 from 4.8 to
// 3.1 ms (8 x 1M x 128, batch 2048, pooling 20, one thread, AMD EPYC Zen 5): a quantized row is
// 1-3 cache lines, so twice as many rows still fit the misses in flight. The AVX-512 build
// decodes 16 codes per step (INT8 widened, INT4/INT2 spread from 8 / 4 bytes).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__AVX2__)
// Every AVX2 processor also converts halves (F16C); the AVX2 build uses it for fp16 rows, scales
// and outputs.
#pragma GCC target("f16c")
#include <immintrin.h>
#endif

#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/fbgemm/quantize_kernels.h"
#include "ops/kernels.h"
#include "vec.h"

namespace ember::EMBER_CPU_NS {
namespace {

using Ty = TbeWeightType;
using VF = Vec<float>;
using VI = Vec<int32_t>;
using VU = Vec<uint32_t>;
constexpr int64_t L = kLanes<float>;
typedef uint8_t VB __attribute__((vector_size(L)));       // L bytes
typedef uint16_t VH __attribute__((vector_size(2 * L)));  // L 16-bit values
constexpr int64_t kPrefetchAhead = 32;
constexpr int kMaxTile = 8;  // vectors of accumulators

template <typename T>
struct TypeTag {
  using type = T;
};

constexpr bool is_quantized(Ty ty) {
  return ty == Ty::INT8 || ty == Ty::INT4 || ty == Ty::INT2;
}
constexpr int bits_of(Ty ty) {
  return ty == Ty::INT4 ? 4 : ty == Ty::INT2 ? 2 : 8;
}

struct Fp8 {
  int shift;         // code bits << shift puts the mantissa at float's mantissa position
  float multiplier;  // 2^(127 - bias)
};

inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Lane j of a spread vector takes code j of a group of `per` codes per byte.
template <int per>
inline VI spread_index() {
  VI v;
  for (int j = 0; j < L; ++j) v[j] = j / per;
  return v;
}
template <int per>
inline VI spread_shift() {
  VI v;
  for (int j = 0; j < L; ++j) v[j] = (j % per) * (8 / per);
  return v;
}

inline VF half_to_float(VU h) {
  const VU sign = (h & 0x8000u) << 16;
  const VU em = h & 0x7FFFu;
  VU f = (VU)((VF)(em << 13) * 0x1p112f);  // normals and subnormals, exactly
  f = em >= 0x7C00u ? ((em << 13) | 0x7F800000u) : f;
  return (VF)(f | sign);
}
inline float half_to_float(uint16_t h) {
#if defined(__AVX2__)
  return _cvtsh_ss(h);
#else
  return detail::half_bits_to_float(h);
#endif
}

// L values of a row from element `col` (col a multiple of L), as floats.
template <Ty TY>
inline VF load_values(const uint8_t* data, int64_t col, const Fp8& fp8) {
#if defined(__AVX512F__)
  if constexpr (TY == Ty::FP16) {
    return (VF)_mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + 2 * col)));
  } else if constexpr (TY == Ty::BF16) {
    const __m512i u =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(data + 2 * col)));
    return (VF)_mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
  } else if constexpr (TY == Ty::INT8) {
    return (VF)_mm512_cvtepi32_ps(
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + col))));
  } else if constexpr (TY == Ty::INT4) {
    // 8 bytes hold 16 codes: code 2j is byte j's low nibble, code 2j + 1 its high one
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(data + col / 2));
    const __m128i codes = _mm_and_si128(_mm_unpacklo_epi8(b, _mm_srli_epi16(b, 4)), _mm_set1_epi8(15));
    return (VF)_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(codes));
  } else if constexpr (TY == Ty::INT2) {
    // 4 bytes hold 16 codes: each byte to four lanes, then lane j shifted right by 2 * (j % 4)
    int32_t four;
    std::memcpy(&four, data + col / 4, 4);
    const __m128i dup = _mm_shuffle_epi8(_mm_cvtsi32_si128(four),
                                         _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3));
    const __m512i w = _mm512_srlv_epi32(_mm512_cvtepu8_epi32(dup),
                                        _mm512_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6, 0, 2, 4, 6));
    return (VF)_mm512_cvtepi32_ps(_mm512_and_si512(w, _mm512_set1_epi32(3)));
  }
#elif defined(__AVX2__)
  if constexpr (TY == Ty::FP16) {
    return (VF)_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 2 * col)));
  } else if constexpr (TY == Ty::BF16) {
    const __m256i u =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(data + 2 * col)));
    return (VF)_mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
  } else if constexpr (TY == Ty::FP8) {
    const VU u = (VU)_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(data + col)));
    const VU sign = (u & 0x80u) << 24;
    const VF mag = (VF)((u & 0x7Fu) << fp8.shift) * fp8.multiplier;
    return (VF)((VU)mag | sign);
  } else if constexpr (TY == Ty::INT8) {
    return (VF)_mm256_cvtepi32_ps(
        _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(data + col))));
  } else if constexpr (TY == Ty::INT4) {
    int32_t four;
    std::memcpy(&four, data + col / 2, 4);
    const __m128i dup = _mm_shuffle_epi8(
        _mm_cvtsi32_si128(four), _mm_setr_epi8(0, 0, 1, 1, 2, 2, 3, 3, -1, -1, -1, -1, -1, -1, -1, -1));
    const __m256i w = _mm256_srlv_epi32(_mm256_cvtepu8_epi32(dup), _mm256_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4));
    return (VF)_mm256_cvtepi32_ps(_mm256_and_si256(w, _mm256_set1_epi32(15)));
  } else if constexpr (TY == Ty::INT2) {
    int16_t two;
    std::memcpy(&two, data + col / 4, 2);
    const __m128i dup =
        _mm_shuffle_epi8(_mm_cvtsi32_si128(static_cast<uint16_t>(two)),
                         _mm_setr_epi8(0, 0, 0, 0, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1));
    const __m256i w = _mm256_srlv_epi32(_mm256_cvtepu8_epi32(dup), _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6));
    return (VF)_mm256_cvtepi32_ps(_mm256_and_si256(w, _mm256_set1_epi32(3)));
  }
#endif
  if constexpr (TY == Ty::FP32) {
    return load(reinterpret_cast<const float*>(data) + col);
  } else if constexpr (TY == Ty::FP16 || TY == Ty::BF16) {
    VH h;
    std::memcpy(&h, data + 2 * col, sizeof(h));
    const VU u = __builtin_convertvector(h, VU);
    if constexpr (TY == Ty::BF16) {
      return (VF)(u << 16);
    } else {
      return half_to_float(u);
    }
  } else if constexpr (TY == Ty::FP8) {
    VB b;
    std::memcpy(&b, data + col, sizeof(b));
    const VU u = __builtin_convertvector(b, VU);
    const VU sign = (u & 0x80u) << 24;
    const VF mag = (VF)((u & 0x7Fu) << fp8.shift) * fp8.multiplier;
    return (VF)((VU)mag | sign);
  } else {
    constexpr int bits = bits_of(TY), per = 8 / bits;
    VB b{};
    std::memcpy(&b, data + col / per, L / per);
    const VI w = __builtin_convertvector(b, VI);
    if constexpr (per == 1) {
      return __builtin_convertvector(w, VF);
    } else {
      const VI spread =
          (__builtin_shuffle(w, spread_index<per>()) >> spread_shift<per>()) & ((1 << bits) - 1);
      return __builtin_convertvector(spread, VF);
    }
  }
}

// How many vectors load_step decodes at once: two for INT4 on AVX2, whose 8 bytes of codes give
// 16 values for one load, shift, interleave and mask (one code per lane through a shuffle and a
// variable shift took 6 instructions per 8 values; this takes 4.5).
template <Ty TY>
constexpr int kStep = (TY == Ty::INT4 && L == 8) ? 2 : 1;

// S vectors of a row from element `col` (S is kStep<TY>, or 1 for a last odd vector).
template <Ty TY, int S>
inline void load_step(const uint8_t* data, int64_t col, const Fp8& fp8, VF* q) {
#if defined(__AVX2__) && !defined(__AVX512F__)
  if constexpr (S == 2) {
    const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(data + col / 2));
    // code 2j is byte j's low nibble, code 2j + 1 its high one
    const __m128i codes = _mm_and_si128(_mm_unpacklo_epi8(b, _mm_srli_epi16(b, 4)), _mm_set1_epi8(15));
    q[0] = (VF)_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(codes));
    q[1] = (VF)_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(codes, codes)));
    return;
  }
#endif
  static_assert(S == 1 || kStep<TY> == S, "a step of two vectors is INT4's on AVX2 alone");
  q[0] = load_values<TY>(data, col, fp8);
}

// A quantized row's fp16 scale and bias (scaled by the sample's weight w), each in every lane.
inline void scale_bias(const uint8_t* row, float w, bool weighted, VF& sv, VF& bv) {
#if defined(__AVX2__)
  int32_t both;
  std::memcpy(&both, row, 4);
  __m128 sb = _mm_cvtph_ps(_mm_cvtsi32_si128(both));  // [scale, bias, 0, 0], one conversion
  if (weighted) sb = _mm_mul_ps(sb, _mm_set1_ps(w));
#if defined(__AVX512F__)
  sv = (VF)_mm512_broadcastss_ps(sb);
  bv = (VF)_mm512_broadcastss_ps(_mm_movehdup_ps(sb));
#else
  sv = (VF)_mm256_broadcastss_ps(sb);
  bv = (VF)_mm256_broadcastss_ps(_mm_movehdup_ps(sb));
#endif
#else
  uint16_t qp[2];
  std::memcpy(qp, row, 4);
  float scale = half_to_float(qp[0]), bias = half_to_float(qp[1]);
  if (weighted) {
    scale *= w;
    bias *= w;
  }
  sv = splat(scale);
  bv = splat(bias);
#endif
}

template <Ty TY>
inline float load_value(const uint8_t* data, int64_t d, const Fp8& fp8) {
  if constexpr (TY == Ty::FP32) {
    float f;
    std::memcpy(&f, data + 4 * d, 4);
    return f;
  } else if constexpr (TY == Ty::FP16 || TY == Ty::BF16) {
    uint16_t h;
    std::memcpy(&h, data + 2 * d, 2);
    return TY == Ty::BF16 ? bits_float(static_cast<uint32_t>(h) << 16) : half_to_float(h);
  } else if constexpr (TY == Ty::FP8) {
    const uint32_t u = data[d];
    const float mag = bits_float((u & 0x7Fu) << fp8.shift) * fp8.multiplier;
    return bits_float(float_bits(mag) | ((u & 0x80u) << 24));
  } else {
    constexpr int bits = bits_of(TY), per = 8 / bits;
    return static_cast<float>((data[d / per] >> ((d % per) * bits)) & ((1 << bits) - 1));
  }
}

[[noreturn]] void bad_index(const IntNBitTbeArgs& a, int64_t t, int64_t b, int64_t i, int64_t k,
                            int64_t rows) {
  throw IndexError(std::string("[") + a.op + "] expected every index of table " + std::to_string(t) +
                   " in [0, " + std::to_string(rows) + "), but got " + std::to_string(k) + " in bag " +
                   std::to_string(b) + " (indices[" + std::to_string(i) + "])");
}

struct Bag {
  const IntNBitTbeArgs* a;
  const TbeFeature* f;
  int64_t t, b, s, e, last;  // members [s, e); prefetching reaches up to `last`
  Fp8 fp8;
};

// A valid row index, or -1 for one to leave out (repair modes); raises in FATAL mode.
template <typename I>
inline int64_t row_of(const Bag& g, const I* idx, int64_t i) {
  const int64_t k = static_cast<int64_t>(idx[i]);
  if (static_cast<uint64_t>(k) < static_cast<uint64_t>(g.f->rows)) return k;
  if (!g.a->skip_bad_indices) bad_index(*g.a, g.t, g.b, i, k, g.f->rows);
  return -1;
}

EMBER_ALWAYS_INLINE inline void prefetch_row(const uint8_t* p, int64_t bytes) {  // Note [prefetch helpers]
  prefetch_lines(p, bytes);
  __builtin_prefetch(p + bytes - 1, 0, 3);
}

// Pools columns [col, col + NV*L) of the bag into acc; returns the rows counted.
template <Ty TY, int NV, bool kW, typename I>
inline int64_t pool_tile(const Bag& g, const I* idx, int64_t col, bool prefetch, VF* out_acc) {
  const TbeFeature& f = *g.f;
  constexpr int64_t head = is_quantized(TY) ? 4 : 0;
  const float* psw = g.a->weights;
  VF acc[NV];
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) acc[v] = VF{};
  int64_t count = 0;
  for (int64_t i = g.s; i < g.e; ++i) {
    if (prefetch && i + kPrefetchAhead < g.last) {
      const int64_t ka = static_cast<int64_t>(idx[i + kPrefetchAhead]);
      if (static_cast<uint64_t>(ka) < static_cast<uint64_t>(f.rows))
        prefetch_row(f.base + ka * f.row_bytes, f.row_bytes);
    }
    const int64_t k = row_of(g, idx, i);
    if (k < 0) continue;
    ++count;
    const uint8_t* row = f.base + k * f.row_bytes;
    const uint8_t* data = row + head;
    if constexpr (is_quantized(TY)) {
      VF sv, bv;
      scale_bias(row, kW ? psw[i] : 1.0f, kW, sv, bv);
      constexpr int S = NV % kStep<TY> == 0 ? kStep<TY> : 1;
#pragma GCC unroll 8
      for (int v = 0; v < NV; v += S) {
        VF q[S];
        load_step<TY, S>(data, col + v * L, g.fp8, q);
#pragma GCC unroll 2
        for (int u = 0; u < S; ++u) acc[v + u] = (acc[v + u] + bv) + sv * q[u];
      }
    } else {
      if constexpr (kW) {
        const VF wv = splat(psw[i]);
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[v] = acc[v] + wv * load_values<TY>(data, col + v * L, g.fp8);
      } else {
#pragma GCC unroll 8
        for (int v = 0; v < NV; ++v) acc[v] = acc[v] + load_values<TY>(data, col + v * L, g.fp8);
      }
    }
  }
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) out_acc[v] = acc[v];
  return count;
}

// Pools the bag into `out` (D floats); returns the rows counted.
template <Ty TY, bool kW, typename I>
int64_t pool_bag(const Bag& g, const I* idx, float* out) {
  const int64_t D = g.f->D;
  int64_t col = 0, count = -1;
  VF acc[kMaxTile];
  auto tile = [&](auto nv) {
    constexpr int NV = decltype(nv)::value;
    while (D - col >= NV * L) {
      const int64_t c = pool_tile<TY, NV, kW, I>(g, idx, col, count < 0, acc);
      if (count < 0) count = c;
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) store(out + col + v * L, acc[v]);
      col += NV * L;
    }
  };
  tile(std::integral_constant<int, kMaxTile>{});
  tile(std::integral_constant<int, 4>{});
  tile(std::integral_constant<int, 2>{});
  tile(std::integral_constant<int, 1>{});
  if (col < D || count < 0) {  // the columns left over (and, for D < L, the checks and the count)
    const TbeFeature& f = *g.f;
    constexpr int64_t head = is_quantized(TY) ? 4 : 0;
    for (int64_t d = col; d < D; ++d) out[d] = 0.0f;
    int64_t c = 0;
    for (int64_t i = g.s; i < g.e; ++i) {
      const int64_t k = row_of(g, idx, i);
      if (k < 0) continue;
      ++c;
      const uint8_t* row = f.base + k * f.row_bytes;
      const uint8_t* data = row + head;
      const float w = kW ? g.a->weights[i] : 1.0f;
      if constexpr (is_quantized(TY)) {
        uint16_t qp[2];
        std::memcpy(qp, row, 4);
        float scale = half_to_float(qp[0]), bias = half_to_float(qp[1]);
        if constexpr (kW) {
          scale *= w;
          bias *= w;
        }
        for (int64_t d = col; d < D; ++d)
          out[d] = __builtin_fmaf(scale, load_value<TY>(data, d, g.fp8), out[d] + bias);
      } else {
        for (int64_t d = col; d < D; ++d) out[d] = __builtin_fmaf(w, load_value<TY>(data, d, g.fp8), out[d]);
      }
    }
    if (count < 0) count = c;
  }
  return count;
}

template <typename O>
inline void write_row(O* dst, const float* src, int64_t D) {
  if constexpr (std::is_same_v<O, float>) {
    std::memcpy(dst, src, static_cast<size_t>(D) * sizeof(float));
  } else {
    int64_t d = 0;
#if defined(__AVX512F__)
    if constexpr (std::is_same_v<O, Half>) {
      for (; d + 16 <= D; d += 16)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + d),
                            _mm512_cvtps_ph(_mm512_loadu_ps(src + d), _MM_FROUND_TO_NEAREST_INT));
    }
#endif
#if defined(__AVX2__)
    if constexpr (std::is_same_v<O, Half>) {
      for (; d + 8 <= D; d += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + d),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + d), _MM_FROUND_TO_NEAREST_INT));
    }
#endif
    if constexpr (std::is_same_v<O, BFloat16>) {  // FBGEMM's rounding: + half an ulp, truncated
      for (; d < D; ++d) {
        if (src[d] != src[d]) {
          dst[d] = BFloat16(src[d]);
        } else {
          dst[d].bits = static_cast<uint16_t>((float_bits(src[d]) + 0x8000u) >> 16);
        }
      }
    }
    for (; d < D; ++d) dst[d] = O(src[d]);
  }
}
template <Ty TY, bool kW, typename I, typename O>
void run_feature_bags(const IntNBitTbeArgs& a, int64_t bag0, int64_t bag1, float* scratch, int64_t* skipped) {
  const I* idx = a.indices.data<I>();
  O* out = a.out.data<O>();
  for (int64_t bag = bag0; bag < bag1; ++bag) {
    const int64_t t = bag / a.B, b = bag % a.B;
    const TbeFeature& f = a.features[t];
    Bag g{&a, &f, t, b, a.offsets[bag], a.offsets[bag + 1], a.offsets[(t + 1) * a.B], {}};
    if constexpr (TY == Ty::FP8)
      g.fp8 = {24 - (8 - a.fp8_exponent_bits),
               bits_float(static_cast<uint32_t>(254 - a.fp8_exponent_bias) << 23)};
    if (a.pooling == 2) {  // one output row per index
      for (int64_t i = g.s; i < g.e; ++i) {
        Bag one = g;
        one.s = i;
        one.e = i + 1;
        const int64_t c = pool_bag<TY, false, I>(one, idx, scratch);
        if (c == 0) {
          ++*skipped;
          continue;  // the output row stays zero
        }
        write_row(out + i * f.D, scratch, f.D);
      }
      continue;
    }
    const int64_t c = pool_bag<TY, kW, I>(g, idx, scratch);
    *skipped += (g.e - g.s) - c;
    if (a.pooling == 1 && c > 0) {
      const float inv = 1.0f / static_cast<float>(c);
      for (int64_t d = 0; d < f.D; ++d) scratch[d] *= inv;
    } else if (c == 0) {
      for (int64_t d = 0; d < f.D; ++d) scratch[d] = 0.0f;
    }
    write_row(out + b * a.total_D + f.D_start, scratch, f.D);
  }
}

template <typename I, typename O>
void run_bags(const IntNBitTbeArgs& a, int64_t bag0, int64_t bag1, float* scratch, int64_t* skipped) {
  // runs of bags of one feature share a specialization
  while (bag0 < bag1) {
    const int64_t t = bag0 / a.B, end = std::min(bag1, (t + 1) * a.B);
    const bool w = a.weights != nullptr;
    auto go = [&](auto ty) {
      constexpr Ty TY = decltype(ty)::value;
      if (w) {
        run_feature_bags<TY, true, I, O>(a, bag0, end, scratch, skipped);
      } else {
        run_feature_bags<TY, false, I, O>(a, bag0, end, scratch, skipped);
      }
    };
    switch (a.features[t].ty) {
      case Ty::FP32: go(std::integral_constant<Ty, Ty::FP32>{}); break;
      case Ty::FP16: go(std::integral_constant<Ty, Ty::FP16>{}); break;
      case Ty::BF16: go(std::integral_constant<Ty, Ty::BF16>{}); break;
      case Ty::FP8: go(std::integral_constant<Ty, Ty::FP8>{}); break;
      case Ty::INT8: go(std::integral_constant<Ty, Ty::INT8>{}); break;
      case Ty::INT4: go(std::integral_constant<Ty, Ty::INT4>{}); break;
      case Ty::INT2: go(std::integral_constant<Ty, Ty::INT2>{}); break;
    }
    bag0 = end;
  }
}

void int_nbit_tbe_kernel(const IntNBitTbeArgs& a) {
  const int64_t T = static_cast<int64_t>(a.features.size()), nbags = T * a.B;
  int64_t max_D = 0;
  for (const TbeFeature& f : a.features) max_D = std::max(max_D, f.D);
  const int64_t grain = std::max<int64_t>(1, 2048 / std::max<int64_t>(max_D, 1));
  parallel_for(0, nbags, grain, [&](int64_t bag0, int64_t bag1) {
    std::vector<float> scratch(static_cast<size_t>(max_D + L));
    int64_t skipped = 0;
    auto go = [&](auto itag, auto otag) {
      using I = typename decltype(itag)::type;
      using O = typename decltype(otag)::type;
      run_bags<I, O>(a, bag0, bag1, scratch.data(), &skipped);
    };
    auto with_out = [&](auto itag) {
      switch (a.out.dtype()) {
        case DType::Float16: go(itag, TypeTag<Half>{}); break;
        case DType::BFloat16: go(itag, TypeTag<BFloat16>{}); break;
        default: go(itag, TypeTag<float>{});
      }
    };
    if (a.indices.dtype() == DType::Int32) {
      with_out(TypeTag<int32_t>{});
    } else {
      with_out(TypeTag<int64_t>{});
    }
    if (skipped && a.skipped) a.skipped->fetch_add(skipped);
  });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(int_nbit_tbe_stub, &int_nbit_tbe_kernel);

namespace {

// Note [quantize arithmetic] (src/ops/quantization/quantized.cpp): FBGEMM's Quantize, the fused
// multiply-add in float32, clamped in float (a NaN fails both comparisons and becomes the largest
// code, as FBGEMM's min against its int32 bound leaves it), rounded half to even by rint. The
// AVX2 and AVX-512 builds turn the loop into vector FMA, min/max, round and narrowing; the
// baseline build calls fmaf, which is exact everywhere.
template <typename U>
void quantize_affine_codes(const float* x, U* q, int64_t n, float inv_scale, float zero_point) {
  constexpr float lo = static_cast<float>(std::numeric_limits<U>::min());
  constexpr float hi = static_cast<float>(std::numeric_limits<U>::max());
  for (int64_t i = 0; i < n; ++i) {
    float v = __builtin_fmaf(x[i], inv_scale, zero_point);
    v = v < hi ? v : hi;
    v = v > lo ? v : lo;
    q[i] = static_cast<U>(static_cast<int32_t>(__builtin_rintf(v)));
  }
}

void quantize_affine_kernel(const float* x, void* codes, int64_t n, float inv_scale, float zero_point,
                            bool is_signed) {
  parallel_for(0, n, int64_t(1) << 14, [&](int64_t lo, int64_t hi) {
    if (is_signed) {
      quantize_affine_codes(x + lo, static_cast<int8_t*>(codes) + lo, hi - lo, inv_scale, zero_point);
    } else {
      quantize_affine_codes(x + lo, static_cast<uint8_t*>(codes) + lo, hi - lo, inv_scale, zero_point);
    }
  });
}

}  // namespace

EMBER_REGISTER_CPU_KERNEL(quantize_affine_stub, &quantize_affine_kernel);

}  // namespace ember::EMBER_CPU_NS
