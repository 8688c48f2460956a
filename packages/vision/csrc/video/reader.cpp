// Reader: demuxing with libavformat (a path, or bytes through a custom AVIOContext), decoding with
// libavcodec, RGB24 conversion with libswscale and float32 conversion with libswresample.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

extern "C" {
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
}

#include "video.h"

namespace embervision::video {

namespace {

constexpr int kAvioBufferSize = 1 << 16;
// Seeking here lands on the first packet (an audio stream's priming packets included).
constexpr int64_t kStart = std::numeric_limits<int64_t>::min() / 4;  // room for the arithmetic below

extern "C" int read_memory(void* opaque, uint8_t* buf, int size) {
  auto* m = static_cast<Reader::Memory*>(opaque);
  const size_t left = m->data.size() - m->pos;
  if (left == 0) return AVERROR_EOF;
  const size_t n = std::min(left, static_cast<size_t>(size));
  std::memcpy(buf, m->data.data() + m->pos, n);
  m->pos += n;
  return static_cast<int>(n);
}

extern "C" int64_t seek_memory(void* opaque, int64_t offset, int whence) {
  auto* m = static_cast<Reader::Memory*>(opaque);
  const auto size = static_cast<int64_t>(m->data.size());
  int64_t target;
  switch (whence & ~AVSEEK_FORCE) {
    case AVSEEK_SIZE: return size;
    case SEEK_SET: target = offset; break;
    case SEEK_CUR: target = static_cast<int64_t>(m->pos) + offset; break;
    case SEEK_END: target = size + offset; break;
    default: return AVERROR(EINVAL);
  }
  if (target < 0 || target > size) return AVERROR(EINVAL);
  m->pos = static_cast<size_t>(target);
  return target;
}

const char* type_name(AVMediaType type) {
  const char* name = av_get_media_type_string(type);
  return name != nullptr ? name : "unknown";
}

}  // namespace

Reader::Reader(const std::string& path, std::vector<uint8_t> data, bool from_memory, int threads)
    : threads_(threads), packet_(make_packet()), frame_(make_frame()) {
  const LogCapture capture;
  AVFormatContext* raw = avformat_alloc_context();
  if (raw == nullptr) fail(AVERROR(ENOMEM), "avformat_alloc_context");
  if (from_memory) {
    memory_.data = std::move(data);
    auto* buffer = static_cast<uint8_t*>(av_malloc(kAvioBufferSize));
    if (buffer == nullptr) {
      avformat_free_context(raw);
      fail(AVERROR(ENOMEM), "av_malloc");
    }
    avio_.reset(avio_alloc_context(buffer, kAvioBufferSize, 0, &memory_, read_memory, nullptr, seek_memory));
    if (!avio_) {
      av_free(buffer);
      avformat_free_context(raw);
      fail(AVERROR(ENOMEM), "avio_alloc_context");
    }
    raw->pb = avio_.get();
    raw->flags |= AVFMT_FLAG_CUSTOM_IO;
  }
  // On failure avformat_open_input frees `raw` itself.
  const int opened = avformat_open_input(&raw, from_memory ? "" : path.c_str(), nullptr, nullptr);
  if (opened < 0)
    fail(opened,
         from_memory ? std::string("could not open the in-memory video") : "could not open '" + path + "'");
  format_.reset(raw);
  check(avformat_find_stream_info(format_.get(), nullptr), "avformat_find_stream_info");
}

Reader::~Reader() {
  av_channel_layout_uninit(&swr_layout_);
}

std::vector<StreamInfo> Reader::streams() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<StreamInfo> out;
  for (unsigned i = 0; i < format_->nb_streams; ++i) {
    const AVStream* s = format_->streams[i];
    const AVCodecParameters* par = s->codecpar;
    StreamInfo info;
    info.index = static_cast<int>(i);
    info.type = type_name(par->codec_type);
    info.time_base_num = s->time_base.num;
    info.time_base_den = s->time_base.den;
    if (s->duration != AV_NOPTS_VALUE && s->duration > 0) {
      info.duration = static_cast<double>(s->duration) * av_q2d(s->time_base);
    } else if (format_->duration != AV_NOPTS_VALUE && format_->duration > 0) {
      info.duration = static_cast<double>(format_->duration) / AV_TIME_BASE;
    } else {
      info.duration = std::numeric_limits<double>::quiet_NaN();
    }
    if (par->codec_type == AVMEDIA_TYPE_VIDEO) {
      AVRational rate = s->avg_frame_rate.num != 0 ? s->avg_frame_rate : s->r_frame_rate;
      info.rate = rate.den != 0 ? av_q2d(rate) : 0.0;
      info.width = par->width;
      info.height = par->height;
    } else if (par->codec_type == AVMEDIA_TYPE_AUDIO) {
      info.rate = par->sample_rate;
      info.channels = par->ch_layout.nb_channels;
    }
    info.start_time = s->start_time != AV_NOPTS_VALUE ? s->start_time : 0;
    out.push_back(info);
  }
  return out;
}

