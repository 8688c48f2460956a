"""COCO detection and captions from the annotation JSON (no pycocotools): `coco` is a small index
with the parts of pycocotools' ``COCO`` the datasets and most user code touch (``dataset``, ``imgs``,
``anns``, ``cats``, ``imgToAnns``, ``catToImgs``, ``getAnnIds``, ``getImgIds``, ``getCatIds``,
``loadImgs``, ``loadAnns``, ``loadCats``). The JSON's structure is checked, and image file names
must stay under `root`."""

from __future__ import annotations

import json
import os
import pathlib
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from .folder import default_loader
from .vision import VisionDataset

__all__ = ["CocoDetection", "CocoCaptions"]


def _ids(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple, set)) else [value]


class _COCOIndex:
    """The annotation file indexed by image, annotation and category id."""

    def __init__(self, annotation_file: str | pathlib.Path) -> None:
        path = os.fspath(annotation_file)
        try:
            with open(path, encoding="utf-8") as f:
                dataset = json.load(f)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from error
        if not isinstance(dataset, dict):
            raise ValueError(f"{path}: a COCO annotation file is a JSON object, got {type(dataset).__name__}")
        self.dataset = dataset
        self.imgs: dict[Any, dict] = {}
        self.anns: dict[Any, dict] = {}
        self.cats: dict[Any, dict] = {}
        self.imgToAnns: dict[Any, list[dict]] = defaultdict(list)
        self.catToImgs: dict[Any, list[Any]] = defaultdict(list)
        for key in ("images", "annotations", "categories"):
            if key in dataset and not (isinstance(dataset[key], list) and all(isinstance(x, dict) for x in dataset[key])):
                raise ValueError(f"{path}: '{key}' must be a list of objects")
        for img in dataset.get("images", []):
            if "id" not in img or not isinstance(img.get("file_name"), str):
                raise ValueError(f"{path}: every image needs an 'id' and a 'file_name' string")
            name = img["file_name"].replace("\\", "/")
            if name.startswith("/") or ".." in name.split("/") or (len(name) > 1 and name[1] == ":"):
                raise ValueError(f"{path}: image file name {img['file_name']!r} would leave the image root")
            self.imgs[img["id"]] = img
        for ann in dataset.get("annotations", []):
            if "image_id" not in ann:
                raise ValueError(f"{path}: every annotation needs an 'image_id'")
            self.imgToAnns[ann["image_id"]].append(ann)
            if "id" in ann:
                self.anns[ann["id"]] = ann
            if "category_id" in ann:
                self.catToImgs[ann["category_id"]].append(ann["image_id"])
        for cat in dataset.get("categories", []):
            if "id" not in cat:
                raise ValueError(f"{path}: every category needs an 'id'")
            self.cats[cat["id"]] = cat

    def getAnnIds(self, imgIds: Any = None, catIds: Any = None, iscrowd: bool | None = None) -> list[Any]:  # noqa: N802,N803
        img_ids, cat_ids = _ids(imgIds), set(_ids(catIds))
        anns: Iterable[dict] = ([a for i in img_ids for a in self.imgToAnns.get(i, [])] if img_ids
                                else self.dataset.get("annotations", []))
        if cat_ids:
            anns = [a for a in anns if a.get("category_id") in cat_ids]
        if iscrowd is not None:
            anns = [a for a in anns if bool(a.get("iscrowd", 0)) == iscrowd]
        return [a["id"] for a in anns if "id" in a]

    def getImgIds(self, imgIds: Any = None, catIds: Any = None) -> list[Any]:  # noqa: N802,N803
        ids = set(_ids(imgIds)) if _ids(imgIds) else set(self.imgs)
        for cat in _ids(catIds):
            ids &= set(self.catToImgs.get(cat, []))
        return sorted(ids)

    def getCatIds(self, catNms: Any = None, supNms: Any = None, catIds: Any = None) -> list[Any]:  # noqa: N802,N803
        cats = list(self.cats.values())
        if _ids(catNms):
            cats = [c for c in cats if c.get("name") in _ids(catNms)]
        if _ids(supNms):
            cats = [c for c in cats if c.get("supercategory") in _ids(supNms)]
        if _ids(catIds):
            cats = [c for c in cats if c["id"] in _ids(catIds)]
        return [c["id"] for c in cats]

    def loadImgs(self, ids: Any = None) -> list[dict]:  # noqa: N802
        return [self.imgs[i] for i in _ids(ids)]

    def loadAnns(self, ids: Any = None) -> list[dict]:  # noqa: N802
        return [self.anns[i] for i in _ids(ids)]

    def loadCats(self, ids: Any = None) -> list[dict]:  # noqa: N802
        return [self.cats[i] for i in _ids(ids)]


class CocoDetection(VisionDataset):
    """`MS Coco Detection <https://cocodataset.org/#detection-2016>`_: items are ``(image, [annotation
    dicts of that image, in file order])``; images in sorted id order."""

    def __init__(self, root: str | pathlib.Path, annFile: str, transform: Callable | None = None,  # noqa: N803
                 target_transform: Callable | None = None, transforms: Callable | None = None, *,
                 loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root, transforms, transform, target_transform)
        self.coco = _COCOIndex(annFile)
        self.ids = list(sorted(self.coco.imgs.keys()))
        self.loader = loader

    def _load_image(self, id: int) -> Any:
        path = self.coco.loadImgs(id)[0]["file_name"]
        return self.loader(os.path.join(self.root, path))

    def _load_target(self, id: int) -> list[Any]:
        return list(self.coco.imgToAnns.get(id, []))

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        if not isinstance(index, int):
            raise ValueError(f"Index must be of type integer, got {type(index)} instead.")
        id = self.ids[index]
        image = self._load_image(id)
        target = self._load_target(id)
        if self.transforms is not None:
            image, target = self.transforms(image, target)
        return image, target

    def __len__(self) -> int:
        return len(self.ids)


class CocoCaptions(CocoDetection):
    """`MS Coco Captions <https://cocodataset.org/#captions-2015>`_: items are ``(image, [captions])``."""

    def _load_target(self, id: int) -> list[str]:
        return [ann["caption"] for ann in super()._load_target(id)]
