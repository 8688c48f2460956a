"""embervision.io image codecs against independent references: PNG files written here by a small
pure-Python writer (zlib), JPEG decodes by the ffmpeg CLI, EXIF blocks built here, channel
conversions and orientations computed here with NumPy."""

from __future__ import annotations

import io as pyio
import shutil
import struct
import subprocess
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from embervision import io, utils
from embervision.io import ImageReadMode

MODES = list(ImageReadMode)
needs_ffmpeg = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="the ffmpeg CLI is the JPEG reference")


# ---- a PNG writer, independent of libpng -------------------------------------------------------

def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _pack_row(row: np.ndarray, bit_depth: int) -> bytes:
    """One scanline's samples (already interleaved) at `bit_depth`, MSB first, big-endian."""
    if bit_depth == 16:
        return row.astype(">u2").tobytes()
    if bit_depth == 8:
        return row.astype(np.uint8).tobytes()
    per_byte = 8 // bit_depth
    padded = np.zeros(-(-row.size // per_byte) * per_byte, dtype=np.uint8)
    padded[:row.size] = row
    groups = padded.reshape(-1, per_byte).astype(np.uint32)
    shifts = bit_depth * np.arange(per_byte - 1, -1, -1)
    return (groups << shifts).sum(axis=1).astype(np.uint8).tobytes()


# (x0, y0, dx, dy) of the seven Adam7 passes
_ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def make_png(pixels: np.ndarray, color_type: int, bit_depth: int = 8, palette: np.ndarray | None = None,
             trns: bytes | None = None, exif: bytes | None = None, interlace: bool = False) -> bytes:
    """A PNG file from HWC (or HW) samples: color_type 0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA."""
    pixels = pixels if pixels.ndim == 3 else pixels[:, :, None]
    h, w, _ = pixels.shape
    header = struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, int(interlace))
    raw = b""
    passes = _ADAM7 if interlace else [(0, 0, 1, 1)]
    for x0, y0, dx, dy in passes:
        sub = pixels[y0::dy, x0::dx]
        if sub.size == 0:
            continue
        for row in sub:
            raw += b"\x00" + _pack_row(row.reshape(-1), bit_depth)  # filter type 0 (None)
    out = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header)
    if palette is not None:
        out += _chunk(b"PLTE", palette.astype(np.uint8).tobytes())
    if trns is not None:
        out += _chunk(b"tRNS", trns)
    if exif is not None:
        out += _chunk(b"eXIf", exif)
    return out + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b"")


def as_tensor(data: bytes) -> ember.Tensor:
    return ember.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())


def chw(hwc: np.ndarray) -> np.ndarray:
    return hwc.transpose(2, 0, 1) if hwc.ndim == 3 else hwc[None]


RNG = np.random.default_rng(1234)


def sample(h, w, c, bits=8):
    return RNG.integers(0, 1 << bits, size=(h, w, c)).astype(np.int64)