void Reader::select(int index) {
  std::lock_guard<std::mutex> lock(mutex_);
  const LogCapture capture;
  if (index < 0 || index >= static_cast<int>(format_->nb_streams)) {
    throw ArgumentError("stream index " + std::to_string(index) + " is out of range");
  }
  const AVCodecParameters* par = format_->streams[index]->codecpar;
  if (par->codec_type != AVMEDIA_TYPE_VIDEO && par->codec_type != AVMEDIA_TYPE_AUDIO) {
    throw ArgumentError("stream " + std::to_string(index) + " is neither video nor audio");
  }
  const AVCodec* codec = avcodec_find_decoder(par->codec_id);
  if (codec == nullptr) {
    throw VideoError(std::string("no decoder for codec '") + avcodec_get_name(par->codec_id) + "'");
  }
  Codec decoder(avcodec_alloc_context3(codec));
  if (!decoder) fail(AVERROR(ENOMEM), "avcodec_alloc_context3");
  check(avcodec_parameters_to_context(decoder.get(), par), "avcodec_parameters_to_context");
  decoder->pkt_timebase = format_->streams[index]->time_base;
  decoder->thread_count = threads_;  // 0: FFmpeg picks
  check(avcodec_open2(decoder.get(), codec, nullptr), "avcodec_open2");
  decoder_ = std::move(decoder);
  stream_ = index;
  for (unsigned i = 0; i < format_->nb_streams; ++i) {
    format_->streams[i]->discard = static_cast<int>(i) == index ? AVDISCARD_DEFAULT : AVDISCARD_ALL;
  }
  seek_locked(kStart);
  skip_below_ = std::numeric_limits<int64_t>::min();
  has_pending_ = false;
}

void Reader::seek_locked(int64_t pts) {
  // The keyframe at or before `pts`; before the first keyframe (or where the demuxer has no
  // index) the nearest position, which is the start.
  int r = av_seek_frame(format_.get(), stream_, pts, AVSEEK_FLAG_BACKWARD);
  if (r < 0) {
    r = avformat_seek_file(format_.get(), stream_, std::numeric_limits<int64_t>::min(), pts,
                           std::numeric_limits<int64_t>::max(), 0);
  }
  if (r < 0) {
    // Some inputs cannot seek at all: rewinding the byte stream restarts them.
    clear_logged_error();
    if (format_->pb == nullptr || avio_seek(format_->pb, 0, SEEK_SET) < 0) fail(r, "seeking failed");
    check(avformat_flush(format_.get()), "avformat_flush");
  }
  clear_logged_error();
  av_frame_unref(frame_.get());
  avcodec_flush_buffers(decoder_.get());
  has_pending_ = false;
  draining_ = false;
  last_pts_ = AV_NOPTS_VALUE;
}

