"""emberaudio.io.StreamReader against the ffmpeg CLI: media made by the CLI, decoded by both, compared."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from emberaudio.io import (
    OutputAudioStream,
    OutputVideoStream,
    SourceAudioStream,
    SourceVideoStream,
    StreamReader,
)

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")

SR = 8000


def ffmpeg(*args: str) -> bytes:
    return subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", *args],
                          check=True, capture_output=True).stdout


def raw_audio(path, fmt="s16le", dtype=np.int16, channels=2, extra=()) -> np.ndarray:
    """The CLI's decode of `path` as (frames, channels)."""
    return np.frombuffer(ffmpeg("-i", str(path), *extra, "-f", fmt, "-"), dtype).reshape(-1, channels)


def raw_video(path, pix_fmt="rgb24", channels=3, w=64, h=48, extra=()) -> np.ndarray:
    """The CLI's decode of `path` as (frames, C, H, W) (packed formats)."""
    data = np.frombuffer(ffmpeg("-i", str(path), *extra, "-f", "rawvideo", "-pix_fmt", pix_fmt, "-"), np.uint8)
    return data.reshape(-1, h, w, channels).transpose(0, 3, 1, 2)


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    d = tmp_path_factory.mktemp("media")
    # 1 s of two different channels: a tone and noise, 16-bit PCM at 8 kHz.
    wav = d / "a.wav"
    ffmpeg("-f", "lavfi", "-i", f"aevalsrc=0.5*sin(2*PI*440*t)|0.3*random(0):s={SR}:d=1", "-c:a", "pcm_s16le", str(wav))
    flac = d / "a.flac"
    ffmpeg("-i", str(wav), str(flac))
    mp3 = d / "a.mp3"
    ffmpeg("-i", str(wav), "-c:a", "libmp3lame", str(mp3))
    # 1 s of 64x48 video at 10 fps (a key frame every 5) with a 16 kHz tone.
    mp4 = d / "v.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=1", "-f", "lavfi", "-i",
           "sine=frequency=440:sample_rate=16000:duration=1", "-c:v", "libx264", "-g", "5", "-pix_fmt", "yuv420p",
           "-c:a", "aac", "-shortest", str(mp4))
    return {"wav": wav, "flac": flac, "mp3": mp3, "mp4": mp4}


def read_all(reader: StreamReader) -> list:
    """Every chunk per output stream, concatenated, plus the pts of each chunk."""
    chunks = [[] for _ in range(reader.num_out_streams)]
    for group in reader.stream():
        for i, c in enumerate(group):
            if c is not None:
                chunks[i].append(c)
    return chunks


# --- source information -----------------------------------------------------------------------


def test_source_info_of_a_wav(media):
    r = StreamReader(media["wav"])
    assert r.num_src_streams == 1 and r.num_out_streams == 0
    assert r.default_audio_stream == 0 and r.default_video_stream is None
    info = r.get_src_stream_info(0)
    assert isinstance(info, SourceAudioStream)
    assert (info.media_type, info.codec, info.format) == ("audio", "pcm_s16le", "s16")
    assert info.sample_rate == SR and info.num_channels == 2
    assert info.bit_rate == SR * 2 * 16
    assert "PCM" in info.codec_long_name


def test_source_info_of_an_mp4(media):
    r = StreamReader(str(media["mp4"]))
    assert r.num_src_streams == 2
    v = r.get_src_stream_info(r.default_video_stream)
    a = r.get_src_stream_info(r.default_audio_stream)
    assert isinstance(v, SourceVideoStream) and isinstance(a, SourceAudioStream)
    assert (v.codec, v.width, v.height, v.frame_rate, v.num_frames) == ("h264", 64, 48, 10.0, 10)
    assert (a.codec, a.sample_rate, a.num_channels) == ("aac", 16000.0, 1)
    assert "encoder" in r.get_metadata()


