"""ember.lobpcg (torch.lobpcg): the k largest or smallest eigenpairs of a symmetric positive
definite matrix A, or of the generalized problem A x = lambda B x, by Knyazev's locally optimal
block preconditioned conjugate gradient method. Written from the method's description
(A. V. Knyazev, "Toward the optimal preconditioned eigensolver: LOBPCG", SIAM J. Sci. Comput. 2001;
the "ortho" variant orthonormalizes the search basis as in Duersch, Shao, Yang and Gu 2018).

Each iteration does a Rayleigh-Ritz step on the span of the current block X (n columns), the
preconditioned residuals W = iK (A X - B X diag(E)) and the previous search directions P:

    basic   the projected pencil (S^T A S, S^T B S) of S = [X, W, P], solved through a Cholesky
            factor of S^T B S (fast; loses accuracy when the basis becomes nearly dependent)
    ortho   S is made B-orthonormal first (W against X, P against both, twice; directions
            within a tolerance of the span already there are dropped), so the projected problem is
            a plain symmetric one (the default)

It stops when the first k columns' relative residuals ||r_i|| / (||x_i|| (||A|| + |e_i| ||B||))
are below tol, or after niter iterations. Gradients flow to A (symmetrized, as PyTorch does):
an eigenvalue's is x x^T, an eigenvector's comes from the reduced resolvent (A - e I)^+ on the
complement of x (eigenvalues must be simple); as in PyTorch, there is none through B.
"""

from __future__ import annotations

import builtins

from . import _C
from . import linalg as _linalg
from .autograd.function import Function, once_differentiable
from .autograd.grad_mode import no_grad


def _mm(M, X):
    return X if M is None else _C.matmul(M, X)


def _sym(M):
    return (M + M.mT) / 2


def _b_orthonormalize(V, B, drop_tol: float):
    """An orthonormal basis (in the B inner product) of V's columns, V U diag(s^-1/2) from
    eigh(V^T B V), dropping directions whose weight s falls below drop_tol times the largest
    (eigh resolves the Gram matrix's eigenvalues to its rounding error, no finer)."""
    if V.shape[-1] == 0:
        return V
    gram = _sym(_C.matmul(V.mT, _mm(B, V)))
    s, U = _linalg.eigh(gram)
    top = builtins.float(s[-1]) if s.numel() else 0.0
    if top <= 0:
        return V[:, :0]
    keep = s > drop_tol * top
    s, U = s[keep], U[:, keep]
    return _C.matmul(V, U) / s.sqrt()


def _orthonormal_complement(V, bases, B, drop_tol: float):
    """V's directions outside the B-orthonormal `bases`, B-orthonormalized: projected out and
    orthonormalized twice (once loses accuracy when most of V lay in the bases); a direction that
    kept less than drop_tol of V's largest column weight after projection is dropped."""
    if V.shape[-1] == 0:
        return V
    scale = _weight(V, B)
    for round_ in range(2):
        for Q in bases:
            V = _project_out(V, Q, B)
        if round_ == 0:
            keep = (V * _mm(B, V)).sum(0) > drop_tol * scale
            V = V[:, keep]
        V = _b_orthonormalize(V, B, drop_tol)
        if V.shape[-1] == 0:
            break
    return V


def _project_out(V, Q, B):
    """V minus its B-orthogonal projection onto the B-orthonormal columns of Q."""
    if Q.shape[-1] == 0 or V.shape[-1] == 0:
        return V
    return V - _C.matmul(Q, _C.matmul(_mm(B, Q).mT, V))


def _pick(evals, evecs, count: int, largest: builtins.bool):
    """The `count` extreme eigenpairs of an ascending eigh result, the wanted end first."""
    if largest:
        idx = _C.arange(evals.shape[0] - 1, evals.shape[0] - 1 - count, -1, dtype=_C.int64)
    else:
        idx = _C.arange(0, count, 1, dtype=_C.int64)
    return evals.index_select(0, idx), evecs.index_select(1, idx)


