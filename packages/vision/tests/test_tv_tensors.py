"""tv_tensors: construction, metadata, the return-type rule, copies and pickling."""

import copy
import pickle

import numpy as np
import pytest

import ember
from embervision import tv_tensors


def test_image_video_mask_construction():
    img = tv_tensors.Image(ember.zeros((4, 5)))
    assert type(img) is tv_tensors.Image and img.shape == (1, 4, 5)  # [H, W] gains a channel
    assert isinstance(img, ember.Tensor) and isinstance(img, tv_tensors.TVTensor)
    assert tv_tensors.Image(np.zeros((3, 2, 2), dtype=np.uint8)).dtype == ember.uint8
    assert tv_tensors.Image([[1, 2], [3, 4]], dtype=ember.float32).dtype == ember.float32
    assert tv_tensors.Video(ember.zeros((2, 3, 4, 5))).shape == (2, 3, 4, 5)
    assert tv_tensors.Mask(ember.zeros((4, 5), dtype=ember.bool)).shape == (4, 5)
    with pytest.raises(ValueError, match="Image expects a tensor of at least 2 dimensions, but got 1"):
        tv_tensors.Image(ember.zeros(3))
    with pytest.raises(ValueError, match="Video expects a tensor of at least 4 dimensions, but got 3"):
        tv_tensors.Video(ember.zeros((3, 4, 5)))


def test_construction_shares_memory_and_requires_grad():
    t = ember.zeros((3, 2, 2))
    img = tv_tensors.Image(t)
    t[0, 0, 0] = 7.0
    assert img[0, 0, 0].item() == 7.0
    g = tv_tensors.Image(ember.ones((1, 2, 2), requires_grad=True))
    assert g.requires_grad and g.is_leaf  # a new leaf (Note [TVTensor return type])
    assert not tv_tensors.Image(ember.ones((1, 2, 2), requires_grad=True), requires_grad=False).requires_grad


def test_bounding_boxes():
    b = tv_tensors.BoundingBoxes([1, 2, 3, 4], format="xywh", canvas_size=(10, 20))
    assert b.shape == (1, 4) and b.format is tv_tensors.BoundingBoxFormat.XYWH and b.canvas_size == (10, 20)
    b2 = tv_tensors.BoundingBoxes(ember.zeros((3, 4)), format=tv_tensors.BoundingBoxFormat.CXCYWH, canvas_size=[5, 6])
    assert b2.canvas_size == (5, 6)
    with pytest.raises(ValueError, match="Expected a 1D or 2D tensor, got 3D"):
        tv_tensors.BoundingBoxes(ember.zeros((1, 2, 4)), format="XYXY", canvas_size=(2, 2))
    with pytest.raises(ValueError, match="format must be a BoundingBoxFormat"):
        tv_tensors.BoundingBoxes(ember.zeros((1, 4)), format="yxyx", canvas_size=(2, 2))
    with pytest.raises(ValueError, match="Expected boxes of 4 coordinates"):
        tv_tensors.BoundingBoxes(ember.zeros((1, 5)), format="XYXY", canvas_size=(2, 2))
    with pytest.raises(TypeError):
        tv_tensors.BoundingBoxes(ember.zeros((1, 4)), format="XYXY")  # canvas_size is required
    assert repr(b) == "BoundingBoxes([[1, 2, 3, 4]], format=BoundingBoxFormat.XYWH, canvas_size=(10, 20))"


def test_return_type_rule():
    img = tv_tensors.Image(ember.arange(12.0).reshape(3, 2, 2))
    # Default: ops give plain tensors, except clone/to/detach/requires_grad_ (and in-place ops).
    for out in (img + 1, img.sum(), img[0], img.flip(-1), ember.add(img, 1), img.reshape(-1)):
        assert type(out) is ember.Tensor
    for out in (img.clone(), img.to(ember.float64), img.detach(), img.add_(0)):
        assert type(out) is tv_tensors.Image
    with tv_tensors.set_return_type("TVTensor"):
        assert type(img + 1) is tv_tensors.Image and type(img.flip(-1)) is tv_tensors.Image
        assert type(img.max(0).values) is tv_tensors.Image
        assert type(ember.add(img, 1)) is ember.Tensor  # free functions stay plain in ember
    assert type(img + 1) is ember.Tensor  # the context manager restored the default
    tv_tensors.set_return_type("tvtensor")
    try:
        boxes = tv_tensors.BoundingBoxes([0, 0, 2, 2], format="XYXY", canvas_size=(4, 4))
        moved = boxes + 1
        assert type(moved) is tv_tensors.BoundingBoxes and moved.canvas_size == (4, 4)
        total = boxes.sum()  # any shape: outputs are wrapped without the [N, 4] check
        assert type(total) is tv_tensors.BoundingBoxes and total.ndim == 0
    finally:
        tv_tensors.set_return_type("Tensor")
    with pytest.raises(ValueError, match="return_type must be 'TVTensor' or 'Tensor'"):
        tv_tensors.set_return_type("numpy")


def test_wrap_copies_and_pickle():
    boxes = tv_tensors.BoundingBoxes([[0, 0, 2, 2]], format="XYXY", canvas_size=(4, 4))
    w = tv_tensors.wrap(ember.ones((2, 4)), like=boxes)
    assert type(w) is tv_tensors.BoundingBoxes and w.format is boxes.format and w.canvas_size == (4, 4)
    w2 = tv_tensors.wrap(ember.ones((2, 4)), like=boxes, canvas_size=(8, 9))
    assert w2.canvas_size == (8, 9)
    img = tv_tensors.Image(ember.ones((1, 2, 2)), requires_grad=True)
    dc = copy.deepcopy(img)
    assert type(dc) is tv_tensors.Image and dc.requires_grad and dc.data_ptr() != img.data_ptr()
    for obj in (boxes, img.detach()):
        back = pickle.loads(pickle.dumps(obj))
        assert type(back) is type(obj) and back.tolist() == obj.tolist()
    assert pickle.loads(pickle.dumps(boxes)).canvas_size == (4, 4)
    with pytest.raises(TypeError, match="wrap\\(\\) expected like to be a TVTensor"):
        tv_tensors.wrap(ember.ones(2), like=ember.ones(2))


def test_unwrap_keeps_graph():
    img = tv_tensors.Image(ember.ones((1, 2, 2)), requires_grad=True)
    plain = img.as_subclass(ember.Tensor)
    assert type(plain) is ember.Tensor
    (plain * 3).sum().backward()
    np.testing.assert_array_equal(img.grad.numpy(), np.full((1, 2, 2), 3.0))
    assert hash(img) != hash(tv_tensors.Image(ember.ones((1, 2, 2))))
