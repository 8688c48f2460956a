// Shared pieces of the FFmpeg bindings: error text, owning wrappers, Python-backed AVIOContext.
#pragma once

#include <pybind11/pybind11.h>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include <atomic>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

namespace emberaudio::ffmpeg {

namespace py = pybind11;
using Options = std::map<std::string, std::string>;

// FFmpeg's own text for an error code.
inline std::string av_error_text(int code) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(code, buf, sizeof(buf));
  return buf;
}

// A stream index out of range: Python's StreamIndexError, both an IndexError and (as torchaudio
// raises) a RuntimeError.
struct IndexOutOfRange : std::out_of_range {
  using std::out_of_range::out_of_range;
};

[[noreturn]] inline void throw_av(const std::string& what, int code) {
  throw std::runtime_error(what + " (" + av_error_text(code) + ")");
}

// Marks an object busy for one call. Decoding and encoding run without the GIL, so another Python
// thread could otherwise enter the same object mid-call; it gets a RuntimeError instead.
class BusyGuard {
 public:
  explicit BusyGuard(std::atomic<bool>& flag) : flag_(flag) {
    if (flag_.exchange(true))
      throw std::runtime_error("This object is in use by another thread (or a callback)");
  }
  ~BusyGuard() { flag_.store(false); }
  BusyGuard(const BusyGuard&) = delete;
  BusyGuard& operator=(const BusyGuard&) = delete;

 private:
  std::atomic<bool>& flag_;
};

// An AVDictionary built from Python options; `check_consumed` reports the keys FFmpeg did not use.
struct Dict {
  AVDictionary* d = nullptr;
  explicit Dict(const Options& opts) {
    for (const auto& [k, v] : opts) av_dict_set(&d, k.c_str(), v.c_str(), 0);
  }
  ~Dict() { av_dict_free(&d); }
  Dict(const Dict&) = delete;
  Dict& operator=(const Dict&) = delete;
  void check_consumed(const std::string& what) const {
    if (!d || av_dict_count(d) == 0) return;
    std::string keys;
    const AVDictionaryEntry* e = nullptr;
    while ((e = av_dict_get(d, "", e, AV_DICT_IGNORE_SUFFIX))) {
      if (!keys.empty()) keys += ", ";
      keys += e->key;
    }
    throw py::value_error("Unexpected " + what + " options: " + keys);
  }
};

inline py::dict dict_to_py(const AVDictionary* d) {
  py::dict out;
  const AVDictionaryEntry* e = nullptr;
  while ((e = av_dict_get(d, "", e, AV_DICT_IGNORE_SUFFIX))) out[py::str(e->key)] = py::str(e->value);
  return out;
}

