// The kernels of quantized tensors (Note [quantized tensors] in ember/quantizer.h): the generic
// ops declared with quantized="<name>" (relu, pooling, cat, ...) reach ember::quantized::<name>
// for a quantized input, and the private _quantized_* ops behind ember.ao.nn.quantized.
//
// Note [integer GEMM through float BLAS]: a quantized linear or convolution needs the exact int32
// sums  acc = sum_k (x_k - x_zp) * (w_k - w_zp)  that FBGEMM computes. Every term is an integer
// and so is every partial sum, so a float GEMM over the centered values computes them exactly as
// long as no partial sum exceeds the mantissa: float32 when K * max|x - x_zp| * max|w - w_zp|
// < 2^24, float64 otherwise (then exact below 2^53, beyond any int32 sum). The order the BLAS sums
// in cannot change an exact result. Requantizing then follows FBGEMM's float arithmetic:
//   static:   q = clamp(nearbyint((acc + bias / (x_s * w_s)) * float(x_s * w_s / out_s)) + out_zp)
//   dynamic:  y = fma(acc, x_s * w_s, bias)   (the input quantized by choose_qparams first)
// in float32, except the multiplier x_s * w_s / out_s, formed in float64 and rounded once; w_s
// per output channel for a per-channel weight. (These orders reproduce PyTorch 2.13's x86 results
// bit for bit: tests/test_quantized_torch_parity.py.)
#include <emmintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <type_traits>
#include <vector>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/parallel.h"
#include "ember/quantizer.h"
#include "ops/dims.h"
#include "ops/kernels.h"
#include "ops/pointwise/pointwise.h"
#include "ops/quantization/quantized.h"

namespace ember {

DispatchStub<Int8GemmFn> int8_gemm_stub("int8_gemm");

namespace {

constexpr int64_t kGrain = 1 << 14;

const Quantizer& per_tensor(const Tensor& t, const char* op) {
  const Quantizer& q = quantizer_of(t, op);
  EMBER_CHECK(!q.per_channel(), NotImplementedError, "[", op,
              "] expects a per-tensor quantized tensor, but got one quantized per channel");
  return q;
}

std::shared_ptr<Quantizer> affine(double scale, int64_t zero_point) {
  auto q = std::make_shared<Quantizer>();
  q->scale = scale;
  q->zero_point = zero_point;
  return q;
}

// The integers of q: a view of its memory as its underlying dtype.
Tensor integers(const Tensor& q) {
  EMBER_CHECK(elements_per_byte(q.dtype()) == 1, NotImplementedError,
              "[quantized] not implemented for ember.", dtype_name(q.dtype()),
              ", whose codes are packed several to a byte; dequantize() it first");
  auto impl = std::make_shared<TensorImpl>(*q.impl());
  impl->dtype = quantized_underlying(q.dtype());
  impl->quantizer = nullptr;
  impl->autograd_meta = nullptr;
  return Tensor(std::move(impl));
}

// A fresh integer result read as `dtype` through `quantizer` (no copy).
Tensor as_quantized(const Tensor& ints, DType dtype, std::shared_ptr<const Quantizer> quantizer) {
  auto impl = std::make_shared<TensorImpl>(*ints.impl());
  impl->dtype = dtype;
  impl->quantizer = std::move(quantizer);
  quantized::tensors_exist.store(true, std::memory_order_relaxed);
  return Tensor(std::move(impl));
}

template <typename F>
void visit_integers(DType d, F&& f) {
  switch (d) {
    case DType::QInt8: return f(int8_t{});
    case DType::QUInt8: return f(uint8_t{});
    case DType::QInt32: return f(int32_t{});
    default: throw Error(std::string("[quantized] expected a quantized dtype, but got ") + dtype_name(d));
  }
}

// Clamps q's integers to [lo, hi] (already in q's integer domain), into `out` (maybe q itself).
void clamp_integers(const Tensor& q, const Tensor& out, int64_t lo, int64_t hi) {
  visit_integers(q.dtype(), [&](auto u) {
    using U = decltype(u);
    const Tensor in = integers(q).contiguous();
    const U* x = static_cast<const U*>(in.data_ptr());
    U* y = static_cast<U*>(out.data_ptr());
    const U l = static_cast<U>(std::max<int64_t>(lo, std::numeric_limits<U>::min()));
    const U h = static_cast<U>(std::min<int64_t>(hi, std::numeric_limits<U>::max()));
    parallel_for(0, in.numel(), kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) y[i] = std::min(std::max(x[i], l), h);
    });
  });
}

// clamp(q, lo, hi) with the quantizer of q: in place when `inplace`.
Tensor clamp_quantized(const Tensor& q, int64_t lo, int64_t hi, bool inplace) {
  if (inplace && q.is_contiguous()) {
    q.bump_version();
    clamp_integers(q, integers(q), lo, hi);
    return q;
  }
  Tensor out = empty_quantized(q.sizes(), q.dtype(), q.impl()->quantizer);
  clamp_integers(q, integers(out), lo, hi);
  if (inplace) {
    copy_same_shape(q, out);
    return q;
  }
  return out;
}

// The integer a real value quantizes to under q's (per-tensor) parameters.
int64_t quantize_value(const Tensor& q, double value, const char* op) {
  const Quantizer& p = per_tensor(q, op);
  const Tensor v =
      quantize_rounded_product(full({}, value, DType::Float32, Device()), p.scale, p.zero_point, q.dtype());
  return to_dtype(integers(v), DType::Int64, false).data<int64_t>()[0];
}

// Note [integer GEMM through float BLAS]: the centered integers q - zero_point, exact in float32
// (8-bit values), and the largest magnitude among them; one pass.
struct Centered {
  Tensor values;  // float32
  double max_abs;
};
Centered centered(const Tensor& q, const Tensor& zero_points_dim0) {
  // zero_points_dim0: per-channel zero points (int64) along dim 0, or undefined for per tensor
  const Tensor in = integers(q).contiguous();
  Tensor out = empty(q.sizes(), DType::Float32, Device());
  float* y = out.data<float>();
  const int64_t n = in.numel();
  const int64_t inner = zero_points_dim0.defined() && q.size(0) > 0 ? n / q.size(0) : std::max<int64_t>(n, 1);
  const int64_t* z = zero_points_dim0.defined() ? zero_points_dim0.data<int64_t>() : nullptr;
  const float zero_point = static_cast<float>(q.impl()->quantizer->zero_point);
  std::atomic<float> largest{0.0f};
  visit_integers(q.dtype(), [&](auto u) {
    using U = decltype(u);
    const U* x = static_cast<const U*>(in.data_ptr());
    parallel_for(0, n, kGrain, [&](int64_t lo, int64_t hi) {
      float m = 0.0f;
      for (int64_t i = lo; i < hi; ++i) {
        const float v = static_cast<float>(x[i]) - (z ? static_cast<float>(z[i / inner]) : zero_point);
        y[i] = v;
        m = std::max(m, std::abs(v));
      }
      float seen = largest.load(std::memory_order_relaxed);
      while (m > seen && !largest.compare_exchange_weak(seen, m, std::memory_order_relaxed)) {
      }
    });
  });
  return {out, static_cast<double>(largest.load())};
}

DType exact_dtype(int64_t k, double max_a, double max_b) {
  return static_cast<double>(k) * max_a * max_b < 16777216.0 ? DType::Float32 : DType::Float64;
}

