"""SSD (Liu et al., "SSD: Single Shot MultiBox Detector") with torchvision's VGG-16 backbone."""

from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

from ...ops import boxes as box_ops
from .._api import WeightsEnum, register_model
from .._utils import _ovewrite_value_param, handle_legacy_interface
from ..vgg import VGG, VGG16_Weights, vgg16
from . import _utils as det_utils
from ._checks import check_degenerate_boxes, check_training_targets, original_sizes
from .anchor_utils import DefaultBoxGenerator
from .backbone_utils import _validate_trainable_layers
from .transform import GeneralizedRCNNTransform

__all__ = ["SSD300_VGG16_Weights", "ssd300_vgg16"]


def _xavier_init(conv: nn.Module) -> None:
    for layer in conv.modules():
        if isinstance(layer, nn.Conv2d):
            nn.init.xavier_uniform_(layer.weight)
            if layer.bias is not None:
                nn.init.constant_(layer.bias, 0.0)


class SSDScoringHead(nn.Module):
    """One conv per feature map, each predicting num_columns values per anchor; the maps' outputs are
    flattened anchor-major ([N, H*W*A, num_columns]) and concatenated in map order."""

    def __init__(self, module_list: nn.ModuleList, num_columns: int) -> None:
        super().__init__()
        self.module_list = module_list
        self.num_columns = num_columns

    def forward(self, x: list[ember.Tensor]) -> ember.Tensor:
        all_results = []
        for features, module in zip(x, self.module_list, strict=True):
            results = module(features)
            n, _, h, w = results.shape
            results = results.reshape(n, -1, self.num_columns, h, w).permute(0, 3, 4, 1, 2)
            all_results.append(results.reshape(n, -1, self.num_columns))
        return ember.cat(all_results, dim=1)


class SSDClassificationHead(SSDScoringHead):
    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int) -> None:
        cls_logits = nn.ModuleList([nn.Conv2d(c, num_classes * a, kernel_size=3, padding=1)
                                    for c, a in zip(in_channels, num_anchors, strict=True)])
        _xavier_init(cls_logits)
        super().__init__(cls_logits, num_classes)


class SSDRegressionHead(SSDScoringHead):
    def __init__(self, in_channels: list[int], num_anchors: list[int]) -> None:
        bbox_reg = nn.ModuleList([nn.Conv2d(c, 4 * a, kernel_size=3, padding=1)
                                  for c, a in zip(in_channels, num_anchors, strict=True)])
        _xavier_init(bbox_reg)
        super().__init__(bbox_reg, 4)


class SSDHead(nn.Module):
    """Class logits and box regression for every default box of every feature map."""

    def __init__(self, in_channels: list[int], num_anchors: list[int], num_classes: int) -> None:
        super().__init__()
        self.classification_head = SSDClassificationHead(in_channels, num_anchors, num_classes)
        self.regression_head = SSDRegressionHead(in_channels, num_anchors)

    def forward(self, x: list[ember.Tensor]) -> dict[str, ember.Tensor]:
        return {"bbox_regression": self.regression_head(x), "cls_logits": self.classification_head(x)}


