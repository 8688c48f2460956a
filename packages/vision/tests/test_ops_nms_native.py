"""nms and batched_nms over the native kernel (embervision._C): a float64 NumPy greedy reference,
tie order, the strict threshold, degenerate boxes, dtypes and layouts, and errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from embervision import _native, ops


def iou_matrix(b):
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    wh = np.clip(np.minimum(b[:, None, 2:], b[None, :, 2:]) - np.maximum(b[:, None, :2], b[None, :, :2]), 0, None)
    inter = wh[..., 0] * wh[..., 1]
    with np.errstate(invalid="ignore", divide="ignore"):
        return inter / (area[:, None] + area[None, :] - inter)


def nms_ref(b, s, t):
    """Visit by score (ties by index); keep a box unless a kept box overlaps it by more than t."""
    order = sorted(range(len(s)), key=lambda i: (-s[i], i))
    iou = iou_matrix(b)
    keep = []
    for i in order:
        if not any(iou[k, i] > t for k in keep):
            keep.append(i)
    return np.array(keep, dtype=np.int64)


def random_boxes(gen, n, scale=30.0):
    xy = gen.uniform(0, scale, (n, 2))
    return np.concatenate([xy, xy + gen.uniform(1, scale / 2, (n, 2))], axis=1)


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("threshold", [0.0, 0.2, 0.5, 0.9, 1.0])
def test_matches_reference(dtype, threshold):
    gen = np.random.default_rng(int(threshold * 10))
    b, s = random_boxes(gen, 300), gen.integers(0, 20, 300).astype(np.float64)  # many ties
    bt, st = ember.from_numpy(b).to(dtype), ember.from_numpy(s).to(dtype)
    keep = ops.nms(bt, st, threshold)
    assert keep.dtype == ember.int64
    np.testing.assert_array_equal(keep.numpy(), nms_ref(bt.numpy().astype(np.float64), s, threshold))


def test_tie_order_is_stable_and_threshold_strict():
    b = ember.tensor([[0, 0, 2, 1], [0, 0, 2, 1], [1, 0, 3, 1], [10, 10, 11, 11.0]])
    s = ember.tensor([0.5, 0.5, 0.5, 0.5])
    assert ops.nms(b, s, 0.5).tolist() == [0, 2, 3]  # 1 duplicates 0; IoU(0, 2) = 1/3
    assert ops.nms(b, s, 1 / 3).tolist() == [0, 2, 3]
    assert ops.nms(b, s, 1.0).tolist() == [0, 1, 2, 3]  # identical boxes: IoU 1 is not > 1
    assert ops.nms(b, ember.tensor([0.1, 0.9, 0.5, 0.7]), 0.5).tolist() == [1, 3, 2]


def test_degenerate_boxes_suppress_nothing():
    # Zero-area boxes have IoU 0/0 = NaN with each other, which is not above any threshold.
    b = ember.tensor([[1, 1, 1, 1], [1, 1, 1, 1], [0, 0, 4, 4.0]])
    assert ops.nms(b, ember.tensor([0.9, 0.8, 0.7]), 0.0).tolist() == [0, 1, 2]


def test_layouts_and_dtypes():
    gen = np.random.default_rng(5)
    b, s = random_boxes(gen, 50), gen.uniform(size=50)
    expected = nms_ref(b, s, 0.4)
    wide = ember.from_numpy(np.concatenate([b, b], axis=1))[:, :4]
    assert not wide.is_contiguous()
    np.testing.assert_array_equal(ops.nms(wide, ember.from_numpy(s), 0.4).numpy(), expected)
    strided_scores = ember.from_numpy(np.repeat(s, 2))[::2]
    np.testing.assert_array_equal(ops.nms(ember.from_numpy(b), strided_scores, 0.4).numpy(), expected)
    ints = np.round(b).astype(np.int64)
    np.testing.assert_array_equal(ops.nms(ember.from_numpy(ints), ember.from_numpy(s), 0.4).numpy(),
                                  nms_ref(ints.astype(np.float64), s, 0.4))
    half = ember.from_numpy(b).to(ember.float16)
    np.testing.assert_array_equal(ops.nms(half, ember.from_numpy(s), 0.4).numpy(),
                                  nms_ref(half.float().numpy().astype(np.float64), s, 0.4))
    grads = ember.from_numpy(b).requires_grad_()
    np.testing.assert_array_equal(ops.nms(grads, ember.from_numpy(s), 0.4).numpy(), expected)


def test_empty_and_single():
    assert ops.nms(ember.zeros((0, 4)), ember.zeros(0), 0.5).shape == (0,)
    assert ops.nms(ember.tensor([[0, 0, 1, 1.0]]), ember.tensor([3.0]), 0.5).tolist() == [0]


@pytest.mark.parametrize("n", [40, 1200])  # 1200 boxes take the per-category path (> 4000 coordinates)
def test_batched_nms(n):
    gen = np.random.default_rng(n)
    b, s = random_boxes(gen, n, scale=20), gen.uniform(size=n)
    idx = gen.integers(0, 4, n)
    keep = ops.batched_nms(ember.from_numpy(b), ember.from_numpy(s), ember.from_numpy(idx), 0.5)
    expected = []
    for c in range(4):
        where = np.nonzero(idx == c)[0]
        expected.extend(where[nms_ref(b[where], s[where], 0.5)])
    expected = sorted(expected, key=lambda i: (-s[i], i))
    np.testing.assert_array_equal(keep.numpy(), expected)


def test_native_kernel_checks_its_arguments():
    C = _native.load("_C")
    with pytest.raises(ValueError, match=r"\[nms\] expected boxes of shape \[N, 4\], but got \[3, 5\]"):
        C.nms(np.zeros((3, 5)), 0.5)
    with pytest.raises(ValueError, match=r"\[nms\] expected boxes with 2 dimensions, but got shape \[4\]"):
        C.nms(np.zeros(4), 0.5)
    with pytest.raises(TypeError, match=r"\[nms\] expected a float32 or float64 input, but got int32"):
        C.nms(np.zeros((3, 4), dtype=np.int32), 0.5)
    with pytest.raises(ValueError, match=r"\[nms\] expected boxes to be C-contiguous"):
        C.nms(np.zeros((4, 3)).T, 0.5)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"\[nms\] expected boxes of shape \[N, 4\], but got \(3, 5\)"):
        ops.nms(ember.zeros((3, 5)), ember.zeros(3), 0.5)
    with pytest.raises(ValueError, match=r"\[nms\] expected scores of shape \[3\], but got \(2,\)"):
        ops.nms(ember.zeros((3, 4)), ember.zeros(2), 0.5)
    with pytest.raises(TypeError, match=r"\[nms\] expected boxes to be a Tensor, but got ndarray"):
        ops.nms(np.zeros((3, 4)), ember.zeros(3), 0.5)
