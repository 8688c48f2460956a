// Fake quantization (PyTorch's fake_quantize_per_*_affine_cachemask and the learnable LSQ ops):
// float in, float out, each value snapped to the grid a quantized tensor would hold.
//
// Note [fake quant arithmetic]: as PyTorch's kernels, in the compute dtype T (float64 for a
// float64 input, else float32; float16/bfloat16 come back cast from it):
//   inv_scale = 1.0f / scale                        (float32, never x / scale)
//   q = nearbyint(x * inv_scale) + zero_point       (rounding half to even)
//   q = nearbyint(x * inv_scale + zero_point)       (a floating zero_point, per channel)
//   out = (clamp(q, quant_min, quant_max) - zero_point) * scale
//                                                   (in float32 per tensor, float64 per channel)
// The mask (the straight-through gradient) is quant_min <= q <= quant_max. The learnable ops' LSQ
// derivatives (Esser et al., 2020) count rounding as the identity, with q = nearbyint(x * inv_scale
// + zero_point): inside the range d/dscale = (out - x) / scale and d/dzero_point = 0; below (above)
// it d/dscale = quant_min - zp (quant_max - zp) and d/dzero_point = -scale.
#include <cmath>
#include <optional>
#include <tuple>
#include <type_traits>
#include <vector>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/parallel.h"
#include "ember/promotion.h"
#include "ops/dims.h"

namespace ember {
namespace {

constexpr int64_t kGrain = 1 << 14;

DType compute_dtype(const char* op, const Tensor& self) {
  EMBER_CHECK(is_floating_point(self.dtype()), NotImplementedError, "[", op,
              "] fake quantization expects a floating point input, but got ember.", dtype_name(self.dtype()));
  return self.dtype() == DType::Float64 ? DType::Float64 : DType::Float32;
}

void check_range(const char* op, int64_t quant_min, int64_t quant_max) {
  EMBER_CHECK(quant_min <= quant_max, Error, "[", op,
              "] `quant_min` should be less than or equal to `quant_max`.");
}

void check_scale(const char* op, double scale) {
  EMBER_CHECK(scale > 0, Error, "[", op, "] `scale` must be positive, but got ", scale);  // NaN fails too
}

// The qparams of a per-tensor op, or of channel c along the axis: scale in float32 as PyTorch
// keeps it, the zero point in the compute dtype.
template <typename T>
struct QParams {
  std::vector<float> scale;
  std::vector<T> inv_scale;
  std::vector<T> zero_point;
};

template <typename T>
constexpr DType dtype_of() {
  return std::is_same_v<T, double> ? DType::Float64 : DType::Float32;
}

template <typename T>
QParams<T> qparams_of(const Tensor& scale, const Tensor& zero_point) {
  const Tensor s = to_dtype(scale.contiguous(), DType::Float32, false).contiguous();
  const Tensor z = to_dtype(zero_point.contiguous(), dtype_of<T>(), false).contiguous();
  const int64_t n = s.numel();
  QParams<T> p{std::vector<float>(s.data<float>(), s.data<float>() + n), std::vector<T>(n),
               std::vector<T>(z.data<T>(), z.data<T>() + n)};
  for (int64_t c = 0; c < n; ++c) p.inv_scale[c] = static_cast<T>(1.0f / p.scale[c]);
  return p;
}

// x (contiguous, n elements) seen as [outer, channels, inner]: the channel of element i.
struct Channels {
  int64_t channels = 1, inner = 1;
  int64_t of(int64_t i) const { return channels == 1 ? 0 : (i / inner) % channels; }
};

Channels channels_along(const Tensor& x, std::optional<int64_t> axis) {
  Channels ch;
  if (!axis) return ch;
  ch.channels = x.size(*axis);
  for (int64_t d = *axis + 1; d < x.dim(); ++d) ch.inner *= x.size(d);
  return ch;
}

// Note [fake quant arithmetic]: T computes q, Acc the output, O is the output buffer's type.
template <typename T, typename Acc, typename O>
void fake_quant_loop(const T* x, O* out, bool* mask, int64_t n, Channels ch, const QParams<T>& p,
                     bool zero_point_before_rounding, int64_t quant_min, int64_t quant_max) {
  const T lo = static_cast<T>(quant_min), hi = static_cast<T>(quant_max);
  parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t c = ch.of(i);
      const T y = x[i] * p.inv_scale[c];
      const T q = zero_point_before_rounding ? std::nearbyint(y + p.zero_point[c])
                                             : std::nearbyint(y) + p.zero_point[c];
      if (mask) mask[i] = q >= lo && q <= hi;
      const T clamped = q < lo ? lo : q > hi ? hi : q;  // NaN stays NaN
      out[i] = static_cast<O>((static_cast<Acc>(clamped) - static_cast<Acc>(p.zero_point[c])) *
                              static_cast<Acc>(p.scale[c]));
    }
  });
}

