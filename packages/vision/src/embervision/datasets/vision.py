"""`VisionDataset`, the base of every dataset here, and `StandardTransform`; plus the helpers that
turn decoded arrays into the uint8 ``[C, H, W]`` ember tensors the datasets return (the layout
`embervision.io.read_image` gives, where torchvision's datasets give PIL images)."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

import ember
from ember.utils.data import Dataset

__all__ = ["VisionDataset", "StandardTransform"]


class VisionDataset(Dataset):
    """Base class: holds `root` and the transforms. Pass either `transforms` (a callable on
    (input, target)) or `transform`/`target_transform`, not both."""

    _repr_indent = 4

    def __init__(self, root: str | pathlib.Path | None = None, transforms: Callable | None = None,
                 transform: Callable | None = None, target_transform: Callable | None = None) -> None:
        if isinstance(root, str):
            root = os.path.expanduser(root)
        self.root = root
        has_transforms = transforms is not None
        has_separate_transform = transform is not None or target_transform is not None
        if has_transforms and has_separate_transform:
            raise ValueError("Only transforms or transform/target_transform can be passed as argument")
        self.transform = transform
        self.target_transform = target_transform
        if has_separate_transform:
            transforms = StandardTransform(transform, target_transform)
        self.transforms = transforms

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def __repr__(self) -> str:
        head = "Dataset " + self.__class__.__name__
        body = [f"Number of datapoints: {self.__len__()}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if getattr(self, "transforms", None) is not None:
            body += [repr(self.transforms)]
        return "\n".join([head] + [" " * self._repr_indent + line for line in body])

    def _format_transform_repr(self, transform: Callable, head: str) -> list[str]:
        lines = repr(transform).splitlines()
        return [f"{head}{lines[0]}"] + ["{}{}".format(" " * len(head), line) for line in lines[1:]]

    def extra_repr(self) -> str:
        return ""


class StandardTransform:
    """Applies `transform` to the input and `target_transform` to the target."""

    def __init__(self, transform: Callable | None = None, target_transform: Callable | None = None) -> None:
        self.transform = transform
        self.target_transform = target_transform

    def __call__(self, input: Any, target: Any) -> tuple[Any, Any]:
        if self.transform is not None:
            input = self.transform(input)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return input, target

    def _format_transform_repr(self, transform: Callable, head: str) -> list[str]:
        lines = repr(transform).splitlines()
        return [f"{head}{lines[0]}"] + ["{}{}".format(" " * len(head), line) for line in lines[1:]]

    def __repr__(self) -> str:
        body = [self.__class__.__name__]
        if self.transform is not None:
            body += self._format_transform_repr(self.transform, "Transform: ")
        if self.target_transform is not None:
            body += self._format_transform_repr(self.target_transform, "Target transform: ")
        return "\n".join(body)


def _hw_to_tensor(array: np.ndarray) -> ember.Tensor:
    """[H, W] or [H, W, C] uint8 array -> uint8 [C, H, W] ember tensor (its own copy)."""
    if array.ndim == 2:
        array = array[None]
    else:
        array = array.transpose(2, 0, 1)
    return ember.from_numpy(np.ascontiguousarray(array, dtype=np.uint8))


def _chw_to_tensor(array: np.ndarray) -> ember.Tensor:
    return ember.from_numpy(np.ascontiguousarray(array, dtype=np.uint8))
