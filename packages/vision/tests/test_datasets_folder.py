"""DatasetFolder / ImageFolder / find_classes / make_dataset."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from embervision.datasets import DatasetFolder, ImageFolder
from embervision.datasets.folder import IMG_EXTENSIONS, find_classes, has_file_allowed_extension, make_dataset


def _tree(tmp_path, files):
    for i, name in enumerate(["cat/a.ppm", "cat/sub/b.PPM", "dog/c.ppm", "dog/notes.txt"]):
        files.write_pnm(tmp_path / name, files.image(i, (2, 3, 3)))


def test_find_classes_and_make_dataset(tmp_path, files):
    _tree(tmp_path, files)
    (tmp_path / "stray.ppm").write_bytes(b"")  # files at the top level are not classes
    classes, class_to_idx = find_classes(tmp_path)
    assert classes == ["cat", "dog"] and class_to_idx == {"cat": 0, "dog": 1}
    samples = make_dataset(str(tmp_path), class_to_idx, extensions=(".ppm",))
    assert samples == [(str(tmp_path / "cat/a.ppm"), 0), (str(tmp_path / "cat/sub/b.PPM"), 0),
                       (str(tmp_path / "dog/c.ppm"), 1)]
    only_txt = make_dataset(tmp_path, {"dog": 5}, is_valid_file=lambda p: p.endswith(".txt"))
    assert only_txt == [(str(tmp_path / "dog/notes.txt"), 5)]
    assert has_file_allowed_extension("X.JPEG", IMG_EXTENSIONS) and not has_file_allowed_extension("x.txt", ".jpg")


def test_make_dataset_errors(tmp_path, files):
    _tree(tmp_path, files)
    with pytest.raises(ValueError, match="Both extensions and is_valid_file cannot be None or not None at the same time"):
        make_dataset(tmp_path, {"cat": 0})
    with pytest.raises(ValueError, match="Both extensions and is_valid_file"):
        make_dataset(tmp_path, {"cat": 0}, extensions=".ppm", is_valid_file=lambda p: True)
    with pytest.raises(ValueError, match="'class_to_index' must have at least one entry"):
        make_dataset(tmp_path, {}, extensions=".ppm")
    with pytest.raises(FileNotFoundError, match=r"^Found no valid file for the classes cat, dog. Supported extensions are: .png, .bmp$"):
        make_dataset(tmp_path, None, extensions=(".png", ".bmp"))
    assert make_dataset(tmp_path, None, extensions=(".png",), allow_empty=True) == []
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=f"Couldn't find any class folder in {tmp_path / 'empty'}."):
        find_classes(tmp_path / "empty")
    with pytest.raises(ValueError, match="The class_to_idx parameter cannot be None."):
        DatasetFolder.make_dataset(tmp_path, None, extensions=(".ppm",))


def test_dataset_folder_items(tmp_path, files):
    _tree(tmp_path, files)
    ds = DatasetFolder(tmp_path, files.pnm_loader, extensions=(".ppm",), transform=lambda t: t.float() / 255,
                       target_transform=lambda y: y + 100)
    assert len(ds) == 3 and ds.classes == ["cat", "dog"] and ds.targets == [0, 0, 1]
    img, target = ds[2]
    assert target == 101
    np.testing.assert_allclose(img.numpy(), files.image(2, (2, 3, 3)).transpose(2, 0, 1) / 255, rtol=1e-6)
    assert "Number of datapoints: 3" in repr(ds)


def test_image_folder_with_loader(tmp_path, files):
    _tree(tmp_path, files)
    # .ppm is an image extension; .txt is not
    ds = ImageFolder(tmp_path, loader=files.pnm_loader)
    assert [t for _, t in ds.imgs] == [0, 0, 1] and ds.imgs is ds.samples
    img, target = ds[0]
    assert img.dtype == ember.uint8 and tuple(img.shape) == (3, 2, 3) and target == 0
    np.testing.assert_array_equal(img.numpy(), files.image(0, (2, 3, 3)).transpose(2, 0, 1))
    ds = ImageFolder(tmp_path, loader=files.pnm_loader, is_valid_file=lambda p: "sub" in p, allow_empty=True)
    assert len(ds) == 1


def test_image_folder_default_loader_png(tmp_path, files, has_io):
    rgb = files.image(0, (4, 5, 3))
    gray = files.image(1, (4, 5))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    files.write_png(tmp_path / "a/x.png", rgb)
    files.write_png(tmp_path / "b/y.png", gray)
    ds = ImageFolder(tmp_path)
    img, target = ds[0]
    assert img.dtype == ember.uint8 and target == 0
    np.testing.assert_array_equal(img.numpy(), rgb.transpose(2, 0, 1))
    img, target = ds[1]  # gray files come back as RGB, as torchvision's loader converts them
    assert target == 1
    np.testing.assert_array_equal(img.numpy(), np.repeat(gray[None], 3, axis=0))


def test_default_loader_pnm(tmp_path, files):
    from embervision.datasets.folder import default_loader
    gray = files.image(3, (3, 4))
    files.write_pnm(tmp_path / "g.pgm", gray)
    img = default_loader(tmp_path / "g.pgm")  # converted to RGB, as torchvision's loader does
    assert img.dtype == ember.uint8 and tuple(img.shape) == (3, 3, 4)
    np.testing.assert_array_equal(img.numpy(), np.repeat(gray[None], 3, axis=0))
    rgb = files.image(4, (2, 2, 3))
    (tmp_path / "c.ppm").write_bytes(b"P6 # a comment\n2 2\n# another\n255\n" + rgb.tobytes())
    np.testing.assert_array_equal(default_loader(str(tmp_path / "c.ppm")).numpy(), rgb.transpose(2, 0, 1))
    for data, message in {b"P6\n2 2\n65535\n" + b"\0" * 24: "only 8-bit PNM files are supported",
                          b"P6\n2 2\n255\n" + b"\0" * 11: r"PNM data truncated \(11 bytes, 12 needed\)",
                          b"P5\n2 x\n255\n": "malformed PNM header", b"P5\n2 2\n255": "malformed PNM header"}.items():
        (tmp_path / "bad.pgm").write_bytes(data)
        with pytest.raises(ValueError, match=message):
            default_loader(tmp_path / "bad.pgm")


def _voc_palette():
    # VOC's colormap: bits of the index spread over the three channels, 256 distinct colors
    palette = np.zeros((256, 3), np.uint8)
    for i in range(256):
        c, r, g, b = i, 0, 0, 0
        for j in range(8):
            r |= ((c >> 0) & 1) << (7 - j)
            g |= ((c >> 1) & 1) << (7 - j)
            b |= ((c >> 2) & 1) << (7 - j)
            c >>= 3
        palette[i] = (r, g, b)
    return palette


def test_png_palette_reader(tmp_path, files):
    from embervision.datasets.folder import _png_palette
    palette = _voc_palette()
    files.write_palette_png(tmp_path / "m.png", np.array([[0, 1], [255, 15]]), palette)
    np.testing.assert_array_equal(_png_palette(str(tmp_path / "m.png")), palette)
    files.write_png(tmp_path / "g.png", files.image(0, (2, 2)))
    assert _png_palette(str(tmp_path / "g.png")) is None
    files.write_pnm(tmp_path / "p.ppm", files.image(0, (2, 2, 3)))
    assert _png_palette(str(tmp_path / "p.ppm")) is None
    data = (tmp_path / "m.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(data[:60])
    with pytest.raises(ValueError, match="runs past the end of the file"):
        _png_palette(str(tmp_path / "cut.png"))
    plte = data.index(b"PLTE") - 4
    (tmp_path / "nop.png").write_bytes(data[:plte] + data[plte + 12 + 768:])
    with pytest.raises(ValueError, match="palette PNG without a PLTE chunk"):
        _png_palette(str(tmp_path / "nop.png"))


def test_mask_loader_palette_indices(tmp_path, files, has_io):
    from embervision.datasets.folder import _read_image_unchanged
    indices = np.array([[0, 1, 2], [255, 15, 0]], np.uint8)
    files.write_palette_png(tmp_path / "m.png", indices, _voc_palette())
    mask = _read_image_unchanged(tmp_path / "m.png")
    assert mask.dtype == ember.uint8
    np.testing.assert_array_equal(mask.numpy(), indices[None])
    files.write_palette_png(tmp_path / "dup.png", indices, np.zeros((256, 3), np.uint8))
    with pytest.raises(ValueError, match="palette has repeated colors"):
        _read_image_unchanged(tmp_path / "dup.png")
