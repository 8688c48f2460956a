"""embervision.utils: make_grid and the drawing functions against NumPy references."""

import numpy as np
import pytest

import ember
from embervision import utils


def test_make_grid_layout():
    rng = np.random.default_rng(0)
    batch = rng.uniform(size=(5, 3, 4, 6)).astype(np.float32)
    grid = utils.make_grid(ember.tensor(batch), nrow=3, padding=2, pad_value=0.5).numpy()
    assert grid.shape == (3, 2 * (4 + 2) + 2, 3 * (6 + 2) + 2)
    for k in range(5):
        y, x = divmod(k, 3)
        np.testing.assert_array_equal(grid[:, 2 + y * 6:2 + y * 6 + 4, 2 + x * 8:2 + x * 8 + 6], batch[k])
    assert np.all(grid[:, :2] == 0.5) and np.all(grid[:, 8:, 18:] == 0.5)  # padding and the empty slot
    # lists, single-channel images and a single image
    gray = [ember.tensor(batch[i, :1]) for i in range(2)]
    g = utils.make_grid(gray, padding=0).numpy()
    assert g.shape == (3, 4, 12) and np.array_equal(g[0], g[2])
    assert utils.make_grid(ember.tensor(batch[0])).shape == (3, 4, 6)


def test_make_grid_normalize():
    x = np.stack([np.full((1, 2, 2), 2.0), np.full((1, 2, 2), 4.0)]).astype(np.float32)
    x[0, 0, 0, 0] = 0.0
    out = utils.make_grid(ember.tensor(x), padding=0, normalize=True).numpy()
    np.testing.assert_allclose(out[0], np.concatenate([x[0, 0], x[1, 0]], axis=1) / 4.0)
    each = utils.make_grid(ember.tensor(x), padding=0, normalize=True, scale_each=True).numpy()
    np.testing.assert_allclose(each[0, :, :2], x[0, 0] / 2.0)
    np.testing.assert_allclose(each[0, :, 2:], 0.0)  # a flat image: (x - min) / max(0, 1e-5)
    ranged = utils.make_grid(ember.tensor(x), padding=0, normalize=True, value_range=(1.0, 3.0)).numpy()
    np.testing.assert_allclose(ranged[0], np.clip(np.concatenate([x[0, 0], x[1, 0]], axis=1) - 1, 0, 2) / 2)
    with pytest.raises(TypeError, match="value_range has to be a tuple"):
        utils.make_grid(ember.tensor(x), normalize=True, value_range=[0, 1])
    with pytest.raises(TypeError, match="tensor or list of tensors expected"):
        utils.make_grid([np.zeros((3, 2, 2))])


def test_draw_bounding_boxes_pixels():
    image = ember.zeros((3, 12, 12), dtype=ember.uint8)
    boxes = ember.tensor([[1.7, 2.0, 8.0, 9.9], [6, 6, 20, 20]])
    out = utils.draw_bounding_boxes(image, boxes, colors=["#ff0000", (0, 0, 255)], width=2).numpy()
    red = np.zeros((12, 12), dtype=bool)
    red[2:10, 1:9] = True
    red[4:8, 3:7] = False  # the two-pixel outline of the inclusive box [1, 2, 8, 9]
    blue = np.zeros((12, 12), dtype=bool)
    blue[6:12, 6:12] = True
    blue[8:, 8:] = False  # clipped at the image border: only the top and left sides show
    np.testing.assert_array_equal(out[2] == 255, blue)
    np.testing.assert_array_equal(out[0] == 255, red & ~blue)
    filled = utils.draw_bounding_boxes(ember.full((1, 6, 6), 200, dtype=ember.uint8), ember.tensor([[1, 1, 4, 4]]),
                                       colors="lime", fill=True).numpy()
    assert filled.shape == (3, 6, 6)  # grayscale becomes RGB
    # interior: PIL's integer blend of (0, 255, 0) at alpha 100 over 200
    v = np.array([200 * 155 + 0 * 100, 200 * 155 + 255 * 100]) + 128
    expected = ((v >> 8) + v) >> 8
    assert filled[0, 2, 2] == expected[0] and filled[1, 2, 2] == expected[1]
    assert tuple(filled[:, 1, 1]) == (0, 255, 0) and tuple(filled[:, 0, 0]) == (200, 200, 200)


