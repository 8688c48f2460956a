// StreamReader: demuxes a source with libavformat, decodes the chosen streams, runs each through its
// own filter graph and buffers the output as chunks of `frames_per_chunk` frames.
#include "reader.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <thread>

namespace emberaudio::ffmpeg {

namespace {

// numpy dtype code of a (packed) sample format.
std::string sample_dtype(AVSampleFormat fmt) {
  switch (av_get_packed_sample_fmt(fmt)) {
    case AV_SAMPLE_FMT_U8: return "u1";
    case AV_SAMPLE_FMT_S16: return "i2";
    case AV_SAMPLE_FMT_S32: return "i4";
    case AV_SAMPLE_FMT_S64: return "i8";
    case AV_SAMPLE_FMT_FLT: return "f4";
    case AV_SAMPLE_FMT_DBL: return "f8";
    default:
      throw std::runtime_error(
          "Unsupported sample format in the output: " +
          std::string(av_get_sample_fmt_name(fmt) ? av_get_sample_fmt_name(fmt) : "none"));
  }
}

// Channels of a frame in our (C, H, W) layout; throws for pixel formats we do not convert.
int video_channels(AVPixelFormat fmt) {
  switch (fmt) {
    case AV_PIX_FMT_GRAY8: return 1;
    case AV_PIX_FMT_RGB24:
    case AV_PIX_FMT_BGR24:
    case AV_PIX_FMT_YUV444P:
    case AV_PIX_FMT_YUV420P:
    case AV_PIX_FMT_NV12: return 3;
    case AV_PIX_FMT_RGBA:
    case AV_PIX_FMT_BGRA:
    case AV_PIX_FMT_ARGB:
    case AV_PIX_FMT_ABGR: return 4;
    default: {
      const char* n = av_get_pix_fmt_name(fmt);
      throw std::runtime_error(
          std::string("Unexpected video format in the output: ") + (n ? n : "none") +
          " (supported: gray, rgb24, bgr24, rgba, bgra, argb, abgr, yuv444p, yuv420p, nv12)");
    }
  }
}

// Copies a video frame into (C, H, W) bytes; 4:2:0 chroma is repeated to full size.
void copy_video(const AVFrame* f, uint8_t* out) {
  const int w = f->width, h = f->height;
  const auto fmt = static_cast<AVPixelFormat>(f->format);
  const int c = video_channels(fmt);
  const size_t plane = static_cast<size_t>(w) * h;
  switch (fmt) {
    case AV_PIX_FMT_GRAY8:
    case AV_PIX_FMT_RGB24:
    case AV_PIX_FMT_BGR24:
    case AV_PIX_FMT_RGBA:
    case AV_PIX_FMT_BGRA:
    case AV_PIX_FMT_ARGB:
    case AV_PIX_FMT_ABGR:
      for (int y = 0; y < h; ++y) {
        const uint8_t* row = f->data[0] + static_cast<ptrdiff_t>(y) * f->linesize[0];
        for (int x = 0; x < w; ++x)
          for (int k = 0; k < c; ++k) out[k * plane + static_cast<size_t>(y) * w + x] = row[x * c + k];
      }
      break;
    case AV_PIX_FMT_YUV444P:
      for (int k = 0; k < 3; ++k)
        for (int y = 0; y < h; ++y)
          std::memcpy(out + k * plane + static_cast<size_t>(y) * w,
                      f->data[k] + static_cast<ptrdiff_t>(y) * f->linesize[k], w);
      break;
    case AV_PIX_FMT_YUV420P:
      for (int y = 0; y < h; ++y) {
        std::memcpy(out + static_cast<size_t>(y) * w, f->data[0] + static_cast<ptrdiff_t>(y) * f->linesize[0],
                    w);
        for (int k = 1; k < 3; ++k) {
          const uint8_t* row = f->data[k] + static_cast<ptrdiff_t>(y / 2) * f->linesize[k];
          for (int x = 0; x < w; ++x) out[k * plane + static_cast<size_t>(y) * w + x] = row[x / 2];
        }
      }
      break;
    case AV_PIX_FMT_NV12:
      for (int y = 0; y < h; ++y) {
        std::memcpy(out + static_cast<size_t>(y) * w, f->data[0] + static_cast<ptrdiff_t>(y) * f->linesize[0],
                    w);
        const uint8_t* row = f->data[1] + static_cast<ptrdiff_t>(y / 2) * f->linesize[1];
        for (int x = 0; x < w; ++x) {
          out[plane + static_cast<size_t>(y) * w + x] = row[(x / 2) * 2];
          out[2 * plane + static_cast<size_t>(y) * w + x] = row[(x / 2) * 2 + 1];
        }
      }
      break;
    default: break;
  }
}

}  // namespace

// ---------------------------------------------------------------- Buffer

void ChunkBuffer::push(std::vector<uint8_t> data, int64_t frames, double pts) {
  if (frames <= 0) return;
  queue_.push_back({std::move(data), frames, pts, 0});
  total_ += frames;
  // Past the limit the oldest chunks go, a whole chunk at a time (chunk boundaries stay put).
  if (frames_per_chunk_ > 0 && max_chunks_ > 0) {
    while (total_ > frames_per_chunk_ * max_chunks_) drop(std::min(frames_per_chunk_, total_));
  }
}

void ChunkBuffer::drop(int64_t n) {
  while (n > 0 && !queue_.empty()) {
    Segment& s = queue_.front();
    int64_t k = std::min(n, s.frames - s.offset);
    s.offset += k;
    total_ -= k;
    n -= k;
    if (s.offset == s.frames) queue_.pop_front();
  }
}

bool ChunkBuffer::ready() const {
  return frames_per_chunk_ > 0 ? total_ >= frames_per_chunk_ : total_ > 0;
}

std::pair<std::vector<uint8_t>, double> ChunkBuffer::pop(int64_t* frames) {
  int64_t n = frames_per_chunk_ > 0 ? std::min(frames_per_chunk_, total_) : total_;
  std::vector<uint8_t> out(static_cast<size_t>(n) * unit_);
  const Segment& first = queue_.front();
  double pts = first.pts + (rate_ > 0 ? static_cast<double>(first.offset) / rate_ : 0.0);
  size_t pos = 0;
  int64_t left = n;
  while (left > 0) {
    Segment& s = queue_.front();
    int64_t k = std::min(left, s.frames - s.offset);
    std::memcpy(out.data() + pos, s.data.data() + static_cast<size_t>(s.offset) * unit_,
                static_cast<size_t>(k) * unit_);
    pos += static_cast<size_t>(k) * unit_;
    s.offset += k;
    total_ -= k;
    left -= k;
    if (s.offset == s.frames) queue_.pop_front();
  }
  *frames = n;
  return {std::move(out), pts};
}

void ChunkBuffer::clear() {
  queue_.clear();
  total_ = 0;
}

// ---------------------------------------------------------------- StreamReader

StreamReader::StreamReader(py::object src, std::optional<std::string> format, Options option,
                           int buffer_size) {
  const AVInputFormat* fmt = nullptr;
  if (format) {
    fmt = av_find_input_format(format->c_str());
    if (!fmt) throw py::value_error("Unsupported device/format: \"" + *format + "\"");
  }
  std::string name;
  if (py::isinstance<py::str>(src)) {
    name = src.cast<std::string>();
  } else {
    io_ = std::make_unique<PyIO>(src, buffer_size, false);
    name = "<file-like object>";
  }
  fmt_ = avformat_alloc_context();
  if (!fmt_) throw std::bad_alloc();
  try {
    open(name, fmt, option);
  } catch (...) {  // the destructor does not run for a constructor that throws
    if (fmt_) avformat_close_input(&fmt_);
    throw;
  }
}

void StreamReader::open(const std::string& name, const AVInputFormat* fmt, const Options& option) {
  if (io_) {
    fmt_->pb = io_->ctx();
    fmt_->flags |= AVFMT_FLAG_CUSTOM_IO;
  }
  Dict opts(option);
  int ret;
  {
    py::gil_scoped_release nogil;
    ret = avformat_open_input(&fmt_, io_ ? nullptr : name.c_str(), fmt, &opts.d);
  }
  if (ret < 0) {  // avformat_open_input frees the context on failure
    fmt_ = nullptr;
    throw std::runtime_error("Failed to open the input \"" + name + "\" (" + av_error_text(ret) + ")" +
                             (io_ ? io_->error_suffix() : ""));
  }
  opts.check_consumed("format");
  {
    py::gil_scoped_release nogil;
    ret = avformat_find_stream_info(fmt_, nullptr);
  }
  if (ret < 0)
    throw_av("Failed to find stream information in \"" + name + "\"" + (io_ ? io_->error_suffix() : ""), ret);
  packet_.reset(av_packet_alloc());
  frame_.reset(av_frame_alloc());
  filtered_.reset(av_frame_alloc());
  if (!packet_ || !frame_ || !filtered_) throw std::bad_alloc();
}

StreamReader::~StreamReader() {
  outputs_.clear();
  if (fmt_) avformat_close_input(&fmt_);
  io_.reset();
}

int StreamReader::num_src_streams() const {
  return static_cast<int>(fmt_->nb_streams);
}
int StreamReader::num_out_streams() const {
  return static_cast<int>(outputs_.size());
}

void StreamReader::check_src(int i) const {
  if (i < 0 || i >= static_cast<int>(fmt_->nb_streams))
    throw IndexOutOfRange("Source stream index out of range: " + std::to_string(i) + " (the source has " +
                          std::to_string(fmt_->nb_streams) + " streams)");
}

void StreamReader::check_out(int i) const {
  if (i < 0 || i >= static_cast<int>(outputs_.size()))
    throw IndexOutOfRange("Output stream index out of range: " + std::to_string(i) + " (there are " +
                          std::to_string(outputs_.size()) + " output streams)");
}

py::dict StreamReader::get_src_stream_info(int i) const {
  BusyGuard busy(busy_);
  check_src(i);
  const AVStream* st = fmt_->streams[i];
  const AVCodecParameters* par = st->codecpar;
  py::dict d;
  d["media_type"] = media_type_name(par->codec_type);
  d["codec"] = avcodec_get_name(par->codec_id);
  const AVCodecDescriptor* desc = avcodec_descriptor_get(par->codec_id);
  d["codec_long_name"] = desc && desc->long_name ? desc->long_name : "";
  const char* f = nullptr;
  if (par->codec_type == AVMEDIA_TYPE_AUDIO)
    f = av_get_sample_fmt_name(static_cast<AVSampleFormat>(par->format));
  if (par->codec_type == AVMEDIA_TYPE_VIDEO) f = av_get_pix_fmt_name(static_cast<AVPixelFormat>(par->format));
  d["format"] = f ? py::object(py::str(f)) : py::object(py::none());
  d["bit_rate"] = par->bit_rate;
  d["num_frames"] = st->nb_frames;
  d["bits_per_sample"] = par->bits_per_raw_sample;
  d["bits_per_coded_sample"] = par->bits_per_coded_sample;
  d["metadata"] = dict_to_py(st->metadata);
  d["sample_rate"] = static_cast<double>(par->sample_rate);
  d["num_channels"] = par->ch_layout.nb_channels;
  d["width"] = par->width;
  d["height"] = par->height;
  AVRational r = st->avg_frame_rate.num ? st->avg_frame_rate : st->r_frame_rate;
  d["frame_rate"] = r.den ? av_q2d(r) : std::nan("");
  d["start_time"] =
      st->start_time == AV_NOPTS_VALUE ? 0.0 : static_cast<double>(st->start_time) * av_q2d(st->time_base);
  return d;
}

py::dict StreamReader::get_metadata() const {
  BusyGuard busy(busy_);
  return dict_to_py(fmt_->metadata);
}

int StreamReader::find_best(AVMediaType type) const {
  BusyGuard busy(busy_);
  int i = av_find_best_stream(fmt_, type, -1, -1, nullptr, 0);
  return i < 0 ? -1 : i;
}

void StreamReader::add_stream(int index, const std::string& media, int64_t frames_per_chunk,
                              int64_t buffer_chunk_size, std::optional<std::string> decoder,
                              Options decoder_option, std::optional<std::string> filter_desc) {
  BusyGuard busy(busy_);
  check_src(index);
  const AVStream* st = fmt_->streams[index];
  const AVMediaType type = media == "audio" ? AVMEDIA_TYPE_AUDIO : AVMEDIA_TYPE_VIDEO;
  if (st->codecpar->codec_type != type)
    throw py::value_error("Stream " + std::to_string(index) + " is not " + media + " (it is " +
                          media_type_name(st->codecpar->codec_type) + ")");
  if (frames_per_chunk == 0 || frames_per_chunk < -1)
    throw py::value_error("frames_per_chunk must be positive or -1, got " + std::to_string(frames_per_chunk));
  if (buffer_chunk_size == 0 || buffer_chunk_size < -1)
    throw py::value_error("buffer_chunk_size must be positive or -1, got " +
                          std::to_string(buffer_chunk_size));
  const AVCodec* codec = nullptr;
  if (decoder) {
    codec = avcodec_find_decoder_by_name(decoder->c_str());
    if (!codec) throw py::value_error("Unsupported codec: \"" + *decoder + "\"");
  } else {
    codec = avcodec_find_decoder(st->codecpar->codec_id);
    if (!codec)
      throw std::runtime_error(std::string("No decoder for the codec \"") +
                               avcodec_get_name(st->codecpar->codec_id) + "\"");
  }
  auto out = std::make_unique<OutStream>();
  out->src_index = index;
  out->type = type;
  out->filter_desc = filter_desc ? *filter_desc : (type == AVMEDIA_TYPE_AUDIO ? "anull" : "null");
  out->dec.reset(avcodec_alloc_context3(codec));
  if (!out->dec) throw std::bad_alloc();
  int ret = avcodec_parameters_to_context(out->dec.get(), st->codecpar);
  if (ret < 0) throw_av("Failed to copy the codec parameters", ret);
  out->dec->pkt_timebase = st->time_base;
  Dict opts(decoder_option);
  ret = avcodec_open2(out->dec.get(), codec, &opts.d);
  if (ret < 0) throw_av(std::string("Failed to open the decoder \"") + codec->name + "\"", ret);
  opts.check_consumed("decoder");
  out->buffer = ChunkBuffer(frames_per_chunk, buffer_chunk_size);
  // Graph from the decoder's parameters; rebuilt from the first frame if those differ.
  if (type == AVMEDIA_TYPE_AUDIO) {
    out->params.format = out->dec->sample_fmt;
    out->params.rate = out->dec->sample_rate;
    av_channel_layout_copy(&out->params.layout, &out->dec->ch_layout);
  } else {
    out->params.format = out->dec->pix_fmt;
    out->params.width = out->dec->width;
    out->params.height = out->dec->height;
    out->params.sar = out->dec->sample_aspect_ratio;
  }
  build_graph(*out);
  outputs_.push_back(std::move(out));
}

void StreamReader::build_graph(OutStream& out) {
  const AVStream* st = fmt_->streams[out.src_index];
  out.graph.reset(avfilter_graph_alloc());
  if (!out.graph) throw std::bad_alloc();
  out.graph->nb_threads = 1;
  std::string args;
  const FrameParams& p = out.params;
  if (out.type == AVMEDIA_TYPE_AUDIO) {
    const char* fmt = av_get_sample_fmt_name(static_cast<AVSampleFormat>(p.format));
    if (!fmt || p.rate <= 0 || p.layout.nb_channels <= 0)
      throw std::runtime_error("The audio stream " + std::to_string(out.src_index) +
                               " has no known sample format, rate or channel count");
    args = "time_base=" + std::to_string(st->time_base.num) + "/" + std::to_string(st->time_base.den) +
           ":sample_rate=" + std::to_string(p.rate) + ":sample_fmt=" + fmt +
           ":channel_layout=" + layout_text(p.layout);
  } else {
    if (p.format < 0 || p.width <= 0 || p.height <= 0)
      throw std::runtime_error("The video stream " + std::to_string(out.src_index) +
                               " has no known size or pixel format");
    AVRational sar = p.sar.num > 0 && p.sar.den > 0 ? p.sar : AVRational{1, 1};
    args = "video_size=" + std::to_string(p.width) + "x" + std::to_string(p.height) +
           ":pix_fmt=" + std::to_string(p.format) + ":time_base=" + std::to_string(st->time_base.num) + "/" +
           std::to_string(st->time_base.den) + ":pixel_aspect=" + std::to_string(sar.num) + "/" +
           std::to_string(sar.den);
    AVRational fr = st->avg_frame_rate.num ? st->avg_frame_rate : st->r_frame_rate;
    if (fr.num > 0 && fr.den > 0)
      args += ":frame_rate=" + std::to_string(fr.num) + "/" + std::to_string(fr.den);
  }
  configure_graph(out.graph.get(), out.type == AVMEDIA_TYPE_AUDIO, args, out.filter_desc, &out.src,
                  &out.sink);
  if (out.type == AVMEDIA_TYPE_AUDIO) {
    out.buffer.set_rate(av_buffersink_get_sample_rate(out.sink));
    out.buffer.set_unit(
        static_cast<size_t>(av_buffersink_get_channels(out.sink)) *
        av_get_bytes_per_sample(static_cast<AVSampleFormat>(av_buffersink_get_format(out.sink))));
  }
  out.graph_flushed = false;
}

py::dict StreamReader::get_out_stream_info(int i) const {
  BusyGuard busy(busy_);
  check_out(i);
  const OutStream& o = *outputs_[i];
  py::dict d;
  d["source_index"] = o.src_index;
  d["filter_description"] = o.filter_desc;
  d["media_type"] = media_type_name(o.type);
  int f = av_buffersink_get_format(o.sink);
  if (o.type == AVMEDIA_TYPE_AUDIO) {
    d["format"] = av_get_sample_fmt_name(static_cast<AVSampleFormat>(f));
    d["sample_rate"] = static_cast<double>(av_buffersink_get_sample_rate(o.sink));
    d["num_channels"] = av_buffersink_get_channels(o.sink);
  } else {
    const char* n = av_get_pix_fmt_name(static_cast<AVPixelFormat>(f));
    d["format"] = n ? n : "none";
    d["width"] = av_buffersink_get_w(o.sink);
    d["height"] = av_buffersink_get_h(o.sink);
    AVRational fr = av_buffersink_get_frame_rate(o.sink);
    d["frame_rate"] = fr.den ? av_q2d(fr) : std::nan("");
  }
  return d;
}

void StreamReader::remove_stream(int i) {
  BusyGuard busy(busy_);
  check_out(i);
  outputs_.erase(outputs_.begin() + i);
}

void StreamReader::seek(double timestamp, const std::string& mode) {
  BusyGuard busy(busy_);
  if (!std::isfinite(timestamp) || timestamp < 0)
    throw py::value_error("The seek timestamp must be a finite non-negative number, got " +
                          std::to_string(timestamp));
  int flags = 0;
  if (mode == "any")
    flags = AVSEEK_FLAG_ANY;
  else if (mode != "key" && mode != "precise")
    throw py::value_error("mode must be \"key\", \"any\" or \"precise\", got \"" + mode + "\"");
  const auto ts = static_cast<int64_t>(timestamp * AV_TIME_BASE);
  int ret = avformat_seek_file(fmt_, -1, INT64_MIN, ts, ts, flags);
  if (ret < 0)
    throw_av("Failed to seek to " + std::to_string(timestamp) + " s" + (io_ ? io_->error_suffix() : ""), ret);
  for (auto& o : outputs_) {
    avcodec_flush_buffers(o->dec.get());
    o->buffer.clear();
    o->decoder_flushed = false;
    o->discard_before = mode == "precise" ? timestamp : -INFINITY;
    build_graph(*o);
  }
  eof_ = false;
}

bool StreamReader::read_packet(double timeout_ms, double backoff_ms) {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    int ret = av_read_frame(fmt_, packet_.get());
    if (ret == AVERROR_EOF) return false;
    if (ret == AVERROR(EAGAIN)) {
      // A live source has nothing yet: wait `backoff` ms, up to `timeout` ms in all.
      double waited =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (timeout_ms >= 0 && waited >= timeout_ms)
        throw std::runtime_error("Timed out after " + std::to_string(waited) + " ms waiting for a packet");
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(backoff_ms));
      continue;
    }
    if (ret < 0) throw_av("Failed to read a packet" + (io_ ? io_->error_suffix() : ""), ret);
    return true;
  }
}

