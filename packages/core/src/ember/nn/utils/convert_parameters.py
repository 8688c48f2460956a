"""parameters_to_vector / vector_to_parameters (torch.nn.utils' names and checks)."""

from __future__ import annotations

from ... import _C
from ...autograd.grad_mode import no_grad

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def parameters_to_vector(parameters):
    """All parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    return _C.cat([p.reshape(-1) for p in parameters])


def vector_to_parameters(vec, parameters) -> None:
    """Copy consecutive slices of `vec` into each parameter's data, in order. Unlike PyTorch, a
    vector longer than the parameters is a ValueError rather than silently truncated."""
    if not isinstance(vec, _C.Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    parameters = list(parameters)
    needed = sum(p.numel() for p in parameters)
    if vec.dim() != 1 or vec.numel() != needed:
        raise ValueError(f"expected a 1-D vector of {needed} elements for the parameters, but got shape "
                         f"{list(vec.shape)}")
    offset = 0
    with no_grad():
        for p in parameters:
            n = p.numel()
            p.copy_(vec[offset:offset + n].reshape(list(p.shape)))
            offset += n
