from . import activation, dropout, loss
from .activation import *  # noqa: F403 - each module file lists its classes in __all__
from .batchnorm import BatchNorm1d, BatchNorm2d, BatchNorm3d
from .container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .dropout import *  # noqa: F403
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import *  # noqa: F403
from .module import Module

__all__ = ["Module", "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "Identity", "Linear",
           "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "Flatten", "Unflatten",
           *activation.__all__, *dropout.__all__, *loss.__all__]
