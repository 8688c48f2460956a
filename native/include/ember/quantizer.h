#pragma once
// Note [quantized tensors]: PyTorch's affine-quantized tensors (torch.quint8, qint8, qint32).
// Such a tensor stores integers q of its dtype's underlying type; its Quantizer
// (TensorImpl::quantizer) says what real number each stands for:
//   per tensor:   x = (q - zero_point) * scale
//   per channel:  x = (q - zero_points[c]) * scales[c], c the index along `axis`
// Quantizing rounds half to even and clamps to the dtype's range, in float32 as PyTorch's x86
// kernels do (Note [quantize arithmetic] in src/ops/quantization/quantized.cpp).
//
// Only ops declared for them (declarations.py, quantized=True: the views, clone/contiguous,
// the quantize/dequantize ops and the quantized kernels) take quantized tensors; any other op
// raises NotImplementedError naming the op, as PyTorch's QuantizedCPU dispatch key does
// (check_unquantized below, called by every generated entry point). Quantized tensors never
// require grad (their dtype is not floating point).
//
// Views keep the quantizer. A per-channel tensor's channel axis must survive the view, so only
// views that keep the shape (an alias) are allowed for it; PyTorch allows more and then reads
// the scales along the wrong dimension.
//
// Note [sub-byte quantized tensors]: quint4x2 and quint2x4 (PyTorch's, for 4- and 2-bit
// embedding tables) pack 2 or 4 codes per byte in row-major order, element i in bits
// [(i % k) * b, (i % k + 1) * b) of byte i / k, as PyTorch packs them; the storage holds
// ceil(numel / k) bytes and element_size() is 1, as in PyTorch. An element's address is not a
// byte, so such a tensor is always contiguous at storage offset 0: its views only reshape or
// alias it (view, reshape, flatten, squeeze, ...); slicing, transposing or expanding raise
// NotImplementedError (PyTorch allows them and then reads the wrong codes). int_repr() gives the
// packed bytes, 1-D, as PyTorch's does.
#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "ember/error.h"
#include "ember/export.h"
#include "ember/tensor.h"

namespace ember {

// PyTorch's numbering (torch.per_tensor_affine ... per_channel_affine_float_qparams).
enum class QScheme : int64_t {
  PerTensorAffine = 0,
  PerChannelAffine = 1,
  PerTensorSymmetric = 2,
  PerChannelSymmetric = 3,
  PerChannelAffineFloatQParams = 4
};

struct EMBER_API Quantizer {
  QScheme qscheme = QScheme::PerTensorAffine;
  double scale = 1.0;      // per tensor
  int64_t zero_point = 0;  // per tensor
  // Per channel: float64 scales and int64 zero points (float32 both for float_qparams), one per
  // index along `axis`; contiguous and never written after the quantizer is made.
  Tensor scales;
  Tensor zero_points;
  int64_t axis = 0;
  bool per_channel() const { return qscheme != QScheme::PerTensorAffine; }
};

// The quantizer of a quantized tensor; Error naming `op` for any other tensor.
EMBER_API const Quantizer& quantizer_of(const Tensor& t, const char* op);
// Whether two tensors read their integers alike (both unquantized, or equal quantizers).
EMBER_API bool same_quantizer(const Tensor& a, const Tensor& b);
// A new contiguous quantized tensor (uninitialized integers).
EMBER_API Tensor empty_quantized(const IntList& sizes, DType dtype,
                                 std::shared_ptr<const Quantizer> quantizer);
// The quantizer a view `view` of `base` carries (Note [quantized tensors]): the base's; for a
// per-channel base, only when the view keeps its shape, and for a sub-byte one only when the
// view is contiguous at the base's offset; else NotImplementedError.
EMBER_API std::shared_ptr<const Quantizer> view_quantizer(const Tensor& base, const TensorImpl& view,
                                                          const char* op);

namespace quantized {

// Set once the first quantized tensor exists: until then, entry points pay one relaxed load.
EMBER_API extern std::atomic<bool> tensors_exist;

[[noreturn]] EMBER_API void raise_unsupported(const char* op);

inline bool is_quantized_arg(const Tensor& t) {
  return t.defined() && is_quantized(t.dtype());
}
inline bool is_quantized_arg(const std::optional<Tensor>& t) {
  return t.has_value() && is_quantized_arg(*t);
}
inline bool is_quantized_arg(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    if (is_quantized_arg(t)) return true;
  return false;
}
inline bool is_quantized_arg(const std::vector<std::optional<Tensor>>& ts) {
  for (const std::optional<Tensor>& t : ts)
    if (is_quantized_arg(t)) return true;
  return false;
}
// A factory's dtype argument: only the quantize ops make quantized tensors.
inline bool is_quantized_arg(DType d) {
  return is_quantized(d);
}
inline bool is_quantized_arg(const std::optional<DType>& d) {
  return d.has_value() && is_quantized(*d);
}
template <typename T>
bool is_quantized_arg(const T&) {
  return false;
}

// Whether an op with a quantized kernel (quantized="<kernel>") takes that kernel.
template <typename... Args>
bool any_quantized(const Args&... args) {
  return tensors_exist.load(std::memory_order_relaxed) && (is_quantized_arg(args) || ...);
}

// Called by the generated entry point of every op not declared for quantized tensors.
template <typename... Args>
void check_unquantized(const char* op, const Args&... args) {
  const bool tensors = tensors_exist.load(std::memory_order_relaxed);
  const bool any = ([&](const auto& a) {
    using A = std::decay_t<decltype(a)>;
    if constexpr (std::is_same_v<A, DType> || std::is_same_v<A, std::optional<DType>>) {
      return is_quantized_arg(a);
    } else {
      return tensors && is_quantized_arg(a);
    }
  }(args) || ...);
  if (any) raise_unsupported(op);
}

}  // namespace quantized
}  // namespace ember
