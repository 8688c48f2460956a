"""Helpers shared by the model builders, as torchvision.models._utils."""

from __future__ import annotations

import functools
import inspect
import warnings
from collections import OrderedDict
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from ember import nn

from ..transforms._presets import ImageClassification
from ._api import Weights, WeightsEnum
from ._meta import _IMAGENET_CATEGORIES

V = TypeVar("V")


def _make_divisible(v: float, divisor: int, min_value: int | None = None) -> int:
    """Round a channel count to a multiple of `divisor` (MobileNet's rule), never more than 10% down."""
    if min_value is None:
        min_value = divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:
        new_v += divisor
    return new_v


def _ovewrite_named_param(kwargs: dict[str, Any], param: str, new_value: V) -> None:
    """Set kwargs[param] to the value the weights require, or raise ValueError if the caller asked for
    another (e.g. num_classes=10 with ImageNet weights). The name's typo is torchvision's."""
    if param in kwargs:
        if kwargs[param] != new_value:
            raise ValueError(f"The parameter '{param}' expected value {new_value} but got {kwargs[param]} instead.")
    else:
        kwargs[param] = new_value


def _ovewrite_value_param(param: str, actual: V | None, expected: V) -> V:
    """`expected`, unless the caller gave a different `actual` (ValueError)."""
    if actual is not None and actual != expected:
        raise ValueError(f"The parameter '{param}' expected value {expected} but got {actual} instead.")
    return expected


def _imagenet_weights(url: str, num_params: int, recipe: str, acc1: float, acc5: float, docs: str, *,
                      crop_size: int = 224, resize_size: int = 256, interpolation: str = "bilinear",
                      min_size: tuple[int, int] = (1, 1), **meta: Any) -> Weights:
    """One ImageNet-1K classifier entry of a weights table: the ImageClassification preset and the
    meta every such entry has; `meta` adds or overrides keys."""
    return Weights(
        url=url,
        transforms=partial(ImageClassification, crop_size=crop_size, resize_size=resize_size,
                           interpolation=interpolation),
        meta={"min_size": min_size, "categories": _IMAGENET_CATEGORIES, "num_params": num_params, "recipe": recipe,
              "_metrics": {"ImageNet-1K": {"acc@1": acc1, "acc@5": acc5}}, "_docs": docs, **meta},
    )


def _sequence_to_str(seq: tuple[str, ...], separate_last: str = "") -> str:
    if len(seq) == 1:
        return f"'{seq[0]}'"
    head = "'" + "', '".join(seq[:-1]) + "'"
    tail = f"{'' if separate_last and len(seq) == 2 else ','} {separate_last}'{seq[-1]}'"
    return head + tail


def kwonly_to_pos_or_kw(fn: Callable) -> Callable:
    """Let old code pass `fn`'s keyword-only parameters positionally (resnet50(True), as before the
    multi-weight API), with a deprecation warning."""
    params = inspect.signature(fn).parameters
    try:
        keyword_only_start_idx = next(i for i, p in enumerate(params.values()) if p.kind == p.KEYWORD_ONLY)
    except StopIteration:
        raise TypeError(f"Found no keyword-only parameter on function '{fn.__name__}'") from None
    keyword_only_params = tuple(params)[keyword_only_start_idx:]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        args, keyword_only_args = args[:keyword_only_start_idx], args[keyword_only_start_idx:]
        if keyword_only_args:
            keyword_only_kwargs = dict(zip(keyword_only_params, keyword_only_args, strict=False))
            warnings.warn(f"Using {_sequence_to_str(tuple(keyword_only_kwargs), separate_last='and ')} as "
                          "positional parameter(s) is deprecated since 0.13 and may be removed in the future. "
                          "Please use keyword parameter(s) instead.", UserWarning, stacklevel=2)
            kwargs.update(keyword_only_kwargs)
        return fn(*args, **kwargs)

    return wrapper


def handle_legacy_interface(**weights: tuple[str, Any]) -> Callable[[Callable], Callable]:
    """Decorator mapping a builder's legacy boolean argument onto its `weights` argument (and letting
    its keyword-only arguments come positionally, as before: kwonly_to_pos_or_kw).

    Each keyword is `weights_param=(legacy_param, default)`: `legacy_param=True` (e.g. pretrained=True)
    warns and becomes `weights_param=default`, the weights the legacy flag used to load (a member, or a
    callable of the call's kwargs returning one); `legacy_param=False` warns and becomes None.
    """

    def outer_wrapper(builder: Callable) -> Callable:
        @kwonly_to_pos_or_kw
        @functools.wraps(builder)
        def inner_wrapper(*args: Any, **kwargs: Any) -> Any:
            for weights_param, (pretrained_param, default) in weights.items():
                # None is a valid weights value, so a sentinel tells "not passed" apart.
                sentinel = object()
                weights_arg = kwargs.get(weights_param, sentinel)
                if ((weights_param not in kwargs and pretrained_param not in kwargs)
                        or isinstance(weights_arg, WeightsEnum)
                        or (isinstance(weights_arg, str) and weights_arg != "legacy")
                        or weights_arg is None):
                    continue

                # weights=True/False (or "legacy") is the legacy flag passed under the new name.
                pretrained_positional = weights_arg is not sentinel
                if pretrained_positional:
                    kwargs[pretrained_param] = pretrained_arg = kwargs.pop(weights_param)
                else:
                    pretrained_arg = kwargs[pretrained_param]

                if pretrained_arg:
                    default_weights_arg = default(kwargs) if callable(default) else default
                    if not isinstance(default_weights_arg, WeightsEnum):
                        raise ValueError(f"No weights available for model {builder.__name__}")
                else:
                    default_weights_arg = None

                if not pretrained_positional:
                    warnings.warn(
                        f"The parameter '{pretrained_param}' is deprecated since 0.13 and may be removed in the "
                        f"future, please use '{weights_param}' instead.", UserWarning, stacklevel=2)
                msg = (f"Arguments other than a weight enum or `None` for '{weights_param}' are deprecated since 0.13 "
                       f"and may be removed in the future. The current behavior is equivalent to passing "
                       f"`{weights_param}={default_weights_arg}`.")
                if pretrained_arg:
                    msg = (f"{msg} You can also use `{weights_param}={type(default_weights_arg).__name__}.DEFAULT` "
                           f"to get the most up-to-date weights.")
                warnings.warn(msg, UserWarning, stacklevel=2)

                del kwargs[pretrained_param]
                kwargs[weights_param] = default_weights_arg

            return builder(*args, **kwargs)

        return inner_wrapper

    return outer_wrapper


class IntermediateLayerGetter(nn.ModuleDict):
    """Runs `model`'s direct children in order and returns the outputs of those named in
    `return_layers` ({child name: output name}); children after the last one asked for are dropped.
    Assumes the children are registered in the order forward uses them."""

    def __init__(self, model: nn.Module, return_layers: dict[str, str]) -> None:
        if not set(return_layers).issubset([name for name, _ in model.named_children()]):
            raise ValueError("return_layers are not present in model")
        orig_return_layers = return_layers
        remaining = {str(k): str(v) for k, v in return_layers.items()}
        layers = OrderedDict()
        for name, module in model.named_children():
            layers[name] = module
            remaining.pop(name, None)
            if not remaining:
                break
        super().__init__(layers)
        self.return_layers = orig_return_layers

    def forward(self, x: Any) -> dict[str, Any]:
        out = OrderedDict()
        for name, module in self.items():
            x = module(x)
            if name in self.return_layers:
                out[self.return_layers[name]] = x
        return out
