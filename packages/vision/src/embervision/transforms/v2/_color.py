"""Color transforms: ColorJitter, Grayscale, RandomGrayscale and the random photometric ops."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ember

from . import functional as F
from ._transform import Transform, _RandomApplyTransform
from ._utils import query_chw


class Grayscale(Transform):
    """Converts RGB images to grayscale with ``num_output_channels`` (1 or 3)."""

    def __init__(self, num_output_channels: int = 1) -> None:
        super().__init__()
        self.num_output_channels = num_output_channels

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.rgb_to_grayscale, inpt, num_output_channels=self.num_output_channels)


class RandomGrayscale(_RandomApplyTransform):
    """With probability ``p`` (default 0.1), grayscale kept in the input's number of channels."""

    def __init__(self, p: float = 0.1) -> None:
        super().__init__(p=p)

    def _get_params(self, flat_inputs: list) -> dict:
        return dict(num_input_channels=query_chw(flat_inputs)[0])

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.rgb_to_grayscale, inpt, num_output_channels=params["num_input_channels"])


class ColorJitter(Transform):
    """Random brightness, contrast, saturation and hue, applied in a random order. A number ``x``
    means the factor range ``[max(0, 1 - x), 1 + x]`` (hue: ``[-x, x]``, within [-0.5, 0.5])."""

    def __init__(self, brightness: Any = None, contrast: Any = None, saturation: Any = None, hue: Any = None) -> None:
        super().__init__()
        self.brightness = self._check_input(brightness, "brightness")
        self.contrast = self._check_input(contrast, "contrast")
        self.saturation = self._check_input(saturation, "saturation")
        self.hue = self._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)

    @staticmethod
    def _check_input(value: Any, name: str, center: float = 1.0, bound: tuple = (0, float("inf")),
                     clip_first_on_zero: bool = True) -> tuple[float, float] | None:
        if value is None:
            return None
        if isinstance(value, (int, float)):
            if value < 0:
                raise ValueError(f"If {name} is a single number, it must be non negative.")
            value = [center - value, center + value]
            if clip_first_on_zero:
                value[0] = max(value[0], 0.0)
        elif isinstance(value, Sequence) and len(value) == 2:
            value = [float(v) for v in value]
        else:
            raise TypeError(f"{name}={value} should be a single number or a sequence with length 2.")
        if not bound[0] <= value[0] <= value[1] <= bound[1]:
            raise ValueError(f"{name} values should be between {bound}, but got {value}.")
        return None if value[0] == value[1] == center else (float(value[0]), float(value[1]))

    @staticmethod
    def _generate_value(left: float, right: float) -> float:
        return float(ember.empty(1, dtype=ember.float64).uniform_(left, right).item())

    def _get_params(self, flat_inputs: list) -> dict:
        fn_idx = ember.randperm(4).tolist()
        return dict(
            fn_idx=fn_idx,
            brightness_factor=None if self.brightness is None else self._generate_value(*self.brightness),
            contrast_factor=None if self.contrast is None else self._generate_value(*self.contrast),
            saturation_factor=None if self.saturation is None else self._generate_value(*self.saturation),
            hue_factor=None if self.hue is None else self._generate_value(*self.hue),
        )

    def _transform(self, inpt: Any, params: dict) -> Any:
        output = inpt
        for fn_id in params["fn_idx"]:
            if fn_id == 0 and params["brightness_factor"] is not None:
                output = self._call_kernel(F.adjust_brightness, output, brightness_factor=params["brightness_factor"])
            elif fn_id == 1 and params["contrast_factor"] is not None:
                output = self._call_kernel(F.adjust_contrast, output, contrast_factor=params["contrast_factor"])
            elif fn_id == 2 and params["saturation_factor"] is not None:
                output = self._call_kernel(F.adjust_saturation, output, saturation_factor=params["saturation_factor"])
            elif fn_id == 3 and params["hue_factor"] is not None:
                output = self._call_kernel(F.adjust_hue, output, hue_factor=params["hue_factor"])
        return output


class RandomPosterize(_RandomApplyTransform):
    """With probability ``p``, keeps the top ``bits`` bits."""

    def __init__(self, bits: int, p: float = 0.5) -> None:
        super().__init__(p=p)
        self.bits = bits

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.posterize, inpt, bits=self.bits)


