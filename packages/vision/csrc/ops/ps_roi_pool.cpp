// Position-sensitive RoIPool (R-FCN): output bin (ph, pw) of output channel c is the mean of input
// channel (c * pooled_h + ph) * pooled_w + pw over the bin's cells.
#include "common.h"
#include "ops.h"

namespace embervision::ops {
namespace {

struct Cells {
  int64_t h0, h1, w0, w1;
  bool empty() const { return h1 <= h0 || w1 <= w0; }
  int64_t area() const { return (h1 - h0) * (w1 - w0); }
};

// The box rounded to whole pixels (end exclusive, at least 1x1), bin (ph, pw) of it clipped to the map.
template <class T>
Cells cells_of(const T* roi, const RoiShape& s, T scale, int64_t ph, int64_t pw) {
  const int64_t x1 = clamp_to_int(std::round(static_cast<double>(roi[1] * scale)));
  const int64_t y1 = clamp_to_int(std::round(static_cast<double>(roi[2] * scale)));
  const int64_t x2 = clamp_to_int(std::round(static_cast<double>(roi[3] * scale)));
  const int64_t y2 = clamp_to_int(std::round(static_cast<double>(roi[4] * scale)));
  const T bin_h = static_cast<T>(std::max<int64_t>(y2 - y1, 1)) / static_cast<T>(s.pooled_h);
  const T bin_w = static_cast<T>(std::max<int64_t>(x2 - x1, 1)) / static_cast<T>(s.pooled_w);
  auto clip = [](int64_t v, int64_t hi) { return std::min(std::max(v, int64_t{0}), hi); };
  auto lo = [](T v) { return clamp_to_int(std::floor(static_cast<double>(v))); };
  auto hi = [](T v) { return clamp_to_int(std::ceil(static_cast<double>(v))); };
  return {clip(lo(static_cast<T>(ph) * bin_h) + y1, s.height),
          clip(hi(static_cast<T>(ph + 1) * bin_h) + y1, s.height),
          clip(lo(static_cast<T>(pw) * bin_w) + x1, s.width),
          clip(hi(static_cast<T>(pw + 1) * bin_w) + x1, s.width)};
}

}  // namespace

template <class T>
void ps_roi_pool_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale, T* output,
                         int threads) {
  const int64_t plane = s.height * s.width, bins = s.pooled_h * s.pooled_w, out_c = s.channels / bins;
  parallel_for(s.rois, threads, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t n = static_cast<int64_t>(rois[k * 5]);
      for (int64_t ph = 0; ph < s.pooled_h; ++ph)
        for (int64_t pw = 0; pw < s.pooled_w; ++pw) {
          const Cells b = cells_of(rois + k * 5, s, static_cast<T>(spatial_scale), ph, pw);
          for (int64_t c = 0; c < out_c; ++c) {
            const T* in = input + (n * s.channels + (c * s.pooled_h + ph) * s.pooled_w + pw) * plane;
            T sum = 0;
            for (int64_t h = b.h0; h < b.h1; ++h)
              for (int64_t w = b.w0; w < b.w1; ++w) sum += in[h * s.width + w];
            output[((k * out_c + c) * s.pooled_h + ph) * s.pooled_w + pw] =
                b.empty() ? T(0) : sum / static_cast<T>(b.area());
          }
        }
    }
  });
}

template <class T>
void ps_roi_pool_backward(const T* grad_output, const T* rois, const RoiShape& s, double spatial_scale,
                          T* grad_input, int threads) {
  const int64_t plane = s.height * s.width, bins = s.pooled_h * s.pooled_w, out_c = s.channels / bins;
  parallel_for(out_c, threads, [&](int64_t begin, int64_t end) {
    for (int64_t k = 0; k < s.rois; ++k) {
      const int64_t n = static_cast<int64_t>(rois[k * 5]);
      for (int64_t ph = 0; ph < s.pooled_h; ++ph)
        for (int64_t pw = 0; pw < s.pooled_w; ++pw) {
          const Cells b = cells_of(rois + k * 5, s, static_cast<T>(spatial_scale), ph, pw);
          if (b.empty()) continue;
          for (int64_t c = begin; c < end; ++c) {
            T* gin = grad_input + (n * s.channels + (c * s.pooled_h + ph) * s.pooled_w + pw) * plane;
            const T g =
                grad_output[((k * out_c + c) * s.pooled_h + ph) * s.pooled_w + pw] / static_cast<T>(b.area());
            for (int64_t h = b.h0; h < b.h1; ++h)
              for (int64_t w = b.w0; w < b.w1; ++w) gin[h * s.width + w] += g;
          }
        }
    }
  });
}

#define EMBERVISION_INSTANTIATE(T)                                                            \
  template void ps_roi_pool_forward<T>(const T*, const T*, const RoiShape&, double, T*, int); \
  template void ps_roi_pool_backward<T>(const T*, const T*, const RoiShape&, double, T*, int);
EMBERVISION_INSTANTIATE(float)
EMBERVISION_INSTANTIATE(double)
#undef EMBERVISION_INSTANTIATE

}  // namespace embervision::ops
