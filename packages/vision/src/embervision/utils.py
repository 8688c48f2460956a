"""Image grids and drawing (torchvision.utils): make_grid, save_image, draw_bounding_boxes,
draw_segmentation_masks, draw_keypoints, flow_to_image.

Note [drawing without PIL]
~~~~~~~~~~~~~~~~~~~~~~~~~~
torchvision draws through PIL's ImageDraw; embervision has no PIL dependency, so shapes are
rasterized here with PIL's conventions: box corners are inclusive pixel indices (the int64 cast of
the coordinates), the outline is ``width`` nested one-pixel rectangles inside the box, and the fill
(``fill=True``) is the box's color at alpha 100/255, blended with PIL's integer rounding. Keypoint
disks and connection lines are pixel-center tests (inside the ellipse; within ``width / 2`` of the
segment), which can differ from PIL's rasterizer on edge pixels. Labels are drawn with a built-in
6x10 bitmap font (``_font``, X11's public-domain misc-fixed) where PIL would use its default font;
TrueType fonts (``font=``) need a font rasterizer embervision does not have, and are refused. Color
strings are ``"#rgb"``, ``"#rrggbb"``, ``"rgb(r, g, b)"`` or a CSS basic color name.
"""

from __future__ import annotations

import math
import os
import re
import warnings
from typing import Any

import numpy as np

import ember

from . import _font

__all__ = ["draw_bounding_boxes", "draw_keypoints", "draw_segmentation_masks", "flow_to_image", "make_grid",
           "save_image"]


def make_grid(tensor: ember.Tensor | list[ember.Tensor], nrow: int = 8, padding: int = 2, normalize: bool = False,
              value_range: tuple[float, float] | None = None, scale_each: bool = False,
              pad_value: float = 0.0) -> ember.Tensor:
    """Tiles a batch ``[B, C, H, W]`` (or a list of ``[C, H, W]``) into one image, ``nrow`` per
    row, ``padding`` pixels of ``pad_value`` around each; one-channel images become RGB.
    ``normalize`` maps ``value_range`` (default: the min and max, per image with ``scale_each``)
    to [0, 1]."""
    if not isinstance(tensor, ember.Tensor):
        if isinstance(tensor, list):
            for t in tensor:
                if not isinstance(t, ember.Tensor):
                    raise TypeError(f"tensor or list of tensors expected, got a list containing {type(t)}")
        else:
            raise TypeError(f"tensor or list of tensors expected, got {type(tensor)}")
    if isinstance(tensor, list):
        tensor = ember.stack(tensor, dim=0)
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 3:
        if tensor.shape[0] == 1:
            tensor = ember.cat((tensor, tensor, tensor), 0)
        tensor = tensor.unsqueeze(0)
    if tensor.dim() == 4 and tensor.shape[1] == 1:
        tensor = ember.cat((tensor, tensor, tensor), 1)
    if tensor.dim() != 4:
        raise ValueError(f"make_grid expects 2, 3 or 4 dimensions, but got {tensor.dim()}")
    if normalize:
        if value_range is not None and not isinstance(value_range, tuple):
            raise TypeError("value_range has to be a tuple (min, max) if specified. min and max are numbers")

        def norm_range(t: ember.Tensor) -> ember.Tensor:
            low, high = value_range if value_range is not None else (float(t.min()), float(t.max()))
            return (t.clamp(min=low, max=high) - low) / max(high - low, 1e-5)

        tensor = ember.stack([norm_range(t) for t in tensor]) if scale_each else norm_range(tensor)
    if tensor.shape[0] == 1:
        return tensor.squeeze(0)
    nmaps = tensor.shape[0]
    xmaps = min(nrow, nmaps)
    ymaps = int(math.ceil(float(nmaps) / xmaps))
    height, width = int(tensor.shape[2] + padding), int(tensor.shape[3] + padding)
    grid = ember.full((tensor.shape[1], height * ymaps + padding, width * xmaps + padding), pad_value,
                      dtype=tensor.dtype)
    for k in range(nmaps):
        y, x = divmod(k, xmaps)
        grid[:, y * height + padding:(y + 1) * height, x * width + padding:(x + 1) * width] = tensor[k]
    return grid


