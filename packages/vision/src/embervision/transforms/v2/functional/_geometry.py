"""Geometry kernels: flips, resize, crops, pad, affine, rotate, perspective, elastic.

Images are ``[..., C, H, W]`` (uint8 or float); masks ``[..., H, W]``; boxes ``[N, 4]`` in any
``BoundingBoxFormat``. Box kernels return ``(boxes, canvas_size)`` and clamp into the new canvas.

Note [pixel coordinates]
~~~~~~~~~~~~~~~~~~~~~~~~
Box coordinates are continuous: pixel ``(i, j)`` covers ``[j, j + 1) x [i, i + 1)``, so an image
of width W spans ``[0, W]``. The sampling grids of affine, rotate and perspective put pixel
centers at ``j + 0.5`` and sample with ``align_corners=False``, which makes the box transforms (on
corners, in the same continuous frame) follow the image exactly.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np

import ember
import ember.nn.functional as nnF

from ... import _tv_tensors as tvt
from ..._modes import InterpolationMode, _check_interpolation
from . import _native
from ._meta import _clamp_bounding_boxes, _convert_bounding_box_format
from ._utils import _dispatch, _get_kernel, _register_kernel_internal

XYXY = tvt.BoundingBoxFormat.XYXY
_INT_DTYPES = (ember.uint8, ember.int8, ember.int16, ember.int32, ember.int64)


def _register_image(functional, kernel, video: bool = True) -> None:
    _register_kernel_internal(functional, ember.Tensor)(kernel)
    _register_kernel_internal(functional, tvt.Image)(kernel)
    if video:
        _register_kernel_internal(functional, tvt.Video)(kernel)


def _register_boxes(functional, kernel) -> None:
    # For box kernels (boxes, format, canvas_size, ...) -> boxes that keep the canvas.
    def dispatch(inpt: tvt.BoundingBoxes, *args: Any, **kwargs: Any) -> tvt.BoundingBoxes:
        return tvt.wrap(kernel(inpt.as_subclass(ember.Tensor), inpt.format, inpt.canvas_size, *args, **kwargs),
                        like=inpt)

    _register_kernel_internal(functional, tvt.BoundingBoxes, tv_tensor_wrapper=False)(dispatch)


def _with_channel(kernel):
    # Masks are [..., H, W]: kernels written for [..., C, H, W] see a channel of one.
    def mask_kernel(mask: ember.Tensor, *args: Any, **kwargs: Any) -> ember.Tensor:
        if mask.ndim < 3:
            return kernel(mask.unsqueeze(0), *args, **kwargs).squeeze(0)
        return kernel(mask, *args, **kwargs)

    return mask_kernel


def _xy_boxes(boxes: ember.Tensor, format) -> ember.Tensor:
    """[N, 4] xyxy float copy of boxes."""
    work = boxes.clone() if boxes.is_floating_point() else boxes.float()
    return _convert_bounding_box_format(work.reshape(-1, 4), format, XYXY, inplace=True)


def _from_xy(xyxy: ember.Tensor, like: ember.Tensor, format, canvas_size) -> ember.Tensor:
    out = _clamp_bounding_boxes(xyxy, XYXY, canvas_size)
    out = _convert_bounding_box_format(out, XYXY, format, inplace=True)
    return out.to(like.dtype).reshape(like.shape)  # integer boxes truncate, as torchvision


# ---- flips -----------------------------------------------------------------------------------

def horizontal_flip(inpt: Any) -> Any:
    """Mirrors left-right."""
    return _dispatch(horizontal_flip, inpt)


def horizontal_flip_image(image: ember.Tensor) -> ember.Tensor:
    return image.flip(-1)


def horizontal_flip_bounding_boxes(bounding_boxes: ember.Tensor, format, canvas_size) -> ember.Tensor:
    width = canvas_size[1]
    a, b, c, d = bounding_boxes.unbind(-1)
    if format == XYXY:
        out = [width - c, b, width - a, d]
    elif format == tvt.BoundingBoxFormat.XYWH:
        out = [width - a - c, b, c, d]
    else:  # CXCYWH
        out = [width - a, b, c, d]
    return ember.stack(out, dim=-1)


def vertical_flip(inpt: Any) -> Any:
    """Mirrors top-bottom."""
    return _dispatch(vertical_flip, inpt)


def vertical_flip_image(image: ember.Tensor) -> ember.Tensor:
    return image.flip(-2)


def vertical_flip_bounding_boxes(bounding_boxes: ember.Tensor, format, canvas_size) -> ember.Tensor:
    height = canvas_size[0]
    a, b, c, d = bounding_boxes.unbind(-1)
    if format == XYXY:
        out = [a, height - d, c, height - b]
    elif format == tvt.BoundingBoxFormat.XYWH:
        out = [a, height - b - d, c, d]
    else:
        out = [a, height - b, c, d]
    return ember.stack(out, dim=-1)


for _f, _img, _box in ((horizontal_flip, horizontal_flip_image, horizontal_flip_bounding_boxes),
                       (vertical_flip, vertical_flip_image, vertical_flip_bounding_boxes)):
    _register_image(_f, _img)
    _register_kernel_internal(_f, tvt.Mask)(_img)
    _register_boxes(_f, _box)
hflip, vflip = horizontal_flip, vertical_flip
horizontal_flip_mask = horizontal_flip_video = horizontal_flip_image
vertical_flip_mask = vertical_flip_video = vertical_flip_image

# ---- resize ----------------------------------------------------------------------------------


def _compute_resized_output_size(canvas_size: tuple[int, int], size: Any, max_size: int | None = None) -> list[int]:
    if isinstance(size, int):
        size = [size]
    elif not isinstance(size, (list, tuple)) or len(size) not in (1, 2):
        raise ValueError(f"size must be an int or a sequence of one or two ints, but got {size!r}")
    elif max_size is not None and len(size) != 1:
        raise ValueError("max_size should only be passed if size specifies the length of the smaller edge, "
                         "i.e. size should be an int or a sequence of length 1 in torchscript mode.")
    h, w = canvas_size
    if len(size) == 2:
        return [int(size[0]), int(size[1])]
    short, long = (w, h) if w <= h else (h, w)
    new_short, new_long = size[0], int(size[0] * long / short)
    if max_size is not None:
        if max_size <= size[0]:
            raise ValueError(f"max_size = {max_size} must be strictly greater than the requested size for the "
                             f"smaller edge size = {size}")
        if new_long > max_size:
            new_short, new_long = int(max_size * new_short / new_long), max_size
    new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
    return [new_h, new_w]


def resize(inpt: Any, size: Any, interpolation: Any = InterpolationMode.BILINEAR, max_size: int | None = None,
           antialias: bool | None = True) -> Any:
    """Resizes to ``size`` ``(h, w)``, or the shorter edge to ``size`` (an int or ``[int]``)
    keeping the aspect ratio; ``antialias`` low-pass filters when downscaling (bilinear and
    bicubic only, as torchvision; other modes ignore it)."""
    return _dispatch(resize, inpt, size=size, interpolation=interpolation, max_size=max_size, antialias=antialias)


def resize_image(image: ember.Tensor, size: Any, interpolation: Any = InterpolationMode.BILINEAR,
                 max_size: int | None = None, antialias: bool | None = True) -> ember.Tensor:
    interpolation = _check_interpolation(interpolation)
    smooth = interpolation in (InterpolationMode.BILINEAR, InterpolationMode.BICUBIC)
    antialias = bool(antialias) and smooth
    shape = tuple(image.shape)
    channels, old_h, old_w = ([1] + list(shape))[-3:] if len(shape) == 2 else shape[-3:]
    new_h, new_w = _compute_resized_output_size((old_h, old_w), size, max_size)
    if (new_h, new_w) == (old_h, old_w):
        return image
    out_shape = shape[:-2] + (new_h, new_w)
    if image.numel() == 0:
        return image.new_empty(out_shape)
    if _native.applies(image, min_ndim=2):
        # separable weight tables in C++ (Note [separable resize]); the same sampling as below
        out = _native.call("resize", image, new_h, new_w, interpolation.value, antialias)
        return out.reshape(out_shape)
    dtype = image.dtype
    x = image.reshape(-1, channels, old_h, old_w)
    if dtype not in (ember.float32, ember.float64):
        x = x.float()
    x = nnF.interpolate(x, size=[new_h, new_w], mode=interpolation.value, align_corners=False if smooth else None,
                        antialias=antialias)
    if dtype not in (ember.float32, ember.float64):
        if interpolation == InterpolationMode.BICUBIC and dtype == ember.uint8:
            x = x.clamp(0, 255)  # bicubic overshoots
        if dtype in _INT_DTYPES:
            x = x.round()
        x = x.to(dtype)
    return x.reshape(out_shape)


def resize_mask(mask: ember.Tensor, size: Any, max_size: int | None = None) -> ember.Tensor:
    return _with_channel(resize_image)(mask, size, interpolation=InterpolationMode.NEAREST, max_size=max_size)


def resize_bounding_boxes(bounding_boxes: ember.Tensor, canvas_size: tuple[int, int], size: Any,
                          max_size: int | None = None) -> tuple:
    old_h, old_w = canvas_size
    new_h, new_w = _compute_resized_output_size(canvas_size, size, max_size)
    if (new_h, new_w) == (old_h, old_w):
        return bounding_boxes, canvas_size
    w_ratio, h_ratio = new_w / old_w, new_h / old_h
    ratios = ember.tensor([w_ratio, h_ratio, w_ratio, h_ratio], dtype=ember.float64)
    return bounding_boxes.to(ember.float64).mul(ratios).to(bounding_boxes.dtype), (new_h, new_w)


_register_image(resize, resize_image)


@_register_kernel_internal(resize, tvt.Mask, tv_tensor_wrapper=False)
def _resize_mask_dispatch(inpt, size, interpolation=None, max_size=None, antialias=None):
    return tvt.wrap(resize_mask(inpt.as_subclass(ember.Tensor), size, max_size=max_size), like=inpt)


@_register_kernel_internal(resize, tvt.BoundingBoxes, tv_tensor_wrapper=False)
def _resize_boxes_dispatch(inpt, size, interpolation=None, max_size=None, antialias=None):
    out, canvas_size = resize_bounding_boxes(inpt.as_subclass(ember.Tensor), inpt.canvas_size, size, max_size)
    return tvt.wrap(out, like=inpt, canvas_size=canvas_size)


# ---- pad -------------------------------------------------------------------------------------

def _parse_pad_padding(padding: Any) -> list[int]:
    """[left, right, top, bottom] from torchvision's int / [all] / [lr, tb] / [l, t, r, b]."""
    if isinstance(padding, int) and not isinstance(padding, bool):
        return [padding] * 4
    if isinstance(padding, (tuple, list)):
        if len(padding) == 1:
            return [padding[0]] * 4
        if len(padding) == 2:
            return [padding[0], padding[0], padding[1], padding[1]]
        if len(padding) == 4:
            return [padding[0], padding[2], padding[1], padding[3]]
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")
    raise TypeError(f"`padding` should be an integer or tuple or list of integers, but got {padding}")


