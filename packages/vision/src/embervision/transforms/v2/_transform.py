"""Transform: the base of the v2 transforms, and the rule deciding which inputs they touch.

Note [v2 input rules]
~~~~~~~~~~~~~~~~~~~~~
A transform takes any structure of inputs (a tensor, a tuple, a dict of them and other values)
and flattens it. TVTensors are transformed by their type's kernel; values that are not tensors
pass through; a plain tensor is "the image" only when the sample holds no Image or Video, and then
only the first plain tensor: others (labels, ids) pass through untouched.
"""

from __future__ import annotations

from typing import Any

import ember
from ember import nn

from .. import _tv_tensors as tvt
from ._utils import has_any, tree_flatten, tree_unflatten
from .functional._utils import _get_kernel, is_pure_tensor


class Transform(nn.Module):
    """Base class: subclasses draw parameters in ``_get_params`` (once per call, shared by all inputs)
    and transform one input in ``_transform``."""

    _transformed_types: tuple = (ember.Tensor,)

    def __init__(self) -> None:
        super().__init__()

    def _check_inputs(self, flat_inputs: list) -> None:
        pass

    def _get_params(self, flat_inputs: list) -> dict[str, Any]:
        return {}

    def _call_kernel(self, functional: Any, inpt: Any, *args: Any, **kwargs: Any) -> Any:
        return _get_kernel(functional, type(inpt), allow_passthrough=True)(inpt, *args, **kwargs)

    def _transform(self, inpt: Any, params: dict[str, Any]) -> Any:
        raise NotImplementedError

    def forward(self, *inputs: Any) -> Any:
        flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
        self._check_inputs(flat_inputs)
        needs = self._needs_transform_list(flat_inputs)
        params = self._get_params([inpt for inpt, need in zip(flat_inputs, needs, strict=False) if need])
        flat_outputs = [self._transform(inpt, params) if need else inpt for inpt, need in zip(flat_inputs, needs, strict=False)]
        return tree_unflatten(flat_outputs, spec)

    def _needs_transform_list(self, flat_inputs: list) -> list[bool]:
        # Note [v2 input rules]
        transform_pure_tensor = not has_any(flat_inputs, tvt.Image, tvt.Video)
        needs = []
        for inpt in flat_inputs:
            need = any(isinstance(inpt, t) for t in self._transformed_types)
            if need and is_pure_tensor(inpt):
                need = transform_pure_tensor
                transform_pure_tensor = False
            needs.append(need)
        return needs

    def extra_repr(self) -> str:
        extra = []
        for name, value in self.__dict__.items():
            if name.startswith("_") or name == "training":
                continue
            if not isinstance(value, (bool, int, float, str, tuple, list, type(None))) and not hasattr(value, "name"):
                continue
            extra.append(f"{name}={value}")
        return ", ".join(extra)


class _RandomApplyTransform(Transform):
    """Applies the transform with probability ``p`` (one draw per call)."""

    def __init__(self, p: float = 0.5) -> None:
        if not (0.0 <= p <= 1.0):
            raise ValueError("`p` should be a floating point value in the interval [0.0, 1.0].")
        super().__init__()
        self.p = p

    def forward(self, *inputs: Any) -> Any:
        inputs = inputs if len(inputs) > 1 else inputs[0]
        flat_inputs, spec = tree_flatten(inputs)
        self._check_inputs(flat_inputs)
        if ember.rand(1).item() >= self.p:
            return inputs
        needs = self._needs_transform_list(flat_inputs)
        params = self._get_params([inpt for inpt, need in zip(flat_inputs, needs, strict=False) if need])
        flat_outputs = [self._transform(inpt, params) if need else inpt for inpt, need in zip(flat_inputs, needs, strict=False)]
        return tree_unflatten(flat_outputs, spec)
