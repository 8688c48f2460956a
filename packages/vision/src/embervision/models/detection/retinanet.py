"""RetinaNet (Lin et al., "Focal Loss for Dense Object Detection") with a ResNet-50-FPN backbone."""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any

import ember
from ember import nn

from ...ops import boxes as box_ops
from ...ops import sigmoid_focal_loss
from ...ops.misc import Conv2dNormActivation, FrozenBatchNorm2d
from .._api import WeightsEnum, register_model
from .._utils import _ovewrite_value_param, handle_legacy_interface
from ..resnet import ResNet50_Weights, resnet50
from . import _utils as det_utils
from ._checks import check_degenerate_boxes, check_training_targets, original_sizes
from .anchor_utils import AnchorGenerator
from .backbone_utils import _resnet_fpn_extractor, _validate_trainable_layers
from .transform import GeneralizedRCNNTransform

__all__ = ["RetinaNet", "RetinaNet_ResNet50_FPN_Weights", "RetinaNet_ResNet50_FPN_V2_Weights",
           "retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2"]


def _flatten_levels(outputs: ember.Tensor, columns: int) -> ember.Tensor:
    """[N, A * columns, H, W] → [N, H * W * A, columns] (location-major, as the anchors are laid out)."""
    n, _, h, w = outputs.shape
    return outputs.reshape(n, -1, columns, h, w).permute(0, 3, 4, 1, 2).reshape(n, -1, columns)


def _v1_to_v2_weights(state_dict: dict[str, Any], prefix: str) -> None:
    # Checkpoints from before the heads used Conv2dNormActivation name their convs conv.0, conv.2, ...
    # (Conv2d, ReLU pairs); the current heads call them conv.0.0, conv.1.0, ...
    for i in range(4):
        for kind in ("weight", "bias"):
            old_key, new_key = f"{prefix}conv.{2 * i}.{kind}", f"{prefix}conv.{i}.0.{kind}"
            if old_key in state_dict:
                state_dict[new_key] = state_dict.pop(old_key)


def _default_anchorgen() -> AnchorGenerator:
    # Three scales an octave-third apart at each of P3..P7, three aspect ratios.
    anchor_sizes = tuple((x, int(x * 2 ** (1.0 / 3)), int(x * 2 ** (2.0 / 3))) for x in [32, 64, 128, 256, 512])
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    return AnchorGenerator(anchor_sizes, aspect_ratios)


class RetinaNetHead(nn.Module):
    """The classification and box regression subnets, shared over the pyramid levels."""

    def __init__(self, in_channels: int, num_anchors: int, num_classes: int,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.classification_head = RetinaNetClassificationHead(in_channels, num_anchors, num_classes,
                                                               norm_layer=norm_layer)
        self.regression_head = RetinaNetRegressionHead(in_channels, num_anchors, norm_layer=norm_layer)

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs) -> dict[str, ember.Tensor]:
        return {"classification": self.classification_head.compute_loss(targets, head_outputs, matched_idxs),
                "bbox_regression": self.regression_head.compute_loss(targets, head_outputs, anchors, matched_idxs)}

    def forward(self, x: list[ember.Tensor]) -> dict[str, ember.Tensor]:
        return {"cls_logits": self.classification_head(x), "bbox_regression": self.regression_head(x)}


def _conv_tower(in_channels: int, norm_layer: Callable[..., nn.Module] | None) -> nn.Sequential:
    conv = nn.Sequential(*[Conv2dNormActivation(in_channels, in_channels, norm_layer=norm_layer) for _ in range(4)])
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.normal_(layer.weight, std=0.01)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0)
    return conv


