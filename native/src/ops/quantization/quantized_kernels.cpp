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
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/parallel.h"
#include "ember/quantizer.h"
#include "ops/quantization/quantized.h"

namespace ember {
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
      quantize_per_tensor(full({}, value, DType::Float32, Device()), p.scale, p.zero_point, q.dtype());
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

// acc [rows, out] exact (Note [integer GEMM through float BLAS]) -> output per element.
// Calls emit(index, acc, act_times_w, multiplier, bias, has_bias) for each element of acc [rows, out];
// act_times_w = float(x_s) * float(w_s), multiplier = float(x_s * w_s / out_scale) (0 when unused).
template <typename Emit>
void requantize_rows(const Tensor& acc, const WeightParams& wp, double x_scale,
                     const std::optional<Tensor>& bias, double out_scale, Emit&& emit) {
  const int64_t out_channels = acc.size(-1);
  const int64_t rows = out_channels ? acc.numel() / out_channels : 0;
  const Tensor a = acc.contiguous();  // float32 or float64 (Note [integer GEMM through float BLAS])
  const float* s32 = a.dtype() == DType::Float32 ? a.data<float>() : nullptr;
  const double* s64 = s32 ? nullptr : a.data<double>();
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
                     emit(r * out_channels + j,
                          s32 ? s32[r * out_channels + j] : static_cast<float>(s64[r * out_channels + j]),
                          act_times_w[j], multiplier[j], bp ? bp[j] : 0.0f, bp != nullptr);
               });
}