// x (contiguous, in the compute dtype T) fake-quantized into a new tensor of dtype `out_dtype` (O).
template <typename T, typename Acc, typename O>
Tensor fake_quant_into(const Tensor& x, DType out_dtype, bool* mask, Channels ch, const QParams<T>& p,
                       bool zero_point_before_rounding, int64_t quant_min, int64_t quant_max) {
  Tensor out = empty(x.sizes(), out_dtype, x.device());
  fake_quant_loop<T, Acc, O>(x.data<T>(), out.data<O>(), mask, x.numel(), ch, p, zero_point_before_rounding,
                             quant_min, quant_max);
  return out;
}

// (output, mask) of x fake-quantized along `axis` (none: per tensor), the zero point added before
// rounding when `zero_point_before_rounding`.
std::tuple<Tensor, Tensor> fake_quantize(const char* op, const Tensor& self, const Tensor& scale,
                                         const Tensor& zero_point, std::optional<int64_t> axis,
                                         bool zero_point_before_rounding, int64_t quant_min,
                                         int64_t quant_max, bool want_mask) {
  const DType compute = compute_dtype(op, self);
  const Tensor x = to_dtype(self, compute, false).contiguous();
  const Channels ch = channels_along(x, axis);
  Tensor mask = want_mask ? empty(self.sizes(), DType::Bool, self.device()) : Tensor();
  bool* m = want_mask ? mask.data<bool>() : nullptr;
  const bool zp_first = zero_point_before_rounding;
  Tensor out;
  if (compute == DType::Float64) {
    const auto p = qparams_of<double>(scale, zero_point);
    out = axis ? fake_quant_into<double, double, double>(x, DType::Float64, m, ch, p, zp_first, quant_min,
                                                         quant_max)
               : fake_quant_into<double, float, double>(x, DType::Float64, m, ch, p, zp_first, quant_min,
                                                        quant_max);
  } else {
    const auto p = qparams_of<float>(scale, zero_point);
    if (!axis)
      out = fake_quant_into<float, float, float>(x, DType::Float32, m, ch, p, zp_first, quant_min, quant_max);
    else if (self.dtype() == DType::Float32)
      out =
          fake_quant_into<float, double, float>(x, DType::Float32, m, ch, p, zp_first, quant_min, quant_max);
    else  // float64 results, rounded once to float16/bfloat16
      out =
          fake_quant_into<float, double, double>(x, DType::Float64, m, ch, p, zp_first, quant_min, quant_max);
  }
  return {to_dtype(out, self.dtype(), false), mask};
}

