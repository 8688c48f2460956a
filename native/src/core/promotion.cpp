#include "ember/promotion.h"

#include <atomic>
#include <complex>
#include <optional>

#include "ember/error.h"

namespace ember {
namespace {

enum class Category { Bool = 0, Integral = 1, Floating = 2, Complex = 3 };
Category category(DType d) {
  if (d == DType::Bool) return Category::Bool;
  if (is_complex(d)) return Category::Complex;
  if (is_floating_point(d)) return Category::Floating;
  return Category::Integral;
}

DType promote_ints(DType a, DType b) {
  if (a == DType::UInt8 || b == DType::UInt8) {
    const DType other = a == DType::UInt8 ? b : a;
    if (other == DType::UInt8) return DType::UInt8;
    return other == DType::Int8 ? DType::Int16 : other;  // uint8 needs a wider signed type
  }
  return itemsize(a) >= itemsize(b) ? a : b;
}

DType promote_floats(DType a, DType b) {
  if ((a == DType::Float16 && b == DType::BFloat16) || (a == DType::BFloat16 && b == DType::Float16)) {
    return DType::Float32;
  }
  return itemsize(a) >= itemsize(b) ? a : b;
}

std::atomic<DType> g_default_dtype{DType::Float32};

}  // namespace

DType to_complex_dtype(DType d) {
  if (is_complex(d)) return d;
  if (d == DType::Float16) return DType::Complex32;
  return d == DType::Float64 ? DType::Complex128 : DType::Complex64;
}
DType to_real_dtype(DType d) {
  if (d == DType::Complex32) return DType::Float16;
  if (d == DType::Complex64) return DType::Float32;
  if (d == DType::Complex128) return DType::Float64;
  return d;
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  EMBER_CHECK(!is_float8(a) && !is_float8(b), TypeError,
              "[promote_types] Promotion for Float8 Types is not supported, attempted to promote ",
              dtype_name(a), " and ", dtype_name(b));
  EMBER_CHECK(!is_quantized(a) && !is_quantized(b), Error,
              "[promote_types] promotion with quantized dtypes is not defined (a quantized tensor is read "
              "through its dequantize()), attempted to promote ",
              dtype_name(a), " and ", dtype_name(b));
  EMBER_CHECK(!is_bits(a) && !is_bits(b), TypeError,
              "[promote_types] Promotion for bits types is not supported, ", "attempted to promote ",
              dtype_name(a), " and ", dtype_name(b));
  const Category ca = category(a);
  const Category cb = category(b);
  if (ca == Category::Bool) return b;
  if (cb == Category::Bool) return a;
  if (ca == Category::Complex || cb == Category::Complex) {
    // the complex dtype of the promoted real parts: complex64 with float64 -> complex128,
    // complex32 with float32 or bfloat16 -> complex64, complex32 with an integer -> complex32
    const DType ra = to_real_dtype(a);
    const DType rb = to_real_dtype(b);
    const bool fa = is_floating_point(ra), fb = is_floating_point(rb);
    return to_complex_dtype(fa && fb ? promote_floats(ra, rb) : (fa ? ra : rb));
  }
  if (ca == Category::Floating && cb == Category::Floating) return promote_floats(a, b);
  if (ca == Category::Floating) return a;
  if (cb == Category::Floating) return b;
  return promote_ints(a, b);
}

namespace {
DType combine_categories(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower.value_or(DType::Bool);
  if (!lower) return *higher;
  if (is_complex(*higher)) return *higher;
  if (is_complex(*lower)) {
    return is_floating_point(*higher) ? to_complex_dtype(*higher) : *lower;
  }
  if (is_floating_point(*higher)) return *higher;
  if (*higher == DType::Bool || is_floating_point(*lower)) return promote_types(*higher, *lower);
  return *higher;
}

void fold(std::optional<DType>& acc, DType d) {
  acc = acc ? promote_types(*acc, d) : d;
}
}  // namespace

namespace {
// PyTorch's three groups of operands, each folded separately (Note [type promotion]).
struct OperandCategories {
  std::optional<DType> dims, zero_dim, wrapped;

  void add(const Tensor& t) {
    if (!t.defined()) return;
    if (t.impl()->is_wrapped_number) {
      DType d = t.dtype();
      // A Python float is "the default dtype", a Python complex its complex counterpart.
      if (is_floating_point(d)) d = get_default_dtype();
      if (is_complex(d)) d = to_complex_dtype(get_default_dtype());
      fold(wrapped, d);
    } else if (t.dim() == 0) {
      fold(zero_dim, t.dtype());
    } else {
      fold(dims, t.dtype());
    }
  }
  DType result() const {
    return combine_categories(dims, std::optional<DType>(combine_categories(zero_dim, wrapped)));
  }
};
}  // namespace

DType result_type(const std::vector<Tensor>& operands) {
  OperandCategories c;
  for (const Tensor& t : operands) c.add(t);
  return c.result();
}

DType result_type(const Tensor& a, const Tensor& b) {
  OperandCategories c;
  c.add(a);
  c.add(b);
  return c.result();
}

bool can_cast(DType from, DType to) {
  return static_cast<int>(category(from)) <= static_cast<int>(category(to));
}

Tensor wrapped_number(const Scalar& value) {
  // Written directly (not through the op `full`): the core sits below the ops.
  const DType d = value.natural_dtype();
  Tensor t = empty({}, d, Device());
  switch (d) {
    case DType::Bool: *t.data<bool>() = value.to_bool(); break;
    case DType::Int64: *t.data<int64_t>() = value.to_int(); break;
    case DType::Complex128: *t.data<std::complex<double>>() = value.to_complex(); break;
    default: *t.data<double>() = value.to_double(); break;
  }
  t.impl()->is_wrapped_number = true;
  return t;
}

DType get_default_dtype() {
  return g_default_dtype.load();
}

void set_default_dtype(DType d) {
  EMBER_CHECK(d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16,
              TypeError,
              "[set_default_dtype] only floating-point types are supported as the default type, but got ",
              dtype_name(d));
  g_default_dtype.store(d);
}

}  // namespace ember
