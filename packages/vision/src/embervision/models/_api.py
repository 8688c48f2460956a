"""The multi-weight API: weight enums, the model registry and its look-ups, as torchvision.models._api."""

from __future__ import annotations

import fnmatch
import importlib
import inspect
import sys
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import partial
from types import ModuleType
from typing import Any

from ember import hub

__all__ = ["WeightsEnum", "Weights", "get_model", "get_model_builder", "get_model_weights", "get_weight",
           "list_models", "register_model"]


@dataclass
class Weights:
    """One set of pretrained weights.

    url: where the checkpoint is downloaded from; its file name carries the leading hex digits of the
        file's SHA-256 ("resnet50-11ad3fa6.pth"), which ember.hub checks.
    transforms: a callable building the inference preset (built lazily: a preset may hold state).
    meta: what the weights need and tell: "categories" (fixes num_classes), "num_params", "min_size",
        "recipe", "_metrics", "_docs".
    """

    url: str
    transforms: Callable
    meta: dict[str, Any]

    def __eq__(self, other: Any) -> bool:
        # Presets are partials, and two equal partials are different objects: compare what they build.
        if not isinstance(other, Weights):
            return NotImplemented
        if self.url != other.url or self.meta != other.meta:
            return False
        if isinstance(self.transforms, partial) and isinstance(other.transforms, partial):
            return (self.transforms.func == other.transforms.func and self.transforms.args == other.transforms.args
                    and self.transforms.keywords == other.transforms.keywords)
        return self.transforms == other.transforms


class WeightsEnum(Enum):
    """Base of every model's weights enum; its members' values are `Weights`.

    Member attributes url, transforms and meta read through to the `Weights`. A member named DEFAULT
    in a subclass is an alias of the recommended weights (Enum aliasing: same value, same member).
    """

    @classmethod
    def verify(cls, obj: Any) -> Any:
        """None, a member of cls, or its name as "IMAGENET1K_V2" or "ResNet50_Weights.IMAGENET1K_V2"."""
        if obj is not None:
            if type(obj) is str:
                name = obj.replace(cls.__name__ + ".", "")
                try:
                    obj = cls[name]
                except KeyError:
                    raise KeyError(f"Unknown weights {obj!r} for {cls.__name__}; expected one of "
                                   f"{sorted(cls.__members__)}") from None
            elif not isinstance(obj, cls):
                raise TypeError(
                    f"Invalid Weight class provided; expected {cls.__name__} but received {obj.__class__.__name__}."
                )
        return obj

    def get_state_dict(self, *args: Any, **kwargs: Any) -> Mapping[str, Any]:
        """Download (once, into ember.hub's cache) and load the checkpoint; arguments go to
        ember.hub.load_state_dict_from_url (progress=, check_hash=, model_dir=, ...)."""
        return hub.load_state_dict_from_url(self.url, *args, **kwargs)

    def __repr__(self) -> str:
        return f"{self.__class__.__name__}.{self._name_}"

    @property
    def url(self) -> str:
        return self.value.url

    @property
    def transforms(self) -> Callable:
        return self.value.transforms

    @property
    def meta(self) -> dict[str, Any]:
        return self.value.meta


def get_weight(name: str) -> WeightsEnum:
    """The weights named "<EnumClass>.<MEMBER>", e.g. "ResNet50_Weights.IMAGENET1K_V2"."""
    try:
        enum_name, value_name = name.split(".")
    except ValueError:
        raise ValueError(f"Invalid weight name provided: '{name}'.") from None

    base_module = importlib.import_module(__name__.rsplit(".", 1)[0])
    # The enums live in embervision.models and in its subpackages (detection, segmentation, ...).
    model_modules = [base_module] + [
        m for _, m in inspect.getmembers(base_module, inspect.ismodule)
        if getattr(m, "__file__", None) and m.__file__.endswith("__init__.py")
    ]
    weights_enum = None
    for module in model_modules:
        candidate = module.__dict__.get(enum_name, None)
        if isinstance(candidate, type) and issubclass(candidate, WeightsEnum):
            weights_enum = candidate
            break
    if weights_enum is None:
        raise ValueError(f"The weight enum '{enum_name}' for the specific method couldn't be retrieved.")
    return weights_enum.verify(value_name)


def get_model_weights(name: Callable | str) -> type[WeightsEnum]:
    """The weights enum class of a model builder, given the builder or its registered name."""
    model = get_model_builder(name) if isinstance(name, str) else name
    return _get_enum_from_fn(model)


def _get_enum_from_fn(fn: Callable) -> type[WeightsEnum]:
    # The builder's `weights` annotation names the enum (Optional[X] or X); string annotations from
    # `from __future__ import annotations` are resolved in the builder's module.
    if "weights" not in inspect.signature(fn).parameters:
        raise ValueError("The method is missing the 'weights' argument.")
    ann = typing.get_type_hints(fn).get("weights")
    candidates = [ann, *typing.get_args(ann)]
    for t in candidates:
        if isinstance(t, type) and issubclass(t, WeightsEnum):
            return t
    raise ValueError(
        "The WeightsEnum class for the specific method couldn't be retrieved. Make sure the typing info is correct."
    )


BUILTIN_MODELS: dict[str, Callable] = {}


def register_model(name: str | None = None) -> Callable[[Callable], Callable]:
    """Decorator registering a model builder under `name` (default: the function's name)."""
    def wrapper(fn: Callable) -> Callable:
        key = name if name is not None else fn.__name__
        if key in BUILTIN_MODELS:
            raise ValueError(f"An entry is already registered under the name '{key}'.")
        BUILTIN_MODELS[key] = fn
        return fn

    return wrapper


def list_models(module: ModuleType | None = None, include: str | Iterable[str] | None = None,
                exclude: str | Iterable[str] | None = None) -> list[str]:
    """Sorted names of the registered models, optionally only those built in `module` (e.g.
    embervision.models.detection), kept by the `include` and dropped by the `exclude` fnmatch patterns."""
    _import_builtin_models()
    all_models = {k for k, v in BUILTIN_MODELS.items()
                  if module is None or v.__module__.rsplit(".", 1)[0] == module.__name__}
    if include:
        models: set[str] = set()
        for pattern in [include] if isinstance(include, str) else include:
            models |= set(fnmatch.filter(all_models, pattern))
    else:
        models = all_models
    if exclude:
        for pattern in [exclude] if isinstance(exclude, str) else exclude:
            models -= set(fnmatch.filter(all_models, pattern))
    return sorted(models)


def get_model_builder(name: str) -> Callable:
    """The builder registered under `name` (case-insensitive); unknown → ValueError."""
    _import_builtin_models()
    name = name.lower()
    try:
        return BUILTIN_MODELS[name]
    except KeyError:
        raise ValueError(f"Unknown model {name}") from None


def get_model(name: str, **config: Any) -> Any:
    """Build the model registered under `name`, passing `config` to its builder
    (e.g. get_model("resnet50", weights="DEFAULT"))."""
    return get_model_builder(name)(**config)


def _import_builtin_models() -> None:
    # The registry fills as model modules import; make sure embervision.models has run when the
    # registry is read through this module alone.
    base = __name__.rsplit(".", 1)[0]
    if base not in sys.modules:
        importlib.import_module(base)
