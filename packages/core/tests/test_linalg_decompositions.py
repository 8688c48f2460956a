"""ember.linalg decompositions (svd, svdvals, eigh, eigvalsh, qr, householder_product, lu_factor,
lu_factor_ex, lu, lu_solve, eig, eigvals) against numpy.linalg in float64 and complex128:
reconstruction, orthonormality, values and (phase-normalized) vectors; batched, non-contiguous,
zero-size, wide / tall and rank-deficient inputs; float32 accuracy; PyTorch's errors; derivatives
by gradcheck (reverse and forward mode) on gauge-invariant functions of the vectors."""

from __future__ import annotations

import numpy as np
import pytest

import ember
from ember.autograd import gradcheck, gradgradcheck

RNG = np.random.default_rng(7)
LA = ember.linalg
KINDS = pytest.mark.parametrize("complex_", [False, True], ids=["real", "complex"])


def arr(*shape, complex_=False):
    a = RNG.standard_normal(shape)
    return a + 1j * RNG.standard_normal(shape) if complex_ else a


def t(a, requires_grad=False):
    a = np.asarray(a)
    return ember.tensor(a, dtype=ember.complex128 if np.iscomplexobj(a) else ember.float64,
                        requires_grad=requires_grad)


def n(x):
    return np.asarray(x.detach().numpy())


def close(got, want, tol=1e-10):
    np.testing.assert_allclose(n(got) if isinstance(got, ember.Tensor) else got, want, rtol=tol, atol=tol)


def mH(a):
    return np.conj(np.swapaxes(a, -1, -2))


def assert_orthonormal_columns(q, tol=1e-10):
    q = n(q)
    close(mH(q) @ q, np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2), tol)


def same_up_to_phase(got, want, tol=1e-8):
    """Columns of `got` equal those of `want` times a unit-modulus factor each."""
    phase = np.sum(np.conj(want) * got, axis=-2, keepdims=True)
    np.testing.assert_allclose(np.abs(phase), 1.0, rtol=tol, atol=tol)
    np.testing.assert_allclose(got, want * phase, rtol=tol, atol=tol)


# ---- svd ------------------------------------------------------------------------------------------

@KINDS
@pytest.mark.parametrize("shape", [(3, 5, 4), (2, 3, 6), (4, 4)], ids=["tall", "wide", "square"])
def test_svd_matches_numpy(complex_, shape):
    a = arr(*shape, complex_=complex_)
    k = min(shape[-2:])
    U, S, Vh = LA.svd(t(a))
    assert U.shape == shape[:-1] + (shape[-2],) and Vh.shape == shape[:-2] + (shape[-1],) * 2
    assert S.dtype == ember.float64
    want_u, want_s, want_vh = np.linalg.svd(a)
    close(S, want_s)
    assert_orthonormal_columns(U)
    assert_orthonormal_columns(Vh.mH)
    close(n(U)[..., :k] * n(S)[..., None, :] @ n(Vh)[..., :k, :], a)
    same_up_to_phase(n(U)[..., :k], want_u[..., :k])
    same_up_to_phase(mH(n(Vh))[..., :k], mH(want_vh)[..., :k])
    Ur, Sr, Vhr = LA.svd(t(a), full_matrices=False)
    assert Ur.shape == shape[:-1] + (k,) and Vhr.shape == shape[:-2] + (k, shape[-1])
    close(n(Ur) * n(Sr)[..., None, :] @ n(Vhr), a)
    close(LA.svdvals(t(a)), want_s)


def test_svd_non_contiguous_rank_deficient_float32_and_empty():
    a = arr(4, 6)
    at = t(a.T).mT  # the same values through a transposed view
    assert not at.is_contiguous()
    close(LA.svdvals(at), np.linalg.svd(a, compute_uv=False))
    low = arr(6, 2) @ arr(2, 5)  # rank 2
    U, S, Vh = LA.svd(t(low))
    close(S[2:], np.zeros(3), 1e-12)
    assert_orthonormal_columns(U)
    assert_orthonormal_columns(Vh.mH)
    close(n(U)[:, :5] * n(S) @ n(Vh), low)
    zero = LA.svd(t(np.zeros((3, 2))))
    close(zero.S, np.zeros(2))
    assert_orthonormal_columns(zero.U)  # still a basis, as LAPACK gives
    f32 = ember.tensor(a.astype(np.float32))
    s32 = LA.svdvals(f32)
    assert s32.dtype == ember.float32
    np.testing.assert_allclose(n(s32), np.linalg.svd(a, compute_uv=False), rtol=1e-5)
    c64 = ember.tensor(arr(3, 3, complex_=True).astype(np.complex64))
    assert LA.svd(c64).S.dtype == ember.float32
    U, S, Vh = LA.svd(t(np.zeros((0, 3, 2))))
    assert U.shape == (0, 3, 3) and S.shape == (0, 2) and Vh.shape == (0, 2, 2)
    U, S, Vh = LA.svd(t(np.zeros((2, 0, 3))))
    assert U.shape == (2, 0, 0) and S.shape == (2, 0) and Vh.shape == (2, 3, 3)
    close(Vh, np.broadcast_to(np.eye(3), (2, 3, 3)))
    assert LA.svd(t(np.zeros((2, 0, 3))), full_matrices=False).Vh.shape == (2, 0, 3)
    assert LA.svdvals(t(np.zeros((0, 0)))).shape == (0,)
    s = LA.svdvals(t(np.array([[np.nan, 1.0], [0.0, 1.0]])))
    assert np.isnan(n(s)).all()