void Reader::seek(int64_t pts, bool precise) {
  std::lock_guard<std::mutex> lock(mutex_);
  const LogCapture capture;
  if (!decoder_) throw ArgumentError("no stream is selected");
  has_pending_ = false;
  skip_below_ = std::numeric_limits<int64_t>::min();
  pts = std::clamp(pts, kStart, -kStart);
  // Note [precise seek]: the demuxer's keyframe "at or before" may be judged by dts, some demuxers
  // (Matroska near its last cue) land nowhere, and an audio decoder needs the packet before the
  // target to rebuild its first samples. So while the first frame decoded after the seek is
  // missing or past the target, seek again further back (one second, then doubling, at last to
  // the start). A precise seek then skips the frames before the target; a keyframe seek returns
  // the frame it landed on.
  const AVRational tb = format_->streams[stream_]->time_base;
  const int64_t second = std::max<int64_t>(1, av_rescale_q(1, AVRational{1, 1}, tb));
  int64_t back = precise && decoder_->codec_type == AVMEDIA_TYPE_AUDIO ? second : 0;
  for (int attempt = 0;; ++attempt) {
    const bool at_start = attempt >= 40 || pts - kStart <= back;
    seek_locked(at_start ? kStart : pts - back);
    const bool decoded = decode_locked();
    if (decoded && (at_start || frame_pts_ <= pts)) break;
    if (!decoded && at_start) return;  // the stream has no frames
    av_frame_unref(frame_.get());
    back = back == 0 ? second : back * 2;
  }
  has_pending_ = true;
  if (precise) skip_below_ = pts;
}

bool Reader::next(DecodedFrame& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  const LogCapture capture;
  if (!decoder_) throw ArgumentError("no stream is selected");
  for (;;) {
    if (!has_pending_ && !decode_locked()) return false;
    has_pending_ = false;
    if (frame_pts_ < skip_below_) {
      av_frame_unref(frame_.get());
      continue;
    }
    skip_below_ = std::numeric_limits<int64_t>::min();
    out.pts = frame_pts_;
#if LIBAVUTIL_VERSION_INT >= AV_VERSION_INT(58, 7, 100)
    out.key_frame = (frame_->flags & AV_FRAME_FLAG_KEY) != 0;
#else
    out.key_frame = frame_->key_frame != 0;
#endif
    if (decoder_->codec_type == AVMEDIA_TYPE_VIDEO) {
      convert_video(frame_.get(), out);
    } else {
      convert_audio(frame_.get(), out);
    }
    av_frame_unref(frame_.get());
    return true;
  }
}

bool Reader::decode_locked() {
  for (;;) {
    const int received = avcodec_receive_frame(decoder_.get(), frame_.get());
    if (received == 0) {
      int64_t pts = frame_->best_effort_timestamp;
      if (pts == AV_NOPTS_VALUE) pts = frame_->pts;
      if (pts == AV_NOPTS_VALUE) pts = last_pts_ == AV_NOPTS_VALUE ? 0 : last_pts_ + 1;  // never decreasing
      last_pts_ = pts;
      frame_pts_ = pts;
      return true;
    }
    if (received == AVERROR_EOF) return false;
    if (received != AVERROR(EAGAIN)) fail(received, "decoding failed");
    if (draining_) return false;
    const int read = av_read_frame(format_.get(), packet_.get());
    if (read == AVERROR_EOF) {
      draining_ = true;
      check(avcodec_send_packet(decoder_.get(), nullptr), "decoding failed");
      continue;
    }
    if (read < 0) fail(read, "reading the file failed");
    if (packet_->stream_index != stream_) {
      av_packet_unref(packet_.get());
      continue;
    }
    const int sent = avcodec_send_packet(decoder_.get(), packet_.get());
    av_packet_unref(packet_.get());
    if (sent < 0 && sent != AVERROR(EAGAIN)) fail(sent, "decoding failed");
  }
}

