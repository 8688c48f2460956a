"""Optical-flow datasets: FlyingChairs, FlyingThings3D, Sintel, KittiFlow, HD1K. Items are
``(img1, img2, flow)`` or, where the dataset has a validity mask (KITTI, HD1K),
``(img1, img2, flow, valid_flow_mask)``; images are uint8 ``[3, H, W]`` tensors from `loader`, the
flow a float32 ``[2, H, W]`` NumPy array and the mask a bool ``[H, W]`` array, as torchvision
returns them. Flow files are read by strict parsers: Middlebury .flo, PFM, and KITTI's 16-bit PNGs
(decoded by `embervision.io.decode_png`)."""

from __future__ import annotations

import itertools
import os
import pathlib
from collections.abc import Callable
from glob import glob
from typing import Any

import numpy as np

from ember.utils.data import ConcatDataset

from .folder import default_loader
from .utils import _read_pfm, verify_str_arg
from .vision import VisionDataset

__all__ = ("KittiFlow", "Sintel", "FlyingThings3D", "FlyingChairs", "HD1K")

# a .flo header may not claim more than this many pixels (guards the allocation before the size check)
_MAX_FLO_PIXELS = 1 << 28


class FlowDataset(VisionDataset):
    # datasets with a validity mask in their flow files return it as a 4th element
    _has_builtin_flow_mask = False

    def __init__(self, root: str | pathlib.Path, transforms: Callable | None = None,
                 loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root=root)
        self.transforms = transforms
        self.loader = loader
        self._flow_list: list[str] = []
        self._image_list: list[list[str]] = []

    def _read_img(self, file_name: str) -> Any:
        return self.loader(file_name)

    def _read_flow(self, file_name: str) -> Any:
        raise NotImplementedError

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        img1 = self._read_img(self._image_list[index][0])
        img2 = self._read_img(self._image_list[index][1])
        if self._flow_list:  # empty for the splits without ground truth
            flow = self._read_flow(self._flow_list[index])
            if self._has_builtin_flow_mask:
                flow, valid_flow_mask = flow
            else:
                valid_flow_mask = None
        else:
            flow = valid_flow_mask = None
        if self.transforms is not None:
            img1, img2, flow, valid_flow_mask = self.transforms(img1, img2, flow, valid_flow_mask)
        if self._has_builtin_flow_mask or valid_flow_mask is not None:
            # a transform may make the mask for datasets without one
            return img1, img2, flow, valid_flow_mask
        return img1, img2, flow

    def __len__(self) -> int:
        return len(self._image_list)

    def __rmul__(self, v: int) -> ConcatDataset:
        return ConcatDataset([self] * v)


