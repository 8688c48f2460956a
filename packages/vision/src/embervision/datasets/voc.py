"""Pascal VOC segmentation and detection (``VOCdevkit/VOC<year>/{JPEGImages, SegmentationClass,
Annotations, ImageSets}``). Annotation XML is parsed with the standard library after a pass that
refuses DOCTYPE and ENTITY declarations (the entity-expansion "billion laughs" and external-entity
attacks need one), so a hostile file is a ValueError, never a hang or a file read."""

from __future__ import annotations

import collections
import os
import pathlib
import xml.etree.ElementTree as ET
from collections.abc import Callable
from typing import Any
from xml.parsers import expat

from .folder import _read_image_unchanged, default_loader
from .utils import download_and_extract_archive, verify_str_arg
from .vision import VisionDataset

__all__ = ["VOCSegmentation", "VOCDetection"]

DATASET_YEAR_DICT = {
    "2012": {"url": "http://host.robots.ox.ac.uk/pascal/VOC/voc2012/VOCtrainval_11-May-2012.tar",
             "filename": "VOCtrainval_11-May-2012.tar", "md5": "6cd6e144f989b92b3379bac3b3de84fd",
             "base_dir": os.path.join("VOCdevkit", "VOC2012")},
    "2011": {"url": "http://host.robots.ox.ac.uk/pascal/VOC/voc2011/VOCtrainval_25-May-2011.tar",
             "filename": "VOCtrainval_25-May-2011.tar", "md5": "6c3384ef61512963050cb5d687e5bf1e",
             "base_dir": os.path.join("TrainVal", "VOCdevkit", "VOC2011")},
    "2010": {"url": "http://host.robots.ox.ac.uk/pascal/VOC/voc2010/VOCtrainval_03-May-2010.tar",
             "filename": "VOCtrainval_03-May-2010.tar", "md5": "da459979d0c395079b5c75ee67908abb",
             "base_dir": os.path.join("VOCdevkit", "VOC2010")},
    "2009": {"url": "http://host.robots.ox.ac.uk/pascal/VOC/voc2009/VOCtrainval_11-May-2009.tar",
             "filename": "VOCtrainval_11-May-2009.tar", "md5": "a3e00b113cfcfebf17e343f59da3caa1",
             "base_dir": os.path.join("VOCdevkit", "VOC2009")},
    "2008": {"url": "http://host.robots.ox.ac.uk/pascal/VOC/voc2008/VOCtrainval_14-Jul-2008.tar",
             "filename": "VOCtrainval_11-May-2012.tar", "md5": "2629fa636546599198acfcfbfcf1904a",
             "base_dir": os.path.join("VOCdevkit", "VOC2008")},
    "2007": {"url": "http://host.robots.ox.ac.uk/pascal/VOC/voc2007/VOCtrainval_06-Nov-2007.tar",
             "filename": "VOCtrainval_06-Nov-2007.tar", "md5": "c52e279531787c972589f7e41ab4ae64",
             "base_dir": os.path.join("VOCdevkit", "VOC2007")},
    "2007-test": {"url": "http://host.robots.ox.ac.uk/pascal/VOC/voc2007/VOCtest_06-Nov-2007.tar",
                  "filename": "VOCtest_06-Nov-2007.tar", "md5": "b6e924de25625d8de591ea690078ad9f",
                  "base_dir": os.path.join("VOCdevkit", "VOC2007")},
}


def _refuse_declarations(data: bytes, where: str) -> None:
    """Scan the XML with expat, raising ValueError at any DOCTYPE or ENTITY declaration (expat would
    otherwise expand internal entities, exponentially for nested ones)."""
    def refuse(*_: Any) -> None:
        raise ValueError(f"{where}: XML with DOCTYPE or ENTITY declarations is not allowed")

    parser = expat.ParserCreate()
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse
    try:
        parser.Parse(data, True)
    except expat.ExpatError as error:
        raise ValueError(f"{where}: malformed XML ({error})") from error


def _parse_xml(path: str) -> ET.Element:
    with open(path, "rb") as f:
        data = f.read()
    _refuse_declarations(data, path)
    return ET.fromstring(data)