// The weight's scales and zero points, one per output channel (dim 0), as float32 / int64.
struct WeightParams {
  Tensor scales;       // float64 [out]
  Tensor zero_points;  // int64 [out], or undefined for per tensor
  double scale = 0;
  int64_t zero_point = 0;
  bool per_channel = false;
};
WeightParams weight_params(const Tensor& w, const char* op) {
  EMBER_CHECK(w.dtype() == DType::QInt8, Error, "[", op, "] expected a qint8 weight, but got ember.",
              dtype_name(w.dtype()));
  const Quantizer& p = quantizer_of(w, op);
  WeightParams out;
  if (!p.per_channel()) {
    out.scale = p.scale;
    out.zero_point = p.zero_point;
    return out;
  }
  EMBER_CHECK(p.qscheme == QScheme::PerChannelAffine && p.axis == 0, NotImplementedError, "[", op,
              "] expects a weight quantized per tensor or per output channel (axis 0, integer zero points)");
  out.per_channel = true;
  out.scales = p.scales;
  out.zero_points = p.zero_points;
  return out;
}

// An exact sum as float32: each form rounds the exact integer once.
inline float raw_sum(const int32_t* i32, const float* s32, const double* s64, int64_t i) {
  return i32 ? static_cast<float>(i32[i]) : s32 ? s32[i] : static_cast<float>(s64[i]);
}

// acc [rows, out] exact (Note [integer GEMM through float BLAS]) -> output per element.
// Calls emit(index, acc, act_times_w, multiplier, bias, has_bias) for each element of acc [rows, out];
// act_times_w = float(x_s) * float(w_s), multiplier = float(x_s * w_s / out_scale) (0 when unused).
template <typename Emit>
void requantize_rows(const Tensor& acc, const WeightParams& wp, double x_scale,
                     const std::optional<Tensor>& bias, double out_scale, Emit&& emit) {
  const int64_t out_channels = acc.size(-1);
  const int64_t rows = out_channels ? acc.numel() / out_channels : 0;
  // int32 (Note [int8 dot products]), or float32 / float64 (Note [integer GEMM through float BLAS])
  const Tensor a = acc.contiguous();
  const int32_t* i32 = a.dtype() == DType::Int32 ? a.data<int32_t>() : nullptr;
  const float* s32 = a.dtype() == DType::Float32 ? a.data<float>() : nullptr;
  const double* s64 = a.dtype() == DType::Float64 ? a.data<double>() : nullptr;
  std::vector<float> act_times_w(out_channels), multiplier(out_channels);
  const double* ws = wp.per_channel ? wp.scales.data<double>() : nullptr;
  for (int64_t j = 0; j < out_channels; ++j) {
    const double w_scale = wp.per_channel ? ws[j] : wp.scale;
    act_times_w[j] = static_cast<float>(x_scale) * static_cast<float>(w_scale);
    multiplier[j] = out_scale > 0 ? static_cast<float>(x_scale * w_scale / out_scale) : 0.0f;
  }
  Tensor b;
  if (bias && bias->defined()) {
    EMBER_CHECK(bias->dim() == 1 && bias->size(0) == out_channels, Error, "[quantized] expected a bias of ",
                out_channels, " values, but got shape with ", bias->numel(), " elements");
    b = to_dtype(*bias, DType::Float32, true).contiguous();
  }
  const float* bp = b.defined() ? b.data<float>() : nullptr;
  parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(out_channels, 1)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t r = lo; r < hi; ++r)
                   for (int64_t j = 0; j < out_channels; ++j)
                     emit(r * out_channels + j, raw_sum(i32, s32, s64, r * out_channels + j), act_times_w[j],
                          multiplier[j], bp ? bp[j] : 0.0f, bp != nullptr);
               });
}

// nearbyint(v) for the requantized values (round half to even, as FBGEMM's vcvtps2dq): v is
// first clamped into [-2^22, 2^22], beyond which every result clamps to 0 or 255 anyway, and
// adding and removing 1.5 * 2^23 then rounds it to an integer in the default rounding mode. Plain
// float arithmetic, written in SSE2 vectors for int32 sums below: a libm call per element took a
// quarter of a quantized 3x3 convolution's time.
inline float round_half_even(float v) {
  v = std::min(std::max(v, -4194304.0f), 4194304.0f);
  return (v + 12582912.0f) - 12582912.0f;
}

// The static requantization into quint8 (Note [integer GEMM through float BLAS]).
Tensor requantize_static(const Tensor& acc, const WeightParams& wp, double x_scale,
                         const std::optional<Tensor>& bias, double out_scale, int64_t out_zero_point,
                         bool relu) {
  Tensor out = empty_quantized(acc.sizes(), DType::QUInt8, affine(out_scale, out_zero_point));
  uint8_t* y = static_cast<uint8_t*>(out.data_ptr());
  const float lo = relu ? static_cast<float>(out_zero_point) : 0.0f;
  const Tensor a = acc.contiguous();  // int32, float32 or float64: exact sums
  const int64_t n = a.size(-1), rows = n ? a.numel() / n : 0;
  const int32_t* i32 = a.dtype() == DType::Int32 ? a.data<int32_t>() : nullptr;
  const float* s32 = a.dtype() == DType::Float32 ? a.data<float>() : nullptr;
  const double* s64 = a.dtype() == DType::Float64 ? a.data<double>() : nullptr;
  const Tensor b = bias && bias->defined() ? to_dtype(*bias, DType::Float32, true).contiguous() : Tensor();
  EMBER_CHECK(!b.defined() || (b.dim() == 1 && b.size(0) == n), Error, "[quantized] expected a bias of ", n,
              " values, but got shape with ", b.defined() ? b.numel() : 0, " elements");
  // per output channel: the bias in units of the sums (b / (x_s * w_s)) and the multiplier
  std::vector<float> shift(static_cast<size_t>(n), 0.0f), multiplier(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    const double w_scale = wp.per_channel ? wp.scales.data<double>()[j] : wp.scale;
    const float act_times_w = static_cast<float>(x_scale) * static_cast<float>(w_scale);
    if (b.defined()) shift[j] = b.data<float>()[j] / act_times_w;
    multiplier[j] = static_cast<float>(x_scale * w_scale / out_scale);
  }
  const float zp = static_cast<float>(out_zero_point);
  // one loop per type of sums, so each compiles to vectors (restrict: the uint8 stores alias nothing)
  auto requantize = [&, sh = shift.data(), mul = multiplier.data()](const auto* sums) {
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)),
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) {
                     uint8_t* __restrict dst = y + r * n;
                     const auto* __restrict src = sums + r * n;
                     int64_t j = 0;
                     if constexpr (std::is_same_v<std::decay_t<decltype(*sums)>, int32_t>) {
                       // four at a time in SSE2 (the compiler kept this loop scalar)
                       const __m128 big = _mm_set1_ps(4194304.0f), magic = _mm_set1_ps(12582912.0f);
                       const __m128 zp4 = _mm_set1_ps(zp), lo4 = _mm_set1_ps(lo), hi4 = _mm_set1_ps(255.0f);
                       for (; j + 4 <= n; j += 4) {
                         const __m128i ints = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j));
                         __m128 v = _mm_add_ps(_mm_cvtepi32_ps(ints), _mm_loadu_ps(sh + j));
                         v = _mm_mul_ps(v, _mm_loadu_ps(mul + j));
                         v = _mm_min_ps(_mm_max_ps(v, _mm_sub_ps(_mm_setzero_ps(), big)), big);
                         v = _mm_add_ps(_mm_sub_ps(_mm_add_ps(v, magic), magic), zp4);
                         const __m128i q = _mm_cvttps_epi32(_mm_min_ps(_mm_max_ps(v, lo4), hi4));
                         const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(q, q), _mm_setzero_si128());
                         const int32_t four = _mm_cvtsi128_si32(bytes);
                         std::memcpy(dst + j, &four, 4);
                       }
                     }
                     for (; j < n; ++j) {
                       const float raw = static_cast<float>(src[j]) + sh[j];  // + 0 without a bias
                       const float v = round_half_even(raw * mul[j]) + zp;
                       dst[j] = static_cast<uint8_t>(std::min(std::max(v, lo), 255.0f));
                     }
                   }
                 });
  };
  if (i32) {
    requantize(i32);
  } else if (s32) {
    requantize(s32);
  } else {
    requantize(s64);
  }
  return out;
}

