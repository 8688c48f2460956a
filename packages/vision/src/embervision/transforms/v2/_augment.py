"""MixUp and CutMix on batches (torchvision.transforms.v2._augment)."""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Sequence
from typing import Any

import ember
import ember.nn.functional as nnF
from ember.distributions import Beta

from .. import _tv_tensors as tvt
from . import functional as F
from ._transform import Transform, _RandomApplyTransform
from ._utils import _parse_labels_getter, has_any, query_chw, query_size, tree_flatten, tree_unflatten
from .functional._utils import is_pure_tensor


class _BaseMixUpCutMix(Transform):
    def __init__(self, *, alpha: float = 1.0, num_classes: int, labels_getter: Any = "default") -> None:
        super().__init__()
        self.alpha = float(alpha)
        self._dist = Beta(ember.tensor([alpha]), ember.tensor([alpha]))
        self.num_classes = num_classes
        self._labels_getter = _parse_labels_getter(labels_getter)

    def forward(self, *inputs: Any) -> Any:
        inputs = inputs if len(inputs) > 1 else inputs[0]
        flat_inputs, spec = tree_flatten(inputs)
        needs = self._needs_transform_list(flat_inputs)
        if has_any(flat_inputs, tvt.BoundingBoxes, tvt.Mask):
            raise ValueError(f"{type(self).__name__}() does not support PIL images, bounding boxes and masks.")
        labels = self._labels_getter(inputs)
        if not isinstance(labels, ember.Tensor):
            raise ValueError(f"The labels must be a tensor, but got {type(labels)} instead.")
        if labels.ndim != 1:
            raise ValueError(f"labels tensor should be of shape (batch_size,) but got shape {tuple(labels.shape)} "
                             f"instead.")
        params = {"labels": labels, "batch_size": labels.shape[0],
                  **self._get_params([inpt for inpt, need in zip(flat_inputs, needs, strict=True) if need])}
        # The labels come after the images, so the plain-tensor rule skipped them: they are ours.
        needs[next(idx for idx, inpt in enumerate(flat_inputs) if inpt is labels)] = True
        outputs = [self._transform(inpt, params) if need else inpt for inpt, need in zip(flat_inputs, needs, strict=True)]
        return tree_unflatten(outputs, spec)

    def _check_image_or_video(self, inpt: ember.Tensor, *, batch_size: int) -> None:
        expected = 5 if isinstance(inpt, tvt.Video) else 4
        if inpt.ndim != expected:
            raise ValueError(f"Expected a batched input with {expected} dims, but got {inpt.ndim} dimensions instead.")
        if inpt.shape[0] != batch_size:
            raise ValueError(f"The batch size of the image or video does not match the batch size of the labels: "
                             f"{inpt.shape[0]} != {batch_size}.")

    def _mixup_label(self, label: ember.Tensor, *, lam: float) -> ember.Tensor:
        label = nnF.one_hot(label, num_classes=self.num_classes)
        if not label.is_floating_point():
            label = label.float()
        return label.roll(1, 0) * (1.0 - lam) + label * lam

    def _sample_lam(self) -> float:
        return float(self._dist.sample(()).item())


def _is_image_or_video(inpt: Any) -> bool:
    return isinstance(inpt, (tvt.Image, tvt.Video)) or is_pure_tensor(inpt)


class MixUp(_BaseMixUpCutMix):
    """MixUp (Zhang et al., 2017): each batch element blended with the previous one (a roll of the
    batch) by ``lam ~ Beta(alpha, alpha)``; labels become the same mix of one-hot vectors."""

    def _get_params(self, flat_inputs: list) -> dict:
        return dict(lam=self._sample_lam())

    def _transform(self, inpt: Any, params: dict) -> Any:
        lam = params["lam"]
        if inpt is params["labels"]:
            return self._mixup_label(inpt, lam=lam)
        if not _is_image_or_video(inpt):
            return inpt
        self._check_image_or_video(inpt, batch_size=params["batch_size"])
        plain = inpt.as_subclass(ember.Tensor) if isinstance(inpt, tvt.TVTensor) else inpt
        output = (plain.roll(1, 0) * (1.0 - lam) + plain * lam).to(plain.dtype)
        return tvt.wrap(output, like=inpt) if isinstance(inpt, tvt.TVTensor) else output


