"""Folding an eval-mode BatchNorm into the convolution or linear layer before it
(torch.nn.utils.fusion): y = gamma * (W x + b - mean) / sqrt(var + eps) + beta is again an
affine map, with W' = W * s and b' = (b - mean) * s + beta, s = gamma / sqrt(var + eps)."""

from __future__ import annotations

import copy

from ... import _C
from ...autograd.grad_mode import no_grad
from ..parameter import Parameter

__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights"]


def _scale(bn_rm, bn_rv, bn_eps, bn_w):
    scale = _C.rsqrt(bn_rv + bn_eps)
    return scale if bn_w is None else scale * bn_w


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b, transpose=False):
    """The fused (weight, bias) Parameters. The per-channel scale multiplies the output-channel
    dim of the weight: dim 0, or dim 1 for transposed convolutions."""
    with no_grad():
        dtype = conv_w.dtype
        scale = _scale(bn_rm, bn_rv, bn_eps, bn_w)
        if conv_b is None:
            conv_b = _C.zeros_like(bn_rm)
        shape = [1] * conv_w.dim()
        shape[1 if transpose else 0] = -1
        weight = (conv_w * scale.reshape(shape)).to(dtype)
        bias = (conv_b - bn_rm) * scale
        if bn_b is not None:
            bias = bias + bn_b
    return Parameter(weight, conv_w.requires_grad), Parameter(bias.to(dtype), conv_w.requires_grad)


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b):
    if linear_w.shape[0] != bn_rm.shape[0]:
        raise ValueError("To fuse, linear.out_features must equal bn.num_features or bn.num_features must be 1")
    return fuse_conv_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps, bn_w, bn_b)


def _check_eval(*modules) -> None:
    if any(m.training for m in modules):
        raise ValueError("Fusion only for eval!")


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of `conv` that computes bn(conv(x)) with bn's running statistics."""
    _check_eval(conv, bn)
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError("fuse_conv_bn_eval needs a BatchNorm that tracks running statistics")
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                    bn.eps, bn.weight, bn.bias, transpose)
    return fused


def fuse_linear_bn_eval(linear, bn):
    """A copy of `linear` that computes bn(linear(x)) with bn's running statistics."""
    _check_eval(linear, bn)
    if bn.running_mean is None or bn.running_var is None:
        raise ValueError("fuse_linear_bn_eval needs a BatchNorm that tracks running statistics")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(fused.weight, fused.bias, bn.running_mean, bn.running_var,
                                                      bn.eps, bn.weight, bn.bias)
    return fused
