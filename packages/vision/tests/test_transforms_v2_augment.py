"""AutoAugment family and MixUp / CutMix."""

import math

import numpy as np
import pytest

import ember
from embervision import tv_tensors
from embervision.transforms import v2
from embervision.transforms.v2 import functional as F


def _image(seed=0, shape=(3, 12, 12)):
    rng = np.random.default_rng(seed)
    return tv_tensors.Image(ember.tensor(rng.integers(0, 256, size=shape).astype(np.uint8)))


def test_magnitude_bins():
    space = v2.AutoAugment._AUGMENTATION_SPACE
    assert space["Posterize"][0](10, 0, 0).tolist() == [8, 8, 7, 7, 6, 6, 5, 5, 4, 4]
    np.testing.assert_allclose(space["TranslateX"][0](10, 20, 331).numpy()[-1], 150.0, rtol=1e-6)
    assert v2.TrivialAugmentWide._AUGMENTATION_SPACE["Posterize"][0](31, 0, 0).tolist()[::10] == [8, 6, 4, 2]
    assert len(v2.AutoAugment(v2.AutoAugmentPolicy.SVHN)._policies) == 25


@pytest.mark.parametrize("op, magnitude, expected", [
    ("ShearX", 0.2, lambda im: F.affine(im, 0.0, [0, 0], 1.0, [math.degrees(math.atan(0.2)), 0.0], center=[0, 0], fill=None)),
    ("TranslateY", -3.7, lambda im: F.affine(im, 0.0, [0, -3], 1.0, [0.0, 0.0], fill=None)),
    ("Rotate", 20.0, lambda im: F.rotate(im, 20.0)),
    ("Color", 0.5, lambda im: F.adjust_saturation(im, 1.5)),
    ("Posterize", 3.0, lambda im: F.posterize(im, 3)),
    ("Solarize", 0.5, lambda im: F.solarize(im, 127.5)),
    ("Invert", 0.0, lambda im: F.invert(im)),
    ("Identity", 0.0, lambda im: im),
])
def test_each_op_is_its_functional(op, magnitude, expected):
    img = _image()
    out = v2.AutoAugment()._apply_image_or_video_transform(img, op, magnitude)
    np.testing.assert_array_equal(out.numpy(), expected(img).numpy())


@pytest.mark.parametrize("make", [lambda: v2.AutoAugment(), lambda: v2.AutoAugment(v2.AutoAugmentPolicy.CIFAR10),
                                  lambda: v2.RandAugment(), lambda: v2.TrivialAugmentWide(), lambda: v2.AugMix()])
def test_seeded_and_typed(make):
    img = _image(1)
    outs = []
    for _ in range(2):
        ember.manual_seed(3)
        t = make()
        outs.append([t(img) for _ in range(5)])
    for a, b in zip(*outs, strict=True):
        assert type(a) is tv_tensors.Image and a.dtype == ember.uint8 and a.shape == img.shape
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    plain_out, label = make()(img.as_subclass(ember.Tensor), 7)
    assert type(plain_out) is ember.Tensor and label == 7


def test_rand_augment_applies_num_ops(monkeypatch):
    picked = []
    t = v2.RandAugment(num_ops=3, magnitude=30)
    orig = t._apply_image_or_video_transform

    def spy(image, transform_id, magnitude):
        picked.append((transform_id, magnitude))
        return orig(image, transform_id, magnitude)

    monkeypatch.setattr(t, "_apply_image_or_video_transform", spy)
    ember.manual_seed(0)
    t(_image())
    assert len(picked) == 3
    for name, magnitude in picked:  # the top bin of each op's range (sign aside)
        fn, _ = t._AUGMENTATION_SPACE[name]
        bins = fn(31, 12, 12)
        assert bins is None and magnitude == 0.0 or abs(magnitude) == pytest.approx(float(bins[30]))


