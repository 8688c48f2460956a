"""`DatasetFolder` and `ImageFolder`: samples laid out as ``root/<class>/**/<file>``, as in
torchvision.datasets.folder. The default image loader decodes with `embervision.io.read_image`
(uint8 ``[3, H, W]`` tensors, converted to RGB as torchvision's PIL loader does)."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any

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


def default_loader(path: str | pathlib.Path) -> Any:
    """Decode an image file to a uint8 ``[3, H, W]`` tensor with `embervision.io.read_image` (imported
    here, on first use)."""
    from embervision.io import ImageReadMode, read_image
    return read_image(os.fspath(path), mode=ImageReadMode.RGB)


def _read_image_unchanged(path: str | pathlib.Path) -> Any:
    """Decode keeping the file's channels (segmentation masks: one channel of class indices)."""
    from embervision.io import ImageReadMode, read_image
    return read_image(os.fspath(path), mode=ImageReadMode.UNCHANGED)


class ImageFolder(DatasetFolder):
    """`DatasetFolder` over image files (`IMG_EXTENSIONS`); `imgs` is `samples`."""

    def __init__(self, root: str | pathlib.Path, transform: Callable | None = None,
                 target_transform: Callable | None = None, loader: Callable[[str], Any] = default_loader,
                 is_valid_file: Callable[[str], bool] | None = None, allow_empty: bool = False) -> None:
        super().__init__(root, loader, IMG_EXTENSIONS if is_valid_file is None else None, transform=transform,
                         target_transform=target_transform, is_valid_file=is_valid_file, allow_empty=allow_empty)
        self.imgs = self.samples
