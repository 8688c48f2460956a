"""Image files, in the shape of torchvision 0.17's ``torchvision.io`` image API: ``read_file`` /
``write_file``, JPEG and PNG decoding and encoding over libjpeg-turbo and libpng (the native module
``embervision._image``), ``decode_image`` / ``read_image`` (the format sniffed from the magic
bytes), ``write_jpeg`` / ``write_png`` and ``ImageReadMode``. Images are ``(C, H, W)`` tensors.

Note [differences from torchvision 0.17]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
- 16-bit PNGs decode (``decode_png``, ``decode_image``, ``read_image``) to int32 in [0, 65535], the
  dtype of torchvision 0.17's private ``_read_png_16`` (ember has no uint16; torchvision 0.21 returns
  uint16). torchvision 0.17's public functions refuse them ("At most 8-bit PNG images are
  supported currently").
- A PNG's tRNS transparency becomes an alpha channel (``UNCHANGED`` keeps it); palette images
  decode to RGB(A), never to palette indices.
- Damaged data is a RuntimeError: a JPEG whose entropy-coded data is cut short or broken (libjpeg-
  turbo would warn and fill the rest with gray), a PNG chunk with a bad CRC, ancillary ones
  included.
- ``encode_png`` / ``write_png`` take 1 to 4 channels (gray, gray+alpha, RGB, RGBA; torchvision: 1
  or 3), and an out-of-range ``compression_level`` is a ValueError (torchvision: RuntimeError).
- ``decode_jpeg(device="cuda")`` decodes with libjpeg-turbo on the CPU, then copies to the device
  (no nvJPEG). CMYK/YCCK JPEGs are refused.
- Gray from color is the rounded ITU-R 601 luma ``(299 R + 587 G + 114 B) / 1000`` for PNG (as
  torchvision's libpng coefficients) and libjpeg-turbo's own conversion for JPEG.
"""

from __future__ import annotations

import operator
import os
from enum import Enum
from typing import Any

import numpy as np

import ember

from .. import _native

__all__ = ["ImageReadMode", "decode_image", "decode_jpeg", "decode_png", "encode_jpeg", "encode_png", "read_file",
           "read_image", "write_file", "write_jpeg", "write_png"]


class ImageReadMode(Enum):
    """How a decoder converts an image's channels: ``UNCHANGED`` (as stored), ``GRAY``,
    ``GRAY_ALPHA``, ``RGB``, ``RGB_ALPHA``. JPEG supports ``UNCHANGED``, ``GRAY`` and ``RGB``."""

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4


_JPEG_MAGIC = b"\xff\xd8\xff"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# EXIF orientation → (transpose, flip rows, flip columns) that turn the stored image upright.
# Orientations 5-8 store the image transposed (row 0 is the displayed left or right side).
_ORIENTATIONS = {
    1: (False, False, False), 2: (False, False, True), 3: (False, True, True), 4: (False, True, False),
    5: (True, False, False), 6: (True, False, True), 7: (True, True, True), 8: (True, True, False),
}


def _codecs() -> Any:
    return _native.load("_image")


def _check_mode(mode: ImageReadMode) -> int:
    if not isinstance(mode, ImageReadMode):
        raise TypeError(f"mode must be an ImageReadMode, but got {mode!r}")
    return mode.value


def _check_tensor(input: Any, op: str) -> ember.Tensor:
    if not isinstance(input, ember.Tensor):
        raise TypeError(f"[{op}] expected an ember.Tensor, but got {type(input).__name__}")
    if input.device.type != "cpu":
        raise ValueError("Input tensor must be a CPU tensor")
    return input


def _encoded_bytes(input: Any, op: str) -> np.ndarray:
    """The bytes of a file held in a non-empty 1-D uint8 CPU tensor, as a contiguous array."""
    _check_tensor(input, op)
    if input.dtype != ember.uint8:
        raise RuntimeError(f"[{op}] expected a uint8 tensor, but got {input.dtype}")
    if input.dim() != 1 or input.numel() == 0:
        raise RuntimeError(f"[{op}] expected a non empty 1-dimensional tensor, but got shape {tuple(input.shape)}")
    return np.ascontiguousarray(input.numpy())