def _rayleigh_ritz(S, A, B, count: int, largest: builtins.bool, orthonormal: builtins.bool):
    """(values, coefficients) of the `count` wanted Ritz pairs of (A, B) on span(S)."""
    T = _sym(_C.matmul(S.mT, _C.matmul(A, S)))
    if orthonormal:
        evals, evecs = _linalg.eigh(T)
        return _pick(evals, evecs, count, largest)
    G = _sym(_C.matmul(S.mT, _mm(B, S)))
    L = _linalg.cholesky(G)
    Linv = _linalg.solve_triangular(L, _C.eye(L.shape[0], dtype=L.dtype), upper=False)
    evals, evecs = _linalg.eigh(_sym(_C.matmul(Linv, _C.matmul(T, Linv.mT))))
    evals, evecs = _pick(evals, evecs, count, largest)
    return evals, _C.matmul(Linv.mT, evecs)


def _solve(A, B, X, iK, k: int, niter: int, tol: float, largest: builtins.bool, method: str):
    """One matrix: the k wanted eigenpairs (E, X) from the starting block X (m x n)."""
    n = X.shape[-1]
    eps = 1.2e-07 if X.dtype == _C.float32 else 2.23e-16
    drop = 100 * eps  # relative weights below this are rounding error
    X = _b_orthonormalize(X, B, eps)
    if X.shape[-1] < n:
        raise ValueError("lobpcg: the columns of X must be linearly independent")
    E, C = _rayleigh_ritz(X, A, B, n, largest, True)  # X is B-orthonormal: a plain symmetric problem
    X = _C.matmul(X, C)
    x_norm = builtins.float(_linalg.norm(X))
    a_norm = builtins.float(_linalg.norm(_C.matmul(A, X))) / x_norm
    b_norm = builtins.float(_linalg.norm(_mm(B, X))) / x_norm
    P = X[:, :0]
    for _ in range(niter):
        R = _C.matmul(A, X) - _mm(B, X) * E
        rerr = _linalg.vector_norm(R, dim=0) / (_linalg.vector_norm(X, dim=0) * (a_norm + E.abs() * b_norm))
        if builtins.bool((rerr[:k] < tol).all()):
            break
        W = _mm(iK, R)
        if method == "ortho":
            # X is B-orthonormal; W and P are made B-orthonormal against it and each other
            W = _orthonormal_complement(W, [X], B, drop)
            P = _orthonormal_complement(P, [X, W], B, drop)
            S = _C.cat([X, W, P], 1)
            E, C = _rayleigh_ritz(S, A, B, n, largest, True)
        else:
            W = W / _linalg.vector_norm(W, dim=0).clamp(min=1e-300)
            S = _C.cat([X, W, P], 1)
            E, C = _rayleigh_ritz(S, A, B, n, largest, False)
        X_new = _C.matmul(S, C)
        P = _C.matmul(S[:, n:], C[n:])  # the step taken along W and P: the next search directions
        X = X_new
        if method == "basic":
            X = X / _C.sqrt((X * _mm(B, X)).sum(0))
            P = P / _linalg.vector_norm(P, dim=0).clamp(min=1e-300)
    return E[:k], X[:, :k]


def _weight(V, B) -> float:
    """The largest B-weight among V's columns (the scale for dropping after a projection)."""
    if V.shape[-1] == 0:
        return 0.0
    return builtins.float((V * _mm(B, V)).sum(0).max())


