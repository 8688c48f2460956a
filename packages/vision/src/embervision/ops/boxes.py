"""Box ops: NMS, format conversion, areas, the IoU family and their losses (torchvision.ops.boxes).

Boxes are ``[N, 4]`` tensors; ``xyxy`` means ``(x1, y1, x2, y2)`` with ``0 <= x1 < x2`` and
``0 <= y1 < y2``. Everything is written in ember tensor ops, so the differentiable ones have autograd.
"""

from __future__ import annotations

import math

import ember

from ._utils import check_cpu, from_numpy, native, to_numpy

_FORMATS = ("xyxy", "xywh", "cxcywh")
_REDUCTION_ERROR = "Invalid Value for arg 'reduction': '{} \n Supported reduction modes: 'none', 'mean', 'sum'"


def _check_boxes(op: str, boxes, ndim: int | None = 2) -> None:
    if not isinstance(boxes, ember.Tensor):
        raise TypeError(f"[{op}] expected boxes to be a Tensor, but got {type(boxes).__name__}")
    if (ndim is not None and boxes.dim() != ndim) or boxes.dim() < 1 or boxes.shape[-1] != 4:
        want = "[N, 4]" if ndim == 2 else "[..., 4]"
        raise ValueError(f"[{op}] expected boxes of shape {want}, but got {tuple(boxes.shape)}")


def _upcast(t):
    # Products of coordinates overflow in small dtypes (float16 areas, int16 areas): widen first.
    if t.is_floating_point():
        return t if t.dtype in (ember.float32, ember.float64) else t.float()
    return t if t.dtype in (ember.int32, ember.int64) else t.int()


def _upcast_non_float(t):
    # The losses need a float dtype: integers become float32.
    if t.dtype not in (ember.float32, ember.float64):
        return t.float()
    return t


def nms(boxes, scores, iou_threshold: float):
    """Indices (int64) of the boxes kept by greedy non-maximum suppression, by decreasing score.

    Boxes are visited by score, highest first (equal scores in index order); each kept box
    suppresses every later box whose IoU with it is greater than ``iou_threshold``.
    """
    _check_boxes("nms", boxes)
    if not isinstance(scores, ember.Tensor) or scores.dim() != 1 or scores.shape[0] != boxes.shape[0]:
        got = tuple(scores.shape) if isinstance(scores, ember.Tensor) else type(scores).__name__
        raise ValueError(f"[nms] expected scores of shape [{boxes.shape[0]}], but got {got}")
    n = boxes.shape[0]
    if n == 0:
        return ember.empty((0,), dtype=ember.int64)
    check_cpu("nms", boxes, scores)
    order = ember.sort(scores.detach(), descending=True, stable=True)[1]
    # The native kernel (embervision._C) runs greedy NMS over the boxes in score order, computing each
    # IoU with box_iou's operations in the boxes' dtype; integer boxes go as float64, other floats as float32.
    sorted_boxes = boxes.detach()[order]
    if sorted_boxes.dtype not in (ember.float32, ember.float64):
        sorted_boxes = sorted_boxes.to(ember.float32 if sorted_boxes.is_floating_point() else ember.float64)
    keep = from_numpy(native().nms(to_numpy(sorted_boxes), float(iou_threshold)))
    return order[keep]


def batched_nms(boxes, scores, idxs, iou_threshold: float):
    """NMS within each category ``idxs`` (boxes of different categories never suppress each other);
    indices (int64) of the kept boxes by decreasing score."""
    _check_boxes("batched_nms", boxes)
    if not isinstance(idxs, ember.Tensor) or idxs.dim() != 1 or idxs.shape[0] != boxes.shape[0]:
        got = tuple(idxs.shape) if isinstance(idxs, ember.Tensor) else type(idxs).__name__
        raise ValueError(f"[batched_nms] expected idxs of shape [{boxes.shape[0]}], but got {got}")
    # As torchvision: the per-category loop beyond 4000 coordinates (bounded IoU matrices),
    # the coordinate-offset trick (one nms call) below.
    if boxes.numel() > 4000:
        return _batched_nms_vanilla(boxes, scores, idxs, iou_threshold)
    return _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold)


def _batched_nms_coordinate_trick(boxes, scores, idxs, iou_threshold: float):
    # Shift each category's boxes by its own offset, past every other category's boxes, so that
    # boxes of different categories never overlap.
    if boxes.numel() == 0:
        return ember.empty((0,), dtype=ember.int64)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes.dtype) * (max_coordinate + 1)
    return nms(boxes + offsets[:, None], scores, iou_threshold)


