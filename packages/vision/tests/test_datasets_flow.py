"""Optical-flow datasets and their flow readers (.flo, .pfm, KITTI 16-bit PNG encoding)."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import ember
from embervision.datasets import HD1K, FlyingChairs, FlyingThings3D, KittiFlow, Sintel
from embervision.datasets._optical_flow import _flow_and_mask_from_uint16, _read_flo
from embervision.datasets.utils import _read_pfm


def flo_bytes(flow):
    """[2, H, W] float array -> Middlebury .flo bytes."""
    _, h, w = flow.shape
    return b"PIEH" + struct.pack("<ii", w, h) + flow.transpose(1, 2, 0).astype("<f4").tobytes()


def pfm_bytes(array, little=True):
    """[C, H, W] with C 1 or 3 -> PFM bytes (rows bottom to top)."""
    c, h, w = array.shape
    head = (b"PF" if c == 3 else b"Pf") + f"\n{w} {h}\n{-1.0 if little else 1.0}\n".encode()
    return head + np.flip(array, axis=1).transpose(1, 2, 0).astype("<f4" if little else ">f4").tobytes()


def flow(seed, h=2, w=3):
    return np.random.default_rng(seed).standard_normal((2, h, w)).astype(np.float32)


def test_read_flo(tmp_path):
    f = flow(0)
    (tmp_path / "a.flo").write_bytes(flo_bytes(f))
    out = _read_flo(str(tmp_path / "a.flo"))
    assert out.dtype == np.float32 and out.shape == (2, 2, 3)
    np.testing.assert_array_equal(out, f)
    cases = {
        b"XXXX" + flo_bytes(f)[4:]: "Magic number incorrect. Invalid .flo file",
        flo_bytes(f)[:-1]: "needs 60 bytes, the file has 59",
        flo_bytes(f) + b"\0": "the file has 61",
        b"PIEH" + struct.pack("<ii", -1, 2): "size -1x2 is not valid",
        b"PIEH" + struct.pack("<ii", 1 << 20, 1 << 20): "is not valid",
        b"PIEH\0": "header truncated",
    }
    for data, message in cases.items():
        (tmp_path / "b.flo").write_bytes(data)
        with pytest.raises(ValueError, match=message):
            _read_flo(str(tmp_path / "b.flo"))


@pytest.mark.parametrize("little", [True, False])
def test_read_pfm(tmp_path, little):
    three = np.random.default_rng(1).standard_normal((3, 2, 4)).astype(np.float32)
    (tmp_path / "a.pfm").write_bytes(pfm_bytes(three, little))
    np.testing.assert_array_equal(_read_pfm(tmp_path / "a.pfm"), three[:2])
    np.testing.assert_array_equal(_read_pfm(tmp_path / "a.pfm", slice_channels=3), three)
    one = three[:1]
    (tmp_path / "b.pfm").write_bytes(pfm_bytes(one, little))
    np.testing.assert_array_equal(_read_pfm(tmp_path / "b.pfm"), one)
    good = pfm_bytes(three, little)
    for data, message in {b"P6\n1 1\n-1\n" + b"\0" * 12: "Invalid PFM file", good[:-4]: "needs 96 bytes of data, found 92",
                          b"PF\n2 x\n-1\n": "Malformed PFM header", b"PF\n1 1\nabc\n" + b"\0" * 12: "Malformed PFM scale",
                          b"PF\n1 1\n0\n" + b"\0" * 12: "Malformed PFM scale 0.0"}.items():
        (tmp_path / "c.pfm").write_bytes(data)
        with pytest.raises(ValueError, match=message):
            _read_pfm(tmp_path / "c.pfm")


def test_kitti_flow_encoding():
    raw = np.array([[[2**15, 2**15 + 64]], [[2**15 - 128, 0]], [[1, 0]]], dtype=np.uint16)
    flow, valid = _flow_and_mask_from_uint16(raw)
    np.testing.assert_array_equal(flow, [[[0.0, 1.0]], [[-2.0, -512.0]]])
    assert valid.dtype == bool and valid.tolist() == [[True, False]]
    with pytest.raises(ValueError, match="a KITTI flow PNG has 3 channels"):
        _flow_and_mask_from_uint16(raw[:2])


def test_flying_chairs(tmp_path, files):
    data = tmp_path / "FlyingChairs" / "data"
    for i in range(1, 4):
        files.write_pnm(data / f"{i:05d}_img1.ppm", files.image(10 * i, (2, 3, 3)))
        files.write_pnm(data / f"{i:05d}_img2.ppm", files.image(10 * i + 1, (2, 3, 3)))
        (data / f"{i:05d}_flow.flo").write_bytes(flo_bytes(flow(i)))
    (tmp_path / "FlyingChairs" / "FlyingChairs_train_val.txt").write_text("1\n2\n1\n")
    ds = FlyingChairs(tmp_path)  # .ppm frames: the default loader decodes them itself
    assert len(ds) == 2
    img1, img2, f = ds[1]
    assert img1.dtype == ember.uint8 and tuple(img1.shape) == (3, 2, 3)
    np.testing.assert_array_equal(img1.numpy(), files.image(30, (2, 3, 3)).transpose(2, 0, 1))
    np.testing.assert_array_equal(img2.numpy(), files.image(31, (2, 3, 3)).transpose(2, 0, 1))
    np.testing.assert_array_equal(f, flow(3))
    val = FlyingChairs(tmp_path, split="val", transforms=lambda a, b, f, m: (a, b, f, np.ones(f.shape[1:], bool)))
    assert len(val) == 1 and len(val[0]) == 4  # a transform that makes a mask gets a 4-tuple back
    assert len(3 * val) == 3
    with pytest.raises(ValueError, match=r"Unknown value 'test' for argument split. Valid values are \{'train', 'val'\}."):
        FlyingChairs(tmp_path, split="test")
    (tmp_path / "FlyingChairs" / "FlyingChairs_train_val.txt").write_text("1\n3\n")
    with pytest.raises(RuntimeError, match="expected a 1 or 2 for each of the 3 pairs"):
        FlyingChairs(tmp_path)
    (tmp_path / "FlyingChairs" / "FlyingChairs_train_val.txt").unlink()
    with pytest.raises(FileNotFoundError, match="The FlyingChairs_train_val.txt file was not found"):
        FlyingChairs(tmp_path)


def test_sintel(tmp_path, files):
    base = tmp_path / "Sintel"
    for pass_name in ("clean", "final"):
        for scene, n in (("alley", 3), ("bamboo", 2)):
            for i in range(n):
                files.write_pnm(base / "training" / pass_name / scene / f"frame_{i:04d}.png",
                                files.image(i + (100 if pass_name == "final" else 0), (2, 3, 3)))
    for scene, n in (("alley", 2), ("bamboo", 1)):
        for i in range(n):
            (base / "training" / "flow" / scene).mkdir(parents=True, exist_ok=True)
            (base / "training" / "flow" / scene / f"frame_{i:04d}.flo").write_bytes(flo_bytes(flow(len(scene) + i)))
    files.write_pnm(base / "test" / "clean" / "x" / "frame_0000.png", files.image(7, (2, 3, 3)))
    files.write_pnm(base / "test" / "clean" / "x" / "frame_0001.png", files.image(8, (2, 3, 3)))
    ds = Sintel(tmp_path, loader=files.pnm_loader)
    assert len(ds) == 3
    img1, img2, f = ds[1]
    np.testing.assert_array_equal(img2.numpy(), files.image(2, (2, 3, 3)).transpose(2, 0, 1))
    np.testing.assert_array_equal(f, flow(6))
    both = Sintel(tmp_path, pass_name="both", loader=files.pnm_loader)
    assert len(both) == 6
    np.testing.assert_array_equal(both[3][0].numpy(), files.image(100, (2, 3, 3)).transpose(2, 0, 1))
    np.testing.assert_array_equal(both[3][2], flow(5))
    test = Sintel(tmp_path, split="test", loader=files.pnm_loader)
    assert len(test) == 1 and test[0][2] is None
    with pytest.raises(ValueError, match=r"Unknown value 'albedo' for argument pass_name"):
        Sintel(tmp_path, pass_name="albedo")
    (base / "training" / "flow" / "bamboo" / "frame_0000.flo").unlink()
    with pytest.raises(RuntimeError, match="Sintel scene bamboo: 2 frames need 1 flow files, found 0"):
        Sintel(tmp_path)


def test_flying_things3d(tmp_path, files):
    base = tmp_path / "FlyingThings3D"
    seq = "A/0000"
    for i in range(3):
        files.write_pnm(base / "frames_cleanpass" / "TRAIN" / seq / "left" / f"{6 + i:04d}.png", files.image(i, (2, 2, 3)))
        for direction in ("into_future", "into_past"):
            path = base / "optical_flow" / "TRAIN" / seq / direction / "left" / f"OpticalFlowInto_{6 + i:04d}.pfm"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(pfm_bytes(np.concatenate([flow(i, 2, 2), np.zeros((1, 2, 2), np.float32)])))
    ds = FlyingThings3D(tmp_path, loader=files.pnm_loader)
    assert len(ds) == 4  # 2 pairs into the future, 2 into the past
    img1, img2, f = ds[0]
    np.testing.assert_array_equal(img1.numpy(), files.image(0, (2, 2, 3)).transpose(2, 0, 1))
    np.testing.assert_array_equal(f, flow(0, 2, 2))
    img1, img2, f = ds[2]  # into the past: frames swapped, the later flow
    np.testing.assert_array_equal(img1.numpy(), files.image(1, (2, 2, 3)).transpose(2, 0, 1))
    np.testing.assert_array_equal(f, flow(1, 2, 2))
    with pytest.raises(ValueError, match=r"Unknown value 'center' for argument camera"):
        FlyingThings3D(tmp_path, camera="center")
    with pytest.raises(FileNotFoundError, match="Could not find the FlyingThings3D flow images"):
        FlyingThings3D(tmp_path, split="test")


def make_kitti_flow(tmp_path, files):
    base = tmp_path / "KittiFlow"
    for split in ("training", "testing"):
        for i in range(2):
            files.write_pnm(base / split / "image_2" / f"{i:06d}_10.png", files.image(i, (2, 3, 3)))
            files.write_pnm(base / split / "image_2" / f"{i:06d}_11.png", files.image(i + 50, (2, 3, 3)))
    return base


def test_kitti_flow_test_split_and_errors(tmp_path, files):
    make_kitti_flow(tmp_path, files)
    test = KittiFlow(tmp_path, split="test", loader=files.pnm_loader)
    img1, img2, flow_, mask = test[1]
    assert flow_ is None and mask is None
    np.testing.assert_array_equal(img2.numpy(), files.image(51, (2, 3, 3)).transpose(2, 0, 1))
    with pytest.raises(RuntimeError, match="2 image pairs but 0 flows"):
        KittiFlow(tmp_path, loader=files.pnm_loader)
    with pytest.raises(FileNotFoundError, match="Could not find the Kitti flow images"):
        KittiFlow(tmp_path / "none")
    with pytest.raises(FileNotFoundError, match="Could not find the HD1K images"):
        HD1K(tmp_path)


def _png16(path, array):
    """[H, W, 3] uint16 -> 16-bit RGB PNG."""
    import zlib
    h, w, _ = array.shape
    raw = b"".join(b"\x00" + array[y].astype(">u2").tobytes() for y in range(h))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_kitti_flow_and_hd1k_train_with_io(tmp_path, files, has_io):
    base = make_kitti_flow(tmp_path, files)
    (base / "training" / "flow_occ").mkdir()
    encoded = np.array([[[2**15 + 64, 2**15, 1], [0, 0, 0], [2**15, 2**15 - 32, 1]]] * 2, dtype=np.uint16)
    for i in range(2):
        _png16(base / "training" / "flow_occ" / f"{i:06d}_10.png", encoded)
    img1, img2, f, mask = KittiFlow(tmp_path, loader=files.pnm_loader)[0]
    assert f.shape == (2, 2, 3) and mask.tolist() == [[True, False, True]] * 2
    np.testing.assert_allclose(f[:, 0, 0], [1.0, 0.0])
    np.testing.assert_allclose(f[:, 0, 2], [0.0, -0.5])
    hd = tmp_path / "hd1k"
    for i in range(3):
        files.write_pnm(hd / "hd1k_input" / "image_2" / f"000000_{i:04d}.png", files.image(i, (2, 3, 3)))
        (hd / "hd1k_flow_gt" / "flow_occ").mkdir(parents=True, exist_ok=True)
        _png16(hd / "hd1k_flow_gt" / "flow_occ" / f"000000_{i:04d}.png", encoded)
    ds = HD1K(tmp_path, loader=files.pnm_loader)
    assert len(ds) == 2 and ds[1][3].tolist() == [[True, False, True]] * 2
