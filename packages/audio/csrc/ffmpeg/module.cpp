// emberaudio._ffmpeg: StreamReader and StreamWriter over FFmpeg's libraries.
#include "reader.h"
#include "writer.h"

PYBIND11_MODULE(_ffmpeg, m) {
  m.doc() = "emberaudio's FFmpeg bindings (StreamReader, StreamWriter); use emberaudio.io.";
  m.attr("built_for_core") = EMBERAUDIO_BUILT_FOR_CORE;
  m.attr("__version__") = EMBERAUDIO_VERSION;
  av_log_set_level(AV_LOG_ERROR);
  m.def("set_log_level", [](int level) { av_log_set_level(level); });
  m.def("get_versions", []() {
    pybind11::dict d;
    auto v = [](unsigned x) { return pybind11::make_tuple(AV_VERSION_MAJOR(x), AV_VERSION_MINOR(x), AV_VERSION_MICRO(x)); };
    d["libavutil"] = v(avutil_version());
    d["libavcodec"] = v(avcodec_version());
    d["libavformat"] = v(avformat_version());
    d["libavfilter"] = v(avfilter_version());
    return d;
  });
  emberaudio::ffmpeg::bind_reader(m);
  emberaudio::ffmpeg::bind_writer(m);
}
