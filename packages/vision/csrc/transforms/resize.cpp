// Separable image resize (Note [separable resize]).
//
// Note [separable resize]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Every mode is a per-axis weight table: output index o reads `taps` consecutive inputs from
// start[o]. The tables follow the anchors' sampling rules (scale = in / out, align_corners=False):
//   nearest         src = floor(o * scale)                      one tap
//   nearest-exact   src = floor((o + 0.5) * scale)              one tap
//   bilinear        src = max((o + 0.5) * scale - 0.5, 0)        two taps, the upper one clamped
//   bicubic         src = (o + 0.5) * scale - 0.5                four taps (cubic convolution, A = -0.75),
//                                                               indices clamped into the image
//   antialias       PIL's filters (triangle, or cubic with A = -0.5) centred on (o + 0.5) * scale,
//                   support widened by the downscale factor, weights normalised to sum 1.
// Taps whose clamped indices coincide are folded into one weight, so the window is always contiguous.
// The image is filtered along one axis into a buffer and then along the other. The H pass adds whole
// rows (a contiguous axpy per tap); the W pass takes a dot product per output over a window padded
// to a multiple of four taps, kept as four partial sums: both are vectorized by the compiler.
#include <algorithm>
#include <cmath>
#include <limits>

#include "transforms.h"

