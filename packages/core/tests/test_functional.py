"""ember.autograd.functional (vjp, jvp, jacobian, hessian, vhp, hvp) and ember.func (grad,
grad_and_value, vjp, jacrev): results against Jacobians and Hessians derived by hand in float64
NumPy, result structures, create_graph, strict mode, nesting and error messages."""

import numpy as np
import pytest

import ember
import ember.func
from ember.autograd import functional as F

RNG = np.random.default_rng(23)


def t(a, requires_grad=False):
    return ember.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def n(x):
    return np.asarray(x.detach().numpy())


def close(x, expected):
    assert isinstance(x, ember.Tensor)
    assert x.dtype == ember.float64
    np.testing.assert_allclose(n(x), expected, rtol=1e-12, atol=1e-12)


def cube_jacobian(a):
    """d(x**3)/dx as out.shape + in.shape: diag(3 x^2)."""
    return np.diag(3 * a.reshape(-1) ** 2).reshape(a.shape + a.shape)


# The layouts every function is run on; each gives a fresh float64 tensor and its NumPy values.
def contiguous():
    a = RNG.uniform(0.5, 1.5, (2, 3))
    return t(a), a


def transposed():
    a = RNG.uniform(0.5, 1.5, (3, 2))
    x = t(a).t()
    assert not x.is_contiguous()
    return x, a.T


def zero_dim():
    a = np.array(RNG.uniform(0.5, 1.5))
    return t(a), a


def zero_size():
    a = np.zeros((0, 3))
    return t(a), a


LAYOUTS = [contiguous, transposed, zero_dim, zero_size]


# --- jacobian --------------------------------------------------------------------------------

@pytest.mark.parametrize("make", LAYOUTS)
def test_jacobian_of_cube_is_diag_3x2(make):
    x, a = make()
    jac = F.jacobian(lambda x: x**3, x)
    assert jac.shape == a.shape + a.shape
    close(jac, cube_jacobian(a))
    assert not jac.requires_grad


def test_jacobian_of_a_reduction_and_of_a_coupled_function():
    a = RNG.uniform(-1, 1, (2, 3))
    # row sums of sin: d out[i] / d x[i, j] = cos(x[i, j]), zero off row i
    expected = np.zeros((2, 2, 3))
    for i in range(2):
        expected[i, i] = np.cos(a[i])
    close(F.jacobian(lambda x: ember.sin(x).sum(1), t(a)), expected)
    # f(x) = sin(x) * sum(x): J = diag(cos x) s + sin(x) 1^T
    b = a.reshape(-1)
    J = np.diag(np.cos(b)) * b.sum() + np.outer(np.sin(b), np.ones_like(b))
    close(F.jacobian(lambda x: ember.sin(x) * x.sum(), t(b)), J)


def test_jacobian_tuple_structures():
    a, b = RNG.uniform(0.5, 1.5, 3), RNG.uniform(0.5, 1.5, 3)

    def f(x, y):
        return x * y, (x**2).sum()

    jac = F.jacobian(f, (t(a), t(b)))
    assert isinstance(jac, tuple) and len(jac) == 2 and all(isinstance(r, tuple) and len(r) == 2 for r in jac)
    close(jac[0][0], np.diag(b))
    close(jac[0][1], np.diag(a))
    close(jac[1][0], 2 * a)
    close(jac[1][1], np.zeros(3))  # independent of y: zeros when not strict
    # a tuple of inputs, one output: a tuple over inputs
    jx, jy = F.jacobian(lambda x, y: x * y, (t(a), t(b)))
    close(jx, np.diag(b))
    close(jy, np.diag(a))
    # one input, a tuple of outputs: a tuple over outputs
    j0, j1 = F.jacobian(lambda x: (x**3, ember.exp(x).sum()), t(a))
    close(j0, cube_jacobian(a))
    close(j1, np.exp(a))
    # a one-element tuple stays a tuple
    (only,) = F.jacobian(lambda x: x**3, (t(a),))
    close(only, cube_jacobian(a))
    ((inner,),) = F.jacobian(lambda x: (x**3,), (t(a),))
    close(inner, cube_jacobian(a))


def test_jacobian_zero_size_output_and_input():
    a = RNG.uniform(0.5, 1.5, 3)
    jac = F.jacobian(lambda x: x[:0] * 2, t(a))
    assert jac.shape == (0, 3)
    jac = F.jacobian(lambda x, e: (x.sum() + e.sum(), e * 2), (t(a), t(np.zeros((0, 2)))))
    assert jac[0][1].shape == (0, 2) and jac[1][0].shape == (0, 2, 3) and jac[1][1].shape == (0, 2, 0, 2)
    close(jac[0][0], np.ones(3))


