"""interpolate (every mode), grid_sample, affine_grid, pixel_shuffle/unshuffle and
channel_shuffle against per-pixel float64 references written here (not the separable matrices
the implementation uses), gradients by gradcheck, the Upsample/PixelShuffle/ChannelShuffle
layers and argument errors."""

import itertools

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F

RNG = np.random.default_rng(8)


def _t(a, grad=False):
    t = ember.from_numpy(np.ascontiguousarray(a))
    return t.requires_grad_() if grad else t


def _keys(x, a=-0.75):
    x = abs(x)
    if x <= 1:
        return ((a + 2) * x - (a + 3)) * x * x + 1
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a if x < 2 else 0.0


def _source(dst, size_in, size_out, align, scale=None):
    if align:
        return dst * ((size_in - 1) / (size_out - 1) if size_out > 1 else 0.0)
    ratio = 1 / scale if scale else size_in / size_out
    return (dst + 0.5) * ratio - 0.5


def _ref_bilinear(x, out, align, scale=None):
    h, w = x.shape[-2:]
    y = np.zeros(x.shape[:-2] + tuple(out))
    for i, j in itertools.product(range(out[0]), range(out[1])):
        sy = max(_source(i, h, out[0], align, scale), 0.0)
        sx = max(_source(j, w, out[1], align, scale), 0.0)
        y0, x0 = int(np.floor(sy)), int(np.floor(sx))
        fy, fx = sy - y0, sx - x0
        y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
        y[..., i, j] = ((1 - fy) * ((1 - fx) * x[..., y0, x0] + fx * x[..., y0, x1])
                        + fy * ((1 - fx) * x[..., y1, x0] + fx * x[..., y1, x1]))
    return y


def _ref_bicubic(x, out, align):
    h, w = x.shape[-2:]
    y = np.zeros(x.shape[:-2] + tuple(out))
    for i, j in itertools.product(range(out[0]), range(out[1])):
        sy, sx = _source(i, h, out[0], align), _source(j, w, out[1], align)
        y0, x0 = int(np.floor(sy)), int(np.floor(sx))
        for dy, dx in itertools.product(range(-1, 3), range(-1, 3)):
            weight = _keys(sy - y0 - dy) * _keys(sx - x0 - dx)
            y[..., i, j] += weight * x[..., min(max(y0 + dy, 0), h - 1), min(max(x0 + dx, 0), w - 1)]
    return y


def _ref_nearest(x, out, exact):
    rows = [min(int(np.floor((i + (0.5 if exact else 0)) * x.shape[-2] / out[0])), x.shape[-2] - 1)
            for i in range(out[0])]
    cols = [min(int(np.floor((j + (0.5 if exact else 0)) * x.shape[-1] / out[1])), x.shape[-1] - 1)
            for j in range(out[1])]
    return x[..., rows, :][..., cols]


