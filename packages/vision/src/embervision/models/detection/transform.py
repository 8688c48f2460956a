"""GeneralizedRCNNTransform: the detection models' input pipeline (normalize, resize, batch) and the
mapping of their predictions back onto the original images."""

from __future__ import annotations

import math
from typing import Any

import ember
from ember import nn
from ember.nn import functional as F

from .image_list import ImageList


def _resized_size(height: int, width: int, min_size: float, max_size: float) -> tuple[int, int]:
    """torchvision's rule: scale so the short side is min_size unless the long side would pass
    max_size; the scale is a float32 value, and each side floors (interpolate's recompute_scale_factor)."""
    scale = min(float(ember.tensor(min_size / min(height, width), dtype=ember.float32)),
                float(ember.tensor(max_size / max(height, width), dtype=ember.float32)))
    # torch computes the float32 quotients and takes their minimum; the output size is floor(size * scale).
    scale = float(ember.tensor(scale, dtype=ember.float32))
    return int(math.floor(height * scale)), int(math.floor(width * scale))


def _resize_image_and_masks(image: ember.Tensor, self_min_size: float, self_max_size: float,
                            target: dict[str, ember.Tensor] | None = None,
                            fixed_size: tuple[int, int] | None = None):
    if fixed_size is not None:
        size = (fixed_size[1], fixed_size[0])
    else:
        size = _resized_size(image.shape[-2], image.shape[-1], self_min_size, self_max_size)
    image = F.interpolate(image[None], size=size, mode="bilinear", align_corners=False)[0]
    if target is not None and "masks" in target:
        mask = target["masks"]
        mask = F.interpolate(mask[:, None].float(), size=size, mode="nearest")[:, 0].to(ember.uint8)
        target["masks"] = mask
    return image, target


def _ratios(original_size: list[int], new_size: list[int]) -> tuple[float, float]:
    # The (height, width) scale factors, float32 quotients as torchvision computes them.
    return tuple(float(ember.tensor(s, dtype=ember.float32) / ember.tensor(s_orig, dtype=ember.float32))
                 for s, s_orig in zip(new_size, original_size, strict=True))


def resize_boxes(boxes: ember.Tensor, original_size: list[int], new_size: list[int]) -> ember.Tensor:
    """Scale xyxy boxes from an image of original_size (h, w) to one of new_size."""
    ratio_h, ratio_w = _ratios(original_size, new_size)
    xmin, ymin, xmax, ymax = boxes.unbind(1)
    return ember.stack([xmin * ratio_w, ymin * ratio_h, xmax * ratio_w, ymax * ratio_h], dim=1)


def resize_keypoints(keypoints: ember.Tensor, original_size: list[int], new_size: list[int]) -> ember.Tensor:
    """Scale [..., K, 3] keypoints (x, y, visibility) from original_size (h, w) to new_size."""
    ratio_h, ratio_w = _ratios(original_size, new_size)
    scale = ember.tensor([ratio_w, ratio_h, 1.0], dtype=keypoints.dtype)
    return keypoints * scale


