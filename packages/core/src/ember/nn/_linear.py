"""linear and bilinear (torch.nn.functional)."""

from __future__ import annotations

from .. import _C
from .._autocast_policy import autocast_policy
from .._products import einsum

__all__ = ["linear", "bilinear"]


@autocast_policy("lower_precision_fp")
def linear(input, weight, bias=None):
    """y = input @ weight^T + bias, over any leading dims of input (weight: [out, in] or [in])."""
    if weight.dim() not in (1, 2):
        raise RuntimeError(f"linear(): weight must be 1-D or 2-D, but got {weight.dim()}-D")
    out = _C.matmul(input, weight.t() if weight.dim() == 2 else weight)
    return out if bias is None else out + bias


def bilinear(input1, input2, weight, bias=None):
    """y_k = x1^T A_k x2 + b_k for weight A [out, in1, in2], over any shared leading dims."""
    if weight.dim() != 3:
        raise RuntimeError(f"bilinear(): weight must be 3-D [out, in1, in2], but got {weight.dim()}-D")
    if input1.shape[-1] != weight.shape[1] or input2.shape[-1] != weight.shape[2]:
        raise RuntimeError(f"bilinear(): input1 size {input1.shape[-1]} and input2 size {input2.shape[-1]} do not "
                           f"match weight size {list(weight.shape)}")
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got {list(input1.shape[:-1])} and "
                           f"{list(input2.shape[:-1])}")
    out = einsum("...i,oij,...j->...o", input1, weight, input2)
    return out if bias is None else out + bias
