// embervision._image: Python bindings of the JPEG/PNG codecs (codecs.h). Inputs are contiguous
// NumPy arrays prepared by embervision.io.image; outputs are NumPy arrays that own the decoded
// buffers. Work runs without the GIL.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "codecs.h"

namespace py = pybind11;
using namespace embervision::image;

namespace {

using Bytes = py::array_t<uint8_t, py::array::c_style>;

// Hands a vector to NumPy without a copy: the array's base capsule owns it.
py::array to_array(std::vector<uint8_t>&& bytes, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<uint8_t>(std::move(bytes));
  py::capsule base(owned, [](void* p) { delete static_cast<std::vector<uint8_t>*>(p); });
  return py::array(py::dtype::of<uint8_t>(), std::move(shape), {}, owned->data(), base);
}

// The same for a decoded image's buffer (uint8, or int32 when `wide`).
py::array to_array(Buffer&& bytes, std::vector<py::ssize_t> shape, bool wide) {
  uint8_t* owned = bytes.data.release();
  py::capsule base(owned, [](void* p) { delete[] static_cast<uint8_t*>(p); });
  if (wide) {
    return py::array(py::dtype::of<int32_t>(), std::move(shape), {}, reinterpret_cast<int32_t*>(owned), base);
  }
  return py::array(py::dtype::of<uint8_t>(), std::move(shape), {}, owned, base);
}

ReadMode checked_mode(int mode) {
  if (mode < 0 || mode > 4)
    throw py::value_error("image read mode must be 0..4, got " + std::to_string(mode));
  return static_cast<ReadMode>(mode);
}

std::pair<const uint8_t*, size_t> encoded(const Bytes& data, const char* op) {
  if (data.ndim() != 1 || data.size() == 0) {
    throw std::runtime_error(std::string("[") + op + "] expected a non-empty 1-D uint8 buffer");
  }
  return {data.data(), static_cast<size_t>(data.size())};
}

// (image (C, H, W), EXIF orientation 1..8)
py::tuple decoded(Image&& image) {
  const int orientation = image.orientation;
  const bool wide = image.wide;
  std::vector<py::ssize_t> shape = {image.channels, image.height, image.width};
  return py::make_tuple(to_array(std::move(image.bytes), std::move(shape), wide), orientation);
}

// (C, H, W) uint8 planes: C = 1 or 3, or 1 to 4 with `alpha` (gray+alpha, RGBA); H, W > 0.
// The Python layer checks the same with torchvision's messages; this guards direct calls.
void check_planes(const Bytes& planes, const char* op, bool alpha) {
  if (planes.ndim() != 3)
    throw std::runtime_error(std::string("[") + op + "] expected a 3-D (C, H, W) array");
  const auto c = planes.shape(0);
  if (!(c == 1 || c == 3 || (alpha && (c == 2 || c == 4)))) {
    throw std::runtime_error(std::string("[") + op + "] unsupported channel count " + std::to_string(c));
  }
  if (planes.shape(1) <= 0 || planes.shape(2) <= 0 || planes.shape(1) > INT32_MAX ||
      planes.shape(2) > INT32_MAX) {
    throw std::runtime_error(std::string("[") + op +
                             "] expected a non-empty image of at most 2^31-1 rows and columns");
  }
}

}  // namespace

PYBIND11_MODULE(_image, m) {
  m.doc() = "JPEG and PNG codecs over libjpeg-turbo and libpng (used by embervision.io).";
  m.attr("__version__") = EMBERVISION_VERSION;
  m.attr("built_for_core") = EMBERVISION_BUILT_FOR_CORE;
  py::register_exception<CodecError>(m, "CodecError", PyExc_RuntimeError);

  m.def(
      "decode_jpeg",
      [](const Bytes& data, int mode, bool read_orientation) {
        auto [ptr, size] = encoded(data, "decode_jpeg");
        const ReadMode read_mode = checked_mode(mode);
        Image image;
        {
          py::gil_scoped_release nogil;
          image = decode_jpeg(ptr, size, read_mode, read_orientation);
        }
        return decoded(std::move(image));
      },
      py::arg("data"), py::arg("mode"), py::arg("read_orientation"),
      "(uint8 (C, H, W) array, EXIF orientation) from JPEG bytes.");
  m.def(
      "decode_png",
      [](const Bytes& data, int mode, bool read_orientation) {
        auto [ptr, size] = encoded(data, "decode_png");
        const ReadMode read_mode = checked_mode(mode);
        Image image;
        {
          py::gil_scoped_release nogil;
          image = decode_png(ptr, size, read_mode, read_orientation);
        }
        return decoded(std::move(image));
      },
      py::arg("data"), py::arg("mode"), py::arg("read_orientation"),
      "((C, H, W) array, uint8 or int32 for 16-bit files; EXIF orientation) from PNG bytes.");
  m.def(
      "encode_jpeg",
      [](const Bytes& planes, int quality) {
        check_planes(planes, "encode_jpeg", false);
        if (quality < 1 || quality > 100)
          throw py::value_error("Image quality should be a positive number between 1 and 100");
        std::vector<uint8_t> out;
        {
          py::gil_scoped_release nogil;
          out = encode_jpeg(planes.data(), static_cast<int>(planes.shape(0)),
                            static_cast<int>(planes.shape(1)), static_cast<int>(planes.shape(2)), quality);
        }
        const auto size = static_cast<py::ssize_t>(out.size());
        return to_array(std::move(out), {size});
      },
      py::arg("planes"), py::arg("quality"), "JPEG bytes from uint8 (C, H, W) planes, C = 1 or 3.");
  m.def(
      "encode_png",
      [](const Bytes& planes, int compression_level) {
        check_planes(planes, "encode_png", true);
        if (compression_level < 0 || compression_level > 9)
          throw py::value_error("Compression level should be between 0 and 9");
        std::vector<uint8_t> out;
        {
          py::gil_scoped_release nogil;
          out =
              encode_png(planes.data(), static_cast<int>(planes.shape(0)), static_cast<int>(planes.shape(1)),
                         static_cast<int>(planes.shape(2)), compression_level);
        }
        const auto size = static_cast<py::ssize_t>(out.size());
        return to_array(std::move(out), {size});
      },
      py::arg("planes"), py::arg("compression_level"), "PNG bytes from uint8 (C, H, W) planes, C = 1 to 4.");
  m.def(
      "exif_orientation",
      [](const Bytes& tiff) { return exif_orientation(tiff.data(), static_cast<size_t>(tiff.size())); },
      py::arg("tiff"), "The IFD0 Orientation tag of a TIFF-structured EXIF block, or 1.");
}
