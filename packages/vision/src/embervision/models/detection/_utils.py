"""Pieces the detection models share: box coders, matchers, the balanced sampler and box losses
(torchvision.models.detection._utils)."""

from __future__ import annotations

import math
from collections import OrderedDict

import ember
from ember import nn
from ember.nn import functional as F

from ...ops import complete_box_iou_loss, distance_box_iou_loss, generalized_box_iou_loss
from ...ops.misc import FrozenBatchNorm2d
from .._api import Weights


class BalancedPositiveNegativeSampler:
    """Picks up to batch_size_per_image examples per image, positive_fraction of them positive (as many
    as there are, if fewer), the rest negative, each set drawn at random."""

    def __init__(self, batch_size_per_image: int, positive_fraction: float) -> None:
        self.batch_size_per_image = batch_size_per_image
        self.positive_fraction = positive_fraction

    def __call__(self, matched_idxs: list[ember.Tensor]) -> tuple[list[ember.Tensor], list[ember.Tensor]]:
        """matched_idxs: per image, -1 (ignore), 0 (negative) or >= 1 (positive) per example. Returns
        per image a uint8 mask of the sampled positives and one of the sampled negatives."""
        pos_idx, neg_idx = [], []
        for matched in matched_idxs:
            positive = ember.where(matched >= 1)[0]
            negative = ember.where(matched == 0)[0]
            num_pos = min(positive.numel(), int(self.batch_size_per_image * self.positive_fraction))
            num_neg = min(negative.numel(), self.batch_size_per_image - num_pos)
            pos_chosen = positive[ember.randperm(positive.numel())[:num_pos]]
            neg_chosen = negative[ember.randperm(negative.numel())[:num_neg]]
            pos_mask = ember.zeros_like(matched, dtype=ember.uint8)
            neg_mask = ember.zeros_like(matched, dtype=ember.uint8)
            pos_mask[pos_chosen] = 1
            neg_mask[neg_chosen] = 1
            pos_idx.append(pos_mask)
            neg_idx.append(neg_mask)
        return pos_idx, neg_idx


def encode_boxes(reference_boxes: ember.Tensor, proposals: ember.Tensor, weights: ember.Tensor) -> ember.Tensor:
    """The (dx, dy, dw, dh) regression targets that move `proposals` onto `reference_boxes` (both xyxy):
    centre offsets in units of the proposal's size and log size ratios, each times its weight."""
    wx, wy, ww, wh = (weights[i] for i in range(4))
    px1, py1, px2, py2 = (proposals[:, i:i + 1] for i in range(4))
    gx1, gy1, gx2, gy2 = (reference_boxes[:, i:i + 1] for i in range(4))
    ex_w, ex_h = px2 - px1, py2 - py1
    ex_cx, ex_cy = px1 + 0.5 * ex_w, py1 + 0.5 * ex_h
    gt_w, gt_h = gx2 - gx1, gy2 - gy1
    gt_cx, gt_cy = gx1 + 0.5 * gt_w, gy1 + 0.5 * gt_h
    return ember.cat([wx * (gt_cx - ex_cx) / ex_w, wy * (gt_cy - ex_cy) / ex_h,
                      ww * ember.log(gt_w / ex_w), wh * ember.log(gt_h / ex_h)], dim=1)


