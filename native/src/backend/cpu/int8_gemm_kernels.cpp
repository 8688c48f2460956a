// Exact uint8 x int8 products for the quantized linear and convolution (interface in
// src/ops/kernels.h, Note [int8 dot products]).
//
// Note [int8 dot products]: AVX-512 VNNI's vpdpbusd adds to each of 16 int32 lanes the four
// products of four uint8 and four int8 bytes, exactly (no int16 step that could saturate, as
// AVX2's vpmaddubsw can), so the int32 sums of a quantized GEMM come out as FBGEMM's. The weights
// are packed per call into panels of 16-64 output columns, four k per column (one 64-byte vector
// is 16 columns x 4 k), zero past K and past N. A register block of rows x one panel's columns
// sums every quad of k: per quad, a load per 16 columns of the panel, a 4-byte broadcast per row
// and their dot products. A row's quad q is the 4 bytes at base + rows[m] + quads[q], so a
// convolution reads its padded channels-last image in place (the quads of tap t sit at the tap's
// offset) instead of building columns. Machines without VNNI (and the AVX2 and baseline builds)
// answer false and the caller computes the sums in float (Note [integer GEMM through float BLAS]).
#include <algorithm>
#include <cstring>
#include <vector>

#include "ember/parallel.h"
#include "kernel_utils.h"
#include "ops/kernels.h"

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace ember::EMBER_CPU_NS {
namespace {

#if defined(__AVX512F__)
// A register block: kRows rows x NV vectors of 16 columns (NV = 1..4, the panel width chosen per
// call so that few padded columns are computed: 64 output channels are one 4-vector panel, where
// 3-vector panels computed 96).
template <int NV>
constexpr int kRows = NV == 4 ? 6 : 8;
typedef int32_t Bytes4 __attribute__((aligned(1), may_alias));  // 4 bytes anywhere, of any type

// weights w [N, K] (row stride ldw) -> panels [N / width][K4][width][4], zero past K and N.
std::vector<int8_t> pack_panels(const Int8GemmArgs& a, int64_t k4, int64_t width) {
  const int64_t panels = (a.N + width - 1) / width;
  std::vector<int8_t> packed(static_cast<size_t>(panels * k4 * width * 4), int8_t(0));
  for (int64_t n = 0; n < a.N; ++n) {
    int8_t* dst = packed.data() + (n / width) * k4 * width * 4 + (n % width) * 4;
    const int8_t* src = a.w + n * a.ldw;
    // whole quads as one 4-byte move each (a memcpy of a variable size is a library call: it took
    // most of a 128 x 768 x 768 product's time), then the partial last one
    const int64_t whole = a.K / 4;
    for (int64_t q = 0; q < whole; ++q) std::memcpy(dst + q * width * 4, src + 4 * q, 4);
    if (a.K % 4) std::memcpy(dst + whole * width * 4, src + 4 * whole, static_cast<size_t>(a.K % 4));
  }
  return packed;
}

// C rows [m0, m0 + rows) x panel columns [n0, n0 + cols) (rows <= kRows<NV>, cols <= 16 NV).
template <int NV>
__attribute__((target("avx512f,avx512vnni"))) void block(const Int8GemmArgs& a, int64_t k4,
                                                         const int8_t* panel, int64_t m0, int64_t rows,
                                                         int64_t n0, int64_t cols) {
  constexpr int MR = kRows<NV>;
  const uint8_t* r[MR];
  for (int i = 0; i < MR; ++i) r[i] = a.base + a.rows[m0 + std::min<int64_t>(i, rows - 1)];
  // Every loop over the block is unrolled, with constant indices, so the accumulators stay in
  // registers: with a loop over the runtime `rows` in the stores, GCC kept acc in memory and
  // stored all 24 vectors back on every quad.
  __m512i acc[MR][NV];
#pragma GCC unroll 8
  for (int i = 0; i < MR; ++i)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_setzero_si512();
  for (int64_t q = 0; q < k4; ++q, panel += NV * 64) {
    const int64_t at = a.quads[q];
    __m512i w[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) w[v] = _mm512_loadu_si512(panel + v * 64);
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i) {
      // read in place, so the broadcast takes its operand from memory (no move through a register)
      const __m512i x = _mm512_set1_epi32(*reinterpret_cast<const Bytes4*>(r[i] + at));
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[i][v] = _mm512_dpbusd_epi32(acc[i][v], x, w[v]);
    }
  }
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) {
    const int64_t left = cols - 16 * v;
    if (left <= 0) continue;
    const __mmask16 keep = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    const __m512i offset = a.column_offsets ? _mm512_maskz_loadu_epi32(keep, a.column_offsets + n0 + 16 * v)
                                            : _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int i = 0; i < MR; ++i)
      if (i < rows)
        _mm512_mask_storeu_epi32(a.C + (m0 + i) * a.ldc + n0 + 16 * v, keep,
                                 _mm512_add_epi32(acc[i][v], offset));
  }
}

template <int NV>
void gemm_panels(const Int8GemmArgs& a) {
  constexpr int64_t width = 16 * NV, MR = kRows<NV>;
  const int64_t k4 = (a.K + 3) / 4, panels = (a.N + width - 1) / width;
  const std::vector<int8_t> packed = pack_panels(a, k4, width);
  const int64_t blocks = (a.M + MR - 1) / MR;
  // a task: a run of row blocks against every panel (each panel, about K x width bytes, stays in
  // cache while the run's rows pass it)
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, k4 * 4 * MR * a.N));
  parallel_for(0, blocks, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t p = 0; p < panels; ++p) {
      const int8_t* panel = packed.data() + p * k4 * width * 4;
      const int64_t n0 = p * width, cols = std::min<int64_t>(width, a.N - n0);
      for (int64_t b = lo; b < hi; ++b) {
        const int64_t m0 = b * MR;
        block<NV>(a, k4, panel, m0, std::min<int64_t>(MR, a.M - m0), n0, cols);
      }
    }
  });
}

bool int8_gemm_kernel(const Int8GemmArgs& a) {
  if (!__builtin_cpu_supports("avx512vnni")) return false;
  if (a.M == 0 || a.N == 0) return true;
  // the panel width (in vectors) that computes the fewest padded columns, wider on ties
  int best = 4;
  int64_t least = -1;
  for (int nv = 4; nv >= 1; --nv) {
    const int64_t computed = (a.N + 16 * nv - 1) / (16 * nv) * (16 * nv);
    if (least < 0 || computed < least) least = computed, best = nv;
  }
  switch (best) {
    case 1: gemm_panels<1>(a); break;
    case 2: gemm_panels<2>(a); break;
    case 3: gemm_panels<3>(a); break;
    default: gemm_panels<4>(a); break;
  }
  return true;
}
#else
bool int8_gemm_kernel(const Int8GemmArgs&) {
  return false;
}
#endif

}  // namespace

EMBER_REGISTER_CPU_KERNEL(int8_gemm_stub, &int8_gemm_kernel);

}  // namespace ember::EMBER_CPU_NS
