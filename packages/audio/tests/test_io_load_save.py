"""emberaudio.load / save / info, cross-checked with the ffmpeg CLI."""

from __future__ import annotations

import io
import shutil
import subprocess

import numpy as np
import pytest

import ember
import emberaudio
from emberaudio import AudioMetaData

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")


def ffmpeg(*args: str) -> bytes:
    return subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", *args],
                          check=True, capture_output=True).stdout


def noise(n, channels, dtype, seed=0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        i = np.iinfo(dtype)
        return rng.integers(i.min, i.max, (channels, n), dtype=dtype, endpoint=True)
    return rng.uniform(-1, 1, (channels, n)).astype(dtype)


def test_lazy_exports():
    assert {"load", "save", "info", "AudioMetaData"} <= set(dir(emberaudio))
    from emberaudio import _backend
    assert emberaudio.load is _backend.load


@pytest.mark.parametrize("dtype,encoding,bits", [(np.int16, "PCM_S", 16), (np.int32, "PCM_S", 32),
                                                 (np.uint8, "PCM_U", 8), (np.float32, "PCM_F", 32),
                                                 (np.float64, "PCM_F", 64)])
def test_wav_round_trip_keeps_dtype_and_is_exact(tmp_path, dtype, encoding, bits):
    x = noise(1001, 2, dtype)
    path = tmp_path / "a.wav"
    emberaudio.save(str(path), ember.from_numpy(x), 8000)
    assert emberaudio.info(path) == AudioMetaData(8000, 1001, 2, bits, encoding)
    y, sr = emberaudio.load(path, normalize=False)
    assert sr == 8000
    if np.issubdtype(dtype, np.integer):
        assert y.numpy().dtype == dtype
        np.testing.assert_array_equal(y.numpy(), x)
    else:
        np.testing.assert_array_equal(y.numpy(), x.astype(np.float32))


def test_normalize_scales_integers_to_float(tmp_path):
    x = noise(500, 1, np.int16)
    path = tmp_path / "a.wav"
    emberaudio.save(path, ember.from_numpy(x), 16000)
    y, _ = emberaudio.load(path)
    assert y.dtype == ember.float32
    np.testing.assert_array_equal(y.numpy(), (x / 32768.0).astype(np.float32))


def test_channels_last(tmp_path):
    x = noise(300, 3, np.int16)
    path = tmp_path / "a.wav"
    emberaudio.save(path, ember.from_numpy(np.ascontiguousarray(x.T)), 8000, channels_first=False)
    y, _ = emberaudio.load(path, normalize=False, channels_first=False)
    assert y.shape == (300, 3)
    np.testing.assert_array_equal(y.numpy(), x.T)


@pytest.mark.parametrize("ext", ["wav", "flac"])
@pytest.mark.parametrize("offset,count", [(0, -1), (0, 100), (1234, -1), (1234, 500), (3999, 5), (4000, -1)])
def test_frame_offset_and_num_frames(tmp_path, ext, offset, count):
    x = noise(4000, 2, np.int16)
    path = tmp_path / f"a.{ext}"
    emberaudio.save(path, ember.from_numpy(x), 8000)
    y, _ = emberaudio.load(path, frame_offset=offset, num_frames=count, normalize=False)
    expected = x[:, offset:] if count == -1 else x[:, offset:offset + count]
    if ext == "flac":  # normalize=False keeps integers for PCM WAV only, as torchaudio
        expected = (expected / 32768.0).astype(np.float32)
    np.testing.assert_array_equal(y.numpy(), expected)


def test_load_matches_the_cli_on_a_cli_file(tmp_path):
    path = tmp_path / "a.flac"
    ffmpeg("-f", "lavfi", "-i", "aevalsrc=0.4*sin(2*PI*330*t)|0.2*sin(2*PI*550*t):s=22050:d=0.5", "-c:a", "flac",
           "-sample_fmt", "s16", str(path))
    ref = np.frombuffer(ffmpeg("-i", str(path), "-f", "f32le", "-"), np.float32).reshape(-1, 2).T
    y, sr = emberaudio.load(path)
    assert sr == 22050
    np.testing.assert_array_equal(y.numpy(), ref)
    meta = emberaudio.info(path)
    assert meta == AudioMetaData(22050, ref.shape[1], 2, 16, "FLAC")


@pytest.mark.parametrize("encoding,bits,codec,info_bits", [("PCM_S", 24, "pcm_s24le", 24), ("PCM_S", 16, "pcm_s16le", 16),
                                                           ("PCM_F", 64, "pcm_f64le", 64), ("PCM_U", 8, "pcm_u8", 8),
                                                           ("ULAW", 8, "pcm_mulaw", 8), ("ALAW", None, "pcm_alaw", 8)])
def test_wav_encodings(tmp_path, encoding, bits, codec, info_bits):
    x = np.sin(np.linspace(0, 20, 800, dtype=np.float32))[None] * 0.5
    path = tmp_path / "a.wav"
    emberaudio.save(path, ember.from_numpy(x), 8000, encoding=encoding, bits_per_sample=bits)
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "stream=codec_name", "-of", "csv=p=0",
                            str(path)], check=True, capture_output=True, text=True).stdout.strip()
    assert probe == codec
    meta = emberaudio.info(path)
    assert (meta.encoding, meta.bits_per_sample, meta.num_frames) == (encoding, info_bits, 800)
    y, _ = emberaudio.load(path)
    tol = {"PCM_U": 1 / 64, "ULAW": 0.02, "ALAW": 0.02}.get(encoding, 1e-4)
    np.testing.assert_allclose(y.numpy(), x, atol=tol)


