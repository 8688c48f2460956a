"""Shared fixtures for embervision's tests."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.nn import functional as F


@pytest.fixture
def cheap_init(monkeypatch):
    """Random initialization of the big models costs more time than these tests have (ember fills
    ~100M values/s), so normal_/uniform_/trunc_normal_ fill with a tiled block of random values of
    the same distribution: every layer still sees varied, well-scaled weights."""
    from ember.nn import init

    block = 1 << 16
    gen = np.random.default_rng(0)
    normal = ember.from_numpy(gen.standard_normal(block).astype(np.float32))
    uniform = ember.from_numpy(gen.random(block).astype(np.float32))

    def tile(tensor, values):
        with ember.no_grad():
            flat = tensor.view(-1)
            n = flat.numel()
            full = n // block
            if full:
                flat[:full * block].view(full, block).copy_(values.expand(full, block))
            flat[full * block:].copy_(values[:n - full * block])
        return tensor

    def normal_(tensor, mean=0.0, std=1.0, generator=None):
        return tile(tensor, normal * std + mean)

    def uniform_(tensor, a=0.0, b=1.0, generator=None):
        return tile(tensor, uniform * (b - a) + a)

    def trunc_normal_(tensor, mean=0.0, std=1.0, a=-2.0, b=2.0, generator=None):
        return tile(tensor, (normal * std + mean).clamp(a, b))

    monkeypatch.setattr(init, "normal_", normal_)
    monkeypatch.setattr(init, "uniform_", uniform_)
    monkeypatch.setattr(init, "trunc_normal_", trunc_normal_)


@pytest.fixture
def no_init(monkeypatch):
    """Skip the random initialization: for models that are only built and counted."""
    from ember.nn import init

    for name in ("normal_", "uniform_", "trunc_normal_"):
        monkeypatch.setattr(init, name, lambda tensor, *args, **kwargs: tensor)


class ModelChecks:
    """The checks every classification model gets (test_models*.py)."""

    @staticmethod
    def min_side(name):
        """A small input side the model takes: its weights' min_size, at least 16 (forward time grows
        with the area, and this is a shape-and-wiring check)."""
        from embervision import models
        return max(16, *models.get_model_weights(name).DEFAULT.meta["min_size"])

    def count_keys_forward(self, name, num_params, keys, forward=True, side=None, forward_kwargs=None, **kwargs):
        """torchvision's parameter count and state-dict entries (name → shape), then one small image
        through the model in eval mode (rebuilt with forward_kwargs when given, e.g. a smaller ViT
        image_size)."""
        from embervision import models
        model = models.get_model(name, **kwargs)
        assert sum(p.numel() for p in model.parameters()) == num_params
        assert models.get_model_weights(name).DEFAULT.meta["num_params"] == num_params
        state = model.state_dict()
        for key, shape in keys.items():
            assert key in state, key
            assert tuple(state[key].shape) == shape, key
        if not forward:
            return
        side = side or self.min_side(name)
        if forward_kwargs is not None:
            model = models.get_model(name, **forward_kwargs)
        model.eval()
        with ember.no_grad():
            out = model(ember.rand(1, 3, side, side))
        assert tuple(out.shape) == (1, 1000)
        assert bool(ember.isfinite(out).all())

    @staticmethod
    def train_step(name, side=64, **kwargs):
        """Eval determinism, then a batch of two at side×side: finite logits of 10 classes, a gradient
        for every parameter, and an SGD step that moves every one. `name` may be a model built with
        num_classes=10 instead."""
        from embervision import models
        ember.manual_seed(0)
        model = models.get_model(name, num_classes=10, **kwargs) if isinstance(name, str) else name
        x = ember.rand(2, 3, side, side)
        model.eval()
        with ember.no_grad():
            assert ember.equal(model(x), model(x))
        model.train()
        out = model(x)
        assert tuple(out.shape) == (2, 10) and bool(ember.isfinite(out).all())
        params = list(model.parameters())
        before = [p.detach().clone() for p in params]
        opt = ember.optim.SGD(params, lr=0.01)
        F.cross_entropy(out, ember.tensor([3, 7])).backward()
        assert all(p.grad is not None and bool(ember.isfinite(p.grad).all()) for p in params)
        opt.step()
        assert all(not ember.equal(b, p) for b, p in zip(before, params, strict=True))


@pytest.fixture
def model_checks():
    return ModelChecks()


# ----------------------------------------------------------------------------- datasets

class DatasetFiles:
    """Writers of tiny files in the datasets' on-disk formats, and a loader for the images they
    write (binary PPM/PGM, which needs no codec: the default loader needs `embervision.io`)."""

    @staticmethod
    def write_pnm(path, array):
        """uint8 [H, W] (PGM) or [H, W, 3] (PPM) array -> binary PNM file at `path` (any name)."""
        import os
        array = np.asarray(array, dtype=np.uint8)
        magic = b"P5" if array.ndim == 2 else b"P6"
        os.makedirs(os.path.dirname(str(path)) or ".", exist_ok=True)
        with open(path, "wb") as f:
            f.write(magic + f"\n{array.shape[1]} {array.shape[0]}\n255\n".encode() + array.tobytes())

    @staticmethod
    def pnm_loader(path):
        """A binary PNM file -> uint8 [C, H, W] ember tensor (the layout read_image returns)."""
        with open(path, "rb") as f:
            data = f.read()
        magic, width, height, maxval, pixels = data.split(maxsplit=4)
        assert magic in (b"P5", b"P6") and maxval == b"255"
        channels = 1 if magic == b"P5" else 3
        array = np.frombuffer(pixels, dtype=np.uint8).reshape(int(height), int(width), channels)
        return ember.from_numpy(np.ascontiguousarray(array.transpose(2, 0, 1)))

    @staticmethod
    def write_png(path, array):
        """uint8 [H, W] or [H, W, 3] array -> PNG file (8-bit gray or RGB, filter 0, zlib)."""
        import struct
        import zlib
        array = np.asarray(array, dtype=np.uint8)
        height, width = array.shape[:2]
        color = 0 if array.ndim == 2 else 2
        raw = b"".join(b"\x00" + array[y].tobytes() for y in range(height))

        def chunk(kind, body):
            return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

        with open(path, "wb") as f:
            f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0))
                    + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

    @staticmethod
    def md5(path):
        import hashlib
        with open(path, "rb") as f:
            return hashlib.md5(f.read()).hexdigest()

    @staticmethod
    def image(seed, shape):
        return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


@pytest.fixture
def files():
    return DatasetFiles()


@pytest.fixture
def has_io():
    """Skip unless embervision.io (the native codecs, another branch) is importable."""
    return pytest.importorskip("embervision.io")


def write_palette_png(path, indices, palette):
    """uint8 [H, W] palette indices and an [N, 3] palette -> 8-bit palette PNG (color type 3)."""
    import struct
    import zlib
    indices = np.asarray(indices, dtype=np.uint8)
    height, width = indices.shape
    raw = b"".join(b"\x00" + indices[y].tobytes() for y in range(height))

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0))
                + chunk(b"PLTE", np.asarray(palette, np.uint8).tobytes()) + chunk(b"IDAT", zlib.compress(raw))
                + chunk(b"IEND", b""))


DatasetFiles.write_palette_png = staticmethod(write_palette_png)
