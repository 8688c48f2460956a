"""Video files, in the shape of torchvision 0.17's ``torchvision.io`` video API: ``read_video``
(frames, audio and rates between two timestamps), ``read_video_timestamps`` and ``write_video``,
over FFmpeg (the native module ``embervision._video``).

Note [differences from torchvision 0.17 (video)]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
- Damaged or unreadable files are a RuntimeError carrying FFmpeg's message (torchvision's PyAV path
  warns and returns empty tensors); ``read_video_timestamps`` on a missing file is a RuntimeError.
- The audio of ``read_video`` is cut sample-exactly to [start_pts, end_pts] (torchvision keeps
  whole decoded audio frames that start in the range).
- ``pts_unit`` other than "pts" or "sec" is a ValueError.
- ``write_video`` without ``audio_codec`` uses the container's default audio encoder (AAC for
  .mp4); an ``audio_array`` without ``audio_fps``, and a ``video_array`` without frames, are
  ValueErrors.
"""

from __future__ import annotations

import math
import os
import warnings
from fractions import Fraction
from typing import Any

import numpy as np

import ember

from .. import _native

__all__ = ["read_video", "read_video_timestamps", "write_video"]


def _video() -> Any:
    return _native.load("_video")


def _check_pts_unit(pts_unit: str, warn: bool) -> None:
    if pts_unit not in ("pts", "sec"):
        raise ValueError(f"pts_unit should be either 'pts' or 'sec', got {pts_unit!r}")
    if warn and pts_unit == "pts":  # as torchvision's read_video: each stream has its own pts
        warnings.warn("The pts_unit 'pts' gives wrong results. Please use pts_unit 'sec'.", stacklevel=3)


def _time_base(stream: dict) -> Fraction:
    num, den = stream["time_base"]
    return Fraction(num, den)


def _first(streams: list[dict], kind: str) -> dict | None:
    return next((s for s in streams if s["type"] == kind), None)


def _seconds_to_ticks(seconds: Any, time_base: Fraction) -> Fraction:
    """`seconds` in units of `time_base`. A float within a millionth of a tick of a whole tick is
    taken as that tick: 0.96 s is 959.99999... ms in binary, and means the frame at 960 ms."""
    ticks = Fraction(seconds) / time_base
    if isinstance(seconds, float) and abs(ticks - round(ticks)) <= Fraction(1, 10**6):
        return Fraction(round(ticks))
    return ticks


def _to_ticks(value: Any, time_base: Fraction, pts_unit: str, round_up: bool) -> int | float:
    """A bound in the stream's pts: pts unchanged; seconds floored (start) or ceiled (end), as
    torchvision converts them. Infinite ends stay infinite."""
    if isinstance(value, float) and math.isinf(value):
        return value
    if pts_unit == "pts":
        return value if isinstance(value, int) else Fraction(value)
    ticks = _seconds_to_ticks(value, time_base)
    return math.ceil(ticks) if round_up else math.floor(ticks)


def _seek_target(start: Any) -> int:
    """The integer pts to seek to for a range starting at `start` (ceiled, within +-2^60)."""
    if isinstance(start, float) and math.isinf(start):
        return -(1 << 60) if start < 0 else (1 << 60)
    return max(-(1 << 60), min(1 << 60, math.ceil(start)))


def _read_video_frames(reader: Any, stream: dict, start: Any, end: Any) -> list[tuple[np.ndarray, int]]:
    reader.select(stream["index"])
    reader.seek(_seek_target(start), True)
    frames = []
    while (item := reader.next()) is not None:
        image, pts, _ = item
        if pts > end:
            break  # frames come in presentation order
        if pts >= start:
            frames.append(image)
    return frames


def _read_audio(reader: Any, stream: dict, start: Any, end: Any) -> np.ndarray:
    """(channels, samples) float32: every sample whose time lies in [start, end] (stream pts)."""
    reader.select(stream["index"])
    time_base = _time_base(stream)
    rate = int(stream["rate"])
    per_tick = time_base * rate  # samples per pts tick
    # One second early: the frame holding `start` begins before it (Note [precise seek]).
    reader.seek(_seek_target(start) - math.ceil(1 / time_base), True)
    pieces = []
    channels = max(stream["channels"], 1)
    while (item := reader.next()) is not None:
        samples, pts, _ = item
        channels = samples.shape[1]
        if pts > end:
            break
        n = samples.shape[0]
        # sample i lies at pts + i / per_tick ticks
        lo = 0 if start == -math.inf else max(0, math.ceil((start - pts) * per_tick))
        hi = n if end == math.inf else min(n, math.floor((end - pts) * per_tick) + 1)
        if lo < hi:
            pieces.append(samples[lo:hi])
    if not pieces:
        return np.zeros((channels, 0), dtype=np.float32)
    return np.ascontiguousarray(np.concatenate(pieces).T)


