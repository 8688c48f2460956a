// emberaudio._ffmpeg: StreamReader and StreamWriter over FFmpeg's libraries.
#include "reader.h"
#include "writer.h"

namespace {
PyObject* g_index_error = nullptr;
}

PYBIND11_MODULE(_ffmpeg, m) {
  m.doc() = "emberaudio's FFmpeg bindings (StreamReader, StreamWriter); use emberaudio.io.";
  m.attr("built_for_core") = EMBERAUDIO_BUILT_FOR_CORE;
  m.attr("__version__") = EMBERAUDIO_VERSION;
  av_log_set_level(AV_LOG_ERROR);
  m.def("set_log_level", [](int level) { av_log_set_level(level); });
  m.def("get_versions", []() {
    pybind11::dict d;
    auto v = [](unsigned x) {
      return pybind11::make_tuple(AV_VERSION_MAJOR(x), AV_VERSION_MINOR(x), AV_VERSION_MICRO(x));
    };
    d["libavutil"] = v(avutil_version());
    d["libavcodec"] = v(avcodec_version());
    d["libavformat"] = v(avformat_version());
    d["libavfilter"] = v(avfilter_version());
    return d;
  });
  // IndexError for Python, RuntimeError for code written against torchaudio.
  pybind11::tuple bases =
      pybind11::make_tuple(pybind11::handle(PyExc_IndexError), pybind11::handle(PyExc_RuntimeError));
  PyObject* index_error = PyErr_NewExceptionWithDoc("emberaudio._ffmpeg.StreamIndexError",
                                                    "A stream index out of range.", bases.ptr(), nullptr);
  if (!index_error) throw pybind11::error_already_set();
  g_index_error = index_error;  // the module attribute below keeps it alive
  m.attr("StreamIndexError") = pybind11::reinterpret_steal<pybind11::object>(index_error);
  pybind11::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const emberaudio::ffmpeg::IndexOutOfRange& e) {
      PyErr_SetString(g_index_error, e.what());
    }
  });
  emberaudio::ffmpeg::bind_reader(m);
  emberaudio::ffmpeg::bind_writer(m);
}
