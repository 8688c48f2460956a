"""FGVC Aircraft: ``fgvc-aircraft-2013b/data/{variants,families,manufacturers}.txt``,
``images_<level>_<split>.txt`` and ``images/<id>.jpg``."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any

from .folder import default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["FGVCAircraft"]


class FGVCAircraft(VisionDataset):
    """`FGVC Aircraft <https://www.robots.ox.ac.uk/~vgg/data/fgvc-aircraft/>`_; split "train", "val",
    "trainval" or "test"; annotation_level "variant", "family" or "manufacturer"."""

    _URL = "https://www.robots.ox.ac.uk/~vgg/data/fgvc-aircraft/archives/fgvc-aircraft-2013b.tar.gz"

    def __init__(self, root: str | pathlib.Path, split: str = "trainval", annotation_level: str = "variant",
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 download: bool = False, loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "val", "trainval", "test"))
        self._annotation_level = verify_str_arg(annotation_level, "annotation_level",
                                                ("variant", "family", "manufacturer"))
        self._data_path = os.path.join(self.root, "fgvc-aircraft-2013b")
        self.loader = loader
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        annotation_file = os.path.join(self._data_path, "data", {
            "variant": "variants.txt", "family": "families.txt", "manufacturer": "manufacturers.txt"}[self._annotation_level])
        with open(annotation_file) as f:
            self.classes = [line.strip() for line in f if line.strip()]
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        image_data_folder = os.path.join(self._data_path, "data", "images")
        labels_file = os.path.join(self._data_path, "data", f"images_{self._annotation_level}_{self._split}.txt")
        self._image_files: list[str] = []
        self._labels: list[int] = []
        with open(labels_file) as f:
            for number, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                fields = line.split(" ", 1)
                if len(fields) != 2 or "/" in fields[0] or fields[0] in (".", ".."):
                    raise RuntimeError(f"{labels_file}:{number}: expected '<image id> <class name>', got {line!r}")
                if fields[1] not in self.class_to_idx:
                    raise RuntimeError(f"{labels_file}:{number}: unknown class {fields[1]!r}")
                self._image_files.append(os.path.join(image_data_folder, f"{fields[0]}.jpg"))
                self._labels.append(self.class_to_idx[fields[1]])

    def __len__(self) -> int:
        return len(self._image_files)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        image_file, label = self._image_files[idx], self._labels[idx]
        image = self.loader(image_file)
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label

    def _download(self) -> None:
        if self._check_exists():
            return
        download_and_extract_archive(self._URL, self.root)

    def _check_exists(self) -> bool:
        return os.path.isdir(self._data_path)
