"""ember.nn.utils.weight_norm (torch.nn.utils.weight_norm): the hook-based weight normalization,
deprecated in favour of ember.nn.utils.parametrizations.weight_norm (a FutureWarning says so).

module.<name> becomes <name>_g (magnitude) and <name>_v (direction), both parameters and both
in the state dict; a forward pre-hook recomputes the plain attribute <name> = g * v / ||v||, the
norm taken over every dim but `dim`. As in PyTorch, dim=None and dim=-1 both mean the norm of the
whole tensor (g a 0-dim parameter); other negative dims count from the end."""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

from ..modules.module import Module
from ..parameter import Parameter, UninitializedParameter
from ._pre_hooks import pop_reparametrization
from .parametrizations import _norm_except_dim

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]

T_module = TypeVar("T_module", bound=Module)


def _norm(v, dim: int):
    """torch.norm_except_dim(v, 2, dim): -1 is the whole tensor's norm, else kept broadcastable."""
    if dim == -1:
        return _norm_except_dim(v, None)
    ndim = v.dim()
    if not -ndim <= dim < max(ndim, 1):
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return _norm_except_dim(v, dim % max(ndim, 1))


class WeightNorm:
    """The forward pre-hook of weight_norm for one tensor name."""

    name: str
    dim: int

    def __init__(self, name: str, dim: int) -> None:
        if dim is None:
            dim = -1
        self.name = name
        self.dim = dim

    def compute_weight(self, module: Module) -> Any:
        g = getattr(module, self.name + "_g")
        v = getattr(module, self.name + "_v")
        return v * (g / _norm(v, self.dim))

    @staticmethod
    def apply(module, name: str, dim: int) -> WeightNorm:
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        if isinstance(weight, UninitializedParameter):
            raise ValueError("The module passed to `WeightNorm` can't have uninitialized parameters. Make sure to run "
                             "the dummy forward before applying weight normalization")
        g = _norm(weight.detach(), fn.dim)  # checks dim before the module is touched
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(g.data))
        module.register_parameter(name + "_v", Parameter(weight.data))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.data))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: T_module, name: str = "weight", dim: int = 0) -> T_module:
    """Split module.<name> into <name>_g and <name>_v, recombined before every forward."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: T_module, name: str = "weight") -> T_module:
    """Fold <name>_g and <name>_v back into the parameter <name>."""
    if pop_reparametrization(module, WeightNorm, name, lambda hook: hook.name):
        return module
    raise ValueError(f"weight_norm of '{name}' not found in {module}")
