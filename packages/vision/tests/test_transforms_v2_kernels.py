"""transforms.v2.functional kernels against float64 NumPy references."""

import colorsys

import numpy as np
import pytest

import ember
from embervision import tv_tensors
from embervision.transforms.v2 import InterpolationMode
from embervision.transforms.v2 import functional as F


def _img(seed=0, shape=(3, 7, 9), dtype=np.uint8):
    rng = np.random.default_rng(seed)
    if dtype == np.uint8:
        return rng.integers(0, 256, size=shape).astype(np.uint8)
    return rng.uniform(size=shape).astype(dtype)


def _t(a):
    return ember.tensor(np.ascontiguousarray(a))


# ---- exact geometry --------------------------------------------------------------------------

def test_flips_exact_all_layouts():
    a = _img(shape=(2, 3, 5, 6))
    np.testing.assert_array_equal(F.horizontal_flip(_t(a)).numpy(), a[..., ::-1])
    np.testing.assert_array_equal(F.vertical_flip(_t(a)).numpy(), a[..., ::-1, :])
    # non-contiguous input and zero-size input
    view = _t(a).permute(0, 1, 3, 2)
    np.testing.assert_array_equal(F.hflip(view).numpy(), a.transpose(0, 1, 3, 2)[..., ::-1])
    assert F.hflip(ember.zeros((3, 0, 4))).shape == (3, 0, 4)


@pytest.mark.parametrize("fmt", ["XYXY", "XYWH", "CXCYWH"])
def test_box_flips_all_formats(fmt):
    xyxy = np.array([[1.0, 2.0, 4.0, 7.0], [0.0, 0.0, 10.0, 3.0]])
    boxes = tv_tensors.BoundingBoxes(xyxy, format="XYXY", canvas_size=(8, 10))
    conv = F.convert_bounding_box_format(boxes, new_format=fmt)
    flipped = F.convert_bounding_box_format(F.horizontal_flip(conv), new_format="XYXY")
    np.testing.assert_allclose(flipped.numpy(), [[6, 2, 9, 7], [0, 0, 10, 3]])
    vflipped = F.convert_bounding_box_format(F.vertical_flip(conv), new_format="XYXY")
    np.testing.assert_allclose(vflipped.numpy(), [[1, 1, 4, 6], [0, 5, 10, 8]])


@pytest.mark.parametrize("top, left, h, w", [(1, 2, 4, 5), (-2, -1, 4, 5), (3, 4, 8, 9), (0, 0, 7, 9)])
def test_crop_matches_padded_numpy(top, left, h, w):
    a = _img(shape=(3, 7, 9))
    padded = np.pad(a, ((0, 0), (10, 10), (10, 10)))
    expected = padded[:, top + 10:top + 10 + h, left + 10:left + 10 + w]
    np.testing.assert_array_equal(F.crop(_t(a), top, left, h, w).numpy(), expected)


@pytest.mark.parametrize("mode, np_mode", [("constant", "constant"), ("edge", "edge"), ("reflect", "reflect"),
                                           ("symmetric", "symmetric")])
@pytest.mark.parametrize("padding", [2, [1, 3], [1, 2, 3, 0]])
def test_pad_modes_match_numpy(mode, np_mode, padding):
    a = _img(shape=(2, 5, 6))
    p = F._geometry._parse_pad_padding(padding)  # left, right, top, bottom
    expected = np.pad(a, ((0, 0), (p[2], p[3]), (p[0], p[1])), mode=np_mode)
    np.testing.assert_array_equal(F.pad(_t(a), padding, padding_mode=mode).numpy(), expected)


def test_pad_fill_and_errors():
    a = _img(shape=(3, 2, 2))
    out = F.pad(_t(a), 1, fill=[10, 20, 30]).numpy()
    assert out.shape == (3, 4, 4) and out[1, 0, 0] == 20 and out[2, 3, 3] == 30
    np.testing.assert_array_equal(out[:, 1:3, 1:3], a)
    with pytest.raises(ValueError, match="`padding_mode` should be either"):
        F.pad(_t(a), 1, padding_mode="wrap")
    with pytest.raises(ValueError, match="Padding must be an int or a 1, 2, or 4 element tuple, not a 3"):
        F.pad(_t(a), [1, 2, 3])
    with pytest.raises(ValueError, match="Non-scalar fill value is not supported"):
        F.pad(tv_tensors.Mask(ember.zeros((2, 2))), 1, fill=[1, 2])
    with pytest.raises(ValueError, match="Padding mode 'edge' is not supported with bounding boxes"):
        F.pad(tv_tensors.BoundingBoxes([0, 0, 1, 1], format="XYXY", canvas_size=(2, 2)), 1, padding_mode="edge")


