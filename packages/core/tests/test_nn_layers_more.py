"""Activation, dropout, flatten and loss modules: forward against float64 NumPy references,
gradients by gradcheck, reprs in PyTorch's format, buffers in state dicts, argument errors."""

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck

RNG = np.random.default_rng(3)


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


def _erf(x):
    return np.vectorize(math.erf, otypes=[float])(x)


ACTIVATIONS = [
    (nn.ReLU(), lambda x: np.maximum(x, 0), "ReLU()"),
    (nn.ReLU6(), lambda x: np.clip(x, 0, 6), "ReLU6()"),
    (nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x), "LeakyReLU(negative_slope=0.2)"),
    (nn.ELU(0.5), lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)), "ELU(alpha=0.5)"),
    (nn.CELU(2.0), lambda x: np.maximum(x, 0) + np.minimum(0, 2.0 * np.expm1(x / 2.0)), "CELU(alpha=2.0)"),
    (nn.SELU(), lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(x)), "SELU()"),
    (nn.GELU(), lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), "GELU(approximate='none')"),
    (nn.GELU("tanh"), lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
     "GELU(approximate='tanh')"),
    (nn.SiLU(), lambda x: x * _sigmoid(x), "SiLU()"),
    (nn.Mish(), lambda x: x * np.tanh(np.log1p(np.exp(x))), "Mish()"),
    (nn.Sigmoid(), _sigmoid, "Sigmoid()"),
    (nn.Tanh(), np.tanh, "Tanh()"),
    (nn.Softplus(2.0, 1.0), lambda x: np.where(2 * x > 1.0, x, np.log1p(np.exp(2 * x)) / 2),
     "Softplus(beta=2.0, threshold=1.0)"),
    (nn.Hardtanh(-0.5, 0.25), lambda x: np.clip(x, -0.5, 0.25), "Hardtanh(min_val=-0.5, max_val=0.25)"),
    (nn.Hardswish(), lambda x: x * np.clip(x + 3, 0, 6) / 6, "Hardswish()"),
    (nn.Hardsigmoid(), lambda x: np.clip(x + 3, 0, 6) / 6, "Hardsigmoid()"),
    (nn.LogSigmoid(), lambda x: -np.log1p(np.exp(-x)), "LogSigmoid()"),
    (nn.Softsign(), lambda x: x / (1 + np.abs(x)), "Softsign()"),
    (nn.Tanhshrink(), lambda x: x - np.tanh(x), "Tanhshrink()"),
    (nn.Threshold(0.1, -2.0), lambda x: np.where(x > 0.1, x, -2.0), "Threshold(threshold=0.1, value=-2.0)"),
]


@pytest.mark.parametrize("module, reference, text", ACTIVATIONS, ids=[t for _, _, t in ACTIVATIONS])
@pytest.mark.parametrize("shape", [(3, 5), (), (0, 4)])
def test_activation_modules(module, reference, text, shape):
    x = RNG.normal(size=shape) * 3
    x = np.where(np.abs(x - 0.1) < 1e-3, 0.5, x)  # keep away from Threshold's kink
    out = module(ember.tensor(x))
    np.testing.assert_allclose(out.numpy(), reference(x), rtol=1e-10, atol=1e-12)
    assert repr(module) == text
    if shape == (3, 5):
        # Non-contiguous input: a transposed view gives the transposed result.
        np.testing.assert_allclose(module(ember.tensor(x).t()).numpy(), reference(x).T, rtol=1e-10, atol=1e-12)
        x_safe = np.where(np.abs(x) < 0.05, 0.5, x)  # gradcheck away from kinks at 0
        for kink in (-0.5, 0.25, 0.1, 6.0, -3.0, 3.0):
            x_safe = np.where(np.abs(x_safe - kink) < 0.05, kink + 0.3, x_safe)
        t = ember.tensor(x_safe, requires_grad=True)
        assert gradcheck(module, (t,))


