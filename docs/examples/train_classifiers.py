"""End to end: train an MLP and a small CNN on data made here (no downloads), with a DataLoader,
an optimizer and a learning-rate scheduler; save a checkpoint, reload it into fresh models and
check the reloaded models score the same. Part of the tour (`nox -s demo`); also runs alone:

    python docs/examples/train_classifiers.py

The MLP learns three interleaved spirals (2-D points); the CNN tells apart four kinds of noisy
12x12 images: a horizontal bar, a vertical bar, a diagonal and a ring. Each must reach the
accuracy it states on held-out data, or the script fails.
"""

from __future__ import annotations

import math
import pathlib
import tempfile
import time

import numpy as np

import ember
from ember import nn
from ember.optim import SGD, Adam
from ember.optim.lr_scheduler import OneCycleLR, StepLR
from ember.utils.data import DataLoader, TensorDataset, random_split

MLP_TARGET = 0.95  # held-out accuracy each model must reach
CNN_TARGET = 0.97


def spirals(n_per_class: int, rng: np.random.Generator):
    """Three spiral arms in the plane, one class each, with a little noise."""
    points, labels = [], []
    for label in range(3):
        r = np.linspace(0.05, 1.0, n_per_class)
        theta = r * 6.0 + label * 2 * math.pi / 3 + rng.normal(scale=0.2, size=n_per_class)
        points.append(np.stack([r * np.cos(theta), r * np.sin(theta)], axis=1))
        labels.append(np.full(n_per_class, label))
    return np.concatenate(points).astype(np.float32), np.concatenate(labels).astype(np.int64)


def shapes(n_per_class: int, rng: np.random.Generator, size: int = 12):
    """Noisy images of four shapes, placed at random offsets."""
    yy, xx = np.mgrid[:size, :size]
    images, labels = [], []
    for _ in range(n_per_class):
        for label in range(4):
            cy, cx = rng.integers(3, size - 3, size=2)
            if label == 0:
                mask = np.abs(yy - cy) <= 0
            elif label == 1:
                mask = np.abs(xx - cx) <= 0
            elif label == 2:
                mask = np.abs((yy - cy) - (xx - cx)) <= 0
            else:
                mask = np.abs(np.hypot(yy - cy, xx - cx) - 2.5) < 0.7
            image = mask.astype(np.float32) + rng.normal(scale=0.35, size=(size, size)).astype(np.float32)
            images.append(image[None])
            labels.append(label)
    return np.stack(images), np.array(labels, dtype=np.int64)


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(2, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 3))


def cnn() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 3 * 3, 32), nn.ReLU(), nn.Linear(32, 4))


def accuracy(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    right = total = 0
    with ember.no_grad():
        for x, y in loader:
            right += int((model(x).argmax(dim=1) == y).sum())
            total += y.shape[0]
    return right / total


def train(name: str, model, train_loader, test_loader, optimizer, scheduler, epochs: int, step_per_batch: bool):
    loss_fn = nn.CrossEntropyLoss()
    seconds = []
    for epoch in range(epochs):
        model.train()
        start = time.perf_counter()
        total_loss = 0.0
        for x, y in train_loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            if step_per_batch:
                scheduler.step()
            total_loss += float(loss) * y.shape[0]
        if not step_per_batch:
            scheduler.step()
        seconds.append(time.perf_counter() - start)
        if epoch % max(1, epochs // 4) == 0 or epoch == epochs - 1:
            print(f"  {name} epoch {epoch + 1:2d}/{epochs}: loss {total_loss / len(train_loader.dataset):.4f}, "
                  f"lr {optimizer.param_groups[0]['lr']:.4f}, {seconds[-1] * 1000:.0f} ms")
    return float(np.mean(seconds))


def run(name, data, labels, make_model, make_optimizer, make_scheduler, epochs, batch_size, target, num_workers,
        step_per_batch, directory: pathlib.Path):
    split = ember.Generator()
    split.manual_seed(0)
    dataset = TensorDataset(ember.from_numpy(data), ember.from_numpy(labels))
    n_test = len(dataset) // 5
    train_set, test_set = random_split(dataset, [len(dataset) - n_test, n_test], generator=split)
    shuffle = ember.Generator()
    shuffle.manual_seed(1)
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True, generator=shuffle,
                              num_workers=num_workers, persistent_workers=num_workers > 0)
    test_loader = DataLoader(test_set, batch_size=256)
    model = make_model()
    optimizer = make_optimizer(model)
    scheduler = make_scheduler(optimizer, len(train_loader))
    per_epoch = train(name, model, train_loader, test_loader, optimizer, scheduler, epochs, step_per_batch)
    acc = accuracy(model, test_loader)
    print(f"  {name}: held-out accuracy {acc:.3f} (target {target}), {per_epoch * 1000:.0f} ms per epoch "
          f"({len(train_set)} samples, num_workers={num_workers})")
    if acc < target:
        raise SystemExit(f"{name}: accuracy {acc:.3f} is below the stated {target}")
    # Checkpoint: model and optimizer state in one file, reloaded into fresh objects.
    path = directory / f"{name}.safetensors"
    ember.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epochs}, path)
    state = ember.load(path)
    fresh = make_model()
    fresh.load_state_dict(state["model"])
    fresh_optimizer = make_optimizer(fresh)
    fresh_optimizer.load_state_dict(state["optimizer"])
    reloaded = accuracy(fresh, test_loader)
    print(f"  {name}: checkpoint {path.name} ({path.stat().st_size // 1024} KiB) reloads at accuracy {reloaded:.3f}")
    if reloaded != acc:
        raise SystemExit(f"{name}: the reloaded model scores {reloaded}, not {acc}")
    return acc, per_epoch


def main() -> dict:
    ember.manual_seed(0)
    rng = np.random.default_rng(0)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        directory = pathlib.Path(tmp)
        points, point_labels = spirals(400, rng)
        results["mlp"] = run(
            "mlp", points, point_labels, mlp, lambda m: Adam(m.parameters(), lr=0.01),
            lambda opt, steps: StepLR(opt, step_size=15, gamma=0.3), epochs=40, batch_size=64, target=MLP_TARGET,
            num_workers=0, step_per_batch=False, directory=directory)
        images, image_labels = shapes(150, rng)
        results["cnn"] = run(
            "cnn", images, image_labels, cnn, lambda m: SGD(m.parameters(), lr=0.05, momentum=0.9),
            lambda opt, steps: OneCycleLR(opt, max_lr=0.03, total_steps=12 * steps), epochs=12, batch_size=32,
            target=CNN_TARGET, num_workers=2, step_per_batch=True, directory=directory)
    return results


if __name__ == "__main__":
    main()