class BoxCoder:
    """Encodes boxes as (dx, dy, dw, dh) against reference boxes and decodes them back (R-CNN's
    parametrization). bbox_xform_clip caps dw and dh before exp, so a wild prediction stays finite."""

    def __init__(self, weights: tuple[float, float, float, float],
                 bbox_xform_clip: float = math.log(1000.0 / 16)) -> None:
        self.weights = weights
        self.bbox_xform_clip = bbox_xform_clip

    def encode(self, reference_boxes: list[ember.Tensor], proposals: list[ember.Tensor]) -> tuple[ember.Tensor, ...]:
        boxes_per_image = [len(b) for b in reference_boxes]
        targets = self.encode_single(ember.cat(reference_boxes, dim=0), ember.cat(proposals, dim=0))
        return targets.split(boxes_per_image, 0)

    def encode_single(self, reference_boxes: ember.Tensor, proposals: ember.Tensor) -> ember.Tensor:
        weights = ember.tensor(self.weights, dtype=reference_boxes.dtype)
        return encode_boxes(reference_boxes, proposals, weights)

    def decode(self, rel_codes: ember.Tensor, boxes: list[ember.Tensor]) -> ember.Tensor:
        """rel_codes for all images' boxes concatenated; returns [sum of boxes, K, 4] (K = codes per box / 4)."""
        if not isinstance(boxes, (list, tuple)):
            raise TypeError("This function expects boxes of type list or tuple.")
        if not isinstance(rel_codes, ember.Tensor):
            raise TypeError("This function expects rel_codes of type torch.Tensor.")
        boxes_per_image = [b.shape[0] for b in boxes]
        concat_boxes = ember.cat(boxes, dim=0)
        box_sum = sum(boxes_per_image)
        if box_sum > 0:
            rel_codes = rel_codes.reshape(box_sum, -1)
        pred_boxes = self.decode_single(rel_codes, concat_boxes)
        if box_sum > 0:
            pred_boxes = pred_boxes.reshape(box_sum, -1, 4)
        return pred_boxes

    def decode_single(self, rel_codes: ember.Tensor, boxes: ember.Tensor) -> ember.Tensor:
        """rel_codes [N, 4K] against boxes [N, 4] (xyxy) → boxes [N, 4K]."""
        boxes = boxes.to(rel_codes.dtype)
        widths = boxes[:, 2] - boxes[:, 0]
        heights = boxes[:, 3] - boxes[:, 1]
        ctr_x = boxes[:, 0] + 0.5 * widths
        ctr_y = boxes[:, 1] + 0.5 * heights
        wx, wy, ww, wh = self.weights
        dx = rel_codes[:, 0::4] / wx
        dy = rel_codes[:, 1::4] / wy
        dw = (rel_codes[:, 2::4] / ww).clamp(max=self.bbox_xform_clip)
        dh = (rel_codes[:, 3::4] / wh).clamp(max=self.bbox_xform_clip)
        pred_ctr_x = dx * widths[:, None] + ctr_x[:, None]
        pred_ctr_y = dy * heights[:, None] + ctr_y[:, None]
        half_w = 0.5 * ember.exp(dw) * widths[:, None]
        half_h = 0.5 * ember.exp(dh) * heights[:, None]
        pred = ember.stack([pred_ctr_x - half_w, pred_ctr_y - half_h, pred_ctr_x + half_w, pred_ctr_y + half_h], dim=2)
        return pred.flatten(1)


class BoxLinearCoder:
    """FCOS's box parametrization: the distances (left, top, right, bottom) from a reference box's
    centre to the box's sides, divided by the reference box's width/height when normalize_by_size."""

    def __init__(self, normalize_by_size: bool = True) -> None:
        self.normalize_by_size = normalize_by_size

    def _size(self, reference_boxes: ember.Tensor) -> ember.Tensor:
        w = reference_boxes[..., 2] - reference_boxes[..., 0]
        h = reference_boxes[..., 3] - reference_boxes[..., 1]
        return ember.stack([w, h, w, h], dim=-1)

    def encode(self, reference_boxes: ember.Tensor, boxes: ember.Tensor) -> ember.Tensor:
        ctr_x = 0.5 * (reference_boxes[..., 0] + reference_boxes[..., 2])
        ctr_y = 0.5 * (reference_boxes[..., 1] + reference_boxes[..., 3])
        targets = ember.stack([ctr_x - boxes[..., 0], ctr_y - boxes[..., 1], boxes[..., 2] - ctr_x,
                               boxes[..., 3] - ctr_y], dim=-1)
        if self.normalize_by_size:
            targets = targets / self._size(reference_boxes)
        return targets

    def decode(self, rel_codes: ember.Tensor, boxes: ember.Tensor) -> ember.Tensor:
        boxes = boxes.to(dtype=rel_codes.dtype)
        ctr_x = 0.5 * (boxes[..., 0] + boxes[..., 2])
        ctr_y = 0.5 * (boxes[..., 1] + boxes[..., 3])
        if self.normalize_by_size:
            rel_codes = rel_codes * self._size(boxes)
        return ember.stack([ctr_x - rel_codes[..., 0], ctr_y - rel_codes[..., 1], ctr_x + rel_codes[..., 2],
                            ctr_y + rel_codes[..., 3]], dim=-1)