class RandomSolarize(_RandomApplyTransform):
    """With probability ``p``, inverts values at or above ``threshold``."""

    def __init__(self, threshold: float, p: float = 0.5) -> None:
        super().__init__(p=p)
        self.threshold = threshold

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.solarize, inpt, threshold=self.threshold)


class RandomAutocontrast(_RandomApplyTransform):
    """With probability ``p``, stretches each channel to the full range."""

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.autocontrast, inpt)


class RandomAdjustSharpness(_RandomApplyTransform):
    """With probability ``p``, sharpens by ``sharpness_factor`` (0 blurs, 1 keeps, 2 doubles)."""

    def __init__(self, sharpness_factor: float, p: float = 0.5) -> None:
        super().__init__(p=p)
        self.sharpness_factor = sharpness_factor

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.adjust_sharpness, inpt, sharpness_factor=self.sharpness_factor)


class RandomEqualize(_RandomApplyTransform):
    """With probability ``p``, equalizes the histogram."""

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.equalize, inpt)


class RandomInvert(_RandomApplyTransform):
    """With probability ``p``, inverts the colors."""

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.invert, inpt)


class RandomChannelPermutation(Transform):
    """Shuffles the channels of images and videos."""

    def _get_params(self, flat_inputs: list) -> dict:
        return dict(permutation=ember.randperm(query_chw(flat_inputs)[0]))

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.permute_channels, inpt, params["permutation"])


class RandomPhotometricDistort(Transform):
    """SSD's photometric distortion: brightness, contrast (before or after the rest), saturation,
    hue and a channel shuffle, each applied with probability ``p`` with a factor from its range."""

    def __init__(self, brightness: tuple[float, float] = (0.875, 1.125), contrast: tuple[float, float] = (0.5, 1.5),
                 saturation: tuple[float, float] = (0.5, 1.5), hue: tuple[float, float] = (-0.05, 0.05),
                 p: float = 0.5) -> None:
        super().__init__()
        self.brightness = ColorJitter._check_input(brightness, "brightness")
        self.contrast = ColorJitter._check_input(contrast, "contrast")
        self.hue = ColorJitter._check_input(hue, "hue", center=0, bound=(-0.5, 0.5), clip_first_on_zero=False)
        self.saturation = ColorJitter._check_input(saturation, "saturation")
        self.p = p

    def _get_params(self, flat_inputs: list) -> dict:
        num_channels = query_chw(flat_inputs)[0]
        params: dict[str, Any] = {}
        for key, value_range in (("brightness_factor", self.brightness), ("contrast_factor", self.contrast),
                                 ("saturation_factor", self.saturation), ("hue_factor", self.hue)):
            apply = float(ember.rand(1).item()) < self.p
            params[key] = ColorJitter._generate_value(*value_range) if apply and value_range is not None else None
        params["contrast_before"] = float(ember.rand(()).item()) < 0.5
        params["channel_permutation"] = ember.randperm(num_channels) if float(ember.rand(1).item()) < self.p else None
        return params

    def _transform(self, inpt: Any, params: dict) -> Any:
        if params["brightness_factor"] is not None:
            inpt = self._call_kernel(F.adjust_brightness, inpt, brightness_factor=params["brightness_factor"])
        if params["contrast_factor"] is not None and params["contrast_before"]:
            inpt = self._call_kernel(F.adjust_contrast, inpt, contrast_factor=params["contrast_factor"])
        if params["saturation_factor"] is not None:
            inpt = self._call_kernel(F.adjust_saturation, inpt, saturation_factor=params["saturation_factor"])
        if params["hue_factor"] is not None:
            inpt = self._call_kernel(F.adjust_hue, inpt, hue_factor=params["hue_factor"])
        if params["contrast_factor"] is not None and not params["contrast_before"]:
            inpt = self._call_kernel(F.adjust_contrast, inpt, contrast_factor=params["contrast_factor"])
        if params["channel_permutation"] is not None:
            inpt = self._call_kernel(F.permute_channels, inpt, permutation=params["channel_permutation"])
        return inpt