namespace embervision::transforms {
namespace {

double triangle(double x) {
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Keys' cubic convolution kernel with parameter a (-0.5 for PIL's antialias filter, -0.75 otherwise).
double cubic(double x, double a) {
  x = std::abs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
  return 0.0;
}

// The raw (index, weight) taps of output o, indices already inside [0, in).
void raw_taps(int64_t in, int64_t o, double scale, Interp mode, bool antialias, std::vector<int64_t>& idx,
              std::vector<double>& w) {
  idx.clear();
  w.clear();
  const auto clamp = [in](int64_t i) { return std::min(std::max<int64_t>(i, 0), in - 1); };
  if (mode == Interp::kNearest || mode == Interp::kNearestExact) {
    // float arithmetic, as the anchors compute nearest indices in float
    const float fs = static_cast<float>(scale);
    const float fo = static_cast<float>(o);
    const float src = mode == Interp::kNearest ? fo * fs : (fo + 0.5f) * fs;
    idx.push_back(clamp(static_cast<int64_t>(std::floor(src))));
    w.push_back(1.0);
    return;
  }
  if (antialias) {
    const double support = (mode == Interp::kBilinear ? 1.0 : 2.0) * std::max(scale, 1.0);
    const double inv = 1.0 / std::max(scale, 1.0);
    const double center = scale * (static_cast<double>(o) + 0.5);
    const int64_t lo = std::max<int64_t>(static_cast<int64_t>(center - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(static_cast<int64_t>(center + support + 0.5), in);
    double total = 0.0;
    for (int64_t j = lo; j < hi; ++j) {
      const double x = (static_cast<double>(j) - center + 0.5) * inv;
      const double v = mode == Interp::kBilinear ? triangle(x) : cubic(x, -0.5);
      idx.push_back(j);
      w.push_back(v);
      total += v;
    }
    if (total != 0.0)
      for (double& v : w) v /= total;
    if (idx.empty()) {  // cannot happen for in >= 1, but keep the window non-empty
      idx.push_back(clamp(static_cast<int64_t>(center)));
      w.push_back(1.0);
    }
    return;
  }
  double src = (static_cast<double>(o) + 0.5) * scale - 0.5;
  if (mode == Interp::kBilinear) {
    if (src < 0) src = 0;
    const int64_t i0 = std::min<int64_t>(static_cast<int64_t>(src), in - 1);
    const double l1 = src - static_cast<double>(i0);
    idx.push_back(i0);
    w.push_back(1.0 - l1);
    idx.push_back(clamp(i0 + 1));
    w.push_back(l1);
    return;
  }
  const double f = std::floor(src);
  const int64_t i0 = static_cast<int64_t>(f);
  const double t = src - f;
  const double a = -0.75;
  const double ws[4] = {cubic(t + 1.0, a), cubic(t, a), cubic(1.0 - t, a), cubic(2.0 - t, a)};
  for (int k = 0; k < 4; ++k) {
    idx.push_back(clamp(i0 - 1 + k));
    w.push_back(ws[k]);
  }
}

template <class T>
struct AccOf {
  using type = float;
};
template <>
struct AccOf<double> {
  using type = double;
};

template <class T, class A>
inline T store(A v) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    v = std::nearbyint(v);      // half to even, as round() does
    if (!(v > A(0))) return 0;  // NaN cannot come from uint8 input, but stay defined
    return v >= A(255) ? uint8_t{255} : static_cast<uint8_t>(v);
  } else {
    return static_cast<T>(v);
  }
}

// A weight table in the accumulation type, each output's weights zero-padded to `taps` (a multiple
// of 4 for the W pass, so that its dot products run four lanes at a time).
template <class A>
struct Table {
  int64_t taps;
  std::vector<int64_t> start;
  std::vector<A> w;
  Table(const AxisWeights& a, int64_t pad_to)
      : taps((a.taps + pad_to - 1) / pad_to * pad_to), start(a.start) {
    w.assign(a.start.size() * static_cast<size_t>(taps), A(0));
    for (size_t o = 0; o < a.start.size(); ++o)
      for (int64_t k = 0; k < a.taps; ++k) w[o * taps + k] = static_cast<A>(a.weight[o * a.taps + k]);
  }
};

// One output of the W pass: four partial sums (one per lane of a 4-wide vector) added at the end.
// K, a multiple of 4, is a compile-time count for the common tap counts and 0 (read `taps`) otherwise.
template <int K, class A>
inline A dot4(const A* __restrict w, const A* __restrict s, int64_t taps) {
  const int64_t n = K ? K : taps;
  A p[4] = {A(0), A(0), A(0), A(0)};
  for (int64_t k = 0; k < n; k += 4)
    for (int l = 0; l < 4; ++l) p[l] += w[k + l] * s[k + l];
  return (p[0] + p[1]) + (p[2] + p[3]);
}

template <int K, class Tin, class Tout, class A>
void h_rows(const Tin* in, Tout* out, int64_t r0, int64_t r1, int64_t iw, int64_t ow, const Table<A>& t) {
  // The row is widened into a buffer with `taps` zeros past its end, so the padded taps of the last
  // windows read zeros (times zero weights) instead of running off the row.
  std::vector<A> row(static_cast<size_t>(iw + t.taps), A(0));
  for (int64_t r = r0; r < r1; ++r) {
    const Tin* __restrict src = in + r * iw;
    A* __restrict buf = row.data();
    for (int64_t x = 0; x < iw; ++x) buf[x] = static_cast<A>(src[x]);
    Tout* dst = out + r * ow;
    for (int64_t x = 0; x < ow; ++x)
      dst[x] = store<Tout>(dot4<K>(t.w.data() + x * t.taps, buf + t.start[x], t.taps));
  }
}

// Filters `rows` rows of width iw into rows of width ow.
template <class Tin, class Tout, class A>
void h_pass(const Tin* in, Tout* out, int64_t rows, int64_t iw, int64_t ow, const Table<A>& t, int threads) {
  parallel_for(rows, threads, [&](int64_t r0, int64_t r1) {
    switch (t.taps) {
      case 4: h_rows<4>(in, out, r0, r1, iw, ow, t); break;
      case 8: h_rows<8>(in, out, r0, r1, iw, ow, t); break;
      case 12: h_rows<12>(in, out, r0, r1, iw, ow, t); break;
      case 16: h_rows<16>(in, out, r0, r1, iw, ow, t); break;
      default: h_rows<0>(in, out, r0, r1, iw, ow, t); break;
    }
  });
}

// Filters `planes` planes of ih rows (width w) into planes of oh rows.
template <class Tin, class Tout, class A>
void v_pass(const Tin* in, Tout* out, int64_t planes, int64_t ih, int64_t oh, int64_t w, const Table<A>& t,
            int threads) {
  parallel_for(planes * oh, threads, [&](int64_t r0, int64_t r1) {
    std::vector<A> acc(static_cast<size_t>(w));
    A* __restrict a = acc.data();
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t p = r / oh, y = r % oh;
      const Tin* src = in + (p * ih + t.start[y]) * w;
      const A* wy = t.w.data() + y * t.taps;
      std::fill(acc.begin(), acc.end(), A(0));
      for (int64_t k = 0; k < t.taps; ++k) {
        const A wk = wy[k];
        const Tin* __restrict s = src + k * w;
        for (int64_t x = 0; x < w; ++x) a[x] += wk * static_cast<A>(s[x]);
      }
      Tout* __restrict dst = out + r * w;
      for (int64_t x = 0; x < w; ++x) dst[x] = store<Tout>(a[x]);
    }
  });
}

}  // namespace

