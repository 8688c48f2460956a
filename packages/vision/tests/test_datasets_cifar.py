"""CIFAR10/CIFAR100 from tiny pickled batches written here; the data-only unpickler."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest

import ember
from embervision.datasets import CIFAR10, CIFAR100
from embervision.datasets.cifar import _load_pickle


def batch(n, seed, fine=False):
    data = np.random.default_rng(seed).integers(0, 256, (n, 3072), dtype=np.uint8)
    labels = [int(v) for v in np.random.default_rng(seed + 100).integers(0, 10, n)]
    return {"batch_label": "tiny", ("fine_labels" if fine else "labels"): labels, "data": data,
            "filenames": [f"img{i}.png" for i in range(n)]}


def dump(path, obj, protocol=2):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=protocol)


def make_cifar10(tmp_path, files):
    """Batches in root/cifar-10-batches-py and a subclass whose md5 lists match them."""
    folder = tmp_path / "cifar-10-batches-py"
    batches = {name: batch(2, i) for i, name in enumerate(["data_batch_1", "data_batch_2", "test_batch"])}
    for name, value in batches.items():
        dump(folder / name, value)
    dump(folder / "batches.meta", {"label_names": [f"c{i}" for i in range(10)], "num_vis": 3072})

    class Tiny(CIFAR10):
        train_list = [[n, files.md5(folder / n)] for n in ("data_batch_1", "data_batch_2")]
        test_list = [["test_batch", files.md5(folder / "test_batch")]]
        meta = {"filename": "batches.meta", "key": "label_names", "md5": files.md5(folder / "batches.meta")}

    return Tiny, batches, folder


def test_cifar10(tmp_path, files):
    Tiny, batches, _ = make_cifar10(tmp_path, files)
    ds = Tiny(str(tmp_path))
    assert len(ds) == 4 and ds.classes[3] == "c3" and ds.class_to_idx["c9"] == 9
    assert ds.data.shape == (4, 32, 32, 3)
    img, target = ds[3]
    expected = batches["data_batch_2"]["data"][1].reshape(3, 32, 32)
    assert img.dtype == ember.uint8 and tuple(img.shape) == (3, 32, 32)
    np.testing.assert_array_equal(img.numpy(), expected)
    assert type(target) is int and target == batches["data_batch_2"]["labels"][1]
    test = Tiny(tmp_path, train=False, transform=lambda t: t.float() / 255, target_transform=lambda y: -y)
    img, target = test[0]
    np.testing.assert_allclose(img.numpy(), batches["test_batch"]["data"][0].reshape(3, 32, 32) / 255, rtol=1e-6)
    assert target == -batches["test_batch"]["labels"][0]
    assert "Split: Test" in repr(test)


def test_cifar100_protocols(tmp_path, files):
    folder = tmp_path / "cifar-100-python"
    dump(folder / "train", batch(3, 5, fine=True), protocol=4)
    dump(folder / "test", batch(1, 6, fine=True), protocol=5)
    dump(folder / "meta", {"fine_label_names": ["apple", "bee"], "coarse_label_names": ["x"]})

    class Tiny(CIFAR100):
        train_list = [["train", files.md5(folder / "train")]]
        test_list = [["test", files.md5(folder / "test")]]
        meta = {"filename": "meta", "key": "fine_label_names", "md5": files.md5(folder / "meta")}

    ds = Tiny(tmp_path)
    assert len(ds) == 3 and ds.classes == ["apple", "bee"] and ds[2][1] == batch(3, 5, True)["fine_labels"][2]


def test_cifar_missing_corrupt_meta(tmp_path, files):
    with pytest.raises(RuntimeError, match="^Dataset not found or corrupted. You can use download=True to download it$"):
        CIFAR10(tmp_path)
    Tiny, _, folder = make_cifar10(tmp_path, files)
    with open(folder / "test_batch", "ab") as f:  # any file of either split failing its md5
        f.write(b"x")
    with pytest.raises(RuntimeError, match="^Dataset not found or corrupted"):
        Tiny(tmp_path)
    Tiny, _, folder = make_cifar10(tmp_path, files)
    (folder / "batches.meta").write_bytes(b"changed")
    with pytest.raises(RuntimeError, match="^Dataset metadata file not found or corrupted. You can use download=True"):
        Tiny(tmp_path)


@pytest.mark.parametrize("entry,message", [
    ({"labels": [1]}, "a dict with a 'data' entry"),
    ({"data": np.zeros((1, 3071), np.uint8), "labels": [1]}, r"uint8 array of shape \[N, 3072\]"),
    ({"data": np.zeros((1, 3072), np.float32), "labels": [1]}, r"uint8 array"),
    ({"data": np.zeros((2, 3072), np.uint8), "labels": [1]}, "list of 2 ints"),
    ({"data": np.zeros((1, 3072), np.uint8), "labels": ["a"]}, "list of 1 ints"),
])
def test_cifar_bad_batch_contents(tmp_path, files, entry, message):
    folder = tmp_path / "cifar-10-batches-py"
    dump(folder / "data_batch_1", entry)

    class Tiny(CIFAR10):
        train_list = [["data_batch_1", files.md5(folder / "data_batch_1")]]
        test_list = []

    with pytest.raises(RuntimeError, match=message):
        Tiny(tmp_path)


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _EvilEval:
    def __reduce__(self):
        return (eval, ("__import__('os').getpid()",))


def test_malicious_pickle_runs_nothing(tmp_path, files):
    marker = tmp_path / "pwned"
    folder = tmp_path / "cifar-10-batches-py"
    dump(folder / "data_batch_1", {"data": _Evil(marker), "labels": [0]})
    with pytest.raises(RuntimeError, match=r"not a CIFAR batch this loader can read safely .*system"):
        _load_pickle(str(folder / "data_batch_1"))

    class Tiny(CIFAR10):  # even with matching checksums (a hostile mirror), the dataset refuses it
        train_list = [["data_batch_1", files.md5(folder / "data_batch_1")]]
        test_list = []

    with pytest.raises(RuntimeError, match="not a CIFAR batch"):
        Tiny(tmp_path)
    assert not marker.exists()
    dump(folder / "x", _EvilEval(), protocol=0)
    with pytest.raises(RuntimeError, match="eval"):
        _load_pickle(str(folder / "x"))
    (folder / "y").write_bytes(pickle.dumps({"a": 1})[:-3])
    with pytest.raises(RuntimeError, match="truncated"):
        _load_pickle(str(folder / "y"))


def _python2_batch(data, labels):
    """A batch as Python 2's cPickle (protocol 2) wrote CIFAR: 8-bit strings (BINSTRING) for the keys and
    the array bytes, the array rebuilt by numpy.core.multiarray._reconstruct and its state."""
    import struct

    def s(text):  # SHORT_BINSTRING / BINSTRING
        raw = text if isinstance(text, bytes) else text.encode("latin1")
        return (b"U" + bytes([len(raw)]) if len(raw) < 256 else b"T" + struct.pack("<i", len(raw))) + raw

    n = data.shape[0]
    array = (b"cnumpy.core.multiarray\n_reconstruct\n" + b"cnumpy\nndarray\n" + b"K\x00\x85" + s("b") + b"\x87R"
             + b"(K\x01" + b"K" + bytes([n]) + b"M\x00\x0c\x86"
             + b"cnumpy\ndtype\n" + s("u1") + b"K\x00K\x01\x87R" + b"(K\x03" + s("|") + b"NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tb"
             + b"\x89" + s(data.tobytes()) + b"tb")
    label_list = b"](" + b"".join(b"K" + bytes([v]) for v in labels) + b"e"
    return b"\x80\x02}(" + s("data") + array + s("labels") + label_list + s("batch_label") + s("training batch 1 of 5") + b"u."


def test_python2_pickled_batch(tmp_path):
    data = np.random.default_rng(3).integers(0, 256, (2, 3072), dtype=np.uint8)
    blob = _python2_batch(data, [6, 9])
    reference = pickle.loads(blob, encoding="latin1")  # the trusted reader, on a file built here
    np.testing.assert_array_equal(reference["data"], data)
    (tmp_path / "batch").write_bytes(blob)
    entry = _load_pickle(str(tmp_path / "batch"))
    assert entry["labels"] == [6, 9] and entry["batch_label"] == "training batch 1 of 5"
    assert entry["data"].dtype == np.uint8
    np.testing.assert_array_equal(entry["data"], data)
    # only the flags 0 and 1 are taken as Python 2's bools; anything else is still refused
    bad = blob.replace(b"U\x02u1K\x00K\x01", b"U\x02u1K\x05K\x01")
    assert bad != blob
    (tmp_path / "bad").write_bytes(bad)
    with pytest.raises(RuntimeError, match="not a plain dtype code"):
        _load_pickle(str(tmp_path / "bad"))
