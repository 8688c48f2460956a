"""roi_align, roi_pool, ps_roi_align, ps_roi_pool (embervision._C kernels) against plain float64
NumPy references written from torchvision's documented semantics; gradients by gradcheck."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ember
from embervision import ops

# ---- references ---------------------------------------------------------------------------------

def bilinear(img, y, x):
    """RoIAlign's sample: zero a full pixel outside the map, else clamped into it and interpolated."""
    h, w = img.shape
    if y < -1 or y > h or x < -1 or x > w:
        return 0.0
    y, x = min(max(y, 0.0), h - 1.0), min(max(x, 0.0), w - 1.0)
    y0, x0 = int(math.floor(y)), int(math.floor(x))
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    ly, lx = y - y0, x - x0
    return ((1 - ly) * (1 - lx) * img[y0, x0] + (1 - ly) * lx * img[y0, x1]
            + ly * (1 - lx) * img[y1, x0] + ly * lx * img[y1, x1])


def bin_average(img, y1, x1, bin_h, bin_w, i, j, gh, gw):
    total = 0.0
    for iy in range(gh):
        for ix in range(gw):
            total += bilinear(img, y1 + i * bin_h + (iy + 0.5) * bin_h / gh, x1 + j * bin_w + (ix + 0.5) * bin_w / gw)
    return total / max(gh * gw, 1)


def grid(sampling_ratio, side, bins):
    return sampling_ratio if sampling_ratio > 0 else max(int(math.ceil(side / bins)), 0)


def roi_align_ref(x, rois, output_size, scale, sampling_ratio, aligned):
    ph, pw = output_size
    out = np.zeros((len(rois), x.shape[1], ph, pw))
    off = 0.5 if aligned else 0.0
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        x1, y1, x2, y2 = x1 * scale - off, y1 * scale - off, x2 * scale - off, y2 * scale - off
        rw, rh = x2 - x1, y2 - y1
        if not aligned:
            rw, rh = max(rw, 1.0), max(rh, 1.0)
        gh, gw = grid(sampling_ratio, rh, ph), grid(sampling_ratio, rw, pw)
        for c in range(x.shape[1]):
            for i in range(ph):
                for j in range(pw):
                    out[k, c, i, j] = bin_average(x[int(b), c], y1, x1, rh / ph, rw / pw, i, j, gh, gw)
    return out


def round_half_away(v):
    return math.floor(v + 0.5) if v >= 0 else -math.floor(-v + 0.5)


def roi_pool_ref(x, rois, output_size, scale):
    ph, pw = output_size
    n, c, h, w = x.shape
    out = np.zeros((len(rois), c, ph, pw))
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        x1, y1, x2, y2 = (round_half_away(v * scale) for v in (x1, y1, x2, y2))
        bin_h, bin_w = max(y2 - y1 + 1, 1) / ph, max(x2 - x1 + 1, 1) / pw
        for i in range(ph):
            for j in range(pw):
                h0 = min(max(math.floor(i * bin_h) + y1, 0), h)
                h1 = min(max(math.ceil((i + 1) * bin_h) + y1, 0), h)
                w0 = min(max(math.floor(j * bin_w) + x1, 0), w)
                w1 = min(max(math.ceil((j + 1) * bin_w) + x1, 0), w)
                if h1 > h0 and w1 > w0:
                    out[k, :, i, j] = x[int(b), :, h0:h1, w0:w1].max(axis=(1, 2))
    return out


def ps_roi_align_ref(x, rois, output_size, scale, sampling_ratio):
    ph, pw = output_size
    out_c = x.shape[1] // (ph * pw)
    out = np.zeros((len(rois), out_c, ph, pw))
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        x1, y1, x2, y2 = x1 * scale - 0.5, y1 * scale - 0.5, x2 * scale - 0.5, y2 * scale - 0.5
        rw, rh = x2 - x1, y2 - y1
        gh, gw = grid(sampling_ratio, rh, ph), grid(sampling_ratio, rw, pw)
        for c in range(out_c):
            for i in range(ph):
                for j in range(pw):
                    img = x[int(b), (c * ph + i) * pw + j]
                    out[k, c, i, j] = bin_average(img, y1, x1, rh / ph, rw / pw, i, j, gh, gw)
    return out


