"""Geometric transforms: flips, Resize, crops, Pad, RandomAffine, RandomRotation, RandomPerspective,
ElasticTransform."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import ember

from ...ops.boxes import box_iou
from .. import _tv_tensors as tvt
from .._modes import InterpolationMode, _check_interpolation
from . import functional as F
from ._transform import Transform, _RandomApplyTransform
from ._utils import (
    _check_padding_arg,
    _check_padding_mode_arg,
    _check_sequence_input,
    _get_fill,
    _setup_angle,
    _setup_fill_arg,
    _setup_number_or_seq,
    _setup_size,
    get_bounding_boxes,
    has_all,
    has_any,
    query_size,
)
from .functional._geometry import _get_perspective_coeffs, _parse_pad_padding
from .functional._utils import is_pure_tensor


def _uniform(low: float, high: float) -> float:
    return float(ember.empty(1, dtype=ember.float64).uniform_(low, high).item())


def _randint(low: int, high: int) -> int:
    return int(ember.randint(low, high, (1,)).item())


class RandomHorizontalFlip(_RandomApplyTransform):
    """Mirrors left-right with probability ``p``."""

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.horizontal_flip, inpt)


class RandomVerticalFlip(_RandomApplyTransform):
    """Mirrors top-bottom with probability ``p``."""

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.vertical_flip, inpt)


class Resize(Transform):
    """Resizes to ``size`` (``(h, w)``, or the shorter edge for an int); see ``F.resize``."""

    def __init__(self, size: Any, interpolation: Any = InterpolationMode.BILINEAR, max_size: int | None = None,
                 antialias: bool | None = True) -> None:
        super().__init__()
        if isinstance(size, int):
            size = [size]
        elif isinstance(size, Sequence) and len(size) in (1, 2):
            size = list(size)
        else:
            raise ValueError(f"size can either be an integer or a sequence of one or two integers, but got {size} "
                             f"instead.")
        self.size = size
        self.interpolation = _check_interpolation(interpolation)
        self.max_size = max_size
        self.antialias = antialias

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.resize, inpt, self.size, interpolation=self.interpolation, max_size=self.max_size,
                                 antialias=self.antialias)


class CenterCrop(Transform):
    """The centered ``size`` window."""

    def __init__(self, size: Any) -> None:
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.center_crop, inpt, output_size=self.size)


class RandomResizedCrop(Transform):
    """A random window of ``scale`` times the area and ``ratio`` aspect (width / height), resized to
    ``size``; after 10 failed draws, the central crop of the closest allowed aspect."""

    def __init__(self, size: Any, scale: tuple[float, float] = (0.08, 1.0),
                 ratio: tuple[float, float] = (3.0 / 4.0, 4.0 / 3.0), interpolation: Any = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> None:
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")
        if not isinstance(scale, Sequence) or len(scale) != 2:
            raise TypeError("Scale should be a sequence of two floats.")
        if not isinstance(ratio, Sequence) or len(ratio) != 2:
            raise TypeError("Ratio should be a sequence of two floats.")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("Scale and ratio should be of kind (min, max)")
        self.scale, self.ratio = scale, ratio
        self.interpolation = _check_interpolation(interpolation)
        self.antialias = antialias
        self._log_ratio = (math.log(ratio[0]), math.log(ratio[1]))

    def _get_params(self, flat_inputs: list) -> dict:
        height, width = query_size(flat_inputs)
        area = height * width
        for _ in range(10):
            target_area = area * _uniform(self.scale[0], self.scale[1])
            aspect_ratio = math.exp(_uniform(*self._log_ratio))
            w = int(round(math.sqrt(target_area * aspect_ratio)))
            h = int(round(math.sqrt(target_area / aspect_ratio)))
            if 0 < w <= width and 0 < h <= height:
                return dict(top=_randint(0, height - h + 1), left=_randint(0, width - w + 1), height=h, width=w)
        in_ratio = float(width) / float(height)
        if in_ratio < min(self.ratio):
            w, h = width, int(round(width / min(self.ratio)))
        elif in_ratio > max(self.ratio):
            h, w = height, int(round(height * max(self.ratio)))
        else:
            w, h = width, height
        return dict(top=(height - h) // 2, left=(width - w) // 2, height=h, width=w)

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.resized_crop, inpt, **params, size=self.size, interpolation=self.interpolation,
                                 antialias=self.antialias)


class Pad(Transform):
    """Pads the borders; see ``F.pad``. ``fill`` may be a dict from input type to fill."""

    def __init__(self, padding: Any, fill: Any = 0, padding_mode: str = "constant") -> None:
        super().__init__()
        _check_padding_arg(padding)
        _check_padding_mode_arg(padding_mode)
        self.padding = list(padding) if isinstance(padding, (tuple, list)) else padding
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        self.padding_mode = padding_mode

    def _transform(self, inpt: Any, params: dict) -> Any:
        fill = _get_fill(self._fill, type(inpt))
        return self._call_kernel(F.pad, inpt, padding=self.padding, fill=fill, padding_mode=self.padding_mode)


class RandomCrop(Transform):
    """A random ``size`` window, after optional ``padding`` (and padding up to ``size`` when
    ``pad_if_needed``)."""

    def __init__(self, size: Any, padding: Any = None, pad_if_needed: bool = False, fill: Any = 0,
                 padding_mode: str = "constant") -> None:
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")
        if pad_if_needed or padding is not None:
            if padding is not None:
                _check_padding_arg(padding)
            _check_padding_mode_arg(padding_mode)
        self.padding = _parse_pad_padding(padding) if padding else None  # [left, right, top, bottom]
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        self.padding_mode = padding_mode

    def _get_params(self, flat_inputs: list) -> dict:
        padded_h, padded_w = query_size(flat_inputs)
        if self.padding is not None:
            pad_left, pad_right, pad_top, pad_bottom = self.padding
            padded_h += pad_top + pad_bottom
            padded_w += pad_left + pad_right
        else:
            pad_left = pad_right = pad_top = pad_bottom = 0
        crop_h, crop_w = self.size
        if self.pad_if_needed:
            if padded_h < crop_h:
                diff = crop_h - padded_h
                pad_top, pad_bottom, padded_h = pad_top + diff, pad_bottom + diff, padded_h + 2 * diff
            if padded_w < crop_w:
                diff = crop_w - padded_w
                pad_left, pad_right, padded_w = pad_left + diff, pad_right + diff, padded_w + 2 * diff
        if crop_h > padded_h or crop_w > padded_w:
            raise ValueError(f"Required crop size {(crop_h, crop_w)} is larger than input image size "
                             f"{(padded_h, padded_w)}.")
        padding = [pad_left, pad_top, pad_right, pad_bottom]
        top = _randint(0, padded_h - crop_h + 1) if padded_h > crop_h else 0
        left = _randint(0, padded_w - crop_w + 1) if padded_w > crop_w else 0
        return dict(needs_crop=padded_h > crop_h or padded_w > crop_w, top=top, left=left, height=crop_h,
                    width=crop_w, needs_pad=any(padding), padding=padding)

    def _transform(self, inpt: Any, params: dict) -> Any:
        if params["needs_pad"]:
            inpt = self._call_kernel(F.pad, inpt, padding=params["padding"], fill=_get_fill(self._fill, type(inpt)),
                                     padding_mode=self.padding_mode)
        if params["needs_crop"]:
            inpt = self._call_kernel(F.crop, inpt, top=params["top"], left=params["left"], height=params["height"],
                                     width=params["width"])
        return inpt


class RandomAffine(Transform):
    """Random rotation in ``degrees``, translation up to ``translate`` (fractions of width and
    height), ``scale`` and ``shear`` (x range, or x then y ranges), about ``center``."""

    def __init__(self, degrees: Any, translate: Sequence[float] | None = None, scale: Sequence[float] | None = None,
                 shear: Any = None, interpolation: Any = InterpolationMode.NEAREST, fill: Any = 0,
                 center: list[float] | None = None) -> None:
        super().__init__()
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        if translate is not None:
            _check_sequence_input(translate, "translate", req_sizes=(2,))
            for t in translate:
                if not (0.0 <= t <= 1.0):
                    raise ValueError("translation values should be between 0 and 1")
        self.translate = translate
        if scale is not None:
            _check_sequence_input(scale, "scale", req_sizes=(2,))
            for s in scale:
                if s <= 0:
                    raise ValueError("scale values should be positive")
        self.scale = scale
        self.shear = _setup_angle(shear, name="shear", req_sizes=(2, 4)) if shear is not None else None
        self.interpolation = _check_interpolation(interpolation)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    def _get_params(self, flat_inputs: list) -> dict:
        height, width = query_size(flat_inputs)
        angle = _uniform(self.degrees[0], self.degrees[1])
        if self.translate is not None:
            max_dx, max_dy = float(self.translate[0] * width), float(self.translate[1] * height)
            translate = (int(round(_uniform(-max_dx, max_dx))), int(round(_uniform(-max_dy, max_dy))))
        else:
            translate = (0, 0)
        scale = _uniform(self.scale[0], self.scale[1]) if self.scale is not None else 1.0
        shear_x = shear_y = 0.0
        if self.shear is not None:
            shear_x = _uniform(self.shear[0], self.shear[1])
            if len(self.shear) == 4:
                shear_y = _uniform(self.shear[2], self.shear[3])
        return dict(angle=angle, translate=translate, scale=scale, shear=(shear_x, shear_y))

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.affine, inpt, **params, interpolation=self.interpolation,
                                 fill=_get_fill(self._fill, type(inpt)), center=self.center)


class RandomRotation(Transform):
    """Rotates by a random angle in ``degrees``."""

    def __init__(self, degrees: Any, interpolation: Any = InterpolationMode.NEAREST, expand: bool = False,
                 center: list[float] | None = None, fill: Any = 0) -> None:
        super().__init__()
        self.degrees = _setup_angle(degrees, name="degrees", req_sizes=(2,))
        self.interpolation = _check_interpolation(interpolation)
        self.expand = expand
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        if center is not None:
            _check_sequence_input(center, "center", req_sizes=(2,))
        self.center = center

    def _get_params(self, flat_inputs: list) -> dict:
        return dict(angle=_uniform(self.degrees[0], self.degrees[1]))

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.rotate, inpt, **params, interpolation=self.interpolation, expand=self.expand,
                                 center=self.center, fill=_get_fill(self._fill, type(inpt)))


class RandomPerspective(_RandomApplyTransform):
    """With probability ``p``, moves each corner inward by up to ``distortion_scale`` of half the
    size, and warps accordingly."""

    def __init__(self, distortion_scale: float = 0.5, p: float = 0.5, interpolation: Any = InterpolationMode.BILINEAR,
                 fill: Any = 0) -> None:
        super().__init__(p=p)
        if not (0 <= distortion_scale <= 1):
            raise ValueError("Argument distortion_scale value should be between 0 and 1")
        self.distortion_scale = distortion_scale
        self.interpolation = _check_interpolation(interpolation)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    def _get_params(self, flat_inputs: list) -> dict:
        height, width = query_size(flat_inputs)
        half_h, half_w = height // 2, width // 2
        bound_h = int(self.distortion_scale * half_h) + 1
        bound_w = int(self.distortion_scale * half_w) + 1
        topleft = [_randint(0, bound_w), _randint(0, bound_h)]
        topright = [_randint(width - bound_w, width), _randint(0, bound_h)]
        botright = [_randint(width - bound_w, width), _randint(height - bound_h, height)]
        botleft = [_randint(0, bound_w), _randint(height - bound_h, height)]
        startpoints = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        endpoints = [topleft, topright, botright, botleft]
        return dict(coefficients=_get_perspective_coeffs(startpoints, endpoints))

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.perspective, inpt, startpoints=None, endpoints=None,
                                 fill=_get_fill(self._fill, type(inpt)), interpolation=self.interpolation, **params)


class ElasticTransform(Transform):
    """Displaces pixels by a random field: uniform noise in [-1, 1] blurred by a Gaussian of
    ``sigma`` and scaled by ``alpha`` (pixels)."""

    def __init__(self, alpha: Any = 50.0, sigma: Any = 5.0, interpolation: Any = InterpolationMode.BILINEAR,
                 fill: Any = 0) -> None:
        super().__init__()
        self.alpha = _setup_number_or_seq(alpha, "alpha")
        self.sigma = _setup_number_or_seq(sigma, "sigma")
        self.interpolation = _check_interpolation(interpolation)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    def _get_params(self, flat_inputs: list) -> dict:
        size = list(query_size(flat_inputs))
        fields = []
        for axis in range(2):  # dx is scaled by the height, dy by the width, as torchvision
            d = ember.rand([1, 1] + size) * 2 - 1
            if self.sigma[axis] > 0.0:
                k = int(8 * self.sigma[axis] + 1)
                k += 1 - k % 2  # odd kernel
                d = F.gaussian_blur_image(d, [k, k], list(self.sigma))
            fields.append(d * self.alpha[axis] / size[axis])
        return dict(displacement=ember.cat(fields, dim=1).permute(0, 2, 3, 1))

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.elastic, inpt, **params, fill=_get_fill(self._fill, type(inpt)),
                                 interpolation=self.interpolation)



class FiveCrop(Transform):
    """The four corner crops and the center crop of ``size``, as a tuple (images and videos)."""

    def __init__(self, size: Any) -> None:
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")

    def _check_inputs(self, flat_inputs: list) -> None:
        if has_any(flat_inputs, tvt.BoundingBoxes, tvt.Mask):
            raise TypeError(f"BoundingBoxes'es and Mask's are not supported by {type(self).__name__}()")

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.five_crop, inpt, self.size)


class TenCrop(Transform):
    """FiveCrop of the image and of its horizontal (or vertical) flip."""

    def __init__(self, size: Any, vertical_flip: bool = False) -> None:
        super().__init__()
        self.size = _setup_size(size, error_msg="Please provide only two dimensions (h, w) for size.")
        self.vertical_flip = vertical_flip

    def _check_inputs(self, flat_inputs: list) -> None:
        if has_any(flat_inputs, tvt.BoundingBoxes, tvt.Mask):
            raise TypeError(f"BoundingBoxes'es and Mask's are not supported by {type(self).__name__}()")

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.ten_crop, inpt, self.size, vertical_flip=self.vertical_flip)


class RandomZoomOut(_RandomApplyTransform):
    """With probability ``p``, places the input on a canvas ``side_range`` times larger, filled with
    ``fill`` (SSD's zoom out)."""

    def __init__(self, fill: Any = 0, side_range: Sequence[float] = (1.0, 4.0), p: float = 0.5) -> None:
        super().__init__(p=p)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)
        _check_sequence_input(side_range, "side_range", req_sizes=(2,))
        self.side_range = side_range
        if side_range[0] < 1.0 or side_range[0] > side_range[1]:
            raise ValueError(f"Invalid canvas side range provided {side_range}.")

    def _get_params(self, flat_inputs: list) -> dict:
        orig_h, orig_w = query_size(flat_inputs)
        r = self.side_range[0] + float(ember.rand(1).item()) * (self.side_range[1] - self.side_range[0])
        canvas_w, canvas_h = int(orig_w * r), int(orig_h * r)
        rx, ry = ember.rand(2).tolist()
        left, top = int((canvas_w - orig_w) * rx), int((canvas_h - orig_h) * ry)
        right, bottom = canvas_w - (left + orig_w), canvas_h - (top + orig_h)
        return dict(padding=[left, top, right, bottom])

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.pad, inpt, **params, fill=_get_fill(self._fill, type(inpt)))