// PyTorch's per-channel checks, in its order; the axis as a non-negative index. Integer zero points
// must lie in [quant_min, quant_max] (floating ones are not checked, as in PyTorch).
int64_t check_per_channel(const char* op, const Tensor& self, const Tensor& scale, const Tensor& zero_point,
                          int64_t axis, int64_t quant_min, int64_t quant_max) {
  EMBER_CHECK(self.dim() > 0, IndexError, "[", op, "] Dimension specified as ", axis,
              " but tensor has no dimensions");
  dims::wrap(op, axis, self.dim());
  EMBER_CHECK(axis >= 0, Error, "[", op, "] `axis` must be between 0 and number of dimensions of input");
  check_range(op, quant_min, quant_max);
  EMBER_CHECK(scale.dim() == 1, Error, "[", op, "] scale should be a 1-D tensor");
  EMBER_CHECK(zero_point.dim() == 1, Error, "[", op, "] zero point should be a 1-D tensor");
  EMBER_CHECK(scale.numel() == zero_point.numel(), Error, "[", op,
              "] scale and zero-point need to have the same dimensions");
  EMBER_CHECK(scale.numel() == self.size(axis), Error, "[", op,
              "] dimensions of scale and zero-point are not consistent with input tensor");
  EMBER_CHECK(is_floating_point(scale.dtype()), TypeError, "[", op,
              "] scale must be a floating point tensor, but got ember.", dtype_name(scale.dtype()));
  EMBER_CHECK(!is_complex(zero_point.dtype()) && zero_point.dtype() != DType::Bool, TypeError, "[", op,
              "] zero_point must be a real number tensor, but got ember.", dtype_name(zero_point.dtype()));
  const Tensor s = to_dtype(scale.contiguous(), DType::Float64, false).contiguous();
  for (int64_t c = 0; c < s.numel(); ++c) {
    EMBER_CHECK(s.data<double>()[c] > 0, Error, "[", op, "] `scale` must be positive, but got ",
                s.data<double>()[c], " at index ", c);
  }
  if (!is_floating_point(zero_point.dtype())) {
    const Tensor z = to_dtype(zero_point.contiguous(), DType::Int64, false).contiguous();
    for (int64_t c = 0; c < z.numel(); ++c) {
      const int64_t v = z.data<int64_t>()[c];
      EMBER_CHECK(quant_min <= v && v <= quant_max, Error, "[", op,
                  "] `zero_point` must be between `quant_min` and `quant_max`.");
    }
  }
  return axis;
}

// The one value of a per-tensor op's scale or zero_point tensor.
double item_of(const char* op, const char* name, const Tensor& t) {
  EMBER_CHECK(t.numel() == 1, Error, "[", op, "] a Tensor with ", t.numel(),
              " elements cannot be converted to Scalar (", name, ")");
  EMBER_CHECK(!is_complex(t.dtype()), TypeError, "[", op, "] ", name, " must be real, but got ember.",
              dtype_name(t.dtype()));
  return to_dtype(t.contiguous(), DType::Float64, false).contiguous().data<double>()[0];
}

double clamp_to(double v, int64_t lo, int64_t hi) {
  return v < lo ? static_cast<double>(lo) : v > hi ? static_cast<double>(hi) : v;
}

Tensor scalar_tensor(double v, DType dtype) {
  return to_dtype(wrapped_number(Scalar(v)), dtype, true);
}

// The learnable per-channel op's zero points: rounded half to even, clamped into the range.
Tensor rounded_zero_points(const Tensor& zero_point, int64_t quant_min, int64_t quant_max) {
  const Tensor z = to_dtype(zero_point.contiguous(), DType::Float64, true).contiguous();
  double* v = z.data<double>();
  for (int64_t c = 0; c < z.numel(); ++c) v[c] = clamp_to(std::nearbyint(v[c]), quant_min, quant_max);
  return z;
}

}  // namespace

std::tuple<Tensor, Tensor> fake_quantize_per_tensor_affine_cachemask(const Tensor& self, double scale,
                                                                     int64_t zero_point, int64_t quant_min,
                                                                     int64_t quant_max) {
  const char* op = "fake_quantize_per_tensor_affine";
  check_range(op, quant_min, quant_max);
  EMBER_CHECK(quant_min <= zero_point && zero_point <= quant_max, Error, "[", op,
              "] `zero_point` must be between `quant_min` and `quant_max`.");
  check_scale(op, scale);
  return fake_quantize(op, self, scalar_tensor(scale, DType::Float32),
                       scalar_tensor(static_cast<double>(zero_point), DType::Float64), std::nullopt, false,
                       quant_min, quant_max, true);
}

std::tuple<Tensor, Tensor> fake_quantize_per_channel_affine_cachemask(const Tensor& self, const Tensor& scale,
                                                                      const Tensor& zero_point, int64_t axis,
                                                                      int64_t quant_min, int64_t quant_max) {
  const char* op = "fake_quantize_per_channel_affine";
  axis = check_per_channel(op, self, scale, zero_point, axis, quant_min, quant_max);
  return fake_quantize(op, self, scale, zero_point, axis, is_floating_point(zero_point.dtype()), quant_min,
                       quant_max, true);
}

