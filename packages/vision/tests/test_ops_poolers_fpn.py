"""MultiScaleRoIAlign (level mapping as torchvision's LevelMapper) and FeaturePyramidNetwork with its
extra blocks, checked against float64 NumPy references built from roi_align's own reference."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import nn
from embervision import ops
from embervision.ops.feature_pyramid_network import LastLevelMaxPool, LastLevelP6P7
from embervision.ops.poolers import LevelMapper


def bilinear(img, y, x):
    h, w = img.shape
    if y < -1 or y > h or x < -1 or x > w:
        return 0.0
    y, x = min(max(y, 0.0), h - 1.0), min(max(x, 0.0), w - 1.0)
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1]
            + ly * (1 - lx) * img[y1, x0] + ly * lx * img[y1, x1])


def roi_align_ref(x, rois, output_size, scale, sampling_ratio, aligned):
    """RoIAlign of [K, 5] rois (test_ops_roi.py has the full set of references)."""
    ph, pw = output_size
    out = np.zeros((len(rois), x.shape[1], ph, pw))
    off = 0.5 if aligned else 0.0
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        x1, y1, x2, y2 = x1 * scale - off, y1 * scale - off, x2 * scale - off, y2 * scale - off
        rw, rh = (x2 - x1, y2 - y1) if aligned else (max(x2 - x1, 1.0), max(y2 - y1, 1.0))
        gh = sampling_ratio if sampling_ratio > 0 else max(math.ceil(rh / ph), 0)
        gw = sampling_ratio if sampling_ratio > 0 else max(math.ceil(rw / pw), 0)
        for c in range(x.shape[1]):
            for i in range(ph):
                for j in range(pw):
                    total = sum(bilinear(x[int(b), c], y1 + i * rh / ph + (iy + 0.5) * rh / ph / gh,
                                         x1 + j * rw / pw + (ix + 0.5) * rw / pw / gw)
                                for iy in range(gh) for ix in range(gw))
                    out[k, c, i, j] = total / max(gh * gw, 1)
    return out


def level_ref(box, k_min, k_max, canonical_scale=224, canonical_level=4):
    s = math.sqrt((box[2] - box[0]) * (box[3] - box[1]))
    return int(min(max(math.floor(canonical_level + math.log2(s / canonical_scale) + 1e-6), k_min), k_max)) - k_min


def test_level_mapper():
    boxes = ember.tensor([[0, 0, 10, 10], [0, 0, 112, 112], [0, 0, 224, 224], [0, 0, 448, 448.0],
                          [0, 0, 1000, 1000.0], [0, 0, 223, 225.0]], dtype=ember.float64)
    got = LevelMapper(2, 5)([boxes[:2], boxes[2:]])
    assert got.dtype == ember.int64
    assert got.tolist() == [level_ref(b, 2, 5) for b in boxes.tolist()] == [0, 1, 2, 3, 3, 1]
    assert LevelMapper(2, 5, canonical_scale=112, canonical_level=3)(
        [boxes]).tolist() == [level_ref(b, 2, 5, 112, 3) for b in boxes.tolist()]


def test_multi_scale_roi_align_matches_per_level_reference():
    gen = np.random.default_rng(0)
    feats = OrderedDict((name, gen.standard_normal((2, 3, 64 // 2 ** i, 48 // 2 ** i)))
                        for i, name in enumerate(["feat1", "feat2", "feat3", "feat4"]))
    x = OrderedDict((k, ember.from_numpy(v)) for k, v in feats.items())
    image_shapes = [(256, 190), (250, 192)]  # max (256, 192): strides 4, 8, 16, 32
    boxes = [np.array([[0, 0, 20, 30], [10, 10, 150, 200], [5, 5, 250, 190.0]]),
             np.array([[30, 40, 100, 120], [1, 2, 3, 4.0]])]
    pooler = ops.MultiScaleRoIAlign(["feat1", "feat3", "feat2"], 3, 2)
    out = pooler(x, [ember.from_numpy(b) for b in boxes], image_shapes)
    assert pooler.scales == [0.25, 0.125, 0.0625]
    assert (pooler.map_levels.k_min, pooler.map_levels.k_max) == (2, 4)
    # featmap_names select maps in the dict's order: feat1, feat2, feat3
    used = [feats["feat1"], feats["feat2"], feats["feat3"]]
    expected = []
    for image, bs in enumerate(boxes):
        for b in bs:
            lvl = level_ref(b, 2, 4)
            roi = np.array([[image, *b]])
            expected.append(roi_align_ref(used[lvl], roi, (3, 3), pooler.scales[lvl], 2, False)[0])
    assert tuple(out.shape) == (5, 3, 3, 3)
    np.testing.assert_allclose(out.numpy(), np.stack(expected), atol=1e-12)
    assert "MultiScaleRoIAlign(featmap_names=['feat1', 'feat3', 'feat2'], output_size=(3, 3), sampling_ratio=2)" \
        == repr(pooler)


def test_multi_scale_roi_align_single_level_gradient_and_empty():
    x = {"p": ember.randn(1, 2, 8, 8, dtype=ember.float64, requires_grad=True)}
    pooler = ops.MultiScaleRoIAlign(["p"], (2, 2), sampling_ratio=-1)
    boxes = [ember.tensor([[1.3, 2.2, 20.7, 25.1]], dtype=ember.float64)]
    assert ember.autograd.gradcheck(lambda f: pooler({"p": f}, boxes, [(32, 32)]), (x["p"],))
    assert pooler.scales == [0.25]
    assert tuple(pooler(x, [ember.zeros((0, 4), dtype=ember.float64)], [(32, 32)]).shape) == (0, 2, 2, 2)


def test_multi_scale_roi_align_gradient_across_levels():
    f1 = ember.randn(1, 1, 16, 16, dtype=ember.float64, requires_grad=True)
    f2 = ember.randn(1, 1, 8, 8, dtype=ember.float64, requires_grad=True)
    pooler = ops.MultiScaleRoIAlign(["a", "b"], 2, 2, canonical_scale=8, canonical_level=3)
    boxes = [ember.tensor([[1.1, 1.3, 5.2, 6.1], [2.3, 0.4, 30.2, 29.7], [3.3, 3.1, 9.6, 8.2]], dtype=ember.float64)]
    assert ember.autograd.gradcheck(lambda a, b: pooler({"a": a, "b": b}, boxes, [(32, 32)]), (f1, f2))


def test_multi_scale_roi_align_errors():
    pooler = ops.MultiScaleRoIAlign(["p"], 2, 2)
    with pytest.raises(ValueError, match="images list should not be empty"):
        pooler({"p": ember.zeros(1, 1, 4, 4)}, [ember.zeros((0, 4))], [])
    with pytest.raises(ValueError, match=r"\[MultiScaleRoIAlign\] expected at least one feature map"):
        ops.MultiScaleRoIAlign(["q"], 2, 2)({"p": ember.zeros(1, 1, 4, 4)}, [ember.zeros((0, 4))], [(8, 8)])


def conv_ref(x, w, b, stride=1, pad=0):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = (h + 2 * pad - kh) // stride + 1, (wd + 2 * pad - kw) // stride + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", patch, w) + b
    return out


def nearest_ref(x, size):
    h, w = x.shape[-2:]
    rows = (np.arange(size[0]) * h / size[0]).astype(int)
    cols = (np.arange(size[1]) * w / size[1]).astype(int)
    return x[..., rows[:, None], cols]


def params(m):
    return m.weight.detach().numpy().astype(np.float64), m.bias.detach().numpy().astype(np.float64)


@pytest.mark.parametrize("extra", [None, "pool", "p6p7", "p6p7_c5"])
def test_fpn_matches_reference(extra):
    ember.manual_seed(0)
    in_channels = [2, 3, 4]
    blocks = {None: None, "pool": LastLevelMaxPool(), "p6p7": LastLevelP6P7(5, 5), "p6p7_c5": LastLevelP6P7(4, 5)}
    fpn = ops.FeaturePyramidNetwork(in_channels, 5, extra_blocks=blocks[extra]).double()
    for p in fpn.parameters():  # non-zero biases, so the reference checks them too
        with ember.no_grad():
            p.add_(ember.randn(p.shape, dtype=p.dtype) * 0.1)
    gen = np.random.default_rng(1)
    xs = [gen.standard_normal((1, c, s, s + 1)) for c, s in zip(in_channels, (9, 5, 3), strict=True)]
    out = fpn(OrderedDict((f"c{i}", ember.from_numpy(a)) for i, a in enumerate(xs)))
    inner = [conv_ref(a, *params(fpn.inner_blocks[i][0])) for i, a in enumerate(xs)]
    last = inner[-1]
    results = [conv_ref(last, *params(fpn.layer_blocks[-1][0]), pad=1)]
    for i in (1, 0):
        last = inner[i] + nearest_ref(last, inner[i].shape[-2:])
        results.insert(0, conv_ref(last, *params(fpn.layer_blocks[i][0]), pad=1))
    names = ["c0", "c1", "c2"]
    if extra == "pool":
        results.append(results[-1][..., ::2, ::2])
        names.append("pool")
    elif extra in ("p6p7", "p6p7_c5"):
        src = results[-1] if extra == "p6p7" else xs[-1]
        p6 = conv_ref(src, *params(fpn.extra_blocks.p6), stride=2, pad=1)
        results += [p6, conv_ref(np.maximum(p6, 0), *params(fpn.extra_blocks.p7), stride=2, pad=1)]
        names += ["p6", "p7"]
    assert list(out.keys()) == names
    for got, want in zip(out.values(), results, strict=True):
        np.testing.assert_allclose(got.detach().numpy(), want, atol=1e-10)


def test_fpn_structure_init_and_gradients():
    fpn = ops.FeaturePyramidNetwork([4, 8], 6, norm_layer=nn.BatchNorm2d)
    keys = set(fpn.state_dict())
    assert {"inner_blocks.0.0.weight", "inner_blocks.0.1.running_mean", "layer_blocks.1.0.weight"} <= keys
    assert fpn.inner_blocks[0][0].bias is None  # a norm layer replaces the bias
    plain = ops.FeaturePyramidNetwork([4, 8], 6)
    assert bool((plain.inner_blocks[1][0].bias == 0).all())
    bound = math.sqrt(6 / ((1 + 1) * 4))  # kaiming_uniform_(a=1) of a 1x1 conv over 4 channels
    assert float(plain.inner_blocks[0][0].weight.abs().max()) <= bound
    x = OrderedDict(a=ember.randn(2, 4, 8, 8, requires_grad=True), b=ember.randn(2, 8, 4, 4, requires_grad=True))
    sum(v.sum() for v in plain(x).values()).backward()
    assert x["a"].grad is not None and x["b"].grad is not None
    assert all(p.grad is not None for p in plain.parameters())


def test_fpn_version_1_checkpoints_load():
    fpn = ops.FeaturePyramidNetwork([2, 3], 4)
    old = {k.replace(".0.weight", ".weight").replace(".0.bias", ".bias"): v.clone() for k, v in fpn.state_dict().items()}
    assert "inner_blocks.0.weight" in old
    fresh = ops.FeaturePyramidNetwork([2, 3], 4)
    fresh.load_state_dict(old)  # no version metadata: renamed on the way in
    assert ember.equal(fresh.layer_blocks[1][0].weight, fpn.layer_blocks[1][0].weight)


def test_fpn_errors():
    with pytest.raises(ValueError, match="in_channels=0 is currently not supported"):
        ops.FeaturePyramidNetwork([0, 4], 4)
    with pytest.raises(TypeError, match="extra_blocks should be of type ExtraFPNBlock"):
        ops.FeaturePyramidNetwork([4], 4, extra_blocks=nn.ReLU())
    with pytest.raises(ValueError, match=r"\[FeaturePyramidNetwork\] expected 2 feature maps, but got 1"):
        ops.FeaturePyramidNetwork([4, 4], 4)({"a": ember.zeros(1, 4, 4, 4)})


def test_exports():
    # Submodules named like their functions (roi_align.py, ...) must not shadow the functions.
    import embervision.ops as ops_module
    import embervision.ops.roi_align  # noqa: F401
    import embervision.ops.roi_pool  # noqa: F401
    for name in ("roi_align", "RoIAlign", "roi_pool", "RoIPool", "ps_roi_align", "PSRoIAlign", "ps_roi_pool",
                 "PSRoIPool", "deform_conv2d", "DeformConv2d", "MultiScaleRoIAlign", "FeaturePyramidNetwork", "nms",
                 "batched_nms"):
        assert name in ops_module.__all__ and callable(getattr(ops_module, name))
    namespace: dict = {}
    exec("from embervision.ops import *", namespace)
    assert namespace["MultiScaleRoIAlign"] is ops.poolers.MultiScaleRoIAlign
    assert ops.feature_pyramid_network.ExtraFPNBlock is not None
    assert callable(ops_module.StochasticDepth) and callable(ops_module.stochastic_depth)
