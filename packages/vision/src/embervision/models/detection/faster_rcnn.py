"""Faster R-CNN (Ren et al.) with ResNet-50-FPN and MobileNetV3-Large-FPN backbones."""

from __future__ import annotations

from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

from ...ops.misc import Conv2dNormActivation, FrozenBatchNorm2d
from ...ops.poolers import MultiScaleRoIAlign
from .._api import WeightsEnum, register_model
from .._utils import _ovewrite_value_param, handle_legacy_interface
from ..mobilenetv3 import MobileNet_V3_Large_Weights, mobilenet_v3_large
from ..resnet import ResNet50_Weights, resnet50
from . import _utils as det_utils
from .anchor_utils import AnchorGenerator
from .backbone_utils import _mobilenet_extractor, _resnet_fpn_extractor, _validate_trainable_layers
from .generalized_rcnn import GeneralizedRCNN
from .roi_heads import RoIHeads
from .rpn import RegionProposalNetwork, RPNHead, _rpn_v1_to_v2
from .transform import GeneralizedRCNNTransform

__all__ = [
    "FasterRCNN", "FasterRCNN_ResNet50_FPN_Weights", "FasterRCNN_ResNet50_FPN_V2_Weights",
    "FasterRCNN_MobileNet_V3_Large_FPN_Weights", "FasterRCNN_MobileNet_V3_Large_320_FPN_Weights",
    "fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2", "fasterrcnn_mobilenet_v3_large_fpn",
    "fasterrcnn_mobilenet_v3_large_320_fpn",
]


def _default_anchorgen() -> AnchorGenerator:
    # One size per FPN level (P2..P6), three aspect ratios.
    anchor_sizes = ((32,), (64,), (128,), (256,), (512,))
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    return AnchorGenerator(anchor_sizes, aspect_ratios)


