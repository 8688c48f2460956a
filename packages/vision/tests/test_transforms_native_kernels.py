"""The native image kernels (embervision._transforms) behind transforms.v2.functional: resize and
the color kernels against float64 NumPy references written here and against the Python path on
ember ops (reached by switching the native path off), on contiguous, non-contiguous, batched,
zero-size and 1x1 images, plus their argument errors."""

from __future__ import annotations

import colorsys
import math

import numpy as np
import pytest

import ember
from embervision import _native as loader
from embervision.transforms import InterpolationMode
from embervision.transforms.v2 import functional as F
from embervision.transforms.v2.functional import _native

IM = InterpolationMode
RNG = np.random.default_rng(1234)
DTYPES = (np.uint8, np.float32, np.float64)


def _image(shape, dtype):
    if dtype == np.uint8:
        return RNG.integers(0, 256, shape, dtype=np.uint8)
    return RNG.random(shape).astype(dtype)


def _t(a):
    return ember.from_numpy(np.ascontiguousarray(a))


def _python_path(fn, *args, **kwargs):
    _native.enabled = False
    try:
        return fn(*args, **kwargs)
    finally:
        _native.enabled = True


def _check(out, ref, dtype, levels=1):
    """uint8 within `levels` of the (float64) reference, floats close to it."""
    out = np.asarray(out, dtype=np.float64)
    assert out.shape == ref.shape
    if dtype == np.uint8:
        assert np.abs(out - ref).max(initial=0) <= levels
    else:
        tol = 2e-5 if dtype == np.float32 else 1e-11
        np.testing.assert_allclose(out, ref, rtol=tol, atol=tol)


def _same_as_python(fn, x, *args, **kwargs):
    native = fn(x, *args, **kwargs)
    python = _python_path(fn, x, *args, **kwargs)
    assert native.dtype == python.dtype and tuple(native.shape) == tuple(python.shape)
    a, b = native.numpy().astype(np.float64), python.numpy().astype(np.float64)
    if x.dtype == ember.uint8:
        assert np.abs(a - b).max(initial=0) <= 1
    else:
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    return native


def test_the_native_module_is_loaded_and_used(monkeypatch):
    mod = loader.load("_transforms")
    assert mod.built_for_core.split(".")[:2] == ember.__version__.split(".")[:2]
    calls = []
    monkeypatch.setattr(_native, "kernels", lambda: (calls.append(1), mod)[1])
    F.resize_image(_t(_image((3, 8, 8), np.uint8)), [4, 4])
    F.adjust_brightness_image(_t(_image((3, 8, 8), np.float32)), 0.5)
    assert len(calls) == 2


# ---- resize: a dense float64 reference ---------------------------------------------------------


def _cubic(x, a):
    x = np.abs(x)
    return np.where(x < 1, ((a + 2) * x - (a + 3)) * x * x + 1,
                    np.where(x < 2, ((a * x - 5 * a) * x + 8 * a) * x - 4 * a, 0.0))


def _axis_matrix(n_in, n_out, mode, antialias):
    """The [n_out, n_in] resampling matrix of one axis (align_corners=False, scale = in / out)."""
    m = np.zeros((n_out, n_in))
    scale = n_in / n_out
    for o in range(n_out):
        if mode in ("nearest", "nearest-exact"):
            src = o * scale if mode == "nearest" else (o + 0.5) * scale
            m[o, min(int(math.floor(src)), n_in - 1)] = 1
        elif antialias:  # PIL: filter centred on the output pixel, support widened when downscaling
            stretch = max(scale, 1.0)
            support = (1.0 if mode == "bilinear" else 2.0) * stretch
            center = (o + 0.5) * scale
            lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), n_in)
            x = (np.arange(lo, hi) - center + 0.5) / stretch
            w = np.maximum(0, 1 - np.abs(x)) if mode == "bilinear" else _cubic(x, -0.5)
            m[o, lo:hi] = w / w.sum()
        elif mode == "bilinear":
            src = max((o + 0.5) * scale - 0.5, 0.0)
            i0 = min(int(src), n_in - 1)
            frac = src - i0
            m[o, i0] += 1 - frac
            m[o, min(i0 + 1, n_in - 1)] += frac
        else:
            src = (o + 0.5) * scale - 0.5
            i0 = math.floor(src)
            t = src - i0
            for k, w in enumerate(_cubic(np.array([t + 1, t, 1 - t, 2 - t]), -0.75)):
                m[o, min(max(i0 - 1 + k, 0), n_in - 1)] += w
    return m


