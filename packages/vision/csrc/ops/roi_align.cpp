// RoIAlign (Mask R-CNN): average of bilinear samples on a regular grid inside each output bin.
#include <vector>

#include "common.h"
#include "ops.h"

namespace embervision::ops {
namespace {

// One roi's sample table: for every (ph, pw) bin, grid_h * grid_w sample corners, laid out bin by
// bin, so that every channel of the roi reuses it.
template <class T>
struct RoiGrid {
  int64_t batch_index = 0, grid_h = 0, grid_w = 0;
  T count = 1;
  std::vector<Corners<T>> samples;
};

template <class T>
void build_grid(const T* roi, const RoiShape& s, T scale, int64_t sampling_ratio, bool aligned,
                RoiGrid<T>& g) {
  g.batch_index = static_cast<int64_t>(roi[0]);
  const T offset = aligned ? T(0.5) : T(0);
  const T x1 = roi[1] * scale - offset, y1 = roi[2] * scale - offset;
  const T x2 = roi[3] * scale - offset, y2 = roi[4] * scale - offset;
  T roi_w = x2 - x1, roi_h = y2 - y1;
  if (!aligned) {  // the legacy rule: boxes at least one pixel wide
    roi_w = std::max(roi_w, T(1));
    roi_h = std::max(roi_h, T(1));
  }
  const T bin_h = roi_h / static_cast<T>(s.pooled_h), bin_w = roi_w / static_cast<T>(s.pooled_w);
  g.grid_h = grid_size(sampling_ratio, roi_h, s.pooled_h);
  g.grid_w = grid_size(sampling_ratio, roi_w, s.pooled_w);
  g.count = static_cast<T>(std::max<int64_t>(g.grid_h * g.grid_w, 1));
  g.samples.clear();
  g.samples.reserve(static_cast<size_t>(s.pooled_h * s.pooled_w * g.grid_h * g.grid_w));
  for (int64_t ph = 0; ph < s.pooled_h; ++ph)
    for (int64_t pw = 0; pw < s.pooled_w; ++pw)
      for (int64_t iy = 0; iy < g.grid_h; ++iy) {
        const T y = y1 + static_cast<T>(ph) * bin_h +
                    (static_cast<T>(iy) + T(0.5)) * bin_h / static_cast<T>(g.grid_h);
        for (int64_t ix = 0; ix < g.grid_w; ++ix) {
          const T x = x1 + static_cast<T>(pw) * bin_w +
                      (static_cast<T>(ix) + T(0.5)) * bin_w / static_cast<T>(g.grid_w);
          g.samples.push_back(roi_bilinear(s.height, s.width, y, x));
        }
      }
}

}  // namespace

// Threads split the rois; each builds its roi's table once and runs it over every channel.
template <class T>
void roi_align_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale,
                       int64_t sampling_ratio, bool aligned, T* output, int threads) {
  const int64_t plane = s.height * s.width, bins = s.pooled_h * s.pooled_w;
  parallel_for(s.rois, threads, [&](int64_t begin, int64_t end) {
    RoiGrid<T> g;
    for (int64_t k = begin; k < end; ++k) {
      build_grid(rois + k * 5, s, static_cast<T>(spatial_scale), sampling_ratio, aligned, g);
      const int64_t per_bin = g.grid_h * g.grid_w;
      for (int64_t c = 0; c < s.channels; ++c) {
        const T* in = input + (g.batch_index * s.channels + c) * plane;
        T* out = output + (k * s.channels + c) * bins;
        for (int64_t b = 0; b < bins; ++b) {
          T sum = 0;
          for (int64_t i = b * per_bin; i < (b + 1) * per_bin; ++i) {
            const Corners<T>& p = g.samples[static_cast<size_t>(i)];
            sum += p.w1 * in[p.i1] + p.w2 * in[p.i2] + p.w3 * in[p.i3] + p.w4 * in[p.i4];
          }
          out[b] = sum / g.count;
        }
      }
    }
  });
}

// Threads split the channels (a channel's gradient plane receives only from that channel), so the
// scatter-adds never race.
template <class T>
void roi_align_backward(const T* grad_output, const T* rois, const RoiShape& s, double spatial_scale,
                        int64_t sampling_ratio, bool aligned, T* grad_input, int threads) {
  const int64_t plane = s.height * s.width, bins = s.pooled_h * s.pooled_w;
  parallel_for(s.channels, threads, [&](int64_t begin, int64_t end) {
    RoiGrid<T> g;
    for (int64_t k = 0; k < s.rois; ++k) {
      build_grid(rois + k * 5, s, static_cast<T>(spatial_scale), sampling_ratio, aligned, g);
      const int64_t per_bin = g.grid_h * g.grid_w;
      for (int64_t c = begin; c < end; ++c) {
        T* gin = grad_input + (g.batch_index * s.channels + c) * plane;
        const T* gout = grad_output + (k * s.channels + c) * bins;
        for (int64_t b = 0; b < bins; ++b) {
          const T gb = gout[b] / g.count;
          for (int64_t i = b * per_bin; i < (b + 1) * per_bin; ++i) {
            const Corners<T>& p = g.samples[static_cast<size_t>(i)];
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

#define EMBERVISION_INSTANTIATE(T)                                                                         \
  template void roi_align_forward<T>(const T*, const T*, const RoiShape&, double, int64_t, bool, T*, int); \
  template void roi_align_backward<T>(const T*, const T*, const RoiShape&, double, int64_t, bool, T*, int);
EMBERVISION_INSTANTIATE(float)
EMBERVISION_INSTANTIATE(double)
#undef EMBERVISION_INSTANTIATE

}  // namespace embervision::ops
