"""emberaudio.io: FFmpeg-backed media I/O in the shape of ``torchaudio.io``.

``StreamReader`` decodes audio/video from a path, a file-like object or bytes into chunks of ember
tensors; ``StreamWriter`` encodes ember tensors into a file or a file-like object; ``CodecConfig``
carries encoder settings.
"""

from __future__ import annotations

from ._stream_reader import (
    OutputAudioStream,
    OutputStream,
    OutputVideoStream,
    SourceAudioStream,
    SourceStream,
    SourceVideoStream,
    StreamReader,
)
from ._stream_writer import CodecConfig, StreamWriter

__all__ = [
    "CodecConfig",
    "OutputAudioStream",
    "OutputStream",
    "OutputVideoStream",
    "SourceAudioStream",
    "SourceStream",
    "SourceVideoStream",
    "StreamReader",
    "StreamWriter",
]