// The quint8 output's parameters.
void check_output_params(const char* op, double scale, int64_t zero_point) {
  const float s = static_cast<float>(scale);
  EMBER_CHECK(s > 0 && std::isfinite(s), Error, "[", op,
              "] expected a positive, finite output scale, but got ", scale);
  EMBER_CHECK(zero_point >= 0 && zero_point <= 255, Error, "[", op,
              "] expected an output zero_point in [0, 255], but got ", zero_point);
}

void check_activation(const Tensor& x, const char* op) {
  EMBER_CHECK(x.dtype() == DType::QUInt8, Error, "[", op, "] expected a quint8 input, but got ember.",
              dtype_name(x.dtype()));
  per_tensor(x, op);
}

// The weight's zero point of output channel n.
int64_t weight_zero_point(const WeightParams& wp, int64_t n) {
  return wp.per_channel ? wp.zero_points.data<int64_t>()[n] : wp.zero_point;
}

// Note [int8 dot products] gives S = sum x w over the raw integers; the centered sums are
//   sum (x - x_zp)(w - w_zp) = S + x_zp (K w_zp - colsum(w)) - w_zp rowsum(x),
// with K, colsum and rowsum over the real k only. The kernel adds the column terms as it stores;
// the row terms exist only for a weight with nonzero zero points.
struct CenteringTerms {
  std::vector<int32_t> columns;  // x_zp (K w_zp[n] - colsum[n])
  std::vector<int64_t> w_zp;     // per output channel
  bool rows = false;             // whether any w_zp is nonzero
};
// w [n, row_length] (zeros past the depth k: padded channels)
CenteringTerms centering_terms(const int8_t* w, int64_t n, int64_t row_length, int64_t k, int64_t x_zp,
                               const WeightParams& wp) {
  CenteringTerms t;
  t.columns.resize(static_cast<size_t>(n));
  t.w_zp.resize(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    int64_t col_sum = 0;
    for (int64_t i = 0; i < row_length; ++i) col_sum += w[j * row_length + i];
    t.w_zp[j] = weight_zero_point(wp, j);
    t.rows |= t.w_zp[j] != 0;
    t.columns[j] = static_cast<int32_t>(x_zp * (k * t.w_zp[j] - col_sum));
  }
  return t;
}

// acc [rows, n] (row stride ld) -= w_zp[n] row_sums(m), when some w_zp is nonzero.
template <typename RowSums>
void subtract_row_terms(int32_t* acc, int64_t rows, int64_t n, int64_t ld, const CenteringTerms& t,
                        RowSums&& row_sums) {
  if (!t.rows) return;
  parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t m = lo; m < hi; ++m) {
      const int64_t sum = row_sums(m);
      for (int64_t j = 0; j < n; ++j)
        acc[m * ld + j] = static_cast<int32_t>(acc[m * ld + j] - t.w_zp[j] * sum);
    }
  });
}

// Below this depth no centered sum or term overflows int32 (each is at most K * 255 * 255).
constexpr int64_t kInt8MaxDepth = 16384;

// x [.., K] quint8, w [N, K] qint8 -> the exact centered sums [.., N] as int32, or nothing where
// this CPU has no exact int8 kernel (Note [int8 dot products]).
std::optional<Tensor> int8_linear_sums(const Tensor& input, const Tensor& weight, const WeightParams& wp) {
  const int64_t k = weight.size(1), n = weight.size(0), m = k ? input.numel() / k : 0;
  if (k == 0 || k > kInt8MaxDepth) return std::nullopt;
  const Tensor x = integers(input).contiguous();
  const Tensor w = integers(weight).contiguous();
  const uint8_t* xp = static_cast<const uint8_t*>(x.data_ptr());
  // rows read whole quads: a depth that is not a multiple of 4 reads a zero-padded copy
  const int64_t k4 = (k + 3) / 4, ld = k % 4 ? k4 * 4 : k;
  std::vector<uint8_t> padded;
  if (ld != k) {
    padded.assign(static_cast<size_t>(m * ld), uint8_t(0));
    for (int64_t r = 0; r < m; ++r) std::memcpy(padded.data() + r * ld, xp + r * k, k);
  }
  const uint8_t* base = ld != k ? padded.data() : xp;
  std::vector<int64_t> rows(static_cast<size_t>(m)), quads(static_cast<size_t>(k4));
  for (int64_t r = 0; r < m; ++r) rows[r] = r * ld;
  for (int64_t q = 0; q < k4; ++q) quads[q] = 4 * q;
  IntList shape(input.sizes().begin(), input.sizes().end() - 1);
  shape.push_back(n);
  Tensor acc = empty(shape, DType::Int32, Device());
  const int8_t* wp8 = static_cast<const int8_t*>(w.data_ptr());
  const CenteringTerms terms =
      centering_terms(wp8, n, k, k, quantizer_of(input, "quantized::linear").zero_point, wp);
  Int8GemmArgs args{m, n, k, base, rows.data(), quads.data(), wp8, k, acc.data<int32_t>(), n};
  args.column_offsets = terms.columns.data();
  if (!int8_gemm_stub.get(DeviceType::CPU)(args)) return std::nullopt;
  subtract_row_terms(acc.data<int32_t>(), m, n, n, terms, [&](int64_t r) {
    int64_t total = 0;
    for (int64_t i = 0; i < k; ++i) total += xp[r * k + i];
    return total;
  });
  return acc;
}

