"""torch.linalg's remaining compositions: inv_ex and solve_ex (the inverse / solution with
LU's info instead of an error), tensorinv, tensorsolve and vander."""

from __future__ import annotations

import math
from collections import namedtuple

from .. import _C
from .. import return_types as _return_types
from .._args import write_out
from ._native import inv, lu_factor_ex, lu_solve, solve

__all__ = ["inv_ex", "solve_ex", "tensorinv", "tensorsolve", "vander"]

_InvExResult = namedtuple("linalg_inv_ex", ["inverse", "info"])
_SolveExResult = namedtuple("linalg_solve_ex", ["result", "info"])
for _result in (_InvExResult, _SolveExResult):
    _return_types._register(_result)  # ember.return_types.<name>, as torch.return_types


def _raise_singular(info: _C.Tensor, who: str) -> None:
    """LinAlgError naming the first singular matrix (and its batch element) as PyTorch's."""
    flat = info.reshape(-1)
    bad = _C.nonzero(_C.gt(flat, 0)).reshape(-1)
    if bad.numel() == 0:
        return
    first = bad[0].item()
    where = f"(Batch element {first}): " if info.dim() > 0 else ""
    raise _C.LinAlgError(f"{who}: {where}The diagonal element {flat[first].item()} is zero, the "
                         f"{'inversion' if who.endswith('inv_ex') else 'solve'} could not be completed because the "
                         "input matrix is singular.")


def inv_ex(A, *, check_errors: bool = False, out=None):  # noqa: N803
    """(inverse, info) of A from its LU factorization: info > 0 marks a singular matrix (whose
    inverse holds inf / NaN) instead of raising, unless check_errors (torch.linalg.inv_ex)."""
    from .. import eye
    if A.dim() < 2 or A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.inv: A must be batches of square matrices, but they are {A.shape[-2] if A.dim() > 1 else 1} "
                           f"by {A.shape[-1] if A.dim() else 1} matrices")
    lu, pivots, info = lu_factor_ex(A)
    if check_errors:
        _raise_singular(info, "linalg.inv_ex")
    n = A.shape[-1]
    inverse = lu_solve(lu, pivots, eye(n, dtype=A.dtype).expand(list(A.shape)))
    if out is not None:
        return _InvExResult(write_out(inverse, out[0]), write_out(info, out[1]))
    return _InvExResult(inverse, info)


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False, out=None):  # noqa: N803
    """(X, info) with A X = B (X A = B with left=False) from A's LU factorization; info > 0 marks
    a singular A instead of raising, unless check_errors (torch.linalg.solve_ex). B is a vector
    (or a batch of them) when it has one dimension fewer than A and matches A's leading shape."""
    lu, pivots, info = lu_factor_ex(A)
    if check_errors:
        _raise_singular(info, "linalg.solve_ex")
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    rhs = _C.unsqueeze(B, -1 if left else -2) if vector else B
    result = lu_solve(lu, pivots, rhs, left=left)
    result = _C.squeeze(result, [-1 if left else -2]) if vector else result
    if out is not None:
        return _SolveExResult(write_out(result, out[0]), write_out(info, out[1]))
    return _SolveExResult(result, info)


def tensorinv(A, ind: int = 2, *, out=None):  # noqa: N803
    """The inverse of A seen as a matrix of its first `ind` dims by the rest, reshaped to
    A.shape[ind:] + A.shape[:ind] (torch.linalg.tensorinv)."""
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    front, back = list(A.shape[:ind]), list(A.shape[ind:])
    rows, cols = math.prod(front), math.prod(back)
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {cols} != {rows}")
    result = inv(A.reshape([rows, cols])).reshape(back + front)
    return result if out is None else write_out(result, out)


def tensorsolve(A, B, dims=None, *, out=None):  # noqa: N803
    """X with tensordot(A, X, X.dim()) = B (torch.linalg.tensorsolve); `dims` of A are moved to
    the end first."""
    if dims is not None:
        dims = [d % A.dim() for d in dims]
        rest = [d for d in range(A.dim()) if d not in dims]
        A = A.permute(rest + dims)  # noqa: N806
    x_shape = list(A.shape[B.dim():])
    rows, cols = B.numel(), math.prod(x_shape)
    if list(A.shape[:B.dim()]) != list(B.shape) or rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
                           f"prod(self.shape[:other.ndim]), but got {cols} != {rows}")
    result = solve(A.reshape([rows, cols]), B.reshape([rows])).reshape(x_shape)
    return result if out is None else write_out(result, out)


def vander(x, *, N=None):  # noqa: N803
    """x^0, x^1, ..., x^(N-1) along a new last dim (increasing powers; torch.linalg.vander);
    integral x gives int64."""
    if x.dim() < 1:
        raise RuntimeError("N must be greater than 1.")
    n = x.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError("N must be greater than 1.")
    dtype = _C.promote_types(x.dtype, _C.int64) if x.dtype != _C.bool else _C.int64
    base = x.to(dtype) if x.dtype != dtype else x
    columns = [_C.ones_like(base)]
    for _ in range(1, n):
        columns.append(_C.mul(columns[-1], base))
    return _C.stack(columns, -1)
