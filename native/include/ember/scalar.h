#pragma once
// Scalar: a Python number crossing into C++ (bool, int, float or complex), as c10::Scalar.
#include <complex>
#include <cstdint>

#include "ember/dtype.h"
#include "ember/export.h"

namespace ember {

class EMBER_API Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Float, Complex };

  Scalar() : Scalar(int64_t(0)) {}
  Scalar(bool v) : kind_(Kind::Bool), i_(v) {}                     // NOLINT
  Scalar(int v) : kind_(Kind::Int), i_(v) {}                       // NOLINT
  Scalar(int64_t v) : kind_(Kind::Int), i_(v) {}                   // NOLINT
  Scalar(double v) : kind_(Kind::Float), d_(v) {}                  // NOLINT
  Scalar(std::complex<double> v) : kind_(Kind::Complex), z_(v) {}  // NOLINT

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating_point() const { return kind_ == Kind::Float; }
  bool is_complex() const { return kind_ == Kind::Complex; }

  // The dtype a wrapped Python number of this kind gets (Note [type promotion]).
  DType natural_dtype() const;

  double to_double() const;
  int64_t to_int() const;
  bool to_bool() const;
  std::complex<double> to_complex() const;

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
  std::complex<double> z_{};
};

// Note [scalar range]: a Python number written into a tensor (fill_, full, *_like, masked_fill,
// index_fill, add's alpha) must fit the tensor's dtype, as PyTorch's checked_convert: an
// integral dtype takes integers in its range (an unsigned one also -max..-1, which wrap, as in
// PyTorch) and finite floats in its range; float16, float32 and complex64 take any value but a
// finite one beyond their largest; a complex number with an imaginary part fits only complex
// dtypes and bool. bool, bfloat16, float64, complex128 and the float8 dtypes take anything
// (bfloat16 and float8 saturate or round to inf/nan on conversion). A number mixed into
// arithmetic as a wrapped number (x + 1000) is not checked, as in PyTorch.
// Raises RuntimeError "[op] value cannot be converted to type uint8_t without overflow".
EMBER_API void check_scalar_fits(const Scalar& value, DType dtype, const char* op);

}  // namespace ember
