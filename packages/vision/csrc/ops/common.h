// Shared pieces of the detection kernels: a small parallel_for over std::thread, and the bilinear
// sampling rule of RoIAlign (Note [roi bilinear sampling]).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

namespace embervision::ops {

// Runs fn(begin, end) over [0, n) split into at most `threads` contiguous chunks. fn must not throw
// (callers validate every index before the kernels start).
template <class F>
void parallel_for(int64_t n, int threads, F&& fn) {
  if (n <= 0) return;
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(threads, n));
  if (chunks == 1) {
    fn(int64_t{0}, n);
    return;
  }
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(chunks - 1));
  const int64_t step = (n + chunks - 1) / chunks;
  for (int64_t begin = step; begin < n; begin += step)
    pool.emplace_back([&fn, begin, n, step] { fn(begin, std::min(n, begin + step)); });
  fn(int64_t{0}, std::min(n, step));
  for (auto& t : pool) t.join();
}

// Note [roi bilinear sampling]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// RoIAlign and PSRoIAlign sample the feature map at real points (y, x). A point more than one pixel
// outside the map contributes nothing; otherwise it is clamped into [0, H-1] x [0, W-1] and
// interpolated from its four neighbours. The test is written as !(inside) so that NaN coordinates
// take the "nothing" branch and never reach the integer casts.
template <class T>
struct Corners {
  int64_t i1, i2, i3, i4;  // flat offsets into one H x W plane
  T w1, w2, w3, w4;        // all zero for a point outside the map
};

template <class T>
inline Corners<T> roi_bilinear(int64_t height, int64_t width, T y, T x) {
  if (!(y >= T(-1) && y <= T(height) && x >= T(-1) && x <= T(width))) return {0, 0, 0, 0, 0, 0, 0, 0};
  if (y <= 0) y = 0;
  if (x <= 0) x = 0;
  int64_t y_low = static_cast<int64_t>(y), x_low = static_cast<int64_t>(x), y_high, x_high;
  if (y_low >= height - 1) {
    y_high = y_low = height - 1;
    y = static_cast<T>(y_low);
  } else {
    y_high = y_low + 1;
  }
  if (x_low >= width - 1) {
    x_high = x_low = width - 1;
    x = static_cast<T>(x_low);
  } else {
    x_high = x_low + 1;
  }
  const T ly = y - static_cast<T>(y_low), lx = x - static_cast<T>(x_low);
  const T hy = T(1) - ly, hx = T(1) - lx;
  return {y_low * width + x_low,
          y_low * width + x_high,
          y_high * width + x_low,
          y_high * width + x_high,
          hy * hx,
          hy * lx,
          ly * hx,
          ly * lx};
}

// The sampling grid of one bin side: `ratio` points when positive, else ceil(side / bins) points.
// Clamped to [0, 2^20] so that a degenerate or huge box never overflows the integer cast.
template <class T>
inline int64_t grid_size(int64_t ratio, T side, int64_t bins) {
  if (ratio > 0) return ratio;
  const double g = std::ceil(static_cast<double>(side) / static_cast<double>(bins));
  if (!(g > 0)) return 0;
  return static_cast<int64_t>(std::min(g, double(1 << 20)));
}

// A rounded/floored box coordinate as an integer, clamped far outside any feature map first so the
// cast is defined for every finite input.
inline int64_t clamp_to_int(double v) {
  constexpr double kLimit = 1e15;
  return static_cast<int64_t>(std::max(-kLimit, std::min(kLimit, v)));
}

}  // namespace embervision::ops
