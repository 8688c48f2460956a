// Quantized tensors (Note [quantized tensors] in ember/quantizer.h): quantize_per_tensor /
// per_channel / per_tensor_dynamic, dequantize, int_repr and the _make_per_*_quantized_tensor
// constructors.
//
// Note [quantize arithmetic]: as PyTorch's x86 kernels, in float32, rounding half to even:
//   per tensor, quint8 / qint8 (FBGEMM's Quantize, a fused multiply-add; quantize_affine_stub):
//                  q = clamp(nearbyint(fma(x, 1.0f / float(scale), zero_point)), qmin, qmax)
//   per tensor, qint32, and per channel (ATen's loops: the product rounded to float first):
//                  q = clamp(nearbyint(zero_point + x * (1.0f / float(scale))), qmin, qmax)
//   float_qparams: q = clamp(nearbyint(x * (1.0f / scale) + zero_point), qmin, qmax)
// The two affine forms differ by one code at a value within float32 rounding of a half step.
// quantized::cat and the dynamic Linear's activations quantize as quantize_per_tensor (PyTorch's
// call it); the bounds of quantized hardtanh and relu6 as quantize_rounded_product (PyTorch's
// at a half step too); quantized add and mul round as Note [quantized add and mul] (in
// quantized_kernels.cpp) says. A NaN becomes qmax (qmin for qint32), as
// PyTorch's per-tensor kernels leave it. Dequantizing: (float(q) - zero_point) * float(scale) in
// float32 per tensor, (q - zero_point) * scale in float64 then float32 per channel (PyTorch's two
// kernels differ so).
// Sub-byte dtypes (Note [sub-byte quantized tensors] in ember/quantizer.h), as PyTorch's loops:
//   per tensor:    q = clamp(lrint(nearbyint(x * (1.0f / float(scale))) + zero_point), 0, 2^bits - 1)
//                  where a NaN, an infinity or a value beyond int64 (x86's lrint answers INT64_MIN
//                  for them) gives 0
//   per channel:   float qparams only, as float_qparams above (PyTorch has no other sub-byte form;
//                  as for quint8, a NaN or a value past int32 saturates here, where PyTorch's loop
//                  narrows lrintf's answer to int)
// and dequantize as their byte-sized twins, code by code.
// choose_qparams is FBGEMM's ChooseQuantizationParams (what quantize_per_tensor_dynamic and
// the dynamic quantized linear use for activations).
#include "ops/quantization/quantized.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/parallel.h"
#include "ember/quantizer.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<QuantizeAffineFn> quantize_affine_stub("quantize_per_tensor");

namespace {

constexpr int64_t kGrain = 1 << 14;

template <typename F>
void visit_quantized(DType d, const char* op, F&& f) {
  switch (d) {
    case DType::QInt8: return f(int8_t{});
    case DType::QUInt8:
    case DType::QUInt4x2:  // the codes, unpacked one per byte (unpack_codes)
    case DType::QUInt2x4: return f(uint8_t{});
    case DType::QInt32: return f(int32_t{});
    default:
      throw Error(std::string("[") + op + "] expected a quantized dtype (ember.quint8, ember.qint8, " +
                  "ember.qint32, ember.quint4x2 or ember.quint2x4), but got ember." + dtype_name(d));
  }
}

// Note [sub-byte quantized tensors]: the bits of one code of quint4x2 (4) or quint2x4 (2), else 0.
int sub_byte_bits(DType d) {
  return d == DType::QUInt4x2 ? 4 : (d == DType::QUInt2x4 ? 2 : 0);
}

// Packs n codes (one per byte, each below 2^bits) into `packed`, element i in bits
// (i % k) * bits of byte i / k.
void pack_codes(const uint8_t* codes, int64_t n, int bits, uint8_t* packed) {
  const int64_t k = 8 / bits;
  parallel_for(0, (n + k - 1) / k, kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      uint8_t byte = 0;
      for (int64_t j = 0; j < k && b * k + j < n; ++j)
        byte |= static_cast<uint8_t>(codes[b * k + j] << (j * bits));
      packed[b] = byte;
    }
  });
}