def test_draw_bounding_boxes_errors():
    image = ember.zeros((3, 4, 4), dtype=ember.uint8)
    with pytest.raises(ValueError, match="Tensor uint8 expected, got ember.float32"):
        utils.draw_bounding_boxes(image.float(), ember.tensor([[0, 0, 1, 1]]))
    with pytest.raises(ValueError, match="Pass individual images, not batches"):
        utils.draw_bounding_boxes(image[None], ember.tensor([[0, 0, 1, 1]]))
    with pytest.raises(ValueError, match=r"Boxes need to be in \(xmin, ymin, xmax, ymax\) format"):
        utils.draw_bounding_boxes(image, ember.tensor([[2, 0, 1, 1]]))
    with pytest.raises(ValueError, match="Number of colors must be equal or larger than the number of objects"):
        utils.draw_bounding_boxes(image, ember.tensor([[0, 0, 1, 1], [0, 0, 2, 2]]), colors=["red"])
    with pytest.raises(ValueError, match="unknown color specifier: 'chartreuse-ish'"):
        utils.draw_bounding_boxes(image, ember.tensor([[0, 0, 1, 1]]), colors="chartreuse-ish")
    with pytest.raises(ValueError, match=r"Number of boxes \(1\) and labels \(2\) mismatch"):
        utils.draw_bounding_boxes(image, ember.tensor([[0, 0, 1, 1]]), labels=["cat", "dog"])
    with pytest.raises(NotImplementedError, match="needs a TrueType rasterizer"):
        utils.draw_bounding_boxes(image, ember.tensor([[0, 0, 1, 1]]), labels=["cat"], font="DejaVuSans.ttf")
    with pytest.warns(UserWarning, match="boxes doesn't contain any box"):
        assert utils.draw_bounding_boxes(image, ember.zeros((0, 4))) is image


def test_draw_bounding_boxes_labels():
    from embervision import _font

    image = ember.zeros((3, 20, 40), dtype=ember.uint8)
    out = utils.draw_bounding_boxes(image, ember.tensor([[1, 2, 38, 19], [0, 0, 3, 3]]), labels=["Cat 7", None],
                                    colors=[(0, 255, 0), (9, 9, 9)], width=2).numpy()
    text = _font.render("Cat 7")
    region = out[1, 5:5 + _font.HEIGHT, 4:4 + text.shape[1]]  # at (x0, y0) + width + 1
    np.testing.assert_array_equal(region == 255, text)
    assert text.sum() > 20 and out[0, 5:15, 4:34].sum() == 0  # in the box's color only
    clipped = utils.draw_bounding_boxes(image, ember.tensor([[30, 15, 39, 19]]), labels=["long label"]).numpy()
    assert clipped.shape == (3, 20, 40)  # text past the border is cut, not an error
    np.testing.assert_array_equal(_font.render("\u00e9"), _font.render("?"))
    with pytest.warns(UserWarning, match="Argument 'font_size' will be ignored since 'font' is not set."):
        utils.draw_bounding_boxes(image, ember.tensor([[0, 0, 5, 5]]), labels=["a"], font_size=12)


def test_draw_segmentation_masks_reference():
    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, size=(3, 5, 6)).astype(np.uint8)
    masks = rng.uniform(size=(2, 5, 6)) > 0.5
    out = utils.draw_segmentation_masks(ember.tensor(image), ember.tensor(masks), alpha=0.3,
                                        colors=[(10, 20, 30), "blue"]).numpy()
    painted = image.astype(np.float64).copy()
    for mask, color in zip(masks, [(10, 20, 30), (0, 0, 255)], strict=True):
        painted[:, mask] = np.array(color, dtype=np.float64)[:, None]
    # uint8 * Python float computes in float32 (the default dtype), then truncates, as torchvision
    f32 = np.float32
    expected = (image.astype(f32) * f32(0.7) + painted.astype(f32) * f32(0.3)).astype(np.uint8)
    np.testing.assert_array_equal(out, expected)
    one = utils.draw_segmentation_masks(ember.tensor(image), ember.tensor(masks[0]), alpha=1.0, colors="red").numpy()
    assert np.all(one[:, masks[0]] == np.array([255, 0, 0])[:, None])
    with pytest.raises(ValueError, match="The masks must be of dtype bool"):
        utils.draw_segmentation_masks(ember.tensor(image), ember.zeros((1, 5, 6)))
    with pytest.raises(ValueError, match="The image and the masks must have the same height and width"):
        utils.draw_segmentation_masks(ember.tensor(image), ember.zeros((1, 4, 6), dtype=ember.bool))
    with pytest.raises(ValueError, match="Pass an RGB image"):
        utils.draw_segmentation_masks(ember.tensor(image[:1]), ember.zeros((1, 5, 6), dtype=ember.bool))


