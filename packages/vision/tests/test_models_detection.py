"""Detection models and their parts: box coders, matchers, the sampler, anchor generators and the
transform against float64 NumPy references written here; SSD/SSDlite (and the FPN models when
present) with torchvision's parameter counts, eval outputs, training losses and input errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ember
from ember import nn
from embervision import models
from embervision.models import detection
from embervision.models.detection import _utils as det_utils
from embervision.models.detection.anchor_utils import AnchorGenerator, DefaultBoxGenerator
from embervision.models.detection.image_list import ImageList
from embervision.models.detection.transform import GeneralizedRCNNTransform

RNG = np.random.default_rng(0)


def random_boxes(n, size=100.0, rng=RNG):
    xy = rng.random((n, 2)) * size
    wh = rng.random((n, 2)) * size / 2 + 1
    return np.concatenate([xy, xy + wh], axis=1)


# ---------------------------------------------------------------------------------------------- box coders

def np_encode(gt, proposals, weights):
    wx, wy, ww, wh = weights
    pw, ph = proposals[:, 2] - proposals[:, 0], proposals[:, 3] - proposals[:, 1]
    pcx, pcy = proposals[:, 0] + pw / 2, proposals[:, 1] + ph / 2
    gw, gh = gt[:, 2] - gt[:, 0], gt[:, 3] - gt[:, 1]
    gcx, gcy = gt[:, 0] + gw / 2, gt[:, 1] + gh / 2
    return np.stack([wx * (gcx - pcx) / pw, wy * (gcy - pcy) / ph, ww * np.log(gw / pw), wh * np.log(gh / ph)], 1)


def np_decode(codes, boxes, weights, clip):
    wx, wy, ww, wh = weights
    w, h = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    cx, cy = boxes[:, 0] + w / 2, boxes[:, 1] + h / 2
    out = np.empty_like(codes)
    for k in range(codes.shape[1] // 4):
        dx, dy = codes[:, 4 * k] / wx, codes[:, 4 * k + 1] / wy
        dw, dh = np.minimum(codes[:, 4 * k + 2] / ww, clip), np.minimum(codes[:, 4 * k + 3] / wh, clip)
        pcx, pcy = dx * w + cx, dy * h + cy
        pw, ph = np.exp(dw) * w, np.exp(dh) * h
        out[:, 4 * k:4 * k + 4] = np.stack([pcx - pw / 2, pcy - ph / 2, pcx + pw / 2, pcy + ph / 2], 1)
    return out


@pytest.mark.parametrize("weights", [(1.0, 1.0, 1.0, 1.0), (10.0, 10.0, 5.0, 5.0)])
def test_box_coder_matches_numpy_and_round_trips(weights):
    gt, proposals = random_boxes(7), random_boxes(7)
    coder = det_utils.BoxCoder(weights)
    codes = coder.encode_single(ember.from_numpy(gt), ember.from_numpy(proposals))
    assert codes.dtype == ember.float64
    np.testing.assert_allclose(codes.numpy(), np_encode(gt, proposals, weights), rtol=1e-12, atol=1e-12)
    decoded = coder.decode_single(codes, ember.from_numpy(proposals))
    np.testing.assert_allclose(decoded.numpy(), gt, rtol=1e-10, atol=1e-10)
    # Several codes per box (one per class), non-contiguous (a transposed view), clipped dw/dh.
    many = RNG.standard_normal((5, 3, 4)) * 3
    many[0, 0, 2] = 50.0  # exp(50) would overflow the box; bbox_xform_clip caps it
    codes_t = ember.from_numpy(many.reshape(5, 12).T.copy()).t()
    assert not codes_t.is_contiguous()
    got = coder.decode_single(codes_t, ember.from_numpy(proposals[:5]))
    np.testing.assert_allclose(got.numpy(), np_decode(many.reshape(5, 12), proposals[:5], weights,
                                                      math.log(1000.0 / 16)), rtol=1e-12, atol=1e-9)
    assert bool(ember.isfinite(got).all())


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.floats(0.5, 20.0), st.floats(0.5, 20.0), st.integers(0, 2 ** 31 - 1))
def test_box_coder_round_trip_property(n, wxy, wwh, seed):
    rng = np.random.default_rng(seed)
    gt, proposals = random_boxes(n, rng=rng), random_boxes(n, rng=rng)
    coder = det_utils.BoxCoder((wxy, wxy, wwh, wwh), bbox_xform_clip=math.inf)
    codes = coder.encode_single(ember.from_numpy(gt), ember.from_numpy(proposals))
    np.testing.assert_allclose(codes.numpy(), np_encode(gt, proposals, (wxy, wxy, wwh, wwh)), rtol=1e-10, atol=1e-12)
    back = coder.decode_single(codes, ember.from_numpy(proposals)).numpy()
    np.testing.assert_allclose(back, gt, rtol=1e-9, atol=1e-9)


def test_box_coder_lists_and_empty():
    coder = det_utils.BoxCoder((1.0, 1.0, 1.0, 1.0))
    a, b = random_boxes(3), random_boxes(2)
    p, q = random_boxes(3), random_boxes(2)
    enc = coder.encode([ember.from_numpy(a), ember.from_numpy(b)], [ember.from_numpy(p), ember.from_numpy(q)])
    assert [tuple(e.shape) for e in enc] == [(3, 4), (2, 4)]
    np.testing.assert_allclose(enc[1].numpy(), np_encode(b, q, (1, 1, 1, 1)), rtol=1e-12)
    dec = coder.decode(ember.cat(enc), [ember.from_numpy(p), ember.from_numpy(q)])
    assert tuple(dec.shape) == (5, 1, 4)
    np.testing.assert_allclose(dec.numpy()[:, 0], np.concatenate([a, b]), rtol=1e-10)
    empty = coder.decode_single(ember.zeros(0, 4, dtype=ember.float64), ember.zeros(0, 4, dtype=ember.float64))
    assert tuple(empty.shape) == (0, 4)
    with pytest.raises(TypeError, match="expects boxes of type list or tuple"):
        coder.decode(ember.zeros(1, 4), ember.zeros(1, 4))


def test_box_coder_gradcheck():
    coder = det_utils.BoxCoder((10.0, 10.0, 5.0, 5.0))
    boxes = ember.from_numpy(random_boxes(3))
    codes = ember.from_numpy(RNG.standard_normal((3, 8))).requires_grad_()
    assert ember.autograd.gradcheck(lambda c: coder.decode_single(c, boxes), (codes,))
    gt = ember.from_numpy(random_boxes(3)).requires_grad_()
    assert ember.autograd.gradcheck(lambda g: coder.encode_single(g, boxes), (gt,))


def test_box_linear_coder():
    anchors, gt = random_boxes(6), random_boxes(6)
    for normalize in (True, False):
        coder = det_utils.BoxLinearCoder(normalize_by_size=normalize)
        enc = coder.encode(ember.from_numpy(anchors), ember.from_numpy(gt)).numpy()
        cx, cy = (anchors[:, 0] + anchors[:, 2]) / 2, (anchors[:, 1] + anchors[:, 3]) / 2
        ref = np.stack([cx - gt[:, 0], cy - gt[:, 1], gt[:, 2] - cx, gt[:, 3] - cy], 1)
        if normalize:
            w, h = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
            ref = ref / np.stack([w, h, w, h], 1)
        np.testing.assert_allclose(enc, ref, rtol=1e-12)
        dec = coder.decode(ember.from_numpy(enc), ember.from_numpy(anchors)).numpy()
        np.testing.assert_allclose(dec, gt, rtol=1e-10, atol=1e-10)
    codes = ember.from_numpy(RNG.random((6, 4))).requires_grad_()
    assert ember.autograd.gradcheck(lambda c: coder.decode(c, ember.from_numpy(anchors)), (codes,))
    # Batched [N, A, 4] codes.
    batched = coder.decode(ember.zeros(2, 6, 4, dtype=ember.float64), ember.from_numpy(anchors))
    assert tuple(batched.shape) == (2, 6, 4)


# ---------------------------------------------------------------------------------------------- matchers

def np_match(q, high, low, allow_low):
    matches = q.argmax(0)
    vals = q.max(0)
    out = matches.copy()
    out[vals < low] = -1
    out[(vals >= low) & (vals < high)] = -2
    if allow_low:
        for g in range(q.shape[0]):
            best = q[g].max()
            for p in np.nonzero(q[g] == best)[0]:
                out[p] = matches[p]
    return out


@pytest.mark.parametrize("allow_low", [False, True])
def test_matcher_matches_numpy(allow_low):
    q = np.round(RNG.random((4, 30)) * 0.9, 2)  # rounding makes ties
    q[2] *= 0.3  # a ground truth matched only by low-quality predictions
    matcher = det_utils.Matcher(0.5, 0.3, allow_low_quality_matches=allow_low)
    got = matcher(ember.from_numpy(q)).numpy()
    np.testing.assert_array_equal(got, np_match(q, 0.5, 0.3, allow_low))
    # A transposed (non-contiguous) view gives the same result.
    got_t = matcher(ember.from_numpy(q.T.copy()).t()).numpy()
    np.testing.assert_array_equal(got_t, got)


def test_matcher_errors():
    with pytest.raises(ValueError, match="No ground-truth boxes available for one of the images during training"):
        det_utils.Matcher(0.5, 0.4)(ember.zeros(0, 5))
    with pytest.raises(ValueError, match="No proposal boxes available for one of the images during training"):
        det_utils.Matcher(0.5, 0.4)(ember.zeros(3, 0))
    with pytest.raises(ValueError, match="low_threshold should be <= high_threshold"):
        det_utils.Matcher(0.3, 0.5)


def test_ssd_matcher():
    q = np.array([[0.1, 0.2, 0.05, 0.0], [0.7, 0.1, 0.3, 0.6]])
    got = det_utils.SSDMatcher(0.5)(ember.from_numpy(q)).numpy()
    # Prediction 0 (0.7) and 3 (0.6) pass the threshold for gt 1; gt 0 claims its best, prediction 1.
    np.testing.assert_array_equal(got, [1, 0, -1, 1])


def test_balanced_sampler():
    ember.manual_seed(0)
    matched = ember.tensor([-1] * 5 + [0] * 40 + [1, 2, 3, 1, 2, 3, 1, 1, 2, 2])
    sampler = det_utils.BalancedPositiveNegativeSampler(16, 0.25)
    (pos,), (neg,) = sampler([matched])
    assert pos.dtype == ember.uint8 and neg.dtype == ember.uint8
    assert int(pos.sum()) == 4 and int(neg.sum()) == 12
    p, n = pos.numpy().astype(bool), neg.numpy().astype(bool)
    assert (matched.numpy()[p] >= 1).all() and (matched.numpy()[n] == 0).all() and not (p & n).any()
    # Fewer positives than the fraction allows: all of them, and negatives fill the batch.
    (pos,), (neg,) = det_utils.BalancedPositiveNegativeSampler(30, 0.5)([ember.tensor([0] * 40 + [1, 1])])
    assert int(pos.sum()) == 2 and int(neg.sum()) == 28


def test_box_loss_types():
    coder = det_utils.BoxCoder((1.0, 1.0, 1.0, 1.0))
    anchors = ember.from_numpy(random_boxes(4))
    gt = ember.from_numpy(random_boxes(4))
    reg = ember.from_numpy(RNG.standard_normal((4, 4)) * 0.1)
    target = coder.encode_single(gt, anchors).numpy()
    l1 = det_utils._box_loss("l1", coder, anchors, gt, reg)
    np.testing.assert_allclose(float(l1), np.abs(reg.numpy() - target).sum(), rtol=1e-12)
    d = np.abs(reg.numpy() - target)
    beta = 0.5
    sl1 = det_utils._box_loss("smooth_l1", coder, anchors, gt, reg, {"beta": beta})
    np.testing.assert_allclose(float(sl1), np.where(d < beta, 0.5 * d ** 2 / beta, d - 0.5 * beta).sum(), rtol=1e-12)
    for kind in ("giou", "diou", "ciou"):
        assert float(det_utils._box_loss(kind, coder, anchors, gt, reg)) > 0
    with pytest.raises(ValueError, match="Unsupported loss: bad"):
        det_utils._box_loss("bad", coder, anchors, gt, reg)


# ---------------------------------------------------------------------------------------------- anchors

def np_anchors(sizes, ratios, grid_sizes, image_size):
    out = []
    for scales, ars, (gh, gw) in zip(sizes, ratios, grid_sizes, strict=True):
        sh, sw = image_size[0] // gh, image_size[1] // gw
        base = []
        for ar in ars:
            for s in scales:
                hr = math.sqrt(ar)
                w, h = s / hr, s * hr
                base.append(np.round(np.array([-w, -h, w, h]) / 2))
        base = np.array(base)
        for y in range(gh):
            for x in range(gw):
                out.append(base + np.array([x * sw, y * sh, x * sw, y * sh]))
    return np.concatenate([b.reshape(-1, 4) for b in out])


def test_anchor_generator_matches_numpy():
    sizes, ratios = ((32,), (64, 96)), ((0.5, 1.0, 2.0), (1.0, 3.0))
    gen = AnchorGenerator(sizes, ratios)
    assert gen.num_anchors_per_location() == [3, 4]
    images = ImageList(ember.zeros(2, 3, 64, 96), [(60, 90), (64, 80)])
    feats = [ember.zeros(2, 8, 8, 12), ember.zeros(2, 8, 4, 6)]
    anchors = gen(images, feats)
    assert len(anchors) == 2 and tuple(anchors[0].shape) == (8 * 12 * 3 + 4 * 6 * 4, 4)
    np.testing.assert_allclose(anchors[1].numpy(), np_anchors(sizes, ratios, [(8, 12), (4, 6)], (64, 96)))
    # Flat sizes mean one size per feature map with shared ratios.
    assert AnchorGenerator((16, 32), (0.5, 1.0)).num_anchors_per_location() == [2, 2]
    with pytest.raises(ValueError, match="There needs to be a match between the number of feature maps"):
        gen(images, feats[:1])


def np_default_boxes(aspect_ratios, scales, steps, grid_sizes, image_size, clip=True):
    boxes = []
    for k, (fh, fw) in enumerate(grid_sizes):
        s, s2 = scales[k], math.sqrt(scales[k] * scales[k + 1])
        whs = [(s, s), (s2, s2)]
        for ar in aspect_ratios[k]:
            whs += [(s * math.sqrt(ar), s / math.sqrt(ar)), (s / math.sqrt(ar), s * math.sqrt(ar))]
        xf, yf = (image_size[1] / steps[k], image_size[0] / steps[k]) if steps else (fw, fh)
        for i in range(fh):
            for j in range(fw):
                cx, cy = (j + 0.5) / xf, (i + 0.5) / yf
                for w, h in whs:
                    if clip:
                        w, h = min(max(w, 0), 1), min(max(h, 0), 1)
                    boxes.append([(cx - w / 2) * image_size[1], (cy - h / 2) * image_size[0],
                                  (cx + w / 2) * image_size[1], (cy + h / 2) * image_size[0]])
    return np.array(boxes)


def test_default_box_generator_ssd300():
    ratios = [[2], [2, 3], [2, 3], [2, 3], [2], [2]]
    scales = [0.07, 0.15, 0.33, 0.51, 0.69, 0.87, 1.05]
    steps = [8, 16, 32, 64, 100, 300]
    gen = DefaultBoxGenerator(ratios, scales=scales, steps=steps)
    grids = [(38, 38), (19, 19), (10, 10), (5, 5), (3, 3), (1, 1)]
    feats = [ember.zeros(1, 1, h, w) for h, w in grids]
    boxes = gen(ImageList(ember.zeros(1, 3, 300, 300), [(300, 300)]), feats)[0]
    assert tuple(boxes.shape) == (8732, 4)  # SSD300's famous box count
    np.testing.assert_allclose(boxes.numpy(), np_default_boxes(ratios, scales, steps, grids, (300, 300)),
                               rtol=1e-5, atol=1e-3)


def test_default_box_generator_even_scales():
    gen = DefaultBoxGenerator([[2, 3]] * 3, min_ratio=0.2, max_ratio=0.95)
    np.testing.assert_allclose(gen.scales, [0.2, 0.575, 0.95, 1.0])
    assert gen.num_anchors_per_location() == [6, 6, 6]
    grids = [(4, 5), (2, 3), (1, 1)]
    boxes = gen(ImageList(ember.zeros(2, 3, 40, 50), [(40, 50)] * 2), [ember.zeros(2, 1, h, w) for h, w in grids])
    np.testing.assert_allclose(boxes[1].numpy(), np_default_boxes([[2, 3]] * 3, gen.scales, None, grids, (40, 50)),
                               rtol=1e-5, atol=1e-4)
    assert DefaultBoxGenerator([[2]]).scales == [0.15, 0.9]
    with pytest.raises(ValueError, match="aspect_ratios and steps should have the same length"):
        DefaultBoxGenerator([[2], [3]], steps=[8])


# ---------------------------------------------------------------------------------------------- transform

def test_transform_resize_normalize_batch():
    t = GeneralizedRCNNTransform(min_size=40, max_size=70, image_mean=[0.5, 0.4, 0.3], image_std=[0.2, 0.25, 0.5])
    t.eval()
    img_a = ember.rand(3, 20, 30)
    img_b = ember.rand(3, 50, 20)
    targets = [{"boxes": ember.tensor([[2.0, 4.0, 10.0, 16.0]]), "labels": ember.tensor([1]),
                "keypoints": ember.tensor([[[3.0, 5.0, 2.0], [9.0, 15.0, 0.0]]])},
               {"boxes": ember.tensor([[0.0, 0.0, 20.0, 50.0]]), "labels": ember.tensor([2])}]
    images, out_targets = t([img_a, img_b], targets)
    # a: short side 20 → 40 (scale 2; long 60 <= 70). b: long side 50 → 70 caps the scale at 1.4, a
    # float32 value just under 1.4 (as in torchvision), so the sides floor to 69 and 27.
    assert images.image_sizes == [(40, 60), (69, 27)]
    assert tuple(images.tensors.shape) == (2, 3, 96, 64)  # padded to multiples of 32
    np.testing.assert_allclose(out_targets[0]["boxes"].numpy(), [[4.0, 8.0, 20.0, 32.0]], rtol=1e-6)
    np.testing.assert_allclose(out_targets[1]["boxes"].numpy(), [[0.0, 0.0, 27.0, 69.0]], rtol=1e-6)
    # Keypoints scale their x and y; the visibility stays.
    np.testing.assert_allclose(out_targets[0]["keypoints"].numpy(), [[[6.0, 10.0, 2.0], [18.0, 30.0, 0.0]]], rtol=1e-6)
    assert targets[0]["boxes"][0, 0].item() == 2.0  # the caller's targets are untouched
    # Normalization: a constant image stays constant through the resize.
    const = ember.full((3, 10, 10), 0.9)
    images, _ = t([const])
    mean, std = np.array([0.5, 0.4, 0.3]), np.array([0.2, 0.25, 0.5])
    np.testing.assert_allclose(images.tensors[0, :, :40, :40].numpy(),
                               np.broadcast_to(((0.9 - mean) / std)[:, None, None], (3, 40, 40)), rtol=1e-5)
    assert float(images.tensors[0, :, 40:].abs().sum()) == 0.0  # zero padding
    # postprocess maps the boxes back to the original sizes.
    result = t.postprocess([{"boxes": ember.tensor([[4.0, 8.0, 20.0, 32.0]])}], [(40, 60)], [(20, 30)])
    np.testing.assert_allclose(result[0]["boxes"].numpy(), [[2.0, 4.0, 10.0, 16.0]], rtol=1e-6)


def test_transform_errors_and_fixed_size():
    t = GeneralizedRCNNTransform(32, 64, [0.0] * 3, [1.0] * 3, size_divisible=1, fixed_size=(50, 30))
    images, _ = t([ember.rand(3, 11, 17)])
    assert images.image_sizes == [(30, 50)] and tuple(images.tensors.shape) == (1, 3, 30, 50)
    with pytest.raises(TypeError, match="Expected input images to be of floating type"):
        t([ember.zeros(3, 8, 8, dtype=ember.uint8)])
    with pytest.raises(ValueError, match="images is expected to be a list of 3d tensors"):
        t([ember.rand(1, 3, 8, 8)])


# ---------------------------------------------------------------------------------------------- models

SPECS = {
    "ssd300_vgg16": (35641826, {"backbone.scale_weight": (512,), "backbone.features.0.weight": (64, 3, 3, 3),
                                "backbone.features.21.weight": (512, 512, 3, 3),
                                "backbone.extra.0.1.weight": (512, 512, 3, 3),
                                "backbone.extra.0.7.1.weight": (1024, 512, 3, 3),
                                "backbone.extra.0.7.3.weight": (1024, 1024, 1, 1),
                                "backbone.extra.1.0.weight": (256, 1024, 1, 1),
                                "backbone.extra.4.2.weight": (256, 128, 3, 3),
                                "head.classification_head.module_list.0.weight": (364, 512, 3, 3),
                                "head.classification_head.module_list.1.weight": (546, 1024, 3, 3),
                                "head.regression_head.module_list.5.bias": (16,)}),
    "ssdlite320_mobilenet_v3_large": (3440060, {
        "backbone.features.0.0.0.weight": (16, 3, 3, 3), "backbone.features.0.13.0.weight": (672, 112, 1, 1),
        "backbone.features.1.0.1.0.weight": (672, 1, 5, 5), "backbone.features.1.3.0.weight": (480, 80, 1, 1),
        "backbone.extra.0.0.0.weight": (256, 480, 1, 1), "backbone.extra.0.2.0.weight": (512, 256, 1, 1),
        "backbone.extra.3.2.1.running_var": (128,),
        "head.classification_head.module_list.0.0.0.weight": (672, 1, 3, 3),
        "head.classification_head.module_list.0.1.weight": (546, 672, 1, 1),
        "head.regression_head.module_list.5.1.weight": (24, 128, 1, 1)}),
}


def test_registry_and_weights():
    names = models.list_models(module=detection)
    assert set(SPECS) <= set(names)
    w = models.get_weight("SSD300_VGG16_Weights.COCO_V1")
    assert w.url == "https://download.pytorch.org/models/ssd300_vgg16_coco-b556d3b4.pth"
    assert len(w.meta["categories"]) == 91 and w.meta["categories"][12] == "N/A"
    assert w.meta["_metrics"] == {"COCO-val2017": {"box_map": 25.1}}
    w = detection.SSDLite320_MobileNet_V3_Large_Weights.DEFAULT
    assert w.meta["_metrics"]["COCO-val2017"]["box_map"] == 21.3
    assert type(w.transforms()).__name__ == "ObjectDetection"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_num_params_and_keys(name, cheap_init):
    num_params, keys = SPECS[name]
    model = models.get_model(name, weights_backbone=None)
    assert sum(p.numel() for p in model.parameters()) == num_params
    assert models.get_model_weights(name).DEFAULT.meta["num_params"] == num_params
    state = model.state_dict()
    for key, shape in keys.items():
        assert tuple(state[key].shape) == shape, key


def check_detections(out, n_images, num_classes, sizes, min_label=1):
    # Softmax models (SSD, R-CNN) never predict the background 0; the sigmoid ones (RetinaNet, FCOS)
    # score every class index, 0 included (it is just never a positive in training).
    assert isinstance(out, list) and len(out) == n_images
    for det, (h, w) in zip(out, sizes, strict=True):
        assert set(det) == {"boxes", "scores", "labels"}
        n = det["boxes"].shape[0]
        assert tuple(det["boxes"].shape) == (n, 4) and tuple(det["scores"].shape) == (n,)
        assert det["labels"].dtype == ember.int64
        if n:
            b = det["boxes"].numpy()
            assert (b[:, 0] >= 0).all() and (b[:, 2] <= w + 1e-3).all() and (b[:, 3] <= h + 1e-3).all()
            assert (b[:, 2] >= b[:, 0]).all() and (b[:, 3] >= b[:, 1]).all()
            assert ((det["labels"].numpy() >= min_label) & (det["labels"].numpy() < num_classes)).all()
            s = det["scores"].numpy()
            assert np.isfinite(s).all()


def targets_for(n):
    return [{"boxes": ember.tensor([[10.0, 20.0, 60.0, 90.0], [30.0, 30.0, 100.0, 120.0]]),
             "labels": ember.tensor([1, 2])} for _ in range(n)]


def test_ssdlite_eval_and_train(cheap_init):
    ember.manual_seed(0)
    model = detection.ssdlite320_mobilenet_v3_large(weights_backbone=None, num_classes=3)
    model.eval()
    images = [ember.rand(3, 128, 160), ember.rand(3, 96, 120)]
    with ember.no_grad():
        out = model(images)
    check_detections(out, 2, 3, [(128, 160), (96, 120)])
    with ember.no_grad():
        features = model.backbone(ember.rand(1, 3, 320, 320))
    # C4 after its expansion (672), C5 (480 with the reduced tail), then the four extra blocks.
    assert [tuple(f.shape[1:]) for f in features.values()] == [
        (672, 20, 20), (480, 10, 10), (512, 5, 5), (256, 3, 3), (256, 2, 2), (128, 1, 1)]
    model.train()
    losses = model(images, targets_for(2))
    assert set(losses) == {"bbox_regression", "classification"}
    assert all(bool(ember.isfinite(v)) and v.dim() == 0 for v in losses.values())
    sum(losses.values()).backward()
    first = model.backbone.features[0][0][0].weight
    assert first.grad is not None and float(first.grad.abs().sum()) > 0
    # Images without boxes are all background (two images: training BatchNorm needs more than one
    # value per channel at the last 1x1 map).
    empty = [{"boxes": ember.zeros(0, 4), "labels": ember.zeros(0, dtype=ember.int64)} for _ in range(2)]
    losses = model(images, empty)
    assert float(losses["bbox_regression"]) == 0.0 and bool(ember.isfinite(losses["classification"]))


def test_ssd300_eval(cheap_init):
    model = detection.ssd300_vgg16(weights_backbone=None, num_classes=4).eval()
    with ember.no_grad():
        out = model([ember.rand(3, 100, 140)])
        # The six maps of SSD300 (pool3 in ceil mode keeps conv4_3 at 38x38): 8732 default boxes.
        features = model.backbone(ember.rand(1, 3, 300, 300))
    check_detections(out, 1, 4, [(100, 140)])
    assert [tuple(f.shape[1:]) for f in features.values()] == [
        (512, 38, 38), (1024, 19, 19), (512, 10, 10), (256, 5, 5), (256, 3, 3), (256, 1, 1)]
    head = model.head(list(features.values()))
    assert tuple(head["cls_logits"].shape) == (1, 8732, 4) and tuple(head["bbox_regression"].shape) == (1, 8732, 4)


def test_ssd_loss_on_small_backbone(cheap_init):
    # SSD's matching and hard negative mining on a backbone small enough to train in a test.
    ember.manual_seed(0)
    backbone = nn.Sequential(nn.Conv2d(3, 8, 3, stride=4, padding=1), nn.ReLU())
    gen = DefaultBoxGenerator([[2]], scales=[0.3, 0.6])
    model = detection.ssd.SSD(backbone, gen, (64, 64), num_classes=3, positive_fraction=0.5)
    model.train()
    losses = model([ember.rand(3, 64, 64)], [{"boxes": ember.tensor([[8.0, 8.0, 40.0, 40.0]]),
                                               "labels": ember.tensor([2])}])
    sum(losses.values()).backward()
    assert backbone[0].weight.grad is not None and float(backbone[0].weight.grad.abs().sum()) > 0
    # One ground truth: every box that matches it is a positive, and as many negatives are mined.
    assert float(losses["classification"]) > 0 and float(losses["bbox_regression"]) > 0


def test_training_input_errors(cheap_init):
    model = detection.ssdlite320_mobilenet_v3_large(weights_backbone=None, num_classes=3).train()
    img = [ember.rand(3, 64, 64)]
    with pytest.raises(ValueError, match="targets should not be none when in training mode"):
        model(img)
    with pytest.raises(ValueError, match=r"Expected target boxes to be a tensor of shape \[N, 4\], got \(4,\)"):
        model(img, [{"boxes": ember.tensor([1.0, 2.0, 3.0, 4.0]), "labels": ember.tensor([1])}])
    with pytest.raises(ValueError, match=r"Expected target boxes to be of type Tensor"):
        model(img, [{"boxes": [[1.0, 2.0, 3.0, 4.0]], "labels": ember.tensor([1])}])
    bad = [{"boxes": ember.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 5.0, 5.0, 9.0]]), "labels": ember.tensor([1, 1])}]
    with pytest.raises(ValueError, match=r"All bounding boxes should have positive height and width. Found invalid "
                                         r"box \[25.0, 25.0, 25.0, 45.0\] for target at index 0."):
        model(img, bad)
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 91 but got 3 instead."):
        detection.ssd300_vgg16(weights="DEFAULT", num_classes=3)
    with pytest.raises(ValueError, match=r"Trainable backbone layers should be in the range \[0,6\], found 7"):
        detection.ssdlite320_mobilenet_v3_large(trainable_backbone_layers=7)


def test_trainable_layers_freeze(no_init):
    # Without pretrained weights every layer trains (a requested value only warns).
    with pytest.warns(UserWarning, match="Changing trainable_backbone_layers has no effect"):
        model = detection.ssd300_vgg16(weights_backbone=None, trainable_backbone_layers=1, num_classes=3)
    assert all(p.requires_grad for p in model.parameters())
    # _vgg_extractor reads only the VGG's features (no need for the 120M-parameter classifier).
    from types import SimpleNamespace

    from embervision.models.vgg import cfgs, make_layers
    extractor = detection.ssd._vgg_extractor(SimpleNamespace(features=make_layers(cfgs["D"])), False, 2)
    frozen = [not p.requires_grad for p in extractor.features.parameters()]
    # Stages 1-3 (conv1_1 .. conv3_3: 7 convs) freeze, conv4 onwards trains.
    assert frozen == [True] * 14 + [False] * 6


# ---------------------------------------------------------------------------------------------- FPN models

from embervision.models.detection import roi_heads as rh  # noqa: E402
from embervision.models.detection.fcos import FCOS  # noqa: E402
from embervision.models.detection.retinanet import RetinaNet, _v1_to_v2_weights  # noqa: E402
from embervision.models.detection.rpn import _rpn_v1_to_v2  # noqa: E402

# torchvision's documented counts hold for the pretrained layout, where the ResNet/MobileNet backbone
# uses FrozenBatchNorm2d (statistics and affine as buffers); built without weights the backbone has
# trainable BatchNorm2d, so its affine parameters are left out of the count ("frozen": True).
FPN_SPECS = {
    "fasterrcnn_resnet50_fpn": (41755286, True, {
        "backbone.body.layer4.2.conv3.weight": (2048, 512, 1, 1),
        "backbone.fpn.inner_blocks.0.0.weight": (256, 256, 1, 1),
        "backbone.fpn.inner_blocks.3.0.weight": (256, 2048, 1, 1),
        "backbone.fpn.layer_blocks.3.0.weight": (256, 256, 3, 3),
        "rpn.head.conv.0.0.weight": (256, 256, 3, 3), "rpn.head.cls_logits.weight": (3, 256, 1, 1),
        "rpn.head.bbox_pred.weight": (12, 256, 1, 1), "roi_heads.box_head.fc6.weight": (1024, 12544),
        "roi_heads.box_head.fc7.weight": (1024, 1024), "roi_heads.box_predictor.cls_score.weight": (91, 1024),
        "roi_heads.box_predictor.bbox_pred.weight": (364, 1024)}),
    "fasterrcnn_resnet50_fpn_v2": (43712278, False, {
        "backbone.fpn.inner_blocks.0.1.running_var": (256,), "rpn.head.conv.1.0.weight": (256, 256, 3, 3),
        "roi_heads.box_head.0.0.weight": (256, 256, 3, 3), "roi_heads.box_head.3.1.weight": (256,),
        "roi_heads.box_head.5.weight": (1024, 12544)}),
    "fasterrcnn_mobilenet_v3_large_fpn": (19386354, True, {
        "backbone.body.0.0.weight": (16, 3, 3, 3), "backbone.fpn.inner_blocks.0.0.weight": (256, 160, 1, 1),
        "backbone.fpn.inner_blocks.1.0.weight": (256, 960, 1, 1), "rpn.head.cls_logits.weight": (15, 256, 1, 1)}),
    "fasterrcnn_mobilenet_v3_large_320_fpn": (19386354, True, {"rpn.head.bbox_pred.weight": (60, 256, 1, 1)}),
    "maskrcnn_resnet50_fpn": (44401393, True, {
        "roi_heads.mask_head.0.0.weight": (256, 256, 3, 3), "roi_heads.mask_head.3.0.bias": (256,),
        "roi_heads.mask_predictor.conv5_mask.weight": (256, 256, 2, 2),
        "roi_heads.mask_predictor.mask_fcn_logits.weight": (91, 256, 1, 1)}),
    "maskrcnn_resnet50_fpn_v2": (46359409, False, {"roi_heads.mask_head.0.1.running_mean": (256,),
                                                   "roi_heads.box_head.5.weight": (1024, 12544)}),
    "keypointrcnn_resnet50_fpn": (59137258, True, {
        "roi_heads.keypoint_head.0.weight": (512, 256, 3, 3), "roi_heads.keypoint_head.14.weight": (512, 512, 3, 3),
        "roi_heads.keypoint_predictor.kps_score_lowres.weight": (512, 17, 4, 4),
        "roi_heads.box_predictor.cls_score.weight": (2, 1024), "roi_heads.box_predictor.bbox_pred.weight": (8, 1024)}),
    "retinanet_resnet50_fpn": (34014999, True, {
        "backbone.fpn.extra_blocks.p6.weight": (256, 256, 3, 3),
        "backbone.fpn.extra_blocks.p7.weight": (256, 256, 3, 3),
        "head.classification_head.conv.0.0.weight": (256, 256, 3, 3),
        "head.classification_head.cls_logits.weight": (819, 256, 3, 3),
        "head.regression_head.conv.3.0.bias": (256,), "head.regression_head.bbox_reg.weight": (36, 256, 3, 3)}),
    "retinanet_resnet50_fpn_v2": (38198935, False, {"backbone.fpn.extra_blocks.p6.weight": (256, 2048, 3, 3),
                                                    "head.classification_head.conv.0.1.weight": (256,)}),
    "fcos_resnet50_fpn": (32269600, True, {
        "head.classification_head.conv.0.weight": (256, 256, 3, 3), "head.classification_head.conv.1.weight": (256,),
        "head.classification_head.cls_logits.weight": (91, 256, 3, 3),
        "head.regression_head.bbox_reg.weight": (4, 256, 3, 3),
        "head.regression_head.bbox_ctrness.weight": (1, 256, 3, 3)}),
}


def test_every_detection_builder_is_counted():
    assert models.list_models(module=detection) == sorted({*SPECS, *FPN_SPECS})


@pytest.mark.parametrize("name", sorted(FPN_SPECS))
def test_fpn_num_params_and_keys(name, cheap_init):
    num_params, frozen, keys = FPN_SPECS[name]
    model = models.get_model(name, weights_backbone=None)
    count = sum(p.numel() for p in model.parameters())
    if frozen:
        count -= sum(p.numel() for m in model.backbone.body.modules() if isinstance(m, nn.BatchNorm2d)
                     for p in m.parameters())
    assert count == num_params
    assert models.get_model_weights(name).DEFAULT.meta["num_params"] == num_params
    state = model.state_dict()
    for key, shape in keys.items():
        assert tuple(state[key].shape) == shape, key


def test_rcnn_weights_meta():
    w = detection.KeypointRCNN_ResNet50_FPN_Weights.DEFAULT
    assert w is detection.KeypointRCNN_ResNet50_FPN_Weights.COCO_V1
    assert w.meta["categories"] == ["no person", "person"] and len(w.meta["keypoint_names"]) == 17
    assert w.meta["_metrics"]["COCO-val2017"] == {"box_map": 54.6, "kp_map": 65.0}
    assert detection.MaskRCNN_ResNet50_FPN_Weights.COCO_V1.url.endswith("maskrcnn_resnet50_fpn_coco-bf2d0c1e.pth")
    with pytest.raises(ValueError, match="The parameter 'num_keypoints' expected value 17 but got 5 instead."):
        detection.keypointrcnn_resnet50_fpn(weights="DEFAULT", num_keypoints=5)


def test_old_checkpoint_layouts_load(cheap_init):
    # torchvision's v1 checkpoints predate the Conv2dNormActivation heads: their keys are renamed on load.
    model = detection.retinanet_resnet50_fpn(weights_backbone=None, num_classes=3)
    state = dict(model.state_dict())
    old = {}
    for key, value in state.items():
        for prefix in ("head.classification_head.conv.", "head.regression_head.conv."):
            if key.startswith(prefix):
                i, rest = key[len(prefix):].split(".", 1)
                key = f"{prefix}{2 * int(i)}.{rest.split('.', 1)[1]}"
        old[key] = value
    assert "head.classification_head.conv.6.weight" in old
    for prefix in ("head.classification_head.", "head.regression_head."):
        _v1_to_v2_weights(old, prefix)
    assert set(old) == set(state)
    model.load_state_dict(old)
    rpn_state = {"rpn.head.conv.weight": ember.zeros(1), "rpn.head.conv.bias": ember.zeros(1)}
    _rpn_v1_to_v2(rpn_state)
    assert set(rpn_state) == {"rpn.head.conv.0.0.weight", "rpn.head.conv.0.0.bias"}


class TinyFPN(nn.Module):
    """Two feature levels (strides 8 and 16), out_channels wide, for testing the detectors' logic."""

    def __init__(self, channels=32):
        super().__init__()
        self.c1 = nn.Conv2d(3, channels, 3, stride=8, padding=1)
        self.c2 = nn.Conv2d(channels, channels, 3, stride=2, padding=1)
        self.out_channels = channels

    def forward(self, x):
        a = self.c1(x).relu()
        from collections import OrderedDict
        return OrderedDict([("0", a), ("1", self.c2(a).relu())])


