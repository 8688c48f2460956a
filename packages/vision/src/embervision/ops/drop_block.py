"""DropBlock (Ghiasi et al., "DropBlock: A regularization method for convolutional networks"), as
torchvision.ops.drop_block: contiguous squares (cubes in 3-D) of a feature map are zeroed together,
and what survives is rescaled so the map keeps its expected sum."""

from __future__ import annotations

import ember
from ember import nn
from ember.nn import functional as F

__all__ = ["drop_block2d", "drop_block3d", "DropBlock2d", "DropBlock3d"]


def _drop_block(op: str, input: ember.Tensor, p: float, block_size: int, inplace: bool, eps: float,
                training: bool, spatial_dims: int) -> ember.Tensor:
    # TorchVision checks p first, then the rank; a non-tensor gets a TypeError here (TorchVision
    # would fail on `.ndim` with an AttributeError).
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}.")
    if not isinstance(input, ember.Tensor):
        raise TypeError(f"[{op}] expected input to be a Tensor, but got {type(input).__name__}")
    if input.dim() != spatial_dims + 2:
        raise ValueError(f"input should be {spatial_dims + 2} dimensional. Got {input.dim()} dimensions.")
    if not training or p == 0.0:
        return input

    n, c, *sizes = input.shape
    block_size = min(block_size, *sizes)
    # Seeds fall only where a whole block fits; gamma is chosen so that about p of all elements
    # end up dropped (the paper's eq. 1).
    valid = [s - block_size + 1 for s in sizes]
    gamma = (p * _prod(sizes)) / ((block_size ** spatial_dims) * _prod(valid))
    noise = ember.empty([n, c, *valid], dtype=_mask_dtype(op, input), device=input.device)
    noise.bernoulli_(gamma)

    # Pad the seed map back to the input's size, then grow every seed into a block_size block with
    # a stride-1 max pool.
    pad = block_size // 2
    noise = F.pad(noise, [pad] * (2 * spatial_dims), value=0)
    pool = F.max_pool2d if spatial_dims == 2 else F.max_pool3d
    noise = pool(noise, stride=(1,) * spatial_dims, kernel_size=(block_size,) * spatial_dims, padding=pad)
    noise = 1 - noise
    # One scale for the whole tensor: the kept fraction over every sample and channel.
    normalize_scale = noise.numel() / (eps + noise.sum())
    if inplace:
        input.mul_(noise).mul_(normalize_scale)
    else:
        input = input * noise * normalize_scale
    return input


def _mask_dtype(op: str, input: ember.Tensor) -> ember.dtype:
    # TorchVision draws the mask in the input's dtype; for integer inputs that mask holds the same
    # 0/1 values as one in the default float dtype (ember's bernoulli_ fills floats only), and the
    # float rescaling makes the result float either way. A bool map cannot be pooled in TorchVision.
    if input.dtype == ember.bool:
        raise RuntimeError(f"[{op}] not implemented for bool input")
    if input.is_floating_point() or input.is_complex():
        return input.dtype
    return ember.get_default_dtype()


def _prod(values) -> int:
    out = 1
    for v in values:
        out *= v
    return out


def drop_block2d(input: ember.Tensor, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06,
                 training: bool = True) -> ember.Tensor:
    """Zero ``block_size`` x ``block_size`` squares of a ``[N, C, H, W]`` input and rescale the rest.

    Args:
        input: a 4-D tensor, batch first.
        p: probability of an element to be dropped.
        block_size: side of the dropped squares (clipped to H and W).
        inplace: multiply ``input`` in place.
        eps: added to the denominator of the rescaling.
        training: identity when False.
    """
    return _drop_block("drop_block2d", input, p, block_size, inplace, eps, training, 2)


def drop_block3d(input: ember.Tensor, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06,
                 training: bool = True) -> ember.Tensor:
    """Zero ``block_size``-sided cubes of a ``[N, C, D, H, W]`` input and rescale the rest (see
    :func:`drop_block2d`)."""
    return _drop_block("drop_block3d", input, p, block_size, inplace, eps, training, 3)


class DropBlock2d(nn.Module):
    """Module form of :func:`drop_block2d`; active only in training mode."""

    def __init__(self, p: float, block_size: int, inplace: bool = False, eps: float = 1e-06) -> None:
        super().__init__()
        self.p = p
        self.block_size = block_size
        self.inplace = inplace
        self.eps = eps

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        return drop_block2d(input, self.p, self.block_size, self.inplace, self.eps, self.training)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}(p={self.p}, block_size={self.block_size}, inplace={self.inplace})"


class DropBlock3d(DropBlock2d):
    """Module form of :func:`drop_block3d`; active only in training mode."""

    def forward(self, input: ember.Tensor) -> ember.Tensor:
        return drop_block3d(input, self.p, self.block_size, self.inplace, self.eps, self.training)