class RetinaNetClassificationHead(nn.Module):
    """Four 3x3 conv(-norm)-ReLU layers, then num_anchors * num_classes logits per location; the
    logits' bias starts at the prior probability of a foreground (focal loss's initialization)."""

    _version = 2

    def __init__(self, in_channels: int, num_anchors: int, num_classes: int, prior_probability: float = 0.01,
                 norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.conv = _conv_tower(in_channels, norm_layer)
        self.cls_logits = nn.Conv2d(in_channels, num_anchors * num_classes, kernel_size=3, stride=1, padding=1)
        nn.init.normal_(self.cls_logits.weight, std=0.01)
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - prior_probability) / prior_probability))
        self.num_classes = num_classes
        self.num_anchors = num_anchors
        self.BETWEEN_THRESHOLDS = det_utils.Matcher.BETWEEN_THRESHOLDS

    def compute_loss(self, targets, head_outputs, matched_idxs) -> ember.Tensor:
        """Sigmoid focal loss over the anchors not between the thresholds, per image divided by its
        number of foreground anchors, averaged over the images."""
        losses = []
        for target, logits, matched in zip(targets, head_outputs["cls_logits"], matched_idxs, strict=True):
            foreground = matched >= 0
            num_foreground = int(foreground.sum())
            gt_classes = ember.zeros_like(logits)
            fg_rows = ember.where(foreground)[0]
            gt_classes[fg_rows, target["labels"][matched[fg_rows]]] = 1.0
            valid = matched != self.BETWEEN_THRESHOLDS
            loss = sigmoid_focal_loss(logits[valid], gt_classes[valid], reduction="sum")
            losses.append(loss / max(1, num_foreground))
        return sum(losses) / len(targets)

    def forward(self, x: list[ember.Tensor]) -> ember.Tensor:
        return ember.cat([_flatten_levels(self.cls_logits(self.conv(f)), self.num_classes) for f in x], dim=1)


class RetinaNetRegressionHead(nn.Module):
    """Four 3x3 conv(-norm)-ReLU layers, then num_anchors * 4 box codes per location."""

    _version = 2

    def __init__(self, in_channels: int, num_anchors: int, norm_layer: Callable[..., nn.Module] | None = None) -> None:
        super().__init__()
        self.conv = _conv_tower(in_channels, norm_layer)
        self.bbox_reg = nn.Conv2d(in_channels, num_anchors * 4, kernel_size=3, stride=1, padding=1)
        nn.init.normal_(self.bbox_reg.weight, std=0.01)
        nn.init.zeros_(self.bbox_reg.bias)
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        self._loss_type = "l1"

    def compute_loss(self, targets, head_outputs, anchors, matched_idxs) -> ember.Tensor:
        """The box loss (`_loss_type`: "l1" for v1, "giou" for v2) over the foreground anchors, per image
        divided by their number, averaged over the images."""
        losses = []
        for target, regression, anchors_per_image, matched in zip(targets, head_outputs["bbox_regression"], anchors,
                                                                 matched_idxs, strict=True):
            foreground = ember.where(matched >= 0)[0]
            matched_gt = target["boxes"][matched[foreground]]
            loss = det_utils._box_loss(self._loss_type, self.box_coder, anchors_per_image[foreground], matched_gt,
                                       regression[foreground])
            losses.append(loss / max(1, foreground.numel()))
        return sum(losses) / max(1, len(targets))

    def forward(self, x: list[ember.Tensor]) -> ember.Tensor:
        return ember.cat([_flatten_levels(self.bbox_reg(self.conv(f)), 4) for f in x], dim=1)


def _split_levels(head_outputs, anchors, features):
    """The head outputs and anchors cut back into pyramid levels (A anchors per location)."""
    num_anchors_per_level = [f.shape[2] * f.shape[3] for f in features]
    hw = sum(num_anchors_per_level)
    a = head_outputs["cls_logits"].shape[1] // hw
    num_anchors_per_level = [n * a for n in num_anchors_per_level]
    split_outputs = {k: list(v.split(num_anchors_per_level, dim=1)) for k, v in head_outputs.items()}
    split_anchors = [list(x.split(num_anchors_per_level)) for x in anchors]
    return split_outputs, split_anchors