// A sub-byte tensor's codes, one per byte, in its shape.
Tensor unpack_codes(const Tensor& self) {
  const int bits = sub_byte_bits(self.dtype());
  const int64_t k = 8 / bits;
  const uint8_t mask = static_cast<uint8_t>((1 << bits) - 1);
  Tensor out = empty(self.sizes(), DType::UInt8, Device());
  const uint8_t* packed = static_cast<const uint8_t*>(self.data_ptr());
  uint8_t* codes = out.data<uint8_t>();
  parallel_for(0, out.numel(), kGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) codes[i] = (packed[i / k] >> ((i % k) * bits)) & mask;
  });
  return out;
}

// The codes of a quantized tensor as its underlying integers, contiguous: unpacked for sub-byte dtypes.
Tensor contiguous_codes(const Tensor& self) {
  return sub_byte_bits(self.dtype()) ? unpack_codes(self) : self.contiguous();
}

void check_float_input(const char* op, const Tensor& self) {
  EMBER_CHECK(self.dtype() == DType::Float32, Error, "[", op,
              "] quantizes only a float32 tensor, but got ember.", dtype_name(self.dtype()));
  EMBER_CHECK(self.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              self.device().str());
}

void check_scale(const char* op, double scale) {
  const float s = static_cast<float>(scale);
  EMBER_CHECK(s > 0 && std::isfinite(s), Error, "[", op, "] expected a positive, finite scale, but got ",
              scale);
}

template <typename U>
void check_zero_point(const char* op, int64_t zero_point) {
  EMBER_CHECK(zero_point >= std::numeric_limits<U>::min(), Error, "[", op, "] zero_point ", zero_point,
              " is below lower bound.");
  EMBER_CHECK(zero_point <= std::numeric_limits<U>::max(), Error, "[", op, "] zero_point ", zero_point,
              " is above upper bound.");
}

// Note [quantize arithmetic]: the rounded value clamped to U's range, NaN to qmax (qint32: qmin).
template <typename U>
U clamp_rounded(float v) {
  constexpr double lo = static_cast<double>(std::numeric_limits<U>::min());
  constexpr double hi = static_cast<double>(std::numeric_limits<U>::max());
  if (std::isnan(v)) return sizeof(U) == 4 ? std::numeric_limits<U>::min() : std::numeric_limits<U>::max();
  const double r = std::nearbyint(static_cast<double>(v));
  return static_cast<U>(r < lo ? lo : (r > hi ? hi : r));
}

// A per-tensor quantizer, its scale and zero point checked for dtype (errors name op).
std::shared_ptr<Quantizer> checked_per_tensor(const char* op, double scale, int64_t zero_point, DType dtype) {
  check_scale(op, scale);
  visit_quantized(dtype, op, [&](auto u) { check_zero_point<decltype(u)>(op, zero_point); });
  auto quantizer = std::make_shared<Quantizer>();
  quantizer->scale = scale;
  quantizer->zero_point = zero_point;
  return quantizer;
}

// PyTorch takes the channel axis as given: no negative axis.
int64_t channel_axis(const char* op, const Tensor& self, int64_t axis) {
  EMBER_CHECK(axis >= 0 && axis < self.dim(), Error, "[", op,
              "] Channel axis out of range in per channel affine quantization. Got: ", axis,
              " Expected: [0, ", self.dim(), ")");
  return axis;
}

// The index along `axis` of each contiguous element: (i / inner) % channels.
struct ChannelWalk {
  int64_t channels, inner;
  ChannelWalk(const IntList& sizes, int64_t axis) : channels(sizes[axis]), inner(1) {
    for (size_t d = axis + 1; d < sizes.size(); ++d) inner *= sizes[d];
  }
  int64_t operator()(int64_t i) const { return (i / inner) % channels; }
};

}  // namespace