_PAD_MODES = {"edge": "edge", "reflect": "reflect", "symmetric": "symmetric"}


def _pad_indices(size: int, before: int, after: int, mode: str) -> ember.Tensor:
    # Source index of each output row: NumPy's pad of an index range spells the same modes
    # (torchvision's 'edge' is NumPy's 'edge', 'symmetric' repeats the border, 'reflect' not).
    return ember.tensor(np.pad(np.arange(size), (before, after), mode=_PAD_MODES[mode]), dtype=ember.int64)


def _pad_with_scalar_fill(image: ember.Tensor, padding: list[int], fill: float, padding_mode: str) -> ember.Tensor:
    left, right, top, bottom = padding
    if padding_mode == "constant":
        if image.dtype == ember.bool:
            return nnF.pad(image.to(ember.uint8), padding, value=float(fill)).to(ember.bool)
        return nnF.pad(image, padding, value=float(fill))
    # Negative padding crops first, as torch's pad does.
    h, w = image.shape[-2:]
    image = image[..., max(-top, 0):h - max(-bottom, 0), max(-left, 0):w - max(-right, 0)]
    h, w = image.shape[-2:]
    if padding_mode == "reflect" and (max(left, right) >= w or max(top, bottom) >= h):
        raise ValueError(f"Padding size should be less than the corresponding input dimension for reflect mode, "
                         f"but got padding {padding} for an input of size {(h, w)}")
    if h == 0 or w == 0:
        raise ValueError(f"Padding mode '{padding_mode}' needs a non-empty image, but got size {(h, w)}")
    rows = _pad_indices(h, max(top, 0), max(bottom, 0), padding_mode)
    cols = _pad_indices(w, max(left, 0), max(right, 0), padding_mode)
    return image.index_select(-2, rows).index_select(-1, cols)