class RetinaNet(nn.Module):
    """The RetinaNet detector. backbone returns the pyramid's feature maps (an OrderedDict, all
    backbone.out_channels wide); anchors come from anchor_generator (default: 9 per location).

    Training (targets per image {"boxes": [N, 4] xyxy, "labels": [N] int64}) returns
    {"classification", "bbox_regression"} losses; eval returns per image {"boxes", "scores",
    "labels"} in the input image's coordinates. min_size/max_size/image_mean/image_std go to
    GeneralizedRCNNTransform; score_thresh, topk_candidates (per level), nms_thresh and
    detections_per_img shape the detections; fg_iou_thresh/bg_iou_thresh the anchor matching.
    """

    def __init__(self, backbone: nn.Module, num_classes: int, min_size: int = 800, max_size: int = 1333,
                 image_mean: list[float] | None = None, image_std: list[float] | None = None,
                 anchor_generator: AnchorGenerator | None = None, head: nn.Module | None = None,
                 proposal_matcher: det_utils.Matcher | None = None, score_thresh: float = 0.05,
                 nms_thresh: float = 0.5, detections_per_img: int = 300, fg_iou_thresh: float = 0.5,
                 bg_iou_thresh: float = 0.4, topk_candidates: int = 1000, **kwargs: Any) -> None:
        super().__init__()
        if not hasattr(backbone, "out_channels"):
            raise ValueError("backbone should contain an attribute out_channels specifying the number of output "
                             "channels (assumed to be the same for all the levels)")
        self.backbone = backbone
        if not isinstance(anchor_generator, (AnchorGenerator, type(None))):
            raise TypeError(f"anchor_generator should be of type AnchorGenerator or None instead of "
                            f"{type(anchor_generator)}")
        if anchor_generator is None:
            anchor_generator = _default_anchorgen()
        self.anchor_generator = anchor_generator
        if head is None:
            head = RetinaNetHead(backbone.out_channels, anchor_generator.num_anchors_per_location()[0], num_classes)
        self.head = head
        if proposal_matcher is None:
            proposal_matcher = det_utils.Matcher(fg_iou_thresh, bg_iou_thresh, allow_low_quality_matches=True)
        self.proposal_matcher = proposal_matcher
        self.box_coder = det_utils.BoxCoder(weights=(1.0, 1.0, 1.0, 1.0))
        if image_mean is None:
            image_mean = [0.485, 0.456, 0.406]
        if image_std is None:
            image_std = [0.229, 0.224, 0.225]
        self.transform = GeneralizedRCNNTransform(min_size, max_size, image_mean, image_std, **kwargs)
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates

    def compute_loss(self, targets, head_outputs, anchors) -> dict[str, ember.Tensor]:
        matched_idxs = []
        for anchors_per_image, target in zip(anchors, targets, strict=True):
            if target["boxes"].numel() == 0:
                matched_idxs.append(ember.full((anchors_per_image.shape[0],), -1, dtype=ember.int64))
                continue
            matched_idxs.append(self.proposal_matcher(box_ops.box_iou(target["boxes"], anchors_per_image)))
        return self.head.compute_loss(targets, head_outputs, anchors, matched_idxs)

    def postprocess_detections(self, head_outputs, anchors, image_shapes) -> list[dict[str, ember.Tensor]]:
        """Per level: sigmoid scores above score_thresh, the topk_candidates best (anchor, class) pairs,
        decoded and clipped; then class-wise NMS over the levels and the detections_per_img best."""
        detections = []
        for index, image_shape in enumerate(image_shapes):
            image_boxes, image_scores, image_labels = [], [], []
            for regression, logits, level_anchors in zip((r[index] for r in head_outputs["bbox_regression"]),
                                                         (c[index] for c in head_outputs["cls_logits"]),
                                                         anchors[index], strict=True):
                num_classes = logits.shape[-1]
                scores = ember.sigmoid(logits).flatten()
                keep = scores > self.score_thresh
                scores = scores[keep]
                topk_idxs = ember.where(keep)[0]
                scores, idxs = scores.topk(det_utils._topk_min(topk_idxs, self.topk_candidates, 0))
                topk_idxs = topk_idxs[idxs]
                anchor_idxs = ember.div(topk_idxs, num_classes, rounding_mode="floor")
                labels = topk_idxs % num_classes
                boxes = self.box_coder.decode_single(regression[anchor_idxs], level_anchors[anchor_idxs])
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
        if self.training:
            return self.compute_loss(targets, head_outputs, anchors)
        split_outputs, split_anchors = _split_levels(head_outputs, anchors, features)
        detections = self.postprocess_detections(split_outputs, split_anchors, images.image_sizes)
        return self.transform.postprocess(detections, images.image_sizes, original_image_sizes)


_DOCS_PAPER = """These weights were produced by following a similar training recipe as on the paper."""


class RetinaNet_ResNet50_FPN_Weights(WeightsEnum):
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/retinanet_resnet50_fpn_coco-eeacb38b.pth", 34014999,
        "https://github.com/pytorch/vision/tree/main/references/detection#retinanet", {"box_map": 36.4}, _DOCS_PAPER,
        _ops=151.54, _file_size=130.267)
    DEFAULT = COCO_V1