class RandomIoUCrop(Transform):
    """SSD's crop: a random window (``min_scale``..``max_scale`` of each side, aspect within
    bounds) whose IoU with some box (centered inside it) reaches a randomly chosen threshold from
    ``sampler_options`` (an option >= 1 keeps the sample as is). Boxes whose centers fall outside
    are zeroed, for SanitizeBoundingBoxes to drop."""

    def __init__(self, min_scale: float = 0.3, max_scale: float = 1.0, min_aspect_ratio: float = 0.5,
                 max_aspect_ratio: float = 2.0, sampler_options: list[float] | None = None, trials: int = 40) -> None:
        super().__init__()
        self.min_scale, self.max_scale = min_scale, max_scale
        self.min_aspect_ratio, self.max_aspect_ratio = min_aspect_ratio, max_aspect_ratio
        self.options = sampler_options if sampler_options is not None else [0.0, 0.1, 0.3, 0.5, 0.7, 0.9, 2.0]
        self.trials = trials

    def _check_inputs(self, flat_inputs: list) -> None:
        if not (has_all(flat_inputs, tvt.BoundingBoxes) and has_any(flat_inputs, tvt.Image, is_pure_tensor)):
            raise TypeError(f"{type(self).__name__}() requires input sample to contain tensor or PIL images and "
                            f"bounding boxes. Sample can also contain masks.")

    def _get_params(self, flat_inputs: list) -> dict:
        orig_h, orig_w = query_size(flat_inputs)
        boxes = get_bounding_boxes(flat_inputs)
        xyxy = F.convert_bounding_box_format(boxes, new_format=tvt.BoundingBoxFormat.XYXY).as_subclass(ember.Tensor)
        cx = 0.5 * (xyxy[..., 0] + xyxy[..., 2])
        cy = 0.5 * (xyxy[..., 1] + xyxy[..., 3])
        while True:
            min_jaccard_overlap = self.options[int(ember.randint(0, len(self.options), (1,)).item())]
            if min_jaccard_overlap >= 1.0:  # the "leave as is" option
                return {}
            for _ in range(self.trials):
                r0, r1 = (self.min_scale + (self.max_scale - self.min_scale) * ember.rand(2)).tolist()
                new_w, new_h = int(orig_w * r0), int(orig_h * r1)
                if new_h == 0 or not (self.min_aspect_ratio <= new_w / new_h <= self.max_aspect_ratio):
                    continue
                rx, ry = ember.rand(2).tolist()
                left, top = int((orig_w - new_w) * rx), int((orig_h - new_h) * ry)
                right, bottom = left + new_w, top + new_h
                if left == right or top == bottom:
                    continue
                within = (left < cx) & (cx < right) & (top < cy) & (cy < bottom)
                if not bool(within.any()):
                    continue
                window = ember.tensor([[left, top, right, bottom]], dtype=xyxy.dtype)
                if float(box_iou(xyxy[within], window).max()) < min_jaccard_overlap:
                    continue
                return dict(top=top, left=left, height=new_h, width=new_w, is_within_crop_area=within)

    def _transform(self, inpt: Any, params: dict) -> Any:
        if not params:
            return inpt
        output = self._call_kernel(F.crop, inpt, top=params["top"], left=params["left"], height=params["height"],
                                   width=params["width"])
        if isinstance(output, tvt.BoundingBoxes):
            output[~params["is_within_crop_area"]] = 0  # degenerate: SanitizeBoundingBoxes removes them
        return output


