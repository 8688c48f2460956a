"""Mask R-CNN (He et al.) with a ResNet-50-FPN backbone."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from ember import nn

from ...ops.misc import Conv2dNormActivation
from ...ops.poolers import MultiScaleRoIAlign
from .._api import WeightsEnum, register_model
from .._utils import handle_legacy_interface
from ..resnet import ResNet50_Weights, resnet50
from . import _utils as det_utils
from .backbone_utils import _resnet_fpn_extractor, _validate_trainable_layers
from .faster_rcnn import (
    _DOCS_PAPER,
    _DOCS_V2,
    FasterRCNN,
    _load_rcnn,
    _rcnn_classes,
    _resnet50_fpn_backbone,
    _v2_parts,
)

__all__ = ["MaskRCNN", "MaskRCNN_ResNet50_FPN_Weights", "MaskRCNN_ResNet50_FPN_V2_Weights",
           "maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2"]


class MaskRCNN(FasterRCNN):
    """Faster R-CNN with a mask branch: eval detections gain "masks" [n, 1, H, W] (probabilities pasted
    into the image), training targets need "masks" [N, H, W] (uint8) and add "loss_mask". mask_roi_pool
    (default 14x14 RoIAlign), mask_head (four 3x3 convs) and mask_predictor (deconv + 1x1 conv per
    class) configure the branch; the other arguments are FasterRCNN's."""

    def __init__(self, backbone: nn.Module, num_classes: int | None = None, min_size: int = 800,
                 max_size: int = 1333, image_mean: list[float] | None = None, image_std: list[float] | None = None,
                 rpn_anchor_generator=None, rpn_head=None, rpn_pre_nms_top_n_train: int = 2000,
                 rpn_pre_nms_top_n_test: int = 1000, rpn_post_nms_top_n_train: int = 2000,
                 rpn_post_nms_top_n_test: int = 1000, rpn_nms_thresh: float = 0.7, rpn_fg_iou_thresh: float = 0.7,
                 rpn_bg_iou_thresh: float = 0.3, rpn_batch_size_per_image: int = 256,
                 rpn_positive_fraction: float = 0.5, rpn_score_thresh: float = 0.0, box_roi_pool=None, box_head=None,
                 box_predictor=None, box_score_thresh: float = 0.05, box_nms_thresh: float = 0.5,
                 box_detections_per_img: int = 100, box_fg_iou_thresh: float = 0.5, box_bg_iou_thresh: float = 0.5,
                 box_batch_size_per_image: int = 512, box_positive_fraction: float = 0.25, bbox_reg_weights=None,
                 mask_roi_pool: MultiScaleRoIAlign | None = None, mask_head: nn.Module | None = None,
                 mask_predictor: nn.Module | None = None, **kwargs: Any) -> None:
        if not isinstance(mask_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError(f"mask_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                            f"{type(mask_roi_pool)}")
        if num_classes is not None and mask_predictor is not None:
            raise ValueError("num_classes should be None when mask_predictor is specified")
        out_channels = backbone.out_channels
        if mask_roi_pool is None:
            mask_roi_pool = MultiScaleRoIAlign(featmap_names=["0", "1", "2", "3"], output_size=14, sampling_ratio=2)
        if mask_head is None:
            mask_head = MaskRCNNHeads(out_channels, (256, 256, 256, 256), 1)
        if mask_predictor is None:
            mask_predictor = MaskRCNNPredictor(256, 256, num_classes)
        super().__init__(
            backbone, num_classes, min_size, max_size, image_mean, image_std, rpn_anchor_generator, rpn_head,
            rpn_pre_nms_top_n_train, rpn_pre_nms_top_n_test, rpn_post_nms_top_n_train, rpn_post_nms_top_n_test,
            rpn_nms_thresh, rpn_fg_iou_thresh, rpn_bg_iou_thresh, rpn_batch_size_per_image, rpn_positive_fraction,
            rpn_score_thresh, box_roi_pool, box_head, box_predictor, box_score_thresh, box_nms_thresh,
            box_detections_per_img, box_fg_iou_thresh, box_bg_iou_thresh, box_batch_size_per_image,
            box_positive_fraction, bbox_reg_weights, **kwargs)
        self.roi_heads.mask_roi_pool = mask_roi_pool
        self.roi_heads.mask_head = mask_head
        self.roi_heads.mask_predictor = mask_predictor


class MaskRCNNHeads(nn.Sequential):
    """3x3 conv(-norm)-ReLU layers of the given widths (and dilation)."""

    _version = 2

    def __init__(self, in_channels: int, layers: list[int], dilation: int, norm_layer=None) -> None:
        blocks = []
        next_feature = in_channels
        for layer_features in layers:
            blocks.append(Conv2dNormActivation(next_feature, layer_features, kernel_size=3, stride=1,
                                               padding=dilation, dilation=dilation, norm_layer=norm_layer))
            next_feature = layer_features
        super().__init__(*blocks)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)


class MaskRCNNPredictor(nn.Sequential):
    """A stride-2 2x2 transposed conv (doubling the mask resolution), ReLU, and a 1x1 conv to one mask
    logit map per class."""

    def __init__(self, in_channels: int, dim_reduced: int, num_classes: int) -> None:
        super().__init__(OrderedDict([
            ("conv5_mask", nn.ConvTranspose2d(in_channels, dim_reduced, 2, 2, 0)),
            ("relu", nn.ReLU(inplace=True)),
            ("mask_fcn_logits", nn.Conv2d(dim_reduced, num_classes, 1, 1, 0)),
        ]))
        for name, param in self.named_parameters():
            if "weight" in name:
                nn.init.kaiming_normal_(param, mode="fan_out", nonlinearity="relu")


_REFS = "https://github.com/pytorch/vision/tree/main/references/detection#"


class MaskRCNN_ResNet50_FPN_Weights(WeightsEnum):
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/maskrcnn_resnet50_fpn_coco-bf2d0c1e.pth", 44401393,
        _REFS + "mask-r-cnn", {"box_map": 37.9, "mask_map": 34.6}, _DOCS_PAPER, _ops=134.38, _file_size=169.84)
    DEFAULT = COCO_V1


