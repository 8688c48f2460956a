"""Food-101: ``food-101/{meta/{train,test}.json, images/<class>/<id>.jpg}``."""

from __future__ import annotations

import json
import pathlib
from collections.abc import Callable
from typing import Any

from .folder import default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["Food101"]


class Food101(VisionDataset):
    """`The Food-101 Data Set <https://data.vision.ee.ethz.ch/cvl/datasets_extra/food-101/>`_; split
    "train" or "test". `loader` (as in later torchvision) decodes an image path."""

    _URL = "http://data.vision.ee.ethz.ch/cvl/food-101.tar.gz"
    _MD5 = "85eeb15f3717b99a5da872d97d918f87"

    def __init__(self, root: str | pathlib.Path, split: str = "train", transform: Callable | None = None,
                 target_transform: Callable | None = None, download: bool = False,
                 loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = pathlib.Path(self.root) / "food-101"
        self._meta_folder = self._base_folder / "meta"
        self._images_folder = self._base_folder / "images"
        self.loader = loader
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        path = self._meta_folder / f"{split}.json"
        try:
            metadata = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise RuntimeError(f"{path}: cannot read the split ({error})") from error
        if not isinstance(metadata, dict) or not all(
                isinstance(v, list) and all(isinstance(p, str) for p in v) for v in metadata.values()):
            raise RuntimeError(f"{path}: expected an object mapping each class to a list of image paths")
        self.classes = sorted(metadata.keys())
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self._labels: list[int] = []
        self._image_files: list[pathlib.Path] = []
        for class_label, rel_paths in metadata.items():
            for rel in rel_paths:
                parts = f"{rel}.jpg".split("/")
                if ".." in parts or rel.startswith("/"):
                    raise RuntimeError(f"{path}: image path {rel!r} leaves the image folder")
                self._image_files.append(self._images_folder.joinpath(*parts))
                self._labels.append(self.class_to_idx[class_label])

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
        return f"split={self._split}"

    def _check_exists(self) -> bool:
        return all(folder.is_dir() for folder in (self._meta_folder, self._images_folder))

    def _download(self) -> None:
        if self._check_exists():
            return
        download_and_extract_archive(self._URL, download_root=self.root, md5=self._MD5)