def pad(inpt: Any, padding: Any, fill: Any = None, padding_mode: str = "constant") -> Any:
    """Pads by ``padding`` (``int``, ``[all]``, ``[left/right, top/bottom]`` or
    ``[left, top, right, bottom]``) with ``fill`` (constant mode) or by ``'edge'``, ``'reflect'``,
    ``'symmetric'``."""
    return _dispatch(pad, inpt, padding=padding, fill=fill, padding_mode=padding_mode)


def pad_image(image: ember.Tensor, padding: Any, fill: Any = None, padding_mode: str = "constant") -> ember.Tensor:
    torch_padding = _parse_pad_padding(padding)
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError(f"`padding_mode` should be either `'constant'`, `'edge'`, `'reflect'` or `'symmetric'`, "
                         f"but got `'{padding_mode}'`.")
    if fill is None:
        fill = 0
    if isinstance(fill, (int, float)):
        return _pad_with_scalar_fill(image, torch_padding, fill, padding_mode)
    if len(fill) == 1:
        return _pad_with_scalar_fill(image, torch_padding, fill[0], padding_mode)
    # A fill per channel: pad with zeros, then paint the border.
    output = _pad_with_scalar_fill(image, torch_padding, 0, padding_mode)
    if padding_mode != "constant":
        return output
    left, right, top, bottom = torch_padding
    fill_t = ember.tensor(list(fill), dtype=output.dtype).reshape(-1, 1, 1)
    if fill_t.shape[0] != output.shape[-3]:
        raise ValueError(f"fill has {fill_t.shape[0]} values but the image has {output.shape[-3]} channels")
    h, w = output.shape[-2:]
    border = ember.zeros((h, w), dtype=ember.bool)
    border[:max(top, 0), :] = True
    border[h - max(bottom, 0):, :] = True
    border[:, :max(left, 0)] = True
    border[:, w - max(right, 0):] = True
    return ember.where(border, fill_t, output)


def pad_mask(mask: ember.Tensor, padding: Any, fill: Any = None, padding_mode: str = "constant") -> ember.Tensor:
    if fill is None:
        fill = 0
    if isinstance(fill, (tuple, list)):
        raise ValueError("Non-scalar fill value is not supported")
    return _with_channel(pad_image)(mask, padding, fill=fill, padding_mode=padding_mode)


def pad_bounding_boxes(bounding_boxes: ember.Tensor, format, canvas_size, padding: Any,
                       padding_mode: str = "constant") -> tuple:
    if padding_mode != "constant":
        raise ValueError(f"Padding mode '{padding_mode}' is not supported with bounding boxes")
    left, right, top, bottom = _parse_pad_padding(padding)
    shift = [left, top, left, top] if format == XYXY else [left, top, 0, 0]
    out = bounding_boxes + ember.tensor(shift, dtype=bounding_boxes.dtype)
    canvas_size = (canvas_size[0] + top + bottom, canvas_size[1] + left + right)
    return _clamp_bounding_boxes(out, format, canvas_size), canvas_size


_register_image(pad, pad_image)
_register_kernel_internal(pad, tvt.Mask)(pad_mask)


@_register_kernel_internal(pad, tvt.BoundingBoxes, tv_tensor_wrapper=False)
def _pad_boxes_dispatch(inpt, padding, fill=None, padding_mode="constant"):
    out, canvas_size = pad_bounding_boxes(inpt.as_subclass(ember.Tensor), inpt.format, inpt.canvas_size, padding,
                                          padding_mode)
    return tvt.wrap(out, like=inpt, canvas_size=canvas_size)


# ---- crops -----------------------------------------------------------------------------------

def crop(inpt: Any, top: int, left: int, height: int, width: int) -> Any:
    """The ``height x width`` window at ``(top, left)``; parts outside the image are zeros."""
    return _dispatch(crop, inpt, top=top, left=left, height=height, width=width)


def crop_image(image: ember.Tensor, top: int, left: int, height: int, width: int) -> ember.Tensor:
    h, w = image.shape[-2:]
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > w or bottom > h:
        image = image[..., max(top, 0):max(bottom, 0), max(left, 0):max(right, 0)]
        padding = [max(min(right, 0) - left, 0), max(right - max(w, left), 0),
                   max(min(bottom, 0) - top, 0), max(bottom - max(h, top), 0)]
        return _pad_with_scalar_fill(image, padding, 0, "constant")
    return image[..., top:bottom, left:right]


def crop_bounding_boxes(bounding_boxes: ember.Tensor, format, top: int, left: int, height: int, width: int) -> tuple:
    shift = [left, top, left, top] if format == XYXY else [left, top, 0, 0]
    out = bounding_boxes - ember.tensor(shift, dtype=bounding_boxes.dtype)
    canvas_size = (height, width)
    return _clamp_bounding_boxes(out, format, canvas_size), canvas_size


_register_image(crop, crop_image)
_register_kernel_internal(crop, tvt.Mask)(_with_channel(crop_image))


@_register_kernel_internal(crop, tvt.BoundingBoxes, tv_tensor_wrapper=False)
def _crop_boxes_dispatch(inpt, top, left, height, width):
    out, canvas_size = crop_bounding_boxes(inpt.as_subclass(ember.Tensor), inpt.format, top, left, height, width)
    return tvt.wrap(out, like=inpt, canvas_size=canvas_size)


def _center_crop_parse_output_size(output_size: Any) -> list[int]:
    if isinstance(output_size, numbers.Number):
        s = int(output_size)
        return [s, s]
    if isinstance(output_size, (tuple, list)) and len(output_size) == 1:
        return [output_size[0], output_size[0]]
    if isinstance(output_size, (tuple, list)) and len(output_size) == 2:
        return list(output_size)
    raise ValueError(f"output_size must be an int or a sequence of one or two ints, but got {output_size!r}")


def _center_crop_anchor(crop_h: int, crop_w: int, image_h: int, image_w: int) -> tuple[int, int]:
    return int(round((image_h - crop_h) / 2.0)), int(round((image_w - crop_w) / 2.0))


