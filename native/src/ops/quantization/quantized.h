#pragma once
// Helpers the quantized kernels share (src/ops/quantization/quantized.cpp).
#include <cstdint>

namespace ember {

struct QParams {
  float scale;
  int64_t zero_point;
};
// FBGEMM's ChooseQuantizationParams: the scale and zero point that map [min, max] (widened to
// hold 0) onto [qmin, qmax], halved by reduce_range (Note [quantize arithmetic]).
QParams choose_qparams(float min, float max, int64_t qmin, int64_t qmax, bool reduce_range);

}  // namespace ember
