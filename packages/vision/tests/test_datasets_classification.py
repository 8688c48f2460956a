"""Places365, Food101, DTD, FGVCAircraft, OxfordIIITPet from tiny files in their layouts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from embervision.datasets import DTD, FGVCAircraft, Food101, OxfordIIITPet, Places365


def make_places(tmp_path, files):
    (tmp_path / "categories_places365.txt").write_text("/a/airfield 0\n/b/bakery 1\n")
    (tmp_path / "places365_val.txt").write_text("Places365_val_00000001.jpg 1\nPlaces365_val_00000002.jpg 0\n")
    (tmp_path / "places365_train_standard.txt").write_text("/a/airfield/00000001.jpg 0\n")
    for i, name in enumerate(["val_256/Places365_val_00000001.jpg", "val_256/Places365_val_00000002.jpg",
                              "data_256_standard/a/airfield/00000001.jpg"]):
        files.write_pnm(tmp_path / name, files.image(i, (2, 2, 3)))

    class Tiny(Places365):
        _CATEGORIES_META = ("categories_places365.txt", files.md5(tmp_path / "categories_places365.txt"))
        _FILE_LIST_META = {
            "train-standard": ("places365_train_standard.txt", files.md5(tmp_path / "places365_train_standard.txt")),
            "train-challenge": ("places365_train_challenge.txt", "0" * 32),
            "val": ("places365_val.txt", files.md5(tmp_path / "places365_val.txt")),
        }

    return Tiny


def test_places365(tmp_path, files):
    Tiny = make_places(tmp_path, files)
    ds = Tiny(tmp_path, split="val", small=True, loader=files.pnm_loader)
    assert ds.classes == ["/a/airfield", "/b/bakery"] and ds.class_to_idx["/b/bakery"] == 1
    assert ds.targets == [1, 0] and len(ds) == 2
    img, target = ds[0]
    assert target == 1
    np.testing.assert_array_equal(img.numpy(), files.image(0, (2, 2, 3)).transpose(2, 0, 1))
    train = Tiny(tmp_path, small=True, loader=files.pnm_loader, target_transform=str)
    assert train.imgs[0][0] == str(tmp_path / "data_256_standard" / "a" / "airfield" / "00000001.jpg")
    assert train[0][1] == "0"
    assert "Small: True" in repr(train)
    with pytest.raises(RuntimeError, match="places365_train_challenge.txt does not exist or is corrupted. "
                                           "You can set download=True to download it."):
        Tiny(tmp_path, split="train-challenge")
    with pytest.raises(ValueError, match=r"Unknown value 'test' for argument split. Valid values are \{'train-standard', 'train-challenge', 'val'\}."):
        Tiny(tmp_path, split="test")
    with pytest.raises(RuntimeError, match="categories_places365.txt does not exist or is corrupted"):
        Places365(tmp_path)


def test_places365_bad_lists(tmp_path, files):
    make_places(tmp_path, files)
    (tmp_path / "places365_val.txt").write_text("../../escape.jpg 1\n")
    lst = files.md5(tmp_path / "places365_val.txt")

    class Bad(Places365):
        _CATEGORIES_META = ("categories_places365.txt", files.md5(tmp_path / "categories_places365.txt"))
        _FILE_LIST_META = {"val": ("places365_val.txt", lst)}

    with pytest.raises(RuntimeError, match="leaves the image folder"):
        Bad(tmp_path, split="val")
    (tmp_path / "places365_val.txt").write_text("a.jpg one\n")

    class Bad2(Bad):
        _FILE_LIST_META = {"val": ("places365_val.txt", files.md5(tmp_path / "places365_val.txt"))}

    with pytest.raises(RuntimeError, match="places365_val.txt:1: expected '<name> <index>'"):
        Bad2(tmp_path, split="val")


def test_food101(tmp_path, files):
    base = tmp_path / "food-101"
    (base / "meta").mkdir(parents=True)
    (base / "meta" / "train.json").write_text(json.dumps({"pizza": ["pizza/1", "pizza/2"], "apple_pie": ["apple_pie/7"]}))
    (base / "meta" / "test.json").write_text(json.dumps({"pizza": ["pizza/3"]}))
    for i, name in enumerate(["pizza/1", "pizza/2", "apple_pie/7", "pizza/3"]):
        files.write_pnm(base / "images" / f"{name}.jpg", files.image(i, (2, 2, 3)))
    ds = Food101(tmp_path, loader=files.pnm_loader)
    assert ds.classes == ["apple_pie", "pizza"] and len(ds) == 3
    assert [t for _, t in ds] == [1, 1, 0]
    np.testing.assert_array_equal(ds[2][0].numpy(), files.image(2, (2, 2, 3)).transpose(2, 0, 1))
    assert len(Food101(tmp_path, split="test", loader=files.pnm_loader)) == 1
    with pytest.raises(ValueError, match=r"Unknown value 'val' for argument split"):
        Food101(tmp_path, split="val")
    (base / "meta" / "test.json").write_text(json.dumps({"pizza": ["../../../x"]}))
    with pytest.raises(RuntimeError, match="leaves the image folder"):
        Food101(tmp_path, split="test")
    (base / "meta" / "test.json").write_text("[]")
    with pytest.raises(RuntimeError, match="expected an object mapping each class"):
        Food101(tmp_path, split="test")
    with pytest.raises(RuntimeError, match="^Dataset not found. You can use download=True to download it$"):
        Food101(tmp_path / "none")


def test_dtd(tmp_path, files):
    data = tmp_path / "dtd" / "dtd"
    (data / "labels").mkdir(parents=True)
    (data / "labels" / "train1.txt").write_text("striped/s_1.jpg\nbanded/b_1.jpg\nstriped/s_2.jpg\n")
    (data / "labels" / "test2.txt").write_text("banded/b_2.jpg\n")
    for i, name in enumerate(["striped/s_1.jpg", "banded/b_1.jpg", "striped/s_2.jpg", "banded/b_2.jpg"]):
        files.write_pnm(data / "images" / name, files.image(i, (2, 2, 3)))
    ds = DTD(tmp_path, loader=files.pnm_loader)
    assert ds.classes == ["banded", "striped"] and [t for _, t in ds] == [1, 0, 1]
    np.testing.assert_array_equal(ds[1][0].numpy(), files.image(1, (2, 2, 3)).transpose(2, 0, 1))
    assert len(DTD(tmp_path, split="test", partition=2, loader=files.pnm_loader)) == 1
    assert "partition=2" in repr(DTD(tmp_path, split="test", partition=2))
    for bad in (0, 11, "1", True):
        with pytest.raises(ValueError, match=f"Parameter 'partition' should be an integer with `1 <= partition <= 10`, but got {bad} instead"):
            DTD(tmp_path, partition=bad)
    with pytest.raises(ValueError, match=r"Unknown value 'dev' for argument split. Valid values are \{'train', 'val', 'test'\}."):
        DTD(tmp_path, split="dev")
    (data / "labels" / "val1.txt").write_text("a/b/c.jpg\n")
    with pytest.raises(RuntimeError, match="val1.txt:1: expected '<class>/<file>'"):
        DTD(tmp_path, split="val")
    with pytest.raises(RuntimeError, match="^Dataset not found."):
        DTD(tmp_path / "none")


def test_fgvc_aircraft(tmp_path, files):
    data = tmp_path / "fgvc-aircraft-2013b" / "data"
    (data / "images").mkdir(parents=True)
    (data / "variants.txt").write_text("707-320\nA300B4\n")
    (data / "manufacturers.txt").write_text("Boeing\nAirbus\n")
    (data / "images_variant_trainval.txt").write_text("0034309 A300B4\n0034958 707-320\n")
    (data / "images_manufacturer_test.txt").write_text("0034309 Airbus\n")
    for i, name in enumerate(["0034309", "0034958"]):
        files.write_pnm(data / "images" / f"{name}.jpg", files.image(i, (2, 2, 3)))
    ds = FGVCAircraft(tmp_path, loader=files.pnm_loader)
    assert ds.classes == ["707-320", "A300B4"] and [t for _, t in ds] == [1, 0]
    np.testing.assert_array_equal(ds[1][0].numpy(), files.image(1, (2, 2, 3)).transpose(2, 0, 1))
    test = FGVCAircraft(tmp_path, split="test", annotation_level="manufacturer", loader=files.pnm_loader)
    assert test[0][1] == 1 and test.class_to_idx == {"Boeing": 0, "Airbus": 1}
    with pytest.raises(ValueError, match=r"Unknown value 'model' for argument annotation_level. Valid values are \{'variant', 'family', 'manufacturer'\}."):
        FGVCAircraft(tmp_path, annotation_level="model")
    with pytest.raises(ValueError, match=r"Unknown value 'all' for argument split"):
        FGVCAircraft(tmp_path, split="all")
    (data / "images_variant_train.txt").write_text("0034309 747\n")
    with pytest.raises(RuntimeError, match="unknown class '747'"):
        FGVCAircraft(tmp_path, split="train")
    with pytest.raises(RuntimeError, match="^Dataset not found."):
        FGVCAircraft(tmp_path / "none")


def test_oxford_iiit_pet(tmp_path, files):
    base = tmp_path / "oxford-iiit-pet"
    (base / "annotations").mkdir(parents=True)
    (base / "annotations" / "trainval.txt").write_text(
        "Abyssinian_100 1 1 1\ngreat_pyrenees_12 2 2 1\nAbyssinian_101 1 1 1\n")
    (base / "annotations" / "test.txt").write_text("great_pyrenees_3 2 2 1\n")
    for i, name in enumerate(["Abyssinian_100", "great_pyrenees_12", "Abyssinian_101", "great_pyrenees_3"]):
        files.write_pnm(base / "images" / f"{name}.jpg", files.image(i, (2, 2, 3)))
        files.write_pnm(base / "annotations" / "trimaps" / f"{name}.png", np.full((2, 2), i % 3 + 1, np.uint8))
    ds = OxfordIIITPet(tmp_path, loader=files.pnm_loader)
    assert ds.classes == ["Abyssinian", "Great Pyrenees"] and ds.class_to_idx["Great Pyrenees"] == 1
    assert [t for _, t in ds] == [0, 1, 0]
    ds = OxfordIIITPet(tmp_path, target_types=["category", "binary-category", "segmentation"],
                       loader=files.pnm_loader, target_loader=files.pnm_loader)
    img, (category, species, trimap) = ds[1]
    np.testing.assert_array_equal(img.numpy(), files.image(1, (2, 2, 3)).transpose(2, 0, 1))
    assert (category, species) == (1, 1) and trimap.numpy().tolist() == [[[2, 2], [2, 2]]]
    assert OxfordIIITPet(tmp_path, target_types=[], loader=files.pnm_loader)[0][1] is None
    assert OxfordIIITPet(tmp_path, split="test", target_types="binary-category", loader=files.pnm_loader)[0][1] == 1
    # the default loaders decode PGM/PPM themselves; the trimap keeps one channel
    img, trimap = OxfordIIITPet(tmp_path, target_types="segmentation")[0]
    assert tuple(img.shape) == (3, 2, 2) and tuple(trimap.shape) == (1, 2, 2)
    with pytest.raises(ValueError, match=r"Unknown value 'breed' for argument target_types. Valid values are \{'category', 'binary-category', 'segmentation'\}."):
        OxfordIIITPet(tmp_path, target_types="breed")
    with pytest.raises(ValueError, match=r"Unknown value 'train' for argument split"):
        OxfordIIITPet(tmp_path, split="train")
    (base / "annotations" / "test.txt").write_text("x 1 1\n")
    with pytest.raises(RuntimeError, match="test.txt:1: expected"):
        OxfordIIITPet(tmp_path, split="test")
    with pytest.raises(RuntimeError, match="^Dataset not found."):
        OxfordIIITPet(tmp_path / "none")
