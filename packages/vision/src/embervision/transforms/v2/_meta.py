"""ConvertBoundingBoxFormat, ClampBoundingBoxes."""

from __future__ import annotations

from typing import Any

from .. import _tv_tensors as tvt
from . import functional as F
from ._transform import Transform


class ConvertBoundingBoxFormat(Transform):
    """Converts BoundingBoxes to ``format``."""

    _transformed_types = (tvt.BoundingBoxes,)

    def __init__(self, format: Any) -> None:
        super().__init__()
        if isinstance(format, str):
            format = tvt.BoundingBoxFormat[format.upper()]
        self.format = format

    def _transform(self, inpt: Any, params: dict) -> Any:
        return F.convert_bounding_box_format(inpt, new_format=self.format)


class ClampBoundingBoxes(Transform):
    """Clamps BoundingBoxes into their canvas."""

    _transformed_types = (tvt.BoundingBoxes,)

    def _transform(self, inpt: Any, params: dict) -> Any:
        return F.clamp_bounding_boxes(inpt)
