"""FCOS (Tian et al., "FCOS: Fully Convolutional One-Stage Object Detection") with a ResNet-50-FPN backbone."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

from ...ops import boxes as box_ops
from ...ops import generalized_box_iou_loss, sigmoid_focal_loss
from ...ops.misc import FrozenBatchNorm2d
from .._api import WeightsEnum, register_model
from .._utils import handle_legacy_interface
from ..resnet import ResNet50_Weights, resnet50
from . import _utils as det_utils
from ._checks import check_degenerate_boxes, check_training_targets, original_sizes
from .anchor_utils import AnchorGenerator
from .backbone_utils import _resnet_fpn_extractor, _validate_trainable_layers
from .retinanet import _detection_classes, _flatten_levels, _split_levels
from .transform import GeneralizedRCNNTransform

__all__ = ["FCOS", "FCOS_ResNet50_FPN_Weights", "fcos_resnet50_fpn"]


def _fcos_tower(in_channels: int, num_convs: int, norm_layer: Callable[..., nn.Module]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for _ in range(num_convs):
        layers += [nn.Conv2d(in_channels, in_channels, kernel_size=3, stride=1, padding=1), norm_layer(in_channels),
                   nn.ReLU()]
    conv = nn.Sequential(*layers)
    for layer in conv.children():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.constant_(layer.bias, 0)
    return conv


class FCOSHead(nn.Module):
    """Classification, box regression (distances to the sides) and centerness, shared over the levels."""

    def __init__(self, in_channels: int, num_anchors: int, num_classes: int, num_convs: int | None = 4) -> None:
        super().__init__()
        self.box_coder = det_utils.BoxLinearCoder(normalize_by_size=True)
        self.classification_head = FCOSClassificationHead(in_channels, num_anchors, num_classes, num_convs=num_convs)
        self.regression_head = FCOSRegressionHead(in_channels, num_anchors, num_convs=num_convs)

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs) -> dict[str, ember.Tensor]:
        """Focal loss on all locations; GIoU and centerness (binary cross entropy against
        sqrt(min(l, r) / max(l, r) * min(t, b) / max(t, b))) on the foreground; each divided by the
        number of foreground locations in the batch."""
        cls_logits = head_outputs["cls_logits"]  # [N, HWA, C]
        bbox_regression = head_outputs["bbox_regression"]  # [N, HWA, 4]
        bbox_ctrness = head_outputs["bbox_ctrness"]  # [N, HWA, 1]
        all_classes, all_boxes = [], []
        for target, matched in zip(targets, matched_idxs, strict=True):
            if len(target["labels"]) == 0:
                classes = ember.zeros((len(matched),), dtype=target["labels"].dtype)
                boxes = ember.zeros((len(matched), 4), dtype=target["boxes"].dtype)
            else:
                classes = target["labels"][matched.clamp(min=0)]
                boxes = target["boxes"][matched.clamp(min=0)]
            classes = classes.clone()
            classes[matched < 0] = -1  # background
            all_classes.append(classes)
            all_boxes.append(boxes)
        all_boxes = ember.stack(all_boxes)
        all_classes = ember.stack(all_classes)
        anchors = ember.stack(anchors)

        foreground = all_classes >= 0
        num_foreground = int(foreground.sum())
        gt_classes = ember.zeros_like(cls_logits)
        img_idx, loc_idx = ember.where(foreground)
        gt_classes[img_idx, loc_idx, all_classes[img_idx, loc_idx]] = 1.0
        loss_cls = sigmoid_focal_loss(cls_logits, gt_classes, reduction="sum")

        pred_boxes = self.box_coder.decode(bbox_regression, anchors)
        loss_bbox_reg = generalized_box_iou_loss(pred_boxes[foreground], all_boxes[foreground], reduction="sum")

        bbox_reg_targets = self.box_coder.encode(anchors, all_boxes)
        if len(bbox_reg_targets) == 0:
            gt_ctrness = ember.zeros(tuple(bbox_reg_targets.shape[:-1]), dtype=bbox_reg_targets.dtype)
        else:
            left_right = bbox_reg_targets[:, :, [0, 2]]
            top_bottom = bbox_reg_targets[:, :, [1, 3]]
            gt_ctrness = ember.sqrt((left_right.min(dim=-1)[0] / left_right.max(dim=-1)[0])
                                    * (top_bottom.min(dim=-1)[0] / top_bottom.max(dim=-1)[0]))
        pred_ctrness = bbox_ctrness.squeeze(2)
        loss_ctrness = F.binary_cross_entropy_with_logits(pred_ctrness[foreground], gt_ctrness[foreground],
                                                          reduction="sum")
        n = max(1, num_foreground)
        return {"classification": loss_cls / n, "bbox_regression": loss_bbox_reg / n, "bbox_ctrness": loss_ctrness / n}

    def forward(self, x: list[ember.Tensor]) -> dict[str, ember.Tensor]:
        cls_logits = self.classification_head(x)
        bbox_regression, bbox_ctrness = self.regression_head(x)
        return {"cls_logits": cls_logits, "bbox_regression": bbox_regression, "bbox_ctrness": bbox_ctrness}


class FCOSClassificationHead(nn.Module):
    """num_convs 3x3 conv-GroupNorm(32)-ReLU layers, then num_anchors * num_classes logits, with the
    bias at the foreground prior."""

    def __init__(self, in_channels: int, num_anchors: int, num_classes: int, prior_probability: float = 0.01,
                 num_convs: int = 4, norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.num_anchors = num_anchors
        if norm_layer is None:
            norm_layer = partial(nn.GroupNorm, 32)
        self.conv = _fcos_tower(in_channels, num_convs, norm_layer)
        self.cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, kernel_size=3, stride=1, padding=1)
        nn.init.normal_(self.cls_logits.weight, std=0.01)
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability))

    def forward(self, x: list[ember.Tensor]) -> ember.Tensor:
        return ember.cat([_flatten_levels(self.cls_logits(self.conv(f)), self.num_classes) for f in x], dim=1)


class FCOSRegressionHead(nn.Module):
    """num_convs 3x3 conv-GroupNorm(32)-ReLU layers, then per anchor 4 non-negative (ReLU) side distances
    and a centerness logit."""

    def __init__(self, in_channels: int, num_anchors: int, num_convs: int = 4,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        if norm_layer is None:
            norm_layer = partial(nn.GroupNorm, 32)
        self.conv = _fcos_tower(in_channels, num_convs, norm_layer)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=3, stride=1, padding=1)
        self.bbox_ctrness = nn.Conv2d(in_channels, num_anchors * 1, kernel_size=3, stride=1, padding=1)
        for layer in (self.bbox_reg, self.bbox_ctrness):
            nn.init.normal_(layer.weight, std=0.01)
            nn.init.zeros_(layer.bias)

    def forward(self, x: list[ember.Tensor]) -> tuple[ember.Tensor, ember.Tensor]:
        regressions, ctrness = [], []
        for features in x:
            feature = self.conv(features)
            regressions.append(_flatten_levels(F.relu(self.bbox_reg(feature)), 4))
            ctrness.append(_flatten_levels(self.bbox_ctrness(feature), 1))
        return ember.cat(regressions, dim=1), ember.cat(ctrness, dim=1)


class FCOS(nn.Module):
    """The FCOS detector: one anchor (a point with the level's stride as size) per location.

    Training returns {"classification", "bbox_regression", "bbox_ctrness"} losses; eval returns per
    image {"boxes", "scores", "labels"}, scored sqrt(class probability * centerness). A location
    matches a ground truth when it lies inside the box, within center_sampling_radius strides of its
    centre, and the box's largest side distance fits the level's range; ties go to the smallest box.
    """

    def __init__(self, backbone: nn.Module, num_classes: int, min_size: int = 800, max_size: int = 1333,
                 image_mean: list[float] | None = None, image_std: list[float] | None = None,
                 anchor_generator: AnchorGenerator | None = None, head: nn.Module | None = None,
                 center_sampling_radius: float = 1.5, score_thresh: float = 0.2, nms_thresh: float = 0.6,
                 detections_per_img: int = 100, topk_candidates: int = 1000, **kwargs: Any) -> None:
        super().__init__()
        if not hasattr(backbone, "out_channels"):
            raise ValueError("backbone should contain an attribute out_channels specifying the number of output "
                             "channels (assumed to be the same for all the levels)")
        self.backbone = backbone
        if not isinstance(anchor_generator, (AnchorGenerator, type(None))):
            raise TypeError(f"anchor_generator should be of type AnchorGenerator or None, instead  got "
                            f"{type(anchor_generator)}")
        if anchor_generator is None:
            anchor_sizes = ((8,), (16,), (32,), (64,), (128,))  # the levels' strides
            aspect_ratios = ((1.0,),) * len(anchor_sizes)  # one anchor per location
            anchor_generator = AnchorGenerator(anchor_sizes, aspect_ratios)
        self.anchor_generator = anchor_generator
        if self.anchor_generator.num_anchors_per_location()[0] != 1:
            raise ValueError(f"anchor_generator.num_anchors_per_location()[0] should be 1 instead of "
                             f"{anchor_generator.num_anchors_per_location()[0]}")
        if head is None:
            head = FCOSHead(backbone.out_channels, anchor_generator.num_anchors_per_location()[0], num_classes)
        self.head = head
        self.box_coder = det_utils.BoxLinearCoder(normalize_by_size=True)
        if image_mean is None:
            image_mean = [0.485, 0.456, 0.406]
        if image_std is None:
            image_std = [0.229, 0.224, 0.225]
        self.transform = GeneralizedRCNNTransform(min_size, max_size, image_mean, image_std, **kwargs)
        self.center_sampling_radius = center_sampling_radius
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def match_locations(self, anchors: ember.Tensor, gt_boxes: ember.Tensor,
                        num_anchors_per_level: list[int]) -> ember.Tensor:
        """Each location's ground truth index, or -1 (see the class docstring)."""
        gt_centers = (gt_boxes[:, :2] + gt_boxes[:, 2:]) / 2
        anchor_centers = (anchors[:, :2] + anchors[:, 2:]) / 2
        anchor_sizes = anchors[:, 2] - anchors[:, 0]
        match = ((anchor_centers[:, None, :] - gt_centers[None, :, :]).abs().max(dim=2)[0]
                 < self.center_sampling_radius * anchor_sizes[:, None])
        x, y = anchor_centers[:, 0:1], anchor_centers[:, 1:2]  # [N, 1]
        x0, y0, x1, y1 = (gt_boxes[None, :, i] for i in range(4))  # [1, M]
        dist = ember.stack([x - x0, y - y0, x1 - x, y1 - y], dim=2)  # [N, M, 4]
        match = match & (dist.min(dim=2)[0] > 0)
        # Level i takes boxes whose largest side distance is in (4 * stride, 8 * stride]; the first level
        # has no lower bound and the last no upper one.
        lower = anchor_sizes * 4
        lower[:num_anchors_per_level[0]] = 0
        upper = anchor_sizes * 8
        upper[-num_anchors_per_level[-1]:] = float("inf")
        largest = dist.max(dim=2)[0]
        match = match & (largest > lower[:, None]) & (largest < upper[:, None])
        # Among several matches, the smallest box wins.
        areas = (gt_boxes[:, 2] - gt_boxes[:, 0]) * (gt_boxes[:, 3] - gt_boxes[:, 1])
        weighted = match.to(ember.float32) * (1e8 - areas[None, :])
        min_values, matched_idx = weighted.max(dim=1)
        matched_idx[min_values < 1e-5] = -1
        return matched_idx

    def compute_loss(self, targets, head_outputs, anchors, num_anchors_per_level) -> dict[str, ember.Tensor]:
        matched_idxs = []
        for anchors_per_image, target in zip(anchors, targets, strict=True):
            if target["boxes"].numel() == 0:
                matched_idxs.append(ember.full((anchors_per_image.shape[0],), -1, dtype=ember.int64))
                continue
            matched_idxs.append(self.match_locations(anchors_per_image, target["boxes"], num_anchors_per_level))
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def postprocess_detections(self, head_outputs, anchors, image_shapes) -> list[dict[str, ember.Tensor]]:
        detections = []
        for index, image_shape in enumerate(image_shapes):
            image_boxes, image_scores, image_labels = [], [], []
            for regression, logits, ctrness, level_anchors in zip(
                    (r[index] for r in head_outputs["bbox_regression"]), (c[index] for c in head_outputs["cls_logits"]),
                    (c[index] for c in head_outputs["bbox_ctrness"]), anchors[index], strict=True):
                num_classes = logits.shape[-1]
                scores = ember.sqrt(ember.sigmoid(logits) * ember.sigmoid(ctrness)).flatten()
                keep = scores > self.score_thresh
                scores = scores[keep]
                topk_idxs = ember.where(keep)[0]
                scores, idxs = scores.topk(det_utils._topk_min(topk_idxs, self.topk_candidates, 0))
                topk_idxs = topk_idxs[idxs]
                anchor_idxs = ember.div(topk_idxs, num_classes, rounding_mode="floor")
                labels = topk_idxs % num_classes
                boxes = self.box_coder.decode(regression[anchor_idxs], level_anchors[anchor_idxs])
                image_boxes.append(box_ops.clip_boxes_to_image(boxes, image_shape))
                image_scores.append(scores)
                image_labels.append(labels)
            image_boxes = ember.cat(image_boxes, dim=0)
            image_scores = ember.cat(image_scores, dim=0)
            image_labels = ember.cat(image_labels, dim=0)
            keep = box_ops.batched_nms(image_boxes, image_scores, image_labels, self.nms_thresh)
            keep = keep[:self.detections_per_img]
            detections.append({"boxes": image_boxes[keep], "scores": image_scores[keep], "labels": image_labels[keep]})
        return detections

    def forward(self, images: list[ember.Tensor], targets: list[dict[str, ember.Tensor]] | None = None):
        check_training_targets(self.training, targets)
        original_image_sizes = original_sizes(images)
        images, targets = self.transform(images, targets)
        check_degenerate_boxes(targets)
        features = self.backbone(images.tensors)
        if isinstance(features, ember.Tensor):
            features = OrderedDict([("0", features)])
        features = list(features.values())
        head_outputs = self.head(features)
        anchors = self.anchor_generator(images, features)
        num_anchors_per_level = [f.shape[2] * f.shape[3] for f in features]
        if self.training:
            return self.compute_loss(targets, head_outputs, anchors, num_anchors_per_level)
        split_outputs, split_anchors = _split_levels(head_outputs, anchors, features)
        detections = self.postprocess_detections(split_outputs, split_anchors, images.image_sizes)
        return self.transform.postprocess(detections, images.image_sizes, original_image_sizes)


class FCOS_ResNet50_FPN_Weights(WeightsEnum):
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/fcos_resnet50_fpn_coco-99b0c9b7.pth", 32269600,
        "https://github.com/pytorch/vision/tree/main/references/detection#fcos-resnet-50-fpn", {"box_map": 39.2},
        """These weights were produced by following a similar training recipe as on the paper.""",
        _ops=128.207, _file_size=123.608)
    DEFAULT = COCO_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", FCOS_ResNet50_FPN_Weights.COCO_V1),
                         weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1))
def fcos_resnet50_fpn(*, weights: FCOS_ResNet50_FPN_Weights | None = None, progress: bool = True,
                      num_classes: int | None = None,
                      weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
                      trainable_backbone_layers: int | None = None, **kwargs: Any) -> FCOS:
    """FCOS with a ResNet-50-FPN backbone (P3-P7); arguments as retinanet_resnet50_fpn."""
    weights = FCOS_ResNet50_FPN_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes = _detection_classes(weights, num_classes)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    norm_layer = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    backbone = resnet50(weights=weights_backbone, progress=progress, norm_layer=norm_layer)
    from ...ops.feature_pyramid_network import LastLevelP6P7
    backbone = _resnet_fpn_extractor(backbone, trainable_backbone_layers, returned_layers=[2, 3, 4],
                                     extra_blocks=LastLevelP6P7(256, 256))
    model = FCOS(backbone, num_classes, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model
