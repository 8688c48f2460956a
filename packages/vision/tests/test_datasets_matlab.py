"""The MAT-file v5 reader (files built here by a small writer) and the datasets that use it: SVHN,
Flowers102, StanfordCars."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

import ember
from embervision.datasets import SVHN, Flowers102, StanfordCars
from embervision.datasets._matlab import loadmat

# ----------------------------------------------------------------------------- a MAT v5 writer

_MI = {"i1": 1, "u1": 2, "i2": 3, "u2": 4, "i4": 5, "u4": 6, "f4": 7, "f8": 9, "i8": 12, "u8": 13}
_MX = {"f8": 6, "f4": 7, "i1": 8, "u1": 9, "i2": 10, "u2": 11, "i4": 12, "u4": 13, "i8": 14, "u8": 15}


class Struct(dict):
    """A 1x1 struct (a dict) in the writer's input."""


def element(mtype, payload, e="<"):
    if len(payload) <= 4 and mtype != 14:  # the small format
        # byte count in the upper 16 bits of the first word, the data in the second
        return struct.pack(e + "I", (len(payload) << 16) | mtype) + payload.ljust(4, b"\0")
    pad = (-len(payload)) % 8
    return struct.pack(e + "II", mtype, len(payload)) + payload + b"\0" * pad


def numeric(array, e="<"):
    array = np.asarray(array)
    code = array.dtype.str[1:]
    return element(_MI[code], array.astype(e + code).tobytes(order="F"), e)


def matrix(name, value, e="<", storage=None):
    """miMATRIX bytes for value: ndarray (numeric), str (char row), list (1xN cell), Struct, or
    a list of Structs (1xN struct array)."""
    def head(mxclass, dims, flags=0):
        return (numeric(np.array([mxclass | flags, 0], np.uint32), e) + numeric(np.array(dims, np.int32), e)
                + element(1, name.encode(), e))
    if isinstance(value, str):
        body = head(4, [1 if value else 0, len(value)]) + element(4, np.array([ord(c) for c in value], e + "u2").tobytes(), e)
    elif isinstance(value, Struct) or (isinstance(value, list) and value and all(isinstance(v, Struct) for v in value)):
        records = [value] if isinstance(value, Struct) else value
        fields = list(records[0])
        width = 32
        body = head(2, [1, len(records)]) + numeric(np.array([width], np.int32), e)
        body += element(1, b"".join(f.encode().ljust(width, b"\0") for f in fields), e)
        for record in records:
            for field in fields:
                body += matrix("", record[field], e)
    elif isinstance(value, list):
        body = head(1, [1, len(value)]) + b"".join(matrix("", v, e) for v in value)
    else:
        array = np.asarray(value)
        if array.ndim == 1:
            array = array[None]
        flags = 0x0800 if np.iscomplexobj(array) else 0
        real = array.real if flags else array
        stored = real.astype(storage) if storage else real
        code = (np.asarray(real).dtype.str[1:])
        body = head(_MX[code], list(array.shape), flags) + numeric(stored, e)
        if flags:
            body += numeric(array.imag, e)
    return element(14, body, e)


def mat_bytes(variables, compress=False, endian="<"):
    header = b"MATLAB 5.0 MAT-file, written by the ember tests".ljust(116, b" ") + b"\0" * 8
    header += struct.pack(endian + "H", 0x0100) + (b"IM" if endian == "<" else b"MI")
    out = header
    for name, value in variables.items():
        m = matrix(name, value, endian)
        if compress:
            z = zlib.compress(m)
            m = struct.pack(endian + "II", 15, len(z)) + z
        out += m
    return out


# ----------------------------------------------------------------------------- the reader

@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("endian", ["<", ">"])
def test_loadmat_round_trip(compress, endian):
    x = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
    variables = {
        "x": x, "d": np.array([[1.5, -2.0]]), "i": np.array([[-3]], np.int32), "s": "hello",
        "c": ["ab", np.array([[1.0, 2.0]])], "st": Struct(a=np.array([[7.0]]), name="car"),
        "arr": [Struct(fname="00001.jpg", cls=np.array([[3]], np.uint8)),
                Struct(fname="00002.jpg", cls=np.array([[1]], np.uint8))],
        "z": np.array([[1 + 2j, 3 - 1j]]), "e": np.zeros((0, 3)),
    }
    out = loadmat(mat_bytes(variables, compress, endian))
    assert set(out) == set(variables)
    np.testing.assert_array_equal(out["x"], x)
    assert out["x"].dtype == np.uint8
    np.testing.assert_array_equal(out["d"], [[1.5, -2.0]])
    assert out["i"].dtype == np.int32 and out["i"][0, 0] == -3
    assert out["s"] == "hello"
    assert out["c"].shape == (1, 2) and out["c"][0, 0] == "ab"
    np.testing.assert_array_equal(out["c"][0, 1], [[1.0, 2.0]])
    assert out["st"].shape == (1, 1) and out["st"][0, 0]["name"] == "car"
    assert [r["fname"] for r in out["arr"][0]] == ["00001.jpg", "00002.jpg"]
    np.testing.assert_array_equal(out["z"], [[1 + 2j, 3 - 1j]])
    assert out["e"].shape == (0, 3)
    sq = loadmat(mat_bytes(variables, compress, endian), squeeze_me=True)
    assert sq["i"] == -3 and sq["d"].shape == (2,) and sq["st"]["a"] == 7.0
    assert [(r["fname"], r["cls"]) for r in sq["arr"]] == [("00001.jpg", 3), ("00002.jpg", 1)]