class ScaleJitter(Transform):
    """Resizes to fit ``target_size`` (h, w) times a random scale in ``scale_range`` (aspect kept)."""

    def __init__(self, target_size: tuple[int, int], scale_range: tuple[float, float] = (0.1, 2.0),
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool | None = True) -> None:
        super().__init__()
        self.target_size, self.scale_range = target_size, scale_range
        self.interpolation = _check_interpolation(interpolation)
        self.antialias = antialias

    def _get_params(self, flat_inputs: list) -> dict:
        orig_h, orig_w = query_size(flat_inputs)
        scale = self.scale_range[0] + float(ember.rand(1).item()) * (self.scale_range[1] - self.scale_range[0])
        r = min(self.target_size[1] / orig_w, self.target_size[0] / orig_h) * scale
        return dict(size=(int(orig_h * r), int(orig_w * r)))

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.resize, inpt, size=params["size"], interpolation=self.interpolation,
                                 antialias=self.antialias)


class RandomShortestSize(Transform):
    """Resizes the shorter side to one of ``min_size`` (random), the longer side capped at
    ``max_size``."""

    def __init__(self, min_size: int | Sequence[int], max_size: int | None = None,
                 interpolation: Any = InterpolationMode.BILINEAR, antialias: bool | None = True) -> None:
        super().__init__()
        self.min_size = [min_size] if isinstance(min_size, int) else list(min_size)
        self.max_size = max_size
        self.interpolation = _check_interpolation(interpolation)
        self.antialias = antialias

    def _get_params(self, flat_inputs: list) -> dict:
        orig_h, orig_w = query_size(flat_inputs)
        min_size = self.min_size[int(ember.randint(len(self.min_size), ()).item())]
        r = min_size / min(orig_h, orig_w)
        if self.max_size is not None:
            r = min(r, self.max_size / max(orig_h, orig_w))
        return dict(size=(int(orig_h * r), int(orig_w * r)))

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.resize, inpt, size=params["size"], interpolation=self.interpolation,
                                 antialias=self.antialias)


class RandomResize(Transform):
    """Resizes the shorter side to a random size in ``[min_size, max_size)``."""

    def __init__(self, min_size: int, max_size: int, interpolation: Any = InterpolationMode.BILINEAR,
                 antialias: bool | None = True) -> None:
        super().__init__()
        self.min_size, self.max_size = min_size, max_size
        self.interpolation = _check_interpolation(interpolation)
        self.antialias = antialias

    def _get_params(self, flat_inputs: list) -> dict:
        return dict(size=[int(ember.randint(self.min_size, self.max_size, ()).item())])

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.resize, inpt, params["size"], interpolation=self.interpolation,
                                 antialias=self.antialias)
