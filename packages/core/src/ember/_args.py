"""Argument handling shared by the Python-level functions (ember.linalg, ember.fft, the matrix
products): PyTorch's out= semantics, dim wrapping and dtype names as error messages print them."""

from __future__ import annotations

import numbers


def write_out(result, out):
    """out= as PyTorch: `result` copied into `out`, and `out`'s own Python object returned."""
    if out is None:
        return result
    out.copy_(result)
    return out


def wrap_dim(dim, ndim: int) -> int:
    """dim in [-ndim, ndim) as a non-negative index (a 0-dim tensor takes 0 and -1, as PyTorch)."""
    if not isinstance(dim, numbers.Integral) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, but got {type(dim).__name__}")
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return int(dim) % n


def dtype_name(dtype) -> str:
    return repr(dtype).replace("ember.", "")
