"""STL10 from its binary files (``stl10_binary/{train,test,unlabeled}_X.bin``, ``*_y.bin``): images
are raw uint8 planes of 3x96x96 stored column-major, labels one byte each from 1. Sizes are checked
(RuntimeError on a partial image or a label count that does not match). Items are
``(uint8 [3, 96, 96] tensor, int)``, the target -1 for unlabeled images."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

from .utils import check_integrity, download_and_extract_archive, verify_str_arg
from .vision import VisionDataset, _chw_to_tensor

__all__ = ["STL10"]

_IMAGE_BYTES = 3 * 96 * 96


class STL10(VisionDataset):
    """`STL10 <https://cs.stanford.edu/~acoates/stl10/>`_; split "train", "train+unlabeled", "unlabeled"
    or "test"; `folds` (0-9) picks one of the ten predefined 1000-image training folds."""

    base_folder = "stl10_binary"
    url = "http://ai.stanford.edu/~acoates/stl10/stl10_binary.tar.gz"
    filename = "stl10_binary.tar.gz"
    tgz_md5 = "91f7769df0f17e558f3565bffb0c7dfb"
    class_names_file = "class_names.txt"
    folds_list_file = "fold_indices.txt"
    train_list = [
        ["train_X.bin", "918c2871b30a85fa023e0c44e0bee87f"],
        ["train_y.bin", "5a34089d4802c674881badbb80307741"],
        ["unlabeled_X.bin", "5242ba1fed5e4be9e1e742405eb56ca4"],
    ]
    test_list = [["test_X.bin", "7f263ba9f9e0b06b93213547f721ac82"], ["test_y.bin", "36f9794fa4beb8a2c72628de14fa638e"]]
    splits = ("train", "train+unlabeled", "unlabeled", "test")

    def __init__(self, root: str | pathlib.Path, split: str = "train", folds: int | None = None,
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", self.splits)
        self.folds = self._verify_folds(folds)
        if download:
            self.download()
        elif not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")

        self.labels: np.ndarray | None
        if self.split == "train":
            self.data, self.labels = self.__loadfile(self.train_list[0][0], self.train_list[1][0])
            self.labels = np.asarray(self.labels)
            self.__load_folds(folds)
        elif self.split == "train+unlabeled":
            self.data, self.labels = self.__loadfile(self.train_list[0][0], self.train_list[1][0])
            self.labels = np.asarray(self.labels)
            self.__load_folds(folds)
            unlabeled_data, _ = self.__loadfile(self.train_list[2][0])
            self.data = np.concatenate((self.data, unlabeled_data))
            self.labels = np.concatenate((self.labels, np.asarray([-1] * unlabeled_data.shape[0])))
        elif self.split == "unlabeled":
            self.data, _ = self.__loadfile(self.train_list[2][0])
            self.labels = np.asarray([-1] * self.data.shape[0])
        else:
            self.data, self.labels = self.__loadfile(self.test_list[0][0], self.test_list[1][0])

        class_file = os.path.join(self.root, self.base_folder, self.class_names_file)
        if os.path.isfile(class_file):
            with open(class_file) as f:
                self.classes = f.read().splitlines()

    def _verify_folds(self, folds: int | None) -> int | None:
        if folds is None:
            return folds
        if isinstance(folds, int) and not isinstance(folds, bool):
            if folds in range(10):
                return folds
            raise ValueError(f"Value for argument folds should be in the range [0, 10), but got {folds}.")
        raise ValueError(f"Expected type None or int for argument folds, but got type {type(folds)}.")

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        target: int | None
        if self.labels is not None:
            img, target = self.data[index], int(self.labels[index])
        else:
            img, target = self.data[index], None
        img = _chw_to_tensor(img)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return self.data.shape[0]

    def __loadfile(self, data_file: str, labels_file: str | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        labels = None
        if labels_file:
            with open(os.path.join(self.root, self.base_folder, labels_file), "rb") as f:
                raw_labels = np.frombuffer(f.read(), dtype=np.uint8)
            if (raw_labels == 0).any():
                raise RuntimeError(f"{labels_file}: STL10 labels count from 1, found 0")
            labels = raw_labels.astype(np.int64) - 1
        path = os.path.join(self.root, self.base_folder, data_file)
        with open(path, "rb") as f:
            everything = np.frombuffer(f.read(), dtype=np.uint8)
        if everything.size % _IMAGE_BYTES:
            raise RuntimeError(f"{data_file}: {everything.size} bytes is not a whole number of 3x96x96 images")
        # stored column-major: [N, C, W, H] -> [N, C, H, W]
        images = everything.reshape(-1, 3, 96, 96).transpose(0, 1, 3, 2)
        if labels is not None and labels.shape[0] != images.shape[0]:
            raise RuntimeError(f"{data_file}: {images.shape[0]} images but {labels_file} has {labels.shape[0]} labels")
        return images, labels

    def __load_folds(self, folds: int | None) -> None:
        if folds is None:
            return
        path = os.path.join(self.root, self.base_folder, self.folds_list_file)
        with open(path) as f:
            lines = f.read().splitlines()
        if folds >= len(lines):
            raise RuntimeError(f"{path}: has {len(lines)} folds, fold {folds} asked for")
        try:
            list_idx = np.array([int(v) for v in lines[folds].split()], dtype=np.int64)
        except ValueError as error:
            raise RuntimeError(f"{path}: fold {folds} is not a list of integers") from error
        if list_idx.size and (list_idx.min() < 0 or list_idx.max() >= self.data.shape[0]):
            raise RuntimeError(f"{path}: fold {folds} indexes past the {self.data.shape[0]} training images")
        self.data = self.data[list_idx]
        assert self.labels is not None
        self.labels = self.labels[list_idx]

    def _check_integrity(self) -> bool:
        return all(check_integrity(os.path.join(self.root, self.base_folder, name), md5)
                   for name, md5 in self.train_list + self.test_list)

    def download(self) -> None:
        if self._check_integrity():
            return
        download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")

    def extra_repr(self) -> str:
        return "Split: {split}".format(**self.__dict__)
