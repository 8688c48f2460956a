"""Helpers shared by the distributions (torch.distributions.utils)."""

from __future__ import annotations

from functools import update_wrapper
from numbers import Number

import ember

__all__ = ["broadcast_all", "clamp_probs", "euler_constant", "lazy_property", "logits_to_probs",
           "probs_to_logits", "tril_matrix_to_vec", "vec_to_tril_matrix"]

euler_constant = 0.57721566490153286060  # Euler-Mascheroni constant


def broadcast_all(*values):
    """Tensors of one broadcast shape from tensors and numbers; numbers take the dtype of the first
    tensor argument (the default dtype when there is none), as torch.distributions.utils does."""
    if not all(isinstance(v, (ember.Tensor, Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or ember.Tensor.")
    if not all(isinstance(v, ember.Tensor) for v in values):
        like = next((v for v in values if isinstance(v, ember.Tensor)), None)
        options = {"dtype": ember.get_default_dtype()} if like is None else {"dtype": like.dtype, "device": like.device}
        values = [v if isinstance(v, ember.Tensor) else ember.tensor(float(v), **options) for v in values]
    return ember.broadcast_tensors(*values)


def _standard_normal(shape, dtype, device):
    return ember.randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value, dim: int):
    """Sums out the `dim` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1)


def logits_to_probs(logits, is_binary: bool = False):
    """Probabilities from logits: sigmoid for binary ones, softmax over the last dimension otherwise."""
    if is_binary:
        return ember.sigmoid(logits)
    return ember.softmax(logits, -1)


def clamp_probs(probs):
    """Clamps probabilities into [eps, 1 - eps] so that their logits stay finite."""
    eps = ember.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs, is_binary: bool = False):
    """Logits from probabilities: log-odds for binary ones, log-probabilities otherwise."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ember.log(ps_clamped) - ember.log1p(-ps_clamped)
    return ember.log(ps_clamped)


def _xlogy(x, y):
    """x * log(y), zero where x == 0 (gradient too), as torch.xlogy."""
    if isinstance(x, Number):
        return x * ember.log(y) if x != 0 else ember.zeros_like(y)
    return x * ember.log(ember.where(x == 0, ember.ones_like(y), y))


def _diag_embed(d):
    """(..., n) -> (..., n, n) with `d` on the diagonal."""
    n = d.shape[-1]
    return d.unsqueeze(-1) * ember.eye(n, dtype=d.dtype, device=d.device)


class lazy_property:  # noqa: N801 - PyTorch's name
    """Computes an attribute once, on first access, and stores it on the instance (reading the
    class attribute gives the descriptor, which validation recognises as "not built yet")."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with ember.enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):  # noqa: N801
    """The class-level view of a lazy_property: also a property, so docs tools see an attribute."""

    def __init__(self, wrapped) -> None:
        property.__init__(self, wrapped)


def tril_matrix_to_vec(mat, diag: int = 0):
    """The lower-triangular part (below diagonal `diag`) of (..., n, n) matrices, row by row, as (..., m)."""
    n = mat.shape[-1]
    if not -n <= diag < n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    rows, cols = ember.tril_indices(n, n, offset=diag)
    return mat[..., rows, cols]


def vec_to_tril_matrix(vec, diag: int = 0):
    """The inverse of tril_matrix_to_vec: (..., m) -> (..., n, n), zeros elsewhere."""
    # m = n(n+1)/2 + n*diag; solve for n.
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    eps = ember.finfo(ember.float64).eps
    if round(n) - n > eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as the lower "
                         f"triangular part of a square D x D matrix.")
    n = round(n)
    mat = ember.zeros(tuple(vec.shape[:-1]) + (n, n), dtype=vec.dtype, device=vec.device)
    rows, cols = ember.tril_indices(n, n, offset=diag)
    mat[..., rows, cols] = vec
    return mat
