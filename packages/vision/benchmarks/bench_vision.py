"""embervision beside its peers, in one process, same inputs, one thread each: JPEG and PNG
decoding and encoding beside Pillow, the Resize(antialias)+Normalize pipeline beside PyTorch's
`interpolate(antialias=True)`, and nms / roi_align / ResNet-50 / MobileNetV3 beside TorchVision.

TorchVision runs in a child interpreter (_torchvision_peer.py): the one EMBER_TORCHVISION_PYTHON
names, else this one when it imports torchvision. PyPI's TorchVision does not load beside the
PyTorch 2.13 CPU build the bench session installs, so `nox -s bench` keeps the seeds' torch 2.2.2 +
torchvision 0.17.2 in a venv of its own and names it; without either, those rows say why.

    python bench_vision.py [--size 512x384] [--only jpeg,png,resize,ops,models]

Ratios are Ember time / peer time (lower is better; 1.00 is parity): the median of
per-repetition ratios of interleaved runs (the child times its calls while this process waits).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def _per_call(fn, number):
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


class PeerCall:
    """A call set up in the peer's process; time(number) runs it there and returns s/call."""

    def __init__(self, time_fn):
        self.time = time_fn


def side_by_side(ours, theirs, reps=7, seconds=0.2):
    """(ours s/call, theirs s/call, median ratio) over interleaved repetitions. `theirs` is a
    callable of this process or a PeerCall timed in the peer's."""
    time_ours = lambda number: _per_call(ours, number)  # noqa: E731
    time_theirs = theirs.time if isinstance(theirs, PeerCall) else lambda number: _per_call(theirs, number)
    time_ours(1), time_theirs(1)  # warm-up
    n_ours = max(1, int(seconds / time_ours(1)))
    n_theirs = max(1, int(seconds / time_theirs(1)))
    times = [(time_ours(n_ours), time_theirs(n_theirs)) for _ in range(reps)]
    return (statistics.median(a for a, _ in times), statistics.median(b for _, b in times),
            statistics.median(a / b for a, b in times))


def row(name, peer, ours, theirs):
    a, b, ratio = side_by_side(ours, theirs)
    print(f"{name:44s} {a * 1e3:9.3f} ms {b * 1e3:9.3f} ms  {ratio:6.2f}  ({peer})", flush=True)


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


