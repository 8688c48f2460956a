"""VOC, COCO and KITTI from tiny files in their on-disk layouts."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import ember
from embervision.datasets import CocoCaptions, CocoDetection, Kitti, VOCDetection, VOCSegmentation

_XML = """<annotation>
  <folder>VOC2012</folder>
  <filename>{name}.jpg</filename>
  <size><width>3</width><height>2</height><depth>3</depth></size>
  <object><name>dog</name><difficult>0</difficult>
    <bndbox><xmin>1</xmin><ymin>1</ymin><xmax>2</xmax><ymax>2</ymax></bndbox></object>
  {extra}
</annotation>
"""


def make_voc(tmp_path, files, year="2012", base="VOCdevkit/VOC2012", image_set="train"):
    voc = tmp_path / base
    for i, name in enumerate(["a", "b"]):
        files.write_pnm(voc / "JPEGImages" / f"{name}.jpg", files.image(i, (2, 3, 3)))
        files.write_pnm(voc / "SegmentationClass" / f"{name}.png", np.full((2, 3), i + 1, np.uint8))
        (voc / "Annotations").mkdir(parents=True, exist_ok=True)
        extra = ("<object><name>cat</name><bndbox><xmin>0</xmin><ymin>0</ymin><xmax>1</xmax><ymax>2</ymax></bndbox>"
                 "</object>") if name == "b" else ""
        (voc / "Annotations" / f"{name}.xml").write_text(_XML.format(name=name, extra=extra))
    for sub in ("Segmentation", "Main"):
        (voc / "ImageSets" / sub).mkdir(parents=True, exist_ok=True)
        (voc / "ImageSets" / sub / f"{image_set}.txt").write_text("a\nb\n")
    return voc


def test_voc_segmentation(tmp_path, files):
    make_voc(tmp_path, files)
    ds = VOCSegmentation(tmp_path, loader=files.pnm_loader, target_loader=files.pnm_loader)
    assert len(ds) == 2 and ds.masks[1].endswith("SegmentationClass/b.png")
    img, mask = ds[1]
    np.testing.assert_array_equal(img.numpy(), files.image(1, (2, 3, 3)).transpose(2, 0, 1))
    assert mask.dtype == ember.uint8 and tuple(mask.shape) == (1, 2, 3) and mask.numpy().max() == 2
    joint = VOCSegmentation(tmp_path, transforms=lambda i, m: (i.shape, m.sum().item()), loader=files.pnm_loader,
                            target_loader=files.pnm_loader)
    assert joint[0] == ((3, 2, 3), 6)
    # the default loaders read PGM/PPM themselves: the mask keeps its single channel
    img, mask = VOCSegmentation(tmp_path)[0]
    assert tuple(img.shape) == (3, 2, 3) and tuple(mask.shape) == (1, 2, 3)


def test_voc_detection(tmp_path, files):
    make_voc(tmp_path, files)
    ds = VOCDetection(tmp_path, loader=files.pnm_loader)
    _, target = ds[0]
    ann = target["annotation"]
    assert ann["filename"] == "a.jpg" and ann["size"] == {"width": "3", "height": "2", "depth": "3"}
    assert ann["object"][0]["bndbox"] == {"xmin": "1", "ymin": "1", "xmax": "2", "ymax": "2"}  # always a list
    _, target = ds[1]
    assert [o["name"] for o in target["annotation"]["object"]] == ["dog", "cat"]
    no_objects = VOCDetection.parse_voc_xml(ET.fromstring("<annotation><filename>c.jpg</filename></annotation>"))
    assert no_objects == {"annotation": {"filename": "c.jpg", "object": []}}
    repeated = VOCDetection.parse_voc_xml(ET.fromstring("<a><b>1</b><b>2</b><c>3</c></a>"))
    assert repeated == {"a": {"b": ["1", "2"], "c": "3"}}  # repeated tags become a list
    assert VOCDetection(tmp_path, loader=files.pnm_loader, target_transform=lambda t: list(t))[0][1] == ["annotation"]


def test_voc_arguments_and_missing(tmp_path, files):
    with pytest.raises(ValueError, match=r"Unknown value '2013' for argument year. Valid values are \{'2007', '2008', '2009', '2010', '2011', '2012'\}."):
        VOCSegmentation(tmp_path, year="2013")
    with pytest.raises(ValueError, match=r"Unknown value 'test' for argument image_set. Valid values are \{'train', 'trainval', 'val'\}."):
        VOCDetection(tmp_path, image_set="test")
    with pytest.raises(RuntimeError, match="^Dataset not found or corrupted. You can use download=True to download it$"):
        VOCDetection(tmp_path, year="2007", image_set="test")
    make_voc(tmp_path, files, year="2007", base="VOCdevkit/VOC2007", image_set="test")
    assert len(VOCDetection(tmp_path, year="2007", image_set="test", loader=files.pnm_loader)) == 2
    with pytest.raises(RuntimeError, match="Dataset not found or corrupted"):
        VOCDetection(tmp_path, year="2007", image_set="val")
    voc = make_voc(tmp_path, files)
    (voc / "ImageSets" / "Main" / "train.txt").write_text("a\n../../../etc/passwd\n")
    with pytest.raises(RuntimeError, match="is not a file name"):
        VOCDetection(tmp_path)


@pytest.mark.parametrize("xml,message", [
    ('<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
     "<annotation>&lol2;</annotation>", "XML with DOCTYPE or ENTITY declarations is not allowed"),
    ('<!DOCTYPE a SYSTEM "file:///etc/passwd"><annotation/>', "DOCTYPE or ENTITY"),
    ("<annotation><object></annotation>", "malformed XML"),
])
def test_voc_rejects_hostile_xml(tmp_path, files, xml, message):
    voc = make_voc(tmp_path, files)
    (voc / "Annotations" / "a.xml").write_text(xml)
    ds = VOCDetection(tmp_path, loader=files.pnm_loader)
    with pytest.raises(ValueError, match=message):
        ds[0]
    assert ds[1][1]["annotation"]["filename"] == "b.jpg"


def test_voc_utf16_doctype_refused(tmp_path, files):
    voc = make_voc(tmp_path, files)
    text = '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE a [<!ENTITY x "y">]><annotation>&x;</annotation>'
    (voc / "Annotations" / "a.xml").write_bytes(text.encode("utf-16"))
    with pytest.raises(ValueError, match="DOCTYPE or ENTITY"):
        VOCDetection(tmp_path, loader=files.pnm_loader)[0]


def make_coco(tmp_path, files, images=None):
    for i, name in enumerate(["x.ppm", "sub/y.ppm"]):
        files.write_pnm(tmp_path / "images" / name, files.image(i, (2, 2, 3)))
    data = {
        "images": images or [{"id": 9, "file_name": "sub/y.ppm"}, {"id": 3, "file_name": "x.ppm"}],
        "annotations": [
            {"id": 1, "image_id": 3, "category_id": 1, "bbox": [0, 0, 1, 1], "caption": "a cat", "iscrowd": 0},
            {"id": 2, "image_id": 9, "category_id": 2, "bbox": [1, 1, 1, 1], "caption": "a dog", "iscrowd": 1},
            {"id": 3, "image_id": 3, "category_id": 2, "bbox": [0, 1, 1, 1], "caption": "two pets", "iscrowd": 0},
        ],
        "categories": [{"id": 1, "name": "cat", "supercategory": "animal"}, {"id": 2, "name": "dog", "supercategory": "animal"}],
    }
    path = tmp_path / "ann.json"
    path.write_text(json.dumps(data))
    return path


def test_coco_detection_and_captions(tmp_path, files):
    ann = make_coco(tmp_path, files)
    ds = CocoDetection(str(tmp_path / "images"), str(ann), loader=files.pnm_loader)
    assert ds.ids == [3, 9] and len(ds) == 2
    img, target = ds[0]
    np.testing.assert_array_equal(img.numpy(), files.image(0, (2, 2, 3)).transpose(2, 0, 1))
    assert [a["id"] for a in target] == [1, 3] and target[1]["bbox"] == [0, 1, 1, 1]
    assert [a["id"] for a in ds[1][1]] == [2]
    caps = CocoCaptions(tmp_path / "images", ann, loader=files.pnm_loader, target_transform=len)
    assert caps[0][1] == 2
    assert CocoCaptions(tmp_path / "images", ann, loader=files.pnm_loader)[0][1] == ["a cat", "two pets"]
    coco = ds.coco
    assert coco.getAnnIds(imgIds=3) == [1, 3] and coco.getAnnIds(catIds=[2]) == [2, 3]
    assert coco.getAnnIds(iscrowd=True) == [2]
    assert coco.getImgIds(catIds=[1]) == [3] and coco.getImgIds() == [3, 9]
    assert coco.getCatIds(catNms=["dog"]) == [2] and coco.loadCats(1)[0]["name"] == "cat"
    assert coco.loadImgs([9])[0]["file_name"] == "sub/y.ppm" and coco.loadAnns(2)[0]["caption"] == "a dog"
    with pytest.raises(ValueError, match="Index must be of type integer, got <class 'str'> instead."):
        ds["0"]
    joint = CocoDetection(tmp_path / "images", ann, transforms=lambda i, t: (i.shape, len(t)), loader=files.pnm_loader)
    assert joint[0] == ((3, 2, 2), 2)


@pytest.mark.parametrize("content,message", [
    ("[1, 2]", "a COCO annotation file is a JSON object"),
    ("{bad json", "not valid JSON"),
    ('{"images": {"id": 1}}', "'images' must be a list of objects"),
    ('{"images": [{"id": 1}]}', "every image needs an 'id' and a 'file_name' string"),
    ('{"images": [{"id": 1, "file_name": "../../secret"}]}', "would leave the image root"),
    ('{"images": [{"id": 1, "file_name": "/etc/passwd"}]}', "would leave the image root"),
    ('{"annotations": [{"id": 1}]}', "every annotation needs an 'image_id'"),
])
def test_coco_rejects_bad_annotation_files(tmp_path, content, message):
    (tmp_path / "ann.json").write_text(content)
    with pytest.raises(ValueError, match=message):
        CocoDetection(tmp_path, tmp_path / "ann.json")


def make_kitti(tmp_path, files):
    raw = tmp_path / "Kitti" / "raw"
    for i, name in enumerate(["000001", "000000"]):
        files.write_pnm(raw / "training" / "image_2" / f"{name}.png", files.image(i, (2, 3, 3)))
    (raw / "training" / "label_2").mkdir(parents=True)
    (raw / "training" / "label_2" / "000000.txt").write_text(
        "Car 0.00 0 -1.58 587.01 173.33 614.12 200.12 1.65 1.67 3.64 -0.65 1.71 46.70 -1.59\n"
        "Pedestrian 0.50 2 0.21 1 2 3 4 1.8 0.6 0.9 1.0 2.0 3.0 0.5\n")
    (raw / "training" / "label_2" / "000001.txt").write_text("")
    files.write_pnm(raw / "testing" / "image_2" / "000005.png", files.image(5, (2, 3, 3)))
    return raw


def test_kitti(tmp_path, files):
    raw = make_kitti(tmp_path, files)
    ds = Kitti(tmp_path, loader=files.pnm_loader)
    assert len(ds) == 2 and ds.images[0].endswith("000000.png")  # sorted by file name
    img, target = ds[0]
    np.testing.assert_array_equal(img.numpy(), files.image(1, (2, 3, 3)).transpose(2, 0, 1))
    assert target[0] == {"type": "Car", "truncated": 0.0, "occluded": 0, "alpha": -1.58,
                         "bbox": [587.01, 173.33, 614.12, 200.12], "dimensions": [1.65, 1.67, 3.64],
                         "location": [-0.65, 1.71, 46.7], "rotation_y": -1.59}
    assert target[1]["type"] == "Pedestrian" and target[1]["occluded"] == 2
    assert ds[1][1] == []
    test = Kitti(tmp_path, train=False, loader=files.pnm_loader)
    assert len(test) == 1 and test[0][1] is None
    (raw / "training" / "label_2" / "000000.txt").write_text("Car 0 0\n")
    with pytest.raises(RuntimeError, match="a KITTI label line has 15 fields, this one 3"):
        ds[0]
    with pytest.raises(RuntimeError, match=r"^Dataset not found. You may use download=True to download it.$"):
        Kitti(tmp_path / "nowhere")


def test_voc_default_loaders_png(tmp_path, files, has_io):
    voc = make_voc(tmp_path, files)
    picture = files.image(5, (2, 3, 3))
    mask = np.array([[0, 1, 2], [255, 1, 0]], np.uint8)
    files.write_png(voc / "JPEGImages" / "a.jpg", picture)  # decoded by content
    files.write_png(voc / "SegmentationClass" / "a.png", mask)
    img, target = VOCSegmentation(tmp_path)[0]
    np.testing.assert_array_equal(img.numpy(), picture.transpose(2, 0, 1))
    assert target.dtype == ember.uint8
    np.testing.assert_array_equal(target.numpy(), mask[None])
    img, target = VOCDetection(tmp_path)[0]
    np.testing.assert_array_equal(img.numpy(), picture.transpose(2, 0, 1))
    assert target["annotation"]["filename"] == "a.jpg"
