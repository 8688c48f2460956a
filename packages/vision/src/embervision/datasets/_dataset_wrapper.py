"""`wrap_dataset_for_transforms_v2`: a dataset's samples with their targets as tv_tensors, so the v2
transforms move boxes and masks with the image (torchvision.datasets' function of that name).

Classification datasets pass through; VOCSegmentation's mask becomes a `Mask`; VOCDetection,
CocoDetection and Kitti targets become dicts with ``"boxes"`` (`BoundingBoxes`, XYXY) and
``"labels"`` (int64 tensor), selectable with `target_keys`; CelebA's bbox becomes `BoundingBoxes`;
OxfordIIITPet's segmentation a `Mask`. COCO ``"masks"`` need polygon/RLE decoding (pycocotools in
torchvision), which is not available: asking for them is a RuntimeError."""

from __future__ import annotations

import collections.abc
import contextlib
from collections import defaultdict
from collections.abc import Callable
from copy import copy
from typing import Any

import ember

from .celeba import CelebA
from .cifar import CIFAR10, CIFAR100
from .coco import CocoCaptions, CocoDetection
from .folder import DatasetFolder, ImageFolder
from .kitti import Kitti
from .mnist import MNIST, FashionMNIST
from .oxford_iiit_pet import OxfordIIITPet
from .vision import VisionDataset
from .voc import VOCDetection, VOCSegmentation

__all__ = ["wrap_dataset_for_transforms_v2"]

_Wrapper = Callable[[int, Any], Any]
_FACTORIES: dict[type, Callable[[Any, Any], _Wrapper]] = {}
_TARGET_KEY_DATASETS = (CocoDetection, VOCDetection, Kitti)
# the wrapper's own attributes, never looked up on the wrapped dataset
_OWN = frozenset({"_dataset", "_target_keys", "_wrapper", "transform", "target_transform", "transforms"})


def wrap_dataset_for_transforms_v2(dataset: VisionDataset, target_keys: Any = None) -> VisionDataset:
    """Wrap `dataset` so its samples carry tv_tensors (see the module docstring). The result is an
    instance of a ``Wrapped<Class>`` subclass of the dataset's class; the dataset's transforms are
    applied after the wrapping. `target_keys`: None (the dataset's default), "all", or a collection
    of key names (CocoDetection, VOCDetection and Kitti only)."""
    if not (target_keys is None or target_keys == "all" or (
            isinstance(target_keys, collections.abc.Collection) and all(isinstance(k, str) for k in target_keys))):
        raise ValueError("`target_keys` can be None, 'all', or a collection of strings denoting the keys to be "
                         f"returned, but got {target_keys}")
    # subclassing the dataset's class keeps isinstance(wrapped, CocoDetection) true
    cls = type(f"Wrapped{type(dataset).__name__}", (_TVTensorWrapper, type(dataset)), {})
    return cls(dataset, target_keys)


class _TVTensorWrapper:
    def __init__(self, dataset: Any, target_keys: Any) -> None:
        if not isinstance(dataset, VisionDataset):
            raise TypeError("This wrapper is meant for subclasses of `embervision.datasets.VisionDataset`, "
                            f"but got a '{type(dataset).__name__}' instead.")
        for cls in type(dataset).mro():
            if cls in _FACTORIES:
                if target_keys is not None and cls not in _TARGET_KEY_DATASETS:
                    raise ValueError("`target_keys` is currently only supported for `CocoDetection`, `VOCDetection` "
                                     f"and `Kitti`, but got {cls.__name__}.")
                factory = _FACTORIES[cls]
                break
            if cls is VisionDataset:
                raise TypeError(f"No wrapper exists for dataset class {type(dataset).__name__}. "
                                "Please wrap the output yourself.")
        self._dataset = dataset
        self._target_keys = target_keys
        self._wrapper = factory(dataset, target_keys)
        # the dataset must return raw samples: its transforms run here, after the wrapping
        self.transform, dataset.transform = dataset.transform, None
        self.target_transform, dataset.target_transform = dataset.target_transform, None
        self.transforms, dataset.transforms = dataset.transforms, None

    def __getattribute__(self, item: str) -> Any:
        # the dataset's own attributes win over its class's (EMNIST's instance `classes` over MNIST's)
        if item not in _OWN and not item.startswith("__"):
            with contextlib.suppress(AttributeError):
                own = vars(object.__getattribute__(self, "_dataset"))
                if item in own:
                    return own[item]
        return object.__getattribute__(self, item)

    def __getattr__(self, item: str) -> Any:
        return getattr(object.__getattribute__(self, "_dataset"), item)

    def __getitem__(self, idx: int) -> Any:
        sample = self._wrapper(idx, self._dataset[idx])
        if self.transforms is not None:
            sample = self.transforms(*sample)
        return sample

    def __len__(self) -> int:
        return len(self._dataset)

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled (DataLoader workers) as the dataset with its transforms back, wrapped again on load
        dataset = copy(self._dataset)
        dataset.transform, dataset.target_transform = self.transform, self.target_transform
        dataset.transforms = self.transforms
        return wrap_dataset_for_transforms_v2, (dataset, self._target_keys)