QParams choose_qparams(float min, float max, int64_t qmin, int64_t qmax, bool reduce_range) {
  // FBGEMM's ChooseQuantizationParams (preserve_sparsity and power-of-two scales off).
  min = std::min(min, 0.0f);
  max = std::max(max, 0.0f);
  if (reduce_range) {
    qmin /= 2;
    qmax /= 2;
  }
  double scale = (static_cast<double>(max) - min) / static_cast<double>(qmax - qmin);
  if (static_cast<float>(scale) == 0.0f || std::isinf(1.0f / static_cast<float>(scale))) scale = 0.1;
  constexpr float kSmallestScale = 6.1e-5f;  // FBGEMM's SMALL_SCALE_THRESHOLD
  if (scale < kSmallestScale) {
    const float original = static_cast<float>(scale);
    scale = kSmallestScale;
    if (min == 0.0f) {
      max = static_cast<float>(kSmallestScale * (qmax - qmin));
    } else if (max == 0.0f) {
      min = static_cast<float>(-kSmallestScale * (qmax - qmin));
    } else {
      const float amplifier = kSmallestScale / original;
      min *= amplifier;
      max *= amplifier;
    }
  }
  const double from_min = qmin - min / scale;
  const double from_max = qmax - max / scale;
  const double from_min_error = std::abs(static_cast<double>(qmin)) - std::abs(min / scale);
  const double from_max_error = std::abs(static_cast<double>(qmax)) - std::abs(max / scale);
  const double initial = from_min_error < from_max_error ? from_min : from_max;
  int64_t zero_point;
  if (initial < qmin) {
    zero_point = qmin;
  } else if (initial > qmax) {
    zero_point = qmax;
  } else {
    zero_point = static_cast<int64_t>(std::nearbyint(initial));
  }
  return {scale, zero_point};
}

namespace {

// quantize_per_tensor's two forms (Note [quantize arithmetic]): fused, or the product rounded first.
Tensor quantize_affine(const char* op, const Tensor& self, double scale, int64_t zero_point, DType dtype,
                       bool fused) {
  check_float_input(op, self);
  Tensor out = empty_quantized(self.sizes(), dtype, checked_per_tensor(op, scale, zero_point, dtype));
  if (const int bits = sub_byte_bits(dtype)) {
    const Tensor in = self.contiguous();
    const float* x = in.data<float>();
    const float inv_scale = 1.0f / static_cast<float>(scale);
    const float zp = static_cast<float>(zero_point);
    const int64_t qmax = (int64_t{1} << bits) - 1;
    Tensor codes = empty(self.sizes(), DType::UInt8, Device());
    uint8_t* c = codes.data<uint8_t>();
    parallel_for(0, in.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const float v = std::nearbyint(x[i] * inv_scale) + zp;
        // lrint's domain: beyond it (NaN, +-inf, |v| >= 2^63) x86 answers INT64_MIN, so qmin
        const int64_t r = std::fabs(v) < 9.2233715e18f ? std::llrint(v) : std::numeric_limits<int64_t>::min();
        c[i] = static_cast<uint8_t>(std::clamp<int64_t>(r, 0, qmax));
      }
    });
    pack_codes(c, in.numel(), bits, static_cast<uint8_t*>(out.data_ptr()));
    return out;
  }
  visit_quantized(dtype, op, [&](auto u) {
    using U = decltype(u);
    const Tensor in = self.contiguous();
    const float* x = in.data<float>();
    U* q = static_cast<U*>(out.data_ptr());
    const float inv_scale = 1.0f / static_cast<float>(scale);
    const float zp = static_cast<float>(zero_point);
    if (fused && sizeof(U) == 1) {
      quantize_affine_stub.get(DeviceType::CPU)(x, q, in.numel(), inv_scale, zp, std::is_signed_v<U>);
      return;
    }
    parallel_for(0, in.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) q[i] = clamp_rounded<U>(zp + x[i] * inv_scale);
    });
  });
  return out;
}

}  // namespace

Tensor quantize_per_tensor(const Tensor& self, double scale, int64_t zero_point, DType dtype) {
  return quantize_affine("quantize_per_tensor", self, scale, zero_point, dtype, true);
}

Tensor quantize_rounded_product(const Tensor& self, double scale, int64_t zero_point, DType dtype) {
  return quantize_affine("quantize_per_tensor", self, scale, zero_point, dtype, false);
}

Tensor empty_per_tensor(const char* op, const IntList& sizes, double scale, int64_t zero_point, DType dtype) {
  return empty_quantized(sizes, dtype, checked_per_tensor(op, scale, zero_point, dtype));
}

