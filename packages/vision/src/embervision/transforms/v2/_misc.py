"""Normalize, GaussianBlur, ToDtype, Lambda, SanitizeBoundingBoxes."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import ember

from .. import _tv_tensors as tvt
from . import functional as F
from ._transform import Transform
from ._utils import (
    _parse_labels_getter,
    _setup_number_or_seq,
    _setup_size,
    get_bounding_boxes,
    tree_flatten,
    tree_unflatten,
)
from .functional._utils import is_pure_tensor


class Lambda(Transform):
    """Applies ``lambd`` to the inputs of ``types`` (default: every input)."""

    _transformed_types = (object,)

    def __init__(self, lambd: Callable[[Any], Any], *types: type) -> None:
        super().__init__()
        if not callable(lambd):
            raise TypeError(f"Argument lambd should be callable, got {type(lambd).__name__!r}")
        self.lambd = lambd
        self.types = types or self._transformed_types

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self.lambd(inpt) if isinstance(inpt, self.types) else inpt


class Normalize(Transform):
    """``(x - mean) / std`` per channel of float images and videos."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        super().__init__()
        self.mean, self.std, self.inplace = list(mean), list(std), inplace

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.normalize, inpt, mean=self.mean, std=self.std, inplace=self.inplace)


class GaussianBlur(Transform):
    """Blurs with a Gaussian of ``kernel_size`` and a random sigma in ``sigma`` (min, max)."""

    def __init__(self, kernel_size: Any, sigma: Any = (0.1, 2.0)) -> None:
        super().__init__()
        self.kernel_size = _setup_size(kernel_size, "Kernel size should be a tuple/list of two integers")
        for ks in self.kernel_size:
            if ks <= 0 or ks % 2 == 0:
                raise ValueError("Kernel size value should be an odd and positive number.")
        self.sigma = _setup_number_or_seq(sigma, "sigma")
        if not 0.0 < self.sigma[0] <= self.sigma[1]:
            raise ValueError(f"sigma values should be positive and of the form (min, max). Got {self.sigma}")

    def _get_params(self, flat_inputs: list) -> dict:
        sigma = float(ember.empty(1, dtype=ember.float64).uniform_(self.sigma[0], self.sigma[1]).item())
        return dict(sigma=[sigma, sigma])

    def _transform(self, inpt: Any, params: dict) -> Any:
        return self._call_kernel(F.gaussian_blur, inpt, self.kernel_size, **params)


class ToDtype(Transform):
    """Converts to ``dtype`` (one dtype: images and videos only; or a dict from input type, with
    an ``"others"`` key, to dtype); ``scale=True`` maps value ranges (images and videos)."""

    def __init__(self, dtype: Any, scale: bool = False) -> None:
        super().__init__()
        if not isinstance(dtype, (dict, ember.dtype)):
            raise ValueError(f"dtype must be a dict or a ember.dtype, got {type(dtype)} instead")
        if isinstance(dtype, dict) and ember.Tensor in dtype and any(
                cls in dtype for cls in (tvt.Image, tvt.Video)):
            warnings.warn("Got `dtype` values for `ember.Tensor` and either `tv_tensors.Image` or "
                          "`tv_tensors.Video`. Note that a plain `ember.Tensor` will *not* be transformed by this "
                          "(or any other transformation) in case a `tv_tensors.Image` or `tv_tensors.Video` is "
                          "present in the input.", stacklevel=2)
        self.dtype, self.scale = dtype, scale

    def _transform(self, inpt: Any, params: dict) -> Any:
        if isinstance(self.dtype, ember.dtype):
            # one dtype: only images and videos, as ConvertImageDtype
            if not is_pure_tensor(inpt) and not isinstance(inpt, (tvt.Image, tvt.Video)):
                return inpt
            dtype = self.dtype
        elif type(inpt) in self.dtype:
            dtype = self.dtype[type(inpt)]
        elif "others" in self.dtype:
            dtype = self.dtype["others"]
        else:
            raise ValueError(f"No dtype was specified for type {type(inpt)}. If you only need to convert the dtype "
                             f"of images or videos, you can just pass e.g. dtype=ember.float32. If you're passing a "
                             f"dict as dtype, you can use \"others\" as a catch-all key e.g. "
                             f"dtype={{tv_tensors.Mask: ember.int64, \"others\": None}} to pass-through the rest of "
                             f"the inputs.")
        supports_scaling = is_pure_tensor(inpt) or isinstance(inpt, (tvt.Image, tvt.Video))
        if dtype is None:
            if self.scale and supports_scaling:
                warnings.warn("scale was set to True but no dtype was specified for images or videos: no scaling "
                              "will be done.", stacklevel=2)
            return inpt
        return self._call_kernel(F.to_dtype, inpt, dtype=dtype, scale=self.scale)


class ConvertImageDtype(Transform):
    """The v1 name: ``ToDtype(dtype, scale=True)`` on images."""

    def __init__(self, dtype: Any = ember.float32) -> None:
        super().__init__()
        self.dtype = dtype

    def _transform(self, inpt: Any, params: dict) -> Any:
        if not is_pure_tensor(inpt) and not isinstance(inpt, (tvt.Image, tvt.Video)):
            return inpt
        return self._call_kernel(F.to_dtype, inpt, dtype=self.dtype, scale=True)