def read_video(filename: str, start_pts: int | float | Fraction = 0, end_pts: int | float | Fraction | None = None,
               pts_unit: str = "pts", output_format: str = "THWC") -> tuple[ember.Tensor, ember.Tensor, dict[str, float]]:
    """Reads the frames and audio of a video file between `start_pts` and `end_pts` (inclusive).

    Returns ``(vframes, aframes, info)``: uint8 frames ``(T, H, W, C)`` (or ``(T, C, H, W)`` with
    ``output_format="TCHW"``), float32 audio ``(K, L)`` (K channels, L samples) and ``info`` with
    ``video_fps`` and ``audio_fps`` for the streams present. `pts_unit`: "pts" (each stream's own
    time base, as torchvision) or "sec" (seconds; Fractions or floats)."""
    output_format = output_format.upper()
    if output_format not in ("THWC", "TCHW"):
        raise ValueError(f"output_format should be either 'THWC' or 'TCHW', got {output_format}.")
    filename = os.fspath(filename)
    if not os.path.exists(filename):
        raise RuntimeError(f"File not found: {filename}")
    if end_pts is None:
        end_pts = float("inf")
    if end_pts < start_pts:
        raise ValueError(f"end_pts should be larger than start_pts, got start_pts={start_pts} and end_pts={end_pts}")
    _check_pts_unit(pts_unit, warn=True)

    native = _video()
    reader = native.Reader.open(filename, 0)
    streams = reader.streams()
    info: dict[str, float] = {}
    video, audio = _first(streams, "video"), _first(streams, "audio")
    frames: list[np.ndarray] = []
    if video is not None:
        tb = _time_base(video)
        frames = _read_video_frames(reader, video, _to_ticks(start_pts, tb, pts_unit, False),
                                    _to_ticks(end_pts, tb, pts_unit, True))
        info["video_fps"] = float(video["rate"])
    if audio is not None:
        tb = _time_base(audio)
        samples = _read_audio(reader, audio, _to_ticks(start_pts, tb, pts_unit, False),
                              _to_ticks(end_pts, tb, pts_unit, True))
        info["audio_fps"] = float(audio["rate"])
    else:
        samples = np.zeros((1, 0), dtype=np.float32)

    vframes = ember.from_numpy(np.stack(frames)) if frames else ember.from_numpy(np.zeros((0, 1, 1, 3), np.uint8))
    if output_format == "TCHW":
        vframes = vframes.permute(0, 3, 1, 2)  # a view, as torchvision returns
    return vframes, ember.from_numpy(samples), info


def read_video_timestamps(filename: str, pts_unit: str = "pts") -> tuple[list[int] | list[Fraction], float | None]:
    """The presentation timestamps of every frame of the first video stream, sorted, and its
    frame rate (None without a video stream). `pts_unit` "sec" gives Fractions of seconds."""
    filename = os.fspath(filename)
    if not os.path.exists(filename):
        raise RuntimeError(f"File not found: {filename}")
    _check_pts_unit(pts_unit, warn=False)
    reader = _video().Reader.open(filename, 0)
    video = _first(reader.streams(), "video")
    if video is None:
        return [], None
    reader.select(video["index"])
    pts = sorted(reader.packet_pts())
    if pts_unit == "sec":
        tb = _time_base(video)
        return [p * tb for p in pts], float(video["rate"])
    return pts, float(video["rate"])


def _as_array(value: Any, dtype: type) -> np.ndarray:
    if isinstance(value, ember.Tensor):
        value = value.detach().cpu().numpy()
    return np.ascontiguousarray(np.asarray(value).astype(dtype, copy=False))


def _options(options: dict[str, Any] | None, name: str) -> list[tuple[str, str]]:
    if options is None:
        return []
    if not isinstance(options, dict):
        raise TypeError(f"{name} must be a dict of str to str, but got {type(options).__name__}")
    return [(str(k), str(v)) for k, v in options.items()]


def write_video(filename: str, video_array: ember.Tensor, fps: float, video_codec: str = "libx264",
                options: dict[str, Any] | None = None, audio_array: ember.Tensor | None = None,
                audio_fps: float | None = None, audio_codec: str | None = None,
                audio_options: dict[str, Any] | None = None) -> None:
    """Writes ``(T, H, W, C)`` uint8 RGB frames (C = 3) to `filename` at `fps` frames per second
    with the FFmpeg encoder `video_codec` (pixel format yuv420p; rgb24 for libx264rgb), `options`
    passed to the encoder (e.g. ``{"crf": "0"}``). With `audio_array` ``(K, L)`` float samples at
    `audio_fps`, an audio track too (`audio_codec`, `audio_options`). The container follows the
    file's extension."""
    frames = _as_array(video_array, np.uint8)  # as torchvision: a cast to uint8
    if frames.ndim != 4 or frames.shape[3] != 3:
        raise ValueError(f"video_array should be a (T, H, W, 3) tensor, but got shape {tuple(frames.shape)}")
    if frames.shape[0] == 0:  # containers drop a track without samples: the file would have no video
        raise ValueError("video_array has no frames")
    if isinstance(fps, float):
        fps = np.round(fps)  # torchvision rounds float rates
    rate = Fraction(fps).limit_denominator(1 << 20) if not isinstance(fps, Fraction) else fps
    if rate <= 0:
        raise ValueError(f"fps should be positive, got {fps}")
    audio = None
    rate_audio = 0
    if audio_array is not None:
        if audio_fps is None:
            raise ValueError("audio_fps must be given with audio_array")
        audio = _as_array(audio_array, np.float32)
        if audio.ndim != 2:
            raise ValueError(f"audio_array should be a (K, L) tensor, but got shape {tuple(audio.shape)}")
        rate_audio = int(round(audio_fps))
        if rate_audio <= 0:
            raise ValueError(f"audio_fps should be positive, got {audio_fps}")
    _video().write_video(os.fspath(filename), frames, rate.numerator, rate.denominator, video_codec,
                         _options(options, "options"), audio, rate_audio, audio_codec or "",
                         _options(audio_options, "audio_options"))