class GeneralizedRCNNTransform(nn.Module):
    """Normalizes each image with image_mean/image_std, resizes it (short side to min_size, a random
    choice of min_size while training; long side at most max_size; or exactly fixed_size = (w, h)),
    scales the targets' boxes, masks and keypoints alike, and zero-pads the images into one batch
    whose sides are multiples of size_divisible. postprocess maps predictions back."""

    def __init__(self, min_size: int | tuple[int, ...], max_size: int, image_mean: list[float], image_std: list[float],
                 size_divisible: int = 32, fixed_size: tuple[int, int] | None = None, **kwargs: Any) -> None:
        super().__init__()
        if not isinstance(min_size, (list, tuple)):
            min_size = (min_size,)
        self.min_size = min_size
        self.max_size = max_size
        self.image_mean = image_mean
        self.image_std = image_std
        self.size_divisible = size_divisible
        self.fixed_size = fixed_size
        self._skip_resize = kwargs.pop("_skip_resize", False)

    def forward(self, images: list[ember.Tensor], targets: list[dict[str, ember.Tensor]] | None = None):
        images = list(images)
        if targets is not None:
            # Shallow copies: resizing replaces the entries, never the caller's dicts.
            targets = [dict(t) for t in targets]
        for i in range(len(images)):
            image = images[i]
            target = targets[i] if targets is not None else None
            if image.dim() != 3:
                raise ValueError(f"images is expected to be a list of 3d tensors of shape [C, H, W], got "
                                 f"{tuple(image.shape)}")
            image = self.normalize(image)
            image, target = self.resize(image, target)
            images[i] = image
            if targets is not None and target is not None:
                targets[i] = target
        image_sizes = [(int(img.shape[-2]), int(img.shape[-1])) for img in images]
        batched = self.batch_images(images, size_divisible=self.size_divisible)
        return ImageList(batched, image_sizes), targets

    def normalize(self, image: ember.Tensor) -> ember.Tensor:
        if not image.is_floating_point():
            raise TypeError(f"Expected input images to be of floating type (in range [0, 1]), but found type "
                            f"{image.dtype} instead")
        mean = ember.as_tensor(self.image_mean, dtype=image.dtype)
        std = ember.as_tensor(self.image_std, dtype=image.dtype)
        return (image - mean[:, None, None]) / std[:, None, None]

    def torch_choice(self, k: tuple[int, ...]) -> int:
        """A uniformly random element of k, drawn from ember's generator (ember.manual_seed fixes it)."""
        index = int(ember.empty(1).uniform_(0.0, float(len(k))).item())
        return k[min(index, len(k) - 1)]

    def resize(self, image: ember.Tensor, target: dict[str, ember.Tensor] | None = None):
        h, w = image.shape[-2:]
        if self.training:
            if self._skip_resize:
                return image, target
            size = self.torch_choice(self.min_size)
        else:
            size = self.min_size[-1]
        image, target = _resize_image_and_masks(image, size, self.max_size, target, self.fixed_size)
        if target is None:
            return image, target
        new_size = tuple(image.shape[-2:])
        target["boxes"] = resize_boxes(target["boxes"], (h, w), new_size)
        if "keypoints" in target:
            target["keypoints"] = resize_keypoints(target["keypoints"], (h, w), new_size)
        return image, target

    def max_by_axis(self, the_list: list[list[int]]) -> list[int]:
        return [max(sizes) for sizes in zip(*the_list, strict=True)]

    def batch_images(self, images: list[ember.Tensor], size_divisible: int = 32) -> ember.Tensor:
        """Zero-pad every image at the right and bottom to the batch's largest size, rounded up to a
        multiple of size_divisible, and stack them (padding keeps the gradient path to each image)."""
        max_size = self.max_by_axis([list(img.shape) for img in images])
        stride = float(size_divisible)
        max_size[1] = int(math.ceil(float(max_size[1]) / stride) * stride)
        max_size[2] = int(math.ceil(float(max_size[2]) / stride) * stride)
        padded = []
        for img in images:
            c, h, w = img.shape
            if c != max_size[0]:
                img = F.pad(img, [0, 0, 0, 0, 0, max_size[0] - c])
            padded.append(F.pad(img, [0, max_size[2] - w, 0, max_size[1] - h]))
        return ember.stack(padded, dim=0)

    def postprocess(self, result: list[dict[str, ember.Tensor]], image_shapes: list[tuple[int, int]],
                    original_image_sizes: list[tuple[int, int]]) -> list[dict[str, ember.Tensor]]:
        """Scale each image's predicted boxes (and keypoints; masks are pasted into the image) from the
        resized image back to the original; training results pass through."""
        if self.training:
            return result
        for i, (pred, im_s, o_im_s) in enumerate(zip(result, image_shapes, original_image_sizes, strict=True)):
            boxes = resize_boxes(pred["boxes"], im_s, o_im_s)
            result[i]["boxes"] = boxes
            if "masks" in pred:
                from .roi_heads import paste_masks_in_image
                result[i]["masks"] = paste_masks_in_image(pred["masks"], boxes, o_im_s)
            if "keypoints" in pred:
                result[i]["keypoints"] = resize_keypoints(pred["keypoints"], im_s, o_im_s)
        return result

    def __repr__(self) -> str:
        return (f"{self.__class__.__name__}(\n    Normalize(mean={self.image_mean}, std={self.image_std})\n"
                f"    Resize(min_size={self.min_size}, max_size={self.max_size}, mode='bilinear')\n)")