class Sintel(FlowDataset):
    """`Sintel <http://sintel.is.tue.mpg.de/>`_: ``Sintel/{training,test}/{clean,final}/<scene>/*.png`` (MPI-Sintel-complete's layout)
    and ``Sintel/training/flow/<scene>/*.flo``; pass_name "clean", "final" or "both"."""

    def __init__(self, root: str | pathlib.Path, split: str = "train", pass_name: str = "clean",
                 transforms: Callable | None = None, loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        verify_str_arg(pass_name, "pass_name", valid_values=("clean", "final", "both"))
        passes = ["clean", "final"] if pass_name == "both" else [pass_name]
        base = pathlib.Path(root) / "Sintel"
        flow_root = base / "training" / "flow"
        for name in passes:
            image_root = base / ("training" if split == "train" else "test") / name
            if not image_root.is_dir():
                raise FileNotFoundError(f"Could not find the Sintel images in {image_root}. "
                                        "Please make sure the directory structure is correct.")
            for scene in sorted(os.listdir(image_root)):
                images = sorted(glob(str(image_root / scene / "*.png")))
                self._image_list += [[images[i], images[i + 1]] for i in range(len(images) - 1)]
                if split == "train":
                    flows = sorted(glob(str(flow_root / scene / "*.flo")))
                    if len(flows) != max(len(images) - 1, 0):
                        raise RuntimeError(f"Sintel scene {scene}: {len(images)} frames need {len(images) - 1} "
                                           f"flow files, found {len(flows)}")
                    self._flow_list += flows

    def _read_flow(self, file_name: str) -> np.ndarray:
        return _read_flo(file_name)


class KittiFlow(FlowDataset):
    """`KITTI 2015 flow <http://www.cvlibs.net/datasets/kitti/eval_scene_flow.php?benchmark=flow>`_:
    ``KittiFlow/{training,testing}/image_2/*_1{0,1}.png`` and ``training/flow_occ/*_10.png``."""

    _has_builtin_flow_mask = True

    def __init__(self, root: str | pathlib.Path, split: str = "train", transforms: Callable | None = None,
                 loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        base = pathlib.Path(root) / "KittiFlow" / (split + "ing")
        images1 = sorted(glob(str(base / "image_2" / "*_10.png")))
        images2 = sorted(glob(str(base / "image_2" / "*_11.png")))
        if not images1 or not images2:
            raise FileNotFoundError("Could not find the Kitti flow images. Please make sure the directory "
                                    "structure is correct.")
        if len(images1) != len(images2):
            raise RuntimeError(f"KittiFlow: {len(images1)} first frames but {len(images2)} second frames")
        self._image_list = [[a, b] for a, b in zip(images1, images2, strict=True)]
        if split == "train":
            self._flow_list = sorted(glob(str(base / "flow_occ" / "*_10.png")))
            if len(self._flow_list) != len(self._image_list):
                raise RuntimeError(f"KittiFlow: {len(self._image_list)} image pairs but {len(self._flow_list)} flows")

    def _read_flow(self, file_name: str) -> tuple[np.ndarray, np.ndarray]:
        return _read_16bits_png_with_flow_and_valid_mask(file_name)


class FlyingChairs(FlowDataset):
    """`FlyingChairs <https://lmb.informatik.uni-freiburg.de/resources/datasets/FlyingChairs.en.html#flyingchairs>`_:
    ``FlyingChairs/data/{NNNNN_img1.ppm, NNNNN_img2.ppm, NNNNN_flow.flo}`` and
    ``FlyingChairs/FlyingChairs_train_val.txt`` (1: train, 2: val per pair)."""

    def __init__(self, root: str | pathlib.Path, split: str = "train", transforms: Callable | None = None,
                 loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "val"))
        base = pathlib.Path(root) / "FlyingChairs"
        images = sorted(glob(str(base / "data" / "*.ppm")))
        flows = sorted(glob(str(base / "data" / "*.flo")))
        split_file_name = "FlyingChairs_train_val.txt"
        if not os.path.exists(base / split_file_name):
            raise FileNotFoundError("The FlyingChairs_train_val.txt file was not found - please download it from the "
                                    "dataset page (see docstring).")
        if len(images) != 2 * len(flows):
            raise RuntimeError(f"FlyingChairs: {len(flows)} flows need {2 * len(flows)} images, found {len(images)}")
        with open(base / split_file_name) as f:
            tokens = f.read().split()
        if not all(t in ("1", "2") for t in tokens) or len(tokens) < len(flows):
            raise RuntimeError(f"{base / split_file_name}: expected a 1 or 2 for each of the {len(flows)} pairs")
        for i, flow in enumerate(flows):
            if (split == "train" and tokens[i] == "1") or (split == "val" and tokens[i] == "2"):
                self._flow_list.append(flow)
                self._image_list.append([images[2 * i], images[2 * i + 1]])

    def _read_flow(self, file_name: str) -> np.ndarray:
        return _read_flo(file_name)


class FlyingThings3D(FlowDataset):
    """`FlyingThings3D <https://lmb.informatik.uni-freiburg.de/resources/datasets/SceneFlowDatasets.en.html>`_:
    ``FlyingThings3D/{frames_cleanpass,frames_finalpass}/{TRAIN,TEST}/<set>/<seq>/{left,right}/*.png``
    and ``optical_flow/{TRAIN,TEST}/<set>/<seq>/{into_future,into_past}/{left,right}/*.pfm``."""

    def __init__(self, root: str | pathlib.Path, split: str = "train", pass_name: str = "clean",
                 camera: str = "left", transforms: Callable | None = None,
                 loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        split = split.upper()
        verify_str_arg(pass_name, "pass_name", valid_values=("clean", "final", "both"))
        passes = {"clean": ["frames_cleanpass"], "final": ["frames_finalpass"],
                  "both": ["frames_cleanpass", "frames_finalpass"]}[pass_name]
        verify_str_arg(camera, "camera", valid_values=("left", "right", "both"))
        cameras = ["left", "right"] if camera == "both" else [camera]
        base = pathlib.Path(root) / "FlyingThings3D"
        for pass_dir, cam, direction in itertools.product(passes, cameras, ("into_future", "into_past")):
            image_dirs = sorted(pathlib.Path(d) / cam for d in glob(str(base / pass_dir / split / "*/*")))
            flow_dirs = sorted(pathlib.Path(d) / direction / cam for d in glob(str(base / "optical_flow" / split / "*/*")))
            if not image_dirs or not flow_dirs:
                raise FileNotFoundError("Could not find the FlyingThings3D flow images. "
                                        "Please make sure the directory structure is correct.")
            if len(image_dirs) != len(flow_dirs):
                raise RuntimeError(f"FlyingThings3D: {len(image_dirs)} image sequences but {len(flow_dirs)} flow sequences")
            for image_dir, flow_dir in zip(image_dirs, flow_dirs, strict=True):
                images = sorted(glob(str(image_dir / "*.png")))
                flows = sorted(glob(str(flow_dir / "*.pfm")))
                if len(images) < len(flows):
                    raise RuntimeError(f"FlyingThings3D: {flow_dir} has {len(flows)} flows for {len(images)} images")
                for i in range(len(flows) - 1):
                    if direction == "into_future":
                        self._image_list.append([images[i], images[i + 1]])
                        self._flow_list.append(flows[i])
                    else:
                        self._image_list.append([images[i + 1], images[i]])
                        self._flow_list.append(flows[i + 1])

    def _read_flow(self, file_name: str) -> np.ndarray:
        return _read_pfm(file_name)


class HD1K(FlowDataset):
    """`HD1K <http://hci-benchmark.iwr.uni-heidelberg.de/>`__: ``hd1k/hd1k_input/image_2/<seq>_<frame>.png``,
    ``hd1k/hd1k_flow_gt/flow_occ/<seq>_<frame>.png`` and ``hd1k/hd1k_challenge/image_2``."""

    _has_builtin_flow_mask = True

    def __init__(self, root: str | pathlib.Path, split: str = "train", transforms: Callable | None = None,
                 loader: Callable[[str], Any] = default_loader) -> None:
        super().__init__(root=root, transforms=transforms, loader=loader)
        verify_str_arg(split, "split", valid_values=("train", "test"))
        base = pathlib.Path(root) / "hd1k"
        if split == "train":
            # 36 sequences; a pair never spans two of them
            for seq_idx in range(36):
                flows = sorted(glob(str(base / "hd1k_flow_gt" / "flow_occ" / f"{seq_idx:06d}_*.png")))
                images = sorted(glob(str(base / "hd1k_input" / "image_2" / f"{seq_idx:06d}_*.png")))
                if len(images) < len(flows):
                    raise RuntimeError(f"HD1K sequence {seq_idx}: {len(flows)} flows for {len(images)} images")
                for i in range(len(flows) - 1):
                    self._flow_list.append(flows[i])
                    self._image_list.append([images[i], images[i + 1]])
        else:
            images1 = sorted(glob(str(base / "hd1k_challenge" / "image_2" / "*10.png")))
            images2 = sorted(glob(str(base / "hd1k_challenge" / "image_2" / "*11.png")))
            if len(images1) != len(images2):
                raise RuntimeError(f"HD1K: {len(images1)} first frames but {len(images2)} second frames")
            self._image_list = [[a, b] for a, b in zip(images1, images2, strict=True)]
        if not self._image_list:
            raise FileNotFoundError("Could not find the HD1K images. Please make sure the directory structure is correct.")

    def _read_flow(self, file_name: str) -> tuple[np.ndarray, np.ndarray]:
        return _read_16bits_png_with_flow_and_valid_mask(file_name)


def _read_flo(file_name: str) -> np.ndarray:
    """A Middlebury .flo file (little-endian: "PIEH", int32 width, int32 height, float32 u,v pairs row by
    row) as a float32 [2, H, W] array. The size must match the header exactly (ValueError)."""
    with open(file_name, "rb") as f:
        data = f.read()
    if data[:4] != b"PIEH":
        raise ValueError("Magic number incorrect. Invalid .flo file")
    if len(data) < 12:
        raise ValueError(f"{file_name}: .flo header truncated")
    w, h = (int(v) for v in np.frombuffer(data, "<i4", 2, 4))
    if w <= 0 or h <= 0 or w * h > _MAX_FLO_PIXELS:
        raise ValueError(f"{file_name}: .flo size {w}x{h} is not valid")
    need = 12 + 8 * w * h
    if len(data) != need:
        raise ValueError(f"{file_name}: .flo of {w}x{h} needs {need} bytes, the file has {len(data)}")
    return np.frombuffer(data, "<f4", 2 * w * h, 12).reshape(h, w, 2).transpose(2, 0, 1).astype(np.float32)


def _flow_and_mask_from_uint16(flow_and_valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """KITTI's encoding: [3, H, W] uint16 channels u, v, valid; flow = (value - 2**15) / 64."""
    if flow_and_valid.ndim != 3 or flow_and_valid.shape[0] != 3:
        raise ValueError(f"a KITTI flow PNG has 3 channels, got shape {tuple(flow_and_valid.shape)}")
    values = flow_and_valid.astype(np.float32)
    flow = (values[:2] - 2**15) / 64
    return flow, values[2] != 0


def _read_16bits_png_with_flow_and_valid_mask(file_name: str) -> tuple[np.ndarray, np.ndarray]:
    from embervision.io import ImageReadMode, decode_png, read_file
    decoded = decode_png(read_file(file_name), ImageReadMode.UNCHANGED)
    return _flow_and_mask_from_uint16(decoded.numpy())