class RetinaNet_ResNet50_FPN_V2_Weights(WeightsEnum):
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/retinanet_resnet50_fpn_v2_coco-5905b1c5.pth", 38198935,
        "https://github.com/pytorch/vision/pull/5756", {"box_map": 41.5},
        """These weights were produced using an enhanced training recipe to boost the model accuracy.""",
        _ops=152.238, _file_size=146.037)
    DEFAULT = COCO_V1


def _load_retinanet(model: RetinaNet, weights: WeightsEnum, progress: bool) -> None:
    state_dict = dict(weights.get_state_dict(progress=progress, check_hash=True))
    for prefix in ("head.classification_head.", "head.regression_head."):
        _v1_to_v2_weights(state_dict, prefix)
    model.load_state_dict(state_dict)


def _detection_classes(weights: WeightsEnum | None, num_classes: int | None) -> int:
    if weights is not None:
        return _ovewrite_value_param("num_classes", num_classes, len(weights.meta["categories"]))
    return 91 if num_classes is None else num_classes


@register_model()
@handle_legacy_interface(weights=("pretrained", RetinaNet_ResNet50_FPN_Weights.COCO_V1),
                         weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1))
def retinanet_resnet50_fpn(*, weights: RetinaNet_ResNet50_FPN_Weights | None = None, progress: bool = True,
                           num_classes: int | None = None,
                           weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
                           trainable_backbone_layers: int | None = None, **kwargs: Any) -> RetinaNet:
    """RetinaNet with a ResNet-50-FPN backbone (P3-P7, P6/P7 from P5).

    weights: RetinaNet_ResNet50_FPN_Weights (fix num_classes=91). num_classes: including the background
    (default 91). weights_backbone: ImageNet ResNet-50 weights (then FrozenBatchNorm2d).
    trainable_backbone_layers: ResNet stages left trainable, 0..5 (default 3). kwargs go to RetinaNet.
    """
    weights = RetinaNet_ResNet50_FPN_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes = _detection_classes(weights, num_classes)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    norm_layer = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    backbone = resnet50(weights=weights_backbone, progress=progress, norm_layer=norm_layer)
    from ...ops.feature_pyramid_network import LastLevelP6P7
    # P2 is skipped: it would give too many anchors (as in the paper).
    backbone = _resnet_fpn_extractor(backbone, trainable_backbone_layers, returned_layers=[2, 3, 4],
                                     extra_blocks=LastLevelP6P7(256, 256))
    model = RetinaNet(backbone, num_classes, **kwargs)
    if weights is not None:
        _load_retinanet(model, weights, progress)
    return model


@register_model()
@handle_legacy_interface(weights=("pretrained", RetinaNet_ResNet50_FPN_V2_Weights.COCO_V1),
                         weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1))
def retinanet_resnet50_fpn_v2(*, weights: RetinaNet_ResNet50_FPN_V2_Weights | None = None, progress: bool = True,
                              num_classes: int | None = None,
                              weights_backbone: ResNet50_Weights | None = None,
                              trainable_backbone_layers: int | None = None, **kwargs: Any) -> RetinaNet:
    """RetinaNet v2 (Benchmarking Detection Transfer Learning with Vision Transformers): P6 from C5,
    GroupNorm in the heads, GIoU box loss, BatchNorm2d backbone; arguments as retinanet_resnet50_fpn."""
    weights = RetinaNet_ResNet50_FPN_V2_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes = _detection_classes(weights, num_classes)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    backbone = resnet50(weights=weights_backbone, progress=progress)
    from ...ops.feature_pyramid_network import LastLevelP6P7
    backbone = _resnet_fpn_extractor(backbone, trainable_backbone_layers, returned_layers=[2, 3, 4],
                                     extra_blocks=LastLevelP6P7(2048, 256))
    anchor_generator = _default_anchorgen()
    head = RetinaNetHead(backbone.out_channels, anchor_generator.num_anchors_per_location()[0], num_classes,
                         norm_layer=partial(nn.GroupNorm, 32))
    head.regression_head._loss_type = "giou"
    model = RetinaNet(backbone, num_classes, anchor_generator=anchor_generator, head=head, **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model