def test_loadmat_storage_narrower_than_class_and_char_matrix():
    # MATLAB stores a double array of small integers as miUINT8; rows of a char matrix become strings
    body = matrix("v", np.array([[1.0, 200.0]]), storage=np.uint8)
    out = loadmat(mat_bytes({}) + body)
    assert out["v"].dtype == np.float64 and out["v"].tolist() == [[1.0, 200.0]]
    flags = numeric(np.array([4, 0], np.uint32)) + numeric(np.array([2, 2], np.int32)) + element(1, b"m")
    chars = element(4, np.array([ord(c) for c in "acbd"], "<u2").tobytes())  # column-major: "ab", "cd"
    out = loadmat(mat_bytes({}) + element(14, flags + chars))
    assert out["m"].tolist() == ["ab", "cd"]


def _bad_matrices():
    good = matrix("x", np.arange(6, dtype=np.uint8).reshape(2, 3))
    flags = numeric(np.array([6, 0], np.uint32))
    return {
        "truncated": (good[:-9], "runs past the end"),
        "tag cut": (good[:5], "truncated data element tag"),
        "too few values": (element(14, flags + numeric(np.array([2, 3], np.int32)) + element(1, b"x")
                                   + numeric(np.arange(5, dtype=np.uint8))), "5 values for dimensions"),
        "negative dims": (element(14, flags + numeric(np.array([-1, 3], np.int32)) + element(1, b"x")), "non-negative"),
        "sparse": (element(14, numeric(np.array([5, 0], np.uint32)) + numeric(np.array([2, 2], np.int32))
                           + element(1, b"x")), "sparse arrays are not supported"),
        "object": (element(14, numeric(np.array([3, 0], np.uint32)) + numeric(np.array([1, 1], np.int32))
                           + element(1, b"x")), "object arrays are not supported"),
        "not a matrix": (numeric(np.arange(3, dtype=np.uint8)), "expected a matrix element, got type 2"),
        "bad compressed": (struct.pack("<II", 15, 4) + b"junk", "corrupt compressed element"),
        "cut compressed": (struct.pack("<II", 15, 10) + zlib.compress(good)[:10], "compressed element is truncated"),
        "small claims 6": (struct.pack("<I", (6 << 16) | 2) + b"\0" * 4, "small data element claims 6 bytes"),
    }


@pytest.mark.parametrize("case", list(_bad_matrices()))
def test_loadmat_rejects(case):
    body, message = _bad_matrices()[case]
    with pytest.raises(ValueError, match=message):
        loadmat(mat_bytes({}) + body)


def test_loadmat_rejects_headers(tmp_path):
    with pytest.raises(ValueError, match="shorter than the 128-byte header"):
        loadmat(b"MATLAB")
    with pytest.raises(ValueError, match="endian indicator"):
        loadmat(mat_bytes({})[:126] + b"XX")
    with pytest.raises(ValueError, match="v4 or v7.3"):
        loadmat(b"\0" * 200)
    with pytest.raises(ValueError, match="unsupported MAT-file version 0x0200"):
        loadmat(mat_bytes({})[:124] + struct.pack("<H", 0x200) + b"IM")
    path = tmp_path / "f.mat"
    path.write_bytes(mat_bytes({"a": np.array([[1.0]])}))
    assert loadmat(str(path))["a"][0, 0] == 1.0


# ----------------------------------------------------------------------------- SVHN

def test_svhn(tmp_path, files):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, (32, 32, 3, 3), dtype=np.uint8)
    y = np.array([[10], [3], [1]], dtype=np.uint8)
    (tmp_path / "test_32x32.mat").write_bytes(mat_bytes({"X": X, "y": y}, compress=True))

    class Tiny(SVHN):
        split_list = {**SVHN.split_list, "test": ["http://unused", "test_32x32.mat",
                                                  files.md5(tmp_path / "test_32x32.mat")]}

    ds = Tiny(str(tmp_path), split="test")
    assert len(ds) == 3
    img, target = ds[0]
    assert target == 0 and type(target) is int  # label 10 is the digit 0
    assert img.dtype == ember.uint8 and tuple(img.shape) == (3, 32, 32)
    np.testing.assert_array_equal(img.numpy(), X[:, :, :, 0].transpose(2, 0, 1))
    assert Tiny(tmp_path, split="test", target_transform=lambda t: t * 2)[1][1] == 6
    with pytest.raises(ValueError, match=r"Unknown value 'val' for argument split. Valid values are \{'train', 'test', 'extra'\}."):
        SVHN(tmp_path, split="val")
    with pytest.raises(RuntimeError, match="^Dataset not found or corrupted. You can use download=True to download it$"):
        SVHN(tmp_path, split="test")  # torchvision's md5 does not match the tiny file
    (tmp_path / "test_32x32.mat").write_bytes(mat_bytes({"X": X[:, :, :2]}))

    class Bad(SVHN):
        split_list = {"test": ["u", "test_32x32.mat", files.md5(tmp_path / "test_32x32.mat")]}

    with pytest.raises(RuntimeError, match=r"'X' must be an array of shape \[32, 32, 3, N\]"):
        Bad(tmp_path, split="test")