class FasterRCNN(GeneralizedRCNN):
    """Faster R-CNN: backbone (with an out_channels attribute) → RPN → RoIHeads.

    Either num_classes (including the background) or box_predictor is given. The rpn_* arguments
    configure the RegionProposalNetwork (anchors, head, top-n before/after NMS for training/testing,
    thresholds, sampling), the box_* ones the RoIHeads (pooler, head, predictor, score/NMS
    thresholds, detections per image, matching and sampling), min_size/max_size/image_mean/image_std
    the GeneralizedRCNNTransform.
    """

    def __init__(self, backbone: nn.Module, num_classes: int | None = None, min_size: int = 800,
                 max_size: int = 1333, image_mean: list[float] | None = None, image_std: list[float] | None = None,
                 rpn_anchor_generator: AnchorGenerator | None = None, rpn_head: nn.Module | None = None,
                 rpn_pre_nms_top_n_train: int = 2000, rpn_pre_nms_top_n_test: int = 1000,
                 rpn_post_nms_top_n_train: int = 2000, rpn_post_nms_top_n_test: int = 1000,
                 rpn_nms_thresh: float = 0.7, rpn_fg_iou_thresh: float = 0.7, rpn_bg_iou_thresh: float = 0.3,
                 rpn_batch_size_per_image: int = 256, rpn_positive_fraction: float = 0.5,
                 rpn_score_thresh: float = 0.0, box_roi_pool: MultiScaleRoIAlign | None = None,
                 box_head: nn.Module | None = None, box_predictor: nn.Module | None = None,
                 box_score_thresh: float = 0.05, box_nms_thresh: float = 0.5, box_detections_per_img: int = 100,
                 box_fg_iou_thresh: float = 0.5, box_bg_iou_thresh: float = 0.5,
                 box_batch_size_per_image: int = 512, box_positive_fraction: float = 0.25,
                 bbox_reg_weights: tuple[float, float, float, float] | None = None, **kwargs: Any) -> None:
        if not hasattr(backbone, "out_channels"):
            raise ValueError("backbone should contain an attribute out_channels specifying the number of output "
                             "channels (assumed to be the same for all the levels)")
        if not isinstance(rpn_anchor_generator, (AnchorGenerator, type(None))):
            raise TypeError(f"rpn_anchor_generator should be of type AnchorGenerator or None instead of "
                            f"{type(rpn_anchor_generator)}")
        if not isinstance(box_roi_pool, (MultiScaleRoIAlign, type(None))):
            raise TypeError(f"box_roi_pool should be of type MultiScaleRoIAlign or None instead of "
                            f"{type(box_roi_pool)}")
        if num_classes is not None:
            if box_predictor is not None:
                raise ValueError("num_classes should be None when box_predictor is specified")
        elif box_predictor is None:
            raise ValueError("num_classes should not be None when box_predictor is not specified")

        out_channels = backbone.out_channels
        if rpn_anchor_generator is None:
            rpn_anchor_generator = _default_anchorgen()
        if rpn_head is None:
            rpn_head = RPNHead(out_channels, rpn_anchor_generator.num_anchors_per_location()[0])
        rpn = RegionProposalNetwork(
            rpn_anchor_generator, rpn_head, rpn_fg_iou_thresh, rpn_bg_iou_thresh, rpn_batch_size_per_image,
            rpn_positive_fraction, {"training": rpn_pre_nms_top_n_train, "testing": rpn_pre_nms_top_n_test},
            {"training": rpn_post_nms_top_n_train, "testing": rpn_post_nms_top_n_test}, rpn_nms_thresh,
            score_thresh=rpn_score_thresh)

        if box_roi_pool is None:
            box_roi_pool = MultiScaleRoIAlign(featmap_names=["0", "1", "2", "3"], output_size=7, sampling_ratio=2)
        if box_head is None:
            resolution = box_roi_pool.output_size[0]
            box_head = TwoMLPHead(out_channels * resolution ** 2, 1024)
        if box_predictor is None:
            box_predictor = FastRCNNPredictor(1024, num_classes)
        roi_heads = RoIHeads(box_roi_pool, box_head, box_predictor, box_fg_iou_thresh, box_bg_iou_thresh,
                             box_batch_size_per_image, box_positive_fraction, bbox_reg_weights, box_score_thresh,
                             box_nms_thresh, box_detections_per_img)
        if image_mean is None:
            image_mean = [0.485, 0.456, 0.406]
        if image_std is None:
            image_std = [0.229, 0.224, 0.225]
        transform = GeneralizedRCNNTransform(min_size, max_size, image_mean, image_std, **kwargs)
        super().__init__(backbone, rpn, roi_heads, transform)


class TwoMLPHead(nn.Module):
    """Two fully connected ReLU layers on the flattened pooled features."""

    def __init__(self, in_channels: int, representation_size: int) -> None:
        super().__init__()
        self.fc6 = nn.Linear(in_channels, representation_size)
        self.fc7 = nn.Linear(representation_size, representation_size)

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        x = x.flatten(start_dim=1)
        return F.relu(self.fc7(F.relu(self.fc6(x))))


class FastRCNNConvFCHead(nn.Sequential):
    """conv_layers 3x3 conv-norm-ReLU layers, a flatten, then fc_layers Linear-ReLU layers (the v2 box head).
    input_size: (channels, height, width) of the pooled features."""

    def __init__(self, input_size: tuple[int, int, int], conv_layers: list[int], fc_layers: list[int],
                 norm_layer=None) -> None:
        in_channels, in_height, in_width = input_size
        blocks: list[nn.Module] = []
        previous = in_channels
        for current in conv_layers:
            blocks.append(Conv2dNormActivation(previous, current, norm_layer=norm_layer))
            previous = current
        blocks.append(nn.Flatten())
        previous = previous * in_height * in_width
        for current in fc_layers:
            blocks += [nn.Linear(previous, current), nn.ReLU(inplace=True)]
            previous = current
        super().__init__(*blocks)
        for layer in self.modules():
            if isinstance(layer, nn.Conv2d):
                nn.init.kaiming_normal_(layer.weight, mode="fan_out", nonlinearity="relu")
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)


