"""Keypoint R-CNN (He et al., Mask R-CNN's keypoint variant) with a ResNet-50-FPN backbone."""

from __future__ import annotations

from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

from ...ops.poolers import MultiScaleRoIAlign
from .._api import WeightsEnum, register_model
from .._meta import _COCO_PERSON_CATEGORIES, _COCO_PERSON_KEYPOINT_NAMES
from .._utils import _ovewrite_value_param, handle_legacy_interface
from ..resnet import ResNet50_Weights
from . import _utils as det_utils
from .faster_rcnn import _DOCS_PAPER, FasterRCNN, _load_rcnn, _resnet50_fpn_backbone

__all__ = ["KeypointRCNN", "KeypointRCNN_ResNet50_FPN_Weights", "keypointrcnn_resnet50_fpn"]


class KeypointRCNN(FasterRCNN):
    """Faster R-CNN with a keypoint branch: eval detections gain "keypoints" [n, K, 3] (x, y, 1) and
    "keypoints_scores" [n, K]; training targets need "keypoints" [N, K, 3] (x, y, visibility; float32)
    and add "loss_keypoint". min_size defaults to the multi-scale training sizes 640..800."""

    def __init__(self, backbone: nn.Module, num_classes: int | None = None, min_size=None, max_size: int = 1333,
                 image_mean: list[float] | None = None, image_std: list[float] | None = None,
                 rpn_anchor_generator=None, rpn_head=None, rpn_pre_nms_top_n_train: int = 2000,
                 rpn_pre_nms_top_n_test: int = 1000, rpn_post_nms_top_n_train: int = 2000,
                 rpn_post_nms_top_n_test: int = 1000, rpn_nms_thresh: float = 0.7, rpn_fg_iou_thresh: float = 0.7,
                 rpn_bg_iou_thresh: float = 0.3, rpn_batch_size_per_image: int = 256,
                 rpn_positive_fraction: float = 0.5, rpn_score_thresh: float = 0.0, box_roi_pool=None, box_head=None,
                 box_predictor=None, box_score_thresh: float = 0.05, box_nms_thresh: float = 0.5,
                 box_detections_per_img: int = 100, box_fg_iou_thresh: float = 0.5, box_bg_iou_thresh: float = 0.5,
                 box_batch_size_per_image: int = 512, box_positive_fraction: float = 0.25, bbox_reg_weights=None,
                 keypoint_roi_pool: MultiScaleRoIAlign | None = None, keypoint_head: nn.Module | None = None,
                 keypoint_predictor: nn.Module | None = None, num_keypoints: int | None = None,
                 **kwargs: Any) -> None:
        if not isinstance(keypoint_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError("keypoint_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                            f"{type(keypoint_roi_pool)}")
        if min_size is None:
            min_size = (640, 672, 704, 736, 768, 800)
        if num_keypoints is not None:
            if keypoint_predictor is not None:
                raise ValueError("num_keypoints should be None when keypoint_predictor is specified")
        else:
            num_keypoints = 17
        out_channels = backbone.out_channels
        if keypoint_roi_pool is None:
            keypoint_roi_pool = MultiScaleRoIAlign(featmap_names=["0", "1", "2", "3"], output_size=14,
                                                   sampling_ratio=2)
        if keypoint_head is None:
            keypoint_head = KeypointRCNNHeads(out_channels, tuple(512 for _ in range(8)))
        if keypoint_predictor is None:
            keypoint_predictor = KeypointRCNNPredictor(512, num_keypoints)
        super().__init__(
            backbone, num_classes, min_size, max_size, image_mean, image_std, rpn_anchor_generator, rpn_head,
            rpn_pre_nms_top_n_train, rpn_pre_nms_top_n_test, rpn_post_nms_top_n_train, rpn_post_nms_top_n_test,
            rpn_nms_thresh, rpn_fg_iou_thresh, rpn_bg_iou_thresh, rpn_batch_size_per_image, rpn_positive_fraction,
            rpn_score_thresh, box_roi_pool, box_head, box_predictor, box_score_thresh, box_nms_thresh,
            box_detections_per_img, box_fg_iou_thresh, box_bg_iou_thresh, box_batch_size_per_image,
            box_positive_fraction, bbox_reg_weights, **kwargs)
        self.roi_heads.keypoint_roi_pool = keypoint_roi_pool
        self.roi_heads.keypoint_head = keypoint_head
        self.roi_heads.keypoint_predictor = keypoint_predictor


class KeypointRCNNHeads(nn.Sequential):
    """3x3 conv-ReLU layers of the given widths."""

    def __init__(self, in_channels: int, layers: tuple[int, ...]) -> None:
        d: list[nn.Module] = []
        next_feature = in_channels
        for out_channels in layers:
            d += [nn.Conv2d(next_feature, out_channels, 3, stride=1, padding=1), nn.ReLU(inplace=True)]
            next_feature = out_channels
        super().__init__(*d)
        for m in self.children():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                nn.init.constant_(m.bias, 0)


class KeypointRCNNPredictor(nn.Module):
    """A stride-2 4x4 transposed conv to one heatmap per keypoint, then a bilinear 2x upsampling
    (14x14 pooled features → 56x56 heatmaps)."""

    def __init__(self, in_channels: int, num_keypoints: int) -> None:
        super().__init__()
        deconv_kernel = 4
        self.kps_score_lowres = nn.ConvTranspose2d(in_channels, num_keypoints, deconv_kernel, stride=2,
                                                   padding=deconv_kernel // 2 - 1)
        nn.init.kaiming_normal_(self.kps_score_lowres.weight, mode="fan_out", nonlinearity="relu")
        nn.init.constant_(self.kps_score_lowres.bias, 0)
        self.up_scale = 2
        self.out_channels = num_keypoints

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = self.kps_score_lowres(x)
        return F.interpolate(x, scale_factor=float(self.up_scale), mode="bilinear", align_corners=False,
                             recompute_scale_factor=False)


_KP_META = {"categories": _COCO_PERSON_CATEGORIES, "keypoint_names": _COCO_PERSON_KEYPOINT_NAMES}


class KeypointRCNN_ResNet50_FPN_Weights(WeightsEnum):
    COCO_LEGACY = det_utils._detection_weights(
        "https://download.pytorch.org/models/keypointrcnn_resnet50_fpn_coco-9f466800.pth", 59137258,
        "https://github.com/pytorch/vision/issues/1606", {"box_map": 50.6, "kp_map": 61.1},
        """These weights were produced by following a similar training recipe as on the paper but use a checkpoint
            from an early epoch.""", _ops=133.924, _file_size=226.054, **_KP_META)
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/keypointrcnn_resnet50_fpn_coco-fc266e95.pth", 59137258,
        "https://github.com/pytorch/vision/tree/main/references/detection#keypoint-r-cnn",
        {"box_map": 54.6, "kp_map": 65.0}, _DOCS_PAPER, _ops=137.42, _file_size=226.054, **_KP_META)
    DEFAULT = COCO_V1


@register_model()
@handle_legacy_interface(
    weights=("pretrained", lambda kwargs: KeypointRCNN_ResNet50_FPN_Weights.COCO_LEGACY
             if kwargs["pretrained"] == "legacy" else KeypointRCNN_ResNet50_FPN_Weights.COCO_V1),
    weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1))
def keypointrcnn_resnet50_fpn(*, weights: KeypointRCNN_ResNet50_FPN_Weights | None = None, progress: bool = True,
                              num_classes: int | None = None, num_keypoints: int | None = None,
                              weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
                              trainable_backbone_layers: int | None = None, **kwargs: Any) -> KeypointRCNN:
    """Keypoint R-CNN with a ResNet-50-FPN backbone.

    weights: KeypointRCNN_ResNet50_FPN_Weights (fix num_classes=2, person or not, and 17 COCO
    keypoints). num_classes: default 2; num_keypoints: default 17. Other arguments as
    fasterrcnn_resnet50_fpn.
    """
    weights = KeypointRCNN_ResNet50_FPN_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
        num_classes = _ovewrite_value_param("num_classes", num_classes, len(weights.meta["categories"]))
        num_keypoints = _ovewrite_value_param("num_keypoints", num_keypoints, len(weights.meta["keypoint_names"]))
    else:
        num_classes = 2 if num_classes is None else num_classes
        num_keypoints = 17 if num_keypoints is None else num_keypoints
    is_trained = weights is not None or weights_backbone is not None
    backbone = _resnet50_fpn_backbone(weights_backbone, progress, trainable_backbone_layers, is_trained)
    model = KeypointRCNN(backbone, num_classes, num_keypoints=num_keypoints, **kwargs)
    if weights is not None:
        _load_rcnn(model, weights, progress)
        if weights == KeypointRCNN_ResNet50_FPN_Weights.COCO_V1:
            det_utils.overwrite_eps(model, 0.0)
    return model
