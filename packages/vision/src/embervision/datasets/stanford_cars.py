"""Stanford Cars: ``root/stanford_cars/{devkit/{cars_meta,cars_train_annos}.mat, cars_train/,
cars_test_annos_withlabels.mat, cars_test/}``, the .mat files read by `_matlab.loadmat`. Items are
``(loader(path), int)`` with classes from 0. The original host is gone, so there is no download
(as in torchvision)."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ._matlab import loadmat
from .folder import default_loader
from .utils import verify_str_arg
from .vision import VisionDataset

__all__ = ["StanfordCars"]


def _records(value: Any, path: pathlib.Path, fields: tuple[str, ...]) -> list[dict[str, Any]]:
    # a struct array squeezes to an array of dicts, a single record to a dict
    records = [value] if isinstance(value, dict) else list(value) if isinstance(value, np.ndarray) else None
    if records is None or not all(isinstance(r, dict) and all(f in r for f in fields) for r in records):
        raise RuntimeError(f"{path}: expected a struct array with fields {', '.join(fields)}")
    return records


class StanfordCars(VisionDataset):
    """`Stanford Cars <https://ai.stanford.edu/~jkrause/cars/car_dataset.html>`_; split "train" or "test".
    `loader` (as in later torchvision) decodes an image path."""

    def __init__(self, root: str | pathlib.Path, split: str = "train", transform: Callable | None = None,
                 target_transform: Callable | None = None, download: bool = False,
                 loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "test"))
        self._base_folder = pathlib.Path(root) / "stanford_cars"
        devkit = self._base_folder / "devkit"
        self.loader = loader
        if self._split == "train":
            self._annotations_mat_path = devkit / "cars_train_annos.mat"
            self._images_base_path = self._base_folder / "cars_train"
        else:
            self._annotations_mat_path = self._base_folder / "cars_test_annos_withlabels.mat"
            self._images_base_path = self._base_folder / "cars_test"
        if download:
            raise ValueError(
                "The original URL is broken so the StanfordCars dataset is not available for automatic "
                "download anymore. You can try to download it manually following "
                "https://github.com/pytorch/vision/issues/7545#issuecomment-1631441616, "
                "and set download=False to avoid this error.")
        if not self._check_exists():
            raise RuntimeError("Dataset not found. Try to manually download following the instructions in "
                               "https://github.com/pytorch/vision/issues/7545#issuecomment-1631441616.")
        try:
            annotations = loadmat(self._annotations_mat_path, squeeze_me=True).get("annotations")
            meta = loadmat(devkit / "cars_meta.mat", squeeze_me=True).get("class_names")
        except ValueError as error:
            raise RuntimeError(str(error)) from error
        self._samples = [(str(self._images_base_path / str(a["fname"])), int(a["class"]) - 1)
                         for a in _records(annotations, self._annotations_mat_path, ("fname", "class"))]
        if isinstance(meta, str):
            meta = [meta]
        if not isinstance(meta, (list, np.ndarray)) or not all(isinstance(c, str) for c in meta):
            raise RuntimeError(f"{devkit / 'cars_meta.mat'}: 'class_names' must be a cell array of strings")
        self.classes = [str(c) for c in meta]
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}

    def __len__(self) -> int:
        return len(self._samples)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        image_path, target = self._samples[idx]
        image = self.loader(image_path)
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def _check_exists(self) -> bool:
        if not (self._base_folder / "devkit").is_dir():
            return False
        return self._annotations_mat_path.exists() and self._images_base_path.is_dir()