class SSD(nn.Module):
    """The SSD detector: backbone feature maps → SSDHead, default boxes from anchor_generator.

    Training (model.train(), targets given: per image {"boxes": [N, 4] xyxy, "labels": [N] int64})
    returns {"bbox_regression", "classification"} losses: smooth L1 on the matched boxes and cross
    entropy with hard negative mining (neg_to_pos_ratio negatives per positive). Eval returns per image
    {"boxes", "scores", "labels"} in the input image's coordinates. Images are resized to `size`
    (width, height) and normalized by image_mean/image_std.
    """

    def __init__(self, backbone: nn.Module, anchor_generator: DefaultBoxGenerator, size: tuple[int, int],
                 num_classes: int, image_mean: list[float] | None = None, image_std: list[float] | None = None,
                 head: nn.Module | None = None, score_thresh: float = 0.01, nms_thresh: float = 0.45,
                 detections_per_img: int = 200, iou_thresh: float = 0.5, topk_candidates: int = 400,
                 positive_fraction: float = 0.25, **kwargs: Any) -> None:
        super().__init__()
        self.backbone = backbone
        self.anchor_generator = anchor_generator
        self.box_coder = det_utils.BoxCoder(weights=(10.0, 10.0, 5.0, 5.0))
        if head is None:
            if hasattr(backbone, "out_channels"):
                out_channels = backbone.out_channels
            else:
                out_channels = det_utils.retrieve_out_channels(backbone, size)
            if len(out_channels) != len(anchor_generator.aspect_ratios):
                raise ValueError(f"The length of the output channels from the backbone ({len(out_channels)}) do not "
                                 f"match the length of the anchor generator aspect ratios "
                                 f"({len(anchor_generator.aspect_ratios)})")
            head = SSDHead(out_channels, anchor_generator.num_anchors_per_location(), num_classes)
        self.head = head
        self.proposal_matcher = det_utils.SSDMatcher(iou_thresh)
        if image_mean is None:
            image_mean = [0.485, 0.456, 0.406]
        if image_std is None:
            image_std = [0.229, 0.224, 0.225]
        self.transform = GeneralizedRCNNTransform(min(size), max(size), image_mean, image_std, size_divisible=1,
                                                  fixed_size=size, **kwargs)
        self.score_thresh = score_thresh
        self.nms_thresh = nms_thresh
        self.detections_per_img = detections_per_img
        self.topk_candidates = topk_candidates
        self.neg_to_pos_ratio = (1.0 - positive_fraction) / positive_fraction

    def compute_loss(self, targets: list[dict[str, ember.Tensor]], head_outputs: dict[str, ember.Tensor],
                     anchors: list[ember.Tensor], matched_idxs: list[ember.Tensor]) -> dict[str, ember.Tensor]:
        bbox_regression = head_outputs["bbox_regression"]
        cls_logits = head_outputs["cls_logits"]
        num_foreground = 0
        bbox_loss, cls_targets = [], []
        for target, regression, logits, anchors_per_image, matched in zip(targets, bbox_regression, cls_logits,
                                                                         anchors, matched_idxs, strict=True):
            foreground = ember.where(matched >= 0)[0]
            foreground_matched = matched[foreground]
            num_foreground += foreground_matched.numel()
            matched_gt_boxes = target["boxes"][foreground_matched]
            target_regression = self.box_coder.encode_single(matched_gt_boxes, anchors_per_image[foreground])
            bbox_loss.append(F.smooth_l1_loss(regression[foreground], target_regression, reduction="sum"))
            gt_classes = ember.zeros((logits.shape[0],), dtype=target["labels"].dtype)
            gt_classes[foreground] = target["labels"][foreground_matched]
            cls_targets.append(gt_classes)
        bbox_loss = ember.stack(bbox_loss)
        cls_targets = ember.stack(cls_targets)

        num_classes = cls_logits.shape[-1]
        cls_loss = F.cross_entropy(cls_logits.reshape(-1, num_classes), cls_targets.reshape(-1),
                                   reduction="none").reshape(cls_targets.shape)
        # Hard negative mining: per image, the neg_to_pos_ratio * positives background boxes with the
        # highest loss count as negatives (ranking the losses with the positives pushed last).
        foreground_idxs = cls_targets > 0
        num_negative = self.neg_to_pos_ratio * foreground_idxs.sum(1, keepdim=True)
        negative_loss = cls_loss.detach().clone()
        negative_loss[foreground_idxs] = -float("inf")
        _, idx = negative_loss.sort(1, descending=True)
        background_idxs = idx.sort(1)[1] < num_negative
        n = max(1, num_foreground)
        return {"bbox_regression": bbox_loss.sum() / n,
                "classification": (cls_loss[foreground_idxs].sum() + cls_loss[background_idxs].sum()) / n}

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
            matched_idxs = []
            for anchors_per_image, target in zip(anchors, targets, strict=True):
                if target["boxes"].numel() == 0:
                    matched_idxs.append(ember.full((anchors_per_image.shape[0],), -1, dtype=ember.int64))
                    continue
                matched_idxs.append(self.proposal_matcher(box_ops.box_iou(target["boxes"], anchors_per_image)))
            return self.compute_loss(targets, head_outputs, anchors, matched_idxs)
        detections = self.postprocess_detections(head_outputs, anchors, images.image_sizes)
        return self.transform.postprocess(detections, images.image_sizes, original_image_sizes)

    def postprocess_detections(self, head_outputs: dict[str, ember.Tensor], image_anchors: list[ember.Tensor],
                               image_shapes: list[tuple[int, int]]) -> list[dict[str, ember.Tensor]]:
        """Per class (background excluded): scores above score_thresh, the topk_candidates best; then
        class-wise NMS and the detections_per_img best overall."""
        bbox_regression = head_outputs["bbox_regression"]
        pred_scores = F.softmax(head_outputs["cls_logits"], dim=-1)
        num_classes = pred_scores.shape[-1]
        detections = []
        for boxes, scores, anchors, image_shape in zip(bbox_regression, pred_scores, image_anchors, image_shapes,
                                                       strict=True):
            boxes = box_ops.clip_boxes_to_image(self.box_coder.decode_single(boxes, anchors), image_shape)
            image_boxes, image_scores, image_labels = [], [], []
            for label in range(1, num_classes):
                score = scores[:, label]
                keep = score > self.score_thresh
                score, box = score[keep], boxes[keep]
                score, idxs = score.topk(det_utils._topk_min(score, self.topk_candidates, 0))
                image_boxes.append(box[idxs])
                image_scores.append(score)
                image_labels.append(ember.full(score.shape, label, dtype=ember.int64))
            image_boxes = ember.cat(image_boxes, dim=0)
            image_scores = ember.cat(image_scores, dim=0)
            image_labels = ember.cat(image_labels, dim=0)
            keep = box_ops.batched_nms(image_boxes, image_scores, image_labels, self.nms_thresh)
            keep = keep[:self.detections_per_img]
            detections.append({"boxes": image_boxes[keep], "scores": image_scores[keep],
                               "labels": image_labels[keep]})
        return detections


