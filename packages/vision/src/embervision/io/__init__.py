"""Reading and writing images and videos (torchvision.io's API): see ``embervision.io.image``,
``embervision.io.video`` and ``embervision.io.video_reader``."""

from __future__ import annotations

from .image import (
    ImageReadMode,
    decode_image,
    decode_jpeg,
    decode_png,
    encode_jpeg,
    encode_png,
    read_file,
    read_image,
    write_file,
    write_jpeg,
    write_png,
)
from .video import read_video, read_video_timestamps, write_video
from .video_reader import VideoReader

__all__ = ["ImageReadMode", "VideoReader", "decode_image", "decode_jpeg", "decode_png", "encode_jpeg",
           "encode_png", "read_file", "read_image", "read_video", "read_video_timestamps", "write_file",
           "write_jpeg", "write_png", "write_video"]
