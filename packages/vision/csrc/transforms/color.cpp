// Color kernels of transforms.v2.functional (Note [color kernel arithmetic]).
//
// Note [color kernel arithmetic]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The Python kernels compute uint8 images in float32 and float images in their own dtype, with the
// Python scalars (factors, luma weights) cast to that type; these kernels do the same arithmetic in
// the same order, so that results agree bit for bit wherever no reduction is involved. uint8 results
// are truncated after clamping (a cast), except grayscale and the sharpness blur, which round.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "transforms.h"

namespace embervision::transforms {
namespace {

template <class T>
using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
constexpr bool kInt = std::is_same_v<T, uint8_t>;

template <class T>
constexpr Acc<T> bound() {
  return kInt<T> ? Acc<T>(255) : Acc<T>(1);
}

// clamp(v, 0, bound) keeping NaN (as Tensor.clamp does), then the cast to T (truncation for uint8).
template <class T>
inline T clamp_cast(Acc<T> v) {
  v = v < Acc<T>(0) ? Acc<T>(0) : (v > bound<T>() ? bound<T>() : v);
  if constexpr (kInt<T>) {
    return static_cast<uint8_t>(v == v ? v : Acc<T>(0));
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
inline Acc<T> luma(Acc<T> r, Acc<T> g, Acc<T> b) {
  using A = Acc<T>;
  return r * A(0.2989) + g * A(0.587) + b * A(0.114);
}

// Runs fn(i) for i in [0, n), split over threads.
template <class F>
void elementwise(int64_t n, int threads, F&& fn) {
  parallel_for(n, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) fn(i);
  });
}

}  // namespace

template <class T>
void rgb_to_grayscale(const T* in, T* out, int64_t images, int64_t hw, int threads) {
  using A = Acc<T>;
  parallel_for(images, threads, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const T *r = in + n * 3 * hw, *g = r + hw, *bl = g + hw;
      T* o = out + n * hw;
      for (int64_t i = 0; i < hw; ++i) {
        const A v = luma<T>(A(r[i]), A(g[i]), A(bl[i]));
        if constexpr (kInt<T>)
          o[i] = static_cast<uint8_t>(std::min(A(255), std::nearbyint(v)));
        else
          o[i] = v;
      }
    }
  });
}

template <class T>
void adjust_brightness(const T* in, T* out, int64_t n, double factor, int threads) {
  using A = Acc<T>;
  const A f = A(factor);
  parallel_for(n, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) out[i] = clamp_cast<T>(A(in[i]) * f);
  });
}

namespace {
// out = clamp(x * ratio + other * (1 - ratio)) over one plane, other a plane or a constant.
template <class T, class Other>
inline void blend_plane(const T* x, Other other, T* out, int64_t hw, double ratio) {
  using A = Acc<T>;
  const A r = A(ratio), s = A(1.0 - ratio);
  for (int64_t i = 0; i < hw; ++i) out[i] = clamp_cast<T>(A(x[i]) * r + other(i) * s);
}
}  // namespace

template <class T>
void adjust_saturation(const T* in, T* out, int64_t images, int64_t hw, double factor, int threads) {
  using A = Acc<T>;
  parallel_for(images, threads, [&](int64_t b, int64_t e) {
    std::vector<A> gray(static_cast<size_t>(hw));
    for (int64_t n = b; n < e; ++n) {
      const T* x = in + n * 3 * hw;
      for (int64_t i = 0; i < hw; ++i) {
        const A v = luma<T>(A(x[i]), A(x[hw + i]), A(x[2 * hw + i]));
        gray[i] = kInt<T> ? std::floor(v) : v;
      }
      const A* gp = gray.data();
      for (int64_t c = 0; c < 3; ++c)
        blend_plane(x + c * hw, [gp](int64_t i) { return gp[i]; }, out + (n * 3 + c) * hw, hw, factor);
    }
  });
}

template <class T>
void adjust_contrast(const T* in, T* out, int64_t images, int64_t channels, int64_t hw, double factor,
                     int threads) {
  using A = Acc<T>;
  parallel_for(images, threads, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n) {
      const T* x = in + n * channels * hw;
      double sum = 0.0;  // the mean of the (floored, for uint8) grayscale image
      for (int64_t i = 0; i < hw; ++i) {
        if (channels == 3) {
          const A v = luma<T>(A(x[i]), A(x[hw + i]), A(x[2 * hw + i]));
          sum += kInt<T> ? std::floor(v) : v;
        } else {
          sum += A(x[i]);
        }
      }
      const A mean = A(sum / static_cast<double>(hw));
      for (int64_t c = 0; c < channels; ++c)
        blend_plane(x + c * hw, [mean](int64_t) { return mean; }, out + (n * channels + c) * hw, hw, factor);
    }
  });
}

