// StreamReader's native half (the Python class in emberaudio/io/_stream_reader.py wraps it).
#pragma once

#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "common.h"

namespace emberaudio::ffmpeg {

// Decoded frames of one output stream, handed out `frames_per_chunk` at a time; at most
// `max_chunks` chunks are kept (-1: no limit). A frame is a sample (audio) or a picture (video).
class ChunkBuffer {
 public:
  ChunkBuffer() = default;
  ChunkBuffer(int64_t frames_per_chunk, int64_t max_chunks)
      : frames_per_chunk_(frames_per_chunk), max_chunks_(max_chunks) {}
  void set_unit(size_t bytes_per_frame) { unit_ = bytes_per_frame; }
  void set_rate(double frames_per_second) { rate_ = frames_per_second; }
  void push(std::vector<uint8_t> data, int64_t frames, double pts);
  bool ready() const;
  bool empty() const { return total_ == 0; }
  // The next chunk's bytes and presentation time; `frames` receives its length.
  std::pair<std::vector<uint8_t>, double> pop(int64_t* frames);
  void clear();

 private:
  struct Segment {
    std::vector<uint8_t> data;
    int64_t frames;
    double pts;
    int64_t offset;  // frames already handed out
  };
  void drop(int64_t n);
  std::deque<Segment> queue_;
  int64_t total_ = 0;
  int64_t frames_per_chunk_ = -1;
  int64_t max_chunks_ = -1;
  size_t unit_ = 1;
  double rate_ = 0;  // audio: advances the pts of a partly consumed segment
};

// What a filter graph's source was configured with.
struct FrameParams {
  int format = -1;
  int rate = 0;
  AVChannelLayout layout{};
  int width = 0, height = 0;
  AVRational sar{0, 1};
  FrameParams() = default;
  FrameParams(const FrameParams&) = delete;
  FrameParams& operator=(FrameParams&& o) noexcept {
    format = o.format;
    rate = o.rate;
    width = o.width;
    height = o.height;
    sar = o.sar;
    av_channel_layout_uninit(&layout);
    layout = o.layout;
    o.layout = AVChannelLayout{};
    return *this;
  }
  ~FrameParams() { av_channel_layout_uninit(&layout); }
  bool operator==(const FrameParams& o) const {
    return format == o.format && rate == o.rate && width == o.width && height == o.height &&
           av_channel_layout_compare(&layout, &o.layout) == 0;
  }
};

struct OutStream {
  int src_index = -1;
  AVMediaType type = AVMEDIA_TYPE_UNKNOWN;
  std::string filter_desc;
  std::unique_ptr<AVCodecContext, CodecDeleter> dec;
  std::unique_ptr<AVFilterGraph, GraphDeleter> graph;
  AVFilterContext* src = nullptr;
  AVFilterContext* sink = nullptr;
  FrameParams params;
  ChunkBuffer buffer;
  bool decoder_flushed = false;
  bool graph_flushed = false;
  double discard_before = -INFINITY;  // precise seek: output before this time (s) is dropped
  std::string dtype;                  // audio output's numpy dtype
  int channels = 0, width = 0, height = 0;
};

class StreamReader {
 public:
  StreamReader(py::object src, std::optional<std::string> format, Options option, int buffer_size);
  ~StreamReader();
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  int num_src_streams() const;
  int num_out_streams() const;
  py::dict get_src_stream_info(int i) const;
  py::dict get_out_stream_info(int i) const;
  py::dict get_metadata() const;
  int find_best(AVMediaType type) const;
  void add_stream(int index, const std::string& media, int64_t frames_per_chunk, int64_t buffer_chunk_size,
                  std::optional<std::string> decoder, Options decoder_option,
                  std::optional<std::string> filter_desc);
  void remove_stream(int i);
  void seek(double timestamp, const std::string& mode);
  int process_packet(std::optional<double> timeout, double backoff);
  bool is_buffer_ready() const;
  py::list pop_chunks();

 private:
  void open(const std::string& name, const AVInputFormat* fmt, const Options& option);
  void check_src(int i) const;
  void check_out(int i) const;
  void build_graph(OutStream& out);
  bool read_packet(double timeout_ms, double backoff_ms);
  void flush(OutStream& o);
  void drain_decoder(OutStream& o);
  void drain_graph(OutStream& o);

  std::unique_ptr<PyIO> io_;  // declared first: destroyed after the format context
  AVFormatContext* fmt_ = nullptr;
  std::vector<std::unique_ptr<OutStream>> outputs_;
  std::unique_ptr<AVPacket, PacketDeleter> packet_;
  std::unique_ptr<AVFrame, FrameDeleter> frame_;
  std::unique_ptr<AVFrame, FrameDeleter> filtered_;
  bool eof_ = false;
  mutable std::atomic<bool> busy_{false};
};

void bind_reader(py::module_& m);

}  // namespace emberaudio::ffmpeg
