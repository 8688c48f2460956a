"""The vmap-based pieces of autograd: grad(is_grads_batched=True), gradcheck's batched checks,
and custom Functions under vmap (a vmap staticmethod, or generate_vmap_rule=True)."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import Function, grad, gradcheck
from ember.func import grad as fgrad
from ember.func import vmap

RNG = np.random.default_rng(41)


def t(a, requires_grad=False):
    return ember.tensor(np.asarray(a, dtype=np.float64), dtype=ember.float64, requires_grad=requires_grad)


def test_grad_with_batched_grad_outputs():
    x = t(RNG.standard_normal((2, 3)), True)
    w = t(RNG.standard_normal(3), True)
    y = (x * w).sin()
    seeds = t(RNG.standard_normal((4, 2, 3)))
    gx, gw = grad(y, (x, w), seeds, is_grads_batched=True, retain_graph=True)
    assert gx.shape == (4, 2, 3) and gw.shape == (4, 3)
    for b in range(4):
        ex, ew = grad(y, (x, w), seeds[b], retain_graph=True)
        np.testing.assert_allclose(gx[b].numpy(), ex.numpy(), rtol=1e-12)
        np.testing.assert_allclose(gw[b].numpy(), ew.numpy(), rtol=1e-12)
    # the rows of an identity give the whole Jacobian in one call
    z = t([1.0, 2.0, 3.0], True)
    (jac,) = grad(z ** 2, z, ember.eye(3, dtype=ember.float64), is_grads_batched=True)
    np.testing.assert_allclose(jac.numpy(), np.diag([2.0, 4.0, 6.0]))
    unused = t([1.0], True)
    with pytest.raises(RuntimeError, match=r"appears to not have been used in the graph"):
        grad(z * 2, (z, unused), ember.ones(2, 3, dtype=ember.float64), is_grads_batched=True)
    assert grad(z * 2, (z, unused), ember.ones(2, 3, dtype=ember.float64), is_grads_batched=True,
                allow_unused=True)[1] is None
    with pytest.raises(RuntimeError, match=r"mismatch was detected: grad_output\[0\] has a shape of \[2, 4\]"):
        grad(z * 2, z, ember.ones(2, 4, dtype=ember.float64), is_grads_batched=True)


def test_gradcheck_batched_checks():
    x = t(RNG.standard_normal((2, 2)), True)
    assert gradcheck(lambda a: (a @ a).exp(), (x,), check_batched_grad=True, check_batched_forward_grad=True,
                     check_forward_ad=True)

    assert gradcheck(lambda a, b: ember.linalg.solve(a + 3 * ember.eye(2, dtype=ember.float64), b), (x, x),
                     check_batched_grad=True, check_batched_forward_grad=True)


class NumpyStyleSquare(Function):
    """Squares its input; its vmap staticmethod moves the batch to dim 0 and calls apply on the
    whole batch (PyTorch's documented pattern)."""

    @staticmethod
    def forward(x):
        return x * x

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2 * x * g

    @staticmethod
    def jvp(ctx, tx):
        (x,) = ctx.saved_tensors
        return 2 * x * tx

    @staticmethod
    def vmap(info, in_dims, x):
        NumpyStyleSquare.seen.append((info.batch_size, info.randomness, in_dims))
        return NumpyStyleSquare.apply(x), 0

    seen: list = []


def test_function_with_a_vmap_staticmethod():
    NumpyStyleSquare.seen = []
    x = t(RNG.standard_normal((4, 3)))
    out = vmap(NumpyStyleSquare.apply)(x)
    np.testing.assert_allclose(out.numpy(), x.numpy() ** 2)
    assert NumpyStyleSquare.seen == [(4, "error", (0,))]
    g = vmap(fgrad(lambda v: NumpyStyleSquare.apply(v).sum()))(x)  # per-sample gradients through it
    np.testing.assert_allclose(g.numpy(), 2 * x.numpy())
    xt = t(RNG.standard_normal((3, 4)), True)
    vmap(NumpyStyleSquare.apply, in_dims=1, randomness="different")(xt).sum().backward()  # grad through vmap
    np.testing.assert_allclose(xt.grad.numpy(), 2 * xt.detach().numpy())
    assert NumpyStyleSquare.seen[-1] == (4, "different", (0,))
    nested = vmap(vmap(NumpyStyleSquare.apply))(t(RNG.standard_normal((2, 3, 2))))
    assert nested.shape == (2, 3, 2)

    class Shift(Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g, g

        @staticmethod
        def vmap(info, in_dims, x, y):  # x's batch is dim 0; an unbatched y broadcasts against it
            return x + y, 0

    y = t([10.0, 20.0, 30.0])
    np.testing.assert_allclose(vmap(Shift.apply, in_dims=(0, None))(x, y).numpy(), x.numpy() + y.numpy())

    class Constant(Function):  # out_dims None: the same output for every element
        @staticmethod
        def forward(ctx, x):
            return x.sum() * 0 + 1

        @staticmethod
        def backward(ctx, g):
            return g * 0

        @staticmethod
        def vmap(info, in_dims, x):
            return ember.ones(3, dtype=ember.float64), None

    assert vmap(Constant.apply)(x).tolist() == [[1.0] * 3] * 4


def test_function_with_generate_vmap_rule_and_the_error_without_either():
    class Cube(Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0])

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 3 * x * x * g

        @staticmethod
        def jvp(ctx, tx):
            (x,) = ctx.saved_tensors
            return 3 * x * x * tx

    x = t(RNG.standard_normal((4, 3)))
    np.testing.assert_allclose(vmap(Cube.apply)(x).numpy(), x.numpy() ** 3)
    g = vmap(fgrad(lambda v: Cube.apply(v).sum()))(x)
    np.testing.assert_allclose(g.numpy(), 3 * x.numpy() ** 2)
    from ember.func import jvp
    _, tangent = vmap(lambda v: jvp(Cube.apply, (v,), (ember.ones_like(v),)))(x)
    np.testing.assert_allclose(tangent.numpy(), 3 * x.numpy() ** 2)

    class Plain(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises(RuntimeError, match=r"To use autograd.Function with vmap, you must either override the vmap "
                                           r"staticmethod or set generate_vmap_rule=True\."):
        vmap(Plain.apply)(x)
    assert Plain.apply(t([1.0])).tolist() == [2.0]  # outside vmap nothing changes
