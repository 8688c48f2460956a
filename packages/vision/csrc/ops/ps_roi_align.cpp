// Position-sensitive RoIAlign (R-FCN): output bin (ph, pw) of output channel c averages bilinear
// samples of input channel (c * pooled_h + ph) * pooled_w + pw only.
#include <vector>

#include "common.h"
#include "ops.h"

namespace embervision::ops {
namespace {

// Visits the samples of bin (ph, pw) of roi `roi` (fn(corners)) and returns 1 / their count.
template <class T, class F>
T for_each_sample(const T* roi, const RoiShape& s, T scale, int64_t sampling_ratio, int64_t ph, int64_t pw,
                  F&& fn) {
  // Half-pixel centres always, and no minimum box size (torchvision's ps_roi_align).
  const T x1 = roi[1] * scale - T(0.5), y1 = roi[2] * scale - T(0.5);
  const T x2 = roi[3] * scale - T(0.5), y2 = roi[4] * scale - T(0.5);
  const T roi_w = x2 - x1, roi_h = y2 - y1;
  const T bin_h = roi_h / static_cast<T>(s.pooled_h), bin_w = roi_w / static_cast<T>(s.pooled_w);
  const int64_t gh = grid_size(sampling_ratio, roi_h, s.pooled_h),
                gw = grid_size(sampling_ratio, roi_w, s.pooled_w);
  // torchvision divides by gh * gw even when it is 0 (a NaN for a degenerate box); here such a bin is 0.
  const T inv_count = T(1) / static_cast<T>(std::max<int64_t>(gh * gw, 1));
  const T y0 = static_cast<T>(ph) * bin_h + y1, x0 = static_cast<T>(pw) * bin_w + x1;
  for (int64_t iy = 0; iy < gh; ++iy) {
    const T y = y0 + (static_cast<T>(iy) + T(0.5)) * bin_h / static_cast<T>(gh);
    for (int64_t ix = 0; ix < gw; ++ix) {
      const T x = x0 + (static_cast<T>(ix) + T(0.5)) * bin_w / static_cast<T>(gw);
      fn(roi_bilinear(s.height, s.width, y, x));
    }
  }
  return inv_count;
}

}  // namespace

template <class T>
void ps_roi_align_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale,
                          int64_t sampling_ratio, T* output, int threads) {
  const int64_t plane = s.height * s.width, bins = s.pooled_h * s.pooled_w, out_c = s.channels / bins;
  parallel_for(s.rois, threads, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t n = static_cast<int64_t>(rois[k * 5]);
      for (int64_t c = 0; c < out_c; ++c)
        for (int64_t ph = 0; ph < s.pooled_h; ++ph)
          for (int64_t pw = 0; pw < s.pooled_w; ++pw) {
            const int64_t c_in = (c * s.pooled_h + ph) * s.pooled_w + pw;
            const T* in = input + (n * s.channels + c_in) * plane;
            T sum = 0;
            const T inv = for_each_sample(rois + k * 5, s, static_cast<T>(spatial_scale), sampling_ratio, ph,
                                          pw, [&](const Corners<T>& p) {
                                            sum += p.w1 * in[p.i1] + p.w2 * in[p.i2] + p.w3 * in[p.i3] +
                                                   p.w4 * in[p.i4];
                                          });
            output[((k * out_c + c) * s.pooled_h + ph) * s.pooled_w + pw] = sum * inv;
          }
    }
  });
}

// Threads split the output channels: input channel c_in belongs to exactly one of them.
template <class T>
void ps_roi_align_backward(const T* grad_output, const T* rois, const RoiShape& s, double spatial_scale,
                           int64_t sampling_ratio, T* grad_input, int threads) {
  const int64_t plane = s.height * s.width, bins = s.pooled_h * s.pooled_w, out_c = s.channels / bins;
  parallel_for(out_c, threads, [&](int64_t begin, int64_t end) {
    std::vector<Corners<T>> samples;
    for (int64_t k = 0; k < s.rois; ++k) {
      const int64_t n = static_cast<int64_t>(rois[k * 5]);
      for (int64_t ph = 0; ph < s.pooled_h; ++ph)
        for (int64_t pw = 0; pw < s.pooled_w; ++pw) {
          // A bin's samples are shared by every output channel: collected once, scattered per channel.
          samples.clear();
          const T inv = for_each_sample(rois + k * 5, s, static_cast<T>(spatial_scale), sampling_ratio, ph,
                                        pw, [&](const Corners<T>& p) { samples.push_back(p); });
          for (int64_t c = begin; c < end; ++c) {
            const int64_t c_in = (c * s.pooled_h + ph) * s.pooled_w + pw;
            T* gin = grad_input + (n * s.channels + c_in) * plane;
            const T gb = grad_output[((k * out_c + c) * s.pooled_h + ph) * s.pooled_w + pw] * inv;
            for (const Corners<T>& p : samples) {
              gin[p.i1] += gb * p.w1;
              gin[p.i2] += gb * p.w2;
              gin[p.i3] += gb * p.w3;
              gin[p.i4] += gb * p.w4;
            }
          }
        }
    }
  });
}

#define EMBERVISION_INSTANTIATE(T)                                                                      \
  template void ps_roi_align_forward<T>(const T*, const T*, const RoiShape&, double, int64_t, T*, int); \
  template void ps_roi_align_backward<T>(const T*, const T*, const RoiShape&, double, int64_t, T*, int);
EMBERVISION_INSTANTIATE(float)
EMBERVISION_INSTANTIATE(double)
#undef EMBERVISION_INSTANTIATE

}  // namespace embervision::ops
