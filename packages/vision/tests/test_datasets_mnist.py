"""MNIST family from tiny IDX files written here."""

from __future__ import annotations

import gzip
import lzma
import struct

import numpy as np
import pytest

import ember
from embervision.datasets import EMNIST, KMNIST, MNIST, QMNIST, FashionMNIST
from embervision.datasets.mnist import read_sn3_pascalvincent_tensor

_CODES = {np.uint8: 0x08, np.int8: 0x09, np.int16: 0x0B, np.int32: 0x0C, np.float32: 0x0D, np.float64: 0x0E}


def idx_bytes(array):
    array = np.asarray(array)
    head = bytes([0, 0, _CODES[array.dtype.type], array.ndim]) + b"".join(struct.pack(">I", d) for d in array.shape)
    return head + array.astype(array.dtype.newbyteorder(">")).tobytes()


def write(path, array, compress=None):
    path.parent.mkdir(parents=True, exist_ok=True)
    data = idx_bytes(array)
    if compress == "gz":
        path = path.with_name(path.name + ".gz")
        data = gzip.compress(data)
    elif compress == "xz":
        path = path.with_name(path.name + ".xz")
        data = lzma.compress(data)
    path.write_bytes(data)


def images(n, seed=0):
    return np.random.default_rng(seed).integers(0, 256, (n, 28, 28), dtype=np.uint8)


@pytest.mark.parametrize("cls", [MNIST, FashionMNIST, KMNIST])
@pytest.mark.parametrize("compress", [None, "gz"])
def test_mnist_like(tmp_path, cls, compress):
    raw = tmp_path / cls.__name__ / "raw"
    train, test = images(3, 0), images(2, 1)
    write(raw / "train-images-idx3-ubyte", train, compress)
    write(raw / "train-labels-idx1-ubyte", np.array([7, 0, 9], np.uint8), compress)
    write(raw / "t10k-images-idx3-ubyte", test, compress)
    write(raw / "t10k-labels-idx1-ubyte", np.array([1, 2], np.uint8), compress)
    ds = cls(str(tmp_path))
    assert len(ds) == 3 and ds.data.dtype == ember.uint8 and ds.targets.dtype == ember.int64
    img, target = ds[2]
    assert type(target) is int and target == 9
    assert img.dtype == ember.uint8 and tuple(img.shape) == (1, 28, 28)
    np.testing.assert_array_equal(img.numpy()[0], train[2])
    test_ds = cls(tmp_path, train=False, transform=lambda t: t.float().sum(), target_transform=str)
    total, target = test_ds[1]
    assert target == "2" and float(total) == float(test[1].astype(np.float64).sum())
    assert len(ds.classes) == 10 and ds.class_to_idx[ds.classes[3]] == 3
    assert "Split: Test" in repr(test_ds)


def test_mnist_missing_and_corrupt(tmp_path):
    with pytest.raises(RuntimeError, match="^Dataset not found. You can use download=True to download it$"):
        MNIST(tmp_path)
    raw = tmp_path / "MNIST" / "raw"
    write(raw / "train-images-idx3-ubyte", images(3))
    write(raw / "train-labels-idx1-ubyte", np.array([1, 2], np.uint8))
    with pytest.raises(RuntimeError, match="3 images but 2 labels"):
        MNIST(tmp_path)
    good = idx_bytes(images(3))
    bad_cases = {
        good[:-1]: r"need 2368 bytes, the file has 2367",  # truncated data
        good + b"\x00": r"the file has 2369",  # trailing bytes
        b"\x01" + good[1:]: "must start with two zero bytes",
        good[:2] + b"\x07" + good[3:]: "unknown IDX type code 0x07",
        good[:3] + b"\x05" + good[4:]: "claims 5",
        good[:10]: "IDX header truncated",
        b"\x00\x00": "not an IDX file",
        # dims claim far more than there is: never read past the end
        good[:4] + struct.pack(">III", 2**31, 28, 28) + good[16:]: "the file has 2368",
    }
    for data, message in bad_cases.items():
        (raw / "train-images-idx3-ubyte").write_bytes(data)
        write(raw / "train-labels-idx1-ubyte", np.array([1, 2, 3], np.uint8))
        with pytest.raises(RuntimeError, match=message):
            MNIST(tmp_path)
    (raw / "train-images-idx3-ubyte").unlink()
    (raw / "train-images-idx3-ubyte.gz").write_bytes(b"not gzip at all")
    with pytest.raises(RuntimeError, match="cannot read the IDX file"):
        MNIST(tmp_path)


