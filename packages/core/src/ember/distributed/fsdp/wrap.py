"""Auto-wrap policies: which submodules become their own FSDP unit (torch.distributed.fsdp.wrap).

A policy is called as policy(module, recurse, nonwrapped_numel): with recurse=True it says whether
to look inside `module` for units; with recurse=False whether `module` itself (holding
nonwrapped_numel parameters not already in a unit below it) becomes one."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ember import nn

__all__ = ["ModuleWrapPolicy", "enable_wrap", "size_based_auto_wrap_policy", "transformer_auto_wrap_policy", "wrap"]


def size_based_auto_wrap_policy(module: nn.Module, recurse: bool, nonwrapped_numel: int,
                                min_num_params: int = int(1e8), force_leaf_modules: set | None = None,
                                exclude_wrap_modules: set | None = None) -> bool:
    """A module becomes a unit once it holds at least min_num_params parameters not already
    wrapped. Containers (ModuleList, ModuleDict) are never units; MultiheadAttention is not looked
    into (its forward reads its parameters directly)."""
    force_leaf = (nn.MultiheadAttention,) if force_leaf_modules is None else tuple(force_leaf_modules)
    exclude = (nn.ModuleList, nn.ModuleDict) if exclude_wrap_modules is None else tuple(exclude_wrap_modules)
    if recurse:
        return not isinstance(module, force_leaf)
    return nonwrapped_numel >= min_num_params and not isinstance(module, exclude)


def transformer_auto_wrap_policy(module: nn.Module, recurse: bool, nonwrapped_numel: int,
                                 transformer_layer_cls: Iterable[type]) -> bool:
    """Every instance of transformer_layer_cls becomes a unit (the root takes the rest)."""
    if recurse:
        return True
    return isinstance(module, tuple(transformer_layer_cls))


class ModuleWrapPolicy:
    """Every instance of one of module_classes becomes a unit."""

    def __init__(self, module_classes: Iterable[type]) -> None:
        self._classes = tuple(module_classes)
        for c in self._classes:
            if not (isinstance(c, type) and issubclass(c, nn.Module)):
                raise TypeError(f"ModuleWrapPolicy: expected nn.Module subclasses, but got {c!r}")

    def __call__(self, module: nn.Module, recurse: bool, nonwrapped_numel: int) -> bool:
        return True if recurse else isinstance(module, self._classes)


def _recursive_wrap(module: nn.Module, policy: Callable[..., bool], wrap: Callable[[nn.Module], nn.Module],
                    skip: Callable[[nn.Module], bool], only_children: bool = False) -> tuple[nn.Module, int]:
    """Wraps the units below `module` (and `module` itself unless only_children), deepest first.
    Returns the (possibly wrapped) module and how many parameters it now keeps inside units."""
    if skip(module):
        return module, 0
    total = sum(p.numel() for p in _unwrapped_params(module, skip))
    if not policy(module, True, total):
        return module, 0
    wrapped = 0
    for name, child in list(module.named_children()):
        new, n = _recursive_wrap(child, policy, wrap, skip)
        if new is not child:
            setattr(module, name, new)
        wrapped += n
    if not only_children and policy(module, False, total - wrapped):
        return wrap(module), total
    return module, wrapped


def _unwrapped_params(module: nn.Module, skip: Callable[[nn.Module], bool]) -> list:
    seen: dict[int, Any] = {}
    stack = [module]
    while stack:
        m = stack.pop()
        if skip(m):
            continue
        for p in m._parameters.values():
            if p is not None:
                seen[id(p)] = p
        stack.extend(c for c in m._modules.values() if c is not None)
    return list(seen.values())


class _WrapContext:
    wrapper_cls: Callable[..., nn.Module] | None = None
    kwargs: dict = {}


@contextlib.contextmanager
def enable_wrap(*, wrapper_cls: Callable[..., nn.Module], **wrapper_kwargs: Any) -> Iterator[None]:
    """Within it, wrap(module) wraps `module` in wrapper_cls (FullyShardedDataParallel) with
    wrapper_kwargs; outside it wrap() returns the module as it is."""
    if _WrapContext.wrapper_cls is not None:
        raise RuntimeError("enable_wrap: already inside an enable_wrap context; they do not nest")
    _WrapContext.wrapper_cls, _WrapContext.kwargs = wrapper_cls, dict(wrapper_kwargs)
    try:
        yield
    finally:
        _WrapContext.wrapper_cls, _WrapContext.kwargs = None, {}


def wrap(module: nn.Module, **wrap_overrides: Any) -> nn.Module:
    """Wraps `module` as enable_wrap says (wrap_overrides win over its arguments), or returns it
    unwrapped outside enable_wrap: one model definition serves both."""
    if _WrapContext.wrapper_cls is None:
        return module
    return _WrapContext.wrapper_cls(module, **{**_WrapContext.kwargs, **wrap_overrides})