# name → (PNG bytes, the decoded image HWC as stored, with tRNS/palette expanded: int64)
def _png_cases():
    cases = {}
    for bits in (8, 16):
        for name, color_type, c in (("gray", 0, 1), ("gray_alpha", 4, 2), ("rgb", 2, 3), ("rgba", 6, 4)):
            px = sample(5, 7, c, bits)
            cases[f"{name}{bits}"] = (make_png(px, color_type, bits), px)
    px = sample(9, 11, 3)
    cases["rgb8_interlaced"] = (make_png(px, 2, 8, interlace=True), px)
    px = sample(9, 10, 2, 16)
    cases["gray_alpha16_interlaced"] = (make_png(px, 4, 16, interlace=True), px)
    for bits in (1, 2, 4):
        px = sample(4, 13, 1, bits)
        cases[f"gray{bits}"] = (make_png(px, 0, bits), px * (255 // ((1 << bits) - 1)))
    palette = RNG.integers(0, 256, size=(16, 3))
    for bits in (2, 4, 8):
        idx = RNG.integers(0, min(16, 1 << bits), size=(6, 9))
        cases[f"palette{bits}"] = (make_png(idx, 3, bits, palette=palette), palette[idx])
    idx = RNG.integers(0, 16, size=(6, 9))
    alpha = RNG.integers(0, 256, size=10)  # entries 10..15 are opaque
    full_alpha = np.concatenate([alpha, np.full(6, 255)])
    cases["palette8_trns"] = (make_png(idx, 3, 8, palette=palette, trns=alpha.astype(np.uint8).tobytes()),
                              np.concatenate([palette[idx], full_alpha[idx][..., None]], axis=2))
    px = sample(5, 6, 3)
    px[0, 0] = (10, 20, 30)
    key = struct.pack(">HHH", 10, 20, 30)
    transparent = np.all(px == (10, 20, 30), axis=2)
    cases["rgb8_trns"] = (make_png(px, 2, 8, trns=key),
                          np.concatenate([px, np.where(transparent, 0, 255)[..., None]], axis=2))
    return cases


PNG_CASES = _png_cases()


def convert_reference(px: np.ndarray, mode: ImageReadMode, bits: int) -> np.ndarray:
    """ImageReadMode's conversion of HWC samples, written from its definition: gray from color is
    the ITU-R 601 luma rounded half up, color from gray repeats it, a missing alpha is opaque."""
    c = px.shape[2]
    color, alpha = (px[..., :3], px[..., 3:]) if c >= 3 else (np.repeat(px[..., :1], 3, axis=2), px[..., 1:])
    if alpha.shape[2] == 0:
        alpha = np.full(px.shape[:2] + (1,), (1 << bits) - 1)
    if c >= 3:
        gray = (299 * color[..., :1] + 587 * color[..., 1:2] + 114 * color[..., 2:3] + 500) // 1000
    else:
        gray = px[..., :1]
    return {ImageReadMode.UNCHANGED: px, ImageReadMode.GRAY: gray,
            ImageReadMode.GRAY_ALPHA: np.concatenate([gray, alpha], axis=2), ImageReadMode.RGB: color,
            ImageReadMode.RGB_ALPHA: np.concatenate([color, alpha], axis=2)}[mode]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.name)
@pytest.mark.parametrize("case", sorted(PNG_CASES))
def test_decode_png_exact(case, mode):
    data, px = PNG_CASES[case]
    bits = 16 if "16" in case else 8
    out = io.decode_png(as_tensor(data), mode)
    assert out.dtype == (ember.int32 if bits == 16 else ember.uint8)
    np.testing.assert_array_equal(out.numpy(), chw(convert_reference(px, mode, bits)))
    # decode_image sniffs the same file
    assert ember.equal(io.decode_image(as_tensor(data), mode), out)


def test_decode_png_16_bit_extremes():
    px = np.array([[[0], [65535], [256], [255]]])
    out = io.decode_png(as_tensor(make_png(px, 0, 16)))
    assert out.dtype == ember.int32
    np.testing.assert_array_equal(out.numpy(), [[[0, 65535, 256, 255]]])


@needs_ffmpeg
@pytest.mark.parametrize("channels,pix_fmt", [(1, "gray"), (2, "ya8"), (3, "rgb24"), (4, "rgba")])
@pytest.mark.parametrize("level", [0, 9])
def test_encode_png_decodes_with_ffmpeg(tmp_path, channels, pix_fmt, level):
    image = sample(6, 9, channels).astype(np.uint8)
    path = tmp_path / "x.png"
    io.write_png(ember.from_numpy(np.ascontiguousarray(chw(image))), str(path), compression_level=level)
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt", pix_fmt, "-"],
                         check=True, capture_output=True).stdout
    np.testing.assert_array_equal(np.frombuffer(raw, np.uint8).reshape(6, 9, channels), image)
    # and back through our decoder, exactly
    np.testing.assert_array_equal(io.read_image(path).numpy(), chw(image))


def test_encode_png_levels_trade_size():
    image = ember.from_numpy(np.tile(np.arange(64, dtype=np.uint8), (3, 32, 1)))
    sizes = [io.encode_png(image, level).numel() for level in (0, 9)]
    assert sizes[1] < sizes[0]
    assert sizes[0] > 3 * 32 * 64  # level 0 stores the samples uncompressed


# ---- JPEG -------------------------------------------------------------------------------------