// Forward: the zero point rounded half to even and clamped (the backward of the per-tensor op rounds
// it half up: PyTorch's difference, kept).
Tensor _fake_quantize_learnable_per_tensor_affine(const Tensor& self, const Tensor& scale,
                                                  const Tensor& zero_point, int64_t quant_min,
                                                  int64_t quant_max, double grad_factor) {
  const char* op = "_fake_quantize_learnable_per_tensor_affine";
  (void)grad_factor;  // the backward's
  check_range(op, quant_min, quant_max);
  const double zp = clamp_to(std::nearbyint(item_of(op, "zero_point", zero_point)), quant_min, quant_max);
  const double s = item_of(op, "scale", scale);
  check_scale(op, s);
  return std::get<0>(fake_quantize(op, self, scalar_tensor(s, DType::Float32),
                                   scalar_tensor(zp, DType::Float64), std::nullopt, false, quant_min,
                                   quant_max, false));
}

Tensor _fake_quantize_learnable_per_channel_affine(const Tensor& self, const Tensor& scale,
                                                   const Tensor& zero_point, int64_t axis, int64_t quant_min,
                                                   int64_t quant_max, double grad_factor) {
  const char* op = "_fake_quantize_learnable_per_channel_affine";
  (void)grad_factor;
  const Tensor zp = rounded_zero_points(zero_point, quant_min, quant_max);
  axis = check_per_channel(op, self, scale, zp, axis, quant_min, quant_max);
  return std::get<0>(fake_quantize(op, self, scale, zp, axis, false, quant_min, quant_max, false));
}

namespace {

// Note [fake quant arithmetic]'s LSQ derivatives, elementwise, in the compute dtype T.
template <typename T>
void learnable_grads_loop(const T* x, T* d_self, T* d_scale, T* d_zero_point, int64_t n, Channels ch,
                          const QParams<T>& p, int64_t quant_min, int64_t quant_max) {
  const T lo = static_cast<T>(quant_min), hi = static_cast<T>(quant_max);
  parallel_for(0, n, kGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t c = ch.of(i);
      const T s = static_cast<T>(p.scale[c]), zp = p.zero_point[c];
      const T q = std::nearbyint(x[i] * p.inv_scale[c] + zp);
      const bool below = q<lo, above = q> hi, inside = !(below || above);  // NaN counts as inside
      const T fq = ((inside ? q : below ? lo : hi) - zp) * s;
      d_self[i] = inside ? T(1) : T(0);
      d_scale[i] = inside ? (fq - x[i]) * p.inv_scale[c] : below ? lo - zp : hi - zp;
      d_zero_point[i] = inside ? T(0) : -s;
    }
  });
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> _fake_quantize_learnable_local_grads(const Tensor& self,
                                                                        const Tensor& scale,
                                                                        const Tensor& zero_point,
                                                                        int64_t axis, int64_t quant_min,
                                                                        int64_t quant_max, bool per_channel) {
  const char* op = "_fake_quantize_learnable_local_grads";
  const DType compute = compute_dtype(op, self);
  check_range(op, quant_min, quant_max);
  Tensor s = scale, zp;
  std::optional<int64_t> along;
  if (per_channel) {
    zp = rounded_zero_points(zero_point, quant_min, quant_max);
    along = check_per_channel(op, self, scale, zp, axis, quant_min, quant_max);
  } else {  // PyTorch's backward rounds the zero point half up: trunc(clamp(float32(zp + 0.5)))
    const float up = static_cast<float>(item_of(op, "zero_point", zero_point) + 0.5);
    zp = scalar_tensor(std::trunc(clamp_to(up, quant_min, quant_max)), DType::Float64);
    const double value = item_of(op, "scale", scale);
    check_scale(op, value);
    s = scalar_tensor(value, DType::Float32);
  }
  const Tensor x = to_dtype(self, compute, false).contiguous();
  const Channels ch = channels_along(x, along);
  Tensor d_self = empty(self.sizes(), compute, self.device()),
         d_scale = empty(self.sizes(), compute, self.device()),
         d_zero_point = empty(self.sizes(), compute, self.device());
  if (compute == DType::Float64) {
    learnable_grads_loop<double>(x.data<double>(), d_self.data<double>(), d_scale.data<double>(),
                                 d_zero_point.data<double>(), x.numel(), ch, qparams_of<double>(s, zp),
                                 quant_min, quant_max);
  } else {
    learnable_grads_loop<float>(x.data<float>(), d_self.data<float>(), d_scale.data<float>(),
                                d_zero_point.data<float>(), x.numel(), ch, qparams_of<float>(s, zp),
                                quant_min, quant_max);
  }
  return {d_self, d_scale, d_zero_point};
}

}  // namespace ember
