"""embervision beside its peers, in one process, same inputs, one thread each: JPEG and PNG
decoding and encoding beside Pillow, the Resize(antialias)+Normalize pipeline beside PyTorch's
`interpolate(antialias=True)`, and nms / roi_align / ResNet-50 / MobileNetV3 beside TorchVision
when TorchVision imports in this environment (PyPI's TorchVision does not load beside the
PyTorch 2.13 CPU build the bench session installs, so those rows say so instead).

    python bench_vision.py [--size 512x384] [--only jpeg,png,resize,ops,models]

Ratios are Ember time / peer time (lower is better; 1.00 is parity): the median of
per-repetition ratios of interleaved runs.
"""

from __future__ import annotations

import argparse
import io
import statistics
import time

import numpy as np

import ember
from embervision import io as vio
from embervision import ops
from embervision.transforms import v2

try:
    from PIL import Image
except ImportError:
    Image = None
try:
    import torch
    import torch.nn.functional as torch_F
except ImportError:
    torch = None
try:
    import torchvision
except Exception as error:  # noqa: BLE001 - any import failure means no peer
    torchvision = None
    NO_TORCHVISION = f"{type(error).__name__}: {str(error)[:80]}"


def _per_call(fn, number):
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def side_by_side(ours, theirs, reps=7, seconds=0.2):
    """(ours s/call, theirs s/call, median ratio) over interleaved repetitions."""
    ours(), theirs()
    n_ours = max(1, int(seconds / _per_call(ours, 1)))
    n_theirs = max(1, int(seconds / _per_call(theirs, 1)))
    times = [(_per_call(ours, n_ours), _per_call(theirs, n_theirs)) for _ in range(reps)]
    return (statistics.median(a for a, _ in times), statistics.median(b for _, b in times),
            statistics.median(a / b for a, b in times))


def row(name, peer, ours, theirs):
    a, b, ratio = side_by_side(ours, theirs)
    print(f"{name:44s} {a * 1e3:9.3f} ms {b * 1e3:9.3f} ms  {ratio:6.2f}  ({peer})")


def skip(name, why):
    print(f"{name:44s} {'-':>12s} {'-':>12s}  {'-':>6s}  ({why})")


