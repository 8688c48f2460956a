// write_video: RGB24 frames through libswscale into the encoder's pixel format, planar float audio
// through libswresample into the audio encoder's sample format, muxed by libavformat.

#include <algorithm>
#include <cstring>

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
}

#include "video.h"

namespace embervision::video {

namespace {

const AVCodec* find_encoder(const std::string& name) {
  const AVCodec* codec = avcodec_find_encoder_by_name(name.c_str());
  if (codec == nullptr) throw ArgumentError("unknown encoder '" + name + "'");
  return codec;
}

// An opened encoder and its output stream.
struct Output {
  Codec encoder;
  AVStream* stream = nullptr;  // owned by the format context
};

Output add_stream(AVFormatContext* format, const AVCodec* codec) {
  Output out;
  out.stream = avformat_new_stream(format, nullptr);
  if (out.stream == nullptr) fail(AVERROR(ENOMEM), "avformat_new_stream");
  out.encoder.reset(avcodec_alloc_context3(codec));
  if (!out.encoder) fail(AVERROR(ENOMEM), "avcodec_alloc_context3");
  if (format->oformat->flags & AVFMT_GLOBALHEADER) out.encoder->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  return out;
}

void open_encoder(Output& out, const AVCodec* codec,
                  const std::vector<std::pair<std::string, std::string>>& options) {
  Dict dict;
  for (const auto& [key, value] : options) dict.set(key, value);
  check(avcodec_open2(out.encoder.get(), codec, dict.get()),
        std::string("could not open encoder '") + codec->name + "'");
  check(avcodec_parameters_from_context(out.stream->codecpar, out.encoder.get()),
        "avcodec_parameters_from_context");
  out.stream->time_base = out.encoder->time_base;
}

// Sends `frame` (nullptr: flush) and writes every packet the encoder has ready.
void encode(AVFormatContext* format, Output& out, const AVFrame* frame, AVPacket* packet) {
  check(avcodec_send_frame(out.encoder.get(), frame), "encoding failed");
  for (;;) {
    const int r = avcodec_receive_packet(out.encoder.get(), packet);
    if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
    check(r, "encoding failed");
    // A video frame lasts one tick of 1/fps; muxers need it for the last frame (mp4's edit list,
    // the stream's duration and rate).
    if (packet->duration == 0 && out.encoder->codec_type == AVMEDIA_TYPE_VIDEO) packet->duration = 1;
    av_packet_rescale_ts(packet, out.encoder->time_base, out.stream->time_base);
    packet->stream_index = out.stream->index;
    check(av_interleaved_write_frame(format, packet), "writing a packet failed");  // takes the packet's data
  }
}

void write_frames(AVFormatContext* format, Output& out, const VideoInput& video, AVPacket* packet) {
  AVCodecContext* enc = out.encoder.get();
  Sws sws(sws_getContext(video.width, video.height, AV_PIX_FMT_RGB24, video.width, video.height, enc->pix_fmt,
                         SWS_BICUBIC, nullptr, nullptr, nullptr));
  if (!sws) throw VideoError("cannot convert rgb24 to the encoder's pixel format");
  Frame frame = make_frame();
  frame->format = enc->pix_fmt;
  frame->width = video.width;
  frame->height = video.height;
  check(av_frame_get_buffer(frame.get(), 0), "av_frame_get_buffer");
  const size_t row_bytes = static_cast<size_t>(video.width) * 3;
  const size_t frame_bytes = row_bytes * video.height;
  for (int64_t i = 0; i < video.count; ++i) {
    check(av_frame_make_writable(frame.get()),
          "av_frame_make_writable");  // the encoder may hold the last one
    const uint8_t* src[4] = {video.frames + frame_bytes * i, nullptr, nullptr, nullptr};
    const int src_stride[4] = {static_cast<int>(row_bytes), 0, 0, 0};
    sws_scale(sws.get(), src, src_stride, 0, video.height, frame->data, frame->linesize);
    frame->pts = i;
    frame->pict_type = AV_PICTURE_TYPE_NONE;  // the encoder decides
    encode(format, out, frame.get(), packet);
  }
  encode(format, out, nullptr, packet);
}

void write_audio(AVFormatContext* format, Output& out, const AudioInput& audio, AVPacket* packet) {
  AVCodecContext* enc = out.encoder.get();
  SwrContext* raw = nullptr;
  check(swr_alloc_set_opts2(&raw, &enc->ch_layout, enc->sample_fmt, enc->sample_rate, &enc->ch_layout,
                            AV_SAMPLE_FMT_FLTP, audio.rate, 0, nullptr),
        "swr_alloc_set_opts2");
  Swr swr(raw);
  check(swr_init(swr.get()), "swr_init");
  // Fixed-size encoders (AAC: 1024) take frame_size samples a frame, the last one may be shorter.
  const bool variable = enc->frame_size <= 0 || (enc->codec->capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE);
  const int64_t chunk = variable ? 1024 : enc->frame_size;
  Frame frame = make_frame();
  for (int64_t start = 0; start < audio.length; start += chunk) {
    const int n = static_cast<int>(std::min(chunk, audio.length - start));
    av_frame_unref(frame.get());
    frame->format = enc->sample_fmt;
    frame->nb_samples = n;
    frame->sample_rate = enc->sample_rate;
    check(av_channel_layout_copy(&frame->ch_layout, &enc->ch_layout), "av_channel_layout_copy");
    check(av_frame_get_buffer(frame.get(), 0), "av_frame_get_buffer");
    std::vector<const uint8_t*> planes(audio.channels);
    for (int c = 0; c < audio.channels; ++c) {
      planes[c] = reinterpret_cast<const uint8_t*>(audio.samples + audio.length * c + start);
    }
    const int converted = swr_convert(swr.get(), frame->extended_data, n, planes.data(), n);
    check(converted, "swr_convert");
    frame->nb_samples = converted;
    frame->pts = start;
    encode(format, out, frame.get(), packet);
  }
  encode(format, out, nullptr, packet);
}

}  // namespace

void write_video(const std::string& path, const VideoInput& video, const AudioInput* audio) {
  const LogCapture capture;
  AVFormatContext* raw = nullptr;
  check(avformat_alloc_output_context2(&raw, nullptr, nullptr, path.c_str()),
        "could not choose a container format for '" + path + "'");
  FormatOutput format(raw);

  const AVCodec* video_codec = find_encoder(video.codec);
  if (video_codec->type != AVMEDIA_TYPE_VIDEO)
    throw ArgumentError("'" + video.codec + "' is not a video encoder");
  Output video_out = add_stream(format.get(), video_codec);
  AVCodecContext* venc = video_out.encoder.get();
  venc->width = video.width;
  venc->height = video.height;
  venc->time_base = AVRational{video.fps_den, video.fps_num};
  venc->framerate = AVRational{video.fps_num, video.fps_den};
  // torchvision's choice: yuv420p, except rgb24 for libx264rgb.
  venc->pix_fmt = video.codec == "libx264rgb" ? AV_PIX_FMT_RGB24 : AV_PIX_FMT_YUV420P;
  open_encoder(video_out, video_codec, video.options);
  video_out.stream->avg_frame_rate = venc->framerate;  // muxers that store a rate take it from here

  Output audio_out;
  if (audio != nullptr) {
    const AVCodec* audio_codec = nullptr;
    if (audio->codec.empty()) {
      const AVCodecID id = format->oformat->audio_codec;
      audio_codec = id == AV_CODEC_ID_NONE ? nullptr : avcodec_find_encoder(id);
      if (audio_codec == nullptr)
        throw ArgumentError("the container of '" + path + "' has no default audio encoder");
    } else {
      audio_codec = find_encoder(audio->codec);
    }
    if (audio_codec->type != AVMEDIA_TYPE_AUDIO)
      throw ArgumentError(std::string("'") + audio_codec->name + "' is not an audio encoder");
    audio_out = add_stream(format.get(), audio_codec);
    AVCodecContext* aenc = audio_out.encoder.get();
    aenc->sample_fmt = audio_codec->sample_fmts != nullptr ? audio_codec->sample_fmts[0] : AV_SAMPLE_FMT_FLTP;
    aenc->sample_rate = audio->rate;
    aenc->time_base = AVRational{1, audio->rate};
    av_channel_layout_default(&aenc->ch_layout, audio->channels);
    open_encoder(audio_out, audio_codec, audio->options);
  }

  if (!(format->oformat->flags & AVFMT_NOFILE)) {
    check(avio_open(&format->pb, path.c_str(), AVIO_FLAG_WRITE), "could not open '" + path + "' for writing");
  }
  check(avformat_write_header(format.get(), nullptr), "avformat_write_header");
  Packet packet = make_packet();
  write_frames(format.get(), video_out, video, packet.get());
  if (audio != nullptr) write_audio(format.get(), audio_out, *audio, packet.get());
  check(av_write_trailer(format.get()), "av_write_trailer");
}

}  // namespace embervision::video
