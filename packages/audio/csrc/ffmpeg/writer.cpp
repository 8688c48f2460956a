// StreamWriter: takes raw audio/video chunks, converts them with a filter graph to what each encoder
// accepts (format, rate, layout, frame size), encodes them and muxes with libavformat.
#include "writer.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>

namespace emberaudio::ffmpeg {

namespace {

AVSampleFormat pick_sample_format(const AVCodec* codec, AVSampleFormat wanted) {
  if (!codec->sample_fmts) return wanted;
  // The input's format, then its planar/packed twin, then the encoder's first.
  for (AVSampleFormat c : {wanted, av_get_planar_sample_fmt(wanted), av_get_packed_sample_fmt(wanted)})
    for (const AVSampleFormat* f = codec->sample_fmts; *f != AV_SAMPLE_FMT_NONE; ++f)
      if (*f == c) return c;
  return codec->sample_fmts[0];
}

int pick_sample_rate(const AVCodec* codec, int wanted) {
  if (!codec->supported_samplerates) return wanted;
  // The input's rate, else the smallest supported rate above it, else the largest.
  int best_above = 0, largest = 0;
  for (const int* r = codec->supported_samplerates; *r; ++r) {
    if (*r == wanted) return wanted;
    if (*r > wanted && (best_above == 0 || *r < best_above)) best_above = *r;
    largest = std::max(largest, *r);
  }
  return best_above ? best_above : largest;
}

AVPixelFormat pick_pixel_format(const AVCodec* codec, AVPixelFormat wanted) {
  if (!codec->pix_fmts) return wanted;
  for (const AVPixelFormat* f = codec->pix_fmts; *f != AV_PIX_FMT_NONE; ++f)
    if (*f == wanted) return wanted;
  return codec->pix_fmts[0];
}

// Bytes per pixel of the packed input formats, or 0 for planar yuv444p.
int packed_pixel_bytes(AVPixelFormat f) {
  switch (f) {
    case AV_PIX_FMT_GRAY8: return 1;
    case AV_PIX_FMT_RGB24:
    case AV_PIX_FMT_BGR24: return 3;
    case AV_PIX_FMT_RGBA:
    case AV_PIX_FMT_BGRA:
    case AV_PIX_FMT_ARGB:
    case AV_PIX_FMT_ABGR: return 4;
    case AV_PIX_FMT_YUV444P: return 0;
    default: return -1;
  }
}

std::string rational_text(AVRational r) {
  return std::to_string(r.num) + "/" + std::to_string(r.den);
}

}  // namespace

StreamWriter::StreamWriter(py::object dst, std::optional<std::string> format, int buffer_size) {
  std::string name;
  if (py::isinstance<py::str>(dst)) {
    name = dst.cast<std::string>();
  } else {
    if (!format) throw py::value_error("A file-like destination needs `format` (for example \"wav\")");
    io_ = std::make_unique<PyIO>(dst, buffer_size, true);
    name = "<file-like object>";
  }
  int ret = avformat_alloc_output_context2(&fmt_, nullptr, format ? format->c_str() : nullptr,
                                           io_ ? nullptr : name.c_str());
  if (ret < 0 || !fmt_) {
    fmt_ = nullptr;
    throw py::value_error("Failed to pick an output format for \"" + name + "\"" +
                          (format ? " with format \"" + *format + "\"" : "") + " (" + av_error_text(ret) +
                          ")");
  }
  if (io_) {
    fmt_->pb = io_->ctx();
    fmt_->flags |= AVFMT_FLAG_CUSTOM_IO;
  }
  name_ = name;
  frame_.reset(av_frame_alloc());
  filtered_.reset(av_frame_alloc());
  packet_.reset(av_packet_alloc());
  if (!frame_ || !filtered_ || !packet_) throw std::bad_alloc();
}

StreamWriter::~StreamWriter() {
  streams_.clear();
  if (fmt_) {
    if (!io_ && fmt_->pb && !(fmt_->oformat->flags & AVFMT_NOFILE)) avio_closep(&fmt_->pb);
    avformat_free_context(fmt_);
  }
}

void StreamWriter::check_not_open(const char* what) const {
  if (opened_) throw std::runtime_error(std::string(what) + " must come before open()");
}

const AVCodec* StreamWriter::find_encoder(const std::optional<std::string>& encoder, AVMediaType type) const {
  const AVCodec* codec = nullptr;
  if (encoder) {
    codec = avcodec_find_encoder_by_name(encoder->c_str());
    if (!codec) throw py::value_error("Unknown encoder: \"" + *encoder + "\"");
    if (codec->type != type)
      throw py::value_error("\"" + *encoder + "\" is not an " + media_type_name(type) + " encoder");
  } else {
    AVCodecID id = av_guess_codec(fmt_->oformat, nullptr, nullptr, nullptr, type);
    if (id == AV_CODEC_ID_NONE)
      throw py::value_error(std::string("The format \"") + fmt_->oformat->name + "\" has no default " +
                            media_type_name(type) + " codec; name an encoder");
    codec = avcodec_find_encoder(id);
    if (!codec)
      throw std::runtime_error(std::string("No encoder for the codec \"") + avcodec_get_name(id) + "\"");
  }
  return codec;
}

void StreamWriter::open_encoder(EncStream& s, const AVCodec* codec, Options encoder_option,
                                const CodecConfig& cfg) {
  if (cfg.bit_rate > 0) s.enc->bit_rate = cfg.bit_rate;
  if (cfg.compression_level != -1) s.enc->compression_level = cfg.compression_level;
  if (cfg.qscale) {
    s.enc->flags |= AV_CODEC_FLAG_QSCALE;
    s.enc->global_quality = static_cast<int>(FF_QP2LAMBDA * *cfg.qscale);
  }
  if (cfg.gop_size != -1) s.enc->gop_size = cfg.gop_size;
  if (cfg.max_b_frames != -1) s.enc->max_b_frames = cfg.max_b_frames;
  if (fmt_->oformat->flags & AVFMT_GLOBALHEADER) s.enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  Dict opts(encoder_option);
  int ret = avcodec_open2(s.enc.get(), codec, &opts.d);
  if (ret < 0) throw_av(std::string("Failed to open the encoder \"") + codec->name + "\"", ret);
  opts.check_consumed("encoder");
}

// Last step of add_*_stream, so a failed add leaves no stream behind in the container.
void StreamWriter::add_to_container(EncStream& s) {
  s.st = avformat_new_stream(fmt_, nullptr);
  if (!s.st) throw std::bad_alloc();
  int ret = avcodec_parameters_from_context(s.st->codecpar, s.enc.get());
  if (ret < 0) throw_av("Failed to copy the encoder parameters", ret);
  s.st->time_base = s.enc->time_base;
  if (s.type == AVMEDIA_TYPE_VIDEO) s.st->avg_frame_rate = s.enc->framerate;
}

void StreamWriter::add_audio_stream(int sample_rate, int num_channels, const std::string& format,
                                    std::optional<std::string> encoder, Options encoder_option,
                                    std::optional<std::string> encoder_format,
                                    std::optional<int> encoder_sample_rate,
                                    std::optional<int> encoder_num_channels, CodecConfig codec_config,
                                    std::optional<std::string> filter_desc) {
  BusyGuard busy(busy_);
  check_not_open("add_audio_stream");
  if (sample_rate <= 0)
    throw py::value_error("sample_rate must be positive, got " + std::to_string(sample_rate));
  if (num_channels <= 0 || num_channels > 64)
    throw py::value_error("num_channels must be in [1, 64], got " + std::to_string(num_channels));
  AVSampleFormat in_fmt = av_get_sample_fmt(format.c_str());
  if (in_fmt == AV_SAMPLE_FMT_NONE || av_sample_fmt_is_planar(in_fmt))
    throw py::value_error("Unsupported audio format \"" + format + "\" (u8, s16, s32, s64, flt, dbl)");
  const AVCodec* codec = find_encoder(encoder, AVMEDIA_TYPE_AUDIO);
  auto s = std::make_unique<EncStream>();
  s->type = AVMEDIA_TYPE_AUDIO;
  s->in_format = in_fmt;
  s->in_rate = sample_rate;
  s->in_channels = num_channels;
  s->enc.reset(avcodec_alloc_context3(codec));
  if (!s->enc) throw std::bad_alloc();
  AVSampleFormat enc_fmt;
  if (encoder_format) {
    enc_fmt = av_get_sample_fmt(encoder_format->c_str());
    if (enc_fmt == AV_SAMPLE_FMT_NONE)
      throw py::value_error("Unknown encoder_format \"" + *encoder_format + "\"");
  } else {
    enc_fmt = pick_sample_format(codec, in_fmt);
  }
  if (encoder_sample_rate && *encoder_sample_rate <= 0)
    throw py::value_error("encoder_sample_rate must be positive");
  if (encoder_num_channels && (*encoder_num_channels <= 0 || *encoder_num_channels > 64))
    throw py::value_error("encoder_num_channels must be in [1, 64]");
  int enc_rate = encoder_sample_rate ? *encoder_sample_rate : pick_sample_rate(codec, sample_rate);
  int enc_channels = encoder_num_channels ? *encoder_num_channels : num_channels;
  s->enc->sample_fmt = enc_fmt;
  s->enc->sample_rate = enc_rate;
  av_channel_layout_default(&s->enc->ch_layout, enc_channels);
  s->enc->time_base = AVRational{1, enc_rate};
  open_encoder(*s, codec, std::move(encoder_option), codec_config);
  // The graph ends in exactly what the encoder was opened with.
  AVChannelLayout in_layout{};
  av_channel_layout_default(&in_layout, num_channels);
  std::string args =
      "time_base=1/" + std::to_string(sample_rate) + ":sample_rate=" + std::to_string(sample_rate) +
      ":sample_fmt=" + av_get_sample_fmt_name(in_fmt) + ":channel_layout=" + layout_text(in_layout);
  av_channel_layout_uninit(&in_layout);
  std::string desc = (filter_desc ? *filter_desc + "," : std::string()) +
                     "aresample=" + std::to_string(enc_rate) +
                     ",aformat=sample_fmts=" + av_get_sample_fmt_name(enc_fmt) +
                     ":channel_layouts=" + layout_text(s->enc->ch_layout);
  s->graph.reset(avfilter_graph_alloc());
  if (!s->graph) throw std::bad_alloc();
  s->graph->nb_threads = 1;
  configure_graph(s->graph.get(), true, args, desc, &s->src, &s->sink);
  if (!(codec->capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE) && s->enc->frame_size > 0)
    av_buffersink_set_frame_size(s->sink, s->enc->frame_size);
  add_to_container(*s);
  streams_.push_back(std::move(s));
}

void StreamWriter::add_video_stream(double frame_rate, int width, int height, const std::string& format,
                                    std::optional<std::string> encoder, Options encoder_option,
                                    std::optional<std::string> encoder_format,
                                    std::optional<double> encoder_frame_rate,
                                    std::optional<int> encoder_width, std::optional<int> encoder_height,
                                    CodecConfig codec_config, std::optional<std::string> filter_desc) {
  BusyGuard busy(busy_);
  check_not_open("add_video_stream");
  if (!(frame_rate > 0) || !std::isfinite(frame_rate)) throw py::value_error("frame_rate must be positive");
  if (width <= 0 || height <= 0 || width > 16384 || height > 16384)
    throw py::value_error("width and height must be in [1, 16384], got " + std::to_string(width) + "x" +
                          std::to_string(height));
  AVPixelFormat in_fmt = av_get_pix_fmt(format.c_str());
  if (in_fmt == AV_PIX_FMT_NONE || packed_pixel_bytes(in_fmt) < 0)
    throw py::value_error("Unsupported video format \"" + format +
                          "\" (gray, rgb24, bgr24, rgba, bgra, argb, abgr, yuv444p)");
  const AVCodec* codec = find_encoder(encoder, AVMEDIA_TYPE_VIDEO);
  auto s = std::make_unique<EncStream>();
  s->type = AVMEDIA_TYPE_VIDEO;
  s->pix_format = in_fmt;
  s->width = width;
  s->height = height;
  s->in_rate_q = av_d2q(frame_rate, 1 << 16);
  s->enc.reset(avcodec_alloc_context3(codec));
  if (!s->enc) throw std::bad_alloc();
  AVPixelFormat enc_fmt;
  if (encoder_format) {
    enc_fmt = av_get_pix_fmt(encoder_format->c_str());
    if (enc_fmt == AV_PIX_FMT_NONE)
      throw py::value_error("Unknown encoder_format \"" + *encoder_format + "\"");
  } else {
    enc_fmt = pick_pixel_format(codec, in_fmt);
  }
  if (encoder_frame_rate && !(*encoder_frame_rate > 0))
    throw py::value_error("encoder_frame_rate must be positive");
  if ((encoder_width && *encoder_width <= 0) || (encoder_height && *encoder_height <= 0))
    throw py::value_error("encoder_width and encoder_height must be positive");
  AVRational enc_rate = encoder_frame_rate ? av_d2q(*encoder_frame_rate, 1 << 16) : s->in_rate_q;
  s->enc->pix_fmt = enc_fmt;
  s->enc->width = encoder_width ? *encoder_width : width;
  s->enc->height = encoder_height ? *encoder_height : height;
  s->enc->framerate = enc_rate;
  s->enc->time_base = av_inv_q(enc_rate);
  s->enc->sample_aspect_ratio = AVRational{1, 1};
  open_encoder(*s, codec, std::move(encoder_option), codec_config);
  std::string args = "video_size=" + std::to_string(width) + "x" + std::to_string(height) +
                     ":pix_fmt=" + std::to_string(in_fmt) +
                     ":time_base=" + rational_text(av_inv_q(s->in_rate_q)) +
                     ":pixel_aspect=1/1:frame_rate=" + rational_text(s->in_rate_q);
  // fps only when the rate changes: at the end of input it drops the last frame, whose duration it cannot
  // know.
  std::string desc = filter_desc ? *filter_desc + "," : std::string();
  if (av_cmp_q(enc_rate, s->in_rate_q) != 0) desc += "fps=" + rational_text(enc_rate) + ",";
  if (s->enc->width != width || s->enc->height != height)
    desc += "scale=" + std::to_string(s->enc->width) + ":" + std::to_string(s->enc->height) + ",";
  desc += std::string("format=pix_fmts=") + av_get_pix_fmt_name(enc_fmt);
  s->graph.reset(avfilter_graph_alloc());
  if (!s->graph) throw std::bad_alloc();
  s->graph->nb_threads = 1;
  configure_graph(s->graph.get(), false, args, desc, &s->src, &s->sink);
  add_to_container(*s);
  streams_.push_back(std::move(s));
}

void StreamWriter::set_metadata(const Options& metadata) {
  BusyGuard busy(busy_);
  check_not_open("set_metadata");
  av_dict_free(&fmt_->metadata);
  for (const auto& [k, v] : metadata) av_dict_set(&fmt_->metadata, k.c_str(), v.c_str(), 0);
}

void StreamWriter::open(Options option) {
  BusyGuard busy(busy_);
  if (opened_) throw std::runtime_error("The output is already open");
  if (streams_.empty()) throw std::runtime_error("No output stream is configured; add one before open()");
  int ret;
  if (!io_ && !(fmt_->oformat->flags & AVFMT_NOFILE)) {
    ret = avio_open(&fmt_->pb, name_.c_str(), AVIO_FLAG_WRITE);
    if (ret < 0) throw_av("Failed to open the output \"" + name_ + "\"", ret);
  }
  Dict opts(option);
  ret = avformat_write_header(fmt_, &opts.d);
  if (ret < 0)
    throw_av("Failed to write the header of \"" + name_ + "\"" + (io_ ? io_->error_suffix() : ""), ret);
  opened_ = true;
  opts.check_consumed("format");
}

void StreamWriter::close() {
  BusyGuard busy(busy_);
  if (!opened_ || closed_) return;
  flush_streams();
  int ret = av_write_trailer(fmt_);
  closed_ = true;
  if (io_)
    avio_flush(fmt_->pb);
  else if (!(fmt_->oformat->flags & AVFMT_NOFILE))
    avio_closep(&fmt_->pb);
  if (ret < 0)
    throw_av("Failed to write the trailer of \"" + name_ + "\"" + (io_ ? io_->error_suffix() : ""), ret);
}

EncStream& StreamWriter::stream(int i, AVMediaType type) {
  if (!opened_ || closed_) throw std::runtime_error("The output is not open; call open() first");
  if (i < 0 || i >= static_cast<int>(streams_.size()))
    throw IndexOutOfRange("Output stream index out of range: " + std::to_string(i) + " (there are " +
                          std::to_string(streams_.size()) + ")");
  EncStream& s = *streams_[i];
  if (s.type != type)
    throw py::value_error("Stream " + std::to_string(i) + " is not " + media_type_name(type));
  if (s.flushed)
    throw std::runtime_error("Stream " + std::to_string(i) + " was flushed; no more data can be written");
  return s;
}

void StreamWriter::write_audio_chunk(int i, py::array chunk, std::optional<double> pts) {
  BusyGuard busy(busy_);
  EncStream& s = stream(i, AVMEDIA_TYPE_AUDIO);
  if (chunk.ndim() != 2 || chunk.shape(1) != s.in_channels)
    throw py::value_error("The audio chunk must be (frames, " + std::to_string(s.in_channels) + "), got " +
                          std::to_string(chunk.ndim()) + " dimensions");
  const int bps = av_get_bytes_per_sample(s.in_format);
  if (chunk.itemsize() != bps) throw py::value_error("The chunk's dtype does not match the stream's format");
  auto c = py::array::ensure(chunk, py::array::c_style);
  const int64_t n = c.shape(0);
  if (pts) set_pts(s, *pts, AVRational{1, s.in_rate});
  if (n == 0) return;
  AVFrame* f = frame_.get();
  f->format = s.in_format;
  f->sample_rate = s.in_rate;
  av_channel_layout_default(&f->ch_layout, s.in_channels);
  f->nb_samples = static_cast<int>(n);
  if (n > INT32_MAX / 64) throw py::value_error("The audio chunk is too long");
  int ret = av_frame_get_buffer(f, 0);
  if (ret < 0) throw_av("Failed to allocate an audio frame", ret);
  std::memcpy(f->data[0], c.data(), static_cast<size_t>(n) * s.in_channels * bps);
  f->pts = s.next_pts;
  s.next_pts += n;
  py::gil_scoped_release nogil;
  send(s, f);
}

void StreamWriter::write_video_chunk(int i,
                                     py::array_t<uint8_t, py::array::c_style | py::array::forcecast> chunk,
                                     std::optional<double> pts) {
  BusyGuard busy(busy_);
  EncStream& s = stream(i, AVMEDIA_TYPE_VIDEO);
  const int bytes = packed_pixel_bytes(s.pix_format);
  const int c = bytes == 0 ? 3 : bytes;
  if (chunk.ndim() != 4 || chunk.shape(1) != c || chunk.shape(2) != s.height || chunk.shape(3) != s.width)
    throw py::value_error("The video chunk must be (frames, " + std::to_string(c) + ", " +
                          std::to_string(s.height) + ", " + std::to_string(s.width) + ")");
  if (pts) set_pts(s, *pts, av_inv_q(s.in_rate_q));
  const size_t plane = static_cast<size_t>(s.width) * s.height;
  const uint8_t* src = chunk.data();
  for (py::ssize_t k = 0; k < chunk.shape(0); ++k) {
    AVFrame* f = frame_.get();
    f->format = s.pix_format;
    f->width = s.width;
    f->height = s.height;
    int ret = av_frame_get_buffer(f, 0);
    if (ret < 0) throw_av("Failed to allocate a video frame", ret);
    const uint8_t* img = src + k * c * plane;
    for (int y = 0; y < s.height; ++y) {
      if (bytes == 0) {
        for (int p = 0; p < 3; ++p)
          std::memcpy(f->data[p] + static_cast<ptrdiff_t>(y) * f->linesize[p],
                      img + p * plane + static_cast<size_t>(y) * s.width, s.width);
      } else {
        uint8_t* row = f->data[0] + static_cast<ptrdiff_t>(y) * f->linesize[0];
        for (int x = 0; x < s.width; ++x)
          for (int p = 0; p < c; ++p) row[x * c + p] = img[p * plane + static_cast<size_t>(y) * s.width + x];
      }
    }
    f->pts = s.next_pts++;
    py::gil_scoped_release nogil;
    send(s, f);
  }
}

void StreamWriter::set_pts(EncStream& s, double pts, AVRational tb) {
  if (!std::isfinite(pts) || pts < 0)
    throw py::value_error("pts must be a finite non-negative number of seconds");
  int64_t p = std::llround(pts / av_q2d(tb));
  if (p < s.next_pts)
    throw py::value_error("pts " + std::to_string(pts) + " s is before the end of the data already written");
  s.next_pts = p;
}

void StreamWriter::send(EncStream& s, AVFrame* f) {
  int ret = av_buffersrc_add_frame_flags(s.src, f, 0);  // takes the frame's reference
  av_frame_unref(f);
  if (ret < 0) throw_av("Failed to pass a frame to the filter graph", ret);
  drain_graph(s);
}

void StreamWriter::drain_graph(EncStream& s) {
  AVFrame* f = filtered_.get();
  while (true) {
    int ret = av_buffersink_get_frame(s.sink, f);
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
    if (ret < 0) throw_av("Failed to filter a frame", ret);
    // Sink time base to encoder time base.
    if (f->pts != AV_NOPTS_VALUE)
      f->pts = av_rescale_q(f->pts, av_buffersink_get_time_base(s.sink), s.enc->time_base);
    f->pict_type = AV_PICTURE_TYPE_NONE;
    ret = avcodec_send_frame(s.enc.get(), f);
    av_frame_unref(f);
    if (ret < 0) throw_av("Failed to encode a frame", ret);
    drain_encoder(s);
  }
}

void StreamWriter::drain_encoder(EncStream& s) {
  AVPacket* p = packet_.get();
  while (true) {
    int ret = avcodec_receive_packet(s.enc.get(), p);
    if (ret == AVERROR(EAGAIN) || ret == AVERROR_EOF) return;
    if (ret < 0) throw_av("Failed to encode", ret);
    av_packet_rescale_ts(p, s.enc->time_base, s.st->time_base);
    p->stream_index = s.st->index;
    ret = av_interleaved_write_frame(fmt_, p);  // takes the packet's reference
    if (ret < 0) throw_av("Failed to write a packet" + (io_ ? io_->error_suffix() : ""), ret);
  }
}

void StreamWriter::flush() {
  BusyGuard busy(busy_);
  flush_streams();
}

void StreamWriter::flush_streams() {
  if (!opened_ || closed_) return;
  for (auto& sp : streams_) {
    EncStream& s = *sp;
    if (s.flushed) continue;
    s.flushed = true;
    int ret = av_buffersrc_add_frame_flags(s.src, nullptr, 0);
    if (ret < 0) throw_av("Failed to flush the filter graph", ret);
    drain_graph(s);
    ret = avcodec_send_frame(s.enc.get(), nullptr);
    if (ret < 0 && ret != AVERROR_EOF) throw_av("Failed to flush the encoder", ret);
    drain_encoder(s);
  }
}

void bind_writer(py::module_& m) {
  py::class_<CodecConfig>(m, "CodecConfig")
      .def(py::init<>())
      .def_readwrite("bit_rate", &CodecConfig::bit_rate)
      .def_readwrite("compression_level", &CodecConfig::compression_level)
      .def_readwrite("qscale", &CodecConfig::qscale)
      .def_readwrite("gop_size", &CodecConfig::gop_size)
      .def_readwrite("max_b_frames", &CodecConfig::max_b_frames);
  py::class_<StreamWriter>(m, "StreamWriter")
      .def(py::init<py::object, std::optional<std::string>, int>(), py::arg("dst"), py::arg("format"),
           py::arg("buffer_size"))
      .def("add_audio_stream", &StreamWriter::add_audio_stream)
      .def("add_video_stream", &StreamWriter::add_video_stream)
      .def("set_metadata", &StreamWriter::set_metadata)
      // Encoding and muxing run without the GIL; file-like callbacks take it back.
      .def("open", &StreamWriter::open, py::call_guard<py::gil_scoped_release>())
      .def("close", &StreamWriter::close, py::call_guard<py::gil_scoped_release>())
      .def("flush", &StreamWriter::flush, py::call_guard<py::gil_scoped_release>())
      .def("write_audio_chunk", &StreamWriter::write_audio_chunk)
      .def("write_video_chunk", &StreamWriter::write_video_chunk)
      .def_property_readonly("is_open", [](const StreamWriter& w) { return w.is_open(); });
}

}  // namespace emberaudio::ffmpeg
