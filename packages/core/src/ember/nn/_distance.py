"""cosine_similarity, pairwise_distance, cdist and pdist (torch.nn.functional)."""

from __future__ import annotations

from .. import _C
from .._autocast_policy import autocast_policy

__all__ = ["cosine_similarity", "pairwise_distance", "cdist", "pdist"]


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """x1.x2 / max(|x1| |x2|, eps) along dim, broadcasting."""
    dot = (x1 * x2).sum(dim)
    norms = _C.sqrt((x1 * x1).sum(dim) * (x2 * x2).sum(dim))
    return dot / _C.clamp(norms, eps, None)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """||x1 - x2 + eps||_p along the last dim."""
    diff = _C.abs(x1 - x2 + eps)
    if p == float("inf"):
        return diff.amax(-1, keepdim)
    return (diff ** p).sum(-1, keepdim) ** (1.0 / p)


@autocast_policy("fp32")
def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances between the rows of x1 [*, P, M] and x2 [*, R, M] -> [*, P, R] (batch
    dims broadcast). For p = 2 the matrix-product form |a|^2 + |b|^2 - 2 a.b is used when
    compute_mode asks for it (or, by default, past 25 rows), as PyTorch does."""
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    if x1.dim() < 2 or x2.dim() < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.dim()}D, X2 got: {x2.dim()}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, but got p={p}")
    use_mm = p == 2 and (compute_mode == "use_mm_for_euclid_dist" or (
        compute_mode == modes[0] and (x1.shape[-2] > 25 or x2.shape[-2] > 25)))
    if use_mm:
        square1 = (x1 * x1).sum(-1, True)
        square2 = _C.transpose((x2 * x2).sum(-1, True), -1, -2)
        cross = _C.matmul(x1, _C.transpose(x2, -1, -2))
        return _C.sqrt(_C.clamp(square1 + square2 - 2 * cross, 1e-30, None))
    diff = _C.unsqueeze(x1, -2) - _C.unsqueeze(x2, -3)  # [*, P, R, M]
    return _C.norm(diff, float(p), [-1], False)


def pdist(input, p=2.0):
    """The p-norm distance of every pair of rows i < j of input [N, M], in row-major order of
    the strict upper triangle: N (N - 1) / 2 values."""
    if input.dim() != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.dim()}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows = input.shape[0]
    pairs = _C.triu_indices(rows, rows, 1)
    diff = _C.index_select(input, 0, pairs[0]) - _C.index_select(input, 0, pairs[1])
    return _C.norm(diff, float(p), [-1], False)
