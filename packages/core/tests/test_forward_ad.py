"""Forward-mode AD: dual levels, make_dual/unpack_dual, in-place ops, custom Function.jvp,
reverse over forward, and ember.func's jvp, jacfwd and hessian. (Every op's JVP is checked
against finite differences by gradcheck(check_forward_ad=True) in test_autograd.py.)"""

import numpy as np
import pytest

import ember
import ember.autograd.forward_ad as fwAD
from ember import func

RNG = np.random.default_rng(5)


def t64(a):
    return ember.tensor(np.asarray(a, dtype=np.float64))


def test_the_issue_example_in_forward_mode():
    x = t64([0.5, 0.75])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t64([1.0, 0.0]))
        y = ember.log(d[0] * d[1]) * ember.sin(d[1])
        primal, tangent = fwAD.unpack_dual(y)
    assert round(tangent.item(), 4) == 1.3633  # d y / d x0, as backward gives
    assert primal.item() == pytest.approx(float(np.log(0.5 * 0.75) * np.sin(0.75)))


def test_levels_drop_tangents_and_do_not_nest():
    x, t = t64([1.0, 2.0]), t64([0.5, -1.0])
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, t)
        assert fwAD.unpack_dual(d).tangent.tolist() == [0.5, -1.0]
        assert fwAD.unpack_dual(x).tangent is None  # the primal itself is untouched
        with pytest.raises(NotImplementedError, match=r"Nested forward mode AD is not supported"):
            fwAD.enter_dual_level()
    assert fwAD.unpack_dual(d).tangent is None
    assert fwAD.unpack_dual(ember.exp(d)).tangent is None  # outside a level ops compute no tangent