def smooth_image(h, w, channels=3):
    y, x = np.mgrid[0:h, 0:w]
    planes = [128 + 100 * np.sin(x / 7.0 + k) * np.cos(y / 9.0 - k) for k in range(channels)]
    return np.clip(np.stack(planes), 0, 255).astype(np.uint8)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return float(10 * np.log10(255.0 ** 2 / mse))


def ffmpeg_decode(data: bytes, pix_fmt: str, tmp_path) -> np.ndarray:
    path = tmp_path / "ref.jpg"
    path.write_bytes(data)
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-f", "rawvideo", "-pix_fmt", pix_fmt, "-"],
                         check=True, capture_output=True).stdout
    return np.frombuffer(raw, np.uint8)


@pytest.mark.parametrize("channels", [1, 3])
def test_jpeg_round_trip_psnr(channels):
    image = smooth_image(32, 48, channels)
    high = io.decode_jpeg(io.encode_jpeg(ember.from_numpy(image), quality=95))
    low = io.decode_jpeg(io.encode_jpeg(ember.from_numpy(image), quality=10))
    assert high.shape == (channels, 32, 48) and high.dtype == ember.uint8
    assert psnr(high.numpy(), image) > 38
    assert 20 < psnr(low.numpy(), image) < psnr(high.numpy(), image)
    assert io.encode_jpeg(ember.from_numpy(image), 10).numel() < io.encode_jpeg(ember.from_numpy(image), 95).numel()


def upsample_2x(plane: np.ndarray) -> np.ndarray:
    """Triangle-filter 2x upsampling along both axes (JPEG's "fancy" upsampling): each output sample
    is 3/4 of the nearest input sample plus 1/4 of the next nearest, edges repeated."""
    def along(a, axis):
        a = np.moveaxis(a, axis, 0)
        before = np.concatenate([a[:1], a[:-1]])
        after = np.concatenate([a[1:], a[-1:]])
        out = np.empty((2 * a.shape[0],) + a.shape[1:])
        out[0::2], out[1::2] = 0.75 * a + 0.25 * before, 0.75 * a + 0.25 * after
        return np.moveaxis(out, 0, axis)
    return along(along(plane, 0), 1)