int StreamReader::process_packet(std::optional<double> timeout, double backoff) {
  BusyGuard busy(busy_);
  if (outputs_.empty())
    throw std::runtime_error(
        "No output stream is configured; add one with add_audio_stream/add_video_stream");
  if (backoff < 0) throw py::value_error("backoff must be non-negative");
  if (eof_) return 1;
  if (!read_packet(timeout ? *timeout : -1.0, backoff)) {
    for (auto& o : outputs_) flush(*o);
    eof_ = true;
    return 1;
  }
  struct Unref {
    AVPacket* p;
    ~Unref() { av_packet_unref(p); }
  } unref{packet_.get()};
  for (auto& o : outputs_) {
    if (o->src_index != packet_->stream_index) continue;
    int ret = avcodec_send_packet(o->dec.get(), packet_.get());
    if (ret < 0 && ret != AVERROR(EAGAIN))
      throw_av("Failed to decode a packet of stream " + std::to_string(o->src_index), ret);
    drain_decoder(*o);
  }
  return 0;
}

void StreamReader::flush(OutStream& o) {
  if (!o.decoder_flushed) {
    int ret = avcodec_send_packet(o.dec.get(), nullptr);
    if (ret < 0 && ret != AVERROR_EOF) throw_av("Failed to flush the decoder", ret);
    o.decoder_flushed = true;
    drain_decoder(o);
  }
  if (!o.graph_flushed) {
    int ret = av_buffersrc_add_frame_flags(o.src, nullptr, 0);
    if (ret < 0) throw_av("Failed to flush the filter graph", ret);
    o.graph_flushed = true;
    drain_graph(o);
  }
}

