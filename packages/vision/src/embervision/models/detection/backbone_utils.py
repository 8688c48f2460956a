"""Backbone helpers of the detection models (torchvision.models.detection.backbone_utils)."""

from __future__ import annotations

import warnings


def _validate_trainable_layers(is_trained: bool, trainable_backbone_layers: int | None, max_value: int,
                               default_value: int) -> int:
    """How many backbone stages (from the top) train: default_value, or all of them when nothing is
    pretrained (a requested value then only warns); outside [0, max_value] is a ValueError."""
    if not is_trained:
        if trainable_backbone_layers is not None:
            warnings.warn("Changing trainable_backbone_layers has no effect if neither pretrained nor "
                          f"pretrained_backbone have been set to True, falling back to "
                          f"trainable_backbone_layers={max_value} so that all layers are trainable")
        trainable_backbone_layers = max_value
    if trainable_backbone_layers is None:
        trainable_backbone_layers = default_value
    if trainable_backbone_layers < 0 or trainable_backbone_layers > max_value:
        raise ValueError(f"Trainable backbone layers should be in the range [0,{max_value}], "
                         f"found {trainable_backbone_layers}")
    return trainable_backbone_layers