// Note [int8 convolution]: per image and group the input is copied once into a zero-padded
// channels-last image, [P0, P1, P2, Cp] bytes (P = input + 2 padding, filled with the input's
// zero point, which is a centered 0; Cp = the group's channels rounded up to 4, the extra ones
// multiplying zero weights). Output position m's window starts at byte rows[m] and tap t's channel
// quad c at quads[t, c], so Note [int8 dot products] reads every window in place; the weight is
// reordered to [Og, taps x Cp]. Any stride, dilation and 1-3 spatial dims. The sums come out as
// channels-last rows [N, *out, O], the layout the requantization writes from.
std::optional<Tensor> int8_conv_sums(const Tensor& input, const Tensor& weight, const WeightParams& wp,
                                     const IntList& stride, const IntList& padding, const IntList& dilation,
                                     int64_t groups, const IntList& out_size) {
  const int64_t n = input.dim() - 2, N = input.size(0), C = input.size(1), O = weight.size(0);
  const int64_t Cg = C / groups, Og = O / groups, Cp = (Cg + 3) / 4 * 4;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, st[3] = {1, 1, 1}, pd[3] = {0, 0, 0},
          dl[3] = {1, 1, 1};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t at = 3 - n + i;
    in[at] = input.size(2 + i);
    out[at] = out_size[i];
    k[at] = weight.size(2 + i);
    st[at] = stride.size() == 1 ? stride[0] : stride[i];
    pd[at] = padding.size() == 1 ? padding[0] : padding[i];
    dl[at] = dilation.size() == 1 ? dilation[0] : dilation[i];
  }
  const int64_t taps = k[0] * k[1] * k[2], depth = Cg * taps, L = out[0] * out[1] * out[2];
  if (depth == 0 || taps * Cp > kInt8MaxDepth || Og == 0) return std::nullopt;
  const int64_t P1 = in[1] + 2 * pd[1], P2 = in[2] + 2 * pd[2], plane = P1 * P2;
  const int64_t pixels = (in[0] + 2 * pd[0]) * plane, spatial = in[0] * in[1] * in[2];
  std::vector<int64_t> rows(static_cast<size_t>(L)), quads, tap_pixel;
  for (int64_t d = 0, m = 0; d < out[0]; ++d)
    for (int64_t h = 0; h < out[1]; ++h)
      for (int64_t w = 0; w < out[2]; ++w) rows[m++] = (d * st[0] * plane + h * st[1] * P2 + w * st[2]) * Cp;
  for (int64_t a = 0; a < k[0]; ++a)
    for (int64_t b = 0; b < k[1]; ++b)
      for (int64_t c = 0; c < k[2]; ++c) {
        tap_pixel.push_back(a * dl[0] * plane + b * dl[1] * P2 + c * dl[2]);
        for (int64_t q = 0; q < Cp / 4; ++q) quads.push_back(tap_pixel.back() * Cp + 4 * q);
      }
  const Tensor x = integers(input).contiguous();
  const Tensor wt = integers(weight).contiguous();
  const uint8_t* X = static_cast<const uint8_t*>(x.data_ptr());
  const int8_t* W = static_cast<const int8_t*>(wt.data_ptr());
  const int64_t x_zp = quantizer_of(input, "quantized::conv").zero_point;
  IntList shape{N};
  for (int64_t i = 0; i < n; ++i) shape.push_back(out_size[i]);
  shape.push_back(O);
  Tensor acc = empty(shape, DType::Int32, Device());
  for (int64_t gi = 0; gi < groups; ++gi) {
    // the group's weights as [Og, taps x Cp] (tap-major, channels padded with zeros)
    std::vector<int8_t> wk(static_cast<size_t>(Og * taps * Cp), int8_t(0));
    for (int64_t o = 0; o < Og; ++o)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t t = 0; t < taps; ++t)
          wk[(o * taps + t) * Cp + c] = W[((gi * Og + o) * Cg + c) * taps + t];
    WeightParams group_wp = wp;
    if (wp.per_channel) group_wp.zero_points = narrow(wp.zero_points, 0, gi * Og, Og).contiguous();
    const CenteringTerms terms = centering_terms(wk.data(), Og, taps * Cp, depth, x_zp, group_wp);
    std::vector<uint8_t> image(static_cast<size_t>(pixels * Cp + 4));
    std::vector<int64_t> pixel_sums(terms.rows ? static_cast<size_t>(pixels) : 0);
    std::vector<const uint8_t*> lines(static_cast<size_t>(Cg));
    for (int64_t img = 0; img < N; ++img) {
      // the padded channels-last image: padding pixels hold the zero point, extra channels 0
      for (int64_t px = 0; px < pixels; ++px) {
        uint8_t* dst = image.data() + px * Cp;
        std::memset(dst, static_cast<int>(x_zp), static_cast<size_t>(Cg));
        std::memset(dst + Cg, 0, static_cast<size_t>(Cp - Cg));
      }
      const uint8_t* src = X + (img * C + gi * Cg) * spatial;
      for (int64_t r = 0; r < in[0] * in[1]; ++r) {  // each input row: its pixels' channels together
        const int64_t d = r / in[1], h = r % in[1];
        uint8_t* row = image.data() + ((d + pd[0]) * plane + (h + pd[1]) * P2 + pd[2]) * Cp;
        for (int64_t c = 0; c < Cg; ++c) lines[c] = src + c * spatial + r * in[2];
        for (int64_t w = 0; w < in[2]; ++w)
          for (int64_t c = 0; c < Cg; ++c) row[w * Cp + c] = lines[c][w];
      }
      int32_t* C_img = acc.data<int32_t>() + img * L * O + gi * Og;
      Int8GemmArgs args{L,         Og,    taps * Cp, image.data(), rows.data(), quads.data(), wk.data(),
                        taps * Cp, C_img, O};
      args.column_offsets = terms.columns.data();
      if (!int8_gemm_stub.get(DeviceType::CPU)(args)) return std::nullopt;
      if (terms.rows) {
        for (int64_t px = 0; px < pixels; ++px) {
          int64_t total = 0;
          for (int64_t c = 0; c < Cg; ++c) total += image[px * Cp + c];
          pixel_sums[px] = total;
        }
      }
      subtract_row_terms(C_img, L, Og, O, terms, [&](int64_t m) {
        int64_t total = 0;
        for (const int64_t t : tap_pixel) total += pixel_sums[rows[m] / Cp + t];
        return total;
      });
    }
  }
  return acc;
}

// x [.., K] centered, w [N, K] centered -> exact acc [.., N].
Tensor integer_linear(const Centered& x, const Centered& w) {
  const int64_t k = w.values.size(1);
  const DType d = exact_dtype(k, x.max_abs, w.max_abs);
  return matmul(to_dtype(x.values, d, false), t(to_dtype(w.values, d, false)));
}

// One output position's window along a pooled dim: [start, end) inside the input, and its
// extent counting padding.
struct PoolWindow {
  int64_t start, end, padded;
};

// PyTorch's quantized average pooling: the integer sum of (q - zero_point) over each window,
// requantized as zero_point + nearbyint(float(sum) * float(1 / divisor)) (input and output share
// their parameters); divisor(padded extent, elements inside) picks the divisor.
template <typename Divisor>
Tensor average_windows(const Tensor& self, const std::vector<std::vector<PoolWindow>>& windows,
                       const char* op, Divisor&& divisor) {
  const Quantizer& p = per_tensor(self, op);
  const int64_t n = static_cast<int64_t>(windows.size());
  IntList out_shape(self.sizes().begin(), self.sizes().end() - n);
  for (const auto& w : windows) out_shape.push_back(static_cast<int64_t>(w.size()));
  // (planes, D, H, W) with missing leading spatial dims of extent 1
  std::vector<std::vector<PoolWindow>> dims(3 - n, std::vector<PoolWindow>{{0, 1, 1}});
  dims.insert(dims.end(), windows.begin(), windows.end());
  IntList in_extent(3, 1);
  for (int64_t d = 0; d < n; ++d) in_extent[3 - n + d] = self.size(self.dim() - n + d);
  const int64_t plane_in = in_extent[0] * in_extent[1] * in_extent[2];
  const int64_t plane_out = static_cast<int64_t>(dims[0].size() * dims[1].size() * dims[2].size());
  const int64_t planes = plane_out == 0 ? 0 : checked_numel(out_shape, op) / plane_out;
  Tensor out = empty_quantized(out_shape, self.dtype(), self.impl()->quantizer);
  const Tensor in = integers(self).contiguous();
  const int64_t zp = p.zero_point;
  visit_integers(self.dtype(), [&](auto u) {
    using U = decltype(u);
    const U* x = static_cast<const U*>(in.data_ptr());
    U* y = static_cast<U*>(out.data_ptr());
    parallel_for(0, planes, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t plane = lo; plane < hi; ++plane) {
        const U* xp = x + plane * plane_in;
        U* yp = y + plane * plane_out;
        for (const PoolWindow& wd : dims[0])
          for (const PoolWindow& wh : dims[1])
            for (const PoolWindow& ww : dims[2]) {
              int64_t acc = 0;
              for (int64_t i = wd.start; i < wd.end; ++i)
                for (int64_t j = wh.start; j < wh.end; ++j)
                  for (int64_t k = ww.start; k < ww.end; ++k)
                    acc += static_cast<int64_t>(xp[(i * in_extent[1] + j) * in_extent[2] + k]) - zp;
              const int64_t inside = (wd.end - wd.start) * (wh.end - wh.start) * (ww.end - ww.start);
              const int64_t divide = divisor(wd.padded * wh.padded * ww.padded, inside);
              // a window wholly in the padding (ceil_mode) holds nothing: its value is zero
              const float multiplier = divide ? static_cast<float>(1.0 / static_cast<double>(divide)) : 0.0f;
              const double v = std::nearbyint(static_cast<float>(acc) * multiplier) + static_cast<double>(zp);
              *yp++ = static_cast<U>(std::min<double>(std::max<double>(v, std::numeric_limits<U>::min()),
                                                      std::numeric_limits<U>::max()));
            }
      }
    });
  });
  return out;
}