def test_out_stream_info(media):
    r = StreamReader(media["mp4"])
    r.add_basic_audio_stream(100, sample_rate=8000, format="s16")
    r.add_basic_video_stream(2, format="gray", width=32, height=24, frame_rate=5)
    a, v = r.get_out_stream_info(0), r.get_out_stream_info(1)
    assert isinstance(a, OutputAudioStream) and isinstance(v, OutputVideoStream)
    assert (a.source_index, a.format, a.sample_rate, a.num_channels) == (r.default_audio_stream, "s16", 8000, 1)
    assert "aresample=8000" in a.filter_description
    assert (v.source_index, v.format, v.width, v.height, v.frame_rate) == (r.default_video_stream, "gray", 32, 24, 5)


# --- audio decoding ---------------------------------------------------------------------------


def test_wav_chunks_are_exact_with_pts(media):
    ref = raw_audio(media["wav"])
    r = StreamReader(media["wav"])
    r.add_basic_audio_stream(frames_per_chunk=3000, format="s16")
    (chunks,) = read_all(r)
    assert [c.shape for c in chunks] == [(3000, 2), (3000, 2), (2000, 2)]
    assert [c.pts for c in chunks] == pytest.approx([0.0, 3000 / SR, 6000 / SR])
    assert all(c.dtype == ember.int16 for c in chunks)
    np.testing.assert_array_equal(np.concatenate([c.numpy() for c in chunks]), ref)


@pytest.mark.parametrize("fmt,dtype", [("u8", ember.uint8), ("u8p", ember.uint8), ("s16p", ember.int16),
                                       ("s32", ember.int32), ("s32p", ember.int32), ("s64p", ember.int64),
                                       ("flt", ember.float32), ("fltp", ember.float32), ("dbl", ember.float64),
                                       ("dblp", ember.float64)])
def test_sample_formats_and_dtypes(media, fmt, dtype):
    ref = raw_audio(media["wav"]).astype(np.int64)
    r = StreamReader(media["wav"])
    r.add_basic_audio_stream(-1, format=fmt)
    r.process_all_packets()
    (c,) = r.pop_chunks()
    assert c.dtype == dtype and c.shape == (SR, 2)
    x = c.numpy()
    # FFmpeg's exact integer widenings: u8 keeps the top byte (offset 128), s32/s64 shift left.
    expected = {"u8": (ref >> 8) + 128, "s16": ref, "s32": ref << 16, "s64": ref << 48,
                "flt": ref / 32768.0, "dbl": ref / 32768.0}[fmt.rstrip("p")]
    np.testing.assert_array_equal(x.astype(np.float64), expected.astype(np.float64))


def test_flac_is_lossless(media):
    r = StreamReader(media["flac"])
    assert r.get_src_stream_info(0).codec == "flac"
    r.add_basic_audio_stream(-1, format="s16")
    r.process_all_packets()
    (c,) = r.pop_chunks()
    np.testing.assert_array_equal(c.numpy(), raw_audio(media["wav"]))


def test_mp3_matches_the_cli(media):
    r = StreamReader(media["mp3"])
    r.add_basic_audio_stream(-1, format="flt")
    r.process_all_packets()
    (c,) = r.pop_chunks()
    ref = raw_audio(media["mp3"], "f32le", np.float32)
    assert c.shape == ref.shape
    np.testing.assert_allclose(c.numpy(), ref, atol=1e-6)


def test_filter_desc_resamples_like_the_cli(media):
    r = StreamReader(media["wav"])
    r.add_audio_stream(-1, filter_desc="aresample=4000,aformat=sample_fmts=s16")
    r.process_all_packets()
    (c,) = r.pop_chunks()
    ref = raw_audio(media["wav"], extra=("-af", "aresample=4000"))
    assert abs(c.shape[0] - 4000) <= 64
    np.testing.assert_array_equal(c.numpy(), ref)


def test_basic_stream_channels_and_rate(media):
    r = StreamReader(media["wav"])
    r.add_basic_audio_stream(-1, sample_rate=16000, num_channels=1, format="flt")
    r.process_all_packets()
    (c,) = r.pop_chunks()
    assert c.shape[1] == 1 and abs(c.shape[0] - 16000) <= 64


def test_two_output_streams_from_one_source(media):
    r = StreamReader(media["wav"])
    # Unbounded buffers: stream() pops one chunk per stream per step, so the faster one piles up.
    r.add_basic_audio_stream(1000, -1, format="s16")
    r.add_basic_audio_stream(500, -1, format="flt")
    a, b = read_all(r)
    a, b = np.concatenate([c.numpy() for c in a]), np.concatenate([c.numpy() for c in b])
    np.testing.assert_array_equal(a / 32768.0, b)


