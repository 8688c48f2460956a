"""ember.linalg (torch.linalg): solve, inv, det, slogdet, cholesky, cholesky_ex and
solve_triangular (on LAPACK's getrf, potrf and trsm, with own loops for tiny matrices); the
decompositions svd / svdvals (gesdd), eigh / eigvalsh (syevd / heevd), qr and
householder_product (geqrf, orgqr / ungqr), lu_factor / lu_factor_ex / lu / lu_solve (getrf),
eig / eigvals (geev), all registered ops with derivatives; the products multi_dot, matmul and
vecdot; and the compositions of _composites.py (vector_norm, matrix_norm, norm, cross, diagonal,
matrix_power, matrix_exp, and on the SVD / eigh: cond, matrix_rank, pinv, lstsq). The functions
over the registered ops are in _native.py, the compositions in _composites.py and _more.py; this
module re-exports them."""

from __future__ import annotations

from .. import _C
from .._products import multi_dot
from ._composites import (
    cond,
    cross,
    diagonal,
    lstsq,
    matrix_exp,
    matrix_norm,
    matrix_power,
    matrix_rank,
    norm,
    pinv,
    vector_norm,
)
from ._more import inv_ex, solve_ex, tensorinv, tensorsolve, vander
from ._native import (
    cholesky,
    cholesky_ex,
    det,
    eig,
    eigh,
    eigvals,
    eigvalsh,
    householder_product,
    inv,
    ldl_factor,
    ldl_factor_ex,
    ldl_solve,
    lu,
    lu_factor,
    lu_factor_ex,
    lu_solve,
    matmul,
    qr,
    slogdet,
    solve,
    solve_triangular,
    svd,
    svdvals,
    vecdot,
)

# Raised where a matrix cannot be factored (singular, not positive-definite, no convergence);
# a RuntimeError, as torch.linalg.LinAlgError is.
LinAlgError = _C.LinAlgError

__all__ = ["LinAlgError", "multi_dot", "matmul", "vecdot", "solve", "inv", "det", "slogdet", "cholesky", "cholesky_ex",
           "solve_triangular", "svd", "svdvals", "eigh", "eigvalsh", "qr", "householder_product", "lu_factor",
           "lu_factor_ex", "lu", "lu_solve", "ldl_factor", "ldl_factor_ex", "ldl_solve", "eig", "eigvals"]
__all__ += ["vector_norm", "matrix_norm", "norm", "cross", "diagonal", "matrix_power", "matrix_exp", "cond",
            "matrix_rank", "pinv", "lstsq", "inv_ex", "solve_ex", "tensorinv", "tensorsolve", "vander"]