class SanitizeBoundingBoxes(Transform):
    """Removes boxes smaller than ``min_size`` (either side) or outside the canvas, and the matching
    masks and labels (found by ``labels_getter``: by default a ``"labels"`` key)."""

    def __init__(self, min_size: float = 1.0, labels_getter: Any = "default") -> None:
        super().__init__()
        if min_size < 1:
            raise ValueError(f"min_size must be >= 1, got {min_size}.")
        self.min_size = min_size
        self.labels_getter = labels_getter
        self._labels_getter = _parse_labels_getter(labels_getter)

    def forward(self, *inputs: Any) -> Any:
        inputs = inputs if len(inputs) > 1 else inputs[0]
        labels = self._labels_getter(inputs)
        if labels is not None and not isinstance(labels, ember.Tensor):
            raise ValueError(f"The labels in the input to forward() must be a tensor or None, got {type(labels)} "
                             f"instead.")
        flat_inputs, spec = tree_flatten(inputs)
        boxes = get_bounding_boxes(flat_inputs)
        if labels is not None and boxes.shape[0] != labels.shape[0]:
            raise ValueError(f"Number of boxes (shape={tuple(boxes.shape)}) and number of labels "
                             f"(shape={tuple(labels.shape)}) do not match.")
        xyxy = F.convert_bounding_box_format(boxes, new_format=tvt.BoundingBoxFormat.XYXY).as_subclass(ember.Tensor)
        ws, hs = xyxy[:, 2] - xyxy[:, 0], xyxy[:, 3] - xyxy[:, 1]
        valid = (ws >= self.min_size) & (hs >= self.min_size) & (xyxy >= 0).all(dim=-1)
        image_h, image_w = boxes.canvas_size
        valid &= (xyxy[:, 0] <= image_w) & (xyxy[:, 2] <= image_w)
        valid &= (xyxy[:, 1] <= image_h) & (xyxy[:, 3] <= image_h)
        params = dict(valid=valid, labels=labels)
        return tree_unflatten([self._transform(inpt, params) for inpt in flat_inputs], spec)

    def _transform(self, inpt: Any, params: dict) -> Any:
        is_label = inpt is not None and inpt is params["labels"]
        if not (is_label or isinstance(inpt, (tvt.BoundingBoxes, tvt.Mask))):
            return inpt
        output = inpt.as_subclass(ember.Tensor)[params["valid"]] if not is_label else inpt[params["valid"]]
        return output if is_label else tvt.wrap(output, like=inpt)


class LinearTransformation(Transform):
    """Flattens each image, subtracts ``mean_vector`` and multiplies by ``transformation_matrix``
    (e.g. ZCA whitening), then restores the shape."""

    _transformed_types = (ember.Tensor,)

    def __init__(self, transformation_matrix: ember.Tensor, mean_vector: ember.Tensor) -> None:
        super().__init__()
        if transformation_matrix.shape[0] != transformation_matrix.shape[1]:
            raise ValueError(f"transformation_matrix should be square. Got {tuple(transformation_matrix.shape)} "
                             f"rectangular matrix.")
        if mean_vector.shape[0] != transformation_matrix.shape[0]:
            raise ValueError(f"mean_vector should have the same length {mean_vector.shape[0]} as any one of the "
                             f"dimensions of the transformation_matrix [{tuple(transformation_matrix.shape)}]")
        self.transformation_matrix, self.mean_vector = transformation_matrix, mean_vector

    def _transform(self, inpt: Any, params: dict) -> Any:
        if not (is_pure_tensor(inpt) or isinstance(inpt, (tvt.Image, tvt.Video))):
            return inpt
        plain = inpt.as_subclass(ember.Tensor) if isinstance(inpt, tvt.TVTensor) else inpt
        shape = tuple(plain.shape)
        n = shape[-3] * shape[-2] * shape[-1]
        if n != self.transformation_matrix.shape[0]:
            raise ValueError(f"Input tensor and transformation matrix have incompatible shape."
                             f"[{shape[-3]} x {shape[-2]} x {shape[-1]}] != {self.transformation_matrix.shape[0]}")
        flat = plain.reshape(-1, n) - self.mean_vector
        output = (flat @ self.transformation_matrix.to(flat.dtype)).reshape(shape)
        return tvt.wrap(output, like=inpt) if isinstance(inpt, tvt.TVTensor) else output


class Identity(Transform):
    """Returns the inputs unchanged."""

    def _transform(self, inpt: Any, params: dict) -> Any:
        return inpt


class UniformTemporalSubsample(Transform):
    """``num_samples`` evenly spaced frames of videos ``[..., T, C, H, W]``."""

    _transformed_types = (ember.Tensor,)

    def __init__(self, num_samples: int) -> None:
        super().__init__()
        self.num_samples = num_samples

    def _transform(self, inpt: Any, params: dict) -> Any:
        if not (is_pure_tensor(inpt) or isinstance(inpt, tvt.Video)):
            return inpt
        return self._call_kernel(F.uniform_temporal_subsample, inpt, self.num_samples)
