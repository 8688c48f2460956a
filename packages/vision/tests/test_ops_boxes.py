"""embervision.ops box ops and losses against float64 NumPy references, with gradcheck."""

import math

import numpy as np
import pytest

import ember
from embervision import ops


def _boxes(rng, n, scale=20.0):
    xy = rng.uniform(0, scale, size=(n, 2))
    wh = rng.uniform(0.5, scale / 2, size=(n, 2))
    return np.concatenate([xy, xy + wh], axis=1)


def _t(a, dtype=ember.float64, requires_grad=False):
    return ember.tensor(np.ascontiguousarray(a), dtype=dtype, requires_grad=requires_grad)


# ---- NumPy references ------------------------------------------------------------------------

def ref_area(b):
    return (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])


def ref_iou(a, b):
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    inter = wh[..., 0] * wh[..., 1]
    return inter / (ref_area(a)[:, None] + ref_area(b)[None, :] - inter)


def ref_enclosing(a, b):
    lt = np.minimum(a[:, None, :2], b[None, :, :2])
    rb = np.maximum(a[:, None, 2:], b[None, :, 2:])
    return np.clip(rb - lt, 0, None)


def ref_giou(a, b):
    iou = ref_iou(a, b)
    lt = np.maximum(a[:, None, :2], b[None, :, :2])
    rb = np.minimum(a[:, None, 2:], b[None, :, 2:])
    wh = np.clip(rb - lt, 0, None)
    union = ref_area(a)[:, None] + ref_area(b)[None, :] - wh[..., 0] * wh[..., 1]
    c = ref_enclosing(a, b)
    area_c = c[..., 0] * c[..., 1]
    return iou - (area_c - union) / area_c


def ref_diou(a, b, eps=1e-7):
    c = ref_enclosing(a, b)
    diag = c[..., 0] ** 2 + c[..., 1] ** 2 + eps
    ca, cb = (a[:, :2] + a[:, 2:]) / 2, (b[:, :2] + b[:, 2:]) / 2
    dist = ((ca[:, None] - cb[None]) ** 2).sum(-1)
    return ref_iou(a, b) - dist / diag


def ref_ciou(a, b, eps=1e-7):
    iou = ref_iou(a, b)
    wa, ha = a[:, 2] - a[:, 0], a[:, 3] - a[:, 1]
    wb, hb = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
    v = 4 / math.pi**2 * (np.arctan(wa / ha)[:, None] - np.arctan(wb / hb)[None]) ** 2
    alpha = v / (1 - iou + v + eps)
    return ref_diou(a, b, eps) - alpha * v


def ref_nms(b, s, t):
    order = sorted(range(len(s)), key=lambda i: (-s[i], i))
    keep, dead = [], set()
    iou = ref_iou(b, b)
    for i in order:
        if i in dead:
            continue
        keep.append(i)
        dead.update(j for j in order if iou[i, j] > t)
    return np.array(keep, dtype=np.int64)


# ---- nms -------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("threshold", [0.0, 0.3, 0.5, 0.8])
def test_nms_matches_greedy_reference(seed, threshold):
    rng = np.random.default_rng(seed)
    b = _boxes(rng, 60)
    s = rng.integers(0, 10, size=60).astype(np.float64)  # many ties: index order decides
    keep = ops.nms(_t(b, ember.float32), _t(s, ember.float32), threshold)
    assert keep.dtype == ember.int64
    np.testing.assert_array_equal(keep.numpy(), ref_nms(b.astype(np.float32).astype(np.float64), s, threshold))


def test_nms_across_blocks():
    # many boxes: every kept box checked against every later one
    rng = np.random.default_rng(11)
    b = _boxes(rng, 700, scale=60)
    s = rng.uniform(size=700)
    np.testing.assert_array_equal(ops.nms(_t(b), _t(s), 0.3).numpy(), ref_nms(b, s, 0.3))


