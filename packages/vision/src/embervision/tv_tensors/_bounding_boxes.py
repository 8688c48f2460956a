"""BoundingBoxes: boxes ``[N, 4]`` with their format and the (height, width) of their image."""

from __future__ import annotations

from enum import Enum
from typing import Any

import ember

from ._tv_tensor import TVTensor, _to_tensor


class BoundingBoxFormat(Enum):
    """XYXY: corners; XYWH: top-left corner and size; CXCYWH: center and size."""

    XYXY = "XYXY"
    XYWH = "XYWH"
    CXCYWH = "CXCYWH"


def _parse_format(format: Any) -> BoundingBoxFormat:
    if isinstance(format, BoundingBoxFormat):
        return format
    if isinstance(format, str) and format.upper() in BoundingBoxFormat.__members__:
        return BoundingBoxFormat[format.upper()]
    raise ValueError(f"format must be a BoundingBoxFormat or one of 'XYXY', 'XYWH', 'CXCYWH', but got {format!r}")


class BoundingBoxes(TVTensor):
    """Boxes ``[N, 4]`` (a single box ``[4]`` becomes ``[1, 4]``) in ``format``, on an image of
    ``canvas_size = (height, width)``."""

    format: BoundingBoxFormat
    canvas_size: tuple[int, int]

    @classmethod
    def _wrap(cls, tensor: ember.Tensor, *, format: Any, canvas_size: tuple[int, int],
              check_dims: bool = True, requires_grad: bool | None = None) -> BoundingBoxes:
        if check_dims:
            if tensor.ndim == 1:
                tensor = tensor.unsqueeze(0)
            elif tensor.ndim != 2:
                raise ValueError(f"Expected a 1D or 2D tensor, got {tensor.ndim}D")
            if tensor.shape[-1] != 4:
                raise ValueError(f"Expected boxes of 4 coordinates, got shape {tuple(tensor.shape)}")
        if len(canvas_size) != 2:
            raise ValueError(f"canvas_size must be (height, width), but got {canvas_size!r}")
        out = cls._make(tensor, requires_grad)
        out.format = _parse_format(format)
        out.canvas_size = tuple(int(s) for s in canvas_size)
        return out

    def __new__(cls, data: Any, *, format: Any, canvas_size: tuple[int, int], dtype=None, device=None,
                requires_grad: bool | None = None) -> BoundingBoxes:
        tensor, requires_grad = _to_tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
        return cls._wrap(tensor, format=format, canvas_size=canvas_size, requires_grad=requires_grad)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass  # __new__ built it

    def _metadata(self) -> dict[str, Any]:
        return {"format": self.format, "canvas_size": self.canvas_size}

    def _wrap_output(self, tensor: ember.Tensor) -> BoundingBoxes:
        return BoundingBoxes._wrap(tensor, format=self.format, canvas_size=self.canvas_size, check_dims=False)