def center_crop(inpt: Any, output_size: Any) -> Any:
    """The centered ``output_size`` window (zero-padded where larger than the image)."""
    return _dispatch(center_crop, inpt, output_size=output_size)


def center_crop_image(image: ember.Tensor, output_size: Any) -> ember.Tensor:
    crop_h, crop_w = _center_crop_parse_output_size(output_size)
    shape = tuple(image.shape)
    if image.numel() == 0:
        return image.new_empty(shape[:-2] + (crop_h, crop_w))
    image_h, image_w = shape[-2:]
    if crop_h > image_h or crop_w > image_w:
        padding = [(crop_w - image_w) // 2 if crop_w > image_w else 0, (crop_w - image_w + 1) // 2 if crop_w > image_w else 0,
                   (crop_h - image_h) // 2 if crop_h > image_h else 0, (crop_h - image_h + 1) // 2 if crop_h > image_h else 0]
        image = _pad_with_scalar_fill(image, padding, 0, "constant")
        image_h, image_w = image.shape[-2:]
        if (crop_h, crop_w) == (image_h, image_w):
            return image
    top, left = _center_crop_anchor(crop_h, crop_w, image_h, image_w)
    return image[..., top:top + crop_h, left:left + crop_w]


_register_image(center_crop, center_crop_image)
_register_kernel_internal(center_crop, tvt.Mask)(_with_channel(center_crop_image))


@_register_kernel_internal(center_crop, tvt.BoundingBoxes, tv_tensor_wrapper=False)
def _center_crop_boxes_dispatch(inpt, output_size):
    crop_h, crop_w = _center_crop_parse_output_size(output_size)
    top, left = _center_crop_anchor(crop_h, crop_w, *inpt.canvas_size)
    return crop(inpt, top, left, crop_h, crop_w)


def resized_crop(inpt: Any, top: int, left: int, height: int, width: int, size: Any,
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool | None = True) -> Any:
    """crop() then resize()."""
    kernel = _get_kernel(resized_crop, type(inpt))
    return kernel(inpt, top=top, left=left, height=height, width=width, size=size, interpolation=interpolation,
                  antialias=antialias)


def _resized_crop_any(inpt, top, left, height, width, size, interpolation=InterpolationMode.BILINEAR, antialias=True):
    return resize(crop(inpt, top, left, height, width), size, interpolation=interpolation, antialias=antialias)


for _t in (ember.Tensor, tvt.Image, tvt.Video, tvt.Mask, tvt.BoundingBoxes):
    _register_kernel_internal(resized_crop, _t, tv_tensor_wrapper=False)(_resized_crop_any)


def resized_crop_image(image: ember.Tensor, top: int, left: int, height: int, width: int, size: Any,
                       interpolation: Any = InterpolationMode.BILINEAR, antialias: bool | None = True) -> ember.Tensor:
    return resize_image(crop_image(image, top, left, height, width), size, interpolation, antialias=antialias)


# ---- affine family ---------------------------------------------------------------------------

def _get_inverse_affine_matrix(center: list[float], angle: float, translate: list[float], scale: float,
                               shear: list[float], inverted: bool = True) -> list[float]:
    # The affine map is  T * C * R * S * Sh * C^-1  (translate, center, rotate, scale, shear),
    # with R * Sh written out as [[a, b], [c, d]] (determinant 1).
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    if inverted:
        m = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0]
        m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty) + cx
        m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty) + cy
    else:
        m = [a * scale, b * scale, 0.0, c * scale, d * scale, 0.0]
        m[2] += cx + tx - m[0] * cx - m[1] * cy
        m[5] += cy + ty - m[3] * cx - m[4] * cy
    return m


def _compute_affine_output_size(matrix: list[float], w: int, h: int) -> tuple[int, int]:
    # The corners of the input, mapped by the inverse of `matrix`'s inverse (as PIL's expand).
    pts = np.array([[-0.5 * w, -0.5 * h, 1.0], [-0.5 * w, 0.5 * h, 1.0], [0.5 * w, 0.5 * h, 1.0], [0.5 * w, -0.5 * h, 1.0]],
                   dtype=np.float32)
    theta = np.array(matrix, dtype=np.float32).reshape(2, 3)
    new_pts = pts @ theta.T
    lo, hi = new_pts.min(0) + (0.5 * w, 0.5 * h), new_pts.max(0) + (0.5 * w, 0.5 * h)
    tol = 1e-4  # truncate to 1e-4 first so that 4.0000000001 does not ceil to 5
    cmax = np.ceil(np.trunc(hi / tol) * tol)
    cmin = np.floor(np.trunc(lo / tol) * tol)
    size = cmax - cmin
    return int(size[0]), int(size[1])


def _affine_grid(theta: ember.Tensor, w: int, h: int, ow: int, oh: int) -> ember.Tensor:
    # Output pixel centers, relative to the output's center, mapped by theta and normalized by the
    # input's half size: the grid_sample coordinates (align_corners=False).
    dtype = theta.dtype
    xs = ember.linspace(-ow * 0.5 + 0.5, ow * 0.5 - 0.5, steps=ow, dtype=dtype)
    ys = ember.linspace(-oh * 0.5 + 0.5, oh * 0.5 - 0.5, steps=oh, dtype=dtype)
    base = ember.stack([xs.expand(oh, ow), ys[:, None].expand(oh, ow), ember.ones((oh, ow), dtype=dtype)], dim=-1)
    scale = ember.tensor([0.5 * w, 0.5 * h], dtype=dtype)
    grid = base.reshape(oh * ow, 3) @ (theta[0].T / scale)
    return grid.reshape(1, oh, ow, 2)


