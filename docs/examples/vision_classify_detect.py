"""End to end with embervision, no downloads:

1. write an ImageFolder of PNGs (train/ and val/, four classes of 32x32 colour images: a disc, a
   square, horizontal stripes and a cross, at random places and colours, with noise);
2. read it with `datasets.ImageFolder` (the default loader decodes PNG with libpng), augment with
   transforms v2, batch with a DataLoader on 2 worker processes;
3. train a small ResNet (`models.resnet.ResNet` with one BasicBlock per stage) and report its
   held-out accuracy;
4. build a MobileNetV3-Large 320 FasterRCNN, fit it for a few steps to one synthetic scene of
   bright boxes written to disk as JPEG, run inference on that file and draw its three best
   detections, with their scores, into a PNG (`utils.draw_bounding_boxes`, `io.write_png`);
   the best detection's overlap with a true box is printed. From random weights, a few CPU steps
   do not train a detector: this shows the pipeline end to end. With COCO weights
   (`weights="DEFAULT"`, downloaded through `ember.hub` where the network allows) the same code
   finds real objects.

    python docs/examples/vision_classify_detect.py [--epochs 10] [--per-class 120] [--out DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from embervision import datasets, io, utils
from embervision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn
from embervision.models.resnet import BasicBlock, ResNet
from embervision.ops import box_iou
from embervision.transforms import v2

import ember
from ember import nn
from ember.utils.data import DataLoader

CLASSES = ("disc", "square", "stripes", "cross")
SIZE = 32


def draw_shape(kind: int, rng: np.random.Generator) -> np.ndarray:
    """One (3, SIZE, SIZE) uint8 image of shape `kind` in a random colour on a noisy background."""
    yy, xx = np.mgrid[:SIZE, :SIZE]
    cy, cx = rng.integers(10, SIZE - 10, size=2)
    r = rng.integers(5, 9)
    if kind == 0:
        mask = np.hypot(yy - cy, xx - cx) <= r
    elif kind == 1:
        mask = (np.abs(yy - cy) <= r - 1) & (np.abs(xx - cx) <= r - 1)
    elif kind == 2:
        mask = ((yy // 3) % 2 == 0) & (np.abs(yy - cy) <= r + 2) & (np.abs(xx - cx) <= r + 2)
    else:
        mask = ((np.abs(yy - cy) <= 1) | (np.abs(xx - cx) <= 1)) & (np.hypot(yy - cy, xx - cx) <= r + 2)
    background = rng.integers(0, 90, size=3)
    colour = rng.integers(140, 256, size=3)
    image = np.where(mask[None], colour[:, None, None], background[:, None, None]).astype(np.float64)
    image += rng.normal(0, 18, size=image.shape)
    return np.clip(image, 0, 255).astype(np.uint8)


def write_image_folder(root: Path, per_class: int, rng: np.random.Generator) -> None:
    for split, count in (("train", per_class), ("val", max(per_class // 3, 8))):
        for label, name in enumerate(CLASSES):
            folder = root / split / name
            folder.mkdir(parents=True, exist_ok=True)
            for i in range(count):
                io.write_png(ember.from_numpy(draw_shape(label, rng)), str(folder / f"{i:04d}.png"))


def small_resnet(num_classes: int) -> nn.Module:
    return ResNet(BasicBlock, [1, 1, 1, 1], num_classes=num_classes)


def classify(root: Path, epochs: int) -> float:
    normalize = v2.Normalize([0.5, 0.5, 0.5], [0.25, 0.25, 0.25])
    train_tf = v2.Compose([v2.RandomHorizontalFlip(), v2.ToDtype(ember.float32, scale=True), normalize])
    val_tf = v2.Compose([v2.ToDtype(ember.float32, scale=True), normalize])
    train = datasets.ImageFolder(str(root / "train"), transform=train_tf)
    val = datasets.ImageFolder(str(root / "val"), transform=val_tf)
    print(f"ImageFolder: {len(train)} training and {len(val)} held-out images, classes {train.classes}")
    loader = DataLoader(train, batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
    model = small_resnet(len(train.classes))
    optimizer = ember.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    scheduler = ember.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=epochs * len(loader))
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(epochs):
        model.train()
        start, total = time.perf_counter(), 0.0
        for images, labels in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(images), labels)
            loss.backward()
            optimizer.step()
            scheduler.step()
            total += float(loss)
        print(f"epoch {epoch + 1}: mean loss {total / len(loader):.3f} ({time.perf_counter() - start:.1f} s)")
    model.eval()
    correct = 0
    with ember.no_grad():
        for images, labels in DataLoader(val, batch_size=64):
            correct += int((model(images).argmax(1) == labels).sum())
    accuracy = correct / len(val)
    print(f"held-out accuracy: {accuracy:.3f} on {len(val)} images")
    return accuracy


def street(rng: np.random.Generator, height: int = 240, width: int = 320):
    """A dark scene with three bright boxes; returns (image uint8 (3,H,W), boxes (3,4) xyxy)."""
    image = rng.normal(40, 10, size=(3, height, width))
    boxes = []
    for x0, y0 in ((30, 60), (140, 40), (230, 120)):
        w, h = rng.integers(50, 80), rng.integers(50, 90)
        image[:, y0:y0 + h, x0:x0 + w] = rng.integers(150, 256, size=3)[:, None, None]
        boxes.append([x0, y0, x0 + w, y0 + h])
    return np.clip(image, 0, 255).astype(np.uint8), np.array(boxes, dtype=np.float32)


def detect(out_dir: Path, steps: int) -> Path:
    rng = np.random.default_rng(1)
    pixels, boxes = street(rng)
    scene = out_dir / "street.jpg"
    io.write_jpeg(ember.from_numpy(pixels), str(scene), quality=95)
    # Every detection is kept (box_score_thresh=0) so that the best three can be drawn whatever
    # their scores after this short fit.
    model = fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, num_classes=2,
                                                  box_score_thresh=0.0, box_detections_per_img=10)
    image = v2.functional.to_dtype(io.read_image(str(scene)), ember.float32, scale=True)
    target = {"boxes": ember.from_numpy(boxes), "labels": ember.ones(len(boxes), dtype=ember.int64)}
    optimizer = ember.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.02, momentum=0.9)
    model.train()
    for step in range(steps):
        losses = model([image], [target])
        loss = sum(losses.values())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 5 == 0 or step == steps - 1:
            print(f"detector step {step + 1}: loss {float(loss):.3f}")
    model.eval()
    with ember.no_grad():
        (found,) = model([image])
    best = found["scores"].argsort(descending=True)[:3]
    boxes_found, scores = found["boxes"][best], found["scores"][best]
    overlap = float(box_iou(boxes_found[:1], ember.from_numpy(boxes)).max()) if len(best) else 0.0
    print(f"FasterRCNN (MobileNetV3-Large 320 FPN) in {scene.name}: best scores "
          f"{[round(float(s), 3) for s in scores]}, the best box overlaps a true box with IoU {overlap:.2f}")
    drawn = utils.draw_bounding_boxes(io.read_image(str(scene)), boxes_found,
                                      labels=[f"{float(s):.2f}" for s in scores], colors="red", width=3)
    result = out_dir / "detections.png"
    io.write_png(drawn, str(result))
    print(f"wrote {result}")
    return result


def main(argv: list[str] | None = None) -> tuple[float, Path]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--per-class", type=int, default=120)
    parser.add_argument("--detector-steps", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None, help="where detections.png goes (default: a temp dir)")
    args = parser.parse_args(argv)
    ember.manual_seed(0)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "shapes"
        write_image_folder(root, args.per_class, np.random.default_rng(0))
        accuracy = classify(root, args.epochs)
    out_dir = args.out or Path(tempfile.mkdtemp(prefix="embervision-example-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    return accuracy, detect(out_dir, args.detector_steps)


if __name__ == "__main__":
    main()