class SSDFeatureExtractorVGG(nn.Module):
    """VGG-16's features cut at conv4_3 (its output L2-normalized and scaled by a learned per-channel
    weight, initially 20), then fc6/fc7 as convolutions and 4 (5 with highres) extra blocks: the six
    (seven) feature maps SSD predicts from."""

    def __init__(self, backbone: nn.Sequential, highres: bool) -> None:
        super().__init__()
        _, _, maxpool3_pos, maxpool4_pos, _ = (i for i, layer in enumerate(backbone) if isinstance(layer, nn.MaxPool2d))
        # Ceil mode on pool3 keeps conv4_3 at 38x38 for a 300x300 input, as in the paper.
        backbone[maxpool3_pos].ceil_mode = True
        self.scale_weight = nn.Parameter(ember.ones(512) * 20)
        self.features = nn.Sequential(*backbone[:maxpool4_pos])
        extra = nn.ModuleList([
            nn.Sequential(nn.Conv2d(1024, 256, kernel_size=1), nn.ReLU(inplace=True),
                          nn.Conv2d(256, 512, kernel_size=3, padding=1, stride=2), nn.ReLU(inplace=True)),
            nn.Sequential(nn.Conv2d(512, 128, kernel_size=1), nn.ReLU(inplace=True),
                          nn.Conv2d(128, 256, kernel_size=3, padding=1, stride=2), nn.ReLU(inplace=True)),
            nn.Sequential(nn.Conv2d(256, 128, kernel_size=1), nn.ReLU(inplace=True),
                          nn.Conv2d(128, 256, kernel_size=3), nn.ReLU(inplace=True)),
            nn.Sequential(nn.Conv2d(256, 128, kernel_size=1), nn.ReLU(inplace=True),
                          nn.Conv2d(128, 256, kernel_size=3), nn.ReLU(inplace=True)),
        ])
        if highres:
            extra.append(nn.Sequential(nn.Conv2d(256, 128, kernel_size=1), nn.ReLU(inplace=True),
                                       nn.Conv2d(128, 256, kernel_size=4), nn.ReLU(inplace=True)))
        _xavier_init(extra)
        fc = nn.Sequential(
            nn.MaxPool2d(kernel_size=3, stride=1, padding=1, ceil_mode=False),  # pool5 without downsampling
            nn.Conv2d(512, 1024, kernel_size=3, padding=6, dilation=6),  # fc6, atrous
            nn.ReLU(inplace=True),
            nn.Conv2d(1024, 1024, kernel_size=1),  # fc7
            nn.ReLU(inplace=True),
        )
        _xavier_init(fc)
        extra.insert(0, nn.Sequential(*backbone[maxpool4_pos:-1], fc))
        self.extra = extra

    def forward(self, x: ember.Tensor) -> dict[str, ember.Tensor]:
        x = self.features(x)
        output = [self.scale_weight.reshape(1, -1, 1, 1) * F.normalize(x)]
        for block in self.extra:
            x = block(x)
            output.append(x)
        return OrderedDict([(str(i), v) for i, v in enumerate(output)])


