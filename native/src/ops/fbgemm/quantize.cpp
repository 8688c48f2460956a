// FBGEMM's row-wise quantized formats (ember.ops.fbgemm.*), byte for byte as fbgemm_gpu writes
// them, so tables quantized by FBGEMM load unchanged:
//
//   Fused8BitRowwise:  [D uint8 codes][fp32 scale][fp32 bias]      x = q * scale + bias
//   FusedNBitRowwise:  [ceil(D / (8/b)) bytes][fp16 scale][fp16 bias], element i at bit
//                      (i mod 8/b) * b of byte i / (8/b)
//   HFP8:              one byte per element, ebits exponent bits, 7 - ebits mantissa bits
//
// Rounding follows FBGEMM's: codes are lrintf (round half to even) of (x - min) * inverse scale;
// the N-bit formats round min and scale to fp16 before quantizing; dequantizing is one fused
// multiply-add, fma(q, scale, bias). These run once per table, so plain loops, split over rows.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

#include "ember/error.h"
#include "ember/fbgemm_ops.h"
#include "ember/parallel.h"
#include "ember/scalar_types.h"

namespace ember {

namespace {

float bits_to_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}
uint32_t float_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}
float round_to_half(float x) {
  return static_cast<float>(Half(x));
}

void check_cpu(const char* op, const Tensor& t) {
  EMBER_CHECK(t.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              t.device().str());
}

// Input rows of floats (float32, or float16/bfloat16 when `half_ok`), read as float.
struct FloatRows {
  Tensor data;  // contiguous
  int64_t rows = 0, cols = 0;
  float at(int64_t r, int64_t c) const {
    const int64_t i = r * cols + c;
    switch (data.dtype()) {
      case DType::Float16: return static_cast<float>(data.data<Half>()[i]);
      case DType::BFloat16: return static_cast<float>(data.data<BFloat16>()[i]);
      default: return data.data<float>()[i];
    }
  }
};

FloatRows float_rows(const char* op, const Tensor& input, bool half_ok) {
  check_cpu(op, input);
  const DType dt = input.dtype();
  if (half_ok) {
    EMBER_CHECK(dt == DType::Float32 || dt == DType::Float16 || dt == DType::BFloat16, TypeError, "[", op,
                "] expected input of dtype float32, float16 or bfloat16, but got ", dtype_name(dt));
  } else {
    EMBER_CHECK(dt == DType::Float32, TypeError, "[", op, "] expected input of dtype float32, but got ",
                dtype_name(dt));
  }
  EMBER_CHECK(input.dim() >= 1, ValueError, "[", op,
              "] expected an input of at least 1 dimension, but got a 0-D tensor");
  FloatRows r;
  r.data = input.contiguous();
  r.cols = input.size(input.dim() - 1);
  r.rows = 1;
  for (int64_t d = 0; d + 1 < input.dim(); ++d) r.rows *= input.size(d);
  return r;
}

Tensor bytes_input(const char* op, const Tensor& input, int64_t min_cols, const char* what) {
  check_cpu(op, input);
  EMBER_CHECK(input.dtype() == DType::UInt8, TypeError, "[", op, "] expected input of dtype uint8, but got ",
              dtype_name(input.dtype()));
  EMBER_CHECK(input.dim() >= 1, ValueError, "[", op,
              "] expected an input of at least 1 dimension, but got a 0-D tensor");
  const int64_t cols = input.size(input.dim() - 1);
  EMBER_CHECK(cols >= min_cols, ValueError, "[", op, "] expected rows of at least ", min_cols, " bytes (",
              what, "), but got ", cols);
  return input.contiguous();
}

IntList with_last(const Tensor& t, int64_t last) {
  IntList s = t.sizes();
  s.back() = last;
  return s;
}

int64_t rows_of(const Tensor& t) {
  int64_t r = 1;
  for (int64_t d = 0; d + 1 < t.dim(); ++d) r *= t.size(d);
  return r;
}

// Writes `v` as float32, float16 or bfloat16.
struct FloatOut {
  DType dt;
  void* p;
  void set(int64_t i, float v) const {
    switch (dt) {
      case DType::Float16: static_cast<Half*>(p)[i] = Half(v); break;
      case DType::BFloat16:  // FBGEMM's rounding: half a bf16 ulp added, then truncated (ties away from zero)
        if (std::isnan(v)) {
          static_cast<BFloat16*>(p)[i] = BFloat16(v);
        } else {
          static_cast<BFloat16*>(p)[i].bits = static_cast<uint16_t>((float_to_bits(v) + 0x8000u) >> 16);
        }
        break;
      default: static_cast<float*>(p)[i] = v;
    }
  }
};