class FastRCNNPredictor(nn.Module):
    """Class logits and per-class box deltas from the box head's features."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.cls_score = nn.Linear(in_channels, num_classes)
        self.bbox_pred = nn.Linear(in_channels, num_classes * 4)

    def forward(self, x: ember.Tensor) -> tuple[ember.Tensor, ember.Tensor]:
        if x.dim() == 4 and list(x.shape[2:]) != [1, 1]:
            raise ValueError(f"x has the wrong shape, expecting the last two dimensions to be [1,1] instead of "
                             f"{list(x.shape[2:])}")
        x = x.flatten(start_dim=1)
        return self.cls_score(x), self.bbox_pred(x)


_DOCS_PAPER = """These weights were produced by following a similar training recipe as on the paper."""
_DOCS_V2 = """These weights were produced using an enhanced training recipe to boost the model accuracy."""
_REFS = "https://github.com/pytorch/vision/tree/main/references/detection#"


class FasterRCNN_ResNet50_FPN_Weights(WeightsEnum):
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/fasterrcnn_resnet50_fpn_coco-258fb6c6.pth", 41755286,
        _REFS + "faster-r-cnn-resnet-50-fpn", {"box_map": 37.0}, _DOCS_PAPER, _ops=134.38, _file_size=159.743)
    DEFAULT = COCO_V1


class FasterRCNN_ResNet50_FPN_V2_Weights(WeightsEnum):
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/fasterrcnn_resnet50_fpn_v2_coco-dd69338a.pth", 43712278,
        "https://github.com/pytorch/vision/pull/5763", {"box_map": 46.7}, _DOCS_V2, _ops=280.371, _file_size=167.104)
    DEFAULT = COCO_V1


class FasterRCNN_MobileNet_V3_Large_FPN_Weights(WeightsEnum):
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/fasterrcnn_mobilenet_v3_large_fpn-fb6a3cc7.pth", 19386354,
        _REFS + "faster-r-cnn-mobilenetv3-large-fpn", {"box_map": 32.8}, _DOCS_PAPER, _ops=4.494, _file_size=74.239)
    DEFAULT = COCO_V1


class FasterRCNN_MobileNet_V3_Large_320_FPN_Weights(WeightsEnum):
    COCO_V1 = det_utils._detection_weights(
        "https://download.pytorch.org/models/fasterrcnn_mobilenet_v3_large_320_fpn-907ea3f9.pth", 19386354,
        _REFS + "faster-r-cnn-mobilenetv3-large-320-fpn", {"box_map": 22.8}, _DOCS_PAPER, _ops=0.719,
        _file_size=74.239)
    DEFAULT = COCO_V1


def _rcnn_classes(weights: WeightsEnum | None, num_classes: int | None) -> int:
    if weights is not None:
        return _ovewrite_value_param("num_classes", num_classes, len(weights.meta["categories"]))
    return 91 if num_classes is None else num_classes


def _load_rcnn(model: nn.Module, weights: WeightsEnum, progress: bool) -> None:
    """Load a checkpoint, renaming the keys of torchvision's pre-0.13 layouts (RPNHead's single conv,
    MaskRCNNHeads' mask_fcnN) to the current module names."""
    state_dict = dict(weights.get_state_dict(progress=progress, check_hash=True))
    _rpn_v1_to_v2(state_dict)
    for i in range(4):
        for kind in ("weight", "bias"):
            old_key = f"roi_heads.mask_head.mask_fcn{i + 1}.{kind}"
            if old_key in state_dict:
                state_dict[f"roi_heads.mask_head.{i}.0.{kind}"] = state_dict.pop(old_key)
    model.load_state_dict(state_dict)


def _resnet50_fpn_backbone(weights_backbone, progress: bool, trainable_backbone_layers: int | None,
                           is_trained: bool):
    trainable_backbone_layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    # Pretrained backbones keep their ImageNet statistics frozen.
    norm_layer = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    backbone = resnet50(weights=weights_backbone, progress=progress, norm_layer=norm_layer)
    return _resnet_fpn_extractor(backbone, trainable_backbone_layers)


