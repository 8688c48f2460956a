"""Size queries, bounding-box format conversion and clamping."""

from __future__ import annotations

from typing import Any

import ember

from ... import _tv_tensors as tvt
from ._utils import _get_kernel, _register_kernel_internal, is_pure_tensor

BoundingBoxFormat = tvt.BoundingBoxFormat


def get_dimensions(inpt: Any) -> list[int]:
    """``[C, H, W]`` of an image or video (a plain tensor counts as an image)."""
    return _get_kernel(get_dimensions, type(inpt))(inpt)


@_register_kernel_internal(get_dimensions, ember.Tensor)
@_register_kernel_internal(get_dimensions, tvt.Image, tv_tensor_wrapper=False)
@_register_kernel_internal(get_dimensions, tvt.Video, tv_tensor_wrapper=False)
def get_dimensions_image(image: ember.Tensor) -> list[int]:
    chw = list(image.shape[-3:])
    if len(chw) == 3:
        return chw
    if len(chw) == 2:
        return [1, *chw]
    raise TypeError(f"Input tensor should have at least two dimensions, but got {len(chw)}")


def get_num_channels(inpt: Any) -> int:
    return get_dimensions(inpt)[0]


def get_size(inpt: Any) -> list[int]:
    """``[H, W]`` of an image, video or mask, or the canvas size of bounding boxes."""
    return _get_kernel(get_size, type(inpt))(inpt)


@_register_kernel_internal(get_size, ember.Tensor)
@_register_kernel_internal(get_size, tvt.Image, tv_tensor_wrapper=False)
@_register_kernel_internal(get_size, tvt.Video, tv_tensor_wrapper=False)
@_register_kernel_internal(get_size, tvt.Mask, tv_tensor_wrapper=False)
def get_size_image(image: ember.Tensor) -> list[int]:
    hw = list(image.shape[-2:])
    if len(hw) != 2:
        raise TypeError(f"Input tensor should have at least two dimensions, but got {len(hw)}")
    return hw


@_register_kernel_internal(get_size, tvt.BoundingBoxes, tv_tensor_wrapper=False)
def get_size_bounding_boxes(bounding_box: tvt.BoundingBoxes) -> list[int]:
    return list(bounding_box.canvas_size)


def _xywh_to_xyxy(xywh: ember.Tensor, inplace: bool = False) -> ember.Tensor:
    xyxy = xywh if inplace else xywh.clone()
    xyxy[..., 2:] += xyxy[..., :2]
    return xyxy


def _xyxy_to_xywh(xyxy: ember.Tensor, inplace: bool = False) -> ember.Tensor:
    xywh = xyxy if inplace else xyxy.clone()
    xywh[..., 2:] -= xywh[..., :2]
    return xywh


def _cxcywh_to_xyxy(cxcywh: ember.Tensor, inplace: bool = False) -> ember.Tensor:
    if not inplace:
        cxcywh = cxcywh.clone()
    # Integer boxes round half widths up (ceil), as torchvision, so that xyxy stays integral.
    half_wh = cxcywh[..., 2:] / -2 if cxcywh.is_floating_point() else ember.floor(cxcywh[..., 2:] / -2)
    half_wh = half_wh.abs_() if cxcywh.is_floating_point() else half_wh.abs().to(cxcywh.dtype)
    cxcywh[..., :2] -= half_wh
    cxcywh[..., 2:] = cxcywh[..., :2] + cxcywh[..., 2:]
    return cxcywh


def _xyxy_to_cxcywh(xyxy: ember.Tensor, inplace: bool = False) -> ember.Tensor:
    if not inplace:
        xyxy = xyxy.clone()
    xyxy[..., 2:] -= xyxy[..., :2]
    if xyxy.is_floating_point():
        xyxy[..., :2] += xyxy[..., 2:] / 2
    else:
        xyxy[..., :2] += ember.floor(xyxy[..., 2:] / 2).to(xyxy.dtype)
    return xyxy


