"""embervision.io's video API against the ffmpeg CLI: files made here by the CLI (testsrc pattern,
sine audio) and by write_video, frames compared with the CLI's rgb24 decode, audio with its f32le
decode, timestamps and keyframes with ffprobe; damaged files must raise, never crash."""

from __future__ import annotations

import gc
import math
import os
import shutil
import subprocess
import threading
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from embervision import io

pytestmark = [
    pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
                       reason="the ffmpeg CLI makes the test videos and is the reference decoder"),
    pytest.mark.filterwarnings("ignore:The pts_unit 'pts' gives wrong results"),
]


def _run(*args: str) -> bytes:
    return subprocess.run(args, check=True, capture_output=True).stdout


def _has_encoder(name: str) -> bool:
    return shutil.which("ffmpeg") is not None and f" {name} " in _run("ffmpeg", "-hide_banner", "-encoders").decode()


H264 = _has_encoder("libx264")
VIDEO_CODEC = "libx264" if H264 else "mpeg4"
needs_x264rgb = pytest.mark.skipif(not _has_encoder("libx264rgb"), reason="needs libx264rgb")


def exact(x):
    """A time as meant: floats by their decimal text (0.3 is 3/10, as read_video snaps it)."""
    return Fraction(str(x)) if isinstance(x, float) else Fraction(x)


def cli_rgb(path, height: int, width: int) -> np.ndarray:
    """(T, H, W, 3) uint8: the CLI's decode of the first video stream, every frame kept."""
    raw = _run("ffmpeg", "-v", "error", "-i", str(path), "-map", "0:v:0", "-vsync", "passthrough",
               "-f", "rawvideo", "-pix_fmt", "rgb24", "-")
    return np.frombuffer(raw, np.uint8).reshape(-1, height, width, 3)


def cli_audio(path, channels: int) -> np.ndarray:
    """(channels, samples) float32: the CLI's decode of the first audio stream."""
    raw = _run("ffmpeg", "-v", "error", "-i", str(path), "-map", "0:a:0", "-f", "f32le", "-")
    return np.frombuffer(raw, np.float32).reshape(-1, channels).T


def probe_packets(path) -> tuple[list[int], list[int], Fraction]:
    """(sorted pts, pts of keyframes, time base) of the first video stream, from ffprobe."""
    rows = _run("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts,flags",
                "-of", "csv=p=0", str(path)).decode().split()
    pts = [int(r.split(",")[0]) for r in rows]
    keys = [int(r.split(",")[0]) for r in rows if "K" in r.split(",")[1]]
    tb = _run("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=time_base",
              "-of", "csv=p=0", str(path)).decode().strip()
    return sorted(pts), sorted(keys), Fraction(tb)


def make(path, size="64x48", rate=10, seconds=2, codec=VIDEO_CODEC, gop=5, audio_rate=None, channels=1,
         audio_codec=None) -> str:
    args = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", f"testsrc=size={size}:rate={rate}:duration={seconds}"]
    if audio_rate:
        args += ["-f", "lavfi", "-i", f"sine=frequency=440:sample_rate={audio_rate}:duration={seconds}",
                 "-ac", str(channels), "-c:a", audio_codec]
    args += ["-c:v", codec, "-g", str(gop), "-pix_fmt", "yuv420p", str(path)]
    subprocess.run(args, check=True)
    return str(path)


class Clip:
    def __init__(self, path, height, width, fps, frames, audio_rate=None, channels=0):
        self.path, self.height, self.width, self.fps, self.frames = path, height, width, fps, frames
        self.audio_rate, self.channels = audio_rate, channels

    def rgb(self):
        if not hasattr(self, "_rgb"):  # the CLI decodes each file once
            self._rgb = cli_rgb(self.path, self.height, self.width)
        return self._rgb


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    d = tmp_path_factory.mktemp("videos")
    return {
        # mp4: h264 (B-frames, keyframe every 5) with AAC mono
        "mp4": Clip(make(d / "a.mp4", audio_rate=8000, audio_codec="aac"), 48, 64, 10, 20, 8000, 1),
        # mkv: MPEG-4 part 2 (keyframe every 6) with FLAC stereo
        "mkv": Clip(make(d / "b.mkv", size="32x24", rate=25, seconds=1, codec="mpeg4", gop=6, audio_rate=16000,
                         channels=2, audio_codec="flac"), 24, 32, 25, 25, 16000, 2),
        # no audio
        "silent": Clip(make(d / "c.mp4", size="32x16", rate=5, seconds=2), 16, 32, 5, 10),
    }