def test_nms_chain_and_threshold_is_strict():
    # Each box overlaps the next by IoU 1/3 exactly: a chain where only every other box survives.
    b = np.array([[0, 0, 2, 1], [1, 0, 3, 1], [2, 0, 4, 1], [3, 0, 5, 1], [4, 0, 6, 1]], dtype=np.float64)
    s = np.array([5, 4, 3, 2, 1], dtype=np.float64)
    assert ops.nms(_t(b), _t(s), 0.3).tolist() == [0, 2, 4]
    assert ops.nms(_t(b), _t(s), 1 / 3).tolist() == [0, 1, 2, 3, 4]  # IoU must exceed the threshold


def test_nms_empty_and_non_contiguous():
    assert ops.nms(ember.zeros((0, 4)), ember.zeros((0,)), 0.5).shape == (0,)
    rng = np.random.default_rng(3)
    b = _boxes(rng, 30)
    s = rng.uniform(size=30)
    bt = _t(np.stack([b, b], axis=2).reshape(30, 8))[:, ::2]
    np.testing.assert_array_equal(bt.numpy(), b)
    np.testing.assert_array_equal(ops.nms(bt, _t(s), 0.5).numpy(), ref_nms(b, s, 0.5))


def test_nms_bad_inputs():
    with pytest.raises(ValueError, match=r"\[nms\] expected boxes of shape \[N, 4\]"):
        ops.nms(ember.zeros((3, 5)), ember.zeros(3), 0.5)
    with pytest.raises(ValueError, match=r"\[nms\] expected scores of shape \[3\]"):
        ops.nms(ember.zeros((3, 4)), ember.zeros(2), 0.5)
    with pytest.raises(TypeError, match="expected boxes to be a Tensor"):
        ops.nms(np.zeros((3, 4)), ember.zeros(3), 0.5)


@pytest.mark.parametrize("n", [40, 1100])  # coordinate trick, then the per-class loop (> 4000 numbers)
def test_batched_nms(n):
    rng = np.random.default_rng(n)
    b = _boxes(rng, n, scale=30)
    s = rng.uniform(size=n)
    idx = rng.integers(0, 4, size=n)
    keep = ops.batched_nms(_t(b), _t(s), ember.tensor(idx), 0.4)
    expected = []
    for c in range(4):
        where = np.nonzero(idx == c)[0]
        expected.extend(where[ref_nms(b[where], s[where], 0.4)])
    expected = np.array(sorted(expected, key=lambda i: -s[i]))
    np.testing.assert_array_equal(keep.numpy(), expected)
    # Without categories the same boxes suppress across classes.
    assert len(ops.nms(_t(b), _t(s), 0.4)) < len(keep)


def test_batched_nms_empty_and_errors():
    assert ops.batched_nms(ember.zeros((0, 4)), ember.zeros(0), ember.zeros(0, dtype=ember.int64), 0.5).shape == (0,)
    with pytest.raises(ValueError, match=r"\[batched_nms\] expected idxs of shape \[2\]"):
        ops.batched_nms(ember.zeros((2, 4)), ember.zeros(2), ember.zeros(3, dtype=ember.int64), 0.5)


# ---- conversion, area, clipping --------------------------------------------------------------

def test_box_convert_round_trips_and_references():
    rng = np.random.default_rng(0)
    b = _boxes(rng, 7)
    xywh = np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], axis=1)
    cxcywh = np.concatenate([(b[:, :2] + b[:, 2:]) / 2, b[:, 2:] - b[:, :2]], axis=1)
    forms = {"xyxy": b, "xywh": xywh, "cxcywh": cxcywh}
    for src, a in forms.items():
        for dst, expected in forms.items():
            out = ops.box_convert(_t(a), src, dst)
            np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-12)
    # [..., 4] batches and zero-size work; the same format gives a copy.
    batched = _t(b.reshape(1, 7, 4))
    assert ops.box_convert(batched, "xyxy", "cxcywh").shape == (1, 7, 4)
    assert ops.box_convert(ember.zeros((0, 4)), "xywh", "xyxy").shape == (0, 4)
    same = ops.box_convert(batched, "xyxy", "xyxy")
    assert same.data_ptr() != batched.data_ptr()