def test_jacobian_create_graph_is_differentiable():
    a = RNG.uniform(0.5, 1.5, 3)
    x = t(a, requires_grad=True)
    jac = F.jacobian(lambda x: x**3, x, create_graph=True)
    assert jac.requires_grad
    close(jac, cube_jacobian(a))
    (g,) = ember.autograd.grad(jac.sum(), x)
    close(g, 6 * a)  # d/dx sum(diag(3x^2))
    # without create_graph nothing is attached, even for an input that requires grad
    assert not F.jacobian(lambda x: x**3, x).requires_grad
    assert x.grad is None


def test_jacobian_strict():
    a = RNG.uniform(0.5, 1.5, 3)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
        F.jacobian(lambda x: x.detach() * 2, t(a), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1. "
                                           "This is not allowed in strict mode."):
        F.jacobian(lambda x, y: x * 2, (t(a), t(a)), strict=True)
    with pytest.raises(RuntimeError, match="The jacobian of the user-provided function is independent of input 0. "
                                           "This is not allowed in strict mode when create_graph=True."):
        F.jacobian(lambda x: x * 2, t(a), strict=True, create_graph=True)
    close(F.jacobian(lambda x: x * 2, t(a), strict=True), 2 * np.eye(3))


def test_vectorized_and_forward_mode_jacobians():
    """vectorize=True (one batched backward per output) and strategy="forward-mode" give the
    Jacobians of the loop over output elements: tuple inputs/outputs, 0-dim, zero-size and
    non-contiguous inputs, and create_graph through the vectorized path."""
    def f(a, b):
        return (a * b.sum()).sin(), a.prod() * b
    a = ember.tensor(np.array([[0.3, -1.2], [0.7, 2.0]]), dtype=ember.float64).t()  # non-contiguous
    b = t([0.5, -0.25, 1.5])
    want = F.jacobian(f, (a, b))
    for kwargs in ({"vectorize": True}, {"vectorize": True, "strategy": "forward-mode"}):
        got = F.jacobian(f, (a, b), **kwargs)
        for i in range(2):
            for j in range(2):
                assert got[i][j].shape == want[i][j].shape
                np.testing.assert_allclose(got[i][j].numpy(), want[i][j].numpy(), rtol=1e-12, atol=1e-12)
    x0 = ember.tensor(1.5, dtype=ember.float64)  # 0-dim in and out
    for strategy in ("reverse-mode", "forward-mode"):
        assert F.jacobian(lambda x: x ** 3, x0, vectorize=True, strategy=strategy).item() == pytest.approx(6.75)
        empty = F.jacobian(lambda x: x * 2, ember.zeros([0], dtype=ember.float64), vectorize=True, strategy=strategy)
        assert tuple(empty.shape) == (0, 0)
    x = t([1.0, 2.0])
    hv = F.hessian(lambda x: (x ** 3).sum(), x, vectorize=True)
    hf = F.hessian(lambda x: (x ** 3).sum(), x, vectorize=True, outer_jacobian_strategy="forward-mode")
    np.testing.assert_allclose(hv.numpy(), np.diag([6.0, 12.0]))
    np.testing.assert_allclose(hf.numpy(), np.diag([6.0, 12.0]))
    xg = ember.tensor([0.5, -1.0], dtype=ember.float64, requires_grad=True)
    assert ember.autograd.gradcheck(lambda x: F.jacobian(lambda y: y.sin() * y.sum(), x, create_graph=True,
                                                         vectorize=True), (xg,))