def photo_like(height, width, seed=0):
    """A smooth gradient with texture and edges: compresses like a photograph, not like noise."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    base = np.stack([128 + 100 * np.sin(x / 37 + c) * np.cos(y / 23 - c) for c in range(3)])
    noise = rng.normal(0, 12, size=(3, height, width))
    blocks = ((x // 64 + y // 48) % 2)[None] * 40
    return np.clip(base + noise + blocks, 0, 255).astype(np.uint8)


def bench_codecs(height, width, only):
    chw = photo_like(height, width)
    hwc = np.ascontiguousarray(chw.transpose(1, 2, 0))
    image = ember.from_numpy(chw)
    if Image is None:
        skip("jpeg/png", "Pillow is not installed")
        return
    pil = Image.fromarray(hwc)
    if "jpeg" in only:
        buffer = io.BytesIO()
        pil.save(buffer, format="JPEG", quality=90)
        data = buffer.getvalue()
        encoded = ember.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())
        row(f"decode_jpeg {width}x{height} q90", "Pillow", lambda: vio.decode_jpeg(encoded),
            lambda: np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))
        row(f"encode_jpeg {width}x{height} q90", "Pillow", lambda: vio.encode_jpeg(image, quality=90),
            lambda: pil.save(io.BytesIO(), format="JPEG", quality=90))
    if "png" in only:
        buffer = io.BytesIO()
        pil.save(buffer, format="PNG", compress_level=6)
        data = buffer.getvalue()
        encoded = ember.from_numpy(np.frombuffer(data, dtype=np.uint8).copy())
        row(f"decode_png {width}x{height}", "Pillow", lambda: vio.decode_png(encoded),
            lambda: np.asarray(Image.open(io.BytesIO(data)).convert("RGB")))
        row(f"encode_png {width}x{height} level 6", "Pillow", lambda: vio.encode_png(image, compression_level=6),
            lambda: pil.save(io.BytesIO(), format="PNG", compress_level=6))


def bench_resize(height, width):
    if torch is None:
        skip("resize+normalize", "PyTorch is not installed")
        return
    chw = photo_like(height, width)
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    pipeline = v2.Compose([v2.Resize((224, 224), antialias=True), v2.ToDtype(ember.float32, scale=True),
                           v2.Normalize(mean, std)])
    ours_in = ember.from_numpy(chw)
    theirs_in = torch.from_numpy(chw)
    t_mean = torch.tensor(mean).view(3, 1, 1)
    t_std = torch.tensor(std).view(3, 1, 1)

    def theirs():
        x = theirs_in.unsqueeze(0).float()
        x = torch_F.interpolate(x, size=(224, 224), mode="bilinear", antialias=True, align_corners=False)
        x = x.round_().clamp_(0, 255).div_(255)  # Resize on uint8 rounds back to uint8 first
        return (x[0] - t_mean) / t_std

    row(f"Resize(224, antialias)+Normalize {width}x{height}", "PyTorch interpolate", lambda: pipeline(ours_in), theirs)


def bench_ops():
    if torchvision is None:
        skip("nms / roi_align", f"TorchVision does not import here: {NO_TORCHVISION}")
        return
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 500, size=(4000, 2)).astype(np.float32)
    wh = rng.uniform(10, 80, size=(4000, 2)).astype(np.float32)
    boxes = np.concatenate([xy, xy + wh], axis=1)
    scores = rng.random(4000).astype(np.float32)
    row("nms 4000 boxes iou 0.5", "TorchVision",
        lambda: ops.nms(ember.from_numpy(boxes), ember.from_numpy(scores), 0.5),
        lambda: torchvision.ops.nms(torch.from_numpy(boxes), torch.from_numpy(scores), 0.5))
    features = rng.standard_normal((2, 256, 50, 68)).astype(np.float32)
    rois = np.concatenate([rng.integers(0, 2, (512, 1)).astype(np.float32), boxes[:512] / 8], axis=1)
    row("roi_align 256ch 512 rois 7x7 sr2", "TorchVision",
        lambda: ops.roi_align(ember.from_numpy(features), ember.from_numpy(rois), 7, 1.0, 2, True),
        lambda: torchvision.ops.roi_align(torch.from_numpy(features), torch.from_numpy(rois), 7, 1.0, 2, True))


def bench_models():
    if torchvision is None:
        skip("resnet50 / mobilenet_v3_large forward", f"TorchVision does not import here: {NO_TORCHVISION}")
        return
    from embervision import models

    for name in ("resnet50", "mobilenet_v3_large"):
        ours = getattr(models, name)().eval()
        theirs = getattr(torchvision.models, name)().eval()
        x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
        xe, xt = ember.from_numpy(x), torch.from_numpy(x)

        def run_ours(model=ours, xe=xe):
            with ember.no_grad():
                return model(xe)

        def run_theirs(model=theirs, xt=xt):
            with torch.no_grad():
                return model(xt)

        row(f"{name} forward b1 224", "TorchVision", run_ours, run_theirs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="512x384", help="WIDTHxHEIGHT of the test image")
    parser.add_argument("--only", default="jpeg,png,resize,ops,models")
    args, _ = parser.parse_known_args()
    width, height = map(int, args.size.split("x"))
    only = set(args.only.split(","))
    ember.set_num_threads(1)
    if torch is not None:
        torch.set_num_threads(1)
    print(f"{'embervision benchmark (1 thread)':44s} {'ember':>12s} {'peer':>12s}  {'ratio':>6s}")
    bench_codecs(height, width, only)
    if "resize" in only:
        bench_resize(height, width)
    if "ops" in only:
        bench_ops()
    if "models" in only:
        bench_models()


if __name__ == "__main__":
    main()