def test_make_dual_errors():
    x = t64([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"inside a dual level"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(ValueError, match=r"different size than that of the original Tensor"):
            fwAD.make_dual(x, t64([1.0]))
        with pytest.raises(TypeError, match=r"same dtype as the primal"):
            fwAD.make_dual(x, ember.ones(2))
        with pytest.raises(TypeError, match=r"Expected primal to be floating point or complex"):
            fwAD.make_dual(ember.tensor([1, 2]), ember.tensor([1, 2]))
        with pytest.raises(TypeError, match=r"expects two Tensors"):
            fwAD.make_dual(x, [1.0, 2.0])


def test_in_place_ops_update_the_tangent():
    p, t = t64([1.0, 2.0, 3.0]), t64([1.0, 1.0, 1.0])
    with fwAD.dual_level():
        x = fwAD.make_dual(p.clone(), t)
        x.mul_(x)  # d(x*x) = 2 x t
        assert fwAD.unpack_dual(x).tangent.tolist() == [2.0, 4.0, 6.0]
        y = ember.zeros(3, dtype=ember.float64)
        y.add_(fwAD.make_dual(p, t64([0.0, 1.0, 2.0])), alpha=3)  # a plain tensor takes the other's tangent
        assert fwAD.unpack_dual(y).tangent.tolist() == [0.0, 3.0, 6.0]
        y.fill_(1.0)
        assert fwAD.unpack_dual(y).tangent.tolist() == [0.0, 0.0, 0.0]


def test_unsupported_uses_raise():
    p = t64([3.0, 1.0, 3.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(p, t64([1.0, 1.0, 1.0]))
        with pytest.raises(NotImplementedError, match=r"Trying to use forward AD with unique"):
            ember.unique(d)
        with pytest.raises(RuntimeError, match=r"out=... arguments don't support forward-mode"):
            ember.exp(d, out=ember.empty(3, dtype=ember.float64))
        assert ember.gt(d, 2.0).tolist() == [True, False, True]  # bool results need no tangent
        assert ember.argmax(d).item() == 0


def test_reverse_over_forward():
    """A tangent that requires grad gives a differentiable JVP (d/dt of J t is J)."""
    p = t64([0.3, 1.1])
    t = t64([1.0, 2.0]).requires_grad_()
    with fwAD.dual_level():
        y = ember.sin(fwAD.make_dual(p, t)) * 2.0
        jvp = fwAD.unpack_dual(y).tangent
    (g,) = ember.autograd.grad(jvp.sum(), t)
    np.testing.assert_allclose(g.numpy(), 2.0 * np.cos([0.3, 1.1]))


class Cube(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3.0 * x * x

    @staticmethod
    def jvp(ctx, t):
        (x,) = ctx.saved_tensors
        return t * 3.0 * x * x


class NoJvp(ember.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, g):
        return g * 2.0


def test_custom_function_jvp():
    p = t64([1.0, -2.0])
    with fwAD.dual_level():
        y = Cube.apply(fwAD.make_dual(p, t64([1.0, 0.5])))
        assert fwAD.unpack_dual(y).tangent.tolist() == [3.0, 6.0]
        with pytest.raises(NotImplementedError, match=r"You must implement the jvp function"):
            NoJvp.apply(fwAD.make_dual(p, p))
    assert ember.autograd.gradcheck(Cube.apply, (t64([0.4, -1.2]).requires_grad_(),), check_forward_ad=True)


def test_func_jvp_and_jacfwd():
    def f(x, y):
        return ember.sin(x) * y, (x * y).sum()

    x, y = t64(RNG.uniform(-1, 1, 3)), t64(RNG.uniform(-1, 1, 3))
    tx, ty = t64(RNG.uniform(-1, 1, 3)), t64(RNG.uniform(-1, 1, 3))
    (out, total), (d_out, d_total) = func.jvp(f, (x, y), (tx, ty))
    np.testing.assert_allclose(out.numpy(), np.sin(x.numpy()) * y.numpy())
    np.testing.assert_allclose(d_out.numpy(), np.cos(x.numpy()) * y.numpy() * tx.numpy()
                               + np.sin(x.numpy()) * ty.numpy())
    assert d_total.item() == pytest.approx(float((tx.numpy() * y.numpy() + x.numpy() * ty.numpy()).sum()))
    jf = func.jacfwd(f, argnums=(0, 1))(x, y)
    jr = func.jacrev(f, argnums=(0, 1))(x, y)
    for a, b in zip([jf[0][0], jf[0][1], jf[1][0], jf[1][1]], [jr[0][0], jr[0][1], jr[1][0], jr[1][1]], strict=True):
        assert list(a.shape) == list(b.shape)
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    # non-contiguous, 0-dim and zero-size inputs
    xt = t64(RNG.uniform(-1, 1, (3, 2))).t()
    np.testing.assert_allclose(func.jacfwd(ember.exp)(xt).numpy(), func.jacrev(ember.exp)(xt).numpy())
    assert func.jacfwd(ember.sin)(t64(0.5)).item() == pytest.approx(np.cos(0.5))
    assert list(func.jacfwd(ember.sin)(ember.zeros(0, 2, dtype=ember.float64)).shape) == [0, 2, 0, 2]
    out, tangent, aux = func.jvp(lambda v: (v * 2.0, "aux"), (x,), (tx,), has_aux=True)
    assert aux == "aux" and np.allclose(tangent.numpy(), 2.0 * tx.numpy())


def test_func_jvp_errors():
    x = t64([1.0])
    with pytest.raises(RuntimeError, match=r"Expected primals to be a tuple"):
        func.jvp(ember.sin, x, (x,))
    with pytest.raises(RuntimeError, match=r"same python structure"):
        func.jvp(ember.add, (x, x), (x,))
    with pytest.raises(RuntimeError, match=r"same shape"):
        func.jvp(ember.sin, (x,), (t64([1.0, 2.0]),))
    with pytest.raises(NotImplementedError, match=r"Nested forward mode AD"):
        func.jvp(lambda v: func.jvp(ember.sin, (v,), (v,))[1], (x,), (x,))


def test_hessian_matches_forward_over_reverse():
    x = t64(RNG.uniform(0.5, 1.5, 3))

    def f(v):
        return (ember.exp(v) * v.sum() + ember.log(v)).sum()

    h = func.hessian(f)(x)
    # each column of the Hessian is the JVP of the gradient (forward over reverse)
    cols = [func.jvp(func.grad(f), (x,), (t64(np.eye(3)[k]),))[1] for k in range(3)]
    np.testing.assert_allclose(h.numpy(), np.stack([c.numpy() for c in cols], 1), rtol=1e-10)
    np.testing.assert_allclose(h.numpy(), h.numpy().T, rtol=1e-10)
