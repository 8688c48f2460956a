"""ImageList: a padded batch of images with each image's size before padding."""

from __future__ import annotations

import ember


class ImageList:
    """tensors: the batch [N, C, H, W] (images zero-padded to a common size); image_sizes: each image's
    (height, width) inside its padding."""

    def __init__(self, tensors: ember.Tensor, image_sizes: list[tuple[int, int]]) -> None:
        self.tensors = tensors
        self.image_sizes = image_sizes

    def to(self, device) -> ImageList:
        return ImageList(self.tensors.to(device), self.image_sizes)