def _image_planes(input: Any, op: str, channels: tuple[int, ...]) -> np.ndarray:
    """A uint8 (C, H, W) CPU tensor with C in `channels` and H, W > 0, as a contiguous array."""
    _check_tensor(input, op)
    if input.dtype != ember.uint8:
        raise RuntimeError(f"[{op}] Input tensor dtype should be uint8, but got {input.dtype}")
    if input.dim() != 3:
        raise RuntimeError(f"[{op}] Input data should be a 3-dimensional tensor, but got shape {tuple(input.shape)}")
    c, h, w = input.shape
    if c not in channels:
        allowed = " or ".join(map(str, channels))
        raise RuntimeError(f"[{op}] The number of channels should be {allowed}, got: {c}")
    if h == 0 or w == 0:
        raise RuntimeError(f"[{op}] expected a non-empty image, but got shape {tuple(input.shape)}")
    return np.ascontiguousarray(input.numpy())


def _to_tensor(decoded: tuple[np.ndarray, int], apply_exif_orientation: bool) -> ember.Tensor:
    image, orientation = decoded
    if apply_exif_orientation:
        transpose, flip_rows, flip_cols = _ORIENTATIONS[orientation]
        if transpose:
            image = image.transpose(0, 2, 1)
        if flip_rows:
            image = image[:, ::-1, :]
        if flip_cols:
            image = image[:, :, ::-1]
        image = np.ascontiguousarray(image)
    return ember.from_numpy(image)


def read_file(path: str | os.PathLike) -> ember.Tensor:
    """The bytes of the file at `path` as a 1-D uint8 tensor."""
    try:
        data = np.fromfile(os.fspath(path), dtype=np.uint8)
    except OSError as error:
        raise RuntimeError(f"[Errno {error.errno}] {error.strerror}: '{path}'") from error
    if data.size == 0:
        raise RuntimeError("Expected a non empty file")
    return ember.from_numpy(data)


def write_file(filename: str | os.PathLike, data: ember.Tensor) -> None:
    """Writes a 1-D uint8 tensor's bytes to `filename`."""
    _check_tensor(data, "write_file")
    if data.dtype != ember.uint8:
        raise RuntimeError(f"[write_file] Input tensor dtype should be uint8, but got {data.dtype}")
    if data.dim() != 1:
        raise RuntimeError(f"[write_file] Input data should be a 1-dimensional tensor, but got shape {tuple(data.shape)}")
    with open(os.fspath(filename), "wb") as f:
        f.write(np.ascontiguousarray(data.numpy()).tobytes())


def decode_png(input: ember.Tensor, mode: ImageReadMode = ImageReadMode.UNCHANGED,
               apply_exif_orientation: bool = False) -> ember.Tensor:
    """Decodes a PNG file's bytes (1-D uint8 tensor) into a ``(C, H, W)`` tensor: uint8, or int32 in
    [0, 65535] for 16-bit files (Note [differences from torchvision 0.17]). Palette images expand
    to RGB(A); `mode` converts the channels; `apply_exif_orientation` turns the image upright
    per its eXIf chunk."""
    value = _check_mode(mode)
    data = _encoded_bytes(input, "decode_png")
    return _to_tensor(_codecs().decode_png(data, value, bool(apply_exif_orientation)), apply_exif_orientation)


def encode_png(input: ember.Tensor, compression_level: int = 6) -> ember.Tensor:
    """The bytes (1-D uint8 tensor) of a PNG file holding a uint8 ``(C, H, W)`` image, C = 1 (gray),
    2 (gray+alpha), 3 (RGB) or 4 (RGBA); `compression_level` 0 (none) to 9 (smallest)."""
    compression_level = operator.index(compression_level)
    if compression_level < 0 or compression_level > 9:
        raise ValueError("Compression level should be between 0 and 9")
    planes = _image_planes(input, "encode_png", (1, 2, 3, 4))
    return ember.from_numpy(_codecs().encode_png(planes, compression_level))


def write_png(input: ember.Tensor, filename: str | os.PathLike, compression_level: int = 6) -> None:
    """Encodes a uint8 ``(C, H, W)`` image as PNG (``encode_png``) into `filename`."""
    write_file(filename, encode_png(input, compression_level))


