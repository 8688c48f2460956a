"""The R-CNN second stage: box, mask and keypoint heads on pooled proposals, their losses and
post-processing (torchvision.models.detection.roi_heads)."""

from __future__ import annotations

import ember
from ember import nn
from ember.nn import functional as F

from ...ops import boxes as box_ops
from ...ops.roi_align import roi_align
from . import _utils as det_utils


def fastrcnn_loss(class_logits: ember.Tensor, box_regression: ember.Tensor, labels: list[ember.Tensor],
                  regression_targets: list[ember.Tensor]) -> tuple[ember.Tensor, ember.Tensor]:
    """Cross entropy over the sampled proposals, and smooth L1 (beta 1/9) between the positives' deltas
    for their own class and their targets, summed and divided by the number of sampled proposals."""
    labels = ember.cat(labels, dim=0)
    regression_targets = ember.cat(regression_targets, dim=0)
    classification_loss = F.cross_entropy(class_logits, labels)
    pos_inds = ember.where(labels > 0)[0]
    labels_pos = labels[pos_inds]
    n = class_logits.shape[0]
    box_regression = box_regression.reshape(n, box_regression.shape[-1] // 4, 4)
    box_loss = F.smooth_l1_loss(box_regression[pos_inds, labels_pos], regression_targets[pos_inds], beta=1 / 9,
                                reduction="sum")
    return classification_loss, box_loss / labels.numel()


def maskrcnn_inference(x: ember.Tensor, labels: list[ember.Tensor]) -> list[ember.Tensor]:
    """Each detection's mask probabilities for its predicted class, [n, 1, M, M] per image."""
    mask_prob = x.sigmoid()
    boxes_per_image = [label.shape[0] for label in labels]
    labels = ember.cat(labels)
    mask_prob = mask_prob[ember.arange(x.shape[0]), labels][:, None]
    return list(mask_prob.split(boxes_per_image, dim=0))


def project_masks_on_boxes(gt_masks: ember.Tensor, boxes: ember.Tensor, matched_idxs: ember.Tensor,
                           M: int) -> ember.Tensor:
    """Each proposal's window of its matched ground-truth mask, resampled (RoIAlign) to M x M."""
    rois = ember.cat([matched_idxs.to(boxes.dtype)[:, None], boxes], dim=1)
    gt_masks = gt_masks[:, None].to(rois.dtype)
    return roi_align(gt_masks, rois, (M, M), 1.0)[:, 0]


def maskrcnn_loss(mask_logits: ember.Tensor, proposals: list[ember.Tensor], gt_masks: list[ember.Tensor],
                  gt_labels: list[ember.Tensor], mask_matched_idxs: list[ember.Tensor]) -> ember.Tensor:
    """Binary cross entropy between the positives' mask logits for their class and the projected masks."""
    discretization_size = mask_logits.shape[-1]
    labels = ember.cat([gt_label[idxs] for gt_label, idxs in zip(gt_labels, mask_matched_idxs, strict=True)], dim=0)
    mask_targets = ember.cat([project_masks_on_boxes(m, p, i, discretization_size)
                              for m, p, i in zip(gt_masks, proposals, mask_matched_idxs, strict=True)], dim=0)
    if mask_targets.numel() == 0:
        # No positive proposal: a zero loss that still depends on the logits.
        return mask_logits.sum() * 0
    return F.binary_cross_entropy_with_logits(mask_logits[ember.arange(labels.shape[0]), labels], mask_targets)


def keypoints_to_heatmap(keypoints: ember.Tensor, rois: ember.Tensor,
                         heatmap_size: int) -> tuple[ember.Tensor, ember.Tensor]:
    """Each keypoint's cell index (y * size + x) on its roi's heatmap_size² grid, and whether it is
    visible and inside the roi (a keypoint on the roi's right/bottom edge goes to the last cell)."""
    offset_x, offset_y = rois[:, 0:1], rois[:, 1:2]
    scale_x = heatmap_size / (rois[:, 2] - rois[:, 0])[:, None]
    scale_y = heatmap_size / (rois[:, 3] - rois[:, 1])[:, None]
    x, y = keypoints[..., 0], keypoints[..., 1]
    x_boundary = x == rois[:, 2][:, None]
    y_boundary = y == rois[:, 3][:, None]
    x = ((x - offset_x) * scale_x).floor().long()
    y = ((y - offset_y) * scale_y).floor().long()
    x[x_boundary] = heatmap_size - 1
    y[y_boundary] = heatmap_size - 1
    valid_loc = (x >= 0) & (y >= 0) & (x < heatmap_size) & (y < heatmap_size)
    valid = (valid_loc & (keypoints[..., 2] > 0)).long()
    return (y * heatmap_size + x) * valid, valid


def heatmaps_to_keypoints(maps: ember.Tensor, rois: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
    """Each roi's heatmaps upsampled (bicubic) to the roi's size in pixels; a keypoint sits at its map's
    maximum (pixel centre). Returns [R, K, 3] (x, y, 1) and the maxima [R, K]."""
    offset_x, offset_y = rois[:, 0], rois[:, 1]
    widths = (rois[:, 2] - rois[:, 0]).clamp(min=1)
    heights = (rois[:, 3] - rois[:, 1]).clamp(min=1)
    widths_ceil, heights_ceil = widths.ceil(), heights.ceil()
    num_keypoints = maps.shape[1]
    xy_preds = ember.zeros((len(rois), 3, num_keypoints), dtype=ember.float32)
    end_scores = ember.zeros((len(rois), num_keypoints), dtype=ember.float32)
    for i in range(len(rois)):
        roi_map_width = int(widths_ceil[i].item())
        roi_map_height = int(heights_ceil[i].item())
        width_correction = widths[i] / roi_map_width
        height_correction = heights[i] / roi_map_height
        roi_map = F.interpolate(maps[i][:, None], size=(roi_map_height, roi_map_width), mode="bicubic",
                                align_corners=False)[:, 0]
        w = roi_map.shape[2]
        pos = roi_map.reshape(num_keypoints, -1).argmax(dim=1)
        x_int = pos % w
        y_int = ember.div(pos - x_int, w, rounding_mode="floor")
        xy_preds[i, 0, :] = (x_int.float() + 0.5) * width_correction + offset_x[i]
        xy_preds[i, 1, :] = (y_int.float() + 0.5) * height_correction + offset_y[i]
        xy_preds[i, 2, :] = 1
        end_scores[i, :] = roi_map[ember.arange(num_keypoints), y_int, x_int]
    return xy_preds.permute(0, 2, 1), end_scores


def keypointrcnn_loss(keypoint_logits: ember.Tensor, proposals: list[ember.Tensor], gt_keypoints: list[ember.Tensor],
                      keypoint_matched_idxs: list[ember.Tensor]) -> ember.Tensor:
    """Cross entropy over each valid keypoint's heatmap cells (a softmax over the H*W cells)."""
    n, k, h, w = keypoint_logits.shape
    if h != w:
        raise ValueError(f"keypoint_logits height and width (last two elements of shape) should be equal. "
                         f"Instead got H = {h} and W = {w}")
    heatmaps, valid = [], []
    for proposals_per_image, gt_kp, midx in zip(proposals, gt_keypoints, keypoint_matched_idxs, strict=True):
        heatmaps_per_image, valid_per_image = keypoints_to_heatmap(gt_kp[midx], proposals_per_image, h)
        heatmaps.append(heatmaps_per_image.reshape(-1))
        valid.append(valid_per_image.reshape(-1))
    keypoint_targets = ember.cat(heatmaps, dim=0)
    valid = ember.where(ember.cat(valid, dim=0) > 0)[0]
    if keypoint_targets.numel() == 0 or len(valid) == 0:
        return keypoint_logits.sum() * 0
    keypoint_logits = keypoint_logits.reshape(n * k, h * w)
    return F.cross_entropy(keypoint_logits[valid], keypoint_targets[valid])


def keypointrcnn_inference(x: ember.Tensor, boxes: list[ember.Tensor]):
    kp_probs, kp_scores = [], []
    for xx, bb in zip(x.split([b.shape[0] for b in boxes], dim=0), boxes, strict=True):
        kp_prob, scores = heatmaps_to_keypoints(xx, bb)
        kp_probs.append(kp_prob)
        kp_scores.append(scores)
    return kp_probs, kp_scores


def expand_boxes(boxes: ember.Tensor, scale: float) -> ember.Tensor:
    """Boxes scaled by `scale` about their centres."""
    w_half = (boxes[:, 2] - boxes[:, 0]) * 0.5 * scale
    h_half = (boxes[:, 3] - boxes[:, 1]) * 0.5 * scale
    x_c = (boxes[:, 2] + boxes[:, 0]) * 0.5
    y_c = (boxes[:, 3] + boxes[:, 1]) * 0.5
    return ember.stack([x_c - w_half, y_c - h_half, x_c + w_half, y_c + h_half], dim=1)


def expand_masks(mask: ember.Tensor, padding: int) -> tuple[ember.Tensor, float]:
    m = mask.shape[-1]
    scale = float(m + 2 * padding) / m
    return F.pad(mask, (padding,) * 4), scale


def paste_mask_in_image(mask: ember.Tensor, box: list[int], im_h: int, im_w: int) -> ember.Tensor:
    """One M x M mask resized (bilinear) onto its integer box (inclusive corners) in an im_h x im_w
    canvas of zeros; the parts outside the image are cut."""
    x0b, y0b, x1b, y1b = box
    w = max(x1b - x0b + 1, 1)
    h = max(y1b - y0b + 1, 1)
    mask = F.interpolate(mask.expand(1, 1, -1, -1), size=(h, w), mode="bilinear", align_corners=False)[0][0]
    im_mask = ember.zeros((im_h, im_w), dtype=mask.dtype)
    x_0, x_1 = max(x0b, 0), min(x1b + 1, im_w)
    y_0, y_1 = max(y0b, 0), min(y1b + 1, im_h)
    if x_1 > x_0 and y_1 > y_0:
        im_mask[y_0:y_1, x_0:x_1] = mask[(y_0 - y0b):(y_1 - y0b), (x_0 - x0b):(x_1 - x0b)]
    return im_mask


def paste_masks_in_image(masks: ember.Tensor, boxes: ember.Tensor, img_shape: tuple[int, int],
                         padding: int = 1) -> ember.Tensor:
    """[N, 1, M, M] masks pasted onto their boxes in [N, 1, H, W] images (the masks padded by `padding`
    and the boxes grown to match, so the borders interpolate towards zero)."""
    masks, scale = expand_masks(masks, padding=padding)
    boxes = expand_boxes(boxes, scale).to(dtype=ember.int64).tolist()
    im_h, im_w = img_shape
    res = [paste_mask_in_image(m[0], b, im_h, im_w) for m, b in zip(masks, boxes, strict=True)]
    if res:
        return ember.stack(res, dim=0)[:, None]
    return ember.zeros((0, 1, im_h, im_w), dtype=masks.dtype)


class RoIHeads(nn.Module):
    """Samples and labels proposals (training), pools their features (box_roi_pool), runs box_head and
    box_predictor, and returns detections per image {"boxes", "labels", "scores"} (eval) or the
    classifier and box losses; the optional mask and keypoint branches add "masks" / "keypoints" and
    "keypoints_scores", or their losses."""

    def __init__(self, box_roi_pool: nn.Module, box_head: nn.Module, box_predictor: nn.Module,
                 fg_iou_thresh: float, bg_iou_thresh: float, batch_size_per_image: int, positive_fraction: float,
                 bbox_reg_weights: tuple[float, float, float, float] | None, score_thresh: float, nms_thresh: float,
                 detections_per_img: int, mask_roi_pool: nn.Module | None = None, mask_head: nn.Module | None = None,
                 mask_predictor: nn.Module | None = None, keypoint_roi_pool: nn.Module | None = None,
                 keypoint_head: nn.Module | None = None, keypoint_predictor: nn.Module | None = None) -> None:
        super().__init__()
        self.box_similarity = box_ops.box_iou
        self.proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=False)
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(batch_size_per_image, positive_fraction)
        if bbox_reg_weights is None:
            bbox_reg_weights = (10.0, 10.0, 5.0, 5.0)
        self.box_coder = det_utils.BoxCoder(bbox_reg_weights)
        self.box_roi_pool = box_roi_pool
        self.box_head = box_head
        self.box_predictor = box_predictor
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.mask_roi_pool = mask_roi_pool
        self.mask_head = mask_head
        self.mask_predictor = mask_predictor
        self.keypoint_roi_pool = keypoint_roi_pool
        self.keypoint_head = keypoint_head
        self.keypoint_predictor = keypoint_predictor

    def has_mask(self) -> bool:
        return self.mask_roi_pool is not None and self.mask_head is not None and self.mask_predictor is not None

    def has_keypoint(self) -> bool:
        return (self.keypoint_roi_pool is not None and self.keypoint_head is not None
                and self.keypoint_predictor is not None)

    def assign_targets_to_proposals(self, proposals, gt_boxes, gt_labels):
        """Per image: each proposal's matched ground truth (clamped to 0 when unmatched) and its label
        (the ground truth's, 0 for background, -1 ignored)."""
        matched_idxs, labels = [], []
        for proposals_in_image, gt_boxes_in_image, gt_labels_in_image in zip(proposals, gt_boxes, gt_labels,
                                                                             strict=True):
            if gt_boxes_in_image.numel() == 0:
                clamped = ember.zeros((proposals_in_image.shape[0],), dtype=ember.int64)
                labels_in_image = ember.zeros((proposals_in_image.shape[0],), dtype=ember.int64)
            else:
                matched = self.proposal_matcher(box_ops.box_iou(gt_boxes_in_image, proposals_in_image))
                clamped = matched.clamp(min=0)
                labels_in_image = gt_labels_in_image[clamped].to(dtype=ember.int64)
                labels_in_image[matched == self.proposal_matcher.BELOW_LOW_THRESHOLD] = 0
                labels_in_image[matched == self.proposal_matcher.BETWEEN_THRESHOLDS] = -1
            matched_idxs.append(clamped)
            labels.append(labels_in_image)
        return matched_idxs, labels

    def subsample(self, labels: list[ember.Tensor]) -> list[ember.Tensor]:
        sampled_pos, sampled_neg = self.fg_bg_sampler(labels)
        return [ember.where((pos | neg) > 0)[0] for pos, neg in zip(sampled_pos, sampled_neg, strict=True)]

    def add_gt_proposals(self, proposals: list[ember.Tensor], gt_boxes: list[ember.Tensor]) -> list[ember.Tensor]:
        return [ember.cat([proposal, gt_box]) for proposal, gt_box in zip(proposals, gt_boxes, strict=True)]

    def check_targets(self, targets) -> None:
        if targets is None:
            raise ValueError("targets should not be None")
        if not all("boxes" in t for t in targets):
            raise ValueError("Every element of targets should have a boxes key")
        if not all("labels" in t for t in targets):
            raise ValueError("Every element of targets should have a labels key")
        if self.has_mask() and not all("masks" in t for t in targets):
            raise ValueError("Every element of targets should have a masks key")

    def select_training_samples(self, proposals, targets):
        """The sampled proposals (the ground truth boxes added), their matched indices, labels and
        regression targets."""
        self.check_targets(targets)
        dtype = proposals[0].dtype
        gt_boxes = [t["boxes"].to(dtype) for t in targets]
        gt_labels = [t["labels"] for t in targets]
        proposals = self.add_gt_proposals(proposals, gt_boxes)
        matched_idxs, labels = self.assign_targets_to_proposals(proposals, gt_boxes, gt_labels)
        sampled_inds = self.subsample(labels)
        matched_gt_boxes = []
        for img_id, inds in enumerate(sampled_inds):
            proposals[img_id] = proposals[img_id][inds]
            labels[img_id] = labels[img_id][inds]
            matched_idxs[img_id] = matched_idxs[img_id][inds]
            gt = gt_boxes[img_id]
            if gt.numel() == 0:
                gt = ember.zeros((1, 4), dtype=dtype)
            matched_gt_boxes.append(gt[matched_idxs[img_id]])
        regression_targets = self.box_coder.encode(matched_gt_boxes, proposals)
        return proposals, matched_idxs, labels, regression_targets

    def postprocess_detections(self, class_logits, box_regression, proposals, image_shapes):
        """Every (proposal, non-background class) pair is a candidate: softmax score above score_thresh,
        a box of side >= 0.01 after clipping; class-wise NMS, the detections_per_img best."""
        num_classes = class_logits.shape[-1]
        boxes_per_image = [p.shape[0] for p in proposals]
        pred_boxes = self.box_coder.decode(box_regression, proposals)
        pred_scores = F.softmax(class_logits, -1)
        all_boxes, all_scores, all_labels = [], [], []
        for boxes, scores, image_shape in zip(pred_boxes.split(boxes_per_image, 0),
                                              pred_scores.split(boxes_per_image, 0), image_shapes, strict=True):
            n = boxes.shape[0]
            boxes = box_ops.clip_boxes_to_image(boxes.reshape(-1, 4), image_shape).reshape(n, num_classes, 4)
            labels = ember.arange(num_classes).reshape(1, -1).expand_as(scores)
            boxes, scores, labels = boxes[:, 1:].reshape(-1, 4), scores[:, 1:].reshape(-1), labels[:, 1:].reshape(-1)
            inds = ember.where(scores > self.score_thresh)[0]
            boxes, scores, labels = boxes[inds], scores[inds], labels[inds]
            keep = box_ops.remove_small_boxes(boxes, min_size=1e-2)
            boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
            keep = box_ops.batched_nms(boxes, scores, labels, self.nms_thresh)[:self.detections_per_img]
            all_boxes.append(boxes[keep])
            all_scores.append(scores[keep])
            all_labels.append(labels[keep])
        return all_boxes, all_scores, all_labels

    def _positives(self, proposals, labels, matched_idxs):
        # In training the mask and keypoint branches look at the positive proposals only.
        pos_proposals, pos_matched = [], []
        for img_id in range(len(proposals)):
            pos = ember.where(labels[img_id] > 0)[0]
            pos_proposals.append(proposals[img_id][pos])
            pos_matched.append(matched_idxs[img_id][pos])
        return pos_proposals, pos_matched

    def forward(self, features: dict[str, ember.Tensor], proposals: list[ember.Tensor],
                image_shapes: list[tuple[int, int]], targets: list[dict[str, ember.Tensor]] | None = None):
        if targets is not None:
            for t in targets:
                if t["boxes"].dtype not in (ember.float32, ember.float64, ember.float16):
                    raise TypeError(f"target boxes must of float type, instead got {t['boxes'].dtype}")
                if t["labels"].dtype != ember.int64:
                    raise TypeError(f"target labels must of int64 type, instead got {t['labels'].dtype}")
                if self.has_keypoint() and t["keypoints"].dtype != ember.float32:
                    raise TypeError(f"target keypoints must of float type, instead got {t['keypoints'].dtype}")

        if self.training:
            proposals, matched_idxs, labels, regression_targets = self.select_training_samples(proposals, targets)
        else:
            labels = regression_targets = matched_idxs = None

        box_features = self.box_head(self.box_roi_pool(features, proposals, image_shapes))
        class_logits, box_regression = self.box_predictor(box_features)

        result: list[dict[str, ember.Tensor]] = []
        losses: dict[str, ember.Tensor] = {}
        if self.training:
            loss_classifier, loss_box_reg = fastrcnn_loss(class_logits, box_regression, labels, regression_targets)
            losses = {"loss_classifier": loss_classifier, "loss_box_reg": loss_box_reg}
        else:
            boxes, scores, labels = self.postprocess_detections(class_logits, box_regression, proposals, image_shapes)
            result = [{"boxes": b, "labels": lab, "scores": s} for b, s, lab in zip(boxes, scores, labels, strict=True)]

        if self.has_mask():
            if self.training:
                mask_proposals, pos_matched_idxs = self._positives(proposals, labels, matched_idxs)
            else:
                mask_proposals, pos_matched_idxs = [r["boxes"] for r in result], None
            mask_logits = self.mask_predictor(self.mask_head(self.mask_roi_pool(features, mask_proposals,
                                                                                image_shapes)))
            if self.training:
                gt_masks = [t["masks"] for t in targets]
                gt_labels = [t["labels"] for t in targets]
                losses["loss_mask"] = maskrcnn_loss(mask_logits, mask_proposals, gt_masks, gt_labels, pos_matched_idxs)
            else:
                masks_probs = maskrcnn_inference(mask_logits, [r["labels"] for r in result])
                for mask_prob, r in zip(masks_probs, result, strict=True):
                    r["masks"] = mask_prob

        if self.has_keypoint():
            if self.training:
                kp_proposals, pos_matched_idxs = self._positives(proposals, labels, matched_idxs)
            else:
                kp_proposals, pos_matched_idxs = [r["boxes"] for r in result], None
            keypoint_logits = self.keypoint_predictor(self.keypoint_head(self.keypoint_roi_pool(features, kp_proposals,
                                                                                                image_shapes)))
            if self.training:
                gt_keypoints = [t["keypoints"] for t in targets]
                losses["loss_keypoint"] = keypointrcnn_loss(keypoint_logits, kp_proposals, gt_keypoints,
                                                            pos_matched_idxs)
            else:
                keypoints_probs, kp_scores = keypointrcnn_inference(keypoint_logits, kp_proposals)
                for keypoint_prob, kps, r in zip(keypoints_probs, kp_scores, result, strict=True):
                    r["keypoints"] = keypoint_prob
                    r["keypoints_scores"] = kps
        return result, losses
