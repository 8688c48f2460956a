// Complex-number ops: view_as_real / view_as_complex are views that change dtype (sharing the
// storage); real, imag, conj, complex, polar, angle, sgn compose on them.
#include <cmath>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"

namespace ember {
namespace {

Tensor view_with_dtype(const Tensor& base, IntList sizes, IntList strides, int64_t offset, DType dtype) {
  auto impl = std::make_shared<TensorImpl>();
  impl->storage = base.storage();
  impl->sizes = std::move(sizes);
  impl->strides = std::move(strides);
  impl->storage_offset = offset;
  impl->dtype = dtype;
  impl->version_counter = base.impl()->version_counter;
  return Tensor(std::move(impl));
}

}  // namespace

// (..., ) complex -> (..., 2) real, sharing storage: strides and offset count real elements.
Tensor view_as_real(const Tensor& self) {
  EMBER_CHECK(is_complex(self.dtype()), Error,
              "[view_as_real] view_as_real is only supported for complex tensors, "
              "but got ",
              dtype_name(self.dtype()));
  IntList sizes = self.sizes(), strides;
  for (int64_t s : self.strides()) strides.push_back(2 * s);
  sizes.push_back(2);
  strides.push_back(1);
  return view_with_dtype(self, sizes, strides, 2 * self.storage_offset(), to_real_dtype(self.dtype()));
}

Tensor view_as_complex(const Tensor& self) {
  EMBER_CHECK(
      self.dtype() == DType::Float32 || self.dtype() == DType::Float64 || self.dtype() == DType::Float16,
      Error,
      "[view_as_complex] view_as_complex is only supported for half, float and double tensors, but got a "
      "tensor "
      "of scalar type: ",
      dtype_name(self.dtype()));
  EMBER_CHECK(self.dim() > 0 && self.sizes().back() == 2, Error,
              "[view_as_complex] Tensor must have a last dimension of size 2");
  EMBER_CHECK(self.strides().back() == 1, Error,
              "[view_as_complex] Tensor must have a last dimension with stride 1");
  IntList sizes(self.sizes().begin(), self.sizes().end() - 1), strides;
  for (int64_t d = 0; d + 1 < self.dim(); ++d) {
    EMBER_CHECK(self.strides()[d] % 2 == 0, Error,
                "[view_as_complex] Tensor must have a stride divisible by 2 for all but last dimension");
    strides.push_back(self.strides()[d] / 2);
  }
  EMBER_CHECK(self.storage_offset() % 2 == 0, Error,
              "[view_as_complex] Tensor must have a storage_offset divisible by 2");
  return view_with_dtype(self, sizes, strides, self.storage_offset() / 2, to_complex_dtype(self.dtype()));
}

Tensor real(const Tensor& self) {
  return is_complex(self.dtype()) ? select(view_as_real(self), -1, 0) : self;
}

Tensor imag(const Tensor& self) {
  EMBER_CHECK(is_complex(self.dtype()), Error,
              "[imag] imag is not implemented for tensors with non-complex dtypes.");
  return select(view_as_real(self), -1, 1);
}

Tensor conj_physical(const Tensor& self) {
  if (!is_complex(self.dtype())) return self.clone();
  Tensor out = self.clone();
  Tensor im = imag(out);
  neg(im, im);  // negate the imaginary parts in place, through the view
  return out;
}

// PyTorch makes conj() a lazy view with a conjugate bit; Ember has no such bit yet, so conj()
// materializes the conjugate (same values; writes to it do not reach self).
Tensor conj(const Tensor& self) {
  return is_complex(self.dtype()) ? conj_physical(self) : self;
}

Tensor complex(const Tensor& real_part, const Tensor& imag_part) {
  const DType r = real_part.dtype(), i = imag_part.dtype();
  EMBER_CHECK((r == DType::Float32 || r == DType::Float64 || r == DType::Float16) && r == i, Error,
              "[complex] Expected both inputs to be Half, Float or Double tensors but got ", dtype_name(r),
              " and ", dtype_name(i));
  EMBER_CHECK(r != DType::Float16, NotImplementedError,
              "[complex] not implemented for float16 (no complex32 dtype)");
  const std::vector<Tensor> parts = broadcast_tensors({real_part, imag_part});
  return view_as_complex(stack(parts, -1));
}

Tensor polar(const Tensor& abs, const Tensor& angle) {
  return complex(mul(abs, cos(angle, std::nullopt), std::nullopt),
                 mul(abs, sin(angle, std::nullopt), std::nullopt));
}

Tensor angle(const Tensor& self) {
  if (is_complex(self.dtype())) return atan2(imag(self), real(self), std::nullopt);
  const Tensor x = is_floating_point(self.dtype()) ? self : to_dtype(self, get_default_dtype(), false);
  // Real inputs: pi for negative values, 0 otherwise, NaN kept.
  const Tensor result =
      where(lt(x, wrapped_number(0.0), std::nullopt), wrapped_number(M_PI), zeros_like(x, std::nullopt));
  return where(isnan(x), x, result);
}

Tensor sgn(const Tensor& self) {
  if (!is_complex(self.dtype())) return sign(self, std::nullopt);
  const Tensor magnitude = abs(self, std::nullopt);
  const Tensor is_zero = eq(magnitude, wrapped_number(0.0), std::nullopt);
  const Tensor safe = where(is_zero, ones_like(magnitude, std::nullopt), magnitude);
  return where(is_zero, zeros_like(self, std::nullopt), div(self, safe, std::nullopt, std::nullopt));
}

}  // namespace ember
