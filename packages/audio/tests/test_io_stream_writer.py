"""emberaudio.io.StreamWriter: media written here, decoded and probed by the ffmpeg CLI (and read back)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess

import numpy as np
import pytest

import ember
from emberaudio.io import CodecConfig, StreamReader, StreamWriter

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
                                reason="needs the ffmpeg and ffprobe CLIs")


def ffmpeg(*args: str) -> bytes:
    return subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", *args],
                          check=True, capture_output=True).stdout


def ffprobe(path) -> dict:
    out = subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-show_format", "-count_frames", "-of", "json",
                          str(path)], check=True, capture_output=True).stdout
    return json.loads(out)


def cli_audio(path, channels, fmt="s16le", dtype=np.int16, extra=()) -> np.ndarray:
    return np.frombuffer(ffmpeg("-i", str(path), *extra, "-f", fmt, "-"), dtype).reshape(-1, channels)


def noise_s16(n=4000, channels=2, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-32768, 32768, (n, channels)).astype(np.int16)


def sine(n, sr, f=440.0, channels=1) -> np.ndarray:
    t = np.arange(n) / sr
    return np.stack([0.5 * np.sin(2 * np.pi * f * (c + 1) * t) for c in range(channels)], 1).astype(np.float32)


def write_audio(dst, x, sr, fmt, **kw):
    w = StreamWriter(dst, format=kw.pop("container", None))
    w.add_audio_stream(sr, x.shape[1], fmt, **kw)
    with w:
        w.write_audio_chunk(0, ember.from_numpy(x))


def snr_db(ref: np.ndarray, x: np.ndarray, max_lag=2000) -> float:
    """SNR of x against ref at the best alignment (lossy codecs may shift by their delay)."""
    best = -np.inf
    n = len(ref)
    for lag in range(-max_lag, max_lag + 1, 1):
        a = ref[max(0, -lag): n - max(0, lag)]
        b = x[max(0, lag): max(0, lag) + len(a)]
        if len(b) < len(a) or len(a) < n // 2:
            continue
        err = np.sum((a - b) ** 2)
        best = max(best, 10 * np.log10(np.sum(a ** 2) / max(err, 1e-20)))
    return best


# --- audio ------------------------------------------------------------------------------------


@pytest.mark.parametrize("channels", [1, 2, 3])
def test_wav_pcm_round_trip_is_exact(tmp_path, channels):
    x = noise_s16(3001, channels)
    path = tmp_path / "a.wav"
    write_audio(str(path), x, 8000, "s16")
    probe = ffprobe(path)["streams"][0]
    assert (probe["codec_name"], int(probe["sample_rate"]), probe["channels"]) == ("pcm_s16le", 8000, channels)
    np.testing.assert_array_equal(cli_audio(path, channels), x)
    r = StreamReader(path)
    r.add_basic_audio_stream(-1, format="s16")
    r.process_all_packets()
    np.testing.assert_array_equal(r.pop_chunks()[0].numpy(), x)


@pytest.mark.parametrize("fmt,dtype,codec", [("u8", np.uint8, "pcm_u8"), ("s32", np.int32, "pcm_s32le"),
                                             ("flt", np.float32, "pcm_f32le"), ("dbl", np.float64, "pcm_f64le")])
def test_wav_sample_formats(tmp_path, fmt, dtype, codec):
    rng = np.random.default_rng(1)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, (500, 2), dtype=dtype, endpoint=True)
    else:
        x = rng.uniform(-1, 1, (500, 2)).astype(dtype)
    path = tmp_path / "a.wav"
    write_audio(str(path), x, 8000, fmt, encoder=codec)
    raw = {"u8": ("u8", np.uint8), "s32": ("s32le", np.int32), "flt": ("f32le", np.float32),
           "dbl": ("f64le", np.float64)}[fmt]
    np.testing.assert_array_equal(cli_audio(path, 2, *raw), x)


def test_multiple_chunks_and_non_contiguous_input(tmp_path):
    x = noise_s16(5000, 2)
    path = tmp_path / "a.wav"
    w = StreamWriter(path)
    w.add_audio_stream(8000, 2, "s16")
    with w:
        w.write_audio_chunk(0, ember.from_numpy(x[:1234]))
        w.write_audio_chunk(0, ember.from_numpy(np.ascontiguousarray(x[1234:].T)).t())  # a transposed view
        w.write_audio_chunk(0, ember.from_numpy(x[:0]))  # zero frames: nothing
    np.testing.assert_array_equal(cli_audio(path, 2), x)


def test_flac_is_lossless(tmp_path):
    x = noise_s16(4096, 2)
    path = tmp_path / "a.flac"
    write_audio(str(path), x, 16000, "s16", codec_config=CodecConfig(compression_level=8))
    assert ffprobe(path)["streams"][0]["codec_name"] == "flac"
    np.testing.assert_array_equal(cli_audio(path, 2), x)


@pytest.mark.parametrize("ext,codec,sr,min_snr", [("mp3", "mp3", 16000, 20.0), ("opus", "opus", 48000, 20.0),
                                                  ("ogg", "vorbis", 16000, 20.0)])
def test_lossy_round_trips(tmp_path, ext, codec, sr, min_snr):
    n = sr // 2
    x = sine(n, sr, 440.0, 2)
    path = tmp_path / f"a.{ext}"
    write_audio(str(path), x, sr, "flt", encoder="libvorbis" if codec == "vorbis" else None)
    probe = ffprobe(path)["streams"][0]
    assert probe["codec_name"] == codec and int(probe["sample_rate"]) == sr and probe["channels"] == 2
    y = cli_audio(path, 2, "f32le", np.float32)
    assert n - 2048 <= len(y) <= n + 2048
    assert snr_db(x[:, 0].astype(np.float64), y[:, 0].astype(np.float64)) > min_snr


def test_encoder_conversions(tmp_path):
    x = sine(16000, 16000, 300.0, 2)
    path = tmp_path / "a.wav"
    write_audio(str(path), x, 16000, "flt", encoder="pcm_s16le", encoder_sample_rate=8000, encoder_num_channels=1)
    probe = ffprobe(path)["streams"][0]
    assert (int(probe["sample_rate"]), probe["channels"], probe["codec_name"]) == (8000, 1, "pcm_s16le")
    y = cli_audio(path, 1)
    assert abs(len(y) - 8000) <= 64
    # Opus accepts 8/12/16/24/48 kHz only: 44.1 kHz goes to 48 kHz.
    path = tmp_path / "a.opus"
    write_audio(str(path), sine(4410, 44100), 44100, "flt")
    assert int(ffprobe(path)["streams"][0]["sample_rate"]) == 48000


def test_filter_desc_and_file_like_destination(tmp_path):
    x = noise_s16(2000, 1)
    buf = io.BytesIO()
    write_audio(buf, x, 8000, "s16", container="wav", filter_desc="volume=0.5")
    path = tmp_path / "a.wav"
    path.write_bytes(buf.getvalue())
    y = cli_audio(path, 1)
    np.testing.assert_allclose(y, x.astype(np.float64) * 0.5, atol=1)


def test_non_seekable_destination(tmp_path):
    class WriteOnly:
        def __init__(self):
            self.parts = []

        def write(self, b):
            self.parts.append(bytes(b))
            return len(b)

    x = noise_s16(3000, 2)
    out = WriteOnly()
    write_audio(out, x, 8000, "s16", container="flac")
    path = tmp_path / "a.flac"
    path.write_bytes(b"".join(out.parts))
    np.testing.assert_array_equal(cli_audio(path, 2), x)


def test_metadata(tmp_path):
    path = tmp_path / "a.flac"
    w = StreamWriter(path)
    w.add_audio_stream(8000, 1, "s16")
    w.set_metadata({"title": "ember tone", "artist": "helper"})
    with w:
        w.write_audio_chunk(0, ember.from_numpy(noise_s16(100, 1)))
    tags = {k.lower(): v for k, v in ffprobe(path)["format"]["tags"].items()}
    assert tags["title"] == "ember tone" and tags["artist"] == "helper"
    assert StreamReader(path).get_metadata()["title"] == "ember tone"


# --- video ------------------------------------------------------------------------------------


def gradient_frames(n, h=48, w=64) -> np.ndarray:
    """Smooth moving gradients (kind to lossy encoders), (n, 3, h, w) uint8."""
    y, x = np.mgrid[0:h, 0:w]
    frames = [np.stack([(x * 4 + 10 * k) % 256, (y * 5 + 7 * k) % 256, np.full_like(x, 40 + 20 * k)])
              for k in range(n)]
    return np.array(frames, dtype=np.uint8)


def test_mp4_with_audio_and_video(tmp_path):
    path = tmp_path / "v.mp4"
    frames = gradient_frames(10)
    audio = sine(16000, 16000)
    w = StreamWriter(path)
    w.add_video_stream(10, 64, 48, encoder="libx264", encoder_option={"crf": "10"})
    w.add_audio_stream(16000, 1)
    with w:
        w.write_video_chunk(0, ember.from_numpy(frames[:4]))
        w.write_audio_chunk(1, ember.from_numpy(audio))
        w.write_video_chunk(0, ember.from_numpy(frames[4:]))
    probe = {s["codec_type"]: s for s in ffprobe(path)["streams"]}
    v, a = probe["video"], probe["audio"]
    assert (v["codec_name"], v["width"], v["height"], v["avg_frame_rate"], int(v["nb_read_frames"])) == \
        ("h264", 64, 48, "10/1", 10)
    assert (a["codec_name"], int(a["sample_rate"])) == ("aac", 16000)
    cli = np.frombuffer(ffmpeg("-i", str(path), "-f", "rawvideo", "-pix_fmt", "rgb24", "-"), np.uint8)
    cli = cli.reshape(10, 48, 64, 3).transpose(0, 3, 1, 2)
    assert np.abs(cli.astype(int) - frames).mean() < 6
    r = StreamReader(path)
    r.add_basic_video_stream(-1)
    r.process_all_packets()
    (c,) = r.pop_chunks()
    assert c.shape == (10, 3, 48, 64) and c.pts == 0.0
    np.testing.assert_array_equal(c.numpy(), cli)


@pytest.mark.parametrize("fmt,channels", [("gray", 1), ("bgr24", 3), ("rgba", 4), ("yuv444p", 3)])
def test_video_input_formats(tmp_path, fmt, channels):
    path = tmp_path / "v.mkv"
    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (3, channels, 16, 24), dtype=np.uint8)
    w = StreamWriter(path)
    # FFV1 is lossless; it stores these as gray, bgr0, bgra and yuv444p (a lossless reordering).
    encoder_format = {"gray": "gray", "bgr24": "bgr0", "rgba": "bgra", "yuv444p": "yuv444p"}[fmt]
    w.add_video_stream(5, 24, 16, fmt, encoder="ffv1", encoder_format=encoder_format)
    with w:
        w.write_video_chunk(0, ember.from_numpy(frames))
    r = StreamReader(path)
    r.add_basic_video_stream(-1, format={"gray": "gray", "bgr24": "bgr24", "rgba": "rgba", "yuv444p": None}[fmt])
    if fmt == "yuv444p":
        r.remove_stream(0)
        r.add_video_stream(-1, filter_desc="format=yuv444p")
    r.process_all_packets()
    (c,) = r.pop_chunks()
    np.testing.assert_array_equal(c.numpy(), frames)


def test_video_pts(tmp_path):
    path = tmp_path / "v.mkv"
    frames = gradient_frames(3, 16, 16)
    w = StreamWriter(path)
    w.add_video_stream(10, 16, 16, encoder="ffv1")
    with w:
        w.write_video_chunk(0, ember.from_numpy(frames[:1]))
        w.write_video_chunk(0, ember.from_numpy(frames[1:2]), pts=0.5)
        w.write_video_chunk(0, ember.from_numpy(frames[2:]), pts=1.2)
    r = StreamReader(path)
    r.add_basic_video_stream(1, -1)
    pts = [c.pts for (c,) in r.stream()]
    assert pts == pytest.approx([0.0, 0.5, 1.2])


def test_video_scaling_and_rate_conversion(tmp_path):
    path = tmp_path / "v.mkv"
    w = StreamWriter(path)
    w.add_video_stream(10, 32, 16, encoder="ffv1", encoder_width=16, encoder_height=8, encoder_frame_rate=5)
    with w:
        w.write_video_chunk(0, ember.from_numpy(gradient_frames(10, 16, 32)))
    probe = ffprobe(path)["streams"][0]
    assert (probe["width"], probe["height"], probe["r_frame_rate"]) == (16, 8, "5/1")
    assert 4 <= int(probe["nb_read_frames"]) <= 5


# --- errors -----------------------------------------------------------------------------------


def test_writer_errors(tmp_path):
    with pytest.raises(ValueError, match="needs `format`"):
        StreamWriter(io.BytesIO())
    with pytest.raises(TypeError, match="dst must be"):
        StreamWriter(3)
    with pytest.raises(ValueError, match="Failed to pick an output format"):
        StreamWriter(tmp_path / "a.unknown-extension")
    with pytest.raises(ValueError, match="Failed to pick an output format"):
        StreamWriter(tmp_path / "a.wav", format="no-such-format")
    w = StreamWriter(tmp_path / "a.wav")
    with pytest.raises(RuntimeError, match="No output stream"):
        w.open()
    with pytest.raises(ValueError, match="Unsupported audio format"):
        w.add_audio_stream(8000, 1, "fltp")
    with pytest.raises(ValueError, match="sample_rate"):
        w.add_audio_stream(0, 1)
    with pytest.raises(ValueError, match="Unknown encoder"):
        w.add_audio_stream(8000, 1, encoder="no-such-encoder")
    with pytest.raises(ValueError, match="is not an audio encoder"):
        w.add_audio_stream(8000, 1, encoder="libx264")
    with pytest.raises(ValueError, match="Unexpected encoder options: nope"):
        w.add_audio_stream(8000, 1, encoder="pcm_s16le", encoder_option={"nope": "1"})
    with pytest.raises(ValueError, match="has no default video codec"):
        w.add_video_stream(10, 16, 16)
    with pytest.raises(ValueError, match="Unsupported video format"):
        w.add_video_stream(10, 16, 16, "yuv420p")
    with pytest.raises(ValueError, match="hw_accel"):
        w.add_video_stream(10, 16, 16, hw_accel="cuda")
    w.add_audio_stream(8000, 2, "s16")
    with pytest.raises(RuntimeError, match="not open"):
        w.write_audio_chunk(0, ember.from_numpy(noise_s16(10)))
    w.open()
    with pytest.raises(RuntimeError, match="must come before open"):
        w.add_audio_stream(8000, 1)
    with pytest.raises(IndexError, match="Output stream index out of range: 1") as error:
        w.write_audio_chunk(1, ember.from_numpy(noise_s16(10)))
    assert isinstance(error.value, RuntimeError)  # what torchaudio raises
    with pytest.raises(ValueError, match="Stream 0 is not video"):
        w.write_video_chunk(0, ember.from_numpy(np.zeros((1, 3, 16, 16), np.uint8)))
    with pytest.raises(ValueError, match="dtype must be int16"):
        w.write_audio_chunk(0, ember.from_numpy(np.zeros((10, 2), np.float32)))
    with pytest.raises(ValueError, match=r"must be \(frames, 2\)"):
        w.write_audio_chunk(0, ember.from_numpy(noise_s16(10, 3)))
    with pytest.raises(ValueError, match=r"must be \(frames, 2\)"):
        w.write_audio_chunk(0, ember.from_numpy(np.zeros(10, np.int16)))
    with pytest.raises(TypeError, match="chunk must be an ember.Tensor"):
        w.write_audio_chunk(0, [[0, 0]])
    w.write_audio_chunk(0, ember.from_numpy(noise_s16(100)))
    with pytest.raises(ValueError, match="before the end of the data already written"):
        w.write_audio_chunk(0, ember.from_numpy(noise_s16(10)), pts=0.001)
    with pytest.raises(ValueError, match="finite non-negative"):
        w.write_audio_chunk(0, ember.from_numpy(noise_s16(10)), pts=float("nan"))
    w.close()
    w.close()  # a second close does nothing
    with pytest.raises(RuntimeError, match="not open"):
        w.write_audio_chunk(0, ember.from_numpy(noise_s16(10)))


def test_video_chunk_shape_errors(tmp_path):
    w = StreamWriter(tmp_path / "v.mkv")
    w.add_video_stream(10, 16, 8, encoder="ffv1")
    with w:
        with pytest.raises(ValueError, match=r"must be \(frames, 3, 8, 16\)"):
            w.write_video_chunk(0, ember.from_numpy(np.zeros((1, 3, 16, 8), np.uint8)))
        with pytest.raises(ValueError, match="must be uint8"):
            w.write_video_chunk(0, ember.from_numpy(np.zeros((1, 3, 8, 16), np.float32)))


def test_unwritable_destination(tmp_path):
    w = StreamWriter(tmp_path / "no-such-dir" / "a.wav")
    w.add_audio_stream(8000, 1, "s16")
    with pytest.raises(RuntimeError, match="Failed to open the output .*No such file or directory"):
        w.open()

    class Broken:
        def write(self, b):
            raise OSError("disk full")

    w = StreamWriter(Broken(), format="wav", buffer_size=64)
    w.add_audio_stream(8000, 1, "s16")
    with pytest.raises(RuntimeError, match="disk full"):
        w.open()
        w.write_audio_chunk(0, ember.from_numpy(noise_s16(4000, 1)))
        w.close()


def test_a_failed_add_leaves_no_stream_behind(tmp_path):
    path = tmp_path / "a.mkv"
    w = StreamWriter(path)
    with pytest.raises(ValueError, match="Failed to parse the filter description"):
        w.add_audio_stream(8000, 1, "s16", encoder="flac", filter_desc="no_such_filter")
    w.add_audio_stream(8000, 1, "s16", encoder="flac")
    with w:
        w.write_audio_chunk(0, ember.from_numpy(noise_s16(800, 1)))
    streams = ffprobe(path)["streams"]
    assert len(streams) == 1 and streams[0]["codec_name"] == "flac"


def test_file_like_write_errors_are_python_exceptions():
    class BadReturn:
        def write(self, b):
            return "not a number"

    w = StreamWriter(BadReturn(), format="wav", buffer_size=64)
    w.add_audio_stream(8000, 1, "s16")
    with pytest.raises(RuntimeError, match="non-integer"):
        w.open()
        w.write_audio_chunk(0, ember.from_numpy(noise_s16(4000, 1)))
        w.close()