def _register(*classes: type) -> Callable:
    def decorator(factory: Callable) -> Callable:
        for cls in classes:
            _FACTORIES[cls] = factory
        return factory
    return decorator


def _not_supported(description: str) -> RuntimeError:
    return RuntimeError(f"{description} is currently not supported by this wrapper.")


def _parse_target_keys(target_keys: Any, *, available: set[str], default: set[str]) -> set[str]:
    if target_keys is None:
        target_keys = default
    if target_keys == "all":
        return set(available)
    target_keys = set(target_keys)
    extra = target_keys - available
    if extra:
        raise ValueError(f"Target keys {sorted(extra)} are not available")
    return target_keys


def _dict_of_lists(list_of_dicts: list[dict]) -> dict[str, list]:
    out: dict[str, list] = defaultdict(list)
    for item in list_of_dicts:
        for key, value in item.items():
            out[key].append(value)
    return dict(out)


def _canvas_size(image: Any) -> tuple[int, int]:
    from embervision.transforms.v2 import functional as F
    height, width = F.get_size(image)
    return int(height), int(width)


def _boxes(rows: list, fmt: str, canvas_size: tuple[int, int]) -> Any:
    from embervision import tv_tensors
    from embervision.transforms.v2 import functional as F
    data = ember.tensor(rows) if rows else ember.zeros(0, 4)
    boxes = tv_tensors.BoundingBoxes(data, format=fmt, canvas_size=canvas_size)
    if fmt != "XYXY":
        boxes = F.convert_bounding_box_format(boxes, new_format=tv_tensors.BoundingBoxFormat.XYXY)
    return boxes


def _mask(mask: Any) -> Any:
    from embervision import tv_tensors
    return tv_tensors.Mask(mask)


def _wrap_by_type(target: Any, target_types: list[str], wrappers: dict[str, Callable]) -> Any:
    items = list(target) if isinstance(target, (tuple, list)) else [target]
    wrapped = tuple(wrappers.get(t, lambda x: x)(item) for t, item in zip(target_types, items, strict=True))
    return wrapped[0] if len(wrapped) == 1 else wrapped


@_register(CIFAR10, CIFAR100, MNIST, FashionMNIST, DatasetFolder, ImageFolder, CocoCaptions)
def _identity_factory(dataset: Any, target_keys: Any) -> _Wrapper:
    return lambda idx, sample: sample


@_register(VOCSegmentation)
def _segmentation_factory(dataset: Any, target_keys: Any) -> _Wrapper:
    def wrapper(idx: int, sample: Any) -> Any:
        image, mask = sample
        return image, _mask(mask)
    return wrapper


@_register(CocoDetection)
def _coco_factory(dataset: Any, target_keys: Any) -> _Wrapper:
    target_keys = _parse_target_keys(
        target_keys,
        available={"segmentation", "area", "iscrowd", "image_id", "bbox", "category_id", "boxes", "masks", "labels"},
        default={"image_id", "boxes", "labels"})
    if "masks" in target_keys:
        raise _not_supported("CocoDetection with target key 'masks' (decoding COCO polygons and RLE)")

    def wrapper(idx: int, sample: Any) -> Any:
        image_id = dataset.ids[idx]
        image, target = sample
        if not target:
            return image, {"image_id": image_id}
        batched = _dict_of_lists(target)

        def field(key: str) -> list:
            values = batched.get(key, [])
            if len(values) != len(target):
                raise ValueError(f"CocoDetection image {image_id}: {len(target) - len(values)} of its annotations "
                                 f"have no '{key}'")
            return values

        out: dict[str, Any] = {}
        if "image_id" in target_keys:
            out["image_id"] = image_id
        if "boxes" in target_keys:
            out["boxes"] = _boxes(field("bbox"), "XYWH", _canvas_size(image))
        if "labels" in target_keys:
            out["labels"] = ember.tensor(field("category_id"), dtype=ember.int64)
        for key in target_keys - {"image_id", "boxes", "labels"}:
            out[key] = field(key)
        return image, out
    return wrapper


