"""CIFAR10 and CIFAR100 from their "python version" batches.

The batches are pickles, and unpickling runs whatever code a pickle names, so they are read with
the core's weights-only unpickler (`ember._weights_only_unpickler`, the one behind
``ember.load(weights_only=True)``): only dicts, lists, strings, bytes, numbers and NumPy arrays can
be built; anything else is a RuntimeError naming the file and nothing runs. Every batch's MD5 is
checked before it is opened, as torchvision does."""

from __future__ import annotations

import os
import pathlib
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np

from .utils import check_integrity, download_and_extract_archive
from .vision import VisionDataset, _hw_to_tensor

__all__ = ["CIFAR10", "CIFAR100"]

# Note [core gap: Python 2 dtype flags]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The CIFAR batches were pickled by Python 2, whose NumPy reduced a dtype to dtype(code, 0, 1); the
# core's weights-only unpickler accepts only dtype(code, False, True). Until the core takes both,
# this module gives the unpickler a numpy.dtype that turns those two ints into bools and then
# defers to the core's own check.


def _python2_dtype(*args: Any) -> Any:
    # NumPy under Python 2 pickled dtypes as dtype('u1', 0, 1), ints where Python 3's NumPy writes the
    # bools False, True that the core's unpickler insists on (Note [core gap: Python 2 dtype flags])
    from ember import _weights_only_unpickler as wo
    if len(args) == 3 and all(type(a) is int and a in (0, 1) for a in args[1:]):
        args = (args[0], bool(args[1]), bool(args[2]))
    return wo._np_dtype(*args)


def _load_pickle(path: str) -> Any:
    """A CIFAR batch (a Python 2 pickle, hence latin1 for its 8-bit strings), data only."""
    from ember._weights_only_unpickler import Builtin, Unpickler
    with open(path, "rb") as f:
        data = f.read()
    try:
        return Unpickler(data, encoding="latin1",
                         extra_globals={"numpy.dtype": Builtin("numpy.dtype", _python2_dtype)}).load()
    except (pickle.UnpicklingError, TypeError, ValueError, EOFError) as error:
        raise RuntimeError(f"{path}: not a CIFAR batch this loader can read safely ({error})") from error


class CIFAR10(VisionDataset):
    """`CIFAR10 <https://www.cs.toronto.edu/~kriz/cifar.html>`_: ``root/cifar-10-batches-py/``. Items
    are ``(uint8 [3, 32, 32] tensor, int)``."""

    base_folder = "cifar-10-batches-py"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"
    filename = "cifar-10-python.tar.gz"
    tgz_md5 = "c58f30108f718f92721af3b95e74349a"
    train_list = [
        ["data_batch_1", "c99cafc152244af753f735de768cd75f"],
        ["data_batch_2", "d4bba439e000b95fd0a9bffe97cbabec"],
        ["data_batch_3", "54ebc095f3ab1f0389bbae665268c751"],
        ["data_batch_4", "634d18415352ddfa80567beed471001a"],
        ["data_batch_5", "482c414d41f54cd18b22e5b47cb7c3cb"],
    ]
    test_list = [["test_batch", "40351d587109b95175f43aff81a1287e"]]
    meta = {"filename": "batches.meta", "key": "label_names", "md5": "5ff9c542aee3614f3951f8cda6e48888"}

    def __init__(self, root: str | pathlib.Path, train: bool = True, transform: Callable | None = None,
                 target_transform: Callable | None = None, download: bool = False) -> None:
        super().__init__(root, transform=transform, target_transform=target_transform)
        self.train = train
        if download:
            self.download()
        if not self._check_integrity():
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        downloaded_list = self.train_list if self.train else self.test_list
        arrays = []
        self.targets: list[int] = []
        for file_name, _ in downloaded_list:
            path = os.path.join(self.root, self.base_folder, file_name)
            entry = _load_pickle(path)
            if not isinstance(entry, dict) or "data" not in entry:
                raise RuntimeError(f"{path}: a CIFAR batch is a dict with a 'data' entry")
            labels = entry.get("labels", entry.get("fine_labels"))
            data = entry["data"]
            if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
                raise RuntimeError(f"{path}: 'data' must be a uint8 array of shape [N, 3072]")
            if not isinstance(labels, list) or len(labels) != data.shape[0] \
                    or not all(isinstance(label, int) for label in labels):
                raise RuntimeError(f"{path}: the labels must be a list of {data.shape[0]} ints")
            arrays.append(data)
            self.targets.extend(labels)
        # [N, 3072] rows are the three 32x32 planes; kept as [N, 32, 32, 3] like torchvision's .data
        self.data = np.vstack(arrays).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
        self._load_meta()

    def _load_meta(self) -> None:
        path = os.path.join(self.root, self.base_folder, self.meta["filename"])
        if not check_integrity(path, self.meta["md5"]):
            raise RuntimeError("Dataset metadata file not found or corrupted. You can use download=True to download it")
        data = _load_pickle(path)
        if not isinstance(data, dict) or not isinstance(data.get(self.meta["key"]), list):
            raise RuntimeError(f"{path}: the metadata must be a dict with a '{self.meta['key']}' list")
        self.classes = data[self.meta["key"]]
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img, target = _hw_to_tensor(self.data[index]), self.targets[index]
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target

    def __len__(self) -> int:
        return len(self.data)

    def _check_integrity(self) -> bool:
        return all(check_integrity(os.path.join(self.root, self.base_folder, name), md5)
                   for name, md5 in self.train_list + self.test_list)

    def download(self) -> None:
        if self._check_integrity():
            return
        download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.tgz_md5)

    def extra_repr(self) -> str:
        return f"Split: {'Train' if self.train is True else 'Test'}"


class CIFAR100(CIFAR10):
    """`CIFAR100 <https://www.cs.toronto.edu/~kriz/cifar.html>`_: ``root/cifar-100-python/``; targets are
    the fine labels."""

    base_folder = "cifar-100-python"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz"
    filename = "cifar-100-python.tar.gz"
    tgz_md5 = "eb9058c3a382ffc7106e4002c42a8d85"
    train_list = [["train", "16019d7e3df5f24257cddd939b257f8d"]]
    test_list = [["test", "f0ef6b0ae62326f3e7ffe0a1e1ae3a8a"]]
    meta = {"filename": "meta", "key": "fine_label_names", "md5": "7973b15100ade9c7d40fb424a0fd4ae6"}