def test_jacobian_option_errors():
    x = t([1.0, 2.0])
    with pytest.raises(NotImplementedError, match="Computing Jacobian using forward-AD or forward-over-reverse "
                                                  "Hessian is only implemented for `vectorize=True`"):
        F.jacobian(lambda x: x**3, x, strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        F.hessian(lambda x: (x**3).sum(), x, outer_jacobian_strategy="forward-mode")
    # combinations PyTorch rejects are rejected the same way
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported together"):
        F.jacobian(lambda x: x**3, x, vectorize=True, strict=True)
    with pytest.raises(NotImplementedError, match='`create_graph=True` and `strategy="forward-mode"`'):
        F.jacobian(lambda x: x**3, x, strategy="forward-mode", create_graph=True)
    with pytest.raises(ValueError, match='expected strategy to be either "forward-mode" or "reverse-mode"'):
        F.jacobian(lambda x: x**3, x, strategy="backward")
    with pytest.raises(ValueError, match='expected strategy to be either "forward-mode" or "reverse-mode"'):
        F.hessian(lambda x: (x**3).sum(), x, outer_jacobian_strategy="sideways")


# --- hessian ---------------------------------------------------------------------------------

@pytest.mark.parametrize("make", LAYOUTS)
def test_hessian_of_sum_of_cubes_is_diag_6x(make):
    x, a = make()
    h = F.hessian(lambda x: (x**3).sum(), x)
    assert h.shape == a.shape + a.shape
    close(h, np.diag(6 * a.reshape(-1)).reshape(a.shape + a.shape))
    assert not h.requires_grad


def test_hessian_of_a_coupled_function_and_tuple_inputs():
    a = RNG.uniform(-1, 1, 4)
    # g(x) = (sum sin x)^2: H = 2 cos x cos x^T - 2 S diag(sin x), S = sum sin x
    s = np.sin(a).sum()
    H = 2 * np.outer(np.cos(a), np.cos(a)) - 2 * s * np.diag(np.sin(a))
    close(F.hessian(lambda x: ember.sin(x).sum() ** 2, t(a)), H)
    b = RNG.uniform(-1, 1, 4)
    # sum(x^2 y): H_xx = diag(2y), H_xy = H_yx = diag(2x), H_yy = 0
    (hxx, hxy), (hyx, hyy) = F.hessian(lambda x, y: (x**2 * y).sum(), (t(a), t(b)))
    close(hxx, np.diag(2 * b))
    close(hxy, np.diag(2 * a))
    close(hyx, np.diag(2 * a))
    close(hyy, np.zeros((4, 4)))
    ((only,),) = F.hessian(lambda x: (x**3).sum(), (t(a),))
    close(only, np.diag(6 * a))


def test_hessian_one_element_output_of_any_shape_and_linear_functions():
    a = RNG.uniform(-1, 1, 3)
    close(F.hessian(lambda x: (x**3).sum().reshape([1, 1]), t(a)), np.diag(6 * a))
    close(F.hessian(lambda x: (x * 2).sum(), t(a)), np.zeros((3, 3)))  # linear: zero, not an error
    with pytest.raises(RuntimeError, match="While computing the hessian, found that the jacobian of the user-provided "
                                           "function with respect to input 0 is independent of the input"):
        F.hessian(lambda x: (x * 2).sum(), t(a), strict=True)


def test_hessian_create_graph():
    a = RNG.uniform(0.5, 1.5, 3)
    x = t(a, requires_grad=True)
    h = F.hessian(lambda x: (x**3).sum(), x, create_graph=True)
    assert h.requires_grad
    (g,) = ember.autograd.grad(h.sum(), x)
    close(g, np.full(3, 6.0))


def test_hessian_bad_output():
    x = t([1.0, 2.0])
    with pytest.raises(RuntimeError, match="The function given to hessian should return a single Tensor"):
        F.hessian(lambda x: (x.sum(), x.sum()), x)
    with pytest.raises(RuntimeError, match="The Tensor returned by the function given to hessian should contain a "
                                           "single element"):
        F.hessian(lambda x: x**3, x)
    with pytest.raises(TypeError, match="The inputs given to hessian must be either a Tensor or a tuple of Tensors but "
                                        "the given inputs has type <class 'list'>"):
        F.hessian(lambda x: x.sum(), [x])


# --- vjp and jvp -----------------------------------------------------------------------------

def coupled(x):
    return ember.sin(x) * x.sum()


def coupled_jacobian(b):
    return np.diag(np.cos(b)) * b.sum() + np.outer(np.sin(b), np.ones_like(b))


@pytest.mark.parametrize("make", LAYOUTS)
def test_vjp_and_jvp_of_cube(make):
    x, a = make()
    v = RNG.uniform(-1, 1, a.shape)
    out, res = F.vjp(lambda x: x**3, x, t(v))
    close(out, a**3)
    close(res, 3 * a**2 * v)
    out, res = F.jvp(lambda x: x**3, x, t(v))
    close(out, a**3)
    close(res, 3 * a**2 * v)
    assert not out.requires_grad and not res.requires_grad


def test_vjp_and_jvp_against_an_explicit_jacobian():
    b = RNG.uniform(-1, 1, 4)
    J = coupled_jacobian(b)
    u, w = RNG.uniform(-1, 1, 4), RNG.uniform(-1, 1, 4)
    out, res = F.vjp(coupled, t(b), t(u))
    close(out, np.sin(b) * b.sum())
    close(res, u @ J)
    out, res = F.jvp(coupled, t(b), t(w))
    close(res, J @ w)
    # non-contiguous v
    wt = RNG.uniform(-1, 1, (2, 2))
    close(F.jvp(coupled, t(b).reshape([2, 2]), t(wt.T.copy()).t())[1].reshape([4]), J @ wt.reshape(-1))


def test_vjp_and_jvp_default_v_for_one_element():
    a = np.array(0.7)
    out, res = F.vjp(lambda x: x**3, t(a))
    close(res, 3 * a**2)
    out, res = F.jvp(lambda x: ember.exp(x) * 2, t([0.3]))
    close(res, 2 * np.exp([0.3]))
    # vjp's v may be None for a one-element output of a many-element input
    _, res = F.vjp(lambda x: (x**2).sum(), t([1.0, 2.0]))
    close(res, [2.0, 4.0])


def test_vjp_and_jvp_tuples():
    a, b = RNG.uniform(0.5, 1.5, 3), RNG.uniform(0.5, 1.5, 3)
    u0, u1 = RNG.uniform(-1, 1, 3), 0.5

    def f(x, y):
        return x * y, (x**2).sum()

    (o0, o1), (gx, gy) = F.vjp(f, (t(a), t(b)), (t(u0), t(u1)))
    close(o0, a * b)
    close(o1, (a**2).sum())
    close(gx, u0 * b + u1 * 2 * a)
    close(gy, u0 * a)
    w0, w1 = RNG.uniform(-1, 1, 3), RNG.uniform(-1, 1, 3)
    _, (j0, j1) = F.jvp(f, (t(a), t(b)), (t(w0), t(w1)))
    close(j0, b * w0 + a * w1)
    close(j1, 2 * a @ w0)
    # an input no output depends on gets zeros
    _, (gx, gz) = F.vjp(lambda x, z: x * 2, (t(a), t(b)), t(u0))
    close(gz, np.zeros(3))
    # an output no input reaches gets zeros in jvp
    _, (j0, j1) = F.jvp(lambda x: (x * 2, t(b)), t(a), t(w0))
    close(j0, 2 * w0)
    close(j1, np.zeros(3))


def test_vjp_and_jvp_create_graph():
    a = RNG.uniform(0.5, 1.5, 3)
    v = RNG.uniform(-1, 1, 3)
    x = t(a, requires_grad=True)
    out, res = F.vjp(lambda x: x**3, x, t(v), create_graph=True)
    assert out.requires_grad and res.requires_grad
    (g,) = ember.autograd.grad(res.sum(), x)
    close(g, 6 * a * v)
    _, res = F.jvp(lambda x: x**3, x, t(v), create_graph=True)
    assert res.requires_grad
    (g,) = ember.autograd.grad(res.sum(), x)
    close(g, 6 * a * v)
    # v that requires grad: the result is differentiable in v too
    vv = t(v, requires_grad=True)
    _, res = F.jvp(lambda x: x**3, x, vv, create_graph=True)
    (gv,) = ember.autograd.grad(res.sum(), vv)
    close(gv, 3 * a**2)
    assert x.grad is None and vv.grad is None


def test_vjp_runs_under_no_grad():
    a = RNG.uniform(0.5, 1.5, 3)
    with ember.no_grad():
        _, res = F.vjp(lambda x: x**3, t(a, requires_grad=True), t(np.ones(3)))
        _, hv = F.hvp(lambda x: (x**3).sum(), t(a), t(np.ones(3)))
    close(res, 3 * a**2)
    close(hv, 6 * a)


def test_vjp_and_jvp_strict():
    a = RNG.uniform(0.5, 1.5, 3)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients. The "
                                           "outputs must be computed in a differentiable manner from the input when "
                                           "running in strict mode."):
        F.vjp(lambda x: x.detach(), t(a), t(a), strict=True)
    with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 1. This "
                                           "is not allowed in strict mode."):
        F.vjp(lambda x, y: x * 2, (t(a), t(a)), t(a), strict=True)
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function does not require gradients"):
        F.jvp(lambda x: x.detach(), t(a), t(a), strict=True)
    with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 1"):
        F.jvp(lambda x, y: x * 2, (t(a), t(a)), (t(a), t(a)), strict=True)
    with pytest.raises(RuntimeError, match="The jacobian of the user-provided function is independent of input 0. "
                                           "This is not allowed in strict mode when create_graph=True."):
        F.vjp(lambda x: x * 2, t(a), t(a), strict=True, create_graph=True)
    # the same calls without strict give zeros
    close(F.vjp(lambda x: x.detach(), t(a), t(a))[1], np.zeros(3))
    close(F.jvp(lambda x: x.detach(), t(a), t(a))[1], np.zeros(3))