struct FrameDeleter {
  void operator()(AVFrame* f) const { av_frame_free(&f); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct CodecDeleter {
  void operator()(AVCodecContext* c) const { avcodec_free_context(&c); }
};
struct GraphDeleter {
  void operator()(AVFilterGraph* g) const { avfilter_graph_free(&g); }
};

// An AVIOContext over a Python object with read(n) / write(b) and optional seek(offset, whence).
// The callbacks take the GIL: FFmpeg calls them from code that runs with the GIL released.
// A Python exception inside a callback becomes an FFmpeg error and its text is kept in `error`.
class PyIO {
 public:
  PyIO(py::object obj, int buffer_size, bool writable) : obj_(std::move(obj)) {
    if (buffer_size <= 0)
      throw py::value_error("buffer_size must be positive, got " + std::to_string(buffer_size));
    seekable_ = py::hasattr(obj_, "seek");
    auto* buf = static_cast<unsigned char*>(av_malloc(buffer_size));
    if (!buf) throw std::bad_alloc();
    ctx_ = avio_alloc_context(buf, buffer_size, writable ? 1 : 0, this, writable ? nullptr : &PyIO::read,
                              writable ? &PyIO::write : nullptr, seekable_ ? &PyIO::seek : nullptr);
    if (!ctx_) {
      av_free(buf);
      throw std::bad_alloc();
    }
    if (!seekable_) ctx_->seekable = 0;
  }
  ~PyIO() {
    if (ctx_) {
      av_freep(&ctx_->buffer);  // FFmpeg may have replaced the buffer we gave it
      avio_context_free(&ctx_);
    }
  }
  PyIO(const PyIO&) = delete;
  PyIO& operator=(const PyIO&) = delete;
  AVIOContext* ctx() { return ctx_; }
  // The Python error behind the last FFmpeg failure, as a suffix for messages.
  std::string error_suffix() const {
    return error_.empty() ? "" : "; the file-like object raised: " + error_;
  }

 private:
  static int read(void* opaque, uint8_t* buf, int size) {
    auto* self = static_cast<PyIO*>(opaque);
    py::gil_scoped_acquire gil;
    try {
      py::object data = self->obj_.attr("read")(size);
      if (data.is_none()) return AVERROR_EOF;
      py::buffer_info info = py::buffer(data).request();
      auto n = static_cast<py::ssize_t>(info.size * info.itemsize);
      if (n == 0) return AVERROR_EOF;
      if (n > size) {
        self->error_ = "read(" + std::to_string(size) + ") returned " + std::to_string(n) + " bytes";
        return AVERROR_EXTERNAL;
      }
      std::memcpy(buf, info.ptr, static_cast<size_t>(n));
      return static_cast<int>(n);
    } catch (const std::exception& e) {  // nothing may unwind through FFmpeg's C frames
      self->error_ = e.what();
      return AVERROR_EXTERNAL;
    }
  }
  static int write(void* opaque, uint8_t* buf, int size) {
    auto* self = static_cast<PyIO*>(opaque);
    py::gil_scoped_acquire gil;
    try {
      py::object r = self->obj_.attr("write")(py::bytes(reinterpret_cast<const char*>(buf), size));
      return r.is_none() ? size : r.cast<int>();
    } catch (const py::cast_error&) {
      self->error_ = "write() returned a non-integer";
      return AVERROR_EXTERNAL;
    } catch (const std::exception& e) {
      self->error_ = e.what();
      return AVERROR_EXTERNAL;
    }
  }
  static int64_t seek(void* opaque, int64_t offset, int whence) {
    auto* self = static_cast<PyIO*>(opaque);
    py::gil_scoped_acquire gil;
    try {
      whence &= ~AVSEEK_FORCE;
      if (whence == AVSEEK_SIZE) {
        // The size, found by seeking to the end and back.
        int64_t here = self->obj_.attr("seek")(0, 1).cast<int64_t>();
        int64_t end = self->obj_.attr("seek")(0, 2).cast<int64_t>();
        self->obj_.attr("seek")(here, 0);
        return end;
      }
      return self->obj_.attr("seek")(offset, whence).cast<int64_t>();
    } catch (const py::cast_error&) {
      self->error_ = "seek() returned a non-integer";
      return AVERROR_EXTERNAL;
    } catch (const std::exception& e) {
      self->error_ = e.what();
      return AVERROR_EXTERNAL;
    }
  }

  py::object obj_;
  AVIOContext* ctx_ = nullptr;
  bool seekable_ = false;
  std::string error_;
};

// Builds `src -> desc -> sink` in `graph`; `src_args` configure the (a)buffer source.
inline void configure_graph(AVFilterGraph* graph, bool audio, const std::string& src_args,
                            const std::string& desc, AVFilterContext** src, AVFilterContext** sink) {
  const AVFilter* buffersrc = avfilter_get_by_name(audio ? "abuffer" : "buffer");
  const AVFilter* buffersink = avfilter_get_by_name(audio ? "abuffersink" : "buffersink");
  int ret = avfilter_graph_create_filter(src, buffersrc, "in", src_args.c_str(), nullptr, graph);
  if (ret < 0) throw_av("Failed to create the filter source with \"" + src_args + "\"", ret);
  ret = avfilter_graph_create_filter(sink, buffersink, "out", nullptr, nullptr, graph);
  if (ret < 0) throw_av("Failed to create the filter sink", ret);
  AVFilterInOut* outputs = avfilter_inout_alloc();
  AVFilterInOut* inputs = avfilter_inout_alloc();
  if (!outputs || !inputs) {
    avfilter_inout_free(&outputs);
    avfilter_inout_free(&inputs);
    throw std::bad_alloc();
  }
  outputs->name = av_strdup("in");
  outputs->filter_ctx = *src;
  outputs->pad_idx = 0;
  outputs->next = nullptr;
  inputs->name = av_strdup("out");
  inputs->filter_ctx = *sink;
  inputs->pad_idx = 0;
  inputs->next = nullptr;
  ret = avfilter_graph_parse_ptr(graph, desc.c_str(), &inputs, &outputs, nullptr);
  avfilter_inout_free(&outputs);
  avfilter_inout_free(&inputs);
  if (ret < 0)
    throw py::value_error("Failed to parse the filter description \"" + desc + "\" (" + av_error_text(ret) +
                          ")");
  ret = avfilter_graph_config(graph, nullptr);
  if (ret < 0)
    throw py::value_error("Failed to configure the filter graph \"" + desc + "\" (" + av_error_text(ret) +
                          ")");
}

inline std::string layout_text(const AVChannelLayout& layout) {
  AVChannelLayout l{};
  if (layout.order == AV_CHANNEL_ORDER_UNSPEC || layout.order == AV_CHANNEL_ORDER_CUSTOM)
    av_channel_layout_default(&l, layout.nb_channels);
  else
    av_channel_layout_copy(&l, &layout);
  char buf[256] = {0};
  av_channel_layout_describe(&l, buf, sizeof(buf));
  av_channel_layout_uninit(&l);
  return buf;
}

inline std::string media_type_name(AVMediaType t) {
  const char* s = av_get_media_type_string(t);
  return s ? s : "unknown";
}

}  // namespace emberaudio::ffmpeg