// Note [quantized sigmoid and tanh]: PyTorch gives the result fixed parameters (sigmoid: scale
// 1/256, zero point 0 for quint8 and -128 for qint8; tanh: scale 1/128, zero point 128 for quint8
// and 0 for qint8). Each output code is the float64 function of the dequantized input (the scale
// read as float32, as PyTorch's kernels read it), rounded half to even: the correctly rounded
// quantization. PyTorch computes the function in float32, so its code can differ by one where the
// value lies within float32 rounding of a half step (about 1 code in 10^4). An 8-bit input has 256
// codes: every tensor maps through a table of them.
//
// sigmoid / tanh of a per-tensor quint8 or qint8 tensor (Note [quantized sigmoid and tanh]).
Tensor fixed_qparams_activation(const Tensor& self, const std::optional<Tensor>& out, const char* op,
                                bool is_tanh) {
  EMBER_CHECK(!out, NotImplementedError, "[", op, "] a quantized ", op,
              " writes a new tensor, not into its input or out= (PyTorch has no quantized ", op,
              "_ or out=)");
  const Quantizer& p = per_tensor(self, op);
  EMBER_CHECK(self.dtype() == DType::QUInt8 || self.dtype() == DType::QInt8, NotImplementedError, "[", op,
              "] expected a quint8 or qint8 tensor, but got ember.", dtype_name(self.dtype()));
  const bool is_unsigned = self.dtype() == DType::QUInt8;
  const double out_scale = is_tanh ? 0.0078125 : 0.00390625;
  const int64_t out_zero_point = is_tanh ? (is_unsigned ? 128 : 0) : (is_unsigned ? 0 : -128);
  const int lo = is_unsigned ? 0 : -128, hi = is_unsigned ? 255 : 127;
  const double scale = static_cast<float>(p.scale);
  const double steps = is_tanh ? 128.0 : 256.0;  // 1 / out_scale
  // the output code (its bits as uint8) of an input code
  auto code = [&](int q) -> uint8_t {
    const double x = (q - p.zero_point) * scale;
    const double y = is_tanh ? std::tanh(x) : 1.0 / (1.0 + std::exp(-x));
    const int64_t v = static_cast<int64_t>(std::nearbyint(y * steps)) + out_zero_point;
    return static_cast<uint8_t>(std::min<int64_t>(std::max<int64_t>(v, lo), hi));
  };
  Tensor result = empty_quantized(self.sizes(), self.dtype(), affine(out_scale, out_zero_point));
  const int64_t n = self.numel();
  if (n == 0) return result;
  const Tensor in = integers(self).contiguous();
  const uint8_t* x = static_cast<const uint8_t*>(in.data_ptr());  // int8 codes read as their bits
  uint8_t* y = static_cast<uint8_t*>(result.data_ptr());
  // a code's index in the table: its value minus the lowest code (for int8, its bits ^ 0x80)
  const uint8_t flip = is_unsigned ? 0 : 0x80;
  uint8_t table[256];
  for (int q = lo; q <= hi; ++q) table[q - lo] = code(q);
  parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) y[i] = table[x[i] ^ flip];
  });
  return result;
}

}  // namespace

namespace quantized {

Tensor relu(const Tensor& self, const std::optional<Tensor>& out) {
  EMBER_CHECK(!out || out->is_same(self), NotImplementedError,
              "[relu] a quantized relu writes a new tensor or into its input (relu_), not into out=");
  return clamp_quantized(self, per_tensor(self, "relu").zero_point, std::numeric_limits<int64_t>::max(),
                         out.has_value());
}

Tensor relu6(const Tensor& self) {
  return clamp_quantized(self, per_tensor(self, "relu6").zero_point, quantize_value(self, 6.0, "relu6"),
                         false);
}

Tensor hardtanh(const Tensor& self, double min_val, double max_val) {
  return clamp_quantized(self, quantize_value(self, min_val, "hardtanh"),
                         quantize_value(self, max_val, "hardtanh"), false);
}

Tensor sigmoid(const Tensor& self, const std::optional<Tensor>& out) {
  return fixed_qparams_activation(self, out, "sigmoid", false);
}

Tensor tanh(const Tensor& self, const std::optional<Tensor>& out) {
  return fixed_qparams_activation(self, out, "tanh", true);
}

std::tuple<Tensor, Tensor> max_pool_with_indices(const Tensor& self, const IntList& kernel_size,
                                                 const IntList& stride, const IntList& padding,
                                                 const IntList& dilation, bool ceil_mode) {
  // quantizing is monotone: the largest integer is the largest value
  auto [ints, indices] = ember::max_pool_with_indices((per_tensor(self, "max_pool2d"), integers(self)),
                                                      kernel_size, stride, padding, dilation, ceil_mode);
  return {as_quantized(ints, self.dtype(), self.impl()->quantizer), indices};
}

std::tuple<Tensor, Tensor> adaptive_max_pool(const Tensor& self, const IntList& output_size) {
  per_tensor(self, "adaptive_max_pool2d");
  auto [ints, indices] = ember::adaptive_max_pool(integers(self), output_size);
  return {as_quantized(ints, self.dtype(), self.impl()->quantizer), indices};
}

Tensor avg_pool(const Tensor& self, const IntList& kernel_size, const IntList& stride, const IntList& padding,
                bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool2d";
  const size_t n = kernel_size.size();
  EMBER_CHECK(
      n >= 1 && n <= 3 && stride.size() == n && padding.size() == n && self.dim() >= int64_t(n) + 1, Error,
      "[", op,
      "] expected kernel_size, stride and padding of one to three dims and an input with a channel dim");
  EMBER_CHECK(!divisor_override || *divisor_override != 0, Error, "[", op, "] divisor must be not zero");
  std::vector<std::vector<PoolWindow>> windows;
  for (size_t d = 0; d < n; ++d) {
    const int64_t in = self.size(self.dim() - int64_t(n) + int64_t(d));
    const int64_t k = kernel_size[d], st = stride[d], pad = padding[d];
    EMBER_CHECK(k > 0 && st > 0 && pad >= 0 && pad <= k / 2, Error, "[", op,
                "] expected positive kernel and stride and padding at most half the kernel");
    int64_t out = (in + 2 * pad - k + (ceil_mode ? st - 1 : 0)) / st + 1;
    if (ceil_mode && (out - 1) * st >= in + pad) --out;  // the last window must start inside
    EMBER_CHECK(out > 0, Error, "[", op, "] the output would be empty (input ", in, ", kernel ", k, ")");
    std::vector<PoolWindow> w;
    for (int64_t o = 0; o < out; ++o) {
      const int64_t start = o * st - pad;
      const int64_t end = std::min(start + k, in + pad);
      w.push_back({std::max<int64_t>(start, 0), std::min(end, in), end - start});
    }
    windows.push_back(std::move(w));
  }
  return average_windows(self, windows, op, [&](int64_t padded, int64_t inside) {
    return divisor_override ? *divisor_override : (count_include_pad ? padded : inside);
  });
}

Tensor adaptive_avg_pool(const Tensor& self, const IntList& output_size) {
  const char* op = "adaptive_avg_pool2d";
  const size_t n = output_size.size();
  EMBER_CHECK(n >= 1 && n <= 3 && self.dim() >= int64_t(n) + 1, Error, "[", op,
              "] expected an output size of one to three dims and an input with a channel dim");
  std::vector<std::vector<PoolWindow>> windows;
  for (size_t d = 0; d < n; ++d) {
    const int64_t in = self.size(self.dim() - int64_t(n) + int64_t(d)), out = output_size[d];
    EMBER_CHECK(out >= 0 && (in > 0 || out == 0), Error, "[", op,
                "] expected a non-negative output size over a "
                "non-empty input, but got ",
                out, " from ", in);
    std::vector<PoolWindow> w;
    for (int64_t o = 0; o < out; ++o) {
      const int64_t start = o * in / out, end = ((o + 1) * in + out - 1) / out;  // PyTorch's adaptive bins
      w.push_back({start, end, end - start});
    }
    windows.push_back(std::move(w));
  }
  return average_windows(self, windows, op, [](int64_t, int64_t inside) { return inside; });
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  // PyTorch's quantized cat: the result takes the first tensor's parameters
  EMBER_CHECK(!tensors.empty(), Error, "[cat] expected a non-empty list of tensors");
  const Tensor& first = tensors.front();
  const Quantizer& p = per_tensor(first, "cat");
  bool same = true;
  for (const Tensor& t : tensors) {
    EMBER_CHECK(t.dtype() == first.dtype(), Error, "[cat] expected quantized tensors of one dtype, but got ",
                dtype_name(first.dtype()), " and ", dtype_name(t.dtype()));
    same = same && same_quantizer(t, first);
  }
  if (same) {
    std::vector<Tensor> ints;
    for (const Tensor& t : tensors) ints.push_back(integers(t));
    return as_quantized(ember::cat(ints, dim).contiguous(), first.dtype(), first.impl()->quantizer);
  }
  std::vector<Tensor> values;
  for (const Tensor& t : tensors) values.push_back(dequantize(t));
  return quantize_per_tensor(ember::cat(values, dim), p.scale, p.zero_point, first.dtype());
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  // PyTorch's: the cat of the tensors each unsqueezed at dim, so the result takes the first
  // tensor's parameters and requantizes any other tensor's values to them
  EMBER_CHECK(!tensors.empty(), Error, "[stack] stack expects a non-empty TensorList");
  const Tensor& first = tensors.front();
  const int64_t d = dims::wrap("stack", dim, first.dim() + 1);
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    per_tensor(t, "stack");
    EMBER_CHECK(t.dtype() == first.dtype(), Error,
                "[stack] expected quantized tensors of one dtype, but got ", dtype_name(first.dtype()),
                " and ", dtype_name(t.dtype()));
    EMBER_CHECK(t.sizes() == first.sizes(), Error,
                "[stack] stack expects each tensor to be equal size, but got sizes that differ at entry ", i);
    parts.push_back(ember::unsqueeze(t, d));
  }
  return quantized::cat(parts, d);
}

