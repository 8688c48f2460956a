"""Input checks the detection models share (torchvision asserts these in each model's forward)."""

from __future__ import annotations

import ember


def check_training_targets(training: bool, targets) -> None:
    """In training, targets must be given and each target's "boxes" an [N, 4] tensor."""
    if not training:
        return
    if targets is None:
        raise ValueError("targets should not be none when in training mode")
    for target in targets:
        boxes = target["boxes"]
        if not isinstance(boxes, ember.Tensor):
            raise ValueError(f"Expected target boxes to be of type Tensor, got {type(boxes)}.")
        if not (boxes.dim() == 2 and boxes.shape[-1] == 4):
            raise ValueError(f"Expected target boxes to be a tensor of shape [N, 4], got {tuple(boxes.shape)}.")


def check_degenerate_boxes(targets) -> None:
    """Every target box needs x2 > x1 and y2 > y1."""
    if targets is None:
        return
    for target_idx, target in enumerate(targets):
        boxes = target["boxes"]
        if boxes.numel() == 0:
            continue
        degenerate = (boxes[:, 2:] <= boxes[:, :2]).any(dim=1)
        if bool(degenerate.any()):
            bb_idx = int(ember.where(degenerate)[0][0])
            degen_bb = boxes[bb_idx].tolist()
            raise ValueError("All bounding boxes should have positive height and width. "
                             f"Found invalid box {degen_bb} for target at index {target_idx}.")


def original_sizes(images) -> list[tuple[int, int]]:
    sizes = []
    for img in images:
        val = tuple(img.shape[-2:])
        if len(val) != 2:
            raise ValueError(f"expecting the last two dimensions of the Tensor to be H and W instead got {val}")
        sizes.append((int(val[0]), int(val[1])))
    return sizes