def _apply_grid_transform(image: ember.Tensor, grid: ember.Tensor, interpolation: InterpolationMode,
                          fill: Any) -> ember.Tensor:
    shape = tuple(image.shape)
    channels, in_h, in_w = shape[-3:]
    out_h, out_w = grid.shape[1], grid.shape[2]
    out_shape = shape[:-3] + (channels, out_h, out_w)
    if image.numel() == 0:
        return image.new_empty(out_shape)
    fp = image.dtype == grid.dtype
    x = image.reshape(-1, channels, in_h, in_w)
    x = x if fp else x.to(grid.dtype)
    batch = x.shape[0]
    if fill is not None:
        # A channel of ones marks where the output saw the input: the rest gets the fill.
        x = ember.cat([x, ember.ones((batch, 1, in_h, in_w), dtype=x.dtype)], dim=1)
    out = nnF.grid_sample(x, grid.expand(batch, out_h, out_w, 2), mode=interpolation.value, padding_mode="zeros",
                          align_corners=False)
    if fill is not None:
        out, mask = out[:, :-1], out[:, -1:].expand(batch, channels, out_h, out_w)
        fill_list = list(fill) if isinstance(fill, (tuple, list)) else [float(fill)]
        fill_img = ember.tensor(fill_list, dtype=out.dtype).reshape(1, -1, 1, 1).expand_as(out)
        if interpolation == InterpolationMode.NEAREST:
            out = ember.where(mask < 0.5, fill_img, out)
        else:
            out = (out - fill_img) * mask + fill_img
    if not fp:
        if image.dtype in _INT_DTYPES:
            out = out.round()
        if image.dtype == ember.uint8:
            out = out.clamp(0, 255)
        out = out.to(image.dtype)
    return out.reshape(out_shape)


def _affine_parse_args(angle, translate, scale, shear, interpolation, center):
    if not isinstance(angle, (int, float)):
        raise TypeError("Argument angle should be int or float")
    if not isinstance(translate, (list, tuple)):
        raise TypeError("Argument translate should be a sequence")
    if len(translate) != 2:
        raise ValueError("Argument translate should be a sequence of length 2")
    if scale <= 0.0:
        raise ValueError("Argument scale should be positive")
    if not isinstance(shear, (numbers.Number, list, tuple)):
        raise TypeError("Shear should be either a single value or a sequence of two values")
    interpolation = _check_interpolation(interpolation)
    shear = [float(shear), 0.0] if isinstance(shear, numbers.Number) else list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    if len(shear) != 2:
        raise ValueError(f"Shear should be a sequence containing two values. Got {shear}")
    if center is not None:
        if not isinstance(center, (list, tuple)):
            raise TypeError("Argument center should be a sequence")
        center = [float(c) for c in center]
    return float(angle), [float(t) for t in translate], shear, interpolation, center


def affine(inpt: Any, angle: float, translate: Sequence[float], scale: float, shear: Any,
           interpolation: Any = InterpolationMode.NEAREST, fill: Any = None, center: list[float] | None = None) -> Any:
    """Rotates by ``angle`` degrees (counter-clockwise), scales, shears (degrees) about ``center``
    (default: the image center), then translates by ``translate`` pixels."""
    return _dispatch(affine, inpt, angle=angle, translate=translate, scale=scale, shear=shear,
                     interpolation=interpolation, fill=fill, center=center)


def affine_image(image: ember.Tensor, angle: float, translate: Sequence[float], scale: float, shear: Any,
                 interpolation: Any = InterpolationMode.NEAREST, fill: Any = None,
                 center: list[float] | None = None) -> ember.Tensor:
    angle, translate, shear, interpolation, center = _affine_parse_args(angle, translate, scale, shear,
                                                                       interpolation, center)
    height, width = image.shape[-2:]
    # center relative to the image center (the grid's origin)
    center_f = [0.0, 0.0] if center is None else [c - s * 0.5 for c, s in zip(center, [width, height], strict=True)]
    matrix = _get_inverse_affine_matrix(center_f, angle, translate, scale, shear)
    dtype = image.dtype if image.dtype in (ember.float32, ember.float64) else ember.float32
    theta = ember.tensor(matrix, dtype=dtype).reshape(1, 2, 3)
    grid = _affine_grid(theta, w=width, h=height, ow=width, oh=height)
    return _apply_grid_transform(image, grid, interpolation, fill)


def _affine_bounding_boxes_with_expand(bounding_boxes: ember.Tensor, format, canvas_size, angle, translate, scale,
                                       shear, center, expand: bool) -> tuple:
    if bounding_boxes.numel() == 0:
        return bounding_boxes, canvas_size
    height, width = canvas_size
    if center is None:
        center = [width * 0.5, height * 0.5]
    forward = np.array(_get_inverse_affine_matrix(center, angle, translate, scale, shear, inverted=False)).reshape(2, 3)
    xyxy = _xy_boxes(bounding_boxes, format)
    dtype = xyxy.dtype
    theta_t = ember.tensor(forward.T, dtype=ember.float64)
    # each box's four corners [N * 4, (x, y, 1)], mapped forward; the new box is their hull
    corners = xyxy.to(ember.float64)[:, [0, 1, 2, 1, 2, 3, 0, 3]].reshape(-1, 2)
    corners = ember.cat([corners, ember.ones((corners.shape[0], 1), dtype=ember.float64)], dim=-1)
    points = (corners @ theta_t).reshape(-1, 4, 2)
    out = ember.cat([points.amin(1), points.amax(1)], dim=1)
    if expand:
        frame = np.array([[0.0, 0.0, 1.0], [0.0, height, 1.0], [width, height, 1.0], [width, 0.0, 1.0]]) @ forward.T
        out = out - ember.tensor(np.tile(frame.min(0), 2), dtype=ember.float64)
        new_w, new_h = _compute_affine_output_size(_get_inverse_affine_matrix([0.0, 0.0], angle, translate, scale, shear),
                                                   width, height)
        canvas_size = (new_h, new_w)
    return _from_xy(out.to(dtype), bounding_boxes, format, canvas_size), canvas_size


def affine_bounding_boxes(bounding_boxes: ember.Tensor, format, canvas_size, angle, translate, scale, shear,
                          center=None) -> ember.Tensor:
    angle, translate, shear, _, center = _affine_parse_args(angle, translate, scale, shear,
                                                           InterpolationMode.NEAREST, center)
    return _affine_bounding_boxes_with_expand(bounding_boxes, format, canvas_size, angle, translate, scale, shear,
                                              center, expand=False)[0]


_register_image(affine, affine_image)


@_register_kernel_internal(affine, tvt.Mask, tv_tensor_wrapper=False)
def _affine_mask_dispatch(inpt, angle, translate, scale, shear, interpolation=None, fill=None, center=None):
    out = _with_channel(affine_image)(inpt.as_subclass(ember.Tensor), angle, translate, scale, shear,
                                      InterpolationMode.NEAREST, fill, center)
    return tvt.wrap(out, like=inpt)


