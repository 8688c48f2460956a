// embervision._video: owning wrappers for FFmpeg's objects and its error reporting. Every AV*
// object the module creates lives in one of these, so an exception on any path frees it.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>
}

namespace embervision::video {

// An FFmpeg failure or unreadable media: becomes a Python RuntimeError.
struct VideoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Bad arguments (an unknown encoder, no such stream): becomes a Python ValueError.
struct ArgumentError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// Throws VideoError("<what>: <av_strerror(code)>[ (<FFmpeg's last logged error>)]") when code < 0.
void check(int code, const std::string& what);
[[noreturn]] void fail(int code, const std::string& what);

// Note [FFmpeg log capture]: FFmpeg's log callback is process-wide, and a decoder says what was
// wrong only through it. embervision installs one callback at import: while a LogCapture lives
// on a thread (one per reader/writer operation), that thread's error-level lines are kept
// silently for the exception fail() raises; every other line (other threads, other libraries
// in the process, such as emberaudio or PyAV, and FFmpeg's own worker threads) goes to FFmpeg's
// default callback, so it prints as it would without embervision.
void install_log_capture();
void clear_logged_error();  // forgets this thread's last captured line

class LogCapture {
 public:
  LogCapture();  // clears this thread's captured line and starts capturing on this thread
  ~LogCapture();
  LogCapture(const LogCapture&) = delete;
  LogCapture& operator=(const LogCapture&) = delete;
};

struct FormatInputDeleter {
  void operator()(AVFormatContext* p) const { avformat_close_input(&p); }
};
struct FormatOutputDeleter {
  void operator()(AVFormatContext* p) const {
    if (p->pb != nullptr && !(p->oformat->flags & AVFMT_NOFILE)) avio_closep(&p->pb);
    avformat_free_context(p);
  }
};
struct CodecDeleter {
  void operator()(AVCodecContext* p) const { avcodec_free_context(&p); }
};
struct FrameDeleter {
  void operator()(AVFrame* p) const { av_frame_free(&p); }
};
struct PacketDeleter {
  void operator()(AVPacket* p) const { av_packet_free(&p); }
};
struct SwsDeleter {
  void operator()(SwsContext* p) const { sws_freeContext(p); }
};
struct SwrDeleter {
  void operator()(SwrContext* p) const { swr_free(&p); }
};
struct AvioDeleter {
  void operator()(AVIOContext* p) const {
    av_freep(&p->buffer);  // the buffer may have been reallocated by FFmpeg: free its current one
    avio_context_free(&p);
  }
};

using FormatInput = std::unique_ptr<AVFormatContext, FormatInputDeleter>;
using FormatOutput = std::unique_ptr<AVFormatContext, FormatOutputDeleter>;
using Codec = std::unique_ptr<AVCodecContext, CodecDeleter>;
using Frame = std::unique_ptr<AVFrame, FrameDeleter>;
using Packet = std::unique_ptr<AVPacket, PacketDeleter>;
using Sws = std::unique_ptr<SwsContext, SwsDeleter>;
using Swr = std::unique_ptr<SwrContext, SwrDeleter>;
using Avio = std::unique_ptr<AVIOContext, AvioDeleter>;

// An AVDictionary that frees itself; `get` hands FFmpeg the address it fills and consumes.
class Dict {
 public:
  Dict() = default;
  Dict(const Dict&) = delete;
  Dict& operator=(const Dict&) = delete;
  ~Dict() { av_dict_free(&dict_); }
  void set(const std::string& key, const std::string& value) {
    check(av_dict_set(&dict_, key.c_str(), value.c_str(), 0), "av_dict_set(" + key + ")");
  }
  AVDictionary** get() { return &dict_; }

 private:
  AVDictionary* dict_ = nullptr;
};

Frame make_frame();
Packet make_packet();

}  // namespace embervision::video