def test_box_convert_errors():
    with pytest.raises(ValueError, match="Unsupported Bounding Box Conversions"):
        ops.box_convert(ember.zeros((2, 4)), "xyxy", "yxyx")
    with pytest.raises(ValueError, match=r"\[box_convert\] expected boxes of shape \[\.\.\., 4\], but got \(2, 3\)"):
        ops.box_convert(ember.zeros((2, 3)), "xyxy", "xywh")


def test_box_area_dtypes_and_upcast():
    rng = np.random.default_rng(1)
    b = _boxes(rng, 9)
    np.testing.assert_allclose(ops.box_area(_t(b)).numpy(), ref_area(b), rtol=1e-12)
    # int16 corners: the area (up to 300 * 300) would overflow int16, so it is computed in int32.
    ib = np.array([[0, 0, 300, 300], [10, 20, 30, 50]], dtype=np.int64)
    area = ops.box_area(ember.tensor(ib, dtype=ember.int16))
    assert area.dtype == ember.int32 and area.tolist() == [90000, 600]
    assert ops.box_area(ember.tensor(b, dtype=ember.float16)).dtype == ember.float32
    assert ops.box_area(ember.zeros((0, 4))).shape == (0,)
    with pytest.raises(ValueError, match=r"\[box_area\] expected boxes of shape \[N, 4\]"):
        ops.box_area(ember.zeros(4))


def test_clip_and_remove_small_boxes():
    b = np.array([[-5, -3, 10, 8], [2, 3, 50, 60], [1, 1, 1.5, 9]], dtype=np.float64)
    clipped = ops.clip_boxes_to_image(_t(b), (20, 30))
    np.testing.assert_array_equal(clipped.numpy(), [[0, 0, 10, 8], [2, 3, 30, 20], [1, 1, 1.5, 9]])
    batched = ops.clip_boxes_to_image(_t(b[None]), (20, 30))
    assert batched.shape == (1, 3, 4)
    assert ops.remove_small_boxes(_t(b), 1.0).tolist() == [0, 1]
    assert ops.remove_small_boxes(ember.zeros((0, 4)), 1.0).shape == (0,)


# ---- IoU family ------------------------------------------------------------------------------

@pytest.mark.parametrize("name, ref", [("box_iou", ref_iou), ("generalized_box_iou", ref_giou),
                                       ("distance_box_iou", ref_diou), ("complete_box_iou", ref_ciou)])
def test_pairwise_ious_against_reference(name, ref):
    rng = np.random.default_rng(2)
    a, b = _boxes(rng, 8), _boxes(rng, 5)
    fn = getattr(ops, name)
    np.testing.assert_allclose(fn(_t(a), _t(b)).numpy(), ref(a, b), rtol=1e-10, atol=1e-12)
    # float32 and non-contiguous inputs
    at = _t(np.stack([a, a], axis=2).reshape(8, 8), ember.float32)[:, ::2]
    np.testing.assert_allclose(fn(at, _t(b, ember.float32)).numpy(), ref(a, b), rtol=1e-4, atol=1e-5)
    assert fn(ember.zeros((0, 4)), _t(b)).shape == (0, 5)
    with pytest.raises(ValueError, match=rf"\[{name}\] expected boxes of shape \[N, 4\]"):
        fn(ember.zeros((2, 2)), _t(b))


def test_box_iou_identical_and_disjoint():
    b = ember.tensor([[0.0, 0, 2, 2], [5, 5, 6, 6]])
    np.testing.assert_allclose(ops.box_iou(b, b).numpy(), np.eye(2))
    # disjoint: IoU 0, union 4 + 1, enclosing box 6 x 6
    np.testing.assert_allclose(ops.generalized_box_iou(b, b).numpy()[0, 1], -(36 - 5) / 36, rtol=1e-6)


@pytest.mark.parametrize("name", ["box_iou", "generalized_box_iou", "distance_box_iou", "complete_box_iou"])
def test_pairwise_ious_gradcheck(name):
    rng = np.random.default_rng(4)
    a = _t(_boxes(rng, 4), requires_grad=True)
    b = _t(_boxes(rng, 3), requires_grad=True)
    fn = getattr(ops, name)
    if name == "complete_box_iou":
        # alpha is held constant (no_grad, as torchvision), so finite differences of the whole
        # function differ from the analytic gradient by d(alpha) * v: check that gradient directly.
        _check_ciou_grad(a, b)
    else:
        assert ember.autograd.gradcheck(fn, (a, b))