@_register_kernel_internal(affine, tvt.BoundingBoxes, tv_tensor_wrapper=False)
def _affine_boxes_dispatch(inpt, angle, translate, scale, shear, interpolation=None, fill=None, center=None):
    out = affine_bounding_boxes(inpt.as_subclass(ember.Tensor), inpt.format, inpt.canvas_size, angle, translate,
                                scale, shear, center)
    return tvt.wrap(out, like=inpt)


def rotate(inpt: Any, angle: float, interpolation: Any = InterpolationMode.NEAREST, expand: bool = False,
           center: list[float] | None = None, fill: Any = None) -> Any:
    """Rotates by ``angle`` degrees counter-clockwise about ``center``; ``expand`` grows the canvas
    to hold the whole rotated image."""
    return _dispatch(rotate, inpt, angle=angle, interpolation=interpolation, expand=expand, center=center, fill=fill)


def rotate_image(image: ember.Tensor, angle: float, interpolation: Any = InterpolationMode.NEAREST,
                 expand: bool = False, center: list[float] | None = None, fill: Any = None) -> ember.Tensor:
    interpolation = _check_interpolation(interpolation)
    angle = float(angle) % 360
    if center is None and image.numel() > 0:
        # Exact quarter turns are permutations of pixels: no resampling error.
        if angle == 0:
            return image.clone()
        if angle == 180:
            return ember.rot90(image, 2, [-2, -1])
        if expand or image.shape[-1] == image.shape[-2]:
            if angle == 90:
                return ember.rot90(image, 1, [-2, -1])
            if angle == 270:
                return ember.rot90(image, 3, [-2, -1])
    height, width = image.shape[-2:]
    center_f = [0.0, 0.0] if center is None else [c - s * 0.5 for c, s in zip(center, [width, height], strict=True)]
    # rotate's angle runs counter-clockwise, the affine matrix's clockwise in image coordinates
    matrix = _get_inverse_affine_matrix(center_f, -angle, [0.0, 0.0], 1.0, [0.0, 0.0])
    ow, oh = _compute_affine_output_size(matrix, width, height) if expand else (width, height)
    dtype = image.dtype if image.dtype in (ember.float32, ember.float64) else ember.float32
    theta = ember.tensor(matrix, dtype=dtype).reshape(1, 2, 3)
    return _apply_grid_transform(image, _affine_grid(theta, w=width, h=height, ow=ow, oh=oh), interpolation, fill)


def rotate_bounding_boxes(bounding_boxes: ember.Tensor, format, canvas_size, angle: float, expand: bool = False,
                          center: list[float] | None = None) -> tuple:
    return _affine_bounding_boxes_with_expand(bounding_boxes, format, canvas_size, -float(angle), [0.0, 0.0], 1.0,
                                              [0.0, 0.0], center, expand)


_register_image(rotate, rotate_image)


@_register_kernel_internal(rotate, tvt.Mask, tv_tensor_wrapper=False)
def _rotate_mask_dispatch(inpt, angle, interpolation=None, expand=False, center=None, fill=None):
    out = _with_channel(rotate_image)(inpt.as_subclass(ember.Tensor), angle, InterpolationMode.NEAREST, expand,
                                      center, fill)
    return tvt.wrap(out, like=inpt)


@_register_kernel_internal(rotate, tvt.BoundingBoxes, tv_tensor_wrapper=False)
def _rotate_boxes_dispatch(inpt, angle, interpolation=None, expand=False, center=None, fill=None):
    out, canvas_size = rotate_bounding_boxes(inpt.as_subclass(ember.Tensor), inpt.format, inpt.canvas_size, angle,
                                             expand, center)
    return tvt.wrap(out, like=inpt, canvas_size=canvas_size)


# ---- perspective -----------------------------------------------------------------------------

def _get_perspective_coeffs(startpoints: Sequence[Sequence[int]], endpoints: Sequence[Sequence[int]]) -> list[float]:
    """The 8 coefficients of the homography taking ``endpoints`` to ``startpoints`` (output pixel to
    input pixel, what the sampler needs), by least squares in float64."""
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError(f"Please provide exactly four corners, got {len(startpoints)} startpoints and "
                         f"{len(endpoints)} endpoints.")
    a = np.zeros((8, 8))
    for i, ((x, y), (u, v)) in enumerate(zip(endpoints, startpoints, strict=True)):
        a[2 * i] = [x, y, 1, 0, 0, 0, -u * x, -u * y]
        a[2 * i + 1] = [0, 0, 0, x, y, 1, -v * x, -v * y]
    b = np.asarray(startpoints, dtype=np.float64).reshape(8)
    return [float(c) for c in np.linalg.lstsq(a, b, rcond=None)[0].astype(np.float32)]


def _perspective_coefficients(startpoints, endpoints, coefficients) -> list[float]:
    if coefficients is not None:
        if startpoints is not None and endpoints is not None:
            raise ValueError("The startpoints/endpoints and the coefficients shouldn't be defined concurrently.")
        if len(coefficients) != 8:
            raise ValueError("Argument coefficients should have 8 float values")
        return list(coefficients)
    if startpoints is not None and endpoints is not None:
        return _get_perspective_coeffs(startpoints, endpoints)
    raise ValueError("Either the startpoints/endpoints or the coefficients must have non `None` values.")


def perspective(inpt: Any, startpoints: Any, endpoints: Any, interpolation: Any = InterpolationMode.BILINEAR,
                fill: Any = None, coefficients: list[float] | None = None) -> Any:
    """Warps so that the four ``startpoints`` land on ``endpoints`` (or by the homography
    ``coefficients``, output pixel to input pixel)."""
    return _dispatch(perspective, inpt, startpoints=startpoints, endpoints=endpoints, interpolation=interpolation,
                     fill=fill, coefficients=coefficients)


def _perspective_grid(coeffs: list[float], ow: int, oh: int, dtype) -> ember.Tensor:
    # (x, y, 1) of output pixel centers -> homography -> normalized input coordinates
    xs = ember.linspace(0.5, ow - 0.5, steps=ow, dtype=dtype)
    ys = ember.linspace(0.5, oh - 0.5, steps=oh, dtype=dtype)
    base = ember.stack([xs.expand(oh, ow), ys[:, None].expand(oh, ow), ember.ones((oh, ow), dtype=dtype)], dim=-1)
    base = base.reshape(oh * ow, 3)
    theta1 = ember.tensor([coeffs[0:3], coeffs[3:6]], dtype=dtype)
    theta2 = ember.tensor([coeffs[6], coeffs[7], 1.0], dtype=dtype)
    numer = base @ (theta1.T / ember.tensor([0.5 * ow, 0.5 * oh], dtype=dtype))
    denom = (base @ theta2)[:, None]
    return (numer / denom - 1.0).reshape(1, oh, ow, 2)