def _decode_jpeg_one(input: ember.Tensor, mode: int, apply_exif_orientation: bool) -> ember.Tensor:
    data = _encoded_bytes(input, "decode_jpeg")
    return _to_tensor(_codecs().decode_jpeg(data, mode, bool(apply_exif_orientation)), apply_exif_orientation)


def decode_jpeg(input: ember.Tensor | list[ember.Tensor], mode: ImageReadMode = ImageReadMode.UNCHANGED,
                device: str | ember.device = "cpu",
                apply_exif_orientation: bool = False) -> ember.Tensor | list[ember.Tensor]:
    """Decodes a JPEG file's bytes (a 1-D uint8 CPU tensor, or a list of them) into uint8
    ``(C, H, W)`` tensor(s) on `device`. `mode`: ``UNCHANGED``, ``GRAY`` or ``RGB``;
    `apply_exif_orientation` turns the image upright per its EXIF Orientation tag."""
    value = _check_mode(mode)
    device = ember.device(device) if isinstance(device, str) else device

    def place(image: ember.Tensor) -> ember.Tensor:
        return image if device.type == "cpu" else image.to(device)

    if isinstance(input, list):
        if len(input) == 0:
            raise ValueError("Input list must contain at least one element")
        if not all(isinstance(t, ember.Tensor) for t in input):
            raise ValueError("All elements of the input list must be tensors.")
        if not all(t.device.type == "cpu" for t in input):
            raise ValueError("Input list must contain tensors on CPU.")
        return [place(_decode_jpeg_one(t, value, apply_exif_orientation)) for t in input]
    return place(_decode_jpeg_one(input, value, apply_exif_orientation))


def encode_jpeg(input: ember.Tensor | list[ember.Tensor], quality: int = 75) -> ember.Tensor | list[ember.Tensor]:
    """The bytes (1-D uint8 tensor) of a JPEG file holding a uint8 ``(C, H, W)`` image, C = 1 or 3
    (or a list of images → a list of files); `quality` 1 to 100."""
    quality = operator.index(quality)
    if quality < 1 or quality > 100:
        raise ValueError("Image quality should be a positive number between 1 and 100")

    def encode(image: ember.Tensor) -> ember.Tensor:
        planes = _image_planes(image, "encode_jpeg", (1, 3))
        return ember.from_numpy(_codecs().encode_jpeg(planes, quality))

    if isinstance(input, list):
        if not input:
            raise ValueError("encode_jpeg requires at least one input tensor when a list is passed")
        return [encode(image) for image in input]
    return encode(input)


def write_jpeg(input: ember.Tensor, filename: str | os.PathLike, quality: int = 75) -> None:
    """Encodes a uint8 ``(C, H, W)`` image as JPEG (``encode_jpeg``) into `filename`."""
    output = encode_jpeg(input, quality)
    write_file(filename, output)


def decode_image(input: ember.Tensor, mode: ImageReadMode = ImageReadMode.UNCHANGED,
                 apply_exif_orientation: bool = False) -> ember.Tensor:
    """Decodes a JPEG or PNG file's bytes, the format told by its magic bytes (``decode_jpeg`` /
    ``decode_png``)."""
    _check_mode(mode)
    data = _encoded_bytes(input, "decode_image")
    head = data[:8].tobytes()
    if head.startswith(_JPEG_MAGIC):
        return decode_jpeg(input, mode, apply_exif_orientation=apply_exif_orientation)
    if head.startswith(_PNG_MAGIC):
        return decode_png(input, mode, apply_exif_orientation=apply_exif_orientation)
    raise RuntimeError("Unsupported image file. Only jpeg and png are currently supported.")


def read_image(path: str | os.PathLike, mode: ImageReadMode = ImageReadMode.UNCHANGED,
               apply_exif_orientation: bool = False) -> ember.Tensor:
    """Reads a JPEG or PNG file into a ``(C, H, W)`` tensor (``read_file`` then ``decode_image``)."""
    return decode_image(read_file(path), mode, apply_exif_orientation=apply_exif_orientation)