# --- chunks and buffers ------------------------------------------------------------------------


def test_oldest_chunks_are_dropped_past_buffer_chunk_size(media):
    ref = raw_audio(media["wav"])
    r = StreamReader(media["wav"])
    r.add_basic_audio_stream(frames_per_chunk=100, buffer_chunk_size=2, format="s16")
    r.process_all_packets()
    first, second, third = r.pop_chunks(), r.pop_chunks(), r.pop_chunks()
    np.testing.assert_array_equal(first[0].numpy(), ref[7800:7900])
    np.testing.assert_array_equal(second[0].numpy(), ref[7900:8000])
    assert first[0].pts == pytest.approx(7800 / SR)
    assert third == (None,)


def test_is_buffer_ready_and_fill_buffer(media):
    r = StreamReader(media["wav"])
    r.add_basic_audio_stream(frames_per_chunk=2500)
    assert not r.is_buffer_ready()
    assert r.pop_chunks() == (None,)
    assert r.fill_buffer() == 0 and r.is_buffer_ready()
    (c,) = r.pop_chunks()
    assert c.shape == (2500, 2)
    sizes = []
    while r.fill_buffer() == 0:
        sizes.append(r.pop_chunks()[0].shape[0])
    while (c := r.pop_chunks()[0]) is not None:
        sizes.append(c.shape[0])
    assert sizes == [2500, 2500, 500]
    assert r.process_packet() == 1  # stays at the end


def test_remove_stream(media):
    r = StreamReader(media["mp4"])
    r.add_basic_video_stream(1)
    r.add_basic_audio_stream(1024)
    r.remove_stream(0)
    assert r.num_out_streams == 1 and r.get_out_stream_info(0).media_type == "audio"
    with pytest.raises(IndexError, match="Output stream index out of range: 1"):
        r.remove_stream(1)


# --- video ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt,pix,channels", [("rgb24", "rgb24", 3), ("bgr24", "bgr24", 3), ("gray", "gray", 1),
                                              ("rgba", "rgba", 4)])
def test_video_frames_match_the_cli(media, fmt, pix, channels):
    r = StreamReader(media["mp4"])
    r.add_basic_video_stream(frames_per_chunk=4, format=fmt)
    (chunks,) = read_all(r)
    assert [c.shape for c in chunks] == [(4, channels, 48, 64), (4, channels, 48, 64), (2, channels, 48, 64)]
    assert [c.pts for c in chunks] == pytest.approx([0.0, 0.4, 0.8])
    assert chunks[0].dtype == ember.uint8
    frames = np.concatenate([c.numpy() for c in chunks])
    np.testing.assert_array_equal(frames, raw_video(media["mp4"], pix, channels))


def test_yuv420p_planes(media):
    r = StreamReader(media["mp4"])
    r.add_basic_video_stream(-1, format="yuv420p")
    r.process_all_packets()
    (c,) = r.pop_chunks()
    assert c.shape == (10, 3, 48, 64)
    raw = np.frombuffer(ffmpeg("-i", str(media["mp4"]), "-f", "rawvideo", "-pix_fmt", "yuv420p", "-"), np.uint8)
    raw = raw.reshape(10, -1)
    y = raw[:, :48 * 64].reshape(10, 48, 64)
    u = raw[:, 48 * 64:48 * 64 + 24 * 32].reshape(10, 24, 32)
    x = c.numpy()
    np.testing.assert_array_equal(x[:, 0], y)
    np.testing.assert_array_equal(x[:, 1], np.repeat(np.repeat(u, 2, axis=1), 2, axis=2))  # chroma repeated 2x2


def test_video_filters(media):
    r = StreamReader(media["mp4"])
    r.add_video_stream(-1, filter_desc="format=rgb24")
    r.add_video_stream(-1, filter_desc="vflip,format=rgb24")
    r.add_basic_video_stream(-1, width=32, height=24, frame_rate=5)
    r.process_all_packets()
    plain, flipped, small = r.pop_chunks()
    np.testing.assert_array_equal(flipped.numpy(), plain.numpy()[:, :, ::-1, :])
    assert small.shape == (5, 3, 24, 32)
    np.testing.assert_array_equal(small.numpy(), raw_video(media["mp4"], w=32, h=24,
                                                           extra=("-vf", "fps=5,scale=width=32:height=24")))