def test_center_crop():
    a = _img(shape=(3, 7, 9))
    np.testing.assert_array_equal(F.center_crop(_t(a), [3, 5]).numpy(), a[:, 2:5, 2:7])
    big = F.center_crop(_t(a), 11).numpy()  # larger than the image: zero padded around it
    assert big.shape == (3, 11, 11)
    np.testing.assert_array_equal(big[:, 2:9, 1:10], a)
    assert big[:, :2].sum() == 0


def test_rotate_quarter_turns_exact():
    a = _img(shape=(3, 6, 6))
    np.testing.assert_array_equal(F.rotate(_t(a), 90).numpy(), np.rot90(a, 1, axes=(1, 2)))
    np.testing.assert_array_equal(F.rotate(_t(a), -90).numpy(), np.rot90(a, 3, axes=(1, 2)))
    b = _img(shape=(3, 4, 7))
    np.testing.assert_array_equal(F.rotate(_t(b), 180).numpy(), b[:, ::-1, ::-1])
    assert F.rotate(_t(b), 90, expand=True).shape == (3, 7, 4)


def test_affine_integer_translation_and_identity():
    a = _img(shape=(3, 6, 8)).astype(np.float32)
    out = F.affine(_t(a), angle=0.0, translate=[2, 1], scale=1.0, shear=[0.0, 0.0]).numpy()
    expected = np.zeros_like(a)
    expected[:, 1:, 2:] = a[:, :-1, :-2]
    np.testing.assert_array_equal(out, expected)
    same = F.perspective(_t(a), [[0, 0], [7, 0], [7, 5], [0, 5]], [[0, 0], [7, 0], [7, 5], [0, 5]],
                         interpolation=InterpolationMode.NEAREST).numpy()
    np.testing.assert_allclose(same, a, atol=1e-5)
    assert np.array_equal(F.elastic(_t(a), ember.zeros((1, 6, 8, 2)), interpolation=InterpolationMode.NEAREST).numpy(), a)


def test_affine_fill_and_errors():
    a = np.ones((3, 4, 4), dtype=np.float32)
    out = F.affine(_t(a), angle=0.0, translate=[2, 0], scale=1.0, shear=0.0, fill=[0.5, 0.25, 0.0]).numpy()
    np.testing.assert_array_equal(out[:, :, :2], np.broadcast_to(np.array([0.5, 0.25, 0.0])[:, None, None], (3, 4, 2)))
    with pytest.raises(ValueError, match="Argument scale should be positive"):
        F.affine(_t(a), angle=0.0, translate=[0, 0], scale=0.0, shear=0.0)
    with pytest.raises(TypeError, match="Argument translate should be a sequence"):
        F.affine(_t(a), angle=0.0, translate=1, scale=1.0, shear=0.0)
    with pytest.raises(ValueError, match="Argument interpolation should be an InterpolationMode"):
        F.rotate(_t(a), 10, interpolation="linear")
    with pytest.raises(ValueError, match="Either the startpoints/endpoints or the coefficients"):
        F.perspective(_t(a), None, None)
    with pytest.raises(ValueError, match=r"Argument displacement shape should be \(1, 4, 4, 2\)"):
        F.elastic(_t(a), ember.zeros((1, 3, 4, 2)))


# ---- resize ----------------------------------------------------------------------------------

def _linear_weights(n_in, n_out, antialias):
    # Half-pixel centers (align_corners=False); antialias widens the triangle by the scale (PIL).
    scale = n_in / n_out
    w = np.zeros((n_out, n_in))
    support = max(scale, 1.0) if antialias else 1.0
    for i in range(n_out):
        center = (i + 0.5) * scale
        if antialias and scale > 1:
            xs = np.arange(n_in) + 0.5
            w[i] = np.clip(1 - np.abs(xs - center) / support, 0, None)
            w[i] /= w[i].sum()
        else:
            src = max(center - 0.5, 0.0)
            lo = min(int(np.floor(src)), n_in - 1)
            hi = min(lo + 1, n_in - 1)
            frac = src - lo
            w[i, lo] += 1 - frac
            w[i, hi] += frac
    return w