def _convert_bounding_box_format(bounding_boxes: ember.Tensor, old_format: BoundingBoxFormat,
                                 new_format: BoundingBoxFormat, inplace: bool = False) -> ember.Tensor:
    if new_format == old_format:
        return bounding_boxes
    if old_format == BoundingBoxFormat.XYWH:
        bounding_boxes = _xywh_to_xyxy(bounding_boxes, inplace)
    elif old_format == BoundingBoxFormat.CXCYWH:
        bounding_boxes = _cxcywh_to_xyxy(bounding_boxes, inplace)
    if new_format == BoundingBoxFormat.XYWH:
        bounding_boxes = _xyxy_to_xywh(bounding_boxes, inplace)
    elif new_format == BoundingBoxFormat.CXCYWH:
        bounding_boxes = _xyxy_to_cxcywh(bounding_boxes, inplace)
    return bounding_boxes


def _parse(fmt: Any, name: str) -> BoundingBoxFormat | None:
    if fmt is None:
        return None
    if isinstance(fmt, str):
        if fmt.upper() not in BoundingBoxFormat.__members__:
            raise ValueError(f"{name} must be one of 'XYXY', 'XYWH', 'CXCYWH', but got {fmt!r}")
        return BoundingBoxFormat[fmt.upper()]
    if not isinstance(fmt, BoundingBoxFormat):
        raise TypeError(f"{name} must be a BoundingBoxFormat or a string, but got {type(fmt).__name__}")
    return fmt


def convert_bounding_box_format(inpt: Any, old_format: Any = None, new_format: Any = None,
                                inplace: bool = False) -> Any:
    """Boxes in ``new_format``: a BoundingBoxes knows its format; a plain tensor needs ``old_format``."""
    new_format = _parse(new_format, "new_format")
    old_format = _parse(old_format, "old_format")
    if new_format is None:
        raise TypeError("convert_bounding_box_format() missing 1 required argument: 'new_format'")
    if is_pure_tensor(inpt):
        if old_format is None:
            raise ValueError("For pure tensor inputs, `old_format` has to be passed.")
        return _convert_bounding_box_format(inpt, old_format, new_format, inplace)
    if isinstance(inpt, tvt.BoundingBoxes):
        if old_format is not None:
            raise ValueError("For bounding box tv_tensor inputs, `old_format` must not be passed.")
        out = _convert_bounding_box_format(inpt.as_subclass(ember.Tensor), inpt.format, new_format, inplace)
        return tvt.wrap(out, like=inpt, format=new_format)
    raise TypeError(f"Input can either be a plain tensor or a bounding box tv_tensor, but got {type(inpt)} instead.")


def _clamp_bounding_boxes(bounding_boxes: ember.Tensor, format: BoundingBoxFormat,
                          canvas_size: tuple[int, int]) -> ember.Tensor:
    # Clamp in xyxy (the only format where clamping is per coordinate), in float for the
    # conversions, back to the input dtype.
    in_dtype = bounding_boxes.dtype
    boxes = bounding_boxes.clone() if bounding_boxes.is_floating_point() else bounding_boxes.float()
    xyxy = _convert_bounding_box_format(boxes, format, BoundingBoxFormat.XYXY, inplace=True)
    xyxy[..., 0::2].clamp_(min=0, max=canvas_size[1])
    xyxy[..., 1::2].clamp_(min=0, max=canvas_size[0])
    out = _convert_bounding_box_format(xyxy, BoundingBoxFormat.XYXY, format, inplace=True)
    return out.to(in_dtype)


def clamp_bounding_boxes(inpt: Any, format: Any = None, canvas_size: tuple[int, int] | None = None) -> Any:
    """Clamps boxes into their canvas; a plain tensor needs ``format`` and ``canvas_size``."""
    if is_pure_tensor(inpt):
        if format is None or canvas_size is None:
            raise ValueError("For pure tensor inputs, `format` and `canvas_size` have to be passed.")
        return _clamp_bounding_boxes(inpt, format=_parse(format, "format"), canvas_size=canvas_size)
    if isinstance(inpt, tvt.BoundingBoxes):
        if format is not None or canvas_size is not None:
            raise ValueError("For bounding box tv_tensor inputs, `format` and `canvas_size` must not be passed.")
        out = _clamp_bounding_boxes(inpt.as_subclass(ember.Tensor), format=inpt.format, canvas_size=inpt.canvas_size)
        return tvt.wrap(out, like=inpt)
    raise TypeError(f"Input can either be a plain tensor or a bounding box tv_tensor, but got {type(inpt)} instead.")
