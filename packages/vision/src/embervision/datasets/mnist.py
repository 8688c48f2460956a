"""MNIST, FashionMNIST, KMNIST, EMNIST and QMNIST, read from their IDX files (raw, or the .gz/.xz the
mirrors ship) by a strict parser: the magic, the type code, the dimensions and the file size must
agree, else RuntimeError. Items are ``(uint8 [1, 28, 28] tensor, int)``, the image passed through
`transform` (torchvision gives a PIL "L" image there)."""

from __future__ import annotations

import gzip
import lzma
import os
import pathlib
import shutil
import string
from collections.abc import Callable
from typing import Any
from urllib.error import URLError

import numpy as np

import ember

from .utils import check_integrity, download_and_extract_archive, extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["MNIST", "FashionMNIST", "KMNIST", "EMNIST", "QMNIST", "read_sn3_pascalvincent_tensor",
           "read_image_file", "read_label_file"]

# IDX type code -> big-endian NumPy dtype
_IDX_TYPES = {0x08: np.dtype(np.uint8), 0x09: np.dtype(np.int8), 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
              0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}
# the native-order dtypes ember tensors hold
_NATIVE = {np.dtype(np.uint8): np.uint8, np.dtype(np.int8): np.int8, np.dtype(">i2"): np.int16,
           np.dtype(">i4"): np.int32, np.dtype(">f4"): np.float32, np.dtype(">f8"): np.float64}


def _read_bytes(path: str) -> bytes:
    # the mirrors ship .gz (and QMNIST's nist split .xz); an already decompressed file is read as is
    if path.endswith(".gz"):
        opener: Any = gzip.open
    elif path.endswith(".xz"):
        opener = lzma.open
    else:
        opener = open
    try:
        with opener(path, "rb") as f:
            return f.read()
    except (OSError, EOFError, lzma.LZMAError) as error:
        raise RuntimeError(f"{path}: cannot read the IDX file ({error})") from error


