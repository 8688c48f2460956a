"""ember.utils.dlpack (torch.utils.dlpack): from_dlpack, to_dlpack and the DLPack device codes.

Both functions are the ones at ember top level (ember.from_dlpack, ember.to_dlpack); from_dlpack
adds torch.utils.dlpack's keyword arguments device and copy."""

from __future__ import annotations

import enum
from typing import Any

from .. import _C
from .._surface_legacy import to_dlpack

__all__ = ["DLDeviceType", "from_dlpack", "to_dlpack"]


class DLDeviceType(enum.IntEnum):
    """Device type codes of the DLPack specification (dlpack.h), as __dlpack_device__ reports them."""

    kDLCPU = 1
    kDLCUDA = 2
    kDLCUDAHost = 3
    kDLOpenCL = 4
    kDLVulkan = 7
    kDLMetal = 8
    kDLVPI = 9
    kDLROCM = 10
    kDLROCMHost = 11
    kDLExtDev = 12
    kDLCUDAManaged = 13
    kDLOneAPI = 14
    kDLWebGPU = 15
    kDLHexagon = 16
    kDLMAIA = 17


def from_dlpack(ext_tensor: Any, *, device=None, copy: bool | None = None) -> _C.Tensor:
    """A tensor sharing the memory of ext_tensor (an object with __dlpack__, or a DLPack capsule,
    which can be consumed only once). copy=True always copies; device moves the result there
    (a copy, which copy=False refuses when the device differs)."""
    if not hasattr(ext_tensor, "__dlpack__"):
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is already a DLPack capsule.")
        return _C.from_dlpack(ext_tensor)
    tensor = _C.from_dlpack(ext_tensor)
    if device is not None:
        target = device
        if isinstance(device, int):  # a bare index names a CUDA device, as for torch.device
            target = _C.device(f"cuda:{device}")
        elif isinstance(device, str):
            target = _C.device(device)
        if not isinstance(target, _C.device):
            raise AssertionError(f"from_dlpack: unsupported device type: {type(device)}")
        if target != tensor.device:
            if copy is False:
                raise ValueError(f"cannot move DLPack tensor from device {tensor.device} to {target} without "
                                 "copying. Set copy=None or copy=True.")
            return tensor.to(target)
    return tensor.clone() if copy else tensor