# ---- eigh -----------------------------------------------------------------------------------------

@KINDS
def test_eigh_matches_numpy(complex_):
    x = arr(3, 5, 5, complex_=complex_)
    h = x + mH(x)
    w, V = LA.eigh(t(h))
    assert w.dtype == ember.float64 and V.dtype == t(h).dtype
    want_w, want_v = np.linalg.eigh(h)
    close(w, want_w)
    assert_orthonormal_columns(V)
    close(n(V) * n(w)[..., None, :] @ mH(n(V)), h)
    same_up_to_phase(n(V), want_v)
    close(LA.eigvalsh(t(h)), want_w)
    # UPLO: only that triangle is read (the other holds garbage)
    garbage_lower = np.triu(h) + np.tril(arr(5, 5, complex_=complex_) * 100, -1)
    close(LA.eigvalsh(t(garbage_lower), UPLO="U"), want_w)
    close(LA.eigh(t(garbage_lower), UPLO="u").eigenvalues, want_w)
    garbage_upper = np.tril(h) + np.triu(arr(5, 5, complex_=complex_) * 100, 1)
    close(LA.eigvalsh(t(garbage_upper)), want_w)


def test_eigh_repeated_non_contiguous_float32_and_empty():
    w, V = LA.eigh(t(np.eye(4) * 2.0))
    close(w, [2.0] * 4)
    assert_orthonormal_columns(V)
    q, _ = np.linalg.qr(arr(5, 5))
    h = q @ np.diag([1.0, 1.0, 3.0, 3.0, -2.0]) @ q.T  # repeated eigenvalues
    w, V = LA.eigh(t(h))
    close(w, [-2.0, 1.0, 1.0, 3.0, 3.0])
    assert_orthonormal_columns(V)
    close(n(V) * n(w) @ n(V).T, h)
    s = arr(4, 4)
    s = s + s.T
    st = t(s).mT[::1]
    close(LA.eigvalsh(t(s[:, ::-1].T[::-1].copy()).mT), np.linalg.eigvalsh(s))
    close(LA.eigvalsh(st), np.linalg.eigvalsh(s))
    w32 = LA.eigvalsh(ember.tensor(s.astype(np.float32)))
    np.testing.assert_allclose(n(w32), np.linalg.eigvalsh(s), rtol=1e-5, atol=1e-5)
    w, V = LA.eigh(t(np.zeros((0, 3, 3))))
    assert w.shape == (0, 3) and V.shape == (0, 3, 3)
    assert LA.eigvalsh(t(np.zeros((2, 0, 0)))).shape == (2, 0)


# ---- qr -------------------------------------------------------------------------------------------

@KINDS
@pytest.mark.parametrize("shape", [(2, 5, 3), (3, 6), (4, 4)], ids=["tall", "wide", "square"])
def test_qr_matches_numpy(complex_, shape):
    a = arr(*shape, complex_=complex_)
    m, nn = shape[-2:]
    k = min(m, nn)
    for mode in ("reduced", "complete"):
        Q, R = LA.qr(t(a), mode=mode)
        want_q, want_r = np.linalg.qr(a, mode=mode)  # LAPACK's geqrf / orgqr, the same conventions
        close(Q, want_q)
        close(R, want_r)
        assert Q.shape == shape[:-1] + ((k,) if mode == "reduced" else (m,))
        assert_orthonormal_columns(Q)
        close(n(Q) @ n(R), a)
        close(n(R), np.triu(n(R)), 0)
    Q, R = LA.qr(t(a), mode="r")
    assert Q.shape == (0,)
    close(R, np.linalg.qr(a, mode="r") if a.ndim == 2 else np.linalg.qr(a)[1])


def test_qr_non_contiguous_rank_deficient_and_empty():
    a = arr(5, 4)
    Q, R = LA.qr(t(a.T.copy()).mT)
    close(Q, np.linalg.qr(a)[0])
    low = arr(5, 2) @ arr(2, 4)
    Q, R = LA.qr(t(low))
    assert_orthonormal_columns(Q)
    close(n(Q) @ n(R), low)
    Q, R = LA.qr(t(np.zeros((0, 4, 3))))
    assert Q.shape == (0, 4, 3) and R.shape == (0, 3, 3)
    Q, R = LA.qr(t(np.zeros((3, 0))), mode="complete")
    close(Q, np.eye(3))
    assert R.shape == (3, 0)