class CutMix(_BaseMixUpCutMix):
    """CutMix (Yun et al., 2019): a random box of area ``1 - lam`` pasted from the previous batch
    element; labels mixed by the box's actual area."""

    def _get_params(self, flat_inputs: list) -> dict:
        lam = self._sample_lam()
        height, width = query_size(flat_inputs)
        r_x = int(ember.randint(width, size=(1,)).item())
        r_y = int(ember.randint(height, size=(1,)).item())
        r = 0.5 * math.sqrt(1.0 - lam)
        r_w_half, r_h_half = int(r * width), int(r * height)
        x1, y1 = max(r_x - r_w_half, 0), max(r_y - r_h_half, 0)
        x2, y2 = min(r_x + r_w_half, width), min(r_y + r_h_half, height)
        lam_adjusted = float(1.0 - (x2 - x1) * (y2 - y1) / (width * height))
        return dict(box=(x1, y1, x2, y2), lam_adjusted=lam_adjusted)

    def _transform(self, inpt: Any, params: dict) -> Any:
        if inpt is params["labels"]:
            return self._mixup_label(inpt, lam=params["lam_adjusted"])
        if not _is_image_or_video(inpt):
            return inpt
        self._check_image_or_video(inpt, batch_size=params["batch_size"])
        x1, y1, x2, y2 = params["box"]
        plain = inpt.as_subclass(ember.Tensor) if isinstance(inpt, tvt.TVTensor) else inpt
        output = plain.clone()
        output[..., y1:y2, x1:x2] = plain.roll(1, 0)[..., y1:y2, x1:x2]
        return tvt.wrap(output, like=inpt) if isinstance(inpt, tvt.TVTensor) else output


class RandomErasing(_RandomApplyTransform):
    """With probability ``p``, erases a random window of ``scale`` times the area and ``ratio``
    aspect with ``value`` (a number, one per channel, or ``"random"``: standard normal noise)."""

    def __init__(self, p: float = 0.5, scale: Sequence[float] = (0.02, 0.33), ratio: Sequence[float] = (0.3, 3.3),
                 value: Any = 0.0, inplace: bool = False) -> None:
        super().__init__(p=p)
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("Argument value should be either a number or str or a sequence")
        if isinstance(value, str) and value != "random":
            raise ValueError("If value is str, it should be 'random'")
        if not isinstance(scale, Sequence):
            raise TypeError("Scale should be a sequence")
        if not isinstance(ratio, Sequence):
            raise TypeError("Ratio should be a sequence")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            warnings.warn("Scale and ratio should be of kind (min, max)", stacklevel=2)
        if scale[0] < 0 or scale[1] > 1:
            raise ValueError("Scale should be between 0 and 1")
        self.scale, self.ratio = scale, ratio
        if isinstance(value, (int, float)):
            self.value = [float(value)]
        elif isinstance(value, str):
            self.value = None
        else:
            self.value = [float(v) for v in value]
        self.inplace = inplace
        self._log_ratio = (math.log(ratio[0]), math.log(ratio[1]))

    def _call_kernel(self, functional: Any, inpt: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(inpt, (tvt.BoundingBoxes, tvt.Mask)):
            warnings.warn(f"{type(self).__name__}() is currently passing through inputs of type "
                          f"tv_tensors.{type(inpt).__name__}. This will likely change in the future.", stacklevel=2)
        return super()._call_kernel(functional, inpt, *args, **kwargs)

    def _get_params(self, flat_inputs: list) -> dict:
        img_c, img_h, img_w = query_chw(flat_inputs)
        if self.value is not None and len(self.value) not in (1, img_c):
            raise ValueError(f"If value is a sequence, it should have either a single value or {img_c} "
                             f"(number of inpt channels)")
        area = img_h * img_w
        for _ in range(10):
            erase_area = area * float(ember.empty(1, dtype=ember.float64).uniform_(*self.scale).item())
            aspect_ratio = math.exp(float(ember.empty(1, dtype=ember.float64).uniform_(*self._log_ratio).item()))
            h = int(round(math.sqrt(erase_area * aspect_ratio)))
            w = int(round(math.sqrt(erase_area / aspect_ratio)))
            if not (h < img_h and w < img_w):
                continue
            if self.value is None:
                v = ember.empty((img_c, h, w), dtype=ember.float32).normal_()
            else:
                v = ember.tensor(self.value)[:, None, None]
            i = int(ember.randint(0, img_h - h + 1, size=(1,)).item())
            j = int(ember.randint(0, img_w - w + 1, size=(1,)).item())
            return dict(i=i, j=j, h=h, w=w, v=v)
        return dict(i=0, j=0, h=img_h, w=img_w, v=None)

    def _transform(self, inpt: Any, params: dict) -> Any:
        if params["v"] is not None:
            inpt = self._call_kernel(F.erase, inpt, **params, inplace=self.inplace)
        return inpt