DType sparse_output_dtype(const char* op, int64_t code) {
  // SparseType's int codes: FP32 0, FP16 1, BF16 5
  if (code == 0) return DType::Float32;
  if (code == 1) return DType::Float16;
  if (code == 5) return DType::BFloat16;
  throw ValueError(std::string("[") + op +
                   "] expected output_dtype 0 (FP32), 1 (FP16) or 5 (BF16), but got " + std::to_string(code));
}

int64_t grain_for(int64_t cols) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(cols, 1));
}

// ---- 8-bit ----

Tensor to_fused8bit(const char* op, const Tensor& input, bool half_ok) {
  const FloatRows in = float_rows(op, input, half_ok);
  const int64_t cols = in.cols, out_cols = cols + 8;
  Tensor out = empty(with_last(input, out_cols), DType::UInt8);
  uint8_t* o = out.data<uint8_t>();
  parallel_for(0, in.rows, grain_for(cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      uint8_t* row = o + r * out_cols;
      float mn = 0.0f, mx = 0.0f;
      if (cols > 0) {
        mn = mx = in.at(r, 0);
        for (int64_t c = 1; c < cols; ++c) {
          const float x = in.at(r, c);
          mn = std::min(mn, x);
          mx = std::max(mx, x);
        }
      }
      const float range = mx - mn;
      const float sb[2] = {range / 255.0f, mn};
      const float inverse_scale = 255.0f / (range + 1e-8f);
      for (int64_t c = 0; c < cols; ++c)
        row[c] = static_cast<uint8_t>(std::lrintf((in.at(r, c) - mn) * inverse_scale));
      std::memcpy(row + cols, sb, sizeof(sb));
    }
  });
  return out;
}

Tensor from_fused8bit(const char* op, const Tensor& input, DType out_dt, bool scale_bias_last,
                      bool float_qparams) {
  const int64_t sb_bytes = float_qparams ? 8 : 4;
  const Tensor in =
      bytes_input(op, input, sb_bytes, float_qparams ? "fp32 scale and bias" : "fp16 scale and bias");
  const int64_t cols = in.size(in.dim() - 1), out_cols = cols - sb_bytes, rows = rows_of(in);
  Tensor out = empty(with_last(in, out_cols), out_dt);
  const uint8_t* q = in.data<uint8_t>();
  const FloatOut o{out_dt, out.data_ptr()};
  parallel_for(0, rows, grain_for(cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* row = q + r * cols;
      const uint8_t* qp = scale_bias_last ? row + out_cols : row;
      const uint8_t* data = scale_bias_last ? row : row + sb_bytes;
      float scale, bias;
      if (float_qparams) {
        std::memcpy(&scale, qp, 4);
        std::memcpy(&bias, qp + 4, 4);
      } else {
        Half h[2];
        std::memcpy(h, qp, 4);
        scale = static_cast<float>(h[0]);
        bias = static_cast<float>(h[1]);
      }
      for (int64_t c = 0; c < out_cols; ++c)
        o.set(r * out_cols + c, std::fma(static_cast<float>(data[c]), scale, bias));
    }
  });
  return out;
}

// ---- N-bit ----

void check_bit_rate(const char* op, int64_t bit_rate) {
  EMBER_CHECK(bit_rate == 2 || bit_rate == 4 || bit_rate == 8, ValueError, "[", op,
              "] expected bit_rate 2, 4 or 8, but got ", bit_rate);
}