# --- seeking ----------------------------------------------------------------------------------


@pytest.mark.parametrize("key", ["wav", "flac"])
@pytest.mark.parametrize("t", [0.0, 0.25, 0.5, 0.3337])
def test_precise_seek_lands_on_the_sample(media, key, t):
    ref = raw_audio(media["wav"])
    r = StreamReader(media[key])
    r.add_basic_audio_stream(-1, format="s16")
    r.process_packet()
    r.seek(t)  # precise
    r.process_all_packets()
    (c,) = r.pop_chunks()
    start = round(t * SR)
    assert c.pts == pytest.approx(start / SR)
    np.testing.assert_array_equal(c.numpy(), ref[start:])


def test_seek_after_the_end_reads_again(media):
    r = StreamReader(media["mp4"])
    r.add_basic_video_stream(-1)
    r.add_basic_audio_stream(-1)
    r.process_all_packets()
    first = [c.numpy() for c in r.pop_chunks()]
    assert r.process_packet() == 1
    r.seek(0.0)
    r.process_all_packets()
    again = [c.numpy() for c in r.pop_chunks()]
    np.testing.assert_array_equal(again[0], first[0])
    # AAC restarts without the decoder state of its priming samples: equal length, tiny differences.
    assert again[1].shape == first[1].shape
    np.testing.assert_allclose(again[1], first[1], atol=1e-3)


@pytest.mark.parametrize("t,mode,first", [(0.7, "precise", 7), (0.35, "precise", 4), (0.7, "key", 5),
                                          (0.45, "key", 0), (0.0, "precise", 0)])
def test_video_seek_modes(media, t, mode, first):
    ref = raw_video(media["mp4"])
    r = StreamReader(media["mp4"])
    r.add_basic_video_stream(-1)
    r.seek(t, mode)
    r.process_all_packets()
    (c,) = r.pop_chunks()
    assert c.pts == pytest.approx(first / 10)
    assert c.shape[0] == 10 - first
    np.testing.assert_array_equal(c.numpy(), ref[first:])


def test_seek_any_lands_at_or_before(media):
    # Every WAV packet decodes on its own, so "any" lands on the packet holding the time.
    ref = raw_audio(media["wav"])
    r = StreamReader(media["wav"])
    r.add_basic_audio_stream(-1, format="s16")
    r.seek(0.3, "any")
    r.process_all_packets()
    (c,) = r.pop_chunks()
    start = round(c.pts * SR)
    assert 0 <= start <= 0.3 * SR
    np.testing.assert_array_equal(c.numpy(), ref[start:])


# --- sources ----------------------------------------------------------------------------------


def test_raw_input_with_format_and_options():
    x = (np.arange(2000) % 200 - 100).astype(np.int16).reshape(1000, 2)
    r = StreamReader(x.tobytes(), format="s16le", option={"sample_rate": "8000", "ch_layout": "stereo"})
    info = r.get_src_stream_info(0)
    assert (info.codec, info.sample_rate, info.num_channels) == ("pcm_s16le", 8000, 2)
    r.add_basic_audio_stream(-1, format="s16")
    r.process_all_packets()
    np.testing.assert_array_equal(r.pop_chunks()[0].numpy(), x)


class ReadOnly:
    """A non-seekable file-like object: read(n) only."""

    def __init__(self, data: bytes):
        self._f = io.BytesIO(data)

    def read(self, n):
        return self._f.read(n)


@pytest.mark.parametrize("key", ["wav", "flac", "mp3"])
def test_file_like_and_bytes_sources(media, key):
    data = media[key].read_bytes()

    def decode(src, **kw):
        r = StreamReader(src, **kw)
        r.add_basic_audio_stream(-1, format="flt")
        r.process_all_packets()
        return r.pop_chunks()[0].numpy()

    expected = decode(str(media[key]))
    with open(media[key], "rb") as f:
        np.testing.assert_array_equal(decode(f, buffer_size=512), expected)
    np.testing.assert_array_equal(decode(data), expected)
    unseekable = decode(ReadOnly(data), format=key)
    # Without seek FFmpeg cannot use the MP3's trailing gapless info: the encoder padding stays.
    assert len(expected) <= len(unseekable) <= len(expected) + (1152 if key == "mp3" else 0)
    np.testing.assert_array_equal(unseekable[: len(expected)], expected)
    np.testing.assert_array_equal(decode(media[key]), expected)  # os.PathLike
    np.testing.assert_array_equal(decode(bytearray(data)), expected)