IMAGES = [(3, 64, 80), (3, 48, 64)]


def small_targets():
    return [{"boxes": ember.tensor([[10.0, 12.0, 40.0, 50.0], [5.0, 5.0, 30.0, 20.0]]), "labels": ember.tensor([1, 2])},
            {"boxes": ember.tensor([[0.0, 0.0, 20.0, 30.0]]), "labels": ember.tensor([2])}]


@pytest.mark.parametrize("kind", ["retinanet", "fcos"])
def test_one_stage_logic_on_tiny_backbone(kind):
    ember.manual_seed(0)
    if kind == "retinanet":
        gen = AnchorGenerator(((16, 24), (32, 48)), ((0.5, 1.0, 2.0),) * 2)
        model = RetinaNet(TinyFPN(), 3, min_size=64, max_size=96, anchor_generator=gen, score_thresh=0.0,
                          detections_per_img=20)
        expected = {"classification", "bbox_regression"}
    else:
        gen = AnchorGenerator(((8,), (16,)), ((1.0,),) * 2)
        model = FCOS(TinyFPN(), 3, min_size=64, max_size=96, anchor_generator=gen, score_thresh=0.0,
                     detections_per_img=20)
        expected = {"classification", "bbox_regression", "bbox_ctrness"}
    images = [ember.rand(*s) for s in IMAGES]
    model.train()
    losses = model(images, small_targets())
    assert set(losses) == expected and all(bool(ember.isfinite(v)) for v in losses.values())
    sum(losses.values()).backward()
    assert float(model.backbone.c1.weight.grad.abs().sum()) > 0
    model.eval()
    with ember.no_grad():
        out = model(images)
    check_detections(out, 2, 3, [s[1:] for s in IMAGES], min_label=0)
    assert out[0]["boxes"].shape[0] == 20
    # Nothing above the score threshold: empty, well-shaped detections.
    model.score_thresh = 1.1
    with ember.no_grad():
        out = model(images[:1])
    assert {k: tuple(v.shape) for k, v in out[0].items()} == {"boxes": (0, 4), "scores": (0,), "labels": (0,)}