// The static requantization into quint8 (Note [integer GEMM through float BLAS]).
Tensor requantize_static(const Tensor& acc, const WeightParams& wp, double x_scale,
                         const std::optional<Tensor>& bias, double out_scale, int64_t out_zero_point,
                         bool relu) {
  Tensor out = empty_quantized(acc.sizes(), DType::QUInt8, affine(out_scale, out_zero_point));
  uint8_t* y = static_cast<uint8_t*>(out.data_ptr());
  const float lo = relu ? static_cast<float>(out_zero_point) : 0.0f;
  requantize_rows(acc, wp, x_scale, bias, out_scale,
                  [&](int64_t i, float raw, float act_times_w, float multiplier, float b, bool has_bias) {
                    if (has_bias) raw += b / act_times_w;
                    const float v = std::nearbyint(raw * multiplier) + static_cast<float>(out_zero_point);
                    y[i] = static_cast<uint8_t>(std::min(std::max(v, lo), 255.0f));
                  });
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

// x [.., K] centered, w [N, K] centered -> exact acc [.., N].
Tensor integer_linear(const Centered& x, const Centered& w) {
  const int64_t k = w.values.size(1);
  const DType d = exact_dtype(k, x.max_abs, w.max_abs);
  return matmul(to_dtype(x.values, d, false), t(to_dtype(w.values, d, false)));
}

// One output position's window along a pooled dim: [start, end) inside the input, and its
// extent counting padding.
struct Window {
  int64_t start, end, padded;
};

// PyTorch's quantized average pooling: the integer sum of (q - zero_point) over each window,
// requantized as zero_point + nearbyint(float(sum) * float(1 / divisor)) (input and output share
// their parameters); divisor(padded extent, elements inside) picks the divisor.
template <typename Divisor>
Tensor average_windows(const Tensor& self, const std::vector<std::vector<Window>>& windows, const char* op,
                       Divisor&& divisor) {
  const Quantizer& p = per_tensor(self, op);
  const int64_t n = static_cast<int64_t>(windows.size());
  IntList out_shape(self.sizes().begin(), self.sizes().end() - n);
  for (const auto& w : windows) out_shape.push_back(static_cast<int64_t>(w.size()));
  // (planes, D, H, W) with missing leading spatial dims of extent 1
  std::vector<std::vector<Window>> dims(3 - n, std::vector<Window>{{0, 1, 1}});
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
        for (const Window& wd : dims[0])
          for (const Window& wh : dims[1])
            for (const Window& ww : dims[2]) {
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
  std::vector<std::vector<Window>> windows;
  for (size_t d = 0; d < n; ++d) {
    const int64_t in = self.size(self.dim() - int64_t(n) + int64_t(d));
    const int64_t k = kernel_size[d], st = stride[d], pad = padding[d];
    EMBER_CHECK(k > 0 && st > 0 && pad >= 0 && pad <= k / 2, Error, "[", op,
                "] expected positive kernel and stride and padding at most half the kernel");
    int64_t out = (in + 2 * pad - k + (ceil_mode ? st - 1 : 0)) / st + 1;
    if (ceil_mode && (out - 1) * st >= in + pad) --out;  // the last window must start inside
    EMBER_CHECK(out > 0, Error, "[", op, "] the output would be empty (input ", in, ", kernel ", k, ")");
    std::vector<Window> w;
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
  std::vector<std::vector<Window>> windows;
  for (size_t d = 0; d < n; ++d) {
    const int64_t in = self.size(self.dim() - int64_t(n) + int64_t(d)), out = output_size[d];
    EMBER_CHECK(out >= 0 && (in > 0 || out == 0), Error, "[", op,
                "] expected a non-negative output size over a "
                "non-empty input, but got ",
                out, " from ", in);
    std::vector<Window> w;
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
  const Centered x = centered(input, Tensor());
  const Centered w = centered(weight, wp.zero_points);
  return requantize_static(integer_linear(x, w), wp, per_tensor(input, op).scale, bias, scale, zero_point,
                           relu);
}

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
  const Tensor acc = integer_linear(centered(xq, Tensor()), centered(weight, wp.zero_points));
  Tensor out = empty(acc.sizes(), DType::Float32, Device());
  float* y = out.data<float>();
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
  // padding with the input's zero point is padding the centered values with 0
  const Centered x = centered(input, Tensor());
  const Centered w = centered(weight, wp.zero_points);
  const int64_t k = weight.numel() / std::max<int64_t>(weight.size(0), 1);
  const DType d = exact_dtype(k, x.max_abs, w.max_abs);
  const Tensor acc = convolution(to_dtype(x.values, d, false), to_dtype(w.values, d, false), std::nullopt,
                                 stride, padding, dilation, false, IntList(stride.size(), 0), groups);
  // channels last, as a GEMM row per output position: requantize, then back to (N, C, ...)
  const IntList perm = [&] {
    IntList p{0};
    for (int64_t i = 2; i < acc.dim(); ++i) p.push_back(i);
    p.push_back(1);
    return p;
  }();
  const Tensor rows = permute(acc, perm).contiguous();
  const Tensor q = requantize_static(rows, wp, per_tensor(input, op).scale, bias, scale, zero_point, relu);
  IntList back(acc.dim());
  for (int64_t i = 0; i < acc.dim(); ++i) back[perm[i]] = i;
  return permute(q, back);
}

namespace {
// quantized::add / mul: the float32 values combined, relu'd when asked, quantized with (scale, zero_point).
Tensor quantized_binary(const char* op, const Tensor& self, const Tensor& other, double scale,
                        int64_t zero_point, bool relu, Tensor (*combine)(const Tensor&, const Tensor&)) {
  per_tensor(self, op);
  per_tensor(other, op);
  EMBER_CHECK(self.dtype() == other.dtype(), Error, "[", op,
              "] expected two tensors of one quantized dtype, but got ", dtype_name(self.dtype()), " and ",
              dtype_name(other.dtype()));
  Tensor value = combine(dequantize(self), dequantize(other));
  if (relu) value = ember::relu(value);
  return quantize_per_tensor(value, scale, zero_point, self.dtype());
}
}  // namespace

Tensor _quantized_add(const Tensor& self, const Tensor& other, double scale, int64_t zero_point, bool relu) {
  return quantized_binary("quantized::add", self, other, scale, zero_point, relu,
                          [](const Tensor& a, const Tensor& b) { return add(a, b); });
}

Tensor _quantized_mul(const Tensor& self, const Tensor& other, double scale, int64_t zero_point, bool relu) {
  return quantized_binary("quantized::mul", self, other, scale, zero_point, relu,
                          [](const Tensor& a, const Tensor& b) { return mul(a, b); });
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
// byte-rowwise kernel) read a quint8 table quantized per row with float qparams: row r holds
// codes q and a float32 scale s and bias b = -zero_point * s. A bag sums its rows in order as
//   acc = fma(s * w, q, acc + b * w)      (w a member's per-sample weight, else 1)
// and so does this kernel: the same roundings, so the same bits (tests/test_quantized_torch_parity).
// An Embedding lookup is a bag of one. As PyTorch's module does, a bag always sums.
Tensor _quantized_embedding_bag_byte(const Tensor& weight, const Tensor& indices, const Tensor& offsets,
                                     const std::optional<Tensor>& per_sample_weights,
                                     bool include_last_offset) {
  const char* op = "quantized::embedding_bag_byte";
  const Quantizer& qz = quantizer_of(weight, op);
  EMBER_CHECK(weight.dtype() == DType::QUInt8 && qz.qscheme == QScheme::PerChannelAffineFloatQParams &&
                  qz.axis == 0 && weight.dim() == 2,
              Error, "[", op,
              "] expected a 2-D ember.quint8 weight quantized per row (per_channel_affine_float_qparams, "
              "axis 0), but got ",
              weight.dim(), "-D ember.", dtype_name(weight.dtype()));
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
  const Tensor codes = integers(weight).contiguous();
  const uint8_t* q = static_cast<const uint8_t*>(codes.data_ptr());
  const float* scales = qz.scales.data<float>();
  const float* zero_points = qz.zero_points.data<float>();
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
                     float s = scales[r];
                     float bias = -zero_points[r] * s;
                     if (w != nullptr) {
                       s *= w[i];
                       bias *= w[i];
                     }
                     const uint8_t* row = q + r * width;
                     for (int64_t d = 0; d < width; ++d)
                       acc[d] = std::fma(s, static_cast<float>(row[d]), acc[d] + bias);
                   }
                 }
               });
  return out;
}

}  // namespace ember