@pytest.mark.parametrize("fn", [F.vjp, F.jvp, F.vhp, F.hvp])
def test_bad_inputs_and_v(fn):
    name = fn.__name__
    x = t([1.0, 2.0, 3.0])
    f = (lambda x: (x**3).sum()) if name in ("vhp", "hvp") else (lambda x: x**3)
    with pytest.raises(TypeError, match=f"The inputs given to {name} must be either a Tensor or a tuple of Tensors "
                                        "but the given inputs has type <class 'list'>"):
        fn(f, [x], x)
    with pytest.raises(TypeError, match=f"The inputs given to {name} must be either a Tensor or a tuple of Tensors "
                                        "but the value at index 1 has type <class 'float'>"):
        fn(lambda x, y: f(x), (x, 2.0), x)
    with pytest.raises(TypeError, match=f"The outputs of the user-provided function given to {name} must be either a "
                                        "Tensor or a tuple of Tensors but the given outputs of the user-provided "
                                        "function has type <class 'float'>"):
        fn(lambda x: 3.0, x, x)
    with pytest.raises(TypeError, match=f"The v given to {name} must be either a Tensor or a tuple of Tensors"):
        fn(f, x, [1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be \(3,\) but got \(2,\)."):
        fn(f, x, t([1.0, 2.0]))
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        fn(f, x, (x, x))
    v_none = ("The vector v can only be None if the user-provided function returns a single Tensor with a single "
              "element." if name == "vjp" else
              "The vector v can only be None if the input to the user-provided function is a single Tensor with a "
              "single element.")
    with pytest.raises(RuntimeError, match=v_none):
        fn(f, x)
    if name in ("vjp", "jvp"):  # v against the outputs (vjp) or the inputs (jvp) when those are tuples
        two = (lambda x: (x * 2, x * 3)) if name == "vjp" else (lambda x, y: x * y)
        args = x if name == "vjp" else (x, x)
        with pytest.raises(RuntimeError, match="v is a tuple of invalid length: should be 2 but got 1."):
            fn(two, args, (x,))
        with pytest.raises(RuntimeError, match=r"Entry 1 in v has invalid size: should be \(3,\) but got \(1,\)."):
            fn(two, args, (x, t([1.0])))


# --- vhp and hvp -----------------------------------------------------------------------------

@pytest.mark.parametrize("make", LAYOUTS)
def test_vhp_and_hvp_of_sum_of_cubes(make):
    x, a = make()
    v = RNG.uniform(-1, 1, a.shape)
    for fn in (F.vhp, F.hvp):
        out, res = fn(lambda x: (x**3).sum(), x, t(v))
        close(out, (a**3).sum())
        close(res, 6 * a * v)
        assert not out.requires_grad and not res.requires_grad


def test_vhp_and_hvp_against_an_explicit_hessian():
    a = RNG.uniform(-1, 1, 4)
    s = np.sin(a).sum()
    H = 2 * np.outer(np.cos(a), np.cos(a)) - 2 * s * np.diag(np.sin(a))
    v = RNG.uniform(-1, 1, 4)
    out, res = F.vhp(lambda x: ember.sin(x).sum() ** 2, t(a), t(v))
    close(out, s**2)
    close(res, v @ H)
    close(F.hvp(lambda x: ember.sin(x).sum() ** 2, t(a), t(v))[1], H @ v)
    # tuples: sum(x^2 y) with the block Hessian [[diag 2y, diag 2x], [diag 2x, 0]]
    b = RNG.uniform(-1, 1, 4)
    vx, vy = RNG.uniform(-1, 1, 4), RNG.uniform(-1, 1, 4)
    for fn in (F.vhp, F.hvp):
        out, (rx, ry) = fn(lambda x, y: (x**2 * y).sum(), (t(a), t(b)), (t(vx), t(vy)))
        close(out, (a**2 * b).sum())
        close(rx, 2 * b * vx + 2 * a * vy)
        close(ry, 2 * a * vx)
    # one-element input: v may be None
    close(F.hvp(lambda x: x**3, t(0.5))[1], 3.0)
    close(F.vhp(lambda x: x**3, t(0.5))[1], 3.0)


def test_vhp_and_hvp_create_graph_and_strict():
    a = RNG.uniform(0.5, 1.5, 3)
    v = RNG.uniform(-1, 1, 3)
    x = t(a, requires_grad=True)
    for fn in (F.vhp, F.hvp):
        _, res = fn(lambda x: (x**3).sum(), x, t(v), create_graph=True)
        assert res.requires_grad
        (g,) = ember.autograd.grad(res.sum(), x)
        close(g, 6 * v)
        with pytest.raises(RuntimeError, match="While computing the hessian, found that the jacobian of the "
                                               "user-provided function with respect to input 0 is independent"):
            fn(lambda x: (x * 2).sum(), t(a), t(v), strict=True)
        with pytest.raises(RuntimeError, match="The output of the user-provided function is independent of input 1"):
            fn(lambda x, y: (x**3).sum(), (t(a), t(a)), (t(v), t(v)), strict=True)
        close(fn(lambda x: (x * 2).sum(), t(a), t(v))[1], np.zeros(3))
        with pytest.raises(RuntimeError, match=f"The function given to {fn.__name__} should return a single Tensor"):
            fn(lambda x: ((x**3).sum(),), t(a), t(v))
        with pytest.raises(RuntimeError, match=f"The Tensor returned by the function given to {fn.__name__} should "
                                               "contain a single element"):
            fn(lambda x: x**3, t(a), t(v))
    assert x.grad is None


def test_inputs_are_not_modified_and_captured_tensors_are_not_inputs():
    a = RNG.uniform(0.5, 1.5, 3)
    x = t(a, requires_grad=True)
    # the function sees a new tensor object, so x captured from outside is a constant
    jac = F.jacobian(lambda y: y * x, x)
    close(jac, np.diag(a))
    assert x.grad is None and x.is_leaf


# --- ember.func ------------------------------------------------------------------------------

def test_func_is_importable():
    assert ember.func.grad is not None
    from ember.func import grad, grad_and_value, jacrev, vjp  # noqa: F401


@pytest.mark.parametrize("make", LAYOUTS)
def test_grad_of_sum_of_cubes(make):
    x, a = make()
    g = ember.func.grad(lambda x: (x**3).sum())(x)
    close(g, 3 * a**2)
    assert not g.requires_grad


def test_grad_argnums_kwargs_and_value():
    a, b = RNG.uniform(0.5, 1.5, 3), RNG.uniform(0.5, 1.5, 3)

    def f(x, y, scale=1.0):
        return (x**2 * y).sum() * scale

    close(ember.func.grad(f)(t(a), t(b)), 2 * a * b)
    close(ember.func.grad(f, argnums=1)(t(a), t(b), scale=3.0), 3 * a**2)
    close(ember.func.grad(f, argnums=-1)(t(a), t(b)), a**2)
    gx, gy = ember.func.grad(f, argnums=(0, 1))(t(a), t(b))
    close(gx, 2 * a * b)
    close(gy, a**2)
    (gy,) = ember.func.grad(f, argnums=(1,))(t(a), t(b))
    close(gy, a**2)
    g, value = ember.func.grad_and_value(f)(t(a), t(b))
    close(g, 2 * a * b)
    close(value, (a**2 * b).sum())
    assert not value.requires_grad
    # an argument the output does not use gets zeros
    close(ember.func.grad(lambda x, y: (x * 2).sum(), argnums=1)(t(a), t(b)), np.zeros(3))
    assert ember.func.grad(f).__name__ == "f"


def test_grad_has_aux():
    a = RNG.uniform(0.5, 1.5, 3)

    def f(x):
        y = x**3
        return y.sum(), {"cube": y, "label": "cube"}

    g, aux = ember.func.grad(f, has_aux=True)(t(a))
    close(g, 3 * a**2)
    close(aux["cube"], a**3)
    assert aux["label"] == "cube" and not aux["cube"].requires_grad
    g, (value, aux) = ember.func.grad_and_value(f, has_aux=True)(t(a))
    close(value, (a**3).sum())
    close(aux["cube"], a**3)
    with pytest.raises(RuntimeError, match=r"grad_and_value\(f\)\(\*args\): output of function f should be a tuple: "
                                           r"\(output, aux\) if has_aux is True"):
        ember.func.grad(lambda x: (x**3).sum(), has_aux=True)(t(a))


def test_grad_pytree_arguments():
    a, b, c = RNG.uniform(0.5, 1.5, 3), RNG.uniform(0.5, 1.5, 2), RNG.uniform(0.5, 1.5, 2)

    def f(params, x):
        return (params["w"] * x).sum() + (params["b"][0] ** 2).sum() + (params["b"][1] * 0).sum()

    g = ember.func.grad(f)({"w": t(a), "b": [t(b), t(c)]}, t(a))
    assert isinstance(g, dict) and set(g) == {"w", "b"} and isinstance(g["b"], list)
    close(g["w"], a)
    close(g["b"][0], 2 * b)
    close(g["b"][1], np.zeros(2))
    g = ember.func.grad(lambda p: (p[0] * p[1]).sum())((t(a), t(a * 2)))
    assert isinstance(g, tuple)
    close(g[0], 2 * a)
    close(g[1], a)


def test_grad_of_grad_is_the_second_derivative():
    a = 0.7
    d2 = ember.func.grad(ember.func.grad(lambda x: x**3))(t(a))
    close(d2, 6 * a)
    assert not d2.requires_grad
    d3 = ember.func.grad(ember.func.grad(ember.func.grad(lambda x: ember.sin(x))))(t(a))
    close(d3, -np.cos(a))
    # sum of the gradient of sum(x^3): d/dx sum(3 x^2) = 6x
    v = RNG.uniform(0.5, 1.5, 3)
    close(ember.func.grad(lambda x: ember.func.grad(lambda y: (y**3).sum())(x).sum())(t(v)), 6 * v)


def test_grad_through_closures_and_outer_autograd():
    a, b = RNG.uniform(0.5, 1.5, 3), RNG.uniform(0.5, 1.5, 3)
    # d/dy sum(d/dx sum(x y)) = d/dy sum(y) = 1: the inner transform closes over the outer input
    g = ember.func.grad(lambda y: ember.func.grad(lambda x: (x * y).sum())(t(a)).sum())(t(b))
    close(g, np.ones(3))
    g = ember.func.grad(lambda y: ember.func.grad(lambda x: (x * y**2).sum())(t(a)).sum())(t(b))
    close(g, 2 * b)
    # plain autograd outside: the gradient stays differentiable with respect to tracked tensors
    y = t(b, requires_grad=True)
    g = ember.func.grad(lambda x: (x**2 * y).sum())(t(a))
    close(g, 2 * a * b)
    assert g.requires_grad
    g.sum().backward()
    close(y.grad, 2 * a)
    x = t(a, requires_grad=True)
    g = ember.func.grad(lambda x: (x**3).sum())(x)
    assert g.requires_grad
    (gg,) = ember.autograd.grad(g.sum(), x)
    close(gg, 6 * a)
    assert x.grad is None
    # under no_grad the transform still differentiates, and nothing is attached
    with ember.no_grad():
        g = ember.func.grad(lambda x: (x**2 * y).sum())(x)
    close(g, 2 * a * b)
    assert not g.requires_grad


def test_grad_errors():
    x = t([1.0, 2.0])
    with pytest.raises(RuntimeError, match=r"grad_and_value\(f\)\(\*args\): Expected f\(\*args\) to return a scalar "
                                           "Tensor, got tensor with 1 dims. Maybe you wanted to use the vjp or jacrev "
                                           "APIs instead?"):
        ember.func.grad(lambda x: x**2)(x)
    with pytest.raises(RuntimeError, match="got tensor with 2 dims"):
        ember.func.grad(lambda x: x.sum().reshape([1, 1]))(x)
    with pytest.raises(RuntimeError, match=r"Expected f\(\*args\) to return a Tensor, got <class 'float'>"):
        ember.func.grad(lambda x: 1.0)(x)
    with pytest.raises(RuntimeError, match="Got argnum=2, but only 2 positional inputs"):
        ember.func.grad(lambda x, y: x.sum(), argnums=2)(x, x)
    with pytest.raises(RuntimeError, match="Got argnum=-3, but only 2 positional inputs"):
        ember.func.grad(lambda x, y: x.sum(), argnums=-3)(x, x)
    with pytest.raises(RuntimeError, match=r"argnums elements must be unique, got \(0, -2\)"):
        ember.func.grad(lambda x, y: x.sum(), argnums=(0, -2))(x, x)
    with pytest.raises(RuntimeError, match="argnums must be non-empty"):
        ember.func.grad(lambda x: x.sum(), argnums=())(x)
    with pytest.raises(RuntimeError, match="argnums must be int or Tuple"):
        ember.func.grad(lambda x: x.sum(), argnums=[0])(x)
    with pytest.raises(RuntimeError, match="argnum must be int, got: <class 'str'>"):
        ember.func.grad(lambda x: x.sum(), argnums=("0",))(x)
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor, got <class 'float'>"):
        ember.func.grad(lambda x: x[0].sum())((x, 2.0))
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype can require gradients"):
        ember.func.grad(lambda x: x.sum())(ember.tensor([1, 2]))


def f_multi(x, y):
    return {"prod": x * y, "total": (ember.exp(x) * y).sum()}


def test_jacrev_matches_the_functional_jacobian():
    a, b = RNG.uniform(0.5, 1.5, 3), RNG.uniform(0.5, 1.5, 3)
    jac = ember.func.jacrev(f_multi, argnums=(0, 1))(t(a), t(b))
    ref = F.jacobian(lambda x, y: (f_multi(x, y)["prod"], f_multi(x, y)["total"]), (t(a), t(b)))
    assert isinstance(jac, dict) and isinstance(jac["prod"], tuple)
    for i, key in enumerate(("prod", "total")):
        for j in range(2):
            close(jac[key][j], n(ref[i][j]))
    close(jac["total"][0], np.exp(a) * b)
    jx = ember.func.jacrev(f_multi)(t(a), t(b))  # argnums=0: no tuple around each entry
    close(jx["prod"], np.diag(b))
    assert not jx["prod"].requires_grad


@pytest.mark.parametrize("make", LAYOUTS)
def test_jacrev_of_cube(make):
    x, a = make()
    close(ember.func.jacrev(lambda x: x**3)(x), cube_jacobian(a))


def test_jacrev_of_jacrev_is_the_hessian():
    a = RNG.uniform(-1, 1, 4)
    s = np.sin(a).sum()
    H = 2 * np.outer(np.cos(a), np.cos(a)) - 2 * s * np.diag(np.sin(a))
    g = lambda x: ember.sin(x).sum() ** 2  # noqa: E731
    h = ember.func.jacrev(ember.func.jacrev(g))(t(a))
    close(h, H)
    close(h, n(F.hessian(g, t(a))))
    assert not h.requires_grad
    close(ember.func.jacrev(ember.func.grad(g))(t(a)), H)
    # the Jacobian of a vector function, differentiated again: d^2 (x^3)_i / dx_j dx_k = 6 x_i [i=j=k]
    third = ember.func.jacrev(ember.func.jacrev(lambda x: x**3))(t(a))
    expected = np.zeros((4, 4, 4))
    for i in range(4):
        expected[i, i, i] = 6 * a[i]
    close(third, expected)


def test_jacrev_has_aux_zero_size_and_errors():
    a = RNG.uniform(0.5, 1.5, 3)
    jac, aux = ember.func.jacrev(lambda x: (x**3, [x * 2, 5]), has_aux=True)(t(a))
    close(jac, cube_jacobian(a))
    close(aux[0], 2 * a)
    assert aux[1] == 5 and not aux[0].requires_grad
    jac = ember.func.jacrev(lambda x: x[:0] * 2)(t(a))
    assert jac.shape == (0, 3)
    with pytest.raises(RuntimeError, match=r"jacrev\(f, ...\)\(\*args\): expected f\(\*args\) to return only tensors, "
                                           "got unsupported type <class 'int'>"):
        ember.func.jacrev(lambda x: (x**3, 4))(t(a))
    with pytest.raises(RuntimeError, match=r"jacrev\(f, ...\)\(\*args\): Expected f to be a function that has "
                                           "non-empty output"):
        ember.func.jacrev(lambda x: ())(t(a))
    with pytest.raises(ValueError, match="jacrev: `chunk_size` should be greater than 0."):
        ember.func.jacrev(lambda x: x, chunk_size=0)


def test_vjp():
    a, b = RNG.uniform(0.5, 1.5, 3), RNG.uniform(0.5, 1.5, 3)
    out, vjp_fn = ember.func.vjp(lambda x: x**3, t(a))
    close(out, a**3)
    assert not out.requires_grad
    v = RNG.uniform(-1, 1, 3)
    (g,) = vjp_fn(t(v))
    close(g, 3 * a**2 * v)
    (g,) = vjp_fn(t(2 * v))  # vjp_fn can be called again
    close(g, 6 * a**2 * v)
    assert not g.requires_grad
    # several primals and structured outputs
    out, vjp_fn = ember.func.vjp(f_multi, t(a), t(b))
    assert set(out) == {"prod", "total"}
    gx, gy = vjp_fn({"prod": t(v), "total": t(0.5)})
    close(gx, v * b + 0.5 * np.exp(a) * b)
    close(gy, v * a + 0.5 * np.exp(a))
    # a pytree primal
    _, vjp_fn = ember.func.vjp(lambda p: p["w"] * p["v"], {"w": t(a), "v": t(b)})
    (gp,) = vjp_fn(t(v))
    close(gp["w"], v * b)
    close(gp["v"], v * a)


def test_vjp_has_aux_nesting_and_errors():
    a = RNG.uniform(0.5, 1.5, 3)
    v = RNG.uniform(-1, 1, 3)
    out, vjp_fn, aux = ember.func.vjp(lambda x: (ember.sin(x), ember.cos(x)), t(a), has_aux=True)
    close(out, np.sin(a))
    close(aux, np.cos(a))
    close(vjp_fn(t(v))[0], np.cos(a) * v)
    # vjp inside grad: d/dx sum(vjp of x^3 at x with v) = 6 x v
    g = ember.func.grad(lambda x: ember.func.vjp(lambda y: y**3, x)[1](t(v))[0].sum())(t(a))
    close(g, 6 * a * v)
    # a cotangent that requires grad makes the result differentiable in it
    _, vjp_fn = ember.func.vjp(lambda x: x**3, t(a))
    c = t(v, requires_grad=True)
    (g,) = vjp_fn(c)
    (gc,) = ember.autograd.grad(g.sum(), c)
    close(gc, 3 * a**2)
    with pytest.raises(RuntimeError, match=r"Expected pytree structure of cotangents to be the same as pytree "
                                           r"structure of outputs to the function. cotangents: \(\*, \*\), primal "
                                           r"output: \*"):
        vjp_fn((t(v), t(v)))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        vjp_fn(t([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"vjp\(f, \*primals\): output of function f should be a tuple: "
                                           r"\(output, aux\) if has_aux is True"):
        ember.func.vjp(lambda x: x, t(a), has_aux=True)
    with pytest.raises(RuntimeError, match=r"vjp\(f, \*primals\): expected f\(\*primals\) to return only tensors, got "
                                           "unsupported type <class 'str'>"):
        ember.func.vjp(lambda x: "x", t(a))
    with pytest.raises(ValueError, match="Thing passed to transform API must be Tensor, got <class 'float'>"):
        ember.func.vjp(lambda x, y: x, t(a), [[1.0]])


def test_transforms_under_no_grad_and_with_tracked_inputs():
    a = RNG.uniform(0.5, 1.5, 3)
    v = RNG.uniform(-1, 1, 3)
    x = t(a, requires_grad=True)
    with ember.no_grad():
        jac = ember.func.jacrev(lambda x: x**3)(x)
        out, vjp_fn = ember.func.vjp(lambda x: x**3, x)
        (g,) = vjp_fn(t(v))
    close(jac, cube_jacobian(a))
    close(g, 3 * a**2 * v)
    assert not jac.requires_grad and not out.requires_grad and not g.requires_grad
    # an input the caller tracks: output and vjp stay on the caller's graph
    out, vjp_fn = ember.func.vjp(lambda x: x**3, x)
    (g,) = vjp_fn(t(v))
    assert out.requires_grad and g.requires_grad
    (gg,) = ember.autograd.grad(g.sum(), x)
    close(gg, 6 * a * v)
    jac = ember.func.jacrev(lambda x: x**3)(x)
    (gj,) = ember.autograd.grad(jac.sum(), x)
    close(gj, 6 * a)
    assert x.grad is None
    with pytest.raises(RuntimeError, match=r"vjp\(f, \*primals\): expected at least one primal"):
        ember.func.vjp(lambda: t(a))