@pytest.fixture(scope="module")
def audio_only(tmp_path_factory):
    path = tmp_path_factory.mktemp("audio") / "tone.wav"
    subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=200:sample_rate=8000:duration=0.5",
                    "-c:a", "pcm_s16le", str(path)], check=True)
    return str(path)


# ---- read_video ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["mp4", "mkv", "silent"])
def test_read_video_matches_the_cli(clips, name):
    clip = clips[name]
    video, audio, info = io.read_video(clip.path, pts_unit="sec")
    assert video.dtype == ember.uint8 and tuple(video.shape) == (clip.frames, clip.height, clip.width, 3)
    np.testing.assert_array_equal(video.numpy(), clip.rgb())  # same decoder, same conversion: exact
    assert info["video_fps"] == clip.fps
    if clip.audio_rate:
        assert info["audio_fps"] == clip.audio_rate
        expected = cli_audio(clip.path, clip.channels)
        assert audio.dtype == ember.float32 and tuple(audio.shape) == expected.shape
        np.testing.assert_array_equal(audio.numpy(), expected)
        assert expected.shape[1] >= clip.audio_rate * clip.frames // clip.fps  # the whole track (AAC: whole frames)
    else:
        assert "audio_fps" not in info
        assert tuple(audio.shape) == (1, 0) and audio.dtype == ember.float32


def test_read_video_tchw(clips):
    clip = clips["mkv"]
    video, _, _ = io.read_video(clip.path, pts_unit="sec", output_format="tchw")
    assert tuple(video.shape) == (clip.frames, 3, clip.height, clip.width)
    np.testing.assert_array_equal(video.numpy(), clip.rgb().transpose(0, 3, 1, 2))


@pytest.mark.parametrize("name", ["mp4", "mkv"])
@pytest.mark.parametrize("start,end", [(Fraction(1, 2), Fraction(1)), (0.3, 0.6), (0, 0.0), (0.55, None),
                                       (Fraction(-1), Fraction(1, 5)), (5.0, 6.0)])
def test_read_video_seconds_range(clips, name, start, end):
    clip = clips[name]
    video, audio, _ = io.read_video(clip.path, start, end, pts_unit="sec")
    last = clip.frames - 1 if end is None else end
    # frame i is at i / fps: those with start <= i / fps <= end
    first_i = max(0, math.ceil(exact(start) * clip.fps))
    last_i = min(clip.frames - 1, math.floor(exact(last) * clip.fps))
    expected = clip.rgb()[first_i:last_i + 1]
    if len(expected):
        np.testing.assert_array_equal(video.numpy(), expected)
    else:
        assert tuple(video.shape) == (0, 1, 1, 3)
    # sample j is at j / rate: those with start <= j / rate <= end
    full = cli_audio(clip.path, clip.channels)
    lo = max(0, math.ceil(exact(start) * clip.audio_rate))
    hi = full.shape[1] - 1 if end is None else math.floor(exact(end) * clip.audio_rate)
    np.testing.assert_array_equal(audio.numpy(), full[:, lo:hi + 1])


def test_read_video_pts_range(clips):
    clip = clips["mp4"]
    pts, _, tb = probe_packets(clip.path)
    with pytest.warns(UserWarning, match="The pts_unit 'pts' gives wrong results"):
        video, _, _ = io.read_video(clip.path, pts[3], pts[7])
    np.testing.assert_array_equal(video.numpy(), clip.rgb()[3:8])
    # a pts between frames 3 and 4 starts at 4
    video, _, _ = io.read_video(clip.path, pts[3] + 1, pts[7] - 1, pts_unit="pts")
    np.testing.assert_array_equal(video.numpy(), clip.rgb()[4:7])