def _v2_parts(backbone) -> dict[str, nn.Module]:
    # The v2 recipe: a two-conv RPN head and a 4-conv + 1-fc box head, both with BatchNorm.
    rpn_anchor_generator = _default_anchorgen()
    rpn_head = RPNHead(backbone.out_channels, rpn_anchor_generator.num_anchors_per_location()[0], conv_depth=2)
    box_head = FastRCNNConvFCHead((backbone.out_channels, 7, 7), [256, 256, 256, 256], [1024],
                                  norm_layer=nn.BatchNorm2d)
    return {"rpn_anchor_generator": rpn_anchor_generator, "rpn_head": rpn_head, "box_head": box_head}


@register_model()
@handle_legacy_interface(weights=("pretrained", FasterRCNN_ResNet50_FPN_Weights.COCO_V1),
                         weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1))
def fasterrcnn_resnet50_fpn(*, weights: FasterRCNN_ResNet50_FPN_Weights | None = None, progress: bool = True,
                            num_classes: int | None = None,
                            weights_backbone: ResNet50_Weights | None = ResNet50_Weights.IMAGENET1K_V1,
                            trainable_backbone_layers: int | None = None, **kwargs: Any) -> FasterRCNN:
    """Faster R-CNN with a ResNet-50-FPN backbone.

    weights: FasterRCNN_ResNet50_FPN_Weights (fix num_classes=91). num_classes: including the background
    (default 91). weights_backbone: ImageNet ResNet-50 weights (then FrozenBatchNorm2d).
    trainable_backbone_layers: ResNet stages left trainable, 0..5 (default 3). kwargs go to FasterRCNN.
    """
    weights = FasterRCNN_ResNet50_FPN_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes = _rcnn_classes(weights, num_classes)
    is_trained = weights is not None or weights_backbone is not None
    backbone = _resnet50_fpn_backbone(weights_backbone, progress, trainable_backbone_layers, is_trained)
    model = FasterRCNN(backbone, num_classes=num_classes, **kwargs)
    if weights is not None:
        _load_rcnn(model, weights, progress)
        if weights == FasterRCNN_ResNet50_FPN_Weights.COCO_V1:
            det_utils.overwrite_eps(model, 0.0)  # trained with eps=0 in its frozen batch norms
    return model


@register_model()
@handle_legacy_interface(weights=("pretrained", FasterRCNN_ResNet50_FPN_V2_Weights.COCO_V1),
                         weights_backbone=("pretrained_backbone", ResNet50_Weights.IMAGENET1K_V1))
