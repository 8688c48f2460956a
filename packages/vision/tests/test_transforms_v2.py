"""transforms.v2 transforms: joint consistency of images, masks and boxes, the input rules,
seeded randomness, containers and argument errors."""

import numpy as np
import pytest

import ember
from embervision import tv_tensors
from embervision.transforms import v2
from embervision.transforms.v2 import InterpolationMode

H, W = 32, 40
RECT = (8, 20, 10, 26)  # rows 8..19, cols 10..25: the box [10, 8, 26, 20]
NEAREST = InterpolationMode.NEAREST


def _sample():
    img = np.zeros((3, H, W), dtype=np.float32)
    img[:, RECT[0]:RECT[1], RECT[2]:RECT[3]] = 1.0
    mask = (img[:1] > 0).astype(np.uint8)
    return (tv_tensors.Image(ember.tensor(img)),
            tv_tensors.BoundingBoxes([[RECT[2], RECT[0], RECT[3], RECT[1]]], format="XYXY", canvas_size=(H, W),
                                     dtype=ember.float32),
            tv_tensors.Mask(ember.tensor(mask)))


JOINT = [
    ("hflip", lambda: v2.RandomHorizontalFlip(p=1.0), 0),
    ("vflip", lambda: v2.RandomVerticalFlip(p=1.0), 0),
    ("resize", lambda: v2.Resize((16, 20), interpolation=NEAREST), 0),
    ("resize_short", lambda: v2.Resize(48, interpolation=NEAREST), 0),
    ("resized_crop", lambda: v2.RandomResizedCrop(24, scale=(0.5, 1.0), interpolation=NEAREST), 1),
    ("center_crop", lambda: v2.CenterCrop(20), 0),
    ("center_crop_pad", lambda: v2.CenterCrop((40, 50)), 0),
    ("random_crop", lambda: v2.RandomCrop(24), 0),
    ("random_crop_pad", lambda: v2.RandomCrop(40, pad_if_needed=True), 0),
    ("pad", lambda: v2.Pad([3, 1, 2, 4]), 0),
    ("pad_reflect_img", lambda: v2.Pad(2, padding_mode="constant", fill={tv_tensors.Image: 0, tv_tensors.Mask: 0}), 0),
    ("affine", lambda: v2.RandomAffine(30, translate=(0.1, 0.1), scale=(0.8, 1.2), shear=(-10, 10, -5, 5)), 1),
    ("rotate", lambda: v2.RandomRotation(45), 1),
    ("rotate_expand", lambda: v2.RandomRotation((20, 60), expand=True), 1),
    ("perspective", lambda: v2.RandomPerspective(0.5, p=1.0, interpolation=NEAREST), 1),
    ("elastic", lambda: v2.ElasticTransform(alpha=20.0, sigma=3.0, interpolation=NEAREST), 3),
    ("zoom_out", lambda: v2.RandomZoomOut(p=1.0, side_range=(1.0, 2.0)), 0),
    ("iou_crop", lambda: v2.RandomIoUCrop(), 0),
    ("scale_jitter", lambda: v2.ScaleJitter((32, 40), scale_range=(0.5, 1.5), interpolation=NEAREST), 1),
    ("shortest_size", lambda: v2.RandomShortestSize([20, 48], max_size=50, interpolation=NEAREST), 1),
    ("random_resize", lambda: v2.RandomResize(16, 40, interpolation=NEAREST), 1),
]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name, make, tight", JOINT, ids=[j[0] for j in JOINT])
def test_boxes_and_masks_follow_the_image(name, make, tight, seed):
    img, boxes, mask = _sample()
    ember.manual_seed(seed)
    out_img, out_boxes, out_mask = make()(img, boxes, mask)
    assert type(out_img) is tv_tensors.Image and type(out_mask) is tv_tensors.Mask
    assert type(out_boxes) is tv_tensors.BoundingBoxes
    assert out_boxes.canvas_size == tuple(out_img.shape[-2:]) == tuple(out_mask.shape[-2:])
    # The mask went through the same (nearest) resampling as the image: the same pixels.
    drawn = out_img.numpy()[0] > 0.5
    np.testing.assert_array_equal(out_mask.numpy()[0].astype(bool), drawn)
    x1, y1, x2, y2 = out_boxes.numpy()[0]
    ys, xs = np.nonzero(drawn)
    if len(xs) == 0:
        assert (x2 - x1) * (y2 - y1) == 0
        return
    # The box covers every moved pixel (up to one pixel of resampling) ...
    assert x1 <= xs.min() + 1 and y1 <= ys.min() + 1 and x2 >= xs.max() and y2 >= ys.max()
    # ... and is no larger than the pixels' hull beyond a transform-dependent slack.
    if tight is not None:
        assert x1 >= xs.min() - 1 - tight and y1 >= ys.min() - 1 - tight
        assert x2 <= xs.max() + 2 + tight and y2 <= ys.max() + 2 + tight