# ----------------------------------------------------------------------------- Flowers102

def make_flowers(tmp_path, files):
    base = tmp_path / "flowers-102"
    for i in range(1, 5):
        files.write_pnm(base / "jpg" / f"image_{i:05d}.jpg", files.image(i, (2, 2, 3)))
    (base / "imagelabels.mat").write_bytes(mat_bytes({"labels": np.array([[3, 1, 2, 3]], np.uint8)}, compress=True))
    (base / "setid.mat").write_bytes(mat_bytes({"trnid": np.array([[4, 1]], np.uint16),
                                                "valid": np.array([[2]], np.uint16),
                                                "tstid": np.array([[3]], np.uint16)}))

    class Tiny(Flowers102):
        _file_dict = {**Flowers102._file_dict, "label": ("imagelabels.mat", files.md5(base / "imagelabels.mat")),
                      "setid": ("setid.mat", files.md5(base / "setid.mat"))}

    return Tiny, base


def test_flowers102(tmp_path, files):
    Tiny, base = make_flowers(tmp_path, files)
    ds = Tiny(tmp_path, loader=files.pnm_loader)
    assert len(ds) == 2 and ds._labels == [2, 2]
    img, target = ds[0]
    np.testing.assert_array_equal(img.numpy(), files.image(4, (2, 2, 3)).transpose(2, 0, 1))
    assert target == 2
    assert Tiny(tmp_path, split="val", loader=files.pnm_loader)[0][1] == 0
    assert Tiny(tmp_path, split="test", loader=files.pnm_loader, transform=lambda t: t.shape)[0] == ((3, 2, 2), 1)
    with pytest.raises(ValueError, match=r"Unknown value 'dev' for argument split"):
        Tiny(tmp_path, split="dev")
    with pytest.raises(RuntimeError, match="^Dataset not found or corrupted."):
        Flowers102(tmp_path)


def test_flowers102_default_loader(tmp_path, files, has_io):
    Tiny, base = make_flowers(tmp_path, files)
    picture = files.image(9, (3, 4, 3))
    files.write_png(base / "jpg" / "image_00004.jpg", picture)  # the decoder goes by content
    img, _ = Tiny(tmp_path)[0]
    np.testing.assert_array_equal(img.numpy(), picture.transpose(2, 0, 1))


# ----------------------------------------------------------------------------- StanfordCars

def test_stanford_cars(tmp_path, files):
    base = tmp_path / "stanford_cars"
    (base / "devkit").mkdir(parents=True)
    for name in ("00001.jpg", "00002.jpg"):
        files.write_pnm(base / "cars_train" / name, files.image(len(name) + int(name[4]), (2, 3, 3)))
    annos = [Struct(bbox_x1=np.array([[1]], np.uint8), fname="00001.jpg", **{"class": np.array([[2]], np.uint8)}),
             Struct(bbox_x1=np.array([[5]], np.uint8), fname="00002.jpg", **{"class": np.array([[1]], np.uint8)})]
    (base / "devkit" / "cars_train_annos.mat").write_bytes(mat_bytes({"annotations": annos}, compress=True))
    (base / "devkit" / "cars_meta.mat").write_bytes(mat_bytes({"class_names": ["AM General Hummer", "Acura RL"]}))
    ds = StanfordCars(tmp_path, loader=files.pnm_loader)
    assert len(ds) == 2 and ds.classes == ["AM General Hummer", "Acura RL"] and ds.class_to_idx["Acura RL"] == 1
    img, target = ds[0]
    assert target == 1
    np.testing.assert_array_equal(img.numpy(), files.image(10, (2, 3, 3)).transpose(2, 0, 1))
    assert ds[1][1] == 0
    with pytest.raises(RuntimeError, match="^Dataset not found. Try to manually download"):
        StanfordCars(tmp_path, split="test")
    with pytest.raises(ValueError, match="The original URL is broken"):
        StanfordCars(tmp_path, download=True)
    with pytest.raises(ValueError, match=r"Unknown value 'val' for argument split. Valid values are \{'train', 'test'\}."):
        StanfordCars(tmp_path, split="val")
    (base / "devkit" / "cars_train_annos.mat").write_bytes(mat_bytes({"annotations": [Struct(fname="x.jpg")]}))
    with pytest.raises(RuntimeError, match="expected a struct array with fields fname, class"):
        StanfordCars(tmp_path, loader=files.pnm_loader)
    (base / "devkit" / "cars_train_annos.mat").write_bytes(b"garbage" * 30)
    with pytest.raises(RuntimeError, match="endian indicator"):
        StanfordCars(tmp_path, loader=files.pnm_loader)
