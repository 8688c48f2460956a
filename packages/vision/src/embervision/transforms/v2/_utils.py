"""Helpers of the v2 transforms: flattening samples, finding the image, argument checks."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ember

from .. import _tv_tensors as tvt
from .functional._meta import get_dimensions, get_size
from .functional._utils import is_pure_tensor

# ---- a small pytree: lists, tuples, named tuples and dicts are containers; all else is a leaf --

def tree_flatten(tree: Any) -> tuple[list, Any]:
    if isinstance(tree, (list, tuple)) and not isinstance(tree, ember.Tensor):
        leaves, specs = [], []
        for item in tree:
            sub_leaves, sub_spec = tree_flatten(item)
            leaves.extend(sub_leaves)
            specs.append((len(sub_leaves), sub_spec))
        return leaves, (type(tree), None, specs)
    if isinstance(tree, dict):
        leaves, specs = [], []
        for value in tree.values():
            sub_leaves, sub_spec = tree_flatten(value)
            leaves.extend(sub_leaves)
            specs.append((len(sub_leaves), sub_spec))
        return leaves, (type(tree), list(tree.keys()), specs)
    return [tree], None


def tree_unflatten(leaves: list, spec: Any) -> Any:
    if spec is None:
        return leaves[0]
    kind, keys, specs = spec
    items, start = [], 0
    for count, sub_spec in specs:
        items.append(tree_unflatten(leaves[start:start + count], sub_spec))
        start += count
    if keys is not None:
        return kind(zip(keys, items, strict=False))
    if kind is tuple or kind is list:
        return kind(items)
    if hasattr(kind, "_fields"):
        return kind(*items)
    return kind(items)


# ---- sample queries --------------------------------------------------------------------------

def check_type(obj: Any, types_or_checks: tuple) -> bool:
    for type_or_check in types_or_checks:
        if isinstance(type_or_check, type):
            if isinstance(obj, type_or_check):
                return True
        elif type_or_check(obj):
            return True
    return False


def has_any(flat_inputs: list, *types_or_checks: Any) -> bool:
    return any(check_type(inpt, types_or_checks) for inpt in flat_inputs)


def has_all(flat_inputs: list, *types_or_checks: Any) -> bool:
    return all(any(check_type(inpt, (t,)) for inpt in flat_inputs) for t in types_or_checks)


def query_size(flat_inputs: list) -> tuple[int, int]:
    """The one (H, W) of the sample's images, videos, masks and boxes."""
    sizes = {tuple(get_size(inpt)) for inpt in flat_inputs
             if check_type(inpt, (is_pure_tensor, tvt.Image, tvt.Video, tvt.Mask, tvt.BoundingBoxes))}
    if not sizes:
        raise TypeError("No image, video, mask or bounding box was found in the sample")
    if len(sizes) > 1:
        raise ValueError(f"Found multiple HxW dimensions in the sample: {', '.join(str(s) for s in sorted(sizes))}")
    return sizes.pop()


def query_chw(flat_inputs: list) -> tuple[int, int, int]:
    """The one (C, H, W) of the sample's images and videos."""
    chws = {tuple(get_dimensions(inpt)) for inpt in flat_inputs
            if check_type(inpt, (is_pure_tensor, tvt.Image, tvt.Video))}
    if not chws:
        raise TypeError("No image or video was found in the sample")
    if len(chws) > 1:
        raise ValueError(f"Found multiple CxHxW dimensions in the sample: {', '.join(str(s) for s in sorted(chws))}")
    return chws.pop()


def get_bounding_boxes(flat_inputs: list) -> tvt.BoundingBoxes:
    try:
        return next(inpt for inpt in flat_inputs if isinstance(inpt, tvt.BoundingBoxes))
    except StopIteration:
        raise ValueError("No bounding boxes were found in the sample") from None


# ---- argument checks -------------------------------------------------------------------------

def _setup_number_or_seq(arg: Any, name: str) -> list[float]:
    if not isinstance(arg, (int, float, Sequence)):
        raise TypeError(f"{name} should be a number or a sequence of numbers. Got {type(arg)}")
    if isinstance(arg, Sequence) and len(arg) not in (1, 2):
        raise ValueError(f"If {name} is a sequence its length should be 1 or 2. Got {len(arg)}")
    if isinstance(arg, Sequence):
        for element in arg:
            if not isinstance(element, (int, float)):
                raise ValueError(f"{name} should be a sequence of numbers")
    if isinstance(arg, (int, float)):
        arg = [float(arg), float(arg)]
    elif len(arg) == 1:
        arg = [float(arg[0]), float(arg[0])]
    return [float(a) for a in arg]


