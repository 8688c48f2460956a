"""The region proposal network of the R-CNN models (torchvision.models.detection.rpn)."""

from __future__ import annotations

import ember
from ember import nn
from ember.nn import functional as F

from ...ops import boxes as box_ops
from ...ops.misc import Conv2dNormActivation
from . import _utils as det_utils
from .anchor_utils import AnchorGenerator
from .image_list import ImageList


class RPNHead(nn.Module):
    """conv_depth 3x3 conv-ReLU layers, then per anchor an objectness logit and 4 box deltas."""

    _version = 2

    def __init__(self, in_channels: int, num_anchors: int, conv_depth: int = 1) -> None:
        super().__init__()
        self.conv = nn.Sequential(*[Conv2dNormActivation(in_channels, in_channels, kernel_size=3, norm_layer=None)
                                    for _ in range(conv_depth)])
        self.cls_logits = nn.Conv2d(in_channels, num_anchors, kernel_size=1, stride=1)
        self.bbox_pred = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=1, stride=1)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.normal_(layer.weight, std=0.01)
                if layer.bias is not None:
                    nn.init.constant_(layer.bias, 0)

    def forward(self, x: list[ember.Tensor]) -> tuple[list[ember.Tensor], list[ember.Tensor]]:
        logits, bbox_reg = [], []
        for feature in x:
            t = self.conv(feature)
            logits.append(self.cls_logits(t))
            bbox_reg.append(self.bbox_pred(t))
        return logits, bbox_reg


def _rpn_v1_to_v2(state_dict: dict, prefix: str = "rpn.head.") -> None:
    # Checkpoints from before RPNHead's conv became a Conv2dNormActivation stack name it conv.weight.
    for kind in ("weight", "bias"):
        old_key, new_key = f"{prefix}conv.{kind}", f"{prefix}conv.0.0.{kind}"
        if old_key in state_dict:
            state_dict[new_key] = state_dict.pop(old_key)


def permute_and_flatten(layer: ember.Tensor, N: int, A: int, C: int, H: int, W: int) -> ember.Tensor:
    """[N, A * C, H, W] → [N, H * W * A, C]."""
    return layer.reshape(N, -1, C, H, W).permute(0, 3, 4, 1, 2).reshape(N, -1, C)


def concat_box_prediction_layers(box_cls: list[ember.Tensor],
                                 box_regression: list[ember.Tensor]) -> tuple[ember.Tensor, ember.Tensor]:
    """All levels' logits as [N * sum(HWA), C] and deltas as [N * sum(HWA), 4], image-major, in the
    anchors' order."""
    cls_flat, reg_flat = [], []
    for cls_level, reg_level in zip(box_cls, box_regression, strict=True):
        n, axc, h, w = cls_level.shape
        a = reg_level.shape[1] // 4
        c = axc // a
        cls_flat.append(permute_and_flatten(cls_level, n, a, c, h, w))
        reg_flat.append(permute_and_flatten(reg_level, n, a, 4, h, w))
    box_cls = ember.cat(cls_flat, dim=1).flatten(0, -2)
    box_regression = ember.cat(reg_flat, dim=1).reshape(-1, 4)
    return box_cls, box_regression