template <class T>
void adjust_hue(const T* in, T* out, int64_t images, int64_t hw, double factor, int threads) {
  using A = Acc<T>;
  const A shift = A(factor), to_unit = A(1.0 / 255.0), to_byte = A(255.0 + 1.0 - 1e-3);
  elementwise(images * hw, threads, [&](int64_t k) {
    const int64_t n = k / hw, i = k % hw;
    const T* x = in + n * 3 * hw + i;
    T* o = out + n * 3 * hw + i;
    A r = A(x[0]), g = A(x[hw]), b = A(x[2 * hw]);
    if constexpr (kInt<T>) {
      r *= to_unit;
      g *= to_unit;
      b *= to_unit;
    }
    // RGB -> HSV
    const A maxc = std::max({r, g, b}), minc = std::min({r, g, b});
    const bool eqc = maxc == minc;
    const A crange = maxc - minc;
    const A s = crange / (eqc ? A(1) : maxc);
    const A div = eqc ? A(1) : crange;
    const A rc = (maxc - r) / div, gc = (maxc - g) / div, bc = (maxc - b) / div;
    A h = maxc == r ? bc - gc : (maxc == g ? A(2) + rc - bc : A(4) + gc - rc);
    h = std::fmod(h / A(6) + A(1), A(1));
    // shift, wrapped into [0, 1) as remainder(h + shift, 1)
    h = std::fmod(h + shift, A(1));
    if (h != 0 && h < 0) h += A(1);
    // HSV -> RGB
    const A v = maxc, h6 = h * A(6), fi = std::floor(h6), f = h6 - fi;
    A sector = std::fmod(fi, A(6));
    if (sector != 0 && sector < 0) sector += A(6);
    const auto unit = [](A a) { return a < A(0) ? A(0) : (a > A(1) ? A(1) : a); };
    const A p = unit(v * (A(1) - s)), q = unit(v * (A(1) - s * f)), t = unit(v * (A(1) - s * (A(1) - f)));
    std::array<A, 3> rgb{A(0), A(0), A(0)};
    switch (static_cast<int>(sector)) {
      case 0: rgb = {v, t, p}; break;
      case 1: rgb = {q, v, p}; break;
      case 2: rgb = {p, v, t}; break;
      case 3: rgb = {p, q, v}; break;
      case 4: rgb = {t, p, v}; break;
      case 5: rgb = {v, p, q}; break;
      default: break;  // NaN input: zeros, as the Python kernel's where() chain gives
    }
    for (int c = 0; c < 3; ++c) {
      if constexpr (kInt<T>)
        o[c * hw] = static_cast<uint8_t>(rgb[c] * to_byte);
      else
        o[c * hw] = static_cast<T>(rgb[c]);
    }
  });
}

template <class T>
void adjust_sharpness(const T* in, T* out, int64_t planes, int64_t h, int64_t w, double factor, int threads) {
  using A = Acc<T>;
  const A ratio = A(1.0 - factor);
  parallel_for(planes * h, threads, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const int64_t y = row % h;
      const T* x = in + row * w;
      T* o = out + row * w;
      if (y == 0 || y == h - 1) {  // border rows are kept
        std::copy(x, x + w, o);
        continue;
      }
      const T *up = x - w, *down = x + w;
      o[0] = x[0];
      o[w - 1] = x[w - 1];
      for (int64_t j = 1; j < w - 1; ++j) {
        A blurred;
        if constexpr (kInt<T>) {
          // PIL's SMOOTH (1s around a 5, over 13) rounded: exact in integers, S / 13 is never a half
          const int s = up[j - 1] + up[j] + up[j + 1] + x[j - 1] + 5 * x[j] + x[j + 1] + down[j - 1] +
                        down[j] + down[j + 1];
          blurred = A((2 * s + 13) / 26);
        } else {
          const A a = A(1.0 / 13.0), c = A(5.0 / 13.0);
          blurred = a * up[j - 1] + a * up[j] + a * up[j + 1] + a * x[j - 1] + c * x[j] + a * x[j + 1] +
                    a * down[j - 1] + a * down[j] + a * down[j + 1];
        }
        const A inner = A(x[j]);
        o[j] = clamp_cast<T>(inner + (blurred - inner) * ratio);
      }
    }
  });
}

template <class T>
void posterize(const T* in, T* out, int64_t n, int bits, int threads) {
  if constexpr (kInt<T>) {
    const uint8_t mask = bits >= 8 ? uint8_t{255} : static_cast<uint8_t>(((1 << bits) - 1) << (8 - bits));
    parallel_for(n, threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) out[i] = in[i] & mask;
    });
  } else {
    const double lv = std::ldexp(1.0, bits);
    const T levels = T(lv), top = T(lv - 1), inv = T(1.0 / lv);
    parallel_for(n, threads, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        T v = std::floor(in[i] * levels);
        v = v < T(0) ? T(0) : (v > top ? top : v);
        out[i] = v * inv;
      }
    });
  }
}

