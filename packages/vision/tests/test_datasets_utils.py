"""embervision.datasets.utils and the VisionDataset base: checksums, verify_str_arg, safe archive
extraction, downloads from a local HTTP server."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import os
import tarfile
import threading
import zipfile

import pytest

from embervision.datasets import StandardTransform, VisionDataset
from embervision.datasets import utils as U

# ----------------------------------------------------------------------------- checksums, arguments

def test_md5_and_integrity(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"ember" * 1000)
    digest = hashlib.md5(b"ember" * 1000).hexdigest()
    assert U.calculate_md5(path) == digest
    assert U.calculate_md5(path, chunk_size=7) == digest
    assert U.check_md5(path, digest) and not U.check_md5(path, "0" * 32)
    assert U.check_integrity(path) and U.check_integrity(path, digest)
    assert not U.check_integrity(path, "0" * 32)
    assert not U.check_integrity(tmp_path / "missing")
    assert not U.check_integrity(tmp_path)  # a directory is not a file


def test_verify_str_arg():
    assert U.verify_str_arg("train", "split", ("train", "test")) == "train"
    assert U.verify_str_arg("anything") == "anything"
    with pytest.raises(ValueError, match=r"^Unknown value 'val' for argument split. Valid values are \{'train', 'test'\}.$"):
        U.verify_str_arg("val", "split", ("train", "test"))
    with pytest.raises(ValueError, match=r"^Expected type str for argument split, but got type <class 'int'>.$"):
        U.verify_str_arg(3, "split", ("train",))
    with pytest.raises(ValueError, match="^custom$"):
        U.verify_str_arg("x", "split", ("train",), custom_msg="custom")


# ----------------------------------------------------------------------------- extraction

def _tar(path, members, mode="w"):
    """members: (TarInfo, bytes or None)."""
    with tarfile.open(path, mode) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)


def _file(name, data=b"x"):
    return tarfile.TarInfo(name), data


def _link(name, target, kind=tarfile.SYMTYPE):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


@pytest.mark.parametrize("suffix,mode", [(".tar", "w"), (".tar.gz", "w:gz"), (".tgz", "w:gz"),
                                         (".tar.bz2", "w:bz2"), (".tar.xz", "w:xz")])
def test_extract_tar(tmp_path, suffix, mode):
    archive = tmp_path / f"a{suffix}"
    sub = tarfile.TarInfo("d")
    sub.type = tarfile.DIRTYPE
    _tar(archive, [(sub, None), _file("d/one.txt", b"1"), _file("two.txt", b"22"), _link("d/ln", "one.txt")], mode)
    out = U.extract_archive(archive, tmp_path / "out")
    assert out == str(tmp_path / "out")
    assert (tmp_path / "out/d/one.txt").read_bytes() == b"1"
    assert (tmp_path / "out/two.txt").read_bytes() == b"22"
    assert (tmp_path / "out/d/ln").read_bytes() == b"1"  # a symlink inside the root is kept


def test_extract_tar_with_dot_root(tmp_path):
    # "tar -C dir ." writes a "./" directory entry and "./name" members
    root = tarfile.TarInfo("./")
    root.type = tarfile.DIRTYPE
    _tar(tmp_path / "a.tar", [(root, None), _file("./a.txt", b"A")])
    U.extract_archive(tmp_path / "a.tar", tmp_path / "out")
    assert (tmp_path / "out" / "a.txt").read_bytes() == b"A"


def test_extract_zip_and_gz(tmp_path):
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("d/one.txt", b"1")
    U.extract_archive(archive, tmp_path / "out", remove_finished=True)
    assert (tmp_path / "out/d/one.txt").read_bytes() == b"1" and not archive.exists()
    gz = tmp_path / "data.bin.gz"
    gz.write_bytes(gzip.compress(b"payload"))
    assert U.extract_archive(gz) == str(tmp_path / "data.bin")  # default: beside the archive
    assert (tmp_path / "data.bin").read_bytes() == b"payload"
    with pytest.raises(RuntimeError, match="Unknown compression or archive type: '.rar'"):
        U.extract_archive(tmp_path / "a.rar")


@pytest.mark.parametrize("member,message", [
    (_file("../evil.txt"), r"refusing to extract archive member '../evil.txt': it contains '..'"),
    (_file("a/../../evil.txt"), r"'a/../../evil.txt': it contains '..'"),
    (_file("/tmp/evil.txt"), r"'/tmp/evil.txt': it is an absolute path"),
    (_link("ln", "/etc"), r"archive member 'ln': it is a symlink to '/etc' outside the extraction root"),
    (_link("ln", "../outside"), r"'ln': it is a symlink to '../outside' outside"),
    (_link("ln", "sub/../.."), r"'ln': it is a symlink to 'sub/../..' outside"),
    (_link("hl", "../victim", tarfile.LNKTYPE), r"'hl': it is a hardlink to '../victim' outside"),
    (_link("hl", "/etc/passwd", tarfile.LNKTYPE), r"'hl': it is a hardlink to '/etc/passwd' outside"),
    (_link("dev", "", tarfile.CHRTYPE), r"'dev': it is a device, FIFO or other special file"),
    (_link("fifo", "", tarfile.FIFOTYPE), r"'fifo': it is a device, FIFO or other special file"),
    (_file("./"), r"'./': a file cannot replace the extraction root"),
])
def test_extract_tar_rejects_escapes(tmp_path, member, message):
    archive = tmp_path / "bad.tar"
    # a harmless member first: nothing at all may be written when a later one is bad
    _tar(archive, [_file("fine.txt"), member])
    with pytest.raises(ValueError, match=message):
        U.extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "fine.txt").exists()
    assert not (tmp_path / "evil.txt").exists()


def test_extract_tar_rejects_writing_through_symlink(tmp_path):
    # "ln" -> "." passes the lexical check, but "ln/.." would; and a link to a directory outside made
    # by an earlier extraction must not be written through
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "out"
    root.mkdir()
    os.symlink(outside, root / "escape")
    archive = tmp_path / "bad.tar"
    _tar(archive, [_file("escape/evil.txt")])
    with pytest.raises(ValueError, match=r"'escape/evil.txt': it would be written through a symlink outside"):
        U.extract_archive(archive, root)
    assert not (outside / "evil.txt").exists()


@pytest.mark.parametrize("name,message", [("../evil.txt", "contains '..'"), ("/abs.txt", "absolute path"),
                                          ("C:/x.txt", "absolute path"), ("a\\..\\..\\x.txt", "contains '..'")])
def test_extract_zip_rejects_escapes(tmp_path, name, message):
    archive = tmp_path / "bad.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("fine.txt", b"1")
        z.writestr(zipfile.ZipInfo(name), b"evil")
    with pytest.raises(ValueError, match=f"archive member {name!r}".replace("\\", "\\\\") + ".*" + message):
        U.extract_archive(archive, tmp_path / "out")
    assert not (tmp_path / "out" / "fine.txt").exists()


def test_extract_zip_rejects_symlink_entries(tmp_path):
    archive = tmp_path / "bad.zip"
    info = zipfile.ZipInfo("ln")
    info.external_attr = (0o120777 << 16)
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(info, "/etc/passwd")
    with pytest.raises(ValueError, match="'ln': it is a symlink or special file"):
        U.extract_archive(archive, tmp_path / "out")


# ----------------------------------------------------------------------------- downloads

@pytest.fixture
def http_root(tmp_path):
    """(directory served, base URL) of an HTTP server on 127.0.0.1 in a thread."""
    served = tmp_path / "served"
    served.mkdir()

    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(served), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_download_url_checks_md5_and_sha256(http_root, tmp_path):
    served, base = http_root
    (served / "blob.bin").write_bytes(b"abc" * 100)
    md5 = hashlib.md5(b"abc" * 100).hexdigest()
    sha = hashlib.sha256(b"abc" * 100).hexdigest()
    dest = tmp_path / "dl"
    U.download_url(f"{base}/blob.bin", dest, md5=md5, sha256=sha[:12])
    assert (dest / "blob.bin").read_bytes() == b"abc" * 100
    # present and intact: not downloaded again (the server no longer has it)
    (served / "blob.bin").unlink()
    U.download_url(f"{base}/blob.bin", dest, md5=md5)
    (served / "blob.bin").write_bytes(b"tampered")
    with pytest.raises(RuntimeError, match="^File not found or corrupted.$"):
        U.download_url(f"{base}/blob.bin", dest, filename="other.bin", md5=md5)
    assert not (dest / "other.bin").exists()
    with pytest.raises(RuntimeError, match="invalid hash value"):
        U.download_url(f"{base}/blob.bin", dest, filename="third.bin", sha256=sha[:12])
    assert not (dest / "third.bin").exists()


def test_download_and_extract_archive(http_root, tmp_path):
    served, base = http_root
    with zipfile.ZipFile(served / "pack.zip", "w") as z:
        z.writestr("inner/a.txt", b"A")
    U.download_and_extract_archive(f"{base}/pack.zip", tmp_path / "dl", extract_root=tmp_path / "x",
                                   md5=U.calculate_md5(served / "pack.zip"), remove_finished=True)
    assert (tmp_path / "x/inner/a.txt").read_bytes() == b"A"
    assert not (tmp_path / "dl/pack.zip").exists()


# ----------------------------------------------------------------------------- VisionDataset

class _Tiny(VisionDataset):
    def __init__(self, root, **kwargs):
        super().__init__(root, **kwargs)
        self.items = [(1, 10), (2, 20)]

    def __getitem__(self, index):
        item, target = self.items[index]
        return self.transforms(item, target) if self.transforms is not None else (item, target)

    def __len__(self):
        return len(self.items)

    def extra_repr(self):
        return "Split: tiny"


class _Named:
    def __init__(self, name):
        self.name = name

    def __call__(self, x):
        return (self.name, x)

    def __repr__(self):
        return f"{self.name}()"


def test_vision_dataset_transforms_and_repr(tmp_path):
    ds = _Tiny(str(tmp_path), transform=_Named("T"), target_transform=_Named("U"))
    assert ds[1] == (("T", 2), ("U", 20))
    assert isinstance(ds.transforms, StandardTransform)
    assert repr(ds) == (f"Dataset _Tiny\n    Number of datapoints: 2\n    Root location: {tmp_path}\n    Split: tiny\n"
                        "    StandardTransform\nTransform: T()\nTarget transform: U()")
    joint = _Tiny("~/data", transforms=lambda x, y: (y, x))
    assert joint[0] == (10, 1) and joint.root == os.path.expanduser("~/data")
    with pytest.raises(ValueError, match="^Only transforms or transform/target_transform can be passed as argument$"):
        _Tiny("r", transforms=lambda x, y: (x, y), transform=_Named("T"))
    assert repr(StandardTransform(None, _Named("U"))) == "StandardTransform\nTarget transform: U()"
    assert VisionDataset(None).root is None


def test_mnist_download_checks_md5(http_root, tmp_path):
    import numpy as np

    from embervision.datasets import MNIST
    served, base = http_root
    images = np.arange(2 * 28 * 28, dtype=np.uint8).reshape(2, 28, 28)
    payloads = {
        "train-images-idx3-ubyte.gz": gzip.compress(b"\0\0\x08\x03" + (2).to_bytes(4, "big") + (28).to_bytes(4, "big") * 2
                                                    + images.tobytes()),
        "train-labels-idx1-ubyte.gz": gzip.compress(b"\0\0\x08\x01" + (2).to_bytes(4, "big") + bytes([4, 2])),
    }
    for name, data in payloads.items():
        (served / name).write_bytes(data)

    class Local(MNIST):
        mirrors = [f"{base}/missing/", f"{base}/"]  # the first mirror 404s
        resources = [(name, hashlib.md5(data).hexdigest()) for name, data in payloads.items()]

    with pytest.raises(RuntimeError, match="Dataset not found"):
        Local(tmp_path)
    ds = Local(tmp_path, download=True)
    assert len(ds) == 2 and ds[1][1] == 2 and ds[1][0].numpy()[0].tolist() == images[1].tolist()
    assert (tmp_path / "Local" / "raw" / "train-images-idx3-ubyte").is_file()

    class Tampered(MNIST):
        mirrors = [f"{base}/"]
        resources = [(name, "0" * 32) for name in payloads]

    with pytest.raises(RuntimeError, match="^File not found or corrupted.$"):
        Tampered(tmp_path, download=True)


def test_cifar_download_and_extract(http_root, tmp_path):
    import pickle

    import numpy as np

    from embervision.datasets import CIFAR10
    served, base = http_root
    folder = tmp_path / "build" / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    data = np.random.default_rng(0).integers(0, 256, (2, 3072), dtype=np.uint8)
    (folder / "test_batch").write_bytes(pickle.dumps({"data": data, "labels": [3, 4]}, protocol=2))
    (folder / "batches.meta").write_bytes(pickle.dumps({"label_names": list("abcdefghij")}, protocol=2))
    with tarfile.open(served / "cifar.tar.gz", "w:gz") as tar:
        tar.add(folder, arcname="cifar-10-batches-py")

    class Local(CIFAR10):
        url = f"{base}/cifar.tar.gz"
        filename = "cifar.tar.gz"
        tgz_md5 = U.calculate_md5(served / "cifar.tar.gz")
        train_list = []
        test_list = [["test_batch", U.calculate_md5(folder / "test_batch")]]
        meta = {"filename": "batches.meta", "key": "label_names", "md5": U.calculate_md5(folder / "batches.meta")}

    ds = Local(tmp_path / "root", train=False, download=True)
    assert len(ds) == 2 and ds[1][1] == 4 and ds.classes[4] == "e"
    np.testing.assert_array_equal(ds[0][0].numpy().reshape(-1), data[0])


def test_dataset_download_refuses_escaping_archive(http_root, tmp_path):
    from embervision.datasets import CIFAR10
    served, base = http_root
    with tarfile.open(served / "evil.tar.gz", "w:gz") as tar:
        info = tarfile.TarInfo("cifar-10-batches-py/../../../escaped.txt")
        info.size = 4
        tar.addfile(info, io.BytesIO(b"evil"))

    class Evil(CIFAR10):
        url = f"{base}/evil.tar.gz"
        filename = "evil.tar.gz"
        tgz_md5 = U.calculate_md5(served / "evil.tar.gz")  # a matching checksum does not make it safe

    root = tmp_path / "a" / "b" / "root"
    with pytest.raises(ValueError, match=r"refusing to extract archive member 'cifar-10-batches-py/../../../escaped.txt'"):
        Evil(root, download=True)
    assert not list(tmp_path.rglob("escaped.txt"))


def test_embervision_exposes_datasets_lazily():
    import embervision
    assert "datasets" in dir(embervision)
    assert embervision.datasets.MNIST.__module__ == "embervision.datasets.mnist"


def _tar_gz(path, files_by_name):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files_by_name.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _ppm(seed):
    import numpy as np
    pixels = np.random.default_rng(seed).integers(0, 256, (2, 2, 3), dtype=np.uint8)
    return b"P6\n2 2\n255\n" + pixels.tobytes(), pixels


def test_emnist_download(http_root, tmp_path):
    import numpy as np

    from embervision.datasets import EMNIST
    served, base = http_root
    images = np.arange(3 * 28 * 28, dtype=np.uint8).reshape(3, 28, 28)
    idx_images = b"\0\0\x08\x03" + (3).to_bytes(4, "big") + (28).to_bytes(4, "big") * 2 + images.tobytes()
    idx_labels = b"\0\0\x08\x01" + (3).to_bytes(4, "big") + bytes([7, 8, 9])
    with zipfile.ZipFile(served / "gzip.zip", "w") as z:
        z.writestr("gzip/emnist-digits-train-images-idx3-ubyte.gz", gzip.compress(idx_images))
        z.writestr("gzip/emnist-digits-train-labels-idx1-ubyte.gz", gzip.compress(idx_labels))

    class Local(EMNIST):
        url = f"{base}/gzip.zip"
        md5 = U.calculate_md5(served / "gzip.zip")

    ds = Local(tmp_path, split="digits", download=True)
    assert [t for _, t in ds] == [7, 8, 9] and ds.classes[9] == "9"
    assert not (tmp_path / "Local" / "raw" / "gzip").exists()  # the intermediate folder is removed


def test_dtd_pets_flowers_downloads(http_root, tmp_path):
    import numpy as np

    from embervision.datasets import DTD, Flowers102, OxfordIIITPet
    from embervision.datasets.folder import default_loader
    served, base = http_root
    ppm, pixels = _ppm(0)
    _tar_gz(served / "dtd.tar.gz", {"dtd/labels/train1.txt": b"banded/b.jpg\n", "dtd/images/banded/b.jpg": ppm})

    class LocalDTD(DTD):
        _URL = f"{base}/dtd.tar.gz"
        _MD5 = U.calculate_md5(served / "dtd.tar.gz")

    img, label = LocalDTD(tmp_path, download=True, loader=default_loader)[0]
    assert label == 0
    np.testing.assert_array_equal(img.numpy(), pixels.transpose(2, 0, 1))

    _tar_gz(served / "images.tar.gz", {"images/Abyssinian_1.jpg": ppm})
    _tar_gz(served / "annotations.tar.gz", {"annotations/trainval.txt": b"Abyssinian_1 1 1 1\n"})

    class LocalPet(OxfordIIITPet):
        _RESOURCES = tuple((f"{base}/{name}", U.calculate_md5(served / name))
                           for name in ("images.tar.gz", "annotations.tar.gz"))

    pets = LocalPet(tmp_path, download=True)
    assert pets.classes == ["Abyssinian"] and pets[0][1] == 0

    import importlib.util
    import pathlib
    spec = importlib.util.spec_from_file_location("mat_writer", pathlib.Path(__file__).parent / "test_datasets_matlab.py")
    writer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(writer)
    mats = {"imagelabels.mat": writer.mat_bytes({"labels": np.array([[4]], np.uint8)}),
            "setid.mat": writer.mat_bytes({"trnid": np.array([[1]], np.uint16), "valid": np.array([[1]], np.uint16),
                                           "tstid": np.array([[1]], np.uint16)})}
    for name, data in mats.items():
        (served / name).write_bytes(data)
    _tar_gz(served / "102flowers.tgz", {"jpg/image_00001.jpg": ppm})

    class LocalFlowers(Flowers102):
        _download_url_prefix = f"{base}/"
        _file_dict = {"image": ("102flowers.tgz", U.calculate_md5(served / "102flowers.tgz")),
                      **{key: (name, hashlib.md5(mats[name]).hexdigest())
                         for key, name in (("label", "imagelabels.mat"), ("setid", "setid.mat"))}}

    flowers = LocalFlowers(tmp_path, split="val", download=True)
    img, label = flowers[0]
    assert label == 3
    np.testing.assert_array_equal(img.numpy(), pixels.transpose(2, 0, 1))