_SAVE_FORMATS = {"png": "png", "jpeg": "jpeg", "jpg": "jpeg"}


def save_image(tensor: ember.Tensor | list[ember.Tensor], fp: Any, format: str | None = None, **kwargs: Any) -> None:
    """Saves ``make_grid(tensor, **kwargs)`` (values in [0, 1]) as a PNG or JPEG file: `fp` is a path
    or a binary file object; `format` ("PNG", "JPEG") defaults to the file name's extension.
    torchvision writes through PIL; embervision encodes with ``embervision.io`` (JPEG at PIL's
    default quality, 75)."""
    from .io import encode_jpeg, encode_png

    if format is None:
        name = os.fspath(fp) if isinstance(fp, (str, os.PathLike)) else getattr(fp, "name", None)
        extension = os.path.splitext(name)[1][1:] if isinstance(name, str) else ""
        if not extension:
            raise ValueError(f"could not determine the image format from {fp!r}; pass format='PNG' or 'JPEG'")
        key = extension.lower()
        if key not in _SAVE_FORMATS:
            raise ValueError(f"unknown file extension: .{extension} (save_image writes PNG and JPEG)")
    else:
        key = str(format).lower()
        if key not in _SAVE_FORMATS:
            raise ValueError(f"unsupported image format {format!r}: save_image writes PNG and JPEG")
    with ember.no_grad():
        grid = make_grid(tensor, **kwargs)
        # +0.5 after scaling to [0, 255] rounds to the nearest integer (torchvision's rule)
        image = grid.mul(255).add_(0.5).clamp_(0, 255).to(ember.uint8)
    data = encode_png(image) if _SAVE_FORMATS[key] == "png" else encode_jpeg(image)
    payload = np.ascontiguousarray(data.numpy()).tobytes()
    if isinstance(fp, (str, os.PathLike)):
        with open(os.fspath(fp), "wb") as f:
            f.write(payload)
    else:
        fp.write(payload)

# ---- colors ----------------------------------------------------------------------------------

_CSS_BASIC = {
    "black": (0, 0, 0), "silver": (192, 192, 192), "gray": (128, 128, 128), "grey": (128, 128, 128),
    "white": (255, 255, 255), "maroon": (128, 0, 0), "red": (255, 0, 0), "purple": (128, 0, 128),
    "fuchsia": (255, 0, 255), "magenta": (255, 0, 255), "green": (0, 128, 0), "lime": (0, 255, 0),
    "olive": (128, 128, 0), "yellow": (255, 255, 0), "navy": (0, 0, 128), "blue": (0, 0, 255),
    "teal": (0, 128, 128), "aqua": (0, 255, 255), "cyan": (0, 255, 255), "orange": (255, 165, 0),
}


def _getrgb(color: Any) -> tuple[int, int, int]:
    if isinstance(color, tuple):
        return tuple(int(c) for c in color[:3])
    text = color.strip().lower()
    if text in _CSS_BASIC:
        return _CSS_BASIC[text]
    if re.fullmatch(r"#[0-9a-f]{6}", text):
        return tuple(int(text[i:i + 2], 16) for i in (1, 3, 5))
    if re.fullmatch(r"#[0-9a-f]{3}", text):
        return tuple(int(c * 2, 16) for c in text[1:])
    match = re.fullmatch(r"rgb\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)", text)
    if match:
        return tuple(min(int(v), 255) for v in match.groups())
    raise ValueError(f"unknown color specifier: {color!r} (expected '#rgb', '#rrggbb', 'rgb(r, g, b)' or one of "
                     f"{', '.join(sorted(_CSS_BASIC))})")