template <class T>
void invert(const T* in, T* out, int64_t n, int threads) {
  parallel_for(n, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      if constexpr (kInt<T>)
        out[i] = static_cast<uint8_t>(255 - in[i]);
      else
        out[i] = T(1) - in[i];
    }
  });
}

template <class T>
void solarize(const T* in, T* out, int64_t n, double threshold, int threads) {
  // a uint8 image compares against the threshold in float32 (type promotion), a float image in its dtype
  const Acc<T> th = Acc<T>(threshold);
  parallel_for(n, threads, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const T v = in[i];
      if constexpr (kInt<T>)
        out[i] = Acc<T>(v) >= th ? static_cast<uint8_t>(255 - v) : v;
      else
        out[i] = v >= th ? T(1) - v : v;
    }
  });
}

template <class T>
void autocontrast(const T* in, T* out, int64_t planes, int64_t hw, int threads) {
  using A = Acc<T>;
  parallel_for(planes, threads, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T* x = in + p * hw;
      T* o = out + p * hw;
      A lo = A(x[0]), hi = A(x[0]);
      bool nan = false;
      for (int64_t i = 0; i < hw; ++i) {
        const A v = A(x[i]);
        nan |= v != v;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
      }
      if (nan) lo = hi = std::numeric_limits<A>::quiet_NaN();  // amin/amax propagate NaN
      const bool eq = hi == lo;
      const A inv_scale = eq ? A(1) : (hi - lo) / bound<T>();
      const A shift = eq ? A(0) : lo;
      for (int64_t i = 0; i < hw; ++i) o[i] = clamp_cast<T>((A(x[i]) - shift) / inv_scale);
    }
  });
}

void equalize(const uint8_t* in, uint8_t* out, int64_t planes, int64_t hw, int threads) {
  parallel_for(planes, threads, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const uint8_t* x = in + p * hw;
      uint8_t* o = out + p * hw;
      std::array<int64_t, 256> hist{};
      for (int64_t i = 0; i < hw; ++i) ++hist[x[i]];
      int last = 255;  // the largest value present
      while (last > 0 && hist[last] == 0) --last;
      // PIL: step = (pixels not of the largest value) // 255; lut[k] = (cum[k-1] + step // 2) // step
      const int64_t step = (hw - hist[last]) / 255;
      if (step == 0) {
        std::copy(x, x + hw, o);
        continue;
      }
      std::array<uint8_t, 256> lut{};
      int64_t cum = 0;
      for (int k = 1; k < 256; ++k) {
        cum += hist[k - 1];
        lut[k] = static_cast<uint8_t>(std::min<int64_t>(255, (cum + step / 2) / step));
      }
      for (int64_t i = 0; i < hw; ++i) o[i] = lut[x[i]];
    }
  });
}

template <class T>
void normalize(const T* in, T* out, int64_t images, int64_t channels, int64_t hw, const double* mean,
               const double* std, int threads) {
  parallel_for(images * channels, threads, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p) {
      const T m = T(mean[p % channels]), s = T(std[p % channels]);
      const T* __restrict x = in + p * hw;
      T* __restrict o = out + p * hw;
      for (int64_t i = 0; i < hw; ++i) o[i] = (x[i] - m) / s;
    }
  });
}

#define EMBERVISION_COLOR_INSTANTIATE(T)                                                   \
  template void rgb_to_grayscale<T>(const T*, T*, int64_t, int64_t, int);                  \
  template void adjust_brightness<T>(const T*, T*, int64_t, double, int);                  \
  template void adjust_saturation<T>(const T*, T*, int64_t, int64_t, double, int);         \
  template void adjust_contrast<T>(const T*, T*, int64_t, int64_t, int64_t, double, int);  \
  template void adjust_hue<T>(const T*, T*, int64_t, int64_t, double, int);                \
  template void adjust_sharpness<T>(const T*, T*, int64_t, int64_t, int64_t, double, int); \
  template void posterize<T>(const T*, T*, int64_t, int, int);                             \
  template void solarize<T>(const T*, T*, int64_t, double, int);                           \
  template void invert<T>(const T*, T*, int64_t, int);                                     \
  template void autocontrast<T>(const T*, T*, int64_t, int64_t, int);
EMBERVISION_COLOR_INSTANTIATE(uint8_t)
EMBERVISION_COLOR_INSTANTIATE(float)
EMBERVISION_COLOR_INSTANTIATE(double)
#undef EMBERVISION_COLOR_INSTANTIATE
template void normalize<float>(const float*, float*, int64_t, int64_t, int64_t, const double*, const double*,
                               int);
template void normalize<double>(const double*, double*, int64_t, int64_t, int64_t, const double*,
                                const double*, int);

}  // namespace embervision::transforms
