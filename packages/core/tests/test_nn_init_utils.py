"""ember.nn.init against torch.nn.init's formulas (float64 references, exact where the result is
deterministic, moments on large draws otherwise) and ember.nn.utils' clipping and conversion."""

import math

import numpy as np
import pytest

import ember
from ember import nn
from ember.nn import init
from ember.nn.utils import (
    clip_grad_norm_,
    clip_grad_value_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)


def test_calculate_gain():
    for name in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose2d", "sigmoid"):
        assert init.calculate_gain(name) == 1.0
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("leaky_relu") == pytest.approx(math.sqrt(2 / (1 + 0.01 ** 2)))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(math.sqrt(2 / 1.04))
    assert init.calculate_gain("selu") == 0.75
    with pytest.raises(ValueError, match=r"Unsupported nonlinearity gelu"):
        init.calculate_gain("gelu")
    with pytest.raises(ValueError, match=r"negative_slope x not a valid number"):
        init.calculate_gain("leaky_relu", "x")


def _draw(fn, shape, *args, seed=0, **kwargs):
    t = ember.zeros(shape, dtype=ember.float64)
    return fn(t, *args, generator=ember.Generator().manual_seed(seed), **kwargs)


def test_random_initializers_follow_their_distributions():
    u = _draw(init.uniform_, [200_000], -2.0, 3.0).numpy()
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.02
    n = _draw(init.normal_, [200_000], 1.0, 2.0).numpy()
    assert abs(n.mean() - 1.0) < 0.02 and abs(n.std() - 2.0) < 0.02
    # The same generator seed gives the same values; a different one does not.
    a, b = _draw(init.normal_, [50], seed=4), _draw(init.normal_, [50], seed=4)
    assert a.tolist() == b.tolist() and a.tolist() != _draw(init.normal_, [50], seed=5).tolist()

    lo, hi, mean, std = -0.5, 2.0, 0.3, 0.8
    t = _draw(init.trunc_normal_, [200_000], mean, std, lo, hi).numpy()
    alpha, beta = (lo - mean) / std, (hi - mean) / std
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    expected_mean = mean + std * (phi(alpha) - phi(beta)) / z
    expected_var = std ** 2 * (1 + (alpha * phi(alpha) - beta * phi(beta)) / z - ((phi(alpha) - phi(beta)) / z) ** 2)
    assert t.min() >= lo and t.max() <= hi
    assert abs(t.mean() - expected_mean) < 0.01 and abs(t.std() - math.sqrt(expected_var)) < 0.01


@pytest.mark.parametrize("shape, fan_in, fan_out", [([300, 200], 200, 300), ([64, 16, 3, 5], 240, 960),
                                                    ([32, 8, 7], 56, 224)])
def test_xavier_and_kaiming_scales(shape, fan_in, fan_out):
    bound = 1.5 * math.sqrt(6 / (fan_in + fan_out))
    x = _draw(init.xavier_uniform_, shape, gain=1.5).numpy()
    assert np.abs(x).max() <= bound and np.abs(x).max() > 0.99 * bound
    assert abs(x.std() - bound / math.sqrt(3)) < 0.03 * bound
    x = _draw(init.xavier_normal_, shape).numpy()
    assert abs(x.std() / math.sqrt(2 / (fan_in + fan_out)) - 1) < 0.03

    gain = math.sqrt(2 / (1 + 0.2 ** 2))
    k = _draw(init.kaiming_uniform_, shape, a=0.2, mode="fan_out").numpy()
    k_bound = gain * math.sqrt(3 / fan_out)
    assert np.abs(k).max() <= k_bound and np.abs(k).max() > 0.99 * k_bound
    k = _draw(init.kaiming_normal_, shape, nonlinearity="relu").numpy()
    assert abs(k.std() / (math.sqrt(2) / math.sqrt(fan_in)) - 1) < 0.03


def test_fan_errors_and_empty_tensors():
    with pytest.raises(ValueError, match=r"Fan in and fan out can not be computed for tensor with fewer than 2 dim"):
        init.xavier_uniform_(ember.zeros(5))
    with pytest.raises(ValueError, match=r"Mode fan_avg not supported, please use one of fan_in, fan_out"):
        init.kaiming_uniform_(ember.zeros(2, 2), mode="fan_avg")
    empty = ember.zeros(0, 3)
    assert init.kaiming_normal_(empty) is empty and empty.shape == (0, 3)


@pytest.mark.parametrize("shape", [[6, 4], [4, 6], [5, 5], [8, 2, 3, 3], [3, 1]])
def test_orthogonal_matches_a_float64_qr(shape):
    rows, cols = shape[0], math.prod(shape[1:])
    out = _draw(init.orthogonal_, shape, gain=0.5, seed=7)
    draw = ember.zeros([rows, cols], dtype=ember.float64).normal_(0.0, 1.0, generator=ember.Generator().manual_seed(7))
    a = draw.numpy() if rows >= cols else draw.numpy().T
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diag(r))
    expected = 0.5 * (q if rows >= cols else q.T)
    np.testing.assert_allclose(out.numpy().reshape(rows, cols), expected, atol=1e-12)
    with pytest.raises(ValueError, match=r"Only tensors with 2 or more dimensions are supported"):
        init.orthogonal_(ember.zeros(3))


