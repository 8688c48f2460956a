// StreamWriter's native half (the Python class in emberaudio/io/_stream_writer.py wraps it).
#pragma once

#include <pybind11/numpy.h>

#include <memory>
#include <optional>
#include <vector>

#include "common.h"

namespace emberaudio::ffmpeg {

// Encoder settings that torchaudio's CodecConfig carries; -1 / unset leaves FFmpeg's default.
struct CodecConfig {
  int64_t bit_rate = -1;
  int compression_level = -1;
  std::optional<double> qscale;
  int gop_size = -1;
  int max_b_frames = -1;
};

struct EncStream {
  AVMediaType type = AVMEDIA_TYPE_UNKNOWN;
  std::unique_ptr<AVCodecContext, CodecDeleter> enc;
  AVStream* st = nullptr;
  std::unique_ptr<AVFilterGraph, GraphDeleter> graph;
  AVFilterContext* src = nullptr;
  AVFilterContext* sink = nullptr;
  // audio input
  AVSampleFormat in_format = AV_SAMPLE_FMT_NONE;
  int in_rate = 0, in_channels = 0;
  // video input
  AVPixelFormat pix_format = AV_PIX_FMT_NONE;
  int width = 0, height = 0;
  AVRational in_rate_q{0, 1};
  int64_t next_pts = 0;  // in the input's time base (1/sample_rate or 1/frame_rate)
  bool flushed = false;
};

class StreamWriter {
 public:
  StreamWriter(py::object dst, std::optional<std::string> format, int buffer_size);
  ~StreamWriter();
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  void add_audio_stream(int sample_rate, int num_channels, const std::string& format,
                        std::optional<std::string> encoder, Options encoder_option,
                        std::optional<std::string> encoder_format, std::optional<int> encoder_sample_rate,
                        std::optional<int> encoder_num_channels, CodecConfig codec_config,
                        std::optional<std::string> filter_desc);
  void add_video_stream(double frame_rate, int width, int height, const std::string& format,
                        std::optional<std::string> encoder, Options encoder_option,
                        std::optional<std::string> encoder_format, std::optional<double> encoder_frame_rate,
                        std::optional<int> encoder_width, std::optional<int> encoder_height,
                        CodecConfig codec_config, std::optional<std::string> filter_desc);
  void set_metadata(const Options& metadata);
  void open(Options option);
  void close();
  void flush();
  void write_audio_chunk(int i, py::array chunk, std::optional<double> pts);
  void write_video_chunk(int i, py::array_t<uint8_t, py::array::c_style | py::array::forcecast> chunk,
                         std::optional<double> pts);
  bool is_open() const { return opened_ && !closed_; }

 private:
  void check_not_open(const char* what) const;
  const AVCodec* find_encoder(const std::optional<std::string>& encoder, AVMediaType type) const;
  void open_encoder(EncStream& s, const AVCodec* codec, Options encoder_option, const CodecConfig& cfg);
  void add_to_container(EncStream& s);
  EncStream& stream(int i, AVMediaType type);
  void set_pts(EncStream& s, double pts, AVRational tb);
  void send(EncStream& s, AVFrame* f);
  void drain_graph(EncStream& s);
  void drain_encoder(EncStream& s);
  void flush_streams();

  std::unique_ptr<PyIO> io_;  // declared first: destroyed after the format context
  AVFormatContext* fmt_ = nullptr;
  std::string name_;
  std::vector<std::unique_ptr<EncStream>> streams_;
  std::unique_ptr<AVFrame, FrameDeleter> frame_;
  std::unique_ptr<AVFrame, FrameDeleter> filtered_;
  std::unique_ptr<AVPacket, PacketDeleter> packet_;
  bool opened_ = false;
  bool closed_ = false;
  std::atomic<bool> busy_{false};
};

void bind_writer(py::module_& m);

}  // namespace emberaudio::ffmpeg
