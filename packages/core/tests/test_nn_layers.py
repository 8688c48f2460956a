"""nn.Linear, nn.Identity and nn.BatchNorm1d/2d/3d: forward and gradients against float64
references, running statistics (momentum and cumulative), train/eval, state_dict round trips,
reprs as PyTorch prints them, and the functional_call example of the PyTorch 1.12 release."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck

RNG = np.random.default_rng(29)


def t(a, requires_grad=False):
    return ember.tensor(np.asarray(a, dtype=np.float64), dtype=ember.float64, requires_grad=requires_grad)


def close(got, want, tol=1e-12):
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), want, rtol=tol, atol=tol)


def test_linear_forward_backward_and_init():
    ember.manual_seed(0)
    layer = nn.Linear(4, 3, dtype=ember.float64)
    w, b = layer.weight.detach().numpy(), layer.bias.detach().numpy()
    bound = 1 / np.sqrt(4)
    assert np.all(np.abs(w) <= bound) and np.all(np.abs(b) <= bound) and np.std(w) > 0
    x = RNG.standard_normal((5, 2, 4))
    out = layer(t(x))
    close(out, x @ w.T + b)
    out.sum().backward()
    close(layer.weight.grad, np.ones((5 * 2, 3)).T @ x.reshape(-1, 4))
    close(layer.bias.grad, np.full(3, 10.0))
    assert gradcheck(lambda inp: layer(inp), (t(x, True),))
    no_bias = nn.Linear(4, 3, bias=False)
    assert no_bias.bias is None and [n for n, _ in no_bias.named_parameters()] == ["weight"]
    close(nn.Identity(54, unused="x")(t(x)), x)  # takes and ignores any arguments
    assert repr(layer) == "Linear(in_features=4, out_features=3, bias=True)"
    assert repr(no_bias) == "Linear(in_features=4, out_features=3, bias=False)"


def _bn_ref(x, mean, var, w, b, eps=1e-5):
    shape = [1, x.shape[1]] + [1] * (x.ndim - 2)
    return (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps) * w.reshape(shape) + b.reshape(shape)


def test_batchnorm_running_statistics_and_modes():
    bn = nn.BatchNorm1d(3, dtype=ember.float64)
    assert repr(bn) == "BatchNorm1d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    xs = [RNG.standard_normal((6, 3)) * 3 + 1 for _ in range(2)]
    mean, var = np.zeros(3), np.ones(3)
    for x in xs:
        out = bn(t(x))
        close(out, _bn_ref(x, x.mean(0), x.var(0), np.ones(3), np.zeros(3)), tol=1e-10)
        mean = 0.9 * mean + 0.1 * x.mean(0)
        var = 0.9 * var + 0.1 * x.var(0, ddof=1)
    close(bn.running_mean, mean)
    close(bn.running_var, var)
    assert bn.num_batches_tracked.item() == 2
    bn.eval()
    x = RNG.standard_normal((4, 3, 5))
    close(bn(t(x)), _bn_ref(x, mean, var, np.ones(3), np.zeros(3)), tol=1e-10)
    cumulative = nn.BatchNorm1d(3, momentum=None, dtype=ember.float64)
    for x in xs:
        cumulative(t(x))
    close(cumulative.running_mean, np.mean([x.mean(0) for x in xs], axis=0))
    untracked = nn.BatchNorm2d(3, track_running_stats=False, affine=False, dtype=ember.float64)
    assert untracked.running_mean is None and list(untracked.state_dict()) == []
    x4 = RNG.standard_normal((2, 3, 2, 2))
    untracked.eval()  # no running statistics: batch statistics even in eval
    close(untracked(t(x4)), _bn_ref(x4, x4.mean((0, 2, 3)), x4.var((0, 2, 3)), np.ones(3), np.zeros(3)), tol=1e-10)
    with pytest.raises(ValueError, match=r"expected 2D or 3D input \(got 4D input\)"):
        bn(t(x4))
    with pytest.raises(ValueError, match=r"expected 4D input \(got 2D input\)"):
        untracked(t(xs[0]))
    assert set(bn.state_dict()) == {"weight", "bias", "running_mean", "running_var", "num_batches_tracked"}
    fresh = nn.BatchNorm1d(3, dtype=ember.float64)
    fresh.load_state_dict(bn.state_dict())
    close(fresh.running_var, var)


def test_functional_call_example_of_the_1_12_release():
    """Linear-BatchNorm1d-Linear with fc1's weight and bias and bn's running_mean replaced: the
    output equals the computation written out by hand, gradients reach the replacements, the
    replaced running_mean is updated in place, and the module's own replaced tensors are
    untouched (its running_var, not replaced, is updated as in PyTorch)."""
    from ember.nn.utils.stateless import functional_call

    class MyModule(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(3, 3)
            self.bn = nn.BatchNorm1d(3)
            self.fc2 = nn.Linear(3, 3)

        def forward(self, x):
            return self.fc2(self.bn(self.fc1(x)))

    ember.manual_seed(0)
    m = MyModule()
    my_weight = ember.randn([3, 3]).requires_grad_()
    my_bias = ember.tensor([1.0, 2.0, 3.0], requires_grad=True)
    my_running_mean = ember.randn([3])
    start_mean = my_running_mean.numpy().copy()
    params_and_buffers = {"fc1.weight": my_weight, "fc1.bias": my_bias, "bn.running_mean": my_running_mean}
    inp = ember.randn([5, 3])
    own = {k: v.detach().numpy().copy() for k, v in m.state_dict().items()}
    output = functional_call(m, params_and_buffers, inp)

    x, w1, b1 = inp.numpy().astype(np.float64), my_weight.detach().numpy(), my_bias.detach().numpy()
    h = x @ w1.T + b1
    hn = (h - h.mean(0)) / np.sqrt(h.var(0) + 1e-5)  # training mode: batch statistics
    want = hn @ own["fc2.weight"].T.astype(np.float64) + own["fc2.bias"]
    np.testing.assert_allclose(output.detach().numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(my_running_mean.numpy(), 0.9 * start_mean + 0.1 * h.mean(0), rtol=1e-5, atol=1e-6)
    for name, value in m.state_dict().items():
        if name not in ("bn.num_batches_tracked", "bn.running_var"):
            np.testing.assert_array_equal(value.numpy(), own[name])  # the replaced and unused ones are untouched
    # the module's own running_var (not replaced) was updated by the forward pass, as in PyTorch
    np.testing.assert_allclose(m.bn.running_var.numpy(), 0.9 + 0.1 * h.var(0, ddof=1), rtol=1e-5)
    output.sum().backward()
    g_hn = np.ones((5, 3)) @ own["fc2.weight"].astype(np.float64)  # d sum / d hn
    std = np.sqrt(h.var(0) + 1e-5)
    g_h = (g_hn - g_hn.mean(0) - hn * (g_hn * hn).mean(0)) / std
    np.testing.assert_allclose(my_bias.grad.numpy(), g_h.sum(0), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(my_weight.grad.numpy(), g_h.T @ x, rtol=1e-4, atol=1e-5)
    assert m.fc1.weight.grad is None  # the replaced parameter took no gradient
    assert m.fc2.weight.grad is not None  # fc2 used the module's own