def test_one_stage_errors():
    with pytest.raises(ValueError, match="backbone should contain an attribute out_channels"):
        RetinaNet(nn.ReLU(), 3)
    with pytest.raises(TypeError, match="anchor_generator should be of type AnchorGenerator or None"):
        RetinaNet(TinyFPN(), 3, anchor_generator=DefaultBoxGenerator([[2]]))
    with pytest.raises(ValueError,
                       match=r"anchor_generator.num_anchors_per_location\(\)\[0\] should be 1 instead of 3"):
        FCOS(TinyFPN(), 3, anchor_generator=AnchorGenerator(((8,), (16,)), ((0.5, 1.0, 2.0),) * 2))


def np_fcos_match(anchors, gt, per_level, radius=1.5):
    centers = (anchors[:, :2] + anchors[:, 2:]) / 2
    sizes = anchors[:, 2] - anchors[:, 0]
    lower, upper = sizes * 4, sizes * 8
    lower[:per_level[0]] = 0
    upper[-per_level[-1]:] = np.inf
    out = np.full(len(anchors), -1)
    areas = (gt[:, 2] - gt[:, 0]) * (gt[:, 3] - gt[:, 1])
    for i, (cx, cy) in enumerate(centers):
        best = None
        for j, (x0, y0, x1, y1) in enumerate(gt):
            gcx, gcy = (x0 + x1) / 2, (y0 + y1) / 2
            d = [cx - x0, cy - y0, x1 - cx, y1 - cy]
            if (max(abs(cx - gcx), abs(cy - gcy)) < radius * sizes[i] and min(d) > 0
                    and lower[i] < max(d) < upper[i] and (best is None or areas[j] < areas[best])):
                best = j
        if best is not None:
            out[i] = best
    return out