def _generate_color_palette(num_objects: int) -> list[tuple[int, int, int]]:
    palette = np.array([2**25 - 1, 2**15 - 1, 2**21 - 1])
    return [tuple(int(c) for c in (i * palette) % 255) for i in range(num_objects)]


def _parse_colors(colors: Any, *, num_objects: int) -> list[tuple[int, int, int]]:
    if colors is None:
        colors = _generate_color_palette(num_objects)
    elif isinstance(colors, list):
        if len(colors) < num_objects:
            raise ValueError(f"Number of colors must be equal or larger than the number of objects, but got "
                             f"{len(colors)} < {num_objects}.")
    elif not isinstance(colors, (tuple, str)):
        raise ValueError(f"`colors` must be a tuple or a string, or a list thereof, but got {colors}.")
    elif isinstance(colors, tuple) and len(colors) != 3:
        raise ValueError(f"If passed as tuple, colors should be an RGB triplet, but got {colors}.")
    else:
        colors = [colors] * num_objects
    return [_getrgb(color) for color in colors]


def _blend_alpha(region: np.ndarray, color: tuple[int, int, int], alpha: int) -> np.ndarray:
    # PIL's DIV255(img * (255 - a) + ink * a): integer blend rounded to nearest.
    v = region.astype(np.int32) * (255 - alpha) + np.array(color, dtype=np.int32) * alpha + 128
    return (((v >> 8) + v) >> 8).astype(np.uint8)


# ---- boxes -----------------------------------------------------------------------------------