def _vgg_extractor(backbone: VGG, highres: bool, trainable_layers: int) -> SSDFeatureExtractorVGG:
    features = backbone.features
    # The stages start at the first layer and after each max pool but the last.
    stage_indices = [0] + [i for i, b in enumerate(features) if isinstance(b, nn.MaxPool2d)][:-1]
    num_stages = len(stage_indices)
    if not 0 <= trainable_layers <= num_stages:
        raise ValueError(f"trainable_layers should be in the range [0, {num_stages}]. Instead got {trainable_layers}")
    freeze_before = len(features) if trainable_layers == 0 else stage_indices[num_stages - trainable_layers]
    for b in features[:freeze_before]:
        for parameter in b.parameters():
            parameter.requires_grad_(False)
    return SSDFeatureExtractorVGG(features, highres)


class SSD300_VGG16_Weights(WeightsEnum):
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/ssd300_vgg16_coco-b556d3b4.pth", 35641826,
        "https://github.com/pytorch/vision/tree/main/references/detection#ssd300-vgg16", {"box_map": 25.1},
        """These weights were produced by following a similar training recipe as on the paper.""",
        _ops=34.858, _file_size=135.988)
    DEFAULT = COCO_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", SSD300_VGG16_Weights.COCO_V1),
                         weights_backbone=("pretrained_backbone", VGG16_Weights.IMAGENET1K_FEATURES))
def ssd300_vgg16(*, weights: SSD300_VGG16_Weights | None = None, progress: bool = True,
                 num_classes: int | None = None,
                 weights_backbone: VGG16_Weights | None = VGG16_Weights.IMAGENET1K_FEATURES,
                 trainable_backbone_layers: int | None = None, **kwargs: Any) -> SSD:
    """SSD300 with a VGG-16 backbone: inputs resized to 300x300, 8732 default boxes.

    weights: SSD300_VGG16_Weights (fix num_classes=91, COCO ids). num_classes: including the
    background (default 91). weights_backbone: the VGG-16 features. trainable_backbone_layers: VGG
    stages left trainable, 0..5 (default 4; all 5 without pretrained weights). kwargs go to SSD.
    """
    weights = SSD300_VGG16_Weights.verify(weights)
    weights_backbone = VGG16_Weights.verify(weights_backbone)
    if "size" in kwargs:
        warnings.warn("The size of the model is already fixed; ignoring the parameter.", stacklevel=2)
        kwargs.pop("size")
    if weights is not None:
        weights_backbone = None
        num_classes = _ovewrite_value_param("num_classes", num_classes, len(weights.meta["categories"]))
    elif num_classes is None:
        num_classes = 91
    trainable_backbone_layers = _validate_trainable_layers(weights is not None or weights_backbone is not None,
                                                           trainable_backbone_layers, 5, 4)
    backbone = vgg16(weights=weights_backbone, progress=progress)
    backbone = _vgg_extractor(backbone, False, trainable_backbone_layers)
    anchor_generator = DefaultBoxGenerator([[2], [2, 3], [2, 3], [2, 3], [2], [2]],
                                           scales=[0.07, 0.15, 0.33, 0.51, 0.69, 0.87, 1.05],
                                           steps=[8, 16, 32, 64, 100, 300])
    # The backbone's features were trained on 0..255 inputs with the mean subtracted.
    defaults = {"image_mean": [0.48235, 0.45882, 0.40784], "image_std": [1.0 / 255.0, 1.0 / 255.0, 1.0 / 255.0]}
    model = SSD(backbone, anchor_generator, (300, 300), num_classes, **{**defaults, **kwargs})
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model
