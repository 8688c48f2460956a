"""StreamWriter: encodes ember tensors with FFmpeg (emberaudio._ffmpeg) into a file or file-like object.

Audio chunks are (frames, channels) in the dtype of the stream's ``format`` (u8 -> uint8, s16 ->
int16, s32 -> int32, s64 -> int64, flt -> float32, dbl -> float64); video chunks are
(frames, channels, height, width) uint8 (3 channels for rgb24/bgr24/yuv444p, 4 for rgba-like, 1
for gray).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

import ember

from .. import _native
from ._stream_reader import _options

__all__ = ["CodecConfig", "StreamWriter"]

_AUDIO_DTYPES = {"u8": np.uint8, "s16": np.int16, "s32": np.int32, "s64": np.int64, "flt": np.float32,
                 "dbl": np.float64}
_VIDEO_CHANNELS = {"gray": 1, "gray8": 1, "rgb24": 3, "bgr24": 3, "yuv444p": 3, "rgba": 4, "bgra": 4, "argb": 4,
                   "abgr": 4}


@dataclass
class CodecConfig:
    """Encoder settings; None leaves FFmpeg's default."""

    bit_rate: int = -1
    compression_level: int = -1
    qscale: int | None = None
    gop_size: int = -1
    max_b_frames: int = -1


def _native_config(config, ff):
    c = ff.CodecConfig()
    if config is None:
        return c
    if not isinstance(config, CodecConfig):
        raise TypeError(f"codec_config must be a CodecConfig, got {type(config).__name__}")
    c.bit_rate = int(config.bit_rate)
    c.compression_level = int(config.compression_level)
    c.qscale = None if config.qscale is None else float(config.qscale)
    c.gop_size = int(config.gop_size)
    c.max_b_frames = int(config.max_b_frames)
    return c


def _as_numpy(chunk, name):
    if isinstance(chunk, ember.Tensor):
        return chunk.detach().cpu().numpy() if hasattr(chunk, "detach") else chunk.numpy()
    if isinstance(chunk, np.ndarray):
        return chunk
    raise TypeError(f"{name} must be an ember.Tensor, got {type(chunk).__name__}")