void StreamReader::drain_decoder(OutStream& o) {
  while (true) {
    int ret = avcodec_receive_frame(o.dec.get(), frame_.get());
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
    if (ret < 0) throw_av("Failed to decode a frame of stream " + std::to_string(o.src_index), ret);
    struct Unref {
      AVFrame* f;
      ~Unref() { av_frame_unref(f); }
    } unref{frame_.get()};
    AVFrame* f = frame_.get();
    f->pts = f->best_effort_timestamp;
    // A frame whose parameters differ from the graph's input gets a rebuilt graph.
    FrameParams p;
    p.format = f->format;
    if (o.type == AVMEDIA_TYPE_AUDIO) {
      p.rate = f->sample_rate;
      av_channel_layout_copy(&p.layout, &f->ch_layout);
    } else {
      p.width = f->width;
      p.height = f->height;
      p.sar = f->sample_aspect_ratio;
    }
    if (!(p == o.params)) {
      drain_graph(o);
      o.params = std::move(p);
      build_graph(o);
    }
    ret = av_buffersrc_add_frame_flags(o.src, f, AV_BUFFERSRC_FLAG_KEEP_REF);
    if (ret < 0) throw_av("Failed to pass a frame to the filter graph", ret);
    drain_graph(o);
  }
}

void StreamReader::drain_graph(OutStream& o) {
  AVFrame* f = filtered_.get();
  const AVRational tb = av_buffersink_get_time_base(o.sink);
  while (true) {
    int ret = av_buffersink_get_frame(o.sink, f);
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
    if (ret < 0) throw_av("Failed to filter a frame", ret);
    struct Unref {
      AVFrame* f;
      ~Unref() { av_frame_unref(f); }
    } unref{f};
    double pts = f->pts == AV_NOPTS_VALUE ? std::nan("") : static_cast<double>(f->pts) * av_q2d(tb);
    if (o.type == AVMEDIA_TYPE_AUDIO) {
      const auto fmt = static_cast<AVSampleFormat>(f->format);
      const int ch = f->ch_layout.nb_channels;
      const int bps = av_get_bytes_per_sample(fmt);
      sample_dtype(fmt);  // throws for formats we cannot hand out
      int64_t n = f->nb_samples, skip = 0;
      // Precise seek: drop the samples before the requested time.
      if (std::isfinite(o.discard_before) && std::isfinite(pts) && pts < o.discard_before) {
        skip = std::min<int64_t>(n, std::llround((o.discard_before - pts) * f->sample_rate));
        pts += static_cast<double>(skip) / f->sample_rate;
      }
      if (skip >= n) continue;
      std::vector<uint8_t> data(static_cast<size_t>(n - skip) * ch * bps);
      if (av_sample_fmt_is_planar(fmt)) {
        for (int64_t s = skip; s < n; ++s)
          for (int c = 0; c < ch; ++c)
            std::memcpy(data.data() + (static_cast<size_t>(s - skip) * ch + c) * bps,
                        f->extended_data[c] + s * bps, bps);
      } else {
        std::memcpy(data.data(), f->extended_data[0] + static_cast<size_t>(skip) * ch * bps, data.size());
      }
      if (o.dtype.empty()) o.dtype = sample_dtype(fmt);
      o.channels = ch;
      o.buffer.push(std::move(data), n - skip, pts);
    } else {
      if (std::isfinite(o.discard_before) && std::isfinite(pts) && pts < o.discard_before - 1e-6) continue;
      const int c = video_channels(static_cast<AVPixelFormat>(f->format));
      if (o.channels == 0) {
        o.channels = c;
        o.width = f->width;
        o.height = f->height;
        o.buffer.set_unit(static_cast<size_t>(c) * f->width * f->height);
      } else if (o.channels != c || o.width != f->width || o.height != f->height) {
        throw std::runtime_error("The frame size changed mid-stream (" + std::to_string(o.width) + "x" +
                                 std::to_string(o.height) + " to " + std::to_string(f->width) + "x" +
                                 std::to_string(f->height) + "); add a scale filter to fix the size");
      }
      std::vector<uint8_t> data(static_cast<size_t>(c) * f->width * f->height);
      copy_video(f, data.data());
      o.buffer.push(std::move(data), 1, pts);
    }
  }
}

