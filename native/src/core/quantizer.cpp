// Quantizers and the checks that keep quantized tensors to the ops declared for them
// (Note [quantized tensors] in ember/quantizer.h).
#include "ember/quantizer.h"

#include <cstring>
#include <string>

namespace ember {

const Quantizer& quantizer_of(const Tensor& t, const char* op) {
  EMBER_CHECK(t.defined() && is_quantized(t.dtype()) && t.impl()->quantizer, NotImplementedError, "[", op,
              "] expected a quantized tensor (quint8, qint8, qint32, quint4x2 or quint2x4), but got ",
              t.defined() ? dtype_name(t.dtype()) : "an undefined tensor");
  return *t.impl()->quantizer;
}

namespace {
bool same_values(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && a.dtype() == b.dtype() &&
         (a.nbytes() == 0 || std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0);
}
}  // namespace

bool same_quantizer(const Tensor& a, const Tensor& b) {
  const Quantizer* qa = a.impl()->quantizer.get();
  const Quantizer* qb = b.impl()->quantizer.get();
  if (qa == qb) return true;
  if (qa == nullptr || qb == nullptr || qa->qscheme != qb->qscheme) return false;
  if (!qa->per_channel()) return qa->scale == qb->scale && qa->zero_point == qb->zero_point;
  return qa->axis == qb->axis && same_values(qa->scales, qb->scales) &&
         same_values(qa->zero_points, qb->zero_points);
}

Tensor empty_quantized(const IntList& sizes, DType dtype, std::shared_ptr<const Quantizer> quantizer) {
  EMBER_CHECK(is_quantized(dtype) && quantizer, Error,
              "[empty_quantized] expected a quantized dtype and its quantizer");
  Tensor t = empty(sizes, dtype, Device());
  t.impl()->quantizer = std::move(quantizer);
  quantized::tensors_exist.store(true, std::memory_order_relaxed);
  return t;
}

std::shared_ptr<const Quantizer> view_quantizer(const Tensor& base, const TensorImpl& view, const char* op) {
  const auto& quantizer = base.impl()->quantizer;
  const IntList& sizes = view.sizes;
  if (elements_per_byte(base.dtype()) > 1) {  // Note [sub-byte quantized tensors]
    const IntList dense = contiguous_strides(sizes);
    bool contiguous =
        view.storage_offset == base.storage_offset() && checked_numel(sizes, op) == base.numel();
    for (size_t d = 0; contiguous && d < sizes.size(); ++d)
      contiguous = sizes[d] <= 1 || view.strides[d] == dense[d];
    EMBER_CHECK(contiguous, NotImplementedError, "[", op, "] a ", dtype_name(base.dtype()), " tensor packs ",
                elements_per_byte(base.dtype()),
                " codes per byte, so its views only reshape it (a contiguous view of all its elements); "
                "dequantize() it first");
  }
  EMBER_CHECK(!quantizer->per_channel() || sizes == base.sizes(), NotImplementedError, "[", op,
              "] a per-channel quantized tensor takes only views that keep its shape ",
              "(its scales run along dim ", quantizer->axis,
              "); dequantize() it first, or quantize per tensor");
  return quantizer;
}

namespace quantized {

std::atomic<bool> tensors_exist{false};

void raise_unsupported(const char* op) {
  throw NotImplementedError(std::string("[") + op +
                            "] not implemented for quantized tensors (PyTorch's QuantizedCPU backend): "
                            "dequantize() the input, or use the quantized op (ember.ao.nn.quantized)");
}

}  // namespace quantized
}  // namespace ember
