// embervision._video: Python bindings of the FFmpeg reader and writer (video.h). Inputs are
// contiguous NumPy arrays prepared by embervision.io.video / video_reader; decoded frames come
// back as NumPy arrays that own their buffers. FFmpeg work runs without the GIL.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "video.h"

namespace py = pybind11;
using namespace embervision::video;

namespace {

using Bytes = py::array_t<uint8_t, py::array::c_style>;
using Floats = py::array_t<float, py::array::c_style>;
using Options = std::vector<std::pair<std::string, std::string>>;

// Hands a vector to NumPy without a copy: the array's base capsule owns it.
template <typename T>
py::array to_array(std::vector<T>&& values, std::vector<py::ssize_t> shape) {
  auto* owned = new std::vector<T>(std::move(values));
  py::capsule base(owned, [](void* p) { delete static_cast<std::vector<T>*>(p); });
  return py::array(py::dtype::of<T>(), std::move(shape), {}, owned->data(), base);
}

std::unique_ptr<Reader> open_path(const std::string& path, int threads) {
  py::gil_scoped_release nogil;
  return std::make_unique<Reader>(path, std::vector<uint8_t>{}, false, threads);
}

std::unique_ptr<Reader> open_memory(const Bytes& data, int threads) {
  if (data.ndim() != 1 || data.size() == 0) throw py::value_error("expected a non-empty 1-D uint8 buffer");
  std::vector<uint8_t> copy(data.data(), data.data() + data.size());  // the reader keeps its own bytes
  py::gil_scoped_release nogil;
  return std::make_unique<Reader>(std::string(), std::move(copy), true, threads);
}

py::object next_frame(Reader& reader) {
  DecodedFrame frame;
  bool got;
  {
    py::gil_scoped_release nogil;
    got = reader.next(frame);
  }
  if (!got) return py::none();
  py::array data = frame.rgb.empty() && frame.height == 0
                       ? to_array(std::move(frame.samples), {frame.nb_samples, frame.channels})
                       : to_array(std::move(frame.rgb), {frame.height, frame.width, 3});
  return py::make_tuple(data, frame.pts, frame.key_frame);
}

void encode_file(const std::string& path, const Bytes& frames, int fps_num, int fps_den,
                 const std::string& codec, const Options& options, const std::optional<Floats>& audio,
                 int audio_rate, const std::string& audio_codec, const Options& audio_options) {
  if (frames.ndim() != 4 || frames.shape(3) != 3) throw py::value_error("expected (T, H, W, 3) uint8 frames");
  if (frames.shape(1) <= 0 || frames.shape(2) <= 0 || frames.shape(1) > 16384 || frames.shape(2) > 16384) {
    throw py::value_error("frame height and width must be in 1..16384");
  }
  if (fps_num <= 0 || fps_den <= 0) throw py::value_error("fps must be positive");
  VideoInput video;
  video.frames = frames.data();
  video.count = frames.shape(0);
  video.height = static_cast<int>(frames.shape(1));
  video.width = static_cast<int>(frames.shape(2));
  video.fps_num = fps_num;
  video.fps_den = fps_den;
  video.codec = codec;
  video.options = options;
  AudioInput sound;
  if (audio) {
    if (audio->ndim() != 2 || audio->shape(0) < 1 || audio->shape(0) > 64) {
      throw py::value_error("expected (channels, samples) float32 audio with 1 to 64 channels");
    }
    if (audio_rate <= 0) throw py::value_error("audio_fps must be positive");
    sound.samples = audio->data();
    sound.channels = static_cast<int>(audio->shape(0));
    sound.length = audio->shape(1);
    sound.rate = audio_rate;
    sound.codec = audio_codec;
    sound.options = audio_options;
  }
  py::gil_scoped_release nogil;
  write_video(path, video, audio ? &sound : nullptr);
}

}  // namespace

PYBIND11_MODULE(_video, m) {
  m.doc() = "Video decoding and encoding over FFmpeg (used by embervision.io).";
  m.attr("__version__") = EMBERVISION_VERSION;
  m.attr("built_for_core") = EMBERVISION_BUILT_FOR_CORE;
  m.attr("ffmpeg_version") = av_version_info();
  install_log_capture();
  py::register_exception<VideoError>(m, "VideoError", PyExc_RuntimeError);
  py::register_exception<ArgumentError>(m, "ArgumentError", PyExc_ValueError);

  py::class_<Reader>(m, "Reader", "Demuxes and decodes one stream of a media file at a time.")
      .def_static("open", &open_path, py::arg("path"), py::arg("num_threads"),
                  "A reader of the file at `path`.")
      .def_static("from_bytes", &open_memory, py::arg("data"), py::arg("num_threads"),
                  "A reader of an encoded file held in a 1-D uint8 array (copied).")
      .def(
          "streams",
          [](const Reader& r) {
            py::list out;
            for (const StreamInfo& s : r.streams()) {
              py::dict d;
              d["index"] = s.index;
              d["type"] = s.type;
              d["time_base"] = py::make_tuple(s.time_base_num, s.time_base_den);
              d["duration"] = s.duration;
              d["rate"] = s.rate;
              d["start_time"] = s.start_time;
              d["width"] = s.width;
              d["height"] = s.height;
              d["channels"] = s.channels;
              out.append(d);
            }
            return out;
          },
          "One dict per stream: index, type, time_base (num, den), duration (s), rate, start_time, sizes.")
      .def(
          "select",
          [](Reader& r, int index) {
            py::gil_scoped_release nogil;
            r.select(index);
          },
          py::arg("index"), "Opens the decoder of stream `index` and rewinds.")
      .def("next", &next_frame,
           "(frame, pts, key_frame) or None at the end: video (H, W, 3) uint8 RGB, audio (samples, channels) "
           "float32.")
      .def(
          "seek",
          [](Reader& r, int64_t pts, bool precise) {
            py::gil_scoped_release nogil;
            r.seek(pts, precise);
          },
          py::arg("pts"), py::arg("precise"),
          "To the keyframe at or before `pts`; precise: then to the first frame >= pts.")
      .def(
          "packet_pts",
          [](Reader& r) {
            py::gil_scoped_release nogil;
            return r.packet_pts();
          },
          "Every packet's pts of the selected stream, in file order; rewinds.");

  m.def("write_video", &encode_file, py::arg("path"), py::arg("frames"), py::arg("fps_num"),
        py::arg("fps_den"), py::arg("codec"), py::arg("options"), py::arg("audio"), py::arg("audio_rate"),
        py::arg("audio_codec"), py::arg("audio_options"),
        "Encodes (T, H, W, 3) uint8 RGB frames (and (C, L) float32 audio) into `path`.");
}