@needs_ffmpeg
def test_decode_jpeg_matches_ffmpeg(tmp_path):
    h, w = 24, 40
    image = smooth_image(h, w)
    data = io.encode_jpeg(ember.from_numpy(image), quality=90)  # 4:2:0 chroma
    raw = bytes(data.numpy())
    # ffmpeg's own decode of the Y, Cb, Cr planes; RGB from them per JFIF (full-range BT.601)
    planes = ffmpeg_decode(raw, "yuvj420p", tmp_path).astype(np.float64)
    y = planes[:h * w].reshape(h, w)
    cb = upsample_2x(planes[h * w:h * w + h * w // 4].reshape(h // 2, w // 2)) - 128
    cr = upsample_2x(planes[h * w + h * w // 4:].reshape(h // 2, w // 2)) - 128
    ref = np.clip(np.rint(np.stack([y + 1.402 * cr, y - 0.344136 * cb - 0.714136 * cr, y + 1.772 * cb])), 0, 255)
    ours = io.decode_jpeg(data).numpy()
    # the decoders differ in IDCT and upsampling rounding only
    assert np.abs(ours - ref).mean() < 0.6 and np.abs(ours - ref).max() <= 3
    gray = io.decode_jpeg(data, ImageReadMode.GRAY).numpy()[0]
    assert np.abs(gray - y).max() <= 2


@needs_ffmpeg
def test_decode_gray_jpeg_matches_ffmpeg(tmp_path):
    image = smooth_image(16, 24, 1)
    data = io.encode_jpeg(ember.from_numpy(image), quality=80)
    ours = io.decode_jpeg(data)
    assert ours.shape == (1, 16, 24)
    ref = ffmpeg_decode(bytes(data.numpy()), "gray", tmp_path).reshape(1, 16, 24)
    assert np.abs(ours.numpy().astype(np.int64) - ref).max() <= 2


def test_jpeg_modes():
    color = io.encode_jpeg(ember.from_numpy(smooth_image(16, 16)))
    gray = io.encode_jpeg(ember.from_numpy(smooth_image(16, 16, 1)))
    assert io.decode_jpeg(color, ImageReadMode.UNCHANGED).shape == (3, 16, 16)
    assert io.decode_jpeg(gray, ImageReadMode.UNCHANGED).shape == (1, 16, 16)
    rgb = io.decode_jpeg(color, ImageReadMode.RGB).numpy().astype(np.float64)
    luma = io.decode_jpeg(color, ImageReadMode.GRAY).numpy()[0].astype(np.float64)
    # libjpeg's gray is the Y plane before chroma rounding: close to the RGB decode's luma
    assert np.abs(luma - (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2])).max() <= 3
    from_gray = io.decode_jpeg(gray, ImageReadMode.RGB).numpy()
    plain = io.decode_jpeg(gray, ImageReadMode.GRAY).numpy()
    np.testing.assert_array_equal(from_gray, np.repeat(plain, 3, axis=0))
    for mode in (ImageReadMode.GRAY_ALPHA, ImageReadMode.RGB_ALPHA):
        with pytest.raises(RuntimeError, match="The provided mode is not supported for JPEG files"):
            io.decode_jpeg(color, mode)
        with pytest.raises(RuntimeError, match="The provided mode is not supported for JPEG files"):
            io.decode_image(color, mode)


def test_jpeg_lists_and_device():
    images = [ember.from_numpy(smooth_image(8, 16)), ember.from_numpy(smooth_image(16, 8, 1))]
    files = io.encode_jpeg(images, quality=90)
    assert isinstance(files, list) and all(ember.equal(f, io.encode_jpeg(i, 90)) for f, i in zip(files, images, strict=True))
    decoded = io.decode_jpeg(files, device="cpu")
    assert [tuple(d.shape) for d in decoded] == [(3, 8, 16), (1, 16, 8)]
    assert all(ember.equal(d, io.decode_jpeg(f, device=ember.device("cpu"))) for d, f in zip(decoded, files, strict=True))
    with pytest.raises(ValueError, match="Input list must contain at least one element"):
        io.decode_jpeg([])
    with pytest.raises(ValueError, match="All elements of the input list must be tensors."):
        io.decode_jpeg([files[0], b"\xff\xd8"])
    with pytest.raises(ValueError, match="encode_jpeg requires at least one input tensor when a list is passed"):
        io.encode_jpeg([])



@pytest.mark.skipif(not ember.cuda.is_available(), reason="needs a CUDA device")
def test_decode_jpeg_to_cuda():
    data = io.encode_jpeg(ember.from_numpy(smooth_image(8, 16)))
    out = io.decode_jpeg(data, device="cuda")
    assert out.device.type == "cuda" and ember.equal(out.cpu(), io.decode_jpeg(data))
    (listed,) = io.decode_jpeg([data], device=ember.device("cuda"))
    assert listed.device.type == "cuda"
    with pytest.raises(ValueError, match="Input tensor must be a CPU tensor"):
        io.decode_jpeg(data.to("cuda"))

# ---- EXIF orientation ---------------------------------------------------------------------------

def exif_block(orientation: int, little_endian: bool, extra_entries: int = 1) -> bytes:
    """A TIFF block with IFD0 = `extra_entries` unrelated tags, then Orientation (SHORT, 1)."""
    e = "<" if little_endian else ">"
    entries = [struct.pack(e + "HHIHH", 0x010F + k, 3, 1, 7, 0) for k in range(extra_entries)]
    entries.append(struct.pack(e + "HHIHH", 0x0112, 3, 1, orientation, 0))
    ifd = struct.pack(e + "H", len(entries)) + b"".join(entries) + struct.pack(e + "I", 0)
    return (b"II" if little_endian else b"MM") + struct.pack(e + "HI", 42, 8) + ifd


def with_app1(jpeg: bytes, payload: bytes) -> bytes:
    segment = b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload
    return jpeg[:2] + segment + jpeg[2:]


def oriented_reference(stored: np.ndarray, orientation: int) -> np.ndarray:
    """The displayed (C, H, W) image for a stored one, from the EXIF definition of where the stored
    0th row and 0th column lie when displayed."""
    c, h, w = stored.shape
    transposed = orientation >= 5
    out = np.empty((c, w, h) if transposed else (c, h, w), dtype=stored.dtype)
    oh, ow = out.shape[1:]
    for r in range(h):
        for col in range(w):
            y, x = {1: (r, col), 2: (r, ow - 1 - col), 3: (oh - 1 - r, ow - 1 - col), 4: (oh - 1 - r, col),
                    5: (col, r), 6: (col, ow - 1 - r), 7: (oh - 1 - col, ow - 1 - r), 8: (oh - 1 - col, r)}[orientation]
            out[:, y, x] = stored[:, r, col]
    return out


@pytest.mark.parametrize("little_endian", [True, False])
@pytest.mark.parametrize("orientation", range(1, 9))
def test_jpeg_exif_orientation(orientation, little_endian):
    image = smooth_image(8, 24)
    base = bytes(io.encode_jpeg(ember.from_numpy(image), 90).numpy())
    data = as_tensor(with_app1(base, b"Exif\x00\x00" + exif_block(orientation, little_endian, extra_entries=2)))
    stored = io.decode_jpeg(data).numpy()
    np.testing.assert_array_equal(stored, io.decode_jpeg(as_tensor(base)).numpy())  # off by default
    np.testing.assert_array_equal(io.decode_jpeg(data, apply_exif_orientation=True).numpy(),
                                  oriented_reference(stored, orientation))
    np.testing.assert_array_equal(io.decode_image(data, apply_exif_orientation=True).numpy(),
                                  oriented_reference(stored, orientation))


@pytest.mark.parametrize("orientation", range(1, 9))
def test_png_exif_orientation(orientation):
    px = sample(3, 5, 3)
    data = as_tensor(make_png(px, 2, exif=exif_block(orientation, orientation % 2 == 0)))
    np.testing.assert_array_equal(io.decode_png(data).numpy(), chw(px))
    out = io.decode_png(data, ImageReadMode.RGB_ALPHA, apply_exif_orientation=True)
    rgba = convert_reference(px, ImageReadMode.RGB_ALPHA, 8)
    np.testing.assert_array_equal(out.numpy(), oriented_reference(chw(rgba), orientation))


@pytest.mark.parametrize("block", [
    b"II*\x00\x08\x00\x00\x00\x05\x00",                       # IFD0 claims 5 entries, has none
    b"II*\x00\xff\xff\xff\x7f",                               # IFD0 offset far past the end
    b"XX*\x00\x08\x00\x00\x00",                               # unknown byte order
    b"II+\x00\x08\x00\x00\x00\x01\x00" + bytes(12),           # not 42
    exif_block(9, True),                                      # no such orientation
    exif_block(6, True)[:-10],                                # entry cut short
    struct.pack("<2sHIH", b"II", 42, 8, 1) + struct.pack("<HHIHH", 0x0112, 4, 1, 6, 0),  # LONG, not SHORT
    b"II",
], ids=range(8))
def test_malformed_exif_is_ignored(block):
    image = smooth_image(8, 16)
    base = bytes(io.encode_jpeg(ember.from_numpy(image)).numpy())
    expected = io.decode_jpeg(as_tensor(base)).numpy()
    out = io.decode_jpeg(as_tensor(with_app1(base, b"Exif\x00\x00" + block)), apply_exif_orientation=True)
    np.testing.assert_array_equal(out.numpy(), expected)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=64), st.booleans())
def test_random_exif_never_crashes(tail, little_endian):
    image = smooth_image(8, 16)
    base = bytes(io.encode_jpeg(ember.from_numpy(image)).numpy())
    header = b"II*\x00" if little_endian else b"MM\x00*"
    out = io.decode_jpeg(as_tensor(with_app1(base, b"Exif\x00\x00" + header + tail)), apply_exif_orientation=True)
    assert tuple(out.shape) in {(3, 8, 16), (3, 16, 8)}


# ---- files, sniffing, save_image ----------------------------------------------------------------

def test_files_round_trip(tmp_path):
    data = as_tensor(bytes(range(256)) * 3)
    io.write_file(str(tmp_path / "raw.bin"), data)
    back = io.read_file(tmp_path / "raw.bin")
    assert back.dtype == ember.uint8 and ember.equal(back, data)
    image = ember.from_numpy(smooth_image(16, 16))
    io.write_jpeg(image, tmp_path / "x.jpg", quality=95)
    io.write_png(image, tmp_path / "x.png")
    assert ember.equal(io.read_image(tmp_path / "x.png"), image)
    assert psnr(io.read_image(str(tmp_path / "x.jpg")).numpy(), image.numpy()) > 38
    gray = io.read_image(tmp_path / "x.png", ImageReadMode.GRAY)
    assert gray.shape == (1, 16, 16)
    assert io.read_image(tmp_path / "x.jpg", ImageReadMode.GRAY).shape == (1, 16, 16)


def test_file_errors(tmp_path):
    with pytest.raises(RuntimeError, match=r"\[Errno 2\] No such file or directory: '.*missing.png'"):
        io.read_file(tmp_path / "missing.png")
    (tmp_path / "empty").write_bytes(b"")
    with pytest.raises(RuntimeError, match="Expected a non empty file"):
        io.read_image(tmp_path / "empty")
    with pytest.raises(RuntimeError, match="Input data should be a 1-dimensional tensor"):
        io.write_file(tmp_path / "bad", ember.zeros(2, 2, dtype=ember.uint8))
    with pytest.raises(RuntimeError, match="Input tensor dtype should be uint8"):
        io.write_file(tmp_path / "bad", ember.zeros(2))
    with pytest.raises(RuntimeError, match="Unsupported image file. Only jpeg and png are currently supported."):
        io.decode_image(as_tensor(b"GIF89a" + bytes(20)))


def test_save_image(tmp_path):
    rng = np.random.default_rng(3)
    batch = ember.from_numpy(rng.uniform(-0.1, 1.1, size=(5, 3, 6, 7)).astype(np.float32))
    grid = utils.make_grid(batch, nrow=3, padding=1, pad_value=0.25).numpy()
    expected = np.clip(grid * 255 + 0.5, 0, 255).astype(np.uint8)  # torchvision's rounding rule
    utils.save_image(batch, tmp_path / "grid.png", nrow=3, padding=1, pad_value=0.25)
    np.testing.assert_array_equal(io.read_image(tmp_path / "grid.png").numpy(), expected)
    buffer = pyio.BytesIO()
    utils.save_image(batch, buffer, format="PNG", nrow=3, padding=1, pad_value=0.25)
    np.testing.assert_array_equal(io.decode_image(as_tensor(buffer.getvalue())).numpy(), expected)
    smooth = smooth_image(16, 24).astype(np.float32) / 255
    utils.save_image(ember.from_numpy(smooth), str(tmp_path / "one.JPG"))  # one image: no padding
    assert psnr(io.read_image(tmp_path / "one.JPG").numpy(), np.floor(smooth * 255 + 0.5)) > 30
    with pytest.raises(ValueError, match="unknown file extension: .gif"):
        utils.save_image(batch, tmp_path / "grid.gif")
    with pytest.raises(ValueError, match="could not determine the image format"):
        utils.save_image(batch, pyio.BytesIO())
    with pytest.raises(ValueError, match="unsupported image format 'BMP'"):
        utils.save_image(batch, pyio.BytesIO(), format="BMP")


# ---- argument and input validation --------------------------------------------------------------

@pytest.mark.parametrize("quality", [0, 101, -5])
def test_quality_validated(quality):
    image = ember.zeros(3, 4, 4, dtype=ember.uint8)
    with pytest.raises(ValueError, match="Image quality should be a positive number between 1 and 100"):
        io.encode_jpeg(image, quality)
    with pytest.raises(ValueError, match="Image quality should be a positive number between 1 and 100"):
        io.write_jpeg(image, "unused.jpg", quality)


@pytest.mark.parametrize("level", [-1, 10])
def test_compression_level_validated(level):
    with pytest.raises(ValueError, match="Compression level should be between 0 and 9"):
        io.encode_png(ember.zeros(3, 4, 4, dtype=ember.uint8), level)


def test_bad_argument_types():
    image = ember.zeros(3, 4, 4, dtype=ember.uint8)
    with pytest.raises(TypeError):
        io.encode_jpeg(image, 50.5)
    with pytest.raises(TypeError):
        io.encode_png(image, 1.0)
    data = io.encode_png(image)
    with pytest.raises(TypeError, match="mode must be an ImageReadMode"):
        io.decode_png(data, 3)
    with pytest.raises(TypeError, match=r"\[decode_png\] expected an ember.Tensor, but got bytes"):
        io.decode_png(bytes(data.numpy()))
    with pytest.raises(TypeError, match=r"\[encode_jpeg\] expected an ember.Tensor, but got ndarray"):
        io.encode_jpeg(np.zeros((3, 4, 4), np.uint8))


@pytest.mark.parametrize("encoder,allowed", [(io.encode_jpeg, "1 or 3"), (io.encode_png, "1 or 2 or 3 or 4")])
def test_encoder_input_checks(encoder, allowed):
    with pytest.raises(RuntimeError, match="Input tensor dtype should be uint8, but got ember.float32"):
        encoder(ember.zeros(3, 4, 4))
    with pytest.raises(RuntimeError, match=r"Input data should be a 3-dimensional tensor, but got shape \(4, 4\)"):
        encoder(ember.zeros(4, 4, dtype=ember.uint8))
    with pytest.raises(RuntimeError, match=f"The number of channels should be {allowed}, got: 5"):
        encoder(ember.zeros(5, 4, 4, dtype=ember.uint8))
    for shape in [(3, 0, 4), (1, 4, 0)]:
        with pytest.raises(RuntimeError, match=r"expected a non-empty image, but got shape"):
            encoder(ember.zeros(*shape, dtype=ember.uint8))
    if encoder is io.encode_jpeg:
        with pytest.raises(RuntimeError, match="The number of channels should be 1 or 3, got: 2"):
            encoder(ember.zeros(2, 4, 4, dtype=ember.uint8))
        with pytest.raises(RuntimeError, match="Maximum supported image dimension is 65500 pixels"):
            encoder(ember.zeros(1, 1, 65501, dtype=ember.uint8))  # libjpeg's limit, its message


@pytest.mark.parametrize("decoder", [io.decode_jpeg, io.decode_png, io.decode_image])
def test_decoder_input_checks(decoder):
    with pytest.raises(RuntimeError, match=r"expected a non empty 1-dimensional tensor, but got shape \(0,\)"):
        decoder(ember.zeros(0, dtype=ember.uint8))
    with pytest.raises(RuntimeError, match=r"expected a non empty 1-dimensional tensor, but got shape \(2, 3\)"):
        decoder(ember.zeros(2, 3, dtype=ember.uint8))
    with pytest.raises(RuntimeError, match="expected a uint8 tensor, but got ember.int8"):
        decoder(ember.zeros(8, dtype=ember.int8))


def test_encoders_take_non_contiguous_input():
    hwc = smooth_image(12, 10).transpose(1, 2, 0).copy()
    view = ember.from_numpy(hwc).permute(2, 0, 1)  # (C, H, W) with channel stride 1
    assert not view.is_contiguous()
    dense = ember.from_numpy(np.ascontiguousarray(hwc.transpose(2, 0, 1)))
    assert ember.equal(io.encode_png(view), io.encode_png(dense))
    assert ember.equal(io.encode_jpeg(view), io.encode_jpeg(dense))
    flipped = ember.from_numpy(smooth_image(12, 20))[:, ::2, 1::3]  # strided slices
    assert ember.equal(io.decode_png(io.encode_png(flipped)), flipped.contiguous())


def test_decoders_take_non_contiguous_input():
    data = io.encode_png(ember.from_numpy(smooth_image(6, 6)))
    doubled = ember.stack([data, data], dim=1).reshape(-1)[::2]  # every other byte: the file again
    assert not doubled.is_contiguous()
    assert ember.equal(io.decode_png(doubled), io.decode_png(data))
    jpeg = io.encode_jpeg(ember.from_numpy(smooth_image(6, 6)))
    strided = ember.stack([jpeg, jpeg], dim=1).reshape(-1)[1::2]
    assert ember.equal(io.decode_jpeg(strided), io.decode_jpeg(jpeg))


# ---- damaged files -------------------------------------------------------------------------------

SMALL_PNG = make_png(sample(4, 5, 4), 6)
SMALL_JPEG = bytes(io.encode_jpeg(ember.from_numpy(smooth_image(16, 16)), 75).numpy())


@pytest.mark.parametrize("data", [SMALL_PNG, SMALL_JPEG], ids=["png", "jpeg"])
def test_every_truncation_is_a_runtime_error(data):
    decoder = io.decode_png if data is SMALL_PNG else io.decode_jpeg
    for cut in range(1, len(data)):
        with pytest.raises(RuntimeError):
            decoder(as_tensor(data[:cut]))
        with pytest.raises(RuntimeError):
            io.decode_image(as_tensor(data[:cut]))


def test_every_png_bit_flip_is_a_runtime_error():
    # every byte of the file is covered by the signature check or a chunk CRC
    for position in range(len(SMALL_PNG)):
        for bit in range(8):
            damaged = bytearray(SMALL_PNG)
            damaged[position] ^= 1 << bit
            with pytest.raises(RuntimeError):
                io.decode_png(as_tensor(bytes(damaged)))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(SMALL_JPEG) - 1), st.integers(0, 7)), min_size=1, max_size=4),
       st.sampled_from(MODES[:2] + MODES[3:4]), st.booleans())