class TorchVisionPeer:
    """TorchVision in a child interpreter running _torchvision_peer.py (JSON lines over pipes,
    arrays as .npz files in a temporary folder)."""

    def __init__(self, python):
        self._tmp = tempfile.TemporaryDirectory(prefix="bench-vision-peer-")
        script = Path(__file__).resolve().with_name("_torchvision_peer.py")
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        self._proc = subprocess.Popen([python, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      text=True, env=env)
        hello = self._read()
        self.label = f"TorchVision {hello['torchvision']}, torch {hello['torch']}, child process"
        self._count = 0

    def _read(self):
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the TorchVision peer exited (status {self._proc.wait()})")
        return json.loads(line)

    def _ask(self, request):
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        answer = self._read()
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return answer

    def setup(self, name, kind, arrays, **args):
        """Sends `arrays`, builds the call there and runs it once: (PeerCall, its result)."""
        self._count += 1
        inputs = os.path.join(self._tmp.name, f"in{self._count}.npz")
        out = os.path.join(self._tmp.name, f"out{self._count}.npz")
        np.savez(inputs, **arrays)
        self._ask({"cmd": "setup", "name": name, "kind": kind, "inputs": inputs, "args": args, "out": out})
        with np.load(out) as data:
            result = data["out"]
        os.remove(inputs)
        return PeerCall(lambda number: self._ask({"cmd": "time", "name": name, "number": number})["seconds"]), result

    def close(self):
        if self._proc.poll() is None:
            self._proc.stdin.write(json.dumps({"cmd": "quit"}) + "\n")
            self._proc.stdin.close()
            self._proc.wait(timeout=60)
        self._tmp.cleanup()


def start_torchvision_peer():
    """(peer, None), or (None, why there is none)."""
    python = os.environ.get("EMBER_TORCHVISION_PYTHON")
    if not python:
        try:
            import torchvision  # noqa: F401 - only asks whether this interpreter can be the peer
        except Exception as error:  # noqa: BLE001 - any import failure means no peer here
            return None, (f"TorchVision does not import here: {type(error).__name__}: {str(error)[:60]}; "
                          "set EMBER_TORCHVISION_PYTHON (nox -s bench does)")
        python = sys.executable
    try:
        return TorchVisionPeer(python), None
    except (OSError, RuntimeError, ValueError) as error:
        return None, f"the TorchVision peer {python} did not start: {error}"


def random_boxes(rng, count, width, height, min_side, max_side):
    xy = rng.uniform(0, 1, size=(count, 2)) * [width, height]
    wh = rng.uniform(min_side, max_side, size=(count, 2))
    return np.concatenate([xy, xy + wh], axis=1).astype(np.float32)


def bench_ops(peer):
    rng = np.random.default_rng(0)
    for count in (1000, 5000):
        boxes = random_boxes(rng, count, 500, 500, 10, 80)
        scores = rng.random(count).astype(np.float32)
        theirs, kept = peer.setup(f"nms{count}", "nms", {"boxes": boxes, "scores": scores}, iou=0.5)
        be, se = ember.from_numpy(boxes), ember.from_numpy(scores)
        check = "same boxes kept" if np.array_equal(ops.nms(be, se, 0.5).numpy(), kept) else "KEPT BOXES DIFFER"
        row(f"nms {count} boxes iou 0.5", f"{peer.label}; {check}", lambda be=be, se=se: ops.nms(be, se, 0.5), theirs)
    # A Faster R-CNN box head's pooling: 1000 proposals of an 800x1088 image on its stride-16 map.
    features = rng.standard_normal((1, 256, 50, 68)).astype(np.float32)
    rois = np.concatenate([np.zeros((1000, 1), np.float32), random_boxes(rng, 1000, 1000, 700, 16, 400)], axis=1)
    args = dict(output_size=7, spatial_scale=1 / 16, sampling_ratio=2, aligned=True)
    theirs, pooled = peer.setup("roi_align", "roi_align", {"features": features, "rois": rois}, **args)
    fe, re = ember.from_numpy(features), ember.from_numpy(rois)
    diff = np.abs(ops.roi_align(fe, re, **args).numpy() - pooled).max()
    row("roi_align 256ch 50x68 1000 rois 7x7 sr2", f"{peer.label}; max |diff| {diff:.1e}",
        lambda: ops.roi_align(fe, re, **args), theirs)


def bench_models(peer):
    from embervision import models

    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    xe = ember.from_numpy(x)
    for name in ("resnet50", "mobilenet_v3_large"):
        ember.manual_seed(0)
        ours = getattr(models, name)().eval()
        # The peer loads these random weights: both sides compute the same function.
        arrays = {f"param:{key}": value.detach().numpy() for key, value in ours.state_dict().items()}
        theirs, logits = peer.setup(name, "model", {**arrays, "x": x}, arch=name)

        def run_ours(model=ours):
            with ember.no_grad():
                return model(xe)

        scale = max(np.abs(logits).max(), 1e-30)
        diff = np.abs(run_ours().numpy() - logits).max() / scale
        row(f"{name} forward b1 224", f"{peer.label}; max |diff| / max |y| {diff:.1e}", run_ours, theirs)


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
    if only & {"ops", "models"}:
        peer, why = start_torchvision_peer()
        if peer is None:
            skip("nms / roi_align / resnet50 / mobilenet_v3", why)
            return
        try:
            if "ops" in only:
                bench_ops(peer)
            if "models" in only:
                bench_models(peer)
        finally:
            peer.close()


if __name__ == "__main__":
    main()