Tensor to_fused_nbit(const char* op, const Tensor& input, int64_t bit_rate, bool half_ok) {
  check_bit_rate(op, bit_rate);
  const FloatRows in = float_rows(op, input, half_ok);
  const int64_t per_byte = 8 / bit_rate, cols = in.cols;
  const int64_t packed = (cols + per_byte - 1) / per_byte, out_cols = packed + 4;
  const int qmax = (1 << bit_rate) - 1;
  Tensor out = empty(with_last(input, out_cols), DType::UInt8);
  uint8_t* o = out.data<uint8_t>();
  parallel_for(0, in.rows, grain_for(cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      uint8_t* row = o + r * out_cols;
      float mn = 0.0f, mx = 0.0f;
      if (cols > 0) {
        mn = mx = in.at(r, 0);
        for (int64_t c = 1; c < cols; ++c) {
          const float x = in.at(r, c);
          mn = std::min(mn, x);
          mx = std::max(mx, x);
        }
      }
      mn = round_to_half(mn);  // the stored bias, so codes are relative to what dequantizing adds
      const float range = mx - mn;
      float scale = round_to_half(range == 0.0f ? 1.0f : range / static_cast<float>(qmax));
      if (scale == 0.0f) scale = 1.0f;
      float inverse_scale = 1.0f / scale;
      if (std::isinf(inverse_scale)) {
        scale = 1.0f;
        inverse_scale = 1.0f;
      }
      std::memset(row, 0, static_cast<size_t>(packed));
      for (int64_t c = 0; c < cols; ++c) {
        const long code = std::lrintf((in.at(r, c) - mn) * inverse_scale);
        const int q = static_cast<int>(std::max<long>(0, std::min<long>(code, qmax)));
        row[c / per_byte] |= static_cast<uint8_t>(q << ((c % per_byte) * bit_rate));
      }
      const Half sb[2] = {Half(scale), Half(mn)};
      std::memcpy(row + packed, sb, sizeof(sb));
    }
  });
  return out;
}

Tensor from_fused_nbit(const char* op, const Tensor& input, int64_t bit_rate, DType out_dt,
                       bool scale_bias_last) {
  check_bit_rate(op, bit_rate);
  const Tensor in = bytes_input(op, input, 4, "fp16 scale and bias");
  const int64_t per_byte = 8 / bit_rate, cols = in.size(in.dim() - 1), packed = cols - 4;
  const int64_t out_cols = packed * per_byte, rows = rows_of(in);
  const int mask = (1 << bit_rate) - 1;
  Tensor out = empty(with_last(in, out_cols), out_dt);
  const uint8_t* q = in.data<uint8_t>();
  const FloatOut o{out_dt, out.data_ptr()};
  parallel_for(0, rows, grain_for(cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* row = q + r * cols;
      const uint8_t* qp = scale_bias_last ? row + packed : row;
      const uint8_t* data = scale_bias_last ? row : row + 4;
      Half h[2];
      std::memcpy(h, qp, 4);
      const float scale = static_cast<float>(h[0]), bias = static_cast<float>(h[1]);
      for (int64_t c = 0; c < out_cols; ++c) {
        const int v = (data[c / per_byte] >> ((c % per_byte) * bit_rate)) & mask;
        o.set(r * out_cols + c, std::fma(static_cast<float>(v), scale, bias));
      }
    }
  });
  return out;
}

// ---- HFP8 ----

void check_hfp8(const char* op, int64_t ebits, int64_t exponent_bias) {
  EMBER_CHECK(ebits >= 1 && ebits <= 7, ValueError, "[", op, "] expected ebits in [1, 7], but got ", ebits);
  EMBER_CHECK(exponent_bias >= 0 && exponent_bias <= 127, ValueError, "[", op,
              "] expected exponent_bias in [0, 127], but got ", exponent_bias);
}

// Rounds to nearest even by adding and subtracting a "bouncer" whose last mantissa bit is the
// HFP8 value's last bit; in the subnormal range the bouncer's low byte is the code itself.
uint8_t float_to_hfp8(float x, int ebits, int bias, float max_pos) {
  const int mbits = 7 - ebits;
  const uint32_t sign = float_to_bits(x) & 0x80000000u;
  float v = std::fmin(bits_to_float(float_to_bits(x) & 0x7FFFFFFFu), max_pos);
  const float smallest_normal = bits_to_float(static_cast<uint32_t>(127 - bias + 1) << 23);
  uint32_t u;
  if (v >= smallest_normal) {
    const float bouncer =
        bits_to_float((float_to_bits(v) & 0xFF800000u) + (static_cast<uint32_t>(23 - mbits) << 23));
    v = (bouncer + v) - bouncer;
    u = (float_to_bits(v) - (static_cast<uint32_t>(127 - bias) << 23)) << (8 - ebits);
    u = (u | sign) >> 24;
  } else {
    const float bouncer = bits_to_float(static_cast<uint32_t>(127 + 23 + 1 - bias - mbits) << 23);
    u = float_to_bits(bouncer + v) | (sign >> 24);
  }
  return static_cast<uint8_t>(u);
}

