"""`DatasetFolder` and `ImageFolder`: samples laid out as ``root/<class>/**/<file>``, as in
torchvision.datasets.folder. The default image loader decodes binary PGM/PPM itself and every other
format with `embervision.io.read_image` (uint8 ``[3, H, W]`` tensors, converted to RGB as
torchvision's PIL loader does)."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

from .vision import VisionDataset

__all__ = ["DatasetFolder", "ImageFolder", "IMG_EXTENSIONS", "default_loader", "find_classes",
           "has_file_allowed_extension", "is_image_file", "make_dataset"]

IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def has_file_allowed_extension(filename: str, extensions: str | tuple[str, ...]) -> bool:
    """Whether `filename` ends with one of `extensions` (case-insensitive)."""
    return filename.lower().endswith(extensions if isinstance(extensions, str) else tuple(extensions))


def is_image_file(filename: str) -> bool:
    return has_file_allowed_extension(filename, IMG_EXTENSIONS)


def find_classes(directory: str | pathlib.Path) -> tuple[list[str], dict[str, int]]:
    """The sorted class folder names under `directory` and their indices."""
    classes = sorted(entry.name for entry in os.scandir(directory) if entry.is_dir())
    if not classes:
        raise FileNotFoundError(f"Couldn't find any class folder in {directory}.")
    return classes, {name: i for i, name in enumerate(classes)}


def make_dataset(directory: str | pathlib.Path, class_to_idx: dict[str, int] | None = None,
                 extensions: str | tuple[str, ...] | None = None,
                 is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False) -> list[tuple[str, int]]:
    """(path, class index) for every valid file under each class folder, in sorted order. Exactly one
    of `extensions` and `is_valid_file` picks the files; a class without any is an error unless
    `allow_empty`."""
    directory = os.path.expanduser(os.fspath(directory))
    if class_to_idx is None:
        _, class_to_idx = find_classes(directory)
    elif not class_to_idx:
        raise ValueError("'class_to_index' must have at least one entry to collect any samples.")
    if (extensions is None) == (is_valid_file is None):
        raise ValueError("Both extensions and is_valid_file cannot be None or not None at the same time")
    if extensions is not None:
        def is_valid_file(path: str) -> bool:
            return has_file_allowed_extension(path, extensions)  # type: ignore[arg-type]
    instances = []
    found = set()
    for target_class in sorted(class_to_idx):
        class_index = class_to_idx[target_class]
        target_dir = os.path.join(directory, target_class)
        if not os.path.isdir(target_dir):
            continue
        for root, _, fnames in sorted(os.walk(target_dir, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if is_valid_file(path):
                    instances.append((path, class_index))
                    found.add(target_class)
    empty = set(class_to_idx) - found
    if empty and not allow_empty:
        msg = f"Found no valid file for the classes {', '.join(sorted(empty))}. "
        if extensions is not None:
            msg += f"Supported extensions are: {extensions if isinstance(extensions, str) else ', '.join(extensions)}"
        raise FileNotFoundError(msg)
    return instances


class DatasetFolder(VisionDataset):
    """A generic folder dataset: ``root/<class>/.../<file>``; items are ``(loader(path), class_index)``."""

    def __init__(self, root: str | pathlib.Path, loader: Callable[[str], Any],
                 extensions: tuple[str, ...] | None = None, transform: Callable | None = None,
                 target_transform: Callable | None = None, is_valid_file: Callable[[str], bool] | None = None,
                 allow_empty: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        classes, class_to_idx = self.find_classes(self.root)
        samples = self.make_dataset(self.root, class_to_idx=class_to_idx, extensions=extensions,
                                    is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.loader = loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]

    @staticmethod
    def make_dataset(directory: str | pathlib.Path, class_to_idx: dict[str, int],
                     extensions: tuple[str, ...] | None = None,
                     is_valid_file: Callable[[str], bool] | None = None,
                     allow_empty: bool = False) -> list[tuple[str, int]]:
        if class_to_idx is None:
            # find_classes is overridable; None here would hide a subclass's mistake
            raise ValueError("The class_to_idx parameter cannot be None.")
        return make_dataset(directory, class_to_idx, extensions=extensions, is_valid_file=is_valid_file,
                            allow_empty=allow_empty)

    def find_classes(self, directory: str | pathlib.Path) -> tuple[list[str], dict[str, int]]:
        return find_classes(directory)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return sample, target

    def __len__(self) -> int:
        return len(self.samples)


def _read_pnm(path: str) -> np.ndarray | None:
    """A binary 8-bit PGM/PPM file (P5/P6, which FlyingChairs ships and read_image does not decode) as
    a uint8 [C, H, W] array; None when the file is not one. Header and size are checked strictly."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] not in (b"P5", b"P6"):
        return None
    fields: list[bytes] = []
    pos = 2
    while len(fields) < 3:  # width, height, maxval, with whitespace and # comments between
        while pos < len(data) and data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            end = data.find(b"\n", pos)
            pos = len(data) if end < 0 else end + 1
            continue
        start = pos
        while pos < len(data) and data[pos:pos + 1].isdigit():
            pos += 1
        if start == pos:
            raise ValueError(f"{path}: malformed PNM header")
        fields.append(data[start:pos])
    if pos >= len(data) or not data[pos:pos + 1].isspace():
        raise ValueError(f"{path}: malformed PNM header")
    width, height, maxval = (int(v) for v in fields)
    if not 1 <= maxval <= 255:
        raise ValueError(f"{path}: only 8-bit PNM files are supported (maxval {maxval})")
    channels = 1 if data[:2] == b"P5" else 3
    need = width * height * channels
    pixels = data[pos + 1:]
    if len(pixels) < need:
        raise ValueError(f"{path}: PNM data truncated ({len(pixels)} bytes, {need} needed)")
    return np.frombuffer(pixels, np.uint8, need).reshape(height, width, channels).transpose(2, 0, 1)