@pytest.mark.parametrize("size", [(5, 12), (3, 4), (14, 9)])
@pytest.mark.parametrize("antialias", [False, True])
def test_resize_bilinear_against_reference(size, antialias):
    a = _img(shape=(2, 7, 9), dtype=np.float64)
    out = F.resize(_t(a), list(size), antialias=antialias).numpy()
    wy, wx = _linear_weights(7, size[0], antialias), _linear_weights(9, size[1], antialias)
    expected = np.einsum("yh,chw,xw->cyx", wy, a, wx)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)


def test_resize_uint8_rounds_and_sizes():
    a = _img(shape=(3, 8, 10))
    out = F.resize(_t(a), [4, 5], antialias=False)
    ref = F.resize(_t(a.astype(np.float64)), [4, 5], antialias=False).numpy()
    assert out.dtype == ember.uint8
    np.testing.assert_array_equal(out.numpy(), np.round(ref).astype(np.uint8))
    assert F.resize(_t(a), 4).shape == (3, 4, 5)  # shorter edge to 4, aspect kept (int(4 * 10 / 8))
    # the longer edge would be int(6 * 16 / 8) = 12 > max_size: it becomes 7, the shorter int(7 * 6 / 12)
    assert F.resize(ember.zeros((3, 8, 16)), [6], max_size=7).shape == (3, 3, 7)
    same = _t(a)
    assert F.resize(same, [8, 10]) is same  # already that size: no work, as torchvision
    nearest = F.resize(_t(a), [16, 20], interpolation=InterpolationMode.NEAREST).numpy()
    np.testing.assert_array_equal(nearest, a.repeat(2, axis=1).repeat(2, axis=2))
    with pytest.raises(ValueError, match="max_size = 4 must be strictly greater"):
        F.resize(_t(a), 5, max_size=4)
    with pytest.raises(ValueError, match="max_size should only be passed if size specifies the length of the smaller"):
        F.resize(_t(a), [5, 6], max_size=8)


def test_resize_boxes_and_masks():
    boxes = tv_tensors.BoundingBoxes([[2.0, 2.0, 6.0, 4.0]], format="XYXY", canvas_size=(8, 10))
    out = F.resize(boxes, [4, 20])
    np.testing.assert_allclose(out.numpy(), [[4, 1, 12, 2]])
    assert out.canvas_size == (4, 20)
    mask = tv_tensors.Mask(ember.tensor(np.eye(4, dtype=np.uint8)))
    np.testing.assert_array_equal(F.resize(mask, [8, 8]).numpy(), np.eye(4, dtype=np.uint8).repeat(2, 0).repeat(2, 1))


# ---- color -----------------------------------------------------------------------------------

def test_grayscale_brightness_contrast_saturation():
    a = _img(seed=1, shape=(3, 4, 5))
    af = a.astype(np.float64)
    gray = 0.2989 * af[0] + 0.587 * af[1] + 0.114 * af[2]
    np.testing.assert_array_equal(F.rgb_to_grayscale(_t(a)).numpy()[0], np.round(gray).astype(np.uint8))
    assert F.rgb_to_grayscale(_t(a), num_output_channels=3).shape == (3, 4, 5)
    np.testing.assert_array_equal(F.adjust_brightness(_t(a), 1.5).numpy(), np.clip(af * 1.5, 0, 255).astype(np.uint8))
    mean = np.floor(gray).mean()
    np.testing.assert_array_equal(F.adjust_contrast(_t(a), 0.5).numpy(),
                                  np.clip(af * 0.5 + mean * 0.5, 0, 255).astype(np.uint8))
    np.testing.assert_array_equal(F.adjust_saturation(_t(a), 0.3).numpy(),
                                  np.clip(af * 0.3 + np.floor(gray) * 0.7, 0, 255).astype(np.uint8))
    fa = a.astype(np.float32) / 255
    np.testing.assert_allclose(F.adjust_brightness(_t(fa), 0.5).numpy(), fa * 0.5, rtol=1e-6)
    with pytest.raises(ValueError, match="brightness_factor is not non-negative."):
        F.adjust_brightness(_t(a), -1)
    with pytest.raises(TypeError, match="permitted channel values are 1 or 3, but found 2"):
        F.adjust_brightness(_t(a[:2]), 1.0)