def test_fcos_matching_matches_numpy():
    model = FCOS(TinyFPN(), 3, anchor_generator=AnchorGenerator(((8,), (16,)), ((1.0,),) * 2))
    images = ImageList(ember.zeros(1, 3, 64, 96), [(64, 96)])
    feats = [ember.zeros(1, 1, 8, 12), ember.zeros(1, 1, 4, 6)]
    anchors = model.anchor_generator(images, feats)[0]
    gt = np.array([[4.0, 4.0, 30.0, 40.0], [10.0, 8.0, 90.0, 60.0], [12.0, 10.0, 28.0, 30.0]])
    got = model.match_locations(anchors, ember.from_numpy(gt.astype(np.float32)), [96, 24]).numpy()
    ref = np_fcos_match(anchors.numpy().astype(np.float64), gt, [96, 24])
    np.testing.assert_array_equal(got, ref)
    assert (ref >= 0).sum() > 3  # the case exercises real matches


# ---------------------------------------------------------------------------------------------- R-CNN parts

def test_fastrcnn_loss_matches_numpy():
    logits = RNG.standard_normal((5, 3))
    regression = RNG.standard_normal((5, 12))
    labels = np.array([0, 2, 1, 0, 2])
    targets = RNG.standard_normal((5, 4))
    cls, box = rh.fastrcnn_loss(ember.from_numpy(logits), ember.from_numpy(regression),
                                [ember.from_numpy(labels[:2]), ember.from_numpy(labels[2:])],
                                [ember.from_numpy(targets[:2]), ember.from_numpy(targets[2:])])
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    np.testing.assert_allclose(float(cls), -logp[np.arange(5), labels].mean(), rtol=1e-12)
    pos = labels > 0
    d = np.abs(regression.reshape(5, 3, 4)[np.arange(5), labels][pos] - targets[pos])
    beta = 1 / 9
    ref = np.where(d < beta, 0.5 * d ** 2 / beta, d - 0.5 * beta).sum() / 5
    np.testing.assert_allclose(float(box), ref, rtol=1e-12)


