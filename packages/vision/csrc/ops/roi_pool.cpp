// RoIPool (Fast R-CNN): the maximum over each output bin of a box rounded to the feature grid.
#include <limits>

#include "common.h"
#include "ops.h"

namespace embervision::ops {
namespace {

// The integer cells [h0, h1) x [w0, w1) of bin (ph, pw): a box rounded to whole pixels, inclusive of
// its end pixel, at least 1x1, split into pooled_h x pooled_w bins, clipped to the map.
struct Bin {
  int64_t h0, h1, w0, w1;
  bool empty() const { return h1 <= h0 || w1 <= w0; }
};

template <class T>
struct RoundedRoi {
  int64_t batch_index, start_h, start_w;
  T bin_h, bin_w;
};

template <class T>
RoundedRoi<T> round_roi(const T* roi, const RoiShape& s, T scale) {
  // std::round: halves away from zero, as torchvision's kernel.
  const int64_t x1 = clamp_to_int(std::round(static_cast<double>(roi[1] * scale)));
  const int64_t y1 = clamp_to_int(std::round(static_cast<double>(roi[2] * scale)));
  const int64_t x2 = clamp_to_int(std::round(static_cast<double>(roi[3] * scale)));
  const int64_t y2 = clamp_to_int(std::round(static_cast<double>(roi[4] * scale)));
  const int64_t w = std::max<int64_t>(x2 - x1 + 1, 1), h = std::max<int64_t>(y2 - y1 + 1, 1);
  return {static_cast<int64_t>(roi[0]), y1, x1, static_cast<T>(h) / static_cast<T>(s.pooled_h),
          static_cast<T>(w) / static_cast<T>(s.pooled_w)};
}

template <class T>
Bin bin_of(const RoundedRoi<T>& r, const RoiShape& s, int64_t ph, int64_t pw) {
  auto clip = [](int64_t v, int64_t hi) { return std::min(std::max(v, int64_t{0}), hi); };
  const double h0 = std::floor(static_cast<double>(static_cast<T>(ph) * r.bin_h));
  const double h1 = std::ceil(static_cast<double>(static_cast<T>(ph + 1) * r.bin_h));
  const double w0 = std::floor(static_cast<double>(static_cast<T>(pw) * r.bin_w));
  const double w1 = std::ceil(static_cast<double>(static_cast<T>(pw + 1) * r.bin_w));
  return {clip(clamp_to_int(h0) + r.start_h, s.height), clip(clamp_to_int(h1) + r.start_h, s.height),
          clip(clamp_to_int(w0) + r.start_w, s.width), clip(clamp_to_int(w1) + r.start_w, s.width)};
}

}  // namespace

template <class T>
void roi_pool_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale, T* output,
                      int64_t* argmax, int threads) {
  const int64_t plane = s.height * s.width, bins = s.pooled_h * s.pooled_w;
  parallel_for(s.rois, threads, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const RoundedRoi<T> r = round_roi(rois + k * 5, s, static_cast<T>(spatial_scale));
      for (int64_t ph = 0; ph < s.pooled_h; ++ph)
        for (int64_t pw = 0; pw < s.pooled_w; ++pw) {
          const Bin b = bin_of(r, s, ph, pw);
          for (int64_t c = 0; c < s.channels; ++c) {
            const T* in = input + (r.batch_index * s.channels + c) * plane;
            // An empty bin gives 0; the first maximum in row-major order wins ties (strict >).
            T best = b.empty() ? T(0) : std::numeric_limits<T>::lowest();
            int64_t where = -1;
            for (int64_t h = b.h0; h < b.h1; ++h)
              for (int64_t w = b.w0; w < b.w1; ++w)
                if (in[h * s.width + w] > best) {
                  best = in[h * s.width + w];
                  where = h * s.width + w;
                }
            const int64_t o = (k * s.channels + c) * bins + ph * s.pooled_w + pw;
            output[o] = best;
            argmax[o] = where;
          }
        }
    }
  });
}

template <class T>
void roi_pool_backward(const T* grad_output, const int64_t* argmax, const T* rois, const RoiShape& s,
                       T* grad_input, int threads) {
  const int64_t plane = s.height * s.width, bins = s.pooled_h * s.pooled_w;
  parallel_for(s.channels, threads, [&](int64_t begin, int64_t end) {
    for (int64_t k = 0; k < s.rois; ++k) {
      const int64_t n = static_cast<int64_t>(rois[k * 5]);
      for (int64_t c = begin; c < end; ++c) {
        T* gin = grad_input + (n * s.channels + c) * plane;
        const int64_t o = (k * s.channels + c) * bins;
        for (int64_t b = 0; b < bins; ++b)
          if (argmax[o + b] >= 0) gin[argmax[o + b]] += grad_output[o + b];
      }
    }
  });
}

#define EMBERVISION_INSTANTIATE(T)                                                                   \
  template void roi_pool_forward<T>(const T*, const T*, const RoiShape&, double, T*, int64_t*, int); \
  template void roi_pool_backward<T>(const T*, const int64_t*, const T*, const RoiShape&, T*, int);
EMBERVISION_INSTANTIATE(float)
EMBERVISION_INSTANTIATE(double)
#undef EMBERVISION_INSTANTIATE

}  // namespace embervision::ops
