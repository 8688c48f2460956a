// FFmpeg error messages: av_strerror's text, plus the library's last logged error on this thread
// (the decoders say what was wrong only through av_log; Note [FFmpeg log capture] in ffmpeg.h).

#include "ffmpeg.h"

#include <cstdarg>
#include <cstdio>
#include <mutex>

namespace embervision::video {

namespace {

thread_local std::string logged_error;
thread_local int capturing = 0;  // live LogCaptures on this thread (Note [FFmpeg log capture])

extern "C" void capture_log(void* avcl, int level, const char* fmt, va_list args) {
  if (capturing == 0) {
    av_log_default_callback(avcl, level, fmt, args);
    return;
  }
  if (level > AV_LOG_ERROR) return;
  char line[512];
  int prefix = 1;
  av_log_format_line2(avcl, level, fmt, args, line, sizeof line, &prefix);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (!text.empty()) logged_error = text;
}

}  // namespace

void install_log_capture() {
  static std::once_flag once;
  std::call_once(once, [] { av_log_set_callback(capture_log); });
}

void clear_logged_error() {
  logged_error.clear();
}

LogCapture::LogCapture() {
  logged_error.clear();
  ++capturing;
}

LogCapture::~LogCapture() {
  --capturing;
}

void fail(int code, const std::string& what) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof text);
  std::string message = what + ": " + text;
  if (!logged_error.empty()) message += " (" + logged_error + ")";
  logged_error.clear();
  throw VideoError(message);
}

void check(int code, const std::string& what) {
  if (code < 0) fail(code, what);
}

Frame make_frame() {
  Frame frame(av_frame_alloc());
  if (!frame) fail(AVERROR(ENOMEM), "av_frame_alloc");
  return frame;
}

Packet make_packet() {
  Packet packet(av_packet_alloc());
  if (!packet) fail(AVERROR(ENOMEM), "av_packet_alloc");
  return packet;
}

}  // namespace embervision::video
