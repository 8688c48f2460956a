"""STL10 and CelebA from tiny files in their on-disk formats."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from embervision.datasets import STL10, CelebA


def make_stl10(tmp_path, files, n_train=3, n_test=2, n_unlabeled=2):
    folder = tmp_path / "stl10_binary"
    folder.mkdir()
    rng = np.random.default_rng(0)
    arrays = {}
    for name, n in (("train", n_train), ("test", n_test), ("unlabeled", n_unlabeled)):
        arrays[name] = rng.integers(0, 256, (n, 3, 96, 96), dtype=np.uint8)  # [N, C, H, W]
        # the file stores each plane column-major
        (folder / f"{name}_X.bin").write_bytes(arrays[name].transpose(0, 1, 3, 2).tobytes())
    (folder / "train_y.bin").write_bytes(bytes([1, 10, 5][:n_train]))
    (folder / "test_y.bin").write_bytes(bytes([2, 3][:n_test]))
    (folder / "class_names.txt").write_text("\n".join(f"class{i}" for i in range(10)) + "\n")
    (folder / "fold_indices.txt").write_text("2 0\n1\n")

    class Tiny(STL10):
        train_list = [[n, files.md5(folder / n)] for n in ("train_X.bin", "train_y.bin", "unlabeled_X.bin")]
        test_list = [[n, files.md5(folder / n)] for n in ("test_X.bin", "test_y.bin")]

    return Tiny, arrays, folder


def test_stl10_splits(tmp_path, files):
    Tiny, arrays, _ = make_stl10(tmp_path, files)
    ds = Tiny(tmp_path)
    assert len(ds) == 3 and ds.classes[9] == "class9"
    img, target = ds[1]
    assert img.dtype == ember.uint8 and tuple(img.shape) == (3, 96, 96) and target == 9
    np.testing.assert_array_equal(img.numpy(), arrays["train"][1])
    assert [t for _, t in Tiny(tmp_path, split="test")] == [1, 2]
    both = Tiny(tmp_path, split="train+unlabeled")
    assert len(both) == 5 and both[4][1] == -1
    np.testing.assert_array_equal(both[4][0].numpy(), arrays["unlabeled"][1])
    assert [t for _, t in Tiny(tmp_path, split="unlabeled")] == [-1, -1]
    fold = Tiny(tmp_path, folds=0, transform=lambda t: t.shape, target_transform=lambda y: y * 10)
    assert [item for item in fold] == [((3, 96, 96), 40), ((3, 96, 96), 0)]
    assert len(Tiny(tmp_path, split="train+unlabeled", folds=1)) == 3


def test_stl10_errors(tmp_path, files):
    with pytest.raises(ValueError, match=r"Unknown value 'val' for argument split. Valid values are \{'train', 'train\+unlabeled', 'unlabeled', 'test'\}."):
        STL10(tmp_path, split="val")
    with pytest.raises(ValueError, match=r"Value for argument folds should be in the range \[0, 10\), but got 10."):
        STL10(tmp_path, folds=10)
    with pytest.raises(ValueError, match="Expected type None or int for argument folds, but got type <class 'str'>."):
        STL10(tmp_path, folds="1")
    with pytest.raises(RuntimeError, match="^Dataset not found or corrupted. You can use download=True to download it$"):
        STL10(tmp_path)
    Tiny, _, folder = make_stl10(tmp_path, files)
    with pytest.raises(RuntimeError, match="has 2 folds, fold 5"):
        Tiny(tmp_path, folds=5)
    (folder / "train_X.bin").write_bytes(b"\0" * 100)
    (folder / "train_y.bin").write_bytes(b"\x01")

    class Bad(Tiny):
        train_list = [[n, files.md5(folder / n)] for n in ("train_X.bin", "train_y.bin", "unlabeled_X.bin")]

    with pytest.raises(RuntimeError, match="100 bytes is not a whole number of 3x96x96 images"):
        Bad(tmp_path)
    (folder / "train_X.bin").write_bytes(b"\0" * 3 * 96 * 96 * 2)

    class Bad2(Tiny):
        train_list = [[n, files.md5(folder / n)] for n in ("train_X.bin", "train_y.bin", "unlabeled_X.bin")]

    with pytest.raises(RuntimeError, match="2 images but train_y.bin has 1 labels"):
        Bad2(tmp_path)


def make_celeba(tmp_path, files):
    base = tmp_path / "celeba"
    images = ["000001.jpg", "000002.jpg", "000003.jpg"]
    for i, name in enumerate(images):
        files.write_pnm(base / "img_align_celeba" / name, files.image(i, (2, 2, 3)))
    (base / "list_eval_partition.txt").write_text("000001.jpg 0\n000002.jpg 2\n000003.jpg 0\n")
    (base / "identity_CelebA.txt").write_text("000001.jpg 11\n000002.jpg 12\n000003.jpg 13\n")
    (base / "list_bbox_celeba.txt").write_text(
        "3\nimage_id x_1 y_1 width height\n000001.jpg 1 2 3 4\n000002.jpg 5 6 7 8\n000003.jpg 9 10 11 12\n")
    (base / "list_landmarks_align_celeba.txt").write_text(
        "3\nlefteye_x lefteye_y\n000001.jpg 1 2\n000002.jpg 3 4\n000003.jpg 5 6\n")
    (base / "list_attr_celeba.txt").write_text(
        "3\nSmiling Young\n000001.jpg  1 -1\n000002.jpg -1 -1\n000003.jpg -1  1\n")

    class Tiny(CelebA):
        file_list = [(fid, files.md5(base / name) if (base / name).exists() else md5, name)
                     for fid, md5, name in CelebA.file_list]

    return Tiny, base


def test_celeba(tmp_path, files):
    Tiny, _ = make_celeba(tmp_path, files)
    ds = Tiny(tmp_path, loader=files.pnm_loader)
    assert len(ds) == 2 and ds.filename == ["000001.jpg", "000003.jpg"] and ds.attr_names == ["Smiling", "Young"]
    img, attr = ds[1]
    np.testing.assert_array_equal(img.numpy(), files.image(2, (2, 2, 3)).transpose(2, 0, 1))
    assert attr.dtype == ember.int64 and attr.tolist() == [0, 1]
    ds = Tiny(tmp_path, split="all", target_type=["identity", "bbox", "landmarks", "attr"], loader=files.pnm_loader)
    _, (identity, bbox, landmarks, attr) = ds[1]
    assert int(identity) == 12 and bbox.tolist() == [5, 6, 7, 8] and landmarks.tolist() == [3, 4]
    assert attr.tolist() == [0, 0]
    assert Tiny(tmp_path, split="test", target_type=[], loader=files.pnm_loader)[0][1] is None
    assert Tiny(tmp_path, split="VALID", loader=files.pnm_loader).__len__() == 0
    with pytest.raises(RuntimeError, match="target_transform is specified but target_type is empty"):
        Tiny(tmp_path, target_type=[], target_transform=str)
    with pytest.raises(ValueError, match=r"Unknown value 'val' for argument split. Valid values are \{'train', 'valid', 'test', 'all'\}."):
        Tiny(tmp_path, split="val")
    with pytest.raises(ValueError, match="Unknown value 'age' for argument target_type"):
        Tiny(tmp_path, target_type="age")
    with pytest.raises(RuntimeError, match="^Dataset not found or corrupted."):
        CelebA(tmp_path)
    with pytest.raises(RuntimeError, match="Google Drive"):
        Tiny(tmp_path, download=True)


def test_celeba_rejects_misaligned_tables(tmp_path, files):
    Tiny, base = make_celeba(tmp_path, files)
    (base / "identity_CelebA.txt").write_text("000001.jpg 11\n000003.jpg 13\n000002.jpg 12\n")

    class Again(CelebA):
        file_list = [(fid, files.md5(base / name) if (base / name).exists() else md5, name)
                     for fid, md5, name in CelebA.file_list]

    with pytest.raises(RuntimeError, match="the identity file does not list the 3 images"):
        Again(tmp_path)
    (base / "identity_CelebA.txt").write_text("000001.jpg 11\n000002.jpg x\n000003.jpg 13\n")

    class Again2(Again):
        file_list = [(fid, files.md5(base / name) if (base / name).exists() else md5, name)
                     for fid, md5, name in CelebA.file_list]

    with pytest.raises(RuntimeError, match="non-integer field"):
        Again2(tmp_path)