def test_flac_24_bit(tmp_path):
    x = (noise(1000, 1, np.int32) >> 8) << 8  # 24 significant bits
    path = tmp_path / "a.flac"
    emberaudio.save(path, ember.from_numpy(x), 8000, bits_per_sample=24, compression=5)
    assert emberaudio.info(path).bits_per_sample == 24
    y, _ = emberaudio.load(path, normalize=False)
    np.testing.assert_array_equal(y.numpy(), (x / 2.0 ** 31).astype(np.float32))  # FLAC is not PCM: float


@pytest.mark.parametrize("ext,encoding,sr", [("mp3", "MP3", 16000), ("ogg", "VORBIS", 16000), ("opus", "OPUS", 48000)])
def test_lossy_save_load(tmp_path, ext, encoding, sr):
    t = np.arange(sr // 2) / sr
    x = (0.5 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[None]
    path = tmp_path / f"a.{ext}"
    emberaudio.save(path, ember.from_numpy(x), sr)
    meta = emberaudio.info(path)
    assert (meta.sample_rate, meta.num_channels, meta.bits_per_sample, meta.encoding) == (sr, 1, 0, encoding)
    y, got_sr = emberaudio.load(path)
    assert got_sr == sr and abs(y.shape[1] - x.shape[1]) <= 2048
    assert meta.num_frames == y.shape[1]
    # Energy matches (a lossy codec keeps a pure tone's level).
    assert np.sqrt(np.mean(y.numpy() ** 2)) == pytest.approx(np.sqrt(np.mean(x ** 2)), rel=0.1)


def test_file_like(tmp_path):
    x = noise(700, 2, np.int16)
    buf = io.BytesIO()
    emberaudio.save(buf, ember.from_numpy(x), 8000, format="wav")
    buf.seek(0)
    y, sr = emberaudio.load(buf, normalize=False)
    np.testing.assert_array_equal(y.numpy(), x)
    buf.seek(0)
    assert emberaudio.info(buf, format="wav").num_frames == 700
    y, _ = emberaudio.load(buf.getvalue(), normalize=False)  # bytes
    np.testing.assert_array_equal(y.numpy(), x)


def test_empty_audio(tmp_path):
    path = tmp_path / "a.wav"
    emberaudio.save(path, ember.from_numpy(np.zeros((2, 0), np.float32)), 8000)
    y, sr = emberaudio.load(path)
    assert y.shape == (2, 0) and sr == 8000


def test_errors(tmp_path):
    x = ember.from_numpy(np.zeros((1, 10), np.float32))
    with pytest.raises(RuntimeError, match="No such file or directory"):
        emberaudio.load(tmp_path / "missing.wav")
    with pytest.raises(RuntimeError, match="No such file or directory"):
        emberaudio.info(tmp_path / "missing.wav")
    with pytest.raises(RuntimeError, match="Failed to (open the input|find stream information)"):
        emberaudio.load(b"not audio at all" * 10)
    with pytest.raises(ValueError, match="Unsupported backend 'sox'"):
        emberaudio.load(tmp_path / "a.wav", backend="sox")
    with pytest.raises(ValueError, match="src must be 2D"):
        emberaudio.save(tmp_path / "a.wav", ember.from_numpy(np.zeros(10, np.float32)), 8000)
    with pytest.raises(TypeError, match="src must be an ember.Tensor"):
        emberaudio.save(tmp_path / "a.wav", np.zeros((1, 10), np.float32), 8000)
    with pytest.raises(ValueError, match="sample_rate must be a positive integer"):
        emberaudio.save(tmp_path / "a.wav", x, 0)
    with pytest.raises(ValueError, match="Cannot tell the format"):
        emberaudio.save(tmp_path / "noext", x, 8000)
    with pytest.raises(ValueError, match="Unsupported encoding/bits_per_sample for WAV: PCM_F, 16"):
        emberaudio.save(tmp_path / "a.wav", x, 8000, encoding="PCM_F", bits_per_sample=16)
    with pytest.raises(ValueError, match="Unsupported encoding 'GSM'"):
        emberaudio.save(tmp_path / "a.wav", x, 8000, encoding="GSM")
    with pytest.raises(ValueError, match="FLAC supports bits_per_sample 16 or 24"):
        emberaudio.save(tmp_path / "a.flac", x, 8000, bits_per_sample=8)
    emberaudio.save(tmp_path / "a.wav", x, 8000)
    with pytest.raises(ValueError, match="frame_offset must be non-negative"):
        emberaudio.load(tmp_path / "a.wav", frame_offset=-1)
    with pytest.raises(ValueError, match="num_frames must be positive or -1"):
        emberaudio.load(tmp_path / "a.wav", num_frames=0)
    with pytest.raises(TypeError, match="frame_offset must be an int"):
        emberaudio.load(tmp_path / "a.wav", frame_offset=1.5)
    video = tmp_path / "v.mkv"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=16x16:rate=5:duration=0.4", "-c:v", "ffv1", str(video))
    with pytest.raises(RuntimeError, match="no audio stream"):
        emberaudio.load(video)
    with pytest.raises(RuntimeError, match="no audio stream"):
        emberaudio.info(video)


@pytest.mark.parametrize("codec,ext", [("libmp3lame", "mp3"), ("aac", "m4a"), ("libvorbis", "ogg")])
@pytest.mark.parametrize("offset", [1, 100, 9000, 15000])
def test_frame_offset_of_lossy_files_matches_a_full_decode(tmp_path, codec, ext, offset):
    # Decoding restarts before the offset, so the samples equal those of a decode from the start
    # (the MP3/AAC encoder delay included: sample k sits at the stream's start time + k / rate).
    path = tmp_path / f"a.{ext}"
    ffmpeg("-f", "lavfi", "-i", "sine=frequency=440:sample_rate=16000:duration=1", "-c:a", codec, str(path))
    full, _ = emberaudio.load(path)
    part, _ = emberaudio.load(path, frame_offset=offset, num_frames=400)
    np.testing.assert_array_equal(part.numpy(), full.numpy()[:, offset:offset + 400])