class _LobpcgGrad(Function):
    """(E, X) of a symmetric A with gradients to A: dE_i = x_i^T dA x_i and
    dx_i = -(A - e_i I)^+ dA x_i."""

    @staticmethod
    def forward(ctx, A, E, X, with_b):
        ctx.save_for_backward(A, E, X)
        ctx.with_b = with_b
        return E.clone(), X.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, gE, gX):
        if ctx.with_b:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        A, E, X = ctx.saved_tensors
        grad = _C.zeros_like(A)
        if gE is not None:
            grad = grad + _C.matmul(X * gE, X.mT)
        if gX is not None:
            eye = _C.eye(A.shape[-1], dtype=A.dtype)
            for i in range(E.shape[0]):
                x = X[:, i:i + 1]
                g = gX[:, i:i + 1]
                g = g - x * (x.mT @ g)  # the part of the gradient off x
                shifted = A - E[i] * eye + _C.matmul(x, x.mT)  # invertible when e_i is simple
                y = _linalg.solve(shifted, g)
                y = y - x * (x.mT @ y)
                grad = grad - _C.matmul(y, x.mT)
        return grad, None, None, None


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None, method=None,
           tracker=None, ortho_iparams=None, ortho_fparams=None, ortho_bparams=None):
    """The k largest (largest=True, the default) or smallest eigenpairs (E, X) of the symmetric
    positive definite A (or of the pencil (A, B)), E in that order, X's columns B-orthonormal.

    k defaults to X's columns or 1, the block size n to k (X's columns when X is given; a random
    normal block otherwise); iK is a preconditioner applied to the residuals; niter (default 1000)
    bounds the iterations and tol (default sqrt of the dtype's epsilon) the relative residuals;
    method "ortho" (default) or "basic" (see this module's docstring). A batch of matrices
    (A of shape (..., m, m)) gives (..., k) and (..., m, k). tracker and the ortho_* dictionaries
    are accepted for PyTorch compatibility; tracker must be None (Ember has no tracker hook)."""
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {tuple(A.shape)}")
    if B is not None and tuple(A.shape) != tuple(B.shape):
        raise AssertionError(f"A and B must have same shape, got {tuple(A.shape)} vs {tuple(B.shape)}")
    if tracker is not None:
        raise NotImplementedError("ember.lobpcg: tracker is not supported")
    method = "ortho" if method is None else method
    if method not in ("ortho", "basic"):
        raise ValueError(f"lobpcg: method must be 'ortho' or 'basic', got {method!r}")
    dtype = A.dtype if A.dtype in (_C.float32, _C.float64) else _C.float32
    if tol is None:
        tol = {_C.float32: 1.2e-07, _C.float64: 2.23e-16}[dtype] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) is smaller than "
                         f"3 x the number of requested eigenpairs (={n})")
    if k > n:
        raise ValueError(f"lobpcg: k (={k}) must not exceed the block size n (={n})")
    niter = 1000 if niter is None else niter
    largest = True if largest is None else largest
    if X is not None and tuple(X.shape) != tuple(A.shape[:-1]) + (n,):
        raise AssertionError(f"X shape mismatch: got {tuple(X.shape)}, expected {tuple(A.shape[:-1]) + (n,)}")
    differentiable = A.requires_grad or (B is not None and B.requires_grad)
    A_in = _sym(A.to(dtype)) if differentiable else A.to(dtype)
    with no_grad():
        A_d = A_in.detach()
        B_d = None if B is None else B.detach().to(dtype)
        iK_d = None if iK is None else iK.detach().to(dtype)
        batch = list(A.shape[:-2])
        flat_A = A_d.reshape([-1, m, m])
        flat_B = None if B_d is None else B_d.reshape([-1, m, m])
        flat_X = None if X is None else X.detach().to(dtype).reshape([-1, m, n])
        Es, Xs = [], []
        for b in range(flat_A.shape[0]):
            X0 = _C.randn([m, n], dtype=dtype) if flat_X is None else flat_X[b]
            E_b, X_b = _solve(flat_A[b], None if flat_B is None else flat_B[b], X0, iK_d, k, niter, tol, largest,
                              method)
            Es.append(E_b)
            Xs.append(X_b)
        E = _C.stack(Es).reshape(batch + [k])
        Xr = _C.stack(Xs).reshape(batch + [m, k])
    if not differentiable:
        return E, Xr
    with_b = B is not None  # as in PyTorch, backward then raises
    if batch:
        outs = [_LobpcgGrad.apply(A_b, E_b, X_b, with_b) for A_b, E_b, X_b in
                zip(A_in.reshape([-1, m, m]).unbind(0), E.reshape([-1, k]).unbind(0), Xr.reshape([-1, m, k]).unbind(0),
                    strict=True)]
        return (_C.stack([o[0] for o in outs]).reshape(batch + [k]),
                _C.stack([o[1] for o in outs]).reshape(batch + [m, k]))
    return _LobpcgGrad.apply(A_in, E, Xr, with_b)