def _batched_nms_vanilla(boxes, scores, idxs, iou_threshold: float):
    keep_mask = ember.zeros(scores.shape, dtype=ember.bool)
    for class_id in ember.unique(idxs):
        curr_indices = ember.where(idxs == class_id)[0]
        curr_keep = nms(boxes[curr_indices], scores[curr_indices], iou_threshold)
        keep_mask[curr_indices[curr_keep]] = True
    keep_indices = ember.where(keep_mask)[0]
    return keep_indices[ember.sort(scores[keep_indices], descending=True, stable=True)[1]]


def remove_small_boxes(boxes, min_size: float):
    """Indices (int64) of the ``xyxy`` boxes whose both sides are at least ``min_size``."""
    _check_boxes("remove_small_boxes", boxes)
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    return ember.where((ws >= min_size) & (hs >= min_size))[0]


def clip_boxes_to_image(boxes, size: tuple[int, int]):
    """Clamps ``xyxy`` boxes (``[..., 4]``) into an image of ``size = (height, width)``."""
    _check_boxes("clip_boxes_to_image", boxes, ndim=None)
    height, width = size
    x = boxes[..., 0::2].clamp(min=0, max=width)
    y = boxes[..., 1::2].clamp(min=0, max=height)
    return ember.stack((x, y), dim=boxes.dim()).reshape(boxes.shape)


def _xywh_to_xyxy(boxes):
    x, y, w, h = boxes.unbind(-1)
    return ember.stack([x, y, x + w, y + h], dim=-1)


def _xyxy_to_xywh(boxes):
    x1, y1, x2, y2 = boxes.unbind(-1)
    return ember.stack([x1, y1, x2 - x1, y2 - y1], dim=-1)


def _cxcywh_to_xyxy(boxes):
    cx, cy, w, h = boxes.unbind(-1)
    return ember.stack([cx - 0.5 * w, cy - 0.5 * h, cx + 0.5 * w, cy + 0.5 * h], dim=-1)


def _xyxy_to_cxcywh(boxes):
    x1, y1, x2, y2 = boxes.unbind(-1)
    return ember.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], dim=-1)


_TO_XYXY = {"xyxy": lambda b: b, "xywh": _xywh_to_xyxy, "cxcywh": _cxcywh_to_xyxy}
_FROM_XYXY = {"xyxy": lambda b: b, "xywh": _xyxy_to_xywh, "cxcywh": _xyxy_to_cxcywh}


def box_convert(boxes, in_fmt: str, out_fmt: str):
    """Converts ``[..., 4]`` boxes between ``'xyxy'``, ``'xywh'`` (corner and size) and ``'cxcywh'``
    (center and size)."""
    if in_fmt not in _FORMATS or out_fmt not in _FORMATS:
        raise ValueError("Unsupported Bounding Box Conversions for given in_fmt and out_fmt")
    _check_boxes("box_convert", boxes, ndim=None)
    if in_fmt == out_fmt:
        return boxes.clone()
    return _FROM_XYXY[out_fmt](_TO_XYXY[in_fmt](boxes))


def box_area(boxes):
    """Areas ``[N]`` of ``xyxy`` boxes ``[N, 4]``."""
    _check_boxes("box_area", boxes)
    boxes = _upcast(boxes)
    return (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])


def _box_inter_union(boxes1, boxes2):
    area1, area2 = box_area(boxes1), box_area(boxes2)
    lt = ember.maximum(boxes1[:, None, :2], boxes2[:, :2])  # [N, M, 2]
    rb = ember.minimum(boxes1[:, None, 2:], boxes2[:, 2:])
    wh = _upcast(rb - lt).clamp(min=0)
    inter = wh[:, :, 0] * wh[:, :, 1]
    return inter, area1[:, None] + area2 - inter


def box_iou(boxes1, boxes2):
    """Pairwise IoU ``[N, M]`` of ``xyxy`` boxes ``[N, 4]`` and ``[M, 4]``."""
    _check_boxes("box_iou", boxes1)
    _check_boxes("box_iou", boxes2)
    inter, union = _box_inter_union(boxes1, boxes2)
    return inter / union