class Matcher:
    """Assigns each prediction (column of an [M ground truth, N predictions] quality matrix) the ground
    truth it matches best: its index when the quality is >= high_threshold, BELOW_LOW_THRESHOLD (-1)
    below low_threshold, BETWEEN_THRESHOLDS (-2) in between. allow_low_quality_matches also keeps, for
    each ground truth, the predictions that match it best even if under the threshold."""

    BELOW_LOW_THRESHOLD = -1
    BETWEEN_THRESHOLDS = -2

    def __init__(self, high_threshold: float, low_threshold: float, allow_low_quality_matches: bool = False) -> None:
        if low_threshold > high_threshold:
            raise ValueError("low_threshold should be <= high_threshold")
        self.high_threshold = high_threshold
        self.low_threshold = low_threshold
        self.allow_low_quality_matches = allow_low_quality_matches

    def __call__(self, match_quality_matrix: ember.Tensor) -> ember.Tensor:
        if match_quality_matrix.numel() == 0:
            if match_quality_matrix.shape[0] == 0:
                raise ValueError("No ground-truth boxes available for one of the images during training")
            raise ValueError("No proposal boxes available for one of the images during training")
        matched_vals, matches = match_quality_matrix.max(dim=0)
        all_matches = matches.clone() if self.allow_low_quality_matches else None
        below = matched_vals < self.low_threshold
        between = (matched_vals >= self.low_threshold) & (matched_vals < self.high_threshold)
        matches[below] = self.BELOW_LOW_THRESHOLD
        matches[between] = self.BETWEEN_THRESHOLDS
        if all_matches is not None:
            self.set_low_quality_matches_(matches, all_matches, match_quality_matrix)
        return matches

    def set_low_quality_matches_(self, matches: ember.Tensor, all_matches: ember.Tensor,
                                 match_quality_matrix: ember.Tensor) -> None:
        # Every prediction tied for a ground truth's best quality gets back its original match.
        highest_quality_foreach_gt = match_quality_matrix.max(dim=1)[0]
        pred_inds = ember.where(match_quality_matrix == highest_quality_foreach_gt[:, None])[1]
        matches[pred_inds] = all_matches[pred_inds]


class SSDMatcher(Matcher):
    """Matcher with one threshold, where each ground truth also claims the prediction that overlaps it
    most (whatever the quality)."""

    def __init__(self, threshold: float) -> None:
        super().__init__(threshold, threshold, allow_low_quality_matches=False)

    def __call__(self, match_quality_matrix: ember.Tensor) -> ember.Tensor:
        matches = super().__call__(match_quality_matrix)
        best_pred_foreach_gt = match_quality_matrix.max(dim=1)[1]
        matches[best_pred_foreach_gt] = ember.arange(best_pred_foreach_gt.shape[0], dtype=ember.int64)
        return matches


def overwrite_eps(model: nn.Module, eps: float) -> None:
    """Set the eps of every FrozenBatchNorm2d in `model` (old checkpoints were trained with eps=0)."""
    for module in model.modules():
        if isinstance(module, FrozenBatchNorm2d):
            module.eps = eps


def retrieve_out_channels(model: nn.Module, size: tuple[int, int]) -> list[int]:
    """The channel counts of the feature maps `model` returns, found by running a zero image of `size`."""
    in_training = model.training
    model.eval()
    with ember.no_grad():
        device = next(model.parameters()).device
        features = model(ember.zeros((1, 3, size[1], size[0]), device=device))
        if isinstance(features, ember.Tensor):
            features = OrderedDict([("0", features)])
        out_channels = [x.shape[1] for x in features.values()]
    if in_training:
        model.train()
    return out_channels


def _topk_min(input: ember.Tensor, orig_kval: int, axis: int) -> int:
    return min(orig_kval, input.shape[axis])


def _box_loss(type: str, box_coder: BoxCoder, anchors_per_image: ember.Tensor,
              matched_gt_boxes_per_image: ember.Tensor, bbox_regression_per_image: ember.Tensor,
              cnf: dict[str, float] | None = None) -> ember.Tensor:
    """The summed box regression loss of one image: "l1"/"smooth_l1" on the encoded targets, or
    "giou"/"diou"/"ciou" on the decoded boxes."""
    if type not in ("l1", "smooth_l1", "ciou", "diou", "giou"):
        raise ValueError(f"Unsupported loss: {type}")
    if type in ("l1", "smooth_l1"):
        target_regression = box_coder.encode_single(matched_gt_boxes_per_image, anchors_per_image)
        if type == "l1":
            return F.l1_loss(bbox_regression_per_image, target_regression, reduction="sum")
        beta = cnf["beta"] if cnf is not None and "beta" in cnf else 1.0
        return F.smooth_l1_loss(bbox_regression_per_image, target_regression, reduction="sum", beta=beta)
    bbox_per_image = box_coder.decode_single(bbox_regression_per_image, anchors_per_image)
    eps = cnf["eps"] if cnf is not None and "eps" in cnf else 1e-7
    loss = {"ciou": complete_box_iou_loss, "diou": distance_box_iou_loss, "giou": generalized_box_iou_loss}[type]
    return loss(bbox_per_image, matched_gt_boxes_per_image, reduction="sum", eps=eps)


def _detection_weights(url: str, num_params: int, recipe: str, metrics: dict[str, float], docs: str,
                       **meta) -> Weights:
    """One COCO entry of a detection weights table (ObjectDetection preset, COCO categories unless
    `meta` says otherwise)."""
    from ...transforms._presets import ObjectDetection
    from .._meta import _COCO_CATEGORIES

    return Weights(url=url, transforms=ObjectDetection,
                   meta={"categories": _COCO_CATEGORIES, "min_size": (1, 1), "num_params": num_params,
                         "recipe": recipe, "_metrics": {"COCO-val2017": metrics}, "_docs": docs, **meta})