VOC_DETECTION_CATEGORIES = [
    "__background__", "aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow",
    "diningtable", "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor",
]
VOC_DETECTION_CATEGORY_TO_IDX = {name: i for i, name in enumerate(VOC_DETECTION_CATEGORIES)}


@_register(VOCDetection)
def _voc_detection_factory(dataset: Any, target_keys: Any) -> _Wrapper:
    target_keys = _parse_target_keys(target_keys, available={"annotation", "boxes", "labels"},
                                     default={"boxes", "labels"})

    def wrapper(idx: int, sample: Any) -> Any:
        image, target = sample
        objects = target["annotation"].get("object", [])
        batched = _dict_of_lists(objects if isinstance(objects, list) else [objects])
        out = target if "annotation" in target_keys else {}
        if "boxes" in target_keys:
            try:
                rows = [[int(b[part]) for part in ("xmin", "ymin", "xmax", "ymax")] for b in batched.get("bndbox", [])]
            except (KeyError, TypeError, ValueError) as error:
                raise ValueError(f"{dataset.annotations[idx]}: an object's bndbox needs integer xmin, ymin, xmax "
                                 f"and ymax ({error!r})") from error
            out["boxes"] = _boxes(rows, "XYXY", _canvas_size(image))
        if "labels" in target_keys:
            out["labels"] = ember.tensor([VOC_DETECTION_CATEGORY_TO_IDX[c] for c in batched.get("name", [])],
                                         dtype=ember.int64)
        return image, out
    return wrapper


@_register(CelebA)
def _celeba_factory(dataset: Any, target_keys: Any) -> _Wrapper:
    if any(t in dataset.target_type for t in ("attr", "landmarks")):
        raise _not_supported("`CelebA` dataset with `target_type=['attr', 'landmarks', ...]`")

    def wrapper(idx: int, sample: Any) -> Any:
        image, target = sample
        target = _wrap_by_type(target, dataset.target_type, {
            "bbox": lambda item: _boxes([item.tolist()], "XYWH", _canvas_size(image))})
        return image, target
    return wrapper


KITTI_CATEGORIES = ["Car", "Van", "Truck", "Pedestrian", "Person_sitting", "Cyclist", "Tram", "Misc", "DontCare"]
KITTI_CATEGORY_TO_IDX = {name: i for i, name in enumerate(KITTI_CATEGORIES)}


@_register(Kitti)
def _kitti_factory(dataset: Any, target_keys: Any) -> _Wrapper:
    target_keys = _parse_target_keys(
        target_keys,
        available={"type", "truncated", "occluded", "alpha", "bbox", "dimensions", "location", "rotation_y",
                   "boxes", "labels"},
        default={"boxes", "labels"})

    def wrapper(idx: int, sample: Any) -> Any:
        image, target = sample
        if target is None:
            return image, target
        batched = _dict_of_lists(target)
        out: dict[str, Any] = {}
        if "boxes" in target_keys:
            out["boxes"] = _boxes(batched.get("bbox", []), "XYXY", _canvas_size(image))
        if "labels" in target_keys:
            out["labels"] = ember.tensor([KITTI_CATEGORY_TO_IDX[c] for c in batched.get("type", [])], dtype=ember.int64)
        for key in target_keys - {"boxes", "labels"}:
            out[key] = batched.get(key, [])
        return image, out
    return wrapper


@_register(OxfordIIITPet)
def _pet_factory(dataset: Any, target_keys: Any) -> _Wrapper:
    def wrapper(idx: int, sample: Any) -> Any:
        image, target = sample
        if target is not None:
            target = _wrap_by_type(target, dataset._target_types, {"segmentation": _mask})
        return image, target
    return wrapper