def test_exact_boxes_for_exact_transforms():
    img, boxes, mask = _sample()
    for t in (v2.RandomHorizontalFlip(1.0), v2.RandomVerticalFlip(1.0), v2.CenterCrop(20), v2.Pad([3, 1, 2, 4]),
              v2.Resize((16, 20), interpolation=NEAREST)):
        _, out_boxes, out_mask = t(img, boxes, mask)
        ys, xs = np.nonzero(out_mask.numpy()[0])
        np.testing.assert_array_equal(out_boxes.numpy()[0], [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])


def test_plain_tensor_rules():
    flip = v2.RandomHorizontalFlip(p=1.0)
    a = ember.arange(6.0).reshape(1, 2, 3)
    b = ember.arange(6.0).reshape(1, 2, 3)
    # no Image or Video: the first plain tensor is the image, the others pass through
    out_a, out_b = flip(a, b)
    assert out_a.tolist() == a.flip(-1).tolist() and out_b is b
    # an Image present: plain tensors pass through
    img = tv_tensors.Image(ember.arange(6.0).reshape(1, 2, 3))
    out_img, out_plain = flip(img, a)
    assert out_img.tolist() == img.flip(-1).tolist() and out_plain is a
    # non-tensors pass through, the structure is kept
    out = flip({"image": img, "label": 3, "name": "x", "extra": [a, (b,)]})
    assert out["label"] == 3 and out["name"] == "x" and out["extra"][0] is a and out["extra"][1][0] is b
    # a single plain tensor is transformed
    assert flip(a).tolist() == a.flip(-1).tolist()


def test_inputs_without_kernels_pass_through():
    class Keypoints(tv_tensors.TVTensor):
        pass

    kp = Keypoints._make(ember.zeros((5, 2)))
    img = tv_tensors.Image(ember.ones((3, 2, 2)))
    out_img, out_kp = v2.Normalize([0.5] * 3, [0.5] * 3)(img, kp)
    assert out_kp is kp and out_img.tolist() == np.ones((3, 2, 2)).tolist()
    mask = tv_tensors.Mask(ember.ones((2, 2), dtype=ember.uint8))
    assert v2.Normalize([0.5] * 3, [0.5] * 3)(img, mask)[1] is mask  # masks are not normalized
    assert v2.ColorJitter(brightness=0.5)(img, mask)[1] is mask


def test_seeded_randomness():
    img, boxes, mask = _sample()
    t = v2.Compose([v2.RandomResizedCrop(16), v2.RandomHorizontalFlip(), v2.RandomAffine(20),
                    v2.ColorJitter(0.4, 0.4, 0.4, 0.1)])
    ember.manual_seed(7)
    first = t(img, boxes, mask)
    ember.manual_seed(7)
    second = t(img, boxes, mask)
    for x, y in zip(first, second, strict=True):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    ember.manual_seed(8)
    third = t(img, boxes, mask)
    assert not np.array_equal(third[1].numpy(), first[1].numpy())
    assert v2.RandomHorizontalFlip(p=0.0)(img) is img


