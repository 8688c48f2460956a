"""torch.linalg's functions over Ember's registered linear-algebra ops (solve, inv, det, the
factorizations and decompositions, matmul, vecdot): argument handling and named-tuple results.
ember.linalg re-exports them; _composites.py and _more.py build on them."""

from __future__ import annotations

from collections import namedtuple

from .. import _C
from .. import return_types as _return_types
from .._args import write_out
from .._autocast_policy import autocast_policy

__all__ = ["solve", "inv", "det", "slogdet", "cholesky", "cholesky_ex", "solve_triangular", "svd", "svdvals", "eigh", "eigvalsh", "qr", "householder_product", "lu_factor", "lu_factor_ex", "lu", "lu_solve", "ldl_factor", "ldl_factor_ex", "ldl_solve", "eig", "eigvals", "matmul", "vecdot"]


_SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
_CholeskyExResult = namedtuple("linalg_cholesky_ex", ["L", "info"])
_SvdResult = namedtuple("linalg_svd", ["U", "S", "Vh"])
_EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
_EigResult = namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])
_QrResult = namedtuple("linalg_qr", ["Q", "R"])
_LuFactorResult = namedtuple("linalg_lu_factor", ["LU", "pivots"])
_LuFactorExResult = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
_LuResult = namedtuple("linalg_lu", ["P", "L", "U"])
_LdlFactorResult = namedtuple("linalg_ldl_factor", ["LD", "pivots"])
_LdlFactorExResult = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
for _result in (_SlogdetResult, _CholeskyExResult, _SvdResult, _EighResult, _EigResult, _QrResult, _LuFactorResult, _LuFactorExResult, _LuResult, _LdlFactorResult, _LdlFactorExResult):
    _return_types._register(_result)  # ember.return_types.<name>, as torch.return_types


def solve(A, B, *, left=True, out=None):
    """X with A X = B (or X A = B when left=False); B may be a (batch of) vector(s)."""
    return write_out(_C.linalg_solve(A, B, left=left), out)


def inv(A, *, out=None):
    return write_out(_C.linalg_inv(A), out)


def det(A, *, out=None):
    return write_out(_C.linalg_det(A), out)


def slogdet(A):
    """(sign, log|det|): the determinant without overflow; sign 0 and -inf for singular A."""
    return _SlogdetResult(*_C.linalg_slogdet(A))


def cholesky(A, *, upper=False, out=None):
    return write_out(_C.linalg_cholesky(A, upper=upper), out)


def cholesky_ex(A, *, upper=False, check_errors=False):
    return _CholeskyExResult(*_C.linalg_cholesky_ex(A, upper=upper, check_errors=check_errors))


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    return write_out(_C.linalg_solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular), out)


def svd(A, full_matrices=True, *, driver=None):
    """A = U diag(S) Vh, S real and descending (columns of U / rows of Vh: singular vectors)."""
    _check_driver("svd", driver)
    return _SvdResult(*_C.linalg_svd(A, full_matrices=full_matrices))


def svdvals(A, *, driver=None, out=None):
    _check_driver("svdvals", driver)
    return write_out(_C.linalg_svdvals(A), out)


def _check_driver(name, driver):
    # `driver` picks a cuSOLVER routine; PyTorch refuses it elsewhere, and so does Ember
    if driver is not None:
        raise RuntimeError(f"[linalg.{name}] keyword argument `driver=` is only supported on CUDA inputs with "
                           "cuSOLVER backend.")


def eigh(A, UPLO="L"):
    """Eigenvalues (real, ascending) and eigenvectors (columns) of Hermitian A, from its UPLO triangle."""
    return _EighResult(*_C.linalg_eigh(A, UPLO=UPLO))


def eigvalsh(A, UPLO="L", *, out=None):
    return write_out(_C.linalg_eigvalsh(A, UPLO=UPLO), out)


def qr(A, mode="reduced"):
    """A = Q R; mode 'reduced', 'complete' or 'r' (R only; Q is then an empty tensor)."""
    return _QrResult(*_C.linalg_qr(A, mode=mode))


def householder_product(A, tau, *, out=None):
    """The first n columns of H_1 ... H_k, H_i = I - tau_i v_i v_i^H (LAPACK's orgqr)."""
    return write_out(_C.linalg_householder_product(A, tau), out)


def lu_factor(A, *, pivot=True):
    """(LU, pivots): L (unit diagonal) and U packed in one matrix; pivots 1-based int32 row swaps."""
    return _LuFactorResult(*_C.linalg_lu_factor(A, pivot=pivot))


def lu_factor_ex(A, *, pivot=True, check_errors=False):
    return _LuFactorExResult(*_C.linalg_lu_factor_ex(A, pivot=pivot, check_errors=check_errors))


def lu(A, *, pivot=True):
    """A = P L U with P a permutation, L unit lower trapezoidal, U upper trapezoidal."""
    return _LuResult(*_C.linalg_lu(A, pivot=pivot))


def lu_solve(LU, pivots, B, *, left=True, adjoint=False, out=None):
    """X with A X = B from lu_factor's output (X A = B when left=False; A^H when adjoint)."""
    return write_out(_C.linalg_lu_solve(LU, pivots, B, left=left, adjoint=adjoint), out)


def ldl_factor(A, *, hermitian=False):
    """(LD, pivots) with A = P L D L^T P^T (L^H with hermitian=True), from A's lower triangle:
    L (unit diagonal) below LD's diagonal, the 1x1 and 2x2 blocks of D on and beside it; pivots in
    LAPACK's 1-based form (a repeated negative pair marks a 2x2 block)."""
    return _LdlFactorResult(*_C.linalg_ldl_factor(A, hermitian=hermitian))


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    return _LdlFactorExResult(*_C.linalg_ldl_factor_ex(A, hermitian=hermitian, check_errors=check_errors))


def ldl_solve(LD, pivots, B, *, hermitian=False, out=None):
    """X with A X = B from ldl_factor's output."""
    return write_out(_C.linalg_ldl_solve(LD, pivots, B, hermitian=hermitian), out)


def eig(A):
    """Complex eigenvalues and unit-norm eigenvectors (columns) of a general square A."""
    return _EigResult(*_C.linalg_eig(A))


def eigvals(A, *, out=None):
    return write_out(_C.linalg_eigvals(A), out)


def matmul(input, other, *, out=None):
    return _C.matmul(input, other, out=out)


@autocast_policy("lower_precision_fp")
def vecdot(x, y, *, dim=-1, out=None):
    """sum(conj(x) * y) over `dim`, broadcasting the other dims."""
    return write_out(_C.sum(_C.conj(x) * y, [dim]), out)
