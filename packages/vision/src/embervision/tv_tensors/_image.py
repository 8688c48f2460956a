"""Image ``[..., C, H, W]``, Video ``[..., T, C, H, W]`` and Mask ``[..., H, W]`` tensors."""

from __future__ import annotations

from typing import Any

import ember

from ._tv_tensor import TVTensor, _to_tensor


class _Dense(TVTensor):
    _min_ndim = 0

    def __new__(cls, data: Any, *, dtype=None, device=None, requires_grad: bool | None = None) -> TVTensor:
        tensor, requires_grad = _to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        return cls._make(cls._check(tensor), requires_grad)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass  # __new__ built it

    @classmethod
    def _check(cls, tensor: ember.Tensor) -> ember.Tensor:
        return tensor


class Image(_Dense):
    """An image ``[..., C, H, W]``; a 2-D tensor ``[H, W]`` becomes ``[1, H, W]``."""

    @classmethod
    def _check(cls, tensor: ember.Tensor) -> ember.Tensor:
        if tensor.ndim < 2:
            raise ValueError(f"Image expects a tensor of at least 2 dimensions, but got {tensor.ndim}")
        return tensor.unsqueeze(0) if tensor.ndim == 2 else tensor


class Video(_Dense):
    """A video ``[..., T, C, H, W]``."""

    @classmethod
    def _check(cls, tensor: ember.Tensor) -> ember.Tensor:
        if tensor.ndim < 4:
            raise ValueError(f"Video expects a tensor of at least 4 dimensions, but got {tensor.ndim}")
        return tensor


class Mask(_Dense):
    """A segmentation or detection mask ``[..., H, W]``."""