def _check_ciou_grad(a, b):
    out = ops.complete_box_iou(a, b).sum()
    out.backward()
    an, bn = a.detach().numpy(), b.detach().numpy()

    def fixed_alpha(x):  # CIoU with alpha frozen at its value at (an, bn)
        iou, iou0 = ref_iou(x, bn), ref_iou(an, bn)
        wa, ha = x[:, 2] - x[:, 0], x[:, 3] - x[:, 1]
        wb, hb = bn[:, 2] - bn[:, 0], bn[:, 3] - bn[:, 1]
        v = 4 / math.pi**2 * (np.arctan(wa / ha)[:, None] - np.arctan(wb / hb)[None]) ** 2
        wa0, ha0 = an[:, 2] - an[:, 0], an[:, 3] - an[:, 1]
        v0 = 4 / math.pi**2 * (np.arctan(wa0 / ha0)[:, None] - np.arctan(wb / hb)[None]) ** 2
        alpha0 = v0 / (1 - iou0 + v0 + 1e-7)
        return (ref_diou(x, bn) - alpha0 * v).sum() + 0 * iou.sum()

    num = np.zeros_like(an)
    for idx in np.ndindex(an.shape):
        hi, lo = an.copy(), an.copy()
        hi[idx] += 1e-6
        lo[idx] -= 1e-6
        num[idx] = (fixed_alpha(hi) - fixed_alpha(lo)) / 2e-6
    np.testing.assert_allclose(a.grad.numpy(), num, rtol=1e-5, atol=1e-7)


# ---- losses ----------------------------------------------------------------------------------

def _pairs(seed, n=6):
    rng = np.random.default_rng(seed)
    a, b = _boxes(rng, n), _boxes(rng, n)
    b[0] = a[0] + np.array([100, 100, 100, 100])  # one disjoint pair
    return a, b


def ref_losses(a, b, eps=1e-7):
    d = np.arange(len(a))
    return {
        "generalized_box_iou_loss": 1 - ref_giou(a, b)[d, d],
        "distance_box_iou_loss": 1 - ref_diou(a, b, eps)[d, d],
        "complete_box_iou_loss": 1 - ref_ciou(a, b, eps)[d, d],
    }


@pytest.mark.parametrize("name", ["generalized_box_iou_loss", "distance_box_iou_loss", "complete_box_iou_loss"])
def test_iou_losses_against_reference(name):
    a, b = _pairs(5)
    fn = getattr(ops, name)
    expected = ref_losses(a, b)[name]
    # The losses add eps to the denominators of IoU and GIoU: within ~1e-7 relative of the references.
    np.testing.assert_allclose(fn(_t(a), _t(b)).numpy(), expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(fn(_t(a), _t(b), reduction="sum").item(), expected.sum(), rtol=1e-6)
    np.testing.assert_allclose(fn(_t(a), _t(b), reduction="mean").item(), expected.mean(), rtol=1e-6)
    # identical boxes: zero loss; integer boxes are computed in float32
    np.testing.assert_allclose(fn(_t(a), _t(a)).numpy(), 0, atol=1e-6)
    ints = ember.tensor([[0, 0, 4, 4]])
    assert fn(ints, ints).dtype == ember.float32
    # empty: mean is 0 (not NaN), with a graph
    empty = ember.zeros((0, 4), requires_grad=True)
    out = fn(empty, ember.zeros((0, 4)), reduction="mean")
    assert out.item() == 0.0 and out.requires_grad
    with pytest.raises(ValueError, match="Invalid Value for arg 'reduction': 'avg"):
        fn(_t(a), _t(b), reduction="avg")
    with pytest.raises(ValueError, match=r"expected boxes1 and boxes2 of the same shape"):
        fn(_t(a), _t(b[:2]))


@pytest.mark.parametrize("name", ["generalized_box_iou_loss", "distance_box_iou_loss", "complete_box_iou_loss"])
def test_iou_losses_gradcheck(name):
    a, b = _pairs(6, n=4)
    a[0] = b[0] + 0.5  # overlapping everywhere: clamp kinks are away from the points
    fn = getattr(ops, name)
    x, y = _t(a, requires_grad=True), _t(b, requires_grad=True)
    if name == "complete_box_iou_loss":
        # alpha is held constant (no_grad): the gradient is d(diou_loss) + alpha * dv, with alpha
        # the value the forward computed.
        fn(x, y, reduction="sum").backward()
        x2 = _t(a, requires_grad=True)
        diou = ops.distance_box_iou_loss(x2, y.detach(), reduction="none")
        w, h = x2[:, 2] - x2[:, 0], x2[:, 3] - x2[:, 1]
        wg, hg = (y[:, 2] - y[:, 0]).detach(), (y[:, 3] - y[:, 1]).detach()
        v = (4 / math.pi**2) * (ember.atan(wg / hg) - ember.atan(w / h)) ** 2
        iou = _t(ref_iou(a, b)[np.arange(4), np.arange(4)])
        alpha = (v / (1 - iou + v + 1e-7)).detach()
        (diou + alpha * v).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), x2.grad.numpy(), rtol=1e-6, atol=1e-9)
    else:
        assert ember.autograd.gradcheck(lambda p, q: fn(p, q, reduction="mean"), (x, y))