def test_keypoints_to_heatmap_matches_numpy():
    rois = np.array([[10.0, 20.0, 50.0, 40.0], [0.0, 0.0, 8.0, 8.0]])
    kps = np.array([[[15.0, 25.0, 2.0], [50.0, 40.0, 1.0], [60.0, 30.0, 2.0], [12.0, 22.0, 0.0]],
                    [[1.0, 7.9, 1.0], [8.0, 2.0, 2.0], [-1.0, 3.0, 2.0], [4.0, 4.0, 2.0]]])
    size = 4
    heat, valid = rh.keypoints_to_heatmap(ember.from_numpy(kps), ember.from_numpy(rois), size)
    ref_h, ref_v = np.zeros((2, 4), np.int64), np.zeros((2, 4), np.int64)
    for r in range(2):
        x0, y0, x1, y1 = rois[r]
        for k in range(4):
            x, y, vis = kps[r, k]
            xi = size - 1 if x == x1 else int(np.floor((x - x0) * size / (x1 - x0)))
            yi = size - 1 if y == y1 else int(np.floor((y - y0) * size / (y1 - y0)))
            ok = 0 <= xi < size and 0 <= yi < size and vis > 0
            ref_v[r, k] = ok
            ref_h[r, k] = (yi * size + xi) if ok else 0
    np.testing.assert_array_equal(heat.numpy(), ref_h)
    np.testing.assert_array_equal(valid.numpy(), ref_v)