def test_augmix_weights_sum_to_one(monkeypatch):
    img = tv_tensors.Image(ember.rand((3, 8, 8), dtype=ember.float64))
    t = v2.AugMix(mixture_width=4, chain_depth=2)
    monkeypatch.setattr(t, "_apply_image_or_video_transform", lambda image, op, m: image)
    # the Dirichlet weights are float32 (the default dtype), as torchvision's
    np.testing.assert_allclose(t(img).numpy(), img.numpy(), rtol=1e-6)
    batch = tv_tensors.Image(ember.rand((2, 3, 8, 8), dtype=ember.float64))
    np.testing.assert_allclose(t(batch).numpy(), batch.numpy(), rtol=1e-6)


def test_auto_augment_errors():
    img = _image()
    boxes = tv_tensors.BoundingBoxes([[0, 0, 2, 2]], format="XYXY", canvas_size=(12, 12))
    with pytest.raises(TypeError, match="Inputs of type BoundingBoxes are not supported by AutoAugment"):
        v2.AutoAugment()(img, boxes)
    with pytest.raises(TypeError, match="Found no image in the sample."):
        v2.TrivialAugmentWide()({"label": 1})
    with pytest.raises(TypeError, match="only properly defined for a single image or video, but found 2"):
        v2.RandAugment()(img, tv_tensors.Image(img.clone()))
    with pytest.raises(ValueError, match="num_ops should be a non-negative integer"):
        v2.RandAugment(num_ops=-1)
    with pytest.raises(ValueError, match=r"The severity must be between \[1, 10\]. Got 11 instead."):
        v2.AugMix(severity=11)
    with pytest.raises(ValueError, match="The provided policy"):
        v2.AutoAugment("imagenet")


def test_mixup_and_cutmix():
    rng = np.random.default_rng(0)
    x = rng.uniform(size=(4, 3, 8, 10))
    labels = ember.tensor([0, 1, 2, 1])
    ember.manual_seed(5)
    out, mixed = v2.MixUp(alpha=0.5, num_classes=3)(ember.tensor(x), labels)
    lam = float(mixed[0, 0])
    np.testing.assert_allclose(out.numpy(), lam * x + (1 - lam) * np.roll(x, 1, axis=0), rtol=1e-12)
    onehot = np.eye(3)[[0, 1, 2, 1]]
    np.testing.assert_allclose(mixed.numpy(), lam * onehot + (1 - lam) * np.roll(onehot, 1, axis=0), rtol=1e-6)

    imgs = tv_tensors.Image(ember.tensor(x))
    ember.manual_seed(6)
    out, mixed = v2.CutMix(num_classes=3)(imgs, labels)
    assert type(out) is tv_tensors.Image
    changed = np.any(out.numpy() != x, axis=(0, 1))  # the pasted box
    area = changed.sum() / changed.size
    ys, xs = np.nonzero(changed)
    if area:
        box = (slice(ys.min(), ys.max() + 1), slice(xs.min(), xs.max() + 1))
        np.testing.assert_array_equal(out.numpy()[..., box[0], box[1]], np.roll(x, 1, axis=0)[..., box[0], box[1]])
    lam_adjusted = 1 - area
    np.testing.assert_allclose(mixed.numpy(), lam_adjusted * onehot + (1 - lam_adjusted) * np.roll(onehot, 1, axis=0),
                               rtol=1e-6)
    # dict samples find their labels by key
    sample = v2.MixUp(num_classes=3)({"image": imgs, "labels": labels})
    assert sample["labels"].shape == (4, 3)


def test_mixup_errors():
    x = ember.rand((4, 3, 4, 4))
    with pytest.raises(ValueError, match=r"labels tensor should be of shape \(batch_size,\)"):
        v2.MixUp(num_classes=3)(x, ember.zeros((4, 1), dtype=ember.int64))
    with pytest.raises(ValueError, match="Expected a batched input with 4 dims, but got 3 dimensions instead."):
        v2.CutMix(num_classes=3)(ember.rand((3, 4, 4)), ember.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="The batch size of the image or video does not match"):
        v2.MixUp(num_classes=3)(x, ember.tensor([0, 1]))
    with pytest.raises(ValueError, match="does not support PIL images, bounding boxes and masks"):
        v2.MixUp(num_classes=3)(x, tv_tensors.Mask(ember.zeros((4, 4, 4))), ember.tensor([0, 1, 2, 0]))
