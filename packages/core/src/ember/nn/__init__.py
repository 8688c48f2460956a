"""ember.nn (torch.nn): Module and its containers, layers, Parameter, functional, init and utils."""

from . import attention, functional, init, modules, parallel, utils
from .modules import *  # noqa: F403 - every layer, as torch.nn exports them
from .parameter import Buffer, Parameter, UninitializedParameter

__all__ = ["attention", "functional", "init", "parallel", "utils", "Parameter", "Buffer", "UninitializedParameter",
           *modules.__all__]
