"""RAFT: parameter counts and state-dict names equal torchvision's, the correlation pyramid, the
pixel-coordinate grid_sample and the convex upsampling against float64 NumPy references, forward
shapes, a training step and the input errors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from embervision import models
from embervision.models import optical_flow
from embervision.models.optical_flow._utils import grid_sample, make_coords_grid, upsample_flow
from embervision.models.optical_flow.raft import CorrBlock
from embervision.transforms._presets import OpticalFlow

RNG = np.random.default_rng(0)

SPECS = {
    "raft_large": (5257536, {
        "feature_encoder.convnormrelu.0.weight": (64, 3, 7, 7),
        "feature_encoder.layer1.0.convnormrelu1.0.weight": (64, 64, 3, 3),
        "feature_encoder.layer2.0.downsample.0.weight": (96, 64, 1, 1), "feature_encoder.conv.weight": (256, 128, 1, 1),
        "context_encoder.convnormrelu.1.running_mean": (64,), "context_encoder.layer3.1.convnormrelu2.1.weight": (128,),
        "update_block.motion_encoder.convcorr1.0.weight": (256, 324, 1, 1),
        "update_block.motion_encoder.convflow1.0.weight": (128, 2, 7, 7),
        "update_block.motion_encoder.conv.0.weight": (126, 256, 3, 3),
        "update_block.recurrent_block.convgru1.convz.weight": (128, 384, 1, 5),
        "update_block.recurrent_block.convgru2.convq.weight": (128, 384, 5, 1),
        "update_block.flow_head.conv2.weight": (2, 256, 3, 3), "mask_predictor.convrelu.0.weight": (256, 128, 3, 3),
        "mask_predictor.conv.weight": (576, 256, 1, 1)}),
    "raft_small": (990162, {
        "feature_encoder.layer1.0.convnormrelu1.0.weight": (8, 32, 1, 1),
        "feature_encoder.conv.weight": (128, 96, 1, 1), "context_encoder.conv.weight": (160, 96, 1, 1),
        "update_block.motion_encoder.convcorr1.0.weight": (96, 196, 1, 1),
        "update_block.motion_encoder.conv.0.weight": (80, 128, 3, 3),
        "update_block.recurrent_block.convgru1.convr.weight": (96, 242, 3, 3)}),
}


def test_registry_and_weights():
    assert models.list_models(module=optical_flow) == ["raft_large", "raft_small"]
    w = models.get_weight("Raft_Large_Weights.C_T_SKHT_V2")
    assert w is optical_flow.Raft_Large_Weights.DEFAULT
    assert w.url == "https://download.pytorch.org/models/raft_large_C_T_SKHT_V2-ff5fadd5.pth"
    assert w.meta["_metrics"] == {"Sintel-Test-Cleanpass": {"epe": 1.819}, "Sintel-Test-Finalpass": {"epe": 3.067}}
    assert optical_flow.Raft_Small_Weights.DEFAULT.meta["_metrics"]["Kitti-Train"]["fl_all"] == 25.2369
    assert isinstance(w.transforms(), OpticalFlow)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_num_params_and_keys(name, cheap_init):
    num_params, keys = SPECS[name]
    model = models.get_model(name)
    assert sum(p.numel() for p in model.parameters()) == num_params
    assert models.get_model_weights(name).DEFAULT.meta["num_params"] == num_params
    state = model.state_dict()
    for key, shape in keys.items():
        assert tuple(state[key].shape) == shape, key


def np_bilinear(img, x, y):
    """Zero-padded bilinear sample of img [C, H, W] at pixel coordinates (x, y)."""
    c, h, w = img.shape
    x0, y0 = int(np.floor(x)), int(np.floor(y))
    out = np.zeros(c)
    for yy in (y0, y0 + 1):
        for xx in (x0, x0 + 1):
            if 0 <= xx < w and 0 <= yy < h:
                out += img[:, yy, xx] * (1 - abs(x - xx)) * (1 - abs(y - yy))
    return out


def test_grid_sample_pixel_coordinates():
    img = RNG.standard_normal((2, 3, 5, 7))
    grid = np.stack([RNG.random((2, 4, 3)) * 8 - 1, RNG.random((2, 4, 3)) * 6 - 1], axis=-1)
    got = grid_sample(ember.from_numpy(img), ember.from_numpy(grid), align_corners=True).numpy()
    ref = np.zeros((2, 3, 4, 3))
    for n in range(2):
        for i in range(4):
            for j in range(3):
                ref[n, :, i, j] = np_bilinear(img[n], *grid[n, i, j])
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)


def test_make_coords_grid():
    coords = make_coords_grid(2, 3, 4).numpy()
    assert coords.shape == (2, 2, 3, 4) and coords.dtype == np.float32
    np.testing.assert_array_equal(coords[1, 0], np.tile(np.arange(4), (3, 1)))
    np.testing.assert_array_equal(coords[0, 1], np.tile(np.arange(3)[:, None], (1, 4)))


def test_corr_block_matches_numpy():
    n, c, h, w = 1, 5, 8, 8
    f1, f2 = RNG.standard_normal((n, c, h, w)), RNG.standard_normal((n, c, h, w))
    block = CorrBlock(num_levels=2, radius=1)
    block.build_pyramid(ember.from_numpy(f1), ember.from_numpy(f2))
    coords = make_coords_grid(n, h, w).double() + ember.from_numpy(RNG.standard_normal((n, 2, h, w)))
    got = block.index_pyramid(coords).numpy()
    assert got.shape == (n, block.out_channels, h, w) == (1, 18, 8, 8)
    corr = np.einsum("cij,ckl->ijkl", f1[0], f2[0]) / np.sqrt(c)  # [h, w, h, w]
    pooled = corr.reshape(h, w, h // 2, 2, w // 2, 2).mean(axis=(3, 5))
    cs = coords.numpy()[0]
    for i in range(h):
        for j in range(w):
            feats = []
            for level, vol in enumerate((corr[i, j][None], pooled[i, j][None])):
                cx, cy = cs[0, i, j] / 2 ** level, cs[1, i, j] / 2 ** level
                # torchvision's channel order: the first neighbourhood index moves x.
                for a in (-1, 0, 1):
                    for b in (-1, 0, 1):
                        feats.append(np_bilinear(vol, cx + a, cy + b)[0])
            np.testing.assert_allclose(got[0, :, i, j], feats, rtol=1e-9, atol=1e-9)


def test_corr_block_errors():
    block = CorrBlock(num_levels=4, radius=4)
    with pytest.raises(ValueError, match="Input feature maps should have the same shape"):
        block.build_pyramid(ember.zeros(1, 2, 16, 16), ember.zeros(1, 2, 16, 24))
    with pytest.raises(ValueError, match="H and W of feature maps should be at least 16; got: \\(8, 16\\)"):
        block.build_pyramid(ember.zeros(1, 2, 8, 16), ember.zeros(1, 2, 8, 16))


def test_upsample_flow_convex_matches_numpy():
    n, h, w, f = 1, 3, 4, 2
    flow = RNG.standard_normal((n, 2, h, w))
    mask = RNG.standard_normal((n, 9 * f * f, h, w))
    got = upsample_flow(ember.from_numpy(flow), ember.from_numpy(mask), factor=f).numpy()
    padded = np.pad(f * flow, ((0, 0), (0, 0), (1, 1), (1, 1)))
    m = mask.reshape(n, 9, f, f, h, w)
    m = np.exp(m - m.max(1, keepdims=True))
    m /= m.sum(1, keepdims=True)
    ref = np.zeros((n, 2, h * f, w * f))
    for i in range(h):
        for j in range(w):
            neigh = padded[0, :, i:i + 3, j:j + 3].reshape(2, 9)
            for a in range(f):
                for b in range(f):
                    ref[0, :, i * f + a, j * f + b] = neigh @ m[0, :, a, b, i, j]
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-12)
    # Without a mask: bilinear (align_corners) upsampling of factor * flow; a constant flow stays so.
    const = upsample_flow(ember.full((1, 2, 3, 3), 0.5), factor=4)
    np.testing.assert_allclose(const.numpy(), 2.0)


def test_raft_forward_and_train(cheap_init):
    ember.manual_seed(0)
    model = optical_flow.raft_small()
    img1, img2 = ember.rand(1, 3, 128, 136), ember.rand(1, 3, 128, 136)
    model.eval()
    with ember.no_grad():
        flows = model(img1, img2, num_flow_updates=3)
    assert len(flows) == 3 and all(tuple(f.shape) == (1, 2, 128, 136) for f in flows)
    assert all(bool(ember.isfinite(f).all()) for f in flows)
    model.train()
    flows = model(img1, img2, num_flow_updates=2)
    loss = sum((f - 1.0).abs().mean() for f in flows)
    loss.backward()
    first = model.feature_encoder.convnormrelu[0].weight
    assert first.grad is not None and float(first.grad.abs().sum()) > 0
    assert float(model.update_block.flow_head.conv2.weight.grad.abs().sum()) > 0


def test_raft_large_forward(cheap_init):
    model = optical_flow.raft_large().eval()
    with ember.no_grad():
        flows = model(ember.rand(1, 3, 128, 128), ember.rand(1, 3, 128, 128), num_flow_updates=1)
    assert len(flows) == 1 and tuple(flows[0].shape) == (1, 2, 128, 128) and bool(ember.isfinite(flows[0]).all())


def test_raft_errors(cheap_init):
    model = optical_flow.raft_small().eval()
    with pytest.raises(ValueError, match="input images should have the same shape"):
        model(ember.rand(1, 3, 128, 128), ember.rand(1, 3, 128, 136))
    with pytest.raises(ValueError, match="input image H and W should be divisible by 8, instead got 128 \\(h\\) and "
                                         "130 \\(w\\)"):
        model(ember.rand(1, 3, 128, 130), ember.rand(1, 3, 128, 130))
    with pytest.raises(ValueError, match="Remember that input images to the model are downsampled by 8"):
        model(ember.rand(1, 3, 64, 64), ember.rand(1, 3, 64, 64))


def test_optical_flow_preset():
    img = np.arange(48).reshape(3, 4, 4).astype(np.uint8)
    a, b = OpticalFlow()(ember.from_numpy(img), ember.rand(3, 4, 4))
    np.testing.assert_allclose(a.numpy(), img / 255.0 * 2 - 1, rtol=1e-6, atol=1e-6)
    assert float(b.min()) >= -1 and float(b.max()) <= 1


def test_upsample_flow_gradcheck():
    flow = ember.from_numpy(RNG.standard_normal((1, 2, 2, 3))).requires_grad_()
    mask = ember.from_numpy(RNG.standard_normal((1, 9 * 4, 2, 3))).requires_grad_()
    assert ember.autograd.gradcheck(lambda f, m: upsample_flow(f, m, factor=2), (flow, mask))
    assert ember.autograd.gradcheck(lambda f: upsample_flow(f, factor=2), (flow,))