AxisWeights resize_weights(int64_t in, int64_t out, Interp mode, bool antialias) {
  AxisWeights a;
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  std::vector<std::vector<int64_t>> idx(static_cast<size_t>(out));
  std::vector<std::vector<double>> w(static_cast<size_t>(out));
  int64_t taps = 1;
  for (int64_t o = 0; o < out; ++o) {
    raw_taps(in, o, scale, mode, antialias, idx[o], w[o]);
    const auto [lo, hi] = std::minmax_element(idx[o].begin(), idx[o].end());
    taps = std::max(taps, *hi - *lo + 1);
  }
  a.taps = taps;
  a.start.resize(static_cast<size_t>(out));
  a.weight.assign(static_cast<size_t>(out * taps), 0.0);
  for (int64_t o = 0; o < out; ++o) {
    // Windows span at most `taps` <= in inputs, so pulling the start back keeps them inside the image.
    const int64_t start = std::min(*std::min_element(idx[o].begin(), idx[o].end()), in - taps);
    a.start[o] = start;
    for (size_t k = 0; k < idx[o].size(); ++k) a.weight[o * taps + (idx[o][k] - start)] += w[o][k];
  }
  return a;
}

template <class T>
void resize(const T* in, T* out, int64_t planes, int64_t ih, int64_t iw, int64_t oh, int64_t ow, Interp mode,
            bool antialias, int threads) {
  using A = typename AccOf<T>::type;
  if (planes == 0 || oh == 0 || ow == 0) return;
  if (ih == oh && iw == ow) {
    std::copy(in, in + planes * ih * iw, out);
    return;
  }
  const auto wide = [&] { return Table<A>(resize_weights(iw, ow, mode, antialias), 4); };
  const auto tall = [&] { return Table<A>(resize_weights(ih, oh, mode, antialias), 1); };
  if (ih == oh) {
    h_pass(in, out, planes * ih, iw, ow, wide(), threads);
    return;
  }
  if (iw == ow) {
    v_pass(in, out, planes, ih, oh, iw, tall(), threads);
    return;
  }
  const Table<A> tw = wide(), th = tall();
  // Both orders give the same result up to rounding; the H pass (a dot product per output) costs
  // about four times the V pass (whole-row axpys, four lanes wide) per multiply-add, so the order
  // that does fewer H-pass rows or fewer V-pass columns, weighted so, is taken.
  const double h_first = double(ih) * ow * tw.taps + double(oh) * ow * th.taps / 4.0;
  const double v_first = double(oh) * iw * th.taps / 4.0 + double(oh) * ow * tw.taps;
  if (h_first <= v_first) {
    std::vector<A> tmp(static_cast<size_t>(planes * ih * ow));
    h_pass(in, tmp.data(), planes * ih, iw, ow, tw, threads);
    v_pass(tmp.data(), out, planes, ih, oh, ow, th, threads);
  } else {
    std::vector<A> tmp(static_cast<size_t>(planes * oh * iw));
    v_pass(in, tmp.data(), planes, ih, oh, iw, th, threads);
    h_pass(tmp.data(), out, planes * oh, iw, ow, tw, threads);
  }
}

#define EMBERVISION_RESIZE_INSTANTIATE(T) \
  template void resize<T>(const T*, T*, int64_t, int64_t, int64_t, int64_t, int64_t, Interp, bool, int);
EMBERVISION_RESIZE_INSTANTIATE(uint8_t)
EMBERVISION_RESIZE_INSTANTIATE(float)
EMBERVISION_RESIZE_INSTANTIATE(double)
#undef EMBERVISION_RESIZE_INSTANTIATE

}  // namespace embervision::transforms