def _parse_idx(data: bytes, path: str) -> np.ndarray:
    if len(data) < 4:
        raise RuntimeError(f"{path}: not an IDX file (only {len(data)} bytes)")
    if data[0] != 0 or data[1] != 0:
        raise RuntimeError(f"{path}: not an IDX file (the magic number must start with two zero bytes, "
                           f"got {data[:2].hex()})")
    code, ndim = data[2], data[3]
    if code not in _IDX_TYPES:
        raise RuntimeError(f"{path}: unknown IDX type code 0x{code:02x}")
    if not 1 <= ndim <= 3:
        raise RuntimeError(f"{path}: IDX files here have 1 to 3 dimensions, this one claims {ndim}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise RuntimeError(f"{path}: IDX header truncated ({len(data)} bytes, the dimensions need {header})")
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    dtype = _IDX_TYPES[code]
    expected = header + int(np.prod(dims, dtype=object)) * dtype.itemsize
    if len(data) != expected:
        raise RuntimeError(f"{path}: IDX dimensions {dims} of {dtype.itemsize}-byte values need {expected} bytes, "
                           f"the file has {len(data)}")
    return np.frombuffer(data, dtype=dtype, offset=header).reshape(dims).astype(_NATIVE[dtype])


def read_sn3_pascalvincent_tensor(path: str, strict: bool = True) -> ember.Tensor:
    """An IDX ("SN3 Pascal Vincent") file as a tensor. A file whose size does not match its header is a
    RuntimeError whatever `strict` says (reading past the data is never allowed)."""
    path = os.fspath(path)
    return ember.from_numpy(_parse_idx(_read_bytes(path), path))


def read_label_file(path: str) -> ember.Tensor:
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if x.dtype != ember.uint8:
        raise TypeError(f"x should be of dtype ember.uint8 instead of {x.dtype}")
    if x.dim() != 1:
        raise ValueError(f"x should have 1 dimension instead of {x.dim()}")
    return x.long()


def read_image_file(path: str) -> ember.Tensor:
    x = read_sn3_pascalvincent_tensor(path, strict=False)
    if x.dtype != ember.uint8:
        raise TypeError(f"x should be of dtype ember.uint8 instead of {x.dtype}")
    if x.dim() != 3:
        raise ValueError(f"x should have 3 dimension instead of {x.dim()}")
    return x


def _find(raw_folder: str, name: str) -> str | None:
    """The decompressed file, else the compressed one the mirrors ship, else None."""
    for candidate in (name, name + ".gz", name + ".xz"):
        path = os.path.join(raw_folder, candidate)
        if check_integrity(path):
            return path
    return None


class MNIST(VisionDataset):
    """`MNIST <http://yann.lecun.com/exdb/mnist/>`_: ``root/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte``
    (or their .gz)."""

    mirrors = ["http://yann.lecun.com/exdb/mnist/", "https://ossci-datasets.s3.amazonaws.com/mnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "f68b3c2dcbeaaa9fbdd348bbdeb94873"),
        ("train-labels-idx1-ubyte.gz", "d53e105ee54ea40749a09fcbcd1e9432"),
        ("t10k-images-idx3-ubyte.gz", "9fb629c4189551a2d022fa330f9573f3"),
        ("t10k-labels-idx1-ubyte.gz", "ec29112dd5afa0611ce80d1b7f02629c"),
    ]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five", "6 - six", "7 - seven",
               "8 - eight", "9 - nine"]

    def __init__(self, root: str | pathlib.Path, train: bool = True, transform: Callable | None = None,
                 target_transform: Callable | None = None, download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        self.data, self.targets = self._load_data()

    @property
    def raw_folder(self) -> str:
        return os.path.join(self.root, self.__class__.__name__, "raw")

    @property
    def class_to_idx(self) -> dict[str, int]:
        return {name: i for i, name in enumerate(self.classes)}

    @property
    def images_file(self) -> str:
        return f"{'train' if self.train else 't10k'}-images-idx3-ubyte"

    @property
    def labels_file(self) -> str:
        return f"{'train' if self.train else 't10k'}-labels-idx1-ubyte"

    def _check_exists(self) -> bool:
        return all(_find(self.raw_folder, os.path.basename(f)) is not None for f in (self.images_file, self.labels_file))

    def _load_data(self) -> tuple[ember.Tensor, ember.Tensor]:
        data = read_image_file(_find(self.raw_folder, os.path.basename(self.images_file)))
        targets = read_label_file(_find(self.raw_folder, os.path.basename(self.labels_file)))
        if data.shape[0] != targets.shape[0]:
            raise RuntimeError(f"{self.__class__.__name__}: {data.shape[0]} images but {targets.shape[0]} labels")
        return data, targets

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img, target = self.data[index].unsqueeze(0).clone(), int(self.targets[index])
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)

    def download(self) -> None:
        """Download (and decompress) the files unless they are already there."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for filename, md5 in self.resources:
            for mirror in self.mirrors:
                try:
                    download_and_extract_archive(f"{mirror}{filename}", download_root=self.raw_folder,
                                                 filename=filename, md5=md5)
                except URLError:
                    continue  # next mirror
                break
            else:
                raise RuntimeError(f"Error downloading {filename}")

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class FashionMNIST(MNIST):
    """`Fashion-MNIST <https://github.com/zalandoresearch/fashion-mnist>`_, laid out as MNIST."""

    mirrors = ["http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "8d4fb7e6c68d591d4c3dfef9ec88bf0d"),
        ("train-labels-idx1-ubyte.gz", "25c81989df183df01b3e8a0aad5dffbe"),
        ("t10k-images-idx3-ubyte.gz", "bef4ecab320f06d8554ea6380940ec79"),
        ("t10k-labels-idx1-ubyte.gz", "bb300cfdad3c16e7a12a480ee83cd310"),
    ]
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


class KMNIST(MNIST):
    """`Kuzushiji-MNIST <https://github.com/rois-codh/kmnist>`_, laid out as MNIST."""

    mirrors = ["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"]
    resources = [
        ("train-images-idx3-ubyte.gz", "bdb82020997e1d708af4cf47b453dcf7"),
        ("train-labels-idx1-ubyte.gz", "e144d726b3acfaa3e44228e80efcd344"),
        ("t10k-images-idx3-ubyte.gz", "5c965bf0a639b31b8f53240b1b52f4d7"),
        ("t10k-labels-idx1-ubyte.gz", "7320c461ea6c1c855c0b718fb2a4b134"),
    ]
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]


class EMNIST(MNIST):
    """`EMNIST <https://www.nist.gov/itl/products-and-services/emnist-dataset>`_:
    ``root/EMNIST/raw/emnist-<split>-{train,test}-{images-idx3,labels-idx1}-ubyte``. The images are
    stored transposed in the files and returned as stored, as torchvision does."""

    url = "https://www.itl.nist.gov/iaui/vip/cs_links/EMNIST/gzip.zip"
    md5 = "58c8d27c78d21e728a6bc7b3cc06412e"
    splits = ("byclass", "bymerge", "balanced", "letters", "digits", "mnist")
    # the merged letters look the same in upper and lower case
    _merged_classes = {"c", "i", "j", "k", "l", "m", "o", "p", "s", "u", "v", "w", "x", "y", "z"}
    _all_classes = set(string.digits + string.ascii_letters)
    classes_split_dict = {
        "byclass": sorted(_all_classes),
        "bymerge": sorted(_all_classes - _merged_classes),
        "balanced": sorted(_all_classes - _merged_classes),
        "letters": ["N/A"] + list(string.ascii_lowercase),
        "digits": list(string.digits),
        "mnist": list(string.digits),
    }

    def __init__(self, root: str | pathlib.Path, split: str, **kwargs: Any) -> None:
        self.split = verify_str_arg(split, "split", self.splits)
        super().__init__(root, **kwargs)
        self.classes = self.classes_split_dict[self.split]

    @property
    def _file_prefix(self) -> str:
        return f"emnist-{self.split}-{'train' if self.train else 'test'}"

    @property
    def images_file(self) -> str:
        return os.path.join(self.raw_folder, f"{self._file_prefix}-images-idx3-ubyte")

    @property
    def labels_file(self) -> str:
        return os.path.join(self.raw_folder, f"{self._file_prefix}-labels-idx1-ubyte")

    def download(self) -> None:
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        download_and_extract_archive(self.url, download_root=self.raw_folder, md5=self.md5)
        gzip_folder = os.path.join(self.raw_folder, "gzip")
        for name in os.listdir(gzip_folder):
            if name.endswith(".gz"):
                extract_archive(os.path.join(gzip_folder, name), self.raw_folder)
        shutil.rmtree(gzip_folder)


class QMNIST(MNIST):
    """`QMNIST <https://github.com/facebookresearch/qmnist>`_: ``what`` is "train", "test", "test10k"
    (the first 10000 test digits, MNIST's test set), "test50k" (the rest) or "nist"; ``compat=True``
    makes the target the class number, else the full row of 8 int64 label fields."""

    subsets = {"train": "train", "test": "test", "test10k": "test", "test50k": "test", "nist": "nist"}
    _BASE = "https://raw.githubusercontent.com/facebookresearch/qmnist/master/"
    resources: dict[str, list[tuple[str, str]]] = {  # type: ignore[assignment]
        "train": [(_BASE + "qmnist-train-images-idx3-ubyte.gz", "ed72d4157d28c017586c42bc6afe6370"),
                  (_BASE + "qmnist-train-labels-idx2-int.gz", "0058f8dd561b90ffdd0f734c6a30e5e4")],
        "test": [(_BASE + "qmnist-test-images-idx3-ubyte.gz", "1394631089c404de565df7b7aeaf9412"),
                 (_BASE + "qmnist-test-labels-idx2-int.gz", "5b5b05890a5e13444e108efe57b788aa")],
        "nist": [(_BASE + "xnist-images-idx3-ubyte.xz", "7f124b3b8ab81486c9d8c2749c17f834"),
                 (_BASE + "xnist-labels-idx2-int.xz", "5ed0e788978e45d4a8bd4b7caec3d79d")],
    }

    def __init__(self, root: str | pathlib.Path, what: str | None = None, compat: bool = True, train: bool = True,
                 **kwargs: Any) -> None:
        if what is None:
            what = "train" if train else "test"
        self.what = verify_str_arg(what, "what", tuple(self.subsets.keys()))
        self.compat = compat
        super().__init__(root, train, **kwargs)

    @property
    def images_file(self) -> str:
        (url, _), _ = self.resources[self.subsets[self.what]]
        return os.path.join(self.raw_folder, os.path.splitext(os.path.basename(url))[0])

    @property
    def labels_file(self) -> str:
        _, (url, _) = self.resources[self.subsets[self.what]]
        return os.path.join(self.raw_folder, os.path.splitext(os.path.basename(url))[0])

    def _load_data(self) -> tuple[ember.Tensor, ember.Tensor]:
        data = read_image_file(_find(self.raw_folder, os.path.basename(self.images_file)))
        targets = read_sn3_pascalvincent_tensor(_find(self.raw_folder, os.path.basename(self.labels_file))).long()
        if targets.dim() != 2:
            raise ValueError(f"targets should have 2 dimensions instead of {targets.dim()}")
        if data.shape[0] != targets.shape[0]:
            raise RuntimeError(f"QMNIST: {data.shape[0]} images but {targets.shape[0]} label rows")
        if self.what == "test10k":
            data, targets = data[:10000].clone(), targets[:10000].clone()
        elif self.what == "test50k":
            data, targets = data[10000:].clone(), targets[10000:].clone()
        return data, targets

    def download(self) -> None:
        """Download only the files of `what`."""
        if self._check_exists():
            return
        os.makedirs(self.raw_folder, exist_ok=True)
        for url, md5 in self.resources[self.subsets[self.what]]:
            download_and_extract_archive(url, self.raw_folder, md5=md5)

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img, target = self.data[index].unsqueeze(0).clone(), self.targets[index]
        if self.transform is not None:
            img = self.transform(img)
        if self.compat:
            target = int(target[0])
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def extra_repr(self) -> str:
        return f"Split: {self.what}"
