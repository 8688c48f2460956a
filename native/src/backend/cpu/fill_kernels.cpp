// CPU kernels that write without reading: fill, arange, linspace (interfaces in src/ops/kernels.h).
#include <cmath>
#include <type_traits>

#include "loops.h"
#include "ops/kernels.h"

namespace ember::EMBER_CPU_NS {
namespace {

template <typename T>
T from_scalar(const Scalar& s) {
  if constexpr (is_bits_v<T>) {  // fill_kernel lets only zero through
    return T{};
  } else if constexpr (is_complex_v<T>) {
    return T(s.to_complex());
  } else if constexpr (std::is_same_v<T, bool>) {
    return s.to_bool();
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(s.to_int());
  } else if constexpr (std::is_same_v<T, Float8_e4m3fn> || std::is_same_v<T, Float8_e5m2> ||
                       std::is_same_v<T, Float8_e4m3fnuz> || std::is_same_v<T, Float8_e5m2fnuz>) {
    return T(static_cast<float>(s.to_double()));  // float8 rounds from float, as its conversions do
  } else {
    return static_cast<T>(static_cast<acc_t<T>>(s.to_double()));
  }
}

// Writes f(linear index) into out, which is contiguous (creation ops make it so).
template <typename T, typename F>
void generate(const Tensor& out, F f) {
  T* p = out.data<T>();
  parallel_for(0, out.numel(), kGrain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) p[i] = f(i);
  });
}

void fill_kernel(const Tensor& out, const Scalar& value) {
  // no number has a bits pattern but zero (ember.zeros of a bits dtype)
  EMBER_CHECK(!is_bits(out.dtype()) || (!value.is_complex() && value.to_double() == 0.0), NotImplementedError,
              "[fill_] not implemented for ", dtype_name(out.dtype()), " with a value other than zero");
  visit<kAll | kFloat8 | kComplexHalf | kBits>(out.dtype(), "fill_", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T v = from_scalar<T>(value);
    StridedLoop<1>({out}).run([v](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; ++i) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
    });
  });
}

void arange_kernel(const Tensor& out, const Scalar& start, const Scalar& step) {
  visit<kReal>(out.dtype(), "arange", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      const int64_t s = start.to_int();
      const int64_t st = step.to_int();
      generate<T>(out, [s, st](int64_t i) { return static_cast<T>(wrap_add(s, wrap_mul(i, st))); });
    } else {
      const double s = start.to_double();
      const double st = step.to_double();
      generate<T>(out, [s, st](int64_t i) { return static_cast<T>(static_cast<acc_t<T>>(s + i * st)); });
    }
  });
}

// As PyTorch's kernel: the first half counts up from start, the second down from end, so both ends
// are exact. float32 and float64 take their step in their own precision and round each value
// start + step * i once (a fused multiply-add); float16 and bfloat16 round every operation to
// themselves; integers step in double. These give PyTorch's bits.
void linspace_kernel(const Tensor& out, double start, double end) {
  const int64_t n = out.numel();
  const int64_t half = n / 2;
  visit<kReal>(out.dtype(), "linspace", [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_integral_v<T>) {
      const double step = n > 1 ? (end - start) / static_cast<double>(n - 1) : 0.0;
      generate<T>(out, [=](int64_t i) {
        const double v = (i < half || n == 1) ? start + step * i : end - step * (n - 1 - i);
        return static_cast<T>(static_cast<acc_t<T>>(v));
      });
    } else if constexpr (is_reduced_v<T>) {  // PyTorch computes these in their own precision
      const auto round = [](double v) {
        return static_cast<double>(static_cast<float>(T(static_cast<float>(v))));
      };
      const double s = round(start), e = round(end);
      const double step = n > 1 ? round((e - s) / static_cast<double>(n - 1)) : 0.0;
      generate<T>(out, [=](int64_t i) {
        const double v = (i < half || n == 1)
                             ? s + round(step * static_cast<double>(round(static_cast<double>(i))))
                             : e - round(step * static_cast<double>(round(static_cast<double>(n - 1 - i))));
        return T(static_cast<float>(round(v)));
      });
    } else {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      const C s = static_cast<C>(start), e = static_cast<C>(end);
      const C step = n > 1 ? (e - s) / static_cast<C>(n - 1) : C(0);
      generate<T>(out, [=](int64_t i) {
        const C v = (i < half || n == 1) ? std::fma(step, static_cast<C>(i), s)
                                         : std::fma(-step, static_cast<C>(n - 1 - i), e);
        return static_cast<T>(v);
      });
    }
  });
}

EMBER_REGISTER_CPU_KERNEL(fill_stub, &fill_kernel);
EMBER_REGISTER_CPU_KERNEL(arange_stub, &arange_kernel);
EMBER_REGISTER_CPU_KERNEL(linspace_stub, &linspace_kernel);

}  // namespace
}  // namespace ember::EMBER_CPU_NS
