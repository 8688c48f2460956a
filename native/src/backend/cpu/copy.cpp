// Elementwise copy with dtype conversion between any two dtypes of the one list (Note [strided
// copy] for non-contiguous pairs).
#include <complex>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "ember/error.h"
#include "ember/parallel.h"
#include "ember/quantizer.h"
#include "ember/tensor.h"
#include "ops/kernels.h"

namespace ember {
namespace {

template <typename T>
struct is_complex_t : std::false_type {};
template <typename T>
struct is_complex_t<std::complex<T>> : std::true_type {};
template <>
struct is_complex_t<ComplexHalf> : std::true_type {};

template <typename T>
constexpr bool is_reduced_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16> ||
                                    std::is_same_v<T, Float8_e4m3fn> || std::is_same_v<T, Float8_e5m2> ||
                                    std::is_same_v<T, Float8_e4m3fnuz> || std::is_same_v<T, Float8_e5m2fnuz>;

// Reduced-precision floats compute as float.
template <typename T>
auto arith(T v) {
  if constexpr (is_reduced_float_v<T>) {
    return static_cast<float>(v);
  } else {
    return v;
  }
}

// Note [float to int conversion]: C++ leaves out-of-range float->int casts undefined. Ember
// converts through int64 (NaN, inf and out-of-range values become INT64_MIN, which is what x86
// produces) and then wraps to the narrower type, so the result is defined and sanitizer-clean.
template <typename To, typename F>
To float_to_int(F v) {
  const double d = static_cast<double>(v);
  int64_t i = std::numeric_limits<int64_t>::min();
  if (d > -9223372036854775808.0 && d < 9223372036854775808.0) i = static_cast<int64_t>(d);
  return static_cast<To>(static_cast<uint64_t>(i));
}

template <typename To, typename From>
To cast_value(From v) {
  if constexpr (is_complex_t<From>::value && !is_complex_t<To>::value) {
    return cast_value<To>(v.real());
  } else if constexpr (is_complex_t<To>::value) {
    using R = typename To::value_type;
    if constexpr (is_complex_t<From>::value) {
      return To(static_cast<R>(v.real()), static_cast<R>(v.imag()));
    } else {
      return To(static_cast<R>(arith(v)), R(0));
    }
  } else if constexpr (std::is_same_v<To, bool>) {
    return arith(v) != 0;
  } else if constexpr (is_reduced_float_v<To>) {
    return To(static_cast<float>(arith(v)));
  } else if constexpr (std::is_integral_v<To> && !std::is_integral_v<decltype(arith(v))>) {
    return float_to_int<To>(arith(v));
  } else {
    return static_cast<To>(arith(v));
  }
}

// Note [strided copy]: the dims of dst and src are coalesced together (size-1 dims dropped,
// neighbours merged where both stride chains allow), so most copies become one flat loop or rows
// of runs. A transposed pair (dst contiguous along one dim, src along another) is copied in
// square tiles so both sides stay in cache. Outer rows split over threads.
struct Layout {
  std::vector<int64_t> sizes, dst_strides, src_strides;  // innermost last
};

Layout coalesce_pair(const Tensor& dst, const Tensor& src) {
  Layout l;
  for (int64_t d = 0; d < dst.dim(); ++d) {
    const int64_t size = dst.sizes()[d];
    if (size == 1) continue;
    const int64_t ds = dst.strides()[d], ss = src.strides()[d];
    if (!l.sizes.empty() && l.dst_strides.back() == ds * size && l.src_strides.back() == ss * size) {
      l.sizes.back() *= size;
      l.dst_strides.back() = ds;
      l.src_strides.back() = ss;
    } else {
      l.sizes.push_back(size);
      l.dst_strides.push_back(ds);
      l.src_strides.push_back(ss);
    }
  }
  if (l.sizes.empty()) {
    l.sizes = {1};
    l.dst_strides = {1};
    l.src_strides = {1};
  }
  return l;
}

template <typename To, typename From>
void copy_strided(To* out, const From* in, const Layout& l) {
  const int64_t nd = static_cast<int64_t>(l.sizes.size());
  const int64_t n = l.sizes[nd - 1], ds = l.dst_strides[nd - 1], ss = l.src_strides[nd - 1];
  // a transpose: the last two dims swap which side is contiguous
  if (nd >= 2 && ds == 1 && l.src_strides[nd - 2] == 1 && ss != 1) {
    constexpr int64_t kTile = 32;
    const int64_t m = l.sizes[nd - 2], dd = l.dst_strides[nd - 2];
    int64_t outer = 1;
    for (int64_t d = 0; d < nd - 2; ++d) outer *= l.sizes[d];
    const int64_t tiles_m = (m + kTile - 1) / kTile;
    parallel_for(0, outer * tiles_m, std::max<int64_t>(1, 16384 / (kTile * n)), [&](int64_t lo, int64_t hi) {
      for (int64_t job = lo; job < hi; ++job) {
        int64_t rest = job / tiles_m, o_off = 0, i_off = 0;
        for (int64_t d = nd - 3; d >= 0; --d) {
          o_off += (rest % l.sizes[d]) * l.dst_strides[d];
          i_off += (rest % l.sizes[d]) * l.src_strides[d];
          rest /= l.sizes[d];
        }
        const int64_t r0 = (job % tiles_m) * kTile, r1 = std::min(m, r0 + kTile);
        for (int64_t c0 = 0; c0 < n; c0 += kTile) {
          const int64_t c1 = std::min(n, c0 + kTile);
          for (int64_t r = r0; r < r1; ++r)
            for (int64_t c = c0; c < c1; ++c)
              out[o_off + r * dd + c] = cast_value<To>(in[i_off + r + c * ss]);
        }
      }
    });
    return;
  }
  int64_t rows = 1;
  for (int64_t d = 0; d < nd - 1; ++d) rows *= l.sizes[d];
  parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(n, 1)), [&](int64_t lo, int64_t hi) {
    for (int64_t row = lo; row < hi; ++row) {
      int64_t rest = row, o_off = 0, i_off = 0;
      for (int64_t d = nd - 2; d >= 0; --d) {
        o_off += (rest % l.sizes[d]) * l.dst_strides[d];
        i_off += (rest % l.sizes[d]) * l.src_strides[d];
        rest /= l.sizes[d];
      }
      To* o = out + o_off;
      const From* x = in + i_off;
      if (ds == 1 && ss == 1) {
        for (int64_t i = 0; i < n; ++i) o[i] = cast_value<To>(x[i]);
      } else if (ds == 1 && ss == 0) {
        const To v = cast_value<To>(x[0]);
        for (int64_t i = 0; i < n; ++i) o[i] = v;
      } else {
        for (int64_t i = 0; i < n; ++i) o[i * ds] = cast_value<To>(x[i * ss]);
      }
    }
  });
}