def test_random_resized_crop_params():
    t = v2.RandomResizedCrop(8, scale=(0.25, 0.5), ratio=(1.0, 1.0))
    ember.manual_seed(0)
    for _ in range(20):
        p = t._get_params([ember.zeros((3, 20, 20))])
        assert p["height"] == p["width"] and 0.2 <= p["height"] * p["width"] / 400 <= 0.55
        assert 0 <= p["top"] <= 20 - p["height"] and 0 <= p["left"] <= 20 - p["width"]
    # an impossible aspect ratio falls back to the central crop
    p = v2.RandomResizedCrop(8, scale=(1.0, 1.0), ratio=(4.0, 4.0))._get_params([ember.zeros((3, 20, 10))])
    assert p == dict(top=(20 - 2) // 2 + 0, left=0, height=int(round(10 / 4.0)), width=10)


def test_grayscale_jitter_and_photometric_transforms():
    rng = np.random.default_rng(0)
    img = tv_tensors.Image(ember.tensor(rng.integers(0, 256, (3, 6, 6)).astype(np.uint8)))
    assert v2.Grayscale()(img).shape == (1, 6, 6)
    out = v2.RandomGrayscale(p=1.0)(img)
    assert out.shape == (3, 6, 6) and np.array_equal(out.numpy()[0], out.numpy()[2])
    ember.manual_seed(0)
    for t in (v2.ColorJitter(0.5, 0.5, 0.5, 0.2), v2.RandomPosterize(3, p=1), v2.RandomSolarize(100, p=1),
              v2.RandomEqualize(p=1), v2.RandomAutocontrast(p=1), v2.RandomAdjustSharpness(2, p=1),
              v2.RandomInvert(p=1), v2.GaussianBlur(3)):
        out = t(img)
        assert type(out) is tv_tensors.Image and out.dtype == ember.uint8 and out.shape == (3, 6, 6)
    assert v2.ColorJitter(brightness=(1.0, 1.0)).brightness is None  # a neutral range is skipped
    np.testing.assert_array_equal(v2.RandomInvert(p=1)(img).numpy(), 255 - img.numpy())


def test_type_conversion_and_meta_transforms():
    arr = np.arange(24, dtype=np.uint8).reshape(2, 4, 3)  # HWC
    img = v2.ToImage()(arr)
    assert type(img) is tv_tensors.Image and img.shape == (3, 2, 4)
    np.testing.assert_array_equal(img.numpy(), arr.transpose(2, 0, 1))
    assert type(v2.ToPureTensor()(img)) is ember.Tensor
    conv = v2.ToDtype({tv_tensors.Image: ember.float32, tv_tensors.Mask: ember.int64, "others": None}, scale=True)
    mask = tv_tensors.Mask(ember.ones((2, 4), dtype=ember.uint8))
    out_img, out_mask, label = conv(img, mask, ember.tensor([1]))
    assert out_img.dtype == ember.float32 and out_mask.dtype == ember.int64 and float(out_img.max()) <= 1.0
    assert label.dtype == ember.int64
    with pytest.raises(ValueError, match="No dtype was specified for type"):
        v2.ToDtype({tv_tensors.Image: ember.float32})(img, mask)
    boxes = tv_tensors.BoundingBoxes([[1.0, 1.0, 3.0, 5.0]], format="XYXY", canvas_size=(4, 4))
    cx = v2.ConvertBoundingBoxFormat("CXCYWH")(boxes)
    assert cx.format is tv_tensors.BoundingBoxFormat.CXCYWH and cx.tolist() == [[2.0, 3.0, 2.0, 4.0]]
    assert v2.ClampBoundingBoxes()(boxes).tolist() == [[1.0, 1.0, 3.0, 4.0]]
    assert v2.Lambda(lambda x: x + 1, tv_tensors.Mask)(img, mask)[1].tolist() == (mask + 1).tolist()


def test_sanitize_bounding_boxes():
    boxes = tv_tensors.BoundingBoxes([[0, 0, 4, 4], [1, 1, 1.5, 3], [2, 2, 9, 3], [0, 0, 2, 2]], format="XYXY",
                                     canvas_size=(5, 5))
    masks = tv_tensors.Mask(ember.arange(4).reshape(4, 1, 1).expand(4, 5, 5).contiguous())
    sample = {"image": tv_tensors.Image(ember.zeros((3, 5, 5))), "boxes": boxes, "masks": masks,
              "labels": ember.tensor([10, 11, 12, 13])}
    out = v2.SanitizeBoundingBoxes()(sample)
    assert out["labels"].tolist() == [10, 13]  # too thin, and out of the canvas, are dropped
    assert out["boxes"].tolist() == [[0, 0, 4, 4], [0, 0, 2, 2]] and out["boxes"].canvas_size == (5, 5)
    assert out["masks"][:, 0, 0].tolist() == [0, 3] and type(out["masks"]) is tv_tensors.Mask
    img2, target = v2.SanitizeBoundingBoxes(min_size=3)(sample["image"], {"boxes": boxes, "class_labels": ember.arange(4)})
    assert target["class_labels"].tolist() == [0]
    with pytest.raises(ValueError, match="Could not infer where the labels are in the sample"):
        v2.SanitizeBoundingBoxes()({"boxes": boxes})
    assert len(v2.SanitizeBoundingBoxes(labels_getter=None)({"boxes": boxes})["boxes"]) == 2
    with pytest.raises(ValueError, match=r"Number of boxes \(shape=\(4, 4\)\) and number of labels"):
        v2.SanitizeBoundingBoxes()({"boxes": boxes, "labels": ember.arange(3)})
    with pytest.raises(ValueError, match="min_size must be >= 1"):
        v2.SanitizeBoundingBoxes(min_size=0.5)


def test_containers():
    a = ember.arange(6.0).reshape(1, 2, 3)
    flip = v2.RandomHorizontalFlip(p=1.0)
    vflip = v2.RandomVerticalFlip(p=1.0)
    assert v2.Compose([flip, flip])(a).tolist() == a.tolist()
    out = v2.Compose([flip])(a, {"x": 1})
    assert out[0].tolist() == a.flip(-1).tolist() and out[1] == {"x": 1}
    assert v2.RandomApply([flip], p=0.0)(a) is a
    assert v2.RandomApply([flip], p=1.0)(a).tolist() == a.flip(-1).tolist()
    assert v2.RandomChoice([flip, vflip], p=[0.0, 1.0])(a).tolist() == a.flip(-2).tolist()
    ember.manual_seed(0)
    assert v2.RandomOrder([flip, vflip])(a).tolist() == a.flip(-1).flip(-2).tolist()
    with pytest.raises(TypeError, match="Argument transforms should be a sequence of callables"):
        v2.Compose(flip)
    with pytest.raises(ValueError, match="Pass at least one transform"):
        v2.Compose([])
    with pytest.raises(ValueError, match="Length of p doesn't match the number of transforms"):
        v2.RandomChoice([flip], p=[0.5, 0.5])


def test_argument_and_sample_errors():
    with pytest.raises(ValueError, match="size can either be an integer or a sequence of one or two integers"):
        v2.Resize("big")
    with pytest.raises(ValueError, match="`p` should be a floating point value in the interval"):
        v2.RandomHorizontalFlip(p=2.0)
    with pytest.raises(ValueError, match="If brightness is a single number, it must be non negative."):
        v2.ColorJitter(brightness=-1)
    with pytest.raises(ValueError, match="hue values should be between"):
        v2.ColorJitter(hue=0.7)
    with pytest.raises(ValueError, match="Argument distortion_scale value should be between 0 and 1"):
        v2.RandomPerspective(distortion_scale=2)
    with pytest.raises(ValueError, match="If degrees is a single number, it must be positive."):
        v2.RandomRotation(-3)
    with pytest.raises(ValueError, match="Padding mode should be either constant, edge, reflect or symmetric"):
        v2.Pad(1, padding_mode="wrap")
    with pytest.raises(TypeError, match="Got inappropriate fill arg"):
        v2.Pad(1, fill="white")
    with pytest.raises(ValueError, match=r"Required crop size \(9, 9\) is larger than input image size \(4, 4\)"):
        v2.RandomCrop(9)(ember.zeros((3, 4, 4)))
    with pytest.raises(ValueError, match="Found multiple HxW dimensions in the sample"):
        v2.RandomCrop(2)(tv_tensors.Image(ember.zeros((3, 4, 4))), tv_tensors.Mask(ember.zeros((5, 5))))
    with pytest.raises(TypeError, match="No image, video, mask or bounding box was found in the sample"):
        v2.RandomCrop(2)({"label": 3})


def test_detection_and_video_helpers():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, size=(2, 3, 4, 5)).astype(np.uint8)
    out = v2.functional.permute_channels(ember.tensor(a), [2, 0, 1])
    np.testing.assert_array_equal(out.numpy(), a[:, [2, 0, 1]])
    with pytest.raises(ValueError, match="Length of permutation does not match number of channels: 2 != 3"):
        v2.functional.permute_channels(ember.tensor(a), [1, 0])
    ember.manual_seed(0)
    shuffled = v2.RandomChannelPermutation()(tv_tensors.Image(ember.tensor(a[0]))).numpy()
    assert sorted(shuffled.reshape(3, -1).tolist()) == sorted(a[0].reshape(3, -1).tolist())
    ember.manual_seed(1)
    distorted = v2.RandomPhotometricDistort(p=1.0)(tv_tensors.Image(ember.tensor(a[0])))
    assert type(distorted) is tv_tensors.Image and distorted.dtype == ember.uint8
    video = tv_tensors.Video(ember.tensor(rng.integers(0, 256, size=(10, 3, 2, 2)).astype(np.uint8)))
    sub = v2.UniformTemporalSubsample(4)(video)
    assert type(sub) is tv_tensors.Video
    np.testing.assert_array_equal(sub.numpy(), video.numpy()[[0, 3, 6, 9]])
    img = tv_tensors.Image(ember.zeros((3, 2, 2)))
    assert v2.Identity()(img) is img
    assert v2.UniformTemporalSubsample(2)(img) is img  # images are not videos
    with pytest.raises(ValueError, match=r"Invalid canvas side range provided \(0.5, 2.0\)"):
        v2.RandomZoomOut(side_range=(0.5, 2.0))
    with pytest.raises(TypeError, match="RandomIoUCrop\\(\\) requires input sample to contain tensor or PIL images and "
                                        "bounding boxes"):
        v2.RandomIoUCrop()(img)


def test_iou_crop_zeroes_boxes_outside():
    img = tv_tensors.Image(ember.zeros((3, 40, 40)))
    boxes = tv_tensors.BoundingBoxes([[2, 2, 12, 12], [20, 20, 38, 38]], format="XYXY", canvas_size=(40, 40),
                                     dtype=ember.float32)
    ember.manual_seed(0)
    t = v2.RandomIoUCrop(min_scale=0.5, max_scale=0.6, sampler_options=[0.0])
    for _ in range(10):
        out_img, out_boxes = t(img, boxes)
        h, w = out_img.shape[-2:]
        assert out_boxes.canvas_size == (h, w)
        kept = out_boxes.numpy()
        assert np.any(kept.sum(axis=1) > 0)  # at least one box centered in the window survives
        assert np.all((kept.sum(axis=1) == 0) | ((kept[:, 2] > kept[:, 0]) & (kept[:, 3] > kept[:, 1])))
