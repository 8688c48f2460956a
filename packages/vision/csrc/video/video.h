// embervision._video: a demuxer+decoder over one stream of a media file (Reader) and an encoder
// that writes RGB frames and float audio into a new file (write_video), free of Python.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "ffmpeg.h"

namespace embervision::video {

struct StreamInfo {
  int index = 0;          // the stream's index in the file
  std::string type;       // "video", "audio", "subtitle", "data", "attachment" or "unknown"
  int time_base_num = 0;  // pts unit = time_base_num / time_base_den seconds
  int time_base_den = 1;
  double duration = 0.0;   // seconds (the file's when the stream has none; NaN when neither)
  double rate = 0.0;       // video: average frame rate; audio: sample rate
  int64_t start_time = 0;  // first pts (0 when unknown)
  int width = 0, height = 0, channels = 0;
};

// One decoded frame: video as packed RGB24 rows (height, width, 3), audio as interleaved float32
// samples (samples, channels).
struct DecodedFrame {
  std::vector<uint8_t> rgb;
  std::vector<float> samples;
  int height = 0, width = 0, nb_samples = 0, channels = 0;
  int64_t pts = 0;
  bool key_frame = false;
};

// Reads a file (path) or an encoded file held in memory. Thread-safe: each call takes the
// reader's lock, so the Python layer may call it without the GIL.
class Reader {
 public:
  Reader(const std::string& path, std::vector<uint8_t> data, bool from_memory, int threads);
  Reader(const Reader&) = delete;
  Reader& operator=(const Reader&) = delete;
  ~Reader();

  std::vector<StreamInfo> streams() const;
  // Opens the decoder of stream `index` (a video or audio stream) and rewinds to the start.
  void select(int index);
  // The next frame of the selected stream in presentation order; false at the end.
  bool next(DecodedFrame& out);
  // Moves to the keyframe at or before `pts` (selected stream's time base); with `precise`, the
  // following next() returns the first frame with pts >= `pts` (Note [precise seek]).
  void seek(int64_t pts, bool precise);
  // The pts of every packet of the selected stream, in file order; rewinds to the start after.
  std::vector<int64_t> packet_pts();

  // In-memory source: the bytes and a read position (AVIOContext callbacks).
  struct Memory {
    std::vector<uint8_t> data;
    size_t pos = 0;
  };

 private:
  bool decode_locked();  // the next raw frame into frame_ (its pts in frame_pts_); false at the end
  void seek_locked(int64_t pts);
  void convert_video(const AVFrame* frame, DecodedFrame& out);
  void convert_audio(const AVFrame* frame, DecodedFrame& out);

  mutable std::mutex mutex_;
  int threads_ = 0;
  Memory memory_;  // declared before the contexts that read it, so it outlives them
  Avio avio_;
  FormatInput format_;
  Codec decoder_;
  Packet packet_;
  Frame frame_;
  Sws sws_;
  Swr swr_;
  // swr_'s input parameters, to rebuild it when a stream changes format mid-way
  int swr_format_ = -1, swr_rate_ = 0;
  AVChannelLayout swr_layout_{};
  int stream_ = -1;
  bool draining_ = false;
  int64_t skip_below_ = INT64_MIN;
  int64_t last_pts_ = AV_NOPTS_VALUE;
  int64_t frame_pts_ = 0;
  bool has_pending_ = false;  // frame_ holds a decoded frame not yet returned (after a precise seek)
};

struct VideoInput {
  const uint8_t* frames = nullptr;  // (count, height, width, 3) RGB24
  int64_t count = 0;
  int height = 0, width = 0;
  int fps_num = 0, fps_den = 1;
  std::string codec;
  std::vector<std::pair<std::string, std::string>> options;
};

struct AudioInput {
  const float* samples = nullptr;  // (channels, length) planar float32
  int channels = 0;
  int64_t length = 0;
  int rate = 0;
  std::string codec;  // empty: the container's default audio codec
  std::vector<std::pair<std::string, std::string>> options;
};

// Encodes the frames (and the audio, when `audio` is given) into `path`, the container chosen
// from its extension.
void write_video(const std::string& path, const VideoInput& video, const AudioInput* audio);

}  // namespace embervision::video
