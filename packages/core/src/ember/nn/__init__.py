"""ember.nn (torch.nn): Module and its containers, layers, Parameter, functional and utils."""

from . import functional, init, utils
from .modules import (
    BatchNorm1d,
    BatchNorm2d,
    BatchNorm3d,
    Identity,
    Linear,
    Module,
    ModuleDict,
    ModuleList,
    ParameterDict,
    ParameterList,
    Sequential,
)
from .parameter import Parameter

__all__ = ["functional", "init", "utils", "Parameter", "Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList",
           "ParameterDict", "Identity", "Linear", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d"]