Tensor quantize_per_channel(const Tensor& self, const Tensor& scales, const Tensor& zero_points, int64_t axis,
                            DType dtype) {
  const char* op = "quantize_per_channel";
  check_float_input(op, self);
  const int64_t a = channel_axis(op, self, axis);
  const int64_t channels = self.size(a);
  EMBER_CHECK(scales.dim() == 1 && scales.numel() == channels, Error, "[", op,
              "] length of scales must equal to channel, expected ", channels, " got, ", scales.numel());
  EMBER_CHECK(zero_points.dim() == 1 && zero_points.numel() == channels, Error, "[", op,
              "] length of zero_points must equal to channel expected ", channels, " got, ",
              zero_points.numel());
  EMBER_CHECK(is_floating_point(scales.dtype()), Error, "[", op, "] expected floating scales, but got ember.",
              dtype_name(scales.dtype()));
  const bool float_qparams = is_floating_point(zero_points.dtype());
  EMBER_CHECK(float_qparams || is_integral(zero_points.dtype(), false), Error, "[", op,
              "] expected integer (or floating, for float qparams) zero_points, but got ember.",
              dtype_name(zero_points.dtype()));
  const int bits = sub_byte_bits(dtype);
  EMBER_CHECK(!bits || float_qparams, NotImplementedError, "[", op, "] ember.", dtype_name(dtype),
              " is quantized per channel only with floating zero points (per_channel_affine_float_qparams), "
              "as in PyTorch, but got ember.",
              dtype_name(zero_points.dtype()), " zero points");
  auto quantizer = std::make_shared<Quantizer>();
  quantizer->qscheme = float_qparams ? QScheme::PerChannelAffineFloatQParams : QScheme::PerChannelAffine;
  quantizer->axis = a;
  // PyTorch keeps float64 scales and int64 zero points, or float32 both for float qparams.
  quantizer->scales = to_dtype(scales, float_qparams ? DType::Float32 : DType::Float64, true).contiguous();
  quantizer->zero_points =
      to_dtype(zero_points, float_qparams ? DType::Float32 : DType::Int64, true).contiguous();
  Tensor out;
  visit_quantized(dtype, op, [&](auto u) {
    using U = decltype(u);
    const Tensor scale32 = to_dtype(quantizer->scales, DType::Float32, true);
    const float* s = scale32.data<float>();
    for (int64_t c = 0; c < channels; ++c) check_scale(op, s[c]);
    const Tensor zp32 = to_dtype(quantizer->zero_points, DType::Float32, true);
    const float* z = zp32.data<float>();
    if (!float_qparams) {
      const int64_t* zi = quantizer->zero_points.data<int64_t>();
      for (int64_t c = 0; c < channels; ++c) check_zero_point<U>(op, zi[c]);
    }
    out = empty_quantized(self.sizes(), dtype, quantizer);
    const Tensor in = self.contiguous();
    const float* x = in.data<float>();
    // sub-byte codes go through a byte per code, then pack
    Tensor codes = bits ? empty(self.sizes(), DType::UInt8, Device()) : out;
    U* q = static_cast<U*>(codes.data_ptr());
    const U qmax = bits ? static_cast<U>((1 << bits) - 1) : std::numeric_limits<U>::max();
    const ChannelWalk channel(self.sizes(), a);
    parallel_for(0, in.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t c = channel(i);
        const float inv_scale = 1.0f / s[c];
        q[i] = float_qparams ? std::min(clamp_rounded<U>(x[i] * inv_scale + z[c]), qmax)
                             : clamp_rounded<U>(z[c] + x[i] * inv_scale);
      }
    });
    if (bits) pack_codes(codes.data<uint8_t>(), in.numel(), bits, static_cast<uint8_t*>(out.data_ptr()));
  });
  return out;
}

Tensor quantize_per_tensor_dynamic(const Tensor& self, DType dtype, bool reduce_range) {
  const char* op = "quantize_per_tensor_dynamic";
  check_float_input(op, self);
  EMBER_CHECK(dtype == DType::QInt8 || dtype == DType::QUInt8, Error, "[", op,
              "] expected ember.qint8 or ember.quint8, but got ember.", dtype_name(dtype));
  EMBER_CHECK(self.numel() > 0, Error, "[", op, "] expected a non-empty tensor: its range picks the scale");
  const QParams p = dtype == DType::QInt8 ? range_qparams(self, -128, 127, reduce_range)
                                          : range_qparams(self, 0, 255, reduce_range);
  return quantize_per_tensor(self, p.scale, p.zero_point, dtype);
}

