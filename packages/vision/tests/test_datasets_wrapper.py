"""wrap_dataset_for_transforms_v2: targets as tv_tensors that the v2 transforms move with the image."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import pickle

import numpy as np
import pytest

from embervision import tv_tensors
from embervision.datasets import (
    EMNIST,
    SVHN,
    CocoCaptions,
    CocoDetection,
    Kitti,
    OxfordIIITPet,
    VOCDetection,
    VOCSegmentation,
    wrap_dataset_for_transforms_v2,
)
from embervision.transforms import v2

_HERE = pathlib.Path(__file__).parent


def _helpers(name):
    spec = importlib.util.spec_from_file_location(name, _HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


detection = _helpers("test_datasets_detection")
mnist = _helpers("test_datasets_mnist")
celeba = _helpers("test_datasets_stl10_celeba")


def test_classification_passes_through_and_keeps_instance_attributes(tmp_path):
    raw = tmp_path / "EMNIST" / "raw"
    mnist.write(raw / "emnist-letters-train-images-idx3-ubyte", mnist.images(2))
    mnist.write(raw / "emnist-letters-train-labels-idx1-ubyte", np.array([1, 26], np.uint8))
    ds = EMNIST(tmp_path, split="letters", target_transform=lambda y: y * 2)
    wrapped = wrap_dataset_for_transforms_v2(ds)
    assert isinstance(wrapped, EMNIST) and type(wrapped).__name__ == "WrappedEMNIST"
    assert len(wrapped) == 2 and wrapped[1][1] == 52  # the dataset's transforms run after the wrapping
    assert wrapped.classes[26] == "z" and wrapped.split == "letters"
    again = pickle.loads(pickle.dumps(wrap_dataset_for_transforms_v2(EMNIST(tmp_path, split="letters"))))
    assert type(again).__name__ == "WrappedEMNIST" and again[1][1] == 26
    with pytest.raises(ValueError, match="`target_keys` is currently only supported for `CocoDetection`"):
        wrap_dataset_for_transforms_v2(EMNIST(tmp_path, split="letters"), target_keys={"boxes"})


def test_wrapper_argument_errors(tmp_path, files):
    with pytest.raises(TypeError, match="meant for subclasses of `embervision.datasets.VisionDataset`, but got a 'list'"):
        wrap_dataset_for_transforms_v2([1, 2])
    with pytest.raises(ValueError, match="`target_keys` can be None, 'all', or a collection of strings"):
        wrap_dataset_for_transforms_v2([1, 2], target_keys=3)
    svhn = SVHN.__new__(SVHN)  # no wrapper exists for it (as in torchvision)
    with pytest.raises(TypeError, match="No wrapper exists for dataset class SVHN"):
        wrap_dataset_for_transforms_v2(svhn)


def test_voc_detection_boxes_labels_and_flip(tmp_path, files):
    detection.make_voc(tmp_path, files)
    ds = wrap_dataset_for_transforms_v2(VOCDetection(tmp_path, loader=files.pnm_loader))
    image, target = ds[1]
    assert set(target) == {"boxes", "labels"}
    assert isinstance(target["boxes"], tv_tensors.BoundingBoxes) and tuple(target["boxes"].canvas_size) == (2, 3)
    assert target["boxes"].tolist() == [[1, 1, 2, 2], [0, 0, 1, 2]]
    assert target["labels"].tolist() == [12, 8]  # dog, cat in VOC's category order
    flipped = wrap_dataset_for_transforms_v2(
        VOCDetection(tmp_path, loader=files.pnm_loader, transforms=v2.RandomHorizontalFlip(p=1.0)))
    image0, target0 = flipped[0]
    assert target0["boxes"].tolist() == [[1, 1, 2, 2]]  # x: 3 - 2, 3 - 1
    np.testing.assert_array_equal(image0.numpy(), files.image(0, (2, 3, 3)).transpose(2, 0, 1)[:, :, ::-1])
    everything = wrap_dataset_for_transforms_v2(VOCDetection(tmp_path, loader=files.pnm_loader), target_keys="all")
    assert set(everything[0][1]) == {"annotation", "boxes", "labels"}
    with pytest.raises(ValueError, match=r"Target keys \['masks'\] are not available"):
        wrap_dataset_for_transforms_v2(VOCDetection(tmp_path, loader=files.pnm_loader), target_keys=["masks"])


def test_voc_segmentation_mask(tmp_path, files):
    detection.make_voc(tmp_path, files)
    ds = wrap_dataset_for_transforms_v2(VOCSegmentation(tmp_path, loader=files.pnm_loader, target_loader=files.pnm_loader))
    image, mask = ds[1]
    assert isinstance(mask, tv_tensors.Mask) and tuple(mask.shape) == (1, 2, 3) and mask.numpy().max() == 2


def test_coco_detection(tmp_path, files):
    ann = detection.make_coco(tmp_path, files)
    ds = wrap_dataset_for_transforms_v2(CocoDetection(tmp_path / "images", ann, loader=files.pnm_loader))
    image, target = ds[0]
    assert set(target) == {"image_id", "boxes", "labels"} and target["image_id"] == 3
    assert target["boxes"].format == tv_tensors.BoundingBoxFormat.XYXY
    assert target["boxes"].tolist() == [[0, 0, 1, 1], [0, 1, 1, 2]]  # XYWH [0,0,1,1], [0,1,1,1]
    assert target["labels"].tolist() == [1, 2]
    full = wrap_dataset_for_transforms_v2(CocoDetection(tmp_path / "images", ann, loader=files.pnm_loader),
                                          target_keys={"bbox", "iscrowd", "labels"})
    assert full[1][1]["bbox"] == [[1, 1, 1, 1]] and full[1][1]["iscrowd"] == [1] and "boxes" not in full[1][1]
    no_area = wrap_dataset_for_transforms_v2(CocoDetection(tmp_path / "images", ann, loader=files.pnm_loader),
                                             target_keys={"area"})
    with pytest.raises(ValueError, match="CocoDetection image 3: 2 of its annotations have no 'area'"):
        no_area[0]
    with pytest.raises(RuntimeError, match="'masks'"):
        wrap_dataset_for_transforms_v2(CocoDetection(tmp_path / "images", ann), target_keys={"masks"})
    data = json.loads(ann.read_text())
    data["annotations"] = [a for a in data["annotations"] if a["image_id"] != 9]
    ann.write_text(json.dumps(data))
    ds = wrap_dataset_for_transforms_v2(CocoDetection(tmp_path / "images", ann, loader=files.pnm_loader))
    assert ds[1][1] == {"image_id": 9}  # an image without annotations
    caps = wrap_dataset_for_transforms_v2(CocoCaptions(tmp_path / "images", ann, loader=files.pnm_loader))
    assert caps[0][1] == ["a cat", "two pets"]


def test_kitti(tmp_path, files):
    detection.make_kitti(tmp_path, files)
    ds = wrap_dataset_for_transforms_v2(Kitti(tmp_path, loader=files.pnm_loader))
    _, target = ds[0]
    assert target["labels"].tolist() == [0, 3]
    np.testing.assert_allclose(target["boxes"].numpy(), [[587.01, 173.33, 614.12, 200.12], [1, 2, 3, 4]], rtol=1e-6)
    assert ds[1][1]["boxes"].shape == (0, 4) and ds[1][1]["labels"].tolist() == []
    assert wrap_dataset_for_transforms_v2(Kitti(tmp_path, train=False, loader=files.pnm_loader))[0][1] is None
    keys = wrap_dataset_for_transforms_v2(Kitti(tmp_path, loader=files.pnm_loader), target_keys=["type", "occluded"])
    assert keys[0][1] == {"type": ["Car", "Pedestrian"], "occluded": [0, 2]}


def test_celeba_and_pets(tmp_path, files):
    Tiny, _ = celeba.make_celeba(tmp_path, files)
    ds = wrap_dataset_for_transforms_v2(Tiny(tmp_path, target_type=["bbox", "identity"], loader=files.pnm_loader))
    _, (bbox, identity) = ds[0]
    assert isinstance(bbox, tv_tensors.BoundingBoxes) and bbox.tolist() == [[1, 2, 4, 6]] and int(identity) == 11
    with pytest.raises(RuntimeError, match="`CelebA` dataset with `target_type=\\['attr', 'landmarks', ...\\]`"):
        wrap_dataset_for_transforms_v2(Tiny(tmp_path, loader=files.pnm_loader))
    base = tmp_path / "oxford-iiit-pet"
    (base / "annotations").mkdir(parents=True)
    (base / "annotations" / "trainval.txt").write_text("Abyssinian_1 1 1 1\n")
    files.write_pnm(base / "images" / "Abyssinian_1.jpg", files.image(0, (2, 2, 3)))
    files.write_pnm(base / "annotations" / "trimaps" / "Abyssinian_1.png", np.full((2, 2), 2, np.uint8))
    pets = wrap_dataset_for_transforms_v2(OxfordIIITPet(tmp_path, target_types=["category", "segmentation"]))
    _, (category, trimap) = pets[0]
    assert category == 0 and isinstance(trimap, tv_tensors.Mask) and trimap.numpy().tolist() == [[[2, 2], [2, 2]]]
    assert isinstance(pets, OxfordIIITPet)
