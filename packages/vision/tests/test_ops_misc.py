"""embervision.ops.misc blocks and stochastic depth against float64 NumPy references and gradcheck."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck
from embervision.ops.misc import (
    MLP,
    Conv2dNormActivation,
    Conv3dNormActivation,
    FrozenBatchNorm2d,
    Permute,
    SqueezeExcitation,
)
from embervision.ops.stochastic_depth import StochasticDepth, stochastic_depth


def _t(a, requires_grad=False):
    return ember.tensor(np.asarray(a), requires_grad=requires_grad)


# ---------------------------------------------------------------------------------------------
# FrozenBatchNorm2d


def _frozen(num_features, rng, dtype=ember.float64):
    bn = FrozenBatchNorm2d(num_features, eps=1e-3)
    for name in ("weight", "bias", "running_mean"):
        getattr(bn, name).copy_(_t(rng.standard_normal(num_features)))
    bn.running_var.copy_(_t(rng.random(num_features) + 0.5))
    return bn.to(dtype)


def _frozen_reference(bn, x):
    w, b, m, v = (getattr(bn, n).numpy()[None, :, None, None] for n in ("weight", "bias", "running_mean",
                                                                        "running_var"))
    return (x - m) / np.sqrt(v + bn.eps) * w + b


def test_frozen_batch_norm_matches_reference_on_contiguous_strided_and_empty_input():
    rng = np.random.default_rng(0)
    bn = _frozen(4, rng)
    x = rng.standard_normal((2, 4, 5, 6))
    np.testing.assert_allclose(bn(_t(x)).numpy(), _frozen_reference(bn, x), rtol=1e-12, atol=1e-12)
    # A non-contiguous NHWC view.
    nhwc = rng.standard_normal((2, 5, 6, 4))
    view = _t(nhwc).permute(0, 3, 1, 2)
    np.testing.assert_allclose(bn(view).numpy(), _frozen_reference(bn, nhwc.transpose(0, 3, 1, 2)), rtol=1e-12)
    assert tuple(bn(ember.zeros(0, 4, 3, 3, dtype=ember.float64)).shape) == (0, 4, 3, 3)


def test_frozen_batch_norm_equals_batch_norm_in_eval_and_loads_its_checkpoint():
    rng = np.random.default_rng(1)
    ref = nn.BatchNorm2d(3)
    ref.running_mean.copy_(_t(rng.standard_normal(3)).float())
    ref.running_var.copy_(_t(rng.random(3) + 0.5).float())
    with ember.no_grad():
        ref.weight.copy_(_t(rng.standard_normal(3)).float())
    ref.eval()
    frozen = FrozenBatchNorm2d(3)
    frozen.load_state_dict(ref.state_dict())  # its num_batches_tracked is dropped, strict load passes
    assert set(frozen.state_dict()) == {"weight", "bias", "running_mean", "running_var"}
    assert list(frozen.parameters()) == []
    x = ember.randn(2, 3, 4, 4)
    np.testing.assert_allclose(frozen(x).numpy(), ref(x).detach().numpy(), rtol=1e-5, atol=1e-6)
    assert repr(frozen) == "FrozenBatchNorm2d(3, eps=1e-05)"


def test_frozen_batch_norm_gradcheck():
    bn = _frozen(3, np.random.default_rng(2))
    x = ember.randn(2, 3, 3, 2, dtype=ember.float64, requires_grad=True)
    assert gradcheck(bn, (x,))


# ---------------------------------------------------------------------------------------------
# Conv2dNormActivation / Conv3dNormActivation


def test_conv_norm_activation_layers_padding_and_bias():
    block = Conv2dNormActivation(3, 8, kernel_size=5, stride=2, dilation=2)
    assert [type(m) for m in block] == [nn.Conv2d, nn.BatchNorm2d, nn.ReLU]
    conv = block[0]
    assert conv.padding == (4, 4) and conv.dilation == (2, 2) and conv.stride == (2, 2) and conv.bias is None
    assert block.out_channels == 8 and block[2].inplace is True
    assert set(block.state_dict()) == {"0.weight", "1.weight", "1.bias", "1.running_mean", "1.running_var",
                                       "1.num_batches_tracked"}
    # A rectangular kernel pads each dim for itself; no norm → the conv gets the bias.
    plain = Conv2dNormActivation(3, 4, kernel_size=(3, 5), norm_layer=None, activation_layer=None)
    assert len(plain) == 1 and plain[0].padding == (1, 2) and plain[0].bias is not None
    assert tuple(plain(ember.rand(1, 3, 7, 9)).shape) == (1, 4, 7, 9)
    # Explicit bias and padding win; inplace=None passes no inplace argument (GELU takes none).
    gelu = Conv2dNormActivation(3, 4, padding=0, bias=True, activation_layer=nn.GELU, inplace=None)
    assert gelu[0].padding == (0, 0) and gelu[0].bias is not None and isinstance(gelu[2], nn.GELU)
    # Note [in-place activations]: only ReLU is built in place.
    assert Conv2dNormActivation(3, 4, activation_layer=nn.Hardswish)[2].inplace is False


def test_conv_norm_activation_forward_matches_its_parts():
    block = Conv2dNormActivation(2, 3, kernel_size=3, groups=1, activation_layer=nn.ReLU6).eval()
    x = ember.randn(2, 2, 6, 6)
    with ember.no_grad():
        expected = ember.clamp(block[1](block[0](x)), 0, 6)
        assert ember.equal(block(x), expected)


def test_conv3d_norm_activation():
    block = Conv3dNormActivation(2, 4, kernel_size=3, stride=(1, 2, 2))
    assert [type(m) for m in block] == [nn.Conv3d, nn.BatchNorm3d, nn.ReLU]
    assert block[0].padding == (1, 1, 1)
    out = block(ember.randn(2, 2, 4, 6, 6))
    assert tuple(out.shape) == (2, 4, 4, 3, 3) and float(out.min()) >= 0


# ---------------------------------------------------------------------------------------------
# SqueezeExcitation, MLP, Permute


def test_squeeze_excitation_matches_reference_and_gradcheck():
    ember.manual_seed(0)
    se = SqueezeExcitation(4, 2).double()
    x = np.random.default_rng(3).standard_normal((2, 4, 3, 5))
    w1, b1 = se.fc1.weight.detach().numpy()[:, :, 0, 0], se.fc1.bias.detach().numpy()
    w2, b2 = se.fc2.weight.detach().numpy()[:, :, 0, 0], se.fc2.bias.detach().numpy()
    pooled = x.mean(axis=(2, 3))
    scale = 1 / (1 + np.exp(-(np.maximum(pooled @ w1.T + b1, 0) @ w2.T + b2)))
    np.testing.assert_allclose(se(_t(x)).detach().numpy(), x * scale[:, :, None, None], rtol=1e-12, atol=1e-12)
    assert set(se.state_dict()) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}
    assert gradcheck(se, (_t(x, requires_grad=True),))
    hard = SqueezeExcitation(4, 8, activation=nn.SiLU, scale_activation=nn.Hardsigmoid)
    assert isinstance(hard.activation, nn.SiLU) and isinstance(hard.scale_activation, nn.Hardsigmoid)


def test_mlp_layers_reference_and_gradcheck():
    mlp = MLP(5, [7, 3], norm_layer=nn.LayerNorm, dropout=0.25)
    assert [type(m) for m in mlp] == [nn.Linear, nn.LayerNorm, nn.ReLU, nn.Dropout, nn.Linear, nn.Dropout]
    assert [m.p for m in mlp if isinstance(m, nn.Dropout)] == [0.25, 0.25]
    assert set(mlp.state_dict()) == {"0.weight", "0.bias", "1.weight", "1.bias", "4.weight", "4.bias"}
    ember.manual_seed(1)
    plain = MLP(4, [6, 2], activation_layer=nn.GELU, bias=False).double().eval()
    assert plain[0].bias is None
    x = np.random.default_rng(4).standard_normal((3, 4))
    w1, w2 = plain[0].weight.detach().numpy(), plain[3].weight.detach().numpy()
    from math import erf
    h = x @ w1.T
    h = h * 0.5 * (1 + np.vectorize(erf)(h / np.sqrt(2)))
    np.testing.assert_allclose(plain(_t(x)).detach().numpy(), h @ w2.T, rtol=1e-10, atol=1e-12)
    assert gradcheck(plain, (_t(x, requires_grad=True),))
    with pytest.raises(ValueError, match=r"hidden_channels must name at least one layer width, but got \[\]"):
        MLP(4, [])


def test_permute():
    x = np.random.default_rng(5).standard_normal((2, 3, 4, 5))
    p = Permute([0, 2, 3, 1])
    np.testing.assert_array_equal(p(_t(x)).numpy(), x.transpose(0, 2, 3, 1))
    assert gradcheck(p, (_t(x, requires_grad=True),))
    with pytest.raises(RuntimeError):
        Permute([0, 1])(_t(x))


# ---------------------------------------------------------------------------------------------
# stochastic_depth


def test_stochastic_depth_identity_cases():
    x = ember.randn(4, 3, 2, 2)
    assert stochastic_depth(x, 0.5, "row", training=False) is x
    assert stochastic_depth(x, 0.0, "batch") is x
    assert float(stochastic_depth(x, 1.0, "row").abs().sum()) == 0.0
    empty = ember.zeros(0, 3)
    assert tuple(stochastic_depth(empty, 0.5, "row").shape) == (0, 3)


def test_stochastic_depth_row_drops_whole_samples_and_rescales():
    ember.manual_seed(0)
    x = ember.ones(4000, 3, 2)
    out = stochastic_depth(x, 0.25, "row").numpy()
    per_sample = out.reshape(4000, -1)
    # Each sample is dropped whole or kept scaled by 1 / (1 - p).
    assert np.all((per_sample == 0).all(1) | np.isclose(per_sample, 1 / 0.75).all(1))
    kept = (per_sample != 0).all(1).mean()
    assert abs(kept - 0.75) < 0.03  # ~5 standard deviations
    assert abs(out.mean() - 1.0) < 0.04


def test_stochastic_depth_batch_mode_draws_once():
    ember.manual_seed(1)
    seen = set()
    for _ in range(40):
        out = stochastic_depth(ember.ones(3, 2), 0.5, "batch").numpy()
        assert np.unique(out).size == 1
        seen.add(float(out[0, 0]))
    assert seen == {0.0, 2.0}


def test_stochastic_depth_gradcheck_and_module():
    x = ember.randn(5, 3, dtype=ember.float64, requires_grad=True)

    def fn(t):
        ember.manual_seed(7)  # the same mask on every evaluation
        return stochastic_depth(t, 0.4, "row")

    assert gradcheck(fn, (x,))
    mod = StochasticDepth(0.2, "row")
    assert repr(mod) == "StochasticDepth(p=0.2, mode=row)"
    mod.eval()
    assert mod(x) is x


def test_stochastic_depth_rejects_bad_arguments():
    x = ember.ones(2, 2)
    with pytest.raises(ValueError, match="^drop probability has to be between 0 and 1, but got 1.5$"):
        stochastic_depth(x, 1.5, "row")
    with pytest.raises(ValueError, match="^drop probability has to be between 0 and 1, but got -0.1$"):
        StochasticDepth(-0.1, "row")(x)
    with pytest.raises(ValueError, match="^mode has to be either 'batch' or 'row', but got col$"):
        stochastic_depth(x, 0.5, "col")