QParams range_qparams(const Tensor& x, int64_t qmin, int64_t qmax, bool reduce_range) {
  float lo = 0.0f, hi = 0.0f;
  if (x.numel() > 0) {
    lo = static_cast<float>(to_dtype(amin(x, {}, false), DType::Float64, false).data<double>()[0]);
    hi = static_cast<float>(to_dtype(amax(x, {}, false), DType::Float64, false).data<double>()[0]);
  }
  return choose_qparams(lo, hi, qmin, qmax, reduce_range);
}

Tensor dequantize(const Tensor& self) {
  if (!is_quantized(self.dtype())) {  // PyTorch's dequantize of a float tensor: a float32 copy
    EMBER_CHECK(is_floating_point(self.dtype()), NotImplementedError,
                "[dequantize] expected a quantized or floating tensor, but got ember.",
                dtype_name(self.dtype()));
    return to_dtype(self, DType::Float32, true);
  }
  const Quantizer& quantizer = quantizer_of(self, "dequantize");
  const Tensor in = contiguous_codes(self);
  Tensor out = empty(self.sizes(), DType::Float32, Device());
  float* y = out.data<float>();
  visit_quantized(self.dtype(), "dequantize", [&](auto u) {
    using U = decltype(u);
    const U* q = static_cast<const U*>(in.data_ptr());
    if (!quantizer.per_channel()) {
      const float scale = static_cast<float>(quantizer.scale);
      const float zp = static_cast<float>(quantizer.zero_point);
      parallel_for(0, in.numel(), kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) y[i] = (static_cast<float>(q[i]) - zp) * scale;
      });
      return;
    }
    const ChannelWalk channel(self.sizes(), quantizer.axis);
    if (quantizer.qscheme == QScheme::PerChannelAffineFloatQParams) {
      const float* s = quantizer.scales.data<float>();
      const float* z = quantizer.zero_points.data<float>();
      parallel_for(0, in.numel(), kGrain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const int64_t c = channel(i);
          y[i] = (static_cast<float>(q[i]) - z[c]) * s[c];
        }
      });
      return;
    }
    const double* s = quantizer.scales.data<double>();
    const int64_t* z = quantizer.zero_points.data<int64_t>();
    parallel_for(0, in.numel(), kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        const int64_t c = channel(i);
        y[i] = static_cast<float>((static_cast<double>(q[i]) - static_cast<double>(z[c])) * s[c]);
      }
    });
  });
  return out;
}

Tensor int_repr(const Tensor& self) {
  quantizer_of(self, "int_repr");
  const Tensor in = self.contiguous();
  // a sub-byte tensor's integers are its packed bytes, 1-D (as PyTorch's int_repr gives them)
  Tensor out = sub_byte_bits(self.dtype())
                   ? empty({self.nbytes()}, DType::UInt8, Device())
                   : empty(self.sizes(), quantized_underlying(self.dtype()), Device());
  if (out.nbytes() > 0) std::memcpy(out.data_ptr(), in.data_ptr(), out.nbytes());
  return out;
}