def test_file_like_mp4_with_seek(media):
    with open(media["mp4"], "rb") as f:
        r = StreamReader(f)
        r.add_basic_video_stream(-1)
        r.seek(0.5)
        r.process_all_packets()
        (c,) = r.pop_chunks()
    np.testing.assert_array_equal(c.numpy(), raw_video(media["mp4"])[5:])


# --- errors -----------------------------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(RuntimeError, match=r"Failed to open the input .*No such file or directory"):
        StreamReader(tmp_path / "missing.wav")


@pytest.mark.parametrize("data", [b"", b"\x00", os.urandom(4096), b"RIFF" + bytes(100)])
def test_undecodable_data_raises(data):
    with pytest.raises(RuntimeError, match=r"Failed to (open the input|find stream information)"):
        StreamReader(data)


def test_file_like_errors_carry_the_python_message():
    class Broken:
        def read(self, n):
            raise OSError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        StreamReader(Broken())

    class TooMuch:
        def read(self, n):
            return b"x" * (n + 1)

    with pytest.raises(RuntimeError, match="returned"):
        StreamReader(TooMuch())


def test_bad_arguments(media):
    with pytest.raises(TypeError, match="src must be"):
        StreamReader(123)
    with pytest.raises(ValueError, match="Unsupported device/format"):
        StreamReader(media["wav"], format="no-such-format")
    with pytest.raises(ValueError, match="Unexpected format options: bogus"):
        StreamReader(media["wav"], option={"bogus": "1"})
    with pytest.raises(ValueError, match="buffer_size"):
        StreamReader(media["wav"], buffer_size=0)
    r = StreamReader(media["wav"])
    with pytest.raises(RuntimeError, match="No output stream"):
        r.process_packet()
    with pytest.raises(RuntimeError, match="No output stream"):
        next(r.stream())
    with pytest.raises(RuntimeError, match="no video stream"):
        r.add_basic_video_stream(1)
    with pytest.raises(IndexError, match="Source stream index out of range: 5") as error:
        r.get_src_stream_info(5)
    assert isinstance(error.value, RuntimeError)  # what torchaudio raises
    with pytest.raises(IndexError, match="Source stream index out of range: -1"):
        r.add_basic_audio_stream(1, stream_index=-1)
    with pytest.raises(IndexError, match="Output stream index out of range: 0"):
        r.get_out_stream_info(0)
    with pytest.raises(ValueError, match="frames_per_chunk"):
        r.add_basic_audio_stream(0)
    with pytest.raises(ValueError, match="buffer_chunk_size"):
        r.add_basic_audio_stream(1, buffer_chunk_size=-5)
    with pytest.raises(ValueError, match="Unsupported audio format"):
        r.add_basic_audio_stream(1, format="s24")
    with pytest.raises(ValueError, match="Unsupported codec"):
        r.add_basic_audio_stream(1, decoder="no-such-decoder")
    with pytest.raises(ValueError, match="Unexpected decoder options: nope"):
        r.add_basic_audio_stream(1, decoder_option={"nope": "1"})
    with pytest.raises(ValueError, match="Failed to parse the filter description"):
        r.add_audio_stream(1, filter_desc="no_such_filter=1")
    with pytest.raises(ValueError, match=r"Failed to (parse|configure) the filter"):
        r.add_audio_stream(1, filter_desc="vflip")  # a video filter on audio
    assert r.num_out_streams == 0
    r.add_basic_audio_stream(1)
    with pytest.raises(ValueError, match='mode must be "key", "any" or "precise"'):
        r.seek(0.1, "nearest")
    with pytest.raises(ValueError, match="finite non-negative"):
        r.seek(-1.0)
    with pytest.raises(TypeError, match="timestamp must be a number"):
        r.seek("1")