def test_jpeg_bit_flips_fail_cleanly(flips, mode, apply_exif):
    damaged = bytearray(SMALL_JPEG)
    for position, bit in flips:
        damaged[position] ^= 1 << bit
    try:
        out = io.decode_jpeg(as_tensor(bytes(damaged)), mode, apply_exif_orientation=apply_exif)
    except RuntimeError:
        return
    # a flip inside entropy-coded data can decode to other pixels; the result is still a whole image
    assert out.dtype == ember.uint8 and out.dim() == 3 and out.shape[0] in (1, 3) and out.numel() > 0


@settings(max_examples=100, deadline=None)
@given(st.binary(min_size=1, max_size=200), st.sampled_from([b"", b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n"]))
def test_garbage_is_a_runtime_error(noise, magic):
    with pytest.raises(RuntimeError):
        io.decode_image(as_tensor(magic + noise))


def _with_sof_size(jpeg: bytes, height: int, width: int) -> bytes:
    at = jpeg.index(b"\xff\xc0")  # baseline SOF: marker, length u16, precision u8, height u16, width u16
    return jpeg[:at + 5] + struct.pack(">HH", height, width) + jpeg[at + 9:]


def _with_ihdr_size(png: bytes, height: int, width: int) -> bytes:
    header = struct.pack(">II", width, height) + png[24:29]
    return png[:8] + _chunk(b"IHDR", header) + png[33:]


@pytest.mark.parametrize("side", [4000, 65500])
def test_huge_claimed_size_with_little_data_is_a_runtime_error(side):
    # the header promises a huge image, the data ends after a few rows: an error, found before
    # the output's memory is touched beyond those rows
    with pytest.raises(RuntimeError, match="(?i)premature end|out of memory"):
        io.decode_jpeg(as_tensor(_with_sof_size(SMALL_JPEG, side, side)))
    with pytest.raises(RuntimeError, match="truncated|out of memory|Not enough image data"):
        io.decode_png(as_tensor(_with_ihdr_size(SMALL_PNG, side, side)))


def test_image_read_mode_values_and_exports():
    import embervision
    assert {m.name: m.value for m in ImageReadMode} == {"UNCHANGED": 0, "GRAY": 1, "GRAY_ALPHA": 2, "RGB": 3,
                                                        "RGB_ALPHA": 4}
    assert embervision.io.decode_image is io.image.decode_image
    assert set(io.__all__) >= {"ImageReadMode", "decode_image", "decode_jpeg", "decode_png", "encode_jpeg",
                               "encode_png", "read_file", "read_image", "write_file", "write_jpeg", "write_png"}
    assert "save_image" in utils.__all__
