"""Oxford 102 Flowers: ``root/flowers-102/{jpg/image_%05d.jpg, imagelabels.mat, setid.mat}``, the .mat
files read by `_matlab.loadmat`. Items are ``(loader(path), int)`` with labels from 0."""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

from ._matlab import loadmat
from .folder import default_loader
from .utils import check_integrity, download_and_extract_archive, download_url, verify_str_arg
from .vision import VisionDataset

__all__ = ["Flowers102"]


def _load(path: pathlib.Path) -> dict[str, Any]:
    try:
        return loadmat(path, squeeze_me=True)
    except ValueError as error:
        raise RuntimeError(str(error)) from error


class Flowers102(VisionDataset):
    """`Oxford 102 Flower <https://www.robots.ox.ac.uk/~vgg/data/flowers/102/>`_; split "train", "val"
    or "test". `loader` (as in later torchvision) decodes an image path; the default uses
    `embervision.io.read_image`."""

    _download_url_prefix = "https://www.robots.ox.ac.uk/~vgg/data/flowers/102/"
    _file_dict = {  # filename, md5
        "image": ("102flowers.tgz", "52808999861908f626f3c1f4e79d11fa"),
        "label": ("imagelabels.mat", "e0620be6f572b9609742df49c70aed4d"),
        "setid": ("setid.mat", "a5357ecc9cb78c4bef273ce3793fc85c"),
    }
    _splits_map = {"train": "trnid", "val": "valid", "test": "tstid"}

    def __init__(self, root: str | pathlib.Path, split: str = "train", transform: Callable | None = None,
                 target_transform: Callable | None = None, download: bool = False,
                 loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self._split = verify_str_arg(split, "split", ("train", "val", "test"))
        self._base_folder = pathlib.Path(self.root) / "flowers-102"
        self._images_folder = self._base_folder / "jpg"
        self.loader = loader
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        set_ids = _load(self._base_folder / self._file_dict["setid"][0])
        labels = _load(self._base_folder / self._file_dict["label"][0])
        ids, all_labels = set_ids.get(self._splits_map[self._split]), labels.get("labels")
        # squeeze_me turns a one-element list into a scalar
        ids = np.atleast_1d(ids) if isinstance(ids, (np.ndarray, np.number)) else None
        all_labels = np.atleast_1d(all_labels) if isinstance(all_labels, (np.ndarray, np.number)) else None
        if ids is None or all_labels is None or ids.ndim != 1 or all_labels.ndim != 1 \
                or ids.dtype.kind not in "iuf" or all_labels.dtype.kind not in "iuf":
            raise RuntimeError(f"{self._base_folder}: setid.mat and imagelabels.mat must hold 1-D arrays")
        # image ids count from 1, labels from 1
        image_id_to_label = dict(enumerate((all_labels.astype(np.int64) - 1).tolist(), 1))
        self._labels: list[int] = []
        self._image_files: list[pathlib.Path] = []
        for image_id in ids.astype(np.int64).tolist():
            if image_id not in image_id_to_label:
                raise RuntimeError(f"{self._base_folder}: image id {image_id} has no label")
            self._labels.append(image_id_to_label[image_id])
            self._image_files.append(self._images_folder / f"image_{image_id:05d}.jpg")

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

    def _check_integrity(self) -> bool:
        if not (self._images_folder.exists() and self._images_folder.is_dir()):
            return False
        return all(check_integrity(str(self._base_folder / name), md5)
                   for name, md5 in (self._file_dict["label"], self._file_dict["setid"]))

    def download(self) -> None:
        if self._check_integrity():
            return
        download_and_extract_archive(f"{self._download_url_prefix}{self._file_dict['image'][0]}",
                                     str(self._base_folder), md5=self._file_dict["image"][1])
        for id in ["label", "setid"]:
            filename, md5 = self._file_dict[id]
            download_url(self._download_url_prefix + filename, str(self._base_folder), md5=md5)