def test_read_video_arguments(clips, tmp_path):
    path = clips["mp4"].path
    with pytest.raises(ValueError, match="output_format should be either 'THWC' or 'TCHW', got NCHW"):
        io.read_video(path, output_format="NCHW")
    with pytest.raises(ValueError, match="end_pts should be larger than start_pts, got start_pts=2 and end_pts=1"):
        io.read_video(path, 2, 1, pts_unit="sec")
    with pytest.raises(ValueError, match="pts_unit should be either 'pts' or 'sec'"):
        io.read_video(path, pts_unit="ms")
    with pytest.raises(RuntimeError, match="File not found: .*missing.mp4"):
        io.read_video(tmp_path / "missing.mp4")
    with pytest.raises(RuntimeError, match="File not found"):
        io.read_video_timestamps(str(tmp_path / "missing.mp4"))


@pytest.mark.parametrize("name", ["mp4", "mkv", "silent"])
def test_read_video_timestamps(clips, name):
    clip = clips[name]
    expected, _, tb = probe_packets(clip.path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no pts_unit warning here (torchvision warns in read_video)
        pts, fps = io.read_video_timestamps(clip.path)
    assert pts == expected and all(isinstance(p, int) for p in pts) and fps == clip.fps
    seconds, fps = io.read_video_timestamps(clip.path, pts_unit="sec")
    assert seconds == [Fraction(i, clip.fps) for i in range(clip.frames)]
    assert all(isinstance(s, Fraction) for s in seconds)
    assert seconds == [p * tb for p in expected]


def test_read_video_timestamps_without_video(audio_only):
    assert io.read_video_timestamps(audio_only, pts_unit="sec") == ([], None)
    video, audio, info = io.read_video(audio_only, pts_unit="sec")
    assert tuple(video.shape) == (0, 1, 1, 3) and info == {"audio_fps": 8000.0}
    np.testing.assert_array_equal(audio.numpy(), cli_audio(audio_only, 1))


# ---- VideoReader ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["mp4", "mkv"])
def test_video_reader_frames(clips, name):
    clip = clips[name]
    reader = io.VideoReader(clip.path, "video")
    frames = list(reader)
    assert [f["pts"] for f in frames] == pytest.approx([i / clip.fps for i in range(clip.frames)], abs=1e-9)
    assert all(isinstance(f["pts"], float) for f in frames)
    data = np.stack([f["data"].numpy() for f in frames])
    assert frames[0]["data"].dtype == ember.uint8 and data.shape == (clip.frames, 3, clip.height, clip.width)
    np.testing.assert_array_equal(data, clip.rgb().transpose(0, 3, 1, 2))
    with pytest.raises(StopIteration):
        next(reader)


@pytest.mark.parametrize("name", ["mp4", "mkv"])
def test_video_reader_audio(clips, name):
    clip = clips[name]
    frames = list(io.VideoReader(clip.path, "audio:0"))
    assert all(f["data"].dtype == ember.float32 and f["data"].shape[1] == clip.channels for f in frames)
    samples = np.concatenate([f["data"].numpy() for f in frames]).T
    np.testing.assert_array_equal(samples, cli_audio(clip.path, clip.channels))
    # each frame starts where the samples before it end
    starts = np.cumsum([0] + [f["data"].shape[0] for f in frames[:-1]]) / clip.audio_rate
    assert [f["pts"] for f in frames] == pytest.approx(list(starts), abs=1e-9)


@pytest.mark.parametrize("name", ["mp4", "mkv"])
def test_precise_seek_lands_on_the_requested_frame(clips, name):
    clip = clips[name]
    reference = clip.rgb()
    reader = io.VideoReader(clip.path)
    n = clip.frames
    times = [0.0, 1 / clip.fps, 3 / clip.fps, 0.33, 0.5, (n - 1) / clip.fps, (n - 1.5) / clip.fps, -2.0, 0.77]
    for t in times:  # in an order that goes back and forth
        i = max(0, math.ceil(round(t * clip.fps, 9)))  # the first frame at or after t
        frame = next(reader.seek(t))
        assert frame["pts"] == pytest.approx(i / clip.fps, abs=1e-9), t
        np.testing.assert_array_equal(frame["data"].numpy(), reference[i].transpose(2, 0, 1))
        if i + 1 < n:  # and reading goes on from there
            following = next(reader)
            np.testing.assert_array_equal(following["data"].numpy(), reference[i + 1].transpose(2, 0, 1))
    with pytest.raises(StopIteration):
        next(reader.seek(n / clip.fps + 1))
    assert reader.seek(0.0) is reader


@pytest.mark.parametrize("name", ["mp4", "mkv"])
def test_keyframe_seek_lands_on_a_keyframe_at_or_before(clips, name):
    clip = clips[name]
    _, keys, tb = probe_packets(clip.path)
    key_times = [float(k * tb) for k in keys]
    assert len(key_times) > 2
    reference = clip.rgb()
    reader = io.VideoReader(clip.path)
    for t in [0.0, 0.1, 0.45, 0.5, 0.51, 0.75, 0.99, 1.4, 1.5, 1.9, 5.0]:
        frame = next(reader.seek(t, keyframes_only=True))
        assert frame["pts"] <= t + 1e-9 or t < 0
        assert any(abs(frame["pts"] - k) < 1e-9 for k in key_times), (t, frame["pts"])
        i = round(frame["pts"] * clip.fps)
        np.testing.assert_array_equal(frame["data"].numpy(), reference[i].transpose(2, 0, 1))
        if t in key_times:
            assert frame["pts"] == t  # a keyframe's own time lands on it


def test_audio_precise_seek(clips):
    clip = clips["mkv"]
    full = cli_audio(clip.path, clip.channels)
    reader = io.VideoReader(clip.path, "audio")
    frames = list(reader)
    starts = [f["pts"] for f in frames]
    for t in [0.0, 0.2, 0.5, starts[3], 0.9]:
        frame = next(reader.seek(t))
        expected_start = min(s for s in starts if s >= t - 1e-9)
        assert frame["pts"] == pytest.approx(expected_start)
        j = round(frame["pts"] * clip.audio_rate)
        np.testing.assert_array_equal(frame["data"].numpy().T, full[:, j:j + frame["data"].shape[0]])


def test_metadata(clips, audio_only):
    meta = io.VideoReader(clips["mp4"].path).get_metadata()
    assert meta["video"]["fps"] == [10.0] and meta["audio"]["framerate"] == [8000.0]
    assert meta["video"]["duration"] == [pytest.approx(2.0, abs=0.05)]
    assert meta["audio"]["duration"] == [pytest.approx(2.0, abs=0.05)]
    meta = io.VideoReader(clips["silent"].path).get_metadata()
    assert meta["audio"] == {"duration": [], "framerate": []} and meta["video"]["fps"] == [5.0]
    meta = io.VideoReader(clips["mkv"].path, "audio").get_metadata()  # Matroska: the file's duration
    assert meta["video"]["duration"] == [pytest.approx(1.0, abs=0.05)] and meta["video"]["fps"] == [25.0]
    meta = io.VideoReader(audio_only, "audio").get_metadata()
    assert meta["video"] == {"duration": [], "fps": []} and meta["audio"]["framerate"] == [8000.0]


def test_stream_switching(clips):
    clip = clips["mp4"]
    reader = io.VideoReader(clip.path)
    next(reader)
    next(reader)
    assert reader.set_current_stream("audio:0") is True
    first = next(reader)
    assert first["pts"] == 0.0 and first["data"].shape[1] == 1
    assert reader.set_current_stream("video") is True
    frame = next(reader)  # the video stream restarts at its first frame
    assert frame["pts"] == 0.0
    np.testing.assert_array_equal(frame["data"].numpy(), clip.rgb()[0].transpose(2, 0, 1))


def test_stream_errors(clips, audio_only):
    path = clips["mp4"].path
    with pytest.raises(ValueError, match="Invalid stream specification 'subtitle'"):
        io.VideoReader(path, "subtitle")
    with pytest.raises(ValueError, match="the stream id must be a non-negative integer"):
        io.VideoReader(path, "video:x")
    with pytest.raises(RuntimeError, match="Invalid stream 'audio:1': the source has 1 audio stream"):
        io.VideoReader(path, "audio:1")
    with pytest.raises(RuntimeError, match="the source has 0 audio stream"):
        io.VideoReader(clips["silent"].path, "audio")
    with pytest.raises(RuntimeError, match="the source has 0 video stream"):
        io.VideoReader(audio_only)
    reader = io.VideoReader(path)
    with pytest.raises(ValueError, match="Invalid stream specification"):
        reader.set_current_stream("data")
    assert next(reader)["pts"] == 0.0  # the failed switch left the reader as it was


def test_sources(clips, tmp_path):
    clip = clips["mkv"]
    data = open(clip.path, "rb").read()
    from_path = [f["data"].numpy() for f in io.VideoReader(clip.path)]
    from_bytes = [f["data"].numpy() for f in io.VideoReader(data)]
    tensor = ember.from_numpy(np.frombuffer(data, np.uint8).copy())
    from_tensor = [f["data"].numpy() for f in io.VideoReader(tensor)]
    np.testing.assert_array_equal(np.stack(from_bytes), np.stack(from_path))
    np.testing.assert_array_equal(np.stack(from_tensor), np.stack(from_path))
    # seeking within memory, and audio from memory
    reader = io.VideoReader(bytearray(data), "audio")
    samples = np.concatenate([f["data"].numpy() for f in reader]).T
    np.testing.assert_array_equal(samples, cli_audio(clip.path, 2))
    assert next(reader.seek(0.5))["pts"] == pytest.approx(0.504)
    with pytest.raises(TypeError, match="`src` must be either string, Tensor or bytes object."):
        io.VideoReader(3)
    with pytest.raises(ValueError, match="src cannot be empty"):
        io.VideoReader(b"")
    with pytest.raises(ValueError, match="src cannot be empty"):
        io.VideoReader("")
    with pytest.raises(ValueError, match="1-D uint8"):
        io.VideoReader(ember.zeros(4, 4, dtype=ember.uint8))
    with pytest.raises(FileNotFoundError):
        io.VideoReader(str(tmp_path / "missing.mkv"))
    with pytest.raises(ValueError, match="num_threads must be >= 0"):
        io.VideoReader(clip.path, num_threads=-1)


def test_threads_and_concurrency(clips):
    """Decoding runs without the GIL: readers in several threads (and a threaded decoder) give
    the same frames as one reader alone."""
    clip = clips["mp4"]
    reference = clip.rgb()
    results, errors = {}, []

    def work(k):
        try:
            results[k] = np.stack([f["data"].numpy() for f in io.VideoReader(clip.path, num_threads=k % 3)])
        except Exception as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for k in range(4):
        np.testing.assert_array_equal(results[k], reference.transpose(0, 3, 1, 2))


# ---- write_video ---------------------------------------------------------------------------------

def _pattern(t, h, w, seed=0):
    """Smooth moving gradients (lossy codecs keep them well) plus a little noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    frames = np.stack([np.stack([(x * 4 + k * 8) % 256, (y * 5 + k * 3) % 256, ((x + y) * 2 + k) % 256], -1)
                       for k in range(t)]).astype(np.float64)
    return np.clip(frames + rng.normal(0, 2, frames.shape), 0, 255).astype(np.uint8)


def _psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return 10 * np.log10(255.0 ** 2 / mse) if mse else np.inf


@needs_x264rgb
@pytest.mark.parametrize("ext", ["mkv", "mp4"])
def test_write_video_lossless_round_trip(tmp_path, ext):
    frames = np.random.default_rng(1).integers(0, 256, (6, 16, 24, 3), dtype=np.uint8)
    path = str(tmp_path / f"out.{ext}")
    io.write_video(path, ember.from_numpy(frames), 12, video_codec="libx264rgb", options={"crf": "0"})
    video, _, info = io.read_video(path, pts_unit="sec")
    np.testing.assert_array_equal(video.numpy(), frames)
    assert info == {"video_fps": 12.0}
    seconds, fps = io.read_video_timestamps(path, pts_unit="sec")
    pts, _, tb = probe_packets(path)
    assert fps == 12.0 and seconds == [p * tb for p in pts]
    # i / 12 s, to the container's precision (Matroska: milliseconds)
    assert all(abs(s - Fraction(i, 12)) <= tb / 2 for i, s in enumerate(seconds)) and len(seconds) == 6


@pytest.mark.parametrize("codec,bound", [(VIDEO_CODEC, 30.0), ("mpeg4", 25.0)])
def test_write_video_lossy_round_trip(tmp_path, codec, bound):
    frames = _pattern(8, 32, 48)
    path = str(tmp_path / "out.mp4")
    io.write_video(path, frames, 8.0, video_codec=codec)
    video, _, info = io.read_video(path, pts_unit="sec")
    assert tuple(video.shape) == frames.shape and info["video_fps"] == 8.0
    assert _psnr(video.numpy(), frames) > bound
    np.testing.assert_array_equal(video.numpy(), cli_rgb(path, 32, 48))


def test_write_video_rounds_float_rates(tmp_path):
    path = str(tmp_path / "out.mkv")
    io.write_video(path, _pattern(3, 16, 16), 9.6, video_codec="mpeg4")
    assert io.read_video_timestamps(path, pts_unit="sec") == ([Fraction(i, 10) for i in range(3)], 10.0)


def test_write_video_with_audio(tmp_path):
    frames = _pattern(5, 16, 32)
    t = np.arange(4000) / 8000
    audio = np.stack([np.sin(2 * np.pi * 440 * t), 0.5 * np.cos(2 * np.pi * 220 * t)]).astype(np.float32)
    path = str(tmp_path / "out.mkv")
    io.write_video(path, frames, 10, video_codec="mpeg4", audio_array=ember.from_numpy(audio), audio_fps=8000,
                   audio_codec="pcm_f32le")
    _, samples, info = io.read_video(path, pts_unit="sec")
    assert info == {"video_fps": 10.0, "audio_fps": 8000.0}
    np.testing.assert_array_equal(samples.numpy(), audio)  # float PCM: exact
    # the container's default audio codec (AAC for mp4): close, not exact
    path = str(tmp_path / "out.mp4")
    io.write_video(path, frames, 10, video_codec="mpeg4", audio_array=audio, audio_fps=8000,
                   audio_options={"b": "64000"})
    _, samples, info = io.read_video(path, pts_unit="sec")
    assert info["audio_fps"] == 8000.0 and samples.shape[0] == 2
    n = min(samples.shape[1], audio.shape[1])
    assert abs(samples.shape[1] - audio.shape[1]) <= 1024
    np.testing.assert_array_equal(samples.numpy(), cli_audio(path, 2))
    error = samples.numpy()[:, 1024:n - 1024] - audio[:, 1024:n - 1024]
    assert np.sqrt(np.mean(error ** 2)) < 0.1


def test_write_video_errors(tmp_path):
    frames = _pattern(2, 16, 16)
    path = str(tmp_path / "out.mp4")
    with pytest.raises(ValueError, match=r"video_array should be a \(T, H, W, 3\) tensor"):
        io.write_video(path, frames[..., :2], 10)
    with pytest.raises(ValueError, match=r"video_array should be a \(T, H, W, 3\) tensor"):
        io.write_video(path, frames[0], 10)
    with pytest.raises(ValueError, match="video_array has no frames"):
        io.write_video(path, frames[:0], 10)
    with pytest.raises(ValueError, match="unknown encoder 'nope'"):
        io.write_video(path, frames, 10, video_codec="nope")
    with pytest.raises(ValueError, match="'aac' is not a video encoder"):
        io.write_video(path, frames, 10, video_codec="aac")
    with pytest.raises(ValueError, match="fps should be positive"):
        io.write_video(path, frames, 0)
    with pytest.raises(ValueError, match="audio_fps must be given with audio_array"):
        io.write_video(path, frames, 10, audio_array=np.zeros((1, 10), np.float32))
    with pytest.raises(ValueError, match=r"audio_array should be a \(K, L\) tensor"):
        io.write_video(path, frames, 10, audio_array=np.zeros(10, np.float32), audio_fps=8000)
    with pytest.raises(RuntimeError, match="could not open encoder 'mpeg4': Invalid argument .*"
                                           "Error setting option qmin to value x"):
        io.write_video(path, frames, 10, video_codec="mpeg4", options={"qmin": "x"})
    if H264:
        with pytest.raises(RuntimeError, match="could not open encoder 'libx264'.*width not divisible by 2"):
            io.write_video(path, _pattern(2, 15, 15), 10)
    with pytest.raises(RuntimeError, match="could not choose a container format"):
        io.write_video(str(tmp_path / "out.unknownext"), frames, 10)
    with pytest.raises(RuntimeError, match="could not open '.*' for writing: No such file or directory"):
        io.write_video(str(tmp_path / "no" / "dir.mp4"), frames, 10, video_codec="mpeg4")


# ---- damaged input -------------------------------------------------------------------------------

def test_empty_and_garbage_files(tmp_path):
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    garbage = tmp_path / "garbage.mkv"
    garbage.write_bytes(np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes())
    for path in (empty, garbage):
        with pytest.raises(RuntimeError, match="could not open"):
            io.read_video(str(path), pts_unit="sec")
        with pytest.raises(RuntimeError, match="could not open"):
            io.read_video_timestamps(str(path))
        with pytest.raises(RuntimeError, match="could not open"):
            io.VideoReader(str(path))
    with pytest.raises(RuntimeError, match="could not open the in-memory video"):
        io.VideoReader(garbage.read_bytes())


def _top_level_atoms(data: bytes) -> dict[bytes, int]:
    """Offsets of an mp4's top-level boxes (size, type), by type."""
    offsets, pos = {}, 0
    while pos + 8 <= len(data):
        size = int.from_bytes(data[pos:pos + 4], "big")
        offsets[data[pos + 4:pos + 8]] = pos
        if size < 8:
            break
        pos += size
    return offsets


def test_truncated_mp4(clips, tmp_path):
    """An mp4 keeps its index (moov) after the media data: a cut before it is refused; a cut inside
    it leaves what the rest of the index describes, a prefix of the frames, or is refused."""
    clip = clips["mp4"]
    data = open(clip.path, "rb").read()
    moov = _top_level_atoms(data)[b"moov"]
    reference = clip.rgb()
    cut_file = tmp_path / "cut.mp4"
    for cut in [1, 7, 8, 100, 1000] + list(range(2000, moov + 1, moov // 12)):
        cut_file.write_bytes(data[:cut])
        with pytest.raises(RuntimeError, match="could not open"):
            io.read_video(str(cut_file), pts_unit="sec")
        with pytest.raises(RuntimeError, match="could not open the in-memory video"):
            io.VideoReader(data[:cut])
    for cut in range(moov + 1, len(data), max(1, (len(data) - moov) // 12)):
        cut_file.write_bytes(data[:cut])
        try:
            video, _, _ = io.read_video(str(cut_file), pts_unit="sec")
        except RuntimeError:
            continue
        n = video.shape[0]
        if n:
            np.testing.assert_array_equal(video.numpy(), reference[:n])


def _read_or_refuse(source, height, width, max_frames):
    """Either a RuntimeError, or frames of the file's size (never a crash)."""
    try:
        reader = io.VideoReader(source)
        frames = [f for _, f in zip(range(max_frames), reader, strict=False)]
    except RuntimeError:
        return None
    for f in frames:
        assert f["data"].dtype == ember.uint8 and f["data"].shape[0] == 3 and f["data"].dim() == 3
    try:  # and the audio stream, where the damaged file still has one
        if reader.get_metadata()["audio"]["framerate"]:
            reader.set_current_stream("audio")
            for _, f in zip(range(max_frames * 4), reader, strict=False):
                assert f["data"].dtype == ember.float32 and f["data"].dim() == 2
    except RuntimeError:
        pass
    return frames


def test_truncated_mkv_reads_what_is_there_or_refuses(clips, tmp_path):
    clip = clips["mkv"]
    data = open(clip.path, "rb").read()
    reference = clip.rgb()
    outcomes = set()
    for cut in range(0, len(data), len(data) // 30):
        path = tmp_path / "cut.mkv"
        path.write_bytes(data[:cut])
        try:
            video, _, _ = io.read_video(str(path), pts_unit="sec")
        except RuntimeError:
            outcomes.add("refused")
            continue
        outcomes.add("read")
        n = video.shape[0]
        assert n <= clip.frames and tuple(video.shape[1:]) in {(clip.height, clip.width, 3), (1, 1, 3)}
        if n:  # what it decodes is the start of the video, unchanged
            np.testing.assert_array_equal(video.numpy(), reference[:n])
    assert outcomes == {"refused", "read"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.integers(0, 7)), min_size=1, max_size=8),
       st.sampled_from(["mp4", "mkv"]))
def test_bit_flips_never_crash(clips, flips, name):
    clip = clips[name]
    data = bytearray(open(clip.path, "rb").read())
    for where, bit in flips:
        data[int(where * len(data))] ^= 1 << bit
    _read_or_refuse(bytes(data), clip.height, clip.width, clip.frames + 5)


def _damaged_mp4(clips):
    """The mp4 with 24 bytes of its media data overwritten where the h264 decoder then refuses a
    packet: the file opens, and decoding fails part-way."""
    data = open(clips["mp4"].path, "rb").read()
    for pos in range(0, _top_level_atoms(data)[b"moov"], 97):
        damaged = data[:pos] + b"\xff" * 24 + data[pos + 24:]
        try:
            list(io.VideoReader(damaged))
        except RuntimeError as error:
            if str(error).startswith("decoding failed"):
                return damaged
    pytest.skip("no damage found that the decoder refuses")


def _rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident size from /proc")
def test_failures_do_not_leak(clips, tmp_path):
    """Refused inputs free every FFmpeg object: hundreds of failures leave the resident size flat
    (each leaked demuxer would keep its 64 KiB read buffer and more: 150 of them, 9 MiB)."""
    data = open(clips["mp4"].path, "rb").read()
    cut = data[:len(data) // 2]
    frames = np.zeros((1, 4, 4, 3), np.uint8)
    damaged = _damaged_mp4(clips) if H264 else cut

    def fail_many(n):
        for _ in range(n):
            with pytest.raises(RuntimeError):
                io.VideoReader(cut)
            with pytest.raises(RuntimeError):  # fails in avcodec_open2, after the muxer and encoder exist
                io.write_video(str(tmp_path / "x.mp4"), frames, 1, video_codec="mpeg4", options={"qmin": "x"})
            with pytest.raises(RuntimeError):  # fails decoding, with the decoder open
                list(io.VideoReader(damaged))

    fail_many(20)
    gc.collect()
    before = _rss_bytes()
    fail_many(150)
    gc.collect()
    assert _rss_bytes() - before < 4 << 20


def test_ffmpeg_logging_outside_embervision_still_prints(tmp_path, capfd):
    # Note [FFmpeg log capture]: the process-wide callback keeps only the lines logged during an
    # embervision operation on that thread (they go into its exceptions, silently); any other
    # line, here one logged through libavutil directly as another library would, reaches FFmpeg's
    # default callback and prints to stderr as usual.
    import ctypes
    import ctypes.util

    from embervision import _video  # noqa: F401  (installs the callback)

    name = ctypes.util.find_library("avutil")
    if name is None:
        pytest.skip("libavutil is not findable by name here")
    avutil = ctypes.CDLL(name)
    av_log_error = 16  # AV_LOG_ERROR
    avutil.av_log(None, av_log_error, b"ember-log-probe %d\n", ctypes.c_int(42))
    garbage = tmp_path / "garbage.mkv"
    garbage.write_bytes(np.random.default_rng(1).integers(0, 256, 4000, dtype=np.uint8).tobytes())
    with pytest.raises(RuntimeError, match="could not open"):
        io.VideoReader(str(garbage))
    err = capfd.readouterr().err
    assert "ember-log-probe 42" in err
    assert "garbage" not in err and "Invalid data" not in err  # the reader's own errors stay in its exception
