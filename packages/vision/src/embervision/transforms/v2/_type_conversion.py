"""ToImage, ToPureTensor."""

from __future__ import annotations

from typing import Any

import numpy as np

import ember

from .. import _tv_tensors as tvt
from . import functional as F
from ._transform import Transform
from .functional._utils import is_pure_tensor


class ToImage(Transform):
    """Plain tensors (``[..., C, H, W]``) and NumPy arrays (``[H, W, C]``) to tv_tensors.Image."""

    _transformed_types = (ember.Tensor, np.ndarray)

    def _needs_transform_list(self, flat_inputs: list) -> list[bool]:
        needs = super()._needs_transform_list(flat_inputs)
        return [need and (is_pure_tensor(inpt) or isinstance(inpt, np.ndarray)) for inpt, need in zip(flat_inputs, needs, strict=False)]

    def _transform(self, inpt: Any, params: dict) -> tvt.Image:
        return F.to_image(inpt)


class ToPureTensor(Transform):
    """TVTensors to plain ember.Tensors."""

    _transformed_types = (tvt.TVTensor,)

    def _transform(self, inpt: Any, params: dict) -> ember.Tensor:
        return inpt.as_subclass(ember.Tensor)