class _VOCBase(VisionDataset):
    _SPLITS_DIR: str
    _TARGET_DIR: str
    _TARGET_FILE_EXT: str

    def __init__(self, root: str | pathlib.Path, year: str = "2012", image_set: str = "train", download: bool = False,
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 transforms: Callable | None = None, *, loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root, transforms, transform, target_transform)
        self.year = verify_str_arg(year, "year", valid_values=[str(yr) for yr in range(2007, 2013)])
        valid_image_sets = ["train", "trainval", "val"]
        if year == "2007":
            valid_image_sets.append("test")
        self.image_set = verify_str_arg(image_set, "image_set", valid_image_sets)
        key = "2007-test" if year == "2007" and image_set == "test" else year
        entry = DATASET_YEAR_DICT[key]
        self.url, self.filename, self.md5 = entry["url"], entry["filename"], entry["md5"]
        self.loader = loader
        voc_root = os.path.join(self.root, entry["base_dir"])
        if download:
            download_and_extract_archive(self.url, self.root, filename=self.filename, md5=self.md5)
        if not os.path.isdir(voc_root):
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        split_f = os.path.join(voc_root, "ImageSets", self._SPLITS_DIR, image_set.rstrip("\n") + ".txt")
        if not os.path.isfile(split_f):
            raise RuntimeError("Dataset not found or corrupted. You can use download=True to download it")
        with open(split_f) as f:
            file_names = [x.strip() for x in f.readlines() if x.strip()]
        for name in file_names:  # ids are file stems; a path in one would leave the dataset
            if "/" in name or "\\" in name or name in (".", ".."):
                raise RuntimeError(f"{split_f}: image id {name!r} is not a file name")
        image_dir = os.path.join(voc_root, "JPEGImages")
        self.images = [os.path.join(image_dir, x + ".jpg") for x in file_names]
        target_dir = os.path.join(voc_root, self._TARGET_DIR)
        self.targets = [os.path.join(target_dir, x + self._TARGET_FILE_EXT) for x in file_names]

    def __len__(self) -> int:
        return len(self.images)


class VOCSegmentation(_VOCBase):
    """`Pascal VOC <http://host.robots.ox.ac.uk/pascal/VOC/>`_ segmentation: items are ``(image, mask)``,
    the mask decoded by `target_loader` (default: the file's own channels, class indices for VOC's
    palette PNGs)."""

    _SPLITS_DIR = "Segmentation"
    _TARGET_DIR = "SegmentationClass"
    _TARGET_FILE_EXT = ".png"

    def __init__(self, root: str | pathlib.Path, year: str = "2012", image_set: str = "train", download: bool = False,
                 transform: Callable | None = None, target_transform: Callable | None = None,
                 transforms: Callable | None = None, *, loader: Callable[[str], Any] = default_loader,
                 target_loader: Callable[[str], Any] = _read_image_unchanged) -> None:
        super().__init__(root, year, image_set, download, transform, target_transform, transforms, loader=loader)
        self.target_loader = target_loader

    @property
    def masks(self) -> list[str]:
        return self.targets

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img = self.loader(self.images[index])
        target = self.target_loader(self.masks[index])
        if self.transforms is not None:
            img, target = self.transforms(img, target)
        return img, target


class VOCDetection(_VOCBase):
    """`Pascal VOC <http://host.robots.ox.ac.uk/pascal/VOC/>`_ detection: items are ``(image, target)``
    with target the annotation XML as nested dicts (``{"annotation": {"object": [...], ...}}``, the
    objects always a list)."""

    _SPLITS_DIR = "Main"
    _TARGET_DIR = "Annotations"
    _TARGET_FILE_EXT = ".xml"

    @property
    def annotations(self) -> list[str]:
        return self.targets

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        img = self.loader(self.images[index])
        target = self.parse_voc_xml(_parse_xml(self.annotations[index]))
        if self.transforms is not None:
            img, target = self.transforms(img, target)
        return img, target

    @staticmethod
    def parse_voc_xml(node: ET.Element) -> dict[str, Any]:
        """An element as ``{tag: text}`` for a leaf, ``{tag: {child_tag: value or [values]}}`` otherwise;
        the annotation's "object" entry is always a list."""
        voc_dict: dict[str, Any] = {}
        children = list(node)
        if children:
            grouped: dict[str, list[Any]] = collections.defaultdict(list)
            for child in map(VOCDetection.parse_voc_xml, children):
                for key, value in child.items():
                    grouped[key].append(value)
            if node.tag == "annotation":
                # "object" is always a list, of one or none too (torchvision >= 0.15)
                grouped["object"] = [grouped["object"]]
            voc_dict = {node.tag: {key: v[0] if len(v) == 1 else v for key, v in grouped.items()}}
        if node.text:
            text = node.text.strip()
            if not children:
                voc_dict[node.tag] = text
        return voc_dict