def test_sigmoid_focal_loss():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(5, 3)) * 3
    t = (rng.uniform(size=(5, 3)) > 0.5).astype(np.float64)
    p = 1 / (1 + np.exp(-x))
    ce = -(t * np.log(p) + (1 - t) * np.log(1 - p))
    p_t = p * t + (1 - p) * (1 - t)
    alpha_t = 0.25 * t + 0.75 * (1 - t)
    expected = alpha_t * ce * (1 - p_t) ** 2
    out = ops.sigmoid_focal_loss(_t(x), _t(t))
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-10)
    np.testing.assert_allclose(ops.sigmoid_focal_loss(_t(x), _t(t), reduction="mean").item(), expected.mean())
    np.testing.assert_allclose(ops.sigmoid_focal_loss(_t(x), _t(t), alpha=-1, gamma=0, reduction="sum").item(),
                               ce.sum(), rtol=1e-10)
    xg = _t(x, requires_grad=True)
    assert ember.autograd.gradcheck(lambda v: ops.sigmoid_focal_loss(v, _t(t), reduction="sum"), (xg,))
    with pytest.raises(ValueError, match="Invalid alpha value: 2"):
        ops.sigmoid_focal_loss(_t(x), _t(t), alpha=2)
    with pytest.raises(ValueError, match="Invalid Value for arg 'reduction'"):
        ops.sigmoid_focal_loss(_t(x), _t(t), reduction="max")


def test_masks_to_boxes():
    masks = np.zeros((3, 6, 8), dtype=np.uint8)
    masks[0, 1:4, 2:7] = 1
    masks[1, 5, 0] = 1
    masks[2, 0, 7] = 1
    masks[2, 3, 3] = 1
    out = ops.masks_to_boxes(ember.tensor(masks))
    assert out.dtype == ember.float32
    np.testing.assert_array_equal(out.numpy(), [[2, 1, 6, 3], [0, 5, 0, 5], [3, 0, 7, 3]])
    assert ops.masks_to_boxes(ember.zeros((0, 4, 4))).shape == (0, 4)
    with pytest.raises(ValueError, match=r"\[masks_to_boxes\] expected masks of shape \[N, H, W\]"):
        ops.masks_to_boxes(ember.zeros((4, 4)))
    with pytest.raises(ValueError, match="expected every mask to have a nonzero pixel"):
        ops.masks_to_boxes(ember.zeros((1, 4, 4)))


def test_lazy_names():
    import embervision.ops as o
    assert "StochasticDepth" in dir(o)
    with pytest.raises(AttributeError, match="has no attribute 'nothing_here'"):
        o.nothing_here  # noqa: B018