Tensor flip(const Tensor& self, const IntList& dims) {
  // the integers reordered, the parameters kept (PyTorch refuses a per-channel tensor too)
  per_tensor(self, "flip");
  return as_quantized(ember::flip(integers(self), dims), self.dtype(), self.impl()->quantizer);
}

Tensor repeat(const Tensor& self, const IntList& repeats) {
  // the integers tiled, the parameters kept (PyTorch refuses a per-channel tensor too)
  per_tensor(self, "repeat");
  return as_quantized(ember::repeat(integers(self), repeats), self.dtype(), self.impl()->quantizer);
}

namespace {

// The integer a float32 mean of integers becomes when stored as U: nearbyint, then x86's
// float -> int32 conversion (NaN and values beyond int32 give INT32_MIN), narrowed to U. An
// empty reduction (0 / 0) so gives 0 for the 8-bit types.
template <typename U>
U stored_mean(float y) {
  const float r = std::nearbyint(y);
  const bool fits = !std::isnan(r) && r >= -2147483648.0f && r < 2147483648.0f;
  return static_cast<U>(fits ? static_cast<int32_t>(r) : std::numeric_limits<int32_t>::min());
}

}  // namespace

Tensor mean(const Tensor& self, const std::optional<IntList>& dim, bool keepdim, std::optional<DType> dtype) {
  // Note [quantized mean]: PyTorch's (ATen's mean for a quantized tensor). The result keeps the
  // input's dtype, scale and zero point. Over trailing dims of a contiguous tensor (all dims when
  // dim is None or empty) each output is its group's integers summed exactly, divided by the
  // count in float32 and rounded half to even (the zero point is not taken out first). Otherwise
  // the values are dequantized, averaged in float32 (ember.mean: sum, then divide by the count)
  // and quantized again with the input's parameters (quantize_per_tensor, as PyTorch's fallback). The float32
  // sums follow PyTorch's order for up to 16 terms per output (one after another); beyond that PyTorch sums
  // in blocks, and a value within float32 rounding of a half step could round the other way.
  const char* op = "mean";
  const Quantizer& p = per_tensor(self, op);
  EMBER_CHECK(!dtype || *dtype == self.dtype(), Error, "[", op,
              "] the mean of a quantized tensor keeps its dtype (ember.", dtype_name(self.dtype()),
              "), but dtype ember.", dtype_name(*dtype), " was given");
  const int64_t ndim = self.dim();
  std::vector<bool> reduced(ndim, !dim || dim->empty());
  if (dim) {
    for (int64_t d : *dim) {
      const int64_t w = dims::wrap(op, d, ndim);
      if (ndim == 0) continue;
      EMBER_CHECK(!reduced[w] || dim->empty(), Error, "[", op, "] dim ", w,
                  " appears multiple times in the list of dims");
      reduced[w] = true;
    }
  }
  int64_t first = ndim;  // the reduced dims are first..ndim-1 on the fast path
  while (first > 0 && reduced[first - 1]) --first;
  bool trailing = true;
  for (int64_t d = 0; d < first; ++d) trailing = trailing && !reduced[d];
  if (!self.is_contiguous() || !trailing) {
    return quantize_per_tensor(ember::mean(dequantize(self), dim, keepdim, std::nullopt), p.scale,
                               p.zero_point, self.dtype());
  }
  IntList out_sizes;
  int64_t groups = 1, count = 1;
  for (int64_t d = 0; d < ndim; ++d) {
    const int64_t size = self.sizes()[d];
    if (d < first) {
      groups *= size;
      out_sizes.push_back(size);
    } else {
      count *= size;
      if (keepdim) out_sizes.push_back(1);
    }
  }
  Tensor out = empty_quantized(out_sizes, self.dtype(), self.impl()->quantizer);
  visit_integers(self.dtype(), [&](auto u) {
    using U = decltype(u);
    const U* x = static_cast<const U*>(self.data_ptr());
    U* y = static_cast<U*>(out.data_ptr());
    parallel_for(0, groups, std::max<int64_t>(1, kGrain / std::max<int64_t>(count, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t g = lo; g < hi; ++g) {
                     const U* row = x + g * count;
                     int64_t sum = 0;
                     for (int64_t i = 0; i < count; ++i) sum += row[i];
                     y[g] = stored_mean<U>(static_cast<float>(sum) / static_cast<float>(count));
                   }
                 });
  });
  return out;
}

}  // namespace quantized

Tensor _quantized_linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                         double scale, int64_t zero_point, bool relu) {
  const char* op = "quantized::linear";
  check_activation(input, op);
  const WeightParams wp = weight_params(weight, op);
  EMBER_CHECK(weight.dim() == 2 && input.dim() >= 1 && input.size(-1) == weight.size(1), Error, "[", op,
              "] expected an input of ", weight.dim() == 2 ? weight.size(1) : -1,
              " features for a weight of shape [", weight.size(0), ", ",
              weight.dim() == 2 ? weight.size(1) : -1, "]");
  check_output_params(op, scale, zero_point);
  std::optional<Tensor> acc = int8_linear_sums(input, weight, wp);
  if (!acc) acc = integer_linear(centered(input, Tensor()), centered(weight, wp.zero_points));
  return requantize_static(*acc, wp, per_tensor(input, op).scale, bias, scale, zero_point, relu);
}

namespace {
// y[j] = fma(float(sums[j]), act_times_w[j], b[j]), relu'd when asked: the dynamic Linear's outputs
// (FBGEMM's fused multiply-add). This file is built for baseline x86-64, where std::fma is a libm
// call per element (a third of a 128 x 768 x 768 dynamic Linear's time); this row loop is built
// for AVX2 with FMA and called only where the CPU has them.
__attribute__((target("avx2,fma"))) void fused_row(const int32_t* sums, const float* act_times_w,
                                                   const float* b, float* y, int64_t n, bool relu) {
  for (int64_t j = 0; j < n; ++j) {
    const float v = __builtin_fmaf(static_cast<float>(sums[j]), act_times_w[j], b[j]);
    y[j] = relu && v < 0.0f ? 0.0f : v;  // as std::max(v, 0.0f): NaN stays
  }
}
}  // namespace

