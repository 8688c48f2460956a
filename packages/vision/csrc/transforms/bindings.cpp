// embervision._transforms: the image kernels of transforms.v2.functional (transforms.h) bound for
// Python. Images come in as NumPy views of ember tensors, [..., C, H, W] (any C-order layout is made
// contiguous here); every shape, dtype and argument is checked before a kernel runs, and the GIL is
// released while it does. Each call returns a new array.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "transforms.h"

namespace py = pybind11;
namespace tf = embervision::transforms;

#ifndef EMBERVISION_BUILT_FOR_CORE
#error "EMBERVISION_BUILT_FOR_CORE must name the ember core version this module is built against"
#endif

namespace {

std::string shape_str(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t d = 0; d < a.ndim(); ++d) s += (d ? ", " : "") + std::to_string(a.shape(d));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

template <class T>
bool is(const py::array& a) {
  return a.dtype().is(py::dtype::of<T>());
}

// Threads for about `work` element steps: one per 2^15 steps at most (starting a thread costs more
// than a smaller share saves), and never more than asked for.
int clamp_threads(int threads, double work) {
  const double useful = std::max(1.0, std::floor(work / double(1 << 15)));
  return static_cast<int>(std::max(1.0, std::min({double(threads), 256.0, useful})));
}

// The image as a C-contiguous array of rank >= min_ndim.
py::array image_arg(const std::string& op, const py::array& image, py::ssize_t min_ndim) {
  if (image.ndim() < min_ndim)
    throw py::value_error("[" + op + "] expected an image of shape (..., " + (min_ndim >= 3 ? "C, " : "") +
                          "H, W), but got shape " + shape_str(image));
  return py::array::ensure(image, py::array::c_style);
}

std::vector<py::ssize_t> shape_of(const py::array& a) {
  return {a.shape(), a.shape() + a.ndim()};
}

py::ssize_t lead(const py::array& a, py::ssize_t last) {  // product of all but the last `last` dims
  py::ssize_t n = 1;
  for (py::ssize_t d = 0; d + last < a.ndim(); ++d) n *= a.shape(d);
  return n;
}

[[noreturn]] void bad_dtype(const std::string& op, const py::array& a, const char* allowed) {
  throw py::type_error("[" + op + "] expected an image of dtype " + allowed + ", but got " +
                       std::string(py::str(a.dtype())));
}

// Calls fn(T{}) for a uint8, float32 or float64 image (TypeError otherwise).
template <class F>
py::array dispatch(const std::string& op, const py::array& a, F&& fn) {
  if (is<uint8_t>(a)) return fn(uint8_t{});
  if (is<float>(a)) return fn(float{});
  if (is<double>(a)) return fn(double{});
  bad_dtype(op, a, "uint8, float32 or float64");
}

void check_factor(const std::string& op, const char* name, double v) {
  if (v < 0)
    throw py::value_error("[" + op + "] expected " + name + " to be non-negative, but got " +
                          std::to_string(v));
}

int64_t channels_of(const std::string& op, const py::array& a, bool allow_one) {
  const int64_t c = a.shape(a.ndim() - 3);
  if (c != 3 && !(allow_one && c == 1))
    throw py::value_error("[" + op + "] expected an image with " + (allow_one ? "1 or 3" : "3") +
                          " channels, but got shape " + shape_str(a));
  return c;
}

tf::Interp interp_of(const std::string& mode) {
  if (mode == "nearest") return tf::Interp::kNearest;
  if (mode == "nearest-exact") return tf::Interp::kNearestExact;
  if (mode == "bilinear") return tf::Interp::kBilinear;
  if (mode == "bicubic") return tf::Interp::kBicubic;
  throw py::value_error(
      "[resize] expected interpolation 'nearest', 'nearest-exact', 'bilinear' or "
      "'bicubic', but got '" +
      mode + "'");
}

py::array resize(const py::array& image_in, int64_t out_h, int64_t out_w, const std::string& mode,
                 bool antialias, int threads) {
  const py::array image = image_arg("resize", image_in, 2);
  const tf::Interp interp = interp_of(mode);
  if (out_h <= 0 || out_w <= 0)
    throw py::value_error("[resize] expected a positive output size, but got (" + std::to_string(out_h) +
                          ", " + std::to_string(out_w) + ")");
  const int64_t ih = image.shape(image.ndim() - 2), iw = image.shape(image.ndim() - 1);
  const int64_t planes = lead(image, 2);
  if ((ih == 0 || iw == 0) && planes > 0)
    throw py::value_error("[resize] expected a non-empty image plane to resize, but got shape " +
                          shape_str(image));
  auto shape = shape_of(image);
  shape[shape.size() - 2] = out_h;
  shape[shape.size() - 1] = out_w;
  return dispatch("resize", image, [&](auto tag) -> py::array {
    using T = decltype(tag);
    py::array_t<T> out(shape);
    const T* in = static_cast<const T*>(image.data());
    T* o = out.mutable_data();
    const double work = double(planes) * double(std::max(ih, out_h)) * double(std::max(iw, out_w));
    const int t = clamp_threads(threads, work);
    py::gil_scoped_release release;
    tf::resize<T>(in, o, planes, ih, iw, out_h, out_w, interp, antialias, t);
    return out;
  });
}

// Runs kernel(in, out, threads) on an image of the same shape and dtype as the output.
template <class Kernel>
py::array same_shape(const std::string& op, const py::array& image, int threads, Kernel&& kernel) {
  return dispatch(op, image, [&](auto tag) -> py::array {
    using T = decltype(tag);
    py::array_t<T> out(shape_of(image));
    const T* in = static_cast<const T*>(image.data());
    T* o = out.mutable_data();
    const int t = clamp_threads(threads, double(image.size()));
    py::gil_scoped_release release;
    kernel(in, o, t);
    return out;
  });
}

py::array rgb_to_grayscale(const py::array& image_in, int threads) {
  const py::array image = image_arg("rgb_to_grayscale", image_in, 3);
  channels_of("rgb_to_grayscale", image, false);
  const int64_t images = lead(image, 3), hw = image.shape(image.ndim() - 2) * image.shape(image.ndim() - 1);
  auto shape = shape_of(image);
  shape[shape.size() - 3] = 1;
  return dispatch("rgb_to_grayscale", image, [&](auto tag) -> py::array {
    using T = decltype(tag);
    py::array_t<T> out(shape);
    const T* in = static_cast<const T*>(image.data());
    T* o = out.mutable_data();
    const int t = clamp_threads(threads, double(image.size()));
    py::gil_scoped_release release;
    tf::rgb_to_grayscale<T>(in, o, images, hw, t);
    return out;
  });
}

// The kernel call (__VA_ARGS__, which sees T, in, o and t) on an output shaped like the input.
#define EV_SAME(op, ...)                                                \
  same_shape(op, image, threads, [&](const auto* in, auto* o, int t) {  \
    using T = std::remove_const_t<std::remove_pointer_t<decltype(in)>>; \
    __VA_ARGS__;                                                        \
  })

py::array adjust_brightness(const py::array& image_in, double factor, int threads) {
  const py::array image = image_arg("adjust_brightness", image_in, 1);
  check_factor("adjust_brightness", "brightness_factor", factor);
  const int64_t n = image.size();
  return EV_SAME("adjust_brightness", tf::adjust_brightness<T>(in, o, n, factor, t));
}

py::array adjust_saturation(const py::array& image_in, double factor, int threads) {
  const py::array image = image_arg("adjust_saturation", image_in, 3);
  check_factor("adjust_saturation", "saturation_factor", factor);
  channels_of("adjust_saturation", image, false);
  const int64_t images = lead(image, 3), hw = image.shape(image.ndim() - 2) * image.shape(image.ndim() - 1);
  return EV_SAME("adjust_saturation", tf::adjust_saturation<T>(in, o, images, hw, factor, t));
}

py::array adjust_contrast(const py::array& image_in, double factor, int threads) {
  const py::array image = image_arg("adjust_contrast", image_in, 3);
  check_factor("adjust_contrast", "contrast_factor", factor);
  const int64_t c = channels_of("adjust_contrast", image, true);
  const int64_t images = lead(image, 3), hw = image.shape(image.ndim() - 2) * image.shape(image.ndim() - 1);
  if (hw == 0 && images * c > 0) return py::array(image.dtype(), shape_of(image));
  return EV_SAME("adjust_contrast", tf::adjust_contrast<T>(in, o, images, c, hw, factor, t));
}

py::array adjust_hue(const py::array& image_in, double factor, int threads) {
  const py::array image = image_arg("adjust_hue", image_in, 3);
  if (!(factor >= -0.5 && factor <= 0.5))
    throw py::value_error("[adjust_hue] expected hue_factor in [-0.5, 0.5], but got " +
                          std::to_string(factor));
  channels_of("adjust_hue", image, false);
  const int64_t images = lead(image, 3), hw = image.shape(image.ndim() - 2) * image.shape(image.ndim() - 1);
  return EV_SAME("adjust_hue", tf::adjust_hue<T>(in, o, images, hw, factor, t));
}

py::array adjust_sharpness(const py::array& image_in, double factor, int threads) {
  const py::array image = image_arg("adjust_sharpness", image_in, 3);
  check_factor("adjust_sharpness", "sharpness_factor", factor);
  const int64_t h = image.shape(image.ndim() - 2), w = image.shape(image.ndim() - 1);
  if (h <= 2 || w <= 2) return py::array::ensure(image.attr("copy")());  // no interior: unchanged
  const int64_t planes = lead(image, 2);
  return EV_SAME("adjust_sharpness", tf::adjust_sharpness<T>(in, o, planes, h, w, factor, t));
}

py::array posterize(const py::array& image_in, int bits, int threads) {
  const py::array image = image_arg("posterize", image_in, 1);
  if (bits < 0 || bits > 8)
    throw py::value_error("[posterize] expected bits in [0, 8], but got " + std::to_string(bits));
  const int64_t n = image.size();
  return EV_SAME("posterize", tf::posterize<T>(in, o, n, bits, t));
}

py::array solarize(const py::array& image_in, double threshold, int threads) {
  const py::array image = image_arg("solarize", image_in, 1);
  if (std::isnan(threshold)) throw py::value_error("[solarize] expected a threshold that is not NaN");
  const int64_t n = image.size();
  return EV_SAME("solarize", tf::solarize<T>(in, o, n, threshold, t));
}

py::array invert(const py::array& image_in, int threads) {
  const py::array image = image_arg("invert", image_in, 1);
  const int64_t n = image.size();
  return EV_SAME("invert", tf::invert<T>(in, o, n, t));
}

py::array autocontrast(const py::array& image_in, int threads) {
  const py::array image = image_arg("autocontrast", image_in, 3);
  const int64_t planes = lead(image, 2), hw = image.shape(image.ndim() - 2) * image.shape(image.ndim() - 1);
  if (hw == 0) return py::array(image.dtype(), shape_of(image));
  return EV_SAME("autocontrast", tf::autocontrast<T>(in, o, planes, hw, t));
}

py::array equalize(const py::array& image_in, int threads) {
  const py::array image = image_arg("equalize", image_in, 2);
  if (!is<uint8_t>(image)) bad_dtype("equalize", image, "uint8");
  const int64_t planes = lead(image, 2), hw = image.shape(image.ndim() - 2) * image.shape(image.ndim() - 1);
  py::array_t<uint8_t> out(shape_of(image));
  const uint8_t* in = static_cast<const uint8_t*>(image.data());
  uint8_t* o = out.mutable_data();
  const int t = clamp_threads(threads, double(image.size()));
  py::gil_scoped_release release;
  tf::equalize(in, o, planes, hw, t);
  return out;
}

py::array normalize(const py::array& image_in, const std::vector<double>& mean,
                    const std::vector<double>& std, int threads) {
  const py::array image = image_arg("normalize", image_in, 3);
  if (!is<float>(image) && !is<double>(image)) bad_dtype("normalize", image, "float32 or float64");
  const int64_t c = image.shape(image.ndim() - 3);
  if (static_cast<int64_t>(mean.size()) != c || static_cast<int64_t>(std.size()) != c)
    throw py::value_error("[normalize] expected mean and std of one value per channel (" + std::to_string(c) +
                          "), but got " + std::to_string(mean.size()) + " and " + std::to_string(std.size()));
  for (double s : std)
    if (s == 0) throw py::value_error("[normalize] std evaluated to zero, leading to division by zero.");
  const int64_t images = lead(image, 3), hw = image.shape(image.ndim() - 2) * image.shape(image.ndim() - 1);
  return EV_SAME(
      "normalize", if constexpr (!std::is_same_v<T, uint8_t>) {
        tf::normalize<T>(in, o, images, c, hw, mean.data(), std.data(), t);
      });
}

}  // namespace