def _check_sequence_input(x: Any, name: str, req_sizes: Sequence[int]) -> None:
    msg = req_sizes[0] if len(req_sizes) < 2 else " or ".join([str(s) for s in req_sizes])
    if not isinstance(x, Sequence):
        raise TypeError(f"{name} should be a sequence of length {msg}.")
    if len(x) not in req_sizes:
        raise ValueError(f"{name} should be a sequence of length {msg}.")


def _setup_angle(x: Any, name: str, req_sizes: Sequence[int] = (2,)) -> list[float]:
    if isinstance(x, numbers.Number):
        if x < 0:
            raise ValueError(f"If {name} is a single number, it must be positive.")
        x = [-x, x]
    else:
        _check_sequence_input(x, name, req_sizes)
    return [float(d) for d in x]


def _setup_size(size: Any, error_msg: str) -> tuple[int, int]:
    if isinstance(size, numbers.Number):
        return int(size), int(size)
    if isinstance(size, Sequence) and len(size) == 1:
        return size[0], size[0]
    if not isinstance(size, Sequence) or len(size) != 2:
        raise ValueError(error_msg)
    return size[0], size[1]


def _check_fill_arg(fill: Any) -> None:
    if isinstance(fill, dict):
        for value in fill.values():
            _check_fill_arg(value)
    elif fill is not None and not isinstance(fill, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate fill arg, only Numbers, tuples, lists and dicts are allowed.")


def _setup_fill_arg(fill: Any) -> dict:
    """fill as a {type: value} dict (a plain value applies to every type)."""
    _check_fill_arg(fill)
    if isinstance(fill, dict):
        return fill
    return {"_default": fill}


def _get_fill(fill_args: dict, inpt_type: type) -> Any:
    if inpt_type in fill_args:
        return fill_args[inpt_type]
    for cls, value in fill_args.items():
        if isinstance(cls, type) and issubclass(inpt_type, cls):
            return value
    if "_default" in fill_args:
        return fill_args["_default"]
    if "others" in fill_args:
        return fill_args["others"]
    return None


def _check_padding_arg(padding: Any) -> None:
    if not isinstance(padding, (numbers.Number, tuple, list)):
        raise TypeError("Got inappropriate padding arg")
    if isinstance(padding, (tuple, list)) and len(padding) not in (1, 2, 4):
        raise ValueError(f"Padding must be an int or a 1, 2, or 4 element tuple, not a {len(padding)} element tuple")


def _check_padding_mode_arg(padding_mode: str) -> None:
    if padding_mode not in ("constant", "edge", "reflect", "symmetric"):
        raise ValueError("Padding mode should be either constant, edge, reflect or symmetric")


def _find_labels_default_heuristic(inputs: Any) -> Any:
    # (image, target) samples: the labels live in target; a tensor target is the labels.
    if isinstance(inputs, tuple) and len(inputs) >= 2:
        inputs = inputs[1]
    if isinstance(inputs, ember.Tensor):
        return inputs
    if not isinstance(inputs, Mapping):
        raise ValueError(f"When using the default labels_getter, the input passed to forward must be a dictionary "
                         f"or a two-tuple whose second item is a dictionary or a tensor, but got {type(inputs)} "
                         f"instead.")
    keys = [k for k in inputs if isinstance(k, str)]
    candidate = next((k for k in keys if k.lower() == "labels"), None)
    if candidate is None:
        candidate = next((k for k in keys if "label" in k.lower()), None)
    if candidate is None:
        raise ValueError("Could not infer where the labels are in the sample. Try passing a callable as the "
                         "labels_getter parameter?If there are no labels in the sample by design, pass "
                         "labels_getter=None.")
    return inputs[candidate]


def _parse_labels_getter(labels_getter: Any) -> Callable[[Any], Any]:
    if labels_getter == "default":
        return _find_labels_default_heuristic
    if callable(labels_getter):
        return labels_getter
    if labels_getter is None:
        return lambda _: None
    raise ValueError(f"labels_getter should either be 'default', a callable, or None, but got {labels_getter}.")
