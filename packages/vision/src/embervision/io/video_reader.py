"""``VideoReader``, torchvision 0.17's fine-grained video API: a frame-by-frame iterator over one
stream (video or audio) of a file or of an encoded file held in memory, with precise or keyframe
seeking and per-stream metadata, over FFmpeg (the native module ``embervision._video``).

Note [differences from torchvision 0.17 (VideoReader)]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
- One backend (FFmpeg through ``embervision._video``, like torchvision's "video_reader"): no
  ``set_video_backend``, no GPU decoding.
- ``set_current_stream`` rewinds to the start of the new stream and returns True; a stream type
  other than "video"/"audio" or a malformed id is a ValueError, a stream the file lacks a
  RuntimeError.
- ``get_metadata`` always has "video" and "audio" (empty lists for absent streams).
"""

from __future__ import annotations

import errno
import math
import operator
import os
from fractions import Fraction
from typing import Any

import numpy as np

import ember

from .. import _native
from .video import _seconds_to_ticks

__all__ = ["VideoReader"]


def _parse_stream(stream: str) -> tuple[str, int]:
    if not isinstance(stream, str):
        raise TypeError(f"stream must be a str such as 'video' or 'audio:0', but got {type(stream).__name__}")
    kind, _, index = stream.partition(":")
    if kind not in ("video", "audio"):
        raise ValueError(f"Invalid stream specification {stream!r}: the stream type must be 'video' or 'audio'")
    if not index:
        return kind, 0
    if not index.isdigit():
        raise ValueError(f"Invalid stream specification {stream!r}: the stream id must be a non-negative integer")
    return kind, int(index)


class VideoReader:
    """Frame-by-frame reading of one stream of a media file.

    Args:
        src: a path, or the bytes of an encoded file (``bytes`` or a 1-D uint8 tensor).
        stream: ``"{type}:{id}"`` or ``"{type}"`` (id 0), type "video" or "audio"; the id counts
            the file's streams of that type.
        num_threads: decoder threads; 0 lets FFmpeg choose.

    Iterating yields ``{"data": tensor, "pts": seconds}``: video frames uint8 ``(C, H, W)`` RGB,
    audio frames float32 ``(samples, channels)``. ``seek`` returns the reader, so
    ``for frame in reader.seek(2.0)`` reads from 2 s on."""

    def __init__(self, src: str | bytes | ember.Tensor, stream: str = "video", num_threads: int = 0) -> None:
        num_threads = operator.index(num_threads)
        if num_threads < 0:
            raise ValueError(f"num_threads must be >= 0, got {num_threads}")
        native = _native.load("_video")
        if isinstance(src, (str, os.PathLike)):
            path = os.fspath(src)
            if not path:
                raise ValueError("src cannot be empty")
            if not os.path.exists(path):
                raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), path)
            self._c = native.Reader.open(path, num_threads)
        elif isinstance(src, (bytes, bytearray, memoryview)):
            data = np.frombuffer(src, dtype=np.uint8)
            if data.size == 0:
                raise ValueError("src cannot be empty")
            self._c = native.Reader.from_bytes(data, num_threads)
        elif isinstance(src, ember.Tensor):
            if src.dtype != ember.uint8 or src.dim() != 1:
                raise ValueError(f"a tensor src must be 1-D uint8, but got {src.dtype} of shape {tuple(src.shape)}")
            if src.numel() == 0:
                raise ValueError("src cannot be empty")
            self._c = native.Reader.from_bytes(np.ascontiguousarray(src.detach().cpu().numpy()), num_threads)
        else:
            raise TypeError("`src` must be either string, Tensor or bytes object.")
        self._streams = self._c.streams()
        self._kind = "video"
        self._time_base = Fraction(1)
        self.set_current_stream(stream)

    def __iter__(self) -> VideoReader:
        return self

    def __next__(self) -> dict[str, Any]:
        """The next frame of the current stream: ``{"data": tensor, "pts": seconds}``."""
        item = self._c.next()
        if item is None:
            raise StopIteration
        data, pts, _ = item
        if self._kind == "video":
            data = np.ascontiguousarray(data.transpose(2, 0, 1))
        return {"data": ember.from_numpy(data), "pts": float(pts * self._time_base)}

    def seek(self, time_s: float, keyframes_only: bool = False) -> VideoReader:
        """Moves within the current stream: the next frame is the first with pts >= `time_s`
        (precise seek), or with `keyframes_only` the keyframe at or before `time_s`."""
        time_s = float(time_s)
        if math.isnan(time_s):
            raise ValueError("time_s must be a number, got nan")
        limit = 1 << 60
        if math.isfinite(time_s):
            ticks = _seconds_to_ticks(time_s, self._time_base)
        else:
            ticks = Fraction(limit if time_s > 0 else -limit)
        target = math.floor(ticks) if keyframes_only else math.ceil(ticks)
        self._c.seek(max(-limit, min(limit, target)), not keyframes_only)
        return self

    def get_metadata(self) -> dict[str, Any]:
        """``{"video": {"duration": [...], "fps": [...]}, "audio": {"duration": [...],
        "framerate": [...]}}``: seconds and rates of every stream of each type, in file order."""
        meta: dict[str, dict[str, list[float]]] = {"video": {"duration": [], "fps": []},
                                                   "audio": {"duration": [], "framerate": []}}
        for s in self._streams:
            if s["type"] == "video":
                meta["video"]["duration"].append(s["duration"])
                meta["video"]["fps"].append(s["rate"])
            elif s["type"] == "audio":
                meta["audio"]["duration"].append(s["duration"])
                meta["audio"]["framerate"].append(s["rate"])
        return meta

    def set_current_stream(self, stream: str) -> bool:
        """Switches to ``"video"``, ``"audio"``, ``"video:1"``...; reading restarts at the start
        of that stream. Returns True."""
        kind, index = _parse_stream(stream)
        of_kind = [s for s in self._streams if s["type"] == kind]
        if index >= len(of_kind):
            raise RuntimeError(f"Invalid stream {stream!r}: the source has {len(of_kind)} {kind} stream(s)")
        chosen = of_kind[index]
        self._c.select(chosen["index"])
        self._kind = kind
        num, den = chosen["time_base"]
        self._time_base = Fraction(num, den)
        return True
