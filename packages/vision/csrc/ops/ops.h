// The detection kernels of embervision._C, on raw C-contiguous CPU buffers. The bindings
// (bindings.cpp) check every shape and box batch index before calling them, so the kernels
// themselves never throw. Each is instantiated for float and double.
#pragma once

#include <cstdint>

namespace embervision::ops {

// input [batch, channels, height, width], rois [rois, 5] = (batch index, x1, y1, x2, y2),
// output [rois, channels (or channels / (pooled_h * pooled_w) for the ps_ ops), pooled_h, pooled_w].
struct RoiShape {
  int64_t batch, channels, height, width, rois, pooled_h, pooled_w;
};

template <class T>
void roi_align_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale,
                       int64_t sampling_ratio, bool aligned, T* output, int threads);
template <class T>
void roi_align_backward(const T* grad_output, const T* rois, const RoiShape& s, double spatial_scale,
                        int64_t sampling_ratio, bool aligned, T* grad_input, int threads);

// argmax holds, per output element, the flat h * width + w of the maximum, or -1 for an empty bin.
template <class T>
void roi_pool_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale, T* output,
                      int64_t* argmax, int threads);
template <class T>
void roi_pool_backward(const T* grad_output, const int64_t* argmax, const T* rois, const RoiShape& s,
                       T* grad_input, int threads);

template <class T>
void ps_roi_align_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale,
                          int64_t sampling_ratio, T* output, int threads);
template <class T>
void ps_roi_align_backward(const T* grad_output, const T* rois, const RoiShape& s, double spatial_scale,
                           int64_t sampling_ratio, T* grad_input, int threads);

template <class T>
void ps_roi_pool_forward(const T* input, const T* rois, const RoiShape& s, double spatial_scale, T* output,
                         int threads);
template <class T>
void ps_roi_pool_backward(const T* grad_output, const T* rois, const RoiShape& s, double spatial_scale,
                          T* grad_input, int threads);

// Greedy NMS over boxes [n, 4] already sorted by score: keep[i] = 1 for the kept boxes.
template <class T>
void nms_sorted(const T* boxes, int64_t n, double iou_threshold, uint8_t* keep);

// Deformable convolution as im2col (Note [deformable im2col] in deform_conv.cpp):
// input [batch, channels, height, width], offset [batch, offset_groups * 2 * kh * kw, out_h, out_w],
// mask [batch, offset_groups * kh * kw, out_h, out_w] or null,
// columns [batch, channels * kh * kw, out_h * out_w].
struct DeformShape {
  int64_t batch, channels, height, width, kh, kw, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w,
      offset_groups, out_h, out_w;
};

template <class T>
void deform_im2col(const T* input, const T* offset, const T* mask, const DeformShape& s, T* columns,
                   int threads);
// Gradient of the columns with respect to the input (grad_input is zeroed first by the caller).
template <class T>
void deform_col2im(const T* grad_columns, const T* offset, const T* mask, const DeformShape& s, T* grad_input,
                   int threads);
// Gradients of the columns with respect to the offsets and, when grad_mask is not null, the mask.
template <class T>
void deform_col2im_coord(const T* grad_columns, const T* input, const T* offset, const T* mask,
                         const DeformShape& s, T* grad_offset, T* grad_mask, int threads);

}  // namespace embervision::ops
