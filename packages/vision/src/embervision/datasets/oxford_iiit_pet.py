"""Oxford-IIIT Pet: ``oxford-iiit-pet/{images/<id>.jpg, annotations/{trainval,test}.txt,
annotations/trimaps/<id>.png}``."""

from __future__ import annotations

import pathlib
from collections.abc import Callable, Sequence
from typing import Any

from .folder import _read_image_unchanged, default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["OxfordIIITPet"]


class OxfordIIITPet(VisionDataset):
    """`Oxford-IIIT Pet <https://www.robots.ox.ac.uk/~vgg/data/pets/>`_; split "trainval" or "test";
    target_types among "category", "binary-category", "segmentation" (the trimap, decoded by
    `target_loader`), a list of them for a tuple target, empty for None."""

    _RESOURCES = (
        ("https://www.robots.ox.ac.uk/~vgg/data/pets/data/images.tar.gz", "5c4f3ee8e5d25df40f4fd59a7f44e54c"),
        ("https://www.robots.ox.ac.uk/~vgg/data/pets/data/annotations.tar.gz", "95a8c909bbe2e81eed6a22bccdf3f68f"),
    )
    _VALID_TARGET_TYPES = ("category", "binary-category", "segmentation")

    def __init__(self, root: str | pathlib.Path, split: str = "trainval", target_types: Sequence[str] | str = "category",
                 transforms: Callable | None = None, transform: Callable | None = None,
                 target_transform: Callable | None = None, download: bool = False, *,
                 loader: Callable[[str], Any] = default_loader,
                 target_loader: Callable[[str], Any] = _read_image_unchanged) -> None:
        self._split = verify_str_arg(split, "split", ("trainval", "test"))
        if isinstance(target_types, str):
            target_types = [target_types]
        self._target_types = [verify_str_arg(t, "target_types", self._VALID_TARGET_TYPES) for t in target_types]
        super().__init__(root, transforms=transforms, transform=transform, target_transform=target_transform)
        self._base_folder = pathlib.Path(self.root) / "oxford-iiit-pet"
        self._images_folder = self._base_folder / "images"
        self._anns_folder = self._base_folder / "annotations"
        self._segs_folder = self._anns_folder / "trimaps"
        self.loader, self.target_loader = loader, target_loader
        if download:
            self._download()
        if not self._check_exists():
            raise RuntimeError("Dataset not found. You can use download=True to download it")
        image_ids = []
        self._labels: list[int] = []
        self._bin_labels: list[int] = []
        path = self._anns_folder / f"{self._split}.txt"
        with open(path) as file:
            for number, line in enumerate(file, 1):
                fields = line.split()
                if not fields:
                    continue
                if len(fields) != 4 or not all(f.isdigit() for f in fields[1:]) or "/" in fields[0] \
                        or fields[0] in (".", ".."):
                    raise RuntimeError(f"{path}:{number}: expected '<image id> <class> <species> <breed id>'")
                image_ids.append(fields[0])
                self._labels.append(int(fields[1]) - 1)
                self._bin_labels.append(int(fields[2]) - 1)
        self.bin_classes = ["Cat", "Dog"]
        # class names come from the image ids ("great_pyrenees_12" -> "Great Pyrenees"), ordered by label
        self.classes = [" ".join(part.title() for part in raw.split("_")) for raw, _ in
                        sorted({(i.rsplit("_", 1)[0], label) for i, label in zip(image_ids, self._labels, strict=True)},
                               key=lambda pair: pair[1])]
        self.bin_class_to_idx = {name: i for i, name in enumerate(self.bin_classes)}
        self.class_to_idx = {name: i for i, name in enumerate(self.classes)}
        self._images = [self._images_folder / f"{i}.jpg" for i in image_ids]
        self._segs = [self._segs_folder / f"{i}.png" for i in image_ids]

    def __len__(self) -> int:
        return len(self._images)

    def __getitem__(self, idx: int) -> tuple[Any, Any]:
        image = self.loader(str(self._images[idx]))
        target: Any = []
        for target_type in self._target_types:
            if target_type == "category":
                target.append(self._labels[idx])
            elif target_type == "binary-category":
                target.append(self._bin_labels[idx])
            else:
                target.append(self.target_loader(str(self._segs[idx])))
        if not target:
            target = None
        elif len(target) == 1:
            target = target[0]
        else:
            target = tuple(target)
        if self.transforms:
            image, target = self.transforms(image, target)
        return image, target

    def _check_exists(self) -> bool:
        return all(folder.is_dir() for folder in (self._images_folder, self._anns_folder))

    def _download(self) -> None:
        if self._check_exists():
            return
        for url, md5 in self._RESOURCES:
            download_and_extract_archive(url, download_root=str(self._base_folder), md5=md5)
