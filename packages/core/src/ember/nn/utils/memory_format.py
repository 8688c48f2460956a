"""ember.nn.utils.memory_format (torch.nn.utils.memory_format): lay out the weights of the 2-d /
3-d (transposed) convolutions of a module tree in a memory format (ember.channels_last /
ember.channels_last_3d for the NHWC / NDHWC kernels)."""

from __future__ import annotations

from typing import TypeVar

from ..modules.conv import Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d
from ..modules.module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]

_M = TypeVar("_M", bound=Module)


def _convert(module, kinds: tuple, memory_format):
    if isinstance(module, kinds):
        module.weight.data = module.weight.detach().clone(memory_format=memory_format)
    for child in module.children():
        _convert(child, kinds, memory_format)
    return module


def convert_conv2d_weight_memory_format(module: _M, memory_format) -> _M:
    """Give every Conv2d / ConvTranspose2d weight in module (recursively) the memory format; the
    module is changed in place and returned."""
    return _convert(module, (Conv2d, ConvTranspose2d), memory_format)


def convert_conv3d_weight_memory_format(module: _M, memory_format) -> _M:
    """Give every Conv3d / ConvTranspose3d weight in module (recursively) the memory format; the
    module is changed in place and returned."""
    return _convert(module, (Conv3d, ConvTranspose3d), memory_format)
