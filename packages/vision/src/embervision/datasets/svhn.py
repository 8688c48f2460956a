"""SVHN (cropped digits, "format 2") from its MATLAB files, read by `_matlab.loadmat`. Items are
``(uint8 [3, 32, 32] tensor, int)``; the file's label 10 (the digit 0) becomes 0, as torchvision
does."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ._matlab import loadmat
from .utils import check_integrity, download_url, verify_str_arg
from .vision import VisionDataset, _chw_to_tensor

__all__ = ["SVHN"]


class SVHN(VisionDataset):
    """`SVHN <http://ufldl.stanford.edu/housenumbers/>`_: ``root/{train,test,extra}_32x32.mat``."""

    split_list = {
        "train": ["http://ufldl.stanford.edu/housenumbers/train_32x32.mat", "train_32x32.mat",
                  "e26dedcc434d2e4c54c9b2d4a06d8373"],
        "test": ["http://ufldl.stanford.edu/housenumbers/test_32x32.mat", "test_32x32.mat",
                 "eb5a983be6a315427106f1b164d9cef3"],
        "extra": ["http://ufldl.stanford.edu/housenumbers/extra_32x32.mat", "extra_32x32.mat",
                  "a93ce644f1a588dc4d68dda5feec44a7"],
    }

    def __init__(self, root: str | pathlib.Path, split: str = "train", transform: Callable | None = None,
                 target_transform: Callable | None = None, download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = verify_str_arg(split, "split", tuple(self.split_list.keys()))
        self.url, self.filename, self.file_md5 = self.split_list[split]
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        path = os.path.join(self.root, self.filename)
        try:
            mat = loadmat(path)
        except ValueError as error:
            raise RuntimeError(f"{path}: {error}") from error
        images, labels = mat.get("X"), mat.get("y")
        if not isinstance(images, np.ndarray) or images.ndim != 4 or images.shape[:3] != (32, 32, 3):
            raise RuntimeError(f"{path}: 'X' must be an array of shape [32, 32, 3, N]")
        if not isinstance(labels, np.ndarray) or labels.size != images.shape[3] or labels.dtype.kind not in "iuf":
            raise RuntimeError(f"{path}: 'y' must hold one label per image")
        self.labels = labels.astype(np.int64).reshape(-1)
        self.labels[self.labels == 10] = 0
        # [H, W, C, N] -> [N, C, H, W]
        self.data = np.transpose(images, (3, 2, 0, 1)).astype(np.uint8)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img, target = _chw_to_tensor(self.data[index]), int(self.labels[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)

    def _check_integrity(self) -> bool:
        return check_integrity(os.path.join(self.root, self.filename), self.file_md5)

    def download(self) -> None:
        download_url(self.url, self.root, self.filename, self.file_md5)

    def extra_repr(self) -> str:
        return "Split: {split}".format(**self.__dict__)