def _load(path: str | pathlib.Path, rgb: bool) -> Any:
    import ember
    path = os.fspath(path)
    pnm = _read_pnm(path)
    if pnm is not None:
        if rgb and pnm.shape[0] == 1:
            pnm = np.repeat(pnm, 3, axis=0)
        return ember.from_numpy(np.ascontiguousarray(pnm))
    from embervision.io import ImageReadMode, read_image
    return read_image(path, mode=ImageReadMode.RGB if rgb else ImageReadMode.UNCHANGED)


def default_loader(path: str | pathlib.Path) -> Any:
    """Decode an image file to a uint8 ``[3, H, W]`` tensor (converted to RGB, as torchvision's PIL
    loader does): binary PGM/PPM here, every other format with `embervision.io.read_image` (imported
    on first use)."""
    return _load(path, rgb=True)


def _png_palette(path: str) -> np.ndarray | None:
    """The [N, 3] uint8 PLTE of a palette (color type 3) PNG; None for any other file. Only the chunk
    headers before the image data are read, each length checked against the file."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    pos, color_type = 8, None
    while pos + 8 <= len(data):
        length, kind = struct.unpack_from(">I4s", data, pos)
        body = data[pos + 8:pos + 8 + length]
        if len(body) != length:
            raise ValueError(f"{path}: PNG chunk {kind!r} runs past the end of the file")
        if kind == b"IHDR":
            if length != 13:
                raise ValueError(f"{path}: malformed PNG IHDR")
            color_type = body[9]
            if color_type != 3:
                return None
        elif kind == b"PLTE":
            if color_type != 3 or length % 3 or not 3 <= length <= 768:
                raise ValueError(f"{path}: malformed PNG palette")
            return np.frombuffer(body, np.uint8).reshape(-1, 3)
        elif kind in (b"IDAT", b"IEND"):
            break
        pos += 12 + length
    if color_type == 3:
        raise ValueError(f"{path}: palette PNG without a PLTE chunk before its image data")
    return None


def _read_image_unchanged(path: str | pathlib.Path) -> Any:
    """Decode a mask keeping its channels; a palette PNG (VOC's class masks) becomes its palette
    indices, one uint8 channel, as PIL's "P" mode gives them to torchvision (embervision.io expands
    palettes to RGB, so each RGB pixel is mapped back to its palette entry)."""
    import ember
    path = os.fspath(path)
    palette = _png_palette(path)
    if palette is None:
        return _load(path, rgb=False)
    from embervision.io import ImageReadMode, read_image
    rgb = read_image(path, mode=ImageReadMode.RGB).numpy().astype(np.int64)
    keys = palette.astype(np.int64) @ np.array([1 << 16, 1 << 8, 1])
    if len(np.unique(keys)) != len(keys):
        # two entries share a color: the index of such pixels cannot be recovered from RGB
        raise ValueError(f"{path}: palette has repeated colors, so its indices cannot be recovered")
    order = np.argsort(keys)
    pixel_keys = (rgb[0] << 16) | (rgb[1] << 8) | rgb[2]
    where = np.clip(np.searchsorted(keys[order], pixel_keys), 0, len(keys) - 1)
    if not (keys[order][where] == pixel_keys).all():
        raise ValueError(f"{path}: decoded colors outside the palette")
    return ember.from_numpy(np.ascontiguousarray(order[where].astype(np.uint8)[None]))


class ImageFolder(DatasetFolder):
    """`DatasetFolder` over image files (`IMG_EXTENSIONS`); `imgs` is `samples`."""

    def __init__(self, root: str | pathlib.Path, transform: Callable | None = None,
                 target_transform: Callable | None = None, loader: Callable[[str], Any] = default_loader,
                 is_valid_file: Callable[[str], bool] | None = None, allow_empty: bool = False) -> None:
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
