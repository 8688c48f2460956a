// Deformable convolution v1/v2 as im2col with learned sampling offsets and an optional modulation mask.
//
// Note [deformable im2col]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Column row c * kh * kw + i * kw + j, column oh * out_w + ow holds
//     mask[b, g*kk + k, oh, ow] * bilinear(input[b, c], y, x),   k = i * kw + j, kk = kh * kw,
//     y = oh * stride_h - pad_h + i * dil_h + offset[b, g*2*kk + 2*k,     oh, ow],
//     x = ow * stride_w - pad_w + j * dil_w + offset[b, g*2*kk + 2*k + 1, oh, ow],
// with g = c / (channels / offset_groups) and mask = 1 when absent. The bilinear sample reads
// zero outside the map (each of the four corners separately) and is zero once the point is a
// full pixel outside. The convolution is then weight[g'] @ columns[g'] per weight group (done with
// ember's matmul in Python); these kernels supply the columns and their gradients.
#include "common.h"
#include "ops.h"

namespace embervision::ops {
namespace {

template <class T>
struct Sample {
  int64_t y0, x0;  // top-left corner
  T ly, lx;        // fractional parts
  bool inside;     // false: the point is a full pixel outside, and everything is zero
};

template <class T>
inline Sample<T> locate(int64_t height, int64_t width, T y, T x) {
  if (!(y > T(-1) && y < T(height) && x > T(-1) && x < T(width))) return {0, 0, 0, 0, false};
  const T fy = std::floor(y), fx = std::floor(x);
  return {static_cast<int64_t>(fy), static_cast<int64_t>(fx), y - fy, x - fx, true};
}

// The four corner values (zero outside the map) of a located sample.
template <class T>
inline void corners(const T* in, int64_t height, int64_t width, const Sample<T>& p, T v[4]) {
  const bool top = p.y0 >= 0, bottom = p.y0 + 1 <= height - 1, left = p.x0 >= 0,
             right = p.x0 + 1 <= width - 1;
  v[0] = top && left ? in[p.y0 * width + p.x0] : T(0);
  v[1] = top && right ? in[p.y0 * width + p.x0 + 1] : T(0);
  v[2] = bottom && left ? in[(p.y0 + 1) * width + p.x0] : T(0);
  v[3] = bottom && right ? in[(p.y0 + 1) * width + p.x0 + 1] : T(0);
}

// Visits every (oh, ow) of kernel tap (i, j) for batch b and offset group g:
// fn(column index l, located sample, mask value).
template <class T, class F>
inline void for_each_tap(const T* offset, const T* mask, const DeformShape& s, int64_t b, int64_t g,
                         int64_t i, int64_t j, F&& fn) {
  const int64_t kk = s.kh * s.kw, k = i * s.kw + j, L = s.out_h * s.out_w;
  const T* off_y = offset + ((b * s.offset_groups + g) * 2 * kk + 2 * k) * L;
  const T* off_x = off_y + L;
  const T* m = mask ? mask + ((b * s.offset_groups + g) * kk + k) * L : nullptr;
  for (int64_t oh = 0; oh < s.out_h; ++oh)
    for (int64_t ow = 0; ow < s.out_w; ++ow) {
      const int64_t l = oh * s.out_w + ow;
      const T y = static_cast<T>(oh * s.stride_h - s.pad_h + i * s.dil_h) + off_y[l];
      const T x = static_cast<T>(ow * s.stride_w - s.pad_w + j * s.dil_w) + off_x[l];
      fn(l, locate(s.height, s.width, y, x), m ? m[l] : T(1));
    }
}

}  // namespace

// Threads split the (batch, channel) planes: each owns its kh * kw column rows.
template <class T>
void deform_im2col(const T* input, const T* offset, const T* mask, const DeformShape& s, T* columns,
                   int threads) {
  const int64_t kk = s.kh * s.kw, L = s.out_h * s.out_w, per_group = s.channels / s.offset_groups;
  parallel_for(s.batch * s.channels, threads, [&](int64_t begin, int64_t end) {
    for (int64_t bc = begin; bc < end; ++bc) {
      const int64_t b = bc / s.channels, c = bc % s.channels;
      const T* in = input + bc * s.height * s.width;
      for (int64_t i = 0; i < s.kh; ++i)
        for (int64_t j = 0; j < s.kw; ++j) {
          T* col = columns + (bc * kk + i * s.kw + j) * L;
          for_each_tap(offset, mask, s, b, c / per_group, i, j, [&](int64_t l, const Sample<T>& p, T m) {
            if (!p.inside) {
              col[l] = 0;
              return;
            }
            T v[4];
            corners(in, s.height, s.width, p, v);
            const T hy = T(1) - p.ly, hx = T(1) - p.lx;
            col[l] = m * (hy * hx * v[0] + hy * p.lx * v[1] + p.ly * hx * v[2] + p.ly * p.lx * v[3]);
          });
        }
    }
  });
}

// Threads split the (batch, channel) planes of grad_input: each receives only from its own rows.
template <class T>
void deform_col2im(const T* grad_columns, const T* offset, const T* mask, const DeformShape& s, T* grad_input,
                   int threads) {
  const int64_t kk = s.kh * s.kw, L = s.out_h * s.out_w, per_group = s.channels / s.offset_groups;
  parallel_for(s.batch * s.channels, threads, [&](int64_t begin, int64_t end) {
    for (int64_t bc = begin; bc < end; ++bc) {
      const int64_t b = bc / s.channels, c = bc % s.channels;
      T* gin = grad_input + bc * s.height * s.width;
      for (int64_t i = 0; i < s.kh; ++i)
        for (int64_t j = 0; j < s.kw; ++j) {
          const T* gcol = grad_columns + (bc * kk + i * s.kw + j) * L;
          for_each_tap(offset, mask, s, b, c / per_group, i, j, [&](int64_t l, const Sample<T>& p, T m) {
            if (!p.inside) return;
            const T g = gcol[l] * m, hy = T(1) - p.ly, hx = T(1) - p.lx;
            const bool top = p.y0 >= 0, bottom = p.y0 + 1 <= s.height - 1;
            const bool left = p.x0 >= 0, right = p.x0 + 1 <= s.width - 1;
            if (top && left) gin[p.y0 * s.width + p.x0] += g * hy * hx;
            if (top && right) gin[p.y0 * s.width + p.x0 + 1] += g * hy * p.lx;
            if (bottom && left) gin[(p.y0 + 1) * s.width + p.x0] += g * p.ly * hx;
            if (bottom && right) gin[(p.y0 + 1) * s.width + p.x0 + 1] += g * p.ly * p.lx;
          });
        }
    }
  });
}

// Threads split the (batch, offset group, tap) triples: each owns two offset planes and one mask plane.
template <class T>
void deform_col2im_coord(const T* grad_columns, const T* input, const T* offset, const T* mask,
                         const DeformShape& s, T* grad_offset, T* grad_mask, int threads) {
  const int64_t kk = s.kh * s.kw, L = s.out_h * s.out_w, per_group = s.channels / s.offset_groups;
  parallel_for(s.batch * s.offset_groups * kk, threads, [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      const int64_t k = item % kk, bg = item / kk, g = bg % s.offset_groups, b = bg / s.offset_groups;
      const int64_t i = k / s.kw, j = k % s.kw;
      T* gy = grad_offset + (bg * 2 * kk + 2 * k) * L;
      T* gx = gy + L;
      T* gm = grad_mask ? grad_mask + (bg * kk + k) * L : nullptr;
      for (int64_t l = 0; l < L; ++l) {
        gy[l] = gx[l] = 0;
        if (gm) gm[l] = 0;
      }
      for (int64_t c = g * per_group; c < (g + 1) * per_group; ++c) {
        const T* in = input + (b * s.channels + c) * s.height * s.width;
        const T* gcol = grad_columns + ((b * s.channels + c) * kk + k) * L;
        for_each_tap(offset, mask, s, b, g, i, j, [&](int64_t l, const Sample<T>& p, T m) {
          if (!p.inside) return;
          T v[4];
          corners(in, s.height, s.width, p, v);
          const T hy = T(1) - p.ly, hx = T(1) - p.lx;
          gy[l] += gcol[l] * m * (hx * (v[2] - v[0]) + p.lx * (v[3] - v[1]));
          gx[l] += gcol[l] * m * (hy * (v[1] - v[0]) + p.ly * (v[3] - v[2]));
          if (gm)
            gm[l] += gcol[l] * (hy * hx * v[0] + hy * p.lx * v[1] + p.ly * hx * v[2] + p.ly * p.lx * v[3]);
        });
      }
    }
  });
}

#define EMBERVISION_INSTANTIATE(T)                                                                         \
  template void deform_im2col<T>(const T*, const T*, const T*, const DeformShape&, T*, int);               \
  template void deform_col2im<T>(const T*, const T*, const T*, const DeformShape&, T*, int);               \
  template void deform_col2im_coord<T>(const T*, const T*, const T*, const T*, const DeformShape&, T*, T*, \
                                       int);
EMBERVISION_INSTANTIATE(float)
EMBERVISION_INSTANTIATE(double)
#undef EMBERVISION_INSTANTIATE

}  // namespace embervision::ops
