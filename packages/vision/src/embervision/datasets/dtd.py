"""The Describable Textures Dataset: ``dtd/dtd/{labels/<split><partition>.txt, images/<class>/<file>}``."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

from .folder import default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["DTD"]


class DTD(VisionDataset):
    """`DTD <https://www.robots.ox.ac.uk/~vgg/data/dtd/>`_; split "train", "val" or "test", `partition`
    1 to 10. `loader` (as in later torchvision) decodes an image path."""

    _URL = "https://www.robots.ox.ac.uk/~vgg/data/dtd/download/dtd-r1.0.1.tar.gz"
    _MD5 = "fff73e5086ae6bdbea199a49dfb8a4c1"

    def __init__(self, root: str | pathlib.Path, split: str = "train", partition: int = 1,
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 download: bool = False, loader: Callable[[str], Any] = default_loader) -> None:
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        if not isinstance(partition, int) or isinstance(partition, bool) or not 1 <= partition <= 10:
            raise ValueError(f"Parameter 'partition' should be an integer with `1 <= partition <= 10`, "
                             f"but got {partition} instead")
        self._partition = partition
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._base_folder = pathlib.Path(self.root) / type(self).__name__.lower()
        self._data_folder = self._base_folder / "dtd"
        self._meta_folder = self._data_folder / "labels"
        self._images_folder = self._data_folder / "images"
        self.loader = loader
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        self._image_files: list[pathlib.Path] = []
        classes = []
        path = self._meta_folder / f"{self._split}{self._partition}.txt"
        with open(path) as file:
            for number, line in enumerate(file, 1):
                if not line.strip():
                    continue
                parts = line.strip().split("/")
                if len(parts) != 2 or ".." in parts or not all(parts):
                    raise RuntimeError(f"{path}:{number}: expected '<class>/<file>', got {line.strip()!r}")
                cls, name = parts
                self._image_files.append(self._images_folder.joinpath(cls, name))
                classes.append(cls)
        self.classes = sorted(set(classes))
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self._labels = [self.class_to_idx[cls] for cls in classes]

    def __len__(self) -> int:
        return len(self._image_files)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        image_file, label = self._image_files[idx], self._labels[idx]
        image = self.loader(str(image_file))
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label

    def extra_repr(self) -> str:
        return f"split={self._split}, partition={self._partition}"

    def _check_exists(self) -> bool:
        return self._data_folder.is_dir()

    def _download(self) -> None:
        if self._check_exists():
            return
        download_and_extract_archive(self._URL, download_root=str(self._base_folder), md5=self._MD5)
