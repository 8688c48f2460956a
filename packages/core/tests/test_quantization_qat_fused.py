"""The fused QAT modules (ember.ao.nn.intrinsic.qat: ConvBn / ConvBnReLU / ConvReLU 1d-3d,
LinearBn1d, LinearReLU; ember.ao.nn.qat.Conv1d/2d/3d) against float64 references composed from
ember ops: forward and backward (the BatchNorm folded into the fake-quantized weight, batch
statistics while training, running ones once frozen), freeze/update of the BN statistics,
from_float / to_float, fuse_modules_qat, eager prepare_qat -> convert and prepare_qat_fx ->
convert_fx, and the errors. tests/test_quantization_qat_fused_torch_parity.py compares with PyTorch."""

import copy

import numpy as np
import pytest

import ember
import ember.ao.quantization as tq
from ember import nn
from ember.ao.nn import intrinsic as nni
from ember.ao.nn import qat as nnqat
from ember.ao.nn import quantized as nnq
from ember.ao.nn.intrinsic import qat as nniqat
from ember.ao.nn.intrinsic import quantized as nniq
from ember.ao.quantization.fuse_modules import fuse_modules_qat
from ember.ao.quantization.quantize import get_default_qat_module_mappings
from ember.ao.quantization.quantize_fx import convert_fx, prepare_qat_fx
from ember.nn import functional as F

QCONFIG = tq.default_qat_qconfig  # per-tensor symmetric qint8 weight fake quantizer
CONV = {1: nn.Conv1d, 2: nn.Conv2d, 3: nn.Conv3d}
BN = {1: nn.BatchNorm1d, 2: nn.BatchNorm2d, 3: nn.BatchNorm3d}
CONV_FN = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}
QAT_CONV_BN = {1: nniqat.ConvBn1d, 2: nniqat.ConvBn2d, 3: nniqat.ConvBn3d}
QAT_CONV_BN_RELU = {1: nniqat.ConvBnReLU1d, 2: nniqat.ConvBnReLU2d, 3: nniqat.ConvBnReLU3d}
QAT_CONV_RELU = {1: nniqat.ConvReLU1d, 2: nniqat.ConvReLU2d, 3: nniqat.ConvReLU3d}