def test_heatmaps_to_keypoints_finds_peaks():
    maps = ember.zeros(1, 2, 8, 8)
    maps[0, 0, 2, 5] = 10.0
    maps[0, 1, 6, 1] = 10.0
    rois = ember.tensor([[16.0, 32.0, 32.0, 48.0]])  # 16x16 pixels: each heatmap cell is 2x2 pixels
    xy, scores = rh.heatmaps_to_keypoints(maps, rois)
    assert tuple(xy.shape) == (1, 2, 3) and tuple(scores.shape) == (1, 2)
    # The bicubic upsampling puts the maximum in the cell's 2x2 block; keypoints sit at pixel centres.
    assert 16 + 10 <= xy[0, 0, 0].item() <= 16 + 12 and 32 + 4 <= xy[0, 0, 1].item() <= 32 + 6
    assert 16 + 2 <= xy[0, 1, 0].item() <= 16 + 4 and 32 + 12 <= xy[0, 1, 1].item() <= 32 + 14
    assert xy[0, :, 2].tolist() == [1.0, 1.0] and bool((scores > 5).all())


def test_paste_masks_in_image():
    masks = ember.ones(2, 1, 6, 6)
    boxes = ember.tensor([[2.0, 3.0, 9.0, 7.0], [-4.0, 10.0, 5.0, 30.0]])
    pasted = rh.paste_masks_in_image(masks, boxes, (16, 12))
    assert tuple(pasted.shape) == (2, 1, 16, 12)
    m = pasted[0, 0].numpy()
    # Well inside the box the mask is 1, outside 0; the padded border interpolates down at the edges.
    assert m[5, 5] == pytest.approx(1.0) and m[0, 0] == 0 and m[12, 11] == 0
    # The padding grows the boxes by 8/6 about their centres: the second spans rows 6..33 (cut at 16)
    # and columns -6..7 (cut at 0).
    second = pasted[1, 0].numpy()
    assert second[:6].sum() == 0 and second[:, 8:].sum() == 0 and second[14, 2] == pytest.approx(1.0)
    assert tuple(rh.paste_masks_in_image(ember.zeros(0, 1, 6, 6), ember.zeros(0, 4), (5, 7)).shape) == (0, 1, 5, 7)


def test_maskrcnn_loss_without_positives_is_zero():
    logits = ember.randn(0, 3, 4, 4, requires_grad=True)
    loss = rh.maskrcnn_loss(logits, [ember.zeros(0, 4)], [ember.zeros(1, 8, 8)], [ember.tensor([1])],
                            [ember.zeros(0, dtype=ember.int64)])
    assert float(loss) == 0.0


# ---------------------------------------------------------------------------------------------- R-CNN models

# Few proposals and detections keep the heads cheap.
RCNN_SMALL = dict(min_size=64, max_size=80, rpn_pre_nms_top_n_train=60, rpn_post_nms_top_n_train=30,
                  rpn_pre_nms_top_n_test=60, rpn_post_nms_top_n_test=30, box_batch_size_per_image=16,
                  box_detections_per_img=4, box_score_thresh=0.0)


def rcnn_targets():
    masks = ember.zeros(2, 64, 80, dtype=ember.uint8)
    masks[0, 12:50, 10:40] = 1
    masks[1, 5:20, 5:30] = 1
    kp = ember.tensor([[[20.0, 30.0, 2.0], [35.0, 45.0, 1.0], [0.0, 0.0, 0.0]],
                       [[10.0, 10.0, 2.0], [25.0, 15.0, 2.0], [6.0, 18.0, 1.0]]])
    return [{"boxes": ember.tensor([[10.0, 12.0, 40.0, 50.0], [5.0, 5.0, 30.0, 20.0]]), "labels": ember.tensor([1, 1]),
             "masks": masks, "keypoints": kp}]


@pytest.mark.parametrize("name, outputs, loss", [
    ("fasterrcnn_mobilenet_v3_large_320_fpn", set(), None),
    ("maskrcnn_resnet50_fpn", {"masks"}, "loss_mask"),
    ("keypointrcnn_resnet50_fpn", {"keypoints", "keypoints_scores"}, "loss_keypoint"),
])
def test_rcnn_train_and_eval(name, outputs, loss, cheap_init):
    ember.manual_seed(0)
    kwargs = dict(RCNN_SMALL, num_classes=2)
    if name.startswith("keypoint"):
        kwargs["num_keypoints"] = 3
    model = models.get_model(name, weights_backbone=None, **kwargs)
    image = [ember.rand(3, 64, 80)]
    model.train()
    losses = model(image, rcnn_targets())
    expected = {"loss_classifier", "loss_box_reg", "loss_objectness", "loss_rpn_box_reg"} | ({loss} if loss else set())
    assert set(losses) == expected
    assert all(bool(ember.isfinite(v)) and v.dim() == 0 for v in losses.values())
    sum(losses.values()).backward()
    first = next(p for p in model.backbone.body.parameters())
    assert first.grad is not None and float(first.grad.abs().sum()) > 0
    model.eval()
    with ember.no_grad():
        out = model([ember.rand(3, 64, 80), ember.rand(3, 40, 56)])
    assert len(out) == 2
    for det, (h, w) in zip(out, [(64, 80), (40, 56)], strict=True):
        assert set(det) == {"boxes", "labels", "scores"} | outputs
        n = det["boxes"].shape[0]
        assert 0 < n <= 4 and bool((det["labels"] == 1).all())
        assert float(det["boxes"][:, 2].max()) <= w and float(det["boxes"][:, 3].max()) <= h
        if "masks" in outputs:
            assert tuple(det["masks"].shape) == (n, 1, h, w)
            assert float(det["masks"].min()) >= 0 and float(det["masks"].max()) <= 1
        if "keypoints" in outputs:
            assert tuple(det["keypoints"].shape) == (n, 3, 3) and tuple(det["keypoints_scores"].shape) == (n, 3)


def test_rcnn_input_errors(cheap_init):
    model = detection.fasterrcnn_mobilenet_v3_large_320_fpn(weights_backbone=None, num_classes=2, **RCNN_SMALL)
    model.train()
    image = [ember.rand(3, 64, 80)]
    with pytest.raises(ValueError, match="targets should not be none when in training mode"):
        model(image)
    with pytest.raises(ValueError, match="All bounding boxes should have positive height and width"):
        model(image, [{"boxes": ember.tensor([[10.0, 10.0, 5.0, 20.0]]), "labels": ember.tensor([1])}])
    with pytest.raises(TypeError, match="target labels must of int64 type"):
        model(image, [{"boxes": ember.tensor([[1.0, 1.0, 5.0, 20.0]]), "labels": ember.tensor([1], dtype=ember.int32)}])
    with pytest.raises(ValueError, match="num_classes should not be None when box_predictor is not specified"):
        detection.FasterRCNN(TinyFPN())
    with pytest.raises(TypeError, match="box_roi_pool should be of type MultiScaleRoIAlign or None"):
        detection.FasterRCNN(TinyFPN(), 3, box_roi_pool=nn.Identity())


def test_rcnn_eval_without_detections(cheap_init):
    model = detection.maskrcnn_resnet50_fpn(weights_backbone=None, num_classes=2, min_size=64, max_size=80,
                                            box_score_thresh=1.1).eval()
    with ember.no_grad():
        out = model([ember.rand(3, 64, 80)])
    assert {k: tuple(v.shape) for k, v in out[0].items()} == {"boxes": (0, 4), "labels": (0,), "scores": (0,),
                                                             "masks": (0, 1, 64, 80)}


