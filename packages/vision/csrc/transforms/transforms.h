// embervision._transforms: the image kernels of transforms.v2.functional on raw C-contiguous buffers.
// Images are `planes` planes of H x W values (a [..., C, H, W] tensor's leading dims flattened);
// bindings.cpp checks every shape and dtype before calling in. Kernels never throw.
#pragma once

#include <cstdint>
#include <vector>

#include "../ops/common.h"  // parallel_for

namespace embervision::transforms {

using embervision::ops::parallel_for;

enum class Interp { kNearest, kNearestExact, kBilinear, kBicubic };

// One axis of a separable resize: output index o reads `taps` consecutive inputs from start[o],
// weighted by weight[o * taps + k] (zero-padded past that output's own window).
struct AxisWeights {
  int64_t taps = 0;
  std::vector<int64_t> start;
  std::vector<double> weight;
};

AxisWeights resize_weights(int64_t in, int64_t out, Interp mode, bool antialias);

// T is uint8_t, float or double; uint8 is computed in float, rounded half to even and clamped.
template <class T>
void resize(const T* in, T* out, int64_t planes, int64_t ih, int64_t iw, int64_t oh, int64_t ow, Interp mode,
            bool antialias, int threads);

// Color kernels; `images` x `channels` planes of `hw` values each. T is uint8_t, float or double.
template <class T>
void rgb_to_grayscale(const T* in, T* out, int64_t images, int64_t hw, int threads);
template <class T>
void adjust_brightness(const T* in, T* out, int64_t n, double factor, int threads);
template <class T>
void adjust_saturation(const T* in, T* out, int64_t images, int64_t hw, double factor, int threads);
template <class T>
void adjust_contrast(const T* in, T* out, int64_t images, int64_t channels, int64_t hw, double factor,
                     int threads);
template <class T>
void adjust_hue(const T* in, T* out, int64_t images, int64_t hw, double factor, int threads);
template <class T>
void adjust_sharpness(const T* in, T* out, int64_t planes, int64_t h, int64_t w, double factor, int threads);
template <class T>
void posterize(const T* in, T* out, int64_t n, int bits, int threads);
template <class T>
void solarize(const T* in, T* out, int64_t n, double threshold, int threads);
template <class T>
void invert(const T* in, T* out, int64_t n, int threads);
template <class T>
void autocontrast(const T* in, T* out, int64_t planes, int64_t hw, int threads);
void equalize(const uint8_t* in, uint8_t* out, int64_t planes, int64_t hw, int threads);
template <class T>
void normalize(const T* in, T* out, int64_t images, int64_t channels, int64_t hw, const double* mean,
               const double* std, int threads);

}  // namespace embervision::transforms