def test_inplace_activations_write_their_input():
    x = ember.tensor([-1.0, 2.0])
    out = nn.ReLU(inplace=True)(x)
    assert out is x and x.tolist() == [0.0, 2.0]
    assert repr(nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(nn.LeakyReLU(inplace=True)) == "LeakyReLU(negative_slope=0.01, inplace=True)"
    y = ember.tensor([-8.0, 8.0])
    nn.Hardtanh(inplace=True)(y)
    assert y.tolist() == [-1.0, 1.0]
    with pytest.raises(ValueError, match=r"max_val \(0.0\) must be greater than min_val \(1.0\)"):
        nn.Hardtanh(1.0, 0.0)


def test_softmax_family():
    x = RNG.normal(size=(2, 3, 4))
    e = np.exp(x - x.max(1, keepdims=True))
    soft = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(nn.Softmax(dim=1)(ember.tensor(x)).numpy(), soft, rtol=1e-12)
    np.testing.assert_allclose(nn.LogSoftmax(dim=1)(ember.tensor(x)).numpy(), np.log(soft), rtol=1e-12)
    e = np.exp(-x - (-x).max(2, keepdims=True))
    np.testing.assert_allclose(nn.Softmin(dim=2)(ember.tensor(x)).numpy(), e / e.sum(2, keepdims=True), rtol=1e-12)
    assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)" and repr(nn.LogSoftmax()) == "LogSoftmax(dim=None)"


