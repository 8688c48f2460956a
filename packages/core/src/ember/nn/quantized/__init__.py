"""ember.nn.quantized: the older name of ember.ao.nn.quantized (torch.nn.quantized)."""

from ...ao.nn.quantized import *  # noqa: F403
from ...ao.nn.quantized import __all__  # noqa: F401
from . import dynamic, functional  # noqa: F401