def perspective_image(image: ember.Tensor, startpoints: Any, endpoints: Any,
                      interpolation: Any = InterpolationMode.BILINEAR, fill: Any = None,
                      coefficients: list[float] | None = None) -> ember.Tensor:
    coeffs = _perspective_coefficients(startpoints, endpoints, coefficients)
    interpolation = _check_interpolation(interpolation)
    if image.numel() == 0:
        return image
    oh, ow = image.shape[-2:]
    dtype = image.dtype if image.dtype in (ember.float32, ember.float64) else ember.float32
    return _apply_grid_transform(image, _perspective_grid(coeffs, ow, oh, dtype), interpolation, fill)


def perspective_bounding_boxes(bounding_boxes: ember.Tensor, format, canvas_size, startpoints: Any, endpoints: Any,
                               coefficients: list[float] | None = None) -> ember.Tensor:
    if bounding_boxes.numel() == 0:
        return bounding_boxes
    coeffs = _perspective_coefficients(startpoints, endpoints, coefficients)
    # The coefficients map output to input; boxes need input to output: invert the homography.
    h = np.array([coeffs[0:3], coeffs[3:6], [coeffs[6], coeffs[7], 1.0]], dtype=np.float64)
    if abs(np.linalg.det(h)) < 1e-12:
        raise RuntimeError(f"Provided perspective_coeffs {coeffs} can not be inverted to transform bounding boxes.")
    inv = np.linalg.inv(h)
    inv = ember.tensor(inv / inv[2, 2], dtype=ember.float64)
    xyxy = _xy_boxes(bounding_boxes, format)
    corners = xyxy.to(ember.float64)[:, [0, 1, 2, 1, 2, 3, 0, 3]].reshape(-1, 2)
    corners = ember.cat([corners, ember.ones((corners.shape[0], 1), dtype=ember.float64)], dim=-1)
    mapped = corners @ inv.T
    points = (mapped[:, :2] / mapped[:, 2:]).reshape(-1, 4, 2)
    out = ember.cat([points.amin(1), points.amax(1)], dim=1).to(xyxy.dtype)
    return _from_xy(out, bounding_boxes, format, canvas_size)


_register_image(perspective, perspective_image)


@_register_kernel_internal(perspective, tvt.Mask, tv_tensor_wrapper=False)
def _perspective_mask_dispatch(inpt, startpoints, endpoints, interpolation=None, fill=None, coefficients=None):
    out = _with_channel(perspective_image)(inpt.as_subclass(ember.Tensor), startpoints, endpoints,
                                           InterpolationMode.NEAREST, fill, coefficients)
    return tvt.wrap(out, like=inpt)


@_register_kernel_internal(perspective, tvt.BoundingBoxes, tv_tensor_wrapper=False)
def _perspective_boxes_dispatch(inpt, startpoints, endpoints, interpolation=None, fill=None, coefficients=None):
    out = perspective_bounding_boxes(inpt.as_subclass(ember.Tensor), inpt.format, inpt.canvas_size, startpoints,
                                     endpoints, coefficients)
    return tvt.wrap(out, like=inpt)


# ---- elastic ---------------------------------------------------------------------------------

def _create_identity_grid(size: tuple[int, int], dtype) -> ember.Tensor:
    sy, sx = size
    xs = ember.linspace((-sx + 1) / sx, (sx - 1) / sx, steps=sx, dtype=dtype)
    ys = ember.linspace((-sy + 1) / sy, (sy - 1) / sy, steps=sy, dtype=dtype)
    return ember.stack([xs.expand(sy, sx), ys[:, None].expand(sy, sx)], dim=-1).unsqueeze(0)


def elastic(inpt: Any, displacement: ember.Tensor, interpolation: Any = InterpolationMode.BILINEAR,
            fill: Any = None) -> Any:
    """Moves each output pixel's sampling point by ``displacement`` ``[1, H, W, 2]`` (in
    grid_sample's normalized coordinates)."""
    return _dispatch(elastic, inpt, displacement=displacement, interpolation=interpolation, fill=fill)


def _check_displacement(displacement: Any, size: tuple[int, int]) -> None:
    if not isinstance(displacement, ember.Tensor):
        raise TypeError("Argument displacement should be a Tensor")
    expected = (1, size[0], size[1], 2)
    if tuple(displacement.shape) != expected:
        raise ValueError(f"Argument displacement shape should be {expected}, but given {tuple(displacement.shape)}")


def elastic_image(image: ember.Tensor, displacement: ember.Tensor, interpolation: Any = InterpolationMode.BILINEAR,
                  fill: Any = None) -> ember.Tensor:
    height, width = image.shape[-2:]
    _check_displacement(displacement, (height, width))
    interpolation = _check_interpolation(interpolation)
    if image.numel() == 0:
        return image
    dtype = image.dtype if image.dtype in (ember.float32, ember.float64) else ember.float32
    grid = _create_identity_grid((height, width), dtype) + displacement.to(dtype)
    return _apply_grid_transform(image, grid, interpolation, fill)


def elastic_bounding_boxes(bounding_boxes: ember.Tensor, format, canvas_size,
                           displacement: ember.Tensor) -> ember.Tensor:
    _check_displacement(displacement, canvas_size)
    if bounding_boxes.numel() == 0:
        return bounding_boxes
    height, width = canvas_size
    # The image samples input at (output + displacement); the inverse map is approximated by
    # output ~ input - displacement(input), read at each corner's pixel.
    inv_grid = _create_identity_grid(canvas_size, ember.float64) - displacement.to(ember.float64)
    xyxy = _xy_boxes(bounding_boxes, format)
    corners = xyxy.to(ember.float64)[:, [0, 1, 2, 1, 2, 3, 0, 3]].reshape(-1, 2).ceil()
    ix = corners[:, 0].long().clamp(0, width - 1)
    iy = corners[:, 1].long().clamp(0, height - 1)
    size = ember.tensor([width, height], dtype=ember.float64)
    points = ((inv_grid[0, iy, ix, :] + 1) * 0.5 * size - 0.5).reshape(-1, 4, 2)
    out = ember.cat([points.amin(1), points.amax(1)], dim=1).to(xyxy.dtype)
    return _from_xy(out, bounding_boxes, format, canvas_size)