bool StreamReader::is_buffer_ready() const {
  BusyGuard busy(busy_);
  if (outputs_.empty()) return false;
  for (const auto& o : outputs_)
    if (!o->buffer.ready()) return false;
  return true;
}

py::list StreamReader::pop_chunks() {
  BusyGuard busy(busy_);
  py::list out;
  for (auto& o : outputs_) {
    if (o->buffer.empty()) {
      out.append(py::none());
      continue;
    }
    int64_t n = 0;
    auto [data, pts] = o->buffer.pop(&n);
    std::vector<py::ssize_t> shape;
    py::dtype dtype(o->type == AVMEDIA_TYPE_AUDIO ? o->dtype : "u1");
    if (o->type == AVMEDIA_TYPE_AUDIO)
      shape = {n, o->channels};
    else
      shape = {n, o->channels, o->height, o->width};
    py::array arr(dtype, shape);
    std::memcpy(arr.mutable_data(), data.data(), data.size());
    out.append(py::make_tuple(arr, pts));
  }
  return out;
}

void bind_reader(py::module_& m) {
  py::class_<StreamReader>(m, "StreamReader")
      .def(py::init<py::object, std::optional<std::string>, Options, int>(), py::arg("src"),
           py::arg("format"), py::arg("option"), py::arg("buffer_size"))
      .def("num_src_streams", &StreamReader::num_src_streams)
      .def("num_out_streams", &StreamReader::num_out_streams)
      .def("get_src_stream_info", &StreamReader::get_src_stream_info)
      .def("get_out_stream_info", &StreamReader::get_out_stream_info)
      .def("get_metadata", &StreamReader::get_metadata)
      .def("find_best_audio_stream", [](const StreamReader& r) { return r.find_best(AVMEDIA_TYPE_AUDIO); })
      .def("find_best_video_stream", [](const StreamReader& r) { return r.find_best(AVMEDIA_TYPE_VIDEO); })
      .def("add_stream", &StreamReader::add_stream)
      .def("remove_stream", &StreamReader::remove_stream)
      // Demuxing, decoding and filtering run without the GIL; file-like callbacks take it back.
      .def("seek", &StreamReader::seek, py::call_guard<py::gil_scoped_release>())
      .def("process_packet", &StreamReader::process_packet, py::call_guard<py::gil_scoped_release>())
      .def("is_buffer_ready", &StreamReader::is_buffer_ready)
      .def("pop_chunks", &StreamReader::pop_chunks);
}

}  // namespace emberaudio::ffmpeg