class StreamWriter:
    """Encodes and writes media to ``dst`` (a path, or a file-like object with ``write(b)`` and
    optionally ``seek``; then ``format`` is required). Add streams, ``open()``, write chunks,
    ``close()`` (or use it as a context manager)."""

    def __init__(self, dst, format: str | None = None, buffer_size: int = 4096):
        if not isinstance(buffer_size, int) or buffer_size <= 0:
            raise ValueError(f"buffer_size must be a positive integer, got {buffer_size!r}")
        if isinstance(dst, (str, os.PathLike)):
            dst = os.fspath(dst)
        elif not hasattr(dst, "write"):
            raise TypeError(f"dst must be a path or a file-like object with write(), got {type(dst).__name__}")
        self._dst = dst  # kept alive: the native writer calls into it
        self._ff = _native.load("_ffmpeg")
        self._be = self._ff.StreamWriter(dst, format, buffer_size)
        self._streams: list[tuple] = []

    def add_audio_stream(self, sample_rate: int, num_channels: int, format: str = "flt", *,
                         encoder: str | None = None, encoder_option: dict[str, str] | None = None,
                         encoder_format: str | None = None, encoder_sample_rate: int | None = None,
                         encoder_num_channels: int | None = None, codec_config: CodecConfig | None = None,
                         filter_desc: str | None = None) -> None:
        """An audio stream taking (frames, num_channels) chunks of ``format`` at ``sample_rate``;
        ``encoder`` (default: the container's) encodes it, converted to ``encoder_format``,
        ``encoder_sample_rate`` and ``encoder_num_channels`` where given (else what the encoder
        accepts nearest to the input)."""
        if format not in _AUDIO_DTYPES:
            raise ValueError(f"Unsupported audio format {format!r}; expected one of {', '.join(_AUDIO_DTYPES)}")
        for name, v in (("sample_rate", sample_rate), ("num_channels", num_channels)):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self._be.add_audio_stream(sample_rate, num_channels, format, encoder, _options(encoder_option, "encoder_option"),
                                  encoder_format, encoder_sample_rate, encoder_num_channels,
                                  _native_config(codec_config, self._ff), filter_desc)
        self._streams.append(("audio", _AUDIO_DTYPES[format], num_channels))

    def add_video_stream(self, frame_rate: float, width: int, height: int, format: str = "rgb24", *,
                         encoder: str | None = None, encoder_option: dict[str, str] | None = None,
                         encoder_format: str | None = None, encoder_frame_rate: float | None = None,
                         encoder_width: int | None = None, encoder_height: int | None = None,
                         hw_accel: str | None = None, codec_config: CodecConfig | None = None,
                         filter_desc: str | None = None) -> None:
        """A video stream taking (frames, channels, height, width) uint8 chunks of ``format`` at
        ``frame_rate``; converted to what ``encoder`` accepts."""
        if format not in _VIDEO_CHANNELS:
            raise ValueError(f"Unsupported video format {format!r}; expected one of {', '.join(_VIDEO_CHANNELS)}")
        if hw_accel is not None:
            raise ValueError(f"hw_accel={hw_accel!r} is not supported: emberaudio encodes on the CPU only")
        if isinstance(frame_rate, bool) or not isinstance(frame_rate, (int, float)) or not frame_rate > 0:
            raise ValueError(f"frame_rate must be positive, got {frame_rate!r}")
        for name, v in (("width", width), ("height", height)):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        self._be.add_video_stream(float(frame_rate), width, height, "gray" if format == "gray8" else format, encoder,
                                  _options(encoder_option, "encoder_option"), encoder_format,
                                  None if encoder_frame_rate is None else float(encoder_frame_rate),
                                  encoder_width, encoder_height, _native_config(codec_config, self._ff), filter_desc)
        self._streams.append(("video", np.uint8, _VIDEO_CHANNELS[format]))

    def set_metadata(self, metadata: dict[str, str]) -> None:
        """Container-level metadata (before ``open``)."""
        self._be.set_metadata(_options(metadata, "metadata"))

    def open(self, option: dict[str, str] | None = None) -> StreamWriter:
        """Opens the output and writes the header; ``option`` passes muxer options."""
        self._be.open(_options(option, "option"))
        return self

    def close(self) -> None:
        """Flushes the encoders, writes the trailer and closes the output."""
        self._be.close()

    def flush(self) -> None:
        """Flushes the filters and encoders (the output stays open until ``close``)."""
        self._be.flush()

    def __enter__(self) -> StreamWriter:
        return self.open()

    def __exit__(self, *exc) -> None:
        self.close()

    def _check(self, i, media):
        if not isinstance(i, int) or isinstance(i, bool):
            raise TypeError(f"the stream index must be an int, got {type(i).__name__}")
        if not 0 <= i < len(self._streams):
            raise self._ff.StreamIndexError(f"Output stream index out of range: {i} (there are {len(self._streams)})")
        kind, dtype, channels = self._streams[i]
        if kind != media:
            raise ValueError(f"Stream {i} is not {media}")
        return dtype, channels

    def write_audio_chunk(self, i: int, chunk, pts: float | None = None) -> None:
        """Writes (frames, num_channels) samples to audio stream ``i``; ``pts`` (seconds) places it."""
        dtype, _ = self._check(i, "audio")
        a = _as_numpy(chunk, "chunk")
        if a.dtype != dtype:
            raise ValueError(f"The chunk's dtype must be {np.dtype(dtype).name} for this stream, got {a.dtype.name}")
        self._be.write_audio_chunk(i, np.ascontiguousarray(a), pts)

    def write_video_chunk(self, i: int, chunk, pts: float | None = None) -> None:
        """Writes (frames, channels, height, width) uint8 frames to video stream ``i``."""
        self._check(i, "video")
        a = _as_numpy(chunk, "chunk")
        if a.dtype != np.uint8:
            raise ValueError(f"The video chunk must be uint8, got {a.dtype.name}")
        self._be.write_video_chunk(i, np.ascontiguousarray(a), pts)