_register_image(elastic, elastic_image)


@_register_kernel_internal(elastic, tvt.Mask, tv_tensor_wrapper=False)
def _elastic_mask_dispatch(inpt, displacement, interpolation=None, fill=None):
    out = _with_channel(elastic_image)(inpt.as_subclass(ember.Tensor), displacement, InterpolationMode.NEAREST, fill)
    return tvt.wrap(out, like=inpt)


@_register_kernel_internal(elastic, tvt.BoundingBoxes, tv_tensor_wrapper=False)
def _elastic_boxes_dispatch(inpt, displacement, interpolation=None, fill=None):
    out = elastic_bounding_boxes(inpt.as_subclass(ember.Tensor), inpt.format, inpt.canvas_size, displacement)
    return tvt.wrap(out, like=inpt)


elastic_transform = elastic


# ---- five and ten crops ----------------------------------------------------------------------

def _parse_five_crop_size(size: Any) -> tuple[int, int]:
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 1:
        return size[0], size[0]
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return size[0], size[1]
    raise ValueError("Please provide only two dimensions (h, w) for size.")


def five_crop(inpt: Any, size: Any) -> tuple:
    """The four corner crops and the center crop of ``size``: (tl, tr, bl, br, center)."""
    return _dispatch(five_crop, inpt, size=size)


def five_crop_image(image: ember.Tensor, size: Any) -> tuple:
    crop_h, crop_w = _parse_five_crop_size(size)
    image_h, image_w = image.shape[-2:]
    if crop_w > image_w or crop_h > image_h:
        raise ValueError(f"Requested crop size {size} is bigger than input size {(image_h, image_w)}")
    tl = crop_image(image, 0, 0, crop_h, crop_w)
    tr = crop_image(image, 0, image_w - crop_w, crop_h, crop_w)
    bl = crop_image(image, image_h - crop_h, 0, crop_h, crop_w)
    br = crop_image(image, image_h - crop_h, image_w - crop_w, crop_h, crop_w)
    return tl, tr, bl, br, center_crop_image(image, [crop_h, crop_w])


def ten_crop(inpt: Any, size: Any, vertical_flip: bool = False) -> tuple:
    """five_crop of the image, then of its horizontal (or vertical) flip."""
    return _dispatch(ten_crop, inpt, size=size, vertical_flip=vertical_flip)


def ten_crop_image(image: ember.Tensor, size: Any, vertical_flip: bool = False) -> tuple:
    flipped = vertical_flip_image(image) if vertical_flip else horizontal_flip_image(image)
    return five_crop_image(image, size) + five_crop_image(flipped, size)


def _wrap_each(kernel):
    def wrapper(inpt, *args, **kwargs):
        return tuple(tvt.wrap(out, like=inpt) for out in kernel(inpt.as_subclass(ember.Tensor), *args, **kwargs))

    return wrapper


for _f, _k in ((five_crop, five_crop_image), (ten_crop, ten_crop_image)):
    _register_kernel_internal(_f, ember.Tensor)(_k)
    for _t in (tvt.Image, tvt.Video):
        _register_kernel_internal(_f, _t, tv_tensor_wrapper=False)(_wrap_each(_k))


# ---- the per-type kernel names of torchvision's functional namespace -------------------------

def crop_mask(mask: ember.Tensor, top: int, left: int, height: int, width: int) -> ember.Tensor:
    return _with_channel(crop_image)(mask, top, left, height, width)


def center_crop_mask(mask: ember.Tensor, output_size: Any) -> ember.Tensor:
    return _with_channel(center_crop_image)(mask, output_size)


def center_crop_bounding_boxes(bounding_boxes: ember.Tensor, format, canvas_size, output_size: Any) -> tuple:
    crop_h, crop_w = _center_crop_parse_output_size(output_size)
    top, left = _center_crop_anchor(crop_h, crop_w, *canvas_size)
    return crop_bounding_boxes(bounding_boxes, format, top, left, crop_h, crop_w)


def resized_crop_mask(mask: ember.Tensor, top: int, left: int, height: int, width: int, size: Any) -> ember.Tensor:
    return resize_mask(crop_mask(mask, top, left, height, width), size)


def resized_crop_bounding_boxes(bounding_boxes: ember.Tensor, format, top: int, left: int, height: int, width: int,
                                size: Any) -> tuple:
    boxes, canvas_size = crop_bounding_boxes(bounding_boxes, format, top, left, height, width)
    return resize_bounding_boxes(boxes, canvas_size, size)


def affine_mask(mask: ember.Tensor, angle: float, translate: Sequence[float], scale: float, shear: Any,
                fill: Any = 0, center: list[float] | None = None) -> ember.Tensor:
    return _with_channel(affine_image)(mask, angle, translate, scale, shear, InterpolationMode.NEAREST, fill, center)


def rotate_mask(mask: ember.Tensor, angle: float, expand: bool = False, center: list[float] | None = None,
                fill: Any = 0) -> ember.Tensor:
    return _with_channel(rotate_image)(mask, angle, InterpolationMode.NEAREST, expand, center, fill)


def perspective_mask(mask: ember.Tensor, startpoints: Any, endpoints: Any, fill: Any = 0,
                     coefficients: list[float] | None = None) -> ember.Tensor:
    return _with_channel(perspective_image)(mask, startpoints, endpoints, InterpolationMode.NEAREST, fill,
                                            coefficients)


def elastic_mask(mask: ember.Tensor, displacement: ember.Tensor, fill: Any = 0) -> ember.Tensor:
    return _with_channel(elastic_image)(mask, displacement, InterpolationMode.NEAREST, fill)


# Videos [..., T, C, H, W] go through the image kernels.
resize_video, crop_video, center_crop_video, resized_crop_video = resize_image, crop_image, center_crop_image, \
    resized_crop_image
pad_video, affine_video, rotate_video = pad_image, affine_image, rotate_image
perspective_video, elastic_video = perspective_image, elastic_image
five_crop_video, ten_crop_video = five_crop_image, ten_crop_image
