"""ember.nn (torch.nn): Module and its containers, layers, Parameter, functional, init and utils."""

from . import attention, common_types, functional, grad, init, modules, parallel, utils
from ._linear_cross_entropy import LinearCrossEntropyOptions
from .modules import *  # noqa: F403 - every layer, as torch.nn exports them
from .parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter

__all__ = ["attention", "common_types", "functional", "grad", "init", "parallel", "utils", "Parameter", "Buffer",
           "UninitializedBuffer", "UninitializedParameter", "factory_kwargs", "LinearCrossEntropyOptions",
           *modules.__all__]

_FACTORY_KEYS = {"device", "dtype", "memory_format"}


def factory_kwargs(kwargs: dict | None) -> dict:
    """The factory keywords (device, dtype, memory_format) of a module's ``**kwargs``, as one dict
    to pass to ember.empty and the like (torch.nn.factory_kwargs). An unknown key raises
    TypeError at once rather than at the factory call. ``factory_kwargs={...}`` inside kwargs
    gives them explicitly, for a signature whose own ``dtype`` means something else."""
    if kwargs is None:
        return {}
    unknown = kwargs.keys() - (_FACTORY_KEYS | {"factory_kwargs"})
    if unknown:
        raise TypeError(f"unexpected kwargs {unknown}")
    merged = dict(kwargs.get("factory_kwargs", {}))
    for key in _FACTORY_KEYS & kwargs.keys():
        if key in merged:
            raise TypeError(f"{key} specified twice, in **kwargs and in factory_kwargs")
        merged[key] = kwargs[key]
    return merged


def __getattr__(name: str):  # noqa: ANN202 - PEP 562
    # ember.nn.quantized / intrinsic / qat / quantizable: the older names of ember.ao.nn's, loaded on first use
    if name in ("quantized", "intrinsic", "qat", "quantizable"):
        import importlib

        return importlib.import_module(f"ember.nn.{name}")
    raise AttributeError(f"module 'ember.nn' has no attribute {name!r}")


def __dir__() -> list[str]:  # the names loaded on first use are listed too, as dir(torch.nn) lists them
    return sorted(set(globals()) | {"quantized", "intrinsic", "qat", "quantizable"})
