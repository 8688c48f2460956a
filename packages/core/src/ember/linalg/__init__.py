"""ember.linalg (torch.linalg): solve, inv, det, slogdet, cholesky, cholesky_ex and
solve_triangular (registered ops, on LU with partial pivoting, Cholesky and substitution
kernels), the products multi_dot, matmul and vecdot, and the compositions of _composites.py
(vector_norm, matrix_norm, norm, cross, diagonal, matrix_power, matrix_exp). The other
decompositions of issue "Core runtime II" (qr, eigh, eig, svd, lstsq, ...) are not built yet."""

from __future__ import annotations

from collections import namedtuple

from .. import _C
from .._products import multi_dot
from ._composites import cross, diagonal, matrix_exp, matrix_norm, matrix_power, norm, vector_norm

__all__ = ["multi_dot", "matmul", "vecdot", "solve", "inv", "det", "slogdet", "cholesky", "cholesky_ex",
           "solve_triangular"]
__all__ += ["vector_norm", "matrix_norm", "norm", "cross", "diagonal", "matrix_power", "matrix_exp"]

_SlogdetResult = namedtuple("linalg_slogdet", ["sign", "logabsdet"])
_CholeskyExResult = namedtuple("linalg_cholesky_ex", ["L", "info"])


def solve(A, B, *, left=True, out=None):
    """X with A X = B (or X A = B when left=False); B may be a (batch of) vector(s)."""
    return _out(_C.linalg_solve(A, B, left=left), out)


def inv(A, *, out=None):
    return _out(_C.linalg_inv(A), out)


def det(A, *, out=None):
    return _out(_C.linalg_det(A), out)


def slogdet(A):
    """(sign, log|det|): the determinant without overflow; sign 0 and -inf for singular A."""
    return _SlogdetResult(*_C.linalg_slogdet(A))


def cholesky(A, *, upper=False, out=None):
    return _out(_C.linalg_cholesky(A, upper=upper), out)


def cholesky_ex(A, *, upper=False, check_errors=False):
    return _CholeskyExResult(*_C.linalg_cholesky_ex(A, upper=upper, check_errors=check_errors))


def solve_triangular(A, B, *, upper, left=True, unitriangular=False, out=None):
    return _out(_C.linalg_solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular), out)


def _out(result, out):
    return result if out is None else _C.copy_(out, result)


def matmul(input, other, *, out=None):
    return _C.matmul(input, other, out=out)


def vecdot(x, y, *, dim=-1, out=None):
    """sum(conj(x) * y) over `dim`, broadcasting the other dims."""
    result = _C.sum(_C.conj(x) * y, [dim])
    return result if out is None else _C.copy_(out, result)
