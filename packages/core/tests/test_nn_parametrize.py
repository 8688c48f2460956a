"""ember.nn.utils.parametrize, parametrizations.weight_norm / spectral_norm and the
conv/linear + batch-norm fusion: values against float64 NumPy, gradients by gradcheck,
state-dict keys as PyTorch's, errors."""

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck
from ember.nn import functional as F
from ember.nn.utils import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    parametrizations,
    parametrize,
)

RNG = np.random.default_rng(7)


def _t(a, grad=False):
    return ember.tensor(np.asarray(a, dtype=np.float64), requires_grad=grad)


class Symmetric(nn.Module):
    def forward(self, x):
        return x.triu() + x.triu(1).t()

    def right_inverse(self, a):
        return a.triu()


class Scale(nn.Module):
    def __init__(self, factor):
        super().__init__()
        self.factor = factor

    def forward(self, x):
        return x * self.factor

    def right_inverse(self, y):
        return y / self.factor


class Holder(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.weight = nn.Parameter(_t(RNG.normal(size=shape)))
        self.register_buffer("stat", _t(RNG.normal(size=shape)))


def test_register_read_assign_chain_and_remove():
    m = Holder((3, 3))
    a = m.weight.detach().numpy().copy()
    parametrize.register_parametrization(m, "weight", Symmetric())
    assert type(m).__name__ == "ParametrizedHolder" and parametrize.type_before_parametrizations(m) is Holder
    assert parametrize.is_parametrized(m) and parametrize.is_parametrized(m, "weight")
    assert not parametrize.is_parametrized(m, "stat")
    sym = np.triu(a) + np.triu(a, 1).T
    np.testing.assert_allclose(m.weight.detach().numpy(), sym)
    assert "weight" not in dict(m.named_parameters())
    assert sorted(m.state_dict()) == ["parametrizations.weight.original", "stat"]
    # Assigning goes through right_inverse into the stored tensor.
    target = RNG.normal(size=(3, 3))
    target = target + target.T
    m.weight = _t(target)
    np.testing.assert_allclose(m.weight.detach().numpy(), target)
    # A second parametrization chains after the first.
    parametrize.register_parametrization(m, "weight", Scale(2.0))
    np.testing.assert_allclose(m.weight.detach().numpy(), 2 * target)
    m.weight = _t(4 * target)
    np.testing.assert_allclose(m.weight.detach().numpy(), 4 * target)
    # Gradients reach the stored tensor.
    m.weight.sum().backward()
    assert m.parametrizations.weight.original.grad is not None
    parametrize.remove_parametrizations(m, "weight")
    assert type(m) is Holder and isinstance(m.weight, nn.Parameter)
    np.testing.assert_allclose(m.weight.detach().numpy(), 4 * target)
    assert sorted(m.state_dict()) == ["stat", "weight"]


def test_buffers_leave_unparametrized_and_state_dict_round_trip():
    m = Holder((2, 2))
    stat = m.stat.numpy().copy()
    parametrize.register_parametrization(m, "stat", Scale(3.0))
    # right_inverse stores stat / 3, so the attribute still reads as before.
    np.testing.assert_allclose(m.stat.numpy(), stat)
    np.testing.assert_allclose(m.parametrizations.stat.original.numpy(), stat / 3)
    assert "parametrizations.stat.original" in m.state_dict()
    other = Holder((2, 2))
    parametrize.register_parametrization(other, "stat", Scale(3.0))
    other.load_state_dict(m.state_dict())
    np.testing.assert_allclose(other.stat.numpy(), stat)
    parametrize.remove_parametrizations(m, "stat", leave_parametrized=False)
    np.testing.assert_allclose(m.stat.numpy(), stat / 3)
    assert "stat" in dict(m.named_buffers())


def test_cached_computes_once():
    calls = []

    class Counting(nn.Module):
        def forward(self, x):
            calls.append(1)
            return x

    m = Holder((2,))
    parametrize.register_parametrization(m, "weight", Counting())
    calls.clear()
    with parametrize.cached():
        first = m.weight
        assert m.weight is first
    assert len(calls) == 1
    _ = m.weight  # outside cached(): computed again
    assert len(calls) == 2


def test_parametrize_errors():
    m = Holder((2, 3))
    with pytest.raises(ValueError, match="does not have a parameter, a buffer, or a parametrized element with name "
                                         "'missing'"):
        parametrize.register_parametrization(m, "missing", Scale(1.0))

    class Shrink(nn.Module):
        def forward(self, x):
            return x[:1]

    with pytest.raises(ValueError, match="may not change the shape of the tensor"):
        parametrize.register_parametrization(m, "weight", Shrink())
    assert isinstance(m.weight, nn.Parameter)  # the failed registration left the module as it was
    parametrize.register_parametrization(m, "weight", Shrink(), unsafe=True)
    assert tuple(m.weight.shape) == (1, 3)
    with pytest.raises(ValueError, match="does not have a parametrization on stat"):
        parametrize.remove_parametrizations(m, "stat")
    with pytest.raises(TypeError, match="parametrization must be an ember.nn.Module"):
        parametrize.register_parametrization(Holder((2,)), "weight", lambda x: x)

    class BadInverse(nn.Module):
        def forward(self, x):
            return x

        def right_inverse(self, x):
            return 3

    with pytest.raises(ValueError, match="'right_inverse' must return a Tensor or a Sequence of tensors"):
        parametrize.register_parametrization(Holder((2,)), "weight", BadInverse())


@pytest.mark.parametrize("dim", [0, 1, -1, None])
def test_weight_norm_values_keys_and_gradients(dim):
    lin = nn.Linear(4, 3).double()
    w = lin.weight.detach().numpy().copy()
    parametrizations.weight_norm(lin, dim=dim)
    assert sorted(lin.state_dict()) == ["bias", "parametrizations.weight.original0", "parametrizations.weight.original1"]
    np.testing.assert_allclose(lin.weight.detach().numpy(), w, rtol=1e-12)
    g = lin.parametrizations.weight.original0.detach().numpy()
    axis = {0: 1, 1: 0, -1: 0, None: None}[dim]
    expected_g = np.sqrt((w ** 2).sum(axis=axis, keepdims=axis is not None))
    np.testing.assert_allclose(g, expected_g, rtol=1e-12)
    # New magnitudes and directions: weight = g * v / ||v||.
    g_new, v_new = RNG.uniform(0.5, 2, size=g.shape), RNG.normal(size=w.shape)
    with ember.no_grad():
        lin.parametrizations.weight.original0.copy_(_t(g_new))
        lin.parametrizations.weight.original1.copy_(_t(v_new))
    norm = np.sqrt((v_new ** 2).sum(axis=axis, keepdims=axis is not None))
    np.testing.assert_allclose(lin.weight.detach().numpy(), g_new * v_new / norm, rtol=1e-12)
    rule = lin.parametrizations.weight[0]
    assert gradcheck(rule, (_t(g_new, True), _t(v_new, True)))


def test_weight_norm_on_a_conv_weight_and_remove():
    m = Holder((4, 2, 3))
    w = m.weight.detach().numpy().copy()
    parametrizations.weight_norm(m)
    g = m.parametrizations.weight.original0
    assert tuple(g.shape) == (4, 1, 1)
    np.testing.assert_allclose(g.detach().numpy(), np.sqrt((w ** 2).sum(axis=(1, 2), keepdims=True)), rtol=1e-12)
    parametrize.remove_parametrizations(m, "weight")
    np.testing.assert_allclose(m.weight.detach().numpy(), w, rtol=1e-12)


def test_spectral_norm_normalises_the_largest_singular_value():
    lin = nn.Linear(6, 4).double()
    # A known spectrum with a gap (4 vs 2) makes 30 power iterations converge to 1e-8 from any start.
    left, _ = np.linalg.qr(RNG.normal(size=(4, 4)))
    right, _ = np.linalg.qr(RNG.normal(size=(6, 4)))
    with ember.no_grad():
        lin.weight.copy_(_t(left @ np.diag([4.0, 2.0, 1.0, 0.5]) @ right.T))
    parametrizations.spectral_norm(lin)
    assert sorted(lin.state_dict()) == ["bias", "parametrizations.weight.0._u", "parametrizations.weight.0._v",
                                        "parametrizations.weight.original"]
    for _ in range(30):  # training mode: each read runs one power iteration
        weight = lin.weight
    assert np.linalg.svd(weight.detach().numpy(), compute_uv=False)[0] == pytest.approx(1.0, abs=1e-8)
    # Eval mode keeps u and v; the value is W / (u^T W v) with those vectors.
    lin.eval()
    u = lin.parametrizations.weight[0]._u.numpy().copy()
    v = lin.parametrizations.weight[0]._v.numpy().copy()
    w = lin.parametrizations.weight.original.detach().numpy()
    np.testing.assert_allclose(lin.weight.detach().numpy(), w / (u @ w @ v), rtol=1e-12)
    assert np.array_equal(lin.parametrizations.weight[0]._u.numpy(), u)
    rule = lin.parametrizations.weight[0]
    assert gradcheck(rule, (_t(w, True),))


def test_spectral_norm_dims_and_errors():
    m = Holder((3, 4, 2))
    left, _ = np.linalg.qr(RNG.normal(size=(4, 4)))
    right, _ = np.linalg.qr(RNG.normal(size=(6, 4)))
    spread = np.moveaxis((left @ np.diag([3.0, 1.0, 0.5, 0.2]) @ right.T).reshape(4, 3, 2), 0, 1)
    with ember.no_grad():
        m.weight.copy_(_t(np.ascontiguousarray(spread)))
    parametrizations.spectral_norm(m, dim=1, n_power_iterations=3)
    for _ in range(20):
        weight = m.weight.detach().numpy()
    matrix = np.moveaxis(weight, 1, 0).reshape(4, -1)
    assert np.linalg.svd(matrix, compute_uv=False)[0] == pytest.approx(1.0, abs=1e-8)
    with pytest.raises(ValueError, match="Expected n_power_iterations to be positive"):
        parametrizations.spectral_norm(Holder((2, 2)), n_power_iterations=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        parametrizations.spectral_norm(Holder((2, 2)), dim=2)
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        parametrizations.spectral_norm(Holder((2, 2)), name="kernel")


class ConvLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(_t(RNG.normal(size=(3, 2, 3, 3))))
        self.bias = nn.Parameter(_t(RNG.normal(size=(3,))))

    def forward(self, x):
        return F.conv2d(x, self.weight, self.bias, padding=1)


def _trained_bn(bn, x):
    bn.train()
    for _ in range(3):
        bn(x + _t(RNG.normal(size=tuple(x.shape))))
    return bn.eval()


def test_fuse_conv_bn_eval_matches_conv_then_bn():
    conv = ConvLike().eval()
    x = _t(RNG.normal(size=(2, 2, 5, 5)))
    bn = _trained_bn(nn.BatchNorm2d(3).double(), conv(x).detach())
    with ember.no_grad():
        bn.weight.copy_(_t(RNG.uniform(0.5, 2, size=3)))
        bn.bias.copy_(_t(RNG.normal(size=3)))
    fused = fuse_conv_bn_eval(conv, bn)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(), rtol=1e-10, atol=1e-12)
    assert fused is not conv and isinstance(fused.weight, nn.Parameter)
    with pytest.raises(ValueError, match="Fusion only for eval!"):
        fuse_conv_bn_eval(conv.train(), bn)


def test_fuse_linear_bn_eval_and_transposed_weights():
    lin = nn.Linear(5, 4).double().eval()
    x = _t(RNG.normal(size=(6, 5)))
    bn = _trained_bn(nn.BatchNorm1d(4).double(), lin(x).detach())
    fused = fuse_linear_bn_eval(lin, bn)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(lin(x)).detach().numpy(), rtol=1e-10, atol=1e-12)
    with pytest.raises(ValueError, match="linear.out_features must equal bn.num_features"):
        fuse_linear_bn_eval(nn.Linear(5, 3).double().eval(), bn)
    # Transposed convolutions keep output channels in dim 1.
    w = _t(RNG.normal(size=(2, 4, 3)))
    mean, var = _t(RNG.normal(size=4)), _t(RNG.uniform(0.5, 2, size=4))
    fw, fb = fuse_conv_bn_weights(w, None, mean, var, 1e-5, None, None, transpose=True)
    scale = 1 / np.sqrt(var.numpy() + 1e-5)
    np.testing.assert_allclose(fw.detach().numpy(), w.numpy() * scale[None, :, None], rtol=1e-12)
    np.testing.assert_allclose(fb.detach().numpy(), -mean.numpy() * scale, rtol=1e-12)