def generalized_box_iou(boxes1, boxes2):
    """Pairwise generalized IoU ``[N, M]``: IoU less the share of the enclosing box not covered by
    the union."""
    _check_boxes("generalized_box_iou", boxes1)
    _check_boxes("generalized_box_iou", boxes2)
    inter, union = _box_inter_union(boxes1, boxes2)
    iou = inter / union
    lti = ember.minimum(boxes1[:, None, :2], boxes2[:, :2])
    rbi = ember.maximum(boxes1[:, None, 2:], boxes2[:, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    areai = whi[:, :, 0] * whi[:, :, 1]
    return iou - (areai - union) / areai


def _box_diou_iou(boxes1, boxes2, eps: float):
    iou = box_iou(boxes1, boxes2)
    lti = ember.minimum(boxes1[:, None, :2], boxes2[:, :2])
    rbi = ember.maximum(boxes1[:, None, 2:], boxes2[:, 2:])
    whi = _upcast(rbi - lti).clamp(min=0)
    diagonal_sq = whi[:, :, 0] ** 2 + whi[:, :, 1] ** 2 + eps
    b1, b2 = _upcast(boxes1), _upcast(boxes2)
    cx1, cy1 = (b1[:, 0] + b1[:, 2]) / 2, (b1[:, 1] + b1[:, 3]) / 2
    cx2, cy2 = (b2[:, 0] + b2[:, 2]) / 2, (b2[:, 1] + b2[:, 3]) / 2
    centers_sq = (cx1[:, None] - cx2[None, :]) ** 2 + (cy1[:, None] - cy2[None, :]) ** 2
    return iou - centers_sq / diagonal_sq, iou


def distance_box_iou(boxes1, boxes2, eps: float = 1e-7):
    """Pairwise distance IoU ``[N, M]``: IoU less the squared center distance over the squared
    diagonal of the enclosing box."""
    _check_boxes("distance_box_iou", boxes1)
    _check_boxes("distance_box_iou", boxes2)
    return _box_diou_iou(boxes1, boxes2, eps)[0]


def complete_box_iou(boxes1, boxes2, eps: float = 1e-7):
    """Pairwise complete IoU ``[N, M]``: distance IoU less an aspect-ratio consistency term."""
    _check_boxes("complete_box_iou", boxes1)
    _check_boxes("complete_box_iou", boxes2)
    b1, b2 = _upcast(boxes1), _upcast(boxes2)
    diou, iou = _box_diou_iou(b1, b2, eps)
    w_pred, h_pred = b1[:, None, 2] - b1[:, None, 0], b1[:, None, 3] - b1[:, None, 1]
    w_gt, h_gt = b2[:, 2] - b2[:, 0], b2[:, 3] - b2[:, 1]
    v = (4 / math.pi**2) * (ember.atan(w_pred / h_pred) - ember.atan(w_gt / h_gt)) ** 2
    with ember.no_grad():  # the trade-off weight is a constant in the CIoU paper's gradient
        alpha = v / (1 - iou + v + eps)
    return diou - alpha * v


def _reduce(loss, reduction: str):
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean() if loss.numel() > 0 else 0.0 * loss.sum()
    if reduction == "sum":
        return loss.sum()
    raise ValueError(_REDUCTION_ERROR.format(reduction))


def _check_pair(op: str, boxes1, boxes2, reduction: str) -> None:
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(_REDUCTION_ERROR.format(reduction))
    _check_boxes(op, boxes1, ndim=None)
    _check_boxes(op, boxes2, ndim=None)
    if boxes1.shape != boxes2.shape:
        raise ValueError(f"[{op}] expected boxes1 and boxes2 of the same shape, but got "
                         f"{tuple(boxes1.shape)} and {tuple(boxes2.shape)}")


def _loss_inter_union(boxes1, boxes2):
    x1, y1, x2, y2 = boxes1.unbind(-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(-1)
    xkis1, ykis1 = ember.maximum(x1, x1g), ember.maximum(y1, y1g)
    xkis2, ykis2 = ember.minimum(x2, x2g), ember.minimum(y2, y2g)
    # Disjoint boxes intersect in nothing (not in a negative area).
    inter = (xkis2 - xkis1).clamp(min=0) * (ykis2 - ykis1).clamp(min=0)
    union = (x2 - x1) * (y2 - y1) + (x2g - x1g) * (y2g - y1g) - inter
    return inter, union


def _enclosing(boxes1, boxes2):
    x1, y1, x2, y2 = boxes1.unbind(-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(-1)
    return ember.minimum(x1, x1g), ember.minimum(y1, y1g), ember.maximum(x2, x2g), ember.maximum(y2, y2g)


def generalized_box_iou_loss(boxes1, boxes2, reduction: str = "none", eps: float = 1e-7):
    """``1 - GIoU`` of matching ``xyxy`` boxes (``[..., 4]`` each), reduced by ``reduction``."""
    _check_pair("generalized_box_iou_loss", boxes1, boxes2, reduction)
    boxes1, boxes2 = _upcast_non_float(boxes1), _upcast_non_float(boxes2)
    inter, union = _loss_inter_union(boxes1, boxes2)
    iou = inter / (union + eps)
    xc1, yc1, xc2, yc2 = _enclosing(boxes1, boxes2)
    area_c = (xc2 - xc1) * (yc2 - yc1)
    return _reduce(1 - (iou - (area_c - union) / (area_c + eps)), reduction)


def _diou_iou_loss(boxes1, boxes2, eps: float):
    inter, union = _loss_inter_union(boxes1, boxes2)
    iou = inter / (union + eps)
    xc1, yc1, xc2, yc2 = _enclosing(boxes1, boxes2)
    diagonal_sq = (xc2 - xc1) ** 2 + (yc2 - yc1) ** 2 + eps
    x1, y1, x2, y2 = boxes1.unbind(-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(-1)
    centers_sq = ((x1 + x2) / 2 - (x1g + x2g) / 2) ** 2 + ((y1 + y2) / 2 - (y1g + y2g) / 2) ** 2
    return 1 - iou + centers_sq / diagonal_sq, iou


def distance_box_iou_loss(boxes1, boxes2, reduction: str = "none", eps: float = 1e-7):
    """``1 - DIoU`` of matching ``xyxy`` boxes (``[..., 4]`` each), reduced by ``reduction``."""
    _check_pair("distance_box_iou_loss", boxes1, boxes2, reduction)
    boxes1, boxes2 = _upcast_non_float(boxes1), _upcast_non_float(boxes2)
    return _reduce(_diou_iou_loss(boxes1, boxes2, eps)[0], reduction)


def complete_box_iou_loss(boxes1, boxes2, reduction: str = "none", eps: float = 1e-7):
    """``1 - CIoU`` of matching ``xyxy`` boxes (``[..., 4]`` each), reduced by ``reduction``."""
    _check_pair("complete_box_iou_loss", boxes1, boxes2, reduction)
    boxes1, boxes2 = _upcast_non_float(boxes1), _upcast_non_float(boxes2)
    diou_loss, iou = _diou_iou_loss(boxes1, boxes2, eps)
    x1, y1, x2, y2 = boxes1.unbind(-1)
    x1g, y1g, x2g, y2g = boxes2.unbind(-1)
    v = (4 / math.pi**2) * (ember.atan((x2g - x1g) / (y2g - y1g)) - ember.atan((x2 - x1) / (y2 - y1))) ** 2
    with ember.no_grad():
        alpha = v / (1 - iou + v + eps)
    return _reduce(diou_loss + alpha * v, reduction)


def masks_to_boxes(masks):
    """``xyxy`` boxes (float32 ``[N, 4]``) around the nonzero pixels of each mask ``[N, H, W]``."""
    if not isinstance(masks, ember.Tensor) or masks.dim() != 3:
        got = tuple(masks.shape) if isinstance(masks, ember.Tensor) else type(masks).__name__
        raise ValueError(f"[masks_to_boxes] expected masks of shape [N, H, W], but got {got}")
    if masks.numel() == 0:
        return ember.zeros((masks.shape[0], 4), dtype=ember.float32)
    nonzero = masks != 0
    rows, cols = nonzero.any(2), nonzero.any(1)  # [N, H], [N, W]
    if not bool(rows.any(1).all()):
        raise ValueError("[masks_to_boxes] expected every mask to have a nonzero pixel, but got an empty mask")
    h, w = masks.shape[1], masks.shape[2]
    ys = ember.arange(h, dtype=ember.float32)
    xs = ember.arange(w, dtype=ember.float32)
    big = float(max(h, w))
    # Min and max of the set coordinates: unset ones are pushed out of the reduction's way.
    x1 = ember.where(cols, xs, big).amin(1)
    x2 = ember.where(cols, xs, -1.0).amax(1)
    y1 = ember.where(rows, ys, big).amin(1)
    y2 = ember.where(rows, ys, -1.0).amax(1)
    return ember.stack([x1, y1, x2, y2], dim=1)
