"""CelebA (aligned and cropped images) from its annotation text files: ``celeba/{img_align_celeba/,
list_eval_partition.txt, identity_CelebA.txt, list_bbox_celeba.txt, list_landmarks_align_celeba.txt,
list_attr_celeba.txt}``. The files are checked against torchvision's MD5s. Targets are int64 tensors
(attributes mapped from -1/1 to 0/1) and the image comes from `loader`. The files live on Google
Drive, which needs an interactive confirmation, so ``download=True`` is refused with a RuntimeError."""

from __future__ import annotations

import os
import pathlib
from collections import namedtuple
from collections.abc import Callable
from typing import Any

import numpy as np

import ember

from .folder import default_loader
from .utils import check_integrity, verify_str_arg
from .vision import VisionDataset

__all__ = ["CelebA"]

CSV = namedtuple("CSV", ["header", "index", "data"])


class CelebA(VisionDataset):
    """`CelebA <http://mmlab.ie.cuhk.edu.hk/projects/CelebA.html>`_; split "train", "valid", "test" or
    "all"; `target_type` one of "attr", "identity", "bbox", "landmarks" or a list of them (a tuple
    target), an empty list for None."""

    base_folder = "celeba"
    file_list = [
        # Google Drive id, MD5, file name
        ("0B7EVK8r0v71pZjFTYXZWM3FlRnM", "00d2c5bc6d35e252742224ab0c1e8fcb", "img_align_celeba.zip"),
        ("0B7EVK8r0v71pblRyaVFSWGxPY0U", "75e246fa4810816ffd6ee81facbd244c", "list_attr_celeba.txt"),
        ("1_ee_0u7vcNLOfNLegJRHmolfH5ICW-XS", "32bd1bd63d3c78cd57e08160ec5ed1e2", "identity_CelebA.txt"),
        ("0B7EVK8r0v71pbThiMVRxWXZ4dU0", "00566efa6fedff7a56946cd1c10f1c16", "list_bbox_celeba.txt"),
        ("0B7EVK8r0v71pd0FJY3Blby1HUTQ", "cc24ecafdb5b50baae59b03474781f8c", "list_landmarks_align_celeba.txt"),
        ("0B7EVK8r0v71pY0NSMzRuSXJEVkk", "d32c9cbf5e040fd4025c592c306e6668", "list_eval_partition.txt"),
    ]

    def __init__(self, root: str | pathlib.Path, split: str = "train", target_type: list[str] | str = "attr",
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 download: bool = False, *, loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.split = split
        self.target_type = list(target_type) if isinstance(target_type, list) else [target_type]
        for t in self.target_type:
            verify_str_arg(t, "target_type", ("attr", "identity", "bbox", "landmarks"))
        if not self.target_type and self.target_transform is not None:
            raise RuntimeError("target_transform is specified but target_type is empty")
        self.loader = loader
        if download:
            raise RuntimeError("CelebA is hosted on Google Drive, which embervision cannot download from; "
                               f"place the files under {os.path.join(str(self.root), self.base_folder)}")
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        split_ = {"train": 0, "valid": 1, "test": 2, "all": None}[
            verify_str_arg(split.lower() if isinstance(split, str) else split, "split", ("train", "valid", "test", "all"))]
        splits = self._load_csv("list_eval_partition.txt")
        identity = self._load_csv("identity_CelebA.txt")
        bbox = self._load_csv("list_bbox_celeba.txt", header=1)
        landmarks_align = self._load_csv("list_landmarks_align_celeba.txt", header=1)
        attr = self._load_csv("list_attr_celeba.txt", header=1)
        n = len(splits.index)
        for name, table in (("identity", identity), ("bbox", bbox), ("landmarks", landmarks_align), ("attr", attr)):
            if table.index != splits.index:
                raise RuntimeError(f"CelebA: the {name} file does not list the {n} images of list_eval_partition.txt "
                                   "in the same order")
        if split_ is None:
            keep = np.arange(n)
        else:
            keep = np.nonzero(splits.data[:, 0] == split_)[0]
        self.filename = [splits.index[i] for i in keep]
        self.identity = ember.from_numpy(identity.data[keep])
        self.bbox = ember.from_numpy(bbox.data[keep])
        self.landmarks_align = ember.from_numpy(landmarks_align.data[keep])
        # attributes are -1/1 in the file
        self.attr = ember.from_numpy(np.floor_divide(attr.data[keep] + 1, 2))
        self.attr_names = attr.header

    def _load_csv(self, filename: str, header: int | None = None) -> CSV:
        path = os.path.join(self.root, self.base_folder, filename)
        with open(path) as f:
            rows = [line.split() for line in f.read().splitlines()]
        rows = [r for r in rows if r]
        headers: list[str] = []
        if header is not None:
            if len(rows) <= header:
                raise RuntimeError(f"{path}: missing its header line")
            headers = rows[header]
            rows = rows[header + 1:]
        widths = {len(r) for r in rows}
        if len(widths) > 1:
            raise RuntimeError(f"{path}: rows have different numbers of fields {sorted(widths)}")
        try:
            data = np.array([[int(v) for v in r[1:]] for r in rows], dtype=np.int64)
        except ValueError as error:
            raise RuntimeError(f"{path}: non-integer field ({error})") from error
        if not rows:
            data = data.reshape(0, 0)
        return CSV(headers, [r[0] for r in rows], data)

    def _check_integrity(self) -> bool:
        for _, md5, filename in self.file_list:
            # the image archive may be deleted once extracted
            if not filename.endswith((".zip", ".7z")) and \
                    not check_integrity(os.path.join(self.root, self.base_folder, filename), md5):
                return False
        return os.path.isdir(os.path.join(self.root, self.base_folder, "img_align_celeba"))

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        X = self.loader(os.path.join(self.root, self.base_folder, "img_align_celeba", self.filename[index]))
        target: Any = []
        for t in self.target_type:
            if t == "attr":
                target.append(self.attr[index, :])
            elif t == "identity":
                target.append(self.identity[index, 0])
            elif t == "bbox":
                target.append(self.bbox[index, :])
            else:
                target.append(self.landmarks_align[index, :])
        if self.transform is not None:
            X = self.transform(X)
        if target:
            target = tuple(target) if len(target) > 1 else target[0]
            if self.target_transform is not None:
                target = self.target_transform(target)
        else:
            target = None
        return X, target

    def __len__(self) -> int:
        return len(self.attr)

    def extra_repr(self) -> str:
        return "\n".join(["Target type: {target_type}", "Split: {split}"]).format(**self.__dict__)