class MaskRCNN_ResNet50_FPN_V2_Weights(WeightsEnum):
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/maskrcnn_resnet50_fpn_v2_coco-73cbd019.pth", 46359409,
        "https://github.com/pytorch/vision/pull/5773", {"box_map": 47.4, "mask_map": 41.8}, _DOCS_V2,
        _ops=333.577, _file_size=177.219)
    DEFAULT = COCO_V1


@register_model()
@handle_legacy_interface(weights=("pretrained", MaskRCNN_ResNet50_FPN_Weights.COCO_V1),
                         weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1))
def maskrcnn_resnet50_fpn(*, weights: MaskRCNN_ResNet50_FPN_Weights | None = None, progress: bool = True,
                          num_classes: int | None = None,
                          weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
                          trainable_backbone_layers: int | None = None, **kwargs: Any) -> MaskRCNN:
    """Mask R-CNN with a ResNet-50-FPN backbone; arguments as fasterrcnn_resnet50_fpn."""
    weights = MaskRCNN_ResNet50_FPN_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes = _rcnn_classes(weights, num_classes)
    is_trained = weights is not None or weights_backbone is not None
    backbone = _resnet50_fpn_backbone(weights_backbone, progress, trainable_backbone_layers, is_trained)
    model = MaskRCNN(backbone, num_classes=num_classes, **kwargs)
    if weights is not None:
        _load_rcnn(model, weights, progress)
        if weights == MaskRCNN_ResNet50_FPN_Weights.COCO_V1:
            det_utils.overwrite_eps(model, 0.0)
    return model


@register_model()
@handle_legacy_interface(weights=("pretrained", MaskRCNN_ResNet50_FPN_V2_Weights.COCO_V1),
                         weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1))
def maskrcnn_resnet50_fpn_v2(*, weights: MaskRCNN_ResNet50_FPN_V2_Weights | None = None, progress: bool = True,
                             num_classes: int | None = None,
                             weights_backbone: ResNet50_Weights | None = None,
                             trainable_backbone_layers: int | None = None, **kwargs: Any) -> MaskRCNN:
    """Mask R-CNN v2 (as fasterrcnn_resnet50_fpn_v2, with a BatchNorm mask head); arguments as
    fasterrcnn_resnet50_fpn."""
    weights = MaskRCNN_ResNet50_FPN_V2_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes = _rcnn_classes(weights, num_classes)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    backbone = resnet50(weights=weights_backbone, progress=progress)
    backbone = _resnet_fpn_extractor(backbone, trainable_backbone_layers, norm_layer=nn.BatchNorm2d)
    mask_head = MaskRCNNHeads(backbone.out_channels, [256, 256, 256, 256], 1, norm_layer=nn.BatchNorm2d)
    model = MaskRCNN(backbone, num_classes=num_classes, mask_head=mask_head, **_v2_parts(backbone), **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model