def test_video_arguments(media):
    r = StreamReader(media["mp4"])
    with pytest.raises(ValueError, match="hw_accel"):
        r.add_basic_video_stream(1, hw_accel="cuda:0")
    with pytest.raises(ValueError, match="Unsupported video format"):
        r.add_basic_video_stream(1, format="yuv422p10le")
    with pytest.raises(ValueError, match="is not audio"):
        r.add_basic_audio_stream(1, stream_index=r.default_video_stream)
    r.add_video_stream(1, filter_desc="format=yuv422p")  # a format we do not hand out
    with pytest.raises(RuntimeError, match="Unexpected video format in the output: yuv422p"):
        r.process_all_packets()


def test_a_second_thread_gets_an_error_not_a_race(media):
    started, release = threading.Event(), threading.Event()

    class Slow:
        """Blocks inside read() (with the GIL released by the decoding thread) until told."""

        def __init__(self, data):
            self.f, self.block = io.BytesIO(data), False

        def read(self, n):
            if self.block:
                started.set()
                release.wait(10)
            return self.f.read(n)

    src = Slow(media["wav"].read_bytes())
    r = StreamReader(src, buffer_size=256)
    r.add_basic_audio_stream(100)
    src.block = True
    worker = threading.Thread(target=r.process_all_packets)
    worker.start()
    try:
        assert started.wait(10)
        with pytest.raises(RuntimeError, match="in use by another thread"):
            r.pop_chunks()
        with pytest.raises(RuntimeError, match="in use by another thread"):
            r.seek(0.0)
    finally:
        release.set()
        worker.join(10)
    assert r.pop_chunks()[0] is not None


# --- damaged input: exceptions, never a crash -------------------------------------------------


def decode_everything(data, fmt: str | None = None) -> None:
    """Opens and decodes every audio/video stream; any failure must be a Python exception."""
    try:
        r = StreamReader(data, format=fmt)
        if r.default_audio_stream is not None:
            r.add_basic_audio_stream(512)
        if r.default_video_stream is not None:
            r.add_basic_video_stream(4)
        if r.num_out_streams:
            for _ in r.stream():
                pass
    except (RuntimeError, ValueError):
        pass


@pytest.mark.parametrize("key", ["wav", "flac", "mp3", "mp4"])
@pytest.mark.parametrize("fraction", [0.0, 0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99])
def test_truncated_files(media, key, fraction):
    data = media[key].read_bytes()
    decode_everything(data[: int(len(data) * fraction)])
    decode_everything(data[: int(len(data) * fraction)], fmt=key)


@pytest.fixture(scope="module")
def small_media(media):
    return {k: media[k].read_bytes() for k in ("wav", "flac", "mp3", "mp4")}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(["wav", "flac", "mp3", "mp4"]), cut=st.floats(0, 1),
       flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 7)), max_size=8), unseekable=st.booleans())
def test_fuzz_truncation_and_bit_flips(small_media, key, cut, flips, unseekable):
    data = bytearray(small_media[key])
    for where, bit in flips:
        data[min(int(where * len(data)), len(data) - 1)] ^= 1 << bit
    data = bytes(data[: int(len(data) * cut)])
    decode_everything(ReadOnly(data) if unseekable else data)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=st.sampled_from(["wav", "flac", "mp3"]), cut=st.floats(0, 1),
       flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 7)), max_size=4),
       offset=st.integers(0, 9000))
def test_fuzz_load_and_info(small_media, key, cut, flips, offset):
    import emberaudio

    data = bytearray(small_media[key])
    for where, bit in flips:
        data[min(int(where * len(data)), len(data) - 1)] ^= 1 << bit
    data = bytes(data[: int(len(data) * cut)])
    try:
        meta = emberaudio.info(data)
        assert meta.num_channels >= 0
        waveform, _ = emberaudio.load(data, frame_offset=offset)
        assert waveform.dim() == 2
    except (RuntimeError, ValueError):
        pass


def test_file_like_read_returning_a_non_buffer():
    class Text:
        def read(self, n):
            return "text, not bytes"

    with pytest.raises(RuntimeError, match="Failed to open the input"):
        StreamReader(Text())
