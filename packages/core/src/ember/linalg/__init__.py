"""ember.linalg (torch.linalg). So far the products: multi_dot, matmul and vecdot; the
decompositions and solvers of issue "Core runtime II" are not built yet."""

from __future__ import annotations

from .. import _C
from .._products import multi_dot

__all__ = ["multi_dot", "matmul", "vecdot"]


def matmul(input, other, *, out=None):
    return _C.matmul(input, other, out=out)


def vecdot(x, y, *, dim=-1, out=None):
    """sum(conj(x) * y) over `dim`, broadcasting the other dims."""
    result = _C.sum(_C.conj(x) * y, [dim])
    return result if out is None else _C.copy_(out, result)
