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


# ---- on LAPACK: special values, info, threads ------------------------------------------------------

def test_special_values_and_info():
    nan = np.nan
    # OpenBLAS's potrf lets NaN through; Ember reports the first NaN pivot as not positive-definite
    L, info = LA.cholesky_ex(t(np.array([[[nan, 0.0], [0.0, 1.0]], [[1.0, 0.0], [nan, 1.0]],
                                         [[1.0, nan], [0.0, 1.0]]])))
    assert info.tolist() == [1, 2, 0]  # (the upper triangle is not read)
    close(L[2], np.eye(2))
    with pytest.raises(LA.LinAlgError, match=r"\(the leading minor of order 1 is not positive-definite\)"):
        LA.cholesky(t([[nan, 0.0], [0.0, 1.0]]))
    # getrf's info: the first zero pivot, per matrix
    stack = np.stack([np.zeros((3, 3)), np.array([[1.0, 1.0, 1.0], [1.0, 1.0, 2.0], [1.0, 1.0, 3.0]]), np.eye(3)])
    assert LA.lu_factor_ex(t(stack)).info.tolist() == [1, 2, 0]
    with pytest.raises(LA.LinAlgError, match=r"\[linalg.inv\] The diagonal element 2 is zero"):
        LA.inv(t(stack[1]))
    # NaN and infinity flow through without a crash or a hang
    for bad in ([[nan, 0.0], [0.0, 1.0]], [[np.inf, 1.0], [1.0, 1.0]], [[nan, nan], [nan, nan]]):
        a = t(bad)
        LA.lu_factor_ex(a)
        LA.cholesky_ex(a)
        LA.solve_triangular(a, t(np.ones((2, 1))), upper=True)
        LA.slogdet(a)
    assert np.isnan(n_(LA.solve(t([[nan, 0.0], [0.0, 1.0]]), t([1.0, 1.0])))[0])
    assert np.isnan(n_(LA.det(t([[nan, 0.0], [0.0, 1.0]]))))
    # a zero on a triangular diagonal divides by zero, as LAPACK's trsm and PyTorch do
    assert np.isinf(n_(LA.solve_triangular(t([[0.0, 1.0], [0.0, 1.0]]), t([[2.0], [1.0]]), upper=True))).any()


def n_(x):
    return np.asarray(x.numpy())


@pytest.mark.parametrize("threads", [1, 2])
def test_batches_and_large_matrices(threads):
    previous = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for complex_ in (False, True):
            a = well_conditioned(64, 5, 5, complex_=complex_)
            b = arr(64, 5, 3, complex_=complex_)
            close(LA.solve(t(a), t(b)), np.linalg.solve(a, b))
            close(LA.solve(t(a[0]), t(b)), np.linalg.solve(a[0], b))  # one A, factored once for 64 B
            close(LA.inv(t(a)), np.linalg.inv(a))
            close(LA.det(t(a)), np.linalg.det(a))
            p = spd(64, 5, 5, complex_=complex_)
            close(LA.cholesky(t(p)), np.linalg.cholesky(p))
            upper = np.triu(a)
            close(LA.solve_triangular(t(upper), t(b), upper=True), np.linalg.solve(upper, b))
            close(LA.solve_triangular(t(upper[0]), t(b), upper=True), np.linalg.solve(upper[0], b))
        big = well_conditioned(300, 300)
        rhs = arr(300, 4)
        close(LA.solve(t(big), t(rhs)), np.linalg.solve(big, rhs), 1e-9)
        close(LA.inv(t(big)), np.linalg.inv(big), 1e-9)
        close(LA.slogdet(t(big)).logabsdet, np.linalg.slogdet(big)[1], 1e-9)
        p = spd(300, 300)
        close(LA.cholesky(t(p)), np.linalg.cholesky(p), 1e-9)
        close(LA.cholesky(t(p.T.copy()).mT), np.linalg.cholesky(p), 1e-9)  # a non-contiguous input
        with pytest.raises(LA.LinAlgError, match=r"\[linalg.solve\] The solver failed because the input matrix is "
                                                 r"singular"):
            LA.solve(t(np.ones((3, 3))), t(arr(8, 3, 2)))  # one singular A for a batch of B
    finally:
        ember.set_num_threads(previous)


def test_single_precision_solvers():
    a = well_conditioned(8, 6, 6).astype(np.float32)
    b = arr(8, 6, 2).astype(np.float32)
    x = LA.solve(ember.tensor(a), ember.tensor(b))
    assert x.dtype == ember.float32
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a.astype(np.float64), b), rtol=1e-4, atol=1e-5)
    c = (well_conditioned(4, 4, complex_=True)).astype(np.complex64)
    np.testing.assert_allclose(LA.inv(ember.tensor(c)).numpy(), np.linalg.inv(c.astype(np.complex128)), atol=1e-5)
    p = spd(4, 4).astype(np.float32)
    np.testing.assert_allclose(LA.cholesky(ember.tensor(p)).numpy(), np.linalg.cholesky(p.astype(np.float64)),
                               atol=1e-5)


def test_small_kernels_agree_with_lapack():
    # Below a size the own loops run (Note [small matrices]); they pick LAPACK's pivots: the first
    # largest |re| + |im| (here 2+2j over 3, though |2+2j| < 3), as getrf does for large matrices
    block = np.array([[3.0, 1.0], [2.0 + 2.0j, 1.0]])
    for size in (2, 80):  # own kernel, LAPACK
        a = np.eye(size, dtype=complex)
        a[:2, :2] = block
        LU, piv = LA.lu_factor(t(a))
        assert piv.tolist()[:2] == [2, 2]
        close(LA.det(t(a)), np.linalg.det(a))
    for n in (4, 20, 30, 70, 130):  # both sides of each threshold
        a = well_conditioned(2, n, n)
        b = arr(2, n, 3)
        close(LA.solve(t(a), t(b)), np.linalg.solve(a, b), 1e-9)
        p = spd(2, n, n)
        close(LA.cholesky(t(p)), np.linalg.cholesky(p), 1e-9)
        upper = np.triu(a)
        close(LA.solve_triangular(t(upper), t(b), upper=True), np.linalg.solve(upper, b), 1e-9)
