"""ember.linalg solvers and determinants against numpy.linalg in float64 and complex128:
batched, broadcast, non-contiguous, zero-size and vector right-hand sides; singular and
non-positive-definite inputs raise PyTorch's errors (or report info); derivatives by gradcheck,
forward mode and second order."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(31)
LA = ember.linalg


def arr(*shape, complex_=False):
    a = RNG.standard_normal(shape)
    return a + 1j * RNG.standard_normal(shape) if complex_ else a


def well_conditioned(*shape, complex_=False):
    n = shape[-1]
    return arr(*shape, complex_=complex_) + 3 * n ** 0.5 * np.eye(n)


def spd(*shape, complex_=False):
    a = arr(*shape, complex_=complex_)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])


def t(a, requires_grad=False):
    a = np.asarray(a)
    return ember.tensor(a, dtype=ember.complex128 if np.iscomplexobj(a) else ember.float64,
                        requires_grad=requires_grad)


def close(got, want, tol=1e-10):
    np.testing.assert_allclose(np.asarray(got.detach().numpy()), want, rtol=tol, atol=tol)


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_values_match_numpy(complex_):
    a = well_conditioned(3, 4, 4, complex_=complex_)
    b = arr(3, 4, 2, complex_=complex_)
    close(LA.solve(t(a), t(b)), np.linalg.solve(a, b))
    close(LA.solve(t(a), t(b[..., 0])), np.linalg.solve(a, b[..., :1])[..., 0])  # batch of vectors
    close(LA.solve(t(a[0]), t(b)), np.linalg.solve(a[0], b))  # A broadcast over B's batch
    close(LA.solve(t(a), t(np.swapaxes(b, -1, -2)), left=False),
          np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), b), -1, -2))
    close(LA.inv(t(a)), np.linalg.inv(a))
    close(LA.det(t(a)), np.linalg.det(a))
    sign, logabs = LA.slogdet(t(a))
    want_sign, want_log = np.linalg.slogdet(a)
    close(sign, want_sign)
    close(logabs, want_log)
    p = spd(2, 4, 4, complex_=complex_)
    close(LA.cholesky(t(p)), np.linalg.cholesky(p))
    close(LA.cholesky(t(p), upper=True), np.conj(np.swapaxes(np.linalg.cholesky(p), -1, -2)))
    upper = np.triu(well_conditioned(4, 4, complex_=complex_))
    close(LA.solve_triangular(t(upper), t(b), upper=True), np.linalg.solve(upper, b))
    close(LA.solve_triangular(t(upper), t(b[0].T), upper=True, left=False), b[0].T @ np.linalg.inv(upper))
    unit = np.tril(arr(4, 4), -1) + np.eye(4)
    diagonal_ignored = np.tril(unit, -1) + 5 * np.eye(4)  # unitriangular: the diagonal is taken as ones
    close(LA.solve_triangular(t(diagonal_ignored), t(b[0].real), upper=False, unitriangular=True),
          np.linalg.solve(unit, b[0].real))


def test_non_contiguous_zero_size_and_pivoting():
    a = well_conditioned(4, 4)
    at = t(a.T).t()  # the same values through a transposed view
    assert not at.is_contiguous()
    close(LA.inv(at), np.linalg.inv(a))
    close(LA.det(t(np.array([[0.0, 1.0], [1.0, 0.0]]))), -1.0)  # needs a row swap
    assert LA.inv(t(np.zeros((0, 3, 3)))).shape == (0, 3, 3)
    assert LA.det(t(np.zeros((2, 0, 0)))).tolist() == [1.0, 1.0]
    close(LA.det(t(np.array([[1.0, 2.0], [2.0, 4.0]]))), 0.0)
    sign, logabs = LA.slogdet(t(np.array([[1.0, 2.0], [2.0, 4.0]])))
    assert sign.item() == 0.0 and logabs.item() == -np.inf


def test_errors_and_info():
    singular = t(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(RuntimeError, match=r"\[linalg.inv\] The diagonal element 2 is zero, the inversion could not "
                                           r"be completed because the input matrix is singular\."):
        LA.inv(singular)
    with pytest.raises(RuntimeError, match=r"The solver failed because the input matrix is singular"):
        LA.solve(singular, t([1.0, 1.0]))
    with pytest.raises(RuntimeError, match=r"A must be batches of square matrices, but they are 2 by 3 matrices"):
        LA.inv(t(np.ones((2, 3))))
    not_pd = t(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(RuntimeError, match=r"the leading minor of order 2 is not positive-definite"):
        LA.cholesky(not_pd)
    L, info = LA.cholesky_ex(t(np.stack([spd(2, 2), np.array([[1.0, 2.0], [2.0, 1.0]])])))
    assert info.tolist() == [0, 2]
    with pytest.raises(RuntimeError, match=r"Expected a floating point or complex tensor as input. Got int64"):
        LA.det(ember.tensor([[1, 2], [3, 4]]))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B"):
        LA.solve(t(np.eye(3)), t(np.ones((2, 2))))


@pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])
def test_derivatives(complex_):
    a = t(well_conditioned(2, 3, 3, complex_=complex_), True)
    b = t(arr(2, 3, 2, complex_=complex_), True)
    v = t(arr(3, complex_=complex_), True)
    assert gradcheck(lambda x, y: LA.solve(x, y), (a, b), check_forward_ad=True)
    assert gradcheck(lambda x, y: LA.solve(x[0], y), (a, v), check_forward_ad=True)
    assert gradcheck(lambda x, y: LA.solve(x, y.transpose(-1, -2), left=False), (a, b), check_forward_ad=True)
    assert gradcheck(LA.inv, (a,), check_forward_ad=True)
    assert gradcheck(LA.det, (a,), check_forward_ad=True)
    assert gradcheck(lambda x: LA.slogdet(x), (a,), check_forward_ad=True)
    s = t(spd(3, 3, complex_=complex_), True)

    def chol(x, upper):  # the factor of the Hermitian part, so perturbations stay Hermitian
        return LA.cholesky((x + x.mH) * 0.5, upper=upper)

    for upper in (False, True):
        assert gradcheck(lambda x, u=upper: chol(x, u), (s,), check_forward_ad=True)
    assert gradcheck(lambda x: LA.cholesky_ex((x + x.mH) * 0.5)[0], (s,), check_forward_ad=True)
    tri = t(np.triu(well_conditioned(3, 3, complex_=complex_)), True)
    for upper, left, unit in ((True, True, False), (True, False, False), (False, True, True)):
        m = tri if upper else tri.mT
        assert gradcheck(lambda x, y, u=upper, lft=left, un=unit: LA.solve_triangular(x, y if lft else y.mT, upper=u,
                                                                                    left=lft, unitriangular=un),
                         (m, b[0]), check_forward_ad=True)


def test_second_order():
    a = t(well_conditioned(3, 3), True)
    b = t(arr(3, 2), True)
    assert gradgradcheck(lambda x, y: LA.solve(x, y), (a, b))
    assert gradgradcheck(LA.inv, (a,))
    assert gradgradcheck(LA.det, (a,))
    s = t(spd(3, 3), True)
    assert gradgradcheck(lambda x: LA.cholesky((x + x.mT) * 0.5), (s,))


def test_out_returns_the_out_tensor_itself():
    A = ember.tensor([[2.0, 1.0], [1.0, 3.0]], dtype=ember.float64)
    B = ember.tensor([[1.0], [2.0]], dtype=ember.float64)
    for fn, args in ((ember.linalg.solve, (A, B)), (ember.linalg.inv, (A,)), (ember.linalg.cholesky, (A,)),
                     (ember.linalg.vecdot, (A, A))):
        want = fn(*args)
        out = ember.zeros(list(want.shape), dtype=ember.float64)
        assert fn(*args, out=out) is out
        np.testing.assert_allclose(out.numpy(), want.numpy())
