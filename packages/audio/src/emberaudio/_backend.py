"""emberaudio.load / save / info: whole-file audio I/O on top of emberaudio.io's StreamReader and
StreamWriter (torchaudio 2.2's FFmpeg backend, the only backend here)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

import ember

__all__ = ["AudioMetaData", "info", "load", "save"]


@dataclass
class AudioMetaData:
    """What ``info`` reports: ``num_frames`` is 0 where the container does not record it;
    ``encoding`` is one of PCM_S, PCM_U, PCM_F, FLAC, ULAW, ALAW, MP3, VORBIS, AMR_NB, AMR_WB, OPUS,
    UNKNOWN."""

    sample_rate: int
    num_frames: int
    num_channels: int
    bits_per_sample: int
    encoding: str


def _check_backend(backend):
    if backend not in (None, "ffmpeg"):
        raise ValueError(f"Unsupported backend {backend!r}: emberaudio has the 'ffmpeg' backend only")


_ENCODINGS = {"flac": "FLAC", "pcm_mulaw": "ULAW", "pcm_alaw": "ALAW", "mp3": "MP3", "vorbis": "VORBIS",
              "amr_nb": "AMR_NB", "amr_wb": "AMR_WB", "opus": "OPUS"}


def _encoding(codec: str) -> str:
    if codec.startswith("pcm_"):
        kind = codec[4]
        return {"s": "PCM_S", "u": "PCM_U", "f": "PCM_F"}.get(kind, _ENCODINGS.get(codec, "UNKNOWN"))
    return _ENCODINGS.get(codec, "UNKNOWN")


def _reader(uri, format, buffer_size):
    from .io import StreamReader

    return StreamReader(uri, format=format, buffer_size=buffer_size)


def info(uri, format: str | None = None, buffer_size: int = 4096, backend: str | None = None) -> AudioMetaData:
    """The sample rate, length, channels, bit depth and encoding of the default audio stream."""
    _check_backend(backend)
    r = _reader(uri, format, buffer_size)
    i = r.default_audio_stream
    if i is None:
        raise RuntimeError("The input has no audio stream")
    s = r.get_src_stream_info(i)
    d = r._be.get_src_stream_info(i)
    bits = s.bits_per_sample or d["bits_per_coded_sample"]
    if s.codec in ("mp3", "vorbis", "opus", "aac"):
        bits = 0  # lossy codecs have no bit depth
    num_frames = int(s.num_frames)
    if num_frames == 0:
        # The container does not record the length: decode and count, as torchaudio does.
        r.add_audio_stream(-1, -1, stream_index=i)
        r.process_all_packets()
        (chunk,) = r.pop_chunks()
        num_frames = 0 if chunk is None else chunk.shape[0]
    return AudioMetaData(int(s.sample_rate), num_frames, s.num_channels, int(bits), _encoding(s.codec))


_SEEK_PREROLL = 0.5  # seconds decoded before a frame_offset

_PACKED = {"u8": "u8", "u8p": "u8", "s16": "s16", "s16p": "s16", "s32": "s32", "s32p": "s32", "s64": "s64",
           "s64p": "s64"}


def load(uri, frame_offset: int = 0, num_frames: int = -1, normalize: bool = True, channels_first: bool = True,
         format: str | None = None, buffer_size: int = 4096, backend: str | None = None):
    """Decodes the default audio stream: (waveform, sample_rate), waveform (channels, frames)
    (``channels_first``) or (frames, channels). With ``normalize`` the samples are float32 in
    [-1, 1]; without it, integer PCM WAV keeps its integer dtype. ``frame_offset`` and
    ``num_frames`` (-1: to the end) select samples."""
    _check_backend(backend)
    for name, v in (("frame_offset", frame_offset), ("num_frames", num_frames)):
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    if frame_offset < 0:
        raise ValueError(f"frame_offset must be non-negative, got {frame_offset}")
    if num_frames == 0 or num_frames < -1:
        raise ValueError(f"num_frames must be positive or -1, got {num_frames}")
    r = _reader(uri, format, buffer_size)
    i = r.default_audio_stream
    if i is None:
        raise RuntimeError("The input has no audio stream")
    src = r.get_src_stream_info(i)
    fmt = "flt"
    if not normalize and src.codec.startswith("pcm_") and src.format in _PACKED:
        fmt = _PACKED[src.format]
    r.add_audio_stream(-1, -1, stream_index=i, filter_desc=f"aformat=sample_fmts={fmt}")
    sample_rate = int(r.get_out_stream_info(0).sample_rate)
    # Sample k is at the stream's start time + k / sample_rate (MP3 and AAC start after their
    # encoder delay). Decoding restarts a little before it, so a lossy decoder has settled by then.
    start = r._be.get_src_stream_info(i)["start_time"]
    target = start + frame_offset / sample_rate
    if target - _SEEK_PREROLL > start:  # near the start, decoding from it is exact and as fast
        r.seek(target - _SEEK_PREROLL, "precise")
    r.process_all_packets()
    (chunk,) = r.pop_chunks()
    dtype = {"u8": np.uint8, "s16": np.int16, "s32": np.int32, "s64": np.int64, "flt": np.float32}[fmt]
    if chunk is None:
        data = np.zeros((0, r.get_out_stream_info(0).num_channels), dtype)
    else:
        data = chunk.numpy()
        if frame_offset:
            data = data[max(0, round((target - chunk.pts) * sample_rate)):]
    if num_frames != -1:
        data = data[:num_frames]
    if channels_first:
        data = data.T
    return ember.from_numpy(np.ascontiguousarray(data)), sample_rate


# dtype -> (sample format, wav codec) for save's defaults.
_DTYPE_FORMATS = {np.dtype(np.uint8): ("u8", "pcm_u8"), np.dtype(np.int16): ("s16", "pcm_s16le"),
                  np.dtype(np.int32): ("s32", "pcm_s32le"), np.dtype(np.int64): ("s64", None),
                  np.dtype(np.float32): ("flt", "pcm_f32le"), np.dtype(np.float64): ("dbl", "pcm_f64le")}

_WAV_CODECS = {("PCM_S", 8): None, ("PCM_U", 8): "pcm_u8", ("PCM_S", 16): "pcm_s16le", ("PCM_S", 24): "pcm_s24le",
               ("PCM_S", 32): "pcm_s32le", ("PCM_F", 32): "pcm_f32le", ("PCM_F", 64): "pcm_f64le",
               ("ULAW", 8): "pcm_mulaw", ("ALAW", 8): "pcm_alaw"}
_DEFAULT_BITS = {"PCM_S": 16, "PCM_U": 8, "PCM_F": 32, "ULAW": 8, "ALAW": 8}
_EXT_FORMATS = {"wav": "wav", "flac": "flac", "mp3": "mp3", "ogg": "ogg", "opus": "opus", "vorbis": "ogg",
                "amr": "amr", "m4a": "ipod", "aac": "adts"}


def _output_format(uri, format):
    if format is not None:
        return format.lower()
    if isinstance(uri, (str, os.PathLike)):
        ext = os.path.splitext(os.fspath(uri))[1][1:].lower()
        if ext:
            return ext
    raise ValueError("Cannot tell the format of the output; pass `format` (for example 'wav')")


def save(uri, src, sample_rate: int, channels_first: bool = True, format: str | None = None,
         encoding: str | None = None, bits_per_sample: int | None = None, buffer_size: int = 4096,
         backend: str | None = None, compression=None) -> None:
    """Encodes ``src`` ((channels, frames) if ``channels_first`` else (frames, channels)) at
    ``sample_rate`` into ``uri``. For WAV, ``encoding`` (PCM_S, PCM_U, PCM_F, ULAW, ALAW) and
    ``bits_per_sample`` pick the codec (default: the tensor's dtype); FLAC takes
    ``bits_per_sample`` 16 or 24; ``compression`` is a CodecConfig (or a number: the bit rate
    for MP3, the compression level for FLAC)."""
    from .io import CodecConfig, StreamWriter

    _check_backend(backend)
    if not isinstance(src, ember.Tensor):
        raise TypeError(f"src must be an ember.Tensor, got {type(src).__name__}")
    if src.dim() != 2:
        raise ValueError(f"src must be 2D ((channels, frames) or (frames, channels)), got {src.dim()}D")
    if not isinstance(sample_rate, int) or isinstance(sample_rate, bool) or sample_rate <= 0:
        raise ValueError(f"sample_rate must be a positive integer, got {sample_rate!r}")
    data = src.numpy()
    if channels_first:
        data = data.T
    data = np.ascontiguousarray(data)
    if data.dtype not in _DTYPE_FORMATS:
        raise ValueError(f"Unsupported dtype {data.dtype.name} (uint8, int16, int32, int64, float32, float64)")
    in_fmt, wav_codec = _DTYPE_FORMATS[data.dtype]
    fmt = _output_format(uri, format)
    muxer = _EXT_FORMATS.get(fmt, fmt)
    encoder = None
    encoder_format = None
    config = compression if isinstance(compression, CodecConfig) else None
    if compression is not None and config is None and not isinstance(compression, (int, float)):
        raise TypeError(f"compression must be a CodecConfig or a number, got {type(compression).__name__}")
    if muxer == "wav":
        if encoding is not None or bits_per_sample is not None:
            enc = (encoding or {"u1": "PCM_U", "f4": "PCM_F", "f8": "PCM_F"}.get(data.dtype.str[1:], "PCM_S")).upper()
            if enc not in _DEFAULT_BITS:
                raise ValueError(f"Unsupported encoding {encoding!r} for WAV (PCM_S, PCM_U, PCM_F, ULAW, ALAW)")
            bits = bits_per_sample if bits_per_sample is not None else _DEFAULT_BITS[enc]
            encoder = _WAV_CODECS.get((enc, bits))
            if encoder is None:
                raise ValueError(f"Unsupported encoding/bits_per_sample for WAV: {enc}, {bits}")
        else:
            encoder = wav_codec or "pcm_s32le"
            if wav_codec is None:
                raise ValueError("int64 audio cannot be written to WAV; convert it to int32 or float")
    elif muxer == "flac":
        if bits_per_sample not in (None, 16, 24):
            raise ValueError(f"FLAC supports bits_per_sample 16 or 24, got {bits_per_sample}")
        encoder_format = "s32" if bits_per_sample == 24 or (bits_per_sample is None and data.dtype == np.int32) else "s16"
        if isinstance(compression, (int, float)):
            config = CodecConfig(compression_level=int(compression))
    elif muxer == "mp3":
        if isinstance(compression, (int, float)):
            config = CodecConfig(bit_rate=int(compression * 1000))
    elif muxer in ("ogg", "opus"):
        encoder = "libvorbis" if (muxer == "ogg" and (encoding or "VORBIS").upper() == "VORBIS") else "libopus"
        if isinstance(compression, (int, float)) and encoder == "libvorbis":
            config = CodecConfig(qscale=compression)
    elif encoding is not None or bits_per_sample is not None:
        raise ValueError(f"encoding and bits_per_sample apply to WAV and FLAC, not {fmt!r}")
    w = StreamWriter(uri, format=muxer, buffer_size=buffer_size)
    w.add_audio_stream(sample_rate, data.shape[1], in_fmt, encoder=encoder, encoder_format=encoder_format,
                       codec_config=config)
    with w:
        if data.shape[0]:
            w.write_audio_chunk(0, data)