@KINDS
def test_householder_product(complex_):
    a = arr(2, 5, 3, complex_=complex_)
    tau = arr(2, 2, complex_=complex_)
    want = []
    for b in range(2):
        q = np.eye(5, dtype=a.dtype)
        for i in range(2):
            v = np.zeros(5, dtype=a.dtype)
            v[i] = 1
            v[i + 1:] = a[b, i + 1:, i]
            q = q @ (np.eye(5) - tau[b, i] * np.outer(v, np.conj(v)))
        want.append(q[:, :3])
    close(LA.householder_product(t(a), t(tau)), np.stack(want))
    # geqrf's reflectors give back qr's Q (the product of the factored reflectors)
    x = arr(4, 3, complex_=complex_)
    Q = LA.qr(t(x)).Q
    assert_orthonormal_columns(Q)
    assert LA.householder_product(t(np.zeros((0, 3, 2))), t(np.zeros((0, 2)))).shape == (0, 3, 2)


# ---- lu -------------------------------------------------------------------------------------------

@KINDS
@pytest.mark.parametrize("shape", [(3, 4, 4), (5, 3), (3, 5)], ids=["square", "tall", "wide"])
def test_lu_reconstructs(complex_, shape):
    a = arr(*shape, complex_=complex_)
    m, nn = shape[-2:]
    k = min(m, nn)
    P, L, U = LA.lu(t(a))
    assert P.shape == shape[:-2] + (m, m) and L.shape == shape[:-2] + (m, k) and U.shape == shape[:-2] + (k, nn)
    close(n(P) @ n(L) @ n(U), a)
    close(n(L), np.tril(n(L)), 0)
    close(np.diagonal(n(L), axis1=-2, axis2=-1), 1.0, 0)
    # partial pivoting; LAPACK picks a complex pivot by |re| + |im|, which bounds |l| by sqrt(2)
    assert np.abs(n(L)).max() <= (np.sqrt(2) if complex_ else 1) + 1e-12
    close(n(U), np.triu(n(U)), 0)
    LU, piv = LA.lu_factor(t(a))
    assert piv.dtype == ember.int32 and piv.shape == shape[:-2] + (k,)
    assert n(piv).min() >= 1 and n(piv).max() <= m
    close(np.tril(n(LU)[..., :, :k], -1) + np.eye(m, k), n(L))
    close(np.triu(n(LU)[..., :k, :]), n(U))
    LU2, piv2, info = LA.lu_factor_ex(t(a))
    close(LU2, n(LU), 0)
    assert (n(piv2) == n(piv)).all() and (n(info) == 0).all()


@KINDS
def test_lu_solve_matches_numpy(complex_):
    a = arr(3, 4, 4, complex_=complex_) + 4 * np.eye(4)
    b = arr(3, 4, 2, complex_=complex_)
    LU, piv = LA.lu_factor(t(a))
    close(LA.lu_solve(LU, piv, t(b)), np.linalg.solve(a, b))
    close(LA.lu_solve(LU, piv, t(b), adjoint=True), np.linalg.solve(mH(a), b))
    bt = np.swapaxes(b, -1, -2)
    close(LA.lu_solve(LU, piv, t(bt), left=False), bt @ np.linalg.inv(a))
    close(LA.lu_solve(LU, piv, t(bt), left=False, adjoint=True), bt @ np.linalg.inv(mH(a)))
    close(LA.lu_solve(LU[0], piv[0], t(b)), np.linalg.solve(a[0], b))  # broadcast over B's batch
    close(LA.lu_solve(LU, piv, t(b[0])), np.linalg.solve(a, b[0]))  # and over A's
    close(LA.lu_solve(LU, piv, t(np.swapaxes(bt, -1, -2).copy()).mT.mT), np.linalg.solve(a, b))
    assert LA.lu_solve(LU, piv, t(np.zeros((3, 4, 0), dtype=b.dtype))).shape == (3, 4, 0)