def ps_roi_pool_ref(x, rois, output_size, scale):
    ph, pw = output_size
    n, ch, h, w = x.shape
    out_c = ch // (ph * pw)
    out = np.zeros((len(rois), out_c, ph, pw))
    for k, (b, x1, y1, x2, y2) in enumerate(rois):
        x1, y1, x2, y2 = (round_half_away(v * scale) for v in (x1, y1, x2, y2))
        bin_h, bin_w = max(y2 - y1, 1) / ph, max(x2 - x1, 1) / pw
        for i in range(ph):
            for j in range(pw):
                h0 = min(max(math.floor(i * bin_h) + y1, 0), h)
                h1 = min(max(math.ceil((i + 1) * bin_h) + y1, 0), h)
                w0 = min(max(math.floor(j * bin_w) + x1, 0), w)
                w1 = min(max(math.ceil((j + 1) * bin_w) + x1, 0), w)
                if h1 > h0 and w1 > w0:
                    for c in range(out_c):
                        out[k, c, i, j] = x[int(b), (c * ph + i) * pw + j, h0:h1, w0:w1].mean()
    return out


# ---- inputs -------------------------------------------------------------------------------------

def make_rois(gen, n_images, k, size, spread=1.5):
    """k boxes over images of side `size`, some reaching past the border, some tiny."""
    xy = gen.uniform(-2, size * spread, (k, 2))
    wh = gen.uniform(0.2, size, (k, 2))
    return np.concatenate([gen.integers(0, n_images, (k, 1)).astype(np.float64), xy, xy + wh], axis=1)


def t(a, dtype=ember.float64):
    return ember.from_numpy(np.ascontiguousarray(a)).to(dtype)


# op name -> (function, reference, extra keyword arguments to try, channel multiple)
CASES = {
    "roi_align": (ops.roi_align, lambda x, r, o, s, **kw: roi_align_ref(x, r, o, s, kw["sampling_ratio"], kw["aligned"]),
                  [dict(sampling_ratio=-1, aligned=False), dict(sampling_ratio=2, aligned=True),
                   dict(sampling_ratio=0, aligned=True), dict(sampling_ratio=1, aligned=False)]),
    "roi_pool": (ops.roi_pool, lambda x, r, o, s, **kw: roi_pool_ref(x, r, o, s), [{}]),
    "ps_roi_align": (ops.ps_roi_align, lambda x, r, o, s, **kw: ps_roi_align_ref(x, r, o, s, kw["sampling_ratio"]),
                     [dict(sampling_ratio=-1), dict(sampling_ratio=2)]),
    "ps_roi_pool": (ops.ps_roi_pool, lambda x, r, o, s, **kw: ps_roi_pool_ref(x, r, o, s), [{}]),
}
PS = ("ps_roi_align", "ps_roi_pool")


def channels_for(name, output_size, per=2):
    return per * output_size[0] * output_size[1] if name in PS else 3


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("output_size,scale", [((2, 2), 1.0), ((3, 2), 0.5), ((1, 1), 0.25)])
@pytest.mark.parametrize("dtype", [ember.float64, ember.float32])
def test_forward_matches_reference(name, output_size, scale, dtype):
    fn, ref, variants = CASES[name]
    gen = np.random.default_rng(sum(map(ord, name)) + output_size[0] * 7)
    x = gen.standard_normal((2, channels_for(name, output_size), 7, 9))
    rois = make_rois(gen, 2, 6, 8 / scale)
    x_cast = t(x, dtype).numpy().astype(np.float64)
    rois_cast = t(rois, dtype).numpy().astype(np.float64)
    tol = 1e-12 if dtype == ember.float64 else 2e-5
    for kw in variants:
        out = fn(t(x, dtype), t(rois, dtype), output_size, scale, **kw)
        assert out.dtype == dtype and tuple(out.shape) == ref(x_cast, rois_cast, output_size, scale, **kw).shape
        np.testing.assert_allclose(out.numpy(), ref(x_cast, rois_cast, output_size, scale, **kw), rtol=tol, atol=tol,
                                   err_msg=f"{name} {kw}")