PYBIND11_MODULE(_transforms, m) {
  m.doc() = "embervision's image transform kernels: resize and the color adjustments, uint8 and float";
  m.attr("built_for_core") = EMBERVISION_BUILT_FOR_CORE;
  m.attr("__version__") = EMBERVISION_VERSION;
  const auto th = py::arg("threads") = 1;
  m.def("resize", &resize, py::arg("image"), py::arg("height"), py::arg("width"), py::arg("interpolation"),
        py::arg("antialias"), th);
  m.def("rgb_to_grayscale", &rgb_to_grayscale, py::arg("image"), th);
  m.def("adjust_brightness", &adjust_brightness, py::arg("image"), py::arg("brightness_factor"), th);
  m.def("adjust_saturation", &adjust_saturation, py::arg("image"), py::arg("saturation_factor"), th);
  m.def("adjust_contrast", &adjust_contrast, py::arg("image"), py::arg("contrast_factor"), th);
  m.def("adjust_hue", &adjust_hue, py::arg("image"), py::arg("hue_factor"), th);
  m.def("adjust_sharpness", &adjust_sharpness, py::arg("image"), py::arg("sharpness_factor"), th);
  m.def("posterize", &posterize, py::arg("image"), py::arg("bits"), th);
  m.def("solarize", &solarize, py::arg("image"), py::arg("threshold"), th);
  m.def("invert", &invert, py::arg("image"), th);
  m.def("autocontrast", &autocontrast, py::arg("image"), th);
  m.def("equalize", &equalize, py::arg("image"), th);
  m.def("normalize", &normalize, py::arg("image"), py::arg("mean"), py::arg("std"), th);
}