def fasterrcnn_resnet50_fpn_v2(*, weights: FasterRCNN_ResNet50_FPN_V2_Weights | None = None, progress: bool = True,
                               num_classes: int | None = None,
                               weights_backbone: ResNet50_Weights | None = None,
                               trainable_backbone_layers: int | None = None, **kwargs: Any) -> FasterRCNN:
    """Faster R-CNN v2 (Benchmarking Detection Transfer Learning with Vision Transformers): BatchNorm
    in the backbone and FPN, a two-conv RPN head, a conv box head; arguments as fasterrcnn_resnet50_fpn."""
    weights = FasterRCNN_ResNet50_FPN_V2_Weights.verify(weights)
    weights_backbone = ResNet50_Weights.verify(weights_backbone)
    if weights is not None:
        weights_backbone = None
    num_classes = _rcnn_classes(weights, num_classes)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 5, 3)
    backbone = resnet50(weights=weights_backbone, progress=progress)
    backbone = _resnet_fpn_extractor(backbone, trainable_backbone_layers, norm_layer=nn.BatchNorm2d)
    model = FasterRCNN(backbone, num_classes=num_classes, **_v2_parts(backbone), **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


def _fasterrcnn_mobilenet_v3_large_fpn(*, weights: WeightsEnum | None, progress: bool, num_classes: int | None,
                                       weights_backbone: MobileNet_V3_Large_Weights | None,
                                       trainable_backbone_layers: int | None, **kwargs: Any) -> FasterRCNN:
    if weights is not None:
        weights_backbone = None
    num_classes = _rcnn_classes(weights, num_classes)
    is_trained = weights is not None or weights_backbone is not None
    trainable_backbone_layers = _validate_trainable_layers(is_trained, trainable_backbone_layers, 6, 3)
    norm_layer = FrozenBatchNorm2d if is_trained else nn.BatchNorm2d
    backbone = mobilenet_v3_large(weights=weights_backbone, progress=progress, norm_layer=norm_layer)
    backbone = _mobilenet_extractor(backbone, True, trainable_backbone_layers)
    # Every one of the three levels gets all five sizes.
    anchor_sizes = ((32, 64, 128, 256, 512),) * 3
    aspect_ratios = ((0.5, 1.0, 2.0),) * len(anchor_sizes)
    model = FasterRCNN(backbone, num_classes, rpn_anchor_generator=AnchorGenerator(anchor_sizes, aspect_ratios),
                       **kwargs)
    if weights is not None:
        model.load_state_dict(weights.get_state_dict(progress=progress, check_hash=True))
    return model


@register_model()
@handle_legacy_interface(weights=("pretrained", FasterRCNN_MobileNet_V3_Large_320_FPN_Weights.COCO_V1),
                         weights_backbone=("pretrained_backbone", MobileNet_V3_Large_Weights.IMAGENET1K_V1))
def fasterrcnn_mobilenet_v3_large_320_fpn(
        *, weights: FasterRCNN_MobileNet_V3_Large_320_FPN_Weights | None = None, progress: bool = True,
        num_classes: int | None = None,
        weights_backbone: MobileNet_V3_Large_Weights | None = MobileNet_V3_Large_Weights.IMAGENET1K_V1,
        trainable_backbone_layers: int | None = None, **kwargs: Any) -> FasterRCNN:
    """Low-resolution Faster R-CNN with a MobileNetV3-Large-FPN backbone (images resized to 320, at most
    640; 150 proposals); trainable_backbone_layers 0..6 (default 3); other arguments as
    fasterrcnn_resnet50_fpn."""
    weights = FasterRCNN_MobileNet_V3_Large_320_FPN_Weights.verify(weights)
    weights_backbone = MobileNet_V3_Large_Weights.verify(weights_backbone)
    defaults = {"min_size": 320, "max_size": 640, "rpn_pre_nms_top_n_test": 150, "rpn_post_nms_top_n_test": 150,
                "rpn_score_thresh": 0.05}
    return _fasterrcnn_mobilenet_v3_large_fpn(weights=weights, progress=progress, num_classes=num_classes,
                                              weights_backbone=weights_backbone,
                                              trainable_backbone_layers=trainable_backbone_layers,
                                              **{**defaults, **kwargs})


@register_model()
@handle_legacy_interface(weights=("pretrained", FasterRCNN_MobileNet_V3_Large_FPN_Weights.COCO_V1),
                         weights_backbone=("pretrained_backbone", MobileNet_V3_Large_Weights.IMAGENET1K_V1))
def fasterrcnn_mobilenet_v3_large_fpn(
        *, weights: FasterRCNN_MobileNet_V3_Large_FPN_Weights | None = None, progress: bool = True,
        num_classes: int | None = None,
        weights_backbone: MobileNet_V3_Large_Weights | None = MobileNet_V3_Large_Weights.IMAGENET1K_V1,
        trainable_backbone_layers: int | None = None, **kwargs: Any) -> FasterRCNN:
    """High-resolution Faster R-CNN with a MobileNetV3-Large-FPN backbone; arguments as
    fasterrcnn_mobilenet_v3_large_320_fpn."""
    weights = FasterRCNN_MobileNet_V3_Large_FPN_Weights.verify(weights)
    weights_backbone = MobileNet_V3_Large_Weights.verify(weights_backbone)
    defaults = {"rpn_score_thresh": 0.05}
    return _fasterrcnn_mobilenet_v3_large_fpn(weights=weights, progress=progress, num_classes=num_classes,
                                              weights_backbone=weights_backbone,
                                              trainable_backbone_layers=trainable_backbone_layers,
                                              **{**defaults, **kwargs})
