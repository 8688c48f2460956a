"""The torch-level functions over quantized tensors that reach ember.nn.functional (which reaches
back to _tensor, so they live apart from ember/_quantized.py): torch.quantized_max_pool1d/2d/3d
(max pooling, the parameters kept) and torch.quantized_batch_norm."""

from __future__ import annotations

from . import _C
from ._quantized import integer_range, per_tensor_affine, per_tensor_symmetric
from .nn import functional as F


def _quantized_max_pool(n: int):
    pool_fn = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[n - 1]

    def pool(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
        if _C._quantizer(input) is None:
            raise RuntimeError(f"quantized_max_pool{n}d expects a quantized input, but got {input.dtype}")
        return pool_fn(input, kernel_size, stride or None, padding, dilation, ceil_mode)

    pool.__name__ = pool.__qualname__ = f"quantized_max_pool{n}d"
    pool.__doc__ = f"torch.quantized_max_pool{n}d: max_pool{n}d of a quantized tensor (its parameters kept)."
    return pool


def quantized_batch_norm(input, weight, bias, mean, var, eps: float, output_scale: float, output_zero_point: int):
    """torch.quantized_batch_norm: inference batch norm of a per-tensor quantized (N, C, ...) input,
    quantized with output_scale and output_zero_point. PyTorch's arithmetic, so its integers:
        inv_sigma = 1 / sqrt(var + float(eps))                       (float32)
        alpha = float(inv_sigma * weight) * (in_scale / out_scale)   (in float64, then float32)
        beta = (bias - float(mean * inv_sigma) * weight) / out_scale (the division in float64)
        q = clamp(round_half_even(fma(alpha, x_int - in_zero_point, beta)) + out_zero_point)
    The fused multiply-add is taken in float64, where alpha * (x - zp), at most 33 bits, is exact."""
    if _C._quantizer(input) is None or input.qscheme() not in (per_tensor_affine, per_tensor_symmetric):
        raise RuntimeError(f"quantized_batch_norm expects a per-tensor quantized input, but got {input.dtype}")
    if input.dim() < 2:
        raise RuntimeError(f"quantized_batch_norm expects an (N, C, ...) input, but got {input.dim()} dimensions")
    if weight is None:
        raise RuntimeError("Weight must be provided")
    if bias is None:
        raise RuntimeError("Bias must be provided")
    channels = input.shape[1]
    for name, t in (("mean", mean), ("var", var), ("weight", weight), ("bias", bias)):
        if tuple(t.shape) != (channels,):
            raise RuntimeError(f"quantized_batch_norm: {name} must have {channels} elements (one per channel), but "
                               f"has shape {tuple(t.shape)}")
    f32 = _C.float32
    weight, bias = weight.detach().to(f32), bias.detach().to(f32)
    mean, var = mean.detach().to(f32), var.detach().to(f32)
    inv_sigma = 1.0 / _C.sqrt(var + _C.full([1], eps, dtype=f32))
    ratio = input.q_scale() / float(output_scale)
    alpha = ((inv_sigma * weight).double() * ratio).to(f32)
    beta = ((bias - (mean * inv_sigma) * weight).double() / float(output_scale)).to(f32)
    shape = (1, channels) + (1,) * (input.dim() - 2)
    centered = input.int_repr().double() - float(input.q_zero_point())
    value = (alpha.double().reshape(shape) * centered + beta.double().reshape(shape)).to(f32)
    ints = value.round().to(_C.int64) + int(output_zero_point)
    ints = ints.clamp(*integer_range(input.dtype))
    return _C._make_per_tensor_quantized_tensor(ints.to(input.int_repr().dtype), float(output_scale),
                                                int(output_zero_point))


NAMES = {f"quantized_max_pool{n}d": _quantized_max_pool(n) for n in (1, 2, 3)}
NAMES["quantized_batch_norm"] = quantized_batch_norm
