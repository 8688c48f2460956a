"""GeneralizedRCNN: transform → backbone → RPN → RoI heads, the skeleton of the R-CNN models."""

from __future__ import annotations

from collections import OrderedDict

import ember
from ember import nn

from ._checks import check_degenerate_boxes, check_training_targets, original_sizes


class GeneralizedRCNN(nn.Module):
    """Training (targets per image with "boxes" [N, 4] xyxy and "labels" [N] int64, plus "masks" or
    "keypoints" for those heads) returns the RPN's and the heads' losses; eval returns per image the
    heads' detections in the input image's coordinates."""

    def __init__(self, backbone: nn.Module, rpn: nn.Module, roi_heads: nn.Module, transform: nn.Module) -> None:
        super().__init__()
        self.transform = transform
        self.backbone = backbone
        self.rpn = rpn
        self.roi_heads = roi_heads

    def forward(self, images: list[ember.Tensor], targets: list[dict[str, ember.Tensor]] | None = None):
        check_training_targets(self.training, targets)
        original_image_sizes = original_sizes(images)
        images, targets = self.transform(images, targets)
        check_degenerate_boxes(targets)
        features = self.backbone(images.tensors)
        if isinstance(features, ember.Tensor):
            features = OrderedDict([("0", features)])
        proposals, proposal_losses = self.rpn(images, features, targets)
        detections, detector_losses = self.roi_heads(features, proposals, images.image_sizes, targets)
        detections = self.transform.postprocess(detections, images.image_sizes, original_image_sizes)
        if self.training:
            losses = {}
            losses.update(detector_losses)
            losses.update(proposal_losses)
            return losses
        return detections