def test_fpn_backbones(cheap_init):
    from embervision.models.detection.backbone_utils import mobilenet_backbone, resnet_fpn_backbone
    body = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=2)
    with ember.no_grad():
        out = body(ember.rand(1, 3, 64, 64))
    assert {k: tuple(v.shape) for k, v in out.items()} == {
        "0": (1, 256, 16, 16), "1": (1, 256, 8, 8), "2": (1, 256, 4, 4), "3": (1, 256, 2, 2), "pool": (1, 256, 1, 1)}
    trainable = {name.split(".")[0] for name, p in body.body.named_parameters() if p.requires_grad}
    assert trainable == {"layer3", "layer4"}
    plain = mobilenet_backbone(backbone_name="mobilenet_v3_large", weights=None, fpn=False)
    assert plain.out_channels == 256 and tuple(plain(ember.rand(1, 3, 64, 64)).shape) == (1, 256, 2, 2)
    with pytest.raises(ValueError, match=r"Trainable layers should be in the range \[0,5\], got 6"):
        resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=6)
    with pytest.raises(ValueError, match=r"Each returned layer should be in the range \[1,4\]. Got \[0, 1\]"):
        resnet_fpn_backbone(backbone_name="resnet18", weights=None, returned_layers=[0, 1])
    with pytest.raises(ValueError, match=r"Each returned layer should be in the range \[0,5\], got \[6\]"):
        mobilenet_backbone(backbone_name="mobilenet_v3_large", weights=None, fpn=True, returned_layers=[6])


def test_ssd_compute_loss_matches_numpy():
    # Matching, box encoding, smooth L1 and hard negative mining (3 negatives per positive) by hand.
    model = detection.ssd.SSD(nn.Sequential(nn.Conv2d(3, 4, 3, stride=4, padding=1)), DefaultBoxGenerator([[2]]),
                              (64, 64), num_classes=4)
    n_anchors, num_classes = 40, 4
    anchors = [ember.from_numpy(random_boxes(n_anchors, 60.0)) for _ in range(2)]
    gt = [random_boxes(2, 60.0), random_boxes(3, 60.0)]
    labels = [np.array([1, 3]), np.array([2, 2, 1])]
    matched = [np.full(n_anchors, -1), np.full(n_anchors, -1)]
    matched[0][[3, 7, 8]] = [0, 1, 1]
    matched[1][[0, 5]] = [2, 0]
    reg = RNG.standard_normal((2, n_anchors, 4))
    logits = RNG.standard_normal((2, n_anchors, num_classes))
    targets = [{"boxes": ember.from_numpy(g), "labels": ember.from_numpy(lab)}
               for g, lab in zip(gt, labels, strict=True)]
    outputs = {"bbox_regression": ember.from_numpy(reg), "cls_logits": ember.from_numpy(logits)}
    losses = model.compute_loss(targets, outputs, anchors, [ember.from_numpy(m) for m in matched])
    box_total, cls_total, n_fg = 0.0, 0.0, 0
    for i in range(2):
        fg = np.nonzero(matched[i] >= 0)[0]
        n_fg += len(fg)
        t = np_encode(gt[i][matched[i][fg]], anchors[i].numpy()[fg], (10.0, 10.0, 5.0, 5.0))
        d = np.abs(reg[i][fg] - t)
        box_total += np.where(d < 1.0, 0.5 * d ** 2, d - 0.5).sum()
        cls_target = np.zeros(n_anchors, np.int64)
        cls_target[fg] = labels[i][matched[i][fg]]
        logp = logits[i] - np.log(np.exp(logits[i]).sum(1, keepdims=True))
        ce = -logp[np.arange(n_anchors), cls_target]
        background = np.setdiff1d(np.arange(n_anchors), fg)
        hardest = background[np.argsort(-ce[background])[:3 * len(fg)]]
        cls_total += ce[fg].sum() + ce[hardest].sum()
    np.testing.assert_allclose(float(losses["bbox_regression"]), box_total / n_fg, rtol=1e-10)
    np.testing.assert_allclose(float(losses["classification"]), cls_total / n_fg, rtol=1e-10)


def test_retinanet_head_losses_match_numpy():
    head = detection.retinanet.RetinaNetHead(8, 1, 3)
    n_anchors = 12
    anchors = [ember.from_numpy(random_boxes(n_anchors, 50.0)) for _ in range(2)]
    gt = [random_boxes(2, 50.0), random_boxes(1, 50.0)]
    labels = [np.array([2, 0]), np.array([1])]
    matched = [np.array([-1, 0, -2, 1, -1, -1, 0, -2, -1, -1, -1, -1]), np.full(n_anchors, -1)]
    logits = RNG.standard_normal((2, n_anchors, 3))
    reg = RNG.standard_normal((2, n_anchors, 4))
    targets = [{"boxes": ember.from_numpy(g), "labels": ember.from_numpy(lab)}
               for g, lab in zip(gt, labels, strict=True)]
    outputs = {"cls_logits": ember.from_numpy(logits), "bbox_regression": ember.from_numpy(reg)}
    losses = head.compute_loss(targets, outputs, anchors, [ember.from_numpy(m) for m in matched])
    cls_ref, box_ref = 0.0, 0.0
    for i in range(2):
        fg = matched[i] >= 0
        onehot = np.zeros((n_anchors, 3))
        onehot[np.nonzero(fg)[0], labels[i][matched[i][fg]]] = 1.0
        valid = matched[i] != -2
        x, t = logits[i][valid], onehot[valid]
        p = 1 / (1 + np.exp(-x))
        ce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
        p_t = p * t + (1 - p) * (1 - t)
        focal = (0.25 * t + 0.75 * (1 - t)) * ce * (1 - p_t) ** 2
        cls_ref += focal.sum() / max(1, fg.sum())
        enc = np_encode(gt[i][matched[i][fg]], anchors[i].numpy()[fg], (1.0, 1.0, 1.0, 1.0)) if fg.any() else 0
        box_ref += np.abs(reg[i][fg] - enc).sum() / max(1, fg.sum())
    np.testing.assert_allclose(float(losses["classification"]), cls_ref / 2, rtol=1e-10)
    np.testing.assert_allclose(float(losses["bbox_regression"]), box_ref / 2, rtol=1e-10)


def test_builder_defaults():
    import inspect
    # The v2 recipes start from no backbone weights by default; the v1 builders from ImageNet ResNet-50.
    for name in ("fasterrcnn_resnet50_fpn_v2", "maskrcnn_resnet50_fpn_v2", "retinanet_resnet50_fpn_v2"):
        assert inspect.signature(getattr(detection, name)).parameters["weights_backbone"].default is None
    for name in ("fasterrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn", "keypointrcnn_resnet50_fpn",
                 "retinanet_resnet50_fpn", "fcos_resnet50_fpn"):
        default = inspect.signature(getattr(detection, name)).parameters["weights_backbone"].default
        assert default is models.ResNet50_Weights.IMAGENET1K_V1
    params = inspect.signature(detection.FasterRCNN).parameters
    assert list(params)[:6] == ["backbone", "num_classes", "min_size", "max_size", "image_mean", "image_std"]
    assert params["rpn_nms_thresh"].default == 0.7 and params["box_batch_size_per_image"].default == 512
    assert inspect.signature(detection.KeypointRCNN).parameters["min_size"].default is None