def draw_bounding_boxes(image: ember.Tensor, boxes: ember.Tensor, labels: list[str] | None = None, colors: Any = None,
                        fill: bool = False, width: int = 1, font: str | None = None,
                        font_size: int | None = None) -> ember.Tensor:
    """Draws ``xyxy`` boxes (absolute pixels) on a uint8 ``[C, H, W]`` image (one or three
    channels; the result is RGB). See Note [drawing without PIL]."""
    if not isinstance(image, ember.Tensor):
        raise TypeError(f"Tensor expected, got {type(image)}")
    if image.dtype != ember.uint8:
        raise ValueError(f"Tensor uint8 expected, got {image.dtype}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    if image.shape[0] not in (1, 3):
        raise ValueError("Only grayscale and RGB images are supported")
    if boxes.dim() != 2 or boxes.shape[-1] != 4:
        raise ValueError(f"boxes must be of shape (N, 4), but got {tuple(boxes.shape)}")
    if bool((boxes[:, 0] > boxes[:, 2]).any()) or bool((boxes[:, 1] > boxes[:, 3]).any()):
        raise ValueError("Boxes need to be in (xmin, ymin, xmax, ymax) format. Use embervision.ops.box_convert to "
                         "convert them")
    num_boxes = boxes.shape[0]
    if num_boxes == 0:
        warnings.warn("boxes doesn't contain any box. No box was drawn", stacklevel=2)
        return image
    if labels is None:
        labels = [None] * num_boxes
    elif len(labels) != num_boxes:
        raise ValueError(f"Number of boxes ({num_boxes}) and labels ({len(labels)}) mismatch. Please specify labels "
                         f"for each box.")
    if font is not None:
        raise NotImplementedError(f"draw_bounding_boxes(font={font!r}) needs a TrueType rasterizer, which embervision "
                                  f"does not have; leave font unset for the built-in bitmap font")
    if font_size is not None:
        warnings.warn("Argument 'font_size' will be ignored since 'font' is not set.", stacklevel=2)
    colors = _parse_colors(colors, num_objects=num_boxes)
    canvas = np.ascontiguousarray(image.numpy().transpose(1, 2, 0))
    if canvas.shape[2] == 1:
        canvas = np.repeat(canvas, 3, axis=2)
    h, w = canvas.shape[:2]
    for (x0, y0, x1, y1), color, label in zip(boxes.to(ember.int64).tolist(), colors, labels, strict=True):
        if fill:
            ys, xs = slice(max(y0, 0), max(min(y1 + 1, h), 0)), slice(max(x0, 0), max(min(x1 + 1, w), 0))
            canvas[ys, xs] = _blend_alpha(canvas[ys, xs], color, 100)
        for i in range(width):
            top, bottom, left, right = y0 + i, y1 - i, x0 + i, x1 - i
            if top > bottom or left > right:
                break
            cols = slice(max(left, 0), max(min(right + 1, w), 0))
            rows = slice(max(top, 0), max(min(bottom + 1, h), 0))
            for y in (top, bottom):
                if 0 <= y < h:
                    canvas[y, cols] = color
            for x in (left, right):
                if 0 <= x < w:
                    canvas[rows, x] = color
        if label is not None:
            margin = width + 1  # as torchvision: the text's top-left corner, inside the outline
            _draw_text(canvas, x0 + margin, y0 + margin, str(label), color)
    return ember.tensor(canvas.transpose(2, 0, 1).copy(), dtype=ember.uint8)


def _draw_text(canvas: np.ndarray, x: int, y: int, text: str, color: tuple[int, int, int]) -> None:
    bitmap = _font.render(text)
    h, w = canvas.shape[:2]
    top, left = max(y, 0), max(x, 0)
    bottom, right = min(y + bitmap.shape[0], h), min(x + bitmap.shape[1], w)
    if top >= bottom or left >= right:
        return
    region = canvas[top:bottom, left:right]
    region[bitmap[top - y:bottom - y, left - x:right - x]] = color


# ---- masks -----------------------------------------------------------------------------------

def draw_segmentation_masks(image: ember.Tensor, masks: ember.Tensor, alpha: float = 0.8,
                            colors: Any = None) -> ember.Tensor:
    """Paints each boolean mask ``[N, H, W]`` (later masks over earlier ones) on a uint8 RGB image,
    blended with weight ``alpha``."""
    if not isinstance(image, ember.Tensor):
        raise TypeError(f"The image must be a tensor, got {type(image)}")
    if image.dtype != ember.uint8:
        raise ValueError(f"The image dtype must be uint8, got {image.dtype}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    if image.shape[0] != 3:
        raise ValueError("Pass an RGB image. Other Image formats are not supported")
    if masks.ndim == 2:
        masks = masks[None]
    if masks.ndim != 3:
        raise ValueError("masks must be of shape (H, W) or (batch_size, H, W)")
    if masks.dtype != ember.bool:
        raise ValueError(f"The masks must be of dtype bool. Got {masks.dtype}")
    if tuple(masks.shape[-2:]) != tuple(image.shape[-2:]):
        raise ValueError("The image and the masks must have the same height and width")
    num_masks = masks.shape[0]
    if num_masks == 0:
        warnings.warn("masks doesn't contain any mask. No mask was drawn", stacklevel=2)
        return image
    colors = _parse_colors(colors, num_objects=num_masks)
    painted = image.clone()
    for mask, color in zip(masks, colors, strict=True):
        painted = ember.where(mask[None], ember.tensor(color, dtype=ember.uint8)[:, None, None], painted)
    out = image * (1 - alpha) + painted * alpha
    return out.to(ember.uint8)


# ---- keypoints -------------------------------------------------------------------------------

def draw_keypoints(image: ember.Tensor, keypoints: ember.Tensor, connectivity: list[tuple[int, int]] | None = None,
                   colors: Any = None, radius: int = 2, width: int = 3) -> ember.Tensor:
    """Draws keypoints ``[num_instances, K, 2]`` (x, y) as disks of ``radius`` in ``colors``
    (default white) and the ``connectivity`` pairs as white lines of ``width``
    (see Note [drawing without PIL])."""
    if not isinstance(image, ember.Tensor):
        raise TypeError(f"The image must be a tensor, got {type(image)}")
    if image.dtype != ember.uint8:
        raise ValueError(f"The image dtype must be uint8, got {image.dtype}")
    if image.dim() != 3:
        raise ValueError("Pass individual images, not batches")
    if image.shape[0] != 3:
        raise ValueError("Pass an RGB image. Other Image formats are not supported")
    if keypoints.ndim != 3:
        raise ValueError("keypoints must be of shape (num_instances, K, 2)")
    color = (255, 255, 255) if colors is None else _getrgb(colors)
    canvas = np.ascontiguousarray(image.numpy().transpose(1, 2, 0))
    h, w = canvas.shape[:2]
    ys, xs = np.mgrid[0:h, 0:w]
    for instance in keypoints.to(ember.int64).tolist():
        for x, y in instance:
            # PIL's ellipse over the inclusive box [x - r, x + r]: pixel centers within r + 1/2
            inside = (xs - x) ** 2 + (ys - y) ** 2 <= (radius + 0.5) ** 2
            canvas[inside] = color
        for start, end in connectivity or []:
            (ax, ay), (bx, by) = instance[start], instance[end]
            dx, dy = bx - ax, by - ay
            length_sq = dx * dx + dy * dy
            t = np.clip(((xs - ax) * dx + (ys - ay) * dy) / length_sq, 0, 1) if length_sq else np.zeros_like(xs)
            dist_sq = (xs - (ax + t * dx)) ** 2 + (ys - (ay + t * dy)) ** 2
            canvas[dist_sq <= (width / 2) ** 2] = (255, 255, 255)
    return ember.tensor(canvas.transpose(2, 0, 1).copy(), dtype=ember.uint8)


# ---- optical flow ----------------------------------------------------------------------------

def _make_colorwheel() -> np.ndarray:
    """The Middlebury color wheel: 55 hues through red, yellow, green, cyan, blue, magenta."""
    segments = [("RY", 15), ("YG", 6), ("GC", 4), ("CB", 11), ("BM", 13), ("MR", 6)]
    rows = []
    for name, n in segments:
        ramp = np.floor(255 * np.arange(n) / n)
        full, zero = np.full(n, 255.0), np.zeros(n)
        rows.append({"RY": (full, ramp, zero), "YG": (255 - ramp, full, zero), "GC": (zero, full, ramp),
                     "CB": (zero, 255 - ramp, full), "BM": (ramp, zero, full), "MR": (full, zero, 255 - ramp)}[name])
    return np.concatenate([np.stack(r, axis=1) for r in rows])


def flow_to_image(flow: ember.Tensor) -> ember.Tensor:
    """An optical flow ``[2, H, W]`` or ``[N, 2, H, W]`` (float32) as uint8 RGB: hue is the
    direction, saturation the magnitude relative to the largest."""
    if flow.dtype != ember.float32:
        raise ValueError(f"Flow should be of dtype ember.float32, got {flow.dtype}.")
    orig_shape = tuple(flow.shape)
    if flow.ndim == 3:
        flow = flow[None]
    if flow.ndim != 4 or flow.shape[1] != 2:
        raise ValueError(f"Input flow should have shape (2, H, W) or (N, 2, H, W), got {orig_shape}.")
    max_norm = (flow**2).sum(dim=1).sqrt().max()
    normalized = flow / (max_norm + float(np.finfo(np.float32).eps))
    wheel = ember.tensor(_make_colorwheel(), dtype=ember.float32)
    num_cols = wheel.shape[0]
    norm = (normalized**2).sum(dim=1).sqrt()
    a = ember.atan2(-normalized[:, 1], -normalized[:, 0]) / math.pi
    fk = (a + 1) / 2 * (num_cols - 1)
    k0 = ember.floor(fk).long()
    k1 = ember.where(k0 + 1 == num_cols, ember.zeros_like(k0), k0 + 1)
    f = fk - k0
    channels = []
    for c in range(3):
        col0, col1 = wheel[:, c][k0] / 255.0, wheel[:, c][k1] / 255.0
        col = 1 - norm * (1 - ((1 - f) * col0 + f * col1))
        channels.append(ember.floor(255 * col))
    image = ember.stack(channels, dim=1).to(ember.uint8)
    return image[0] if len(orig_shape) == 3 else image