def test_lin_alg_error():
    assert issubclass(LA.LinAlgError, RuntimeError) and LA.LinAlgError.__name__ == "LinAlgError"
    singular = t(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(LA.LinAlgError, match=r"\[linalg.inv\] The diagonal element 2 is zero"):
        LA.inv(singular)
    with pytest.raises(LA.LinAlgError, match=r"\[linalg.solve\] The solver failed because the input matrix is singular"):
        LA.solve(singular, t(np.ones((2, 1))))
    with pytest.raises(LA.LinAlgError, match=r"the leading minor of order 2 is not positive-definite"):
        LA.cholesky(singular)
    with pytest.raises(LA.LinAlgError, match=r"\[linalg.lu_factor\] U\[2,2\] is zero"):
        LA.lu_factor(singular)
    with pytest.raises(RuntimeError):  # still a RuntimeError
        LA.lu_factor_ex(singular, check_errors=True)


def test_lu_singular_and_empty():
    singular = t(np.array([[1.0, 2.0], [2.0, 4.0]]))
    with pytest.raises(RuntimeError, match=r"\[linalg.lu_factor\] U\[2,2\] is zero and using it on lu_solve would "
                                           r"result in a division by zero"):
        LA.lu_factor(singular)
    with pytest.raises(RuntimeError, match=r"\(Batch element 1\): U\[2,2\] is zero"):
        LA.lu_factor(t(np.stack([np.eye(2), n(singular)])))
    LU, piv, info = LA.lu_factor_ex(t(np.stack([np.eye(2), n(singular)])))
    assert n(info).tolist() == [0, 2]
    P, L, U = LA.lu(singular)  # lu does not check
    close(n(P) @ n(L) @ n(U), n(singular))
    LU, piv = LA.lu_factor(t(np.zeros((0, 3, 3))))
    assert LU.shape == (0, 3, 3) and piv.shape == (0, 3)
    P, L, U = LA.lu(t(np.zeros((2, 0, 0))))
    assert P.shape == (2, 0, 0) and L.shape == (2, 0, 0) and U.shape == (2, 0, 0)


# ---- eig ------------------------------------------------------------------------------------------

def same_spectrum(got, want, tol=1e-8):
    """The same multiset of complex eigenvalues (matched greedily, nearest first)."""
    got, want = list(np.asarray(got).ravel()), list(np.asarray(want).ravel())
    assert len(got) == len(want)
    for w in want:
        i = int(np.argmin([abs(g - w) for g in got]))
        assert abs(got.pop(i) - w) <= tol * max(1.0, abs(w)), (w, got)


@KINDS
def test_eig_matches_numpy(complex_):
    a = arr(3, 6, 6, complex_=complex_)
    w, V = LA.eig(t(a))
    assert w.dtype == ember.complex128 and V.dtype == ember.complex128
    want_w = np.linalg.eigvals(a)
    for b in range(3):
        same_spectrum(n(w)[b], want_w[b])
    wv, vv = n(w), n(V)
    close(a @ vv, vv * wv[..., None, :], 1e-9)
    close(np.linalg.norm(vv, axis=-2), 1.0)
    big = np.argmax(np.abs(vv), axis=-2)  # LAPACK's normalization: the largest entry real
    assert np.abs(np.take_along_axis(vv, big[..., None, :], axis=-2).imag).max() < 1e-12
    same_spectrum(n(LA.eigvals(t(a)))[0], want_w[0])


def test_eig_special_inputs():
    rot = t(np.array([[0.0, -1.0], [1.0, 0.0]]))  # real input, complex eigenvalues
    same_spectrum(n(LA.eigvals(rot)), [-1j, 1j])
    tri = np.triu(arr(5, 5)) + np.diag(np.arange(5.0))
    close(np.sort(n(LA.eigvals(t(tri))).real), np.sort(np.diag(tri)), 1e-9)
    a = arr(5, 5)
    same_spectrum(n(LA.eigvals(t(a.T.copy()).mT)), np.linalg.eigvals(a))
    w, V = LA.eig(t(np.eye(3)))
    close(w, np.ones(3))
    assert LA.eig(t(np.zeros((0, 4, 4)))).eigenvectors.shape == (0, 4, 4)
    assert LA.eigvals(t(np.zeros((0, 0)))).shape == (0,)
    jordan = t(np.array([[1.0, 1.0], [0.0, 1.0]]))  # defective: eigenvalue 1 twice
    close(LA.eigvals(jordan), np.ones(2), 1e-7)
    w32 = LA.eigvals(ember.tensor(a.astype(np.float32)))
    assert w32.dtype == ember.complex64
    same_spectrum(n(w32), np.linalg.eigvals(a), 1e-4)


def test_single_precision_nan_and_out():
    rng_c = arr(3, 4, 4, complex_=True)
    h = rng_c + mH(rng_c)
    for dtype, tol in ((np.float32, 1e-4), (np.complex64, 1e-4)):
        a = (rng_c if dtype == np.complex64 else rng_c.real).astype(dtype)
        x = ember.tensor(a)
        Q, R = LA.qr(x)
        assert Q.dtype == x.dtype and R.dtype == x.dtype
        np.testing.assert_allclose(n(Q) @ n(R), a, atol=tol)
        P, L, U = LA.lu(x)
        np.testing.assert_allclose(n(P) @ n(L) @ n(U), a, atol=tol)
        LU, piv = LA.lu_factor(x)
        b = a[..., :2]
        np.testing.assert_allclose(n(LA.lu_solve(LU, piv, ember.tensor(b))), np.linalg.solve(a.astype(np.complex128), b),
                                   atol=1e-3)
        hh = (h if dtype == np.complex64 else h.real).astype(dtype)
        w, V = LA.eigh(ember.tensor(hh))
        assert w.dtype == ember.float32 and V.dtype == x.dtype
        np.testing.assert_allclose(n(w), np.linalg.eigvalsh(hh.astype(np.complex128)), atol=tol)
        U, S, Vh = LA.svd(x)
        np.testing.assert_allclose(n(U) * n(S)[..., None, :] @ n(Vh), a, atol=tol)
    nan = t(np.array([[np.nan, 1.0], [1.0, 0.0]]))
    assert np.isnan(n(LA.eigvalsh(nan))).all()
    assert np.isnan(n(LA.eig(nan).eigenvectors)).all()
    # the unread triangle may hold anything, NaN included
    close(LA.eigvalsh(t(np.array([[2.0, np.nan], [0.0, 3.0]]))), [2.0, 3.0])
    out = ember.empty(3, dtype=ember.float64)
    a = arr(3, 3)
    LA.svdvals(t(a), out=out)
    close(out, np.linalg.svd(a, compute_uv=False))
    LA.eigvalsh(t(a + a.T), out=out)
    close(out, np.linalg.eigvalsh(a + a.T))


# ---- bad inputs -----------------------------------------------------------------------------------

def test_bad_inputs():
    vec = t(np.ones(3))
    for fn, name in ((LA.svd, "svd"), (LA.svdvals, "svdvals"), (LA.qr, "qr"), (LA.lu_factor, "lu_factor"),
                     (LA.eigh, "eigh"), (LA.eig, "eig")):
        with pytest.raises(RuntimeError, match=rf"\[linalg.{name}\] The input tensor A must have at least 2 dimensions"):
            fn(vec)
    ints = ember.tensor([[1, 2], [3, 4]])
    for fn, name in ((LA.svd, "svd"), (LA.eigvalsh, "eigvalsh"), (LA.qr, "qr"), (LA.lu, "lu_factor"),
                     (LA.eigvals, "eigvals")):
        with pytest.raises(RuntimeError, match=rf"\[linalg.{name}\] Expected a floating point or complex tensor "
                                               r"as input. Got int64"):
            fn(ints)
    with pytest.raises(RuntimeError, match=r"Expected UPLO argument to be 'L' or 'U', but got X"):
        LA.eigh(t(np.eye(2)), UPLO="X")
    with pytest.raises(RuntimeError, match=r"A must be batches of square matrices, but they are 2 by 3 matrices"):
        LA.eigh(t(np.ones((2, 3))))
    with pytest.raises(RuntimeError, match=r"A must be batches of square matrices, but they are 3 by 2 matrices"):
        LA.eig(t(np.ones((3, 2))))
    with pytest.raises(RuntimeError, match=r"qr received unrecognized mode 'full' but expected one of 'reduced' "
                                           r"\(default\), 'r', or 'complete'"):
        LA.qr(t(np.eye(2)), mode="full")
    with pytest.raises(NotImplementedError, match=r"LU without pivoting is not implemented on the CPU"):
        LA.lu_factor(t(np.eye(2)), pivot=False)
    LU, piv = LA.lu_factor(t(np.eye(3) * 2))
    with pytest.raises(RuntimeError, match=r"pivots should be a Tensor of scalar type torch.int32"):
        LA.lu_solve(LU, piv.to(ember.int64), t(np.ones((3, 1))))
    with pytest.raises(RuntimeError, match=r"Incompatible shapes of A and B for the equation AX = B \(3x3 and 2x1\)"):
        LA.lu_solve(LU, piv, t(np.ones((2, 1))))
    with pytest.raises(RuntimeError, match=r"Expected LU and B to have the same dtype"):
        LA.lu_solve(LU, piv, ember.ones(3, 1, dtype=ember.float32))
    with pytest.raises(IndexError, match=r"expected pivots between 1 and 3, but got 7"):
        LA.lu_solve(LU, ember.tensor([1, 7, 3], dtype=ember.int32), t(np.ones((3, 1))))
    with pytest.raises(RuntimeError, match=r"Expected LU.shape\[:-1\] and pivots.shape to be the same"):
        LA.lu_solve(LU, ember.tensor([1, 2], dtype=ember.int32), t(np.ones((3, 1))))
    with pytest.raises(RuntimeError, match=r"input.shape\[-2\] must be greater than or equal to input.shape\[-1\]"):
        LA.householder_product(t(np.ones((2, 3))), t(np.ones(2)))
    with pytest.raises(RuntimeError, match=r"input.shape\[-1\] must be greater than or equal to tau.shape\[-1\]"):
        LA.householder_product(t(np.ones((3, 2))), t(np.ones(3)))
    with pytest.raises(RuntimeError, match=r"\[linalg.svd\] keyword argument `driver=` is only supported on CUDA"):
        LA.svd(t(np.eye(2)), driver="gesvd")
    with pytest.raises(RuntimeError, match=r"\[linalg.svdvals\] keyword argument `driver=`"):
        LA.svdvals(t(np.eye(2)), driver="gesvd")
    with pytest.raises(RuntimeError, match=r"tau dtype float32 does not match input dtype float64"):
        LA.householder_product(t(np.ones((3, 2))), ember.ones(2, dtype=ember.float32))


# ---- derivatives ----------------------------------------------------------------------------------

def distinct_spectrum(rows, cols, complex_=False):
    """A matrix with well-separated singular values (so the vectors' derivatives are well conditioned)."""
    u, _ = np.linalg.qr(arr(rows, rows, complex_=complex_))
    v, _ = np.linalg.qr(arr(cols, cols, complex_=complex_))
    k = min(rows, cols)
    s = np.zeros((rows, cols))
    s[np.arange(k), np.arange(k)] = np.arange(k, 0, -1) + 1.0
    return u @ s @ mH(v)


@KINDS
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3)], ids=["tall", "wide", "square"])
def test_svd_derivatives(complex_, shape):
    x = t(distinct_spectrum(*shape, complex_=complex_), True)

    def gauge_invariant(a):
        U, S, Vh = LA.svd(a, full_matrices=False)
        return U.abs(), S, Vh.abs(), (U * S.unsqueeze(-2)) @ Vh

    assert gradcheck(gauge_invariant, (x,), check_forward_ad=True)
    assert gradcheck(LA.svdvals, (x,), check_forward_ad=True)
    if shape[0] == shape[1]:  # full and reduced agree for square matrices
        assert gradcheck(lambda a: LA.svd(a)[0].abs(), (x,), check_forward_ad=True)


