"""Gradient clipping (torch.nn.utils.clip_grad_norm_ / clip_grad_value_ / get_total_norm, and the
deprecated clip_grad_norm)."""

from __future__ import annotations

import warnings

from ... import _C
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _as_list(tensors) -> list:
    return [tensors] if isinstance(tensors, _C.Tensor) else list(tensors)


def _grads(parameters) -> list:
    return [p.grad for p in _as_list(parameters) if p.grad is not None]


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach=None):
    """The norm of all tensors together, as if concatenated into one vector (a 0-dim tensor)."""
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _C.zeros([])
    with no_grad():
        # The p-norm of the per-tensor p-norms is the p-norm of everything together (inf and -inf too).
        norms = [t.detach().norm(norm_type) for t in tensors]
        total = _C.stack([n.to(norms[0].dtype) for n in norms]).norm(norm_type)
    if error_if_nonfinite and not bool(_C.isfinite(total).item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so it cannot be "
            "clipped. To disable this error and scale the gradients by the non-finite norm anyway, set "
            "`error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm, foreach=None) -> None:
    """Scale the gradients by max_norm / (total_norm + 1e-6) when that is below 1."""
    grads = _grads(parameters)
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                    foreach=None):
    """Scale all gradients together so their total norm is at most max_norm; returns the total
    norm before clipping."""
    parameters = _as_list(parameters)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None):
    """Deprecated alias of clip_grad_norm_ (a FutureWarning says so)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of `torch.nn.utils.clip_grad_norm_`.",
                  FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient element into [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    with no_grad():
        for g in _grads(parameters):
            g.clamp_(-clip_value, clip_value)