void Reader::convert_video(const AVFrame* frame, DecodedFrame& out) {
  const int w = frame->width, h = frame->height;
  if (w <= 0 || h <= 0) throw VideoError("decoding failed: a frame has no pixels");
  const auto format = static_cast<AVPixelFormat>(frame->format);
  sws_.reset(sws_getCachedContext(sws_.release(), w, h, format, w, h, AV_PIX_FMT_RGB24, SWS_BICUBIC, nullptr,
                                  nullptr, nullptr));
  if (!sws_)
    throw VideoError(std::string("cannot convert pixel format '") +
                     (av_get_pix_fmt_name(format) ? av_get_pix_fmt_name(format) : "?") + "' to rgb24");
  // The frame's own matrix and range (as FFmpeg's scale filter does), into full-range RGB.
  int* inv_table = nullptr;
  int* table = nullptr;
  int src_range = 0, dst_range = 0, brightness = 0, contrast = 0, saturation = 0;
  if (sws_getColorspaceDetails(sws_.get(), &inv_table, &src_range, &table, &dst_range, &brightness, &contrast,
                               &saturation) >= 0) {
    const int space = frame->colorspace == AVCOL_SPC_UNSPECIFIED ? SWS_CS_DEFAULT : frame->colorspace;
    const int* coefficients = sws_getCoefficients(space);
    const bool full = frame->color_range == AVCOL_RANGE_JPEG || format == AV_PIX_FMT_YUVJ420P ||
                      format == AV_PIX_FMT_YUVJ422P || format == AV_PIX_FMT_YUVJ444P;
    sws_setColorspaceDetails(sws_.get(), coefficients, full ? 1 : src_range, table, 1, brightness, contrast,
                             saturation);
  }
  // swscale writes into an aligned image (its SIMD paths expect it), then the rows are packed.
  uint8_t* planes[4] = {};
  int linesizes[4] = {};
  check(av_image_alloc(planes, linesizes, w, h, AV_PIX_FMT_RGB24, 64), "av_image_alloc");
  std::unique_ptr<uint8_t, void (*)(uint8_t*)> image(planes[0], [](uint8_t* p) { av_free(p); });
  const int rows = sws_scale(sws_.get(), frame->data, frame->linesize, 0, h, planes, linesizes);
  if (rows != h)
    throw VideoError("sws_scale converted " + std::to_string(rows) + " of " + std::to_string(h) + " rows");
  const size_t row_bytes = static_cast<size_t>(w) * 3;
  out.rgb.resize(row_bytes * static_cast<size_t>(h));
  for (int y = 0; y < h; ++y)
    std::memcpy(out.rgb.data() + row_bytes * y, planes[0] + static_cast<size_t>(linesizes[0]) * y, row_bytes);
  out.height = h;
  out.width = w;
}

void Reader::convert_audio(const AVFrame* frame, DecodedFrame& out) {
  const int channels = frame->ch_layout.nb_channels;
  if (channels <= 0) throw VideoError("decoding failed: an audio frame has no channels");
  if (!swr_ || frame->format != swr_format_ || frame->sample_rate != swr_rate_ ||
      av_channel_layout_compare(&frame->ch_layout, &swr_layout_) != 0) {
    SwrContext* raw = nullptr;
    // FFmpeg 5.1 declares the layouts non-const; it only reads them.
    auto* layout = const_cast<AVChannelLayout*>(&frame->ch_layout);
    check(swr_alloc_set_opts2(&raw, layout, AV_SAMPLE_FMT_FLT, frame->sample_rate, layout,
                              static_cast<AVSampleFormat>(frame->format), frame->sample_rate, 0, nullptr),
          "swr_alloc_set_opts2");
    Swr swr(raw);
    check(swr_init(swr.get()), "swr_init");
    swr_ = std::move(swr);
    swr_format_ = frame->format;
    swr_rate_ = frame->sample_rate;
    av_channel_layout_uninit(&swr_layout_);
    check(av_channel_layout_copy(&swr_layout_, &frame->ch_layout), "av_channel_layout_copy");
  }
  // Same rate in and out: every input sample comes out at once.
  const int n = frame->nb_samples;
  out.samples.resize(static_cast<size_t>(n) * channels);
  auto* dst = reinterpret_cast<uint8_t*>(out.samples.data());
  const int converted =
      swr_convert(swr_.get(), &dst, n, const_cast<const uint8_t**>(frame->extended_data), n);
  check(converted, "swr_convert");
  out.samples.resize(static_cast<size_t>(converted) * channels);
  out.nb_samples = converted;
  out.channels = channels;
}

std::vector<int64_t> Reader::packet_pts() {
  std::lock_guard<std::mutex> lock(mutex_);
  const LogCapture capture;
  if (!decoder_) throw ArgumentError("no stream is selected");
  seek_locked(kStart);
  std::vector<int64_t> pts;
  for (;;) {
    const int read = av_read_frame(format_.get(), packet_.get());
    if (read == AVERROR_EOF) break;
    if (read < 0) fail(read, "reading the file failed");
    if (packet_->stream_index == stream_ && packet_->pts != AV_NOPTS_VALUE) pts.push_back(packet_->pts);
    av_packet_unref(packet_.get());
  }
  seek_locked(kStart);
  skip_below_ = std::numeric_limits<int64_t>::min();
  has_pending_ = false;
  return pts;
}

}  // namespace embervision::video
