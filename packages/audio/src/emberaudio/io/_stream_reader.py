"""StreamReader: decodes media with FFmpeg (emberaudio._ffmpeg) into chunks of ember tensors.

Audio chunks are (frames, channels) in the dtype of the output sample format (u8/u8p -> uint8,
s16 -> int16, s32 -> int32, s64 -> int64, flt -> float32, dbl -> float64); video chunks are
(frames, channels, height, width) uint8. Each chunk carries its presentation time in seconds as
``chunk.pts``.
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

import ember

from .. import _native

__all__ = [
    "OutputAudioStream",
    "OutputStream",
    "OutputVideoStream",
    "SourceAudioStream",
    "SourceStream",
    "SourceVideoStream",
    "StreamReader",
]


@dataclass
class SourceStream:
    """A stream of the source, as FFmpeg probed it."""

    media_type: str
    codec: str
    codec_long_name: str
    format: str | None
    bit_rate: int
    num_frames: int
    bits_per_sample: int
    metadata: dict[str, str]


@dataclass
class SourceAudioStream(SourceStream):
    sample_rate: float
    num_channels: int


@dataclass
class SourceVideoStream(SourceStream):
    width: int
    height: int
    frame_rate: float


@dataclass
class OutputStream:
    """An output stream: a source stream through a decoder and a filter graph."""

    source_index: int
    filter_description: str
    media_type: str
    format: str


@dataclass
class OutputAudioStream(OutputStream):
    sample_rate: float
    num_channels: int


@dataclass
class OutputVideoStream(OutputStream):
    width: int
    height: int
    frame_rate: float


_AUDIO_FORMATS = ("u8", "u8p", "s16", "s16p", "s32", "s32p", "s64", "s64p", "flt", "fltp", "dbl", "dblp")
_VIDEO_FORMATS = ("rgb24", "bgr24", "rgba", "bgra", "argb", "abgr", "gray", "yuv444p", "yuv420p", "nv12")


def _source(src):
    # Paths go to FFmpeg as text; bytes and bytearrays are read through an in-memory file.
    if isinstance(src, (str, os.PathLike)):
        return os.fspath(src)
    if isinstance(src, (bytes, bytearray, memoryview)):
        return io.BytesIO(bytes(src))
    if hasattr(src, "read"):
        return src
    raise TypeError(f"src must be a path, a file-like object with read(n) or bytes, got {type(src).__name__}")


def _options(option, what):
    if option is None:
        return {}
    if not isinstance(option, dict):
        raise TypeError(f"{what} must be a dict of str to str, got {type(option).__name__}")
    return {str(k): str(v) for k, v in option.items()}


def _positive_or_none(value, name):
    if value is not None and (not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0
                              or not math.isfinite(value)):
        raise ValueError(f"{name} must be a positive number or None, got {value!r}")


def _audio_filter(format, sample_rate, num_channels):
    if format is not None and format not in _AUDIO_FORMATS:
        raise ValueError(f"Unsupported audio format {format!r}; expected one of {', '.join(_AUDIO_FORMATS)}")
    _positive_or_none(sample_rate, "sample_rate")
    if num_channels is not None and (not isinstance(num_channels, int) or num_channels <= 0):
        raise ValueError(f"num_channels must be a positive integer or None, got {num_channels!r}")
    parts = []
    if sample_rate is not None:
        parts.append(f"aresample={int(sample_rate)}")
    fmt = []
    if format is not None:
        fmt.append(f"sample_fmts={format}")
    if num_channels is not None:
        fmt.append(f"channel_layouts={num_channels}c")
    if fmt:
        parts.append("aformat=" + ":".join(fmt))
    return ",".join(parts) or None


def _video_filter(format, frame_rate, width, height):
    if format is not None and format not in _VIDEO_FORMATS:
        raise ValueError(f"Unsupported video format {format!r}; expected one of {', '.join(_VIDEO_FORMATS)}")
    _positive_or_none(frame_rate, "frame_rate")
    for name, v in (("width", width), ("height", height)):
        if v is not None and (not isinstance(v, int) or v <= 0):
            raise ValueError(f"{name} must be a positive integer or None, got {v!r}")
    parts = []
    if frame_rate is not None:
        parts.append(f"fps={frame_rate}")
    if width is not None or height is not None:
        parts.append(f"scale=width={width if width is not None else 'iw'}:height={height if height is not None else 'ih'}")
    if format is not None:
        parts.append(f"format=pix_fmts={'gray' if format == 'gray' else format}")
    return ",".join(parts) or None


def _check_chunking(frames_per_chunk, buffer_chunk_size):
    for name, v in (("frames_per_chunk", frames_per_chunk), ("buffer_chunk_size", buffer_chunk_size)):
        if not isinstance(v, int) or isinstance(v, bool) or (v <= 0 and v != -1):
            raise ValueError(f"{name} must be a positive integer or -1, got {v!r}")


def _to_tensor(array: np.ndarray, pts: float):
    t = ember.from_numpy(array)
    t.pts = pts  # torchaudio's ChunkTensor: the chunk's presentation time in seconds
    return t


class StreamReader:
    """Fetches and decodes media from ``src`` (a path or URL, a file-like object with ``read(n)``
    and optionally ``seek(offset, whence)``, or bytes), chunk by chunk.

    ``format`` forces the input format (FFmpeg's demuxer name); ``option`` passes demuxer options;
    ``buffer_size`` is the read size for file-like sources.
    """

    def __init__(self, src, format: str | None = None, option: dict[str, str] | None = None,
                 buffer_size: int = 4096):
        if not isinstance(buffer_size, int) or buffer_size <= 0:
            raise ValueError(f"buffer_size must be a positive integer, got {buffer_size!r}")
        self._src = _source(src)  # kept alive: the native reader calls into it
        self._be = _native.load("_ffmpeg").StreamReader(self._src, format, _options(option, "option"), buffer_size)

    # --- the source ---------------------------------------------------------------------------

    @property
    def num_src_streams(self) -> int:
        """Number of streams in the source."""
        return self._be.num_src_streams()

    @property
    def num_out_streams(self) -> int:
        """Number of output streams configured."""
        return self._be.num_out_streams()

    @property
    def default_audio_stream(self) -> int | None:
        """Index of FFmpeg's best audio stream, or None."""
        i = self._be.find_best_audio_stream()
        return None if i < 0 else i

    @property
    def default_video_stream(self) -> int | None:
        """Index of FFmpeg's best video stream, or None."""
        i = self._be.find_best_video_stream()
        return None if i < 0 else i

    def get_metadata(self) -> dict[str, str]:
        """The source's (container-level) metadata."""
        return self._be.get_metadata()

    def get_src_stream_info(self, i: int) -> SourceStream:
        """What the source's stream ``i`` holds."""
        d = self._be.get_src_stream_info(i)
        common = dict(media_type=d["media_type"], codec=d["codec"], codec_long_name=d["codec_long_name"],
                      format=d["format"], bit_rate=d["bit_rate"], num_frames=d["num_frames"],
                      bits_per_sample=d["bits_per_sample"], metadata=d["metadata"])
        if d["media_type"] == "audio":
            return SourceAudioStream(**common, sample_rate=d["sample_rate"], num_channels=d["num_channels"])
        if d["media_type"] == "video":
            return SourceVideoStream(**common, width=d["width"], height=d["height"], frame_rate=d["frame_rate"])
        return SourceStream(**common)

    def get_out_stream_info(self, i: int) -> OutputStream:
        """What the output stream ``i`` produces."""
        d = self._be.get_out_stream_info(i)
        common = dict(source_index=d["source_index"], filter_description=d["filter_description"],
                      media_type=d["media_type"], format=d["format"])
        if d["media_type"] == "audio":
            return OutputAudioStream(**common, sample_rate=d["sample_rate"], num_channels=d["num_channels"])
        return OutputVideoStream(**common, width=d["width"], height=d["height"], frame_rate=d["frame_rate"])

    # --- output streams -----------------------------------------------------------------------

    def _stream_index(self, stream_index, default, media):
        if stream_index is None:
            if default is None:
                raise RuntimeError(f"The source has no {media} stream")
            return default
        if not isinstance(stream_index, int) or isinstance(stream_index, bool):
            raise TypeError(f"stream_index must be an int, got {type(stream_index).__name__}")
        return stream_index

    def add_basic_audio_stream(self, frames_per_chunk: int, buffer_chunk_size: int = 3, *,
                               stream_index: int | None = None, decoder: str | None = None,
                               decoder_option: dict[str, str] | None = None, format: str | None = "fltp",
                               sample_rate: int | None = None, num_channels: int | None = None):
        """An audio output stream in ``format`` (a sample format such as "fltp" or "s16"; None
        keeps the decoder's), optionally resampled to ``sample_rate`` and mixed to
        ``num_channels``. Chunks are (frames_per_chunk, channels); -1 takes everything at once."""
        self.add_audio_stream(frames_per_chunk, buffer_chunk_size, stream_index=stream_index, decoder=decoder,
                              decoder_option=decoder_option,
                              filter_desc=_audio_filter(format, sample_rate, num_channels))

    def add_basic_video_stream(self, frames_per_chunk: int, buffer_chunk_size: int = 3, *,
                               stream_index: int | None = None, decoder: str | None = None,
                               decoder_option: dict[str, str] | None = None, format: str | None = "rgb24",
                               frame_rate: int | None = None, width: int | None = None, height: int | None = None,
                               hw_accel: str | None = None):
        """A video output stream in ``format`` ("rgb24", "bgr24", "yuv420p", "gray", …),
        optionally resampled to ``frame_rate`` and scaled to ``width`` x ``height``. Chunks are
        (frames_per_chunk, channels, height, width) uint8."""
        self.add_video_stream(frames_per_chunk, buffer_chunk_size, stream_index=stream_index, decoder=decoder,
                              decoder_option=decoder_option, hw_accel=hw_accel,
                              filter_desc=_video_filter(format, frame_rate, width, height))

    def add_audio_stream(self, frames_per_chunk: int, buffer_chunk_size: int = 3, *,
                         stream_index: int | None = None, decoder: str | None = None,
                         decoder_option: dict[str, str] | None = None, filter_desc: str | None = None):
        """An audio output stream through the FFmpeg filter graph ``filter_desc`` (e.g.
        "aresample=8000,aformat=sample_fmts=s16")."""
        _check_chunking(frames_per_chunk, buffer_chunk_size)
        i = self._stream_index(stream_index, self.default_audio_stream, "audio")
        self._be.add_stream(i, "audio", frames_per_chunk, buffer_chunk_size, decoder,
                            _options(decoder_option, "decoder_option"), filter_desc)

    def add_video_stream(self, frames_per_chunk: int, buffer_chunk_size: int = 3, *,
                         stream_index: int | None = None, decoder: str | None = None,
                         decoder_option: dict[str, str] | None = None, hw_accel: str | None = None,
                         filter_desc: str | None = None):
        """A video output stream through the FFmpeg filter graph ``filter_desc`` (e.g. "vflip")."""
        _check_chunking(frames_per_chunk, buffer_chunk_size)
        if hw_accel is not None:
            # Hardware decoding needs CUDA tensors, which this build does not produce.
            raise ValueError(f"hw_accel={hw_accel!r} is not supported: emberaudio decodes on the CPU only")
        i = self._stream_index(stream_index, self.default_video_stream, "video")
        self._be.add_stream(i, "video", frames_per_chunk, buffer_chunk_size, decoder,
                            _options(decoder_option, "decoder_option"), filter_desc)

    def remove_stream(self, i: int) -> None:
        """Removes the output stream ``i``."""
        self._be.remove_stream(i)

    # --- decoding -----------------------------------------------------------------------------

    def seek(self, timestamp: float, mode: str = "precise") -> None:
        """Moves to ``timestamp`` seconds. "key" lands on the key frame at or before it, "any" on
        any frame before it, "precise" decodes from the key frame and drops what precedes it."""
        if isinstance(timestamp, bool) or not isinstance(timestamp, (int, float)):
            raise TypeError(f"timestamp must be a number, got {type(timestamp).__name__}")
        self._be.seek(float(timestamp), mode)

    def process_packet(self, timeout: float | None = None, backoff: float = 10.0) -> int:
        """Reads and decodes one packet: 0, or 1 at the end of the input (decoders and filters
        then flushed). ``timeout``/``backoff`` (ms) bound the wait on a live source."""
        if timeout is not None and not timeout >= 0:
            raise ValueError(f"timeout must be non-negative or None, got {timeout!r}")
        return self._be.process_packet(None if timeout is None else float(timeout), float(backoff))

    def process_all_packets(self) -> None:
        """Decodes the rest of the input."""
        while not self.process_packet():
            pass

    def is_buffer_ready(self) -> bool:
        """Whether every output stream has a full chunk buffered."""
        return self._be.is_buffer_ready()

    def pop_chunks(self) -> tuple:
        """One chunk per output stream (oldest first), None for a stream with nothing buffered."""
        return tuple(None if c is None else _to_tensor(*c) for c in self._be.pop_chunks())

    def fill_buffer(self, timeout: float | None = None, backoff: float = 10.0) -> int:
        """Decodes until every output stream has a chunk ready: 0, or 1 at the end of the input."""
        while not self.is_buffer_ready():
            if self.process_packet(timeout, backoff):
                return 1
        return 0

    def stream(self, timeout: float | None = None, backoff: float = 10.0) -> Iterator[tuple]:
        """Yields ``pop_chunks()`` until the input and the buffers are exhausted."""
        if self.num_out_streams == 0:
            raise RuntimeError("No output stream is configured; add one with add_audio_stream/add_video_stream")
        while True:
            if self.fill_buffer(timeout, backoff):
                break
            yield self.pop_chunks()
        while True:
            chunks = self.pop_chunks()
            if all(c is None for c in chunks):
                return
            yield chunks