def test_dropout_train_and_eval():
    ember.manual_seed(0)
    x = ember.ones(200_000, dtype=ember.float64)
    drop = nn.Dropout(0.3)
    assert repr(drop) == "Dropout(p=0.3, inplace=False)"
    out = drop(x).numpy()
    assert set(np.unique(out)) <= {0.0, 1 / 0.7}
    assert abs((out == 0).mean() - 0.3) < 0.01
    drop.eval()
    assert drop(x) is x
    drop.train()
    w = ember.tensor(RNG.normal(size=(4, 5)), requires_grad=True)
    y = nn.Dropout(0.5)(w)
    y.sum().backward()
    kept = (y.detach() != 0).numpy()
    np.testing.assert_allclose(w.grad.numpy(), kept * 2.0)  # gradient flows only through kept units, scaled
    assert nn.Dropout(1.0)(ember.ones(3)).tolist() == [0.0, 0.0, 0.0]
    assert nn.Dropout(0.0)(ember.ones(3)).tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(ValueError, match=r"dropout probability has to be between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match=r"dropout probability has to be between 0 and 1, but got -0.1"):
        nn.functional.dropout(x, -0.1)


@pytest.mark.parametrize("cls, shape", [(nn.Dropout1d, (8, 16, 5)), (nn.Dropout2d, (8, 16, 3, 3)),
                                        (nn.Dropout3d, (8, 16, 2, 2, 2)), (nn.Dropout2d, (16, 3, 3))])
def test_channel_dropout_drops_whole_channels(cls, shape):
    ember.manual_seed(1)
    out = cls(0.5)(ember.ones(shape, dtype=ember.float64)).numpy()
    spatial = {nn.Dropout1d: 1, nn.Dropout2d: 2, nn.Dropout3d: 3}[cls]
    per_channel = out.reshape(math.prod(shape[:len(shape) - spatial]), -1)  # one row per (sample, channel)
    assert all(len(set(row)) == 1 for row in per_channel)  # all zero or all 2
    assert set(np.unique(out)) == {0.0, 2.0}
    with pytest.raises(RuntimeError, match=r"Expected \dD or \dD input, but received a 1D input"):
        cls(0.5)(ember.ones(3))


def test_alpha_dropout_keeps_the_selu_moments():
    ember.manual_seed(2)
    x = ember.randn(400_000, dtype=ember.float64)
    out = nn.AlphaDropout(0.2)(x).numpy()
    assert abs(out.mean()) < 0.01 and abs(out.std() - 1.0) < 0.01
    # Dropped units take the one value a * (-alpha') + b, with a, b from PyTorch's formula.
    alpha = 1.7580993408473766
    a = 1 / math.sqrt((alpha ** 2 * 0.2 + 1) * 0.8)
    dropped = -alpha * a + alpha * a * 0.2
    assert abs((np.isclose(out, dropped)).mean() - 0.2) < 0.01
    assert nn.AlphaDropout(0.2).eval()(x) is x
    feat = nn.FeatureAlphaDropout(0.5)(ember.ones(4, 6, 3, dtype=ember.float64)).numpy()
    assert all(len(set(row)) == 1 for row in feat.reshape(24, 3))


def test_flatten_and_unflatten():
    x = ember.arange(24.0).reshape(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12) and nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(1, (2, 6))(nn.Flatten()(x)).tolist() == x.reshape(2, 2, 6).tolist()
    assert repr(nn.Unflatten(1, (2, 6))) == "Unflatten(dim=1, unflattened_size=(2, 6))"
    with pytest.raises(TypeError, match=r"unflattened_size must be tuple of ints, but found type str"):
        nn.Unflatten(1, "26")


def test_loss_modules_match_functional_with_their_options():
    F = nn.functional
    x = ember.tensor(RNG.normal(size=(5, 4)))
    y = ember.tensor(RNG.normal(size=(5, 4)))
    labels = ember.tensor([0, 3, 1, 1, 2])
    probs = ember.tensor(RNG.uniform(0.1, 0.9, size=(5, 4)))
    targets01 = ember.tensor((RNG.uniform(size=(5, 4)) > 0.5).astype(np.float64))
    weight = ember.tensor([1.0, 2.0, 0.5, 1.5], dtype=ember.float64)
    sign = ember.tensor([1.0, -1.0, 1.0, -1.0, 1.0])
    cases = [
        (nn.L1Loss(reduction="sum"), (x, y), F.l1_loss(x, y, reduction="sum")),
        (nn.MSELoss(size_average=False), (x, y), F.mse_loss(x, y, reduction="sum")),
        (nn.CrossEntropyLoss(weight=weight, label_smoothing=0.1), (x, labels),
         F.cross_entropy(x, labels, weight=weight, label_smoothing=0.1)),
        (nn.NLLLoss(ignore_index=1), (x.log_softmax(1), labels), F.nll_loss(x.log_softmax(1), labels, ignore_index=1)),
        (nn.BCELoss(reduction="none"), (probs, targets01), F.binary_cross_entropy(probs, targets01, reduction="none")),
        (nn.BCEWithLogitsLoss(pos_weight=weight), (x, targets01),
         F.binary_cross_entropy_with_logits(x, targets01, pos_weight=weight)),
        (nn.HuberLoss(delta=0.5), (x, y), F.huber_loss(x, y, delta=0.5)),
        (nn.SmoothL1Loss(beta=0.5), (x, y), F.smooth_l1_loss(x, y, beta=0.5)),
        (nn.KLDivLoss(reduction="batchmean", log_target=True), (x, y),
         F.kl_div(x, y, reduction="batchmean", log_target=True)),
        (nn.PoissonNLLLoss(full=True), (x, probs), F.poisson_nll_loss(x, probs, full=True)),
        (nn.GaussianNLLLoss(full=True), (x, y, probs), F.gaussian_nll_loss(x, y, probs, full=True)),
        (nn.MarginRankingLoss(0.2), (x[:, 0], y[:, 0], sign), F.margin_ranking_loss(x[:, 0], y[:, 0], sign, 0.2)),
        (nn.HingeEmbeddingLoss(), (x[:, 0], sign), F.hinge_embedding_loss(x[:, 0], sign, margin=1.0)),
        (nn.SoftMarginLoss(), (x, targets01 * 2 - 1), F.soft_margin_loss(x, targets01 * 2 - 1)),
        (nn.MultiLabelSoftMarginLoss(weight=weight), (x, targets01),
         F.multilabel_soft_margin_loss(x, targets01, weight=weight)),
        (nn.CosineEmbeddingLoss(0.1), (x, y, sign), F.cosine_embedding_loss(x, y, sign, margin=0.1)),
        (nn.TripletMarginLoss(margin=0.5, p=1.0, swap=True), (x, y, probs),
         F.triplet_margin_loss(x, y, probs, margin=0.5, p=1.0, swap=True)),
        (nn.MultiMarginLoss(p=2, margin=0.5), (x, labels), F.multi_margin_loss(x, labels, p=2, margin=0.5)),
    ]
    for module, args, expected in cases:
        np.testing.assert_allclose(module(*args).numpy(), expected.numpy(), rtol=1e-12, err_msg=repr(module))
    assert repr(nn.CrossEntropyLoss()) == "CrossEntropyLoss()"
    ce = nn.CrossEntropyLoss(weight=weight)
    assert list(ce.state_dict()) == ["weight"] and list(nn.MSELoss().state_dict()) == []
    with pytest.raises(ValueError, match=r"elementwise is not a valid value for reduction"):
        nn.MSELoss(reduction="elementwise")(x, y)
    with pytest.raises(ValueError, match=r"only p == 1 and p == 2 supported"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(ValueError, match=r"TripletMarginLoss: expected margin to be greater than 0, got 0"):
        nn.TripletMarginLoss(margin=0)
