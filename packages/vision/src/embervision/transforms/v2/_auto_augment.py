"""AutoAugment, RandAugment, TrivialAugmentWide, AugMix: random chains of photometric and
geometric ops with magnitudes from fixed bins (torchvision.transforms.v2._auto_augment).

They act on the sample's one image or video (uint8 ``[..., 1 or 3, H, W]`` is the usual input);
boxes and masks are refused, as in torchvision.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from enum import Enum
from typing import Any

import ember
from ember.distributions import Dirichlet

from .. import _tv_tensors as tvt
from .._modes import InterpolationMode, _check_interpolation
from . import functional as F
from ._transform import Transform
from ._utils import _get_fill, _setup_fill_arg, check_type, tree_flatten, tree_unflatten
from .functional._utils import _max_value, is_pure_tensor


class AutoAugmentPolicy(Enum):
    """The policies learned on ImageNet, CIFAR10 and SVHN."""

    IMAGENET = "imagenet"
    CIFAR10 = "cifar10"
    SVHN = "svhn"


def _linspace(start: float, end: float) -> Callable[[int, int, int], ember.Tensor]:
    return lambda num_bins, height, width: ember.linspace(start, end, num_bins)


def _posterize_bits(top: int, span: int) -> Callable[[int, int, int], ember.Tensor]:
    # bits from `top` down to `top - span` over the bins
    return lambda num_bins, height, width: (top - ember.arange(num_bins) / ((num_bins - 1) / span)).round().int()


def _none(num_bins: int, height: int, width: int) -> None:
    return None


# name -> (magnitudes(num_bins, height, width) or None, signed)
_CLASSIC_SPACE = {
    "ShearX": (_linspace(0.0, 0.3), True),
    "ShearY": (_linspace(0.0, 0.3), True),
    "TranslateX": (lambda n, h, w: ember.linspace(0.0, 150.0 / 331.0 * w, n), True),
    "TranslateY": (lambda n, h, w: ember.linspace(0.0, 150.0 / 331.0 * h, n), True),
    "Rotate": (_linspace(0.0, 30.0), True),
    "Brightness": (_linspace(0.0, 0.9), True),
    "Color": (_linspace(0.0, 0.9), True),
    "Contrast": (_linspace(0.0, 0.9), True),
    "Sharpness": (_linspace(0.0, 0.9), True),
    "Posterize": (_posterize_bits(8, 4), False),
    "Solarize": (_linspace(1.0, 0.0), False),
    "AutoContrast": (_none, False),
    "Equalize": (_none, False),
}


class _AutoAugmentBase(Transform):
    def __init__(self, *, interpolation: Any = InterpolationMode.NEAREST, fill: Any = None) -> None:
        super().__init__()
        self.interpolation = _check_interpolation(interpolation)
        self.fill = fill
        self._fill = _setup_fill_arg(fill)

    @staticmethod
    def _get_random_item(dct: dict) -> tuple[str, Any]:
        keys = tuple(dct.keys())
        key = keys[int(ember.randint(len(keys), ()).item())]
        return key, dct[key]

    @staticmethod
    def _coin(probability: float) -> bool:
        return float(ember.rand(()).item()) <= probability

    def _flatten_and_extract_image_or_video(self, inputs: tuple,
                                            unsupported_types: tuple = (tvt.BoundingBoxes, tvt.Mask)) -> tuple:
        flat_inputs, spec = tree_flatten(inputs if len(inputs) > 1 else inputs[0])
        needs = self._needs_transform_list(flat_inputs)
        found = []
        for idx, (inpt, need) in enumerate(zip(flat_inputs, needs, strict=True)):
            if need and check_type(inpt, (tvt.Image, is_pure_tensor, tvt.Video)):
                found.append((idx, inpt))
            elif isinstance(inpt, unsupported_types):
                raise TypeError(f"Inputs of type {type(inpt).__name__} are not supported by {type(self).__name__}()")
        if not found:
            raise TypeError("Found no image in the sample.")
        if len(found) > 1:
            raise TypeError(f"Auto augment transformations are only properly defined for a single image or video, "
                            f"but found {len(found)}.")
        idx, image = found[0]
        return (flat_inputs, spec, idx), image

    @staticmethod
    def _unflatten_and_insert_image_or_video(flat_inputs_with_spec: tuple, image: Any) -> Any:
        flat_inputs, spec, idx = flat_inputs_with_spec
        flat_inputs[idx] = image
        return tree_unflatten(flat_inputs, spec)

    def _draw_magnitude(self, magnitudes_fn: Callable, signed: bool, num_bins: int, index: int | None,
                        height: int, width: int) -> float:
        magnitudes = magnitudes_fn(num_bins, height, width)
        if magnitudes is None:
            return 0.0
        if index is None:
            index = int(ember.randint(num_bins, ()).item())
        magnitude = float(magnitudes[index].item())
        if signed and self._coin(0.5):
            magnitude *= -1
        return magnitude

    def _apply_image_or_video_transform(self, image: Any, transform_id: str, magnitude: float) -> Any:
        fill = _get_fill(self._fill, type(image))
        interpolation = self.interpolation
        if transform_id == "Identity":
            return image
        if transform_id in ("ShearX", "ShearY"):
            # The AutoAugment papers shear by `magnitude` as a matrix entry; F.affine takes degrees.
            degrees = math.degrees(math.atan(magnitude))
            shear = [degrees, 0.0] if transform_id == "ShearX" else [0.0, degrees]
            return F.affine(image, angle=0.0, translate=[0, 0], scale=1.0, shear=shear, interpolation=interpolation,
                            fill=fill, center=[0, 0])
        if transform_id in ("TranslateX", "TranslateY"):
            translate = [int(magnitude), 0] if transform_id == "TranslateX" else [0, int(magnitude)]
            return F.affine(image, angle=0.0, translate=translate, scale=1.0, shear=[0.0, 0.0],
                            interpolation=interpolation, fill=fill)
        if transform_id == "Rotate":
            return F.rotate(image, angle=magnitude, interpolation=interpolation, fill=fill)
        if transform_id == "Brightness":
            return F.adjust_brightness(image, brightness_factor=1.0 + magnitude)
        if transform_id == "Color":
            return F.adjust_saturation(image, saturation_factor=1.0 + magnitude)
        if transform_id == "Contrast":
            return F.adjust_contrast(image, contrast_factor=1.0 + magnitude)
        if transform_id == "Sharpness":
            return F.adjust_sharpness(image, sharpness_factor=1.0 + magnitude)
        if transform_id == "Posterize":
            return F.posterize(image, bits=int(magnitude))
        if transform_id == "Solarize":
            return F.solarize(image, threshold=_max_value(image.dtype) * magnitude)
        if transform_id == "AutoContrast":
            return F.autocontrast(image)
        if transform_id == "Equalize":
            return F.equalize(image)
        if transform_id == "Invert":
            return F.invert(image)
        raise ValueError(f"No transform available for {transform_id}")


_IMAGENET_POLICY = [
    (("Posterize", 0.4, 8), ("Rotate", 0.6, 9)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
    (("Equalize", 0.8, None), ("Equalize", 0.6, None)), (("Posterize", 0.6, 7), ("Posterize", 0.6, 6)),
    (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Equalize", 0.4, None), ("Rotate", 0.8, 8)),
    (("Solarize", 0.6, 3), ("Equalize", 0.6, None)), (("Posterize", 0.8, 5), ("Equalize", 1.0, None)),
    (("Rotate", 0.2, 3), ("Solarize", 0.6, 8)), (("Equalize", 0.6, None), ("Posterize", 0.4, 6)),
    (("Rotate", 0.8, 8), ("Color", 0.4, 0)), (("Rotate", 0.4, 9), ("Equalize", 0.6, None)),
    (("Equalize", 0.0, None), ("Equalize", 0.8, None)), (("Invert", 0.6, None), ("Equalize", 1.0, None)),
    (("Color", 0.6, 4), ("Contrast", 1.0, 8)), (("Rotate", 0.8, 8), ("Color", 1.0, 2)),
    (("Color", 0.8, 8), ("Solarize", 0.8, 7)), (("Sharpness", 0.4, 7), ("Invert", 0.6, None)),
    (("ShearX", 0.6, 5), ("Equalize", 1.0, None)), (("Color", 0.4, 0), ("Equalize", 0.6, None)),
    (("Equalize", 0.4, None), ("Solarize", 0.2, 4)), (("Solarize", 0.6, 5), ("AutoContrast", 0.6, None)),
    (("Invert", 0.6, None), ("Equalize", 1.0, None)), (("Color", 0.6, 4), ("Contrast", 1.0, 8)),
    (("Equalize", 0.8, None), ("Equalize", 0.6, None)),
]
_CIFAR10_POLICY = [
    (("Invert", 0.1, None), ("Contrast", 0.2, 6)), (("Rotate", 0.7, 2), ("TranslateX", 0.3, 9)),
    (("Sharpness", 0.8, 1), ("Sharpness", 0.9, 3)), (("ShearY", 0.5, 8), ("TranslateY", 0.7, 9)),
    (("AutoContrast", 0.5, None), ("Equalize", 0.9, None)), (("ShearY", 0.2, 7), ("Posterize", 0.3, 7)),
    (("Color", 0.4, 3), ("Brightness", 0.6, 7)), (("Sharpness", 0.3, 9), ("Brightness", 0.7, 9)),
    (("Equalize", 0.6, None), ("Equalize", 0.5, None)), (("Contrast", 0.6, 7), ("Sharpness", 0.6, 5)),
    (("Color", 0.7, 7), ("TranslateX", 0.5, 8)), (("Equalize", 0.3, None), ("AutoContrast", 0.4, None)),
    (("TranslateY", 0.4, 3), ("Sharpness", 0.2, 6)), (("Brightness", 0.9, 6), ("Color", 0.2, 8)),
    (("Solarize", 0.5, 2), ("Invert", 0.0, None)), (("Equalize", 0.2, None), ("AutoContrast", 0.6, None)),
    (("Equalize", 0.2, None), ("Equalize", 0.6, None)), (("Color", 0.9, 9), ("Equalize", 0.6, None)),
    (("AutoContrast", 0.8, None), ("Solarize", 0.2, 8)), (("Brightness", 0.1, 3), ("Color", 0.7, 0)),
    (("Solarize", 0.4, 5), ("AutoContrast", 0.9, None)), (("TranslateY", 0.9, 9), ("TranslateY", 0.7, 9)),
    (("AutoContrast", 0.9, None), ("Solarize", 0.8, 3)), (("Equalize", 0.8, None), ("Invert", 0.1, None)),
    (("TranslateY", 0.7, 9), ("AutoContrast", 0.9, None)),
]
_SVHN_POLICY = [
    (("ShearX", 0.9, 4), ("Invert", 0.2, None)), (("ShearY", 0.9, 8), ("Invert", 0.7, None)),
    (("Equalize", 0.6, None), ("Solarize", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
    (("Equalize", 0.6, None), ("Rotate", 0.9, 3)), (("ShearX", 0.9, 4), ("AutoContrast", 0.8, None)),
    (("ShearY", 0.9, 8), ("Invert", 0.4, None)), (("ShearY", 0.9, 5), ("Solarize", 0.2, 6)),
    (("Invert", 0.9, None), ("AutoContrast", 0.8, None)), (("Equalize", 0.6, None), ("Rotate", 0.9, 3)),
    (("ShearX", 0.9, 4), ("Solarize", 0.3, 3)), (("ShearY", 0.8, 8), ("Invert", 0.7, None)),
    (("Equalize", 0.9, None), ("TranslateY", 0.6, 6)), (("Invert", 0.9, None), ("Equalize", 0.6, None)),
    (("Contrast", 0.3, 3), ("Rotate", 0.8, 4)), (("Invert", 0.8, None), ("TranslateY", 0.0, 2)),
    (("ShearY", 0.7, 6), ("Solarize", 0.4, 8)), (("Invert", 0.6, None), ("Rotate", 0.8, 4)),
    (("ShearY", 0.3, 7), ("TranslateX", 0.9, 3)), (("ShearX", 0.1, 6), ("Invert", 0.6, None)),
    (("Solarize", 0.7, 2), ("TranslateY", 0.6, 7)), (("ShearY", 0.8, 4), ("Invert", 0.8, None)),
    (("ShearX", 0.7, 9), ("TranslateY", 0.8, 3)), (("ShearY", 0.8, 5), ("AutoContrast", 0.7, None)),
    (("ShearX", 0.7, 2), ("Invert", 0.1, None)),
]
_POLICIES = {AutoAugmentPolicy.IMAGENET: _IMAGENET_POLICY, AutoAugmentPolicy.CIFAR10: _CIFAR10_POLICY,
             AutoAugmentPolicy.SVHN: _SVHN_POLICY}


class AutoAugment(_AutoAugmentBase):
    """AutoAugment (Cubuk et al., 2018): one of ``policy``'s 25 sub-policies per call, each two ops
    with their own probability and magnitude bin."""

    _AUGMENTATION_SPACE = {**_CLASSIC_SPACE, "Invert": (_none, False)}

    def __init__(self, policy: AutoAugmentPolicy = AutoAugmentPolicy.IMAGENET,
                 interpolation: Any = InterpolationMode.NEAREST, fill: Any = None) -> None:
        super().__init__(interpolation=interpolation, fill=fill)
        if policy not in _POLICIES:
            raise ValueError(f"The provided policy {policy} is not recognized.")
        self.policy = policy
        self._policies = _POLICIES[policy]

    def forward(self, *inputs: Any) -> Any:
        flat_with_spec, image = self._flatten_and_extract_image_or_video(inputs)
        height, width = F.get_size(image)
        policy = self._policies[int(ember.randint(len(self._policies), ()).item())]
        for transform_id, probability, magnitude_idx in policy:
            if not self._coin(probability):
                continue
            magnitudes_fn, signed = self._AUGMENTATION_SPACE[transform_id]
            magnitude = self._draw_magnitude(magnitudes_fn, signed, 10, magnitude_idx, height, width)
            image = self._apply_image_or_video_transform(image, transform_id, magnitude)
        return self._unflatten_and_insert_image_or_video(flat_with_spec, image)


class RandAugment(_AutoAugmentBase):
    """RandAugment (Cubuk et al., 2019): ``num_ops`` ops drawn uniformly, all at ``magnitude`` of
    ``num_magnitude_bins``."""

    _AUGMENTATION_SPACE = {"Identity": (_none, False), **_CLASSIC_SPACE}

    def __init__(self, num_ops: int = 2, magnitude: int = 9, num_magnitude_bins: int = 31,
                 interpolation: Any = InterpolationMode.NEAREST, fill: Any = None) -> None:
        super().__init__(interpolation=interpolation, fill=fill)
        if not isinstance(num_ops, int) or num_ops < 0:
            raise ValueError(f"num_ops should be a non-negative integer, but got {num_ops} instead.")
        if not 0 <= magnitude < num_magnitude_bins:
            raise ValueError(f"magnitude must be in [0, {num_magnitude_bins}), but got {magnitude}.")
        self.num_ops, self.magnitude, self.num_magnitude_bins = num_ops, magnitude, num_magnitude_bins

    def forward(self, *inputs: Any) -> Any:
        flat_with_spec, image = self._flatten_and_extract_image_or_video(inputs)
        height, width = F.get_size(image)
        for _ in range(self.num_ops):
            transform_id, (magnitudes_fn, signed) = self._get_random_item(self._AUGMENTATION_SPACE)
            magnitude = self._draw_magnitude(magnitudes_fn, signed, self.num_magnitude_bins, self.magnitude, height,
                                             width)
            image = self._apply_image_or_video_transform(image, transform_id, magnitude)
        return self._unflatten_and_insert_image_or_video(flat_with_spec, image)


class TrivialAugmentWide(_AutoAugmentBase):
    """TrivialAugment Wide (Müller and Hutter, 2021): one op, one random magnitude, wide ranges."""

    _AUGMENTATION_SPACE = {
        "Identity": (_none, False),
        "ShearX": (_linspace(0.0, 0.99), True),
        "ShearY": (_linspace(0.0, 0.99), True),
        "TranslateX": (_linspace(0.0, 32.0), True),
        "TranslateY": (_linspace(0.0, 32.0), True),
        "Rotate": (_linspace(0.0, 135.0), True),
        "Brightness": (_linspace(0.0, 0.99), True),
        "Color": (_linspace(0.0, 0.99), True),
        "Contrast": (_linspace(0.0, 0.99), True),
        "Sharpness": (_linspace(0.0, 0.99), True),
        "Posterize": (_posterize_bits(8, 6), False),
        "Solarize": (_linspace(1.0, 0.0), False),
        "AutoContrast": (_none, False),
        "Equalize": (_none, False),
    }

    def __init__(self, num_magnitude_bins: int = 31, interpolation: Any = InterpolationMode.NEAREST,
                 fill: Any = None) -> None:
        super().__init__(interpolation=interpolation, fill=fill)
        self.num_magnitude_bins = num_magnitude_bins

    def forward(self, *inputs: Any) -> Any:
        flat_with_spec, image = self._flatten_and_extract_image_or_video(inputs)
        height, width = F.get_size(image)
        transform_id, (magnitudes_fn, signed) = self._get_random_item(self._AUGMENTATION_SPACE)
        magnitude = self._draw_magnitude(magnitudes_fn, signed, self.num_magnitude_bins, None, height, width)
        image = self._apply_image_or_video_transform(image, transform_id, magnitude)
        return self._unflatten_and_insert_image_or_video(flat_with_spec, image)


class AugMix(_AutoAugmentBase):
    """AugMix (Hendrycks et al., 2020): ``mixture_width`` chains of 1-3 (or ``chain_depth``) ops,
    mixed with Dirichlet weights, then blended with the original by a Beta weight."""

    _PARTIAL_AUGMENTATION_SPACE = {
        "ShearX": (_linspace(0.0, 0.3), True),
        "ShearY": (_linspace(0.0, 0.3), True),
        "TranslateX": (lambda n, h, w: ember.linspace(0.0, w / 3.0, n), True),
        "TranslateY": (lambda n, h, w: ember.linspace(0.0, h / 3.0, n), True),
        "Rotate": (_linspace(0.0, 30.0), True),
        "Posterize": (_posterize_bits(4, 4), False),
        "Solarize": (_linspace(1.0, 0.0), False),
        "AutoContrast": (_none, False),
        "Equalize": (_none, False),
    }
    _AUGMENTATION_SPACE = {
        **_PARTIAL_AUGMENTATION_SPACE,
        "Brightness": (_linspace(0.0, 0.9), True),
        "Color": (_linspace(0.0, 0.9), True),
        "Contrast": (_linspace(0.0, 0.9), True),
        "Sharpness": (_linspace(0.0, 0.9), True),
    }
    _PARAMETER_MAX = 10

    def __init__(self, severity: int = 3, mixture_width: int = 3, chain_depth: int = -1, alpha: float = 1.0,
                 all_ops: bool = True, interpolation: Any = InterpolationMode.BILINEAR, fill: Any = None) -> None:
        super().__init__(interpolation=interpolation, fill=fill)
        if not (1 <= severity <= self._PARAMETER_MAX):
            raise ValueError(f"The severity must be between [1, {self._PARAMETER_MAX}]. Got {severity} instead.")
        self.severity, self.mixture_width, self.chain_depth = severity, mixture_width, chain_depth
        self.alpha, self.all_ops = alpha, all_ops

    def forward(self, *inputs: Any) -> Any:
        flat_with_spec, orig = self._flatten_and_extract_image_or_video(inputs)
        height, width = F.get_size(orig)
        image = orig.as_subclass(ember.Tensor) if isinstance(orig, tvt.TVTensor) else orig
        space = self._AUGMENTATION_SPACE if self.all_ops else self._PARTIAL_AUGMENTATION_SPACE
        orig_dims = list(image.shape)
        expected_ndim = 5 if isinstance(orig, tvt.Video) else 4
        batch = image.reshape([1] * max(expected_ndim - image.ndim, 0) + orig_dims)
        batch_dims = [batch.shape[0]] + [1] * (batch.ndim - 1)
        # Beta(alpha, alpha) as a two-way Dirichlet: weight of the original (column 0) and of the mix
        m = Dirichlet(ember.tensor([self.alpha, self.alpha]).expand(batch_dims[0], 2)).sample()
        weights = Dirichlet(ember.tensor([self.alpha] * self.mixture_width).expand(batch_dims[0], self.mixture_width)
                            ).sample() * m[:, 1].reshape(batch_dims[0], 1)
        mix = m[:, 0].reshape(batch_dims) * batch
        for i in range(self.mixture_width):
            aug = batch
            depth = self.chain_depth if self.chain_depth > 0 else int(ember.randint(1, 4, (1,)).item())
            for _ in range(depth):
                transform_id, (magnitudes_fn, signed) = self._get_random_item(space)
                magnitude = self._draw_magnitude(magnitudes_fn, signed, self._PARAMETER_MAX,
                                                 int(ember.randint(self.severity, ()).item()), height, width)
                aug = self._apply_image_or_video_transform(aug, transform_id, magnitude)
            mix = mix + weights[:, i].reshape(batch_dims) * aug
        mix = mix.reshape(orig_dims).to(image.dtype)
        if isinstance(orig, tvt.TVTensor):
            mix = tvt.wrap(mix, like=orig)
        return self._unflatten_and_insert_image_or_video(flat_with_spec, mix)
