"""Gradients of the convolutions with respect to their input and their weight (torch.nn.grad).

Each is the convolution's own backward, taken through autograd: a convolution is linear in
its input and in its weight, so the gradient with respect to one does not depend on the value
given for the other's stand-in. When an argument requires grad, the result keeps a graph to it
(create_graph), as PyTorch's are differentiable."""

from __future__ import annotations

from .. import _C
from ..autograd._engine import grad as _autograd_grad
from . import _conv

__all__ = ["conv1d_input", "conv1d_weight", "conv2d_input", "conv2d_weight", "conv3d_input", "conv3d_weight"]

_CONVS = {1: _conv.conv1d, 2: _conv.conv2d, 3: _conv.conv3d}


def _check_grad_output(name: str, output, grad_output) -> None:
    if tuple(output.shape) != tuple(grad_output.shape):
        raise RuntimeError(f"{name}: grad_output has shape {list(grad_output.shape)}, but the convolution's output "
                           f"has shape {list(output.shape)}")


def _input_grad(n: int, input_size, weight, grad_output, stride, padding, dilation, groups):
    name = f"conv{n}d_input"
    # A leaf of the right shape; its values do not matter (the gradient does not depend on them).
    stand_in = _C.zeros(list(input_size), dtype=grad_output.dtype, device=grad_output.device).requires_grad_(True)
    output = _CONVS[n](stand_in, weight, None, stride, padding, dilation, groups)
    _check_grad_output(name, output, grad_output)
    keep = weight.requires_grad or grad_output.requires_grad
    return _autograd_grad(output, stand_in, grad_output, create_graph=keep)[0]


def _weight_grad(n: int, input, weight_size, grad_output, stride, padding, dilation, groups):
    name = f"conv{n}d_weight"
    stand_in = _C.zeros(list(weight_size), dtype=grad_output.dtype, device=grad_output.device).requires_grad_(True)
    output = _CONVS[n](input, stand_in, None, stride, padding, dilation, groups)
    _check_grad_output(name, output, grad_output)
    keep = input.requires_grad or grad_output.requires_grad
    return _autograd_grad(output, stand_in, grad_output, create_graph=keep)[0]


def conv1d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to an input of shape ``input_size``."""
    return _input_grad(1, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv1d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv1d with respect to a weight of shape ``weight_size``."""
    return _weight_grad(1, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv2d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to an input of shape ``input_size``."""
    return _input_grad(2, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv2d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv2d with respect to a weight of shape ``weight_size``."""
    return _weight_grad(2, input, weight_size, grad_output, stride, padding, dilation, groups)


def conv3d_input(input_size, weight, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to an input of shape ``input_size``."""
    return _input_grad(3, input_size, weight, grad_output, stride, padding, dilation, groups)


def conv3d_weight(input, weight_size, grad_output, stride=1, padding=0, dilation=1, groups=1):
    """The gradient of conv3d with respect to a weight of shape ``weight_size``."""
    return _weight_grad(3, input, weight_size, grad_output, stride, padding, dilation, groups)