def _rand(*shape, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    return ember.tensor((rng.normal(size=shape) * scale).astype(np.float32))


def _fill_bn(bn, seed=1):
    """Non-trivial BatchNorm parameters and running statistics."""
    n = bn.num_features
    rng = np.random.default_rng(seed)
    with ember.no_grad():
        bn.weight.copy_(ember.tensor(rng.uniform(0.5, 1.5, n).astype(np.float32)))
        bn.bias.copy_(ember.tensor(rng.normal(size=n).astype(np.float32) * 0.3))
        bn.running_mean.copy_(ember.tensor(rng.normal(size=n).astype(np.float32) * 0.2))
        bn.running_var.copy_(ember.tensor(rng.uniform(0.5, 2.0, n).astype(np.float32)))


def _f64(t):
    return ember.tensor(t.detach().numpy().astype(np.float64), requires_grad=True)


def _fake_quant64(x, x32, fq):
    """Per-tensor fake quantization of x (float64) with the parameters fq used, straight-through.
    Which integer an element rounds to is decided in float32 on x32 (x as the module computed it),
    as the kernel does (x * (1 / scale), half to even): the symmetric scale puts the largest weight
    exactly on a rounding boundary, where float64 could round the other way."""
    scale, zp = float(fq.scale.reshape(-1)[0]), int(fq.zero_point.reshape(-1)[0])
    inv_scale = ember.tensor(1.0, dtype=ember.float32) / fq.scale.reshape(-1)[0]
    raw = ember.tensor((x32.detach() * inv_scale).round().numpy().astype(np.float64)) + zp
    inside = (raw >= fq.quant_min) & (raw <= fq.quant_max)  # the gradient passes only there
    q = raw.clamp(fq.quant_min, fq.quant_max)
    return ember.where(inside, x, x.detach()) + ((q - zp) * scale - x.detach())


def _bn64(y, gamma, beta, mean, var, eps):
    shape = [1, -1] + [1] * (y.dim() - 2)
    return (y - mean.reshape(shape)) / (var.reshape(shape) + eps).sqrt() * gamma.reshape(shape) + beta.reshape(shape)


def _batch_stats(y):
    dims = [0] + list(range(2, y.dim()))
    n = y.numel() // y.shape[1]
    mean = y.mean(dims)
    var = ((y - mean.reshape([1, -1] + [1] * (y.dim() - 2))) ** 2).mean(dims)
    return mean, var, var * n / (n - 1)


def _float64_state(m):
    """m's parameters (float64 leaves) and running statistics, read before its forward."""
    w, b, gamma, beta = _f64(m.weight), _f64(m.bias) if m.bias is not None else None, _f64(m.bn.weight), _f64(
        m.bn.bias)
    rm, rv = m.bn.running_mean.detach().numpy().astype(np.float64), m.bn.running_var.detach().numpy().astype(
        np.float64)
    rm, rv = ember.tensor(rm), ember.tensor(rv)
    return w, b, gamma, beta, rm, rv


@pytest.mark.parametrize("dim", [1, 2, 3])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_conv_bn_forward_backward_matches_float64(dim, relu, bias):
    cls = (QAT_CONV_BN_RELU if relu else QAT_CONV_BN)[dim]
    ember.manual_seed(0)
    m = cls(3, 4, 3, stride=1, padding=1, bias=bias, qconfig=QCONFIG)
    _fill_bn(m.bn)
    x = _rand(4, 3, *([5] * dim), seed=dim)
    w, b, gamma, beta, rm, rv = _float64_state(m)
    wshape, bshape = [-1] + [1] * (dim + 1), [1, -1] + [1] * dim
    w32 = m.weight.detach() * (m.bn.weight.detach() / ember.sqrt(m.bn.running_var + m.bn.eps)).reshape(wshape)
    out = m(x)
    grad_out = _rand(*out.shape, seed=7)
    (out * grad_out).sum().backward()

    eps, momentum = m.bn.eps, m.bn.momentum
    s = gamma / (rv + eps).sqrt()
    wq = _fake_quant64(w * s.reshape(wshape), w32, m.weight_fake_quant)
    y = CONV_FN[dim](_f64(x).detach(), wq, None, 1, 1) / s.reshape(bshape)
    if b is not None:
        y = y + b.reshape(bshape)
    mean, var, var_unbiased = _batch_stats(y)
    ref = _bn64(y, gamma, beta, mean, var, eps)
    if relu:
        ref = ref.relu()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
    (ref * _f64(grad_out).detach()).sum().backward()
    for ours, theirs in ((m.weight, w), (m.bn.weight, gamma), (m.bn.bias, beta)) + (((m.bias, b),) if bias else ()):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-3, atol=1e-3)
    # the running statistics took the batch's (unbiased variance), once
    np.testing.assert_allclose(m.bn.running_mean.numpy(), ((1 - momentum) * rm + momentum * mean).detach().numpy(),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(m.bn.running_var.numpy(),
                               ((1 - momentum) * rv + momentum * var_unbiased).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert int(m.bn.num_batches_tracked) == 1
    if bias:  # the conv bias only shifts the batch mean: the BatchNorm removes it
        np.testing.assert_allclose(m.bias.grad.numpy(), 0.0, atol=1e-4)


@pytest.mark.parametrize("dim", [1, 2])
def test_conv_bn_frozen_uses_running_statistics(dim):
    ember.manual_seed(1)
    m = QAT_CONV_BN[dim](2, 3, 3, bias=True, qconfig=QCONFIG).freeze_bn_stats()
    _fill_bn(m.bn, seed=3)
    x = _rand(2, 2, *([6] * dim), seed=4)
    w, b, gamma, beta, rm, rv = _float64_state(m)
    wshape, bshape = [-1] + [1] * (dim + 1), [1, -1] + [1] * dim
    w32 = m.weight.detach() * (m.bn.weight.detach() / ember.sqrt(m.bn.running_var + m.bn.eps)).reshape(wshape)
    before = (m.bn.running_mean.clone(), m.bn.running_var.clone())
    out = m(x)
    out.sum().backward()
    eps = m.bn.eps
    s = gamma / (rv + eps).sqrt()
    wq = _fake_quant64(w * s.reshape(wshape), w32, m.weight_fake_quant)
    y = CONV_FN[dim](_f64(x).detach(), wq, None) / s.reshape(bshape) + b.reshape(bshape)
    ref = _bn64(y, gamma, beta, rm, rv, eps)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
    ref.sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), w.grad.numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(m.bias.grad.numpy(), b.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert ember.equal(m.bn.running_mean, before[0]) and ember.equal(m.bn.running_var, before[1])
    assert int(m.bn.num_batches_tracked) == 0


def test_linear_bn_forward_backward_matches_float64():
    ember.manual_seed(2)
    m = nniqat.LinearBn1d(6, 5, qconfig=QCONFIG)
    _fill_bn(m.bn, seed=5)
    x = _rand(8, 6, seed=6)
    w, b, gamma, beta = _f64(m.weight), _f64(m.bias), _f64(m.bn.weight), _f64(m.bn.bias)
    rm, rv = ember.tensor(m.bn.running_mean.numpy().astype(np.float64)), ember.tensor(
        m.bn.running_var.numpy().astype(np.float64))
    w32 = m.weight.detach() * (m.bn.weight.detach() / ember.sqrt(m.bn.running_var + m.bn.eps)).reshape(-1, 1)
    out = m(x)
    g = _rand(8, 5, seed=9)
    (out * g).sum().backward()
    s = gamma / (rv + m.bn.eps).sqrt()
    wq = _fake_quant64(w * s.reshape(-1, 1), w32, m.weight_fake_quant)
    y = F.linear(_f64(x).detach(), wq) / s.reshape(1, -1) + b.reshape(1, -1)
    mean, var, var_unbiased = _batch_stats(y)
    ref = _bn64(y, gamma, beta, mean, var, m.bn.eps)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
    (ref * _f64(g).detach()).sum().backward()
    for ours, theirs in ((m.weight, w), (m.bias, b), (m.bn.weight, gamma), (m.bn.bias, beta)):
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(m.bn.running_var.numpy(), (0.9 * rv + 0.1 * var_unbiased).detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(m.bn.running_mean.numpy(), (0.9 * rm + 0.1 * mean).detach().numpy(), rtol=1e-5,
                               atol=1e-6)
    # frozen: the running statistics normalize and stay
    m.freeze_bn_stats()
    before = m.bn.running_mean.clone()
    w32 = m.weight.detach() * (m.bn.weight.detach() / ember.sqrt(m.bn.running_var + m.bn.eps)).reshape(-1, 1)
    out = m(x)
    rm2, rv2 = m.bn.running_mean.numpy().astype(np.float64), m.bn.running_var.numpy().astype(np.float64)
    s = gamma.detach() / ember.tensor(np.sqrt(rv2 + m.bn.eps))
    wq = _fake_quant64(w.detach() * s.reshape(-1, 1), w32, m.weight_fake_quant)
    y = F.linear(_f64(x).detach(), wq) / s.reshape(1, -1) + b.detach().reshape(1, -1)
    ref = _bn64(y, gamma.detach(), beta.detach(), ember.tensor(rm2), ember.tensor(rv2), m.bn.eps)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-4, atol=1e-4)
    assert ember.equal(m.bn.running_mean, before)


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_conv_relu_and_qat_conv_match_float64(dim):
    ember.manual_seed(3)
    x = _rand(2, 2, *([5] * dim), seed=11)
    for cls, relu in ((QAT_CONV_RELU[dim], True), ({1: nnqat.Conv1d, 2: nnqat.Conv2d, 3: nnqat.Conv3d}[dim], False)):
        m = cls(2, 3, 2, stride=2, qconfig=QCONFIG)
        out = m(x)
        out.sum().backward()
        w, b = _f64(m.weight), _f64(m.bias)
        ref = CONV_FN[dim](_f64(x).detach(), _fake_quant64(w, m.weight, m.weight_fake_quant), b, 2)
        if relu:
            ref = ref.relu()
        np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
        ref.sum().backward()
        np.testing.assert_allclose(m.weight.grad.numpy(), w.grad.numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(m.bias.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-5)


def test_linear_relu_matches_float64():
    ember.manual_seed(4)
    m = nniqat.LinearReLU(5, 4, qconfig=QCONFIG)
    x = _rand(3, 5, seed=12)
    out = m(x)
    out.sum().backward()
    w, b = _f64(m.weight), _f64(m.bias)
    ref = F.linear(_f64(x).detach(), _fake_quant64(w, m.weight, m.weight_fake_quant), b).relu()
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
    ref.sum().backward()
    np.testing.assert_allclose(m.weight.grad.numpy(), w.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert (out.detach().numpy() >= 0).all()


def test_without_fake_quant_conv_bn_is_conv_then_bn_and_slow_path_agrees():
    """With the weight fake quantizer off, the folded forward is exactly conv -> bn (training and
    frozen), and PyTorch's slow path (_enable_slow_path_for_better_numerical_stability) agrees."""
    ember.manual_seed(5)
    x = _rand(4, 3, 6, 6, seed=13)
    conv, bn = nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)
    _fill_bn(bn, seed=8)
    fused = nni.ConvBn2d(copy.deepcopy(conv), copy.deepcopy(bn))
    fused.qconfig = QCONFIG
    fast = nniqat.ConvBn2d.from_float(fused)
    slow = copy.deepcopy(fast)
    slow._enable_slow_path_for_better_numerical_stability = True
    for m in (fast, slow):
        m.weight_fake_quant.disable_fake_quant()
    expected = bn(conv(x))
    for m in (fast, slow):
        np.testing.assert_allclose(m(x).detach().numpy(), expected.detach().numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(m.bn.running_var.numpy(), bn.running_var.numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(m.bn.running_mean.numpy(), bn.running_mean.numpy(), rtol=1e-5, atol=1e-6)
    bn.eval()
    for m in (fast, slow):
        m.freeze_bn_stats()
        np.testing.assert_allclose(m(x).detach().numpy(), bn(conv(x)).detach().numpy(), rtol=1e-4, atol=1e-4)


# ---- BN statistics, modes, state dicts ------------------------------------------------------------------


def test_freeze_and_update_bn_stats():
    m = nniqat.ConvBnReLU2d(2, 3, 1, qconfig=QCONFIG)
    assert m.freeze_bn is False and m.bn.training
    assert m.freeze_bn_stats() is m and m.freeze_bn and not m.bn.training
    m.train()  # a frozen BatchNorm stays in eval mode
    assert m.training and not m.bn.training
    m.eval()
    assert not m.training and not m.bn.training
    assert m.update_bn_stats() is m and not m.freeze_bn and m.bn.training
    m.eval()
    assert not m.bn.training and not m.weight_fake_quant.training
    m.train()
    assert m.bn.training
    frozen_at_start = nniqat.ConvBn2d(2, 3, 1, freeze_bn=True, qconfig=QCONFIG)
    assert frozen_at_start.freeze_bn and not frozen_at_start.bn.training
    # the module-level functions, for model.apply: only the ConvBn modules (as PyTorch's)
    model = nn.Sequential(nniqat.ConvBn1d(2, 2, 1, qconfig=QCONFIG), nniqat.ConvBnReLU3d(2, 2, 1, qconfig=QCONFIG),
                          nniqat.LinearBn1d(2, 2, qconfig=QCONFIG), nn.BatchNorm1d(2))
    model.apply(nniqat.freeze_bn_stats)
    assert [getattr(m, "freeze_bn", None) for m in model] == [True, True, False, None]
    assert [m.bn.training for m in model[:3]] == [False, False, True] and model[3].training
    model.apply(nniqat.update_bn_stats)
    assert [m.freeze_bn for m in model[:3]] == [False, False, False] and all(m.bn.training for m in model[:3])
    lin = nniqat.LinearBn1d(2, 2, qconfig=QCONFIG).freeze_bn_stats()
    lin.train()
    assert lin.freeze_bn and not lin.bn.training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train("yes")


def test_reset_bn_parameters_and_running_stats():
    ember.manual_seed(6)
    m = nniqat.ConvBn2d(2, 3, 3, bias=True, qconfig=QCONFIG)
    w = m.bn.weight.detach().numpy()
    assert ((w >= 0) & (w < 1)).all() and not np.allclose(w, w[0])
    np.testing.assert_array_equal(m.bn.bias.detach().numpy(), 0)
    bound = 1 / np.sqrt(2 * 9)
    assert (np.abs(m.bias.detach().numpy()) <= bound).all()
    m(_rand(2, 2, 5, 5))
    assert int(m.bn.num_batches_tracked) == 1
    m.reset_running_stats()
    np.testing.assert_array_equal(m.bn.running_mean.numpy(), 0)
    np.testing.assert_array_equal(m.bn.running_var.numpy(), 1)
    assert int(m.bn.num_batches_tracked) == 0
    assert nniqat.ConvBn2d(2, 3, 3, qconfig=QCONFIG).bias is None  # PyTorch's default: bias=None


def test_state_dict_keys_and_version_1_checkpoints():
    m = nniqat.ConvBn2d(2, 3, 1, bias=True, qconfig=QCONFIG)
    _fill_bn(m.bn)
    sd = m.state_dict()
    assert list(sd)[:7] == ["weight", "bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                            "bn.num_batches_tracked"]
    assert sd._metadata[""]["version"] == 2
    old = type(sd)((k.replace("bn.weight", "gamma").replace("bn.bias", "beta").replace("bn.", ""), v)
                   for k, v in sd.items())
    old._metadata = copy.deepcopy(sd._metadata)
    old._metadata[""]["version"] = 1
    fresh = nniqat.ConvBn2d(2, 3, 1, bias=True, qconfig=QCONFIG)
    fresh.load_state_dict(old)
    for name in ("weight", "running_mean", "running_var", "bias"):
        assert ember.equal(getattr(fresh.bn, name), getattr(m.bn, name))
    missing = type(sd)((k, v) for k, v in old.items() if k != "gamma")
    missing._metadata = old._metadata
    with pytest.raises(RuntimeError, match="bn.weight"):
        nniqat.ConvBn2d(2, 3, 1, bias=True, qconfig=QCONFIG).load_state_dict(missing)


# ---- from_float / to_float ------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [1, 2, 3])
def test_conv_bn_from_float_shares_and_to_float_folds(dim):
    ember.manual_seed(7)
    conv, bn = CONV[dim](3, 4, 3, bias=dim != 2), BN[dim](4, eps=1e-3, momentum=0.2)
    _fill_bn(bn, seed=dim)
    for relu in (False, True):
        fused = (nni.ConvBnReLU1d, nni.ConvBnReLU2d, nni.ConvBnReLU3d)[dim - 1](conv, bn, nn.ReLU()) if relu else \
            (nni.ConvBn1d, nni.ConvBn2d, nni.ConvBn3d)[dim - 1](conv, bn)
        fused.qconfig = QCONFIG
        qat = (QAT_CONV_BN_RELU if relu else QAT_CONV_BN)[dim].from_float(fused)
        assert qat.weight is conv.weight and qat.bias is conv.bias and qat.bn.weight is bn.weight
        assert qat.bn.running_var is bn.running_var and qat.bn.num_batches_tracked is bn.num_batches_tracked
        assert (qat.bn.eps, qat.bn.momentum, qat.kernel_size, qat.qconfig) == (1e-3, 0.2, conv.kernel_size, QCONFIG)
        assert qat.training and qat.bn.training and not qat.freeze_bn
        back = qat.to_float()
        folded = nn.utils.fuse_conv_bn_eval(copy.deepcopy(conv).eval(), copy.deepcopy(bn).eval())
        layer = back
        if relu:
            assert type(back) is (nni.ConvReLU1d, nni.ConvReLU2d, nni.ConvReLU3d)[dim - 1]
            assert type(back[1]) is nn.ReLU
            layer = back[0]
        assert type(layer) is CONV[dim] and back.training
        np.testing.assert_allclose(layer.weight.detach().numpy(), folded.weight.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(layer.bias.detach().numpy(), folded.bias.detach().numpy(), rtol=1e-6, atol=1e-7)
        assert layer.weight is not qat.weight
        # the float module computes the frozen QAT forward without fake quantization
        x = _rand(2, 3, *([5] * dim), seed=3)
        qat.weight_fake_quant.disable_fake_quant()
        qat.eval()
        np.testing.assert_allclose(back(x).detach().numpy(), qat(x).detach().numpy(), rtol=1e-4, atol=1e-5)
        assert not qat.eval().to_float().training


def test_linear_and_relu_modules_from_float_to_float():
    lin, bn = nn.Linear(4, 3), nn.BatchNorm1d(3)
    _fill_bn(bn)
    fused = nni.LinearBn1d(lin, bn)
    fused.qconfig = QCONFIG
    qat = nniqat.LinearBn1d.from_float(fused)
    assert qat.weight is lin.weight and qat.bn.running_mean is bn.running_mean
    folded = nn.utils.fuse_linear_bn_eval(copy.deepcopy(lin).eval(), copy.deepcopy(bn).eval())
    back = qat.to_float()
    assert type(back) is nn.Linear
    np.testing.assert_allclose(back.weight.detach().numpy(), folded.weight.detach().numpy(), rtol=1e-6)
    np.testing.assert_allclose(back.bias.detach().numpy(), folded.bias.detach().numpy(), rtol=1e-6, atol=1e-7)

    relu_fused = nni.LinearReLU(nn.Linear(4, 3), nn.ReLU())
    relu_fused.qconfig = QCONFIG
    qat = nniqat.LinearReLU.from_float(relu_fused)
    assert type(qat) is nniqat.LinearReLU and qat.weight is relu_fused[0].weight
    back = qat.eval().to_float()
    assert type(back) is nni.LinearReLU and type(back[0]) is nn.Linear and not back.training
    assert ember.equal(back[0].weight, qat.weight) and back[0].weight is not qat.weight

    for dim, fused_cls in ((1, nni.ConvReLU1d), (2, nni.ConvReLU2d), (3, nni.ConvReLU3d)):
        conv = CONV[dim](2, 2, 1, padding_mode="zeros", groups=2)
        relu_fused = fused_cls(conv, nn.ReLU())
        relu_fused.qconfig = QCONFIG
        qat = QAT_CONV_RELU[dim].from_float(relu_fused)
        assert qat.weight is conv.weight and qat.groups == 2
        back = qat.to_float()
        assert type(back) is fused_cls and type(back[0]) is CONV[dim] and ember.equal(back[0].bias, conv.bias)
        plain = CONV[dim](2, 2, 1)
        plain.qconfig = QCONFIG
        qat_plain = {1: nnqat.Conv1d, 2: nnqat.Conv2d, 3: nnqat.Conv3d}[dim].from_float(plain)
        assert qat_plain.weight is plain.weight and type(qat_plain.to_float()) is CONV[dim]


# ---- fusing, prepare_qat, convert ---------------------------------------------------------------------


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1, self.bn1, self.relu1 = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU()
        self.conv2, self.bn2 = nn.Conv2d(4, 4, 3, bias=False), nn.BatchNorm2d(4)
        self.conv3, self.relu3 = nn.Conv3d(1, 2, 1), nn.ReLU()
        self.fc1, self.bn3 = nn.Linear(16, 6), nn.BatchNorm1d(6)
        self.fc2, self.relu4 = nn.Linear(6, 3), nn.ReLU()
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.relu1(self.bn1(self.conv1(self.quant(x))))
        x = self.bn2(self.conv2(x))
        x = self.relu3(self.conv3(x.unsqueeze(1))).mean(1)
        x = self.bn3(self.fc1(x.flatten(1)))
        return self.dequant(self.relu4(self.fc2(x)))


FUSE = [["conv1", "bn1", "relu1"], ["conv2", "bn2"], ["conv3", "relu3"], ["fc1", "bn3"], ["fc2", "relu4"]]


def _net():
    ember.manual_seed(8)
    model = Net()
    for bn in (model.bn1, model.bn2, model.bn3):
        _fill_bn(bn)
    return model.train()


def test_fuse_modules_qat_keeps_batch_norm():
    model = _net()
    fused = fuse_modules_qat(model, FUSE)
    assert [type(getattr(fused, n[0])) for n in FUSE] == [nni.ConvBnReLU2d, nni.ConvBn2d, nni.ConvReLU3d,
                                                           nni.LinearBn1d, nni.LinearReLU]
    assert type(fused.bn1) is nn.Identity and fused.bn1.training and type(model.conv1) is nn.Conv2d
    assert fused.conv1[1] is not model.bn1 and fused.conv1[0].weight.shape == model.conv1.weight.shape
    x = _rand(4, 3, 4, 4, seed=2)
    np.testing.assert_allclose(fused(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    # eval-mode models fuse the same way for QAT (the BatchNorm is not folded)
    assert type(fuse_modules_qat(_net().eval(), ["conv2", "bn2"]).conv2) is nni.ConvBn2d
    # fuse_modules (post-training) still folds and wants eval mode
    assert type(tq.fuse_modules(_net().eval(), ["conv2", "bn2"]).conv2) is nn.Conv2d
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        tq.fuse_modules(_net(), ["conv2", "bn2"])
    # a custom fuser is called with is_qat and the additional mapping
    calls = []

    def fuser(mods, is_qat, additional):
        calls.append((len(mods), is_qat, additional))
        return tq.fuse_known_modules(mods, is_qat, additional)

    fuse_modules_qat(_net(), ["fc2", "relu4"], fuser_func=fuser)
    assert calls == [(2, True, {})]
    custom = fuse_modules_qat(_net(), ["fc2", "relu4"], fuse_custom_config_dict={
        "additional_fuser_method_mapping": {(nn.Linear, nn.ReLU): lambda is_qat, a, b: nn.Sequential(a, b)}})
    assert type(custom.fc2) is nn.Sequential


def test_prepare_qat_train_convert_eager():
    model = fuse_modules_qat(_net(), FUSE)
    model.qconfig = tq.get_default_qat_qconfig("x86")
    prepared = tq.prepare_qat(model)
    assert [type(getattr(prepared, n[0])) for n in FUSE] == [nniqat.ConvBnReLU2d, nniqat.ConvBn2d,
                                                              nniqat.ConvReLU3d, nniqat.LinearBn1d,
                                                              nniqat.LinearReLU]
    assert isinstance(prepared.conv1.activation_post_process, tq.FusedMovingAvgObsFakeQuantize)
    assert not hasattr(prepared.conv1.bn, "activation_post_process")
    assert prepared.conv1.weight is not model.conv1[0].weight  # prepare_qat copies (inplace=False)
    x = _rand(8, 3, 4, 4, seed=5)
    target = _rand(8, 3, seed=6, scale=0.3)
    opt = ember.optim.SGD(prepared.parameters(), lr=0.05)
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = ((prepared(x) - target) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    prepared.apply(nniqat.freeze_bn_stats)
    prepared.eval()
    with ember.no_grad():
        fake = prepared(x)
    converted = tq.convert(prepared)
    assert [type(getattr(converted, n[0])) for n in FUSE] == [nniq.ConvReLU2d, nnq.Conv2d, nniq.ConvReLU3d,
                                                               nnq.Linear, nniq.LinearReLU]
    # the BatchNorm folded into the quantized conv: its integers are the folded weight quantized with
    # the trained fake quantizer's per-channel parameters (after one more observation of the folded weight)
    qat = prepared.conv1
    folded = qat.to_float()[0]
    qconv = converted.conv1
    fq = copy.deepcopy(qat.weight_fake_quant)
    fq(folded.weight)
    scale, zp = fq.calculate_qparams()
    expected = ember.quantize_per_channel(folded.weight.detach(), scale.double(), zp.long(), 0, ember.qint8)
    np.testing.assert_array_equal(qconv.weight().int_repr().numpy(), expected.int_repr().numpy())
    np.testing.assert_allclose(qconv.bias().numpy(), folded.bias.detach().numpy(), rtol=1e-6)
    out_scale, out_zp = qat.activation_post_process.calculate_qparams()
    assert (qconv.scale, qconv.zero_point) == (float(out_scale), int(out_zp))
    assert converted.fc1.weight().qscheme() == ember.per_channel_affine
    out = converted(x)
    np.testing.assert_allclose(out.numpy(), fake.numpy(), atol=4 * float(converted.fc2.scale))


def test_prepare_qat_default_mapping_is_pytorchs():
    mapping = get_default_qat_module_mappings()
    assert mapping[nn.Conv3d] is nnqat.Conv3d and mapping[nni.LinearBn1d] is nniqat.LinearBn1d
    assert nn.Conv1d not in mapping and nni.ConvReLU1d not in mapping  # as PyTorch's
    assert tq.get_default_static_quant_module_mappings()[nniqat.ConvBnReLU1d] is nniq.ConvReLU1d
    model = nn.Sequential(nn.Conv1d(2, 2, 1), nn.Conv3d(2, 2, 1)).train()
    model.qconfig = QCONFIG
    prepared = tq.prepare_qat(model)
    assert type(prepared[0]) is nn.Conv1d and type(prepared[1]) is nnqat.Conv3d


class FxNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4)
        self.conv2, self.bn2 = nn.Conv2d(4, 4, 3, bias=False), nn.BatchNorm2d(4)
        self.conv3 = nn.Conv1d(4, 4, 1)
        self.fc1, self.bn3 = nn.Linear(16, 6), nn.BatchNorm1d(6)
        self.fc2 = nn.Linear(6, 3)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.bn2(self.conv2(x))
        x = F.relu(self.conv3(x.flatten(2)))
        x = self.bn3(self.fc1(x.flatten(1)))
        return F.relu(self.fc2(x))


def test_prepare_qat_fx_and_convert_fx():
    ember.manual_seed(9)
    model = FxNet().train()
    for bn in (model.bn1, model.bn2, model.bn3):
        _fill_bn(bn)
    x = _rand(8, 3, 4, 4, seed=3)
    prepared = prepare_qat_fx(model, tq.get_default_qat_qconfig_mapping("x86"), (x,))
    kinds = {n: type(getattr(prepared, n)) for n in ("conv1", "conv2", "conv3", "fc1", "fc2")}
    assert kinds == {"conv1": nniqat.ConvBnReLU2d, "conv2": nniqat.ConvBn2d, "conv3": nniqat.ConvReLU1d,
                     "fc1": nniqat.LinearBn1d, "fc2": nniqat.LinearReLU}
    assert not hasattr(prepared, "bn1")
    # before training, the fake-quantized forward follows the float model closely
    np.testing.assert_allclose(prepared(x).detach().numpy(), model(x).detach().numpy(), atol=0.1)
    opt = ember.optim.SGD(prepared.parameters(), lr=0.05)
    for _ in range(4):
        opt.zero_grad()
        loss = (prepared(x) ** 2).mean()
        loss.backward()
        opt.step()
    prepared.eval()
    with ember.no_grad():
        fake = prepared(x)
    converted = convert_fx(prepared)
    kinds = {n: type(getattr(converted, n)) for n in ("conv1", "conv2", "conv3", "fc1", "fc2")}
    assert kinds == {"conv1": nniq.ConvReLU2d, "conv2": nnq.Conv2d, "conv3": nniq.ConvReLU1d, "fc1": nnq.Linear,
                     "fc2": nniq.LinearReLU}
    np.testing.assert_allclose(converted(x).numpy(), fake.numpy(), atol=1e-6)


def test_convert_fx_leaves_unquantized_qat_modules_float():
    """A QAT module that is not lowered (its qconfig's activation dtype has no quantized kernel)
    becomes its float module, the BatchNorm folded in, as PyTorch's to_float."""
    ember.manual_seed(10)
    model = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3)).train()
    _fill_bn(model[1])
    qint8_act = tq.FakeQuantize.with_args(observer=tq.MovingAverageMinMaxObserver, quant_min=-128, quant_max=127,
                                         dtype=ember.qint8, qscheme=ember.per_tensor_symmetric)
    qconfig = tq.QConfig(activation=qint8_act, weight=tq.default_weight_fake_quant)
    x = _rand(2, 2, 3, 3)
    prepared = prepare_qat_fx(model, tq.QConfigMapping().set_global(qconfig), (x,))
    assert type(prepared.get_submodule("0")) is nniqat.ConvBn2d
    prepared(x)
    converted = convert_fx(prepared.eval())
    layer = converted.get_submodule("0")
    assert type(layer) is nn.Conv2d
    np.testing.assert_allclose(converted(x).detach().numpy(), model.eval()(x).detach().numpy(), rtol=1e-4, atol=1e-4)


# ---- errors ----------------------------------------------------------------------------------------------


def test_errors():
    with pytest.raises(AssertionError, match="qconfig must be provided for QAT module"):
        nniqat.ConvBn2d(2, 2, 1)
    with pytest.raises(AssertionError, match="qconfig must be provided for QAT module"):
        nniqat.LinearBn1d(2, 2)
    with pytest.raises(AssertionError, match="qconfig must be provided for QAT module"):
        nniqat.ConvReLU1d(2, 2, 1)
    conv, bn = nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3)
    with pytest.raises(AssertionError, match=r"qat.ConvBn2d.from_float only works for ConvBn2d"):
        nniqat.ConvBn2d.from_float(nni.ConvBnReLU2d(conv, bn, nn.ReLU()))
    with pytest.raises(AssertionError, match="Input float module must have qconfig defined"):
        nniqat.ConvBn2d.from_float(nni.ConvBn2d(conv, bn))
    fused = nni.ConvBn2d(conv, bn)
    fused.qconfig = None
    with pytest.raises(AssertionError, match="Input float module must have a valid qconfig"):
        nniqat.ConvBn2d.from_float(fused)
    lin = nni.LinearBn1d(nn.Linear(2, 3), nn.BatchNorm1d(3))
    lin.qconfig = None
    with pytest.raises(AssertionError, match="Input float module must have a valid config"):
        nniqat.LinearBn1d.from_float(lin)
    with pytest.raises(AssertionError, match="qat.LinearBn1d.from_float only works for LinearBn1d"):
        nniqat.LinearBn1d.from_float(nn.Linear(2, 3))
    with pytest.raises(AssertionError, match="qat.ConvReLU2d.from_float only works for ConvReLU2d, got Conv2d"):
        nniqat.ConvReLU2d.from_float(conv)
    with pytest.raises(AssertionError, match="Incorrect types for input modules"):
        nni.ConvBn2d(conv, nn.BatchNorm1d(3))
    with pytest.raises(AssertionError, match="Incorrect types for input modules"):
        nni.LinearBn1d(nn.Linear(2, 3), nn.BatchNorm2d(3))
    seq = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(4), nn.ReLU())
    with pytest.raises(AssertionError, match="Output channel of Conv2d must match num_features of BatchNorm2d"):
        fuse_modules_qat(seq, ["0", "1", "2"])
    with pytest.raises(AssertionError, match="Output features of Linear must match num_features of BatchNorm1d"):
        fuse_modules_qat(nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(4)), ["0", "1"])
    with pytest.raises(AssertionError, match="Only support fusing BatchNorm2d with affine set to True"):
        fuse_modules_qat(nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3, affine=False)), ["0", "1"])
    with pytest.raises(AssertionError, match="tracking_running_stats set to True"):
        fuse_modules_qat(nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3, track_running_stats=False)), ["0", "1"])
    mixed = nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm2d(3))
    mixed[1].eval()
    with pytest.raises(AssertionError, match="Conv and BN both must be in the same mode"):
        fuse_modules_qat(mixed, ["0", "1"])
    with pytest.raises(NotImplementedError, match="Cannot fuse modules"):
        fuse_modules_qat(nn.Sequential(nn.Conv2d(2, 3, 1), nn.BatchNorm3d(3)), ["0", "1"])
    m = nniqat.ConvBn2d(2, 2, 1, qconfig=QCONFIG)
    with pytest.raises(RuntimeError, match="to have 2 channels, but got 3 channels"):
        m(ember.randn(2, 3, 4, 4))
    with pytest.raises(RuntimeError, match=r"mat1 and mat2 shapes cannot be multiplied \(4x5 and 2x3\)"):
        nniqat.LinearBn1d(2, 3, qconfig=QCONFIG)(ember.randn(4, 5))
    with pytest.raises(AssertionError, match="prepare_qat only works on models in training mode"):
        tq.prepare_qat(fuse_modules_qat(_net(), FUSE).eval())
