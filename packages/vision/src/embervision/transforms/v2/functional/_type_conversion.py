"""to_image: HWC NumPy arrays and CHW tensors to tv_tensors.Image; to_pure_tensor."""

from __future__ import annotations

from typing import Any

import numpy as np

import ember

from ... import _tv_tensors as tvt


def to_image(inpt: Any) -> tvt.Image:
    """An Image from a ``[..., C, H, W]`` tensor, or a ``[H, W, C]`` / ``[H, W]`` NumPy array
    (channels moved first, as torchvision)."""
    if isinstance(inpt, np.ndarray):
        output = ember.from_numpy(np.ascontiguousarray(np.atleast_3d(inpt))).permute(2, 0, 1).contiguous()
    elif isinstance(inpt, ember.Tensor):
        output = inpt.as_subclass(ember.Tensor) if isinstance(inpt, tvt.TVTensor) else inpt
    else:
        raise TypeError(f"Input can either be a NumPy array or a tensor, but got {type(inpt)} instead.")
    return tvt.Image(output)


def to_pure_tensor(inpt: Any) -> ember.Tensor:
    """The same memory as a plain ember.Tensor."""
    return inpt.as_subclass(ember.Tensor) if isinstance(inpt, tvt.TVTensor) else inpt
