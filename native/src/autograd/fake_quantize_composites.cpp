// fake_quantize_per_tensor_affine / fake_quantize_per_channel_affine: PyTorch's composites over the
// *_cachemask ops (src/ops/quantization/fake_quantize.cpp), whose mask carries the gradient. They
// call the ember::autograd:: entry points, so they belong to the autograd layer (Note [composite
// ops] in fbgemm_composites.cpp); their own wrappers pass through (NONDIFFERENTIABLE).
#include <tuple>

#include "ember/ops.h"

namespace ember {

Tensor fake_quantize_per_tensor_affine(const Tensor& self, double scale, int64_t zero_point,
                                       int64_t quant_min, int64_t quant_max) {
  return std::get<0>(
      autograd::fake_quantize_per_tensor_affine_cachemask(self, scale, zero_point, quant_min, quant_max));
}

Tensor fake_quantize_per_channel_affine(const Tensor& self, const Tensor& scale, const Tensor& zero_point,
                                        int64_t axis, int64_t quant_min, int64_t quant_max) {
  return std::get<0>(autograd::fake_quantize_per_channel_affine_cachemask(self, scale, zero_point, axis,
                                                                          quant_min, quant_max));
}

}  // namespace ember