class RegionProposalNetwork(nn.Module):
    """Scores the anchors, decodes the best pre_nms_top_n per level into proposals, clips them, drops
    tiny and low-scoring ones, runs NMS per level and keeps post_nms_top_n per image (the "training"
    or "testing" entry of each dict). In training it also returns the objectness (binary cross
    entropy) and box (smooth L1, beta 1/9) losses over batch_size_per_image sampled anchors."""

    def __init__(self, anchor_generator: AnchorGenerator, head: nn.Module, fg_iou_thresh: float,
                 bg_iou_thresh: float, batch_size_per_image: int, positive_fraction: float,
                 pre_nms_top_n: dict[str, int], post_nms_top_n: dict[str, int], nms_thresh: float,
                 score_thresh: float = 0.0) -> None:
        super().__init__()
        self.anchor_generator = anchor_generator
        self.head = head
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self.box_similarity = box_ops.box_iou
        self.proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=True)
        self.fg_bg_sampler = det_utils.BalancedPositiveNegativeSampler(batch_size_per_image, positive_fraction)
        self._pre_nms_top_n = pre_nms_top_n
        self._post_nms_top_n = post_nms_top_n
        self.nms_thresh = nms_thresh
        self.score_thresh = score_thresh
        self.min_size = 1e-3

    def pre_nms_top_n(self) -> int:
        return self._pre_nms_top_n["training" if self.training else "testing"]

    def post_nms_top_n(self) -> int:
        return self._post_nms_top_n["training" if self.training else "testing"]

    def assign_targets_to_anchors(self, anchors: list[ember.Tensor], targets: list[dict[str, ember.Tensor]]):
        """Per image: anchor labels (1 foreground, 0 background, -1 ignored) and each anchor's matched box."""
        labels, matched_gt_boxes = [], []
        for anchors_per_image, target in zip(anchors, targets, strict=True):
            gt_boxes = target["boxes"]
            if gt_boxes.numel() == 0:
                matched = ember.zeros(tuple(anchors_per_image.shape), dtype=ember.float32)
                labels_per_image = ember.zeros((anchors_per_image.shape[0],), dtype=ember.float32)
            else:
                matched_idxs = self.proposal_matcher(self.box_similarity(gt_boxes, anchors_per_image))
                # -1/-2 would index out of range: clamp, the labels say which matches count.
                matched = gt_boxes[matched_idxs.clamp(min=0)]
                labels_per_image = (matched_idxs >= 0).to(ember.float32)
                labels_per_image[matched_idxs == self.proposal_matcher.BELOW_LOW_THRESHOLD] = 0.0
                labels_per_image[matched_idxs == self.proposal_matcher.BETWEEN_THRESHOLDS] = -1.0
            labels.append(labels_per_image)
            matched_gt_boxes.append(matched)
        return labels, matched_gt_boxes

    def _get_top_n_idx(self, objectness: ember.Tensor, num_anchors_per_level: list[int]) -> ember.Tensor:
        r, offset = [], 0
        for ob in objectness.split(num_anchors_per_level, 1):
            k = det_utils._topk_min(ob, self.pre_nms_top_n(), 1)
            _, top_n_idx = ob.topk(k, dim=1)
            r.append(top_n_idx + offset)
            offset += ob.shape[1]
        return ember.cat(r, dim=1)

    def filter_proposals(self, proposals: ember.Tensor, objectness: ember.Tensor,
                         image_shapes: list[tuple[int, int]], num_anchors_per_level: list[int]):
        num_images = proposals.shape[0]
        objectness = objectness.detach().reshape(num_images, -1)
        levels = ember.cat([ember.full((n,), idx, dtype=ember.int64) for idx, n in enumerate(num_anchors_per_level)])
        levels = levels.reshape(1, -1).expand_as(objectness)
        top_n_idx = self._get_top_n_idx(objectness, num_anchors_per_level)
        batch_idx = ember.arange(num_images)[:, None]
        objectness = objectness[batch_idx, top_n_idx]
        levels = levels[batch_idx, top_n_idx]
        proposals = proposals[batch_idx, top_n_idx]
        objectness_prob = ember.sigmoid(objectness)
        final_boxes, final_scores = [], []
        for boxes, scores, lvl, img_shape in zip(proposals, objectness_prob, levels, image_shapes, strict=True):
            boxes = box_ops.clip_boxes_to_image(boxes, img_shape)
            keep = box_ops.remove_small_boxes(boxes, self.min_size)
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = ember.where(scores >= self.score_thresh)[0]
            boxes, scores, lvl = boxes[keep], scores[keep], lvl[keep]
            keep = box_ops.batched_nms(boxes, scores, lvl, self.nms_thresh)[:self.post_nms_top_n()]
            final_boxes.append(boxes[keep])
            final_scores.append(scores[keep])
        return final_boxes, final_scores

    def compute_loss(self, objectness: ember.Tensor, pred_bbox_deltas: ember.Tensor, labels: list[ember.Tensor],
                     regression_targets: list[ember.Tensor]) -> tuple[ember.Tensor, ember.Tensor]:
        sampled_pos, sampled_neg = self.fg_bg_sampler(labels)
        sampled_pos = ember.where(ember.cat(sampled_pos, dim=0))[0]
        sampled_neg = ember.where(ember.cat(sampled_neg, dim=0))[0]
        sampled = ember.cat([sampled_pos, sampled_neg], dim=0)
        objectness = objectness.flatten()
        labels = ember.cat(labels, dim=0)
        regression_targets = ember.cat(regression_targets, dim=0)
        box_loss = F.smooth_l1_loss(pred_bbox_deltas[sampled_pos], regression_targets[sampled_pos], beta=1 / 9,
                                    reduction="sum") / max(1, sampled.numel())
        objectness_loss = F.binary_cross_entropy_with_logits(objectness[sampled], labels[sampled])
        return objectness_loss, box_loss

    def forward(self, images: ImageList, features: dict[str, ember.Tensor],
                targets: list[dict[str, ember.Tensor]] | None = None):
        features = list(features.values())
        objectness, pred_bbox_deltas = self.head(features)
        anchors = self.anchor_generator(images, features)
        num_images = len(anchors)
        num_anchors_per_level = [o.shape[1] * o.shape[2] * o.shape[3] for o in objectness]
        objectness, pred_bbox_deltas = concat_box_prediction_layers(objectness, pred_bbox_deltas)
        # Faster R-CNN does not backpropagate through the proposals.
        proposals = self.box_coder.decode(pred_bbox_deltas.detach(), anchors).reshape(num_images, -1, 4)
        boxes, _ = self.filter_proposals(proposals, objectness, images.image_sizes, num_anchors_per_level)
        losses = {}
        if self.training:
            if targets is None:
                raise ValueError("targets should not be None")
            labels, matched_gt_boxes = self.assign_targets_to_anchors(anchors, targets)
            regression_targets = self.box_coder.encode(matched_gt_boxes, anchors)
            loss_objectness, loss_rpn_box_reg = self.compute_loss(objectness, pred_bbox_deltas, labels,
                                                                  regression_targets)
            losses = {"loss_objectness": loss_objectness, "loss_rpn_box_reg": loss_rpn_box_reg}
        return boxes, losses
