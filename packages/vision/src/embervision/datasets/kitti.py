"""KITTI object detection (left color camera): ``Kitti/raw/{training,testing}/image_2`` and
``training/label_2/<id>.txt`` with one object per line (15 space-separated fields)."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any
from urllib.error import URLError

from .folder import default_loader
from .utils import download_and_extract_archive
from .vision import VisionDataset

__all__ = ["Kitti"]


class Kitti(VisionDataset):
    """`KITTI <http://www.cvlibs.net/datasets/kitti/eval_object.php?obj_benchmark>`_; items are
    ``(image, [object dicts])`` with keys type, truncated, occluded, alpha, bbox, dimensions,
    location, rotation_y (None for the test split)."""

    data_url = "https://s3.eu-central-1.amazonaws.com/avg-kitti/"
    resources = ["data_object_image_2.zip", "data_object_label_2.zip"]
    image_dir_name = "image_2"
    labels_dir_name = "label_2"

    def __init__(self, root: str | pathlib.Path, train: bool = True, transform: Callable | None = None,
                 target_transform: Callable | None = None, transforms: Callable | None = None,
                 download: bool = False, *, loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform, transforms=transforms)
        self.images: list[str] = []
        self.targets: list[str] = []
        self.train = train
        self._location = "training" if self.train else "testing"
        self.loader = loader
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You may use download=True to download it.")
        image_dir = os.path.join(self._raw_folder, self._location, self.image_dir_name)
        labels_dir = os.path.join(self._raw_folder, self._location, self.labels_dir_name)
        for img_file in sorted(os.listdir(image_dir)):
            self.images.append(os.path.join(image_dir, img_file))
            if self.train:
                self.targets.append(os.path.join(labels_dir, f"{img_file.split('.')[0]}.txt"))

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image = self.loader(self.images[index])
        target = self._parse_target(index) if self.train else None
        if self.transforms:
            image, target = self.transforms(image, target)
        return image, target

    def _parse_target(self, index: int) -> list[dict[str, Any]]:
        target = []
        path = self.targets[index]
        with open(path) as inp:
            for number, line in enumerate(inp, 1):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) not in (15, 16):  # results files add a score
                    raise RuntimeError(f"{path}:{number}: a KITTI label line has 15 fields, this one {len(fields)}")
                try:
                    target.append({
                        "type": fields[0],
                        "truncated": float(fields[1]),
                        "occluded": int(fields[2]),
                        "alpha": float(fields[3]),
                        "bbox": [float(x) for x in fields[4:8]],
                        "dimensions": [float(x) for x in fields[8:11]],
                        "location": [float(x) for x in fields[11:14]],
                        "rotation_y": float(fields[14]),
                    })
                except ValueError as error:
                    raise RuntimeError(f"{path}:{number}: {error}") from error
        return target

    def __len__(self) -> int:
        return len(self.images)

    @property
    def _raw_folder(self) -> str:
        return os.path.join(self.root, self.__class__.__name__, "raw")

    def _check_exists(self) -> bool:
        folders = [self.image_dir_name]
        if self.train:
            folders.append(self.labels_dir_name)
        return all(os.path.isdir(os.path.join(self._raw_folder, self._location, f)) for f in folders)

    def download(self) -> None:
        if self._check_exists():
            return
        os.makedirs(self._raw_folder, exist_ok=True)
        for fname in self.resources:
            try:
                download_and_extract_archive(url=f"{self.data_url}{fname}", download_root=self._raw_folder,
                                             filename=fname)
            except URLError as error:
                raise RuntimeError(f"Error downloading {fname}: {error}") from error
