// embervision._C: the detection kernels (ops.h) bound for Python. Arrays come in as C-contiguous
// NumPy views of ember tensors (embervision.ops._utils makes them); every shape, dtype and box
// batch index is checked here before a kernel runs, and the GIL is released while it does.
// Autograd lives in Python (ember.autograd.Function subclasses in embervision.ops).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ops.h"

namespace py = pybind11;
using embervision::ops::DeformShape;
using embervision::ops::RoiShape;

#ifndef EMBERVISION_BUILT_FOR_CORE
#error "EMBERVISION_BUILT_FOR_CORE must name the ember core version this module is built against"
#endif

namespace {

std::string shape_str(const py::array& a) {
  std::string s = "[";
  for (py::ssize_t d = 0; d < a.ndim(); ++d) s += (d ? ", " : "") + std::to_string(a.shape(d));
  return s + "]";
}

[[noreturn]] void fail(const std::string& op, const std::string& what) {
  throw py::value_error("[" + op + "] expected " + what);
}

void check_ndim(const std::string& op, const char* name, const py::array& a, py::ssize_t ndim) {
  if (a.ndim() != ndim)
    fail(op,
         std::string(name) + " with " + std::to_string(ndim) + " dimensions, but got shape " + shape_str(a));
  if (!(a.flags() & py::array::c_style)) fail(op, std::string(name) + " to be C-contiguous");
}

template <class T>
bool is(const py::array& a) {
  return a.dtype().is(py::dtype::of<T>());
}

template <class T>
const T* cdata(const py::array& a) {
  return static_cast<const T*>(a.data());
}

template <class T>
py::array_t<T> zeros(std::vector<py::ssize_t> shape) {
  py::array_t<T> out(shape);
  if (out.size()) std::memset(out.mutable_data(), 0, static_cast<size_t>(out.size()) * sizeof(T));
  return out;
}

// Threads for a kernel call of about `work` inner steps: one below kMinWorkPerThread steps a thread,
// where starting threads costs more than it saves.
constexpr double kMinWorkPerThread = 1 << 15;
int clamp_threads(int threads, double work) {
  const double useful = std::max(1.0, std::floor(work / kMinWorkPerThread));
  return static_cast<int>(std::max(1.0, std::min({double(threads), 256.0, useful})));
}

// Calls fn(T{}) with T the float or double element type of `a`; TypeError for any other dtype.
template <class F>
py::object dispatch(const std::string& op, const py::array& a, F&& fn) {
  if (is<float>(a)) return fn(float{});
  if (is<double>(a)) return fn(double{});
  throw py::type_error("[" + op + "] expected a float32 or float64 input, but got " +
                       std::string(py::str(a.dtype())));
}

// Checks rois [K, 5] of the input's dtype and that every batch index lies in [0, batch) and every
// coordinate is finite (indices become integer offsets into the input).
template <class T>
void check_rois(const std::string& op, const py::array& rois, int64_t batch) {
  check_ndim(op, "rois", rois, 2);
  if (rois.shape(1) != 5) fail(op, "rois of shape [K, 5], but got " + shape_str(rois));
  if (!is<T>(rois)) fail(op, "rois of the input's dtype " + std::string(py::str(py::dtype::of<T>())));
  const T* r = cdata<T>(rois);
  for (py::ssize_t k = 0; k < rois.shape(0); ++k) {
    const T* box = r + 5 * k;
    if (!(box[0] >= 0 && box[0] < static_cast<T>(batch)))
      throw py::index_error("[" + op + "] expected box batch indices in [0, " + std::to_string(batch) +
                            "), but got " + std::to_string(box[0]) + " for box " + std::to_string(k));
    for (int i = 1; i < 5; ++i)
      if (!std::isfinite(static_cast<double>(box[i])))
        fail(op, "finite box coordinates, but box " + std::to_string(k) + " has " + std::to_string(box[i]));
  }
}

// With sampling_ratio <= 0 a bin takes ceil(side / bins) samples per side: a box vastly larger than any
// feature map would run for hours, so more than kMaxSamples samples per bin is refused up front.
constexpr double kMaxSamples = double(1 << 24);

template <class T>
void check_adaptive_grid(const std::string& op, const py::array& rois, double scale, int64_t ph, int64_t pw,
                         int64_t sampling_ratio, double min_side) {
  if (sampling_ratio > 0) return;
  const T* r = cdata<T>(rois);
  for (py::ssize_t k = 0; k < rois.shape(0); ++k) {
    const T* box = r + 5 * k;
    const double w = std::max(static_cast<double>(box[3] - box[1]) * scale, min_side);
    const double h = std::max(static_cast<double>(box[4] - box[2]) * scale, min_side);
    const double samples = std::max(std::ceil(h / ph), 0.0) * std::max(std::ceil(w / pw), 0.0);
    if (samples > kMaxSamples)
      fail(op, "at most " + std::to_string(static_cast<int64_t>(kMaxSamples)) +
                   " samples per bin with an adaptive sampling_ratio, but box " + std::to_string(k) +
                   " needs " + std::to_string(samples) + "; pass a positive sampling_ratio");
  }
}

RoiShape roi_shape(const std::string& op, const py::array& input, const py::array& rois, int64_t ph,
                   int64_t pw) {
  check_ndim(op, "input", input, 4);
  if (ph <= 0 || pw <= 0)
    fail(op, "a positive output_size, but got (" + std::to_string(ph) + ", " + std::to_string(pw) + ")");
  return {input.shape(0), input.shape(1), input.shape(2), input.shape(3), rois.shape(0), ph, pw};
}

void check_ps_channels(const std::string& op, const RoiShape& s) {
  if (s.channels % (s.pooled_h * s.pooled_w) != 0)
    fail(op, "input channels to be a multiple of output_size[0] * output_size[1] = " +
                 std::to_string(s.pooled_h * s.pooled_w) + ", but got " + std::to_string(s.channels));
}

void check_grad(const std::string& op, const py::array& grad, std::vector<int64_t> want) {
  check_ndim(op, "grad_output", grad, static_cast<py::ssize_t>(want.size()));
  for (size_t d = 0; d < want.size(); ++d)
    if (grad.shape(static_cast<py::ssize_t>(d)) != want[d])
      fail(op, "grad_output of the output's shape, but got " + shape_str(grad));
}

// ---- roi_align / ps_roi_align -------------------------------------------------------------------

py::object roi_align_forward(const py::array& input, const py::array& rois, double scale, int64_t ph,
                             int64_t pw, int64_t sampling_ratio, bool aligned, int threads) {
  const std::string op = "roi_align";
  RoiShape s = roi_shape(op, input, rois, ph, pw);
  return dispatch(op, input, [&](auto tag) -> py::object {
    using T = decltype(tag);
    check_rois<T>(op, rois, s.batch);
    check_adaptive_grid<T>(op, rois, scale, ph, pw, sampling_ratio, aligned ? 0.0 : 1.0);
    auto out = zeros<T>({s.rois, s.channels, ph, pw});
    if (out.size() && s.height * s.width > 0) {
      py::gil_scoped_release release;
      embervision::ops::roi_align_forward(cdata<T>(input), cdata<T>(rois), s, scale, sampling_ratio, aligned,
                                          out.mutable_data(), clamp_threads(threads, double(out.size()) * 4));
    }
    return out;
  });
}

py::object roi_align_backward(const py::array& grad, const py::array& rois, int64_t batch, int64_t channels,
                              int64_t height, int64_t width, double scale, int64_t ph, int64_t pw,
                              int64_t sampling_ratio, bool aligned, int threads) {
  const std::string op = "roi_align_backward";
  RoiShape s{batch, channels, height, width, rois.ndim() == 2 ? rois.shape(0) : 0, ph, pw};
  return dispatch(op, grad, [&](auto tag) -> py::object {
    using T = decltype(tag);
    check_rois<T>(op, rois, batch);
    check_adaptive_grid<T>(op, rois, scale, ph, pw, sampling_ratio, aligned ? 0.0 : 1.0);
    check_grad(op, grad, {s.rois, channels, ph, pw});
    auto gin = zeros<T>({batch, channels, height, width});
    if (gin.size() && grad.size()) {
      py::gil_scoped_release release;
      embervision::ops::roi_align_backward(cdata<T>(grad), cdata<T>(rois), s, scale, sampling_ratio, aligned,
                                           gin.mutable_data(),
                                           clamp_threads(threads, double(grad.size()) * 4));
    }
    return gin;
  });
}

py::object ps_roi_align_forward(const py::array& input, const py::array& rois, double scale, int64_t ph,
                                int64_t pw, int64_t sampling_ratio, int threads) {
  const std::string op = "ps_roi_align";
  RoiShape s = roi_shape(op, input, rois, ph, pw);
  check_ps_channels(op, s);
  return dispatch(op, input, [&](auto tag) -> py::object {
    using T = decltype(tag);
    check_rois<T>(op, rois, s.batch);
    check_adaptive_grid<T>(op, rois, scale, ph, pw, sampling_ratio, 0.0);
    auto out = zeros<T>({s.rois, s.channels / (ph * pw), ph, pw});
    if (out.size() && s.height * s.width > 0) {
      py::gil_scoped_release release;
      embervision::ops::ps_roi_align_forward(cdata<T>(input), cdata<T>(rois), s, scale, sampling_ratio,
                                             out.mutable_data(),
                                             clamp_threads(threads, double(out.size()) * 4));
    }
    return out;
  });
}

py::object ps_roi_align_backward(const py::array& grad, const py::array& rois, int64_t batch,
                                 int64_t channels, int64_t height, int64_t width, double scale, int64_t ph,
                                 int64_t pw, int64_t sampling_ratio, int threads) {
  const std::string op = "ps_roi_align_backward";
  RoiShape s{batch, channels, height, width, rois.ndim() == 2 ? rois.shape(0) : 0, ph, pw};
  if (ph <= 0 || pw <= 0) fail(op, "a positive output_size");
  check_ps_channels(op, s);
  return dispatch(op, grad, [&](auto tag) -> py::object {
    using T = decltype(tag);
    check_rois<T>(op, rois, batch);
    check_adaptive_grid<T>(op, rois, scale, ph, pw, sampling_ratio, 0.0);
    check_grad(op, grad, {s.rois, channels / (ph * pw), ph, pw});
    auto gin = zeros<T>({batch, channels, height, width});
    if (gin.size() && grad.size()) {
      py::gil_scoped_release release;
      embervision::ops::ps_roi_align_backward(cdata<T>(grad), cdata<T>(rois), s, scale, sampling_ratio,
                                              gin.mutable_data(),
                                              clamp_threads(threads, double(grad.size()) * 4));
    }
    return gin;
  });
}

// ---- roi_pool / ps_roi_pool ---------------------------------------------------------------------

py::object roi_pool_forward(const py::array& input, const py::array& rois, double scale, int64_t ph,
                            int64_t pw, int threads) {
  const std::string op = "roi_pool";
  RoiShape s = roi_shape(op, input, rois, ph, pw);
  return dispatch(op, input, [&](auto tag) -> py::object {
    using T = decltype(tag);
    check_rois<T>(op, rois, s.batch);
    auto out = zeros<T>({s.rois, s.channels, ph, pw});
    py::array_t<int64_t> argmax({s.rois, s.channels, ph, pw});
    std::fill_n(argmax.mutable_data(), argmax.size(), int64_t{-1});
    if (out.size() && s.height * s.width > 0) {
      py::gil_scoped_release release;
      embervision::ops::roi_pool_forward(cdata<T>(input), cdata<T>(rois), s, scale, out.mutable_data(),
                                         argmax.mutable_data(),
                                         clamp_threads(threads, double(out.size()) * 16));
    }
    return py::make_tuple(out, argmax);
  });
}

py::object roi_pool_backward(const py::array& grad, const py::array& argmax, const py::array& rois,
                             int64_t batch, int64_t channels, int64_t height, int64_t width, int threads) {
  const std::string op = "roi_pool_backward";
  return dispatch(op, grad, [&](auto tag) -> py::object {
    using T = decltype(tag);
    check_rois<T>(op, rois, batch);
    check_ndim(op, "grad_output", grad, 4);
    RoiShape s{batch, channels, height, width, rois.shape(0), grad.shape(2), grad.shape(3)};
    check_grad(op, grad, {s.rois, channels, s.pooled_h, s.pooled_w});
    check_ndim(op, "argmax", argmax, 4);
    if (!is<int64_t>(argmax) || argmax.size() != grad.size())
      fail(op, "an int64 argmax of grad_output's shape");
    const int64_t* am = cdata<int64_t>(argmax);
    for (py::ssize_t i = 0; i < argmax.size(); ++i)
      if (am[i] < -1 || am[i] >= height * width) fail(op, "argmax entries in [-1, height * width)");
    auto gin = zeros<T>({batch, channels, height, width});
    if (gin.size() && grad.size()) {
      py::gil_scoped_release release;
      embervision::ops::roi_pool_backward(cdata<T>(grad), am, cdata<T>(rois), s, gin.mutable_data(),
                                          clamp_threads(threads, double(grad.size()) * 4));
    }
    return gin;
  });
}

py::object ps_roi_pool_forward(const py::array& input, const py::array& rois, double scale, int64_t ph,
                               int64_t pw, int threads) {
  const std::string op = "ps_roi_pool";
  RoiShape s = roi_shape(op, input, rois, ph, pw);
  check_ps_channels(op, s);
  return dispatch(op, input, [&](auto tag) -> py::object {
    using T = decltype(tag);
    check_rois<T>(op, rois, s.batch);
    auto out = zeros<T>({s.rois, s.channels / (ph * pw), ph, pw});
    if (out.size() && s.height * s.width > 0) {
      py::gil_scoped_release release;
      embervision::ops::ps_roi_pool_forward(cdata<T>(input), cdata<T>(rois), s, scale, out.mutable_data(),
                                            clamp_threads(threads, double(out.size()) * 16));
    }
    return out;
  });
}

py::object ps_roi_pool_backward(const py::array& grad, const py::array& rois, int64_t batch, int64_t channels,
                                int64_t height, int64_t width, double scale, int64_t ph, int64_t pw,
                                int threads) {
  const std::string op = "ps_roi_pool_backward";
  RoiShape s{batch, channels, height, width, rois.ndim() == 2 ? rois.shape(0) : 0, ph, pw};
  if (ph <= 0 || pw <= 0) fail(op, "a positive output_size");
  check_ps_channels(op, s);
  return dispatch(op, grad, [&](auto tag) -> py::object {
    using T = decltype(tag);
    check_rois<T>(op, rois, batch);
    check_grad(op, grad, {s.rois, channels / (ph * pw), ph, pw});
    auto gin = zeros<T>({batch, channels, height, width});
    if (gin.size() && grad.size()) {
      py::gil_scoped_release release;
      embervision::ops::ps_roi_pool_backward(cdata<T>(grad), cdata<T>(rois), s, scale, gin.mutable_data(),
                                             clamp_threads(threads, double(grad.size()) * 16));
    }
    return gin;
  });
}

// ---- nms ----------------------------------------------------------------------------------------

py::object nms(const py::array& boxes, double iou_threshold) {
  const std::string op = "nms";
  check_ndim(op, "boxes", boxes, 2);
  if (boxes.shape(1) != 4) fail(op, "boxes of shape [N, 4], but got " + shape_str(boxes));
  return dispatch(op, boxes, [&](auto tag) -> py::object {
    using T = decltype(tag);
    py::array_t<bool> keep(boxes.shape(0));
    static_assert(sizeof(bool) == sizeof(uint8_t), "bool arrays are byte arrays");
    auto* k = reinterpret_cast<uint8_t*>(keep.mutable_data());
    py::gil_scoped_release release;
    embervision::ops::nms_sorted(cdata<T>(boxes), boxes.shape(0), iou_threshold, k);
    return keep;
  });
}

// ---- deform_conv2d ------------------------------------------------------------------------------

struct DeformArgs {
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

// The shape of one deformable im2col: input [B, C, H, W] and offset [B, 2 * G * kh * kw, Ho, Wo]
// (G = offset groups) fix everything; the mask, when given, must be [B, G * kh * kw, Ho, Wo].
using OptArray = std::optional<py::array>;

DeformShape deform_shape(const std::string& op, int64_t B, int64_t C, int64_t H, int64_t W,
                         const py::array& offset, const OptArray& mask, const DeformArgs& a) {
  check_ndim(op, "offset", offset, 4);
  if (a.kh <= 0 || a.kw <= 0) fail(op, "a positive kernel size");
  const int64_t kk = a.kh * a.kw;
  if (offset.shape(0) != B || offset.shape(1) == 0 || offset.shape(1) % (2 * kk) != 0)
    fail(op, "offset of shape [" + std::to_string(B) + ", 2 * offset_groups * " + std::to_string(kk) +
                 ", out_h, out_w], but got " + shape_str(offset));
  const int64_t G = offset.shape(1) / (2 * kk);
  if (C % G != 0)
    fail(op, "input channels divisible by the offset groups " + std::to_string(G) + ", but got " +
                 std::to_string(C));
  if (mask) {
    const py::array& m = *mask;
    check_ndim(op, "mask", m, 4);
    if (m.shape(0) != B || m.shape(1) != G * kk || m.shape(2) != offset.shape(2) ||
        m.shape(3) != offset.shape(3))
      fail(op, "mask of shape [" + std::to_string(B) + ", " + std::to_string(G * kk) + ", " +
                   std::to_string(offset.shape(2)) + ", " + std::to_string(offset.shape(3)) + "], but got " +
                   shape_str(m));
  }
  return {B, C, H, W, a.kh, a.kw, a.sh, a.sw, a.ph, a.pw, a.dh, a.dw, G, offset.shape(2), offset.shape(3)};
}

template <class T>
void check_same_dtype(const std::string& op, const py::array& offset, const OptArray& mask) {
  if (!is<T>(offset) || (mask && !is<T>(*mask))) fail(op, "offset and mask of the input's dtype");
}

template <class T>
const T* mask_data(const OptArray& mask) {
  return mask ? cdata<T>(*mask) : nullptr;
}

py::object deform_im2col(const py::array& input, const py::array& offset, const OptArray& mask, DeformArgs a,
                         int threads) {
  const std::string op = "deform_conv2d";
  check_ndim(op, "input", input, 4);
  const DeformShape s =
      deform_shape(op, input.shape(0), input.shape(1), input.shape(2), input.shape(3), offset, mask, a);
  return dispatch(op, input, [&](auto tag) -> py::object {
    using T = decltype(tag);
    check_same_dtype<T>(op, offset, mask);
    auto cols = zeros<T>({s.batch, s.channels * s.kh * s.kw, s.out_h * s.out_w});
    if (cols.size() && s.height * s.width > 0) {
      const T* m = mask_data<T>(mask);
      py::gil_scoped_release release;
      embervision::ops::deform_im2col(cdata<T>(input), cdata<T>(offset), m, s, cols.mutable_data(),
                                      clamp_threads(threads, double(cols.size()) * 4));
    }
    return cols;
  });
}

py::object deform_col2im(const py::array& grad_cols, const py::array& offset, const OptArray& mask, int64_t B,
                         int64_t C, int64_t H, int64_t W, DeformArgs a, int threads) {
  const std::string op = "deform_conv2d_backward";
  const DeformShape s = deform_shape(op, B, C, H, W, offset, mask, a);
  return dispatch(op, grad_cols, [&](auto tag) -> py::object {
    using T = decltype(tag);
    check_same_dtype<T>(op, offset, mask);
    check_grad(op, grad_cols, {B, C * s.kh * s.kw, s.out_h * s.out_w});
    auto gin = zeros<T>({B, C, H, W});
    if (gin.size() && grad_cols.size()) {
      const T* m = mask_data<T>(mask);
      py::gil_scoped_release release;
      embervision::ops::deform_col2im(cdata<T>(grad_cols), cdata<T>(offset), m, s, gin.mutable_data(),
                                      clamp_threads(threads, double(grad_cols.size()) * 4));
    }
    return gin;
  });
}

py::object deform_col2im_coord(const py::array& grad_cols, const py::array& input, const py::array& offset,
                               const OptArray& mask, DeformArgs a, int threads) {
  const std::string op = "deform_conv2d_backward";
  check_ndim(op, "input", input, 4);
  const DeformShape s =
      deform_shape(op, input.shape(0), input.shape(1), input.shape(2), input.shape(3), offset, mask, a);
  return dispatch(op, input, [&](auto tag) -> py::object {
    using T = decltype(tag);
    check_same_dtype<T>(op, offset, mask);
    if (!is<T>(grad_cols)) fail(op, "grad_output of the input's dtype");
    check_grad(op, grad_cols, {s.batch, s.channels * s.kh * s.kw, s.out_h * s.out_w});
    auto goff = zeros<T>({offset.shape(0), offset.shape(1), offset.shape(2), offset.shape(3)});
    py::object gmask = py::none();
    T* gm = nullptr;
    if (mask) {
      auto arr = zeros<T>({s.batch, s.offset_groups * s.kh * s.kw, s.out_h, s.out_w});
      gm = arr.size() ? arr.mutable_data() : nullptr;
      gmask = arr;
    }
    if (goff.size() && s.height * s.width > 0) {
      const T* m = mask_data<T>(mask);
      py::gil_scoped_release release;
      embervision::ops::deform_col2im_coord(cdata<T>(grad_cols), cdata<T>(input), cdata<T>(offset), m, s,
                                            goff.mutable_data(), gm,
                                            clamp_threads(threads, double(grad_cols.size()) * 4));
    }
    return py::make_tuple(goff, gmask);
  });
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() =
      "embervision's detection kernels: roi_align, roi_pool, ps_roi_align, ps_roi_pool, nms, deform_conv2d";
  m.attr("built_for_core") = EMBERVISION_BUILT_FOR_CORE;
  m.attr("__version__") = EMBERVISION_VERSION;
  py::class_<DeformArgs>(m, "DeformArgs")
      .def(py::init<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>(), py::arg("kh"),
           py::arg("kw"), py::arg("stride_h"), py::arg("stride_w"), py::arg("pad_h"), py::arg("pad_w"),
           py::arg("dilation_h"), py::arg("dilation_w"));
  m.def("roi_align_forward", &roi_align_forward);
  m.def("roi_align_backward", &roi_align_backward);
  m.def("ps_roi_align_forward", &ps_roi_align_forward);
  m.def("ps_roi_align_backward", &ps_roi_align_backward);
  m.def("roi_pool_forward", &roi_pool_forward);
  m.def("roi_pool_backward", &roi_pool_backward);
  m.def("ps_roi_pool_forward", &ps_roi_pool_forward);
  m.def("ps_roi_pool_backward", &ps_roi_pool_backward);
  m.def("nms", &nms);
  m.def("deform_im2col", &deform_im2col);
  m.def("deform_col2im", &deform_col2im);
  m.def("deform_col2im_coord", &deform_col2im_coord);
}
