"""The kernel registry: each functional dispatches on its input's type (torchvision's design).

A functional (``F.resize``) looks up ``type(inpt)`` along its MRO in ``_KERNEL_REGISTRY[functional]``:
plain tensors (``ember.Tensor``) are images; each TVTensor type has its own kernel. Kernels
registered for a TVTensor type receive the plain tensor and have their output re-wrapped like the
input, unless registered with ``tv_tensor_wrapper=False`` (box kernels, which read metadata).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ember

from ... import _tv_tensors

_KERNEL_REGISTRY: dict[Callable, dict[type, Callable]] = {}


def _kernel_tv_tensor_wrapper(kernel: Callable) -> Callable:
    @functools.wraps(kernel)
    def wrapper(inpt: Any, *args: Any, **kwargs: Any) -> Any:
        output = kernel(inpt.as_subclass(ember.Tensor), *args, **kwargs)
        return _tv_tensors.wrap(output, like=inpt)

    return wrapper


def _register_kernel_internal(functional: Callable, input_type: type, *, tv_tensor_wrapper: bool = True) -> Callable:
    registry = _KERNEL_REGISTRY.setdefault(functional, {})
    if input_type in registry:
        raise ValueError(f"Functional {functional} already has a kernel registered for type {input_type}.")

    def decorator(kernel: Callable) -> Callable:
        wrap = tv_tensor_wrapper and issubclass(input_type, _tv_tensors.TVTensor)
        registry[input_type] = _kernel_tv_tensor_wrapper(kernel) if wrap else kernel
        return kernel

    return decorator


def _name_to_functional(name: str) -> Callable:
    from embervision.transforms.v2 import functional

    try:
        return getattr(functional, name)
    except AttributeError:
        raise ValueError(f"Could not find functional with name '{name}' in embervision.transforms.v2.functional.") from None


def register_kernel(functional: Callable | str, tv_tensor_cls: type) -> Callable:
    """Decorator registering a kernel of ``functional`` for a user-defined TVTensor subclass; the
    kernel gets the TVTensor itself (no unwrapping) and returns the output."""
    if isinstance(functional, str):
        functional = _name_to_functional(name=functional)
    elif not (callable(functional) and getattr(functional, "__module__", "").startswith(
            "embervision.transforms.v2.functional")):
        raise ValueError(f"Kernels can only be registered on functionals from the "
                         f"embervision.transforms.v2.functional namespace, but got {functional}.")
    if not (isinstance(tv_tensor_cls, type) and issubclass(tv_tensor_cls, _tv_tensors.TVTensor)):
        raise ValueError(f"Kernels can only be registered for subclasses of embervision.tv_tensors.TVTensor, "
                         f"but got {tv_tensor_cls}.")
    if tv_tensor_cls in _tv_tensors.BUILTIN:
        raise ValueError(f"Kernels cannot be registered for the builtin tv_tensor classes, but got {tv_tensor_cls}")
    return _register_kernel_internal(functional, tv_tensor_cls, tv_tensor_wrapper=False)


def _get_kernel(functional: Callable, input_type: type, *, allow_passthrough: bool = False) -> Callable:
    registry = _KERNEL_REGISTRY.get(functional)
    if not registry:
        raise ValueError(f"No kernel registered for functional {functional.__name__}.")
    for cls in input_type.__mro__:
        if cls in registry:
            return registry[cls]
        if cls is _tv_tensors.TVTensor:
            # A TVTensor subclass without a kernel of its own must not fall back to the plain
            # tensor (image) kernel.
            break
    if allow_passthrough:
        return lambda inpt, *args, **kwargs: inpt
    raise TypeError(f"Functional F.{functional.__name__} supports inputs of type {list(registry.keys())}, "
                    f"but got {input_type} instead.")


def _dispatch(functional: Callable, inpt: Any, *args: Any, **kwargs: Any) -> Any:
    return _get_kernel(functional, type(inpt))(inpt, *args, **kwargs)


def is_pure_tensor(inpt: Any) -> bool:
    return isinstance(inpt, ember.Tensor) and not isinstance(inpt, _tv_tensors.TVTensor)


def _max_value(dtype: Any) -> float:
    if dtype == ember.uint8:
        return 255
    if dtype == ember.int8:
        return 127
    if dtype == ember.int16:
        return 32767
    if dtype == ember.int32:
        return 2147483647
    if dtype == ember.int64:
        return 9223372036854775807
    if dtype == ember.bool:
        return 1
    return 1.0  # floating point images live in [0, 1]


def _num_value_bits(dtype: Any) -> int:
    bits = {ember.uint8: 8, ember.int8: 7, ember.int16: 15, ember.int32: 31, ember.int64: 63}
    if dtype not in bits:
        raise TypeError(f"Number of value bits is only defined for integer dtypes, but got {dtype}.")
    return bits[dtype]