Tensor _quantized_linear_dynamic(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                                 bool reduce_range, bool relu) {
  const char* op = "quantized::linear_dynamic";
  EMBER_CHECK(input.dtype() == DType::Float32, Error, "[", op, "] expected a float32 input, but got ember.",
              dtype_name(input.dtype()));
  const WeightParams wp = weight_params(weight, op);
  EMBER_CHECK(weight.dim() == 2 && input.dim() >= 1 && input.size(-1) == weight.size(1), Error, "[", op,
              "] expected an input of ", weight.dim() == 2 ? weight.size(1) : -1,
              " features for a weight of shape [", weight.size(0), ", ",
              weight.dim() == 2 ? weight.size(1) : -1, "]");
  // the activation, quantized per call over its own range (FBGEMM's dynamic linear)
  const QParams p = range_qparams(input, 0, 255, reduce_range);
  const Tensor xq = quantize_per_tensor(input, p.scale, p.zero_point, DType::QUInt8);
  std::optional<Tensor> sums = int8_linear_sums(xq, weight, wp);
  const Tensor acc = sums ? *sums : integer_linear(centered(xq, Tensor()), centered(weight, wp.zero_points));
  Tensor out = empty(acc.sizes(), DType::Float32, Device());
  float* y = out.data<float>();
  if (acc.dtype() == DType::Int32 && acc.is_contiguous() && __builtin_cpu_supports("fma")) {
    // the int32 sums of Note [int8 dot products] (AVX-512 VNNI machines, which all have FMA)
    const int64_t n = acc.size(-1), rows = n ? acc.numel() / n : 0;
    std::vector<float> act_times_w(static_cast<size_t>(n)), b(static_cast<size_t>(n), 0.0f);
    const double* ws = wp.per_channel ? wp.scales.data<double>() : nullptr;
    for (int64_t j = 0; j < n; ++j)
      act_times_w[j] = static_cast<float>(p.scale) * static_cast<float>(wp.per_channel ? ws[j] : wp.scale);
    if (bias && bias->defined()) {
      EMBER_CHECK(bias->dim() == 1 && bias->size(0) == n, Error, "[quantized] expected a bias of ", n,
                  " values, but got shape with ", bias->numel(), " elements");
      const Tensor bf = to_dtype(*bias, DType::Float32, true).contiguous();
      std::memcpy(b.data(), bf.data<float>(), static_cast<size_t>(n) * sizeof(float));
    }
    const int32_t* sums = acc.data<int32_t>();
    parallel_for(0, rows, std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1)),
                 [&](int64_t lo, int64_t hi) {
                   for (int64_t r = lo; r < hi; ++r)
                     fused_row(sums + r * n, act_times_w.data(), b.data(), y + r * n, n, relu);
                 });
    return out;
  }
  requantize_rows(acc, wp, p.scale, bias, 0.0,
                  [&](int64_t i, float raw, float act_times_w, float, float b, bool) {
                    const float v = std::fma(raw, act_times_w, b);
                    y[i] = relu ? std::max(v, 0.0f) : v;
                  });
  return out;
}

Tensor _quantized_conv(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                       const IntList& stride, const IntList& padding, const IntList& dilation, int64_t groups,
                       double scale, int64_t zero_point, bool relu) {
  const char* op = "quantized::conv";
  check_activation(input, op);
  const WeightParams wp = weight_params(weight, op);
  check_output_params(op, scale, zero_point);
  // the geometry checks (PyTorch's messages) and output size of convolution, on an empty batch
  IntList probe_shape = input.sizes();
  probe_shape[0] = 0;
  const Tensor probe = convolution(empty(probe_shape, DType::Float32, Device()),
                                   empty(weight.sizes(), DType::Float32, Device()), std::nullopt, stride,
                                   padding, dilation, false, IntList(stride.size(), 0), groups);
  const IntList out_size(probe.sizes().begin() + 2, probe.sizes().end());
  // channels last, as a GEMM row per output position: requantized, then viewed as (N, C, ...)
  const int64_t n = input.dim();
  IntList perm{0};
  for (int64_t i = 2; i < n; ++i) perm.push_back(i);
  perm.push_back(1);
  std::optional<Tensor> rows = int8_conv_sums(input, weight, wp, stride, padding, dilation, groups, out_size);
  if (!rows) {
    // padding with the input's zero point is padding the centered values with 0
    const Centered x = centered(input, Tensor());
    const Centered w = centered(weight, wp.zero_points);
    const int64_t k = weight.numel() / std::max<int64_t>(weight.size(0), 1);
    const DType d = exact_dtype(k, x.max_abs, w.max_abs);
    const Tensor acc = convolution(to_dtype(x.values, d, false), to_dtype(w.values, d, false), std::nullopt,
                                   stride, padding, dilation, false, IntList(stride.size(), 0), groups);
    rows = permute(acc, perm).contiguous();
  }
  const Tensor q = requantize_static(*rows, wp, per_tensor(input, op).scale, bias, scale, zero_point, relu);
  IntList back(n);
  for (int64_t i = 0; i < n; ++i) back[perm[i]] = i;
  return permute(q, back);
}

namespace {
// Note [quantized add and mul]: as PyTorch's x86 kernels (qadd and qmul, their vectorized form):
//   add: each input dequantized as fma(s, q, s * -z) in float32 (the scale times the negated zero
//        point rounded once, ahead), the two summed, relu'd at 0 when asked, and quantized as
//        clamp(rint(sum * (1 / s_out)) + z_out): the product is rounded before the zero point is
//        added (not quantize_per_tensor's fused form).
//   mul: the centered integers' product (qa - za)(qb - zb), exact in int64, converted to float32
//        and times the float32 multiplier (sa * sb) * (1 / s_out), rounded, plus z_out, clamped;
//        relu then keeps codes of at least z_out.
// PyTorch computes the last partial block of a contiguous loop (under 2 x 64 codes) with scalar
// functions whose add can land one code apart at exact half steps; Ember uses the vector form for
// every value. Operands broadcast; both must have one quantized dtype.
template <typename U>
U clamp_code(int64_t v) {
  return static_cast<U>(std::clamp<int64_t>(v, std::numeric_limits<U>::min(), std::numeric_limits<U>::max()));
}

// rint(v) as an integer; v is below 2^31 in magnitude or clamped there first, as the vector
// conversion's bound is (NaN: the upper bound, as PyTorch's min against it leaves it).
int64_t rounded(float v) {
  constexpr float bound = 2147483520.0f;  // the largest float32 below 2^31
  v = v < bound ? v : bound;
  v = v > -bound ? v : -bound;
  return static_cast<int64_t>(std::nearbyint(v));
}

Tensor quantized_binary(const char* op, const Tensor& self, const Tensor& other, double scale,
                        int64_t zero_point, bool relu, bool is_add) {
  const Quantizer& pa = per_tensor(self, op);
  const Quantizer& pb = per_tensor(other, op);
  EMBER_CHECK(self.dtype() == other.dtype(), Error, "[", op,
              "] expected two tensors of one quantized dtype, but got ", dtype_name(self.dtype()), " and ",
              dtype_name(other.dtype()));
  const IntList shape = pointwise::broadcast_shapes(op, self.sizes(), other.sizes());
  Tensor out = empty_per_tensor(op, shape, scale, zero_point, self.dtype());
  const Tensor a = expand(integers(self), shape).contiguous();
  const Tensor b = expand(integers(other), shape).contiguous();
  const float sa = static_cast<float>(pa.scale), sb = static_cast<float>(pb.scale);
  const float inv = 1.0f / static_cast<float>(scale);
  const float premul_a = sa * static_cast<float>(-pa.zero_point),
              premul_b = sb * static_cast<float>(-pb.zero_point);
  const float multiplier = sa * sb * inv;
  visit_integers(self.dtype(), [&](auto u) {
    using U = decltype(u);
    const U* x = a.data<U>();
    const U* y = b.data<U>();
    U* q = static_cast<U*>(out.data_ptr());
    parallel_for(0, out.numel(), int64_t(1) << 14, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        if (is_add) {
          float v = std::fma(sa, static_cast<float>(x[i]), premul_a) +
                    std::fma(sb, static_cast<float>(y[i]), premul_b);
          if (relu) v = std::max(v, 0.0f);
          q[i] = clamp_code<U>(rounded(v * inv) + zero_point);
        } else {
          const int64_t c = (int64_t(x[i]) - pa.zero_point) * (int64_t(y[i]) - pb.zero_point);
          U code = clamp_code<U>(rounded(static_cast<float>(c) * multiplier) + zero_point);
          if (relu) code = std::max(code, clamp_code<U>(zero_point));
          q[i] = code;
        }
      }
    });
  });
  return out;
}
}  // namespace

