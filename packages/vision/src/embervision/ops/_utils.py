"""Helpers of the native ops (RoI family, nms, deform_conv2d): box lists to the ``[K, 5]`` roi
format, argument checks, and the hand-off of CPU tensors to ``embervision._C`` as NumPy views."""

from __future__ import annotations

import ember

_FLOATS = (ember.float32, ember.float64)


def native():
    """The ``embervision._C`` module, checked against the installed core."""
    from embervision import _native
    return _native.load("_C")


def num_threads() -> int:
    return max(1, ember.get_num_threads())


def to_numpy(t):
    """A C-contiguous NumPy view (a copy only when ``t`` is not contiguous) of a CPU tensor."""
    return t.detach().contiguous().numpy()


def from_numpy(a):
    return ember.from_numpy(a)


def check_cpu(op: str, *tensors) -> None:
    # Kernels exist for the CPU only; another device is refused rather than copied behind the user's back.
    for t in tensors:
        if t is not None and t.device.type != "cpu":
            raise NotImplementedError(f"[{op}] not implemented for {t.device.type}")


def check_float_input(op: str, input, ndim: int = 4) -> None:
    if not isinstance(input, ember.Tensor):
        raise TypeError(f"[{op}] expected input to be a Tensor, but got {type(input).__name__}")
    if input.dim() != ndim:
        raise ValueError(f"[{op}] expected input of shape [N, C, H, W], but got {tuple(input.shape)}")
    if input.dtype not in _FLOATS:
        raise TypeError(f"[{op}] expected input of dtype float32 or float64, but got {input.dtype}")


def pair(op: str, name: str, value) -> tuple[int, int]:
    """``value`` as an ``(h, w)`` pair of ints (torchvision's ``_pair``)."""
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise ValueError(f"[{op}] expected {name} to be an int or a pair of ints, but got {value!r}")
        h, w = value
    else:
        h = w = value
    for v in (h, w):
        if isinstance(v, bool) or not isinstance(v, int):
            raise TypeError(f"[{op}] expected {name} to be an int or a pair of ints, but got {value!r}")
    return int(h), int(w)


def positive_pair(op: str, name: str, value) -> tuple[int, int]:
    h, w = pair(op, name, value)
    if h <= 0 or w <= 0:
        raise ValueError(f"[{op}] expected {name} to be positive, but got {value!r}")
    return h, w


def check_roi_boxes_shape(op: str, boxes) -> None:
    """torchvision's check: a Tensor[K, 5] or a list of Tensor[L, 4] (ValueError/TypeError here,
    where torchvision asserts)."""
    if isinstance(boxes, (list, tuple)):
        for b in boxes:
            if not isinstance(b, ember.Tensor):
                raise TypeError(f"[{op}] expected boxes to be a Tensor[K, 5] or a list of Tensor[L, 4], but the "
                                f"list holds a {type(b).__name__}")
            if b.dim() != 2 or b.shape[1] != 4:
                raise ValueError(f"[{op}] expected every tensor of the boxes list to have shape [L, 4], but got "
                                 f"{tuple(b.shape)}")
    elif isinstance(boxes, ember.Tensor):
        if boxes.dim() != 2 or boxes.shape[1] != 5:
            raise ValueError(f"[{op}] expected boxes of shape [K, 5], but got {tuple(boxes.shape)}")
    else:
        raise TypeError(f"[{op}] expected boxes to be a Tensor[K, 5] or a list of Tensor[L, 4], but got "
                        f"{type(boxes).__name__}")


def convert_boxes_to_roi_format(boxes, dtype=None):
    """A list of ``[L_i, 4]`` boxes (one per image) as one ``[K, 5]`` tensor whose first column is the
    image index."""
    dtype = dtype or (boxes[0].dtype if boxes else ember.float32)
    if not boxes:
        return ember.zeros((0, 5), dtype=dtype)
    rows = [ember.cat([ember.full((b.shape[0], 1), float(i), dtype=dtype), b.to(dtype)], dim=1)
            for i, b in enumerate(boxes)]
    return ember.cat(rows, dim=0)


def rois_for(op: str, input, boxes):
    """Checks input and boxes and returns the rois as a contiguous ``[K, 5]`` tensor of the input's dtype."""
    check_float_input(op, input)
    check_roi_boxes_shape(op, boxes)
    rois = boxes if isinstance(boxes, ember.Tensor) else convert_boxes_to_roi_format(list(boxes), input.dtype)
    check_cpu(op, input, rois)
    return rois.detach().to(input.dtype).contiguous()