template <typename To, typename From>
void copy_typed(const Tensor& dst, const Tensor& src) {
  To* out = dst.data<To>();
  const From* in = src.data<From>();
  if (dst.numel() == 0) return;
  if (dst.is_contiguous() && src.is_contiguous()) {  // a flat loop the compiler vectorizes
    const int64_t n = dst.numel();
    parallel_for(0, n, 65536, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) out[i] = cast_value<To>(in[i]);
    });
    return;
  }
  copy_strided(out, in, coalesce_pair(dst, src));
}

// A bits dtype holds no values, and a quantized one's values need its quantizer, so each
// converts to nothing but itself here (dequantize() and quantize_per_* convert them).
template <typename T>
constexpr bool kOpaque = is_bits_v<T> || is_quantized_v<T>;
template <typename To, typename From>
constexpr bool kConvertible = (!kOpaque<To> && !kOpaque<From>) || std::is_same_v<To, From>;

template <typename To>
void copy_to(const Tensor& dst, const Tensor& src) {
  switch (src.dtype()) {
#define EMBER_COPY_CASE(name, ctype, pyname, typestr)                              \
  case DType::name:                                                                \
    if constexpr (kConvertible<To, ctype>) return copy_typed<To, ctype>(dst, src); \
    break;
    EMBER_FORALL_DTYPES(EMBER_COPY_CASE)
#undef EMBER_COPY_CASE
  }
  throw NotImplementedError(std::string("[copy_] not implemented from ") + dtype_name(src.dtype()) + " to " +
                            dtype_name(dst.dtype()));
}

}  // namespace

void copy_same_shape(const Tensor& dst, const Tensor& src) {
  EMBER_CHECK(dst.sizes() == src.sizes(), ValueError, "[copy] expected tensors of the same shape, but got ",
              dst.dim(), "-d and ", src.dim(), "-d tensors of different sizes");
  EMBER_CHECK(dst.device().type == DeviceType::CPU && src.device().type == DeviceType::CPU,
              NotImplementedError, "[copy] not implemented for ", dst.device().str(), " <- ",
              src.device().str());
  EMBER_CHECK(dst.dtype() == src.dtype() || !(is_bits(dst.dtype()) || is_bits(src.dtype())),
              NotImplementedError, "[copy_] not implemented for ",
              dtype_name(is_bits(dst.dtype()) ? dst.dtype() : src.dtype()),
              ": a bits dtype is copied only to the same dtype (view it as an integer dtype to convert)");
  EMBER_CHECK(dst.dtype() == src.dtype() || !(is_quantized(dst.dtype()) || is_quantized(src.dtype())),
              NotImplementedError, "[copy_] not implemented from ", dtype_name(src.dtype()), " to ",
              dtype_name(dst.dtype()),
              ": a quantized tensor converts through dequantize() and quantize_per_tensor()");
  EMBER_CHECK(!is_quantized(dst.dtype()) || same_quantizer(dst, src), Error,
              "[copy_] a quantized tensor is copied only into one of the same quantization parameters");
  // Note [sub-byte quantized tensors]: packed codes have no per-element address to copy through
  EMBER_CHECK(elements_per_byte(dst.dtype()) == 1 || (dst.is_contiguous() && src.is_contiguous()),
              NotImplementedError, "[copy_] ember.", dtype_name(dst.dtype()),
              " packs several codes per byte, so it is copied only between contiguous tensors");
  dst.bump_version();
  if (dst.dtype() == src.dtype() && dst.is_contiguous() && src.is_contiguous()) {
    if (dst.nbytes() > 0) std::memmove(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    return;
  }
  switch (dst.dtype()) {
#define EMBER_COPY_DST_CASE(name, ctype, pyname, typestr) \
  case DType::name: return copy_to<ctype>(dst, src);
    EMBER_FORALL_DTYPES(EMBER_COPY_DST_CASE)
#undef EMBER_COPY_DST_CASE
  }
}

// One build serves every capability: the conversions, not the loop, dominate here.
const bool g_copy_registered = [] {
  copy_stub.cpu[static_cast<int>(CpuCapability::Default)] = &copy_same_shape;
  return true;
}();

}  // namespace ember