def test_fcos_head_losses_match_numpy():
    head = detection.fcos.FCOSHead(32, 1, 3)
    n_anchors = 10
    anchors_np = random_boxes(n_anchors, 40.0)
    anchors = [ember.from_numpy(anchors_np) for _ in range(2)]
    # Ground truths around all the anchors (a matched location lies inside its box, as FCOS matches).
    gt = [np.array([[-5.0, -2.0, 90.0, 95.0], [-1.0, -8.0, 70.0, 66.0]]), np.array([[-3.0, -4.0, 80.0, 75.0]])]
    labels = [np.array([2, 1]), np.array([0])]
    matched = [np.array([-1, 0, 1, -1, 1, -1, -1, 0, -1, -1]), np.array([0, -1, -1, -1, -1, -1, -1, -1, -1, 0])]
    logits = RNG.standard_normal((2, n_anchors, 3))
    reg = RNG.random((2, n_anchors, 4))
    ctr = RNG.standard_normal((2, n_anchors, 1))
    targets = [{"boxes": ember.from_numpy(g), "labels": ember.from_numpy(lab)}
               for g, lab in zip(gt, labels, strict=True)]
    outputs = {"cls_logits": ember.from_numpy(logits), "bbox_regression": ember.from_numpy(reg),
               "bbox_ctrness": ember.from_numpy(ctr)}
    losses = head.compute_loss(targets, outputs, anchors, [ember.from_numpy(m) for m in matched])
    w = anchors_np[:, 2] - anchors_np[:, 0]
    h = anchors_np[:, 3] - anchors_np[:, 1]
    cx, cy = anchors_np[:, 0] + w / 2, anchors_np[:, 1] + h / 2
    cls_ref = giou_ref = ctr_ref = 0.0
    n_fg = 0
    for i in range(2):
        fg = np.nonzero(matched[i] >= 0)[0]
        n_fg += len(fg)
        onehot = np.zeros((n_anchors, 3))
        onehot[fg, labels[i][matched[i][fg]]] = 1
        p = 1 / (1 + np.exp(-logits[i]))
        ce = -(onehot * np.log(p) + (1 - onehot) * np.log(1 - p))
        p_t = p * onehot + (1 - p) * (1 - onehot)
        cls_ref += ((0.25 * onehot + 0.75 * (1 - onehot)) * ce * (1 - p_t) ** 2).sum()
        for a in fg:
            left, top, right, bottom = reg[i, a] * np.array([w[a], h[a], w[a], h[a]])
            pred = np.array([cx[a] - left, cy[a] - top, cx[a] + right, cy[a] + bottom])
            g = gt[i][matched[i][a]]
            iw = max(0.0, min(pred[2], g[2]) - max(pred[0], g[0]))
            ih = max(0.0, min(pred[3], g[3]) - max(pred[1], g[1]))
            inter = iw * ih
            union = (pred[2] - pred[0]) * (pred[3] - pred[1]) + (g[2] - g[0]) * (g[3] - g[1]) - inter
            hull = (max(pred[2], g[2]) - min(pred[0], g[0])) * (max(pred[3], g[3]) - min(pred[1], g[1]))
            giou_ref += 1 - (inter / union - (hull - union) / hull)
            dl, dt, dr, db = cx[a] - g[0], cy[a] - g[1], g[2] - cx[a], g[3] - cy[a]
            target = np.sqrt(min(dl, dr) / max(dl, dr) * min(dt, db) / max(dt, db))
            x = ctr[i, a, 0]
            ctr_ref += max(x, 0) - x * target + np.log1p(np.exp(-abs(x)))
    np.testing.assert_allclose(float(losses["classification"]), cls_ref / n_fg, rtol=1e-10)
    np.testing.assert_allclose(float(losses["bbox_regression"]), giou_ref / n_fg, rtol=1e-9)
    assert np.isfinite(ctr_ref)
    np.testing.assert_allclose(float(losses["bbox_ctrness"]), ctr_ref / n_fg, rtol=1e-9)


def np_iou(a, b):
    iw = np.clip(np.minimum(a[:, None, 2], b[None, :, 2]) - np.maximum(a[:, None, 0], b[None, :, 0]), 0, None)
    ih = np.clip(np.minimum(a[:, None, 3], b[None, :, 3]) - np.maximum(a[:, None, 1], b[None, :, 1]), 0, None)
    inter = iw * ih
    area = lambda x: (x[:, 2] - x[:, 0]) * (x[:, 3] - x[:, 1])  # noqa: E731
    return inter / (area(a)[:, None] + area(b)[None, :] - inter)


def np_nms(boxes, scores, thresh):
    order = np.argsort(-scores, kind="stable")
    keep = []
    for i in order:
        if all(np_iou(boxes[[i]], boxes[[k]])[0, 0] <= thresh for k in keep):
            keep.append(i)
    return np.array(keep, dtype=np.int64)


def test_rpn_filter_proposals_matches_numpy():
    from embervision.models.detection.rpn import RegionProposalNetwork, RPNHead
    rpn = RegionProposalNetwork(AnchorGenerator(), RPNHead(4, 3), 0.7, 0.3, 16, 0.5,
                                {"training": 6, "testing": 5}, {"training": 8, "testing": 7}, 0.5, score_thresh=0.2)
    rpn.eval()
    per_level = [9, 6]
    proposals = np.concatenate([random_boxes(15, 40.0), random_boxes(15, 40.0)]).reshape(2, 15, 4)
    proposals[0, 2] = [5.0, 5.0, 5.0005, 9.0]  # too thin: dropped
    objectness = RNG.standard_normal((2, 15))
    image_shapes = [(30, 35), (40, 40)]
    boxes, scores = rpn.filter_proposals(ember.from_numpy(proposals), ember.from_numpy(objectness.reshape(-1, 1)),
                                         image_shapes, per_level)
    for i in range(2):
        idx = np.concatenate([np.argsort(-objectness[i, :9], kind="stable")[:5],
                              9 + np.argsort(-objectness[i, 9:], kind="stable")[:5]])
        b = proposals[i, idx].copy()
        b[:, 0::2] = b[:, 0::2].clip(0, image_shapes[i][1])
        b[:, 1::2] = b[:, 1::2].clip(0, image_shapes[i][0])
        s = 1 / (1 + np.exp(-objectness[i, idx]))
        lvl = (idx >= 9).astype(np.int64)
        ok = ((b[:, 2] - b[:, 0]) >= 1e-3) & ((b[:, 3] - b[:, 1]) >= 1e-3) & (s >= 0.2)
        b, s, lvl = b[ok], s[ok], lvl[ok]
        keep = np.concatenate([np.nonzero(lvl == v)[0][np_nms(b[lvl == v], s[lvl == v], 0.5)] for v in (0, 1)])
        keep = keep[np.argsort(-s[keep], kind="stable")][:7]
        np.testing.assert_allclose(boxes[i].numpy(), b[keep], rtol=1e-12)
        np.testing.assert_allclose(scores[i].numpy(), s[keep], rtol=1e-12)


def test_transform_training_picks_a_min_size():
    t = GeneralizedRCNNTransform(min_size=(16, 24, 32), max_size=1000, image_mean=[0.0] * 3, image_std=[1.0] * 3,
                                 size_divisible=8)
    t.train()
    ember.manual_seed(0)
    seen = set()
    for _ in range(30):
        images, _ = t([ember.rand(3, 10, 20)])
        seen.add(images.image_sizes[0])
    assert seen == {(16, 32), (24, 48), (32, 64)}
    t.eval()  # eval uses the last size
    assert t([ember.rand(3, 10, 20)])[0].image_sizes == [(32, 64)]


def test_roi_heads_postprocess_matches_numpy():
    from embervision.models.detection.roi_heads import RoIHeads
    heads = RoIHeads(None, None, None, 0.5, 0.5, 8, 0.25, None, score_thresh=0.1, nms_thresh=0.4,
                     detections_per_img=6)
    num_classes = 3
    proposals = [random_boxes(5, 30.0), random_boxes(4, 30.0)]
    logits = RNG.standard_normal((9, num_classes)) * 2
    deltas = RNG.standard_normal((9, num_classes * 4)) * 0.3
    image_shapes = [(40, 40), (25, 30)]
    boxes, scores, labels = heads.postprocess_detections(ember.from_numpy(logits), ember.from_numpy(deltas),
                                                         [ember.from_numpy(p) for p in proposals], image_shapes)
    offset = 0
    for i, props in enumerate(proposals):
        n = len(props)
        lg, dl = logits[offset:offset + n], deltas[offset:offset + n]
        offset += n
        probs = np.exp(lg - lg.max(1, keepdims=True))
        probs /= probs.sum(1, keepdims=True)
        dec = np_decode(dl, props, (10.0, 10.0, 5.0, 5.0), np.log(1000.0 / 16)).reshape(n, num_classes, 4)
        dec[..., 0::2] = dec[..., 0::2].clip(0, image_shapes[i][1])
        dec[..., 1::2] = dec[..., 1::2].clip(0, image_shapes[i][0])
        b = dec[:, 1:].reshape(-1, 4)
        s = probs[:, 1:].reshape(-1)
        lab = np.tile(np.arange(1, num_classes), n)
        ok = (s > 0.1) & (b[:, 2] - b[:, 0] >= 1e-2) & (b[:, 3] - b[:, 1] >= 1e-2)
        b, s, lab = b[ok], s[ok], lab[ok]
        keep = np.concatenate([np.nonzero(lab == c)[0][np_nms(b[lab == c], s[lab == c], 0.4)]
                               for c in range(1, num_classes)])
        keep = keep[np.argsort(-s[keep], kind="stable")][:6]
        np.testing.assert_allclose(boxes[i].numpy(), b[keep], rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(scores[i].numpy(), s[keep], rtol=1e-12)
        np.testing.assert_array_equal(labels[i].numpy(), lab[keep])


def test_legacy_pretrained_flags(cheap_init):
    with pytest.warns(UserWarning) as record:
        model = detection.ssdlite320_mobilenet_v3_large(pretrained=False, pretrained_backbone=False, num_classes=3)
    assert isinstance(model, detection.ssd.SSD)
    messages = [str(w.message) for w in record]
    assert any("The parameter 'pretrained_backbone' is deprecated" in m for m in messages)
    assert any("equivalent to passing `weights_backbone=None`" in m for m in messages)
    # The keypoint builder's legacy flag "legacy" maps to the early-epoch weights (no download: the
    # conflicting num_classes fails first).
    with pytest.raises(ValueError, match="The parameter 'num_classes' expected value 2 but got 5 instead."):
        with pytest.warns(UserWarning):
            detection.keypointrcnn_resnet50_fpn(pretrained="legacy", num_classes=5)