def _resize_ref(a, size, mode, antialias):
    oh, ow = size
    mh = _axis_matrix(a.shape[-2], oh, mode, antialias)
    mw = _axis_matrix(a.shape[-1], ow, mode, antialias)
    out = mh @ a.astype(np.float64) @ mw.T
    if a.dtype == np.uint8:
        out = np.clip(np.round(out), 0, 255)
    return out


MODES = [(IM.NEAREST, False), (IM.NEAREST_EXACT, False), (IM.BILINEAR, False), (IM.BILINEAR, True),
         (IM.BICUBIC, False), (IM.BICUBIC, True)]


@pytest.mark.parametrize("mode,antialias", MODES, ids=lambda v: str(getattr(v, "value", v)))
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("size", [(5, 7), (29, 40), (4, 17), (1, 1), (15, 3)])
def test_resize_against_reference_and_python_path(mode, antialias, dtype, size):
    a = _image((2, 3, 15, 17), dtype)  # batched; 15 -> 5 and 17 -> 4 are odd downscale factors
    out = _same_as_python(F.resize_image, _t(a), list(size), interpolation=mode, antialias=antialias)
    _check(out.numpy(), _resize_ref(a, size, mode.value, antialias), dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_resize_non_contiguous_1x1_and_zero_size(dtype):
    a = _image((3, 9, 22), dtype)
    strided = _t(a)[..., ::2]  # [3, 9, 11], not contiguous
    assert not strided.is_contiguous()
    out = F.resize_image(strided, [4, 27], interpolation=IM.BICUBIC, antialias=True)
    _check(out.numpy(), _resize_ref(a[..., ::2], (4, 27), "bicubic", True), dtype)
    one = _image((3, 1, 1), dtype)
    for mode, aa in MODES:
        out = _same_as_python(F.resize_image, _t(one), [3, 5], interpolation=mode, antialias=aa)
        _check(out.numpy(), np.broadcast_to(one.astype(np.float64), (3, 3, 5)), dtype, levels=0)
    empty = F.resize_image(_t(np.zeros((0, 3, 6, 6), dtype)), [3, 3])
    assert tuple(empty.shape) == (0, 3, 3, 3)
    direct = loader.load("_transforms").resize(np.zeros((0, 3, 6, 6), dtype), 2, 5, "bilinear", True)
    assert direct.shape == (0, 3, 2, 5)


def test_resize_uint8_rounds_and_clamps_the_bicubic_overshoot():
    a = np.zeros((1, 8, 8), np.uint8)
    a[:, :, 4:] = 255  # a hard edge: bicubic overshoots below 0 and above 255
    out = F.resize_image(_t(a), [8, 13], interpolation=IM.BICUBIC, antialias=False).numpy()
    ref = _resize_ref(a, (8, 13), "bicubic", False)
    np.testing.assert_array_equal(out, ref)
    assert out.min() == 0 and out.max() == 255


def test_resize_only_one_axis_and_v1_entry_point():
    from embervision.transforms import functional as F1
    a = _image((3, 10, 12), np.float32)
    for size in ([10, 5], [4, 12]):
        out = F1.resize(_t(a), size, antialias=True)
        _check(out.numpy(), _resize_ref(a, size, "bilinear", True), np.float32)


def test_resize_keeps_the_python_path_for_autograd():
    x = ember.from_numpy(RNG.random((1, 6, 6))).requires_grad_()
    out = F.resize_image(x, [3, 3], antialias=True)
    assert out.requires_grad
    out.sum().backward()
    # each output pixel's weights sum to 1, so the gradient of the sum counts each input's share
    mh, mw = _axis_matrix(6, 3, "bilinear", True), _axis_matrix(6, 3, "bilinear", True)
    np.testing.assert_allclose(x.grad.numpy()[0], np.outer(mh.sum(0), mw.sum(0)), rtol=1e-10)


def test_resize_unsupported_dtype_keeps_the_python_path():
    a = RNG.integers(0, 1000, (3, 6, 6)).astype(np.int16)
    out = F.resize_image(_t(a), [3, 3], interpolation=IM.NEAREST)
    np.testing.assert_array_equal(out.numpy(), a[:, ::2, ::2])


def test_resize_errors():
    mod = loader.load("_transforms")
    with pytest.raises(ValueError, match=r"\[resize\] expected a positive output size, but got \(0, 5\)"):
        F.resize_image(_t(_image((3, 6, 6), np.uint8)), [0, 5])
    with pytest.raises(ValueError, match=r"\[resize\] expected a positive output size, but got \(4, -1\)"):
        mod.resize(np.zeros((3, 6, 6), np.float32), 4, -1, "bilinear", False)
    with pytest.raises(TypeError, match=r"\[resize\] expected an image of dtype uint8, float32 or float64, "
                                        r"but got int32"):
        mod.resize(np.zeros((3, 6, 6), np.int32), 4, 4, "bilinear", False)
    with pytest.raises(ValueError, match=r"\[resize\] expected an image of shape \(\.\.\., H, W\), but got "
                                         r"shape \(6,\)"):
        mod.resize(np.zeros(6, np.float32), 4, 4, "bilinear", False)
    with pytest.raises(ValueError, match=r"\[resize\] expected interpolation 'nearest', 'nearest-exact', "
                                         r"'bilinear' or 'bicubic', but got 'area'"):
        mod.resize(np.zeros((3, 6, 6), np.float32), 4, 4, "area", False)
    with pytest.raises(ValueError, match=r"\[resize\] expected a non-empty image plane to resize"):
        mod.resize(np.zeros((3, 0, 6), np.float32), 4, 4, "bilinear", False)


# ---- color: float64 references -----------------------------------------------------------------

LUMA = np.array([0.2989, 0.587, 0.114])


def _gray(a):
    return np.tensordot(LUMA, a.astype(np.float64), axes=([0], [-3]))[..., None, :, :]


def _bound(dtype):
    return 255.0 if dtype == np.uint8 else 1.0


def _finish(x, dtype):
    """clamp into the value range; uint8 truncates (the kernels' cast)."""
    x = np.clip(x, 0, _bound(dtype))
    return np.floor(x) if dtype == np.uint8 else x


def _blend(a, other, ratio):
    return _finish(a.astype(np.float64) * ratio + other * (1 - ratio), a.dtype)


def _ref_grayscale(a):
    g = _gray(a)
    return np.round(g) if a.dtype == np.uint8 else g


def _ref_saturation(a, f):
    g = _gray(a)
    return _blend(a, np.floor(g) if a.dtype == np.uint8 else g, f)


def _ref_contrast(a, f):
    g = _gray(a)
    g = np.floor(g) if a.dtype == np.uint8 else g
    return _blend(a, g.mean(axis=(-3, -2, -1), keepdims=True), f)


def _ref_hue(a, f):
    x = a.astype(np.float64) / (255.0 if a.dtype == np.uint8 else 1.0)
    flat = np.moveaxis(x, -3, -1).reshape(-1, 3)
    out = np.empty_like(flat)
    for i, (r, g, b) in enumerate(flat):
        h, s, v = colorsys.rgb_to_hsv(r, g, b)
        out[i] = colorsys.hsv_to_rgb((h + f) % 1.0, s, v)
    out = np.moveaxis(out.reshape(np.moveaxis(x, -3, -1).shape), -1, -3)
    return np.floor(out * 255.999) if a.dtype == np.uint8 else out


def _ref_sharpness(a, f):
    x = a.astype(np.float64)
    out = x.copy()
    h, w = x.shape[-2:]
    if h <= 2 or w <= 2:
        return out
    blur = sum(x[..., 1 + dy:h - 1 + dy, 1 + dx:w - 1 + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1))
    blur = (blur + 4 * x[..., 1:-1, 1:-1]) / 13
    if a.dtype == np.uint8:
        blur = np.round(blur)
    inner = x[..., 1:-1, 1:-1]
    out[..., 1:-1, 1:-1] = inner + (blur - inner) * (1 - f)
    return _finish(out, a.dtype)


def _ref_posterize(a, bits):
    if a.dtype == np.uint8:
        return (a & (0xFF << (8 - bits) & 0xFF)).astype(np.float64)
    levels = 2.0 ** bits
    return np.clip(np.floor(a.astype(np.float64) * levels), 0, levels - 1) / levels


def _ref_invert(a):
    return _bound(a.dtype) - a.astype(np.float64)


def _ref_solarize(a, t):
    return np.where(a >= t, _ref_invert(a), a.astype(np.float64))


def _ref_autocontrast(a):
    x = a.astype(np.float64)
    lo, hi = x.min(axis=(-2, -1), keepdims=True), x.max(axis=(-2, -1), keepdims=True)
    scale = np.where(hi > lo, _bound(a.dtype) / np.where(hi > lo, hi - lo, 1), 1.0)
    lo = np.where(hi > lo, lo, 0)
    return _finish((x - lo) * scale, a.dtype)


def _ref_equalize(a):
    """PIL's ImageOps.equalize on each uint8 plane."""
    out = a.astype(np.float64).copy()
    planes = out.reshape(-1, a.shape[-2] * a.shape[-1])
    for p, plane in zip(planes, a.reshape(planes.shape), strict=True):
        hist = np.bincount(plane, minlength=256)
        present = [k for k in range(256) if hist[k]]
        step = (plane.size - hist[present[-1]]) // 255 if present else 0
        if step == 0:
            continue
        lut, n = [], step // 2
        for k in range(256):
            lut.append(min(255, n // step))
            n += hist[k]
        p[:] = np.array(lut)[plane]
    return out


def _ref_normalize(a, mean, std):
    m = np.array(mean, dtype=np.float64)[:, None, None]
    s = np.array(std, dtype=np.float64)[:, None, None]
    return (a.astype(np.float64) - m) / s


# (name, kernel call, reference, uint8 tolerance in levels)
COLOR = [
    ("rgb_to_grayscale", lambda x: F.rgb_to_grayscale_image(x), _ref_grayscale, 1),
    ("rgb_to_grayscale3", lambda x: F.rgb_to_grayscale_image(x, 3),
     lambda a: np.broadcast_to(_ref_grayscale(a), a.shape), 1),
    ("brightness", lambda x: F.adjust_brightness_image(x, 1.37), lambda a: _finish(a * 1.37, a.dtype), 1),
    ("saturation", lambda x: F.adjust_saturation_image(x, 0.6), lambda a: _ref_saturation(a, 0.6), 1),
    ("saturation_up", lambda x: F.adjust_saturation_image(x, 1.9), lambda a: _ref_saturation(a, 1.9), 1),
    ("contrast", lambda x: F.adjust_contrast_image(x, 1.7), lambda a: _ref_contrast(a, 1.7), 1),
    ("hue", lambda x: F.adjust_hue_image(x, 0.23), lambda a: _ref_hue(a, 0.23), 1),
    ("hue_negative", lambda x: F.adjust_hue_image(x, -0.41), lambda a: _ref_hue(a, -0.41), 1),
    ("sharpness", lambda x: F.adjust_sharpness_image(x, 2.5), lambda a: _ref_sharpness(a, 2.5), 1),
    ("blur", lambda x: F.adjust_sharpness_image(x, 0.3), lambda a: _ref_sharpness(a, 0.3), 1),
    ("posterize", lambda x: F.posterize_image(x, 3), lambda a: _ref_posterize(a, 3), 0),
    ("invert", lambda x: F.invert_image(x), _ref_invert, 0),
    ("autocontrast", lambda x: F.autocontrast_image(x), _ref_autocontrast, 1),
]


def _solarize_threshold(dtype):
    return 100 if dtype == np.uint8 else 0.4


@pytest.mark.parametrize("name,kernel,ref,levels", COLOR, ids=[c[0] for c in COLOR])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_color_kernels_against_reference_and_python_path(name, kernel, ref, levels, dtype):
    a = _image((2, 3, 7, 9), dtype)  # batched [N, C, H, W]
    out = _same_as_python(kernel, _t(a))
    assert out.dtype == _t(a).dtype
    _check(out.numpy(), ref(a), dtype, levels)
    # non-contiguous input: every other column of a wider image
    wide = _image((3, 6, 18), dtype)
    strided = _t(wide)[..., ::2]
    assert not strided.is_contiguous()
    _check(kernel(strided).numpy(), ref(wide[..., ::2]), dtype, levels)
    # a 1x1 image, and a batch of none
    one = _image((3, 1, 1), dtype)
    _check(_same_as_python(kernel, _t(one)).numpy(), ref(one), dtype, levels)
    empty = kernel(_t(np.zeros((0, 3, 4, 4), dtype)))
    assert empty.shape[0] == 0 and empty.shape[-2:] == (4, 4)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_solarize_equalize_normalize(dtype):
    a = _image((2, 3, 16, 16), dtype)
    t = _solarize_threshold(dtype)
    out = _same_as_python(F.solarize_image, _t(a), t)
    _check(out.numpy(), _ref_solarize(a, t), dtype, 0)
    _check(F.solarize_image(_t(a)[..., ::2], t).numpy(), _ref_solarize(a[..., ::2], t), dtype, 0)
    if dtype == np.uint8:
        eq = _same_as_python(F.equalize_image, _t(a))
        _check(eq.numpy(), _ref_equalize(a), dtype, 0)
        skewed = np.minimum(a, 40)  # a narrow histogram, stretched over [0, 255]
        _check(F.equalize_image(_t(skewed)[..., ::2]).numpy(), _ref_equalize(skewed[..., ::2]), dtype, 0)
        flat = np.full((3, 4, 4), 7, np.uint8)  # one value: left as it is
        np.testing.assert_array_equal(F.equalize_image(_t(flat)).numpy(), flat)
        return
    mean, std = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
    out = _same_as_python(F.normalize_image, _t(a), mean, std)
    _check(out.numpy(), _ref_normalize(a, mean, std), dtype)
    half = F.normalize_image(_t(a)[..., ::2], 0.5, [2.0])  # a scalar and a one-element list broadcast
    _check(half.numpy(), _ref_normalize(a[..., ::2], [0.5] * 3, [2.0] * 3), dtype)
    x = _t(a.copy())  # from_numpy shares memory: keep `a` for the reference
    same = F.normalize_image(x, mean, std, inplace=True)
    assert same is x
    _check(x.numpy(), _ref_normalize(a, mean, std), dtype)
    assert F.normalize_image(_t(np.zeros((0, 3, 2, 2), dtype)), mean, std).shape == (0, 3, 2, 2)


def test_color_kernels_keep_the_python_path_for_autograd():
    x = ember.from_numpy(RNG.random((3, 4, 4))).requires_grad_()
    out = F.adjust_brightness_image(x, 0.5)
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((3, 4, 4), 0.5))
    y = ember.from_numpy(RNG.random((3, 4, 4))).requires_grad_()
    F.normalize_image(y, [0.0, 0.0, 0.0], [2.0, 4.0, 8.0]).sum().backward()
    np.testing.assert_allclose(y.grad.numpy()[:, 0, 0], [0.5, 0.25, 0.125])


def test_color_errors():
    mod = loader.load("_transforms")
    u8 = np.zeros((3, 4, 4), np.uint8)
    with pytest.raises(TypeError, match=r"\[adjust_brightness\] expected an image of dtype uint8, float32 or "
                                        r"float64, but got int16"):
        mod.adjust_brightness(u8.astype(np.int16), 1.0)
    with pytest.raises(ValueError, match=r"\[adjust_hue\] expected an image of shape \(\.\.\., C, H, W\), "
                                         r"but got shape \(4, 4\)"):
        mod.adjust_hue(np.zeros((4, 4), np.float32), 0.1)
    with pytest.raises(ValueError, match=r"\[adjust_saturation\] expected an image with 3 channels, but got "
                                         r"shape \(2, 4, 4\)"):
        mod.adjust_saturation(np.zeros((2, 4, 4), np.float32), 0.5)
    with pytest.raises(ValueError, match=r"\[adjust_contrast\] expected contrast_factor to be non-negative"):
        mod.adjust_contrast(u8, -1.0)
    with pytest.raises(ValueError, match=r"\[adjust_hue\] expected hue_factor in \[-0.5, 0.5\]"):
        mod.adjust_hue(u8, 0.7)
    with pytest.raises(ValueError, match=r"\[posterize\] expected bits in \[0, 8\], but got 9"):
        mod.posterize(u8, 9)
    with pytest.raises(TypeError, match=r"\[equalize\] expected an image of dtype uint8, but got float32"):
        mod.equalize(u8.astype(np.float32))
    with pytest.raises(TypeError, match=r"\[normalize\] expected an image of dtype float32 or float64, but "
                                        r"got uint8"):
        mod.normalize(u8, [0.0] * 3, [1.0] * 3)
    with pytest.raises(ValueError, match=r"\[normalize\] expected mean and std of one value per channel "
                                         r"\(3\), but got 2 and 3"):
        mod.normalize(u8.astype(np.float32), [0.0] * 2, [1.0] * 3)
    with pytest.raises(ValueError, match=r"\[normalize\] std evaluated to zero"):
        mod.normalize(u8.astype(np.float32), [0.0] * 3, [1.0, 0.0, 1.0])
    # the public functions keep their own checks and messages
    with pytest.raises(ValueError, match="brightness_factor is not non-negative."):
        F.adjust_brightness_image(_t(u8), -0.5)
    with pytest.raises(TypeError, match="Input image tensor permitted channel values are 1 or 3, but found"):
        F.adjust_contrast_image(_t(np.zeros((2, 4, 4), np.uint8)), 0.5)
    with pytest.raises(TypeError, match="Input tensor should be a float tensor. Got ember.uint8."):
        F.normalize_image(_t(u8), [0.0], [1.0])


def test_threads_split_the_work_without_changing_the_result():
    mod = loader.load("_transforms")
    a = _image((4, 3, 64, 128), np.uint8)  # enough work for several threads
    for mode, aa in MODES:
        one = mod.resize(a, 45, 77, mode.value, aa, 1)
        np.testing.assert_array_equal(mod.resize(a, 45, 77, mode.value, aa, 4), one)
    f = a.astype(np.float32) / 255
    for name, args in [("adjust_hue", (0.2,)), ("adjust_sharpness", (1.5,)), ("autocontrast", ()),
                       ("normalize", ([0.5] * 3, [0.25] * 3))]:
        np.testing.assert_array_equal(getattr(mod, name)(f, *args, 4), getattr(mod, name)(f, *args, 1))
    np.testing.assert_array_equal(mod.equalize(a, 4), mod.equalize(a, 1))