def test_draw_keypoints():
    image = ember.zeros((3, 9, 9), dtype=ember.uint8)
    out = utils.draw_keypoints(image, ember.tensor([[[2, 2], [2, 6]]]), connectivity=[(0, 1)], colors="red",
                               radius=1, width=1).numpy()
    # (x, y) = (2, 2) to (2, 6): the line is drawn after the disks, in white
    assert tuple(out[:, 2, 2]) == (255, 255, 255) and tuple(out[:, 6, 2]) == (255, 255, 255)
    assert tuple(out[:, 2, 1]) == (255, 0, 0)
    assert tuple(out[:, 4, 2]) == (255, 255, 255) and out[:, 4, 4].sum() == 0
    assert tuple(out[:, 1, 1]) == (255, 0, 0)  # inside the disk of radius 1 + 1/2
    assert out[:, 0, 2].sum() == 0
    with pytest.raises(ValueError, match=r"keypoints must be of shape \(num_instances, K, 2\)"):
        utils.draw_keypoints(image, ember.zeros((2, 2)))


def _flow_reference(flow):
    # Middlebury color wheel, written out as its six ramps
    ramps = [(15, "RY"), (6, "YG"), (4, "GC"), (11, "CB"), (13, "BM"), (6, "MR")]
    wheel = []
    for n, name in ramps:
        for i in range(n):
            r = np.floor(255 * i / n)
            wheel.append({"RY": (255, r, 0), "YG": (255 - r, 255, 0), "GC": (0, 255, r), "CB": (0, 255 - r, 255),
                          "BM": (r, 0, 255), "MR": (255, 0, 255 - r)}[name])
    wheel = np.array(wheel, dtype=np.float64)
    u, v = flow[0], flow[1]
    max_norm = np.sqrt(u**2 + v**2).max()
    eps = np.finfo(np.float32).eps
    u, v = u / (max_norm + eps), v / (max_norm + eps)
    norm = np.sqrt(u**2 + v**2)
    fk = (np.arctan2(-v, -u) / np.pi + 1) / 2 * 54
    k0 = np.floor(fk).astype(int)
    k1 = np.where(k0 + 1 == 55, 0, k0 + 1)
    f = fk - k0
    out = np.zeros((3,) + u.shape)
    for c in range(3):
        col = (1 - f) * wheel[k0, c] / 255 + f * wheel[k1, c] / 255
        out[c] = np.floor(255 * (1 - norm * (1 - col)))
    return out


def test_flow_to_image():
    rng = np.random.default_rng(2)
    flow = rng.normal(size=(2, 6, 7)).astype(np.float32)
    out = utils.flow_to_image(ember.tensor(flow))
    assert out.dtype == ember.uint8 and out.shape == (3, 6, 7)
    diff = np.abs(out.numpy().astype(int) - _flow_reference(flow.astype(np.float64)))
    assert diff.max() <= 1 and (diff > 0).mean() < 0.05  # float32 vs float64 floors may differ by one
    batch = utils.flow_to_image(ember.tensor(np.stack([flow, -flow])))
    assert batch.shape == (2, 3, 6, 7)
    assert utils.flow_to_image(ember.zeros((2, 2, 2))).numpy().min() == 255  # no motion: white
    with pytest.raises(ValueError, match="Flow should be of dtype ember.float32"):
        utils.flow_to_image(ember.zeros((2, 2, 2), dtype=ember.float64))
    with pytest.raises(ValueError, match=r"Input flow should have shape \(2, H, W\) or \(N, 2, H, W\)"):
        utils.flow_to_image(ember.zeros((3, 2, 2)))