def test_interpolate_2d_modes_match_per_pixel_references():
    x = RNG.normal(size=(2, 3, 5, 7))
    for out in [(9, 4), (5, 7), (2, 13)]:
        for align in (False, True):
            np.testing.assert_allclose(F.interpolate(_t(x), out, mode="bilinear", align_corners=align).numpy(),
                                       _ref_bilinear(x, out, align), rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(F.interpolate(_t(x), out, mode="bicubic", align_corners=align).numpy(),
                                       _ref_bicubic(x, out, align), rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(F.interpolate(_t(x), out).numpy(), _ref_nearest(x, out, False))
        np.testing.assert_array_equal(F.interpolate(_t(x), out, mode="nearest-exact").numpy(),
                                      _ref_nearest(x, out, True))
    area = F.interpolate(_t(x), (2, 3), mode="area").numpy()
    np.testing.assert_allclose(area, F.adaptive_avg_pool2d(_t(x), (2, 3)).numpy(), rtol=1e-12)
    # scale_factor: the output size is floor(in * s) and the coordinates use 1 / s
    np.testing.assert_allclose(F.interpolate(_t(x), scale_factor=1.7, mode="bilinear").numpy(),
                               _ref_bilinear(x, (8, 11), False, scale=1.7), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(
        F.interpolate(_t(x), scale_factor=1.7, mode="bilinear", recompute_scale_factor=True).numpy(),
        _ref_bilinear(x, (8, 11), False), rtol=1e-12, atol=1e-12)


def test_interpolate_1d_3d_integer_and_noncontiguous_inputs():
    x = RNG.normal(size=(2, 3, 6))
    got = F.interpolate(_t(x), 10, mode="linear").numpy()
    np.testing.assert_allclose(got, _ref_bilinear(x[:, :, None, :], (1, 10), False)[:, :, 0], rtol=1e-12, atol=1e-12)
    v = RNG.normal(size=(1, 2, 3, 4, 5))
    tri = F.interpolate(_t(v), (5, 3, 7), mode="trilinear", align_corners=True).numpy()
    # trilinear is linear along each dim: resample (H, W) per depth slice, then along D
    hw = np.stack([_ref_bilinear(v[:, :, d], (3, 7), True) for d in range(3)], axis=2)
    want = np.moveaxis(_ref_bilinear(np.moveaxis(hw, 2, -1)[..., None, :], (1, 5), True)[..., 0, :], -1, 2)
    np.testing.assert_allclose(tri, want, rtol=1e-12, atol=1e-12)
    image = np.arange(12, dtype=np.uint8).reshape(1, 1, 3, 4)
    up = F.interpolate(_t(image), scale_factor=2)
    assert up.dtype == ember.uint8
    np.testing.assert_array_equal(up.numpy(), image.repeat(2, 2).repeat(2, 3))
    view = _t(np.ascontiguousarray(np.swapaxes(x, 1, 2))).transpose(1, 2)
    np.testing.assert_allclose(F.interpolate(view, 4, mode="linear", align_corners=True).numpy(),
                               _ref_bilinear(x[:, :, None, :], (1, 4), True)[:, :, 0], rtol=1e-12, atol=1e-12)
    assert tuple(F.interpolate(_t(np.zeros((0, 3, 4, 4))), 2, mode="bilinear").shape) == (0, 3, 2, 2)


def test_interpolate_antialias():
    x = RNG.normal(size=(1, 2, 8, 8))
    # upsampling: antialiased bilinear is plain bilinear
    np.testing.assert_allclose(F.interpolate(_t(x), (11, 13), mode="bilinear", antialias=True).numpy(),
                               _ref_bilinear(x, (11, 13), False), rtol=1e-12, atol=1e-12)
    # halving with the stretched triangle: each output averages a 4x4 block with weights (1, 3, 3, 1) / 8
    down = F.interpolate(_t(x), (4, 4), mode="bilinear", antialias=True).numpy()
    taps = np.array([1, 3, 3, 1]) / 8
    want = np.zeros((1, 2, 4, 4))
    padded = x
    for i, j in itertools.product(range(4), range(4)):
        rows = list(range(2 * i - 1, 2 * i + 3))
        cols = list(range(2 * j - 1, 2 * j + 3))
        wr = np.array([t for r, t in zip(rows, taps, strict=True) if 0 <= r < 8])
        wc = np.array([t for c, t in zip(cols, taps, strict=True) if 0 <= c < 8])
        block = padded[..., [r for r in rows if 0 <= r < 8], :][..., [c for c in cols if 0 <= c < 8]]
        want[..., i, j] = np.einsum("ncij,i,j->nc", block, wr / wr.sum(), wc / wc.sum())
    np.testing.assert_allclose(down, want, rtol=1e-12, atol=1e-12)
    flat = F.interpolate(_t(np.full((1, 1, 9, 9), 2.5)), (4, 3), mode="bicubic", antialias=True).numpy()
    np.testing.assert_allclose(flat, 2.5, rtol=1e-12)  # the weights of every output sum to 1
    assert gradcheck(lambda a: F.interpolate(a, (2, 3), mode="bicubic", antialias=True),
                     (_t(RNG.normal(size=(1, 1, 5, 6)), True),))


def test_interpolate_gradients_and_errors():
    t = _t(RNG.normal(size=(1, 2, 3, 4)), True)
    for mode in ("nearest", "bilinear", "bicubic", "area", "nearest-exact"):
        assert gradcheck(lambda a, m=mode: F.interpolate(a, (5, 3), mode=m), (t,))
    x = _t(np.zeros((1, 1, 4, 4)))
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(x, 2, 2.0)
    with pytest.raises(ValueError, match="either size or scale_factor should be defined"):
        F.interpolate(x)
    with pytest.raises(ValueError, match="align_corners option can only be set with the interpolating modes"):
        F.interpolate(x, 2, align_corners=True)
    with pytest.raises(NotImplementedError, match="Got 4D input, but linear mode needs 3D input"):
        F.interpolate(x, 2, mode="linear")
    with pytest.raises(ValueError, match="Anti-alias option is restricted to bilinear and bicubic"):
        F.interpolate(x, 2, mode="nearest", antialias=True)
    with pytest.raises(NotImplementedError, match="got cubic"):
        F.interpolate(x, 2, mode="cubic")


def _ref_grid_sample(x, grid, mode, padding_mode, align):
    n, c, h, w = x.shape
    _, ho, wo, _ = grid.shape
    out = np.zeros((n, c, ho, wo))

    def unnorm(v, size):
        return (v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2

    def reflect(v, lo2, hi2):
        if lo2 == hi2:
            return 0.0
        lo, span = lo2 / 2, (hi2 - lo2) / 2
        d = abs(v - lo)
        flips, extra = np.floor(d / span), d % span
        return extra + lo if flips % 2 == 0 else span - extra + lo

    def pad(v, size):
        if padding_mode == "border":
            return min(max(v, 0), size - 1)
        if padding_mode == "reflection":
            v = reflect(v, 0, 2 * (size - 1)) if align else reflect(v, -1, 2 * size - 1)
            return min(max(v, 0), size - 1)
        return v

    def read(b, yy, xx):
        if 0 <= yy < h and 0 <= xx < w:
            return x[b, :, yy, xx]
        return np.zeros(c)

    for b, i, j in itertools.product(range(n), range(ho), range(wo)):
        sx, sy = unnorm(grid[b, i, j, 0], w), unnorm(grid[b, i, j, 1], h)
        if mode == "bicubic":
            x0, y0 = int(np.floor(sx)), int(np.floor(sy))
            for dy, dx in itertools.product(range(-1, 3), range(-1, 3)):
                yy, xx = pad(y0 + dy, h), pad(x0 + dx, w)
                out[b, :, i, j] += _keys(sy - y0 - dy) * _keys(sx - x0 - dx) * read(b, int(yy), int(xx))
            continue
        sx, sy = pad(sx, w), pad(sy, h)
        if mode == "nearest":
            out[b, :, i, j] = read(b, int(np.round(sy)), int(np.round(sx)))
            continue
        x0, y0 = int(np.floor(sx)), int(np.floor(sy))
        fx, fy = sx - x0, sy - y0
        out[b, :, i, j] = ((1 - fy) * (1 - fx) * read(b, y0, x0) + (1 - fy) * fx * read(b, y0, x0 + 1)
                           + fy * (1 - fx) * read(b, y0 + 1, x0) + fy * fx * read(b, y0 + 1, x0 + 1))
    return out


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_matches_the_reference(mode, padding_mode, align):
    x = RNG.normal(size=(2, 3, 4, 5))
    grid = RNG.uniform(-1.6, 1.6, size=(2, 3, 6, 2))
    got = F.grid_sample(_t(x), _t(grid), mode=mode, padding_mode=padding_mode, align_corners=align).numpy()
    np.testing.assert_allclose(got, _ref_grid_sample(x, grid, mode, padding_mode, align), rtol=1e-11, atol=1e-12)


def test_grid_sample_gradients_3d_and_errors():
    x = _t(RNG.normal(size=(1, 2, 3, 4)), True)
    grid = _t(RNG.uniform(-0.9, 0.9, size=(1, 2, 3, 2)), True)
    for mode in ("bilinear", "bicubic"):
        assert gradcheck(lambda a, g, m=mode: F.grid_sample(a, g, mode=m, padding_mode="border", align_corners=True),
                         (x, grid))
    v = RNG.normal(size=(1, 2, 3, 4, 5))
    theta = np.array([[[1.0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]]])
    same = F.grid_sample(_t(v), F.affine_grid(_t(theta), [1, 2, 3, 4, 5], align_corners=False), align_corners=False)
    np.testing.assert_allclose(same.numpy(), v, rtol=1e-12, atol=1e-12)  # the identity map samples every voxel centre
    with pytest.raises(ValueError, match="expected mode to be 'bilinear', 'nearest' or 'bicubic'"):
        F.grid_sample(x, grid, mode="area")
    with pytest.raises(ValueError, match="expected padding_mode to be 'zeros', 'border', or 'reflection'"):
        F.grid_sample(x, grid, padding_mode="wrap")
    with pytest.raises(RuntimeError, match="expected 4D or 5D input and grid with same number of dimensions"):
        F.grid_sample(x, _t(np.zeros((1, 2, 2))))
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D input"):
        F.grid_sample(_t(v), _t(np.zeros((1, 1, 1, 1, 3))), mode="bicubic")


def test_affine_grid():
    theta = RNG.normal(size=(2, 2, 3))
    for align in (False, True):
        grid = F.affine_grid(_t(theta), [2, 1, 3, 4], align_corners=align).numpy()
        xs = np.linspace(-1, 1, 4) * (1 if align else 3 / 4)
        ys = np.linspace(-1, 1, 3) * (1 if align else 2 / 3)
        for b, i, j in itertools.product(range(2), range(3), range(4)):
            np.testing.assert_allclose(grid[b, i, j], theta[b] @ [xs[j], ys[i], 1.0], rtol=1e-12, atol=1e-15)
    assert gradcheck(lambda t: F.affine_grid(t, [2, 1, 2, 3], align_corners=False), (_t(theta, True),))
    with pytest.raises(ValueError, match="Expected a batch of 2D affine matrices of shape Nx2x3"):
        F.affine_grid(_t(np.zeros((2, 3, 3))), [2, 1, 3, 4])
    with pytest.raises(ValueError, match="Expected theta to have floating point type"):
        F.affine_grid(ember.zeros([1, 2, 3], dtype=ember.int64), [1, 1, 2, 2])


def test_pixel_and_channel_shuffles():
    x = RNG.normal(size=(2, 8, 3, 4))
    up = F.pixel_shuffle(_t(x), 2).numpy()
    for c, i, j in itertools.product(range(2), range(6), range(8)):
        assert up[0, c, i, j] == x[0, c * 4 + (i % 2) * 2 + (j % 2), i // 2, j // 2]
    np.testing.assert_array_equal(F.pixel_unshuffle(_t(up), 2).numpy(), x)
    np.testing.assert_array_equal(F.pixel_shuffle(_t(x[0]), 2).numpy(), up[0])  # no batch dim
    shuffled = F.channel_shuffle(_t(x), 2).numpy()
    np.testing.assert_array_equal(shuffled, x[:, [0, 4, 1, 5, 2, 6, 3, 7]])
    assert gradcheck(lambda a: F.pixel_shuffle(a, 2), (_t(x[:1, :4, :2, :2], True),))
    assert gradcheck(lambda a: F.channel_shuffle(a, 2), (_t(x[:1, :4, :2, :2], True),))
    with pytest.raises(RuntimeError, match="input.size\\(-3\\)=8 is not divisible by 9"):
        F.pixel_shuffle(_t(x), 3)
    with pytest.raises(RuntimeError, match="expects width to be divisible by downscale_factor, but input.size\\(-1\\)"):
        F.pixel_unshuffle(_t(x), 3)
    with pytest.raises(RuntimeError, match="Number of channels must be divisible by groups. Got 8 channels and 3"):
        F.channel_shuffle(_t(x), 3)


def test_resampling_layers():
    x = _t(RNG.normal(size=(1, 4, 3, 3)))
    np.testing.assert_array_equal(nn.Upsample(scale_factor=2)(x).numpy(), F.interpolate(x, scale_factor=2).numpy())
    np.testing.assert_array_equal(nn.UpsamplingBilinear2d(size=5)(x).numpy(),
                                  F.interpolate(x, 5, mode="bilinear", align_corners=True).numpy())
    np.testing.assert_array_equal(nn.UpsamplingNearest2d(scale_factor=3)(x).numpy(),
                                  F.interpolate(x, scale_factor=3).numpy())
    np.testing.assert_array_equal(nn.PixelUnshuffle(3)(nn.PixelShuffle(2)(x)).numpy(),
                                  F.pixel_unshuffle(F.pixel_shuffle(x, 2), 3).numpy())
    np.testing.assert_array_equal(nn.ChannelShuffle(2)(x).numpy(), F.channel_shuffle(x, 2).numpy())
    assert [repr(m) for m in (nn.Upsample(scale_factor=2.0, mode="bilinear"), nn.Upsample(size=(4, 5)),
                              nn.PixelShuffle(2), nn.PixelUnshuffle(3), nn.ChannelShuffle(2))] == [
        "Upsample(scale_factor=2.0, mode='bilinear')", "Upsample(size=(4, 5), mode='nearest')",
        "PixelShuffle(upscale_factor=2)", "PixelUnshuffle(downscale_factor=3)", "ChannelShuffle(groups=2)"]