def test_svd_ill_defined_phase_raises():
    x = t(distinct_spectrum(3, 3, complex_=True), True)
    U, S, Vh = LA.svd(x)
    # the part of U[0, 0] that turns most with its phase (Re turns with Im, and Im with Re)
    u = complex(U[0, 0].detach().item())
    part = U[0, 0].real if abs(u.imag) > abs(u.real) else U[0, 0].imag
    with pytest.raises(RuntimeError, match=r"specified up to multiplication by e\^\{i phi\}"):
        part.backward()


@KINDS
def test_eigh_derivatives(complex_):
    q, _ = np.linalg.qr(arr(4, 4, complex_=complex_))
    x = t(q @ np.diag([1.0, 2.5, 4.0, 6.0]) @ mH(q), True)

    def sym(a):  # perturbations stay Hermitian
        return (a + a.mH) * 0.5

    def gauge_invariant(a, uplo="L"):
        w, V = LA.eigh(sym(a), UPLO=uplo)
        return w, V.abs(), (V * w.unsqueeze(-2)) @ V.mH

    assert gradcheck(gauge_invariant, (x,), check_forward_ad=True)
    assert gradcheck(lambda a: gauge_invariant(a, "U"), (x,), check_forward_ad=True)
    assert gradcheck(lambda a: LA.eigvalsh(sym(a)), (x,), check_forward_ad=True)