@pytest.mark.parametrize("name", list(CASES))
def test_box_list_equals_roi_tensor_and_non_contiguous(name):
    fn, ref, variants = CASES[name]
    gen = np.random.default_rng(1)
    x = gen.standard_normal((2, 9, channels_for(name, (2, 2)), 6))  # permuted below: [2, C, 6, 9]
    rois = make_rois(gen, 2, 5, 6)
    rois[:, 0] = [0, 0, 1, 1, 1]
    xt = t(x).permute(0, 2, 3, 1)
    assert not xt.is_contiguous()
    boxes = [t(rois[:2, 1:]), t(rois[2:, 1:])]
    wide = t(np.concatenate([rois, np.zeros((5, 3))], axis=1))[:, :5]  # a non-contiguous [K, 5] view
    assert not wide.is_contiguous()
    expected = ref(x.transpose(0, 2, 3, 1), rois, (2, 2), 1.0, **variants[0])
    np.testing.assert_allclose(fn(xt, boxes, 2, 1.0, **variants[0]).numpy(), expected, atol=1e-12)
    np.testing.assert_allclose(fn(xt, wide, [2, 2], 1.0, **variants[0]).numpy(), expected, atol=1e-12)
    np.testing.assert_allclose(fn(xt, tuple(boxes), (2, 2), **variants[0]).numpy(), expected, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_empty_boxes_and_zero_size(name):
    fn, _, _ = CASES[name]
    c = channels_for(name, (2, 3))
    out_c = c // 6 if name in PS else c
    x = ember.randn(2, c, 5, 5, dtype=ember.float64, requires_grad=True)
    for boxes in (ember.zeros((0, 5), dtype=ember.float64), [], [ember.zeros((0, 4)), ember.zeros((0, 4))]):
        out = fn(x, boxes, (2, 3))
        assert tuple(out.shape) == (0, out_c, 2, 3)
        out.sum().backward()
        assert bool((x.grad == 0).all())
    # an empty feature map (zero height): every bin is empty and pools to zero
    flat = ember.randn(1, c, 0, 4, dtype=ember.float64)
    out = fn(flat, ember.tensor([[0, 0.0, 0.0, 3.0, 3.0]], dtype=ember.float64), (2, 3))
    assert tuple(out.shape) == (1, out_c, 2, 3) and bool((out == 0).all())


@pytest.mark.parametrize("name", list(CASES))
def test_gradcheck(name):
    fn, _, variants = CASES[name]
    gen = np.random.default_rng(3)
    c = channels_for(name, (2, 2), per=1)
    # Box corners off the integer and half-integer grid: roi_pool's argmax and the rounding of the
    # pooling ops stay put under gradcheck's perturbation.
    rois = t(np.array([[0, 0.3, 0.6, 4.2, 3.7], [1, 1.2, -0.7, 3.1, 5.4], [1, 2.3, 2.1, 2.6, 2.4]]))
    x = t(gen.standard_normal((2, c, 5, 6))).requires_grad_()
    for kw in variants:
        assert ember.autograd.gradcheck(lambda inp, kw=kw: fn(inp, rois, (2, 2), 0.9, **kw), (x,))


@pytest.mark.parametrize("name", list(CASES))
def test_threads_do_not_change_results(name):
    # Large enough (64 rois, 4x4 bins, 16 or more output channels) for the kernels to split the work.
    fn, _, variants = CASES[name]
    gen = np.random.default_rng(4)
    x = t(gen.standard_normal((2, channels_for(name, (4, 4), per=16) * (1 if name in PS else 6), 6, 6)))
    x.requires_grad_()
    rois = t(make_rois(gen, 2, 64, 6))
    before = ember.get_num_threads()
    results = []
    try:
        for threads in (1, 3):
            ember.set_num_threads(threads)
            x.grad = None
            out = fn(x, rois, (4, 4), **variants[0])
            (out * ember.arange(out.numel(), dtype=out.dtype).reshape(out.shape)).sum().backward()
            results.append((out.detach().clone(), x.grad.clone()))
    finally:
        ember.set_num_threads(before)
    assert ember.equal(results[0][0], results[1][0]) and ember.allclose(results[0][1], results[1][1])


def test_roi_align_aligned_shifts_by_half_a_pixel():
    # A linear ramp sampled at the box's centre: aligned=True reads 0.5 less along x.
    x = ember.arange(8, dtype=ember.float64).repeat(8).reshape(1, 1, 8, 8)  # x[..., i, j] = j
    box = ember.tensor([[0, 2.0, 2.0, 4.0, 4.0]], dtype=ember.float64)
    assert ops.roi_align(x, box, 1, aligned=False).item() == pytest.approx(3.0)
    assert ops.roi_align(x, box, 1, aligned=True).item() == pytest.approx(2.5)


def test_roi_pool_backward_goes_to_the_argmax():
    x = ember.tensor([[[[1.0, 5.0, 2.0], [0.0, 3.0, 4.0], [7.0, 1.0, 1.0]]]], dtype=ember.float64, requires_grad=True)
    out = ops.roi_pool(x, ember.tensor([[0, 0.0, 0.0, 2.0, 1.0]], dtype=ember.float64), (1, 1))
    assert out.item() == 5.0
    out.sum().backward()
    assert x.grad.tolist() == [[[[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]]


@pytest.mark.parametrize("name,module,args", [
    ("roi_align", "RoIAlign", ((2, 2), 0.5, 2, True)),
    ("roi_pool", "RoIPool", ((2, 2), 0.5)),
    ("ps_roi_align", "PSRoIAlign", ((2, 2), 0.5, 2)),
    ("ps_roi_pool", "PSRoIPool", ((2, 2), 0.5)),
])
def test_modules(name, module, args):
    layer = getattr(ops, module)(*args)
    x = ember.randn(1, 8, 6, 6, dtype=ember.float64)
    rois = ember.tensor([[0, 1.0, 1.0, 9.0, 7.0]], dtype=ember.float64)
    assert ember.equal(layer(x, rois), getattr(ops, name)(x, rois, *args))
    assert repr(layer).startswith(f"{module}(output_size=(2, 2), spatial_scale=0.5")


@pytest.mark.parametrize("name", list(CASES))
def test_bad_inputs(name):
    fn, _, _ = CASES[name]
    x = ember.randn(1, 8, 5, 5)
    good = ember.tensor([[0, 0.0, 0.0, 2.0, 2.0]])
    with pytest.raises(ValueError, match=rf"\[{name}\] expected boxes of shape \[K, 5\], but got \(1, 4\)"):
        fn(x, good[:, 1:], 2)
    with pytest.raises(ValueError, match=rf"\[{name}\] expected every tensor of the boxes list to have shape \[L, 4\]"):
        fn(x, [good], 2)
    with pytest.raises(TypeError, match=rf"\[{name}\] expected boxes to be a Tensor\[K, 5\] or a list"):
        fn(x, np.zeros((1, 5)), 2)
    with pytest.raises(ValueError, match=rf"\[{name}\] expected output_size to be positive, but got \(-1, 2\)"):
        fn(x, good, (-1, 2))
    with pytest.raises(ValueError, match=rf"\[{name}\] expected output_size to be positive, but got 0"):
        fn(x, good, 0)
    with pytest.raises(TypeError, match=rf"\[{name}\] expected output_size to be an int or a pair of ints"):
        fn(x, good, 2.5)
    with pytest.raises(IndexError, match=rf"\[{name}\] expected box batch indices in \[0, 1\), but got 1"):
        fn(x, ember.tensor([[1, 0.0, 0.0, 2.0, 2.0]]), 2)
    with pytest.raises(IndexError, match=rf"\[{name}\] expected box batch indices in \[0, 1\), but got -1"):
        fn(x, ember.tensor([[-1, 0.0, 0.0, 2.0, 2.0]]), 2)
    with pytest.raises(ValueError, match=rf"\[{name}\] expected finite box coordinates, but box 0 has nan"):
        fn(x, ember.tensor([[0, 0.0, float("nan"), 2.0, 2.0]]), 2)
    with pytest.raises(ValueError, match=rf"\[{name}\] expected input of shape \[N, C, H, W\], but got \(8, 5, 5\)"):
        fn(x[0], good, 2)
    with pytest.raises(TypeError, match=rf"\[{name}\] expected input of dtype float32 or float64, but got ember.int64"):
        fn(ember.zeros((1, 8, 5, 5), dtype=ember.int64), good, 2)
    if name in PS:
        with pytest.raises(ValueError, match=rf"\[{name}\] expected input channels to be a multiple of "
                                             rf"output_size\[0\] \* output_size\[1\] = 9, but got 8"):
            fn(x, good, 3)


@pytest.mark.parametrize("name", list(CASES))
def test_huge_boxes(name):
    # Far larger than the map: pooling ops clip to it; adaptive sampling refuses a runaway sample
    # count (a positive sampling_ratio is bounded and runs).
    fn, _, variants = CASES[name]
    x = ember.randn(1, 4, 5, 5, dtype=ember.float64)
    huge = ember.tensor([[0, -1e12, -1e12, 1e12, 1e12]], dtype=ember.float64)
    if name in ("roi_align", "ps_roi_align"):
        with pytest.raises(ValueError, match=rf"\[{name}\] expected at most 16777216 samples per bin with an adaptive "
                                             rf"sampling_ratio, but box 0 needs"):
            fn(x, huge, (2, 2), sampling_ratio=-1)
        out = fn(x, huge, (2, 2), sampling_ratio=2)
    else:
        out = fn(x, huge, (2, 2))
    assert bool(ember.isfinite(out).all())


def test_native_backward_checks_its_arguments():
    from embervision import _native
    C = _native.load("_C")
    rois = np.array([[0, 0.0, 0.0, 2.0, 2.0]])
    with pytest.raises(ValueError, match=r"\[roi_align_backward\] expected grad_output of the output's shape, but "
                                         r"got \[1, 3, 2, 2\]"):
        C.roi_align_backward(np.zeros((1, 3, 2, 2)), rois, 1, 4, 5, 5, 1.0, 2, 2, -1, False, 1)
    with pytest.raises(IndexError, match=r"\[roi_pool_backward\] expected box batch indices in \[0, 1\)"):
        C.roi_pool_backward(np.zeros((1, 4, 2, 2)), np.zeros((1, 4, 2, 2), dtype=np.int64), rois + [[3, 0, 0, 0, 0]],
                            1, 4, 5, 5, 1)
    with pytest.raises(ValueError, match=r"\[roi_pool_backward\] expected argmax entries in \[-1, height \* width\)"):
        C.roi_pool_backward(np.zeros((1, 4, 2, 2)), np.full((1, 4, 2, 2), 25, dtype=np.int64), rois, 1, 4, 5, 5, 1)
    with pytest.raises(ValueError, match=r"\[ps_roi_pool_backward\] expected input channels to be a multiple"):
        C.ps_roi_pool_backward(np.zeros((1, 1, 2, 2)), rois, 1, 6, 5, 5, 1.0, 2, 2, 1)
    with pytest.raises(ValueError, match=r"\[roi_align\] expected rois of the input's dtype float32"):
        C.roi_align_forward(np.zeros((1, 4, 5, 5), dtype=np.float32), rois, 1.0, 2, 2, -1, False, 1)
    with pytest.raises(ValueError, match=r"\[roi_align\] expected input to be C-contiguous"):
        C.roi_align_forward(np.zeros((1, 4, 5, 5)).transpose(0, 1, 3, 2), rois, 1.0, 2, 2, -1, False, 1)