def test_deterministic_initializers():
    assert init.constant_(ember.zeros(2, 2), 0.25).tolist() == [[0.25, 0.25], [0.25, 0.25]]
    assert init.ones_(ember.zeros(3)).tolist() == [1, 1, 1]
    assert init.zeros_(ember.ones(2)).tolist() == [0, 0]
    np.testing.assert_array_equal(init.eye_(ember.ones(2, 3)).numpy(), np.eye(2, 3))
    with pytest.raises(ValueError, match=r"Only tensors with 2 dimensions are supported"):
        init.eye_(ember.ones(2, 2, 2))

    w = init.dirac_(ember.ones(4, 3, 3, 5), groups=2)
    expected = np.zeros((4, 3, 3, 5))
    for g in range(2):
        for d in range(2):
            expected[g * 2 + d, d, 1, 2] = 1
    np.testing.assert_array_equal(w.numpy(), expected)
    # A Dirac kernel makes the convolution the identity on the kept channels.
    x = ember.randn(1, 3, 7)
    kernel = init.dirac_(ember.zeros(3, 3, 3))
    np.testing.assert_allclose(nn.functional.conv1d(x, kernel, padding=1).numpy(), x.numpy(), atol=1e-6)
    with pytest.raises(ValueError, match=r"dim 0 must be divisible by groups"):
        init.dirac_(ember.zeros(3, 3, 3), groups=2)
    with pytest.raises(ValueError, match=r"Only tensors with 3, 4, or 5 dimensions are supported"):
        init.dirac_(ember.zeros(3, 3))

    s = _draw(init.sparse_, [10, 6], 0.25, std=0.5)
    assert ((s == 0).sum(0) == 3).all().item()  # ceil(0.25 * 10) zeros in every column


def test_initializers_do_not_record_history():
    p = nn.Parameter(ember.zeros(3, 4))
    for fn in (init.xavier_uniform_, init.kaiming_normal_, init.orthogonal_, init.trunc_normal_, init.ones_):
        assert fn(p) is p and p.grad_fn is None and p.requires_grad


def _params_with_grads(grads):
    params = []
    for g in grads:
        p = nn.Parameter(ember.zeros(np.shape(g), dtype=ember.float64))
        p.grad = ember.tensor(g, dtype=ember.float64) if g is not None else None
        params.append(p)
    return params


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 0.5, 3, math.inf, -math.inf])
def test_clip_grad_norm_matches_a_float64_reference(norm_type):
    rng = np.random.default_rng(1)
    grads = [rng.normal(size=(3, 4)), rng.normal(size=5), rng.normal(size=())]
    params = _params_with_grads(grads) + [nn.Parameter(ember.zeros(2))]  # one without a grad
    flat = np.concatenate([g.ravel() for g in grads])
    if math.isinf(norm_type):
        expected = np.abs(flat).max() if norm_type > 0 else np.abs(flat).min()
    else:
        expected = (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    max_norm = expected / 4
    total = clip_grad_norm_(params, max_norm, norm_type=norm_type)
    assert total.item() == pytest.approx(expected, rel=1e-12)
    coef = max_norm / (expected + 1e-6)
    for p, g in zip(params, grads, strict=False):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-12)
    # Under the limit nothing changes.
    before = [p.grad.clone() for p in params[:3]]
    clip_grad_norm_(params, 1e9, norm_type=norm_type)
    assert all(p.grad.tolist() == b.tolist() for p, b in zip(params, before, strict=False))


def test_clip_grad_edge_cases():
    assert clip_grad_norm_([nn.Parameter(ember.zeros(2))], 1.0).item() == 0.0  # no grads at all
    single = _params_with_grads([[3.0, 4.0]])[0]
    assert clip_grad_norm_(single, 1.0).item() == 5.0  # a lone tensor is accepted
    np.testing.assert_allclose(single.grad.numpy(), [3 / (5 + 1e-6), 4 / (5 + 1e-6)])
    bad = _params_with_grads([[float("inf"), 1.0]])
    with pytest.raises(RuntimeError, match=r"The total norm of order 2.0 for gradients from `parameters` is non-finite"):
        clip_grad_norm_(bad, 1.0, error_if_nonfinite=True)
    assert get_total_norm([ember.tensor([3.0]), ember.tensor([4.0])]).item() == 5.0

    params = _params_with_grads([[-3.0, 0.5, 2.0], [[7.0]]])
    clip_grad_value_(params, 1.0)
    assert params[0].grad.tolist() == [-1.0, 0.5, 1.0] and params[1].grad.tolist() == [[1.0]]


def test_parameters_and_vectors():
    model = nn.Linear(3, 2, dtype=ember.float64)
    vec = parameters_to_vector(model.parameters())
    assert vec.shape == (8,)
    np.testing.assert_array_equal(vec[:6].detach().numpy(), model.weight.detach().numpy().ravel())
    vec.sum().backward()  # differentiable: every parameter gets a gradient of ones
    assert model.weight.grad.tolist() == [[1.0] * 3] * 2 and model.bias.grad.tolist() == [1.0, 1.0]

    vector_to_parameters(ember.arange(8, dtype=ember.float64), model.parameters())
    assert model.weight.tolist() == [[0, 1, 2], [3, 4, 5]] and model.bias.tolist() == [6, 7]
    assert model.weight.grad_fn is None
    with pytest.raises(TypeError, match=r"expected torch.Tensor, but got: list"):
        vector_to_parameters([1.0] * 8, model.parameters())
    with pytest.raises(ValueError, match=r"expected a 1-D vector of 8 elements for the parameters, but got shape \[9\]"):
        vector_to_parameters(ember.zeros(9, dtype=ember.float64), model.parameters())