@KINDS
@pytest.mark.parametrize("shape", [(2, 5, 3), (4, 4), (2, 3, 5)], ids=["tall", "square", "wide"])
def test_qr_derivatives(complex_, shape):
    x = t(arr(*shape, complex_=complex_) + np.eye(*shape[-2:]), True)
    assert gradcheck(lambda a: LA.qr(a), (x,), check_forward_ad=True)
    assert gradcheck(lambda a: LA.qr(a).Q, (x,), check_forward_ad=True)
    if shape[-2] <= shape[-1]:  # complete is reduced then
        assert gradcheck(lambda a: LA.qr(a, mode="complete").R, (x,), check_forward_ad=True)


@KINDS
def test_householder_product_derivatives(complex_):
    a = t(arr(2, 5, 3, complex_=complex_), True)
    tau = t(arr(2, 2, complex_=complex_) * 0.5, True)
    assert gradcheck(LA.householder_product, (a, tau), check_forward_ad=True)
    assert gradcheck(LA.householder_product, (a[0], t(arr(3, complex_=complex_), True)), check_forward_ad=True)


def test_qr_derivative_errors():
    x = t(arr(4, 3), True)
    with pytest.raises(RuntimeError, match=r"depends on Q, which is not computed when mode='r'"):
        LA.qr(x, mode="r").R.sum().backward()
    with pytest.raises(RuntimeError, match=r"not differentiable when mode='complete' and nrows > ncols"):
        LA.qr(x, mode="complete").R.sum().backward()


@KINDS
def test_lu_derivatives(complex_):
    a = t(arr(2, 3, 3, complex_=complex_) + 3 * np.eye(3), True)
    b = t(arr(2, 3, 2, complex_=complex_), True)
    assert gradcheck(lambda x: LA.lu_factor(x).LU, (a,), check_forward_ad=True)
    assert gradcheck(lambda x: LA.lu_factor_ex(x).LU, (a,), check_forward_ad=True)
    assert gradcheck(lambda x: LA.lu(x)[1:], (a,), check_forward_ad=True)
    for shape in ((2, 5, 3), (3, 5)):  # tall and wide
        for r in (shape, shape[:-2] + shape[-2:][::-1]):
            x = t(arr(*r, complex_=complex_) + 3 * np.eye(*r[-2:]), True)
            assert gradcheck(lambda y: LA.lu_factor(y).LU, (x,), check_forward_ad=True)
            assert gradcheck(lambda y: LA.lu(y)[1:], (x,), check_forward_ad=True)
    LU, piv = LA.lu_factor(a.detach())
    LU.requires_grad_(True)
    for left in (True, False):
        for adjoint in (False, True):
            assert gradcheck(lambda f, y, lf=left, adj=adjoint: LA.lu_solve(f, piv, y if lf else y.mT, left=lf,
                                                                            adjoint=adj),
                             (LU, b), check_forward_ad=True)
    assert gradcheck(lambda f, y: LA.lu_solve(f[0], piv[0], y), (LU, b), check_forward_ad=True)  # broadcast
    # through the factorization: lu_solve(lu_factor(A), B) is solve(A, B)
    assert gradcheck(lambda x, y: LA.lu_solve(*LA.lu_factor(x), y), (a, b), check_forward_ad=True)