def test_idx_dtypes_and_shape_checks(tmp_path):
    for dtype in (np.int8, np.int16, np.int32, np.float32, np.float64):
        array = (np.arange(6).reshape(2, 3) - 2).astype(dtype)
        path = tmp_path / f"{dtype.__name__}.idx"
        path.write_bytes(idx_bytes(array))
        out = read_sn3_pascalvincent_tensor(str(path))
        np.testing.assert_array_equal(out.numpy(), array)
        assert out.numpy().dtype == dtype
    raw = tmp_path / "MNIST" / "raw"
    write(raw / "train-images-idx3-ubyte", images(2).reshape(2, 784))
    write(raw / "train-labels-idx1-ubyte", np.array([1, 2], np.uint8))
    with pytest.raises(ValueError, match="x should have 3 dimension instead of 2"):
        MNIST(tmp_path)
    write(raw / "train-images-idx3-ubyte", images(2).astype(np.int16))
    with pytest.raises(TypeError, match="x should be of dtype ember.uint8"):
        MNIST(tmp_path)


def test_emnist(tmp_path):
    raw = tmp_path / "EMNIST" / "raw"
    write(raw / "emnist-letters-train-images-idx3-ubyte", images(2))
    write(raw / "emnist-letters-train-labels-idx1-ubyte", np.array([1, 26], np.uint8))
    ds = EMNIST(tmp_path, split="letters")
    assert len(ds) == 2 and ds.classes[ds[1][1]] == "z" and ds.classes[0] == "N/A"
    assert len(EMNIST.classes_split_dict["byclass"]) == 62 and len(EMNIST.classes_split_dict["balanced"]) == 47
    with pytest.raises(ValueError, match=r"Unknown value 'bogus' for argument split. Valid values are \{'byclass', "):
        EMNIST(tmp_path, split="bogus")
    with pytest.raises(RuntimeError, match="Dataset not found"):
        EMNIST(tmp_path, split="digits")


def test_qmnist(tmp_path):
    raw = tmp_path / "QMNIST" / "raw"
    data = images(12000 // 1000)  # 12 images; test10k/test50k slice at 10000, so use the nist/test split sizes
    labels = np.arange(12 * 8, dtype=np.int32).reshape(12, 8)
    write(raw / "qmnist-train-images-idx3-ubyte", data, "gz")
    write(raw / "qmnist-train-labels-idx2-int", labels, "gz")
    ds = QMNIST(tmp_path)
    assert len(ds) == 12 and ds[3][1] == 24
    full = QMNIST(tmp_path, what="train", compat=False)
    np.testing.assert_array_equal(full[3][1].numpy(), labels[3])
    assert full.targets.dtype == ember.int64
    write(raw / "xnist-images-idx3-ubyte", data[:2], "xz")
    write(raw / "xnist-labels-idx2-int", labels[:2], "xz")
    assert len(QMNIST(tmp_path, what="nist")) == 2
    write(raw / "qmnist-test-images-idx3-ubyte", data[:3])
    write(raw / "qmnist-test-labels-idx2-int", labels[:3])
    assert len(QMNIST(tmp_path, what="test10k")) == 3 and len(QMNIST(tmp_path, what="test50k")) == 0
    assert len(QMNIST(tmp_path, train=False)) == 3
    with pytest.raises(ValueError, match=r"Unknown value 'val' for argument what"):
        QMNIST(tmp_path, what="val")
    write(raw / "qmnist-test-labels-idx2-int", labels[:3, 0].copy())
    with pytest.raises(ValueError, match="targets should have 2 dimensions instead of 1"):
        QMNIST(tmp_path, what="test")


def test_mnist_iterates_to_the_end(tmp_path):
    raw = tmp_path / "MNIST" / "raw"
    write(raw / "t10k-images-idx3-ubyte", images(3))
    write(raw / "t10k-labels-idx1-ubyte", np.array([5, 6, 7], np.uint8))
    ds = MNIST(tmp_path, train=False)
    assert [t for _, t in ds] == [5, 6, 7]  # iteration stops at IndexError
    assert ds[-1][1] == 7
    with pytest.raises(IndexError):
        ds[3]


def test_mnist_with_transforms_and_dataloader(tmp_path):
    from ember.utils.data import DataLoader
    from embervision import transforms as T
    raw = tmp_path / "MNIST" / "raw"
    data = images(5, 3)
    write(raw / "train-images-idx3-ubyte", data)
    write(raw / "train-labels-idx1-ubyte", np.array([0, 1, 2, 3, 4], np.uint8))
    transform = T.Compose([T.ConvertImageDtype(ember.float32), T.Normalize((0.1307,), (0.3081,))])
    ds = MNIST(tmp_path, transform=transform)
    batches = list(DataLoader(ds, batch_size=2))
    assert len(batches) == 3
    x, y = batches[0]
    assert tuple(x.shape) == (2, 1, 28, 28) and x.dtype == ember.float32 and y.tolist() == [0, 1]
    expected = (data[:2, None].astype(np.float64) / 255 - 0.1307) / 0.3081
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-5, atol=1e-6)