Tensor _quantized_add(const Tensor& self, const Tensor& other, double scale, int64_t zero_point, bool relu) {
  return quantized_binary("quantized::add", self, other, scale, zero_point, relu, true);
}

Tensor _quantized_mul(const Tensor& self, const Tensor& other, double scale, int64_t zero_point, bool relu) {
  return quantized_binary("quantized::mul", self, other, scale, zero_point, relu, false);
}

Tensor _quantized_cat(const std::vector<Tensor>& tensors, int64_t dim, double scale, int64_t zero_point) {
  EMBER_CHECK(!tensors.empty(), Error, "[quantized::cat] expected a non-empty list of tensors");
  std::vector<Tensor> values;
  for (const Tensor& t : tensors) {
    per_tensor(t, "quantized::cat");
    values.push_back(dequantize(t));
  }
  return quantize_per_tensor(ember::cat(values, dim), scale, zero_point, tensors.front().dtype());
}

// Note [quantized embedding bags]: PyTorch's quantized Embedding and EmbeddingBag (FBGEMM's
// rowwise kernels) read a table quantized per row with float qparams: row r holds codes q and a
// scale s and bias b = -zero_point * s, float32 for quint8 and rounded to float16 for quint4x2 /
// quint2x4 (PyTorch's prepack stores them so). A bag sums its rows in order as
//   acc = fma(s * w, q, acc + b * w)      (w a member's per-sample weight, else 1)
// and so does this kernel: the same roundings, so the same bits (tests/test_quantized_torch_parity).
// A sub-byte table's codes are read where Note [sub-byte quantized tensors] packs them.
// An Embedding lookup is a bag of one. As PyTorch's module does, a bag always sums.
Tensor _quantized_embedding_bag(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                                const std::optional<Tensor>& per_sample_weights, bool include_last_offset) {
  const char* op = "quantized::embedding_bag";
  const Quantizer& qz = quantizer_of(weight, op);
  const DType dt = weight.dtype();
  EMBER_CHECK((dt == DType::QUInt8 || dt == DType::QUInt4x2 || dt == DType::QUInt2x4) &&
                  qz.qscheme == QScheme::PerChannelAffineFloatQParams && qz.axis == 0 && weight.dim() == 2,
              Error, "[", op,
              "] expected a 2-D ember.quint8, quint4x2 or quint2x4 weight quantized per row "
              "(per_channel_affine_float_qparams, axis 0), but got ",
              weight.dim(), "-D ember.", dtype_name(dt));
  for (const Tensor* t : {&indices, &offsets}) {
    EMBER_CHECK(t->dtype() == DType::Int64 || t->dtype() == DType::Int32, Error,
                "Expect 32 or 64 bit indices, but found ", dtype_name(t->dtype()), " instead.");
    EMBER_CHECK(t->dim() == 1, Error, "[", op, "] expected 1-D indices and offsets, but got a ", t->dim(),
                "-D tensor");
  }
  const int64_t n = indices.numel(), rows = weight.size(0), width = weight.size(1);
  const Tensor idx = to_dtype(indices, DType::Int64, false).contiguous();
  const Tensor off = to_dtype(offsets, DType::Int64, false).contiguous();
  const int64_t* ix = idx.data<int64_t>();
  const int64_t* of = off.data<int64_t>();
  const int64_t bags = include_last_offset ? std::max<int64_t>(off.numel() - 1, 0) : off.numel();
  EMBER_CHECK(off.numel() == 0 || of[0] == 0, Error, "[", op, "] expected offsets to start at 0, but got ",
              off.numel() ? of[0] : 0);
  for (int64_t b = 1; b < off.numel(); ++b)
    EMBER_CHECK(of[b] >= of[b - 1], Error, "[", op, "] expected non-decreasing offsets, but offsets[", b,
                "] = ", of[b], " < offsets[", b - 1, "] = ", of[b - 1]);
  EMBER_CHECK(off.numel() == 0 || of[off.numel() - 1] <= n, Error,
              "Yout input seems to be incorrect: the last offset value should be the size of the indices "
              "tensor, but it appears not.");
  for (int64_t i = 0; i < n; ++i)
    EMBER_CHECK(ix[i] >= 0 && ix[i] < rows, Error, "Index ", i, " is out of bounds: ", ix[i], ", range 0 to ",
                rows);
  Tensor psw;
  if (per_sample_weights.has_value() && per_sample_weights->defined()) {
    EMBER_CHECK(per_sample_weights->dtype() == DType::Float32 && per_sample_weights->dim() == 1 &&
                    per_sample_weights->numel() == n,
                Error, "[", op, "] expected float32 per_sample_weights of shape [", n, "], but got ember.",
                dtype_name(per_sample_weights->dtype()), " of ", per_sample_weights->numel(), " elements");
    psw = per_sample_weights->contiguous();
  }
  const int64_t per_byte = elements_per_byte(dt), bits = 8 / per_byte;
  // a sub-byte tensor is always contiguous (Note [sub-byte quantized tensors])
  const Tensor table = per_byte == 1 ? integers(weight).contiguous() : weight;
  const uint8_t* q = static_cast<const uint8_t*>(table.data_ptr());
  const uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
  const float* scales = qz.scales.data<float>();
  const float* zero_points = qz.zero_points.data<float>();
  // PyTorch's prepack stores a sub-byte row's scale and bias as float16
  auto row_qparams = [&](int64_t r, float& s, float& bias) {
    s = scales[r];
    bias = -zero_points[r] * s;
    if (per_byte > 1) {
      s = static_cast<float>(Half(s));
      bias = static_cast<float>(Half(bias));
    }
  };
  const float* w = psw.defined() ? psw.data<float>() : nullptr;
  Tensor out = empty({bags, width}, DType::Float32, Device());
  float* y = out.data<float>();
  parallel_for(0, bags, std::max<int64_t>(1, kGrain / std::max<int64_t>(width, 1)),
               [&](int64_t b0, int64_t b1) {
                 for (int64_t b = b0; b < b1; ++b) {
                   float* acc = y + b * width;
                   std::fill(acc, acc + width, 0.0f);
                   const int64_t end = b + 1 < off.numel() ? of[b + 1] : n;
                   for (int64_t i = of[b]; i < end; ++i) {
                     const int64_t r = ix[i];
                     float s, bias;
                     row_qparams(r, s, bias);
                     if (w != nullptr) {
                       s *= w[i];
                       bias *= w[i];
                     }
                     if (per_byte == 1) {
                       const uint8_t* row = q + r * width;
                       for (int64_t d = 0; d < width; ++d)
                         acc[d] = std::fma(s, static_cast<float>(row[d]), acc[d] + bias);
                       continue;
                     }
                     for (int64_t d = 0, e = r * width; d < width; ++d, ++e) {
                       const uint8_t code = (q[e / per_byte] >> ((e % per_byte) * bits)) & mask;
                       acc[d] = std::fma(s, static_cast<float>(code), acc[d] + bias);
                     }
                   }
                 }
               });
  return out;
}

}  // namespace ember