def test_adjust_hue_against_colorsys():
    a = _img(seed=2, shape=(3, 3, 4), dtype=np.float64)
    out = F.adjust_hue(_t(a), 0.2).numpy()
    expected = np.zeros_like(a)
    for i in range(3):
        for j in range(4):
            h, s, v = colorsys.rgb_to_hsv(*a[:, i, j])
            expected[:, i, j] = colorsys.hsv_to_rgb((h + 0.2) % 1.0, s, v)
    np.testing.assert_allclose(out, expected, atol=1e-10)
    with pytest.raises(ValueError, match=r"hue_factor \(0.7\) is not in \[-0.5, 0.5\]."):
        F.adjust_hue(_t(a), 0.7)


def test_posterize_solarize_invert_autocontrast():
    a = _img(seed=3, shape=(3, 4, 5))
    np.testing.assert_array_equal(F.posterize(_t(a), 3).numpy(), a & 0b11100000)
    np.testing.assert_array_equal(F.solarize(_t(a), 128).numpy(), np.where(a >= 128, 255 - a, a))
    np.testing.assert_array_equal(F.invert(_t(a)).numpy(), 255 - a)
    fa = a.astype(np.float64) / 255
    np.testing.assert_allclose(F.invert(_t(fa)).numpy(), 1 - fa)
    np.testing.assert_allclose(F.posterize(_t(fa), 2).numpy(), np.clip(np.floor(fa * 4), 0, 3) / 4)
    lo, hi = fa.min(axis=(1, 2), keepdims=True), fa.max(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(F.autocontrast(_t(fa)).numpy(), (fa - lo) / (hi - lo), rtol=1e-10)
    const = np.full((3, 2, 2), 0.4)
    np.testing.assert_allclose(F.autocontrast(_t(const)).numpy(), const)  # flat channels unchanged
    with pytest.raises(TypeError, match="Threshold should be less or equal the maximum value of the dtype"):
        F.solarize(_t(fa), 1.5)


def _equalize_reference(channel):
    # PIL ImageOps.equalize on one uint8 channel
    hist = np.bincount(channel.ravel(), minlength=256)
    nonzero = hist[hist > 0]
    step = (nonzero.sum() - nonzero[-1]) // 255
    if step == 0:
        return channel
    lut, n = [], step // 2
    for count in hist:
        lut.append(min(255, n // step))
        n += count
    return np.array(lut, dtype=np.uint8)[channel]


def test_equalize_against_pil_algorithm():
    rng = np.random.default_rng(4)
    a = rng.integers(40, 120, size=(3, 16, 16)).astype(np.uint8)
    a[2] = 7  # a flat channel stays as it is
    out = F.equalize(_t(a)).numpy()
    for c in range(3):
        np.testing.assert_array_equal(out[c], _equalize_reference(a[c]))
    assert F.equalize(_t(a.astype(np.float32) / 255)).dtype == ember.float32


def test_sharpness_and_blur_against_convolution():
    a = _img(seed=5, shape=(3, 6, 7), dtype=np.float64)
    k = np.ones((3, 3)) / 13
    k[1, 1] = 5 / 13
    blurred = np.zeros_like(a)
    for c in range(3):
        for i in range(1, 5):
            for j in range(1, 6):
                blurred[c, i, j] = (a[c, i - 1:i + 2, j - 1:j + 2] * k).sum()
    expected = a.copy()
    expected[:, 1:-1, 1:-1] = np.clip(a[:, 1:-1, 1:-1] * 2.0 + blurred[:, 1:-1, 1:-1] * -1.0, 0, 1)
    np.testing.assert_allclose(F.adjust_sharpness(_t(a), 2.0).numpy(), np.clip(expected, 0, 1), atol=1e-12)
    # Gaussian blur: separable kernel, reflect borders
    g = np.exp(-0.5 * (np.arange(-1, 2) / 0.8) ** 2)
    g /= g.sum()
    padded = np.pad(a, ((0, 0), (1, 1), (1, 1)), mode="reflect")
    rows = sum(g[i] * padded[:, i:i + 6, :] for i in range(3))
    ref = sum(g[j] * rows[:, :, j:j + 7] for j in range(3))
    np.testing.assert_allclose(F.gaussian_blur(_t(a), 3, 0.8).numpy(), ref, atol=1e-12)
    with pytest.raises(ValueError, match="kernel_size should have odd and positive integers"):
        F.gaussian_blur(_t(a), 4)


def test_normalize_and_to_dtype():
    a = _img(seed=6, shape=(3, 2, 2), dtype=np.float64)
    out = F.normalize(_t(a), [0.1, 0.2, 0.3], [0.5, 0.25, 2.0]).numpy()
    np.testing.assert_allclose(out, (a - np.array([0.1, 0.2, 0.3])[:, None, None]) / np.array([0.5, 0.25, 2.0])[:, None, None])
    with pytest.raises(TypeError, match="Input tensor should be a float tensor. Got ember.uint8"):
        F.normalize(_t(_img()), [0.5] * 3, [0.5] * 3)
    with pytest.raises(ValueError, match="std evaluated to zero"):
        F.normalize(_t(a), [0.5] * 3, [0.5, 0, 0.5])
    u = np.array([[[0, 1, 128, 255]]], dtype=np.uint8)
    np.testing.assert_allclose(F.to_dtype(_t(u), ember.float64, scale=True).numpy(), u / 255.0)
    f = np.array([[[0.0, 0.5, 0.999, 1.0]]], dtype=np.float32)
    np.testing.assert_array_equal(F.to_dtype(_t(f), ember.uint8, scale=True).numpy(), [[[0, 127, 255, 255]]])
    np.testing.assert_array_equal(F.to_dtype(_t(u), ember.int16, scale=True).numpy(), u.astype(np.int16) << 7)
    assert F.to_dtype(_t(u), ember.float32).numpy().max() == 255.0  # no scale: a plain cast
    with pytest.raises(RuntimeError, match="cannot be performed safely"):
        F.to_dtype(_t(f), ember.int64, scale=True)


# ---- registry --------------------------------------------------------------------------------

def test_registry_dispatch_and_errors():
    class MyTensor(tv_tensors.TVTensor):
        pass

    mine = MyTensor._make(ember.zeros((3, 2, 2)))
    with pytest.raises(TypeError, match="Functional F.horizontal_flip supports inputs of type"):
        F.horizontal_flip(mine)  # a TVTensor without a kernel never falls back to the image kernel
    with pytest.raises(TypeError, match="supports inputs of type"):
        F.horizontal_flip("not a tensor")

    @F.register_kernel(F.horizontal_flip, MyTensor)
    def flip_mine(inpt):
        return MyTensor._make(inpt.flip(-2))

    assert type(F.horizontal_flip(mine)) is MyTensor
    with pytest.raises(ValueError, match="Kernels cannot be registered for the builtin tv_tensor classes"):
        F.register_kernel(F.resize, tv_tensors.Image)
    with pytest.raises(ValueError, match="Kernels can only be registered for subclasses of"):
        F.register_kernel(F.resize, ember.Tensor)
    with pytest.raises(ValueError, match="Kernels can only be registered on functionals from"):
        F.register_kernel(print, MyTensor)
    with pytest.raises(ValueError, match="Could not find functional with name 'nope'"):
        F.register_kernel("nope", MyTensor)


def test_kernels_keep_tv_tensor_types_and_metadata():
    img = tv_tensors.Image(ember.zeros((3, 4, 6)))
    assert type(F.resize(img, [2, 3])) is tv_tensors.Image
    vid = tv_tensors.Video(ember.zeros((2, 3, 4, 6)))
    assert type(F.crop(vid, 0, 0, 2, 2)) is tv_tensors.Video and F.crop(vid, 0, 0, 2, 2).shape == (2, 3, 2, 2)
    boxes = tv_tensors.BoundingBoxes([[1, 1, 3, 3]], format="XYWH", canvas_size=(4, 6))
    out = F.pad(boxes, [1, 2])
    assert out.format is tv_tensors.BoundingBoxFormat.XYWH and out.canvas_size == (8, 8)
    assert out.tolist() == [[2, 3, 3, 3]]
    clamped = F.clamp_bounding_boxes(tv_tensors.BoundingBoxes([[-2, 1, 9, 3]], format="XYXY", canvas_size=(4, 6)))
    assert clamped.tolist() == [[0, 1, 6, 3]]
    with pytest.raises(ValueError, match="For pure tensor inputs, `old_format` has to be passed."):
        F.convert_bounding_box_format(ember.zeros((1, 4)), new_format="XYXY")
    np.testing.assert_array_equal(
        F.convert_bounding_box_format(ember.tensor([[1, 2, 5, 8]]), old_format="XYXY", new_format="CXCYWH").numpy(),
        [[3, 5, 4, 6]])


@pytest.mark.parametrize("name, fn", [
    ("resize", lambda x: F.resize(x, [3, 7], antialias=True)),
    ("resize_up", lambda x: F.resize(x, [8, 9], interpolation=InterpolationMode.BICUBIC)),
    ("affine", lambda x: F.affine(x, 20.0, [1, 0], 0.9, [5.0, 0.0], interpolation=InterpolationMode.BILINEAR)),
    ("perspective", lambda x: F.perspective(x, [[0, 0], [5, 0], [5, 4], [0, 4]], [[1, 0], [5, 1], [4, 4], [0, 3]])),
    ("gaussian_blur", lambda x: F.gaussian_blur(x, [3, 5], [0.7, 1.1])),
    ("normalize", lambda x: F.normalize(x, [0.1, 0.2, 0.3], [0.5, 2.0, 1.0])),
    ("brightness", lambda x: F.adjust_brightness(x, 0.7)),
    ("contrast", lambda x: F.adjust_contrast(x, 0.6)),
    ("crop_pad", lambda x: F.crop(F.pad(x, [1, 2], padding_mode="reflect"), 1, 1, 4, 6)),
])
def test_float_kernels_are_differentiable(name, fn):
    # On plain float tensors the kernels are ember ops: gradients flow (float64 gradcheck).
    x = ember.tensor(_img(seed=9, shape=(3, 5, 6), dtype=np.float64) * 0.8 + 0.1, requires_grad=True)
    assert ember.autograd.gradcheck(fn, (x,))


def test_per_type_kernels_match_the_dispatch():
    boxes = np.array([[1.0, 2.0, 6.0, 7.0]], dtype=np.float32)
    tv_boxes = tv_tensors.BoundingBoxes(boxes, format="XYXY", canvas_size=(8, 10))
    plain = ember.tensor(boxes)
    out, canvas = F.center_crop_bounding_boxes(plain, tv_boxes.format, (8, 10), [4, 4])
    via = F.center_crop(tv_boxes, [4, 4])
    assert canvas == via.canvas_size == (4, 4) and out.tolist() == via.tolist()
    out, canvas = F.resized_crop_bounding_boxes(plain, tv_boxes.format, 1, 1, 6, 8, [12, 16])
    via = F.resized_crop(tv_boxes, 1, 1, 6, 8, [12, 16])
    assert canvas == via.canvas_size == (12, 16) and out.tolist() == via.tolist()
    # kernels that keep the canvas return the boxes alone, as torchvision's
    flipped = F.horizontal_flip_bounding_boxes(plain, tv_boxes.format, (8, 10))
    assert isinstance(flipped, ember.Tensor) and flipped.tolist() == [[4.0, 2.0, 9.0, 7.0]]
    moved = F.affine_bounding_boxes(plain, tv_boxes.format, (8, 10), 0.0, [1, 1], 1.0, [0.0, 0.0])
    assert moved.tolist() == [[2.0, 3.0, 7.0, 8.0]]
    mask = np.zeros((8, 10), dtype=np.uint8)
    mask[2:5, 3:7] = 1
    tv_mask = tv_tensors.Mask(ember.tensor(mask))
    for kernel, functional, args in (
            (F.affine_mask, F.affine, (15.0, [1, 0], 1.0, [0.0, 0.0])),
            (F.rotate_mask, F.rotate, (30.0,)),
            (F.crop_mask, F.crop, (1, 2, 5, 6)),
            (F.horizontal_flip_mask, F.horizontal_flip, ()),
            (F.perspective_mask, F.perspective, ([[0, 0], [9, 0], [9, 7], [0, 7]], [[1, 0], [9, 1], [8, 7], [0, 6]])),
    ):
        np.testing.assert_array_equal(kernel(ember.tensor(mask), *args).numpy(), functional(tv_mask, *args).numpy())
    video = ember.zeros((2, 3, 8, 10))
    assert F.resize_video(video, [4, 5]).shape == (2, 3, 4, 5)