namespace {
// The quantized dtype of a tensor of integers: `dtype` when given (its underlying integers must be
// d's), else the one whose integers d holds.
DType quantized_of(const char* op, DType d, std::optional<DType> dtype) {
  if (dtype.has_value()) {
    EMBER_CHECK(is_quantized(*dtype) && quantized_underlying(*dtype) == d, Error, "[", op,
                "] expected ember.", dtype_name(is_quantized(*dtype) ? quantized_underlying(*dtype) : d),
                " integers for a quantized dtype ", dtype_name(*dtype), ", but got ember.", dtype_name(d));
    return *dtype;
  }
  switch (d) {
    case DType::UInt8: return DType::QUInt8;
    case DType::Int8: return DType::QInt8;
    case DType::Int32: return DType::QInt32;
    default:
      throw Error(std::string("[") + op +
                  "] expected a uint8, int8 or int32 tensor of quantized values, but got ember." +
                  dtype_name(d));
  }
}

// The integers of `self` as a tensor of `dtype` read through `quantizer` (a sub-byte dtype's
// codes, one per byte, checked to fit and packed).
Tensor with_quantizer(const char* op, const Tensor& self, DType dtype,
                      std::shared_ptr<const Quantizer> quantizer) {
  const Tensor in = self.contiguous();
  Tensor out = empty_quantized(self.sizes(), dtype, std::move(quantizer));
  if (const int bits = sub_byte_bits(dtype)) {
    const uint8_t* codes = in.data<uint8_t>();
    for (int64_t i = 0; i < in.numel(); ++i)
      EMBER_CHECK(codes[i] < (1 << bits), Error, "[", op, "] ember.", dtype_name(dtype), " holds codes 0 to ",
                  (1 << bits) - 1, ", but element ", i, " is ", int(codes[i]));
    pack_codes(codes, in.numel(), bits, static_cast<uint8_t*>(out.data_ptr()));
    return out;
  }
  if (out.nbytes() > 0) std::memcpy(out.data_ptr(), in.data_ptr(), out.nbytes());
  return out;
}
}  // namespace

Tensor _make_per_tensor_quantized_tensor(const Tensor& self, double scale, int64_t zero_point,
                                         std::optional<DType> dtype) {
  const char* op = "_make_per_tensor_quantized_tensor";
  const DType qdtype = quantized_of(op, self.dtype(), dtype);
  return with_quantizer(op, self, qdtype, checked_per_tensor(op, scale, zero_point, qdtype));
}

Tensor _make_per_channel_quantized_tensor(const Tensor& self, const Tensor& scale, const Tensor& zero_point,
                                          int64_t axis, std::optional<DType> qdtype) {
  const char* op = "_make_per_channel_quantized_tensor";
  const DType dtype = quantized_of(op, self.dtype(), qdtype);
  const int64_t a = channel_axis(op, self, axis);
  EMBER_CHECK(scale.dim() == 1 && zero_point.dim() == 1 && scale.numel() == self.size(a) &&
                  zero_point.numel() == self.size(a),
              Error, "[", op, "] expected one scale and one zero point per index of dim ", a, " (",
              self.size(a), "), but got ", scale.numel(), " and ", zero_point.numel());
  // floating zero points: PyTorch's per_channel_affine_float_qparams (embedding tables)
  const bool float_qparams = is_floating_point(zero_point.dtype());
  EMBER_CHECK(!sub_byte_bits(dtype) || float_qparams, NotImplementedError, "[", op, "] ember.",
              dtype_name(dtype),
              " is quantized per channel only with floating zero points (per_channel_affine_float_qparams)");
  EMBER_CHECK(is_floating_point(scale.dtype()) && (float_qparams || is_integral(zero_point.dtype(), false)),
              Error, "[", op,
              "] expected floating scales and integer (or floating) zero points, but got ember.",
              dtype_name(scale.dtype()), " and ember.", dtype_name(zero_point.dtype()));
  auto quantizer = std::make_shared<Quantizer>();
  quantizer->qscheme = float_qparams ? QScheme::PerChannelAffineFloatQParams : QScheme::PerChannelAffine;
  quantizer->axis = a;
  quantizer->scales = to_dtype(scale, float_qparams ? DType::Float32 : DType::Float64, true).contiguous();
  quantizer->zero_points =
      to_dtype(zero_point, float_qparams ? DType::Float32 : DType::Int64, true).contiguous();
  const Tensor scales = to_dtype(quantizer->scales, DType::Float64, true);
  const Tensor points = to_dtype(quantizer->zero_points, DType::Float64, true);
  const double* s = scales.data<double>();
  const double* z = points.data<double>();
  visit_quantized(dtype, op, [&](auto u) {
    for (int64_t c = 0; c < scales.numel(); ++c) {
      check_scale(op, s[c]);
      EMBER_CHECK(std::isfinite(z[c]), Error, "[", op, "] expected finite zero points, but got ", z[c]);
      if (!float_qparams) check_zero_point<decltype(u)>(op, static_cast<int64_t>(z[c]));
    }
  });
  return with_quantizer(op, self, dtype, std::move(quantizer));
}

}  // namespace ember