float hfp8_to_float_value(uint8_t code, int ebits, int bias) {
  const uint32_t sign = static_cast<uint32_t>(code & 0x80) << 24;
  const float magnitude = bits_to_float(static_cast<uint32_t>(code & 0x7F) << (24 - (8 - ebits)));
  const float multiplier = bits_to_float(static_cast<uint32_t>(127 + (127 - bias)) << 23);
  return bits_to_float(float_to_bits(magnitude * multiplier) | sign);
}

}  // namespace

Tensor FloatToFused8BitRowwiseQuantized(const Tensor& t) {
  return to_fused8bit("FloatToFused8BitRowwiseQuantized", t, false);
}

Tensor FloatOrHalfToFused8BitRowwiseQuantized(const Tensor& t) {
  return to_fused8bit("FloatOrHalfToFused8BitRowwiseQuantized", t, true);
}

Tensor Fused8BitRowwiseQuantizedToFloat(const Tensor& input) {
  return from_fused8bit("Fused8BitRowwiseQuantizedToFloat", input, DType::Float32, true, true);
}

Tensor Fused8BitRowwiseQuantizedToFloatOrHalf(const Tensor& input, int64_t output_dtype, bool scale_bias_last,
                                              bool quant_padding_float_type) {
  const char* op = "Fused8BitRowwiseQuantizedToFloatOrHalf";
  return from_fused8bit(op, input, sparse_output_dtype(op, output_dtype), scale_bias_last,
                        quant_padding_float_type);
}

Tensor FloatToFusedNBitRowwiseQuantizedSBHalf(const Tensor& input, int64_t bit_rate) {
  return to_fused_nbit("FloatToFusedNBitRowwiseQuantizedSBHalf", input, bit_rate, false);
}

Tensor FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf(const Tensor& input, int64_t bit_rate) {
  return to_fused_nbit("FloatOrHalfToFusedNBitRowwiseQuantizedSBHalf", input, bit_rate, true);
}

Tensor FusedNBitRowwiseQuantizedSBHalfToFloat(const Tensor& input, int64_t bit_rate) {
  return from_fused_nbit("FusedNBitRowwiseQuantizedSBHalfToFloat", input, bit_rate, DType::Float32, true);
}

Tensor FusedNBitRowwiseQuantizedSBHalfToFloatOrHalf(const Tensor& input, int64_t bit_rate,
                                                    int64_t output_dtype, bool scale_bias_last) {
  const char* op = "FusedNBitRowwiseQuantizedSBHalfToFloatOrHalf";
  return from_fused_nbit(op, input, bit_rate, sparse_output_dtype(op, output_dtype), scale_bias_last);
}

Tensor FloatToHFP8Quantized(const Tensor& input, int64_t ebits, int64_t exponent_bias, double max_pos) {
  const char* op = "FloatToHFP8Quantized";
  check_cpu(op, input);
  EMBER_CHECK(input.dtype() == DType::Float32, TypeError, "[", op,
              "] expected input of dtype float32, but got ", dtype_name(input.dtype()));
  check_hfp8(op, ebits, exponent_bias);
  EMBER_CHECK(max_pos > 0, ValueError, "[", op, "] expected a positive max_pos, but got ", max_pos);
  const Tensor in = input.contiguous();
  Tensor out = empty(in.sizes(), DType::UInt8);
  const float* x = in.data<float>();
  uint8_t* o = out.data<uint8_t>();
  const float mp = static_cast<float>(max_pos);
  parallel_for(0, in.numel(), 16384, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      o[i] = float_to_hfp8(x[i], static_cast<int>(ebits), static_cast<int>(exponent_bias), mp);
  });
  return out;
}

Tensor HFP8QuantizedToFloat(const Tensor& input, int64_t ebits, int64_t exponent_bias) {
  const char* op = "HFP8QuantizedToFloat";
  check_cpu(op, input);
  EMBER_CHECK(input.dtype() == DType::UInt8, TypeError, "[", op, "] expected input of dtype uint8, but got ",
              dtype_name(input.dtype()));
  check_hfp8(op, ebits, exponent_bias);
  const Tensor in = input.contiguous();
  Tensor out = empty(in.sizes(), DType::Float32);
  const uint8_t* q = in.data<uint8_t>();
  float* o = out.data<float>();
  parallel_for(0, in.numel(), 16384, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      o[i] = hfp8_to_float_value(q[i], static_cast<int>(ebits), static_cast<int>(exponent_bias));
  });
  return out;
}

}  // namespace ember