@KINDS
def test_eig_derivatives(complex_):
    a = t(arr(4, 4, complex_=complex_) + np.diag([0.0, 3.0, 6.0, 9.0]), True)

    def gauge_invariant(x):
        w, V = LA.eig(x)
        return w, V.abs()

    assert gradcheck(gauge_invariant, (a,), check_forward_ad=True)
    assert gradcheck(LA.eigvals, (a,), check_forward_ad=True)


def test_second_order():
    x = t(distinct_spectrum(3, 3), True)
    assert gradgradcheck(LA.svdvals, (x,))
    assert gradgradcheck(lambda a: LA.svd(a)[0].abs(), (x,))
    assert gradgradcheck(lambda a: LA.qr(a).R, (x,))
    assert gradgradcheck(lambda a: LA.eigvalsh((a + a.mT) * 0.5), (x,))
    assert gradgradcheck(lambda a: LA.eigh((a + a.mT) * 0.5).eigenvectors.abs(), (x,))
    assert gradgradcheck(lambda a: LA.lu_factor(a).LU, (x,))
    assert gradgradcheck(lambda a: ember.view_as_real(LA.eigvals(a)), (x,))  # (gradgradcheck samples real outputs only)
    b = t(arr(3, 2), True)
    LU, piv = LA.lu_factor(x.detach())
    assert gradgradcheck(lambda f, y: LA.lu_solve(f, piv, y), (LU.requires_grad_(True), b))
    assert gradgradcheck(LA.householder_product, (t(arr(4, 3), True), t(arr(2) * 0.5, True)))


@pytest.mark.parametrize("shape", [(0, 3, 2), (2, 0, 3), (0, 3, 3), (2, 0, 0)])
def test_zero_size_backward(shape):
    x = t(np.zeros(shape), True)
    square = shape[-1] == shape[-2]
    fns = [lambda a: LA.svd(a, full_matrices=False), LA.svdvals, LA.qr, lambda a: LA.lu_factor(a).LU,
           lambda a: LA.lu(a)[1:]]
    if square:
        fns += [LA.eigh, LA.eigvalsh, lambda a: LA.eig(a)[0].abs(), lambda a: LA.lu_solve(*LA.lu_factor(a), a)]
    for fn in fns:
        out = fn(x)
        total = sum(o.sum() for o in (out if isinstance(out, tuple) else (out,)))
        (gx,) = ember.autograd.grad(total, (x,))
        assert gx.shape == shape


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.float32, 1e-5), (np.complex128, 1e-12)])
def test_svd_of_exactly_rank_deficient_matrices(dtype, tol):
    # rotations leave rounding-noise columns behind here; they must neither stall the sweeps
    # nor become left singular vectors
    for a in (np.ones((3, 3)), np.outer([1, 2, 3], [4, 5, 6]), np.kron(np.eye(2), np.ones((3, 3))), np.ones((5, 2)),
              np.ones((2, 5)), np.diag([1.0, 1e-20, 0.0])):
        a = a.astype(dtype)
        U, S, Vh = (x.numpy() for x in LA.svd(ember.from_numpy(a)))
        k = min(a.shape)
        np.testing.assert_allclose((U[:, :k] * S) @ Vh[:k], a, atol=tol * np.abs(a).max())
        np.testing.assert_allclose(U.conj().T @ U, np.eye(a.shape[0]), atol=tol)
        np.testing.assert_allclose(Vh @ Vh.conj().T, np.eye(a.shape[1]), atol=tol)
        np.testing.assert_allclose(S, np.linalg.svd(a.astype(np.complex128), compute_uv=False),
                                   atol=tol * np.abs(a).max())
        assert int(LA.matrix_rank(ember.from_numpy(a))) == np.linalg.matrix_rank(a)
        np.testing.assert_allclose(LA.pinv(ember.from_numpy(a)).numpy(), np.linalg.pinv(a), atol=tol * 10)


# ---- on LAPACK: conventions, special values, batches on threads -----------------------------------

def test_lapack_conventions_match_numpy():
    # LAPACK on A itself (not its transpose), as NumPy and PyTorch call it: the same vectors
    a = arr(5, 4, complex_=True)
    U, S, Vh = LA.svd(t(a))
    want_u, want_s, want_vh = np.linalg.svd(a)
    close(U, want_u, 1e-9)
    close(Vh, want_vh, 1e-9)
    h = a[:4] + mH(a[:4])
    close(LA.eigh(t(h)).eigenvectors, np.linalg.eigh(h)[1], 1e-9)
    r = arr(6, 6)
    w, V = LA.eig(t(r))
    want_w, want_v = np.linalg.eig(r)
    close(w, want_w, 1e-9)
    # geev scales each vector to unit norm with its largest component real, but leaves that
    # component's sign to rounding: two OpenBLAS builds may differ by -1 per column
    got_v = n(V)
    signs = np.sign(np.real(np.sum(got_v * np.conj(want_v), axis=0)))
    np.testing.assert_allclose(got_v * signs, want_v, rtol=1e-9, atol=1e-9)


def test_special_values_give_nan_not_a_crash():
    for bad in (np.array([[np.nan, 1.0], [1.0, 0.0]]), np.array([[np.inf, 1.0], [1.0, 0.0]]),
                np.full((3, 3), -np.inf)):
        x = t(bad)
        for out in (LA.svd(x), (LA.svdvals(x),), LA.eigh(x), LA.eig(x), (LA.eigvals(x),)):
            assert all(np.isnan(n(o)).all() for o in out)
        LA.qr(x)  # geqrf / orgqr only propagate
        LA.lu(x)
    # a bad matrix in a batch spoils only its own outputs
    batch = np.stack([np.eye(3), np.full((3, 3), np.nan), np.diag([1.0, 2.0, 3.0])])
    close(LA.svdvals(t(batch))[::2], [[1.0, 1.0, 1.0], [3.0, 2.0, 1.0]])
    assert np.isnan(n(LA.eigvalsh(t(batch))[1])).all()
    close(LA.eigvalsh(t(batch))[2], [1.0, 2.0, 3.0])


@pytest.mark.parametrize("threads", [1, 2])
def test_batches_and_large_matrices(threads):
    previous = ember.get_num_threads()
    ember.set_num_threads(threads)
    try:
        for complex_ in (False, True):
            a = arr(64, 6, 4, complex_=complex_)
            close(LA.svdvals(t(a)), np.linalg.svd(a, compute_uv=False))
            U, S, Vh = LA.svd(t(a), full_matrices=False)
            close(n(U) * n(S)[..., None, :] @ n(Vh), a)
            Q, R = LA.qr(t(a))
            close(Q, np.linalg.qr(a)[0])
            close(R, np.linalg.qr(a)[1])
            h = a[..., :4, :] + mH(a[..., :4, :])
            close(LA.eigvalsh(t(h)), np.linalg.eigvalsh(h))
            w, V = LA.eig(t(a[..., :4, :]))
            close(n(V) * n(w)[..., None, :], a[..., :4, :] @ n(V), 1e-9)
        big = arr(200, 150)
        close(LA.svdvals(t(big)), np.linalg.svd(big, compute_uv=False), 1e-9)
        U, S, Vh = LA.svd(t(big))
        assert_orthonormal_columns(U, 1e-9)
        close(n(U)[:, :150] * n(S) @ n(Vh), big, 1e-9)
        Q, R = LA.qr(t(big), mode="complete")
        close(n(Q) @ n(R), big, 1e-9)
        assert_orthonormal_columns(Q, 1e-9)
        sym = big[:150] + big[:150].T
        w, V = LA.eigh(t(sym))
        close(w, np.linalg.eigvalsh(sym), 1e-9)
        close(n(V) * n(w) @ n(V).T, sym, 1e-9)
        ev = LA.eigvals(t(big[:100, :100]))
        same_spectrum(n(ev), np.linalg.eigvals(big[:100, :100]))
    finally:
        ember.set_num_threads(previous)


def test_non_contiguous_and_wide_inputs():
    a = arr(6, 6)
    view = t(a.T.copy()).mT
    same_spectrum(n(LA.eigvals(view)), np.linalg.eigvals(a))
    close(LA.eigvalsh(t(a + a.T).mT[::1]), np.linalg.eigvalsh(a + a.T))
    strided = t(arr(8, 10))[::2, ::2]  # every other row and column
    close(LA.svdvals(strided), np.linalg.svd(n(strided), compute_uv=False))
    Q, R = LA.qr(strided)
    close(n(Q) @ n(R), n(strided))
    wide = arr(2, 3, 7, complex_=True)
    U, S, Vh = LA.svd(t(wide))
    assert U.shape == (2, 3, 3) and Vh.shape == (2, 7, 7)
    close(n(U) * n(S)[..., None, :] @ n(Vh)[..., :3, :], wide)
    assert_orthonormal_columns(Vh.mH)


@KINDS
@pytest.mark.parametrize("shape", [(3, 2), (12, 10), (40, 30), (30, 40)])
def test_qr_both_sides_of_the_small_kernel_threshold(complex_, shape):
    a = arr(2, *shape, complex_=complex_)
    for mode in ("reduced", "complete"):
        Q, R = LA.qr(t(a), mode=mode)
        want_q, want_r = np.linalg.qr(a, mode=mode)
        close(Q, want_q, 1e-9)
        close(R, want_r, 1e-9)
